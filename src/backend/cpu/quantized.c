/* CPU kernels of Quantize, Dequantize and QuantizedMatmul (contracts in
 * primitives/quantized.h). Packed rows are read 8 values at a time: 8
 * values of b bits are exactly b bytes of the row's LSB-first bit stream
 * (rows hold multiples of 32 values). QuantizedMatmul never dequantizes the
 * whole matrix. For few rows of x (decoding), x @ W.T takes each weight
 * row as sum_g scale_g (q_g . x_g) + bias_g sum(x_g), the integer dot
 * products read from the packed words (4 bits: in SIMD lanes, no unpacked
 * copy at all; other widths: one group at a time), and x @ W runs each
 * thread down a column strip of W, unpacking it a row at a time for axpys;
 * for many rows, tiles of W are unpacked and multiplied with BLAS (512 rows
 * at a time). The microscaled modes (uint8 scales, no biases) take the
 * tile path at every size, each row decoded through tables of the code
 * and scale values. */
#include "primitives/quantized.h"

#include <math.h>
#include <stdbool.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/ew_dispatch.h"
#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */
#include "backend/cpu/fast.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

/* ---------------- packing ---------------- */

/* n integers (a multiple of 8) from the packed stream at p into q. */
CMX__SIMD_CLONES
static void unpack(const uint8_t* p, int bits, int64_t n, float* q) {
  if (bits == 4) {
    for (int64_t i = 0; i < n / 8; i++) {
      uint32_t w;
      memcpy(&w, p + 4 * i, 4);
      for (int j = 0; j < 8; j++)
        q[8 * i + j] = (float)(int32_t)((w >> (4 * j)) & 15u);
    }
  } else if (bits == 8) {
    for (int64_t i = 0; i < n; i++) q[i] = (float)p[i];
  } else {
    uint64_t mask = (1u << bits) - 1;
    for (int64_t i = 0; i < n / 8; i++) {
      uint64_t w = 0;
      memcpy(&w, p + i * bits, (size_t)bits); /* little-endian hosts */
      for (int j = 0; j < 8; j++)
        q[8 * i + j] = (float)(int32_t)((w >> (bits * j)) & mask);
    }
  }
}

/* n values (a multiple of g) of a packed row from element 0 at p, with the
 * row's scales and biases from group 0: dst = scale * q + bias. */
CMX__SIMD_CLONES
static void dequant_row(const uint8_t* p, int bits, int g, const float* sc,
                        const float* bi, int64_t n, float* dst) {
  unpack(p, bits, n, dst);
  for (int64_t gi = 0; gi < n / g; gi++) {
    float s = sc[gi], b = bi[gi];
    float* d = dst + gi * g;
    for (int i = 0; i < g; i++) d[i] = d[i] * s + b;
  }
}

/* dequant_row as MLX computes it for a 16-bit float type dt: the product
 * rounded to dt, then the sum (the caller's store rounds it). */
CMX__SIMD_CLONES
static void dequant_row_half(const uint8_t* p, int bits, int g, const float* sc,
                             const float* bi, int64_t n, float* dst,
                             cmx_dtype dt) {
  unpack(p, bits, n, dst);
  for (int64_t gi = 0; gi < n / g; gi++) {
    float s = sc[gi], b = bi[gi];
    float* d = dst + gi * g;
    if (dt == CMX_FLOAT16)
      for (int i = 0; i < g; i++) d[i] = cmx__h2f(cmx__f2h(d[i] * s)) + b;
    else
      for (int i = 0; i < g; i++) d[i] = cmx__bf2f(cmx__f2bf(d[i] * s)) + b;
  }
}

/* Element offset of batch entry t of a (batch dims: all but the last
 * two). */
static int64_t batch_offset(cmx_array a, int64_t t) {
  return cmx__fast_outer_offset(a, a->ndim - 2, t);
}

/* ---------------- Quantize ---------------- */

typedef struct {
  cmx_array w, wq, sc, bi;
  int g, bits;
  int64_t K;
  _Atomic int failed;
} quant_job;

static void quant_chunk(void* ctx, int64_t begin, int64_t end) {
  quant_job* j = ctx;
  int64_t K = j->K, G = K / j->g, ls = CMX__STRIDES(j->w)[j->w->ndim - 1];
  cmx_dtype dt = j->w->dtype;
  size_t es = cmx_dtype_size(dt);
  float* v = cmx__fast_buf((size_t)(K + 2 * G), &j->failed);
  if (!v) return;
  float *scs = v + K, *bis = scs + G;
  const float nb = (float)((1 << j->bits) - 1);
  for (int64_t r = begin; r < end; r++) {
    cmx__fast_load((const char*)cmx__node_ptr(j->w) +
                       cmx__fast_row_offset(j->w, r) * (int64_t)es,
                   dt, ls, K, v);
    uint8_t* out = (uint8_t*)cmx__node_ptr(j->wq) + r * (K * j->bits / 8);
    for (int64_t gi = 0; gi < G; gi++) {
      float* x = v + gi * j->g;
      float lo = x[0], hi = x[0];
      for (int i = 1; i < j->g; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
      }
      float s = (hi - lo) / nb, b = lo;
      s = s > 1e-7f ? s : 1e-7f;
      if (j->bits > 1) { /* one bit keeps (scale, lo) as MLX does */
        bool neg = fabsf(lo) > fabsf(hi);
        s = neg ? s : -s;
        float edge = neg ? lo : hi, q0 = rintf(edge / s);
        b = 0;
        if (q0 != 0) {
          s = edge / q0;
          b = edge;
        }
      }
      scs[gi] = s;
      bis[gi] = b;
      for (int i = 0; i < j->g; i++) {
        float q = rintf((x[i] - b) / s);
        x[i] = q < 0 ? 0 : q > nb ? nb : q;
      }
    }
    for (int64_t t = 0; t < K / 8; t++) {
      uint64_t w = 0;
      for (int i = 0; i < 8; i++) w |= (uint64_t)v[8 * t + i] << (j->bits * i);
      memcpy(out + t * j->bits, &w, (size_t)j->bits);
    }
    cmx__fast_store((char*)cmx__node_ptr(j->sc) + r * G * (int64_t)es, dt, G,
                    scs);
    cmx__fast_store((char*)cmx__node_ptr(j->bi) + r * G * (int64_t)es, dt, G,
                    bis);
  }
  free(v);
}

