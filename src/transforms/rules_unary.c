/* Transform rules of the unary elementwise primitives, copies and
 * conversions. Their vmap is the generic elementwise rule.
 *
 * Conventions (MLX's): a differentiable unary primitive maps a tangent t
 * to t * f'(x), and a cotangent the same way; for complex numbers the
 * driver (cmx__rule_vjp) conjugates the cotangent going in and the result
 * coming out, giving MLX's ct * conj(f'(z)). Rounding, sign and
 * predicates have zero derivatives. Integer and boolean inputs get no
 * cotangent. The rules are built from primitives that have rules
 * themselves, so they compose (grad of grad). */
#include <math.h>

#include "ops/ops_internal.h"
#include "transforms/rules.h"

/* Identity-like primitives (Identity, Copy): cotangent and tangent pass
 * through. */
CMX__RULE_VJP(cmx__vjp_identity) {
  (void)p, (void)primals, (void)nin, (void)nout, (void)outputs;
  for (int k = 0; k < nargs; k++)
    out[k] = argnums[k] == 0 ? cmx_array_retain(cotangents[0]) : NULL;
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_identity) {
  (void)p, (void)primals, (void)nin, (void)argnums, (void)nargs;
  (void)outputs;
  for (int i = 0; i < nout; i++) out[i] = cmx_array_retain(tangents[0]);
  return CMX_OK;
}

/* Primitives whose derivative is zero (StopGradient, rounding, sign,
 * predicates, comparisons, logical and bitwise ops). */
CMX__RULE_VJP(cmx__vjp_zero) {
  (void)p, (void)primals, (void)nin, (void)cotangents, (void)nout;
  (void)argnums, (void)outputs;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_zero) {
  (void)p, (void)primals, (void)nin, (void)tangents, (void)argnums;
  (void)nargs, (void)outputs;
  for (int i = 0; i < nout; i++) out[i] = NULL;
  return CMX_OK;
}

/* ---------------- conversions ---------------- */

/* A cast passes derivatives between two inexact dtypes only: an integer
 * or boolean side has none (MLX would hand back integer cotangents). */
static bool cast_differentiable(cmx_dtype from, cmx_dtype to) {
  return cmx_dtype_is_inexact(from) && cmx_dtype_is_inexact(to);
}

