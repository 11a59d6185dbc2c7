/* Transform rules of Depends (gradients pass through the first inputs,
 * none reach the dependencies; vmap keeps the ordering) and vmap coverage
 * of CustomTransforms (custom functions and checkpoints). */
#include <stdlib.h>

#include "rules_mm_util.h"

/* ---------------- Depends ---------------- */
/* outputs depends((x, z); y) */
static cmx_status t_depends(void* ctx, const cmx_array* in, int n,
                            cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  cmx_array xz[2] = {in[0], in[2]};
  *nout = 2;
  return cmx_depends(outs, xz, 2, &in[1], 1, S);
}

static void test_depends(void) {
  int64_t s3[1] = {3}, s23[2] = {2, 3};
  cmx_array in[3] = {rnd(s3, 1), rnd(s23, 2), rnd(s23, 2)};
  tc_check_grad("depends", t_depends, NULL, in, 3, 1e-6);
  /* The dependency gets a zero cotangent; the others pass through. */
  tc_closure cl = {t_depends, NULL};
  cmx_closure f = {tc_call, &cl};
  cmx_array ct[2] = {rnd(s3, 1), rnd(s23, 2)}, v[3] = {0};
  OK(cmx_vjp(f, in, 3, ct, 2, NULL, NULL, v));
  cmx_array z = NULL;
  cmx_zeros_like(&z, in[1], S);
  CHECK(tc_max_err(v[0], ct[0]) == 0 && tc_max_err(v[2], ct[1]) == 0 &&
        tc_max_err(v[1], z) == 0);
  cmx_array_release(z);
  release_all(v, 3);
  release_all(ct, 2);
  int axes[][3] = {{0, CMX_VMAP_NONE, CMX_VMAP_NONE},
                   {CMX_VMAP_NONE, 1, CMX_VMAP_NONE},
                   {CMX_VMAP_NONE, CMX_VMAP_NONE, -1},
                   {0, 0, 0}};
  for (int k = 0; k < 4; k++) {
    cmx_array b[3];
    const int64_t* sh[3] = {s3, s23, s23};
    int nd[3] = {1, 2, 2};
    for (int j = 0; j < 3; j++)
      b[j] = axes[k][j] == CMX_VMAP_NONE
                 ? rnd(sh[j], nd[j])
                 : rnd_batched(sh[j], nd[j],
                               axes[k][j] < 0 ? nd[j] : axes[k][j], 2);
    char name[48];
    snprintf(name, sizeof name, "depends vmap %d", k);
    tc_check_vmap(name, t_depends, NULL, b, 3, axes[k], 0);
    /* The batched outputs still wait on the dependency. */
    if (k == 3) {
      cmx_array* o = NULL;
      int n = 0, zero = 0;
      OK(cmx_vmap(f, b, 3, axes[k], &zero, 1, &o, &n));
      const cmx_primitive* p = n ? cmx_array_primitive(o[0]) : NULL;
      CHECK(p && !strcmp(cmx_primitive_name(p), "Depends"));
      cmx_arrays_free(o, n);
    }
    release_all(b, 3);
  }
  release_all(in, 3);
}

/* ---------------- CustomTransforms under vmap ---------------- */
static cmx_array* one_out(cmx_array a, int* nout) {
  cmx_array* o = malloc(sizeof *o);
  o[0] = a;
  *nout = 1;
  return o;
}

/* fun(x, y) = sin(x) * y */
static cmx_status cf_fun(void* pl, const cmx_array* in, int n, cmx_array** out,
                         int* nout) {
  (void)pl, (void)n;
  cmx_array s = NULL, r = NULL;
  cmx_sin(&s, in[0], S);
  cmx_status st = cmx_multiply(&r, s, in[1], S);
  cmx_array_release(s);
  if (st != CMX_OK) return st;
  *out = one_out(r, nout);
  return CMX_OK;
}

/* A user vmap rule for fun: records the axes it was given, moves every
 * batch to the front and returns the batch on axis 0. */
