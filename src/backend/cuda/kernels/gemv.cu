// Matrix-vector products (see src/backend/cuda/gemv.c). The module is
// common.cu, the prelude, ew_bind.cu, primitives/ew_scalar.h and splitk.cu,
// then this file. The prelude (cmx__gpu_float_variant) defines CMX_S_T
// (storage), CMX_S_F (accumulation: float, double for float64), CMX_S_TOF(x)
// and CMX_S_FROMF(v), and gemv.c CMX_SK_* (splitk.cu's types) as CMX_S_*.
// Products are accumulated in CMX_S_F.
//   cmx_gemv_rows_{v,s}  y[r] = sum_k A[r * lda + k] * x[k * incx]: a warp
//        per row; _v reads A and x as 16-byte vectors (incx == 1)
//   cmx_gemv_cols_{v,s}  y[c] = sum_k x[k * incx] * A[k * lda + c]: a block
//        (TX, TY) per tile of columns and slice of k (grid (tiles,
//        splits)); threadIdx.x takes V columns (_v: one 16-byte vector,
//        TX 8, TY 64; _s: one element, TX 32, TY 16), threadIdx.y every
//        TY-th k of the slice; the block sums its TY partial columns in
//        shared memory. One split writes y; several write part[split][c],
//        summed by cmx_splitk_sum (splitk.cu).

typedef CMX_S_T cmx_gt;
typedef CMX_S_F cmx_gf;

static __device__ __forceinline__ cmx_gf cmx_g_tof(cmx_gt x) {
  return (cmx_gf)(CMX_S_TOF(x));
}
static __device__ __forceinline__ cmx_gt cmx_g_from(cmx_gf v) {
  return CMX_S_FROMF(v);
}

#define CMX_G_VW ((int)(16 / sizeof(cmx_gt)))

template <bool VEC>
__device__ __forceinline__ void cmx_gemv_rows_body(
    const cmx_gt* __restrict__ A, long long lda, const cmx_gt* __restrict__ x,
    long long incx, cmx_gt* __restrict__ y, long long M, long long K) {
  const int lane = threadIdx.x & 31;
  const long long wpb = blockDim.x >> 5;
  const long long nw = (long long)gridDim.x * wpb;
  for (long long r = (long long)blockIdx.x * wpb + (threadIdx.x >> 5); r < M;
       r += nw) {
    const cmx_gt* a = A + r * lda;
    cmx_gf acc = 0;
    if (VEC) {
      const uint4* av = (const uint4*)a;
      const uint4* xv = (const uint4*)x;
      const long long nv = K / CMX_G_VW;
      long long i = lane;
      for (; i + 96 < nv; i += 128) {
        uint4 ra[4], rx[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
          ra[u] = av[i + 32 * u];
          rx[u] = __ldg(xv + i + 32 * u);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
          cmx_pack<cmx_gt> pa, px;
          pa.raw = ra[u];
          px.raw = rx[u];
#pragma unroll
          for (int j = 0; j < CMX_G_VW; j++)
            acc += cmx_g_tof(pa.e[j]) * cmx_g_tof(px.e[j]);
        }
      }
      for (; i < nv; i += 32) {
        cmx_pack<cmx_gt> pa, px;
        pa.raw = av[i];
        px.raw = __ldg(xv + i);
#pragma unroll
        for (int j = 0; j < CMX_G_VW; j++)
          acc += cmx_g_tof(pa.e[j]) * cmx_g_tof(px.e[j]);
      }
    } else {
      for (long long k = lane; k < K; k += 32)
        acc += cmx_g_tof(a[k]) * cmx_g_tof(x[k * incx]);
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1)
      acc += __shfl_xor_sync(0xffffffffu, acc, d);
    if (lane == 0) y[r] = cmx_g_from(acc);
  }
}

// The entry points: _v and _s of each body.
#define CMX_GEMV_ROWS(NAME, VEC)                                              \
  extern "C" __global__ void NAME(const cmx_gt* A, long long lda,             \
                                  const cmx_gt* x, long long incx, cmx_gt* y, \
                                  long long M, long long K) {                 \
    CMX_GRID_WAIT();                                                          \
    cmx_gemv_rows_body<VEC>(A, lda, x, incx, y, M, K);                        \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gemv_rows_v)