CMX__RULE_VJP(cmx__vjp_astype) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_dtype from = primals[0]->dtype;
  cmx_dtype to = outputs[0] ? outputs[0]->dtype : cotangents[0]->dtype;
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !cast_differentiable(from, to)) continue;
    out[k] = cmx__rule_keep(cmx__as_dtype(cotangents[0], from, s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_astype) {
  (void)nin, (void)argnums, (void)nargs, (void)nout;
  cmx_dtype from = primals[0]->dtype, to = outputs[0]->dtype;
  out[0] = NULL;
  if (!cast_differentiable(from, to)) return CMX_OK;
  out[0] = cmx__rule_keep(cmx__as_dtype(tangents[0], to, cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* ---------------- differentiable unary primitives ---------------- */

/* v as a 0-d constant of x's dtype (keeps float16 math in float16). */
static cmx_array k_(double v, cmx_array x) {
  return x ? cmx__scalar(v, x->dtype) : NULL;
}

/* A unary rule: out = t * f'(x), for the cotangent (vjp) and the tangent
 * (jvp) alike. DERIV sees x (the input), y (the output), t and s. */
#define UNARY_RULES(name, DERIV)                                              \
  static cmx_array name##_scale(cmx_array x, cmx_array y, cmx_array t,        \
                                cmx_stream s) {                               \
    (void)x, (void)y;                                                         \
    return DERIV;                                                             \
  }                                                                           \
  CMX__RULE_VJP(cmx__vjp_##name) {                                            \
    (void)nin, (void)nout;                                                    \
    cmx_stream s = cmx__rule_stream(p);                                       \
    bool diff = cmx_dtype_is_inexact(primals[0]->dtype);                      \
    for (int k = 0; k < nargs; k++) {                                         \
      out[k] = NULL;                                                          \
      if (argnums[k] != 0 || !diff) continue;                                 \
      out[k] = cmx__rule_keep(                                                \
          name##_scale(primals[0], outputs[0], cotangents[0], s));            \
      if (!out[k]) return cmx_last_status();                                  \
    }                                                                         \
    return CMX_OK;                                                            \
  }                                                                           \
  CMX__RULE_JVP(cmx__jvp_##name) {                                            \
    (void)nin, (void)argnums, (void)nargs, (void)nout;                        \
    out[0] = NULL;                                                            \
    if (!cmx_dtype_is_inexact(primals[0]->dtype)) return CMX_OK;              \
    out[0] = cmx__rule_keep(name##_scale(primals[0], outputs[0], tangents[0], \
                                         cmx__rule_stream(p)));               \
    return out[0] ? CMX_OK : cmx_last_status();                               \
  }

/* Shorthands for the derivative expressions below. */
#define MUL(a, b) cmx__multiply((a), (b), s)
#define DIV(a, b) cmx__divide((a), (b), s)
#define ADD(a, b) cmx__add((a), (b), s)
#define SUB(a, b) cmx__subtract((a), (b), s)
#define NEG(a) cmx__negative((a), s)
#define SQ(a) cmx__square((a), s)

UNARY_RULES(negative, NEG(t))
UNARY_RULES(square, MUL(t, MUL(k_(2, x), x)))
/* 1 / (2 sqrt(x)), from the output. */
UNARY_RULES(sqrt, DIV(t, MUL(k_(2, x), y)))
/* -x^(-3/2) / 2 = -y / (2 x). */
UNARY_RULES(rsqrt, MUL(t, DIV(MUL(k_(-0.5, x), y), x)))
UNARY_RULES(exp, MUL(t, y))
UNARY_RULES(expm1, MUL(t, ADD(y, k_(1, x))))
UNARY_RULES(log, DIV(t, x))
UNARY_RULES(log2, DIV(t, MUL(x, k_(M_LN2, x))))
UNARY_RULES(log10, DIV(t, MUL(x, k_(M_LN10, x))))
UNARY_RULES(log1p, DIV(t, ADD(x, k_(1, x))))
/* 2/sqrt(pi) exp(-x^2). */
UNARY_RULES(erf, MUL(t, MUL(k_(M_2_SQRTPI, x), cmx__exp(NEG(SQ(x)), s))))
/* 1 / erf'(y) = sqrt(pi)/2 exp(y^2). */
UNARY_RULES(erfinv, MUL(t, MUL(k_(0.5 * sqrt(M_PI), x), cmx__exp(SQ(y), s))))
UNARY_RULES(sin, MUL(t, cmx__cos(x, s)))
UNARY_RULES(cos, NEG(MUL(t, cmx__sin(x, s))))
UNARY_RULES(tan, DIV(t, SQ(cmx__cos(x, s))))
UNARY_RULES(arcsin, MUL(t, cmx__rsqrt(SUB(k_(1, x), SQ(x)), s)))
UNARY_RULES(arccos, NEG(MUL(t, cmx__rsqrt(SUB(k_(1, x), SQ(x)), s))))
UNARY_RULES(arctan, DIV(t, ADD(k_(1, x), SQ(x))))
UNARY_RULES(sinh, MUL(t, cmx__cosh(x, s)))
UNARY_RULES(cosh, MUL(t, cmx__sinh(x, s)))
/* 1 / cosh^2 rather than 1 - tanh^2: no cancellation where tanh is near
 * one (float16 especially). */
UNARY_RULES(tanh, DIV(t, SQ(cmx__cosh(x, s))))
UNARY_RULES(arcsinh, MUL(t, cmx__rsqrt(ADD(SQ(x), k_(1, x)), s)))
UNARY_RULES(arccosh, MUL(t, cmx__rsqrt(SUB(SQ(x), k_(1, x)), s)))
UNARY_RULES(arctanh, DIV(t, SUB(k_(1, x), SQ(x))))
UNARY_RULES(sigmoid, MUL(t, MUL(y, SUB(k_(1, x), y))))
UNARY_RULES(conjugate, cmx__conjugate(t, s))

/* |x|: t * sign(x) for real x (zero at 0, as MLX). For complex z (a real
 * output), d|z| = Re(conj(z) dz) / |z|, so the tangent is
 * Re(t * conj(sign z)) and the cotangent ct * conj(sign z), with
 * sign z = z / |z| (0 at 0). (MLX multiplies by sign z unconjugated, which
 * disagrees with its own imag/real convention; this one agrees with it
 * and with finite differences.) */
CMX__RULE_VJP(cmx__vjp_abs) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0];
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !cmx_dtype_is_inexact(x->dtype)) continue;
    cmx_array r;
    if (x->dtype == CMX_COMPLEX64)
      r = MUL(cmx__as_dtype(cotangents[0], CMX_COMPLEX64, s),
              cmx__conjugate(cmx__sign(x, s), s));
    else
      r = MUL(cotangents[0], cmx__sign(x, s));
    out[k] = cmx__rule_keep(r);
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_abs) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array x = primals[0], t = tangents[0];
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(x->dtype)) return CMX_OK;
  cmx_array r = x->dtype == CMX_COMPLEX64
                    ? cmx__real(MUL(t, cmx__conjugate(cmx__sign(x, s), s)), s)
                    : MUL(t, cmx__sign(x, s));
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}

/* real(z): the cotangent c of Re z is c + 0i; the tangent is Re t. A real
 * input (not made by the op, which returns it unchanged) passes through. */
CMX__RULE_VJP(cmx__vjp_real) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_dtype dt = primals[0]->dtype;
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !cmx_dtype_is_inexact(dt)) continue;
    out[k] = cmx__rule_keep(cmx__as_dtype(cotangents[0], dt, s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_real) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  out[0] = NULL;
  if (!cmx_dtype_is_inexact(primals[0]->dtype)) return CMX_OK;
  out[0] = cmx__rule_keep(cmx__real(tangents[0], cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}

/* imag(z): the cotangent c of Im z is -i c (MLX); the tangent is Im t.
 * The imaginary part of a real input is constant zero. */
CMX__RULE_VJP(cmx__vjp_imag) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  bool cplx = primals[0]->dtype == CMX_COMPLEX64;
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    if (argnums[k] != 0 || !cplx) continue;
    cmx__scalar_value minus_i = {.c = {0.0, -1.0}};
    cmx_array mi =
        cmx__own(cmx__scalar_node("vjp", minus_i, 3, CMX_COMPLEX64, false));
    out[k] =
        cmx__rule_keep(MUL(mi, cmx__as_dtype(cotangents[0], CMX_COMPLEX64, s)));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_imag) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  out[0] = NULL;
  if (primals[0]->dtype != CMX_COMPLEX64) return CMX_OK;
  out[0] = cmx__rule_keep(cmx__imag(tangents[0], cmx__rule_stream(p)));
  return out[0] ? CMX_OK : cmx_last_status();
}
