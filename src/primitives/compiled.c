/* The Compiled primitive (see compiled.h): its programs, vtable and the
 * table of code generators. */
#include "primitives/compiled.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/strbuf.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"
#include "transforms/rules.h"

/* ---------------- programs ---------------- */

void cmx__fused_program_retain(cmx__fused_program* prog) {
  if (prog) atomic_fetch_add(&prog->refcount, 1);
}

void cmx__fused_program_release(cmx__fused_program* prog) {
  if (!prog || atomic_fetch_sub(&prog->refcount, 1) != 1) return;
  for (int i = 0; i < prog->nin; i++) cmx_array_release(prog->in[i].konst);
  for (int s = 0; s < prog->nsteps; s++)
    cmx_primitive_release(prog->steps[s].prim);
  free(prog->in);
  free(prog->steps);
  free(prog->out);
  free(prog->sig);
  free(prog->label);
  free(prog);
}

void cmx__fused_const_bytes(const cmx__fused_program* prog, int i,
                            unsigned char* out) {
  cmx_array k = prog->in[i].konst;
  memset(out, 0, 16);
  memcpy(out, cmx__node_ptr(k), cmx_dtype_size(k->dtype));
}

bool cmx__fused_program_finish(cmx__fused_program* prog) {
  cmx__strbuf sig = {0}, label = {0};
  for (int i = 0; i < prog->nin; i++) {
    const cmx__fused_input* in = &prog->in[i];
    cmx__strbuf_printf(&sig, "i%d:%d", i, (int)in->dtype);
    if (in->konst) {
      unsigned char b[16];
      cmx__fused_const_bytes(prog, i, b);
      cmx__strbuf_printf(&sig, "=");
      for (size_t k = 0; k < cmx_dtype_size(in->dtype); k++)
        cmx__strbuf_printf(&sig, "%02x", b[k]);
    } else {
      cmx__strbuf_printf(&sig, "@%d", in->arg);
    }
    cmx__strbuf_printf(&sig, ";");
  }
  cmx__strbuf_printf(&label, "Compiled(");
  for (int s = 0; s < prog->nsteps; s++) {
    const cmx__fused_step* st = &prog->steps[s];
    const char* name = cmx_primitive_name(st->prim);
    cmx__strbuf_printf(&sig, "s%d:%s:%d:%d(", s, name, (int)st->dtype,
                       (int)st->in_dtype);
    for (int k = 0; k < st->nin; k++)
      cmx__strbuf_printf(&sig, "%s%d", k ? "," : "", st->in[k]);
    cmx__strbuf_printf(&sig, ")");
    const unsigned char* pb = cmx_primitive_params(st->prim);
    for (size_t k = 0; k < cmx_primitive_params_size(st->prim); k++)
      cmx__strbuf_printf(&sig, "%02x", pb[k]);
    cmx__strbuf_printf(&sig, ";");
    cmx__strbuf_printf(&label, "%s%s", s ? ", " : "", name);
  }
  cmx__strbuf_printf(&label, ")");
  cmx__strbuf_printf(&sig, "o");
  for (int k = 0; k < prog->nout; k++)
    cmx__strbuf_printf(&sig, ",%d", prog->out[k]);
  /* Shapes matter to equality where the outputs' shape is not the
   * inputs' broadcast shape (an explicit broadcast_to). */
  cmx__strbuf_printf(&sig, ";%d", (int)prog->shapeless_ok);
  if (!prog->shapeless_ok)
    for (int d = 0; d < prog->ndim; d++)
      cmx__strbuf_printf(&sig, ",%lld", (long long)prog->shape[d]);
  if (sig.failed || label.failed || !sig.p || !label.p) {
    free(sig.p);
    free(label.p);
    cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
    return false;
  }
  prog->sig = sig.p;
  prog->label = label.p;
  uint64_t h = 14695981039346656037ull;
  for (const char* c = sig.p; *c; c++)
    h = (h ^ (unsigned char)*c) * 1099511628211ull;
  prog->hash = h;
  return true;
}

cmx__fused_program* cmx__compiled_program(const cmx_primitive* p) {
  const cmx__compiled_params* q = cmx_primitive_params(p);
  return q->prog;
}

/* ---------------- programs as code ---------------- */

bool cmx__fused_step_supported(const cmx__fused_step* st) {
  const cmx__ew_op* op = cmx__ew_op_get(st->id);
  if (op) return cmx__ew_accepts(op, st->in_dtype);
  return st->id == CMX__P_AsType || st->id == CMX__P_Copy ||
         st->id == CMX__P_Broadcast;
}

