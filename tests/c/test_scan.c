/* Scans: cumsum, cumprod, cummax, cummin, logcumsumexp with every
 * combination of reverse and inclusive, over the standard shapes plus
 * shapes with wide inner dims (the column-block path), every axis
 * (negative too) and the flattened form, every dtype, and three layouts.
 *
 * The reference walks each line in double precision (complex in double
 * complex); integer sums and products wrap in uint64 arithmetic and are
 * truncated to the dtype, so overflow must wrap exactly. Integer, bool,
 * max and min results must match exactly (NaN propagates through
 * max/min). Float sums, products and log-sum-exps must lie within
 * eps_out * |ref| + c * eps_acc * sqrt(k) * scale, where eps_acc is the
 * accumulator's epsilon (float32 for float16/bfloat16): a half-precision
 * accumulator would exceed it on long lines. diff (n levels of a[1:] -
 * a[:-1]) is checked exactly against differences rounded level by level.
 */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

enum { SUM, PROD, MAX, MIN, LAE, NKINDS };
static const char* const kind_names[] = {"cumsum", "cumprod", "cummax",
                                         "cummin", "logcumsumexp"};
typedef cmx_status (*scan_fn)(cmx_array*, cmx_array, const int*, bool, bool,
                              cmx_stream);
static const scan_fn kind_fns[] = {cmx_cumsum, cmx_cumprod, cmx_cummax,
                                   cmx_cummin, cmx_logcumsumexp};

static cmx_dtype out_dtype(int kind, cmx_dtype dt) {
  if (kind == SUM && dt == CMX_BOOL) return CMX_INT32;
  if (kind == LAE && !cmx_dtype_is_inexact(dt)) return CMX_FLOAT32;
  return dt;
}

/* Accumulator and output epsilons of a float output dtype. */
static double eps_acc(cmx_dtype dt) {
  return dt == CMX_FLOAT64 ? 0x1p-52 : 0x1p-23;
}
static double eps_out(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return 0x1p-10;
    case CMX_BFLOAT16:
      return 0x1p-7;
    case CMX_FLOAT64:
      return 0x1p-52;
    default:
      return 0x1p-23;
  }
}

/* v (uint64 bits of a wrapped integer result) as dtype dt's value. */
static double wrap_to(uint64_t v, cmx_dtype dt) {
  switch (dt) {
    case CMX_UINT8:
      return (uint8_t)v;
    case CMX_UINT16:
      return (uint16_t)v;
    case CMX_UINT32:
      return (uint32_t)v;
    case CMX_UINT64:
      return (double)v;
    case CMX_INT8:
      return (int8_t)(uint8_t)v;
    case CMX_INT16:
      return (int16_t)(uint16_t)v;
    case CMX_INT32:
      return (int32_t)(uint32_t)v;
    default:
      return (double)(int64_t)v;
  }
}

static double int_lowest(cmx_dtype dt) {
  switch (dt) {
    case CMX_BOOL:
      return 0;
    case CMX_INT8:
      return INT8_MIN;
    case CMX_INT16:
      return INT16_MIN;
    case CMX_INT32:
      return INT32_MIN;
    case CMX_INT64:
      return (double)INT64_MIN;
    default:
      return 0;
  }
}
static double int_highest(cmx_dtype dt) {
  switch (dt) {
    case CMX_BOOL:
      return 1;
    case CMX_UINT8:
      return UINT8_MAX;
    case CMX_UINT16:
      return UINT16_MAX;
    case CMX_UINT32:
      return UINT32_MAX;
    case CMX_UINT64:
      return (double)UINT64_MAX;
    case CMX_INT8:
      return INT8_MAX;
    case CMX_INT16:
      return INT16_MAX;
    case CMX_INT32:
      return INT32_MAX;
    default:
      return (double)INT64_MAX;
  }
}

