/* A fake, asynchronous CUDA driver (built as libcuda.so.1) that lets a
 * machine without a GPU run the logic of cmx's CUDA backend: test_gpu runs
 * against it in the test "test_gpu_fake_driver" (CMakeLists.txt).
 *
 * Device memory is host memory. Each stream has a worker thread that runs
 * its queued operations in order, with small random delays so that missing
 * synchronisation shows: kernels (emulated on the CPU), copies, event
 * records and waits, and stream-ordered frees, which poison the memory
 * before freeing it. Allocations are filled with a pattern too.
 *
 * Kernels are recognised from their PTX: the fake device reports compute
 * capability 9.9, which NVRTC cannot target, so cmx compiles PTX for the
 * newest older architecture and hands that to cuModuleLoadData. A kernel's
 * parameters (count and sizes) and static shared memory are read from its
 * PTX entry, so launches copy any argument list as the real driver does.
 * From a kernel's name and its PTX body (element type of its loads, float
 * or integer arithmetic, OR) the fake runs: cmx_binary_* for Add on
 * float32, float64, integers (wrapping) and bool; cmx_copy_* for
 * 1/2/4/8-byte elements; cmx_put_v (one element from its argument); and
 * the test kernels of test_gpu.c (cmx_test_*).
 * Other kernels fail to load (CUDA_ERROR_NOT_SUPPORTED), so cases needing
 * them are left out of that test's case list. With FAKE_CUDA_NOOP=1 every
 * kernel, emulated or not, loads and runs as nothing (outputs keep the
 * allocation pattern), so that any program runs its host side alone:
 * scripts/host-profile.sh measures the host's cost of a GPU step that
 * way.
 *
 * Launch limits are the real driver's: at most 1024 threads per block, and
 * more than a kernel's dynamic shared memory limit (48 KB less its static
 * shared memory, until cuFuncSetAttribute raises it, to at most the
 * device's opt-in limit of 100 KB here) fails with CUDA_ERROR_INVALID_VALUE.
 *
 * NVRTC itself looks for cuGetExportTable in libcuda; the fake has none to
 * give. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
enum {
  OK = 0,
  ERR_INVALID = 1,
  ERR_OOM = 2,
  ERR_NOT_FOUND = 500,
  ERR_NOT_READY = 600,
  ERR_NOT_SUPPORTED = 801
};

static int delays(void) {
  static int d = -1;
  if (d < 0) {
    const char* e = getenv("FAKE_CUDA_DELAY");
    d = e ? atoi(e) : 1;
  }
  return d;
}
static void jitter(void) {
  if (delays() && (rand() % 8 == 0)) usleep(rand() % 100);
}

/* ---- events ---- */
typedef struct event {
  pthread_mutex_t m;
  pthread_cond_t c;
  uint64_t gen, done;
} event;

/* ---- ops and streams ---- */
typedef struct fn fn;
typedef struct op {
  struct op* next;
  int kind; /* 0 kernel, 1 copy, 2 record, 3 wait, 4 free, 5 memset */
  fn* f;
  unsigned char params[4096];
  unsigned grid[3], block[3];
  size_t shared;
  void* dst;
  const void* src;
  size_t n;
  event* ev;
  uint64_t gen;
} op;

typedef struct stream {
  pthread_mutex_t m;
  pthread_cond_t c, idle;
  op *head, *tail;
  uint64_t submitted, done;
  pthread_t th;
  struct fgraph* capture; /* being captured into (kernel launches only) */
  int capture_bad;        /* an unsupported call invalidated the capture */
} stream;

static void run_kernel(op* o);
/* A zeroed op, but for its parameter bytes (a launch copies in those its
 * kernel has): clearing all 4 KB at every launch and graph update was
 * most of the fake's own cost in scripts/host-profile.sh's runs. */
static op* op_alloc(void) {
  op* o = malloc(sizeof *o);
  if (!o) abort();
  memset(o, 0, offsetof(op, params));
  memset((char*)o + offsetof(op, grid), 0, sizeof *o - offsetof(op, grid));
  return o;
}
/* Device bytes allocated and not yet freed (see mem_total). */
static atomic_size_t g_used;

/* While held (fake_cuda_hold(1), for tests), no stream runs its next op:
 * work queued then stays pending until fake_cuda_hold(0), whatever the
 * machine's load. A host wait (cuCtxSynchronize, cuStreamSynchronize,
 * cuEventSynchronize) lifts the hold, since nothing could end it. */
static pthread_mutex_t g_hold_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_c = PTHREAD_COND_INITIALIZER;
static int g_hold;

void fake_cuda_hold(int on) {
  pthread_mutex_lock(&g_hold_m);
  g_hold = on;
  pthread_cond_broadcast(&g_hold_c);
  pthread_mutex_unlock(&g_hold_m);
}

static void wait_unheld(void) {
  pthread_mutex_lock(&g_hold_m);
  while (g_hold) pthread_cond_wait(&g_hold_c, &g_hold_m);
  pthread_mutex_unlock(&g_hold_m);
}