CMX__KERNEL(cmx__cpu_quantize) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  quant_job j = {.w = in[0],
                 .wq = out[0],
                 .sc = out[1],
                 .bi = out[2],
                 .g = q->group_size,
                 .bits = q->bits};
  if (!cmx__fast_dtype_ok(j.w->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[quantize] unsupported dtype %s",
                            cmx_dtype_name(j.w->dtype));
  for (int i = 0; i < 3; i++) {
    cmx_status st = cmx_kernel_alloc(out[i]);
    if (st != CMX_OK) return st;
  }
  j.K = j.w->dims[j.w->ndim - 1];
  if (j.w->size == 0) return CMX_OK;
  cmx__parallel_for(j.w->size / j.K, 8192 / j.K + 1, quant_chunk, &j);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[quantize] out of memory");
  return CMX_OK;
}

/* ---------------- Dequantize ---------------- */

typedef struct {
  cmx_array w, sc, bi, o;
  int g, bits;
  int64_t K;
  _Atomic int failed;
} deq_job;

/* The G scales (or biases) of row r of a as float32 into dst. */
static void group_row(cmx_array a, int64_t r, int64_t G, float* dst) {
  cmx__fast_load(
      (const char*)cmx__node_ptr(a) +
          cmx__fast_row_offset(a, r) * (int64_t)cmx_dtype_size(a->dtype),
      a->dtype, CMX__STRIDES(a)[a->ndim - 1], G, dst);
}

static void deq_chunk(void* ctx, int64_t begin, int64_t end) {
  deq_job* j = ctx;
  int64_t K = j->K, G = K / j->g, Kb = K * j->bits / 8;
  float* v = malloc((size_t)(K + 2 * G) * sizeof *v);
  uint8_t* packed = malloc((size_t)Kb + 8);
  if (!v || !packed) {
    free(v);
    free(packed);
    atomic_store(&j->failed, 1);
    return;
  }
  float *scs = v + K, *bis = scs + G;
  cmx_dtype ot = j->o->dtype;
  size_t oes = cmx_dtype_size(ot);
  int64_t wl = CMX__STRIDES(j->w)[j->w->ndim - 1];
  for (int64_t r = begin; r < end; r++) {
    const uint32_t* wr =
        (const uint32_t*)cmx__node_ptr(j->w) + cmx__fast_row_offset(j->w, r);
    const uint8_t* pr = (const uint8_t*)wr;
    if (wl != 1) { /* gather a strided row of words */
      for (int64_t t = 0; t < Kb / 4; t++)
        memcpy(packed + 4 * t, wr + t * wl, 4);
      pr = packed;
    }
    group_row(j->sc, r, G, scs);
    group_row(j->bi, r, G, bis);
    if (ot == CMX_FLOAT32)
      dequant_row(pr, j->bits, j->g, scs, bis, K, v);
    else
      dequant_row_half(pr, j->bits, j->g, scs, bis, K, v, ot);
    cmx__fast_store((char*)cmx__node_ptr(j->o) + r * K * (int64_t)oes, ot, K,
                    v);
  }
  free(v);
  free(packed);
}

