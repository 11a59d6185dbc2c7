/* A direct kernel for tiny matrix products, where a BLAS call's fixed
 * cost (argument checks, packing, dispatch: about a microsecond) is
 * larger than the arithmetic. Batches of 8x8 products are its case.
 *
 *     // C (M x N, row stride ldc) = alpha * A @ B + beta * C
 *     if (!cmx__small_gemm(CMX_FLOAT32, M, N, K, 1.0, A, false, lda,
 *                          B, false, ldb, C, ldc, 0.0))
 *       ... use BLAS ...
 */
#ifndef CMX_BACKEND_CPU_MATMUL_SMALL_H
#define CMX_BACKEND_CPU_MATMUL_SMALL_H

#include <stdbool.h>

#include "cmx/dtype.h"

/* The largest M, N and K the kernel takes. */
#define CMX__SMALL_GEMM_MAX 32

/* C = alpha * op(A) @ op(B) + beta * C for float32 or float64 (ct), with
 * A stored as M x K rows of stride lda (or, when at, as K x M: A's
 * transpose), B as K x N rows of stride ldb (or N x K when bt), C row-major
 * M x N with row stride ldc. beta == 0 ignores C's prior contents (NaN
 * included). Returns false, touching nothing, for other dtypes or when a
 * dimension exceeds CMX__SMALL_GEMM_MAX or is below 1. */
bool cmx__small_gemm(cmx_dtype ct, int M, int N, int K, double alpha,
                     const void* A, bool at, int lda, const void* B, bool bt,
                     int ldb, void* C, int ldc, double beta);

#endif
