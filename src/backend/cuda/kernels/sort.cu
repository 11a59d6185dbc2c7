// Sort kernels for one dtype: Sort, ArgSort, Partition, ArgPartition (a
// full stable sort is a valid partition) and SearchSorted. The module is
// common.cu, the prelude, then this file. The prelude (sort.c) defines:
//   CMX_S_T     the element's storage bits (cmx_u8 .. cmx_u64), also the
//               key type
//   CMX_S_BITS  their width
//   CMX_S_KIND  0 unsigned/bool, 1 signed, 2 float (CMX_S_SIGN, CMX_S_INF
//               its sign bit and +inf), 3 complex64
// Keys are the CPU's canonical keys (backend/cpu/sort.c): unsigned bits
// whose order is NumPy's (NaN last and all equal, -0.0 == 0.0, complex by
// (real, imag) with the NaN classes above). Ties keep the input order
// (every sort here orders (key, index) pairs), as the CPU's.
//
// Rows are contiguous: `rows` of n elements at x (the caller copies other
// layouts); the result goes to yi (uint32 indices) or yv (the elements,
// gathered from x by their sorted index), one of them non-null. Kernels:
//   cmx_sort_block    rows of up to a few thousand elements, whole in
//                     shared memory: a bitonic network over (key, index)
//                     records padded to a power of two P with sentinels;
//                     short rows share a block (P * rpb slots)
//   cmx_sort_hist     longer rows: a stable LSD radix sort of 8-bit digits
//   cmx_sort_scan     over tiles of CMX_S_TILE elements. Per pass: each
//   cmx_sort_scatter  tile's digit counts (hist), their exclusive scan
//                     over the row's tiles per digit (scan), then each
//                     tile's elements ranked stably (per warp with
//                     __match_any_sync, warps in order), grouped by digit
//                     in shared memory and written to their digit's place
//                     in order (scatter); passes move the elements' bits
//                     (and indices for an argsort only); the first pass
//                     reads x, the last writes the result
//   cmx_sort_search   searchsorted: a binary search per value

typedef CMX_S_T cmx_sk;
#define CMX_S_FN static __device__ __forceinline__
#define CMX_S_THREADS 256
#define CMX_S_IPT 16
#define CMX_S_TILE (CMX_S_THREADS * CMX_S_IPT)
#define CMX_S_WARPS (CMX_S_THREADS / 32)

// ---------------- keys ----------------
CMX_S_FN unsigned cmx_s_f32key(unsigned u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if (u == 0x80000000u) return 0x80000000u;
  return u ^ ((0u - (u >> 31)) | 0x80000000u);
}

CMX_S_FN cmx_sk cmx_s_key(cmx_sk u) {
#if CMX_S_KIND == 0
  return u;
#elif CMX_S_KIND == 1
  return (cmx_sk)(u ^ (cmx_sk)CMX_S_SIGN);
#elif CMX_S_KIND == 2
  const cmx_sk sign = (cmx_sk)CMX_S_SIGN;
  if ((cmx_sk)(u & (cmx_sk)~sign) > (cmx_sk)CMX_S_INF)
    return (cmx_sk) ~(cmx_sk)0;
  if (u == sign) return sign;
  cmx_sk m = (cmx_sk)((cmx_sk)(0 - (cmx_sk)(u >> (CMX_S_BITS - 1))) | sign);
  return (cmx_sk)(u ^ m);
#else
  unsigned re = (unsigned)u, im = (unsigned)(u >> 32);
  bool nre = (re & 0x7fffffffu) > 0x7f800000u;
  bool nim = (im & 0x7fffffffu) > 0x7f800000u;
  if (!nre && !nim) return (cmx_u64)cmx_s_f32key(re) << 32 | cmx_s_f32key(im);
  if (!nre) return 0xfffffffdull << 32 | cmx_s_f32key(re);
  if (!nim) return 0xfffffffeull << 32 | cmx_s_f32key(im);
  return 0xffffffffull << 32;
#endif
}

