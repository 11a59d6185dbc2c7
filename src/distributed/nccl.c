/* The NCCL backend: libnccl.so.2 loaded at run time (dlopen), one GPU per
 * process, collectives enqueued on the CUDA stream of the GPU task that
 * evaluates them. UNTESTED: it needs two GPUs (the lent 2-GPU machine);
 * on a machine without GPUs choosing it is a clear error.
 *
 * Bootstrap: NCCL's unique id is made by rank 0 and shared over a host
 * group (the ring when MLX_HOSTFILE is set, else MPI under mpirun), which
 * also carries the collectives of CPU arrays on an NCCL group and the
 * splits (a split splits the host group, then shares a new id). The NCCL
 * communicator itself is created at the first GPU collective, inside the
 * GPU task, so the device's context is current on the calling thread (and
 * every rank reaches that first collective).
 *
 * The declarations below are NCCL 2's ABI (nccl.h of CUDA's toolkit,
 * NCCL 2.28: ncclUniqueId is 128 bytes passed by value; the enums'
 * values), written here so cmx builds without NCCL's headers.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/distributed.h"

typedef struct {
  char internal[128];
} nccl_id;
typedef void* nccl_comm;
enum { NCCL_OK = 0 };
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

static struct {
  int (*GetUniqueId)(nccl_id*);
  int (*CommInitRank)(nccl_comm*, int, nccl_id, int);
  int (*CommDestroy)(nccl_comm);
  int (*AllReduce)(const void*, void*, size_t, int, int, nccl_comm, void*);
  int (*AllGather)(const void*, void*, size_t, int, nccl_comm, void*);
  int (*ReduceScatter)(const void*, void*, size_t, int, int, nccl_comm, void*);
  int (*Send)(const void*, size_t, int, int, nccl_comm, void*);
  int (*Recv)(void*, size_t, int, int, nccl_comm, void*);
  const char* (*GetErrorString)(int);
} N;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_loaded;

static void load(void) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
#define SYM(f, name) *(void**)&N.f = dlsym(lib, name)
  SYM(GetUniqueId, "ncclGetUniqueId");
  SYM(CommInitRank, "ncclCommInitRank");
  SYM(CommDestroy, "ncclCommDestroy");
  SYM(AllReduce, "ncclAllReduce");
  SYM(AllGather, "ncclAllGather");
  SYM(ReduceScatter, "ncclReduceScatter");
  SYM(Send, "ncclSend");
  SYM(Recv, "ncclRecv");
  SYM(GetErrorString, "ncclGetErrorString");
#undef SYM
  g_loaded = N.GetUniqueId && N.CommInitRank && N.CommDestroy && N.AllReduce &&
             N.AllGather && N.ReduceScatter && N.Send && N.Recv &&
             N.GetErrorString;
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
} nccl_st;

static cmx_status nfail(const char* op, const char* what, int rc) {
  return cmx__error(CMX_ERR_RUNTIME, "[%s] nccl backend: %s failed: %s", op,
                    what, N.GetErrorString ? N.GetErrorString(rc) : "?");
}

/* Rank 0's id, shared over the host group. */
static cmx_status share_id(nccl_st* s, const char* op) {
  cmx_group* h = s->host;
  nccl_id mine;
  memset(&mine, 0, sizeof mine);
  if (h->rank == 0) {
    int rc = N.GetUniqueId(&mine);
    if (rc != NCCL_OK) return nfail(op, "ncclGetUniqueId", rc);
  }
  nccl_id* all = malloc(sizeof(nccl_id) * (size_t)h->size);
  if (!all) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  cmx_status st = h->be->all_gather(h->st, op, &mine, all, sizeof mine);
  if (st == CMX_OK) s->id = all[0];
  free(all);
  return st;
}

static nccl_st* st_new(cmx_group* host, const char* op) {
  nccl_st* s = calloc(1, sizeof *s);
  if (!s) {
    cmx_group_release(host);
    return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of memory", op);
  }
  s->host = host;
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
                     "[init] nccl backend: cannot load libnccl.so.2");
  cmx_group* host = cmx__dist_host_world();
  if (!host) return NULL;
  nccl_st* s = st_new(host, "init");
  if (!s) return NULL;
  *rank = host->rank;
  *size = host->size;
  return s;
}

/* The communicator, made on first use (inside a GPU task). */
static cmx_status comm(nccl_st* s, const char* op) {
  pthread_mutex_lock(&s->lock);
  int rc = NCCL_OK;
  if (!s->comm)
    rc = N.CommInitRank(&s->comm, s->host->size, s->id, s->host->rank);
  pthread_mutex_unlock(&s->lock);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclCommInitRank", rc);
}

static int ntype(cmx_dtype dt) {
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
    default:
      return -1;
  }
}

static cmx_status gpu_all_reduce(void* st, const char* op, uint64_t in,
                                 uint64_t out, size_t count, cmx_dtype dt,
                                 cmx__red_op red, void* stream) {
  nccl_st* s = st;
  int t = ntype(dt);
  if (dt == CMX_COMPLEX64 && red == CMX__RED_SUM) t = N_FLOAT32, count *= 2;
  if (t < 0)
    return cmx__error(CMX_ERR_TYPE, "[%s] nccl backend: %s is not supported",
                      op, cmx_dtype_name(dt));
  static const int nops[3] = {N_SUM, N_MAX, N_MIN};
  if (comm(s, op) != CMX_OK) return cmx_last_status();
  int rc = N.AllReduce((const void*)(uintptr_t)in, (void*)(uintptr_t)out, count,
                       t, nops[red], s->comm, stream);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclAllReduce", rc);
}

static cmx_status gpu_all_gather(void* st, const char* op, uint64_t in,
                                 uint64_t out, size_t bytes, void* stream) {
  nccl_st* s = st;
  if (comm(s, op) != CMX_OK) return cmx_last_status();
  int rc = N.AllGather((const void*)(uintptr_t)in, (void*)(uintptr_t)out, bytes,
                       N_UINT8, s->comm, stream);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclAllGather", rc);
}

static cmx_status gpu_reduce_scatter(void* st, const char* op, uint64_t in,
                                     uint64_t out, size_t count, cmx_dtype dt,
                                     void* stream) {
  nccl_st* s = st;
  int t = ntype(dt);
  if (dt == CMX_COMPLEX64) t = N_FLOAT32, count *= 2;
  if (t < 0)
    return cmx__error(CMX_ERR_TYPE, "[%s] nccl backend: %s is not supported",
                      op, cmx_dtype_name(dt));
  if (comm(s, op) != CMX_OK) return cmx_last_status();
  int rc = N.ReduceScatter((const void*)(uintptr_t)in, (void*)(uintptr_t)out,
                           count, t, N_SUM, s->comm, stream);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclReduceScatter", rc);
}

static cmx_status gpu_send(void* st, const char* op, uint64_t buf, size_t bytes,
                           int dst, void* stream) {
  nccl_st* s = st;
  if (comm(s, op) != CMX_OK) return cmx_last_status();
  int rc =
      N.Send((const void*)(uintptr_t)buf, bytes, N_UINT8, dst, s->comm, stream);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclSend", rc);
}

static cmx_status gpu_recv(void* st, const char* op, uint64_t buf, size_t bytes,
                           int src, void* stream) {
  nccl_st* s = st;
  if (comm(s, op) != CMX_OK) return cmx_last_status();
  int rc = N.Recv((void*)(uintptr_t)buf, bytes, N_UINT8, src, s->comm, stream);
  return rc == NCCL_OK ? CMX_OK : nfail(op, "ncclRecv", rc);
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
