/* GPU kernel of RandomBits (kernels/random.cu): threefry2x32 giving the
 * CPU's bits (backend/cpu/random.c) for every key, shape and width, so
 * every sampler built on it agrees across devices. One thread per counter
 * pair; keys are read in place in any layout. */
#include "primitives/random.h"

#include <stdio.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

static const char* const k_kernels[] = {"cmx_random_bits", NULL};

static bool random_variant(int v, cmx__gpu_variant* out) {
  (void)v;
  snprintf(out->name, sizeof out->name, "random_bits");
  out->prelude[0] = 0;
  out->flags = 0;
  return true;
}

const cmx__gpu_family cmx__gpu_family_random = {
    .name = "random",
    .file = "random",
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 1,
    .variant = random_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

cmx_status cmx__gpu_random_bits(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  cmx_array keys = in[0], o = out[0];
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  int64_t nkeys = keys->size / 2;
  if (st != CMX_OK || o->size == 0 || nkeys == 0) return st;
  CUdeviceptr pk, po;
  st = cmx__gpu_ptr(keys, dev, &pk);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  long long bpk = o->size / nkeys * (int64_t)cmx_dtype_size(o->dtype);
  long long words = (bpk + 3) / 4, half = words / 2, h = words - half;
  long long total = nkeys * h;
  /* the keys' words in row-major order (array 0), where they lie (1) */
  int64_t rowmajor[CMX_MAX_NDIM];
  cmx__row_major_strides(keys->dims, keys->ndim, rowmajor);
  cmx__gpu_layout l;
  cmx__gpu_layout_from(&l, keys->dims, keys->ndim,
                       (const int64_t* const[]){rowmajor, CMX__STRIDES(keys)},
                       2);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, pk);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, total);
  CMX__GPU_ARG(&args, h);
  CMX__GPU_ARG(&args, half);
  CMX__GPU_ARG(&args, bpk);
  cmx__gpu_args_layout(&args, &l);
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_random, 0, 0);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, total);
  st = cmx__gpu_launch(cmx_primitive_name(p), k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
