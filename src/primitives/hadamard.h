/* The Hadamard primitive (ops/hadamard.c), shared by the op layer, the
 * vtable, the kernel and the transform rules.
 *
 * Hadamard: in = {a} of a floating dtype (out's); out = scale * T a along
 *   the last axis of length N = m * 2^k (m in 1, 12, 20, 28), where
 *   T = H_m (x) H_{2^k} acts on the last axis viewed as (m, 2^k) row-major:
 *   H_{2^k} is Sylvester's (natural order) and H_m the fixed matrices of
 *   cmx__hadamard_m. transpose applies H_m^T instead (the vjp of the
 *   non-symmetric m = 20, 28 matrices).
 */
#ifndef CMX_PRIMITIVES_HADAMARD_H
#define CMX_PRIMITIVES_HADAMARD_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cmx__hadamard_params {
  double scale; /* float32 math rounds it to float, as MLX's float scale */
  int transpose;
  int pad_;
} cmx__hadamard_params;

/* The m x m matrix of the Hadamard transform's odd factor (m = 12, 20 or
 * 28) as +1/-1 entries, row-major into h (m * m entries); false for other
 * m. The same matrices as MLX's, written from their constructions (see
 * primitives/hadamard.c). */
bool cmx__hadamard_m(int m, int8_t* h);
/* Splits n into m * 2^k with m in {1, 12, 20, 28}; false when impossible
 * (n < 1 or another odd factor). */
bool cmx__hadamard_split(int64_t n, int* m, int64_t* pow2);

#endif
