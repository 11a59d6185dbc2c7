/* The symmetric eigensolver and SVD on the GPU (linalg.c says how), and
 * CovSqrt. Matrices up to 64 x 64 through cmx's batched Jacobi kernels;
 * larger ones (or all, with CMX_CUDA_JACOBI=0) through cuSOLVER:
 * syevjBatched / gesvdjBatched up to 32x32, else Xsyevd / gesvdj per
 * matrix. complex64 always takes cuSOLVER (CheevjBatched /
 * CgesvdjBatched up to 32 x 32, else Xsyevd / Cgesvdj): the row-major
 * matrix read in place is A^T = conj(A), so Eigh's vectors and SVD's U
 * come back through a conjugating transpose. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/kernels_linalg.h"
#include "backend/cuda/linalg_job.h"
#include "primitives/linalg.h"

/* ---------------- eigensolvers and SVD (Jacobi / divide and conquer) */
typedef struct {
  CUdeviceptr a, w, u, v, info, ws;
  size_t ws_bytes;
  int lwork, jobz, uplo;
  bool batched;
} eig_ctx;

/* Eigh of the column-major batch at a (n x n, overwritten by the vectors)
 * into w (n each): syevjBatched, or Xsyevd per matrix. */
static cmx_status syevj_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  eig_ctx* c = ctx;
  CMX__SV_TRY(cmx__sv.syevjBatched[cmx__la_ti(j)](
                  j->h.dn, c->jobz, c->uplo, (int)j->n, CMX__PTR(c->a),
                  (int)j->n, CMX__PTR(c->w), CMX__PTR(c->ws), c->lwork,
                  CMX__PTR(c->info), j->h.syevj, (int)j->batch),
              "syevjBatched");
  return CMX_OK;
}

static cusolverStatus_t syevd_one(cmx__la_job* j, void* ctx, int64_t b) {
  eig_ctx* c = ctx;
  int t = cmx__la_dtype(j), rt = cmx__la_rtype(j);
  size_t mat = (size_t)(j->n * j->n * j->esz),
         vec = (size_t)(j->n * cmx__la_resz(j));
  return cmx__sv.cusolverDnXsyevd(
      j->h.dn, j->h.params, c->jobz, c->uplo, j->n, t, CMX__PTR(c->a + b * mat),
      j->n, rt, CMX__PTR(c->w + b * vec), t, CMX__PTR(c->ws), c->ws_bytes,
      j->host_ws, j->host_bytes, (int*)CMX__PTR(c->info) + b);
}

static cmx_status eigh_plan(cmx__la_job* j, eig_ctx* c) {
  int n = (int)j->n, t = cmx__la_dtype(j), rt = cmx__la_rtype(j);
  size_t hb = 0;
  cusolverStatus_t r;
  cmx__solver_lock(j->dev);
  if (c->batched) {
    r = cmx__sv.syevjBatched_bufferSize[cmx__la_ti(j)](
        j->h.dn, c->jobz, c->uplo, n, CMX__PTR(c->a), n, CMX__PTR(c->w),
        &c->lwork, j->h.syevj, (int)j->batch);
    c->ws_bytes = (size_t)c->lwork * (size_t)j->esz;
  } else {
    r = cmx__sv.cusolverDnXsyevd_bufferSize(
        j->h.dn, j->h.params, c->jobz, c->uplo, n, t, CMX__PTR(c->a), n, rt,
        CMX__PTR(c->w), t, &c->ws_bytes, &hb);
  }
  cmx__solver_unlock(j->dev);
  if (r) return cmx__cusolver_fail(j->op, "eigensolver workspace query", r);
  cmx_status st = cmx__la_scratch(j, c->ws_bytes, &c->ws);
  return st == CMX_OK ? cmx__la_host_ws(j, hb) : st;
}

/* SVD of the column-major batch at a (rows x cols = n x m: the row-major
 * input read in place) into s, u (n x n: cmx's vt) and v (m x m):
 * gesvdjBatched, or gesvdj per matrix. */
static cmx_status gesvdj_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  eig_ctx* c = ctx;
  int rows = (int)j->n, cols = (int)j->m;
  CMX__SV_TRY(
      cmx__sv.gesvdjBatched[cmx__la_ti(j)](
          j->h.dn, c->jobz, rows, cols, CMX__PTR(c->a), rows, CMX__PTR(c->w),
          CMX__PTR(c->u), rows, CMX__PTR(c->v), cols, CMX__PTR(c->ws), c->lwork,
          CMX__PTR(c->info), j->h.gesvdj, (int)j->batch),
      "gesvdjBatched");
  return CMX_OK;
}

