/* The fuse pass: maximal elementwise regions become Compiled primitives.
 *
 * Candidates are op-table primitives, AsType, Copy and Broadcast on a
 * device with a code generator, one output each. Regions grow from their
 * last op (seeds are taken in reverse order) towards the inputs: a producer
 * joins when it is a candidate on the same stream with the region's output
 * shape, and when none of its consumers outside the region leads back into
 * it (the region stays convex, so replacing it by one op keeps the graph
 * acyclic). "Leads back" is reachability in the graph as fused so far: a
 * region already replaced is one op, reading all its members' inputs and
 * writing all their outputs, so reaching one member reaches the consumers
 * of every member (see leaks). The walks stop past the seed in a
 * dependency order of that graph, kept as regions fuse (see reorder). A
 * joined op used outside the region becomes an extra output; a Broadcast
 * used outside does not join (a view stays a view).
 * Regions of fewer than two computing ops are left alone. 0-d constants
 * are baked into the kernel. A region whose kernel cannot be built (the
 * compiler failed) stays unfused, so compile never fails for want of a
 * kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/compiled.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

extern _Atomic uint64_t cmx__fused_made;

#define MAX_ARGS 64 /* array inputs of one kernel */

static cmx_status oom(void) {
  return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
}

typedef struct {
  cmx__cgraph* g;
  int* region;   /* op -> region id, -1 none, -2 tried or a Compiled op */
  int* cons;     /* consumers, CSR by value */
  int* cons_off; /* nvals + 1 */
  bool* is_out;  /* value -> graph output */
  bool* inset;   /* value -> an input of the region being grown */
  int* stamp;    /* op -> last visit stamp (convexity walks) */
  int stamp_now;
  int* stack;
  /* The regions replaced by a Compiled op, by region id: their members
   * (a list through next, from first) and the stamp of the last walk
   * that entered them. */
  int* first;
  int* next;
  int* rstamp;
  /* A dependency order of the graph as fused so far, over the original
   * ops: op -> place and place -> op; a fused region's members hold
   * adjacent places (its Compiled op's). */
  int* pos;
  int* at;
  int* scratch; /* n ints (reorder) */
} fuser;

static int prim_id(const cmx_primitive* p) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  return cmx_builtin_primitive(vt->id) == vt ? vt->id : -1;
}

/* The step an op would be (operands unset), or false if not a candidate. */
static bool as_step(const fuser* f, const cmx__cop* o, cmx__fused_step* st) {
  if (o->nout != 1 || o->nin < 1 || o->nin > 3) return false;
  int id = prim_id(o->prim);
  if (id < 0) return false;
  bool table = cmx__ew_op_get(id) != NULL;
  if (!table && id != CMX__P_AsType && id != CMX__P_Copy &&
      id != CMX__P_Broadcast)
    return false;
  const cmx__cgraph* g = f->g;
  memset(st, 0, sizeof *st);
  st->prim = o->prim;
  st->id = id;
  st->nin = o->nin;
  st->dtype = g->vals[o->out[0]].dtype;
  st->in_dtype = g->vals[o->in[o->nin - 1]].dtype;
  const cmx__fused_codegen* cg =
      cmx__fused_codegen_for(cmx_primitive_stream(o->prim).device.type);
  return cg && cg->supports(st);
}

static bool same_shape(const cmx__cval* a, const cmx__cval* b) {
  return a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t));
}

/* A value that region rid reads from outside (its producer is not a
 * member). */
static bool outside(const fuser* f, int v, int rid) {
  const cmx__cval* x = &f->g->vals[v];
  return x->kind != CMX__CV_OP || f->region[x->index] != rid;
}

/* The region's input count after op m joins it (m's output stops being
 * an input; m's outside inputs become ones). */
static int inputs_after(const fuser* f, int m, int rid, int nset) {
  const cmx__cop* o = &f->g->ops[m];
  int n = nset - (f->inset[o->out[0]] ? 1 : 0);
  for (int k = 0; k < o->nin; k++) {
    bool dup = false;
    for (int j = 0; j < k; j++) dup = dup || o->in[j] == o->in[k];
    n += !dup && !f->inset[o->in[k]] && outside(f, o->in[k], rid);
  }
  return n;
}

