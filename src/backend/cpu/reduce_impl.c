/* The (reduction kind, input dtype) instantiations of the Reduce kernel.
 *
 * Each instantiation is generated from: the input type T, the lane type L
 * the inner loops accumulate in, the accumulator type A the partial results
 * combine in, the output type O, a load (T -> L), the operation on L and on
 * A, the identities, and a store (A -> O). Row reductions keep LANES
 * independent lane accumulators (the compiler turns them into vector
 * registers without reassociating anything) over blocks of BLK elements,
 * and add each block's result into a double accumulator for float sums:
 * blocked summation, so the error grows with the block count, not the
 * element count (long rows also prefetch ahead, see RED_PF). Integer
 * sums accumulate in the unsigned output width
 * (wrapping is defined). float16/bfloat16 accumulate in float32. min/max
 * propagate NaN, as NumPy; complex values order lexicographically.
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions), so NaN-aware selects vectorise. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-loop-unroll-and-jam")
#endif
#include <complex.h>

#include "backend/cpu/reduce.h"
#include "primitives/reduce.h"

#define LANES 16
#define BLK 2048
/* Long rows prefetch the input RED_PF bytes ahead, a stretch of RED_SUB
 * elements (one hint per cache line) before reading it: a core's stream
 * reaches more of the memory bandwidth than with the hardware prefetchers
 * alone. The hints stay outside the lane loop, which they would keep from
 * being vectorised. */
#define RED_PF 16384
#define RED_SUB 256
/* Rows of at least this many bytes prefetch: smaller ones are likely in
 * cache already, where the hints only cost. */
#define RED_PF_MIN_BYTES ((int64_t)16 << 20)
/* The per-call kernels (row, col, fold) start on 64 bytes, so their loops
 * keep their place in the instruction fetch windows whatever code lies
 * before them in the library: with the same machine code, any f32 over
 * the middle axis of (1024, 1024, 2) (fold) ran 1.11-1.17x the tree before
 * issue 10 in one build and 0.92-0.96x in another, whose only difference
 * was CUDA code (any_f32_fold at 16 mod 64, then at 0). */
#define RED_HOT __attribute__((aligned(64)))

/* Hints the `bytes` bytes RED_PF past p into the L2 cache (the addresses
 * may lie past the array: a prefetch never faults). Into L2 (locality 2),
 * not non-temporal: measured on the lent H100 host's Xeon with 2 threads,
 * a 64 MB sum ran at 41 GB/s with L2 hints 16 KB ahead, 21 GB/s with
 * none and 9 GB/s with non-temporal ones (which also doubled traffic). */
static inline void prefetch_ahead(const void* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64)
    __builtin_prefetch((const char*)((uintptr_t)p + RED_PF + b), 0, 2);
}

/* ANYORDER: the lane operation gives the same result in any order
 * (integer lanes: wrapping sums and products, min, max, and, or; float
 * min/max through RED_IMPL_U), so partial results may combine as a tree
 * (fold, for columns narrower than 16, whose row-by-row combination would
 * not vectorise; wider ones keep it: the halves' 4 KB-multiple distance
 * made min 40% slower there); float sums and products keep their order. */
#define RED_IMPL(NAME, T, L, A, O, LD, OPL, L2A, OPA, IDL, IDA, ST, DIRECT) \
  RED_IMPL_G(NAME, T, L, A, O, LD, OPL, L2A, OPA, IDL, IDA, ST, DIRECT, ,   \
             _Generic((L)0, float : 0, double : 0, cmx__c64 : 0, default : 1))
/* UNROLL goes before the lane loop: float min/max pass NO_UNROLL, since
 * their NaN-aware selects vectorise as a loop over the lanes but not once
 * the lanes are unrolled into scalars. */
#define NO_UNROLL _Pragma("GCC unroll 1")
#define RED_IMPL_U(NAME, T, L, A, O, LD, OPL, L2A, OPA, IDL, IDA, ST, DIRECT, \
                   UNROLL)                                                    \
  RED_IMPL_G(NAME, T, L, A, O, LD, OPL, L2A, OPA, IDL, IDA, ST, DIRECT,       \
             UNROLL, 1)
