/* GPU kernels of Sort, ArgSort, Partition, ArgPartition and SearchSorted
 * (kernels/sort.cu): one variant per dtype, keyed as the CPU keys it
 * (backend/cpu/sort.c), so results equal the CPU's bit for bit: sorts are
 * stable (ties in input order), NaNs last, -0.0 and 0.0 equal (each
 * element keeps its own bits).
 *
 * Partition and ArgPartition sort the whole row: a sorted row is
 * partitioned at every kth (MLX's contract); it equals the CPU's result
 * for rows of up to 32 elements, which the CPU also sorts whole, and
 * satisfies the same contract beyond.
 *
 * The sorted axis is made the last of contiguous rows: a row-major input
 * sorted along its last axis is read in place, any other layout or axis
 * is first copied (cmx__gpu_copy_strided) into rows, and the result of
 * such rows is copied back into the output's axis. Rows of up to 256
 * elements sort in shared memory through a bitonic network, several rows
 * to a block; rows of up to 4096 by an LSD radix sort of 8-bit digits in
 * shared memory, a block a row, skipping the digits all keys share;
 * longer rows by an LSD radix sort over tiles of 4096 (three launches a
 * pass, one pass per key byte; the passes move the elements, and their
 * indices for an argsort only, each tile's digit runs written out
 * contiguously from shared memory).
 */
#include "primitives/sort.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "core/layout.h"

enum { K_BLOCK, K_TILE, K_HIST, K_SCAN, K_SCATTER, K_SEARCH };
static const char* const k_kernels[] = {"cmx_sort_block",
                                        "cmx_sort_tile",
                                        "cmx_sort_hist",
                                        "cmx_sort_scan",
                                        "cmx_sort_scatter",
                                        "cmx_sort_search",
                                        NULL};

/* Rows up to this long sort through the bitonic network, several to a
 * block; longer rows up to SORT_TILE by a block's radix sort. */
#define SORT_BLOCK_MAX 256
/* Slots a block of the shared-memory sort holds at least (short rows). */
#define SORT_BLOCK_SLOTS 2048
/* The radix sort's tile (kernels/sort.cu: CMX_S_TILE) and block. */
#define SORT_TILE 4096
#define SORT_THREADS 256

/* Per dtype: the key kind (kernels/sort.cu: 0 unsigned, 1 signed, 2
 * float, 3 complex64), the sign bit and the bits of +inf. */
static const struct {
  int kind;
  const char *sign, *inf;
} k_keys[CMX_NUM_DTYPES] = {
    [CMX_BOOL] = {0, "0", "0"},
    [CMX_UINT8] = {0, "0", "0"},
    [CMX_UINT16] = {0, "0", "0"},
    [CMX_UINT32] = {0, "0", "0"},
    [CMX_UINT64] = {0, "0", "0"},
    [CMX_INT8] = {1, "0x80u", "0"},
    [CMX_INT16] = {1, "0x8000u", "0"},
    [CMX_INT32] = {1, "0x80000000u", "0"},
    [CMX_INT64] = {1, "0x8000000000000000ull", "0"},
    [CMX_FLOAT16] = {2, "0x8000u", "0x7c00u"},
    [CMX_BFLOAT16] = {2, "0x8000u", "0x7f80u"},
    [CMX_FLOAT32] = {2, "0x80000000u", "0x7f800000u"},
    [CMX_FLOAT64] = {2, "0x8000000000000000ull", "0x7ff0000000000000ull"},
    [CMX_COMPLEX64] = {3, "0", "0"}};

static bool sort_variant(int v, cmx__gpu_variant* out) {
  if (v < 0 || v >= CMX_NUM_DTYPES) return false;
  cmx_dtype dt = (cmx_dtype)v;
  int bits = (int)cmx_dtype_size(dt) * 8;
  static const char* const types[] = {
      "", "cmx_u8", "cmx_u16", "", "cmx_u32", "", "", "", "cmx_u64"};
  snprintf(out->name, sizeof out->name, "sort_%s", cmx_dtype_name(dt));
  out->flags = 0;
  int w = snprintf(out->prelude, sizeof out->prelude,
                   "#define CMX_S_T %s\n#define CMX_S_BITS %d\n"
                   "#define CMX_S_KIND %d\n#define CMX_S_SIGN %s\n"
                   "#define CMX_S_INF %s\n",
                   types[bits / 8], bits, k_keys[v].kind, k_keys[v].sign,
                   k_keys[v].inf);
  return w > 0 && (size_t)w < sizeof out->prelude;
}

