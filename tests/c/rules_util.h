/* Helpers of the shape and indexing rule tests (test_rules_shape.c,
 * test_rules_indexing.c); includes test.h and tcheck.h.
 *
 *   ru_rand(shape, nd)         random float64 array in [-1, 1)
 *   ru_ints(v, shape, nd)      int32 array of the values v
 *   ru_T(x)                    x transposed (a non-contiguous view)
 *   ru_vmap_all(name, fn, ctx, x, n)
 *       tc_check_vmap with each input batched alone on axis 0 and on its
 *       last axis (the others unmapped), and all batched on axis 0 with
 *       the result's batch last. Float inputs get random batches; integer
 *       (index) inputs get the batch [x, flip(x), x] so every element
 *       stays a valid index.
 *   ru_rule_dtypes(name, y)    calls the vjp and jvp rules of y's
 *       primitive (y lazy) directly: every cotangent has its input's shape
 *       and dtype, the tangent the output's (for float32/float16 inputs).
 */
#ifndef CMX_TEST_RULES_UTIL_H
#define CMX_TEST_RULES_UTIL_H

#include <stdlib.h>
#include <string.h>

/* tcheck.h needs test.h first. */
/* clang-format off */
#include "test.h"
#include "tcheck.h"
/* clang-format on */
#include "core/internal.h"
#include "ops/ops_internal.h"

#define S CMX_STREAM_DEFAULT
#define RU_B 3

static uint64_t ru_state = 0x9e3779b97f4a7c15ULL;

