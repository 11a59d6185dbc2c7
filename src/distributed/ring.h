/* The ring backend's private state, shared by its socket transport
 * (ring.c) and its shared-memory path for ranks on one host (ring_shm.c).
 */
#ifndef CMX_DISTRIBUTED_RING_H
#define CMX_DISTRIBUTED_RING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "distributed/distributed.h"

typedef struct ring_shm ring_shm;

typedef struct ring_net { /* the sockets of the world, shared by splits */
  _Atomic int refs;
  int rank, size; /* in the world */
  int* fd;        /* fd[peer]; -1 for self or once closed */
  int timeout_ms;
  bool dead;
  char why[160]; /* the first failure, repeated by later calls */
  pthread_mutex_t lock;
  char* scratch;
  size_t scratch_cap;
  ring_shm* shm; /* NULL: every transfer goes over the sockets */
} ring_net;

typedef struct ring_st {
  ring_net* net;
  int rank, size;
  int* world; /* group rank -> world rank */
} ring_st;

/* What a transfer does with the bytes it receives: dst = red(base,
 * received) (red >= 0; elements of dt), or nothing (they stay in the
 * receive buffer). */
typedef struct cmx__ring_sink {
  int red; /* cmx__red_op, or -1 */
  cmx_dtype dt;
  size_t esize;
  char* dst;
  const char* base;
} cmx__ring_sink;

/* Closes every socket of n (its peers then see EOF), records why (the
 * first failure only) and sets the error "[op] ring backend (rank r): why";
 * returns its status. */
cmx_status cmx__ring_fail(ring_net* n, const char* op, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sends sb[0..sn) to world peer `to` and receives rn bytes into rb from
 * world peer `from` at the same time (either side may be empty; to and
 * from may be the same peer), handing received bytes to k (may be NULL).
 * Returns CMX_OK, or fails the net (cmx__ring_fail) on an error, EOF or
 * no progress within the timeout. */
cmx_status cmx__ring_xfer(ring_net* n, const char* op, int to, const char* sb,
                          size_t sn, int from, char* rb, size_t rn,
                          const cmx__ring_sink* k);

/* Sets up n->shm with the peers this process shares memory with (see
 * ring_shm.c), over the connected sockets. Leaves n->shm NULL where shared
 * memory is off (CMX_RING_SHM=0) or no peer shares it; fails (error set)
 * only when the sockets do. */
cmx_status cmx__ring_shm_setup(ring_net* n, const char* op);

/* Whether g's members share memory, pair by pair (the answer is the same
 * on every member). */
bool cmx__ring_shm_usable(const ring_st* g);

/* How g's all_reduce shares memory, for messages ("shared memory, single
 * copy" or "shared memory, /dev/shm files"), or NULL: over the sockets. */
const char* cmx__ring_shm_kind(const ring_st* g);

/* all_reduce over shared memory for a group where cmx__ring_shm_usable
 * holds: out = red over the members of in (count elements of dt; in may
 * be out). Synchronised by messages over the sockets, so a dead peer
 * fails it as it fails the socket ring. Sets *fallback (out and in
 * untouched) when some member could not grow its shared file: every
 * member then does the same, and the caller uses the sockets. */
cmx_status cmx__ring_shm_all_reduce(ring_st* g, const char* op, const void* in,
                                    void* out, size_t count, cmx_dtype dt,
                                    cmx__red_op red, bool* fallback);

/* Unmaps and closes n's shared memory (NULL: nothing). */
void cmx__ring_shm_free(ring_shm* s);

#endif
