/* Reductions: every op over the harness shapes, every axes subset (with
 * and without keepdims), every dtype each op accepts and five layouts
 * (contiguous, transposed, strided, broadcast, flipped), checked against
 * plain double-precision reference loops; large arrays for the parallel
 * paths; argmin/argmax ties and NaN; empty reductions; errors. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

typedef enum {
  K_SUM,
  K_PROD,
  K_MIN,
  K_MAX,
  K_MEAN,
  K_ALL,
  K_ANY,
  K_LSE,
  K_VAR,
  K_STD,
  K_NUM
} kind_t;
static const char* const k_names[K_NUM] = {"sum",  "prod", "min", "max",
                                           "mean", "all",  "any", "logsumexp",
                                           "var",  "std"};

/* ---------------- expected dtypes (MLX's rules) ---------------- */
static cmx_dtype want_dtype(kind_t k, cmx_dtype dt) {
  switch (k) {
    case K_SUM:
    case K_PROD:
      switch (dt) {
        case CMX_BOOL:
        case CMX_INT8:
        case CMX_INT16:
        case CMX_INT32:
          return CMX_INT32;
        case CMX_UINT8:
        case CMX_UINT16:
        case CMX_UINT32:
          return CMX_UINT32;
        default:
          return dt;
      }
    case K_MIN:
    case K_MAX:
      return dt;
    case K_ALL:
    case K_ANY:
      return CMX_BOOL;
    case K_VAR:
    case K_STD: /* MLX: the variance of complex numbers is real */
      if (dt == CMX_COMPLEX64) return CMX_FLOAT32;
      return cmx_dtype_is_inexact(dt) ? dt : CMX_FLOAT32;
    default:
      return cmx_dtype_is_inexact(dt) ? dt : CMX_FLOAT32;
  }
}

/* ---------------- layouts ---------------- */
enum { L_BCAST = H_NUM_LAYOUTS, L_FLIP, L_NUM };
static const char* layout_name(int l) {
  return l < H_NUM_LAYOUTS ? h_layout_names[l]
         : l == L_BCAST    ? "broadcast"
                           : "flipped";
}

/* Whether layout l applies to shape (ndim, dims). */
static bool layout_ok(int l, int ndim, const int64_t* dims) {
  if (l == H_TRANSPOSED) return ndim >= 2;
  if (l == H_STRIDED || l == L_FLIP) return ndim >= 1;
  if (l == L_BCAST) return ndim >= 1 && dims[0] > 1;
  return true;
}

/* Makes x constant along axis 0 (for the broadcast layout). */
static void make_broadcastable(h_tensor* x) {
  int64_t inner = x->size / x->shape[0];
  for (int64_t i = inner; i < x->size; i++) {
    x->re[i] = x->re[i % inner];
    if (x->im) x->im[i] = x->im[i % inner];
  }
}

/* An array holding x in layout l (x made broadcastable beforehand). */
static cmx_array make_array(const h_tensor* x, int l) {
  if (l < H_NUM_LAYOUTS) return h_array(x, (h_layout)l);
  if (l == L_BCAST) {
    h_tensor y = h_alloc(x->shape, x->ndim, x->dtype);
    y.shape[0] = 1;
    y.size = x->size / x->shape[0];
    memcpy(y.re, x->re, (size_t)y.size * sizeof(double));
    if (y.im) memcpy(y.im, x->im, (size_t)y.size * sizeof(double));
    cmx_array s = h_array(&y, H_CONTIG), b = NULL;
    OK(cmx_broadcast_to(&b, s, x->shape, x->ndim, S));
    cmx_array_release(s);
    h_free(&y);
    return b;
  }
  /* flipped: axis 0 stored in reverse, negative stride */
  size_t isz = cmx_dtype_size(x->dtype);
  int64_t st[CMX_MAX_NDIM], s = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    st[d] = s;
    s *= x->shape[d] ? x->shape[d] : 1;
  }
  int64_t n0 = x->shape[0], inner = n0 ? x->size / n0 : 0;
  char* buf = calloc((size_t)(x->size ? x->size : 1), isz);
  for (int64_t i = 0; i < x->size; i++) {
    int64_t i0 = i / inner, rest = i % inner;
    h_store(buf + ((n0 - 1 - i0) * inner + rest) * (int64_t)isz, x->dtype,
            x->re[i], x->im ? x->im[i] : 0);
  }
  int64_t off = n0 > 0 ? (n0 - 1) * st[0] : 0;
  st[0] = -st[0];
  cmx_array a = h_node_strided(buf, x->size ? x->size : 1, x->shape, x->ndim,
                               st, off, x->dtype);
  free(buf);
  return a;
}

/* ---------------- the reference ---------------- */
typedef struct {
  h_tensor want;
  double* scale; /* per output: the magnitude errors are relative to */
} ref_t;

/* The output number of every input element when reducing the axes in
 * mask (an odometer over the row-major input). */
static int64_t* out_map(const h_tensor* x, unsigned mask) {
  int64_t* map = malloc((size_t)(x->size ? x->size : 1) * sizeof(int64_t));
  int64_t idx[CMX_MAX_NDIM] = {0}, ostr[CMX_MAX_NDIM], s = 1, o = 0;
  for (int d = x->ndim - 1; d >= 0; d--) {
    ostr[d] = (mask >> d & 1) ? 0 : s;
    if (!(mask >> d & 1)) s *= x->shape[d];
  }
  for (int64_t i = 0; i < x->size; i++) {
    map[i] = o;
    for (int d = x->ndim - 1; d >= 0; d--) {
      if (++idx[d] < x->shape[d]) {
        o += ostr[d];
        break;
      }
      o -= (x->shape[d] - 1) * ostr[d];
      idx[d] = 0;
    }
  }
  return map;
}

static bool is_nan2(double re, double im) {
  return re != re || im != im;
}
static bool less2(double ar, double ai, double br, double bi) {
  return ar < br || (ar == br && ai < bi);
}

