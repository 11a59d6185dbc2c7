/* Transform machinery: pointer maps, stand-ins, the tape walk, calling
 * closures and rules. See transforms_internal.h for how a transform runs. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "transforms/transforms_internal.h"

/* ---------------- pointer map ---------------- */

static size_t slot_of(const void* key, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)key;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

static bool grow(cmx__ptrmap* m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  const void** keys = calloc(cap, sizeof *keys);
  int64_t* vals = malloc(cap * sizeof *vals);
  if (!keys || !vals) {
    free(keys);
    free(vals);
    cmx__error(CMX_ERR_MEMORY, "[transform] out of host memory");
    return false;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->keys[i]) continue;
    size_t j = slot_of(m->keys[i], cap);
    while (keys[j]) j = (j + 1) & (cap - 1);
    keys[j] = m->keys[i];
    vals[j] = m->vals[i];
  }
  free(m->keys);
  free(m->vals);
  m->keys = keys;
  m->vals = vals;
  m->cap = cap;
  return true;
}

bool cmx__ptrmap_put(cmx__ptrmap* m, const void* key, int64_t val) {
  if ((m->n + 1) * 2 > m->cap && !grow(m)) return false;
  size_t j = slot_of(key, m->cap);
  while (m->keys[j] && m->keys[j] != key) j = (j + 1) & (m->cap - 1);
  if (!m->keys[j]) {
    m->keys[j] = key;
    m->n++;
  }
  m->vals[j] = val;
  return true;
}

int64_t cmx__ptrmap_get(const cmx__ptrmap* m, const void* key) {
  if (!m->cap) return -1;
  size_t j = slot_of(key, m->cap);
  while (m->keys[j]) {
    if (m->keys[j] == key) return m->vals[j];
    j = (j + 1) & (m->cap - 1);
  }
  return -1;
}

void cmx__ptrmap_free(cmx__ptrmap* m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

/* ---------------- tracing and stand-ins ---------------- */

void cmx__trace_begin(void) {
  atomic_fetch_add(&cmx__tracing, 1);
}
void cmx__trace_end(void) {
  atomic_fetch_sub(&cmx__tracing, 1);
}

cmx_array cmx__tracer_of(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("transform", a)) return NULL;
  if (!a->op && !a->tracer && a->buf && cmx_array_is_available(a) &&
      !a->error) {
    /* A fresh leaf on the same data: no kernel, no copy. */
    cmx_array t = cmx__node_new("transform", a->dims, a->ndim, a->dtype);
    if (!t) return NULL;
    memcpy(CMX__STRIDES(t), CMX__STRIDES(a), (size_t)a->ndim * sizeof(int64_t));
    t->buf = cmx__buffer_retain(a->buf);
    t->offset = a->offset;
    t->data_size = a->data_size;
    t->flags = a->flags;
    t->weak = a->weak;
    t->weak_value = a->weak_value;
    t->tracer = CMX__TRACER;
    return cmx__own(t);
  }
  cmx_array t = cmx__apply(&cmx__vt_Identity, NULL, 0, s, &a, 1, a->dims,
                           a->ndim, a->dtype);
  if (t) {
    t->tracer = CMX__TRACER;
    t->weak = a->weak;
    t->weak_value = a->weak_value;
  }
  return t;
}

cmx_array cmx__placeholder(const int64_t* shape, int ndim, cmx_dtype dt) {
  cmx_array t = cmx__node_new("vmap", shape, ndim, dt);
  if (!t) return NULL;
  t->tracer = CMX__PLACEHOLDER;
  return cmx__own(t);
}

/* ---------------- tape ---------------- */

typedef struct frame {
  cmx_array node;
  int next;
} frame;

/* Whether the walk must enter node: a tracer computed by an op not yet
 * seen, and not a stand-in. */
static bool must_visit(cmx__tape* t, cmx_array node) {
  if (!node->tracer || cmx__tape_active(t, node)) return false;
  cmx__op* op = cmx__node_op(node);
  return op && cmx__ptrmap_get(&t->seen, op) < 0;
}

/* Records a finished op: on the tape when it depends on a stand-in. */
static bool finish(cmx__tape* t, cmx__op* op) {
  if (t->cut && op->prim->vt == &cmx__vt_StopGradient) return true;
  bool active = false;
  int nvis = cmx__op_visible_inputs(op);
  for (int i = 0; i < nvis && !active; i++)
    active = cmx__tape_active(t, op->inputs[i]);
  if (!active) return true;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    cmx__op** ops = realloc(t->ops, cap * sizeof *ops);
    if (!ops) {
      cmx__error(CMX_ERR_MEMORY, "[transform] out of host memory");
      return false;
    }
    t->ops = ops;
    t->cap = cap;
  }
  atomic_fetch_add(&op->refcount, 1);
  t->ops[t->n++] = op;
  for (int i = 0; i < op->nout; i++) {
    cmx_array o = cmx__op_output(op, i);
    if (!o) continue;
    bool ok = cmx__ptrmap_put(&t->active, o, 1);
    cmx_array_release(o);
    if (!ok) return false;
  }
  return true;
}