// ---------------- records: (key, index) ----------------
#if CMX_S_BITS <= 32
typedef cmx_u64 cmx_srec;
CMX_S_FN cmx_srec cmx_s_rec(cmx_sk k, unsigned i) {
  return (cmx_u64)k << 32 | i;
}
CMX_S_FN bool cmx_s_less(cmx_srec a, cmx_srec b) {
  return a < b;
}
CMX_S_FN unsigned cmx_s_idx(cmx_srec r) {
  return (unsigned)r;
}
#define CMX_S_SENTINEL (~0ull)
#else
struct __align__(16) cmx_srec {
  cmx_u64 k;
  unsigned i;
};
CMX_S_FN cmx_srec cmx_s_rec(cmx_sk k, unsigned i) {
  cmx_srec r;
  r.k = k;
  r.i = i;
  return r;
}
CMX_S_FN bool cmx_s_less(cmx_srec a, cmx_srec b) {
  return a.k < b.k || (a.k == b.k && a.i < b.i);
}
CMX_S_FN unsigned cmx_s_idx(cmx_srec r) {
  return r.i;
}
#define CMX_S_SENTINEL cmx_s_rec(~0ull, 0xffffffffu)
#endif

// ---------------- rows in shared memory ----------------
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_block)
// Block b sorts rows b * rpb .. b * rpb + rpb - 1 (those below rows); P
// (a power of two >= n) slots a row. Dynamic shared memory: P * rpb
// records.
extern "C" __global__ void cmx_sort_block(const cmx_sk* x, unsigned* yi,
                                          cmx_sk* yv, long long rows, int n,
                                          int P, int rpb) {
  CMX_GRID_WAIT();
  extern __shared__ unsigned long long cmx_s_smem[];
  cmx_srec* s = (cmx_srec*)cmx_s_smem;
  const int slots = P * rpb, nt = blockDim.x, tid = threadIdx.x;
  const int lg = __ffs(P) - 1;
  const long long row0 = (long long)blockIdx.x * rpb;
  for (int i = tid; i < slots; i += nt) {
    const int r = i >> lg, j = i & (P - 1);
    const long long row = row0 + r;
    cmx_srec v = CMX_S_SENTINEL;
    if (row < rows && j < n) v = cmx_s_rec(cmx_s_key(x[row * n + j]), j);
    s[i] = v;
  }
  __syncthreads();
  for (int k = 2; k <= P; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int t = tid; t < (slots >> 1); t += nt) {
        const int i = 2 * t - (t & (j - 1)), l = i + j;
        const bool asc = k == P || (i & k) == 0;
        cmx_srec a = s[i], b = s[l];
        if (cmx_s_less(b, a) == asc) {
          s[i] = b;
          s[l] = a;
        }
      }
      __syncthreads();
    }
  for (int i = tid; i < slots; i += nt) {
    const int r = i >> lg, j = i & (P - 1);
    const long long row = row0 + r;
    if (row >= rows || j >= n) continue;
    const unsigned src = cmx_s_idx(s[i]);
    if (yi)
      yi[row * n + j] = src;
    else
      yv[row * n + j] = x[row * n + src];
  }
}
#endif

// ---------------- radix passes ----------------
// Exclusive scan of v over a block of CMX_S_THREADS threads; *total gets
// the sum.
CMX_S_FN unsigned cmx_s_block_excl(unsigned v, unsigned* total) {
  __shared__ unsigned sw[CMX_S_WARPS];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  unsigned inc = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    unsigned o = __shfl_up_sync(0xffffffffu, inc, d);
    if (lane >= d) inc += o;
  }
  if (lane == 31) sw[w] = inc;
  __syncthreads();
  unsigned before = 0, all = 0;
#pragma unroll
  for (int k = 0; k < CMX_S_WARPS; k++) {
    before += k < w ? sw[k] : 0u;
    all += sw[k];
  }
  __syncthreads();
  *total = all;
  return before + inc - v;
}

// The byte-wide digit of key k at shift (256: none, for lanes past the
// row's end).
CMX_S_FN unsigned cmx_s_digit(cmx_sk k, int shift) {
  return (unsigned)(k >> shift) & 255u;
}

// Ranks this warp's 32 digits d (256: an idle lane) stably after the
// warp's earlier ones: returns the lane's place among the warp's elements
// of its digit so far, counting them in wc (the warp's 256 counters).
CMX_S_FN unsigned cmx_s_rank(unsigned d, unsigned* wc) {
  const unsigned lane = threadIdx.x & 31;
  const unsigned peers = __match_any_sync(0xffffffffu, d);
  const unsigned r = __popc(peers & ((1u << lane) - 1u));
  const unsigned c = d < 256 ? wc[d] : 0u;
  __syncwarp();
  if (d < 256 && r == 0) wc[d] = c + __popc(peers);
  __syncwarp();
  return c + r;
}

