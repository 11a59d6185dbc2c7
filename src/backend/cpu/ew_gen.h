/* CPU row functions instantiated from the op table (primitives/ew_ops.h).
 *
 * CMX__CPU_EW_ROWS is an X for the table's row lists: for each row it
 * defines one row function per supported dtype (ew_rows.h's generators:
 * contiguous, broadcast-scalar and strided loops that gcc vectorises) and
 * the row's table, `const cmx__row_fn cmx__cpu_rows_<Name>[dtype]` (NULL
 * for dtypes the op does not take). A family file instantiates its list:
 *
 *     CMX__EW_UNARY_OPS(CMX__CPU_EW_ROWS)
 *
 * Compute types: the table's E slots compute integers in their own type,
 * W slots in `unsigned` (8/16-bit), uint32_t or uint64_t; bool in uint8_t;
 * float16/bfloat16 and float32 in float, float64 in double, complex64 as
 * cmx_c64. float16/bfloat16 rows are also compiled for AVX2 and AVX-512
 * (their conversions vectorise there), float32 rows too for ops flagged
 * CMX__EW_HEAVY.
 */
#ifndef CMX_BACKEND_CPU_EW_GEN_H
#define CMX_BACKEND_CPU_EW_GEN_H

#include "backend/cpu/ew_rows.h"
#include "backend/cpu/ew_scalar_cpu.h"
#include "primitives/ew_ops.h"

/* Parameters (cmx_ew_params) reach the rows through their ctx pointer. */
#define CMX_EW_P (*(const cmx_ew_params*)ctx)

/* Row generator by arity. */
#define CMX__CPU_ROW_1 UN_ROW_A
#define CMX__CPU_ROW_2 BIN_ROW_A
#define CMX__CPU_ROW(ar) CMX__EW_CAT(CMX__CPU_ROW_, ar)

/* Output storage type (OT) and store (ST) of a real row, by output rule. */
#define CMX__CPU_OT(out, T) CMX__EW_CAT(CMX__CPU_OT_, out)(T)
#define CMX__CPU_OT_CMX__EW_OUT_SAME(T) T
#define CMX__CPU_OT_CMX__EW_OUT_REAL(T) T
#define CMX__CPU_OT_CMX__EW_OUT_BOOL(T) uint8_t
#define CMX__CPU_ST(out, ST) CMX__EW_CAT(CMX__CPU_ST_, out)(ST)
#define CMX__CPU_ST_CMX__EW_OUT_SAME(ST) ST
#define CMX__CPU_ST_CMX__EW_OUT_REAL(ST) ST
#define CMX__CPU_ST_CMX__EW_OUT_BOOL(ST) ST_B
/* Complex rows: REAL outputs are float32. */
#define CMX__CPU_OTC(out) CMX__EW_CAT(CMX__CPU_OTC_, out)
#define CMX__CPU_OTC_CMX__EW_OUT_SAME cmx__c64
#define CMX__CPU_OTC_CMX__EW_OUT_REAL float
#define CMX__CPU_OTC_CMX__EW_OUT_BOOL uint8_t
/* Attributes of float32 rows by flags. */
#define CMX__CPU_ATTR32(fl) CMX__EW_CAT(CMX__CPU_ATTR32_, fl)
#define CMX__CPU_ATTR32_0
#define CMX__CPU_ATTR32_CMX__EW_PARAMS
#define CMX__CPU_ATTR32_CMX__EW_HEAVY CMX__SIMD_CLONES

/* One row: CMX__CPU_ONE(attributes, arity, name, storage, out rule,
 * compute type, load, store, expression). */
#define CMX__CPU_ONE(A, ar, fn, T, out, CT, LD, ST, expr) \
  CMX__CPU_ROW(ar)                                        \
  (A, fn, T, CMX__CPU_OT(out, T), CT, LD, CMX__CPU_ST(out, ST), expr)

/* ---- rows per class: CMX__CPU_<class>(kind, (expr), Name, ar, out, fl) */
#define CMX__CPU_B(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_B_, kind)(expr, Nm, ar, out)
#define CMX__CPU_B_NO(expr, Nm, ar, out)
#define CMX__CPU_B_E(expr, Nm, ar, out)                                        \
  CMX__CPU_ONE(, ar, cmx__ew_##Nm##_bool, uint8_t, out, uint8_t, LD_ID, ST_ID, \
               expr)

