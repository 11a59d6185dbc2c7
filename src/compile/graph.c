/* compile's graph: built from a trace, edited by the passes, replayed on
 * each call (see compile_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "cmx/ops.h"
#include "compile/compile_internal.h"
#include "primitives/registry.h"
#include "transforms/transforms_internal.h"

static cmx_status oom(void) {
  return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
}

int cmx__cgraph_add_value(cmx__cgraph* g, cmx__cv_kind kind, cmx_dtype dt,
                          int ndim, const int64_t* shape) {
  if (g->nvals == g->capvals) {
    int cap = g->capvals ? 2 * g->capvals : 32;
    cmx__cval* v = realloc(g->vals, (size_t)cap * sizeof *v);
    if (!v) return oom(), -1;
    g->vals = v;
    g->capvals = cap;
  }
  cmx__cval* v = &g->vals[g->nvals];
  memset(v, 0, sizeof *v);
  v->kind = kind;
  v->index = v->out = -1;
  v->dtype = dt;
  v->ndim = ndim;
  if (ndim) memcpy(v->shape, shape, (size_t)ndim * sizeof(int64_t));
  return g->nvals++;
}

int cmx__cgraph_add_op(cmx__cgraph* g, cmx_primitive* p, const int* in, int nin,
                       const int* out, int nout) {
  int* ids = malloc((size_t)(nin + nout + 1) * sizeof *ids);
  if (!ids || g->nops == g->capops) {
    int cap = g->capops ? 2 * g->capops : 32;
    cmx__cop* o = ids ? realloc(g->ops, (size_t)cap * sizeof *o) : NULL;
    if (!o) {
      free(ids);
      cmx_primitive_release(p);
      return oom(), -1;
    }
    g->ops = o;
    g->capops = cap;
  }
  if (nin) memcpy(ids, in, (size_t)nin * sizeof *ids);
  memcpy(ids + nin, out, (size_t)nout * sizeof *ids);
  cmx__cop* o = &g->ops[g->nops];
  o->prim = p;
  o->nin = nin;
  o->nout = nout;
  o->in = ids;
  o->out = ids + nin;
  for (int i = 0; i < nout; i++) {
    g->vals[out[i]].kind = CMX__CV_OP;
    g->vals[out[i]].index = g->nops;
    g->vals[out[i]].out = i;
  }
  return g->nops++;
}

void cmx__cgraph_free(cmx__cgraph* g) {
  if (!g) return;
  for (int i = 0; i < g->nops; i++) {
    cmx_primitive_release(g->ops[i].prim);
    free(g->ops[i].in);
  }
  for (int i = 0; i < g->nvals; i++)
    if (g->vals[i].kind == CMX__CV_CONST) cmx_array_release(g->vals[i].konst);
  free(g->vals);
  free(g->ops);
  free(g->inputs);
  free(g->outputs);
  memset(g, 0, sizeof *g);
}

/* ---------------- from a trace ---------------- */

typedef struct {
  cmx_array node;
  int next;
} frame;

typedef struct {
  cmx__cgraph* g;
  cmx__ptrmap nodes; /* node -> value id (inputs, constants) */
  cmx__ptrmap ops;   /* cmx__op -> op index */
} builder;

/* The value of a node already seen, or -1. */
static int value_of(builder* b, cmx_array n) {
  int64_t v = cmx__ptrmap_get(&b->nodes, n);
  if (v >= 0) return (int)v;
  if (!n->op) return -1;
  int64_t k = cmx__ptrmap_get(&b->ops, n->op);
  return k < 0 ? -1 : b->g->ops[k].out[n->out_index];
}

/* Adds node n as a constant. */
static int add_const(builder* b, cmx_array n) {
  int v =
      cmx__cgraph_add_value(b->g, CMX__CV_CONST, n->dtype, n->ndim, n->dims);
  if (v < 0) return -1;
  b->g->vals[v].konst = cmx_array_retain(n);
  if (!cmx__ptrmap_put(&b->nodes, n, v)) return -1;
  return v;
}

/* Adds the op of n, whose inputs all have values. */
static bool add_op(builder* b, cmx_array n) {
  cmx__op* op = n->op;
  int in[64], out[64];
  int* ins = op->nin <= 64 ? in : malloc((size_t)op->nin * sizeof *ins);
  int* outs = op->nout <= 64 ? out : malloc((size_t)op->nout * sizeof *outs);
  bool ok = ins && outs;
  if (!ok) oom();
  for (int i = 0; ok && i < op->nin; i++)
    ok = (ins[i] = value_of(b, op->inputs[i])) >= 0;
  for (int i = 0; ok && i < op->nout; i++) {
    const int64_t* shape;
    int nd;
    cmx_dtype dt;
    cmx__op_out_desc(op, i, &shape, &nd, &dt);
    ok =
        (outs[i] = cmx__cgraph_add_value(b->g, CMX__CV_OP, dt, nd, shape)) >= 0;
  }
  if (ok) {
    cmx_primitive_retain(op->prim);
    int k = cmx__cgraph_add_op(b->g, op->prim, ins, op->nin, outs, op->nout);
    ok = k >= 0 && cmx__ptrmap_put(&b->ops, op, k);
  }
  if (ins != in) free(ins);
  if (outs != out) free(outs);
  return ok;
}

