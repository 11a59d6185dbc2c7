/* Transform checks for the C tests (include after test.h).
 *
 * An op under test is wrapped as a tc_fn: a C function from n input arrays
 * to one or more outputs (an op with its parameters bound through `ctx`).
 *
 *   tc_check_grad(name, fn, ctx, inputs, n, tol)
 *     vjp against central finite differences: for random directions v
 *     (one per input) and random cotangents u (one per output),
 *     sum_i <vjp_i(u), v_i>  ==  sum_j <u_j, (f(x + h v) - f(x - h v))/2h>,
 *     and jvp against vjp (the transposition identity):
 *     sum_j <u_j, jvp_j(v)>  ==  sum_i <vjp_i(u), v_i>.
 *     Inputs should be float64 so the differences are accurate. Integer
 *     and bool inputs are held constant: the vjp and jvp are taken with
 *     respect to the float inputs only.
 *   tc_check_vmap(name, fn, ctx, inputs, n, in_axes, out_axis)
 *     vmap of fn over in_axes (CMX_VMAP_NONE: not mapped) equals calling
 *     fn per batch element (inputs sliced with take) and stacking the
 *     results on out_axis.
 * Both count one CHECK per comparison and print the op name on failure.
 * Both run on every device (devices.h): the checks above on the CPU, then
 * on each GPU (made the thread's default device, so fn's default-stream
 * ops run there) the same outputs, vjps, jvps and vmaps, compared with the
 * CPU's: exactly for integer and bool results, within tol (grad) or 1e-5
 * (vmap) for floats. GPU cases whose graphs need a primitive without a GPU
 * kernel are counted as such, not evaluated.
 */
#ifndef CMX_TEST_TCHECK_H
#define CMX_TEST_TCHECK_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/cmx.h"
#include "cmx/transforms.h"
#include "devices.h"
#include "test.h"

typedef cmx_status (*tc_fn)(void* ctx, const cmx_array* in, int n,
                            cmx_array* outs, int* nout);

typedef struct tc_closure {
  tc_fn fn;
  void* ctx;
} tc_closure;

/* Adapts a tc_fn to a cmx_closure (at most 8 outputs). */
static cmx_status tc_call(void* payload, const cmx_array* in, int nin,
                          cmx_array** outputs, int* nout) {
  tc_closure* c = payload;
  cmx_array outs[8] = {0};
  int n = 0;
  cmx_status st = c->fn(c->ctx, in, nin, outs, &n);
  if (st != CMX_OK) {
    for (int i = 0; i < 8; i++) cmx_array_release(outs[i]);
    return st;
  }
  *outputs = malloc((size_t)(n ? n : 1) * sizeof(cmx_array));
  memcpy(*outputs, outs, (size_t)n * sizeof(cmx_array));
  *nout = n;
  return CMX_OK;
}

static uint64_t tc_seed = 12345;

/* A random float64 array of a's shape, values in [-1, 1). */
static cmx_array tc_random_like(cmx_array a) {
  int64_t n = cmx_array_size(a);
  double* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    tc_seed = tc_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v[i] = (double)(tc_seed >> 11) / 9007199254740992.0 * 2.0 - 1.0;
  }
  cmx_array r = NULL;
  cmx_array_from_data(&r, v, cmx_array_shape(a), cmx_array_ndim(a),
                      CMX_FLOAT64);
  free(v);
  return r;
}

/* sum(a * b) in float64 as a double. */
static double tc_dot(cmx_array a, cmx_array b) {
  cmx_array a64 = NULL, b64 = NULL, p = NULL, s = NULL;
  double r = NAN;
  if (cmx_astype(&a64, a, CMX_FLOAT64, CMX_STREAM_DEFAULT) == CMX_OK &&
      cmx_astype(&b64, b, CMX_FLOAT64, CMX_STREAM_DEFAULT) == CMX_OK &&
      cmx_multiply(&p, a64, b64, CMX_STREAM_DEFAULT) == CMX_OK &&
      cmx_sum(&s, p, NULL, 0, false, CMX_STREAM_DEFAULT) == CMX_OK)
    cmx_array_item_double(s, &r);
  cmx_array_release(a64);
  cmx_array_release(b64);
  cmx_array_release(p);
  cmx_array_release(s);
  return r;
}

static bool tc_is_float(cmx_array a) {
  return cmx_dtype_is_inexact(cmx_array_dtype(a));
}

