/* GPU kernels of the factorization primitives (primitives/linalg.h)
 * through cuSOLVER and cuBLAS (cusolver.c), with the CPU kernels'
 * semantics (backend/cpu/linalg.c): the same errors ("Singular matrix.",
 * "Matrix is not positive definite.", "... did not converge."), NaN
 * results for non-finite input to SVD and the eigensolvers.
 *
 * Layouts: cmx's matrices are row-major, the libraries' column-major; a
 * row-major matrix read in place is its transpose. Inverse works in place
 * on that view (inv(A^T) = inv(A)^T), Cholesky and Eigh swap the triangle
 * (a row-major lower triangle is the column-major upper one), the
 * triangular solves use a right-side solve X^T A^T = B^T, and SVD of A^T
 * gives Vt directly and U through one transpose; QR, LU, Eig and Solve
 * with several right-hand sides go through transposing copies
 * (kernels/linalg.cu).
 *
 * Routines: batches of small matrices take the batched routines (cuBLAS
 * getrf/getri/getrs/trsm, cuSOLVER potrfBatched); single or large
 * matrices a loop of the 64-bit API (Xgetrf, Xgetrs, Xpotrf, Xsyevd,
 * Xgeqrf + orgqr, gesvdj, Xgeev). Eigh and SVD of matrices up to 32x32
 * always take syevjBatched / gesvdjBatched, a single matrix too, so that
 * a matrix gets the same eigenvectors (signs) alone and in a batch (vmap
 * equals the loop). Every library call goes through the encoder as a CALL
 * command, under the device's solver lock (a handle binds one stream at a
 * time).
 *
 * Errors: the routines report per matrix in device info words; reading
 * them back synchronises the task's stream (a CALL that copies them to
 * the host and waits), so the factorizations that can fail (all but LUF
 * and QRF) wait for their result before they return.
 */
#include "primitives/linalg.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kernels_linalg.h"
#include "backend/cuda/solver.h"

static const char* const k_kernels[] = {"cmx_la_transpose",
                                        "cmx_la_ptrs",
                                        "cmx_la_tri_zero",
                                        "cmx_la_eye",
                                        "cmx_la_nonfinite",
                                        "cmx_la_fill_where",
                                        "cmx_la_diag_zero",
                                        "cmx_la_luf_piv",
                                        "cmx_la_qr_r",
                                        "cmx_la_eig_pack",
                                        "cmx_la_cov_sqrt",
                                        NULL};
enum {
  K_TRANSPOSE,
  K_PTRS,
  K_TRI_ZERO,
  K_EYE,
  K_NONFINITE,
  K_FILL_WHERE,
  K_DIAG_ZERO,
  K_LUF_PIV,
  K_QR_R,
  K_EIG_PACK,
  K_COV_SQRT
};

static bool la_variant(int v, cmx__gpu_variant* out) {
  snprintf(out->name, sizeof out->name, "linalg_%s", v ? "float64" : "float32");
  snprintf(out->prelude, sizeof out->prelude, "#define T %s\n",
           v ? "double" : "float");
  out->flags = 0;
  return true;
}

const cmx__gpu_family cmx__gpu_family_linalg = {
    .name = "linalg",
    .file = "linalg",
    .kernels = k_kernels,
    .nvariants = 2,
    .variant = la_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 8}};

/* ---------------- one evaluation ---------------- */
#define MAX_TMP 16
typedef struct job {
  const char* op;
  int dev, dbl;
  int64_t esz, m, n, batch;
  cmx__solver_handles h;
  cmx__buffer* tmp[MAX_TMP];
  int ntmp;
  void* host_ws; /* a host workspace (freed after the final wait) */
  size_t host_bytes;
} job;

static int dtype_of(const job* j) {
  return j->dbl ? CMX__R_64F : CMX__R_32F;
}

/* A device scratch buffer of bytes, released when the job ends
 * (stream-ordered). */
static cmx_status scratch(job* j, size_t bytes, CUdeviceptr* out) {
  *out = 0;
  if (j->ntmp == MAX_TMP)
    return cmx__error(CMX_ERR_RUNTIME, "[%s] too many scratch buffers", j->op);
  cmx__buffer* b = cmx__device_hooks->alloc_device(bytes ? bytes : 16, j->dev);
  if (!b) return cmx_last_status();
  j->tmp[j->ntmp++] = b;
  *out = b->dev;
  return CMX_OK;
}

/* Zeroed int words (info, flags). */
static cmx_status words(job* j, int64_t n, CUdeviceptr* out) {
  cmx_status st = scratch(j, (size_t)n * sizeof(int), out);
  if (st == CMX_OK) st = cmx__gpu_memset(j->op, *out, 0, 4, (size_t)n);
  return st;
}

static void job_end(job* j) {
  for (int i = 0; i < j->ntmp; i++) cmx__buffer_release(j->tmp[i]);
  j->ntmp = 0;
  free(j->host_ws);
  j->host_ws = NULL;
}

static cmx_status launch(const job* j, int kernel, const cmx__gpu_args* a,
                         int64_t work) {
  if (work <= 0) return CMX_OK;
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(j->dev, &cmx__gpu_family_linalg, j->dbl, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch(j->op, k, &cfg, a);
}

/* d[b] = s[b]^T for r x c matrices s[b] at b * sstep elements. */
static cmx_status transpose(const job* j, CUdeviceptr s, CUdeviceptr d,
                            int64_t batch, int64_t r, int64_t c,
                            int64_t sstep) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = batch, rr = r, cc = c, ss = sstep;
  CMX__GPU_ARG(&a, s);
  CMX__GPU_ARG(&a, d);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, rr);
  CMX__GPU_ARG(&a, cc);
  CMX__GPU_ARG(&a, ss);
  return launch(j, K_TRANSPOSE, &a, batch * r * c);
}

