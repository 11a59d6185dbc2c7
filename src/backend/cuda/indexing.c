/* GPU kernels of Gather, Scatter, GatherAxis and ScatterAxis
 * (kernels/indexing.cu).
 *
 * Gather and Scatter first turn their index arrays into one element
 * offset per index position (cmx_idx_offsets, once per index array, any
 * integer dtype and layout), then move one thread per output or update
 * element. A Gather whose slices are contiguous rows of 16-byte multiples
 * (an embedding lookup) moves 16-byte vectors. One index array taking
 * whole contiguous rows (an embedding lookup, its gradient's scatter-add)
 * goes to the rows kernels instead: a warp per row reading its index in
 * place, no offsets pass; a scatter-add of float32, float16 or bfloat16
 * rows adds 16-byte vectors with one reduction instruction each on sm_90
 * (red.global.add.v4.f32 / .v4.f16x2 / .v4.bf16x2), and 16-bit floats
 * elsewhere use the hardware's scalar reductions where the
 * architecture has them (float16 from sm_70, bfloat16 from sm_90) instead
 * of a compare-and-swap loop. Scatter's modes are atomic
 * updates: native atomicAdd for float32, float64, complex64 (per part) and
 * 32/64-bit integers, a compare-and-swap loop on the enclosing word for
 * everything else (float16, bfloat16, 8/16-bit integers, bool, products,
 * max, min), computing as the CPU does (integers wrap, 16-bit floats in
 * float32, NaN wins max/min). The output of a scatter starts as the input
 * array (its buffer when it can be donated, else a copy).
 *
 * With one index array whose positions lie at one stride (every dynamic
 * slice and slice_update, take and a[idx] with an index vector, any
 * integer dtype) the general kernels read the index themselves instead of
 * offsets (the families' inline variants, CMX_IDX_INLINE; `positions`
 * says why that rule): one launch instead of two, and no scratch buffer.
 *
 * Differences from the CPU, inherent to a parallel device that does not
 * stop to check:
 *   - an out-of-range index (after wrapping a negative one) is reported
 *     once the stream has finished (gpu.h, deferred index errors): the
 *     eval fails with the CPU's IndexError, the kernel itself has gone on
 *     (a gather yields zeros for that position, a scatter drops it). MLX's
 *     GPU gathers do not check (an out-of-range index reads anywhere);
 *     cmx keeps NumPy's and its CPU's error on both devices, an empty
 *     Gather result or Scatter update included: its indices still go
 *     through the offsets pass (check_indices);
 *   - float sums of duplicate indices accumulate in some order (integer
 *     results are exact). A plain scatter (mode none) keeps the last
 *     update of each element, as the CPU does, through a winner pass
 *     (winner_words) when several index positions may meet.
 */
#include "primitives/indexing.h"

#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

static const char* const k_preamble[] = {"ew_bind", "ew_scalar", NULL};

/* ---------------- families ---------------- */

/* gather: variant v % G_SIZES moves elements of 1 << v bytes (4: uint4);
 * v >= G_SIZES: the inline variant (one index array read in place by
 * cmx_gather_g*; its other kernels are the same). */
enum { G_OFFSETS, G_GATHER, G_AXIS = 5, G_ROWS = 7 };
enum { G_SIZES = 5 };
static const char* const k_gather[] = {
    "cmx_idx_offsets",    "cmx_gather_g1_32", "cmx_gather_g0_32",
    "cmx_gather_g1_64",   "cmx_gather_g0_64", "cmx_gather_axis_32",
    "cmx_gather_axis_64", "cmx_gather_rows",  NULL};

static bool gather_variant(int v, cmx__gpu_variant* out) {
  static const char* const types[] = {"cmx_u8", "cmx_u16", "cmx_u32", "cmx_u64",
                                      "uint4"};
  bool in = v >= G_SIZES;
  v %= G_SIZES;
  snprintf(out->name, sizeof out->name, "gather_%s%d", in ? "inline_" : "",
           1 << v);
  snprintf(out->prelude, sizeof out->prelude, "#define CMX_T %s\n%s", types[v],
           in ? "#define CMX_IDX_INLINE\n" : "");
  out->flags = 0;
  return true;
}

