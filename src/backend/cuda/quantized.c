/* GPU kernels of Quantize, Dequantize and QuantizedMatmul (affine mode;
 * kernels/quantized.cu; contracts in primitives/quantized.h). One variant
 * per (float dtype, bit width). QuantizedMatmul takes one of four paths:
 *   - transpose with at most QMV_MAXM rows of x (decoding): the
 *     matrix-vector kernels (cmx_qmv<MT>, MT = 1, 2, 4, 8 rows of x a
 *     block), reading the packed words directly with 16-byte loads, R
 *     weight rows a block, K split over the block's threads;
 *   - 16-bit x, other shapes up to MMA_MAXM rows: the tensor-core kernel
 *     (W's tiles dequantized into shared memory, mma.sync), K split when
 *     the grid is small;
 *   - more rows, when cuBLASLt is there and the batch is one strided
 *     run: the weights dequantized into a scratch matrix of the output
 *     dtype (the Dequantize kernel), then one cuBLASLt product;
 *   - otherwise the tiled kernel (64 x 64 outputs a block; each 32-deep
 *     tile of W dequantized into shared memory, float32), both transposes.
 * Quantize takes a thread per group, Dequantize a thread per value, with
 * the CPU's formulas (quantize bit for bit: same float32 operations).
 * AddRMSNormQuantizedMatmul runs the one-row matrix-vector kernels with
 * AddRMSNorm's row computed first in every block (cmx_qmv1n, cmx_qmv1r1n,
 * cmx_qmv1sgn), else AddRMSNorm's kernel then the product's. */
#include "primitives/quantized.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/internal.h"
#include "core/layout.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", "splitk",
                                         NULL};

enum {
  K_QUANTIZE,
  K_DEQUANTIZE,
  K_QMM_T,
  K_QMM_N,
  K_QMV1,
  K_QMV2,
  K_QMV4,
  K_QMV8,
  K_QMMA_T,
  K_QMMA_N,
  K_QMM_SUM,
  K_QMV1F, /* CMX_CUDA_QMV=fast: K_QMV1F + log2(MT) */
  K_QMV1R1 = K_QMV1F + 4, /* one row of x, one weight row a block */
  K_QMV1SG,               /* QuantizedMatmulSwiGLU: rows j and j + N / 2 */
  K_QMV1SGF,              /* the same with CMX_CUDA_QMV=fast's sums */
  K_QMV1N,   /* AddRMSNormQuantizedMatmul: cmx_qmv1 with the norm first */
  K_QMV1R1N, /* ... cmx_qmv1r1 */
  K_QMV1SGN, /* ... cmx_qmv1sg */
  K_QMV1W,   /* one row of x, a warp for each 4 weight rows */
  K_QMV1W1,  /* ... for each weight row (CMX_CUDA_QMV=w1) */
  K_QMV1W2,  /* ... for each 2 weight rows (CMX_CUDA_QMV=w2) */
};
static const char* const k_kernels[] = {
    "cmx_quantize", "cmx_dequantize", "cmx_qmm_t",      "cmx_qmm_n",
    "cmx_qmv1",     "cmx_qmv2",       "cmx_qmv4",       "cmx_qmv8",
    "cmx_qmma_t",   "cmx_qmma_n",     "cmx_splitk_sum", "cmx_qmv1f",
    "cmx_qmv2f",    "cmx_qmv4f",      "cmx_qmv8f",      "cmx_qmv1r1",
    "cmx_qmv1sg",   "cmx_qmv1sgf",    "cmx_qmv1n",      "cmx_qmv1r1n",
    "cmx_qmv1sgn",  "cmx_qmv1w",      "cmx_qmv1w1",     "cmx_qmv1w2",
    NULL};

/* QMV_MAXM: the most rows of x the matrix-vector kernels take (they take
 * any number, in blocks of 8, but past 8 the tensor-core kernel was
 * faster on an H100: 8 rows 43 us, 16 rows 77 us against 67 us); MMA_MAXM: the
 * most the tensor-core kernel takes (16-bit x; both transposes); GEMM_MINM: the
 * fewest the dequantize + cuBLASLt path takes (beyond those); QMM_T: the output
 * tile of the tiled and tensor-core kernels. */
enum { QMV_MAXM = 8, MMA_MAXM = 128, GEMM_MINM = 9, QMM_T = 64 };

static bool q_dtype_ok(cmx_dtype dt) {
  return dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 || dt == CMX_FLOAT32;
}

static bool q_bits_ok(int b) {
  return b == 2 || b == 3 || b == 4 || b == 5 || b == 6 || b == 8;
}

/* variant = dtype * 9 + bits */
static int q_variant_of(cmx_dtype dt, int bits) {
  return (int)dt * 9 + bits;
}

static bool q_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)(v / 9);
  int bits = v % 9;
  if (!q_dtype_ok(dt) || !q_bits_ok(bits)) return false;
  snprintf(out->name, sizeof out->name, "quantized_%s_%d", cmx_dtype_name(dt),
           bits);
  out->flags = 0;
  size_t n = sizeof out->prelude;
  int w = cmx__gpu_float_prelude(out->prelude, n, "CMX_Q", dt);
  if (w <= 0 || (size_t)w >= n) return false;
  int mma = dt == CMX_FLOAT16 ? 1 : dt == CMX_BFLOAT16 ? 2 : 0;
  int w2 = snprintf(out->prelude + w, n - (size_t)w,
                    "#define CMX_Q_BITS %d\n#define CMX_Q_MMA %d\n"
                    "#define CMX_SK_T CMX_Q_T\n#define CMX_SK_F float\n"
                    "#define CMX_SK_FROMF(v) CMX_Q_FROMF(v)\n",
                    bits, mma);
  return w2 > 0 && (size_t)(w + w2) < n;
}