/* Lines along an axis of a row-major shape: line L, element i -> flat. */
typedef struct {
  int64_t n, inner, lines;
} lines_t;
static lines_t lines_of(const int64_t* shape, int nd, int axis) {
  lines_t l = {nd ? shape[axis] : 1, 1, 1};
  for (int d = 0; d < nd; d++) {
    if (d != axis) l.lines *= shape[d];
    if (d > axis) l.inner *= shape[d];
  }
  return l;
}
static int64_t flat(const lines_t* l, int64_t line, int64_t i) {
  return (line / l->inner * l->n + i) * l->inner + line % l->inner;
}

/* Reference scan of x along axis (< 0: flattened): values in want, error
 * bounds in tol (0: exact). */
static void reference(int kind, const h_tensor* x, int axis, bool reverse,
                      bool inclusive, h_tensor* want, double* tol) {
  cmx_dtype dt = x->dtype, odt = out_dtype(kind, dt);
  int64_t fshape[1] = {x->size};
  lines_t l =
      axis < 0 ? lines_of(fshape, 1, 0) : lines_of(x->shape, x->ndim, axis);
  *want = axis < 0 ? h_alloc(fshape, 1, odt) : h_alloc(x->shape, x->ndim, odt);
  bool fl = cmx_dtype_is_inexact(odt), cx = dt == CMX_COMPLEX64;
  for (int64_t L = 0; L < l.lines; L++) {
    uint64_t iacc = kind == PROD ? 1 : 0;
    double facc = kind == PROD                 ? 1
                  : kind == MAX || kind == LAE ? -INFINITY
                  : kind == MIN                ? INFINITY
                                               : 0;
    double complex cacc = kind == PROD ? 1 : 0;
    double cre = kind == MAX ? -INFINITY : INFINITY, cim = cre; /* max/min */
    if (!fl && kind == MAX) facc = int_lowest(dt);
    if (!fl && kind == MIN) facc = int_highest(dt);
    double sabs = 0, peak = 0;
    for (int64_t s = 0; s < l.n; s++) {
      int64_t i = flat(&l, L, reverse ? l.n - 1 - s : s);
      double v = x->re[i], vi = x->im ? x->im[i] : 0;
      /* the output before (exclusive) or after (inclusive) this step */
      for (int pass = 0; pass < 2; pass++) {
        bool write = pass == (inclusive ? 1 : 0);
        if (write) {
          if (cx) {
            want->re[i] = kind <= PROD ? creal(cacc) : cre;
            want->im[i] = kind <= PROD ? cimag(cacc) : cim;
          } else if (fl || kind == MAX || kind == MIN) {
            want->re[i] = facc;
          } else if (dt == CMX_BOOL && kind == PROD) {
            want->re[i] = (double)iacc;
          } else {
            want->re[i] = wrap_to(iacc, odt);
          }
          double k = (double)(s + (inclusive ? 1 : 0)) + 1;
          if (!fl || kind == MAX || kind == MIN)
            tol[i] = 0;
          else if (kind == SUM)
            tol[i] = eps_out(odt) * cabs(cx ? cacc : facc) +
                     2 * eps_acc(odt) * sqrt(k) * sabs;
          else if (kind == PROD)
            tol[i] = (eps_out(odt) + 4 * eps_acc(odt) * sqrt(k)) *
                     (cx ? cabs(cacc) : fabs(facc));
          else
            tol[i] = eps_out(odt) * fabs(facc) +
                     4 * eps_acc(odt) * sqrt(k) * (peak + 1);
          continue;
        }
        /* step */
        if (cx) {
          double complex z = v + vi * I;
          if (kind == SUM) cacc += z;
          if (kind == PROD) cacc *= z;
          if (kind == MAX && (v > cre || (v == cre && vi > cim))) {
            cre = v;
            cim = vi;
          }
          if (kind == MIN && (v < cre || (v == cre && vi < cim))) {
            cre = v;
            cim = vi;
          }
          sabs += cabs(z);
        } else if (kind == MAX) {
          if (facc == facc && (v > facc || v != v)) facc = v;
        } else if (kind == MIN) {
          if (facc == facc && (v < facc || v != v)) facc = v;
        } else if (fl) {
          if (kind == SUM) facc += v;
          if (kind == PROD) facc *= v;
          if (kind == LAE) {
            double hi = fmax(facc, v), lo = fmin(facc, v);
            facc = isinf(hi) ? hi : hi + log1p(exp(lo - hi));
          }
          sabs += fabs(v);
          if (fabs(facc) > peak) peak = fabs(facc);
        } else if (dt == CMX_BOOL) {
          iacc = kind == PROD ? (iacc && v != 0) : iacc + (v != 0);
        } else {
          uint64_t u = (uint64_t)(int64_t)v;
          iacc = kind == SUM ? iacc + u : iacc * u;
        }
      }
    }
  }
}

