/* Strided byte copies and fills for the shape kernels.
 *
 * A copy is planned like the elementwise driver does: size-1 dims are
 * dropped and dims that are jointly contiguous in dst and src are merged,
 * so most copies become a few long rows. Each row is moved by item size
 * with three cases (both contiguous: memcpy; source stride 0: fill;
 * otherwise a strided loop), which gcc vectorises. */
#include "backend/cpu/shape_copy.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/transpose_block.h"

#define GRAIN (1 << 15) /* elements per chunk worth a thread */

typedef struct {
  int ndim;
  size_t isz;
  int64_t shape[CMX_MAX_NDIM];
  int64_t dst_st[CMX_MAX_NDIM], src_st[CMX_MAX_NDIM];
  char* dst;
  const char* src;
} copy_plan;

#define ROW_CASES(T)                                         \
  do {                                                       \
    T* o = (T*)dst;                                          \
    const T* a = (const T*)src;                              \
    if (ds == 1 && ss == 1) {                                \
      memcpy(o, a, (size_t)n * sizeof(T));                   \
    } else if (ss == 0) {                                    \
      T v = a[0];                                            \
      if (ds == 1)                                           \
        for (int64_t i = 0; i < n; i++) o[i] = v;            \
      else                                                   \
        for (int64_t i = 0; i < n; i++) o[i * ds] = v;       \
    } else if (ds == 1) {                                    \
      for (int64_t i = 0; i < n; i++) o[i] = a[i * ss];      \
    } else {                                                 \
      for (int64_t i = 0; i < n; i++) o[i * ds] = a[i * ss]; \
    }                                                        \
  } while (0)

/* Moves n elements of one row. */
static void copy_row(char* dst, int64_t ds, const char* src, int64_t ss,
                     int64_t n, size_t isz) {
  switch (isz) {
    case 1:
      ROW_CASES(uint8_t);
      break;
    case 2:
      ROW_CASES(uint16_t);
      break;
    case 4:
      ROW_CASES(uint32_t);
      break;
    default:
      ROW_CASES(uint64_t);
      break;
  }
}

static void plan_collapse(copy_plan* p) {
  p->ndim = cmx__layout_collapse(p->shape, p->ndim,
                                 (int64_t* const[]){p->dst_st, p->src_st}, 2);
}

/* Chunk [b, e) of a single row. */
static void run_flat(void* ctx, int64_t b, int64_t e) {
  const copy_plan* p = ctx;
  int64_t ds = p->ndim ? p->dst_st[0] : 0, ss = p->ndim ? p->src_st[0] : 0;
  int64_t isz = (int64_t)p->isz;
  copy_row(p->dst + b * ds * isz, ds, p->src + b * ss * isz, ss, e - b, p->isz);
}

/* Rows [b, e) of the outer dims. */
static void run_rows(void* ctx, int64_t b, int64_t e) {
  const copy_plan* p = ctx;
  int outer = p->ndim - 1;
  int64_t isz = (int64_t)p->isz;
  int64_t idx[CMX_MAX_NDIM];
  int64_t rem = b, doff = 0, soff = 0;
  for (int d = outer - 1; d >= 0; d--) {
    idx[d] = rem % p->shape[d];
    rem /= p->shape[d];
    doff += idx[d] * p->dst_st[d];
    soff += idx[d] * p->src_st[d];
  }
  int64_t inner = p->shape[outer];
  for (int64_t r = b; r < e; r++) {
    copy_row(p->dst + doff * isz, p->dst_st[outer], p->src + soff * isz,
             p->src_st[outer], inner, p->isz);
    for (int d = outer - 1; d >= 0; d--) {
      if (++idx[d] < p->shape[d]) {
        doff += p->dst_st[d];
        soff += p->src_st[d];
        break;
      }
      doff -= (p->shape[d] - 1) * p->dst_st[d];
      soff -= (p->shape[d] - 1) * p->src_st[d];
      idx[d] = 0;
    }
  }
}

/* Rows [b, e) of a 2-d plan with short rows (inner <= SHORT_ROW): the
 * item size chosen once, not per row (a call and a switch per row of two
 * elements cost several times the copy). */
