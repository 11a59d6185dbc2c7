/* Rebuilding the shape, indexing and random primitives of imported functions
 * (see replay.c). */
#include "export/replay_internal.h"
#include "ops/random_internal.h"
#include "primitives/indexing.h"
#include "primitives/random.h"
#include "primitives/shape.h"

#define OP "import_function"

static bool ok_count(const cmx__fn_op* op, int n) {
  return n >= 0 && n <= CMX_MAX_NDIM ? true
                                     : cmx__replay_bad(op, "bad axis count");
}

/* ---------------- shape ---------------- */
REPLAY(cmx__replay_transpose) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__transpose_params, q);
  ONE(cmx__transpose(in[0], q.perm, in[0]->ndim, S));
}

REPLAY(cmx__replay_squeeze_expand) {
  (void)rec;
  NEED(1, 1);
  PARAMS(cmx__axes_params, q);
  if (!ok_count(op, q.naxes)) return false;
  if (data) ONE(cmx__expand_dims(in[0], q.axes, q.naxes, S));
  ONE(cmx__squeeze(in[0], q.axes, q.naxes, S));
}

REPLAY(cmx__replay_diagonal) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__diagonal_params, q);
  ONE(cmx__diagonal(in[0], q.offset, q.axis1, q.axis2, S));
}

/* The stop of each axis of a slice of n elements from start by step, as
 * slice reads it (a negative stop counts from the end, so one before the
 * first element is written as -1 - dim). */
static void slice_stops(const int64_t* start, const int64_t* step,
                        const int64_t* n, const int64_t* dims, int ndim,
                        int64_t* stop) {
  for (int i = 0; i < ndim; i++) {
    int64_t e = start[i] + n[i] * step[i];
    stop[i] = step[i] < 0 && e < 0 ? e - dims[i] : e;
  }
}

REPLAY(cmx__replay_slice) {
  (void)data;
  NEED(1, 1);
  PARAMS(cmx__slice_params, q);
  if (rec[0].ndim != in[0]->ndim) return cmx__replay_bad(op, "rank changed");
  int64_t stop[CMX_MAX_NDIM];
  slice_stops(q.start, q.step, rec[0].shape, in[0]->dims, in[0]->ndim, stop);
  ONE(cmx__slice(in[0], q.start, stop, q.step, S));
}

REPLAY(cmx__replay_slice_update) {
  UNUSED;
  NEED(2, 1);
  PARAMS(cmx__slice_params, q);
  if (in[1]->ndim != in[0]->ndim) return cmx__replay_bad(op, "rank changed");
  int64_t stop[CMX_MAX_NDIM];
  slice_stops(q.start, q.step, in[1]->dims, in[0]->dims, in[0]->ndim, stop);
  ONE(cmx__slice_update(in[0], in[1], q.start, stop, q.step, S));
}

REPLAY(cmx__replay_as_strided) {
  (void)data;
  NEED(1, 1);
  PARAMS(cmx__as_strided_params, q);
  ONE(cmx__as_strided(in[0], rec[0].shape, rec[0].ndim, q.strides, q.offset,
                      S));
}

REPLAY(cmx__replay_contiguous) {
  UNUSED;
  NEED(1, 1);
  PARAMS(cmx__contiguous_params, q);
  ONE(cmx__contiguous(in[0], q.allow_col_major != 0, S));
}

REPLAY(cmx__replay_concatenate) {
  UNUSED;
  if (op->nout != 1 || op->nin < 1) return cmx__replay_bad(op, "wrong inputs");
  PARAMS(cmx__concat_params, q);
  ONE(cmx__concatenate(in, op->nin, q.axis, S));
}

REPLAY(cmx__replay_pad) {
  (void)data;
  NEED(2, 1);
  PARAMS(cmx__pad_params, q);
  int nd = in[0]->ndim, axes[CMX_MAX_NDIM];
  int64_t high[CMX_MAX_NDIM];
  if (rec[0].ndim != nd) return cmx__replay_bad(op, "rank changed");
  for (int i = 0; i < nd; i++) {
    axes[i] = i;
    high[i] = rec[0].shape[i] - in[0]->dims[i] - q.low[i];
  }
  ONE(cmx__pad(in[0], axes, q.low, high, nd, in[1], CMX_PAD_CONSTANT, S));
}

/* ---------------- indexing ---------------- */
REPLAY(cmx__replay_gather) {
  UNUSED;
  PARAMS(cmx__gather_params, q);
  if (op->nout != 1 || op->nin < 1 || !ok_count(op, q.naxes) ||
      q.naxes != op->nin - 1)
    return cmx__replay_bad(op, "wrong inputs");
  ONE(cmx__gather(in[0], in + 1, op->nin - 1, q.axes, q.naxes, q.slice_sizes,
                  in[0]->ndim, S));
}

REPLAY(cmx__replay_scatter) {
  UNUSED;
  PARAMS(cmx__scatter_params, q);
  if (op->nout != 1 || op->nin < 2 || !ok_count(op, q.naxes) ||
      q.naxes != op->nin - 2 || q.mode < 0 || q.mode >= CMX__SCATTER_NUM_MODES)
    return cmx__replay_bad(op, "wrong inputs");
  ONE(cmx__scatter_op(OP, in[0], in + 1, op->nin - 2, in[op->nin - 1], q.axes,
                      q.naxes, (cmx__scatter_mode)q.mode, S));
}

REPLAY(cmx__replay_axis_index) {
  (void)rec;
  PARAMS(cmx__axis_params, q);
  if (!data) {
    NEED(2, 1);
    ONE(cmx__take_along_axis(in[0], in[1], &q.axis, S));
  }
  NEED(3, 1);
  if (q.mode < 0 || q.mode >= CMX__SCATTER_NUM_MODES)
    return cmx__replay_bad(op, "bad mode");
  ONE(cmx__scatter_axis(OP, in[0], in[1], in[2], &q.axis,
                        (cmx__scatter_mode)q.mode, S));
}

/* ---------------- random ---------------- */
REPLAY(cmx__replay_random_bits) {
  (void)data;
  NEED(1, 1);
  PARAMS(cmx__random_bits_params, q);
  ONE(cmx__random_bits(rec[0].shape, rec[0].ndim, q.width, in[0], S));
}
