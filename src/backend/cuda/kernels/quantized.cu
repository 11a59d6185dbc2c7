// Kernels of Quantize, Dequantize and QuantizedMatmul (affine mode) for
// one float dtype and one bit width. The module is common.cu, the prelude,
// ew_bind.cu, primitives/ew_scalar.h and splitk.cu (the split-K sum,
// cmx_splitk_sum), then this file. The prelude
// (quantized.c) defines:
//   CMX_Q_T        the storage type of x / the output (quantize: of w)
//   CMX_Q_TOF(x), CMX_Q_FROMF(v)   storage <-> float32
//   CMX_Q_BITS     the bit width (2, 3, 4, 5, 6, 8)
//   CMX_Q_MMA      the tensor-core input type: 1 float16, 2 bfloat16, 0
//                  none (float32)
//   CMX_SK_T, CMX_SK_F, CMX_SK_FROMF   splitk.cu's types: CMX_Q_T, float
// Packed rows are LSB-first bit streams of 32-bit words; 32 values take
// exactly CMX_Q_BITS words (a "chunk"), and groups are whole chunks.
// Scales and biases may be of another float dtype than the output: they
// are read through cmx_q_ld with a dtype code (0 float32, 1 float16,
// 2 bfloat16).

typedef CMX_Q_T cmx_qt;
#define CMX_Q_FN static __device__ __forceinline__
#define CMX_Q_B CMX_Q_BITS
#define CMX_Q_MASK ((1u << CMX_Q_B) - 1u)
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
  CMX_GRID_WAIT();
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
  CMX_GRID_WAIT();
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
  int g, scode, bcode;
};

// Matrix-vector (transpose, few rows of x: decoding). Block
// blockIdx.x = (n-block nb, m-block mb) with mb fastest (the m-blocks of
// one weight slice run side by side, so all but the first read it from
// L2): R consecutive weight rows (output columns) n0 .. n0 + R - 1 against
// MT rows m0 .. m0 + MT - 1 of x. The block's threads split K by 32-value
// chunks (thread t: chunks t, t + blockDim.x, ...): each loads the chunk's
// CMX_Q_B packed words of its R rows (16-byte loads when wal allows), the
// R scales and biases of the chunk's group, and x's 32 values of each of
// its rows straight from global memory (L1-cached, shared by the R rows),
// 8 at a time (one 16-byte load for 16-bit x when xvec); it adds
// scale * (q . x) + bias * sum(x) per chunk, in float32 (4 and 8 bits:
// with CMX_CUDA_QMV=fast cmx_qmv_dot_fast, no integer conversions). R:
// 2 weight rows; with CMX_CUDA_QMV=fast 8 for one row of x (4 past 4
// bits), 4 for two, 2 for more: x's values are loaded once for R rows. Partial sums meet through warp shuffles and shared
// memory. wal: the alignment in words of every packed row start (4, 2 or
// 1).
template <int MT>
struct cmx_qmv_rows {
  static const int R = MT == 1 ? (CMX_Q_B <= 4 ? 8 : 4) : MT == 2 ? 4 : 2;
};

CMX_Q_FN void cmx_q_load_chunk(const uint32_t* p, int wal,
                               uint32_t (&w)[CMX_Q_B]) {
  if (CMX_Q_B % 4 == 0 && wal >= 4) {
#pragma unroll
    for (int j = 0; j < CMX_Q_B / 4; j++) {
      const uint4 u = __ldg((const uint4*)p + j);
      w[4 * j] = u.x, w[4 * j + 1] = u.y, w[4 * j + 2] = u.z,
            w[4 * j + 3] = u.w;
    }
  } else if (CMX_Q_B % 2 == 0 && wal >= 2) {
#pragma unroll
    for (int j = 0; j < CMX_Q_B / 2; j++) {
      const uint2 u = __ldg((const uint2*)p + j);
      w[2 * j] = u.x, w[2 * j + 1] = u.y;
    }
  } else {
#pragma unroll
    for (int j = 0; j < CMX_Q_B; j++) w[j] = __ldg(p + j);
  }
}

