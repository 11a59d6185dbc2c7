/* Parameter structs of the creation primitives, shared by the op layer and
 * the kernels. Zeroed before filling (compared and hashed as bytes). */
#ifndef CMX_PRIMITIVES_CREATION_H
#define CMX_PRIMITIVES_CREATION_H

#include <stdint.h>

/* Arange: element i is start + i * step (integer dtypes: MLX's rule, see
 * ops/creation.c). Linspace: element i is start + i * step, the last one
 * exactly stop. */
typedef struct {
  double start, step, stop;
} cmx__range_params;

/* Eye, Tri, Tril, Triu: the diagonal offset k. */
typedef struct {
  int64_t k;
} cmx__diag_params;

#endif
