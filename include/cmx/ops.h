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
cmx_status cmx_linspace(cmx_array* out, double start, double stop, int64_t num,
                        cmx_dtype dtype, cmx_stream s);
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
/* Coordinate grids of n 1-D arrays (others are flattened first), written
 * to outs[0..n). indexing "xy" (Cartesian, default for NULL) swaps the
 * first two output axes; "ij" is matrix indexing. sparse gives shapes
 * with size-1 dims broadcastable to the full grid instead of copies. */
cmx_status cmx_meshgrid(cmx_array* outs, const cmx_array* arrays, int n,
                        bool sparse, const char* indexing, cmx_stream s);
/* NumPy's window functions of length m (m < 1: empty), float32. */
cmx_status cmx_bartlett(cmx_array* out, int64_t m, cmx_stream s);
cmx_status cmx_hanning(cmx_array* out, int64_t m, cmx_stream s);
cmx_status cmx_hamming(cmx_array* out, int64_t m, cmx_stream s);
cmx_status cmx_blackman(cmx_array* out, int64_t m, cmx_stream s);

/* ================= unary elementwise =================
 * Dtypes as MLX: float functions (sqrt ... sigmoid, erf) compute integer
 * and bool inputs in float32 and keep inexact dtypes; abs/sign/negative/
 * square keep integer dtypes (wrapping); floor/ceil/trunc/round are the
 * identity on integers; is* and logical_not give bool; abs, real and imag
 * of complex64 give float32 (imag of a real array: zeros of its dtype).
 * negative rejects bool; rounding and erf/erfinv reject complex64;
 * bitwise_invert takes integers and bool only (TypeError otherwise). */
#define CMX__UNARY_OPS(X)                                                     \
  X(abs)                                                                      \
  X(sign)                                                                     \
  X(negative)                                                                 \
  X(positive)                                                                 \
  X(square) X(sqrt) X(rsqrt) X(reciprocal) X(exp) X(expm1) X(log) X(log2)     \
      X(log10) X(log1p) X(erf) X(erfinv) X(sin) X(cos) X(tan) X(arcsin)       \
          X(arccos) X(arctan) X(sinh) X(cosh) X(tanh) X(arcsinh) X(arccosh)   \
              X(arctanh) X(degrees) X(radians) X(sigmoid) X(floor) X(ceil)    \
                  X(trunc) X(isnan) X(isinf) X(isfinite) X(isposinf)          \
                      X(isneginf) X(logical_not) X(conjugate) X(real) X(imag) \
                          X(bitwise_invert) X(stop_gradient)
#define CMX__DECLARE_UNARY(name) \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_stream s);
CMX__UNARY_OPS(CMX__DECLARE_UNARY)
/* Rounds half to even to `decimals` places (negative: tens, hundreds). */
cmx_status cmx_round(cmx_array* out, cmx_array a, int decimals, cmx_stream s);
/* Converts to dtype (a copy even when dtypes match, as MLX's astype). */
cmx_status cmx_astype(cmx_array* out, cmx_array a, cmx_dtype dtype,
                      cmx_stream s);
/* Replaces NaN by nan, +inf by *posinf and -inf by *neginf (NULL: the
 * largest / lowest finite value of a's dtype). Integer and bool arrays
 * come back unchanged; complex is a type error. */
cmx_status cmx_nan_to_num(cmx_array* out, cmx_array a, double nan,
                          const double* posinf, const double* neginf,
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
  X(add)                                                                  \
  X(subtract)                                                             \
  X(multiply)                                                             \
  X(divide)                                                               \
  X(floor_divide) X(remainder) X(power) X(maximum) X(minimum) X(arctan2)  \
      X(logaddexp) X(equal) X(not_equal) X(less) X(less_equal) X(greater) \
          X(greater_equal) X(logical_and) X(logical_or) X(logical_xor)    \
              X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(left_shift)   \
                  X(right_shift)
#define CMX__DECLARE_BINARY(name) \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
CMX__BINARY_OPS(CMX__DECLARE_BINARY)
/* Elements of x where cond is true, else of y (broadcast together). */
cmx_status cmx_where(cmx_array* out, cmx_array cond, cmx_array x, cmx_array y,
                     cmx_stream s);
/* Clamps a to [a_min, a_max]; either bound may be NULL (not both). */
cmx_status cmx_clip(cmx_array* out, cmx_array a, cmx_array a_min,
                    cmx_array a_max, cmx_stream s);
/* |a - b| <= atol + rtol * |b| elementwise (broadcast), with equal
 * infinities close and NaNs close only when equal_nan. */
cmx_status cmx_isclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                       double atol, bool equal_nan, cmx_stream s);
/* all(isclose(...)) as a 0-d bool array. */
cmx_status cmx_allclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                        double atol, bool equal_nan, cmx_stream s);
/* 0-d bool: same shape (no broadcasting; different shapes give false) and
 * equal elements after promotion; NaNs equal when equal_nan. */
