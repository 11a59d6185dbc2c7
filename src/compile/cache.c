/* cmx_compile: handles, the trace cache, tracing and calls.
 *
 * The cache holds traces (entries) keyed by the function's identity, the
 * inputs' count, dtypes and shapes (ndims when shapeless), the default
 * stream and the caller's key bytes. Entries sit in a hash table and in an
 * LRU list bounded by the capacity; a call holds a reference to the entry
 * it replays, so another thread may evict it meanwhile. Each identity has
 * a record counting its live handles; when the last handle goes, so do its
 * entries. Tracing runs the user's function without the cache lock (it may
 * call compiled functions itself); two threads tracing the same key keep
 * the first entry inserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"
#include "transforms/transforms_internal.h"

/* ---------------- records, entries, the table ---------------- */

#define NBUCKETS 1024
#define NEVICTED 8 /* evicted keys remembered per function, for explain */

typedef struct fn_record {
  uint64_t id;
  int handles;
  uint64_t evicted[NEVICTED]; /* key hashes of evicted traces */
  int nevicted;
  struct fn_record* next;
} fn_record;

typedef struct entry {
  _Atomic int64_t refcount;
  uint64_t id, hash;
  /* key */
  int nin;
  bool shapeless;
  int stream;
  cmx_dtype* dtypes;
  int* ndims;
  int64_t* dims; /* concatenated shapes (empty when shapeless) */
  size_t ndims_total;
  unsigned char* key;
  size_t key_size;
  /* value */
  cmx__cgraph graph;
  cmx__cplan plan; /* the graph as one op */
  int ncaptured;   /* trailing graph outputs that are captured outputs */
  void* aux;
  void (*aux_release)(void*);
  /* links */
  struct entry *hnext, *prev, *next;
} entry;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static entry* g_buckets[NBUCKETS];
static entry *g_head, *g_tail; /* LRU: head most recent */
static int g_count, g_capacity = CMX_COMPILE_CACHE_SIZE;
static fn_record* g_records;
static _Atomic uint64_t st_traces, st_hits, st_evictions;
/* -1 until first read from the environment; then 0 or 1. */
static _Atomic int g_enabled = -1;

static cmx_status oom(void) {
  return cmx__error(CMX_ERR_MEMORY, "[compile] out of host memory");
}

static void entry_free(entry* e) {
  cmx__cplan_free(&e->plan);
  cmx__cgraph_free(&e->graph);
  if (e->aux_release) e->aux_release(e->aux);
  free(e->dtypes);
  free(e->ndims);
  free(e->dims);
  free(e->key);
  free(e);
}

static void entry_release(entry* e) {
  if (e && atomic_fetch_sub(&e->refcount, 1) == 1) entry_free(e);
}

/* The release of a CompiledGraph op's reference (run.c). */
static void entry_release_v(void* e) {
  entry_release(e);
}

/* Unlinks e from the table and the LRU list (lock held); the caller drops
 * the cache's reference after unlocking. */
static void unlink_entry(entry* e) {
  entry** p = &g_buckets[e->hash & (NBUCKETS - 1)];
  while (*p != e) p = &(*p)->hnext;
  *p = e->hnext;
  if (e->prev)
    e->prev->next = e->next;
  else
    g_head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    g_tail = e->prev;
  e->prev = e->next = e->hnext = NULL;
  g_count--;
}

static void lru_front(entry* e) {
  if (g_head == e) return;
  if (e->prev) e->prev->next = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else if (g_tail == e)
    g_tail = e->prev;
  e->prev = NULL;
  e->next = g_head;
  if (g_head) g_head->prev = e;
  g_head = e;
  if (!g_tail) g_tail = e;
}

