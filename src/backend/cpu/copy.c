/* Copy and dtype conversion kernels (AsType, Copy): every (source,
 * destination) dtype pair gets its own row function, computing the
 * conversion the elementwise semantics define (cmx_cvt_<dst>, in
 * primitives/ew_scalar.h: float to integer saturates, NaN gives 0). */
#include <complex.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */

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
#define CONV_ROW_A(ATTR, SS, DS)                                               \
  ATTR static void conv_##SS##_##DS(char* const* p, const int64_t* st,         \
                                    int64_t n, const void* ctx) {              \
    (void)ctx;                                                                 \
    cmx_##DS##_t* o = (cmx_##DS##_t*)p[0];                                     \
    const cmx_##SS##_t* a = (const cmx_##SS##_t*)p[1];                         \
    int64_t so = st[0], sa = st[1];                                            \
    if (so == 1 && sa == 1)                                                    \
      for (int64_t i = 0; i < n; i++) o[i] = cmx_cvt_##DS(SS, a[i]);           \
    else                                                                       \
      for (int64_t i = 0; i < n; i++) o[i * so] = cmx_cvt_##DS(SS, a[i * sa]); \
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
