/* Exporting functions: tracing a function into a cmx__fn_trace, writing
 * traces to a file, describing a trace item by item (MLX's callback form)
 * and the dot graph of arrays. See include/cmx/export.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "io/io_common.h"
#include "ops/ops_internal.h"
#include "transforms/transforms_internal.h"

#define OP "export_function"

void cmx__fn_value_name(uint32_t i, char name[8]) {
  char tmp[8];
  int n = 0;
  uint64_t v = (uint64_t)i + 1;
  while (v && n < 7) {
    v--;
    tmp[n++] = (char)('A' + v % 26);
    v /= 26;
  }
  for (int k = 0; k < n; k++) name[k] = tmp[n - 1 - k];
  name[n] = '\0';
}

void cmx__fn_trace_free(cmx__fn_trace* t) {
  if (!t) return;
  for (int i = 0; i < t->nkw; i++) free(t->kwnames[i]);
  free(t->kwnames);
  for (uint32_t i = 0; t->vals && i < t->nvals; i++)
    cmx_array_release(t->vals[i].array);
  free(t->vals);
  for (uint32_t i = 0; t->ops && i < t->nops; i++) {
    free(t->ops[i].params);
    free(t->ops[i].in);
    free(t->ops[i].describe);
  }
  free(t->ops);
  free(t->outs);
  memset(t, 0, sizeof *t);
}

/* ---------------- tracing ---------------- */
/* A value found by the walk, before the final numbering: inputs, then
 * constants, then op outputs, each counted on its own. */
enum { K_INPUT = 0, K_CONST = 1, K_OUT = 2 };
#define CODE(kind, i) (((int64_t)(kind) << 32) | (int64_t)(i))

typedef struct walk {
  cmx__ptrmap ids; /* node -> code */
  cmx__ptrmap ops; /* op -> 1 once finished */
  cmx_array* consts;
  uint32_t nconst, cconst;
  cmx__fn_op* fops;
  int64_t** fin; /* provisional input codes per op */
  uint32_t nops, cops;
  cmx__fn_value* outv; /* the types of the ops' outputs, in order */
  uint32_t nouts, couts;
} walk;

static bool grow(void** p, uint32_t* cap, uint32_t n, size_t elem) {
  if (n < *cap) return true;
  uint32_t c = *cap ? *cap * 2 : 16;
  void* q = realloc(*p, (size_t)c * elem);
  if (!q) {
    cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
    return false;
  }
  *p = q;
  *cap = c;
  return true;
}

static bool add_const(walk* w, cmx_array a) {
  if (a->tracer == CMX__PLACEHOLDER) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] The function's outputs depend on an input of another "
               "transform (vmap) that encloses the export.",
               OP);
    return false;
  }
  if (!grow((void**)&w->consts, &w->cconst, w->nconst, sizeof(cmx_array)))
    return false;
  w->consts[w->nconst] = cmx_array_retain(a);
  return cmx__ptrmap_put(&w->ids, a, CODE(K_CONST, w->nconst++));
}

/* Records op, whose inputs all have codes. */
static bool finish_op(walk* w, cmx__op* op) {
  const cmx_primitive_vtable* vt = op->prim->vt;
  if (!cmx__fn_exportable(vt)) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Unable to export the primitive %s: cmx cannot rebuild "
               "it from a file.",
               OP, vt->name);
    return false;
  }
  if (!grow((void**)&w->fops, &w->cops, w->nops, sizeof *w->fops)) return false;
  w->fin = realloc(w->fin, (size_t)w->cops * sizeof *w->fin);
  if (!w->fin) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  cmx__fn_op* f = &w->fops[w->nops];
  memset(f, 0, sizeof *f);
  w->fin[w->nops] = NULL;
  w->nops++;
  f->vt = vt;
  f->nin = op->nin;
  f->nout = op->nout;
  f->psize = op->prim->params_size;
  char desc[256];
  cmx_primitive_describe(op->prim, desc, sizeof desc);
  f->describe = strdup(desc);
  f->params = malloc(f->psize ? f->psize : 1);
  int64_t* in = malloc((size_t)(op->nin ? op->nin : 1) * sizeof *in);
  w->fin[w->nops - 1] = in;
  if (!f->describe || !f->params || !in)
    return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  memcpy(f->params, op->prim->params, f->psize);
  for (int i = 0; i < op->nin; i++)
    in[i] = cmx__ptrmap_get(&w->ids, op->inputs[i]);
  f->out = w->nouts;
  for (int i = 0; i < op->nout; i++) {
    if (!grow((void**)&w->outv, &w->couts, w->nouts, sizeof *w->outv))
      return false;
    const int64_t* shape;
    int ndim;
    cmx_dtype dt;
    cmx__op_out_desc(op, i, &shape, &ndim, &dt);
    cmx__fn_value* v = &w->outv[w->nouts];
    memset(v, 0, sizeof *v);
    v->dtype = dt;
    v->ndim = ndim;
    memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
    cmx_array o = cmx__op_output(op, i);
    bool ok = !o || cmx__ptrmap_put(&w->ids, o, CODE(K_OUT, w->nouts));
    cmx_array_release(o);
    if (!ok) return false;
    w->nouts++;
  }
  return cmx__ptrmap_put(&w->ops, op, 1);
}