/* A device array of the batch's matrix pointers: base + i * step bytes. */
static cmx_status pointers(job* j, CUdeviceptr base, int64_t step,
                           CUdeviceptr* out) {
  cmx_status st = scratch(j, (size_t)j->batch * 8, out);
  if (st != CMX_OK) return st;
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long s = step, n = j->batch;
  CMX__GPU_ARG(&a, *out);
  CMX__GPU_ARG(&a, base);
  CMX__GPU_ARG(&a, s);
  CMX__GPU_ARG(&a, n);
  return launch(j, K_PTRS, &a, n);
}

/* (batch, r, c) kernels: tri_zero (flag: zero the upper triangle), eye. */
static cmx_status mats(const job* j, int kernel, CUdeviceptr p, int64_t r,
                       int64_t c, int flag) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = j->batch, rr = r, cc = c;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, rr);
  if (kernel == K_EYE) CMX__GPU_ARG(&a, cc);
  if (kernel == K_TRI_ZERO) CMX__GPU_ARG(&a, flag);
  return launch(j, kernel, &a, j->batch * r * c);
}

/* flags[b] = 1 where matrix b (per elements) of p is not finite. */
static cmx_status nonfinite(const job* j, CUdeviceptr p, int64_t per,
                            CUdeviceptr flags) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long pp = per, total = per * j->batch;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, pp);
  CMX__GPU_ARG(&a, total);
  CMX__GPU_ARG(&a, flags);
  return launch(j, K_NONFINITE, &a, total);
}

/* Matrix b (per elements) of p = v where flags[b]. */
static cmx_status fill_where(const job* j, CUdeviceptr p, int64_t per,
                             CUdeviceptr flags, double v) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long pp = per, total = per * j->batch;
  float vf = (float)v;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, pp);
  CMX__GPU_ARG(&a, total);
  CMX__GPU_ARG(&a, flags);
  if (j->dbl)
    CMX__GPU_ARG(&a, v);
  else
    CMX__GPU_ARG(&a, vf);
  return launch(j, K_FILL_WHERE, &a, total);
}

/* info[b] = 1 where n x n matrix b of p has a zero diagonal element. */
static cmx_status diag_zero(const job* j, CUdeviceptr p, CUdeviceptr info) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = j->batch, nn = j->n;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, nn);
  CMX__GPU_ARG(&a, info);
  return launch(j, K_DIAG_ZERO, &a, j->batch * j->n);
}

/* ---------------- library calls ---------------- */
typedef cmx_status (*lib_fn)(job* j, void* ctx, CUstream s);
typedef struct {
  job* j;
  lib_fn fn;
  void* ctx;
} lib_call;

static cmx_status lib_run(void* ctx, CUstream s) {
  lib_call* c = ctx;
  job* j = c->j;
  cmx__solver_lock(j->dev);
  cmx_status st = CMX_OK;
  cusolverStatus_t r = cmx__sv.cusolverDnSetStream(j->h.dn, s);
  if (r) st = cmx__cusolver_fail(j->op, "cusolverDnSetStream", r);
  cublasStatus_t b =
      st == CMX_OK ? cmx__bl.cublasSetStream_v2(j->h.blas, s) : 0;
  if (b) st = cmx__cublas_fail(j->op, "cublasSetStream", b);
  if (st == CMX_OK) st = c->fn(j, c->ctx, s);
  cmx__solver_unlock(j->dev);
  return st;
}

static cmx_status call(job* j, lib_fn fn, void* ctx) {
  lib_call c = {j, fn, ctx};
  return cmx__gpu_call(j->op, lib_run, &c);
}

typedef struct {
  CUdeviceptr src;
  size_t bytes;
  int* host;
} read_ctx;

/* Copies the info words to the host and waits for them: this
 * synchronises the task's stream. */
static cmx_status read_run(void* ctx, CUstream s) {
  read_ctx* c = ctx;
  CUresult r = cmx__cu.cuMemcpyDtoHAsync(c->host, c->src, c->bytes, s);
  if (r == CUDA_SUCCESS) r = cmx__cu.cuStreamSynchronize(s);
  return r == CUDA_SUCCESS ? CMX_OK
                           : cmx__cu_error(r, cmx__gpu_current_op(),
                                           "reading back solver info");
}

/* Fails with "[op] <msg>" when some info word of the batch is > 0 for a
 * matrix whose flag (if flags) is 0. Waits for the stream. */
static cmx_status check_info(job* j, CUdeviceptr info, CUdeviceptr flags,
                             const char* msg) {
  int64_t n = j->batch * (flags ? 2 : 1);
  int* h = malloc((size_t)n * sizeof(int));
  if (!h) return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory.", j->op);
  cmx_status st = CMX_OK;
  read_ctx c = {info, (size_t)j->batch * sizeof(int), h};
  st = cmx__gpu_call(j->op, read_run, &c);
  if (st == CMX_OK && flags) {
    read_ctx f = {flags, (size_t)j->batch * sizeof(int), h + j->batch};
    st = cmx__gpu_call(j->op, read_run, &f);
  }
  for (int64_t b = 0; st == CMX_OK && b < j->batch; b++)
    if (h[b] > 0 && !(flags && h[j->batch + b]))
      st = cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] %s", j->op, msg);
  free(h);
  return st;
}

static cmx_status host_ws(job* j, size_t bytes) {
  if (bytes <= j->host_bytes) return CMX_OK;
  void* p = realloc(j->host_ws, bytes);
  if (!p) return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory.", j->op);
  j->host_ws = p;
  j->host_bytes = bytes;
  return CMX_OK;
}

#define SV_TRY(call, what)                              \
  do {                                                  \
    cusolverStatus_t r_ = (call);                       \
    if (r_) return cmx__cusolver_fail(j->op, what, r_); \
  } while (0)
#define BL_TRY(call, what)                            \
  do {                                                \
    cublasStatus_t r_ = (call);                       \
    if (r_) return cmx__cublas_fail(j->op, what, r_); \
  } while (0)
