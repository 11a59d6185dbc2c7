/* Transform rules of the sort and scan primitives: Sort, ArgSort,
 * Partition, ArgPartition, SearchSorted, Scan (cumsum, cumprod, cummax,
 * cummin, logcumsumexp; reverse, exclusive).
 *
 * Gradients against central finite differences in float64 (and jvp
 * against vjp) on several shapes and axes, transposed inputs included;
 * MLX's conventions on explicit values (sort's cotangent follows each
 * element, cummax/cummin ties go to the latest element in scan order,
 * cumprod with zeros); vmap against a loop for each input axis; second
 * order for the scans and sort; rule dtypes for float32/float16. */
// clang-format off
#include "test.h" /* first: tcheck.h uses it */
#include "tcheck.h"
// clang-format on

/* the rules themselves are called directly to check their dtypes */
#include "ops/ops_internal.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

/* ---------------- inputs ---------------- */

/* A float64 array of distinct values in about [-1.2, 1.2] (no ties),
 * built transposed (an evaluated strided view) when `transposed`. */
static cmx_array input(const int64_t* shape, int nd, int seed,
                       bool transposed) {
  int64_t n = 1, rs[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) n *= shape[d];
  double* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = 0.9 * sin(1.37 * (double)i + 0.71 * seed) + 0.013 * (double)i;
  cmx_array a = NULL;
  if (!transposed) {
    cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT64);
  } else {
    int perm[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
      rs[d] = shape[nd - 1 - d];
      perm[d] = nd - 1 - d;
    }
    cmx_array b = NULL;
    cmx_array_from_data(&b, v, rs, nd, CMX_FLOAT64);
    cmx_transpose(&a, b, perm, nd, S);
    cmx_array_eval(a);
    cmx_array_release(b);
  }
  free(v);
  return a;
}

/* a mapped by scale * a + shift (products then stay away from zero). */
static cmx_array affine(cmx_array a, double scale, double shift) {
  cmx_array sc = NULL, sh = NULL, m = NULL, r = NULL;
  cmx_array_from_double(&sc, scale, CMX_FLOAT64);
  cmx_array_from_double(&sh, shift, CMX_FLOAT64);
  cmx_multiply(&m, a, sc, S);
  cmx_add(&r, m, sh, S);
  cmx_array_eval(r);
  cmx_array_release(sc);
  cmx_array_release(sh);
  cmx_array_release(m);
  return r;
}

static cmx_array from(const double* v, const int64_t* shape, int nd,
                      cmx_dtype dt) {
  cmx_array a = NULL, b = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT64);
  if (dt == CMX_FLOAT64) return a;
  cmx_astype(&b, a, dt, S);
  cmx_array_release(a);
  return b;
}

static bool values(cmx_array a, double* out, int64_t n) {
  cmx_array f = NULL, c = NULL;
  const double* p = NULL;
  bool ok = cmx_astype(&f, a, CMX_FLOAT64, S) == CMX_OK &&
            cmx_contiguous(&c, f, false, S) == CMX_OK &&
            cmx_array_size(c) == n &&
            cmx_array_data(c, (const void**)&p) == CMX_OK;
  if (ok) memcpy(out, p, (size_t)n * sizeof *out);
  cmx_array_release(f);
  cmx_array_release(c);
  return ok;
}

static bool near(const double* a, const double* b, int64_t n, double tol) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(a[i] - b[i]) <= tol * fmax(1.0, fabs(b[i])))) {
      fprintf(stderr, "  [%lld] %.12g vs %.12g\n", (long long)i, a[i], b[i]);
      return false;
    }
  return true;
}

/* ---------------- the ops under test ---------------- */

typedef enum {
  OP_SORT,
  OP_ARGSORT,
  OP_PARTITION,
  OP_ARGPARTITION,
  OP_SEARCHSORTED,
  OP_CUMSUM,
  OP_CUMPROD,
  OP_CUMMAX,
  OP_CUMMIN,
  OP_LOGCUMSUMEXP
} op_kind;

static const char* const op_names[] = {
    "sort",   "argsort", "partition", "argpartition", "searchsorted",
    "cumsum", "cumprod", "cummax",    "cummin",       "logcumsumexp"};

typedef struct {
  op_kind op;
  int axis;
  int kth;
  bool reverse, inclusive, right;
} sort_ctx;

/* While set, f_op maps infinities to +-1e300: the vmap checks cannot
 * compare infinite values, which exclusive scans start with. */
