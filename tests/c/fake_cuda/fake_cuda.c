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
 * newest older architecture and hands that to cuModuleLoadData. From a
 * kernel's name and its PTX body (element type of its loads, float or
 * integer arithmetic, OR) the fake runs: cmx_binary_* for Add on float32,
 * float64, integers (wrapping) and bool; cmx_copy_* for 1/2/4/8-byte
 * elements. Other kernels fail to load (CUDA_ERROR_NOT_SUPPORTED), so cases
 * needing them are left out of that test's case list.
 *
 * NVRTC itself looks for cuGetExportTable in libcuda; the fake has none to
 * give. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
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
  int kind; /* 0 kernel, 1 copy, 2 record, 3 wait, 4 free */
  fn* f;
  unsigned char params[1200];
  unsigned grid, block;
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
} stream;

static void run_kernel(op* o);

static void* worker(void* arg) {
  stream* s = arg;
  pthread_mutex_lock(&s->m);
  for (;;) {
    while (!s->head) pthread_cond_wait(&s->c, &s->m);
    op* o = s->head;
    pthread_mutex_unlock(&s->m);
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
  op* o = calloc(1, sizeof *o);
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
  op* o = calloc(1, sizeof *o);
  o->kind = 3;
  o->ev = e;
  pthread_mutex_lock(&e->m);
  o->gen = e->gen;
  pthread_mutex_unlock(&e->m);
  enqueue(s, o);
  return OK;
}
CUresult cuEventSynchronize(event* e) {
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
CUresult cuMemAlloc_v2(unsigned long long* p, size_t n) {
  need_ctx();
  void* m = malloc(n);
  if (!m) return ERR_OOM;
  memset(m, 0xAB, n);
  track(m, n);
  *p = (uintptr_t)m;
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
  return OK;
}
CUresult cuMemFreeAsync(unsigned long long p, stream* s) {
  need_ctx();
  op* o = calloc(1, sizeof *o);
  o->kind = 4;
  o->dst = (void*)(uintptr_t)p;
  o->n = untrack(o->dst);
  enqueue(s, o);
  return OK;
}
CUresult cuMemGetInfo_v2(size_t* f, size_t* t) {
  *f = 1ull << 33;
  *t = 1ull << 34;
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void* h, size_t n,
                              stream* s) {
  need_ctx();
  op* o = calloc(1, sizeof *o);
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
  op* o = calloc(1, sizeof *o);
  o->kind = 1;
  o->dst = h;
  o->src = (void*)(uintptr_t)d;
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
struct fn {
  struct fn* next; /* the module's functions */
  char name[64];
  int elem;     /* element bytes */
  int is_float; /* float arithmetic on float loads */
  int is_or;    /* bool: OR instead of add */
  int binary, nd, bits, vec, sa, sb;
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
CUresult cuModuleGetFunction(fn** out, module* m, const char* name) {
  char key[96];
  snprintf(key, sizeof key, ".entry %s(", name);
  char* e = strstr(m->ptx, key);
  if (!e) return ERR_NOT_FOUND;
  char* end = strstr(e, "\n}");
  if (!end) end = e + strlen(e);
  fn* f = calloc(1, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  for (char* p = e; p && p < end; p++) {
    p = strstr(p, "ld.global.");
    if (!p || p >= end) break;
    const char* t = p + 10;
    if (!strncmp(t, "v2", 2) || !strncmp(t, "v4", 2) || !strncmp(t, "nc", 2))
      continue;
    int bits = atoi(t + 1);
    f->elem = bits / 8;
    f->is_float = t[0] == 'f';
    break;
  }
  if (!f->elem) {
    fprintf(stderr, "fake cuda: %s: no scalar loads (complex?): not emulated\n",
            name);
    free(f);
    return ERR_NOT_SUPPORTED;
  }
  f->binary = !strncmp(name, "cmx_binary_", 11);
  const char* k = name + (f->binary ? 11 : 9);
  if (k[0] == 'g') {
    f->nd = k[1] - '0';
    f->bits = atoi(k + 3);
  } else {
    f->vec = 1;
    f->sa = !strcmp(k, "sv");
    f->sb = !strcmp(k, "vs");
  }
  if (f->binary && !f->is_float) {
    /* Integer storage: float16/bfloat16 compute in float (unsupported),
     * bool ORs, integers add. */
    char* body = strndup(e, (size_t)(end - e));
    int fl = strstr(body, "add.f32") || strstr(body, "add.rn.f32") ||
             strstr(body, "cvt.f32.f16");
    f->is_or = strstr(body, "or.b") != NULL;
    free(body);
    if (fl) {
      fprintf(
          stderr,
          "fake cuda: %s computes in float on 16-bit storage: not emulated\n",
          name);
      free(f);
      return ERR_NOT_SUPPORTED;
    }
  }
  f->next = m->fns;
  m->fns = f;
  *out = f;
  return OK;
}

typedef struct {
  int ndim;
  long long shape[32];
  long long strides[3][32];
} layout;

CUresult cuLaunchKernel(fn* f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned sh,
                        stream* s, void** params, void** extra) {
  (void)gy;
  (void)gz;
  (void)by;
  (void)bz;
  (void)sh;
  (void)extra;
  need_ctx();
  if (gx == 0 || bx == 0) return ERR_INVALID;
  op* o = calloc(1, sizeof *o);
  o->kind = 0;
  o->f = f;
  unsigned char* q = o->params;
  int nptr = f->binary ? 3 : 2;
  for (int i = 0; i < nptr; i++) {
    memcpy(q, params[i], 8);
    q += 8;
  }
  int nsz = f->vec || f->bits == 64 ? 8 : 4;
  long long n = 0;
  if (nsz == 8)
    memcpy(&n, params[nptr], 8);
  else {
    int x;
    memcpy(&x, params[nptr], 4);
    n = x;
  }
  memcpy(q, &n, 8);
  q += 8;
  if (!f->vec) memcpy(q, params[nptr + 1], sizeof(layout));
  enqueue(s, o);
  return OK;
}

static void run_kernel(op* o) {
  fn* f = o->f;
  unsigned char* q = o->params;
  char *a, *b = NULL, *out;
  memcpy(&a, q, 8);
  q += 8;
  if (f->binary) {
    memcpy(&b, q, 8);
    q += 8;
  }
  memcpy(&out, q, 8);
  q += 8;
  long long n;
  memcpy(&n, q, 8);
  q += 8;
  layout L;
  if (!f->vec) memcpy(&L, q, sizeof L);
  int nd = f->vec ? 0 : (f->nd ? f->nd : L.ndim);
  int es = f->elem;
  for (long long i = 0; i < n; i++) {
    long long oa = i, ob = i;
    if (f->vec) {
      if (f->sa) oa = 0;
      if (f->sb) ob = 0;
    } else {
      long long r = i;
      oa = ob = 0;
      for (int d = nd - 1; d >= 0; d--) {
        long long k = r % L.shape[d];
        r /= L.shape[d];
        oa += k * L.strides[1][d];
        ob += k * L.strides[2][d];
      }
    }
    if (f->binary && f->is_float && es == 4) {
      float x, y;
      memcpy(&x, a + oa * 4, 4);
      memcpy(&y, b + ob * 4, 4);
      x = x + y;
      memcpy(out + i * 4, &x, 4);
    } else if (f->binary && f->is_float) {
      double x, y;
      memcpy(&x, a + oa * 8, 8);
      memcpy(&y, b + ob * 8, 8);
      x = x + y;
      memcpy(out + i * 8, &x, 8);
    } else if (f->binary) { /* little-endian integers of es bytes */
      uint64_t x = 0, y = 0;
      memcpy(&x, a + oa * es, es);
      memcpy(&y, b + ob * es, es);
      x = f->is_or ? (x | y) : x + y;
      memcpy(out + i * es, &x, es);
    } else {
      memcpy(out + i * es, a + oa * es, es);
    }
  }
}
CUresult cuGetExportTable(const void** table, const void* id) {
  (void)id;
  *table = NULL;
  return ERR_NOT_FOUND;
}