static void* worker(void* arg) {
  stream* s = arg;
  pthread_mutex_lock(&s->m);
  for (;;) {
    while (!s->head) pthread_cond_wait(&s->c, &s->m);
    op* o = s->head;
    pthread_mutex_unlock(&s->m);
    wait_unheld();
    jitter();
    switch (o->kind) {
      case 0:
        run_kernel(o);
        break;
      case 1:
        memcpy(o->dst, o->src, o->n);
        break;
      case 2:
        pthread_mutex_lock(&o->ev->m);
        if (o->gen > o->ev->done) o->ev->done = o->gen;
        pthread_cond_broadcast(&o->ev->c);
        pthread_mutex_unlock(&o->ev->m);
        break;
      case 3:
        pthread_mutex_lock(&o->ev->m);
        while (o->ev->done < o->gen) pthread_cond_wait(&o->ev->c, &o->ev->m);
        pthread_mutex_unlock(&o->ev->m);
        break;
      case 4:
        memset(o->dst, 0xDB, o->n);
        free(o->dst);
        atomic_fetch_sub(&g_used, o->n);
        break;
      case 5: /* n elements of gen bytes (1, 2, 4) */
        for (size_t i = 0; i < o->n; i++)
          memcpy((char*)o->dst + i * o->gen, o->params, o->gen);
        break;
    }
    pthread_mutex_lock(&s->m);
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    s->done++;
    free(o);
    pthread_cond_broadcast(&s->idle);
  }
  return NULL;
}

static stream* g_streams[1024];
static int g_nstreams;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void enqueue(stream* s, op* o) {
  if (!s) {
    fprintf(stderr, "fake cuda: NULL stream used\n");
    abort();
  }
  o->next = NULL;
  pthread_mutex_lock(&s->m);
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  s->submitted++;
  pthread_cond_signal(&s->c);
  pthread_mutex_unlock(&s->m);
}

static void stream_sync(stream* s) {
  pthread_mutex_lock(&s->m);
  while (s->done < s->submitted) pthread_cond_wait(&s->idle, &s->m);
  pthread_mutex_unlock(&s->m);
}

/* ---- memory table ---- */
typedef struct {
  uintptr_t p;
  size_t n;
} alloc;
static alloc g_allocs[1 << 16];
static int g_nallocs;
static atomic_long g_live;
static void track(void* p, size_t n) {
  pthread_mutex_lock(&g_lock);
  int i = 0;
  while (i < g_nallocs && g_allocs[i].p) i++;
  if (i == g_nallocs) {
    if (g_nallocs == (1 << 16)) abort();
    g_nallocs++;
  }
  g_allocs[i] = (alloc){(uintptr_t)p, n};
  pthread_mutex_unlock(&g_lock);
  atomic_fetch_add(&g_live, 1);
}
static size_t untrack(void* p) {
  pthread_mutex_lock(&g_lock);
  size_t n = 0;
  for (int i = 0; i < g_nallocs; i++)
    if (g_allocs[i].p == (uintptr_t)p) {
      n = g_allocs[i].n;
      g_allocs[i].p = 0;
      break;
    }
  pthread_mutex_unlock(&g_lock);
  atomic_fetch_sub(&g_live, 1);
  if (!n) {
    fprintf(stderr, "fake cuda: free of unknown pointer %p\n", p);
    abort();
  }
  return n;
}

/* ---- API ---- */
/* Initial-exec TLS: LeakSanitizer (GCC 12) mishandles the dynamic TLS of
 * dlopen'ed libraries. */
static __thread void* tl_ctx __attribute__((tls_model("initial-exec")));
CUresult cuInit(unsigned f) {
  (void)f;
  return OK;
}
CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return OK;
}
CUresult cuGetErrorName(CUresult r, const char** s) {
  static char b[64];
  snprintf(b, 64, "FAKE_ERROR_%d", r);
  *s = b;
  return OK;
}
CUresult cuGetErrorString(CUresult r, const char** s) {
  (void)r;
  *s = "fake error";
  return OK;
}
CUresult cuDeviceGet(int* d, int i) {
  if (i != 0) return ERR_INVALID;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int a, int d) {
  (void)d;
  switch (a) {
    case 16:
      *v = 4;
      return OK;
    case 75:
      *v = 9;
      return OK;
    case 76:
      *v = 9;
      return OK;
    case 115:
      *v = getenv("FAKE_CUDA_NO_POOLS") ? 0 : 1;
      return OK;
    case 1: /* threads per block */
      *v = 1024;
      return OK;
    case 8: /* shared memory per block */
      *v = 48 << 10;
      return OK;
    case 38: /* L2 */
      *v = 1 << 20;
      return OK;
    case 97: /* shared memory per block, opted in */
      *v = 100 << 10;
      return OK;
  }
  return ERR_INVALID;
}
CUresult cuDeviceGetName(char* n, int len, int d) {
  (void)d;
  snprintf(n, len, "Fake GPU");
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void** c, int d) {
  (void)d;
  *c = (void*)0x1234;
  return OK;
}
CUresult cuCtxSetCurrent(void* c) {
  tl_ctx = c;
  return OK;
}
CUresult cuCtxGetCurrent(void** c) {
  *c = tl_ctx;
  return OK;
}
static CUresult need_ctx(void) {
  if (!tl_ctx) {
    fprintf(stderr, "fake cuda: no current context on this thread\n");
    abort();
  }
  return OK;
}
CUresult cuCtxSynchronize(void) {
  need_ctx();
  fake_cuda_hold(0);
  pthread_mutex_lock(&g_lock);
  int n = g_nstreams;
  pthread_mutex_unlock(&g_lock);
  for (int i = 0; i < n; i++) stream_sync(g_streams[i]);
  return OK;
}
CUresult cuStreamCreate(stream** out, unsigned flags) {
  (void)flags;
  need_ctx();
  stream* s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->m, NULL);
  pthread_cond_init(&s->c, NULL);
  pthread_cond_init(&s->idle, NULL);
  pthread_create(&s->th, NULL, worker, s);
  pthread_detach(s->th);
  pthread_mutex_lock(&g_lock);
  g_streams[g_nstreams++] = s;
  pthread_mutex_unlock(&g_lock);
  *out = s;
  return OK;
}
CUresult cuStreamDestroy_v2(stream* s) {
  stream_sync(s);
  return OK;
}
CUresult cuStreamSynchronize(stream* s) {
  need_ctx();
  fake_cuda_hold(0);
  if (s->capture) { /* as the real driver: not allowed, capture broken */
    s->capture_bad = 1;
    return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED */
  }
  stream_sync(s);
  return OK;
}
CUresult cuEventCreate(event** e, unsigned f) {
  (void)f;
  need_ctx();
  *e = calloc(1, sizeof **e);
  pthread_mutex_init(&(*e)->m, NULL);
  pthread_cond_init(&(*e)->c, NULL);
  return OK;
}
CUresult cuEventRecord(event* e, stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 2;
  o->ev = e;
  pthread_mutex_lock(&e->m);
  o->gen = ++e->gen;
  pthread_mutex_unlock(&e->m);
  enqueue(s, o);
  return OK;
}
CUresult cuStreamWaitEvent(stream* s, event* e, unsigned f) {
  (void)f;
  need_ctx();
  op* o = op_alloc();
  o->kind = 3;
  o->ev = e;
  pthread_mutex_lock(&e->m);
  o->gen = e->gen;
  pthread_mutex_unlock(&e->m);
  enqueue(s, o);
  return OK;
}
CUresult cuEventSynchronize(event* e) {
  fake_cuda_hold(0);
  pthread_mutex_lock(&e->m);
  uint64_t g = e->gen;
  while (e->done < g) pthread_cond_wait(&e->c, &e->m);
  pthread_mutex_unlock(&e->m);
  return OK;
}
CUresult cuEventQuery(event* e) {
  pthread_mutex_lock(&e->m);
  CUresult r = e->done >= e->gen ? OK : ERR_NOT_READY;
  pthread_mutex_unlock(&e->m);
  return r;
}
CUresult cuEventDestroy_v2(event* e) {
  (void)e;
  return OK;
}
/* The card's memory: FAKE_CUDA_MEM_TOTAL bytes (default 16 GiB);
 * allocations past it fail with CUDA_ERROR_OUT_OF_MEMORY. Bytes count as
 * used until a free runs (stream-ordered frees: when the stream reaches
 * them). */