static bool g_clamp;

static cmx_status apply_op(const sort_ctx* c, const cmx_array* in,
                           cmx_array* out) {
  const int* ax = &c->axis;
  bool r = c->reverse, i = c->inclusive;
  switch (c->op) {
    case OP_SORT:
      return cmx_sort(out, in[0], ax, S);
    case OP_ARGSORT:
      return cmx_argsort(out, in[0], ax, S);
    case OP_PARTITION:
      return cmx_partition(out, in[0], c->kth, ax, S);
    case OP_ARGPARTITION:
      return cmx_argpartition(out, in[0], c->kth, ax, S);
    case OP_SEARCHSORTED:
      return cmx_searchsorted(out, in[0], in[1], c->right, S);
    case OP_CUMSUM:
      return cmx_cumsum(out, in[0], ax, r, i, S);
    case OP_CUMPROD:
      return cmx_cumprod(out, in[0], ax, r, i, S);
    case OP_CUMMAX:
      return cmx_cummax(out, in[0], ax, r, i, S);
    case OP_CUMMIN:
      return cmx_cummin(out, in[0], ax, r, i, S);
    case OP_LOGCUMSUMEXP:
      return cmx_logcumsumexp(out, in[0], ax, r, i, S);
  }
  return CMX_ERR_VALUE;
}

static cmx_status f_op(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                       int* nout) {
  (void)n;
  const sort_ctx* c = ctx;
  *nout = 1;
  cmx_status st = apply_op(c, in, &outs[0]);
  if (st != CMX_OK || !g_clamp) return st;
  cmx_array lo = NULL, hi = NULL, a = NULL, b = outs[0];
  cmx_array_from_double(&lo, -1e300, CMX_FLOAT64);
  cmx_array_from_double(&hi, 1e300, CMX_FLOAT64);
  st = cmx_maximum(&a, b, lo, S);
  if (st == CMX_OK) st = cmx_minimum(&outs[0], a, hi, S);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(lo);
  cmx_array_release(hi);
  return st;
}

/* sum(w * op(x)) with w = in[1], for cmx_value_and_grad. */
static cmx_status f_weighted(void* ctx, const cmx_array* in, int n,
                             cmx_array** out, int* nout) {
  (void)n;
  cmx_array y = NULL, m = NULL, s = NULL;
  cmx_status st = apply_op(ctx, in, &y);
  if (st == CMX_OK) st = cmx_multiply(&m, y, in[1], S);
  if (st == CMX_OK) st = cmx_sum(&s, m, NULL, 0, false, S);
  cmx_array_release(y);
  cmx_array_release(m);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof **out);
  (*out)[0] = s;
  *nout = 1;
  return CMX_OK;
}

/* The gradient of sum(w * op(x)) in x, as a function of (x, w). */
static cmx_status f_grad(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  cmx_closure f = {f_weighted, ctx};
  int arg = 0;
  *nout = 1;
  return cmx_value_and_grad(f, in, n, &arg, 1, NULL, NULL, &outs[0]);
}

static void describe(const sort_ctx* c, const char* what, char* buf, size_t n) {
  snprintf(buf, n, "%s(axis=%d, kth=%d%s%s%s) %s", op_names[c->op], c->axis,
           c->kth, c->reverse ? ", reverse" : "",
           c->inclusive ? "" : ", exclusive", c->right ? ", right" : "", what);
}

/* vjp of op(x) with the cotangent u: the gradient's values. */
static bool grad_values(const sort_ctx* c, cmx_array x, const double* u,
                        double* out, int64_t n) {
  cmx_closure f = {tc_call, &(tc_closure){f_op, (void*)c}};
  cmx_array y = NULL, cot = NULL, g = NULL, in[2] = {x, NULL};
  bool ok = apply_op(c, in, &y) == CMX_OK &&
            cmx_array_from_data(&cot, u, cmx_array_shape(y), cmx_array_ndim(y),
                                CMX_FLOAT64) == CMX_OK &&
            cmx_vjp(f, &x, 1, &cot, 1, NULL, NULL, &g) == CMX_OK &&
            values(g, out, n);
  if (!ok) fprintf(stderr, "  %s\n", cmx_last_error());
  cmx_array_release(y);
  cmx_array_release(cot);
  cmx_array_release(g);
  return ok;
}

/* ---------------- sort and partition ---------------- */

