/* The random module's samplers: exact values against plain float formulas
 * of MLX's samplers on the reference bits, distribution checks with fixed
 * keys over 1M samples, dtypes, determinism, multivariate_normal,
 * categorical, permutation, and error messages. Sources of the expected
 * values: see random_util.h. */
#include "random_util.h"

/* ---------------- samplers: exact values ---------------- */
static void test_uniform_exact(void) {
  /* MLX: uniform of key(0) is float(1797259609) / UINT32_MAX in float. */
  cmx_array k = NULL, u = NULL;
  OK(cmx_random_key(&k, 0));
  OK(cmx_random_uniform(&u, NULL, NULL, NULL, 0, CMX_DTYPE_AUTO, k, S));
  CHECK(cmx_array_dtype(u) == CMX_FLOAT32 && cmx_array_ndim(u) == 0);
  float* f = fetch(u);
  CHECK(*f == (float)1797259609u / (float)UINT32_MAX);
  free(f);
  cmx_array_release(u);
  cmx_array_release(k);

  /* float32 on [-2, 3) over many draws, bit for bit. */
  uint32_t key[2] = {5, 6};
  int64_t n = 100001;
  k = mk_key(key[0], key[1]);
  cmx_array lo = scal(-2, CMX_FLOAT32), hi = scal(3, CMX_FLOAT32);
  OK(cmx_random_uniform(&u, lo, hi, &n, 1, CMX_FLOAT32, k, S));
  uint32_t* w = key_words(key, n);
  f = fetch(u);
  bool ok = true;
  float below = nextafterf(1.0f, 0.0f);
  for (int64_t i = 0; i < n && ok; i++) {
    float want = 5.0f * unit(w[i], below) + -2.0f;
    ok = f[i] == want && f[i] >= -2.0f && f[i] < 3.0f;
  }
  CHECK(ok);
  free(f);
  cmx_array_release(u);

  /* float16 / bfloat16 on [0, 1): the float32 draw bounded below 1 in the
   * half type, then rounded. */
  static const struct {
    cmx_dtype dt;
    float below;
  } halves[] = {{CMX_FLOAT16, 0.99951171875f}, {CMX_BFLOAT16, 0.99609375f}};
  for (int h = 0; h < 2; h++) {
    OK(cmx_random_uniform(&u, NULL, NULL, &n, 1, halves[h].dt, k, S));
    CHECK(cmx_array_dtype(u) == halves[h].dt);
    uint16_t* g = fetch(u);
    ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
      float x = unit(w[i], halves[h].below);
      uint16_t want = halves[h].dt == CMX_FLOAT16 ? cmx_float_to_float16(x)
                                                  : cmx_float_to_bfloat16(x);
      float back = halves[h].dt == CMX_FLOAT16 ? cmx_float16_to_float(g[i])
                                               : cmx_bfloat16_to_float(g[i]);
      ok = g[i] == want && back < 1.0f && back >= 0.0f;
    }
    CHECK_MSG(ok, "uniform %s", cmx_dtype_name(halves[h].dt));
    free(g);
    cmx_array_release(u);
  }
  /* float64 (cmx extension): the float32 draws, exactly. */
  OK(cmx_random_uniform(&u, lo, hi, &n, 1, CMX_FLOAT64, k, S));
  double* d = fetch(u);
  ok = cmx_array_dtype(u) == CMX_FLOAT64;
  for (int64_t i = 0; i < n && ok; i++)
    ok = d[i] == 5.0 * (double)unit(w[i], below) - 2.0;
  CHECK(ok);
  free(d);
  cmx_array_release(u);

  /* Broadcast bounds: low (3, 1), high (1, 4) with shape (3, 4). */
  cmx_array l2 = NULL, h2 = NULL;
  float lv[3] = {0, 10, -5}, hv[4] = {1, 2, 20, 30};
  OK(cmx_array_from_data(&l2, lv, (int64_t[]){3, 1}, 2, CMX_FLOAT32));
  OK(cmx_array_from_data(&h2, hv, (int64_t[]){1, 4}, 2, CMX_FLOAT32));
  OK(cmx_random_uniform(&u, l2, h2, (int64_t[]){3, 4}, 2, CMX_FLOAT32, k, S));
  f = fetch(u);
  free(w);
  w = key_words(key, 12); /* the counter layout depends on the size */
  ok = true;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      ok = ok &&
           f[i * 4 + j] == (hv[j] - lv[i]) * unit(w[i * 4 + j], below) + lv[i];
  CHECK(ok);
  free(f);
  free(w);
  cmx_array_release(u);
  cmx_array_release(l2);
  cmx_array_release(h2);
  cmx_array_release(lo);
  cmx_array_release(hi);
  cmx_array_release(k);
}

/* erfinv in double by bisection (slow but plainly right). */
static double ref_erfinv(double x) {
  double a = -7, b = 7;
  for (int i = 0; i < 80; i++) {
    double m = 0.5 * (a + b);
    if (erf(m) < x)
      a = m;
    else
      b = m;
  }
  return 0.5 * (a + b);
}

/* MLX's (-1, 1) draw of normal and laplace: uniform on
 * [nextafter(-1, 0), 1) in float32. */
static float open_draw(uint32_t b) {
  float lo = nextafterf(-1.0f, 0.0f), range = 1.0f - lo;
  return range * unit(b, nextafterf(1.0f, 0.0f)) + lo;
}

