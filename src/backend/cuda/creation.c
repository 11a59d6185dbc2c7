/* GPU kernels of the creation primitives: Arange, Linspace, Eye, Tri,
 * Tril, Triu (kernels/creation.cu). Full is a copy of its broadcast value
 * (cmx__gpu_copy: a fill).
 *
 * One variant per output dtype; values convert from double through the
 * shared conversions of primitives/ew_scalar.h, so every element equals
 * the CPU's (backend/cpu/creation.c) bit for bit. */
#include "primitives/creation.h"

#include <stdio.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_RANGE_F, K_RANGE_I, K_EYE_TRI, K_TRI_MASK };
static const char* const k_kernels[] = {"cmx_range_f", "cmx_range_i",
                                        "cmx_eye_tri", "cmx_tri_mask", NULL};

static bool is_int(cmx_dtype dt) {
  return dt != CMX_BOOL && !cmx_dtype_is_inexact(dt);
}

static bool creation_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)v;
  const char* s = cmx__ew_suffix(dt);
  snprintf(out->name, sizeof out->name, "creation_%s", cmx_dtype_name(dt));
  int n = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_T cmx_%s_t\n"
                   "#define CMX_FROM_F64(x) cmx_cvt_%s(f64, x)\n"
                   "#define CMX_INT_RANGE %d\n",
                   s, s, is_int(dt) ? 1 : 0);
  out->flags = 0;
  return n > 0 && (size_t)n < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_creation = {
    .name = "creation",
    .file = "creation",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = creation_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

static cmx_status launch(const cmx_primitive* p, cmx_array o, int kernel,
                         cmx__gpu_args* args) {
  int dev = cmx_primitive_stream(p).device.index;
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_creation,
                                                 (int)o->dtype, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, o->size);
  cmx_status st = cmx__gpu_launch(cmx_primitive_name(p), k, &cfg, args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* The output allocated on the device and its address in args' first
 * argument, then its element count. */
static cmx_status out_args(const cmx_primitive* p, cmx_array o,
                           cmx__gpu_args* args) {
  cmx_status st = cmx_kernel_alloc(o);
  CUdeviceptr po = 0;
  if (st == CMX_OK)
    st = cmx__gpu_ptr(o, cmx_primitive_stream(p).device.index, &po);
  long long n = o->size;
  cmx__gpu_args_init(args);
  CMX__GPU_ARG(args, po);
  CMX__GPU_ARG(args, n);
  return st;
}

/* Saturating double -> int64, as the CPU's arange takes its ends. */
static int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}

cmx_status cmx__gpu_range(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout) {
  (void)in;
  (void)nin;
  (void)nout;
  const cmx__range_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx__gpu_args args;
  cmx_status st = out_args(p, o, &args);
  if (st != CMX_OK || o->size == 0) return st;
  bool linspace = cmx_primitive_vt(p)->id == CMX__P_Linspace;
  if (!linspace && is_int(o->dtype)) {
    uint64_t a0 = (uint64_t)sat_i64(q->start);
    uint64_t d = (uint64_t)sat_i64(q->start + q->step) - a0;
    unsigned long long ua0 = a0, ud = d;
    CMX__GPU_ARG(&args, ua0);
    CMX__GPU_ARG(&args, ud);
    return launch(p, o, K_RANGE_I, &args);
  }
  double start = q->start, step = q->step, stop = q->stop;
  int ls = linspace;
  CMX__GPU_ARG(&args, start);
  CMX__GPU_ARG(&args, step);
  CMX__GPU_ARG(&args, stop);
  CMX__GPU_ARG(&args, ls);
  return launch(p, o, K_RANGE_F, &args);
}

cmx_status cmx__gpu_eye_tri(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)in;
  (void)nin;
  (void)nout;
  const cmx__diag_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx__gpu_args args;
  cmx_status st = out_args(p, o, &args);
  if (st != CMX_OK || o->size == 0) return st;
  long long m = o->dims[1], k = q->k;
  int tri = cmx_primitive_vt(p)->id == CMX__P_Tri;
  CMX__GPU_ARG(&args, m);
  CMX__GPU_ARG(&args, k);
  CMX__GPU_ARG(&args, tri);
  return launch(p, o, K_EYE_TRI, &args);
}

cmx_status cmx__gpu_tril_triu(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__diag_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int dev = cmx_primitive_stream(p).device.index;
  if (o->size == 0) return cmx_kernel_alloc(o);
  int donated;
  CUdeviceptr pa, po;
  cmx_status st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_alloc_out(o, in, 1, dev, &donated);
  if (st == CMX_OK && donated != 0)
    st = cmx__gpu_copy_rowmajor(o, a, dev, cmx_primitive_name(p));
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  long long n = o->size, rows = o->dims[o->ndim - 2], m = o->dims[o->ndim - 1];
  long long k = q->k;
  int lower = cmx_primitive_vt(p)->id == CMX__P_Tril;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, n);
  CMX__GPU_ARG(&args, rows);
  CMX__GPU_ARG(&args, m);
  CMX__GPU_ARG(&args, k);
  CMX__GPU_ARG(&args, lower);
  return launch(p, o, K_TRI_MASK, &args);
}
