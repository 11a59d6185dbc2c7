/* Shape primitives (views and layout changes). */
#include "primitives/shape.h"

#include <stdio.h>

#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

/* The pure views only set strides: their kernels serve any device. */
CMX__VTABLE(Broadcast, .eval_cpu = cmx__cpu_broadcast,
            .eval_gpu = cmx__cpu_broadcast, .vjp = cmx__vjp_broadcast,
            .jvp = cmx__jvp_broadcast, .vmap = cmx__vmap_broadcast);
CMX__VTABLE(Transpose, .eval_cpu = cmx__cpu_transpose,
            .eval_gpu = cmx__cpu_transpose, .vjp = cmx__vjp_transpose,
            .jvp = cmx__jvp_transpose, .vmap = cmx__vmap_transpose);
CMX__VTABLE(Squeeze, .eval_cpu = cmx__cpu_squeeze, .eval_gpu = cmx__cpu_squeeze,
            .vjp = cmx__vjp_squeeze, .jvp = cmx__jvp_squeeze,
            .vmap = cmx__vmap_squeeze);
CMX__VTABLE(ExpandDims, .eval_cpu = cmx__cpu_expand_dims,
            .eval_gpu = cmx__cpu_expand_dims, .vjp = cmx__vjp_expand_dims,
            .jvp = cmx__jvp_expand_dims, .vmap = cmx__vmap_expand_dims);
CMX__VTABLE(Slice, .eval_cpu = cmx__cpu_slice, .eval_gpu = cmx__cpu_slice,
            .vjp = cmx__vjp_slice, .jvp = cmx__jvp_slice,
            .vmap = cmx__vmap_slice);
CMX__VTABLE(AsStrided, .eval_cpu = cmx__cpu_as_strided,
            .eval_gpu = cmx__cpu_as_strided, .vjp = cmx__vjp_as_strided,
            .jvp = cmx__jvp_as_strided, .vmap = cmx__vmap_as_strided);
CMX__VTABLE(Reshape, .eval_cpu = cmx__cpu_reshape, .eval_gpu = cmx__gpu_reshape,
            .vjp = cmx__vjp_reshape, .jvp = cmx__jvp_reshape,
            .vmap = cmx__vmap_reshape);
CMX__VTABLE(Contiguous, .eval_cpu = cmx__cpu_contiguous,
            .eval_gpu = cmx__gpu_contiguous, .vjp = cmx__vjp_contiguous,
            .jvp = cmx__jvp_contiguous, .vmap = cmx__vmap_contiguous);
CMX__VTABLE(View, .eval_cpu = cmx__cpu_view, .vjp = cmx__vjp_view,
            .jvp = cmx__jvp_view, .vmap = cmx__vmap_view);
CMX__VTABLE(SliceUpdate, .eval_cpu = cmx__cpu_slice_update,
            .vjp = cmx__vjp_slice_update, .jvp = cmx__jvp_slice_update,
            .vmap = cmx__vmap_slice_update);
CMX__VTABLE(Concatenate, .eval_cpu = cmx__cpu_concatenate,
            .vjp = cmx__vjp_concatenate, .jvp = cmx__jvp_concatenate,
            .vmap = cmx__vmap_concatenate);
CMX__VTABLE(Pad, .eval_cpu = cmx__cpu_pad, .vjp = cmx__vjp_pad,
            .jvp = cmx__jvp_pad, .vmap = cmx__vmap_pad);

static void diagonal_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Diagonal(offset=%lld, axis1=%d, axis2=%d)",
           (long long)q->offset, q->axis1, q->axis2);
}

/* The view works wherever the data lives, so the GPU runs it too. */
CMX__VTABLE(Diagonal, .eval_cpu = cmx__cpu_diagonal,
            .eval_gpu = cmx__cpu_diagonal, .vjp = cmx__vjp_diagonal,
            .jvp = cmx__jvp_diagonal, .vmap = cmx__vmap_diagonal,
            .print = diagonal_print);