cmx_status cmx_array_equal(cmx_array* out, cmx_array a, cmx_array b,
                           bool equal_nan, cmx_stream s);
/* outs[0] = floor_divide(a, b), outs[1] = remainder(a, b). */
cmx_status cmx_divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s);

/* ================= reductions ================= */
/* axes == NULL: over all axes (naxes ignored). Duplicate or out-of-range
 * axes are errors. */
#define CMX__REDUCE_OPS(X) \
  X(sum) X(prod) X(min) X(max) X(mean) X(all) X(any) X(logsumexp)
#define CMX__DECLARE_REDUCE(name)                                     \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const int* axes, \
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
cmx_status cmx_softmax(cmx_array* out, cmx_array a, const int* axes, int naxes,
                       bool precise, cmx_stream s);

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
cmx_status cmx_squeeze(cmx_array* out, cmx_array a, const int* axes, int naxes,
                       cmx_stream s);
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
cmx_status cmx_broadcast_arrays(cmx_array* outs, const cmx_array* arrays, int n,
                                cmx_stream s);
/* The broadcast of two shapes into out (CMX_MAX_NDIM dims); *out_ndim. */
cmx_status cmx_broadcast_shapes(int64_t* out, int* out_ndim, const int64_t* a,
                                int na, const int64_t* b, int nb);
/* a[start:stop:strides] per axis (strides NULL: all 1); start/stop are
 * clamped as Python slices are. A view. */
cmx_status cmx_slice(cmx_array* out, cmx_array a, const int64_t* start,
                     const int64_t* stop, const int64_t* strides, cmx_stream s);
/* A copy of src with src[start:stop:strides] = update (broadcast). */
cmx_status cmx_slice_update(cmx_array* out, cmx_array src, cmx_array update,
                            const int64_t* start, const int64_t* stop,
                            const int64_t* strides, cmx_stream s);
/* a's window that starts, along axes[i], at start[i] and spans
 * slice_size[i] elements (other axes whole): MLX's slice with array start
 * indices. start is an integer array of naxes entries (1-d, or 0-d for one
 * axis), read when the result is evaluated, so the op stays lazy and
 * differentiable (a gather). A negative start counts from the end and
 * every window is clamped into its axis. Errors: a non-integer or
 * mis-sized start, a bad or repeated axis, a size outside [0, dim]
 * (CMX_ERR_VALUE). */
cmx_status cmx_slice_dynamic(cmx_array* out, cmx_array a, cmx_array start,
                             const int* axes, int naxes,
                             const int64_t* slice_size, cmx_stream s);
/* A copy of a with update written at the window that starts at start[i]
 * along axes[i] (0 on other axes); the window has update's shape, right-
 * aligned (leading axes of extent 1). start as cmx_slice_dynamic; update
 * is converted to a's dtype (a scatter). Errors: as cmx_slice_dynamic,
 * and an update larger than a (CMX_ERR_VALUE). */
cmx_status cmx_slice_update_dynamic(cmx_array* out, cmx_array a,
                                    cmx_array update, cmx_array start,
                                    const int* axes, int naxes, cmx_stream s);
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
typedef enum cmx_pad_mode {
  CMX_PAD_CONSTANT = 0,
  CMX_PAD_EDGE = 1,
  CMX_PAD_REFLECT = 2,  /* mirrored without the edge: 2 1 | 0 1 2 | 1 0 */
  CMX_PAD_SYMMETRIC = 3 /* mirrored with the edge: 1 0 | 0 1 2 | 2 1 */
} cmx_pad_mode;
/* Pads axes[i] with low[i] before and high[i] after (naxes entries; axes
 * NULL means axis i for i < naxes). value (NULL: 0) fills constant mode.
 * Reflect and symmetric padding repeat periodically past the array's
 * length (NumPy's and MLX's); they need a non-empty axis
 * (CMX_ERR_VALUE). */
cmx_status cmx_pad(cmx_array* out, cmx_array a, const int* axes,
                   const int64_t* low, const int64_t* high, int naxes,
                   cmx_array value, cmx_pad_mode mode, cmx_stream s);
/* Repeats each element `repeats` times along *axis (NULL: flattened). */
cmx_status cmx_repeat(cmx_array* out, cmx_array a, int64_t repeats,
                      const int* axis, cmx_stream s);
/* Tiles a by reps (numpy.tile rules). */
cmx_status cmx_tile(cmx_array* out, cmx_array a, const int64_t* reps, int nreps,
                    cmx_stream s);
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
cmx_status cmx_view(cmx_array* out, cmx_array a, cmx_dtype dtype, cmx_stream s);
/* a with leading (1d, 2d) or leading and trailing (3d: (1,n,1), (m,n,1))
 * size-1 dims added until it has at least that many; a itself otherwise. */
