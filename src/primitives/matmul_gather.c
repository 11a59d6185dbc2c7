/* Gathered matrix-product primitives: GatherMM and SegmentedMM (see
 * primitives/matmul_gather.h for their contracts). */
#include "primitives/matmul_gather.h"

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* GatherMM: the indices' shape, then (M, N). */
static cmx_status gather_mm_shapes(const cmx_primitive* p, const cmx_array* in,
                                   int nin, cmx_shape* out, int nout) {
  (void)nout;
  int na = cmx_array_ndim(in[0]), nb = cmx_array_ndim(in[1]);
  if (nin != 4 || na < 2 || nb < 2)
    return cmx__shape_fail(p, "operands of two dims or more and 2 indices");
  cmx__shape_of(&out[0], in[2]);
  if (out[0].ndim + 2 > CMX_MAX_NDIM)
    return cmx__shape_fail(p, "too many dimensions");
  out[0].dims[out[0].ndim++] = cmx_array_shape(in[0])[na - 2];
  out[0].dims[out[0].ndim++] = cmx_array_shape(in[1])[nb - 1];
  return CMX_OK;
}

/* SegmentedMM: the segments' batch shape (all but the last axis), then
 * (M, N). */
static cmx_status segmented_mm_shapes(const cmx_primitive* p,
                                      const cmx_array* in, int nin,
                                      cmx_shape* out, int nout) {
  (void)nout;
  int ns = nin == 3 ? cmx_array_ndim(in[2]) : 0;
  if (ns < 1 || cmx_array_ndim(in[0]) != 2 || cmx_array_ndim(in[1]) != 2)
    return cmx__shape_fail(p, "2-d operands and (..., 2) segments");
  cmx__shape_set(&out[0], cmx_array_shape(in[2]), ns - 1);
  out[0].dims[out[0].ndim++] = cmx_array_shape(in[0])[0];
  out[0].dims[out[0].ndim++] = cmx_array_shape(in[1])[1];
  return CMX_OK;
}

/* GatherMM's parameters are two plain ints: compared as bytes. */
CMX__VTABLE(GatherMM, .vjp = cmx__vjp_gather_mm, .jvp = cmx__jvp_gather_mm,
            .vmap = cmx__vmap_gather_mm, .output_shapes = gather_mm_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(SegmentedMM, .vjp = cmx__vjp_segmented_mm,
            .jvp = cmx__jvp_segmented_mm, .vmap = cmx__vmap_segmented_mm,
            .output_shapes = segmented_mm_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