typedef struct {
  int nd;
  int64_t shape[3];
  int axis;
} axis_case;

static const axis_case kAxes[] = {
    {1, {7}, 0},       {2, {3, 5}, 0},     {2, {3, 5}, 1},    {2, {3, 5}, -1},
    {3, {2, 3, 4}, 1}, {3, {2, 3, 4}, -3}, {3, {2, 3, 4}, 2},
};

static void test_sort_partition_grads(void) {
  for (size_t k = 0; k < sizeof kAxes / sizeof *kAxes; k++) {
    const axis_case* ac = &kAxes[k];
    for (int t = 0; t < 2; t++) {
      cmx_array x = input(ac->shape, ac->nd, (int)k, t == 1);
      int n = (int)ac->shape[ac->axis < 0 ? ac->axis + ac->nd : ac->axis];
      char name[128];
      sort_ctx c = {OP_SORT, ac->axis, 0, false, true, false};
      describe(&c, t ? "grad, transposed" : "grad", name, sizeof name);
      tc_check_grad(name, f_op, &c, &x, 1, 1e-6);
      int kths[3] = {0, n / 2, -1};
      for (int j = 0; j < 3; j++) {
        sort_ctx pc = {OP_PARTITION, ac->axis, kths[j], false, true, false};
        describe(&pc, t ? "grad, transposed" : "grad", name, sizeof name);
        tc_check_grad(name, f_op, &pc, &x, 1, 1e-6);
      }
      cmx_array_release(x);
    }
  }
}

/* With ties each element keeps its own cotangent (argsort is stable). */
static void test_sort_ties(void) {
  int64_t s5[1] = {5};
  double x[5] = {2, 1, 2, -3, 1}, u[5] = {10, 20, 30, 40, 50}, g[5];
  cmx_array a = from(x, s5, 1, CMX_FLOAT64);
  sort_ctx c = {OP_SORT, 0, 0, false, true, false};
  /* sorted: -3 (3), 1 (1), 1 (4), 2 (0), 2 (2) */
  CHECK(grad_values(&c, a, u, g, 5) &&
        near(g, (double[]){40, 20, 50, 10, 30}, 5, 0));
  /* partition around kth 2: whatever the kernel's arrangement, the
   * elements of each value get the cotangents of the outputs holding
   * that value (one each: checked by finite differences elsewhere) */
  sort_ctx p = {OP_PARTITION, 0, 2, false, true, false};
  cmx_array y = NULL, idx = NULL;
  OK(cmx_partition(&y, a, 2, &c.axis, S));
  double yv[5], gp[5];
  CHECK(values(y, yv, 5) && grad_values(&p, a, u, gp, 5));
  for (int i = 0; i < 5; i++) {
    double want = 0, got = 0;
    for (int j = 0; j < 5; j++) {
      if (yv[j] == x[i]) want += u[j];
      if (x[j] == x[i]) got += gp[j];
    }
    CHECK_MSG(fabs(got - want) < 1e-12, "partition cotangent of value %g",
              x[i]);
  }
  cmx_array_release(y);
  cmx_array_release(idx);
  cmx_array_release(a);
}

