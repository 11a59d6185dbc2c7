/* The gather form of the CPU convolution: im2col + BLAS gemm in tiles.
 *
 * For each group g, out[:, g*Og:(g+1)*Og] = A[:, g*Kc:(g+1)*Kc] @ W_g^T,
 * with A the unfolded input (conv_cpu.h) and W the weight as (O, Kc). A is
 * never materialised whole: rows are unfolded in tiles of mb rows and kbt
 * taps (a K-block) that fit in L2 (TILE_BYTES), and each tile is
 * multiplied at once by one gemm per group, accumulating over K-blocks
 * (beta = 1). Tiles are spread over cmx's pool with OpenBLAS held to one
 * thread meanwhile: one level of threading, no hand-off between cmx's
 * threads and OpenBLAS's, and thin products (small K or N, like a CNN's
 * first layer) run at single-thread gemm speed on every core. Two splits:
 *   row mode: tiles of rows, each computed whole (all its K-blocks) by one
 *             worker; workers take tiles from a shared counter, so a
 *             worker slowed by a busy machine takes fewer;
 *   K mode:   fewer row tiles than threads but several K-blocks: each
 *             worker owns a fixed range of K-blocks and accumulates a
 *             private partial product; the partials are added in order.
 * Results do not depend on scheduling: each output element is summed in
 * the same order whichever worker computes it.
 *
 * Single-channel inputs with short rows (Kc <= 64: a CNN's first layer on
 * grey images) unfold transposed, one contiguous input run per tap and
 * output line (cmx__conv_unfold_cols), and multiply as a TN gemm with the
 * weight transposed once: row-major rows would be assembled from runs of
 * KL values, several times the copying work.
 *
 * On AVX-512 CPUs the float32 products (16-bit types compute in float32)
 * go to cmx__sgemm512 instead of cblas_sgemm, with the weight transposed
 * once per call to (Kc, O): the tile is read in place, where OpenBLAS
 * would repack the tile and the whole weight at every tile.
 */
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/conv_cpu.h"
#include "backend/cpu/sgemm512.h"

/* Bytes of an unfolded tile: with OpenBLAS's packed copies of it and of
 * the weight block it stays in a core's L2. */
#define TILE_BYTES ((int64_t)384 << 10)
/* Rows per tile: below MB_MIN full rows the taps are split into K-blocks
 * of MB_KBLOCK-row tiles; MB_MAX bounds thin rows' tiles. */
#define MB_MIN 48
#define MB_MAX 1024
#define MB_KBLOCK 128

typedef struct {
  const cmx__conv_job* j;
  const char* W;        /* weight (O, Kc), compute type */
  char* Wt;             /* cols or own: the weight transposed, (Kc, O) */
  char* y;              /* output (rows, O), storage type */
  int64_t M;            /* rows */
  int64_t mb;           /* rows per tile */
  int64_t ntiles;       /* ceil(M / mb) */
  int64_t kbt;          /* taps per K-block */
  int64_t nkb;          /* K-blocks: ceil(taps / kbt) */
  bool pointwise;       /* the input rows are A */
  bool cols;            /* A unfolded transposed (cmx__conv_unfold_cols) */
  bool half;            /* 16-bit output: products go to float32 scratch */
  bool own;             /* float32 products by cmx__sgemm512 (B = Wt) */
  bool direct;          /* own, with A's rows read in place (see below) */
  int parts;            /* K mode: number of K-block ranges, else 0 */
  char* partials;       /* K mode: parts - 1 products (M, O), compute type */
  float* cpart0;        /* K mode with a 16-bit output: part 0's product */
  _Atomic int64_t next; /* row mode: next tile to take */
  _Atomic int failed;
} gemm_plan;

/* C[:, g*Og..] (+)= A_g @ W_g^T for every group: mc rows, kc columns of
 * each group block (A_g at A + g * astep elements, leading dimension lda),
 * W_g's columns from W (leading dimension Kc), C with leading dimension
 * O. accumulate: beta = 1 (add to C) instead of 0. */