#define PTR(x) ((void*)(uintptr_t)(x))

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
static cmx_status lu_run(job* j, void* ctx, CUstream s) {
  (void)s;
  lu_ctx* c = ctx;
  int n = (int)j->n, d = j->dbl, batch = (int)j->batch;
  if (c->batched) {
    int* info = PTR(c->info);
    BL_TRY(cmx__bl.getrfBatched[d](j->h.blas, n, PTR(c->pa), n, PTR(c->piv),
                                   info, batch),
           "getrfBatched");
    if (c->inverse) {
      BL_TRY(cmx__bl.getriBatched[d](j->h.blas, n, PTR(c->pa), n, PTR(c->piv),
                                     PTR(c->pb), n, info + batch, batch),
             "getriBatched");
    } else {
      int hinfo = 0;
      BL_TRY(cmx__bl.getrsBatched[d](j->h.blas, c->trans, n, (int)c->nrhs,
                                     PTR(c->pa), n, PTR(c->piv), PTR(c->pb), n,
                                     &hinfo, batch),
             "getrsBatched");
    }
    return CMX_OK;
  }
  int t = dtype_of(j);
  size_t mat = (size_t)(n * j->n * j->esz),
         rhs = (size_t)(n * c->nrhs * j->esz);
  for (int64_t b = 0; b < j->batch; b++) {
    int* info = (int*)PTR(c->info) + b;
    SV_TRY(cmx__sv.cusolverDnXgetrf(j->h.dn, j->h.params, n, n, t,
                                    PTR(c->a + b * mat), n, PTR(c->piv), t,
                                    PTR(c->ws), c->ws_bytes, j->host_ws,
                                    j->host_bytes, info),
           "Xgetrf");
    SV_TRY(cmx__sv.cusolverDnXgetrs(j->h.dn, j->h.params, c->trans, n, c->nrhs,
                                    t, PTR(c->a + b * mat), n, PTR(c->piv), t,
                                    PTR(c->b + b * rhs), n,
                                    (int*)PTR(c->info) + j->batch),
           "Xgetrs");
  }
  return CMX_OK;
}

/* Factors the batch at a (a copy, overwritten) and solves into b (n x
 * nrhs column-major each; for an inverse, b is the output). */
static cmx_status lu_solve(job* j, CUdeviceptr a, CUdeviceptr b, int64_t nrhs,
                           int trans, bool inverse) {
  lu_ctx c = {.a = a, .b = b, .nrhs = nrhs, .trans = trans, .inverse = inverse};
  c.batched = j->batch > 1 && j->n <= 128;
  cmx_status st = words(j, 2 * j->batch + 1, &c.info);
  if (st != CMX_OK) return st;
  if (c.batched) {
    if ((st = pointers(j, a, j->n * j->n * j->esz, &c.pa)) != CMX_OK ||
        (st = pointers(j, b, j->n * nrhs * j->esz, &c.pb)) != CMX_OK ||
        (st = scratch(j, (size_t)(j->batch * j->n) * sizeof(int), &c.piv)) !=
            CMX_OK)
      return st;
  } else {
    size_t hb = 0;
    int t = dtype_of(j);
    if (inverse) st = mats(j, K_EYE, b, j->n, j->n, 0);
    if (st == CMX_OK) st = scratch(j, (size_t)j->n * sizeof(int64_t), &c.piv);
    if (st != CMX_OK) return st;
    cmx__solver_lock(j->dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgetrf_bufferSize(
        j->h.dn, j->h.params, j->n, j->n, t, PTR(a), j->n, t, &c.ws_bytes, &hb);
    cmx__solver_unlock(j->dev);
    if (r) return cmx__cusolver_fail(j->op, "Xgetrf_bufferSize", r);
    if ((st = scratch(j, c.ws_bytes, &c.ws)) != CMX_OK ||
        (st = host_ws(j, hb)) != CMX_OK)
      return st;
  }
  if ((st = call(j, lu_run, &c)) != CMX_OK) return st;
  return check_info(j, c.info, 0, "Singular matrix.");
}

/* ---------------- triangular solves ---------------- */
typedef struct {
  CUdeviceptr a, b, pa, pb;
  int side, uplo, m, n, ldb;
} trsm_ctx;

static cmx_status trsm_run(job* j, void* ctx, CUstream s) {
  (void)s;
  trsm_ctx* c = ctx;
  double one = 1.0;
  float onef = 1.0f;
  const void* alpha = j->dbl ? (const void*)&one : (const void*)&onef;
  int d = j->dbl, lda = (int)j->n;
  if (j->batch > 1)
    BL_TRY(cmx__bl.trsmBatched[d](
               j->h.blas, c->side, c->uplo, CMX__OP_N, CMX__DIAG_NON_UNIT, c->m,
               c->n, alpha, PTR(c->pa), lda, PTR(c->pb), c->ldb, (int)j->batch),
           "trsmBatched");
  else
    BL_TRY(cmx__bl.trsm[d](j->h.blas, c->side, c->uplo, CMX__OP_N,
                           CMX__DIAG_NON_UNIT, c->m, c->n, alpha, PTR(c->a),
                           lda, PTR(c->b), c->ldb),
           "trsm");
  return CMX_OK;
}

/* x (in place in b: nrhs columns of n rows, row-major) = a^-1 x for the
 * triangular a (upper: its upper triangle), after checking a's diagonal. */
static cmx_status tri_solve(job* j, CUdeviceptr a, CUdeviceptr b, int64_t nrhs,
                            int upper) {
  CUdeviceptr info;
  cmx_status st = words(j, j->batch, &info);
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
    st = pointers(j, a, j->n * j->n * j->esz, &c.pa);
    if (st == CMX_OK) st = pointers(j, b, j->n * nrhs * j->esz, &c.pb);
  }
  if (st == CMX_OK) st = call(j, trsm_run, &c);
  if (st == CMX_OK) st = check_info(j, info, 0, "Singular matrix.");
  return st;
}

/* ---------------- Cholesky ---------------- */
typedef struct {
  CUdeviceptr a, pa, info, ws;
  size_t ws_bytes;
  int uplo;
} chol_ctx;