static bool push(frame** stack, size_t* n, size_t* cap, cmx_array node) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 64;
    frame* s = realloc(*stack, c * sizeof *s);
    if (!s) return oom(), false;
    *stack = s;
    *cap = c;
  }
  (*stack)[(*n)++] = (frame){node, 0};
  return true;
}

/* Visits the graph below root in post-order, adding constants and ops. */
static bool walk(builder* b, cmx_array root, frame** stack, size_t* cap) {
  size_t n = 0;
  if (value_of(b, root) >= 0) return true;
  if (!root->op) return add_const(b, root) >= 0;
  if (!push(stack, &n, cap, root)) return false;
  while (n) {
    frame* top = &(*stack)[n - 1];
    cmx__op* op = top->node->op;
    if (top->next < op->nin) {
      cmx_array in = op->inputs[top->next++];
      if (value_of(b, in) >= 0) continue;
      if (!in->op) {
        if (add_const(b, in) < 0) return false;
        continue;
      }
      if (!push(stack, &n, cap, in)) return false;
    } else {
      cmx_array node = top->node;
      n--;
      if (value_of(b, node) < 0 && !add_op(b, node)) return false;
    }
  }
  return true;
}

cmx_status cmx__cgraph_from_trace(cmx__cgraph* g, const cmx_array* inputs,
                                  int nin, const cmx_array* outputs, int nout) {
  memset(g, 0, sizeof *g);
  builder b = {.g = g};
  frame* stack = NULL;
  size_t cap = 0;
  bool ok = true;
  g->nin = nin;
  g->nout = nout;
  g->inputs = malloc((size_t)(nin + 1) * sizeof(int));
  g->outputs = malloc((size_t)(nout + 1) * sizeof(int));
  if (!g->inputs || !g->outputs) ok = oom() == CMX_OK;
  for (int i = 0; ok && i < nin; i++) {
    cmx_array a = inputs[i];
    int v = cmx__cgraph_add_value(g, CMX__CV_INPUT, a->dtype, a->ndim, a->dims);
    ok = v >= 0 && cmx__ptrmap_put(&b.nodes, a, v);
    if (ok) {
      g->vals[v].index = i;
      g->inputs[i] = v;
    }
  }
  for (int i = 0; ok && i < nout; i++) {
    ok = walk(&b, outputs[i], &stack, &cap);
    if (ok) g->outputs[i] = value_of(&b, outputs[i]);
  }
  free(stack);
  cmx__ptrmap_free(&b.nodes);
  cmx__ptrmap_free(&b.ops);
  if (!ok) {
    cmx__cgraph_free(g);
    return cmx_last_status();
  }
  return CMX_OK;
}

/* ---------------- editing ---------------- */

