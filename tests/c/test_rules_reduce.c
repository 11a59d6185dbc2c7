/* Transform rules of the reductions: Reduce (sum, prod, min, max, mean,
 * all, any), ArgReduce, LogSumExp, Softmax, Var/Std.
 *
 * Gradients are checked against central finite differences in float64
 * (tc_check_grad, which also checks jvp against vjp) on several shapes and
 * axes, including transposed inputs; vmap against a loop for each input
 * axis; MLX's conventions on explicit values (ties of min/max share the
 * cotangent, prod with zeros); second order for softmax and logsumexp;
 * the dtypes rules hand back for float32/float16 inputs. */
// clang-format off
#include "test.h"  /* first: tcheck.h uses it */
#include "tcheck.h"
// clang-format on

/* the rules themselves are called directly to check their dtypes */
#include "ops/ops_internal.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

/* ---------------- inputs ---------------- */

/* A float64 array of the shape with distinct values (no ties), built
 * transposed (then a strided view, evaluated) when `transposed`. */
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

static cmx_array from(const double* v, const int64_t* shape, int nd,
                      cmx_dtype dt) {
  cmx_array a = NULL, b = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT64);
  if (dt == CMX_FLOAT64) return a;
  cmx_astype(&b, a, dt, S);
  cmx_array_release(a);
  return b;
}

/* The values of a as doubles (row-major), n of them; false on error. */
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
    if (!(fabs(a[i] - b[i]) <= tol)) {
      fprintf(stderr, "  [%lld] %.10g vs %.10g\n", (long long)i, a[i], b[i]);
      return false;
    }
  return true;
}

/* ---------------- the ops under test ---------------- */

typedef enum {
  OP_SUM,
  OP_PROD,
  OP_MIN,
  OP_MAX,
  OP_MEAN,
  OP_ALL,
  OP_ANY,
  OP_LSE,
  OP_VAR,
  OP_STD,
  OP_SOFTMAX,
  OP_ARGMIN,
  OP_ARGMAX
} op_kind;

static const char* const op_names[] = {
    "sum", "prod", "min", "max",     "mean",   "all",   "any",
    "lse", "var",  "std", "softmax", "argmin", "argmax"};

typedef struct {
  op_kind op;
  int naxes; /* -1: all axes (NULL) */
  int axes[4];
  bool keepdims;
  int ddof;
  bool precise;
} red_ctx;

static cmx_status apply_op(const red_ctx* c, cmx_array x, cmx_array* out) {
  const int* ax = c->naxes < 0 ? NULL : c->axes;
  int n = c->naxes < 0 ? 0 : c->naxes;
  bool kd = c->keepdims;
  switch (c->op) {
    case OP_SUM:
      return cmx_sum(out, x, ax, n, kd, S);
    case OP_PROD:
      return cmx_prod(out, x, ax, n, kd, S);
    case OP_MIN:
      return cmx_min(out, x, ax, n, kd, S);
    case OP_MAX:
      return cmx_max(out, x, ax, n, kd, S);
    case OP_MEAN:
      return cmx_mean(out, x, ax, n, kd, S);
    case OP_ALL:
      return cmx_all(out, x, ax, n, kd, S);
    case OP_ANY:
      return cmx_any(out, x, ax, n, kd, S);
    case OP_LSE:
      return cmx_logsumexp(out, x, ax, n, kd, S);
    case OP_VAR:
      return cmx_var(out, x, ax, n, kd, c->ddof, S);
    case OP_STD:
      return cmx_std(out, x, ax, n, kd, c->ddof, S);
    case OP_SOFTMAX:
      return cmx_softmax(out, x, ax, n, c->precise, S);
    case OP_ARGMIN:
      return cmx_argmin(out, x, ax, kd, S);
    case OP_ARGMAX:
      return cmx_argmax(out, x, ax, kd, S);
  }
  return CMX_ERR_VALUE;
}

static cmx_status f_red(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                        int* nout) {
  (void)n;
  *nout = 1;
  return apply_op(ctx, in[0], &outs[0]);
}

