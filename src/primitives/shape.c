/* Shape primitives (views and layout changes). */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

/* The pure views only set strides: their kernels serve any device. */
CMX__VTABLE(Broadcast, .eval_cpu = cmx__cpu_broadcast,
            .eval_gpu = cmx__cpu_broadcast, .vjp = cmx__vjp_broadcast,
            .jvp = cmx__jvp_broadcast, .vmap = cmx__vmap_broadcast);
CMX__VTABLE(Transpose, .eval_cpu = cmx__cpu_transpose,
            .eval_gpu = cmx__cpu_transpose);
CMX__VTABLE(Squeeze, .eval_cpu = cmx__cpu_squeeze,
            .eval_gpu = cmx__cpu_squeeze);
CMX__VTABLE(ExpandDims, .eval_cpu = cmx__cpu_expand_dims,
            .eval_gpu = cmx__cpu_expand_dims);
CMX__VTABLE(Slice, .eval_cpu = cmx__cpu_slice, .eval_gpu = cmx__cpu_slice);
CMX__VTABLE(AsStrided, .eval_cpu = cmx__cpu_as_strided,
            .eval_gpu = cmx__cpu_as_strided);
CMX__VTABLE(Reshape, .eval_cpu = cmx__cpu_reshape,
            .eval_gpu = cmx__gpu_reshape);
CMX__VTABLE(Contiguous, .eval_cpu = cmx__cpu_contiguous,
            .eval_gpu = cmx__gpu_contiguous);
CMX__VTABLE(View, .eval_cpu = cmx__cpu_view);
CMX__VTABLE(SliceUpdate, .eval_cpu = cmx__cpu_slice_update);
CMX__VTABLE(Concatenate, .eval_cpu = cmx__cpu_concatenate);
CMX__VTABLE(Pad, .eval_cpu = cmx__cpu_pad);
