// Kernels of mx.fast's RMSNorm, LayerNorm and RoPE for one storage dtype.
// The module is common.cu, the prelude, ew_bind.cu and primitives/
// ew_scalar.h, then this file. The prelude (fast.c) defines:
//   CMX_F_T        the storage type (float16, bfloat16 as uint16_t; float)
//   CMX_F_TOF(x), CMX_F_FROMF(v)   storage <-> float32
// Everything is computed in float32 in the CPU kernels' order
// (backend/cpu/fast.c); outputs are row-major.
//
// Norms: a row (the last axis) is taken by blockDim.x threads, blockDim.y
// rows a block. The x row starts at the offset of row r in layout X (the
// outer dims; array 1: x's strides), its elements ls apart; weight and
// bias elements ws and bs apart (ignored when the pointer is null).
//   cmx_norm_vec_<rms|ln>: ls == ws == bs == 1, rows, weight and bias
//        16-byte aligned, D a multiple of the vector width V; each thread
//        holds up to NV vectors of the row in registers (one read of x).
//   cmx_norm_gen_<rms|ln>: any strides and length; x read two or three
//        times (L2 serves the repeats).
// RoPE: one thread per (row, j), j < D - dims/2: j < dims/2 rotates one
// pair, the rest copy the features past dims. RoPEMulti: the same over
// the concatenated work of up to 4 arrays.

typedef CMX_F_T cmx_ft;
typedef cmx_layout_n<2> cmx_fl;

#define CMX_F_FN static __device__ __forceinline__
#define CMX_F_V (16 / (int)sizeof(cmx_ft))
#define CMX_F_NV 4

// The sum of v over the blockDim.x threads of this row; every thread of
// the row gets it. Rows of more than 32 threads have blockDim.y == 1.
CMX_F_FN float cmx_f_sum(float v) {
  __shared__ float sm[32];
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  if (blockDim.x > 32) {
    const int lane = threadIdx.x & 31, wid = threadIdx.x / 32;
    __syncthreads();  // sm is free again (an earlier call read it)
    if (lane == 0) sm[wid] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? sm[lane] : 0.0f;
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
  }
  return v;
}

CMX_F_FN float cmx_f_scale(float v, float r, float w, float b, bool hw,
                           bool hb) {
  // the CPU's order: (v * r) * w + b
  float y = v * r;
  if (hw) y = y * w;
  if (hb) y = y + b;
  return y;
}

// The vector kernels' sum of squares over a thread's vectors (zeros past
// the row).
CMX_F_FN float cmx_norm_vec_sumsq(const float (&v)[CMX_F_NV][CMX_F_V]) {
  float s = 0;
#pragma unroll
  for (int j = 0; j < CMX_F_NV; j++)
#pragma unroll
    for (int e = 0; e < CMX_F_V; e++) s += v[j][e] * v[j][e];
  return s;
}

// The vector kernels' last step: a thread's vectors j * G + t below nv of
// the row yr, (v * rs) * w + b as 16-byte packs (pw, pb: the loaded
// weight and bias packs, used when w, b are not null).
CMX_F_FN void cmx_norm_vec_put(const float (&v)[CMX_F_NV][CMX_F_V],
                               const cmx_pack<cmx_ft> (&pw)[CMX_F_NV],
                               const cmx_pack<cmx_ft> (&pb)[CMX_F_NV],
                               const cmx_ft* w, const cmx_ft* b, float rs,
                               uint4* yr, long long nv, int G, int t) {
#pragma unroll
  for (int j = 0; j < CMX_F_NV; j++) {
    long long i = (long long)j * G + t;
    if (i < nv) {
      cmx_pack<cmx_ft> po;
#pragma unroll
      for (int e = 0; e < CMX_F_V; e++)
        po.e[e] = CMX_F_FROMF(
            cmx_f_scale(v[j][e], rs, w ? CMX_F_TOF(pw[j].e[e]) : 0.0f,
                        b ? CMX_F_TOF(pb[j].e[e]) : 0.0f, w != 0, b != 0));
      yr[i] = po.raw;
    }
  }
}

