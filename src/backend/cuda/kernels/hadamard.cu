// The GPU Hadamard transform and segmented matrix product for one floating
// dtype (see src/backend/cuda/segmm_hadamard.c). The module is common.cu,
// the prelude, ew_bind.cu and primitives/ew_scalar.h, then this file. The
// prelude (cmx__gpu_float_variant) defines:
//   CMX_S_T      the storage type
//   CMX_S_F      the compute type (float; double for float64)
//   CMX_S_TOF(x), CMX_S_FROMF(v)   storage <-> compute

typedef CMX_S_T cmx_ft;
typedef CMX_S_F cmx_fc;

// The odd factor's matrix (m x m, +1/-1 entries, m <= 28).
struct cmx_had_m {
  signed char h[28 * 28];
};

// Rows of o (row-major, N = m * n elements each, n a power of two) are
// transformed in place, one row a block at a time, in shared memory (N
// compute values): the fast Walsh-Hadamard butterflies of each of the m
// blocks of n, then H_m (or its transpose) across the blocks, then the
// scale - the CPU kernel's operations in its order, so float results
// agree bit for bit.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_hadamard)
extern "C" __global__ void cmx_hadamard(cmx_ft* o, long long rows, int n,
                                        int m, int transpose, double scale,
                                        const CMX_GRID_CONST cmx_had_m H) {
  CMX_GRID_WAIT();
  extern __shared__ __align__(16) unsigned char cmx_had_smem[];
  cmx_fc* x = (cmx_fc*)cmx_had_smem;
  const int N = n * m, hn = n / 2, pairs = hn * m;
  const cmx_fc sc = (cmx_fc)scale;
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    cmx_ft* p = o + row * N;
    for (int i = threadIdx.x; i < N; i += blockDim.x) x[i] = CMX_S_TOF(p[i]);
    __syncthreads();
    for (int h = 1; h < n; h <<= 1) {
      for (int idx = threadIdx.x; idx < pairs; idx += blockDim.x) {
        const int b = idx / hn, j = idx - b * hn;
        const int i = b * n + (j / h) * 2 * h + (j % h);
        const cmx_fc u = x[i], v = x[i + h];
        x[i] = u + v;
        x[i + h] = u - v;
      }
      __syncthreads();
    }
    if (m > 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        cmx_fc t[28];
        for (int r = 0; r < m; r++) {
          cmx_fc acc = 0;
          for (int c = 0; c < m; c++) {
            const signed char hv = transpose ? H.h[c * m + r] : H.h[r * m + c];
            acc += hv > 0 ? x[c * n + i] : -x[c * n + i];
          }
          t[r] = acc;
        }
        for (int r = 0; r < m; r++) x[r * n + i] = t[r];
      }
      __syncthreads();
    }
    for (int i = threadIdx.x; i < N; i += blockDim.x)
      p[i] = CMX_S_FROMF(x[i] * sc);
    __syncthreads();
  }
}
#endif

// SegmentedMM: o[s] (M x N, row-major) = a[:, k0:k1] @ b[k0:k1, :] for
// (k0, k1) = seg[2 s], seg[2 s + 1] (a bound past K is recorded in the
// stream's error record and clamped to K; k1 <= k0 gives zeros). Tiles of 16 x 16 outputs a block (blockIdx.x over
// columns, y over rows, z over segments), accumulated in the compute type
// through shared-memory tiles of a and b (any strides).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_segmm)
extern "C" __global__ void cmx_segmm(const cmx_ft* a, const cmx_ft* b,
                                     const unsigned* seg, cmx_ft* o,
                                     long long nseg, int M, int N, int K,
                                     long long as_r, long long as_c,
                                     long long bs_r, long long bs_c,
                                     cmx_index_error* err, int code) {
  CMX_GRID_WAIT();
  __shared__ cmx_fc ta[16][17], tb[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  for (long long s = blockIdx.z; s < nseg; s += gridDim.z) {
    unsigned k1 = seg[2 * s + 1], k0 = seg[2 * s];
    if ((k0 > (unsigned)K || k1 > (unsigned)K) && tx == 0 && ty == 0)
      cmx_report_bad_index(err, code, 0, k0 > (unsigned)K ? k0 : k1, K);
    if (k1 > (unsigned)K) k1 = (unsigned)K;
    if (k0 > k1) k0 = k1;
    cmx_fc acc = 0;
    for (unsigned kt = k0; kt < k1; kt += 16) {
      const unsigned ka = kt + tx, kb = kt + ty;
      ta[ty][tx] = row < M && ka < k1 ? CMX_S_TOF(a[row * as_r + ka * as_c])
                                      : (cmx_fc)0;
      tb[ty][tx] = col < N && kb < k1 ? CMX_S_TOF(b[kb * bs_r + col * bs_c])
                                      : (cmx_fc)0;
      __syncthreads();
#pragma unroll
      for (int q = 0; q < 16; q++) acc += ta[ty][q] * tb[q][tx];
      __syncthreads();
    }
    if (row < M && col < N)
      o[(s * M + row) * (long long)N + col] = CMX_S_FROMF(acc);
  }
}
#endif
