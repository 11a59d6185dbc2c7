/* cmx's AVX-512 float32 product (src/backend/cpu/sgemm512.c), which the
 * CPU convolution's tiles use: every width from one column to several
 * 64-column panels (masked last vectors), row counts around the
 * micro-tile heights (6 and 8, tails of each), inner sizes around the
 * 128-step block, A row-major and transposed (the weight gradient's
 * form), padded leading dimensions, overwrite and accumulate, and empty
 * inner sizes. Its contract is one fused multiply-add chain per element
 * in inner order, so the reference is that chain (fmaf) and results must
 * match bit for bit; padding around C must stay untouched. On a CPU
 * without AVX-512 the product must leave C alone. */
#include <math.h>

#include "backend/cpu/sgemm512.h"
#include "test.h"

static uint32_t g_seed = 12345;
static float rnd(void) { /* values in [-1, 1) with few bits: exact sums */
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)((int)(g_seed >> 9) % 2048 - 1024) / 1024.0f * 1.37f;
}

/* One case: m x n C from k inner steps; trans: A stored (k, m). */
static void one_case(int64_t m, int64_t n, int64_t k, bool trans, bool acc) {
  const int64_t pad = 3;
  const int64_t sam = trans ? 1 : k + pad, sak = trans ? m + pad : 1;
  const int64_t asz = trans ? (k ? k : 1) * (m + pad) : m * (k + pad);
  const int64_t ldb = n + pad, ldc = n + 5;
  float* a = malloc((size_t)asz * sizeof(float));
  float* b = malloc((size_t)((k ? k : 1) * ldb) * sizeof(float));
  float* c = malloc((size_t)(m * ldc) * sizeof(float));
  float* want = malloc((size_t)(m * ldc) * sizeof(float));
  for (int64_t i = 0; i < asz; i++) a[i] = rnd();
  for (int64_t i = 0; i < (k ? k : 1) * ldb; i++) b[i] = rnd();
  for (int64_t i = 0; i < m * ldc; i++) c[i] = want[i] = rnd();
  const bool avail = cmx__sgemm512_available();
  if (avail)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        float s = acc ? want[i * ldc + j] : 0.0f;
        for (int64_t p = 0; p < k; p++)
          s = fmaf(a[i * sam + p * sak], b[p * ldb + j], s);
        want[i * ldc + j] = s;
      }
  cmx__sgemm512(m, n, k, a, sam, sak, b, ldb, c, ldc, acc);
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < m * ldc; i++)
    if (memcmp(&c[i], &want[i], sizeof(float)) != 0) {
      if (first < 0) first = i;
      bad++;
    }
  CHECK_MSG(bad == 0,
            "m=%lld n=%lld k=%lld trans=%d acc=%d: %lld elements differ, "
            "first at %lld (%.9g, want %.9g)",
            (long long)m, (long long)n, (long long)k, trans, acc,
            (long long)bad, (long long)first, first >= 0 ? c[first] : 0.0,
            first >= 0 ? want[first] : 0.0);
  free(a);
  free(b);
  free(c);
  free(want);
}

static void test_shapes(void) {
  const int64_t ms[] = {1, 5, 6, 7, 8, 13, 64};
  const int64_t ns[] = {1, 15, 16, 17, 33, 48, 64, 65, 130};
  const int64_t ks[] = {1, 3, 128, 129, 300};
  for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
    for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
      for (size_t c = 0; c < sizeof ks / sizeof *ks; c++)
        for (int t = 0; t < 2; t++)
          one_case(ms[a], ns[b], ks[c], t, (a + b + c + (size_t)t) % 2);
}

static void test_empty_inner(void) {
  one_case(7, 20, 0, false, false); /* zeros */
  one_case(7, 20, 0, true, true);   /* C unchanged */
}

int main(void) {
  printf("cmx__sgemm512 %s\n", cmx__sgemm512_available()
                                   ? "runs (AVX-512)"
                                   : "unavailable: checks C is left alone");
  RUN(test_shapes);
  RUN(test_empty_inner);
  return test_summary("test_sgemm512");
}
