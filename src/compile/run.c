/* A compiled call as one op: the trace's ops run back to back inside the
 * kernel of a single CompiledGraph op (see compile_internal.h, run.c's
 * part), instead of a lazy node per op that the eval then walks, schedules
 * and runs one task at a time.
 *
 * What that saves per call (the host cost that bounds a small compiled
 * step, issue 13): a node, an op, a task and their references per op of
 * the trace; the eval's walk of the whole graph; the kernel lookups. What
 * it keeps: every op runs its own kernel on arrays the kernel allocates
 * (or donates), so results, donation and errors are those of the op-by-op
 * replay. Intermediates are nodes that only this kernel ever sees: each
 * is released after its last reader ran, and an input (of the call, or an
 * intermediate) is donatable to an op only at its last read, as in the
 * eval's tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "core/backend.h"

enum { V_BORROWED = 0, V_OUTPUT = 1, V_OWNED = 2 };

static cmx_status oom(void) {
  return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
}

/* CMX_COMPILE_OP_BY_OP=1 turns the one-op run off for the traces made
 * while it is set (read at each trace: comparisons in one process). */
static bool op_by_op(void) {
  const char* s = getenv("CMX_COMPILE_OP_BY_OP");
  return s && *s && strcmp(s, "0") != 0;
}

void cmx__cplan_free(cmx__cplan* p) {
  free(p->kern);
  free(p->last);
  free(p->kind);
  free(p->oval);
  free(p->outpos);
  free(p->consts);
  memset(p, 0, sizeof *p);
}

cmx_status cmx__cplan_make(cmx__cplan* p, const cmx__cgraph* g) {
  memset(p, 0, sizeof *p);
  if (g->shapeless || g->nops == 0 || op_by_op()) return CMX_OK;
  int stream = g->ops[0].prim->stream.index;
  for (int i = 1; i < g->nops; i++)
    if (g->ops[i].prim->stream.index != stream) return CMX_OK;
  p->stream = cmx_primitive_stream(g->ops[0].prim);
  size_t nv = (size_t)g->nvals + 1;
  p->kern = malloc(((size_t)g->nops + 1) * sizeof *p->kern);
  p->last = malloc(nv * sizeof *p->last);
  p->kind = malloc(nv);
  p->oval = malloc(((size_t)g->nout + 1) * sizeof *p->oval);
  p->outpos = malloc(((size_t)g->nout + 1) * sizeof *p->outpos);
  p->consts = malloc(nv * sizeof *p->consts);
  if (!p->kern || !p->last || !p->kind || !p->oval || !p->outpos ||
      !p->consts) {
    cmx__cplan_free(p);
    return oom();
  }
  for (int i = 0; i < g->nops; i++) {
    p->kern[i] = cmx__kernel_lookup(
        g->ops[i].prim->vt,
        p->stream.device.type == CMX_GPU ? CMX_GPU : CMX_CPU);
    if (!p->kern[i]) { /* the op-by-op replay reports it */
      cmx__cplan_free(p);
      return CMX_OK;
    }
  }
  for (int v = 0; v < g->nvals; v++) {
    p->last[v] = -1;
    p->kind[v] = g->vals[v].kind == CMX__CV_OP ? V_OWNED : V_BORROWED;
    if (g->vals[v].kind == CMX__CV_CONST) p->consts[p->nconst++] = v;
  }
  for (int i = 0; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++) p->last[g->ops[i].in[k]] = i;
  /* The op's outputs: each computed graph output once, in order. */
  for (int i = 0; i < g->nout; i++) {
    int v = g->outputs[i];
    p->outpos[i] = -1;
    if (g->vals[v].kind != CMX__CV_OP) continue;
    for (int j = 0; j < p->noval && p->outpos[i] < 0; j++)
      if (p->oval[j] == v) p->outpos[i] = j;
    if (p->outpos[i] < 0) {
      p->outpos[i] = p->noval;
      p->oval[p->noval++] = v;
      p->kind[v] = V_OUTPUT;
    }
  }
  p->ok = p->noval > 0; /* else nothing to compute: inputs returned */
  return CMX_OK;
}