cmx_status cmx_atleast_1d(cmx_array* out, cmx_array a, cmx_stream s);
cmx_status cmx_atleast_2d(cmx_array* out, cmx_array a, cmx_stream s);
cmx_status cmx_atleast_3d(cmx_array* out, cmx_array a, cmx_stream s);
/* Splits a along axis into shape[axis] arrays with that axis removed,
 * written to outs (room for shape[axis] entries). */
cmx_status cmx_unstack(cmx_array* outs, cmx_array a, int axis, cmx_stream s);
/* The diagonal of the (axis1, axis2) planes of a (ndim >= 2) at offset
 * (above the main diagonal for offset > 0, below for < 0), as the last
 * axis of the result; the other axes keep their order. A view of a (no
 * copy, whatever a's layout). Empty when the offset is past the plane. */
cmx_status cmx_diagonal(cmx_array* out, cmx_array a, int offset, int axis1,
                        int axis2, cmx_stream s);
/* 1-d a: the square matrix of size len(a) + |k| holding a on diagonal k
 * and zeros elsewhere. 2-d a: cmx_diagonal(a, k, 0, 1). Other ranks are
 * errors. */
cmx_status cmx_diag(cmx_array* out, cmx_array a, int k, cmx_stream s);

/* ================= matrix products ================= */
/* Matrix product with NumPy matmul broadcasting (1-d operands promoted and
 * squeezed). Floating dtypes only (float16/bfloat16 computed in float32). */
