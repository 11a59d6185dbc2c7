/* mx.fft.stft and mx.fft.istft, composed of existing ops so that every
 * device runs them and every transform differentiates and batches them:
 *
 *   stft:  pad (center) -> take_along_axis of the frame indices i hop + k
 *          -> times the window -> rfft / fft over each frame -> swap the
 *          frame and frequency axes;
 *   istft: swap back -> irfft / real(ifft) of each frame -> times the
 *          window -> overlap-add (put_along_axis with addition at the same
 *          indices) -> divided by the overlap-added squared window (at
 *          least 1e-8) -> trimmed for center and length.
 *
 * Argument rules, their order and messages follow MLX 0.32's. */
#include <stdint.h>
#include <string.h>

#include "cmx/fft.h"
#include "ops/fft_internal.h"
#include "ops/ops_internal.h"

/* The window of n_fft samples: window (1-d, at most n_fft long) or
 * win_length (NULL: n_fft) ones, centred between zeros. */
static cmx_array frame_window(const char* op, int64_t n_fft,
                              const int64_t* win_length, cmx_array window,
                              cmx_stream s) {
  cmx_array w = window;
  if (w) {
    if (w->ndim != 1)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] window must be a one-dimensional array.", op);
    if (w->dims[0] > n_fft)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] window length must not exceed n_fft.", op);
  } else {
    int64_t len = win_length ? *win_length : n_fft;
    if (len > n_fft)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[%s] window length must not exceed n_fft.", op);
    if (len < 0)
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] Negative dimensions not allowed.",
                       op);
    w = cmx__ones(&len, 1, CMX_FLOAT32, s);
    if (!w) return NULL;
  }
  int axis = 0;
  int64_t lo = (n_fft - w->dims[0]) / 2, hi = n_fft - w->dims[0] - lo;
  return cmx__pad(w, &axis, &lo, &hi, 1, NULL, CMX_PAD_CONSTANT, s);
}

/* The sample index i hop + k of sample k of frame i, as (1, ..., 1,
 * n_frames n_fft) of ndim dimensions (int32 when extent, the length
 * indexed, allows). */
static cmx_array frame_index(int ndim, int64_t n_frames, int64_t n_fft,
                             int64_t hop, int64_t extent, cmx_stream s) {
  cmx_dtype dt = extent <= INT32_MAX ? CMX_INT32 : CMX_INT64;
  int64_t col[2] = {n_frames, 1}, row[2] = {1, n_fft}, shape[CMX_MAX_NDIM];
  cmx_array start = cmx__reshape(
      cmx__arange(0, (double)n_frames * (double)hop, (double)hop, dt, s), col,
      2, s);
  cmx_array k =
      cmx__reshape(cmx__arange(0, (double)n_fft, 1, dt, s), row, 2, s);
  for (int d = 0; d < ndim; d++) shape[d] = 1;
  shape[ndim - 1] = n_frames * n_fft;
  return cmx__reshape(cmx__add(start, k, s), shape, ndim, s);
}

/* n_frames n_fft, or false with "[op] ... too large" set. */
static bool frames_size(const char* op, int64_t n_frames, int64_t n_fft,
                        int64_t hop, int64_t* total) {
  int64_t span;
  if (__builtin_mul_overflow(n_frames, n_fft, total) ||
      __builtin_mul_overflow(n_frames, hop, &span)) {
    cmx__error(CMX_ERR_VALUE, "[%s] The frames are too large.", op);
    return false;
  }
  return true;
}

static bool parse_pad_mode(const char* op, const char* mode, cmx_pad_mode* m) {
  static const struct {
    const char* name;
    cmx_pad_mode mode;
  } modes[] = {{"reflect", CMX_PAD_REFLECT},
               {"constant", CMX_PAD_CONSTANT},
               {"edge", CMX_PAD_EDGE},
               {"symmetric", CMX_PAD_SYMMETRIC}};
  if (!mode) mode = "reflect";
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++)
    if (strcmp(mode, modes[i].name) == 0) return (*m = modes[i].mode), true;
  cmx__error(CMX_ERR_VALUE, "[%s] Invalid padding mode (%s) passed to pad", op,
             mode);
  return false;
}

