/* Internal op functions: the expression-style twins of cmx/ops.h.
 *
 * cmx__<name>(args...) returns a borrowed handle owned by the current scope,
 * or NULL with the error set; NULL array arguments propagate (see
 * core/internal.h). Composite ops are written with these, e.g.
 *
 *   cmx_array d = cmx__subtract(a, cmx__max(a, axes, n, true, s), s);
 *   return cmx__divide(cmx__exp(d, s), cmx__sum(cmx__exp(d, s), ...), s);
 *
 * The public function is a one-line wrapper: CMX__PUBLIC(out, "name", ...).
 */
#ifndef CMX_OPS_INTERNAL_H
#define CMX_OPS_INTERNAL_H

#include "cmx/ops.h"
#include "core/internal.h"
#include "primitives/indexing.h"
#include "primitives/registry.h"

/* ---------------- helpers (ops/common.c) ---------------- */
/* Applies primitive vt (params copied) to inputs, producing one lazy output
 * of the given shape and dtype, owned by the scope. */
cmx_array cmx__apply(const cmx_primitive_vtable* vt, const void* params,
                     size_t psize, cmx_stream s, const cmx_array* inputs,
                     int nin, const int64_t* shape, int ndim, cmx_dtype dt);
/* Multi-output form; writes nout scope-owned outputs. */
cmx_status cmx__apply_n(const cmx_primitive_vtable* vt, const void* params,
                        size_t psize, cmx_stream s, const cmx_array* inputs,
                        int nin, cmx_array* outs, int nout,
                        const int64_t* const* shapes, const int* ndims,
                        const cmx_dtype* dts);
/* Ends a public multi-output call: keeps outs[0..n) when ok (new
 * references), else sets them NULL; releases the scope and returns the
 * status. */
cmx_status cmx__scope_exit_multi(size_t mark, bool ok, cmx_array* outs, int n);

/* The dtype of combining arrays under MLX promotion, with weak scalars
 * giving way to strongly typed arrays of a compatible kind. */
cmx_dtype cmx__result_type(const cmx_array* arrays, int n);
/* a converted to dt for use as an op input: a itself when it already has
 * dt, an exact re-creation for weak scalars, else an AsType node. */
cmx_array cmx__as_dtype(cmx_array a, cmx_dtype dt, cmx_stream s);
/* Normalises axis into [0, ndim); false with "[op] axis X is out of
 * bounds for array of dimension N" set otherwise. */
bool cmx__norm_axis(const char* op, int* axis, int ndim);
/* Normalises and sorts axes (NULL: all axes, naxes = ndim); duplicates
 * are errors. Writes to out (CMX_MAX_NDIM entries); returns the count or
 * -1 with the error set. */
int cmx__norm_axes(const char* op, const int* axes, int naxes, int ndim,
                   int* out);
/* A 0-d constant of dtype dt holding v (scope-owned). */
cmx_array cmx__scalar(double v, cmx_dtype dt);
/* A scope-owned new reference to a. */
cmx_array cmx__ref(cmx_array a);
/* Broadcast shape of two shapes; false with "[op] shapes (..) and (..)
 * cannot be broadcast." set otherwise. */
bool cmx__broadcast_shape(const char* op, const int64_t* a, int na,
                          const int64_t* b, int nb, int64_t* out, int* nout);

/* ---------------- creation ---------------- */
cmx_array cmx__arange(double start, double stop, double step, cmx_dtype dt,
                      cmx_stream s);
cmx_array cmx__linspace(double start, double stop, int64_t num, cmx_dtype dt,
                        cmx_stream s);
cmx_array cmx__full(const int64_t* shape, int ndim, cmx_array vals,
                    cmx_dtype dt, cmx_stream s);
cmx_array cmx__zeros(const int64_t* shape, int ndim, cmx_dtype dt,
                     cmx_stream s);
