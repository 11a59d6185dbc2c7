/* GPU kernel of Scan (kernels/scan.cu): variant kind * CMX_NUM_DTYPES +
 * dtype, the CPU's (kind, dtype) pairs and accumulators (integer sums and
 * products in unsigned arithmetic of at least 32 bits, float16/bfloat16
 * in float32, NaN-propagating max/min, complex max/min by (real, imag)).
 *
 * The output is row-major; a row-major input is read in place of it (or
 * its buffer donated), any other layout is first copied into the output,
 * which is then scanned in place. Seen as (outer, n, inner) with the scan
 * along n: contiguous rows (inner 1) of more than 32 elements take the
 * single-pass tile kernel with decoupled look-back (any number of rows,
 * any length: one read and one write of each element; tiles of 16
 * elements a thread, up to 1024 threads, fewer when CMX_GPU_SCAN_THREADS
 * says so); other shapes a thread per column.
 */
#include "primitives/scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_COL, K_TILE };
static const char* const k_kernels[] = {"cmx_scan_col", "cmx_scan_tile", NULL};

/* Whether the CPU has (kind, dt). */
static bool scan_accepts(int kind, cmx_dtype dt) {
  if (kind < 0 || kind > CMX__SCAN_LOGADDEXP) return false;
  if (kind == CMX__SCAN_LOGADDEXP) return cmx_dtype_is_floating(dt);
  if (dt == CMX_BOOL) return kind != CMX__SCAN_SUM;
  return true;
}

/* The accumulator's size in bytes. */
static size_t acc_size(int kind, cmx_dtype dt) {
  size_t isz = cmx_dtype_size(dt);
  if (dt == CMX_FLOAT16 || dt == CMX_BFLOAT16) return 4;
  if (cmx_dtype_is_inexact(dt)) return isz;
  if (kind == CMX__SCAN_SUM || kind == CMX__SCAN_PROD) return isz == 8 ? 8 : 4;
  return isz;
}

