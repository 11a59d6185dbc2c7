/* Unary elementwise ops, dtype conversion, and nan_to_num (a composite). */
#include <float.h>
#include <math.h>

#include "ops/ops_internal.h"
#include "primitives/elementwise.h"
#include "primitives/ew_ops.h"

cmx_array cmx__astype(cmx_array a, cmx_dtype dt, cmx_stream s) {
  if (!CMX__ARGS("astype", a)) return NULL;
  if (!cmx_dtype_valid((int)dt))
    return CMX__FAIL(CMX_ERR_TYPE, "[astype] invalid dtype %d", (int)dt);
  cmx__astype_params q = {.dtype = (int)dt};
  return cmx__apply(&cmx__vt_AsType, &q, sizeof q, s, &a, 1, a->dims, a->ndim,
                    dt);
}

cmx_status cmx_astype(cmx_array* out, cmx_array a, cmx_dtype dt, cmx_stream s) {
  CMX__PUBLIC(out, "astype", cmx__astype(a, dt, s));
}

cmx_array cmx__copy(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("copy", a)) return NULL;
  return cmx__apply(&cmx__vt_Copy, NULL, 0, s, &a, 1, a->dims, a->ndim,
                    a->dtype);
}

/* ---------------- unary elementwise ----------------
 * Dtype rules follow MLX: transcendental ops compute integer and bool
 * inputs in float32 (at_least_float); abs/sign/negative/square keep
 * integer dtypes; rounding is the identity on integers; predicates give
 * bool; real/imag/abs of complex64 give float32. */

static cmx_dtype at_least_float(cmx_dtype d) {
  return cmx_dtype_is_inexact(d) ? d : cmx_dtype_promote(d, CMX_FLOAT32);
}

/* Primitive vt applied to a, with output dtype out_dt. */
static cmx_array unary(const cmx_primitive_vtable* vt, cmx_array a,
                       cmx_dtype out_dt, cmx_stream s) {
  return cmx__apply(vt, NULL, 0, s, &a, 1, a->dims, a->ndim, out_dt);
}

/* a itself as an op result: weak scalars become ordinary arrays, as an op
 * on a Python scalar gives a typed array in MLX. */
static cmx_array identity(cmx_array a) {
  return a->weak ? cmx__own(cmx__weak_cast(a, a->dtype)) : a;
}

static void* no_complex(const char* op) {
  return CMX__FAIL(CMX_ERR_VALUE, "[%s] Not supported for complex64.", op);
}

/* A float function: integer and bool inputs are converted to float32;
 * complex64 where the op table's row takes it. */
static cmx_array float_unary(const char* op, const cmx_primitive_vtable* vt,
                             cmx_array a, cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  cmx_dtype dt = at_least_float(a->dtype);
  if (!cmx__ew_accepts(cmx__ew_op_get(vt->id), dt)) return no_complex(op);
  cmx_array x = cmx__as_dtype(a, dt, s);
  return x ? unary(vt, x, dt, s) : NULL;
}

#define FLOAT_UNARY(name, prim)                       \
  cmx_array cmx__##name(cmx_array a, cmx_stream s) {  \
    return float_unary(#name, &cmx__vt_##prim, a, s); \
  }
FLOAT_UNARY(sqrt, Sqrt)
FLOAT_UNARY(rsqrt, Rsqrt)
FLOAT_UNARY(exp, Exp)
FLOAT_UNARY(expm1, Expm1)
FLOAT_UNARY(log, Log)
FLOAT_UNARY(log2, Log2)
FLOAT_UNARY(log10, Log10)
FLOAT_UNARY(log1p, Log1p)
FLOAT_UNARY(sin, Sin)
FLOAT_UNARY(cos, Cos)
FLOAT_UNARY(tan, Tan)
FLOAT_UNARY(arcsin, ArcSin)
FLOAT_UNARY(arccos, ArcCos)
FLOAT_UNARY(arctan, ArcTan)
FLOAT_UNARY(sinh, Sinh)
FLOAT_UNARY(cosh, Cosh)
FLOAT_UNARY(tanh, Tanh)
FLOAT_UNARY(arcsinh, ArcSinh)
FLOAT_UNARY(arccosh, ArcCosh)
FLOAT_UNARY(arctanh, ArcTanh)
FLOAT_UNARY(sigmoid, Sigmoid)
FLOAT_UNARY(erf, Erf)
FLOAT_UNARY(erfinv, ErfInv)

