// Kernels of mx.fast's scaled_dot_product_attention for one storage dtype
// (contract in primitives/fast.h; host side in sdpa.c). The module is
// common.cu, the prelude, ew_bind.cu and primitives/ew_scalar.h, then this
// file. The prelude (sdpa.c) defines CMX_A_T (the storage type), CMX_A_TOF
// and CMX_A_FROMF (storage <-> float32), and CMX_A_BF16 for bfloat16.
//
// Every score, the online softmax and the output accumulate in float32. As
// the CPU kernel: scores are (q * scale) . k, a boolean mask sets a
// masked-out score to the lowest float, an additive mask is added, causal
// keeps key t for query i when t <= i + S - L (a row with no key left and
// no sink averages v uniformly), a sink adds exp(sink) to the softmax sum.
//
// cmx_sdpa_rows_r<ROWS>_d<DPL>: the CUDA-core kernel for any case. A block
//   takes ROWS query rows that share a kv head (the query heads of one kv
//   head, rows in the CPU's order) and the keys of one split
//   (gridDim.y splits of per_split keys); its warps take keys in turn, a
//   key a warp at a time, lanes splitting the head dim (DPL elements a
//   lane: D, Dv <= 32 * DPL). Each warp keeps its own running max, sum and
//   output rows; the block merges them. One split writes the output; more
//   write partial (max, sum, unnormalised row) records that
//   cmx_sdpa_combine merges (decode: a long cache over many blocks).
// cmx_sdpa_mma_d<D>: flash attention on the tensor cores (mma.sync
//   m16n8k16, float16/bfloat16 with float32 accumulation) for head dim D
//   (= Dv), unit last strides and 16-byte aligned rows: a block of 4 warps
//   takes 64 query rows of one head (16 a warp), walks the keys in tiles of
//   64 kept in shared memory (cp.async, two stages), P = softmax(Q K^T)
//   staying in registers for P V.

typedef CMX_A_T cmx_at;
#define CMX_A_FN static __device__ __forceinline__
#define CMX_A_LOWEST (-3.402823466e+38f)
#define CMX_A_LOG2E 1.4426950408889634f
#define CMX_A_INF __int_as_float(0x7f800000)

enum { CMX_A_NONE = 0, CMX_A_CAUSAL = 1, CMX_A_BOOL = 2, CMX_A_ADD = 3 };

// The arguments of every attention kernel (sdpa.c packs the same layout):
// strides in elements (batch, head, row, feature), the mask's broadcast to
// (B, H, L, S).
struct cmx_sdpa_args {
  const cmx_at *q, *k, *v;
  cmx_at* o;
  const void* mask;     // bool bytes or CMX_A_T values
  const cmx_at* sinks;  // H values, or null
  float* part;          // split records (nsplit > 1)
  unsigned* cnt;        // decode: a ticket counter a block row, or null
  long long qs[4], ks[4], vs[4], ms[4];
  int B, H, Hk, L, S, D, Dv, R;
  int mask_kind, nsplit, per_split, nchunks;
  float scale;
  int pad_;
};

// Score s of query row (b, h, i) against key t under an array mask.
CMX_A_FN float cmx_sdpa_masked(const cmx_sdpa_args& a, int b, int h, int i,
                               int t, float s) {
  long long off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + t * a.ms[3];
  if (a.mask_kind == CMX_A_BOOL)
    return ((const unsigned char*)a.mask)[off] ? s : CMX_A_LOWEST;
  return s + CMX_A_TOF(((const cmx_at*)a.mask)[off]);
}

// ------------------------------------------------------- CUDA-core rows

// Query row rr of kv head hk in batch b (the rows of a kv head in the
// CPU's order: its R query heads, L rows each), for the row kernels: its
// q pointer, head h, row i, key end je (keys t < je are kept) and allm (a
// causal row with no key left and no sink: every score is the lowest
// float, so v is averaged uniformly). A row past the end (rr >= RL) gets
// head hk * R, row 0 and je = 0: no keys.
struct cmx_sdpa_row_at {
  const cmx_at* q;
  int h, i, je;
  bool allm;
};

CMX_A_FN cmx_sdpa_row_at cmx_sdpa_row(const cmx_sdpa_args& a, int b, int hk,
                                      int rr, int RL) {
  const bool ok = rr < RL;
  const int h = hk * a.R + (ok ? rr / a.L : 0), i = ok ? rr % a.L : 0;
  int je = ok ? a.S : 0;
  bool am = false;
  if (ok && a.mask_kind == CMX_A_CAUSAL) {
    je = i + a.S - a.L + 1;
    if (je > a.S) je = a.S;
    if (je <= 0) {
      je = a.sinks ? 0 : a.S;
      am = !a.sinks;
    }
  }
  return {a.q + b * a.qs[0] + h * a.qs[1] + i * a.qs[2], h, i, je, am};
}

