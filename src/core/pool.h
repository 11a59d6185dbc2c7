/* Per-thread caches of the small blocks the graph allocates all the time
 * (array nodes, ops): a freed block goes on its thread's list for its
 * size class and the next allocation of that class takes it back, with no
 * malloc call and no lock. See pool.c. */
#ifndef CMX_CORE_POOL_H
#define CMX_CORE_POOL_H

#include <stddef.h>

#include "core/internal.h"

/* A block of at least `bytes` (malloc alignment); NULL when out of
 * memory. Free it with cmx__pool_free and the same `bytes`. */
void* cmx__pool_alloc(size_t bytes);
/* Gives back a block of cmx__pool_alloc(bytes); p may be NULL. */
void cmx__pool_free(void* p, size_t bytes);

/* Frees an op's block (no references dropped: see cmx__op_release). */
void cmx__op_free(cmx__op* op);

/* The block sizes of an array node of ndim dimensions, and of an op with
 * nin inputs and one output (ops of several outputs use malloc). */
static inline size_t cmx__node_bytes(int ndim) {
  return sizeof(struct cmx_array_node) + 2 * (size_t)ndim * sizeof(int64_t);
}
static inline size_t cmx__op1_bytes(int nin) {
  return sizeof(cmx__op) + (size_t)(nin + 1) * sizeof(cmx_array) + 16;
}

#endif
