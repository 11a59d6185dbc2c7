/* The evaluation of one factorization primitive on the GPU (linalg.c),
 * shared by its families: solves (linalg_solve.c: LU, triangular,
 * Cholesky), factorizations (linalg_factor.c: QR, LU, Eig) and the
 * symmetric eigensolver and SVD (linalg_eigen.c: cuSOLVER's Jacobi and
 * divide and conquer, cmx's own batched Jacobi for small matrices).
 *
 * A job holds what one kernel call needs: the input's dtype and matrix
 * size, the cuSOLVER/cuBLAS handles, the device scratch buffers it took
 * (released, stream-ordered, when the job finishes) and a host workspace.
 * Helpers return CMX_OK or the error (the op named); they enqueue on the
 * task's stream through the encoder. Internal to the CUDA backend.
 */
#ifndef CMX_BACKEND_CUDA_LINALG_JOB_H
#define CMX_BACKEND_CUDA_LINALG_JOB_H

#include <stdint.h>

#include "backend/cuda/solver.h"

/* The linalg family's kernels (kernels/linalg.cu), by index. */
enum {
  CMX__LA_K_TRANSPOSE,
  CMX__LA_K_PTRS,
  CMX__LA_K_TRI_ZERO,
  CMX__LA_K_EYE,
  CMX__LA_K_NONFINITE,
  CMX__LA_K_FILL_WHERE,
  CMX__LA_K_DIAG_ZERO,
  CMX__LA_K_LUF_PIV,
  CMX__LA_K_QR_R,
  CMX__LA_K_EIG_PACK,
  CMX__LA_K_COV_SQRT,
  CMX__LA_K_JACOBI_EIGH,
  CMX__LA_K_JACOBI_SVD,
  CMX__LA_K_CTRANSPOSE
};

#define CMX__LA_MAX_TMP 16
typedef struct cmx__la_job {
  const char* op;
  int dev, dbl;
  int cplx; /* complex64 (dbl 0, esz 8): SVD, Eigh, Eig only */
  int64_t esz, m, n, batch;
  cmx__solver_handles h;
  cmx__buffer* tmp[CMX__LA_MAX_TMP];
  int ntmp;
  void* host_ws; /* a host workspace (freed after the final wait) */
  size_t host_bytes;
} cmx__la_job;

/* The cuSOLVER data type of the job's elements. */
static inline int cmx__la_dtype(const cmx__la_job* j) {
  return j->cplx ? CMX__C_32F : j->dbl ? CMX__R_64F : CMX__R_32F;
}
/* The real type of the same precision (singular and Hermitian eigen
 * values), and its element size. */
static inline int cmx__la_rtype(const cmx__la_job* j) {
  return j->dbl ? CMX__R_64F : CMX__R_32F;
}
static inline int64_t cmx__la_resz(const cmx__la_job* j) {
  return j->dbl ? 8 : 4;
}
/* The index of the job's routine in a cuSOLVER typed triple. */
static inline int cmx__la_ti(const cmx__la_job* j) {
  return j->cplx ? 2 : j->dbl;
}

/* cmx__la_begin without the solver handles (kernels of cmx's own). */
cmx_status cmx__la_setup(cmx__la_job* j, const cmx_primitive* p, const char* op,
                         cmx_array a, const cmx_array* out, int nout,
                         bool* empty);
/* cmx__la_setup that takes complex64 too (j->cplx): SVD, Eigh, Eig. */
cmx_status cmx__la_setup_complex(cmx__la_job* j, const cmx_primitive* p,
                                 const char* op, cmx_array a,
                                 const cmx_array* out, int nout, bool* empty);
/* Sets up j for input a (contiguous float32/float64, checked like the
 * CPU's kernel), allocates the outputs and gets the solver handles; *empty
 * when there is nothing to factor (handles not taken). */
cmx_status cmx__la_begin(cmx__la_job* j, const cmx_primitive* p, const char* op,
                         cmx_array a, const cmx_array* out, int nout,
                         bool* empty);
/* Waits for the stream when a host workspace was used, releases the
 * scratch and marks the outputs device-written when st is CMX_OK; returns
 * st (or the wait's error). */
cmx_status cmx__la_finish(cmx__la_job* j, cmx_status st, const cmx_array* out,
                          int nout);
/* a's device address (0 when empty), unless *st is already an error. */
CUdeviceptr cmx__la_ptr(const cmx__la_job* j, cmx_array a, cmx_status* st);

