/* Transform rules of Matmul and AddMM: vjp against finite differences and
 * jvp against vjp (float64) on 2-d, batched, broadcast, 1-d and transposed
 * operands; vmap against a loop over every argument's axis; cotangent
 * dtypes for float32/float16; grad of grad and vmap of grad. */
#include "rules_mm_util.h"

/* ---- the ops as tc_fns ---- */
static cmx_status t_matmul(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_matmul(&outs[0], in[0], in[1], S);
}

typedef struct {
  float alpha, beta;
} addmm_ctx;
/* inputs (a, b, c) */
static cmx_status t_addmm(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)n;
  addmm_ctx* q = ctx;
  *nout = 1;
  return cmx_addmm(&outs[0], in[2], in[0], in[1], q->alpha, q->beta, S);
}

typedef struct {
  const char* name;
  int64_t a[4];
  int na;
  int64_t b[4];
  int nb;
} mm_case;

static const mm_case cases[] = {
    {"2-d", {3, 4}, 2, {4, 5}, 2},
    {"batched", {2, 3, 4}, 3, {2, 4, 5}, 3},
    {"batched x 2-d", {2, 3, 4}, 3, {4, 5}, 2},
    {"2-d x batched", {3, 4}, 2, {2, 4, 5}, 3},
    {"broadcast batch", {2, 1, 3, 4}, 4, {3, 4, 2}, 3},
    {"1-d x 2-d", {4}, 1, {4, 5}, 2},
    {"2-d x 1-d", {3, 4}, 2, {4}, 1},
    {"1-d x 1-d", {4}, 1, {4}, 1},
    {"1-d x batched", {4}, 1, {2, 4, 3}, 3},
    {"batched x 1-d", {2, 3, 4}, 3, {4}, 1},
    {"1x1 matrices", {1, 1}, 2, {1, 1}, 2},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static void test_matmul_grad(void) {
  for (int i = 0; i < NCASES; i++) {
    const mm_case* c = &cases[i];
    cmx_array in[2] = {rnd(c->a, c->na), rnd(c->b, c->nb)};
    tc_check_grad(c->name, t_matmul, NULL, in, 2, 1e-6);
    release_all(in, 2);
  }
  /* Transposed (non-contiguous) operands. */
  int64_t a[3] = {2, 3, 4}, b[2] = {4, 5};
  cmx_array in[2] = {rnd_t(a, 3), rnd_t(b, 2)};
  tc_check_grad("transposed operands", t_matmul, NULL, in, 2, 1e-6);
  release_all(in, 2);
}

static void test_matmul_vmap(void) {
  const int64_t B = 3;
  for (int i = 0; i < NCASES; i++) {
    const mm_case* c = &cases[i];
    /* Each argument batched on its first and on its last axis, alone and
     * together with the other. */
    int choice[][2] = {{0, CMX_VMAP_NONE},
                       {-1, CMX_VMAP_NONE},
                       {CMX_VMAP_NONE, 0},
                       {CMX_VMAP_NONE, -1},
                       {0, -1},
                       {-1, 0}};
    for (int k = 0; k < 6; k++) {
      int axes[2];
      cmx_array in[2];
      const int64_t* sh[2] = {c->a, c->b};
      int nd[2] = {c->na, c->nb};
      for (int j = 0; j < 2; j++) {
        axes[j] = choice[k][j];
        in[j] = axes[j] == CMX_VMAP_NONE
                    ? rnd(sh[j], nd[j])
                    : rnd_batched(sh[j], nd[j], axes[j] < 0 ? nd[j] : 0, B);
      }
      char name[96];
      snprintf(name, sizeof name, "%s, in_axes %d/%d", c->name, axes[0],
               axes[1]);
      tc_check_vmap(name, t_matmul, NULL, in, 2, axes, k % 2 ? -1 : 0);
      release_all(in, 2);
    }
  }
}

static void test_addmm_grad(void) {
  addmm_ctx q[] = {{1, 1}, {0.5f, 2}, {-1.5f, 0}, {2, -0.25f}};
  for (int i = 0; i < 4; i++) {
    int64_t a[2] = {3, 4}, b[2] = {4, 5}, c[2] = {3, 5};
    cmx_array in[3] = {rnd(a, 2), rnd(b, 2), rnd(c, 2)};
    char name[64];
    snprintf(name, sizeof name, "addmm alpha %g beta %g", (double)q[i].alpha,
             (double)q[i].beta);
    tc_check_grad(name, t_addmm, &q[i], in, 3, 1e-6);
    release_all(in, 3);
  }
  /* beta == 0 ignores c: its gradient is zero. */
  {
    int64_t a[2] = {3, 4}, b[2] = {4, 5}, c[2] = {3, 5};
    cmx_array in[3] = {rnd(a, 2), rnd(b, 2), rnd(c, 2)};
    tc_closure cl = {t_addmm, &q[2]};
    cmx_closure f = {tc_call, &cl};
    cmx_array ct = rnd(c, 2), vjps[3] = {0};
    OK(cmx_vjp(f, in, 3, &ct, 1, NULL, NULL, vjps));
    cmx_array z = NULL;
    cmx_zeros_like(&z, in[2], S);
    CHECK(tc_max_err(vjps[2], z) == 0);
    cmx_array_release(z);
    cmx_array_release(ct);
    release_all(vjps, 3);
    release_all(in, 3);
  }
  /* Batched, broadcast c (the op broadcasts it), 1-d operands. */
  struct {
    const char* name;
    int64_t a[3], b[3], c[3];
    int na, nb, nc;
  } bc[] = {
      {"addmm batched", {2, 3, 4}, {2, 4, 5}, {2, 3, 5}, 3, 3, 3},
      {"addmm batched x 2-d, c broadcast", {2, 3, 4}, {4, 5}, {5}, 3, 2, 1},
      {"addmm 1-d x 2-d", {4}, {4, 5}, {5}, 1, 2, 1},
      {"addmm 2-d x 1-d, scalar c", {3, 4}, {4}, {1}, 2, 1, 1},
  };
  for (int i = 0; i < 4; i++) {
    cmx_array in[3] = {rnd(bc[i].a, bc[i].na), rnd(bc[i].b, bc[i].nb),
                       rnd(bc[i].c, bc[i].nc)};
    tc_check_grad(bc[i].name, t_addmm, &q[1], in, 3, 1e-6);
    release_all(in, 3);
  }
}

static void test_addmm_vmap(void) {
  addmm_ctx q = {0.5f, -2};
  int64_t a[2] = {3, 4}, b[2] = {4, 5}, c[2] = {3, 5}, B = 2;
  const int64_t* sh[3] = {a, b, c};
  int choice[][3] = {{0, CMX_VMAP_NONE, CMX_VMAP_NONE},
                     {CMX_VMAP_NONE, -1, CMX_VMAP_NONE},
                     {CMX_VMAP_NONE, CMX_VMAP_NONE, 0},
                     {CMX_VMAP_NONE, CMX_VMAP_NONE, -1},
                     {-1, 0, -1},
                     {0, CMX_VMAP_NONE, 1}};
  for (int k = 0; k < 6; k++) {
    cmx_array in[3];
    for (int j = 0; j < 3; j++)
      in[j] =
          choice[k][j] == CMX_VMAP_NONE
              ? rnd(sh[j], 2)
              : rnd_batched(sh[j], 2, choice[k][j] < 0 ? 2 : choice[k][j], B);
    char name[64];
    snprintf(name, sizeof name, "addmm vmap %d/%d/%d", choice[k][0],
             choice[k][1], choice[k][2]);
    tc_check_vmap(name, t_addmm, &q, in, 3, choice[k], k % 2 ? 0 : -1);
    release_all(in, 3);
  }
  /* 1-d operand with a c that the op broadcasts. */
  int64_t v[1] = {4}, cv[1] = {5};
  cmx_array in[3] = {rnd_batched(v, 1, 0, B), rnd(b, 2), rnd(cv, 1)};
  int ax[3] = {0, CMX_VMAP_NONE, CMX_VMAP_NONE};
  tc_check_vmap("addmm vmap 1-d", t_addmm, &q, in, 3, ax, 0);
  release_all(in, 3);
}

/* Cotangents keep the inputs' dtypes (float32, float16) and agree with the
 * float64 ones. */
static void test_cotangent_dtypes(void) {
  cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT16};
  int64_t a[3] = {2, 3, 4}, b[2] = {4, 5}, o[3] = {2, 3, 5};
  cmx_array a64 = rnd(a, 3), b64 = rnd(b, 2), ct64 = rnd(o, 3);
  tc_closure cl = {t_matmul, NULL};
  cmx_closure f = {tc_call, &cl};
  cmx_array in64[2] = {a64, b64}, ref[2] = {0};
  OK(cmx_vjp(f, in64, 2, &ct64, 1, NULL, NULL, ref));
  for (int i = 0; i < 2; i++) {
    cmx_array in[2] = {NULL, NULL}, ct = NULL, vjps[2] = {0};
    cmx_astype(&in[0], a64, dts[i], S);
    cmx_astype(&in[1], b64, dts[i], S);
    cmx_astype(&ct, ct64, dts[i], S);
    OK(cmx_vjp(f, in, 2, &ct, 1, NULL, NULL, vjps));
    double tol = dts[i] == CMX_FLOAT16 ? 2e-2 : 1e-5;
    for (int k = 0; k < 2; k++) {
      CHECK(vjps[k] && cmx_array_dtype(vjps[k]) == dts[i]);
      CHECK_MSG(tc_max_err(vjps[k], ref[k]) < tol, "dtype %d arg %d: %g", i, k,
                tc_max_err(vjps[k], ref[k]));
    }
    /* AddMM too (inputs a, b, c). */
    addmm_ctx q = {0.5f, 2};
    tc_closure cl2 = {t_addmm, &q};
    cmx_closure f2 = {tc_call, &cl2};
    cmx_array c = NULL, in3[3], v3[3] = {0};
    cmx_astype(&c, ct64, dts[i], S);
    in3[0] = in[0], in3[1] = in[1], in3[2] = c;
    OK(cmx_vjp(f2, in3, 3, &ct, 1, NULL, NULL, v3));
    for (int k = 0; k < 3; k++)
      CHECK(v3[k] && cmx_array_dtype(v3[k]) == dts[i]);
    release_all(v3, 3);
    cmx_array_release(c);
    release_all(vjps, 2);
    release_all(in, 2);
    cmx_array_release(ct);
  }
  release_all(ref, 2);
  cmx_array_release(a64);
  cmx_array_release(b64);
  cmx_array_release(ct64);
}

