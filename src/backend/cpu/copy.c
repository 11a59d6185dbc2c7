/* Copy and dtype conversion kernels (AsType, Copy): every (source,
 * destination) dtype pair gets its own row function, generated from
 * per-dtype load macros and per-dtype store macros. Conversions never hit
 * undefined behaviour: float to integer saturates, NaN gives 0. */
#include <complex.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */

static inline int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}
static inline uint64_t sat_u64(double d) {
  if (d != d) return 0;
  if (d < 0) return (uint64_t)sat_i64(d); /* wraps like C for negatives */
  if (d >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)d;
}

/* Per source: NZ (nonzero test), TOI (int64), TOU (uint64), TOD (double),
 * TOF (float), TOC (complex). */
#define INT_SRC(S)                          \
  static inline bool NZ_##S(S##_t x) {      \
    return x != 0;                          \
  }                                         \
  static inline int64_t TOI_##S(S##_t x) {  \
    return (int64_t)x;                      \
  }                                         \
  static inline uint64_t TOU_##S(S##_t x) { \
    return (uint64_t)x;                     \
  }                                         \
  static inline double TOD_##S(S##_t x) {   \
    return (double)x;                       \
  }                                         \
  static inline float TOF_##S(S##_t x) {    \
    return (float)x;                        \
  }                                         \
  static inline cmx__c64 TOC_##S(S##_t x) { \
    return (float)x;                        \
  }
typedef uint8_t b8_t;
typedef uint8_t u8_t;
typedef uint16_t u16_t;
typedef uint32_t u32_t;
typedef uint64_t u64_t;
typedef int8_t i8_t;
typedef int16_t i16_t;
typedef int32_t i32_t;
typedef int64_t i64_t;
typedef uint16_t f16_t;
typedef uint16_t bf16_t;
typedef float f32_t;
typedef double f64_t;
typedef cmx__c64 c64_t;
INT_SRC(b8)
INT_SRC(u8)
INT_SRC(u16)
INT_SRC(u32)
INT_SRC(u64)
INT_SRC(i8)
INT_SRC(i16)
INT_SRC(i32)
INT_SRC(i64)

#define FLOAT_SRC(S, LOADF)                 \
  static inline bool NZ_##S(S##_t x) {      \
    return LOADF(x) != 0;                   \
  }                                         \
  static inline int64_t TOI_##S(S##_t x) {  \
    return sat_i64(LOADF(x));               \
  }                                         \
  static inline uint64_t TOU_##S(S##_t x) { \
    return sat_u64(LOADF(x));               \
  }                                         \
  static inline double TOD_##S(S##_t x) {   \
    return (double)LOADF(x);                \
  }                                         \
  static inline float TOF_##S(S##_t x) {    \
    return (float)LOADF(x);                 \
  }                                         \
  static inline cmx__c64 TOC_##S(S##_t x) { \
    return (float)LOADF(x);                 \
  }
#define ID(x) (x)
FLOAT_SRC(f16, cmx__h2f)
FLOAT_SRC(bf16, cmx__bf2f)
FLOAT_SRC(f32, ID)
FLOAT_SRC(f64, ID)

static inline bool NZ_c64(c64_t x) {
  return crealf(x) != 0 || cimagf(x) != 0;
}
static inline int64_t TOI_c64(c64_t x) {
  return sat_i64(crealf(x));
}
static inline uint64_t TOU_c64(c64_t x) {
  return sat_u64(crealf(x));
}
static inline double TOD_c64(c64_t x) {
  return crealf(x);
}
static inline float TOF_c64(c64_t x) {
  return crealf(x);
}
static inline cmx__c64 TOC_c64(c64_t x) {
  return x;
}

/* Per destination: how to store from source suffix S. */
#define ST_b8(S, x) ((uint8_t)NZ_##S(x))
#define ST_u8(S, x) ((uint8_t)TOI_##S(x))
#define ST_u16(S, x) ((uint16_t)TOI_##S(x))
#define ST_u32(S, x) ((uint32_t)TOI_##S(x))
#define ST_u64(S, x) (TOU_##S(x))
#define ST_i8(S, x) ((int8_t)TOI_##S(x))
#define ST_i16(S, x) ((int16_t)TOI_##S(x))
#define ST_i32(S, x) ((int32_t)TOI_##S(x))
#define ST_i64(S, x) (TOI_##S(x))
#define ST_f16(S, x) (cmx__f2h(TOF_##S(x)))
#define ST_bf16(S, x) (cmx__f2bf(TOF_##S(x)))
#define ST_f32(S, x) (TOF_##S(x))
#define ST_f64(S, x) (TOD_##S(x))
#define ST_c64(S, x) (TOC_##S(x))

/* Conversions to and from float16 are bit manipulation that baseline
 * x86-64 (SSE2) vectorises poorly (~35 instructions an element); they are
 * also compiled for AVX2 and AVX-512 and picked at load time (f32 -> f16:
 * 0.73 -> 0.12 ns an element). No float arithmetic but one exact add, so
 * every clone gives the same bits. */
