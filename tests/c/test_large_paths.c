/* Large-array paths of the elementwise and reduction kernels:
 * - float32 exp of big contiguous arrays (src/backend/cpu/unary.c: the
 *   block driver, the short form for inputs in [-87, 88] with the full
 *   form for stretches holding any other value, input prefetching) must
 *   give exactly the values of the general path, which a strided view
 *   takes (the same cmx__vexpf), for inputs covering every range: NaN,
 *   infinities, overflow, subnormal and zero results, and in-range values,
 *   the special ones alone in otherwise in-range stretches;
 * - reductions of rows long enough to prefetch (reduce_impl.c) must equal
 *   a double-precision reference (sum, mean within the blocked-summation
 *   bound; max, min and prod exactly), for float32, float64, int32 and
 *   uint8 rows, whole-array and per-row.
 * The pool has 3 threads (CMX_NUM_THREADS), so splits are uneven. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

static uint32_t lcg(uint32_t* s) {
  *s = *s * 1664525u + 1013904223u;
  return *s;
}

/* n float32 values: mostly in [-80, 80], with special values sprinkled
 * in single stretches (every 50000th element) and a run of them. */
static float* exp_inputs(int64_t n) {
  static const float specials[] = {
      NAN,     INFINITY, -INFINITY, 88.5f, 89.0f,  100.0f, -87.5f,  -95.0f,
      -103.5f, -104.5f,  -200.0f,   88.0f, -87.0f, 1e-30f, -1e-30f, 0.0f};
  float* v = malloc((size_t)n * sizeof(float));
  uint32_t s = 7;
  for (int64_t i = 0; i < n; i++)
    v[i] = (float)((double)lcg(&s) / 4294967296.0 * 160.0 - 80.0);
  int ns = (int)(sizeof specials / sizeof specials[0]);
  for (int64_t i = 1234, k = 0; i < n; i += 50000, k++) v[i] = specials[k % ns];
  for (int64_t i = n / 2; i < n / 2 + 3000 && i < n; i++) /* a long run */
    v[i] = (float)((double)lcg(&s) / 4294967296.0 * 400.0 - 200.0);
  return v;
}

/* exp of n values as a contiguous array, against exp of the same values
 * read through a strided view (every other element of a 2n buffer). */
static void check_exp(int64_t n) {
  float* v = exp_inputs(n);
  float* w = calloc((size_t)(2 * n), sizeof(float));
  for (int64_t i = 0; i < n; i++) w[2 * i] = v[i];
  cmx_array a = NULL, b = NULL, bs = NULL, ea = NULL, eb = NULL;
  int64_t n2 = 2 * n, one = 1, two = 2, lo = 0;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_array_from_data(&b, w, &n2, 1, CMX_FLOAT32));
  OK(cmx_slice(&bs, b, &lo, &n2, &two, S));
  OK(cmx_exp(&ea, a, S));
  OK(cmx_exp(&eb, bs, S));
  float* ra = malloc((size_t)n * sizeof(float));
  float* rb = malloc((size_t)n * sizeof(float));
  OK(cmx_array_copy_to(ea, ra, (size_t)n * sizeof(float)));
  OK(cmx_array_copy_to(eb, rb, (size_t)n * sizeof(float)));
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; i++)
    if (memcmp(&ra[i], &rb[i], sizeof(float)) != 0 &&
        !(isnan(ra[i]) && isnan(rb[i])))
      bad = i;
  CHECK_MSG(bad < 0, "exp n=%lld: element %lld (x=%.9g): %.9g vs %.9g",
            (long long)n, (long long)bad, bad < 0 ? 0 : v[bad],
            bad < 0 ? 0 : ra[bad], bad < 0 ? 0 : rb[bad]);
  /* and against libm within the documented bound (a few samples) */
  int64_t far = -1;
  for (int64_t i = 0; i < n && far < 0; i += 997) {
    double want = exp((double)v[i]);
    if (isnan(v[i])) {
      if (!isnan(ra[i])) far = i;
    } else if (isinf(want) || want > 3.4e38) {
      if (!isinf(ra[i])) far = i;
    } else if (fabs(ra[i] - want) > 2e-7 * want + 1.5e-45) {
      far = i;
    }
  }
  CHECK_MSG(far < 0, "exp n=%lld: element %lld (x=%.9g) is %.9g", (long long)n,
            (long long)far, far < 0 ? 0 : v[far], far < 0 ? 0 : ra[far]);
  (void)one;
  cmx_array all[] = {a, b, bs, ea, eb};
  cmx_array_release_all(all, 5);
  free(v);
  free(w);
  free(ra);
  free(rb);
}

/* The same with exp computed in place: its input a temporary the caller
 * released (x + 0 donates its buffer to exp). */
static void check_exp_inplace(int64_t n) {
  float* v = exp_inputs(n);
  cmx_array a = NULL, z = NULL, t = NULL, e = NULL, ref = NULL;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_array_weak_float(&z, 0.0));
  OK(cmx_add(&t, a, z, S));
  OK(cmx_exp(&e, t, S));
  cmx_array_release(t);
  OK(cmx_exp(&ref, a, S));
  float* re = malloc((size_t)n * sizeof(float));
  float* rr = malloc((size_t)n * sizeof(float));
  OK(cmx_array_copy_to(e, re, (size_t)n * sizeof(float)));
  OK(cmx_array_copy_to(ref, rr, (size_t)n * sizeof(float)));
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; i++)
    if (memcmp(&re[i], &rr[i], sizeof(float)) != 0 &&
        !(isnan(re[i]) && isnan(rr[i])))
      bad = i;
  CHECK_MSG(bad < 0, "exp in place n=%lld: element %lld (x=%.9g): %.9g vs %.9g",
            (long long)n, (long long)bad, bad < 0 ? 0 : v[bad],
            bad < 0 ? 0 : re[bad], bad < 0 ? 0 : rr[bad]);
  cmx_array all[] = {a, z, e, ref};
  cmx_array_release_all(all, 4);
  free(v);
  free(re);
  free(rr);
}

