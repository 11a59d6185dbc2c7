/* Shape primitives (views and layout changes): their output shapes,
 * parameter equality and hashes; the kernels are in the backends' tables,
 * the transform rules in transforms/rules_shape.c. */
#include "primitives/shape.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* ---------------- output shapes ---------------- */

/* Broadcast, Reshape: the shape in the parameters. */
static cmx_status param_shape(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__shape_params* q = cmx_primitive_params(p);
  cmx__shape_set(&out[0], q->dims, (int)q->ndim);
  return CMX_OK;
}

static cmx_status transpose_shapes(const cmx_primitive* p, const cmx_array* in,
                                   int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__transpose_params* q = cmx_primitive_params(p);
  if (q->ndim != cmx_array_ndim(in[0]))
    return cmx__shape_fail(p, "the permutation does not fit the input");
  out[0].ndim = q->ndim;
  for (int d = 0; d < q->ndim; d++)
    out[0].dims[d] = cmx_array_shape(in[0])[q->perm[d]];
  return CMX_OK;
}

/* Squeeze: the input without the (size-1) axes. */
static cmx_status squeeze_shapes(const cmx_primitive* p, const cmx_array* in,
                                 int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  const int64_t* dims = cmx_array_shape(in[0]);
  int k = 0, n = 0;
  for (int d = 0; d < cmx_array_ndim(in[0]); d++) {
    if (k < q->naxes && q->axes[k] == d) {
      if (dims[d] != 1) return cmx__shape_fail(p, "a squeezed axis is not 1");
      k++;
      continue;
    }
    out[0].dims[n++] = dims[d];
  }
  if (k != q->naxes) return cmx__shape_fail(p, "an axis is past the input");
  out[0].ndim = n;
  return CMX_OK;
}

/* ExpandDims: size-1 axes inserted at the output positions axes. */
static cmx_status expand_dims_shapes(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  int nd = cmx_array_ndim(in[0]) + q->naxes;
  if (nd > CMX_MAX_NDIM) return cmx__shape_fail(p, "too many dimensions");
  const int64_t* dims = cmx_array_shape(in[0]);
  for (int d = 0, k = 0, j = 0; d < nd; d++)
    out[0].dims[d] = k < q->naxes && q->axes[k] == d ? (k++, 1) : dims[j++];
  out[0].ndim = nd;
  return CMX_OK;
}

/* The number of indices start, start + step, ... strictly before stop. */
static int64_t slice_extent(int64_t start, int64_t stop, int64_t step) {
  if (step > 0)
    return stop > start
               ? (int64_t)((uint64_t)(stop - start - 1) / (uint64_t)step) + 1
               : 0;
  return start > stop
             ? (int64_t)((uint64_t)(start - stop - 1) / (0 - (uint64_t)step)) +
                   1
             : 0;
}

static cmx_status slice_shapes(const cmx_primitive* p, const cmx_array* in,
                               int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__slice_params* q = cmx_primitive_params(p);
  if (q->ndim != cmx_array_ndim(in[0]))
    return cmx__shape_fail(p, "the slice does not fit the input");
  out[0].ndim = (int)q->ndim;
  for (int d = 0; d < q->ndim; d++)
    out[0].dims[d] = slice_extent(q->start[d], q->stop[d], q->step[d]);
  return CMX_OK;
}

static cmx_status as_strided_shapes(const cmx_primitive* p, const cmx_array* in,
                                    int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  cmx__shape_set(&out[0], q->shape, (int)q->ndim);
  return CMX_OK;
}

/* View: the last axis scaled by the ratio of the dtype sizes. */
static cmx_status view_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__view_params* q = cmx_primitive_params(p);
  int64_t ib = (int64_t)cmx_dtype_size(cmx_array_dtype(in[0]));
  int64_t ob = (int64_t)cmx_dtype_size((cmx_dtype)q->dtype);
  cmx__shape_of(&out[0], in[0]);
  int last = out[0].ndim - 1;
  if (ib == ob) return CMX_OK;
  if (last < 0) return cmx__shape_fail(p, "a 0-d view changes the item size");
  if (ib < ob) {
    if (out[0].dims[last] % (ob / ib))
      return cmx__shape_fail(p, "the last axis does not split evenly");
    out[0].dims[last] /= ob / ib;
  } else {
    out[0].dims[last] *= ib / ob;
  }
  return CMX_OK;
}

