/* Transform rules of the random primitives: RandomBits (vmap over batches
 * of keys, no derivative) and CovSqrt (vmap; jvp solves X dX + dX X = dA
 * for symmetric dA, and vjp is its transpose). */
#include "rules_mm_util.h"

/* clang-format off */
#include "ops/ops_internal.h"
/* clang-format on */

/* ---------------- RandomBits ---------------- */
typedef struct {
  int64_t shape[3];
  int ndim, width;
} bits_ctx;

static cmx_status t_bits(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)n;
  bits_ctx* q = ctx;
  *nout = 1;
  return cmx_random_bits(&outs[0], q->shape, q->ndim, q->width, in[0], S);
}

static void test_random_bits(void) {
  cmx_array k0 = NULL, keys = NULL, keys_t = NULL;
  OK(cmx_random_key(&k0, 42));
  OK(cmx_random_split(&keys, k0, 5, S)); /* (5, 2) */
  int perm[2] = {1, 0};
  OK(cmx_transpose(&keys_t, keys, perm, 2, S)); /* (2, 5) */
  bits_ctx cases[] = {{{2, 3}, 2, 4},           /* words in pairs */
                      {{3}, 1, 4},              /* an odd number of words */
                      {{7}, 1, 1},              /* a partial last word */
                      {{3, 3}, 2, 2},
                      {{0}, 1, 4}};
  for (int i = 0; i < 5; i++) {
    char name[64];
    snprintf(name, sizeof name, "random_bits case %d, keys on axis 0", i);
    int ax0 = 0, ax1 = 1;
    tc_check_vmap(name, t_bits, &cases[i], &keys, 1, &ax0, 0);
    snprintf(name, sizeof name, "random_bits case %d, keys on axis 1", i);
    tc_check_vmap(name, t_bits, &cases[i], &keys_t, 1, &ax1, -1);
  }
  /* Different keys give different bits: the batch is not one key
   * repeated. */
  {
    tc_closure cl = {t_bits, &cases[0]};
    cmx_closure f = {tc_call, &cl};
    int ax = 0;
    cmx_array* o = NULL;
    int n = 0;
    OK(cmx_vmap(f, &keys, 1, &ax, &ax, 1, &o, &n));
    cmx_array r0 = NULL, r1 = NULL, idx0 = NULL, idx1 = NULL;
    cmx_array_from_double(&idx0, 0, CMX_INT32);
    cmx_array_from_double(&idx1, 1, CMX_INT32);
    int zero = 0;
    OK(cmx_take(&r0, o[0], idx0, &zero, S));
    OK(cmx_take(&r1, o[0], idx1, &zero, S));
    CHECK(tc_max_err(r0, r1) > 0);
    release_all((cmx_array[]){r0, r1, idx0, idx1}, 4);
    cmx_arrays_free(o, n);
  }
  /* No derivative: the rules give no cotangent and no tangent. */
  {
    cmx_array b = NULL;
    OK(cmx_random_bits(&b, cases[0].shape, 2, 4, k0, S));
    const cmx_primitive* p = cmx_array_primitive(b);
    CHECK(p && cmx_primitive_vt(p)->vjp && cmx_primitive_vt(p)->jvp);
    if (p) {
      cmx_array v = (cmx_array)1, t = (cmx_array)1;
      int arg = 0;
      const cmx_array* in = cmx_array_inputs(b, &(int){0});
      CHECK(cmx_primitive_vt(p)->vjp(p, in, 1, &b, 1, &arg, 1, &b, &v) ==
                CMX_OK &&
            v == NULL);
      CHECK(cmx_primitive_vt(p)->jvp(p, in, 1, &k0, &arg, 1, &b, &t, 1) ==
                CMX_OK &&
            t == NULL);
    }
    cmx_array_release(b);
  }
  release_all((cmx_array[]){k0, keys, keys_t}, 3);
}

/* ---------------- CovSqrt ---------------- */
static cmx_status t_cov_sqrt(void* ctx, const cmx_array* in, int n,
                             cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  size_t mark = cmx__scope_enter();
  cmx_array r = cmx__apply(&cmx__vt_CovSqrt, NULL, 0, S, in, 1, in[0]->dims,
                           in[0]->ndim, CMX_FLOAT32);
  return cmx__scope_exit(mark, r, &outs[0]);
}