/* A closure for cmx_value_and_grad: sum(w * op(x)), w = in[1]. */
static cmx_status f_weighted(void* ctx, const cmx_array* in, int n,
                             cmx_array** out, int* nout) {
  (void)n;
  cmx_array y = NULL, m = NULL, s = NULL;
  cmx_status st = apply_op(ctx, in[0], &y);
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

/* The gradient of sum(w * op(x)) as a function of (x, w): second order
 * checks differentiate it again, or vmap it. */
static cmx_status f_grad(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  cmx_closure f = {f_weighted, ctx};
  int arg = 0;
  *nout = 1;
  return cmx_value_and_grad(f, in, n, &arg, 1, NULL, NULL, &outs[0]);
}

static void describe(const red_ctx* c, const char* what, char* buf, size_t n) {
  char ax[64] = "all";
  if (c->naxes >= 0) {
    int w = snprintf(ax, sizeof ax, "[");
    for (int i = 0; i < c->naxes; i++)
      w +=
          snprintf(ax + w, sizeof ax - (size_t)w, i ? ",%d" : "%d", c->axes[i]);
    snprintf(ax + w, sizeof ax - (size_t)w, "]");
  }
  snprintf(buf, n, "%s(axes=%s%s, ddof=%d) %s", op_names[c->op], ax,
           c->keepdims ? ", keepdims" : "", c->ddof, what);
}

/* ---------------- gradients against finite differences ---------------- */

typedef struct {
  int nd;
  int64_t shape[4];
  int naxes;
  int axes[4];
} shape_case;

static const shape_case kCases[] = {
    {1, {7}, 1, {0}},          {1, {7}, -1, {0}},
    {2, {3, 5}, 1, {0}},       {2, {3, 5}, 1, {-1}},
    {2, {3, 5}, 2, {0, 1}},    {3, {2, 3, 4}, 1, {1}},
    {3, {2, 3, 4}, 2, {0, 2}}, {3, {2, 3, 4}, 2, {-1, -3}},
    {3, {2, 3, 4}, -1, {0}},
};

static void check_op_grads(op_kind op, int ddof) {
  for (size_t k = 0; k < sizeof kCases / sizeof *kCases; k++) {
    const shape_case* sc = &kCases[k];
    for (int v = 0; v < 3; v++) {
      bool transposed = v == 2, keepdims = v == 1;
      if ((op == OP_SOFTMAX) && keepdims) continue;
      if ((op == OP_ARGMIN || op == OP_ARGMAX) && sc->naxes > 1) continue;
      red_ctx c = {op, sc->naxes, {0}, keepdims, ddof, false};
      memcpy(c.axes, sc->axes, sizeof c.axes);
      cmx_array x = input(sc->shape, sc->nd, (int)k, transposed);
      char name[160];
      describe(&c, transposed ? "grad, transposed" : "grad", name, sizeof name);
      tc_check_grad(name, f_red, &c, &x, 1, 1e-6);
      cmx_array_release(x);
    }
  }
}

static void test_sum_mean_grads(void) {
  check_op_grads(OP_SUM, 0);
  check_op_grads(OP_MEAN, 0);
  /* A 0-d input: nothing reduced. */
  cmx_array x = input(NULL, 0, 3, false);
  red_ctx c = {OP_SUM, -1, {0}, false, 0, false};
  tc_check_grad("sum of a 0-d array", f_red, &c, &x, 1, 1e-6);
  cmx_array_release(x);
}

static void test_prod_grads(void) {
  check_op_grads(OP_PROD, 0);
}
static void test_min_max_grads(void) {
  check_op_grads(OP_MIN, 0);
  check_op_grads(OP_MAX, 0);
}
static void test_lse_softmax_grads(void) {
  check_op_grads(OP_LSE, 0);
  check_op_grads(OP_SOFTMAX, 0);
  /* precise changes nothing in float64 but goes through the same rule */
  int64_t sh[2] = {3, 4};
  cmx_array x = input(sh, 2, 5, true);
  red_ctx c = {OP_SOFTMAX, 1, {1}, false, 0, true};
  tc_check_grad("softmax(precise)", f_red, &c, &x, 1, 1e-6);
  cmx_array_release(x);
}
static void test_var_std_grads(void) {
  for (int ddof = 0; ddof <= 2; ddof++) {
    check_op_grads(OP_VAR, ddof);
    check_op_grads(OP_STD, ddof);
  }
}

/* Large inputs: logsumexp and softmax gradients stay finite and right. */
static void test_lse_large(void) {
  double v[4] = {1000, 1001, 999, 1000.5};
  int64_t sh[1] = {4};
  cmx_array x = from(v, sh, 1, CMX_FLOAT64);
  red_ctx c = {OP_LSE, -1, {0}, false, 0, false};
  tc_check_grad("logsumexp near 1000", f_red, &c, &x, 1, 1e-6);
  cmx_array_release(x);
}

/* ---------------- MLX's conventions on explicit values ---------------- */

/* vjp of op(x) with a cotangent of ones: the gradient's values. */
static bool grad_values(const red_ctx* c, cmx_array x, double* out, int64_t n) {
  cmx_closure f = {tc_call, &(tc_closure){f_red, (void*)c}};
  cmx_array y = NULL, ones = NULL, g = NULL;
  bool ok = apply_op(c, x, &y) == CMX_OK &&
            cmx_ones_like(&ones, y, S) == CMX_OK &&
            cmx_vjp(f, &x, 1, &ones, 1, NULL, NULL, &g) == CMX_OK &&
            values(g, out, n);
  if (!ok) fprintf(stderr, "  %s\n", cmx_last_error());
  cmx_array_release(y);
  cmx_array_release(ones);
  cmx_array_release(g);
  return ok;
}

static void test_ties(void) {
  int64_t s4[1] = {4}, s23[2] = {2, 3};
  double a[4] = {1, 3, 3, 2}, ga[4];
  cmx_array x = from(a, s4, 1, CMX_FLOAT64);
  red_ctx cmax = {OP_MAX, -1, {0}, false, 0, false};
  CHECK(grad_values(&cmax, x, ga, 4) &&
        near(ga, (double[]){0, 0.5, 0.5, 0}, 4, 0));
  cmx_array_release(x);
  double b[4] = {2, -1, 5, -1}, gb[4];
  x = from(b, s4, 1, CMX_FLOAT64);
  red_ctx cmin = {OP_MIN, 1, {0}, true, 0, false};
  CHECK(grad_values(&cmin, x, gb, 4) &&
        near(gb, (double[]){0, 0.5, 0, 0.5}, 4, 0));
  cmx_array_release(x);
  /* three-way tie over two axes, and a tie only in one row */
  double m[6] = {4, 1, 4, 0, 4, 2}, gm[6];
  x = from(m, s23, 2, CMX_FLOAT64);
  red_ctx call = {OP_MAX, 2, {0, 1}, false, 0, false};
  CHECK(grad_values(&call, x, gm, 6) &&
        near(gm, (double[]){1. / 3, 0, 1. / 3, 0, 1. / 3, 0}, 6, 1e-15));
  red_ctx crow = {OP_MAX, 1, {1}, false, 0, false};
  CHECK(grad_values(&crow, x, gm, 6) &&
        near(gm, (double[]){0.5, 0, 0.5, 0, 1, 0}, 6, 0));
  cmx_array_release(x);
  /* a row holding NaN: its max is NaN, no element equals it, and its
   * gradient is NaN throughout (as MLX's mask / count); the other row's
   * is not touched */
  double n6[6] = {1, NAN, 0, 2, 5, 5}, gn[6];
  x = from(n6, s23, 2, CMX_FLOAT64);
  CHECK(grad_values(&crow, x, gn, 6) && isnan(gn[0]) && isnan(gn[1]) &&
        isnan(gn[2]) && gn[3] == 0 && gn[4] == 0.5 && gn[5] == 0.5);
  cmx_array_release(x);
}

/* prod with zeros: the product of the other elements, no NaN. */
static void test_prod_zeros(void) {
  int64_t s3[1] = {3}, s23[2] = {2, 3}, s223[3] = {2, 2, 3};
  double a[3] = {2, 0, 3}, g[12];
  cmx_array x = from(a, s3, 1, CMX_FLOAT64);
  red_ctx c = {OP_PROD, -1, {0}, false, 0, false};
  CHECK(grad_values(&c, x, g, 3) && near(g, (double[]){0, 6, 0}, 3, 0));
  tc_check_grad("prod with one zero", f_red, &c, &x, 1, 1e-6);
  cmx_array_release(x);
  double b[6] = {0, 5, 0, 2, 0.5, 4};
  x = from(b, s23, 2, CMX_FLOAT64);
  red_ctx cr = {OP_PROD, 1, {1}, false, 0, false};
  CHECK(grad_values(&cr, x, g, 6) &&
        near(g, (double[]){0, 0, 0, 2, 8, 1}, 6, 0));
  tc_check_grad("prod with two zeros in a row", f_red, &cr, &x, 1, 1e-6);
  red_ctx cc = {OP_PROD, 1, {0}, true, 0, false};
  CHECK(grad_values(&cc, x, g, 6) &&
        near(g, (double[]){2, 0.5, 4, 0, 5, 0}, 6, 0));
  cmx_array_release(x);
  double d[12] = {1, 2, 0, 3, 1, 2, 0.5, 1, 2, 0, 1, 3};
  x = from(d, s223, 3, CMX_FLOAT64);
  red_ctx cm = {OP_PROD, 2, {0, 2}, false, 0, false};
  /* group of column 0: {1,2,0, 0.5,1,2} (one zero: its gradient is the
   * product of the rest, 2); column 1: {3,1,2, 0,1,3} (zero at [1,1,0]) */
  CHECK(grad_values(&cm, x, g, 12) &&
        near(g, (double[]){0, 0, 2, 0, 0, 0, 0, 0, 0, 18, 0, 0}, 12, 0));
  tc_check_grad("prod with zeros over two axes", f_red, &cm, &x, 1, 1e-6);
  cmx_array_release(x);
}

/* No gradient: integer inputs, all/any, argmin/argmax. */
static void test_no_gradient(void) {
  int64_t sh[2] = {3, 4};
  cmx_array xf = input(sh, 2, 7, false), xi = NULL;
  cmx_astype(&xi, xf, CMX_INT32, S);
  static const op_kind int_ops[] = {OP_SUM, OP_PROD, OP_MIN,
                                    OP_MAX, OP_MEAN, OP_VAR};
  for (size_t k = 0; k < sizeof int_ops / sizeof *int_ops; k++) {
    red_ctx c = {int_ops[k], 1, {1}, false, 0, false};
    double g[12];
    char name[128];
    describe(&c, "of int32: zero gradient", name, sizeof name);
    CHECK_MSG(grad_values(&c, xi, g, 12) && near(g, (double[12]){0}, 12, 0),
              "%s", name);
    tc_check_grad(name, f_red, &c, &xi, 1, 1e-6);
  }
  static const op_kind flat_ops[] = {OP_ALL, OP_ANY, OP_ARGMIN, OP_ARGMAX};
  for (size_t k = 0; k < sizeof flat_ops / sizeof *flat_ops; k++) {
    red_ctx c = {flat_ops[k], 1, {0}, false, 0, false};
    double g[12];
    char name[128];
    describe(&c, "zero gradient", name, sizeof name);
    CHECK_MSG(grad_values(&c, xf, g, 12) && near(g, (double[12]){0}, 12, 0),
              "%s", name);
    tc_check_grad(name, f_red, &c, &xf, 1, 1e-6);
    c.naxes = -1;
    describe(&c, "zero gradient", name, sizeof name);
    tc_check_grad(name, f_red, &c, &xf, 1, 1e-6);
  }
  cmx_array_release(xf);
  cmx_array_release(xi);
}

/* Var/Std of complex numbers: a real result composed of the parts' real
 * variances (MLX), so both derivatives exist and agree. */
static void test_var_complex(void) {
  int64_t sh[1] = {4};
  cmx_array x = input(sh, 1, 2, false), z = NULL, y = NULL, ones = NULL;
  cmx_astype(&z, x, CMX_COMPLEX64, S);
  red_ctx c = {OP_VAR, 1, {0}, false, 0, false};
  cmx_closure f = {tc_call, &(tc_closure){f_red, &c}};
  cmx_array g = NULL, *o = NULL, *j = NULL;
  int n = 0;
  OK(apply_op(&c, z, &y));
  cmx_ones_like(&ones, y, S);
  CHECK(cmx_array_dtype(y) == CMX_FLOAT32);
  OK(cmx_vjp(f, &z, 1, &ones, 1, NULL, NULL, &g));
  CHECK(g && cmx_array_dtype(g) == CMX_COMPLEX64);
  cmx_array_release(g);
  cmx_array_release(ones);
  cmx_ones_like(&ones, z, S);
  OK(cmx_jvp(f, &z, 1, &ones, &o, &j, &n));
  CHECK(n == 1);
  cmx_arrays_free(o, n);
  cmx_arrays_free(j, n);
  cmx_array_release(ones);
  cmx_array_release(y);
  cmx_array_release(z);
  cmx_array_release(x);
}

/* ---------------- dtypes ---------------- */

/* The vjp rule of y's primitive, called directly with a cotangent of
 * ones: its output's dtype (CMX_DTYPE_AUTO on error or NULL output). */
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
  static const op_kind ops[] = {OP_SUM, OP_PROD, OP_MIN, OP_MAX,    OP_MEAN,
                                OP_LSE, OP_VAR,  OP_STD, OP_SOFTMAX};
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  double v[6] = {0.5, -1, 2, 1.5, 0.25, -0.75};
  int64_t sh[2] = {2, 3};
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
      red_ctx c = {ops[k], 1, {1}, false, 1, false};
      cmx_array x = from(v, sh, 2, dts[d]), y = NULL;
      OK(apply_op(&c, x, &y));
      cmx_dtype got = rule_vjp_dtype(y);
      CHECK_MSG(got == dts[d], "%s of %s: vjp dtype %s", op_names[ops[k]],
                cmx_dtype_name(dts[d]),
                got == CMX_DTYPE_AUTO ? "(error)" : cmx_dtype_name(got));
      /* jvp: the tangent has the output's dtype */
      cmx_closure f = {tc_call, &(tc_closure){f_red, &c}};
      cmx_array t = NULL, *o = NULL, *j = NULL;
      int n = 0;
      cmx_ones_like(&t, x, S);
      OK(cmx_jvp(f, &x, 1, &t, &o, &j, &n));
      CHECK_MSG(n == 1 && cmx_array_dtype(j[0]) == cmx_array_dtype(y),
                "%s of %s: jvp dtype", op_names[ops[k]],
                cmx_dtype_name(dts[d]));
      cmx_arrays_free(o, n);
      cmx_arrays_free(j, n);
      cmx_array_release(t);
      cmx_array_release(x);
      cmx_array_release(y);
    }
}