static void test_exp(void) {
  check_exp_inplace(1000);
  check_exp_inplace(131072 + 77);
  check_exp(1000);           /* the row function */
  check_exp(131072 + 77);    /* the block driver, no prefetching */
  check_exp((4 << 20) + 13); /* prefetching, a ragged last block */
}

/* ---- long reductions ---- */

/* Checks sum/mean/max/min of a (n values of dtype dt given as doubles in
 * v) over all elements, and the row sums of its (rows, n / rows) view. */
static void check_reduce(cmx_dtype dt, const double* v, int64_t n,
                         int64_t rows) {
  h_tensor t = h_alloc(&n, 1, dt);
  for (int64_t i = 0; i < n; i++) t.re[i] = v[i];
  cmx_array a = h_array(&t, H_CONTIG), r = NULL;
  double sum = 0, asum = 0, mx = -INFINITY, mn = INFINITY;
  for (int64_t i = 0; i < n; i++) {
    sum += v[i];
    asum += fabs(v[i]);
    mx = v[i] > mx ? v[i] : mx;
    mn = v[i] < mn ? v[i] : mn;
  }
  const char* name = cmx_dtype_name(dt);
  bool flt = dt == CMX_FLOAT32 || dt == CMX_FLOAT64;
  /* blocked float32 lanes, double block totals: a generous bound */
  double tol = flt ? 1e-6 * asum : 0;
  OK(cmx_sum(&r, a, NULL, 0, false, S));
  h_tensor got = h_read(r);
  CHECK_MSG(got.size == 1 && fabs(got.re[0] - sum) <= tol,
            "sum %s n=%lld: %.17g, want %.17g", name, (long long)n,
            got.size == 1 ? got.re[0] : 0, sum);
  h_free(&got);
  cmx_array_release(r);
  OK(cmx_max(&r, a, NULL, 0, false, S));
  got = h_read(r);
  CHECK_MSG(got.size == 1 && got.re[0] == mx, "max %s: %.17g, want %.17g", name,
            got.size == 1 ? got.re[0] : 0, mx);
  h_free(&got);
  cmx_array_release(r);
  OK(cmx_min(&r, a, NULL, 0, false, S));
  got = h_read(r);
  CHECK_MSG(got.size == 1 && got.re[0] == mn, "min %s: %.17g, want %.17g", name,
            got.size == 1 ? got.re[0] : 0, mn);
  h_free(&got);
  cmx_array_release(r);
  if (flt) {
    OK(cmx_mean(&r, a, NULL, 0, false, S));
    got = h_read(r);
    CHECK_MSG(got.size == 1 && fabs(got.re[0] - sum / (double)n) <=
                                   tol / (double)n + 1e-7 * fabs(sum / n),
              "mean %s: %.17g, want %.17g", name, got.size == 1 ? got.re[0] : 0,
              sum / (double)n);
    h_free(&got);
    cmx_array_release(r);
  }
  /* per-row sums of the (rows, n / rows) view */
  int64_t shape[2] = {rows, n / rows};
  cmx_array m = NULL;
  int ax = 1;
  OK(cmx_reshape(&m, a, shape, 2, S));
  OK(cmx_sum(&r, m, &ax, 1, false, S));
  got = h_read(r);
  bool ok = got.size == rows;
  for (int64_t i = 0; i < rows && ok; i++) {
    double s = 0, as = 0;
    for (int64_t k = 0; k < n / rows; k++) {
      s += v[i * (n / rows) + k];
      as += fabs(v[i * (n / rows) + k]);
    }
    ok = fabs(got.re[i] - s) <= (flt ? 1e-6 * as : 0);
  }
  CHECK_MSG(ok, "row sums %s (%lld rows)", name, (long long)rows);
  h_free(&got);
  cmx_array_release(r);
  cmx_array_release(m);
  cmx_array_release(a);
  h_free(&t);
}

static void test_reduce(void) {
  /* 2^23 values: float32 rows of 32 MiB, 2 rows of 16 MiB */
  const int64_t n = (int64_t)1 << 23;
  double* v = malloc((size_t)n * sizeof(double));
  uint32_t s = 11;
  for (int64_t i = 0; i < n; i++)
    v[i] = (double)(float)((double)lcg(&s) / 4294967296.0 * 2.0 - 0.7);
  v[n - 5] = 3.5; /* extremes near the end: after the last prefetch */
  v[n / 3] = -2.25;
  check_reduce(CMX_FLOAT32, v, n, 2);
  check_reduce(CMX_FLOAT64, v, n, 4);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(lcg(&s) % 2001) - 1000.0;
  check_reduce(CMX_INT32, v, n, 2);
  for (int64_t i = 0; i < n; i++) v[i] = (double)(lcg(&s) % 256);
  v[n - 1] = 255; /* uint8 sums are uint32: no wrap at this size */
  check_reduce(CMX_UINT8, v, n, 1);
  free(v);
}

int main(void) {
  setenv("CMX_NUM_THREADS", "3", 1);
  RUN(test_exp);
  RUN(test_reduce);
  return test_summary("test_large_paths");
}
