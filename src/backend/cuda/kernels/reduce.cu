// Reduction kernels for one (kind, dtype) pair: Reduce (sum, prod, min,
// max, mean, all, any), ArgReduce (argmin, argmax), LogSumExp and Var. The
// module is common.cu, the prelude, ew_bind.cu and primitives/ew_scalar.h
// (the 16-bit float conversions), then this file. The prelude (reduce.c)
// defines:
//   CMX_R_KIND   the accumulator family: 0 plain (CMX_R_A with CMX_R_OP),
//                1 arg (value and first index), 2 log-sum-exp (running
//                max and sum), 3 variance (count, mean, sum of squared
//                deviations: Chan's combination), 4 complex variance
//   CMX_R_T, CMX_R_O  storage types of the input and the output
//   CMX_R_A      (plain, arg) the accumulator / compared value type
//   CMX_R_LD(x)  storage -> CMX_R_A
//   CMX_R_OP(a, b), CMX_R_ID (plain) the operation and its identity
//   CMX_R_ST(a, c)  (plain) accumulator -> output (c: elements per output)
//   CMX_R_BETTER(v, w), CMX_R_EQ(v, w) (arg) v strictly better than w; v
//                the extremum w (NaN rules as the CPU's ArgReduce)
//   CMX_R_F      (lse, var) the compute type, CMX_R_TOF(x) its load,
//                CMX_R_FROMF(f) its store
//
// The problem: nk outputs (the kept dims K, row-major in the output), each
// reducing nr elements (the reduced dims R, in the order given: arg
// reductions number them row-major). Offsets come from the collapsed
// layouts K and R (array 1 is the input). Kernels:
//   cmx_red_row_<c|1|0>  a group of blockDim.x threads per output,
//                 blockDim.y outputs a block: R contiguous (c: 16-byte
//                 loads), one strided dim (1) or any (0)
//   cmx_red_col_<1|0>    a thread per output (threadIdx.x: neighbours
//                 along K's inner dim), the reduced elements dealt over
//                 threadIdx.y
//   cmx_red_fin          partial accumulators of nparts parts (part p of
//                 output k at p * nk + k) combined, a warp per output
// The row and col kernels cover the reduced range in gridDim.y parts; with
// more than one they write raw accumulators to `part` (then cmx_red_fin).

typedef CMX_R_T cmx_rt;
typedef CMX_R_O cmx_ro;

struct cmx_rparams {
  long long nk, nr, part_len;
  double count;
  int nparts, ddof, sq, pad;
};

#define CMX_R_FN static __device__ __forceinline__

// NaN-propagating max / min of floats (a NaN in b replaces a; a NaN in a
// stays), as the CPU's.
#define CMX_R_MAXF(a, b) ((((b) > (a)) || ((b) != (b))) ? (b) : (a))
#define CMX_R_MINF(a, b) ((((b) < (a)) || ((b) != (b))) ? (b) : (a))
#define CMX_R_MAXI(a, b) ((b) > (a) ? (b) : (a))
#define CMX_R_MINI(a, b) ((b) < (a) ? (b) : (a))