template <bool LN>
CMX_F_FN void cmx_norm_vec(const cmx_ft* x, const cmx_ft* w, const cmx_ft* b,
                           cmx_ft* y, long long nrows, long long D, float eps,
                           const cmx_fl& X) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;  // inactive rows still join the shuffles
  const int t = threadIdx.x, G = blockDim.x;
  const long long nv = active ? D / CMX_F_V : 0;
  long long xo = 0;
  if (active) {
    long long off[1];
    cmx_offsets<long long, 0, 2>(X, r, off);
    xo = off[0];
  }
  const uint4* xr = (const uint4*)(x + xo);
  const uint4* wr = (const uint4*)w;
  const uint4* br = (const uint4*)b;
  // weight and bias loaded with x, before the reductions: their latency
  // overlaps x's instead of following the sums (a one-row norm, as in a
  // decoding step, is that latency)
  cmx_pack<cmx_ft> pw[CMX_F_NV], pb[CMX_F_NV];
  float v[CMX_F_NV][CMX_F_V];
  float s = 0;
#pragma unroll
  for (int j = 0; j < CMX_F_NV; j++) {
    long long i = (long long)j * G + t;
    pw[j].raw = w && i < nv ? wr[i] : make_uint4(0, 0, 0, 0);
    pb[j].raw = b && i < nv ? br[i] : make_uint4(0, 0, 0, 0);
    cmx_pack<cmx_ft> p;
    p.raw = i < nv ? xr[i] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int e = 0; e < CMX_F_V; e++) {
      v[j][e] = i < nv ? CMX_F_TOF(p.e[e]) : 0.0f;
      s += v[j][e];
    }
  }
  const float Df = (float)D;
  if (LN) {
    const float m = cmx_f_sum(s) / Df;
    s = 0;
#pragma unroll
    for (int j = 0; j < CMX_F_NV; j++) {
      long long i = (long long)j * G + t;
#pragma unroll
      for (int e = 0; e < CMX_F_V; e++) {
        v[j][e] = i < nv ? v[j][e] - m : 0.0f;
        s += v[j][e] * v[j][e];
      }
    }
  } else {
    s = cmx_norm_vec_sumsq(v);
  }
  const float rs = 1.0f / sqrtf(cmx_f_sum(s) / Df + eps);
  cmx_norm_vec_put(v, pw, pb, w, b, rs, (uint4*)(y + r * D), nv, G, t);
}

template <bool LN>
CMX_F_FN void cmx_norm_gen(const cmx_ft* x, const cmx_ft* w, const cmx_ft* b,
                           cmx_ft* y, long long nrows, long long D, float eps,
                           long long ls, long long ws, long long bs,
                           const cmx_fl& X) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;
  const int t = threadIdx.x, G = blockDim.x;
  const long long n = active ? D : 0;
  long long xo = 0;
  if (active) {
    long long off[1];
    cmx_offsets<long long, 0, 2>(X, r, off);
    xo = off[0];
  }
  const cmx_ft* xr = x + xo;
  const float Df = (float)D;
  float m = 0, s = 0;
  if (LN) {
    for (long long i = t; i < n; i += G) s += CMX_F_TOF(xr[i * ls]);
    m = cmx_f_sum(s) / Df;
    s = 0;
  }
  for (long long i = t; i < n; i += G) {
    float d = CMX_F_TOF(xr[i * ls]) - m;
    s += d * d;
  }
  const float rs = 1.0f / sqrtf(cmx_f_sum(s) / Df + eps);
  cmx_ft* yr = y + r * D;
  for (long long i = t; i < n; i += G)
    yr[i] = CMX_F_FROMF(cmx_f_scale(CMX_F_TOF(xr[i * ls]) - m, rs,
                                    w ? CMX_F_TOF(w[i * ws]) : 0.0f,
                                    b ? CMX_F_TOF(b[i * bs]) : 0.0f, w != 0,
                                    b != 0));
}

