/* The Scan kernel: cumulative sum, product, max, min and log-add-exp.
 *
 * The input is first copied into the row-major output (or donated to it),
 * then scanned in place. With the output seen as (outer, n, inner) and the
 * scan along n: inner == 1 scans each row sequentially; otherwise blocks
 * of up to BLOCK adjacent columns are scanned together with one
 * accumulator per column, so the inner loop runs over contiguous memory
 * and vectorises. (outer, block) tasks run on the thread pool. The
 * block's accumulators lie 2 KB from its rows modulo 4 KB
 * (cmx__red_lanes_near): each step loads a row and the accumulators and
 * stores both, and on the stack their distance from the rows depended on
 * the stack's depth (cummax over axis 0 of (2, 1024, 1024) f32, rows 4 MB
 * apart, ran 1.07-1.10x slower after unrelated changes moved it).
 *
 * Accumulators: integer sums and products in unsigned arithmetic (wrapping
 * without undefined behaviour, the same bits as two's complement),
 * float16/bfloat16 in float32, max/min propagate NaN (as NumPy's
 * maximum.accumulate), complex max/min order by (real, imag).
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions), so NaN-aware selects need no branches.
 * Values are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "primitives/scan.h"

#include <complex.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/reduce.h" /* cmx__red_lanes_near */

#define BLOCK 256

typedef void (*scan_fn)(char* p, int64_t n, int64_t inner, int64_t len,
                        int reverse, int inclusive);
/* `rows` adjacent contiguous rows of n elements, each scanned as scan_fn
 * does with inner == len == 1 (one call for many rows: short rows would
 * spend more on the call than on the scan). */
typedef void (*rows_fn)(char* p, int64_t rows, int64_t n, int reverse,
                        int inclusive);

/* Several narrow scans side by side (see NAME_multi). */
typedef void (*multi_fn)(char* p, int64_t nout, int64_t ostride, int64_t n,
                         int64_t inner, int reverse, int inclusive);
#define MULTI_G 8     /* outer blocks side by side */
#define MULTI_INNER 4 /* the widest inner size taking that path */

/* One element e of a scan with accumulator acc: inclusive (e becomes the
 * running value with e) or exclusive (e becomes the running value before
 * it). Callers test `inclusive` outside their loops. */
#define STEP_INCL(OP, LOAD, STORE, acc, e) \
  do {                                     \
    (acc) = OP((acc), LOAD(e));            \
    (e) = STORE(acc);                      \
  } while (0)
#define STEP_EXCL(A, OP, LOAD, STORE, acc, e) \
  do {                                        \
    A x_ = LOAD(e);                           \
    (e) = STORE(acc);                         \
    (acc) = OP((acc), x_);                    \
  } while (0)

/* Scans `len` adjacent columns starting at p over n rows `inner` elements
 * apart (and NAME_rows: see rows_fn; NAME_multi: see multi_fn). T:
 * storage, A: accumulator. */