typedef struct {
  cmx_array node;
  int next;
} frame;

/* Whether node a is a constant of the trace: it does not depend on a
 * tracer, except for a lazy Broadcast of one, which stays an op (its
 * input the constant) so shapeless traces broadcast it to the call's
 * shapes, and files keep the small array. */
static bool is_const(cmx_array a) {
  return !a->op ||
         (!a->tracer && (a->op->nin != 1 || a->op->nout != 1 ||
                         strcmp(a->op->prim->vt->name, "Broadcast") != 0));
}

/* Walks back from root: every lazy node that depends on a tracer is an
 * op of the trace, everything else reached is a constant. */
static bool walk_from(walk* w, cmx_array root, frame** stack, uint32_t* cap) {
  uint32_t n = 0;
  if (cmx__ptrmap_get(&w->ids, root) >= 0) return true;
  if (is_const(root)) return add_const(w, root);
  if (!grow((void**)stack, cap, n, sizeof **stack)) return false;
  (*stack)[n++] = (frame){root, 0};
  while (n) {
    frame* top = &(*stack)[n - 1];
    cmx__op* op = top->node->op;
    if (top->next < op->nin) {
      cmx_array in = op->inputs[top->next++];
      if (cmx__ptrmap_get(&w->ids, in) >= 0) continue;
      if (is_const(in)) {
        if (!add_const(w, in)) return false;
        continue;
      }
      if (cmx__ptrmap_get(&w->ops, in->op) >= 0) continue; /* a sibling */
      if (!grow((void**)stack, cap, n, sizeof **stack)) return false;
      (*stack)[n++] = (frame){in, 0};
    } else {
      n--;
      if (cmx__ptrmap_get(&w->ops, op) < 0 && !finish_op(w, op)) return false;
    }
  }
  return true;
}

static void walk_free(walk* w) {
  cmx__ptrmap_free(&w->ids);
  cmx__ptrmap_free(&w->ops);
  cmx_array_release_all(w->consts, w->nconst);
  free(w->consts);
  for (uint32_t i = 0; i < w->nops; i++) {
    if (w->fops) { /* else moved into a trace (fill_trace) */
      free(w->fops[i].params);
      free(w->fops[i].describe);
    }
    free(w->fin[i]);
  }
  free(w->fops);
  free(w->fin);
  free(w->outv);
}

static uint32_t final_id(const cmx__fn_trace* t, int64_t code) {
  uint32_t i = (uint32_t)(code & 0xffffffff);
  switch (code >> 32) {
    case K_INPUT:
      return i;
    case K_CONST:
      return (uint32_t)(t->npos + t->nkw) + i;
    default:
      return (uint32_t)(t->npos + t->nkw) + t->nconst + i;
  }
}

static void set_value(cmx__fn_value* v, uint32_t id, cmx_dtype dt, int ndim,
                      const int64_t* shape) {
  v->dtype = dt;
  v->ndim = ndim;
  memcpy(v->shape, shape, (size_t)ndim * sizeof *shape);
  cmx__fn_value_name(id, v->name);
}