/* No gradient: argsort, argpartition, searchsorted, integer inputs. */
static void test_no_gradient(void) {
  int64_t sh[2] = {3, 5}, s6[1] = {6}, s23[2] = {2, 3};
  cmx_array x = input(sh, 2, 1, false);
  static const op_kind idx_ops[] = {OP_ARGSORT, OP_ARGPARTITION};
  for (int k = 0; k < 2; k++) {
    sort_ctx c = {idx_ops[k], 1, 2, false, true, false};
    char name[128];
    describe(&c, "zero gradient", name, sizeof name);
    double g[15], u[15];
    for (int i = 0; i < 15; i++) u[i] = i + 1;
    CHECK_MSG(grad_values(&c, x, u, g, 15) && near(g, (double[15]){0}, 15, 0),
              "%s", name);
    tc_check_grad(name, f_op, &c, &x, 1, 1e-6);
  }
  double sv[6] = {-1, -0.5, 0, 0.25, 1, 2}, vv[6] = {-2, 0.1, 0.3, 1.5, 3, 0.6};
  cmx_array seq = from(sv, s6, 1, CMX_FLOAT64),
            val = from(vv, s23, 2, CMX_FLOAT64);
  cmx_array sx[2] = {seq, val};
  for (int right = 0; right < 2; right++) {
    sort_ctx c = {OP_SEARCHSORTED, 0, 0, false, true, right == 1};
    tc_check_grad(right ? "searchsorted(right) zero gradient"
                        : "searchsorted zero gradient",
                  f_op, &c, sx, 2, 1e-6);
    cmx_array g[2] = {0}, y = NULL, ones = NULL;
    cmx_closure f = {tc_call, &(tc_closure){f_op, &c}};
    OK(apply_op(&c, sx, &y));
    cmx_ones_like(&ones, y, S);
    OK(cmx_vjp(f, sx, 2, &ones, 1, NULL, NULL, g));
    double g0[6], g1[6];
    CHECK(values(g[0], g0, 6) && near(g0, (double[6]){0}, 6, 0) &&
          values(g[1], g1, 6) && near(g1, (double[6]){0}, 6, 0));
    cmx_array_release(g[0]);
    cmx_array_release(g[1]);
    cmx_array_release(y);
    cmx_array_release(ones);
  }
  /* integer inputs */
  cmx_array xi = NULL, xs = affine(x, 10, 0);
  cmx_astype(&xi, xs, CMX_INT32, S);
  static const op_kind int_ops[] = {OP_SORT,    OP_PARTITION, OP_CUMSUM,
                                    OP_CUMPROD, OP_CUMMAX,    OP_CUMMIN};
  for (size_t k = 0; k < sizeof int_ops / sizeof *int_ops; k++) {
    sort_ctx c = {int_ops[k], 1, 2, false, true, false};
    char name[128];
    describe(&c, "of int32: zero gradient", name, sizeof name);
    double g[15], u[15];
    for (int i = 0; i < 15; i++) u[i] = 1;
    CHECK_MSG(grad_values(&c, xi, u, g, 15) && near(g, (double[15]){0}, 15, 0),
              "%s", name);
    tc_check_grad(name, f_op, &c, &xi, 1, 1e-6);
  }
  cmx_array_release(xi);
  cmx_array_release(xs);
  cmx_array_release(seq);
  cmx_array_release(val);
  cmx_array_release(x);
}

/* ---------------- scans ---------------- */

/* tc_check_grad for outputs with infinite entries (exclusive scans start
 * with the identity, -inf or +inf): the cotangent is zero there, finite
 * differences skip them, and the tangent there must be zero. */
static void check_grad_finite(const char* name, sort_ctx* c, cmx_array x) {
  cmx_array y = NULL, in[2] = {x, NULL};
  OK(apply_op(c, in, &y));
  int64_t n = cmx_array_size(y);
  double *yv = malloc((size_t)n * sizeof *yv), *uv = malloc((size_t)n * 8),
         *pv = malloc((size_t)n * 8), *mv = malloc((size_t)n * 8),
         *jv = malloc((size_t)n * 8);
  cmx_array u0 = tc_random_like(y), v = tc_random_like(x), u = NULL;
  bool ok = values(y, yv, n) && values(u0, uv, n);
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(yv[i])) uv[i] = 0;
  cmx_array_from_data(&u, uv, cmx_array_shape(y), cmx_array_ndim(y),
                      CMX_FLOAT64);
  cmx_closure f = {tc_call, &(tc_closure){f_op, c}};
  cmx_array g = NULL, *o = NULL, *j = NULL;
  int no = 0;
  ok = ok && cmx_vjp(f, &x, 1, &u, 1, NULL, NULL, &g) == CMX_OK &&
       cmx_jvp(f, &x, 1, &v, &o, &j, &no) == CMX_OK && no == 1 &&
       values(j[0], jv, n);
  double lhs = ok ? tc_dot(g, v) : NAN, fd = 0, rhs = 0, h = 1e-6;
  for (int sgn = -1; ok && sgn <= 1; sgn += 2) {
    cmx_array hs = NULL, hv = NULL, xs = NULL, ys = NULL, xin[2] = {NULL};
    cmx_array_from_double(&hs, sgn * h, CMX_FLOAT64);
    cmx_multiply(&hv, v, hs, S);
    cmx_add(&xs, x, hv, S);
    xin[0] = xs;
    ok = apply_op(c, xin, &ys) == CMX_OK && values(ys, sgn > 0 ? pv : mv, n);
    cmx_array_release(hs);
    cmx_array_release(hv);
    cmx_array_release(xs);
    cmx_array_release(ys);
  }
  bool zero_tangents = true;
  for (int64_t i = 0; ok && i < n; i++) {
    if (!isfinite(yv[i])) {
      zero_tangents &= jv[i] == 0;
      continue;
    }
    fd += uv[i] * (pv[i] - mv[i]) / (2 * h);
    rhs += uv[i] * jv[i];
  }
  double sc = fmax(1.0, fabs(lhs));
  CHECK_MSG(ok && fabs(lhs - fd) <= 1e-6 * sc && fabs(lhs - rhs) <= 1e-9 * sc &&
                zero_tangents,
            "%s: vjp.v = %.12g, finite differences %.12g, u.jvp = %.12g%s",
            name, lhs, fd, rhs, zero_tangents ? "" : ", nonzero tangents");
  cmx_arrays_free(o, no);
  cmx_arrays_free(j, no);
  cmx_array_release(g);
  cmx_array_release(u);
  cmx_array_release(u0);
  cmx_array_release(v);
  cmx_array_release(y);
  free(yv);
  free(uv);
  free(pv);
  free(mv);
  free(jv);
}