#define SCAN_FN(NAME, T, A, LOAD, STORE, OP, IDENT)                            \
  static inline __attribute__((always_inline)) void NAME##_rows_n(             \
      T* p, int64_t rows, int64_t n, int reverse, int inclusive) {             \
    int64_t r = 0;                                                             \
    /* 8 rows side by side for the float selects and log-add-exp:              \
     * independent chains that vectorise (selects) or overlap (library         \
     * calls); sums and products run fastest one row after another */          \
    for (; ROWS8_##OP && r + 8 <= rows; r += 8, p += 8 * n) {                  \
      A acc[8];                                                                \
      for (int k = 0; k < 8; k++) acc[k] = IDENT;                              \
      for (int64_t i = 0; i < n; i++) {                                        \
        int64_t c = reverse ? n - 1 - i : i;                                   \
        if (inclusive) {                                                       \
          _Pragma("GCC unroll 1") for (int k = 0; k < 8; k++)                  \
              STEP_INCL(OP, LOAD, STORE, acc[k], p[k * n + c]);                \
        } else {                                                               \
          _Pragma("GCC unroll 1") for (int k = 0; k < 8; k++)                  \
              STEP_EXCL(A, OP, LOAD, STORE, acc[k], p[k * n + c]);             \
        }                                                                      \
      }                                                                        \
    }                                                                          \
    for (; r < rows; r++, p += n) {                                            \
      A acc = IDENT;                                                           \
      int64_t step = reverse ? -1 : 1;                                         \
      T* q = reverse ? p + n - 1 : p;                                          \
      if (inclusive)                                                           \
        for (int64_t i = 0; i < n; i++, q += step)                             \
          STEP_INCL(OP, LOAD, STORE, acc, *q);                                 \
      else                                                                     \
        for (int64_t i = 0; i < n; i++, q += step)                             \
          STEP_EXCL(A, OP, LOAD, STORE, acc, *q);                              \
    }                                                                          \
  }                                                                            \
  static void NAME##_rows(char* pv, int64_t rows, int64_t n, int reverse,      \
                          int inclusive) {                                     \
    T* p = (T*)(void*)pv;                                                      \
    switch (n) { /* the usual short rows unroll */                             \
      case 2:                                                                  \
        NAME##_rows_n(p, rows, 2, reverse, inclusive);                         \
        break;                                                                 \
      case 3:                                                                  \
        NAME##_rows_n(p, rows, 3, reverse, inclusive);                         \
        break;                                                                 \
      case 4:                                                                  \
        NAME##_rows_n(p, rows, 4, reverse, inclusive);                         \
        break;                                                                 \
      default:                                                                 \
        NAME##_rows_n(p, rows, n, reverse, inclusive);                         \
    }                                                                          \
  }                                                                            \
  static void NAME(char* pv, int64_t n, int64_t inner, int64_t len,            \
                   int reverse, int inclusive) {                               \
    T* p = (T*)(void*)pv;                                                      \
    if (len == 1) {                                                            \
      A acc = IDENT;                                                           \
      int64_t step = reverse ? -inner : inner;                                 \
      T* q = reverse ? p + (n - 1) * inner : p;                                \
      if (inclusive)                                                           \
        for (int64_t i = 0; i < n; i++, q += step)                             \
          STEP_INCL(OP, LOAD, STORE, acc, *q);                                 \
      else                                                                     \
        for (int64_t i = 0; i < n; i++, q += step)                             \
          STEP_EXCL(A, OP, LOAD, STORE, acc, *q);                              \
      return;                                                                  \
    }                                                                          \
    /* the accumulators 2 KB from the rows modulo 4 KB (see the top) */        \
    char buf[BLOCK * sizeof(A) + 4096] __attribute__((aligned(64)));           \
    A* acc =                                                                   \
        (A*)(void*)(buf + cmx__red_lanes_near((uintptr_t)p, (uintptr_t)buf));  \
    for (int64_t j = 0; j < len; j++) acc[j] = IDENT;                          \
    for (int64_t r = 0; r < n; r++) {                                          \
      T* q = p + (reverse ? n - 1 - r : r) * inner;                            \
      if (inclusive)                                                           \
        for (int64_t j = 0; j < len; j++)                                      \
          STEP_INCL(OP, LOAD, STORE, acc[j], q[j]);                            \
      else                                                                     \
        for (int64_t j = 0; j < len; j++)                                      \
          STEP_EXCL(A, OP, LOAD, STORE, acc[j], q[j]);                         \
    }                                                                          \
  }                                                                            \
  /* nout scans of inner <= MULTI_INNER columns, each as NAME with len ==      \
   * inner, their blocks ostride elements apart: MULTI_G of them side by       \
   * side, so that a narrow scan has more than inner independent chains */     \
  static void NAME##_multi(char* pv, int64_t nout, int64_t ostride, int64_t n, \
                           int64_t inner, int reverse, int inclusive) {        \
    T* p = (T*)(void*)pv;                                                      \
    for (int64_t g0 = 0; g0 < nout; g0 += MULTI_G) {                           \
      int G = nout - g0 < MULTI_G ? (int)(nout - g0) : MULTI_G;                \
      int m = G * (int)inner;                                                  \
      A acc[MULTI_G * MULTI_INNER];                                            \
      T* base[MULTI_G * MULTI_INNER];                                          \
      for (int c = 0; c < m; c++) {                                            \
        acc[c] = IDENT;                                                        \
        base[c] = p + (g0 + c / inner) * ostride + c % inner;                  \
      }                                                                        \
      for (int64_t r = 0; r < n; r++) {                                        \
        int64_t off = (reverse ? n - 1 - r : r) * inner;                       \
        if (inclusive)                                                         \
          for (int c = 0; c < m; c++)                                          \
            STEP_INCL(OP, LOAD, STORE, acc[c], base[c][off]);                  \
        else                                                                   \
          for (int c = 0; c < m; c++)                                          \
            STEP_EXCL(A, OP, LOAD, STORE, acc[c], base[c][off]);               \
      }                                                                        \
    }                                                                          \
  }