const cmx__gpu_family cmx__gpu_family_gather = {
    .name = "gather",
    .file = "indexing",
    .kernels = k_gather,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 2 * G_SIZES,
    .variant = gather_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* scatter: variant mode * CMX_NUM_DTYPES + dtype, plus S_INLINE for the
 * inline variant (one index array read in place by cmx_scatter_32/64). */
#define S_INLINE (CMX__SCATTER_NUM_MODES * CMX_NUM_DTYPES)
enum { S_SCATTER, S_AXIS = 2, S_ROWS = 4 };
static const char* const k_scatter[] = {
    "cmx_scatter_32",      "cmx_scatter_64",   "cmx_scatter_axis_32",
    "cmx_scatter_axis_64", "cmx_scatter_rows", NULL};

/* The storage type of dt and, for integers, the unsigned type sums and
 * products wrap in. */
static const char* storage_type(cmx_dtype dt, const char** wide) {
  static const char* const t[CMX_NUM_DTYPES] = {
      "cmx_u8",  "cmx_u8",  "cmx_u16", "cmx_u32", "cmx_u64",
      "cmx_i8",  "cmx_i16", "cmx_i32", "cmx_i64", "cmx_u16",
      "cmx_u16", "float",   "double",  "cmx_c64"};
  *wide = cmx_dtype_size(dt) == 8 ? "cmx_u64" : "cmx_u32";
  return t[dt];
}

/* CMX_SC_OP (and CMX_SC_ATOMIC_ADD) of mode m for dtype dt. */
static int scatter_ops(int m, cmx_dtype dt, char* buf, size_t size) {
  static const char* const fop[] = {"", "((x) + (y))", "((x) * (y))",
                                    "CMX_FMAX(x, y)", "CMX_FMIN(x, y)"};
  const char* wide;
  (void)storage_type(dt, &wide);
  if (m == CMX__SCATTER_NONE) return snprintf(buf, size, "\n");
  if (dt == CMX_BOOL)
    return snprintf(buf, size, "#define CMX_SC_OP(x, y) ((T)((x) %c (y)))\n",
                    m == CMX__SCATTER_ADD || m == CMX__SCATTER_MAX ? '|' : '&');
  if (dt == CMX_FLOAT16 || dt == CMX_BFLOAT16) {
    const char* h = dt == CMX_FLOAT16 ? "h" : "bf";
    return snprintf(buf, size,
                    "#define CMX_SC_F(x, y) %s\n#define CMX_SC_OP(x, y) "
                    "cmx_f2%s(CMX_SC_F(cmx_%s2f(x), cmx_%s2f(y)))\n",
                    fop[m], h, h, h);
  }
  if (dt == CMX_COMPLEX64) {
    static const char* const cop[] = {
        "", "cmx_c64_make((x).re + (y).re, (x).im + (y).im)",
        "cmx_c64_mul(x, y)", "cmx_c64_max(x, y)", "cmx_c64_min(x, y)"};
    return snprintf(buf, size, "#define CMX_SC_OP(x, y) %s\n%s", cop[m],
                    m == CMX__SCATTER_ADD
                        ? "#define CMX_SC_ATOMIC_ADD(p, y) do { "
                          "atomicAdd(&(p)->re, (y).re); atomicAdd(&(p)->im, "
                          "(y).im); } while (0)\n"
                        : "");
  }
  if (dt == CMX_FLOAT32 || dt == CMX_FLOAT64)
    return snprintf(buf, size, "#define CMX_SC_OP(x, y) %s\n%s", fop[m],
                    m == CMX__SCATTER_ADD
                        ? "#define CMX_SC_ATOMIC_ADD(p, y) atomicAdd(p, y)\n"
                        : "");
  /* integers */
  if (m == CMX__SCATTER_ADD || m == CMX__SCATTER_PROD) {
    size_t isz = cmx_dtype_size(dt);
    return snprintf(buf, size,
                    "#define CMX_SC_OP(x, y) ((T)((%s)(x) %c (%s)(y)))\n%s",
                    wide, m == CMX__SCATTER_ADD ? '+' : '*', wide,
                    m == CMX__SCATTER_ADD && isz >= 4
                        ? (isz == 4 ? "#define CMX_SC_ATOMIC_ADD(p, y) "
                                      "atomicAdd((unsigned*)(p), "
                                      "(unsigned)(y))\n"
                                    : "#define CMX_SC_ATOMIC_ADD(p, y) "
                                      "atomicAdd((unsigned long long*)(p), "
                                      "(unsigned long long)(y))\n")
                        : "");
  }
  return snprintf(buf, size,
                  "#define CMX_SC_OP(x, y) ((y) %c (x) ? (y) : (x))\n",
                  m == CMX__SCATTER_MAX ? '>' : '<');
}

static bool scatter_variant(int v, cmx__gpu_variant* out) {
  bool in = v >= S_INLINE;
  v %= S_INLINE;
  int m = v / CMX_NUM_DTYPES;
  cmx_dtype dt = (cmx_dtype)(v % CMX_NUM_DTYPES);
  static const char* const modes[] = {"none", "add", "prod", "max", "min"};
  const char* wide;
  snprintf(out->name, sizeof out->name, "scatter_%s%s_%s", in ? "inline_" : "",
           modes[m], cmx_dtype_name(dt));
  int n = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_T %s\n#define CMX_SC_MODE %d\n"
                   "#define CMX_SC_BYTES %d\n%s",
                   storage_type(dt, &wide), m, (int)cmx_dtype_size(dt),
                   in ? "#define CMX_IDX_INLINE\n" : "");
  int k = scatter_ops(m, dt, out->prelude + n, sizeof out->prelude - (size_t)n);
  int red = dt == CMX_FLOAT32    ? 1
            : dt == CMX_FLOAT16  ? 2
            : dt == CMX_BFLOAT16 ? 3
                                 : 0;
  if (k > 0 && m == CMX__SCATTER_ADD && red) {
    n += k;
    k = snprintf(out->prelude + n, sizeof out->prelude - (size_t)n,
                 "#define CMX_SC_RED %d\n", red);
  }
  out->flags = 0;
  return k > 0 && (size_t)(n + k) < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_scatter = {
    .name = "scatter",
    .file = "indexing",
    .preamble = k_preamble,
    .kernels = k_scatter,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 2 * S_INLINE,
    .variant = scatter_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* ---------------- helpers ---------------- */

static void rowmajor(const int64_t* shape, int nd, int64_t* st) {
  int64_t step = 1;
  for (int d = nd - 1; d >= 0; d--) {
    st[d] = step;
    step *= shape[d];
  }
}

/* The layout of shape (nd dims) with stride sets sts[0..n) after a
 * row-major one (kernels index it by position). */
static void layout_of(cmx__gpu_layout* l, const int64_t* shape, int nd,
                      const int64_t* const* sts, int n) {
  int64_t rm[CMX_MAX_NDIM];
  rowmajor(shape, nd, rm);
  const int64_t* all[CMX__GPU_MAX_OPERANDS] = {rm};
  for (int k = 0; k < n; k++) all[k + 1] = sts[k];
  cmx__gpu_layout_from(l, shape, nd, all, n + 1);
}

static cmx_status launch(const char* op, int dev, const cmx__gpu_family* f,
                         int variant, int kernel, int64_t work,
                         const cmx__gpu_args* args) {
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, f, variant, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch(op, k, &cfg, args);
}

/* Appends the error-reporting arguments (record, code, axis) of an
 * index kernel of op (which: see cmx__gpu_index_error_code). */
static void add_error_args(cmx__gpu_args* args, const char* op,
                           const char* which, int axis) {
  CUdeviceptr rec = cmx__gpu_index_error_record();
  int code = cmx__gpu_index_error_code(
      op, which ? CMX__GPU_IDX_BATCH : CMX__GPU_IDX_AXIS, which);
  CMX__GPU_ARG(args, rec);
  CMX__GPU_ARG(args, code);
  CMX__GPU_ARG(args, axis);
}

/* Fills offs[0..npos) from the index arrays idx[0..nidx): index k on axis
 * axes[k] of an array of dims `dims`, with room for ext[axis] elements,
 * times strides[axis] / unit. */
static cmx_status index_offsets(const char* op, const char* which, int dev,
                                CUdeviceptr offs, const cmx_array* idx,
                                int nidx, const int* axes, const int64_t* dims,
                                const int64_t* ext, const int64_t* strides,
                                int64_t unit, int64_t npos) {
  cmx_status st = CMX_OK;
  for (int k = 0; k < nidx && st == CMX_OK; k++) {
    cmx_array x = idx[k];
    CUdeviceptr px;
    st = cmx__gpu_ptr(x, dev, &px);
    if (st != CMX_OK) break;
    cmx__gpu_layout l;
    layout_of(&l, x->dims, x->ndim, (const int64_t* const[]){CMX__STRIDES(x)},
              1);
    int ax = axes[k], idt = (int)x->dtype, first = k == 0;
    long long dim = dims[ax], e = ext[ax], stride = strides[ax] / unit,
              n = npos;
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, px);
    CMX__GPU_ARG(&args, idt);
    CMX__GPU_ARG(&args, offs);
    CMX__GPU_ARG(&args, dim);
    CMX__GPU_ARG(&args, e);
    CMX__GPU_ARG(&args, stride);
    CMX__GPU_ARG(&args, first);
    CMX__GPU_ARG(&args, n);
    add_error_args(&args, op, which, ax);
    cmx__gpu_args_layout(&args, &l);
    st = launch(op, dev, &cmx__gpu_family_gather, 0, G_OFFSETS, npos, &args);
  }
  return st;
}

/* A device scratch buffer of bytes (released by the caller). */
static cmx_status scratch(size_t bytes, int dev, cmx__buffer** out) {
  *out = cmx__device_hooks->alloc_device(bytes, dev);
  return *out ? CMX_OK : cmx_last_status();
}

/* Where the slices of the index positions of a Gather's or Scatter's
 * general kernel start: its CMX_POS_PARAMS (kernels/indexing.cu), built
 * by positions and appended by add_pos_args. */
typedef struct {
  cmx_array idx; /* non-NULL: the inline variant reads it in place */
  long long istride, dim, ext, stride;
  const char* which;
  int axis;
  CUdeviceptr offs; /* else the offsets pass's offsets (0: none) */
  cmx__buffer* buf; /* their buffer (released by the caller) */
} pos_src;

/* The positions of npos index positions of idx[0..nidx) on axes of an
 * array of dims, with room for ext, at strides / unit (see index_offsets;
 * bad indices reported for op and which). One index array whose
 * positions lie at one stride (a contiguous or strided vector, a 0-d
 * dynamic-slice start, any integer dtype) is read in place by the
 * kernel: no offsets pass, no scratch buffer. Found once a position, the
 * index costs a thread no more than the offset it replaces (one cached
 * load, the wrap, a product), whatever the index count; an index of
 * several dims that do not merge (a transposed or broadcast one) would
 * need divisions by its shape in every thread, so the offsets pass does
 * them once a position instead. */
static cmx_status positions(const char* op, const char* which, int dev,
                            const cmx_array* idx, int nidx, const int* axes,
                            const int64_t* dims, const int64_t* ext,
                            const int64_t* strides, int64_t unit, int64_t npos,
                            pos_src* ps) {
  memset(ps, 0, sizeof *ps);
  if (nidx == 0) return CMX_OK;
  cmx__gpu_layout l;
  layout_of(&l, idx[0]->dims, idx[0]->ndim,
            (const int64_t* const[]){CMX__STRIDES(idx[0])}, 1);
  if (nidx == 1 && idx[0]->size == npos && l.ndim <= 1) {
    *ps = (pos_src){.idx = idx[0],
                    .istride = l.ndim ? l.strides[1][0] : 0,
                    .dim = dims[axes[0]],
                    .ext = ext[axes[0]],
                    .stride = strides[axes[0]] / unit,
                    .which = which,
                    .axis = axes[0]};
    return CMX_OK;
  }
  cmx_status st = scratch((size_t)npos * sizeof(int64_t), dev, &ps->buf);
  if (st == CMX_OK) {
    ps->offs = ps->buf->dev;
    st = index_offsets(op, which, dev, ps->offs, idx, nidx, axes, dims, ext,
                       strides, unit, npos);
  }
  return st;
}

/* Appends ps's kernel arguments (CMX_POS_PARAMS). */
static cmx_status add_pos_args(cmx__gpu_args* args, const char* op, int dev,
                               const pos_src* ps) {
  if (!ps->idx) {
    CMX__GPU_ARG(args, ps->offs);
    return CMX_OK;
  }
  CUdeviceptr pi;
  cmx_status st = cmx__gpu_ptr(ps->idx, dev, &pi);
  if (st != CMX_OK) return st;
  int idt = (int)ps->idx->dtype;
  CMX__GPU_ARG(args, pi);
  CMX__GPU_ARG(args, idt);
  CMX__GPU_ARG(args, ps->istride);
  CMX__GPU_ARG(args, ps->dim);
  CMX__GPU_ARG(args, ps->ext);
  CMX__GPU_ARG(args, ps->stride);
  add_error_args(args, op, ps->which, ps->axis);
  return CMX_OK;
}

/* The output of a scatter: a's values, in a's buffer when it can be
 * donated, else copied. */
static cmx_status start_from(cmx_array o, cmx_array a, int dev,
                             const char* op) {
  int donated = -1;
  cmx_status st = cmx__gpu_alloc_out(o, &a, 1, dev, &donated);
  if (st == CMX_OK && donated < 0 && o->size > 0)
    st = cmx__gpu_copy_rowmajor(o, a, dev, op);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* The winner words of a plain scatter into o (mode none; see cmx_apply
 * in kernels/indexing.cu): one zeroed 64-bit word per element of o's
 * buffer, so that the last update of each element wins as on the CPU. */
static cmx_status winner_words(const char* op, cmx_array o, int dev,
                               cmx__buffer** out) {
  size_t n = o->buf->size / cmx_dtype_size(o->dtype) + 1;
  cmx_status st = scratch(n * sizeof(uint64_t), dev, out);
  if (st == CMX_OK) st = cmx__gpu_memset(op, (*out)->dev, 0, 4, 2 * n);
  return st;
}

/* Launches scatter kernel `kernel` of variant v over `work` updates with
 * the arguments `rest`: once, or, with winner words (a plain scatter), as
 * its two passes; the kernels take (W, pass) after rest. */
static cmx_status scatter_passes(const char* op, int dev, int v, int kernel,
                                 int64_t work, const cmx__gpu_args* rest,
                                 const cmx__buffer* win) {
  CUdeviceptr pw = win ? win->dev : 0;
  cmx_status st = CMX_OK;
  for (int pass = win ? 1 : 0; st == CMX_OK && pass <= (win ? 2 : 0); pass++) {
    cmx__gpu_args args = *rest;
    CMX__GPU_ARG(&args, pw);
    CMX__GPU_ARG(&args, pass);
    st = launch(op, dev, &cmx__gpu_family_scatter, v, kernel, work, &args);
  }
  return st;
}

/* Launches rows kernel `kernel` (cmx_gather_rows, cmx_scatter_rows) of
 * variant v of f: a warp per index position p, moving a row of S elements
 * between p0/p1 and the indexed array's row x_p * stride, x_p read from
 * idx (indexing axis `axis` of size dim, room for ext; bad ones reported
 * for op). vec (may be NULL: not passed) is the scatter's vector flag. */
static cmx_status launch_rows(const char* op, int dev, const cmx__gpu_family* f,
                              int v, int kernel, CUdeviceptr p0, CUdeviceptr p1,
                              cmx_array idx, int axis, long long dim,
                              long long ext, long long stride, long long S,
                              const int* vec) {
  CUdeviceptr pi;
  cmx_status st = cmx__gpu_ptr(idx, dev, &pi);
  if (st != CMX_OK) return st;
  cmx__gpu_layout l;
  layout_of(&l, idx->dims, idx->ndim,
            (const int64_t* const[]){CMX__STRIDES(idx)}, 1);
  int idt = (int)idx->dtype;
  long long npos = idx->size;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, p0);
  CMX__GPU_ARG(&args, p1);
  CMX__GPU_ARG(&args, pi);
  CMX__GPU_ARG(&args, idt);
  CMX__GPU_ARG(&args, dim);
  CMX__GPU_ARG(&args, ext);
  CMX__GPU_ARG(&args, stride);
  CMX__GPU_ARG(&args, S);
  CMX__GPU_ARG(&args, npos);
  if (vec) CMX__GPU_ARG(&args, *vec);
  add_error_args(&args, op, NULL, axis);
  cmx__gpu_args_layout(&args, &l);
  return launch(op, dev, f, v, kernel, (int64_t)npos * 32, &args);
}

/* ---------------- Gather ---------------- */

static int variant_of_size(size_t isz) {
  return isz == 1 ? 0 : isz == 2 ? 1 : isz == 4 ? 2 : isz == 8 ? 3 : 4;
}

/* o[p * S + s] = a[start of position p (ps) + slice offset s (layout l)]
 * for the n elements of o, elements of isz bytes (16: vectors). */
static cmx_status launch_gather(const char* op, int dev, CUdeviceptr pa,
                                CUdeviceptr po, const pos_src* ps, int64_t S,
                                int64_t n, const cmx__gpu_layout* l,
                                size_t isz) {
  long long S1 = S;
  bool i32 = cmx__gpu_layout_fits_i32(l, n);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, pa);
  CMX__GPU_ARG(&args, po);
  cmx_status st = add_pos_args(&args, op, dev, ps);
  if (st != CMX_OK) return st;
  CMX__GPU_ARG(&args, S1);
  cmx__gpu_args_count(&args, i32, n);
  cmx__gpu_args_layout(&args, l);
  int kernel = G_GATHER + (i32 ? 0 : 2) + (l->ndim == 1 ? 0 : 1);
  return launch(op, dev, &cmx__gpu_family_gather,
                variant_of_size(isz) + (ps->idx ? G_SIZES : 0), kernel, n,
                &args);
}

