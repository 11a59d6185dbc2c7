/* GPU kernel entry points (eval_gpu), referenced by the primitive vtables.
 * One section per family; each kernel is defined in
 * src/backend/cuda/<family>.c. On a machine with no GPU they are never
 * called (GPU streams cannot be created there). */
#ifndef CMX_BACKEND_CUDA_KERNELS_H
#define CMX_BACKEND_CUDA_KERNELS_H

#include "cmx/primitive.h"

/* ---- copy and conversion (copy.c) ---- */
/* Copy and AsType: same-dtype copies (any layout); other dtype pairs fail
 * with CMX_ERR_NOT_IMPLEMENTED for now. */
cmx_status cmx__gpu_copy(const cmx_primitive* p, const cmx_array* in, int nin,
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

#endif