#define SHORT_ROW 8
#define SHORT_ROWS_AS(T)                                             \
  do {                                                               \
    T* o = (T*)(void*)p->dst;                                        \
    const T* a = (const T*)(const void*)p->src;                      \
    for (int64_t r = b; r < e; r++)                                  \
      for (int64_t i = 0; i < n; i++)                                \
        o[r * p->dst_st[0] + i * ds] = a[r * p->src_st[0] + i * ss]; \
  } while (0)
static void run_short_rows(void* ctx, int64_t b, int64_t e) {
  const copy_plan* p = ctx;
  int64_t n = p->shape[1], ds = p->dst_st[1], ss = p->src_st[1];
  switch (p->isz) {
    case 1:
      SHORT_ROWS_AS(uint8_t);
      break;
    case 2:
      SHORT_ROWS_AS(uint16_t);
      break;
    case 4:
      SHORT_ROWS_AS(uint32_t);
      break;
    default:
      SHORT_ROWS_AS(uint64_t);
      break;
  }
}

/* The element offsets in dst and src of outer index `o` over the dims
 * before the last two. */
static void outer_offsets(const copy_plan* p, int64_t o, int64_t* doff,
                          int64_t* soff) {
  *doff = *soff = 0;
  for (int d = p->ndim - 3; d >= 0; d--) {
    int64_t i = o % p->shape[d];
    o /= p->shape[d];
    *doff += i * p->dst_st[d];
    *soff += i * p->src_st[d];
  }
}

/* Transposed pairs: the source walks the last dim with a long stride and
 * the one before it contiguously. Copy square tiles so the source lines a
 * tile touches stay in cache while the tile is written. Items are (outer
 * index, tile row). */
#define TILE 32
static void run_tiles(void* ctx, int64_t b, int64_t e) {
  const copy_plan* p = ctx;
  int nd = p->ndim;
  int64_t isz = (int64_t)p->isz;
  int64_t R = p->shape[nd - 2], C = p->shape[nd - 1];
  int64_t rt = (R + TILE - 1) / TILE;
  int64_t dr = p->dst_st[nd - 2], dc = p->dst_st[nd - 1];
  int64_t sr = p->src_st[nd - 2], sc = p->src_st[nd - 1];
  for (int64_t it = b; it < e; it++) {
    int64_t doff, soff;
    outer_offsets(p, it / rt, &doff, &soff);
    int64_t r0 = (it % rt) * TILE, r1 = r0 + TILE < R ? r0 + TILE : R;
    for (int64_t c0 = 0; c0 < C; c0 += TILE) {
      int64_t n = c0 + TILE < C ? TILE : C - c0;
      for (int64_t r = r0; r < r1; r++)
        copy_row(p->dst + (doff + r * dr + c0 * dc) * isz, dc,
                 p->src + (soff + r * sr + c0 * sc) * isz, sc, n, p->isz);
    }
  }
}

/* Plain transposes (the source's rows one element apart, the
 * destination's inner dim contiguous): blocks of TR_ROWS x TR_COLS moved
 * by cmx__transpose_block. Items are (outer index, row block, column
 * block), so even a matrix of few rows splits over the threads. */
#define TR_ROWS 32
#define TR_COLS 512
static void run_transpose(void* ctx, int64_t b, int64_t e) {
  const copy_plan* p = ctx;
  int nd = p->ndim;
  int64_t isz = (int64_t)p->isz;
  int64_t R = p->shape[nd - 2], C = p->shape[nd - 1];
  int64_t rt = (R + TR_ROWS - 1) / TR_ROWS, ct = (C + TR_COLS - 1) / TR_COLS;
  int64_t dr = p->dst_st[nd - 2], sc = p->src_st[nd - 1];
  for (int64_t it = b; it < e; it++) {
    int64_t doff, soff;
    outer_offsets(p, it / (rt * ct), &doff, &soff);
    int64_t r0 = (it / ct % rt) * TR_ROWS, c0 = it % ct * TR_COLS;
    int64_t nr = R - r0 < TR_ROWS ? R - r0 : TR_ROWS;
    int64_t nc = C - c0 < TR_COLS ? C - c0 : TR_COLS;
    cmx__transpose_block(p->dst + (doff + r0 * dr + c0) * isz, dr,
                         p->src + (soff + r0 + c0 * sc) * isz, sc, nr, nc, isz);
  }
}

