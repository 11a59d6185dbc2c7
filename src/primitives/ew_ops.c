/* The op table as data: each row's rules and the text of its expressions,
 * for the op layer (dtype rules) and for backends that generate kernels
 * from source (CUDA through NVRTC; compile's generated code).
 *
 * This file must not include <math.h> or ew_scalar.h: the expressions are
 * stringified after macro expansion, and their helper names (isnan,
 * cmx_iabs, CMX_INFF ...) must stay as written for the generated source to
 * bind them.
 */
#include "primitives/elementwise.h"
#include "primitives/ew_ops.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"

/* Slot -> kind constant and expression text. */
#define KIND_(kind, expr) CMX__EW_KIND_##kind
#define KIND(slot) CMX__EW_SLOT(KIND_, slot)
#define TEXT_(kind, expr) CMX__EW_CAT(TEXT_, kind)(expr)
#define TEXT_E(expr) #expr
#define TEXT_W(expr) #expr
#define TEXT_NO(expr) NULL
#define TEXT(slot) CMX__EW_SLOT(TEXT_, slot)

#define ROW_(Nm, ar, ou, in_, fl, B, U, S, F, D, C)                \
  {.id = CMX__P_##Nm,                                              \
   .name = #Nm,                                                    \
   .arity = ar,                                                    \
   .out = ou,                                                      \
   .in = in_,                                                      \
   .flags = fl,                                                    \
   .kind = {KIND(B), KIND(U), KIND(S), KIND(F), KIND(D), KIND(C)}, \
   .expr = {TEXT(B), TEXT(U), TEXT(S), TEXT(F), TEXT(D), TEXT(C)}},
#define ROW(...) CMX__EW_FWD(ROW_, __VA_ARGS__)

static const cmx__ew_op k_ops[] = {CMX__EW_OPS(ROW)};
#define NUM_OPS ((int)(sizeof k_ops / sizeof k_ops[0]))

/* Primitive id -> row index + 1 (0: not a table op), built on first use. */
static int g_index[CMX__NUM_PRIMITIVES];
static int g_index_ready;

const cmx__ew_op* cmx__ew_op_get(int id) {
  if (id < 0 || id >= CMX__NUM_PRIMITIVES) return NULL;
  if (!__atomic_load_n(&g_index_ready, __ATOMIC_ACQUIRE)) {
    /* Idempotent: racing threads write the same values. */
    for (int i = 0; i < NUM_OPS; i++)
      __atomic_store_n(&g_index[k_ops[i].id], i + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&g_index_ready, 1, __ATOMIC_RELEASE);
  }
  int k = __atomic_load_n(&g_index[id], __ATOMIC_RELAXED);
  return k ? &k_ops[k - 1] : NULL;
}

int cmx__ew_class(cmx_dtype dt) {
  switch (dt) {
    case CMX_BOOL:
      return CMX__EW_CLASS_B;
    case CMX_UINT8:
    case CMX_UINT16:
    case CMX_UINT32:
    case CMX_UINT64:
      return CMX__EW_CLASS_U;
    case CMX_INT8:
    case CMX_INT16:
    case CMX_INT32:
    case CMX_INT64:
      return CMX__EW_CLASS_S;
    case CMX_FLOAT16:
    case CMX_BFLOAT16:
    case CMX_FLOAT32:
      return CMX__EW_CLASS_F;
    case CMX_FLOAT64:
      return CMX__EW_CLASS_D;
    default:
      return CMX__EW_CLASS_C;
  }
}

bool cmx__ew_accepts(const cmx__ew_op* op, cmx_dtype dt) {
  return op && cmx_dtype_valid((int)dt) &&
         op->kind[cmx__ew_class(dt)] != CMX__EW_KIND_NO;
}

cmx_dtype cmx__ew_out_dtype(const cmx__ew_op* op, cmx_dtype dt) {
  if (op->out == CMX__EW_OUT_BOOL) return CMX_BOOL;
  if (op->out == CMX__EW_OUT_REAL && dt == CMX_COMPLEX64) return CMX_FLOAT32;
  return dt;
}

