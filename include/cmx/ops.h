/* cmx/ops.h: the array operations, as mlx.core's, by family.
 *
 *     cmx_array c;
 *     if (cmx_add(&c, a, b, CMX_STREAM_DEFAULT) != CMX_OK) { ... }
 *
 * Conventions (all ops):
 * - The result is written to *out as a new reference (NULL on failure).
 * - Array arguments are borrowed and must not be NULL unless stated.
 * - `s` is a stream or a device (cmx_stream_on(dev)) or CMX_STREAM_DEFAULT.
 * - Shapes are int64 dims with their count; axes are int and may be
 *   negative (counted from the end). An `axes` pointer of NULL means "all
 *   axes" for reductions, as MLX's axis=None.
 * - Binary ops broadcast (NumPy rules) and promote dtypes with MLX's table;
 *   weak scalars (cmx_array_weak_*) take the other operand's dtype.
 * - Results are lazy; cmx_eval computes them.
 */
#ifndef CMX_OPS_H
#define CMX_OPS_H

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================= creation ================= */
/* Values start, start+step, ... below stop (above for negative step).
 * dtype CMX_DTYPE_AUTO gives float32. */
cmx_status cmx_arange(cmx_array* out, double start, double stop, double step,
                      cmx_dtype dtype, cmx_stream s);
/* num evenly spaced values from start to stop inclusive (float32 default). */
cmx_status cmx_linspace(cmx_array* out, double start, double stop,
                        int64_t num, cmx_dtype dtype, cmx_stream s);
/* An array of shape filled with vals (broadcast); dtype AUTO keeps vals'. */
cmx_status cmx_full(cmx_array* out, const int64_t* shape, int ndim,
                    cmx_array vals, cmx_dtype dtype, cmx_stream s);
cmx_status cmx_zeros(cmx_array* out, const int64_t* shape, int ndim,
                     cmx_dtype dtype, cmx_stream s);
cmx_status cmx_ones(cmx_array* out, const int64_t* shape, int ndim,
                    cmx_dtype dtype, cmx_stream s);
/* Same shape and dtype as a. */
cmx_status cmx_zeros_like(cmx_array* out, cmx_array a, cmx_stream s);
cmx_status cmx_ones_like(cmx_array* out, cmx_array a, cmx_stream s);
/* Shape of a, filled with vals; dtype AUTO uses a's dtype. */
cmx_status cmx_full_like(cmx_array* out, cmx_array a, cmx_array vals,
                         cmx_dtype dtype, cmx_stream s);
/* n x m (m < 0: m = n) with ones on diagonal k. float32 default. */
cmx_status cmx_eye(cmx_array* out, int64_t n, int64_t m, int64_t k,
                   cmx_dtype dtype, cmx_stream s);
cmx_status cmx_identity(cmx_array* out, int64_t n, cmx_dtype dtype,
                        cmx_stream s);
/* n x m (m < 0: m = n) with ones at and below diagonal k. */
cmx_status cmx_tri(cmx_array* out, int64_t n, int64_t m, int64_t k,
                   cmx_dtype dtype, cmx_stream s);
/* Zeroes elements above (tril) / below (triu) diagonal k of the last two
 * axes. */
cmx_status cmx_tril(cmx_array* out, cmx_array a, int64_t k, cmx_stream s);
cmx_status cmx_triu(cmx_array* out, cmx_array a, int64_t k, cmx_stream s);

/* ================= unary elementwise =================
 * Dtypes as MLX: float functions (sqrt ... sigmoid, erf) compute integer
 * and bool inputs in float32 and keep inexact dtypes; abs/sign/negative/
 * square keep integer dtypes (wrapping); floor/ceil/trunc/round are the
 * identity on integers; is* and logical_not give bool; abs, real and imag
 * of complex64 give float32 (imag of a real array: zeros of its dtype).
 * negative rejects bool; rounding and erf/erfinv reject complex64;
 * bitwise_invert takes integers and bool only (TypeError otherwise). */
#define CMX__UNARY_OPS(X)                                                 \
  X(abs) X(sign) X(negative) X(positive) X(square) X(sqrt) X(rsqrt)       \
  X(reciprocal) X(exp) X(expm1) X(log) X(log2) X(log10) X(log1p) X(erf)   \
  X(erfinv) X(sin) X(cos) X(tan) X(arcsin) X(arccos) X(arctan) X(sinh)    \
  X(cosh) X(tanh) X(arcsinh) X(arccosh) X(arctanh) X(degrees) X(radians)  \
  X(sigmoid) X(floor) X(ceil) X(trunc) X(isnan) X(isinf) X(isfinite)      \
  X(isposinf) X(isneginf) X(logical_not) X(conjugate) X(real) X(imag)     \
  X(bitwise_invert) X(stop_gradient)
