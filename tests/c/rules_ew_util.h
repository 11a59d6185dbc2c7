/* Helpers shared by the elementwise rule tests (test_rules_elementwise*.c);
 * includes test.h and tcheck.h.
 *
 *   ew_rand(shape, ndim, lo, hi)   float64 values in [lo, hi]
 *   ew_transposed / ew_sliced      evaluated non-contiguous views
 *   ew_check_zero_grad             vjp and jvp are exactly zero
 *   ew_check_rules                 calls an op's own rules directly and
 *                                  checks the dtypes and shapes they give
 *   ew_grad_fn                     x -> grad of sum(fn(x)) (second order)
 */
#ifndef CMX_TEST_RULES_EW_UTIL_H
#define CMX_TEST_RULES_EW_UTIL_H

#include "cmx/primitive.h"
#include "core/internal.h"
#include "ops/ops_internal.h"
#include "test.h"
/* tcheck.h after test.h (it uses CHECK). */
#include "tcheck.h"

static cmx_stream S = CMX_STREAM_DEFAULT;
static uint64_t ew_seed = 777;

/* A uniform double in [0, 1). */
static double ew_unit(void) {
  ew_seed = ew_seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(ew_seed >> 11) / 9007199254740992.0;
}

/* A float64 array of the given shape, values uniform in [lo, hi]; with
 * lo > 0 and `signed_` the values get random signs (|v| in [lo, hi]). */
static cmx_array ew_rand_s(const int64_t* shape, int ndim, double lo, double hi,
                           bool signed_) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  double* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) {
    v[i] = lo + (hi - lo) * ew_unit();
    if (signed_ && ew_unit() < 0.5) v[i] = -v[i];
  }
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, ndim, CMX_FLOAT64);
  free(v);
  return a;
}
static cmx_array ew_rand(const int64_t* shape, int ndim, double lo, double hi) {
  return ew_rand_s(shape, ndim, lo, hi, false);
}

/* a converted to dt (evaluated). */
static cmx_array ew_cast(cmx_array a, cmx_dtype dt) {
  cmx_array r = NULL;
  cmx_astype(&r, a, dt, S);
  cmx_array_eval(r);
  return r;
}

/* An evaluated (rows x cols) view with transposed strides: the transpose
 * of a fresh (cols x rows) array. */
static cmx_array ew_transposed(int64_t rows, int64_t cols, double lo, double hi,
                               bool signed_) {
  int64_t sh[2] = {cols, rows};
  int perm[2] = {1, 0};
  cmx_array base = ew_rand_s(sh, 2, lo, hi, signed_), t = NULL;
  cmx_transpose(&t, base, perm, 2, S);
  cmx_array_eval(t);
  cmx_array_release(base);
  return t;
}

/* An evaluated (rows x cols) strided slice: every 2nd row and 3rd column
 * of a larger array, starting at (1, 1). */
static cmx_array ew_sliced(int64_t rows, int64_t cols, double lo, double hi,
                           bool signed_) {
  int64_t sh[2] = {2 * rows + 1, 3 * cols + 1};
  int64_t start[2] = {1, 1}, stop[2] = {2 * rows + 1, 3 * cols + 1};
  int64_t step[2] = {2, 3};
  cmx_array base = ew_rand_s(sh, 2, lo, hi, signed_), t = NULL;
  cmx_slice(&t, base, start, stop, step, S);
  cmx_array_eval(t);
  cmx_array_release(base);
  return t;
}

/* True when every element of a is zero. */
static bool ew_all_zero(cmx_array a) {
  cmx_array z = NULL, c = NULL;
  bool r = false;
  if (cmx_zeros_like(&z, a, S) == CMX_OK &&
      cmx_array_equal(&c, a, z, false, S) == CMX_OK) {
    double v = 0;
    r = cmx_array_item_double(c, &v) == CMX_OK && v == 1;
  }
  cmx_array_release(z);
  cmx_array_release(c);
  return r;
}