const char* cmx__fused_storage(cmx_dtype dt) {
  static _Thread_local char buf[16];
  snprintf(buf, sizeof buf, "cmx_%s_t", cmx__ew_suffix(dt));
  return buf;
}

void cmx__fused_emit_const(cmx__strbuf* b, const cmx__fused_program* prog,
                           int i) {
  unsigned char v[16];
  cmx__fused_const_bytes(prog, i, v);
  cmx_dtype dt = prog->in[i].dtype;
  uint64_t u = 0;
  uint32_t re, im;
  memcpy(&u, v, cmx_dtype_size(dt) < 8 ? cmx_dtype_size(dt) : 8);
  cmx__strbuf_printf(b, "  const %s k%d = ", cmx__fused_storage(dt), i);
  switch (dt) {
    case CMX_FLOAT32:
      cmx__strbuf_printf(b, "cmx_bitsf(0x%08xu);\n", (unsigned)u);
      break;
    case CMX_FLOAT64:
      cmx__strbuf_printf(b, "cmx_fk_bitsd(0x%016llxull);\n",
                         (unsigned long long)u);
      break;
    case CMX_COMPLEX64:
      memcpy(&re, v, 4);
      memcpy(&im, v + 4, 4);
      cmx__strbuf_printf(
          b, "cmx_c64_make(cmx_bitsf(0x%08xu), cmx_bitsf(0x%08xu));\n", re, im);
      break;
    default: /* integers, bool, 16-bit floats: their bits */
      cmx__strbuf_printf(b, "(%s)0x%llxull;\n", cmx__fused_storage(dt),
                         (unsigned long long)u);
  }
}

void cmx__fused_emit_step_defs(cmx__strbuf* b, const cmx__fused_program* prog,
                               int s, int v, const char* qual) {
  const cmx__fused_step* st = &prog->steps[s];
  const cmx__ew_op* op = cmx__ew_op_get(st->id);
  char pre[1024], px[16];
  snprintf(px, sizeof px, "S%d_", v);
  bool ok = true;
  if (op && st->id != CMX__P_Select)
    ok = cmx__ew_prelude(op, st->in_dtype, px, pre, sizeof pre);
  else if (st->id == CMX__P_AsType)
    ok = cmx__ew_convert_prelude(st->in_dtype, st->dtype, px, pre, sizeof pre);
  else
    pre[0] = 0;
  if (!ok) b->failed = true;
  cmx__strbuf_puts(b, pre);
  if (op && (op->flags & CMX__EW_PARAMS)) {
    cmx_ew_params q = cmx__ew_params_of(st->prim);
    cmx__strbuf_printf(b, "%s cmx_ew_params P%d = {%d, 0x%llxull};\n", qual, v,
                       q.decimals, (unsigned long long)q.q);
  }
}

void cmx__fused_emit_step(cmx__strbuf* b, const cmx__fused_program* prog, int s,
                          int v, char (*a)[24], const char* indent) {
  const cmx__fused_step* st = &prog->steps[s];
  const cmx__ew_op* op = cmx__ew_op_get(st->id);
  if (st->id == CMX__P_Select) {
    /* Select moves x's or y's bits, as the eager kernels do. */
    cmx__strbuf_printf(b, "%s%s t%d = %s != 0 ? %s : %s;\n", indent,
                       cmx__fused_storage(st->dtype), v, a[0], a[1], a[2]);
  } else if (op) {
    bool params = op->flags & CMX__EW_PARAMS;
    if (params) cmx__strbuf_printf(b, "#define CMX_EW_P P%d\n", v);
    cmx__strbuf_printf(b, "%sS%d_OUT_T t%d = S%d_STORE(S%d_OP(", indent, v, v,
                       v, v);
    for (int k = 0; k < st->nin; k++)
      cmx__strbuf_printf(b, "%sS%d_LOAD(%s)", k ? ", " : "", v, a[k]);
    cmx__strbuf_puts(b, "));\n");
    if (params) cmx__strbuf_puts(b, "#undef CMX_EW_P\n");
  } else if (st->id == CMX__P_AsType) {
    cmx__strbuf_printf(b, "%sS%d_OUT_T t%d = S%d_CONVERT(%s);\n", indent, v, v,
                       v, a[0]);
  } else { /* Copy or Broadcast: the operand's storage */
    cmx__strbuf_printf(b, "%s%s t%d = %s;\n", indent,
                       cmx__fused_storage(st->dtype), v, a[0]);
  }
}

