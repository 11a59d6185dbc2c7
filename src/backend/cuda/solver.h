/* The dense solver and FFT libraries of the CUDA toolkit, loaded at run
 * time like cuBLASLt (never a link-time dependency): cuSOLVER and cuBLAS
 * (cusolver.c) for the factorization primitives (linalg.c), cuFFT
 * (cufft.c) for FFT (fft.c). Only the entry points cmx calls are declared,
 * with the toolkit's prototypes; their enums are ints here (the values of
 * cublas_api.h, cusolver_common.h, library_types.h and cufft.h).
 *
 * Every entry point is a pair: [0] float32, [1] float64 where the library
 * has one routine per type; the SVD and Hermitian eigensolvers add [2]
 * complex64 (cusolverDnC...).
 */
#ifndef CMX_BACKEND_CUDA_SOLVER_H
#define CMX_BACKEND_CUDA_SOLVER_H

#include "backend/cuda/gpu.h"

/* ---- enum values ---- */
enum {
  CMX__R_32F = 0,
  CMX__R_64F = 1,
  CMX__C_32F = 4,
  CMX__C_64F = 5,
  CMX__FILL_LOWER = 0,
  CMX__FILL_UPPER = 1,
  CMX__OP_N = 0,
  CMX__OP_T = 1,
  CMX__SIDE_LEFT = 0,
  CMX__SIDE_RIGHT = 1,
  CMX__DIAG_NON_UNIT = 0,
  CMX__EIG_NOVECTOR = 0,
  CMX__EIG_VECTOR = 1,
  CMX__CUFFT_R2C = 0x2a,
  CMX__CUFFT_C2R = 0x2c,
  CMX__CUFFT_C2C = 0x29,
  CMX__CUFFT_FORWARD = -1,
  CMX__CUFFT_INVERSE = 1
};

typedef int cusolverStatus_t; /* CUSOLVER_STATUS_SUCCESS = 0 */
typedef struct cusolverDnContext* cusolverDnHandle_t;
typedef struct cusolverDnParams* cusolverDnParams_t;
typedef struct gesvdjInfo* gesvdjInfo_t;
typedef struct syevjInfo* syevjInfo_t;
typedef struct cublasContext* cublasHandle_t;
typedef int cufftResult; /* CUFFT_SUCCESS = 0 */
typedef int cufftHandle;

