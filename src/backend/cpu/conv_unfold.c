/* Data movement for the CPU convolution: im2col (unfolding blocks of
 * output rows and of kernel taps into a row-major matrix, see conv_cpu.h
 * for the layout) and packing strided operands to row-major.
 *
 * The unfolding works a line at a time (rows that differ only in the last
 * spatial position) and an outer tap at a time (all spatial dims but the
 * last fixed), so index arithmetic and padding bounds are solved per tap
 * rather than per element. When a row's last-dim taps are one contiguous
 * input span (one group, unit dilations, channels-last input) each row of
 * an outer tap is a single copy; otherwise each (tap, group) column block
 * is a strided gather over the rows of the line.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/conv_cpu.h"

bool cmx__conv_span_applies(const cmx__conv_job* j) {
  const int L = j->nsp - 1;
  return j->G == 1 && j->kd[L] == 1 && j->id[L] == 1 &&
         (j->xs_c == 1 || j->C == 1) && (j->xs[L] == j->C || j->k[L] == 1);
}

/* Copies of 4 and 8 floats as (unaligned) vector moves of float type:
 * never a library call, and, unlike memcpy, stores the compiler knows
 * cannot modify the job's fields, which it would otherwise reload after
 * every copy. */
typedef float cmx__v4f __attribute__((vector_size(16), aligned(4)));
static inline void cp4(float* d, const float* s) {
  *(cmx__v4f*)d = *(const cmx__v4f*)s;
}
static inline void cp8(float* d, const float* s) {
  cp4(d, s);
  cp4(d + 4, s + 4);
}

/* Copies w floats. Short spans are the common case (a C_in = 1 layer
 * copies 5 floats per row and tap, or one output line of 24 per tap), so
 * up to 32 they are a few fixed-size, possibly overlapping moves, with no
 * loop for gcc to turn back into a memcpy call. */
static inline void copy_f32(float* restrict d, const float* restrict s,
                            int64_t w) {
  if (w > 32) {
    memcpy(d, s, (size_t)w * sizeof(float));
  } else if (w >= 16) {
    cp8(d, s);
    cp8(d + 8, s + 8);
    cp8(d + w - 16, s + w - 16);
    cp8(d + w - 8, s + w - 8);
  } else if (w >= 8) {
    cp8(d, s);
    cp8(d + w - 8, s + w - 8);
  } else if (w >= 4) {
    cp4(d, s);
    cp4(d + w - 4, s + w - 4);
  } else {
    if (w > 0) d[0] = s[0];
    if (w > 1) d[1] = s[1];
    if (w > 2) d[2] = s[2];
  }
}

/* copy_f32 of `rows` runs of w floats, run r from s + r * sstep to d + r *
 * dstep, with the choice of moves made once for all runs. */
static void copy_rows_f32(float* restrict d, int64_t dstep,
                          const float* restrict s, int64_t sstep, int64_t rows,
                          int64_t w) {
  if (w >= 4 && w <= 8) {
    for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep) {
      cp4(d, s);
      cp4(d + w - 4, s + w - 4);
    }
  } else if (w >= 8 && w <= 16) {
    for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep) {
      cp8(d, s);
      cp8(d + w - 8, s + w - 8);
    }
  } else {
    for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep)
      copy_f32(d, s, w);
  }
}

/* Zeroes n compute elements at d (n usually small: a padding border). */
static inline void zero_run(char* d, int64_t n, int64_t csz) {
  if (n > 0) memset(d, 0, (size_t)(n * csz));
}

/* One outer tap, last-dim taps [ka, kb), rows o0 .. o1-1 of a line, when
 * a row's last-dim taps are one contiguous input span: rows whose span
 * lies inside the input are plain copies, border rows copy the part
 * inside and zero the rest. blk: where the first row's values go (row
 * step ld); off: the input offset of the line at last-dim position 0;
 * valid: false when the outer tap falls on padding (all zeros). */
