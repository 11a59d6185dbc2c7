/* The transform drivers: vjp, jvp, vmap, value_and_grad, composition,
 * custom functions, checkpoint, evaluation inside transforms, errors.
 * Per-primitive rules are checked by the family tests (test_rules_*.c). */
#include "tcheck.h"
#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

static cmx_array f64(const double* v, const int64_t* shape, int ndim) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, ndim, CMX_FLOAT64);
  return a;
}
static cmx_array scalar(double v, cmx_dtype dt) {
  cmx_array a = NULL;
  cmx_array_from_double(&a, v, dt);
  return a;
}
static double item(cmx_array a) {
  double v = NAN;
  cmx_array_item_double(a, &v);
  return v;
}
static cmx_array* one_out(cmx_array a, int* nout) {
  cmx_array* o = malloc(sizeof *o);
  o[0] = a;
  *nout = 1;
  return o;
}

/* sin(x) */
static cmx_status f_sin(void* pl, const cmx_array* in, int n, cmx_array** out,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array y = NULL;
  cmx_status st = cmx_sin(&y, in[0], S);
  if (st != CMX_OK) return st;
  *out = one_out(y, nout);
  return CMX_OK;
}

/* Gradient of sin as a closure: x -> d/dx sin(x). */
static cmx_status f_dsin(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl;
  cmx_closure f = {f_sin, NULL};
  int arg = 0;
  cmx_array g = NULL;
  cmx_array s = NULL;
  cmx_status st = cmx_value_and_grad(f, in, n, &arg, 1, NULL, NULL, &g);
  (void)s;
  if (st != CMX_OK) return st;
  *out = one_out(g, nout);
  return CMX_OK;
}

static void test_grad_of_sin(void) {
  cmx_array x = scalar(0.5, CMX_FLOAT32), g = NULL, g2 = NULL;
  int arg = 0;
  cmx_closure f = {f_sin, NULL}, df = {f_dsin, NULL};
  cmx_array* outs = NULL;
  int nout = 0;
  OK(cmx_value_and_grad(f, &x, 1, &arg, 1, &outs, &nout, &g));
  CHECK(nout == 1 && fabs(item(outs[0]) - sin(0.5)) < 1e-6);
  CHECK(fabs(item(g) - cos(0.5)) < 1e-6);
  cmx_arrays_free(outs, nout);
  /* Second derivative: grad of grad. */
  OK(cmx_value_and_grad(df, &x, 1, &arg, 1, NULL, NULL, &g2));
  CHECK(fabs(item(g2) + sin(0.5)) < 1e-6);
  cmx_array_release(x);
  cmx_array_release(g);
  cmx_array_release(g2);
}

/* x * x + x * y with x used twice, y unused in one output. */
static cmx_status f_poly(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  cmx_array xx = NULL, xy = NULL, s = NULL, t = NULL;
  cmx_multiply(&xx, in[0], in[0], S);
  cmx_multiply(&xy, in[0], in[1], S);
  cmx_add(&s, xx, xy, S);
  cmx_sum(&t, s, NULL, 0, false, S);
  cmx_array_release(xx);
  cmx_array_release(xy);
  cmx_array_release(s);
  if (!t) return cmx_last_status();
  *out = one_out(t, nout);
  return CMX_OK;
}