/* Moves what the walk found into t (numbered). */
static bool fill_trace(cmx__fn_trace* t, walk* w, const cmx_array* inputs,
                       int nin, const int64_t* out_codes, int nout) {
  t->nconst = w->nconst;
  t->nops = w->nops;
  t->nout = (uint32_t)nout;
  t->nvals = (uint32_t)nin + w->nconst + w->nouts;
  t->vals = calloc(t->nvals ? t->nvals : 1, sizeof *t->vals);
  t->outs = malloc((size_t)(nout ? nout : 1) * sizeof *t->outs);
  if (!t->vals || !t->outs)
    return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  for (int i = 0; i < nin; i++)
    set_value(&t->vals[i], (uint32_t)i, inputs[i]->dtype, inputs[i]->ndim,
              inputs[i]->dims);
  for (uint32_t i = 0; i < w->nconst; i++) {
    cmx_array c = w->consts[i];
    cmx__fn_value* v = &t->vals[(uint32_t)nin + i];
    set_value(v, (uint32_t)nin + i, c->dtype, c->ndim, c->dims);
    v->array = cmx_array_retain(c);
  }
  for (uint32_t i = 0; i < w->nouts; i++) {
    uint32_t id = (uint32_t)nin + w->nconst + i;
    t->vals[id] = w->outv[i];
    cmx__fn_value_name(id, t->vals[id].name);
  }
  for (int i = 0; i < nout; i++) t->outs[i] = final_id(t, out_codes[i]);
  t->ops = w->fops;
  w->fops = NULL;
  for (uint32_t k = 0; k < w->nops; k++) {
    cmx__fn_op* f = &t->ops[k];
    f->in = malloc((size_t)(f->nin ? f->nin : 1) * sizeof *f->in);
    if (!f->in) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of memory", OP);
    for (int i = 0; i < f->nin; i++) f->in[i] = final_id(t, w->fin[k][i]);
    f->out = final_id(t, CODE(K_OUT, f->out));
  }
  return true;
}

static bool check_inputs(const cmx_array* a, int n, const char* what) {
  for (int i = 0; i < n; i++)
    if (!a[i]) {
      cmx__error(CMX_ERR_VALUE, "[%s] %s %d is a null array", OP, what, i);
      return false;
    }
  return true;
}

cmx_status cmx__fn_trace_build(cmx__fn_trace* t, cmx_closure fun,
                               const cmx_array* args, int nargs,
                               const char* const* kwnames,
                               const cmx_array* kwargs, int nkw,
                               bool shapeless) {
  memset(t, 0, sizeof *t);
  if (nargs < 0 || nkw < 0 || nargs + nkw > (int)CMX__FN_MAX_TRACES ||
      (nargs && !args) || (nkw && (!kwargs || !kwnames)))
    return cmx__error(CMX_ERR_VALUE, "[%s] invalid argument lists", OP);
  if (!check_inputs(args, nargs, "argument") ||
      !check_inputs(kwargs, nkw, "keyword argument"))
    return cmx_last_status();
  t->shapeless = shapeless;
  t->npos = nargs;
  t->nkw = nkw;
  t->kwnames = calloc((size_t)(nkw ? nkw : 1), sizeof *t->kwnames);
  if (!t->kwnames) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  for (int i = 0; i < nkw; i++)
    if (!kwnames[i] || !(t->kwnames[i] = strdup(kwnames[i]))) {
      cmx__fn_trace_free(t);
      return cmx__error(CMX_ERR_VALUE, "[%s] bad keyword name", OP);
    }
  int n = nargs + nkw;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx_array* stand = calloc((size_t)(n ? n : 1), sizeof *stand);
  walk w;
  memset(&w, 0, sizeof w);
  frame* stack = NULL;
  uint32_t scap = 0;
  bool ok = stand != NULL;
  for (int i = 0; ok && i < n; i++) {
    cmx_array a = i < nargs ? args[i] : kwargs[i - nargs];
    ok = (stand[i] = cmx__placeholder(a->dims, a->ndim, a->dtype)) &&
         cmx__ptrmap_put(&w.ids, stand[i], CODE(K_INPUT, i));
  }
  int nout = 0;
  cmx_array* outs = NULL;
  if (ok) {
    cmx__trace_begin();
    outs = cmx__call_scoped(fun, stand, n, &nout, OP);
    cmx__trace_end();
    ok = outs != NULL;
  }
  int64_t* codes = ok ? malloc((size_t)(nout ? nout : 1) * sizeof *codes) : 0;
  ok = ok && codes;
  for (int i = 0; ok && i < nout; i++) {
    ok = walk_from(&w, outs[i], &stack, &scap);
    codes[i] = ok ? cmx__ptrmap_get(&w.ids, outs[i]) : 0;
  }
  /* Constants are read now (they do not depend on the inputs). */
  if (ok && w.nconst) ok = cmx_eval(w.consts, w.nconst) == CMX_OK;
  if (ok) ok = fill_trace(t, &w, stand, n, codes, nout);
  free(codes);
  free(stack);
  free(stand);
  free(outs); /* the list; its arrays are the scope's */
  walk_free(&w);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  if (!ok) {
    cmx__fn_trace_free(t);
    return cmx_last_status() != CMX_OK ? cmx_last_status() : CMX_ERR_RUNTIME;
  }
  return CMX_OK;
}

