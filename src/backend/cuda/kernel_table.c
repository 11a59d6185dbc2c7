/* The GPU backend's kernel table (the built-in primitives that have a CUDA
 * kernel, by id) and the device interface core calls (device count,
 * streams), registered with core when the library loads. The driver
 * itself is only loaded when core first asks for a device. */
#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/kernels_linalg.h"
#include "backend/views.h"
#include "core/backend.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

#define GPU_EW_ENTRY(Name, ...) [CMX__P_##Name] = cmx__gpu_elementwise,

static const cmx_kernel_fn gpu_kernels[CMX__NUM_PRIMITIVES] = {
    /* copy and conversion */
    [CMX__P_AsType] = cmx__gpu_copy,
    [CMX__P_Copy] = cmx__gpu_copy,
    /* reductions (reduce.c) */
    [CMX__P_Reduce] = cmx__gpu_reduce,
    [CMX__P_ArgReduce] = cmx__gpu_arg_reduce,
    [CMX__P_LogSumExp] = cmx__gpu_logsumexp,
    [CMX__P_Var] = cmx__gpu_var,
    [CMX__P_Compiled] = cmx__gpu_compiled,
    [CMX__P_Softmax] = cmx__gpu_softmax, /* softmax.c */
    [CMX__P_Scan] = cmx__gpu_scan,       /* scan.c */
    /* sorts (sort.c): a partition is a full sort */
    [CMX__P_Sort] = cmx__gpu_sort,
    [CMX__P_ArgSort] = cmx__gpu_argsort,
    [CMX__P_Partition] = cmx__gpu_sort,
    [CMX__P_ArgPartition] = cmx__gpu_argsort,
    [CMX__P_SearchSorted] = cmx__gpu_searchsorted,
    [CMX__P_Load] = cmx__gpu_load, /* io.c: read on the host, copied up */
    /* every op of the op table: one kernel family built from its rows */
    CMX__EW_OPS(GPU_EW_ENTRY)
        /* shape */
        [CMX__P_Reshape] = cmx__gpu_reshape,
    [CMX__P_Contiguous] = cmx__gpu_contiguous,
    /* matrix products (cuBLASLt) */
    [CMX__P_Matmul] = cmx__gpu_matmul,
    [CMX__P_AddMM] = cmx__gpu_addmm,
    [CMX__P_GatherMM] = cmx__gpu_gather_mm,
    [CMX__P_Convolution] = cmx__gpu_convolution,  /* conv.c, cudnn.c */
    [CMX__P_SegmentedMM] = cmx__gpu_segmented_mm, /* segmm_hadamard.c */
    [CMX__P_Hadamard] = cmx__gpu_hadamard,        /* segmm_hadamard.c */
    /* indexing */
    [CMX__P_Gather] = cmx__gpu_gather,
    [CMX__P_GatherAxis] = cmx__gpu_gather_axis,
    [CMX__P_Scatter] = cmx__gpu_scatter,
    [CMX__P_ScatterAxis] = cmx__gpu_scatter_axis,
    /* creation, random bits, joins (creation.c, random.c, shape_join.c) */
    [CMX__P_Arange] = cmx__gpu_range,
    [CMX__P_Linspace] = cmx__gpu_range,
    [CMX__P_Full] = cmx__gpu_copy,
    [CMX__P_Eye] = cmx__gpu_eye_tri,
    [CMX__P_Tri] = cmx__gpu_eye_tri,
    [CMX__P_Tril] = cmx__gpu_tril_triu,
    [CMX__P_Triu] = cmx__gpu_tril_triu,
    [CMX__P_RandomBits] = cmx__gpu_random_bits,
    [CMX__P_View] = cmx__gpu_view,
    [CMX__P_SliceUpdate] = cmx__gpu_slice_update,
    [CMX__P_Concatenate] = cmx__gpu_concatenate,
    [CMX__P_Pad] = cmx__gpu_pad,
    /* collectives through NCCL (distributed.c) */
    [CMX__P_AllReduce] = cmx__gpu_all_reduce,
    [CMX__P_AllGather] = cmx__gpu_all_gather,
    [CMX__P_ReduceScatter] = cmx__gpu_reduce_scatter,
    [CMX__P_Send] = cmx__gpu_send,
    [CMX__P_Recv] = cmx__gpu_recv,
    /* factorizations (linalg*.c: cuSOLVER, cuBLAS) and FFT (fft.c: cuFFT) */
    [CMX__P_Inverse] = cmx__gpu_inverse,
    [CMX__P_Cholesky] = cmx__gpu_cholesky,
    [CMX__P_LUF] = cmx__gpu_luf,
    [CMX__P_Solve] = cmx__gpu_solve,
    [CMX__P_SolveTriangular] = cmx__gpu_solve_triangular,
    [CMX__P_QRF] = cmx__gpu_qrf,
    [CMX__P_SVD] = cmx__gpu_svd,
    [CMX__P_Eigh] = cmx__gpu_eigh,
    [CMX__P_Eig] = cmx__gpu_eig,
    [CMX__P_FFT] = cmx__gpu_fft,
    [CMX__P_CovSqrt] = cmx__gpu_cov_sqrt,
    /* mx.fast (fast.c) */
    [CMX__P_RMSNorm] = cmx__gpu_rms_norm,
    [CMX__P_AddRMSNorm] = cmx__gpu_add_rms_norm,
    [CMX__P_LayerNorm] = cmx__gpu_layer_norm,
    [CMX__P_RoPE] = cmx__gpu_rope,
    [CMX__P_RoPEMulti] = cmx__gpu_rope_multi,
    [CMX__P_ScaledDotProductAttention] = cmx__gpu_sdpa, /* sdpa.c */
    [CMX__P_CrossEntropy] = cmx__gpu_cross_entropy, /* cross_entropy.c */
    /* quantization (quantized.c) */
    [CMX__P_Quantize] = cmx__gpu_quantize,
    [CMX__P_Dequantize] = cmx__gpu_dequantize,
    [CMX__P_QuantizedMatmul] = cmx__gpu_quantized_matmul,
    [CMX__P_QuantizedMatmulSwiGLU] = cmx__gpu_quantized_matmul_swiglu,
    [CMX__P_AddRMSNormQuantizedMatmul] = cmx__gpu_add_rms_norm_qmm,
    /* the views, which run on any device */
    CMX__VIEW_KERNEL_ENTRIES,
};

static const cmx__backend gpu_backend = {
    .type = CMX_GPU,
    .kernels = gpu_kernels,
    .nkernels = CMX__NUM_PRIMITIVES,
    .device_count = cmx__gpu_count,
    .unavailable_reason = cmx__gpu_unavailable_reason,
    .stream_new = cmx__gpu_stream_new,
    .device_info = cmx__gpu_device_info};

CMX__REGISTER(register_gpu_backend) {
  cmx__backend_register(&gpu_backend);
}