// Turns the warps' counts of digit d = threadIdx.x (wc[warp][d]) into
// each warp's first place for its elements of d, the first warp's at run.
CMX_S_FN void cmx_s_warp_starts(unsigned (*wc)[256], unsigned run) {
  const int d = threadIdx.x;
#pragma unroll
  for (int q = 0; q < CMX_S_WARPS; q++) {
    const unsigned v = wc[q][d];
    wc[q][d] = run;
    run += v;
  }
}

// Key bits that differ within the block's keys: or ^ and over the block
// (256 threads); every thread gets it.
CMX_S_FN cmx_sk cmx_s_block_diff(cmx_sk o, cmx_sk a) {
  __shared__ cmx_sk so[CMX_S_WARPS], sa[CMX_S_WARPS];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) {
    o |= (cmx_sk)__shfl_xor_sync(0xffffffffu, (cmx_u64)o, d);
    a &= (cmx_sk)__shfl_xor_sync(0xffffffffu, (cmx_u64)a, d);
  }
  if (lane == 0) {
    so[w] = o;
    sa[w] = a;
  }
  __syncthreads();
  o = so[0];
  a = sa[0];
#pragma unroll
  for (int k = 1; k < CMX_S_WARPS; k++) {
    o |= so[k];
    a &= sa[k];
  }
  return (cmx_sk)(o ^ a);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_tile)
// Block b sorts row b (n <= CMX_S_TILE) by an LSD radix sort in shared
// memory, skipping the digits every key of the row shares: each pass
// ranks the elements as cmx_sort_scatter does and moves them to their
// places in shared memory. Dynamic shared memory: CMX_S_TILE keys and
// CMX_S_TILE 16-bit indices.
extern "C" __global__ void __launch_bounds__(CMX_S_THREADS)
    cmx_sort_tile(const cmx_sk* x, unsigned* yi, cmx_sk* yv, int n) {
  CMX_GRID_WAIT();
  extern __shared__ unsigned long long cmx_s_smem[];
  cmx_sk* sk = (cmx_sk*)cmx_s_smem;
  unsigned short* si = (unsigned short*)(sk + CMX_S_TILE);
  __shared__ unsigned wc[CMX_S_WARPS][256];
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const long long base = (long long)blockIdx.x * n;
  // warp w holds elements w * 512 .. w * 512 + 511, in order
  const int j0 = w * (32 * CMX_S_IPT) + lane;
  cmx_sk k[CMX_S_IPT];
  unsigned short ix[CMX_S_IPT];
  cmx_sk kor = 0, kand = (cmx_sk) ~(cmx_sk)0;
#pragma unroll
  for (int it = 0; it < CMX_S_IPT; it++) {
    const int j = j0 + it * 32;
    k[it] = j < n ? cmx_s_key(x[base + j]) : (cmx_sk)0;
    ix[it] = (unsigned short)j;
    if (j < n) {
      kor |= k[it];
      kand &= k[it];
    }
  }
  const cmx_sk diff = cmx_s_block_diff(kor, kand);
  bool first = true;
  for (int shift = 0; shift < CMX_S_BITS; shift += 8) {
    // a digit all keys share keeps the order; the first digit always runs
    // (it moves the elements into shared memory)
    if (shift > 0 && cmx_s_digit(diff, shift) == 0) continue;
    if (!first) {
#pragma unroll
      for (int it = 0; it < CMX_S_IPT; it++) {
        const int j = j0 + it * 32;
        if (j < n) {
          k[it] = sk[j];
          ix[it] = si[j];
        }
      }
    }
    first = false;
    for (int i = tid; i < CMX_S_WARPS * 256; i += CMX_S_THREADS)
      (&wc[0][0])[i] = 0;
    __syncthreads();  // the loads above and the counters
    unsigned rk[CMX_S_IPT];
#pragma unroll
    for (int it = 0; it < CMX_S_IPT; it++) {
      const int j = j0 + it * 32;
      rk[it] = cmx_s_rank(j < n ? cmx_s_digit(k[it], shift) : 256u, wc[w]);
    }
    __syncthreads();
    {  // thread tid = digit: the digit's first place in the tile
      unsigned t = 0, total;
#pragma unroll
      for (int q = 0; q < CMX_S_WARPS; q++) t += wc[q][tid];
      cmx_s_warp_starts(wc, cmx_s_block_excl(t, &total));
    }
    __syncthreads();
#pragma unroll
    for (int it = 0; it < CMX_S_IPT; it++) {
      const int j = j0 + it * 32;
      if (j >= n) continue;
      const unsigned p = wc[w][cmx_s_digit(k[it], shift)] + rk[it];
      sk[p] = k[it];
      si[p] = ix[it];
    }
    __syncthreads();
  }
  for (int j = tid; j < n; j += CMX_S_THREADS) {
    const unsigned src = si[j];
    if (yi)
      yi[base + j] = src;
    else
      yv[base + j] = x[base + src];
  }
}
#endif

