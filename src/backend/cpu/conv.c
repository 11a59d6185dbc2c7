/* CPU kernel of the Convolution primitive: im2col + OpenBLAS gemm.
 *
 * The output (N, M_1..M_d, O) is a matrix of R = N * prod(M) rows and O
 * columns. Row r of the unfolded input ("im2col") holds, for each group g,
 * the input values under every kernel tap: [g][tap][channel of g], Kc =
 * taps * C / groups values per group, in the compute type (float32 for the
 * 16-bit floats). Then for each group one gemm
 *     out[:, g*Og:(g+1)*Og] = A[:, g*Kc:(g+1)*Kc] @ W_g^T
 * with W the weight as an (O, Kc) row-major matrix (read in place when it
 * is contiguous, else packed once). Dilation, padding, flip and input
 * dilation only change which input element (or zero) a tap reads, so every
 * convolution, transposed ones included, is this one loop.
 *
 * The unfolding works a line at a time (rows that differ only in the last
 * spatial position) and a tap at a time, so index arithmetic and padding
 * bounds are solved per tap rather than per element; when a row's taps
 * along the last dim are one contiguous input span (one group, unit
 * dilations, channels-last input) each row is a single copy.
 *
 * Memory and threads: when a tile of rows is a product small enough for
 * OpenBLAS to run single-threaded (thin layers such as a CNN's first),
 * each pool task unfolds and multiplies its own cache-sized tiles (see
 * run_tiles). Otherwise rows are unfolded in chunks of about CHUNK_BYTES
 * so the scratch stays bounded (and warm in cache for the gemm that
 * follows); each chunk is unfolded in parallel over cmx's pool, then
 * multiplied by one BLAS call per group that OpenBLAS threads itself (the
 * two never nest). A 1x1 kernel with stride 1 and no padding or dilation
 * skips the unfolding: the contiguous input already is the matrix.
 * Depthwise convolutions (one channel per group) skip BLAS: see
 * run_depthwise.
 */
#include "primitives/conv.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* Scratch per chunk of unfolded rows. */
#define CHUNK_BYTES ((int64_t)2 << 20)
/* Values a pool task should unfold to outweigh the hand-off. */
#define FILL_GRAIN 16384

enum { T_F32, T_F64, T_F16, T_BF16 };

typedef struct {
  int kind;    /* T_* of the storage dtype */
  int64_t esz; /* storage element size */
  int64_t csz; /* compute element size */
  int nsp;     /* spatial dims */
  int64_t C, O, G, Cg, Og;
  int64_t in[CMX__CONV_MAX_SPATIAL], out[CMX__CONV_MAX_SPATIAL];
  int64_t k[CMX__CONV_MAX_SPATIAL];
  int64_t stride[CMX__CONV_MAX_SPATIAL], lo[CMX__CONV_MAX_SPATIAL];
  int64_t kd[CMX__CONV_MAX_SPATIAL], id[CMX__CONV_MAX_SPATIAL];
  bool flip;
  int64_t taps, Kc, rowlen; /* rowlen = G * Kc */
  int64_t out_sp;           /* prod(M) */
  const char* x;            /* input element 0 */
  int64_t xs_n, xs[CMX__CONV_MAX_SPATIAL], xs_c;
  bool span_copy;    /* a row's last-dim taps are one contiguous input
                        span (one group, unit steps, channels-last) */
  const int64_t* ab; /* per last-dim tap k: rows [ab[2k], ab[2k+1]) of a
                        line read inside the input (unclamped) */
  char* a;           /* unfolded rows of the current chunk */
  int64_t row0;      /* first row of the current chunk */
} job;

