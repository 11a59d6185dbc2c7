/* GPU kernel of Softmax (kernels/softmax.cu): one variant per floating
 * dtype; float16/bfloat16 compute in float32 whatever `precise` says, as
 * the CPU's kernel does. A row (the softmax axes of one position of the
 * other dims) is taken by a warp (8 rows a block) when it is at most 512
 * elements long, else by a block of up to 1024 threads; rows of up to 16
 * elements a thread stay in registers (one read and one write of each
 * element), longer ones are read three times. Any input layout: the
 * rows' elements are addressed through collapsed layouts of the input and
 * of the row-major output (contiguous rows take the direct kernels).
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/reduce.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_REG_C, K_REG_0, K_LOOP_C, K_LOOP_0 };
static const char* const k_kernels[] = {"cmx_sm_reg_c", "cmx_sm_reg_0",
                                        "cmx_sm_loop_c", "cmx_sm_loop_0", NULL};

bool cmx__gpu_float_variant(int v, const char* family, cmx__gpu_variant* out) {
  cmx_dtype dt = (cmx_dtype)v;
  if (!cmx_dtype_is_floating(dt)) return false;
  static const char* const t[4][4] = {
      {"cmx_f16_t", "float", "cmx_h2f(x)", "cmx_f2h(v)"},
      {"cmx_bf16_t", "float", "cmx_bf2f(x)", "cmx_f2bf(v)"},
      {"float", "float", "(x)", "(v)"},
      {"double", "double", "(x)", "(v)"}};
  int i = dt == CMX_FLOAT16    ? 0
          : dt == CMX_BFLOAT16 ? 1
          : dt == CMX_FLOAT32  ? 2
                               : 3;
  snprintf(out->name, sizeof out->name, "%s_%s", family, cmx_dtype_name(dt));
  out->flags = 0;
  int w = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_S_T %s\n#define CMX_S_F %s\n"
                   "#define CMX_S_TOF(x) %s\n#define CMX_S_FROMF(v) %s\n",
                   t[i][0], t[i][1], t[i][2], t[i][3]);
  return w > 0 && (size_t)w < sizeof out->prelude;
}

static bool sm_variant(int v, cmx__gpu_variant* out) {
  return cmx__gpu_float_variant(v, "softmax", out);
}

const cmx__gpu_family cmx__gpu_family_softmax = {
    .name = "softmax",
    .file = "softmax",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = sm_variant,
    .shape = {CMX__GPU_CUSTOM, 256, 0}};

cmx_status cmx__gpu_softmax(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const char* op = cmx_primitive_name(p);
  if (!cmx_dtype_is_floating(a->dtype) || o->dtype != a->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(a->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  bool isred[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < q->naxes; i++) isred[q->axes[i]] = true;
  int64_t ostr[CMX_MAX_NDIM];
  cmx__row_major_strides(o->dims, o->ndim, ostr);
  int64_t ks[CMX_MAX_NDIM] = {0}, krm[CMX_MAX_NDIM] = {0},
          kis[CMX_MAX_NDIM] = {0}, kos[CMX_MAX_NDIM] = {0};
  int64_t rs[CMX_MAX_NDIM] = {0}, rrm[CMX_MAX_NDIM] = {0},
          ris[CMX_MAX_NDIM] = {0}, ros[CMX_MAX_NDIM] = {0};
  int nkd = 0, nrd = 0;
  for (int d = 0; d < a->ndim; d++) {
    if (isred[d]) {
      rs[nrd] = a->dims[d], ris[nrd] = CMX__STRIDES(a)[d];
      ros[nrd++] = ostr[d];
    } else {
      ks[nkd] = a->dims[d], kis[nkd] = CMX__STRIDES(a)[d];
      kos[nkd++] = ostr[d];
    }
  }
  cmx__row_major_strides(ks, nkd, krm);
  cmx__row_major_strides(rs, nrd, rrm);
  int64_t nrows = 1, len = 1;
  for (int i = 0; i < nkd; i++) nrows *= ks[i];
  for (int i = 0; i < nrd; i++) len *= rs[i];
  cmx__gpu_layout K, R;
  cmx__gpu_layout_from(&K, ks, nkd, (const int64_t* const[]){krm, kis, kos}, 3);
  cmx__gpu_layout_from(&R, rs, nrd, (const int64_t* const[]){rrm, ris, ros}, 3);
  bool contig = R.ndim == 0 ||
                (R.ndim == 1 && R.strides[1][0] == 1 && R.strides[2][0] == 1);
  CUdeviceptr px, py;
  st = cmx__gpu_ptr(a, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &py);
  if (st != CMX_OK) return st;
  cmx__gpu_cfg cfg = {{1, 1, 1}, {32, 1, 1}, 0};
  unsigned t = 32;
  if (len <= 512) {
    cfg.block[1] = 8;
  } else {
    t = 64;
    while (t < 1024 && (int64_t)t * 16 < len) t *= 2;
  }
  /* the register kernels may allow fewer threads a block than 1024 */
  const cmx__gpu_kernel* k = NULL;
  int kernel = -1;
  for (int tries = 0; tries < 2; tries++) {
    bool reg = len <= 16 * (int64_t)t;
    kernel =
        reg ? (contig ? K_REG_C : K_REG_0) : (contig ? K_LOOP_C : K_LOOP_0);
    k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_softmax, (int)a->dtype,
                            kernel);
    if (!k) return cmx_last_status();
    if ((int)t <= k->max_threads) break;
    while ((int)t > k->max_threads && t > 32) t /= 2;
  }
  cfg.block[0] = t;
  cfg.grid[0] = (unsigned)((nrows + cfg.block[1] - 1) / cfg.block[1]);
  long long nr = nrows, ln = len;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, py);
  CMX__GPU_ARG(&args, nr);
  CMX__GPU_ARG(&args, ln);
  cmx__gpu_args_layout(&args, &K);
  cmx__gpu_args_layout(&args, &R);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