template <int DPL>
CMX_A_FN void cmx_sdpa_load_kv(const cmx_sdpa_args& a, const cmx_at* kb,
                               const cmx_at* vb, int t, int lane,
                               float (&kf)[DPL], float (&vf)[DPL]) {
  const cmx_at* kr = kb + t * a.ks[2];
  const cmx_at* vr = vb + t * a.vs[2];
#pragma unroll
  for (int c = 0; c < DPL; c++) {
    int d = lane + 32 * c;
    kf[c] = d < a.D ? CMX_A_TOF(kr[d * a.ks[3]]) : 0.0f;
    vf[c] = d < a.Dv ? CMX_A_TOF(vr[d * a.vs[3]]) : 0.0f;
  }
}

template <int ROWS, int DPL>
CMX_A_FN void cmx_sdpa_rows(const cmx_sdpa_args& a) {
  extern __shared__ float cmx_sdpa_sm[];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int nw = blockDim.x >> 5;
  const int chunk = blockIdx.x % a.nchunks;
  const long long bh = blockIdx.x / a.nchunks;
  const int b = (int)(bh / a.Hk), hk = (int)(bh % a.Hk);
  const int split = blockIdx.y, RL = a.R * a.L, r0 = chunk * ROWS;
  const int t0 = split * a.per_split;
  int t1 = min(a.S, t0 + a.per_split);
  float q[ROWS][DPL], acc[ROWS][DPL], m[ROWS], l[ROWS];
  int hh[ROWS], ii[ROWS], jend[ROWS];
  bool allm[ROWS];
  int tmax = 0;
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    const int rr = r0 + r;
    const bool ok = rr < RL;
    const cmx_sdpa_row_at at = cmx_sdpa_row(a, b, hk, rr, RL);
    hh[r] = at.h, ii[r] = at.i, jend[r] = at.je, allm[r] = at.allm;
    tmax = max(tmax, at.je);
#pragma unroll
    for (int c = 0; c < DPL; c++) {
      const int d = lane + 32 * c;
      q[r][c] = ok && d < a.D ? CMX_A_TOF(at.q[d * a.qs[3]]) * a.scale : 0.0f;
      acc[r][c] = 0.0f;
    }
    m[r] = -CMX_A_INF, l[r] = 0.0f;
    if (ok && a.sinks && split == 0 && w == 0) {
      m[r] = CMX_A_TOF(a.sinks[at.h]);
      l[r] = 1.0f;
    }
  }
  t1 = min(t1, tmax);
  const cmx_at* kb = a.k + b * a.ks[0] + hk * a.ks[1];
  const cmx_at* vb = a.v + b * a.vs[0] + hk * a.vs[1];
  float kn[DPL], vn[DPL];
  int t = t0 + w;
  if (t < t1) cmx_sdpa_load_kv<DPL>(a, kb, vb, t, lane, kn, vn);
  for (; t < t1; t += nw) {
    float kf[DPL], vf[DPL];
#pragma unroll
    for (int c = 0; c < DPL; c++) kf[c] = kn[c], vf[c] = vn[c];
    if (t + nw < t1) cmx_sdpa_load_kv<DPL>(a, kb, vb, t + nw, lane, kn, vn);
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      if (t >= jend[r]) continue;  // uniform across the warp
      float s = 0.0f;
#pragma unroll
      for (int c = 0; c < DPL; c++) s += q[r][c] * kf[c];
#pragma unroll
      for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (allm[r])
        s = CMX_A_LOWEST;
      else if (a.mask_kind >= CMX_A_BOOL)
        s = cmx_sdpa_masked(a, b, hh[r], ii[r], t, s);
      const float mn = fmaxf(m[r], s);
      const float al = m[r] == -CMX_A_INF ? 0.0f : expf(m[r] - mn);
      const float p = mn == -CMX_A_INF ? 0.0f : expf(s - mn);
      l[r] = l[r] * al + p;
#pragma unroll
      for (int c = 0; c < DPL; c++) acc[r][c] = acc[r][c] * al + p * vf[c];
      m[r] = mn;
    }
  }
  // merge the warps' rows
  float* sm_m = cmx_sdpa_sm;
  float* sm_l = sm_m + nw * ROWS;
  float* sm_a = sm_l + nw * ROWS;
  const int W = 32 * DPL;
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    if (lane == 0) sm_m[w * ROWS + r] = m[r], sm_l[w * ROWS + r] = l[r];
#pragma unroll
    for (int c = 0; c < DPL; c++)
      sm_a[(w * ROWS + r) * W + lane + 32 * c] = acc[r][c];
  }
  __syncthreads();
  for (int x = threadIdx.x; x < ROWS * a.Dv; x += blockDim.x) {
    const int r = x / a.Dv, d = x % a.Dv, rr = r0 + r;
    if (rr >= RL) continue;
    float M = -CMX_A_INF, Ls = 0.0f, O = 0.0f;
    for (int u = 0; u < nw; u++) M = fmaxf(M, sm_m[u * ROWS + r]);
    for (int u = 0; u < nw; u++) {
      const float mu = sm_m[u * ROWS + r];
      const float e = mu == -CMX_A_INF ? 0.0f : expf(mu - M);
      Ls += sm_l[u * ROWS + r] * e;
      O += sm_a[(u * ROWS + r) * W + d] * e;
    }
    const int h = hk * a.R + rr / a.L, i = rr % a.L;
    const long long orow = ((long long)b * a.H + h) * a.L + i;
    if (a.nsplit == 1) {
      a.o[orow * a.Dv + d] = CMX_A_FROMF(O / Ls);
    } else {
      float* pp = a.part + (orow * a.nsplit + split) * (a.Dv + 2);
      if (d == 0) pp[0] = M, pp[1] = Ls;
      pp[2 + d] = O;
    }
  }
}