cmx_status cmx__gpu_gather_blocks(const char* op, const char* which, int dev,
                                  CUdeviceptr dst, CUdeviceptr src, size_t isz,
                                  cmx_array idx, int64_t nblocks,
                                  int64_t block) {
  int64_t npos = idx->size;
  if (npos == 0 || block == 0) return CMX_OK;
  int64_t unit = 1;
  if (isz < 16 && (block * (int64_t)isz) % 16 == 0 && src % 16 == 0 &&
      dst % 16 == 0)
    unit = 16 / (int64_t)isz;
  int64_t S = block / unit, one = 1;
  cmx__gpu_layout l;
  layout_of(&l, &S, 1, (const int64_t* const[]){&one}, 1);
  pos_src ps;
  cmx_status st = positions(op, which, dev, &idx, 1, (const int[]){0}, &nblocks,
                            &one, &block, unit, npos, &ps);
  if (st == CMX_OK)
    st = launch_gather(op, dev, src, dst, &ps, S, npos * S, &l,
                       isz * (size_t)unit);
  if (ps.buf) cmx__buffer_release(ps.buf);
  return st;
}

/* An empty Gather result or Scatter update (a slice or an index position
 * count of zero) moves nothing, but its indices idx[0..nidx) (on axes of
 * an array of dims, with room for ext) must be in range, as on the CPU:
 * the offsets pass checks them into a scratch buffer; a bad one fails
 * the eval for op. */