#define CMX_NORM_VEC(NAME, LN)                                             \
  extern "C" __global__ void NAME(const cmx_ft* x, const cmx_ft* w,        \
                                  const cmx_ft* b, cmx_ft* y,              \
                                  long long nrows, long long D, float eps, \
                                  const CMX_GRID_CONST cmx_fl X) {         \
    CMX_GRID_WAIT();                                                       \
    cmx_norm_vec<LN>(x, w, b, y, nrows, D, eps, X);                        \
  }
#define CMX_NORM_GEN(NAME, LN)                                              \
  extern "C" __global__ void NAME(                                          \
      const cmx_ft* x, const cmx_ft* w, const cmx_ft* b, cmx_ft* y,         \
      long long nrows, long long D, float eps, long long ls, long long ws,  \
      long long bs, const CMX_GRID_CONST cmx_fl X) {                        \
    CMX_GRID_WAIT();                                                        \
    cmx_norm_gen<LN>(x, w, b, y, nrows, D, eps, ls, ws, bs, X);             \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_norm_vec_rms)
CMX_NORM_VEC(cmx_norm_vec_rms, false)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_norm_vec_ln)
CMX_NORM_VEC(cmx_norm_vec_ln, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_norm_gen_rms)
CMX_NORM_GEN(cmx_norm_gen_rms, false)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_norm_gen_ln)
CMX_NORM_GEN(cmx_norm_gen_ln, true)
#endif

// AddRMSNorm: h = x + r rounded to the storage type (Add's result), then
// RMSNorm of that rounded h, in one pass; h and y row-major. Row r of x
// and r starts at the offsets of layout X (arrays 1 and 2: x's and r's
// strides), elements lx and lr apart. The thread layout, the partition of
// a row among threads and the sums are the RMSNorm kernels', so y is bit
// for bit what cmx_norm_*_rms gives on the stored h.
//   cmx_addnorm_vec: D a multiple of V (weight contiguous and aligned, as
//        cmx_norm_vec_rms needs for h); packed: x and r rows contiguous and
//        16-byte aligned (16-byte loads), else element loads.
//   cmx_addnorm_gen: the rest, as cmx_norm_gen_rms.
typedef cmx_layout_n<3> cmx_fl3;

CMX_F_FN void cmx_addnorm_vec(const cmx_ft* x, const cmx_ft* rs,
                              const cmx_ft* w, cmx_ft* h, cmx_ft* y,
                              long long nrows, long long D, float eps,
                              long long lx, long long lr, int packed,
                              const cmx_fl3& X) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;
  const int t = threadIdx.x, G = blockDim.x;
  const long long nv = active ? D / CMX_F_V : 0;
  long long off[2] = {0, 0};
  if (active) cmx_offsets<long long, 0, 3>(X, r, off);
  const cmx_ft* xr = x + off[0];
  const cmx_ft* rr = rs + off[1];
  const uint4* wr = (const uint4*)w;
  uint4* hr = (uint4*)(h + r * D);
  cmx_pack<cmx_ft> pw[CMX_F_NV];
  float v[CMX_F_NV][CMX_F_V];
#pragma unroll
  for (int j = 0; j < CMX_F_NV; j++) {
    long long i = (long long)j * G + t;
    pw[j].raw = w && i < nv ? wr[i] : make_uint4(0, 0, 0, 0);
    cmx_pack<cmx_ft> px, pr, ph;
    if (i < nv) {
      if (packed) {
        px.raw = ((const uint4*)xr)[i];
        pr.raw = ((const uint4*)rr)[i];
      } else {
#pragma unroll
        for (int e = 0; e < CMX_F_V; e++) {
          px.e[e] = xr[(i * CMX_F_V + e) * lx];
          pr.e[e] = rr[(i * CMX_F_V + e) * lr];
        }
      }
#pragma unroll
      for (int e = 0; e < CMX_F_V; e++) {
        ph.e[e] = CMX_F_FROMF(CMX_F_TOF(px.e[e]) + CMX_F_TOF(pr.e[e]));
        v[j][e] = CMX_F_TOF(ph.e[e]);
      }
      hr[i] = ph.raw;
    } else {
#pragma unroll
      for (int e = 0; e < CMX_F_V; e++) v[j][e] = 0.0f;
    }
  }
  // cmx_norm_vec<false>'s tail, without bias
  const float rsq =
      1.0f / sqrtf(cmx_f_sum(cmx_norm_vec_sumsq(v)) / (float)D + eps);
  cmx_norm_vec_put(v, pw, pw, w, (const cmx_ft*)0, rsq, (uint4*)(y + r * D), nv,
                   G, t);
}