static cusolverStatus_t gesvdj_one(cmx__la_job* j, void* ctx, int64_t b) {
  eig_ctx* c = ctx;
  int rows = (int)j->n, cols = (int)j->m;
  int64_t k = j->m < j->n ? j->m : j->n, e = j->esz, re = cmx__la_resz(j);
  return cmx__sv.gesvdj[cmx__la_ti(j)](
      j->h.dn, c->jobz, 0, rows, cols, CMX__PTR(c->a + b * j->m * j->n * e),
      rows, CMX__PTR(c->w + b * k * re), CMX__PTR(c->u + b * j->n * j->n * e),
      rows, CMX__PTR(c->v + b * j->m * j->m * e), cols, CMX__PTR(c->ws),
      c->lwork, (int*)CMX__PTR(c->info) + b, j->h.gesvdj);
}

static cmx_status svd_plan(cmx__la_job* j, eig_ctx* c) {
  int rows = (int)j->n, cols = (int)j->m;
  cusolverStatus_t r;
  cmx__solver_lock(j->dev);
  if (c->batched)
    r = cmx__sv.gesvdjBatched_bufferSize[cmx__la_ti(j)](
        j->h.dn, c->jobz, rows, cols, CMX__PTR(c->a), rows, CMX__PTR(c->w),
        CMX__PTR(c->u), rows, CMX__PTR(c->v), cols, &c->lwork, j->h.gesvdj,
        (int)j->batch);
  else
    r = cmx__sv.gesvdj_bufferSize[cmx__la_ti(j)](
        j->h.dn, c->jobz, 0, rows, cols, CMX__PTR(c->a), rows, CMX__PTR(c->w),
        CMX__PTR(c->u), rows, CMX__PTR(c->v), cols, &c->lwork, j->h.gesvdj);
  cmx__solver_unlock(j->dev);
  if (r) return cmx__cusolver_fail(j->op, "gesvdj workspace query", r);
  c->ws_bytes = (size_t)c->lwork * (size_t)j->esz;
  return cmx__la_scratch(j, c->ws_bytes, &c->ws);
}

/* ---------------- cmx's batched Jacobi (kernels/linalg.cu) ----------------
 * Eigh and SVD of matrices up to CMX__LA_JACOBI_MAX on a side, one block
 * per matrix: cuSOLVER's batched Jacobi stops at 32 x 32 and its looped
 * routines are slow for batches of small matrices. Chosen by size alone
 * (a matrix gets the same vectors alone and in a batch); CMX_CUDA_JACOBI=0
 * in the environment (read at each call) keeps cuSOLVER. */
#define CMX__LA_JACOBI_MAX 64

static bool jacobi_on(int64_t m, int64_t n) {
  const char* env = getenv("CMX_CUDA_JACOBI");
  if (env && strcmp(env, "0") == 0) return false;
  return m <= CMX__LA_JACOBI_MAX && n <= CMX__LA_JACOBI_MAX;
}

/* Threads for phases of `items` work items: a multiple of 32, 32 .. 256. */
static unsigned jacobi_threads(int64_t items) {
  int64_t t = (items + 31) / 32 * 32;
  return (unsigned)(t < 32 ? 32 : t > 256 ? 256 : t);
}

/* Launches Jacobi kernel `kernel` (one block a matrix) with arguments:
 * the np device pointers p, the batch, the three ints x. */