// x's 8 values from p (elements xk apart; xvec: contiguous and 16-byte
// aligned) as float32. SX: p is in shared memory (plain loads; __ldg
// reads global memory only).
template <bool SX = false>
CMX_Q_FN void cmx_q_load_x8(const cmx_qt* p, long long xk, int xvec,
                            float (&v)[8]) {
  if (xvec) {
    const int V = 16 / (int)sizeof(cmx_qt);
#pragma unroll
    for (int h = 0; h < 8 / V; h++) {
      cmx_pack<cmx_qt> u;
      const uint4* q = (const uint4*)(p + h * V);
      u.raw = SX ? *q : __ldg(q);
#pragma unroll
      for (int i = 0; i < V; i++) v[h * V + i] = CMX_Q_TOF(u.e[i]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) v[i] = CMX_Q_TOF(p[i * xk]);
  }
}

// The chunk's dot products, any bit width: each value unpacked and
// converted to float32 (cmx_qmv_dot_fast's arguments).
template <int MT, int R, bool SX = false>
CMX_Q_FN void cmx_qmv_dot(const cmx_qt* p, long long xm, long long xk,
                          int xvec, int Mh, const uint32_t (&wv)[R][CMX_Q_B],
                          float (&d)[MT][R], float (&xs)[MT]) {
#pragma unroll
  for (int j = 0; j < 4; j++) {
    float q[R][8];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int i = 0; i < 8; i++)
        q[r][i] = (float)cmx_q_chunk_val(wv[r], 8 * j + i);
#pragma unroll
    for (int m = 0; m < MT; m++) {
      if (m < Mh) {
        float xv[8];
        cmx_q_load_x8<SX>(p + m * xm + 8 * j * xk, xk, xvec, xv);
        xs[m] += ((xv[0] + xv[1]) + (xv[2] + xv[3])) +
                 ((xv[4] + xv[5]) + (xv[6] + xv[7]));
#pragma unroll
        for (int r = 0; r < R; r++) {
          float t = d[m][r];
#pragma unroll
          for (int i = 0; i < 8; i++) t = fmaf(q[r][i], xv[i], t);
          d[m][r] = t;
        }
      }
    }
  }
}

// The chunk's dot products for 4 and 8 bits without integer -> float
// conversions: the value of field n of a 16-bit half word, masked in
// place (q << (bits * n)) and or-ed into the exponent of 2^23, is the
// float 2^23 + q * 2^(bits * n) exactly; minus 2^23 and times x's value
// pre-scaled by 2^-(bits * n) (exact: a power of two) it is q * x. Per
// value: a LOP3, an FADD and an FFMA, x's scaling shared by the R rows.
// d[m][r] += q . x, xs[m] += sum(x) for rows m < Mh of x at p (rows xm
// apart, elements xk apart; xvec: 16-byte loads).
#if CMX_Q_B == 4 || CMX_Q_B == 8
template <int MT, int R, bool SX = false>
CMX_Q_FN void cmx_qmv_dot_fast(const cmx_qt* p, long long xm, long long xk,
                               int xvec, int Mh,
                               const uint32_t (&wv)[R][CMX_Q_B],
                               float (&d)[MT][R], float (&xs)[MT]) {
  constexpr int PER = 16 / CMX_Q_B;  // fields a half word
  constexpr int VPW = 32 / CMX_Q_B;  // values a word
  const float magic = 8388608.0f;
#pragma unroll
  for (int m = 0; m < MT; m++) {
    if (m < Mh) {
      float xv[32];
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float t[8];
        cmx_q_load_x8<SX>(p + m * xm + 8 * j * xk, xk, xvec, t);
#pragma unroll
        for (int i = 0; i < 8; i++) xv[8 * j + i] = t[i];
      }
      float sx = 0.0f;
#pragma unroll
      for (int i = 0; i < 32; i++) {
        sx += xv[i];
        // 2^-(bits * (i % PER)), exact
        xv[i] *= __int_as_float((127 - CMX_Q_B * (i % PER)) << 23);
      }
      xs[m] += sx;
#pragma unroll
      for (int r = 0; r < R; r++) {
        float t = 0.0f;
#pragma unroll
        for (int j = 0; j < CMX_Q_B; j++) {
          const uint32_t wd = wv[r][j], hw[2] = {wd, wd >> 16};
#pragma unroll
          for (int n = 0; n < VPW; n++) {
            const uint32_t f =
                (hw[n / PER] & (CMX_Q_MASK << (CMX_Q_B * (n % PER)))) |
                0x4B000000u;
            t = fmaf(__uint_as_float(f) - magic, xv[j * VPW + n], t);
          }
        }
        d[m][r] += t;
      }
    }
  }
}
#endif

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1) ||   \
    defined(CMX_ONLY_cmx_qmv1w) || defined(CMX_ONLY_cmx_qmv1w1) || \
    defined(CMX_ONLY_cmx_qmv1w2) ||                              \
    defined(CMX_ONLY_cmx_qmv2) || defined(CMX_ONLY_cmx_qmv4) ||  \
    defined(CMX_ONLY_cmx_qmv8) || defined(CMX_ONLY_cmx_qmv1f) || \
    defined(CMX_ONLY_cmx_qmv2f) || defined(CMX_ONLY_cmx_qmv4f) || \
    defined(CMX_ONLY_cmx_qmv8f) || defined(CMX_ONLY_cmx_qmv1r1) || \
    defined(CMX_ONLY_cmx_qmv1sg) || defined(CMX_ONLY_cmx_qmv1sgf) || \
    defined(CMX_ONLY_cmx_qmv1n) || defined(CMX_ONLY_cmx_qmv1r1n) || \
    defined(CMX_ONLY_cmx_qmv1sgn)
