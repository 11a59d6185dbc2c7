/* The transforms of ops/fft.c for the ops composed of them (ops/stft.c). */
#ifndef CMX_OPS_FFT_INTERNAL_H
#define CMX_OPS_FFT_INTERNAL_H

#include "cmx/array.h"

enum { CMX__NORM_BACKWARD, CMX__NORM_ORTHO, CMX__NORM_FORWARD };

/* Parses norm (NULL: "backward") into *out (CMX__NORM_*); false with
 * "[op] Invalid norm. ..." set when it is none of the three. */
bool cmx__fft_norm(const char* op, const char* norm, int* out);
/* The transform of a along axis (normalised) of length n (zero-padded or
 * truncated to it first; irfft: n real outputs): fft, ifft (inverse), rfft
 * (real) or irfft (both), scaled as norm says. Scope-owned; NULL
 * propagates. */
cmx_array cmx__fft_axis(cmx_array a, int axis, int64_t n, bool inverse,
                        bool real, int norm, cmx_stream s);

#endif