/* ---------------- vmap ---------------- */

/* vmap over each axis of a (batch + 3)-d input, output batch on axis 0
 * and last. */
static void check_op_vmap(op_kind op, int ddof) {
  static const shape_case vc[] = {
      {1, {4}, 1, {0}},        {1, {4}, -1, {0}},    {2, {3, 4}, 1, {1}},
      {2, {3, 4}, 1, {-2}},    {2, {3, 4}, -1, {0}}, {3, {2, 3, 4}, 2, {0, 2}},
      {3, {2, 3, 4}, 1, {-2}},
  };
  for (size_t k = 0; k < sizeof vc / sizeof *vc; k++) {
    const shape_case* sc = &vc[k];
    if ((op == OP_ARGMIN || op == OP_ARGMAX) && sc->naxes > 1) continue;
    for (int kd = 0; kd < 2; kd++) {
      if (op == OP_SOFTMAX && kd) continue;
      red_ctx c = {op, sc->naxes, {0}, kd == 1, ddof, false};
      memcpy(c.axes, sc->axes, sizeof c.axes);
      int nd = sc->nd + 1;
      for (int bax = 0; bax < nd; bax++) {
        /* the batched input: B = 3 inserted at bax */
        int64_t shape[CMX_MAX_NDIM];
        for (int d = 0, j = 0; d < nd; d++)
          shape[d] = d == bax ? 3 : sc->shape[j++];
        cmx_array x = input(shape, nd, (int)(k + 3 * bax), bax == 1);
        char name[160], what[48];
        snprintf(what, sizeof what, "vmap over axis %d", bax);
        describe(&c, what, name, sizeof name);
        tc_check_vmap(name, f_red, &c, &x, 1, &bax, 0);
        if (bax == nd - 1) tc_check_vmap(name, f_red, &c, &x, 1, &bax, -1);
        cmx_array_release(x);
      }
    }
  }
}

