/* The elementwise driver: layout collapse and parallel row iteration. */
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/shape_copy.h"
#include "backend/cpu/transpose_block.h"

#define MAX_ARRAYS 8
#define GRAIN (1 << 15) /* elements per chunk worth a thread */

typedef struct {
  int ndim, narr;
  int64_t shape[CMX_MAX_NDIM];
  int64_t strides[MAX_ARRAYS][CMX_MAX_NDIM]; /* in elements */
  int64_t isz[MAX_ARRAYS];                   /* item sizes in bytes */
  char* base[MAX_ARRAYS];
  cmx__row_fn fn;
  const void* ctx;
} ew_plan;

/* One-dim case: a chunk [b, e) of the single row. */
static void run_flat(void* ctx, int64_t b, int64_t e) {
  const ew_plan* p = ctx;
  char* ptrs[MAX_ARRAYS];
  int64_t st[MAX_ARRAYS];
  for (int k = 0; k < p->narr; k++) {
    st[k] = p->ndim ? p->strides[k][0] : 0;
    ptrs[k] = p->base[k] + b * st[k] * p->isz[k];
  }
  p->fn(ptrs, st, e - b, p->ctx);
}

/* A walk over the rows (all dims but the inner one) of a plan: the row
 * index, each array's pointer to the row's start, and its inner stride. */
typedef struct row_cursor {
  int64_t idx[CMX_MAX_NDIM];
  char* ptrs[MAX_ARRAYS];
  int64_t st[MAX_ARRAYS];
} row_cursor;

/* Places c at row r. */
static void cursor_at(const ew_plan* p, row_cursor* c, int64_t r) {
  int outer = p->ndim - 1;
  for (int d = outer - 1; d >= 0; d--) {
    c->idx[d] = r % p->shape[d];
    r /= p->shape[d];
  }
  for (int k = 0; k < p->narr; k++) {
    int64_t off = 0;
    for (int d = 0; d < outer; d++) off += c->idx[d] * p->strides[k][d];
    c->ptrs[k] = p->base[k] + off * p->isz[k];
    c->st[k] = p->strides[k][outer];
  }
}

/* Moves c to the next row. */
static void cursor_next(const ew_plan* p, row_cursor* c) {
  for (int d = p->ndim - 2; d >= 0; d--) {
    if (++c->idx[d] < p->shape[d]) {
      for (int k = 0; k < p->narr; k++)
        c->ptrs[k] += p->strides[k][d] * p->isz[k];
      return;
    }
    for (int k = 0; k < p->narr; k++)
      c->ptrs[k] -= (p->shape[d] - 1) * p->strides[k][d] * p->isz[k];
    c->idx[d] = 0;
  }
}

/* General case: rows [b, e) of the outer dims, one call of fn per row. */
static void run_rows(void* ctx, int64_t b, int64_t e) {
  const ew_plan* p = ctx;
  row_cursor c;
  cursor_at(p, &c, b);
  int64_t inner = p->shape[p->ndim - 1];
  for (int64_t r = b; r < e; r++) {
    p->fn(c.ptrs, c.st, inner, p->ctx);
    cursor_next(p, &c);
  }
}

/* Tiles for layouts where an array walks the inner dim with a large
 * stride (a transposed operand): rows go TILE_ROWS at a time, columns
 * TILE_COLS at a time, so the cache lines such an array touches in one
 * column block (TILE_COLS of them) are reused by the next rows instead of
 * being evicted by the time the next row comes back to them. */
#define TILE_ROWS 16
#define TILE_COLS 256
#define TILE_MIN_STRIDE 16 /* inner strides (elements) worth tiling */

/* Work units of the tiled walk: TILE_ROWS rows by a group of GROUP_TILES
 * column tiles, so a matrix with few rows still splits over many threads
 * (100 rows of 4096 give 7 row blocks but 28 units). */
#define GROUP_TILES 4

/* Inputs of a tile gathered into contiguous scratch at most: the
 * transposed operands (two covers a + b.T style and b.T + c.T). */
#define MAX_GATHER 2
/* Row stride of the gather scratch, in elements: not a power of two, so
 * its rows do not share cache sets. */
#define SCRATCH_LD (TILE_COLS + 16)

/* Copies the nr x w tile of an array whose rows start at rp[i] (plus col
 * elements of stride st) into buf rows of SCRATCH_LD elements of isz bytes.
 * The row pointers of a transposed operand lie close together, so the
 * inner loop over rows reads nearby elements and the stores stay in L1. */
