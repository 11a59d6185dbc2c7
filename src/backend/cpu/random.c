/* CPU kernels of the random family: RandomBits (counter-mode threefry2x32,
 * the layout described in primitives/random.h) and CovSqrt (the SVD square
 * root of covariance matrices, for multivariate_normal).
 *
 * RandomBits hashes blocks of consecutive counter pairs with the rounds
 * unrolled and constant rotations, so gcc vectorises a block across lanes;
 * the blocks of all keys are spread over the thread pool. Every output
 * word is written by exactly one counter pair, so chunks never overlap.
 */
#include "primitives/random.h"

#include <float.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* ---------------- RandomBits ---------------- */

/* Counter pairs per block: a multiple of every vector width, small enough
 * for the block's results to stay in L1. */
#define BLOCK 256

#define TF_ROUND(r)                     \
  do {                                  \
    a += b;                             \
    b = (b << (r)) | (b >> (32 - (r))); \
    b ^= a;                             \
  } while (0)
#define TF_EVEN \
  TF_ROUND(13); \
  TF_ROUND(15); \
  TF_ROUND(26); \
  TF_ROUND(6)
#define TF_ODD  \
  TF_ROUND(17); \
  TF_ROUND(29); \
  TF_ROUND(16); \
  TF_ROUND(24)

/* o0[j], o1[j] = threefry2x32((k0, k1), (c0 + j, c1 + j)) for j < n. */
static void tf_block(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, int n,
                     uint32_t* restrict o0, uint32_t* restrict o1) {
  const uint32_t k2 = k0 ^ k1 ^ 0x1BD11BDAu;
  for (int j = 0; j < n; j++) {
    uint32_t a = c0 + (uint32_t)j + k0, b = c1 + (uint32_t)j + k1;
    TF_EVEN;
    a += k1;
    b += k2 + 1u;
    TF_ODD;
    a += k2;
    b += k0 + 2u;
    TF_EVEN;
    a += k0;
    b += k1 + 3u;
    TF_ODD;
    a += k1;
    b += k2 + 4u;
    TF_EVEN;
    a += k2;
    b += k0 + 5u;
    o0[j] = a;
    o1[j] = b;
  }
}

typedef struct {
  const uint32_t* keys; /* 2 words per key, gathered */
  char* out;
  int64_t bpk;  /* bytes per key */
  int64_t half; /* floor(words / 2): counter pairs per key */
  int64_t h;    /* ceil(words / 2): index of the second output word */
} bits_ctx;

/* Writes `bytes` (at most 4 * n) bytes of words w[0..n) at byte offset
 * 4 * word of key block dst, clipped to the block's bpk bytes. */
static inline void put_words(char* dst, int64_t bpk, int64_t word,
                             const uint32_t* w, int64_t n) {
  int64_t at = 4 * word, bytes = 4 * n;
  if (at + bytes > bpk) bytes = bpk - at;
  if (bytes > 0) memcpy(dst + at, w, (size_t)bytes);
}

/* Pairs [begin, end) of the flattened (key, pair) space. */
static void bits_chunk(void* vctx, int64_t begin, int64_t end) {
  const bits_ctx* c = vctx;
  uint32_t o0[BLOCK], o1[BLOCK];
  int64_t t = begin;
  while (t < end) {
    int64_t key = t / c->half, j = t % c->half;
    int64_t n = c->half - j;
    if (n > end - t) n = end - t;
    if (n > BLOCK) n = BLOCK;
    uint32_t k0 = c->keys[2 * key], k1 = c->keys[2 * key + 1];
    tf_block(k0, k1, (uint32_t)j, (uint32_t)(c->h + j), (int)n, o0, o1);
    char* dst = c->out + key * c->bpk;
    put_words(dst, c->bpk, j, o0, n);
    put_words(dst, c->bpk, c->h + j, o1, n);
    t += n;
  }
}

/* Offset in elements of flat (row-major) index i of array a. */
static int64_t elem_loc(cmx_array a, int64_t i) {
  const int64_t* st = CMX__STRIDES(a);
  int64_t off = 0;
  for (int d = a->ndim - 1; d >= 0 && i; d--) {
    int64_t n = a->dims[d];
    off += (i % n) * st[d];
    i /= n;
  }
  return off;
}