/* ---- operations (ROWS8_op: scanned 8 rows at a time, see rows_fn) ---- */
#define ROWS8_ADD 0
#define ROWS8_MUL 0
#define ROWS8_IMAX 0
#define ROWS8_IMIN 0
#define ROWS8_FMAX 1
#define ROWS8_FMIN 1
#define ROWS8_lae_f 1
#define ROWS8_lae_d 1
#define ROWS8_c_max 0
#define ROWS8_c_min 0
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define IMAX(a, b) ((b) > (a) ? (b) : (a))
#define IMIN(a, b) ((b) < (a) ? (b) : (a))
/* NaN in either operand wins (a NaN accumulator stays). */
#define FMAX(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define FMIN(a, b) ((((b) < (a)) | ((b) != (b))) ? (b) : (a))

static inline float lae_f(float a, float b) {
  if (a != a || b != b) return a + b;
  float hi = a > b ? a : b, lo = a > b ? b : a;
  if (isinf(hi)) return hi; /* +inf, or both -inf */
  return hi + log1pf(expf(lo - hi));
}
static inline double lae_d(double a, double b) {
  if (a != a || b != b) return a + b;
  double hi = a > b ? a : b, lo = a > b ? b : a;
  if (isinf(hi)) return hi;
  return hi + log1p(exp(lo - hi));
}

static inline bool c_isnan(cmx__c64 z) {
  return crealf(z) != crealf(z) || cimagf(z) != cimagf(z);
}
static inline cmx__c64 c_max(cmx__c64 a, cmx__c64 b) {
  if (c_isnan(a)) return a;
  if (c_isnan(b)) return b;
  bool gt = crealf(b) > crealf(a) ||
            (crealf(b) == crealf(a) && cimagf(b) > cimagf(a));
  return gt ? b : a;
}
static inline cmx__c64 c_min(cmx__c64 a, cmx__c64 b) {
  if (c_isnan(a)) return a;
  if (c_isnan(b)) return b;
  bool lt = crealf(b) < crealf(a) ||
            (crealf(b) == crealf(a) && cimagf(b) < cimagf(a));
  return lt ? b : a;
}
static inline cmx__c64 c_make(float re, float im) {
  cmx__c64 z;
  memcpy(&z, (float[2]){re, im}, sizeof z);
  return z;
}

#define ID(x) (x)
#define TO_U32(x) ((uint32_t)(x))
#define TO_U64(x) ((uint64_t)(x))

