// Softmax kernels for one floating dtype. The module is common.cu, the
// prelude, ew_bind.cu and primitives/ew_scalar.h, then this file. The
// prelude (softmax.c) defines:
//   CMX_S_T      the storage type (input and output)
//   CMX_S_F      the compute type (float; double for float64)
//   CMX_S_TOF(x), CMX_S_FROMF(v)   storage <-> compute
// A row is the reduced elements of one position of the kept dims: K and R
// are their collapsed layouts with the input's strides (array 1) and the
// output's (array 2). y = exp(x - max) / sum(exp(x - max)) as the CPU
// computes it (a row of all -inf, or holding +inf or NaN, gives NaN).
// blockDim.x threads take a row (blockDim.y rows a block; blockDim.y is 1
// when blockDim.x > 32). Kernels:
//   cmx_sm_reg_c / cmx_sm_reg_0   rows of up to 16 * blockDim.x elements,
//          held in registers: one read, one write per element
//   cmx_sm_loop_c / cmx_sm_loop_0 any length: the row is read three times
// (_c: the row contiguous in input and output; _0: any strides).

typedef CMX_S_T cmx_st;
typedef CMX_S_F cmx_sf;
typedef cmx_layout_n<3> cmx_sl;

#define CMX_S_FN static __device__ __forceinline__
#define CMX_S_NE 16

CMX_S_FN cmx_sf cmx_s_max(cmx_sf a, cmx_sf b) {
  return ((b > a) || (b != b)) ? b : a;
}

// The block's (row group's) combination of v: op 0 max, 1 sum. Every
// thread of the row gets it.
CMX_S_FN cmx_sf cmx_s_allreduce(cmx_sf v, int op) {
  __shared__ cmx_sf sm[32];
#pragma unroll
  for (int d = 16; d > 0; d /= 2) {
    cmx_sf w = __shfl_xor_sync(0xffffffffu, v, d);
    v = op == 0 ? cmx_s_max(v, w) : v + w;
  }
  if (blockDim.x > 32) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    __syncthreads();  // sm is free again (an earlier call read it)
    if (lane == 0) sm[wid] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? sm[lane]
                                      : (op == 0 ? -(cmx_sf)CMX_INFF : 0);
#pragma unroll
    for (int d = 16; d > 0; d /= 2) {
      cmx_sf w = __shfl_xor_sync(0xffffffffu, v, d);
      v = op == 0 ? cmx_s_max(v, w) : v + w;
    }
  }
  return v;
}

// Offsets of element i of the row in the input and the output.
template <bool C>
CMX_S_FN void cmx_s_off(const cmx_sl& R, long long i, long long& xi,
                        long long& yi) {
  if (C) {
    xi = yi = i;
  } else {
    long long off[2];
    cmx_offsets<long long, 0, 3>(R, i, off);
    xi = off[0];
    yi = off[1];
  }
}

template <bool C, bool REG>
CMX_S_FN void cmx_softmax(const cmx_st* x, cmx_st* y, long long nrows,
                          long long len, const cmx_sl& K, const cmx_sl& R) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;  // inactive rows still join the shuffles
  const int t = threadIdx.x, G = blockDim.x;
  long long bx = 0, by = 0;
  if (active) {
    long long off[2];
    cmx_offsets<long long, 0, 3>(K, r, off);
    bx = off[0];
    by = off[1];
  }
  const cmx_st* xr = x + bx;
  cmx_st* yr = y + by;
  const long long n = active ? len : 0;
  cmx_sf m = -(cmx_sf)CMX_INFF, s = 0;
  if (REG) {
    cmx_sf v[CMX_S_NE];
#pragma unroll
    for (int j = 0; j < CMX_S_NE; j++) {
      long long i = (long long)j * G + t, xi, yi;
      cmx_s_off<C>(R, i, xi, yi);
      v[j] = i < n ? CMX_S_TOF(xr[xi]) : -(cmx_sf)CMX_INFF;
      if (i < n) m = cmx_s_max(m, v[j]);
    }
    m = cmx_s_allreduce(m, 0);
#pragma unroll
    for (int j = 0; j < CMX_S_NE; j++) {
      long long i = (long long)j * G + t;
      v[j] = exp(v[j] - m);
      if (i < n) s += v[j];
    }
    s = cmx_s_allreduce(s, 1);
    const cmx_sf inv = (cmx_sf)(1.0 / (double)s);
#pragma unroll
    for (int j = 0; j < CMX_S_NE; j++) {
      long long i = (long long)j * G + t, xi, yi;
      cmx_s_off<C>(R, i, xi, yi);
      if (i < n) yr[yi] = CMX_S_FROMF(v[j] * inv);
    }
  } else {
    long long xi, yi;
    for (long long i = t; i < n; i += G) {
      cmx_s_off<C>(R, i, xi, yi);
      m = cmx_s_max(m, CMX_S_TOF(xr[xi]));
    }
    m = cmx_s_allreduce(m, 0);
    for (long long i = t; i < n; i += G) {
      cmx_s_off<C>(R, i, xi, yi);
      s += exp(CMX_S_TOF(xr[xi]) - m);
    }
    s = cmx_s_allreduce(s, 1);
    const cmx_sf inv = (cmx_sf)(1.0 / (double)s);
    for (long long i = t; i < n; i += G) {
      cmx_s_off<C>(R, i, xi, yi);
      yr[yi] = CMX_S_FROMF(exp(CMX_S_TOF(xr[xi]) - m) * inv);
    }
  }
}

#define CMX_SM(NAME, C, REG)                                          \
  extern "C" __global__ void NAME(                                    \
      const cmx_st* x, cmx_st* y, long long nrows, long long len,     \
      const CMX_GRID_CONST cmx_sl K, const CMX_GRID_CONST cmx_sl R) { \
    CMX_GRID_WAIT();                                                  \
    cmx_softmax<C, REG>(x, y, nrows, len, K, R);                      \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sm_reg_c)
CMX_SM(cmx_sm_reg_c, true, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sm_reg_0)
CMX_SM(cmx_sm_reg_0, false, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sm_loop_c)
CMX_SM(cmx_sm_loop_c, true, false)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sm_loop_0)
CMX_SM(cmx_sm_loop_0, false, false)
#endif
