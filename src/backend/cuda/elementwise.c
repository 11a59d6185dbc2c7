/* GPU kernels of every elementwise primitive of the op table, and of dtype
 * conversions (AsType, Copy between dtypes).
 *
 * Two kernel families share one source (kernels/elementwise.cu) and the
 * scalar semantics every backend compiles (primitives/ew_scalar.h, bound
 * for CUDA by kernels/ew_bind.cu):
 *   elementwise   variant id * CMX_NUM_DTYPES + dtype: the table row's
 *                 expression for that dtype (cmx__ew_prelude)
 *   convert       variant src * CMX_NUM_DTYPES + dst: cmx_cvt_<dst>
 * so a new row of the op table has its GPU kernel with no code here.
 * Layouts are as on the CPU: after collapsing dims, every input contiguous
 * or a broadcast scalar (cmx_ew_c<mask>: 16-byte accesses), else general
 * strides. The output is contiguous: fresh, or a donated input buffer.
 * Complex64 variants need libcu++ (the toolkit's CCCL headers) for their
 * functions.
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"

/* The bindings and semantics put between a variant's prelude and the
 * kernels. */
static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

/* Kernels: the contiguous ones by broadcast mask, then the strided. */
enum { K_CONTIG = 0, K_STRIDED = 7 };
static const char* const k_kernels[] = {
    "cmx_ew_c0", "cmx_ew_c1", "cmx_ew_c2", "cmx_ew_c3",
    "cmx_ew_c4", "cmx_ew_c5", "cmx_ew_c6", CMX__GPU_STRIDED_KERNELS("cmx_ew"),
    NULL};

static bool finish_variant(cmx__gpu_variant* out, int n, bool complex) {
  if (n <= 0 || (size_t)n >= sizeof out->prelude) return false;
  out->flags = complex ? CMX__GPU_NEEDS_CCCL : 0;
  if (complex) {
    int m = snprintf(out->prelude + n, sizeof out->prelude - (size_t)n,
                     "#define CMX_EW_Z_FUNCTIONS\n");
    return m > 0 && (size_t)(n + m) < sizeof out->prelude;
  }
  return true;
}

static bool ew_variant(int v, cmx__gpu_variant* out) {
  int id = v / CMX_NUM_DTYPES;
  cmx_dtype dt = (cmx_dtype)(v % CMX_NUM_DTYPES);
  const cmx__ew_op* op = cmx__ew_op_get(id);
  if (!op || !cmx__ew_accepts(op, dt)) return false;
  snprintf(out->name, sizeof out->name, "elementwise_%s_%s", op->name,
           cmx_dtype_name(dt));
  int n =
      snprintf(out->prelude, sizeof out->prelude,
               "#define CMX_EW_ARITY %d\n#define CMX_EW_VARIANT \"%s %s\"\n",
               op->arity, op->name, cmx_dtype_name(dt));
  if (n <= 0 || !cmx__ew_prelude(op, dt, "CMX_", out->prelude + n,
                                 sizeof out->prelude - (size_t)n))
    return false;
  return finish_variant(
      out, (int)strlen(out->prelude),
      dt == CMX_COMPLEX64 || cmx__ew_out_dtype(op, dt) == CMX_COMPLEX64);
}

static bool convert_variant(int v, cmx__gpu_variant* out) {
  cmx_dtype src = (cmx_dtype)(v / CMX_NUM_DTYPES);
  cmx_dtype dst = (cmx_dtype)(v % CMX_NUM_DTYPES);
  snprintf(out->name, sizeof out->name, "convert_%s_%s", cmx_dtype_name(src),
           cmx_dtype_name(dst));
  int n = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_EW_VARIANT \"convert %s %s\"\n"
                   "#define CMX_EW_ARITY 1\n#define CMX_CT CMX_IN_T\n"
                   "#define CMX_LOAD(v) (v)\n#define CMX_STORE(v) (v)\n"
                   "#define CMX_OP(x) CMX_CONVERT(x)\n",
                   cmx_dtype_name(src), cmx_dtype_name(dst));
  if (n <= 0 || !cmx__ew_convert_prelude(src, dst, "CMX_", out->prelude + n,
                                         sizeof out->prelude - (size_t)n))
    return false;
  /* conversions use no complex functions: no libcu++ needed */
  return finish_variant(out, (int)strlen(out->prelude), false);
}

