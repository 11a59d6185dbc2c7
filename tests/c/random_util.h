/* Shared by the random tests: a plain reference implementation of
 * threefry2x32-20 and of JAX's bits layout, and small helpers.
 *
 * Sources of the expected values:
 * - Random123 (Salmon et al., SC'11), kat_vectors, threefry2x32 with 20
 *   rounds: the three counter/key/output triples in test_threefry_kat.
 *   These check the plain reference implementation below (written from
 *   the published algorithm); the library is then checked against it.
 * - JAX: PRNGKey(0) is [0, 0], and random.split(PRNGKey(0)) is
 *   [[4146024105, 967050713], [2718843009, 1272950319]] (JAX's docs and
 *   random tests).
 * - MLX tests/random_tests.cpp (values generated there with JAX's
 *   threefry_prng_impl.random_bits): key(seed) layouts, split(key(0)) and
 *   split(key(0), 3), bits of key(0)/key(1) for widths 4/2/1 and shapes
 *   (), (3, 1), (5) ... (8), the uniform of key(0) = 1797259609 / 2^32.
 * Everything else is compared against the reference layout (JAX's
 * formulation: counters iota(n) padded to even, split in halves, hashed
 * pairwise, concatenated, truncated, viewed as little-endian bytes) and
 * plain float formulas of MLX's samplers, or checked statistically with
 * fixed keys.
 */
#ifndef CMX_TEST_RANDOM_UTIL_H
#define CMX_TEST_RANDOM_UTIL_H

#include <float.h>

#include "harness.h"

#define S CMX_STREAM_DEFAULT

/* ---------------- reference threefry2x32-20 ---------------- */
static inline uint32_t rotl32(uint32_t x, int r) {
  return (x << r) | (x >> (32 - r));
}

/* Random123's threefry2x32 with 20 rounds: key schedule ks2 = k0 ^ k1 ^
 * 0x1BD11BDA, rotations R_32x2, a key injection after every 4 rounds. */
static inline void ref_threefry(const uint32_t key[2], const uint32_t ctr[2],
                                uint32_t out[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
  for (int r = 0; r < 20; r++) {
    x0 += x1;
    x1 = rotl32(x1, rot[r % 8]);
    x1 ^= x0;
    if (r % 4 == 3) {
      uint32_t sidx = (uint32_t)(r + 1) / 4;
      x0 += ks[sidx % 3];
      x1 += ks[(sidx + 1) % 3] + sidx;
    }
  }
  out[0] = x0;
  out[1] = x1;
}

/* JAX's random_bits for one key, as nbytes little-endian bytes. */
static inline void ref_bits(const uint32_t key[2], int64_t nbytes,
                            uint8_t* out) {
  int64_t n = (nbytes + 3) / 4, m = n + (n % 2), half = m / 2;
  uint32_t* cnt = calloc((size_t)m + 1, 4);
  uint32_t* words = calloc((size_t)m + 1, 4);
  for (int64_t i = 0; i < n; i++) cnt[i] = (uint32_t)i; /* pad: 0 */
  for (int64_t i = 0; i < half; i++) {
    uint32_t c[2] = {cnt[i], cnt[half + i]}, o[2];
    ref_threefry(key, c, o);
    words[i] = o[0];
    words[half + i] = o[1];
  }
  for (int64_t b = 0; b < nbytes; b++)
    out[b] = (uint8_t)(words[b / 4] >> (8 * (b % 4)));
  free(cnt);
  free(words);
}

/* split(key) as MLX/JAX: bits of shape (2, 2). */
static inline void ref_split2(const uint32_t key[2], uint32_t a[2],
                              uint32_t b[2]) {
  uint32_t w[4];
  ref_bits(key, 16, (uint8_t*)w); /* little-endian host */
  a[0] = w[0];
  a[1] = w[1];
  b[0] = w[2];
  b[1] = w[3];
}

/* ---------------- helpers ---------------- */
static inline cmx_array mk_key(uint32_t k0, uint32_t k1) {
  uint32_t k[2] = {k0, k1};
  int64_t two = 2;
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, k, &two, 1, CMX_UINT32));
  return a;
}

/* The bytes of a (evaluated); caller frees. */
static inline void* fetch(cmx_array a) {
  size_t nb = cmx_array_nbytes(a);
  void* p = malloc(nb ? nb : 1);
  if (cmx_array_copy_to(a, p, nb) != CMX_OK) {
    fprintf(stderr, "fetch: %s\n", cmx_last_error());
    memset(p, 0, nb);
  }
  return p;
}

static inline cmx_array scal(double v, cmx_dtype dt) {
  cmx_array a = NULL;
  OK(cmx_array_from_double(&a, v, dt));
  return a;
}

/* Raw uint32 bits of key for n elements (the draw every float sampler
 * starts from). */
static inline uint32_t* key_words(const uint32_t key[2], int64_t n) {
  uint32_t* w = malloc((size_t)(n ? n : 1) * 4);
  ref_bits(key, 4 * n, (uint8_t*)w);
  return w;
}

/* MLX's unit draw: min(float(b) / 2^32, upper), all in float32. */
static inline float unit(uint32_t b, float upper) {
  float u = (float)b / 4294967296.0f;
  return u < upper ? u : upper;
}

/* ---------------- statistics ---------------- */
#define NSTAT 1000000

static inline void moments(const double* x, int64_t n, double* mean,
                           double* var) {
  double m = 0, v = 0;
  for (int64_t i = 0; i < n; i++) m += x[i];
  m /= (double)n;
  for (int64_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
  *mean = m;
  *var = v / (double)n;
}

/* Values of a as doubles (any dtype). */
static inline double* values(cmx_array a) {
  h_tensor t = h_read(a);
  return t.re;
}

static inline void check_moments(const char* what, cmx_array a, double mean,
                                 double var, double tol_m, double tol_v) {
  double* x = values(a);
  double m, v;
  moments(x, cmx_array_size(a), &m, &v);
  bool finite = true;
  for (int64_t i = 0; i < cmx_array_size(a); i++)
    finite = finite && isfinite(x[i]);
  CHECK_MSG(finite && fabs(m - mean) < tol_m && fabs(v - var) < tol_v,
            "%s: mean %g (want %g), var %g (want %g)", what, m, mean, v, var);
  free(x);
}

#endif
