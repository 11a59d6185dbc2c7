/* GPU kernels of the factorization primitives (primitives/linalg.h)
 * through cuSOLVER and cuBLAS (cusolver.c), with the CPU kernels'
 * semantics (backend/cpu/linalg.c): the same errors ("Singular matrix.",
 * "Matrix is not positive definite.", "... did not converge."), NaN
 * results for non-finite input to SVD and the eigensolvers.
 *
 * By family: linalg_solve.c (Inverse, Solve, SolveTriangular, Cholesky),
 * linalg_factor.c (QR, LU, Eig), linalg_eigen.c (Eigh, SVD, CovSqrt);
 * this file holds the kernel family (kernels/linalg.cu) and the job
 * (linalg_job.h) they share.
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
 * Xgeqrf + orgqr, gesvdj, Xgeev). Eigh and SVD of small matrices take
 * cmx's own batched Jacobi kernels (linalg_eigen.c) or cuSOLVER's
 * syevjBatched / gesvdjBatched, a single matrix too, so that a matrix
 * gets the same eigenvectors (signs) alone and in a batch (vmap equals
 * the loop). Every library call goes through the encoder as a CALL
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
#include "backend/cuda/linalg_job.h"

static const char* const k_kernels[] = {
    "cmx_la_transpose",  "cmx_la_ptrs",       "cmx_la_tri_zero",
    "cmx_la_eye",        "cmx_la_nonfinite",  "cmx_la_fill_where",
    "cmx_la_diag_zero",  "cmx_la_luf_piv",    "cmx_la_qr_r",
    "cmx_la_eig_pack",   "cmx_la_cov_sqrt",   "cmx_la_jacobi_eigh",
    "cmx_la_jacobi_svd", "cmx_la_ctranspose", NULL};
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
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 2,
    .variant = la_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 8}};

/* ---------------- one evaluation ---------------- */
/* A device scratch buffer of bytes, released when the job ends
 * (stream-ordered). */
cmx_status cmx__la_scratch(cmx__la_job* j, size_t bytes, CUdeviceptr* out) {
  *out = 0;
  if (j->ntmp == CMX__LA_MAX_TMP)
    return cmx__error(CMX_ERR_RUNTIME, "[%s] too many scratch buffers", j->op);
  cmx__buffer* b = cmx__device_hooks->alloc_device(bytes ? bytes : 16, j->dev);
  if (!b) return cmx_last_status();
  j->tmp[j->ntmp++] = b;
  *out = b->dev;
  return CMX_OK;
}

/* Zeroed int words (info, flags). */
cmx_status cmx__la_words(cmx__la_job* j, int64_t n, CUdeviceptr* out) {
  cmx_status st = cmx__la_scratch(j, (size_t)n * sizeof(int), out);
  if (st == CMX_OK) st = cmx__gpu_memset(j->op, *out, 0, 4, (size_t)n);
  return st;
}

static void job_end(cmx__la_job* j) {
  for (int i = 0; i < j->ntmp; i++) cmx__buffer_release(j->tmp[i]);
  j->ntmp = 0;
  free(j->host_ws);
  j->host_ws = NULL;
}

/* Kernel of variant v (0 float32, 1 float64). */
static cmx_status launch_v(const cmx__la_job* j, int v, int kernel,
                           const cmx__gpu_args* a, int64_t work) {
  if (work <= 0) return CMX_OK;
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(j->dev, &cmx__gpu_family_linalg, v, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch(j->op, k, &cfg, a);
}

cmx_status cmx__la_launch(const cmx__la_job* j, int kernel,
                          const cmx__gpu_args* a, int64_t work) {
  return launch_v(j, j->dbl, kernel, a, work);
}

/* The transposes: kernel (CMX__LA_K_TRANSPOSE, CMX__LA_K_CTRANSPOSE) of
 * variant v. */
static cmx_status transpose_k(const cmx__la_job* j, int v, int kernel,
                              CUdeviceptr s, CUdeviceptr d, int64_t batch,
                              int64_t r, int64_t c, int64_t sstep) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = batch, rr = r, cc = c, ss = sstep;
  CMX__GPU_ARG(&a, s);
  CMX__GPU_ARG(&a, d);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, rr);
  CMX__GPU_ARG(&a, cc);
  CMX__GPU_ARG(&a, ss);
  return launch_v(j, v, kernel, &a, batch * r * c);
}

/* d[b] = s[b]^T for r x c matrices s[b] at b * sstep elements; complex64
 * through the float64 variant (8-byte words, moved bit for bit). */