static void test_vjp_accumulates(void) {
  double xv[3] = {1, 2, 3}, yv[3] = {4, 5, 6};
  int64_t sh[1] = {3};
  cmx_array in[3] = {f64(xv, sh, 1), f64(yv, sh, 1), f64(yv, sh, 1)};
  cmx_array ct = scalar(2.0, CMX_FLOAT64), vjps[3] = {0};
  cmx_closure f = {f_poly, NULL};
  cmx_array* outs = NULL;
  int nout = 0;
  OK(cmx_vjp(f, in, 3, &ct, 1, &outs, &nout, vjps));
  CHECK(nout == 1 && item(outs[0]) == 1 + 4 + 9 + 4 + 10 + 18);
  const double* g = NULL;
  OK(cmx_array_data(vjps[0], (const void**)&g));
  for (int i = 0; i < 3; i++) CHECK(g[i] == 2 * (2 * xv[i] + yv[i]));
  OK(cmx_array_data(vjps[1], (const void**)&g));
  for (int i = 0; i < 3; i++) CHECK(g[i] == 2 * xv[i]);
  /* The third input is unused: zeros of its shape and dtype. */
  OK(cmx_array_data(vjps[2], (const void**)&g));
  CHECK(cmx_array_dtype(vjps[2]) == CMX_FLOAT64);
  for (int i = 0; i < 3; i++) CHECK(g[i] == 0);
  for (int i = 0; i < 3; i++) cmx_array_release(vjps[i]);
  /* Wrong cotangent count and shape. */
  cmx_array two[2] = {ct, ct};
  FAILS(cmx_vjp(f, in, 3, two, 2, NULL, NULL, vjps), CMX_ERR_VALUE,
        "does not match number of cotangents");
  cmx_array bad = f64(xv, sh, 1);
  FAILS(cmx_vjp(f, in, 3, &bad, 1, NULL, NULL, vjps), CMX_ERR_VALUE,
        "does not match cotangent shape");
  cmx_array_release(bad);
  cmx_arrays_free(outs, nout);
  for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
  cmx_array_release(ct);
}

/* tc_fn wrappers for the starter rules. */
static cmx_status t_poly(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)ctx;
  cmx_array* o = NULL;
  cmx_status st = f_poly(NULL, in, n, &o, nout);
  if (st == CMX_OK) outs[0] = o[0];
  free(o);
  return st;
}
static cmx_status t_bsin(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)ctx, (void)n;
  cmx_array s = NULL, m = NULL;
  cmx_sin(&s, in[0], S);
  cmx_multiply(&m, s, in[1], S); /* broadcasts in[1] */
  cmx_array_release(s);
  int ax = 0;
  cmx_status st = cmx_mean(&outs[0], m, &ax, 1, false, S);
  cmx_array_release(m);
  *nout = 1;
  return st;
}

static void test_checks(void) {
  double xv[6] = {0.1, -0.4, 0.9, 1.3, -2.0, 0.7}, yv[3] = {1.5, -0.5, 2};
  int64_t sh23[2] = {2, 3}, sh3[1] = {3}, sh6[1] = {6};
  cmx_array a = f64(xv, sh6, 1), b = f64(xv, sh6, 1);
  cmx_array ab[2] = {a, b};
  tc_check_grad("poly", t_poly, NULL, ab, 2, 1e-6);
  cmx_array x = f64(xv, sh23, 2), y = f64(yv, sh3, 1);
  cmx_array xy[2] = {x, y};
  tc_check_grad("sin*broadcast, mean", t_bsin, NULL, xy, 2, 1e-6);
  int axes1[2] = {1, CMX_VMAP_NONE};
  cmx_array xt = NULL;
  int perm[2] = {1, 0};
  cmx_transpose(&xt, x, perm, 2, S);
  cmx_array xty[2] = {xt, y};
  (void)axes1;
  int axes0[2] = {0, CMX_VMAP_NONE};
  tc_check_vmap("sin*broadcast, mean (axis 0)", t_bsin, NULL, xy, 2, axes0, 0);
  /* Mapping x over its axis 1 via the transposed copy; out axis 1 too. */
  int axes_t[2] = {1, CMX_VMAP_NONE};
  tc_check_vmap("sin*broadcast, mean (axis 1)", t_bsin, NULL, xty, 2, axes_t,
                -1);
  cmx_array_release(xt);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(x);
  cmx_array_release(y);
}

/* vmap of x + y with in_axes (1, 0), the example of MLX's docs. */
static cmx_status f_add(void* pl, const cmx_array* in, int n, cmx_array** out,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array y = NULL;
  cmx_status st = cmx_add(&y, in[0], in[1], S);
  if (st != CMX_OK) return st;
  *out = one_out(y, nout);
  return CMX_OK;
}

static cmx_status f_sin_second(void* pl, const cmx_array* in, int n,
                               cmx_array** out, int* nout) {
  (void)n;
  return f_sin(pl, in + 1, 1, out, nout);
}