/* Loads n elements (source stride st, in elements) into the compute type. */
static inline void load(int kind, char* dst, const char* src, int64_t n,
                        int64_t st) {
  switch (kind) {
    case T_F32: {
      float* d = (float*)dst;
      const float* s = (const float*)src;
      if (st == 1)
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
      else
        for (int64_t i = 0; i < n; i++) d[i] = s[i * st];
      return;
    }
    case T_F64: {
      double* d = (double*)dst;
      const double* s = (const double*)src;
      if (st == 1)
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
      else
        for (int64_t i = 0; i < n; i++) d[i] = s[i * st];
      return;
    }
    case T_F16: {
      float* d = (float*)dst;
      const uint16_t* s = (const uint16_t*)src;
      for (int64_t i = 0; i < n; i++) d[i] = cmx__h2f(s[i * st]);
      return;
    }
    default: {
      float* d = (float*)dst;
      const uint16_t* s = (const uint16_t*)src;
      for (int64_t i = 0; i < n; i++) d[i] = cmx__bf2f(s[i * st]);
      return;
    }
  }
}

/* The input position that output position o reads through tap k along
 * spatial dim d, or false when it falls on padding or a dilation hole. */
static inline bool src_index(const job* j, int d, int64_t o, int64_t k,
                             int64_t* i) {
  int64_t kk = j->flip ? j->k[d] - 1 - k : k;
  int64_t v = o * j->stride[d] + kk * j->kd[d] - j->lo[d];
  if (v < 0) return false;
  if (j->id[d] != 1) {
    if (v % j->id[d] != 0) return false;
    v /= j->id[d];
  }
  if (v >= j->in[d]) return false;
  *i = v;
  return true;
}

/* floor(a / b) and ceil(a / b) for b > 0. */
static inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

/* Whether a row's last-dim taps are one contiguous input span: one group,
 * unit dilations, no flip, channels contiguous and adjacent positions
 * adjacent. */
static bool span_applies(const job* j) {
  const int L = j->nsp - 1;
  return j->G == 1 && !j->flip && j->kd[L] == 1 && j->id[L] == 1 &&
         (j->xs_c == 1 || j->C == 1) && (j->xs[L] == j->C || j->k[L] == 1);
}

/* Copies `rows` runs of cg elements: run r from src + r * sstep storage
 * elements (channel stride sc) to dst + r * dstep compute elements. */
