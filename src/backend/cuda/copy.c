/* GPU kernels of Copy and AsType, and the row-major copy other GPU kernels
 * use. Same-dtype copies move bytes with one module per element size
 * (kernels/copy.cu): contiguous sources with 16-byte vectors, strided ones
 * over collapsed dims. Conversions between dtypes are not on the GPU yet
 * and say so. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"

/* Variants: one per element size, 1 << v bytes. */
int cmx__gpu_copy_variant(size_t itemsize) {
  return itemsize == 1 ? 0 : itemsize == 2 ? 1 : itemsize == 4 ? 2 : 3;
}

static bool copy_variant(int v, cmx__gpu_variant* out) {
  static const char* const types[] = {"cmx_u8", "cmx_u16", "cmx_u32",
                                      "cmx_u64"};
  snprintf(out->name, sizeof out->name, "copy_%d", 1 << v);
  snprintf(out->prelude, sizeof out->prelude, "#define CMX_T %s\n", types[v]);
  return true;
}

/* Kernels: contiguous (v), then strided. */
enum { K_V, K_STRIDED };
static const char* const k_kernels[] = {
    "cmx_copy_v", CMX__GPU_STRIDED_KERNELS("cmx_copy"), NULL};

const cmx__gpu_family cmx__gpu_family_copy = {
    .name = "copy",
    .file = "copy",
    .kernels = k_kernels,
    .nvariants = 4,
    .variant = copy_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

cmx_status cmx__gpu_copy_packed(CUdeviceptr po, CUdeviceptr pa, size_t isz,
                                const int64_t* shape, const int64_t* strides,
                                int ndim, const char* op) {
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  if (n == 0) return CMX_OK;
  int dev = -1;
  if (!cmx__gpu_current_stream(&dev))
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] gpu work can only be issued by a task of a gpu "
                      "stream",
                      op);
  /* The output row-major (array 0), the source as it is (array 1). */
  int64_t rowmajor[CMX_MAX_NDIM], step = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    rowmajor[d] = step;
    step *= shape[d];
  }
  cmx__gpu_layout l;
  cmx__gpu_layout_from(&l, shape, ndim,
                       (const int64_t* const[]){rowmajor, strides}, 2);
  int kernel = K_V;
  int64_t vec = 16 / (int64_t)isz;
  int64_t work = (n + vec - 1) / vec;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, pa);
  CMX__GPU_ARG(&args, po);
  if (!(l.ndim == 0 || (l.ndim == 1 && l.strides[1][0] == 1))) {
    kernel = K_STRIDED + cmx__gpu_args_strided(&args, &l, n);
    work = n;
  } else {
    long long nn = n;
    CMX__GPU_ARG(&args, nn);
  }
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
      dev, &cmx__gpu_family_copy, cmx__gpu_copy_variant(isz), kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch(op, k, &cfg, &args);
}

cmx_status cmx__gpu_copy_rowmajor(cmx_array dst, cmx_array src, int dev,
                                  const char* op) {
  if (src->size == 0) return CMX_OK;
  CUdeviceptr pa, po;
  cmx_status st = cmx__gpu_ptr(src, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(dst, dev, &po);
  if (st == CMX_OK)
    st = cmx__gpu_copy_packed(po, pa, cmx_dtype_size(src->dtype), src->dims,
                              CMX__STRIDES(src), src->ndim, op);
  if (st == CMX_OK) cmx_kernel_mark_device_written(dst);
  return st;
}

cmx_status cmx__gpu_copy(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const char* name = cmx_primitive_name(p);
  cmx_array a = in[0], o = out[0];
  if (a->dtype != o->dtype) return cmx__gpu_convert(p, a, o);
  if (o->size == 0) return cmx_kernel_alloc(o);
  int dev = cmx_primitive_stream(p).device.index;
  CUdeviceptr pa;
  int donated;
  cmx_status st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_alloc_out(o, in, 1, dev, &donated);
  if (st != CMX_OK) return st;
  if (donated == 0) { /* the buffer already holds the values */
    cmx_kernel_mark_device_written(o);
    return CMX_OK;
  }
  return cmx__gpu_copy_rowmajor(o, a, dev, name);
}