cmx_status cmx__la_transpose(const cmx__la_job* j, CUdeviceptr s, CUdeviceptr d,
                             int64_t batch, int64_t r, int64_t c,
                             int64_t sstep) {
  return transpose_k(j, j->cplx ? 1 : j->dbl, CMX__LA_K_TRANSPOSE, s, d, batch,
                     r, c, sstep);
}

cmx_status cmx__la_ctranspose(const cmx__la_job* j, CUdeviceptr s,
                              CUdeviceptr d, int64_t batch, int64_t r,
                              int64_t c, int64_t sstep) {
  return transpose_k(j, 0, CMX__LA_K_CTRANSPOSE, s, d, batch, r, c, sstep);
}

/* A device array of the batch's matrix pointers: base + i * step bytes. */
cmx_status cmx__la_pointers(cmx__la_job* j, CUdeviceptr base, int64_t step,
                            CUdeviceptr* out) {
  cmx_status st = cmx__la_scratch(j, (size_t)j->batch * 8, out);
  if (st != CMX_OK) return st;
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long s = step, n = j->batch;
  CMX__GPU_ARG(&a, *out);
  CMX__GPU_ARG(&a, base);
  CMX__GPU_ARG(&a, s);
  CMX__GPU_ARG(&a, n);
  return cmx__la_launch(j, CMX__LA_K_PTRS, &a, n);
}

/* (batch, r, c) kernels: tri_zero (flag: zero the upper triangle), eye. */
cmx_status cmx__la_mats(const cmx__la_job* j, int kernel, CUdeviceptr p,
                        int64_t r, int64_t c, int flag) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long bb = j->batch, rr = r, cc = c;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, bb);
  CMX__GPU_ARG(&a, rr);
  int step = j->cplx ? 2 : 1; /* complex: the real parts */
  if (kernel == CMX__LA_K_EYE) {
    CMX__GPU_ARG(&a, cc);
    CMX__GPU_ARG(&a, step);
  }
  if (kernel == CMX__LA_K_TRI_ZERO) CMX__GPU_ARG(&a, flag);
  return cmx__la_launch(j, kernel, &a, j->batch * r * c);
}

/* flags[b] = 1 where matrix b (per elements) of p is not finite. */
static cmx_status nonfinite(const cmx__la_job* j, CUdeviceptr p, int64_t per,
                            CUdeviceptr flags) {
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  long long pp = per, total = per * j->batch;
  CMX__GPU_ARG(&a, p);
  CMX__GPU_ARG(&a, pp);
  CMX__GPU_ARG(&a, total);
  CMX__GPU_ARG(&a, flags);
  return cmx__la_launch(j, CMX__LA_K_NONFINITE, &a, total);
}

/* Matrix b (per elements) of p = v where flags[b]. */
cmx_status cmx__la_fill_where(const cmx__la_job* j, CUdeviceptr p, int64_t per,
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
  return cmx__la_launch(j, CMX__LA_K_FILL_WHERE, &a, total);
}

/* ---------------- library calls ---------------- */
typedef struct {
  cmx__la_job* j;
  cmx__la_lib_fn fn;
  void* ctx;
} lib_call;

