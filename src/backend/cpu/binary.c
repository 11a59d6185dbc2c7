/* CPU kernels of binary elementwise primitives.
 *
 * Each (op, dtype) pair gets a row function with four layout cases
 * (contiguous, scalar-vector, vector-scalar, strided) so the compiler can
 * vectorise the common ones. float16/bfloat16 compute in float32.
 */
#include <complex.h>
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

#define LD_ID(x) (x)
#define ST_ID(x) (x)

/* BIN_ROW(fn, T in, OT out, CT compute, load, store, expr of x and y) */
#define BIN_ROW(fn, T, OT, CT, LD, ST, EXPR)                                 \
  static void fn(char* const* p, const int64_t* st, int64_t n,              \
                 const void* ctx) {                                         \
    (void)ctx;                                                              \
    OT* o = (OT*)p[0];                                                      \
    const T* a = (const T*)p[1];                                            \
    const T* b = (const T*)p[2];                                            \
    int64_t so = st[0], sa = st[1], sb = st[2];                             \
    if (so == 1 && sa == 1 && sb == 1) {                                    \
      for (int64_t i = 0; i < n; i++) {                                     \
        CT x = LD(a[i]), y = LD(b[i]);                                      \
        o[i] = ST(EXPR);                                                    \
      }                                                                     \
    } else if (so == 1 && sa == 0 && sb == 1) {                             \
      CT x = LD(a[0]);                                                      \
      for (int64_t i = 0; i < n; i++) {                                     \
        CT y = LD(b[i]);                                                    \
        o[i] = ST(EXPR);                                                    \
      }                                                                     \
    } else if (so == 1 && sa == 1 && sb == 0) {                             \
      CT y = LD(b[0]);                                                      \
      for (int64_t i = 0; i < n; i++) {                                     \
        CT x = LD(a[i]);                                                    \
        o[i] = ST(EXPR);                                                    \
      }                                                                     \
    } else {                                                                \
      for (int64_t i = 0; i < n; i++) {                                     \
        CT x = LD(a[i * sa]), y = LD(b[i * sb]);                            \
        o[i * so] = ST(EXPR);                                               \
      }                                                                     \
    }                                                                       \
  }

/* Arithmetic op over every dtype: integers wrap (computed unsigned to stay
 * defined), floats natively, halves in float32, bool as logical. */
#define ARITH_ALL(name, EXPR, BOOL_EXPR)                                     \
  BIN_ROW(name##_bool, uint8_t, uint8_t, unsigned, LD_ID, ST_ID, BOOL_EXPR)  \
  BIN_ROW(name##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, EXPR)          \
  BIN_ROW(name##_u16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, EXPR)      \
  BIN_ROW(name##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, EXPR)      \
  BIN_ROW(name##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, EXPR)      \
  BIN_ROW(name##_i8, int8_t, int8_t, uint8_t, LD_ID, ST_ID, EXPR)            \
  BIN_ROW(name##_i16, int16_t, int16_t, uint16_t, LD_ID, ST_ID, EXPR)        \
  BIN_ROW(name##_i32, int32_t, int32_t, uint32_t, LD_ID, ST_ID, EXPR)        \
  BIN_ROW(name##_i64, int64_t, int64_t, uint64_t, LD_ID, ST_ID, EXPR)        \
  BIN_ROW(name##_f16, uint16_t, uint16_t, float, cmx__h2f, cmx__f2h, EXPR)   \
  BIN_ROW(name##_bf16, uint16_t, uint16_t, float, cmx__bf2f, cmx__f2bf, EXPR) \
  BIN_ROW(name##_f32, float, float, float, LD_ID, ST_ID, EXPR)               \
  BIN_ROW(name##_f64, double, double, double, LD_ID, ST_ID, EXPR)            \
  BIN_ROW(name##_c64, cmx__c64, cmx__c64, cmx__c64, LD_ID, ST_ID, EXPR)

#define TABLE_ALL(name)                                                     \
  {name##_bool, name##_u8,  name##_u16, name##_u32,  name##_u64,           \
   name##_i8,   name##_i16, name##_i32, name##_i64,  name##_f16,           \
   name##_bf16, name##_f32, name##_f64, name##_c64}

ARITH_ALL(add, x + y, (x | y))

/* The row function of primitive id for the input dtype; NULL when the
 * pair is not supported. */
static cmx__row_fn row_for(int id, cmx_dtype dt) {
  static const cmx__row_fn add_t[CMX_NUM_DTYPES] = TABLE_ALL(add);
  switch (id) {
    case CMX__P_Add: return add_t[dt];
    default: return NULL;
  }
}

CMX__KERNEL(cmx__cpu_binary) {
  (void)nin;
  (void)nout;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx__row_fn fn = row_for(vt->id, in[0]->dtype);
  if (!fn)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            vt->name, cmx_dtype_name(in[0]->dtype));
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 2);
  if (st != CMX_OK) return st;
  cmx__cpu_ew_run(out[0], in, 2, fn, NULL);
  return CMX_OK;
}
