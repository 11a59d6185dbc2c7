/* Indexing primitives: Gather and Scatter (MLX's general forms) and the
 * one-axis forms GatherAxis / ScatterAxis behind take_along_axis and
 * put_along_axis. */
#include "primitives/indexing.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static const char* const mode_names[CMX__SCATTER_NUM_MODES] = {
    "none", "add", "prod", "max", "min"};

static const char* mode_name(int mode) {
  return mode >= 0 && mode < CMX__SCATTER_NUM_MODES ? mode_names[mode] : "?";
}

/* Formats n ints as "[a, b, c]" into buf (bounded). */
static const char* int_list(char* buf, size_t size, const int* v, int n) {
  size_t k = 0;
  buf[0] = 0;
  for (int i = 0; i < n && k + 1 < size; i++) {
    int w = snprintf(buf + k, size - k, "%s%d", i ? ", " : "", v[i]);
    if (w < 0) break;
    k += (size_t)w;
  }
  return buf;
}

static void gather_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__gather_params* q = cmx_primitive_params(p);
  char axes[256];
  snprintf(buf, size, "Gather(axes=[%s])",
           int_list(axes, sizeof axes, q->axes, q->naxes));
}

static void scatter_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__scatter_params* q = cmx_primitive_params(p);
  char axes[256];
  snprintf(buf, size, "Scatter(%s, axes=[%s])", mode_name(q->mode),
           int_list(axes, sizeof axes, q->axes, q->naxes));
}

static void gather_axis_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__axis_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "GatherAxis(axis=%d)", q->axis);
}

static void scatter_axis_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__axis_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "ScatterAxis(%s, axis=%d)", mode_name(q->mode), q->axis);
}

/* ---- output shapes ---- */
/* Gather: the (broadcast) index shape, then the slice sizes. */
static cmx_status gather_shapes(const cmx_primitive* p, const cmx_array* in,
                                int nin, cmx_shape* out, int nout) {
  (void)nout;
  const cmx__gather_params* q = cmx_primitive_params(p);
  int nd = cmx_array_ndim(in[0]);
  if (nin != q->naxes + 1) return cmx__shape_fail(p, "one index per axis");
  if (nin > 1)
    cmx__shape_of(&out[0], in[1]);
  else
    out[0].ndim = 0;
  if (out[0].ndim + nd > CMX_MAX_NDIM)
    return cmx__shape_fail(p, "too many dimensions");
  memcpy(out[0].dims + out[0].ndim, q->slice_sizes,
         (size_t)nd * sizeof(int64_t));
  out[0].ndim += nd;
  return CMX_OK;
}

/* GatherAxis: the indices' shape. */
static cmx_status gather_axis_shapes(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     cmx_shape* out, int nout) {
  (void)p, (void)nout;
  if (nin != 2) return cmx__shape_fail(p, "bad arity");
  cmx__shape_of(&out[0], in[1]);
  return CMX_OK;
}

/* ---- equality and hash: the used axes only (Gather's struct also has
 * padding before slice_sizes) ---- */
static bool gather_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__gather_params *x = cmx_primitive_params(a),
                           *y = cmx_primitive_params(b);
  return x->naxes == y->naxes &&
         !memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof *x->axes) &&
         !memcmp(x->slice_sizes, y->slice_sizes, sizeof x->slice_sizes);
}
static uint64_t gather_hash(const cmx_primitive* p) {
  const cmx__gather_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_ints(cmx__hash_start(p), q->axes, q->naxes);
  return cmx__hash_i64s(h, q->slice_sizes, CMX_MAX_NDIM);
}

static bool scatter_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__scatter_params *x = cmx_primitive_params(a),
                            *y = cmx_primitive_params(b);
  return x->mode == y->mode && x->naxes == y->naxes &&
         !memcmp(x->axes, y->axes, (size_t)x->naxes * sizeof *x->axes);
}
static uint64_t scatter_hash(const cmx_primitive* p) {
  const cmx__scatter_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64(cmx__hash_start(p), q->mode);
  return cmx__hash_ints(h, q->axes, q->naxes);
}

/* GatherAxis and ScatterAxis have two plain ints: compared as bytes. */
CMX__VTABLE(Gather, .print = gather_print, .vjp = cmx__vjp_gather,
            .jvp = cmx__jvp_gather, .vmap = cmx__vmap_gather,
            .output_shapes = gather_shapes, .equal = gather_equal,
            .hash = gather_hash);
CMX__VTABLE(Scatter, .print = scatter_print, .vjp = cmx__vjp_scatter,
            .jvp = cmx__jvp_scatter, .vmap = cmx__vmap_scatter,
            .output_shapes = cmx__shapes_like_input, .equal = scatter_equal,
            .hash = scatter_hash);
CMX__VTABLE(GatherAxis, .print = gather_axis_print, .vjp = cmx__vjp_gather_axis,
            .jvp = cmx__jvp_gather_axis, .vmap = cmx__vmap_gather_axis,
            .output_shapes = gather_axis_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(ScatterAxis, .print = scatter_axis_print,
            .vjp = cmx__vjp_scatter_axis, .jvp = cmx__jvp_scatter_axis,
            .vmap = cmx__vmap_scatter_axis,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
