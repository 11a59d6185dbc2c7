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

#ifdef __cplusplus
}
#endif
#endif