static void gemm_groups(const cmx__conv_job* j, int64_t mc, int64_t kc,
                        const char* A, int64_t astep, int64_t lda,
                        const char* W, char* C, bool accumulate) {
  const enum CBLAS_ORDER R = CblasRowMajor;
  for (int64_t g = 0; g < j->G; g++) {
    const char* Ag = A + g * astep * j->csz;
    const char* Wg = W + g * j->Og * j->Kc * j->csz;
    char* Cg = C + g * j->Og * j->csz;
    if (j->kind == CMX__CV_F64)
      cblas_dgemm(R, CblasNoTrans, CblasTrans, (int)mc, (int)j->Og, (int)kc,
                  1.0, (const double*)Ag, (int)lda, (const double*)Wg,
                  (int)j->Kc, accumulate ? 1.0 : 0.0, (double*)Cg, (int)j->O);
    else
      cblas_sgemm(R, CblasNoTrans, CblasTrans, (int)mc, (int)j->Og, (int)kc,
                  1.0f, (const float*)Ag, (int)lda, (const float*)Wg,
                  (int)j->Kc, accumulate ? 1.0f : 0.0f, (float*)Cg, (int)j->O);
  }
}

/* Whether every tap of every output row reads inside j's input (no
 * padding or input dilation to read as zeros) and a row's last-dim taps
 * are one contiguous float32 span: then unfolded row r, outer tap q is
 * the input span at row r's corner plus q's offset, and the product can
 * read it in place (cmx__sgemm512_rows) instead of from a copy. */
static bool direct_applies(const cmx__conv_job* j) {
  if (j->G != 1 || j->xkind != CMX__CV_F32 || !j->span_copy) return false;
  for (int d = 0; d < j->nsp; d++)
    if (j->lo[d] != 0 || j->id[d] != 1 ||
        (j->out[d] - 1) * j->stride[d] + (j->k[d] - 1) * j->kd[d] >= j->in[d])
      return false;
  return true;
}

/* own_product in place (direct_applies): the taps [ta, ta + kc / C) of
 * rows [r0, r0 + cnt) by one cmx__sgemm512_rows per run of taps sharing an
 * outer tap (contiguous in the input). rp: scratch for cnt row pointers. */
static void direct_product(const gemm_plan* g, int64_t r0, int64_t cnt,
                           int64_t ta, int64_t kc, bool accumulate,
                           const float** rp, float* C) {
  const cmx__conv_job* j = g->j;
  const int nsp = j->nsp;
  const float* x = (const float*)j->x;
  for (int64_t i = 0; i < cnt; i++) { /* row corners (tap 0) */
    int64_t rem = (r0 + i) % j->out_sp, off = (r0 + i) / j->out_sp * j->xs_n;
    for (int d = nsp - 1; d >= 0; d--) {
      off += rem % j->out[d] * j->stride[d] * j->xs[d];
      rem /= j->out[d];
    }
    rp[i] = x + off;
  }
  const int64_t tb = ta + kc / j->C;
  for (int64_t t = ta; t < tb;) {
    /* the run [t, t1): the rest of t's kernel row, within the block */
    const int64_t kl = t % j->KL;
    const int64_t t1 = t - kl + j->KL < tb ? t - kl + j->KL : tb;
    int64_t roff = kl * j->C, q = t / j->KL;
    for (int d = nsp - 2; d >= 0; d--) {
      roff += q % j->k[d] * j->kd[d] * j->xs[d];
      q /= j->k[d];
    }
    cmx__sgemm512_rows(cnt, j->O, (t1 - t) * j->C, rp, roff,
                       (const float*)g->Wt + t * j->C * j->O, j->O, C, j->O,
                       accumulate || t > ta);
    t = t1;
  }
}