// complex64: sums, products, lexicographic min / max (NaN first).
CMX_R_FN cmx_c64 cmx_r_cadd(cmx_c64 a, cmx_c64 b) {
  return cmx_c64_make(a.re + b.re, a.im + b.im);
}
CMX_R_FN cmx_c64 cmx_r_cmul(cmx_c64 a, cmx_c64 b) {
  return cmx_c64_make(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
CMX_R_FN bool cmx_r_cnan(cmx_c64 z) {
  return z.re != z.re || z.im != z.im;
}
CMX_R_FN bool cmx_r_cless(cmx_c64 a, cmx_c64 b) {
  return a.re < b.re || (a.re == b.re && a.im < b.im);
}
CMX_R_FN cmx_c64 cmx_r_cmax(cmx_c64 a, cmx_c64 b) {
  if (cmx_r_cnan(a)) return a;
  return (cmx_r_cnan(b) || cmx_r_cless(a, b)) ? b : a;
}
CMX_R_FN cmx_c64 cmx_r_cmin(cmx_c64 a, cmx_c64 b) {
  if (cmx_r_cnan(a)) return a;
  return (cmx_r_cnan(b) || cmx_r_cless(b, a)) ? b : a;
}
CMX_R_FN cmx_c64 cmx_r_cdiv(cmx_c64 a, double c) {
  return cmx_c64_make(a.re / (float)c, a.im / (float)c);
}

// ---------------- accumulators ----------------
// Each family gives: the type cmx_racc, cmx_r_ident(), cmx_r_push(a, x, i)
// (element x at reduced index i into a; every kernel pushes a thread's
// elements in increasing i), cmx_r_comb(a, b) (a's elements come before
// b's) and cmx_r_store(a, P).

#if CMX_R_KIND == 0
struct cmx_racc {
  CMX_R_A v;
};
CMX_R_FN cmx_racc cmx_r_ident() {
  cmx_racc a;
  a.v = CMX_R_ID;
  return a;
}
CMX_R_FN cmx_racc cmx_r_comb(cmx_racc a, cmx_racc b) {
  a.v = CMX_R_OP(a.v, b.v);
  return a;
}
CMX_R_FN cmx_racc cmx_r_push(cmx_racc a, cmx_rt x, long long i) {
  (void)i;
  a.v = CMX_R_OP(a.v, CMX_R_LD(x));
  return a;
}
CMX_R_FN cmx_ro cmx_r_store(cmx_racc a, const cmx_rparams& P) {
  (void)P;
  return CMX_R_ST(a.v, P.count);
}

#elif CMX_R_KIND == 1
// The first index of the extremum: a strictly better value wins, equal
// values the smaller index, so any combination order gives the CPU's.
struct cmx_racc {
  CMX_R_A v;
  unsigned i;  // 0xffffffff: nothing yet
};
CMX_R_FN cmx_racc cmx_r_ident() {
  cmx_racc a;
  a.v = CMX_R_A();
  a.i = 0xffffffffu;
  return a;
}
CMX_R_FN cmx_racc cmx_r_comb(cmx_racc a, cmx_racc b) {
  if (a.i == 0xffffffffu) return b;
  if (b.i == 0xffffffffu) return a;
  if (CMX_R_BETTER(b.v, a.v)) return b;
  if (CMX_R_BETTER(a.v, b.v)) return a;
  return b.i < a.i ? b : a;  // equal
}
// i is above every index in a: an equal value never wins, so the pushed
// element replaces a exactly when cmx_r_comb(a, {x, i}) would take it.
CMX_R_FN cmx_racc cmx_r_push(cmx_racc a, cmx_rt x, long long i) {
  const CMX_R_A v = CMX_R_LD(x);
  if (a.i == 0xffffffffu || CMX_R_BETTER(v, a.v)) {
    a.v = v;
    a.i = (unsigned)i;
  }
  return a;
}
CMX_R_FN unsigned cmx_r_store(cmx_racc a, const cmx_rparams& P) {
  (void)P;
  return a.i == 0xffffffffu ? 0u : a.i;
}

#elif CMX_R_KIND == 2
// log-sum-exp: the running max m and the sum s of exp(x - m); s == 0 is
// the empty accumulator. An infinite or NaN max is the result itself.
typedef CMX_R_F cmx_rf;
struct cmx_racc {
  cmx_rf m, s;
};
CMX_R_FN cmx_rf cmx_r_exp(cmx_rf x) {
  return exp(x);
}
CMX_R_FN cmx_racc cmx_r_ident() {
  cmx_racc a;
  a.m = -(cmx_rf)CMX_INFF;
  a.s = 0;
  return a;
}
CMX_R_FN cmx_racc cmx_r_comb(cmx_racc a, cmx_racc b) {
  if (a.s == 0) return b;
  if (b.s == 0) return a;
  cmx_racc r;
  if (a.m != a.m || b.m != b.m) {
    r.m = a.m != a.m ? a.m : b.m;
    r.s = 1;
    return r;
  }
  r.m = a.m > b.m ? a.m : b.m;
  if (isinf(r.m)) {  // +inf, or every element -inf
    r.s = 1;
    return r;
  }
  r.s = a.s * cmx_r_exp(a.m - r.m) + b.s * cmx_r_exp(b.m - r.m);
  return r;
}
CMX_R_FN cmx_racc cmx_r_push(cmx_racc a, cmx_rt xs, long long i) {
  (void)i;
  cmx_rf x = CMX_R_TOF(xs);
  if (a.s == 0 || x != x || a.m != a.m || isinf(x) || isinf(a.m)) {
    cmx_racc b;
    b.m = x;
    b.s = 1;
    return cmx_r_comb(a, b);
  }
  if (x > a.m) {
    a.s = a.s * cmx_r_exp(a.m - x) + 1;
    a.m = x;
  } else {
    a.s += cmx_r_exp(x - a.m);
  }
  return a;
}
CMX_R_FN cmx_ro cmx_r_store(cmx_racc a, const cmx_rparams& P) {
  (void)P;
  if (a.m != a.m || isinf(a.m)) return CMX_R_FROMF(a.m);
  return CMX_R_FROMF((cmx_rf)((double)a.m + log((double)a.s)));
}

#elif CMX_R_KIND == 3
// Variance: count n, mean, and m2 = sum of squared deviations, combined
// by Chan et al.'s formula in double. An infinite element makes m2 NaN,
// as the CPU's two-pass (x - mean is inf - inf there).
struct cmx_racc {
  double n, mean, m2;
};
CMX_R_FN cmx_racc cmx_r_ident() {
  cmx_racc a;
  a.n = a.mean = a.m2 = 0;
  return a;
}
CMX_R_FN cmx_racc cmx_r_comb(cmx_racc a, cmx_racc b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  cmx_racc r;
  r.n = a.n + b.n;
  double d = b.mean - a.mean;
  r.mean = a.mean + d * (b.n / r.n);
  r.m2 = a.m2 + b.m2 + d * d * (a.n * b.n / r.n);
  return r;
}
CMX_R_FN cmx_racc cmx_r_push(cmx_racc a, cmx_rt xs, long long i) {
  (void)i;
  double x = (double)CMX_R_TOF(xs);
  a.n += 1;
  double d = x - a.mean;
  a.mean += d / a.n;
  a.m2 += d * (x - a.mean);
  return a;
}
CMX_R_FN cmx_ro cmx_r_store(cmx_racc a, const cmx_rparams& P) {
  double m2 = a.m2 > 0 || a.m2 != a.m2 ? a.m2 : 0.0;
  if (isinf(a.mean)) m2 = CMX_NANF;
  double den = a.n - (double)P.ddof;
  double v = m2 / (den > 0 ? den : 0.0);
  return CMX_R_FROMF((CMX_R_F)(P.sq ? sqrt(v) : v));
}

#else
// Complex variance (MLX): sum((x - mean)^2) / max(n - ddof, 0) with the
// complex square; the same combination with complex arithmetic.
struct cmx_racc {
  double n, mr, mi, qr, qi;
};
CMX_R_FN cmx_racc cmx_r_ident() {
  cmx_racc a;
  a.n = a.mr = a.mi = a.qr = a.qi = 0;
  return a;
}
CMX_R_FN cmx_racc cmx_r_comb(cmx_racc a, cmx_racc b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  cmx_racc r;
  r.n = a.n + b.n;
  double dr = b.mr - a.mr, di = b.mi - a.mi, f = b.n / r.n;
  r.mr = a.mr + dr * f;
  r.mi = a.mi + di * f;
  double g = a.n * b.n / r.n;
  r.qr = a.qr + b.qr + (dr * dr - di * di) * g;
  r.qi = a.qi + b.qi + 2 * dr * di * g;
  return r;
}
CMX_R_FN cmx_racc cmx_r_push(cmx_racc a, cmx_c64 x, long long i) {
  (void)i;
  a.n += 1;
  double dr = x.re - a.mr, di = x.im - a.mi;
  a.mr += dr / a.n;
  a.mi += di / a.n;
  double er = x.re - a.mr, ei = x.im - a.mi;
  a.qr += dr * er - di * ei;
  a.qi += dr * ei + di * er;
  return a;
}
CMX_R_FN cmx_c64 cmx_r_store(cmx_racc a, const cmx_rparams& P) {
  double den = a.n - (double)P.ddof;
  den = den > 0 ? den : 0.0;
  double vr = a.qr / den, vi = a.qi / den;
  if (P.sq) {  // principal square root
    double t = sqrt((fabs(vr) + hypot(vr, vi)) * 0.5);
    if (vr == 0 && vi == 0) {
      vr = 0;
    } else if (vr >= 0) {
      vi = vi / (2 * t);
      vr = t;
    } else {
      double re = fabs(vi) / (2 * t);
      vi = copysign(t, vi);
      vr = re;
    }
  }
  return cmx_c64_make((float)vr, (float)vi);
}
#endif

// The type the kernels write to `o` (the arg family: uint32 indices).
#if CMX_R_KIND == 1
typedef unsigned cmx_rout;
#else
typedef cmx_ro cmx_rout;
#endif

// Moves an accumulator between lanes, word by word.
CMX_R_FN cmx_racc cmx_r_shfl_down(cmx_racc v, int d) {
  union {
    cmx_racc a;
    int w[(sizeof(cmx_racc) + 3) / 4];
  } u;
  u.a = v;
#pragma unroll
  for (int i = 0; i < (int)((sizeof(cmx_racc) + 3) / 4); i++)
    u.w[i] = __shfl_down_sync(0xffffffffu, u.w[i], d);
  return u.a;
}

// Lane 0 gets the combination of the warp's values (lane order kept: lane
// j's values come before lane j + d's).
CMX_R_FN cmx_racc cmx_r_warp(cmx_racc a) {
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    cmx_racc b = cmx_r_shfl_down(a, d);
    if ((threadIdx.x & (2 * d - 1)) == 0) a = cmx_r_comb(a, b);
  }
  return a;
}

// Input offset of output k (K layout) or reduced element r (R layout).
template <int ND>
CMX_R_FN long long cmx_r_off(const cmx_layout_n<2>& L, long long i) {
  long long off[1];
  cmx_offsets<long long, ND, 2>(L, i, off);
  return off[0];
}

// The result of output k: written, or left as a partial of part p.
CMX_R_FN void cmx_r_finish(cmx_racc a, long long k, int p, cmx_rout* o,
                           cmx_racc* part, const cmx_rparams& P) {
  if (P.nparts > 1)
    part[(long long)p * P.nk + k] = a;
  else
    o[k] = cmx_r_store(a, P);
}

// ---------------- row kernels ----------------
// MODE 2: R is one contiguous dim; 1: one strided dim; 0: any.
template <int MODE>
CMX_R_FN void cmx_red_row(const cmx_rt* x, cmx_rout* o, cmx_racc* part,
                          const cmx_rparams& P, const cmx_layout_n<2>& K,
                          const cmx_layout_n<2>& R) {
  __shared__ cmx_racc sm[32];
  const long long k = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  const int G = blockDim.x, lane = threadIdx.x;
  const long long r0 = (long long)blockIdx.y * P.part_len;
  long long r1 = r0 + P.part_len;
  if (r1 > P.nr) r1 = P.nr;
  cmx_racc a = cmx_r_ident();
  if (k < P.nk) {
    const long long base = cmx_r_off<0>(K, k);
    if (MODE == 2) {
      const cmx_rt* row = x + base;
      constexpr int V = 16 / sizeof(cmx_rt) > 0 ? 16 / sizeof(cmx_rt) : 1;
      // head: elements before the first 16-byte boundary
      long long head =
          (long long)(((16 - ((unsigned long long)(row + r0) & 15)) & 15) /
                      sizeof(cmx_rt));
      if (((unsigned long long)row % sizeof(cmx_rt)) != 0 || V == 1)
        head = r1 - r0;
      if (head > r1 - r0) head = r1 - r0;
      for (long long r = r0 + lane; r < r0 + head; r += G)
        a = cmx_r_push(a, row[r], r);
      const long long vb = r0 + head, nv = (r1 - vb) / V;
      const cmx_pack<cmx_rt>* pv = (const cmx_pack<cmx_rt>*)(row + vb);
#pragma unroll 4
      for (long long v = lane; v < nv; v += G) {
        cmx_pack<cmx_rt> pk;
        pk.raw = ((const uint4*)pv)[v];
#pragma unroll
        for (int e = 0; e < V; e++) a = cmx_r_push(a, pk.e[e], vb + v * V + e);
      }
      for (long long r = vb + nv * V + lane; r < r1; r += G)
        a = cmx_r_push(a, row[r], r);
    } else {
      for (long long r = r0 + lane; r < r1; r += G)
        a = cmx_r_push(a, x[base + cmx_r_off<MODE>(R, r)], r);
    }
  }
  a = cmx_r_warp(a);
  if (G > 32) {  // the warps' results through shared memory
    const int w = lane / 32, nw = G / 32;
    if ((lane & 31) == 0) sm[w] = a;
    __syncthreads();
    if (w == 0) {
      a = lane < nw ? sm[lane] : cmx_r_ident();
      a = cmx_r_warp(a);
    }
  }
  if (lane == 0 && k < P.nk) cmx_r_finish(a, k, blockIdx.y, o, part, P);
}

// An entry point running FN (a row or col kernel's instantiation).
#define CMX_RED_K(NAME, FN)                                                 \
  extern "C" __global__ void NAME(const cmx_rt* x, cmx_rout* o,             \
                                  cmx_racc* part, cmx_rparams P,            \
                                  const CMX_GRID_CONST cmx_layout_n<2> K,   \
                                  const CMX_GRID_CONST cmx_layout_n<2> R) { \
    CMX_GRID_WAIT();                                                        \
    FN(x, o, part, P, K, R);                                                \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_row_c)
CMX_RED_K(cmx_red_row_c, cmx_red_row<2>)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_row_1)
CMX_RED_K(cmx_red_row_1, cmx_red_row<1>)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_row_0)
CMX_RED_K(cmx_red_row_0, cmx_red_row<0>)
#endif