static fn_record* record_find(uint64_t id) {
  for (fn_record* r = g_records; r; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

/* Evicts from the LRU tail until the count fits (lock held); the evicted
 * entries are chained through `next` into *dropped for release. */
static void evict(entry** dropped) {
  while (g_count > g_capacity && g_tail) {
    entry* e = g_tail;
    unlink_entry(e);
    fn_record* r = record_find(e->id);
    if (r) r->evicted[r->nevicted++ % NEVICTED] = e->hash;
    atomic_fetch_add(&st_evictions, 1);
    e->next = *dropped;
    *dropped = e;
  }
}

static void release_chain(entry* e) {
  while (e) {
    entry* n = e->next;
    entry_release(e);
    e = n;
  }
}

/* ---------------- keys ---------------- */

/* A call's key, built on the stack for lookups. */
typedef struct {
  uint64_t id, hash;
  int nin, stream;
  bool shapeless;
  const cmx_array* inputs;
  const void* key;
  size_t key_size;
} call_key;

static uint64_t mix(uint64_t h, uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

static uint64_t key_hash(const call_key* k) {
  uint64_t h = mix(k->id, (uint64_t)k->nin);
  h = mix(h, (uint64_t)k->stream * 2 + k->shapeless);
  for (int i = 0; i < k->nin; i++) {
    cmx_array a = k->inputs[i];
    h = mix(h, (uint64_t)a->dtype * 64 + (uint64_t)a->ndim);
    if (!k->shapeless)
      for (int d = 0; d < a->ndim; d++) h = mix(h, (uint64_t)a->dims[d]);
  }
  const unsigned char* b = k->key;
  for (size_t i = 0; i < k->key_size; i++) h = mix(h, b[i]);
  return h;
}

static bool key_matches(const entry* e, const call_key* k) {
  if (e->id != k->id || e->hash != k->hash || e->nin != k->nin ||
      e->stream != k->stream || e->shapeless != k->shapeless ||
      e->key_size != k->key_size ||
      (k->key_size && memcmp(e->key, k->key, k->key_size)))
    return false;
  size_t off = 0;
  for (int i = 0; i < k->nin; i++) {
    cmx_array a = k->inputs[i];
    if (e->dtypes[i] != a->dtype || e->ndims[i] != a->ndim) return false;
    if (k->shapeless) continue;
    if (a->ndim && memcmp(e->dims + off, a->dims, (size_t)a->ndim * 8))
      return false;
    off += (size_t)a->ndim;
  }
  return true;
}

/* Finds and retains the entry for k (lock held), moving it to the front. */
static entry* lookup(const call_key* k) {
  for (entry* e = g_buckets[k->hash & (NBUCKETS - 1)]; e; e = e->hnext)
    if (key_matches(e, k)) {
      lru_front(e);
      atomic_fetch_add(&e->refcount, 1);
      return e;
    }
  return NULL;
}

/* Stores k's key in e. */
static bool entry_set_key(entry* e, const call_key* k) {
  e->id = k->id;
  e->hash = k->hash;
  e->nin = k->nin;
  e->stream = k->stream;
  e->shapeless = k->shapeless;
  size_t total = 0;
  for (int i = 0; i < k->nin; i++) total += (size_t)k->inputs[i]->ndim;
  e->dtypes = malloc((size_t)(k->nin + 1) * sizeof *e->dtypes);
  e->ndims = malloc((size_t)(k->nin + 1) * sizeof *e->ndims);
  e->dims = malloc((total + 1) * sizeof *e->dims);
  e->key = malloc(k->key_size + 1);
  if (!e->dtypes || !e->ndims || !e->dims || !e->key) return false;
  size_t off = 0;
  for (int i = 0; i < k->nin; i++) {
    cmx_array a = k->inputs[i];
    e->dtypes[i] = a->dtype;
    e->ndims[i] = a->ndim;
    if (!k->shapeless && a->ndim)
      memcpy(e->dims + off, a->dims, (size_t)a->ndim * sizeof(int64_t));
    off += (size_t)a->ndim;
  }
  if (k->key_size) memcpy(e->key, k->key, k->key_size);
  e->key_size = k->key_size;
  return true;
}

/* ---------------- explain ---------------- */

/* Why k needs a trace, compared with the function's most recent entry
 * (lock held). */
static void explain(const cmx_compiled* c, const call_key* k, const char* name);

/* ---------------- handles ---------------- */

struct cmx_compiled {
  cmx_closure f;
  uint64_t id;
  bool shapeless;
  char* name;
  cmx_compile_capture cin, cout;
  void (*release)(void*);
};

static bool enabled(void) {
  int e = atomic_load(&g_enabled);
  if (e < 0) {
    int v = !cmx__env_get()->disable_compile;
    atomic_compare_exchange_strong(&g_enabled, &e, v);
    e = atomic_load(&g_enabled);
  }
  return e != 0;
}

void cmx_disable_compile(void) {
  atomic_store(&g_enabled, 0);
}
void cmx_enable_compile(void) {
  atomic_store(&g_enabled, 1);
}
bool cmx_compile_enabled(void) {
  return enabled();
}

cmx_status cmx_compile(cmx_compiled** out, cmx_closure f,
                       const cmx_compile_options* opt) {
  if (!out)
    return cmx__error(CMX_ERR_VALUE, "[compile] output pointer is NULL");
  *out = NULL;
  if (!f.fn) return cmx__error(CMX_ERR_VALUE, "[compile] function is NULL");
  cmx_compile_options o = {0};
  if (opt) o = *opt;
  cmx_compiled* c = calloc(1, sizeof *c);
  const char* name = o.name && *o.name ? o.name : "function";
  if (c) c->name = strdup(name);
  if (!c || !c->name) {
    free(c);
    return oom();
  }
  c->f = f;
  c->shapeless = o.shapeless;
  c->cin = o.inputs;
  c->cout = o.outputs;
  c->release = o.release;
  c->id = o.id ? o.id
               : mix((uint64_t)(uintptr_t)f.payload,
                     (uint64_t)(uintptr_t)(void*)f.fn) |
                     1;
  pthread_mutex_lock(&g_lock);
  fn_record* r = record_find(c->id);
  if (!r && (r = calloc(1, sizeof *r))) {
    r->id = c->id;
    r->next = g_records;
    g_records = r;
  }
  if (r) r->handles++;
  pthread_mutex_unlock(&g_lock);
  if (!r) {
    free(c->name);
    free(c);
    return oom();
  }
  *out = c;
  return CMX_OK;
}

void cmx_compiled_release(cmx_compiled* c) {
  if (!c) return;
  entry* dropped = NULL;
  pthread_mutex_lock(&g_lock);
  fn_record** p = &g_records;
  while (*p && (*p)->id != c->id) p = &(*p)->next;
  fn_record* r = *p;
  if (r && --r->handles == 0) {
    *p = r->next;
    free(r);
    for (entry* e = g_head; e;) {
      entry* n = e->next;
      if (e->id == c->id) {
        unlink_entry(e);
        e->next = dropped;
        dropped = e;
      }
      e = n;
    }
  }
  pthread_mutex_unlock(&g_lock);
  release_chain(dropped);
  if (c->release) c->release(c->f.payload);
  free(c->name);
  free(c);
}

cmx_status cmx_compile_set_cache_size(int n) {
  if (n < 1)
    return cmx__error(CMX_ERR_VALUE,
                      "[compile] the cache must hold at least one trace");
  entry* dropped = NULL;
  pthread_mutex_lock(&g_lock);
  g_capacity = n;
  evict(&dropped);
  pthread_mutex_unlock(&g_lock);
  release_chain(dropped);
  return CMX_OK;
}

void cmx_compile_clear_cache(void) {
  entry* dropped = NULL;
  pthread_mutex_lock(&g_lock);
  while (g_head) {
    entry* e = g_head;
    unlink_entry(e);
    e->next = dropped;
    dropped = e;
  }
  pthread_mutex_unlock(&g_lock);
  release_chain(dropped);
}

/* Kernel counters come from the code generators (primitives/compiled.c). */
void cmx__compiled_stats(cmx_compile_stats* s);

void cmx_compile_stats_get(cmx_compile_stats* out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  cmx__compiled_stats(out);
  out->traces = atomic_load(&st_traces);
  out->hits = atomic_load(&st_hits);
  out->evictions = atomic_load(&st_evictions);
  pthread_mutex_lock(&g_lock);
  out->entries = (uint64_t)g_count;
  pthread_mutex_unlock(&g_lock);
}

/* ---------------- the trace context ---------------- */

static _Thread_local cmx__trace_ctx* tl_trace;

bool cmx_compile_tracing(void) {
  return tl_trace != NULL;
}

cmx_status cmx_compile_set_aux(void* aux, void (*release)(void*)) {
  cmx__trace_ctx* t = tl_trace;
  if (!t) {
    if (release) release(aux);
    return cmx__error(CMX_ERR_VALUE,
                      "[compile] set_aux called outside a compiled trace");
  }
  if (t->aux_release) t->aux_release(t->aux);
  t->aux = aux;
  t->aux_release = release;
  return CMX_OK;
}

/* ---------------- captured state ---------------- */

/* The captured arrays of cap as a malloc'ed list of borrowed handles
 * (*n of them); NULL with *n == 0 when nothing is captured. */
static cmx_array* capture_get(const cmx_compile_capture* cap, int* n,
                              bool* ok) {
  *n = 0;
  *ok = true;
  if (!cap->get) return NULL;
  int count = cap->get(cap->ctx, NULL, 0);
  if (count < 0) {
    *ok = false;
    if (cmx_last_status() == CMX_OK)
      cmx__error(CMX_ERR_VALUE, "[compile] reading the captured state failed");
    return NULL;
  }
  cmx_array* a = calloc((size_t)count + 1, sizeof *a);
  if (!a) {
    *ok = false;
    oom();
    return NULL;
  }
  int got = count ? cap->get(cap->ctx, a, count) : 0;
  if (got != count) {
    free(a);
    *ok = false;
    cmx__error(CMX_ERR_VALUE,
               "[compile] the captured state changed size while read");
    return NULL;
  }
  for (int i = 0; i < count; i++)
    if (!a[i]) {
      free(a);
      *ok = false;
      cmx__error(CMX_ERR_VALUE, "[compile] captured state %d is not an array",
                 i);
      return NULL;
    }
  *n = count;
  return a;
}

static cmx_status capture_set(const cmx_compile_capture* cap,
                              const cmx_array* v, int n) {
  if (!cap->set) return CMX_OK;
  cmx_status st = cap->set(cap->ctx, v, n);
  if (st != CMX_OK && cmx_last_status() == CMX_OK)
    cmx__error(st, "[compile] writing the captured state failed");
  return st;
}

/* ---------------- tracing ---------------- */

/* Graph passes, in order. */
typedef cmx_status (*pass_fn)(cmx__cgraph*);
static const struct {
  const char* name;
  pass_fn fn;
} k_passes[] = {{"merge_scalars", cmx__pass_merge_scalars},
                {"drop_noops", cmx__pass_drop_noops},
                {"cse", cmx__pass_cse},
                {"dce", cmx__pass_dce},
                {"add_rms_norm", cmx__pass_add_rms_norm},
                {"rope_multi", cmx__pass_rope_multi},
                {"qmm_swiglu", cmx__pass_qmm_swiglu},
                {"norm_qmm", cmx__pass_norm_qmm},
                {"fuse", cmx__pass_fuse}};

static cmx_status run_passes(cmx__cgraph* g) {
#ifndef NDEBUG
  cmx__cgraph_verify(g, "trace");
#endif
  for (size_t i = 0; i < sizeof k_passes / sizeof k_passes[0]; i++) {
    cmx_status st = k_passes[i].fn(g);
    if (st != CMX_OK) return st;
#ifndef NDEBUG
    cmx__cgraph_verify(g, k_passes[i].name);
#endif
  }
  return CMX_OK;
}

/* Traces c on placeholders shaped like the call's inputs (nexp explicit,
 * then the captured ones) and builds the entry (not yet in the cache). */
static entry* trace(cmx_compiled* c, const call_key* k, int nexp) {
  entry* e = calloc(1, sizeof *e);
  if (!e) return oom(), NULL;
  atomic_init(&e->refcount, 1);
  if (!entry_set_key(e, k)) {
    entry_free(e);
    return oom(), NULL;
  }
  size_t mark = cmx__scope_enter();
  int nin = k->nin;
  cmx_array* ph = calloc((size_t)nin + 1, sizeof *ph);
  cmx_status st = ph ? CMX_OK : oom();
  for (int i = 0; st == CMX_OK && i < nin; i++) {
    cmx_array a = k->inputs[i];
    ph[i] = cmx__placeholder(a->dims, a->ndim, a->dtype);
    if (!ph[i]) st = cmx_last_status();
  }
  /* Captured inputs read placeholders while the function runs. */
  bool swapped = false;
  if (st == CMX_OK && nin > nexp) {
    st = capture_set(&c->cin, ph + nexp, nin - nexp);
    swapped = st == CMX_OK;
  }
  cmx__trace_ctx ctx = {.outer = tl_trace};
  cmx_array *outs = NULL, *cap = NULL, *all = NULL;
  int nout = 0, ncap = 0;
  if (st == CMX_OK) {
    tl_trace = &ctx;
    st = cmx_closure_call(c->f, ph, nexp, &outs, &nout);
    tl_trace = ctx.outer;
  }
  if (st == CMX_OK) {
    /* Held: putting the captured inputs back may drop the state's own
     * references to them. */
    bool ok;
    cap = capture_get(&c->cout, &ncap, &ok);
    if (!ok) st = cmx_last_status();
    for (int i = 0; i < ncap; i++) cmx_array_retain(cap[i]);
  }
  if (swapped) {
    cmx_status s2 = capture_set(&c->cin, k->inputs + nexp, nin - nexp);
    if (st == CMX_OK) st = s2;
  }
  if (st == CMX_OK) {
    all = malloc((size_t)(nout + ncap + 1) * sizeof *all);
    if (!all) st = oom();
  }
  if (st == CMX_OK) {
    for (int i = 0; i < nout; i++) all[i] = outs[i];
    for (int i = 0; i < ncap; i++) all[nout + i] = cap[i];
    st = cmx__cgraph_from_trace(&e->graph, ph, nin, all, nout + ncap);
  }
  if (st == CMX_OK) {
    e->graph.shapeless = k->shapeless;
    e->ncaptured = ncap;
    st = run_passes(&e->graph);
  }
  if (st == CMX_OK) st = cmx__cplan_make(&e->plan, &e->graph);
  free(all);
  cmx_arrays_free(cap, ncap);
  cmx_arrays_free(outs, nout);
  free(ph);
  e->aux = ctx.aux;
  e->aux_release = ctx.aux_release;
  cmx__scope_exit_n(mark, NULL, NULL, 0);
  if (st != CMX_OK) {
    entry_free(e);
    return NULL;
  }
  atomic_fetch_add(&st_traces, 1);
  return e;
}

/* ---------------- calls ---------------- */

static cmx_status call_plain(cmx_compiled* c, const cmx_array* in, int n,
                             cmx_array** outputs, int* nout) {
  return cmx_closure_call(c->f, in, n, outputs, nout);
}

cmx_status cmx_compiled_call_keyed(cmx_compiled* c, const cmx_array* inputs,
                                   int n, const void* key, size_t key_size,
                                   cmx_array** outputs, int* nout, void** aux) {
  if (aux) *aux = NULL;
  if (!outputs || !nout)
    return cmx__error(CMX_ERR_VALUE, "[compile] output pointer is NULL");
  *outputs = NULL;
  *nout = 0;
  if (!c)
    return cmx__error(CMX_ERR_VALUE, "[compile] compiled function is NULL");
  if (n < 0 || (n && !inputs) || (key_size && !key))
    return cmx__error(CMX_ERR_VALUE, "[compile] bad input list");
  for (int i = 0; i < n; i++)
    if (!inputs[i])
      return cmx__error(CMX_ERR_VALUE, "[compile] input %d is a null array", i);
  if (!enabled()) return call_plain(c, inputs, n, outputs, nout);
  cmx__error_reset_pending();
  /* All inputs: the explicit ones, then the captured state. */
  bool ok;
  int ncin;
  cmx_array* cin = capture_get(&c->cin, &ncin, &ok);
  if (!ok) return cmx_last_status();
  int nin = n + ncin;
  cmx_array* all = malloc((size_t)(nin + 1) * sizeof *all);
  if (!all) {
    free(cin);
    return oom();
  }
  for (int i = 0; i < n; i++) all[i] = cmx_array_retain(inputs[i]);
  for (int i = 0; i < ncin; i++) all[n + i] = cmx_array_retain(cin[i]);
  free(cin);
  cmx_stream ds;
  int stream =
      cmx_default_stream(&ds, cmx_default_device()) == CMX_OK ? ds.index : -1;
  call_key k = {.id = c->id,
                .nin = nin,
                .stream = stream,
                .shapeless = c->shapeless,
                .inputs = all,
                .key = key,
                .key_size = key_size};
  k.hash = key_hash(&k);
  pthread_mutex_lock(&g_lock);
  entry* e = lookup(&k);
  if (!e && cmx__env_get()->compile_explain) explain(c, &k, c->name);
  pthread_mutex_unlock(&g_lock);
  cmx_status st = CMX_OK;
  if (e) {
    atomic_fetch_add(&st_hits, 1);
  } else {
    e = trace(c, &k, n);
    if (!e) st = cmx_last_status();
    if (e) {
      entry* dropped = NULL;
      pthread_mutex_lock(&g_lock);
      entry* other = lookup(&k);
      if (!other) {
        entry** b = &g_buckets[k.hash & (NBUCKETS - 1)];
        e->hnext = *b;
        *b = e;
        e->next = g_head;
        if (g_head) g_head->prev = e;
        g_head = e;
        if (!g_tail) g_tail = e;
        g_count++;
        atomic_fetch_add(&e->refcount, 1); /* the caller's */
        evict(&dropped);
      }
      pthread_mutex_unlock(&g_lock);
      release_chain(dropped);
      if (other) {
        entry_release(e);
        e = other;
      }
    }
  }
  cmx_array* res = NULL;
  int total = e ? e->graph.nout : 0;
  if (st == CMX_OK) {
    res = calloc((size_t)total + 1, sizeof *res);
    if (!res) {
      st = oom();
    } else if (cmx__cplan_fits(&e->graph, &e->plan, all)) {
      atomic_fetch_add(&e->refcount, 1); /* the op's */
      st = cmx__cplan_apply(&e->graph, &e->plan, all, res, e, entry_release_v);
    } else {
      st = cmx__cgraph_replay(&e->graph, all, res);
    }
  }
  int nexp = total - (e ? e->ncaptured : 0);
  if (st == CMX_OK && e->ncaptured)
    st = capture_set(&c->cout, res + nexp, e->ncaptured);
  if (st == CMX_OK) {
    for (int i = nexp; i < total; i++) cmx_array_release(res[i]);
    if (nexp == 0) {
      free(res);
      res = NULL;
    }
    *outputs = res;
    *nout = nexp;
    if (aux) *aux = e->aux;
  } else if (res) {
    for (int i = 0; i < total; i++) cmx_array_release(res[i]);
    free(res);
  }
  entry_release(e);
  for (int i = 0; i < nin; i++) cmx_array_release(all[i]);
  free(all);
  return st;
}

cmx_status cmx_compiled_call(cmx_compiled* c, const cmx_array* inputs, int n,
                             cmx_array** outputs, int* nout) {
  return cmx_compiled_call_keyed(c, inputs, n, NULL, 0, outputs, nout, NULL);
}

/* ---------------- explain ---------------- */

static void explain(const cmx_compiled* c, const call_key* k,
                    const char* name) {
  entry* last = NULL;
  for (entry* e = g_head; e && !last; e = e->next)
    if (e->id == k->id) last = e;
  char why[768];
  fn_record* r = record_find(k->id);
  bool evicted = false;
  for (int i = 0; r && i < NEVICTED && i < r->nevicted; i++)
    evicted = evicted || r->evicted[i] == k->hash;
  if (evicted) {
    snprintf(why, sizeof why,
             "its trace for these inputs was evicted from the cache (%d "
             "traces)",
             g_capacity);
  } else if (!last) {
    snprintf(why, sizeof why, "first call");
  } else if (last->nin != k->nin) {
    snprintf(why, sizeof why, "the number of inputs changed from %d to %d",
             last->nin, k->nin);
  } else {
    snprintf(why, sizeof why, "new non-array arguments");
    size_t off = 0;
    bool found = false;
    for (int i = 0; i < k->nin && !found; i++) {
      cmx_array a = k->inputs[i];
      const int64_t* old = last->dims + off;
      off += (size_t)last->ndims[i];
      char sa[256], sb[256];
      if (last->dtypes[i] != a->dtype) {
        snprintf(why, sizeof why, "input %d's dtype changed from %s to %s", i,
                 cmx_dtype_name(last->dtypes[i]), cmx_dtype_name(a->dtype));
        found = true;
      } else if (last->ndims[i] != a->ndim && k->shapeless) {
        snprintf(why, sizeof why, "input %d's ndim changed from %d to %d", i,
                 last->ndims[i], a->ndim);
        found = true;
      } else if (!k->shapeless &&
                 (last->ndims[i] != a->ndim ||
                  (a->ndim && memcmp(old, a->dims, (size_t)a->ndim * 8)))) {
        snprintf(why, sizeof why, "input %d's shape changed from %s to %s", i,
                 cmx__shape_str(old, last->ndims[i], sa, sizeof sa),
                 cmx__shape_str(a->dims, a->ndim, sb, sizeof sb));
        found = true;
      }
    }
    if (!found && last->stream != k->stream)
      snprintf(why, sizeof why, "the default stream changed");
  }
  fprintf(stderr, "[compile] tracing %s%s: %s\n", name,
          c->shapeless ? " (shapeless)" : "", why);
}