static bool compare(const h_tensor* got, const h_tensor* want,
                    const double* tol, const char* what) {
  if (got->size < 0 || got->dtype != want->dtype || got->size != want->size ||
      got->ndim != want->ndim) {
    fprintf(stderr, "FAIL %s: %s (dtype %s, want %s)\n", what,
            got->size < 0 ? cmx_last_error() : "wrong shape or dtype",
            cmx_dtype_name(got->dtype), cmx_dtype_name(want->dtype));
    return false;
  }
  for (int64_t i = 0; i < got->size; i++) {
    for (int part = 0; part < (got->im ? 2 : 1); part++) {
      double g = part ? got->im[i] : got->re[i];
      double w = part ? want->im[i] : want->re[i];
      bool ok = (w != w)   ? g != g
                : isinf(w) ? g == w
                           : g == g && fabs(g - w) <= tol[i];
      if (!ok) {
        fprintf(stderr,
                "FAIL %s: element %lld part %d: got %.17g want "
                "%.17g (tol %g)\n",
                what, (long long)i, part, g, w, tol[i]);
        return false;
      }
    }
  }
  return true;
}

/* Inputs per kind: ties and overflow for integers, values near 1 for
 * products, NaNs in some lines for max/min. */
static h_tensor make_input(int kind, const int64_t* shape, int nd, cmx_dtype dt,
                           uint64_t seed) {
  bool fl = cmx_dtype_is_inexact(dt);
  double lo = -4, hi = 4;
  if (!fl)
    lo = kind == PROD  ? -3
         : kind == LAE ? -5
                       : -100,
    hi = kind == PROD  ? 3
         : kind == LAE ? 5
                       : 100;
  if (fl && kind == PROD) lo = 0.99, hi = 1.01;
  h_tensor x = h_random(shape, nd, dt, lo, hi, seed);
  if (x.im && kind == PROD)
    for (int64_t i = 0; i < x.size; i++)
      x.im[i] = h_round_to((x.im[i] - 1) * 1.0, dt);
  if (fl && !x.im && (kind == MAX || kind == MIN) && seed % 2)
    for (int64_t i = 3; i < x.size; i += 97) x.re[i] = NAN;
  return x;
}

typedef struct {
  int nd;
  int64_t dims[4];
} shape_t;
static const shape_t extra_shapes[] = {
    {3, {2, 5, 600}}, {2, {3, 300}}, {2, {300, 3}}};
#define N_EXTRA ((int)(sizeof extra_shapes / sizeof extra_shapes[0]))

