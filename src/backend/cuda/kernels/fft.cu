// Helpers of FFT on the GPU (src/backend/cuda/fft.c); the transforms
// themselves are cuFFT's.

// p[i] *= s for n floats (the normalisation).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_fft_scale)
extern "C" __global__ void cmx_fft_scale(float* p, long long n, float s) {
  CMX_GRID_WAIT();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    p[i] *= s;
}
#endif

// The imaginary parts of the zero and (even n) n / 2 frequencies of every
// line along the Hermitian axis (len = n / 2 + 1 complex elements, stride
// inner) set to zero, as NumPy ignores them.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_fft_herm)
extern "C" __global__ void cmx_fft_herm(float* p, long long lines,
                                        long long len, long long inner,
                                        int even) {
  CMX_GRID_WAIT();
  for (long long l = blockIdx.x * (long long)blockDim.x + threadIdx.x;
       l < lines; l += (long long)gridDim.x * blockDim.x) {
    long long base = (l / inner) * len * inner + l % inner;
    p[2 * base + 1] = 0.f;
    if (even) p[2 * (base + (len - 1) * inner) + 1] = 0.f;
  }
}
#endif

// Transforms of length 1: element i of s (sw floats each: 1 real, 2
// complex) to element i of d (dw floats), the imaginary part 0 from a
// real source and dropped for a real destination.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_fft_one)
extern "C" __global__ void cmx_fft_one(const float* s, int sw, float* d,
                                       int dw, long long n) {
  CMX_GRID_WAIT();
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float re = s[i * sw], im = sw == 2 ? s[i * sw + 1] : 0.f;
    d[i * dw] = re;
    if (dw == 2) d[i * dw + 1] = im;
  }
}
#endif
