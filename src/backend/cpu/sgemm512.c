/* cmx's float32 product for the convolution's tiles on AVX-512 CPUs; see
 * sgemm512.h for why it exists.
 *
 * C is computed in panels of up to 64 columns (four 16-float vectors, the
 * last one masked when n is not a multiple of 16) and, within a panel, in
 * micro-tiles of MR rows whose MR x NV accumulators stay in registers
 * while the inner dimension runs: each step broadcasts one A value per row
 * and loads NV vectors of B's row, then does MR * NV fused multiply-adds
 * (6 x 4 = 24 per step at full width: the 32 vector registers hold the 24
 * accumulators, the 4 B vectors and the broadcast). The inner dimension
 * goes in blocks of KC so that a panel's block of B (KC x 64 floats, 32
 * KiB) stays in L1 while every micro-tile of rows passes over it; between
 * blocks the accumulators go through C, which changes nothing in the
 * rounding (a float stored and reloaded is the same float), so each C
 * element is one chain of fused multiply-adds over p in order.
 */
#include "backend/cpu/sgemm512.h"

#include <pthread.h>
#include <string.h>

#include "core/internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define SG512 __attribute__((target("avx512f,fma")))
#define SG512_INLINE \
  __attribute__((target("avx512f,fma"), always_inline)) static inline

/* Inner-dimension block: KC rows of a 64-column B panel are 32 KiB. */
enum { KC = 128 };

/* One micro-tile: C[0..MR) x [0..16 NV) (+)= A[0..MR) x [0..kc) times
 * B[0..kc) x [0..16 NV), the last vector's columns masked by `last`.
 * MR and NV are constants at every call (the loops unroll and the
 * accumulators live in registers). */
SG512_INLINE void micro(const int MR, const int NV, int64_t kc,
                        const float* const* ar, int64_t sak, const float* b,
                        int64_t ldb, float* c, int64_t ldc, __mmask16 last,
                        bool load_c) {
  __m512 acc[8][4];
  const float* r[8];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) r[i] = ar[i];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      const float* ci = c + i * ldc + 16 * v;
      acc[i][v] = !load_c       ? _mm512_setzero_ps()
                  : v == NV - 1 ? _mm512_maskz_loadu_ps(last, ci)
                                : _mm512_loadu_ps(ci);
    }
  for (int64_t p = 0, off = 0; p < kc; p++, off += sak) {
    __m512 bv[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)
                          : _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      __m512 av = _mm512_set1_ps(r[i][off]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++)
        acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
    }
    b += ldb;
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      float* ci = c + i * ldc + 16 * v;
      if (v == NV - 1)
        _mm512_mask_storeu_ps(ci, last, acc[i][v]);
      else
        _mm512_storeu_ps(ci, acc[i][v]);
    }
}

/* All m rows of one panel (NV vectors wide) for one inner block: full
 * micro-tiles of MR rows, then one of the remaining rows. Row i of A
 * starts at rows[i] + roff when rows is given, else at a + i * sam. */