CMX_F_FN void cmx_addnorm_gen(const cmx_ft* x, const cmx_ft* rs,
                              const cmx_ft* w, cmx_ft* h, cmx_ft* y,
                              long long nrows, long long D, float eps,
                              long long lx, long long lr, long long ws,
                              const cmx_fl3& X) {
  const long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const bool active = r < nrows;
  const int t = threadIdx.x, G = blockDim.x;
  const long long n = active ? D : 0;
  long long off[2] = {0, 0};
  if (active) cmx_offsets<long long, 0, 3>(X, r, off);
  const cmx_ft* xr = x + off[0];
  const cmx_ft* rr = rs + off[1];
  cmx_ft* hr = h + r * D;
  const float m = 0, Df = (float)D;  // cmx_norm_gen<false>'s arithmetic
  float s = 0;
  for (long long i = t; i < n; i += G) {
    const cmx_ft hv = CMX_F_FROMF(CMX_F_TOF(xr[i * lx]) + CMX_F_TOF(rr[i * lr]));
    hr[i] = hv;
    float d = CMX_F_TOF(hv) - m;
    s += d * d;
  }
  const float rsq = 1.0f / sqrtf(cmx_f_sum(s) / Df + eps);
  cmx_ft* yr = y + r * D;
  // each thread reads back the h elements it wrote itself
  for (long long i = t; i < n; i += G)
    yr[i] = CMX_F_FROMF(cmx_f_scale(CMX_F_TOF(hr[i]) - m, rsq,
                                    w ? CMX_F_TOF(w[i * ws]) : 0.0f, 0.0f,
                                    w != 0, false));
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_addnorm_vec_rms)
extern "C" __global__ void cmx_addnorm_vec_rms(
    const cmx_ft* x, const cmx_ft* r, const cmx_ft* w, cmx_ft* h, cmx_ft* y,
    long long nrows, long long D, float eps, long long lx, long long lr,
    int packed, const CMX_GRID_CONST cmx_fl3 X) {
  CMX_GRID_WAIT();
  cmx_addnorm_vec(x, r, w, h, y, nrows, D, eps, lx, lr, packed, X);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_addnorm_gen_rms)
extern "C" __global__ void cmx_addnorm_gen_rms(
    const cmx_ft* x, const cmx_ft* r, const cmx_ft* w, cmx_ft* h, cmx_ft* y,
    long long nrows, long long D, float eps, long long lx, long long lr,
    long long ws, const CMX_GRID_CONST cmx_fl3 X) {
  CMX_GRID_WAIT();
  cmx_addnorm_gen(x, r, w, h, y, nrows, D, eps, lx, lr, ws, X);
}
#endif

