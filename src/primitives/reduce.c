/* Reduction primitives: Reduce, ArgReduce, LogSumExp, Softmax, Var. */
#include "primitives/reduce.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

const char* cmx__reduce_kind_name(int kind) {
  static const char* const names[CMX__RED_NUM_KINDS] = {
      "sum", "prod", "min", "max", "mean", "all", "any"};
  return kind >= 0 && kind < CMX__RED_NUM_KINDS ? names[kind] : "?";
}

/* Appends ", axes=[a,b]" to buf at *pos. */
static void print_axes(char* buf, size_t size, size_t* pos, const int32_t* ax,
                       int n) {
  int w = snprintf(buf + *pos, size - *pos, "axes=[");
  if (w > 0) *pos += (size_t)w < size - *pos ? (size_t)w : size - *pos - 1;
  for (int i = 0; i < n && *pos + 1 < size; i++) {
    w = snprintf(buf + *pos, size - *pos, i ? ",%d" : "%d", ax[i]);
    if (w > 0) *pos += (size_t)w < size - *pos ? (size_t)w : size - *pos - 1;
  }
  if (*pos + 1 < size) {
    buf[(*pos)++] = ']';
    buf[*pos] = 0;
  }
}

static void print_reduce(const cmx_primitive* p, char* buf, size_t size) {
  if (!size) return;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  int w = snprintf(buf, size, "Reduce(%s, ", cmx__reduce_kind_name(q->kind));
  size_t pos = w > 0 ? ((size_t)w < size ? (size_t)w : size - 1) : 0;
  print_axes(buf, size, &pos, q->axes, q->naxes);
  if (pos + 1 < size) snprintf(buf + pos, size - pos, ")");
}

static void print_argreduce(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__argreduce_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "ArgReduce(%s, axis=%d)",
           q->kind == CMX__ARG_MIN ? "argmin" : "argmax", q->axis);
}

static void print_axes_prim(const cmx_primitive* p, char* buf, size_t size) {
  if (!size) return;
  const cmx__axes_params* q = cmx_primitive_params(p);
  int w = snprintf(buf, size, "%s(", cmx_primitive_name(p));
  size_t pos = w > 0 ? ((size_t)w < size ? (size_t)w : size - 1) : 0;
  print_axes(buf, size, &pos, q->axes, q->naxes);
  if (pos + 1 < size) snprintf(buf + pos, size - pos, ")");
}

/* ---- output shapes ---- */
/* The input's shape without the reduced axes (size 1 with keepdims). */
static cmx_status reduced_shape(const cmx_primitive* p, cmx_array a,
                                const int32_t* axes, int naxes, bool keepdims,
                                cmx_shape* out) {
  bool red[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < naxes; i++) {
    if (axes[i] < 0 || axes[i] >= cmx_array_ndim(a))
      return cmx__shape_fail(p, "a reduced axis is past the input's rank");
    red[axes[i]] = true;
  }
  const int64_t* dims = cmx_array_shape(a);
  out->ndim = 0;
  for (int d = 0; d < cmx_array_ndim(a); d++)
    if (!red[d])
      out->dims[out->ndim++] = dims[d];
    else if (keepdims)
      out->dims[out->ndim++] = 1;
  return CMX_OK;
}

static cmx_status reduce_shapes(const cmx_primitive* p, const cmx_array* in,
                                int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  return reduced_shape(p, in[0], q->axes, q->naxes, q->keepdims, &out[0]);
}

static cmx_status axes_reduce_shapes(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  return reduced_shape(p, in[0], q->axes, q->naxes, q->keepdims, &out[0]);
}

static cmx_status argreduce_shapes(const cmx_primitive* p, const cmx_array* in,
                                   int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__argreduce_params* q = cmx_primitive_params(p);
  int nd = cmx_array_ndim(in[0]);
  if (q->axis >= 0)
    return reduced_shape(p, in[0], &q->axis, 1, q->keepdims, &out[0]);
  out[0].ndim = q->keepdims ? nd : 0; /* the flattened array */
  for (int d = 0; d < out[0].ndim; d++) out[0].dims[d] = 1;
  return CMX_OK;
}