// The pass's key of element j of a row: of x in the first pass (kin
// null), else of the previous pass's elements (passes move the elements'
// own bits, so -0.0 and NaN payloads survive without a gather from x).
CMX_S_FN cmx_sk cmx_s_load(const cmx_sk* x, const cmx_sk* kin, long long at) {
  return cmx_s_key(kin ? kin[at] : x[at]);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_hist)
// Block (row, tile): counts[(row * 256 + d) * ntiles + tile] = how many of
// the tile's keys have digit d.
extern "C" __global__ void __launch_bounds__(CMX_S_THREADS)
    cmx_sort_hist(const cmx_sk* x, const cmx_sk* kin, long long n,
                  long long ntiles, int shift, unsigned* counts) {
  CMX_GRID_WAIT();
  __shared__ unsigned h[CMX_S_WARPS][256];
  const int tid = threadIdx.x, w = tid >> 5;
  for (int i = tid; i < CMX_S_WARPS * 256; i += CMX_S_THREADS)
    (&h[0][0])[i] = 0;
  __syncthreads();
  const long long b = blockIdx.x, row = b / ntiles, t = b - row * ntiles;
  const long long base = row * n, j0 = t * CMX_S_TILE;
#pragma unroll 4
  for (int it = 0; it < CMX_S_IPT; it++) {
    const long long j = j0 + it * CMX_S_THREADS + tid;
    if (j < n) {
      atomicAdd(&h[w][cmx_s_digit(cmx_s_load(x, kin, base + j), shift)], 1u);
    }
  }
  __syncthreads();
  unsigned c = 0;
#pragma unroll
  for (int k = 0; k < CMX_S_WARPS; k++) c += h[k][tid];
  counts[(row * 256 + tid) * ntiles + t] = c;
}
#endif

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_scan)
// Block (row, digit): the row's tile counts of the digit scanned
// (exclusive, in place); tot[row * 256 + d] gets their sum.
extern "C" __global__ void __launch_bounds__(CMX_S_THREADS)
    cmx_sort_scan(unsigned* counts, unsigned* tot, long long ntiles) {
  CMX_GRID_WAIT();
  unsigned* c = counts + (long long)blockIdx.x * ntiles;
  unsigned carry = 0;
  for (long long b = 0; b < ntiles; b += CMX_S_THREADS * 4) {
    const long long i0 = b + threadIdx.x * 4;
    unsigned v[4], sum = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
      v[k] = i0 + k < ntiles ? c[i0 + k] : 0u;
      sum += v[k];
    }
    unsigned total;
    unsigned e = carry + cmx_s_block_excl(sum, &total);
#pragma unroll
    for (int k = 0; k < 4; k++) {
      if (i0 + k < ntiles) c[i0 + k] = e;
      e += v[k];
    }
    carry += total;
  }
  if (threadIdx.x == 0) tot[blockIdx.x] = carry;
}
#endif

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_scatter)
// Block (row, tile): the tile's elements to their places for this pass's
// digit. kin/iin: the previous pass's elements and indices (null in the
// first pass: x, indices 0 ..); kout/iout: this pass's (iout null: no
// indices moved, a sort of values), or with last the result (yi for an
// argsort, else yv). The tile is ranked stably (per warp with
// __match_any_sync, warps in order), gathered in digit order in shared
// memory, then written out in that order, so each digit's run is written
// by consecutive threads. Dynamic shared memory: CMX_S_TILE elements,
// CMX_S_TILE indices when indices move, CMX_S_TILE digit bytes.
extern "C" __global__ void __launch_bounds__(CMX_S_THREADS)
    cmx_sort_scatter(const cmx_sk* x, const cmx_sk* kin, const unsigned* iin,
                     cmx_sk* kout, unsigned* iout, const unsigned* counts,
                     const unsigned* tot, long long n, long long ntiles,
                     int shift, int last, unsigned* yi, cmx_sk* yv) {
  CMX_GRID_WAIT();
  extern __shared__ unsigned long long cmx_s_smem[];
  __shared__ unsigned wc[CMX_S_WARPS][256];
  __shared__ unsigned start[256], lstart[256];
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
  const long long b = blockIdx.x, row = b / ntiles, t = b - row * ntiles;
  const long long base = row * n;
  cmx_sk* const dk = last ? (yi ? (cmx_sk*)0 : yv) : kout;
  unsigned* const di = last ? yi : iout;
  const bool arg = di != 0;
  cmx_sk* sk = (cmx_sk*)cmx_s_smem;
  unsigned* si = (unsigned*)(sk + CMX_S_TILE);
  unsigned char* sd = (unsigned char*)(si + (arg ? CMX_S_TILE : 0));
  for (int i = tid; i < CMX_S_WARPS * 256; i += CMX_S_THREADS)
    (&wc[0][0])[i] = 0;
  // where the tile's elements of each digit start in the row
  {
    unsigned total;
    unsigned e = cmx_s_block_excl(tot[row * 256 + tid], &total);
    start[tid] = e + counts[(row * 256 + tid) * ntiles + t];
  }
  __syncthreads();
  // warp w holds the tile's elements w * 512 .. w * 512 + 511, in order
  const long long j0 = t * CMX_S_TILE + (long long)w * (32 * CMX_S_IPT);
  cmx_sk e[CMX_S_IPT];
  unsigned ix[CMX_S_IPT], rk[CMX_S_IPT], dg[CMX_S_IPT];
#pragma unroll
  for (int it = 0; it < CMX_S_IPT; it++) {
    const long long j = j0 + it * 32 + lane;
    const bool act = j < n;
    e[it] = act ? (kin ? kin[base + j] : x[base + j]) : (cmx_sk)0;
    ix[it] = act && arg ? (iin ? iin[base + j] : (unsigned)j) : 0u;
    dg[it] = act ? cmx_s_digit(cmx_s_key(e[it]), shift) : 256u;
    rk[it] = cmx_s_rank(dg[it], wc[w]);
  }
  __syncthreads();
  // the tile's digit runs in shared memory: digit d from lstart[d]
  {
    unsigned c = 0;
#pragma unroll
    for (int q = 0; q < CMX_S_WARPS; q++) c += wc[q][tid];
    unsigned total;
    const unsigned l = cmx_s_block_excl(c, &total);
    lstart[tid] = l;
    cmx_s_warp_starts(wc, l);
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < CMX_S_IPT; it++) {
    if (dg[it] >= 256u) continue;
    const unsigned lp = wc[w][dg[it]] + rk[it];
    sk[lp] = e[it];
    sd[lp] = (unsigned char)dg[it];
    if (arg) si[lp] = ix[it];
  }
  __syncthreads();
  const long long rem = n - t * CMX_S_TILE;
  const int cnt = rem < CMX_S_TILE ? (int)rem : CMX_S_TILE;
  for (int i = tid; i < cnt; i += CMX_S_THREADS) {
    const unsigned d = sd[i];
    const long long at = base + start[d] + (unsigned)i - lstart[d];
    if (dk) dk[at] = sk[i];
    if (arg) di[at] = si[i];
  }
}
#endif

// ---------------- searchsorted ----------------
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sort_search)
// y[i] = the first place in seq (n elements, stride sst) whose key is >=
// (right: >) the key of v[i], for the m values.
extern "C" __global__ void cmx_sort_search(const cmx_sk* seq, long long sst,
                                           long long n, const cmx_sk* v,
                                           unsigned* y, long long m,
                                           int right) {
  CMX_GRID_WAIT();
  const long long nt = cmx_nthreads();
  for (long long i = cmx_tid(); i < m; i += nt) {
    const cmx_sk key = cmx_s_key(v[i]);
    long long lo = 0, hi = n;
    while (lo < hi) {
      const long long mid = lo + (hi - lo) / 2;
      const cmx_sk km = cmx_s_key(seq[mid * sst]);
      if (right ? km <= key : km < key)
        lo = mid + 1;
      else
        hi = mid;
    }
    y[i] = (unsigned)lo;
  }
}
#endif
