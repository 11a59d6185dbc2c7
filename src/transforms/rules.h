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
/* x converted to like's dtype (cotangents of promoted math); NULL
 * propagates. */
cmx_array cmx__rule_as_like(cmx_array x, cmx_array like, cmx_stream s);

#define CMX__RULE_VJP(name)                                                  \
  cmx_status name(const cmx_primitive* p, const cmx_array* primals, int nin, \
                  const cmx_array* cotangents, int nout, const int* argnums, \
                  int nargs, const cmx_array* outputs, cmx_array* out)
#define CMX__RULE_JVP(name)                                                  \
  cmx_status name(const cmx_primitive* p, const cmx_array* primals, int nin, \
                  const cmx_array* tangents, const int* argnums, int nargs,  \
                  const cmx_array* outputs, cmx_array* out, int nout)
#define CMX__RULE_VMAP(name)                                                 \
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
/* The other differentiable unary primitives (MLX's derivatives; complex
 * inputs: cotangents read as dL/dRe - i dL/dIm, so real(z) passes c + 0i,
 * imag(z) passes -i c, conjugate passes conj(c)). AsType passes
 * derivatives between inexact dtypes only. */
CMX__RULE_VJP(cmx__vjp_astype);
CMX__RULE_JVP(cmx__jvp_astype);
CMX__RULE_VJP(cmx__vjp_abs);
CMX__RULE_JVP(cmx__jvp_abs);
CMX__RULE_VJP(cmx__vjp_negative);
CMX__RULE_JVP(cmx__jvp_negative);
CMX__RULE_VJP(cmx__vjp_square);
CMX__RULE_JVP(cmx__jvp_square);
CMX__RULE_VJP(cmx__vjp_sqrt);
CMX__RULE_JVP(cmx__jvp_sqrt);
CMX__RULE_VJP(cmx__vjp_rsqrt);
CMX__RULE_JVP(cmx__jvp_rsqrt);
CMX__RULE_VJP(cmx__vjp_exp);
CMX__RULE_JVP(cmx__jvp_exp);
CMX__RULE_VJP(cmx__vjp_expm1);
CMX__RULE_JVP(cmx__jvp_expm1);
CMX__RULE_VJP(cmx__vjp_log);
CMX__RULE_JVP(cmx__jvp_log);
CMX__RULE_VJP(cmx__vjp_log2);
CMX__RULE_JVP(cmx__jvp_log2);
CMX__RULE_VJP(cmx__vjp_log10);
CMX__RULE_JVP(cmx__jvp_log10);
CMX__RULE_VJP(cmx__vjp_log1p);
CMX__RULE_JVP(cmx__jvp_log1p);
CMX__RULE_VJP(cmx__vjp_erf);
CMX__RULE_JVP(cmx__jvp_erf);
CMX__RULE_VJP(cmx__vjp_erfinv);
CMX__RULE_JVP(cmx__jvp_erfinv);
CMX__RULE_VJP(cmx__vjp_tan);
CMX__RULE_JVP(cmx__jvp_tan);
CMX__RULE_VJP(cmx__vjp_arcsin);
CMX__RULE_JVP(cmx__jvp_arcsin);
CMX__RULE_VJP(cmx__vjp_arccos);
CMX__RULE_JVP(cmx__jvp_arccos);
CMX__RULE_VJP(cmx__vjp_arctan);
CMX__RULE_JVP(cmx__jvp_arctan);
CMX__RULE_VJP(cmx__vjp_sinh);
CMX__RULE_JVP(cmx__jvp_sinh);
CMX__RULE_VJP(cmx__vjp_cosh);
CMX__RULE_JVP(cmx__jvp_cosh);
CMX__RULE_VJP(cmx__vjp_tanh);
CMX__RULE_JVP(cmx__jvp_tanh);
CMX__RULE_VJP(cmx__vjp_arcsinh);
CMX__RULE_JVP(cmx__jvp_arcsinh);
CMX__RULE_VJP(cmx__vjp_arccosh);
CMX__RULE_JVP(cmx__jvp_arccosh);
CMX__RULE_VJP(cmx__vjp_arctanh);
CMX__RULE_JVP(cmx__jvp_arctanh);
CMX__RULE_VJP(cmx__vjp_sigmoid);
CMX__RULE_JVP(cmx__jvp_sigmoid);
CMX__RULE_VJP(cmx__vjp_conjugate);
CMX__RULE_JVP(cmx__jvp_conjugate);
CMX__RULE_VJP(cmx__vjp_real);
CMX__RULE_JVP(cmx__jvp_real);
CMX__RULE_VJP(cmx__vjp_imag);
CMX__RULE_JVP(cmx__jvp_imag);
/* end of unary */