/* Four integer rows: suffixes s8..s64, storage T8..T64, compute C8..C64. */
#define CMX__CPU_INT_ROW(expr, Nm, ar, out, sfx, T, CT) \
  CMX__CPU_ONE(, ar, cmx__ew_##Nm##_##sfx, T, out, CT, LD_ID, ST_ID, expr)
#define CMX__CPU_INT4(e, Nm, ar, out, s8, s16, s32, s64, T8, T16, T32, T64, \
                      C8, C16, C32, C64)                                    \
  CMX__CPU_INT_ROW(e, Nm, ar, out, s8, T8, C8)                              \
  CMX__CPU_INT_ROW(e, Nm, ar, out, s16, T16, C16)                           \
  CMX__CPU_INT_ROW(e, Nm, ar, out, s32, T32, C32)                           \
  CMX__CPU_INT_ROW(e, Nm, ar, out, s64, T64, C64)
#define CMX__CPU_UINTS(e, Nm, ar, out, C8, C16)                       \
  CMX__CPU_INT4(e, Nm, ar, out, u8, u16, u32, u64, uint8_t, uint16_t, \
                uint32_t, uint64_t, C8, C16, uint32_t, uint64_t)
#define CMX__CPU_U(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_U_, kind)(expr, Nm, ar, out)
#define CMX__CPU_U_NO(expr, Nm, ar, out)
#define CMX__CPU_U_E(e, Nm, ar, out) \
  CMX__CPU_UINTS(e, Nm, ar, out, uint8_t, uint16_t)
#define CMX__CPU_U_W(e, Nm, ar, out) \
  CMX__CPU_UINTS(e, Nm, ar, out, unsigned, unsigned)
#define CMX__CPU_S(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_S_, kind)(expr, Nm, ar, out)
#define CMX__CPU_S_NO(expr, Nm, ar, out)
#define CMX__CPU_S_E(e, Nm, ar, out)                                         \
  CMX__CPU_INT4(e, Nm, ar, out, i8, i16, i32, i64, int8_t, int16_t, int32_t, \
                int64_t, int8_t, int16_t, int32_t, int64_t)
#define CMX__CPU_S_W(e, Nm, ar, out)                                         \
  CMX__CPU_INT4(e, Nm, ar, out, i8, i16, i32, i64, int8_t, int16_t, int32_t, \
                int64_t, unsigned, unsigned, uint32_t, uint64_t)

#define CMX__CPU_F(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_F_, kind)(expr, Nm, ar, out, fl)
#define CMX__CPU_F_NO(expr, Nm, ar, out, fl)
#define CMX__CPU_F_E(expr, Nm, ar, out, fl)                                    \
  CMX__CPU_ONE(CMX__SIMD_CLONES, ar, cmx__ew_##Nm##_f16, uint16_t, out, float, \
               LD_H, ST_H, expr)                                               \
  CMX__CPU_ONE(CMX__SIMD_CLONES, ar, cmx__ew_##Nm##_bf16, uint16_t, out,       \
               float, LD_BF, ST_BF, expr)                                      \
  CMX__CPU_ONE(CMX__CPU_ATTR32(fl), ar, cmx__ew_##Nm##_f32, float, out, float, \
               LD_ID, ST_ID, expr)
#define CMX__CPU_D(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_D_, kind)(expr, Nm, ar, out)
#define CMX__CPU_D_NO(expr, Nm, ar, out)
#define CMX__CPU_D_E(expr, Nm, ar, out)                                     \
  CMX__CPU_ONE(, ar, cmx__ew_##Nm##_f64, double, out, double, LD_ID, ST_ID, \
               expr)
#define CMX__CPU_C(kind, expr, Nm, ar, out, fl) \
  CMX__EW_CAT(CMX__CPU_C_, kind)(expr, Nm, ar, out)
#define CMX__CPU_C_NO(expr, Nm, ar, out)
#define CMX__CPU_C_E(expr, Nm, ar, out)                                \
  CMX__CPU_ROW(ar)                                                     \
  (, cmx__ew_##Nm##_c64, cmx__c64, CMX__CPU_OTC(out), cmx__c64, LD_ID, \
   CMX__CPU_ST(out, ST_ID), expr)