const cmx__gpu_family cmx__gpu_family_elementwise = {
    .name = "elementwise",
    .file = "elementwise",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX__NUM_PRIMITIVES * CMX_NUM_DTYPES,
    .variant = ew_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

const cmx__gpu_family cmx__gpu_family_convert = {
    .name = "convert",
    .file = "elementwise",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES * CMX_NUM_DTYPES,
    .variant = convert_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* Runs variant var of family f over in[0..nin) into out (allocated here,
 * or donated by an input of out's item size and shape). */
static cmx_status run(const char* op, int dev, const cmx__gpu_family* f,
                      int var, const cmx_array* in, int nin, cmx_array out,
                      const cmx_ew_params* prm) {
  if (out->size == 0) return cmx_kernel_alloc(out);
  CUdeviceptr ptr[3] = {0, 0, 0}, po = 0;
  cmx_status st = CMX_OK;
  for (int i = 0; i < nin && st == CMX_OK; i++)
    st = cmx__gpu_ptr(in[i], dev, &ptr[i]);
  /* Select's condition (1 byte) cannot take a wider output's place */
  int first = nin == 3 ? 1 : 0;
  if (st == CMX_OK)
    st = cmx__gpu_alloc_out(out, in + first, nin - first, dev, NULL);
  if (st == CMX_OK) st = cmx__gpu_ptr(out, dev, &po);
  if (st != CMX_OK) return st;

  cmx_array arrays[4] = {out, NULL, NULL, NULL};
  for (int i = 0; i < nin; i++) arrays[i + 1] = in[i];
  cmx__gpu_layout l;
  cmx__gpu_layout_make(&l, arrays, nin + 1);
  /* contiguous operands, or broadcast ones (mask bit k: input k) */
  int mask = 0;
  bool contig = l.ndim <= 1 && (l.ndim == 0 || l.strides[0][0] == 1);
  for (int i = 0; contig && i < nin; i++) {
    int64_t s = l.ndim ? l.strides[i + 1][0] : 1;
    if (s == 0)
      mask |= 1 << i;
    else if (s != 1)
      contig = false;
  }
  if (mask == (1 << nin) - 1) contig = false; /* all broadcast: strided */
  long long n = out->size;
  int64_t work = n;
  cmx_ew_params p = prm ? *prm : (cmx_ew_params){0, 0};
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  for (int i = 0; i < 3; i++) CMX__GPU_ARG(&args, ptr[i]);
  CMX__GPU_ARG(&args, po);
  int kernel;
  if (contig) {
    kernel = K_CONTIG + mask;
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, p);
    /* V elements a thread: 16 bytes of the widest operand */
    size_t widest = cmx_dtype_size(out->dtype);
    for (int i = 0; i < nin; i++)
      if (cmx_dtype_size(in[i]->dtype) > widest)
        widest = cmx_dtype_size(in[i]->dtype);
    int64_t v = (int64_t)(16 / widest);
    work = (n + v - 1) / v;
  } else {
    /* strided kernels take (n, P, L): the count, then the parameters */
    bool i32 = cmx__gpu_layout_fits_i32(&l, n);
    int n32 = (int)n;
    if (i32)
      CMX__GPU_ARG(&args, n32);
    else
      CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, p);
    cmx__gpu_args_layout(&args, &l);
    kernel = K_STRIDED + cmx__gpu_strided_kernel(&l, i32);
  }
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, f, var, kernel);
  if (!k) return cmx_last_status();
  /* contiguous unary/binary/ternary kernels stream best one trip a thread
   * (cfg_one_shot); conversions measured slower so, and keep the cap */
  cmx__gpu_cfg cfg = contig && f == &cmx__gpu_family_elementwise
                         ? cmx__gpu_cfg_one_shot(k, work)
                         : cmx__gpu_cfg_for(k, work);
  st = cmx__gpu_launch(op, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(out);
  return st;
}

cmx_status cmx__gpu_elementwise(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout) {
  (void)nout;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  const cmx__ew_op* op = cmx__ew_op_get(vt->id);
  cmx_dtype dt = in[nin == 3 ? 1 : 0]->dtype;
  if (!op || op->arity != nin || !cmx__ew_accepts(op, dt))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", vt->name,
                            cmx_dtype_name(dt));
  cmx_ew_params prm = cmx__ew_params_of(p);
  return run(vt->name, cmx_primitive_stream(p).device.index,
             &cmx__gpu_family_elementwise, vt->id * CMX_NUM_DTYPES + (int)dt,
             in, nin, out[0], &prm);
}

cmx_status cmx__gpu_convert(const cmx_primitive* p, cmx_array in,
                            cmx_array out) {
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  return run(
      vt->name, cmx_primitive_stream(p).device.index, &cmx__gpu_family_convert,
      (int)in->dtype * CMX_NUM_DTYPES + (int)out->dtype, &in, 1, out, NULL);
}
