/* The NCCL backend: libnccl.so.2 loaded at run time (dlopen), one GPU per
 * process, collectives enqueued on the CUDA stream of the GPU task that
 * evaluates them. It needs two GPUs: scripts/gpu2-check.sh runs its tests
 * on the lent 2-GPU machine; on a machine without GPUs choosing it is a
 * clear error.
 *
 * Bootstrap: NCCL's unique id is made by rank 0 and shared over a host
 * group (the ring when MLX_HOSTFILE is set, as `cmx.launch --backend nccl`
 * does, else MPI under mpirun), which also carries the collectives of CPU
 * arrays on an NCCL group and the splits (a split splits the host group,
 * then shares a new id). The NCCL communicator itself is created at the
 * first GPU collective, inside the GPU task, so the device's context is
 * current on the calling thread (and every rank reaches that first
 * collective).
 *
 * Failures never hang forever: after enqueuing a collective the task waits
 * for its stream (cuStreamQuery) while polling the communicator's
 * asynchronous error, at most CMX_DISTRIBUTED_TIMEOUT seconds without
 * completion (CMX_NCCL_WAIT=0 leaves the collective in flight, as MLX
 * does, trading the timeout for overlap). An error or a timeout aborts the
 * communicator (ncclCommAbort: it stops the collective's kernels) and the
 * group is dead: every later call on it fails with the first error.
 *
 * The communicator is blocking by default: an enqueue returns once the
 * collective is on the stream. A non-blocking one (CMX_NCCL_BLOCKING=0,
 * ncclConfig_t.blocking = 0) may answer ncclInProgress; every such call
 * is settled by polling ncclCommGetAsyncError. 2x H200 (NVLink), 2026-11-28,
 * all_sum against torch.distributed in the same run: non-blocking 0.73-0.95x of
 * torch's busbw from 1 to 128 MiB (15-26 us more an op), blocking 1.06-2.2x
 * (the data-parallel step and the test suite, killed peers included, the same).
 * A blocking ncclCommInitRank waits for every rank, so a rank that never comes
 * would hang the others there: before it the ranks meet on the host group,
 * whose collectives time out (rank_barrier); past that meeting every rank is
 * inside the init.
 *
 * dtypes: NCCL reduces int8, uint8, int32, uint32, int64, uint64, float16,
 * float32, float64 and bfloat16; bool max/min reduce as uint8, complex64
 * sums as pairs of float32; int16, uint16, bool sums and complex64 max/min
 * are a clear error. Gathers and send/recv move bytes (every dtype).
 *
 * The declarations below are NCCL 2's ABI (nccl.h: ncclUniqueId is 128
 * bytes passed by value; the enums' values; ncclConfig_t's first fields,
 * NCCL copies the `size` bytes given and defaults the rest), written here
 * so cmx builds without NCCL's headers.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distributed/distributed.h"

typedef struct {
  char internal[128];
} nccl_id;
typedef void* nccl_comm;
enum { NCCL_OK = 0, NCCL_INVALID_ARGUMENT = 4, NCCL_IN_PROGRESS = 7 };
enum { N_SUM = 0, N_MAX = 2, N_MIN = 3 };
enum {
  N_INT8 = 0,
  N_UINT8 = 1,
  N_INT32 = 2,
  N_UINT32 = 3,
  N_INT64 = 4,
  N_UINT64 = 5,
  N_FLOAT16 = 6,
  N_FLOAT32 = 7,
  N_FLOAT64 = 8,
  N_BFLOAT16 = 9
};
/* ncclConfig_t as of NCCL 2.17 (the fields cmx sets come first). */
typedef struct nccl_config {
  size_t size;
  unsigned magic, version;
  int blocking, cga_cluster_size, min_ctas, max_ctas;
  const char* net_name;
} nccl_config;

static struct {
  int (*GetUniqueId)(nccl_id*);
  int (*CommInitRank)(nccl_comm*, int, nccl_id, int);
  int (*CommInitRankConfig)(nccl_comm*, int, nccl_id, int, nccl_config*);
  int (*CommDestroy)(nccl_comm);
  int (*CommAbort)(nccl_comm);
  int (*CommGetAsyncError)(nccl_comm, int*);
  int (*AllReduce)(const void*, void*, size_t, int, int, nccl_comm, void*);
  int (*AllGather)(const void*, void*, size_t, int, nccl_comm, void*);
  int (*ReduceScatter)(const void*, void*, size_t, int, int, nccl_comm, void*);
  int (*Send)(const void*, size_t, int, int, nccl_comm, void*);
  int (*Recv)(void*, size_t, int, int, nccl_comm, void*);
  int (*GroupStart)(void);
  int (*GroupEnd)(void);
  const char* (*GetErrorString)(int);
} N;
/* The driver's stream queries (libcuda.so.1 is already loaded by the CUDA
 * backend when a GPU task runs). */