/* f(x + h v) outputs. */
static int tc_eval_shifted(tc_closure* c, const cmx_array* x,
                           const cmx_array* v, int n, double h,
                           cmx_array* outs) {
  cmx_array xs[8];
  for (int i = 0; i < n; i++) {
    if (!v[i]) {
      xs[i] = cmx_array_retain(x[i]);
      continue;
    }
    cmx_array hv = NULL, hs = NULL;
    cmx_array_from_double(&hs, h, CMX_FLOAT64);
    cmx_multiply(&hv, v[i], hs, CMX_STREAM_DEFAULT);
    cmx_array sum = NULL;
    cmx_add(&sum, x[i], hv, CMX_STREAM_DEFAULT);
    cmx_astype(&xs[i], sum, cmx_array_dtype(x[i]), CMX_STREAM_DEFAULT);
    cmx_array_release(hv);
    cmx_array_release(hs);
    cmx_array_release(sum);
  }
  int nout = 0;
  cmx_status st = c->fn(c->ctx, xs, n, outs, &nout);
  for (int i = 0; i < n; i++) cmx_array_release(xs[i]);
  return st == CMX_OK ? nout : -1;
}

/* fn with its integer and bool inputs bound: the transforms differentiate
 * the float inputs only, as a user would (MLX and cmx refuse a derivative
 * with respect to a gather's or scatter's indices). */
typedef struct {
  tc_closure* c;
  const cmx_array* x; /* all n inputs */
  int n;
  int pos[8]; /* the float inputs' positions in x */
  int nf;
} tc_float_closure;

static cmx_status tc_call_floats(void* payload, const cmx_array* in, int nin,
                                 cmx_array** outputs, int* nout) {
  tc_float_closure* fc = payload;
  cmx_array all[8];
  for (int i = 0; i < fc->n; i++) all[i] = fc->x[i];
  for (int k = 0; k < nin && k < fc->nf; k++) all[fc->pos[k]] = in[k];
  return tc_call(fc->c, all, fc->n, outputs, nout);
}

static void tc_float_inputs(tc_float_closure* fc, tc_closure* c,
                            const cmx_array* x, int n) {
  fc->c = c;
  fc->x = x;
  fc->n = n;
  fc->nf = 0;
  for (int i = 0; i < n; i++)
    if (cmx_dtype_is_inexact(cmx_array_dtype(x[i]))) fc->pos[fc->nf++] = i;
}

/* cmx_vjp of c with respect to its float inputs (the others bound); g[i]
 * gets input i's vjp, NULL for the bound ones. */
static inline cmx_status tc_vjp_floats(tc_closure* c, const cmx_array* x, int n,
                                       const cmx_array* cot, int ncot,
                                       cmx_array* g) {
  tc_float_closure fc;
  tc_float_inputs(&fc, c, x, n);
  cmx_closure f = {tc_call_floats, &fc};
  cmx_array xf[8], gf[8] = {0};
  for (int k = 0; k < fc.nf; k++) xf[k] = x[fc.pos[k]];
  for (int i = 0; i < n; i++) g[i] = NULL;
  cmx_status st = cmx_vjp(f, xf, fc.nf, cot, ncot, NULL, NULL, gf);
  for (int k = 0; st == CMX_OK && k < fc.nf; k++) g[fc.pos[k]] = gf[k];
  return st;
}

/* What one device computes for tc_check_grad: fn's outputs, the vjps of
 * cotangents u and the jvps of tangents tans (lazy until read). */
typedef struct {
  cmx_array o[8], vjp[8], jvp[8];
  int no, nvjp, njvp;
  cmx_status st; /* the first failure */
  const char* step;
} tc_grad_results;

static void tc_grad_compute(tc_closure* c, const cmx_array* x, int n,
                            const cmx_array* u, int nu, const cmx_array* tans,
                            tc_grad_results* r) {
  tc_float_closure fc;
  tc_float_inputs(&fc, c, x, n);
  cmx_closure f = {tc_call_floats, &fc};
  cmx_array xf[8], tf[8], vf[8] = {0};
  for (int k = 0; k < fc.nf; k++) {
    xf[k] = x[fc.pos[k]];
    tf[k] = tans[fc.pos[k]];
  }
  memset(r, 0, sizeof *r);
  cmx_array* outs = NULL;
  int nout = 0;
  r->step = "forward";
  r->st = c->fn(c->ctx, x, n, r->o, &r->no);
  if (r->st != CMX_OK) return;
  r->step = "vjp";
  r->st = cmx_vjp(f, xf, fc.nf, u, nu, &outs, &nout, vf);
  if (r->st != CMX_OK) return;
  for (int k = 0; k < fc.nf; k++) r->vjp[fc.pos[k]] = vf[k];
  r->nvjp = n;
  cmx_arrays_free(outs, nout);
  cmx_array* jvps = NULL;
  cmx_array* jouts = NULL;
  r->step = "jvp";
  int nj = 0;
  r->st = cmx_jvp(f, xf, fc.nf, tf, &jouts, &jvps, &nj);
  if (r->st != CMX_OK) return;
  for (int j = 0; j < nj && j < 8; j++) r->jvp[j] = cmx_array_retain(jvps[j]);
  r->njvp = nj < 8 ? nj : 8;
  cmx_arrays_free(jvps, nj);
  cmx_arrays_free(jouts, nj);
}

