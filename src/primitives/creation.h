/* Parameter structs of the creation primitives, shared by the op layer and
 * the kernels. Zeroed before filling (compared and hashed as bytes). */
#ifndef CMX_PRIMITIVES_CREATION_H
#define CMX_PRIMITIVES_CREATION_H

#include <stdint.h>

/* Arange: element i is start + i * step (integer dtypes: MLX's rule, see
 * ops/creation.c). Linspace: element i is start + i * step, the last one
 * exactly stop. Both have num elements (the output's length). */
typedef struct {
  double start, step, stop;
  int64_t num;
  int64_t dtype; /* cmx_dtype of the output */
} cmx__range_params;

/* Eye, Tri, Tril, Triu: the diagonal offset k; Eye and Tri also their
 * output's shape (n, m) and dtype (0 for Tril, Triu). */
typedef struct {
  int64_t k, n, m, dtype;
} cmx__diag_params;

#endif