/* ---------------- binary and ternary (rules_binary.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_add);
CMX__RULE_JVP(cmx__jvp_add);
CMX__RULE_VJP(cmx__vjp_multiply);
CMX__RULE_JVP(cmx__jvp_multiply);
/* The other differentiable binary primitives and Select (MLX's
 * derivatives: maximum's ties go to b, minimum's too; remainder's d/db is
 * -floor(a / b); power's d/db is 0 where a^b is 0; Select's condition gets
 * none). Non-differentiable ones use cmx__vjp_zero / cmx__jvp_zero. */
CMX__RULE_VJP(cmx__vjp_subtract);
CMX__RULE_JVP(cmx__jvp_subtract);
CMX__RULE_VJP(cmx__vjp_divide);
CMX__RULE_JVP(cmx__jvp_divide);
CMX__RULE_VJP(cmx__vjp_remainder);
CMX__RULE_JVP(cmx__jvp_remainder);
CMX__RULE_VJP(cmx__vjp_power);
CMX__RULE_JVP(cmx__jvp_power);
CMX__RULE_VJP(cmx__vjp_maximum);
CMX__RULE_JVP(cmx__jvp_maximum);
CMX__RULE_VJP(cmx__vjp_minimum);
CMX__RULE_JVP(cmx__jvp_minimum);
CMX__RULE_VJP(cmx__vjp_arctan2);
CMX__RULE_JVP(cmx__jvp_arctan2);
CMX__RULE_VJP(cmx__vjp_logaddexp);
CMX__RULE_JVP(cmx__jvp_logaddexp);
CMX__RULE_VJP(cmx__vjp_select);
CMX__RULE_JVP(cmx__jvp_select);
/* end of binary */

/* ---------------- reductions (rules_reduce.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_reduce);
CMX__RULE_JVP(cmx__jvp_reduce);
CMX__RULE_VMAP(cmx__vmap_reduce);
/* ArgReduce: no gradient (indices); vmap along the shifted axis. */
CMX__RULE_VJP(cmx__vjp_argreduce);
CMX__RULE_JVP(cmx__jvp_argreduce);
CMX__RULE_VMAP(cmx__vmap_argreduce);
/* LogSumExp: cotangent times the softmax over the axes. */
CMX__RULE_VJP(cmx__vjp_logsumexp);
CMX__RULE_JVP(cmx__jvp_logsumexp);
/* vmap of LogSumExp and Var (axes params, reduced output). */
CMX__RULE_VMAP(cmx__vmap_axes_reduce);
/* Softmax: s * (c - sum(s * c)) over the axes, s the output. */
CMX__RULE_VJP(cmx__vjp_softmax);
CMX__RULE_JVP(cmx__jvp_softmax);
CMX__RULE_VMAP(cmx__vmap_softmax);
/* Var and Std (ddof, sqrt); complex inputs are an error. */
CMX__RULE_VJP(cmx__vjp_var);
CMX__RULE_JVP(cmx__jvp_var);
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
/* Diagonal (rules_shape.c too): vjp puts the cotangent back on the
 * diagonal; jvp and vmap are Diagonal again. */
CMX__RULE_VJP(cmx__vjp_diagonal);
CMX__RULE_JVP(cmx__jvp_diagonal);
CMX__RULE_VMAP(cmx__vmap_diagonal);
/* end of shape */