static size_t mem_total(void) {
  static size_t t;
  if (!t) {
    const char* e = getenv("FAKE_CUDA_MEM_TOTAL");
    t = e && atoll(e) > 0 ? (size_t)atoll(e) : (size_t)1 << 34;
  }
  return t;
}
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  need_ctx();
  size_t used = atomic_fetch_add(&g_used, n) + n;
  if (used > mem_total()) {
    atomic_fetch_sub(&g_used, n);
    return ERR_OOM;
  }
  void* m = malloc(n);
  if (!m) {
    atomic_fetch_sub(&g_used, n);
    return ERR_OOM;
  }
  memset(m, 0xAB, n);
  track(m, n);
  *p = (uintptr_t)m;
  return OK;
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int d) {
  (void)d;
  *bytes = mem_total();
  return OK;
}
/* Page-locked host memory is plain memory here. */
CUresult cuMemHostAlloc(void** p, size_t n, unsigned flags) {
  (void)flags;
  need_ctx();
  *p = malloc(n ? n : 1);
  return *p ? OK : ERR_OOM;
}
/* Registering host memory: the fake's DMA reaches any host memory, so
 * it only checks its arguments. */
CUresult cuMemHostRegister_v2(void* p, size_t n, unsigned flags) {
  (void)flags;
  return p && n ? OK : ERR_INVALID;
}
CUresult cuMemHostUnregister(void* p) {
  return p ? OK : ERR_INVALID;
}

CUresult cuMemFreeHost(void* p) {
  free(p);
  return OK;
}
CUresult cuMemAllocAsync(unsigned long long* p, size_t n, stream* s) {
  (void)s;
  return cuMemAlloc_v2(p, n);
}
CUresult cuMemFree_v2(unsigned long long p) {
  need_ctx();
  size_t n = untrack((void*)(uintptr_t)p);
  memset((void*)(uintptr_t)p, 0xDB, n);
  free((void*)(uintptr_t)p);
  atomic_fetch_sub(&g_used, n);
  return OK;
}
CUresult cuMemFreeAsync(unsigned long long p, stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 4;
  o->dst = (void*)(uintptr_t)p;
  o->n = untrack(o->dst);
  enqueue(s, o);
  return OK;
}
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) {
  size_t used = atomic_load(&g_used);
  *t = mem_total();
  *f = used < *t ? *t - used : 0;
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void* h, size_t n,
                              stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 1;
  o->dst = (void*)(uintptr_t)d;
  o->src = h;
  o->n = n;
  enqueue(s, o);
  return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void* h, unsigned long long d, size_t n,
                              stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 1;
  o->dst = h;
  o->src = (void*)(uintptr_t)d;
  o->n = n;
  enqueue(s, o);
  return OK;
}
static CUresult memset_n(unsigned long long d, const void* v, unsigned size,
                         size_t n, stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 5;
  o->dst = (void*)(uintptr_t)d;
  memcpy(o->params, v, size);
  o->gen = size;
  o->n = n;
  enqueue(s, o);
  return OK;
}
CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n,
                         stream* s) {
  return memset_n(d, &v, 1, n, s);
}
CUresult cuMemsetD16Async(unsigned long long d, unsigned short v, size_t n,
                          stream* s) {
  return memset_n(d, &v, 2, n, s);
}
CUresult cuMemsetD32Async(unsigned long long d, unsigned v, size_t n,
                          stream* s) {
  return memset_n(d, &v, 4, n, s);
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long src,
                              size_t n, stream* s) {
  need_ctx();
  op* o = op_alloc();
  o->kind = 1;
  o->dst = (void*)(uintptr_t)d;
  o->src = (const void*)(uintptr_t)src;
  o->n = n;
  enqueue(s, o);
  return OK;
}
CUresult cuDeviceGetDefaultMemPool(void** p, int d) {
  (void)d;
  *p = (void*)0x77;
  return OK;
}
CUresult cuMemPoolSetAttribute(void* p, int a, void* v) {
  (void)p;
  (void)a;
  (void)v;
  return OK;
}