cmx_array cmx__ones(const int64_t* shape, int ndim, cmx_dtype dt, cmx_stream s);
cmx_array cmx__zeros_like(cmx_array a, cmx_stream s);
cmx_array cmx__ones_like(cmx_array a, cmx_stream s);
cmx_array cmx__full_like(cmx_array a, cmx_array vals, cmx_dtype dt,
                         cmx_stream s);
cmx_array cmx__eye(int64_t n, int64_t m, int64_t k, cmx_dtype dt, cmx_stream s);
cmx_array cmx__tri(int64_t n, int64_t m, int64_t k, cmx_dtype dt, cmx_stream s);
cmx_array cmx__tril(cmx_array a, int64_t k, cmx_stream s);
cmx_array cmx__triu(cmx_array a, int64_t k, cmx_stream s);
bool cmx__meshgrid(cmx_array* outs, const cmx_array* arrays, int n, bool sparse,
                   const char* indexing, cmx_stream s);
cmx_array cmx__bartlett(int64_t m, cmx_stream s);
cmx_array cmx__hanning(int64_t m, cmx_stream s);
cmx_array cmx__hamming(int64_t m, cmx_stream s);
cmx_array cmx__blackman(int64_t m, cmx_stream s);

/* ---------------- unary ---------------- */
#define CMX__DECLARE_UNARY_INTERNAL(name) \
  cmx_array cmx__##name(cmx_array a, cmx_stream s);
CMX__UNARY_OPS(CMX__DECLARE_UNARY_INTERNAL)
cmx_array cmx__round(cmx_array a, int decimals, cmx_stream s);
cmx_array cmx__astype(cmx_array a, cmx_dtype dt, cmx_stream s);
/* A row-major contiguous copy (Copy primitive). */
cmx_array cmx__copy(cmx_array a, cmx_stream s);
cmx_array cmx__nan_to_num(cmx_array a, double nan, const double* posinf,
                          const double* neginf, cmx_stream s);

/* ---------------- binary ---------------- */
#define CMX__DECLARE_BINARY_INTERNAL(name) \
  cmx_array cmx__##name(cmx_array a, cmx_array b, cmx_stream s);
CMX__BINARY_OPS(CMX__DECLARE_BINARY_INTERNAL)
cmx_array cmx__where(cmx_array cond, cmx_array x, cmx_array y, cmx_stream s);
cmx_array cmx__clip(cmx_array a, cmx_array lo, cmx_array hi, cmx_stream s);
cmx_array cmx__isclose(cmx_array a, cmx_array b, double rtol, double atol,
                       bool equal_nan, cmx_stream s);
cmx_array cmx__allclose(cmx_array a, cmx_array b, double rtol, double atol,
                        bool equal_nan, cmx_stream s);
cmx_array cmx__array_equal(cmx_array a, cmx_array b, bool equal_nan,
                           cmx_stream s);
bool cmx__divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s);

/* ---------------- reductions ---------------- */
#define CMX__DECLARE_REDUCE_INTERNAL(name)                       \
  cmx_array cmx__##name(cmx_array a, const int* axes, int naxes, \
                        bool keepdims, cmx_stream s);
CMX__REDUCE_OPS(CMX__DECLARE_REDUCE_INTERNAL)
cmx_array cmx__var(cmx_array a, const int* axes, int naxes, bool keepdims,
                   int ddof, cmx_stream s);
cmx_array cmx__std(cmx_array a, const int* axes, int naxes, bool keepdims,
                   int ddof, cmx_stream s);
cmx_array cmx__argmin(cmx_array a, const int* axis, bool keepdims,
                      cmx_stream s);
cmx_array cmx__argmax(cmx_array a, const int* axis, bool keepdims,
                      cmx_stream s);
cmx_array cmx__softmax(cmx_array a, const int* axes, int naxes, bool precise,
                       cmx_stream s);

/* ---------------- shape ---------------- */
cmx_array cmx__reshape(cmx_array a, const int64_t* shape, int ndim,
                       cmx_stream s);
