/* Transform rules of the binary and ternary elementwise primitives. Their
 * inputs have the output's shape (the ops broadcast explicitly), so
 * cotangents need no reduction here. Their vmap is the generic elementwise
 * rule.
 *
 * Each differentiable binary primitive is described by one function, the
 * contribution t * d(out)/d(input k) of a tangent or cotangent t of input
 * k; the vjp applies it per argnum, the jvp sums it over the argnums.
 * Integer and boolean inputs get no cotangent. The contributions are built
 * from primitives with rules, so the rules compose (grad of grad). */
#include "ops/ops_internal.h"
#include "transforms/rules.h"

/* t * d(out)/d(input k) given the inputs a, b and the output y. */
typedef cmx_array (*partial_fn)(int k, cmx_array a, cmx_array b, cmx_array y,
                                cmx_array t, cmx_stream s);

static cmx_status binary_vjp(partial_fn f, const cmx_primitive* p,
                             const cmx_array* primals,
                             const cmx_array* cotangents, const int* argnums,
                             int nargs, const cmx_array* outputs,
                             cmx_array* out) {
  cmx_stream s = cmx__rule_stream(p);
  for (int k = 0; k < nargs; k++) {
    int arg = argnums[k];
    out[k] = NULL;
    if (!cmx_dtype_is_inexact(primals[arg]->dtype)) continue;
    out[k] = cmx__rule_keep(
        f(arg, primals[0], primals[1], outputs[0], cotangents[0], s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}

static cmx_status binary_jvp(partial_fn f, const cmx_primitive* p,
                             const cmx_array* primals,
                             const cmx_array* tangents, const int* argnums,
                             int nargs, const cmx_array* outputs,
                             cmx_array* out) {
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  bool any = false;
  for (int k = 0; k < nargs; k++) {
    int arg = argnums[k];
    if (!cmx_dtype_is_inexact(primals[arg]->dtype)) continue;
    cmx_array term = f(arg, primals[0], primals[1], outputs[0], tangents[k], s);
    r = any ? cmx__add(r, term, s) : term;
    any = true;
  }
  out[0] = any ? cmx__rule_keep(r) : NULL;
  return !any || out[0] ? CMX_OK : cmx_last_status();
}

#define BINARY_RULES(name)                                                    \
  CMX__RULE_VJP(cmx__vjp_##name) {                                            \
    (void)nin, (void)nout;                                                    \
    return binary_vjp(name##_partial, p, primals, cotangents, argnums, nargs, \
                      outputs, out);                                          \
  }                                                                           \
  CMX__RULE_JVP(cmx__jvp_##name) {                                            \
    (void)nin, (void)nout;                                                    \
    return binary_jvp(name##_partial, p, primals, tangents, argnums, nargs,   \
                      outputs, out);                                          \
  }

/* t where mask holds, else 0. */
static cmx_array masked(cmx_array mask, cmx_array t, cmx_stream s) {
  return t ? cmx__where(mask, t, cmx__scalar(0, t->dtype), s) : NULL;
}

static cmx_array add_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                             cmx_array t, cmx_stream s) {
  (void)k, (void)a, (void)b, (void)y, (void)s;
  return t;
}
BINARY_RULES(add)

static cmx_array subtract_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                  cmx_array t, cmx_stream s) {
  (void)a, (void)b, (void)y;
  return k == 0 ? t : cmx__negative(t, s);
}
BINARY_RULES(subtract)

static cmx_array multiply_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                  cmx_array t, cmx_stream s) {
  (void)y;
  return cmx__multiply(t, k == 0 ? b : a, s);
}
BINARY_RULES(multiply)

/* d/da = 1/b, d/db = -a/b^2. */
static cmx_array divide_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                cmx_array t, cmx_stream s) {
  (void)y;
  if (k == 0) return cmx__divide(t, b, s);
  return cmx__negative(
      cmx__divide(cmx__multiply(t, a, s), cmx__square(b, s), s), s);
}
BINARY_RULES(divide)

