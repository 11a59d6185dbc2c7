/* The elementwise driver's tiled path (backend/cpu/elementwise.c): layouts
 * where an operand walks the inner dim with a large stride (transposed,
 * permuted, flipped, sliced views) at sizes that take the tiles, with
 * ragged edges, checked element by element against plain C. */
#include <stdlib.h>

#include "cmx/cmx.h"
#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

/* a (R, C) float32 with a[i][j] = i * C + j, as a new array. */
static cmx_array iota2(int64_t r, int64_t c, float** data) {
  float* v = malloc((size_t)(r * c) * sizeof *v);
  for (int64_t i = 0; i < r * c; i++) v[i] = (float)i;
  int64_t sh[2] = {r, c};
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32);
  *data = v;
  return a;
}

/* x.T + y for x (C, R) and y (R, C): out[i][j] = x[j][i] + y[i][j]. */
static void check_transposed_add(int64_t r, int64_t c) {
  float *xv, *yv;
  cmx_array x = iota2(c, r, &xv), y = iota2(r, c, &yv), xt = NULL, o = NULL;
  OK(cmx_transpose(&xt, x, NULL, 0, S));
  OK(cmx_add(&o, xt, y, S));
  const float* p = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  int64_t bad = 0;
  for (int64_t i = 0; p && i < r; i++)
    for (int64_t j = 0; j < c; j++)
      bad += p[i * c + j] != xv[j * r + i] + yv[i * c + j];
  CHECK_MSG(p && bad == 0, "x.T + y (%lld, %lld): %lld wrong", (long long)r,
            (long long)c, (long long)bad);
  cmx_array_release_all((cmx_array[]){x, y, xt, o}, 4);
  free(xv);
  free(yv);
}

/* exp of a flipped transposed view, and where() with a transposed
 * condition: unary and ternary rows through the tiles. */
static void check_unary_ternary(int64_t r, int64_t c) {
  float* xv;
  cmx_array x = iota2(c, r, &xv), xt = NULL, f = NULL, neg = NULL, o = NULL;
  cmx_array half = NULL, cond = NULL, w = NULL;
  int ax = 1;
  OK(cmx_transpose(&xt, x, NULL, 0, S)); /* (r, c) */
  OK(cmx_flip(&f, xt, &ax, 1, S));       /* f[i][j] = x[c-1-j][i] */
  OK(cmx_negative(&neg, f, S));
  OK(cmx_array_from_double(&half, (double)(r * c) / 2, CMX_FLOAT32));
  OK(cmx_less(&cond, xt, half, S));
  OK(cmx_where(&w, cond, neg, xt, S));
  const float *pn = NULL, *pw = NULL;
  OK(cmx_array_data(neg, (const void**)&pn));
  OK(cmx_array_data(w, (const void**)&pw));
  int64_t bad = 0;
  for (int64_t i = 0; pn && pw && i < r; i++)
    for (int64_t j = 0; j < c; j++) {
      float xt_ij = xv[j * r + i], f_ij = xv[(c - 1 - j) * r + i];
      bad += pn[i * c + j] != -f_ij;
      bad += pw[i * c + j] != (xt_ij < (float)(r * c) / 2 ? -f_ij : xt_ij);
    }
  CHECK_MSG(pn && pw && bad == 0, "flip/where (%lld, %lld): %lld wrong",
            (long long)r, (long long)c, (long long)bad);
  cmx_array_release_all((cmx_array[]){x, xt, f, neg, o, half, cond, w}, 8);
  free(xv);
}

/* A 3-d permutation: out = a.transpose(2, 0, 1) * 2 for a (A, B, C). */
static void check_permuted(int64_t A, int64_t B, int64_t C) {
  int64_t n = A * B * C, sh[3] = {A, B, C};
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 1000);
  cmx_array a = NULL, t = NULL, two = NULL, o = NULL;
  OK(cmx_array_from_data(&a, v, sh, 3, CMX_FLOAT32));
  int perm[3] = {2, 0, 1};
  OK(cmx_transpose(&t, a, perm, 3, S));
  OK(cmx_array_from_double(&two, 2.0, CMX_FLOAT32));
  OK(cmx_multiply(&o, t, two, S));
  const float* p = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  int64_t bad = 0;
  for (int64_t k = 0; p && k < C; k++)
    for (int64_t i = 0; i < A; i++)
      for (int64_t j = 0; j < B; j++)
        bad += p[(k * A + i) * B + j] != 2 * v[(i * B + j) * C + k];
  CHECK_MSG(p && bad == 0, "permuted (%lld, %lld, %lld): %lld wrong",
            (long long)A, (long long)B, (long long)C, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, t, two, o}, 4);
  free(v);
}

/* The (2, 1, 0) permutation copied: out[k][j][i] = a[i][j][k] (the outer
 * dim closest to the inner one in memory moves next to it). */
static void check_reversed(int64_t A, int64_t B, int64_t C) {
  int64_t n = A * B * C, sh[3] = {A, B, C};
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)i;
  cmx_array a = NULL, t = NULL, o = NULL;
  OK(cmx_array_from_data(&a, v, sh, 3, CMX_FLOAT32));
  int perm[3] = {2, 1, 0};
  OK(cmx_transpose(&t, a, perm, 3, S));
  OK(cmx_contiguous(&o, t, false, S));
  cmx_array neg = NULL;
  OK(cmx_negative(&neg, t, S));
  const float *p = NULL, *q = NULL;
  OK(cmx_array_data(o, (const void**)&p));
  OK(cmx_array_data(neg, (const void**)&q));
  int64_t bad = 0;
  for (int64_t k = 0; p && q && k < C; k++)
    for (int64_t j = 0; j < B; j++)
      for (int64_t i = 0; i < A; i++) {
        float want = v[(i * B + j) * C + k];
        bad += p[(k * B + j) * A + i] != want;
        bad += q[(k * B + j) * A + i] != -want;
      }
  CHECK_MSG(p && q && bad == 0, "reversed (%lld, %lld, %lld): %lld wrong",
            (long long)A, (long long)B, (long long)C, (long long)bad);
  cmx_array_release_all((cmx_array[]){a, t, o, neg}, 4);
  free(v);
}

static void test_tiles(void) {
  /* Ragged against the 16 x 256 tiles, below and above the thresholds. */
  int64_t shapes[][2] = {{100, 4096}, {17, 300},    {15, 1000},
                         {333, 129},  {1000, 1000}, {16, 256},
                         {40, 50},    {40, 2500},   {33, 1030}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    check_transposed_add(shapes[i][0], shapes[i][1]);
    check_unary_ternary(shapes[i][0], shapes[i][1]);
  }
  check_permuted(33, 7, 300);
  check_permuted(5, 64, 130);
  check_reversed(40, 30, 50);
  check_reversed(3, 200, 129);
}

int main(void) {
  RUN(test_tiles);
  return test_summary("test_ew_tiles");
}