const cmx__gpu_family cmx__gpu_family_sort = {
    .name = "sort",
    .file = "sort",
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = CMX_NUM_DTYPES,
    .variant = sort_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 16}};

/* A device scratch buffer of bytes (at least 1), kept in bufs[*nb]. */
static cmx_status scratch(size_t bytes, int dev, cmx__buffer** bufs, int* nb,
                          CUdeviceptr* out) {
  cmx__buffer* b = cmx__device_hooks->alloc_device(bytes ? bytes : 1, dev);
  if (!b) return cmx_last_status();
  bufs[(*nb)++] = b;
  *out = b->dev;
  return CMX_OK;
}

static cmx_status launch(const char* op, int dev, int var, int kernel,
                         unsigned grid, unsigned threads, size_t shared,
                         const cmx__gpu_args* args) {
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_sort, var, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = {{grid, 1, 1}, {threads, 1, 1}, shared};
  return cmx__gpu_launch(op, k, &cfg, args);
}

/* Sorts `rows` contiguous rows of n elements of dtype dt at x into yi
 * (indices) or yv (elements), the other 0. */
static cmx_status sort_rows(const char* op, int dev, cmx_dtype dt,
                            CUdeviceptr x, long long rows, long long n,
                            CUdeviceptr yi, CUdeviceptr yv) {
  int var = (int)dt, bits = (int)cmx_dtype_size(dt) * 8;
  cmx__gpu_args args;
  cmx__gpu_args_init(&args);
  if (n > SORT_BLOCK_MAX && n <= SORT_TILE) {
    if (rows > INT_MAX)
      return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", op,
                              rows);
    int nn = (int)n;
    CMX__GPU_ARG(&args, x);
    CMX__GPU_ARG(&args, yi);
    CMX__GPU_ARG(&args, yv);
    CMX__GPU_ARG(&args, nn);
    return launch(op, dev, var, K_TILE, (unsigned)rows, SORT_THREADS,
                  (size_t)SORT_TILE * ((size_t)bits / 8 + 2), &args);
  }
  if (n <= SORT_BLOCK_MAX) {
    int P = 1;
    while (P < n) P *= 2;
    long long rpb = P >= SORT_BLOCK_SLOTS ? 1 : SORT_BLOCK_SLOTS / P;
    if (rpb > rows) rpb = rows;
    long long slots = P * rpb, grid = (rows + rpb - 1) / rpb;
    if (grid > INT_MAX)
      return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", op,
                              rows);
    unsigned threads = slots / 2 > 1024 ? 1024
                       : slots / 2 < 32 ? 32
                                        : (unsigned)(slots / 2);
    size_t shared = (size_t)slots * (bits <= 32 ? 8 : 16);
    int nn = (int)n, pp = P, rr = (int)rpb;
    CMX__GPU_ARG(&args, x);
    CMX__GPU_ARG(&args, yi);
    CMX__GPU_ARG(&args, yv);
    CMX__GPU_ARG(&args, rows);
    CMX__GPU_ARG(&args, nn);
    CMX__GPU_ARG(&args, pp);
    CMX__GPU_ARG(&args, rr);
    return launch(op, dev, var, K_BLOCK, (unsigned)grid, threads, shared,
                  &args);
  }
  /* the radix sort */
  long long ntiles = (n + SORT_TILE - 1) / SORT_TILE, nb = rows * ntiles;
  if (nb > INT_MAX || rows * 256 > INT_MAX)
    return cmx_kernel_error(CMX_ERR_VALUE, "[%s] too many rows (%lld)", op,
                            rows);
  size_t total = (size_t)(rows * n), kb = (size_t)bits / 8;
  int passes = bits / 8;
  cmx__buffer* bufs[6] = {NULL};
  int nbuf = 0;
  CUdeviceptr keys[2] = {0, 0}, idx[2] = {0, 0}, counts = 0, tot = 0;
  cmx_status st = scratch((size_t)nb * 256 * 4, dev, bufs, &nbuf, &counts);
  if (st == CMX_OK)
    st = scratch((size_t)rows * 256 * 4, dev, bufs, &nbuf, &tot);
  for (int b = 0; b < 2 && passes > 1 && st == CMX_OK; b++) {
    if (b == 1 && passes < 3) break; /* two passes: one buffer each */
    st = scratch(total * kb, dev, bufs, &nbuf, &keys[b]);
    if (st == CMX_OK && yi) st = scratch(total * 4, dev, bufs, &nbuf, &idx[b]);
  }
  CUdeviceptr zero = 0;
  int cur = -1; /* keys[cur] hold the last pass's output (-1: x) */
  for (int p = 0; p < passes && st == CMX_OK; p++) {
    int shift = 8 * p, last = p == passes - 1, nxt = cur == 0 ? 1 : 0;
    if (!keys[1]) nxt = 0;
    CUdeviceptr kin = cur < 0 ? 0 : keys[cur], iin = cur < 0 ? 0 : idx[cur];
    CUdeviceptr kout = last ? 0 : keys[nxt], iout = last ? 0 : idx[nxt];
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, x);
    CMX__GPU_ARG(&args, kin);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, ntiles);
    CMX__GPU_ARG(&args, shift);
    CMX__GPU_ARG(&args, counts);
    st = launch(op, dev, var, K_HIST, (unsigned)nb, SORT_THREADS, 0, &args);
    if (st != CMX_OK) break;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, counts);
    CMX__GPU_ARG(&args, tot);
    CMX__GPU_ARG(&args, ntiles);
    st = launch(op, dev, var, K_SCAN, (unsigned)(rows * 256), SORT_THREADS, 0,
                &args);
    if (st != CMX_OK) break;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, x);
    CMX__GPU_ARG(&args, kin);
    CMX__GPU_ARG(&args, iin);
    CMX__GPU_ARG(&args, kout);
    CMX__GPU_ARG(&args, iout);
    CMX__GPU_ARG(&args, counts);
    CMX__GPU_ARG(&args, tot);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, ntiles);
    CMX__GPU_ARG(&args, shift);
    CMX__GPU_ARG(&args, last);
    CUdeviceptr oi = last ? yi : zero, ov = last ? yv : zero;
    CMX__GPU_ARG(&args, oi);
    CMX__GPU_ARG(&args, ov);
    /* shared memory: the tile's elements, indices (argsort), digits */
    size_t smem = (size_t)SORT_TILE * (kb + (yi ? 4 : 0) + 1);
    st = launch(op, dev, var, K_SCATTER, (unsigned)nb, SORT_THREADS, smem,
                &args);
    cur = nxt;
  }
  for (int b = 0; b < nbuf; b++) cmx__buffer_release(bufs[b]);
  return st;
}

