/* Transform rules of Quantize and Dequantize (primitives/quantized.h);
 * QuantizedMatmul's are the composite rules of rules_fast.c.
 *
 * Dequantize is linear in scales and biases: out = s * q + b per group,
 * so d/ds sums cotangent * q over each group and d/db sums the cotangent;
 * the packed integers get no cotangent. Quantize rounds, so it has no
 * derivative: its rules are errors naming it, as in MLX. */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/quantized.h"
#include "transforms/rules.h"

/* The integers of packed w as floats of dtype dt, (..., K/g, g). */
static cmx_array integers(const cmx__quant_params* q, const cmx_array* in,
                          cmx_dtype dt, cmx_stream s) {
  cmx_array one = cmx__ones_like(in[1], s), zero = cmx__zeros_like(in[2], s);
  return cmx__quant_groups(
      cmx__dequantize(in[0], one, zero, q->group_size, q->bits, dt, s),
      q->group_size, s);
}

CMX__RULE_VJP(cmx__vjp_dequantize) {
  (void)nin, (void)nout, (void)outputs;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  int last = -1;
  cmx_array c = cmx__quant_groups(cotangents[0], q->group_size, s);
  for (int k = 0; k < nargs; k++) {
    out[k] = NULL;
    int a = argnums[k];
    if (a == 0) continue;
    cmx_array t =
        a == 1 ? cmx__multiply(c, integers(q, primals, c ? c->dtype : 0, s), s)
               : c;
    out[k] = cmx__rule_keep(
        cmx__rule_as_like(cmx__sum(t, &last, 1, false, s), primals[a], s));
    if (!out[k]) return cmx_last_status();
  }
  return CMX_OK;
}

CMX__RULE_JVP(cmx__jvp_dequantize) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx__rule_stream(p);
  cmx_dtype dt = outputs[0]->dtype;
  cmx_array r = NULL;
  int last = -1;
  bool varies = false; /* x or the scales: r is their sum (NULL: failed) */
  for (int k = 0; k < nargs; k++) {
    if (argnums[k] == 0) continue;
    cmx_array t =
        cmx__expand_dims(cmx__astype(tangents[k], dt, s), &last, 1, s);
    if (argnums[k] == 1) t = cmx__multiply(t, integers(q, primals, dt, s), s);
    r = varies ? cmx__add(r, t, s) : t;
    varies = true;
  }
  if (!varies) { /* only w varies: the integers are constants */
    out[0] = cmx__rule_keep(cmx__zeros_like(outputs[0], s));
  } else {
    cmx_array g =
        cmx__quant_groups(outputs[0], q->group_size, s); /* NULL: failed */
    r = g ? cmx__broadcast_to(r, g->dims, outputs[0]->ndim + 1, s) : NULL;
    out[0] =
        cmx__rule_keep(cmx__reshape(r, outputs[0]->dims, outputs[0]->ndim, s));
  }
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_quantize) {
  (void)p, (void)primals, (void)nin, (void)cotangents, (void)nout,
      (void)argnums, (void)nargs, (void)outputs, (void)out;
  return cmx__error(CMX_ERR_VALUE,
                    "[quantize] Cannot compute the vjp of "
                    "quantize: rounding has no derivative.");
}

CMX__RULE_JVP(cmx__jvp_quantize) {
  (void)p, (void)primals, (void)nin, (void)tangents, (void)argnums, (void)nargs,
      (void)outputs, (void)out, (void)nout;
  return cmx__error(CMX_ERR_VALUE,
                    "[quantize] Cannot compute the jvp of "
                    "quantize: rounding has no derivative.");
}

/* Both act on the last axis of inputs sharing their leading shape: batch
 * every input on a new front axis and apply the primitive again. */
CMX__RULE_VMAP(cmx__vmap_quantized) {
  cmx_stream s = cmx__rule_stream(p);
  int64_t B = cmx__batch_size(inputs, axes, nin);
  cmx_array in[3];
  for (int i = 0; i < nin; i++) {
    in[i] = cmx__batch_front(inputs[i], axes[i], B, s);
    if (!in[i]) return cmx_last_status();
  }
  const cmx__quant_params* q = cmx_primitive_params(p);
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  /* Shapes from the batched inputs (outputs[] may hold NULL for outputs
   * that died); dtypes: Quantize's follow w, Dequantize's its output. */
  cmx_shape shp[3];
  cmx_status st = vt->output_shapes(p, in, nin, shp, nout);
  if (st != CMX_OK) return st;
  const int64_t* shapes[3];
  int nds[3];
  cmx_dtype dts[3];
  cmx_array res[3];
  for (int i = 0; i < nout; i++) {
    shapes[i] = shp[i].dims;
    nds[i] = shp[i].ndim;
    dts[i] = outputs[i]            ? outputs[i]->dtype
             : i == 0 && nout == 3 ? CMX_UINT32
                                   : in[nout == 3 ? 0 : 1]->dtype;
  }
  st = cmx__apply_n(vt, q, sizeof *q, s, in, nin, res, nout, shapes, nds, dts);
  for (int i = 0; i < nout; i++) {
    out[i] = st == CMX_OK ? cmx__rule_keep(res[i]) : NULL;
    out_axes[i] = 0;
  }
  return st;
}