const cmx__gpu_family cmx__gpu_family_quantized = {
    .name = "quantized",
    .file = "quantized",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES * 9,
    .variant = q_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* The dtype code cmx_q_ld reads (0 float32, 1 float16, 2 bfloat16). */
static int ld_code(cmx_dtype dt) {
  return dt == CMX_FLOAT32 ? 0 : dt == CMX_FLOAT16 ? 1 : 2;
}

static const cmx__gpu_kernel* get_kernel(int dev, cmx_dtype dt, int bits,
                                         int kernel) {
  return cmx__gpu_kernel_get(dev, &cmx__gpu_family_quantized,
                             q_variant_of(dt, bits), kernel);
}

/* The layout of the rows (first ndim - 1 dims) of a[0] (row-major index)
 * over arrays a[0..n): a[0]'s row-major strides, then each one's own. */
static void rows_layout(cmx__gpu_layout* L, const cmx_array* a, int n, int nd) {
  int64_t rm[CMX_MAX_NDIM];
  const int64_t* st[CMX__GPU_MAX_OPERANDS] = {rm};
  cmx__row_major_strides(a[0]->dims, nd, rm);
  for (int i = 1; i < n; i++) st[i] = CMX__STRIDES(a[i]);
  cmx__gpu_layout_from(L, a[0]->dims, nd, st, n);
}

static cmx_status ptrs(int dev, const cmx_array* a, int n, CUdeviceptr* p) {
  for (int i = 0; i < n; i++) {
    cmx_status st = cmx__gpu_ptr(a[i], dev, &p[i]);
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

cmx_status cmx__gpu_quantize(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_array w = in[0];
  if (!q_dtype_ok(w->dtype) || !q_bits_ok(q->bits))
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[quantize] unsupported dtype %s or bits %d",
                            cmx_dtype_name(w->dtype), q->bits);
  int dev = cmx_primitive_stream(p).device.index;
  for (int i = 0; i < 3; i++) {
    cmx_status st = cmx_kernel_alloc(out[i]);
    if (st != CMX_OK) return st;
  }
  if (w->size == 0) return CMX_OK;
  CUdeviceptr pp[4];
  cmx_array arrs[4] = {w, out[0], out[1], out[2]};
  cmx_status st = ptrs(dev, arrs, 4, pp);
  if (st != CMX_OK) return st;
  long long K = w->dims[w->ndim - 1], nrows = w->size / K;
  long long ls = CMX__STRIDES(w)[w->ndim - 1];
  int g = q->group_size;
  cmx__gpu_layout X;
  rows_layout(&X, (cmx_array[]){w, w}, 2, w->ndim - 1);
  const cmx__gpu_kernel* k = get_kernel(dev, w->dtype, q->bits, K_QUANTIZE);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, nrows * (K / g));
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  for (int i = 0; i < 4; i++) CMX__GPU_ARG(&args, pp[i]);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, K);
  CMX__GPU_ARG(&args, g);
  CMX__GPU_ARG(&args, ls);
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch("quantize", k, &cfg, &args);
  if (st == CMX_OK)
    for (int i = 0; i < 3; i++) cmx_kernel_mark_device_written(out[i]);
  return st;
}

/* One Dequantize launch: the rows of layout X (over the output, written
 * row-major, then w, scales, biases) of K values each, into y; wl, sl,
 * bl: the last-axis strides of w, scales, biases; sdt, bdt: the scales'
 * and biases' dtypes. */
typedef struct {
  int dev, g, bits;
  cmx_dtype dt, sdt, bdt;
  CUdeviceptr w, sc, bi, y;
  long long nrows, K, wl, sl, bl;
} deq_job;

static cmx_status deq_launch(const char* op, const deq_job* d,
                             const cmx__gpu_layout* X) {
  const cmx__gpu_kernel* k = get_kernel(d->dev, d->dt, d->bits, K_DEQUANTIZE);
  if (!k) return cmx_last_status();
  int sc = ld_code(d->sdt), bc = ld_code(d->bdt);
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, d->nrows * d->K);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, d->w);
  CMX__GPU_ARG(&args, d->sc);
  CMX__GPU_ARG(&args, d->bi);
  CMX__GPU_ARG(&args, d->y);
  CMX__GPU_ARG(&args, d->nrows);
  CMX__GPU_ARG(&args, d->K);
  CMX__GPU_ARG(&args, d->g);
  CMX__GPU_ARG(&args, d->wl);
  CMX__GPU_ARG(&args, d->sl);
  CMX__GPU_ARG(&args, d->bl);
  CMX__GPU_ARG(&args, sc);
  CMX__GPU_ARG(&args, bc);
  cmx__gpu_args_layout(&args, X);
  return cmx__gpu_launch(op, k, &cfg, &args);
}