cmx_status cmx_matmul(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
/* alpha * (a @ b) + beta * c. */
cmx_status cmx_addmm(cmx_array* out, cmx_array c, cmx_array a, cmx_array b,
                     float alpha, float beta, cmx_stream s);

/* ================= hadamard transform ================= */
/* The Walsh-Hadamard transform along the last axis, times scale (NULL:
 * 1/sqrt(n), which makes it orthonormal). n = m * 2^k with m in 1, 12, 20,
 * 28 (MLX's Hadamard matrices for m > 1). Floating inputs keep their
 * dtype, others compute in float32. A last axis of 1 (or a 0-d a) only
 * scales (returning a itself for scale 1), as MLX; empty arrays are
 * errors. */
cmx_status cmx_hadamard_transform(cmx_array* out, cmx_array a,
                                  const float* scale, cmx_stream s);

/* ================= depends ================= */
/* outs[i] = inputs[i] (same values, views) for i < n, whose computation
 * waits for dependencies[0..m) to be evaluated (MLX's depends). */
cmx_status cmx_depends(cmx_array* outs, const cmx_array* inputs, int n,
                       const cmx_array* dependencies, int m, cmx_stream s);

/* ================= indexing =================
 * Index arrays must have an integer dtype (bool, floating and complex
 * indices are TypeErrors); several index arrays broadcast together.
 * Negative indices count from the end of their axis.
 *
 * Out-of-bounds indices: MLX does not bounds-check gathers and scatters
 * (out of bounds is undefined behaviour there). cmx never reads or writes
 * out of bounds: an index outside [-n, n) (for gather/scatter: one whose
 * slice would reach past the axis) makes the computation fail when it is
 * evaluated; cmx_eval (and anything that reads the result or depends on
 * it) then fails with "[gather] Index 7 is out of bounds for axis 0 with
 * size 5." (named after the kernel: gather, scatter, take_along_axis,
 * put_along_axis). uint64 indices above INT64_MAX are out of bounds.
 * Integer indices given as plain C integers (cmx_index_int) are checked at
 * once (CMX_ERR_INDEX).
 *
 * Indexing as Python does it (a[...], a[...] = v, a.at[...].add(v)):
 *
 *     // a[:, [0, 2], None, -1]
 *     cmx_index ix[4] = {cmx_index_all(), cmx_index_array(idx),
 *                        cmx_index_newaxis(), cmx_index_int(-1)};
 *     cmx_index_get(&r, a, ix, 4, CMX_STREAM_DEFAULT);
 */

/* Gathers slices of a. The nindices index arrays (broadcast together to
 * shape I) index axes[0..naxes) (naxes == nindices, no repeats);
 * slice_sizes (nslice == a.ndim entries, each in [0, a.shape[d]]) is the
 * extent of the slice taken at every position. The result has shape
 * I + slice_sizes:
 *   out[i..., j_0, ..., j_{n-1}] = a[s_0 + j_0, ..., s_{n-1} + j_{n-1}]
 * where s_d = indices[k][i...] for d == axes[k] and 0 on other axes. An
 * index is valid when s_d + slice_sizes[d] <= a.shape[d] after wrapping a
 * negative s_d by a.shape[d]. As MLX's gather (C++). */
cmx_status cmx_gather(cmx_array* out, cmx_array a, const cmx_array* indices,
                      int nindices, const int* axes, int naxes,
                      const int64_t* slice_sizes, int nslice, cmx_stream s);
/* A copy of a with slices replaced from updates: the index arrays
 * (broadcast to shape I) give the start of a slice on axes[k] (0 on other
 * axes), and updates has shape I + U with U (a.ndim dims) no larger than
 * a's shape; update block i... is written at the slice that starts there.
 * updates is converted to a's dtype. Positions are applied in row-major
 * order of I, so with repeated indices the last write wins (scatter) or
 * the updates accumulate (add: sum, prod: product, max/min: running
 * max/min; NaN propagates; complex max/min compare real then imaginary
 * parts). bool accumulates as logical or (add, max) / and (prod, min);
 * integers wrap; float16/bfloat16 compute in float32. */
cmx_status cmx_scatter(cmx_array* out, cmx_array a, const cmx_array* indices,
                       int nindices, cmx_array updates, const int* axes,
                       int naxes, cmx_stream s);
cmx_status cmx_scatter_add(cmx_array* out, cmx_array a,
                           const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
cmx_status cmx_scatter_prod(cmx_array* out, cmx_array a,
                            const cmx_array* indices, int nindices,
                            cmx_array updates, const int* axes, int naxes,
                            cmx_stream s);
cmx_status cmx_scatter_max(cmx_array* out, cmx_array a,
                           const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
cmx_status cmx_scatter_min(cmx_array* out, cmx_array a,
                           const cmx_array* indices, int nindices,
                           cmx_array updates, const int* axes, int naxes,
                           cmx_stream s);
/* Elements of a at indices along *axis: the result has shape
 * a.shape[:axis] + indices.shape + a.shape[axis+1:] (a[:, indices] for
 * axis 1). axis == NULL takes from the flattened a. A 0-d indices array
 * removes the axis. */
cmx_status cmx_take(cmx_array* out, cmx_array a, cmx_array indices,
                    const int* axis, cmx_stream s);
/* out[..., i, ...] = a[..., indices[..., i, ...], ...] along *axis:
 * indices has a's rank and broadcasts with a on every other axis; the
 * result has the broadcast shape with indices' extent on axis. axis ==
 * NULL works on the flattened a and indices (1-d result). */
cmx_status cmx_take_along_axis(cmx_array* out, cmx_array a, cmx_array indices,
                               const int* axis, cmx_stream s);
/* A copy of a with out[..., indices[..., i, ...], ...] = values[..., i, ...]
 * along *axis (indices as take_along_axis; values broadcast to indices'
 * shape and are converted to a's dtype; a repeated index keeps the last
 * value). axis == NULL works on the flattened arrays and gives a's shape. */
cmx_status cmx_put_along_axis(cmx_array* out, cmx_array a, cmx_array indices,
                              cmx_array values, const int* axis, cmx_stream s);
/* Slice updates that combine instead of replacing: a copy of src with
 * src[start:stop:strides] = src[...] OP update (update broadcast to the
 * region, converted to src's dtype); arguments as cmx_slice_update. */
cmx_status cmx_slice_update_add(cmx_array* out, cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);
cmx_status cmx_slice_update_prod(cmx_array* out, cmx_array src,
                                 cmx_array update, const int64_t* start,
                                 const int64_t* stop, const int64_t* strides,
                                 cmx_stream s);
cmx_status cmx_slice_update_max(cmx_array* out, cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);
cmx_status cmx_slice_update_min(cmx_array* out, cmx_array src, cmx_array update,
                                const int64_t* start, const int64_t* stop,
                                const int64_t* strides, cmx_stream s);

/* One entry of a NumPy-style index (an element of the tuple in a[...]). */
typedef enum cmx_index_kind {
  CMX_INDEX_INT = 0,      /* an integer: picks one element, drops the axis */
  CMX_INDEX_SLICE = 1,    /* start:stop:step */
  CMX_INDEX_NEWAXIS = 2,  /* None: inserts a size-1 axis */
  CMX_INDEX_ELLIPSIS = 3, /* ...: full slices for the axes not indexed */
  CMX_INDEX_ARRAY = 4,    /* an integer array (advanced index) */
  CMX_INDEX_MASK = 5      /* a boolean array: its true elements' coordinates
                             (one advanced index per mask axis) */
} cmx_index_kind;

/* An omitted slice start, stop or step (Python's None). */
#define CMX_SLICE_NONE INT64_MIN

typedef struct cmx_index {
  cmx_index_kind kind;
  int64_t value;             /* INT: the index (negative from the end) */
  int64_t start, stop, step; /* SLICE: Python slice values, each may be
                                CMX_SLICE_NONE; step must not be 0 */
  cmx_array array;           /* ARRAY, MASK: the array (borrowed) */
} cmx_index;

static inline cmx_index cmx_index_int(int64_t i) {
  cmx_index x = {CMX_INDEX_INT, i, 0, 0, 0, NULL};
  return x;
}
static inline cmx_index cmx_index_slice(int64_t start, int64_t stop,
                                        int64_t step) {
  cmx_index x = {CMX_INDEX_SLICE, 0, start, stop, step, NULL};
  return x;
}
/* ":" */
static inline cmx_index cmx_index_all(void) {
  return cmx_index_slice(CMX_SLICE_NONE, CMX_SLICE_NONE, CMX_SLICE_NONE);
}
static inline cmx_index cmx_index_newaxis(void) {
  cmx_index x = {CMX_INDEX_NEWAXIS, 0, 0, 0, 0, NULL};
  return x;
}
static inline cmx_index cmx_index_ellipsis(void) {
  cmx_index x = {CMX_INDEX_ELLIPSIS, 0, 0, 0, 0, NULL};
  return x;
}
static inline cmx_index cmx_index_array(cmx_array a) {
  cmx_index x = {CMX_INDEX_ARRAY, 0, 0, 0, 0, a};
  return x;
}
/* A boolean mask over the next m.ndim axes (a cmx extension: MLX has
 * none). */
static inline cmx_index cmx_index_mask(cmx_array m) {
  cmx_index x = {CMX_INDEX_MASK, 0, 0, 0, 0, m};
  return x;
}

/* a[index] with NumPy's rules for the n entries (n == 0: a itself).
 * Ints, slices, newaxis and ellipsis give views; integer arrays are
 * advanced indices: they (and the ints, when any array is present)
 * broadcast together to a shape B that replaces the indexed axes, at the
 * place of the first one when all advanced entries are adjacent, else in
 * front (a[:, [0,1], :, [1,2]] has shape (2, a.shape[0], a.shape[2])).
 * Errors: more than one ellipsis, more entries than axes, an int out of
 * range (CMX_ERR_INDEX); a non-integer index array (CMX_ERR_TYPE); index
 * arrays that do not broadcast (CMX_ERR_INDEX); a zero slice step
 * (CMX_ERR_VALUE). A boolean mask (cmx_index_mask) covers as many axes as
 * it has dims and must match their extents (else CMX_ERR_INDEX); it is
 * evaluated here and stands for the integer coordinates of its true
 * elements, as in NumPy. A boolean array given as CMX_INDEX_ARRAY is a
 * CMX_ERR_TYPE. */
cmx_status cmx_index_get(cmx_array* out, cmx_array a, const cmx_index* index,
                         int n, cmx_stream s);
/* A copy of a with a[index] = value: value (converted to a's dtype, with
 * leading size-1 dims dropped) broadcasts to the shape of a[index]. With
 * repeated array indices the last write wins. */
cmx_status cmx_index_set(cmx_array* out, cmx_array a, const cmx_index* index,
                         int n, cmx_array value, cmx_stream s);
/* How cmx_index_update combines (as MLX's a.at[index].<op>(value)). */
typedef enum cmx_index_update_op {
  CMX_UPDATE_ADD = 0, /* repeated indices accumulate */
  CMX_UPDATE_SUBTRACT,
  CMX_UPDATE_MULTIPLY,
  CMX_UPDATE_DIVIDE,
  CMX_UPDATE_MAXIMUM,
  CMX_UPDATE_MINIMUM
} cmx_index_update_op;
/* A copy of a with a[index] = a[index] OP value, value broadcast as in
 * cmx_index_set and converted to a's dtype (the result keeps a's dtype).
 * As MLX's a.at[index]: every occurrence of a repeated index applies its
 * update in order, so add/subtract accumulate, multiply multiplies the
 * factors in, maximum/minimum keep the extreme. subtract adds the negated
 * value (not for bool); divide multiplies by the reciprocal of the value,
 * computed in floating point and converted to a's dtype (for integer
 * arrays that truncates, as in MLX). */
cmx_status cmx_index_update(cmx_array* out, cmx_array a, const cmx_index* index,
                            int n, cmx_array value, cmx_index_update_op op,
                            cmx_stream s);

/* ================= products =================
 * Composites of matmul, transpose, reshape, multiply and sum; inputs are
 * promoted as by multiply. */
/* Sums products over the last `axes` axes of a and the first of b. Inexact
 * dtypes use matmul; integers (which matmul does not take) and bool give
 * the promoted dtype, wrapping on overflow. */
cmx_status cmx_tensordot(cmx_array* out, cmx_array a, cmx_array b, int axes,
                         cmx_stream s);
/* Sums products over axes_a[i] of a paired with axes_b[i] of b (n pairs,
 * equal sizes); the result has a's free axes then b's. */
cmx_status cmx_tensordot_axes(cmx_array* out, cmx_array a, cmx_array b,
                              const int* axes_a, const int* axes_b, int n,
                              cmx_stream s);
/* Inner product over the last axes (0-d operands: multiply). */
cmx_status cmx_inner(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
/* Outer product of the flattened arrays: shape (a.size, b.size). */
cmx_status cmx_outer(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
/* sum(conj(a) * b, axis) with a and b broadcast together. */
cmx_status cmx_vecdot(cmx_array* out, cmx_array a, cmx_array b, int axis,
                      cmx_stream s);
/* Kronecker product (the lower-rank operand gets leading size-1 dims). */
cmx_status cmx_kron(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s);
/* Sum of the offset diagonal (a[.., i, .., i + offset, ..]) of the
 * (axis1, axis2) planes. With dtype, a is converted first and the result
 * has dtype; NULL: sum's dtype (integers widen to 32/64 bits, as MLX). */
cmx_status cmx_trace(cmx_array* out, cmx_array a, int offset, int axis1,
                     int axis2, const cmx_dtype* dtype, cmx_stream s);
/* ================= sort and scan ================= */
/* Axis arguments are `const int* axis`: NULL works on the flattened array
 * (MLX's axis=None), else *axis may be negative. */

/* A sorted copy of a along *axis. Stable; NaNs sort last; -0.0 equals 0.0;
 * complex64 orders by real part, then imaginary part (as NumPy). */
cmx_status cmx_sort(cmx_array* out, cmx_array a, const int* axis, cmx_stream s);
/* The uint32 indices that sort a along *axis (stable: equal keys keep their
 * index order). */
cmx_status cmx_argsort(cmx_array* out, cmx_array a, const int* axis,
                       cmx_stream s);
/* A copy of a where, along *axis, element kth (negative: from the end) is
 * the one a sort would put there, no element before it is larger and none
 * after it is smaller. The order within each side is unspecified. */
cmx_status cmx_partition(cmx_array* out, cmx_array a, int kth, const int* axis,
                         cmx_stream s);
/* The uint32 indices that partition a along *axis around kth (ties are
 * broken by index, so index kth is argsort's index kth). */
cmx_status cmx_argpartition(cmx_array* out, cmx_array a, int kth,
                            const int* axis, cmx_stream s);
/* The k largest elements along *axis (0 <= k <= size of the axis), as MLX:
 * the last k of partition(a, -k), in no particular order (k equal to the
 * axis size gives a unchanged). */
cmx_status cmx_topk(cmx_array* out, cmx_array a, int k, const int* axis,
                    cmx_stream s);
/* For each element of values, the uint32 index where it would be inserted
 * into the 1-d ascending sorted_sequence to keep it sorted: the first such
 * index (right == false, NumPy side='left') or the last (side='right').
 * Dtypes are promoted together; NaNs order last as in sort. Shape of
 * values. */
cmx_status cmx_searchsorted(cmx_array* out, cmx_array sorted_sequence,
                            cmx_array values, bool right, cmx_stream s);
/* The unique values of the flattened a, ascending, in an output of static
 * length size (MLX's unique): outs[0] the values, outs[1] the uint32 index
 * of each value's first occurrence, outs[2] the uint32 position in outs[0]
 * of each element of a (shape of a; at most size - 1), outs[3] the int32
 * count of each value. Slots past the number of unique values hold fill
 * (a one-element array converted to a's dtype; NULL: the smallest unique
 * value), the first value's index and a count of 0. NaNs are each their
 * own value; -0 equals 0. Errors: size < 0, fill of more than one element,
 * an empty a with size > 0 and no fill (CMX_ERR_VALUE). */
cmx_status cmx_unique(cmx_array* outs, cmx_array a, int64_t size,
                      cmx_array fill, cmx_stream s);

/* Cumulative sum/product/max/min/log-sum-exp along *axis (NULL: of the
 * flattened array). reverse scans from the end; inclusive == false shifts
 * by one, starting from the identity (0, 1, lowest, highest, -inf).
 * cumsum of bool gives int32; integers wrap on overflow; float16/bfloat16
 * accumulate in float32. logcumsumexp takes real inputs and gives float32
 * for integers and bool. */
#define CMX__SCAN_OPS(X) \
  X(cumsum) X(cumprod) X(cummax) X(cummin) X(logcumsumexp)
#define CMX__DECLARE_SCAN(name)                                       \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, const int* axis, \
                        bool reverse, bool inclusive, cmx_stream s);
CMX__SCAN_OPS(CMX__DECLARE_SCAN)
/* The n-th discrete difference along axis (NumPy's diff: out[i] =
 * a[i+1] - a[i] applied n times; bool uses not_equal). n >= 0; n == 0
 * gives a; n at least the axis size gives an empty axis. a must be at
 * least 1-d. */
cmx_status cmx_diff(cmx_array* out, cmx_array a, int n, int axis, cmx_stream s);
/* The median over axes (NULL: all): the middle element of the sorted
 * values, or the mean of the two middle ones for even counts. Floating
 * result (float32 for integers and bool). A slice holding a NaN gives its
 * last sorted element, as NumPy (NaN; for complex64 the NaN of NumPy's
 * order). Empty slices are errors. */
cmx_status cmx_median(cmx_array* out, cmx_array a, const int* axes, int naxes,
                      bool keepdims, cmx_stream s);
/* The number of nonzero elements over axes (NULL: all), as int32. */
cmx_status cmx_count_nonzero(cmx_array* out, cmx_array a, const int* axes,
                             int naxes, bool keepdims, cmx_stream s);

/* ================= convolution =================
 * Channels-last layouts, as MLX: input (N, spatial..., C_in), weight
 * (C_out, kernel spatial..., C_in / groups), output (N, spatial...,
 * C_out), with 1 to 3 spatial dims. The input must be floating (float16,
 * bfloat16, float32, float64); the result has the promoted dtype of input
 * and weight (16-bit floats are computed in float32). Input channel group
 * g (of `groups`) feeds output channels [g * C_out / groups, (g + 1) *
 * C_out / groups); groups work for 1 to 3 spatial dims (MLX: 1 and 2).
 * Errors name "[conv]" as MLX's do: wrong ranks, channel mismatch, groups
 * not dividing the channels, non-positive strides or dilations, an input
 * smaller than the (dilated) kernel after padding.
 */
/* 1-d cross-correlation: input (N, L, C_in), weight (C_out, K, C_in/groups);
 * out[n, o, co] = sum_{k, ci} xp[n, o * stride + k * dilation, ci] *
 * weight[co, k, ci] with xp the input zero-padded by `padding` on both
 * sides. Output length (L + 2 * padding - dilation * (K - 1) - 1) / stride
 * + 1. */
cmx_status cmx_conv1d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride, int padding, int dilation, int groups,
                      cmx_stream s);
/* 2-d: input (N, H, W, C_in), weight (C_out, KH, KW, C_in/groups); the
 * parameters per spatial dim (_0 for H, _1 for W). */
cmx_status cmx_conv2d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride_0, int stride_1, int padding_0, int padding_1,
                      int dilation_0, int dilation_1, int groups, cmx_stream s);
/* 3-d: input (N, D, H, W, C_in), weight (C_out, KD, KH, KW, C_in/groups). */
cmx_status cmx_conv3d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride_0, int stride_1, int stride_2, int padding_0,
                      int padding_1, int padding_2, int dilation_0,
                      int dilation_1, int dilation_2, int groups, cmx_stream s);
/* Transposed convolutions (the gradient of convN with respect to its
 * input), MLX's weight layout (C_out, K..., C_in/groups): every input
 * element scatters input[n, i, ci] * weight[co, k, ci] into
 * out[n, i * stride + k * dilation - padding, co]. Output length
 * (L - 1) * stride - 2 * padding + dilation * (K - 1) + output_padding + 1;
 * output_padding extends the high end. Computed as conv_general with
 * input_dilation = stride and a flipped kernel. */
cmx_status cmx_conv_transpose1d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride, int padding,
                                int dilation, int output_padding, int groups,
                                cmx_stream s);