CMX__KERNEL(cmx__cpu_dequantize) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  deq_job j = {.w = in[0],
               .sc = in[1],
               .bi = in[2],
               .o = out[0],
               .g = q->group_size,
               .bits = q->bits};
  if (!cmx__fast_dtype_ok(j.o->dtype) || !cmx__fast_dtype_ok(j.sc->dtype) ||
      !cmx__fast_dtype_ok(j.bi->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[dequantize] unsupported dtype");
  cmx_status st = cmx_kernel_alloc(j.o);
  if (st != CMX_OK || j.o->size == 0) return st;
  j.K = j.o->dims[j.o->ndim - 1];
  cmx__parallel_for(j.o->size / j.K, 8192 / j.K + 1, deq_chunk, &j);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[dequantize] out of memory");
  return CMX_OK;
}

/* ---------------- QuantizedMatmul ---------------- */

typedef struct {
  const uint8_t* w;    /* packed rows of this batch entry */
  const char *sc, *bi; /* their scales and biases */
  cmx_dtype sdt, bdt;
  int64_t wrow, srow, bis; /* row strides: bytes of w, elements of sc/bi */
  int64_t ss, bs;          /* last-axis strides of sc, bi */
  int g, bits;
  int64_t M, K, N, R, C;   /* x (M, K); stored W (R, C) */
  const float* x;          /* (M, K) */
  float *xsum, *xp;        /* transpose, few rows: see qmm_prepare_x */
  float* out;              /* (M, N) */
  float* tile;             /* BLAS path: unpacked rows */
  int64_t t0;              /* first row of the tile */
  const float *lut, *slut; /* microscaled: code and scale byte values */
  bool transpose;
  int64_t claim;        /* decoding path: rows a claim (see qmm_t_run) */
  _Atomic int64_t next; /* its next unclaimed claim */
  _Atomic int failed;
} qmm_job;

/* Columns [c0, c0 + n) of stored row r, dequantized into dst. */
static void qmm_row(const qmm_job* j, int64_t r, int64_t c0, int64_t n,
                    float* dst, float* tmp) {
  int64_t G = n / j->g, g0 = c0 / j->g;
  if (j->lut) { /* microscaled: code value * scale, codes 4 or 8 bits */
    const uint8_t* p = j->w + r * j->wrow + c0 * j->bits / 8;
    const uint8_t* sp = (const uint8_t*)j->sc + r * j->srow + g0 * j->ss;
    for (int64_t gi = 0; gi < G; gi++) {
      float s = j->slut[sp[gi * j->ss]];
      float* d = dst + gi * j->g;
      const uint8_t* pg = p + gi * j->g * j->bits / 8;
      if (j->bits == 8)
        for (int i = 0; i < j->g; i++) d[i] = j->lut[pg[i]] * s;
      else
        for (int i = 0; i < j->g; i += 2) {
          d[i] = j->lut[pg[i / 2] & 15] * s;
          d[i + 1] = j->lut[pg[i / 2] >> 4] * s;
        }
    }
    return;
  }
  cmx__fast_load(
      j->sc + (r * j->srow + g0 * j->ss) * (int64_t)cmx_dtype_size(j->sdt),
      j->sdt, j->ss, G, tmp);
  cmx__fast_load(
      j->bi + (r * j->bis + g0 * j->bs) * (int64_t)cmx_dtype_size(j->bdt),
      j->bdt, j->bs, G, tmp + G);
  dequant_row(j->w + r * j->wrow + c0 * j->bits / 8, j->bits, j->g, tmp,
              tmp + G, n, dst);
}

/* The decoding path (transpose, few rows of x): out[m, n] = sum_g
 * scale_g (q_g . x_g) + bias_g sum(x_g) for weight rows n, straight from
 * the packed words. x is prepared once per call (qmm_prepare_x): its
 * per-group sums (zero-padded to a multiple of QMV_GPAD groups), and for 4
 * bits each 32-value chunk reordered as its 16 even positions then its 16
 * odd ones, so that the low and the high nibbles of 16 packed bytes
 * (values 2k and 2k + 1) meet 16 contiguous floats each. A pass takes
 * QMV_ROWS weight rows at a time (x's chunk loads shared, independent
 * accumulators): the SIMD kernels (W float lanes: 16 with AVX-512, 8 with
 * AVX2) convert the rows' scales and biases with vector instructions, sum
 * each group's products in W lanes before one multiply by its scale, add
 * the bias terms bias_g sum(x_g) into the same lanes, and reduce the rows'
 * lanes together. Against a sum taken in order, only the order of the
 * float32 additions differs: |error| <= (K + G) u sum_g |scale_g| |q_g| .
 * |x_g| + G u sum_g |bias_g sum(x_g)| to first order (u = 2^-24). */
enum { QMV_ROWS = 4, QMV_GPAD = 16 };

/* G groups rounded up to a multiple of QMV_GPAD. */
static int64_t qmv_gpad(int64_t G) {
  return (G + QMV_GPAD - 1) / QMV_GPAD * QMV_GPAD;
}

/* G values of dtype dt at src (stride st elements) as float32 into dst,
 * then zeros up to qmv_gpad(G). */
static void qmv_groups(const char* src, cmx_dtype dt, int64_t st, int64_t G,
                       float* dst) {
  cmx__fast_load(src, dt, st, G, dst);
  for (int64_t i = G; i < qmv_gpad(G); i++) dst[i] = 0;
}

/* qmv_block_fn: output rows [n0, n0 + nr) (weight rows; nr <= QMV_ROWS)
 * for every row of x; buf holds 2 * QMV_ROWS * qmv_gpad(G) + g floats. */
typedef void (*qmv_block_fn)(const qmm_job* j, int64_t n0, int nr, float* buf);

/* Rows n0 .. n0 + nr - 1: their packed rows into w, their scales and
 * biases (float32, zero-padded) into sc and bi at a stride of Gp. cvt
 * converts G contiguous values (the kernel's vector form), NULL when the
 * groups are strided. */
CMX__KINLINE void qmv_row_setup(
    const qmm_job* j, int64_t n0, int nr, int64_t Gp, float* sc, float* bi,
    const uint8_t** w, void (*cvt)(const char*, cmx_dtype, int64_t, float*)) {
  int64_t G = j->K / j->g;
  int64_t ses = j->sdt == CMX_FLOAT32 ? 4 : 2,
          bes = j->bdt == CMX_FLOAT32 ? 4 : 2;
  for (int r = 0; r < nr; r++) {
    int64_t n = n0 + r;
    const char* sp = j->sc + n * j->srow * ses;
    const char* bp = j->bi + n * j->bis * bes;
    if (cvt && j->ss == 1)
      cvt(sp, j->sdt, G, sc + r * Gp);
    else
      qmv_groups(sp, j->sdt, j->ss, G, sc + r * Gp);
    if (cvt && j->bs == 1)
      cvt(bp, j->bdt, G, bi + r * Gp);
    else
      qmv_groups(bp, j->bdt, j->bs, G, bi + r * Gp);
    w[r] = j->w + n * j->wrow;
  }
}

/* Portable form (and every width but 4 and 8 bits): the same sums,
 * scalar, one group at a time. */
static void qmv_block_c(const qmm_job* j, int64_t n0, int nr, float* buf) {
  int64_t K = j->K, G = K / j->g, Gp = qmv_gpad(G);
  float *sc = buf, *bi = sc + QMV_ROWS * Gp, *tmp = bi + QMV_ROWS * Gp;
  const uint8_t* w[QMV_ROWS];
  qmv_row_setup(j, n0, nr, Gp, sc, bi, w, NULL);
  for (int64_t m = 0; m < j->M; m++) {
    const float* xs = j->xsum + m * Gp;
    for (int r = 0; r < nr; r++) {
      float a = 0, b = 0;
      for (int64_t gi = 0; gi < G; gi++) {
        float d = 0;
        if (j->bits == 4) { /* x reordered: evens, then odds */
          const float* x = j->xp + m * K + gi * j->g;
          for (int64_t c = 0; c < j->g / 32; c++)
            for (int k = 0; k < 16; k++) {
              uint8_t v = w[r][gi * j->g / 2 + 16 * c + k];
              d += (float)(v & 15) * x[32 * c + k] +
                   (float)(v >> 4) * x[32 * c + 16 + k];
            }
        } else {
          unpack(w[r] + gi * j->g * j->bits / 8, j->bits, j->g, tmp);
          const float* x = j->x + m * K + gi * j->g;
          for (int i = 0; i < j->g; i++) d += tmp[i] * x[i];
        }
        a += sc[r * Gp + gi] * d;
        b += bi[r * Gp + gi] * xs[gi];
      }
      j->out[m * j->N + n0 + r] = a + b;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QMV_AVX512 \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))
#define QMV_AVX2 __attribute__((target("avx2,fma,f16c")))

/* G contiguous scales or biases of dtype dt at src as float32 into dst,
 * then zeros up to qmv_gpad(G): 16 lanes at a time, the last ones masked
 * (float16 -> float32 and bfloat16 -> float32 are exact either way). */
QMV_AVX512 CMX__KINLINE void qmv_cvt_512(const char* src, cmx_dtype dt,
                                         int64_t G, float* dst) {
  for (int64_t i = 0; i < qmv_gpad(G); i += 16) {
    __mmask16 k = G - i >= 16 ? 0xffff : G > i ? (1u << (G - i)) - 1 : 0;
    __m512 v;
    if (dt == CMX_FLOAT32) {
      v = _mm512_maskz_loadu_ps(k, (const float*)src + i);
    } else {
      __m256i h = _mm256_maskz_loadu_epi16(k, (const uint16_t*)src + i);
      v = dt == CMX_FLOAT16 ? _mm512_cvtph_ps(h)
                            : _mm512_castsi512_ps(_mm512_slli_epi32(
                                  _mm512_cvtepu16_epi32(h), 16));
    }
    _mm512_storeu_ps(dst + i, v);
  }
}

/* The same with AVX2: 8 lanes at a time, the rest one by one. */
QMV_AVX2 CMX__KINLINE void qmv_cvt_256(const char* src, cmx_dtype dt, int64_t G,
                                       float* dst) {
  const uint16_t* h = (const uint16_t*)src;
  int64_t i = 0;
  for (; i + 8 <= G; i += 8) {
    __m256 v;
    if (dt == CMX_FLOAT32) {
      v = _mm256_loadu_ps((const float*)src + i);
    } else {
      __m128i x = _mm_loadu_si128((const __m128i*)(h + i));
      v = dt == CMX_FLOAT16 ? _mm256_cvtph_ps(x)
                            : _mm256_castsi256_ps(_mm256_slli_epi32(
                                  _mm256_cvtepu16_epi32(x), 16));
    }
    _mm256_storeu_ps(dst + i, v);
  }
  for (; i < G; i++)
    dst[i] = dt == CMX_FLOAT32   ? ((const float*)src)[i]
             : dt == CMX_FLOAT16 ? cmx__h2f(h[i])
                                 : cmx__bf2f(h[i]);
  for (; i < qmv_gpad(G); i++) dst[i] = 0;
}

/* Asks for the packed rows about QMV_AHEAD bytes past rows [n0, n0 + nr)
 * (and their scales and biases) to be brought into the cache: the
 * hardware prefetcher alone left the kernels waiting on memory for much
 * of a matrix streamed from DRAM. A prefetch never faults, past the
 * matrix's end included. */
enum { QMV_AHEAD = 6144 };
CMX__KINLINE void qmv_prefetch(const qmm_job* j, int64_t n0, int nr) {
  int64_t ahead = QMV_AHEAD / j->wrow + 1;
  if (ahead < nr) ahead = nr;
  const char* p = (const char*)j->w + (n0 + ahead) * j->wrow;
  for (int64_t b = 0; b < nr * j->wrow; b += 64)
    _mm_prefetch(p + b, _MM_HINT_T0);
  int64_t es = j->sdt == CMX_FLOAT32 ? 4 : 2,
          eb = j->bdt == CMX_FLOAT32 ? 4 : 2;
  for (int64_t b = 0; b < nr * j->srow * es; b += 64)
    _mm_prefetch(j->sc + (n0 + ahead) * j->srow * es + b, _MM_HINT_T0);
  for (int64_t b = 0; b < nr * j->bis * eb; b += 64)
    _mm_prefetch(j->bi + (n0 + ahead) * j->bis * eb + b, _MM_HINT_T0);
}

/* The SIMD block kernels, one body for both vector widths: W float lanes
 * of type VF (VI: the integers), intrinsics P##_*, LDB(p) loading W bytes,
 * LO4(a) the float value of the low nibbles in integer lanes a, CVT the
 * width's qmv_cvt_* (contiguous scales or biases to float32), RED4(acc,
 * nr, out) the sums of nr vectors' lanes. A 32-value chunk is 16 / W
 * steps of W lanes twice (the low and the high nibbles of W bytes, or two
 * runs of W bytes). Defines fn##x4, fn##x1 (QMV_ROWS rows, one; 4 bits)
 * and fn##x4_8, fn##x1_8 (8 bits). */
#define QMV_BLOCK_SIMD(fn, ATTR, W, VF, VI, P, LDB, LO4, CVT, RED4)           \
  ATTR CMX__KINLINE void fn(const qmm_job* j, int64_t n0, int nr, float* buf, \
                            int bits) {                                       \
    int64_t K = j->K, G = K / j->g, Gp = qmv_gpad(G), cpg = j->g / 32;        \
    float *sc = buf, *bi = sc + QMV_ROWS * Gp;                                \
    const uint8_t* w[QMV_ROWS];                                               \
    qmv_row_setup(j, n0, nr, Gp, sc, bi, w, CVT);                             \
    qmv_prefetch(j, n0, nr);                                                  \
    const VI m15 = P##_set1_epi32(15);                                        \
    const VF lut = P##_loadu_ps(qmv_lut);                                     \
    (void)m15, (void)lut;                                                     \
    for (int64_t m = 0; m < j->M; m++) {                                      \
      const float* x = (bits == 4 ? j->xp : j->x) + m * K;                    \
      const float* xs = j->xsum + m * Gp;                                     \
      VF acc[QMV_ROWS];                                                       \
      for (int r = 0; r < nr; r++) acc[r] = P##_setzero_ps();                 \
      for (int64_t gi = 0; gi < G; gi++) {                                    \
        VF t[QMV_ROWS];                                                       \
        for (int r = 0; r < nr; r++) t[r] = P##_setzero_ps();                 \
        for (int64_t c = gi * cpg; c < (gi + 1) * cpg; c++) {                 \
          for (int h = 0; h < 16 / (W); h++) {                                \
            VF xa = P##_loadu_ps(x + 32 * c + h * (W)),                       \
               xb = P##_loadu_ps(x + 32 * c + 16 + h * (W));                  \
            for (int r = 0; r < nr; r++) {                                    \
              VF fa, fb;                                                      \
              if (bits == 4) {                                                \
                VI a = P##_cvtepu8_epi32(LDB(w[r] + 16 * c + h * (W)));       \
                fa = LO4(a);                                                  \
                fb = P##_cvtepi32_ps(P##_srli_epi32(a, 4));                   \
              } else {                                                        \
                fa = P##_cvtepi32_ps(                                         \
                    P##_cvtepu8_epi32(LDB(w[r] + 32 * c + h * (W))));         \
                fb = P##_cvtepi32_ps(                                         \
                    P##_cvtepu8_epi32(LDB(w[r] + 32 * c + 16 + h * (W))));    \
              }                                                               \
              t[r] = P##_fmadd_ps(fa, xa, t[r]);                              \
              t[r] = P##_fmadd_ps(fb, xb, t[r]);                              \
            }                                                                 \
          }                                                                   \
        }                                                                     \
        for (int r = 0; r < nr; r++)                                          \
          acc[r] = P##_fmadd_ps(t[r], P##_set1_ps(sc[r * Gp + gi]), acc[r]);  \
      }                                                                       \
      for (int64_t gb = 0; gb < Gp; gb += (W)) {                              \
        VF xsv = P##_loadu_ps(xs + gb);                                       \
        for (int r = 0; r < nr; r++)                                          \
          acc[r] = P##_fmadd_ps(P##_loadu_ps(bi + r * Gp + gb), xsv, acc[r]); \
      }                                                                       \
      RED4(acc, nr, j->out + m * j->N + n0);                                  \
    }                                                                         \
  }                                                                           \
  QMV_BLOCK_VARIANT(fn, ATTR, x4, QMV_ROWS, 4)                                \
  QMV_BLOCK_VARIANT(fn, ATTR, x1, 1, 4)                                       \
  QMV_BLOCK_VARIANT(fn, ATTR, x4_8, QMV_ROWS, 8)                              \
  QMV_BLOCK_VARIANT(fn, ATTR, x1_8, 1, 8)

/* fn for NR rows of BITS bits, both constants (their loops unrolled,
 * their branches gone): fn##SUF. */
#define QMV_BLOCK_VARIANT(fn, ATTR, SUF, NR, BITS)                             \
  ATTR static void fn##SUF(const qmm_job* j, int64_t n0, int nr, float* buf) { \
    (void)nr;                                                                  \
    fn(j, n0, NR, buf, BITS);                                                  \
  }

/* The floats 0 .. 15 (a lookup table of nibbles' values). */
static const float qmv_lut[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                  8, 9, 10, 11, 12, 13, 14, 15};

/* A 4-bit weight's float value from integer lanes holding its byte (the
 * low nibble): AVX-512 looks it up in the 16-float table (a permute takes
 * the index's low 4 bits: no mask, no conversion); AVX2, whose permutes
 * take 8 entries, masks and converts. */
#define QMV_LO4_512(a) _mm512_permutexvar_ps(a, lut)
#define QMV_LO4_256(a) _mm256_cvtepi32_ps(_mm256_and_si256(a, m15))

#define QMV_LD16(p) _mm_loadu_si128((const __m128i*)(p))
#define QMV_LD8(p) _mm_loadl_epi64((const __m128i*)(p))

/* The lane sums of nr AVX2 vectors into out[0 .. nr). Four at once: the
 * horizontal adds pair them up, so each lane sum costs about a quarter of
 * a lone reduction. */
QMV_AVX2 CMX__KINLINE void qmv_red4_256(const __m256* a, int nr, float* out) {
  if (nr == QMV_ROWS) {
    __m256 ab = _mm256_hadd_ps(a[0], a[1]), cd = _mm256_hadd_ps(a[2], a[3]);
    __m256 abcd = _mm256_hadd_ps(ab, cd); /* a01 a23 .. per 128-bit half */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(abcd),
                          _mm256_extractf128_ps(abcd, 1));
    _mm_storeu_ps(out, s);
    return;
  }
  for (int r = 0; r < nr; r++) {
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(a[r]),
                          _mm256_extractf128_ps(a[r], 1));
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_movehdup_ps(v));
    out[r] = _mm_cvtss_f32(v);
  }
}

