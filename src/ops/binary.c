/* Binary elementwise ops: promote, broadcast, build the node.
 *
 * Dtype rules follow MLX: inputs promote to their result type (weak
 * scalars give way); divide, arctan2 and logaddexp compute integers in
 * float32; comparisons and logical ops give bool; bitwise ops and shifts
 * take integers and bool only. Integer floor division and remainder follow
 * NumPy (floor, sign of the divisor) and give 0 for a zero divisor.
 * Composites of them: isclose, allclose, array_equal and divmod.
 */
#include <string.h>

#include "ops/ops_internal.h"

static cmx_dtype at_least_float(cmx_dtype d) {
  return cmx_dtype_is_inexact(d) ? d : cmx_dtype_promote(d, CMX_FLOAT32);
}

/* Converts a and b to dt and broadcasts them to a common shape. */
static bool prepare(const char* op, cmx_array a, cmx_array b, cmx_dtype dt,
                    cmx_stream s, cmx_array* pa, cmx_array* pb) {
  /* Same shapes (the common case) need no broadcasting work. */
  if (a->ndim == b->ndim &&
      memcmp(a->dims, b->dims, (size_t)a->ndim * sizeof(int64_t)) == 0) {
    *pa = cmx__as_dtype(a, dt, s);
    *pb = cmx__as_dtype(b, dt, s);
    return *pa && *pb;
  }
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!cmx__broadcast_shape(op, a->dims, a->ndim, b->dims, b->ndim, shape, &nd))
    return false;
  *pa = cmx__broadcast_to(cmx__as_dtype(a, dt, s), shape, nd, s);
  *pb = cmx__broadcast_to(cmx__as_dtype(b, dt, s), shape, nd, s);
  return *pa && *pb;
}

static cmx_dtype result_type(cmx_array a, cmx_array b) {
  cmx_array ab[2] = {a, b};
  return cmx__result_type(ab, 2);
}

/* Primitive vt on a and b converted to in_dt, giving out_dt. */
static cmx_array apply2(const char* op, const cmx_primitive_vtable* vt,
                        cmx_array a, cmx_array b, cmx_dtype in_dt,
                        cmx_dtype out_dt, cmx_stream s) {
  cmx_array in[2];
  if (!prepare(op, a, b, in_dt, s, &in[0], &in[1])) return NULL;
  return cmx__apply(vt, NULL, 0, s, in, 2, in[0]->dims, in[0]->ndim, out_dt);
}

/* Kinds of binary ops, by how they pick dtypes. */
typedef enum {
  K_SAME,    /* promoted dtype in and out */
  K_REAL,    /* same, complex64 rejected */
  K_FLOAT,   /* at least float in and out */
  K_FREAL,   /* at least float, complex64 rejected */
  K_CMP,     /* promoted in, bool out */
  K_LOGICAL, /* one shared dtype (else both as bool) in, bool out */
  K_BITS,    /* integer or bool only, promoted */
  K_SHIFT    /* integer only (bool as uint8), promoted */
} bin_kind;

static cmx_array binary(const char* op, const cmx_primitive_vtable* vt,
                        bin_kind kind, cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS(op, a, b)) return NULL;
  cmx_dtype dt = result_type(a, b), out;
  switch (kind) {
    case K_REAL:
    case K_FREAL:
      if (dt == CMX_COMPLEX64)
        return CMX__FAIL(CMX_ERR_TYPE, "[%s] Not supported for complex64.", op);
      break;
    case K_BITS:
    case K_SHIFT:
      if (!cmx_dtype_is_integer(dt) && dt != CMX_BOOL)
        return CMX__FAIL(CMX_ERR_TYPE,
                         "[%s] Only allowed on integer or boolean types but "
                         "got types %s and %s.",
                         op, cmx_dtype_name(a->dtype),
                         cmx_dtype_name(b->dtype));
      if (kind == K_SHIFT && dt == CMX_BOOL) dt = CMX_UINT8;
      break;
    case K_LOGICAL:
      /* The kernel reads any dtype as truth values; mixed dtypes are
       * converted to bool rather than promoted, so no value can round to
       * zero on the way. */
      dt = a->dtype == b->dtype ? a->dtype : CMX_BOOL;
      break;
    default:
      break;
  }
  if (kind == K_FLOAT || kind == K_FREAL) dt = at_least_float(dt);
  out = (kind == K_CMP || kind == K_LOGICAL) ? CMX_BOOL : dt;
  return apply2(op, vt, a, b, dt, out, s);
}

#define BINARY_OP(name, prim, kind)                               \
  cmx_array cmx__##name(cmx_array a, cmx_array b, cmx_stream s) { \
    return binary(#name, &cmx__vt_##prim, kind, a, b, s);         \
  }
