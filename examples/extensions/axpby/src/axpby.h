/* axpby: z = alpha * x + beta * y as an operation of its own (the example
 * of MLX's extension guide, on cmx's public extension API).
 *
 * x and y broadcast against each other (NumPy rules) and promote to a
 * common dtype; integer and bool inputs are computed in float32. The
 * primitive, Axpby, has a threaded CPU kernel, a CUDA kernel, and vjp,
 * jvp and vmap rules, so grad, vmap and compile work through it. */
#ifndef AXPBY_H
#define AXPBY_H

#include <cmx/cmx.h>

/* Writes alpha * x + beta * y (lazy, a new reference) to *out, scheduled
 * on stream s (CMX_STREAM_DEFAULT: the default device's). Errors name
 * [axpby]: shapes that do not broadcast, a complex64 result on the gpu. */
cmx_status axpby(cmx_array* out, cmx_array x, cmx_array y, float alpha,
                 float beta, cmx_stream s);

/* The CUDA program of Axpby's GPU kernels (static text), for checking it
 * with NVRTC where there is no GPU (cmx_cuda_compile_check). */
const char* axpby_cuda_source(void);

#endif