static const char* const k_suffix[CMX_NUM_DTYPES] = {
    [CMX_BOOL] = "b8",     [CMX_UINT8] = "u8",      [CMX_UINT16] = "u16",
    [CMX_UINT32] = "u32",  [CMX_UINT64] = "u64",    [CMX_INT8] = "i8",
    [CMX_INT16] = "i16",   [CMX_INT32] = "i32",     [CMX_INT64] = "i64",
    [CMX_FLOAT16] = "f16", [CMX_BFLOAT16] = "bf16", [CMX_FLOAT32] = "f32",
    [CMX_FLOAT64] = "f64", [CMX_COMPLEX64] = "c64"};

const char* cmx__ew_suffix(cmx_dtype dt) {
  return cmx_dtype_valid((int)dt) ? k_suffix[dt] : NULL;
}

/* The compute type of an integer slot of kind W: unsigned, >= 32 bits. */
static const char* wrap_type(cmx_dtype dt) {
  return cmx_dtype_size(dt) == 8 ? "uint64_t" : "uint32_t";
}

bool cmx__ew_prelude(const cmx__ew_op* op, cmx_dtype dt, const char* prefix,
                     char* buf, size_t size) {
  if (!cmx__ew_accepts(op, dt)) return false;
  int cls = cmx__ew_class(dt);
  cmx_dtype odt = cmx__ew_out_dtype(op, dt);
  const char* sfx = k_suffix[dt];
  char ct[32];
  const char *load = "(v)", *store = NULL;
  if (cls == CMX__EW_CLASS_F)
    snprintf(ct, sizeof ct, "float");
  else if (op->kind[cls] == CMX__EW_KIND_W)
    snprintf(ct, sizeof ct, "%s", wrap_type(dt));
  else
    snprintf(ct, sizeof ct, "cmx_%s_t", sfx);
  if (dt == CMX_FLOAT16) load = "cmx_h2f(v)";
  if (dt == CMX_BFLOAT16) load = "cmx_bf2f(v)";
  if (odt == CMX_BOOL)
    store = "((uint8_t)((v) != 0))";
  else if (odt == CMX_FLOAT16)
    store = "cmx_f2h(v)";
  else if (odt == CMX_BFLOAT16)
    store = "cmx_f2bf(v)";
  else if (odt == CMX_COMPLEX64)
    store = "(v)";
  char st[64];
  if (!store) {
    snprintf(st, sizeof st, "((cmx_%s_t)(v))", k_suffix[odt]);
    store = st;
  }
  const char* args = op->arity == 1 ? "x" : op->arity == 2 ? "x, y" : "c, x, y";
  const char* p = prefix ? prefix : "";
  int n = snprintf(buf, size,
                   "#define %sIN_T cmx_%s_t\n#define %sOUT_T cmx_%s_t\n"
                   "#define %sCT %s\n#define %sLOAD(v) %s\n"
                   "#define %sSTORE(v) %s\n#define %sOP(%s) (%s)\n",
                   p, sfx, p, k_suffix[odt], p, ct, p, load, p, store, p, args,
                   op->expr[cls]);
  return n > 0 && (size_t)n < size;
}

bool cmx__ew_convert_prelude(cmx_dtype src, cmx_dtype dst, const char* prefix,
                             char* buf, size_t size) {
  if (!cmx_dtype_valid((int)src) || !cmx_dtype_valid((int)dst)) return false;
  const char* p = prefix ? prefix : "";
  int n = snprintf(buf, size,
                   "#define %sIN_T cmx_%s_t\n#define %sOUT_T cmx_%s_t\n"
                   "#define %sCONVERT(x) cmx_cvt_%s(%s, x)\n",
                   p, k_suffix[src], p, k_suffix[dst], p, k_suffix[dst],
                   k_suffix[src]);
  return n > 0 && (size_t)n < size;
}

cmx_ew_params cmx__ew_params_of(const cmx_primitive* p) {
  cmx_ew_params prm = {0, 0};
  const cmx_primitive_vtable* vt = cmx_primitive_vt(p);
  if (vt->id != CMX__P_Round) return prm;
  const cmx__round_params* rp = cmx_primitive_params(p);
  int d = rp->decimals < -400 ? -400 : rp->decimals > 400 ? 400 : rp->decimals;
  prm.decimals = d;
  if (d < 0) {
    uint64_t q = 1;
    for (int i = 0; i < -d && q; i++) q = q > UINT64_MAX / 10 ? 0 : q * 10;
    prm.q = q;
  }
  return prm;
}
