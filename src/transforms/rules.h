/* Transform rules of cmx's primitives, one section per family; the
 * vtables in src/primitives/<family>.c point at them. Rule contracts are
 * those of cmx_primitive_vtable (cmx/primitive.h):
 *
 *   vjp:  out[k] = cotangent of primals[argnums[k]] (a new reference, the
 *         input's shape and dtype), or NULL for "no contribution" (zero).
 *   jvp:  out[i] = tangent of output i (new reference) or NULL (zero),
 *         from tangents[k] of primals[argnums[k]]; outputs[i] are the
 *         primal outputs.
 *   vmap: inputs batched on axes[i] (-1: not batched, at least one is);
 *         out[i] (new reference) with its batch axis in out_axes[i] (-1:
 *         not batched); outputs[i] are the unbatched traced outputs (for
 *         their shapes and dtypes only).
 *
 * Rules are written with the expression-style internal ops (ops_internal.h):
 * they run inside the transform's scope, so intermediates are scope-owned;
 * the arrays handed back go through cmx__rule_keep (a new reference).
 * Elementwise primitives (CMX_PRIM_ELEMENTWISE) with no vmap rule get the
 * driver's generic one: batch axes moved to the front, unbatched inputs
 * broadcast, the primitive applied again (transforms/vmap.c).
 */
#ifndef CMX_TRANSFORMS_RULES_H
#define CMX_TRANSFORMS_RULES_H

#include "cmx/primitive.h"
#include "cmx/transforms.h"

/* ---------------- helpers (rules_common.c) ---------------- */
/* A new reference to scope-owned a (NULL stays NULL). */
cmx_array cmx__rule_keep(cmx_array a);
/* The stream a primitive runs on (rules build their ops there). */
cmx_stream cmx__rule_stream(const cmx_primitive* p);
/* a summed down to shape (undoing a broadcast to a's shape). */
cmx_array cmx__sum_to_shape(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s);
/* a with its batch axis `axis` moved to the front; an unbatched a (axis
 * -1) broadcast to size B on a new front axis. */
cmx_array cmx__batch_front(cmx_array a, int axis, int64_t B, cmx_stream s);
/* The batch size of the first batched input. */
int64_t cmx__batch_size(const cmx_array* in, const int* axes, int nin);

#define CMX__RULE_VJP(name)                                                \
  cmx_status name(const cmx_primitive* p, const cmx_array* primals,        \
                  int nin, const cmx_array* cotangents, int nout,          \
                  const int* argnums, int nargs, const cmx_array* outputs, \
                  cmx_array* out)
#define CMX__RULE_JVP(name)                                                \
  cmx_status name(const cmx_primitive* p, const cmx_array* primals,        \
                  int nin, const cmx_array* tangents, const int* argnums,  \
                  int nargs, const cmx_array* outputs, cmx_array* out,     \
                  int nout)
#define CMX__RULE_VMAP(name)                                               \
  cmx_status name(const cmx_primitive* p, const cmx_array* inputs, int nin,  \
                  const int* axes, const cmx_array* outputs, cmx_array* out, \
                  int* out_axes, int nout)

/* ---------------- unary, copy and conversion (rules_unary.c) -------------- */
CMX__RULE_VJP(cmx__vjp_identity);
CMX__RULE_JVP(cmx__jvp_identity);
CMX__RULE_VJP(cmx__vjp_zero);
CMX__RULE_JVP(cmx__jvp_zero);
CMX__RULE_VJP(cmx__vjp_sin);
CMX__RULE_JVP(cmx__jvp_sin);
CMX__RULE_VJP(cmx__vjp_cos);
CMX__RULE_JVP(cmx__jvp_cos);
/* end of unary */

/* ---------------- binary and ternary (rules_binary.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_add);
CMX__RULE_JVP(cmx__jvp_add);
CMX__RULE_VJP(cmx__vjp_multiply);
CMX__RULE_JVP(cmx__jvp_multiply);
/* end of binary */

/* ---------------- reductions (rules_reduce.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_reduce);
CMX__RULE_JVP(cmx__jvp_reduce);
CMX__RULE_VMAP(cmx__vmap_reduce);
/* end of reductions */

/* ---------------- shape and views (rules_shape.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_broadcast);
CMX__RULE_JVP(cmx__jvp_broadcast);
CMX__RULE_VMAP(cmx__vmap_broadcast);
/* end of shape */

/* ---------------- creation (rules_creation.c) ---------------- */
/* end of creation */

/* ---------------- indexing (rules_indexing.c) ---------------- */
/* end of indexing */

/* ---------------- sort and scan (rules_sort.c) ---------------- */
/* end of sort and scan */

/* ---------------- random (rules_random.c) ---------------- */
/* end of random */

/* ---------------- matmul and convolution (rules_matmul.c) ---------------- */
/* end of matmul and convolution */

/* ---------------- misc (rules_misc.c) ---------------- */
/* end of misc */

/* ------------ linear-algebra extras (rules_linalg_extra.c) ------------ */
CMX__RULE_VJP(cmx__vjp_diagonal);
CMX__RULE_JVP(cmx__jvp_diagonal);
CMX__RULE_VMAP(cmx__vmap_diagonal);
CMX__RULE_VJP(cmx__vjp_hadamard);
CMX__RULE_JVP(cmx__jvp_hadamard);
CMX__RULE_VMAP(cmx__vmap_hadamard);
CMX__RULE_VJP(cmx__vjp_gather_mm);
CMX__RULE_JVP(cmx__jvp_gather_mm);
CMX__RULE_VMAP(cmx__vmap_gather_mm);
CMX__RULE_VJP(cmx__vjp_segmented_mm);
CMX__RULE_JVP(cmx__jvp_segmented_mm);
CMX__RULE_VMAP(cmx__vmap_segmented_mm);
/* end of linear-algebra extras */

#endif
