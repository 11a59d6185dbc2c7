/* The solves on the GPU (linalg.c says how): Inverse and Solve through
 * LU (cuBLAS's batched getrf/getri/getrs for batches of matrices up to
 * 128, else cuSOLVER's Xgetrf/Xgetrs per matrix), SolveTriangular and
 * TriInv through trsm, Cholesky through potrfBatched or Xpotrf. */
#include <math.h>
#include <string.h>

#include "backend/cuda/kernels_linalg.h"
#include "backend/cuda/linalg_job.h"
#include "primitives/linalg.h"

/* info[b] = 1 where n x n matrix b of p has a zero diagonal element. */
static cmx_status diag_zero(const cmx__la_job* j, CUdeviceptr p,
                            CUdeviceptr info) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = j->batch, nn = j->n;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, nn);
  CMX__GPU_ARG(&a, info);
  return cmx__la_launch(j, CMX__LA_K_DIAG_ZERO, &a, j->batch * j->n);
}

/* ---------------- LU-based: Inverse, Solve ---------------- */
typedef struct {
  CUdeviceptr a, b, pa, pb, piv, info, ws;
  size_t ws_bytes;
  int64_t nrhs;
  int trans;
  bool batched, inverse;
} lu_ctx;

/* Batched: getrf then getri (inverse, into b) or getrs (b in place).
 * Looped: Xgetrf then Xgetrs of b (the identity for an inverse). */
static cmx_status lu_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  lu_ctx* c = ctx;
  int n = (int)j->n, d = j->dbl, batch = (int)j->batch;
  if (c->batched) {
    int* info = CMX__PTR(c->info);
    CMX__BL_TRY(cmx__bl.getrfBatched[d](j->h.blas, n, CMX__PTR(c->pa), n,
                                        CMX__PTR(c->piv), info, batch),
                "getrfBatched");
    if (c->inverse) {
      CMX__BL_TRY(cmx__bl.getriBatched[d](j->h.blas, n, CMX__PTR(c->pa), n,
                                          CMX__PTR(c->piv), CMX__PTR(c->pb), n,
                                          info + batch, batch),
                  "getriBatched");
    } else {
      int hinfo = 0;
      CMX__BL_TRY(cmx__bl.getrsBatched[d](j->h.blas, c->trans, n, (int)c->nrhs,
                                          CMX__PTR(c->pa), n, CMX__PTR(c->piv),
                                          CMX__PTR(c->pb), n, &hinfo, batch),
                  "getrsBatched");
    }
    return CMX_OK;
  }
  int t = cmx__la_dtype(j);
  size_t mat = (size_t)(n * j->n * j->esz),
         rhs = (size_t)(n * c->nrhs * j->esz);
  for (int64_t b = 0; b < j->batch; b++) {
    int* info = (int*)CMX__PTR(c->info) + b;
    CMX__SV_TRY(cmx__sv.cusolverDnXgetrf(
                    j->h.dn, j->h.params, n, n, t, CMX__PTR(c->a + b * mat), n,
                    CMX__PTR(c->piv), t, CMX__PTR(c->ws), c->ws_bytes,
                    j->host_ws, j->host_bytes, info),
                "Xgetrf");
    CMX__SV_TRY(
        cmx__sv.cusolverDnXgetrs(j->h.dn, j->h.params, c->trans, n, c->nrhs, t,
                                 CMX__PTR(c->a + b * mat), n, CMX__PTR(c->piv),
                                 t, CMX__PTR(c->b + b * rhs), n,
                                 (int*)CMX__PTR(c->info) + j->batch),
        "Xgetrs");
  }
  return CMX_OK;
}

/* Factors the batch at a (a copy, overwritten) and solves into b (n x
 * nrhs column-major each; for an inverse, b is the output). */