cmx_status cmx_conv_transpose2d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride_0, int stride_1,
                                int padding_0, int padding_1, int dilation_0,
                                int dilation_1, int output_padding_0,
                                int output_padding_1, int groups, cmx_stream s);
cmx_status cmx_conv_transpose3d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride_0, int stride_1,
                                int stride_2, int padding_0, int padding_1,
                                int padding_2, int dilation_0, int dilation_1,
                                int dilation_2, int output_padding_0,
                                int output_padding_1, int output_padding_2,
                                int groups, cmx_stream s);
/* General convolution over 1 to 3 spatial dims (input.ndim - 2). Each
 * parameter list has one entry per spatial dim, or one entry for all, or
 * none (NULL/0: stride 1, padding 0, dilations 1). The input is dilated
 * (input_dilation - 1 zeros between elements), then padded with
 * padding_lo/padding_hi zeros (negative padding crops the dilated input),
 * and correlated with the kernel dilated by kernel_dilation at the given
 * stride; flip reverses the kernel's spatial dims (a true convolution).
 * Output size per dim: ((L - 1) * input_dilation + 1 + lo + hi -
 * ((K - 1) * kernel_dilation + 1)) / stride + 1. */
cmx_status cmx_conv_general(cmx_array* out, cmx_array input, cmx_array weight,
                            const int* stride, int nstride,
                            const int* padding_lo, int npadding_lo,
                            const int* padding_hi, int npadding_hi,
                            const int* kernel_dilation, int nkernel_dilation,
                            const int* input_dilation, int ninput_dilation,
                            int groups, bool flip, cmx_stream s);