/* Updates the region's input set for m having joined (region[m] set). */
static int add_inputs(fuser* f, int m, int rid, int nset) {
  const cmx__cop* o = &f->g->ops[m];
  if (f->inset[o->out[0]]) {
    f->inset[o->out[0]] = false;
    nset--;
  }
  for (int k = 0; k < o->nin; k++)
    if (!f->inset[o->in[k]] && outside(f, o->in[k], rid)) {
      f->inset[o->in[k]] = true;
      nset++;
    }
  return nset;
}

/* Marks op c visited by the current walk and pushes it, once. */
static void visit(fuser* f, int* n, int c) {
  if (f->stamp[c] == f->stamp_now) return;
  f->stamp[c] = f->stamp_now;
  f->stack[(*n)++] = c;
}

/* One step of a walk over the graph as fused so far from op c: a member
 * of a fused region (other ops are -1 or -2) stands for its Compiled op,
 * so the first member reached pushes all the region's members; then the
 * consumers of c's outputs. */
static void expand(fuser* f, int* n, int c) {
  const cmx__cgraph* g = f->g;
  int r = f->region[c];
  if (r >= 0 && f->rstamp[r] != f->stamp_now) {
    f->rstamp[r] = f->stamp_now;
    for (int k = f->first[r]; k >= 0; k = f->next[k]) visit(f, n, k);
  }
  for (int j = 0; j < g->ops[c].nout; j++) {
    int w = g->ops[c].out[j];
    for (int k = f->cons_off[w]; k < f->cons_off[w + 1]; k++)
      visit(f, n, f->cons[k]);
  }
}

/* Whether some consumer of op m outside region rid leads back into it,
 * in the graph as fused so far. A member of a fused region stands for the
 * Compiled op that replaced it: reaching it reaches every member, whose
 * consumers the walk then follows (the op-level edges alone miss paths
 * through that op, such as from a member's input to another member's
 * output; fusing a region that such a path leaves and reenters would
 * close a cycle: its Compiled op would read a value computed from its own
 * outputs). Ops placed after `cut` (the seed's place: every member is
 * before it) are not followed: they reach only later places. */
static bool leaks(fuser* f, int m, int rid, int cut) {
  const cmx__cgraph* g = f->g;
  int v = g->ops[m].out[0];
  int n = 0;
  f->stamp_now++;
  for (int k = f->cons_off[v]; k < f->cons_off[v + 1]; k++)
    if (f->region[f->cons[k]] != rid) visit(f, &n, f->cons[k]);
  while (n) {
    int c = f->stack[--n];
    if (f->region[c] == rid) return true;
    /* (no fused region's places straddle cut: the seed's is not theirs) */
    if (f->pos[c] <= cut) expand(f, &n, c);
  }
  return false;
}

/* Keeps f->pos a dependency order once region rid (members mem) is one
 * op. Between its first and last member's places (lo, hi), the ops the
 * region reaches (in the fused graph) move after it, keeping their
 * order, the others before it, and the members in between: an op before
 * the region cannot read one after it (it would be reached), and no op
 * reached can reach a member (the region is convex). No fused region's
 * places straddle lo or hi (they are this region's members), and one
 * inside moves whole (reaching a member reaches all), so fused regions
 * keep adjacent places. O(hi - lo) and the walk. */
static void reorder(fuser* f, const int* mem, int nm, int rid) {
  const cmx__cgraph* g = f->g;
  int lo = f->pos[mem[0]], hi = lo;
  for (int k = 1; k < nm; k++) {
    if (f->pos[mem[k]] < lo) lo = f->pos[mem[k]];
    if (f->pos[mem[k]] > hi) hi = f->pos[mem[k]];
  }
  /* the ops reached: stamped by this walk, members excepted */
  int n = 0;
  f->stamp_now++;
  for (int i = 0; i < nm; i++) f->stamp[mem[i]] = f->stamp_now;
  f->rstamp[rid] = f->stamp_now;
  for (int i = 0; i < nm; i++) {
    int v = g->ops[mem[i]].out[0];
    for (int k = f->cons_off[v]; k < f->cons_off[v + 1]; k++)
      visit(f, &n, f->cons[k]);
  }
  while (n) {
    int c = f->stack[--n];
    if (f->pos[c] <= hi) expand(f, &n, c);
  }
  int k = 0;
  for (int p = lo; p <= hi; p++) /* neither reached nor a member */
    if (f->stamp[f->at[p]] != f->stamp_now) f->scratch[k++] = f->at[p];
  for (int p = lo; p <= hi; p++) /* the members */
    if (f->region[f->at[p]] == rid) f->scratch[k++] = f->at[p];
  for (int p = lo; p <= hi; p++) /* reached */
    if (f->stamp[f->at[p]] == f->stamp_now && f->region[f->at[p]] != rid)
      f->scratch[k++] = f->at[p];
  for (int i = 0; i < k; i++) {
    f->at[lo + i] = f->scratch[i];
    f->pos[f->scratch[i]] = lo + i;
  }
}