static bool push(frame** stack, size_t* n, size_t* cap, cmx_array node) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    frame* s = realloc(*stack, c * sizeof *s);
    if (!s) {
      cmx__error(CMX_ERR_MEMORY, "[transform] out of host memory");
      return false;
    }
    *stack = s;
    *cap = c;
  }
  (*stack)[(*n)++] = (frame){node, 0};
  return true;
}

static cmx_status build(cmx__tape* t, const cmx_array* standins, int nin,
                        const cmx_array* roots, int nroots, bool cut) {
  memset(t, 0, sizeof *t);
  t->cut = cut;
  bool ok = true;
  for (int i = 0; i < nin && ok; i++)
    ok = cmx__ptrmap_put(&t->active, standins[i], 1);
  frame* stack = NULL;
  size_t n = 0, cap = 0;
  for (int r = 0; r < nroots && ok; r++) {
    if (!must_visit(t, roots[r])) continue;
    ok = cmx__ptrmap_put(&t->seen, cmx__node_op(roots[r]), 1) &&
         push(&stack, &n, &cap, roots[r]);
    while (n && ok) {
      frame* top = &stack[n - 1];
      cmx__op* op = cmx__node_op(top->node);
      if (top->next < cmx__op_visible_inputs(op)) {
        cmx_array in = op->inputs[top->next++];
        if (must_visit(t, in))
          ok = cmx__ptrmap_put(&t->seen, cmx__node_op(in), 1) &&
               push(&stack, &n, &cap, in);
      } else {
        n--;
        ok = finish(t, op);
      }
    }
  }
  free(stack);
  if (!ok) {
    cmx__tape_free(t);
    return cmx_last_status();
  }
  return CMX_OK;
}

cmx_status cmx__tape_build(cmx__tape* t, const cmx_array* standins, int nin,
                           const cmx_array* roots, int nroots) {
  return build(t, standins, nin, roots, nroots, false);
}

cmx_status cmx__tape_build_grad(cmx__tape* t, const cmx_array* standins,
                                int nin, const cmx_array* roots, int nroots) {
  return build(t, standins, nin, roots, nroots, true);
}

void cmx__tape_free(cmx__tape* t) {
  for (size_t i = 0; i < t->n; i++) cmx__op_release(t->ops[i]);
  free(t->ops);
  cmx__ptrmap_free(&t->active);
  cmx__ptrmap_free(&t->seen);
  memset(t, 0, sizeof *t);
}

/* ---------------- closures ---------------- */

void cmx_arrays_free(cmx_array* arrays, int n) {
  if (!arrays) return;
  for (int i = 0; i < n; i++) cmx_array_release(arrays[i]);
  free(arrays);
}

cmx_status cmx_closure_call(cmx_closure f, const cmx_array* inputs, int nin,
                            cmx_array** outputs, int* nout) {
  if (!outputs || !nout)
    return cmx__error(CMX_ERR_VALUE, "[closure] output pointer is NULL");
  *outputs = NULL;
  *nout = 0;
  if (!f.fn) return cmx__error(CMX_ERR_VALUE, "[closure] function is NULL");
  if (nin < 0 || (nin && !inputs))
    return cmx__error(CMX_ERR_VALUE, "[closure] bad input list");
  cmx_array* outs = NULL;
  int n = 0;
  cmx_status st = f.fn(f.payload, inputs, nin, &outs, &n);
  if (st != CMX_OK) {
    if (cmx_last_status() == CMX_OK)
      cmx__error(st, "[closure] the function failed without a message");
    return st;
  }
  if (n < 0 || (n > 0 && !outs))
    return cmx__error(CMX_ERR_VALUE,
                      "[closure] the function returned a bad output list");
  for (int i = 0; i < n; i++)
    if (!outs[i]) {
      cmx_arrays_free(outs, n);
      return cmx__error(CMX_ERR_VALUE,
                        "[closure] the function returned a null array "
                        "(output %d)",
                        i);
    }
  *outputs = outs;
  *nout = n;
  return CMX_OK;
}

cmx_array* cmx__call_scoped(cmx_closure f, const cmx_array* in, int nin,
                            int* nout, const char* op) {
  cmx_array* outs = NULL;
  int n = 0;
  if (cmx_closure_call(f, in, nin, &outs, &n) != CMX_OK) return NULL;
  for (int i = 0; i < n; i++) cmx__own(outs[i]);
  if (!outs) outs = malloc(sizeof(cmx_array)); /* a freeable empty list */
  if (!outs) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  *nout = n;
  return outs;
}