static void gather_tile(char* buf, char* const* rp, int nr, int64_t col,
                        int64_t w, int64_t st, int64_t isz) {
  bool adjacent = true; /* rows one element apart: a plain transpose */
  for (int i = 1; i < nr && adjacent; i++) adjacent = rp[i] == rp[0] + i * isz;
  if (adjacent) {
    cmx__transpose_block(buf, SCRATCH_LD, rp[0] + col * st * isz, st, nr, w,
                         isz);
    return;
  }
#define GATHER_AS(T)                                           \
  do {                                                         \
    T* b = (T*)(void*)buf;                                     \
    for (int64_t j = 0; j < w; j++) {                          \
      int64_t off = (col + j) * st;                            \
      for (int i = 0; i < nr; i++)                             \
        b[i * SCRATCH_LD + j] = ((const T*)(void*)rp[i])[off]; \
    }                                                          \
  } while (0)
  switch (isz) {
    case 1:
      GATHER_AS(uint8_t);
      break;
    case 2:
      GATHER_AS(uint16_t);
      break;
    case 4:
      GATHER_AS(uint32_t);
      break;
    default:
      GATHER_AS(uint64_t);
      break;
  }
#undef GATHER_AS
}

/* The inputs (never the output) a tile walk gathers: those walking the
 * inner dim with a large stride. Returns their count, indices in which. */
static int gathered_inputs(const ew_plan* p, const int64_t* st, int* which) {
  int n = 0;
  for (int k = 1; k < p->narr && n < MAX_GATHER; k++)
    if (llabs(st[k]) >= TILE_MIN_STRIDE && p->isz[k] <= 8) which[n++] = k;
  return n;
}

/* Units [ub, ue) of the tiled walk: ngroups column groups per row block.
 * Transposed inputs are first gathered tile by tile into contiguous
 * scratch, so the row function sees unit strides (and vectorises). */
static void run_tiles(void* ctx, int64_t ub, int64_t ue) {
  const ew_plan* p = ctx;
  int64_t inner = p->shape[p->ndim - 1], rows = 1;
  for (int d = 0; d < p->ndim - 1; d++) rows *= p->shape[d];
  const int64_t gw = (int64_t)GROUP_TILES * TILE_COLS;
  const int64_t ngroups = (inner + gw - 1) / gw;
  char* rp[TILE_ROWS][MAX_ARRAYS];
  char* gp[TILE_ROWS]; /* one gathered array's row pointers */
  /* scratch: TILE_ROWS x TILE_COLS elements of at most 8 bytes for each
   * gathered input (heap, not stack or TLS: 34 KiB each) */
  uint64_t(*scratch)[TILE_ROWS * SCRATCH_LD] = NULL;
  row_cursor c;
  int64_t cur_block = -1;
  int which[MAX_GATHER], ng = 0;
  int64_t st1[MAX_ARRAYS];
  for (int64_t u = ub; u < ue; u++) {
    int64_t blk = u / ngroups, c0 = (u % ngroups) * gw;
    int64_t r0 = blk * TILE_ROWS;
    int nr = rows - r0 < TILE_ROWS ? (int)(rows - r0) : TILE_ROWS;
    if (blk != cur_block) { /* the row pointers of this block */
      cursor_at(p, &c, r0);
      for (int i = 0; i < nr; i++, cursor_next(p, &c))
        memcpy(rp[i], c.ptrs, (size_t)p->narr * sizeof(char*));
      if (cur_block < 0) {
        ng = gathered_inputs(p, c.st, which);
        memcpy(st1, c.st, (size_t)p->narr * sizeof(int64_t));
        for (int g = 0; g < ng; g++) st1[which[g]] = 1;
        if (ng && !(scratch = malloc(sizeof(*scratch) * (size_t)ng)))
          ng = 0; /* no memory: walk the strided operands in place */
      }
      cur_block = blk;
    }
    int64_t c1 = c0 + gw < inner ? c0 + gw : inner;
    for (int64_t col = c0; col < c1; col += TILE_COLS) {
      int64_t w = c1 - col < TILE_COLS ? c1 - col : TILE_COLS;
      for (int g = 0; g < ng; g++) {
        int k = which[g];
        for (int i = 0; i < nr; i++) gp[i] = rp[i][k];
        gather_tile((char*)scratch[g], gp, nr, col, w, c.st[k], p->isz[k]);
      }
      for (int i = 0; i < nr; i++) {
        char* q[MAX_ARRAYS];
        for (int k = 0; k < p->narr; k++)
          q[k] = rp[i][k] + col * c.st[k] * p->isz[k];
        for (int g = 0; g < ng; g++)
          q[which[g]] =
              (char*)scratch[g] + (int64_t)i * SCRATCH_LD * p->isz[which[g]];
        p->fn(q, ng ? st1 : c.st, w, p->ctx);
      }
    }
  }
  free(scratch);
}