/* Whether op m is a Broadcast read outside region rid (a graph output or
 * a consumer not in it). Such a Broadcast stays out of the region: a
 * region output is a full array the kernel writes, where the Broadcast
 * alone is a view of its input, and the region reads the view just as
 * well (a stride-0 argument). */
static bool broadcast_shared(const fuser* f, int m, int rid) {
  if (prim_id(f->g->ops[m].prim) != CMX__P_Broadcast) return false;
  int v = f->g->ops[m].out[0];
  if (f->is_out[v]) return true;
  for (int k = f->cons_off[v]; k < f->cons_off[v + 1]; k++)
    if (f->region[f->cons[k]] != rid) return true;
  return false;
}

/* A 0-d constant the kernel can hold as a literal. */
static bool bakeable(const cmx__cval* v) {
  if (v->kind != CMX__CV_CONST || v->ndim != 0) return false;
  cmx_array a = v->konst;
  return a->buf && !a->error && cmx_array_is_available(a) && a->buf->host_valid;
}

/* Builds the program of region rid (members sorted). NULL with the error
 * set when out of memory; *args gets the primitive's input values. */
static cmx__fused_program* build_program(fuser* f, const int* mem, int nm,
                                         int rid, int* args, int* nargs) {
  cmx__cgraph* g = f->g;
  cmx__fused_program* prog = calloc(1, sizeof *prog);
  int* inval = malloc((size_t)(3 * nm + 1) * sizeof *inval);
  if (prog) {
    prog->in = calloc((size_t)(3 * nm + 1), sizeof *prog->in);
    prog->steps = calloc((size_t)nm, sizeof *prog->steps);
    prog->out = malloc((size_t)nm * sizeof *prog->out);
  }
  if (!prog || !inval || !prog->in || !prog->steps || !prog->out) {
    if (prog) {
      free(prog->in);
      free(prog->steps);
      free(prog->out);
    }
    free(prog);
    free(inval);
    return oom(), NULL;
  }
  atomic_init(&prog->refcount, 1);
  const cmx__cval* outv = &g->vals[g->ops[mem[nm - 1]].out[0]];
  prog->ndim = outv->ndim;
  memcpy(prog->shape, outv->shape, (size_t)outv->ndim * sizeof(int64_t));
  *nargs = 0;
  for (int s = 0; s < nm; s++) {
    const cmx__cop* o = &g->ops[mem[s]];
    cmx__fused_step* st = &prog->steps[s];
    as_step(f, o, st);
    cmx_primitive_retain(st->prim);
    prog->nsteps = s + 1;
    for (int k = 0; k < o->nin; k++) {
      int v = o->in[k];
      const cmx__cval* val = &g->vals[v];
      if (val->kind == CMX__CV_OP && f->region[val->index] == rid) {
        int ps = 0;
        while (mem[ps] != val->index) ps++;
        st->in[k] = CMX__FUSED_STEP(ps);
        continue;
      }
      int i = 0;
      while (i < prog->nin && inval[i] != v) i++;
      if (i == prog->nin) {
        cmx__fused_input* in = &prog->in[i];
        inval[i] = v;
        in->dtype = val->dtype;
        in->ndim = val->ndim;
        memcpy(in->shape, val->shape, (size_t)val->ndim * sizeof(int64_t));
        if (bakeable(val)) {
          in->konst = cmx_array_retain(val->konst);
          in->arg = -1;
        } else {
          in->arg = *nargs;
          args[(*nargs)++] = v;
        }
        prog->nin++;
      }
      st->in[k] = i;
    }
    int v = o->out[0];
    bool used_outside = f->is_out[v];
    for (int k = f->cons_off[v]; k < f->cons_off[v + 1] && !used_outside; k++)
      used_outside = f->region[f->cons[k]] != rid;
    if (used_outside) prog->out[prog->nout++] = s;
  }
  prog->nargs = *nargs;
  /* The outputs' shape is the inputs' broadcast shape? */
  int nd = 0;
  int64_t dims[CMX_MAX_NDIM];
  for (int i = 0; i < prog->nin; i++) {
    const cmx__fused_input* in = &prog->in[i];
    int n = in->ndim > nd ? in->ndim : nd;
    int64_t r[CMX_MAX_NDIM];
    for (int d = 0; d < n; d++) {
      int64_t a = d < n - nd ? 1 : dims[d - (n - nd)];
      int64_t b = d < n - in->ndim ? 1 : in->shape[d - (n - in->ndim)];
      r[d] = a == 1 ? b : a;
    }
    memcpy(dims, r, (size_t)n * sizeof *r);
    nd = n;
  }
  prog->shapeless_ok =
      nd == prog->ndim && !memcmp(dims, prog->shape, (size_t)nd * 8);
  free(inval);
  if (!cmx__fused_program_finish(prog)) {
    cmx__fused_program_release(prog);
    return NULL;
  }
  return prog;
}