/* The same for AVX-512 vectors: their halves added first. */
QMV_AVX512 CMX__KINLINE void qmv_red4_512(const __m512* a, int nr, float* out) {
  __m256 h[QMV_ROWS];
  for (int r = 0; r < nr; r++)
    h[r] = _mm256_add_ps(_mm512_castps512_ps256(a[r]),
                         _mm512_extractf32x8_ps(a[r], 1));
  qmv_red4_256(h, nr, out);
}

QMV_BLOCK_SIMD(qmv_block_512, QMV_AVX512, 16, __m512, __m512i, _mm512, QMV_LD16,
               QMV_LO4_512, qmv_cvt_512, qmv_red4_512)
QMV_BLOCK_SIMD(qmv_block_256, QMV_AVX2, 8, __m256, __m256i, _mm256, QMV_LD8,
               QMV_LO4_256, qmv_cvt_256, qmv_red4_256)

/* F16C from CPUID (leaf 1, ECX): clang 14's __builtin_cpu_supports does not
 * know "f16c". */
static bool cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

/* The block kernels for QMV_ROWS rows and for one, for this CPU and
 * bits. */
static void qmv_pick(int bits, qmv_block_fn* four, qmv_block_fn* one) {
  *four = *one = qmv_block_c;
  if (bits != 4 && bits != 8) return;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    *four = bits == 4 ? qmv_block_512x4 : qmv_block_512x4_8;
    *one = bits == 4 ? qmv_block_512x1 : qmv_block_512x1_8;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             cpu_has_f16c()) {
    *four = bits == 4 ? qmv_block_256x4 : qmv_block_256x4_8;
    *one = bits == 4 ? qmv_block_256x1 : qmv_block_256x1_8;
  }
