/* The Hadamard primitive and the matrices that define it (see
 * primitives/hadamard.h). */
#include "primitives/hadamard.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* ---------------- Hadamard matrices ----------------
 * The odd factors are fixed matrices (any Hadamard matrix would do, these
 * are the ones MLX uses, so results agree with it):
 * - m = 12: Paley's second construction from GF(5): C (x) [[1, 1], [1, -1]]
 *   + I (x) [[1, -1], [-1, -1]], C the symmetric 6 x 6 conference matrix
 *   with zero diagonal, a first row and column of ones, and
 *   C[1 + i][1 + j] = chi(j - i) for the quadratic character chi mod 5.
 * - m = 20, 28: Williamson's array [[W, X, Y, Z], [-X, W, -Z, Y],
 *   [-Y, Z, W, -X], [-Z, -Y, X, W]] of p x p circulants (p = 5, 7), each
 *   M[r][c] = f[(c - r) mod p] with f = +1 on the set given below and -1
 *   elsewhere. */
typedef struct {
  int p;
  unsigned plus[4]; /* bit j: f[j] = +1, for W, X, Y, Z */
} williamson;

static const williamson W20 = {5, {0x01, 0x01, 0x13, 0x0d}};
static const williamson W28 = {7, {0x01, 0x43, 0x25, 0x19}};

static int chi5(int v) { /* quadratic character mod 5 (0 -> 0) */
  v = ((v % 5) + 5) % 5;
  return v == 0 ? 0 : (v == 1 || v == 4) ? 1 : -1;
}

static void williamson_fill(const williamson* w, int8_t* h) {
  /* Block (R, C) of the array: which circulant and its sign. */
  static const int which[4][4] = {
      {0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}};
  static const int sign[4][4] = {
      {1, 1, 1, 1}, {-1, 1, -1, 1}, {-1, 1, 1, -1}, {-1, -1, 1, 1}};
  int p = w->p, m = 4 * p;
  for (int R = 0; R < 4; R++)
    for (int C = 0; C < 4; C++)
      for (int r = 0; r < p; r++)
        for (int c = 0; c < p; c++) {
          int k = ((c - r) % p + p) % p;
          int f = (w->plus[which[R][C]] >> k) & 1 ? 1 : -1;
          h[(R * p + r) * m + C * p + c] = (int8_t)(sign[R][C] * f);
        }
}

bool cmx__hadamard_m(int m, int8_t* h) {
  if (m == 20 || m == 28) {
    williamson_fill(m == 20 ? &W20 : &W28, h);
    return true;
  }
  if (m != 12) return false;
  static const int K2[2][2] = {{1, 1}, {1, -1}}, D2[2][2] = {{1, -1}, {-1, -1}};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      int c = i == j ? 0 : (i == 0 || j == 0) ? 1 : chi5(j - i);
      for (int r = 0; r < 2; r++)
        for (int s = 0; s < 2; s++)
          h[(2 * i + r) * 12 + 2 * j + s] =
              (int8_t)(c * K2[r][s] + (i == j ? D2[r][s] : 0));
    }
  return true;
}

bool cmx__hadamard_split(int64_t n, int* m, int64_t* pow2) {
  static const int odd[4] = {1, 12, 20, 28};
  for (int i = 0; i < 4; i++) {
    if (n < odd[i] || n % odd[i]) continue;
    int64_t r = n / odd[i];
    if ((r & (r - 1)) == 0) {
      *m = odd[i];
      *pow2 = r;
      return true;
    }
  }
  return false;
}

static void hadamard_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__hadamard_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Hadamard(scale=%g%s)", q->scale,
           q->transpose ? ", transpose" : "");
}

/* The scale compared by its bits (so equal parameters hash alike), the
 * padding field ignored. */
static bool hadamard_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__hadamard_params *x = cmx_primitive_params(a),
                             *y = cmx_primitive_params(b);
  return !memcmp(&x->scale, &y->scale, sizeof x->scale) &&
         x->transpose == y->transpose;
}
static uint64_t hadamard_hash(const cmx_primitive* p) {
  const cmx__hadamard_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_bytes(cmx__hash_start(p), &q->scale, sizeof q->scale);
  return cmx__hash_i64(h, q->transpose);
}

CMX__VTABLE(Hadamard, .vjp = cmx__vjp_hadamard, .jvp = cmx__jvp_hadamard,
            .vmap = cmx__vmap_hadamard, .print = hadamard_print,
            .output_shapes = cmx__shapes_like_input, .equal = hadamard_equal,
            .hash = hadamard_hash);
