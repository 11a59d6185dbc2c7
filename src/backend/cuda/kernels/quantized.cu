// Kernels of Quantize, Dequantize and QuantizedMatmul (affine mode) for
// one float dtype and one bit width. The module is common.cu, the prelude,
// ew_bind.cu and primitives/ew_scalar.h, then this file. The prelude
// (quantized.c) defines:
//   CMX_Q_T        the storage type of x / the output (quantize: of w)
//   CMX_Q_TOF(x), CMX_Q_FROMF(v)   storage <-> float32
//   CMX_Q_BITS     the bit width (2, 3, 4, 5, 6, 8)
// Packed rows are LSB-first bit streams of 32-bit words; 32 values take
// exactly CMX_Q_BITS words (a "chunk"), and groups are whole chunks.
// Scales and biases may be of another float dtype than the output: they
// are read through cmx_q_ld with a dtype code (0 float32, 1 float16,
// 2 bfloat16).

typedef CMX_Q_T cmx_qt;
#define CMX_Q_FN static __device__ __forceinline__
#define CMX_Q_B CMX_Q_BITS
#define CMX_Q_MASK ((1u << CMX_Q_B) - 1u)
// The largest number of x rows the matrix-vector kernel takes at once.
#define CMX_QMV_MAXM 8
#define CMX_QMV_WARPS 8
// The tiled kernel: 64 x 64 outputs a block of 256 threads, K by 32.
#define CMX_QMM_T 64
#define CMX_QMM_KT 32

CMX_Q_FN float cmx_q_ld(const void* p, int code, long long i) {
  if (code == 0) return ((const float*)p)[i];
  const uint16_t h = ((const uint16_t*)p)[i];
  return code == 1 ? cmx_h2f(h) : cmx_bf2f(h);
}

// Value v (any index) of the packed row w whose words are wl apart.
CMX_Q_FN uint32_t cmx_q_get(const uint32_t* w, long long wl, long long v) {
  const long long p = v * CMX_Q_B;
  const long long wi = p >> 5;
  const int sh = (int)(p & 31);
  uint32_t r = w[wi * wl] >> sh;
  if (sh + CMX_Q_B > 32) r |= w[(wi + 1) * wl] << (32 - sh);
  return r & CMX_Q_MASK;
}

// Value i (a compile-time constant after unrolling) of a chunk held in
// CMX_Q_B words.
CMX_Q_FN uint32_t cmx_q_chunk_val(const uint32_t (&w)[CMX_Q_B], int i) {
  const int p = i * CMX_Q_B, wi = p >> 5, sh = p & 31;
  uint32_t r = w[wi] >> sh;
  if (sh + CMX_Q_B > 32) r |= w[wi + 1] << (32 - sh);
  return r & CMX_Q_MASK;
}