/* ---------------- creation (rules_creation.c) ---------------- */
/* Arange, Linspace, Eye, Tri (no inputs): re-created, unbatched. */
CMX__RULE_VMAP(cmx__vmap_nullary);
/* Full: its broadcast input with the batch in front. */
CMX__RULE_VMAP(cmx__vmap_full);
/* Tril, Triu: the same mask on cotangents, tangents and batches. */
CMX__RULE_VJP(cmx__vjp_mask);
CMX__RULE_JVP(cmx__jvp_mask);
CMX__RULE_VMAP(cmx__vmap_mask);
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
/* Sort, Partition: the cotangent put back where argsort / argpartition
 * took each element from; the tangent taken along those indices. */
CMX__RULE_VJP(cmx__vjp_sort);
CMX__RULE_JVP(cmx__jvp_sort);
/* No gradient (index outputs: ArgSort, ArgPartition, SearchSorted). */
CMX__RULE_VJP(cmx__vjp_sort_index);
CMX__RULE_JVP(cmx__jvp_sort_index);
/* Sort, ArgSort, Partition, ArgPartition: the same axis, shifted. */
CMX__RULE_VMAP(cmx__vmap_sort);
CMX__RULE_VMAP(cmx__vmap_searchsorted);
/* Scan: sum, prod (zeros exact), max/min (latest tie in scan order gets
 * the cotangent), logaddexp; reverse and exclusive scans. */
CMX__RULE_VJP(cmx__vjp_scan);
CMX__RULE_JVP(cmx__jvp_scan);
CMX__RULE_VMAP(cmx__vmap_scan);
/* end of sort and scan */

/* ---------------- random (rules_random.c) ---------------- */
/* RandomBits: vjp/jvp are the zero rules; vmap puts the batch of keys in
 * front (one block of bits per key). */
CMX__RULE_VMAP(cmx__vmap_random_bits);
/* CovSqrt: vjp/jvp in rules_linalg.c (the derivative of a symmetric
 * square root, through Eigh). */
CMX__RULE_VJP(cmx__vjp_cov_sqrt);
CMX__RULE_JVP(cmx__jvp_cov_sqrt);
CMX__RULE_VMAP(cmx__vmap_cov_sqrt);
/* end of random */

/* ---------------- matmul and convolution (rules_matmul.c) ---------------- */
/* Matmul: da = g @ b^T, db = a^T @ g, summed over the batch dims an
 * operand was broadcast along (1-d operands as a row / a column); jvp
 * ta @ b + a @ tb. AddMM: the same scaled by alpha, c gets beta * g
 * (nothing when beta == 0). */
CMX__RULE_VJP(cmx__vjp_matmul);
CMX__RULE_JVP(cmx__jvp_matmul);
CMX__RULE_VJP(cmx__vjp_addmm);
CMX__RULE_JVP(cmx__jvp_addmm);
/* Matmul and AddMM alike: the product once, the batch as a leading
 * batch dim (out axis 0). */
CMX__RULE_VMAP(cmx__vmap_matmul);
/* Convolution (rules_conv.c): both cotangents are Convolutions again
 * (transposed/flipped/dilated parameters); jvp by bilinearity; vmap folds
 * the batch into the batch dim, the output channels or the groups. */
CMX__RULE_VJP(cmx__vjp_conv);
CMX__RULE_JVP(cmx__jvp_conv);
CMX__RULE_VMAP(cmx__vmap_conv);
/* end of matmul and convolution */

/* ---------------- depends (rules_depends.c) ---------------- */
/* Depends: cotangents and tangents pass to / from the first inputs, the
 * dependencies get none; vmap rebuilds it on the batched inputs. */
CMX__RULE_VJP(cmx__vjp_depends);
CMX__RULE_JVP(cmx__jvp_depends);
CMX__RULE_VMAP(cmx__vmap_depends);
/* end of depends */

/* ---------------- hadamard (rules_hadamard.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_hadamard);
CMX__RULE_JVP(cmx__jvp_hadamard);
CMX__RULE_VMAP(cmx__vmap_hadamard);
/* end of hadamard */