static void test_vmap_add(void) {
  cmx_array xs = NULL, ys = NULL, ones = NULL;
  int64_t sx[2] = {2, 4}, sy[2] = {4, 2};
  OK(cmx_ones(&ones, sx, 2, CMX_FLOAT32, S));
  OK(cmx_arange(&xs, 0, 8, 1, CMX_FLOAT32, S));
  cmx_array x = NULL, y = NULL;
  OK(cmx_reshape(&x, xs, sx, 2, S));
  OK(cmx_reshape(&y, xs, sy, 2, S));
  cmx_array in[2] = {x, y};
  int in_axes[2] = {1, 0}, out_axes = 0;
  cmx_closure f = {f_add, NULL};
  cmx_array* outs = NULL;
  int nout = 0;
  OK(cmx_vmap(f, in, 2, in_axes, &out_axes, 1, &outs, &nout));
  CHECK(nout == 1 && cmx_array_ndim(outs[0]) == 2 &&
        cmx_array_shape(outs[0])[0] == 4 && cmx_array_shape(outs[0])[1] == 2);
  const float* p = NULL;
  cmx_array c = NULL;
  OK(cmx_contiguous(&c, outs[0], false, S));
  OK(cmx_array_data(c, (const void**)&p));
  /* out[b, i] = x[i, b] + y[b, i] = (4 i + b) + (2 b + i) */
  bool good = true;
  for (int b = 0; b < 4; b++)
    for (int i = 0; i < 2; i++) good &= p[b * 2 + i] == 4 * i + b + 2 * b + i;
  CHECK(good);
  cmx_array_release(c);
  cmx_arrays_free(outs, nout);
  /* Inconsistent sizes, no mapped input, bad axis. */
  int bad_axes[2] = {0, 0};
  FAILS(cmx_vmap(f, in, 2, bad_axes, &out_axes, 1, &outs, &nout), CMX_ERR_VALUE,
        "Inconsistent axis sizes");
  int none[2] = {CMX_VMAP_NONE, CMX_VMAP_NONE};
  FAILS(cmx_vmap(f, in, 2, none, &out_axes, 1, &outs, &nout), CMX_ERR_VALUE,
        "must be non-None");
  int far[2] = {5, 0};
  FAILS(cmx_vmap(f, in, 2, far, &out_axes, 1, &outs, &nout), CMX_ERR_INDEX,
        "Invalid in_axes");
  /* An output that does not depend on the mapped input is broadcast. */
  int only_x[2] = {1, CMX_VMAP_NONE};
  cmx_array in2[2] = {x, ones};
  cmx_closure g = {f_sin_second, NULL};
  OK(cmx_vmap(g, in2, 2, only_x, &out_axes, 1, &outs, &nout));
  CHECK(nout == 1 && cmx_array_ndim(outs[0]) == 3 &&
        cmx_array_shape(outs[0])[0] == 4 && cmx_array_shape(outs[0])[1] == 2);
  cmx_arrays_free(outs, nout);
  /* out_axes CMX_VMAP_NONE: that output comes back unbatched; for an
   * output that depends on a mapped input it is an error. */
  int no_axis = CMX_VMAP_NONE;
  OK(cmx_vmap(g, in2, 2, only_x, &no_axis, 1, &outs, &nout));
  CHECK(nout == 1 && cmx_array_ndim(outs[0]) == 2 &&
        cmx_array_shape(outs[0])[0] == 2 && cmx_array_shape(outs[0])[1] == 4);
  cmx_arrays_free(outs, nout);
  FAILS(cmx_vmap(f, in, 2, in_axes, &no_axis, 1, &outs, &nout), CMX_ERR_VALUE,
        "out_axes is None for output 0");
  /* nout_axes 0: outputs as computed (batch first, or none). */
  OK(cmx_vmap(g, in2, 2, only_x, NULL, 0, &outs, &nout));
  CHECK(nout == 1 && cmx_array_ndim(outs[0]) == 2);
  cmx_arrays_free(outs, nout);
  OK(cmx_vmap(f, in, 2, in_axes, NULL, 0, &outs, &nout));
  CHECK(nout == 1 && cmx_array_ndim(outs[0]) == 2 &&
        cmx_array_shape(outs[0])[0] == 4);
  cmx_arrays_free(outs, nout);
  cmx_array_release(x);
  cmx_array_release(y);
  cmx_array_release(xs);
  cmx_array_release(ys);
  cmx_array_release(ones);
}

