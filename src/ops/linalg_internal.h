/* Internal, expression-style ops of mx.linalg (ops/linalg.c,
 * ops/linalg_compose.c), used by the public wrappers and by the transform
 * rules (transforms/rules_linalg.c). Arrays are scope-owned; NULL inputs
 * propagate; multi-output functions write scope-owned outputs and return
 * false with the error set on failure. */
#ifndef CMX_OPS_LINALG_INTERNAL_H
#define CMX_OPS_LINALG_INTERNAL_H

#include "cmx/linalg.h"
#include "ops/ops_internal.h"

/* The last two axes swapped. */
cmx_array cmx__mT(cmx_array a, cmx_stream s);
/* LUF's three outputs {lu, pivots, perm} of a float matrix stack. */
bool cmx__linalg_luf(cmx_array* outs, cmx_array a, const char* op,
                     cmx_stream s);
bool cmx__linalg_lu(cmx_array* outs, cmx_array a, cmx_stream s);
bool cmx__linalg_qr(cmx_array* outs, cmx_array a, cmx_stream s);
/* outs: {U, S, Vt} (uv) or {S}. */
bool cmx__linalg_svd(cmx_array* outs, cmx_array a, bool uv, cmx_stream s);
/* outs: {w, V} (vectors) or {w}. */
bool cmx__linalg_eigh(cmx_array* outs, cmx_array a, bool upper, bool vectors,
                      const char* op, cmx_stream s);
bool cmx__linalg_eig(cmx_array* outs, cmx_array a, bool vectors, const char* op,
                     cmx_stream s);
cmx_array cmx__linalg_inv(cmx_array a, cmx_stream s);
cmx_array cmx__linalg_tri_inv(cmx_array a, bool upper, cmx_stream s);
cmx_array cmx__linalg_cholesky(cmx_array a, bool upper, cmx_stream s);
cmx_array cmx__linalg_cholesky_inv(cmx_array l, bool upper, cmx_stream s);
cmx_array cmx__linalg_solve(cmx_array a, cmx_array b, cmx_stream s);
cmx_array cmx__linalg_solve_triangular(cmx_array a, cmx_array b, bool upper,
                                       cmx_stream s);
cmx_array cmx__linalg_pinv(cmx_array a, cmx_stream s);
cmx_array cmx__linalg_det(cmx_array a, cmx_stream s);
bool cmx__linalg_slogdet(cmx_array* outs, cmx_array a, cmx_stream s);
cmx_array cmx__linalg_cross(cmx_array a, cmx_array b, int axis, cmx_stream s);
/* ord NULL: None; ord_str "fro"/"nuc" (then ord is ignored). */
cmx_array cmx__linalg_norm(cmx_array a, const double* ord, const char* ord_str,
                           const int* axes, int naxes, bool keepdims,
                           cmx_stream s);

#endif