/* numpy.convolve's modes. */
typedef enum cmx_convolve_mode {
  CMX_CONVOLVE_FULL = 0, /* length N + M - 1 */
  CMX_CONVOLVE_SAME = 1, /* length max(N, M), centred on the full result */
  CMX_CONVOLVE_VALID = 2 /* length max(N, M) - min(N, M) + 1 */
} cmx_convolve_mode;
/* Discrete linear convolution of two non-empty 1-d arrays (the shorter one
 * is the kernel, flipped), as numpy.convolve and mlx.core.convolve. */
cmx_status cmx_convolve(cmx_array* out, cmx_array a, cmx_array v,
                        cmx_convolve_mode mode, cmx_stream s);

/* ================= einsum and gathered products =================
 * As mlx.core's einsum, einsum_path, gather_mm, segmented_mm and
 * block_masked_mm. */

/* Einstein summation of the n operands as NumPy and MLX read subscripts:
 * comma-separated letter terms, one per operand, with an optional "->"
 * and output term (without it the output is every letter used once, in
 * alphabetical order, after any ellipsis). "..." stands for the axes an
 * operand has beyond its letters (right-aligned and broadcast across
 * operands). A letter repeated in one term takes that diagonal ("ii->i");
 * letters absent from the output are summed ("ii" is the trace). Dims of
 * size 1 broadcast against the same letter's size in other operands.
 * Operands are promoted to one dtype (MLX's table), which is the result's.
 * Pairwise contractions follow einsum_path's greedy order (MLX's), each a
 * batched matmul (floating and complex types) or a broadcast product and
 * sum (integers, bool). Errors name the op: "[einsum] ..." for bad
 * letters, repeated output letters, output letters missing from the
 * inputs, operand counts, ranks and sizes that do not match. */