#endif
}

static void qmv_span(const qmm_job* j, int64_t begin, int64_t end, float* buf) {
  qmv_block_fn four, one;
  qmv_pick(j->bits, &four, &one);
  int64_t n = begin;
  for (; n + QMV_ROWS <= end; n += QMV_ROWS) four(j, n, QMV_ROWS, buf);
  for (; n < end; n++) one(j, n, 1, buf);
}

/* transpose, few rows of x: each pool thread claims QMV row spans of
 * j->claim rows (from an atomic counter) until none is left. Claims, not
 * one fixed half a thread: a worker that wakes late (a loaded machine, a
 * sleeping thread) still takes its share of what is left, and the caller
 * never waits for rows handed to a thread that has not started. */
static void qmm_t_chunk(void* ctx, int64_t begin, int64_t end) {
  (void)begin, (void)end;
  qmm_job* j = ctx;
  int64_t Gp = qmv_gpad(j->K / j->g),
          nclaims = (j->N + j->claim - 1) / j->claim;
  float* buf = cmx__fast_buf((size_t)(2 * QMV_ROWS * Gp + j->g), &j->failed);
  if (!buf) return;
  for (;;) {
    int64_t c = atomic_fetch_add(&j->next, 1);
    if (c >= nclaims) break;
    int64_t n0 = c * j->claim, n1 = n0 + j->claim < j->N ? n0 + j->claim : j->N;
    qmv_span(j, n0, n1, buf);
  }
  free(buf);
}

