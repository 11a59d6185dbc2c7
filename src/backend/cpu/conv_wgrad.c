/* The weight-gradient orientation of the CPU convolution.
 *
 * The gradient of a convolution with respect to its weight is itself a
 * convolution (MLX's vjp rule, which cmx follows): its input x' is the
 * forward input with batch and channels swapped (x'[b, i, n] = x[n, i, b]),
 * its weight w' the output cotangent likewise swapped (w'[o, p, n] =
 * dy[n, p, o]), and its output y'[b, t, o] is dW[o, t, b]. In the gather
 * form that is a product with few rows (C x forward taps) and very long
 * ones (N x forward output positions) whose operands are transposed views,
 * to be packed first.
 *
 * Here the same sums are taken in the forward convolution's orientation:
 *     R[(t, b)][o] = sum over (n, p) of F[(n, p)][(t, b)] * D[(n, p)][o]
 * with F the forward im2col of x_f[n, i, b] = x'[b, i, n] (the original
 * input, read in place through the view's strides; the roles of stride and
 * kernel dilation swap) and D[(n, p)][o] = w'[o, p, n] (the original
 * cotangent, read in place when it is contiguous, else packed). F's rows
 * (the product's K) are unfolded in tiles of contiguous channel spans and
 * each tile multiplies as F_tile^T @ D_tile (one TN gemm) into a partial R.
 * The tiles form chunks, each with its own partial product, taken by cmx's
 * workers from a counter (OpenBLAS held to one thread); the partials are
 * added in chunk order, so results do not depend on timing. R's rows are
 * (t, b): y's are (b, t), reordered at the end.
 *
 * Any G = 1 convolution could be computed this way; the kernel uses it
 * when the input's batch dim is its unit-stride one and its channels are
 * not, which is the weight gradient's layout. On AVX-512 CPUs the float32
 * products are cmx__sgemm512's (F_tile^T read in place, D by rows).
 */
#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/conv_cpu.h"
#include "backend/cpu/sgemm512.h"

/* Bytes of an F tile (it stays in L2 for the gemm that reads it). */
#define WG_TILE_BYTES ((int64_t)384 << 10)
/* Partial products per thread (load balance) and their memory bound. */
#define WG_CHUNKS_PER_THREAD 4
#define WG_PARTIAL_BYTES ((int64_t)64 << 20)

bool cmx__conv_wgrad_applies(const cmx__conv_job* j) {
  if (j->G != 1 || (j->kind != CMX__CV_F32 && j->kind != CMX__CV_F64))
    return false;
  /* batch unit-stride, channels not */
  if (!(j->xs_n == 1 || j->N == 1) || j->xs_c == 1 || j->C == 1) return false;
  /* the product's rows (t, b) and the gemm's dims within BLAS's int */
  return j->rows <= INT_MAX && j->O <= INT_MAX;
}

/* The forward convolution whose im2col is F (see above). */
static void forward_view(const cmx__conv_job* j, cmx__conv_job* f) {
  memset(f, 0, sizeof *f);
  f->kind = j->kind;
  f->xkind = j->xkind;
  f->esz = j->esz;
  f->xsz = j->xsz;
  f->csz = j->csz;
  f->nsp = j->nsp;
  f->N = j->C;
  f->C = f->Cg = j->N;
  f->G = 1;
  f->O = f->Og = j->O;
  f->taps = j->out_sp;
  f->out_sp = j->taps;
  for (int d = 0; d < j->nsp; d++) {
    f->in[d] = j->in[d];
    f->out[d] = j->k[d];
    f->k[d] = j->out[d];
    f->stride[d] = j->kd[d];
    f->kd[d] = j->stride[d];
    f->lo[d] = j->lo[d];
    f->id[d] = j->id[d];
    f->xs[d] = j->xs[d];
  }
  f->KL = f->k[f->nsp - 1];
  f->Kc = f->rowlen = f->taps * f->C;
  f->rows = f->N * f->out_sp;
  f->x = j->x;
  f->xs_n = j->xs_c;
  f->xs_c = j->xs_n;
  f->span_copy = cmx__conv_span_applies(f);
}

typedef struct {
  const cmx__conv_job* f;
  const char* D; /* (K, O) rows with leading dimension ldd */
  int64_t ldd;
  int64_t M, O, K; /* R is (M, O); K = f->rows */
  int64_t kt;      /* F rows per tile */
  int64_t ntiles, nchunks;
  char* R;        /* chunk 0's product (may be y) */
  char* partials; /* chunks 1 .. nchunks-1, (M, O) each */
  _Atomic int64_t next;
  _Atomic int failed;
} wg_plan;

static char* chunk_out(const wg_plan* g, int64_t c) {
  return c == 0 ? g->R : g->partials + (c - 1) * g->M * g->O * g->f->csz;
}

