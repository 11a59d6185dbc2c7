/* cmx/linalg.h: linear algebra, as mlx.core.linalg.
 *
 *     cmx_array a, q, r, x;
 *     ...a (4, 4) float32 array...
 *     cmx_linalg_qr(&q, &r, a, CMX_STREAM_DEFAULT);     // q @ r == a
 *     cmx_linalg_solve(&x, a, b, CMX_STREAM_DEFAULT);   // a @ x == b
 *
 * Conventions (all functions):
 * - Matrices are the last two axes; leading axes are a batch (each matrix
 *   is factored on its own). Inputs must be float32 or float64 (svd, eigh
 *   and eigvalsh name complex64 in their messages as MLX does, but cmx
 *   factors real matrices only); other dtypes are a ValueError naming the
 *   op, as MLX's. Results keep the input's dtype (eig/eigvals: complex64).
 * - Unlike MLX, which runs most of these on the CPU stream only, cmx runs
 *   them on any stream; the signatures are MLX's.
 * - Failures found while computing (a singular matrix for inv/solve, a
 *   matrix that is not positive definite for cholesky, an SVD or
 *   eigensolver that does not converge) fail the evaluation with an error
 *   naming the op ("[inv] ... singular"), as NumPy raises LinAlgError.
 * - Gradients (vjp, jvp) exist for inv, tri_inv, solve, solve_triangular,
 *   cholesky, cholesky_inv, qr (rows >= columns), eigh/eigvalsh (symmetric
 *   convention: tangents and cotangents of the input are symmetrised),
 *   svd (values for any shape; vectors of square matrices) and lu/lu_factor
 *   (square matrices), and for the compositions (norm, pinv, det,
 *   slogdet, cholesky_inv, cross). Derivatives of eigenvectors and
 *   singular vectors are undefined where eigenvalues (singular values)
 *   repeat: they come out inf/NaN there, as in JAX and PyTorch. eig and
 *   eigvals have no gradient. Everything vmaps.
 * Every function returns CMX_OK and writes new references to its outputs,
 * or an error status with the message set and the outputs NULL.
 */
#ifndef CMX_LINALG_H
#define CMX_LINALG_H

#include <stdbool.h>

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Vector or matrix norm (numpy.linalg.norm's ords). ord NULL is None (2-norm
 * of the flattened array when axes is NULL, else 2 / 'fro'); axes NULL
 * means all axes (a must then be 1-d or 2-d when ord is given); naxes 1
 * gives vector norms (any real ord: inf, -inf, 0, p), 2 matrix norms (1,
 * -1, 2, -2, inf, -inf). Integer inputs give float32. */
cmx_status cmx_linalg_norm(cmx_array* out, cmx_array a, const double* ord,
                           const int* axes, int naxes, bool keepdims,
                           cmx_stream s);
/* Matrix norm by name: ord "fro" or "nuc" (2 axes). */
cmx_status cmx_linalg_norm_str(cmx_array* out, cmx_array a, const char* ord,
                               const int* axes, int naxes, bool keepdims,
                               cmx_stream s);
/* Reduced QR of (..., M, N): q (..., M, K), r (..., K, N), K = min(M, N). */
cmx_status cmx_linalg_qr(cmx_array* q, cmx_array* r, cmx_array a, cmx_stream s);
/* SVD of (..., M, N). compute_uv: outs = {U (..., M, M), S (..., K),
 * Vt (..., N, N)} (3 outputs); else outs = {S} (1 output). *nout gets the
 * count; outs must have room for 3. */
cmx_status cmx_linalg_svd(cmx_array* outs, int* nout, cmx_array a,
                          bool compute_uv, cmx_stream s);
/* Inverse of square matrices. */
cmx_status cmx_linalg_inv(cmx_array* out, cmx_array a, cmx_stream s);
/* Inverse of triangular matrices (only the upper or lower triangle read). */
cmx_status cmx_linalg_tri_inv(cmx_array* out, cmx_array a, bool upper,
                              cmx_stream s);
/* Cholesky factor of symmetric positive definite matrices (lower, or upper
 * when upper: a = L L^T = U^T U); only that triangle of a is read. */
cmx_status cmx_linalg_cholesky(cmx_array* out, cmx_array a, bool upper,
                               cmx_stream s);
/* Inverse of A = L L^T (U^T U when upper) from its Cholesky factor. */
cmx_status cmx_linalg_cholesky_inv(cmx_array* out, cmx_array l, bool upper,
                                   cmx_stream s);
/* Moore-Penrose pseudo-inverse (..., N, M) of (..., M, N), through the
 * SVD with singular values below max(M, N) * eps * s_max dropped. */
cmx_status cmx_linalg_pinv(cmx_array* out, cmx_array a, cmx_stream s);
/* Cross product of 3-vectors (a 2-vector counts with a zero third
 * component) along axis; a and b broadcast. */
cmx_status cmx_linalg_cross(cmx_array* out, cmx_array a, cmx_array b, int axis,
                            cmx_stream s);
/* Eigenvalues (complex64, (..., N)) and right eigenvectors (complex64,
 * columns of (..., N, N)) of general square matrices. */
cmx_status cmx_linalg_eig(cmx_array* w, cmx_array* v, cmx_array a,
                          cmx_stream s);
cmx_status cmx_linalg_eigvals(cmx_array* w, cmx_array a, cmx_stream s);
/* Eigenvalues (ascending) and orthonormal eigenvectors (columns) of
 * symmetric matrices; uplo "L" or "U" names the triangle read. */
cmx_status cmx_linalg_eigh(cmx_array* w, cmx_array* v, cmx_array a,
                           const char* uplo, cmx_stream s);
cmx_status cmx_linalg_eigvalsh(cmx_array* w, cmx_array a, const char* uplo,
                               cmx_stream s);
/* LU with partial pivoting of (..., M, N): p (..., M) uint32 row indices,
 * l (..., M, K) unit lower, u (..., K, N), with a = l[p] @ u for 2-d a
 * (take_along_axis(l, p[..., None], -2) @ u batched). */
cmx_status cmx_linalg_lu(cmx_array* p, cmx_array* l, cmx_array* u, cmx_array a,
                         cmx_stream s);
/* LAPACK's packed form: lu (..., M, N) holding L below the diagonal and U
 * on and above it, and pivots (..., K) uint32: row i was swapped with row
 * pivots[i] (0-based) at step i. */
cmx_status cmx_linalg_lu_factor(cmx_array* lu, cmx_array* pivots, cmx_array a,
                                cmx_stream s);
/* x with a @ x = b: a (..., N, N), b (..., N) or (..., N, K), batch axes
 * broadcast. */
cmx_status cmx_linalg_solve(cmx_array* out, cmx_array a, cmx_array b,
                            cmx_stream s);
/* x with a @ x = b for triangular a (only that triangle read). */
cmx_status cmx_linalg_solve_triangular(cmx_array* out, cmx_array a, cmx_array b,
                                       bool upper, cmx_stream s);
/* Determinant; sign and log of the absolute determinant (sign 0 and
 * log -inf for a singular matrix). Integer inputs give float32. */
cmx_status cmx_linalg_det(cmx_array* out, cmx_array a, cmx_stream s);
cmx_status cmx_linalg_slogdet(cmx_array* sign, cmx_array* logabsdet,
                              cmx_array a, cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