cmx_status cmx__gpu_dequantize(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  if (!q_dtype_ok(o->dtype) || !q_dtype_ok(in[1]->dtype) ||
      !q_dtype_ok(in[2]->dtype) || !q_bits_ok(q->bits))
    return cmx_kernel_error(CMX_ERR_TYPE, "[dequantize] unsupported dtype");
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr pp[4];
  cmx_array arrs[4] = {in[0], in[1], in[2], o};
  st = ptrs(dev, arrs, 4, pp);
  if (st != CMX_OK) return st;
  int nd = o->ndim;
  deq_job d = {.dev = dev,
               .g = q->group_size,
               .bits = q->bits,
               .dt = o->dtype,
               .sdt = in[1]->dtype,
               .bdt = in[2]->dtype,
               .w = pp[0],
               .sc = pp[1],
               .bi = pp[2],
               .y = pp[3],
               .K = o->dims[nd - 1],
               .wl = CMX__STRIDES(in[0])[nd - 1],
               .sl = CMX__STRIDES(in[1])[nd - 1],
               .bl = CMX__STRIDES(in[2])[nd - 1]};
  d.nrows = o->size / d.K;
  cmx__gpu_layout X;
  rows_layout(&X, (cmx_array[]){o, in[0], in[1], in[2]}, 4, nd - 1);
  st = deq_launch("dequantize", &d, &X);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* The kernels' argument struct (cmx_qmm_args in quantized.cu: pointers,
 * then long longs, then ints, no padding inside). */
typedef struct {
  CUdeviceptr x, w, sc, bi, y;
  long long M, N, K, xm, xk, wr, sr, br;
  int g, scode, bcode;
} qmm_args;

/* A QuantizedMatmul call, gathered once for every path. */
typedef struct {
  const char* op;
  int dev, bits, transpose, nd;
  cmx_dtype dt;
  cmx_array x, w, sc, bi, o;
  qmm_args A;
  long long nbatch;
  cmx__gpu_layout Bt; /* batch: output (row-major), x, w, scales, biases */
} qmm_call;

static bool aligned(uint64_t v, uint64_t a) {
  return v % a == 0;
}

/* Whether x can be read by 16-byte loads: contiguous rows, every row
 * start aligned. */
static int x_vec(const qmm_call* c) {
  const qmm_args* A = &c->A;
  size_t esz = cmx_dtype_size(c->dt);
  int xvec = A->xk == 1 && aligned(A->x, 16) &&
             (A->M == 1 || aligned((uint64_t)A->xm * esz, 16));
  for (int d = 0; d < c->Bt.ndim; d++)
    xvec = xvec && aligned((uint64_t)c->Bt.strides[1][d] * esz, 16);
  return xvec;
}

/* CMX_CUDA_QMV=fast: the matrix-vector kernels cmx_qmv<MT>f (more weight
 * rows a block, 4 and 8 bits without integer -> float conversions); not
 * the default: timed on an H200 on SmolLM2's decoding shapes (K 576 and
 * 1536, float32 x) it took 9-11 us a call where cmx_qmv1 takes 4-4.8
 * (fewer blocks, each a longer dependent chain). The qmv cases of
 * tests/python/test_fast_gpu.py run both kernels. */
typedef enum { QMV_AUTO, QMV_FAST, QMV_R1, QMV_R2, QMV_W, QMV_W1, QMV_W2 } qmv_force;
/* CMX_CUDA_QMV, read once a call (the helpers below take it). */
static qmv_force qmv_forced(void) {
  const char* e = getenv("CMX_CUDA_QMV");
  if (!e) return QMV_AUTO;
  return !strcmp(e, "fast") ? QMV_FAST
         : !strcmp(e, "r1") ? QMV_R1
         : !strcmp(e, "r2") ? QMV_R2
         : !strcmp(e, "w")  ? QMV_W
         : !strcmp(e, "w1") ? QMV_W1
         : !strcmp(e, "w2") ? QMV_W2
                            : QMV_AUTO;
}

/* One weight row a block for one row of x (cmx_qmv1r1: twice the blocks
 * of cmx_qmv1, half the work a thread) when N is at most QMV_R1_MAXN.
 * Timed on an H200 on SmolLM2's decoding shapes (float32 x, 4 bits,
 * groups of 32), a call: N 960, 576 (K 576) and 576 (K 1536) 4.07, 4.02,
 * 4.68 us with two rows a block, 3.72, 3.69, 3.91 with one; N 3072
 * 4.78 against 5.60 and N 49152 27.9 against 42.4 (there the blocks
 * already fill the GPU). CMX_CUDA_QMV=r1 / r2 force one / two rows. */
enum { QMV_R1_MAXN = 1024 };

/* A warp for each 4 weight rows, 8 warps a block (cmx_qmv1w), for one row
 * of x when N is at least QMV_W_MINN and K at most 32 chunks (1024
 * values): cmx_qmv1 would give each block 2 rows and one warp (the
 * threads split K, and there are too few chunks for more), so the device
 * holds 32 warps an SM, half its 64, with 18 of 32 lanes busy at K 576.
 * An LM head is that shape (SmolLM2: K 576, N 49152: cmx_qmv1 took 33 us
 * on an H200, its bytes 4.4 at the memory's speed). The sums are
 * cmx_qmv1's, bit for bit. Beyond NORM_QMV_MAX_BLOCKS' 4096 blocks, so
 * the fused norm kernels never meet it. CMX_CUDA_QMV=r2 keeps cmx_qmv1;
 * CMX_CUDA_QMV=w takes it whatever N and K, and w1 / w2 the same kernel
 * with 1 / 2 weight rows a warp (cmx_qmv1w1, cmx_qmv1w2: more warps for
 * a long K, where a lane takes several chunks; tests and timings). */