CMX__KERNEL(cmx__cpu_random_bits) {
  (void)p;
  (void)nin;
  (void)nout;
  cmx_array keys = in[0], o = out[0];
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  int64_t nkeys = keys->size / 2;
  if (o->size == 0 || nkeys == 0) return CMX_OK;
  int64_t bpk = o->size / nkeys * (int64_t)cmx_dtype_size(o->dtype);

  uint32_t* kw = malloc((size_t)nkeys * 2 * sizeof(uint32_t));
  if (!kw)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[RandomBits] out of memory.");
  const uint32_t* kp = cmx_kernel_data(keys);
  for (int64_t i = 0; i < 2 * nkeys; i++) kw[i] = kp[elem_loc(keys, i)];

  int64_t words = (bpk + 3) / 4;
  bits_ctx c = {.keys = kw,
                .out = cmx_kernel_data(o),
                .bpk = bpk,
                .half = words / 2,
                .h = words - words / 2};
  if (c.half > 0) cmx__parallel_for(nkeys * c.half, 16 * BLOCK, bits_chunk, &c);
  if (words % 2) /* the odd word h - 1 comes from the pair (h - 1, 0) */
    for (int64_t k = 0; k < nkeys; k++) {
      uint32_t a = (uint32_t)c.half, b = 0;
      cmx__threefry2x32(kw[2 * k], kw[2 * k + 1], &a, &b);
      put_words(c.out + k * bpk, bpk, c.half, &a, 1);
    }
  free(kw);
  return CMX_OK;
}

/* ---------------- CovSqrt ---------------- */

typedef struct {
  const float* in;
  float* out;
  int64_t n;
} cov_ctx;

/* out = U diag(sqrt(s)) V^T of the n x n matrix a (row-major, double),
 * by one-sided Jacobi: rotations V make the columns of W = A V orthogonal,
 * then W = U diag(s) and U diag(sqrt(s)) V^T = W diag(1 / sqrt(s)) V^T.
 * w and v are n * n scratch. Directions with s at rounding level count as
 * zero (they add nothing to the square root). */
static void cov_sqrt(const double* a, double* w, double* v, double* sig,
                     int64_t n, float* out) {
  memcpy(w, a, (size_t)(n * n) * sizeof(double));
  for (int64_t i = 0; i < n * n; i++) v[i] = 0;
  for (int64_t i = 0; i < n; i++) v[i * n + i] = 1;
  for (int sweep = 0; sweep < 60; sweep++) {
    bool rotated = false;
    for (int64_t p = 0; p < n - 1; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double al = 0, be = 0, ga = 0;
        for (int64_t k = 0; k < n; k++) {
          double x = w[k * n + p], y = w[k * n + q];
          al += x * x;
          be += y * y;
          ga += x * y;
        }
        if (!(fabs(ga) > 1e-15 * sqrt(al * be))) continue;
        rotated = true;
        double zeta = (be - al) / (2 * ga);
        double t =
            (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
        double cs = 1 / sqrt(1 + t * t), sn = cs * t;
        for (int64_t k = 0; k < n; k++) {
          double x = w[k * n + p], y = w[k * n + q];
          w[k * n + p] = cs * x - sn * y;
          w[k * n + q] = sn * x + cs * y;
          x = v[k * n + p];
          y = v[k * n + q];
          v[k * n + p] = cs * x - sn * y;
          v[k * n + q] = sn * x + cs * y;
        }
      }
    if (!rotated) break;
  }
  double smax = 0;
  for (int64_t j = 0; j < n; j++) {
    double s2 = 0;
    for (int64_t k = 0; k < n; k++) s2 += w[k * n + j] * w[k * n + j];
    sig[j] = sqrt(s2);
    if (sig[j] > smax) smax = sig[j];
  }
  double tol = smax * (double)n * DBL_EPSILON;
  for (int64_t j = 0; j < n; j++) sig[j] = sig[j] > tol ? 1 / sqrt(sig[j]) : 0;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++) {
      double acc = 0;
      for (int64_t j = 0; j < n; j++)
        acc += w[r * n + j] * sig[j] * v[c * n + j];
      out[r * n + c] = (float)acc;
    }
}

static void cov_chunk(void* vctx, int64_t begin, int64_t end) {
  const cov_ctx* c = vctx;
  int64_t n = c->n, nn = n * n;
  double* buf = malloc((size_t)(3 * nn + n) * sizeof(double));
  if (!buf) { /* NaN marks the failure rather than leaving garbage */
    for (int64_t b = begin; b < end; b++)
      for (int64_t i = 0; i < nn; i++) c->out[b * nn + i] = NAN;
    return;
  }
  for (int64_t b = begin; b < end; b++) {
    for (int64_t i = 0; i < nn; i++) buf[i] = c->in[b * nn + i];
    cov_sqrt(buf, buf + nn, buf + 2 * nn, buf + 3 * nn, n, c->out + b * nn);
  }
  free(buf);
}

CMX__KERNEL(cmx__cpu_cov_sqrt) {
  (void)p;
  (void)nin;
  (void)nout;
  cmx_array a = in[0], o = out[0];
  if (!cmx_kernel_is_contiguous(a))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[CovSqrt] expects a contiguous input.");
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  if (o->size == 0) return CMX_OK;
  int64_t n = a->dims[a->ndim - 1];
  cov_ctx c = {.in = cmx_kernel_data(a), .out = cmx_kernel_data(o), .n = n};
  int64_t batch = o->size / (n * n);
  int64_t grain = 1 + 32768 / (n * n * n + 1);
  cmx__parallel_for(batch, grain, cov_chunk, &c);
  return CMX_OK;
}