/* ---- modules and kernels ---- */
enum {
  K_EW,
  K_COPY,
  K_TEST_GRID,
  K_TEST_SUM10,
  K_TEST_ARGS,
  K_TEST_SHARED,
  K_TEST_BLOCK_SUM,
  K_PUT, /* cmx_put_v: one element from its launch argument */
  K_NOOP /* FAKE_CUDA_NOOP=1: every kernel, run as nothing */
};
#define MAX_PARAMS 32
struct fn {
  struct fn* next; /* the module's functions */
  char name[64];
  int kind;
  int nparams;
  size_t psize[MAX_PARAMS], poff[MAX_PARAMS]; /* in op->params */
  int static_shared, dyn_max;
  int elem; /* copy: element bytes */
  /* cmx_ew_*: the op ('+', '-', '*', or 'c' to convert), its input and
   * output dtypes as 'b' bool, 'u'/'i' unsigned/signed integers, 'f'
   * float, with their sizes */
  char op, in_kind, out_kind;
  int in_size, out_size;
  int nd, bits, vec, mask;
};
typedef struct module {
  char* ptx;
  fn* fns;
} module;

CUresult cuModuleLoadData(module** m, const void* image) {
  need_ctx();
  const char* s = image;
  if (strncmp(s, "//", 2) != 0 && !strstr(s, ".version"))
    return ERR_NOT_SUPPORTED; /* not PTX */
  *m = calloc(1, sizeof **m);
  (*m)->ptx = strdup(s);
  return OK;
}
CUresult cuModuleUnload(module* m) {
  while (m->fns) {
    fn* f = m->fns;
    m->fns = f->next;
    free(f);
  }
  free(m->ptx);
  free(m);
  return OK;
}

/* Bytes of a PTX type at t (".u8" ... ".f64", ".b8" ...). */
static size_t ptx_type_size(const char* t) {
  return (size_t)atoi(t + 2) / 8;
}

/* Reads the parameter list "( .param <type> name[, ...] )" at e and the
 * static shared memory of the body e..end into f. */
static int parse_entry(fn* f, const char* e, const char* end) {
  const char* p = strchr(e, '(');
  const char* close = p ? strchr(p, ')') : NULL;
  size_t off = 0;
  while (p && close && (p = strstr(p, ".param")) && p < close) {
    p += 6;
    while (*p == ' ' || *p == '\t') p++;
    size_t align = 0;
    if (!strncmp(p, ".align", 6)) {
      align = (size_t)atoi(p + 7);
      p = strchr(p + 7, '.');
    }
    size_t size = ptx_type_size(p);
    const char* nl = strchr(p, '\n');
    const char* br = strchr(p, '[');
    if (br && (!nl || br < nl)) size *= (size_t)atoi(br + 1);
    if (!align) align = size < 8 ? size : 8;
    if (f->nparams == MAX_PARAMS || !size) return 0;
    off = (off + align - 1) / align * align;
    f->psize[f->nparams] = size;
    f->poff[f->nparams] = off;
    f->nparams++;
    off += size;
  }
  if (off > sizeof(((op*)0)->params)) return 0;
  for (const char* q = e; (q = strstr(q, ".shared .align")) && q < end; q++) {
    const char* br = strchr(q, '[');
    if (br && br < end && br[1] != ']') f->static_shared += atoi(br + 1);
  }
  return 1;
}

/* A dtype name as cmx prints it: kind ('b', 'u', 'i', 'f') and size;
 * false for dtypes the fake does not compute (16-bit floats, complex). */
static int dtype_of(const char* name, char* kind, int* size) {
  static const struct {
    const char* name;
    char kind;
    int size;
  } D[] = {{"bool", 'b', 1},    {"uint8", 'u', 1},  {"uint16", 'u', 2},
           {"uint32", 'u', 4},  {"uint64", 'u', 8}, {"int8", 'i', 1},
           {"int16", 'i', 2},   {"int32", 'i', 4},  {"int64", 'i', 8},
           {"float32", 'f', 4}, {"float64", 'f', 8}};
  for (size_t i = 0; i < sizeof D / sizeof D[0]; i++)
    if (!strcmp(name, D[i].name)) {
      *kind = D[i].kind;
      *size = D[i].size;
      return 1;
    }
  return 0;
}

/* The module's cmx_ew_variant string (PTX: a byte array) into buf. */
static int ew_variant(const char* ptx, char* buf, size_t cap) {
  const char* v = strstr(ptx, "cmx_ew_variant[");
  const char* q = v ? strchr(v, '{') : NULL;
  size_t n = 0;
  while (q && *q && *q != '}' && n + 1 < cap) {
    q++;
    int c = atoi(q);
    if (c == 0) break;
    buf[n++] = (char)c;
    q = strpbrk(q, ",}");
    if (!q || *q == '}') break;
  }
  buf[n] = 0;
  return n > 0;
}