static void test_scan_grads(void) {
  static const op_kind ops[] = {OP_CUMSUM, OP_CUMPROD, OP_CUMMAX, OP_CUMMIN,
                                OP_LOGCUMSUMEXP};
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (size_t k = 0; k < sizeof kAxes / sizeof *kAxes; k++)
      for (int m = 0; m < 4; m++) {
        const axis_case* ac = &kAxes[k];
        sort_ctx c = {ops[o], ac->axis, 0, (m & 1) != 0, (m & 2) == 0, false};
        bool transposed = (k + (size_t)m) % 2 == 1;
        cmx_array x0 = input(ac->shape, ac->nd, (int)(k + o), transposed);
        /* cumprod: values in [0.4, 1.6] or their negatives, so products
         * neither vanish nor blow up */
        cmx_array x =
            ops[o] == OP_CUMPROD ? affine(x0, 0.5, 1.0) : cmx_array_retain(x0);
        char name[128];
        describe(&c, transposed ? "grad, transposed" : "grad", name,
                 sizeof name);
        if (!c.inclusive && ops[o] != OP_CUMSUM && ops[o] != OP_CUMPROD)
          check_grad_finite(name, &c, x);
        else
          tc_check_grad(name, f_op, &c, &x, 1, 1e-6);
        cmx_array_release(x);
        cmx_array_release(x0);
      }
}

/* cumprod with zeros (first position, middle, two zeros), every mode. */
static void test_cumprod_zeros(void) {
  int64_t s5[1] = {5}, s25[2] = {2, 5};
  static const double rows[4][5] = {{2, 0, 3, 0.5, 4},
                                    {0, 2, 3, 0.5, 1.5},
                                    {1.5, 0, 2, 0, 3},
                                    {2, 3, 0.5, 1.5, 0}};
  for (int r = 0; r < 4; r++)
    for (int m = 0; m < 4; m++) {
      sort_ctx c = {OP_CUMPROD, 0, 0, (m & 1) != 0, (m & 2) == 0, false};
      cmx_array x = from(rows[r], s5, 1, CMX_FLOAT64);
      char name[128], what[48];
      snprintf(what, sizeof what, "grad with zeros (row %d)", r);
      describe(&c, what, name, sizeof name);
      tc_check_grad(name, f_op, &c, &x, 1, 1e-6);
      cmx_array_release(x);
    }
  /* explicit values: x = [2, 0, 3], u = ones: y = [2, 0, 0];
   * dy0 = [1,0,0], dy1 = [0,2,0], dy2 = [0,6,0] -> [1, 8, 0] */
  double x3[3] = {2, 0, 3}, g[10];
  int64_t s3[1] = {3};
  cmx_array x = from(x3, s3, 1, CMX_FLOAT64);
  sort_ctx c = {OP_CUMPROD, 0, 0, false, true, false};
  CHECK(grad_values(&c, x, (double[]){1, 1, 1}, g, 3) &&
        near(g, (double[]){1, 8, 0}, 3, 0));
  /* exclusive: y = [1, 2, 0]; dy1/dx0 = 1, dy2 = x0 * x1 -> d/dx1 = 2 */
  sort_ctx ce = {OP_CUMPROD, 0, 0, false, false, false};
  CHECK(grad_values(&ce, x, (double[]){1, 1, 1}, g, 3) &&
        near(g, (double[]){1, 2, 0}, 3, 0));
  cmx_array_release(x);
  double x10[10] = {2, 0, 3, 0.5, 4, 0, 2, 3, 0.5, 1.5};
  x = from(x10, s25, 2, CMX_FLOAT64);
  sort_ctx c1 = {OP_CUMPROD, 1, 0, true, true, false};
  tc_check_grad("cumprod(axis=1, reverse) with zeros, 2-d", f_op, &c1, &x, 1,
                1e-6);
  cmx_array_release(x);
}

