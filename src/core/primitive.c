/* Primitive objects and applying them to make lazy graph nodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/internal.h"
#include "core/pool.h"

/* Primitives without parameters are immutable and identical per (vtable,
 * stream), so each thread keeps one of each in a small direct-mapped cache
 * instead of allocating one per node (graph building is allocation-bound
 * for small ops). The cache holds a reference, dropped at thread exit. */
#define PRIM_CACHE 64
static _Thread_local cmx_primitive** tl_prims CMX__TLS_FAST;
static pthread_key_t g_prim_key;
static pthread_once_t g_prim_once = PTHREAD_ONCE_INIT;
static void prim_cache_exit(void* p) {
  (void)p;
  for (int i = 0; tl_prims && i < PRIM_CACHE; i++)
    cmx_primitive_release(tl_prims[i]);
  free(tl_prims);
  tl_prims = NULL;
}
static void prim_key_init(void) {
  pthread_key_create(&g_prim_key, prim_cache_exit);
}

cmx_primitive* cmx_primitive_new(const cmx_primitive_vtable* vt,
                                 const void* params, size_t size,
                                 cmx_stream s) {
  if (!vt || !vt->name)
    return CMX__FAIL(CMX_ERR_VALUE, "[primitive] vtable or name is NULL");
  cmx__stream* st = cmx__stream_resolve(s, cmx__op_name(vt->name));
  if (!st) return NULL;
  unsigned slot = 0;
  if (size == 0) {
    slot = (unsigned)((((uintptr_t)vt >> 4) ^ (uintptr_t)st->index * 31u) %
                      PRIM_CACHE);
    cmx_primitive* c = tl_prims ? tl_prims[slot] : NULL;
    if (c && c->vt == vt && c->stream.index == st->index) {
      cmx_primitive_retain(c);
      return c;
    }
  }
  cmx_primitive* p = malloc(sizeof *p + size);
  if (!p) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", vt->name);
  atomic_init(&p->refcount, 1);
  p->vt = vt;
  p->stream = (cmx_stream){st->index, st->device};
  p->params_size = size;
  if (size) memcpy(p->params, params, size);
  if (size == 0 && !tl_prims) {
    tl_prims = calloc(PRIM_CACHE, sizeof *tl_prims);
    if (tl_prims) {
      pthread_once(&g_prim_once, prim_key_init);
      pthread_setspecific(g_prim_key, tl_prims);
    }
  }
  if (size == 0 && tl_prims) {
    cmx_primitive_release(tl_prims[slot]);
    cmx_primitive_retain(p);
    tl_prims[slot] = p;
  }
  return p;
}

void cmx_primitive_retain(cmx_primitive* p) {
  if (p) atomic_fetch_add_explicit(&p->refcount, 1, memory_order_relaxed);
}

void cmx_primitive_release(cmx_primitive* p) {
  if (!p) return;
  if (atomic_fetch_sub_explicit(&p->refcount, 1, memory_order_acq_rel) != 1)
    return;
  if (p->vt->destroy) p->vt->destroy(p->params);
  free(p);
}

const cmx_primitive_vtable* cmx_primitive_vt(const cmx_primitive* p) {
  return p->vt;
}
const void* cmx_primitive_params(const cmx_primitive* p) {
  return p->params;
}
size_t cmx_primitive_params_size(const cmx_primitive* p) {
  return p->params_size;
}
const char* cmx_primitive_name(const cmx_primitive* p) {
  return p->vt->name;
}
cmx_stream cmx_primitive_stream(const cmx_primitive* p) {
  return p->stream;
}

bool cmx_primitive_equal(const cmx_primitive* a, const cmx_primitive* b) {
  if (a->vt != b->vt) return false;
  if (a->vt->equal) return a->vt->equal(a, b);
  return a->params_size == b->params_size &&
         memcmp(a->params, b->params, a->params_size) == 0;
}

uint64_t cmx_primitive_hash(const cmx_primitive* p) {
  if (p->vt->hash) return p->vt->hash(p);
  uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)p->vt;
  for (size_t i = 0; i < p->params_size; i++)
    h = (h ^ p->params[i]) * 1099511628211ull;
  return h;
}