/* dims and strides of an array with `axis` moved last. */
static void axis_last(const int64_t* dims, const int64_t* st, int nd, int axis,
                      int64_t* pdims, int64_t* pst) {
  int k = 0;
  for (int d = 0; d < nd; d++)
    if (d != axis) {
      pdims[k] = dims[d];
      pst[k++] = st[d];
    }
  pdims[k] = dims[axis];
  pst[k] = st[axis];
}

static cmx_status run_sort(const cmx_primitive* p, const cmx_array* in,
                           const cmx_array* out, bool arg) {
  const cmx__sort_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const char* op = cmx_primitive_name(p);
  if (o->size == 0) return cmx_kernel_alloc(o);
  if ((int)a->dtype < 0 || a->dtype >= CMX_NUM_DTYPES ||
      o->dtype != (arg ? CMX_UINT32 : a->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(a->dtype));
  int dev = cmx_primitive_stream(p).device.index, nd = a->ndim;
  int axis = (int)q->axis;
  long long n = a->dims[axis], rows = a->size / n, inner = 1;
  for (int d = axis + 1; d < nd; d++) inner *= a->dims[d];
  size_t isz = cmx_dtype_size(a->dtype), osz = arg ? 4 : isz;
  int64_t pdims[CMX_MAX_NDIM], ast[CMX_MAX_NDIM], ost[CMX_MAX_NDIM],
      rm[CMX_MAX_NDIM], orm[CMX_MAX_NDIM];
  cmx__buffer* bufs[2] = {NULL, NULL};
  int nbuf = 0;
  CUdeviceptr pa, po, x, y;
  cmx_status st = cmx_kernel_alloc(o);
  if (st == CMX_OK) st = cmx__gpu_ptr(a, dev, &pa);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  axis_last(a->dims, CMX__STRIDES(a), nd, axis, pdims, ast);
  cmx__row_major_strides(pdims, nd, rm);
  x = pa;
  if (!(a->flags & CMX__FLAG_ROW_CONTIG) || inner != 1) {
    st = scratch((size_t)a->size * isz, dev, bufs, &nbuf, &x);
    if (st == CMX_OK)
      st = cmx__gpu_copy_strided(op, dev, x, rm, pa, ast, pdims, nd, isz);
  }
  y = po;
  if (st == CMX_OK && inner != 1)
    st = scratch((size_t)o->size * osz, dev, bufs, &nbuf, &y);
  if (st == CMX_OK)
    st = sort_rows(op, dev, a->dtype, x, rows, n, arg ? y : 0, arg ? 0 : y);
  if (st == CMX_OK && inner != 1) {
    cmx__row_major_strides(o->dims, nd, orm);
    axis_last(o->dims, orm, nd, axis, pdims, ost);
    st = cmx__gpu_copy_strided(op, dev, po, ost, y, rm, pdims, nd, osz);
  }
  for (int b = 0; b < nbuf; b++) cmx__buffer_release(bufs[b]);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}

cmx_status cmx__gpu_sort(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  return run_sort(p, in, out, false);
}

cmx_status cmx__gpu_argsort(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  return run_sort(p, in, out, true);
}

cmx_status cmx__gpu_searchsorted(const cmx_primitive* p, const cmx_array* in,
                                 int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  const cmx__searchsorted_params* q = cmx_primitive_params(p);
  cmx_array seq = in[0], v = in[1], o = out[0];
  const char* op = cmx_primitive_name(p);
  if (o->size == 0) return cmx_kernel_alloc(o);
  if ((int)seq->dtype < 0 || seq->dtype >= CMX_NUM_DTYPES ||
      v->dtype != seq->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(seq->dtype));
  int dev = cmx_primitive_stream(p).device.index;
  size_t isz = cmx_dtype_size(v->dtype);
  cmx__buffer* bufs[1] = {NULL};
  int nbuf = 0;
  CUdeviceptr ps = 0, pv, po, xv;
  cmx_status st = cmx_kernel_alloc(o);
  if (st == CMX_OK && seq->size > 0) st = cmx__gpu_ptr(seq, dev, &ps);
  if (st == CMX_OK) st = cmx__gpu_ptr(v, dev, &pv);
  if (st == CMX_OK) st = cmx__gpu_ptr(o, dev, &po);
  if (st != CMX_OK) return st;
  xv = pv;
  if (!(v->flags & CMX__FLAG_ROW_CONTIG)) {
    int64_t rm[CMX_MAX_NDIM];
    cmx__row_major_strides(v->dims, v->ndim, rm);
    st = scratch((size_t)v->size * isz, dev, bufs, &nbuf, &xv);
    if (st == CMX_OK)
      st = cmx__gpu_copy_strided(op, dev, xv, rm, pv, CMX__STRIDES(v), v->dims,
                                 v->ndim, isz);
  }
  long long sst = seq->ndim ? CMX__STRIDES(seq)[0] : 1, n = seq->size,
            m = o->size;
  int right = q->right != 0;
  if (st == CMX_OK) {
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    CMX__GPU_ARG(&args, ps);
    CMX__GPU_ARG(&args, sst);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, xv);
    CMX__GPU_ARG(&args, po);
    CMX__GPU_ARG(&args, m);
    CMX__GPU_ARG(&args, right);
    const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &cmx__gpu_family_sort,
                                                   (int)v->dtype, K_SEARCH);
    if (!k) {
      st = cmx_last_status();
    } else {
      cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, m);
      st = cmx__gpu_launch(op, k, &cfg, &args);
    }
  }
  for (int b = 0; b < nbuf; b++) cmx__buffer_release(bufs[b]);
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