/* ---------------- writing ---------------- */
typedef struct bytes {
  uint8_t* p;
  size_t n, cap;
  bool failed;
} bytes;

static void put(bytes* b, const void* p, size_t n) {
  if (b->failed) return;
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->n + n) c *= 2;
    uint8_t* q = realloc(b->p, c);
    if (!q) {
      b->failed = true;
      return;
    }
    b->p = q;
    b->cap = c;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
}
static void put_u8(bytes* b, uint8_t v) {
  put(b, &v, 1);
}
static void put_u16(bytes* b, uint16_t v) {
  uint8_t q[2];
  cmx__put16(q, v);
  put(b, q, 2);
}
static void put_u32(bytes* b, uint32_t v) {
  uint8_t q[4];
  cmx__put32(q, v);
  put(b, q, 4);
}
static void put_u64(bytes* b, uint64_t v) {
  uint8_t q[8];
  cmx__put64(q, v);
  put(b, q, 8);
}
static void put_str32(bytes* b, const char* s) {
  size_t n = strlen(s);
  put_u32(b, (uint32_t)n);
  put(b, s, n);
}
static void put_type(bytes* b, const cmx__fn_value* v) {
  put_u8(b, (uint8_t)v->dtype);
  put_u8(b, (uint8_t)v->ndim);
  for (int i = 0; i < v->ndim; i++) put_u64(b, (uint64_t)v->shape[i]);
}

static cmx_status sink_bytes(void* ctx, const void* p, size_t n) {
  put(ctx, p, n);
  return CMX_OK;
}

static cmx_status put_trace(bytes* b, const cmx__fn_trace* t) {
  put_u8(b, t->shapeless);
  put_u8(b, 0);
  put_u16(b, 0);
  put_u32(b, (uint32_t)t->npos);
  put_u32(b, (uint32_t)t->nkw);
  for (int i = 0; i < t->nkw; i++) put_str32(b, t->kwnames[i]);
  put_u32(b, t->nconst);
  put_u32(b, t->nops);
  put_u32(b, t->nout);
  uint32_t nin = (uint32_t)(t->npos + t->nkw);
  for (uint32_t i = 0; i < nin; i++) put_type(b, &t->vals[i]);
  for (uint32_t i = 0; i < t->nconst; i++) {
    const cmx__fn_value* v = &t->vals[nin + i];
    put_type(b, v);
    put_u64(b, cmx_array_nbytes(v->array));
    cmx_status st = cmx__array_bytes(v->array, false, sink_bytes, b);
    if (st != CMX_OK) return st;
  }
  for (uint32_t k = 0; k < t->nops; k++) {
    const cmx__fn_op* f = &t->ops[k];
    size_t len = strlen(f->vt->name);
    put_u16(b, (uint16_t)len);
    put(b, f->vt->name, len);
    put_u32(b, (uint32_t)f->psize);
    put(b, f->params, f->psize);
    put_u32(b, (uint32_t)f->nin);
    for (int i = 0; i < f->nin; i++) put_u32(b, f->in[i]);
    put_u32(b, (uint32_t)f->nout);
    for (int i = 0; i < f->nout; i++)
      put_type(b, &t->vals[f->out + (uint32_t)i]);
  }
  for (uint32_t i = 0; i < t->nout; i++) put_u32(b, t->outs[i]);
  return CMX_OK;
}

struct cmx_exporter {
  char* path;
  char* metadata;
  cmx__fn_trace* traces;
  int n, cap;
};

cmx_status cmx_exporter_new(cmx_exporter** out, const char* path,
                            const char* metadata) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[exporter] output is NULL");
  *out = NULL;
  if (!path) return cmx__error(CMX_ERR_VALUE, "[exporter] path is NULL");
  cmx_exporter* e = calloc(1, sizeof *e);
  if (e) {
    e->path = strdup(path);
    e->metadata = strdup(metadata ? metadata : "");
  }
  if (!e || !e->path || !e->metadata) {
    cmx_exporter_free(e);
    return cmx__error(CMX_ERR_MEMORY, "[exporter] out of host memory");
  }
  *out = e;
  return CMX_OK;
}