static cmx_status lu_solve(cmx__la_job* j, CUdeviceptr a, CUdeviceptr b,
                           int64_t nrhs, int trans, bool inverse) {
  lu_ctx c = {.a = a, .b = b, .nrhs = nrhs, .trans = trans, .inverse = inverse};
  c.batched = j->batch > 1 && j->n <= 128;
  cmx_status st = cmx__la_words(j, 2 * j->batch + 1, &c.info);
  if (st != CMX_OK) return st;
  if (c.batched) {
    if ((st = cmx__la_pointers(j, a, j->n * j->n * j->esz, &c.pa)) != CMX_OK ||
        (st = cmx__la_pointers(j, b, j->n * nrhs * j->esz, &c.pb)) != CMX_OK ||
        (st = cmx__la_scratch(j, (size_t)(j->batch * j->n) * sizeof(int),
                              &c.piv)) != CMX_OK)
      return st;
  } else {
    size_t hb = 0;
    int t = cmx__la_dtype(j);
    if (inverse) st = cmx__la_mats(j, CMX__LA_K_EYE, b, j->n, j->n, 0);
    if (st == CMX_OK)
      st = cmx__la_scratch(j, (size_t)j->n * sizeof(int64_t), &c.piv);
    if (st != CMX_OK) return st;
    cmx__solver_lock(j->dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgetrf_bufferSize(
        j->h.dn, j->h.params, j->n, j->n, t, CMX__PTR(a), j->n, t, &c.ws_bytes,
        &hb);
    cmx__solver_unlock(j->dev);
    if (r) return cmx__cusolver_fail(j->op, "Xgetrf_bufferSize", r);
    if ((st = cmx__la_scratch(j, c.ws_bytes, &c.ws)) != CMX_OK ||
        (st = cmx__la_host_ws(j, hb)) != CMX_OK)
      return st;
  }
  if ((st = cmx__la_call(j, lu_run, &c)) != CMX_OK) return st;
  return cmx__la_check_info(j, c.info, 0, "Singular matrix.");
}

/* ---------------- triangular solves ---------------- */
typedef struct {
  CUdeviceptr a, b, pa, pb;
  int side, uplo, m, n, ldb;
} trsm_ctx;

static cmx_status trsm_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  trsm_ctx* c = ctx;
  double one = 1.0;
  float onef = 1.0f;
  const void* alpha = j->dbl ? (const void*)&one : (const void*)&onef;
  int d = j->dbl, lda = (int)j->n;
  if (j->batch > 1)
    CMX__BL_TRY(cmx__bl.trsmBatched[d](j->h.blas, c->side, c->uplo, CMX__OP_N,
                                       CMX__DIAG_NON_UNIT, c->m, c->n, alpha,
                                       CMX__PTR(c->pa), lda, CMX__PTR(c->pb),
                                       c->ldb, (int)j->batch),
                "trsmBatched");
  else
    CMX__BL_TRY(cmx__bl.trsm[d](j->h.blas, c->side, c->uplo, CMX__OP_N,
                                CMX__DIAG_NON_UNIT, c->m, c->n, alpha,
                                CMX__PTR(c->a), lda, CMX__PTR(c->b), c->ldb),
                "trsm");
  return CMX_OK;
}

/* x (in place in b: nrhs columns of n rows, row-major) = a^-1 x for the
 * triangular a (upper: its upper triangle), after checking a's diagonal. */
static cmx_status tri_solve(cmx__la_job* j, CUdeviceptr a, CUdeviceptr b,
                            int64_t nrhs, int upper) {
  CUdeviceptr info;
  cmx_status st = cmx__la_words(j, j->batch, &info);
  if (st == CMX_OK) st = diag_zero(j, a, info);
  /* X^T A^T = B^T: the row-major data are the column-major transposes */
  trsm_ctx c = {.a = a,
                .b = b,
                .side = CMX__SIDE_RIGHT,
                .uplo = upper ? CMX__FILL_LOWER : CMX__FILL_UPPER,
                .m = (int)nrhs,
                .n = (int)j->n,
                .ldb = (int)(nrhs > 0 ? nrhs : 1)};
  if (st == CMX_OK && j->batch > 1) {
    st = cmx__la_pointers(j, a, j->n * j->n * j->esz, &c.pa);
    if (st == CMX_OK) st = cmx__la_pointers(j, b, j->n * nrhs * j->esz, &c.pb);
  }
  if (st == CMX_OK) st = cmx__la_call(j, trsm_run, &c);
  if (st == CMX_OK) st = cmx__la_check_info(j, info, 0, "Singular matrix.");
  return st;
}