/* ---- sum and product: integers in unsigned arithmetic ---- */
#define INT_SUMPROD(S, T, A, CAST)             \
  SCAN_FN(sum_##S, T, A, CAST, (T), ADD, (A)0) \
  SCAN_FN(prod_##S, T, A, CAST, (T), MUL, (A)1)
INT_SUMPROD(u8, uint8_t, uint32_t, TO_U32)
INT_SUMPROD(u16, uint16_t, uint32_t, TO_U32)
INT_SUMPROD(u32, uint32_t, uint32_t, TO_U32)
INT_SUMPROD(u64, uint64_t, uint64_t, TO_U64)
SCAN_FN(prod_b8, uint8_t, uint32_t, TO_U32, (uint8_t), MUL, 1u)

#define FLOAT_OPS(S, T, A, LOAD, STORE, LAE)              \
  SCAN_FN(sum_##S, T, A, LOAD, STORE, ADD, (A)0)          \
  SCAN_FN(prod_##S, T, A, LOAD, STORE, MUL, (A)1)         \
  SCAN_FN(max_##S, T, A, LOAD, STORE, FMAX, (A)-INFINITY) \
  SCAN_FN(min_##S, T, A, LOAD, STORE, FMIN, (A)INFINITY)  \
  SCAN_FN(lae_##S, T, A, LOAD, STORE, LAE, (A)-INFINITY)
FLOAT_OPS(f16, uint16_t, float, cmx__h2f, cmx__f2h, lae_f)
FLOAT_OPS(bf16, uint16_t, float, cmx__bf2f, cmx__f2bf, lae_f)
FLOAT_OPS(f32, float, float, ID, ID, lae_f)
FLOAT_OPS(f64, double, double, ID, ID, lae_d)

/* ---- max and min of float32/float64 rows: vector scans (AVX2) ----
 * A row of n >= 32 elements is scanned one vector of L elements at a time:
 * a log-step scan inside the vector (each lane combined with the lanes 1,
 * 2, 4 before it, the identity shifted in), then with the carry (the
 * running value before the vector, in every lane); the next carry is the
 * carry combined with the vector's last lane. The ROWS8 path this replaces for
 * them keeps its 8 accumulators in a stack array that GCC pairs into 2-lane SSE
 * operations, each step a store and a reload of the accumulators, and loads row
 * k + 4 at the address 4096 bytes after the store to row k of a 1 KB row: it
 * ran at 3-5 cycles per element, and 1.3-2x slower or not depending on where
 * the buffer and the stack fell (bench_sweep's cummin [64x128x256] axis 2:
 * 1.7x slower in one build than in another of the same kernel code).
 *
 * Same results as the sequential scan, bit for bit: combining (earlier,
 * later) keeps the earlier on ties (-0 against +0 included) in any
 * grouping, as the sequential select does, and the vector select is that
 * select without its NaN test; a vector holding a NaN ends the vector
 * loop, the row's rest runs sequentially from the carry (which is exact:
 * no NaN came before). Exclusive scans shift the inclusive result by one
 * lane, the carry coming in first. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define SCAN_VEC 1
#endif
#endif
#ifdef SCAN_VEC
#include <immintrin.h>
typedef float vscan_f32 __attribute__((vector_size(32)));
typedef double vscan_f64 __attribute__((vector_size(32)));
/* Shifts of x by 1, 2, 4 lanes towards the row's end (F) or start (R),
 * lanes from y shifted in; the last lane (F) or first (R) in every lane. */
#define VS1F_f32(x, y) __builtin_shufflevector(x, y, 8, 0, 1, 2, 3, 4, 5, 6)
#define VS2F_f32(x, y) __builtin_shufflevector(x, y, 8, 9, 0, 1, 2, 3, 4, 5)
#define VS4F_f32(x, y) __builtin_shufflevector(x, y, 8, 9, 10, 11, 0, 1, 2, 3)
#define VS1R_f32(x, y) __builtin_shufflevector(x, y, 1, 2, 3, 4, 5, 6, 7, 8)
#define VS2R_f32(x, y) __builtin_shufflevector(x, y, 2, 3, 4, 5, 6, 7, 8, 9)
#define VS4R_f32(x, y) __builtin_shufflevector(x, y, 4, 5, 6, 7, 8, 9, 10, 11)
#define VENDF_f32(x) __builtin_shufflevector(x, x, 7, 7, 7, 7, 7, 7, 7, 7)
#define VENDR_f32(x) __builtin_shufflevector(x, x, 0, 0, 0, 0, 0, 0, 0, 0)
#define VS1F_f64(x, y) __builtin_shufflevector(x, y, 4, 0, 1, 2)
#define VS2F_f64(x, y) __builtin_shufflevector(x, y, 4, 5, 0, 1)
#define VS4F_f64(x, y) (x) /* 4 lanes: no third step */
#define VS1R_f64(x, y) __builtin_shufflevector(x, y, 1, 2, 3, 4)
#define VS2R_f64(x, y) __builtin_shufflevector(x, y, 2, 3, 4, 5)
#define VS4R_f64(x, y) (x)
#define VENDF_f64(x) __builtin_shufflevector(x, x, 3, 3, 3, 3)
#define VENDR_f64(x) __builtin_shufflevector(x, x, 0, 0, 0, 0)
/* (later b, earlier a) -> b where b < a (min) or b > a (max), else a: the
 * select without its NaN test, which is what vminps(b, a) / vmaxps(b, a)
 * compute. Whether x holds a NaN. */
#define VMIN_f32(b, a) ((vscan_f32)_mm256_min_ps((__m256)(b), (__m256)(a)))
#define VMAX_f32(b, a) ((vscan_f32)_mm256_max_ps((__m256)(b), (__m256)(a)))
#define VMIN_f64(b, a) ((vscan_f64)_mm256_min_pd((__m256d)(b), (__m256d)(a)))
#define VMAX_f64(b, a) ((vscan_f64)_mm256_max_pd((__m256d)(b), (__m256d)(a)))
#define VNAN_f32(x) \
  _mm256_movemask_ps(_mm256_cmp_ps((__m256)(x), (__m256)(x), _CMP_UNORD_Q))
#define VNAN_f64(x) \
  _mm256_movemask_pd(_mm256_cmp_pd((__m256d)(x), (__m256d)(x), _CMP_UNORD_Q))

/* NAME_vrows: rows_fn of max/min (OP, VOP: VMAX/VMIN) on S (f32, f64);
 * rows shorter than VEC_MIN_N go to NAME_rows (8 rows side by side win
 * there). Only the carry's one select per vector is a chain from vector
 * to vector; the in-vector scans overlap. */
#define VEC_MIN_N 32
#define VEC_ROWS(NAME, S, T, OP, VOP, IDENT)                                   \
  static inline                                                                \
      __attribute__((always_inline, target("avx2"))) void NAME##_vrow(         \
          T* p, int64_t n, int reverse, int inclusive) {                       \
    enum { L = (int)(sizeof(vscan_##S) / sizeof(T)) };                         \
    vscan_##S id, carry;                                                       \
    for (int k = 0; k < L; k++) id[k] = IDENT;                                 \
    carry = id;                                                                \
    int64_t i = 0;                                                             \
    for (; i + L <= n; i += L) {                                               \
      T* q = reverse ? p + n - i - L : p + i;                                  \
      vscan_##S x, y, out;                                                     \
      memcpy(&x, q, sizeof x);                                                 \
      if (__builtin_expect(VNAN_##S(x) != 0, 0)) break;                        \
      if (reverse) {                                                           \
        x = VOP##_##S(x, VS1R_##S(x, id));                                     \
        x = VOP##_##S(x, VS2R_##S(x, id));                                     \
        if (L > 4) x = VOP##_##S(x, VS4R_##S(x, id));                          \
      } else {                                                                 \
        x = VOP##_##S(x, VS1F_##S(x, id));                                     \
        x = VOP##_##S(x, VS2F_##S(x, id));                                     \
        if (L > 4) x = VOP##_##S(x, VS4F_##S(x, id));                          \
      }                                                                        \
      y = VOP##_##S(x, carry);                                                 \
      out = inclusive ? y : reverse ? VS1R_##S(y, carry) : VS1F_##S(y, carry); \
      carry = VOP##_##S(reverse ? VENDR_##S(x) : VENDF_##S(x), carry);         \
      memcpy(q, &out, sizeof out);                                             \
    }                                                                          \
    T acc = carry[0];                                                          \
    for (; i < n; i++) {                                                       \
      T* e = reverse ? p + n - 1 - i : p + i;                                  \
      if (inclusive)                                                           \
        STEP_INCL(OP, ID, ID, acc, *e);                                        \
      else                                                                     \
        STEP_EXCL(T, OP, ID, ID, acc, *e);                                     \
    }                                                                          \
  }                                                                            \
  __attribute__((target("avx2"))) static void NAME##_vrows(                    \
      char* pv, int64_t rows, int64_t n, int reverse, int inclusive) {         \
    if (n < VEC_MIN_N) {                                                       \
      NAME##_rows(pv, rows, n, reverse, inclusive);                            \
      return;                                                                  \
    }                                                                          \
    T* p = (T*)(void*)pv;                                                      \
    /* the four variants, each with its flags constant */                      \
    for (int64_t r = 0; r < rows; r++, p += n) {                               \
      if (reverse) {                                                           \
        if (inclusive)                                                         \
          NAME##_vrow(p, n, 1, 1);                                             \
        else                                                                   \
          NAME##_vrow(p, n, 1, 0);                                             \
      } else if (inclusive) {                                                  \
        NAME##_vrow(p, n, 0, 1);                                               \
      } else {                                                                 \
        NAME##_vrow(p, n, 0, 0);                                               \
      }                                                                        \
    }                                                                          \
  }
VEC_ROWS(max_f32, f32, float, FMAX, VMAX, -INFINITY)
VEC_ROWS(min_f32, f32, float, FMIN, VMIN, INFINITY)
VEC_ROWS(max_f64, f64, double, FMAX, VMAX, -INFINITY)
VEC_ROWS(min_f64, f64, double, FMIN, VMIN, INFINITY)

/* The vector rows function of (kind, dtype), NULL where there is none or
 * the CPU lacks AVX2. */
static rows_fn vec_rows(int kind, cmx_dtype dt) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return NULL;
  if (dt == CMX_FLOAT32)
    return kind == CMX__SCAN_MAX ? max_f32_vrows : min_f32_vrows;
  if (dt == CMX_FLOAT64)
    return kind == CMX__SCAN_MAX ? max_f64_vrows : min_f64_vrows;
  return NULL;
}
#endif

SCAN_FN(sum_c64, cmx__c64, cmx__c64, ID, ID, ADD, c_make(0, 0))
SCAN_FN(prod_c64, cmx__c64, cmx__c64, ID, ID, MUL, c_make(1, 0))
SCAN_FN(max_c64, cmx__c64, cmx__c64, ID, ID, c_max,
        c_make(-INFINITY, -INFINITY))
SCAN_FN(min_c64, cmx__c64, cmx__c64, ID, ID, c_min, c_make(INFINITY, INFINITY))

/* ---- max and min: integers compare in their own type ---- */
#define INT_MAXMIN(S, T, LO, HI)                \
  SCAN_FN(max_##S, T, T, ID, ID, IMAX, (T)(LO)) \
  SCAN_FN(min_##S, T, T, ID, ID, IMIN, (T)(HI))
INT_MAXMIN(b8, uint8_t, 0, 1)
INT_MAXMIN(u8, uint8_t, 0, UINT8_MAX)
INT_MAXMIN(u16, uint16_t, 0, UINT16_MAX)
INT_MAXMIN(u32, uint32_t, 0, UINT32_MAX)
INT_MAXMIN(u64, uint64_t, 0, UINT64_MAX)
INT_MAXMIN(i8, int8_t, INT8_MIN, INT8_MAX)
INT_MAXMIN(i16, int16_t, INT16_MIN, INT16_MAX)
INT_MAXMIN(i32, int32_t, INT32_MIN, INT32_MAX)
INT_MAXMIN(i64, int64_t, INT64_MIN, INT64_MAX)

/* The scan function of (kind, dtype) and its rows function, NULL when
 * unsupported. Signed integer sums and products use the unsigned
 * functions of their width. */
#define NONE_rows NULL
#define NONE NULL
#define NONE_multi NULL
static scan_fn lookup(int kind, cmx_dtype dt, rows_fn* rf, multi_fn* mf) {
#define ROW(E, su, pr, mx, mn, la)                                          \
  case E: {                                                                 \
    scan_fn f[5] = {su, pr, mx, mn, la};                                    \
    rows_fn g[5] = {su##_rows, pr##_rows, mx##_rows, mn##_rows, la##_rows}; \
    multi_fn h[5] = {su##_multi, pr##_multi, mx##_multi, mn##_multi,        \
                     la##_multi};                                           \
    *rf = g[kind];                                                          \
    *mf = h[kind];                                                          \
    return f[kind];                                                         \
  }
  *rf = NULL;
  *mf = NULL;
  if (kind < 0 || kind > 4) return NULL;
  switch (dt) {
    ROW(CMX_BOOL, NONE, prod_b8, max_b8, min_b8, NONE)
    ROW(CMX_UINT8, sum_u8, prod_u8, max_u8, min_u8, NONE)
    ROW(CMX_UINT16, sum_u16, prod_u16, max_u16, min_u16, NONE)
    ROW(CMX_UINT32, sum_u32, prod_u32, max_u32, min_u32, NONE)
    ROW(CMX_UINT64, sum_u64, prod_u64, max_u64, min_u64, NONE)
    ROW(CMX_INT8, sum_u8, prod_u8, max_i8, min_i8, NONE)
    ROW(CMX_INT16, sum_u16, prod_u16, max_i16, min_i16, NONE)
    ROW(CMX_INT32, sum_u32, prod_u32, max_i32, min_i32, NONE)
    ROW(CMX_INT64, sum_u64, prod_u64, max_i64, min_i64, NONE)
    ROW(CMX_FLOAT16, sum_f16, prod_f16, max_f16, min_f16, lae_f16)
    ROW(CMX_BFLOAT16, sum_bf16, prod_bf16, max_bf16, min_bf16, lae_bf16)
    ROW(CMX_FLOAT32, sum_f32, prod_f32, max_f32, min_f32, lae_f32)
    ROW(CMX_FLOAT64, sum_f64, prod_f64, max_f64, min_f64, lae_f64)
    ROW(CMX_COMPLEX64, sum_c64, prod_c64, max_c64, min_c64, NONE)
    default:
      return NULL;
  }
#undef ROW
}

/* lookup, with the vector rows functions where they apply. */
static scan_fn lookup_fast(int kind, cmx_dtype dt, rows_fn* rf, multi_fn* mf) {
  scan_fn f = lookup(kind, dt, rf, mf);
#ifdef SCAN_VEC
  if (f && (kind == CMX__SCAN_MAX || kind == CMX__SCAN_MIN)) {
    rows_fn v = vec_rows(kind, dt);
    if (v) *rf = v;
  }
#endif
  return f;
}

typedef struct {
  scan_fn fn;
  rows_fn rows;
  multi_fn multi;
  int64_t outer;
  char* base;
  int64_t n, inner, nblocks, isz;
  int reverse, inclusive;
} scan_job;

/* Tasks [b, e): (outer index, column block) pairs. */
static void scan_tasks(void* ctx, int64_t b, int64_t e) {
  const scan_job* J = ctx;
  for (int64_t t = b; t < e; t++) {
    int64_t o = t / J->nblocks, blk = t % J->nblocks;
    int64_t col = blk * BLOCK;
    int64_t len = J->inner - col < BLOCK ? J->inner - col : BLOCK;
    J->fn(J->base + (o * J->n * J->inner + col) * J->isz, J->n, J->inner, len,
          J->reverse, J->inclusive);
  }
}

/* Groups [b, e) of MULTI_G outer blocks of narrow scans. */
static void scan_multi(void* ctx, int64_t b, int64_t e) {
  const scan_job* J = ctx;
  int64_t o0 = b * MULTI_G,
          o1 = e * MULTI_G < J->outer ? e * MULTI_G : J->outer;
  J->multi(J->base + o0 * J->n * J->inner * J->isz, o1 - o0, J->n * J->inner,
           J->n, J->inner, J->reverse, J->inclusive);
}

/* Rows [b, e) of contiguous scans (inner == 1). */
static void scan_rows(void* ctx, int64_t b, int64_t e) {
  const scan_job* J = ctx;
  J->rows(J->base + b * J->n * J->isz, e - b, J->n, J->reverse, J->inclusive);
}

cmx_status cmx__cpu_scan(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__scan_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  rows_fn rf = NULL;
  multi_fn mf = NULL;
  scan_fn fn = lookup_fast(q->kind, o->dtype, &rf, &mf);
  if (!fn || a->dtype != o->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[Scan] unsupported dtype %s",
                            cmx_dtype_name(o->dtype));
  cmx_status st = cmx__cpu_ew_alloc(o, in, 1);
  if (st != CMX_OK) return st;
  if (o->size == 0) return CMX_OK;
  if (o->buf != a->buf) cmx__cpu_copy_convert(o, a);
  scan_job J;
  J.fn = fn;
  J.rows = rf;
  J.multi = mf;
  J.base = cmx__node_ptr(o);
  J.isz = (int64_t)cmx_dtype_size(o->dtype);
  J.reverse = q->reverse;
  J.inclusive = q->inclusive;
  int64_t outer = 1;
  J.inner = 1;
  for (int d = 0; d < o->ndim; d++) {
    if (d < q->axis) outer *= o->dims[d];
    if (d > q->axis) J.inner *= o->dims[d];
  }
  J.n = o->dims[q->axis];
  if (J.inner == 1) {
    cmx__parallel_for(outer, J.n >= 32768 ? 1 : 32768 / J.n, scan_rows, &J);
    return CMX_OK;
  }
  J.outer = outer;
  if (J.inner <= MULTI_INNER && outer > 1 && mf) {
    int64_t per = MULTI_G * J.n * J.inner;
    cmx__parallel_for((outer + MULTI_G - 1) / MULTI_G,
                      per >= 32768 ? 1 : 32768 / per, scan_multi, &J);
    return CMX_OK;
  }
  J.nblocks = (J.inner + BLOCK - 1) / BLOCK;
  int64_t per_task = J.n * (J.inner < BLOCK ? J.inner : BLOCK);
  int64_t grain = per_task >= 32768 ? 1 : 32768 / per_task;
  cmx__parallel_for(outer * J.nblocks, grain, scan_tasks, &J);
  return CMX_OK;
}