enum { QMV_W_MINN = 16384, QMV_W_MAXCH = 32, QMV_W_ROWS = 4, QMV_W_WARPS = 8 };
static bool warps_qmv(qmv_force f, long long n, long long nch) {
  if (f == QMV_W || f == QMV_W1 || f == QMV_W2) return true;
  if (f == QMV_R1 || f == QMV_R2 || f == QMV_FAST) return false;
  return n >= QMV_W_MINN && nch <= QMV_W_MAXCH;
}
static bool r1_qmv(qmv_force f, long long n) {
  return f == QMV_R1 || (f != QMV_R2 && f != QMV_W && f != QMV_W1 &&
                         f != QMV_W2 && n <= QMV_R1_MAXN);
}

/* A matrix-vector launch: the kernel (K_*), the grid's x size, the
 * threads a block (they split K: thread t takes chunks t, t + T, ...),
 * the packed rows' word alignment and whether x takes 16-byte loads. */
typedef struct {
  int kernel, wal, xvec;
  long long grid, T;
} qmv_plan;

/* The matrix-vector kernels: ceil(M / MT) blocks of MT rows of x per R
 * weight rows. sg (QuantizedMatmulSwiGLU, one row of x): cmx_qmv1sg(f),
 * N / 2 blocks of the rows j and j + N / 2, with the threads a block the
 * QuantizedMatmul launch of the same call takes, so each row's sum is
 * the same float32 sum, bit for bit. AddRMSNormQuantizedMatmul's launch
 * takes this plan too (its kernels' sums are these kernels'). */
static cmx_status qmv_plan_make(const qmm_call* c, bool sg, qmv_plan* pl) {
  const qmm_args* A = &c->A;
  int MT = A->M <= 1 ? 1 : A->M <= 2 ? 2 : A->M <= 4 ? 4 : 8;
  int lg = MT == 1 ? 0 : MT == 2 ? 1 : MT == 4 ? 2 : 3;
  const qmv_force force = qmv_forced();
  bool fast = force == QMV_FAST;
  bool r1 = !fast && MT == 1 && r1_qmv(force, A->N);
  int kernel = fast ? K_QMV1F + lg : r1 ? K_QMV1R1 : K_QMV1 + lg;
  /* weight rows a block: 2 (r1: 1), or (fast) cmx_qmv_rows in
   * quantized.cu */
  int R = r1     ? 1
          : !fast ? 2
          : MT == 1 ? (c->bits <= 4 ? 8 : 4)
          : MT == 2 ? 4
                    : 2;
  if (sg) kernel = fast ? K_QMV1SGF : K_QMV1SG;
  long long mblocks = (A->M + MT - 1) / MT, nblocks = (A->N + R - 1) / R;
  long long blocks = mblocks * nblocks, nch = A->K / 32;
  /* the threads follow the QuantizedMatmul grid (blocks); the grid: */
  long long grid = sg ? A->N / 2 : blocks;
  if (blocks > 0x7fffffffLL)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many output columns",
                            c->op);
  /* threads split K: 128 a block, more while the grid is too small to
   * fill the device and every thread still gets a chunk, fewer when K is
   * short */
  const cmx__gpu_device* gd = cmx__gpu_device_get(c->dev);
  long long fill = (gd ? gd->sm_count : 132) * 1024LL;
  long long T = 128;
  long long Tmax = fast ? 256 : 512; /* the kernels' launch bounds */
  while (T < Tmax && 2 * T <= nch && blocks * c->nbatch * T < fill) T *= 2;
  if (nch < T) T = nch < 32 ? 32 : (nch + 31) / 32 * 32;
  /* packed row starts: the widest alignment (words) all of them have */
  int wal = 4;
  while (wal > 1) {
    bool ok = aligned(A->w, 4ull * (uint64_t)wal) &&
              aligned((uint64_t)A->wr, (uint64_t)wal);
    for (int d = 0; d < c->Bt.ndim; d++)
      ok = ok && aligned((uint64_t)c->Bt.strides[2][d], (uint64_t)wal);
    if (ok) break;
    wal /= 2;
  }
  if (!fast && !r1 && !sg && MT == 1 && warps_qmv(force, A->N, nch)) {
    const int per_warp = force == QMV_W1 ? 1 : force == QMV_W2 ? 2 : QMV_W_ROWS;
    const long long rows = (long long)per_warp * QMV_W_WARPS;
    kernel = per_warp == 1 ? K_QMV1W1 : per_warp == 2 ? K_QMV1W2 : K_QMV1W;
    grid = (A->N + rows - 1) / rows;
    T = 32 * QMV_W_WARPS;
  }
  *pl = (qmv_plan){
      .kernel = kernel, .wal = wal, .xvec = x_vec(c), .grid = grid, .T = T};
  return CMX_OK;
}

static cmx_status qmv_launch(const qmm_call* c, bool sg) {
  qmv_plan pl;
  cmx_status st = qmv_plan_make(c, sg, &pl);
  if (st != CMX_OK) return st;
  const cmx__gpu_kernel* k = get_kernel(c->dev, c->dt, c->bits, pl.kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = {
      {(unsigned)pl.grid, (unsigned)c->nbatch, 1}, {(unsigned)pl.T, 1, 1}, 0};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, c->A);
  CMX__GPU_ARG(&args, pl.wal);
  CMX__GPU_ARG(&args, pl.xvec);
  cmx__gpu_args_layout(&args, &c->Bt);
  return cmx__gpu_launch(c->op, k, &cfg, &args);
}

