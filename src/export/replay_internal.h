/* The helpers shared by the rebuild functions of replay.c and
 * replay_shape.c (see there). */
#ifndef CMX_EXPORT_REPLAY_INTERNAL_H
#define CMX_EXPORT_REPLAY_INTERNAL_H

#include <string.h>

#include "export/export_internal.h"
#include "ops/ops_internal.h"

#define S CMX_STREAM_DEFAULT

/* op: the op, rec: its recorded outputs, in: its inputs (built), out: its
 * outputs to write, data: the table entry's datum. */
typedef bool (*cmx__replay_fn)(const cmx__fn_op* op, const cmx__fn_value* rec,
                               const cmx_array* in, cmx_array* out,
                               const void* data);

/* Sets "[import_function] malformed <Name> op: <why>"; returns false. */
bool cmx__replay_bad(const cmx__fn_op* op, const char* why);

/* Declares q, the parameters as T when the file holds sizeof(T) bytes. */
#define PARAMS(T, q)                                    \
  T q;                                                  \
  if (op->psize != sizeof(T))                           \
    return cmx__replay_bad(op, "wrong parameter size"); \
  memcpy(&q, op->params, sizeof q)
#define NEED(n_in, n_out)                       \
  if (op->nin != (n_in) || op->nout != (n_out)) \
  return cmx__replay_bad(op, "wrong number of inputs or outputs")
#define NO_PARAMS \
  if (op->psize) return cmx__replay_bad(op, "unexpected parameters")
#define ONE(expr) return (out[0] = (expr)) != NULL
#define UNUSED (void)rec, (void)data
#define REPLAY(name)                                        \
  bool name(const cmx__fn_op* op, const cmx__fn_value* rec, \
            const cmx_array* in, cmx_array* out, const void* data)

/* replay_shape.c */
REPLAY(cmx__replay_transpose);
REPLAY(cmx__replay_diagonal);
REPLAY(cmx__replay_squeeze_expand); /* data: non-NULL for ExpandDims */
REPLAY(cmx__replay_slice);
REPLAY(cmx__replay_slice_update);
REPLAY(cmx__replay_as_strided);
REPLAY(cmx__replay_contiguous);
REPLAY(cmx__replay_concatenate);
REPLAY(cmx__replay_pad);
REPLAY(cmx__replay_gather);
REPLAY(cmx__replay_scatter);
REPLAY(cmx__replay_axis_index); /* data: non-NULL for ScatterAxis */
REPLAY(cmx__replay_random_bits);

#endif
