/* GPU kernels of Copy and AsType, and the row-major copy other GPU kernels
 * use. Same-dtype copies move bytes with one module per element size
 * (kernels/copy.cu): contiguous sources with 16-byte vectors, strided ones
 * over collapsed dims. Conversions between dtypes are not on the GPU yet
 * and say so. */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"

void cmx__gpu_copy_prelude(size_t itemsize, char* buf, size_t size) {
  const char* t = itemsize == 1   ? "cmx_u8"
                  : itemsize == 2 ? "cmx_u16"
                  : itemsize == 4 ? "cmx_u32"
                                  : "cmx_u64";
  snprintf(buf, size, "#define CMX_T %s\n", t);
}

cmx_status cmx__gpu_copy_rowmajor(cmx_array dst, cmx_array src, int dev,
                                  const char* op) {
  if (src->size == 0) return CMX_OK;
  CUdeviceptr pa, po;
  cmx_status st = cmx__gpu_ptr(src, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(dst, dev, &po);
  if (st != CMX_OK) return st;
  size_t isz = cmx_dtype_size(src->dtype);
  char prelude[64];
  cmx__gpu_copy_prelude(isz, prelude, sizeof prelude);
  /* src's own layout, collapsed, as array 1 (the kernels' input). */
  cmx__gpu_layout l;
  cmx__gpu_collapse(&src, 1, &l);
  memcpy(l.strides[1], l.strides[0], sizeof l.strides[0]);
  long long n = src->size;
  int n32 = (int)n;
  char kernel[32] = "cmx_copy_v";
  int64_t vec = 16 / (int64_t)isz;
  int64_t work = (n + vec - 1) / vec;
  void* args[4] = {&pa, &po, &n, &l};
  if (!(l.ndim == 0 || (l.ndim == 1 && l.strides[1][0] == 1))) {
    bool i32 = cmx__gpu_layout_fits_i32(&l, 2, n);
    snprintf(kernel, sizeof kernel, "cmx_copy_g%d_%d", l.ndim <= 3 ? l.ndim : 0,
             i32 ? 32 : 64);
    if (i32) args[2] = &n32;
    work = n;
  }
  CUfunction f = cmx__gpu_function(dev, "copy", prelude, kernel);
  if (!f) return cmx_last_status();
  st = cmx__gpu_launch(op, f, work, args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(dst);
  return st;
}

cmx_status cmx__gpu_copy(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const char* name = cmx_primitive_name(p);
  cmx_array a = in[0], o = out[0];
  if (a->dtype != o->dtype)
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[%s] converting %s to %s is not implemented on "
                            "the gpu yet",
                            name, cmx_dtype_name(a->dtype),
                            cmx_dtype_name(o->dtype));
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