/* ---------------- the vtable ---------------- */

static void compiled_destroy(void* params) {
  cmx__fused_program_release(((cmx__compiled_params*)params)->prog);
}

static bool compiled_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__fused_program *x = cmx__compiled_program(a),
                           *y = cmx__compiled_program(b);
  return x == y || (x->hash == y->hash && !strcmp(x->sig, y->sig));
}

static uint64_t compiled_hash(const cmx_primitive* p) {
  return cmx__compiled_program(p)->hash;
}

static void compiled_print(const cmx_primitive* p, char* buf, size_t size) {
  snprintf(buf, size, "%s", cmx__compiled_program(p)->label);
}

/* Whether every argument input has its traced shape. */
static bool traced_shapes(const cmx__fused_program* prog,
                          const cmx_array* inputs, int nin) {
  for (int i = 0; i < prog->nin; i++) {
    const cmx__fused_input* in = &prog->in[i];
    if (in->arg < 0) continue;
    if (in->arg >= nin || cmx_array_ndim(inputs[in->arg]) != in->ndim ||
        (in->ndim && memcmp(cmx_array_shape(inputs[in->arg]), in->shape,
                            (size_t)in->ndim * sizeof(int64_t))))
      return false;
  }
  return true;
}

/* Every output has the inputs' broadcast shape; a region that broadcasts
 * to a fixed shape has its traced shape for the traced input shapes (and
 * no derivable shape for others). */
static cmx_status compiled_shapes(const cmx_primitive* p,
                                  const cmx_array* inputs, int nin,
                                  cmx_shape* out, int nout) {
  const cmx__fused_program* prog = cmx__compiled_program(p);
  if (!prog->shapeless_ok && traced_shapes(prog, inputs, nin)) {
    for (int k = 0; k < nout; k++) {
      out[k].ndim = prog->ndim;
      memcpy(out[k].dims, prog->shape, (size_t)prog->ndim * sizeof(int64_t));
    }
    return CMX_OK;
  }
  if (!prog->shapeless_ok)
    return cmx__error(CMX_ERR_VALUE,
                      "[compile] Cannot derive the shape of %s for new input "
                      "shapes: it broadcasts to a shape fixed when traced.",
                      prog->label);
  int nd = 0;
  int64_t dims[CMX_MAX_NDIM];
  for (int i = 0; i < nin; i++) {
    int na = cmx_array_ndim(inputs[i]);
    const int64_t* s = cmx_array_shape(inputs[i]);
    int n = na > nd ? na : nd;
    int64_t r[CMX_MAX_NDIM];
    for (int d = 0; d < n; d++) {
      int64_t a = d < n - nd ? 1 : dims[d - (n - nd)];
      int64_t b = d < n - na ? 1 : s[d - (n - na)];
      if (a != b && a != 1 && b != 1)
        return cmx__error(CMX_ERR_VALUE,
                          "[%s] input shapes cannot be broadcast together.",
                          prog->label);
      r[d] = a == 1 ? b : a;
    }
    memcpy(dims, r, (size_t)n * sizeof *r);
    nd = n;
  }
  for (int k = 0; k < nout; k++) {
    out[k].ndim = nd;
    memcpy(out[k].dims, dims, (size_t)nd * sizeof *dims);
  }
  return CMX_OK;
}

CMX__VTABLE(Compiled, .vjp = cmx__vjp_compiled, .jvp = cmx__jvp_compiled,
            .vmap = cmx__vmap_compiled, .output_shapes = compiled_shapes,
            .equal = compiled_equal, .hash = compiled_hash,
            .print = compiled_print, .destroy = compiled_destroy);

/* ---------------- code generators ---------------- */

static const cmx__fused_codegen* g_codegens[2]; /* by device type */

void cmx__fused_codegen_register(cmx_device_type t,
                                 const cmx__fused_codegen* cg) {
  if ((int)t >= 0 && (int)t < 2) g_codegens[t] = cg;
}

const cmx__fused_codegen* cmx__fused_codegen_for(cmx_device_type t) {
  return (int)t >= 0 && (int)t < 2 ? g_codegens[t] : NULL;
}

_Atomic uint64_t cmx__fused_made;

void cmx__compiled_stats(cmx_compile_stats* s) {
  s->fused = atomic_load(&cmx__fused_made);
  for (int t = 0; t < 2; t++) {
    const cmx__fused_codegen* g = cmx__fused_codegen_for((cmx_device_type)t);
    if (g && g->stats) g->stats(s);
  }
}
