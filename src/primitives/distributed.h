/* The collective primitives (ops/distributed.c), shared by the op layer,
 * the vtables, the cpu kernels and the transform rules.
 *
 * Every one holds a reference to its group (released with the primitive).
 * AllReduce: in = {x}; out = red(x over the group), x's shape and dtype.
 * AllGather: in = {x} (ndim >= 1); out = concatenation along axis 0 of
 *   every rank's x, in rank order: (size * d0, ...).
 * ReduceScatter: in = {x}, d0 divisible by size; out = part `rank` of the
 *   sum over the group split along axis 0: (d0 / size, ...).
 * Send: in = {x}; out = x (a view); sends x to `peer` when evaluated.
 * Recv: no inputs; out = the array (shape, dtype) that `peer` sends.
 */
#ifndef CMX_PRIMITIVES_DISTRIBUTED_H
#define CMX_PRIMITIVES_DISTRIBUTED_H

#include "cmx/distributed.h"
#include "cmx/primitive.h"

typedef struct cmx__dist_params {
  cmx_group* group; /* owned reference */
  int red;          /* AllReduce: cmx__red_op (distributed/distributed.h) */
  int peer;         /* Send: destination, Recv: source */
  cmx_shape shape;  /* Recv: the shape of the output */
} cmx__dist_params;

#endif