static cmx_array stft(cmx_array x, int64_t n_fft, const int64_t* hop_length,
                      const int64_t* win_length, cmx_array window, bool center,
                      const char* pad_mode, const char* norm,
                      const bool* onesided, cmx_stream s) {
  const char* op = "stft";
  if (!CMX__ARGS(op, x) || (window && !CMX__ARGS(op, window))) return NULL;
  int nm;
  if (!cmx__fft_norm(op, norm, &nm)) return NULL;
  if (n_fft <= 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[stft] n_fft must be positive.");
  if (x->ndim < 1)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[stft] Input must have at least one dimension.");
  int64_t hop = hop_length ? *hop_length : n_fft / 4;
  if (hop <= 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[stft] hop_length must be positive.");
  cmx_array w = frame_window(op, n_fft, win_length, window, s);
  if (!w) return NULL;
  int ax = x->ndim - 1;
  if (x->dims[ax] == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[stft] Cannot infer the shape of an empty array");
  bool one = onesided ? *onesided : !cmx_dtype_is_complex(x->dtype);
  if (center) {
    cmx_pad_mode mode;
    if (!parse_pad_mode(op, pad_mode, &mode)) return NULL;
    int64_t half = n_fft / 2;
    if (!(x = cmx__pad(x, &ax, &half, &half, 1, NULL, mode, s))) return NULL;
  }
  if (x->dims[ax] < n_fft)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[stft] Input is too short for the given n_fft.");
  int64_t n_frames = 1 + (x->dims[ax] - n_fft) / hop, total;
  if (!frames_size(op, n_frames, n_fft, hop, &total)) return NULL;
  int64_t fshape[2] = {n_frames, n_fft};
  cmx_array idx = frame_index(x->ndim, n_frames, n_fft, hop, x->dims[ax], s);
  cmx_array frames =
      cmx__unflatten(cmx__take_along_axis(x, idx, &ax, s), ax, fshape, 2, s);
  frames = cmx__multiply(frames, w, s);
  cmx_array spec = cmx__fft_axis(frames, ax + 1, n_fft, false, one, nm, s);
  return cmx__swapaxes(spec, -1, -2, s);
}

/* frames (..., m) added into zeros (..., extent) at idx (1, ..., m). */
static cmx_array overlap_add(cmx_array frames, cmx_array idx, int64_t extent,
                             cmx_stream s) {
  if (!frames || !idx) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int ax = frames->ndim - 1;
  memcpy(shape, frames->dims, (size_t)frames->ndim * sizeof *shape);
  shape[ax] = extent;
  cmx_array zeros = cmx__zeros(shape, frames->ndim, frames->dtype, s);
  return cmx__scatter_axis("istft", zeros, idx, frames, &ax, CMX__SCATTER_ADD,
                           s);
}

/* y (..., n) restricted to [start, start + len), zeros past n. */
static cmx_array trim(cmx_array y, int64_t start, int64_t len, cmx_stream s) {
  if (!y) return NULL;
  int ax = y->ndim - 1;
  int64_t n = y->dims[ax], have = n - start < len ? n - start : len;
  int64_t lo[CMX_MAX_NDIM], hi[CMX_MAX_NDIM];
  for (int d = 0; d < y->ndim; d++) lo[d] = 0, hi[d] = y->dims[d];
  lo[ax] = start;
  hi[ax] = start + have;
  y = cmx__slice(y, lo, hi, NULL, s);
  int64_t zero = 0, more = len - have;
  return more ? cmx__pad(y, &ax, &zero, &more, 1, NULL, CMX_PAD_CONSTANT, s)
              : y;
}

static cmx_array istft(cmx_array S, const int64_t* n_fft_p,
                       const int64_t* hop_length, const int64_t* win_length,
                       cmx_array window, bool center, const char* norm,
                       const bool* onesided, const int64_t* length,
                       cmx_stream s) {
  const char* op = "istft";
  if (!CMX__ARGS(op, S) || (window && !CMX__ARGS(op, window))) return NULL;
  int nm;
  if (!cmx__fft_norm(op, norm, &nm)) return NULL;
  if (S->ndim < 2)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[istft] Input must have at least two dimensions "
                     "(freq, frames).");
  int fa = S->ndim - 2, ta = S->ndim - 1;
  int64_t n_freq = S->dims[fa], n_frames = S->dims[ta];
  bool one = onesided ? *onesided : true;
  if (!n_fft_p && one && n_freq - 1 > INT64_MAX / 2) /* a broadcast input */
    return CMX__FAIL(CMX_ERR_VALUE, "[istft] The frames are too large.");
  int64_t n_fft = n_fft_p ? *n_fft_p : one ? 2 * (n_freq - 1) : n_freq;
  if (n_fft <= 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[istft] n_fft must be positive.");
  int64_t hop = hop_length ? *hop_length : n_fft / 4;
  if (hop <= 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[istft] hop_length must be positive.");
  cmx_array w = frame_window(op, n_fft, win_length, window, s);
  if (!w) return NULL;
  if (n_freq == 0 || n_frames == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[istft] Cannot infer the shape of an empty array");
  int64_t total, extent;
  if (!frames_size(op, n_frames, n_fft, hop, &total) ||
      __builtin_add_overflow(n_fft, hop * (n_frames - 1), &extent))
    return CMX__FAIL(CMX_ERR_VALUE, "[istft] The frames are too large.");
  /* (..., frames, n_fft) real frames, times the window */
  cmx_array frames =
      cmx__fft_axis(cmx__swapaxes(S, fa, ta, s), ta, n_fft, true, one, nm, s);
  if (!one) frames = cmx__real(frames, s);
  if (!frames) return NULL;
  cmx_array pair[2] = {frames, w};
  cmx_dtype dt = cmx__result_type(pair, 2);
  w = cmx__as_dtype(w, dt, s);
  frames = cmx__flatten(cmx__multiply(frames, w, s), fa, ta, s);
  /* overlap-add of the frames and of the squared window */
  cmx_array y = overlap_add(
      frames, frame_index(ta, n_frames, n_fft, hop, extent, s), extent, s);
  int64_t fshape[2] = {n_frames, n_fft}, flat = total;
  cmx_array w2 = cmx__reshape(
      cmx__broadcast_to(cmx__multiply(w, w, s), fshape, 2, s), &flat, 1, s);
  cmx_array env = overlap_add(
      w2, frame_index(1, n_frames, n_fft, hop, extent, s), extent, s);
  y = cmx__divide(y, cmx__maximum(env, cmx__scalar(1e-8, dt), s), s);
  int64_t start = center ? n_fft / 2 : 0;
  int64_t len = length ? (*length > 0 ? *length : 0) : extent - 2 * start;
  return trim(y, start, len, s);
}

cmx_status cmx_fft_stft(cmx_array* out, cmx_array x, int64_t n_fft,
                        const int64_t* hop_length, const int64_t* win_length,
                        cmx_array window, bool center, const char* pad_mode,
                        const char* norm, const bool* onesided, cmx_stream s) {
  CMX__PUBLIC(out, "stft",
              stft(x, n_fft, hop_length, win_length, window, center, pad_mode,
                   norm, onesided, s));
}

cmx_status cmx_fft_istft(cmx_array* out, cmx_array stft_matrix,
                         const int64_t* n_fft, const int64_t* hop_length,
                         const int64_t* win_length, cmx_array window,
                         bool center, const char* norm, const bool* onesided,
                         const int64_t* length, cmx_stream s) {
  CMX__PUBLIC(out, "istft",
              istft(stft_matrix, n_fft, hop_length, win_length, window, center,
                    norm, onesided, length, s));
}