static ref_t reference(const h_tensor* x, kind_t k, unsigned mask,
                       bool keepdims, int ddof) {
  cmx_dtype odt = want_dtype(k, x->dtype);
  int64_t oshape[CMX_MAX_NDIM], cnt = 1;
  int ond = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (mask >> d & 1) {
      cnt *= x->shape[d];
      if (keepdims) oshape[ond++] = 1;
    } else {
      oshape[ond++] = x->shape[d];
    }
  }
  ref_t r;
  r.want = h_alloc(oshape, ond, odt);
  int64_t no = r.want.size;
  size_t nb = (size_t)(no ? no : 1);
  r.scale = calloc(nb, sizeof(double));
  /* long double sums: the reference must be much more exact than the
   * double results it checks */
  long double* re = calloc(nb, sizeof(long double));
  long double* im = calloc(nb, sizeof(long double));
  uint64_t* u = calloc(nb, sizeof(uint64_t));
  double* m = calloc(nb, sizeof(double));
  double* mi = calloc(nb, sizeof(double));
  bool* seen = calloc(nb, sizeof(bool));
  bool integer = !cmx_dtype_is_inexact(x->dtype);
  int64_t* map = out_map(x, mask);
  for (int64_t o = 0; o < no; o++) {
    if (k == K_PROD) re[o] = 1, u[o] = 1;
    if (k == K_ALL) re[o] = 1;
  }
  /* pass 1 */
  for (int64_t i = 0; i < x->size; i++) {
    int64_t o = map[i];
    double xr = x->re[i], xi = x->im ? x->im[i] : 0;
    switch (k) {
      case K_SUM:
        if (integer) u[o] += (uint64_t)(int64_t)xr;
        re[o] += xr, im[o] += xi;
        r.scale[o] += fabs(xr) + fabs(xi);
        break;
      case K_PROD:
        if (integer) {
          u[o] *= (uint64_t)(int64_t)xr;
        } else if (x->im) {
          long double pr = re[o] * xr - im[o] * xi;
          long double pi = re[o] * xi + im[o] * xr;
          re[o] = pr, im[o] = pi;
        } else {
          re[o] *= xr;
        }
        break;
      case K_MIN:
      case K_MAX:
      case K_LSE:
        if (!seen[o] ||
            (!is_nan2(m[o], mi[o]) &&
             (is_nan2(xr, xi) || (k == K_MIN ? less2(xr, xi, m[o], mi[o])
                                             : less2(m[o], mi[o], xr, xi))))) {
          m[o] = xr, mi[o] = xi;
        }
        seen[o] = true;
        break;
      case K_ALL:
        if (xr == 0 && xi == 0) re[o] = 0;
        break;
      case K_ANY:
        if (xr != 0 || xi != 0) re[o] = 1;
        break;
      case K_MEAN:
      case K_VAR:
      case K_STD:
        re[o] += xr, im[o] += xi;
        r.scale[o] += (fabs(xr) + fabs(xi)) / (double)cnt;
        break;
      default:
        break;
    }
  }
  /* pass 2 */
  if (k == K_LSE || k == K_VAR || k == K_STD) {
    long double* s2 = calloc(nb, sizeof(long double));
    long double* s2i = calloc(nb, sizeof(long double));
    for (int64_t i = 0; i < x->size; i++) {
      int64_t o = map[i];
      double xr = x->re[i], xi = x->im ? x->im[i] : 0;
      if (k == K_LSE) {
        s2[o] += exp(xr - m[o]);
      } else {
        long double dr = xr - re[o] / cnt, di = xi - im[o] / cnt;
        s2[o] += dr * dr + di * di; /* |x - mean|^2 (MLX) */
        r.scale[o] = 0;
      }
    }
    for (int64_t i = 0; i < x->size; i++)
      if (k != K_LSE)
        r.scale[map[i]] +=
            (x->re[i] * x->re[i] + (x->im ? x->im[i] * x->im[i] : 0)) /
            (double)cnt;
    if (k == K_STD)
      for (int64_t o = 0; o < no; o++) r.scale[o] = sqrt(r.scale[o]);
    for (int64_t o = 0; o < no; o++) {
      if (k == K_LSE) {
        re[o] = (isinf(m[o]) || m[o] != m[o]) ? m[o] : m[o] + logl(s2[o]);
        r.scale[o] = 1;
      } else {
        double den = (double)cnt - ddof;
        den = den > 0 ? den : 0;
        re[o] = s2[o] / den, im[o] = s2i[o] / den;
        if (k == K_STD) re[o] = sqrtl(re[o]);
      }
    }
    free(s2);
    free(s2i);
  }
  for (int64_t o = 0; o < no; o++) {
    double vr = (double)re[o], vi = (double)im[o];
    if (k == K_MIN || k == K_MAX) vr = m[o], vi = mi[o];
    if (k == K_MEAN) vr = (double)(re[o] / cnt), vi = (double)(im[o] / cnt);
    if ((k == K_SUM || k == K_PROD) && integer) {
      switch (odt) {
        case CMX_INT32:
          vr = (int32_t)(uint32_t)u[o];
          break;
        case CMX_UINT32:
          vr = (uint32_t)u[o];
          break;
        case CMX_INT64:
          vr = (double)(int64_t)u[o];
          break;
        default:
          vr = (double)u[o];
          break;
      }
    }
    if (k == K_PROD) r.scale[o] = 1;
    r.want.re[o] = h_round_to(vr, odt);
    if (r.want.im) r.want.im[o] = h_round_to(vi, odt);
  }
  free(re);
  free(im);
  free(u);
  free(m);
  free(mi);
  free(seen);
  free(map);
  return r;
}

/* Compares got and want: |g - w| <= rtol * |w| + atol * scale. */
static bool compare(const h_tensor* got, const ref_t* r, double rtol,
                    double atol, const char* what) {
  const h_tensor* want = &r->want;
  if (!h_close(got, want, 1e300, 1e300, what)) return false;
  for (int64_t i = 0; i < got->size; i++) {
    double a = atol * r->scale[i];
    bool ok = h_value_close(got->re[i], want->re[i], rtol, a);
    if (ok && got->im) ok = h_value_close(got->im[i], want->im[i], rtol, a);
    if (!ok) {
      fprintf(stderr,
              "FAIL %s: element %lld: got %.10g%+.10gj, want %.10g%+.10gj\n",
              what, (long long)i, got->re[i], got->im ? got->im[i] : 0.0,
              want->re[i], want->im ? want->im[i] : 0.0);
      return false;
    }
  }
  return true;
}