/* A copy does not depend on the order the outer dims are walked in: when
 * the source walks the inner dim with a long stride, the outer dim where
 * its elements lie closest moves next to the inner one, so a (2, 1, 0)
 * permutation becomes a plain transpose of tiles instead of missing the
 * cache on every element. */
static void closest_dim_inward(copy_plan* p) {
  int nd = p->ndim;
  if (nd < 3 || llabs(p->src_st[nd - 1]) <= TILE) return;
  int best = cmx__closest_outer_dim(p->src_st, nd);
  if (best < 0) return;
  int64_t* arrs[3] = {p->shape, p->src_st, p->dst_st};
  for (int a = 0; a < 3; a++) {
    int64_t t = arrs[a][best];
    arrs[a][best] = arrs[a][nd - 2];
    arrs[a][nd - 2] = t;
  }
}

void cmx__cpu_strided_copy(char* dst, const int64_t* dst_strides,
                           const char* src, const int64_t* src_strides,
                           const int64_t* shape, int ndim, size_t isz) {
  copy_plan p;
  p.ndim = ndim;
  p.isz = isz;
  p.dst = dst;
  p.src = src;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0) return;
    p.shape[d] = shape[d];
    p.dst_st[d] = dst_strides[d];
    p.src_st[d] = src_strides[d];
  }
  plan_collapse(&p);
  closest_dim_inward(&p);
  if (p.ndim <= 1) {
    cmx__parallel_for(p.ndim ? p.shape[0] : 1, GRAIN, run_flat, &p);
    return;
  }
  int outer = p.ndim - 1;
  int64_t rows = 1;
  for (int d = 0; d < outer; d++) rows *= p.shape[d];
  int64_t inner = p.shape[outer];
  int64_t sc = p.src_st[outer], sr = p.src_st[outer - 1];
  if (sr == 1 && p.dst_st[outer] == 1 && (sc >= 8 || sc <= -8) && inner >= 8 &&
      p.shape[outer - 1] >= 8) {
    int64_t R = p.shape[outer - 1];
    int64_t items = rows / R * ((R + TR_ROWS - 1) / TR_ROWS) *
                    ((inner + TR_COLS - 1) / TR_COLS);
    int64_t per =
        (R < TR_ROWS ? R : TR_ROWS) * (inner < TR_COLS ? inner : TR_COLS);
    cmx__parallel_for(items, per >= GRAIN ? 1 : GRAIN / per, run_transpose, &p);
    return;
  }
  if ((sr == 1 || sr == -1) && (sc > TILE || sc < -TILE) && inner >= TILE &&
      p.shape[outer - 1] >= TILE) {
    int64_t items =
        rows / p.shape[outer - 1] * ((p.shape[outer - 1] + TILE - 1) / TILE);
    int64_t per = TILE * inner;
    cmx__parallel_for(items, per >= GRAIN ? 1 : GRAIN / per, run_tiles, &p);
    return;
  }
  if (p.ndim == 2 && inner <= SHORT_ROW) {
    cmx__parallel_for(rows, GRAIN / inner, run_short_rows, &p);
    return;
  }
  cmx__parallel_for(rows, inner >= GRAIN ? 1 : GRAIN / inner, run_rows, &p);
}

void cmx__cpu_fill(char* dst, int64_t n, const void* val, size_t isz) {
  int64_t one = 1, zero = 0;
  cmx__cpu_strided_copy(dst, &one, val, &zero, &n, 1, isz);
}

void cmx__cpu_copy_rowmajor(char* dst, cmx_array src) {
  int64_t st[CMX_MAX_NDIM];
  cmx__row_major_strides(src->dims, src->ndim, st);
  cmx__cpu_strided_copy(dst, st, cmx__node_ptr(src), CMX__STRIDES(src),
                        src->dims, src->ndim, cmx_dtype_size(src->dtype));
}
