/* Tiny matrix products computed directly: each row of C is accumulated
 * over K as a scaled sum of B's rows (copied first into a small local,
 * padded buffer, transposed when B is stored transposed), so the inner
 * loop runs along contiguous rows and vectorises; compiled for AVX2+FMA
 * and AVX-512 too. */
#include "backend/cpu/matmul_small.h"

#include <string.h>

#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */

#define MAXD CMX__SMALL_GEMM_MAX

/* Columns go in blocks of W (B's rows copied zero-padded to a multiple of
 * W), each block a vector of W elements; rows of C go four at a time, so
 * four independent accumulators per block hide the multiply-add latency
 * and stay in registers. */
#define W 8
#define SMALL_GEMM(T, nm)                                                      \
  typedef T nm##_vec __attribute__((vector_size(W * sizeof(T))));              \
  CMX__SIMD_CLONES static void nm(int M, int N, int K, T alpha, const T* A,    \
                                  bool at, int lda, const T* B, bool bt,       \
                                  int ldb, T* C, int ldc, T beta) {            \
    enum { NPMAX = (MAXD + W - 1) / W * W };                                   \
    int np = (N + W - 1) / W * W;                                              \
    T bp[MAXD * NPMAX], out[4 * W];                                            \
    for (int k = 0; k < K; k++) {                                              \
      T* r = bp + k * np;                                                      \
      for (int n = 0; n < N; n++) r[n] = bt ? B[n * ldb + k] : B[k * ldb + n]; \
      for (int n = N; n < np; n++) r[n] = 0;                                   \
    }                                                                          \
    for (int n0 = 0; n0 < np; n0 += W) {                                       \
      int nw = N - n0 < W ? N - n0 : W;                                        \
      for (int m0 = 0; m0 < M; m0 += 4) {                                      \
        int nr = M - m0 < 4 ? M - m0 : 4;                                      \
        nm##_vec acc[4] = {{0}, {0}, {0}, {0}};                                \
        for (int k = 0; k < K; k++) {                                          \
          nm##_vec b;                                                          \
          memcpy(&b, bp + k * np + n0, sizeof b);                              \
          for (int r = 0; r < 4; r++) {                                        \
            int m = m0 + (r < nr ? r : 0); /* spare lanes redo row m0 */       \
            acc[r] += (at ? A[k * lda + m] : A[m * lda + k]) * b;              \
          }                                                                    \
        }                                                                      \
        memcpy(out, acc, sizeof acc);                                          \
        for (int r = 0; r < nr; r++) {                                         \
          T* c = C + (m0 + r) * ldc + n0;                                      \
          const T* o = out + r * W;                                            \
          if (beta == 0)                                                       \
            for (int n = 0; n < nw; n++) c[n] = alpha * o[n];                  \
          else                                                                 \
            for (int n = 0; n < nw; n++) c[n] = alpha * o[n] + beta * c[n];    \
        }                                                                      \
      }                                                                        \
    }                                                                          \
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