// AddRMSNormQuantizedMatmul's prologue (quantized.c:
// cmx__gpu_add_rms_norm_qmm; the product's x is y): row b = blockIdx.y of
// x and r (layout X: the rows' row-major index -> x's and r's offsets;
// elements lx and lr apart, or 16-byte packs when packed), D elements; w
// (hw) the norm's weight, 16-byte aligned; h row-major.
struct cmx_qn_args {
  const cmx_qt* x;
  const cmx_qt* r;
  const cmx_qt* w;
  cmx_qt* h;
  long long D, lx, lr;
  float eps;
  int G, packed, hw;
};

// Element i of y in the prologue's shared buffer: each 32-value chunk is
// followed by 16 bytes of padding, so the threads reading chunks t, t + 1,
// ... (16 bytes each) hit distinct banks.
CMX_Q_FN long long cmx_qn_at(long long i) {
  return i + (i >> 5) * (16 / (long long)sizeof(cmx_qt));
}

// Every block computes AddRMSNorm's row b into ys (y rounded to the
// storage type; block (0, b) also stores h's row b) exactly as
// cmx_addnorm_vec_rms (fast.c, kernels/fast.cu) computes it at its launch
// for this row: G threads a row (N.G, the launch fast.c's norm_cfg picks:
// a power of two, 32 .. 1024), thread u holding the 16-byte vectors
// j * G + u (j < 4) of h = x + r rounded to the storage type, adding the
// squares of their elements in that order (float32, fused as there), then
// cmx_f_sum: the butterfly of each warp and, when G > 32, the butterfly
// over the warps' sums; rs = 1 / sqrt(sum / D + eps), y = (h * rs) * w.
// This block's T threads (the mat-vec's, a multiple of 32) play those G
// threads as virtual threads u = t + k * T (k < ceil(G / T)): as T is a
// multiple of 32, virtual warp u / 32 lies lane for lane in one physical
// warp, so the same shuffles add the same values in the same tree, and y
// is the unfused y, bit for bit. The vectors past D are zeros there
// (their squares add nothing) and are skipped here.
CMX_Q_FN void cmx_qn_prologue(const cmx_qn_args& N, const cmx_layout_n<3>& X,
                              cmx_qt* ys) {
  __shared__ float part[32];  // the virtual warps' sums
  const int V = 16 / (int)sizeof(cmx_qt);
  const long long nv = N.D / V;
  const int T = (int)blockDim.x, t = (int)threadIdx.x, lane = t & 31;
  const int G = N.G, S = (G + T - 1) / T;
  long long off[2];
  cmx_offsets<long long, 0, 3>(X, (long long)blockIdx.y, off);
  const cmx_qt* xr = N.x + off[0];
  const cmx_qt* rr = N.r + off[1];
  uint4* hr = (uint4*)(N.h + (long long)blockIdx.y * N.D);
  const bool store_h = blockIdx.x == 0;
  for (int k = 0; k < S; k++) {
    const int u = t + k * T;
    float s = 0;
    if (u < G) {
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const long long i = (long long)j * G + u;
        if (i < nv) {
          cmx_pack<cmx_qt> px, pr, ph;
          if (N.packed) {
            px.raw = ((const uint4*)xr)[i];
            pr.raw = ((const uint4*)rr)[i];
          } else {
#pragma unroll
            for (int e = 0; e < V; e++) {
              px.e[e] = xr[(i * V + e) * N.lx];
              pr.e[e] = rr[(i * V + e) * N.lr];
            }
          }
#pragma unroll
          for (int e = 0; e < V; e++) {
            ph.e[e] = CMX_Q_FROMF(CMX_Q_TOF(px.e[e]) + CMX_Q_TOF(pr.e[e]));
            const float v = CMX_Q_TOF(ph.e[e]);
            s += v * v;
          }
          *(uint4*)(ys + cmx_qn_at(i * V)) = ph.raw;
          if (store_h) hr[i] = ph.raw;
        }
      }
    }
#pragma unroll
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(0xffffffffu, s, d);
    if (lane == 0 && u < G) part[u >> 5] = s;
  }
  __syncthreads();
  float tot = part[0];
  if (G > 32) {
    tot = lane < G / 32 ? part[lane] : 0.0f;
#pragma unroll
    for (int d = 16; d > 0; d /= 2) tot += __shfl_xor_sync(0xffffffffu, tot, d);
  }
  const float rs = 1.0f / sqrtf(tot / (float)N.D + N.eps);
  // each thread scales the vectors it stored itself
  for (int k = 0; k < S; k++) {
    const int u = t + k * T;
    if (u >= G) break;
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const long long i = (long long)j * G + u;
      if (i < nv) {
        uint4* p = (uint4*)(ys + cmx_qn_at(i * V));
        cmx_pack<cmx_qt> ph, pw, py;
        ph.raw = *p;
        pw.raw = N.hw ? ((const uint4*)N.w)[i] : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int e = 0; e < V; e++) {
          float y = CMX_Q_TOF(ph.e[e]) * rs;  // fast.cu's cmx_f_scale
          if (N.hw) y = y * CMX_Q_TOF(pw.e[e]);
          py.e[e] = CMX_Q_FROMF(y);
        }
        *p = py.raw;
      }
    }
  }
  __syncthreads();
}