/* The decoding path's products over the pool: a thread per ~64K weights
 * streamed (smaller products run on the calling thread alone: waking a
 * worker costs more), claims of ~16 KB of packed rows (a multiple of
 * QMV_ROWS rows). */
static void qmm_t_run(qmm_job* j) {
  int64_t per = (QMV_ROWS << 14) / j->K + QMV_ROWS;
  int64_t threads = j->N / per;
  int64_t claim = (16384 / (j->wrow > 0 ? j->wrow : 1)) / QMV_ROWS * QMV_ROWS;
  j->claim = claim < QMV_ROWS ? QMV_ROWS : claim;
  atomic_store(&j->next, 0);
  cmx__parallel_for(threads < 1 ? 1 : threads, 1, qmm_t_chunk, j);
}

/* The per-group sums of x's rows into j->xsum (qmv_gpad(G) a row, zero
 * past G) and, for 4 bits, x's rows with each 32-value chunk reordered
 * (evens, then odds) into j->xp; false when out of memory. */
static bool qmm_prepare_x(qmm_job* j) {
  int64_t K = j->K, G = K / j->g, Gp = qmv_gpad(G);
  j->xsum = calloc((size_t)(j->M * Gp), sizeof(float));
  j->xp = j->bits == 4 ? malloc((size_t)(j->M * K) * sizeof(float)) : NULL;
  if (!j->xsum || (j->bits == 4 && !j->xp)) return false;
  for (int64_t m = 0; m < j->M; m++) {
    const float* x = j->x + m * K;
    for (int64_t gi = 0; gi < G; gi++) {
      float t = 0;
      for (int i = 0; i < j->g; i++) t += x[gi * j->g + i];
      j->xsum[m * Gp + gi] = t;
    }
    if (j->xp)
      for (int64_t c = 0; c < K / 32; c++)
        for (int k = 0; k < 16; k++) {
          j->xp[m * K + 32 * c + k] = x[32 * c + 2 * k];
          j->xp[m * K + 32 * c + 16 + k] = x[32 * c + 2 * k + 1];
        }
  }
  return true;
}

/* no transpose, few rows of x: output columns [begin, end) in units of
 * groups; each thread runs down all K weight rows of its strip. */