cmx_status cmx_exporter_add(cmx_exporter* e, cmx_closure fun,
                            const cmx_array* args, int nargs,
                            const char* const* kwnames, const cmx_array* kwargs,
                            int nkw, bool shapeless) {
  if (!e) return cmx__error(CMX_ERR_VALUE, "[%s] exporter is NULL", OP);
  if (e->n == e->cap) {
    int c = e->cap ? e->cap * 2 : 4;
    cmx__fn_trace* t = realloc(e->traces, (size_t)c * sizeof *t);
    if (!t) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
    e->traces = t;
    e->cap = c;
  }
  cmx_status st = cmx__fn_trace_build(&e->traces[e->n], fun, args, nargs,
                                      kwnames, kwargs, nkw, shapeless);
  if (st == CMX_OK) e->n++;
  return st;
}

cmx_status cmx_exporter_close(cmx_exporter* e) {
  if (!e) return cmx__error(CMX_ERR_VALUE, "[%s] exporter is NULL", OP);
  bytes b = {0};
  put(&b, CMX__FN_MAGIC, 6); /* with its NUL */
  put_u16(&b, CMX__FN_VERSION);
  put_u16(&b, 0);
  put_str32(&b, e->metadata);
  put_u32(&b, (uint32_t)e->n);
  cmx_status st = CMX_OK;
  for (int i = 0; st == CMX_OK && i < e->n; i++)
    st = put_trace(&b, &e->traces[i]);
  if (st == CMX_OK && b.failed)
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  cmx__wr w;
  if (st == CMX_OK) st = cmx__wr_open(&w, OP, e->path);
  if (st == CMX_OK) {
    st = cmx__wr_write(&w, b.p, b.n);
    if (st == CMX_OK) st = cmx__wr_commit(&w);
    cmx__wr_abort(&w); /* no-op after a commit */
  }
  free(b.p);
  return st;
}

void cmx_exporter_free(cmx_exporter* e) {
  if (!e) return;
  for (int i = 0; i < e->n; i++) cmx__fn_trace_free(&e->traces[i]);
  free(e->traces);
  free(e->path);
  free(e->metadata);
  free(e);
}

cmx_status cmx_export_function(const char* path, cmx_closure fun,
                               const cmx_array* args, int nargs, bool shapeless,
                               const char* metadata) {
  cmx_exporter* e = NULL;
  cmx_status st = cmx_exporter_new(&e, path, metadata);
  if (st == CMX_OK)
    st = cmx_exporter_add(e, fun, args, nargs, NULL, NULL, 0, shapeless);
  if (st == CMX_OK) st = cmx_exporter_close(e);
  cmx_exporter_free(e);
  return st;
}

/* ---------------- describing ---------------- */
static cmx_export_value view_of(const cmx__fn_value* v) {
  return (cmx_export_value){v->name, v->dtype, v->ndim, v->shape, v->array};
}

cmx_status cmx_export_visit(cmx_closure fun, const cmx_array* args, int nargs,
                            const char* const* kwnames, const cmx_array* kwargs,
                            int nkw, bool shapeless, cmx_export_visit_fn visit,
                            void* payload) {
  if (!visit) return cmx__error(CMX_ERR_VALUE, "[%s] callback is NULL", OP);
  cmx__fn_trace t;
  cmx_status st = cmx__fn_trace_build(&t, fun, args, nargs, kwnames, kwargs,
                                      nkw, shapeless);
  if (st != CMX_OK) return st;
  uint32_t nin = (uint32_t)(t.npos + t.nkw);
  cmx_export_value* scratch = malloc((t.nvals ? t.nvals : 1) * sizeof *scratch);
  if (!scratch) st = cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
  for (uint32_t i = 0; st == CMX_OK && i < t.nvals; i++)
    scratch[i] = view_of(&t.vals[i]);
  for (uint32_t i = 0; st == CMX_OK && i < nin + t.nconst; i++) {
    cmx_export_item it = {
        .kind = i < nin ? CMX_EXPORT_INPUT : CMX_EXPORT_CONSTANT,
        .keyword = i >= (uint32_t)t.npos && i < nin
                       ? t.kwnames[i - (uint32_t)t.npos]
                       : NULL,
        .nout = 1,
        .out = &scratch[i]};
    st = visit(payload, &it);
  }
  cmx_export_value* ins = NULL;
  for (uint32_t k = 0; st == CMX_OK && k < t.nops; k++) {
    const cmx__fn_op* f = &t.ops[k];
    free(ins);
    ins = malloc((size_t)(f->nin ? f->nin : 1) * sizeof *ins);
    if (!ins) {
      st = cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", OP);
      break;
    }
    for (int i = 0; i < f->nin; i++) ins[i] = scratch[f->in[i]];
    cmx_export_item it = {.kind = CMX_EXPORT_OP,
                          .op = f->vt->name,
                          .describe = f->describe,
                          .nin = f->nin,
                          .nout = f->nout,
                          .in = ins,
                          .out = &scratch[f->out]};
    st = visit(payload, &it);
  }
  for (uint32_t i = 0; st == CMX_OK && i < t.nout; i++) {
    cmx_export_item it = {
        .kind = CMX_EXPORT_OUTPUT, .nin = 1, .in = &scratch[t.outs[i]]};
    st = visit(payload, &it);
  }
  free(ins);
  free(scratch);
  cmx__fn_trace_free(&t);
  return st;
}

