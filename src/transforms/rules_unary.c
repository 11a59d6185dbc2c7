/* Transform rules of the unary elementwise primitives, copies and
 * conversions. Their vmap is the generic elementwise rule. */
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

/* Primitives whose derivative is zero (StopGradient, rounding, tests). */
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

/* A unary rule: out = t * f'(x), for the cotangent (vjp) and the tangent
 * (jvp) alike. */
#define UNARY_RULES(name, DERIV)                                     \
  static cmx_array name##_scale(cmx_array x, cmx_array y, cmx_array t, \
                                cmx_stream s) {                      \
    (void)y;                                                         \
    return DERIV;                                                    \
  }                                                                  \
  CMX__RULE_VJP(cmx__vjp_##name) {                                   \
    (void)nin, (void)nout, (void)argnums;                            \
    cmx_stream s = cmx__rule_stream(p);                              \
    for (int k = 0; k < nargs; k++)                                  \
      out[k] = cmx__rule_keep(                                       \
          name##_scale(primals[0], outputs[0], cotangents[0], s));   \
    return nargs && !out[0] ? cmx_last_status() : CMX_OK;            \
  }                                                                  \
  CMX__RULE_JVP(cmx__jvp_##name) {                                   \
    (void)nin, (void)argnums, (void)nargs;                           \
    cmx_stream s = cmx__rule_stream(p);                              \
    out[0] = cmx__rule_keep(                                         \
        name##_scale(primals[0], outputs[0], tangents[0], s));       \
    (void)nout;                                                      \
    return out[0] ? CMX_OK : cmx_last_status();                      \
  }

UNARY_RULES(sin, cmx__multiply(t, cmx__cos(x, s), s))
UNARY_RULES(cos, cmx__negative(cmx__multiply(t, cmx__sin(x, s), s), s))
