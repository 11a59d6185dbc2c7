/* An extension primitive with its own transform rules, written with the
 * public headers only (cmx/cmx.h), as a user outside cmx would: MLX's
 * extension-guide example axpby, z = alpha * x + beta * y. Its vjp, jvp
 * and vmap rules are ordinary functions of public ops, so transforms of
 * every order and mix work on it: checked against finite differences,
 * jvp against vjp, vmap against a loop, and grad of grad. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/cmx.h"
#include "test.h"
/* after test.h, which it uses */
#include "tcheck.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

typedef struct axpby_params {
  double alpha, beta;
} axpby_params;

static cmx_status axpby_cpu(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  /* The op hands the kernel row-contiguous inputs of the output's shape. */
  if (!cmx_array_is_row_contiguous(in[0]) ||
      !cmx_array_is_row_contiguous(in[1]))
    return cmx_set_error(CMX_ERR_VALUE, "[axpby] inputs must be contiguous");
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  int64_t n = cmx_array_size(out[0]);
  if (cmx_array_dtype(out[0]) == CMX_FLOAT64) {
    const double *x = cmx_kernel_data(in[0]), *y = cmx_kernel_data(in[1]);
    double* z = cmx_kernel_data(out[0]);
    for (int64_t i = 0; i < n; i++) z[i] = q->alpha * x[i] + q->beta * y[i];
  } else {
    const float *x = cmx_kernel_data(in[0]), *y = cmx_kernel_data(in[1]);
    float* z = cmx_kernel_data(out[0]);
    float a = (float)q->alpha, b = (float)q->beta;
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + b * y[i];
  }
  return CMX_OK;
}

static cmx_status axpby(cmx_array* out, cmx_array x, cmx_array y, double alpha,
                        double beta);

/* out = c * scale (a new reference). */
static cmx_status scaled(cmx_array* out, cmx_array c, double scale) {
  cmx_array k = NULL;
  cmx_status st = cmx_array_weak_float(&k, scale);
  if (st == CMX_OK) st = cmx_multiply(out, c, k, S);
  cmx_array_release(k);
  return st;
}

static cmx_status axpby_vjp(const cmx_primitive* p, const cmx_array* primals,
                            int nin, const cmx_array* cotangents, int nout,
                            const int* argnums, int nargs,
                            const cmx_array* outputs, cmx_array* out) {
  (void)primals, (void)nin, (void)nout, (void)outputs;
  const axpby_params* q = cmx_primitive_params(p);
  for (int k = 0; k < nargs; k++) {
    cmx_status st =
        scaled(&out[k], cotangents[0], argnums[k] == 0 ? q->alpha : q->beta);
    if (st != CMX_OK) {
      for (int j = 0; j < k; j++) cmx_array_release(out[j]);
      return st;
    }
  }
  return CMX_OK;
}

static cmx_status axpby_jvp(const cmx_primitive* p, const cmx_array* primals,
                            int nin, const cmx_array* tangents,
                            const int* argnums, int nargs,
                            const cmx_array* outputs, cmx_array* out,
                            int nout) {
  (void)primals, (void)nin, (void)outputs, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  if (nargs == 2)
    return axpby(&out[0], tangents[0], tangents[1], q->alpha, q->beta);
  return scaled(&out[0], tangents[0], argnums[0] == 0 ? q->alpha : q->beta);
}

/* Batched inputs get their batch axis in front, unbatched ones a leading
 * axis of size 1; the op's broadcasting does the rest. */
static cmx_status axpby_vmap(const cmx_primitive* p, const cmx_array* inputs,
                             int nin, const int* axes, const cmx_array* outputs,
                             cmx_array* out, int* out_axes, int nout) {
  (void)nin, (void)outputs, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  cmx_array front[2] = {NULL, NULL};
  cmx_status st = CMX_OK;
  for (int i = 0; i < 2 && st == CMX_OK; i++) {
    int zero = 0;
    st = axes[i] >= 0 ? cmx_moveaxis(&front[i], inputs[i], axes[i], 0, S)
                      : cmx_expand_dims(&front[i], inputs[i], &zero, 1, S);
  }
  if (st == CMX_OK) st = axpby(&out[0], front[0], front[1], q->alpha, q->beta);
  out_axes[0] = 0;
  cmx_array_release(front[0]);
  cmx_array_release(front[1]);
  return st;
}

static const cmx_primitive_vtable axpby_vt = {.name = "Axpby",
                                              .flags = CMX_PRIM_EXTERNAL,
                                              .id = -1,
                                              .eval_cpu = axpby_cpu,
                                              .vjp = axpby_vjp,
                                              .jvp = axpby_jvp,
                                              .vmap = axpby_vmap};

/* The op: broadcasts, promotes to a float dtype, makes inputs contiguous
 * and applies the primitive. */