// RoPE over rows of D features (nrows rows, L positions a batch entry's
// run of rows cycling, per_b rows a batch entry). off: the int32 offsets
// (noff_vec: one per batch entry, offset stride os; else off[0]); freqs:
// h float32 frequencies fs apart, or null (inverse frequencies
// exp(i * k)). x rows at layout X with last stride ls; y row-major.
//
// cmx_rope_item: work item j of row r (x row xr, y row yr), the one body
// of cmx_rope and cmx_rope_multi, so both give the same bits.
CMX_F_FN void cmx_rope_item(const cmx_ft* xr, cmx_ft* yr, long long r, int j,
                            long long L, long long per_b, int h,
                            const int* off, int off_vec, long long os,
                            const float* freqs, long long fs, float k,
                            float scale, int traditional, long long ls) {
  if (j >= h) {  // past the rotated features
    const long long i = (long long)2 * h + (j - h);
    yr[i] = xr[i * ls];
    return;
  }
  const long long l = r % L;
  const long long pos = (long long)off[off_vec ? (r / per_b) * os : 0] + l;
  const float inv = freqs ? 1.0f / freqs[j * fs] : expf((float)j * k);
  const float th = ((float)pos * scale) * inv;
  const float c = cosf(th), s = sinf(th);
  const long long i1 = traditional ? 2 * j : j;
  const long long i2 = traditional ? 2 * j + 1 : j + h;
  const float a = CMX_F_TOF(xr[i1 * ls]), bb = CMX_F_TOF(xr[i2 * ls]);
  yr[i1] = CMX_F_FROMF(a * c - bb * s);
  yr[i2] = CMX_F_FROMF(a * s + bb * c);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_rope)
extern "C" __global__ void cmx_rope(const cmx_ft* x, cmx_ft* y,
                                    const int* off, const float* freqs,
                                    long long nrows, long long L,
                                    long long per_b, long long D, int h,
                                    int off_vec, long long os, long long fs,
                                    float k, float scale, int traditional,
                                    long long ls, const CMX_GRID_CONST cmx_fl X) {
  CMX_GRID_WAIT();
  const long long per_row = D - h, n = nrows * per_row;
  for (long long it = cmx_tid(); it < n; it += cmx_nthreads()) {
    const long long r = it / per_row;
    const int j = (int)(it - r * per_row);
    long long o[1];
    cmx_offsets<long long, 0, 2>(X, r, o);
    cmx_rope_item(x + o[0], y + r * D, r, j, L, per_b, h, off, off_vec, os,
                  freqs, fs, k, scale, traditional, ls);
  }
}
#endif

// RoPEMulti: the RoPEs of up to CMX_RM_MAX arrays with one parameter set
// and one offset in one launch. Part e's work items (nrows_e * (D_e - h),
// as cmx_rope's) are items start_e .. start_{e+1} - 1 of the launch; its
// rows are at x_e + sum_d (row index digit d of shape[0..nd)) * stride[d]
// (x's collapsed rows layout, at most CMX_RM_ND dims: fast.c launches
// cmx_rope per part otherwise). Every field is 8 bytes (fast.c's
// rope_part mirrors it).
#define CMX_RM_MAX 4
#define CMX_RM_ND 6
struct cmx_rope_part {
  const cmx_ft* x;
  cmx_ft* y;
  long long start, L, per_b, D, ls, nd;
  long long shape[CMX_RM_ND], stride[CMX_RM_ND];
};
struct cmx_rope_parts {
  cmx_rope_part p[CMX_RM_MAX];
  long long n, total;
};

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_rope_multi)
extern "C" __global__ void cmx_rope_multi(const CMX_GRID_CONST cmx_rope_parts P,
                                          const int* off, const float* freqs,
                                          int h, int off_vec, long long os,
                                          long long fs, float k, float scale,
                                          int traditional) {
  CMX_GRID_WAIT();
  for (long long it = cmx_tid(); it < P.total; it += cmx_nthreads()) {
    int e = 0;
#pragma unroll
    for (int i = 1; i < CMX_RM_MAX; i++)
      if (i < P.n && it >= P.p[i].start) e = i;
    const cmx_rope_part& q = P.p[e];
    const long long per_row = q.D - h, w = it - q.start;
    const long long r = w / per_row;
    const int j = (int)(w - r * per_row);
    long long o = 0, rr = r;
    for (int d = (int)q.nd - 1; d >= 0; d--) {
      const long long s = q.shape[d], qq = rr / s;
      o += (rr - qq * s) * q.stride[d];
      rr = qq;
    }
    cmx_rope_item(q.x + o, q.y + r * q.D, r, j, q.L, q.per_b, h, off, off_vec,
                  os, freqs, fs, k, scale, traditional, q.ls);
  }
}
#endif