#define CMX_SDPA_ROWS(ROWS, DPL)                                          \
  extern "C" __global__ void __launch_bounds__(128)                      \
      cmx_sdpa_rows_r##ROWS##_d##DPL(const CMX_GRID_CONST cmx_sdpa_args a) { \
    CMX_GRID_WAIT();                                                      \
    cmx_sdpa_rows<ROWS, DPL>(a);                                          \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r1_d2)
CMX_SDPA_ROWS(1, 2)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r1_d4)
CMX_SDPA_ROWS(1, 4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r1_d8)
CMX_SDPA_ROWS(1, 8)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r2_d2)
CMX_SDPA_ROWS(2, 2)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r2_d4)
CMX_SDPA_ROWS(2, 4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r2_d8)
CMX_SDPA_ROWS(2, 8)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r4_d2)
CMX_SDPA_ROWS(4, 2)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r4_d4)
CMX_SDPA_ROWS(4, 4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r4_d8)
CMX_SDPA_ROWS(4, 8)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r8_d2)
CMX_SDPA_ROWS(8, 2)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r8_d4)
CMX_SDPA_ROWS(8, 4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_rows_r8_d8)
CMX_SDPA_ROWS(8, 8)
#endif

// Merging the nsplit partial (max, sum, row) records of an output row
// (nsplit <= 64, sdpa.c's cap), shared by cmx_sdpa_combine and the decode
// kernel's last split block so that both paths give the same bits. One
// warp reads the splits' (max, sum) pairs at once (two a lane), reduces
// them through shuffles and leaves each split's weight exp(max_s - M) in
// wt and the weighted sum of sums in *sum_l; then each output feature sums
// its records with those weights, its loads independent of each other (a
// split after another cost a dependent L2 round trip each: 16 splits took
// 3.2 us, 4 took 1.8). The loads bypass L1 (__ldcg): in the decode kernel
// the records were written by other blocks of the same launch.
CMX_A_FN void cmx_sdpa_merge_weights(const float* pp, int nsplit, int rs,
                                     int lane, float* wt, float* sum_l) {
  const bool h0 = lane < nsplit, h1 = lane + 32 < nsplit;
  const float m0 = h0 ? __ldcg(pp + lane * rs) : -CMX_A_INF;
  const float m1 = h1 ? __ldcg(pp + (lane + 32) * rs) : -CMX_A_INF;
  const float l0 = h0 ? __ldcg(pp + lane * rs + 1) : 0.0f;
  const float l1 = h1 ? __ldcg(pp + (lane + 32) * rs + 1) : 0.0f;
  float M = fmaxf(m0, m1);
#pragma unroll
  for (int d = 16; d > 0; d /= 2)
    M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, d));
  const float e0 = m0 == -CMX_A_INF ? 0.0f : expf(m0 - M);
  const float e1 = m1 == -CMX_A_INF ? 0.0f : expf(m1 - M);
  float L = l0 * e0 + l1 * e1;
#pragma unroll
  for (int d = 16; d > 0; d /= 2) L += __shfl_xor_sync(0xffffffffu, L, d);
  if (h0) wt[lane] = e0;
  if (h1) wt[lane + 32] = e1;
  if (lane == 0) *sum_l = L;
}

// Feature d of the merged row: the records' rows weighted by wt, over L.
CMX_A_FN cmx_at cmx_sdpa_merge_feature(const float* pp, int nsplit, int rs,
                                       int d, const float* wt, float L) {
  float O = 0.0f;
#pragma unroll 8
  for (int s = 0; s < nsplit; s++) O += __ldcg(pp + s * rs + 2 + d) * wt[s];
  return CMX_A_FROMF(O / L);
}