static void test_vmap(void) {
  static const op_kind ops[] = {OP_SUM,     OP_PROD,   OP_MIN,
                                OP_MAX,     OP_MEAN,   OP_LSE,
                                OP_SOFTMAX, OP_ARGMIN, OP_ARGMAX};
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
    check_op_vmap(ops[k], 0);
  check_op_vmap(OP_VAR, 1);
  check_op_vmap(OP_STD, 0);
  /* all/any on a boolean input */
  int64_t sh[3] = {3, 2, 4};
  cmx_array x = input(sh, 3, 11, false), b = NULL, zero = NULL;
  cmx_array_from_double(&zero, 0.2, CMX_FLOAT64);
  cmx_greater(&b, x, zero, S);
  for (int op = OP_ALL; op <= OP_ANY; op++)
    for (int bax = 0; bax < 3; bax++) {
      red_ctx c = {op, 1, {1}, bax == 2, 0, false};
      char name[64];
      snprintf(name, sizeof name, "%s vmap over axis %d", op_names[op], bax);
      tc_check_vmap(name, f_red, &c, &b, 1, &bax, 0);
    }
  cmx_array_release(x);
  cmx_array_release(b);
  cmx_array_release(zero);
}

/* ---------------- second order ---------------- */

/* grad of grad (Hessian-vector products against finite differences of
 * the gradient) and vmap of grad (x and w mapped on axis 0, or w not). */
