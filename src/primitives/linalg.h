/* The factorization primitives of mx.linalg (ops/linalg.c), shared by the
 * op layer, the vtables, every backend's kernels and the transform rules.
 * Each is one LAPACK-style routine over a batch: inputs are row-major
 * contiguous stacks (..., rows, cols) of one real dtype (float32 or
 * float64; SVD, Eigh and Eig take complex64 too), the batch being every
 * axis but the last two; outputs are row-major and keep that dtype unless
 * said otherwise. Structs are
 * compared and hashed as bytes, so ops zero them before filling.
 *
 * LUF (no parameters): in = {a (..., M, N)}; out = {lu (..., M, N): L
 *   strictly below the diagonal (unit diagonal implied) and U on and above,
 *   pivots (..., K) uint32 (0-based LAPACK swaps: row i swapped with row
 *   pivots[i] at step i), rows (..., M) uint32 (where each row of a went:
 *   a = (L U)[rows], i.e. a = L[rows] U as MLX's lu)}, K = min(M, N). A
 *   zero pivot is not an error.
 * QRF: in = {a (..., M, N)}; out = {q (..., M, K), r (..., K, N)}, the
 *   reduced factorization (Householder, so r's diagonal may be negative).
 * SVD (cmx__svd_params): in = {a (..., M, N)}; out = {s (..., K)} or, with
 *   uv, {u (..., M, M), s (..., K), vt (..., N, N)}; s descending. For
 *   complex64 a: a = u diag(s) vt with u, vt unitary complex64, s float32.
 * Inverse (cmx__inverse_params): in = {a (..., N, N)}; out = its inverse;
 *   tri: a is triangular (upper or lower, the other triangle not read) and
 *   so is the result. A singular matrix fails the evaluation.
 * Cholesky (cmx__uplo_params): in = {a (..., N, N) symmetric positive
 *   definite, only the upper/lower triangle read}; out = L (lower) or U
 *   (upper) with zeros in the other triangle. Not positive definite fails.
 * Eigh (cmx__eigh_params): in = {a (..., N, N) symmetric, only the
 *   upper/lower triangle read}; out = {w (..., N) ascending} or, with
 *   vectors, {w, v (..., N, N) orthonormal columns}. complex64 a is
 *   Hermitian (the diagonal's imaginary parts not read): w float32, v
 *   complex64 unitary, a v = v diag(w).
 * Eig (cmx__eig_params): in = {a (..., N, N)}; out = {w (..., N)} or, with
 *   vectors, {w, v (..., N, N) right eigenvectors as columns, unit norm};
 *   both complex64 whatever a's dtype; a v = v diag(w).
 * Solve: in = {a (..., N, N), b (..., N, K)} with one batch shape; out = x
 *   (..., N, K) with a x = b. A singular a fails the evaluation.
 * SolveTriangular (cmx__uplo_params): as Solve for triangular a (the other
 *   triangle not read); a zero on the diagonal fails the evaluation.
 */
#ifndef CMX_PRIMITIVES_LINALG_H
#define CMX_PRIMITIVES_LINALG_H

typedef struct cmx__svd_params {
  int uv;
} cmx__svd_params;

typedef struct cmx__inverse_params {
  int tri, upper;
} cmx__inverse_params;

typedef struct cmx__uplo_params {
  int upper;
} cmx__uplo_params;

typedef struct cmx__eigh_params {
  int upper, vectors;
} cmx__eigh_params;

typedef struct cmx__eig_params {
  int vectors;
} cmx__eig_params;

#endif