static inline double ru_next(void) {
  ru_state = ru_state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(ru_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static inline cmx_array ru_rand(const int64_t* shape, int nd) {
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= shape[d];
  double* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = ru_next();
  cmx_array r = NULL;
  cmx_array_from_data(&r, v, shape, nd, CMX_FLOAT64);
  free(v);
  return r;
}

static inline cmx_array ru_f64(const double* v, const int64_t* shape, int nd) {
  cmx_array r = NULL;
  cmx_array_from_data(&r, v, shape, nd, CMX_FLOAT64);
  return r;
}

static inline cmx_array ru_ints(const int32_t* v, const int64_t* shape,
                                int nd) {
  cmx_array r = NULL;
  cmx_array_from_data(&r, v, shape, nd, CMX_INT32);
  return r;
}

/* x with its axes reversed; takes x. */
static inline cmx_array ru_T(cmx_array x) {
  cmx_array r = NULL;
  cmx_transpose(&r, x, NULL, 0, S);
  cmx_array_release(x);
  return r;
}

static inline cmx_array ru_astype(cmx_array x, cmx_dtype dt) {
  cmx_array r = NULL;
  cmx_astype(&r, x, dt, S);
  return r;
}

static inline void ru_release(cmx_array* a, int n) {
  for (int i = 0; i < n; i++) cmx_array_release(a[i]);
}

/* A batch of RU_B versions of x stacked on axis ax (0, or -1: last). */
static inline cmx_array ru_batched(cmx_array x, int ax) {
  int nd = cmx_array_ndim(x);
  int pos = ax < 0 ? nd : 0;
  cmx_array r = NULL;
  if (cmx_dtype_is_inexact(cmx_array_dtype(x))) {
    int64_t shape[CMX_MAX_NDIM];
    const int64_t* xs = cmx_array_shape(x);
    for (int d = 0, k = 0; d <= nd; d++) shape[d] = d == pos ? RU_B : xs[k++];
    cmx_array b = ru_rand(shape, nd + 1);
    r = ru_astype(b, cmx_array_dtype(x));
    cmx_array_release(b);
    return r;
  }
  cmx_array f = NULL;
  cmx_flip(&f, x, NULL, 0, S);
  cmx_array parts[RU_B];
  for (int b = 0; b < RU_B; b++) parts[b] = b % 2 ? f : x;
  cmx_stack(&r, parts, RU_B, pos, S);
  cmx_array_release(f);
  return r;
}

static inline void ru_vmap_all(const char* name, tc_fn fn, void* ctx,
                               const cmx_array* x, int n) {
  char buf[256];
  cmx_array xs[8];
  int axes[8];
  for (int i = 0; i < n; i++) {
    for (int which = 0; which < 2; which++) {
      for (int j = 0; j < n; j++) {
        xs[j] = cmx_array_retain(x[j]);
        axes[j] = CMX_VMAP_NONE;
      }
      cmx_array_release(xs[i]);
      xs[i] = ru_batched(x[i], which ? -1 : 0);
      axes[i] = which ? cmx_array_ndim(x[i]) : 0;
      snprintf(buf, sizeof buf, "%s: vmap input %d axis %d", name, i, axes[i]);
      tc_check_vmap(buf, fn, ctx, xs, n, axes, 0);
      ru_release(xs, n);
    }
  }
  for (int j = 0; j < n; j++) {
    xs[j] = ru_batched(x[j], 0);
    axes[j] = 0;
  }
  snprintf(buf, sizeof buf, "%s: vmap all inputs", name);
  tc_check_vmap(buf, fn, ctx, xs, n, axes, -1);
  ru_release(xs, n);
}

static inline bool ru_same_shape(cmx_array a, cmx_array b) {
  return cmx_array_ndim(a) == cmx_array_ndim(b) &&
         !memcmp(cmx_array_shape(a), cmx_array_shape(b),
                 (size_t)cmx_array_ndim(a) * sizeof(int64_t));
}

static inline void ru_rule_dtypes(const char* name, cmx_array y) {
  const cmx_primitive* p = cmx_array_primitive(y);
  CHECK_MSG(p != NULL, "%s: the output is not lazy", name);
  if (!p) return;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  int nin = 0;
  const cmx_array* yin = cmx_array_inputs(y, &nin);
  /* Evaluating a rule's result may evaluate y and detach its node: hold
   * the primitive and the inputs. */
  cmx_primitive_retain((cmx_primitive*)p);
  cmx_array in[16];
  for (int i = 0; i < nin && i < 16; i++) in[i] = cmx_array_retain(yin[i]);
  int argnums[16], nargs = 0;
  for (int i = 0; i < nin && nargs < 16; i++)
    if (cmx_dtype_is_inexact(cmx_array_dtype(in[i]))) argnums[nargs++] = i;
  size_t mark = cmx__scope_enter();
  cmx_array cot = cmx__ones_like(y, S), res[16] = {0};
  cmx_status st = vt->vjp(p, in, nin, &cot, 1, argnums, nargs, &y, res);
  CHECK_MSG(st == CMX_OK, "%s: vjp rule failed: %s", name, cmx_last_error());
  for (int k = 0; k < nargs && st == CMX_OK; k++) {
    cmx_array x = in[argnums[k]];
    CHECK_MSG(res[k] != NULL, "%s: no cotangent for input %d", name,
              argnums[k]);
    if (!res[k]) continue;
    CHECK_MSG(cmx_array_dtype(res[k]) == cmx_array_dtype(x) &&
                  ru_same_shape(res[k], x) && cmx_array_eval(res[k]) == CMX_OK,
              "%s: cotangent %d has dtype %s (input %s)", name, argnums[k],
              cmx_dtype_name(cmx_array_dtype(res[k])),
              cmx_dtype_name(cmx_array_dtype(x)));
    cmx_array_release(res[k]);
  }
  cmx_array tans[16], t = NULL;
  for (int k = 0; k < nargs; k++) tans[k] = cmx__ones_like(in[argnums[k]], S);
  st = vt->jvp(p, in, nin, tans, argnums, nargs, &y, &t, 1);
  CHECK_MSG(st == CMX_OK && t, "%s: jvp rule failed: %s", name,
            cmx_last_error());
  if (t) {
    CHECK_MSG(cmx_array_dtype(t) == cmx_array_dtype(y) && ru_same_shape(t, y) &&
                  cmx_array_eval(t) == CMX_OK,
              "%s: tangent has dtype %s (output %s)", name,
              cmx_dtype_name(cmx_array_dtype(t)),
              cmx_dtype_name(cmx_array_dtype(y)));
    cmx_array_release(t);
  }
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  ru_release(in, nin);
  cmx_primitive_release((cmx_primitive*)p);
}

#endif