/* tile_product's K-block of taps from ta (kc columns per group) by
 * cmx__sgemm512: A read in place (pointwise, direct) or from the unfolded
 * tile, B the rows ta * Cg.. of Wt (group g's columns g * Og..). */
static void own_product(const gemm_plan* g, int64_t r0, int64_t cnt, int64_t ta,
                        int64_t kc, bool accumulate, char* abuf, float* C) {
  const cmx__conv_job* j = g->j;
  const float* Wt = (const float*)g->Wt + ta * j->Cg * j->O;
  if (g->direct) {
    direct_product(g, r0, cnt, ta, kc, accumulate, (const float**)abuf, C);
    return;
  }
  const float* A;
  int64_t lda, astep;
  if (g->pointwise) {
    A = (const float*)j->x + r0 * j->C;
    lda = j->C;
    astep = j->Cg;
  } else {
    lda = cmx__conv_pad_ld(j->G * kc, j->csz);
    cmx__conv_unfold(j, r0, cnt, ta, ta + kc / j->Cg, abuf, lda, kc);
    A = (const float*)abuf;
    astep = kc;
  }
  for (int64_t gi = 0; gi < j->G; gi++)
    cmx__sgemm512(cnt, j->Og, kc, A + gi * astep, lda, 1, Wt + gi * j->Og, j->O,
                  C + gi * j->Og, j->O, accumulate);
}

/* Rows [r0, r0 + cnt) times K-blocks [kb0, kb1) into C (those rows'
 * product, compute type, leading dimension O), the first block
 * overwriting C. abuf: the tile scratch. */
static void tile_product(const gemm_plan* g, int64_t r0, int64_t cnt,
                         int64_t kb0, int64_t kb1, char* abuf, char* C) {
  const cmx__conv_job* j = g->j;
  for (int64_t b = kb0; b < kb1; b++) {
    int64_t ta = b * g->kbt;
    int64_t tb = ta + g->kbt < j->taps ? ta + g->kbt : j->taps;
    int64_t kc = (tb - ta) * j->Cg;
    if (g->own) {
      own_product(g, r0, cnt, ta, kc, b > kb0, abuf, (float*)C);
      continue;
    }
    if (g->pointwise) {
      gemm_groups(j, cnt, kc, j->x + r0 * j->C * j->xsz, j->Cg, j->C, g->W, C,
                  false);
      continue;
    }
    if (g->cols) { /* A^T (Kc x cnt), G = 1, one K-block */
      const int64_t ldt = cmx__conv_pad_ld(cnt, j->csz);
      cmx__conv_unfold_cols(j, r0, cnt, abuf, ldt);
      if (j->kind == CMX__CV_F64)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)cnt,
                    (int)j->O, (int)kc, 1.0, (const double*)abuf, (int)ldt,
                    (const double*)g->Wt, (int)j->O, 0.0, (double*)C,
                    (int)j->O);
      else
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)cnt,
                    (int)j->O, (int)kc, 1.0f, (const float*)abuf, (int)ldt,
                    (const float*)g->Wt, (int)j->O, 0.0f, (float*)C, (int)j->O);
      continue;
    }
    const int64_t ld = cmx__conv_pad_ld(j->G * kc, j->csz);
    cmx__conv_unfold(j, r0, cnt, ta, tb, abuf, ld, kc);
    gemm_groups(j, cnt, kc, abuf, kc, ld, g->W + ta * j->Cg * j->csz, C,
                b > kb0);
  }
}

/* A worker's tile scratch (NULL for pointwise products) and, for 16-bit
 * outputs, its float32 product rows; false when memory runs out. */