/* ---------------- collectives (rules_distributed.c) ---------------- */
CMX__RULE_JVP(cmx__jvp_all_reduce);
CMX__RULE_VMAP(cmx__vmap_all_reduce);
CMX__RULE_VJP(cmx__vjp_all_gather);
CMX__RULE_JVP(cmx__jvp_all_gather);
CMX__RULE_VMAP(cmx__vmap_all_gather);
CMX__RULE_JVP(cmx__jvp_reduce_scatter);
CMX__RULE_VMAP(cmx__vmap_reduce_scatter);
/* end of collectives */

/* ---------------- mx.fast (rules_fast.c) ----------------
 * Every fast primitive: the transform of its composite form
 * (cmx__fast_composite, primitives/fast.h). */
CMX__RULE_VJP(cmx__vjp_fast);
CMX__RULE_JVP(cmx__jvp_fast);
CMX__RULE_VMAP(cmx__vmap_fast);
/* CrossEntropy's VJP: (softmax - one_hot) * cotangent (its jvp and vmap
 * are the composite's, above). */
CMX__RULE_VJP(cmx__vjp_cross_entropy);
/* QuantizedMatmul uses the three above (its composite: matmul with the
 * dequantized matrix). Quantize has no derivative (its vjp and jvp are
 * errors naming it); Dequantize differentiates in scales and biases (the
 * packed integers are constants); both vmap by moving the batch axis to
 * the front (they act on the last axis). */
CMX__RULE_VJP(cmx__vjp_quantize);
CMX__RULE_JVP(cmx__jvp_quantize);
CMX__RULE_VJP(cmx__vjp_dequantize);
CMX__RULE_JVP(cmx__jvp_dequantize);
CMX__RULE_VMAP(cmx__vmap_quantized);

/* ------------ gathered matrix products (rules_matmul_gather.c) ------------ */
CMX__RULE_VJP(cmx__vjp_gather_mm);
CMX__RULE_JVP(cmx__jvp_gather_mm);
CMX__RULE_VMAP(cmx__vmap_gather_mm);
CMX__RULE_VJP(cmx__vjp_segmented_mm);
CMX__RULE_JVP(cmx__jvp_segmented_mm);
CMX__RULE_VMAP(cmx__vmap_segmented_mm);
/* end of gathered matrix products */

/* ---------------- factorizations (rules_linalg.c) ---------------- */
/* Every factorization vmaps by moving batch axes to the front. */
CMX__RULE_VMAP(cmx__vmap_linalg);
CMX__RULE_VJP(cmx__vjp_luf);
CMX__RULE_JVP(cmx__jvp_luf);
CMX__RULE_VJP(cmx__vjp_qrf);
CMX__RULE_JVP(cmx__jvp_qrf);
CMX__RULE_VJP(cmx__vjp_svd);
CMX__RULE_JVP(cmx__jvp_svd);
CMX__RULE_VJP(cmx__vjp_inverse);
CMX__RULE_JVP(cmx__jvp_inverse);
CMX__RULE_VJP(cmx__vjp_cholesky);
CMX__RULE_JVP(cmx__jvp_cholesky);
CMX__RULE_VJP(cmx__vjp_eigh);
CMX__RULE_JVP(cmx__jvp_eigh);
CMX__RULE_VJP(cmx__vjp_eig);
CMX__RULE_JVP(cmx__jvp_eig);
CMX__RULE_VJP(cmx__vjp_solve);
CMX__RULE_JVP(cmx__jvp_solve);
CMX__RULE_VJP(cmx__vjp_solve_triangular);
CMX__RULE_JVP(cmx__jvp_solve_triangular);

/* ---------------- fourier transforms (rules_fft.c) ---------------- */
CMX__RULE_VJP(cmx__vjp_fft);
CMX__RULE_JVP(cmx__jvp_fft);
CMX__RULE_VMAP(cmx__vmap_fft);
/* ---------------- compile (rules_compiled.c) ---------------- */
/* Compiled: the fused region's primitives applied again, unfused. */
CMX__RULE_VJP(cmx__vjp_compiled);
CMX__RULE_JVP(cmx__jvp_compiled);
CMX__RULE_VMAP(cmx__vmap_compiled);

#endif