cmx_array cmx__flatten(cmx_array a, int start_axis, int end_axis, cmx_stream s);
cmx_array cmx__unflatten(cmx_array a, int axis, const int64_t* shape, int ndim,
                         cmx_stream s);
cmx_array cmx__squeeze(cmx_array a, const int* axes, int naxes, cmx_stream s);
cmx_array cmx__expand_dims(cmx_array a, const int* axes, int naxes,
                           cmx_stream s);
cmx_array cmx__transpose(cmx_array a, const int* axes, int naxes, cmx_stream s);
cmx_array cmx__swapaxes(cmx_array a, int axis1, int axis2, cmx_stream s);
cmx_array cmx__moveaxis(cmx_array a, int source, int destination, cmx_stream s);
cmx_array cmx__broadcast_to(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s);
/* Writes n scope-owned outputs; false on error. */
bool cmx__broadcast_arrays(cmx_array* outs, const cmx_array* arrays, int n,
                           cmx_stream s);
cmx_array cmx__slice(cmx_array a, const int64_t* start, const int64_t* stop,
                     const int64_t* strides, cmx_stream s);
cmx_array cmx__slice_update(cmx_array src, cmx_array update,
                            const int64_t* start, const int64_t* stop,
                            const int64_t* strides, cmx_stream s);
cmx_array cmx__concatenate(const cmx_array* arrays, int n, int axis,
                           cmx_stream s);
cmx_array cmx__stack(const cmx_array* arrays, int n, int axis, cmx_stream s);
bool cmx__split_sections(cmx_array* outs, cmx_array a, int sections, int axis,
                         cmx_stream s);
bool cmx__split_indices(cmx_array* outs, cmx_array a, const int64_t* indices,
                        int nindices, int axis, cmx_stream s);
cmx_array cmx__pad(cmx_array a, const int* axes, const int64_t* low,
                   const int64_t* high, int naxes, cmx_array value,
                   cmx_pad_mode mode, cmx_stream s);
cmx_array cmx__repeat(cmx_array a, int64_t repeats, const int* axis,
                      cmx_stream s);
cmx_array cmx__tile(cmx_array a, const int64_t* reps, int nreps, cmx_stream s);
cmx_array cmx__flip(cmx_array a, const int* axes, int naxes, cmx_stream s);
cmx_array cmx__roll(cmx_array a, const int64_t* shifts, int nshifts,
                    const int* axes, int naxes, cmx_stream s);
cmx_array cmx__as_strided(cmx_array a, const int64_t* shape, int ndim,
                          const int64_t* strides, int64_t offset, cmx_stream s);
cmx_array cmx__contiguous(cmx_array a, bool allow_col_major, cmx_stream s);
cmx_array cmx__view(cmx_array a, cmx_dtype dt, cmx_stream s);
cmx_array cmx__atleast_1d(cmx_array a, cmx_stream s);
cmx_array cmx__atleast_2d(cmx_array a, cmx_stream s);
cmx_array cmx__atleast_3d(cmx_array a, cmx_stream s);
bool cmx__unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s);
/* diagonals (ops/shape_diagonal.c) */
cmx_array cmx__diagonal(cmx_array a, int64_t offset, int axis1, int axis2,
                        cmx_stream s);
cmx_array cmx__diag(cmx_array a, int64_t k, cmx_stream s);
/* The inverse of a last-axis diagonal: c (..., k) placed on diagonal
 * `offset` of (..., n1, n2) planes, zeros elsewhere (k must be the length
 * of that diagonal). */
cmx_array cmx__diag_embed(cmx_array c, int64_t n1, int64_t n2, int64_t offset,
                          cmx_stream s);

/* ---------------- matmul ---------------- */
cmx_array cmx__matmul(cmx_array a, cmx_array b, cmx_stream s);
cmx_array cmx__addmm(cmx_array c, cmx_array a, cmx_array b, float alpha,
                     float beta, cmx_stream s);
/* ---------------- hadamard (ops/hadamard.c) ---------------- */
cmx_array cmx__hadamard_transform(cmx_array a, const float* scale,
                                  cmx_stream s);