/* Replaces region rid (members mem, sorted) by a Compiled op, or leaves it
 * when its kernel cannot be built. */
static cmx_status replace(fuser* f, const int* mem, int nm, int rid,
                          bool* dead) {
  cmx__cgraph* g = f->g;
  int args[3 * MAX_ARGS + 3];
  int nargs;
  cmx__fused_program* prog = build_program(f, mem, nm, rid, args, &nargs);
  if (!prog) return cmx_last_status();
  cmx_stream s = cmx_primitive_stream(g->ops[mem[0]].prim);
  const cmx__fused_codegen* cg = cmx__fused_codegen_for(s.device.type);
  cmx__error_mark mark = cmx__error_mark_get();
  cmx_status st = cg->prepare(prog);
  if (st != CMX_OK) {
    if (cmx__env_get()->compile_explain)
      fprintf(stderr, "[compile] left %s unfused: %s\n", prog->label,
              cmx_last_error());
    cmx__error_mark_restore(mark);
    cmx__fused_program_release(prog);
    return CMX_OK;
  }
  cmx__compiled_params q = {prog};
  cmx_primitive* p = cmx_primitive_new(&cmx__vt_Compiled, &q, sizeof q, s);
  if (!p) {
    cmx__fused_program_release(prog);
    return cmx_last_status();
  }
  int* outs = malloc((size_t)prog->nout * sizeof *outs);
  if (!outs) {
    cmx_primitive_release(p);
    return oom();
  }
  for (int k = 0; k < prog->nout; k++)
    outs[k] = g->ops[mem[prog->out[k]]].out[0];
  for (int k = 0; k < nm; k++) dead[mem[k]] = true;
  int added = cmx__cgraph_add_op(g, p, args, nargs, outs, prog->nout);
  free(outs);
  if (added < 0) return cmx_last_status();
  f->region[added] = -2; /* later regions read its outputs from outside */
  atomic_fetch_add(&cmx__fused_made, 1);
  return CMX_OK;
}

/* Grows region rid from seed towards the inputs (see the file's comment),
 * the convexity checked by leaks; writes the members to mem
 * (work: scratch, 4 n + 4 ints). Returns their count. */