static int g_vmap_calls, g_vmap_axes[2];
static cmx_status cf_vmap(void* pl, const cmx_array* in, int n, cmx_array** out,
                          int* nout) {
  (void)pl;
  g_vmap_calls++;
  int ax[2] = {0, 0};
  cmx_custom_vmap_axes(ax, 2);
  memcpy(g_vmap_axes, ax, sizeof ax);
  cmx_array x[2] = {NULL, NULL}, r = NULL, s = NULL, a = NULL;
  for (int i = 0; i < n; i++) {
    if (ax[i] == CMX_VMAP_NONE) {
      x[i] = cmx_array_retain(in[i]);
    } else {
      cmx_moveaxis(&x[i], in[i], ax[i], 0, S);
    }
  }
  /* An unbatched y (shape (3,)) broadcasts against x (B, 3) as is; an
   * unbatched x with a batched y as well. */
  cmx_sin(&s, x[0], S);
  cmx_status st = cmx_multiply(&r, s, x[1], S);
  cmx_array_from_double(&a, 0, CMX_INT32);
  release_all(x, 2);
  cmx_array_release(s);
  if (st != CMX_OK) {
    cmx_array_release(a);
    return st;
  }
  cmx_array* o = malloc(2 * sizeof *o);
  o[0] = r;
  o[1] = a;
  *out = o;
  *nout = 2;
  return CMX_OK;
}

static cmx_status t_custom(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  cmx_custom_function* cf = ctx;
  cmx_array* o = NULL;
  int no = 0;
  cmx_status st = cmx_custom_function_apply(cf, in, n, &o, &no);
  if (st != CMX_OK) return st;
  memcpy(outs, o, (size_t)no * sizeof *o);
  free(o);
  *nout = no;
  return CMX_OK;
}

static cmx_status t_checkpoint(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  (void)ctx;
  cmx_closure f = {cf_fun, NULL};
  cmx_array* o = NULL;
  int no = 0;
  cmx_status st = cmx_checkpoint_apply(f, NULL, in, n, &o, &no);
  if (st != CMX_OK) return st;
  memcpy(outs, o, (size_t)no * sizeof *o);
  free(o);
  *nout = no;
  return CMX_OK;
}

static void test_custom_vmap(void) {
  int64_t s3[1] = {3};
  int axes[][2] = {{0, CMX_VMAP_NONE}, {CMX_VMAP_NONE, 1}, {1, 0}};
  cmx_custom_function plain = {.fun = {cf_fun, NULL}};
  cmx_custom_function ruled = {.fun = {cf_fun, NULL}, .vmap = {cf_vmap, NULL}};
  for (int k = 0; k < 3; k++) {
    cmx_array b[2];
    for (int j = 0; j < 2; j++)
      b[j] = axes[k][j] == CMX_VMAP_NONE ? rnd(s3, 1)
                                         : rnd_batched(s3, 1, axes[k][j], 4);
    char name[64];
    snprintf(name, sizeof name, "custom function (vmap of fun) %d", k);
    tc_check_vmap(name, t_custom, &plain, b, 2, axes[k], 0);
    g_vmap_calls = 0;
    snprintf(name, sizeof name, "custom function (user vmap) %d", k);
    tc_check_vmap(name, t_custom, &ruled, b, 2, axes[k], -1);
    /* The user's rule, once per vmap: tc_check_vmap vmaps on each device. */
    CHECK(g_vmap_calls == h_ndevices() && g_vmap_axes[0] == axes[k][0] &&
          g_vmap_axes[1] == axes[k][1]);
    snprintf(name, sizeof name, "checkpoint %d", k);
    tc_check_vmap(name, t_checkpoint, NULL, b, 2, axes[k], 0);
    /* vmap of the gradient through the custom function and checkpoint. */
    loss_ctx l1 = {t_custom, &plain}, l2 = {t_checkpoint, NULL};
    snprintf(name, sizeof name, "vmap of grad of custom function %d", k);
    tc_check_vmap(name, t_grad_all, &l1, b, 2, axes[k], 0);
    snprintf(name, sizeof name, "vmap of grad of checkpoint %d", k);
    tc_check_vmap(name, t_grad_all, &l2, b, 2, axes[k], 0);
    release_all(b, 2);
  }
}

int main(void) {
  RUN(test_depends);
  RUN(test_custom_vmap);
  return test_summary("test_rules_depends");
}
