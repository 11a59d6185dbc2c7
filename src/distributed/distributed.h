/* The distributed layer: groups and the communication backends behind them
 * (ring.c, mpi.c, nccl.c), shared by the ops (ops/distributed.c) and the
 * kernels (backend/cpu/distributed.c).
 *
 * A backend is a vtable over an opaque per-group state. Its functions work
 * on host buffers, block until done, and return CMX_OK or set an error
 * naming `op` (the op the user called) and return its status. After an
 * error a backend closes its connections (the group is dead), so that
 * every peer fails too rather than waiting.
 */
#ifndef CMX_DISTRIBUTED_INTERNAL_H
#define CMX_DISTRIBUTED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cmx/distributed.h"
#include "core/internal.h"

typedef enum cmx__red_op {
  CMX__RED_SUM = 0,
  CMX__RED_MAX = 1,
  CMX__RED_MIN = 2
} cmx__red_op;

typedef struct cmx__dist_backend {
  const char* name;
  /* out = op over ranks of in (count elements of dt); in may be out. */
  cmx_status (*all_reduce)(void* st, const char* op, const void* in, void* out,
                           size_t count, cmx_dtype dt, cmx__red_op red);
  /* out (size * bytes) = every rank's in (bytes), in rank order. */
  cmx_status (*all_gather)(void* st, const char* op, const void* in, void* out,
                           size_t bytes);
  /* out (count elements) = part `rank` of the sum of in (size * count). */
  cmx_status (*reduce_scatter)(void* st, const char* op, const void* in,
                               void* out, size_t count, cmx_dtype dt);
  cmx_status (*send)(void* st, const char* op, const void* buf, size_t bytes,
                     int dst);
  cmx_status (*recv)(void* st, const char* op, void* buf, size_t bytes,
                     int src);
  /* The same on GPU memory (device pointers as uint64, the CUDA stream to
   * enqueue on as void*), called from the GPU kernels inside a GPU task;
   * NULL for the backends that move host memory only (ring, MPI). */
  cmx_status (*gpu_all_reduce)(void* st, const char* op, uint64_t in,
                               uint64_t out, size_t count, cmx_dtype dt,
                               cmx__red_op red, void* stream);
  cmx_status (*gpu_all_gather)(void* st, const char* op, uint64_t in,
                               uint64_t out, size_t bytes, void* stream);
  cmx_status (*gpu_reduce_scatter)(void* st, const char* op, uint64_t in,
                                   uint64_t out, size_t count, cmx_dtype dt,
                                   void* stream);
  cmx_status (*gpu_send)(void* st, const char* op, uint64_t buf, size_t bytes,
                         int dst, void* stream);
  cmx_status (*gpu_recv)(void* st, const char* op, uint64_t buf, size_t bytes,
                         int src, void* stream);
  /* A new state for the processes passing color; writes its rank/size. */
  cmx_status (*split)(void* st, int color, int key, void** out, int* rank,
                      int* size);
  void (*destroy)(void* st);
} cmx__dist_backend;

struct cmx_group {
  int refs; /* atomic */
  int rank, size;
  const cmx__dist_backend* be; /* NULL: the group of one */
  void* st;
};

/* Makes a group owning st (destroyed with it); NULL on allocation failure
 * (st destroyed, error set). */
cmx_group* cmx__group_new(const cmx__dist_backend* be, void* st, int rank,
                          int size);

/* The ring's or MPI's world group (from the environment: MLX_HOSTFILE,
 * else mpirun's), started if needed: a new reference, or NULL with the
 * error set. For NCCL's bootstrap, called while a world is started. */
cmx_group* cmx__dist_host_world(void);

/* Backends' constructors: a world state, or NULL with the error set (the
 * message says why the backend cannot start). */
void* cmx__ring_init(int* rank, int* size);
void* cmx__mpi_init(int* rank, int* size);
bool cmx__mpi_available(void);
void* cmx__nccl_init(int* rank, int* size);
bool cmx__nccl_available(void);
extern const cmx__dist_backend cmx__ring_backend, cmx__mpi_backend,
    cmx__nccl_backend;

/* The collectives' internal ops (ops/distributed.c), for the transform
 * rules: red is a cmx__red_op; scope-owned results. */
cmx_array cmx__all_reduce(cmx_array x, cmx_group* g, int red, cmx_stream s);
cmx_array cmx__all_gather(cmx_array x, cmx_group* g, cmx_stream s);
cmx_array cmx__sum_scatter(cmx_array x, cmx_group* g, cmx_stream s);

/* dst[i] = red(a[i], b[i]) for n elements of dt (reduce.c); dst may be
 * a or b. */
void cmx__dist_reduce(void* dst, const void* a, const void* b, size_t n,
                      cmx_dtype dt, cmx__red_op red);

#endif
