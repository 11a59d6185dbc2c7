/* CPU kernels of comparison, logical, bitwise and shift primitives.
 *
 * Comparisons and logical ops take two inputs of one dtype and write bool;
 * complex numbers compare for equality by both parts and order
 * lexicographically (real part first), as NumPy does. Shifts never hit
 * undefined behaviour: counts that are negative or at least the bit width
 * give 0 for left shifts and the sign fill (0 or -1) for right shifts.
 */
#include "backend/cpu/ew_rows.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

/* Rows writing bool for every input dtype: E over real values (compute
 * type the storage type, float for halves), CE over complex64. */
#define TO_BOOL_ROWS(nm, E, CE)                                               \
  BIN_ROW(nm##_bool, uint8_t, uint8_t, uint8_t, LD_ID, ST_B, E)               \
  BIN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_B, E)                 \
  BIN_ROW(nm##_u16, uint16_t, uint8_t, uint16_t, LD_ID, ST_B, E)              \
  BIN_ROW(nm##_u32, uint32_t, uint8_t, uint32_t, LD_ID, ST_B, E)              \
  BIN_ROW(nm##_u64, uint64_t, uint8_t, uint64_t, LD_ID, ST_B, E)              \
  BIN_ROW(nm##_i8, int8_t, uint8_t, int8_t, LD_ID, ST_B, E)                   \
  BIN_ROW(nm##_i16, int16_t, uint8_t, int16_t, LD_ID, ST_B, E)                \
  BIN_ROW(nm##_i32, int32_t, uint8_t, int32_t, LD_ID, ST_B, E)                \
  BIN_ROW(nm##_i64, int64_t, uint8_t, int64_t, LD_ID, ST_B, E)                \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_f16, uint16_t, uint8_t, float, LD_H, ST_B, \
            E)                                                                \
  BIN_ROW_A(CMX__SIMD_CLONES, nm##_bf16, uint16_t, uint8_t, float, LD_BF,     \
            ST_B, E)                                                          \
  BIN_ROW(nm##_f32, float, uint8_t, float, LD_ID, ST_B, E)                    \
  BIN_ROW(nm##_f64, double, uint8_t, double, LD_ID, ST_B, E)                  \
  BIN_ROW(nm##_c64, cmx__c64, uint8_t, cmx__c64, LD_ID, ST_B, CE)

/* Integer rows (bool included) keeping the dtype. */
#define BITS_ROWS(nm, E)                                           \
  BIN_ROW(nm##_bool, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, E)   \
  BIN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, E)     \
  BIN_ROW(nm##_u16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, E) \
  BIN_ROW(nm##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, E) \
  BIN_ROW(nm##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, E) \
  BIN_ROW(nm##_i8, int8_t, int8_t, int8_t, LD_ID, ST_ID, E)        \
  BIN_ROW(nm##_i16, int16_t, int16_t, int16_t, LD_ID, ST_ID, E)    \
  BIN_ROW(nm##_i32, int32_t, int32_t, int32_t, LD_ID, ST_ID, E)    \
  BIN_ROW(nm##_i64, int64_t, int64_t, int64_t, LD_ID, ST_ID, E)

#define INTS_T(nm)                                                         \
  [CMX_UINT8] = nm##_u8, [CMX_UINT16] = nm##_u16, [CMX_UINT32] = nm##_u32, \
  [CMX_UINT64] = nm##_u64, [CMX_INT8] = nm##_i8, [CMX_INT16] = nm##_i16,   \
  [CMX_INT32] = nm##_i32, [CMX_INT64] = nm##_i64
#define BITS_T(nm) [CMX_BOOL] = nm##_bool, INTS_T(nm)
#define ALL_T(nm)                                                   \
  BITS_T(nm), [CMX_FLOAT16] = nm##_f16, [CMX_BFLOAT16] = nm##_bf16, \
              [CMX_FLOAT32] = nm##_f32, [CMX_FLOAT64] = nm##_f64,   \
              [CMX_COMPLEX64] = nm##_c64

/* ---------------- complex order ---------------- */
static inline bool ceq(cmx__c64 x, cmx__c64 y) {
  return crealf(x) == crealf(y) && cimagf(x) == cimagf(y);
}
static inline bool clt(cmx__c64 x, cmx__c64 y) {
  return crealf(x) < crealf(y) ||
         (crealf(x) == crealf(y) && cimagf(x) < cimagf(y));
}
static inline bool cle(cmx__c64 x, cmx__c64 y) {
  return crealf(x) < crealf(y) ||
         (crealf(x) == crealf(y) && cimagf(x) <= cimagf(y));
}
static inline bool cnz(cmx__c64 x) {
  return crealf(x) != 0 || cimagf(x) != 0;
}

TO_BOOL_ROWS(equal, x == y, ceq(x, y))
TO_BOOL_ROWS(not_equal, x != y, !ceq(x, y))
TO_BOOL_ROWS(less, x < y, clt(x, y))
TO_BOOL_ROWS(less_equal, x <= y, cle(x, y))
TO_BOOL_ROWS(greater, x > y, clt(y, x))
TO_BOOL_ROWS(greater_equal, x >= y, cle(y, x))
TO_BOOL_ROWS(logical_and, x != 0 && y != 0, cnz(x) && cnz(y))
TO_BOOL_ROWS(logical_or, x != 0 || y != 0, cnz(x) || cnz(y))
TO_BOOL_ROWS(logical_xor, (x != 0) != (y != 0), cnz(x) != cnz(y))

BITS_ROWS(bitwise_and, x& y)
BITS_ROWS(bitwise_or, x | y)
BITS_ROWS(bitwise_xor, x ^ y)

/* ---------------- shifts ---------------- */
/* The shifted value's low `bits` bits are the result (the store truncates
 * to the dtype). */
static inline uint64_t lsh_u(uint64_t x, uint64_t y, unsigned bits) {
  return y >= bits ? 0 : x << y;
}
static inline uint64_t lsh_s(int64_t x, int64_t y, unsigned bits) {
  return (y < 0 || y >= (int64_t)bits) ? 0 : (uint64_t)x << y;
}
static inline uint64_t rsh_u(uint64_t x, uint64_t y, unsigned bits) {
  return y >= bits ? 0 : x >> y;
}
/* Arithmetic right shift written with non-negative operands only. */
static inline int64_t rsh_s(int64_t x, int64_t y, unsigned bits) {
  if (y < 0 || y >= (int64_t)bits) return x < 0 ? -1 : 0;
  return x < 0 ? ~(~x >> y) : x >> y;
}
#define SHIFT_ROWS(nm, U, S)                                                 \
  BIN_ROW(nm##_u8, uint8_t, uint8_t, uint8_t, LD_ID, ST_ID, U(x, y, 8))      \
  BIN_ROW(nm##_u16, uint16_t, uint16_t, uint16_t, LD_ID, ST_ID, U(x, y, 16)) \
  BIN_ROW(nm##_u32, uint32_t, uint32_t, uint32_t, LD_ID, ST_ID, U(x, y, 32)) \
  BIN_ROW(nm##_u64, uint64_t, uint64_t, uint64_t, LD_ID, ST_ID, U(x, y, 64)) \
  BIN_ROW(nm##_i8, int8_t, int8_t, int8_t, LD_ID, ST_ID, S(x, y, 8))         \
  BIN_ROW(nm##_i16, int16_t, int16_t, int16_t, LD_ID, ST_ID, S(x, y, 16))    \
  BIN_ROW(nm##_i32, int32_t, int32_t, int32_t, LD_ID, ST_ID, S(x, y, 32))    \
  BIN_ROW(nm##_i64, int64_t, int64_t, int64_t, LD_ID, ST_ID, S(x, y, 64))
SHIFT_ROWS(left_shift, lsh_u, lsh_s)
SHIFT_ROWS(right_shift, rsh_u, rsh_s)

/* ---------------- tables ---------------- */
#define TABLE(nm, ...) \
  static const cmx__row_fn nm##_t[CMX_NUM_DTYPES] = {__VA_ARGS__};
TABLE(equal, ALL_T(equal))
TABLE(not_equal, ALL_T(not_equal))
TABLE(less, ALL_T(less))
TABLE(less_equal, ALL_T(less_equal))
TABLE(greater, ALL_T(greater))
TABLE(greater_equal, ALL_T(greater_equal))
TABLE(logical_and, ALL_T(logical_and))
TABLE(logical_or, ALL_T(logical_or))
TABLE(logical_xor, ALL_T(logical_xor))
TABLE(bitwise_and, BITS_T(bitwise_and))
TABLE(bitwise_or, BITS_T(bitwise_or))
TABLE(bitwise_xor, BITS_T(bitwise_xor))
TABLE(left_shift, INTS_T(left_shift))
TABLE(right_shift, INTS_T(right_shift))

static const cmx__row_fn* const k_rows[CMX__NUM_PRIMITIVES] = {
    [CMX__P_Equal] = equal_t,
    [CMX__P_NotEqual] = not_equal_t,
    [CMX__P_Less] = less_t,
    [CMX__P_LessEqual] = less_equal_t,
    [CMX__P_Greater] = greater_t,
    [CMX__P_GreaterEqual] = greater_equal_t,
    [CMX__P_LogicalAnd] = logical_and_t,
    [CMX__P_LogicalOr] = logical_or_t,
    [CMX__P_LogicalXor] = logical_xor_t,
    [CMX__P_BitwiseAnd] = bitwise_and_t,
    [CMX__P_BitwiseOr] = bitwise_or_t,
    [CMX__P_BitwiseXor] = bitwise_xor_t,
    [CMX__P_LeftShift] = left_shift_t,
    [CMX__P_RightShift] = right_shift_t,
};

CMX__KERNEL(cmx__cpu_compare) {
  (void)nin;
  (void)nout;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  const cmx__row_fn* t =
      vt->id >= 0 && vt->id < CMX__NUM_PRIMITIVES ? k_rows[vt->id] : NULL;
  cmx__row_fn fn = t ? t[in[0]->dtype] : NULL;
  if (!fn)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", vt->name,
                            cmx_dtype_name(in[0]->dtype));
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 2);
  if (st != CMX_OK) return st;
  cmx__cpu_ew_run(out[0], in, 2, fn, NULL);
  return CMX_OK;
}
