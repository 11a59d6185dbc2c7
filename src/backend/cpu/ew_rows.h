/* Row-function generators shared by the elementwise CPU kernels (unary.c,
 * binary.c, binary_cmp.c, ternary.c).
 *
 * A row function processes n elements given one pointer and one stride per
 * array (output first), as cmx__cpu_ew_run calls it. The generators below
 * specialise the layouts that matter (all contiguous, one operand a
 * broadcast scalar) into plain indexed loops that gcc vectorises, and keep
 * a strided fallback. Each takes the storage types, a compute type CT, a
 * load and a store conversion (identity, or the 16-bit float ones), and an
 * expression of x (and y) of type CT; the expression may also use `ctx`.
 */
#ifndef CMX_BACKEND_CPU_EW_ROWS_H
#define CMX_BACKEND_CPU_EW_ROWS_H

#include <complex.h>

#include "backend/cpu/cpu.h"

#define LD_ID(x) (x)
#define ST_ID(x) (x)
#define LD_H(x) cmx__h2f(x)
#define ST_H(x) cmx__f2h(x)
#define LD_BF(x) cmx__bf2f(x)
#define ST_BF(x) cmx__f2bf(x)
/* Bool outputs are stored as 0/1 bytes. */
#define ST_B(x) ((uint8_t)((x) != 0))

/* Compute-bound rows (exp) and the float16/bfloat16 rows (whose
 * conversions become F16C / AVX-512 instructions there) are also compiled
 * for AVX2+FMA and AVX-512 and picked at load time, as baseline x86-64
 * only has 4-wide SSE2. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CMX__SIMD_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CMX__SIMD_CLONES
#endif

/* UN_ROW(fn, T in, OT out, CT compute, load, store, expr of x);
 * UN_ROW_A(attributes, fn, ...) the same with function attributes. */
#define UN_ROW(fn, T, OT, CT, LD, ST, EXPR) \
  UN_ROW_A(, fn, T, OT, CT, LD, ST, EXPR)
#define UN_ROW_A(ATTR, fn, T, OT, CT, LD, ST, EXPR)                 \
  ATTR static void fn(char* const* p, const int64_t* st, int64_t n, \
                      const void* ctx) {                            \
    (void)ctx;                                                      \
    OT* o = (OT*)p[0];                                              \
    const T* a = (const T*)p[1];                                    \
    int64_t so = st[0], sa = st[1];                                 \
    if (so == 1 && sa == 1) {                                       \
      for (int64_t i = 0; i < n; i++) {                             \
        CT x = LD(a[i]);                                            \
        o[i] = ST(EXPR);                                            \
      }                                                             \
    } else {                                                        \
      for (int64_t i = 0; i < n; i++) {                             \
        CT x = LD(a[i * sa]);                                       \
        o[i * so] = ST(EXPR);                                       \
      }                                                             \
    }                                                               \
  }

/* BIN_ROW(fn, T in, OT out, CT compute, load, store, expr of x and y);
 * BIN_ROW_A(attributes, fn, ...) the same with function attributes. */
#define BIN_ROW(fn, T, OT, CT, LD, ST, EXPR) \
  BIN_ROW_A(, fn, T, OT, CT, LD, ST, EXPR)
#define BIN_ROW_A(ATTR, fn, T, OT, CT, LD, ST, EXPR)                \
  ATTR static void fn(char* const* p, const int64_t* st, int64_t n, \
                      const void* ctx) {                            \
    (void)ctx;                                                      \
    OT* o = (OT*)p[0];                                              \
    const T* a = (const T*)p[1];                                    \
    const T* b = (const T*)p[2];                                    \
    int64_t so = st[0], sa = st[1], sb = st[2];                     \
    if (so == 1 && sa == 1 && sb == 1) {                            \
      for (int64_t i = 0; i < n; i++) {                             \
        CT x = LD(a[i]), y = LD(b[i]);                              \
        o[i] = ST(EXPR);                                            \
      }                                                             \
    } else if (so == 1 && sa == 0 && sb == 1) {                     \
      CT x = LD(a[0]);                                              \
      for (int64_t i = 0; i < n; i++) {                             \
        CT y = LD(b[i]);                                            \
        o[i] = ST(EXPR);                                            \
      }                                                             \
    } else if (so == 1 && sa == 1 && sb == 0) {                     \
      CT y = LD(b[0]);                                              \
      for (int64_t i = 0; i < n; i++) {                             \
        CT x = LD(a[i]);                                            \
        o[i] = ST(EXPR);                                            \
      }                                                             \
    } else {                                                        \
      for (int64_t i = 0; i < n; i++) {                             \
        CT x = LD(a[i * sa]), y = LD(b[i * sb]);                    \
        o[i * so] = ST(EXPR);                                       \
      }                                                             \
    }                                                               \
  }

/* Complex helpers: cmx__c64 values built from parts, parts of a double
 * complex rounded to complex64. */
static inline cmx__c64 cmx__cmake(float re, float im) {
  cmx__c64 z;
  __real__ z = re;
  __imag__ z = im;
  return z;
}
static inline cmx__c64 cmx__cfromd(double _Complex z) {
  return cmx__cmake((float)creal(z), (float)cimag(z));
}

#endif