/* Ops that keep the dtype (bool included). */
#define SAME_UNARY(name, prim)                       \
  cmx_array cmx__##name(cmx_array a, cmx_stream s) { \
    if (!CMX__ARGS(#name, a)) return NULL;           \
    return unary(&cmx__vt_##prim, a, a->dtype, s);   \
  }
SAME_UNARY(sign, Sign)
SAME_UNARY(square, Square)
SAME_UNARY(stop_gradient, StopGradient)

/* Predicates: bool results for every dtype. */
#define BOOL_UNARY(name, prim)                       \
  cmx_array cmx__##name(cmx_array a, cmx_stream s) { \
    if (!CMX__ARGS(#name, a)) return NULL;           \
    return unary(&cmx__vt_##prim, a, CMX_BOOL, s);   \
  }
BOOL_UNARY(isnan, IsNan)
BOOL_UNARY(isinf, IsInf)
BOOL_UNARY(isfinite, IsFinite)
BOOL_UNARY(isposinf, IsPosInf)
BOOL_UNARY(isneginf, IsNegInf)
BOOL_UNARY(logical_not, LogicalNot)

/* Rounding: the identity on integers and bool, an error on complex. */
#define ROUNDING_UNARY(name, prim)                            \
  cmx_array cmx__##name(cmx_array a, cmx_stream s) {          \
    if (!CMX__ARGS(#name, a)) return NULL;                    \
    if (a->dtype == CMX_COMPLEX64) return no_complex(#name);  \
    if (!cmx_dtype_is_floating(a->dtype)) return identity(a); \
    return unary(&cmx__vt_##prim, a, a->dtype, s);            \
  }
ROUNDING_UNARY(floor, Floor)
ROUNDING_UNARY(ceil, Ceil)
ROUNDING_UNARY(trunc, Trunc)

/* The imaginary unit as a 0-d complex64 constant. */
static cmx_array imaginary_unit(void) {
  cmx__scalar_value v;
  v.c.re = 0.0;
  v.c.im = 1.0;
  return cmx__own(cmx__scalar_node("round", v, 3, CMX_COMPLEX64, false));
}

cmx_array cmx__round(cmx_array a, int decimals, cmx_stream s) {
  if (!CMX__ARGS("round", a)) return NULL;
  if (a->dtype == CMX_COMPLEX64) /* MLX: both parts rounded */
    return cmx__add(cmx__round(cmx__real(a, s), decimals, s),
                    cmx__multiply(cmx__round(cmx__imag(a, s), decimals, s),
                                  imaginary_unit(), s),
                    s);
  /* Integers are already whole: only negative decimals change them. */
  if (!cmx_dtype_is_floating(a->dtype) && decimals >= 0) return identity(a);
  cmx__round_params p = {decimals};
  return cmx__apply(&cmx__vt_Round, &p, sizeof p, s, &a, 1, a->dims, a->ndim,
                    a->dtype);
}

cmx_status cmx_round(cmx_array* out, cmx_array a, int decimals, cmx_stream s) {
  CMX__PUBLIC(out, "round", cmx__round(a, decimals, s));
}

cmx_array cmx__abs(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("abs", a)) return NULL;
  return unary(&cmx__vt_Abs, a,
               a->dtype == CMX_COMPLEX64 ? CMX_FLOAT32 : a->dtype, s);
}

cmx_array cmx__negative(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("negative", a)) return NULL;
  if (a->dtype == CMX_BOOL)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[negative] Not supported for bool, use logical_not "
                     "instead.");
  return unary(&cmx__vt_Negative, a, a->dtype, s);
}

/* +a is a itself (no computation), for every dtype. */
cmx_array cmx__positive(cmx_array a, cmx_stream s) {
  (void)s;
  return CMX__ARGS("positive", a) ? identity(a) : NULL;
}

/* 1 / a, with integers in float32 (MLX's reciprocal is this division). */
cmx_array cmx__reciprocal(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("reciprocal", a)) return NULL;
  return cmx__divide(cmx__scalar(1.0, at_least_float(a->dtype)), a, s);
}

cmx_array cmx__degrees(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("degrees", a)) return NULL;
  return cmx__multiply(a, cmx__scalar(180.0 / M_PI, at_least_float(a->dtype)),
                       s);
}

cmx_array cmx__radians(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("radians", a)) return NULL;
  return cmx__multiply(a, cmx__scalar(M_PI / 180.0, at_least_float(a->dtype)),
                       s);
}

/* Complex parts: real inputs are their own real part and conjugate; their
 * imaginary part is zeros of their dtype. */
cmx_array cmx__conjugate(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("conjugate", a)) return NULL;
  if (a->dtype != CMX_COMPLEX64) return identity(a);
  return unary(&cmx__vt_Conjugate, a, CMX_COMPLEX64, s);
}