/* ---- equality and hash: the used axes only ---- */
static bool reduce_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__reduce_params *x = cmx_primitive_params(a),
                           *y = cmx_primitive_params(b);
  return x->kind == y->kind && x->keepdims == y->keepdims &&
         x->naxes == y->naxes &&
         !memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof *x->axes);
}

static uint64_t reduce_hash(const cmx_primitive* p) {
  const cmx__reduce_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_start(p);
  h = cmx__hash_i64(h, q->kind);
  h = cmx__hash_i64(h, q->keepdims);
  return cmx__hash_ints(h, q->axes, q->naxes);
}

static bool axes_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__axes_params *x = cmx_primitive_params(a),
                         *y = cmx_primitive_params(b);
  return x->ddof == y->ddof && x->sqrt == y->sqrt && x->precise == y->precise &&
         x->keepdims == y->keepdims && x->naxes == y->naxes &&
         !memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof *x->axes);
}

static uint64_t axes_hash(const cmx_primitive* p) {
  const cmx__axes_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_start(p);
  h = cmx__hash_i64(h, q->ddof);
  h = cmx__hash_i64(h, q->sqrt);
  h = cmx__hash_i64(h, q->precise);
  h = cmx__hash_i64(h, q->keepdims);
  return cmx__hash_ints(h, q->axes, q->naxes);
}

CMX__VTABLE(Reduce, .print = print_reduce, .vjp = cmx__vjp_reduce,
            .jvp = cmx__jvp_reduce, .vmap = cmx__vmap_reduce,
            .output_shapes = reduce_shapes, .equal = reduce_equal,
            .hash = reduce_hash);
/* ArgReduce's parameters are three plain ints: compared as bytes. */
CMX__VTABLE(ArgReduce, .print = print_argreduce, .vjp = cmx__vjp_argreduce,
            .jvp = cmx__jvp_argreduce, .vmap = cmx__vmap_argreduce,
            .output_shapes = argreduce_shapes, .equal = cmx__params_equal_bytes,
            .hash = cmx__params_hash_bytes);
CMX__VTABLE(LogSumExp, .print = print_axes_prim, .vjp = cmx__vjp_logsumexp,
            .jvp = cmx__jvp_logsumexp, .vmap = cmx__vmap_axes_reduce,
            .output_shapes = axes_reduce_shapes, .equal = axes_equal,
            .hash = axes_hash);
CMX__VTABLE(Softmax, .print = print_axes_prim, .vjp = cmx__vjp_softmax,
            .jvp = cmx__jvp_softmax, .vmap = cmx__vmap_softmax,
            .output_shapes = cmx__shapes_like_input, .equal = axes_equal,
            .hash = axes_hash);
CMX__VTABLE(Var, .print = print_axes_prim, .vjp = cmx__vjp_var,
            .jvp = cmx__jvp_var, .vmap = cmx__vmap_axes_reduce,
            .output_shapes = axes_reduce_shapes, .equal = axes_equal,
            .hash = axes_hash);

cmx_status cmx__reduce_count(const cmx__reduce_params* q, cmx_array a,
                             cmx_array o, double* out) {
  double count = 1;
  const int64_t* dims = cmx_array_shape(a);
  for (int i = 0; i < q->naxes; i++) count *= (double)dims[q->axes[i]];
  if (out) *out = count;
  if (count == 0 && cmx_array_size(o) > 0 &&
      (q->kind == CMX__RED_MIN || q->kind == CMX__RED_MAX))
    return cmx_kernel_error(
        CMX_ERR_VALUE, "[%s] Cannot %s reduce zero size array.",
        cmx__reduce_kind_name(q->kind), cmx__reduce_kind_name(q->kind));
  return CMX_OK;
}