static cmx_status check_indices(const char* op, int dev, const cmx_array* idx,
                                int nidx, const int* axes, const int64_t* dims,
                                const int64_t* ext) {
  int64_t npos = nidx > 0 ? idx[0]->size : 0;
  if (npos == 0) return CMX_OK;
  int64_t ones[CMX_MAX_NDIM];
  for (int d = 0; d < CMX_MAX_NDIM; d++) ones[d] = 1;
  cmx__buffer* offs = NULL;
  cmx_status st = scratch((size_t)npos * sizeof(int64_t), dev, &offs);
  if (st == CMX_OK)
    st = index_offsets(op, NULL, dev, offs->dev, idx, nidx, axes, dims, ext,
                       ones, 1, npos);
  if (offs) cmx__buffer_release(offs);
  return st;
}

cmx_status cmx__gpu_gather(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nout;
  const cmx__gather_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_array a = in[0], o = out[0];
  int nidx = nin - 1;
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK) return st;
  if (o->size == 0)
    return check_indices("gather", dev, in + 1, nidx, q->axes, a->dims,
                         q->slice_sizes);
  CUdeviceptr pa, po;
  st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  size_t isz = cmx_dtype_size(a->dtype);
  const int64_t* ast = CMX__STRIDES(a);
  int64_t S = 1;
  for (int d = 0; d < a->ndim; d++) S *= q->slice_sizes[d];
  int64_t npos = o->size / S;
  cmx__gpu_layout l;
  layout_of(&l, q->slice_sizes, a->ndim, (const int64_t* const[]){ast}, 1);
  /* contiguous slices of 16-byte multiples at 16-byte steps: vectors */
  int64_t unit = 1;
  if (isz < 16 && l.ndim == 1 && l.strides[1][0] == 1 &&
      (S * (int64_t)isz) % 16 == 0 && pa % 16 == 0 && po % 16 == 0) {
    int64_t v = 16 / (int64_t)isz;
    bool ok = true;
    for (int k = 0; k < nidx; k++) ok = ok && ast[q->axes[k]] % v == 0;
    if (ok) {
      unit = v;
      l.shape[0] = S / v;
    }
  }
  /* one index array taking contiguous rows (an embedding lookup): a warp
   * per row, the index read in place */
  if (nidx == 1 && l.ndim == 1 && l.strides[1][0] == 1 && S / unit >= 16 &&
      in[1]->size == npos) {
    int ax = q->axes[0];
    st = launch_rows("gather", dev, &cmx__gpu_family_gather,
                     variant_of_size(isz * (size_t)unit), G_ROWS, pa, po, in[1],
                     ax, a->dims[ax], q->slice_sizes[ax], ast[ax] / unit,
                     S / unit, NULL);
    if (st == CMX_OK) cmx_kernel_mark_device_written(o);
    return st;
  }
  pos_src ps;
  st = positions("gather", NULL, dev, in + 1, nidx, q->axes, a->dims,
                 q->slice_sizes, ast, unit, npos, &ps);
  if (st == CMX_OK)
    st = launch_gather("gather", dev, pa, po, &ps, S / unit, o->size / unit, &l,
                       isz * (size_t)unit);
  if (ps.buf) cmx__buffer_release(ps.buf);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* ---------------- GatherAxis ---------------- */

