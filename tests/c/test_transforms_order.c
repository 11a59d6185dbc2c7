/* Driver additions of the Python-transforms work: cmx_custom_jvp_argnums
 * inside a custom jvp rule, the ordering of cotangent contributions in
 * cmx_vjp (values unchanged, second order through it, intermediates freed
 * on the way back), and MLX's grad hint in the vjp shape message. */
#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

static cmx_array f64(const double* v, const int64_t* shape, int ndim) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, ndim, CMX_FLOAT64);
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

/* ---- cmx_custom_jvp_argnums ---- */

static int g_argnums[4], g_nargnums;

/* x * y */
static cmx_status f_mul(void* pl, const cmx_array* in, int n, cmx_array** out,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array y = NULL;
  cmx_status st = cmx_multiply(&y, in[0], in[1], S);
  if (st != CMX_OK) return st;
  *out = one_out(y, nout);
  return CMX_OK;
}
/* The jvp of x * y, recording which inputs had tangents. */
static cmx_status mul_jvp(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  (void)pl, (void)n;
  g_nargnums = cmx_custom_jvp_argnums(g_argnums, 4);
  cmx_array a = NULL, b = NULL, r = NULL;
  cmx_multiply(&a, in[2], in[1], S); /* dx * y */
  cmx_multiply(&b, in[0], in[3], S); /* x * dy */
  cmx_status st = cmx_add(&r, a, b, S);
  cmx_array_release(a);
  cmx_array_release(b);
  if (st != CMX_OK) return st;
  *out = one_out(r, nout);
  return CMX_OK;
}
/* custom(x, c) with c captured (payload): only x has a tangent. */
static cmx_status f_custom_x(void* pl, const cmx_array* in, int n,
                             cmx_array** out, int* nout) {
  (void)n;
  cmx_custom_function cf = {.fun = {f_mul, NULL}, .jvp = {mul_jvp, NULL}};
  cmx_array args[2] = {in[0], (cmx_array)pl};
  return cmx_custom_function_apply(&cf, args, 2, out, nout);
}
static cmx_status f_custom_xy(void* pl, const cmx_array* in, int n,
                              cmx_array** out, int* nout) {
  (void)pl, (void)n;
  cmx_custom_function cf = {.fun = {f_mul, NULL}, .jvp = {mul_jvp, NULL}};
  return cmx_custom_function_apply(&cf, in, 2, out, nout);
}

static void test_custom_jvp_argnums(void) {
  double xv = 2, yv = 3, one = 1;
  cmx_array x = f64(&xv, NULL, 0), y = f64(&yv, NULL, 0);
  cmx_array t = f64(&one, NULL, 0);
  cmx_array *o = NULL, *j = NULL;
  int n = 0;
  CHECK(cmx_custom_jvp_argnums(g_argnums, 4) == 0); /* outside a rule */
  cmx_closure fx = {f_custom_x, y};
  OK(cmx_jvp(fx, &x, 1, &t, &o, &j, &n));
  CHECK(g_nargnums == 1 && g_argnums[0] == 0);
  CHECK(n == 1 && item(j[0]) == 3);
  cmx_arrays_free(o, n);
  cmx_arrays_free(j, n);
  cmx_closure fxy = {f_custom_xy, NULL};
  cmx_array xs[2] = {x, y}, ts[2] = {t, t};
  OK(cmx_jvp(fxy, xs, 2, ts, &o, &j, &n));
  CHECK(g_nargnums == 2 && g_argnums[0] == 0 && g_argnums[1] == 1);
  CHECK(n == 1 && item(j[0]) == 5);
  cmx_arrays_free(o, n);
  cmx_arrays_free(j, n);
  CHECK(cmx_custom_jvp_argnums(NULL, 0) == 0); /* restored after the rule */
  cmx_array_release(x);
  cmx_array_release(y);
  cmx_array_release(t);
}

/* ---- ordered contributions ---- */

static cmx_array g_x; /* a constant input of f_chain */

/* sum(sin((x @ w) @ w)): the matmuls get contributions both for w (an
 * input of the transform) and for x @ w (further back). */
