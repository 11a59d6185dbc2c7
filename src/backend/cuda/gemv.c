/* Matrix-vector products by cmx's own kernels (kernels/gemv.cu): a
 * product with one output row or column reads its matrix once, so it is
 * bound by memory bandwidth, which these kernels reach with 16-byte loads
 * and enough of them in flight.
 *   - A read along k (unit stride on k: W @ x with W row-major, or x @ W
 *     with W a transposed view): a warp per output, the warp's lanes
 *     striding over k, summed with shuffles (cmx_gemv_rows_*).
 *   - A read along the outputs (unit stride on r: x @ W with W row-major):
 *     a block per tile of outputs, its threads split over k, summed in
 *     shared memory; when the tiles are fewer than the multiprocessors, k
 *     is split over blocks too and a second kernel sums the splits
 *     (cmx_gemv_cols_*, cmx_splitk_sum). Deterministic either way.
 * Accumulation is in float32. Other layouts, float32 read along the
 * outputs (cuBLASLt's gemv was faster there on the H100), float64,
 * complex64 and dot products (R == 1) stay with cuBLASLt.
 * Measured on an H100 (benchmarks/gpu_rows_bench.py, 4096 x 4096, cmx /
 * cuBLASLt / torch): W @ x float32 28.3 / 31.2 / 29.6 us, bfloat16
 * 11.2 / 15.3 / 28.9 us; x @ W bfloat16 13.8 / 15.8 / 19.8 us.
 */
#include "backend/cuda/gemv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", "splitk",
                                         NULL};
enum { K_ROWS_V, K_ROWS_S, K_COLS_V, K_COLS_S, K_SUM };
static const char* const k_kernels[] = {"cmx_gemv_rows_v", "cmx_gemv_rows_s",
                                        "cmx_gemv_cols_v", "cmx_gemv_cols_s",
                                        "cmx_splitk_sum",  NULL};

static bool gemv_variant(int v, cmx__gpu_variant* out) {
  if (!cmx__gpu_float_variant(v, "gemv", out)) return false;
  size_t n = sizeof out->prelude, w = strlen(out->prelude);
  int w2 = snprintf(out->prelude + w, n - w,
                    "#define CMX_SK_T CMX_S_T\n#define CMX_SK_F CMX_S_F\n"
                    "#define CMX_SK_FROMF(v) CMX_S_FROMF(v)\n");
  return w2 > 0 && w + (size_t)w2 < n;
}

const cmx__gpu_family cmx__gpu_family_gemv = {
    .name = "gemv",
    .file = "gemv",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = gemv_variant,
    .shape = {CMX__GPU_CUSTOM, 256, 0}};

static bool enabled(void) {
  const char* e = getenv("CMX_CUDA_GEMV");
  return !(e && e[0] == '0' && e[1] == 0);
}

static const cmx__gpu_kernel* kernel(int dev, cmx_dtype dt, int k) {
  return cmx__gpu_kernel_get(dev, &cmx__gpu_family_gemv, (int)dt, k);
}

/* Starts the arguments every product kernel takes first: A, lda, x, incx,
 * y. */
static void first_args(cmx__gpu_args* args, const cmx__gpu_gemv_desc* g,
                       long long lda) {
  long long incx = g->incx;
  cmx__gpu_args_init(args);
  CMX__GPU_ARG(args, g->a);
  CMX__GPU_ARG(args, lda);
  CMX__GPU_ARG(args, g->x);
  CMX__GPU_ARG(args, incx);
  CMX__GPU_ARG(args, g->y);
}

static cmx_status rows(const char* op, int dev, const cmx__gpu_gemv_desc* g,
                       bool vec, int sms) {
  const cmx__gpu_kernel* k = kernel(dev, g->dt, vec ? K_ROWS_V : K_ROWS_S);
  if (!k) return cmx_last_status();
  unsigned t = k->max_threads >= 256 ? 256 : 32;
  int64_t warps = t / 32, blocks = (g->R + warps - 1) / warps,
          cap = (int64_t)sms * 16;
  cmx__gpu_cfg cfg = {
      {(unsigned)(blocks < cap ? blocks : cap), 1, 1}, {t, 1, 1}, 0};
  long long M = g->R, K = g->K;
  cmx__gpu_args args;
  first_args(&args, g, g->so);
  CMX__GPU_ARG(&args, M);
  CMX__GPU_ARG(&args, K);
  return cmx__gpu_launch(op, k, &cfg, &args);
}