/* Evaluating inside a function: allowed under grad, an error under vmap. */
static cmx_status f_eval_inside(void* pl, const cmx_array* in, int n,
                                cmx_array** out, int* nout) {
  (void)pl, (void)n;
  cmx_array y = NULL, z = NULL;
  cmx_sin(&y, in[0], S);
  cmx_status st = cmx_array_eval(y);
  if (st == CMX_OK) st = cmx_multiply(&z, y, in[0], S);
  cmx_array_release(y);
  if (st != CMX_OK) return st;
  *out = one_out(z, nout);
  return CMX_OK;
}

static void test_eval_inside(void) {
  cmx_array x = scalar(0.3, CMX_FLOAT64), g = NULL;
  int arg = 0;
  cmx_closure f = {f_eval_inside, NULL};
  OK(cmx_value_and_grad(f, &x, 1, &arg, 1, NULL, NULL, &g));
  CHECK(fabs(item(g) - (cos(0.3) * 0.3 + sin(0.3))) < 1e-12);
  cmx_array_release(g);
  double v[2] = {1, 2};
  int64_t sh[1] = {2};
  cmx_array xs = f64(v, sh, 1);
  int ax = 0;
  cmx_array* outs = NULL;
  int nout = 0;
  FAILS(cmx_vmap(f, &xs, 1, &ax, &ax, 1, &outs, &nout), CMX_ERR_VALUE,
        "Attempting to eval an array during function transformations");
  cmx_array_release(xs);
  cmx_array_release(x);
}

/* value_and_grad with an aux output and a non-scalar loss. */
static cmx_status f_aux(void* pl, const cmx_array* in, int n, cmx_array** out,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array sq = NULL, s = NULL;
  cmx_multiply(&sq, in[0], in[0], S);
  cmx_sum(&s, sq, NULL, 0, false, S);
  *out = malloc(2 * sizeof **out);
  (*out)[0] = s;
  (*out)[1] = sq;
  *nout = 2;
  return CMX_OK;
}

static void test_value_and_grad_aux(void) {
  double v[3] = {1, -2, 3};
  int64_t sh[1] = {3};
  cmx_array x = f64(v, sh, 1), g = NULL;
  cmx_closure f = {f_aux, NULL}, fs = {f_sin, NULL};
  int arg = 0;
  cmx_array* outs = NULL;
  int nout = 0;
  OK(cmx_value_and_grad(f, &x, 1, &arg, 1, &outs, &nout, &g));
  CHECK(nout == 2 && item(outs[0]) == 14);
  const double* p = NULL;
  OK(cmx_array_data(g, (const void**)&p));
  CHECK(p[0] == 2 && p[1] == -4 && p[2] == 6);
  OK(cmx_array_data(outs[1], (const void**)&p));
  CHECK(p[0] == 1 && p[1] == 4 && p[2] == 9);
  cmx_arrays_free(outs, nout);
  cmx_array_release(g);
  FAILS(cmx_value_and_grad(fs, &x, 1, &arg, 1, NULL, NULL, &g), CMX_ERR_VALUE,
        "should be a scalar array");
  int bad = 3;
  FAILS(cmx_value_and_grad(fs, &x, 1, &bad, 1, NULL, NULL, &g), CMX_ERR_VALUE,
        "Invalid argument number");
  cmx_array_release(x);
}

/* A primitive with no rules: transforms name it. */
static cmx_status noop_cpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)p, (void)nin, (void)nout;
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  memcpy(cmx_kernel_data(out[0]), cmx_kernel_data(in[0]),
         (size_t)cmx_array_size(in[0]) * 8);
  return CMX_OK;
}
static const cmx_primitive_vtable noop_vt = {.name = "NoRules",
                                             .eval_cpu = noop_cpu};