static cmx_status call(kind_t k, cmx_array* out, cmx_array a, const int* ax,
                       int n, bool keep, int ddof) {
  switch (k) {
    case K_SUM:
      return cmx_sum(out, a, ax, n, keep, S);
    case K_PROD:
      return cmx_prod(out, a, ax, n, keep, S);
    case K_MIN:
      return cmx_min(out, a, ax, n, keep, S);
    case K_MAX:
      return cmx_max(out, a, ax, n, keep, S);
    case K_MEAN:
      return cmx_mean(out, a, ax, n, keep, S);
    case K_ALL:
      return cmx_all(out, a, ax, n, keep, S);
    case K_ANY:
      return cmx_any(out, a, ax, n, keep, S);
    case K_LSE:
      return cmx_logsumexp(out, a, ax, n, keep, S);
    case K_VAR:
      return cmx_var(out, a, ax, n, keep, ddof, S);
    default:
      return cmx_std(out, a, ax, n, keep, ddof, S);
  }
}

/* Tolerances of kind k with output dtype odt: relative, and relative to
 * the reference's error scale. */
static void tolerances(kind_t k, cmx_dtype odt, double* rtol, double* atol) {
  double t = h_tol(odt);
  *rtol = t, *atol = 0;
  switch (k) {
    case K_SUM:
    case K_MEAN:
      *atol = odt == CMX_FLOAT64 ? 1e-13 : 4e-6;
      break;
    case K_PROD: /* underflow differs with the order: tiny results match 0 */
      *rtol = odt == CMX_COMPLEX64 ? 2e-3 : 2 * t;
      *atol = 1e-30;
      break;
    case K_LSE:
      *rtol = *atol = 2 * t;
      break;
    case K_VAR:
    case K_STD:
      *rtol = *atol = 4 * t;
      break;
    default:
      break;
  }
}

static void value_range(kind_t k, cmx_dtype dt, double* lo, double* hi) {
  *lo = -100, *hi = 100;
  if (cmx_dtype_is_inexact(dt)) *lo = -2, *hi = 2;
  if (k == K_PROD) {
    *lo = dt == CMX_COMPLEX64 ? -1 : cmx_dtype_is_inexact(dt) ? 0.5 : -3;
    *hi = dt == CMX_COMPLEX64 ? 1 : cmx_dtype_is_inexact(dt) ? 1.5 : 3;
  }
  if (k == K_LSE) *lo = -5, *hi = 5;
}

/* One case: reduce x (in layout l) over mask (all_axes: axes=NULL). */
static bool check_case(kind_t k, const h_tensor* x, int l, unsigned mask,
                       bool all_axes, bool keep, int ddof) {
  if (all_axes) mask = (1u << x->ndim) - 1;
  int axes[CMX_MAX_NDIM], n = 0;
  /* axes given in descending order, odd ones negative: the op sorts */
  for (int d = x->ndim - 1; d >= 0; d--)
    if (mask >> d & 1) axes[n++] = (d & 1) ? d - x->ndim : d;
  ref_t r = reference(x, k, mask, keep, ddof);
  char what[256], shs[128];
  snprintf(what, sizeof what, "%s %s %s %s mask=%x%s%s ddof=%d", k_names[k],
           cmx_dtype_name(x->dtype),
           cmx__shape_str(x->shape, x->ndim, shs, sizeof shs), layout_name(l),
           mask, all_axes ? " (NULL)" : "", keep ? " keepdims" : "", ddof);
  cmx_array a = make_array(x, l), out = NULL;
  cmx_status st = call(k, &out, a, all_axes ? NULL : axes, n, keep, ddof);
  bool ok;
  if (st != CMX_OK) {
    fprintf(stderr, "FAIL %s: %s\n", what, cmx_last_error());
    ok = false;
  } else {
    h_tensor got = h_read(out);
    double rtol, atol;
    tolerances(k, r.want.dtype, &rtol, &atol);
    ok = compare(&got, &r, rtol, atol, what);
    h_free(&got);
  }
  CHECK(ok);
  cmx_array_release(a);
  cmx_array_release(out);
  h_free(&r.want);
  free(r.scale);
  return ok;
}

/* Whether kind k accepts dtype dt. */
static bool accepts(kind_t k, cmx_dtype dt) {
  if (k == K_LSE) return dt != CMX_COMPLEX64;
  return true;
}

/* Whether the reduction over mask has an empty group (min/max/lse fail). */
static bool empty_group(const h_tensor* x, unsigned mask) {
  for (int d = 0; d < x->ndim; d++)
    if ((mask >> d & 1) && x->shape[d] == 0) return true;
  return false;
}

static void test_table(kind_t k) {
  int fails = 0;
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    if (!accepts(k, dt) || !h_shard_take()) continue;
    double lo, hi;
    value_range(k, dt, &lo, &hi);
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      h_tensor x = h_random(sh->dims, sh->ndim, dt, lo, hi, (uint64_t)si + 7);
      h_tensor xb = h_random(sh->dims, sh->ndim, dt, lo, hi, (uint64_t)si + 7);
      if (layout_ok(L_BCAST, sh->ndim, sh->dims)) make_broadcastable(&xb);
      unsigned nmask = 1u << sh->ndim;
      for (int l = 0; l < L_NUM; l++) {
        if (!layout_ok(l, sh->ndim, sh->dims)) continue;
        const h_tensor* xl = l == L_BCAST ? &xb : &x;
        for (unsigned mask = 0; mask <= nmask; mask++) {
          bool all = mask == nmask;
          unsigned mk = all ? nmask - 1 : mask;
          if (k == K_MIN || k == K_MAX) {
            if (empty_group(xl, mk)) continue;
          }
          if (k == K_LSE && xl->size == 0) continue;
          bool keep = ((mask + (unsigned)l + (unsigned)si) & 1) != 0;
          int ddof = (k == K_VAR || k == K_STD) ? (int)(mask % 3) - 1 : 0;
          fails += !check_case(k, xl, l, mk, all, keep, ddof);
          if (fails > 20) goto done;
        }
      }
      h_free(&x);
      h_free(&xb);
    }
  }
  return;
done:
  fprintf(stderr, "too many failures in %s\n", k_names[k]);
}

static void test_sum(void) {
  test_table(K_SUM);
}
static void test_prod(void) {
  test_table(K_PROD);
}
static void test_min(void) {
  test_table(K_MIN);
}
static void test_max(void) {
  test_table(K_MAX);
}
static void test_mean(void) {
  test_table(K_MEAN);
}
static void test_all(void) {
  test_table(K_ALL);
}
static void test_any(void) {
  test_table(K_ANY);
}
static void test_logsumexp(void) {
  test_table(K_LSE);
}
static void test_var(void) {
  test_table(K_VAR);
}
static void test_std(void) {
  test_table(K_STD);
}

