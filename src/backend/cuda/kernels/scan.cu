// Scan kernels for one (kind, dtype) pair. The module is common.cu, the
// prelude, ew_bind.cu and primitives/ew_scalar.h, then this file. The
// prelude (scan.c) defines:
//   CMX_C_T      the storage type (input and output)
//   CMX_C_A      the accumulator type; CMX_C_LD(x), CMX_C_ST(a) the
//                conversions; CMX_C_OP(a, b) (a before b), CMX_C_ID
// The data is (outer, n, inner) row-major, scanned along n; y may be x (in
// place: every element is read and written by one thread). Kernels:
//   cmx_scan_col   a thread per (outer, inner) column, sequential along n
//                  (neighbouring threads: neighbouring columns); also
//                  short contiguous rows (inner 1)
//   cmx_scan_tile  contiguous rows (inner 1) in tiles of 16 elements a
//                  thread (each warp's share loaded as coalesced 16-byte
//                  groups), one pass: each tile publishes its total, then
//                  its inclusive prefix, and finds its own prefix by
//                  looking back over its predecessors' (decoupled
//                  look-back); tiles are numbered in the order blocks
//                  start (an atomic counter), so every tile waited on is
//                  running or done.

typedef CMX_C_T cmx_ct;
typedef CMX_C_A cmx_ca;

#define CMX_C_FN static __device__ __forceinline__
#define CMX_C_NE 16

CMX_C_FN float cmx_c_laef(float a, float b) {
  if (a != a || b != b) return a + b;
  float hi = a > b ? a : b, lo = a > b ? b : a;
  if (isinf(hi)) return hi;
  return hi + log1pf(expf(lo - hi));
}
CMX_C_FN double cmx_c_laed(double a, double b) {
  if (a != a || b != b) return a + b;
  double hi = a > b ? a : b, lo = a > b ? b : a;
  if (isinf(hi)) return hi;
  return hi + log1p(exp(lo - hi));
}
CMX_C_FN bool cmx_c_cnan(cmx_c64 z) {
  return z.re != z.re || z.im != z.im;
}
CMX_C_FN cmx_c64 cmx_c_cmax(cmx_c64 a, cmx_c64 b) {
  if (cmx_c_cnan(a)) return a;
  if (cmx_c_cnan(b)) return b;
  return (b.re > a.re || (b.re == a.re && b.im > a.im)) ? b : a;
}
CMX_C_FN cmx_c64 cmx_c_cmin(cmx_c64 a, cmx_c64 b) {
  if (cmx_c_cnan(a)) return a;
  if (cmx_c_cnan(b)) return b;
  return (b.re < a.re || (b.re == a.re && b.im < a.im)) ? b : a;
}
CMX_C_FN cmx_c64 cmx_c_cadd(cmx_c64 a, cmx_c64 b) {
  return cmx_c64_make(a.re + b.re, a.im + b.im);
}
CMX_C_FN cmx_c64 cmx_c_cmul(cmx_c64 a, cmx_c64 b) {
  return cmx_c64_make(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
#define CMX_C_MAXF(a, b) ((((b) > (a)) || ((b) != (b))) ? (b) : (a))
#define CMX_C_MINF(a, b) ((((b) < (a)) || ((b) != (b))) ? (b) : (a))
#define CMX_C_MAXI(a, b) ((b) > (a) ? (b) : (a))
#define CMX_C_MINI(a, b) ((b) < (a) ? (b) : (a))

CMX_C_FN cmx_ca cmx_c_op(cmx_ca a, cmx_ca b) {
  return CMX_C_OP(a, b);
}

// Accumulators moved and stored word by word.
#define CMX_C_W ((int)((sizeof(cmx_ca) + 3) / 4))
union cmx_c_words {
  cmx_ca a;
  unsigned w[CMX_C_W];
};
// v from lane - d (UP) or from lane d, word by word.
template <bool UP>
CMX_C_FN cmx_ca cmx_c_shfl(cmx_ca v, int d) {
  cmx_c_words u;
  u.a = v;
#pragma unroll
  for (int i = 0; i < CMX_C_W; i++)
    u.w[i] = UP ? __shfl_up_sync(0xffffffffu, u.w[i], d)
                : __shfl_sync(0xffffffffu, u.w[i], d);
  return u.a;
}
// Tile status values: CMX_C_W words each (4-byte aligned whatever the
// accumulator's size), loaded and stored bypassing L1 (other blocks write
// them).
CMX_C_FN cmx_ca cmx_c_ld(const unsigned* base, long long i) {
  cmx_c_words u;
#pragma unroll
  for (int k = 0; k < CMX_C_W; k++) u.w[k] = __ldcg(base + i * CMX_C_W + k);
  return u.a;
}
CMX_C_FN void cmx_c_st(unsigned* base, long long i, cmx_ca v) {
  cmx_c_words u;
  u.a = v;
#pragma unroll
  for (int k = 0; k < CMX_C_W; k++) __stcg(base + i * CMX_C_W + k, u.w[k]);
}

// ---------------- columns ----------------
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scan_col)
extern "C" __global__ void cmx_scan_col(const cmx_ct* x, cmx_ct* y,
                                        long long outer, long long n,
                                        long long inner, int reverse,
                                        int inclusive) {
  CMX_GRID_WAIT();
  const long long nt = cmx_nthreads();
  for (long long idx = cmx_tid(); idx < outer * inner; idx += nt) {
    const long long o = idx / inner, c = idx - o * inner;
    const long long base = o * n * inner + c;
    cmx_ca acc = CMX_C_ID;
    for (long long i = 0; i < n; i++) {
      const long long off = base + (reverse ? n - 1 - i : i) * inner;
      cmx_ca v = CMX_C_LD(x[off]);
      if (inclusive) {
        acc = cmx_c_op(acc, v);
        y[off] = CMX_C_ST(acc);
      } else {
        y[off] = CMX_C_ST(acc);
        acc = cmx_c_op(acc, v);
      }
    }
  }
}
#endif

// ---------------- tiles with look-back ----------------
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scan_tile)
// Inclusive scan of v over the warp's lanes.
CMX_C_FN cmx_ca cmx_c_warp_incl(cmx_ca v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    cmx_ca w = cmx_c_shfl<true>(v, d);
    if (lane >= d) v = cmx_c_op(w, v);
  }
  return v;
}

