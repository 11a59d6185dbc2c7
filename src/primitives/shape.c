/* Shape primitives (views and layout changes). */
#include "primitives/shape.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "transforms/rules.h"

CMX__VTABLE(Broadcast, .vjp = cmx__vjp_broadcast, .jvp = cmx__jvp_broadcast,
            .vmap = cmx__vmap_broadcast);
CMX__VTABLE(Transpose, .vjp = cmx__vjp_transpose, .jvp = cmx__jvp_transpose,
            .vmap = cmx__vmap_transpose);
CMX__VTABLE(Squeeze, .vjp = cmx__vjp_squeeze, .jvp = cmx__jvp_squeeze,
            .vmap = cmx__vmap_squeeze);
CMX__VTABLE(ExpandDims, .vjp = cmx__vjp_expand_dims,
            .jvp = cmx__jvp_expand_dims, .vmap = cmx__vmap_expand_dims);
CMX__VTABLE(Slice, .vjp = cmx__vjp_slice, .jvp = cmx__jvp_slice,
            .vmap = cmx__vmap_slice);
CMX__VTABLE(AsStrided, .vjp = cmx__vjp_as_strided, .jvp = cmx__jvp_as_strided,
            .vmap = cmx__vmap_as_strided);
CMX__VTABLE(Reshape, .vjp = cmx__vjp_reshape, .jvp = cmx__jvp_reshape,
            .vmap = cmx__vmap_reshape);
CMX__VTABLE(Contiguous, .vjp = cmx__vjp_contiguous, .jvp = cmx__jvp_contiguous,
            .vmap = cmx__vmap_contiguous);
CMX__VTABLE(View, .vjp = cmx__vjp_view, .jvp = cmx__jvp_view,
            .vmap = cmx__vmap_view);
CMX__VTABLE(SliceUpdate, .vjp = cmx__vjp_slice_update,
            .jvp = cmx__jvp_slice_update, .vmap = cmx__vmap_slice_update);
CMX__VTABLE(Concatenate, .vjp = cmx__vjp_concatenate,
            .jvp = cmx__jvp_concatenate, .vmap = cmx__vmap_concatenate);
CMX__VTABLE(Pad, .vjp = cmx__vjp_pad, .jvp = cmx__jvp_pad,
            .vmap = cmx__vmap_pad);

static void diagonal_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Diagonal(offset=%lld, axis1=%d, axis2=%d)",
           (long long)q->offset, q->axis1, q->axis2);
}

CMX__VTABLE(Diagonal, .vjp = cmx__vjp_diagonal, .jvp = cmx__jvp_diagonal,
            .vmap = cmx__vmap_diagonal, .print = diagonal_print);