/* Large arrays: the parallel paths (split outputs, split rows, split
 * columns) for a few dtypes. */
static void test_large(void) {
  static const h_shape shapes[] = {{1, {(1 << 20) + 37}},
                                   {2, {1100, 1031}},
                                   {2, {3, 400003}},
                                   {2, {140001, 9}},
                                   {3, {64, 129, 130}}};
  static const struct {
    cmx_dtype dt;
    kind_t k;
  } cases[] = {
      {CMX_FLOAT32, K_SUM}, {CMX_FLOAT32, K_MAX},   {CMX_FLOAT32, K_MEAN},
      {CMX_FLOAT32, K_ANY}, {CMX_INT32, K_SUM},     {CMX_INT32, K_MAX},
      {CMX_FLOAT16, K_SUM}, {CMX_BFLOAT16, K_MEAN}, {CMX_FLOAT64, K_SUM},
      {CMX_FLOAT32, K_LSE}, {CMX_FLOAT32, K_VAR}};
  for (int si = 0; si < 5; si++) {
    const h_shape* sh = &shapes[si];
    for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++) {
      if ((ci + si) % 2) continue; /* half the pairs: time */
      kind_t k = cases[ci].k;
      double lo, hi;
      value_range(k, cases[ci].dt, &lo, &hi);
      h_tensor x = h_random(sh->dims, sh->ndim, cases[ci].dt, lo, hi, 99);
      unsigned nmask = 1u << sh->ndim;
      for (unsigned mask = 1; mask <= nmask; mask++) {
        /* each single axis, and all (NULL) */
        if (mask != nmask && (mask & (mask - 1))) continue;
        int l = (mask + (unsigned)ci) % 2 ? H_CONTIG : H_TRANSPOSED;
        if (sh->ndim < 2) l = H_CONTIG;
        check_case(k, &x, l, mask == nmask ? 0 : mask, mask == nmask, false, 0);
      }
      h_free(&x);
    }
  }
  /* narrow column blocks folded across a split of two reduced dims, the
   * split falling inside a run of rows */
  int64_t sh4[4] = {41, 3, 301, 7};
  for (int ci = 0; ci < 3; ci++) {
    kind_t k = ci == 0 ? K_SUM : ci == 1 ? K_MIN : K_PROD;
    cmx_dtype dt = ci == 0 ? CMX_FLOAT32 : ci == 1 ? CMX_INT16 : CMX_INT64;
    double lo, hi;
    value_range(k, dt, &lo, &hi);
    h_tensor x = h_random(sh4, 4, dt, lo, hi, 5);
    check_case(k, &x, H_CONTIG, 0x5, false, true, 0);
    check_case(k, &x, H_CONTIG, 0xd, false, false, 0);
    h_free(&x);
  }
  /* a float32 sum of 2^24 + 1000 ones is exact with blocked summation
   * (float32 accumulation alone stalls at 2^24) */
  int64_t n = (1 << 24) + 1000;
  cmx_array ones, s;
  float one = 1;
  cmx_array o1;
  OK(cmx_array_from_data(&o1, &one, NULL, 0, CMX_FLOAT32));
  OK(cmx_broadcast_to(&ones, o1, &n, 1, S));
  cmx_array c;
  OK(cmx_astype(&c, ones, CMX_FLOAT32, S)); /* a contiguous copy */
  OK(cmx_sum(&s, c, NULL, 0, false, S));
  double v;
  OK(cmx_array_item_double(s, &v));
  CHECK(v == 16778216.0);
  cmx_array_release(s);
  OK(cmx_sum(&s, ones, NULL, 0, false, S)); /* the broadcast itself */
  OK(cmx_array_item_double(s, &v));
  CHECK(v == 16778216.0);
  cmx_array_release_all((cmx_array[]){o1, ones, c, s}, 4);
}

/* ---------------- argmin / argmax ---------------- */

static void ref_arg(const h_tensor* x, bool is_max, int axis, int64_t* out,
                    int64_t nout) {
  /* axis < 0: flattened */
  int64_t len = axis < 0 ? x->size : x->shape[axis];
  int64_t stride = 1, outer = 1;
  if (axis >= 0) {
    for (int d = axis + 1; d < x->ndim; d++) stride *= x->shape[d];
    for (int d = 0; d < axis; d++) outer *= x->shape[d];
  }
  int64_t o = 0;
  for (int64_t a = 0; a < outer; a++)
    for (int64_t b = 0; b < stride; b++, o++) {
      int64_t best = 0, base = a * len * stride + b;
      for (int64_t i = 1; i < len; i++) {
        int64_t e = base + i * stride, f = base + best * stride;
        double xr = x->re[e], xi = x->im ? x->im[e] : 0;
        double br = x->re[f], bi = x->im ? x->im[f] : 0;
        if (is_nan2(br, bi)) break;
        if (is_nan2(xr, xi) ||
            (is_max ? less2(br, bi, xr, xi) : less2(xr, xi, br, bi)))
          best = i;
      }
      if (o < nout) out[o] = best;
    }
}