static void test_scans(void) {
  for (int kind = 0; kind < NKINDS; kind++) {
    const cmx_dtype* dts = kind == LAE ? H_REAL : H_ALL;
    for (int di = 0; dts[di] != CMX_NUM_DTYPES; di++) {
      cmx_dtype dt = dts[di];
      for (int si = 0; si < H_NUM_SHAPES + N_EXTRA; si++) {
        shape_t sh;
        if (si < H_NUM_SHAPES) {
          sh.nd = h_shapes[si].ndim;
          memcpy(sh.dims, h_shapes[si].dims, sizeof sh.dims);
        } else {
          sh = extra_shapes[si - H_NUM_SHAPES];
        }
        h_tensor x = make_input(kind, sh.dims, sh.nd, dt,
                                (uint64_t)(si * 7 + di * 3 + kind));
        double* tol = malloc(sizeof(double) * (size_t)(x.size + 1));
        for (int axi = -1; axi < 2 * sh.nd; axi++) {
          int axis = axi < sh.nd ? axi : axi - 2 * sh.nd;
          int norm = axi < 0 ? -1 : (axis < 0 ? axis + sh.nd : axis);
          for (int flags = 0; flags < 4; flags++) {
            bool reverse = flags & 1, inclusive = !(flags & 2);
            h_tensor want;
            reference(kind, &x, norm, reverse, inclusive, &want, tol);
            for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
              if (lay == H_TRANSPOSED && sh.nd < 2) continue;
              if (lay == H_STRIDED && sh.nd < 1) continue;
              char what[256], ss[64];
              snprintf(what, sizeof what, "%s %s %s axis %d%s rev=%d inc=%d %s",
                       kind_names[kind], cmx_dtype_name(dt),
                       cmx__shape_str(sh.dims, sh.nd, ss, sizeof ss), axis,
                       axi < 0 ? " (None)" : "", reverse, inclusive,
                       h_layout_names[lay]);
              cmx_array a = h_array(&x, (h_layout)lay), r = NULL;
              OK(kind_fns[kind](&r, a, axi < 0 ? NULL : &axis, reverse,
                                inclusive, S));
              h_tensor g = h_read(r);
              CHECK(compare(&g, &want, tol, what));
              h_free(&g);
              cmx_array_release(a);
              cmx_array_release(r);
            }
            h_free(&want);
          }
        }
        free(tol);
        h_free(&x);
      }
    }
  }
}