/* ---------------- dot ---------------- */
static void dot_printf(bytes* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void dot_printf(bytes* b, const char* fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0)
    put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The name of node a (numbered on first sight). */
static const char* dot_name(cmx__ptrmap* names, uint32_t* count, cmx_array a,
                            char buf[8]) {
  int64_t id = cmx__ptrmap_get(names, a);
  if (id < 0) {
    id = (*count)++;
    cmx__ptrmap_put(names, a, id);
  }
  cmx__fn_value_name((uint32_t)id, buf);
  return buf;
}

cmx_status cmx_export_to_dot(const cmx_array* outputs, int n, char** dot) {
  if (!dot) return cmx__error(CMX_ERR_VALUE, "[export_to_dot] out is NULL");
  *dot = NULL;
  if (n < 0 || (n && !outputs))
    return cmx__error(CMX_ERR_VALUE, "[export_to_dot] bad outputs");
  bytes b = {0};
  cmx__ptrmap names = {0}, seen = {0};
  uint32_t count = 0;
  cmx__op** stack = NULL;
  uint32_t sn = 0, scap = 0;
  char n1[8], n2[8];
  put(&b, "digraph {\n", 10);
  for (int r = 0; r < n; r++) {
    cmx_array a = outputs[r];
    if (!a) continue;
    cmx__op* op0 = cmx__node_op(a);
    if (!op0) {
      dot_printf(&b, "{ rank=source; \"%s\"; }\n",
                 dot_name(&names, &count, a, n1));
      continue;
    }
    if (cmx__ptrmap_get(&seen, op0) >= 0) continue;
    cmx__ptrmap_put(&seen, op0, 1);
    if (!grow((void**)&stack, &scap, sn, sizeof *stack)) break;
    stack[sn++] = op0;
    while (sn) {
      cmx__op* op = stack[--sn];
      char desc[128];
      cmx_primitive_describe(op->prim, desc, sizeof desc);
      dot_printf(&b, "{ %llu [label=\"%s\", shape=rectangle]; }\n",
                 (unsigned long long)(uintptr_t)op, desc);
      for (int i = 0; i < op->nin; i++) {
        cmx_array in = op->inputs[i];
        cmx__op* iop = cmx__node_op(in);
        dot_printf(&b, "{ %s\"%s\"; }\n", iop ? "" : "rank=source; ",
                   dot_name(&names, &count, in, n1));
        dot_printf(&b, "\"%s\" -> %llu\n", n1,
                   (unsigned long long)(uintptr_t)op);
        if (iop && cmx__ptrmap_get(&seen, iop) < 0) {
          cmx__ptrmap_put(&seen, iop, 1);
          if (!grow((void**)&stack, &scap, sn, sizeof *stack)) break;
          stack[sn++] = iop;
        }
      }
      for (int i = 0; i < op->nout; i++) {
        cmx_array o = cmx__op_output(op, i);
        if (!o) continue;
        dot_name(&names, &count, o, n2);
        cmx_array_release(o);
        dot_printf(&b, "{ \"%s\"; }\n%llu -> \"%s\"\n", n2,
                   (unsigned long long)(uintptr_t)op, n2);
      }
    }
  }
  put(&b, "}\n", 3); /* with the NUL */
  free(stack);
  cmx__ptrmap_free(&names);
  cmx__ptrmap_free(&seen);
  if (b.failed) {
    free(b.p);
    return cmx__error(CMX_ERR_MEMORY, "[export_to_dot] out of host memory");
  }
  *dot = (char*)b.p;
  return CMX_OK;
}