#define CMX__DECLARE_UNARY(name) \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_stream s);
CMX__UNARY_OPS(CMX__DECLARE_UNARY)
/* Rounds half to even to `decimals` places (negative: tens, hundreds). */
cmx_status cmx_round(cmx_array* out, cmx_array a, int decimals, cmx_stream s);
/* Converts to dtype (a copy even when dtypes match, as MLX's astype). */
cmx_status cmx_astype(cmx_array* out, cmx_array a, cmx_dtype dtype,
                      cmx_stream s);

/* ================= binary and ternary elementwise =================
 * divide, arctan2 and logaddexp compute integers in float32; comparisons
 * and logical ops give bool (complex numbers order lexicographically);
 * maximum/minimum propagate NaN. Integers never hit undefined behaviour:
 * +, -, *, power wrap; floor_divide/remainder follow NumPy (floor, sign of
 * the divisor) and give 0 for a zero divisor (INT_MIN // -1 wraps);
 * x ** negative gives the truncated 1 / x^-e (1, +-1 for x = -1, else 0);
 * shift counts < 0 or >= the bit width give 0 (left) or the sign fill
 * (right). Bitwise ops and shifts take integers and bool only; shifts
 * compute bool as uint8. */
#define CMX__BINARY_OPS(X)                                                \
  X(add) X(subtract) X(multiply) X(divide) X(floor_divide) X(remainder)   \
  X(power) X(maximum) X(minimum) X(arctan2) X(logaddexp) X(equal)         \
  X(not_equal) X(less) X(less_equal) X(greater) X(greater_equal)          \
  X(logical_and) X(logical_or) X(logical_xor) X(bitwise_and)              \
  X(bitwise_or) X(bitwise_xor) X(left_shift) X(right_shift)
#define CMX__DECLARE_BINARY(name)                                   \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_array b, \
                        cmx_stream s);
CMX__BINARY_OPS(CMX__DECLARE_BINARY)
/* Elements of x where cond is true, else of y (broadcast together). */
cmx_status cmx_where(cmx_array* out, cmx_array cond, cmx_array x,
                     cmx_array y, cmx_stream s);
/* Clamps a to [a_min, a_max]; either bound may be NULL (not both). */
cmx_status cmx_clip(cmx_array* out, cmx_array a, cmx_array a_min,
                    cmx_array a_max, cmx_stream s);

/* ================= reductions ================= */
/* axes == NULL: over all axes (naxes ignored). Duplicate or out-of-range
 * axes are errors. */
#define CMX__REDUCE_OPS(X) \
  X(sum) X(prod) X(min) X(max) X(mean) X(all) X(any) X(logsumexp)
#define CMX__DECLARE_REDUCE(name)                                        \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const int* axes,  \
                        int naxes, bool keepdims, cmx_stream s);
CMX__REDUCE_OPS(CMX__DECLARE_REDUCE)
/* Variance and standard deviation with ddof (delta degrees of freedom). */
cmx_status cmx_var(cmx_array* out, cmx_array a, const int* axes, int naxes,
                   bool keepdims, int ddof, cmx_stream s);
cmx_status cmx_std(cmx_array* out, cmx_array a, const int* axes, int naxes,
                   bool keepdims, int ddof, cmx_stream s);
/* Index of the min/max along *axis (axis == NULL: of the flattened array);
 * uint32 result as MLX. Ties give the first index. */
cmx_status cmx_argmin(cmx_array* out, cmx_array a, const int* axis,
                      bool keepdims, cmx_stream s);
cmx_status cmx_argmax(cmx_array* out, cmx_array a, const int* axis,
                      bool keepdims, cmx_stream s);
/* exp(a - max) / sum(exp(a - max)) over axes (NULL: all). precise computes
 * float16/bfloat16 inputs in float32. */
cmx_status cmx_softmax(cmx_array* out, cmx_array a, const int* axes,
                       int naxes, bool precise, cmx_stream s);

/* ================= shape ================= */
/* One dim may be -1 (inferred). A view when the layout allows. */
cmx_status cmx_reshape(cmx_array* out, cmx_array a, const int64_t* shape,
                       int ndim, cmx_stream s);
/* Merges axes start..end (inclusive, negative allowed) into one. */
cmx_status cmx_flatten(cmx_array* out, cmx_array a, int start_axis,
                       int end_axis, cmx_stream s);
/* Splits axis into shape (one entry may be -1). */
cmx_status cmx_unflatten(cmx_array* out, cmx_array a, int axis,
                         const int64_t* shape, int ndim, cmx_stream s);
/* Removes the given size-1 axes (axes == NULL: all size-1 axes). */
cmx_status cmx_squeeze(cmx_array* out, cmx_array a, const int* axes,
                       int naxes, cmx_stream s);
/* Inserts size-1 axes at the given positions of the result. */
cmx_status cmx_expand_dims(cmx_array* out, cmx_array a, const int* axes,
                           int naxes, cmx_stream s);
