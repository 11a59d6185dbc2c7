/* CPU kernel entry points, named by the CPU kernel table (kernel_table.c).
 * One section per family; each kernel is defined in
 * src/backend/cpu/<family>.c. */
#ifndef CMX_BACKEND_CPU_KERNELS_H
#define CMX_BACKEND_CPU_KERNELS_H

#include "cmx/primitive.h"

#define CMX__KERNEL(name)                                               \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout)

/* ---- copy and conversion (copy.c) ---- */
CMX__KERNEL(cmx__cpu_astype);

/* ---- file reads (io.c) ---- */
CMX__KERNEL(cmx__cpu_load);

/* ---- creation (creation.c) ---- */
CMX__KERNEL(cmx__cpu_range); /* Arange, Linspace */
CMX__KERNEL(cmx__cpu_full);
CMX__KERNEL(cmx__cpu_eye_tri);   /* Eye, Tri */
CMX__KERNEL(cmx__cpu_tril_triu); /* Tril, Triu */

/* ---- unary (unary.c) ---- */
/* Every unary elementwise primitive without parameters. */
CMX__KERNEL(cmx__cpu_unary);
/* Round, with cmx__round_params (primitives/elementwise.h). */
CMX__KERNEL(cmx__cpu_round);

/* ---- binary (binary.c, binary_cmp.c) ---- */
/* Arithmetic: Add ... LogAddExp. */
CMX__KERNEL(cmx__cpu_binary);
/* Comparisons, logical, bitwise and shift primitives. */
CMX__KERNEL(cmx__cpu_compare);

/* ---- ternary (ternary.c) ---- */
CMX__KERNEL(cmx__cpu_select);

/* ---- reductions (reduce.c, reduce_arg.c, reduce_softmax.c) ---- */
CMX__KERNEL(cmx__cpu_reduce);
CMX__KERNEL(cmx__cpu_arg_reduce);
CMX__KERNEL(cmx__cpu_logsumexp);
CMX__KERNEL(cmx__cpu_softmax);
CMX__KERNEL(cmx__cpu_var);

/* ---- shape (shape.c; the pure views are in backend/views.h) ---- */
CMX__KERNEL(cmx__cpu_reshape);
CMX__KERNEL(cmx__cpu_contiguous);
CMX__KERNEL(cmx__cpu_view);
CMX__KERNEL(cmx__cpu_slice_update);
CMX__KERNEL(cmx__cpu_concatenate);
CMX__KERNEL(cmx__cpu_pad);

/* ---- indexing (indexing.c, scatter.c) ---- */
CMX__KERNEL(cmx__cpu_gather);
CMX__KERNEL(cmx__cpu_gather_axis);
CMX__KERNEL(cmx__cpu_scatter);
CMX__KERNEL(cmx__cpu_scatter_axis);
/* ---- sort and scan (sort.c, scan.c) ---- */
/* Sort, ArgSort, Partition, ArgPartition: in = {a}; SearchSorted: in =
 * {sorted_sequence (1-d), values} of one dtype; Scan: in = {a} of out's
 * dtype. */
CMX__KERNEL(cmx__cpu_sort);
CMX__KERNEL(cmx__cpu_argsort);
CMX__KERNEL(cmx__cpu_partition);
CMX__KERNEL(cmx__cpu_argpartition);
CMX__KERNEL(cmx__cpu_searchsorted);
CMX__KERNEL(cmx__cpu_scan);

/* ---- random numbers (random.c) ---- */
/* RandomBits: in = {keys (K..., 2) uint32}, cmx__random_bits_params. */
CMX__KERNEL(cmx__cpu_random_bits);
/* CovSqrt: in = {row-contiguous float32 (..., n, n)}. */
CMX__KERNEL(cmx__cpu_cov_sqrt);
/* ---- convolution (conv.c) ---- */
/* Convolution: in = {input, weight} of out's dtype, cmx__conv_params
 * (primitives/conv.h). */
CMX__KERNEL(cmx__cpu_conv);

/* ---- matrix products (matmul.c, matmul_gather.c) ---- */
/* Matmul: in = {a, b}; AddMM: in = {a, b, c} with c of out's shape. */
CMX__KERNEL(cmx__cpu_matmul);
CMX__KERNEL(cmx__cpu_addmm);
/* GatherMM, SegmentedMM: contracts in primitives/matmul_gather.h. */
CMX__KERNEL(cmx__cpu_gather_mm);
CMX__KERNEL(cmx__cpu_segmented_mm);

/* ---- factorizations (linalg.c) ----
 * Contracts in primitives/linalg.h. */
CMX__KERNEL(cmx__cpu_luf);
CMX__KERNEL(cmx__cpu_qrf);
CMX__KERNEL(cmx__cpu_svd);
CMX__KERNEL(cmx__cpu_inverse);
CMX__KERNEL(cmx__cpu_cholesky);
CMX__KERNEL(cmx__cpu_eigh);
CMX__KERNEL(cmx__cpu_eig);
CMX__KERNEL(cmx__cpu_solve);
CMX__KERNEL(cmx__cpu_solve_triangular);

/* ---- fourier transforms (fft.c) ----
 * Contract in primitives/fft.h. */
CMX__KERNEL(cmx__cpu_fft);

/* ---- hadamard transform (hadamard.c) ----
 * Contract in primitives/hadamard.h. */
CMX__KERNEL(cmx__cpu_hadamard);

/* ---- mx.fast (fast.c, fast_sdpa.c) ----
 * Contracts in primitives/fast.h. */
CMX__KERNEL(cmx__cpu_rms_norm);
CMX__KERNEL(cmx__cpu_add_rms_norm);
CMX__KERNEL(cmx__cpu_cross_entropy);
CMX__KERNEL(cmx__cpu_layer_norm);
CMX__KERNEL(cmx__cpu_rope);
CMX__KERNEL(cmx__cpu_rope_multi);
CMX__KERNEL(cmx__cpu_sdpa);

/* ---- quantization (quantized.c) ----
 * Contracts in primitives/quantized.h. */
CMX__KERNEL(cmx__cpu_quantize);
CMX__KERNEL(cmx__cpu_dequantize);
CMX__KERNEL(cmx__cpu_quantized_matmul);
CMX__KERNEL(cmx__cpu_quantized_matmul_swiglu);
CMX__KERNEL(cmx__cpu_add_rms_norm_qmm);

/* ---- compile's fused regions (compiled.c) ---- */
CMX__KERNEL(cmx__cpu_compiled);

/* ---- collectives (distributed.c) ----
 * Contract in primitives/distributed.h. */
CMX__KERNEL(cmx__cpu_all_reduce);
CMX__KERNEL(cmx__cpu_all_gather);
CMX__KERNEL(cmx__cpu_reduce_scatter);
CMX__KERNEL(cmx__cpu_send);
CMX__KERNEL(cmx__cpu_recv);

#endif