static cmx_status chol_run(job* j, void* ctx, CUstream s) {
  (void)s;
  chol_ctx* c = ctx;
  int n = (int)j->n;
  if (j->batch > 1) {
    SV_TRY(cmx__sv.potrfBatched[j->dbl](j->h.dn, c->uplo, n, PTR(c->pa), n,
                                        PTR(c->info), (int)j->batch),
           "potrfBatched");
    return CMX_OK;
  }
  int t = dtype_of(j);
  SV_TRY(cmx__sv.cusolverDnXpotrf(j->h.dn, j->h.params, c->uplo, n, t,
                                  PTR(c->a), n, t, PTR(c->ws), c->ws_bytes,
                                  j->host_ws, j->host_bytes, PTR(c->info)),
         "Xpotrf");
  return CMX_OK;
}

static cmx_status cholesky(job* j, CUdeviceptr a, int upper) {
  chol_ctx c = {.a = a, .uplo = upper ? CMX__FILL_LOWER : CMX__FILL_UPPER};
  cmx_status st = words(j, j->batch, &c.info);
  if (st == CMX_OK && j->batch > 1)
    st = pointers(j, a, j->n * j->n * j->esz, &c.pa);
  if (st == CMX_OK && j->batch == 1) {
    size_t hb = 0;
    int t = dtype_of(j);
    cmx__solver_lock(j->dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXpotrf_bufferSize(
        j->h.dn, j->h.params, c.uplo, j->n, t, PTR(a), j->n, t, &c.ws_bytes,
        &hb);
    cmx__solver_unlock(j->dev);
    if (r) return cmx__cusolver_fail(j->op, "Xpotrf_bufferSize", r);
    st = scratch(j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = host_ws(j, hb);
  }
  if (st == CMX_OK) st = call(j, chol_run, &c);
  if (st == CMX_OK) st = mats(j, K_TRI_ZERO, a, j->n, j->n, !upper);
  if (st == CMX_OK)
    st = check_info(j, c.info, 0, "Matrix is not positive definite.");
  return st;
}

/* ---------------- eigensolvers and SVD (Jacobi / divide and conquer) */
typedef struct {
  CUdeviceptr a, w, u, v, info, ws;
  size_t ws_bytes;
  int lwork, jobz, uplo;
  bool batched;
} eig_ctx;

/* Eigh of the column-major batch at a (n x n, overwritten by the vectors)
 * into w (n each). */
static cmx_status eigh_run(job* j, void* ctx, CUstream s) {
  (void)s;
  eig_ctx* c = ctx;
  int n = (int)j->n, d = j->dbl, t = dtype_of(j);
  if (c->batched) {
    SV_TRY(cmx__sv.syevjBatched[d](j->h.dn, c->jobz, c->uplo, n, PTR(c->a), n,
                                   PTR(c->w), PTR(c->ws), c->lwork,
                                   PTR(c->info), j->h.syevj, (int)j->batch),
           "syevjBatched");
    return CMX_OK;
  }
  size_t mat = (size_t)(j->n * j->n * j->esz), vec = (size_t)(j->n * j->esz);
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.cusolverDnXsyevd(
               j->h.dn, j->h.params, c->jobz, c->uplo, n, t,
               PTR(c->a + b * mat), n, t, PTR(c->w + b * vec), t, PTR(c->ws),
               c->ws_bytes, j->host_ws, j->host_bytes, (int*)PTR(c->info) + b),
           "Xsyevd");
  return CMX_OK;
}

static cmx_status eigh_plan(job* j, eig_ctx* c) {
  int n = (int)j->n, t = dtype_of(j);
  size_t hb = 0;
  cusolverStatus_t r;
  cmx__solver_lock(j->dev);
  if (c->batched) {
    r = cmx__sv.syevjBatched_bufferSize[j->dbl](
        j->h.dn, c->jobz, c->uplo, n, PTR(c->a), n, PTR(c->w), &c->lwork,
        j->h.syevj, (int)j->batch);
    c->ws_bytes = (size_t)c->lwork * (size_t)j->esz;
  } else {
    r = cmx__sv.cusolverDnXsyevd_bufferSize(j->h.dn, j->h.params, c->jobz,
                                            c->uplo, n, t, PTR(c->a), n, t,
                                            PTR(c->w), t, &c->ws_bytes, &hb);
  }
  cmx__solver_unlock(j->dev);
  if (r) return cmx__cusolver_fail(j->op, "eigensolver workspace query", r);
  cmx_status st = scratch(j, c->ws_bytes, &c->ws);
  return st == CMX_OK ? host_ws(j, hb) : st;
}

/* SVD of the column-major batch at a (rows x cols = n x m: the row-major
 * input read in place) into s, u (n x n: cmx's vt) and v (m x m). */
static cmx_status svd_run(job* j, void* ctx, CUstream s) {
  (void)s;
  eig_ctx* c = ctx;
  int rows = (int)j->n, cols = (int)j->m, d = j->dbl;
  if (c->batched) {
    SV_TRY(cmx__sv.gesvdjBatched[d](j->h.dn, c->jobz, rows, cols, PTR(c->a),
                                    rows, PTR(c->w), PTR(c->u), rows, PTR(c->v),
                                    cols, PTR(c->ws), c->lwork, PTR(c->info),
                                    j->h.gesvdj, (int)j->batch),
           "gesvdjBatched");
    return CMX_OK;
  }
  int64_t k = j->m < j->n ? j->m : j->n, e = j->esz;
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.gesvdj[d](
               j->h.dn, c->jobz, 0, rows, cols, PTR(c->a + b * j->m * j->n * e),
               rows, PTR(c->w + b * k * e), PTR(c->u + b * j->n * j->n * e),
               rows, PTR(c->v + b * j->m * j->m * e), cols, PTR(c->ws),
               c->lwork, (int*)PTR(c->info) + b, j->h.gesvdj),
           "gesvdj");
  return CMX_OK;
}

