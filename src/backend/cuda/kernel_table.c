/* The GPU backend's kernel table (the built-in primitives that have a CUDA
 * kernel, by id) and the device interface core calls (device count,
 * streams), registered with core when the library loads. The driver
 * itself is only loaded when core first asks for a device. */
#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "backend/views.h"
#include "core/backend.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

#define GPU_EW_ENTRY(Name, ...) [CMX__P_##Name] = cmx__gpu_elementwise,

static const cmx_kernel_fn gpu_kernels[CMX__NUM_PRIMITIVES] = {
    /* copy and conversion */
    [CMX__P_AsType] = cmx__gpu_copy,
    [CMX__P_Copy] = cmx__gpu_copy,
    /* every op of the op table: one kernel family built from its rows */
    CMX__EW_OPS(GPU_EW_ENTRY)
        /* shape */
        [CMX__P_Reshape] = cmx__gpu_reshape,
    [CMX__P_Contiguous] = cmx__gpu_contiguous,
    /* matrix products (cuBLASLt) */
    [CMX__P_Matmul] = cmx__gpu_matmul,
    [CMX__P_AddMM] = cmx__gpu_addmm,
    [CMX__P_GatherMM] = cmx__gpu_gather_mm,
    /* indexing */
    [CMX__P_Gather] = cmx__gpu_gather,
    [CMX__P_GatherAxis] = cmx__gpu_gather_axis,
    [CMX__P_Scatter] = cmx__gpu_scatter,
    [CMX__P_ScatterAxis] = cmx__gpu_scatter_axis,
    /* the views, which run on any device */
    CMX__VIEW_KERNEL_ENTRIES,
};

static const cmx__backend gpu_backend = {
    .type = CMX_GPU,
    .kernels = gpu_kernels,
    .nkernels = CMX__NUM_PRIMITIVES,
    .device_count = cmx__gpu_count,
    .unavailable_reason = cmx__gpu_unavailable_reason,
    .stream_new = cmx__gpu_stream_new};

CMX__REGISTER(register_gpu_backend) {
  cmx__backend_register(&gpu_backend);
}