/* A float32 stack of symmetric positive definite matrices a a^T + n I:
 * shape (lead.., n, n) with the batch of size B inserted at axis. */
static cmx_array spd_stack(int64_t B, int axis, int n) {
  int64_t sh[3] = {B, n, n};
  cmx_array a = rnd(sh, 3), at = NULL, aat = NULL, eye = NULL, s = NULL,
            f = NULL, r = NULL;
  cmx_swapaxes(&at, a, 1, 2, S);
  cmx_matmul(&aat, a, at, S);
  cmx_eye(&eye, n, n, 0, CMX_FLOAT64, S);
  cmx_array nn = NULL;
  cmx_array_from_double(&nn, (double)n, CMX_FLOAT64);
  cmx_array ne = NULL;
  cmx_multiply(&ne, eye, nn, S);
  cmx_add(&s, aat, ne, S);
  cmx_astype(&f, s, CMX_FLOAT32, S);
  cmx_array m = NULL;
  cmx_moveaxis(&m, f, 0, axis, S);
  cmx_contiguous(&r, m, false, S); /* the batch really lies on axis */
  release_all((cmx_array[]){a, at, aat, eye, s, f, nn, ne, m}, 9);
  return r;
}

static void test_cov_sqrt(void) {
  int ax0 = 0, ax2 = 2;
  cmx_array c0 = spd_stack(3, 0, 3), c2 = spd_stack(2, 2, 4);
  tc_check_vmap("cov_sqrt vmap axis 0", t_cov_sqrt, NULL, &c0, 1, &ax0, 0);
  tc_check_vmap("cov_sqrt vmap axis 2", t_cov_sqrt, NULL, &c2, 1, &ax2, 1);
  /* jvp: X = sqrt(A) and X dX + dX X = dA for a symmetric tangent dA
   * (float32 math: 1e-4); vjp: <vjp(U), dA> = <U, jvp(dA)>. */
  cmx_array one = spd_stack(1, 0, 3), t0 = rnd((int64_t[]){1, 3, 3}, 3);
  cmx_array t32 = NULL, tt = NULL, tan = NULL, u = rnd((int64_t[]){1, 3, 3}, 3);
  cmx_array u32 = NULL, g = NULL, *jo = NULL, *jt = NULL, *vo = NULL;
  OK(cmx_astype(&t32, t0, CMX_FLOAT32, S));
  OK(cmx_swapaxes(&tt, t32, 1, 2, S));
  OK(cmx_add(&tan, t32, tt, S));
  OK(cmx_astype(&u32, u, CMX_FLOAT32, S));
  tc_closure cl = {t_cov_sqrt, NULL};
  cmx_closure f = {tc_call, &cl};
  int nj = 0, nv = 0;
  OK(cmx_jvp(f, &one, 1, &tan, &jo, &jt, &nj));
  OK(cmx_vjp(f, &one, 1, &u32, 1, &vo, &nv, &g));
  if (nj == 1 && nv == 1 && g) {
    cmx_array a1 = NULL, a2 = NULL, lhs = NULL;
    OK(cmx_matmul(&a1, jo[0], jt[0], S));
    OK(cmx_matmul(&a2, jt[0], jo[0], S));
    OK(cmx_add(&lhs, a1, a2, S));
    double m = tc_max_err(lhs, tan);
    CHECK_MSG(m < 1e-4, "X dX + dX X - dA: %g", m);
    double lhs_dot = tc_dot(g, tan), rhs_dot = tc_dot(u32, jt[0]);
    CHECK_MSG(fabs(lhs_dot - rhs_dot) < 1e-4 * (1 + fabs(lhs_dot)),
              "vjp.t %g vs u.jvp %g", lhs_dot, rhs_dot);
    release_all((cmx_array[]){a1, a2, lhs}, 3);
  }
  for (int i = 0; i < nj; i++)
    cmx_array_release(jo[i]), cmx_array_release(jt[i]);
  for (int i = 0; i < nv; i++) cmx_array_release(vo[i]);
  free(jo), free(jt), free(vo);
  release_all((cmx_array[]){c0, c2, one, t0, t32, tt, tan, u, u32, g}, 10);
}

int main(void) {
  RUN(test_random_bits);
  RUN(test_cov_sqrt);
  return test_summary("test_rules_random");
}