/* ---- cuSOLVER (dense) ---- */
typedef struct cmx__cusolver_api {
  cusolverStatus_t (*cusolverGetVersion)(int* v);
  cusolverStatus_t (*cusolverDnCreate)(cusolverDnHandle_t* h);
  cusolverStatus_t (*cusolverDnSetStream)(cusolverDnHandle_t h, CUstream s);
  cusolverStatus_t (*cusolverDnCreateParams)(cusolverDnParams_t* p);
  cusolverStatus_t (*cusolverDnXgetrf_bufferSize)(
      cusolverDnHandle_t h, cusolverDnParams_t p, int64_t m, int64_t n,
      int typeA, const void* A, int64_t lda, int compute, size_t* dev_bytes,
      size_t* host_bytes);
  cusolverStatus_t (*cusolverDnXgetrf)(cusolverDnHandle_t h,
                                       cusolverDnParams_t p, int64_t m,
                                       int64_t n, int typeA, void* A,
                                       int64_t lda, int64_t* ipiv, int compute,
                                       void* dbuf, size_t dbytes, void* hbuf,
                                       size_t hbytes, int* info);
  cusolverStatus_t (*cusolverDnXgetrs)(cusolverDnHandle_t h,
                                       cusolverDnParams_t p, int trans,
                                       int64_t n, int64_t nrhs, int typeA,
                                       const void* A, int64_t lda,
                                       const int64_t* ipiv, int typeB, void* B,
                                       int64_t ldb, int* info);
  cusolverStatus_t (*cusolverDnXpotrf_bufferSize)(
      cusolverDnHandle_t h, cusolverDnParams_t p, int uplo, int64_t n,
      int typeA, const void* A, int64_t lda, int compute, size_t* dev_bytes,
      size_t* host_bytes);
  cusolverStatus_t (*cusolverDnXpotrf)(cusolverDnHandle_t h,
                                       cusolverDnParams_t p, int uplo,
                                       int64_t n, int typeA, void* A,
                                       int64_t lda, int compute, void* dbuf,
                                       size_t dbytes, void* hbuf, size_t hbytes,
                                       int* info);
  cusolverStatus_t (*cusolverDnXgeqrf_bufferSize)(
      cusolverDnHandle_t h, cusolverDnParams_t p, int64_t m, int64_t n,
      int typeA, const void* A, int64_t lda, int typeTau, const void* tau,
      int compute, size_t* dev_bytes, size_t* host_bytes);
  cusolverStatus_t (*cusolverDnXgeqrf)(cusolverDnHandle_t h,
                                       cusolverDnParams_t p, int64_t m,
                                       int64_t n, int typeA, void* A,
                                       int64_t lda, int typeTau, void* tau,
                                       int compute, void* dbuf, size_t dbytes,
                                       void* hbuf, size_t hbytes, int* info);
  cusolverStatus_t (*cusolverDnXsyevd_bufferSize)(
      cusolverDnHandle_t h, cusolverDnParams_t p, int jobz, int uplo, int64_t n,
      int typeA, const void* A, int64_t lda, int typeW, const void* W,
      int compute, size_t* dev_bytes, size_t* host_bytes);
  cusolverStatus_t (*cusolverDnXsyevd)(cusolverDnHandle_t h,
                                       cusolverDnParams_t p, int jobz, int uplo,
                                       int64_t n, int typeA, void* A,
                                       int64_t lda, int typeW, void* W,
                                       int compute, void* dbuf, size_t dbytes,
                                       void* hbuf, size_t hbytes, int* info);
  cusolverStatus_t (*cusolverDnCreateGesvdjInfo)(gesvdjInfo_t* i);
  cusolverStatus_t (*cusolverDnCreateSyevjInfo)(syevjInfo_t* i);
  /* typed pairs (void* for the element pointers) */
  cusolverStatus_t (*potrfBatched[2])(cusolverDnHandle_t h, int uplo, int n,
                                      void** A, int lda, int* info, int batch);
  cusolverStatus_t (*orgqr_bufferSize[2])(cusolverDnHandle_t h, int m, int n,
                                          int k, const void* A, int lda,
                                          const void* tau, int* lwork);
  cusolverStatus_t (*orgqr[2])(cusolverDnHandle_t h, int m, int n, int k,
                               void* A, int lda, const void* tau, void* work,
                               int lwork, int* info);
  cusolverStatus_t (*gesvdj_bufferSize[3])(cusolverDnHandle_t h, int jobz,
                                           int econ, int m, int n,
                                           const void* A, int lda,
                                           const void* S, const void* U,
                                           int ldu, const void* V, int ldv,
                                           int* lwork, gesvdjInfo_t params);
  cusolverStatus_t (*gesvdj[3])(cusolverDnHandle_t h, int jobz, int econ, int m,
                                int n, void* A, int lda, void* S, void* U,
                                int ldu, void* V, int ldv, void* work,
                                int lwork, int* info, gesvdjInfo_t params);
  cusolverStatus_t (*gesvdjBatched_bufferSize[3])(
      cusolverDnHandle_t h, int jobz, int m, int n, const void* A, int lda,
      const void* S, const void* U, int ldu, const void* V, int ldv, int* lwork,
      gesvdjInfo_t params, int batch);
  cusolverStatus_t (*gesvdjBatched[3])(cusolverDnHandle_t h, int jobz, int m,
                                       int n, void* A, int lda, void* S,
                                       void* U, int ldu, void* V, int ldv,
                                       void* work, int lwork, int* info,
                                       gesvdjInfo_t params, int batch);
  cusolverStatus_t (*syevjBatched_bufferSize[3])(cusolverDnHandle_t h, int jobz,
                                                 int uplo, int n, const void* A,
                                                 int lda, const void* W,
                                                 int* lwork, syevjInfo_t params,
                                                 int batch);
  cusolverStatus_t (*syevjBatched[3])(cusolverDnHandle_t h, int jobz, int uplo,
                                      int n, void* A, int lda, void* W,
                                      void* work, int lwork, int* info,
                                      syevjInfo_t params, int batch);
  /* Optional (CUDA 12.6+; NULL when missing): the general eigensolver. */
  cusolverStatus_t (*cusolverDnXgeev_bufferSize)(
      cusolverDnHandle_t h, cusolverDnParams_t p, int jobvl, int jobvr,
      int64_t n, int typeA, const void* A, int64_t lda, int typeW,
      const void* W, int typeVL, const void* VL, int64_t ldvl, int typeVR,
      const void* VR, int64_t ldvr, int compute, size_t* dev_bytes,
      size_t* host_bytes);
  cusolverStatus_t (*cusolverDnXgeev)(cusolverDnHandle_t h,
                                      cusolverDnParams_t p, int jobvl,
                                      int jobvr, int64_t n, int typeA, void* A,
                                      int64_t lda, int typeW, void* W,
                                      int typeVL, void* VL, int64_t ldvl,
                                      int typeVR, void* VR, int64_t ldvr,
                                      int compute, void* dbuf, size_t dbytes,
                                      void* hbuf, size_t hbytes, int* info);
} cmx__cusolver_api;