static void test_second_order(void) {
  int64_t sh[2] = {3, 4}, shb[3] = {2, 3, 4};
  static const red_ctx cs[] = {
      {OP_SOFTMAX, 1, {1}, false, 0, false},
      {OP_SOFTMAX, 2, {0, 1}, false, 0, true},
      {OP_LSE, 1, {0}, false, 0, false},
      {OP_LSE, -1, {0}, true, 0, false},
      {OP_PROD, 1, {1}, false, 0, false},
      {OP_MAX, 1, {0}, false, 0, false},
      {OP_MEAN, 2, {0, 1}, true, 0, false},
      {OP_VAR, 1, {1}, false, 1, false},
      {OP_STD, 1, {1}, false, 0, false},
  };
  for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
    red_ctx c = cs[k];
    cmx_array x = input(sh, 2, (int)k, k % 2 == 1), y = NULL;
    OK(apply_op(&c, x, &y));
    cmx_array w = tc_random_like(y);
    cmx_array xw[2] = {x, w};
    char name[160];
    describe(&c, "grad of grad", name, sizeof name);
    tc_check_grad(name, f_grad, &c, xw, 2, 1e-5);
    /* vmap of grad */
    cmx_array xb = input(shb, 3, (int)k + 1, false);
    int64_t wsh[CMX_MAX_NDIM];
    wsh[0] = 2;
    memcpy(wsh + 1, cmx_array_shape(y), (size_t)cmx_array_ndim(y) * 8);
    cmx_array proto = NULL;
    cmx_zeros(&proto, wsh, cmx_array_ndim(y) + 1, CMX_FLOAT64, S);
    cmx_array wb = tc_random_like(proto);
    cmx_array xwb[2] = {xb, wb}, xw1[2] = {xb, w};
    describe(&c, "vmap of grad", name, sizeof name);
    tc_check_vmap(name, f_grad, &c, xwb, 2, (int[]){0, 0}, 0);
    tc_check_vmap(name, f_grad, &c, xw1, 2, (int[]){0, CMX_VMAP_NONE}, 1);
    cmx_array_release(proto);
    cmx_array_release(wb);
    cmx_array_release(xb);
    cmx_array_release(w);
    cmx_array_release(y);
    cmx_array_release(x);
  }
}

int main(void) {
  RUN(test_sum_mean_grads);
  RUN(test_prod_grads);
  RUN(test_min_max_grads);
  RUN(test_lse_softmax_grads);
  RUN(test_var_std_grads);
  RUN(test_lse_large);
  RUN(test_ties);
  RUN(test_prod_zeros);
  RUN(test_no_gradient);
  RUN(test_var_complex);
  RUN(test_dtypes);
  RUN(test_vmap);
  RUN(test_second_order);
  return test_summary("test_rules_reduce");
}
