/* GPU kernel entry points (eval_gpu), referenced by the primitive vtables.
 * One section per family; each kernel is defined in
 * src/backend/cuda/<family>.c. On a machine with no GPU they are never
 * called (GPU streams cannot be created there). */
#ifndef CMX_BACKEND_CUDA_KERNELS_H
#define CMX_BACKEND_CUDA_KERNELS_H

#include "cmx/primitive.h"

/* ---- copy and conversion (copy.c) ---- */
/* Copy, AsType and Full (a copy of its broadcast value: a fill): same-dtype
 * copies of any layout; other dtype pairs convert (cmx__gpu_convert). */
cmx_status cmx__gpu_copy(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);

/* ---- file reads (io.c) ---- */
/* Load: the file's bytes read on the host and copied to the device. */
cmx_status cmx__gpu_load(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);

/* ---- shape and views (shape.c) ---- */
/* Reshape and Contiguous: views when the layout allows, else row-major
 * copies on the device. (The pure views use the CPU's view kernels, which
 * only set strides and work for any device.) */
cmx_status cmx__gpu_reshape(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_contiguous(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);

/* ---- elementwise (elementwise.c) ---- */
/* Every primitive of the op table (primitives/ew_ops.h): unary, binary
 * and Select, every dtype its row takes, any input layout. */
cmx_status cmx__gpu_elementwise(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout);
/* in converted to out's dtype (AsType, Copy between dtypes): out is
 * allocated here (or donated). */
cmx_status cmx__gpu_convert(const cmx_primitive* p, cmx_array in,
                            cmx_array out);

/* ---- fused regions (compiled.c) ---- */
/* Compiled: a region made by compile's fuse pass, one generated kernel. */
cmx_status cmx__gpu_compiled(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout);
/* For tests: compiles prog's whole CUDA module (every kernel) to PTX for
 * sm_<arch> with NVRTC, no cache; NVRTC's error when it fails. */
struct cmx__fused_program;
cmx_status cmx__gpu_compiled_check(const struct cmx__fused_program* prog,
                                   int arch);

/* ---- matrix products (matmul.c) ---- */
/* Matmul and AddMM through cuBLASLt: float32 (no TF32 unless
 * CMX_CUDA_ALLOW_TF32=1), float64, float16, bfloat16, complex64; any
 * operand layout, broadcast batch dims. */
cmx_status cmx__gpu_matmul(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout);
cmx_status cmx__gpu_addmm(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout);
/* GatherMM: the picked matrices gathered into stacks, then one batched
 * product (an index past the batch gives a zero matrix on the GPU; the CPU
 * reports it). */
cmx_status cmx__gpu_gather_mm(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout);

/* ---- convolution (conv.c, cudnn.c) ---- */
/* Convolution: every case of the primitive (1-3 spatial dims, strides,
 * padding, both dilations, groups, flip), floating dtypes, any layouts;
 * through cuDNN when it loads and takes the case, else cmx's unfold +
 * cuBLASLt path (CMX_CUDA_CONV=fallback forces the latter). */
cmx_status cmx__gpu_convolution(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout);

/* ---- segmented products, Hadamard transform (segmm_hadamard.c) ---- */
/* SegmentedMM (floating dtypes; a segment bound past K is clamped on the
 * GPU) and Hadamard (floating dtypes, rows up to the device's shared
 * memory in compute values; float results equal the CPU's). */
cmx_status cmx__gpu_segmented_mm(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_hadamard(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout);

/* ---- indexing (indexing.c) ---- */
/* Gather, GatherAxis, Scatter (every mode), ScatterAxis: every dtype, any
 * index dtype and layout. Out-of-range indices are not reported on the
 * GPU (a gather yields 0 there, a scatter drops them). */
cmx_status cmx__gpu_gather(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout);
cmx_status cmx__gpu_gather_axis(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_scatter(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_scatter_axis(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout);

/* ---- creation (creation.c) ---- */
/* Arange and Linspace, Eye and Tri, Tril and Triu: every dtype, values
 * equal to the CPU's bit for bit. (Full is cmx__gpu_copy of its broadcast
 * value.) */
cmx_status cmx__gpu_range(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout);
cmx_status cmx__gpu_eye_tri(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_tril_triu(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout);

/* ---- random (random.c) ---- */
/* RandomBits: the CPU's threefry bits for every key layout, shape and
 * width. */
cmx_status cmx__gpu_random_bits(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout);

/* ---- joins and reinterpretation (shape_join.c) ---- */
/* View (a view when the layout allows, else a row-major copy),
 * SliceUpdate (any steps), Concatenate (any axis, any inputs' layouts),
 * Pad (constant). */
cmx_status cmx__gpu_view(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);
cmx_status cmx__gpu_slice_update(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_concatenate(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_pad(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout);

/* ---- reductions (reduce.c) ---- */
/* Reduce (every kind), ArgReduce, LogSumExp and Var: every dtype the CPU
 * kernels take, any axes and input layout. */
cmx_status cmx__gpu_reduce(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout);
cmx_status cmx__gpu_arg_reduce(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_logsumexp(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_var(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout);

/* ---- softmax (softmax.c) ---- */
/* Softmax over any axes, floating dtypes, any input layout. */
cmx_status cmx__gpu_softmax(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout);

/* ---- scans (scan.c) ---- */
/* Scan: every kind and dtype the CPU takes, any axis, inclusive or
 * exclusive, forward or reverse. */
cmx_status cmx__gpu_scan(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);

/* ---- collectives (distributed.c) ----
 * Contract in primitives/distributed.h: through the group's backend on the
 * task's stream (NCCL); an error for host-memory backends. */
cmx_status cmx__gpu_all_reduce(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_all_gather(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_reduce_scatter(const cmx_primitive* p, const cmx_array* in,
                                   int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_send(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);
cmx_status cmx__gpu_recv(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);

/* ---- sorts (sort.c) ---- */
/* Sort and Partition (cmx__gpu_sort), ArgSort and ArgPartition
 * (cmx__gpu_argsort): every dtype, any axis and input layout, equal to the
 * CPU's sort bit for bit (stable, NaNs last); a partition is the full
 * sort. SearchSorted: the CPU's keys, both sides. */
cmx_status cmx__gpu_sort(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);
cmx_status cmx__gpu_argsort(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_searchsorted(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout);

/* ---- mx.fast (fast.c) ---- */
/* RMSNorm and LayerNorm (weight, bias optional) and RoPE (traditional or
 * not, base or freqs, scalar or per-batch offsets): float16, bfloat16,
 * float32, any input layout. */
cmx_status cmx__gpu_rms_norm(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_layer_norm(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
/* AddRMSNorm (compile's add_rms_norm pass): h = x + r and RMSNorm of h in
 * one launch, bit for bit the Add and RMSNorm kernels' results. */
cmx_status cmx__gpu_add_rms_norm(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout);
/* The threads a row that AddRMSNorm's vector kernel (cmx_addnorm_vec_rms)
 * takes for rows of D elements of dt on device dev, as the sums' order
 * depends on it: the fused norm prologue of cmx__gpu_add_rms_norm_qmm
 * reproduces that order. 0 with the error set when a kernel fails to
 * load. */
int cmx__gpu_addnorm_vec_threads(int dev, cmx_dtype dt, long long D);
cmx_status cmx__gpu_rope(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);
/* RoPEMulti (compile's rope_multi pass): the RoPEs of up to 4 arrays in
 * one launch, bit for bit cmx__gpu_rope's results. */
cmx_status cmx__gpu_rope_multi(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
/* ScaledDotProductAttention (sdpa.c): float16, bfloat16, float32, every
 * mask kind, sinks, grouped-query heads, head dims up to 256. */
cmx_status cmx__gpu_sdpa(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout);
/* CrossEntropy (cross_entropy.c): float16, bfloat16, float32 logits in
 * row-contiguous rows, int64 targets. */
cmx_status cmx__gpu_cross_entropy(const cmx_primitive* p, const cmx_array* in,
                                  int nin, const cmx_array* out, int nout);

/* ---- quantization (quantized.c) ---- */
/* Quantize, Dequantize and QuantizedMatmul (affine; bits 2, 3, 4, 5, 6,
 * 8; group sizes 32, 64, 128; both transposes): float16, bfloat16,
 * float32, the packed weights read directly. */
cmx_status cmx__gpu_quantize(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_dequantize(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout);
cmx_status cmx__gpu_quantized_matmul(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout);
/* QuantizedMatmulSwiGLU (compile's qmm_swiglu pass; one row of x,
 * transposed weights): the matrix-vector kernel's sums of rows j and
 * j + N / 2, then silu-mul, bit for bit QuantizedMatmul then the
 * elementwise ops. */
cmx_status cmx__gpu_quantized_matmul_swiglu(const cmx_primitive* p,
                                            const cmx_array* in, int nin,
                                            const cmx_array* out, int nout);
/* AddRMSNormQuantizedMatmul (compile's norm_qmm pass): one launch whose
 * blocks each compute AddRMSNorm's row into shared memory, then the
 * one-row mat-vec (or SwiGLU mat-vec) on it, bit for bit the AddRMSNorm
 * and QuantizedMatmul(SwiGLU) kernels' results; where that kernel does not
 * apply (other shapes, forced paths), the two kernels. */
cmx_status cmx__gpu_add_rms_norm_qmm(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout);

#endif