// Merges the records of each output row, a block a row (the split-key
// launches' second kernel; the decode kernel merges in itself unless
// sdpa.c asks for this one: CMX_CUDA_SDPA_DEC_COMBINE=launch).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_combine)
extern "C" __global__ void cmx_sdpa_combine(const float* part, cmx_at* o,
                                            int nsplit, int Dv) {
  CMX_GRID_WAIT();
  __shared__ float wt[64];
  __shared__ float sum_l;
  const long long row = blockIdx.x;
  const int rs = Dv + 2;
  const float* pp = part + row * nsplit * rs;
  const int t = threadIdx.x;
  if (t < 32) cmx_sdpa_merge_weights(pp, nsplit, rs, t, wt, &sum_l);
  __syncthreads();
  const float L = sum_l;
  for (int d = t; d < Dv; d += blockDim.x)
    o[row * Dv + d] = cmx_sdpa_merge_feature(pp, nsplit, rs, d, wt, L);
}
#endif

// ------------------------------------------------------- decode (vector)
// cmx_sdpa_dec_r<ROWS>_d<D>: few query rows (R * L <= ROWS <= 8) of one
// kv head against a long cache, D == Dv in {64, 128, 256} (float32: 64,
// 128), unit feature strides and 16-byte aligned key / value rows. A
// block (4 warps) takes the rows and the keys of one split; G = D / V
// lanes hold a key (V = 16 bytes of features a lane: one 16-byte load of
// K and one of V), so a warp takes 32 / G keys at once and U of those
// steps are loaded before any is used. Each key slot keeps its own running
// max, sum and output rows; the slots of a warp merge through shuffles, the
// warps through shared memory. One split writes the output; more write
// records that the last split block to finish merges (a.cnt: one launch a
// step) or, without a.cnt, cmx_sdpa_combine does.
constexpr int CMX_A_V = 16 / (int)sizeof(cmx_at);  // elements in 16 bytes

CMX_A_FN void cmx_sdpa_unpack(const uint4& raw, float (&f)[CMX_A_V]) {
  cmx_pack<cmx_at> u;
  u.raw = raw;
#pragma unroll
  for (int e = 0; e < CMX_A_V; e++) f[e] = CMX_A_TOF(u.e[e]);
}

// The in-kernel merge of the decode splits (a.cnt set, nsplit > 1): each
// split block, its records written, takes a ticket from its (batch, kv
// head)'s counter; the one that draws the last merges the RL rows' records
// as cmx_sdpa_combine does (the same helpers, so the same bits) and puts
// the counter back to 0, so the next launch on the stream (sdpa.c keeps a
// counter array a stream; launches on it run one after another, a graph's
// replays included) starts from 0. The fences: every thread's records are
// visible device-wide before its block's ticket (release), and the last
// block reads them only after its ticket (acquire).
template <int ROWS, int D>
CMX_A_FN void cmx_sdpa_dec_merge(const cmx_sdpa_args& a, int b, int hk,
                                 int RL) {
  __shared__ float wt[ROWS][64];
  __shared__ float sum_l[ROWS];
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned ticket = atomicAdd(a.cnt + blockIdx.x, 1u);
    last = ticket == (unsigned)a.nsplit - 1u;
    // every ticket is drawn: no other block of the launch touches it
    if (last) a.cnt[blockIdx.x] = 0u;
    __threadfence();
  }
  __syncthreads();
  if (!last) return;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, rs = D + 2;
  // row r's records: query head hk * R + r / L, row r % L
  for (int r = w; r < RL; r += 4) {
    const int h = hk * a.R + r / a.L, i = r % a.L;
    const long long orow = ((long long)b * a.H + h) * a.L + i;
    cmx_sdpa_merge_weights(a.part + orow * a.nsplit * rs, a.nsplit, rs, lane,
                           wt[r], &sum_l[r]);
  }
  __syncthreads();
  for (int x = threadIdx.x; x < RL * D; x += 128) {
    const int r = x / D, d = x % D;
    const int h = hk * a.R + r / a.L, i = r % a.L;
    const long long orow = ((long long)b * a.H + h) * a.L + i;
    a.o[orow * D + d] = cmx_sdpa_merge_feature(
        a.part + orow * a.nsplit * rs, a.nsplit, rs, d, wt[r], sum_l[r]);
  }
}