/* The vjp of fn (cotangents of ones) and its jvp (tangents of ones for
 * inexact inputs) are exactly zero, and the vjps keep the inputs'
 * dtypes. */
static void ew_check_zero_grad(const char* name, tc_fn fn, void* ctx,
                               const cmx_array* x, int n) {
  tc_closure c = {fn, ctx};
  cmx_closure f = {tc_call, &c};
  cmx_array o[8] = {0}, ones[8] = {0}, vjps[8] = {0}, tans[8] = {0};
  int no = 0;
  cmx_status st = fn(ctx, x, n, o, &no);
  CHECK_MSG(st == CMX_OK, "%s: forward failed: %s", name, cmx_last_error());
  if (st != CMX_OK) return;
  for (int j = 0; j < no; j++) cmx_ones_like(&ones[j], o[j], S);
  st = cmx_vjp(f, x, n, ones, no, NULL, NULL, vjps);
  CHECK_MSG(st == CMX_OK, "%s: vjp failed: %s", name, cmx_last_error());
  for (int i = 0; st == CMX_OK && i < n; i++)
    CHECK_MSG(ew_all_zero(vjps[i]) &&
                  cmx_array_dtype(vjps[i]) == cmx_array_dtype(x[i]),
              "%s: vjp %d is not a zero of the input's dtype", name, i);
  for (int i = 0; i < n; i++) {
    if (cmx_dtype_is_inexact(cmx_array_dtype(x[i])))
      cmx_ones_like(&tans[i], x[i], S);
    else
      cmx_zeros_like(&tans[i], x[i], S);
  }
  cmx_array *jo = NULL, *jv = NULL;
  int nj = 0;
  st = cmx_jvp(f, x, n, tans, &jo, &jv, &nj);
  CHECK_MSG(st == CMX_OK, "%s: jvp failed: %s", name, cmx_last_error());
  for (int j = 0; st == CMX_OK && j < nj; j++)
    CHECK_MSG(ew_all_zero(jv[j]), "%s: jvp %d is not zero", name, j);
  cmx_arrays_free(jo, nj);
  cmx_arrays_free(jv, nj);
  for (int i = 0; i < 8; i++) {
    cmx_array_release(o[i]);
    cmx_array_release(ones[i]);
    cmx_array_release(vjps[i]);
    cmx_array_release(tans[i]);
  }
}

static bool ew_same_shape(cmx_array a, cmx_array b) {
  return cmx_array_ndim(a) == cmx_array_ndim(b) &&
         !memcmp(cmx_array_shape(a), cmx_array_shape(b),
                 (size_t)cmx_array_ndim(a) * sizeof(int64_t));
}

/* Applies the rules of the primitive producing fn's first output (lazy)
 * directly, after checking that it is `prim` (so the rule under test is
 * the one called). Its vjp, with a cotangent of ones and every input as
 * an argnum, must give each inexact input a cotangent of its shape and
 * dtype and the others none; its jvp, with tangents of ones, a tangent of
 * the output's shape and dtype that evaluates. With `zero` every result
 * must be "none" (NULL). */