/* cummax/cummin ties: the latest element in scan order gets the
 * cotangent; exclusive outputs pass theirs one step along. */
static void test_cummax_ties(void) {
  int64_t s5[1] = {5};
  double xv[5] = {1, 3, 2, 3, 0}, u[5] = {1, 10, 100, 1000, 10000}, g[5];
  cmx_array x = from(xv, s5, 1, CMX_FLOAT64);
  sort_ctx c = {OP_CUMMAX, 0, 0, false, true, false};
  CHECK(grad_values(&c, x, u, g, 5) &&
        near(g, (double[]){1, 110, 0, 11000, 0}, 5, 0));
  c.reverse = true;
  CHECK(grad_values(&c, x, u, g, 5) &&
        near(g, (double[]){0, 11, 0, 1100, 10000}, 5, 0));
  c.reverse = false;
  c.inclusive = false;
  CHECK(grad_values(&c, x, u, g, 5) &&
        near(g, (double[]){10, 1100, 0, 10000, 0}, 5, 0));
  c.reverse = true;
  /* reverse exclusive: y_i = max(x[i+1:]), y_4 empty; owners of the
   * reverse inclusive scan: [1, 1, 3, 3, 4]; y_i takes owner(i + 1) */
  CHECK(grad_values(&c, x, u, g, 5) &&
        near(g, (double[]){0, 1, 0, 110, 1000}, 5, 0));
  cmx_array_release(x);
  double mv[5] = {2, 0, 1, 0, 3};
  x = from(mv, s5, 1, CMX_FLOAT64);
  sort_ctx m = {OP_CUMMIN, 0, 0, false, true, false};
  CHECK(grad_values(&m, x, u, g, 5) &&
        near(g, (double[]){1, 110, 0, 11000, 0}, 5, 0));
  cmx_array_release(x);
}

/* logcumsumexp at large magnitudes: finite, right gradients. */
static void test_logcumsumexp_large(void) {
  int64_t s6[1] = {6};
  double v[6] = {1000, 999.5, 1001, -1000, 998, 1000.25};
  cmx_array x = from(v, s6, 1, CMX_FLOAT64);
  for (int m = 0; m < 4; m++) {
    sort_ctx c = {OP_LOGCUMSUMEXP, 0, 0, (m & 1) != 0, (m & 2) == 0, false};
    char name[128];
    describe(&c, "grad near +-1000", name, sizeof name);
    check_grad_finite(name, &c, x);
  }
  /* explicit: d/dx sum(logcumsumexp(x)) for x = [0, 0]: y = [0, log 2],
   * dy0 = [1, 0], dy1 = [1/2, 1/2] -> [1.5, 0.5] */
  double z[2] = {0, 0}, g[2];
  int64_t s2[1] = {2};
  cmx_array x2 = from(z, s2, 1, CMX_FLOAT64);
  sort_ctx c = {OP_LOGCUMSUMEXP, 0, 0, false, true, false};
  CHECK(grad_values(&c, x2, (double[]){1, 1}, g, 2) &&
        near(g, (double[]){1.5, 0.5}, 2, 1e-15));
  cmx_array_release(x2);
  cmx_array_release(x);
}

/* ---------------- dtypes ---------------- */

/* The vjp rule of y's primitive called directly with a cotangent of ones:
 * the dtype of its output (CMX_DTYPE_AUTO on error or none). */
static cmx_dtype rule_vjp_dtype(cmx_array y) {
  const cmx_primitive* p = cmx_array_primitive(y);
  int nin = 0;
  const cmx_array* in = cmx_array_inputs(y, &nin);
  if (!p || nin != 1) return CMX_DTYPE_AUTO;
  size_t mark = cmx__scope_enter();
  cmx_array c = cmx__ones_like(y, S), r = NULL;
  int arg = 0;
  cmx_dtype dt = CMX_DTYPE_AUTO;
  if (c &&
      cmx_primitive_vt(p)->vjp(p, in, 1, &c, 1, &arg, 1, &y, &r) == CMX_OK && r)
    dt = cmx_array_dtype(r);
  cmx_array_release(r);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  return dt;
}