#define DEFINE_PANEL(NAME, NV, MR)                                            \
  SG512 static void NAME(int64_t m, int64_t kc, const float* a, int64_t sam,  \
                         const float* const* rows, int64_t roff, int64_t sak, \
                         const float* b, int64_t ldb, float* c, int64_t ldc,  \
                         __mmask16 last, bool load_c) {                       \
    const float* ar[MR];                                                      \
    for (int64_t i = 0; i < m; i += MR) {                                     \
      const int64_t mr = m - i < MR ? m - i : MR;                             \
      for (int64_t q = 0; q < mr; q++)                                        \
        ar[q] = rows ? rows[i + q] + roff : a + (i + q) * sam;                \
      float* ci = c + i * ldc;                                                \
      switch (mr) {                                                           \
        case MR:                                                              \
          micro(MR, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);          \
          break;                                                              \
        case 7:                                                               \
          micro(7, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        case 5:                                                               \
          micro(5, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        case 4:                                                               \
          micro(4, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        case 3:                                                               \
          micro(3, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        case 2:                                                               \
          micro(2, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        case 1:                                                               \
          micro(1, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
        default: /* 6 below MR = 8 */                                         \
          micro(6, NV, kc, ar, sak, b, ldb, ci, ldc, last, load_c);           \
          break;                                                              \
      }                                                                       \
    }                                                                         \
  }
/* Rows per micro-tile: 6 at four vectors (24 accumulators), 8 below. */
DEFINE_PANEL(panel4, 4, 6)
DEFINE_PANEL(panel3, 3, 8)
DEFINE_PANEL(panel2, 2, 8)
DEFINE_PANEL(panel1, 1, 8)
#undef DEFINE_PANEL

typedef void (*panel_fn)(int64_t, int64_t, const float*, int64_t,
                         const float* const*, int64_t, int64_t, const float*,
                         int64_t, float*, int64_t, __mmask16, bool);

static bool g_avail;
static pthread_once_t g_avail_once = PTHREAD_ONCE_INIT;

static void avail_init(void) {
  __builtin_cpu_init();
  g_avail = __builtin_cpu_supports("avx512f") && !cmx__env_get()->conv_blas;
}

bool cmx__sgemm512_available(void) {
  pthread_once(&g_avail_once, avail_init);
  return g_avail;
}

/* The panels and inner blocks of cmx__sgemm512 and cmx__sgemm512_rows. */
static void run(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam,
                const float* const* rows, int64_t roff, int64_t sak,
                const float* b, int64_t ldb, float* c, int64_t ldc,
                bool accumulate) {
  if (!cmx__sgemm512_available() || m <= 0 || n <= 0) return;
  if (k <= 0) { /* empty sums */
    if (!accumulate)
      for (int64_t i = 0; i < m; i++)
        memset(c + i * ldc, 0, (size_t)n * sizeof(float));
    return;
  }
  static const panel_fn panels[4] = {panel1, panel2, panel3, panel4};
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    const int64_t nj = n - j0 < 64 ? n - j0 : 64;
    const int nv = (int)((nj + 15) / 16);
    const int tail = (int)(nj - 16 * (nv - 1)); /* 1..16 */
    const __mmask16 last = (__mmask16)((1u << tail) - 1u);
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
      const int64_t kc = k - p0 < KC ? k - p0 : KC;
      panels[nv - 1](m, kc, rows ? NULL : a + p0 * sak, sam, rows,
                     roff + p0 * sak, sak, b + p0 * ldb + j0, ldb, c + j0, ldc,
                     last, accumulate || p0 > 0);
    }
  }
}

void cmx__sgemm512(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam,
                   int64_t sak, const float* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
  run(m, n, k, a, sam, NULL, 0, sak, b, ldb, c, ldc, accumulate);
}

void cmx__sgemm512_rows(int64_t m, int64_t n, int64_t k,
                        const float* const* rows, int64_t roff, const float* b,
                        int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  run(m, n, k, NULL, 0, rows, roff, 1, b, ldb, c, ldc, accumulate);
}

#else /* not x86-64 GCC/clang: callers keep OpenBLAS */

bool cmx__sgemm512_available(void) {
  return false;
}

void cmx__sgemm512(int64_t m, int64_t n, int64_t k, const float* a, int64_t sam,
                   int64_t sak, const float* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
  (void)m, (void)n, (void)k, (void)a, (void)sam, (void)sak, (void)b, (void)ldb,
      (void)c, (void)ldc, (void)accumulate;
}

void cmx__sgemm512_rows(int64_t m, int64_t n, int64_t k,
                        const float* const* rows, int64_t roff, const float* b,
                        int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  (void)m, (void)n, (void)k, (void)rows, (void)roff, (void)b, (void)ldb,
      (void)c, (void)ldc, (void)accumulate;
}

#endif