#define RED_IMPL_G(NAME, T, L, A, O, LD, OPL, L2A, OPA, IDL, IDA, ST, DIRECT, \
                   UNROLL, ANYORDER)                                          \
  static void NAME##_fill(void* accp, int64_t n) {                            \
    A* acc = accp;                                                            \
    for (int64_t i = 0; i < n; i++) acc[i] = IDA;                             \
  }                                                                           \
  static RED_HOT void NAME##_row(void* accp, const void* xp, int64_t n) {     \
    const T* x = xp;                                                          \
    A tot = *(A*)accp;                                                        \
    if (n < LANES) {                                                          \
      L t = IDL;                                                              \
      for (int64_t i = 0; i < n; i++) t = OPL(t, LD(x[i]));                   \
      *(A*)accp = OPA(tot, L2A(t));                                           \
      return;                                                                 \
    }                                                                         \
    const bool pf = n * (int64_t)sizeof(T) >= RED_PF_MIN_BYTES;               \
    for (int64_t i = 0; i < n; i += BLK) {                                    \
      int64_t m = n - i < BLK ? n - i : BLK;                                  \
      const T* xb = x + i;                                                    \
      L lane[LANES];                                                          \
      for (int k = 0; k < LANES; k++) lane[k] = IDL;                          \
      /* without prefetching, the block in one stretch: the lane loop is      \
       * entered once a block, not once every RED_SUB elements */             \
      int64_t j = 0, sub = pf ? RED_SUB : m;                                  \
      while (j + LANES <= m) {                                                \
        int64_t je = j + sub < m ? j + sub : m;                               \
        if (pf) prefetch_ahead(xb + j, (je - j) * (int64_t)sizeof(T));        \
        for (; j + LANES <= je; j += LANES) {                                 \
          UNROLL for (int k = 0; k < LANES; k++) lane[k] =                    \
              OPL(lane[k], LD(xb[j + k]));                                    \
        }                                                                     \
      }                                                                       \
      for (int k = 0; j < m; j++, k++) lane[k] = OPL(lane[k], LD(xb[j]));     \
      for (int w = LANES / 2; w > 0; w /= 2)                                  \
        for (int k = 0; k < w; k++) lane[k] = OPL(lane[k], lane[k + w]);      \
      tot = OPA(tot, L2A(lane[0]));                                           \
    }                                                                         \
    *(A*)accp = tot;                                                          \
  }                                                                           \
  /* n known at compile time for the usual short rows: the loops unroll */    \
  static inline __attribute__((always_inline)) void NAME##_rows_n(            \
      A* acc, int64_t os, const T* x, int64_t xs, int64_t nout, int64_t n) {  \
    int64_t k = 0;                                                            \
    /* 8 outputs side by side: their independent chains vectorise */          \
    for (; k + 8 <= nout; k += 8) {                                           \
      L t[8];                                                                 \
      for (int q = 0; q < 8; q++) t[q] = IDL;                                 \
      for (int64_t i = 0; i < n; i++) {                                       \
        UNROLL for (int q = 0; q < 8; q++) t[q] =                             \
            OPL(t[q], LD(x[(k + q) * xs + i]));                               \
      }                                                                       \
      for (int q = 0; q < 8; q++)                                             \
        acc[(k + q) * os] = OPA(acc[(k + q) * os], L2A(t[q]));                \
    }                                                                         \
    for (; k < nout; k++) {                                                   \
      const T* xr = x + k * xs;                                               \
      L t = IDL;                                                              \
      for (int64_t i = 0; i < n; i++) t = OPL(t, LD(xr[i]));                  \
      acc[k * os] = OPA(acc[k * os], L2A(t));                                 \
    }                                                                         \
  }                                                                           \
  /* rows of 16 or more: each row in 8 lanes (vector-wide), then folded */    \
  static inline __attribute__((always_inline)) void NAME##_rows_lanes(        \
      A* acc, int64_t os, const T* x, int64_t xs, int64_t nout, int64_t n) {  \
    for (int64_t k = 0; k < nout; k++) {                                      \
      const T* xr = x + k * xs;                                               \
      L l[8];                                                                 \
      for (int q = 0; q < 8; q++) l[q] = IDL;                                 \
      int64_t i = 0;                                                          \
      for (; i + 8 <= n; i += 8) {                                            \
        UNROLL for (int q = 0; q < 8; q++) l[q] = OPL(l[q], LD(xr[i + q]));   \
      }                                                                       \
      for (int q = 0; i < n; i++, q++) l[q] = OPL(l[q], LD(xr[i]));           \
      for (int w = 4; w > 0; w /= 2)                                          \
        for (int q = 0; q < w; q++) l[q] = OPL(l[q], l[q + w]);               \
      acc[k * os] = OPA(acc[k * os], L2A(l[0]));                              \
    }                                                                         \
  }                                                                           \
  static void NAME##_rows(void* accp, int64_t os, const void* xp, int64_t xs, \
                          int64_t nout, int64_t n) {                          \
    A* acc = accp;                                                            \
    const T* x = xp;                                                          \
    if (n >= 16) {                                                            \
      if (n == 16)                                                            \
        NAME##_rows_lanes(acc, os, x, xs, nout, 16);                          \
      else if (n == 32)                                                       \
        NAME##_rows_lanes(acc, os, x, xs, nout, 32);                          \
      else                                                                    \
        NAME##_rows_lanes(acc, os, x, xs, nout, n);                           \
      return;                                                                 \
    }                                                                         \
    switch (n) {                                                              \
      case 2:                                                                 \
        NAME##_rows_n(acc, os, x, xs, nout, 2);                               \
        break;                                                                \
      case 3:                                                                 \
        NAME##_rows_n(acc, os, x, xs, nout, 3);                               \
        break;                                                                \
      case 4:                                                                 \
        NAME##_rows_n(acc, os, x, xs, nout, 4);                               \
        break;                                                                \
      default:                                                                \
        NAME##_rows_n(acc, os, x, xs, nout, n);                               \
    }                                                                         \
  }                                                                           \
  static RED_HOT void NAME##_col(void* accp, const char* const* rows,         \
                                 int nrows, int64_t off, int64_t w) {         \
    A* acc = accp;                                                            \
    /* the lanes 2 KB from the first row modulo 4 KB, as in fold below */     \
    char buf[CMX__RED_COLW * sizeof(L) + 4096] __attribute__((aligned(64)));  \
    L* tmp = (L*)(void*)(buf + cmx__red_lanes_near(                           \
                                   (uintptr_t)((const T*)rows[0] + off),      \
                                   (uintptr_t)buf));                          \
    for (int64_t j = 0; j < w; j++) tmp[j] = IDL;                             \
    for (int r = 0; r < nrows; r++) {                                         \
      const T* x = (const T*)rows[r] + off;                                   \
      for (int64_t j = 0; j < w; j++) tmp[j] = OPL(tmp[j], LD(x[j]));         \
    }                                                                         \
    for (int64_t j = 0; j < w; j++) acc[j] = OPA(acc[j], L2A(tmp[j]));        \
  }                                                                           \
  static RED_HOT void NAME##_fold(void* accp, const void* xp, int64_t nrows,  \
                                  int64_t w) {                                \
    A* acc = accp;                                                            \
    const T* x = xp;                                                          \
    /* k rows side by side: no more than there are (a short run folded        \
     * into a full 4096-lane block cost ~100 operations an element) */        \
    int64_t k = CMX__RED_COLW / w, r = 0;                                     \
    if (k > nrows) k = nrows > 0 ? nrows : 1;                                 \
    int64_t kw = k * w;                                                       \
    /* the lanes 2 KB from x modulo 4 KB: the loop stores a lane and loads    \
     * x, and a load at a multiple of 4 KB after a pending store waits for    \
     * it (4K aliasing: 40% slower depending on where the stack fell) */      \
    char buf[CMX__RED_COLW * sizeof(L) + 4096] __attribute__((aligned(64)));  \
    L* tmp = (L*)(void*)(buf + cmx__red_lanes_near((uintptr_t)x,              \
                                                   (uintptr_t)buf));          \
    for (int64_t j = 0; j < kw; j++) tmp[j] = IDL;                            \
    for (; r + k <= nrows; r += k) {                                          \
      const T* xr = x + r * w;                                                \
      for (int64_t j = 0; j < kw; j++) tmp[j] = OPL(tmp[j], LD(xr[j]));       \
    }                                                                         \
    for (; r < nrows; r++)                                                    \
      for (int64_t j = 0; j < w; j++) tmp[j] = OPL(tmp[j], LD(x[r * w + j])); \
    if (ANYORDER && w < 16) { /* halving: upper rows of lanes into lower */   \
      for (int64_t m = k; m > 1;) {                                           \
        int64_t h = m / 2, lo = m - h;                                        \
        L* up = tmp + lo * w;                                                 \
        UNROLL for (int64_t t = 0; t < h * w; t++) tmp[t] =                   \
            OPL(tmp[t], up[t]);                                               \
        m = lo;                                                               \
      }                                                                       \
    } else if (w >= 16) { /* in row order, a vector of columns at a time */ \
      for (int64_t i = 1; i < k; i++) {                                       \
        const L* up = tmp + i * w;                                            \
        for (int64_t j = 0; j < w; j++) tmp[j] = OPL(tmp[j], up[j]);          \
      }                                                                       \
    } else { /* in row order, each column's running value in a register */    \
      for (int64_t j = 0; j < w; j++) {                                       \
        L a = tmp[j];                                                         \
        for (int64_t i = 1; i < k; i++) a = OPL(a, tmp[i * w + j]);           \
        tmp[j] = a;                                                           \
      }                                                                       \
    }                                                                         \
    for (int64_t j = 0; j < w; j++) acc[j] = OPA(acc[j], L2A(tmp[j]));        \
  }                                                                           \
  static void NAME##_merge(void* accp, const void* pp, int64_t n) {           \
    A* acc = accp;                                                            \
    const A* p = pp;                                                          \
    for (int64_t i = 0; i < n; i++) acc[i] = OPA(acc[i], p[i]);               \
  }                                                                           \
  static void NAME##_store(void* outp, const void* accp, int64_t n,           \
                           double count) {                                    \
    O* o = outp;                                                              \
    const A* a = accp;                                                        \
    (void)count;                                                              \
    for (int64_t i = 0; i < n; i++) o[i] = ST(a[i], count);                   \
  }                                                                           \
  static const cmx__red_impl NAME = {sizeof(A),   DIRECT,       NAME##_fill,  \
                                     NAME##_row,  NAME##_rows,  NAME##_col,   \
                                     NAME##_fold, NAME##_merge, NAME##_store};

/* ---- operations ---- */
#define ADD(a, b) ((a) + (b))
#define MUL(a, b) ((a) * (b))
#define MAXI(a, b) ((b) > (a) ? (b) : (a))
#define MINI(a, b) ((b) < (a) ? (b) : (a))
/* A NaN in b replaces a; a NaN in a stays (no comparison is true). */
#define MAXF(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define MINF(a, b) ((((b) < (a)) | ((b) != (b))) ? (b) : (a))
#define AND(a, b) ((uint8_t)((a) & (b)))
#define OR(a, b) ((uint8_t)((a) | (b)))

static inline bool c_isnan(cmx__c64 z) {
  return crealf(z) != crealf(z) || cimagf(z) != cimagf(z);
}
static inline bool c_less(cmx__c64 a, cmx__c64 b) {
  return crealf(a) < crealf(b) ||
         (crealf(a) == crealf(b) && cimagf(a) < cimagf(b));
}
static inline cmx__c64 c_max(cmx__c64 a, cmx__c64 b) {
  if (c_isnan(a)) return a;
  return (c_isnan(b) || c_less(a, b)) ? b : a;
}
static inline cmx__c64 c_min(cmx__c64 a, cmx__c64 b) {
  if (c_isnan(a)) return a;
  return (c_isnan(b) || c_less(b, a)) ? b : a;
}
#define CMAX(a, b) c_max((a), (b))
#define CMIN(a, b) c_min((a), (b))

/* ---- loads and stores ---- */
#define ID(x) (x)
#define TO_U32(x) ((uint32_t)(x))
#define TO_U64(x) ((uint64_t)(x))
#define TO_D(x) ((double)(x))
#define LD_H(x) cmx__h2f(x)
#define LD_BF(x) cmx__bf2f(x)
#define LD_HD(x) ((double)cmx__h2f(x))
#define LD_BFD(x) ((double)cmx__bf2f(x))
#define NZ(x) ((uint8_t)((x) != 0))
#define NZ_16F(x) ((uint8_t)(((x)&0x7fff) != 0)) /* any bit but the sign */
#define NZ_C(x) ((uint8_t)(crealf(x) != 0 || cimagf(x) != 0))

#define ST_ID(a, c) (a)
#define ST_I32(a, c) ((int32_t)(a)) /* modulo 2^32, as gcc defines it */
#define ST_I64(a, c) ((int64_t)(a))
#define ST_F(a, c) ((float)(a))
#define ST_H(a, c) cmx__f2h((float)(a))
#define ST_BF(a, c) cmx__f2bf((float)(a))
#define ST_MF(a, c) ((float)((a) / (c)))
#define ST_MD(a, c) ((a) / (c))
#define ST_MH(a, c) cmx__f2h((float)((a) / (c)))
#define ST_MBF(a, c) cmx__f2bf((float)((a) / (c)))
#define ST_MC(a, c) ((a) / (float)(c))

static const cmx__c64 C_ZERO = 0.0f, C_ONE = 1.0f;
#define C_PINF CMPLXF(INFINITY, INFINITY)
#define C_NINF CMPLXF(-INFINITY, -INFINITY)

/* ---- sum and prod: integers in the unsigned width of the output ---- */
#define SUMPROD_INTS(K, OP, ID0)                                               \
  RED_IMPL(K##_bool, uint8_t, uint32_t, uint32_t, int32_t, TO_U32, OP, ID, OP, \
           ID0, ID0, ST_I32, true)                                             \
  RED_IMPL(K##_u8, uint8_t, uint32_t, uint32_t, uint32_t, TO_U32, OP, ID, OP,  \
           ID0, ID0, ST_ID, true)                                              \
  RED_IMPL(K##_u16, uint16_t, uint32_t, uint32_t, uint32_t, TO_U32, OP, ID,    \
           OP, ID0, ID0, ST_ID, true)                                          \
  RED_IMPL(K##_u32, uint32_t, uint32_t, uint32_t, uint32_t, TO_U32, OP, ID,    \
           OP, ID0, ID0, ST_ID, true)                                          \
  RED_IMPL(K##_u64, uint64_t, uint64_t, uint64_t, uint64_t, TO_U64, OP, ID,    \
           OP, ID0, ID0, ST_ID, true)                                          \
  RED_IMPL(K##_i8, int8_t, uint32_t, uint32_t, int32_t, TO_U32, OP, ID, OP,    \
           ID0, ID0, ST_I32, true)                                             \
  RED_IMPL(K##_i16, int16_t, uint32_t, uint32_t, int32_t, TO_U32, OP, ID, OP,  \
           ID0, ID0, ST_I32, true)                                             \
  RED_IMPL(K##_i32, int32_t, uint32_t, uint32_t, int32_t, TO_U32, OP, ID, OP,  \
           ID0, ID0, ST_I32, true)                                             \
  RED_IMPL(K##_i64, int64_t, uint64_t, uint64_t, int64_t, TO_U64, OP, ID, OP,  \
           ID0, ID0, ST_I64, true)

SUMPROD_INTS(sum, ADD, 0)
SUMPROD_INTS(prod, MUL, 1)

/* float sums: float lanes, double accumulators. */
RED_IMPL(sum_f16, uint16_t, float, double, uint16_t, LD_H, ADD, TO_D, ADD, 0.0f,
         0.0, ST_H, false)
RED_IMPL(sum_bf16, uint16_t, float, double, uint16_t, LD_BF, ADD, TO_D, ADD,
         0.0f, 0.0, ST_BF, false)
RED_IMPL(sum_f32, float, float, double, float, ID, ADD, TO_D, ADD, 0.0f, 0.0,
         ST_F, false)
RED_IMPL(sum_f64, double, double, double, double, ID, ADD, ID, ADD, 0.0, 0.0,
         ST_ID, true)
RED_IMPL(sum_c64, cmx__c64, cmx__c64, cmx__c64, cmx__c64, ID, ADD, ID, ADD,
         C_ZERO, C_ZERO, ST_ID, true)
/* float products in double: no intermediate overflow a float would hit. */
RED_IMPL(prod_f16, uint16_t, double, double, uint16_t, LD_HD, MUL, ID, MUL, 1.0,
         1.0, ST_H, false)
RED_IMPL(prod_bf16, uint16_t, double, double, uint16_t, LD_BFD, MUL, ID, MUL,
         1.0, 1.0, ST_BF, false)
RED_IMPL(prod_f32, float, double, double, float, TO_D, MUL, ID, MUL, 1.0, 1.0,
         ST_F, false)
RED_IMPL(prod_f64, double, double, double, double, ID, MUL, ID, MUL, 1.0, 1.0,
         ST_ID, true)
RED_IMPL(prod_c64, cmx__c64, cmx__c64, cmx__c64, cmx__c64, ID, MUL, ID, MUL,
         C_ONE, C_ONE, ST_ID, true)

/* ---- mean: integers and bool in double, giving float32 ---- */
#define MEAN_INT(NAME, T)                                                \
  RED_IMPL(NAME, T, double, double, float, TO_D, ADD, ID, ADD, 0.0, 0.0, \
           ST_MF, false)
MEAN_INT(mean_bool, uint8_t)
MEAN_INT(mean_u8, uint8_t)
MEAN_INT(mean_u16, uint16_t)
MEAN_INT(mean_u32, uint32_t)
MEAN_INT(mean_u64, uint64_t)
MEAN_INT(mean_i8, int8_t)
MEAN_INT(mean_i16, int16_t)
MEAN_INT(mean_i32, int32_t)
MEAN_INT(mean_i64, int64_t)
RED_IMPL(mean_f16, uint16_t, float, double, uint16_t, LD_H, ADD, TO_D, ADD,
         0.0f, 0.0, ST_MH, false)
RED_IMPL(mean_bf16, uint16_t, float, double, uint16_t, LD_BF, ADD, TO_D, ADD,
         0.0f, 0.0, ST_MBF, false)
RED_IMPL(mean_f32, float, float, double, float, ID, ADD, TO_D, ADD, 0.0f, 0.0,
         ST_MF, false)
RED_IMPL(mean_f64, double, double, double, double, ID, ADD, ID, ADD, 0.0, 0.0,
         ST_MD, false)
RED_IMPL(mean_c64, cmx__c64, cmx__c64, cmx__c64, cmx__c64, ID, ADD, ID, ADD,
         C_ZERO, C_ZERO, ST_MC, false)

/* ---- min and max keep the dtype ---- */
#define MINMAX_INT(K, OP, NAME, T, IDV) \
  RED_IMPL(K##_##NAME, T, T, T, T, ID, OP, ID, OP, IDV, IDV, ST_ID, true)
#define MINMAX(K, OPI, OPF, OPC, IDX)                                          \
  MINMAX_INT(K, OPI, bool, uint8_t, IDX(1, 0))                                 \
  MINMAX_INT(K, OPI, u8, uint8_t, IDX(UINT8_MAX, 0))                           \
  MINMAX_INT(K, OPI, u16, uint16_t, IDX(UINT16_MAX, 0))                        \
  MINMAX_INT(K, OPI, u32, uint32_t, IDX(UINT32_MAX, 0))                        \
  MINMAX_INT(K, OPI, u64, uint64_t, IDX(UINT64_MAX, 0))                        \
  MINMAX_INT(K, OPI, i8, int8_t, IDX(INT8_MAX, INT8_MIN))                      \
  MINMAX_INT(K, OPI, i16, int16_t, IDX(INT16_MAX, INT16_MIN))                  \
  MINMAX_INT(K, OPI, i32, int32_t, IDX(INT32_MAX, INT32_MIN))                  \
  MINMAX_INT(K, OPI, i64, int64_t, IDX(INT64_MAX, INT64_MIN))                  \
  RED_IMPL(K##_f16, uint16_t, float, float, uint16_t, LD_H, OPF, ID, OPF,      \
           IDX(INFINITY, -INFINITY), IDX(INFINITY, -INFINITY), ST_H, false)    \
  RED_IMPL_U(K##_bf16, uint16_t, float, float, uint16_t, LD_BF, OPF, ID, OPF,  \
             IDX(INFINITY, -INFINITY), IDX(INFINITY, -INFINITY), ST_BF, false, \
             NO_UNROLL)                                                        \
  RED_IMPL_U(K##_f32, float, float, float, float, ID, OPF, ID, OPF,            \
             IDX(INFINITY, -INFINITY), IDX(INFINITY, -INFINITY), ST_ID, true,  \
             NO_UNROLL)                                                        \
  RED_IMPL_U(K##_f64, double, double, double, double, ID, OPF, ID, OPF,        \
             IDX((double)INFINITY, -(double)INFINITY),                         \
             IDX((double)INFINITY, -(double)INFINITY), ST_ID, true, NO_UNROLL) \
  RED_IMPL(K##_c64, cmx__c64, cmx__c64, cmx__c64, cmx__c64, ID, OPC, ID, OPC,  \
           IDX(C_PINF, C_NINF), IDX(C_PINF, C_NINF), ST_ID, true)
#define FIRST(a, b) (a)
#define SECOND(a, b) (b)
MINMAX(min, MINI, MINF, CMIN, FIRST)
MINMAX(max, MAXI, MAXF, CMAX, SECOND)

/* ---- all and any: bool accumulators over a nonzero test ---- */
#define LOGIC(K, OP, IDV)                                                     \
  RED_IMPL(K##_bool, uint8_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV, \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_u8, uint8_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,   \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_u16, uint16_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV, \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_u32, uint32_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV, \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_u64, uint64_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV, \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_i8, int8_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,    \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_i16, int16_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,  \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_i32, int32_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,  \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_i64, int64_t, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,  \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_f16, uint16_t, uint8_t, uint8_t, uint8_t, NZ_16F, OP, ID, OP,  \
           IDV, IDV, ST_ID, true)                                             \
  RED_IMPL(K##_bf16, uint16_t, uint8_t, uint8_t, uint8_t, NZ_16F, OP, ID, OP, \
           IDV, IDV, ST_ID, true)                                             \
  RED_IMPL(K##_f32, float, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,    \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_f64, double, uint8_t, uint8_t, uint8_t, NZ, OP, ID, OP, IDV,   \
           IDV, ST_ID, true)                                                  \
  RED_IMPL(K##_c64, cmx__c64, uint8_t, uint8_t, uint8_t, NZ_C, OP, ID, OP,    \
           IDV, IDV, ST_ID, true)
LOGIC(all, AND, 1)
LOGIC(any, OR, 0)

#define ROW_OF(K)                                                             \
  {                                                                           \
    &K##_bool, &K##_u8, &K##_u16, &K##_u32, &K##_u64, &K##_i8, &K##_i16,      \
        &K##_i32, &K##_i64, &K##_f16, &K##_bf16, &K##_f32, &K##_f64, &K##_c64 \
  }

/* Every kind instantiates all 14 dtypes, listed in enum order. */
static const cmx__red_impl* const g_impls[CMX__RED_NUM_KINDS][CMX_NUM_DTYPES] =
    {[CMX__RED_SUM] = ROW_OF(sum),   [CMX__RED_PROD] = ROW_OF(prod),
     [CMX__RED_MIN] = ROW_OF(min),   [CMX__RED_MAX] = ROW_OF(max),
     [CMX__RED_MEAN] = ROW_OF(mean), [CMX__RED_AND] = ROW_OF(all),
     [CMX__RED_OR] = ROW_OF(any)};

const cmx__red_impl* cmx__reduce_impl(int kind, cmx_dtype dt) {
  if (kind < 0 || kind >= CMX__RED_NUM_KINDS || (int)dt < 0 ||
      dt >= CMX_NUM_DTYPES)
    return NULL;
  return g_impls[kind][dt];
}