static cmx_status svd_plan(job* j, eig_ctx* c) {
  int rows = (int)j->n, cols = (int)j->m;
  cusolverStatus_t r;
  cmx__solver_lock(j->dev);
  if (c->batched)
    r = cmx__sv.gesvdjBatched_bufferSize[j->dbl](
        j->h.dn, c->jobz, rows, cols, PTR(c->a), rows, PTR(c->w), PTR(c->u),
        rows, PTR(c->v), cols, &c->lwork, j->h.gesvdj, (int)j->batch);
  else
    r = cmx__sv.gesvdj_bufferSize[j->dbl](
        j->h.dn, c->jobz, 0, rows, cols, PTR(c->a), rows, PTR(c->w), PTR(c->u),
        rows, PTR(c->v), cols, &c->lwork, j->h.gesvdj);
  cmx__solver_unlock(j->dev);
  if (r) return cmx__cusolver_fail(j->op, "gesvdj workspace query", r);
  c->ws_bytes = (size_t)c->lwork * (size_t)j->esz;
  return scratch(j, c->ws_bytes, &c->ws);
}

/* A copy of the input at *a with its non-finite matrices zeroed (their
 * flags set in *flags), for the iterative solvers. */
static cmx_status sanitized(job* j, CUdeviceptr in, CUdeviceptr* a,
                            CUdeviceptr* flags) {
  int64_t per = j->m * j->n;
  cmx_status st = scratch(j, (size_t)(per * j->batch * j->esz), a);
  if (st == CMX_OK) st = words(j, j->batch, flags);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(j->op, *a, in, (size_t)(per * j->batch * j->esz));
  if (st == CMX_OK) st = nonfinite(j, *a, per, *flags);
  if (st == CMX_OK) st = fill_where(j, *a, per, *flags, 0.0);
  return st;
}

/* ---------------- QR and LU (looped 64-bit API) ---------------- */
typedef struct {
  CUdeviceptr a, tau, piv, info, ws;
  size_t ws_bytes;
  int lwork;
} fact_ctx;

static cmx_status geqrf_run(job* j, void* ctx, CUstream s) {
  (void)s;
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n, e = j->esz;
  int t = dtype_of(j);
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.cusolverDnXgeqrf(
               j->h.dn, j->h.params, m, n, t, PTR(c->a + b * m * n * e), m, t,
               PTR(c->tau + b * k * e), t, PTR(c->ws), c->ws_bytes, j->host_ws,
               j->host_bytes, (int*)PTR(c->info) + b),
           "Xgeqrf");
  return CMX_OK;
}

static cmx_status orgqr_run(job* j, void* ctx, CUstream s) {
  (void)s;
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n, e = j->esz;
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.orgqr[j->dbl](j->h.dn, (int)m, (int)k, (int)k,
                                 PTR(c->a + b * m * n * e), (int)m,
                                 PTR(c->tau + b * k * e), PTR(c->ws), c->lwork,
                                 (int*)PTR(c->info) + b),
           "orgqr");
  return CMX_OK;
}

static cmx_status getrf_run(job* j, void* ctx, CUstream s) {
  (void)s;
  fact_ctx* c = ctx;
  int64_t m = j->m, n = j->n, k = m < n ? m : n;
  int t = dtype_of(j);
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.cusolverDnXgetrf(
               j->h.dn, j->h.params, m, n, t, PTR(c->a + b * m * n * j->esz), m,
               (int64_t*)PTR(c->piv) + b * k, t, PTR(c->ws), c->ws_bytes,
               j->host_ws, j->host_bytes, (int*)PTR(c->info) + b),
           "Xgetrf");
  return CMX_OK;
}

typedef struct {
  CUdeviceptr a, w, vr, info, ws;
  size_t ws_bytes;
  int jobvr;
} geev_ctx;

static cmx_status geev_run(job* j, void* ctx, CUstream s) {
  (void)s;
  geev_ctx* c = ctx;
  int64_t n = j->n, e = j->esz;
  int t = dtype_of(j), tc = j->dbl ? CMX__C_64F : CMX__C_32F;
  for (int64_t b = 0; b < j->batch; b++)
    SV_TRY(cmx__sv.cusolverDnXgeev(
               j->h.dn, j->h.params, CMX__EIG_NOVECTOR, c->jobvr, n, t,
               PTR(c->a + b * n * n * e), n, tc, PTR(c->w + b * 2 * n * e), t,
               NULL, 1, t, c->vr ? PTR(c->vr + b * n * n * e) : NULL,
               c->vr ? n : 1, t, PTR(c->ws), c->ws_bytes, j->host_ws,
               j->host_bytes, (int*)PTR(c->info) + b),
           "Xgeev");
  return CMX_OK;
}

/* ---------------- the kernels ---------------- */

/* Sets up j for input a (checked like the CPU's kernel) and allocates
 * the outputs; *empty when there is nothing to factor. */
static cmx_status job_begin(job* j, const cmx_primitive* p, const char* op,
                            cmx_array a, const cmx_array* out, int nout,
                            bool* empty) {
  memset(j, 0, sizeof *j);
  j->op = op;
  j->dev = cmx_primitive_stream(p).device.index;
  if (!cmx_kernel_is_contiguous(a) ||
      (a->dtype != CMX_FLOAT32 && a->dtype != CMX_FLOAT64))
    return cmx_kernel_error(
        CMX_ERR_VALUE, "[%s] expects contiguous float32 or float64 input.", op);
  j->dbl = a->dtype == CMX_FLOAT64;
  j->esz = j->dbl ? 8 : 4;
  j->m = a->dims[a->ndim - 2];
  j->n = a->dims[a->ndim - 1];
  j->batch = 1;
  for (int d = 0; d < a->ndim - 2; d++) j->batch *= a->dims[d];
  for (int i = 0; i < nout; i++) {
    cmx_status st = cmx_kernel_alloc(out[i]);
    if (st != CMX_OK) return st;
  }
  *empty = j->batch == 0 || j->m == 0 || j->n == 0;
  if (j->m > INT_MAX / 4 || j->n > INT_MAX / 4 || j->batch > INT_MAX)
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[%s] matrices or batches this large are not "
                            "supported on the gpu.",
                            op);
  if (*empty) return CMX_OK;
  return cmx__solver_get(j->dev, op, &j->h);
}

static CUdeviceptr dptr(const job* j, cmx_array a, cmx_status* st) {
  CUdeviceptr p = 0;
  if (*st == CMX_OK && a->size) *st = cmx__gpu_ptr(a, j->dev, &p);
  return p;
}

