/* The BLAS cmx's CPU kernels call, by the names of the CBLAS interface.
 *
 * Include this instead of <cblas.h>. It maps cmx's calls onto the build's
 * BLAS: the system OpenBLAS exports the plain names (cblas_sgemm, sgetrf_);
 * the OpenBLAS shipped in Python wheels (scipy-openblas32, which the
 * portable cmx wheel links) exports every name with a prefix
 * (scipy_cblas_sgemm, scipy_sgetrf_). CMake defines CMX_BLAS_PREFIX to that
 * prefix for such a build, and each name cmx uses is mapped below: a call
 * written `cblas_sgemm(...)` then reaches `scipy_cblas_sgemm`. A BLAS call
 * added to cmx needs its name added here (a missing one fails to link, it
 * never calls the wrong function). LAPACK's names are in lapack.h.
 *
 * CMX__BLAS_NAMES_ONLY: define it before including to get the name mapping
 * without <cblas.h> (blas_threads.c declares its own weak references). */
#ifndef CMX_BACKEND_CPU_BLAS_H
#define CMX_BACKEND_CPU_BLAS_H

#ifdef CMX_BLAS_PREFIX
#define CMX__BLAS_PASTE(prefix, name) prefix##name
#define CMX__BLAS_XPASTE(prefix, name) CMX__BLAS_PASTE(prefix, name)
/* `name` as the prefixed BLAS exports it. */
#define CMX__BLAS_NAME(name) CMX__BLAS_XPASTE(CMX_BLAS_PREFIX, name)

#define cblas_sgemm CMX__BLAS_NAME(cblas_sgemm)
#define cblas_dgemm CMX__BLAS_NAME(cblas_dgemm)
#define cblas_cgemm CMX__BLAS_NAME(cblas_cgemm)
#define cblas_sgemv CMX__BLAS_NAME(cblas_sgemv)
#define cblas_dgemv CMX__BLAS_NAME(cblas_dgemv)
#define cblas_cgemv CMX__BLAS_NAME(cblas_cgemv)
#define cblas_strsm CMX__BLAS_NAME(cblas_strsm)
#define cblas_dtrsm CMX__BLAS_NAME(cblas_dtrsm)
#define openblas_set_num_threads CMX__BLAS_NAME(openblas_set_num_threads)
#define openblas_get_num_threads CMX__BLAS_NAME(openblas_get_num_threads)
#endif

#ifndef CMX__BLAS_NAMES_ONLY
#include <cblas.h>
#endif

#endif
