/* GPU kernels of Reduce, ArgReduce, LogSumExp and Var: one kernel family
 * (kernels/reduce.cu), variant kind * CMX_NUM_DTYPES + input dtype, where
 * kind is a cmx__reduce_kind, then argmin, argmax, logsumexp, var.
 *
 * Planning: the input's kept dims (K: which output, row-major) and reduced
 * dims (R: which elements feed it) are collapsed separately. For the
 * order-free reductions (all but arg) the reduced dims are first flipped
 * to positive strides and sorted by stride, so that a transposed or
 * reversed input still reduces contiguous runs; arg reductions keep R's
 * order (the index is the row-major position along the reduced dims).
 * Then:
 *   row:  R is one contiguous dim (and rows are not tiny): a warp per
 *         output (8 a block) when there are many outputs, else a block of
 *         512 threads per output, 16-byte loads;
 *   col:  K's innermost dim has input stride 1: a thread per output,
 *         neighbouring threads reading neighbouring elements, the reduced
 *         elements dealt over 8 threads of the block;
 *   general: otherwise a warp or block per output over strided offsets.
 * When those leave the card under-occupied (a full reduction, a few long
 * rows, a few wide columns) the reduced range is split into parts whose
 * accumulators go to a temporary buffer, combined by cmx_red_fin: a full
 * reduction of any size takes two passes. Accumulators are the CPU's (see
 * backend/cpu/reduce_impl.c), except that float sums accumulate in float
 * lanes combined as a tree rather than in double blocks.
 */
#include "primitives/reduce.h"

#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"
#include "primitives/registry.h"

/* Kinds beyond the Reduce ones. */
enum { K_ARGMIN = CMX__RED_NUM_KINDS, K_ARGMAX, K_LSE, K_VAR, K_NUM };

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

enum { K_ROW_C, K_ROW_1, K_ROW_0, K_COL_1, K_COL_0, K_FIN };
static const char* const k_kernels[] = {"cmx_red_row_c",
                                        "cmx_red_row_1",
                                        "cmx_red_row_0",
                                        "cmx_red_col_1",
                                        "cmx_red_col_0",
                                        "cmx_red_fin",
                                        NULL};

/* Storage type suffixes by dtype (ew_scalar.h's cmx_<s>_t). */
const char* cmx__gpu_dtype_suffix(cmx_dtype dt) {
  static const char* const sfx[CMX_NUM_DTYPES] = {
      "b8",  "u8",  "u16", "u32",  "u64", "i8",  "i16",
      "i32", "i64", "f16", "bf16", "f32", "f64", "c64"};
  return sfx[dt];
}

static bool is_int(cmx_dtype t) {
  return t == CMX_BOOL || cmx_dtype_is_integer(t);
}
static bool is_half(cmx_dtype t) {
  return t == CMX_FLOAT16 || t == CMX_BFLOAT16;
}

/* The output dtype of Reduce kind on dt (as the op layer gives it). */
static cmx_dtype reduce_out(int kind, cmx_dtype dt) {
  switch (kind) {
    case CMX__RED_SUM:
    case CMX__RED_PROD:
      if (dt == CMX_BOOL || dt == CMX_INT8 || dt == CMX_INT16 ||
          dt == CMX_INT32)
        return CMX_INT32;
      if (dt == CMX_UINT8 || dt == CMX_UINT16 || dt == CMX_UINT32)
        return CMX_UINT32;
      return dt;
    case CMX__RED_MEAN:
      return cmx_dtype_is_inexact(dt) ? dt : CMX_FLOAT32;
    case CMX__RED_AND:
    case CMX__RED_OR:
      return CMX_BOOL;
    default:
      return dt;
  }
}