// Before the decode kernel's CMX_GRID_WAIT(): the key and value rows of
// this block's split into L2 (cmx_prefetch_l2: a hint, safe whoever
// writes them), so that under a programmatic launch their trip from
// memory overlaps the wait for the kernel before. Reads only a.
CMX_A_FN void cmx_sdpa_dec_prefetch(const cmx_sdpa_args& a) {
  const int b = (int)(blockIdx.x / a.Hk), hk = (int)(blockIdx.x % a.Hk);
  const int t0 = (int)blockIdx.y * a.per_split;
  const int n = min(a.S, t0 + a.per_split) - t0;
  const int kl = (a.D * (int)sizeof(cmx_at) + 127) / 128;  // lines a key
  const int vl = (a.Dv * (int)sizeof(cmx_at) + 127) / 128;
  const cmx_at* kb = a.k + b * a.ks[0] + hk * a.ks[1];
  const cmx_at* vb = a.v + b * a.vs[0] + hk * a.vs[1];
  for (int x = (int)threadIdx.x; x < n * kl; x += (int)blockDim.x)
    cmx_prefetch_l2(kb + (long long)(t0 + x / kl) * a.ks[2] +
                    (x % kl) * (128 / (int)sizeof(cmx_at)));
  for (int x = (int)threadIdx.x; x < n * vl; x += (int)blockDim.x)
    cmx_prefetch_l2(vb + (long long)(t0 + x / vl) * a.vs[2] +
                    (x % vl) * (128 / (int)sizeof(cmx_at)));
}

template <int ROWS, int D>
CMX_A_FN void cmx_sdpa_dec(const cmx_sdpa_args& a) {
  constexpr int V = CMX_A_V, G = D / V, KPW = 32 / G, NW = 4, KPB = NW * KPW;
  static_assert(G <= 32, "a key in one warp");
  constexpr int U = ROWS <= 2 ? 4 : 2;
  __shared__ float sm_o[NW][ROWS][D];
  __shared__ float sm_ml[NW][ROWS][2];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  const int sub = lane % G, slot = lane / G;
  const int b = (int)(blockIdx.x / a.Hk), hk = (int)(blockIdx.x % a.Hk);
  const int split = blockIdx.y, RL = a.R * a.L;
  const int t0 = split * a.per_split;
  int t1 = min(a.S, t0 + a.per_split);
  float q[ROWS][V], acc[ROWS][V], m[ROWS], l[ROWS];
  int hh[ROWS], ii[ROWS], jend[ROWS];
  bool allm[ROWS];
  int tmax = 0;
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    const bool ok = r < RL;
    const cmx_sdpa_row_at at = cmx_sdpa_row(a, b, hk, r, RL);
    hh[r] = at.h, ii[r] = at.i, jend[r] = at.je, allm[r] = at.allm;
    tmax = max(tmax, at.je);
#pragma unroll
    for (int e = 0; e < V; e++) {
      q[r][e] = ok ? CMX_A_TOF(at.q[(sub * V + e) * a.qs[3]]) * a.scale : 0.0f;
      acc[r][e] = 0.0f;
    }
    m[r] = -CMX_A_INF, l[r] = 0.0f;
    if (ok && a.sinks && split == 0 && w == 0 && slot == 0) {
      m[r] = CMX_A_TOF(a.sinks[at.h]);
      l[r] = 1.0f;
    }
  }
  t1 = min(t1, tmax);
  const cmx_at* kb = a.k + b * a.ks[0] + hk * a.ks[1] + sub * V;
  const cmx_at* vb = a.v + b * a.vs[0] + hk * a.vs[1] + sub * V;
  // warp-uniform loop: the block's step is KPB * U consecutive keys
  for (int tb = t0 + w * KPW; tb < t1; tb += KPB * U) {
    uint4 kr[U], vr[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int t = tb + u * KPB + slot;
      if (t < t1) {
        kr[u] = __ldg((const uint4*)(kb + (long long)t * a.ks[2]));
        vr[u] = __ldg((const uint4*)(vb + (long long)t * a.vs[2]));
      } else {
        kr[u] = make_uint4(0, 0, 0, 0);
        vr[u] = make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
      const int t = tb + u * KPB + slot;
      float kf[V], vf[V];
      cmx_sdpa_unpack(kr[u], kf);
      cmx_sdpa_unpack(vr[u], vf);
#pragma unroll
      for (int r = 0; r < ROWS; r++) {
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < V; e++) s = fmaf(q[r][e], kf[e], s);
#pragma unroll
        for (int o = G / 2; o > 0; o /= 2)
          s += __shfl_xor_sync(0xffffffffu, s, o);
        if (t >= t1 || t >= jend[r])
          s = -CMX_A_INF;
        else if (allm[r])
          s = CMX_A_LOWEST;
        else if (a.mask_kind >= CMX_A_BOOL)
          s = cmx_sdpa_masked(a, b, hh[r], ii[r], t, s);
        const float mn = fmaxf(m[r], s);
        const float al = m[r] == -CMX_A_INF ? 0.0f : expf(m[r] - mn);
        const float p = s == -CMX_A_INF ? 0.0f : expf(s - mn);
        l[r] = l[r] * al + p;
#pragma unroll
        for (int e = 0; e < V; e++) acc[r][e] = fmaf(acc[r][e], al, p * vf[e]);
        m[r] = mn;
      }
    }
  }
  // merge the key slots of the warp (lanes sub, sub + G, ...)
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    float M = m[r];
#pragma unroll
    for (int o = G; o < 32; o *= 2)
      M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
    const float e0 = m[r] == -CMX_A_INF ? 0.0f : expf(m[r] - M);
    float Ls = l[r] * e0;