// The packed words, scales and biases of R weight rows (wrow, so, bio as
// the mat-vec kernels set them) into L2 before CMX_GRID_WAIT(), chunks
// first, first + step, ...: they start coming while a programmatically
// dependent launch still waits for the kernel before it (graph.c). A
// prefetch only fills the coherent L2 (never a stale value), so it is safe
// even if the kernel being waited for writes them. Reads only A.
template <int R>
CMX_Q_FN void cmx_qmv_prefetch(const cmx_qmm_args& A,
                               const uint32_t* const* wrow,
                               const long long* so, const long long* bio,
                               long long first, long long step) {
  const int es = A.scode == 0 ? 4 : 2, eb = A.bcode == 0 ? 4 : 2;
  for (long long c = first; c < A.K / 32; c += step) {
    const long long grp = c * 32 / A.g;
#pragma unroll
    for (int r = 0; r < R; r++) {
      cmx_prefetch_l2(wrow[r] + c * CMX_Q_B);
      cmx_prefetch_l2((const char*)A.sc + (so[r] + grp) * es);
      cmx_prefetch_l2((const char*)A.bi + (bio[r] + grp) * eb);
    }
  }
}
// RN: the weight rows a block without F (2; 1 for cmx_qmv1r1). SG
// (QuantizedMatmulSwiGLU, MT = 1): block nb takes weight rows nb and
// nb + N / 2 (R = 2), each summed exactly as the other kernels sum a row,
// rounded to the storage type, and writes one output: silu(a) * b with
// every step rounded to the storage type as the elementwise kernels of
// Sigmoid and Multiply round (cmx_ew_sigmoidf, ew_scalar.h); y has N / 2
// columns. NORM (MT = 1, AddRMSNormQuantizedMatmul): x is y, which
// cmx_qn_prologue (N, X) computes into dynamic shared memory first; the
// sums are then those of the kernel without NORM, value for value.
// Its entry points leave CMX_GRID_WAIT() to it (after the prefetch).
template <int MT, bool F, int RN = 2, bool SG = false, bool NORM = false>
CMX_Q_FN void cmx_qmv(const cmx_qmm_args& A, int wal, int xvec,
                      const cmx_layout_n<5>& Bt,
                      const cmx_qn_args* N = nullptr,
                      const cmx_layout_n<3>* X = nullptr) {
  const int R = SG ? 2 : F ? cmx_qmv_rows<MT>::R : RN;
  __shared__ float red[32][MT * R];
  extern __shared__ __align__(16) unsigned char cmx_qn_smem[];
  cmx_qt* ys = (cmx_qt*)cmx_qn_smem;
  const long long mblocks = (A.M + MT - 1) / MT;
  const long long nb = blockIdx.x / mblocks, mb = blockIdx.x - nb * mblocks;
  long long bo[4];
  cmx_offsets<long long, 0, 5>(Bt, (long long)blockIdx.y, bo);
  const long long m0 = mb * MT, n0 = SG ? nb : nb * R;
  const int Mh = (int)(A.M - m0 < MT ? A.M - m0 : MT);
  const cmx_qt* x = NORM ? ys : A.x + bo[0] + m0 * A.xm;
  const uint32_t* wrow[R];
  long long so[R], bio[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const long long nr = SG ? n0 + r * (A.N / 2) : n0 + r;
    const long long n = nr < A.N ? nr : A.N - 1;
    wrow[r] = A.w + bo[1] + n * A.wr;
    so[r] = bo[2] + n * A.sr;
    bio[r] = bo[3] + n * A.br;
  }
  // while NORM's prologue runs too
  cmx_qmv_prefetch<R>(A, wrow, so, bio, threadIdx.x, blockDim.x);
  CMX_GRID_WAIT();
  if (NORM) cmx_qn_prologue(*N, *X, ys);
  float acc[MT][R];
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int r = 0; r < R; r++) acc[m][r] = 0;
  const long long nch = A.K / 32;
  for (long long c = threadIdx.x; c < nch; c += blockDim.x) {
    uint32_t wv[R][CMX_Q_B];
#pragma unroll
    for (int r = 0; r < R; r++)
      cmx_q_load_chunk(wrow[r] + c * CMX_Q_B, wal, wv[r]);
    const long long grp = c * 32 / A.g;
    float s[R], b[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      s[r] = cmx_q_ld(A.sc, A.scode, so[r] + grp);
      b[r] = cmx_q_ld(A.bi, A.bcode, bio[r] + grp);
    }
    float d[MT][R], xs[MT];
#pragma unroll
    for (int m = 0; m < MT; m++) {
      xs[m] = 0;
#pragma unroll
      for (int r = 0; r < R; r++) d[m][r] = 0;
    }
    // NORM: chunk c of y at its padded place, contiguous, aligned
    const cmx_qt* xc = NORM ? x + cmx_qn_at(c * 32) : x + c * 32 * A.xk;
    const long long xm = NORM ? 0 : A.xm, xk = NORM ? 1 : A.xk;
    const int xv = NORM ? 1 : xvec;
#if CMX_Q_B == 4 || CMX_Q_B == 8
    if (F)
      cmx_qmv_dot_fast<MT, R, NORM>(xc, xm, xk, xv, Mh, wv, d, xs);
    else
#endif
      cmx_qmv_dot<MT, R, NORM>(xc, xm, xk, xv, Mh, wv, d, xs);
#pragma unroll
    for (int m = 0; m < MT; m++)
#pragma unroll
      for (int r = 0; r < R; r++)
        acc[m][r] += s[r] * d[m][r] + b[r] * xs[m];
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int m = 0; m < MT; m++)
#pragma unroll
    for (int r = 0; r < R; r++) {
      float v = acc[m][r];
#pragma unroll
      for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0) red[warp][m * R + r] = v;
    }
  __syncthreads();
  const int t = threadIdx.x, nw = (int)(blockDim.x >> 5);
  if (SG) {
    if (t == 0 && n0 < A.N / 2) {
      float v[2] = {0, 0};  // each row's sum in the order of the others
#pragma unroll
      for (int r = 0; r < 2; r++)
        for (int w = 0; w < nw; w++) v[r] += red[w][r];
      const float a = CMX_Q_TOF(CMX_Q_FROMF(v[0]));
      const float b = CMX_Q_TOF(CMX_Q_FROMF(v[1]));
      const float s = CMX_Q_TOF(CMX_Q_FROMF(cmx_ew_sigmoidf(a)));
      const float p = CMX_Q_TOF(CMX_Q_FROMF(a * s));
      A.y[(long long)blockIdx.y * (A.N / 2) + n0] = CMX_Q_FROMF(p * b);
    }
  } else if (t < MT * R) {
    const int m = t / R, r = t - m * R;
    float v = 0;
    for (int w = 0; w < nw; w++) v += red[w][t];
    if (m < Mh && n0 + r < A.N)
      A.y[((long long)blockIdx.y * A.M + m0 + m) * A.N + n0 + r] =
          CMX_Q_FROMF(v);
  }
}

