/* Scopes: a thread-local stack of handles that internal ops create. A
 * public wrapper records the stack height, runs expression-style internals,
 * keeps its result and releases everything else. */
#include <stdlib.h>

#include "core/internal.h"

static _Thread_local struct {
  cmx_array* items;
  size_t n, cap;
} tl_scope CMX__TLS_FAST;

/* Frees a thread's scope storage when the thread exits. */
static pthread_key_t g_scope_key;
static pthread_once_t g_scope_once = PTHREAD_ONCE_INIT;
static void scope_thread_exit(void* p) {
  (void)p;
  free(tl_scope.items);
  tl_scope.items = NULL;
  tl_scope.cap = tl_scope.n = 0;
}
static void scope_key_init(void) {
  pthread_key_create(&g_scope_key, scope_thread_exit);
}

size_t cmx__scope_enter(void) {
  return tl_scope.n;
}

cmx_array cmx__own(cmx_array a) {
  if (!a) return NULL;
  if (tl_scope.n == tl_scope.cap) {
    size_t cap = tl_scope.cap ? tl_scope.cap * 2 : 256;
    cmx_array* items = realloc(tl_scope.items, cap * sizeof *items);
    if (!items) {
      cmx_array_release(a);
      return CMX__FAIL(CMX_ERR_MEMORY, "[scope] out of host memory");
    }
    if (!tl_scope.items) {
      pthread_once(&g_scope_once, scope_key_init);
      pthread_setspecific(g_scope_key, items);
    }
    tl_scope.items = items;
    tl_scope.cap = cap;
  }
  tl_scope.items[tl_scope.n++] = a;
  return a;
}

static void release_to(size_t mark) {
  while (tl_scope.n > mark) cmx_array_release(tl_scope.items[--tl_scope.n]);
  if (mark == 0 && tl_scope.cap > 4096) {
    free(tl_scope.items);
    tl_scope.items = NULL;
    tl_scope.cap = 0;
  }
}

cmx_status cmx__scope_exit(size_t mark, cmx_array keep, cmx_array* out) {
  return cmx__scope_exit_n(mark, &keep, out, 1);
}

cmx_status cmx__scope_exit_n(size_t mark, const cmx_array* keep, cmx_array* out,
                             size_t n) {
  bool ok = true;
  for (size_t i = 0; i < n; i++)
    if (!keep[i]) ok = false;
  /* The usual public op keeps the last array its scope registered: that
   * reference moves to *out (no retain and release). */
  if (ok && n == 1 && tl_scope.n > mark &&
      tl_scope.items[tl_scope.n - 1] == keep[0]) {
    out[0] = keep[0];
    tl_scope.n--;
  } else {
    for (size_t i = 0; i < n; i++)
      out[i] = ok ? cmx_array_retain(keep[i]) : NULL;
  }
  release_to(mark);
  if (mark == 0) cmx__tl_public_op = NULL;
  if (ok) return CMX_OK;
  if (!cmx__error_pending())
    cmx__error(CMX_ERR_RUNTIME, "[internal] an op failed without a message");
  return cmx_last_status();
}