const char* cmx__gpu_minmax_identity(cmx_dtype dt, bool max) {
  static const char* const lo[CMX_NUM_DTYPES] = {
      "0",
      "0",
      "0",
      "0u",
      "0ull",
      "(-128)",
      "(-32768)",
      "(-2147483647 - 1)",
      "(-9223372036854775807ll - 1)",
      "(-CMX_INFF)",
      "(-CMX_INFF)",
      "(-CMX_INFF)",
      "(-(double)CMX_INFF)",
      "cmx_c64_make(-CMX_INFF, -CMX_INFF)"};
  static const char* const hi[CMX_NUM_DTYPES] = {
      "1",
      "255",
      "65535",
      "4294967295u",
      "18446744073709551615ull",
      "127",
      "32767",
      "2147483647",
      "9223372036854775807ll",
      "CMX_INFF",
      "CMX_INFF",
      "CMX_INFF",
      "((double)CMX_INFF)",
      "cmx_c64_make(CMX_INFF, CMX_INFF)"};
  return max ? lo[dt] : hi[dt];
}

/* Writes the prelude of a plain Reduce kind (CMX_R_KIND 0). */
static int plain_prelude(char* p, size_t n, int kind, cmx_dtype dt) {
  cmx_dtype od = reduce_out(kind, dt);
  const char *A, *LD, *OP, *ID;
  const char* s = cmx__gpu_dtype_suffix(dt);
  char ld[96], st[128];
  bool c = dt == CMX_COMPLEX64, f64 = dt == CMX_FLOAT64;
  const char* tof = dt == CMX_FLOAT16    ? "cmx_h2f(x)"
                    : dt == CMX_BFLOAT16 ? "cmx_bf2f(x)"
                                         : "(x)";
  const char* fromf = od == CMX_FLOAT16    ? "cmx_f2h((float)(v))"
                      : od == CMX_BFLOAT16 ? "cmx_f2bf((float)(v))"
                                           : "(v)";
  switch (kind) {
    case CMX__RED_SUM:
    case CMX__RED_PROD: {
      bool sum = kind == CMX__RED_SUM;
      if (is_int(dt)) {
        A = cmx_dtype_size(dt) == 8 ? "uint64_t" : "uint32_t";
        snprintf(ld, sizeof ld, "((%s)(x))", A);
        LD = ld;
        snprintf(st, sizeof st, "((cmx_%s_t)(a))", cmx__gpu_dtype_suffix(od));
      } else if (c) {
        A = "cmx_c64";
        LD = "(x)";
        snprintf(st, sizeof st, "(a)");
      } else {
        /* sums in float (double for float64), products in double */
        A = sum && !f64 ? "float" : "double";
        snprintf(ld, sizeof ld, "((%s)%s)", A, tof);
        LD = ld;
        snprintf(st, sizeof st, "(%s)", fromf);
        char* v = strstr(st, "(v)");
        if (v) memcpy(v, "(a)", 3);
      }
      OP = c ? (sum ? "cmx_r_cadd(a, b)" : "cmx_r_cmul(a, b)")
             : (sum ? "((a) + (b))" : "((a) * (b))");
      ID = c ? (sum ? "cmx_c64_make(0.0f, 0.0f)" : "cmx_c64_make(1.0f, 0.0f)")
             : (sum ? "0" : "1");
      break;
    }
    case CMX__RED_MEAN:
      if (c) {
        A = "cmx_c64", LD = "(x)", OP = "cmx_r_cadd(a, b)";
        ID = "cmx_c64_make(0.0f, 0.0f)";
        snprintf(st, sizeof st, "cmx_r_cdiv(a, c)");
      } else {
        A = is_int(dt) || f64 ? "double" : "float";
        snprintf(ld, sizeof ld, "((%s)%s)", A, tof);
        LD = ld, OP = "((a) + (b))", ID = "0";
        if (od == CMX_FLOAT16)
          snprintf(st, sizeof st, "cmx_f2h((float)((a) / (c)))");
        else if (od == CMX_BFLOAT16)
          snprintf(st, sizeof st, "cmx_f2bf((float)((a) / (c)))");
        else if (od == CMX_FLOAT64)
          snprintf(st, sizeof st, "((a) / (c))");
        else
          snprintf(st, sizeof st, "((float)((a) / (c)))");
      }
      break;
    case CMX__RED_MIN:
    case CMX__RED_MAX: {
      bool max = kind == CMX__RED_MAX;
      ID = cmx__gpu_minmax_identity(dt, max);
      if (c) {
        A = "cmx_c64", LD = "(x)";
        OP = max ? "cmx_r_cmax(a, b)" : "cmx_r_cmin(a, b)";
        snprintf(st, sizeof st, "(a)");
      } else if (is_int(dt)) {
        snprintf(ld, sizeof ld, "cmx_%s_t", s);
        A = ld, LD = "(x)";
        OP = max ? "CMX_R_MAXI(a, b)" : "CMX_R_MINI(a, b)";
        snprintf(st, sizeof st, "(a)");
      } else {
        A = f64 ? "double" : "float";
        LD = dt == CMX_FLOAT16    ? "cmx_h2f(x)"
             : dt == CMX_BFLOAT16 ? "cmx_bf2f(x)"
                                  : "(x)";
        OP = max ? "CMX_R_MAXF(a, b)" : "CMX_R_MINF(a, b)";
        snprintf(st, sizeof st, "%s",
                 dt == CMX_FLOAT16    ? "cmx_f2h(a)"
                 : dt == CMX_BFLOAT16 ? "cmx_f2bf(a)"
                                      : "(a)");
      }
      break;
    }
    default: { /* all, any */
      bool all = kind == CMX__RED_AND;
      A = "uint8_t";
      LD = c             ? "((uint8_t)((x).re != 0 || (x).im != 0))"
           : is_half(dt) ? "((uint8_t)(((x)&0x7fff) != 0))"
                         : "((uint8_t)((x) != 0))";
      OP = all ? "((uint8_t)((a) & (b)))" : "((uint8_t)((a) | (b)))";
      ID = all ? "1" : "0";
      snprintf(st, sizeof st, "(a)");
    }
  }
  return snprintf(p, n,
                  "#define CMX_R_KIND 0\n#define CMX_R_T cmx_%s_t\n"
                  "#define CMX_R_O cmx_%s_t\n#define CMX_R_A %s\n"
                  "#define CMX_R_LD(x) %s\n#define CMX_R_OP(a, b) %s\n"
                  "#define CMX_R_ID %s\n#define CMX_R_ST(a, c) %s\n",
                  s, cmx__gpu_dtype_suffix(od), A, LD, OP, ID, st);
}

