/* Indexing primitives: Gather and Scatter (MLX's general forms) and the
 * one-axis forms GatherAxis / ScatterAxis behind take_along_axis and
 * put_along_axis. */
#include "primitives/indexing.h"

#include <stdio.h>

#include "primitives/registry.h"
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

CMX__VTABLE(Gather, .print = gather_print, .vjp = cmx__vjp_gather,
            .jvp = cmx__jvp_gather, .vmap = cmx__vmap_gather);
CMX__VTABLE(Scatter, .print = scatter_print, .vjp = cmx__vjp_scatter,
            .jvp = cmx__jvp_scatter, .vmap = cmx__vmap_scatter);
CMX__VTABLE(GatherAxis, .print = gather_axis_print, .vjp = cmx__vjp_gather_axis,
            .jvp = cmx__jvp_gather_axis, .vmap = cmx__vmap_gather_axis);
CMX__VTABLE(ScatterAxis, .print = scatter_axis_print,
            .vjp = cmx__vjp_scatter_axis, .jvp = cmx__jvp_scatter_axis,
            .vmap = cmx__vmap_scatter_axis);