static void test_argreduce(void) {
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      /* a narrow range gives many ties */
      h_tensor x = h_random(sh->dims, sh->ndim, dt, -3, 3, (uint64_t)si + 3);
      h_tensor xb = h_random(sh->dims, sh->ndim, dt, -3, 3, (uint64_t)si + 3);
      if (layout_ok(L_BCAST, sh->ndim, sh->dims)) make_broadcastable(&xb);
      for (int l = 0; l < L_NUM; l++) {
        if (!layout_ok(l, sh->ndim, sh->dims)) continue;
        const h_tensor* xl = l == L_BCAST ? &xb : &x;
        for (int ax = -1; ax < sh->ndim; ax++) {
          int64_t len = ax < 0 ? xl->size : xl->shape[ax];
          for (int is_max = 0; is_max < 2; is_max++) {
            bool keep = ((ax + l + is_max) & 1) != 0;
            cmx_array a = make_array(xl, l), r = NULL;
            cmx_status st =
                is_max ? cmx_argmax(&r, a, ax < 0 ? NULL : &ax, keep, S)
                       : cmx_argmin(&r, a, ax < 0 ? NULL : &ax, keep, S);
            char what[200], shs[100];
            snprintf(what, sizeof what, "%s %s %s %s axis=%d",
                     is_max ? "argmax" : "argmin", cmx_dtype_name(dt),
                     cmx__shape_str(sh->dims, sh->ndim, shs, sizeof shs),
                     layout_name(l), ax);
            if (len == 0 || xl->size == 0) { /* MLX: any empty input */
              CHECK_MSG(
                  st == CMX_ERR_VALUE && strstr(cmx_last_error(), "zero size"),
                  "%s: want an error", what);
            } else if (st != CMX_OK) {
              CHECK_MSG(false, "%s: %s", what, cmx_last_error());
            } else {
              CHECK(cmx_array_dtype(r) == CMX_UINT32);
              int want_nd = ax < 0 ? (keep ? sh->ndim : 0)
                                   : (keep ? sh->ndim : sh->ndim - 1);
              CHECK_MSG(cmx_array_ndim(r) == want_nd, "%s: ndim", what);
              h_tensor got = h_read(r);
              int64_t* want = calloc((size_t)got.size + 1, sizeof(int64_t));
              ref_arg(xl, is_max, ax, want, got.size);
              bool ok = got.size >= 0;
              for (int64_t i = 0; ok && i < got.size; i++)
                ok = got.re[i] == (double)want[i];
              CHECK_MSG(ok, "%s", what);
              free(want);
              h_free(&got);
            }
            cmx_array_release(a);
            cmx_array_release(r);
          }
        }
      }
      h_free(&x);
      h_free(&xb);
    }
  }
}

static void test_arg_nan_ties(void) {
  float v[8] = {1, NAN, 5, NAN, 5, -1, -1, 0};
  int64_t n = 8;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  int64_t i;
  OK(cmx_argmax(&r, a, NULL, false, S));
  OK(cmx_array_item_int64(r, &i));
  CHECK(i == 1); /* first NaN */
  cmx_array_release(r);
  OK(cmx_argmin(&r, a, NULL, false, S));
  OK(cmx_array_item_int64(r, &i));
  CHECK(i == 1);
  cmx_array_release(r);
  cmx_array_release(a);
  float w[6] = {2, 5, 5, -1, 7, -1};
  n = 6;
  OK(cmx_array_from_data(&a, w, &n, 1, CMX_FLOAT32));
  OK(cmx_argmax(&r, a, NULL, false, S));
  OK(cmx_array_item_int64(r, &i));
  CHECK(i == 4);
  cmx_array_release(r);
  OK(cmx_argmin(&r, a, NULL, false, S));
  OK(cmx_array_item_int64(r, &i));
  CHECK(i == 3); /* the first of the tied minima */
  cmx_array_release(r);
  cmx_array_release(a);
  /* a long column scan (axis 0 of a wide matrix) with ties and NaN */
  int64_t sh[2] = {300, 1000};
  float* big = malloc(300 * 1000 * sizeof(float));
  for (int r0 = 0; r0 < 300; r0++)
    for (int c = 0; c < 1000; c++)
      big[r0 * 1000 + c] = (float)((r0 * 7 + c) % 13);
  big[250 * 1000 + 17] = NAN;
  big[260 * 1000 + 17] = NAN;
  OK(cmx_array_from_data(&a, big, sh, 2, CMX_FLOAT32));
  int ax = 0;
  OK(cmx_argmax(&r, a, &ax, false, S));
  uint32_t got[1000];
  OK(cmx_array_copy_to(r, got, sizeof got));
  bool ok = true;
  for (int c = 0; c < 1000; c++) {
    int best = 0;
    for (int r0 = 1; r0 < 300; r0++) {
      float b = big[best * 1000 + c], x = big[r0 * 1000 + c];
      if (b != b) break;
      if (x != x || x > b) best = r0;
    }
    ok = ok && got[c] == (uint32_t)best;
  }
  CHECK(ok && got[17] == 250);
  free(big);
  cmx_array_release(r);
  cmx_array_release(a);
}

/* The column kernels keep their running values in a scratch block placed
 * relative to the input modulo 4 KB (4K aliasing): columns of a wide slice
 * starting at many offsets, the widest block (4096 columns) and a narrow
 * remainder, for the largest lane types (argmax/argmin over float64, mean
 * of int32 in double lanes) and float32 sums; exact against loops. */
static void test_col_placement(void) {
  enum { R = 3, C0 = 5200, W = 4100 };
  double* vd = malloc(sizeof(double) * R * C0);
  int32_t* vi = malloc(sizeof(int32_t) * R * C0);
  float* vf = malloc(sizeof(float) * R * C0);
  for (int i = 0; i < R * C0; i++) {
    vi[i] = (int32_t)((i * 37 + 11) % 19) - 9; /* ties along columns */
    vd[i] = vi[i];
    vf[i] = (float)vi[i];
  }
  int64_t sh[2] = {R, C0};
  cmx_array ad, ai, af;
  OK(cmx_array_from_data(&ad, vd, sh, 2, CMX_FLOAT64));
  OK(cmx_array_from_data(&ai, vi, sh, 2, CMX_INT32));
  OK(cmx_array_from_data(&af, vf, sh, 2, CMX_FLOAT32));
  const int64_t offs[] = {0, 1, 3, 16, 255, 256, 511, 512, 700, 1023, 1100};
  uint32_t* gi = malloc(sizeof(uint32_t) * W);
  float* gf = malloc(sizeof(float) * W);
  for (size_t t = 0; t < sizeof offs / sizeof offs[0]; t++) {
    int64_t st[2] = {0, offs[t]}, sp[2] = {R, offs[t] + W}, one[2] = {1, 1};
    int ax = 0;
    cmx_array xd, xi, xf, r;
    OK(cmx_slice(&xd, ad, st, sp, one, S));
    OK(cmx_slice(&xi, ai, st, sp, one, S));
    OK(cmx_slice(&xf, af, st, sp, one, S));
    bool ok = true;
    for (int is_max = 0; is_max < 2; is_max++) {
      OK(is_max ? cmx_argmax(&r, xd, &ax, false, S)
                : cmx_argmin(&r, xd, &ax, false, S));
      OK(cmx_array_copy_to(r, gi, sizeof(uint32_t) * W));
      cmx_array_release(r);
      for (int c = 0; c < W; c++) {
        const double* col = vd + offs[t] + c;
        int best = 0;
        for (int i = 1; i < R; i++)
          if (is_max ? col[i * C0] > col[best * C0]
                     : col[i * C0] < col[best * C0])
            best = i;
        ok = ok && gi[c] == (uint32_t)best;
      }
    }
    CHECK_MSG(ok, "argmin/argmax float64 columns at offset %lld",
              (long long)offs[t]);
    OK(cmx_mean(&r, xi, &ax, 1, false, S));
    OK(cmx_array_copy_to(r, gf, sizeof(float) * W));
    cmx_array_release(r);
    ok = true;
    for (int c = 0; c < W; c++) {
      double sum = 0;
      for (int i = 0; i < R; i++) sum += vi[i * C0 + offs[t] + c];
      ok = ok && gf[c] == (float)(sum / R);
    }
    CHECK_MSG(ok, "mean int32 columns at offset %lld", (long long)offs[t]);
    OK(cmx_sum(&r, xf, &ax, 1, false, S));
    OK(cmx_array_copy_to(r, gf, sizeof(float) * W));
    cmx_array_release(r);
    ok = true;
    for (int c = 0; c < W; c++) {
      float sum = 0;
      for (int i = 0; i < R; i++) sum += vf[i * C0 + offs[t] + c];
      ok = ok && gf[c] == sum;
    }
    CHECK_MSG(ok, "sum float32 columns at offset %lld", (long long)offs[t]);
    cmx_array_release(xd);
    cmx_array_release(xi);
    cmx_array_release(xf);
  }
  free(gi);
  free(gf);
  free(vd);
  free(vi);
  free(vf);
  cmx_array_release(ad);
  cmx_array_release(ai);
  cmx_array_release(af);
}