static cmx_status finish(job* j, cmx_status st, const cmx_array* out,
                         int nout) {
  if (j->host_ws && st == CMX_OK) { /* wait before the host workspace goes */
    int dummy;
    CUdeviceptr w;
    st = scratch(j, sizeof(int), &w);
    read_ctx c = {w, sizeof dummy, &dummy};
    if (st == CMX_OK) st = cmx__gpu_call(j->op, read_run, &c);
  }
  job_end(j);
  for (int i = 0; st == CMX_OK && i < nout; i++)
    cmx_kernel_mark_device_written(out[i]);
  return st;
}

/* Empty matrices: zeros, and the identities of SVD's U and Vt. */
static cmx_status fill_empty(job* j, const cmx_array* out, int nout,
                             bool svd_uv) {
  cmx_status st = CMX_OK;
  for (int i = 0; st == CMX_OK && i < nout; i++) {
    CUdeviceptr o = dptr(j, out[i], &st);
    if (o)
      st = cmx__gpu_memset(
          j->op, o, 0, 1, (size_t)out[i]->size * cmx_dtype_size(out[i]->dtype));
  }
  if (st == CMX_OK && svd_uv && j->batch) {
    CUdeviceptr u = dptr(j, out[0], &st), vt = dptr(j, out[2], &st);
    if (u) st = mats(j, K_EYE, u, j->m, j->m, 0);
    if (st == CMX_OK && vt) st = mats(j, K_EYE, vt, j->n, j->n, 0);
  }
  return st;
}