/* The tiled kernel (any M, either transpose). */
static cmx_status tiled_launch(const qmm_call* c) {
  const qmm_args* A = &c->A;
  const cmx__gpu_kernel* k =
      get_kernel(c->dev, c->dt, c->bits, c->transpose ? K_QMM_T : K_QMM_N);
  if (!k) return cmx_last_status();
  long long gy = (A->M + QMM_T - 1) / QMM_T;
  if (gy > 65535)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", c->op,
                            (long long)A->M);
  cmx__gpu_cfg cfg = {{(unsigned)((A->N + QMM_T - 1) / QMM_T), (unsigned)gy,
                       (unsigned)c->nbatch},
                      {256, 1, 1},
                      0};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, *A);
  cmx__gpu_args_layout(&args, &c->Bt);
  return cmx__gpu_launch(c->op, k, &cfg, &args);
}

/* The tensor-core kernel (16-bit x): 64 x 64 outputs a block, K split
 * S ways when the grid would leave most of the device idle (the float32
 * partials summed by cmx_splitk_sum). */
static cmx_status mma_launch(const qmm_call* c) {
  const qmm_args* A = &c->A;
  const cmx__gpu_kernel* k =
      get_kernel(c->dev, c->dt, c->bits, c->transpose ? K_QMMA_T : K_QMMA_N);
  if (!k) return cmx_last_status();
  long long gx = (A->N + QMM_T - 1) / QMM_T, gy = (A->M + QMM_T - 1) / QMM_T;
  if (gy > 65535)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", c->op,
                            (long long)A->M);
  const cmx__gpu_device* gd = cmx__gpu_device_get(c->dev);
  long long sm = gd ? gd->sm_count : 132, nch = A->K / 32;
  long long blocks = gx * gy * c->nbatch;
  int S = 1;
  /* about 4 blocks an SM (a block's steps wait on their loads: the
   * latency is hidden across blocks), at least 4 chunks a split */
  while (blocks * S * 2 <= 4 * sm && nch / (S * 2) >= 4 &&
         c->nbatch * S * 2 <= 65535)
    S *= 2;
  cmx__buffer* part = NULL;
  long long n = c->nbatch * A->M * A->N;
  if (S > 1) {
    part = cmx__device_hooks->alloc_device((size_t)(S * n) * sizeof(float),
                                           c->dev);
    if (!part) return cmx_last_status();
  }
  CUdeviceptr pp = part ? part->dev : 0;
  int xvec = x_vec(c);
  cmx__gpu_cfg cfg = {
      {(unsigned)gx, (unsigned)gy, (unsigned)(c->nbatch * S)}, {256, 1, 1}, 0};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, *A);
  CMX__GPU_ARG(&args, S);
  CMX__GPU_ARG(&args, xvec);
  CMX__GPU_ARG(&args, pp);
  cmx__gpu_args_layout(&args, &c->Bt);
  cmx_status st = cmx__gpu_launch(c->op, k, &cfg, &args);
  if (st == CMX_OK && part) {
    const cmx__gpu_kernel* ks = get_kernel(c->dev, c->dt, c->bits, K_QMM_SUM);
    if (!ks) st = cmx_last_status();
    if (st == CMX_OK) {
      cmx__gpu_cfg cs = cmx__gpu_cfg_for(ks, n);
      cmx__gpu_args a2;
      cmx__gpu_args_init(&a2);
      CMX__GPU_ARG(&a2, pp);
      CMX__GPU_ARG(&a2, A->y);
      CMX__GPU_ARG(&a2, n);
      CMX__GPU_ARG(&a2, S);
      st = cmx__gpu_launch(c->op, ks, &cs, &a2);
    }
  }
  if (part) cmx__buffer_release(part);
  return st;
}

/* Dequantize + cuBLASLt, for a batch that is one strided run (Bt of at
 * most one dim): the stored matrices (R x C each; one when the weights
 * are the same for every batch entry) dequantized row-major into a
 * scratch buffer of the output dtype, then one (batched) product. Sets
 * *done to false (nothing launched) when the call does not fit. */