// ---------------- column kernels ----------------
// blockDim.x * blockDim.y <= 256, blockDim.y <= 8: thread (x, y) takes
// output blockIdx.x * blockDim.x + x and the part's elements y, y + BY, ...
template <int ND>
CMX_R_FN void cmx_red_col(const cmx_rt* x, cmx_rout* o, cmx_racc* part,
                          const cmx_rparams& P, const cmx_layout_n<2>& K,
                          const cmx_layout_n<2>& R) {
  __shared__ cmx_racc sm[256];
  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int BY = blockDim.y, ty = threadIdx.y;
  const long long r0 = (long long)blockIdx.y * P.part_len;
  long long r1 = r0 + P.part_len;
  if (r1 > P.nr) r1 = P.nr;
  cmx_racc a = cmx_r_ident();
  if (k < P.nk) {
    const cmx_rt* xb = x + cmx_r_off<0>(K, k);
    long long r = r0 + ty;
    if (ND == 1) {  // four loads in flight
      const long long s = R.strides[1][0];
      for (; r + 3 * BY < r1; r += 4 * BY) {
        cmx_rt v0 = xb[r * s], v1 = xb[(r + BY) * s];
        cmx_rt v2 = xb[(r + 2 * BY) * s], v3 = xb[(r + 3 * BY) * s];
        a = cmx_r_push(a, v0, r);
        a = cmx_r_push(a, v1, r + BY);
        a = cmx_r_push(a, v2, r + 2 * BY);
        a = cmx_r_push(a, v3, r + 3 * BY);
      }
    }
    for (; r < r1; r += BY) a = cmx_r_push(a, xb[cmx_r_off<ND>(R, r)], r);
  }
  if (BY > 1) {
    sm[ty * blockDim.x + threadIdx.x] = a;
    __syncthreads();
    if (ty == 0)
      for (int y = 1; y < BY; y++)
        a = cmx_r_comb(a, sm[y * blockDim.x + threadIdx.x]);
  }
  if (ty == 0 && k < P.nk) cmx_r_finish(a, k, blockIdx.y, o, part, P);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_col_1)
CMX_RED_K(cmx_red_col_1, cmx_red_col<1>)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_col_0)
CMX_RED_K(cmx_red_col_0, cmx_red_col<0>)
#endif

// ---------------- partials ----------------
// Block (32, 8): a warp per output, lanes over the parts in order.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_red_fin)
extern "C" __global__ void cmx_red_fin(const cmx_racc* part, cmx_rout* o,
                                       cmx_rparams P) {
  CMX_GRID_WAIT();
  const long long k = (long long)blockIdx.x * blockDim.y + threadIdx.y;
  if (k >= P.nk) return;  // whole warps leave together
  cmx_racc a = cmx_r_ident();
  // lane j takes a contiguous run of parts, so lane order is part order
  const int per = (P.nparts + 31) / 32;
  const int p0 = threadIdx.x * per;
  for (int p = p0; p < p0 + per && p < P.nparts; p++)
    a = cmx_r_comb(a, part[(long long)p * P.nk + k]);
  a = cmx_r_warp(a);
  if (threadIdx.x == 0) o[k] = cmx_r_store(a, P);
}
#endif