// One row of x, a warp for each R weight rows (cmx_qmv1w; quantized.c:
// QMV_W_MINN): for many rows of few chunks (an LM head: K 576, 18 chunks,
// N 49152), where cmx_qmv1's one-warp blocks hold the device to 32 warps
// an SM. Warp w of block b takes rows (b * warps + w) * R ..., lane l its
// chunks l, l + 32, ... in cmx_qmv's order, and the same butterfly sums
// the lanes: each output is cmx_qmv1's at 32 threads, bit for bit.
template <int R>
CMX_Q_FN void cmx_qmv_warps(const cmx_qmm_args& A, int wal, int xvec,
                            const cmx_layout_n<5>& Bt) {
  const int lane = threadIdx.x & 31;
  const long long n0 =
      ((long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * R;
  long long bo[4];
  cmx_offsets<long long, 0, 5>(Bt, (long long)blockIdx.y, bo);
  const uint32_t* wrow[R];
  long long so[R], bio[R];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const long long n = n0 + r < A.N ? n0 + r : A.N - 1;
    wrow[r] = A.w + bo[1] + n * A.wr;
    so[r] = bo[2] + n * A.sr;
    bio[r] = bo[3] + n * A.br;
  }
  const long long nch = A.K / 32;
  cmx_qmv_prefetch<R>(A, wrow, so, bio, lane, 32);
  CMX_GRID_WAIT();
  const cmx_qt* x = A.x + bo[0];
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; r++) acc[r] = 0;
  for (long long c = lane; c < nch; c += 32) {
    uint32_t wv[R][CMX_Q_B];
#pragma unroll
    for (int r = 0; r < R; r++)
      cmx_q_load_chunk(wrow[r] + c * CMX_Q_B, wal, wv[r]);
    const long long grp = c * 32 / A.g;
    float s[R], b[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
      s[r] = cmx_q_ld(A.sc, A.scode, so[r] + grp);
      b[r] = cmx_q_ld(A.bi, A.bcode, bio[r] + grp);
    }
    float d[1][R], xs[1] = {0};
#pragma unroll
    for (int r = 0; r < R; r++) d[0][r] = 0;
    cmx_qmv_dot<1, R>(x + c * 32 * A.xk, A.xm, A.xk, xvec, 1, wv, d, xs);
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] += s[r] * d[0][r] + b[r] * xs[0];
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    float v = acc[r];
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    // cmx_qmv adds the warps' sums to 0: the same value
    if (lane == 0 && n0 + r < A.N)
      A.y[(long long)blockIdx.y * A.M * A.N + n0 + r] = CMX_Q_FROMF(0.0f + v);
  }
}
#endif
// Entry points: cmx_qmv<MT> (R = 2, at most 512 threads, MINB blocks of
// 512 an SM: 2 for one row of x, at most 64 registers, so a decode grid
// fits the device in one wave) and cmx_qmv<MT>f (CMX_CUDA_QMV=fast:
// cmx_qmv_rows' R and the conversion-free dot, at most 256 threads).
#define CMX_QMV_ENTRY_R(MT, MINB, F, NAME, NT, RN)                          \
  extern "C" __global__ void __launch_bounds__(NT, MINB)                   \
      NAME(const CMX_GRID_CONST cmx_qmm_args A, int wal, int xvec,         \
           const CMX_GRID_CONST cmx_layout_n<5> Bt) {                      \
    cmx_qmv<MT, F, RN>(A, wal, xvec, Bt);                                   \
  }
