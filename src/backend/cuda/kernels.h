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

#endif