static cmx_status f_norules(void* pl, const cmx_array* in, int n,
                            cmx_array** out, int* nout) {
  (void)pl, (void)n;
  cmx_primitive* p = cmx_primitive_new(&noop_vt, NULL, 0, S);
  cmx_array y = NULL, s = NULL;
  const int64_t* shapes[1] = {cmx_array_shape(in[0])};
  int nd = cmx_array_ndim(in[0]);
  cmx_dtype dt = CMX_FLOAT64;
  cmx_status st = cmx_primitive_apply(&y, 1, p, in, 1, shapes, &nd, &dt);
  if (st != CMX_OK) return st;
  st = cmx_sum(&s, y, NULL, 0, false, S);
  cmx_array_release(y);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}

static void test_missing_rules(void) {
  /* NoRules has a CPU kernel only (a user primitive without a GPU kernel
   * fails there, as in MLX): on the CPU whatever the default device. */
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(cmx_device_cpu()));
  double v[4] = {1, 2, 3, 4};
  int64_t sh[2] = {2, 2};
  cmx_array x = f64(v, sh, 2), g = NULL;
  cmx_closure f = {f_norules, NULL};
  int arg = 0;
  FAILS(cmx_value_and_grad(f, &x, 1, &arg, 1, NULL, NULL, &g), CMX_ERR_VALUE,
        "Not implemented for primitive NoRules");
  cmx_array t = scalar(1, CMX_FLOAT64);
  cmx_array *o = NULL, *j = NULL;
  int n = 0;
  cmx_array tx = NULL;
  cmx_ones_like(&tx, x, S);
  FAILS(cmx_jvp(f, &x, 1, &tx, &o, &j, &n), CMX_ERR_VALUE,
        "Not implemented for primitive NoRules");
  int ax = 0;
  FAILS(cmx_vmap(f, &x, 1, &ax, &ax, 1, &o, &n), CMX_ERR_VALUE,
        "Primitive NoRules has no vmap rule");
  /* The loop fallback runs it per batch element. */
  cmx_set_vmap_fallback(true);
  OK(cmx_vmap(f, &x, 1, &ax, &ax, 1, &o, &n));
  const double* p = NULL;
  CHECK(n == 1 && cmx_array_data(o[0], (const void**)&p) == CMX_OK && p &&
        p[0] == 3 && p[1] == 7);
  cmx_arrays_free(o, n);
  cmx_set_vmap_fallback(false);
  cmx_array_release(tx);
  cmx_array_release(t);
  cmx_array_release(x);
  OK(cmx_set_default_device(prev));
}

/* custom_function: fun = sin, vjp = a user rule (2 * cotangent), jvp = a
 * user rule (3 * tangent), no vmap (vmap of fun). */
static int g_released;
static cmx_status cf_vjp(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  cmx_array two = scalar(2, CMX_FLOAT64), r = NULL;
  cmx_multiply(&r, in[1], two, S); /* in = primal, cotangent, output */
  cmx_array_release(two);
  *out = one_out(r, nout);
  return CMX_OK;
}
static cmx_status cf_jvp(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  cmx_array three = scalar(3, CMX_FLOAT64), r = NULL;
  cmx_multiply(&r, in[1], three, S); /* in = primal, tangent */
  cmx_array_release(three);
  *out = one_out(r, nout);
  return CMX_OK;
}
static void cf_release(void* a, void* b, void* c, void* d) {
  (void)a, (void)b, (void)c, (void)d;
  g_released++;
}
static cmx_status f_custom(void* pl, const cmx_array* in, int n,
                           cmx_array** out, int* nout) {
  cmx_custom_function* cf = pl;
  cmx_array* o = NULL;
  int no = 0;
  cmx_status st = cmx_custom_function_apply(cf, in, n, &o, &no);
  if (st != CMX_OK) return st;
  cmx_array s = NULL;
  st = cmx_sum(&s, o[0], NULL, 0, false, S);
  cmx_arrays_free(o, no);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}