/* ---------------- NaN, empties, dtypes, errors ---------------- */

static double item(cmx_array a) {
  double d = -12345;
  OK(cmx_array_item_double(a, &d));
  return d;
}

static void test_nan_and_empty(void) {
  float v[5] = {1, NAN, 3, -INFINITY, 2};
  int64_t n = 5;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_max(&r, a, NULL, 0, false, S));
  CHECK(isnan(item(r)));
  cmx_array_release(r);
  OK(cmx_min(&r, a, NULL, 0, false, S));
  CHECK(isnan(item(r)));
  cmx_array_release(r);
  OK(cmx_any(&r, a, NULL, 0, false, S)); /* NaN is nonzero */
  CHECK(item(r) == 1);
  cmx_array_release(r);
  cmx_array_release(a);
  /* empty reductions */
  int64_t z = 0;
  OK(cmx_array_from_data(&a, v, &z, 1, CMX_FLOAT32));
  OK(cmx_sum(&r, a, NULL, 0, false, S));
  CHECK(item(r) == 0 && cmx_array_ndim(r) == 0);
  cmx_array_release(r);
  OK(cmx_prod(&r, a, NULL, 0, false, S));
  CHECK(item(r) == 1);
  cmx_array_release(r);
  OK(cmx_all(&r, a, NULL, 0, false, S));
  CHECK(item(r) == 1 && cmx_array_dtype(r) == CMX_BOOL);
  cmx_array_release(r);
  OK(cmx_any(&r, a, NULL, 0, false, S));
  CHECK(item(r) == 0);
  cmx_array_release(r);
  OK(cmx_mean(&r, a, NULL, 0, false, S));
  CHECK(isnan(item(r)));
  cmx_array_release(r);
  OK(cmx_var(&r, a, NULL, 0, false, 0, S));
  CHECK(isnan(item(r)));
  cmx_array_release(r);
  FAILS(cmx_max(&r, a, NULL, 0, false, S), CMX_ERR_VALUE,
        "[max] Cannot max reduce zero size array");
  FAILS(cmx_min(&r, a, NULL, 0, false, S), CMX_ERR_VALUE, "[min]");
  FAILS(cmx_argmax(&r, a, NULL, false, S), CMX_ERR_VALUE, "[argmax]");
  FAILS(cmx_logsumexp(&r, a, NULL, 0, false, S), CMX_ERR_VALUE,
        "[logsumexp] Received empty array");
  cmx_array_release(a);
  /* (3, 0): min over the non-empty axis 0 is an empty result, not an error */
  int64_t sh[2] = {3, 0};
  OK(cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32));
  int ax0 = 0, ax1 = 1;
  OK(cmx_min(&r, a, &ax0, 1, false, S));
  CHECK(cmx_array_size(r) == 0 && cmx_array_ndim(r) == 1);
  cmx_array_release(r);
  FAILS(cmx_min(&r, a, &ax1, 1, false, S), CMX_ERR_VALUE, "zero size");
  OK(cmx_sum(&r, a, &ax1, 1, true, S));
  float s3[3];
  OK(cmx_array_copy_to(r, s3, sizeof s3));
  CHECK(s3[0] == 0 && s3[1] == 0 && s3[2] == 0 && cmx_array_ndim(r) == 2);
  cmx_array_release(r);
  cmx_array_release(a);
}