static cmx_status axpby(cmx_array* out, cmx_array x, cmx_array y, double alpha,
                        double beta) {
  cmx_array in[2] = {x, y}, b[2] = {NULL, NULL}, c[2] = {NULL, NULL};
  cmx_dtype dt =
      cmx_array_dtype(x) == CMX_FLOAT64 || cmx_array_dtype(y) == CMX_FLOAT64
          ? CMX_FLOAT64
          : CMX_FLOAT32;
  cmx_status st = cmx_broadcast_arrays(b, in, 2, S);
  for (int i = 0; i < 2 && st == CMX_OK; i++) {
    cmx_array t = NULL;
    st = cmx_astype(&t, b[i], dt, S);
    if (st == CMX_OK) st = cmx_contiguous(&c[i], t, false, S);
    cmx_array_release(t);
  }
  if (st == CMX_OK) {
    axpby_params q = {alpha, beta};
    cmx_primitive* p = cmx_primitive_new(&axpby_vt, &q, sizeof q, S);
    const int64_t* shapes[1] = {cmx_array_shape(c[0])};
    int nd = cmx_array_ndim(c[0]);
    st = p ? cmx_primitive_apply(out, 1, p, c, 2, shapes, &nd, &dt)
           : cmx_last_status();
  }
  for (int i = 0; i < 2; i++) {
    cmx_array_release(b[i]);
    cmx_array_release(c[i]);
  }
  return st;
}

/* ---------------- checks ---------------- */

static cmx_status t_axpby(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return axpby(&outs[0], in[0], in[1], 2.0, -3.0);
}

/* sin(axpby(x, y)) * x: second derivatives mix the rules. */
static cmx_status t_mixed(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  cmx_array z = NULL, s = NULL;
  cmx_status st = axpby(&z, in[0], in[1], 0.5, 1.5);
  if (st == CMX_OK) st = cmx_sin(&s, z, S);
  if (st == CMX_OK) st = cmx_multiply(&outs[0], s, in[0], S);
  cmx_array_release(z);
  cmx_array_release(s);
  *nout = 1;
  return st;
}

/* The gradient of sum(t_mixed) with respect to both inputs (so checking
 * it checks second derivatives). */
static cmx_status mixed_sum(void* pl, const cmx_array* in, int nin,
                            cmx_array** outputs, int* nout) {
  (void)pl;
  cmx_array o[1] = {NULL}, s = NULL;
  int no = 0;
  cmx_status st = t_mixed(NULL, in, nin, o, &no);
  if (st == CMX_OK) st = cmx_sum(&s, o[0], NULL, 0, false, S);
  cmx_array_release(o[0]);
  if (st != CMX_OK) return st;
  *outputs = malloc(sizeof(cmx_array));
  (*outputs)[0] = s;
  *nout = 1;
  return CMX_OK;
}
static cmx_status t_grad_mixed(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  (void)ctx;
  cmx_closure f = {mixed_sum, NULL};
  int argnums[2] = {0, 1};
  *nout = 2;
  return cmx_value_and_grad(f, in, n, argnums, 2, NULL, NULL, outs);
}

static cmx_array rand64(const int64_t* shape, int ndim) {
  cmx_array z = NULL, r = NULL;
  cmx_zeros(&z, shape, ndim, CMX_FLOAT64, S);
  r = tc_random_like(z);
  cmx_array_release(z);
  return r;
}

static void test_axpby_forward(void) {
  float xv[3] = {1, 2, 3}, yv[3] = {4, 5, 6};
  int64_t sh[1] = {3};
  cmx_array x = NULL, y = NULL, z = NULL;
  OK(cmx_array_from_data(&x, xv, sh, 1, CMX_FLOAT32));
  OK(cmx_array_from_data(&y, yv, sh, 1, CMX_FLOAT32));
  OK(axpby(&z, x, y, 2.0, 0.5));
  const float* p = NULL;
  OK(cmx_array_data(z, (const void**)&p));
  CHECK(p && p[0] == 4.0f && p[1] == 6.5f && p[2] == 9.0f);
  cmx_array_release(x);
  cmx_array_release(y);
  cmx_array_release(z);
}

static void test_axpby_transforms(void) {
  int64_t s23[2] = {2, 3}, s3[1] = {3}, s32[2] = {3, 2};
  /* Same shapes, then a broadcast y. */
  cmx_array a[2] = {rand64(s23, 2), rand64(s23, 2)};
  cmx_array b[2] = {rand64(s23, 2), rand64(s3, 1)};
  tc_check_grad("axpby", t_axpby, NULL, a, 2, 1e-6);
  tc_check_grad("axpby broadcast", t_axpby, NULL, b, 2, 1e-6);
  tc_check_grad("sin(axpby)*x", t_mixed, NULL, b, 2, 1e-6);
  /* Second order: the gradient itself against finite differences. */
  tc_check_grad("grad of sin(axpby)*x", t_grad_mixed, NULL, a, 2, 1e-5);
  /* vmap: each input batched or not, on either axis. */
  cmx_array c[2] = {rand64(s23, 2), rand64(s32, 2)};
  int both[2] = {0, 1}, first[2] = {0, CMX_VMAP_NONE};
  int second[2] = {CMX_VMAP_NONE, 0};
  tc_check_vmap("vmap axpby (0, 1)", t_axpby, NULL, c, 2, both, 0);
  tc_check_vmap("vmap axpby (0, None)", t_axpby, NULL, a, 2, first, 1);
  tc_check_vmap("vmap axpby (None, 0)", t_axpby, NULL, b, 2, second, 0);
  /* vmap of grad runs the vjp rule on batched values. */
  int zeros[2] = {0, 0};
  tc_check_vmap("vmap of grad", t_grad_mixed, NULL, a, 2, zeros, 0);
  for (int i = 0; i < 2; i++) {
    cmx_array_release(a[i]);
    cmx_array_release(b[i]);
    cmx_array_release(c[i]);
  }
}

int main(void) {
  RUN(test_axpby_forward);
  RUN(test_axpby_transforms);
  return test_summary("test_extension_rules");
}