static struct {
  int (*StreamQuery)(void*);
  int (*StreamIsCapturing)(void*, int*);
} CU;
enum { CU_OK = 0, CU_NOT_READY = 600 };
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_loaded;

static void load(void) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
#define SYM(f, name) *(void**)&N.f = dlsym(lib, name)
  SYM(GetUniqueId, "ncclGetUniqueId");
  SYM(CommInitRank, "ncclCommInitRank");
  SYM(CommInitRankConfig, "ncclCommInitRankConfig"); /* optional */
  SYM(CommDestroy, "ncclCommDestroy");
  SYM(CommAbort, "ncclCommAbort");
  SYM(CommGetAsyncError, "ncclCommGetAsyncError");
  SYM(AllReduce, "ncclAllReduce");
  SYM(AllGather, "ncclAllGather");
  SYM(ReduceScatter, "ncclReduceScatter");
  SYM(Send, "ncclSend");
  SYM(Recv, "ncclRecv");
  SYM(GroupStart, "ncclGroupStart");
  SYM(GroupEnd, "ncclGroupEnd");
  SYM(GetErrorString, "ncclGetErrorString");
#undef SYM
  g_loaded = N.GetUniqueId && N.CommInitRank && N.CommDestroy && N.CommAbort &&
             N.CommGetAsyncError && N.AllReduce && N.AllGather &&
             N.ReduceScatter && N.Send && N.Recv && N.GroupStart &&
             N.GroupEnd && N.GetErrorString;
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cu) {
    *(void**)&CU.StreamQuery = dlsym(cu, "cuStreamQuery");
    *(void**)&CU.StreamIsCapturing = dlsym(cu, "cuStreamIsCapturing");
  }
}

bool cmx__nccl_available(void) {
  if (cmx_device_count(CMX_GPU) < 1) return false;
  pthread_once(&g_once, load);
  return g_loaded;
}

typedef struct nccl_st {
  cmx_group* host; /* bootstrap group: ring or MPI (owned) */
  nccl_id id;
  nccl_comm comm; /* made at the first GPU collective */
  pthread_mutex_t lock;
  double timeout_s;
  bool wait;     /* wait for each collective (CMX_NCCL_WAIT, default 1) */
  bool blocking; /* blocking communicator (CMX_NCCL_BLOCKING, default 1) */
  bool dead;     /* aborted: every call fails with why */
  char why[256];
} nccl_st;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Between two polls: yield for the first millisecond, then sleep. */
static void backoff(double since) {
  if (now_s() - since < 1e-3)
    sched_yield();
  else
    usleep(50);
}

static const char* nerr(int rc) {
  return N.GetErrorString ? N.GetErrorString(rc) : "?";
}

/* Aborts the communicator (the group is dead from now on), records why and
 * sets the error; returns its status. */
static cmx_status die(nccl_st* s, const char* op, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static cmx_status die(nccl_st* s, const char* op, const char* fmt, ...) {
  if (!s->dead) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    s->dead = true;
    if (s->comm) N.CommAbort(s->comm);
    s->comm = NULL;
  }
  return cmx__error(CMX_ERR_RUNTIME, "[%s] nccl backend (rank %d): %s", op,
                    s->host->rank, s->why);
}

/* rc of an NCCL call on s->comm: waits while it is in progress (at most
 * the timeout); an error aborts the communicator. */
static cmx_status settle(nccl_st* s, const char* op, const char* what, int rc) {
  double t0 = now_s();
  while (rc == NCCL_IN_PROGRESS && s->comm) {
    int a = NCCL_IN_PROGRESS;
    int q = N.CommGetAsyncError(s->comm, &a);
    rc = q != NCCL_OK ? q : a;
    if (rc == NCCL_IN_PROGRESS) {
      if (now_s() - t0 > s->timeout_s)
        return die(s, op,
                   "%s made no progress for %.0f s (a peer is missing or "
                   "dead; timeout: CMX_DISTRIBUTED_TIMEOUT)",
                   what, s->timeout_s);
      backoff(t0);
    }
  }
  if (rc != NCCL_OK) return die(s, op, "%s failed: %s", what, nerr(rc));
  return CMX_OK;
}