/* What a cmx_ew_ kernel computes, from its module's variant string. */
static CUresult classify_ew(fn* f, const char* name, const char* ptx) {
  char var[96], a[32] = "", b[32] = "", c[32] = "";
  if (!ew_variant(ptx, var, sizeof var) ||
      sscanf(var, "%31s %31s %31s", a, b, c) < 2) {
    fprintf(stderr, "fake cuda: %s: no variant string\n", name);
    return ERR_NOT_SUPPORTED;
  }
  int ok;
  if (!strcmp(a, "convert")) {
    f->op = 'c';
    ok = dtype_of(b, &f->in_kind, &f->in_size) &&
         dtype_of(c, &f->out_kind, &f->out_size);
  } else {
    f->op = !strcmp(a, "Add")        ? '+'
            : !strcmp(a, "Subtract") ? '-'
            : !strcmp(a, "Multiply") ? '*'
                                     : 0;
    ok = f->op && dtype_of(b, &f->in_kind, &f->in_size);
    f->out_kind = f->in_kind;
    f->out_size = f->in_size;
  }
  if (!ok) {
    fprintf(stderr, "fake cuda: %s (%s): not emulated\n", name, var);
    return ERR_NOT_SUPPORTED;
  }
  const char* k = name + 7;
  if (k[0] == 'g') {
    f->nd = k[1] - '0';
    f->bits = atoi(k + 3);
  } else {
    f->vec = 1;
    f->mask = atoi(k + 1);
  }
  return OK;
}

/* The element size of a cmx_copy_ kernel, and its layout kind. */
static CUresult classify_copy(fn* f, const char* name, const char* e,
                              const char* end) {
  for (const char* p = e; p && p < end; p++) {
    p = strstr(p, "ld.global.");
    if (!p || p >= end) break;
    const char* t = p + 10;
    if (!strncmp(t, "v2", 2) || !strncmp(t, "v4", 2) || !strncmp(t, "nc", 2))
      continue;
    f->elem = atoi(t + 1) / 8;
    break;
  }
  if (!f->elem) {
    fprintf(stderr, "fake cuda: %s: no scalar loads: not emulated\n", name);
    return ERR_NOT_SUPPORTED;
  }
  const char* k = name + 9;
  if (k[0] == 'g') {
    f->nd = k[1] - '0';
    f->bits = atoi(k + 3);
  } else {
    f->vec = 1;
  }
  return OK;
}

CUresult cuModuleGetFunction(fn** out, module* m, const char* name) {
  char key[96];
  snprintf(key, sizeof key, ".entry %s(", name);
  char* e = strstr(m->ptx, key);
  if (!e) return ERR_NOT_FOUND;
  char* end = strstr(e, "\n}");
  if (!end) end = e + strlen(e);
  static const struct {
    const char* name;
    int kind;
  } tests[] = {{"cmx_test_grid", K_TEST_GRID},
               {"cmx_test_sum10", K_TEST_SUM10},
               {"cmx_test_args", K_TEST_ARGS},
               {"cmx_test_shared", K_TEST_SHARED},
               {"cmx_test_block_sum", K_TEST_BLOCK_SUM}};
  fn* f = calloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->kind = -1;
  if (!strncmp(name, "cmx_ew_", 7)) f->kind = K_EW;
  if (!strncmp(name, "cmx_copy_", 9)) f->kind = K_COPY;
  if (!strcmp(name, "cmx_put_v")) f->kind = K_PUT;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
    if (!strcmp(name, tests[i].name)) f->kind = tests[i].kind;
  const char* noop = getenv("FAKE_CUDA_NOOP");
  if (noop && *noop == '1') f->kind = K_NOOP; /* even those it emulates */
  CUresult r = f->kind < 0 ? ERR_NOT_SUPPORTED : OK;
  if (r == OK && !parse_entry(f, e, end)) r = ERR_NOT_SUPPORTED;
  if (r == OK && f->kind == K_EW) r = classify_ew(f, name, m->ptx);
  if (r == OK && f->kind == K_COPY) r = classify_copy(f, name, e, end);
  if (f->kind == K_NOOP) f->nparams = 0; /* its arguments go unread */
  if (r != OK) {
    if (f->kind < 0) fprintf(stderr, "fake cuda: %s: not emulated\n", name);
    free(f);
    return r;
  }
  f->dyn_max = (48 << 10) - f->static_shared;
  f->next = m->fns;
  m->fns = f;
  *out = f;
  return OK;
}

CUresult cuFuncGetAttribute(int* v, int attr, fn* f) {
  switch (attr) {
    case 0:
      *v = 1024;
      return OK;
    case 1:
      *v = f->static_shared;
      return OK;
    case 8:
      *v = f->dyn_max;
      return OK;
  }
  return ERR_INVALID;
}

CUresult cuFuncSetAttribute(fn* f, int attr, int v) {
  if (attr != 8 || v < 0 || v > (100 << 10) - f->static_shared)
    return ERR_INVALID;
  f->dyn_max = v;
  return OK;
}

struct fgraph;
static void capture_kernel(struct fgraph* g, op* o);
CUresult cuLaunchKernel(fn* f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned sh,
                        stream* s, void** params, void** extra) {
  (void)extra;
  need_ctx();
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      (uint64_t)bx * by * bz > 1024 || (int)sh > f->dyn_max)
    return ERR_INVALID;
  op* o = op_alloc();
  o->kind = 0;
  o->f = f;
  for (int i = 0; i < f->nparams; i++)
    memcpy(o->params + f->poff[i], params[i], f->psize[i]);
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  memcpy(o->grid, g, sizeof g);
  memcpy(o->block, b, sizeof b);
  o->shared = sh;
  if (s->capture) {
    capture_kernel(s->capture, o);
    return OK;
  }
  if (f->kind == K_NOOP) { /* no effect: nothing to order */
    free(o);
    return OK;
  }
  enqueue(s, o);
  return OK;
}

