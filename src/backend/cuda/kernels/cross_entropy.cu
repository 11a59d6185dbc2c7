// CrossEntropy kernels for one float dtype (cross_entropy.c). The module
// is common.cu, the prelude, ew_bind.cu and primitives/ew_scalar.h, then
// this file. The prelude defines CMX_F_T (the storage type), CMX_F_TOF(x)
// (storage -> float). Inputs: x, the logits, nrows contiguous rows of V;
// tg, the targets (int64, one per row). out[r] = lse(x[r]) - x[r][t] in
// float32, t = tg[r] (+ V when negative), one pass over each row: each
// thread keeps an online max m and sum of exp(x - m) over its elements,
// then the row's threads merge theirs. As the CPU kernel: a row holding
// NaN gives NaN, a row whose max is infinite has lse = max. A target out
// of [-V, V) is recorded in err (the stream's index-error record, code
// names cross_entropy) and its row gets NaN.
// blockDim.x threads take a row (blockDim.y rows a block when blockDim.x
// is 32). Kernels:
//   cmx_ce_vec  rows read with 16-byte loads (V a multiple of the
//               elements of 16 bytes, x 16-byte aligned)
//   cmx_ce_gen  rows read element by element

typedef CMX_F_T cmx_ce_t;

struct cmx_ce_acc {
  float m, s;
  int nan;
};

static __device__ __forceinline__ void cmx_ce_add(cmx_ce_acc& a, float x) {
  if (x != x) {
    a.nan = 1;
  } else if (x > a.m) {
    a.s = a.s * expf(a.m - x) + 1.0f;  // m = -inf: 0 * 0
    a.m = x;
  } else if (a.m != -CMX_INFF) {
    a.s += expf(x - a.m);
  }
}

static __device__ __forceinline__ void cmx_ce_merge(cmx_ce_acc& a, float m,
                                                    float s, int nan) {
  a.nan |= nan;
  const float M = fmaxf(a.m, m);
  if (M != -CMX_INFF) a.s = a.s * expf(a.m - M) + s * expf(m - M);
  a.m = M;
}

// The row's merged accumulator, in every thread of the row.
static __device__ __forceinline__ cmx_ce_acc cmx_ce_allreduce(cmx_ce_acc a) {
  __shared__ float sm_m[32], sm_s[32];
  __shared__ int sm_n[32];
#pragma unroll
  for (int d = 16; d > 0; d /= 2)
    cmx_ce_merge(a, __shfl_xor_sync(0xffffffffu, a.m, d),
                 __shfl_xor_sync(0xffffffffu, a.s, d),
                 __shfl_xor_sync(0xffffffffu, a.nan, d));
  if (blockDim.x > 32) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    if (lane == 0) {
      sm_m[wid] = a.m;
      sm_s[wid] = a.s;
      sm_n[wid] = a.nan;
    }
    __syncthreads();
    cmx_ce_acc b = {-CMX_INFF, 0.0f, 0};
    if (lane < (int)(blockDim.x / 32)) {
      b.m = sm_m[lane];
      b.s = sm_s[lane];
      b.nan = sm_n[lane];
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2)
      cmx_ce_merge(b, __shfl_xor_sync(0xffffffffu, b.m, d),
                   __shfl_xor_sync(0xffffffffu, b.s, d),
                   __shfl_xor_sync(0xffffffffu, b.nan, d));
    a = b;
  }
  return a;
}

template <bool VEC>
static __device__ __forceinline__ void cmx_ce_row(
    const cmx_ce_t* __restrict__ x, const long long* __restrict__ tg,
    float* __restrict__ out, long long nrows, long long V,
    cmx_index_error* err, int code, int axis) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;  // inactive rows still join the shuffles
  const int t = threadIdx.x, G = blockDim.x;
  const cmx_ce_t* xr = x + (active ? r : 0) * V;
  cmx_ce_acc a = {-CMX_INFF, 0.0f, 0};
  if (active) {
    if (VEC) {
      constexpr int N = 16 / sizeof(cmx_ce_t);
      const uint4* xv = reinterpret_cast<const uint4*>(xr);
      const long long nv = V / N;
      for (long long i = t; i < nv; i += G) {
        uint4 u = xv[i];
        const cmx_ce_t* e = reinterpret_cast<const cmx_ce_t*>(&u);
#pragma unroll
        for (int j = 0; j < N; j++) cmx_ce_add(a, (float)CMX_F_TOF(e[j]));
      }
    } else {
      for (long long i = t; i < V; i += G)
        cmx_ce_add(a, (float)CMX_F_TOF(xr[i]));
    }
  }
  a = cmx_ce_allreduce(a);
  if (!active || t != 0) return;
  long long k = tg[r], kw = k < 0 ? k + V : k;
  if (kw < 0 || kw >= V) {
    cmx_report_bad_index(err, code, axis, k, V);
    out[r] = __int_as_float(0x7fc00000);
    return;
  }
  const float lse = a.nan ? __int_as_float(0x7fc00000)
                    : (a.m == CMX_INFF || a.m == -CMX_INFF) ? a.m
                                                            : a.m + logf(a.s);
  out[r] = lse - (float)CMX_F_TOF(xr[kw]);
}

#define CMX_CE(NAME, VEC)                                                  \
  extern "C" __global__ void NAME(const cmx_ce_t* x, const long long* tg,  \
                                  float* out, long long nrows, long long V, \
                                  cmx_index_error* err, int code, int axis) { \
    CMX_GRID_WAIT();                                                       \
    cmx_ce_row<VEC>(x, tg, out, nrows, V, err, code, axis);                \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ce_vec)
CMX_CE(cmx_ce_vec, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ce_gen)
CMX_CE(cmx_ce_gen, false)
#endif
