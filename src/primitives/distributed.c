/* The collective primitives (contract in primitives/distributed.h). Send
 * and Recv are never equal to another node, so compile's CSE never merges
 * two messages into one. */
#include "primitives/distributed.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void dist_destroy(void* params) {
  cmx_group_release(((cmx__dist_params*)params)->group);
}

static const char* red_name(int r) {
  return r == 0 ? "sum" : r == 1 ? "max" : "min";
}

static void all_reduce_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__dist_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "AllReduce(%s)", red_name(q->red));
}

static cmx_status all_gather_shapes(const cmx_primitive* p, const cmx_array* in,
                                    int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  cmx__shape_of(&out[0], in[0]);
  if (out[0].ndim < 1) return cmx__shape_fail(p, "input must have ndim >= 1");
  out[0].dims[0] *= cmx_group_size(q->group);
  return CMX_OK;
}

static cmx_status reduce_scatter_shapes(const cmx_primitive* p,
                                        const cmx_array* in, int nin,
                                        cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__dist_params* q = cmx_primitive_params(p);
  int n = cmx_group_size(q->group);
  cmx__shape_of(&out[0], in[0]);
  if (out[0].ndim < 1 || out[0].dims[0] % n)
    return cmx__shape_fail(p, "first axis not divisible by the group size");
  out[0].dims[0] /= n;
  return CMX_OK;
}

static cmx_status recv_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  out[0] = ((const cmx__dist_params*)cmx_primitive_params(p))->shape;
  return CMX_OK;
}

static bool never_equal(const cmx_primitive* a, const cmx_primitive* b) {
  return a == b;
}

CMX__VTABLE(AllReduce, .vjp = cmx__vjp_identity, .jvp = cmx__jvp_all_reduce,
            .vmap = cmx__vmap_all_reduce, .print = all_reduce_print,
            .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes,
            .destroy = dist_destroy);
CMX__VTABLE(AllGather, .vjp = cmx__vjp_all_gather, .jvp = cmx__jvp_all_gather,
            .vmap = cmx__vmap_all_gather, .output_shapes = all_gather_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes,
            .destroy = dist_destroy);
CMX__VTABLE(ReduceScatter, .jvp = cmx__jvp_reduce_scatter,
            .vmap = cmx__vmap_reduce_scatter,
            .output_shapes = reduce_scatter_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes,
            .destroy = dist_destroy);
CMX__VTABLE(Send, .output_shapes = cmx__shapes_like_input, .equal = never_equal,
            .hash = cmx__params_hash_bytes, .destroy = dist_destroy);
CMX__VTABLE(Recv, .output_shapes = recv_shapes, .equal = never_equal,
            .hash = cmx__params_hash_bytes, .destroy = dist_destroy);