static void test_dtypes(void) {
  static const op_kind ops[] = {OP_SORT,        OP_PARTITION, OP_CUMSUM,
                                OP_CUMPROD,     OP_CUMMAX,    OP_CUMMIN,
                                OP_LOGCUMSUMEXP};
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  double v[6] = {0.5, -1, 2, 1.5, 0.25, -0.75};
  int64_t sh[2] = {2, 3};
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
      for (int incl = 0; incl < 2; incl++) {
        sort_ctx c = {ops[k], 1, 1, incl == 0, incl == 1, false};
        cmx_array x = from(v, sh, 2, dts[d]), y = NULL, in[2] = {x, NULL};
        OK(apply_op(&c, in, &y));
        cmx_dtype got = rule_vjp_dtype(y);
        char name[128];
        describe(&c, cmx_dtype_name(dts[d]), name, sizeof name);
        CHECK_MSG(got == dts[d], "%s: vjp dtype %s", name,
                  got == CMX_DTYPE_AUTO ? "(error)" : cmx_dtype_name(got));
        cmx_closure f = {tc_call, &(tc_closure){f_op, &c}};
        cmx_array t = NULL, *o = NULL, *j = NULL;
        int n = 0;
        cmx_ones_like(&t, x, S);
        OK(cmx_jvp(f, &x, 1, &t, &o, &j, &n));
        CHECK_MSG(n == 1 && cmx_array_dtype(j[0]) == dts[d], "%s: jvp dtype",
                  name);
        cmx_arrays_free(o, n);
        cmx_arrays_free(j, n);
        cmx_array_release(t);
        cmx_array_release(x);
        cmx_array_release(y);
      }
}

/* ---------------- vmap ---------------- */

static void test_vmap(void) {
  g_clamp = true;
  static const op_kind ops[] = {OP_SORT,         OP_ARGSORT, OP_PARTITION,
                                OP_ARGPARTITION, OP_CUMSUM,  OP_CUMPROD,
                                OP_CUMMAX,       OP_CUMMIN,  OP_LOGCUMSUMEXP};
  static const axis_case vc[] = {
      {1, {5}, 0},     {2, {3, 4}, 0},  {2, {3, 4}, 1},
      {2, {3, 4}, -1}, {2, {4, 3}, -2},
  };
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (size_t k = 0; k < sizeof vc / sizeof *vc; k++) {
      const axis_case* ac = &vc[k];
      int nd = ac->nd + 1;
      for (int bax = 0; bax < nd; bax++)
        for (int m = 0; m < 2; m++) {
          sort_ctx c = {ops[o], ac->axis, m ? -1 : 1, m == 1, m == 0, false};
          int64_t shape[CMX_MAX_NDIM];
          for (int d = 0, j = 0; d < nd; d++)
            shape[d] = d == bax ? 3 : ac->shape[j++];
          cmx_array x =
              input(shape, nd, (int)(o + k + (size_t)bax), (bax + m) % 2 == 1);
          char name[128], what[48];
          snprintf(what, sizeof what, "vmap over axis %d", bax);
          describe(&c, what, name, sizeof name);
          tc_check_vmap(name, f_op, &c, &x, 1, &bax, 0);
          if (bax == nd - 1) tc_check_vmap(name, f_op, &c, &x, 1, &bax, -1);
          cmx_array_release(x);
        }
    }
  g_clamp = false;
}

/* searchsorted: values mapped, sequence mapped, both; with ties between
 * the sequence and the values, and NaNs (sorted last). */