cmx_array cmx__real(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("real", a)) return NULL;
  if (a->dtype != CMX_COMPLEX64) return identity(a);
  return unary(&cmx__vt_Real, a, CMX_FLOAT32, s);
}

cmx_array cmx__imag(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("imag", a)) return NULL;
  return unary(&cmx__vt_Imag, a,
               a->dtype == CMX_COMPLEX64 ? CMX_FLOAT32 : a->dtype, s);
}

cmx_array cmx__bitwise_invert(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("bitwise_invert", a)) return NULL;
  if (cmx_dtype_is_inexact(a->dtype))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[bitwise_invert] Bitwise inverse only allowed on "
                     "integer types but got %s.",
                     cmx_dtype_name(a->dtype));
  return unary(&cmx__vt_BitwiseInvert, a, a->dtype, s);
}

#define PUBLIC_UNARY(name)                                           \
  cmx_status cmx_##name(cmx_array* out, cmx_array a, cmx_stream s) { \
    CMX__PUBLIC(out, #name, cmx__##name(a, s));                      \
  }
CMX__UNARY_OPS(PUBLIC_UNARY)

/* ---------------- nan_to_num ---------------- */
cmx_array cmx__nan_to_num(cmx_array a, double nan, const double* posinf,
                          const double* neginf, cmx_stream s) {
  if (!CMX__ARGS("nan_to_num", a)) return NULL;
  cmx_dtype dt = a->dtype;
  if (cmx_dtype_is_complex(dt)) {
    cmx__error(CMX_ERR_VALUE,
               "[nan_to_num] Does not yet support given type: complex64.");
    return NULL;
  }
  if (!cmx_dtype_is_floating(dt)) return cmx__ref(a);
  double big = dt == CMX_FLOAT16    ? 65504.0
               : dt == CMX_BFLOAT16 ? 3.3895313892515355e38
               : dt == CMX_FLOAT32  ? (double)FLT_MAX
                                    : DBL_MAX;
  double pv = posinf ? *posinf : big, nv = neginf ? *neginf : -big;
  cmx_array r = cmx__where(cmx__isnan(a, s), cmx__scalar(nan, dt), a, s);
  r = cmx__where(cmx__isposinf(a, s), cmx__scalar(pv, dt), r, s);
  return cmx__where(cmx__isneginf(a, s), cmx__scalar(nv, dt), r, s);
}

cmx_status cmx_nan_to_num(cmx_array* out, cmx_array a, double nan,
                          const double* posinf, const double* neginf,
                          cmx_stream s) {
  CMX__PUBLIC(out, "nan_to_num", cmx__nan_to_num(a, nan, posinf, neginf, s));
}
