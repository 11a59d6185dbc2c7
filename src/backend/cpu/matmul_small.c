/* Tiny matrix products computed directly: each row of C is accumulated
 * over K as a scaled sum of B's rows (B copied first into a small local,
 * padded buffer in the order the loops read it; A read in place, four rows
 * at a time), so the inner loop runs along contiguous rows and vectorises;
 * compiled for AVX2+FMA and AVX-512 too. */
#include "backend/cpu/matmul_small.h"

#include <stddef.h>
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
  /* acc[r][j] (4 rows x NB blocks) += a[r rs + k ks] * B[k][n0 + j W] over   \
   * k: A's four rows read in place (rs, ks: A's strides) or packed */        \
  static inline __attribute__((always_inline)) void nm##_tile(                \
      nm##_vec(*acc)[2], int NB, const T* a, int rs, int ks, const T* bp,     \
      int np, int n0, int K) {                                                \
    for (int r = 0; r < 4; r++)                                               \
      for (int j = 0; j < 2; j++) acc[r][j] = (nm##_vec){0};                  \
    for (int k = 0; k < K; k++) {                                             \
      nm##_vec b[2];                                                          \
      for (int j = 0; j < NB; j++)                                            \
        memcpy(&b[j], bp + k * np + n0 + j * W, sizeof b[j]);                 \
      const T* ak = a + (ptrdiff_t)k * ks;                                    \
      for (int r = 0; r < 4; r++)                                             \
        for (int j = 0; j < NB; j++) acc[r][j] += ak[r * rs] * b[j];          \
    }                                                                         \
  }                                                                           \
  CMX__SIMD_CLONES static void nm(int M, int N, int K, T alpha, const T* A,   \
                                  bool at, int lda, const T* B, bool bt,      \
                                  int ldb, T* C, int ldc, T beta) {           \
    enum { NPMAX = (MAXD + W - 1) / W * W };                                  \
    int np = (N + W - 1) / W * W;                                             \
    T bp[MAXD * NPMAX], ap[4 * MAXD], out[4 * 2 * W];                         \
    for (int k = 0; k < K; k++) {                                             \
      T* r = bp + k * np;                                                     \
      if (bt)                                                                 \
        for (int n = 0; n < N; n++) r[n] = B[n * ldb + k];                    \
      else                                                                    \
        memcpy(r, B + k * ldb, (size_t)N * sizeof(T));                        \
      for (int n = N; n < np; n++) r[n] = 0;                                  \
    }                                                                         \
    /* Whole groups of four rows of A are read in place: copying them first   \
     * made a batch of 8x8 @ (8x8).T products 1.25x slower. The last group,   \
     * when M is not a multiple of 4, is copied as K x 4, zero-padded. The    \
     * products and their order are the same either way. */                   \
    int mfull = M / 4 * 4, mend = M > mfull ? mfull + 4 : mfull;              \
    for (int m = mfull; m < mend; m++) {                                      \
      T* d = ap + m % 4;                                                      \
      if (m >= M)                                                             \
        for (int k = 0; k < K; k++) d[k * 4] = 0;                             \
      else if (at)                                                            \
        for (int k = 0; k < K; k++) d[k * 4] = A[k * lda + m];                \
      else                                                                    \
        for (int k = 0; k < K; k++) d[k * 4] = A[m * lda + k];                \
    }                                                                         \
    for (int m0 = 0; m0 < M; m0 += 4) {                                       \
      int nr = M - m0 < 4 ? M - m0 : 4;                                       \
      const T* a = ap;                                                        \
      int rs = 1, ks = 4;                                                     \
      if (m0 < mfull) {                                                       \
        a = at ? A + m0 : A + (ptrdiff_t)m0 * lda;                            \
        rs = at ? 1 : lda;                                                    \
        ks = at ? lda : 1;                                                    \
      }                                                                       \
      for (int n0 = 0; n0 < np;) {                                            \
        int NB = np - n0 >= 2 * W ? 2 : 1;                                    \
        nm##_vec acc[4][2];                                                   \
        if (NB == 2)                                                          \
          nm##_tile(acc, 2, a, rs, ks, bp, np, n0, K);                        \
        else                                                                  \
          nm##_tile(acc, 1, a, rs, ks, bp, np, n0, K);                        \
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