static void test_normal_exact(void) {
  uint32_t key[2] = {42, 4242};
  int64_t n = 4000;
  cmx_array k = mk_key(key[0], key[1]), z = NULL;
  uint32_t* w = key_words(key, n);
  OK(cmx_random_normal(&z, &n, 1, CMX_DTYPE_AUTO, NULL, NULL, k, S));
  CHECK(cmx_array_dtype(z) == CMX_FLOAT32);
  float* f = fetch(z);
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    double want =
        (double)(float)M_SQRT2 * (double)(float)ref_erfinv(open_draw(w[i]));
    ok = fabs(f[i] - want) <= 4e-7 * fabs(want) + 1e-30;
    if (!ok)
      fprintf(stderr, "normal[%lld] %.9g want %.9g\n", (long long)i, f[i],
              want);
  }
  CHECK(ok);
  free(f);
  cmx_array_release(z);
  /* loc and scale: loc + scale * z, computed in the dtype. */
  cmx_array loc = scal(1.5, CMX_FLOAT32), sc = scal(2.0, CMX_FLOAT32),
            z2 = NULL;
  OK(cmx_random_normal(&z, &n, 1, CMX_FLOAT32, NULL, NULL, k, S));
  OK(cmx_random_normal(&z2, &n, 1, CMX_FLOAT32, loc, sc, k, S));
  float* a = fetch(z);
  float* b = fetch(z2);
  ok = true;
  for (int64_t i = 0; i < n && ok; i++)
    ok = fabsf(b[i] - (1.5f + 2.0f * a[i])) <= 1e-6f * (1 + fabsf(b[i]));
  CHECK(ok);
  free(a);
  free(b);
  cmx_array_release(z);
  cmx_array_release(z2);
  /* loc/scale broadcast into a bigger result shape (MLX allows). */
  cmx_array lb = NULL;
  OK(cmx_zeros(&lb, (int64_t[]){3, 1, 2}, 3, CMX_FLOAT32, S));
  OK(cmx_random_normal(&z, (int64_t[]){4, 2}, 2, CMX_FLOAT16, lb, lb, k, S));
  CHECK(cmx_array_ndim(z) == 3 && cmx_array_dim(z, 0) == 3 &&
        cmx_array_dim(z, 1) == 4 && cmx_array_dtype(z) == CMX_FLOAT16);
  cmx_array_release(z);
  cmx_array_release(lb);
  /* complex64: erfinv of (shape, 2) draws as (re, im). */
  OK(cmx_random_normal(&z, (int64_t[]){50}, 1, CMX_COMPLEX64, NULL, NULL, k,
                       S));
  CHECK(cmx_array_dtype(z) == CMX_COMPLEX64 && cmx_array_ndim(z) == 1 &&
        cmx_array_dim(z, 0) == 50);
  float* c = fetch(z);
  uint32_t* w2 = key_words(key, 100);
  ok = true;
  for (int i = 0; i < 100 && ok; i++) {
    double want = ref_erfinv(open_draw(w2[i]));
    ok = fabs(c[i] - want) <= 4e-7 * fabs(want) + 1e-30;
  }
  CHECK(ok);
  free(c);
  free(w2);
  cmx_array_release(z);
  free(w);
  cmx_array_release(loc);
  cmx_array_release(sc);
  cmx_array_release(k);
}

static void test_bernoulli_exact(void) {
  uint32_t key[2] = {3, 1};
  int64_t n = 20000;
  cmx_array k = mk_key(key[0], key[1]), p = scal(0.3, CMX_FLOAT32), b = NULL;
  OK(cmx_random_bernoulli(&b, p, &n, 1, k, S));
  CHECK(cmx_array_dtype(b) == CMX_BOOL);
  uint8_t* g = fetch(b);
  uint32_t* w = key_words(key, n);
  float thr = 0.3f * nextafterf(4294967296.0f, FLT_MAX);
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) ok = g[i] == ((float)w[i] < thr);
  CHECK(ok);
  free(g);
  free(w);
  cmx_array_release(b);
  cmx_array_release(p);
  /* p >= 1: all true; p <= 0: all false (MLX allows both). */
  float pv[2] = {2.0f, -2.0f};
  OK(cmx_array_from_data(&p, pv, (int64_t[]){2}, 1, CMX_FLOAT32));
  OK(cmx_random_bernoulli(&b, p, NULL, 0, k, S));
  g = fetch(b);
  CHECK(cmx_array_ndim(b) == 1 && g[0] == 1 && g[1] == 0);
  free(g);
  cmx_array_release(b);
  cmx_array_release(p);
  /* Default p = 0.5, scalar. */
  OK(cmx_random_bernoulli(&b, NULL, NULL, 0, k, S));
  CHECK(cmx_array_ndim(b) == 0 && cmx_array_dtype(b) == CMX_BOOL);
  cmx_array_release(b);
  cmx_array_release(k);
}

static void test_randint_exact(void) {
  static const struct {
    double lo, hi;
  } cases[] = {{0, 10}, {-5, 5}, {3, 15}, {-1000, -990}, {0, 1}, {20, -10}};
  uint32_t key[2] = {8, 9};
  int64_t n = 30000;
  uint32_t* w = key_words(key, n);
  cmx_array k = mk_key(key[0], key[1]);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    cmx_array lo = scal(cases[c].lo, CMX_INT32),
              hi = scal(cases[c].hi, CMX_INT32), r = NULL;
    OK(cmx_random_randint(&r, lo, hi, &n, 1, CMX_DTYPE_AUTO, k, S));
    CHECK(cmx_array_dtype(r) == CMX_INT32);
    int32_t* g = fetch(r);
    float lf = (float)cases[c].lo, range = (float)cases[c].hi - lf;
    int32_t l = (int32_t)cases[c].lo, h = (int32_t)cases[c].hi;
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
      int32_t v = (int32_t)floorf(range * unit(w[i], nextafterf(1, 0)) + lf);
      if (v > h - 1) v = h - 1;
      if (v < l) v = l;
      ok = g[i] == v && (h <= l ? g[i] == l : (g[i] >= l && g[i] < h));
    }
    CHECK_MSG(ok, "randint [%g, %g)", cases[c].lo, cases[c].hi);
    free(g);
    cmx_array_release(r);
    cmx_array_release(lo);
    cmx_array_release(hi);
  }
  free(w);
  cmx_array_release(k);
}

/* ---------------- samplers: statistics ---------------- */