static bool scratch_alloc(gemm_plan* g, int64_t mb, char** abuf, float** cbuf,
                          bool want_cbuf) {
  const cmx__conv_job* j = g->j;
  /* rows of at most G * kbt * Cg values plus padding; transposed (cols),
   * Kc rows of at most mb plus padding */
  const int64_t pad = 64 / j->csz;
  const int64_t n =
      g->cols ? j->Kc * (mb + pad) : mb * (j->G * g->kbt * j->Cg + pad);
  *abuf = g->pointwise ? NULL : malloc((size_t)(n * j->csz));
  *cbuf = want_cbuf ? malloc((size_t)(mb * j->O) * sizeof(float)) : NULL;
  if ((!g->pointwise && !*abuf) || (want_cbuf && !*cbuf)) {
    free(*abuf);
    free(*cbuf);
    atomic_store(&g->failed, 1);
    return false;
  }
  return true;
}

/* Pool task of row mode: takes tiles until none is left. */
static void row_task(void* ctx, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  gemm_plan* g = ctx;
  const cmx__conv_job* j = g->j;
  char* abuf;
  float* cbuf;
  if (!scratch_alloc(g, g->mb, &abuf, &cbuf, g->half)) return;
  for (;;) {
    int64_t t = atomic_fetch_add(&g->next, 1);
    if (t >= g->ntiles) break;
    int64_t r0 = t * g->mb, cnt = g->M - r0 < g->mb ? g->M - r0 : g->mb;
    char* C = g->half ? (char*)cbuf : g->y + r0 * j->O * j->esz;
    tile_product(g, r0, cnt, 0, g->nkb, abuf, C);
    if (g->half)
      cmx__conv_narrow(j->kind, (uint16_t*)g->y + r0 * j->O, cbuf, cnt * j->O);
  }
  free(abuf);
  free(cbuf);
}

/* Where part q of K mode accumulates its product. */
static char* part_out(const gemm_plan* g, int64_t q) {
  const cmx__conv_job* j = g->j;
  if (q > 0) return g->partials + (q - 1) * g->M * j->O * j->csz;
  return g->half ? (char*)g->cpart0 : g->y;
}

/* Pool task of K mode: parts [b, e), part q the K-blocks [q * nkb /
 * parts, (q + 1) * nkb / parts) of every row. */
static void k_task(void* ctx, int64_t b, int64_t e) {
  gemm_plan* g = ctx;
  const cmx__conv_job* j = g->j;
  char* abuf;
  float* unused;
  if (!scratch_alloc(g, g->mb, &abuf, &unused, false)) return;
  for (int64_t q = b; q < e; q++) {
    int64_t kb0 = q * g->nkb / g->parts, kb1 = (q + 1) * g->nkb / g->parts;
    char* C = part_out(g, q);
    for (int64_t r0 = 0; r0 < g->M; r0 += g->mb) {
      int64_t cnt = g->M - r0 < g->mb ? g->M - r0 : g->mb;
      tile_product(g, r0, cnt, kb0, kb1, abuf, C + r0 * j->O * j->csz);
    }
  }
  free(abuf);
}

/* Tile sizes and the split for `threads` workers. */
static void plan_tiles(gemm_plan* g, int threads) {
  const cmx__conv_job* j = g->j;
  const int64_t M = g->M;
  g->kbt = j->taps;
  g->nkb = 1;
  if (g->pointwise) {
    g->mb = 256;
  } else if (TILE_BYTES / (j->rowlen * j->csz) >= MB_MIN) {
    g->mb = TILE_BYTES / (j->rowlen * j->csz);
    if (g->mb > MB_MAX) g->mb = MB_MAX;
  } else { /* long rows: K-blocks of whole taps */
    const int64_t tap_bytes = j->G * j->Cg * j->csz;
    g->mb = M < MB_KBLOCK ? M : MB_KBLOCK;
    g->kbt = TILE_BYTES / (g->mb * tap_bytes);
    if (g->kbt < 1) { /* one tap is already large: fewer rows */
      g->kbt = 1;
      g->mb = TILE_BYTES / tap_bytes;
      if (g->mb < 16) g->mb = 16;
    }
    g->nkb = (j->taps + g->kbt - 1) / g->kbt;
    g->kbt = (j->taps + g->nkb - 1) / g->nkb; /* even blocks */
    g->nkb = (j->taps + g->kbt - 1) / g->kbt;
  }
  if (g->mb > M) g->mb = M;
  g->ntiles = (M + g->mb - 1) / g->mb;
  g->parts = 0;
  if (threads <= 1) return;
  if (g->ntiles < threads && g->nkb >= 2) {
    g->parts = (int)(g->nkb < threads ? g->nkb : threads);
  } else if (g->ntiles < 8 * (int64_t)threads) {
    /* few tiles: make their count a multiple of the threads */
    int64_t want = (g->ntiles + threads - 1) / threads * threads;
    if (want > M) want = M;
    g->mb = (M + want - 1) / want;
    g->ntiles = (M + g->mb - 1) / g->mb;
  }
}