static void tc_grad_free(tc_grad_results* r) {
  for (int j = 0; j < 8; j++) {
    cmx_array_release(r->o[j]);
    cmx_array_release(r->vjp[j]);
    cmx_array_release(r->jvp[j]);
  }
}

static double tc_max_err(cmx_array a, cmx_array b);

/* got agrees with want (the CPU's) as devices must: exactly when integer
 * or bool, else within tol. */
static bool tc_agrees(cmx_array got, cmx_array want, double tol) {
  if (!got || !want) return !got && !want;
  if (cmx_array_dtype(got) != cmx_array_dtype(want)) return false;
  double err = tc_max_err(got, want);
  return cmx_dtype_is_inexact(cmx_array_dtype(want)) ? err <= tol : err == 0;
}

/* tc_check_grad's results on each GPU against the CPU's (cpu). */
static void tc_grad_on_gpus(const char* name, tc_closure* c, const cmx_array* x,
                            int n, const cmx_array* u, int nu,
                            const cmx_array* tans, const tc_grad_results* cpu,
                            double tol) {
  for (int dev = 1; dev < h_ndevices(); dev++) {
    char what[400], dname[32];
    snprintf(what, sizeof what, "%.300s grad on %s", name,
             h_device_name(dev, dname, sizeof dname));
    cmx_device prev = cmx_default_device();
    tc_grad_results g;
    OK(cmx_set_default_device(h_device(dev)));
    tc_grad_compute(c, x, n, u, nu, tans, &g);
    OK(cmx_set_default_device(prev));
    cmx_array all[24];
    int na = 0;
    for (int j = 0; j < 8; j++) {
      if (g.o[j]) all[na++] = g.o[j];
      if (g.vjp[j]) all[na++] = g.vjp[j];
      if (g.jvp[j]) all[na++] = g.jvp[j];
    }
    if (g.st != CMX_OK) {
      if (!h_gpu_skip_notimpl(g.st, cmx_last_error(), what))
        CHECK_MSG(false, "%s: %s failed: %s", what, g.step, cmx_last_error());
    } else if (!h_gpu_skip_missing(all, na, what) &&
               h_gpu_eval(all, na, what)) {
      bool ok = g.no == cpu->no && g.njvp == cpu->njvp;
      for (int j = 0; ok && j < 8; j++)
        ok = tc_agrees(g.o[j], cpu->o[j], tol) &&
             tc_agrees(g.vjp[j], cpu->vjp[j], tol) &&
             tc_agrees(g.jvp[j], cpu->jvp[j], tol);
      CHECK_MSG(ok, "%s: outputs, vjps or jvps differ from the cpu's", what);
    }
    tc_grad_free(&g);
  }
}