static bool red_variant(int v, cmx__gpu_variant* out) {
  int kind = v / CMX_NUM_DTYPES;
  cmx_dtype dt = (cmx_dtype)(v % CMX_NUM_DTYPES);
  static const char* const names[K_NUM] = {
      "sum", "prod",   "min",    "max",       "mean", "all",
      "any", "argmin", "argmax", "logsumexp", "var"};
  if (kind < 0 || kind >= K_NUM) return false;
  bool flt = cmx_dtype_is_floating(dt);
  if (kind == K_LSE && !flt) return false;
  if (kind == K_VAR && !flt && dt != CMX_COMPLEX64) return false;
  snprintf(out->name, sizeof out->name, "reduce_%s_%s", names[kind],
           cmx_dtype_name(dt));
  out->flags = 0;
  char* p = out->prelude;
  size_t n = sizeof out->prelude;
  const char* s = cmx__gpu_dtype_suffix(dt);
  const char* tof = dt == CMX_FLOAT16    ? "cmx_h2f(x)"
                    : dt == CMX_BFLOAT16 ? "cmx_bf2f(x)"
                                         : "(x)";
  const char* fromf = dt == CMX_FLOAT16    ? "cmx_f2h(v)"
                      : dt == CMX_BFLOAT16 ? "cmx_f2bf(v)"
                                           : "(v)";
  const char* F = dt == CMX_FLOAT64 ? "double" : "float";
  int w;
  if (kind < CMX__RED_NUM_KINDS) {
    w = plain_prelude(p, n, kind, dt);
  } else if (kind == K_ARGMIN || kind == K_ARGMAX) {
    bool max = kind == K_ARGMAX;
    const char* A = is_half(dt) ? "float" : NULL;
    char a[32];
    if (!A) snprintf(a, sizeof a, "cmx_%s_t", s), A = a;
    const char* better;
    if (dt == CMX_COMPLEX64)
      better = max ? "(!cmx_r_cnan(w) && (cmx_r_cnan(v) || cmx_r_cless(w, v)))"
                   : "(!cmx_r_cnan(w) && (cmx_r_cnan(v) || cmx_r_cless(v, w)))";
    else if (is_int(dt))
      better = max ? "((v) > (w))" : "((v) < (w))";
    else
      better = max ? "((w) == (w) && ((v) > (w) || (v) != (v)))"
                   : "((w) == (w) && ((v) < (w) || (v) != (v)))";
    w = snprintf(p, n,
                 "#define CMX_R_KIND 1\n#define CMX_R_T cmx_%s_t\n"
                 "#define CMX_R_O uint32_t\n#define CMX_R_A %s\n"
                 "#define CMX_R_LD(x) %s\n#define CMX_R_BETTER(v, w) %s\n",
                 s, A, tof, better);
  } else if (kind == K_LSE) {
    w = snprintf(p, n,
                 "#define CMX_R_KIND 2\n#define CMX_R_T cmx_%s_t\n"
                 "#define CMX_R_O cmx_%s_t\n#define CMX_R_F %s\n"
                 "#define CMX_R_TOF(x) %s\n#define CMX_R_FROMF(v) %s\n",
                 s, s, F, tof, fromf);
  } else {
    w = snprintf(p, n,
                 "#define CMX_R_KIND %d\n#define CMX_R_T cmx_%s_t\n"
                 "#define CMX_R_O cmx_%s_t\n#define CMX_R_F %s\n"
                 "#define CMX_R_TOF(x) %s\n#define CMX_R_FROMF(v) %s\n",
                 dt == CMX_COMPLEX64 ? 4 : 3, s, s, F, tof, fromf);
  }
  return w > 0 && (size_t)w < n;
}