static void test_custom_function(void) {
  double v[3] = {0.1, 0.2, 0.3};
  int64_t sh[1] = {3};
  cmx_array x = f64(v, sh, 1), g = NULL;
  g_released = 0;
  {
    cmx_custom_function cf = {.fun = {f_sin, NULL},
                              .vjp = {cf_vjp, NULL},
                              .jvp = {cf_jvp, NULL},
                              .release = cf_release};
    cmx_closure f = {f_custom, &cf};
    int arg = 0;
    cmx_array* outs = NULL;
    int nout = 0;
    OK(cmx_value_and_grad(f, &x, 1, &arg, 1, &outs, &nout, &g));
    CHECK(fabs(item(outs[0]) - (sin(0.1) + sin(0.2) + sin(0.3))) < 1e-12);
    const double* p = NULL;
    OK(cmx_array_data(g, (const void**)&p));
    CHECK(p[0] == 2 && p[1] == 2 && p[2] == 2);
    cmx_arrays_free(outs, nout);
    cmx_array_release(g);
    cmx_array tx = NULL, *o = NULL, *j = NULL;
    int n = 0;
    cmx_ones_like(&tx, x, S);
    OK(cmx_jvp(f, &x, 1, &tx, &o, &j, &n));
    CHECK(n == 1 && item(j[0]) == 9);
    cmx_arrays_free(o, n);
    cmx_arrays_free(j, n);
    cmx_array_release(tx);
    /* vmap of fun (no user vmap rule): sum per element of sin. */
    int ax = 0;
    OK(cmx_vmap(f, &x, 1, &ax, &ax, 1, &o, &n));
    OK(cmx_array_data(o[0], (const void**)&p));
    CHECK(n == 1 && fabs(p[1] - sin(0.2)) < 1e-12);
    cmx_arrays_free(o, n);
  }
  /* Every array holding the closures is gone: released once per apply. */
  CHECK(g_released == 3);
  cmx_array_release(x);
}

/* checkpoint: same gradients as the plain function. */
static cmx_status f_mlp(void* pl, const cmx_array* in, int n, cmx_array** out,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array h = NULL, h2 = NULL, s = NULL;
  cmx_sin(&h, in[0], S);
  cmx_multiply(&h2, h, in[1], S);
  cmx_cos(&s, h2, S);
  cmx_array_release(h);
  cmx_array_release(h2);
  *out = one_out(s, nout);
  return CMX_OK;
}
static cmx_status f_ckpt_loss(void* pl, const cmx_array* in, int n,
                              cmx_array** out, int* nout) {
  cmx_array* o = NULL;
  int no = 0;
  cmx_closure f = {f_mlp, NULL};
  cmx_status st = pl ? cmx_checkpoint_apply(f, NULL, in, n, &o, &no)
                     : cmx_closure_call(f, in, n, &o, &no);
  if (st != CMX_OK) return st;
  cmx_array s = NULL;
  cmx_sum(&s, o[0], NULL, 0, false, S);
  cmx_arrays_free(o, no);
  *out = one_out(s, nout);
  return CMX_OK;
}

static void test_checkpoint(void) {
  double v[4] = {0.1, 0.2, 0.3, 0.4}, w[4] = {1, -1, 2, 0.5};
  int64_t sh[1] = {4};
  cmx_array in[2] = {f64(v, sh, 1), f64(w, sh, 1)};
  int args[2] = {0, 1};
  cmx_array g1[2], g2[2];
  cmx_closure plain = {f_ckpt_loss, NULL}, ck = {f_ckpt_loss, (void*)1};
  OK(cmx_value_and_grad(plain, in, 2, args, 2, NULL, NULL, g1));
  OK(cmx_value_and_grad(ck, in, 2, args, 2, NULL, NULL, g2));
  for (int k = 0; k < 2; k++) {
    CHECK(tc_max_err(g2[k], g1[k]) < 1e-14);
    cmx_array_release(g1[k]);
    cmx_array_release(g2[k]);
  }
  cmx_array_release(in[0]);
  cmx_array_release(in[1]);
}

int main(void) {
  RUN(test_grad_of_sin);
  RUN(test_vjp_accumulates);
  RUN(test_checks);
  RUN(test_vmap_add);
  RUN(test_eval_inside);
  RUN(test_value_and_grad_aux);
  RUN(test_missing_rules);
  RUN(test_custom_function);
  RUN(test_checkpoint);
  return test_summary("test_transforms");
}