cmx_status cmx__gpu_gather_axis(const cmx_primitive* p, const cmx_array* in,
                                int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__axis_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_array a = in[0], idx = in[1], o = out[0];
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  CUdeviceptr pa, po, pi;
  st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(idx, dev, &pi);
  if (st != CMX_OK) return st;
  int64_t ast[CMX_MAX_NDIM];
  memcpy(ast, CMX__STRIDES(a), (size_t)a->ndim * sizeof(int64_t));
  long long axis_stride = ast[q->axis], dim = a->dims[q->axis];
  ast[q->axis] = 0;
  cmx__gpu_layout l;
  layout_of(&l, o->dims, o->ndim,
            (const int64_t* const[]){ast, CMX__STRIDES(idx)}, 2);
  bool i32 = cmx__gpu_layout_fits_i32(&l, o->size);
  int idt = (int)idx->dtype;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, pa);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, pi);
  CMX__GPU_ARG(&args, idt);
  CMX__GPU_ARG(&args, dim);
  CMX__GPU_ARG(&args, axis_stride);
  add_error_args(&args, "take_along_axis", NULL, q->axis);
  cmx__gpu_args_count(&args, i32, o->size);
  cmx__gpu_args_layout(&args, &l);
  st = launch("take_along_axis", dev, &cmx__gpu_family_gather,
              variant_of_size(cmx_dtype_size(a->dtype)), G_AXIS + (i32 ? 0 : 1),
              o->size, &args);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

