/* Cache-friendly transposition of small blocks, the building block of
 * elementwise walks and copies whose operands are transposed.
 *
 *     // dst (rows x cols, row stride dst_ld) = transpose of src
 *     // (cols x rows, row stride src_ld), 4-byte elements
 *     cmx__transpose_block(dst, dst_ld, src, src_ld, rows, cols, 4);
 */
#ifndef CMX_BACKEND_CPU_TRANSPOSE_BLOCK_H
#define CMX_BACKEND_CPU_TRANSPOSE_BLOCK_H

#include <stdint.h>

/* Sets dst[i * dst_ld + j] = src[j * src_ld + i] for i < rows, j < cols;
 * strides are in elements of isz bytes (1, 2, 4 or 8) and the two blocks
 * must not overlap. 4- and 8-byte elements go through 8x8 / 4x4 vector
 * transposes (AVX2 where the CPU has it); the rest element by element. */
void cmx__transpose_block(char* dst, int64_t dst_ld, const char* src,
                          int64_t src_ld, int64_t rows, int64_t cols,
                          int64_t isz);

#endif