/* Waits until the stream has run the enqueued collective, polling the
 * communicator's asynchronous error, at most the timeout. */
static cmx_status wait_stream(nccl_st* s, const char* op, const char* what,
                              void* stream) {
  if (!s->wait || !CU.StreamQuery) return CMX_OK;
  int capturing = 0; /* a captured graph runs later: nothing to wait for */
  if (CU.StreamIsCapturing &&
      CU.StreamIsCapturing(stream, &capturing) == CU_OK && capturing)
    return CMX_OK;
  double t0 = now_s();
  for (;;) {
    int r = CU.StreamQuery(stream);
    if (r == CU_OK) return CMX_OK;
    if (r != CU_NOT_READY)
      return die(s, op, "%s: the CUDA stream failed (CUDA error %d)", what, r);
    int a = NCCL_OK;
    if (N.CommGetAsyncError(s->comm, &a) == NCCL_OK && a != NCCL_OK &&
        a != NCCL_IN_PROGRESS)
      return die(s, op, "%s failed: %s", what, nerr(a));
    if (now_s() - t0 > s->timeout_s)
      return die(s, op,
                 "%s did not complete in %.0f s (a peer is missing, dead or "
                 "in another collective; timeout: CMX_DISTRIBUTED_TIMEOUT)",
                 what, s->timeout_s);
    backoff(t0);
  }
}

/* Rank 0's id, shared over the host group. */
static cmx_status share_id(nccl_st* s, const char* op) {
  cmx_group* h = s->host;
  nccl_id mine;
  memset(&mine, 0, sizeof mine);
  if (h->rank == 0) {
    int rc = N.GetUniqueId(&mine);
    if (rc != NCCL_OK)
      return cmx__error(CMX_ERR_RUNTIME,
                        "[%s] nccl backend: ncclGetUniqueId failed: %s", op,
                        nerr(rc));
  }
  nccl_id* all = malloc(sizeof(nccl_id) * (size_t)h->size);
  if (!all) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  cmx_status st = h->be->all_gather(h->st, op, &mine, all, sizeof mine);
  if (st == CMX_OK) s->id = all[0];
  free(all);
  return st;
}

static bool env_on(const char* name, bool dflt) {
  const char* v = getenv(name);
  if (!v || !*v) return dflt;
  return strcmp(v, "0") != 0 && strcmp(v, "false") != 0;
}

static nccl_st* st_new(cmx_group* host, const char* op) {
  nccl_st* s = calloc(1, sizeof *s);
  if (!s) {
    cmx_group_release(host);
    return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of memory", op);
  }
  cmx__dist_env e;
  cmx__dist_env_read(&e);
  s->host = host;
  s->timeout_s = e.timeout_s;
  s->wait = env_on("CMX_NCCL_WAIT", true);
  s->blocking = env_on("CMX_NCCL_BLOCKING", true);
  pthread_mutex_init(&s->lock, NULL);
  if (host->size > 1 && share_id(s, op) != CMX_OK) {
    cmx_group_release(host);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
  }
  return s;
}

void* cmx__nccl_init(int* rank, int* size) {
  if (cmx_device_count(CMX_GPU) < 1)
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] nccl backend: no GPU is available here (NCCL "
                     "runs collectives on CUDA GPUs, one per process)");
  if (!cmx__nccl_available())
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] nccl backend: cannot load libnccl.so.2 (install "
                     "NCCL 2, e.g. the nvidia-nccl-cu12 wheel or libnccl2, "
                     "and put it on the loader's path)");
  cmx_group* host = cmx__dist_host_world();
  if (!host) return NULL;
  nccl_st* s = st_new(host, "init");
  if (!s) return NULL;
  *rank = host->rank;
  *size = host->size;
  return s;
}

/* Every rank of the host group has reached this point: two all_gathers
 * of one int over it, each failing after the host group's timeout when a
 * rank never comes. Two, because a rank that timed out in the first may
 * have left its message in the transport: a late rank then completes the
 * first round from that stale message, but the second round's message
 * is only sent by ranks that completed the first, so it fails there. */
static cmx_status rank_barrier(nccl_st* s, const char* op) {
  cmx_group* h = s->host;
  int* all = malloc(sizeof(int) * (size_t)h->size);
  if (!all) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  cmx_status st = CMX_OK;
  for (int round = 0; round < 2 && st == CMX_OK; round++) {
    int mine = h->rank;
    st = h->be->all_gather(h->st, op, &mine, all, sizeof mine);
  }
  free(all);
  return st;
}

