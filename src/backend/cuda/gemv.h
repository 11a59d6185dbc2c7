/* Matrix-vector products by cmx's own kernels (gemv.c, kernels/gemv.cu),
 * used by matmul.c for products with one output row or column. */
#ifndef CMX_BACKEND_CUDA_GEMV_H
#define CMX_BACKEND_CUDA_GEMV_H

#include "backend/cuda/gpu.h"

/* y[r] = sum_k A[r * so + k * sk] * x[k * incx] for r < R, k < K
 * (element strides; y contiguous, every pointer on device dev). */
typedef struct cmx__gpu_gemv_desc {
  cmx_dtype dt;
  CUdeviceptr a, x, y;
  int64_t R, K, so, sk, incx;
} cmx__gpu_gemv_desc;

/* Encodes the product of g when cmx's kernels take it (float32, float16,
 * bfloat16 with A read along k; float16, bfloat16 with A read along r;
 * strides >= 0, R > 1;
 * CMX_CUDA_GEMV=0 turns the path off) and sets *done; else returns CMX_OK
 * with *done false (the caller uses cuBLASLt). Errors name op. */
cmx_status cmx__gpu_gemv(const char* op, int dev, const cmx__gpu_gemv_desc* g,
                         bool* done);

#endif
