/* GPU kernels of RMSNorm, LayerNorm, AddRMSNorm and RoPE (kernels/fast.cu;
 * contracts in primitives/fast.h): one variant per dtype (float16, bfloat16,
 * float32), float32 arithmetic in the CPU kernels' order.
 *
 * Norms: a row is taken by a warp (4 rows a block) when it is at most
 * 128 vectors of 16 bytes, else by a block of up to 1024 threads. Rows
 * that are contiguous, 16-byte aligned and a whole number of vectors long
 * (weight and bias too) stay in registers, read once with 16-byte loads
 * (up to 4 vectors a thread: 32768 bfloat16 or 16384 float32 features);
 * other rows go through the strided kernel, which reads x again per pass.
 * RoPE: one thread per rotated pair or passed-through feature, angles
 * computed in the kernel (as the CPU: (pos * scale) * inv_freq);
 * RoPEMulti the same over several arrays in one launch. */
#include "primitives/fast.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum {
  K_VEC_RMS,
  K_VEC_LN,
  K_GEN_RMS,
  K_GEN_LN,
  K_ROPE,
  K_ADD_VEC_RMS,
  K_ADD_GEN_RMS,
  K_ROPE_MULTI
};
static const char* const k_kernels[] = {
    "cmx_norm_vec_rms",    "cmx_norm_vec_ln", "cmx_norm_gen_rms",
    "cmx_norm_gen_ln",     "cmx_rope",        "cmx_addnorm_vec_rms",
    "cmx_addnorm_gen_rms", "cmx_rope_multi",  NULL};

static bool fast_dtype_ok(cmx_dtype dt) {
  return dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 || dt == CMX_FLOAT32;
}

int cmx__gpu_float_prelude(char* buf, size_t size, const char* prefix,
                           cmx_dtype dt) {
  const char* t = dt == CMX_FLOAT16    ? "cmx_f16_t"
                  : dt == CMX_BFLOAT16 ? "cmx_bf16_t"
                                       : "float";
  const char* tof = dt == CMX_FLOAT16    ? "cmx_h2f(x)"
                    : dt == CMX_BFLOAT16 ? "cmx_bf2f(x)"
                                         : "(x)";
  const char* fromf = dt == CMX_FLOAT16    ? "cmx_f2h(v)"
                      : dt == CMX_BFLOAT16 ? "cmx_f2bf(v)"
                                           : "(v)";
  return snprintf(buf, size,
                  "#define %s_T %s\n#define %s_TOF(x) %s\n"
                  "#define %s_FROMF(v) %s\n",
                  prefix, t, prefix, tof, prefix, fromf);
}