/* ---- table entries per class: CMX__CPU_T<class>(kind, (expr), Name) */
#define CMX__CPU_TB(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TB_, kind)(Nm)
#define CMX__CPU_TB_NO(Nm)
#define CMX__CPU_TB_E(Nm) [CMX_BOOL] = cmx__ew_##Nm##_bool,
#define CMX__CPU_TU(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TU_, kind)(Nm)
#define CMX__CPU_TU_NO(Nm)
#define CMX__CPU_TU_E(Nm)                                             \
  [CMX_UINT8] = cmx__ew_##Nm##_u8, [CMX_UINT16] = cmx__ew_##Nm##_u16, \
  [CMX_UINT32] = cmx__ew_##Nm##_u32, [CMX_UINT64] = cmx__ew_##Nm##_u64,
#define CMX__CPU_TU_W CMX__CPU_TU_E
#define CMX__CPU_TS(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TS_, kind)(Nm)
#define CMX__CPU_TS_NO(Nm)
#define CMX__CPU_TS_E(Nm)                                           \
  [CMX_INT8] = cmx__ew_##Nm##_i8, [CMX_INT16] = cmx__ew_##Nm##_i16, \
  [CMX_INT32] = cmx__ew_##Nm##_i32, [CMX_INT64] = cmx__ew_##Nm##_i64,
#define CMX__CPU_TS_W CMX__CPU_TS_E
#define CMX__CPU_TF(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TF_, kind)(Nm)
#define CMX__CPU_TF_NO(Nm)
#define CMX__CPU_TF_E(Nm)                                                   \
  [CMX_FLOAT16] = cmx__ew_##Nm##_f16, [CMX_BFLOAT16] = cmx__ew_##Nm##_bf16, \
  [CMX_FLOAT32] = cmx__ew_##Nm##_f32,
#define CMX__CPU_TD(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TD_, kind)(Nm)
#define CMX__CPU_TD_NO(Nm)
#define CMX__CPU_TD_E(Nm) [CMX_FLOAT64] = cmx__ew_##Nm##_f64,
#define CMX__CPU_TC(kind, expr, Nm) CMX__EW_CAT(CMX__CPU_TC_, kind)(Nm)
#define CMX__CPU_TC_NO(Nm)
#define CMX__CPU_TC_E(Nm) [CMX_COMPLEX64] = cmx__ew_##Nm##_c64,

/* The X for a row list. */
#define CMX__CPU_EW_ROWS(...) CMX__EW_FWD(CMX__CPU_EW_ROWS_, __VA_ARGS__)
#define CMX__CPU_EW_ROWS_(Nm, ar, out, in, fl, B, U, S, F, D, C)    \
  CMX__EW_SLOT_ARGS(CMX__CPU_B, B, Nm, ar, out, fl)                 \
  CMX__EW_SLOT_ARGS(CMX__CPU_U, U, Nm, ar, out, fl)                 \
  CMX__EW_SLOT_ARGS(CMX__CPU_S, S, Nm, ar, out, fl)                 \
  CMX__EW_SLOT_ARGS(CMX__CPU_F, F, Nm, ar, out, fl)                 \
  CMX__EW_SLOT_ARGS(CMX__CPU_D, D, Nm, ar, out, fl)                 \
  CMX__EW_SLOT_ARGS(CMX__CPU_C, C, Nm, ar, out, fl)                 \
  const cmx__row_fn cmx__cpu_rows_##Nm[CMX_NUM_DTYPES] = {          \
      CMX__EW_SLOT_ARGS(CMX__CPU_TB, B, Nm) CMX__EW_SLOT_ARGS(      \
          CMX__CPU_TU, U, Nm) CMX__EW_SLOT_ARGS(CMX__CPU_TS, S, Nm) \
          CMX__EW_SLOT_ARGS(CMX__CPU_TF, F, Nm) CMX__EW_SLOT_ARGS(  \
              CMX__CPU_TD, D, Nm) CMX__EW_SLOT_ARGS(CMX__CPU_TC, C, Nm)};

/* Declarations of every row table (for the dispatcher). */
#define CMX__CPU_EW_DECLARE(Nm, ...) \
  extern const cmx__row_fn cmx__cpu_rows_##Nm[CMX_NUM_DTYPES];

#endif
