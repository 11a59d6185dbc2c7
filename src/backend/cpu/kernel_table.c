/* The CPU backend's kernel table: the kernel of every built-in primitive,
 * by id (src/primitives/list.h), registered with core when the library
 * loads. Every primitive has a CPU kernel (test_kernel_tables checks). */
#include "backend/cpu/kernels.h"
#include "backend/views.h"
#include "core/backend.h"
#include "primitives/registry.h"

static const cmx_kernel_fn cpu_kernels[CMX__NUM_PRIMITIVES] = {
    /* copy and conversion */
    [CMX__P_AsType] = cmx__cpu_astype,
    [CMX__P_Copy] = cmx__cpu_astype,
    /* creation */
    [CMX__P_Arange] = cmx__cpu_range,
    [CMX__P_Linspace] = cmx__cpu_range,
    [CMX__P_Full] = cmx__cpu_full,
    [CMX__P_Eye] = cmx__cpu_eye_tri,
    [CMX__P_Tri] = cmx__cpu_eye_tri,
    [CMX__P_Tril] = cmx__cpu_tril_triu,
    [CMX__P_Triu] = cmx__cpu_tril_triu,
    /* file reads */
    [CMX__P_Load] = cmx__cpu_load,
    /* unary elementwise */
    [CMX__P_Abs] = cmx__cpu_unary,
    [CMX__P_Sign] = cmx__cpu_unary,
    [CMX__P_Negative] = cmx__cpu_unary,
    [CMX__P_Square] = cmx__cpu_unary,
    [CMX__P_Sqrt] = cmx__cpu_unary,
    [CMX__P_Rsqrt] = cmx__cpu_unary,
    [CMX__P_Exp] = cmx__cpu_unary,
    [CMX__P_Expm1] = cmx__cpu_unary,
    [CMX__P_Log] = cmx__cpu_unary,
    [CMX__P_Log2] = cmx__cpu_unary,
    [CMX__P_Log10] = cmx__cpu_unary,
    [CMX__P_Log1p] = cmx__cpu_unary,
    [CMX__P_Erf] = cmx__cpu_unary,
    [CMX__P_ErfInv] = cmx__cpu_unary,
    [CMX__P_Sin] = cmx__cpu_unary,
    [CMX__P_Cos] = cmx__cpu_unary,
    [CMX__P_Tan] = cmx__cpu_unary,
    [CMX__P_ArcSin] = cmx__cpu_unary,
    [CMX__P_ArcCos] = cmx__cpu_unary,
    [CMX__P_ArcTan] = cmx__cpu_unary,
    [CMX__P_Sinh] = cmx__cpu_unary,
    [CMX__P_Cosh] = cmx__cpu_unary,
    [CMX__P_Tanh] = cmx__cpu_unary,
    [CMX__P_ArcSinh] = cmx__cpu_unary,
    [CMX__P_ArcCosh] = cmx__cpu_unary,
    [CMX__P_ArcTanh] = cmx__cpu_unary,
    [CMX__P_Sigmoid] = cmx__cpu_unary,
    [CMX__P_Floor] = cmx__cpu_unary,
    [CMX__P_Ceil] = cmx__cpu_unary,
    [CMX__P_Trunc] = cmx__cpu_unary,
    [CMX__P_Round] = cmx__cpu_round,
    [CMX__P_IsNan] = cmx__cpu_unary,
    [CMX__P_IsInf] = cmx__cpu_unary,
    [CMX__P_IsFinite] = cmx__cpu_unary,
    [CMX__P_IsPosInf] = cmx__cpu_unary,
    [CMX__P_IsNegInf] = cmx__cpu_unary,
    [CMX__P_LogicalNot] = cmx__cpu_unary,
    [CMX__P_Conjugate] = cmx__cpu_unary,
    [CMX__P_Real] = cmx__cpu_unary,
    [CMX__P_Imag] = cmx__cpu_unary,
    [CMX__P_BitwiseInvert] = cmx__cpu_unary,
    /* binary elementwise */
    [CMX__P_Add] = cmx__cpu_binary,
    [CMX__P_Subtract] = cmx__cpu_binary,
    [CMX__P_Multiply] = cmx__cpu_binary,
    [CMX__P_Divide] = cmx__cpu_binary,
    [CMX__P_FloorDivide] = cmx__cpu_binary,
    [CMX__P_Remainder] = cmx__cpu_binary,
    [CMX__P_Power] = cmx__cpu_binary,
    [CMX__P_Maximum] = cmx__cpu_binary,
    [CMX__P_Minimum] = cmx__cpu_binary,
    [CMX__P_ArcTan2] = cmx__cpu_binary,
    [CMX__P_LogAddExp] = cmx__cpu_binary,
    [CMX__P_Equal] = cmx__cpu_compare,
    [CMX__P_NotEqual] = cmx__cpu_compare,
    [CMX__P_Less] = cmx__cpu_compare,
    [CMX__P_LessEqual] = cmx__cpu_compare,
    [CMX__P_Greater] = cmx__cpu_compare,
    [CMX__P_GreaterEqual] = cmx__cpu_compare,
    [CMX__P_LogicalAnd] = cmx__cpu_compare,
    [CMX__P_LogicalOr] = cmx__cpu_compare,
    [CMX__P_LogicalXor] = cmx__cpu_compare,
    [CMX__P_BitwiseAnd] = cmx__cpu_compare,
    [CMX__P_BitwiseOr] = cmx__cpu_compare,
    [CMX__P_BitwiseXor] = cmx__cpu_compare,
    [CMX__P_LeftShift] = cmx__cpu_compare,
    [CMX__P_RightShift] = cmx__cpu_compare,
    /* ternary elementwise */
    [CMX__P_Select] = cmx__cpu_select,
    /* reductions */
    [CMX__P_Reduce] = cmx__cpu_reduce,
    [CMX__P_ArgReduce] = cmx__cpu_arg_reduce,
    [CMX__P_LogSumExp] = cmx__cpu_logsumexp,
    [CMX__P_Softmax] = cmx__cpu_softmax,
    [CMX__P_Var] = cmx__cpu_var,
    /* shape */
    [CMX__P_Reshape] = cmx__cpu_reshape,
    [CMX__P_Contiguous] = cmx__cpu_contiguous,
    [CMX__P_View] = cmx__cpu_view,
    [CMX__P_SliceUpdate] = cmx__cpu_slice_update,
    [CMX__P_Concatenate] = cmx__cpu_concatenate,
    [CMX__P_Pad] = cmx__cpu_pad,
    /* indexing */
    [CMX__P_Gather] = cmx__cpu_gather,
    [CMX__P_Scatter] = cmx__cpu_scatter,
    [CMX__P_GatherAxis] = cmx__cpu_gather_axis,
    [CMX__P_ScatterAxis] = cmx__cpu_scatter_axis,
    /* sort and scan */
    [CMX__P_Sort] = cmx__cpu_sort,
    [CMX__P_ArgSort] = cmx__cpu_argsort,
    [CMX__P_Partition] = cmx__cpu_partition,
    [CMX__P_ArgPartition] = cmx__cpu_argpartition,
    [CMX__P_SearchSorted] = cmx__cpu_searchsorted,
    [CMX__P_Scan] = cmx__cpu_scan,
    /* random numbers */
    [CMX__P_RandomBits] = cmx__cpu_random_bits,
    [CMX__P_CovSqrt] = cmx__cpu_cov_sqrt,
    /* convolution */
    [CMX__P_Convolution] = cmx__cpu_conv,
    /* matrix products */
    [CMX__P_Matmul] = cmx__cpu_matmul,
    [CMX__P_AddMM] = cmx__cpu_addmm,
    [CMX__P_GatherMM] = cmx__cpu_gather_mm,
    [CMX__P_SegmentedMM] = cmx__cpu_segmented_mm,
    /* hadamard transform */
    [CMX__P_Hadamard] = cmx__cpu_hadamard,
    /* mx.fast */
    [CMX__P_RMSNorm] = cmx__cpu_rms_norm,
    [CMX__P_AddRMSNorm] = cmx__cpu_add_rms_norm,
    [CMX__P_LayerNorm] = cmx__cpu_layer_norm,
    [CMX__P_RoPE] = cmx__cpu_rope,
    [CMX__P_RoPEMulti] = cmx__cpu_rope_multi,
    [CMX__P_ScaledDotProductAttention] = cmx__cpu_sdpa,
    [CMX__P_CrossEntropy] = cmx__cpu_cross_entropy, /* fast_ce.c */
    /* quantization */
    [CMX__P_Quantize] = cmx__cpu_quantize,
    [CMX__P_Dequantize] = cmx__cpu_dequantize,
    [CMX__P_QuantizedMatmul] = cmx__cpu_quantized_matmul,
    [CMX__P_QuantizedMatmulSwiGLU] = cmx__cpu_quantized_matmul_swiglu,
    [CMX__P_AddRMSNormQuantizedMatmul] = cmx__cpu_add_rms_norm_qmm,
    /* factorizations */
    [CMX__P_LUF] = cmx__cpu_luf,
    [CMX__P_QRF] = cmx__cpu_qrf,
    [CMX__P_SVD] = cmx__cpu_svd,
    [CMX__P_Inverse] = cmx__cpu_inverse,
    [CMX__P_Cholesky] = cmx__cpu_cholesky,
    [CMX__P_Eigh] = cmx__cpu_eigh,
    [CMX__P_Eig] = cmx__cpu_eig,
    [CMX__P_Solve] = cmx__cpu_solve,
    [CMX__P_SolveTriangular] = cmx__cpu_solve_triangular,
    /* fourier transforms */
    [CMX__P_FFT] = cmx__cpu_fft,
    /* collectives */
    [CMX__P_AllReduce] = cmx__cpu_all_reduce,
    [CMX__P_AllGather] = cmx__cpu_all_gather,
    [CMX__P_ReduceScatter] = cmx__cpu_reduce_scatter,
    [CMX__P_Send] = cmx__cpu_send,
    [CMX__P_Recv] = cmx__cpu_recv,
    /* compile's fused regions */
    [CMX__P_Compiled] = cmx__cpu_compiled,
    /* the views, which run on any device */
    CMX__VIEW_KERNEL_ENTRIES,
};

static const cmx__backend cpu_backend = {
    .type = CMX_CPU, .kernels = cpu_kernels, .nkernels = CMX__NUM_PRIMITIVES};

CMX__REGISTER(register_cpu_backend) {
  cmx__backend_register(&cpu_backend);
}
