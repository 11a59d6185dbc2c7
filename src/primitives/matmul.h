/* Parameters of the matrix-product primitives, shared by the op layer, the
 * vtables and the kernels.
 *
 * Matmul (no parameters): inputs a, b of the output dtype. A >= 2-d input
 *   is a stack of matrices (..., M, K) / (..., K, N); a 1-d input is a
 *   single row (a) or column (b) whose dim is absent from the output. The
 *   batch dims of the inputs broadcast against the output's batch dims
 *   (right-aligned, size 1 or missing = reused), so the op adds no
 *   Broadcast nodes. Output: batch + (M if a >= 2-d) + (N if b >= 2-d).
 * AddMM: inputs a, b as for Matmul plus c of the output's shape (any
 *   strides); out = alpha * (a @ b) + beta * c, and beta == 0 ignores c
 *   (BLAS semantics: NaNs in c do not propagate).
 */
#ifndef CMX_PRIMITIVES_MATMUL_H
#define CMX_PRIMITIVES_MATMUL_H

typedef struct cmx__addmm_params {
  float alpha, beta;
} cmx__addmm_params;

#endif