/* Elementwise results do not depend on the order the outer dims are
 * walked in, so for an array that walks the inner dim with a large stride
 * (a transposed operand) the outer dim where its elements lie closest is
 * moved next to the inner one: the tiled walk then reuses its cache lines
 * (a (2, 1, 0) permutation copy otherwise missed on every element). */
static void closest_dim_inward(ew_plan* p) {
  int outer = p->ndim - 1;
  for (int k = 0; k < p->narr; k++) {
    if (llabs(p->strides[k][outer]) < TILE_MIN_STRIDE) continue;
    int best = cmx__closest_outer_dim(p->strides[k], p->ndim);
    if (best < 0) return;
    int64_t t = p->shape[best];
    p->shape[best] = p->shape[outer - 1];
    p->shape[outer - 1] = t;
    for (int a = 0; a < p->narr; a++) {
      t = p->strides[a][best];
      p->strides[a][best] = p->strides[a][outer - 1];
      p->strides[a][outer - 1] = t;
    }
    return;
  }
}

/* True when some array walks the inner dim with a large stride while the
 * next dim out is close together for it (a transposed operand). */
static bool wants_tiles(const ew_plan* p) {
  int outer = p->ndim - 1;
  if (p->shape[outer] < 2 * TILE_COLS / 4) return false;
  for (int k = 0; k < p->narr; k++) {
    int64_t si = p->strides[k][outer], so = p->strides[k][outer - 1];
    if (si < 0) si = -si;
    if (so < 0) so = -so;
    if (si >= TILE_MIN_STRIDE && so < si) return true;
  }
  return false;
}

void cmx__cpu_ew_run(cmx_array out, const cmx_array* ins, int nin,
                     cmx__row_fn fn, const void* ctx) {
  if (out->size == 0) return;
  CMX__ASSERT(nin + 1 <= MAX_ARRAYS);
  ew_plan p;
  p.ndim = out->ndim;
  p.narr = nin + 1;
  p.fn = fn;
  p.ctx = ctx;
  memcpy(p.shape, out->dims, (size_t)out->ndim * sizeof(int64_t));
  for (int k = 0; k < p.narr; k++) {
    cmx_array a = k == 0 ? out : ins[k - 1];
    CMX__ASSERT(a->ndim == out->ndim);
    memcpy(p.strides[k], CMX__STRIDES(a), (size_t)a->ndim * sizeof(int64_t));
    p.base[k] = cmx__node_ptr(a);
    p.isz[k] = (int64_t)cmx_dtype_size(a->dtype);
  }
  int64_t* st[MAX_ARRAYS];
  for (int k = 0; k < p.narr; k++) st[k] = p.strides[k];
  p.ndim = cmx__layout_collapse(p.shape, p.ndim, st, p.narr);
  if (p.ndim <= 1) {
    cmx__parallel_for(p.ndim ? p.shape[0] : 1, GRAIN, run_flat, &p);
    return;
  }
  int outer = p.ndim - 1;
  int64_t rows = 1;
  for (int d = 0; d < outer; d++) rows *= p.shape[d];
  int64_t inner = p.shape[outer];
  int64_t grain = inner >= GRAIN ? 1 : GRAIN / inner;
  closest_dim_inward(&p);
  if (rows >= TILE_ROWS && wants_tiles(&p)) {
    int64_t gw = (int64_t)GROUP_TILES * TILE_COLS;
    int64_t units =
        (rows + TILE_ROWS - 1) / TILE_ROWS * ((inner + gw - 1) / gw);
    int64_t per_unit = (int64_t)TILE_ROWS * (inner < gw ? inner : gw);
    cmx__parallel_for(units, per_unit >= GRAIN ? 1 : GRAIN / per_unit,
                      run_tiles, &p);
    return;
  }
  cmx__parallel_for(rows, grain, run_rows, &p);
}

cmx_status cmx__cpu_ew_alloc(cmx_array out, const cmx_array* ins, int nin) {
  for (int i = 0; i < nin; i++) {
    cmx_array in = ins[i];
    if (cmx_dtype_size(in->dtype) != cmx_dtype_size(out->dtype) ||
        in->size != out->size || !(in->flags & CMX__FLAG_ROW_CONTIG))
      continue;
    if (cmx__can_donate(out, in)) return cmx_kernel_alloc_donate(out, in, NULL);
  }
  return cmx_kernel_alloc(out);
}
