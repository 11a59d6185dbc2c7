/* The FFT primitive (ops/fft.c), shared by the op layer, every backend's
 * kernels and the transform rules. Compared and hashed as bytes: ops zero
 * the struct before filling it.
 *
 * FFT (cmx__fft_params): in = {a} row-major contiguous; out = scale times
 * the unnormalised discrete Fourier transform of a over axes[0 .. naxes)
 * (distinct, normalised to [0, ndim)), forward (exp(-2 pi i jk / n)) or
 * inverse (exp(+2 pi i jk / n)). Lengths are the output's along each axis
 * (the op pads or slices a to them first).
 * - c2c (real = 0): a and out complex64 of one shape.
 * - r2c (real, forward): a float32; out complex64 with the last listed
 *   axis of length n / 2 + 1 for a's length n along it (that axis is
 *   transformed first, the others as c2c after it).
 * - c2r (real, inverse): a complex64 with the last listed axis of length
 *   n / 2 + 1 where out (float32) has length n; the other axes are
 *   transformed first (c2c inverse), then the Hermitian last axis (the
 *   imaginary parts of its zero and, for even n, n / 2 frequencies are
 *   ignored, as NumPy's).
 */
#ifndef CMX_PRIMITIVES_FFT_H
#define CMX_PRIMITIVES_FFT_H

#include <stdint.h>

#include "cmx/array.h"

typedef struct cmx__fft_params {
  int axes[CMX_MAX_NDIM];
  int naxes;
  int inverse, real;
  int pad_;
  int64_t real_n; /* real: the length n of the real side's last axis */
  double scale;
} cmx__fft_params;

#endif