cmx_array* cmx__export_arrays(const cmx_array* a, int n, const char* op) {
  if (n == 0) return NULL;
  cmx_array* out = malloc((size_t)n * sizeof *out);
  if (!out) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  for (int i = 0; i < n; i++) out[i] = cmx_array_retain(a[i]);
  return out;
}

void cmx__op_out_desc(cmx__op* op, int i, const int64_t** shape, int* ndim,
                      cmx_dtype* dt) {
  if (op->nout > 1) {
    *shape = op->out_shapes[i];
    *ndim = op->out_ndims[i];
    *dt = op->out_dtypes[i];
    return;
  }
  cmx_array o = op->outputs[0]; /* alive: single outputs hold the op */
  *shape = o->dims;
  *ndim = o->ndim;
  *dt = o->dtype;
}

/* ---------------- rules ---------------- */

cmx_array* cmx__op_outputs_scoped(cmx__op* op) {
  cmx_array* outs = calloc((size_t)op->nout, sizeof *outs);
  if (!outs) return CMX__FAIL(CMX_ERR_MEMORY, "[transform] out of memory");
  for (int i = 0; i < op->nout; i++) outs[i] = cmx__own(cmx__op_output(op, i));
  return outs;
}

/* Whether op touches complex numbers (an input or an output). */
static bool op_is_complex(cmx__op* op) {
  for (int i = 0; i < op->nin; i++)
    if (op->inputs[i] && cmx_dtype_is_complex(op->inputs[i]->dtype))
      return true;
  for (int i = 0; i < op->nout; i++) {
    const int64_t* sh;
    int nd;
    cmx_dtype dt;
    cmx__op_out_desc(op, i, &sh, &nd, &dt);
    if (cmx_dtype_is_complex(dt)) return true;
  }
  return false;
}

/* c conjugated when complex (scope-owned), else c itself. */
static cmx_array conj_complex(cmx_array c) {
  return c && cmx_dtype_is_complex(c->dtype)
             ? cmx__conjugate(c, CMX_STREAM_DEFAULT)
             : c;
}

cmx_status cmx__rule_vjp(cmx__op* op, const cmx_array* cotangents,
                         const int* argnums, int nargs, cmx_array* out) {
  const cmx_primitive_vtable* vt = op->prim->vt;
  for (int k = 0; k < nargs; k++) out[k] = NULL;
  if (!vt->vjp)
    return cmx__error(CMX_ERR_VALUE, "[vjp] Not implemented for primitive %s.",
                      vt->name);
  cmx_array* outs = cmx__op_outputs_scoped(op);
  if (!outs) return cmx_last_status();
  /* The rules map a cotangent as a tangent (ct * f'(z)); MLX's convention
   * for complex numbers is ct * conj(f'(z)) = conj(conj(ct) * f'(z)): the
   * cotangents are conjugated on the way in and the results on the way
   * out. */
  bool cplx = op_is_complex(op);
  cmx_array* cin = NULL;
  if (cplx) {
    cin = calloc((size_t)op->nout, sizeof *cin);
    if (!cin) {
      free(outs);
      return cmx__error(CMX_ERR_MEMORY, "[vjp] out of host memory");
    }
    for (int i = 0; i < op->nout; i++) cin[i] = conj_complex(cotangents[i]);
  }
  cmx_status st =
      vt->vjp(op->prim, op->inputs, op->nin, cplx ? cin : cotangents, op->nout,
              argnums, nargs, outs, out);
  free(outs);
  free(cin);
  for (int k = 0; k < nargs; k++) cmx__own(out[k]);
  if (cplx && st == CMX_OK)
    for (int k = 0; k < nargs; k++) out[k] = conj_complex(out[k]);
  if (st != CMX_OK) {
    for (int k = 0; k < nargs; k++) out[k] = NULL;
    if (cmx_last_status() == CMX_OK)
      cmx__error(st, "[vjp] the rule of %s failed", vt->name);
  }
  return st;
}

cmx_status cmx__rule_jvp(cmx__op* op, const cmx_array* tangents,
                         const int* argnums, int nargs, cmx_array* out) {
  const cmx_primitive_vtable* vt = op->prim->vt;
  for (int k = 0; k < op->nout; k++) out[k] = NULL;
  if (!vt->jvp)
    return cmx__error(CMX_ERR_VALUE, "[jvp] Not implemented for primitive %s.",
                      vt->name);
  cmx_array* outs = cmx__op_outputs_scoped(op);
  if (!outs) return cmx_last_status();
  cmx_status st = vt->jvp(op->prim, op->inputs, op->nin, tangents, argnums,
                          nargs, outs, out, op->nout);
  free(outs);
  for (int k = 0; k < op->nout; k++) cmx__own(out[k]);
  if (st != CMX_OK) {
    for (int k = 0; k < op->nout; k++) out[k] = NULL;
    if (cmx_last_status() == CMX_OK)
      cmx__error(st, "[jvp] the rule of %s failed", vt->name);
  }
  return st;
}