/* A device scratch buffer of bytes (the job owns it). */
cmx_status cmx__la_scratch(cmx__la_job* j, size_t bytes, CUdeviceptr* out);
/* n zeroed int words (info, flags), job-owned. */
cmx_status cmx__la_words(cmx__la_job* j, int64_t n, CUdeviceptr* out);
/* The host workspace of at least bytes (j->host_ws). */
cmx_status cmx__la_host_ws(cmx__la_job* j, size_t bytes);

/* Launches kernel (CMX__LA_K_*) of the job's dtype over `work` items in
 * the family's grid-stride shape; nothing when work <= 0. */
cmx_status cmx__la_launch(const cmx__la_job* j, int kernel,
                          const cmx__gpu_args* a, int64_t work);
/* d[b] = s[b]^T for r x c matrices s[b] at b * sstep elements (complex
 * jobs: moved as 8-byte words). */
cmx_status cmx__la_transpose(const cmx__la_job* j, CUdeviceptr s, CUdeviceptr d,
                             int64_t batch, int64_t r, int64_t c,
                             int64_t sstep);
/* The same for complex64 with conjugation: d[b] = s[b]^H. */
cmx_status cmx__la_ctranspose(const cmx__la_job* j, CUdeviceptr s,
                              CUdeviceptr d, int64_t batch, int64_t r,
                              int64_t c, int64_t sstep);
/* A job-owned device array of the batch's matrix pointers: base + i *
 * step bytes. */
cmx_status cmx__la_pointers(cmx__la_job* j, CUdeviceptr base, int64_t step,
                            CUdeviceptr* out);
/* (batch, r, c) kernels: CMX__LA_K_TRI_ZERO (flag: zero the upper
 * triangle; r == c), CMX__LA_K_EYE (complex jobs: the real parts, the
 * imaginary ones left as they are). */
cmx_status cmx__la_mats(const cmx__la_job* j, int kernel, CUdeviceptr p,
                        int64_t r, int64_t c, int flag);
/* Matrix b (per elements of the job's real type: a complex64 value
 * counts 2) of p = v where flags[b]. */
cmx_status cmx__la_fill_where(const cmx__la_job* j, CUdeviceptr p, int64_t per,
                              CUdeviceptr flags, double v);
/* A job-owned copy of the input at *a with its non-finite matrices zeroed
 * (their flags set in *flags, job-owned), for the iterative solvers. */
cmx_status cmx__la_sanitized(cmx__la_job* j, CUdeviceptr in, CUdeviceptr* a,
                             CUdeviceptr* flags);
/* Empty matrices: zeros, and the identities of SVD's U and Vt (svd_uv). */
cmx_status cmx__la_fill_empty(cmx__la_job* j, const cmx_array* out, int nout,
                              bool svd_uv);

/* Library work: fn(j, ctx, stream) runs as one CALL command of the
 * encoder, under the device's solver lock, the handles bound to the
 * stream. */
typedef cmx_status (*cmx__la_lib_fn)(cmx__la_job* j, void* ctx, CUstream s);
cmx_status cmx__la_call(cmx__la_job* j, cmx__la_lib_fn fn, void* ctx);
/* One library routine per matrix: one(j, ctx, b) for every matrix b of the
 * batch in one CALL; a failing status stops it with "[op] <what> ...". */
typedef cusolverStatus_t (*cmx__la_each_fn)(cmx__la_job* j, void* ctx,
                                            int64_t b);
cmx_status cmx__la_each(cmx__la_job* j, cmx__la_each_fn one, void* ctx,
                        const char* what);
/* Fails with "[op] <msg>" when some info word of the batch is > 0 for a
 * matrix whose flag (if flags) is 0. Waits for the stream. */
cmx_status cmx__la_check_info(cmx__la_job* j, CUdeviceptr info,
                              CUdeviceptr flags, const char* msg);

#define CMX__SV_TRY(call, what)                         \
  do {                                                  \
    cusolverStatus_t r_ = (call);                       \
    if (r_) return cmx__cusolver_fail(j->op, what, r_); \
  } while (0)
#define CMX__BL_TRY(call, what)                       \
  do {                                                \
    cublasStatus_t r_ = (call);                       \
    if (r_) return cmx__cublas_fail(j->op, what, r_); \
  } while (0)
#define CMX__PTR(x) ((void*)(uintptr_t)(x))

#endif