/* The communicator, made on first use (inside a GPU task); the lock is
 * held by the caller. */
static cmx_status comm(nccl_st* s, const char* op) {
  if (s->dead)
    return cmx__error(CMX_ERR_RUNTIME, "[%s] nccl backend (rank %d): %s", op,
                      s->host->rank, s->why);
  if (s->comm) return CMX_OK;
  int rc;
  if (!s->blocking && N.CommInitRankConfig) {
    nccl_config c = {sizeof c, 0xcafebeef, 21700,   0,
                     INT_MIN,  INT_MIN,    INT_MIN, NULL};
    rc =
        N.CommInitRankConfig(&s->comm, s->host->size, s->id, s->host->rank, &c);
    if (rc == NCCL_INVALID_ARGUMENT && !s->comm) /* an NCCL without it */
      rc = N.CommInitRank(&s->comm, s->host->size, s->id, s->host->rank);
  } else {
    if (s->host->size > 1) {
      cmx_status st = rank_barrier(s, op);
      if (st != CMX_OK) return st;
    }
    rc = N.CommInitRank(&s->comm, s->host->size, s->id, s->host->rank);
  }
  if (rc != NCCL_OK && rc != NCCL_IN_PROGRESS && !s->comm)
    return die(s, op, "ncclCommInitRank failed: %s", nerr(rc));
  return settle(s, op, "ncclCommInitRank", rc);
}

/* NCCL's type for a reduction `red` of dt (count adjusted for complex64),
 * or -1 with the error set. */
static int rtype(const char* op, cmx_dtype dt, cmx__red_op red, size_t* count) {
  switch (dt) {
    case CMX_INT8:
      return N_INT8;
    case CMX_UINT8:
      return N_UINT8;
    case CMX_INT32:
      return N_INT32;
    case CMX_UINT32:
      return N_UINT32;
    case CMX_INT64:
      return N_INT64;
    case CMX_UINT64:
      return N_UINT64;
    case CMX_FLOAT16:
      return N_FLOAT16;
    case CMX_FLOAT32:
      return N_FLOAT32;
    case CMX_FLOAT64:
      return N_FLOAT64;
    case CMX_BFLOAT16:
      return N_BFLOAT16;
    case CMX_BOOL: /* max = any, min = all over 0/1 bytes */
      if (red != CMX__RED_SUM) return N_UINT8;
      break;
    case CMX_COMPLEX64:
      if (red == CMX__RED_SUM) {
        *count *= 2;
        return N_FLOAT32;
      }
      break;
    default:
      break;
  }
  cmx__error(
      CMX_ERR_TYPE,
      "[%s] nccl backend: NCCL cannot reduce %s%s (cast the array, "
      "e.g. to int32 or float32)",
      op, cmx_dtype_name(dt),
      dt == CMX_BOOL || dt == CMX_COMPLEX64 ? " with this operation" : "");
  return -1;
}

/* One NCCL call on the group's communicator (made first if needed), then
 * the wait for its stream; serialized per group. */
#define ISSUE(s, op, what, stream, CALL)                             \
  do {                                                               \
    pthread_mutex_lock(&(s)->lock);                                  \
    cmx_status st_ = comm((s), (op));                                \
    if (st_ == CMX_OK) st_ = settle((s), (op), what, CALL);          \
    if (st_ == CMX_OK) st_ = wait_stream((s), (op), what, (stream)); \
    pthread_mutex_unlock(&(s)->lock);                                \
    return st_;                                                      \
  } while (0)

static cmx_status gpu_all_reduce(void* st, const char* op, uint64_t in,
                                 uint64_t out, size_t count, cmx_dtype dt,
                                 cmx__red_op red, void* stream) {
  nccl_st* s = st;
  int t = rtype(op, dt, red, &count);
  if (t < 0) return cmx_last_status();
  static const int nops[3] = {N_SUM, N_MAX, N_MIN};
  ISSUE(s, op, "ncclAllReduce", stream,
        N.AllReduce((const void*)(uintptr_t)in, (void*)(uintptr_t)out, count, t,
                    nops[red], s->comm, stream));
}

static cmx_status gpu_all_gather(void* st, const char* op, uint64_t in,
                                 uint64_t out, size_t bytes, void* stream) {
  nccl_st* s = st;
  ISSUE(s, op, "ncclAllGather", stream,
        N.AllGather((const void*)(uintptr_t)in, (void*)(uintptr_t)out, bytes,
                    N_UINT8, s->comm, stream));
}