void cmx_primitive_describe(const cmx_primitive* p, char* buf, size_t size) {
  if (!size) return;
  if (p->vt->print)
    p->vt->print(p, buf, size);
  else
    snprintf(buf, size, "%s", p->vt->name);
}

#ifndef NDEBUG
/* Debug builds check every node against its primitive's output_shapes (a
 * disagreement is a bug of the op or the rule that built the node). */
static void check_output_shapes(const cmx_primitive* p, const cmx_array* inputs,
                                int nin, const int64_t* const* shapes,
                                const int* ndims, int nout) {
  if (!p->vt->output_shapes) return;
  cmx_shape* got = malloc((size_t)nout * sizeof *got);
  if (!got) return;
  cmx__error_mark m = cmx__error_mark_get();
  cmx_status st = p->vt->output_shapes(p, inputs, nin, got, nout);
  for (int i = 0; i < nout; i++) {
    bool same = st == CMX_OK && got[i].ndim == ndims[i] &&
                (ndims[i] == 0 || !memcmp(got[i].dims, shapes[i],
                                          (size_t)ndims[i] * sizeof(int64_t)));
    if (!same) {
      char a[256], b[256];
      fprintf(stderr, "cmx: %s output %d: the op made %s, output_shapes %s%s\n",
              p->vt->name, i, cmx__shape_str(shapes[i], ndims[i], a, sizeof a),
              st == CMX_OK
                  ? cmx__shape_str(got[i].dims, got[i].ndim, b, sizeof b)
                  : "failed: ",
              st == CMX_OK ? "" : cmx_last_error());
      CMX__ASSERT(!"node shape agrees with output_shapes");
    }
  }
  cmx__error_mark_restore(m);
  free(got);
}
#endif

/* One block: op, inputs, outputs, and (nout > 1) output descriptors. The
 * op holds p and a reference to each input; outputs are left to fill in.
 * NULL when out of memory (nothing retained). */
static cmx__op* op_new(cmx_primitive* p, const cmx_array* inputs, int nin,
                       int nout, const int64_t* const* shapes, const int* ndims,
                       const cmx_dtype* dtypes) {
  size_t extra = 0;
  if (nout > 1) {
    extra = (size_t)nout * (sizeof(int64_t*) + sizeof(int) + sizeof(cmx_dtype));
    for (int i = 0; i < nout; i++) extra += (size_t)ndims[i] * sizeof(int64_t);
  }
  size_t head = sizeof(cmx__op) + (size_t)nin * sizeof(cmx_array) +
                (size_t)nout * sizeof(cmx_array);
  /* Not calloc (glibc's calloc skips malloc's thread cache): the header
   * is written here, the output slots by the caller. */
  cmx__op* op = nout == 1 ? cmx__pool_alloc(cmx__op1_bytes(nin))
                          : malloc(head + extra + 16);
  if (!op) return NULL;
  atomic_init(&op->refcount, nout);
  op->prim = p;
  op->nin = nin;
  op->nout = nout;
  op->out_shapes = NULL;
  op->out_ndims = NULL;
  op->out_dtypes = NULL;
  op->mark = 0;
  atomic_flag_clear(&op->lock);
  op->inputs = (cmx_array*)(op + 1);
  op->outputs = (struct cmx_array_node**)(op->inputs + nin);
  for (int i = 0; i < nout; i++) op->outputs[i] = NULL;
  for (int i = 0; i < nin; i++) op->inputs[i] = cmx_array_retain(inputs[i]);
  if (nout > 1) {
    char* q = (char*)(op->outputs + nout);
    int64_t** sh = (int64_t**)q;
    q += (size_t)nout * sizeof(int64_t*);
    int* nd = (int*)q;
    q += (size_t)nout * sizeof(int);
    cmx_dtype* dt = (cmx_dtype*)q;
    q += (size_t)nout * sizeof(cmx_dtype);
    q = (char*)(((uintptr_t)q + 7) & ~(uintptr_t)7);
    for (int i = 0; i < nout; i++) {
      sh[i] = (int64_t*)q;
      if (ndims[i]) memcpy(q, shapes[i], (size_t)ndims[i] * sizeof(int64_t));
      q += (size_t)ndims[i] * sizeof(int64_t);
      nd[i] = ndims[i];
      dt[i] = dtypes[i];
    }
    op->out_shapes = (const int64_t* const*)sh;
    op->out_ndims = nd;
    op->out_dtypes = dt;
  }
  return op;
}

