/* cmx/fft.h: discrete Fourier transforms, as mlx.core.fft.
 *
 *     cmx_array x, X, y;
 *     ...x (1024,) float32...
 *     cmx_fft_rfft(&X, x, NULL, -1, NULL, CMX_STREAM_DEFAULT);  // (513,)
 *     cmx_fft_irfft(&y, X, NULL, -1, NULL, CMX_STREAM_DEFAULT); // == x
 *
 * Conventions (all transforms):
 * - Complex results are complex64 and real ones float32, whatever the input
 *   dtype (as MLX): c2c transforms take the input as complex64, rfft* take
 *   its real part as float32.
 * - n (one axis) or sizes (several) give the transform lengths: the input
 *   is zero-padded or truncated to them along each axis first (for irfft*
 *   the last axis to n / 2 + 1). NULL means the input's lengths (irfft*:
 *   n = 2 (m - 1) for the last axis' input length m).
 * - axes NULL: every axis for the *n functions (then sizes must be NULL,
 *   as MLX), the last two for the *2 functions. An empty axis list returns
 *   the input unchanged (as MLX).
 * - norm NULL or "backward": forward unscaled, inverse scaled by 1 / N;
 *   "ortho": both 1 / sqrt(N); "forward": forward 1 / N, inverse unscaled
 *   (N the product of the transform lengths).
 * - Any length works (prime lengths use Bluestein's algorithm on the CPU).
 *   Every transform has vjp, jvp and vmap rules.
 * Every function returns CMX_OK and a new reference in *out, or an error
 * status with the message set.
 */
#ifndef CMX_FFT_H
#define CMX_FFT_H

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One axis; n NULL means the input's length (irfft: 2 (m - 1)). */
#define CMX__FFT_1D(name)                                                  \
  cmx_status cmx_fft_##name(cmx_array* out, cmx_array a, const int64_t* n, \
                            int axis, const char* norm, cmx_stream s);
/* Several axes: sizes (nsizes) NULL for None, axes (naxes) NULL for the
 * default. */
#define CMX__FFT_ND(name)                                                      \
  cmx_status cmx_fft_##name(cmx_array* out, cmx_array a, const int64_t* sizes, \
                            int nsizes, const int* axes, int naxes,            \
                            const char* norm, cmx_stream s);
CMX__FFT_1D(fft)
CMX__FFT_1D(ifft)
CMX__FFT_1D(rfft)
CMX__FFT_1D(irfft)
CMX__FFT_ND(fft2)
CMX__FFT_ND(ifft2)
CMX__FFT_ND(rfft2)
CMX__FFT_ND(irfft2)
CMX__FFT_ND(fftn)
CMX__FFT_ND(ifftn)
CMX__FFT_ND(rfftn)
CMX__FFT_ND(irfftn)
#undef CMX__FFT_1D
#undef CMX__FFT_ND

/* a rolled by floor(n / 2) (ifftshift: by -floor(n / 2)) along axes (NULL:
 * every axis), moving the zero frequency to the middle and back. */
cmx_status cmx_fft_fftshift(cmx_array* out, cmx_array a, const int* axes,
                            int naxes, cmx_stream s);
cmx_status cmx_fft_ifftshift(cmx_array* out, cmx_array a, const int* axes,
                             int naxes, cmx_stream s);
/* Sample frequencies (float32) of an n-point transform with sample spacing
 * d: fftfreq [0, 1, ..., -(n / 2), ..., -1] / (d n) (n entries), rfftfreq
 * [0, ..., n / 2] / (d n). n must be positive. */
cmx_status cmx_fft_fftfreq(cmx_array* out, int64_t n, double d, cmx_stream s);
cmx_status cmx_fft_rfftfreq(cmx_array* out, int64_t n, double d, cmx_stream s);

/* Short-time transforms (mx.fft.stft / mx.fft.istft), composed of pad,
 * take_along_axis / put_along_axis (add) and the transforms above, so they
 * run on every device and under grad, vjp, jvp and vmap.
 *
 * stft: the last axis of x (at least 1-d) is cut into frames of n_fft
 * samples, hop_length apart (NULL: n_fft / 4), each multiplied by the
 * window and transformed; the result is complex64 (..., n_freq, n_frames).
 * window: NULL for a rectangular window of win_length ones (NULL: n_fft),
 * else a 1-d array (win_length is then ignored); either is centred in
 * n_fft samples with zeros. center pads n_fft / 2 samples at both ends
 * first, in pad_mode (NULL or "reflect", "constant", "edge",
 * "symmetric"). onesided (NULL: true for real x, false for complex)
 * keeps the n_fft / 2 + 1 non-negative frequencies (of the frames' real
 * part, as rfft). norm as the transforms above. Errors (ValueError,
 * "[stft] ..."): a non-positive n_fft or hop_length, a 0-d or empty
 * signal, a window that is not 1-d or is longer than n_fft, a negative
 * win_length, an unknown norm or pad_mode, fewer than n_fft samples. */
cmx_status cmx_fft_stft(cmx_array* out, cmx_array x, int64_t n_fft,
                        const int64_t* hop_length, const int64_t* win_length,
                        cmx_array window, bool center, const char* pad_mode,
                        const char* norm, const bool* onesided, cmx_stream s);
/* istft: the inverse of stft for stft_matrix (..., n_freq, n_frames):
 * each frame's inverse transform (irfft to n_fft samples when onesided,
 * NULL meaning true; else the real part of the ifft) times the window,
 * overlap-added hop_length apart and divided by the overlap-added squared
 * window where that exceeds 1e-8 (by 1e-8 elsewhere). n_fft NULL is
 * inferred: 2 (n_freq - 1) when onesided, else n_freq. center drops
 * n_fft / 2 samples at the start (and, without length, at the end);
 * length (NULL: all) trims the result or pads it with zeros (a negative
 * length gives 0 samples). The result is float32, or the promotion of
 * float32 with the window's dtype (float64, complex64). Errors as stft's
 * ("[istft] ..."), and an input of fewer than 2 dimensions or with no
 * frequencies or frames. */
cmx_status cmx_fft_istft(cmx_array* out, cmx_array stft_matrix,
                         const int64_t* n_fft, const int64_t* hop_length,
                         const int64_t* win_length, cmx_array window,
                         bool center, const char* norm, const bool* onesided,
                         const int64_t* length, cmx_stream s);

#ifdef __cplusplus
}
#endif
#endif