cmx_status cmx__gpu_inverse(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin;
  const cmx__inverse_params* q = cmx_primitive_params(p);
  job j;
  bool empty;
  const char* op = q->tri ? "linalg::tri_inv" : "linalg::inv";
  cmx_status st = job_begin(&j, p, op, in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  CUdeviceptr a = dptr(&j, in[0], &st), o = dptr(&j, out[0], &st), w = 0;
  size_t bytes = (size_t)(in[0]->size * j.esz);
  if (q->tri) {
    /* out = inv(A^T) I column-major = inv(A) row-major */
    if (st == CMX_OK) st = mats(&j, K_EYE, o, j.n, j.n, 0);
    /* X^T A^T = I^T with A^T's triangle: the right-side solve of tri_solve
     * on the identity gives inv(A) row-major */
    if (st == CMX_OK) st = tri_solve(&j, a, o, j.n, q->upper);
    if (st == CMX_OK) st = mats(&j, K_TRI_ZERO, o, j.n, j.n, !q->upper);
  } else {
    if (st == CMX_OK) st = scratch(&j, bytes, &w);
    if (st == CMX_OK) st = cmx__gpu_copy_d2d(op, w, a, bytes);
    if (st == CMX_OK) st = lu_solve(&j, w, o, j.n, CMX__OP_N, true);
  }
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_solve(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout) {
  (void)nin;
  job j;
  bool empty;
  const char* op = "linalg::solve";
  cmx_status st = job_begin(&j, p, op, in[0], out, nout, &empty);
  if (st == CMX_OK &&
      (!cmx_kernel_is_contiguous(in[1]) || in[1]->dtype != in[0]->dtype))
    st = cmx_kernel_error(
        CMX_ERR_VALUE, "[%s] expects contiguous float32 or float64 input.", op);
  int64_t k = in[1]->dims[in[1]->ndim - 1];
  if (st != CMX_OK || empty || k == 0) return st;
  CUdeviceptr a = dptr(&j, in[0], &st), b = dptr(&j, in[1], &st),
              o = dptr(&j, out[0], &st), w = 0, x = o;
  size_t bytes = (size_t)(in[0]->size * j.esz),
         rhs = (size_t)(out[0]->size * j.esz);
  if (st == CMX_OK) st = scratch(&j, bytes, &w);
  if (st == CMX_OK) st = cmx__gpu_copy_d2d(op, w, a, bytes);
  /* b column-major (n x k): b itself when k == 1, else a transpose */
  if (st == CMX_OK && k == 1) st = cmx__gpu_copy_d2d(op, o, b, rhs);
  if (st == CMX_OK && k > 1) st = scratch(&j, rhs, &x);
  if (st == CMX_OK && k > 1) st = transpose(&j, b, x, j.batch, j.n, k, j.n * k);
  /* a^T is factored: a x = b is the transposed solve */
  if (st == CMX_OK) st = lu_solve(&j, w, x, k, CMX__OP_T, false);
  if (st == CMX_OK && k > 1) st = transpose(&j, x, o, j.batch, k, j.n, j.n * k);
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_solve_triangular(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout) {
  (void)nin;
  int upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  job j;
  bool empty;
  const char* op = "linalg::solve_triangular";
  cmx_status st = job_begin(&j, p, op, in[0], out, nout, &empty);
  if (st == CMX_OK &&
      (!cmx_kernel_is_contiguous(in[1]) || in[1]->dtype != in[0]->dtype))
    st = cmx_kernel_error(
        CMX_ERR_VALUE, "[%s] expects contiguous float32 or float64 input.", op);
  int64_t k = in[1]->dims[in[1]->ndim - 1];
  if (st != CMX_OK || empty || k == 0) return st;
  CUdeviceptr a = dptr(&j, in[0], &st), b = dptr(&j, in[1], &st),
              o = dptr(&j, out[0], &st);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(op, o, b, (size_t)(out[0]->size * j.esz));
  if (st == CMX_OK) st = tri_solve(&j, a, o, k, upper);
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_cholesky(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin;
  int upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  job j;
  bool empty;
  cmx_status st =
      job_begin(&j, p, "linalg::cholesky", in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  CUdeviceptr a = dptr(&j, in[0], &st), o = dptr(&j, out[0], &st);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(j.op, o, a, (size_t)(in[0]->size * j.esz));
  if (st == CMX_OK) st = cholesky(&j, o, upper);
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_eigh(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  const cmx__eigh_params* q = cmx_primitive_params(p);
  job j;
  bool empty;
  cmx_status st = job_begin(&j, p, "linalg::eigh", in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  eig_ctx c = {.jobz = q->vectors ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR,
               .uplo = q->upper ? CMX__FILL_LOWER : CMX__FILL_UPPER,
               .batched = j.n <= 32};
  CUdeviceptr flags = 0, src = dptr(&j, in[0], &st);
  c.w = dptr(&j, out[0], &st);
  if (st == CMX_OK) st = sanitized(&j, src, &c.a, &flags);
  if (st == CMX_OK) st = words(&j, j.batch, &c.info);
  if (st == CMX_OK) st = eigh_plan(&j, &c);
  if (st == CMX_OK) st = call(&j, eigh_run, &c);
  if (st == CMX_OK) st = fill_where(&j, c.w, j.n, flags, NAN);
  if (st == CMX_OK && q->vectors) {
    CUdeviceptr v = dptr(&j, out[1], &st);
    if (st == CMX_OK) st = transpose(&j, c.a, v, j.batch, j.n, j.n, j.n * j.n);
    if (st == CMX_OK) st = fill_where(&j, v, j.n * j.n, flags, NAN);
  }
  if (st == CMX_OK)
    st = check_info(&j, c.info, flags, "Eigensolver did not converge.");
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_svd(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  int uv = ((const cmx__svd_params*)cmx_primitive_params(p))->uv;
  job j;
  bool empty;
  cmx_status st = job_begin(&j, p, "linalg::svd", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  if (empty) {
    st = fill_empty(&j, out, nout, uv);
    return finish(&j, st, out, nout);
  }
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  eig_ctx c = {.jobz = uv ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR,
               .batched = m <= 32 && n <= 32};
  CUdeviceptr flags = 0, src = dptr(&j, in[0], &st);
  CUdeviceptr s_out = dptr(&j, out[uv ? 1 : 0], &st);
  c.w = s_out;
  if (st == CMX_OK) st = sanitized(&j, src, &c.a, &flags);
  if (st == CMX_OK) st = words(&j, j.batch, &c.info);
  /* the column-major n x m matrix A^T: its U is cmx's Vt, its V is U^T */
  if (st == CMX_OK && uv) c.u = dptr(&j, out[2], &st);
  if (st == CMX_OK && !uv)
    st = scratch(&j, (size_t)(j.batch * n * n * e), &c.u);
  if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * m * m * e), &c.v);
  if (st == CMX_OK) st = svd_plan(&j, &c);
  if (st == CMX_OK) st = call(&j, svd_run, &c);
  if (st == CMX_OK) st = fill_where(&j, s_out, k, flags, NAN);
  if (st == CMX_OK && uv) {
    CUdeviceptr u = dptr(&j, out[0], &st);
    if (st == CMX_OK) st = transpose(&j, c.v, u, j.batch, m, m, m * m);
    if (st == CMX_OK) st = fill_where(&j, u, m * m, flags, NAN);
    if (st == CMX_OK) st = fill_where(&j, c.u, n * n, flags, NAN);
  }
  if (st == CMX_OK) st = check_info(&j, c.info, flags, "SVD did not converge.");
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_qrf(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  job j;
  bool empty;
  cmx_status st = job_begin(&j, p, "linalg::qr", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  if (empty) return finish(&j, fill_empty(&j, out, nout, false), out, nout);
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  int t = dtype_of(&j);
  fact_ctx c = {0};
  CUdeviceptr src = dptr(&j, in[0], &st), q_out = dptr(&j, out[0], &st),
              r_out = dptr(&j, out[1], &st);
  if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * m * n * e), &c.a);
  if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * k * e), &c.tau);
  if (st == CMX_OK) st = words(&j, j.batch, &c.info);
  if (st == CMX_OK) st = transpose(&j, src, c.a, j.batch, m, n, m * n);
  if (st == CMX_OK) {
    size_t hb = 0;
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgeqrf_bufferSize(
        j.h.dn, j.h.params, m, n, t, PTR(c.a), m, t, PTR(c.tau), t, &c.ws_bytes,
        &hb);
    int lw = 0;
    if (!r)
      r = cmx__sv.orgqr_bufferSize[j.dbl](j.h.dn, (int)m, (int)k, (int)k,
                                          PTR(c.a), (int)m, PTR(c.tau), &lw);
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "QR workspace query", r);
    c.lwork = lw;
    if ((size_t)lw * (size_t)e > c.ws_bytes)
      c.ws_bytes = (size_t)lw * (size_t)e;
    if (st == CMX_OK) st = scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = host_ws(&j, hb);
  }
  if (st == CMX_OK) st = call(&j, geqrf_run, &c);
  if (st == CMX_OK) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, mm = m, nn = n, kk = k;
    CMX__GPU_ARG(&a, c.a);
    CMX__GPU_ARG(&a, r_out);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, mm);
    CMX__GPU_ARG(&a, nn);
    CMX__GPU_ARG(&a, kk);
    st = launch(&j, K_QR_R, &a, j.batch * k * n);
  }
  if (st == CMX_OK) st = call(&j, orgqr_run, &c);
  /* Q: the first k columns (column-major, ld m) of each factored matrix */
  if (st == CMX_OK) st = transpose(&j, c.a, q_out, j.batch, k, m, m * n);
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_luf(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  job j;
  bool empty;
  cmx_status st =
      job_begin(&j, p, "linalg::lu_factor", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  fact_ctx c = {0};
  CUdeviceptr src = dptr(&j, in[0], &st), lu = dptr(&j, out[0], &st),
              piv = dptr(&j, out[1], &st), rows = dptr(&j, out[2], &st),
              perm = 0;
  if (empty) st = fill_empty(&j, out, nout, false);
  if (st == CMX_OK && !empty) {
    int t = dtype_of(&j);
    size_t hb = 0;
    st = scratch(&j, (size_t)(j.batch * m * n * e), &c.a);
    if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * k * 8), &c.piv);
    if (st == CMX_OK) st = words(&j, j.batch, &c.info);
    if (st == CMX_OK) st = transpose(&j, src, c.a, j.batch, m, n, m * n);
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = st == CMX_OK ? cmx__sv.cusolverDnXgetrf_bufferSize(
                                            j.h.dn, j.h.params, m, n, t,
                                            PTR(c.a), m, t, &c.ws_bytes, &hb)
                                      : 0;
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "Xgetrf_bufferSize", r);
    if (st == CMX_OK) st = scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = host_ws(&j, hb);
    if (st == CMX_OK) st = call(&j, getrf_run, &c);
    if (st == CMX_OK) st = transpose(&j, c.a, lu, j.batch, n, m, m * n);
  }
  /* pivots and row order (the identity order when k == 0) */
  if (st == CMX_OK && j.batch * m > 0)
    st = scratch(&j, (size_t)(j.batch * m * 4), &perm);
  if (st == CMX_OK && j.batch * m > 0) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, mm = m, kk = empty ? 0 : k;
    CMX__GPU_ARG(&a, c.piv);
    CMX__GPU_ARG(&a, piv);
    CMX__GPU_ARG(&a, rows);
    CMX__GPU_ARG(&a, perm);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, mm);
    CMX__GPU_ARG(&a, kk);
    st = launch(&j, K_LUF_PIV, &a, j.batch);
  }
  return finish(&j, st, out, nout);
}