static inline void tc_grad_all_devices(const char* name, tc_fn fn, void* ctx,
                                       const cmx_array* x, int n, double tol) {
  tc_closure c = {fn, ctx};
  cmx_array v[8] = {0}, u[8] = {0}, tans[8] = {0};
  for (int i = 0; i < n; i++)
    if (tc_is_float(x[i])) v[i] = tc_random_like(x[i]);
  /* Outputs first, to size the cotangents. */
  cmx_array o0[8] = {0};
  int n0 = 0;
  cmx_status st = fn(ctx, x, n, o0, &n0);
  CHECK_MSG(st == CMX_OK, "%s: forward failed: %s", name, cmx_last_error());
  if (st != CMX_OK) return;
  for (int j = 0; j < n0; j++) {
    u[j] = tc_random_like(o0[j]);
    cmx_array_release(o0[j]);
  }
  for (int i = 0; i < n; i++) {
    if (v[i]) {
      cmx_astype(&tans[i], v[i], cmx_array_dtype(x[i]), CMX_STREAM_DEFAULT);
    } else {
      cmx_zeros_like(&tans[i], x[i], CMX_STREAM_DEFAULT);
    }
  }
  tc_grad_results r;
  tc_grad_compute(&c, x, n, u, n0, tans, &r);
  CHECK_MSG(r.st == CMX_OK, "%s: %s failed: %s", name, r.step,
            cmx_last_error());
  if (r.st == CMX_OK) {
    double lhs = 0;
    for (int i = 0; i < n; i++)
      if (v[i]) lhs += tc_dot(r.vjp[i], v[i]);
    /* Central differences. */
    double h = 1e-6, fd = 0;
    cmx_array plus[8] = {0}, minus[8] = {0};
    int np = tc_eval_shifted(&c, x, v, n, h, plus);
    int nm = tc_eval_shifted(&c, x, v, n, -h, minus);
    for (int j = 0; j < np && j < nm && j < n0; j++) {
      cmx_array d = NULL;
      cmx_array p64 = NULL, m64 = NULL;
      cmx_astype(&p64, plus[j], CMX_FLOAT64, CMX_STREAM_DEFAULT);
      cmx_astype(&m64, minus[j], CMX_FLOAT64, CMX_STREAM_DEFAULT);
      cmx_subtract(&d, p64, m64, CMX_STREAM_DEFAULT);
      fd += tc_dot(u[j], d) / (2 * h);
      cmx_array_release(d);
      cmx_array_release(p64);
      cmx_array_release(m64);
    }
    for (int j = 0; j < 8; j++) {
      cmx_array_release(plus[j]);
      cmx_array_release(minus[j]);
    }
    double scale = fabs(lhs) > 1 ? fabs(lhs) : 1;
    CHECK_MSG(np == n0 && nm == n0 && fabs(lhs - fd) <= tol * scale,
              "%s: vjp.v = %.12g, finite differences %.12g", name, lhs, fd);
    /* jvp against vjp. */
    double rhs = 0;
    for (int j = 0; j < r.njvp; j++) rhs += tc_dot(u[j], r.jvp[j]);
    CHECK_MSG(
        r.njvp == n0 && fabs(lhs - rhs) <= 1e-9 * scale + tol * 1e-3 * scale,
        "%s: vjp.v = %.12g, u.jvp = %.12g", name, lhs, rhs);
    tc_grad_on_gpus(name, &c, x, n, u, n0, tans, &r, tol);
  }
  tc_grad_free(&r);
  for (int i = 0; i < 8; i++) {
    cmx_array_release(v[i]);
    cmx_array_release(u[i]);
    cmx_array_release(tans[i]);
  }
}

/* Largest |a - b| relative to max(1, |b|), NaN/shape mismatch -> inf. */
static double tc_max_err(cmx_array a, cmx_array b) {
  if (cmx_array_ndim(a) != cmx_array_ndim(b) ||
      memcmp(cmx_array_shape(a), cmx_array_shape(b),
             (size_t)cmx_array_ndim(a) * sizeof(int64_t)))
    return INFINITY;
  cmx_array a64 = NULL, b64 = NULL;
  cmx_astype(&a64, a, CMX_FLOAT64, CMX_STREAM_DEFAULT);
  cmx_astype(&b64, b, CMX_FLOAT64, CMX_STREAM_DEFAULT);
  const double *pa = NULL, *pb = NULL;
  double err = INFINITY;
  if (cmx_array_eval(a64) == CMX_OK && cmx_array_eval(b64) == CMX_OK) {
    cmx_array ca = NULL, cb = NULL;
    cmx_contiguous(&ca, a64, false, CMX_STREAM_DEFAULT);
    cmx_contiguous(&cb, b64, false, CMX_STREAM_DEFAULT);
    if (cmx_array_data(ca, (const void**)&pa) == CMX_OK &&
        cmx_array_data(cb, (const void**)&pb) == CMX_OK) {
      err = 0;
      for (int64_t i = 0; i < cmx_array_size(ca); i++) {
        if (isnan(pa[i]) && isnan(pb[i])) continue;
        double d = fabs(pa[i] - pb[i]) / fmax(1.0, fabs(pb[i]));
        if (!(d <= err)) err = d;
      }
    }
    cmx_array_release(ca);
    cmx_array_release(cb);
  }
  cmx_array_release(a64);
  cmx_array_release(b64);
  return err;
}