static cmx_status cols(const char* op, int dev, const cmx__gpu_gemv_desc* g,
                       bool vec, int sms) {
  const cmx__gpu_kernel* k = kernel(dev, g->dt, vec ? K_COLS_V : K_COLS_S);
  if (!k) return cmx_last_status();
  int64_t esz = (int64_t)cmx_dtype_size(g->dt), V = vec ? 16 / esz : 1;
  unsigned tx = vec ? 8 : 32, ty = vec ? 64 : 16;
  while (tx * ty > (unsigned)k->max_threads && ty > 1) ty /= 2;
  int64_t width = (int64_t)tx * V, tiles = (g->R + width - 1) / width;
  /* k split over blocks when the tiles leave multiprocessors idle, each
   * split keeping at least 4 rows a thread */
  int64_t splits = 1;
  if (tiles < sms) {
    splits = (2 * (int64_t)sms + tiles - 1) / tiles;
    int64_t most = g->K / (4 * (int64_t)ty);
    if (splits > most) splits = most > 1 ? most : 1;
    if (splits > 65535) splits = 65535;
  }
  long long kc = (g->K + splits - 1) / splits;
  splits = (g->K + kc - 1) / kc;
  cmx__buffer* part = NULL;
  CUdeviceptr pp = 0;
  size_t psz = g->dt == CMX_FLOAT64 ? 8 : 4;
  if (splits > 1) {
    part = cmx__device_hooks->alloc_device((size_t)splits * (size_t)g->R * psz,
                                           dev);
    if (!part) return cmx_last_status();
    pp = part->dev;
  }
  cmx__gpu_cfg cfg = {{(unsigned)tiles, (unsigned)splits, 1}, {tx, ty, 1}, 0};
  long long N = g->R, K = g->K;
  cmx__gpu_args args;
  first_args(&args, g, g->sk);
  CMX__GPU_ARG(&args, pp);
  CMX__GPU_ARG(&args, N);
  CMX__GPU_ARG(&args, K);
  CMX__GPU_ARG(&args, kc);
  cmx_status st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK && splits > 1) {
    const cmx__gpu_kernel* s = kernel(dev, g->dt, K_SUM);
    if (!s) {
      st = cmx_last_status();
    } else {
      int ns = (int)splits;
      cmx__gpu_args a2;
      cmx__gpu_args_init(&a2);
      CMX__GPU_ARG(&a2, pp);
      CMX__GPU_ARG(&a2, g->y);
      CMX__GPU_ARG(&a2, N);
      CMX__GPU_ARG(&a2, ns);
      int64_t b = (g->R + 255) / 256;
      cmx__gpu_cfg c2 = {
          {(unsigned)(b < 65535 ? b : 65535), 1, 1}, {256, 1, 1}, 0};
      st = cmx__gpu_launch(op, s, &c2, &a2);
    }
  }
  if (part) cmx__buffer_release(part);
  return st;
}

cmx_status cmx__gpu_gemv(const char* op, int dev, const cmx__gpu_gemv_desc* g,
                         bool* done) {
  *done = false;
  if (!enabled() || g->R < 2 || g->K < 1 || g->R > 0x7fffffffll * 64 ||
      (g->dt != CMX_FLOAT32 && g->dt != CMX_FLOAT16 && g->dt != CMX_BFLOAT16))
    return CMX_OK;
  int64_t sk = g->K == 1 ? 1 : g->sk, so = g->so;
  if (sk < 0 || so < 0 || g->incx < 0) return CMX_OK;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  int sms = d->sm_count > 0 ? d->sm_count : 1;
  int64_t esz = (int64_t)cmx_dtype_size(g->dt), V = 16 / esz;
  cmx__gpu_gemv_desc h = *g;
  h.sk = sk;
  cmx_status st;
  if (sk == 1) {
    /* a warp per output: too few of them for a long k goes to cuBLASLt */
    if (g->R < 4 * (int64_t)sms && g->K > 8192) return CMX_OK;
    bool vec = g->incx == 1 && g->K % V == 0 && g->a % 16 == 0 &&
               g->x % 16 == 0 && (so * esz) % 16 == 0;
    st = rows(op, dev, &h, vec, sms);
  } else if (so == 1) {
    /* float32 read along the outputs: cuBLASLt's kernel was the faster
     * (H100, x @ W of 4096: 27.4 us against 31.3), the 16-bit ones ours
     * (bfloat16: 13.8 us against 15.8) */
    if (g->dt == CMX_FLOAT32) return CMX_OK;
    bool vec = g->R % V == 0 && g->a % 16 == 0 && (sk * esz) % 16 == 0;
    st = cols(op, dev, &h, vec, sms);
  } else {
    return CMX_OK;
  }
  *done = st == CMX_OK;
  return st;
}