/* ---------------- Scatter ---------------- */

cmx_status cmx__gpu_scatter(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nout;
  const cmx__scatter_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_array a = in[0], upd = in[nin - 1], o = out[0];
  int nidx = nin - 2;
  cmx_status st = start_from(o, a, dev, "scatter");
  if (st != CMX_OK) return st;
  int ind = upd->ndim - o->ndim; /* index dims of the updates */
  const int64_t* ost = CMX__STRIDES(o);
  int64_t S = 1, ext[CMX_MAX_NDIM];
  for (int d = 0; d < o->ndim; d++) {
    ext[d] = upd->dims[ind + d];
    S *= ext[d];
  }
  if (upd->size == 0)
    return check_indices("scatter", dev, in + 1, nidx, q->axes, o->dims, ext);
  CUdeviceptr po, pu;
  st = cmx__gpu_ptr(o, dev, &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(upd, dev, &pu);
  if (st != CMX_OK) return st;
  int64_t npos = upd->size / S;
  cmx__gpu_layout lo, lu;
  layout_of(&lo, ext, o->ndim, (const int64_t* const[]){ost}, 1);
  /* one index array, updates of whole rows (an embedding's gradient): a
   * warp per row, 16-byte vector reductions where they exist */
  if (q->mode != CMX__SCATTER_NONE && nidx == 1 && lo.ndim == 1 &&
      lo.strides[1][0] == 1 && S >= 16 && in[1]->size == npos &&
      (upd->flags & CMX__FLAG_ROW_CONTIG)) {
    int ax = q->axes[0];
    int64_t esz = (int64_t)cmx_dtype_size(o->dtype);
    int vec = (S * esz) % 16 == 0 && (ost[ax] * esz) % 16 == 0 &&
              po % 16 == 0 && pu % 16 == 0;
    return launch_rows("scatter", dev, &cmx__gpu_family_scatter,
                       q->mode * CMX_NUM_DTYPES + (int)o->dtype, S_ROWS, po, pu,
                       in[1], ax, o->dims[ax], ext[ax], ost[ax], S, &vec);
  }
  pos_src ps;
  st = positions("scatter", NULL, dev, in + 1, nidx, q->axes, o->dims, ext, ost,
                 1, npos, &ps);
  /* One index position (slice_update with an array start: a KV cache's
   * write) writes a window of distinct elements: no two updates meet, so
   * the plain stores need no winner pass (saves a memset and a launch). */
  cmx__buffer* win = NULL;
  if (st == CMX_OK && q->mode == CMX__SCATTER_NONE && npos > 1)
    st = winner_words("scatter", o, dev, &win);
  layout_of(&lu, upd->dims, upd->ndim,
            (const int64_t* const[]){CMX__STRIDES(upd)}, 1);
  bool i32 = cmx__gpu_layout_fits_i32(&lo, upd->size) &&
             cmx__gpu_layout_fits_i32(&lu, upd->size);
  long long S1 = S;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, pu);
  if (st == CMX_OK) st = add_pos_args(&args, "scatter", dev, &ps);
  CMX__GPU_ARG(&args, S1);
  cmx__gpu_args_count(&args, i32, upd->size);
  cmx__gpu_args_layout(&args, &lo);
  cmx__gpu_args_layout(&args, &lu);
  if (st == CMX_OK)
    st = scatter_passes(
        "scatter", dev,
        q->mode * CMX_NUM_DTYPES + (int)o->dtype + (ps.idx ? S_INLINE : 0),
        S_SCATTER + (i32 ? 0 : 1), upd->size, &args, win);
  if (win) cmx__buffer_release(win);
  if (ps.buf) cmx__buffer_release(ps.buf);
  return st;
}