/* Pool task: takes chunks until none is left. */
static void wg_task(void* ctx, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  wg_plan* g = ctx;
  const cmx__conv_job* f = g->f;
  const int64_t lda = cmx__conv_pad_ld(g->M, f->csz);
  char* abuf = malloc((size_t)(g->kt * lda * f->csz));
  if (!abuf) {
    atomic_store(&g->failed, 1);
    return;
  }
  const int M = (int)g->M, O = (int)g->O, ldd = (int)g->ldd, ia = (int)lda;
  const bool own = f->kind == CMX__CV_F32 && cmx__sgemm512_available();
  for (;;) {
    int64_t c = atomic_fetch_add(&g->next, 1);
    if (c >= g->nchunks) break;
    int64_t t0 = c * g->ntiles / g->nchunks;
    int64_t t1 = (c + 1) * g->ntiles / g->nchunks;
    char* C = chunk_out(g, c);
    for (int64_t t = t0; t < t1; t++) {
      int64_t k0 = t * g->kt, cnt = g->K - k0 < g->kt ? g->K - k0 : g->kt;
      cmx__conv_unfold(f, k0, cnt, 0, f->taps, abuf, lda, g->M);
      const char* Dt = g->D + k0 * g->ldd * f->csz;
      if (own)
        cmx__sgemm512(M, O, cnt, (const float*)abuf, 1, lda, (const float*)Dt,
                      g->ldd, (float*)C, O, t > t0);
      else if (f->kind == CMX__CV_F64)
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, O, (int)cnt,
                    1.0, (const double*)abuf, ia, (const double*)Dt, ldd,
                    t > t0 ? 1.0 : 0.0, (double*)C, O);
      else
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, O, (int)cnt,
                    1.0f, (const float*)abuf, ia, (const float*)Dt, ldd,
                    t > t0 ? 1.0f : 0.0f, (float*)C, O);
    }
  }
  free(abuf);
}

/* The leading dimension of D read in place from w' (strides ws: O,
 * spatial..., C), or 0 when its rows (c, p) are not evenly spaced with
 * unit-stride columns. */
static int64_t inplace_ld(const cmx__conv_job* j, const int64_t* ws) {
  if (j->O > 1 && ws[0] != 1) return 0;
  int64_t ld = 0, expect = 0;
  for (int d = j->nsp; d >= 0; d--) { /* spatial dims inner to outer, C */
    int64_t n = d == 0 ? j->C : j->k[d - 1];
    int64_t s = d == 0 ? ws[j->nsp + 1] : ws[d];
    if (n == 1) continue;
    if (!ld) {
      ld = expect = s;
      if (ld < j->O) return 0;
    } else if (s != expect) {
      return 0;
    }
    expect *= n;
  }
  return ld ? ld : j->O;
}

cmx_status cmx__conv_run_wgrad(const cmx__conv_job* j, const char* w,
                               const int64_t* ws, char* y) {
  cmx__conv_job f;
  forward_view(j, &f);
  int64_t* ab = cmx__conv_ab_new(&f);
  wg_plan g;
  memset(&g, 0, sizeof g);
  g.f = &f;
  g.M = f.rowlen;
  g.O = j->O;
  g.K = f.rows;
  g.ldd = inplace_ld(j, ws);
  char* dpack = NULL;
  if (g.ldd) {
    g.D = w;
  } else { /* D = w' as (C, spatial..., O) row-major */
    int64_t dims[CMX__CONV_MAX_SPATIAL + 2], st[CMX__CONV_MAX_SPATIAL + 2];
    dims[0] = j->C;
    st[0] = ws[j->nsp + 1];
    for (int d = 0; d < j->nsp; d++) {
      dims[d + 1] = j->k[d];
      st[d + 1] = ws[d + 1];
    }
    dims[j->nsp + 1] = j->O;
    st[j->nsp + 1] = ws[0];
    dpack = cmx__conv_pack(j->kind, j->csz, j->nsp + 2, dims, st, w, j->esz);
    g.D = dpack;
    g.ldd = j->O;
  }
  f.ab = ab;
  const int64_t prod = g.M * g.O;
  const int threads = cmx__conv_threads(2.0 * (double)prod * (double)g.K);
  g.kt = WG_TILE_BYTES / (g.M * f.csz);
  g.kt = g.kt < 16 ? 16 : g.kt > 4096 ? 4096 : g.kt;
  if (g.kt > g.K) g.kt = g.K;
  g.ntiles = (g.K + g.kt - 1) / g.kt;
  g.nchunks = threads > 1 ? (int64_t)threads * WG_CHUNKS_PER_THREAD : 1;
  int64_t cap = WG_PARTIAL_BYTES / (prod * f.csz);
  if (g.nchunks > cap) g.nchunks = cap > threads ? cap : threads;
  if (g.nchunks > g.ntiles) g.nchunks = g.ntiles;
  /* with one batch row (b) R has y's layout */
  const bool direct = j->N == 1;
  char* rbuf = direct ? NULL : malloc((size_t)(prod * f.csz));
  g.R = direct ? y : rbuf;
  g.partials =
      g.nchunks > 1 ? malloc((size_t)((g.nchunks - 1) * prod * f.csz)) : NULL;
  if (!ab || !g.D || !g.R || (g.nchunks > 1 && !g.partials)) {
    atomic_store(&g.failed, 1);
  } else {
    const bool single = threads > 1 && cmx__blas_single_begin();
    if (threads > 1)
      cmx__parallel_for(threads, 1, wg_task, &g);
    else
      wg_task(&g, 0, 1);
    if (single) cmx__blas_single_end();
  }
  if (!atomic_load(&g.failed)) {
    for (int64_t c = 1; c < g.nchunks; c++) { /* in chunk order */
      const char* p = chunk_out(&g, c);
      if (f.kind == CMX__CV_F64)
        for (int64_t i = 0; i < prod; i++)
          ((double*)g.R)[i] += ((const double*)p)[i];
      else
        for (int64_t i = 0; i < prod; i++)
          ((float*)g.R)[i] += ((const float*)p)[i];
    }
    if (!direct) { /* rows (t, b) -> (b, t) */
      const int64_t B = j->N, T = j->out_sp, rb = g.O * f.csz;
      for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++)
          memcpy(y + (b * T + t) * rb, g.R + (t * B + b) * rb, (size_t)rb);
    }
  }
  free(g.partials);
  free(rbuf);
  free(dpack);
  free(ab);
  if (atomic_load(&g.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  return CMX_OK;
}