static void fill_span(const cmx__conv_job* j, char* blk, int64_t ld,
                      int64_t off, bool valid, int64_t o0, int64_t o1,
                      int64_t ka, int64_t kb) {
  const int L = j->nsp - 1;
  const int64_t Cg = j->Cg, w = (kb - ka) * Cg, csz = j->csz;
  const int64_t sL = j->stride[L], xsL = j->xs[L], lo = j->lo[L];
  const int64_t inL = j->in[L];
  if (!valid) {
    for (int64_t p = o0; p < o1; p++)
      memset(blk + (p - o0) * ld * csz, 0, (size_t)(w * csz));
    return;
  }
  /* Interior rows: p * sL - lo + ka >= 0 and p * sL - lo + kb <= inL. */
  int64_t pa, pb;
  if (sL == 1) { /* no divisions: this runs once per line and tap */
    pa = lo - ka;
    pb = inL + lo - kb + 1;
  } else {
    pa = cmx__conv_ceil_div(lo - ka, sL);
    pb = cmx__conv_floor_div(inL + lo - kb, sL) + 1;
  }
  pa = pa < o0 ? o0 : pa > o1 ? o1 : pa;
  pb = pb < pa ? pa : pb > o1 ? o1 : pb;
  if (pb > pa && j->xkind == CMX__CV_F32) {
    copy_rows_f32((float*)(blk + (pa - o0) * ld * csz), ld,
                  (const float*)j->x + off + (pa * sL - lo + ka) * xsL,
                  sL * xsL, pb - pa, w);
  } else {
    for (int64_t p = pa; p < pb; p++)
      cmx__conv_load(j->xkind, blk + (p - o0) * ld * csz,
                     j->x + (off + (p * sL - lo + ka) * xsL) * j->xsz, w, 1);
  }
  for (int64_t p = o0; p < o1; p++) {
    if (p == pa && pb > pa) p = pb; /* interior rows are done */
    if (p >= o1) break;
    char* dr = blk + (p - o0) * ld * csz;
    /* taps [klo, khi) of [ka, kb) read inside the input */
    int64_t klo = lo - p * sL, khi = inL + lo - p * sL;
    klo = klo < ka ? ka : klo > kb ? kb : klo;
    khi = khi > kb ? kb : khi < klo ? klo : khi;
    memset(dr, 0, (size_t)((klo - ka) * Cg * csz));
    if (khi > klo)
      cmx__conv_load(j->xkind, dr + (klo - ka) * Cg * csz,
                     j->x + (off + (p * sL + klo - lo) * xsL) * j->xsz,
                     (khi - klo) * Cg, 1);
    memset(dr + (khi - ka) * Cg * csz, 0, (size_t)((kb - khi) * Cg * csz));
  }
}

