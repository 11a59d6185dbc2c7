/* GPU kernel entry points of the factorization primitives (linalg*.c,
 * through cuSOLVER and cuBLAS) and of FFT (fft.c, through cuFFT), kept
 * beside kernels.h. Same semantics, errors and NaN results as the CPU's
 * kernels (backend/cpu/linalg.c, fft.c); the libraries are loaded at first
 * use and a missing one fails the op with "[op] needs cuSOLVER (cuFFT),
 * which could not be loaded: ...". Errors of the factorizations (singular,
 * not positive definite, no convergence) are read back from the device,
 * which waits for the task's stream. */
#ifndef CMX_BACKEND_CUDA_KERNELS_LINALG_H
#define CMX_BACKEND_CUDA_KERNELS_LINALG_H

#include "cmx/primitive.h"

#define CMX__GPU_LINALG_KERNEL(name)                                    \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout)
CMX__GPU_LINALG_KERNEL(cmx__gpu_inverse);
CMX__GPU_LINALG_KERNEL(cmx__gpu_cholesky);
CMX__GPU_LINALG_KERNEL(cmx__gpu_luf);
CMX__GPU_LINALG_KERNEL(cmx__gpu_solve);
CMX__GPU_LINALG_KERNEL(cmx__gpu_solve_triangular);
CMX__GPU_LINALG_KERNEL(cmx__gpu_qrf);
CMX__GPU_LINALG_KERNEL(cmx__gpu_svd);
CMX__GPU_LINALG_KERNEL(cmx__gpu_eigh);
CMX__GPU_LINALG_KERNEL(cmx__gpu_eig);
CMX__GPU_LINALG_KERNEL(cmx__gpu_fft);
/* CovSqrt (primitives/random.h), the CPU's algorithm (linalg.c). */
CMX__GPU_LINALG_KERNEL(cmx__gpu_cov_sqrt);
#undef CMX__GPU_LINALG_KERNEL

#endif