static void test_dtypes_and_noop(void) {
  int8_t v[4] = {100, 100, 100, -7};
  int64_t n = 4;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_INT8));
  OK(cmx_sum(&r, a, NULL, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_INT32 && item(r) == 293); /* no int8 wrap */
  cmx_array_release(r);
  /* naxes 0 with non-NULL axes: no reduction, dtype rules still apply */
  int dummy = 0;
  OK(cmx_sum(&r, a, &dummy, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_INT32 && cmx_array_ndim(r) == 1 &&
        cmx_array_dim(r, 0) == 4);
  int32_t back[4];
  OK(cmx_array_copy_to(r, back, sizeof back));
  CHECK(back[0] == 100 && back[3] == -7);
  cmx_array_release(r);
  OK(cmx_max(&r, a, &dummy, 0, true, S));
  CHECK(cmx_array_dtype(r) == CMX_INT8 && cmx_array_size(r) == 4);
  cmx_array_release(r);
  OK(cmx_mean(&r, a, &dummy, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32 && cmx_array_size(r) == 4);
  cmx_array_release(r);
  OK(cmx_all(&r, a, &dummy, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_BOOL);
  cmx_array_release(r);
  OK(cmx_mean(&r, a, NULL, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32 && item(r) == 73.25);
  cmx_array_release(r);
  cmx_array_release(a);
  /* a weak scalar reduces to a strongly typed array */
  OK(cmx_array_weak_int(&a, 7));
  OK(cmx_sum(&r, a, NULL, 0, false, S));
  CHECK(!cmx_array_is_weak(r) && cmx_array_dtype(r) == CMX_INT32 &&
        item(r) == 7);
  cmx_array_release(r);
  OK(cmx_max(&r, a, NULL, 0, false, S));
  CHECK(!cmx_array_is_weak(r) && item(r) == 7);
  cmx_array_release(r);
  OK(cmx_softmax(&r, a, NULL, 0, false, S));
  CHECK(!cmx_array_is_weak(r) && cmx_array_dtype(r) == CMX_FLOAT32 &&
        item(r) == 1);
  cmx_array_release(r);
  cmx_array_release(a);
  /* 0-d */
  OK(cmx_array_from_double(&a, 2.5, CMX_FLOAT16));
  OK(cmx_sum(&r, a, NULL, 0, true, S));
  CHECK(cmx_array_ndim(r) == 0 && item(r) == 2.5 &&
        cmx_array_dtype(r) == CMX_FLOAT16);
  cmx_array_release(r);
  OK(cmx_argmax(&r, a, NULL, false, S));
  CHECK(cmx_array_ndim(r) == 0 && item(r) == 0);
  cmx_array_release(r);
  cmx_array_release(a);
}

static void test_errors(void) {
  float v[6] = {0};
  int64_t sh[2] = {2, 3};
  cmx_array a, r = (cmx_array)1;
  OK(cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32));
  int dup[2] = {1, -1}, bad[1] = {2}, neg[1] = {-3};
  FAILS(cmx_sum(&r, a, dup, 2, false, S), CMX_ERR_VALUE,
        "[sum] received duplicate axis 1");
  CHECK(r == NULL);
  FAILS(cmx_sum(&r, a, bad, 1, false, S), CMX_ERR_INDEX,
        "[sum] axis 2 is out of bounds for array of dimension 2");
  FAILS(cmx_mean(&r, a, neg, 1, false, S), CMX_ERR_INDEX, "[mean] axis -3");
  FAILS(cmx_var(&r, a, bad, 1, false, 0, S), CMX_ERR_INDEX, "[var]");
  FAILS(cmx_logsumexp(&r, a, dup, 2, false, S), CMX_ERR_VALUE, "[logsumexp]");
  FAILS(cmx_softmax(&r, a, bad, 1, false, S), CMX_ERR_INDEX, "[softmax]");
  FAILS(cmx_argmax(&r, a, bad, false, S), CMX_ERR_INDEX, "[argmax] axis 2");
  FAILS(cmx_all(&r, NULL, NULL, 0, false, S), CMX_ERR_VALUE, "[all]");
  FAILS(cmx_sum(NULL, a, NULL, 0, false, S), CMX_ERR_VALUE, "[sum]");
  cmx_array c;
  OK(cmx_array_from_complex(&c, 1, 2));
  OK(cmx_logsumexp(&r, c, NULL, 0, false, S)); /* complex: MLX computes it */
  CHECK(cmx_array_dtype(r) == CMX_COMPLEX64);
  cmx_array_release(r);
  FAILS(cmx_softmax(&r, c, NULL, 0, false, S), CMX_ERR_TYPE, "[softmax]");
  cmx_array_release(c);
  cmx_array_release(a);
}

static void test_logsumexp_special(void) {
  float v[2][3] = {{-INFINITY, -INFINITY, -INFINITY}, {1000, 1000, 1000}};
  int64_t sh[2] = {2, 3};
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32));
  int ax = 1;
  OK(cmx_logsumexp(&r, a, &ax, 1, false, S));
  float o[2];
  OK(cmx_array_copy_to(r, o, sizeof o));
  CHECK(o[0] == -INFINITY);
  CHECK(fabsf(o[1] - (1000 + logf(3))) < 1e-3f);
  cmx_array_release(r);
  cmx_array_release(a);
  float w[3] = {1, INFINITY, 2};
  int64_t n = 3;
  OK(cmx_array_from_data(&a, w, &n, 1, CMX_FLOAT32));
  OK(cmx_logsumexp(&r, a, NULL, 0, false, S));
  CHECK(item(r) == INFINITY);
  cmx_array_release(r);
  cmx_array_release(a);
  int32_t iv[3] = {1, 2, 3};
  OK(cmx_array_from_data(&a, iv, &n, 1, CMX_INT32));
  OK(cmx_logsumexp(&r, a, NULL, 0, false, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32 &&
        fabs(item(r) - log(exp(1) + exp(2) + exp(3))) < 1e-5);
  cmx_array_release(r);
  cmx_array_release(a);
}

/* ---------------- softmax ---------------- */

static void ref_softmax(const h_tensor* x, unsigned mask, h_tensor* want) {
  int64_t no = 1;
  for (int d = 0; d < x->ndim; d++)
    if (!(mask >> d & 1)) no *= x->shape[d];
  int64_t* map = out_map(x, mask);
  double* m = malloc((size_t)(no + 1) * sizeof(double));
  double* s = calloc((size_t)(no + 1), sizeof(double));
  for (int64_t o = 0; o < no; o++) m[o] = -INFINITY;
  for (int64_t i = 0; i < x->size; i++)
    if (x->re[i] > m[map[i]] || x->re[i] != x->re[i]) m[map[i]] = x->re[i];
  for (int64_t i = 0; i < x->size; i++) s[map[i]] += exp(x->re[i] - m[map[i]]);
  for (int64_t i = 0; i < x->size; i++)
    want->re[i] =
        h_round_to(exp(x->re[i] - m[map[i]]) / s[map[i]], want->dtype);
  free(m);
  free(s);
  free(map);
}

static void test_softmax(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32,
                                  CMX_FLOAT64, CMX_INT32,    CMX_BOOL};
  int fails = 0;
  for (int di = 0; di < 6 && fails < 10; di++) {
    cmx_dtype dt = dts[di], odt = cmx_dtype_is_inexact(dt) ? dt : CMX_FLOAT32;
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      h_tensor x = h_random(sh->dims, sh->ndim, dt, -5, 5, (uint64_t)si + 11);
      unsigned nmask = 1u << sh->ndim;
      for (int l = 0; l < L_NUM; l++) {
        if (!layout_ok(l, sh->ndim, sh->dims) || l == L_BCAST) continue;
        for (unsigned mask = 0; mask <= nmask; mask++) {
          bool all = mask == nmask;
          unsigned mk = all ? nmask - 1 : mask;
          int axes[CMX_MAX_NDIM], n = 0;
          for (int d = 0; d < sh->ndim; d++)
            if (mk >> d & 1) axes[n++] = d;
          h_tensor want = h_alloc(sh->dims, sh->ndim, odt);
          ref_softmax(&x, mk, &want);
          cmx_array a = make_array(&x, l), r = NULL;
          char what[200], shs[100];
          snprintf(what, sizeof what, "softmax %s %s %s mask=%x",
                   cmx_dtype_name(dt),
                   cmx__shape_str(sh->dims, sh->ndim, shs, sizeof shs),
                   layout_name(l), mk);
          cmx_status st =
              cmx_softmax(&r, a, all ? NULL : axes, n, (mask & 1) != 0, S);
          bool ok = st == CMX_OK;
          if (ok) {
            h_tensor got = h_read(r);
            double t = 2 * h_tol(odt);
            ok = h_close(&got, &want, t, t * 1e-2, what);
            h_free(&got);
          } else {
            fprintf(stderr, "FAIL %s: %s\n", what, cmx_last_error());
          }
          CHECK(ok);
          fails += !ok;
          h_free(&want);
          cmx_array_release(a);
          cmx_array_release(r);
        }
      }
      h_free(&x);
    }
  }
  /* stability and an all -inf row */
  float v[2][3] = {{1000, 1001, 1002}, {-INFINITY, -INFINITY, -INFINITY}};
  int64_t sh[2] = {2, 3};
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, sh, 2, CMX_FLOAT32));
  int ax = -1;
  OK(cmx_softmax(&r, a, &ax, 1, false, S));
  float o[6];
  OK(cmx_array_copy_to(r, o, sizeof o));
  double e0 = 1 / (1 + exp(1) + exp(2));
  CHECK(fabs(o[0] - e0) < 1e-6 && fabs(o[2] - e0 * exp(2)) < 1e-6);
  CHECK(isnan(o[3]) && isnan(o[5]));
  cmx_array_release(r);
  cmx_array_release(a);
  /* an input only the softmax holds: its buffer is donated, the rows are
   * computed in place */
  for (int di = 0; di < 2; di++) {
    cmx_dtype dt = di ? CMX_FLOAT16 : CMX_FLOAT32;
    int64_t shd[2] = {5, 300};
    h_tensor x = h_random(shd, 2, dt, -5, 5, 21 + di);
    h_tensor want = h_alloc(shd, 2, dt);
    ref_softmax(&x, 2, &want);
    x.dtype = CMX_FLOAT64; /* the same values, converted by astype below */
    cmx_array x64 = h_array(&x, H_CONTIG), t, sm;
    OK(cmx_astype(&t, x64, dt, S));
    int last = 1;
    OK(cmx_softmax(&sm, t, &last, 1, false, S));
    cmx_array_release(t); /* now held only by the softmax node */
    h_tensor got = h_read(sm);
    CHECK(h_close(&got, &want, 2 * h_tol(dt), 1e-6, "softmax donated"));
    h_free(&got);
    h_free(&want);
    h_free(&x);
    cmx_array_release(x64);
    cmx_array_release(sm);
  }
  /* a large softmax over rows that go through the parallel path */
  int64_t big[2] = {2000, 700};
  h_tensor x = h_random(big, 2, CMX_FLOAT32, -10, 10, 5);
  h_tensor want = h_alloc(big, 2, CMX_FLOAT32);
  ref_softmax(&x, 1, &want); /* over axis 0 */
  a = h_array(&x, H_TRANSPOSED);
  int ax0 = 0;
  OK(cmx_softmax(&r, a, &ax0, 1, true, S));
  h_tensor got = h_read(r);
  CHECK(h_close(&got, &want, 1e-5, 1e-9, "softmax big axis 0"));
  h_free(&got);
  h_free(&want);
  h_free(&x);
  cmx_array_release(r);
  cmx_array_release(a);
}