static bool scan_variant(int v, cmx__gpu_variant* out) {
  int kind = v / CMX_NUM_DTYPES;
  cmx_dtype dt = (cmx_dtype)(v % CMX_NUM_DTYPES);
  if (!scan_accepts(kind, dt)) return false;
  static const char* const kn[] = {"sum", "prod", "max", "min", "logaddexp"};
  snprintf(out->name, sizeof out->name, "scan_%s_%s", kn[kind],
           cmx_dtype_name(dt));
  out->flags = 0;
  const char* s = cmx__gpu_dtype_suffix(dt);
  char A[32], LD[64], ST[64];
  const char *OP, *ID;
  bool c = dt == CMX_COMPLEX64, half = dt == CMX_FLOAT16 || dt == CMX_BFLOAT16;
  bool flt = cmx_dtype_is_floating(dt);
  snprintf(LD, sizeof LD, "(x)");
  snprintf(ST, sizeof ST, "(a)");
  if (half) {
    snprintf(A, sizeof A, "float");
    snprintf(LD, sizeof LD, "%s(x)",
             dt == CMX_FLOAT16 ? "cmx_h2f" : "cmx_bf2f");
    snprintf(ST, sizeof ST, "%s(a)",
             dt == CMX_FLOAT16 ? "cmx_f2h" : "cmx_f2bf");
  } else if (c || flt) {
    snprintf(A, sizeof A, "cmx_%s_t", s);
  } else if (kind == CMX__SCAN_SUM || kind == CMX__SCAN_PROD) {
    snprintf(A, sizeof A, "%s",
             cmx_dtype_size(dt) == 8 ? "uint64_t" : "uint32_t");
    snprintf(LD, sizeof LD, "((%s)(x))", A);
    snprintf(ST, sizeof ST, "((cmx_%s_t)(a))", s);
  } else {
    snprintf(A, sizeof A, "cmx_%s_t", s);
  }
  switch (kind) {
    case CMX__SCAN_SUM:
      OP = c ? "cmx_c_cadd(a, b)" : "((a) + (b))";
      ID = c ? "cmx_c64_make(0.0f, 0.0f)" : "0";
      break;
    case CMX__SCAN_PROD:
      OP = c ? "cmx_c_cmul(a, b)" : "((a) * (b))";
      ID = c ? "cmx_c64_make(1.0f, 0.0f)" : "1";
      break;
    case CMX__SCAN_MAX:
      OP = c     ? "cmx_c_cmax(a, b)"
           : flt ? "CMX_C_MAXF(a, b)"
                 : "CMX_C_MAXI(a, b)";
      ID = cmx__gpu_minmax_identity(dt, true);
      break;
    case CMX__SCAN_MIN:
      OP = c     ? "cmx_c_cmin(a, b)"
           : flt ? "CMX_C_MINF(a, b)"
                 : "CMX_C_MINI(a, b)";
      ID = cmx__gpu_minmax_identity(dt, false);
      break;
    default:
      OP = dt == CMX_FLOAT64 ? "cmx_c_laed(a, b)" : "cmx_c_laef(a, b)";
      ID = "(-CMX_INFF)";
  }
  int w = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_C_T cmx_%s_t\n#define CMX_C_A %s\n"
                   "#define CMX_C_LD(x) %s\n#define CMX_C_ST(a) %s\n"
                   "#define CMX_C_OP(a, b) %s\n#define CMX_C_ID %s\n",
                   s, A, LD, ST, OP, ID);
  return w > 0 && (size_t)w < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_scan = {
    .name = "scan",
    .file = "scan",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 5 * CMX_NUM_DTYPES,
    .variant = scan_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* The most threads a tile block takes: 1024, or CMX_GPU_SCAN_THREADS (a
 * power of two from 64 to 1024; read each time, so a benchmark can compare
 * tile sizes in one process). Larger tiles mean fewer look-backs per
 * element: a cumsum of 2^26 float32 on an H100 ran at 0.36 of the copy's
 * bandwidth with 256 threads, 0.38 with 512, 0.43 with 1024. */
static unsigned max_tile_threads(void) {
  const char* e = getenv("CMX_GPU_SCAN_THREADS");
  long v = e ? strtol(e, NULL, 10) : 0;
  if (v < 64 || v > 1024 || (v & (v - 1))) return 1024;
  return (unsigned)v;
}

cmx_status cmx__gpu_scan(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__scan_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const char* op = cmx_primitive_name(p);
  if (!scan_accepts(q->kind, o->dtype) || a->dtype != o->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[Scan] unsupported dtype %s",
                            cmx_dtype_name(o->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  int var = q->kind * CMX_NUM_DTYPES + (int)o->dtype;
  if (o->size == 0) return cmx_kernel_alloc(o);
  bool rowmajor = (a->flags & CMX__FLAG_ROW_CONTIG) != 0;
  cmx_status st =
      rowmajor ? cmx__gpu_alloc_out(o, in, 1, dev, NULL) : cmx_kernel_alloc(o);
  if (st == CMX_OK && !rowmajor) st = cmx__gpu_copy_rowmajor(o, a, dev, op);
  CUdeviceptr px, py;
  if (st == CMX_OK) st = cmx__gpu_ptr(rowmajor ? a : o, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &py);
  if (st != CMX_OK) return st;
  long long outer = 1, inner = 1, n = o->dims[q->axis];
  for (int d = 0; d < o->ndim; d++) {
    if (d < q->axis) outer *= o->dims[d];
    if (d > q->axis) inner *= o->dims[d];
  }
  int rev = q->reverse != 0, incl = q->inclusive != 0;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, py);
  const cmx__gpu_kernel* k;
  if (inner > 1 || n <= 32) {
    CMX__GPU_ARG(&args, outer);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, inner);
    CMX__GPU_ARG(&args, rev);
    CMX__GPU_ARG(&args, incl);
    k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_scan, var, K_COL);
    if (!k) return cmx_last_status();
    cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, outer * inner);
    st = cmx__gpu_launch(op, k, &cfg, &args);
  } else {
    /* tiles of 16 elements a thread, blocks of 64 to max_tile_threads()
     * threads (as many as the kernel allows) */
    k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_scan, var, K_TILE);
    if (!k) return cmx_last_status();
    unsigned threads = 64, cap = max_tile_threads();
    while (threads < cap && (int)threads * 2 <= k->max_threads &&
           (long long)threads * 16 < n)
      threads *= 2;
    long long tile = (long long)threads * 16;
    long long ntiles = (n + tile - 1) / tile, total = ntiles * outer;
    if (total > 0x7fffffffLL)
      return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many tiles", op);
    /* status values are whole 4-byte words (kernels/scan.cu) */
    size_t asz = (acc_size(q->kind, o->dtype) + 3) / 4 * 4;
    /* scratch: counter (16 bytes), flags, then agg and pref arrays */
    size_t flags_b = ((size_t)total * 4 + 15) / 16 * 16;
    size_t vals_b = ((size_t)total * asz + 15) / 16 * 16;
    size_t bytes = 16 + flags_b + 2 * vals_b;
    cmx__buffer* tmp = cmx__device_hooks->alloc_device(bytes, dev);
    if (!tmp) return cmx_last_status();
    CUdeviceptr counter = tmp->dev, flags = counter + 16;
    CUdeviceptr agg = flags + flags_b, pref = agg + vals_b;
    st = cmx__gpu_memset(op, counter, 0, 4, (16 + flags_b) / 4);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, ntiles);
    CMX__GPU_ARG(&args, rev);
    CMX__GPU_ARG(&args, incl);
    CMX__GPU_ARG(&args, counter);
    CMX__GPU_ARG(&args, flags);
    CMX__GPU_ARG(&args, agg);
    CMX__GPU_ARG(&args, pref);
    if (st == CMX_OK) {
      cmx__gpu_cfg cfg = {{(unsigned)total, 1, 1}, {threads, 1, 1}, 0};
      st = cmx__gpu_launch(op, k, &cfg, &args);
    }
    cmx__buffer_release(tmp);
  }
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