cmx_status cmx_primitive_apply(cmx_array* outs, int nout, cmx_primitive* p,
                               const cmx_array* inputs, int nin,
                               const int64_t* const* shapes, const int* ndims,
                               const cmx_dtype* dtypes) {
  const char* name = p ? p->vt->name : "apply";
  if (!p || !outs || nout < 1 || nin < 0 || (nin && !inputs)) {
    cmx_primitive_release(p);
    return cmx__error(CMX_ERR_VALUE, "[%s] bad arguments to apply", name);
  }
  for (int i = 0; i < nin; i++)
    if (!inputs[i]) {
      cmx_primitive_release(p);
      return cmx__error(CMX_ERR_VALUE, "[%s] input %d is a null array", name,
                        i);
    }
  for (int i = 0; i < nout; i++) outs[i] = NULL;
  for (int i = 0; i < nout; i++) {
    outs[i] = cmx__node_new(name, shapes[i], ndims[i], dtypes[i]);
    if (!outs[i]) {
      for (int j = 0; j < i; j++) {
        cmx_array_release(outs[j]);
        outs[j] = NULL;
      }
      cmx_primitive_release(p);
      return cmx_last_status();
    }
  }
  cmx__op* op = op_new(p, inputs, nin, nout, shapes, ndims, dtypes);
  if (!op) {
    for (int i = 0; i < nout; i++) {
      cmx_array_release(outs[i]);
      outs[i] = NULL;
    }
    cmx_primitive_release(p);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", name);
  }
#ifndef NDEBUG
  check_output_shapes(p, inputs, nin, shapes, ndims, nout);
#endif
  uint8_t tracer = 0;
  uint32_t depth = 0;
  for (int i = 0; i < nin; i++) {
    if (inputs[i]->tracer) tracer = CMX__TRACER;
    if (inputs[i]->depth > depth) depth = inputs[i]->depth;
  }
  if (depth < UINT32_MAX) depth++;
  for (int i = 0; i < nout; i++) {
    cmx_array a = outs[i];
    op->outputs[i] = a;
    a->tracer = tracer;
    a->depth = depth;
    a->op = op;
    a->out_index = i;
    a->stream = p->stream.index;
    /* a new node no other thread sees yet: no fence */
    atomic_store_explicit(&a->status, CMX__NODE_UNSCHEDULED,
                          memory_order_relaxed);
  }
  return CMX_OK;
}

void cmx__op_reattach(cmx_primitive* prim, const cmx_array* inputs, int nin,
                      const cmx_array* outputs, int nout) {
  const int64_t* shapes[64];
  int ndims[64];
  cmx_dtype dtypes[64];
  if (nout > 64) return; /* the failure then stays */
  for (int i = 0; i < nout; i++) {
    if (outputs[i]->op) return; /* put back already */
    shapes[i] = outputs[i]->dims;
    ndims[i] = outputs[i]->ndim;
    dtypes[i] = outputs[i]->dtype;
  }
  cmx__op* op = op_new(prim, inputs, nin, nout, shapes, ndims, dtypes);
  if (!op) return;
  cmx_primitive_retain(prim);
  for (int i = 0; i < nout; i++) {
    cmx_array a = outputs[i];
    op->outputs[i] = a;
    cmx__buffer_release(a->buf); /* a partial result */
    a->buf = NULL;
    a->op = op;
    a->out_index = i;
    atomic_store(&a->status, CMX__NODE_UNSCHEDULED);
  }
}

int cmx_builtin_primitive_count(void) {
  return cmx__builtin_count();
}

const cmx_primitive_vtable* cmx_builtin_primitive(int i) {
  return cmx__builtin(i);
}

bool cmx_primitive_has_kernel(const cmx_primitive_vtable* vt,
                              cmx_device_type dev) {
  return cmx__kernel_lookup(vt, dev) != NULL;
}
