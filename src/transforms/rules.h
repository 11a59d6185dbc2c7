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
/* Transpose, Squeeze, ExpandDims, Slice, AsStrided, Reshape, Contiguous,
 * View (rules_shape.c): linear maps of their input; vjp is the transposed
 * map (Slice and AsStrided write the cotangent into a zero buffer), jvp
 * the map itself, vmap the primitive again with the batch axis in front.
 * View between different dtypes has no derivative (NULL). */
CMX__RULE_VJP(cmx__vjp_transpose);
CMX__RULE_JVP(cmx__jvp_transpose);
CMX__RULE_VMAP(cmx__vmap_transpose);
CMX__RULE_VJP(cmx__vjp_squeeze);
CMX__RULE_JVP(cmx__jvp_squeeze);
CMX__RULE_VMAP(cmx__vmap_squeeze);
CMX__RULE_VJP(cmx__vjp_expand_dims);
CMX__RULE_JVP(cmx__jvp_expand_dims);
CMX__RULE_VMAP(cmx__vmap_expand_dims);
CMX__RULE_VJP(cmx__vjp_slice);
CMX__RULE_JVP(cmx__jvp_slice);
CMX__RULE_VMAP(cmx__vmap_slice);
CMX__RULE_VJP(cmx__vjp_as_strided);
CMX__RULE_JVP(cmx__jvp_as_strided);
CMX__RULE_VMAP(cmx__vmap_as_strided);
CMX__RULE_VJP(cmx__vjp_reshape);
CMX__RULE_JVP(cmx__jvp_reshape);
CMX__RULE_VMAP(cmx__vmap_reshape);
CMX__RULE_VJP(cmx__vjp_contiguous);
CMX__RULE_JVP(cmx__jvp_contiguous);
CMX__RULE_VMAP(cmx__vmap_contiguous);
CMX__RULE_VJP(cmx__vjp_view);
CMX__RULE_JVP(cmx__jvp_view);
CMX__RULE_VMAP(cmx__vmap_view);
/* SliceUpdate, Concatenate, Pad (rules_shape.c too). Pad's padding value
 * gets the sum of the cotangent over the padded border. */
CMX__RULE_VJP(cmx__vjp_slice_update);
CMX__RULE_JVP(cmx__jvp_slice_update);
CMX__RULE_VMAP(cmx__vmap_slice_update);
CMX__RULE_VJP(cmx__vjp_concatenate);
CMX__RULE_JVP(cmx__jvp_concatenate);
CMX__RULE_VMAP(cmx__vmap_concatenate);
CMX__RULE_VJP(cmx__vjp_pad);
CMX__RULE_JVP(cmx__jvp_pad);
CMX__RULE_VMAP(cmx__vmap_pad);
/* end of shape */

/* ---------------- creation (rules_creation.c) ---------------- */
/* end of creation */

/* ---------------- indexing (rules_indexing.c) ---------------- */
/* Gather / GatherAxis: vjp scatter-adds the cotangent into zeros (repeated
 * indices accumulate), jvp gathers the tangent. Scatter / ScatterAxis, per
 * mode (src = the array scattered into, upd = the updates):
 *   none: src gets the cotangent with the written places zeroed; each
 *         update gets the cotangent where its write stays (with repeated
 *         indices only the last write does; MLX gives all of them the
 *         cotangent, which finite differences contradict);
 *   add:  src gets the cotangent, updates gather it;
 *   prod: src gets cot * (product of its updates), update i gets
 *         cot * src * (product of the other updates at its place);
 *   max/min: the cotangent goes to every input equal to the result (ties
 *         share it fully, as MLX's rule).
 * Index arrays get no cotangent (NULL). vmap rules apply the primitive
 * once on the whole batch (an extra arange index on the batch axis when
 * the indices are batched). */
CMX__RULE_VJP(cmx__vjp_gather);
CMX__RULE_JVP(cmx__jvp_gather);
CMX__RULE_VMAP(cmx__vmap_gather);
CMX__RULE_VJP(cmx__vjp_scatter);
CMX__RULE_JVP(cmx__jvp_scatter);
CMX__RULE_VMAP(cmx__vmap_scatter);
CMX__RULE_VJP(cmx__vjp_gather_axis);
CMX__RULE_JVP(cmx__jvp_gather_axis);
CMX__RULE_VMAP(cmx__vmap_gather_axis);
CMX__RULE_VJP(cmx__vjp_scatter_axis);
CMX__RULE_JVP(cmx__jvp_scatter_axis);
CMX__RULE_VMAP(cmx__vmap_scatter_axis);
/* end of indexing */

/* ---------------- sort and scan (rules_sort.c) ---------------- */
/* end of sort and scan */

/* ---------------- random (rules_random.c) ---------------- */
/* end of random */

/* ---------------- matmul and convolution (rules_matmul.c) ---------------- */
/* end of matmul and convolution */

/* ---------------- misc (rules_misc.c) ---------------- */
/* end of misc */

#endif
