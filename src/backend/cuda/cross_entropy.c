/* GPU kernel of CrossEntropy (kernels/cross_entropy.cu; contract in
 * primitives/fast.h): one variant per float dtype (float16, bfloat16,
 * float32), float32 accumulation. Each row is read once: by a warp (8
 * rows a block) when it is at most 1024 elements long, else by a block
 * of up to 1024 threads; 16-byte loads when the rows allow them. A target
 * out of range is reported as the CPU reports it (a deferred IndexError
 * naming cross_entropy). */
#include <stdio.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/internal.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_VEC, K_GEN };
static const char* const k_kernels[] = {"cmx_ce_vec", "cmx_ce_gen", NULL};

static bool ce_dtype_ok(cmx_dtype dt) {
  return dt == CMX_FLOAT16 || dt == CMX_BFLOAT16 || dt == CMX_FLOAT32;
}

static bool ce_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)v;
  if (!ce_dtype_ok(dt)) return false;
  snprintf(out->name, sizeof out->name, "cross_entropy_%s", cmx_dtype_name(dt));
  out->flags = 0;
  int w =
      cmx__gpu_float_prelude(out->prelude, sizeof out->prelude, "CMX_F", dt);
  return w > 0 && (size_t)w < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_cross_entropy = {
    .name = "cross_entropy",
    .file = "cross_entropy",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = ce_variant,
    .shape = {CMX__GPU_CUSTOM, 256, 0}};

cmx_status cmx__gpu_cross_entropy(const cmx_primitive* p, const cmx_array* in,
                                  int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  static const char* op = "cross_entropy";
  cmx_array x = in[0], t = in[1], o = out[0];
  if (!ce_dtype_ok(x->dtype) || t->dtype != CMX_INT64 ||
      o->dtype != CMX_FLOAT32)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(x->dtype));
  if (!(x->flags & CMX__FLAG_ROW_CONTIG) || !(t->flags & CMX__FLAG_ROW_CONTIG))
    return cmx_kernel_error(
        CMX_ERR_RUNTIME, "[%s] expects row-contiguous logits and targets", op);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr px, pt, po;
  st = cmx__gpu_ptr(x, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(t, dev, &pt);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  long long V = x->dims[x->ndim - 1], nrows = o->size;
  long long per16 = 16 / (long long)cmx_dtype_size(x->dtype);
  bool vec = V % per16 == 0 && px % 16 == 0;
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
      dev, &cmx__gpu_family_cross_entropy, (int)x->dtype, vec ? K_VEC : K_GEN);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = {{1, 1, 1}, {32, 1, 1}, 0};
  if (V <= 1024) {
    cfg.block[1] = 8;
  } else {
    /* about 4 loads a thread, up to 1024 threads */
    long long loads = vec ? V / per16 : V;
    unsigned th = 64;
    while (th < 1024 && (long long)th * 4 < loads) th *= 2;
    while ((int)th > k->max_threads && th > 32) th /= 2;
    cfg.block[0] = th;
  }
  cfg.grid[0] = (unsigned)((nrows + cfg.block[1] - 1) / cfg.block[1]);
  CUdeviceptr rec = cmx__gpu_index_error_record();
  int code = cmx__gpu_index_error_code(op, CMX__GPU_IDX_AXIS, NULL);
  int axis = x->ndim - 1;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, pt);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, nrows);
  CMX__GPU_ARG(&args, V);
  CMX__GPU_ARG(&args, rec);
  CMX__GPU_ARG(&args, code);
  CMX__GPU_ARG(&args, axis);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