static void test_distributions(void) {
  int64_t n = NSTAT;
  cmx_array k = mk_key(2718, 2818), a = NULL;
  /* Tolerances are about 7 standard errors of each estimate. */
  OK(cmx_random_uniform(&a, NULL, NULL, &n, 1, CMX_FLOAT32, k, S));
  check_moments("uniform", a, 0.5, 1.0 / 12, 0.002, 0.0005);
  cmx_array_release(a);
  OK(cmx_random_normal(&a, &n, 1, CMX_FLOAT32, NULL, NULL, k, S));
  check_moments("normal", a, 0, 1, 0.007, 0.01);
  cmx_array_release(a);
  OK(cmx_random_laplace(&a, &n, 1, CMX_FLOAT32, 0, 1, k, S));
  check_moments("laplace", a, 0, 2, 0.01, 0.035);
  cmx_array_release(a);
  OK(cmx_random_laplace(&a, &n, 1, CMX_FLOAT32, 3, 0.5, k, S));
  check_moments("laplace(3, 0.5)", a, 3, 0.5, 0.005, 0.01);
  cmx_array_release(a);
  OK(cmx_random_gumbel(&a, &n, 1, CMX_FLOAT32, k, S));
  check_moments("gumbel", a, 0.5772156649, M_PI * M_PI / 6, 0.009, 0.04);
  cmx_array_release(a);
  cmx_array m = scal(1, CMX_FLOAT32), sd = scal(3, CMX_FLOAT32);
  OK(cmx_random_normal(&a, &n, 1, CMX_FLOAT64, m, sd, k, S));
  CHECK(cmx_array_dtype(a) == CMX_FLOAT64);
  check_moments("normal(1, 3) f64", a, 1, 9, 0.02, 0.09);
  cmx_array_release(a);
  cmx_array_release(m);
  cmx_array_release(sd);

  /* bernoulli frequency. */
  cmx_array p = scal(0.3, CMX_FLOAT32);
  OK(cmx_random_bernoulli(&a, p, &n, 1, k, S));
  check_moments("bernoulli(0.3)", a, 0.3, 0.21, 0.003, 0.003);
  cmx_array_release(a);
  cmx_array_release(p);

  /* randint: range and uniformity (chi-square over 10 bins). */
  cmx_array lo = scal(-3, CMX_INT32), hi = scal(7, CMX_INT32);
  OK(cmx_random_randint(&a, lo, hi, &n, 1, CMX_INT32, k, S));
  int32_t* r = fetch(a);
  int64_t cnt[10] = {0};
  bool in = true;
  for (int64_t i = 0; i < n; i++) {
    in = in && r[i] >= -3 && r[i] < 7;
    if (r[i] >= -3 && r[i] < 7) cnt[r[i] + 3]++;
  }
  double chi = 0, e = n / 10.0;
  for (int i = 0; i < 10; i++) chi += (cnt[i] - e) * (cnt[i] - e) / e;
  CHECK_MSG(in && chi < 40, "randint chi2 %g (9 dof)", chi); /* p ~ 1e-5 */
  free(r);
  cmx_array_release(a);
  cmx_array_release(lo);
  cmx_array_release(hi);

  /* truncated_normal on [-1, 2]: bounds and the truncated mean/var. */
  cmx_array tl = scal(-1, CMX_FLOAT32), tu = scal(2, CMX_FLOAT32);
  OK(cmx_random_truncated_normal(&a, tl, tu, &n, 1, CMX_FLOAT32, k, S));
  double* x = values(a);
  bool bounded = true;
  for (int64_t i = 0; i < n; i++) bounded = bounded && x[i] >= -1 && x[i] <= 2;
  CHECK(bounded);
  free(x);
  double pa = exp(-0.5) / sqrt(2 * M_PI), pb = exp(-2.0) / sqrt(2 * M_PI);
  double z = 0.5 * (erf(2 / M_SQRT2) - erf(-1 / M_SQRT2));
  double tmean = (pa - pb) / z;
  double tvar = 1 + (-1 * pa - 2 * pb) / z - tmean * tmean;
  check_moments("truncated_normal", a, tmean, tvar, 0.004, 0.004);
  cmx_array_release(a);
  cmx_array_release(tl);
  cmx_array_release(tu);
  cmx_array_release(k);
}

static void test_dtypes(void) {
  int64_t n = 10000;
  cmx_array k = mk_key(1, 2), a = NULL;
  static const cmx_dtype fl[] = {CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32,
                                 CMX_FLOAT64};
  for (int i = 0; i < 4; i++) {
    OK(cmx_random_uniform(&a, NULL, NULL, &n, 1, fl[i], k, S));
    double* x = values(a);
    bool ok = cmx_array_dtype(a) == fl[i];
    for (int64_t j = 0; j < n; j++) ok = ok && x[j] >= 0 && x[j] < 1;
    CHECK_MSG(ok, "uniform %s in [0, 1)", cmx_dtype_name(fl[i]));
    free(x);
    cmx_array_release(a);
    /* Half types: no infinities from the open-interval bounds. */
    OK(cmx_random_normal(&a, &n, 1, fl[i], NULL, NULL, k, S));
    CHECK(cmx_array_dtype(a) == fl[i]);
    check_moments("normal dtype", a, 0, 1, 0.1, 0.1);
    cmx_array_release(a);
    OK(cmx_random_laplace(&a, &n, 1, fl[i], 0, 1, k, S));
    CHECK(cmx_array_dtype(a) == fl[i]);
    check_moments("laplace dtype", a, 0, 2, 0.1, 0.3);
    cmx_array_release(a);
    OK(cmx_random_gumbel(&a, &n, 1, fl[i], k, S));
    CHECK(cmx_array_dtype(a) == fl[i]);
    cmx_array_release(a);
    cmx_array tl = scal(-2, CMX_FLOAT32), tu = scal(2, CMX_FLOAT32);
    OK(cmx_random_truncated_normal(&a, tl, tu, &n, 1, fl[i], k, S));
    double* t = values(a);
    bool ok2 = cmx_array_dtype(a) == fl[i];
    for (int64_t j = 0; j < n; j++) ok2 = ok2 && t[j] >= -2 && t[j] <= 2;
    CHECK_MSG(ok2, "truncated_normal %s", cmx_dtype_name(fl[i]));
    free(t);
    cmx_array_release(a);
    cmx_array_release(tl);
    cmx_array_release(tu);
    /* bernoulli with p of this dtype. */
    cmx_array p = scal(0.25, fl[i]);
    OK(cmx_random_bernoulli(&a, p, &n, 1, k, S));
    check_moments("bernoulli dtype", a, 0.25, 0.1875, 0.03, 0.03);
    cmx_array_release(a);
    cmx_array_release(p);
  }
  /* randint in every integer dtype and bool. */
  static const cmx_dtype ints[] = {CMX_BOOL,   CMX_UINT8,  CMX_UINT16,
                                   CMX_UINT32, CMX_UINT64, CMX_INT8,
                                   CMX_INT16,  CMX_INT32,  CMX_INT64};
  for (int i = 0; i < 9; i++) {
    bool b = ints[i] == CMX_BOOL;
    cmx_array lo = scal(b ? 0 : 5, CMX_INT32),
              hi = scal(b ? 2 : 100, CMX_INT32);
    OK(cmx_random_randint(&a, lo, hi, &n, 1, ints[i], k, S));
    double* x = values(a);
    bool ok = cmx_array_dtype(a) == ints[i];
    int64_t lows = 0, highs = 0;
    for (int64_t j = 0; j < n; j++) {
      ok = ok && x[j] >= (b ? 0 : 5) && x[j] < (b ? 2 : 100) &&
           x[j] == floor(x[j]);
      lows += x[j] == (b ? 0 : 5);
      highs += x[j] == (b ? 1 : 99);
    }
    /* Both ends are reached (about n/2 or n/95 times each). */
    CHECK_MSG(ok && lows > (b ? 4000 : 50) && highs > (b ? 4000 : 50),
              "randint %s (%lld lows, %lld highs)", cmx_dtype_name(ints[i]),
              (long long)lows, (long long)highs);
    free(x);
    cmx_array_release(a);
    cmx_array_release(lo);
    cmx_array_release(hi);
  }
  /* Weak (Python-number) bounds work too. */
  cmx_array wl = NULL, wh = NULL;
  OK(cmx_array_weak_int(&wl, -10));
  OK(cmx_array_weak_int(&wh, 10));
  OK(cmx_random_randint(&a, wl, wh, (int64_t[]){100, 100}, 2, CMX_DTYPE_AUTO, k,
                        S));
  double* x = values(a);
  bool ok = cmx_array_dtype(a) == CMX_INT32;
  for (int j = 0; j < 10000; j++) ok = ok && x[j] >= -10 && x[j] < 10;
  CHECK(ok);
  free(x);
  cmx_array_release(a);
  cmx_array_release(wl);
  cmx_array_release(wh);
  cmx_array_release(k);
}

