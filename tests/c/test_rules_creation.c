/* Transform rules of the creation primitives (Full, Tril, Triu and the
 * input-less Arange, Linspace, Eye, Tri). */
#include "rules_mm_util.h"

/* clang-format off */
#include "ops/ops_internal.h"
#include "primitives/creation.h"
/* clang-format on */

/* ---------------- Full ---------------- */
typedef struct {
  int64_t shape[3];
  int ndim;
} full_ctx;

static cmx_status t_full(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)n;
  full_ctx* q = ctx;
  *nout = 1;
  return cmx_full(&outs[0], q->shape, q->ndim, in[0], CMX_DTYPE_AUTO, S);
}

static void test_full(void) {
  full_ctx q = {{2, 3, 4}, 3};
  int64_t v3[1] = {4}, v23[2] = {3, 1};
  cmx_array a = rnd(v3, 1), b = rnd(v23, 2), c = rnd(v3, 0);
  tc_check_grad("full from a row", t_full, &q, &a, 1, 1e-6);
  tc_check_grad("full from a column", t_full, &q, &b, 1, 1e-6);
  tc_check_grad("full from a scalar", t_full, &q, &c, 1, 1e-6);
  cmx_array ab = rnd_batched(v3, 1, 0, 3), bb = rnd_batched(v23, 2, 2, 3);
  int ax0 = 0, ax2 = 2;
  tc_check_vmap("full vmap axis 0", t_full, &q, &ab, 1, &ax0, 0);
  tc_check_vmap("full vmap last axis", t_full, &q, &bb, 1, &ax2, -1);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(c);
  cmx_array_release(ab);
  cmx_array_release(bb);
}

/* ---------------- Tril, Triu ---------------- */
typedef struct {
  bool upper;
  int64_t k;
} tri_ctx;

static cmx_status t_tri(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                        int* nout) {
  (void)n;
  tri_ctx* q = ctx;
  *nout = 1;
  return q->upper ? cmx_triu(&outs[0], in[0], q->k, S)
                  : cmx_tril(&outs[0], in[0], q->k, S);
}

static void test_tril_triu(void) {
  int64_t ks[4] = {0, -1, 2, -5};
  int64_t s34[2] = {3, 4}, s234[3] = {2, 3, 4}, s43[2] = {4, 3};
  for (int u = 0; u < 2; u++)
    for (int i = 0; i < 4; i++) {
      tri_ctx q = {u == 1, ks[i]};
      char name[64];
      cmx_array x[3] = {rnd(s34, 2), rnd(s234, 3), rnd_t(s43, 2)};
      const char* what[3] = {"3x4", "batched", "transposed"};
      for (int j = 0; j < 3; j++) {
        snprintf(name, sizeof name, "%s k=%lld %s", u ? "triu" : "tril",
                 (long long)ks[i], what[j]);
        tc_check_grad(name, t_tri, &q, &x[j], 1, 1e-6);
      }
      release_all(x, 3);
      cmx_array b0 = rnd_batched(s34, 2, 0, 3), b2 = rnd_batched(s34, 2, 2, 3);
      cmx_array b1 = rnd_batched(s234, 3, 1, 2);
      int a0 = 0, a1 = 1, a2 = 2;
      snprintf(name, sizeof name, "%s k=%lld vmap", u ? "triu" : "tril",
               (long long)ks[i]);
      tc_check_vmap(name, t_tri, &q, &b0, 1, &a0, 0);
      tc_check_vmap(name, t_tri, &q, &b2, 1, &a2, -1);
      tc_check_vmap(name, t_tri, &q, &b1, 1, &a1, 1);
      cmx_array_release(b0);
      cmx_array_release(b1);
      cmx_array_release(b2);
    }
}

/* Cotangents of Full, Tril and Triu keep float32/float16. */
static void test_mask_dtypes(void) {
  cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT16};
  int64_t s34[2] = {3, 4}, s4[1] = {4};
  tri_ctx lo = {false, 0}, up = {true, 1};
  full_ctx fq = {{3, 4}, 2};
  struct {
    tc_fn fn;
    void* ctx;
    const int64_t* shape;
    int ndim;
  } ops[3] = {{t_tri, &lo, s34, 2}, {t_tri, &up, s34, 2}, {t_full, &fq, s4, 1}};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 3; k++) {
      cmx_array x64 = rnd(ops[k].shape, ops[k].ndim), x = NULL, ct = NULL;
      cmx_astype(&x, x64, dts[i], S);
      cmx_array ct64 = rnd(s34, 2), g = NULL, g64 = NULL;
      cmx_astype(&ct, ct64, dts[i], S);
      tc_closure cl = {ops[k].fn, ops[k].ctx};
      cmx_closure f = {tc_call, &cl};
      OK(cmx_vjp(f, &x, 1, &ct, 1, NULL, NULL, &g));
      OK(cmx_vjp(f, &x64, 1, &ct64, 1, NULL, NULL, &g64));
      CHECK(g && cmx_array_dtype(g) == dts[i]);
      CHECK(tc_max_err(g, g64) < (i ? 1e-2 : 1e-6));
      release_all((cmx_array[]){x64, x, ct, ct64, g, g64}, 6);
    }
}

/* ---------------- input-less creation ---------------- */
/* Their vjp/jvp are zero and their vmap re-creates the unbatched result
 * (they never depend on a transformed input, so the drivers do not reach
 * them; the rules are called directly here). */
static void test_nullary(void) {
  cmx_array a[4] = {NULL, NULL, NULL, NULL};
  OK(cmx_arange(&a[0], 1, 7, 1.5, CMX_FLOAT32, S));
  OK(cmx_linspace(&a[1], -1, 1, 5, CMX_FLOAT64, S));
  OK(cmx_eye(&a[2], 3, 4, 1, CMX_FLOAT32, S));
  OK(cmx_tri(&a[3], 4, 3, -1, CMX_INT32, S));
  for (int i = 0; i < 4; i++) {
    const cmx_primitive* p = cmx_array_primitive(a[i]);
    CHECK(p != NULL);
    if (!p) continue;
    const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
    CHECK(vt->vjp && vt->jvp && vt->vmap);
    cmx_array jv = (cmx_array)1, vm = NULL;
    int ax = 7;
    size_t mark = cmx__scope_enter();
    CHECK(vt->jvp(p, NULL, 0, NULL, NULL, 0, &a[i], &jv, 1) == CMX_OK &&
          jv == NULL);
    CHECK(vt->vmap(p, NULL, 0, NULL, &a[i], &vm, &ax, 1) == CMX_OK);
    cmx__scope_exit_n(mark, NULL, NULL, 0);
    CHECK(vm && ax == -1 && tc_max_err(vm, a[i]) == 0);
    cmx_array_release(vm);
  }
  release_all(a, 4);
}

int main(void) {
  RUN(test_full);
  RUN(test_tril_triu);
  RUN(test_mask_dtypes);
  RUN(test_nullary);
  return test_summary("test_rules_creation");
}
