/* Parameters of the gathered matrix products (ops/matmul_gather.c), shared
 * by the op layer, the vtables, the kernels and the transform rules.
 * Structs are compared and hashed as bytes, so ops zero them before
 * filling.
 *
 * GatherMM: in = {a (A..., M, K), b (B..., K, N), lhs (I), rhs (I)} with
 *   a, b of out's dtype and uint32 indices of one shape I; out (I..., M, N)
 *   with out[i] = a[lhs[i]] @ b[rhs[i]], the indices flat over the batch
 *   dims A and B (row-major). An index past the batch fails at evaluation.
 *   The sorted flags are MLX's hints; they do not change the result.
 * SegmentedMM: in = {a (M, K), b (K, N), segments (S..., 2) uint32}; out
 *   (S..., M, N) with out[s] = a[:, k0:k1] @ b[k0:k1, :] for (k0, k1) =
 *   segments[s]; k1 <= k0 is an empty segment (zeros); k0 or k1 past K
 *   fails at evaluation.
 */
#ifndef CMX_PRIMITIVES_MATMUL_GATHER_H
#define CMX_PRIMITIVES_MATMUL_GATHER_H

typedef struct cmx__gather_mm_params {
  int left_sorted, right_sorted;
} cmx__gather_mm_params;

#endif
