/* Groups: the world group of each backend (made once), the group of one,
 * the default group, split. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/distributed.h"

static cmx_group g_single = {1 << 30, 0, 1, NULL, NULL}; /* never freed */

enum { B_RING, B_MPI, B_NCCL, B_COUNT };
static cmx_group* g_world[B_COUNT];
static cmx_group* g_default = &g_single;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

cmx_group* cmx__group_new(const cmx__dist_backend* be, void* st, int rank,
                          int size) {
  cmx_group* g = calloc(1, sizeof *g);
  if (!g) {
    if (be && st) be->destroy(st);
    cmx__error(CMX_ERR_MEMORY, "[distributed] out of memory");
    return NULL;
  }
  atomic_store((_Atomic int*)&g->refs, 1);
  g->rank = rank;
  g->size = size;
  g->be = be;
  g->st = st;
  return g;
}

cmx_group* cmx_group_retain(cmx_group* g) {
  if (g && g != &g_single) atomic_fetch_add((_Atomic int*)&g->refs, 1);
  return g;
}

void cmx_group_release(cmx_group* g) {
  if (!g || g == &g_single) return;
  if (atomic_fetch_sub((_Atomic int*)&g->refs, 1) != 1) return;
  if (g->be && g->st) g->be->destroy(g->st);
  free(g);
}

int cmx_group_rank(const cmx_group* g) {
  return g ? g->rank : 0;
}
int cmx_group_size(const cmx_group* g) {
  return g ? g->size : 1;
}
const char* cmx_group_backend(const cmx_group* g) {
  return g && g->be ? g->be->name : "none";
}

cmx_group* cmx_distributed_default_group(void) {
  pthread_mutex_lock(&g_lock);
  cmx_group* g = g_default;
  pthread_mutex_unlock(&g_lock);
  return g;
}

bool cmx_distributed_is_available(const char* backend) {
  if (!backend || !strcmp(backend, "any") || !strcmp(backend, "ring"))
    return true;
  if (!strcmp(backend, "mpi")) return cmx__mpi_available();
  if (!strcmp(backend, "nccl")) return cmx__nccl_available();
  return false;
}

/* Starts backend b's world group (under g_lock). NULL with the error set. */
static cmx_group* start(int b) {
  if (g_world[b]) return g_world[b];
  int rank = 0, size = 1;
  void* st = b == B_RING  ? cmx__ring_init(&rank, &size)
             : b == B_MPI ? cmx__mpi_init(&rank, &size)
                          : cmx__nccl_init(&rank, &size);
  if (!st) return NULL;
  const cmx__dist_backend* be = b == B_RING  ? &cmx__ring_backend
                                : b == B_MPI ? &cmx__mpi_backend
                                             : &cmx__nccl_backend;
  g_world[b] = cmx__group_new(be, st, rank, size);
  return g_world[b];
}

/* Called by cmx__nccl_init inside start (g_lock held): the host world
 * that bootstraps NCCL, shared with init(backend="ring"/"mpi"). */
cmx_group* cmx__dist_host_world(void) {
  cmx__dist_env e;
  cmx__dist_env_read(&e);
  int b = e.hostfile ? B_RING : e.under_mpirun ? B_MPI : -1;
  if (b < 0)
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] nccl backend: start the processes with "
                     "cmx.launch or mpirun (NCCL's id is shared over the ring "
                     "or MPI)");
  return cmx_group_retain(start(b));
}

cmx_status cmx_distributed_init(cmx_group** out, bool strict,
                                const char* backend) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[init] out is NULL");
  *out = NULL;
  const char* bk = backend ? backend : "any";
  int b;
  if (!strcmp(bk, "ring"))
    b = B_RING;
  else if (!strcmp(bk, "mpi"))
    b = B_MPI;
  else if (!strcmp(bk, "nccl"))
    b = B_NCCL;
  else if (!strcmp(bk, "any")) {
    cmx__dist_env e;
    cmx__dist_env_read(&e);
    b = e.hostfile ? B_RING : e.under_mpirun ? B_MPI : -1;
    /* cmx.launch --backend nccl asks for NCCL (over that host world) */
    const char* want = getenv("CMX_DISTRIBUTED_BACKEND");
    if (b >= 0 && want && !strcmp(want, "nccl") && cmx__nccl_available())
      b = B_NCCL;
  } else
    return cmx__error(CMX_ERR_VALUE,
                      "[init] unknown backend '%s' (expected 'any', 'ring', "
                      "'mpi' or 'nccl')",
                      bk);
  pthread_mutex_lock(&g_lock);
  cmx_group* g = b < 0 ? NULL : start(b);
  cmx_status st = CMX_OK;
  if (!g && strict) {
    if (b < 0)
      cmx__error(CMX_ERR_RUNTIME, "[init] Couldn't initialize any backend");
    st = cmx_last_status();
  } else {
    /* A backend that could not start leaves the default group as it was
     * (the group of one, or a world made before). */
    if (g)
      g_default = g;
    else
      g = &g_single;
    cmx_clear_error();
    *out = cmx_group_retain(g);
  }
  pthread_mutex_unlock(&g_lock);
  return st;
}

cmx_status cmx_group_split(cmx_group** out, cmx_group* g, int color, int key) {
  if (!out) return cmx__error(CMX_ERR_VALUE, "[split] out is NULL");
  *out = NULL;
  if (!g) g = cmx_distributed_default_group();
  if (!g->be || g->size == 1)
    return cmx__error(CMX_ERR_VALUE,
                      "[split] Cannot split the distributed group further.");
  if (color < 0)
    return cmx__error(CMX_ERR_VALUE, "[split] color must be >= 0, got %d",
                      color);
  void* st = NULL;
  int rank = 0, size = 1;
  if (g->be->split(g->st, color, key, &st, &rank, &size) != CMX_OK)
    return cmx_last_status();
  *out = cmx__group_new(g->be, st, rank, size);
  return *out ? CMX_OK : cmx_last_status();
}
