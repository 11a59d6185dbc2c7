/* Parameters of the linear-algebra extras (ops/matmul_gather.c), shared by
 * the op layer, the vtables, the kernels and the transform rules. Structs
 * are compared and hashed as bytes, so ops zero them before filling.
 *
 * Diagonal (a view): in = {a}; out = a without axes axis1, axis2, plus the
 *   diagonal a[..., i + off1, ..., i + off2, ...] as the last axis, where
 *   off1 = max(-offset, 0), off2 = max(offset, 0). axis1 != axis2 are
 *   normalised. Its strides are a's, so it never copies.
 * Hadamard: in = {a} of a floating dtype (out's); out = scale * T a along
 *   the last axis of length N = m * 2^k (m in 1, 12, 20, 28), where
 *   T = H_m (x) H_{2^k} acts on the last axis viewed as (m, 2^k) row-major:
 *   H_{2^k} is Sylvester's (natural order) and H_m the fixed matrices of
 *   cmx__hadamard_m. transpose applies H_m^T instead (the vjp of the
 *   non-symmetric m = 20, 28 matrices).
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

#include <stdbool.h>
#include <stdint.h>

typedef struct cmx__diagonal_params {
  int64_t offset;
  int axis1, axis2;
} cmx__diagonal_params;

typedef struct cmx__hadamard_params {
  double scale; /* float32 math rounds it to float, as MLX's float scale */
  int transpose;
  int pad_;
} cmx__hadamard_params;

typedef struct cmx__gather_mm_params {
  int left_sorted, right_sorted;
} cmx__gather_mm_params;

/* The m x m matrix of the Hadamard transform's odd factor (m = 12, 20 or
 * 28) as +1/-1 entries, row-major into h (m * m entries); false for other
 * m. The same matrices as MLX's, written from their constructions (see
 * backend/cpu/matmul_gather.c). */
bool cmx__hadamard_m(int m, int8_t* h);
/* Splits n into m * 2^k with m in {1, 12, 20, 28}; false when impossible
 * (n < 1 or another odd factor). */
bool cmx__hadamard_split(int64_t n, int* m, int64_t* pow2);

#endif