static bool fast_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)v;
  if (!fast_dtype_ok(dt)) return false;
  snprintf(out->name, sizeof out->name, "fast_%s", cmx_dtype_name(dt));
  out->flags = 0;
  int w =
      cmx__gpu_float_prelude(out->prelude, sizeof out->prelude, "CMX_F", dt);
  return w > 0 && (size_t)w < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_fast = {
    .name = "fast",
    .file = "fast",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = fast_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* The layout of x's rows (its first ndim - 1 dims: row-major index ->
 * x's element offset). */
static void rows_layout(cmx__gpu_layout* X, cmx_array x) {
  int64_t rm[CMX_MAX_NDIM];
  cmx__row_major_strides(x->dims, x->ndim - 1, rm);
  cmx__gpu_layout_from(X, x->dims, x->ndim - 1,
                       (const int64_t* const[]){rm, CMX__STRIDES(x)}, 2);
}

static const cmx__gpu_kernel* get_kernel(int dev, cmx_dtype dt, int kernel) {
  return cmx__gpu_kernel_get(dev, &cmx__gpu_family_fast, (int)dt, kernel);
}

/* Whether the row-register kernel takes x (rows at layout X) with weight
 * and bias (NULL: none) at device addresses px, pw, pb. */
static bool norm_vec_ok(cmx_array x, const cmx__gpu_layout* X, CUdeviceptr px,
                        cmx_array w, CUdeviceptr pw, cmx_array b,
                        CUdeviceptr pb, int64_t D) {
  int64_t V = 16 / (int64_t)cmx_dtype_size(x->dtype);
  if (D % V || D / V > 4 * 1024 || CMX__STRIDES(x)[x->ndim - 1] != 1 || px % 16)
    return false;
  for (int d = 0; d < X->ndim; d++)
    if (X->strides[1][d] % V) return false;
  if (w && (CMX__STRIDES(w)[0] != 1 || pw % 16)) return false;
  if (b && (CMX__STRIDES(b)[0] != 1 || pb % 16)) return false;
  return true;
}

/* The launch shape of a norm over rows of D units (vectors for the
 * register kernels, elements else): a warp a row, 4 rows a block, up to
 * 32 units (8 elements or 4 vectors a thread); else one block a row, a
 * power of two of threads up to 1024 and max_threads. */
static cmx__gpu_cfg norm_cfg(int64_t units, int max_threads, long long nrows) {
  cmx__gpu_cfg cfg = {{1, 1, 1}, {32, 1, 1}, 0};
  if (units <= 32) {
    cfg.block[1] = 4;
  } else {
    unsigned t = 64;
    while (t < 1024 && (int64_t)t < units) t *= 2;
    while ((int)t > max_threads && t > 32) t /= 2;
    cfg.block[0] = t;
  }
  cfg.grid[0] = (unsigned)((nrows + cfg.block[1] - 1) / cfg.block[1]);
  return cfg;
}

/* AddRMSNorm's thread limit: its kernel k's and RMSNorm's (vec: the vector
 * kernels, else the general ones), as a block narrower than RMSNorm would
 * take would sum in another order. 0 with the error set when RMSNorm's
 * kernel fails to load. */
static int add_norm_max_threads(int dev, cmx_dtype dt, const cmx__gpu_kernel* k,
                                bool vec) {
  const cmx__gpu_kernel* kn = get_kernel(dev, dt, vec ? K_VEC_RMS : K_GEN_RMS);
  if (!kn) return 0;
  return k->max_threads < kn->max_threads ? k->max_threads : kn->max_threads;
}

int cmx__gpu_addnorm_vec_threads(int dev, cmx_dtype dt, long long D) {
  const cmx__gpu_kernel* k = get_kernel(dev, dt, K_ADD_VEC_RMS);
  int maxt = k ? add_norm_max_threads(dev, dt, k, true) : 0;
  if (!maxt) return 0;
  long long V = 16 / (long long)cmx_dtype_size(dt);
  /* the units and launch of cmx__gpu_add_rms_norm's vector path */
  return (int)norm_cfg((D / V + 3) / 4, maxt, 1).block[0];
}

static cmx_status norm_run(const cmx_primitive* p, const cmx_array* in,
                           const cmx_array* out, bool ln) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  const char* op = ln ? "layer_norm" : "rms_norm";
  cmx_array x = in[0], o = out[0];
  if (!fast_dtype_ok(x->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(x->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  int i = 1;
  cmx_array w = q->has_weight ? in[i++] : NULL;
  cmx_array b = ln && q->has_bias ? in[i++] : NULL;
  CUdeviceptr px = 0, py = 0, pw = 0, pb = 0;
  st = cmx__gpu_ptr(x, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &py);
  if (st == CMX_OK && w) st = cmx__gpu_ptr(w, dev, &pw);
  if (st == CMX_OK && b) st = cmx__gpu_ptr(b, dev, &pb);
  if (st != CMX_OK) return st;
  long long D = x->dims[x->ndim - 1], nrows = o->size / D;
  cmx__gpu_layout X;
  rows_layout(&X, x);
  bool vec = norm_vec_ok(x, &X, px, w, pw, b, pb, D);
  int64_t V = 16 / (int64_t)cmx_dtype_size(x->dtype);
  /* units a thread-row covers: vectors (4 a thread) or elements (8) */
  int64_t units = vec ? (D / V + 3) / 4 : (D + 7) / 8;
  int kernel = vec ? (ln ? K_VEC_LN : K_VEC_RMS) : (ln ? K_GEN_LN : K_GEN_RMS);
  const cmx__gpu_kernel* k = get_kernel(dev, x->dtype, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = norm_cfg(units, k->max_threads, nrows);
  float eps = q->eps;
  long long ls = CMX__STRIDES(x)[x->ndim - 1];
  long long ws = w ? CMX__STRIDES(w)[0] : 0, bs = b ? CMX__STRIDES(b)[0] : 0;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, pw);
  CMX__GPU_ARG(&args, pb);
  CMX__GPU_ARG(&args, py);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, D);
  CMX__GPU_ARG(&args, eps);
  if (!vec) {
    CMX__GPU_ARG(&args, ls);
    CMX__GPU_ARG(&args, ws);
    CMX__GPU_ARG(&args, bs);
  }
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* AddRMSNorm: the kernel and launch shape RMSNorm would take for the
 * stored h (contiguous and aligned: the register kernel whenever D and
 * the weight allow it), so y matches it bit for bit; x and r are read
 * with 16-byte loads when their rows allow, else element by element. */
cmx_status cmx__gpu_add_rms_norm(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__fast_params* q = cmx_primitive_params(p);
  const char* op = "add_rms_norm";
  cmx_array x = in[0], r = in[1], w = q->has_weight ? in[2] : NULL;
  cmx_array h = out[0], o = out[1];
  if (!fast_dtype_ok(x->dtype) || r->dtype != x->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(x->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(h);
  if (st == CMX_OK) st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr px = 0, pr = 0, ph = 0, py = 0, pw = 0;
  st = cmx__gpu_ptr(x, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(r, dev, &pr);
  if (st == CMX_OK) st = cmx__gpu_ptr(h, dev, &ph);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &py);
  if (st == CMX_OK && w) st = cmx__gpu_ptr(w, dev, &pw);
  if (st != CMX_OK) return st;
  long long D = x->dims[x->ndim - 1], nrows = o->size / D;
  /* rows of x and r: row-major index -> each one's element offset */
  int64_t rm[CMX_MAX_NDIM];
  cmx__row_major_strides(x->dims, x->ndim - 1, rm);
  cmx__gpu_layout X;
  cmx__gpu_layout_from(
      &X, x->dims, x->ndim - 1,
      (const int64_t* const[]){rm, CMX__STRIDES(x), CMX__STRIDES(r)}, 3);
  /* h as RMSNorm would see it: row-major at an aligned fresh buffer */
  cmx__gpu_layout H;
  rows_layout(&H, h);
  bool vec = norm_vec_ok(h, &H, ph, w, pw, NULL, 0, D);
  int64_t V = 16 / (int64_t)cmx_dtype_size(x->dtype);
  int64_t units = vec ? (D / V + 3) / 4 : (D + 7) / 8;
  const cmx__gpu_kernel* k =
      get_kernel(dev, x->dtype, vec ? K_ADD_VEC_RMS : K_ADD_GEN_RMS);
  int maxt = k ? add_norm_max_threads(dev, x->dtype, k, vec) : 0;
  if (!maxt) return cmx_last_status();
  cmx__gpu_cfg cfg = norm_cfg(units, maxt, nrows);
  long long lx = CMX__STRIDES(x)[x->ndim - 1];
  long long lr = CMX__STRIDES(r)[r->ndim - 1];
  int packed = lx == 1 && lr == 1 && px % 16 == 0 && pr % 16 == 0;
  for (int d = 0; packed && d < X.ndim; d++)
    packed = X.strides[1][d] % V == 0 && X.strides[2][d] % V == 0;
  float eps = q->eps;
  long long ws = w ? CMX__STRIDES(w)[0] : 0;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, pr);
  CMX__GPU_ARG(&args, pw);
  CMX__GPU_ARG(&args, ph);
  CMX__GPU_ARG(&args, py);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, D);
  CMX__GPU_ARG(&args, eps);
  CMX__GPU_ARG(&args, lx);
  CMX__GPU_ARG(&args, lr);
  if (vec)
    CMX__GPU_ARG(&args, packed);
  else
    CMX__GPU_ARG(&args, ws);
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) {
    cmx_kernel_mark_device_written(h);
    cmx_kernel_mark_device_written(o);
  }
  return st;
}

cmx_status cmx__gpu_rms_norm(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  return norm_run(p, in, out, false);
}

cmx_status cmx__gpu_layer_norm(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  return norm_run(p, in, out, true);
}

/* The RoPE parameters every array of a launch shares (cmx_rope's and
 * cmx_rope_multi's arguments after the arrays). */
typedef struct {
  int h, off_vec, trad;
  long long os, fs;
  float k, scale;
  CUdeviceptr po, pf;
} rope_common;

static void rope_common_make(rope_common* c, const cmx__fast_params* q,
                             cmx_array off, cmx_array fr) {
  c->h = q->dims / 2;
  c->off_vec = off->ndim == 1;
  c->trad = q->traditional;
  c->os = c->off_vec ? CMX__STRIDES(off)[0] : 0;
  c->fs = fr ? CMX__STRIDES(fr)[0] : 0;
  c->k = (float)(-2.0 * log((double)q->base) / (double)q->dims);
  c->scale = q->scale;
}

/* One cmx_rope launch: x into o (allocated, not empty). */
static cmx_status rope_launch(int dev, const rope_common* c, cmx_array x,
                              cmx_array o, const char* op) {
  CUdeviceptr px = 0, py = 0;
  cmx_status st = cmx__gpu_ptr(x, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &py);
  if (st != CMX_OK) return st;
  int nd = x->ndim;
  long long L = x->dims[nd - 2], D = x->dims[nd - 1];
  long long nrows = o->size / D, per_b = o->size / (D * x->dims[0]);
  long long ls = CMX__STRIDES(x)[nd - 1];
  cmx__gpu_layout X;
  rows_layout(&X, x);
  const cmx__gpu_kernel* kk = get_kernel(dev, x->dtype, K_ROPE);
  if (!kk) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(kk, nrows * (D - c->h));
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, py);
  CMX__GPU_ARG(&args, c->po);
  CMX__GPU_ARG(&args, c->pf);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, L);
  CMX__GPU_ARG(&args, per_b);
  CMX__GPU_ARG(&args, D);
  CMX__GPU_ARG(&args, c->h);
  CMX__GPU_ARG(&args, c->off_vec);
  CMX__GPU_ARG(&args, c->os);
  CMX__GPU_ARG(&args, c->fs);
  CMX__GPU_ARG(&args, c->k);
  CMX__GPU_ARG(&args, c->scale);
  CMX__GPU_ARG(&args, c->trad);
  CMX__GPU_ARG(&args, ls);
  cmx__gpu_args_layout(&args, &X);
  st = cmx__gpu_launch(op, kk, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* The shared inputs' device pointers (offsets, freqs or none). */
static cmx_status rope_common_ptrs(rope_common* c, int dev, cmx_array off,
                                   cmx_array fr) {
  c->po = c->pf = 0;
  cmx_status st = cmx__gpu_ptr(off, dev, &c->po);
  if (st == CMX_OK && fr) st = cmx__gpu_ptr(fr, dev, &c->pf);
  return st;
}

cmx_status cmx__gpu_rope(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__fast_params* q = cmx_primitive_params(p);
  cmx_array x = in[0], off = in[1], o = out[0];
  cmx_array fr = q->has_freqs ? in[2] : NULL;
  if (!fast_dtype_ok(x->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[rope] unsupported dtype %s",
                            cmx_dtype_name(x->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  rope_common c;
  rope_common_make(&c, q, off, fr);
  st = rope_common_ptrs(&c, dev, off, fr);
  if (st != CMX_OK) return st;
  return rope_launch(dev, &c, x, o, "rope");
}

/* cmx_rope_multi's table (kernels/fast.cu's cmx_rope_parts, field for
 * field: every field 8 bytes, so no padding on either side). */
enum { RM_MAX = 4, RM_ND = 6 };
_Static_assert(RM_MAX == CMX__ROPE_MULTI_MAX, "cmx_rope_multi's table size");
typedef struct {
  CUdeviceptr x, y;
  long long start, L, per_b, D, ls, nd;
  long long shape[RM_ND], stride[RM_ND];
} rope_part;
typedef struct {
  rope_part p[RM_MAX];
  long long n, total;
} rope_parts;

/* RoPEMulti: {x_1 .. x_N, offset, [freqs]}. One cmx_rope_multi launch
 * over every non-empty x (cmx_rope's work items, part after part, so each
 * output is bit for bit cmx_rope's); when an x's rows need more than
 * RM_ND collapsed dims, cmx_rope per x instead. */
cmx_status cmx__gpu_rope_multi(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  const char* op = "rope_multi";
  if (nout < 1 || nout > RM_MAX || nin != nout + 1 + (q->has_freqs != 0))
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] %d inputs for %d outputs", op,
                            nin, nout);
  cmx_array off = in[nout], fr = q->has_freqs ? in[nout + 1] : NULL;
  cmx_dtype dt = in[0]->dtype;
  for (int i = 0; i < nout; i++)
    if (!fast_dtype_ok(in[i]->dtype) || in[i]->dtype != dt)
      return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                              cmx_dtype_name(in[i]->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = CMX_OK;
  for (int i = 0; i < nout && st == CMX_OK; i++) st = cmx_kernel_alloc(out[i]);
  if (st != CMX_OK) return st;
  rope_common c;
  rope_common_make(&c, q, off, fr);
  st = rope_common_ptrs(&c, dev, off, fr);
  if (st != CMX_OK) return st;
  rope_parts P;
  memset(&P, 0, sizeof P);
  bool fits = true;
  for (int i = 0; i < nout && fits; i++) {
    cmx_array x = in[i], o = out[i];
    if (o->size == 0) continue;
    rope_part* e = &P.p[P.n];
    int nd = x->ndim;
    e->D = x->dims[nd - 1];
    e->L = x->dims[nd - 2];
    e->per_b = o->size / (e->D * x->dims[0]);
    e->ls = CMX__STRIDES(x)[nd - 1];
    e->start = P.total;
    cmx__gpu_layout X;
    rows_layout(&X, x);
    fits = X.ndim <= RM_ND;
    for (int d = 0; fits && d < X.ndim; d++) {
      e->shape[d] = X.shape[d];
      e->stride[d] = X.strides[1][d];
    }
    e->nd = X.ndim;
    st = cmx__gpu_ptr(x, dev, &e->x);
    if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &e->y);
    if (st != CMX_OK) return st;
    P.total += (o->size / e->D) * (e->D - c.h);
    P.n++;
  }
  if (!fits) {
    for (int i = 0; i < nout && st == CMX_OK; i++)
      if (out[i]->size) st = rope_launch(dev, &c, in[i], out[i], op);
    return st;
  }
  if (P.n == 0) return CMX_OK;
  const cmx__gpu_kernel* kk = get_kernel(dev, dt, K_ROPE_MULTI);
  if (!kk) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(kk, P.total);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, P);
  CMX__GPU_ARG(&args, c.po);
  CMX__GPU_ARG(&args, c.pf);
  CMX__GPU_ARG(&args, c.h);
  CMX__GPU_ARG(&args, c.off_vec);
  CMX__GPU_ARG(&args, c.os);
  CMX__GPU_ARG(&args, c.fs);
  CMX__GPU_ARG(&args, c.k);
  CMX__GPU_ARG(&args, c.scale);
  CMX__GPU_ARG(&args, c.trad);
  st = cmx__gpu_launch(op, kk, &cfg, &args);
  if (st == CMX_OK)
    for (int i = 0; i < nout; i++)
      if (out[i]->size) cmx_kernel_mark_device_written(out[i]);
  return st;
}