static void test_determinism(void) {
  cmx_array k = mk_key(77, 88), a = NULL, b = NULL, k2 = mk_key(77, 89);
  int64_t sh[] = {33, 3};
  OK(cmx_random_gumbel(&a, sh, 2, CMX_FLOAT32, k, S));
  OK(cmx_random_gumbel(&b, sh, 2, CMX_FLOAT32, k, S));
  float* pa = fetch(a);
  float* pb = fetch(b);
  CHECK(memcmp(pa, pb, 99 * 4) == 0);
  free(pb);
  cmx_array_release(b);
  OK(cmx_random_gumbel(&b, sh, 2, CMX_FLOAT32, k2, S));
  pb = fetch(b);
  CHECK(memcmp(pa, pb, 99 * 4) != 0);
  free(pa);
  free(pb);
  cmx_array_release(a);
  cmx_array_release(b);
  /* Global draws differ from call to call. */
  OK(cmx_random_uniform(&a, NULL, NULL, sh, 2, CMX_FLOAT32, NULL, S));
  OK(cmx_random_uniform(&b, NULL, NULL, sh, 2, CMX_FLOAT32, NULL, S));
  pa = fetch(a);
  pb = fetch(b);
  CHECK(memcmp(pa, pb, 99 * 4) != 0);
  free(pa);
  free(pb);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(k);
  cmx_array_release(k2);
}