#pragma unroll
    for (int o = G; o < 32; o *= 2) Ls += __shfl_xor_sync(0xffffffffu, Ls, o);
#pragma unroll
    for (int e = 0; e < V; e++) {
      float x = acc[r][e] * e0;
#pragma unroll
      for (int o = G; o < 32; o *= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
      if (slot == 0) sm_o[w][r][sub * V + e] = x;
    }
    if (lane == 0) sm_ml[w][r][0] = M, sm_ml[w][r][1] = Ls;
  }
  __syncthreads();
  // merge the warps and write
  for (int x = threadIdx.x; x < ROWS * D; x += NW * 32) {
    const int r = x / D, d = x % D;
    if (r >= RL) continue;
    float M = -CMX_A_INF, Ls = 0.0f, O = 0.0f;
#pragma unroll
    for (int u = 0; u < NW; u++) M = fmaxf(M, sm_ml[u][r][0]);
#pragma unroll
    for (int u = 0; u < NW; u++) {
      const float mu = sm_ml[u][r][0];
      const float e = mu == -CMX_A_INF ? 0.0f : expf(mu - M);
      Ls += sm_ml[u][r][1] * e;
      O += sm_o[u][r][d] * e;
    }
    const int h = hk * a.R + r / a.L, i = r % a.L;
    const long long orow = ((long long)b * a.H + h) * a.L + i;
    if (a.nsplit == 1) {
      a.o[orow * D + d] = CMX_A_FROMF(O / Ls);
    } else {
      float* pp = a.part + (orow * a.nsplit + split) * (D + 2);
      if (d == 0) pp[0] = M, pp[1] = Ls;
      pp[2 + d] = O;
    }
  }
  if (a.nsplit > 1 && a.cnt) cmx_sdpa_dec_merge<ROWS, D>(a, b, hk, RL);
}

// (float32 at D 256: a key would span two warps; the entry traps and
// sdpa.c never launches it)
#define CMX_SDPA_DEC(ROWS, D)                                            \
  extern "C" __global__ void __launch_bounds__(128)                     \
      cmx_sdpa_dec_r##ROWS##_d##D(const CMX_GRID_CONST cmx_sdpa_args a) { \
    cmx_sdpa_dec_prefetch(a);                                            \
    CMX_GRID_WAIT();                                                     \
    if (D / CMX_A_V <= 32)                                               \
      cmx_sdpa_dec<ROWS, (D / CMX_A_V <= 32 ? D : 64)>(a);                \
    else                                                                 \
      __trap();                                                          \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r1_d64)
CMX_SDPA_DEC(1, 64)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r1_d128)
CMX_SDPA_DEC(1, 128)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r1_d256)
CMX_SDPA_DEC(1, 256)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r2_d64)
CMX_SDPA_DEC(2, 64)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r2_d128)
CMX_SDPA_DEC(2, 128)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r2_d256)
CMX_SDPA_DEC(2, 256)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r4_d64)
CMX_SDPA_DEC(4, 64)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r4_d128)
CMX_SDPA_DEC(4, 128)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r4_d256)
CMX_SDPA_DEC(4, 256)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r8_d64)
CMX_SDPA_DEC(8, 64)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r8_d128)
CMX_SDPA_DEC(8, 128)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_dec_r8_d256)
CMX_SDPA_DEC(8, 256)
#endif

// ------------------------------------------------------- tensor cores

#if defined(CMX_A_BF16)
#define CMX_A_MMA "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define CMX_A_CVT2 "cvt.rn.bf16x2.f32"
#else
#define CMX_A_MMA "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#define CMX_A_CVT2 "cvt.rn.f16x2.f32"
#endif

CMX_A_FN void cmx_sdpa_mma16(float (&c)[4], const unsigned (&x)[4],
                             unsigned b0, unsigned b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(CMX_A_MMA
               " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(b0),
                 "r"(b1));
#else
  __trap();
#endif
}

CMX_A_FN void cmx_sdpa_ldsm(unsigned (&r)[4], unsigned addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

CMX_A_FN void cmx_sdpa_ldsm_t(unsigned (&r)[4], unsigned addr) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(addr));
}

// 16 bytes global -> shared, zero-filled when !full.
CMX_A_FN void cmx_sdpa_cp16(unsigned dst, const void* src, bool full) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(src), "r"(full ? 16 : 0));
#else
  __trap();