CMX_GEMV_ROWS(cmx_gemv_rows_v, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gemv_rows_s)
CMX_GEMV_ROWS(cmx_gemv_rows_s, false)
#endif

// Shared partial sums of a cols block: TY * TX * V <= 64 * 64 values.
#define CMX_G_SHARED 4096

template <bool VEC>
__device__ __forceinline__ void cmx_gemv_cols_body(
    const cmx_gt* __restrict__ A, long long lda, const cmx_gt* __restrict__ x,
    long long incx, cmx_gt* __restrict__ y, cmx_gf* __restrict__ part,
    long long N, long long K, long long kc) {
  constexpr int V = VEC ? CMX_G_VW : 1;
  __shared__ cmx_gf sm[CMX_G_SHARED];
  const int tx = threadIdx.x, ty = threadIdx.y, TY = blockDim.y;
  const int width = blockDim.x * V;  // columns of the tile
  const long long c0 = (long long)blockIdx.x * width + (long long)tx * V;
  const long long k0 = (long long)blockIdx.y * kc;
  const long long k1 = k0 + kc < K ? k0 + kc : K;
  cmx_gf acc[V];
#pragma unroll
  for (int j = 0; j < V; j++) acc[j] = 0;
  if (c0 < N) {  // VEC: N is a multiple of V, the whole vector is in
    long long k = k0 + ty;
    const cmx_gt* a = A + c0;
    for (; k + 3 * TY < k1; k += 4 * TY) {
      cmx_gf xv[4];
#pragma unroll
      for (int u = 0; u < 4; u++) xv[u] = cmx_g_tof(x[(k + u * TY) * incx]);
      if (VEC) {
        uint4 r[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
          r[u] = *(const uint4*)(a + (k + u * TY) * lda);
#pragma unroll
        for (int u = 0; u < 4; u++) {
          cmx_pack<cmx_gt> p;
          p.raw = r[u];
#pragma unroll
          for (int j = 0; j < V; j++) acc[j] += xv[u] * cmx_g_tof(p.e[j]);
        }
      } else {
        cmx_gt r[4];
#pragma unroll
        for (int u = 0; u < 4; u++) r[u] = a[(k + u * TY) * lda];
#pragma unroll
        for (int u = 0; u < 4; u++) acc[0] += xv[u] * cmx_g_tof(r[u]);
      }
    }
    for (; k < k1; k += TY) {
      cmx_gf xk = cmx_g_tof(x[k * incx]);
      if (VEC) {
        cmx_pack<cmx_gt> p;
        p.raw = *(const uint4*)(a + k * lda);
#pragma unroll
        for (int j = 0; j < V; j++) acc[j] += xk * cmx_g_tof(p.e[j]);
      } else {
        acc[0] += xk * cmx_g_tof(a[k * lda]);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < V; j++) sm[ty * width + tx * V + j] = acc[j];
  __syncthreads();
  const int lid = ty * blockDim.x + tx;
  if (lid < width) {
    cmx_gf s = 0;
    for (int t = 0; t < TY; t++) s += sm[t * width + lid];
    const long long c = (long long)blockIdx.x * width + lid;
    if (c < N) {
      if (gridDim.y == 1)
        y[c] = cmx_g_from(s);
      else
        part[(long long)blockIdx.y * N + c] = s;
    }
  }
}

#define CMX_GEMV_COLS(NAME, VEC)                                         \
  extern "C" __global__ void NAME(                                       \
      const cmx_gt* A, long long lda, const cmx_gt* x, long long incx,   \
      cmx_gt* y, cmx_gf* part, long long N, long long K, long long kc) { \
    CMX_GRID_WAIT();                                                     \
    cmx_gemv_cols_body<VEC>(A, lda, x, incx, y, part, N, K, kc);         \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gemv_cols_v)
CMX_GEMV_COLS(cmx_gemv_cols_v, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gemv_cols_s)
CMX_GEMV_COLS(cmx_gemv_cols_s, false)
#endif