/* ---------------- multivariate normal ---------------- */
static void test_multivariate_normal(void) {
  /* Exact: mean + z @ sqrt(cov) with z = normal(key) of the same shape and
   * sqrt(cov) the PSD root, here in closed form for 2 x 2:
   * (C + sqrt(det) I) / sqrt(trace + 2 sqrt(det)). */
  float cv[4] = {2, 0.5f, 0.5f, 1}, mv[2] = {4, 7};
  double sd = sqrt(2.0 * 1 - 0.25), tt = sqrt(3 + 2 * sd);
  double R[2][2] = {{(2 + sd) / tt, 0.5 / tt}, {0.5 / tt, (1 + sd) / tt}};
  cmx_array cov = NULL, mean = NULL, k = mk_key(0, 0), x = NULL, z = NULL;
  OK(cmx_array_from_data(&cov, cv, (int64_t[]){2, 2}, 2, CMX_FLOAT32));
  OK(cmx_array_from_data(&mean, mv, (int64_t[]){2}, 1, CMX_FLOAT32));
  int64_t n = 200000;
  OK(cmx_random_multivariate_normal(&x, mean, cov, &n, 1, CMX_DTYPE_AUTO, k,
                                    S));
  CHECK(cmx_array_ndim(x) == 2 && cmx_array_dim(x, 0) == n &&
        cmx_array_dim(x, 1) == 2 && cmx_array_dtype(x) == CMX_FLOAT32);
  OK(cmx_random_normal(&z, (int64_t[]){n, 2}, 2, CMX_FLOAT32, NULL, NULL, k,
                       S));
  float* px = fetch(x);
  float* pz = fetch(z);
  bool ok = true;
  double s0 = 0, s1 = 0, c00 = 0, c01 = 0, c11 = 0;
  for (int64_t i = 0; i < n; i++) {
    for (int j = 0; j < 2 && ok; j++) {
      double want = mv[j] + pz[2 * i] * R[0][j] + pz[2 * i + 1] * R[1][j];
      ok = fabs(px[2 * i + j] - want) < 1e-5 * (1 + fabs(want));
    }
    s0 += px[2 * i];
    s1 += px[2 * i + 1];
  }
  CHECK(ok);
  s0 /= (double)n;
  s1 /= (double)n;
  for (int64_t i = 0; i < n; i++) {
    double a = px[2 * i] - s0, b = px[2 * i + 1] - s1;
    c00 += a * a;
    c01 += a * b;
    c11 += b * b;
  }
  c00 /= (double)n;
  c01 /= (double)n;
  c11 /= (double)n;
  CHECK_MSG(fabs(s0 - 4) < 0.025 && fabs(s1 - 7) < 0.02 &&
                fabs(c00 - 2) < 0.05 && fabs(c01 - 0.5) < 0.03 &&
                fabs(c11 - 1) < 0.025,
            "mvn moments %g %g %g %g %g", s0, s1, c00, c01, c11);
  free(px);
  free(pz);
  cmx_array_release(x);
  cmx_array_release(z);

  /* A singular 3 x 3 covariance (MLX's test) and batch broadcasting:
   * mean (3, 2) with shape (4, 3) gives (4, 3, 2). */
  float c3[9] = {1, -1, 0.5f, -1, 1, -0.5f, 0.5f, -0.5f, 1};
  cmx_array cov3 = NULL, mean3 = NULL;
  OK(cmx_array_from_data(&cov3, c3, (int64_t[]){3, 3}, 2, CMX_FLOAT32));
  OK(cmx_arange(&mean3, 0, 3, 1, CMX_INT32, S));
  int64_t n3 = 100000;
  OK(cmx_random_multivariate_normal(&x, mean3, cov3, &n3, 1, CMX_FLOAT32, k,
                                    S));
  float* p3 = fetch(x);
  double mu[3] = {0}, cc[3][3] = {{0}};
  for (int64_t i = 0; i < n3; i++)
    for (int a = 0; a < 3; a++) mu[a] += p3[3 * i + a] / (double)n3;
  for (int64_t i = 0; i < n3; i++)
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        cc[a][b] +=
            (p3[3 * i + a] - mu[a]) * (p3[3 * i + b] - mu[b]) / (double)n3;
  ok = true;
  for (int a = 0; a < 3; a++) {
    ok = ok && fabs(mu[a] - a) < 0.03;
    for (int b = 0; b < 3; b++)
      ok = ok && fabs(cc[a][b] - c3[3 * a + b]) < 0.03;
  }
  CHECK(ok);
  free(p3);
  cmx_array_release(x);
  float mb[6] = {0, 7, 1, 2, 3, 4};
  cmx_array meanb = NULL;
  OK(cmx_array_from_data(&meanb, mb, (int64_t[]){3, 2}, 2, CMX_FLOAT32));
  OK(cmx_random_multivariate_normal(&x, meanb, cov, (int64_t[]){4, 3}, 2,
                                    CMX_FLOAT32, k, S));
  CHECK(cmx_array_ndim(x) == 3 && cmx_array_dim(x, 0) == 4 &&
        cmx_array_dim(x, 1) == 3 && cmx_array_dim(x, 2) == 2);
  OK(cmx_array_eval(x));
  cmx_array_release(x);

  /* Errors (MLX's cases). */
  cmx_array m22 = NULL, c222 = NULL, m3 = NULL, c23 = NULL;
  OK(cmx_zeros(&m22, (int64_t[]){2, 2}, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&c222, (int64_t[]){2, 2, 2}, 3, CMX_FLOAT32, S));
  OK(cmx_zeros(&m3, (int64_t[]){3}, 1, CMX_FLOAT32, S));
  OK(cmx_zeros(&c23, (int64_t[]){2, 3}, 2, CMX_FLOAT32, S));
  FAILS(
      cmx_random_multivariate_normal(&x, mean, cov, NULL, 0, CMX_FLOAT16, k, S),
      CMX_ERR_TYPE, "[multivariate_normal] dtype must be float32.");
  FAILS(cmx_random_multivariate_normal(&x, m22, cov, (int64_t[]){3}, 1,
                                       CMX_FLOAT32, k, S),
        CMX_ERR_VALUE, "[multivariate_normal] shapes (2) and (3) cannot");
  FAILS(cmx_random_multivariate_normal(&x, mean, c222, (int64_t[]){3}, 1,
                                       CMX_FLOAT32, k, S),
        CMX_ERR_VALUE, "[multivariate_normal] shapes (2) and (3) cannot");
  FAILS(cmx_random_multivariate_normal(&x, m3, cov, NULL, 0, CMX_FLOAT32, k, S),
        CMX_ERR_VALUE, "[multivariate_normal] mean and cov must have");
  FAILS(
      cmx_random_multivariate_normal(&x, mean, c23, NULL, 0, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE, "[multivariate_normal] last two dimensions of cov");
  FAILS(cmx_random_multivariate_normal(&x, mean, mean, NULL, 0, CMX_FLOAT32, k,
                                       S),
        CMX_ERR_VALUE, "[multivariate_normal] cov must have at least two");
  cmx_array s0a = scal(0, CMX_FLOAT32);
  FAILS(
      cmx_random_multivariate_normal(&x, s0a, cov, NULL, 0, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE, "[multivariate_normal] mean must have at least one");
  cmx_array arr[] = {m22, c222, m3, c23, s0a, meanb, cov3, mean3, cov, mean, k};
  cmx_array_release_all(arr, sizeof arr / sizeof arr[0]);
}

/* ---------------- categorical ---------------- */
/* Index of the first maximum of g[i] + l[i] (float sums) over n values
 * with strides gs and ls. */
static uint32_t ref_argmax(const float* g, int64_t gst, const float* l,
                           int64_t lst, int64_t n) {
  uint32_t best = 0;
  float bv = g[0] + l[0];
  for (int64_t i = 1; i < n; i++) {
    float v = g[i * gst] + l[i * lst];
    if (v > bv) {
      bv = v;
      best = (uint32_t)i;
    }
  }
  return best;
}

static void test_categorical(void) {
  float lg[20];
  for (int i = 0; i < 20; i++) lg[i] = (float)((i * 7) % 5) * 0.5f - 1.0f;
  cmx_array logits = NULL, k = mk_key(12, 34), c = NULL, g = NULL;
  OK(cmx_array_from_data(&logits, lg, (int64_t[]){4, 5}, 2, CMX_FLOAT32));
  /* axis -1: Gumbel noise of shape (4, 5) from the same key. */
  OK(cmx_random_gumbel(&g, (int64_t[]){4, 5}, 2, CMX_FLOAT32, k, S));
  float* gv = fetch(g);
  OK(cmx_random_categorical(&c, logits, -1, NULL, 0, k, S));
  CHECK(cmx_array_dtype(c) == CMX_UINT32 && cmx_array_ndim(c) == 1 &&
        cmx_array_dim(c, 0) == 4);
  uint32_t* cv = fetch(c);
  bool ok = true;
  for (int i = 0; i < 4; i++)
    ok = ok && cv[i] == ref_argmax(gv + 5 * i, 1, lg + 5 * i, 1, 5);
  CHECK(ok);
  free(cv);
  cmx_array_release(c);
  /* axis 0: the same noise shape, reduced over rows. */
  OK(cmx_random_categorical(&c, logits, 0, NULL, 0, k, S));
  CHECK(cmx_array_ndim(c) == 1 && cmx_array_dim(c, 0) == 5);
  cv = fetch(c);
  ok = true;
  for (int j = 0; j < 5; j++)
    ok = ok && cv[j] == ref_argmax(gv + j, 5, lg + j, 5, 4);
  CHECK(ok);
  free(cv);
  free(gv);
  cmx_array_release(c);
  cmx_array_release(g);
  /* num_samples: (4, 5) axis 1, 7 samples -> (4, 7); noise (4, 5, 7). */
  OK(cmx_random_categorical_n(&c, logits, 1, 7, k, S));
  CHECK(cmx_array_ndim(c) == 2 && cmx_array_dim(c, 0) == 4 &&
        cmx_array_dim(c, 1) == 7);
  OK(cmx_random_gumbel(&g, (int64_t[]){4, 5, 7}, 3, CMX_FLOAT32, k, S));
  gv = fetch(g);
  cv = fetch(c);
  ok = true;
  for (int i = 0; i < 4; i++)
    for (int t = 0; t < 7; t++)
      ok = ok &&
           cv[i * 7 + t] == ref_argmax(gv + i * 35 + t, 7, lg + 5 * i, 1, 5);
  CHECK(ok);
  free(cv);
  free(gv);
  cmx_array_release(c);
  cmx_array_release(g);
  OK(cmx_random_categorical_n(&c, logits, 0, 3, k, S));
  CHECK(cmx_array_ndim(c) == 2 && cmx_array_dim(c, 0) == 5 &&
        cmx_array_dim(c, 1) == 3);
  cmx_array_release(c);
  /* A requested shape: (6, 4) from logits (4, 5) along axis 1. */
  OK(cmx_random_categorical(&c, logits, 1, (int64_t[]){6, 4}, 2, k, S));
  CHECK(cmx_array_ndim(c) == 2 && cmx_array_dim(c, 0) == 6 &&
        cmx_array_dim(c, 1) == 4);
  OK(cmx_random_gumbel(&g, (int64_t[]){6, 4, 5}, 3, CMX_FLOAT32, k, S));
  gv = fetch(g);
  cv = fetch(c);
  ok = true;
  for (int r = 0; r < 6; r++)
    for (int i = 0; i < 4; i++)
      ok = ok && cv[r * 4 + i] ==
                     ref_argmax(gv + r * 20 + i * 5, 1, lg + 5 * i, 1, 5);
  CHECK(ok);
  free(cv);
  free(gv);
  cmx_array_release(c);
  cmx_array_release(g);

  /* Frequencies against softmax(logits) over 1M draws (5 sigma). */
  float l4[4] = {0, 1, 2, -1};
  cmx_array l = NULL;
  OK(cmx_array_from_data(&l, l4, (int64_t[]){4}, 1, CMX_FLOAT32));
  int64_t n = NSTAT;
  OK(cmx_random_categorical(&c, l, 0, &n, 1, k, S));
  cv = fetch(c);
  int64_t cnt[4] = {0};
  ok = true;
  for (int64_t i = 0; i < n; i++) {
    ok = ok && cv[i] < 4;
    if (cv[i] < 4) cnt[cv[i]]++;
  }
  double z = 0;
  for (int j = 0; j < 4; j++) z += exp(l4[j]);
  for (int j = 0; j < 4; j++) {
    double pj = exp(l4[j]) / z, sd = sqrt(pj * (1 - pj) / (double)n);
    ok = ok && fabs(cnt[j] / (double)n - pj) < 5 * sd;
  }
  CHECK_MSG(ok, "categorical counts %lld %lld %lld %lld", (long long)cnt[0],
            (long long)cnt[1], (long long)cnt[2], (long long)cnt[3]);
  free(cv);
  cmx_array_release(c);
  /* float16 and float64 logits are accepted. */
  cmx_array l16 = NULL;
  OK(cmx_astype(&l16, logits, CMX_FLOAT16, S));
  OK(cmx_random_categorical(&c, l16, -1, NULL, 0, k, S));
  CHECK(cmx_array_dtype(c) == CMX_UINT32);
  OK(cmx_array_eval(c));
  cmx_array_release(c);

  /* Errors (MLX's cases). */
  cmx_array z1020 = NULL;
  OK(cmx_zeros(&z1020, (int64_t[]){10, 20}, 2, CMX_FLOAT32, S));
  FAILS(cmx_random_categorical(&c, z1020, 2, NULL, 0, k, S), CMX_ERR_INDEX,
        "[categorical] Invalid axis 2 for logits with 2 dimensions.");
  FAILS(cmx_random_categorical(&c, z1020, -3, NULL, 0, k, S), CMX_ERR_INDEX,
        "[categorical] Invalid axis -3 for logits with 2 dimensions.");
  FAILS(cmx_random_categorical_n(&c, z1020, 5, 2, k, S), CMX_ERR_INDEX,
        "[categorical] Invalid axis 5");
  FAILS(cmx_random_categorical(&c, z1020, 1, (int64_t[]){1}, 1, k, S),
        CMX_ERR_VALUE,
        "[categorical] Requested shape (1) is not broadcast compatible with "
        "reduced logits shape (10).");
  FAILS(cmx_random_categorical(&c, z1020, 1, (int64_t[]){11}, 1, k, S),
        CMX_ERR_VALUE, "[categorical] Requested shape (11)");
  FAILS(cmx_random_categorical_n(&c, z1020, 1, -1, k, S), CMX_ERR_VALUE,
        "[categorical] num_samples must be non-negative");
  OK(cmx_random_categorical(&c, z1020, 0, (int64_t[]){5, 20}, 2, k, S));
  uint32_t* mx = fetch(c);
  ok = true;
  for (int i = 0; i < 100; i++) ok = ok && mx[i] < 10;
  CHECK(ok);
  free(mx);
  cmx_array_release(c);
  cmx_array arr[] = {logits, k, l, l16, z1020};
  cmx_array_release_all(arr, sizeof arr / sizeof arr[0]);
}

/* ---------------- permutation ---------------- */
typedef struct {
  uint32_t v;
  uint32_t i;
} vi_pair;
static int cmp_vi(const void* a, const void* b) {
  const vi_pair *x = a, *y = b;
  if (x->v != y->v) return x->v < y->v ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i; /* stable */
}

/* The stable argsort of key's n words. */
static uint32_t* ref_perm(const uint32_t key[2], int64_t n) {
  uint32_t* w = key_words(key, n);
  vi_pair* p = malloc((size_t)(n ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (vi_pair){w[i], (uint32_t)i};
  qsort(p, (size_t)n, sizeof *p, cmp_vi);
  for (int64_t i = 0; i < n; i++) w[i] = p[i].i;
  free(p);
  return w;
}

static void test_permutation(void) {
  uint32_t key[2] = {6, 28};
  cmx_array k = mk_key(key[0], key[1]), o = NULL;
  static const int64_t sizes[] = {0, 1, 2, 5, 100, 16384, 100001};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    OK(cmx_random_permutation_n(&o, n, k, S));
    CHECK(cmx_array_dtype(o) == CMX_UINT32 && cmx_array_ndim(o) == 1 &&
          cmx_array_dim(o, 0) == n);
    uint32_t* g = fetch(o);
    uint32_t* want = ref_perm(key, n);
    char* seen = calloc(n > 0 ? (size_t)n : 1, 1);
    bool perm = true, ident = true;
    for (int64_t i = 0; i < n; i++) {
      perm = perm && g[i] < n && !seen[g[i]];
      if (g[i] < n) seen[g[i]] = 1;
      ident = ident && g[i] == i;
    }
    CHECK_MSG(perm, "permutation(%lld) is a permutation", (long long)n);
    CHECK_MSG(n == 0 || memcmp(g, want, (size_t)n * 4) == 0,
              "permutation(%lld) = stable argsort of bits", (long long)n);
    if (n >= 100) CHECK(!ident);
    free(seen);
    free(want);
    free(g);
    cmx_array_release(o);
  }
  /* Arrays: rows (axis 0) or columns (axis 1) shuffled by the permutation
   * of the same key. */
  float xv[20];
  for (int i = 0; i < 20; i++) xv[i] = (float)i * 1.5f;
  cmx_array x = NULL;
  OK(cmx_array_from_data(&x, xv, (int64_t[]){4, 5}, 2, CMX_FLOAT32));
  for (int axis = -2; axis < 2; axis++) {
    int ax = axis < 0 ? axis + 2 : axis;
    OK(cmx_random_permutation(&o, x, axis, k, S));
    CHECK(cmx_array_dtype(o) == CMX_FLOAT32 && cmx_array_ndim(o) == 2 &&
          cmx_array_dim(o, 0) == 4 && cmx_array_dim(o, 1) == 5);
    float* g = fetch(o);
    uint32_t* p = ref_perm(key, ax == 0 ? 4 : 5);
    bool ok = true;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 5; j++)
        ok = ok &&
             g[i * 5 + j] == (ax == 0 ? xv[p[i] * 5 + j] : xv[i * 5 + p[j]]);
    CHECK_MSG(ok, "permutation axis %d", axis);
    free(p);
    free(g);
    cmx_array_release(o);
  }
  /* Shape and dtype kept. */
  cmx_array x11 = NULL;
  int64_t one = 7;
  OK(cmx_array_from_data(&x11, &one, (int64_t[]){1, 1}, 2, CMX_INT64));
  OK(cmx_random_permutation(&o, x11, 0, k, S));
  int64_t* g1 = fetch(o);
  CHECK(cmx_array_ndim(o) == 2 && cmx_array_dtype(o) == CMX_INT64 &&
        g1[0] == 7);
  free(g1);
  cmx_array_release(o);
  /* The global key: two draws differ. */
  cmx_array a = NULL, b = NULL;
  OK(cmx_random_permutation_n(&a, 100, NULL, S));
  OK(cmx_random_permutation_n(&b, 100, NULL, S));
  uint32_t* pa = fetch(a);
  uint32_t* pb = fetch(b);
  CHECK(memcmp(pa, pb, 400) != 0);
  free(pa);
  free(pb);
  cmx_array_release(a);
  cmx_array_release(b);
  /* Errors. */
  cmx_array s0 = scal(1, CMX_FLOAT32);
  FAILS(cmx_random_permutation(&o, s0, 0, k, S), CMX_ERR_INDEX,
        "[permutation] axis 0 is out of bounds for array of dimension 0");
  FAILS(cmx_random_permutation(&o, x, 2, k, S), CMX_ERR_INDEX,
        "[permutation] axis 2 is out of bounds for array of dimension 2");
  FAILS(cmx_random_permutation_n(&o, -1, k, S), CMX_ERR_VALUE,
        "[permutation] Cannot permute -1 elements.");
  cmx_array arr[] = {k, x, x11, s0};
  cmx_array_release_all(arr, sizeof arr / sizeof arr[0]);
}

/* ---------------- errors ---------------- */
static void test_errors(void) {
  cmx_array o = NULL, k = mk_key(0, 0);
  int32_t iv[2] = {0, 0};
  uint32_t uv[4] = {0, 0, 0, 0};
  cmx_array kint = NULL, k12 = NULL, k3 = NULL;
  OK(cmx_array_from_data(&kint, iv, (int64_t[]){2}, 1, CMX_INT32));
  OK(cmx_array_from_data(&k12, uv, (int64_t[]){1, 2}, 2, CMX_UINT32));
  OK(cmx_array_from_data(&k3, uv, (int64_t[]){3}, 1, CMX_UINT32));
  FAILS(cmx_random_uniform(&o, NULL, NULL, NULL, 0, CMX_FLOAT32, kint, S),
        CMX_ERR_TYPE, "[uniform] Expected key type uint32 but received int32.");
  CHECK(o == NULL);
  FAILS(cmx_random_normal(&o, NULL, 0, CMX_FLOAT32, NULL, NULL, k12, S),
        CMX_ERR_VALUE, "[normal] Expected key shape (2) but received (1,2).");
  FAILS(cmx_random_bits(&o, NULL, 0, 4, k3, S), CMX_ERR_VALUE,
        "[bits] Expected key shape (2) but received (3).");
  FAILS(cmx_random_split(&o, kint, 2, S), CMX_ERR_TYPE,
        "[split] Expected key type uint32");
  FAILS(cmx_random_randint(&o, k, k, NULL, 0, CMX_INT32, k12, S), CMX_ERR_VALUE,
        "[randint] Expected key shape (2)");
  FAILS(cmx_random_bernoulli(&o, NULL, NULL, 0, kint, S), CMX_ERR_TYPE,
        "[bernoulli] Expected key type uint32");
  FAILS(cmx_random_set_state(k12), CMX_ERR_VALUE,
        "[set_state] Expected key shape (2)");
  static const int bad_w[] = {0, 3, 5, -1, 8};
  for (int i = 0; i < 5; i++) {
    char want[64];
    snprintf(want, sizeof want,
             "[bits] Bit width must be in {1, 2, 4} but got %d.", bad_w[i]);
    FAILS(cmx_random_bits(&o, NULL, 0, bad_w[i], k, S), CMX_ERR_VALUE, want);
  }
  FAILS(cmx_random_split(&o, k, -1, S), CMX_ERR_VALUE,
        "[split] Number of keys");
  FAILS(cmx_random_bits(&o, (int64_t[]){2, -1}, 2, 4, k, S), CMX_ERR_VALUE,
        "[bits] Negative dimensions not allowed.");
  FAILS(
      cmx_random_uniform(&o, NULL, NULL, (int64_t[]){-3}, 1, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE, "[uniform] Negative dimensions not allowed.");
  /* dtypes. */
  FAILS(cmx_random_uniform(&o, NULL, NULL, NULL, 0, CMX_INT32, k, S),
        CMX_ERR_TYPE,
        "[uniform] Can only generate uniform numbers with real floating point "
        "type.");
  FAILS(cmx_random_uniform(&o, NULL, NULL, NULL, 0, CMX_COMPLEX64, k, S),
        CMX_ERR_TYPE, "[uniform] Can only generate uniform numbers");
  FAILS(cmx_random_normal(&o, NULL, 0, CMX_INT8, NULL, NULL, k, S),
        CMX_ERR_TYPE, "[normal] Can only generate random numbers");
  FAILS(cmx_random_gumbel(&o, NULL, 0, CMX_UINT8, k, S), CMX_ERR_TYPE,
        "[gumbel] Can only generate");
  FAILS(cmx_random_laplace(&o, NULL, 0, CMX_BOOL, 0, 1, k, S), CMX_ERR_TYPE,
        "[laplace] Can only generate");
  cmx_array lo = scal(3, CMX_INT32), hi = scal(5, CMX_INT32);
  FAILS(cmx_random_randint(&o, lo, hi, NULL, 0, CMX_FLOAT32, k, S),
        CMX_ERR_TYPE,
        "[randint] randint only accepts integer dtypes and bool.");
  FAILS(cmx_random_truncated_normal(&o, lo, hi, NULL, 0, CMX_INT32, k, S),
        CMX_ERR_TYPE,
        "[truncated_normal] truncated_normal only accepts floating point "
        "dtypes.");
  cmx_array pi = scal(0, CMX_INT32);
  FAILS(cmx_random_bernoulli(&o, pi, (int64_t[]){2}, 1, k, S), CMX_ERR_TYPE,
        "[bernoulli] bernoulli probability `p` must be a float type.");
  /* shapes. */
  cmx_array z33 = NULL, z31 = NULL, o13 = NULL, one = scal(1, CMX_FLOAT32);
  OK(cmx_zeros(&z33, (int64_t[]){3, 3}, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&z31, (int64_t[]){3, 1}, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&o13, (int64_t[]){1, 3}, 2, CMX_FLOAT32, S));
  FAILS(
      cmx_random_uniform(&o, z33, one, (int64_t[]){1, 3}, 2, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE,
      "[uniform] Cannot generate random values of shape (1,3) from "
      "broadcasted shape (3,3).");
  FAILS(
      cmx_random_uniform(&o, z33, one, (int64_t[]){2, 3}, 2, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE, "[uniform] shapes (2,3) and (3,3) cannot be broadcast.");
  FAILS(
      cmx_random_uniform(&o, z31, o13, (int64_t[]){1, 3}, 2, CMX_FLOAT32, k, S),
      CMX_ERR_VALUE, "[uniform] Cannot generate random values of shape (1,3)");
  OK(cmx_random_uniform(&o, z31, o13, (int64_t[]){3, 3}, 2, CMX_FLOAT32, k, S));
  cmx_array_release(o);
  FAILS(cmx_random_randint(&o, z31, o13, (int64_t[]){3}, 1, CMX_INT32, k, S),
        CMX_ERR_VALUE,
        "[randint] Cannot generate random values of shape (3) from "
        "broadcasted shape (3,3).");
  FAILS(cmx_random_randint(&o, z31, o13, (int64_t[]){2, 3}, 2, CMX_INT32, k, S),
        CMX_ERR_VALUE, "[randint] shapes (2,3) and (3,3) cannot be broadcast.");
  cmx_array p3 = NULL;
  OK(cmx_zeros(&p3, (int64_t[]){3}, 1, CMX_FLOAT32, S));
  FAILS(cmx_random_bernoulli(&o, p3, (int64_t[]){2}, 1, k, S), CMX_ERR_VALUE,
        "[bernoulli] shape of `p` is incompatible with argument `shape`.");
  FAILS(cmx_random_bernoulli(&o, p3, (int64_t[]){}, 0, k, S), CMX_ERR_VALUE,
        "[bernoulli] shape of `p` is incompatible");
  OK(cmx_random_bernoulli(&o, p3, (int64_t[]){4, 3}, 2, k, S));
  CHECK(cmx_array_ndim(o) == 2);
  cmx_array_release(o);
  cmx_array l2 = NULL, h3 = NULL;
  OK(cmx_zeros(&l2, (int64_t[]){2}, 1, CMX_FLOAT32, S));
  OK(cmx_ones(&h3, (int64_t[]){3}, 1, CMX_FLOAT32, S));
  FAILS(cmx_random_truncated_normal(&o, l2, h3, NULL, 0, CMX_FLOAT32, k, S),
        CMX_ERR_VALUE, "[truncated_normal] shapes (2) and (3) cannot");
  FAILS(cmx_random_truncated_normal(&o, z31, o13, (int64_t[]){4, 2}, 2,
                                    CMX_FLOAT32, k, S),
        CMX_ERR_VALUE, "[truncated_normal] shapes (4,2) and (3,3)");
  /* truncated_normal with upper < lower gives lower; empty bounds give an
   * empty result. */
  cmx_array two = scal(2, CMX_FLOAT32), m2 = scal(-2, CMX_FLOAT32);
  OK(cmx_random_truncated_normal(&o, two, m2, (int64_t[]){50}, 1, CMX_FLOAT32,
                                 k, S));
  double* x = values(o);
  bool all2 = true;
  for (int i = 0; i < 50; i++) all2 = all2 && x[i] == 2;
  CHECK(all2);
  free(x);
  cmx_array_release(o);
  cmx_array e0 = NULL;
  OK(cmx_zeros(&e0, (int64_t[]){0}, 1, CMX_FLOAT32, S));
  OK(cmx_random_truncated_normal(&o, e0, e0, NULL, 0, CMX_DTYPE_AUTO, k, S));
  CHECK(cmx_array_size(o) == 0 && cmx_array_dtype(o) == CMX_FLOAT32);
  OK(cmx_array_eval(o));
  cmx_array_release(o);
  /* NULL required arguments and output pointer. */
  FAILS(cmx_random_randint(&o, NULL, hi, NULL, 0, CMX_INT32, k, S),
        CMX_ERR_VALUE, "[randint] argument 1 is a null array");
  FAILS(cmx_random_key(NULL, 0), CMX_ERR_VALUE, "[key] output pointer is NULL");
  cmx_array arr[] = {k,   kint, k12, k3, lo, hi,  pi, z33, z31,
                     o13, one,  p3,  l2, h3, two, m2, e0};
  cmx_array_release_all(arr, sizeof arr / sizeof arr[0]);
}

int main(void) {
  RUN(test_uniform_exact);
  RUN(test_normal_exact);
  RUN(test_bernoulli_exact);
  RUN(test_randint_exact);
  RUN(test_distributions);
  RUN(test_dtypes);
  RUN(test_determinism);
  RUN(test_multivariate_normal);
  RUN(test_categorical);
  RUN(test_permutation);
  RUN(test_errors);
  return test_summary("test_random_samplers");
}