void cmx__cgraph_replace_uses(cmx__cgraph* g, int from, int to) {
  for (int i = 0; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++)
      if (g->ops[i].in[k] == from) g->ops[i].in[k] = to;
  for (int i = 0; i < g->nout; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

void cmx__cgraph_count_uses(const cmx__cgraph* g, int* uses) {
  memset(uses, 0, (size_t)g->nvals * sizeof *uses);
  for (int i = 0; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++) uses[g->ops[i].in[k]]++;
  for (int i = 0; i < g->nout; i++) uses[g->outputs[i]]++;
}

cmx_status cmx__cgraph_compact(cmx__cgraph* g, const bool* dead_ops) {
  int* map = malloc((size_t)(g->nvals + 1) * sizeof *map);
  bool* live = calloc((size_t)g->nvals + 1, 1);
  if (!map || !live) {
    free(map);
    free(live);
    return oom();
  }
  /* Live values: inputs, outputs, and whatever a kept op touches. */
  for (int i = 0; i < g->nin; i++) live[g->inputs[i]] = true;
  for (int i = 0; i < g->nout; i++) live[g->outputs[i]] = true;
  int nops = 0;
  for (int i = 0; i < g->nops; i++) {
    cmx__cop* o = &g->ops[i];
    if (dead_ops && dead_ops[i]) {
      cmx_primitive_release(o->prim);
      free(o->in);
      continue;
    }
    for (int k = 0; k < o->nin; k++) live[o->in[k]] = true;
    for (int k = 0; k < o->nout; k++) live[o->out[k]] = true;
    g->ops[nops++] = *o;
  }
  g->nops = nops;
  int nvals = 0;
  for (int v = 0; v < g->nvals; v++) {
    if (!live[v]) {
      map[v] = -1;
      if (g->vals[v].kind == CMX__CV_CONST) cmx_array_release(g->vals[v].konst);
      continue;
    }
    map[v] = nvals;
    g->vals[nvals++] = g->vals[v];
  }
  g->nvals = nvals;
  for (int i = 0; i < g->nops; i++) {
    cmx__cop* o = &g->ops[i];
    for (int k = 0; k < o->nin; k++) o->in[k] = map[o->in[k]];
    for (int k = 0; k < o->nout; k++) {
      o->out[k] = map[o->out[k]];
      g->vals[o->out[k]].index = i;
    }
  }
  for (int i = 0; i < g->nin; i++) g->inputs[i] = map[g->inputs[i]];
  for (int i = 0; i < g->nout; i++) g->outputs[i] = map[g->outputs[i]];
  free(map);
  free(live);
  return CMX_OK;
}

/* ---------------- checks ---------------- */

void cmx__cgraph_verify(const cmx__cgraph* g, const char* pass) {
  (void)pass; /* named in the assert's message by the caller's file/line */
  /* Each value is defined once, before its uses. */
  bool* defined = calloc((size_t)g->nvals + 1, 1);
  CMX__ASSERT(defined != NULL);
  for (int v = 0; v < g->nvals; v++) {
    const cmx__cval* x = &g->vals[v];
    CMX__ASSERT(x->ndim >= 0 && x->ndim <= CMX_MAX_NDIM);
    if (x->kind == CMX__CV_CONST) {
      CMX__ASSERT(x->konst != NULL && x->konst->ndim == x->ndim);
      defined[v] = true;
    } else if (x->kind == CMX__CV_INPUT) {
      CMX__ASSERT(x->index >= 0 && x->index < g->nin &&
                  g->inputs[x->index] == v);
      defined[v] = true;
    } else {
      CMX__ASSERT(x->index >= 0 && x->index < g->nops);
      CMX__ASSERT(g->ops[x->index].out[x->out] == v);
    }
  }
  for (int i = 0; i < g->nops; i++) {
    const cmx__cop* o = &g->ops[i];
    CMX__ASSERT(o->prim != NULL && o->nout >= 1);
    for (int k = 0; k < o->nin; k++) {
      CMX__ASSERT(o->in[k] >= 0 && o->in[k] < g->nvals);
      CMX__ASSERT(defined[o->in[k]]);
    }
    for (int k = 0; k < o->nout; k++) {
      CMX__ASSERT(o->out[k] >= 0 && o->out[k] < g->nvals);
      CMX__ASSERT(!defined[o->out[k]]);
      defined[o->out[k]] = true;
    }
  }
  for (int i = 0; i < g->nout; i++)
    CMX__ASSERT(g->outputs[i] >= 0 && g->outputs[i] < g->nvals &&
                defined[g->outputs[i]]);
  free(defined);
}

/* ---------------- replay ---------------- */

cmx_status cmx__cgraph_replay(const cmx__cgraph* g, const cmx_array* inputs,
                              cmx_array* out) {
  cmx_array* arr = calloc((size_t)g->nvals + 1, sizeof *arr);
  /* shapeless: value -> the Broadcast op it waits on (shapes.c), -1 */
  int* bop = g->shapeless ? malloc((size_t)(g->nvals + 1) * sizeof *bop) : NULL;
  if (!arr || (g->shapeless && !bop)) {
    free(arr);
    free(bop);
    return oom();
  }
  for (int v = 0; bop && v < g->nvals; v++) bop[v] = -1;
  for (int i = 0; i < g->nin; i++) arr[g->inputs[i]] = inputs[i];
  for (int v = 0; v < g->nvals; v++)
    if (g->vals[v].kind == CMX__CV_CONST) arr[v] = g->vals[v].konst;
  cmx_status st = CMX_OK;
  cmx_array ins_small[16], outs_small[16];
  cmx_shape shapes_small[4];
  for (int i = 0; st == CMX_OK && i < g->nops; i++) {
    const cmx__cop* o = &g->ops[i];
    if (bop && cmx__shapeless_defers(o)) {
      bop[o->out[0]] = i;
      continue;
    }
    if (bop) st = cmx__shapeless_broadcasts(g, o, arr, bop, o->in, o->nin);
    if (st != CMX_OK) break;
    cmx_array* ins =
        o->nin <= 16 ? ins_small : malloc((size_t)o->nin * sizeof *ins);
    cmx_array* outs =
        o->nout <= 16 ? outs_small : malloc((size_t)o->nout * sizeof *outs);
    cmx_shape* derived = NULL;
    const int64_t* shp_small[16];
    int nd_small[16];
    cmx_dtype dt_small[16];
    bool big = o->nout > 16;
    const int64_t** shp =
        big ? malloc((size_t)o->nout * sizeof *shp) : shp_small;
    int* nd = big ? malloc((size_t)o->nout * sizeof *nd) : nd_small;
    cmx_dtype* dt = big ? malloc((size_t)o->nout * sizeof *dt) : dt_small;
    if (!ins || !outs || !shp || !nd || !dt) st = oom();
    for (int k = 0; st == CMX_OK && k < o->nin; k++) ins[k] = arr[o->in[k]];
    if (st == CMX_OK && g->shapeless) {
      derived = o->nout <= 4 ? shapes_small
                             : malloc((size_t)o->nout * sizeof *derived);
      st = derived ? cmx__derive_shapes(g, o, ins, derived) : oom();
    }
    for (int k = 0; st == CMX_OK && k < o->nout; k++) {
      const cmx__cval* v = &g->vals[o->out[k]];
      shp[k] = derived ? derived[k].dims : v->shape;
      nd[k] = derived ? derived[k].ndim : v->ndim;
      dt[k] = v->dtype;
    }
    if (st == CMX_OK && derived &&
        cmx_primitive_vt(o->prim) == &cmx__vt_Reshape &&
        (nd[0] != g->vals[o->out[0]].ndim ||
         memcmp(shp[0], g->vals[o->out[0]].shape,
                (size_t)nd[0] * sizeof(int64_t)))) {
      /* a new shape: a Reshape whose parameters say so */
      st = cmx_reshape(&outs[0], ins[0], shp[0], nd[0],
                       cmx_primitive_stream(o->prim));
    } else if (st == CMX_OK) {
      cmx_primitive_retain(o->prim);
      st = cmx_primitive_apply(outs, o->nout, o->prim, ins, o->nin,
                               (const int64_t* const*)shp, nd, dt);
    }
    for (int k = 0; st == CMX_OK && k < o->nout; k++) arr[o->out[k]] = outs[k];
    if (ins != ins_small) free(ins);
    if (outs != outs_small) free(outs);
    if (derived != shapes_small) free(derived);
    if (big) {
      free(shp);
      free(nd);
      free(dt);
    }
  }
  if (st == CMX_OK && bop)
    st = cmx__shapeless_broadcasts(g, NULL, arr, bop, g->outputs, g->nout);
  for (int i = 0; st == CMX_OK && i < g->nout; i++)
    out[i] = cmx_array_retain(arr[g->outputs[i]]);
  for (int v = 0; v < g->nvals; v++)
    if (g->vals[v].kind == CMX__CV_OP) cmx_array_release(arr[v]);
  free(arr);
  free(bop);
  return st;
}

bool cmx__pass_switched_off(const char* name) {
  const char* s = getenv(name);
  return s && !strcmp(s, "0");
}

bool cmx__pass_switched_on(const char* name) {
  const char* s = getenv(name);
  return s && !strcmp(s, "1");
}

bool cmx__pass_begin(const cmx__cgraph* g, bool** dead, int** uses) {
  *dead = calloc((size_t)g->nops + 1, 1);
  int* u = uses ? malloc((size_t)(g->nvals + 1) * sizeof *u) : NULL;
  if (!*dead || (uses && !u)) {
    free(*dead);
    free(u);
    *dead = NULL;
    return false;
  }
  if (uses) {
    cmx__cgraph_count_uses(g, u);
    *uses = u;
  }
  return true;
}

cmx_status cmx__pass_end(cmx__cgraph* g, bool* dead, int* uses, bool any) {
  free(uses);
  cmx_status st = any ? cmx__cgraph_compact(g, dead) : CMX_OK;
  free(dead);
  return st;
}

int cmx__cgraph_def_op(const cmx__cgraph* g, int v) {
  return g->vals[v].kind == CMX__CV_OP ? g->vals[v].index : -1;
}

void cmx__cgraph_set_op(cmx__cgraph* g, int at, cmx_primitive* p, int* ids,
                        int nin, int nout) {
  cmx__cop* o = &g->ops[at];
  cmx_primitive_release(o->prim);
  free(o->in); /* out points into the same array */
  o->prim = p;
  o->nin = nin;
  o->nout = nout;
  o->in = ids;
  o->out = ids + nin;
  for (int k = 0; k < nout; k++) {
    g->vals[o->out[k]].index = at;
    g->vals[o->out[k]].out = k;
  }
}

bool cmx__cgraph_read_between(const cmx__cgraph* g, int v, int lo, int hi) {
  for (int i = lo + 1; i < hi; i++)
    for (int k = 0; k < g->ops[i].nin; k++)
      if (g->ops[i].in[k] == v) return true;
  return false;
}
