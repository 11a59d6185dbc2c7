/* cmx's CPU FFT engine (fft_plan.c): single-precision transforms of any
 * length, for the FFT kernel (fft.c).
 *
 * Lengths whose prime factors are all <= 31 run as a mixed-radix Stockham
 * autosort FFT (radices 8, 4, 2, 3 and a generic odd radix) on split
 * real/imaginary buffers, so the inner loops are plain float loops the
 * compiler vectorises; other lengths use Bluestein's algorithm over a
 * power-of-two transform. Twiddles are computed in double. Plans are built
 * once per length and kept for the life of the process (one cache, under a
 * lock; lookups of a cached length take the lock only briefly).
 *
 * Lines are interleaved complex64 (or float32 for the real side) with a
 * stride in elements. `work` is scratch of cmx__fft_work_floats(p) floats,
 * one per thread. Transforms are unnormalised (forward sign -1, inverse
 * +1) and multiplied by `scale`. par: split the work of this one line over
 * cmx's pool (for a single long transform; never from inside the pool).
 */
#ifndef CMX_BACKEND_CPU_FFT_PLAN_H
#define CMX_BACKEND_CPU_FFT_PLAN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct cmx__fft_plan cmx__fft_plan;

/* The cached plan of complex transforms of length n >= 1 (real: of real
 * transforms of length n); NULL when out of memory. */
const cmx__fft_plan* cmx__fft_plan_get(int64_t n, bool real);
/* fork() phases (CMX__FORK_*, core/sched.h) of the plan cache's lock. */
void cmx__fft_plans_fork(int phase);
/* Floats of scratch one line of plan p needs. */
int64_t cmx__fft_work_floats(const cmx__fft_plan* p);

/* out[k] = scale * sum_j in[j] exp(-+2 pi i j k / n), n = p's length. */
void cmx__fft_c2c(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, bool inverse, float scale,
                  float* work, bool par);
/* Real plan: out[k], k <= n / 2, of the forward transform of real in. */
void cmx__fft_r2c(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, float scale, float* work, bool par);
/* Real plan: the real inverse transform (length n) of the Hermitian
 * spectrum in[0 .. n / 2] (imaginary parts of in[0] and, for even n,
 * in[n / 2] ignored, as NumPy's). */
void cmx__fft_c2r(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, float scale, float* work, bool par);

#endif