#define ATTR_f16 CMX__SIMD_CLONES
#define ATTR_b8
#define ATTR_u8
#define ATTR_u16
#define ATTR_u32
#define ATTR_u64
#define ATTR_i8
#define ATTR_i16
#define ATTR_i32
#define ATTR_i64
#define ATTR_bf16
#define ATTR_f32
#define ATTR_f64
#define ATTR_c64
#define CONV_ROW(SS, DS) CONV_ROW_A(ATTR_##DS, SS, DS)
#define CONV_ROW_A(ATTR, SS, DS)                                          \
  ATTR static void conv_##SS##_##DS(char* const* p, const int64_t* st,    \
                                    int64_t n, const void* ctx) {         \
    (void)ctx;                                                            \
    DS##_t* o = (DS##_t*)p[0];                                            \
    const SS##_t* a = (const SS##_t*)p[1];                                \
    int64_t so = st[0], sa = st[1];                                       \
    if (so == 1 && sa == 1)                                               \
      for (int64_t i = 0; i < n; i++) o[i] = ST_##DS(SS, a[i]);           \
    else                                                                  \
      for (int64_t i = 0; i < n; i++) o[i * so] = ST_##DS(SS, a[i * sa]); \
  }

/* Rows from SS to every dtype; ALL_DST_A gives them all attribute ATTR.
 * (clang-format does not settle on these chains: left as written.) */
// clang-format off
#define ALL_DST(SS)                                                          \
  CONV_ROW(SS, b8) CONV_ROW(SS, u8) CONV_ROW(SS, u16) CONV_ROW(SS, u32)      \
  CONV_ROW(SS, u64) CONV_ROW(SS, i8) CONV_ROW(SS, i16) CONV_ROW(SS, i32)     \
  CONV_ROW(SS, i64) CONV_ROW(SS, f16) CONV_ROW(SS, bf16) CONV_ROW(SS, f32)   \
  CONV_ROW(SS, f64) CONV_ROW(SS, c64)
#define ALL_DST_A(A, SS)                                                     \
  CONV_ROW_A(A, SS, b8) CONV_ROW_A(A, SS, u8) CONV_ROW_A(A, SS, u16)         \
  CONV_ROW_A(A, SS, u32) CONV_ROW_A(A, SS, u64) CONV_ROW_A(A, SS, i8)        \
  CONV_ROW_A(A, SS, i16) CONV_ROW_A(A, SS, i32) CONV_ROW_A(A, SS, i64)       \
  CONV_ROW_A(A, SS, f16) CONV_ROW_A(A, SS, bf16) CONV_ROW_A(A, SS, f32)      \
  CONV_ROW_A(A, SS, f64) CONV_ROW_A(A, SS, c64)
// clang-format on
ALL_DST(b8)
ALL_DST(u8)
ALL_DST(u16)
ALL_DST(u32)
ALL_DST(u64)
ALL_DST(i8)
ALL_DST(i16)
ALL_DST(i32)
ALL_DST(i64)
ALL_DST_A(CMX__SIMD_CLONES, f16)
ALL_DST(bf16)
ALL_DST(f32)
ALL_DST(f64)
ALL_DST(c64)

#define ROW_OF(SS)                                                           \
  {                                                                          \
    conv_##SS##_b8, conv_##SS##_u8, conv_##SS##_u16, conv_##SS##_u32,        \
        conv_##SS##_u64, conv_##SS##_i8, conv_##SS##_i16, conv_##SS##_i32,   \
        conv_##SS##_i64, conv_##SS##_f16, conv_##SS##_bf16, conv_##SS##_f32, \
        conv_##SS##_f64, conv_##SS##_c64                                     \
  }
static const cmx__row_fn k_conv[CMX_NUM_DTYPES][CMX_NUM_DTYPES] = {
    ROW_OF(b8),   ROW_OF(u8),  ROW_OF(u16), ROW_OF(u32), ROW_OF(u64),
    ROW_OF(i8),   ROW_OF(i16), ROW_OF(i32), ROW_OF(i64), ROW_OF(f16),
    ROW_OF(bf16), ROW_OF(f32), ROW_OF(f64), ROW_OF(c64)};

/* Same-dtype copies move bytes: one row function per item size. */
#define BYTES_ROW(T, nm)                                              \
  static void copy_##nm(char* const* p, const int64_t* st, int64_t n, \
                        const void* ctx) {                            \
    (void)ctx;                                                        \
    T* o = (T*)p[0];                                                  \
    const T* a = (const T*)p[1];                                      \
    if (st[0] == 1 && st[1] == 1)                                     \
      memcpy(o, a, (size_t)n * sizeof(T));                            \
    else                                                              \
      for (int64_t i = 0; i < n; i++) o[i * st[0]] = a[i * st[1]];    \
  }
BYTES_ROW(uint8_t, 1)
BYTES_ROW(uint16_t, 2)
BYTES_ROW(uint32_t, 4)
BYTES_ROW(uint64_t, 8)

cmx_status cmx__cpu_copy_convert(cmx_array dst, cmx_array src) {
  cmx__row_fn fn;
  if (dst->dtype == src->dtype) {
    switch (cmx_dtype_size(src->dtype)) {
      case 1:
        fn = copy_1;
        break;
      case 2:
        fn = copy_2;
        break;
      case 4:
        fn = copy_4;
        break;
      default:
        fn = copy_8;
        break;
    }
  } else {
    fn = k_conv[src->dtype][dst->dtype];
  }
  cmx__cpu_ew_run(dst, &src, 1, fn, NULL);
  return CMX_OK;
}

/* AsType and Copy: allocate (donating when sizes allow) and convert. */
cmx_status cmx__cpu_astype(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout);
cmx_status cmx__cpu_astype(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)p;
  (void)nin;
  (void)nout;
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 1);
  if (st != CMX_OK) return st;
  if (out[0]->buf == in[0]->buf && out[0]->dtype == in[0]->dtype)
    return CMX_OK; /* donated buffer already holds the values */
  return cmx__cpu_copy_convert(out[0], in[0]);
}
