/* Reduction primitives: Reduce, ArgReduce, LogSumExp, Softmax, Var. */
#include "primitives/reduce.h"

#include <stdio.h>

#include "primitives/registry.h"
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

CMX__VTABLE(Reduce, .print = print_reduce, .vjp = cmx__vjp_reduce,
            .jvp = cmx__jvp_reduce, .vmap = cmx__vmap_reduce);
CMX__VTABLE(ArgReduce, .print = print_argreduce, .vjp = cmx__vjp_argreduce,
            .jvp = cmx__jvp_argreduce, .vmap = cmx__vmap_argreduce);
CMX__VTABLE(LogSumExp, .print = print_axes_prim, .vjp = cmx__vjp_logsumexp,
            .jvp = cmx__jvp_logsumexp, .vmap = cmx__vmap_axes_reduce);
CMX__VTABLE(Softmax, .print = print_axes_prim, .vjp = cmx__vjp_softmax,
            .jvp = cmx__jvp_softmax, .vmap = cmx__vmap_softmax);
CMX__VTABLE(Var, .print = print_axes_prim, .vjp = cmx__vjp_var,
            .jvp = cmx__jvp_var, .vmap = cmx__vmap_axes_reduce);