BINARY_OP(add, Add, K_SAME)
BINARY_OP(subtract, Subtract, K_SAME)
BINARY_OP(multiply, Multiply, K_SAME)
BINARY_OP(divide, Divide, K_FLOAT)
BINARY_OP(floor_divide, FloorDivide, K_REAL)
BINARY_OP(remainder, Remainder, K_REAL)
BINARY_OP(power, Power, K_SAME)
BINARY_OP(maximum, Maximum, K_SAME)
BINARY_OP(minimum, Minimum, K_SAME)
BINARY_OP(arctan2, ArcTan2, K_FREAL)
BINARY_OP(logaddexp, LogAddExp, K_FREAL)
BINARY_OP(equal, Equal, K_CMP)
BINARY_OP(not_equal, NotEqual, K_CMP)
BINARY_OP(less, Less, K_CMP)
BINARY_OP(less_equal, LessEqual, K_CMP)
BINARY_OP(greater, Greater, K_CMP)
BINARY_OP(greater_equal, GreaterEqual, K_CMP)
BINARY_OP(logical_and, LogicalAnd, K_LOGICAL)
BINARY_OP(logical_or, LogicalOr, K_LOGICAL)
BINARY_OP(logical_xor, LogicalXor, K_LOGICAL)
BINARY_OP(bitwise_and, BitwiseAnd, K_BITS)
BINARY_OP(bitwise_or, BitwiseOr, K_BITS)
BINARY_OP(bitwise_xor, BitwiseXor, K_BITS)
BINARY_OP(left_shift, LeftShift, K_SHIFT)
BINARY_OP(right_shift, RightShift, K_SHIFT)

#define PUBLIC_BINARY(name)                                       \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_array b, \
                        cmx_stream s) {                           \
    CMX__PUBLIC(out, #name, cmx__##name(a, b, s));                \
  }
CMX__BINARY_OPS(PUBLIC_BINARY)

/* A weak float scalar (gives way to a strongly typed float operand). */
static cmx_array weak_float(const char* op, double v) {
  cmx__scalar_value sv;
  sv.f = v;
  return cmx__own(cmx__scalar_node(op, sv, 2, CMX_FLOAT32, true));
}

/* ---------------- isclose / allclose / array_equal ---------------- */
cmx_array cmx__isclose(cmx_array a, cmx_array b, double rtol, double atol,
                       bool equal_nan, cmx_stream s) {
  if (!CMX__ARGS("isclose", a, b)) return NULL;
  /* |a - b| <= atol + rtol * |b|; infinities break the difference, so they
   * are close exactly when both are the same infinity. */
  cmx_array rhs = cmx__add(
      weak_float("isclose", atol),
      cmx__multiply(weak_float("isclose", rtol), cmx__abs(b, s), s), s);
  cmx_array out = cmx__less_equal(cmx__abs(cmx__subtract(a, b, s), s), rhs, s);
  cmx_array any_inf = cmx__logical_or(cmx__isinf(a, s), cmx__isinf(b, s), s);
  cmx_array both_inf = cmx__logical_or(
      cmx__logical_and(cmx__isposinf(a, s), cmx__isposinf(b, s), s),
      cmx__logical_and(cmx__isneginf(a, s), cmx__isneginf(b, s), s), s);
  out = cmx__logical_and(out, cmx__logical_not(any_inf, s), s);
  out = cmx__logical_or(out, both_inf, s);
  if (equal_nan)
    out = cmx__logical_or(
        out, cmx__logical_and(cmx__isnan(a, s), cmx__isnan(b, s), s), s);
  return out;
}
cmx_array cmx__allclose(cmx_array a, cmx_array b, double rtol, double atol,
                        bool equal_nan, cmx_stream s) {
  return cmx__all(cmx__isclose(a, b, rtol, atol, equal_nan, s), NULL, 0, false,
                  s);
}
cmx_array cmx__array_equal(cmx_array a, cmx_array b, bool equal_nan,
                           cmx_stream s) {
  if (!CMX__ARGS("array_equal", a, b)) return NULL;
  bool same = a->ndim == b->ndim;
  for (int d = 0; same && d < a->ndim; d++) same = a->dims[d] == b->dims[d];
  if (!same) return cmx__scalar(0, CMX_BOOL);
  cmx_array eq = cmx__equal(a, b, s);
  if (equal_nan)
    eq = cmx__logical_or(
        eq, cmx__logical_and(cmx__isnan(a, s), cmx__isnan(b, s), s), s);
  return cmx__all(eq, NULL, 0, false, s);
}

/* ---------------- divmod ---------------- */
bool cmx__divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("divmod", a, b)) return false;
  outs[0] = cmx__floor_divide(a, b, s);
  outs[1] = outs[0] ? cmx__remainder(a, b, s) : NULL;
  return outs[1] != NULL;
}

/* public wrappers of the comparisons above and divmod */
cmx_status cmx_isclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                       double atol, bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "isclose", cmx__isclose(a, b, rtol, atol, equal_nan, s));
}
cmx_status cmx_allclose(cmx_array* out, cmx_array a, cmx_array b, double rtol,
                        double atol, bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "allclose", cmx__allclose(a, b, rtol, atol, equal_nan, s));
}
cmx_status cmx_array_equal(cmx_array* out, cmx_array a, cmx_array b,
                           bool equal_nan, cmx_stream s) {
  CMX__PUBLIC(out, "array_equal", cmx__array_equal(a, b, equal_nan, s));
}
cmx_status cmx_divmod(cmx_array* outs, cmx_array a, cmx_array b, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[divmod] output pointer is NULL");
  outs[0] = outs[1] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__divmod(outs, a, b, s);
  return cmx__scope_exit_multi(mark, ok, outs, 2);
}