/* ---- cuBLAS (the batched LU and triangular solves) ---- */
typedef struct cmx__cublas_api {
  cublasStatus_t (*cublasCreate_v2)(cublasHandle_t* h);
  cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t h, CUstream s);
  const char* (*cublasGetStatusName)(cublasStatus_t s);
  cublasStatus_t (*getrfBatched[2])(cublasHandle_t h, int n, void** A, int lda,
                                    int* P, int* info, int batch);
  cublasStatus_t (*getriBatched[2])(cublasHandle_t h, int n, void** A, int lda,
                                    const int* P, void** C, int ldc, int* info,
                                    int batch);
  cublasStatus_t (*getrsBatched[2])(cublasHandle_t h, int trans, int n,
                                    int nrhs, void** A, int lda, const int* P,
                                    void** B, int ldb, int* info, int batch);
  cublasStatus_t (*trsm[2])(cublasHandle_t h, int side, int uplo, int trans,
                            int diag, int m, int n, const void* alpha,
                            const void* A, int lda, void* B, int ldb);
  cublasStatus_t (*trsmBatched[2])(cublasHandle_t h, int side, int uplo,
                                   int trans, int diag, int m, int n,
                                   const void* alpha, void** A, int lda,
                                   void** B, int ldb, int batch);
} cmx__cublas_api;

/* ---- cuFFT ---- */
typedef struct cmx__cufft_api {
  cufftResult (*cufftGetVersion)(int* v);
  cufftResult (*cufftCreate)(cufftHandle* plan);
  cufftResult (*cufftDestroy)(cufftHandle plan);
  cufftResult (*cufftSetStream)(cufftHandle plan, CUstream s);
  cufftResult (*cufftSetAutoAllocation)(cufftHandle plan, int on);
  cufftResult (*cufftSetWorkArea)(cufftHandle plan, void* work);
  cufftResult (*cufftMakePlanMany64)(cufftHandle plan, int rank, long long* n,
                                     long long* inembed, long long istride,
                                     long long idist, long long* onembed,
                                     long long ostride, long long odist,
                                     int type, long long batch,
                                     size_t* work_bytes);
  cufftResult (*cufftExecC2C)(cufftHandle plan, void* in, void* out, int dir);
  cufftResult (*cufftExecR2C)(cufftHandle plan, void* in, void* out);
  cufftResult (*cufftExecC2R)(cufftHandle plan, void* in, void* out);
} cmx__cufft_api;

extern cmx__cusolver_api cmx__sv;
extern cmx__cublas_api cmx__bl;
extern cmx__cufft_api cmx__ff;

/* The per-device handles of cuSOLVER and cuBLAS, created at first use and
 * kept for the process. A handle binds one stream at a time, so users hold
 * cmx__solver_lock while they set the stream and enqueue. Fails with
 * "[op] needs cuSOLVER, which could not be loaded: <why>" (or cuBLAS). */
typedef struct cmx__solver_handles {
  cusolverDnHandle_t dn;
  cusolverDnParams_t params;
  gesvdjInfo_t gesvdj;
  syevjInfo_t syevj;
  cublasHandle_t blas;
} cmx__solver_handles;
cmx_status cmx__solver_get(int dev, const char* op, cmx__solver_handles* out);
void cmx__solver_lock(int dev);
void cmx__solver_unlock(int dev);
/* Errors naming the failing library call. */
cmx_status cmx__cusolver_fail(const char* op, const char* what,
                              cusolverStatus_t r);
cmx_status cmx__cublas_fail(const char* op, const char* what, cublasStatus_t r);
/* cuFFT, loaded at first use: CMX_OK, or "[op] needs cuFFT, which could
 * not be loaded: <why>". */
cmx_status cmx__cufft_load(const char* op);
cmx_status cmx__cufft_fail(const char* op, const char* what, cufftResult r);

#endif