#endif
}

CMX_A_FN void cmx_sdpa_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
CMX_A_FN void cmx_sdpa_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

CMX_A_FN unsigned cmx_sdpa_pack(float lo, float hi) {
  unsigned r;
  asm(CMX_A_CVT2 " %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

CMX_A_FN float cmx_sdpa_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

CMX_A_FN unsigned cmx_sdpa_saddr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

// Rows [row0, row0 + 64) of a (b, head) matrix of `rows` rows (row stride
// rs, unit feature stride) into s[64][D + 8] (rows past the end zeroed).
template <int D>
CMX_A_FN void cmx_sdpa_tile(cmx_at* s, const cmx_at* base, long long rs,
                            int row0, int rows) {
  constexpr int CH = D / 8, P = D + 8;
  for (int c = threadIdx.x; c < 64 * CH; c += 128) {
    const int r = c / CH, x = c % CH, g = row0 + r;
    const bool ok = g < rows;
    cmx_sdpa_cp16(cmx_sdpa_saddr(s + r * P + x * 8),
                  ok ? (const void*)(base + g * rs + x * 8) : (const void*)base,
                  ok);
  }
}

template <int D>
CMX_A_FN void cmx_sdpa_mma(const cmx_sdpa_args& a) {
  constexpr int BR = 64, BC = 64, P = D + 8, NT = BC / 8, DT = D / 8;
  extern __shared__ __align__(16) unsigned char cmx_sdpa_smb[];
  cmx_at* sQ = (cmx_at*)cmx_sdpa_smb;
  cmx_at* sK = sQ + BR * P;  // two stages
  cmx_at* sV = sK + 2 * BC * P;
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2;
  const int blk = gridDim.x - 1 - blockIdx.x;  // the longest (causal) first
  const int h = blockIdx.y, b = blockIdx.z, hk = h / a.R, i0 = blk * BR;
  const cmx_at* qb = a.q + b * a.qs[0] + h * a.qs[1];
  const cmx_at* kb = a.k + b * a.ks[0] + hk * a.ks[1];
  const cmx_at* vb = a.v + b * a.vs[0] + hk * a.vs[1];
  const int shift = a.S - a.L;  // causal: key t for row i when t <= i + shift
  int kend = a.S;
  if (a.mask_kind == CMX_A_CAUSAL) kend = min(a.S, i0 + BR + shift);
  const int ntile = kend > 0 ? (kend + BC - 1) / BC : 0;
  cmx_sdpa_tile<D>(sQ, qb, a.qs[2], i0, a.L);
  if (ntile > 0) {
    cmx_sdpa_tile<D>(sK, kb, a.ks[2], 0, a.S);
    cmx_sdpa_tile<D>(sV, vb, a.vs[2], 0, a.S);
  }
  cmx_sdpa_commit();
  unsigned qa[D / 16][4];
  float o[DT][4];
#pragma unroll
  for (int n = 0; n < DT; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float mr[2] = {-CMX_A_INF, -CMX_A_INF}, lr[2] = {0.0f, 0.0f};
  if (a.sinks) {
    const float sk = CMX_A_TOF(a.sinks[h]) * CMX_A_LOG2E;
    mr[0] = mr[1] = sk;
    if ((lane & 3) == 0) lr[0] = lr[1] = 1.0f;  // once per row
  }
  const float sl2 = a.scale * CMX_A_LOG2E;
  if (ntile == 0) {
    cmx_sdpa_wait<0>();
    __syncthreads();
  }
  for (int j = 0; j < ntile; j++) {
    if (j + 1 < ntile) {
      const int st = (j + 1) & 1;
      cmx_sdpa_tile<D>(sK + st * BC * P, kb, a.ks[2], (j + 1) * BC, a.S);
      cmx_sdpa_tile<D>(sV + st * BC * P, vb, a.vs[2], (j + 1) * BC, a.S);
      cmx_sdpa_commit();
      cmx_sdpa_wait<1>();
    } else {
      cmx_sdpa_wait<0>();
    }
    __syncthreads();
    if (j == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; kk++)
        cmx_sdpa_ldsm(qa[kk],
                      cmx_sdpa_saddr(sQ + (w * 16 + (lane & 7) +
                                           ((lane >> 3) & 1) * 8) * P +
                                     kk * 16 + (lane >> 4) * 8));
    }
    const cmx_at* K = sK + (j & 1) * BC * P;
    const cmx_at* V = sV + (j & 1) * BC * P;
    float s[NT][4];
#pragma unroll
    for (int n = 0; n < NT; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
      for (int np = 0; np < NT / 2; np++) {
        unsigned bf[4];
        cmx_sdpa_ldsm(bf, cmx_sdpa_saddr(K + (np * 16 + (lane & 7) +
                                              (lane >> 4) * 8) * P +
                                         kk * 16 + ((lane >> 3) & 1) * 8));
        cmx_sdpa_mma16(s[2 * np], qa[kk], bf[0], bf[1]);
        cmx_sdpa_mma16(s[2 * np + 1], qa[kk], bf[2], bf[3]);
      }
    }
    // scores in the log2 domain; masked-out ones -inf (causal, past S) or
    // the lowest float (masks, as the CPU)
    const int tb = j * BC;
    const bool plain = tb + BC <= a.S && a.mask_kind != CMX_A_BOOL &&
                       a.mask_kind != CMX_A_ADD &&
                       !(a.mask_kind == CMX_A_CAUSAL &&
                         tb + BC - 1 > i0 + shift);
#pragma unroll
    for (int hr = 0; hr < 2; hr++) {
      const int i = i0 + w * 16 + g + 8 * hr;
      float mx = -CMX_A_INF;
#pragma unroll
      for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          float x;
          if (plain) {
            x = s[n][2 * hr + e] * sl2;
          } else {
            const int t = tb + n * 8 + (lane & 3) * 2 + e;
            x = s[n][2 * hr + e] * a.scale;
            if (t >= a.S || (a.mask_kind == CMX_A_CAUSAL && t > i + shift))
              x = -CMX_A_INF;
            else if (a.mask_kind >= CMX_A_BOOL && i < a.L)
              x = cmx_sdpa_masked(a, b, h, i, t, x);
            // the lowest float stays finite (a fully masked row averages)
            if (x != -CMX_A_INF) x = fmaxf(x * CMX_A_LOG2E, CMX_A_LOWEST);
          }
          s[n][2 * hr + e] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float mn = fmaxf(mr[hr], mx);
      const float mu = mn == -CMX_A_INF ? 0.0f : mn;
      const float al = cmx_sdpa_ex2(mr[hr] - mu);
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < NT; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const float p = cmx_sdpa_ex2(s[n][2 * hr + e] - mu);
          s[n][2 * hr + e] = p;
          sum += p;
        }
      lr[hr] = lr[hr] * al + sum;
      mr[hr] = mn;
#pragma unroll
      for (int n = 0; n < DT; n++) o[n][2 * hr] *= al, o[n][2 * hr + 1] *= al;
    }
    // O += P V
#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
      unsigned pa[4];
      pa[0] = cmx_sdpa_pack(s[2 * kk][0], s[2 * kk][1]);
      pa[1] = cmx_sdpa_pack(s[2 * kk][2], s[2 * kk][3]);
      pa[2] = cmx_sdpa_pack(s[2 * kk + 1][0], s[2 * kk + 1][1]);
      pa[3] = cmx_sdpa_pack(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
      for (int dp = 0; dp < D / 16; dp++) {
        unsigned bf[4];
        cmx_sdpa_ldsm_t(bf, cmx_sdpa_saddr(V + (kk * 16 + (lane & 7) +
                                                ((lane >> 3) & 1) * 8) * P +
                                           dp * 16 + (lane >> 4) * 8));
        cmx_sdpa_mma16(o[2 * dp], pa, bf[0], bf[1]);
        cmx_sdpa_mma16(o[2 * dp + 1], pa, bf[2], bf[3]);
      }
    }
    __syncthreads();  // the stage is free for the next prefetch
  }
#pragma unroll
  for (int hr = 0; hr < 2; hr++) {
    float l = lr[hr];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int i = i0 + w * 16 + g + 8 * hr;
    if (i >= a.L) continue;
    const float inv = 1.0f / l;
    cmx_at* orow = a.o + (((long long)b * a.H + h) * a.L + i) * a.Dv;
#pragma unroll
    for (int n = 0; n < DT; n++) {
      const int col = n * 8 + (lane & 3) * 2;
      const unsigned lo = (unsigned short)CMX_A_FROMF(o[n][2 * hr] * inv);
      const unsigned hi = (unsigned short)CMX_A_FROMF(o[n][2 * hr + 1] * inv);
      *(unsigned*)(orow + col) = lo | (hi << 16);
    }
  }
}

#define CMX_SDPA_MMA(D)                                                    \
  extern "C" __global__ void __launch_bounds__(128)                       \
      cmx_sdpa_mma_d##D(const CMX_GRID_CONST cmx_sdpa_args a) {           \
    CMX_GRID_WAIT();                                                       \
    cmx_sdpa_mma<D>(a);                                                    \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_mma_d64)
CMX_SDPA_MMA(64)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_mma_d80)
CMX_SDPA_MMA(80)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_mma_d96)
CMX_SDPA_MMA(96)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_sdpa_mma_d128)
CMX_SDPA_MMA(128)
#endif