static void qmm_n_chunk(void* ctx, int64_t begin, int64_t end) {
  qmm_job* j = ctx;
  int64_t c0 = begin * j->g, n = (end - begin) * j->g, M = j->M;
  float* buf =
      cmx__fast_buf((size_t)(n + 2 * (end - begin) + M * n), &j->failed);
  if (!buf) return;
  float *tmp = buf + n, *acc = tmp + 2 * (end - begin);
  memset(acc, 0, (size_t)(M * n) * sizeof *acc);
  for (int64_t k = 0; k < j->K; k++) {
    qmm_row(j, k, c0, n, buf, tmp);
    for (int64_t m = 0; m < M; m++)
      cmx__fast_axpy(j->x[m * j->K + k], buf, acc + m * n, n);
  }
  for (int64_t m = 0; m < M; m++)
    memcpy(j->out + m * j->N + c0, acc + m * n, (size_t)n * sizeof *acc);
  free(buf);
}

/* BLAS path: stored rows [t0 + begin, t0 + end) into the tile. */
static void qmm_tile_chunk(void* ctx, int64_t begin, int64_t end) {
  qmm_job* j = ctx;
  float* tmp = cmx__fast_buf((size_t)(2 * (j->C / j->g)), &j->failed);
  if (!tmp) return;
  for (int64_t r = begin; r < end; r++)
    qmm_row(j, j->t0 + r, 0, j->C, j->tile + r * j->C, tmp);
  free(tmp);
}

enum { QMM_BLAS_MIN_M = 8, QMM_TILE = 512 };

static bool qmm_blas(qmm_job* j) {
  int64_t T = QMM_TILE < j->R ? QMM_TILE : j->R;
  j->tile = malloc((size_t)(T * j->C) * sizeof(float));
  if (!j->tile) return false;
  for (j->t0 = 0; j->t0 < j->R; j->t0 += T) {
    int64_t nt = j->R - j->t0 < T ? j->R - j->t0 : T;
    cmx__parallel_for(nt, 8, qmm_tile_chunk, j);
    if (atomic_load(&j->failed)) break;
    if (j->transpose) /* out[:, t0:t0+nt] = x @ tile.T */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)j->M, (int)nt,
                  (int)j->K, 1.0f, j->x, (int)j->K, j->tile, (int)j->C, 0.0f,
                  j->out + j->t0, (int)j->N);
    else /* out += x[:, t0:t0+nt] @ tile */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)j->M,
                  (int)j->N, (int)nt, 1.0f, j->x + j->t0, (int)j->K, j->tile,
                  (int)j->C, j->t0 ? 1.0f : 0.0f, j->out, (int)j->N);
  }
  free(j->tile);
  return true;
}

/* ---------------- microscaled modes ---------------- */

/* The value of E4M3 code c (bias 7, 0x7F / 0xFF NaN). */
static float e4m3(int c) {
  int e = (c >> 3) & 15, m = c & 7;
  float v = e == 15 && m == 7 ? NAN
            : e               ? ldexpf((float)(8 + m), e - 10)
                              : ldexpf((float)m, -9);
  return c & 128 ? -v : v;
}

/* The code values (E2M1 or E4M3) and scale byte values (E8M0 or E4M3) of
 * microscaled mode m. */
static void fp_tables(int m, float* lut, float* slut) {
  static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 256; c++) {
    lut[c] = m == CMX__QMODE_MXFP8 ? e4m3(c)
             : c < 16              ? (c & 8 ? -e2m1[c & 7] : e2m1[c & 7])
                                   : 0;
    slut[c] = m == CMX__QMODE_NVFP4 ? e4m3(c)
              : c == 255            ? NAN
                                    : ldexpf(1.0f, c - 127);
  }
}

/* The product of QuantizedMatmul p's inputs (nin), an output of dtype dt
 * and shape (batch..., M, N) (ndim nd, size elements): into o's storage
 * when fout is NULL, else as float32 into fout (size floats, row-major).
 * False when out of memory (nothing reported). */
static bool qmm_compute(const cmx__quant_params* q, const cmx_array* in,
                        int nin, cmx_dtype dt, const int64_t* dims, int nd,
                        int64_t size, void* optr, float* fout) {
  bool fp = q->mode != CMX__QMODE_AFFINE;
  cmx_array x = in[0], w = in[1], sc = in[2], bi = fp ? NULL : in[3];
  (void)nin;
  const int64_t *xs = CMX__STRIDES(x), *ws = CMX__STRIDES(w),
                *sst = CMX__STRIDES(sc), *bst = CMX__STRIDES(fp ? sc : bi);
  qmm_job j = {.g = q->group_size, .bits = q->bits, .transpose = q->transpose};
  float luts[2][256];
  if (fp) {
    fp_tables(q->mode, luts[0], luts[1]);
    j.lut = luts[0];
    j.slut = luts[1];
  }
  j.M = dims[nd - 2];
  j.N = dims[nd - 1];
  j.K = x->dims[nd - 1];
  j.R = w->dims[nd - 2];
  j.C = w->dims[nd - 1] * 32 / q->bits;
  j.sdt = sc->dtype;
  j.bdt = fp ? sc->dtype : bi->dtype;
  j.wrow = ws[nd - 2] * 4;
  j.srow = sst[nd - 2];
  j.bis = bst[nd - 2];
  j.ss = sst[nd - 1];
  j.bs = bst[nd - 1];
  int64_t nbatch = size / (j.M * j.N);
  bool direct = fout || dt == CMX_FLOAT32; /* float32 results in place */
  float* xb = malloc((size_t)(j.M * j.K) * sizeof *xb);
  float* ob = direct ? NULL : malloc((size_t)(j.M * j.N) * sizeof *ob);
  bool ok = xb && (direct || ob);
  size_t xes = cmx_dtype_size(x->dtype), oes = cmx_dtype_size(dt);
  for (int64_t t = 0; ok && t < nbatch; t++) {
    const char* xp =
        (const char*)cmx__node_ptr(x) + batch_offset(x, t) * (int64_t)xes;
    for (int64_t m = 0; m < j.M; m++)
      cmx__fast_load(xp + m * xs[nd - 2] * (int64_t)xes, x->dtype, xs[nd - 1],
                     j.K, xb + m * j.K);
    j.x = xb;
    j.out = ob ? ob : (fout ? fout : (float*)optr) + t * j.M * j.N;
    j.w = (const uint8_t*)((const uint32_t*)cmx__node_ptr(w) +
                           batch_offset(w, t));
    j.sc = (const char*)cmx__node_ptr(sc) +
           batch_offset(sc, t) * (int64_t)cmx_dtype_size(sc->dtype);
    j.bi = fp ? NULL
              : (const char*)cmx__node_ptr(bi) +
                    batch_offset(bi, t) * (int64_t)cmx_dtype_size(bi->dtype);
    if (j.M >= QMM_BLAS_MIN_M || fp) /* microscaled: tiles only */
      ok = qmm_blas(&j);
    else if (j.transpose && (ok = qmm_prepare_x(&j)))
      qmm_t_run(&j);
    else if (j.transpose)
      ok = false;
    else
      cmx__parallel_for(j.N / j.g, 4, qmm_n_chunk, &j);
    free(j.xsum);
    free(j.xp);
    j.xsum = j.xp = NULL;
    ok = ok && !atomic_load(&j.failed);
    if (ok && ob)
      cmx__fast_store((char*)optr + t * j.M * j.N * (int64_t)oes, dt, j.M * j.N,
                      ob);
  }
  free(xb);
  free(ob);
  return ok;
}

