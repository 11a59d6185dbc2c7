/* Parameter structs of the elementwise primitives that have parameters,
 * shared by the op layer and the kernels. Every other elementwise
 * primitive has none. */
#ifndef CMX_PRIMITIVES_ELEMENTWISE_H
#define CMX_PRIMITIVES_ELEMENTWISE_H

/* AsType: the dtype the input is converted to (the output's). */
typedef struct cmx__astype_params {
  int dtype; /* cmx_dtype */
} cmx__astype_params;

/* Round: half to even at `decimals` places (negative: tens, hundreds). */
typedef struct cmx__round_params {
  int decimals;
} cmx__round_params;

#endif