static int grow(fuser* f, int seed, int rid, int* mem, int* work) {
  const cmx__cgraph* g = f->g;
  cmx__fused_step tmp;
  const cmx__cval* shape = &g->vals[g->ops[seed].out[0]];
  int sidx = cmx_primitive_stream(g->ops[seed].prim).index;
  int nm = 0, nw = 0, nset = 0;
  f->region[seed] = rid;
  mem[nm++] = seed;
  nset = add_inputs(f, seed, rid, nset);
  for (int k = 0; k < g->ops[seed].nin; k++) work[nw++] = g->ops[seed].in[k];
  while (nw) {
    const cmx__cval* v = &g->vals[work[--nw]];
    if (v->kind != CMX__CV_OP) continue;
    int m = v->index;
    if (f->region[m] >= 0 || !as_step(f, &g->ops[m], &tmp) ||
        cmx_primitive_stream(g->ops[m].prim).index != sidx ||
        !same_shape(&g->vals[g->ops[m].out[0]], shape) ||
        broadcast_shared(f, m, rid) ||
        inputs_after(f, m, rid, nset) > MAX_ARGS ||
        leaks(f, m, rid, f->pos[seed]))
      continue;
    f->region[m] = rid;
    mem[nm++] = m;
    nset = add_inputs(f, m, rid, nset);
    for (int k = 0; k < g->ops[m].nin; k++) work[nw++] = g->ops[m].in[k];
  }
  for (int k = 0; k < nm; k++) { /* clear the input marks */
    const cmx__cop* o = &g->ops[mem[k]];
    f->inset[o->out[0]] = false;
    for (int j = 0; j < o->nin; j++) f->inset[o->in[j]] = false;
  }
  return nm;
}

/* The computing ops (not Broadcast or Copy) among mem. */
static int computing(const fuser* f, const int* mem, int nm) {
  int n = 0;
  for (int k = 0; k < nm; k++) {
    int id = prim_id(f->g->ops[mem[k]].prim);
    n += id != CMX__P_Broadcast && id != CMX__P_Copy;
  }
  return n;
}

/* Puts ops in dependency order again (Compiled ops were appended).
 * Fails (CMX_ERR_RUNTIME) on a cycle, which only a fuse bug makes. */
static cmx_status toposort(cmx__cgraph* g) {
  int n = g->nops;
  int* order = malloc((size_t)(n + 1) * sizeof *order);
  int* state = calloc((size_t)n + 1, sizeof *state); /* 0 new 1 open 2 done */
  int* stack = malloc((size_t)(n + 1) * 2 * sizeof *stack);
  if (!order || !state || !stack) {
    free(order);
    free(state);
    free(stack);
    return oom();
  }
  int no = 0;
  for (int r = 0; r < n; r++) {
    if (state[r]) continue;
    int sp = 0;
    stack[sp++] = r;
    stack[sp++] = 0;
    state[r] = 1;
    while (sp) {
      int op = stack[sp - 2], k = stack[sp - 1];
      if (k < g->ops[op].nin) {
        stack[sp - 1]++;
        const cmx__cval* v = &g->vals[g->ops[op].in[k]];
        if (v->kind == CMX__CV_OP && state[v->index] == 1) {
          /* an op reading its own output: a region that was not convex.
           * An error, not a graph that runs on values never computed. */
          free(order);
          free(state);
          free(stack);
          return cmx__error(CMX_ERR_RUNTIME,
                            "[compile] internal error: the fuse pass made a "
                            "cycle (please report it); "
                            "disabling compile avoids it");
        }
        if (v->kind == CMX__CV_OP && !state[v->index]) {
          state[v->index] = 1;
          stack[sp++] = v->index;
          stack[sp++] = 0;
        }
      } else {
        state[op] = 2;
        order[no++] = op;
        sp -= 2;
      }
    }
  }
  cmx__cop* ops = malloc((size_t)(n + 1) * sizeof *ops);
  if (!ops) {
    free(order);
    free(state);
    free(stack);
    return oom();
  }
  for (int i = 0; i < n; i++) ops[i] = g->ops[order[i]];
  memcpy(g->ops, ops, (size_t)n * sizeof *ops);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->ops[i].nout; k++)
      g->vals[g->ops[i].out[k]].index = i;
  free(ops);
  free(order);
  free(state);
  free(stack);
  return CMX_OK;
}

