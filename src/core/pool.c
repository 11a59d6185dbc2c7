/* Per-thread small-block caches (see pool.h).
 *
 * Sizes round up to 16-byte classes up to 512 bytes; larger blocks go to
 * malloc. Each thread keeps up to POOL_KEEP free blocks per class (linked
 * through their first word), so a chain of a few hundred nodes built and
 * dropped again reuses its blocks: malloc's own per-thread cache holds 7
 * blocks a size, and calloc bypasses it. A block freed on another thread
 * (a worker dropping a task's arrays) joins that thread's cache; a cache
 * is freed when its thread exits. The lists live in one heap block behind
 * a thread-local pointer (static TLS of a dlopen'ed library is scarce).
 * Sanitizer builds skip the caches, so that ASan sees every use after
 * free. */
#include "core/pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_OFF 1
#endif
#endif
#ifndef POOL_OFF
#define POOL_OFF 0
#endif

#define POOL_CLASSES 32 /* 16 .. 512 bytes */
#define POOL_KEEP 512   /* free blocks kept per class and thread */

typedef struct pool_block {
  struct pool_block* next;
} pool_block;

typedef struct {
  pool_block* head[POOL_CLASSES];
  int count[POOL_CLASSES];
} pool;

static _Thread_local pool* tl_pool CMX__TLS_FAST;
static _Thread_local bool tl_pool_gone CMX__TLS_FAST; /* thread exiting */
static pthread_key_t g_pool_key;
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static void pool_thread_exit(void* p) {
  pool* q = p;
  tl_pool = NULL;
  tl_pool_gone = true; /* later frees (other destructors) go to free() */
  for (int c = 0; c < POOL_CLASSES; c++)
    while (q->head[c]) {
      pool_block* b = q->head[c];
      q->head[c] = b->next;
      free(b);
    }
  free(q);
}
static void pool_key_init(void) {
  pthread_key_create(&g_pool_key, pool_thread_exit);
}

/* The thread's cache, made on first use; NULL when none can be. */
static pool* pool_get(void) {
  if (tl_pool || tl_pool_gone) return tl_pool;
  pool* q = calloc(1, sizeof *q);
  if (!q) return NULL;
  pthread_once(&g_pool_once, pool_key_init);
  if (pthread_setspecific(g_pool_key, q) != 0) {
    free(q);
    return NULL;
  }
  tl_pool = q;
  return q;
}

/* The class of a request (its blocks hold (class + 1) * 16 bytes), or -1
 * past the largest. */
static int pool_class(size_t bytes) {
  size_t c = (bytes + 15) / 16;
  return c >= 1 && c <= POOL_CLASSES ? (int)c - 1 : -1;
}

void* cmx__pool_alloc(size_t bytes) {
  int c = POOL_OFF ? -1 : pool_class(bytes);
  if (c < 0) return malloc(bytes ? bytes : 1);
  pool* q = tl_pool;
  if (q && q->head[c]) {
    pool_block* b = q->head[c];
    q->head[c] = b->next;
    q->count[c]--;
    return b;
  }
  return malloc((size_t)(c + 1) * 16);
}

void cmx__pool_free(void* p, size_t bytes) {
  if (!p) return;
  int c = POOL_OFF ? -1 : pool_class(bytes);
  pool* q = c >= 0 ? pool_get() : NULL;
  if (!q || q->count[c] >= POOL_KEEP) {
    free(p);
    return;
  }
  pool_block* b = p;
  b->next = q->head[c];
  q->head[c] = b;
  q->count[c]++;
}
