/* Simplification passes over a traced graph: merge_scalars, drop_noops,
 * cse and dce. Each rewrites uses through a replacement map (value ->
 * value) filled in dependency order, then dce drops what nothing uses.
 */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "primitives/registry.h"

static cmx_status oom(void) {
  return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
}

/* A replacement map: every value starts as itself. */
static int* repl_new(const cmx__cgraph* g) {
  int* r = malloc((size_t)(g->nvals + 1) * sizeof *r);
  if (!r) return oom(), NULL;
  for (int v = 0; v < g->nvals; v++) r[v] = v;
  return r;
}

/* Rewrites op inputs and graph outputs through r (entries already final:
 * passes fill r in dependency order, mapping to resolved values). */
static void repl_apply(cmx__cgraph* g, const int* r) {
  for (int i = 0; i < g->nops; i++)
    for (int k = 0; k < g->ops[i].nin; k++)
      g->ops[i].in[k] = r[g->ops[i].in[k]];
  for (int i = 0; i < g->nout; i++) g->outputs[i] = r[g->outputs[i]];
}

/* ---------------- dce ---------------- */

cmx_status cmx__pass_dce(cmx__cgraph* g) {
  int* uses = malloc((size_t)(g->nvals + 1) * sizeof *uses);
  bool* dead = calloc((size_t)g->nops + 1, 1);
  if (!uses || !dead) {
    free(uses);
    free(dead);
    return oom();
  }
  cmx__cgraph_count_uses(g, uses);
  for (int i = g->nops - 1; i >= 0; i--) {
    const cmx__cop* o = &g->ops[i];
    bool used = false;
    for (int k = 0; k < o->nout && !used; k++) used = uses[o->out[k]] > 0;
    if (used) continue;
    dead[i] = true;
    for (int k = 0; k < o->nin; k++) uses[o->in[k]]--;
  }
  cmx_status st = cmx__cgraph_compact(g, dead);
  free(uses);
  free(dead);
  return st;
}

/* ---------------- merge_scalars ---------------- */

/* A 0-d constant whose value can be read now, as (dtype, weak, bytes). */
static bool scalar_bytes(const cmx__cval* v, unsigned char* bytes, size_t* n) {
  if (v->kind != CMX__CV_CONST || v->ndim != 0) return false;
  cmx_array a = v->konst;
  if (!a->buf || a->error || !cmx_array_is_available(a) || !a->buf->host_valid)
    return false;
  *n = cmx_dtype_size(a->dtype);
  memcpy(bytes, cmx__node_ptr(a), *n);
  return true;
}

cmx_status cmx__pass_merge_scalars(cmx__cgraph* g) {
  int* r = repl_new(g);
  if (!r) return cmx_last_status();
  /* Scalars are few: compare each with the distinct ones kept so far. */
  int* kept = malloc((size_t)(g->nvals + 1) * sizeof *kept);
  if (!kept) {
    free(r);
    return oom();
  }
  int nkept = 0;
  for (int v = 0; v < g->nvals; v++) {
    unsigned char b[16], c[16];
    size_t n, m;
    if (!scalar_bytes(&g->vals[v], b, &n)) continue;
    int match = -1;
    for (int j = 0; j < nkept && match < 0; j++) {
      const cmx__cval* w = &g->vals[kept[j]];
      if (w->dtype == g->vals[v].dtype &&
          w->konst->weak == g->vals[v].konst->weak && scalar_bytes(w, c, &m) &&
          m == n && !memcmp(b, c, n))
        match = kept[j];
    }
    if (match >= 0)
      r[v] = match;
    else
      kept[nkept++] = v;
  }
  repl_apply(g, r);
  free(kept);
  free(r);
  return cmx__pass_dce(g);
}

/* ---------------- drop_noops ---------------- */

static bool same_shape(const cmx__cval* a, const cmx__cval* b) {
  return a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t));
}

/* Whether op passes its single input through unchanged (values, dtype and
 * shape). StopGradient is not one: it changes what transforms see. */
static bool is_noop(const cmx__cgraph* g, const cmx__cop* o) {
  if (o->nin != 1 || o->nout != 1) return false;
  const cmx__cval* in = &g->vals[o->in[0]];
  const cmx__cval* out = &g->vals[o->out[0]];
  if (in->dtype != out->dtype || !same_shape(in, out)) return false;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(o->prim);
  if (g->shapeless && vt == &cmx__vt_Broadcast) return false;
  return vt == &cmx__vt_Identity || vt == &cmx__vt_Copy ||
         vt == &cmx__vt_AsType || vt == &cmx__vt_Broadcast ||
         vt == &cmx__vt_Reshape;
}

cmx_status cmx__pass_drop_noops(cmx__cgraph* g) {
  int* r = repl_new(g);
  if (!r) return cmx_last_status();
  for (int i = 0; i < g->nops; i++) {
    cmx__cop* o = &g->ops[i];
    for (int k = 0; k < o->nin; k++) o->in[k] = r[o->in[k]];
    if (is_noop(g, o)) r[o->out[0]] = o->in[0];
  }
  repl_apply(g, r);
  free(r);
  return cmx__pass_dce(g);
}

/* ---------------- cse ---------------- */

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t op_key(const cmx__cop* o) {
  uint64_t h = mix(cmx_primitive_hash(o->prim),
                   (uint64_t)(uintptr_t)cmx_primitive_vt(o->prim));
  h = mix(h, (uint64_t)o->nin * 31 + (uint64_t)o->nout);
  for (int k = 0; k < o->nin; k++) h = mix(h, (uint64_t)o->in[k]);
  return h;
}

/* Same primitive, same inputs, same output shapes and dtypes; the same
 * parameter size too (a flatten's Reshape and a plain one of the same
 * shape derive shapes differently when shapeless). */
static bool ops_equal(const cmx__cgraph* g, const cmx__cop* a,
                      const cmx__cop* b) {
  if (a->nin != b->nin || a->nout != b->nout) return false;
  for (int k = 0; k < a->nin; k++)
    if (a->in[k] != b->in[k]) return false;
  for (int k = 0; k < a->nout; k++) {
    const cmx__cval *x = &g->vals[a->out[k]], *y = &g->vals[b->out[k]];
    if (x->dtype != y->dtype || !same_shape(x, y)) return false;
  }
  return cmx_primitive_params_size(a->prim) ==
             cmx_primitive_params_size(b->prim) &&
         cmx_primitive_equal(a->prim, b->prim);
}

cmx_status cmx__pass_cse(cmx__cgraph* g) {
  int* r = repl_new(g);
  size_t cap = 16;
  while (cap < (size_t)g->nops * 2) cap *= 2;
  int* table = malloc(cap * sizeof *table); /* op index or -1 */
  if (!r || !table) {
    free(r);
    free(table);
    return r ? oom() : cmx_last_status();
  }
  memset(table, 0xff, cap * sizeof *table);
  for (int i = 0; i < g->nops; i++) {
    cmx__cop* o = &g->ops[i];
    for (int k = 0; k < o->nin; k++) o->in[k] = r[o->in[k]];
    size_t j = (size_t)op_key(o) & (cap - 1);
    int match = -1;
    for (; table[j] >= 0; j = (j + 1) & (cap - 1))
      if (ops_equal(g, &g->ops[table[j]], o)) {
        match = table[j];
        break;
      }
    if (match < 0) {
      table[j] = i;
      continue;
    }
    for (int k = 0; k < o->nout; k++) r[o->out[k]] = g->ops[match].out[k];
  }
  repl_apply(g, r);
  free(table);
  free(r);
  return cmx__pass_dce(g);
}