static void test_second_order(void) {
  const cmx_primitive_vtable* vts[] = {&cmx__vt_Transpose, &cmx__vt_Reshape};
  int64_t a[2] = {3, 4}, b[2] = {4, 2}, ab[3] = {2, 3, 4}, bb[3] = {2, 4, 2};
  cmx_array x[2] = {rnd(a, 2), rnd(b, 2)};
  cmx_array xb[2] = {rnd(ab, 3), rnd(bb, 3)};
  check_second_order("matmul", t_matmul, NULL, x, xb, 2, vts, 2);
  release_all(xb, 2);
  release_all(x, 2);
  /* Batched x 2-d (the folded weight cotangent). */
  int64_t a3[3] = {2, 3, 4}, a3b[4] = {2, 2, 3, 4};
  cmx_array y[2] = {rnd(a3, 3), rnd(b, 2)};
  cmx_array yb[2] = {rnd(a3b, 4), rnd(bb, 3)};
  check_second_order("matmul batched x 2-d", t_matmul, NULL, y, yb, 2, vts, 2);
  release_all(yb, 2);
  release_all(y, 2);
  addmm_ctx q = {0.5f, 2};
  int64_t c[2] = {3, 2}, cb[3] = {2, 3, 2};
  cmx_array z[3] = {rnd(a, 2), rnd(b, 2), rnd(c, 2)};
  cmx_array zb[3] = {rnd(ab, 3), rnd(bb, 3), rnd(cb, 3)};
  check_second_order("addmm", t_addmm, &q, z, zb, 3, vts, 2);
  release_all(zb, 3);
  release_all(z, 3);
}

int main(void) {
  RUN(test_matmul_grad);
  RUN(test_matmul_vmap);
  RUN(test_addmm_grad);
  RUN(test_addmm_vmap);
  RUN(test_cotangent_dtypes);
  RUN(test_second_order);
  return test_summary("test_rules_matmul");
}