/* a - b floor(a / b): d/da = 1, d/db = -floor(a / b) (MLX). */
static cmx_array remainder_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                   cmx_array t, cmx_stream s) {
  (void)y;
  if (k == 0) return t;
  return cmx__negative(cmx__multiply(t, cmx__floor(cmx__divide(a, b, s), s), s),
                       s);
}
BINARY_RULES(remainder)

/* d/da = b a^(b-1); d/db = log(a) a^b, taken as 0 where a^b is 0 (so
 * a = 0 gives 0 rather than 0 * -inf, as MLX). */
static cmx_array power_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                               cmx_array t, cmx_stream s) {
  cmx_dtype dt = a->dtype;
  if (k == 0)
    return cmx__multiply(
        t,
        cmx__multiply(
            b, cmx__power(a, cmx__subtract(b, cmx__scalar(1, dt), s), s), s),
        s);
  cmx_array nonzero = cmx__not_equal(y, cmx__scalar(0, y->dtype), s);
  return masked(nonzero,
                cmx__multiply(t, cmx__multiply(cmx__log(a, s), y, s), s), s);
}
BINARY_RULES(power)

/* The larger input gets the derivative; ties go to b (MLX). */
static cmx_array maximum_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                 cmx_array t, cmx_stream s) {
  (void)y;
  return masked(k == 0 ? cmx__greater(a, b, s) : cmx__less_equal(a, b, s), t,
                s);
}
BINARY_RULES(maximum)

/* The smaller input gets the derivative; ties go to b (MLX). */
static cmx_array minimum_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                 cmx_array t, cmx_stream s) {
  (void)y;
  return masked(k == 0 ? cmx__less(a, b, s) : cmx__greater_equal(a, b, s), t,
                s);
}
BINARY_RULES(minimum)

/* atan2(a, b): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2). */
static cmx_array arctan2_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                 cmx_array t, cmx_stream s) {
  (void)y;
  cmx_array den = cmx__add(cmx__square(a, s), cmx__square(b, s), s);
  cmx_array r = cmx__divide(cmx__multiply(t, k == 0 ? b : a, s), den, s);
  return k == 0 ? r : cmx__negative(r, s);
}
BINARY_RULES(arctan2)

/* log(e^a + e^b): d/da = sigmoid(a - b), d/db = sigmoid(b - a). */
static cmx_array logaddexp_partial(int k, cmx_array a, cmx_array b, cmx_array y,
                                   cmx_array t, cmx_stream s) {
  (void)y;
  cmx_array d = k == 0 ? cmx__subtract(a, b, s) : cmx__subtract(b, a, s);
  return cmx__multiply(t, cmx__sigmoid(d, s), s);
}
BINARY_RULES(logaddexp)

/* ---------------- ternary ---------------- */

/* where(c, x, y): x's derivative where c holds, y's elsewhere; the
 * condition gets none. */
CMX__RULE_VJP(cmx__vjp_select) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array c = primals[0], ct = cotangents[0];
  for (int k = 0; k < nargs; k++) {
    int arg = argnums[k];
    out[k] = NULL;
    if (arg == 0 || !cmx_dtype_is_inexact(primals[arg]->dtype)) continue;
    cmx_array zero = cmx__scalar(0, ct->dtype);
    out[k] = cmx__rule_keep(arg == 1 ? cmx__where(c, ct, zero, s)
                                     : cmx__where(c, zero, ct, s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_select) {
  (void)nin, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array tx = NULL, ty = NULL;
  for (int k = 0; k < nargs; k++) {
    int arg = argnums[k];
    if (arg == 0 || !cmx_dtype_is_inexact(primals[arg]->dtype)) continue;
    if (arg == 1) tx = tangents[k];
    if (arg == 2) ty = tangents[k];
  }
  out[0] = NULL;
  if (!tx && !ty) return CMX_OK;
  cmx_array zero = cmx__scalar(0, outputs[0]->dtype);
  out[0] =
      cmx__rule_keep(cmx__where(primals[0], tx ? tx : zero, ty ? ty : zero, s));
  return out[0] ? CMX_OK : cmx_last_status();
}