static cmx_status gemm_path(const qmm_call* c, bool* done) {
  *done = false;
  const qmm_args* A = &c->A;
  if (c->Bt.ndim > 1 || !cmx__cublaslt_available(NULL)) return CMX_OK;
  long long R = c->transpose ? A->N : A->K, C = c->transpose ? A->K : A->N;
  bool shared = true; /* one weight matrix for the whole batch */
  for (int d = 0; d < c->Bt.ndim; d++)
    for (int a = 2; a < 5; a++) shared = shared && c->Bt.strides[a][d] == 0;
  long long nw = shared ? 1 : c->nbatch;
  size_t esz = cmx_dtype_size(c->dt);
  cmx__buffer* buf =
      cmx__device_hooks->alloc_device((size_t)(nw * R * C) * esz, c->dev);
  if (!buf) return cmx_last_status();
  *done = true;
  deq_job d = {.dev = c->dev,
               .g = A->g,
               .bits = c->bits,
               .dt = c->dt,
               .sdt = c->sc->dtype,
               .bdt = c->bi->dtype,
               .w = A->w,
               .sc = A->sc,
               .bi = A->bi,
               .y = buf->dev,
               .nrows = nw * R,
               .K = C,
               .wl = 1,
               .sl = 1,
               .bl = 1};
  /* the rows: (batch when not shared, R), row-major in the scratch */
  int64_t shape[2] = {nw, R}, rm[2] = {R * C, C};
  int64_t ws[2] = {nw > 1 ? c->Bt.strides[2][0] : 0, A->wr},
          ss[2] = {nw > 1 ? c->Bt.strides[3][0] : 0, A->sr},
          bs[2] = {nw > 1 ? c->Bt.strides[4][0] : 0, A->br};
  cmx__gpu_layout X;
  cmx__gpu_layout_from(&X, shape, 2, (const int64_t* const[]){rm, ws, ss, bs},
                       4);
  cmx_status st = deq_launch(c->op, &d, &X);
  if (st == CMX_OK) {
    cmx__gpu_gemm_desc g = {.dt = c->dt,
                            .M = A->M,
                            .N = A->N,
                            .K = A->K,
                            .batch = c->nbatch,
                            .a = A->x,
                            .b = buf->dev,
                            .d = A->y,
                            .a_rs = A->xm,
                            .a_cs = A->xk,
                            .a_bs = c->Bt.ndim ? c->Bt.strides[1][0] : 0,
                            .b_rs = c->transpose ? 1 : C,
                            .b_cs = c->transpose ? C : 1,
                            .b_bs = nw > 1 ? R * C : 0,
                            .d_rs = A->N,
                            .d_bs = A->M * A->N};
    st = cmx__gpu_gemm(c->op, c->dev, &g);
  }
  cmx__buffer_release(buf);
  return st;
}

/* CMX_QMM_PATH (tests, benchmarks) forces the kernel of products that
 * are not matrix-vector ones: "mma" (16-bit x), "gemm" (dequantize +
 * cuBLASLt where it fits), "tiled"; and with any of them, matrix-vector
 * shapes too. Unset or anything else: the choice by shape. */
typedef enum { PATH_AUTO, PATH_MMA, PATH_GEMM, PATH_TILED } qmm_path;
static qmm_path forced_path(void) {
  const char* e = getenv("CMX_QMM_PATH");
  if (!e) return PATH_AUTO;
  return strcmp(e, "mma") == 0     ? PATH_MMA
         : strcmp(e, "gemm") == 0  ? PATH_GEMM
         : strcmp(e, "tiled") == 0 ? PATH_TILED
                                   : PATH_AUTO;
}

/* Whether a's last dim (of nd) steps by one element, or has one. */
static bool unit_last(cmx_array a, int nd) {
  return a->dims[nd - 1] == 1 || CMX__STRIDES(a)[nd - 1] == 1;
}

/* Checks a QuantizedMatmul(SwiGLU) call of parameters q on device dev,
 * allocates its output and fills c (op names it); sg: the output has half
 * the product's columns (A.N is the product's). Sets *empty when there is
 * nothing to compute. */
static cmx_status qmm_setup(const char* op, const cmx__quant_params* q, int dev,
                            const cmx_array* in, const cmx_array* out, bool sg,
                            qmm_call* cp, bool* empty) {
  *empty = false;
  if (q->mode != CMX__QMODE_AFFINE) /* the op composes these on the GPU */
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the GPU kernel reads the affine mode only "
                            "(mode %d)",
                            op, q->mode);
  qmm_call c = {.op = op,
                .bits = q->bits,
                .transpose = q->transpose,
                .x = in[0],
                .w = in[1],
                .sc = in[2],
                .bi = in[3],
                .o = out[0]};
  c.dt = c.o->dtype;
  if (!q_dtype_ok(c.dt) || c.x->dtype != c.dt || !q_dtype_ok(c.sc->dtype) ||
      !q_dtype_ok(c.bi->dtype) || !q_bits_ok(q->bits))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", c.op,
                            cmx_dtype_name(c.dt));
  int nd = c.nd = c.o->ndim;
  /* a size-1 last dim (one group a row) has no step to check: a broadcast
   * view may give it any stride */
  if (!unit_last(c.w, nd) || !unit_last(c.sc, nd) || !unit_last(c.bi, nd))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the GPU kernel needs row-contiguous packed "
                            "weights, scales and biases",
                            c.op);
  c.dev = dev;
  cmx_status st = cmx_kernel_alloc(c.o);
  if (st != CMX_OK || c.o->size == 0) {
    *empty = true;
    return st;
  }
  CUdeviceptr pp[5];
  st = ptrs(c.dev, (cmx_array[]){c.x, c.w, c.sc, c.bi, c.o}, 5, pp);
  if (st != CMX_OK) return st;
  qmm_args* A = &c.A;
  *A = (qmm_args){.x = pp[0], .w = pp[1], .sc = pp[2], .bi = pp[3], .y = pp[4]};
  A->M = c.o->dims[nd - 2];
  A->N = c.o->dims[nd - 1] * (sg ? 2 : 1);
  A->K = c.x->dims[nd - 1];
  A->xm = CMX__STRIDES(c.x)[nd - 2];
  A->xk = CMX__STRIDES(c.x)[nd - 1];
  A->wr = CMX__STRIDES(c.w)[nd - 2];
  A->sr = CMX__STRIDES(c.sc)[nd - 2];
  A->br = CMX__STRIDES(c.bi)[nd - 2];
  A->g = q->group_size;
  A->scode = ld_code(c.sc->dtype);
  A->bcode = ld_code(c.bi->dtype);
  c.nbatch = c.o->size / (A->M * c.o->dims[nd - 1]);
  if (c.nbatch > 65535)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] more than 65535 matrices in one batch", c.op);
  int64_t brm[CMX_MAX_NDIM];
  cmx__row_major_strides(c.o->dims, nd - 2, brm);
  cmx__gpu_layout_from(
      &c.Bt, c.o->dims, nd - 2,
      (const int64_t* const[]){brm, CMX__STRIDES(c.x), CMX__STRIDES(c.w),
                               CMX__STRIDES(c.sc), CMX__STRIDES(c.bi)},
      5);
  *cp = c;
  return CMX_OK;
}