/* ---------------- the op ---------------- */

typedef struct {
  const cmx__cgraph* g;
  const cmx__cplan* plan;
  void* owner;
  void (*release)(void*);
} run_params;

static void run_destroy(void* params) {
  run_params* r = params;
  if (r->release) r->release(r->owner);
}

/* Runs op i of the graph on arr (values so far); creates its owned outputs
 * and drops the values read for the last time. */
static cmx_status run_op(const cmx__cgraph* g, const cmx__cplan* p, int i,
                         cmx_array* arr) {
  const cmx__cop* o = &g->ops[i];
  cmx_array ins_small[16], outs_small[8], held_small[16];
  bool big = o->nin > 16 || o->nout > 8;
  cmx_array* ins = big ? calloc((size_t)o->nin + 1, sizeof *ins) : ins_small;
  cmx_array* held = big ? calloc((size_t)o->nin + 1, sizeof *held) : held_small;
  cmx_array* outs =
      big ? calloc((size_t)o->nout + 1, sizeof *outs) : outs_small;
  cmx_status st = ins && held && outs ? CMX_OK : oom();
  for (int k = 0; st == CMX_OK && k < o->nout; k++) {
    int v = o->out[k];
    if (p->kind[v] == V_OWNED) {
      const cmx__cval* x = &g->vals[v];
      arr[v] = cmx__node_new(o->prim->vt->name, x->shape, x->ndim, x->dtype);
      if (!arr[v]) {
        st = cmx_last_status();
        break;
      }
      arr[v]->stream = p->stream.index;
    }
    outs[k] = arr[v];
  }
  /* An input read again later (or twice here) is held for the kernel, so
   * that it is not donated: the eval's tasks hold theirs the same way. */
  int nheld = 0;
  for (int k = 0; st == CMX_OK && k < o->nin; k++) {
    int v = o->in[k];
    ins[k] = arr[v];
    bool again = p->last[v] > i;
    for (int j = k + 1; j < o->nin && !again; j++) again = o->in[j] == v;
    if (again || p->kind[v] == V_OUTPUT)
      held[nheld++] = cmx_array_retain(arr[v]);
  }
  if (st == CMX_OK) st = p->kern[i](o->prim, ins, o->nin, outs, o->nout);
  for (int k = 0; st == CMX_OK && k < o->nout; k++)
    if (!outs[k]->buf && outs[k]->size > 0)
      st = cmx__error(CMX_ERR_RUNTIME, "[%s] kernel left output %d empty",
                      o->prim->vt->name, k);
  for (int k = 0; k < nheld; k++) cmx_array_release(held[k]);
  /* Values read for the last time, and outputs nobody reads, go. */
  for (int k = 0; ins && k < o->nin; k++) {
    int v = o->in[k];
    if (p->kind[v] == V_OWNED && p->last[v] == i && arr[v]) {
      cmx_array_release(arr[v]);
      arr[v] = NULL;
    }
  }
  for (int k = 0; outs && k < o->nout; k++) {
    int v = o->out[k];
    if (p->kind[v] == V_OWNED && p->last[v] < 0 && arr[v]) {
      cmx_array_release(arr[v]);
      arr[v] = NULL;
    }
  }
  if (big) {
    free(ins);
    free(held);
    free(outs);
  }
  return st;
}

static cmx_status run_kernel(const cmx_primitive* prim, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  const run_params* r = cmx_primitive_params(prim);
  const cmx__cgraph* g = r->g;
  const cmx__cplan* p = r->plan;
  CMX__ASSERT(nin == g->nin + p->nconst && nout == p->noval);
  cmx_array arr_small[64];
  cmx_array* arr =
      g->nvals <= 64 ? arr_small : malloc((size_t)g->nvals * sizeof *arr);
  if (!arr) return oom();
  memset(arr, 0, (size_t)g->nvals * sizeof *arr);
  for (int i = 0; i < g->nin; i++) arr[g->inputs[i]] = in[i];
  for (int i = 0; i < p->nconst; i++) arr[p->consts[i]] = in[g->nin + i];
  for (int i = 0; i < p->noval; i++) arr[p->oval[i]] = out[i];
  cmx_status st = CMX_OK;
  for (int i = 0; st == CMX_OK && i < g->nops; i++) st = run_op(g, p, i, arr);
  for (int v = 0; v < g->nvals; v++) /* left by a failure */
    if (p->kind[v] == V_OWNED && arr[v]) cmx_array_release(arr[v]);
  if (arr != arr_small) free(arr);
  return st;
}