cmx_status cmx_einsum(cmx_array* out, const char* subscripts,
                      const cmx_array* operands, int n, cmx_stream s);
/* The contraction order einsum uses for these subscripts and operands
 * (only their shapes matter), as mlx.core.einsum_path returns it: *nsteps
 * steps, step i contracting the (*counts)[i] operands listed next in
 * *positions (positions into the current operand list; each result is
 * appended at its end and the contracted operands removed). One or two
 * operands give a single step of all of them. *report (NULL: not wanted)
 * is MLX's text (the complete contraction, naive and optimized scaling and
 * FLOP counts) followed by NumPy's speedup, largest intermediate and
 * per-step table. *positions, *counts and *report are malloc'd and freed
 * with cmx_free. Errors as cmx_einsum's, naming "einsum_path". */
cmx_status cmx_einsum_path(int** positions, int** counts, int* nsteps,
                           char** report, const char* subscripts,
                           const cmx_array* operands, int n);
/* Matrix products with a gather over the batch: a (A..., M, K) and b
 * (B..., K, N) (1-d operands promoted as matmul does), lhs_indices and
 * rhs_indices integer arrays of flat indices into the batch dims A and B
 * (NULL: every batch element, arange reshaped to A or B), broadcast
 * together to I. out (I..., M, N): out[i] = a[lhs[i]] @ b[rhs[i]]. With
 * both NULL this is matmul. Real floating types only. sorted_indices is
 * MLX's performance hint (same result). Indices past the batch fail when
 * evaluated ("[gather_mm] lhs index 7 is out of bounds ..."). */