static cmx_status lib_run(void* ctx, CUstream s) {
  lib_call* c = ctx;
  cmx__la_job* j = c->j;
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

cmx_status cmx__la_call(cmx__la_job* j, cmx__la_lib_fn fn, void* ctx) {
  lib_call c = {j, fn, ctx};
  return cmx__gpu_call(j->op, lib_run, &c);
}

typedef struct {
  cmx__la_each_fn one;
  void* ctx;
  const char* what;
} each_ctx;

static cmx_status each_run(cmx__la_job* j, void* ctx, CUstream s) {
  (void)s;
  each_ctx* c = ctx;
  for (int64_t b = 0; b < j->batch; b++)
    CMX__SV_TRY(c->one(j, c->ctx, b), c->what);
  return CMX_OK;
}

cmx_status cmx__la_each(cmx__la_job* j, cmx__la_each_fn one, void* ctx,
                        const char* what) {
  each_ctx c = {one, ctx, what};
  return cmx__la_call(j, each_run, &c);
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
cmx_status cmx__la_check_info(cmx__la_job* j, CUdeviceptr info,
                              CUdeviceptr flags, const char* msg) {
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

cmx_status cmx__la_host_ws(cmx__la_job* j, size_t bytes) {
  if (bytes <= j->host_bytes) return CMX_OK;
  void* p = realloc(j->host_ws, bytes);
  if (!p) return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory.", j->op);
  j->host_ws = p;
  j->host_bytes = bytes;
  return CMX_OK;
}

/* A copy of the input at *a with its non-finite matrices zeroed (their
 * flags set in *flags), for the iterative solvers. */
cmx_status cmx__la_sanitized(cmx__la_job* j, CUdeviceptr in, CUdeviceptr* a,
                             CUdeviceptr* flags) {
  int64_t per = j->m * j->n;
  cmx_status st = cmx__la_scratch(j, (size_t)(per * j->batch * j->esz), a);
  if (st == CMX_OK) st = cmx__la_words(j, j->batch, flags);
  if (st == CMX_OK)
    st = cmx__gpu_copy_d2d(j->op, *a, in, (size_t)(per * j->batch * j->esz));
  if (j->cplx) per *= 2; /* the kernels see float pairs */
  if (st == CMX_OK) st = nonfinite(j, *a, per, *flags);
  if (st == CMX_OK) st = cmx__la_fill_where(j, *a, per, *flags, 0.0);
  return st;
}

/* Sets up j for input a (checked like the CPU's kernel; complex64 where
 * cplx_ok) and allocates the outputs; *empty when there is nothing to
 * factor. */
static cmx_status setup(cmx__la_job* j, const cmx_primitive* p, const char* op,
                        cmx_array a, const cmx_array* out, int nout,
                        bool* empty, bool cplx_ok) {
  memset(j, 0, sizeof *j);
  j->op = op;
  j->dev = cmx_primitive_stream(p).device.index;
  bool cplx = cplx_ok && a->dtype == CMX_COMPLEX64;
  if (!cmx_kernel_is_contiguous(a) ||
      (a->dtype != CMX_FLOAT32 && a->dtype != CMX_FLOAT64 && !cplx))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] expects contiguous float32%s float64%s "
                            "input.",
                            op, cplx_ok ? "," : " or",
                            cplx_ok ? " or complex64" : "");
  j->dbl = a->dtype == CMX_FLOAT64;
  j->cplx = cplx;
  j->esz = j->dbl || cplx ? 8 : 4;
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
  return CMX_OK;
}

cmx_status cmx__la_setup(cmx__la_job* j, const cmx_primitive* p, const char* op,
                         cmx_array a, const cmx_array* out, int nout,
                         bool* empty) {
  return setup(j, p, op, a, out, nout, empty, false);
}

cmx_status cmx__la_setup_complex(cmx__la_job* j, const cmx_primitive* p,
                                 const char* op, cmx_array a,
                                 const cmx_array* out, int nout, bool* empty) {
  return setup(j, p, op, a, out, nout, empty, true);
}

cmx_status cmx__la_begin(cmx__la_job* j, const cmx_primitive* p, const char* op,
                         cmx_array a, const cmx_array* out, int nout,
                         bool* empty) {
  cmx_status st = cmx__la_setup(j, p, op, a, out, nout, empty);
  if (st != CMX_OK || *empty) return st;
  return cmx__solver_get(j->dev, op, &j->h);
}

CUdeviceptr cmx__la_ptr(const cmx__la_job* j, cmx_array a, cmx_status* st) {
  CUdeviceptr p = 0;
  if (*st == CMX_OK && a->size) *st = cmx__gpu_ptr(a, j->dev, &p);
  return p;
}

cmx_status cmx__la_finish(cmx__la_job* j, cmx_status st, const cmx_array* out,
                          int nout) {
  if (j->host_ws && st == CMX_OK) { /* wait before the host workspace goes */
    int dummy;
    CUdeviceptr w;
    st = cmx__la_scratch(j, sizeof(int), &w);
    read_ctx c = {w, sizeof dummy, &dummy};
    if (st == CMX_OK) st = cmx__gpu_call(j->op, read_run, &c);
  }
  job_end(j);
  for (int i = 0; st == CMX_OK && i < nout; i++)
    cmx_kernel_mark_device_written(out[i]);
  return st;
}

/* Empty matrices: zeros, and the identities of SVD's U and Vt. */
cmx_status cmx__la_fill_empty(cmx__la_job* j, const cmx_array* out, int nout,
                              bool svd_uv) {
  cmx_status st = CMX_OK;
  for (int i = 0; st == CMX_OK && i < nout; i++) {
    CUdeviceptr o = cmx__la_ptr(j, out[i], &st);
    if (o)
      st = cmx__gpu_memset(
          j->op, o, 0, 1, (size_t)out[i]->size * cmx_dtype_size(out[i]->dtype));
  }
  if (st == CMX_OK && svd_uv && j->batch) {
    CUdeviceptr u = cmx__la_ptr(j, out[0], &st),
                vt = cmx__la_ptr(j, out[2], &st);
    if (u) st = cmx__la_mats(j, CMX__LA_K_EYE, u, j->m, j->m, 0);
    if (st == CMX_OK && vt)
      st = cmx__la_mats(j, CMX__LA_K_EYE, vt, j->n, j->n, 0);
  }
  return st;
}
