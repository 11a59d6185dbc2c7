/* Binary elementwise ops: promote, broadcast, build the node.
 *
 * Dtype rules follow MLX and come from the op table (primitives/ew_ops.h):
 * inputs promote to their result type (weak scalars give way); divide,
 * arctan2 and logaddexp compute integers in float32; comparisons and
 * logical ops give bool; bitwise ops and shifts take integers and bool
 * only. The values (integer division by zero, wrap-around ...) are the
 * table's too. Composites of them: isclose, allclose, array_equal and
 * divmod.
 */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/ew_ops.h"

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

/* Binary table op vt on a and b: the dtype rules are the op table's
 * (primitives/ew_ops.h): its input rule, the classes it takes, and its
 * output rule. */
static cmx_array binary(const char* op, const cmx_primitive_vtable* vt,
                        cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS(op, a, b)) return NULL;
  const cmx__ew_op* t = cmx__ew_op_get(vt->id);
  cmx_dtype dt = result_type(a, b);
  if (t->in == CMX__EW_IN_TRUTH)
    dt = a->dtype == b->dtype ? a->dtype : CMX_BOOL;
  if (t->in == CMX__EW_IN_FLOAT) dt = at_least_float(dt);
  if (dt == CMX_BOOL && !cmx__ew_accepts(t, dt) &&
      cmx__ew_accepts(t, CMX_UINT8))
    dt = CMX_UINT8;
  if (!cmx__ew_accepts(t, dt)) {
    bool ints_only = t->kind[CMX__EW_CLASS_F] == CMX__EW_KIND_NO &&
                     t->kind[CMX__EW_CLASS_D] == CMX__EW_KIND_NO;
    if (ints_only)
      return CMX__FAIL(CMX_ERR_RUNTIME,
                       "[%s] Only allowed on integer or boolean types but "
                       "got types %s and %s.",
                       op, cmx_dtype_name(a->dtype), cmx_dtype_name(b->dtype));
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Not supported for %s.", op,
                     cmx_dtype_name(dt));
  }
  return apply2(op, vt, a, b, dt, cmx__ew_out_dtype(t, dt), s);
}

#define BINARY_OP(name, prim)                                     \
  cmx_array cmx__##name(cmx_array a, cmx_array b, cmx_stream s) { \
    return binary(#name, &cmx__vt_##prim, a, b, s);               \
  }
BINARY_OP(add, Add)
BINARY_OP(subtract, Subtract)
BINARY_OP(multiply, Multiply)
BINARY_OP(divide, Divide)
/* MLX: floor division of complex numbers is their division. */
cmx_array cmx__floor_divide(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("floor_divide", a, b)) return NULL;
  if (cmx_dtype_is_complex(result_type(a, b))) return cmx__divide(a, b, s);
  return binary("floor_divide", &cmx__vt_FloorDivide, a, b, s);
}
BINARY_OP(remainder, Remainder)
BINARY_OP(power, Power)
BINARY_OP(maximum, Maximum)
BINARY_OP(minimum, Minimum)
BINARY_OP(arctan2, ArcTan2)
/* log(exp(a) + exp(b)) of complex operands (MLX computes it; the op
 * table's kernel is real): the operand with the larger real part is
 * factored out, hi + log(1 + exp(lo - hi)); two infinities of the same
 * sign give hi itself. */
static cmx_array complex_logaddexp(cmx_array a, cmx_array b, cmx_stream s) {
  cmx_array c = cmx__as_dtype(a, CMX_COMPLEX64, s);
  cmx_array d = cmx__as_dtype(b, CMX_COMPLEX64, s);
  cmx_array a_hi = cmx__greater_equal(cmx__real(c, s), cmx__real(d, s), s);
  cmx_array hi = cmx__where(a_hi, c, d, s), lo = cmx__where(a_hi, d, c, s);
  cmx_array t = cmx__log(cmx__add(cmx__scalar(1.0, CMX_COMPLEX64),
                                  cmx__exp(cmx__subtract(lo, hi, s), s), s),
                         s);
  cmx_array same_inf =
      cmx__logical_and(cmx__isinf(cmx__real(hi, s), s),
                       cmx__equal(cmx__real(hi, s), cmx__real(lo, s), s), s);
  return cmx__where(same_inf, hi, cmx__add(hi, t, s), s);
}

cmx_array cmx__logaddexp(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("logaddexp", a, b)) return NULL;
  if (cmx_dtype_is_complex(result_type(a, b)))
    return complex_logaddexp(a, b, s);
  return binary("logaddexp", &cmx__vt_LogAddExp, a, b, s);
}
BINARY_OP(equal, Equal)
BINARY_OP(not_equal, NotEqual)
BINARY_OP(less, Less)
BINARY_OP(less_equal, LessEqual)
BINARY_OP(greater, Greater)
BINARY_OP(greater_equal, GreaterEqual)
BINARY_OP(logical_and, LogicalAnd)
BINARY_OP(logical_or, LogicalOr)
BINARY_OP(logical_xor, LogicalXor)
BINARY_OP(bitwise_and, BitwiseAnd)
BINARY_OP(bitwise_or, BitwiseOr)
BINARY_OP(bitwise_xor, BitwiseXor)
BINARY_OP(left_shift, LeftShift)
BINARY_OP(right_shift, RightShift)

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
  /* MLX: neither output has a derivative */
  if (!a->weak) a = cmx__stop_gradient(a, s); /* weak scalars stay weak */
  if (!b->weak) b = cmx__stop_gradient(b, s);
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