cmx_status cmx__pass_fuse(cmx__cgraph* g) {
  if (g->nops < 2) return CMX_OK;
  fuser f = {.g = g};
  int n = g->nops;
  /* Compiled ops are appended (at most one per two ops fused): region
   * and dead cover them */
  f.region = malloc((size_t)(2 * n + 1) * sizeof *f.region);
  f.cons_off = calloc((size_t)g->nvals + 2, sizeof *f.cons_off);
  f.is_out = calloc((size_t)g->nvals + 1, 1);
  f.inset = calloc((size_t)g->nvals + 1, 1);
  f.stamp = calloc((size_t)n, sizeof *f.stamp);
  f.stack = malloc((size_t)(n + 1) * sizeof *f.stack);
  f.first = malloc((size_t)(n + 1) * sizeof *f.first);
  f.next = malloc((size_t)(n + 1) * sizeof *f.next);
  f.rstamp = calloc((size_t)n + 1, sizeof *f.rstamp);
  f.pos = malloc((size_t)(n + 1) * sizeof *f.pos);
  f.at = malloc((size_t)(n + 1) * sizeof *f.at);
  f.scratch = malloc((size_t)(n + 1) * sizeof *f.scratch);
  bool* dead = calloc((size_t)(2 * n + 1), 1);
  int* mem = malloc((size_t)(n + 1) * sizeof *mem);
  int* work = malloc((size_t)(4 * n + 4) * sizeof *work);
  cmx_status st = CMX_OK;
  if (!f.region || !f.cons_off || !f.is_out || !f.inset || !f.stamp ||
      !f.stack || !f.first || !f.next || !f.rstamp || !f.pos || !f.at ||
      !f.scratch || !dead || !mem || !work)
    st = oom();
  if (st == CMX_OK) {
    for (int i = 0; i < 2 * n + 1; i++) f.region[i] = -1;
    for (int i = 0; i < n; i++) f.pos[i] = f.at[i] = i;
    for (int i = 0; i < n; i++) {
      for (int k = 0; k < g->ops[i].nin; k++) f.cons_off[g->ops[i].in[k] + 1]++;
    }
    for (int v = 0; v < g->nvals; v++) f.cons_off[v + 1] += f.cons_off[v];
    f.cons = malloc((size_t)(f.cons_off[g->nvals] + 1) * sizeof *f.cons);
    if (!f.cons) st = oom();
  }
  if (st == CMX_OK) {
    int* fill = calloc((size_t)g->nvals + 1, sizeof *fill);
    if (!fill) st = oom();
    for (int i = 0; fill && i < n; i++)
      for (int k = 0; k < g->ops[i].nin; k++) {
        int v = g->ops[i].in[k];
        f.cons[f.cons_off[v] + fill[v]++] = i;
      }
    free(fill);
    for (int i = 0; i < g->nout; i++) f.is_out[g->outputs[i]] = true;
  }
  int rid = 0;
  for (int seed = n - 1; st == CMX_OK && seed >= 0; seed--) {
    cmx__fused_step tmp;
    if (f.region[seed] >= 0 || !as_step(&f, &g->ops[seed], &tmp)) continue;
    int nm = grow(&f, seed, rid, mem, work);
    int compute = computing(&f, mem, nm);
    /* Members in graph order. */
    for (int a = 1; a < nm; a++)
      for (int b = a; b > 0 && mem[b] < mem[b - 1]; b--) {
        int t = mem[b];
        mem[b] = mem[b - 1];
        mem[b - 1] = t;
      }
    if (compute >= 2) st = replace(&f, mem, nm, rid, dead);
    bool fused = st == CMX_OK && dead[seed];
    if (!fused) {
      for (int k = 0; k < nm; k++) f.region[mem[k]] = -2; /* tried */
    } else {
      f.first[rid] = -1;
      for (int k = nm; k-- > 0;) {
        f.next[mem[k]] = f.first[rid];
        f.first[rid] = mem[k];
      }
      reorder(&f, mem, nm, rid);
    }
    rid++;
  }
  if (st == CMX_OK) st = cmx__cgraph_compact(g, dead);
  if (st == CMX_OK) st = toposort(g);
  free(f.region);
  free(f.cons);
  free(f.cons_off);
  free(f.is_out);
  free(f.inset);
  free(f.stamp);
  free(f.stack);
  free(f.first);
  free(f.next);
  free(f.rstamp);
  free(f.pos);
  free(f.at);
  free(f.scratch);
  free(dead);
  free(mem);
  free(work);
  return st;
}
