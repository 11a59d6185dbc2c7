/* GPU kernels of binary elementwise primitives (Add, Subtract, Multiply
 * so far).
 *
 * One CUDA source (kernels/binary.cu) serves every (op, dtype) pair: the
 * pair's prelude #defines the storage and compute types, the load/store
 * conversions and the operation, and each pair becomes its own module,
 * compiled at first use. Layouts are handled as on the CPU: after
 * collapsing dims, both inputs contiguous, one a broadcast scalar (stride
 * 0), or general strides; the output is always contiguous (fresh, or an
 * input's buffer donated in place).
 */
#include <stdio.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

/* Storage type, compute type, load and store per dtype. Integers compute
 * in unsigned types so overflow wraps without undefined behaviour;
 * float16/bfloat16 compute in float32. */
static const struct {
  const char *t, *ct, *load, *store;
} k_types[CMX_NUM_DTYPES] = {
    [CMX_BOOL] = {"cmx_u8", "cmx_u32", "(cmx_u32)(x)", "(cmx_u8)(x)"},
    [CMX_UINT8] = {"cmx_u8", "cmx_u32", "(cmx_u32)(x)", "(cmx_u8)(x)"},
    [CMX_UINT16] = {"cmx_u16", "cmx_u32", "(cmx_u32)(x)", "(cmx_u16)(x)"},
    [CMX_UINT32] = {"cmx_u32", "cmx_u32", "(x)", "(x)"},
    [CMX_UINT64] = {"cmx_u64", "cmx_u64", "(x)", "(x)"},
    [CMX_INT8] = {"cmx_i8", "cmx_u32", "(cmx_u32)(x)", "(cmx_i8)(x)"},
    [CMX_INT16] = {"cmx_i16", "cmx_u32", "(cmx_u32)(x)", "(cmx_i16)(x)"},
    [CMX_INT32] = {"cmx_i32", "cmx_u32", "(cmx_u32)(x)", "(cmx_i32)(x)"},
    [CMX_INT64] = {"cmx_i64", "cmx_u64", "(cmx_u64)(x)", "(cmx_i64)(x)"},
    [CMX_FLOAT16] = {"cmx_u16", "float", "cmx_h2f(x)", "cmx_f2h(x)"},
    [CMX_BFLOAT16] = {"cmx_u16", "float", "cmx_bf2f(x)", "cmx_f2bf(x)"},
    [CMX_FLOAT32] = {"float", "float", "(x)", "(x)"},
    [CMX_FLOAT64] = {"double", "double", "(x)", "(x)"},
    [CMX_COMPLEX64] = {"cmx_c64", "cmx_c64", "(x)", "(x)"},
};

/* The operation of a primitive on dtype dt as an expression of x and y
 * (compute-type values), or NULL when it has no GPU kernel. The results
 * match the CPU backend's bit for bit: bool add/subtract/multiply are
 * or/xor/and, integers wrap, complex products are formed in double. */
static const char* op_expr(int id, cmx_dtype dt) {
  bool b = dt == CMX_BOOL, c = dt == CMX_COMPLEX64;
  switch (id) {
    case CMX__P_Add:
      return b ? "((x) | (y))" : "((x) + (y))";
    case CMX__P_Subtract:
      return b ? "((x) ^ (y))" : "((x) - (y))";
    case CMX__P_Multiply:
      return b ? "((x) & (y))" : c ? "cmx_cmul((x), (y))" : "((x) * (y))";
    default:
      return NULL;
  }
}

/* Variants: one per (primitive, dtype) pair, v = id * CMX_NUM_DTYPES + dt. */
int cmx__gpu_binary_variant(int prim_id, cmx_dtype dt) {
  if ((int)dt < 0 || dt >= CMX_NUM_DTYPES || !op_expr(prim_id, dt)) return -1;
  return prim_id * CMX_NUM_DTYPES + (int)dt;
}

static bool binary_variant(int v, cmx__gpu_variant* out) {
  int id = v / CMX_NUM_DTYPES;
  cmx_dtype dt = (cmx_dtype)(v % CMX_NUM_DTYPES);
  const char* op = op_expr(id, dt);
  if (!op) return false;
  snprintf(out->name, sizeof out->name, "binary_%s_%s",
           cmx__all_primitives[id]->name, cmx_dtype_name(dt));
  int n = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_T %s\n#define CMX_CT %s\n"
                   "#define CMX_LOAD(x) %s\n#define CMX_STORE(x) %s\n"
                   "#define CMX_OP(x, y) %s\n",
                   k_types[dt].t, k_types[dt].ct, k_types[dt].load,
                   k_types[dt].store, op);
  return n > 0 && (size_t)n < sizeof out->prelude;
}

/* Kernels: contiguous (vv), a scalar operand (sv, vs), then strided. */
enum { K_VV, K_SV, K_VS, K_STRIDED };
static const char* const k_kernels[] = {
    "cmx_binary_vv", "cmx_binary_sv", "cmx_binary_vs",
    CMX__GPU_STRIDED_KERNELS("cmx_binary"), NULL};

const cmx__gpu_family cmx__gpu_family_binary = {
    .name = "binary",
    .file = "binary",
    .kernels = k_kernels,
    .nvariants = CMX__NUM_PRIMITIVES * CMX_NUM_DTYPES,
    .variant = binary_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

cmx_status cmx__gpu_binary(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  cmx_array a = in[0], b = in[1], o = out[0];
  int var = cmx__gpu_binary_variant(vt->id, a->dtype);
  if (var < 0)
    return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                            "[%s] has no gpu kernel for dtype %s", vt->name,
                            cmx_dtype_name(a->dtype));
  if (o->size == 0) return cmx_kernel_alloc(o);
  int dev = cmx_primitive_stream(p).device.index;
  CUdeviceptr pa, pb, po;
  cmx_status st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(b, dev, &pb);
  if (st == CMX_OK) st = cmx__gpu_alloc_out(o, in, 2, dev, NULL);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;

  cmx__gpu_layout l;
  cmx__gpu_layout_make(&l, (cmx_array[]){o, a, b}, 3);
  int64_t s1 = l.ndim == 1 ? l.strides[1][0] : 1;
  int64_t s2 = l.ndim == 1 ? l.strides[2][0] : 1;
  int kernel = -1;
  if (l.ndim <= 1 && s1 == 1 && s2 == 1)
    kernel = K_VV;
  else if (l.ndim == 1 && s1 == 0 && s2 == 1)
    kernel = K_SV;
  else if (l.ndim == 1 && s1 == 1 && s2 == 0)
    kernel = K_VS;
  long long n = o->size;
  int64_t work = n;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, pa);
  CMX__GPU_ARG(&args, pb);
  CMX__GPU_ARG(&args, po);
  if (kernel < 0) {
    kernel = K_STRIDED + cmx__gpu_args_strided(&args, &l, n);
  } else {
    CMX__GPU_ARG(&args, n);
    int64_t vec = 16 / (int64_t)cmx_dtype_size(o->dtype);
    work = (n + vec - 1) / vec;
  }
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_binary, var, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  st = cmx__gpu_launch(vt->name, k, &cfg, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