static void test_vmap_searchsorted(void) {
  int64_t s35[2] = {3, 5}, s53[2] = {5, 3}, s5[1] = {5}, s34[2] = {3, 4},
          s4[1] = {4}, s324[3] = {3, 2, 4};
  double seqs[15] = {-1, 0, 0, 1, 2, -2, -1, 0.5, 3, NAN, 0, 0, 0, 0, 0};
  double vals[12] = {0, -1, 2, NAN, 0.5, 1, -3, 0, 3, -1, 0, 4};
  double seqsT[15];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++) seqsT[j * 3 + i] = seqs[i * 5 + j];
  cmx_array seq = from(seqs, s35, 2, CMX_FLOAT64);
  cmx_array seqT = from(seqsT, s53, 2, CMX_FLOAT64);
  cmx_array seq1 = from(seqs, s5, 1, CMX_FLOAT64);
  cmx_array val = from(vals, s34, 2, CMX_FLOAT64);
  cmx_array val1 = from(vals, s4, 1, CMX_FLOAT64);
  double vals3[24];
  for (int i = 0; i < 24; i++) vals3[i] = vals[i % 12] + (i / 12) * 0.5;
  cmx_array val3 = from(vals3, s324, 3, CMX_FLOAT64);
  for (int right = 0; right < 2; right++) {
    sort_ctx c = {OP_SEARCHSORTED, 0, 0, false, true, right == 1};
    char name[96];
    snprintf(name, sizeof name, "searchsorted(%s) vmap",
             right ? "right" : "left");
    struct {
      cmx_array a, b;
      int axes[2], out;
    } cases[] = {
        {seq1, val, {CMX_VMAP_NONE, 0}, 0},
        {seq1, val, {CMX_VMAP_NONE, 1}, 0},
        {seq1, val3, {CMX_VMAP_NONE, 2}, 1},
        {seq, val1, {0, CMX_VMAP_NONE}, 0},
        {seqT, val1, {1, CMX_VMAP_NONE}, 0},
        {seq, val, {0, 0}, 0},
        {seqT, val, {1, 0}, 1},
        {seq, val3, {0, 0}, -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
      cmx_array in[2] = {cases[k].a, cases[k].b};
      tc_check_vmap(name, f_op, &c, in, 2, cases[k].axes, cases[k].out);
    }
  }
  cmx_array_release(seq);
  cmx_array_release(seqT);
  cmx_array_release(seq1);
  cmx_array_release(val);
  cmx_array_release(val1);
  cmx_array_release(val3);
}

/* ---------------- second order ---------------- */

static void test_second_order(void) {
  int64_t sh[2] = {3, 4}, shb[3] = {2, 3, 4};
  static const sort_ctx cs[] = {
      {OP_CUMSUM, 1, 0, false, true, false},
      {OP_CUMSUM, 0, 0, true, false, false},
      {OP_CUMPROD, 1, 0, false, true, false},
      {OP_CUMPROD, 0, 0, true, false, false},
      {OP_LOGCUMSUMEXP, 1, 0, false, true, false},
      {OP_CUMMAX, 1, 0, false, true, false},
      {OP_SORT, 1, 0, false, true, false},
      {OP_PARTITION, 0, 1, false, true, false},
  };
  for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
    sort_ctx c = cs[k];
    cmx_array x0 = input(sh, 2, (int)k, k % 2 == 1), y = NULL;
    cmx_array x = affine(x0, 0.5, 1.0), in[2] = {x, NULL};
    OK(apply_op(&c, in, &y));
    cmx_array w = tc_random_like(y);
    cmx_array xw[2] = {x, w};
    char name[128];
    describe(&c, "grad of grad", name, sizeof name);
    tc_check_grad(name, f_grad, &c, xw, 2, 1e-5);
    /* vmap of grad: x and w mapped on axis 0, then w not mapped */
    cmx_array xb0 = input(shb, 3, (int)k + 1, false);
    cmx_array xb = affine(xb0, 0.5, 1.0), wb = tc_random_like(xb);
    cmx_array xwb[2] = {xb, wb}, xw1[2] = {xb, w};
    describe(&c, "vmap of grad", name, sizeof name);
    tc_check_vmap(name, f_grad, &c, xwb, 2, (int[]){0, 0}, 0);
    tc_check_vmap(name, f_grad, &c, xw1, 2, (int[]){0, CMX_VMAP_NONE}, 1);
    cmx_array_release(wb);
    cmx_array_release(xb);
    cmx_array_release(xb0);
    cmx_array_release(w);
    cmx_array_release(y);
    cmx_array_release(x);
    cmx_array_release(x0);
  }
}

int main(void) {
  RUN(test_sort_partition_grads);
  RUN(test_sort_ties);
  RUN(test_no_gradient);
  RUN(test_scan_grads);
  RUN(test_cumprod_zeros);
  RUN(test_cummax_ties);
  RUN(test_logcumsumexp_large);
  RUN(test_dtypes);
  RUN(test_vmap);
  RUN(test_vmap_searchsorted);
  RUN(test_second_order);
  return test_summary("test_rules_sort");
}