#define CMX_QMV_ENTRY(MT, MINB, F, NAME, NT) \
  CMX_QMV_ENTRY_R(MT, MINB, F, NAME, NT, 2)
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1)
CMX_QMV_ENTRY(1, 2, false, cmx_qmv1, 512)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1f)
CMX_QMV_ENTRY(1, 2, true, cmx_qmv1f, 256)
#endif
// a warp for each R weight rows, 8 warps a block: cmx_qmv1w (R 4;
// quantized.c: QMV_W_MINN), cmx_qmv1w1 / cmx_qmv1w2 (R 1 / 2:
// CMX_CUDA_QMV=w1, w2)
#define CMX_QMV_ENTRY_W(NAME, R)                                         \
  extern "C" __global__ void __launch_bounds__(256)                      \
      NAME(const CMX_GRID_CONST cmx_qmm_args A, int wal, int xvec,       \
           const CMX_GRID_CONST cmx_layout_n<5> Bt) {                    \
    cmx_qmv_warps<R>(A, wal, xvec, Bt);                                  \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1w)
CMX_QMV_ENTRY_W(cmx_qmv1w, 4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1w1)
CMX_QMV_ENTRY_W(cmx_qmv1w1, 1)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1w2)
CMX_QMV_ENTRY_W(cmx_qmv1w2, 2)
#endif
// one weight row a block, one row of x (quantized.c: r1_qmv)
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1r1)
CMX_QMV_ENTRY_R(1, 2, false, cmx_qmv1r1, 512, 1)
#endif
// QuantizedMatmulSwiGLU (quantized.c: cmx__gpu_quantized_matmul_swiglu):
// cmx_qmv1's and cmx_qmv1f's sums for the rows j and j + N / 2
#define CMX_QMV_ENTRY_SG(F, NAME, NT)                                     \
  extern "C" __global__ void __launch_bounds__(NT, 2)                     \
      NAME(const CMX_GRID_CONST cmx_qmm_args A, int wal, int xvec,        \
           const CMX_GRID_CONST cmx_layout_n<5> Bt) {                     \
    cmx_qmv<1, F, 2, true>(A, wal, xvec, Bt);                              \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1sg)
CMX_QMV_ENTRY_SG(false, cmx_qmv1sg, 512)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1sgf)
CMX_QMV_ENTRY_SG(true, cmx_qmv1sgf, 256)
#endif
// AddRMSNormQuantizedMatmul (quantized.c: cmx__gpu_add_rms_norm_qmm):
// cmx_qmv1, cmx_qmv1r1 and cmx_qmv1sg with the norm's prologue (the same
// launch bounds, so the same threads a block)
#define CMX_QMV_ENTRY_N(NAME, RN, SG)                                       \
  extern "C" __global__ void __launch_bounds__(512, 2)                     \
      NAME(const CMX_GRID_CONST cmx_qmm_args A, int wal,                   \
           const CMX_GRID_CONST cmx_layout_n<5> Bt,                        \
           const CMX_GRID_CONST cmx_qn_args N,                             \
           const CMX_GRID_CONST cmx_layout_n<3> X) {                       \
    cmx_qmv<1, false, RN, SG, true>(A, wal, 1, Bt, &N, &X);                 \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1n)
CMX_QMV_ENTRY_N(cmx_qmv1n, 2, false)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1r1n)
CMX_QMV_ENTRY_N(cmx_qmv1r1n, 1, false)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv1sgn)
CMX_QMV_ENTRY_N(cmx_qmv1sgn, 2, true)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv2)
CMX_QMV_ENTRY(2, 1, false, cmx_qmv2, 512)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv2f)
CMX_QMV_ENTRY(2, 1, true, cmx_qmv2f, 256)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv4)
CMX_QMV_ENTRY(4, 1, false, cmx_qmv4, 512)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv4f)
CMX_QMV_ENTRY(4, 1, true, cmx_qmv4f, 256)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv8)
CMX_QMV_ENTRY(8, 1, false, cmx_qmv8, 512)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmv8f)
CMX_QMV_ENTRY(8, 1, true, cmx_qmv8f, 256)
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
  CMX_GRID_WAIT();
  cmx_qmm<true>(A, Bt);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmm_n)