static void copy_block(const job* j, char* dst, int64_t dstep, const char* src,
                       int64_t sstep, int64_t rows, int64_t cg, int64_t sc) {
  if (cg == 1 && j->kind == T_F32) { /* one column: a strided gather */
    float* d = (float*)dst;
    const float* s = (const float*)src;
    for (int64_t r = 0; r < rows; r++) d[r * dstep] = s[r * sstep];
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    load(j->kind, dst + r * dstep * j->csz, src + r * sstep * j->esz, cg, sc);
}

/* Zeroes `rows` runs of cg compute elements, run r at dst + r * dstep. */
static void zero_block(const job* j, char* dst, int64_t dstep, int64_t rows,
                       int64_t cg) {
  if (rows <= 0) return;
  if (cg * j->csz == 4) {
    float* d = (float*)dst;
    for (int64_t r = 0; r < rows; r++) d[r * dstep] = 0;
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    memset(dst + r * dstep * j->csz, 0, (size_t)(cg * j->csz));
}

/* One outer tap (all spatial dims but the last fixed) of rows o0 .. o1-1
 * of a line, when a row's last-dim taps are one contiguous input span:
 * rows whose span lies inside the input are plain copies (a tight loop for
 * float32), border rows copy the part inside and zero the rest. blk: the
 * outer tap's first column in the segment's first row; off: the input
 * offset of the line at last-dim position 0; valid: false when the outer
 * tap falls on padding (all zeros). */
static void fill_span(const job* j, char* blk, int64_t off, bool valid,
                      int64_t o0, int64_t o1) {
  const int L = j->nsp - 1;
  const int64_t KL = j->k[L], Cg = j->Cg, w = KL * Cg, rl = j->rowlen;
  const int64_t sL = j->stride[L], xsL = j->xs[L], lo = j->lo[L];
  const int64_t inL = j->in[L], csz = j->csz;
  /* Interior rows: lo - p * sL <= 0 and inL + lo - p * sL >= KL. */
  int64_t pa = o1, pb = o1;
  if (valid) {
    pa = ceil_div(lo, sL);
    pb = floor_div(inL + lo - KL, sL) + 1;
    pa = pa < o0 ? o0 : pa > o1 ? o1 : pa;
    pb = pb < pa ? pa : pb > o1 ? o1 : pb;
  }
  if (pb > pa && j->kind == T_F32) {
    float* d = (float*)(blk + (pa - o0) * rl * csz);
    const float* sp = (const float*)j->x + off + (pa * sL - lo) * xsL;
    for (int64_t p = pa; p < pb; p++, d += rl, sp += sL * xsL)
      for (int64_t e = 0; e < w; e++) d[e] = sp[e];
  } else {
    for (int64_t p = pa; p < pb; p++)
      load(j->kind, blk + (p - o0) * rl * csz,
           j->x + (off + (p * sL - lo) * xsL) * j->esz, w, 1);
  }
  for (int64_t p = o0; p < o1; p++) {
    if (p == pa && pb > pa) p = pb; /* interior rows are done */
    if (p >= o1) break;
    char* dr = blk + (p - o0) * rl * csz;
    int64_t klo = 0, khi = 0;
    if (valid) {
      klo = lo - p * sL > 0 ? lo - p * sL : 0;
      khi = inL + lo - p * sL < KL ? inL + lo - p * sL : KL;
      if (klo > KL) klo = KL;
      if (khi < klo) khi = klo;
    }
    memset(dr, 0, (size_t)(klo * Cg * csz));
    if (khi > klo)
      load(j->kind, dr + klo * Cg * csz,
           j->x + (off + (p * sL + klo - lo) * xsL) * j->esz, (khi - klo) * Cg,
           1);
    memset(dr + khi * Cg * csz, 0, (size_t)((KL - khi) * Cg * csz));
  }
}

/* One outer tap of rows o0 .. o1-1 of a line, tap by tap along the last
 * dim and group by group: each (tap, group) column block is a strided
 * gather over the rows, with the rows on padding zeroed (bounds from
 * j->ab) and input dilation holes read as zeros. t0: the outer tap's first
 * tap index; off, valid as for fill_span. */
static void fill_taps(const job* j, char* dst, int64_t t0, int64_t off,
                      bool valid, int64_t o0, int64_t o1) {
  const int L = j->nsp - 1;
  const int64_t KL = j->k[L], Cg = j->Cg, rl = j->rowlen, csz = j->csz;
  const int64_t sL = j->stride[L], xsL = j->xs[L], idL = j->id[L];
  for (int64_t k = 0; k < KL; k++) {
    /* Last-dim virtual coordinate of row position p: p * sL + c. */
    const int64_t c = (j->flip ? KL - 1 - k : k) * j->kd[L] - j->lo[L];
    /* Rows [a, b) read inside the (virtual) input. */
    int64_t a = o1, b = o1;
    if (valid) {
      a = j->ab[2 * k];
      b = j->ab[2 * k + 1];
      a = a < o0 ? o0 : a > o1 ? o1 : a;
      b = b < a ? a : b > o1 ? o1 : b;
    }
    for (int64_t g = 0; g < j->G; g++) {
      char* col = dst + (g * j->Kc + (t0 + k) * Cg) * csz;
      zero_block(j, col, rl, a - o0, Cg);
      zero_block(j, col + (b - o0) * rl * csz, rl, o1 - b, Cg);
      if (b <= a) continue;
      const int64_t goff = off + g * Cg * j->xs_c;
      if (idL == 1) {
        const char* src = j->x + (goff + (a * sL + c) * xsL) * j->esz;
        copy_block(j, col + (a - o0) * rl * csz, rl, src, sL * xsL, b - a, Cg,
                   j->xs_c);
        continue;
      }
      for (int64_t p = a; p < b; p++) { /* dilation holes read zeros */
        char* dp = col + (p - o0) * rl * csz;
        int64_t v = p * sL + c;
        if (v % idL != 0)
          zero_block(j, dp, rl, 1, Cg);
        else
          load(j->kind, dp, j->x + (goff + (v / idL) * xsL) * j->esz, Cg,
               j->xs_c);
      }
    }
  }
}

/* Unfolds `count` consecutive output rows from row m (absolute), all in
 * one line (the same n and outer spatial positions, last-dim positions
 * o0 .. o0 + count - 1), into dst (count x rowlen compute elements).
 * Working per line and per tap, the index arithmetic and the padding
 * bounds are solved once per tap instead of once per element. */
static void fill_segment(const job* j, int64_t m, int64_t count, char* dst) {
  const int L = j->nsp - 1;
  const int64_t KL = j->k[L];
  int64_t o[CMX__CONV_MAX_SPATIAL], rem = m % j->out_sp;
  const int64_t n = m / j->out_sp;
  for (int d = L; d >= 0; d--) {
    o[d] = rem % j->out[d];
    rem /= j->out[d];
  }
  int64_t ko[CMX__CONV_MAX_SPATIAL] = {0};
  const int64_t touter = j->taps / KL;
  for (int64_t to = 0; to < touter; to++) {
    int64_t off = n * j->xs_n;
    bool valid = true;
    for (int d = 0; d < L && valid; d++) {
      int64_t i;
      valid = src_index(j, d, o[d], ko[d], &i);
      if (valid) off += i * j->xs[d];
    }
    if (j->span_copy)
      fill_span(j, dst + to * KL * j->Cg * j->csz, off, valid, o[L],
                o[L] + count);
    else
      fill_taps(j, dst, to * KL, off, valid, o[L], o[L] + count);
    for (int d = L - 1; d >= 0; d--) {
      if (++ko[d] < j->k[d]) break;
      ko[d] = 0;
    }
  }
}

/* Unfolds rows [r0, r0 + cnt) (absolute) into dst, line by line. */
static void fill_rows(const job* j, int64_t r0, int64_t cnt, char* dst) {
  const int64_t line = j->out[j->nsp - 1];
  for (int64_t r = r0; r < r0 + cnt;) {
    int64_t pos = r % line, seg = line - pos;
    if (seg > r0 + cnt - r) seg = r0 + cnt - r;
    fill_segment(j, r, seg, dst + (r - r0) * j->rowlen * j->csz);
    r += seg;
  }
}

/* Pool task: unfolds rows [b, e) of the current chunk. */
static void fill_chunk(void* ctx, int64_t b, int64_t e) {
  const job* j = ctx;
  fill_rows(j, j->row0 + b, e - b, j->a + b * j->rowlen * j->csz);
}

/* Copies array w (any strides) row-major into dst in the compute type. */
static void pack_array(int kind, char* dst, int64_t csz, cmx_array w) {
  const int nd = w->ndim;
  const int64_t* st = CMX__STRIDES(w);
  const int64_t inner = w->dims[nd - 1],
                esz = (int64_t)cmx_dtype_size(w->dtype);
  const int64_t rows = w->size / inner;
  const char* base = cmx__node_ptr(w);
  int64_t idx[CMX_MAX_NDIM] = {0};
  for (int64_t r = 0; r < rows; r++) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1; d++) off += idx[d] * st[d];
    load(kind, dst + r * inner * csz, base + off * esz, inner, st[nd - 1]);
    for (int d = nd - 2; d >= 0; d--) {
      if (++idx[d] < w->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* C[:, g*Og..] = A_g @ W_g^T for every group: mc rows, A_g at A + g *
 * astep elements with leading dimension lda, C with leading dimension O. */
static void gemm_groups(const job* j, int64_t mc, const char* A, int64_t astep,
                        int64_t lda, const char* W, char* C) {
  const enum CBLAS_ORDER R = CblasRowMajor;
  for (int64_t g = 0; g < j->G; g++) {
    const char* Ag = A + g * astep * j->csz;
    const char* Wg = W + g * j->Og * j->Kc * j->csz;
    char* Cg = C + g * j->Og * j->csz;
    if (j->kind == T_F64)
      cblas_dgemm(R, CblasNoTrans, CblasTrans, (int)mc, (int)j->Og, (int)j->Kc,
                  1.0, (const double*)Ag, (int)lda, (const double*)Wg,
                  (int)j->Kc, 0.0, (double*)Cg, (int)j->O);
    else
      cblas_sgemm(R, CblasNoTrans, CblasTrans, (int)mc, (int)j->Og, (int)j->Kc,
                  1.0f, (const float*)Ag, (int)lda, (const float*)Wg,
                  (int)j->Kc, 0.0f, (float*)Cg, (int)j->O);
  }
}

/* Rounds n float32 values to the 16-bit storage type. */
static void narrow(int kind, uint16_t* d, const float* s, int64_t n) {
  if (kind == T_F16)
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2h(s[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2bf(s[i]);
}

/* ---- depthwise convolutions: a direct product ----
 * With one input and one output channel per group (groups == C_in ==
 * C_out), im2col + gemm degenerates into G products with one column each,
 * far too thin for BLAS. Instead every output row accumulates, tap by
 * tap, the input row under the tap times that tap's weights: a
 * multiply-add over all channels at once, read straight from the input
 * (no unfolded copy). */
typedef struct {
  const job* j;
  const char* wt; /* weight [tap][c] in the compute type */
  char* y;        /* output, row-major (rows, C) */
  _Atomic int failed;
} dw_job;

/* acc[c] += xr[c] * wr[c] over the channels, xr in the compute type. */
#define DEFINE_DW_ROW(T, NAME)                               \
  static void NAME(T* restrict acc, const T* restrict xr,    \
                   const T* restrict wr, int64_t C) {        \
    for (int64_t c = 0; c < C; c++) acc[c] += xr[c] * wr[c]; \
  }
DEFINE_DW_ROW(float, dw_row_f32)
DEFINE_DW_ROW(double, dw_row_f64)

/* Pool task: output rows [b, e). */
static void dw_task(void* ctx, int64_t b, int64_t e) {
  dw_job* d = ctx;
  const job* j = d->j;
  const int nsp = j->nsp;
  const int64_t C = j->C, csz = j->csz;
  const bool half = j->kind == T_F16 || j->kind == T_BF16;
  /* Reads in place when the channels are contiguous in the compute type;
   * otherwise each input row is converted into tmp first. */
  const bool direct = !half && j->xs_c == 1;
  char* acc = malloc((size_t)(2 * C * csz));
  if (!acc) {
    atomic_store(&d->failed, 1);
    return;
  }
  char* tmp = acc + C * csz;
  for (int64_t r = b; r < e; r++) {
    int64_t o[CMX__CONV_MAX_SPATIAL], k[CMX__CONV_MAX_SPATIAL] = {0};
    int64_t rem = r % j->out_sp, n = r / j->out_sp;
    for (int d = nsp - 1; d >= 0; d--) {
      o[d] = rem % j->out[d];
      rem /= j->out[d];
    }
    /* float32/float64 rows accumulate in the output itself. */
    char* yr = d->y + r * C * j->esz;
    char* ar = half ? acc : yr;
    memset(ar, 0, (size_t)(C * csz));
    for (int64_t t = 0; t < j->taps; t++) {
      int64_t off = n * j->xs_n;
      bool valid = true;
      for (int dd = 0; dd < nsp && valid; dd++) {
        int64_t i;
        valid = src_index(j, dd, o[dd], k[dd], &i);
        if (valid) off += i * j->xs[dd];
      }
      if (valid) {
        const char* xr = j->x + off * j->esz;
        if (!direct) {
          load(j->kind, tmp, xr, C, j->xs_c);
          xr = tmp;
        }
        if (j->kind == T_F64)
          dw_row_f64((double*)ar, (const double*)xr,
                     (const double*)d->wt + t * C, C);
        else
          dw_row_f32((float*)ar, (const float*)xr, (const float*)d->wt + t * C,
                     C);
      }
      for (int dd = nsp - 1; dd >= 0; dd--) {
        if (++k[dd] < j->k[dd]) break;
        k[dd] = 0;
      }
    }
    if (half) narrow(j->kind, (uint16_t*)yr, (const float*)acc, C);
  }
  free(acc);
}

/* The depthwise path over all rows; W is the weight (C, taps) in the
 * compute type. */
static cmx_status run_depthwise(const job* j, const char* W, char* y,
                                int64_t rows) {
  dw_job d;
  memset(&d, 0, sizeof d);
  d.j = j;
  d.y = y;
  char* wt = malloc((size_t)(j->C * j->taps * j->csz));
  if (!wt) return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  for (int64_t c = 0; c < j->C; c++) /* transpose to [tap][c] */
    for (int64_t t = 0; t < j->taps; t++)
      memcpy(wt + (t * j->C + c) * j->csz, W + (c * j->taps + t) * j->csz,
             (size_t)j->csz);
  d.wt = wt;
  int64_t grain = FILL_GRAIN / (j->taps * j->C);
  if (grain < 1) grain = 1;
  cmx__parallel_for(rows, grain, dw_task, &d);
  free(wt);
  if (atomic_load(&d.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  return CMX_OK;
}

/* ---- small products: tiles over the pool ----
 * OpenBLAS runs a gemm single-threaded when M * N * K is at most
 * SMALL_MNK (65536 * GEMM_MULTITHREAD_THRESHOLD, as in matmul.c), and it
 * threads thin products (small K or N, e.g. the first layer of a CNN:
 * K = 25, N = 32) poorly. When a tile of at least TILE_MIN rows fits under
 * that threshold, each pool task unfolds a tile of rows into its own
 * cache-resident buffer and multiplies it at once: one parallel loop, no
 * hand-off between cmx's threads and OpenBLAS's. */
#define SMALL_MNK 262144.0
#define TILE_MIN 64

typedef struct {
  const job* j;
  const char* W;  /* weight (O, Kc), compute type */
  char* y;        /* output (rows, O) */
  int64_t tile;   /* rows per product */
  bool pointwise; /* the input rows are the matrix */
  _Atomic int failed;
} tile_job;

static void tile_task(void* ctx, int64_t b, int64_t e) {
  tile_job* t = ctx;
  const job* j = t->j;
  const bool half = j->kind == T_F16 || j->kind == T_BF16;
  char* abuf =
      t->pointwise ? NULL : malloc((size_t)(t->tile * j->rowlen * j->csz));
  float* cbuf = half ? malloc((size_t)(t->tile * j->O) * sizeof(float)) : NULL;
  if ((!t->pointwise && !abuf) || (half && !cbuf)) {
    atomic_store(&t->failed, 1);
  } else {
    for (int64_t r = b; r < e; r += t->tile) {
      int64_t cnt = e - r < t->tile ? e - r : t->tile;
      char* C = half ? (char*)cbuf : t->y + r * j->O * j->esz;
      if (t->pointwise) {
        gemm_groups(j, cnt, j->x + r * j->C * j->esz, j->Cg, j->C, t->W, C);
      } else {
        fill_rows(j, r, cnt, abuf);
        gemm_groups(j, cnt, abuf, j->Kc, j->rowlen, t->W, C);
      }
      if (half) narrow(j->kind, (uint16_t*)t->y + r * j->O, cbuf, cnt * j->O);
    }
  }
  free(abuf);
  free(cbuf);
}

/* Rows per tile when tiles of at least TILE_MIN rows stay below
 * SMALL_MNK, else 0. */
static int64_t tile_rows(const job* j) {
  double per_row = (double)j->Og * (double)j->Kc;
  int64_t t = (int64_t)(SMALL_MNK / per_row);
  return t >= TILE_MIN ? (t > 4096 ? 4096 : t) : 0;
}

static cmx_status run_tiles(const job* j, const char* W, char* y, int64_t rows,
                            int64_t tile, bool pointwise) {
  tile_job t;
  memset(&t, 0, sizeof t);
  t.j = j;
  t.W = W;
  t.y = y;
  t.tile = tile;
  t.pointwise = pointwise;
  cmx__parallel_for(rows, tile, tile_task, &t);
  if (atomic_load(&t.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  return CMX_OK;
}

/* The im2col + gemm path over all rows, in chunks; W is the weight
 * (O, Kc) in the compute type. j is modified (the chunk scratch). */
static cmx_status run_gemm(job* j, const char* W, char* y, int64_t rows,
                           bool pointwise) {
  const int64_t tile = tile_rows(j);
  if (tile) return run_tiles(j, W, y, rows, tile, pointwise);
  const bool half = j->kind == T_F16 || j->kind == T_BF16;
  int64_t chunk = pointwise ? rows : CHUNK_BYTES / (j->rowlen * j->csz);
  if (chunk < 1) chunk = 1;
  if (chunk > rows) chunk = rows;
  if (chunk > INT_MAX) chunk = INT_MAX;
  char* abuf = pointwise ? NULL : malloc((size_t)(chunk * j->rowlen * j->csz));
  /* float32 output rows for the 16-bit floats */
  float* cbuf = half ? malloc((size_t)(chunk * j->O) * sizeof(float)) : NULL;
  if ((!pointwise && !abuf) || (half && !cbuf)) {
    free(abuf);
    free(cbuf);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  }
  j->a = abuf;
  int64_t grain = FILL_GRAIN / j->rowlen;
  if (grain < 1) grain = 1;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    int64_t mc = rows - r0 < chunk ? rows - r0 : chunk;
    const char* A;
    int64_t astep, lda;
    if (pointwise) {
      A = j->x + r0 * j->C * j->esz;
      astep = j->Cg;
      lda = j->C;
    } else {
      j->row0 = r0;
      cmx__parallel_for(mc, grain, fill_chunk, j);
      A = abuf;
      astep = j->Kc;
      lda = j->rowlen;
    }
    char* C = cbuf ? (char*)cbuf : y + r0 * j->O * j->esz;
    gemm_groups(j, mc, A, astep, lda, W, C);
    if (cbuf) narrow(j->kind, (uint16_t*)y + r0 * j->O, cbuf, mc * j->O);
  }
  free(abuf);
  free(cbuf);
  return CMX_OK;
}

/* Depthwise: one input and one output channel per group. */
static bool is_depthwise(const job* j) {
  return j->G > 1 && j->Cg == 1 && j->Og == 1;
}

/* True when the convolution is a plain matrix product of the input rows:
 * 1x1 kernel, stride 1, no padding or input dilation, input row-major in
 * the compute type. */
static bool is_pointwise(const job* j, const cmx__conv_params* q, cmx_array x) {
  if (j->kind != T_F32 && j->kind != T_F64) return false;
  if (!(x->flags & CMX__FLAG_ROW_CONTIG)) return false;
  for (int d = 0; d < j->nsp; d++)
    if (j->k[d] != 1 || q->stride[d] != 1 || q->pad_lo[d] != 0 ||
        q->pad_hi[d] != 0 || q->input_dilation[d] != 1)
      return false;
  return true;
}

CMX__KERNEL(cmx__cpu_conv) {
  (void)nin;
  (void)nout;
  const cmx__conv_params* q = cmx_primitive_params(p);
  cmx_array x = in[0], w = in[1], y = out[0];
  cmx_dtype dt = y->dtype;
  if (!cmx_dtype_is_floating(dt) || x->dtype != dt || w->dtype != dt)
    return cmx_kernel_error(CMX_ERR_TYPE, "[conv] unsupported dtype %s",
                            cmx_dtype_name(dt));
  cmx_status st = cmx_kernel_alloc(y);
  if (st != CMX_OK || y->size == 0) return st;

  job j;
  memset(&j, 0, sizeof j);
  j.kind = dt == CMX_FLOAT32   ? T_F32
           : dt == CMX_FLOAT64 ? T_F64
           : dt == CMX_FLOAT16 ? T_F16
                               : T_BF16;
  j.esz = (int64_t)cmx_dtype_size(dt);
  j.csz = j.kind == T_F64 ? 8 : 4;
  j.nsp = q->nsp;
  j.C = x->dims[x->ndim - 1];
  j.O = y->dims[y->ndim - 1];
  j.G = q->groups;
  j.Cg = j.C / j.G;
  j.Og = j.O / j.G;
  j.flip = q->flip != 0;
  j.taps = 1;
  j.out_sp = 1;
  const int64_t* xs = CMX__STRIDES(x);
  for (int d = 0; d < j.nsp; d++) {
    j.in[d] = x->dims[d + 1];
    j.out[d] = y->dims[d + 1];
    j.k[d] = w->dims[d + 1];
    j.stride[d] = q->stride[d];
    j.lo[d] = q->pad_lo[d];
    j.kd[d] = q->kernel_dilation[d];
    j.id[d] = q->input_dilation[d];
    j.xs[d] = xs[d + 1];
    j.taps *= j.k[d];
    j.out_sp *= j.out[d];
  }
  j.Kc = j.taps * j.Cg;
  j.rowlen = j.G * j.Kc;
  j.x = cmx__node_ptr(x);
  j.xs_n = xs[0];
  j.xs_c = xs[x->ndim - 1];
  const int64_t rows = y->size / j.O;
  char* yp = cmx__node_ptr(y);
  if (j.Kc == 0) { /* no terms: every sum is empty */
    memset(yp, 0, (size_t)(y->size * j.esz));
    return CMX_OK;
  }
  if (j.rowlen > INT_MAX || j.O > INT_MAX || j.C > INT_MAX)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[conv] matrix dimensions exceed the BLAS limit "
                            "(2^31 - 1).");

  /* The weight as (O, Kc) row-major in the compute type. */
  char* wpack = NULL;
  const char* W = cmx__node_ptr(w);
  if (j.kind == T_F16 || j.kind == T_BF16 ||
      !(w->flags & CMX__FLAG_ROW_CONTIG)) {
    wpack = malloc((size_t)(w->size * j.csz));
    if (!wpack) return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
    pack_array(j.kind, wpack, j.csz, w);
    W = wpack;
  }

  bool pointwise = is_pointwise(&j, q, x);
  j.span_copy = span_applies(&j);
  /* Per last-dim tap, the output positions whose virtual input coordinate
   * p * stride + c lies in [0, (L - 1) * input_dilation]. */
  int64_t* ab = NULL;
  if (!pointwise) {
    const int L = j.nsp - 1;
    ab = malloc((size_t)(2 * j.k[L]) * sizeof(int64_t));
    if (!ab) {
      free(wpack);
      return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
    }
    for (int64_t k = 0; k < j.k[L]; k++) {
      int64_t c = (j.flip ? j.k[L] - 1 - k : k) * j.kd[L] - j.lo[L];
      ab[2 * k] = ceil_div(-c, j.stride[L]);
      ab[2 * k + 1] = floor_div((j.in[L] - 1) * j.id[L] - c, j.stride[L]) + 1;
    }
    j.ab = ab;
  }
  cmx_status rc = is_depthwise(&j) ? run_depthwise(&j, W, yp, rows)
                                   : run_gemm(&j, W, yp, rows, pointwise);
  free(ab);
  free(wpack);
  return rc;
}