// ---------------------------------------------------------------------
// Quantize: one thread per group of g values of row r (nrows rows of K
// values at layout X, elements ls apart). Outputs row-major.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_quantize)
extern "C" __global__ void cmx_quantize(const cmx_qt* w, uint32_t* wq,
                                        cmx_qt* sc, cmx_qt* bi, long long nrows,
                                        long long K, int g, long long ls,
                                        const CMX_GRID_CONST cmx_layout_n<2> X) {
  const long long G = K / g, n = nrows * G;
  const float nb = (float)((1 << CMX_Q_B) - 1);
  for (long long it = cmx_tid(); it < n; it += cmx_nthreads()) {
    const long long r = it / G, gi = it - r * G;
    long long o[1];
    cmx_offsets<long long, 0, 2>(X, r, o);
    const cmx_qt* x = w + o[0] + gi * g * ls;
    float lo = CMX_Q_TOF(x[0]), hi = lo;
    for (int i = 1; i < g; i++) {
      const float v = CMX_Q_TOF(x[i * ls]);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    float s = (hi - lo) / nb, b = lo;
    s = s > 1e-7f ? s : 1e-7f;
    if (CMX_Q_B > 1) {
      const bool neg = fabsf(lo) > fabsf(hi);
      s = neg ? s : -s;
      const float edge = neg ? lo : hi, q0 = rintf(edge / s);
      b = 0;
      if (q0 != 0) {
        s = edge / q0;
        b = edge;
      }
    }
    sc[it] = CMX_Q_FROMF(s);
    bi[it] = CMX_Q_FROMF(b);
    uint32_t* out = wq + r * (K * CMX_Q_B / 32) + gi * (g * CMX_Q_B / 32);
    unsigned long long acc = 0;
    int nbits = 0;
    for (int i = 0; i < g; i++) {
      float q = rintf((CMX_Q_TOF(x[i * ls]) - b) / s);
      q = q < 0 ? 0 : q > nb ? nb : q;
      acc |= (unsigned long long)(uint32_t)q << nbits;
      nbits += CMX_Q_B;
      if (nbits >= 32) {
        *out++ = (uint32_t)acc;
        acc >>= 32;
        nbits -= 32;
      }
    }
  }
}
#endif

// ---------------------------------------------------------------------
// Dequantize: one thread per output element (nrows rows of K values,
// row-major). X: the rows' layout over (output, w, scales, biases), each
// with its last stride wl, sl, bl; scode/bcode: the dtype codes.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_dequantize)
extern "C" __global__ void cmx_dequantize(
    const uint32_t* w, const void* sc, const void* bi, cmx_qt* y,
    long long nrows, long long K, int g, long long wl, long long sl,
    long long bl, int scode, int bcode,
    const CMX_GRID_CONST cmx_layout_n<4> X) {
  const long long n = nrows * K;
  for (long long it = cmx_tid(); it < n; it += cmx_nthreads()) {
    const long long r = it / K, i = it - r * K;
    long long o[3];
    cmx_offsets<long long, 0, 4>(X, r, o);
    const float q = (float)cmx_q_get(w + o[0], wl, i);
    const float s = cmx_q_ld(sc, scode, o[1] + (i / g) * sl);
    const float b = cmx_q_ld(bi, bcode, o[2] + (i / g) * bl);
    // as the CPU (and MLX): 16-bit outputs round the product first
    y[it] = CMX_Q_FROMF(CMX_Q_TOF(CMX_Q_FROMF(q * s)) + b);
  }
}
#endif

// ---------------------------------------------------------------------
// QuantizedMatmul. Batch entry blockIdx.y (layout Bt over output, x, w,
// scales, biases) of out (M, N) = x (M, K) @ W.T (transpose: W stored
// (N, K)) or x @ W (W stored (K, N)); x rows xm apart, elements xk apart;
// stored W rows wr words apart (values contiguous), scales and biases
// rows sr / br apart (groups contiguous).
struct cmx_qmm_args {
  const cmx_qt* x;
  const uint32_t* w;
  const void* sc;
  const void* bi;
  cmx_qt* y;
  long long M, N, K, xm, xk, wr, sr, br;
  int g, scode, bcode, kt;
};

// Matrix-vector (transpose, M <= 8): a warp per output column n (a
// stored row of W), CMX_QMV_WARPS of them a block. x is staged into
// shared memory as float32 by tiles of kt values (a multiple of 32),
// each 32-value chunk padded to 36 floats so 16-byte reads by
// consecutive lanes miss each other's banks. Lane l takes chunks l, l +
// 32, ...: its CMX_Q_B words (one 16-byte load per 4 words when vec), and
// adds scale * (q . x) + bias * sum(x) per chunk.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv_t)
extern "C" __global__ void __launch_bounds__(32 * CMX_QMV_WARPS)
    cmx_qmv_t(const CMX_GRID_CONST cmx_qmm_args A, int vec,
              const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  extern __shared__ float4 cmx_qmv_sm4[];
  float* xs = (float*)cmx_qmv_sm4;
  long long bo[4];
  cmx_offsets<long long, 0, 5>(Bt, (long long)blockIdx.y, bo);
  const cmx_qt* x = A.x + bo[0];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long n = (long long)blockIdx.x * CMX_QMV_WARPS + warp;
  const bool active = n < A.N;
  const uint32_t* wrow = A.w + bo[1] + (active ? n : 0) * A.wr;
  const long long so = bo[2] + (active ? n : 0) * A.sr;
  const long long bio = bo[3] + (active ? n : 0) * A.br;
  const int M = (int)A.M, nch = A.kt / 32;
  float acc[CMX_QMV_MAXM];
#pragma unroll
  for (int m = 0; m < CMX_QMV_MAXM; m++) acc[m] = 0;
  for (long long k0 = 0; k0 < A.K; k0 += A.kt) {
    __syncthreads();
    for (int e = threadIdx.x; e < M * A.kt; e += blockDim.x) {
      const int m = e / A.kt, kk = e - m * A.kt;
      const long long k = k0 + kk;
      xs[(m * nch + kk / 32) * 36 + (kk & 31)] =
          k < A.K ? CMX_Q_TOF(x[m * A.xm + k * A.xk]) : 0.0f;
    }
    __syncthreads();
    if (!active) continue;
    for (int c = lane; c < nch && k0 + (long long)c * 32 < A.K; c += 32) {
      const long long gc = k0 / 32 + c;
      uint32_t wv[CMX_Q_B];
      const uint32_t* wp = wrow + gc * CMX_Q_B;
      if (CMX_Q_B % 4 == 0 && vec) {
#pragma unroll
        for (int j = 0; j < CMX_Q_B / 4; j++) {
          const uint4 u = __ldg((const uint4*)wp + j);
          wv[4 * j] = u.x, wv[4 * j + 1] = u.y, wv[4 * j + 2] = u.z,
                 wv[4 * j + 3] = u.w;
        }
      } else {
#pragma unroll
        for (int j = 0; j < CMX_Q_B; j++) wv[j] = __ldg(wp + j);
      }
      const long long grp = gc * 32 / A.g;
      const float s = cmx_q_ld(A.sc, A.scode, so + grp);
      const float b = cmx_q_ld(A.bi, A.bcode, bio + grp);
      float q[32];
#pragma unroll
      for (int i = 0; i < 32; i++) q[i] = (float)cmx_q_chunk_val(wv, i);
#pragma unroll
      for (int m = 0; m < CMX_QMV_MAXM; m++) {
        if (m < M) {
          const float4* xc = (const float4*)(xs + (m * nch + c) * 36);
          float d = 0, t = 0;
#pragma unroll
          for (int j = 0; j < 8; j++) {
            const float4 v = xc[j];
            d += q[4 * j] * v.x + q[4 * j + 1] * v.y + q[4 * j + 2] * v.z +
                 q[4 * j + 3] * v.w;
            t += (v.x + v.y) + (v.z + v.w);
          }
          acc[m] += s * d + b * t;
        }
      }
    }
  }
  if (!active) return;
#pragma unroll
  for (int m = 0; m < CMX_QMV_MAXM; m++) {
    float v = acc[m];
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    if (lane == 0 && m < M)
      A.y[((long long)blockIdx.y * A.M + m) * A.N + n] = CMX_Q_FROMF(v);
  }
}
#endif

// Tiled (any M, either transpose): 64 x 64 outputs a block of 16 x 16
// threads (4 x 4 each), K by tiles of 32: x's tile and W's tile,
// dequantized to float32 (scale * q + bias), in shared memory.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmm_t) || \
    defined(CMX_ONLY_cmx_qmm_n)
template <bool TR>
CMX_Q_FN void cmx_qmm(const cmx_qmm_args& A, const cmx_layout_n<5>& Bt) {
  __shared__ float xs[CMX_QMM_T][CMX_QMM_KT + 1];
  __shared__ float ws[CMX_QMM_KT][CMX_QMM_T + 1];
  long long bo[4];
  cmx_offsets<long long, 0, 5>(Bt, (long long)blockIdx.z, bo);
  const cmx_qt* x = A.x + bo[0];
  const uint32_t* w = A.w + bo[1];
  const long long m0 = (long long)blockIdx.y * CMX_QMM_T,
                  n0 = (long long)blockIdx.x * CMX_QMM_T;
  const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = 0;
  for (long long k0 = 0; k0 < A.K; k0 += CMX_QMM_KT) {
    __syncthreads();
    for (int e = threadIdx.x; e < CMX_QMM_T * CMX_QMM_KT; e += 256) {
      const int mm = e / CMX_QMM_KT, kk = e % CMX_QMM_KT;
      const long long m = m0 + mm, k = k0 + kk;
      xs[mm][kk] =
          m < A.M && k < A.K ? CMX_Q_TOF(x[m * A.xm + k * A.xk]) : 0.0f;
      // W's element (k, n) with n = n0 + (e's other split)
      const int nn = TR ? e / CMX_QMM_KT : e % CMX_QMM_T;
      const int kw = TR ? e % CMX_QMM_KT : e / CMX_QMM_T;
      const long long n = n0 + nn, kq = k0 + kw;
      float v = 0;
      if (n < A.N && kq < A.K) {
        const long long r = TR ? n : kq, col = TR ? kq : n;
        const float q = (float)cmx_q_get(w + r * A.wr, 1, col);
        const long long grp = col / A.g;
        v = q * cmx_q_ld(A.sc, A.scode, bo[2] + r * A.sr + grp) +
            cmx_q_ld(A.bi, A.bcode, bo[3] + r * A.br + grp);
      }
      ws[kw][nn] = v;
    }
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < CMX_QMM_KT; kk++) {
      float a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; i++) a[i] = xs[ty + 16 * i][kk];
#pragma unroll
      for (int j = 0; j < 4; j++) b[j] = ws[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
    }
  }
  cmx_qt* y = A.y + (long long)blockIdx.z * A.M * A.N;
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const long long m = m0 + ty + 16 * i, n = n0 + tx + 16 * j;
      if (m < A.M && n < A.N) y[m * A.N + n] = CMX_Q_FROMF(acc[i][j]);
    }
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmm_t)
extern "C" __global__ void __launch_bounds__(256)
    cmx_qmm_t(const CMX_GRID_CONST cmx_qmm_args A,
              const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  cmx_qmm<true>(A, Bt);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmm_n)
extern "C" __global__ void __launch_bounds__(256)
    cmx_qmm_n(const CMX_GRID_CONST cmx_qmm_args A,
              const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  cmx_qmm<false>(A, Bt);
}
#endif
