/* Tiny matrix products computed directly: each row of C is accumulated
 * over K as a scaled sum of B's rows (B and A copied first into small
 * local, padded buffers in the order the loops read them), so the inner
 * loop runs along contiguous rows and vectorises; compiled for AVX2+FMA
 * and AVX-512 too. */
#include "backend/cpu/matmul_small.h"

#include <string.h>

#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */

#define MAXD CMX__SMALL_GEMM_MAX

/* Columns go in blocks of W (B's rows copied zero-padded to a multiple of
 * W), each block a vector of W elements, two blocks at a time where there
 * are two; rows of C go four at a time (A copied as K x 4 columns per
 * group, zero-padded), so eight independent accumulators hide the
 * multiply-add latency, stay in registers, and each B vector loaded
 * serves four rows. */
#define W 8
#define SMALL_GEMM(T, nm)                                                     \
  typedef T nm##_vec __attribute__((vector_size(W * sizeof(T))));             \
  /* acc[r][j] (4 rows x NB blocks) += A4[k][r] * B[k][n0 + j W] over k */    \
  static inline __attribute__((always_inline)) void nm##_tile(                \
      nm##_vec(*acc)[2], int NB, const T* a4, const T* bp, int np, int n0,    \
      int K) {                                                                \
    for (int r = 0; r < 4; r++)                                               \
      for (int j = 0; j < 2; j++) acc[r][j] = (nm##_vec){0};                  \
    for (int k = 0; k < K; k++) {                                             \
      nm##_vec b[2];                                                          \
      for (int j = 0; j < NB; j++)                                            \
        memcpy(&b[j], bp + k * np + n0 + j * W, sizeof b[j]);                 \
      for (int r = 0; r < 4; r++)                                             \
        for (int j = 0; j < NB; j++) acc[r][j] += a4[k * 4 + r] * b[j];       \
    }                                                                         \
  }                                                                           \
  CMX__SIMD_CLONES static void nm(int M, int N, int K, T alpha, const T* A,   \
                                  bool at, int lda, const T* B, bool bt,      \
                                  int ldb, T* C, int ldc, T beta) {           \
    enum { NPMAX = (MAXD + W - 1) / W * W, MPMAX = (MAXD + 3) / 4 * 4 };      \
    int np = (N + W - 1) / W * W;                                             \
    T bp[MAXD * NPMAX], ap[MPMAX * MAXD], out[4 * 2 * W];                     \
    for (int k = 0; k < K; k++) {                                             \
      T* r = bp + k * np;                                                     \
      if (bt)                                                                 \
        for (int n = 0; n < N; n++) r[n] = B[n * ldb + k];                    \
      else                                                                    \
        memcpy(r, B + k * ldb, (size_t)N * sizeof(T));                        \
      for (int n = N; n < np; n++) r[n] = 0;                                  \
    }                                                                         \
    /* A in groups of four rows, group g as K x 4 at g * 4 * K */             \
    int mp = (M + 3) / 4 * 4;                                                 \
    for (int m = 0; m < mp; m++) {                                            \
      T* d = ap + (m / 4) * 4 * K + m % 4;                                    \
      if (m >= M)                                                             \
        for (int k = 0; k < K; k++) d[k * 4] = 0;                             \
      else if (at)                                                            \
        for (int k = 0; k < K; k++) d[k * 4] = A[k * lda + m];                \
      else                                                                    \
        for (int k = 0; k < K; k++) d[k * 4] = A[m * lda + k];                \
    }                                                                         \
    for (int m0 = 0; m0 < M; m0 += 4) {                                       \
      int nr = M - m0 < 4 ? M - m0 : 4;                                       \
      for (int n0 = 0; n0 < np;) {                                            \
        int NB = np - n0 >= 2 * W ? 2 : 1;                                    \
        nm##_vec acc[4][2];                                                   \
        if (NB == 2)                                                          \
          nm##_tile(acc, 2, ap + m0 * K, bp, np, n0, K);                      \
        else                                                                  \
          nm##_tile(acc, 1, ap + m0 * K, bp, np, n0, K);                      \
        int nw = N - n0 < NB * W ? N - n0 : NB * W;                           \
        if (beta == 0 && nw == NB * W) { /* whole vectors straight out */     \
          for (int r = 0; r < nr; r++)                                        \
            for (int j = 0; j < NB; j++) {                                    \
              nm##_vec v = alpha * acc[r][j];                                 \
              memcpy(C + (m0 + r) * ldc + n0 + j * W, &v, sizeof v);          \
            }                                                                 \
          n0 += NB * W;                                                       \
          continue;                                                           \
        }                                                                     \
        for (int r = 0; r < nr; r++) {                                        \
          memcpy(out, acc[r], sizeof acc[r]);                                 \
          T* c = C + (m0 + r) * ldc + n0;                                     \
          if (beta == 0)                                                      \
            for (int n = 0; n < nw; n++) c[n] = alpha * out[n];               \
          else                                                                \
            for (int n = 0; n < nw; n++) c[n] = alpha * out[n] + beta * c[n]; \
        }                                                                     \
        n0 += NB * W;                                                         \
      }                                                                       \
    }                                                                         \
  }
SMALL_GEMM(float, small_f32)
SMALL_GEMM(double, small_f64)

bool cmx__small_gemm(cmx_dtype ct, int M, int N, int K, double alpha,
                     const void* A, bool at, int lda, const void* B, bool bt,
                     int ldb, void* C, int ldc, double beta) {
  if (M < 1 || N < 1 || K < 1 || M > MAXD || N > MAXD || K > MAXD) return false;
  if (ct == CMX_FLOAT32) {
    small_f32(M, N, K, (float)alpha, A, at, lda, B, bt, ldb, C, ldc,
              (float)beta);
    return true;
  }
  if (ct == CMX_FLOAT64) {
    small_f64(M, N, K, alpha, A, at, lda, B, bt, ldb, C, ldc, beta);
    return true;
  }
  return false;
}
