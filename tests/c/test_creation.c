/* Creation ops: arange, linspace, full, zeros, ones, *_like, eye, identity,
 * tri, tril, triu, the window functions and meshgrid. Values against plain
 * double-precision formulas (MLX's size and integer rules for arange), dtype
 * defaults and weak-scalar rules, layouts of tril/triu inputs, and error
 * messages. */
#include <float.h>

#include "shape_util.h"

/* ---------------- arange / linspace ---------------- */

static void check_arange(double start, double stop, double step, cmx_dtype dt) {
  cmx_dtype odt = dt == CMX_DTYPE_AUTO ? CMX_FLOAT32 : dt;
  double real = ceil((stop - start) / step);
  int64_t n = isinf(step) ? ((step > 0) == (start < stop) && start != stop)
              : real > 0  ? (int64_t)real
                          : 0;
  h_tensor want = h_alloc(&n, 1, odt);
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (cmx_dtype_is_integer(
            odt)) { /* MLX: T(start) + i*(T(start+step)-T(start)) */
      int64_t t0 = (int64_t)start, t1 = (int64_t)(start + step);
      v = (double)(t0 + i * (t1 - t0));
    } else {
      v = start + (double)i * (isinf(step) ? 0 : step);
    }
    want.re[i] = h_round_to(v, odt);
  }
  cmx_array r = NULL;
  char what[256];
  snprintf(what, sizeof what, "arange(%g, %g, %g, %s)", start, stop, step,
           cmx_dtype_name(odt));
  OK(cmx_arange(&r, start, stop, step, dt, S));
  su_check(r, &want, what);
  cmx_array_release(r);
  h_free(&want);
}

