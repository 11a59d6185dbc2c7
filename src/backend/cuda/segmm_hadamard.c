/* GPU kernels of Hadamard (hadamard_transform) and SegmentedMM
 * (kernels/hadamard.cu), one variant per floating dtype (16-bit floats
 * compute in float32, as the CPU's kernels do).
 *
 * Hadamard: the input is copied row-major into the output, then each row
 * is transformed in place in shared memory by one block; rows longer than
 * the device's shared memory allows (N compute values) have no GPU
 * implementation and say so.
 * SegmentedMM: a tiled kernel over (columns, rows, segments); any layout
 * of a and b; the segments packed row-major when they are not. A bound
 * past K is clamped to K and reported once the stream has finished (gpu.h,
 * deferred index errors), as the CPU reports it at once.
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/hadamard.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_HADAMARD, K_SEGMM };
static const char* const k_kernels[] = {"cmx_hadamard", "cmx_segmm", NULL};

static bool float_variant(int v, cmx__gpu_variant* out) {
  return cmx__gpu_float_variant(v, "hadamard", out);
}

const cmx__gpu_family cmx__gpu_family_hadamard = {
    .name = "hadamard",
    .file = "hadamard",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = float_variant,
    .shape = {CMX__GPU_CUSTOM, 256, 0}};

typedef struct {
  int8_t h[28 * 28];
} had_m;

cmx_status cmx__gpu_hadamard(const cmx_primitive* p, const cmx_array* in,
                             int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__hadamard_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_dtype dt = o->dtype;
  if (a->dtype != dt || !cmx_dtype_is_floating(dt))
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[hadamard_transform] unsupported dtype %s",
                            cmx_dtype_name(a->dtype));
  int64_t N = a->ndim ? a->dims[a->ndim - 1] : 1, n;
  int m;
  if (!cmx__hadamard_split(N, &m, &n))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[hadamard_transform] Unsupported size %lld.",
                            (long long)N);
  int dev = cmx_primitive_stream(p).device.index;
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  size_t shared = (size_t)N * (dt == CMX_FLOAT64 ? 8 : 4);
  if (shared > (size_t)d->shared_optin)
    return cmx_kernel_error(
        CMX_ERR_NOT_IMPLEMENTED,
        "[hadamard_transform] rows of %lld elements "
        "have no gpu implementation (at most %lld)",
        (long long)N, (long long)d->shared_optin / (dt == CMX_FLOAT64 ? 8 : 4));
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  st = cmx__gpu_copy_rowmajor(o, a, dev, "hadamard_transform");
  if (st != CMX_OK) return st;
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_hadamard, (int)dt, K_HADAMARD);
  if (!k) return cmx_last_status();
  CUdeviceptr po;
  st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  had_m h;
  memset(&h, 0, sizeof h);
  if (m > 1) cmx__hadamard_m(m, h.h);
  long long rows = o->size / N;
  int ni = (int)n, tr = q->transpose;
  double scale = q->scale;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, rows);
  CMX__GPU_ARG(&args, ni);
  CMX__GPU_ARG(&args, m);
  CMX__GPU_ARG(&args, tr);
  CMX__GPU_ARG(&args, scale);
  CMX__GPU_ARG(&args, h);
  int64_t threads = N / 2 < 32 ? 32 : N / 2 > 512 ? 512 : N / 2;
  int64_t grid = rows < (int64_t)d->sm_count * 16 ? rows : d->sm_count * 16;
  cmx__gpu_cfg cfg = {
      {(unsigned)grid, 1, 1}, {(unsigned)threads, 1, 1}, shared};
  st = cmx__gpu_launch("hadamard_transform", k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

cmx_status cmx__gpu_segmented_mm(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  cmx_array a = in[0], b = in[1], sg = in[2], o = out[0];
  cmx_dtype dt = o->dtype;
  if (!cmx_dtype_is_floating(dt) || a->dtype != dt || b->dtype != dt)
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[segmented_mm] dtype %s has no gpu "
                            "implementation",
                            cmx_dtype_name(dt));
  if (sg->dtype != CMX_UINT32)
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[segmented_mm] segments must be uint32");
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  int dev = cmx_primitive_stream(p).device.index;
  int64_t M = a->dims[0], K = a->dims[1], N = b->dims[1];
  long long nseg = sg->size / 2;
  if (M > 65535 * 16 || N > 0x7fffffff || K > 0x7fffffff)
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[segmented_mm] a (%lld, %lld) @ b (%lld, %lld) "
                            "is past the gpu kernel's sizes",
                            (long long)M, (long long)K, (long long)K,
                            (long long)N);
  CUdeviceptr pa, pb, ps, po;
  cmx__buffer* packed = NULL;
  st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(b, dev, &pb);
  if (st == CMX_OK) st = cmx__gpu_ptr(sg, dev, &ps);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st == CMX_OK && !(sg->flags & CMX__FLAG_ROW_CONTIG)) {
    st = cmx__gpu_pack_rowmajor(sg, dev, "segmented_mm", &packed);
    if (packed) ps = packed->dev;
  }
  const cmx__gpu_kernel* k =
      st == CMX_OK ? cmx__gpu_kernel_get(dev, &cmx__gpu_family_hadamard,
                                         (int)dt, K_SEGMM)
                   : NULL;
  if (st == CMX_OK && !k) st = cmx_last_status();
  if (st == CMX_OK) {
    const int64_t* as = CMX__STRIDES(a);
    const int64_t* bs = CMX__STRIDES(b);
    int Mi = (int)M, Ni = (int)N, Ki = (int)K;
    long long ar = as[0], ac = as[1], br = bs[0], bc = bs[1];
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, pa);
    CMX__GPU_ARG(&args, pb);
    CMX__GPU_ARG(&args, ps);
    CMX__GPU_ARG(&args, po);
    CMX__GPU_ARG(&args, nseg);
    CMX__GPU_ARG(&args, Mi);
    CMX__GPU_ARG(&args, Ni);
    CMX__GPU_ARG(&args, Ki);
    CMX__GPU_ARG(&args, ar);
    CMX__GPU_ARG(&args, ac);
    CMX__GPU_ARG(&args, br);
    CMX__GPU_ARG(&args, bc);
    CUdeviceptr rec = cmx__gpu_index_error_record();
    int code = cmx__gpu_index_error_code("segmented_mm", CMX__GPU_IDX_SEGMENT,
                                         NULL);
    CMX__GPU_ARG(&args, rec);
    CMX__GPU_ARG(&args, code);
    unsigned gz = nseg < 65535 ? (unsigned)nseg : 65535u;
    cmx__gpu_cfg cfg = {
        {(unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16), gz},
        {16, 16, 1},
        0};
    st = cmx__gpu_launch("segmented_mm", k, &cfg, &args);
  }
  if (packed) cmx__buffer_release(packed);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