static cmx_status gpu_reduce_scatter(void* st, const char* op, uint64_t in,
                                     uint64_t out, size_t count, cmx_dtype dt,
                                     void* stream) {
  nccl_st* s = st;
  int t = rtype(op, dt, CMX__RED_SUM, &count);
  if (t < 0) return cmx_last_status();
  ISSUE(s, op, "ncclReduceScatter", stream,
        N.ReduceScatter((const void*)(uintptr_t)in, (void*)(uintptr_t)out,
                        count, t, N_SUM, s->comm, stream));
}

/* A point-to-point call inside ncclGroupStart/End (NCCL's form for
 * send/recv; the group end is what launches it). */
static int p2p(bool send, uint64_t buf, size_t bytes, int peer, nccl_comm c,
               void* stream) {
  int rc = N.GroupStart();
  if (rc != NCCL_OK) return rc;
  int r1 =
      send
          ? N.Send((const void*)(uintptr_t)buf, bytes, N_UINT8, peer, c, stream)
          : N.Recv((void*)(uintptr_t)buf, bytes, N_UINT8, peer, c, stream);
  int r2 = N.GroupEnd();
  return r1 != NCCL_OK && r1 != NCCL_IN_PROGRESS ? r1 : r2;
}

static cmx_status gpu_send(void* st, const char* op, uint64_t buf, size_t bytes,
                           int dst, void* stream) {
  nccl_st* s = st;
  ISSUE(s, op, "ncclSend", stream, p2p(true, buf, bytes, dst, s->comm, stream));
}

static cmx_status gpu_recv(void* st, const char* op, uint64_t buf, size_t bytes,
                           int src, void* stream) {
  nccl_st* s = st;
  ISSUE(s, op, "ncclRecv", stream,
        p2p(false, buf, bytes, src, s->comm, stream));
}

/* CPU arrays on an NCCL group go over the host group. */
static cmx_status host_all_reduce(void* st, const char* op, const void* in,
                                  void* out, size_t count, cmx_dtype dt,
                                  cmx__red_op red) {
  cmx_group* h = ((nccl_st*)st)->host;
  return h->be->all_reduce(h->st, op, in, out, count, dt, red);
}
static cmx_status host_all_gather(void* st, const char* op, const void* in,
                                  void* out, size_t bytes) {
  cmx_group* h = ((nccl_st*)st)->host;
  return h->be->all_gather(h->st, op, in, out, bytes);
}
static cmx_status host_reduce_scatter(void* st, const char* op, const void* in,
                                      void* out, size_t count, cmx_dtype dt) {
  cmx_group* h = ((nccl_st*)st)->host;
  return h->be->reduce_scatter(h->st, op, in, out, count, dt);
}
static cmx_status host_send(void* st, const char* op, const void* buf,
                            size_t bytes, int dst) {
  cmx_group* h = ((nccl_st*)st)->host;
  return h->be->send(h->st, op, buf, bytes, dst);
}
static cmx_status host_recv(void* st, const char* op, void* buf, size_t bytes,
                            int src) {
  cmx_group* h = ((nccl_st*)st)->host;
  return h->be->recv(h->st, op, buf, bytes, src);
}

static cmx_status nccl_split(void* st, int color, int key, void** out,
                             int* rank, int* size) {
  cmx_group* sub = NULL;
  if (cmx_group_split(&sub, ((nccl_st*)st)->host, color, key) != CMX_OK)
    return cmx_last_status();
  nccl_st* s = st_new(sub, "split");
  if (!s) return cmx_last_status();
  *out = s;
  *rank = sub->rank;
  *size = sub->size;
  return CMX_OK;
}

static void nccl_destroy(void* st) {
  nccl_st* s = st;
  if (s->comm) N.CommDestroy(s->comm);
  cmx_group_release(s->host);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

const cmx__dist_backend cmx__nccl_backend = {
    .name = "nccl",
    .all_reduce = host_all_reduce,
    .all_gather = host_all_gather,
    .reduce_scatter = host_reduce_scatter,
    .send = host_send,
    .recv = host_recv,
    .gpu_all_reduce = gpu_all_reduce,
    .gpu_all_gather = gpu_all_gather,
    .gpu_reduce_scatter = gpu_reduce_scatter,
    .gpu_send = gpu_send,
    .gpu_recv = gpu_recv,
    .split = nccl_split,
    .destroy = nccl_destroy,
};
