/* cmx's own float32 product for the convolution's tiles on AVX-512 CPUs
 * (sgemm512.c).
 *
 * The convolution multiplies many small tiles (an L2-sized block of
 * unfolded rows by the whole weight). Through cblas_sgemm every tile call
 * repacks both operands, the weight included, so on LeNet-sized layers
 * OpenBLAS spends about a third of its time copying. This product reads
 * the tile in place (any row and column strides: broadcast loads need no
 * packing) and the other operand as a K x N matrix with unit-stride
 * columns, which the convolution lays out once per call.
 */
#ifndef CMX_BACKEND_CPU_SGEMM512_H
#define CMX_BACKEND_CPU_SGEMM512_H

#include <stdbool.h>
#include <stdint.h>

/* True when this CPU runs cmx__sgemm512 (AVX-512F, x86-64 builds with
 * GCC or clang); false elsewhere, where callers keep cblas_sgemm. The
 * environment variable CMX_CONV_BLAS=1 also makes it false (the OpenBLAS
 * path, for comparisons). Cached after the first call; thread-safe. */
bool cmx__sgemm512_available(void);

/* C = A B (accumulate: C += A B) in float32, for m x n C and inner size k:
 *   A(i, p) = a[i * sam + p * sak]   (any positive strides),
 *   B(p, j) = b[p * ldb + j]         (unit-stride columns),
 *   C(i, j) = c[i * ldc + j].
 * Each C element is summed over p in increasing order with one fused
 * multiply-add per term (starting from 0, or from C when accumulating),
 * whatever the sizes: results do not depend on how a caller tiles m or
 * n. Single-threaded; callers split work. Only call when
 * cmx__sgemm512_available() is true (otherwise it does nothing). */
void cmx__sgemm512(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam,
                   int64_t sak, const float* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate);

/* cmx__sgemm512 with A given by row pointers: A(i, p) = rows[i][roff + p]
 * (a convolution's rows read in place from its input, where rows of
 * different output lines are not evenly spaced). Same summation order and
 * conditions. */
void cmx__sgemm512_rows(int64_t m, int64_t n, int64_t k,
                        const float* const* rows, int64_t roff, const float* b,
                        int64_t ldb, float* c, int64_t ldc, bool accumulate);

#endif
