/* Helpers of the rule tests of the matmul, conv, creation, random and
 * depends families (test_rules_matmul.c, test_rules_conv.c,
 * test_rules_creation.c, test_rules_random.c, test_rules_depends.c): random
 * inputs, non-contiguous copies, and second-order checks built from
 * tcheck.h. */
#ifndef CMX_TEST_RULES_MM_UTIL_H
#define CMX_TEST_RULES_MM_UTIL_H

/* test.h must come before tcheck.h. */
/* clang-format off */
#include "test.h"
#include "tcheck.h"
#include "primitives/registry.h"
/* clang-format on */

#define S CMX_STREAM_DEFAULT

/* A random float64 array of the given shape, values in [-1, 1). */
static inline cmx_array rnd(const int64_t* shape, int ndim) {
  cmx_array z = NULL;
  cmx_zeros(&z, shape, ndim, CMX_FLOAT64, S);
  cmx_array r = tc_random_like(z);
  cmx_array_release(z);
  return r;
}

/* A random array of the given shape held as a transposed view of the last
 * two axes (non-contiguous). */
static inline cmx_array rnd_t(const int64_t* shape, int ndim) {
  int64_t sh[CMX_MAX_NDIM];
  memcpy(sh, shape, (size_t)ndim * sizeof *sh);
  sh[ndim - 1] = shape[ndim - 2];
  sh[ndim - 2] = shape[ndim - 1];
  cmx_array r = rnd(sh, ndim), t = NULL;
  cmx_swapaxes(&t, r, -1, -2, S);
  cmx_array_release(r);
  return t;
}

/* A random array whose axis `axis` (the vmap batch) has size B inserted
 * into shape. */
static inline cmx_array rnd_batched(const int64_t* shape, int ndim, int axis,
                                    int64_t B) {
  int64_t sh[CMX_MAX_NDIM];
  int k = 0;
  for (int d = 0; d <= ndim; d++) {
    if (d == axis) sh[k++] = B;
    if (d < ndim) sh[k++] = shape[d];
  }
  return rnd(sh, ndim + 1);
}

static inline void release_all(cmx_array* a, int n) {
  for (int i = 0; i < n; i++) cmx_array_release(a[i]);
}

/* ---- second order ---- */

/* sum(sin(fn(inputs))): a scalar loss around a tc_fn. */
typedef struct loss_ctx {
  tc_fn fn;
  void* ctx;
} loss_ctx;

static inline cmx_status t_loss(void* ctx, const cmx_array* in, int n,
                                cmx_array* outs, int* nout) {
  loss_ctx* l = ctx;
  cmx_array o[8] = {0}, sn = NULL;
  int no = 0;
  cmx_status st = l->fn(l->ctx, in, n, o, &no);
  if (st == CMX_OK) st = cmx_sin(&sn, o[0], S);
  if (st == CMX_OK) st = cmx_sum(&outs[0], sn, NULL, 0, false, S);
  cmx_array_release(sn);
  release_all(o, no);
  *nout = 1;
  return st;
}

/* The gradients of loss_ctx's loss with respect to every input, as a
 * tc_fn (for grad of grad). */
static inline cmx_status t_grad_all(void* ctx, const cmx_array* in, int n,
                                    cmx_array* outs, int* nout) {
  tc_closure c = {t_loss, ctx};
  cmx_closure f = {tc_call, &c};
  int args[8];
  for (int i = 0; i < n; i++) args[i] = i;
  cmx_status st = cmx_value_and_grad(f, in, n, args, n, NULL, NULL, outs);
  *nout = st == CMX_OK ? n : 0;
  return st;
}

/* True when the listed primitives all have vjp, jvp and vmap rules. The
 * rules of a family's vjp are built from other families' primitives
 * (transposes, reshapes, slices); second-order checks need theirs too. */
static inline bool have_rules(const cmx_primitive_vtable* const* vts, int n,
                              const char** missing) {
  for (int i = 0; i < n; i++)
    if (!vts[i]->vjp || !vts[i]->jvp || !vts[i]->vmap) {
      *missing = vts[i]->name;
      return false;
    }
  return true;
}

/* Grad of grad of sum(sin(fn(inputs))) against finite differences, and
 * vmap of the gradient over every input's axis 0 (inputs_b: the inputs
 * with a batch on axis 0). Needs the rules of the primitives in vts: when
 * one has none yet, checks instead that the transform fails naming it. */
static inline void check_second_order(const char* name, tc_fn fn, void* ctx,
                                      const cmx_array* x, const cmx_array* xb,
                                      int n,
                                      const cmx_primitive_vtable* const* vts,
                                      int nvts) {
  loss_ctx l = {fn, ctx};
  const char* missing = NULL;
  if (have_rules(vts, nvts, &missing)) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s: grad of grad", name);
    tc_check_grad(buf, t_grad_all, &l, x, n, 1e-5);
    int axes[8];
    for (int i = 0; i < n; i++) axes[i] = 0;
    snprintf(buf, sizeof buf, "%s: vmap of grad", name);
    tc_check_vmap(buf, t_grad_all, &l, xb, n, axes, 0);
    return;
  }
  /* The second-order graph goes through a primitive of another family
   * that has no rules yet: the driver must say which. */
  tc_closure c = {t_grad_all, &l};
  cmx_closure f = {tc_call, &c};
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_array ct[8] = {0}, vjps[8] = {0};
  cmx_array g[8] = {0};
  int ng = 0;
  cmx_status st = t_grad_all(&l, x, n, g, &ng);
  CHECK_MSG(st == CMX_OK, "%s: first-order gradient failed: %s", name,
            cmx_last_error());
  for (int i = 0; i < ng; i++) ct[i] = tc_random_like(g[i]);
  st = cmx_vjp(f, x, n, ct, ng, &outs, &nout, vjps);
  bool named = false;
  for (int i = 0; st != CMX_OK && i < nvts; i++)
    named |= !vts[i]->vjp && strstr(cmx_last_error(), vts[i]->name) &&
             strstr(cmx_last_error(), "Not implemented for primitive");
  CHECK_MSG(named, "%s: grad of grad without %s rules: %s", name, missing,
            st == CMX_OK ? "succeeded" : cmx_last_error());
  fprintf(stderr,
          "note: %s: second-order check waits for the rules of %s (another "
          "family)\n",
          name, missing);
  cmx_arrays_free(outs, nout);
  release_all(ct, ng);
  release_all(g, ng);
  release_all(vjps, n);
}

#endif
