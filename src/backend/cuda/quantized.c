/* GPU kernels of Quantize, Dequantize and QuantizedMatmul (affine mode;
 * kernels/quantized.cu; contracts in primitives/quantized.h). One variant
 * per (float dtype, bit width). The packed weights are read directly,
 * never dequantized into a copy:
 *   - transpose with at most 8 rows of x (decoding): the matrix-vector
 *     kernel, a warp per weight row reading its packed words with 16-byte
 *     loads, x staged as float32 in shared memory;
 *   - otherwise a tiled kernel (64 x 64 outputs a block; each 32-deep
 *     tile of W dequantized into shared memory), for both transposes.
 * Quantize takes a thread per group, Dequantize a thread per value, with
 * the CPU's formulas (quantize bit for bit: same float32 operations). */
#include "primitives/quantized.h"

#include <stdio.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_QUANTIZE, K_DEQUANTIZE, K_QMV_T, K_QMM_T, K_QMM_N };
static const char* const k_kernels[] = {"cmx_quantize", "cmx_dequantize",
                                        "cmx_qmv_t",    "cmx_qmm_t",
                                        "cmx_qmm_n",    NULL};

enum { QMV_MAXM = 8, QMV_WARPS = 8, QMM_T = 64 };

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
  int w2 = snprintf(out->prelude + w, n - (size_t)w, "#define CMX_Q_BITS %d\n",
                    bits);
  return w2 > 0 && (size_t)(w + w2) < n;
}

const cmx__gpu_family cmx__gpu_family_quantized = {
    .name = "quantized",
    .file = "quantized",
    .preamble = k_preamble,
    .kernels = k_kernels,
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
  long long K = o->dims[nd - 1], nrows = o->size / K;
  long long wl = CMX__STRIDES(in[0])[nd - 1], sl = CMX__STRIDES(in[1])[nd - 1],
            bl = CMX__STRIDES(in[2])[nd - 1];
  int g = q->group_size, sc = ld_code(in[1]->dtype), bc = ld_code(in[2]->dtype);
  cmx__gpu_layout X;
  rows_layout(&X, (cmx_array[]){o, in[0], in[1], in[2]}, 4, nd - 1);
  const cmx__gpu_kernel* k = get_kernel(dev, o->dtype, q->bits, K_DEQUANTIZE);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, o->size);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  for (int i = 0; i < 4; i++) CMX__GPU_ARG(&args, pp[i]);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, K);
  CMX__GPU_ARG(&args, g);
  CMX__GPU_ARG(&args, wl);
  CMX__GPU_ARG(&args, sl);
  CMX__GPU_ARG(&args, bl);
  CMX__GPU_ARG(&args, sc);
  CMX__GPU_ARG(&args, bc);
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch("dequantize", k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* The kernels' argument struct (cmx_qmm_args in quantized.cu: pointers,
 * then long longs, then ints, no padding inside). */
typedef struct {
  CUdeviceptr x, w, sc, bi, y;
  long long M, N, K, xm, xk, wr, sr, br;
  int g, scode, bcode, kt;
} qmm_args;

cmx_status cmx__gpu_quantized_matmul(const cmx_primitive* p,
                                     const cmx_array* in, int nin,
                                     const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__quant_params* q = cmx_primitive_params(p);
  static const char* op = "quantized_matmul";
  cmx_array x = in[0], w = in[1], sc = in[2], bi = in[3], o = out[0];
  if (!q_dtype_ok(o->dtype) || x->dtype != o->dtype || !q_dtype_ok(sc->dtype) ||
      !q_dtype_ok(bi->dtype) || !q_bits_ok(q->bits))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(o->dtype));
  int nd = o->ndim;
  if (CMX__STRIDES(w)[nd - 1] != 1 || CMX__STRIDES(sc)[nd - 1] != 1 ||
      CMX__STRIDES(bi)[nd - 1] != 1)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] the GPU kernel needs row-contiguous packed "
                            "weights, scales and biases",
                            op);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr pp[5];
  cmx_array arrs[5] = {x, w, sc, bi, o};
  st = ptrs(dev, arrs, 5, pp);
  if (st != CMX_OK) return st;
  qmm_args A = {.x = pp[0], .w = pp[1], .sc = pp[2], .bi = pp[3], .y = pp[4]};
  A.M = o->dims[nd - 2];
  A.N = o->dims[nd - 1];
  A.K = x->dims[nd - 1];
  A.xm = CMX__STRIDES(x)[nd - 2];
  A.xk = CMX__STRIDES(x)[nd - 1];
  A.wr = CMX__STRIDES(w)[nd - 2];
  A.sr = CMX__STRIDES(sc)[nd - 2];
  A.br = CMX__STRIDES(bi)[nd - 2];
  A.g = q->group_size;
  A.scode = ld_code(sc->dtype);
  A.bcode = ld_code(bi->dtype);
  long long nbatch = o->size / (A.M * A.N);
  if (nbatch > 65535)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] more than 65535 matrices in one batch", op);
  /* batch entries: output (row-major), x, w, scales, biases */
  int64_t brm[CMX_MAX_NDIM];
  cmx__row_major_strides(o->dims, nd - 2, brm);
  cmx__gpu_layout Bt;
  cmx__gpu_layout_from(
      &Bt, o->dims, nd - 2,
      (const int64_t* const[]){brm, CMX__STRIDES(x), CMX__STRIDES(w),
                               CMX__STRIDES(sc), CMX__STRIDES(bi)},
      5);
  bool qmv = q->transpose && A.M <= QMV_MAXM;
  int kernel = qmv ? K_QMV_T : q->transpose ? K_QMM_T : K_QMM_N;
  const cmx__gpu_kernel* k = get_kernel(dev, o->dtype, q->bits, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  cmx__gpu_cfg cfg = {{1, 1, 1}, {256, 1, 1}, 0};
  if (qmv) {
    /* x tiles of kt values: M * kt / 32 chunks of 36 floats in 48 KB */
    long long cap = 12288 / (A.M * 36) * 32, kr = (A.K + 31) / 32 * 32;
    A.kt = (int)(kr < cap ? kr : cap);
    cfg.shared = (size_t)(A.M * (A.kt / 32) * 36) * sizeof(float);
    cfg.grid[0] = (unsigned)((A.N + QMV_WARPS - 1) / QMV_WARPS);
    cfg.grid[1] = (unsigned)nbatch;
    /* 16-byte loads of the packed words when every row start allows */
    int vec = pp[1] % 16 == 0 && A.wr % 4 == 0;
    for (int d = 0; d < Bt.ndim; d++) vec &= Bt.strides[2][d] % 4 == 0;
    CMX__GPU_ARG(&args, A);
    CMX__GPU_ARG(&args, vec);
  } else {
    cfg.grid[0] = (unsigned)((A.N + QMM_T - 1) / QMM_T);
    long long gy = (A.M + QMM_T - 1) / QMM_T;
    if (gy > 65535)
      return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", op,
                              (long long)A.M);
    cfg.grid[1] = (unsigned)gy;
    cfg.grid[2] = (unsigned)nbatch;
    CMX__GPU_ARG(&args, A);
  }
  cmx__gpu_args_layout(&args, &Bt);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
