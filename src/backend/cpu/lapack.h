/* LAPACK's Fortran interface as OpenBLAS exports it (sgetrf_, dgetrf_ ...),
 * declared here so cmx needs no LAPACKE headers. Matrices are column-major;
 * every argument is passed by reference; character arguments carry their
 * hidden length (gfortran's size_t after all others). Data pointers are
 * void* so that the float and double routine of each pair have one C type
 * and backend/cpu/linalg.c can pick one from a table by dtype. */
#ifndef CMX_BACKEND_CPU_LAPACK_H
#define CMX_BACKEND_CPU_LAPACK_H

#include <stddef.h>

#include "backend/cpu/blas.h"

/* A prefixed BLAS build (see blas.h) exports these as scipy_sgetrf_ ...;
 * the declarations below and every call then use the prefixed names. */
#ifdef CMX_BLAS_PREFIX
#define sgetrf_ CMX__BLAS_NAME(sgetrf_)
#define dgetrf_ CMX__BLAS_NAME(dgetrf_)
#define sgetri_ CMX__BLAS_NAME(sgetri_)
#define dgetri_ CMX__BLAS_NAME(dgetri_)
#define sgetrs_ CMX__BLAS_NAME(sgetrs_)
#define dgetrs_ CMX__BLAS_NAME(dgetrs_)
#define sgeqrf_ CMX__BLAS_NAME(sgeqrf_)
#define dgeqrf_ CMX__BLAS_NAME(dgeqrf_)
#define sorgqr_ CMX__BLAS_NAME(sorgqr_)
#define dorgqr_ CMX__BLAS_NAME(dorgqr_)
#define sgesdd_ CMX__BLAS_NAME(sgesdd_)
#define dgesdd_ CMX__BLAS_NAME(dgesdd_)
#define strtri_ CMX__BLAS_NAME(strtri_)
#define dtrtri_ CMX__BLAS_NAME(dtrtri_)
#define spotrf_ CMX__BLAS_NAME(spotrf_)
#define dpotrf_ CMX__BLAS_NAME(dpotrf_)
#define ssyevd_ CMX__BLAS_NAME(ssyevd_)
#define dsyevd_ CMX__BLAS_NAME(dsyevd_)
#define sgeev_ CMX__BLAS_NAME(sgeev_)
#define dgeev_ CMX__BLAS_NAME(dgeev_)
#define cgesdd_ CMX__BLAS_NAME(cgesdd_)
#define cheevd_ CMX__BLAS_NAME(cheevd_)
#define cgeev_ CMX__BLAS_NAME(cgeev_)
#endif

#define CMX__LAPACK_PAIR(name, ...) \
  void s##name##_(__VA_ARGS__);     \
  void d##name##_(__VA_ARGS__);     \
  typedef void (*cmx__lapack_##name##_fn)(__VA_ARGS__)

CMX__LAPACK_PAIR(getrf, const int* m, const int* n, void* a, const int* lda,
                 int* ipiv, int* info);
CMX__LAPACK_PAIR(getri, const int* n, void* a, const int* lda, const int* ipiv,
                 void* work, const int* lwork, int* info);
CMX__LAPACK_PAIR(getrs, const char* trans, const int* n, const int* nrhs,
                 const void* a, const int* lda, const int* ipiv, void* b,
                 const int* ldb, int* info, size_t);
CMX__LAPACK_PAIR(geqrf, const int* m, const int* n, void* a, const int* lda,
                 void* tau, void* work, const int* lwork, int* info);
CMX__LAPACK_PAIR(orgqr, const int* m, const int* n, const int* k, void* a,
                 const int* lda, const void* tau, void* work, const int* lwork,
                 int* info);
CMX__LAPACK_PAIR(gesdd, const char* jobz, const int* m, const int* n, void* a,
                 const int* lda, void* s, void* u, const int* ldu, void* vt,
                 const int* ldvt, void* work, const int* lwork, int* iwork,
                 int* info, size_t);
CMX__LAPACK_PAIR(trtri, const char* uplo, const char* diag, const int* n,
                 void* a, const int* lda, int* info, size_t, size_t);
CMX__LAPACK_PAIR(potrf, const char* uplo, const int* n, void* a, const int* lda,
                 int* info, size_t);
CMX__LAPACK_PAIR(syevd, const char* jobz, const char* uplo, const int* n,
                 void* a, const int* lda, void* w, void* work, const int* lwork,
                 int* iwork, const int* liwork, int* info, size_t, size_t);
CMX__LAPACK_PAIR(geev, const char* jobvl, const char* jobvr, const int* n,
                 void* a, const int* lda, void* wr, void* wi, void* vl,
                 const int* ldvl, void* vr, const int* ldvr, void* work,
                 const int* lwork, int* info, size_t, size_t);

/* complex64 (interleaved float pairs): SVD, Hermitian and general
 * eigensolvers, with their real workspaces (rwork). */
void cgesdd_(const char* jobz, const int* m, const int* n, void* a,
             const int* lda, float* s, void* u, const int* ldu, void* vt,
             const int* ldvt, void* work, const int* lwork, float* rwork,
             int* iwork, int* info, size_t);
void cheevd_(const char* jobz, const char* uplo, const int* n, void* a,
             const int* lda, float* w, void* work, const int* lwork,
             float* rwork, const int* lrwork, int* iwork, const int* liwork,
             int* info, size_t, size_t);
void cgeev_(const char* jobvl, const char* jobvr, const int* n, void* a,
            const int* lda, void* w, void* vl, const int* ldvl, void* vr,
            const int* ldvr, void* work, const int* lwork, float* rwork,
            int* info, size_t, size_t);

#endif