static cmx_status f_chain(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  (void)pl, (void)n;
  cmx_array a = NULL, b = NULL, c = NULL, s = NULL;
  cmx_matmul(&a, g_x, in[0], S);
  cmx_matmul(&b, a, in[0], S);
  cmx_sin(&c, b, S);
  cmx_status st = cmx_sum(&s, c, NULL, 0, false, S);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(c);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}
static cmx_status f_chain_grad_sq(void* pl, const cmx_array* in, int n,
                                  cmx_array** out, int* nout) {
  (void)pl;
  cmx_closure f = {f_chain, NULL};
  int arg = 0;
  cmx_array g = NULL, sq = NULL, s = NULL;
  cmx_status st = cmx_value_and_grad(f, in, n, &arg, 1, NULL, NULL, &g);
  if (st == CMX_OK) st = cmx_square(&sq, g, S);
  if (st == CMX_OK) st = cmx_sum(&s, sq, NULL, 0, false, S);
  cmx_array_release(g);
  cmx_array_release(sq);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}

/* Central differences of the scalar closure f at w (3x3). */
static void numeric(cmx_closure f, const double* w, double* g) {
  int64_t sh[2] = {3, 3};
  for (int i = 0; i < 9; i++) {
    double wp[9], wm[9], v[2];
    memcpy(wp, w, sizeof wp);
    memcpy(wm, w, sizeof wm);
    wp[i] += 1e-6;
    wm[i] -= 1e-6;
    for (int k = 0; k < 2; k++) {
      cmx_array a = f64(k ? wm : wp, sh, 2), *o = NULL;
      int n = 0;
      cmx_closure_call(f, &a, 1, &o, &n);
      v[k] = n == 1 ? item(o[0]) : NAN;
      cmx_arrays_free(o, n);
      cmx_array_release(a);
    }
    g[i] = (v[0] - v[1]) / 2e-6;
  }
}

static void test_ordered_contributions(void) {
  double xv[9] = {0.3, -0.2, 0.5, 0.1, 0.4, -0.6, 0.7, 0.2, -0.1};
  double wv[9] = {0.5, 0.1, -0.3, 0.2, -0.4, 0.6, -0.2, 0.3, 0.1};
  int64_t sh[2] = {3, 3};
  g_x = f64(xv, sh, 2);
  cmx_array w = f64(wv, sh, 2), g = NULL;
  int arg = 0;
  double want[9];
  /* First order. */
  cmx_closure f = {f_chain, NULL};
  OK(cmx_value_and_grad(f, &w, 1, &arg, 1, NULL, NULL, &g));
  numeric(f, wv, want);
  const double* p = NULL;
  OK(cmx_array_data(g, (const void**)&p));
  double err = 0;
  for (int i = 0; p && i < 9; i++) err = fmax(err, fabs(p[i] - want[i]));
  CHECK_MSG(p && err < 1e-8, "first order error %g", err);
  cmx_array_release(g);
  /* Second order: differentiating through the ordered backward graph. */
  cmx_closure f2 = {f_chain_grad_sq, NULL};
  OK(cmx_value_and_grad(f2, &w, 1, &arg, 1, NULL, NULL, &g));
  numeric(f2, wv, want);
  OK(cmx_array_data(g, (const void**)&p));
  err = 0;
  for (int i = 0; p && i < 9; i++) err = fmax(err, fabs(p[i] - want[i]));
  CHECK_MSG(p && err < 1e-6, "second order error %g", err);
  cmx_array_release(g);
  cmx_array_release(w);
  cmx_array_release(g_x);
}

/* A stack of checkpointed blocks h -> tanh(h @ w_k); the gradients of all
 * w_k. The backward recomputes each block; with the contributions to w_k
 * evaluated on the way back, the (N, N) intermediates of a block die as
 * soon as the chain passes it. Otherwise those read by the w_k gradients
 * would wait for them, every block's at once. */