/* The dtype checks of both kernels; CMX_OK or the kernel error naming
 * op. */
static cmx_status qmm_dtypes(const char* op, const cmx__quant_params* q,
                             const cmx_array* in, int nin, cmx_dtype dt) {
  bool fp = q->mode != CMX__QMODE_AFFINE; /* no biases, uint8 scales */
  cmx_array sc = in[2], bi = fp ? NULL : in[3];
  if (!cmx__fast_dtype_ok(dt) ||
      (fp ? sc->dtype != CMX_UINT8 || nin != 3
          : nin != 4 || !cmx__fast_dtype_ok(sc->dtype) ||
                !cmx__fast_dtype_ok(bi->dtype)))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(dt));
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_quantized_matmul) {
  (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_status st = qmm_dtypes("quantized_matmul", q, in, nin, o->dtype);
  if (st == CMX_OK) st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  if (!qmm_compute(q, in, nin, o->dtype, o->dims, o->ndim, o->size,
                   cmx__node_ptr(o), NULL))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[quantized_matmul] out of memory");
  return CMX_OK;
}

/* QuantizedMatmulSwiGLU: y (batch..., M, 2n) as QuantizedMatmul computes
 * it (the same code, so the same float32 sums), each row rounded to the
 * output dtype as QuantizedMatmul's output is, then sigmoid, multiply,
 * multiply through the CPU's elementwise rows of those ops (the ones the
 * eager ops run), so the result is the unfused one bit for bit. */
CMX__KERNEL(cmx__cpu_quantized_matmul_swiglu) {
  (void)nout;
  const char* op = "quantized_matmul_swiglu";
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_dtype dt = o->dtype;
  cmx_status st = qmm_dtypes(op, q, in, nin, dt);
  if (st == CMX_OK && (q->mode != CMX__QMODE_AFFINE || !q->transpose))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the kernel takes the affine mode, "
                            "transposed weights",
                            op);
  cmx__row_fn sig = cmx__cpu_ew_row(CMX__P_Sigmoid, dt, false),
              mul = cmx__cpu_ew_row(CMX__P_Multiply, dt, false);
  if (st == CMX_OK && (!sig || !mul))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(dt));
  if (st == CMX_OK) st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  int nd = o->ndim;
  int64_t dims[CMX_MAX_NDIM];
  memcpy(dims, o->dims, (size_t)nd * sizeof *dims);
  int64_t n = dims[nd - 1], rows = o->size / n;
  dims[nd - 1] = 2 * n;
  size_t es = cmx_dtype_size(dt);
  float* y = malloc((size_t)(2 * o->size) * sizeof *y);
  char* tmp = malloc((size_t)(3 * n) * es); /* a, b, then s and t in place */
  bool ok =
      y && tmp && qmm_compute(q, in, nin, dt, dims, nd, 2 * o->size, NULL, y);
  for (int64_t r = 0; ok && r < rows; r++) {
    char *a = tmp, *b = tmp + n * (int64_t)es, *s = b + n * (int64_t)es;
    char* dst = (char*)cmx__node_ptr(o) + r * n * (int64_t)es;
    if (dt == CMX_FLOAT32) { /* y's halves are the rows' operands */
      a = (char*)(y + 2 * n * r);
      b = (char*)(y + 2 * n * r + n);
    } else {
      cmx__fast_store(a, dt, n, y + 2 * n * r);
      cmx__fast_store(b, dt, n, y + 2 * n * r + n);
    }
    const int64_t unit[3] = {1, 1, 1};            /* strides in elements */
    sig((char* const[]){s, a}, unit, n, NULL);    /* s = sigmoid(a) */
    mul((char* const[]){s, a, s}, unit, n, NULL); /* t = a * s */
    mul((char* const[]){dst, s, b}, unit, n, NULL);
  }
  free(y);
  free(tmp);
  if (!ok) return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  return CMX_OK;
}

/* AddRMSNormQuantizedMatmul: AddRMSNorm's CPU kernel into h and a scratch
 * y, then the consumer's (QuantizedMatmul's or QuantizedMatmulSwiGLU's)
 * on y: the same functions the two ops run, so the same bits. */
CMX__KERNEL(cmx__cpu_add_rms_norm_qmm) {
  return cmx__norm_qmm_two_step(p, in, nin, out, nout);
}
