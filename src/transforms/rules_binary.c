/* Transform rules of the binary and ternary elementwise primitives. Their
 * inputs have the output's shape (the ops broadcast explicitly), so
 * cotangents need no reduction here. Their vmap is the generic elementwise
 * rule. */
#include "ops/ops_internal.h"
#include "transforms/rules.h"

CMX__RULE_VJP(cmx__vjp_add) {
  (void)p, (void)primals, (void)nin, (void)nout, (void)argnums, (void)outputs;
  for (int k = 0; k < nargs; k++) out[k] = cmx_array_retain(cotangents[0]);
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_add) {
  (void)primals, (void)nin, (void)argnums, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  out[0] = cmx__rule_keep(nargs == 1 ? tangents[0]
                                     : cmx__add(tangents[0], tangents[1], s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_multiply) {
  (void)nin, (void)nout, (void)outputs;
  cmx_stream s = cmx__rule_stream(p);
  for (int k = 0; k < nargs; k++) {
    out[k] = cmx__rule_keep(
        cmx__multiply(cotangents[0], primals[1 - argnums[k]], s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}
CMX__RULE_JVP(cmx__jvp_multiply) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx_array r = NULL;
  for (int k = 0; k < nargs; k++) {
    cmx_array term = cmx__multiply(tangents[k], primals[1 - argnums[k]], s);
    r = r ? cmx__add(r, term, s) : term;
  }
  out[0] = cmx__rule_keep(r);
  return out[0] ? CMX_OK : cmx_last_status();
}