const cmx__gpu_family cmx__gpu_family_reduce = {
    .name = "reduce",
    .file = "reduce",
    .preamble = k_preamble,
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = K_NUM * CMX_NUM_DTYPES,
    .variant = red_variant,
    .shape = {CMX__GPU_CUSTOM, 256, 0}};

/* Bytes of the kernels' accumulator (struct cmx_racc) of kind on dt. */
static size_t acc_size(int kind, cmx_dtype dt) {
  size_t isz = cmx_dtype_size(dt);
  switch (kind) {
    case CMX__RED_SUM:
    case CMX__RED_PROD:
      if (is_int(dt)) return isz == 8 ? 8 : 4;
      if (dt == CMX_COMPLEX64 || dt == CMX_FLOAT64) return 8;
      return kind == CMX__RED_SUM ? 4 : 8;
    case CMX__RED_MEAN:
      return is_int(dt) || dt == CMX_FLOAT64 || dt == CMX_COMPLEX64 ? 8 : 4;
    case CMX__RED_MIN:
    case CMX__RED_MAX:
      return is_half(dt) ? 4 : isz;
    case CMX__RED_AND:
    case CMX__RED_OR:
      return 1;
    case K_ARGMIN:
    case K_ARGMAX: {
      size_t v = is_half(dt) ? 4 : isz, al = v < 4 ? 4 : v;
      if (dt == CMX_COMPLEX64) al = 8;
      return (v + 4 + al - 1) / al * al;
    }
    case K_LSE:
      return dt == CMX_FLOAT64 ? 16 : 8;
    default:
      return dt == CMX_COMPLEX64 ? 40 : 24;
  }
}

/* ---------------- planning ---------------- */

typedef struct {
  cmx__gpu_layout K, R;
  int64_t nk, nr, base; /* base: element offset of the (flipped) origin */
} red_plan;

/* The K and R layouts of reducing a over isred[] (sorted: R by stride,
 * flipped to positive strides; else in order, a's strides as they are). */
