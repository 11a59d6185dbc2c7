/* The MPI backend: OpenMPI's libmpi.so.40 loaded at run time (dlopen), so
 * cmx builds and runs without it. OpenMPI's handles (MPI_Comm,
 * MPI_Datatype, MPI_Op) are pointers to its predefined global objects, so
 * the constants are the addresses of those symbols (ompi_mpi_comm_world,
 * ompi_mpi_float, ompi_mpi_op_sum ...), found with dlsym.
 *
 * Collectives run on cmx's cpu stream workers, so MPI is initialized with
 * MPI_THREAD_SERIALIZED and every call holds one lock. float16, bfloat16
 * (no MPI type) and complex max/min reduce by an all-gather of the bytes
 * and a local reduction. A dead process is MPI's to handle: mpirun ends
 * the job.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/distributed.h"

typedef void* H; /* any OpenMPI handle */

static struct {
  void* lib;
  int (*Initialized)(int*);
  int (*Finalized)(int*);
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)(void);
  int (*Comm_rank)(H, int*);
  int (*Comm_size)(H, int*);
  int (*Comm_split)(H, int, int, H*);
  int (*Comm_free)(H*);
  int (*Allreduce)(const void*, void*, int, H, H, H);
  int (*Allgather)(const void*, int, H, void*, int, H, H);
  int (*Reduce_scatter_block)(const void*, void*, int, H, H, H);
  int (*Send)(const void*, int, H, int, int, H);
  int (*Recv)(void*, int, H, int, int, H, void*);
  H world, byte, op[3], type[CMX_COMPLEX64 + 1];
} M;
static pthread_mutex_t g_mpi = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static bool g_loaded;

#define MPI_IN_PLACE_ ((void*)1)

static void load(void) {
  void* lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return;
#define SYM(field, name) *(void**)&M.field = dlsym(lib, name)
  SYM(Initialized, "MPI_Initialized");
  SYM(Finalized, "MPI_Finalized");
  SYM(Init_thread, "MPI_Init_thread");
  SYM(Finalize, "MPI_Finalize");
  SYM(Comm_rank, "MPI_Comm_rank");
  SYM(Comm_size, "MPI_Comm_size");
  SYM(Comm_split, "MPI_Comm_split");
  SYM(Comm_free, "MPI_Comm_free");
  SYM(Allreduce, "MPI_Allreduce");
  SYM(Allgather, "MPI_Allgather");
  SYM(Reduce_scatter_block, "MPI_Reduce_scatter_block");
  SYM(Send, "MPI_Send");
  SYM(Recv, "MPI_Recv");
#undef SYM
  M.world = dlsym(lib, "ompi_mpi_comm_world");
  M.byte = dlsym(lib, "ompi_mpi_byte");
  M.op[CMX__RED_SUM] = dlsym(lib, "ompi_mpi_op_sum");
  M.op[CMX__RED_MAX] = dlsym(lib, "ompi_mpi_op_max");
  M.op[CMX__RED_MIN] = dlsym(lib, "ompi_mpi_op_min");
  static const struct {
    cmx_dtype dt;
    const char* sym;
  } types[] = {
      {CMX_BOOL, "ompi_mpi_c_bool"},
      {CMX_UINT8, "ompi_mpi_uint8_t"},
      {CMX_UINT16, "ompi_mpi_uint16_t"},
      {CMX_UINT32, "ompi_mpi_uint32_t"},
      {CMX_UINT64, "ompi_mpi_uint64_t"},
      {CMX_INT8, "ompi_mpi_int8_t"},
      {CMX_INT16, "ompi_mpi_int16_t"},
      {CMX_INT32, "ompi_mpi_int32_t"},
      {CMX_INT64, "ompi_mpi_int64_t"},
      {CMX_FLOAT32, "ompi_mpi_float"},
      {CMX_FLOAT64, "ompi_mpi_double"},
      {CMX_COMPLEX64, "ompi_mpi_c_float_complex"},
  };
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    M.type[types[i].dt] = dlsym(lib, types[i].sym);
  void** fns = (void**)&M.Initialized;
  for (int i = 0; i < 13; i++)
    if (!fns[i]) return;
  if (!M.world || !M.byte || !M.op[0] || !M.op[1] || !M.op[2]) return;
  M.lib = lib;
  g_loaded = true;
}

bool cmx__mpi_available(void) {
  pthread_once(&g_load_once, load);
  return g_loaded;
}

static void finalize(void) {
  int fin = 1;
  pthread_mutex_lock(&g_mpi);
  if (M.Finalized(&fin) == 0 && !fin) M.Finalize();
  pthread_mutex_unlock(&g_mpi);
}

typedef struct mpi_st {
  H comm;
  int rank, size;
} mpi_st;

static cmx_status fail(const char* op, const char* what, int rc) {
  return cmx__error(CMX_ERR_RUNTIME, "[%s] mpi backend: %s failed (error %d)",
                    op, what, rc);
}