/* Hand-computed cases: wrap, identities, NaN, infinities. */
static void test_cases(void) {
  int64_t n = 4;
  cmx_array a, r;
  int8_t i8[4] = {100, 100, -128, 1};
  OK(cmx_array_from_data(&a, i8, &n, 1, CMX_INT8));
  OK(cmx_cumsum(&r, a, NULL, false, true, S));
  int8_t g8[4];
  OK(cmx_array_copy_to(r, g8, sizeof g8));
  CHECK(g8[0] == 100 && g8[1] == -56 && g8[2] == 72 && g8[3] == 73);
  cmx_array_release(r);
  OK(cmx_cummax(&r, a, NULL, false, false, S));
  OK(cmx_array_copy_to(r, g8, sizeof g8));
  CHECK(g8[0] == INT8_MIN && g8[1] == 100 && g8[2] == 100 && g8[3] == 100);
  cmx_array_release_all((cmx_array[]){a, r}, 2);

  float f[4] = {-INFINITY, -INFINITY, 1.0f, NAN};
  OK(cmx_array_from_data(&a, f, &n, 1, CMX_FLOAT32));
  float g[4];
  OK(cmx_logcumsumexp(&r, a, NULL, false, true, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(isinf(g[0]) && g[0] < 0 && isinf(g[1]) && g[2] == 1.0f && isnan(g[3]));
  cmx_array_release(r);
  OK(cmx_logcumsumexp(&r, a, NULL, true, false, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(isnan(g[0]) && isnan(g[2]) && isinf(g[3]) && g[3] < 0);
  cmx_array_release(r);
  OK(cmx_cummin(&r, a, NULL, false, true, S));
  OK(cmx_array_copy_to(r, g, sizeof g));
  CHECK(isinf(g[0]) && g[2] < 0 && isnan(g[3]));
  cmx_array_release_all((cmx_array[]){a, r}, 2);

  /* bool: cumsum counts in int32; cumprod is a running and */
  uint8_t b[4] = {1, 1, 0, 1};
  OK(cmx_array_from_data(&a, b, &n, 1, CMX_BOOL));
  OK(cmx_cumsum(&r, a, NULL, true, true, S));
  CHECK(cmx_array_dtype(r) == CMX_INT32);
  int32_t gi[4];
  OK(cmx_array_copy_to(r, gi, sizeof gi));
  CHECK(gi[0] == 3 && gi[1] == 2 && gi[2] == 1 && gi[3] == 1);
  cmx_array_release(r);
  OK(cmx_cumprod(&r, a, NULL, false, true, S));
  CHECK(cmx_array_dtype(r) == CMX_BOOL);
  uint8_t gb[4];
  OK(cmx_array_copy_to(r, gb, sizeof gb));
  CHECK(gb[0] == 1 && gb[1] == 1 && gb[2] == 0 && gb[3] == 0);
  cmx_array_release(r);
  OK(cmx_logcumsumexp(&r, a, NULL, false, true, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

/* cummax / cummin along contiguous float32 and float64 rows of 8 to 300
 * elements (the vector row scans of scan.c and their sequential tails),
 * bit for bit against a sequential select in the dtype: values with ties,
 * -0 and +0 (the earlier one stays), infinities, and in some rows NaNs of
 * distinct payloads (the last NaN seen stays) at the row's ends, at
 * vector boundaries and in the tail. */
#define SEQ_SCAN(T, v, o, n, rev, incl, mx, id)                                \
  do {                                                                         \
    T acc_ = (id);                                                             \
    for (int64_t k_ = 0; k_ < (n); k_++) {                                     \
      int64_t c_ = (rev) ? (n)-1 - k_ : k_;                                    \
      T e_ = (v)[c_], before_ = acc_;                                          \
      if ((mx) ? (e_ > acc_ || e_ != e_) : (e_ < acc_ || e_ != e_)) acc_ = e_; \
      (o)[c_] = (incl) ? acc_ : before_;                                       \
    }                                                                          \
  } while (0)
static void test_maxmin_rows_bits(void) {
  const int64_t lens[] = {8, 17, 31, 32, 33, 39, 47, 64, 300};
  const double vals[] = {-1.0, -0.0, 0.0, 0.5, 2.0, INFINITY, -INFINITY, 0.5};
  uint64_t g = 0x243f6a8885a308d3ull;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li], rows = 41, sh[2] = {rows, n}, tot = rows * n;
    for (int di = 0; di < 2; di++) {
      bool f64 = di == 1;
      size_t isz = f64 ? 8 : 4;
      char* v = malloc((size_t)tot * isz);
      char *got = malloc((size_t)tot * isz), *want = malloc((size_t)tot * isz);
      uint32_t payload = 1;
      for (int64_t i = 0; i < tot; i++) {
        g ^= g << 13, g ^= g >> 7, g ^= g << 17;
        double x = vals[g % 8];
        int64_t row = i / n, c = i % n;
        /* rows 1 mod 4: a NaN at the start, the end, a vector boundary or
         * at random; rows 2 mod 4: two of them */
        bool nan =
            (row % 4 == 1 && c == (row / 4 % 2 ? n - 1 : (row * 5) % n)) ||
            (row % 4 == 2 && (c == 8 % n || c == (row * 7 + 3) % n)) ||
            (row % 4 == 1 && c == 0 && row % 8 == 5);
        if (f64) {
          uint64_t b = 0x7ff8000000000000ull | payload;
          memcpy(v + i * 8, nan ? (void*)&b : (void*)&x, 8);
        } else {
          float xf = (float)x;
          uint32_t b = 0x7fc00000u | payload;
          memcpy(v + i * 4, nan ? (void*)&b : (void*)&xf, 4);
        }
        payload += nan;
      }
      cmx_array a;
      OK(cmx_array_from_data(&a, v, sh, 2, f64 ? CMX_FLOAT64 : CMX_FLOAT32));
      for (int mx = 0; mx < 2; mx++)
        for (int mode = 0; mode < 4; mode++) {
          bool rev = mode & 1, incl = !(mode & 2);
          cmx_array r = NULL;
          int ax = 1;
          OK((mx ? cmx_cummax : cmx_cummin)(&r, a, &ax, rev, incl, S));
          OK(cmx_array_copy_to(r, got, (size_t)tot * isz));
          for (int64_t row = 0; row < rows; row++) {
            if (f64) {
              double* o = (double*)(void*)want + row * n;
              const double* x = (const double*)(void*)v + row * n;
              SEQ_SCAN(double, x, o, n, rev, incl, mx,
                       mx ? -INFINITY : INFINITY);
            } else {
              float* o = (float*)(void*)want + row * n;
              const float* x = (const float*)(void*)v + row * n;
              SEQ_SCAN(float, x, o, n, rev, incl, mx,
                       mx ? -INFINITY : INFINITY);
            }
          }
          int64_t bad = -1;
          for (int64_t i = 0; i < tot && bad < 0; i++)
            if (memcmp(got + i * isz, want + i * isz, isz)) bad = i;
          CHECK_MSG(bad < 0, "%s %s n %lld mode %d: element %lld differs",
                    mx ? "cummax" : "cummin", f64 ? "float64" : "float32",
                    (long long)n, mode, (long long)bad);
          cmx_array_release(r);
        }
      cmx_array_release(a);
      free(v);
      free(got);
      free(want);
    }
  }
}
#undef SEQ_SCAN

static void test_errors(void) {
  int64_t sh[2] = {2, 3};
  cmx_array a, c, z, r = NULL;
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&c, sh, 2, CMX_COMPLEX64, S));
  OK(cmx_array_from_double(&z, 2.0, CMX_INT32));
  int ax = 2, neg = -3, zero = 0;
  FAILS(cmx_cumsum(&r, a, &ax, false, true, S), CMX_ERR_INDEX,
        "[cumsum] Axis 2 is out of bounds for array with 2 dimensions.");
  FAILS(cmx_cumprod(&r, a, &neg, false, true, S), CMX_ERR_INDEX,
        "[cumprod] Axis -3 is out of bounds");
  FAILS(cmx_cummax(&r, z, &zero, false, true, S), CMX_ERR_INDEX,
        "[cummax] Axis 0 is out of bounds for array with 0 dimensions.");
  FAILS(cmx_cummin(&r, a, &ax, false, true, S), CMX_ERR_INDEX, "[cummin]");
  OK(cmx_logcumsumexp(&r, c, NULL, false, true, S)); /* complex: as MLX */
  CHECK(cmx_array_dtype(r) == CMX_COMPLEX64);
  cmx_array_release(r);
  /* 0-d input with no axis: one element */
  OK(cmx_cumsum(&r, z, NULL, false, true, S));
  int32_t v = 0;
  CHECK(cmx_array_ndim(r) == 1);
  OK(cmx_array_copy_to(r, &v, sizeof v));
  CHECK(v == 2);
  cmx_array_release_all((cmx_array[]){a, c, z, r}, 4);
}

/* diff: levels of differences in double, each rounded to the dtype as the
 * op's subtract rounds (not_equal for bool), so results match exactly. */
static void test_diff(void) {
  const h_shape shapes[] = {{1, {7}},     {1, {1}},       {1, {0}},
                            {2, {3, 5}},  {3, {4, 1, 6}}, {3, {2, 0, 3}},
                            {2, {33, 65}}};
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    for (int si = 0; si < (int)(sizeof shapes / sizeof shapes[0]); si++) {
      const h_shape* sh = &shapes[si];
      h_tensor x = h_random(sh->dims, sh->ndim, dt, -50, 50, 41 + si + di);
      for (int axis = -sh->ndim; axis < sh->ndim; axis++) {
        int ax = axis < 0 ? axis + sh->ndim : axis;
        int64_t len = sh->dims[ax];
        for (int n = 0; n <= len + 1 && n <= 4; n++) {
          /* reference: apply n levels */
          /* integers: exact wrapping differences in uint64 bits */
          bool integer = cmx_dtype_is_integer(dt);
          h_tensor cur = h_alloc(x.shape, x.ndim, dt);
          uint64_t* u = malloc(sizeof(uint64_t) * (size_t)(x.size + 1));
          for (int64_t i = 0; i < x.size; i++)
            u[i] = (uint64_t)(int64_t)x.re[i];
          memcpy(cur.re, x.re, sizeof(double) * (size_t)x.size);
          if (cur.im) memcpy(cur.im, x.im, sizeof(double) * (size_t)x.size);
          for (int lev = 0; lev < n && cur.shape[ax] > 0; lev++) {
            int64_t osh[4];
            memcpy(osh, cur.shape, sizeof osh);
            osh[ax] -= 1;
            h_tensor nx = h_alloc(osh, cur.ndim, dt);
            lines_t lo = lines_of(osh, cur.ndim, ax);
            lines_t li = lines_of(cur.shape, cur.ndim, ax);
            for (int64_t L = 0; L < lo.lines; L++)
              for (int64_t i = 0; i < lo.n; i++) {
                int64_t o = flat(&lo, L, i), a = flat(&li, L, i + 1),
                        b = flat(&li, L, i);
                if (integer) u[o] = u[a] - u[b]; /* o < a: in place is safe */
                if (dt == CMX_BOOL)
                  nx.re[o] = cur.re[a] != cur.re[b];
                else if (integer)
                  nx.re[o] = wrap_to(u[o], dt);
                else
                  nx.re[o] = h_round_to(cur.re[a] - cur.re[b], dt);
                if (nx.im) nx.im[o] = h_round_to(cur.im[a] - cur.im[b], dt);
              }
            h_free(&cur);
            cur = nx;
          }
          free(u);
          for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
            if (lay == H_TRANSPOSED && sh->ndim < 2) continue;
            cmx_array a = h_array(&x, (h_layout)lay), r = NULL;
            OK(cmx_diff(&r, a, n, axis, S));
            h_tensor g = h_read(r);
            char what[128], ss[64];
            snprintf(what, sizeof what, "diff %s %s axis %d n %d %s",
                     cmx_dtype_name(dt),
                     cmx__shape_str(sh->dims, sh->ndim, ss, sizeof ss), axis, n,
                     h_layout_names[lay]);
            CHECK(h_close(&g, &cur, 0, 0, what));
            h_free(&g);
            cmx_array_release(a);
            cmx_array_release(r);
          }
          h_free(&cur);
        }
      }
      h_free(&x);
    }
  }
  int64_t sh[2] = {2, 3};
  cmx_array a, z, r = NULL;
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  OK(cmx_array_from_double(&z, 1.0, CMX_FLOAT32));
  FAILS(cmx_diff(&r, z, 1, -1, S), CMX_ERR_VALUE,
        "[diff] diff requires input that is at least one dimensional.");
  FAILS(cmx_diff(&r, a, -1, -1, S), CMX_ERR_VALUE,
        "[diff] order must be non-negative but got -1.");
  FAILS(cmx_diff(&r, a, 1, 2, S), CMX_ERR_INDEX,
        "[diff] axis 2 is out of bounds for array of dimension 2");
  CHECK(r == NULL);
  cmx_array_release_all((cmx_array[]){a, z}, 2);
}

int main(void) {
  RUN(test_scans);
  RUN(test_cases);
  RUN(test_maxmin_rows_bits);
  RUN(test_errors);
  RUN(test_diff);
  return test_summary("test_scan");
}