// Given each warp's total wt (the same in all its lanes), the combination
// of the warps before this one; *total gets the block's.
CMX_C_FN cmx_ca cmx_c_block_warps_excl(cmx_ca wt, cmx_ca* total) {
  __shared__ cmx_ca sw[32];
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const int nw = (blockDim.x + 31) >> 5;
  if (lane == 0) sw[wid] = wt;
  __syncthreads();
  if (wid == 0) {
    cmx_ca t = lane < nw ? sw[lane] : (cmx_ca)CMX_C_ID;
    sw[lane] = cmx_c_warp_incl(t, lane);  // inclusive scan of the totals
  }
  __syncthreads();
  *total = sw[nw - 1];
  return wid > 0 ? sw[wid - 1] : (cmx_ca)CMX_C_ID;
}

extern "C" __global__ void cmx_scan_tile(const cmx_ct* x, cmx_ct* y,
                                         long long n, long long ntiles,
                                         int reverse, int inclusive,
                                         unsigned long long* counter,
                                         int* flags, unsigned* agg,
                                         unsigned* pref) {
  CMX_GRID_WAIT();
  __shared__ long long s_id;
  __shared__ cmx_ca s_prefix;
  if (threadIdx.x == 0) s_id = (long long)atomicAdd(counter, 1ull);
  __syncthreads();
  const long long id = s_id, row = id / ntiles, t = id - row * ntiles;
  const cmx_ct* xr = x + row * n;
  cmx_ct* yr = y + row * n;
  const long long tile = (long long)blockDim.x * CMX_C_NE;
  // Each warp takes 32 * CMX_C_NE consecutive elements of the tile, as NP
  // groups of 32 * V: in group q, lane l holds the V elements from
  // wbase + (q * 32 + l) * V, so each group's load is one coalesced
  // 16-byte load a lane. The scan runs group by group (local, then across
  // the lanes, then the groups' running total).
  constexpr int V = 16 / sizeof(cmx_ct) > 0 ? 16 / sizeof(cmx_ct) : 1;
  constexpr int NP = CMX_C_NE / V;
  const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  const long long wbase = t * tile + (long long)wid * 32 * CMX_C_NE;
  const bool vec = !reverse && V > 1 && CMX_C_NE % V == 0 &&
                   wbase + 32 * CMX_C_NE <= n &&
                   ((unsigned long long)(xr + wbase) % 16 == 0) &&
                   ((unsigned long long)(yr + wbase) % 16 == 0);
  cmx_ca v[CMX_C_NE];
  if (vec) {
#pragma unroll
    for (int q = 0; q < NP; q++) {
      cmx_pack<cmx_ct> pk;
      pk.raw = __ldcs((const uint4*)(xr + wbase) + q * 32 + lane);
#pragma unroll
      for (int e = 0; e < V; e++) v[q * V + e] = CMX_C_LD(pk.e[e]);
    }
  } else {
#pragma unroll
    for (int q = 0; q < NP; q++)
#pragma unroll
      for (int e = 0; e < V; e++) {
        long long p = wbase + (long long)(q * 32 + lane) * V + e;
        v[q * V + e] =
            p < n ? CMX_C_LD(xr[reverse ? n - 1 - p : p]) : (cmx_ca)CMX_C_ID;
      }
  }
  cmx_ca carry = CMX_C_ID;  // the warp's groups before q
#pragma unroll
  for (int q = 0; q < NP; q++) {
    cmx_ca run = CMX_C_ID;
#pragma unroll
    for (int e = 0; e < V; e++) {
      cmx_ca prev = run;
      run = cmx_c_op(run, v[q * V + e]);
      v[q * V + e] = inclusive ? run : prev;
    }
    cmx_ca inc = cmx_c_warp_incl(run, lane);
    cmx_ca ex = cmx_c_shfl<true>(inc, 1);
    cmx_ca gp = lane == 0 ? carry : cmx_c_op(carry, ex);
#pragma unroll
    for (int e = 0; e < V; e++) v[q * V + e] = cmx_c_op(gp, v[q * V + e]);
    carry = cmx_c_op(carry, cmx_c_shfl<false>(inc, 31));
  }
  cmx_ca total;
  cmx_ca texcl = cmx_c_block_warps_excl(carry, &total);
  // the tile's prefix: its predecessors' combination
  const long long g = row * ntiles;  // status index of the row's tile 0
  if (wid == 0) {
    cmx_ca excl = CMX_C_ID;
    if (t == 0) {
      if (lane == 0) {
        cmx_c_st(pref, g, total);
        __threadfence();
        ((volatile int*)flags)[g] = 2;
      }
    } else {
      if (lane == 0) {
        cmx_c_st(agg, g + t, total);
        __threadfence();
        ((volatile int*)flags)[g + t] = 1;
      }
      long long pred = t - 1;
      while (true) {
        long long j = pred - lane;
        int f = 2;
        cmx_ca w = CMX_C_ID;
        if (j >= 0) {
          while ((f = ((volatile int*)flags)[g + j]) == 0) {
          }
          __threadfence();
          w = f == 2 ? cmx_c_ld(pref, g + j) : cmx_c_ld(agg, g + j);
        }
        unsigned m = __ballot_sync(0xffffffffu, f == 2);
        int cnt = m ? __ffs(m) : 32;  // lanes 0 .. cnt-1 take part
        cmx_ca win = CMX_C_ID;        // earliest tile first
        for (int l = cnt - 1; l >= 0; l--)
          win = cmx_c_op(win, cmx_c_shfl<false>(w, l));
        excl = cmx_c_op(win, excl);
        if (m) break;
        pred -= 32;
      }
      if (lane == 0) {
        cmx_c_st(pref, g + t, cmx_c_op(excl, total));
        __threadfence();
        ((volatile int*)flags)[g + t] = 2;
      }
    }
    if (lane == 0) s_prefix = excl;
  }
  __syncthreads();
  const cmx_ca pre = cmx_c_op(s_prefix, texcl);
  if (vec) {
#pragma unroll
    for (int q = 0; q < NP; q++) {
      cmx_pack<cmx_ct> pk;
#pragma unroll
      for (int e = 0; e < V; e++)
        pk.e[e] = CMX_C_ST(cmx_c_op(pre, v[q * V + e]));
      __stcs((uint4*)(yr + wbase) + q * 32 + lane, pk.raw);
    }
  } else {
#pragma unroll
    for (int q = 0; q < NP; q++)
#pragma unroll
      for (int e = 0; e < V; e++) {
        long long p = wbase + (long long)(q * 32 + lane) * V + e;
        if (p < n)
          yr[reverse ? n - 1 - p : p] = CMX_C_ST(cmx_c_op(pre, v[q * V + e]));
      }
  }
}
#endif
