/* cmx/distributed.h: communication between processes (MLX's
 * mx.distributed).
 *
 * A group is a set of processes that run the same program; each has a rank
 * in [0, size). cmx_distributed_init gives this process's world group over
 * a backend: "ring" (TCP sockets, MLX's MLX_HOSTFILE / MLX_RANK
 * environment), "mpi" (OpenMPI loaded at run time, started by mpirun) or
 * "nccl" (GPUs; loaded at run time). Without any, the world is the group of
 * this process alone, on which every collective is a no-op.
 *
 * Collectives are ops: they build lazy arrays like every other op and run
 * when evaluated, on a cpu stream (ring, mpi). Every process of the group
 * must evaluate the same collectives in the same order.
 *
 *     cmx_group* world;
 *     cmx_distributed_init(&world, false, "any");
 *     cmx_array total;
 *     cmx_distributed_all_sum(&total, x, world, CMX_STREAM_DEFAULT);
 *     cmx_eval(total);              // the sum of x over every process
 *     cmx_array_release(total);
 *     cmx_group_release(world);
 *
 * Errors: a dead peer, a closed connection or no progress for the timeout
 * (CMX_DISTRIBUTED_TIMEOUT seconds, default 300) fail the evaluation with a
 * CMX_ERR_RUNTIME naming the op and the peer; the group is then unusable
 * (its connections are closed, so the other processes fail too instead of
 * waiting forever).
 */
#ifndef CMX_DISTRIBUTED_H
#define CMX_DISTRIBUTED_H

#include <stdbool.h>

#include "cmx/array.h"
#include "cmx/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmx_group cmx_group;

/* True when backend ("any", "ring", "mpi", "nccl") can be used here:
 * "ring" always, "mpi" when libmpi.so.40 loads, "nccl" when libnccl.so.2
 * loads and a GPU is present, "any" always. Unknown names give false. */
bool cmx_distributed_is_available(const char* backend);

/* Writes this process's world group over backend (see is_available) to
 * *out (a new reference). The group of a backend is made once per process
 * and shared by later calls. "any" takes the ring when MLX_HOSTFILE is set,
 * else MPI when the process was started by mpirun, else the group of one;
 * NCCL over that ring or MPI instead when CMX_DISTRIBUTED_BACKEND=nccl is
 * set (as `cmx.launch --backend nccl` does) and NCCL is available.
 * When the backend cannot start: with strict, CMX_ERR_RUNTIME naming why;
 * without, the group of one. Unknown backend: CMX_ERR_VALUE. */
cmx_status cmx_distributed_init(cmx_group** out, bool strict,
                                const char* backend);
/* The group that collectives use when passed NULL: the last world group
 * cmx_distributed_init started or returned (the group of one before any,
 * and after inits that fell back to it). Borrowed. */
cmx_group* cmx_distributed_default_group(void);

/* This process's rank in g, and g's size. */
int cmx_group_rank(const cmx_group* g);
int cmx_group_size(const cmx_group* g);
/* The backend's name ("ring", "mpi", "nccl", or "none" for the group of
 * one). Static storage. */
const char* cmx_group_backend(const cmx_group* g);
/* Splits g: the processes passing the same color form a new group, ranked
 * by key (ties and key < 0 by their rank in g). Every process of g must
 * call it. Writes a new reference to *out. Errors: CMX_ERR_VALUE for a
 * group of one ("Cannot split the distributed group further") or a
 * negative color, CMX_ERR_RUNTIME for a communication failure. */
cmx_status cmx_group_split(cmx_group** out, cmx_group* g, int color, int key);
cmx_group* cmx_group_retain(cmx_group* g);
void cmx_group_release(cmx_group* g);

/* ---- Collectives (lazy ops; group NULL = the default group) ----
 * Each writes a new reference to *out. On a group of one, all_sum,
 * all_max, all_min, all_gather and sum_scatter return x itself. */
/* The elementwise sum / max / min of x over the group. */
cmx_status cmx_distributed_all_sum(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s);
cmx_status cmx_distributed_all_max(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s);
cmx_status cmx_distributed_all_min(cmx_array* out, cmx_array x, cmx_group* g,
                                   cmx_stream s);
/* x of every process concatenated along axis 0 in rank order (a 0-d x is
 * taken as shape (1,)). */
cmx_status cmx_distributed_all_gather(cmx_array* out, cmx_array x, cmx_group* g,
                                      cmx_stream s);
/* The sum over the group, split along axis 0 into size parts: rank r gets
 * part r. CMX_ERR_VALUE when x's first axis is not divisible by the size. */
cmx_status cmx_distributed_sum_scatter(cmx_array* out, cmx_array x,
                                       cmx_group* g, cmx_stream s);
/* Sends x to rank dst; *out is x's value (evaluate it to send).
 * CMX_ERR_VALUE for dst out of range or equal to this rank, or a group of
 * one. */
cmx_status cmx_distributed_send(cmx_array* out, cmx_array x, int dst,
                                cmx_group* g, cmx_stream s);
/* Receives an array of the given shape and dtype sent by rank src. Same
 * errors as send. */
cmx_status cmx_distributed_recv(cmx_array* out, const int64_t* shape, int ndim,
                                cmx_dtype dtype, int src, cmx_group* g,
                                cmx_stream s);
/* recv with x's shape and dtype. */
cmx_status cmx_distributed_recv_like(cmx_array* out, cmx_array x, int src,
                                     cmx_group* g, cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