/* ---------------- ScatterAxis ---------------- */

cmx_status cmx__gpu_scatter_axis(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__axis_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_array a = in[0], idx = in[1], val = in[2], o = out[0];
  cmx_status st = start_from(o, a, dev, "put_along_axis");
  if (st != CMX_OK || idx->size == 0) return st;
  CUdeviceptr po, pu, pi;
  st = cmx__gpu_ptr(o, dev, &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(val, dev, &pu);
  if (st == CMX_OK) st = cmx__gpu_ptr(idx, dev, &pi);
  if (st != CMX_OK) return st;
  int64_t ost[CMX_MAX_NDIM];
  memcpy(ost, CMX__STRIDES(o), (size_t)o->ndim * sizeof(int64_t));
  long long axis_stride = ost[q->axis], dim = o->dims[q->axis];
  ost[q->axis] = 0;
  cmx__gpu_layout l;
  layout_of(&l, idx->dims, idx->ndim,
            (const int64_t* const[]){ost, CMX__STRIDES(idx), CMX__STRIDES(val)},
            3);
  bool i32 = cmx__gpu_layout_fits_i32(&l, idx->size);
  int idt = (int)idx->dtype;
  cmx__buffer* win = NULL;
  if (q->mode == CMX__SCATTER_NONE)
    st = winner_words("put_along_axis", o, dev, &win);
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  CMX__GPU_ARG(&args, po);
  CMX__GPU_ARG(&args, pu);
  CMX__GPU_ARG(&args, pi);
  CMX__GPU_ARG(&args, idt);
  CMX__GPU_ARG(&args, dim);
  CMX__GPU_ARG(&args, axis_stride);
  add_error_args(&args, "put_along_axis", NULL, q->axis);
  cmx__gpu_args_count(&args, i32, idx->size);
  cmx__gpu_args_layout(&args, &l);
  if (st == CMX_OK)
    st = scatter_passes("put_along_axis", dev,
                        q->mode * CMX_NUM_DTYPES + (int)o->dtype,
                        S_AXIS + (i32 ? 0 : 1), idx->size, &args, win);
  if (win) cmx__buffer_release(win);
  return st;
}