static void ew_check_rules(const char* name, const char* prim, tc_fn fn,
                           void* ctx, const cmx_array* x, int n, bool zero) {
  cmx_array o[8] = {0};
  int no = 0;
  cmx_status st = fn(ctx, x, n, o, &no);
  CHECK_MSG(st == CMX_OK, "%s: forward failed: %s", name, cmx_last_error());
  if (st != CMX_OK) return;
  const cmx_primitive* p = cmx_array_primitive(o[0]);
  bool right = p && !strcmp(cmx_primitive_name(p), prim);
  CHECK_MSG(right, "%s: output made by %s, not %s", name,
            p ? cmx_primitive_name(p) : "(none)", prim);
  int nin = 0;
  const cmx_array* in = right ? cmx_array_inputs(o[0], &nin) : NULL;
  if (right && nin <= 8) {
    const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
    size_t mark = cmx__scope_enter();
    cmx_array ct = cmx__ones_like(o[0], S), out[8] = {0}, tans[8] = {0};
    int args[8];
    for (int i = 0; i < nin; i++) {
      tans[i] = cmx__ones_like(in[i], S);
      args[i] = i;
    }
    st = vt->vjp(p, in, nin, &ct, 1, args, nin, o, out);
    CHECK_MSG(st == CMX_OK, "%s: vjp rule failed: %s", name, cmx_last_error());
    for (int k = 0; st == CMX_OK && k < nin; k++) {
      cmx_dtype dt = cmx_array_dtype(in[k]);
      if (zero || !cmx_dtype_is_inexact(dt)) {
        CHECK_MSG(!out[k], "%s: input %d should get no cotangent", name, k);
        continue;
      }
      CHECK_MSG(out[k] && ew_same_shape(out[k], in[k]) &&
                    cmx_array_dtype(out[k]) == dt,
                "%s: cotangent %d has the wrong shape or dtype (%s, want "
                "%s)",
                name, k,
                out[k] ? cmx_dtype_name(cmx_array_dtype(out[k])) : "none",
                cmx_dtype_name(dt));
    }
    for (int k = 0; k < 8; k++) cmx_array_release(out[k]);
    cmx_array jout[1] = {0};
    st = vt->jvp(p, in, nin, tans, args, nin, o, jout, 1);
    CHECK_MSG(st == CMX_OK, "%s: jvp rule failed: %s", name, cmx_last_error());
    if (zero) {
      CHECK_MSG(!jout[0], "%s: the tangent should be none", name);
    } else {
      CHECK_MSG(st == CMX_OK && jout[0] && ew_same_shape(jout[0], o[0]) &&
                    cmx_array_dtype(jout[0]) == cmx_array_dtype(o[0]),
                "%s: tangent has the wrong shape or dtype", name);
      /* The values must be computable too (no kernel missing). */
      CHECK_MSG(st == CMX_OK && jout[0] && cmx_array_eval(jout[0]) == CMX_OK,
                "%s: tangent does not evaluate: %s", name, cmx_last_error());
    }
    cmx_array_release(jout[0]);
    cmx__scope_exit_n(mark, NULL, NULL, 0);
  }
  for (int j = 0; j < no; j++) cmx_array_release(o[j]);
}

/* ---- second order: x -> gradient of sum(fn(x)[0]) ---- */
typedef struct ew_grad_ctx {
  tc_fn fn;
  void* ctx;
} ew_grad_ctx;

/* sum(fn(in)[0]) as a closure (payload: ew_grad_ctx). */
static cmx_status ew_sum_call(void* payload, const cmx_array* in, int nin,
                              cmx_array** outputs, int* nout) {
  ew_grad_ctx* g = payload;
  cmx_array o[8] = {0};
  int no = 0;
  cmx_status st = g->fn(g->ctx, in, nin, o, &no);
  cmx_array s = NULL;
  if (st == CMX_OK) st = cmx_sum(&s, o[0], NULL, 0, false, S);
  for (int j = 0; j < 8; j++) cmx_array_release(o[j]);
  if (st != CMX_OK) return st;
  *outputs = malloc(sizeof(cmx_array));
  (*outputs)[0] = s;
  *nout = 1;
  return CMX_OK;
}

/* A tc_fn: the gradients of sum(fn(x)) with respect to every inexact
 * input, one output each. */
static cmx_status ew_grad_fn(void* ctx, const cmx_array* in, int n,
                             cmx_array* outs, int* nout) {
  cmx_closure f = {ew_sum_call, ctx};
  int args[8], na = 0;
  for (int i = 0; i < n && i < 8; i++)
    if (cmx_dtype_is_inexact(cmx_array_dtype(in[i]))) args[na++] = i;
  cmx_status st = cmx_value_and_grad(f, in, n, args, na, NULL, NULL, outs);
  *nout = st == CMX_OK ? na : 0;
  return st;
}

#endif