extern "C" __global__ void __launch_bounds__(256)
    cmx_qmm_n(const CMX_GRID_CONST cmx_qmm_args A,
              const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  CMX_GRID_WAIT();
  cmx_qmm<false>(A, Bt);
}
#endif

// ---------------------------------------------------------------------
// Tensor-core QuantizedMatmul for 16-bit x (CMX_Q_MMA: 1 float16, 2
// bfloat16; 0: the kernels are empty). A block computes 64 x 64 outputs
// of split blockIdx.z % S (K chunks [c0, c1) of 32 values) of batch entry
// blockIdx.z / S, with 8 warps of 32 x 16 outputs each (mma.sync
// m16n8k16, float32 accumulators). Per 32-deep step: x's tile copied
// into shared memory (16-byte loads when xvec), W's tile dequantized
// into shared memory (scale * q + bias in float32, rounded to the
// storage type) as [n][k], both rows padded by 8 values so the
// fragment loads of a warp hit 32 different banks. S == 1: the result
// goes to y; else the float32 partial to part[split][entry][m][n], summed
// by cmx_splitk_sum (splitk.cu).
#define CMX_QMMA_BM 64
#define CMX_QMMA_BN 64
#define CMX_QMMA_LD 40
#if CMX_Q_MMA == 2
#define CMX_QMMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define CMX_QMMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#endif

// Values v0 .. v0 + 7 (v0 a multiple of 8) of a packed row of nw words.
CMX_Q_FN void cmx_q_get8(const uint32_t* row, long long v0, long long nw,
                         float (&q)[8]) {
  const long long sb = v0 * CMX_Q_B, sw = sb >> 5;
  const int sh = (int)(sb & 31);
  const uint32_t w0 = __ldg(row + sw);
  const uint32_t w1 = sw + 1 < nw ? __ldg(row + sw + 1) : 0u;
  unsigned long long v = (unsigned long long)w0 | ((unsigned long long)w1 << 32);
  if (sh) {
    const uint32_t w2 = sw + 2 < nw ? __ldg(row + sw + 2) : 0u;
    v = (v >> sh) | ((unsigned long long)w2 << (64 - sh));
  }
#pragma unroll
  for (int i = 0; i < 8; i++)
    q[i] = (float)(uint32_t)((v >> (i * CMX_Q_B)) & CMX_Q_MASK);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmma_t) || \
    defined(CMX_ONLY_cmx_qmma_n)
CMX_Q_FN uint32_t cmx_q_pair(float lo, float hi) {
  return (uint32_t)CMX_Q_FROMF(lo) | ((uint32_t)CMX_Q_FROMF(hi) << 16);
}