cmx_status cmx__gpu_quantized_matmul(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  qmm_call c;
  bool empty;
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st =
      qmm_setup("quantized_matmul", q, dev, in, out, false, &c, &empty);
  if (st != CMX_OK || empty) return st;
  qmm_args* A = &c.A;
  qmm_path path = forced_path();
  const cmx__gpu_device* gd = cmx__gpu_device_get(c.dev);
  /* mma.sync of 16-bit inputs: compute capability 8.0 on */
  bool half = c.dt != CMX_FLOAT32 && gd && gd->cc_major >= 8, done = false;
  if (path == PATH_TILED)
    st = tiled_launch(&c);
  else if (path == PATH_AUTO && q->transpose && A->M <= QMV_MAXM)
    st = qmv_launch(&c, false);
  else if (half &&
           (path == PATH_MMA || (path == PATH_AUTO && A->M <= MMA_MAXM)))
    st = mma_launch(&c);
  else {
    if (path == PATH_GEMM || A->M >= GEMM_MINM) st = gemm_path(&c, &done);
    if (st == CMX_OK && !done) st = tiled_launch(&c);
  }
  if (st == CMX_OK) cmx_kernel_mark_device_written(c.o);
  return st;
}

cmx_status cmx__gpu_quantized_matmul_swiglu(const cmx_primitive* p,
                                            const cmx_array* in, int nin,
                                            const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const char* op = "quantized_matmul_swiglu";
  const cmx__quant_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  if (!q->transpose || o->ndim < 2 || o->dims[o->ndim - 2] != 1)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the GPU kernel takes transposed weights "
                            "and one row of x",
                            op);
  qmm_call c;
  bool empty;
  cmx_status st = qmm_setup(op, q, cmx_primitive_stream(p).device.index, in,
                            out, true, &c, &empty);
  if (st != CMX_OK || empty) return st;
  st = qmv_launch(&c, true);
  if (st == CMX_OK) cmx_kernel_mark_device_written(c.o);
  return st;
}

/* ---------------- AddRMSNormQuantizedMatmul ---------------- */

/* cmx_qn_args in quantized.cu, field for field (pointers, long longs,
 * then 4-byte fields: no padding). */
typedef struct {
  CUdeviceptr x, r, w, h;
  long long D, lx, lr;
  float eps;
  int G, packed, hw;
} qn_args;

/* Whether the one-launch kernel gives this call exactly the unfused ops'
 * results: the product would take the one-row matrix-vector kernels (no
 * forced path, not CMX_CUDA_QMV=fast, whose sums have no fused kernel),
 * and AddRMSNorm its register kernel (D a whole number of 16-byte
 * vectors, at most 4 a thread, weight contiguous; the rest is checked
 * in cmx__gpu_add_rms_norm_qmm). */
static bool norm_qmm_fits(const cmx__norm_qmm_params* q, const cmx_array* in,
                          const cmx_array* out) {
  int nw = q->norm.has_weight != 0;
  cmx_array x = in[0], r = in[1], w = nw ? in[2] : NULL, o = out[1];
  cmx_dtype dt = x->dtype;
  int nd = x->ndim;
  if (!q_dtype_ok(dt) || r->dtype != dt || o->dtype != dt ||
      (w && (w->dtype != dt || w->ndim != 1 || CMX__STRIDES(w)[0] != 1)) ||
      !q->q.transpose || q->q.mode != CMX__QMODE_AFFINE ||
      !q_bits_ok(q->q.bits) || qmv_forced() == QMV_FAST ||
      (!q->swiglu && forced_path() != PATH_AUTO))
    return false;
  long long D = x->dims[nd - 1], V = 16 / (long long)cmx_dtype_size(dt);
  return nd >= 2 && o->ndim == nd && x->dims[nd - 2] == 1 && D > 0 &&
         D % 32 == 0 && D % V == 0 && D / V <= 4 * 1024 && x->size > 0 &&
         o->size > 0;
}

/* The most blocks the fused launch takes (its grid times the batch): each
 * block repeats the norm's reads and sums (about as many instructions as
 * a one-row block's share of the product at K 576), which a grid of one
 * wave hides behind the launch it saves (SmolLM2's qkv: 960 blocks,
 * gate_up: 1536), and a long grid pays block after block (the tied output
 * projection: 24576). Past it, the two launches. Not measured: a bound
 * from counting, between those shapes. */
enum { NORM_QMV_MAX_BLOCKS = 4096 };

/* The product's columns (QuantizedMatmulSwiGLU's consumer: both halves):
 * the packed weights' rows. */
static long long o_cols(const cmx__norm_qmm_params* q, const cmx_array* in) {
  cmx_array wq = in[2 + (q->norm.has_weight != 0)];
  return wq->dims[wq->ndim - 2];
}