enum { DEPTH = 8, N = 128 };
static cmx_status f_block(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  (void)pl, (void)n;
  cmx_array m = NULL, t = NULL;
  cmx_matmul(&m, in[0], in[1], S);
  cmx_status st = cmx_tanh(&t, m, S);
  cmx_array_release(m);
  if (st != CMX_OK) return st;
  *out = one_out(t, nout);
  return CMX_OK;
}
static cmx_status f_stack(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  cmx_array h = cmx_array_retain((cmx_array)pl);
  cmx_closure block = {f_block, NULL};
  for (int k = 0; k < n; k++) {
    cmx_array args[2] = {h, in[k]}, *o = NULL;
    int no = 0;
    cmx_status st = cmx_checkpoint_apply(block, NULL, args, 2, &o, &no);
    cmx_array_release(h);
    if (st != CMX_OK) return st;
    h = o[0];
    free(o);
  }
  cmx_array s = NULL;
  cmx_status st = cmx_sum(&s, h, NULL, 0, false, S);
  cmx_array_release(h);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}

static void test_backward_frees_on_the_way(void) {
  cmx_array ws[DEPTH], g[DEPTH], x = NULL;
  int args[DEPTH];
  int64_t sh[2] = {N, N};
  float* buf = malloc((size_t)N * N * sizeof *buf);
  for (int k = 0; k <= DEPTH; k++) {
    for (int i = 0; i < N * N; i++)
      buf[i] = k < DEPTH ? 0.01f * (float)((i * 7 + k) % 13 - 6) : 0.5f;
    cmx_array_from_data(k < DEPTH ? &ws[k] : &x, buf, sh, 2, CMX_FLOAT32);
    if (k < DEPTH) args[k] = k;
  }
  free(buf);
  OK(cmx_eval(ws, DEPTH));
  OK(cmx_eval(&x, 1));
  /* The inputs where the work runs: a GPU (the default when present) keeps
   * a device copy of a host array once it reads it, for the array's life,
   * so it is made before the base is taken. */
  for (int k = 0; k <= DEPTH; k++) {
    cmx_array s = NULL;
    OK(cmx_sum(&s, k < DEPTH ? ws[k] : x, NULL, 0, false, S));
    OK(cmx_eval(&s, 1));
    cmx_array_release(s);
  }
  cmx_synchronize(S);
  cmx_reset_peak_memory();
  size_t base = cmx_get_active_memory();
  cmx_closure f = {f_stack, x};
  OK(cmx_value_and_grad(f, ws, DEPTH, args, DEPTH, NULL, NULL, g));
  OK(cmx_eval(g, DEPTH));
  size_t peak = cmx_get_peak_memory() - base;
  size_t block = (size_t)N * N * 4;
  /* The gradients (DEPTH blocks) while the block outputs kept for the
   * recomputation go, plus a few in flight: 10 blocks measured; 16 when
   * the w_k gradients are left for last. */
  CHECK_MSG(peak <= (size_t)(DEPTH + 4) * block, "peak %zu blocks",
            peak / block);
  for (int k = 0; k < DEPTH; k++) {
    cmx_array_release(ws[k]);
    cmx_array_release(g[k]);
  }
  cmx_array_release(x);
}

/* ---- messages ---- */

static cmx_status f_keep1(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  (void)pl, (void)n;
  cmx_array s = NULL;
  cmx_status st = cmx_sum(&s, in[0], NULL, 0, true, S);
  if (st != CMX_OK) return st;
  *out = one_out(s, nout);
  return CMX_OK;
}

static void test_vjp_hint(void) {
  double v[2] = {1, 2}, c = 1;
  int64_t sh[1] = {2};
  cmx_array x = f64(v, sh, 1), ct = f64(&c, NULL, 0), vj = NULL;
  cmx_closure f = {f_keep1, NULL};
  FAILS(cmx_vjp(f, &x, 1, &ct, 1, NULL, NULL, &vj), CMX_ERR_VALUE,
        "[vjp] Output shape (1) does not match cotangent shape (). If you "
        "are using grad your function must return a scalar.");
  cmx_array ct2 = f64(v, sh, 1);
  FAILS(cmx_vjp(f, &x, 1, &ct2, 1, NULL, NULL, &vj), CMX_ERR_VALUE,
        "[vjp] Output shape (1) does not match cotangent shape (2).");
  cmx_array_release(ct2);
  cmx_array_release(ct);
  cmx_array_release(x);
}

int main(void) {
  RUN(test_custom_jvp_argnums);
  RUN(test_ordered_contributions);
  RUN(test_backward_frees_on_the_way);
  RUN(test_vjp_hint);
  return test_summary("test_transforms_order");
}