/* ---------------- Cholesky ---------------- */
typedef struct {
  CUdeviceptr a, pa, info, ws;
  size_t ws_bytes;
  int uplo;
} chol_ctx;

static cmx_status chol_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  chol_ctx* c = ctx;
  int n = (int)j->n;
  if (j->batch > 1) {
    CMX__SV_TRY(
        cmx__sv.potrfBatched[j->dbl](j->h.dn, c->uplo, n, CMX__PTR(c->pa), n,
                                     CMX__PTR(c->info), (int)j->batch),
        "potrfBatched");
    return CMX_OK;
  }
  int t = cmx__la_dtype(j);
  CMX__SV_TRY(cmx__sv.cusolverDnXpotrf(j->h.dn, j->h.params, c->uplo, n, t,
                                       CMX__PTR(c->a), n, t, CMX__PTR(c->ws),
                                       c->ws_bytes, j->host_ws, j->host_bytes,
                                       CMX__PTR(c->info)),
              "Xpotrf");
  return CMX_OK;
}

static cmx_status cholesky(cmx__la_job* j, CUdeviceptr a, int upper) {
  chol_ctx c = {.a = a, .uplo = upper ? CMX__FILL_LOWER : CMX__FILL_UPPER};
  cmx_status st = cmx__la_words(j, j->batch, &c.info);
  if (st == CMX_OK && j->batch > 1)
    st = cmx__la_pointers(j, a, j->n * j->n * j->esz, &c.pa);
  if (st == CMX_OK && j->batch == 1) {
    size_t hb = 0;
    int t = cmx__la_dtype(j);
    cmx__solver_lock(j->dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXpotrf_bufferSize(
        j->h.dn, j->h.params, c.uplo, j->n, t, CMX__PTR(a), j->n, t,
        &c.ws_bytes, &hb);
    cmx__solver_unlock(j->dev);
    if (r) return cmx__cusolver_fail(j->op, "Xpotrf_bufferSize", r);
    st = cmx__la_scratch(j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = cmx__la_host_ws(j, hb);
  }
  if (st == CMX_OK) st = cmx__la_call(j, chol_run, &c);
  if (st == CMX_OK)
    st = cmx__la_mats(j, CMX__LA_K_TRI_ZERO, a, j->n, j->n, !upper);
  if (st == CMX_OK)
    st = cmx__la_check_info(j, c.info, 0, "Matrix is not positive definite.");
  return st;
}

cmx_status cmx__gpu_inverse(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin;
  const cmx__inverse_params* q = cmx_primitive_params(p);
  cmx__la_job j;
  bool empty;
  const char* op = q->tri ? "linalg::tri_inv" : "linalg::inv";
  cmx_status st = cmx__la_begin(&j, p, op, in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  CUdeviceptr a = cmx__la_ptr(&j, in[0], &st), o = cmx__la_ptr(&j, out[0], &st),
              w = 0;
  size_t bytes = (size_t)(in[0]->size * j.esz);
  if (q->tri) {
    /* out = inv(A^T) I column-major = inv(A) row-major */
    if (st == CMX_OK) st = cmx__la_mats(&j, CMX__LA_K_EYE, o, j.n, j.n, 0);
    /* X^T A^T = I^T with A^T's triangle: the right-side solve of tri_solve
     * on the identity gives inv(A) row-major */
    if (st == CMX_OK) st = tri_solve(&j, a, o, j.n, q->upper);
    if (st == CMX_OK)
      st = cmx__la_mats(&j, CMX__LA_K_TRI_ZERO, o, j.n, j.n, !q->upper);
  } else {
    if (st == CMX_OK) st = cmx__la_scratch(&j, bytes, &w);
    if (st == CMX_OK) st = cmx__gpu_copy_d2d(op, w, a, bytes);
    if (st == CMX_OK) st = lu_solve(&j, w, o, j.n, CMX__OP_N, true);
  }
  return cmx__la_finish(&j, st, out, nout);
}

/* cmx__la_begin for a solve of in[1] (contiguous, in[0]'s dtype): *k
 * right-hand sides, 0 when there is nothing to solve. */
static cmx_status begin_rhs(cmx__la_job* j, const cmx_primitive* p,
                            const char* op, const cmx_array* in,
                            const cmx_array* out, int nout, int64_t* k) {
  bool empty;
  cmx_status st = cmx__la_begin(j, p, op, in[0], out, nout, &empty);
  if (st == CMX_OK &&
      (!cmx_kernel_is_contiguous(in[1]) || in[1]->dtype != in[0]->dtype))
    st = cmx_kernel_error(
        CMX_ERR_VALUE, "[%s] expects contiguous float32 or float64 input.", op);
  *k = st == CMX_OK && !empty ? in[1]->dims[in[1]->ndim - 1] : 0;
  return st;
}

cmx_status cmx__gpu_solve(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout) {
  (void)nin;
  cmx__la_job j;
  const char* op = "linalg::solve";
  int64_t k = 0;
  cmx_status st = begin_rhs(&j, p, op, in, out, nout, &k);
  if (st != CMX_OK || k == 0) return st;
  CUdeviceptr a = cmx__la_ptr(&j, in[0], &st), b = cmx__la_ptr(&j, in[1], &st),
              o = cmx__la_ptr(&j, out[0], &st), w = 0, x = o;
  size_t bytes = (size_t)(in[0]->size * j.esz),
         rhs = (size_t)(out[0]->size * j.esz);
  if (st == CMX_OK) st = cmx__la_scratch(&j, bytes, &w);
  if (st == CMX_OK) st = cmx__gpu_copy_d2d(op, w, a, bytes);
  /* b column-major (n x k): b itself when k == 1, else a transpose */
  if (st == CMX_OK && k == 1) st = cmx__gpu_copy_d2d(op, o, b, rhs);
  if (st == CMX_OK && k > 1) st = cmx__la_scratch(&j, rhs, &x);
  if (st == CMX_OK && k > 1)
    st = cmx__la_transpose(&j, b, x, j.batch, j.n, k, j.n * k);
  /* a^T is factored: a x = b is the transposed solve */
  if (st == CMX_OK) st = lu_solve(&j, w, x, k, CMX__OP_T, false);
  if (st == CMX_OK && k > 1)
    st = cmx__la_transpose(&j, x, o, j.batch, k, j.n, j.n * k);
  return cmx__la_finish(&j, st, out, nout);
}

cmx_status cmx__gpu_solve_triangular(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout) {
  (void)nin;
  int upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  cmx__la_job j;
  const char* op = "linalg::solve_triangular";
  int64_t k = 0;
  cmx_status st = begin_rhs(&j, p, op, in, out, nout, &k);
  if (st != CMX_OK || k == 0) return st;
  CUdeviceptr a = cmx__la_ptr(&j, in[0], &st), b = cmx__la_ptr(&j, in[1], &st),
              o = cmx__la_ptr(&j, out[0], &st);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(op, o, b, (size_t)(out[0]->size * j.esz));
  if (st == CMX_OK) st = tri_solve(&j, a, o, k, upper);
  return cmx__la_finish(&j, st, out, nout);
}

cmx_status cmx__gpu_cholesky(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin;
  int upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  cmx__la_job j;
  bool empty;
  cmx_status st =
      cmx__la_begin(&j, p, "linalg::cholesky", in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  CUdeviceptr a = cmx__la_ptr(&j, in[0], &st), o = cmx__la_ptr(&j, out[0], &st);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(j.op, o, a, (size_t)(in[0]->size * j.esz));
  if (st == CMX_OK) st = cholesky(&j, o, upper);
  return cmx__la_finish(&j, st, out, nout);
}