cmx_status cmx__conv_run_gemm(const cmx__conv_job* j, const char* W, char* y,
                              bool pointwise) {
  const int64_t rows = j->rows;
  gemm_plan g;
  memset(&g, 0, sizeof g);
  g.j = j;
  g.W = W;
  g.y = y;
  g.M = rows;
  g.pointwise = pointwise;
  g.cols = !pointwise && cmx__conv_cols_applies(j);
  /* not for cols: with its few columns (Kc <= 64) the product is bound by
   * writing the output, where OpenBLAS measured a little faster (LeNet's
   * first layer: 1.25 against 1.3-1.6 ms on one thread) */
  g.own = j->kind != CMX__CV_F64 && !g.cols && cmx__sgemm512_available();
  g.direct = g.own && !pointwise && direct_applies(j);
  if (g.cols || g.own) { /* W^T: small for cols (Kc <= 64), once for own */
    g.Wt = malloc((size_t)(j->Kc * j->O * j->csz));
    if (!g.Wt) return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
    for (int64_t o = 0; o < j->O; o++)
      for (int64_t k = 0; k < j->Kc; k++)
        memcpy(g.Wt + (k * j->O + o) * j->csz, W + (o * j->Kc + k) * j->csz,
               (size_t)j->csz);
  }
  g.half = j->kind == CMX__CV_F16 || j->kind == CMX__CV_BF16;
  int threads =
      cmx__conv_threads(2.0 * (double)rows * (double)j->O * (double)j->Kc);
  plan_tiles(&g, threads);
  const bool single = threads > 1 && cmx__blas_single_begin();
  const int64_t prod = rows * j->O; /* elements of one product */
  if (g.parts) {
    g.partials = malloc((size_t)((g.parts - 1) * prod * j->csz));
    g.cpart0 = g.half ? malloc((size_t)prod * sizeof(float)) : NULL;
    if (!g.partials || (g.half && !g.cpart0)) {
      atomic_store(&g.failed, 1);
    } else {
      cmx__parallel_for(g.parts, 1, k_task, &g);
      /* parts added in order: the result does not depend on timing */
      char* acc = part_out(&g, 0);
      for (int q = 1; q < g.parts && !atomic_load(&g.failed); q++) {
        const char* p = part_out(&g, q);
        if (j->kind == CMX__CV_F64)
          for (int64_t i = 0; i < prod; i++)
            ((double*)acc)[i] += ((const double*)p)[i];
        else
          for (int64_t i = 0; i < prod; i++)
            ((float*)acc)[i] += ((const float*)p)[i];
      }
      if (g.half) cmx__conv_narrow(j->kind, (uint16_t*)y, g.cpart0, prod);
    }
    free(g.partials);
    free(g.cpart0);
  } else if (threads > 1) {
    cmx__parallel_for(threads, 1, row_task, &g);
  } else {
    row_task(&g, 0, 1);
  }
  if (single) cmx__blas_single_end();
  free(g.Wt);
  if (atomic_load(&g.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  return CMX_OK;
}
