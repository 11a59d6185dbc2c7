/* Transform rules of Hadamard: vjp against central finite differences
 * and jvp against vjp (tc_check_grad, float64), vmap over each axis
 * against a loop, second order (grad of grad, vmap of grad), and
 * cotangent dtypes. */
#include "harness.h"
#include "tcheck.h"

#define S CMX_STREAM_DEFAULT

static cmx_status t_hadamard(void* ctx, const cmx_array* in, int n,
                             cmx_array* outs, int* nout) {
  (void)n;
  *nout = 1;
  return cmx_hadamard_transform(&outs[0], in[0], ctx, S);
}
/* sum(hadamard(x)^2), for second-order checks. */
static cmx_status t_had_energy(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  cmx_array h = NULL, sq = NULL;
  cmx_status st = cmx_hadamard_transform(&h, in[0], NULL, S);
  if (st == CMX_OK) st = cmx_multiply(&sq, h, h, S);
  if (st == CMX_OK) st = cmx_sum(&outs[0], sq, NULL, 0, false, S);
  cmx_array_release(h), cmx_array_release(sq);
  *nout = 1;
  return st;
}
static cmx_status f_had_energy(void* pl, const cmx_array* in, int n,
                               cmx_array** out, int* nout) {
  cmx_array o[1];
  cmx_status st = t_had_energy(pl, in, n, o, nout);
  if (st != CMX_OK) return st;
  *out = malloc(sizeof(cmx_array));
  (*out)[0] = o[0];
  return CMX_OK;
}
/* The gradient of t_had_energy. */
static cmx_status t_had_grad(void* ctx, const cmx_array* in, int n,
                             cmx_array* outs, int* nout) {
  (void)ctx;
  cmx_closure f = {f_had_energy, NULL};
  int arg = 0;
  *nout = 1;
  return cmx_value_and_grad(f, in, n, &arg, 1, NULL, NULL, &outs[0]);
}

static cmx_array rnd(const int64_t* shape, int nd, uint64_t seed) {
  h_tensor t = h_random(shape, nd, CMX_FLOAT64, -1, 1, seed);
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

static void test_hadamard(void) {
  /* Hadamard, power of two and the odd factors (12, 20, 28: H_20 and
   * H_28 are not symmetric, so the vjp must transpose them). */
  int64_t hs[4][2] = {{3, 8}, {2, 12}, {2, 20}, {3, 28}};
  float half = 0.5f;
  for (int i = 0; i < 4; i++) {
    cmx_array x = rnd(hs[i], 2, 210 + i);
    tc_check_grad("hadamard", t_hadamard, NULL, &x, 1, 1e-6);
    tc_check_grad("hadamard scaled", t_hadamard, &half, &x, 1, 1e-6);
    int a0 = 0, a1 = 1;
    tc_check_vmap("vmap hadamard axis 0", t_hadamard, NULL, &x, 1, &a0, 0);
    int64_t ts[2] = {hs[i][1], 3};
    cmx_array xt = rnd(ts, 2, 215 + i);
    tc_check_vmap("vmap hadamard last axis", t_hadamard, NULL, &xt, 1, &a1, 1);
    tc_check_vmap("vmap hadamard last axis, out 0", t_hadamard, NULL, &xt, 1,
                  &a1, 0);
    cmx_array_release(xt);
    /* Second order: grad of grad and vmap of grad. */
    tc_check_grad("grad of grad hadamard energy", t_had_grad, NULL, &x, 1,
                  1e-6);
    tc_check_vmap("vmap of grad hadamard energy", t_had_grad, NULL, &x, 1, &a0,
                  0);
    cmx_array_release(x);
  }
  /* Cotangent dtypes follow the primal's (float32, float16). */
  cmx_dtype cdts[2] = {CMX_FLOAT32, CMX_FLOAT16};
  for (int i = 0; i < 2; i++) {
    cmx_array x = NULL, u = NULL, *outs = NULL, vj = NULL;
    int nouts = 0;
    OK(cmx_ones(&x, hs[2], 2, cdts[i], S));
    OK(cmx_ones(&u, hs[2], 2, cdts[i], S));
    tc_closure c = {t_hadamard, NULL};
    cmx_closure f = {tc_call, &c};
    OK(cmx_vjp(f, &x, 1, &u, 1, &outs, &nouts, &vj));
    CHECK(vj && cmx_array_dtype(vj) == cdts[i]);
    cmx_arrays_free(outs, nouts);
    cmx_array_release(vj), cmx_array_release(x), cmx_array_release(u);
  }
}

int main(void) {
  RUN(test_hadamard);
  return test_summary("test_rules_hadamard");
}