static void test_var_special(void) {
  float v[4] = {1, 2, 3, 4};
  int64_t n = 4;
  cmx_array a, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  OK(cmx_var(&r, a, NULL, 0, false, 1, S));
  CHECK(fabs(item(r) - 5.0 / 3.0) < 1e-6);
  cmx_array_release(r);
  OK(cmx_std(&r, a, NULL, 0, false, 0, S));
  CHECK(fabs(item(r) - sqrt(1.25)) < 1e-6);
  cmx_array_release(r);
  OK(cmx_var(&r, a, NULL, 0, false, 4, S)); /* n <= ddof: inf */
  CHECK(item(r) == INFINITY);
  cmx_array_release(r);
  cmx_array_release(a);
  OK(cmx_array_from_double(&a, 3, CMX_FLOAT32));
  OK(cmx_var(&r, a, NULL, 0, false, 1, S)); /* 0 / 0 */
  CHECK(isnan(item(r)));
  cmx_array_release(r);
  cmx_array_release(a);
  /* the two-pass algorithm keeps precision with a large offset */
  float w[3] = {1e4f + 1, 1e4f + 2, 1e4f + 3};
  n = 3;
  OK(cmx_array_from_data(&a, w, &n, 1, CMX_FLOAT32));
  OK(cmx_var(&r, a, NULL, 0, false, 0, S));
  CHECK(fabs(item(r) - 2.0 / 3.0) < 1e-6);
  cmx_array_release(r);
  cmx_array_release(a);
}

int main(void) {
  RUN(test_sum);
  RUN(test_prod);
  RUN(test_min);
  RUN(test_max);
  RUN(test_mean);
  RUN(test_all);
  RUN(test_any);
  RUN(test_logsumexp);
  RUN(test_var);
  RUN(test_std);
  if (h_shard_main()) { /* the tests outside the table groups */
    RUN(test_large);
    RUN(test_argreduce);
    RUN(test_arg_nan_ties);
    RUN(test_col_placement);
    RUN(test_nan_and_empty);
    RUN(test_dtypes_and_noop);
    RUN(test_errors);
    RUN(test_logsumexp_special);
    RUN(test_softmax);
    RUN(test_var_special);
  }
  return test_summary("test_reduce");
}