cmx_status cmx__gpu_add_rms_norm_qmm(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout) {
  const char* op = "add_rms_norm_quantized_matmul";
  const cmx__norm_qmm_params* q = cmx_primitive_params(p);
  int nw = q->norm.has_weight != 0;
  if (nin != 5 + nw || nout != 2)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] %d inputs, %d outputs", op,
                            nin, nout);
  if (!norm_qmm_fits(q, in, out))
    return cmx__norm_qmm_two_step(p, in, nin, out, nout);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_array x = in[0], r = in[1], w = nw ? in[2] : NULL, h = out[0];
  cmx_dtype dt = x->dtype;
  int nd = x->ndim;
  long long D = x->dims[nd - 1], V = 16 / (long long)cmx_dtype_size(dt);
  long long nv = D / V;
  int G = cmx__gpu_addnorm_vec_threads(dev, dt, D);
  if (!G) return cmx_last_status();
  CUdeviceptr pw = 0;
  cmx_status st = w ? cmx__gpu_ptr(w, dev, &pw) : CMX_OK;
  if (st != CMX_OK) return st;
  /* y as the product's kernel reads it: each 32-value chunk followed by
   * 16 bytes of padding (the threads reading chunks t, t + 1, ... then
   * hit distinct banks) */
  size_t shared = (size_t)(D / 32) * (size_t)(32 + V) * cmx_dtype_size(dt);
  /* the kernel qmv_plan_make picks for one row of x without
   * CMX_CUDA_QMV=fast, with the norm first */
  long long ncol = o_cols(q, in);
  const qmv_force force = qmv_forced();
  bool r1 = r1_qmv(force, ncol);
  int kernel = q->swiglu ? K_QMV1SGN : r1 ? K_QMV1R1N : K_QMV1N;
  long long blocks = (q->swiglu ? ncol / 2 : r1 ? ncol : (ncol + 1) / 2) *
                     (x->size / D);
  const cmx__gpu_kernel* k = get_kernel(dev, dt, q->q.bits, kernel);
  if (!k) return cmx_last_status();
  /* the unfused register kernel covers 4 * G vectors (beyond: garbage,
   * which the two-step path reproduces); y must fit in shared memory */
  if (pw % 16 || 4LL * G < nv || blocks > NORM_QMV_MAX_BLOCKS ||
      (!q->swiglu && !r1 && warps_qmv(force, ncol, D / 32)) ||
      shared > (size_t)atomic_load(&k->dynamic_shared))
    return cmx__norm_qmm_two_step(p, in, nin, out, nout);
  st = cmx_kernel_alloc(h);
  if (st != CMX_OK) return st;
  /* the product's call, h standing for y (its shape, dtype and fresh
   * row-major buffer; the kernel reads y from shared memory instead) */
  const cmx_array qin[4] = {h, in[2 + nw], in[3 + nw], in[4 + nw]};
  qmm_call c;
  bool empty;
  st = qmm_setup(op, &q->q, dev, qin, &out[1], q->swiglu != 0, &c, &empty);
  if (st != CMX_OK || empty) return st;
  qmv_plan pl;
  st = qmv_plan_make(&c, q->swiglu != 0, &pl);
  if (st != CMX_OK) return st;
  int want = pl.kernel == K_QMV1SG   ? K_QMV1SGN
             : pl.kernel == K_QMV1R1 ? K_QMV1R1N
             : pl.kernel == K_QMV1   ? K_QMV1N
                                     : -1;
  if (want != kernel) /* the choice above is qmv_plan_make's */
    return cmx_kernel_error(CMX_ERR_RUNTIME,
                            "[%s] fused kernel %d for mat-vec kernel %d", op,
                            kernel, pl.kernel);
  qn_args N = {.D = D,
               .lx = CMX__STRIDES(x)[nd - 1],
               .lr = CMX__STRIDES(r)[nd - 1],
               .eps = q->norm.eps,
               .G = G,
               .hw = w != NULL};
  CUdeviceptr pp[3];
  st = ptrs(dev, (cmx_array[]){x, r, h}, 3, pp);
  if (st != CMX_OK) return st;
  N.x = pp[0];
  N.r = pp[1];
  N.h = pp[2];
  N.w = pw;
  if (N.h % 16) /* device buffers are whole allocations, 256-byte aligned */
    return cmx_kernel_error(CMX_ERR_RUNTIME,
                            "[%s] h's fresh buffer is not 16-byte aligned", op);
  /* rows of x and r: row-major index (the batch entry) -> offsets */
  int64_t rm[CMX_MAX_NDIM];
  cmx__row_major_strides(x->dims, nd - 1, rm);
  cmx__gpu_layout X;
  cmx__gpu_layout_from(
      &X, x->dims, nd - 1,
      (const int64_t* const[]){rm, CMX__STRIDES(x), CMX__STRIDES(r)}, 3);
  N.packed = N.lx == 1 && N.lr == 1 && N.x % 16 == 0 && N.r % 16 == 0;
  for (int d = 0; N.packed && d < X.ndim; d++)
    N.packed = X.strides[1][d] % V == 0 && X.strides[2][d] % V == 0;
  cmx__gpu_cfg cfg = {{(unsigned)pl.grid, (unsigned)c.nbatch, 1},
                      {(unsigned)pl.T, 1, 1},
                      shared};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, c.A);
  CMX__GPU_ARG(&args, pl.wal);
  cmx__gpu_args_layout(&args, &c.Bt);
  CMX__GPU_ARG(&args, N);
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) {
    cmx_kernel_mark_device_written(h);
    cmx_kernel_mark_device_written(c.o);
  }
  return st;
}
