/* GPU kernel of the Convolution primitive (primitives/conv.h): every case
 * the CPU has (1-3 spatial dims, strides, padding lo/hi, kernel and input
 * dilation, groups, flip; transposed convolutions and the gradients are
 * this primitive too), for float16, bfloat16, float32 and float64.
 *
 * Two paths:
 *   cuDNN (cudnn.c), loaded at run time, for the cases it takes (2-3
 *       spatial dims, no input dilation, symmetric padding, 16/32-bit
 *       floats); any cuDNN refusal falls through to cmx's own path;
 *   cmx's own: the output (N, M..., O) is the matrix of R = N * prod(M)
 *       rows and O columns equal to U @ W^T per group, U the unfolded
 *       input (im2col, kernels/conv.cu: all index math of padding, both
 *       dilations, strides and flip is there) and W the weight as (O,
 *       taps * C / groups) read in place; the groups are one strided
 *       batched cuBLASLt product (cmx__gpu_gemm, matmul.c) writing the
 *       output's column blocks. U is built a block of rows at a time
 *       (at most UNFOLD_BYTES) in a buffer of cmx's allocator. A 1x1
 *       kernel with unit stride and no padding or input dilation needs
 *       no unfolding: the input rows are U.
 * CMX_CUDA_CONV=fallback forces the own path. The input is packed
 * row-major first when its channels are not contiguous (the weight
 * gradient passes it with batch and channels swapped), so the unfolding
 * reads channel runs; a strided weight is packed too.
 */
#include "backend/cuda/conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

/* Unfolded rows are built in blocks of at most this many bytes. */
#define UNFOLD_BYTES ((int64_t)512 << 20)

/* Variants: the unit moved, 2 << v bytes (v = 3: 16 bytes of channels). */
static bool conv_variant(int v, cmx__gpu_variant* out) {
  static const char* const types[] = {"cmx_u16", "cmx_u32", "cmx_u64", "uint4"};
  snprintf(out->name, sizeof out->name, "conv_unfold_%d", 2 << v);
  snprintf(out->prelude, sizeof out->prelude, "#define CMX_T %s\n", types[v]);
  out->flags = 0;
  return true;
}

static const char* const k_kernels[] = {"cmx_conv_unfold", NULL};

const cmx__gpu_family cmx__gpu_family_conv = {
    .name = "conv",
    .file = "conv",
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 4,
    .variant = conv_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* The kernel's geometry parameter (kernels/conv.cu's cmx_conv_geo). */
typedef struct {
  int32_t nsp, flip, groups, taps, cg;
  int32_t in[3], out[3], k[3], stride[3], lo[3], kd[3], id[3];
  int64_t out_sp;
  int64_t xs_n, xs[3], xs_c;
} geo;

static bool aligned16(int64_t v) {
  return v % 16 == 0;
}

/* The own path: unfold + batched product over the groups. */
static cmx_status own_path(const cmx__gpu_conv* c) {
  const int64_t esz = (int64_t)cmx_dtype_size(c->dt);
  const int64_t taps = c->taps, Kc = taps * c->Cg, rowlen = c->G * Kc;
  cmx__gpu_gemm_desc g;
  memset(&g, 0, sizeof g);
  g.dt = c->dt;
  g.N = c->Og;
  g.K = Kc;
  g.batch = c->G;
  g.b = c->w;
  g.b_rs = 1;
  g.b_cs = Kc;
  g.b_bs = c->Og * Kc;
  g.d_rs = c->O;
  g.d_bs = c->Og;
  bool pointwise = c->x_rowmajor;
  for (int d = 0; d < c->nsp; d++)
    pointwise = pointwise && c->k[d] == 1 && c->stride[d] == 1 &&
                c->lo[d] == 0 && c->hi[d] == 0 && c->id[d] == 1;
  if (pointwise) { /* the input rows are the unfolded matrix */
    g.M = c->rows;
    g.a = c->x;
    g.a_rs = c->C;
    g.a_cs = 1;
    g.a_bs = c->Cg;
    g.d = c->y;
    return cmx__gpu_gemm("conv", c->dev, &g);
  }

  /* the unit moved: 16 bytes of channels when everything is aligned */
  int64_t V = 1;
  int var = esz == 2 ? 0 : esz == 4 ? 1 : 2;
  bool vec = c->xs_c == 1 && aligned16(c->Cg * esz) &&
             aligned16(c->xs_n * esz) && aligned16((int64_t)c->x);
  for (int d = 0; d < c->nsp; d++) vec = vec && aligned16(c->xs[d] * esz);
  if (vec) {
    V = 16 / esz;
    var = 3;
  }
  geo q;
  memset(&q, 0, sizeof q);
  q.nsp = c->nsp;
  q.flip = c->flip;
  q.groups = (int32_t)c->G;
  q.taps = (int32_t)taps;
  q.cg = (int32_t)(c->Cg / V);
  q.out_sp = c->out_sp;
  q.xs_n = c->xs_n / V;
  q.xs_c = c->xs_c / V > 0 ? c->xs_c / V : 1;
  for (int d = 0; d < c->nsp; d++) {
    q.in[d] = (int32_t)c->in[d];
    q.out[d] = (int32_t)c->out[d];
    q.k[d] = (int32_t)c->k[d];
    q.stride[d] = (int32_t)c->stride[d];
    q.lo[d] = (int32_t)c->lo[d];
    q.kd[d] = (int32_t)c->kd[d];
    q.id[d] = (int32_t)c->id[d];
    q.xs[d] = c->xs[d] / V;
  }
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(c->dev, &cmx__gpu_family_conv, var, 0);
  if (!k) return cmx_last_status();

  int64_t block = UNFOLD_BYTES / (rowlen * esz);
  if (block < 1) block = 1;
  if (block > c->rows) block = c->rows;
  cmx__buffer* u =
      cmx__device_hooks->alloc_device((size_t)(block * rowlen * esz), c->dev);
  if (!u) return cmx_last_status();
  cmx_status st = CMX_OK;
  for (int64_t r0 = 0; r0 < c->rows && st == CMX_OK; r0 += block) {
    int64_t cnt = c->rows - r0 < block ? c->rows - r0 : block;
    long long rr0 = r0, n = cnt * rowlen / V;
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, c->x);
    CMX__GPU_ARG(&args, u->dev);
    CMX__GPU_ARG(&args, rr0);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, q);
    cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, n);
    st = cmx__gpu_launch("conv", k, &cfg, &args);
    if (st != CMX_OK) break;
    g.M = cnt;
    g.a = u->dev;
    g.a_rs = rowlen;
    g.a_cs = 1;
    g.a_bs = Kc;
    g.d = c->y + (CUdeviceptr)(r0 * c->O * esz);
    st = cmx__gpu_gemm("conv", c->dev, &g);
  }
  cmx__buffer_release(u);
  return st;
}