static const cmx_primitive_vtable k_run_vt = {.name = "CompiledGraph",
                                              .id = -1,
                                              .eval_cpu = run_kernel,
                                              .eval_gpu = run_kernel,
                                              .destroy = run_destroy};

const cmx__cgraph* cmx__cplan_graph_of(const cmx_primitive* p) {
  if (!p || cmx_primitive_vt(p) != &k_run_vt) return NULL;
  return ((const run_params*)cmx_primitive_params(p))->g;
}

bool cmx__cplan_fits(const cmx__cgraph* g, const cmx__cplan* p,
                     const cmx_array* inputs) {
  if (!p->ok || cmx_compile_tracing()) return false;
  /* Outside transforms a tracer flag is stale (arrays computed from a
   * finished grad's results keep it): only a running one needs the ops. */
  if (!atomic_load_explicit(&cmx__tracing, memory_order_relaxed)) return true;
  for (int i = 0; i < g->nin; i++)
    if (inputs[i]->tracer) return false;
  for (int i = 0; i < p->nconst; i++)
    if (g->vals[p->consts[i]].konst->tracer) return false;
  return true;
}

cmx_status cmx__cplan_apply(const cmx__cgraph* g, const cmx__cplan* p,
                            const cmx_array* inputs, cmx_array* out,
                            void* owner, void (*release)(void*)) {
  run_params r = {g, p, owner, release};
  cmx_primitive* prim = cmx_primitive_new(&k_run_vt, &r, sizeof r, p->stream);
  if (!prim) {
    release(owner);
    return cmx_last_status();
  }
  int nin = g->nin + p->nconst, n = p->noval;
  cmx_array ins_small[32], outs_small[32];
  const int64_t* shp_small[32];
  int nd_small[32];
  cmx_dtype dt_small[32];
  bool big = nin > 32 || n > 32;
  cmx_array* ins = big ? malloc((size_t)(nin + 1) * sizeof *ins) : ins_small;
  cmx_array* outs = big ? malloc((size_t)(n + 1) * sizeof *outs) : outs_small;
  const int64_t** shp = big ? malloc((size_t)(n + 1) * sizeof *shp) : shp_small;
  int* nd = big ? malloc((size_t)(n + 1) * sizeof *nd) : nd_small;
  cmx_dtype* dt = big ? malloc((size_t)(n + 1) * sizeof *dt) : dt_small;
  cmx_status st = ins && outs && shp && nd && dt ? CMX_OK : oom();
  if (st == CMX_OK) {
    for (int i = 0; i < g->nin; i++) ins[i] = inputs[i];
    for (int i = 0; i < p->nconst; i++)
      ins[g->nin + i] = g->vals[p->consts[i]].konst;
    for (int i = 0; i < n; i++) {
      const cmx__cval* v = &g->vals[p->oval[i]];
      shp[i] = v->shape;
      nd[i] = v->ndim;
      dt[i] = v->dtype;
    }
    st = cmx_primitive_apply(outs, n, prim, ins, nin,
                             (const int64_t* const*)shp, nd, dt);
  } else {
    cmx_primitive_release(prim);
  }
  for (int i = 0; st == CMX_OK && i < g->nout; i++) {
    /* outpos -1: an input or a constant, returned as is */
    const cmx__cval* v = &g->vals[g->outputs[i]];
    int k = p->outpos[i];
    out[i] = cmx_array_retain(k >= 0                     ? outs[k]
                              : v->kind == CMX__CV_CONST ? v->konst
                                                         : inputs[v->index]);
  }
  for (int i = 0; st == CMX_OK && i < n; i++) cmx_array_release(outs[i]);
  if (big) {
    free(ins);
    free(outs);
    free(shp);
    free(nd);
    free(dt);
  }
  return st;
}
