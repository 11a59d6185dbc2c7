/* An extension primitive with its own transform rules, written with the
 * public headers only (cmx/cmx.h), as a user outside cmx would: MLX's
 * extension-guide example axpby, z = alpha * x + beta * y, from
 * examples/extensions/axpby/src (compiled into this test, so its kernels
 * also run under ASan/UBSan). Its vjp, jvp and vmap rules are ordinary
 * functions of public ops, so transforms of every order and mix work on
 * it: checked against finite differences, jvp against vjp, vmap against a
 * loop, and grad of grad. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axpby.h"
#include "cmx/cmx.h"
#include "test.h"
/* after test.h, which it uses */
#include "tcheck.h"

static cmx_stream S = CMX_STREAM_DEFAULT;

/* ---------------- checks ---------------- */

static cmx_status t_axpby(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return axpby(&outs[0], in[0], in[1], 2.0f, -3.0f, S);
}

/* sin(axpby(x, y)) * x: second derivatives mix the rules. */
static cmx_status t_mixed(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  cmx_array z = NULL, s = NULL;
  cmx_status st = axpby(&z, in[0], in[1], 0.5f, 1.5f, S);
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
  OK(axpby(&z, x, y, 2.0f, 0.5f, S));
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
