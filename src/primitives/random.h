/* The random family's primitives, shared by the op layer and the kernels.
 *
 * RandomBits (cmx__random_bits_params): input keys of shape (K..., 2),
 *   uint32 (K... empty for the ops; batches of keys come from vmap). The
 *   output has shape (K..., M...) and dtype uint8/uint16/uint32 for width
 *   1/2/4. The elements of each key's block are the little-endian bytes of
 *   the counter-mode threefry2x32 words of that key, laid out exactly as
 *   JAX's threefry_random_bits and MLX's RandomBits lay them out: for a
 *   block of B bytes, n = ceil(B / 4) words and h = ceil(n / 2); the
 *   counter pairs (i, h + i) for i < floor(n / 2) give word i (first
 *   output) and word h + i (second output); when n is odd, word h - 1 is
 *   the first output of the pair (h - 1, 0); a partial last word keeps its
 *   low bytes.
 * CovSqrt (no parameters): for each matrix of a float32 stack (..., n, n)
 *   the square root U diag(sqrt(s)) V^T of its SVD U diag(s) V^T, computed
 *   in double (one-sided Jacobi) and rounded to float32. For a symmetric
 *   positive semi-definite covariance this is its unique PSD square root,
 *   the factor MLX's multivariate_normal builds from linalg::svd.
 */
#ifndef CMX_PRIMITIVES_RANDOM_H
#define CMX_PRIMITIVES_RANDOM_H

#include <stdint.h>

#include "cmx/array.h" /* CMX_MAX_NDIM */

typedef struct cmx__random_bits_params {
  int32_t width; /* bytes per element: 1, 2 or 4 */
  int32_t ndim;  /* the block shape M... of each key */
  int64_t shape[CMX_MAX_NDIM];
} cmx__random_bits_params;

/* threefry2x32 with 20 rounds (Salmon et al., Random123): hashes the
 * counter pair (*x0, *x1) under key (k0, k1) in place. */
static inline void cmx__threefry2x32(uint32_t k0, uint32_t k1, uint32_t* x0,
                                     uint32_t* x1) {
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  static const int rot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  uint32_t a = *x0 + ks[0], b = *x1 + ks[1];
  for (int g = 0; g < 5; g++) {
    for (int r = 0; r < 4; r++) {
      int n = rot[g & 1][r];
      a += b;
      b = (b << n) | (b >> (32 - n));
      b ^= a;
    }
    a += ks[(g + 1) % 3];
    b += ks[(g + 2) % 3] + (uint32_t)g + 1u;
  }
  *x0 = a;
  *x1 = b;
}

#endif