cmx_status cmx_gather_mm(cmx_array* out, cmx_array a, cmx_array b,
                         cmx_array lhs_indices, cmx_array rhs_indices,
                         bool sorted_indices, cmx_stream s);
/* a (M, K) @ b (K, N) with the inner dimension cut into segments:
 * segments (S..., 2) integer [start, end) pairs; out (S..., M, N) with
 * out[s] = a[:, start:end] @ b[start:end, :] (zeros for end <= start).
 * Real floating types; a bound past K fails when evaluated. */
cmx_status cmx_segmented_mm(cmx_array* out, cmx_array a, cmx_array b,
                            cmx_array segments, cmx_stream s);
/* matmul(a, b) with block masks (block_size 32 or 64; NULL masks are
 * absent, and with all three absent this is matmul): mask_lhs (..., tm,
 * tk) and mask_rhs (..., tk, tn) mask the blocks of a and b, mask_out
 * (..., tm, tn) those of the result, with tm = ceil(M / block_size) etc.
 * and batch dims broadcasting. Bool masks zero the blocks they clear;
 * numeric masks scale their blocks. Real floating types only. */
cmx_status cmx_block_masked_mm(cmx_array* out, cmx_array a, cmx_array b,
                               int block_size, cmx_array mask_out,
                               cmx_array mask_lhs, cmx_array mask_rhs,
                               cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