template <bool TR>
CMX_Q_FN void cmx_qmma(const cmx_qmm_args& A, int S, int xvec, float* part,
                       const cmx_layout_n<5>& Bt) {
#if CMX_Q_MMA && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800)
  __shared__ __align__(16) uint16_t xs[CMX_QMMA_BM][CMX_QMMA_LD];
  __shared__ __align__(16) uint16_t ws[CMX_QMMA_BN][CMX_QMMA_LD];
  const long long entry = blockIdx.z / S;
  const int split = (int)(blockIdx.z - entry * S);
  long long bo[4];
  cmx_offsets<long long, 0, 5>(Bt, entry, bo);
  const cmx_qt* x = A.x + bo[0];
  const uint32_t* w = A.w + bo[1];
  const long long m0 = (long long)blockIdx.y * CMX_QMMA_BM,
                  n0 = (long long)blockIdx.x * CMX_QMMA_BN;
  const long long nch = A.K / 32, per = (nch + S - 1) / S;
  const long long c0 = split * per, c1 = c0 + per < nch ? c0 + per : nch;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wm = (warp & 1) * 32, wn = (warp >> 1) * 16;
  const int gid = lane >> 2, tig = lane & 3;
  // stored rows of W: N (TR) or K, each of C values in wrow words
  const long long C = TR ? A.K : A.N, nwr = C * CMX_Q_B / 32;
  float acc[2][2][4];
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0;
  for (long long c = c0; c < c1; c++) {
    const long long k0 = c * 32;
    __syncthreads();
    {  // x: thread t copies 8 values of row t / 4 at column (t % 4) * 8
      const int mm = t >> 2, kk = (t & 3) * 8;
      const long long m = m0 + mm;
      uint4 u = make_uint4(0, 0, 0, 0);
      if (m < A.M) {
        const cmx_qt* p = x + m * A.xm + (k0 + kk) * A.xk;
        if (xvec) {
          u = __ldg((const uint4*)p);
        } else {
          uint16_t h[8];
#pragma unroll
          for (int i = 0; i < 8; i++) h[i] = (uint16_t)p[i * A.xk];
          u.x = h[0] | ((uint32_t)h[1] << 16), u.y = h[2] | ((uint32_t)h[3] << 16);
          u.z = h[4] | ((uint32_t)h[5] << 16), u.w = h[6] | ((uint32_t)h[7] << 16);
        }
      }
      *(uint4*)&xs[mm][kk] = u;
    }
    if (TR) {  // W rows n0 + t / 4, values k0 + (t % 4) * 8 .. + 8
      const int nn = t >> 2, kk = (t & 3) * 8;
      const long long n = n0 + nn;
      uint4 u = make_uint4(0, 0, 0, 0);
      if (n < A.N) {
        float q[8];
        cmx_q_get8(w + n * A.wr, k0 + kk, nwr, q);
        const long long grp = (k0 + kk) / A.g;
        const float s = cmx_q_ld(A.sc, A.scode, bo[2] + n * A.sr + grp);
        const float b = cmx_q_ld(A.bi, A.bcode, bo[3] + n * A.br + grp);
        u.x = cmx_q_pair(fmaf(q[0], s, b), fmaf(q[1], s, b));
        u.y = cmx_q_pair(fmaf(q[2], s, b), fmaf(q[3], s, b));
        u.z = cmx_q_pair(fmaf(q[4], s, b), fmaf(q[5], s, b));
        u.w = cmx_q_pair(fmaf(q[6], s, b), fmaf(q[7], s, b));
      }
      *(uint4*)&ws[nn][kk] = u;
    } else {  // stored row k0 + t / 8, columns n0 + (t % 8) * 8 .. + 8
      const int kk = t >> 3, nn = (t & 7) * 8;
      const long long k = k0 + kk, n = n0 + nn;
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (n < A.N) {
        float q[8];
        cmx_q_get8(w + k * A.wr, n, nwr, q);
        const long long grp = n / A.g;
        const float s = cmx_q_ld(A.sc, A.scode, bo[2] + k * A.sr + grp);
        const float b = cmx_q_ld(A.bi, A.bcode, bo[3] + k * A.br + grp);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = fmaf(q[i], s, b);
      }
#pragma unroll
      for (int i = 0; i < 8; i++) ws[nn + i][kk] = CMX_Q_FROMF(v[i]);
    }
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < 32; ks += 16) {
      uint32_t a[2][4], b[2][2];
#pragma unroll
      for (int i = 0; i < 2; i++) {
        const int r = wm + i * 16 + gid;
        a[i][0] = *(const uint32_t*)&xs[r][ks + tig * 2];
        a[i][1] = *(const uint32_t*)&xs[r + 8][ks + tig * 2];
        a[i][2] = *(const uint32_t*)&xs[r][ks + tig * 2 + 8];
        a[i][3] = *(const uint32_t*)&xs[r + 8][ks + tig * 2 + 8];
      }
#pragma unroll
      for (int j = 0; j < 2; j++) {
        const int nr = wn + j * 8 + gid;
        b[j][0] = *(const uint32_t*)&ws[nr][ks + tig * 2];
        b[j][1] = *(const uint32_t*)&ws[nr][ks + tig * 2 + 8];
      }
#pragma unroll
      for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++) {
          asm volatile(CMX_QMMA_OP
                       " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                       : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]),
                         "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
                       : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]),
                         "r"(a[i][3]), "r"(b[j][0]), "r"(b[j][1]));
        }
    }
  }
  const long long base = entry * A.M * A.N;
  float* pp =
      S > 1 ? part + (long long)split * (gridDim.z / S) * A.M * A.N : 0;
#pragma unroll
  for (int i = 0; i < 2; i++)
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const long long m = m0 + wm + i * 16 + gid + (e >> 1) * 8;
        const long long n = n0 + wn + j * 8 + tig * 2 + (e & 1);
        if (m < A.M && n < A.N) {
          if (S > 1)
            pp[base + m * A.N + n] = acc[i][j][e];
          else
            A.y[base + m * A.N + n] = CMX_Q_FROMF(acc[i][j][e]);
        }
      }
#endif
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmma_t)
extern "C" __global__ void __launch_bounds__(256)
    cmx_qmma_t(const CMX_GRID_CONST cmx_qmm_args A, int S, int xvec,
               float* part, const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  CMX_GRID_WAIT();
  cmx_qmma<true>(A, S, xvec, part, Bt);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_qmma_n)
extern "C" __global__ void __launch_bounds__(256)
    cmx_qmma_n(const CMX_GRID_CONST cmx_qmm_args A, int S, int xvec,
               float* part, const CMX_GRID_CONST cmx_layout_n<5> Bt) {
  CMX_GRID_WAIT();
  cmx_qmma<false>(A, S, xvec, part, Bt);
}
#endif