/* Zeroes `rows` runs of cg compute elements, run r at dst + r * dstep. */
static void zero_block(const cmx__conv_job* j, char* dst, int64_t dstep,
                       int64_t rows, int64_t cg) {
  if (rows <= 0) return;
  if (cg * j->csz == 4) {
    float* d = (float*)dst;
    for (int64_t r = 0; r < rows; r++) d[r * dstep] = 0;
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    memset(dst + r * dstep * j->csz, 0, (size_t)(cg * j->csz));
}

/* Copies `rows` runs of cg elements: run r from src + r * sstep input
 * elements (channel stride sc) to dst + r * dstep compute elements. */
static void copy_block(const cmx__conv_job* j, char* dst, int64_t dstep,
                       const char* src, int64_t sstep, int64_t rows, int64_t cg,
                       int64_t sc) {
  if (cg == 1 && j->xkind == CMX__CV_F32) { /* one column: a gather */
    float* d = (float*)dst;
    const float* s = (const float*)src;
    for (int64_t r = 0; r < rows; r++) d[r * dstep] = s[r * sstep];
    return;
  }
  for (int64_t r = 0; r < rows; r++)
    cmx__conv_load(j->xkind, dst + r * dstep * j->csz, src + r * sstep * j->xsz,
                   cg, sc);
}

/* One outer tap, last-dim taps [ka, kb), rows o0 .. o1-1 of a line, tap
 * by tap and group by group: each (tap, group) column block is a strided
 * gather over the rows, with the rows on padding zeroed (bounds from
 * j->ab) and input dilation holes read as zeros. dst: the first row's
 * block start (row step ld, group step gw); col: the column of tap ka
 * within a group block; off, valid as for fill_span. */
static void fill_taps(const cmx__conv_job* j, char* dst, int64_t ld, int64_t gw,
                      int64_t col, int64_t off, bool valid, int64_t o0,
                      int64_t o1, int64_t ka, int64_t kb) {
  const int L = j->nsp - 1;
  const int64_t Cg = j->Cg, csz = j->csz;
  const int64_t sL = j->stride[L], xsL = j->xs[L], idL = j->id[L];
  for (int64_t k = ka; k < kb; k++) {
    /* Last-dim virtual coordinate of row position p: p * sL + c. */
    const int64_t c = k * j->kd[L] - j->lo[L];
    /* Rows [a, b) read inside the (virtual) input. */
    int64_t a = o1, b = o1;
    if (valid) {
      a = j->ab[2 * k];
      b = j->ab[2 * k + 1];
      a = a < o0 ? o0 : a > o1 ? o1 : a;
      b = b < a ? a : b > o1 ? o1 : b;
    }
    for (int64_t g = 0; g < j->G; g++) {
      char* cb = dst + (g * gw + col + (k - ka) * Cg) * csz;
      zero_block(j, cb, ld, a - o0, Cg);
      zero_block(j, cb + (b - o0) * ld * csz, ld, o1 - b, Cg);
      if (b <= a) continue;
      const int64_t goff = off + g * Cg * j->xs_c;
      if (idL == 1) {
        const char* src = j->x + (goff + (a * sL + c) * xsL) * j->xsz;
        copy_block(j, cb + (a - o0) * ld * csz, ld, src, sL * xsL, b - a, Cg,
                   j->xs_c);
        continue;
      }
      for (int64_t p = a; p < b; p++) { /* dilation holes read zeros */
        char* dp = cb + (p - o0) * ld * csz;
        int64_t v = p * sL + c;
        if (v % idL != 0)
          zero_block(j, dp, ld, 1, Cg);
        else
          cmx__conv_load(j->xkind, dp, j->x + (goff + (v / idL) * xsL) * j->xsz,
                         Cg, j->xs_c);
      }
    }
  }
}

/* An output row as (n, spatial position), advanced line by line without
 * divisions (they would cost more than unfolding a short line). */
typedef struct {
  int64_t n, o[CMX__CONV_MAX_SPATIAL];
} out_pos;

static void pos_init(const cmx__conv_job* j, int64_t r, out_pos* p) {
  int64_t rem = r % j->out_sp;
  p->n = r / j->out_sp;
  for (int d = j->nsp - 1; d >= 0; d--) {
    p->o[d] = rem % j->out[d];
    rem /= j->out[d];
  }
}

/* Moves p to the start of the next line. */
static void pos_next_line(const cmx__conv_job* j, out_pos* p) {
  p->o[j->nsp - 1] = 0;
  for (int d = j->nsp - 2; d >= 0; d--) {
    if (++p->o[d] < j->out[d]) return;
    p->o[d] = 0;
  }
  p->n++;
}

/* The input offset of image n at outer tap ko (all spatial dims but the
 * last) for outer output position o; false when it falls on padding or a
 * dilation hole. */
static bool outer_offset(const cmx__conv_job* j, const out_pos* p,
                         const int64_t* ko, int64_t* off) {
  *off = p->n * j->xs_n;
  for (int d = 0; d < j->nsp - 1; d++) {
    int64_t i;
    if (!cmx__conv_src_index(j, d, p->o[d], ko[d], &i)) return false;
    *off += i * j->xs[d];
  }
  return true;
}

/* Unfolds `count` consecutive output rows from position p, all in one line
 * (last-dim positions p->o[L] .. + count - 1), taps [ta, tb), into dst
 * (layout as for cmx__conv_unfold). */
static void fill_segment(const cmx__conv_job* j, const out_pos* p,
                         int64_t count, int64_t ta, int64_t tb, char* dst,
                         int64_t ld, int64_t gw) {
  const int L = j->nsp - 1;
  const int64_t KL = j->KL, o0 = p->o[L];
  /* the outer tap of ta as digits over dims 0 .. L-1 */
  int64_t ko[CMX__CONV_MAX_SPATIAL] = {0};
  int64_t to0 = ta / KL, to1 = (tb - 1) / KL + 1;
  for (int64_t t = to0, d = L - 1; d >= 0 && t > 0; d--) {
    ko[d] = t % j->k[d];
    t /= j->k[d];
  }
  for (int64_t to = to0; to < to1; to++) {
    int64_t ka = ta > to * KL ? ta - to * KL : 0;
    int64_t kb = tb < (to + 1) * KL ? tb - to * KL : KL;
    int64_t col = (to * KL + ka - ta) * j->Cg, off;
    bool valid = outer_offset(j, p, ko, &off);
    if (j->span_copy)
      fill_span(j, dst + col * j->csz, ld, off, valid, o0, o0 + count, ka, kb);
    else
      fill_taps(j, dst, ld, gw, col, off, valid, o0, o0 + count, ka, kb);
    for (int d = L - 1; d >= 0; d--) {
      if (++ko[d] < j->k[d]) break;
      ko[d] = 0;
    }
  }
}

void cmx__conv_unfold(const cmx__conv_job* j, int64_t r0, int64_t cnt,
                      int64_t ta, int64_t tb, char* dst, int64_t ld,
                      int64_t gw) {
  const int64_t line = j->out[j->nsp - 1];
  out_pos p;
  pos_init(j, r0, &p);
  for (int64_t r = r0; r < r0 + cnt;) {
    int64_t seg = line - p.o[j->nsp - 1];
    if (seg > r0 + cnt - r) seg = r0 + cnt - r;
    fill_segment(j, &p, seg, ta, tb, dst + (r - r0) * ld * j->csz, ld, gw);
    r += seg;
    pos_next_line(j, &p);
  }
}

bool cmx__conv_cols_applies(const cmx__conv_job* j) {
  const int L = j->nsp - 1;
  return j->G == 1 && j->C == 1 && j->span_copy && j->xs[L] == 1 &&
         j->stride[L] == 1 && j->Kc <= 64 &&
         (j->xkind == CMX__CV_F32 || j->xkind == CMX__CV_F64);
}

void cmx__conv_unfold_cols(const cmx__conv_job* j, int64_t r0, int64_t cnt,
                           char* dst, int64_t ldt) {
  const int L = j->nsp - 1;
  const int64_t KL = j->KL, line = j->out[L], csz = j->csz;
  const int64_t lo = j->lo[L], inL = j->in[L];
  out_pos p;
  pos_init(j, r0, &p);
  for (int64_t r = r0; r < r0 + cnt; pos_next_line(j, &p)) {
    const int64_t o0 = p.o[L];
    const int64_t seg = line - o0 < r0 + cnt - r ? line - o0 : r0 + cnt - r;
    int64_t ko[CMX__CONV_MAX_SPATIAL] = {0};
    for (int64_t to = 0; to < j->taps / KL; to++) {
      int64_t off;
      bool valid = outer_offset(j, &p, ko, &off);
      for (int64_t k = 0; k < KL; k++) {
        char* dr = dst + ((to * KL + k) * ldt + (r - r0)) * csz;
        /* positions q with 0 <= q - lo + k < inL read the input */
        int64_t pa = lo - k, pb = inL + lo - k;
        if (!valid) pa = pb = o0 + seg;
        pa = pa < o0 ? o0 : pa > o0 + seg ? o0 + seg : pa;
        pb = pb < pa ? pa : pb > o0 + seg ? o0 + seg : pb;
        zero_run(dr, pa - o0, csz);
        const char* src = j->x + (off + pa - lo + k) * j->xsz;
        if (j->xkind == CMX__CV_F32)
          copy_f32((float*)(dr + (pa - o0) * csz), (const float*)src, pb - pa);
        else
          memcpy(dr + (pa - o0) * csz, src, (size_t)((pb - pa) * csz));
        zero_run(dr + (pb - o0) * csz, o0 + seg - pb, csz);
      }
      for (int d = L - 1; d >= 0; d--) {
        if (++ko[d] < j->k[d]) break;
        ko[d] = 0;
      }
    }
    r += seg;
  }
}

int64_t* cmx__conv_ab_new(const cmx__conv_job* j) {
  const int L = j->nsp - 1;
  int64_t* ab = malloc((size_t)(2 * j->KL) * sizeof(int64_t));
  if (!ab) return NULL;
  for (int64_t k = 0; k < j->KL; k++) {
    /* virtual coordinate p * stride + c must lie in [0, (in - 1) * id] */
    int64_t c = k * j->kd[L] - j->lo[L];
    ab[2 * k] = cmx__conv_ceil_div(-c, j->stride[L]);
    ab[2 * k + 1] =
        cmx__conv_floor_div((j->in[L] - 1) * j->id[L] - c, j->stride[L]) + 1;
  }
  return ab;
}

/* ---- packing ----
 * Each destination row gathers along the array's last dim; when another
 * dim s is the source's fastest (smaller stride: a transposed view, like
 * the weight gradient's operands with batch and channels swapped), rows
 * are visited in blocks of PACK_SB consecutive indices along s and spans
 * of PACK_LB elements, so that the cache lines and pages a row touches are
 * reused by the next rows instead of being fetched again much later (a
 * plain row-order walk of such a view misses the TLB on every element). */
#define PACK_SB 64
#define PACK_LB 16
/* Values a pool task should pack to outweigh the hand-off. */
#define PACK_GRAIN 16384

typedef struct {
  int kind, nd;
  char* dst;   /* row-major copy, compute type */
  int64_t csz; /* compute element size */
  const int64_t *dims, *st;
  const char* base;
  int64_t esz;
  int s;        /* the blocked dim, or -1: rows in order */
  int64_t nsb;  /* blocks along s */
  int64_t dstr; /* destination stride of dim s (elements) */
} pack_job;

/* Pool task: rows [b, e) (all dims but the last). */
static void pack_rows(void* ctx, int64_t b, int64_t e) {
  const pack_job* pj = ctx;
  const int nd = pj->nd;
  const int64_t inner = pj->dims[nd - 1];
  int64_t idx[CMX_MAX_NDIM] = {0}, rem = b;
  for (int d = nd - 2; d >= 0; d--) {
    idx[d] = rem % pj->dims[d];
    rem /= pj->dims[d];
  }
  for (int64_t r = b; r < e; r++) {
    int64_t off = 0;
    for (int d = 0; d < nd - 1; d++) off += idx[d] * pj->st[d];
    cmx__conv_load(pj->kind, pj->dst + r * inner * pj->csz,
                   pj->base + off * pj->esz, inner, pj->st[nd - 1]);
    for (int d = nd - 2; d >= 0; d--) {
      if (++idx[d] < pj->dims[d]) break;
      idx[d] = 0;
    }
  }
}

/* Pool task, blocked order: units [b, e), a unit being one block along s
 * of one index of the other dims but the last. */
static void pack_blocks(void* ctx, int64_t b, int64_t e) {
  const pack_job* pj = ctx;
  const int nd = pj->nd, s = pj->s;
  const int64_t inner = pj->dims[nd - 1], sl = pj->st[nd - 1];
  for (int64_t u = b; u < e; u++) {
    int64_t rem = u / pj->nsb, i0 = (u % pj->nsb) * PACK_SB;
    int64_t i1 = i0 + PACK_SB < pj->dims[s] ? i0 + PACK_SB : pj->dims[s];
    int64_t soff = 0, doff = 0, dstride = inner;
    for (int d = nd - 2; d >= 0; d--) {
      if (d != s) {
        int64_t i = rem % pj->dims[d];
        rem /= pj->dims[d];
        soff += i * pj->st[d];
        doff += i * dstride;
      }
      dstride *= pj->dims[d];
    }
    for (int64_t l0 = 0; l0 < inner; l0 += PACK_LB) {
      int64_t n = inner - l0 < PACK_LB ? inner - l0 : PACK_LB;
      for (int64_t i = i0; i < i1; i++)
        cmx__conv_load(pj->kind, pj->dst + (doff + i * pj->dstr + l0) * pj->csz,
                       pj->base + (soff + i * pj->st[s] + l0 * sl) * pj->esz, n,
                       sl);
    }
  }
}

char* cmx__conv_pack(int kind, int64_t csz, int nd, const int64_t* dims,
                     const int64_t* st, const char* base, int64_t esz) {
  int64_t size = 1;
  for (int d = 0; d < nd; d++) size *= dims[d];
  char* dst = malloc((size_t)(size > 0 ? size * csz : 1));
  if (!dst || size == 0) return dst;
  const int64_t inner = dims[nd - 1];
  pack_job pj = {kind, nd, dst, csz, dims, st, base, esz, -1, 0, 0};
  /* the source's fastest dim, when it is not the last */
  int64_t sl = st[nd - 1] < 0 ? -st[nd - 1] : st[nd - 1];
  for (int d = 0; d < nd - 1; d++) {
    int64_t sd = st[d] < 0 ? -st[d] : st[d];
    if (dims[d] > 1 && inner > 1 && sd < sl) {
      pj.s = d;
      sl = sd;
    }
  }
  if (pj.s < 0) {
    int64_t grain = PACK_GRAIN / inner;
    cmx__parallel_for(size / inner, grain < 1 ? 1 : grain, pack_rows, &pj);
    return dst;
  }
  pj.nsb = (dims[pj.s] + PACK_SB - 1) / PACK_SB;
  pj.dstr = inner;
  for (int d = nd - 2; d > pj.s; d--) pj.dstr *= dims[d];
  int64_t units = size / inner / dims[pj.s] * pj.nsb;
  int64_t grain = PACK_GRAIN / (inner * PACK_SB);
  cmx__parallel_for(units, grain < 1 ? 1 : grain, pack_blocks, &pj);
  return dst;
}