static void make_plan(red_plan* pl, cmx_array a, const bool* isred,
                      bool sorted) {
  int64_t ks[CMX_MAX_NDIM] = {0}, kis[CMX_MAX_NDIM] = {0},
          kos[CMX_MAX_NDIM] = {0};
  int64_t rs[CMX_MAX_NDIM] = {0}, ris[CMX_MAX_NDIM] = {0},
          ros[CMX_MAX_NDIM] = {0};
  int nkd = 0, nrd = 0;
  pl->base = 0;
  for (int d = 0; d < a->ndim; d++) {
    int64_t st = CMX__STRIDES(a)[d], n = a->dims[d];
    if (!isred[d]) {
      ks[nkd] = n, kis[nkd++] = st;
      continue;
    }
    if (sorted && st < 0 && n > 0) {
      pl->base += (n - 1) * st;
      st = -st;
    }
    int i = nrd++;
    /* insertion by stride, descending (sorted), else in order */
    while (sorted && i > 0 && ris[i - 1] < st) {
      rs[i] = rs[i - 1], ris[i] = ris[i - 1];
      i--;
    }
    rs[i] = n, ris[i] = st;
  }
  cmx__row_major_strides(ks, nkd, kos);
  cmx__row_major_strides(rs, nrd, ros);
  pl->nk = pl->nr = 1;
  for (int i = 0; i < nkd; i++) pl->nk *= ks[i];
  for (int i = 0; i < nrd; i++) pl->nr *= rs[i];
  cmx__gpu_layout_from(&pl->K, ks, nkd, (const int64_t* const[]){kos, kis}, 2);
  cmx__gpu_layout_from(&pl->R, rs, nrd, (const int64_t* const[]){ros, ris}, 2);
}

/* Kernel parameters (struct cmx_rparams). */
typedef struct {
  long long nk, nr, part_len;
  double count;
  int32_t nparts, ddof, sq, pad;
} rparams;

/* Runs variant var over plan pl from input a into out (allocated). */
static cmx_status run(const char* op, int dev, int var, size_t asz,
                      const red_plan* pl, cmx_array a, cmx_array out,
                      double count, int ddof, bool sq) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  const int64_t sm = d->sm_count > 0 ? d->sm_count : 1;
  const cmx__gpu_layout *K = &pl->K, *R = &pl->R;
  CUdeviceptr px = 0, po = 0;
  cmx_status st = cmx__gpu_ptr(a, dev, &px);
  if (st == CMX_OK) st = cmx__gpu_ptr(out, dev, &po);
  if (st != CMX_OK) return st;
  px += (CUdeviceptr)(pl->base * (int64_t)cmx_dtype_size(a->dtype));
  const int64_t nk = pl->nk, nr = pl->nr;
  bool rc = R->ndim == 0 || (R->ndim == 1 && R->strides[1][0] == 1);
  bool kc = K->ndim >= 1 && K->strides[1][K->ndim - 1] == 1;
  int kernel;
  cmx__gpu_cfg cfg = {{1, 1, 1}, {1, 1, 1}, 0};
  int64_t xblocks, parts = 1, min_per; /* elements a part needs at least */
  if ((rc && nr > 16) || (!rc && !kc && nr > 16)) {
    kernel = rc ? K_ROW_C : R->ndim == 1 ? K_ROW_1 : K_ROW_0;
    if (nk >= sm * 16 || nr <= 1024) {
      cfg.block[0] = 32, cfg.block[1] = 8;
      xblocks = (nk + 7) / 8;
      min_per = 32 * 64;
    } else {
      cfg.block[0] = 512;
      xblocks = nk;
      min_per = 512 * 32;
    }
    int64_t want = sm * (cfg.block[0] == 32 ? 8 : 4);
    if (xblocks < want) parts = (want + xblocks - 1) / xblocks;
  } else {
    kernel = R->ndim == 1 ? K_COL_1 : K_COL_0;
    if (nr < 64) {
      cfg.block[0] = 256, cfg.block[1] = 1;
    } else {
      cfg.block[0] = 32, cfg.block[1] = 8;
    }
    xblocks = (nk + cfg.block[0] - 1) / cfg.block[0];
    min_per = (int64_t)cfg.block[1] * 32;
    int64_t want = sm * 8;
    if (xblocks < want) parts = (want + xblocks - 1) / xblocks;
  }
  int64_t maxparts = nr / min_per;
  if (parts > maxparts) parts = maxparts;
  if (parts > 4096) parts = 4096;
  if (parts < 1) parts = 1;
  int64_t part_len = (nr + parts - 1) / parts;
  if (part_len < 1) part_len = 1;
  parts = (nr + part_len - 1) / part_len;
  if (parts < 1) parts = 1;
  cfg.grid[0] = (unsigned)xblocks;
  cfg.grid[1] = (unsigned)parts;
  rparams P = {nk, nr, part_len, count, (int32_t)parts, ddof, sq ? 1 : 0, 0};
  cmx__buffer* tmp = NULL;
  CUdeviceptr pp = 0;
  if (parts > 1) {
    tmp = cmx__device_hooks->alloc_device((size_t)(parts * nk) * asz, dev);
    if (!tmp) return cmx_last_status();
    pp = tmp->dev;
  }
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, px);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, pp);
  CMX__GPU_ARG(&args, P);
  cmx__gpu_args_layout(&args, K);
  cmx__gpu_args_layout(&args, R);
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_reduce, var, kernel);
  /* a block row kernel may allow fewer threads than 512 */
  while (k && cfg.block[0] > 32 && (int)cfg.block[0] > k->max_threads)
    cfg.block[0] /= 2;
  st = k ? cmx__gpu_launch(op, k, &cfg, &args) : cmx_last_status();
  if (st == CMX_OK && parts > 1) {
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, pp);
    CMX__GPU_ARG(&args, po);
    CMX__GPU_ARG(&args, P);
    cmx__gpu_cfg fc = {{(unsigned)((nk + 7) / 8), 1, 1}, {32, 8, 1}, 0};
    k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_reduce, var, K_FIN);
    st = k ? cmx__gpu_launch(op, k, &fc, &args) : cmx_last_status();
  }
  if (tmp) cmx__buffer_release(tmp); /* its free is ordered on the stream */
  if (st == CMX_OK) cmx_kernel_mark_device_written(out);
  return st;
}

