/* Parameters of the reduction primitives, shared by the op layer that
 * builds them and the kernels that run them. Every struct is fully
 * initialised (memset) before use, so equality and hashing may compare the
 * parameter bytes.
 *
 *   Reduce     (kind, sorted axes): sum, prod, min, max, mean, all, any.
 *              The output holds the reduced shape (with or without the
 *              size-1 axes: keepdims only changes the output's shape, not
 *              its row-major element order).
 *   ArgReduce  (kind, axis or -1 for the flattened array): uint32 output.
 *   LogSumExp  (sorted axes): floating input of the output dtype.
 *   Softmax    (sorted axes, precise): floating input, output same shape.
 *   Var        (sorted axes, ddof, sqrt): variance or standard deviation.
 */
#ifndef CMX_PRIMITIVES_REDUCE_H
#define CMX_PRIMITIVES_REDUCE_H

#include <stdint.h>

#include "cmx/array.h"

typedef enum {
  CMX__RED_SUM = 0,
  CMX__RED_PROD,
  CMX__RED_MIN,
  CMX__RED_MAX,
  CMX__RED_MEAN,
  CMX__RED_AND,
  CMX__RED_OR,
  CMX__RED_NUM_KINDS
} cmx__reduce_kind;

/* Lower-case name of a reduction kind ("sum", ..., "all", "any"). */
const char* cmx__reduce_kind_name(int kind);

typedef struct {
  int32_t kind;  /* cmx__reduce_kind */
  int32_t naxes; /* reduced axes of the input, sorted, distinct */
  int32_t axes[CMX_MAX_NDIM];
  int32_t keepdims; /* the output keeps the reduced axes as size 1 */
} cmx__reduce_params;

typedef enum { CMX__ARG_MIN = 0, CMX__ARG_MAX = 1 } cmx__argreduce_kind;

typedef struct {
  int32_t kind;     /* cmx__argreduce_kind */
  int32_t axis;     /* input axis, or -1: the row-major flattened array */
  int32_t keepdims; /* the output keeps the reduced axes as size 1 */
} cmx__argreduce_params;

/* LogSumExp, Softmax and Var. */
typedef struct {
  int32_t naxes;
  int32_t axes[CMX_MAX_NDIM];
  int32_t ddof;     /* Var only */
  int32_t sqrt;     /* Var only: 1 gives the standard deviation */
  int32_t precise;  /* Softmax only (float16/bfloat16 always compute in
                       float32 on the CPU) */
  int32_t keepdims; /* LogSumExp, Var: the output keeps the reduced axes */
} cmx__axes_params;

/* A kernel's first step for Reduce q on input a with output o: the number
 * of elements reduced into each output (to *count, when count is
 * non-NULL), and CMX_OK, or the kernel error (naming the kind) that
 * min/max of an empty range with a non-empty output gets. */
cmx_status cmx__reduce_count(const cmx__reduce_params* q, cmx_array a,
                             cmx_array o, double* count);

#endif