#define CALL(op, name, ...)                             \
  do {                                                  \
    pthread_mutex_lock(&g_mpi);                         \
    int rc_ = M.name(__VA_ARGS__);                      \
    pthread_mutex_unlock(&g_mpi);                       \
    if (rc_ != 0) return fail((op), "MPI_" #name, rc_); \
  } while (0)

static bool too_big(size_t n) {
  return n > (size_t)0x7fffffff;
}

static cmx_status mpi_all_gather(void* st, const char* op, const void* in,
                                 void* out, size_t bytes) {
  mpi_st* g = st;
  if (too_big(bytes))
    return cmx__error(CMX_ERR_VALUE, "[%s] mpi backend: message too large", op);
  CALL(op, Allgather, in, (int)bytes, M.byte, out, (int)bytes, M.byte, g->comm);
  return CMX_OK;
}

static cmx_status mpi_all_reduce(void* st, const char* op, const void* in,
                                 void* out, size_t count, cmx_dtype dt,
                                 cmx__red_op red) {
  mpi_st* g = st;
  H type = M.type[dt];
  size_t es = cmx_dtype_size(dt);
  if (too_big(count))
    return cmx__error(CMX_ERR_VALUE, "[%s] mpi backend: message too large", op);
  if (type && !(dt == CMX_COMPLEX64 && red != CMX__RED_SUM) &&
      !(dt == CMX_BOOL && red == CMX__RED_SUM)) {
    CALL(op, Allreduce, in == out ? MPI_IN_PLACE_ : in, out, (int)count, type,
         M.op[red], g->comm);
    return CMX_OK;
  }
  /* No MPI type or op: gather everything, reduce here. */
  char* all = malloc(count * es * (size_t)g->size + 1);
  if (!all) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  cmx_status s = mpi_all_gather(st, op, in, all, count * es);
  if (s == CMX_OK) {
    memcpy(out, all, count * es);
    for (int r = 1; r < g->size; r++)
      cmx__dist_reduce(out, out, all + (size_t)r * count * es, count, dt, red);
  }
  free(all);
  return s;
}

static cmx_status mpi_reduce_scatter(void* st, const char* op, const void* in,
                                     void* out, size_t count, cmx_dtype dt) {
  mpi_st* g = st;
  size_t es = cmx_dtype_size(dt);
  if (M.type[dt] && dt != CMX_BOOL && !too_big(count)) {
    CALL(op, Reduce_scatter_block, in, out, (int)count, M.type[dt],
         M.op[CMX__RED_SUM], g->comm);
    return CMX_OK;
  }
  size_t total = count * (size_t)g->size;
  char* buf = malloc(total * es + 1);
  if (!buf) return cmx__error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  cmx_status s = mpi_all_reduce(st, op, in, buf, total, dt, CMX__RED_SUM);
  if (s == CMX_OK) memcpy(out, buf + (size_t)g->rank * count * es, count * es);
  free(buf);
  return s;
}

static cmx_status mpi_send(void* st, const char* op, const void* buf,
                           size_t bytes, int dst) {
  mpi_st* g = st;
  if (too_big(bytes))
    return cmx__error(CMX_ERR_VALUE, "[%s] mpi backend: message too large", op);
  CALL(op, Send, buf, (int)bytes, M.byte, dst, 0, g->comm);
  return CMX_OK;
}

static cmx_status mpi_recv(void* st, const char* op, void* buf, size_t bytes,
                           int src) {
  mpi_st* g = st;
  if (too_big(bytes))
    return cmx__error(CMX_ERR_VALUE, "[%s] mpi backend: message too large", op);
  CALL(op, Recv, buf, (int)bytes, M.byte, src, 0, g->comm, NULL);
  return CMX_OK;
}

static cmx_status mpi_split(void* st, int color, int key, void** out, int* rank,
                            int* size) {
  mpi_st* g = st;
  mpi_st* sub = calloc(1, sizeof *sub);
  if (!sub) return cmx__error(CMX_ERR_MEMORY, "[split] out of memory");
  pthread_mutex_lock(&g_mpi);
  int rc = M.Comm_split(g->comm, color, key < 0 ? g->rank : key, &sub->comm);
  if (rc == 0) rc = M.Comm_rank(sub->comm, &sub->rank);
  if (rc == 0) rc = M.Comm_size(sub->comm, &sub->size);
  pthread_mutex_unlock(&g_mpi);
  if (rc != 0) {
    free(sub);
    return fail("split", "MPI_Comm_split", rc);
  }
  *out = sub;
  *rank = sub->rank;
  *size = sub->size;
  return CMX_OK;
}

static void mpi_destroy(void* st) {
  mpi_st* g = st;
  int fin = 1;
  pthread_mutex_lock(&g_mpi);
  if (g->comm != M.world && M.Finalized(&fin) == 0 && !fin)
    M.Comm_free(&g->comm);
  pthread_mutex_unlock(&g_mpi);
  free(g);
}

const cmx__dist_backend cmx__mpi_backend = {
    .name = "mpi",
    .all_reduce = mpi_all_reduce,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .send = mpi_send,
    .recv = mpi_recv,
    .split = mpi_split,
    .destroy = mpi_destroy,
};

void* cmx__mpi_init(int* rank, int* size) {
  if (!cmx__mpi_available())
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] mpi backend: cannot load libmpi.so.40 (install "
                     "OpenMPI: apt-get install openmpi-bin)");
  cmx__dist_env e;
  cmx__dist_env_read(&e);
  if (!e.under_mpirun) /* a singleton MPI_Init would spawn OpenMPI's daemon */
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] mpi backend: this process was not started by "
                     "mpirun (or python -m cmx.launch --backend mpi)");
  int inited = 0, provided = 0;
  pthread_mutex_lock(&g_mpi);
  M.Initialized(&inited);
  int rc =
      inited ? 0 : M.Init_thread(NULL, NULL, 2 /* SERIALIZED */, &provided);
  pthread_mutex_unlock(&g_mpi);
  if (rc != 0) return CMX__FAIL(CMX_ERR_RUNTIME, "[init] MPI_Init failed");
  if (!inited) atexit(finalize);
  mpi_st* g = calloc(1, sizeof *g);
  if (!g) return CMX__FAIL(CMX_ERR_MEMORY, "[init] out of memory");
  g->comm = M.world;
  M.Comm_rank(g->comm, &g->rank);
  M.Comm_size(g->comm, &g->size);
  *rank = g->rank;
  *size = g->size;
  return g;
}