/* ---- graphs ----
 * A graph is a list of nodes run in order (cmx chains every node after
 * the one before): kernels (a launch's op, kept as a template) and child
 * graphs (copied in). An executable graph is a deep copy; launching it
 * enqueues copies of its kernels' ops. Updates replace a node's kernel
 * parameters or its child's nodes (same node count and kinds, as the real
 * driver's topology rule). Counters for tests: FAKE_CUDA_GRAPH_FAIL=n makes
 * every n-th instantiation fail. */
typedef struct gnode {
  op* k;                /* kernel node: its template op */
  struct fgraph* child; /* child graph node: its own copy */
  int index;
} gnode;
typedef struct fgraph {
  gnode** nodes;
  int n, cap;
} fgraph;
static atomic_long g_graphs_live, g_execs_live, g_graph_launches;

static fgraph* graph_new(void) {
  atomic_fetch_add(&g_graphs_live, 1);
  return calloc(1, sizeof(fgraph));
}
static gnode* graph_push(fgraph* g) {
  if (g->n == g->cap) {
    g->cap = g->cap ? 2 * g->cap : 16;
    g->nodes = realloc(g->nodes, (size_t)g->cap * sizeof *g->nodes);
  }
  gnode* n = calloc(1, sizeof *n);
  n->index = g->n;
  g->nodes[g->n++] = n;
  return n;
}
static fgraph* graph_clone(const fgraph* g);
static void graph_free(fgraph* g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++) {
    free(g->nodes[i]->k);
    graph_free(g->nodes[i]->child);
    free(g->nodes[i]);
  }
  free(g->nodes);
  free(g);
  atomic_fetch_sub(&g_graphs_live, 1);
}
static fgraph* graph_clone(const fgraph* g) {
  fgraph* c = graph_new();
  for (int i = 0; i < g->n; i++) {
    gnode* n = graph_push(c);
    if (g->nodes[i]->k) {
      n->k = malloc(sizeof(op));
      memcpy(n->k, g->nodes[i]->k, sizeof(op));
    }
    if (g->nodes[i]->child) n->child = graph_clone(g->nodes[i]->child);
  }
  return c;
}
static int same_shape(const fgraph* a, const fgraph* b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const gnode *x = a->nodes[i], *y = b->nodes[i];
    if (!x->k != !y->k || !x->child != !y->child) return 0;
    if (x->k && x->k->f != y->k->f) return 0;
    if (x->child && !same_shape(x->child, y->child)) return 0;
  }
  return 1;
}
static void capture_kernel(fgraph* g, op* o) {
  graph_push(g)->k = o;
}
static void graph_enqueue(const fgraph* g, stream* s) {
  for (int i = 0; i < g->n; i++) {
    if (g->nodes[i]->child) {
      graph_enqueue(g->nodes[i]->child, s);
      continue;
    }
    if (g->nodes[i]->k->f->kind == K_NOOP) continue; /* no effect */
    op* o = malloc(sizeof(op));
    memcpy(o, g->nodes[i]->k, sizeof(op));
    enqueue(s, o);
  }
}

/* CUDA_KERNEL_NODE_PARAMS_v2 */
typedef struct {
  fn* func;
  unsigned gx, gy, gz, bx, by, bz, shared;
  void** params;
  void** extra;
  void* kern;
  void* ctx;
} knode_params;

static op* kernel_op(const knode_params* p) {
  op* o = op_alloc();
  o->kind = 0;
  o->f = p->func;
  for (int i = 0; i < p->func->nparams; i++)
    memcpy(o->params + p->func->poff[i], p->params[i], p->func->psize[i]);
  unsigned g[3] = {p->gx, p->gy, p->gz}, b[3] = {p->bx, p->by, p->bz};
  memcpy(o->grid, g, sizeof g);
  memcpy(o->block, b, sizeof b);
  o->shared = p->shared;
  return o;
}