/* Permutes axes (axes == NULL: reverses them). A view. */
cmx_status cmx_transpose(cmx_array* out, cmx_array a, const int* axes,
                         int naxes, cmx_stream s);
cmx_status cmx_swapaxes(cmx_array* out, cmx_array a, int axis1, int axis2,
                        cmx_stream s);
cmx_status cmx_moveaxis(cmx_array* out, cmx_array a, int source,
                        int destination, cmx_stream s);
/* A broadcast view of a with the given shape. */
cmx_status cmx_broadcast_to(cmx_array* out, cmx_array a, const int64_t* shape,
                            int ndim, cmx_stream s);
/* Broadcasts n arrays against each other; writes n new references. */
cmx_status cmx_broadcast_arrays(cmx_array* outs, const cmx_array* arrays,
                                int n, cmx_stream s);
/* The broadcast of two shapes into out (CMX_MAX_NDIM dims); *out_ndim. */
cmx_status cmx_broadcast_shapes(int64_t* out, int* out_ndim,
                                const int64_t* a, int na, const int64_t* b,
                                int nb);
/* a[start:stop:strides] per axis (strides NULL: all 1); start/stop are
 * clamped as Python slices are. A view. */
cmx_status cmx_slice(cmx_array* out, cmx_array a, const int64_t* start,
                     const int64_t* stop, const int64_t* strides,
                     cmx_stream s);
/* A copy of src with src[start:stop:strides] = update (broadcast). */
cmx_status cmx_slice_update(cmx_array* out, cmx_array src, cmx_array update,
                            const int64_t* start, const int64_t* stop,
                            const int64_t* strides, cmx_stream s);
/* Joins n arrays along axis (dtypes promoted). */
cmx_status cmx_concatenate(cmx_array* out, const cmx_array* arrays, int n,
                           int axis, cmx_stream s);
/* Stacks n same-shape arrays along a new axis. */
cmx_status cmx_stack(cmx_array* out, const cmx_array* arrays, int n, int axis,
                     cmx_stream s);
/* Splits a into `sections` equal parts along axis (error if not even);
 * writes `sections` new references to outs. */
cmx_status cmx_split_sections(cmx_array* outs, cmx_array a, int sections,
                              int axis, cmx_stream s);
/* Splits a at the given indices along axis; writes nindices + 1 arrays. */
cmx_status cmx_split_indices(cmx_array* outs, cmx_array a,
                             const int64_t* indices, int nindices, int axis,
                             cmx_stream s);
typedef enum cmx_pad_mode { CMX_PAD_CONSTANT = 0, CMX_PAD_EDGE = 1 } cmx_pad_mode;
/* Pads axes[i] with low[i] before and high[i] after (naxes entries; axes
 * NULL means axis i for i < naxes). value (NULL: 0) fills constant mode. */
cmx_status cmx_pad(cmx_array* out, cmx_array a, const int* axes,
                   const int64_t* low, const int64_t* high, int naxes,
                   cmx_array value, cmx_pad_mode mode, cmx_stream s);
/* Repeats each element `repeats` times along *axis (NULL: flattened). */
cmx_status cmx_repeat(cmx_array* out, cmx_array a, int64_t repeats,
                      const int* axis, cmx_stream s);
/* Tiles a by reps (numpy.tile rules). */
cmx_status cmx_tile(cmx_array* out, cmx_array a, const int64_t* reps,
                    int nreps, cmx_stream s);
/* Reverses the order of elements along axes (NULL: all). A view. */
cmx_status cmx_flip(cmx_array* out, cmx_array a, const int* axes, int naxes,
                    cmx_stream s);
/* Rolls elements by shifts along axes (axes NULL: flattened, one shift). */
cmx_status cmx_roll(cmx_array* out, cmx_array a, const int64_t* shifts,
                    int nshifts, const int* axes, int naxes, cmx_stream s);
/* A view with the given shape, strides (elements) and offset into a's
 * row-major contiguous data (a is made contiguous first). */
cmx_status cmx_as_strided(cmx_array* out, cmx_array a, const int64_t* shape,
                          int ndim, const int64_t* strides, int64_t offset,
                          cmx_stream s);
/* A row-major contiguous array (a itself when already so; with
 * allow_col_major also when column-major). */
cmx_status cmx_contiguous(cmx_array* out, cmx_array a, bool allow_col_major,
                          cmx_stream s);
/* Reinterprets the bytes as dtype; the last axis scales by the size ratio. */
cmx_status cmx_view(cmx_array* out, cmx_array a, cmx_dtype dtype,
                    cmx_stream s);

/* ================= matrix products ================= */
/* Matrix product with NumPy matmul broadcasting (1-d operands promoted and
 * squeezed). Floating dtypes only (float16/bfloat16 computed in float32). */
cmx_status cmx_matmul(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
/* alpha * (a @ b) + beta * c. */
cmx_status cmx_addmm(cmx_array* out, cmx_array c, cmx_array a, cmx_array b,
                     float alpha, float beta, cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