static inline void tc_vmap_all_devices(const char* name, tc_fn fn, void* ctx,
                                       const cmx_array* x, int n,
                                       const int* in_axes, int out_axis) {
  tc_closure c = {fn, ctx};
  cmx_closure f = {tc_call, &c};
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_status st = cmx_vmap(f, x, n, in_axes, &out_axis, 1, &outs, &nout);
  CHECK_MSG(st == CMX_OK, "%s: vmap failed: %s", name, cmx_last_error());
  if (st != CMX_OK) return;
  int64_t B = -1;
  for (int i = 0; i < n; i++)
    if (in_axes[i] != CMX_VMAP_NONE) {
      int ax = in_axes[i] < 0 ? in_axes[i] + cmx_array_ndim(x[i]) : in_axes[i];
      B = cmx_array_shape(x[i])[ax];
    }
  cmx_array per[8][64] = {{0}};
  int nper = 0;
  for (int64_t b = 0; b < B && b < 64; b++) {
    cmx_array xs[8], idx = NULL;
    cmx_array_from_double(&idx, (double)b, CMX_INT32);
    for (int i = 0; i < n; i++) {
      if (in_axes[i] == CMX_VMAP_NONE) {
        xs[i] = cmx_array_retain(x[i]);
      } else {
        cmx_take(&xs[i], x[i], idx, &in_axes[i], CMX_STREAM_DEFAULT);
      }
    }
    cmx_array o[8] = {0};
    int no = 0;
    st = fn(ctx, xs, n, o, &no);
    for (int i = 0; i < n; i++) cmx_array_release(xs[i]);
    cmx_array_release(idx);
    CHECK_MSG(st == CMX_OK && no == nout, "%s: loop call failed: %s", name,
              cmx_last_error());
    for (int j = 0; j < no; j++) per[j][b] = o[j];
    nper = no;
  }
  for (int j = 0; j < nout && j < nper; j++) {
    cmx_array want = NULL;
    OK(cmx_stack(&want, per[j], (int)B, out_axis, CMX_STREAM_DEFAULT));
    double err = tc_max_err(outs[j], want);
    CHECK_MSG(err <= 1e-5, "%s: vmap output %d differs from the loop (%g)",
              name, j, err);
    cmx_array_release(want);
  }
  /* The same vmap on each GPU, against the CPU's. */
  for (int dev = 1; dev < h_ndevices(); dev++) {
    char what[400], dname[32];
    snprintf(what, sizeof what, "%.300s vmap on %s", name,
             h_device_name(dev, dname, sizeof dname));
    cmx_device prev = cmx_default_device();
    cmx_array* gouts = NULL;
    int ng = 0;
    OK(cmx_set_default_device(h_device(dev)));
    st = cmx_vmap(f, x, n, in_axes, &out_axis, 1, &gouts, &ng);
    OK(cmx_set_default_device(prev));
    if (st != CMX_OK) {
      if (!h_gpu_skip_notimpl(st, cmx_last_error(), what))
        CHECK_MSG(false, "%s: %s", what, cmx_last_error());
    } else if (!h_gpu_skip_missing(gouts, ng, what) &&
               h_gpu_eval(gouts, ng, what)) {
      bool ok = ng == nout;
      for (int j = 0; ok && j < nout; j++)
        ok = tc_agrees(gouts[j], outs[j], 1e-5);
      CHECK_MSG(ok, "%s: outputs differ from the cpu's", what);
    }
    cmx_arrays_free(gouts, ng);
  }
  for (int j = 0; j < 8; j++)
    for (int b = 0; b < 64; b++) cmx_array_release(per[j][b]);
  cmx_arrays_free(outs, nout);
}

/* The checks run with the CPU as the thread's default device (fn's
 * default-stream ops on the CPU, then each GPU made the default in turn),
 * whatever the default was (a GPU when present); it is restored after. */
static inline void tc_check_grad(const char* name, tc_fn fn, void* ctx,
                                 const cmx_array* x, int n, double tol) {
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(cmx_device_cpu()));
  tc_grad_all_devices(name, fn, ctx, x, n, tol);
  OK(cmx_set_default_device(prev));
}

static inline void tc_check_vmap(const char* name, tc_fn fn, void* ctx,
                                 const cmx_array* x, int n, const int* in_axes,
                                 int out_axis) {
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(cmx_device_cpu()));
  tc_vmap_all_devices(name, fn, ctx, x, n, in_axes, out_axis);
  OK(cmx_set_default_device(prev));
}

#endif