cmx_status cmx__gpu_eig(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  int vectors = ((const cmx__eig_params*)cmx_primitive_params(p))->vectors;
  job j;
  bool empty;
  cmx_status st = job_begin(&j, p, "linalg::eig", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  if (empty) return finish(&j, fill_empty(&j, out, nout, false), out, nout);
  if (!cmx__sv.cusolverDnXgeev)
    return finish(&j,
                  cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                                   "[linalg::eig] needs cusolverDnXgeev "
                                   "(cuSOLVER of CUDA 12.6 or later), which "
                                   "the loaded cuSOLVER lacks."),
                  out, nout);
  int64_t n = j.n, e = j.esz;
  int t = dtype_of(&j), tc = j.dbl ? CMX__C_64F : CMX__C_32F;
  geev_ctx c = {.jobvr = vectors ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR};
  CUdeviceptr flags = 0, src = dptr(&j, in[0], &st), s = 0;
  CUdeviceptr ow = dptr(&j, out[0], &st),
              ov = vectors ? dptr(&j, out[1], &st) : 0;
  if (st == CMX_OK) st = sanitized(&j, src, &s, &flags);
  if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * n * n * e), &c.a);
  if (st == CMX_OK) st = transpose(&j, s, c.a, j.batch, n, n, n * n);
  if (st == CMX_OK) st = scratch(&j, (size_t)(j.batch * 2 * n * e), &c.w);
  if (st == CMX_OK && vectors)
    st = scratch(&j, (size_t)(j.batch * n * n * e), &c.vr);
  if (st == CMX_OK) st = words(&j, j.batch, &c.info);
  if (st == CMX_OK) {
    size_t hb = 0;
    cmx__solver_lock(j.dev);
    cusolverStatus_t r = cmx__sv.cusolverDnXgeev_bufferSize(
        j.h.dn, j.h.params, CMX__EIG_NOVECTOR, c.jobvr, n, t, PTR(c.a), n, tc,
        PTR(c.w), t, NULL, 1, t, c.vr ? PTR(c.vr) : NULL, c.vr ? n : 1, t,
        &c.ws_bytes, &hb);
    cmx__solver_unlock(j.dev);
    if (r) st = cmx__cusolver_fail(j.op, "Xgeev_bufferSize", r);
    if (st == CMX_OK) st = scratch(&j, c.ws_bytes, &c.ws);
    if (st == CMX_OK) st = host_ws(&j, hb);
  }
  if (st == CMX_OK) st = call(&j, geev_run, &c);
  if (st == CMX_OK) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long bb = j.batch, nn = n;
    CMX__GPU_ARG(&a, c.w);
    CMX__GPU_ARG(&a, c.vr);
    CMX__GPU_ARG(&a, ow);
    CMX__GPU_ARG(&a, ov);
    CMX__GPU_ARG(&a, bb);
    CMX__GPU_ARG(&a, nn);
    CMX__GPU_ARG(&a, flags);
    st = launch(&j, K_EIG_PACK, &a, j.batch * n);
  }
  if (st == CMX_OK)
    st = check_info(&j, c.info, flags, "Eigensolver did not converge.");
  return finish(&j, st, out, nout);
}

/* CovSqrt (primitives/random.h): the CPU's one-sided Jacobi in double, one
 * thread per matrix (kernels/linalg.cu), for the small covariances of
 * random.multivariate_normal. */
cmx_status cmx__gpu_cov_sqrt(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  cmx_array a = in[0], o = out[0];
  if (!cmx_kernel_is_contiguous(a) || a->dtype != CMX_FLOAT32)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[CovSqrt] expects a contiguous input.");
  job j;
  memset(&j, 0, sizeof j);
  j.op = "CovSqrt";
  j.dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  long long n = a->dims[a->ndim - 1], batch = o->size / (n * n);
  CUdeviceptr src = dptr(&j, a, &st), dst = dptr(&j, o, &st), ws = 0;
  if (st == CMX_OK)
    st = scratch(&j, (size_t)(batch * (2 * n * n + n)) * sizeof(double), &ws);
  if (st == CMX_OK) {
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, src);
    CMX__GPU_ARG(&args, dst);
    CMX__GPU_ARG(&args, ws);
    CMX__GPU_ARG(&args, batch);
    CMX__GPU_ARG(&args, n);
    const cmx__gpu_kernel* k =
        cmx__gpu_kernel_get(j.dev, &cmx__gpu_family_linalg, 0, K_COV_SQRT);
    if (!k) st = cmx_last_status();
    cmx__gpu_cfg cfg = {.grid = {(unsigned)((batch + 63) / 64), 1, 1},
                        .block = {64, 1, 1}};
    if (st == CMX_OK) st = cmx__gpu_launch(j.op, k, &cfg, &args);
  }
  return finish(&j, st, out, nout);
}