/* Reduces a over axes into out (allocated here) with kind. */
static cmx_status reduce_axes(const cmx_primitive* p, int kind, cmx_array a,
                              cmx_array out, const int32_t* axes, int naxes,
                              int ddof, bool sq) {
  const char* op = cmx_primitive_name(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(out);
  if (st != CMX_OK || out->size == 0) return st;
  bool isred[CMX_MAX_NDIM] = {false};
  double count = 1;
  for (int i = 0; i < naxes; i++) {
    isred[axes[i]] = true;
    count *= (double)a->dims[axes[i]];
  }
  red_plan pl;
  make_plan(&pl, a, isred, true);
  return run(op, dev, kind * CMX_NUM_DTYPES + (int)a->dtype,
             acc_size(kind, a->dtype), &pl, a, out, count, ddof, sq);
}

cmx_status cmx__gpu_reduce(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  if (q->kind < 0 || q->kind >= CMX__RED_NUM_KINDS ||
      reduce_out(q->kind, a->dtype) != o->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            cmx__reduce_kind_name(q->kind),
                            cmx_dtype_name(a->dtype));
  cmx_status st = cmx__reduce_count(q, a, o, NULL);
  if (st != CMX_OK) return st;
  return reduce_axes(p, q->kind, a, o, q->axes, q->naxes, 0, false);
}

cmx_status cmx__gpu_arg_reduce(const cmx_primitive* p, const cmx_array* in,
                               int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__argreduce_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  bool isred[CMX_MAX_NDIM] = {false};
  for (int d = 0; d < a->ndim; d++) isred[d] = q->axis < 0 || d == q->axis;
  red_plan pl;
  make_plan(&pl, a, isred, false);
  int kind = q->kind == CMX__ARG_MAX ? K_ARGMAX : K_ARGMIN;
  return run(cmx_primitive_name(p), cmx_primitive_stream(p).device.index,
             kind * CMX_NUM_DTYPES + (int)a->dtype, acc_size(kind, a->dtype),
             &pl, a, o, (double)pl.nr, 0, false);
}

cmx_status cmx__gpu_logsumexp(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  if (!cmx_dtype_is_floating(in[0]->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            cmx_primitive_name(p),
                            cmx_dtype_name(in[0]->dtype));
  return reduce_axes(p, K_LSE, in[0], out[0], q->axes, q->naxes, 0, false);
}

cmx_status cmx__gpu_var(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__axes_params* q = cmx_primitive_params(p);
  cmx_dtype dt = in[0]->dtype;
  if (!cmx_dtype_is_floating(dt) && dt != CMX_COMPLEX64)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            cmx_primitive_name(p), cmx_dtype_name(dt));
  return reduce_axes(p, K_VAR, in[0], out[0], q->axes, q->naxes, q->ddof,
                     q->sqrt != 0);
}