CUresult cuGraphCreate(fgraph** g, unsigned flags) {
  (void)flags;
  *g = graph_new();
  return OK;
}
CUresult cuGraphDestroy(fgraph* g) {
  graph_free(g);
  return OK;
}
/* dependencies: cmx passes the previous node (or none); order is kept. */
CUresult cuGraphAddKernelNode_v2(gnode** out, fgraph* g, gnode** deps,
                                 size_t ndeps, const knode_params* p) {
  (void)deps;
  (void)ndeps;
  if (!p->func || (uint64_t)p->bx * p->by * p->bz > 1024 ||
      (int)p->shared > p->func->dyn_max)
    return ERR_INVALID;
  gnode* n = graph_push(g);
  n->k = kernel_op(p);
  *out = n;
  return OK;
}
CUresult cuGraphAddChildGraphNode(gnode** out, fgraph* g, gnode** deps,
                                  size_t ndeps, fgraph* child) {
  (void)deps;
  (void)ndeps;
  gnode* n = graph_push(g);
  n->child = graph_clone(child);
  *out = n;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(fgraph** e, fgraph* g,
                                     unsigned long long flags) {
  (void)flags;
  static atomic_long count;
  const char* f = getenv("FAKE_CUDA_GRAPH_FAIL");
  long every = f ? atol(f) : 0;
  if (every > 0 && (atomic_fetch_add(&count, 1) + 1) % every == 0)
    return ERR_INVALID;
  *e = graph_clone(g);
  atomic_fetch_add(&g_execs_live, 1);
  return OK;
}
CUresult cuGraphExecDestroy(fgraph* e) {
  graph_free(e);
  atomic_fetch_sub(&g_execs_live, 1);
  return OK;
}
CUresult cuGraphLaunch(fgraph* e, stream* s) {
  need_ctx();
  if (s->capture) return ERR_INVALID;
  graph_enqueue(e, s);
  atomic_fetch_add(&g_graph_launches, 1);
  return OK;
}
CUresult cuGraphExecKernelNodeSetParams_v2(fgraph* e, gnode* n,
                                           const knode_params* p) {
  if (n->index >= e->n || !e->nodes[n->index]->k ||
      e->nodes[n->index]->k->f != p->func)
    return ERR_INVALID;
  free(e->nodes[n->index]->k);
  e->nodes[n->index]->k = kernel_op(p);
  return OK;
}
CUresult cuGraphExecChildGraphNodeSetParams(fgraph* e, gnode* n,
                                            fgraph* child) {
  if (n->index >= e->n || !e->nodes[n->index]->child ||
      !same_shape(e->nodes[n->index]->child, child))
    return ERR_INVALID;
  graph_free(e->nodes[n->index]->child);
  e->nodes[n->index]->child = graph_clone(child);
  return OK;
}
CUresult cuStreamBeginCapture_v2(stream* s, int mode) {
  (void)mode;
  if (s->capture) return ERR_INVALID;
  s->capture = graph_new();
  s->capture_bad = 0;
  return OK;
}
CUresult cuStreamEndCapture(stream* s, fgraph** g) {
  *g = NULL;
  if (!s->capture) return ERR_INVALID;
  fgraph* c = s->capture;
  s->capture = NULL;
  if (s->capture_bad) {
    graph_free(c);
    return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  }
  *g = c;
  return OK;
}
/* For tests (dlsym'd): graphs and executable graphs alive, launches. */
long fake_cuda_graphs_live(void) {
  return atomic_load(&g_graphs_live);
}
long fake_cuda_execs_live(void) {
  return atomic_load(&g_execs_live);
}
long fake_cuda_graph_launches(void) {
  return atomic_load(&g_graph_launches);
}

/* Parameter i of the launch o, as a value of its own size (integers
 * sign-extended from 4 bytes, as cmx passes int counts). */
static void* param(op* o, int i) {
  return o->params + o->f->poff[i];
}
static long long param_int(op* o, int i) {
  if (o->f->psize[i] == 8) {
    long long v;
    memcpy(&v, param(o, i), 8);
    return v;
  }
  int v;
  memcpy(&v, param(o, i), 4);
  return v;
}
static char* param_ptr(op* o, int i) {
  char* p;
  memcpy(&p, param(o, i), 8);
  return p;
}

typedef struct {
  int ndim;
  long long shape[32];
  long long strides[12][32];
} layout;

/* Element offsets of linear index i in arrays 1 .. narr-1 of L. */
static void offsets(const layout* L, int nd, int narr, long long i,
                    long long* off) {
  for (int k = 1; k < narr; k++) off[k - 1] = 0;
  for (int d = nd - 1; d >= 0; d--) {
    long long k = i % L->shape[d];
    i /= L->shape[d];
    for (int a = 1; a < narr; a++) off[a - 1] += k * L->strides[a][d];
  }
}

/* A stored value as a double or as 64 integer bits. */
static double load_f(const char* p, int size) {
  if (size == 4) {
    float v;
    memcpy(&v, p, 4);
    return v;
  }
  double v;
  memcpy(&v, p, 8);
  return v;
}
static uint64_t load_i(const char* p, char kind, int size) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)size);
  if (kind == 'i' && size < 8 && (v >> (8 * size - 1)) & 1)
    v |= ~(uint64_t)0 << (8 * size); /* sign-extend */
  return v;
}
static void store_f(char* p, int size, double v) {
  if (size == 4) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

/* A float converted as cmx converts it to an integer: truncated, NaN 0,
 * saturated at the 64-bit range (uint64: from 2^64 up), then wrapped. */
static uint64_t sat_int(double d, char kind, int size) {
  if (d != d) return 0;
  if (kind == 'u' && size == 8 && d >= 0) {
    if (d >= 18446744073709551615.0) return ~(uint64_t)0;
    return (uint64_t)d;
  }
  if (d >= 9223372036854775807.0) return (uint64_t)INT64_MAX;
  if (d <= -9223372036854775808.0) return (uint64_t)INT64_MIN;
  return (uint64_t)(int64_t)d;
}

/* cmx_ew_*(a0, a1, a2, out, n, params[, layout]) */
static void run_ew(op* o) {
  fn* f = o->f;
  char* in[2] = {param_ptr(o, 0), param_ptr(o, 1)};
  char* out = param_ptr(o, 3);
  long long n = param_int(o, 4);
  int narr = f->op == 'c' ? 2 : 3;
  layout L;
  if (!f->vec) memcpy(&L, param(o, 6), f->psize[6]);
  int nd = f->vec ? 0 : (f->nd ? f->nd : L.ndim);
  int is = f->in_size, os = f->out_size;
  for (long long i = 0; i < n; i++) {
    long long off[2] = {i, i};
    if (f->vec) {
      for (int k = 0; k < 2; k++)
        if (f->mask >> k & 1) off[k] = 0;
    } else {
      offsets(&L, nd, narr, i, off);
    }
    const char* x = in[0] + off[0] * is;
    char* dst = out + i * os;
    if (f->op == 'c') { /* conversions: floats truncate toward zero */
      if (f->out_kind == 'f' && f->in_kind == 'f')
        store_f(dst, os, load_f(x, is));
      else if (f->out_kind == 'f')
        store_f(dst, os,
                f->in_kind == 'u' ? (double)load_i(x, 'u', is)
                                  : (double)(int64_t)load_i(x, f->in_kind, is));
      else if (f->out_kind == 'b')
        *dst = f->in_kind == 'f' ? load_f(x, is) != 0 : load_i(x, 'u', is) != 0;
      else {
        uint64_t v = f->in_kind == 'f' ? sat_int(load_f(x, is), f->out_kind, os)
                                       : load_i(x, f->in_kind, is);
        memcpy(dst, &v, (size_t)os);
      }
      continue;
    }
    const char* y = in[1] + off[1] * is;
    if (f->in_kind == 'f') {
      double a = load_f(x, is), b = load_f(y, is);
      store_f(dst, os, f->op == '+' ? a + b : f->op == '-' ? a - b : a * b);
    } else if (f->in_kind == 'b') {
      uint8_t a = (uint8_t)*x, b = (uint8_t)*y;
      *dst = (char)(f->op == '+' ? a | b : f->op == '-' ? a ^ b : a & b);
    } else { /* wrapping integers, little-endian */
      uint64_t a = load_i(x, 'u', is), b = load_i(y, 'u', is);
      uint64_t v = f->op == '+' ? a + b : f->op == '-' ? a - b : a * b;
      memcpy(dst, &v, (size_t)os);
    }
  }
}

/* cmx_copy_*(a, out, n[, layout]) */
static void run_copy(op* o) {
  fn* f = o->f;
  char* a = param_ptr(o, 0);
  char* out = param_ptr(o, 1);
  long long n = param_int(o, 2);
  layout L;
  if (!f->vec) memcpy(&L, param(o, 3), f->psize[3]);
  int nd = f->vec ? 0 : (f->nd ? f->nd : L.ndim);
  int es = f->elem;
  for (long long i = 0; i < n; i++) {
    long long off = i;
    if (!f->vec) offsets(&L, nd, 2, i, &off);
    memcpy(out + i * es, a + off * es, (size_t)es);
  }
}

/* The test kernels of test_gpu.c, as their sources there define them. */
static void run_test(op* o) {
  unsigned *g = o->grid, *b = o->block;
  switch (o->f->kind) {
    case K_TEST_GRID: { /* (int* out, int marker) */
      int* out = (int*)param_ptr(o, 0);
      int marker = (int)param_int(o, 1);
      long long threads = (long long)b[0] * b[1] * b[2];
      long long nb = (long long)g[0] * g[1] * g[2];
      for (long long bl = 0; bl < nb; bl++)
        for (long long t = 0; t < threads; t++)
          out[bl * threads + t] = (int)(marker + bl * 1000 + t);
      break;
    }
    case K_TEST_SUM10: { /* (float* out, const float* a0..a9, long long n) */
      float* out = (float*)param_ptr(o, 0);
      long long n = param_int(o, 11);
      for (long long i = 0; i < n; i++) {
        float acc = 0;
        for (int k = 0; k < 10; k++)
          acc += (float)(k + 1) * ((float*)param_ptr(o, 1 + k))[i];
        out[i] = acc;
      }
      break;
    }
    case K_TEST_ARGS: { /* (double* out, char, short, int, long long, float,
                           double, unsigned char) */
      double* out = (double*)param_ptr(o, 0);
      signed char c;
      short sh;
      int i;
      long long l;
      float fl;
      double d;
      unsigned char u;
      memcpy(&c, param(o, 1), 1);
      memcpy(&sh, param(o, 2), 2);
      memcpy(&i, param(o, 3), 4);
      memcpy(&l, param(o, 4), 8);
      memcpy(&fl, param(o, 5), 4);
      memcpy(&d, param(o, 6), 8);
      memcpy(&u, param(o, 7), 1);
      out[0] = c, out[1] = sh, out[2] = i, out[3] = (double)l, out[4] = fl;
      out[5] = d, out[6] = u;
      break;
    }
    case K_TEST_SHARED: { /* (const float* in, float* out, int n): reversed */
      const float* in = (const float*)param_ptr(o, 0);
      float* out = (float*)param_ptr(o, 1);
      int n = (int)param_int(o, 2);
      if ((size_t)n * 4 > o->shared) {
        fprintf(stderr, "fake cuda: cmx_test_shared: %zu bytes for %d\n",
                o->shared, n);
        abort();
      }
      for (int i = 0; i < n; i++) out[i] = in[n - 1 - i];
      break;
    }
    case K_TEST_BLOCK_SUM: { /* (const int* in, long long* out, int n) */
      const int* in = (const int*)param_ptr(o, 0);
      long long* out = (long long*)param_ptr(o, 1);
      int n = (int)param_int(o, 2);
      for (unsigned bl = 0; bl < g[0]; bl++) {
        long long acc = 0;
        for (unsigned t = 0; t < b[0]; t++) {
          long long i = (long long)bl * b[0] + t;
          if (i < n) acc += in[i];
        }
        out[bl] = acc;
      }
      break;
    }
  }
}

static void run_kernel(op* o) {
  if (o->f->kind == K_EW)
    run_ew(o);
  else if (o->f->kind == K_COPY)
    run_copy(o);
  else if (o->f->kind == K_PUT) /* (T* o, T v) */
    memcpy(param_ptr(o, 0), param(o, 1), o->f->psize[1]);
  else if (o->f->kind != K_NOOP)
    run_test(o);
}
CUresult cuGetExportTable(const void** table, const void* id) {
  (void)id;
  *table = NULL;
  return ERR_NOT_FOUND;
}