static void test_arange(void) {
  static const cmx_dtype dts[] = {
      CMX_DTYPE_AUTO, CMX_UINT8,   CMX_UINT16,  CMX_UINT32,   CMX_UINT64,
      CMX_INT8,       CMX_INT16,   CMX_INT32,   CMX_INT64,    CMX_FLOAT16,
      CMX_BFLOAT16,   CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
  static const double cases[][3] = {
      {0, 10, 1},        {0, 10, 3},         {10, 0, -3},
      {-3, 3, 0.5},      {5, 5, 1},          {0, 1, -1},
      {0, 100, 7},       {1, 2, 0.1},        {-50, 50, 25},
      {0, 70001, 1},     {0.5, 5, 1.5},      {3, -7, -2.5},
      {0, 10, INFINITY}, {0, -10, INFINITY}, {0, -10, -INFINITY},
      {2, 2, INFINITY}};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      /* Negative values in unsigned dtypes wrap; keep those cases to
       * the signed and floating dtypes. */
      bool neg = cases[c][0] < 0 || cases[c][1] < 0;
      if (neg && cmx_dtype_is_integer(dts[d]) && !cmx_dtype_is_signed(dts[d]))
        continue;
      if (dts[d] == CMX_INT8 && cases[c][1] > 127) continue;
      if (dts[d] == CMX_UINT8 && cases[c][1] > 255) continue;
      check_arange(cases[c][0], cases[c][1], cases[c][2], dts[d]);
    }
  /* The MLX integer rule differs from start + i*step: 0, 2, 4. */
  cmx_array r, e;
  OK(cmx_arange(&r, 0.5, 5, 1.5, CMX_INT32, S));
  int32_t g[3];
  CHECK(cmx_array_size(r) == 3);
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(g[0] == 0 && g[1] == 2 && g[2] == 4);
  cmx_array_release(r);
  /* Large int64 values are exact. */
  OK(cmx_arange(&r, -4e15, 4e15, 1e15, CMX_INT64, S));
  int64_t g64[8];
  OK(cmx_array_copy_to(r, g64, sizeof g64));
  bool ok = cmx_array_size(r) == 8;
  for (int i = 0; i < 8 && ok; i++)
    ok = g64[i] == -4000000000000000LL + i * 1000000000000000LL;
  CHECK(ok);
  cmx_array_release(r);
  FAILS(cmx_arange(&e, 0, 10, 1, CMX_BOOL, S), CMX_ERR_VALUE,
        "[arange] bool not supported for arange.");
  FAILS(cmx_arange(&e, NAN, 10, 1, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[arange] Cannot compute length.");
  FAILS(cmx_arange(&e, 0, INFINITY, 1, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[arange] Cannot compute length.");
  FAILS(cmx_arange(&e, 0, 10, 0, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[arange] Cannot compute length with a step of 0.");
  FAILS(cmx_arange(&e, 0, 3e9, 1, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[arange] Maximum size exceeded.");
  FAILS(cmx_arange(&e, 0, 3, 1, (cmx_dtype)77, S), CMX_ERR_TYPE,
        "[arange] invalid dtype");
  CHECK(e == NULL);
}

static void test_linspace(void) {
  static const cmx_dtype dts[] = {CMX_DTYPE_AUTO, CMX_FLOAT16, CMX_BFLOAT16,
                                  CMX_FLOAT64,    CMX_INT32,   CMX_UINT8,
                                  CMX_COMPLEX64,  CMX_BOOL};
  static const double cases[][3] = {{0, 1, 5},   {1, 0, 4},    {2, 3, 1},
                                    {0, 10, 4},  {5, 7, 0},    {0, 1, 50},
                                    {0, 200, 2}, {-1, 1, 101}, {0, 255, 70001}};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      cmx_dtype odt = dts[d] == CMX_DTYPE_AUTO ? CMX_FLOAT32 : dts[d];
      double a = cases[c][0], b = cases[c][1];
      if (cases[c][0] < 0 && odt == CMX_UINT8) continue;
      int64_t n = (int64_t)cases[c][2];
      h_tensor want = h_alloc(&n, 1, odt);
      for (int64_t i = 0; i < n; i++) {
        double t = n > 1 ? (double)i / (double)(n - 1) : 0;
        double v = i == n - 1 && n > 1 ? b : a + t * (b - a);
        want.re[i] = h_round_to(v, odt);
      }
      cmx_array r = NULL;
      char what[256];
      snprintf(what, sizeof what, "linspace(%g, %g, %lld, %s)", a, b,
               (long long)n, cmx_dtype_name(odt));
      OK(cmx_linspace(&r, a, b, n, dts[d], S));
      /* float32 rounding of a + i*step may differ from a + t*(b-a) by one
       * unit: compare with the dtype's tolerance. */
      h_tensor got = h_read(r);
      bool ok = h_close(&got, &want, cmx_dtype_is_integer(odt) ? 0 : h_tol(odt),
                        1e-6, what);
      /* Integer outputs: truncation may differ by one where i*step is a
       * hair below an integer; the exact ends must match. */
      if (!ok && cmx_dtype_is_integer(odt)) {
        ok = got.size == n;
        for (int64_t i = 0; i < n && ok; i++)
          ok = fabs(got.re[i] - want.re[i]) <= 1 &&
               (i != 0 || got.re[0] == want.re[0]) &&
               (i != n - 1 || got.re[i] == want.re[i]);
      }
      if (n > 0 && got.size == n)
        ok &= got.re[0] == h_round_to(a, odt) &&
              got.re[n - 1] == h_round_to(n > 1 ? b : a, odt);
      CHECK_MSG(ok, "%s", what);
      h_free(&got);
      h_free(&want);
      cmx_array_release(r);
    }
  cmx_array e;
  FAILS(cmx_linspace(&e, 0, 1, -1, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[linspace] number of samples, -1, must be non-negative.");
}

/* ---------------- full / zeros / ones / *_like ---------------- */

static void check_filled(cmx_array r, const int64_t* shape, int nd,
                         cmx_dtype dt, double re, double im, const char* what) {
  h_tensor want = h_alloc(shape, nd, dt);
  for (int64_t i = 0; i < want.size; i++) {
    want.re[i] = h_round_to(re, dt);
    if (want.im) want.im[i] = h_round_to(im, dt);
  }
  su_check(r, &want, what);
  if (r && cmx_array_eval(r) == CMX_OK)
    CHECK_MSG(cmx_array_is_row_contiguous(r), "%s: not materialised", what);
  h_free(&want);
}

static void test_full(void) {
  int64_t shapes[][3] = {{0}, {5}, {2, 3}, {0, 4}, {70001}, {2, 1, 3}};
  int nds[] = {0, 1, 2, 2, 1, 3};
  for (int si = 0; si < 6; si++)
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
      cmx_array z, o, f, v, zl, ol, fl;
      char what[128];
      snprintf(what, sizeof what, "zeros/ones/full %s shape %d",
               cmx_dtype_name((cmx_dtype)dt), si);
      OK(cmx_zeros(&z, shapes[si], nds[si], (cmx_dtype)dt, S));
      check_filled(z, shapes[si], nds[si], (cmx_dtype)dt, 0, 0, what);
      OK(cmx_ones(&o, shapes[si], nds[si], (cmx_dtype)dt, S));
      check_filled(o, shapes[si], nds[si], (cmx_dtype)dt, 1, 0, what);
      OK(cmx_array_from_double(&v, 3.0, (cmx_dtype)dt));
      OK(cmx_full(&f, shapes[si], nds[si], v, CMX_DTYPE_AUTO, S));
      check_filled(f, shapes[si], nds[si], (cmx_dtype)dt, 3, 0, what);
      OK(cmx_zeros_like(&zl, o, S));
      check_filled(zl, shapes[si], nds[si], (cmx_dtype)dt, 0, 0, what);
      OK(cmx_ones_like(&ol, z, S));
      check_filled(ol, shapes[si], nds[si], (cmx_dtype)dt, 1, 0, what);
      OK(cmx_full_like(&fl, z, v, CMX_DTYPE_AUTO, S));
      check_filled(fl, shapes[si], nds[si], (cmx_dtype)dt, 3, 0, what);
      cmx_array_release_all((cmx_array[]){z, o, f, v, zl, ol, fl}, 7);
    }
  /* Default dtypes: zeros/ones float32; full keeps vals' dtype, a weak
   * scalar its default (bool, int32, float32, complex64). */
  int64_t sh[2] = {2, 3};
  cmx_array r, w, e;
  OK(cmx_zeros(&r, sh, 2, CMX_DTYPE_AUTO, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32);
  cmx_array_release(r);
  OK(cmx_ones(&r, sh, 2, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_FLOAT32, 1, 0, "ones auto");
  cmx_array_release(r);
  OK(cmx_array_weak_float(&w, 2.5));
  OK(cmx_full(&r, sh, 2, w, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_FLOAT32, 2.5, 0, "full weak float");
  cmx_array_release(r);
  OK(cmx_full(&r, sh, 2, w, CMX_FLOAT16, S));
  check_filled(r, sh, 2, CMX_FLOAT16, 2.5, 0, "full weak float as f16");
  cmx_array_release(r);
  OK(cmx_full(&r, sh, 2, w, CMX_INT8, S));
  check_filled(r, sh, 2, CMX_INT8, 2, 0, "full weak float as int8");
  cmx_array_release(r);
  cmx_array_release(w);
  OK(cmx_array_weak_int(&w, -4));
  OK(cmx_full(&r, sh, 2, w, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_INT32, -4, 0, "full weak int");
  cmx_array_release(r);
  cmx_array_release(w);
  OK(cmx_array_weak_bool(&w, true));
  OK(cmx_full(&r, sh, 2, w, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_BOOL, 1, 0, "full weak bool");
  cmx_array_release(r);
  cmx_array_release(w);
  OK(cmx_array_weak_complex(&w, 1.5, -2));
  OK(cmx_full(&r, sh, 2, w, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_COMPLEX64, 1.5, -2, "full weak complex");
  cmx_array_release(r);
  cmx_array_release(w);
  /* full_like keeps a's dtype for a weak value. */
  cmx_array a8;
  OK(cmx_zeros(&a8, sh, 2, CMX_INT8, S));
  OK(cmx_array_weak_float(&w, 3.7));
  OK(cmx_full_like(&r, a8, w, CMX_DTYPE_AUTO, S));
  check_filled(r, sh, 2, CMX_INT8, 3, 0, "full_like int8 weak float");
  cmx_array_release(r);
  OK(cmx_full_like(&r, a8, w, CMX_FLOAT64, S));
  check_filled(r, sh, 2, CMX_FLOAT64, 3.7, 0, "full_like as float64");
  cmx_array_release(r);
  /* Array values broadcast along the leading axis, and are copied. */
  int16_t v3[3] = {7, -8, 9};
  int64_t three = 3;
  cmx_array row;
  OK(cmx_array_from_data(&row, v3, &three, 1, CMX_INT16));
  OK(cmx_full(&r, sh, 2, row, CMX_DTYPE_AUTO, S));
  int16_t got[6];
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(cmx_array_dtype(r) == CMX_INT16 && got[0] == 7 && got[4] == -8 &&
        got[5] == 9);
  CHECK(!su_shares(r, row));
  cmx_array_release(r);
  FAILS(cmx_full(&e, (int64_t[]){2, 4}, 2, row, CMX_DTYPE_AUTO, S),
        CMX_ERR_VALUE, "Cannot broadcast array of shape (3) into shape (2,4)");
  FAILS(cmx_full(&e, (int64_t[]){2, -1}, 2, w, CMX_DTYPE_AUTO, S),
        CMX_ERR_VALUE, "[full] Negative dimensions not allowed.");
  FAILS(cmx_zeros(&e, (int64_t[]){-3}, 1, CMX_FLOAT32, S), CMX_ERR_VALUE,
        "[zeros] Negative dimensions not allowed.");
  FAILS(cmx_full(&e, sh, 2, NULL, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "null array");
  FAILS(cmx_ones(&e, sh, 2, (cmx_dtype)40, S), CMX_ERR_TYPE,
        "[ones] invalid dtype");
  cmx_array_release_all((cmx_array[]){a8, w, row}, 3);
}

/* ---------------- eye / tri / tril / triu ---------------- */

static void test_eye_tri(void) {
  static const cmx_dtype dts[] = {CMX_BOOL,    CMX_UINT8,   CMX_INT16,
                                  CMX_INT64,   CMX_FLOAT16, CMX_BFLOAT16,
                                  CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
  int64_t nm[][2] = {{1, 1},  {3, 3}, {3, 5}, {5, 3},
                     {4, -1}, {0, 3}, {2, 0}, {40, 70}};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t c = 0; c < sizeof nm / sizeof nm[0]; c++)
      for (int64_t k = -6; k <= 6; k++) {
        int64_t n = nm[c][0], m = nm[c][1] < 0 ? n : nm[c][1];
        int64_t shape[2] = {n, m};
        h_tensor we = h_alloc(shape, 2, dts[d]), wt = h_alloc(shape, 2, dts[d]);
        for (int64_t i = 0; i < n; i++)
          for (int64_t j = 0; j < m; j++) {
            we.re[i * m + j] = j - i == k;
            wt.re[i * m + j] = j - i <= k;
          }
        char what[128];
        snprintf(what, sizeof what, "eye/tri %s %lldx%lld k=%lld",
                 cmx_dtype_name(dts[d]), (long long)n, (long long)m,
                 (long long)k);
        cmx_array r = NULL;
        if (n > 0 && m > 0) {
          OK(cmx_eye(&r, n, nm[c][1], k, dts[d], S));
          su_check(r, &we, what);
          cmx_array_release(r);
        }
        OK(cmx_tri(&r, n, nm[c][1], k, dts[d], S));
        su_check(r, &wt, what);
        cmx_array_release(r);
        h_free(&we);
        h_free(&wt);
      }
  cmx_array r, e;
  OK(cmx_identity(&r, 4, CMX_DTYPE_AUTO, S));
  float id[16];
  OK(cmx_array_copy_to(r, id, sizeof id));
  bool ok = cmx_array_dtype(r) == CMX_FLOAT32;
  for (int i = 0; i < 16; i++) ok &= id[i] == (i % 5 == 0);
  CHECK(ok);
  cmx_array_release(r);
  /* Far-away diagonals (no overflow). */
  OK(cmx_tri(&r, 3, 3, INT64_MAX, CMX_INT32, S));
  int32_t t[9];
  OK(cmx_array_copy_to(r, t, sizeof t));
  CHECK(t[0] == 1 && t[2] == 1 && t[8] == 1);
  cmx_array_release(r);
  OK(cmx_eye(&r, 3, 3, INT64_MIN, CMX_INT32, S));
  OK(cmx_array_copy_to(r, t, sizeof t));
  ok = true;
  for (int i = 0; i < 9; i++) ok &= t[i] == 0;
  CHECK(ok);
  cmx_array_release(r);
  OK(cmx_eye(&r, 0, 3, 0, CMX_DTYPE_AUTO, S)); /* MLX: an empty (0, 3) */
  CHECK(cmx_array_dim(r, 0) == 0 && cmx_array_dim(r, 1) == 3);
  cmx_array_release(r);
  FAILS(cmx_identity(&e, -1, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[eye] N and M must be positive integers.");
  FAILS(cmx_tri(&e, -2, 3, 0, CMX_DTYPE_AUTO, S), CMX_ERR_VALUE,
        "[tri] N must be non-negative, got -2.");
}

static void tril_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  int64_t n = x->shape[nd - 2], m = x->shape[nd - 1];
  for (int64_t k = -4; k <= 4; k++)
    for (int up = 0; up < 2; up++) {
      h_tensor want = h_alloc(x->shape, nd, x->dtype);
      for (int64_t q = 0; q < x->size; q++) {
        int64_t j = q % m, i = (q / m) % n;
        bool keep = up ? j - i >= k : j - i <= k;
        want.re[q] = keep ? x->re[q] : 0;
        if (want.im) want.im[q] = keep ? x->im[q] : 0;
      }
      cmx_array r = NULL;
      char what[256], ex[32];
      snprintf(ex, sizeof ex, "k=%lld", (long long)k);
      su_what(what, sizeof what, up ? "triu" : "tril", x, l, ex);
      OK(up ? cmx_triu(&r, a, k, S) : cmx_tril(&r, a, k, S));
      su_check(r, &want, what);
      su_check(a, x, "tril/triu input unchanged");
      cmx_array_release(r);
      h_free(&want);
    }
}

static void test_tril_triu(void) {
  static const cmx_dtype dts[] = {CMX_BOOL,      CMX_UINT8, CMX_INT16,
                                  CMX_FLOAT16,   CMX_INT64, CMX_COMPLEX64,
                                  CMX_NUM_DTYPES};
  for (int di = 0; dts[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      if (sh->ndim < 2) continue;
      h_tensor x = h_random(sh->dims, sh->ndim, dts[di], -9, 9, (uint64_t)si);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        cmx_array a = su_input(&x, l);
        tril_case(&x, a, l);
        cmx_array_release(a);
      }
      h_free(&x);
    }
  int64_t n = 4;
  cmx_array a, e;
  OK(cmx_ones(&a, &n, 1, CMX_FLOAT32, S));
  FAILS(cmx_tril(&e, a, 0, S), CMX_ERR_VALUE,
        "[tril] array must be at least 2-D");
  FAILS(cmx_triu(&e, a, 0, S), CMX_ERR_VALUE,
        "[triu] array must be at least 2-D");
  cmx_array_release(a);
  /* Extreme k: all kept or all zeroed. */
  int64_t sh[2] = {3, 3};
  OK(cmx_ones(&a, sh, 2, CMX_INT32, S));
  int32_t t[9];
  OK(cmx_tril(&e, a, INT64_MIN, S));
  OK(cmx_array_copy_to(e, t, sizeof t));
  CHECK(t[0] == 0 && t[8] == 0 && t[6] == 0);
  cmx_array_release(e);
  OK(cmx_triu(&e, a, INT64_MIN, S));
  OK(cmx_array_copy_to(e, t, sizeof t));
  CHECK(t[0] == 1 && t[6] == 1 && t[8] == 1);
  cmx_array_release(e);
  OK(cmx_triu(&e, a, INT64_MAX, S));
  OK(cmx_array_copy_to(e, t, sizeof t));
  CHECK(t[0] == 0 && t[2] == 0 && t[8] == 0);
  cmx_array_release(e);
  cmx_array_release(a);
}

/* ---------------- window functions ---------------- */
typedef cmx_status (*win_fn)(cmx_array*, int64_t, cmx_stream);
static double ref_win(int k, int64_t m, int64_t i) {
  if (m == 1) return 1;
  double nn = (double)(1 - m + 2 * i), x = nn / (double)(m - 1);
  switch (k) {
    case 0:
      return nn <= 0 ? 1 + x : 1 - x;
    case 1:
      return 0.5 + 0.5 * cos(M_PI * x);
    case 2:
      return 0.54 + 0.46 * cos(M_PI * x);
    default:
      return 0.42 + 0.5 * cos(M_PI * x) + 0.08 * cos(2 * M_PI * x);
  }
}
static void test_windows(void) {
  win_fn fns[] = {cmx_bartlett, cmx_hanning, cmx_hamming, cmx_blackman};
  int64_t ms[] = {-3, 0, 1, 2, 5, 8, 51};
  for (int k = 0; k < 4; k++)
    for (int j = 0; j < 7; j++) {
      cmx_array r = NULL;
      OK(fns[k](&r, ms[j], S));
      h_tensor g = h_read(r);
      int64_t m = ms[j] < 0 ? 0 : ms[j];
      CHECK(g.dtype == CMX_FLOAT32 && g.ndim == 1 && g.size == m);
      for (int64_t i = 0; i < m && g.size == m; i++) {
        double w = ref_win(k, m, i);
        CHECK_MSG(fabs(g.re[i] - w) <= 1e-6, "window %d m=%lld [%lld] %g vs %g",
                  k, (long long)m, (long long)i, g.re[i], w);
      }
      h_free(&g);
      cmx_array_release(r);
    }
}

/* ---------------- meshgrid ---------------- */
static void test_meshgrid(void) {
  double xv[] = {1, 2, 3}, yv[] = {10, 20}, zv[] = {-1, -2, -3, -4};
  int64_t nx = 3, ny = 2, zs[2] = {2, 2};
  cmx_array in[3] = {h_from_doubles(xv, &nx, 1, CMX_INT32),
                     h_from_doubles(yv, &ny, 1, CMX_FLOAT32),
                     h_from_doubles(zv, zs, 2, CMX_FLOAT64)};
  int64_t len[3] = {3, 2, 4};
  const double* vals[3] = {xv, yv, zv};
  for (int ij = 0; ij < 2; ij++)
    for (int sparse = 0; sparse < 2; sparse++)
      for (int n = 1; n <= 3; n++) {
        cmx_array outs[3] = {0};
        OK(cmx_meshgrid(outs, in, n, sparse, ij ? "ij" : "xy", S));
        int pos[3] = {0, 1, 2};
        if (!ij && n >= 2) pos[0] = 1, pos[1] = 0;
        int64_t full[3];
        for (int i = 0; i < n; i++) full[pos[i]] = len[i];
        for (int i = 0; i < n; i++) {
          int64_t ws[3];
          for (int d = 0; d < n; d++)
            ws[d] = sparse && d != pos[i] ? 1 : full[d];
          CHECK_MSG(su_has_shape(outs[i], ws, n),
                    "meshgrid %s sparse=%d n=%d out %d", ij ? "ij" : "xy",
                    sparse, n, i);
          h_tensor g = h_read(outs[i]);
          CHECK(g.dtype == cmx_array_dtype(in[i]));
          int64_t idx[3] = {0, 0, 0};
          for (int64_t k = 0; k < g.size; k++) {
            CHECK(g.re[k] == vals[i][idx[pos[i]]]);
            for (int d = n - 1; d >= 0; d--) {
              if (++idx[d] < ws[d]) break;
              idx[d] = 0;
            }
          }
          h_free(&g);
          cmx_array_release(outs[i]);
        }
      }
  cmx_array outs[3];
  FAILS(cmx_meshgrid(outs, in, 2, false, "yx", S), CMX_ERR_VALUE,
        "[meshgrid] Invalid indexing value");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
}

int main(void) {
  RUN(test_arange);
  RUN(test_linspace);
  RUN(test_full);
  RUN(test_eye_tri);
  RUN(test_tril_triu);
  RUN(test_windows);
  RUN(test_meshgrid);
  return test_summary("test_creation");
}