/* Concatenate: input 0's shape, the joined axis summed over the inputs. */
static cmx_status concatenate_shapes(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     cmx_shape* out, int nout) {
  (void)nout;
  const cmx__concat_params* q = cmx_primitive_params(p);
  cmx__shape_of(&out[0], in[0]);
  if (q->axis < 0 || q->axis >= out[0].ndim)
    return cmx__shape_fail(p, "the axis is past the inputs' rank");
  for (int i = 1; i < nin; i++) {
    if (cmx_array_ndim(in[i]) != out[0].ndim)
      return cmx__shape_fail(p, "the inputs' ranks differ");
    for (int d = 0; d < out[0].ndim; d++)
      if (d != q->axis && cmx_array_shape(in[i])[d] != out[0].dims[d])
        return cmx__shape_fail(p, "the inputs' shapes differ off the axis");
    out[0].dims[q->axis] += cmx_array_shape(in[i])[q->axis];
  }
  return CMX_OK;
}

static cmx_status pad_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__pad_params* q = cmx_primitive_params(p);
  if (q->ndim != cmx_array_ndim(in[0]))
    return cmx__shape_fail(p, "the padding does not fit the input");
  cmx__shape_of(&out[0], in[0]);
  for (int d = 0; d < q->ndim; d++) out[0].dims[d] += q->low[d] + q->high[d];
  return CMX_OK;
}

/* Diagonal: the other axes, then the diagonal's length. */
static cmx_status diagonal_shapes(const cmx_primitive* p, const cmx_array* in,
                                  int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  int nd = cmx_array_ndim(in[0]);
  const int64_t* dims = cmx_array_shape(in[0]);
  if (q->axis1 < 0 || q->axis1 >= nd || q->axis2 < 0 || q->axis2 >= nd ||
      q->axis1 == q->axis2)
    return cmx__shape_fail(p, "the axes do not fit the input");
  int n = 0;
  for (int d = 0; d < nd; d++)
    if (d != q->axis1 && d != q->axis2) out[0].dims[n++] = dims[d];
  int64_t k1 = dims[q->axis1] - (q->offset < 0 ? -q->offset : 0);
  int64_t k2 = dims[q->axis2] - (q->offset > 0 ? q->offset : 0);
  int64_t k = k1 < k2 ? k1 : k2;
  out[0].dims[n++] = k > 0 ? k : 0;
  out[0].ndim = n;
  return CMX_OK;
}

/* ---------------- equality and hash: the used entries only ---------------- */

static bool shape_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__shape_params *x = cmx_primitive_params(a),
                          *y = cmx_primitive_params(b);
  return x->ndim == y->ndim &&
         !memcmp(x->dims, y->dims, (size_t)x->ndim * sizeof *x->dims);
}
static uint64_t shape_hash(const cmx_primitive* p) {
  const cmx__shape_params* q = cmx_primitive_params(p);
  return cmx__hash_i64s(cmx__hash_start(p), q->dims, (int)q->ndim);
}

static bool transpose_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__transpose_params *x = cmx_primitive_params(a),
                              *y = cmx_primitive_params(b);
  return x->ndim == y->ndim &&
         !memcmp(x->perm, y->perm, (size_t)x->ndim * sizeof *x->perm);
}
static uint64_t transpose_hash(const cmx_primitive* p) {
  const cmx__transpose_params* q = cmx_primitive_params(p);
  return cmx__hash_ints(cmx__hash_start(p), q->perm, q->ndim);
}

static bool axes_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__axes_params *x = cmx_primitive_params(a),
                         *y = cmx_primitive_params(b);
  return x->naxes == y->naxes &&
         !memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof *x->axes);
}
static uint64_t axes_hash(const cmx_primitive* p) {
  const cmx__axes_params* q = cmx_primitive_params(p);
  return cmx__hash_ints(cmx__hash_start(p), q->axes, q->naxes);
}

static bool slice_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__slice_params *x = cmx_primitive_params(a),
                          *y = cmx_primitive_params(b);
  size_t n = (size_t)x->ndim * sizeof(int64_t);
  return x->ndim == y->ndim && !memcmp(x->start, y->start, n) &&
         !memcmp(x->stop, y->stop, n) && !memcmp(x->step, y->step, n);
}
static uint64_t slice_hash(const cmx_primitive* p) {
  const cmx__slice_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64s(cmx__hash_start(p), q->start, (int)q->ndim);
  h = cmx__hash_i64s(h, q->stop, (int)q->ndim);
  return cmx__hash_i64s(h, q->step, (int)q->ndim);
}

