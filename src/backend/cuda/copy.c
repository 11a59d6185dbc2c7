/* GPU kernels of Copy and AsType, and the copies other GPU kernels use
 * (row-major, or between any two layouts). Same-dtype copies move bytes
 * with one module per element size (kernels/copy.cu): contiguous runs with
 * 16-byte vectors, fills of one source element, strided sources into
 * row-major destinations, and strided destinations (any sign, as slice
 * updates with negative steps write them) over collapsed dims.
 * Conversions between dtypes go to the convert family (elementwise.c). */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

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

/* Kernels: contiguous (v), strided source, fill, strided destination, one
 * element put from a launch argument. */
enum {
  K_V,
  K_STRIDED,
  K_FILL = K_STRIDED + CMX__GPU_NUM_STRIDED,
  K_TO,
  K_PUT = K_TO + CMX__GPU_NUM_STRIDED
};
static const char* const k_kernels[] = {
    "cmx_copy_v", CMX__GPU_STRIDED_KERNELS("cmx_copy"), "cmx_fill_v",
    CMX__GPU_STRIDED_KERNELS("cmx_copyto"), "cmx_put_v", NULL};

const cmx__gpu_family cmx__gpu_family_copy = {
    .name = "copy",
    .file = "copy",
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 4,
    .variant = copy_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

cmx_status cmx__gpu_copy_strided(const char* op, int dev, CUdeviceptr dst,
                                 const int64_t* dst_st, CUdeviceptr src,
                                 const int64_t* src_st, const int64_t* shape,
                                 int ndim, size_t isz) {
  int64_t n = 1, rowmajor[CMX_MAX_NDIM];
  for (int d = 0; d < ndim; d++) n *= shape[d];
  if (n == 0) return CMX_OK;
  cmx__row_major_strides(shape, ndim, rowmajor);
  /* the walk (row-major), the destination, the source */
  cmx__gpu_layout l;
  cmx__gpu_layout_from(&l, shape, ndim,
                       (const int64_t* const[]){rowmajor, dst_st, src_st}, 3);
  bool dst_rowmajor = true;
  for (int d = 0; d < l.ndim; d++)
    dst_rowmajor = dst_rowmajor && l.strides[1][d] == l.strides[0][d];
  long long nn = n;
  int kernel;
  int64_t work = n;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, src);
  CMX__GPU_ARG(&args, dst);
  if (dst_rowmajor && l.ndim <= 1 && (l.ndim == 0 || l.strides[2][0] == 1)) {
    kernel = K_V;
    work = (n + (int64_t)(16 / isz) - 1) / (int64_t)(16 / isz);
    CMX__GPU_ARG(&args, nn);
  } else if (dst_rowmajor && l.ndim == 1 && l.strides[2][0] == 0) {
    kernel = K_FILL;
    work = (n + (int64_t)(16 / isz) - 1) / (int64_t)(16 / isz);
    CMX__GPU_ARG(&args, nn);
  } else if (dst_rowmajor) { /* (walk, source) */
    l.narr = 2;
    memcpy(l.strides[1], l.strides[2], sizeof l.strides[1]);
    kernel = K_STRIDED + cmx__gpu_args_strided(&args, &l, n);
  } else {
    kernel = K_TO + cmx__gpu_args_strided(&args, &l, n);
  }
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
      dev, &cmx__gpu_family_copy, cmx__gpu_copy_variant(isz), kernel);
  if (!k) return cmx_last_status();
  /* the contiguous copy streams best one trip a thread (cfg_one_shot) */
  cmx__gpu_cfg cfg = kernel == K_V ? cmx__gpu_cfg_one_shot(k, work)
                                   : cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch(op, k, &cfg, &args);
}

cmx_status cmx__gpu_pack_rowmajor(cmx_array x, int dev, const char* op,
                                  cmx__buffer** out) {
  size_t isz = cmx_dtype_size(x->dtype);
  *out = cmx__device_hooks->alloc_device((size_t)x->size * isz, dev);
  if (!*out) return cmx_last_status();
  CUdeviceptr src;
  int64_t rm[CMX_MAX_NDIM];
  cmx__row_major_strides(x->dims, x->ndim, rm);
  cmx_status st = cmx__gpu_ptr(x, dev, &src);
  if (st == CMX_OK)
    st = cmx__gpu_copy_strided(op, dev, (*out)->dev, rm, src, CMX__STRIDES(x),
                               x->dims, x->ndim, isz);
  return st;
}

cmx_status cmx__gpu_copy_rowmajor(cmx_array dst, cmx_array src, int dev,
                                  const char* op) {
  if (src->size == 0) return CMX_OK;
  CUdeviceptr pa, po;
  cmx_status st = cmx__gpu_ptr(src, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(dst, dev, &po);
  if (st != CMX_OK) return st;
  int64_t rowmajor[CMX_MAX_NDIM];
  cmx__row_major_strides(src->dims, src->ndim, rowmajor);
  st = cmx__gpu_copy_strided(op, dev, po, rowmajor, pa, CMX__STRIDES(src),
                             src->dims, src->ndim, cmx_dtype_size(src->dtype));
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

cmx_status cmx__gpu_put_value(const char* op, int dev, CUdeviceptr dst,
                              const void* value, size_t size) {
  if (size != 1 && size != 2 && size != 4 && size != 8)
    return cmx__error(CMX_ERR_RUNTIME, "[%s] gpu put of %zu bytes", op, size);
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(
      dev, &cmx__gpu_family_copy, cmx__gpu_copy_variant(size), K_PUT);
  if (!k) return cmx_last_status();
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, dst);
  /* the value as the kernel's T: its bytes, aligned as T */
  cmx__gpu_args_add(&args, value, size, size);
  cmx__gpu_cfg cfg = {.grid = {1, 1, 1}, .block = {32, 1, 1}, .shared = 0};
  return cmx__gpu_launch(op, k, &cfg, &args);
}