/* ---------------- depends (ops/depends.c) ---------------- */
bool cmx__depends(cmx_array* outs, const cmx_array* inputs, int n,
                  const cmx_array* deps, int m, cmx_stream s);

/* ---------------- indexing ---------------- */
cmx_array cmx__gather(cmx_array a, const cmx_array* indices, int nindices,
                      const int* axes, int naxes, const int64_t* slice_sizes,
                      int nslice, cmx_stream s);
/* Scatter with reduction mode; `op` names the caller in errors. */
cmx_array cmx__scatter_op(const char* op, cmx_array a, const cmx_array* indices,
                          int nindices, cmx_array updates, const int* axes,
                          int naxes, cmx__scatter_mode mode, cmx_stream s);
cmx_array cmx__scatter(cmx_array a, const cmx_array* indices, int nindices,
                       cmx_array updates, const int* axes, int naxes,
                       cmx_stream s);
cmx_array cmx__scatter_add(cmx_array a, const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
cmx_array cmx__scatter_prod(cmx_array a, const cmx_array* indices, int nindices,
                            cmx_array updates, const int* axes, int naxes,
                            cmx_stream s);
cmx_array cmx__scatter_max(cmx_array a, const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
cmx_array cmx__scatter_min(cmx_array a, const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
cmx_array cmx__take(cmx_array a, cmx_array indices, const int* axis,
                    cmx_stream s);
cmx_array cmx__take_along_axis(cmx_array a, cmx_array indices, const int* axis,
                               cmx_stream s);
cmx_array cmx__put_along_axis(cmx_array a, cmx_array indices, cmx_array values,
                              const int* axis, cmx_stream s);
/* put_along_axis with a reduction (MLX's scatter_add_axis for ADD). */
cmx_array cmx__scatter_axis(const char* op, cmx_array a, cmx_array indices,
                            cmx_array values, const int* axis,
                            cmx__scatter_mode mode, cmx_stream s);
cmx_array cmx__slice_update_add(cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);
cmx_array cmx__slice_update_prod(cmx_array src, cmx_array update,
                                 const int64_t* start, const int64_t* stop,
                                 const int64_t* strides, cmx_stream s);
cmx_array cmx__slice_update_max(cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);
cmx_array cmx__slice_update_min(cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);
cmx_array cmx__index_get(cmx_array a, const cmx_index* index, int n,
                         cmx_stream s);
/* The coordinates of the true elements of boolean mask (evaluated here),
 * row-major: mask->ndim scope-owned 1-d int64 arrays in coords. The mask
 * must match dims (the indexed array's dims from `axis` on), else an
 * IndexError naming axis. (ops/indexing_dynamic.c) */
bool cmx__mask_coords(const char* op, cmx_array mask, const int64_t* dims,
                      int axis, cmx_array* coords);
cmx_array cmx__index_set(cmx_array a, const cmx_index* index, int n,
                         cmx_array value, cmx_stream s);
cmx_array cmx__index_update(cmx_array a, const cmx_index* index, int n,
                            cmx_array value, cmx_index_update_op op,
                            cmx_stream s);

/* ---------------- products (ops/products.c) ---------------- */
cmx_array cmx__tensordot(cmx_array a, cmx_array b, int axes, cmx_stream s);
cmx_array cmx__tensordot_axes(cmx_array a, cmx_array b, const int* axes_a,
                              const int* axes_b, int n, cmx_stream s);
cmx_array cmx__inner(cmx_array a, cmx_array b, cmx_stream s);
cmx_array cmx__outer(cmx_array a, cmx_array b, cmx_stream s);
cmx_array cmx__vecdot(cmx_array a, cmx_array b, int axis, cmx_stream s);
cmx_array cmx__kron(cmx_array a, cmx_array b, cmx_stream s);
cmx_array cmx__trace(cmx_array a, int offset, int axis1, int axis2,
                     const cmx_dtype* dtype, cmx_stream s);

/* ---------------- sort and scan ---------------- */
cmx_array cmx__sort(cmx_array a, const int* axis, cmx_stream s);
cmx_array cmx__argsort(cmx_array a, const int* axis, cmx_stream s);
cmx_array cmx__partition(cmx_array a, int kth, const int* axis, cmx_stream s);
cmx_array cmx__argpartition(cmx_array a, int kth, const int* axis,
                            cmx_stream s);
cmx_array cmx__topk(cmx_array a, int k, const int* axis, cmx_stream s);
cmx_array cmx__searchsorted(cmx_array sorted_sequence, cmx_array values,
                            bool right, cmx_stream s);
#define CMX__DECLARE_SCAN_INTERNAL(name)                            \
  cmx_array cmx__##name(cmx_array a, const int* axis, bool reverse, \
                        bool inclusive, cmx_stream s);
CMX__SCAN_OPS(CMX__DECLARE_SCAN_INTERNAL)
cmx_array cmx__diff(cmx_array a, int n, int axis, cmx_stream s);
cmx_array cmx__median(cmx_array a, const int* axes, int naxes, bool keepdims,
                      cmx_stream s);
cmx_array cmx__count_nonzero(cmx_array a, const int* axes, int naxes,
                             bool keepdims, cmx_stream s);
/* ---------------- convolution ---------------- */
cmx_array cmx__conv1d(cmx_array in, cmx_array wt, int stride, int padding,
                      int dilation, int groups, cmx_stream s);
cmx_array cmx__conv2d(cmx_array in, cmx_array wt, int stride_0, int stride_1,
                      int padding_0, int padding_1, int dilation_0,
                      int dilation_1, int groups, cmx_stream s);
cmx_array cmx__conv3d(cmx_array in, cmx_array wt, int stride_0, int stride_1,
                      int stride_2, int padding_0, int padding_1, int padding_2,
                      int dilation_0, int dilation_1, int dilation_2,
                      int groups, cmx_stream s);
cmx_array cmx__conv_transpose1d(cmx_array in, cmx_array wt, int stride,
                                int padding, int dilation, int output_padding,
                                int groups, cmx_stream s);
cmx_array cmx__conv_transpose2d(cmx_array in, cmx_array wt, int stride_0,
                                int stride_1, int padding_0, int padding_1,
                                int dilation_0, int dilation_1,
                                int output_padding_0, int output_padding_1,
                                int groups, cmx_stream s);
cmx_array cmx__conv_transpose3d(cmx_array in, cmx_array wt, int stride_0,
                                int stride_1, int stride_2, int padding_0,
                                int padding_1, int padding_2, int dilation_0,
                                int dilation_1, int dilation_2,
                                int output_padding_0, int output_padding_1,
                                int output_padding_2, int groups, cmx_stream s);
cmx_array cmx__conv_general(cmx_array in, cmx_array wt, const int* stride,
                            int nstride, const int* padding_lo, int npadding_lo,
                            const int* padding_hi, int npadding_hi,
                            const int* kernel_dilation, int nkernel_dilation,
                            const int* input_dilation, int ninput_dilation,
                            int groups, bool flip, cmx_stream s);
cmx_array cmx__convolve(cmx_array a, cmx_array v, cmx_convolve_mode mode,
                        cmx_stream s);

/* ------ gathered products (ops/matmul_gather.c), einsum (einsum.c) ------ */
cmx_array cmx__einsum(const char* subscripts, const cmx_array* operands, int n,
                      cmx_stream s);
cmx_array cmx__gather_mm(cmx_array a, cmx_array b, cmx_array lhs_indices,
                         cmx_array rhs_indices, bool sorted_indices,
                         cmx_stream s);
cmx_array cmx__segmented_mm(cmx_array a, cmx_array b, cmx_array segments,
                            cmx_stream s);
cmx_array cmx__block_masked_mm(cmx_array a, cmx_array b, int block_size,
                               cmx_array mask_out, cmx_array mask_lhs,
                               cmx_array mask_rhs, cmx_stream s);

#endif