static cmx_status jacobi_launch(const cmx__la_job* j, int kernel,
                                unsigned threads, size_t shared,
                                const CUdeviceptr* p, int np, const int* x) {
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(j->dev, &cmx__gpu_family_linalg, j->dbl, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  for (int i = 0; i < np; i++) CMX__GPU_ARG(&args, p[i]);
  long long batch = j->batch;
  CMX__GPU_ARG(&args, batch);
  for (int i = 0; i < 3; i++) CMX__GPU_ARG(&args, x[i]);
  cmx__gpu_cfg cfg = {.grid = {(unsigned)j->batch, 1, 1},
                      .block = {threads, 1, 1},
                      .shared = shared};
  return cmx__gpu_launch(j->op, k, &cfg, &args);
}

/* Eigh (kernel cmx_la_jacobi_eigh; its shared memory as it lays it out). */
static cmx_status jacobi_eigh(cmx__la_job* j, const cmx_array* in,
                              const cmx_array* out, const cmx__eigh_params* q) {
  cmx_status st = CMX_OK;
  int n = (int)j->n, P = (n + 1) / 2, x[3] = {n, q->upper, q->vectors};
  unsigned nt = jacobi_threads((int64_t)P * n);
  size_t shared = (size_t)j->esz * (size_t)(2 * n * (n + 1) + 5 * P + n + nt) +
                  sizeof(int) * (size_t)n;
  CUdeviceptr p[3] = {cmx__la_ptr(j, in[0], &st), cmx__la_ptr(j, out[0], &st),
                      q->vectors ? cmx__la_ptr(j, out[1], &st) : 0};
  if (st != CMX_OK) return st;
  return jacobi_launch(j, CMX__LA_K_JACOBI_EIGH, nt, shared, p, 3, x);
}

/* SVD (kernel cmx_la_jacobi_svd; its shared memory as it lays it out). */
static cmx_status jacobi_svd(cmx__la_job* j, const cmx_array* in,
                             const cmx_array* out, int uv) {
  cmx_status st = CMX_OK;
  int m = (int)j->m, n = (int)j->n, R = m > n ? m : n, C = m < n ? m : n;
  int P = (C + 1) / 2, x[3] = {m, n, uv};
  unsigned nt = jacobi_threads((int64_t)P * R);
  size_t tees = (size_t)((uv ? R : C) * (R + 1) + (uv ? C * (C + 1) : 0) +
                         2 * P + 2 * R + (int)nt);
  size_t shared = (size_t)j->esz * tees + sizeof(int) * (size_t)(2 * R + 1);
  CUdeviceptr p[4] = {cmx__la_ptr(j, in[0], &st),
                      cmx__la_ptr(j, out[uv ? 1 : 0], &st),
                      uv ? cmx__la_ptr(j, out[0], &st) : 0,
                      uv ? cmx__la_ptr(j, out[2], &st) : 0};
  if (st != CMX_OK) return st;
  return jacobi_launch(j, CMX__LA_K_JACOBI_SVD, nt, shared, p, 4, x);
}

cmx_status cmx__gpu_eigh(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  const cmx__eigh_params* q = cmx_primitive_params(p);
  cmx__la_job j;
  bool empty;
  cmx_status st =
      cmx__la_setup_complex(&j, p, "linalg::eigh", in[0], out, nout, &empty);
  if (st != CMX_OK || empty) return st;
  if (!j.cplx && jacobi_on(j.n, j.n))
    return cmx__la_finish(&j, jacobi_eigh(&j, in, out, q), out, nout);
  if ((st = cmx__solver_get(j.dev, j.op, &j.h)) != CMX_OK) return st;
  eig_ctx c = {.jobz = q->vectors ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR,
               .uplo = q->upper ? CMX__FILL_LOWER : CMX__FILL_UPPER,
               .batched = j.n <= 32};
  CUdeviceptr flags = 0, src = cmx__la_ptr(&j, in[0], &st);
  c.w = cmx__la_ptr(&j, out[0], &st);
  if (st == CMX_OK) st = cmx__la_sanitized(&j, src, &c.a, &flags);
  if (st == CMX_OK) st = cmx__la_words(&j, j.batch, &c.info);
  if (st == CMX_OK) st = eigh_plan(&j, &c);
  if (st == CMX_OK)
    st = c.batched ? cmx__la_call(&j, syevj_run, &c)
                   : cmx__la_each(&j, syevd_one, &c, "Xsyevd");
  if (st == CMX_OK) st = cmx__la_fill_where(&j, c.w, j.n, flags, NAN);
  if (st == CMX_OK && q->vectors) { /* complex: the vectors of conj(A) */
    CUdeviceptr v = cmx__la_ptr(&j, out[1], &st);
    int64_t nn = j.n * j.n;
    if (st == CMX_OK)
      st = j.cplx ? cmx__la_ctranspose(&j, c.a, v, j.batch, j.n, j.n, nn)
                  : cmx__la_transpose(&j, c.a, v, j.batch, j.n, j.n, nn);
    if (st == CMX_OK)
      st = cmx__la_fill_where(&j, v, nn * (j.cplx ? 2 : 1), flags, NAN);
  }
  if (st == CMX_OK)
    st = cmx__la_check_info(&j, c.info, flags, "Eigensolver did not converge.");
  return cmx__la_finish(&j, st, out, nout);
}

cmx_status cmx__gpu_svd(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  int uv = ((const cmx__svd_params*)cmx_primitive_params(p))->uv;
  cmx__la_job j;
  bool empty;
  cmx_status st =
      cmx__la_setup_complex(&j, p, "linalg::svd", in[0], out, nout, &empty);
  if (st != CMX_OK) return st;
  if (empty) {
    st = cmx__la_fill_empty(&j, out, nout, uv);
    return cmx__la_finish(&j, st, out, nout);
  }
  if (!j.cplx && jacobi_on(j.m, j.n))
    return cmx__la_finish(&j, jacobi_svd(&j, in, out, uv), out, nout);
  if ((st = cmx__solver_get(j.dev, j.op, &j.h)) != CMX_OK) return st;
  int64_t m = j.m, n = j.n, k = m < n ? m : n, e = j.esz;
  eig_ctx c = {.jobz = uv ? CMX__EIG_VECTOR : CMX__EIG_NOVECTOR,
               .batched = m <= 32 && n <= 32};
  CUdeviceptr flags = 0, src = cmx__la_ptr(&j, in[0], &st);
  CUdeviceptr s_out = cmx__la_ptr(&j, out[uv ? 1 : 0], &st);
  c.w = s_out;
  if (st == CMX_OK) st = cmx__la_sanitized(&j, src, &c.a, &flags);
  if (st == CMX_OK) st = cmx__la_words(&j, j.batch, &c.info);
  /* the column-major n x m matrix A^T: its U is cmx's Vt, its V is U^T */
  if (st == CMX_OK && uv) c.u = cmx__la_ptr(&j, out[2], &st);
  if (st == CMX_OK && !uv)
    st = cmx__la_scratch(&j, (size_t)(j.batch * n * n * e), &c.u);
  if (st == CMX_OK)
    st = cmx__la_scratch(&j, (size_t)(j.batch * m * m * e), &c.v);
  if (st == CMX_OK) st = svd_plan(&j, &c);
  if (st == CMX_OK)
    st = c.batched ? cmx__la_call(&j, gesvdj_run, &c)
                   : cmx__la_each(&j, gesvdj_one, &c, "gesvdj");
  if (st == CMX_OK) st = cmx__la_fill_where(&j, s_out, k, flags, NAN);
  if (st == CMX_OK && uv) { /* complex: U = conj(V of A^T) */
    CUdeviceptr u = cmx__la_ptr(&j, out[0], &st);
    int64_t f = j.cplx ? 2 : 1;
    if (st == CMX_OK)
      st = j.cplx ? cmx__la_ctranspose(&j, c.v, u, j.batch, m, m, m * m)
                  : cmx__la_transpose(&j, c.v, u, j.batch, m, m, m * m);
    if (st == CMX_OK) st = cmx__la_fill_where(&j, u, f * m * m, flags, NAN);
    if (st == CMX_OK) st = cmx__la_fill_where(&j, c.u, f * n * n, flags, NAN);
  }
  if (st == CMX_OK)
    st = cmx__la_check_info(&j, c.info, flags, "SVD did not converge.");
  return cmx__la_finish(&j, st, out, nout);
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
  cmx__la_job j;
  memset(&j, 0, sizeof j);
  j.op = "CovSqrt";
  j.dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  long long n = a->dims[a->ndim - 1], batch = o->size / (n * n);
  CUdeviceptr src = cmx__la_ptr(&j, a, &st), dst = cmx__la_ptr(&j, o, &st),
              ws = 0;
  if (st == CMX_OK)
    st = cmx__la_scratch(&j, (size_t)(batch * (2 * n * n + n)) * sizeof(double),
                         &ws);
  if (st == CMX_OK) {
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, src);
    CMX__GPU_ARG(&args, dst);
    CMX__GPU_ARG(&args, ws);
    CMX__GPU_ARG(&args, batch);
    CMX__GPU_ARG(&args, n);
    const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
        j.dev, &cmx__gpu_family_linalg, 0, CMX__LA_K_COV_SQRT);
    if (!k) st = cmx_last_status();
    cmx__gpu_cfg cfg = {.grid = {(unsigned)((batch + 63) / 64), 1, 1},
                        .block = {64, 1, 1}};
    if (st == CMX_OK) st = cmx__gpu_launch(j.op, k, &cfg, &args);
  }
  return cmx__la_finish(&j, st, out, nout);
}