static bool force_fallback(void) {
  const char* e = getenv("CMX_CUDA_CONV");
  return e && strcmp(e, "fallback") == 0;
}

static _Atomic uint64_t g_own_runs, g_cudnn_runs;

cmx__gpu_conv_stats cmx__gpu_conv_stats_get(void) {
  cmx__gpu_conv_stats s = {atomic_load(&g_cudnn_runs),
                           atomic_load(&g_own_runs)};
  return s;
}

/* The element strides of a (batch or out channel, spatial..., channel). */
static void strides_of(cmx_array a, int64_t* s0, int64_t* sp, int64_t* sc) {
  const int64_t* st = CMX__STRIDES(a);
  *s0 = st[0];
  for (int d = 1; d < a->ndim - 1; d++) sp[d - 1] = st[d];
  *sc = st[a->ndim - 1];
}

/* One try of the cuDNN path: a refusal or failure leaves *done false
 * (the own path computes the result instead). */
static cmx_status attempt(const cmx__gpu_conv* c, bool wgrad, bool* done) {
  *done = false;
  if (cmx__cudnn_conv(c, wgrad, done) != CMX_OK) {
    cmx_clear_error();
    *done = false;
  }
  return CMX_OK;
}

cmx_status cmx__gpu_convolution(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout) {
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
  cmx__gpu_conv c;
  memset(&c, 0, sizeof c);
  c.dev = cmx_primitive_stream(p).device.index;
  c.dt = dt;
  cmx__conv_geom_fill(&c.geom, q, x->dims, w->dims, y->dims);
  st = cmx__gpu_ptr(y, c.dev, &c.y);
  if (st != CMX_OK) return st;
  cmx_kernel_mark_device_written(y);
  const int64_t esz = (int64_t)cmx_dtype_size(dt);
  if (c.taps * c.Cg == 0 || x->size == 0) /* no terms: every sum is empty */
    return cmx__gpu_memset("conv", c.y, 0, 2, (size_t)(y->size * esz / 2));

  cmx__buffer *xpack = NULL, *wpack = NULL;
  st = cmx__gpu_ptr(w, c.dev, &c.w);
  if (st == CMX_OK) st = cmx__gpu_ptr(x, c.dev, &c.x);
  if (st != CMX_OK) return st;
  strides_of(x, &c.xs_n, c.xs, &c.xs_c);
  strides_of(w, &c.ws_o, c.ws, &c.ws_c);
  c.x_rowmajor = (x->flags & CMX__FLAG_ROW_CONTIG) != 0;
  c.w_rowmajor = (w->flags & CMX__FLAG_ROW_CONTIG) != 0;
  bool done = false, cudnn = !force_fallback();
  /* the weight-gradient form: a kernel larger than the output */
  if (cudnn && c.taps > c.out_sp) st = attempt(&c, true, &done);
  if (st == CMX_OK && !done && !c.w_rowmajor) {
    st = cmx__gpu_pack_rowmajor(w, c.dev, "conv", &wpack);
    if (wpack) c.w = wpack->dev;
    c.w_rowmajor = true;
  }
  /* the unfolding reads channel runs: the input packed row-major when its
   * channels are not contiguous */
  if (st == CMX_OK && !done && !c.x_rowmajor && c.C > 1 && c.xs_c != 1) {
    st = cmx__gpu_pack_rowmajor(x, c.dev, "conv", &xpack);
    if (xpack) c.x = xpack->dev;
    c.x_rowmajor = true;
  }
  if (c.x_rowmajor) {
    int64_t rm[CMX_MAX_NDIM];
    cmx__row_major_strides(x->dims, x->ndim, rm);
    c.xs_n = rm[0];
    c.xs_c = 1;
    for (int d = 0; d < c.nsp; d++) c.xs[d] = rm[d + 1];
  }
  if (c.C == 1) c.xs_c = 1;
  if (st == CMX_OK && !done && cudnn) st = attempt(&c, false, &done);
  if (st == CMX_OK && !done) st = own_path(&c);
  if (st == CMX_OK) atomic_fetch_add(done ? &g_cudnn_runs : &g_own_runs, 1);
  if (xpack) cmx__buffer_release(xpack);
  if (wpack) cmx__buffer_release(wpack);
  return st;
}