static bool as_strided_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__as_strided_params *x = cmx_primitive_params(a),
                               *y = cmx_primitive_params(b);
  size_t n = (size_t)x->ndim * sizeof(int64_t);
  return x->ndim == y->ndim && x->offset == y->offset &&
         !memcmp(x->shape, y->shape, n) && !memcmp(x->strides, y->strides, n);
}
static uint64_t as_strided_hash(const cmx_primitive* p) {
  const cmx__as_strided_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64(cmx__hash_start(p), q->offset);
  h = cmx__hash_i64s(h, q->shape, (int)q->ndim);
  return cmx__hash_i64s(h, q->strides, (int)q->ndim);
}

static bool pad_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__pad_params *x = cmx_primitive_params(a),
                        *y = cmx_primitive_params(b);
  size_t n = (size_t)x->ndim * sizeof(int64_t);
  return x->ndim == y->ndim && !memcmp(x->low, y->low, n) &&
         !memcmp(x->high, y->high, n);
}
static uint64_t pad_hash(const cmx_primitive* p) {
  const cmx__pad_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64s(cmx__hash_start(p), q->low, (int)q->ndim);
  return cmx__hash_i64s(h, q->high, (int)q->ndim);
}

static void diagonal_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Diagonal(offset=%lld, axis1=%d, axis2=%d)",
           (long long)q->offset, q->axis1, q->axis2);
}

/* ---------------- vtables ----------------
 * Contiguous, View, Concatenate and Diagonal have plain parameter structs
 * (no padding, no partly used arrays): compared as bytes. */
CMX__VTABLE(Broadcast, .vjp = cmx__vjp_broadcast, .jvp = cmx__jvp_broadcast,
            .vmap = cmx__vmap_broadcast, .output_shapes = param_shape,
            .equal = shape_equal, .hash = shape_hash);
CMX__VTABLE(Transpose, .vjp = cmx__vjp_transpose, .jvp = cmx__jvp_transpose,
            .vmap = cmx__vmap_transpose, .output_shapes = transpose_shapes,
            .equal = transpose_equal, .hash = transpose_hash);
CMX__VTABLE(Squeeze, .vjp = cmx__vjp_squeeze, .jvp = cmx__jvp_squeeze,
            .vmap = cmx__vmap_squeeze, .output_shapes = squeeze_shapes,
            .equal = axes_equal, .hash = axes_hash);
CMX__VTABLE(ExpandDims, .vjp = cmx__vjp_expand_dims,
            .jvp = cmx__jvp_expand_dims, .vmap = cmx__vmap_expand_dims,
            .output_shapes = expand_dims_shapes, .equal = axes_equal,
            .hash = axes_hash);
CMX__VTABLE(Slice, .vjp = cmx__vjp_slice, .jvp = cmx__jvp_slice,
            .vmap = cmx__vmap_slice, .output_shapes = slice_shapes,
            .equal = slice_equal, .hash = slice_hash);
CMX__VTABLE(AsStrided, .vjp = cmx__vjp_as_strided, .jvp = cmx__jvp_as_strided,
            .vmap = cmx__vmap_as_strided, .output_shapes = as_strided_shapes,
            .equal = as_strided_equal, .hash = as_strided_hash);
CMX__VTABLE(Reshape, .vjp = cmx__vjp_reshape, .jvp = cmx__jvp_reshape,
            .vmap = cmx__vmap_reshape, .output_shapes = param_shape,
            .equal = shape_equal, .hash = shape_hash);
CMX__VTABLE(Contiguous, .vjp = cmx__vjp_contiguous, .jvp = cmx__jvp_contiguous,
            .vmap = cmx__vmap_contiguous,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(View, .vjp = cmx__vjp_view, .jvp = cmx__jvp_view,
            .vmap = cmx__vmap_view, .output_shapes = view_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(SliceUpdate, .vjp = cmx__vjp_slice_update,
            .jvp = cmx__jvp_slice_update, .vmap = cmx__vmap_slice_update,
            .output_shapes = cmx__shapes_like_input, .equal = slice_equal,
            .hash = slice_hash);
CMX__VTABLE(Concatenate, .vjp = cmx__vjp_concatenate,
            .jvp = cmx__jvp_concatenate, .vmap = cmx__vmap_concatenate,
            .output_shapes = concatenate_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(Pad, .vjp = cmx__vjp_pad, .jvp = cmx__jvp_pad,
            .vmap = cmx__vmap_pad, .output_shapes = pad_shapes,
            .equal = pad_equal, .hash = pad_hash);
CMX__VTABLE(Diagonal, .vjp = cmx__vjp_diagonal, .jvp = cmx__jvp_diagonal,
            .vmap = cmx__vmap_diagonal, .print = diagonal_print,
            .output_shapes = diagonal_shapes, .equal = cmx__params_equal_bytes,
            .hash = cmx__params_hash_bytes);
