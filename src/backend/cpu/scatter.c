/* CPU kernels of Scatter and ScatterAxis.
 *
 * The output starts as a copy of the input array (its buffer when the
 * input can be donated). Updates are applied in row-major order of the
 * index positions, so repeated indices behave deterministically: the last
 * write wins for plain scatter and the others accumulate. Each (mode,
 * dtype) pair has two update loops: a row form (o[i*os] op= u[i*us], for
 * the elements of one slice) and an indexed form (o[oo[i]] op= u[uo[i]]
 * or u[i*us], for single-element slices, applied strictly in order). Integers
 * wrap (computed unsigned), float16/bfloat16 compute in float32, max/min
 * propagate NaN, complex max/min compare real then imaginary parts. */
#include <complex.h>

#include "backend/cpu/indexing.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/shape_copy.h"
#include "core/layout.h"
#include "primitives/indexing.h"

typedef void (*upd_row_fn)(char* o, int64_t os, const char* u, int64_t us,
                           int64_t n);
/* uo NULL: the updates are at u + i * us. */
typedef void (*upd_idx_fn)(char* o, const int64_t* oo, const char* u,
                           const int64_t* uo, int64_t us, int64_t n);

#define ID(x) (x)

/* GEN(name, T storage, CT compute, LD, ST, EXPR of x (old) and y (update)) */
#define GEN(name, T, CT, LD, ST, EXPR)                                       \
  static void row_##name(char* op_, int64_t os, const char* up_, int64_t us, \
                         int64_t n) {                                        \
    T* o = (T*)op_;                                                          \
    const T* u = (const T*)up_;                                              \
    if (os == 1 && us == 1) {                                                \
      for (int64_t i = 0; i < n; i++) {                                      \
        CT x = LD(o[i]), y = LD(u[i]);                                       \
        (void)x;                                                             \
        o[i] = ST(EXPR);                                                     \
      }                                                                      \
    } else if (us == 0) {                                                    \
      CT y = LD(u[0]);                                                       \
      for (int64_t i = 0; i < n; i++) {                                      \
        CT x = LD(o[i * os]);                                                \
        (void)x;                                                             \
        o[i * os] = ST(EXPR);                                                \
      }                                                                      \
    } else {                                                                 \
      for (int64_t i = 0; i < n; i++) {                                      \
        CT x = LD(o[i * os]), y = LD(u[i * us]);                             \
        (void)x;                                                             \
        o[i * os] = ST(EXPR);                                                \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  static void idx_##name(char* op_, const int64_t* oo, const char* up_,      \
                         const int64_t* uo, int64_t us, int64_t n) {         \
    T* o = (T*)op_;                                                          \
    const T* u = (const T*)up_;                                              \
    if (uo) {                                                                \
      for (int64_t i = 0; i < n; i++) {                                      \
        CT x = LD(o[oo[i]]), y = LD(u[uo[i]]);                               \
        (void)x;                                                             \
        o[oo[i]] = ST(EXPR);                                                 \
      }                                                                      \
    } else {                                                                 \
      for (int64_t i = 0; i < n; i++) {                                      \
        CT x = LD(o[oo[i]]), y = LD(u[i * us]);                              \
        (void)x;                                                             \
        o[oo[i]] = ST(EXPR);                                                 \
      }                                                                      \
    }                                                                        \
  }                                                                          \
  FUSED(name, i32, int32_t, T, CT, LD, ST, EXPR)                             \
  FUSED(name, i64, int64_t, T, CT, LD, ST, EXPR)

/* The fused form, for one contiguous index array (of type IT) choosing
 * single elements: o[ix[i] * os + i * ostep] op= u[i * us] (ostep 0: many
 * updates into one set of bins; 1: a run of put_along_axis positions),
 * each index wrapped and checked as it is read, with no offsets array
 * between the two passes of the indexed form (a scatter_add of 2M elements
 * into 1000 bins spent 60% of its time writing and reading those offsets).
 * Returns n, or the position of the first bad index (the updates before it
 * are applied: the output is then failed, as when a later batch of the
 * indexed form holds a bad index). */
#define FUSED(name, sfx, IT, T, CT, LD, ST, EXPR)                           \
  static int64_t fused_##sfx##_##name(char* op_, int64_t os, int64_t ostep, \
                                      const IT* ix, int64_t dim,            \
                                      const char* up_, int64_t us,          \
                                      int64_t n) {                          \
    T* o = (T*)op_;                                                         \
    const T* u = (const T*)up_;                                             \
    if (ostep == 0) {                                                       \
      for (int64_t i = 0; i < n; i++) {                                     \
        int64_t k = (int64_t)ix[i];                                         \
        k += k < 0 ? dim : 0;                                               \
        if ((uint64_t)k >= (uint64_t)dim) return i;                         \
        CT x = LD(o[k * os]), y = LD(u[i * us]);                            \
        (void)x;                                                            \
        o[k * os] = ST(EXPR);                                               \
      }                                                                     \
    } else {                                                                \
      for (int64_t i = 0; i < n; i++) {                                     \
        int64_t k = (int64_t)ix[i];                                         \
        k += k < 0 ? dim : 0;                                               \
        if ((uint64_t)k >= (uint64_t)dim) return i;                         \
        CT x = LD(o[k * os + i * ostep]), y = LD(u[i * us]);                \
        (void)x;                                                            \
        o[k * os + i * ostep] = ST(EXPR);                                   \
      }                                                                     \
    }                                                                       \
    return n;                                                               \
  }

/* Index p of a contiguous int32/int64 index array (the fused form's):
 * the value a bad index's error names. */
static int64_t fused_index(cmx_array idx, int64_t p) {
  const void* ix = cmx_kernel_data(idx);
  return idx->dtype == CMX_INT32 ? (int64_t)((const int32_t*)ix)[p]
                                 : ((const int64_t*)ix)[p];
}

#define FMAX(x, y) ((x) != (x) ? (x) : ((y) != (y) || (y) > (x)) ? (y) : (x))
#define FMIN(x, y) ((x) != (x) ? (x) : ((y) != (y) || (y) < (x)) ? (y) : (x))

static inline bool c_isnan(cmx__c64 z) {
  return crealf(z) != crealf(z) || cimagf(z) != cimagf(z);
}
/* Lexicographic order on (real, imag), NaN propagating. */
static inline cmx__c64 c_max(cmx__c64 x, cmx__c64 y) {
  if (c_isnan(x)) return x;
  if (c_isnan(y)) return y;
  bool gt = crealf(y) > crealf(x) ||
            (crealf(y) == crealf(x) && cimagf(y) > cimagf(x));
  return gt ? y : x;
}
static inline cmx__c64 c_min(cmx__c64 x, cmx__c64 y) {
  if (c_isnan(x)) return x;
  if (c_isnan(y)) return y;
  bool lt = crealf(y) < crealf(x) ||
            (crealf(y) == crealf(x) && cimagf(y) < cimagf(x));
  return lt ? y : x;
}

/* Integers: sums and products in an unsigned type of at least 32 bits
 * (no signed overflow, no promotion to int), max/min in the own type. */
#define INT_MODES(sfx, T, UT)                   \
  GEN(none_##sfx, T, T, ID, ID, y)              \
  GEN(add_##sfx, T, UT, ID, ID, (x + y))        \
  GEN(prod_##sfx, T, UT, ID, ID, (x * y))       \
  GEN(max_##sfx, T, T, ID, ID, (y > x ? y : x)) \
  GEN(min_##sfx, T, T, ID, ID, (y < x ? y : x))
INT_MODES(u8, uint8_t, uint32_t)
INT_MODES(u16, uint16_t, uint32_t)
INT_MODES(u32, uint32_t, uint32_t)
INT_MODES(u64, uint64_t, uint64_t)
INT_MODES(i8, int8_t, uint32_t)
INT_MODES(i16, int16_t, uint32_t)
INT_MODES(i32, int32_t, uint32_t)
INT_MODES(i64, int64_t, uint64_t)

/* bool: add and max are "or", prod and min are "and". */
GEN(none_bool, uint8_t, uint8_t, ID, ID, y)
GEN(add_bool, uint8_t, uint8_t, ID, ID, (x | y))
GEN(prod_bool, uint8_t, uint8_t, ID, ID, (x & y))
GEN(max_bool, uint8_t, uint8_t, ID, ID, (x | y))
GEN(min_bool, uint8_t, uint8_t, ID, ID, (x & y))

#define FLOAT_MODES(sfx, T, CT, LD, ST)     \
  GEN(none_##sfx, T, T, ID, ID, y)          \
  GEN(add_##sfx, T, CT, LD, ST, (x + y))    \
  GEN(prod_##sfx, T, CT, LD, ST, (x * y))   \
  GEN(max_##sfx, T, CT, LD, ST, FMAX(x, y)) \
  GEN(min_##sfx, T, CT, LD, ST, FMIN(x, y))
FLOAT_MODES(f16, uint16_t, float, cmx__h2f, cmx__f2h)
FLOAT_MODES(bf16, uint16_t, float, cmx__bf2f, cmx__f2bf)
FLOAT_MODES(f32, float, float, ID, ID)
FLOAT_MODES(f64, double, double, ID, ID)

GEN(none_c64, cmx__c64, cmx__c64, ID, ID, y)
GEN(add_c64, cmx__c64, cmx__c64, ID, ID, (x + y))
GEN(prod_c64, cmx__c64, cmx__c64, ID, ID, (x * y))
GEN(max_c64, cmx__c64, cmx__c64, ID, ID, c_max(x, y))
GEN(min_c64, cmx__c64, cmx__c64, ID, ID, c_min(x, y))

typedef struct {
  upd_row_fn row;
  upd_idx_fn idx;
  int64_t (*fused_i32)(char*, int64_t, int64_t, const int32_t*, int64_t,
                       const char*, int64_t, int64_t);
  int64_t (*fused_i64)(char*, int64_t, int64_t, const int64_t*, int64_t,
                       const char*, int64_t, int64_t);
} upd_fns;

#define FNS(mode, sfx)                                                      \
  {                                                                         \
    row_##mode##_##sfx, idx_##mode##_##sfx, fused_i32_##mode##_##sfx,       \
        fused_i64_##mode##_##sfx                                            \
  }
#define MODE_TABLE(mode)                                                 \
  {                                                                      \
    FNS(mode, bool), FNS(mode, u8), FNS(mode, u16), FNS(mode, u32),      \
        FNS(mode, u64), FNS(mode, i8), FNS(mode, i16), FNS(mode, i32),   \
        FNS(mode, i64), FNS(mode, f16), FNS(mode, bf16), FNS(mode, f32), \
        FNS(mode, f64), FNS(mode, c64)                                   \
  }

static const upd_fns upd_table[CMX__SCATTER_NUM_MODES][CMX_NUM_DTYPES] = {
    MODE_TABLE(none), MODE_TABLE(add), MODE_TABLE(prod), MODE_TABLE(max),
    MODE_TABLE(min)};

/* Starts the output as a's values: a's buffer when it can be donated,
 * else a row-major copy. */
static cmx_status init_output(cmx_array o, cmx_array a) {
  bool donated;
  cmx_status s = cmx_kernel_alloc_donate(o, a, &donated);
  if (s != CMX_OK) return s;
  if (!donated && o->size) cmx__cpu_copy_rowmajor(cmx_kernel_data(o), a);
  return CMX_OK;
}

/* ---------------- Scatter ---------------- */

typedef struct {
  upd_fns fn;
  size_t isz;
  char* o;
  const char* u;
  int und; /* the update slice, collapsed: shape, out and update strides */
  int64_t ushape[CMX_MAX_NDIM], ost[CMX_MAX_NDIM], ust[CMX_MAX_NDIM];
  int64_t S;
  /* the current batch of positions: element offsets of each slice */
  const int64_t *obase, *ubase;
  int64_t n;
} scatter_ctx;

/* Applies flat elements [jb, je) of one slice at o / u. */
static void apply_range(const scatter_ctx* c, char* o, const char* u,
                        int64_t jb, int64_t je) {
  int nd = c->und;
  int64_t isz = (int64_t)c->isz;
  if (nd == 0) {
    c->fn.row(o, 1, u, 1, 1);
    return;
  }
  int64_t m[CMX_MAX_NDIM], k = jb, oo = 0, uo = 0;
  for (int d = nd - 1; d >= 0; d--) {
    m[d] = k % c->ushape[d];
    k /= c->ushape[d];
    oo += m[d] * c->ost[d];
    uo += m[d] * c->ust[d];
  }
  int64_t inner = c->ushape[nd - 1], ios = c->ost[nd - 1], ius = c->ust[nd - 1];
  for (int64_t j = jb;;) {
    int64_t run = inner - m[nd - 1];
    if (run > je - j) run = je - j;
    c->fn.row(o + oo * isz, ios, u + uo * isz, ius, run);
    j += run;
    if (j >= je) break;
    oo -= m[nd - 1] * ios;
    uo -= m[nd - 1] * ius;
    m[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; d--) {
      oo += c->ost[d];
      uo += c->ust[d];
      if (++m[d] < c->ushape[d]) break;
      oo -= c->ushape[d] * c->ost[d];
      uo -= c->ushape[d] * c->ust[d];
      m[d] = 0;
    }
  }
}

/* A share [jb, je) of every slice of the batch, positions in order. Used
 * when slices of different positions cannot overlap, so threads that own
 * different element ranges never touch the same output element. */
static void scatter_share(void* vc, int64_t jb, int64_t je) {
  const scatter_ctx* c = vc;
  int64_t isz = (int64_t)c->isz;
  for (int64_t j = 0; j < c->n; j++)
    apply_range(c, c->o + c->obase[j] * isz, c->u + c->ubase[j] * isz, jb, je);
}

/* Scatter: inputs a, the index arrays (one shape I), updates (I + U). */
CMX__KERNEL(cmx__cpu_scatter) {
  (void)nout;
  const cmx__scatter_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], upd = in[nin - 1], o = out[0];
  const cmx_array* idx = in + 1;
  int nidx = nin - 2;
  cmx_status s = init_output(o, a);
  if (s != CMX_OK) return s;
  if (upd->size == 0) { /* nothing to write, but the indices must be valid */
    cmx__idx_bad bad;
    memset(&bad, 0, sizeof bad);
    int ind = upd->ndim - o->ndim;
    for (int k = 0; k < nidx; k++)
      if (!cmx__cpu_check_indices(idx[k], o->dims[q->axes[k]],
                                  upd->dims[ind + q->axes[k]], q->axes[k],
                                  &bad))
        return cmx__idx_bad_error(&bad, "scatter");
    return CMX_OK;
  }

  scatter_ctx c;
  memset(&c, 0, sizeof c);
  c.fn = upd_table[q->mode][o->dtype];
  c.isz = cmx_dtype_size(o->dtype);
  c.o = cmx_kernel_data(o);
  c.u = cmx_kernel_data(upd);
  int ind = upd->ndim - o->ndim; /* index dims of the updates */
  const int64_t* ust = CMX__STRIDES(upd);
  const int64_t* ost = CMX__STRIDES(o);
  c.S = 1;
  for (int d = 0; d < o->ndim; d++) {
    c.ushape[d] = upd->dims[ind + d];
    c.ost[d] = ost[d];
    c.ust[d] = ust[ind + d];
    c.S *= c.ushape[d];
  }
  int64_t* sts[2] = {c.ost, c.ust};
  c.und = cmx__layout_collapse(c.ushape, o->ndim, sts, 2);
  int64_t npos = upd->size / c.S;

  /* Slices of different positions are disjoint when every indexed axis
   * has update extent 1; then big slices can be split over threads. */
  bool disjoint = true;
  int64_t dim[CMX_MAX_NDIM], ext[CMX_MAX_NDIM], axst[CMX_MAX_NDIM];
  for (int k = 0; k < nidx; k++) {
    int ax = q->axes[k];
    dim[k] = o->dims[ax];
    ext[k] = upd->dims[ind + ax];
    axst[k] = ost[ax];
    disjoint = disjoint && ext[k] == 1;
  }
  bool threaded = disjoint && c.S >= 32768 && cmx__pool_threads() > 1;

  /* Updates whose index dims collapse to one stride are read linearly. */
  int64_t ish[CMX_MAX_NDIM], ist[CMX_MAX_NDIM];
  memcpy(ish, upd->dims, (size_t)ind * sizeof(int64_t));
  memcpy(ist, ust, (size_t)ind * sizeof(int64_t));
  int64_t* ists[1] = {ist};
  int ind_c = cmx__layout_collapse(ish, ind, ists, 1);
  bool ulinear = ind_c <= 1;
  int64_t ulin_stride = ind_c == 1 ? ist[0] : 0;

  int64_t obase[CMX__IDX_BATCH], ubase[CMX__IDX_BATCH], v[CMX__IDX_BATCH];
  cmx__idx_bad bad;
  memset(&bad, 0, sizeof bad);
  /* One contiguous int32/int64 index array choosing single elements, the
   * updates read linearly (scatter_add of values into bins): fused. */
  if (nidx == 1 && c.und == 0 && ulinear && ext[0] == 1 && idx[0]->ndim > 0 &&
      (idx[0]->flags & CMX__FLAG_ROW_CONTIG) &&
      (idx[0]->dtype == CMX_INT32 || idx[0]->dtype == CMX_INT64)) {
    const void* ix = cmx_kernel_data(idx[0]);
    int64_t at = idx[0]->dtype == CMX_INT32
                     ? c.fn.fused_i32(c.o, axst[0], 0, ix, dim[0], c.u,
                                      ulin_stride, npos)
                     : c.fn.fused_i64(c.o, axst[0], 0, ix, dim[0], c.u,
                                      ulin_stride, npos);
    if (at == npos) return CMX_OK;
    cmx__idx_bad_set(&bad, fused_index(idx[0], at), q->axes[0], dim[0]);
    return cmx__idx_bad_error(&bad, "scatter");
  }
  c.obase = obase;
  c.ubase = ubase;
  for (int64_t p0 = 0; p0 < npos; p0 += CMX__IDX_BATCH) {
    int64_t n = npos - p0 < CMX__IDX_BATCH ? npos - p0 : CMX__IDX_BATCH;
    if (nidx == 0)
      for (int64_t j = 0; j < n; j++) obase[j] = 0;
    for (int k = 0; k < nidx; k++)
      if (!cmx__cpu_index_offsets(idx[k], p0, n, dim[k], ext[k], axst[k],
                                  q->axes[k], k == 0, obase, v, &bad))
        return cmx__idx_bad_error(&bad, "scatter");
    c.n = n;
    if (c.und == 0 && ulinear) {
      c.fn.idx(c.o, obase, c.u + p0 * ulin_stride * (int64_t)c.isz, NULL,
               ulin_stride, n);
    } else if (c.und == 0) {
      cmx__cpu_offsets(upd->dims, ust, ind, p0, n, ubase);
      c.fn.idx(c.o, obase, c.u, ubase, 0, n);
    } else if (threaded) {
      cmx__cpu_offsets(upd->dims, ust, ind, p0, n, ubase);
      cmx__parallel_for(c.S, 8192, scatter_share, &c);
    } else {
      cmx__cpu_offsets(upd->dims, ust, ind, p0, n, ubase);
      int64_t isz = (int64_t)c.isz;
      for (int64_t j = 0; j < n; j++)
        apply_range(&c, c.o + obase[j] * isz, c.u + ubase[j] * isz, 0, c.S);
    }
  }
  return CMX_OK;
}

/* ---------------- ScatterAxis ---------------- */

typedef struct {
  upd_fns fn;
  cmx_array idx, val;
  const int64_t* shape; /* the indices' shape */
  int nd, axis;
  int64_t per; /* positions per index of the dims before the axis */
  int64_t along, inner; /* the indices' extent on the axis; after it */
  int64_t ost[CMX_MAX_NDIM]; /* output strides, 0 on the axis */
  int64_t axis_stride, dim;
  char* o;
  const char* u;
  cmx__idx_bad bad;
  /* Contiguous int32/int64 indices, values and output: runs of positions
   * go through the fused form (isz: element bytes). */
  bool fused;
  int64_t isz;
} scatter_axis_ctx;

/* Positions through the fused form, false once a bad index is seen: with
 * inner > 1, the run [rb, re) of line l (an outer row and a step along the
 * axis; positions after the axis); with inner == 1 (the last axis), the
 * whole outer row l (its steps along the axis choose among its dim
 * elements: rb and re unused). */
static bool scatter_axis_run(scatter_axis_ctx* c, int64_t l, int64_t rb,
                             int64_t re) {
  if (cmx__idx_bad_seen(&c->bad)) return false;
  int64_t p, n, ostep;
  char* ob;
  if (c->inner == 1) {
    p = l * c->along, n = c->along, ostep = 0;
    ob = c->o + l * c->dim * c->isz;
  } else {
    p = l * c->inner + rb, n = re - rb, ostep = 1;
    ob = c->o + ((l / c->along) * c->dim * c->inner + rb) * c->isz;
  }
  const char* ub = c->u + p * c->isz;
  const void* ix = cmx_kernel_data(c->idx);
  int64_t at =
      c->idx->dtype == CMX_INT32
          ? c->fn.fused_i32(ob, c->inner, ostep, (const int32_t*)ix + p,
                            c->dim, ub, 1, n)
          : c->fn.fused_i64(ob, c->inner, ostep, (const int64_t*)ix + p,
                            c->dim, ub, 1, n);
  if (at == n) return true;
  cmx__idx_bad_set(&c->bad, fused_index(c->idx, p + at), c->axis, c->dim);
  return false;
}

/* Applies the updates of index positions [b, e) (row-major over the
 * indices' shape), in order; false once a bad index is seen. */
static bool scatter_axis_span(scatter_axis_ctx* c, int64_t b, int64_t e) {
  int64_t obase[CMX__IDX_BATCH], ubase[CMX__IDX_BATCH], v[CMX__IDX_BATCH];
  for (int64_t p0 = b; p0 < e; p0 += CMX__IDX_BATCH) {
    if (cmx__idx_bad_seen(&c->bad)) return false;
    int64_t n = e - p0 < CMX__IDX_BATCH ? e - p0 : CMX__IDX_BATCH;
    cmx__cpu_offsets(c->shape, c->ost, c->nd, p0, n, obase);
    cmx__cpu_offsets(c->shape, CMX__STRIDES(c->val), c->nd, p0, n, ubase);
    if (!cmx__cpu_index_offsets(c->idx, p0, n, c->dim, 1, c->axis_stride,
                                c->axis, false, obase, v, &c->bad))
      return false;
    c->fn.idx(c->o, obase, c->u, ubase, 0, n);
  }
  return true;
}

/* Handles outer rows [qb, qe) (indices of the dims before the axis): all
 * updates of one outer row land in that row, so rows are independent. */
static void scatter_axis_rows(void* vc, int64_t qb, int64_t qe) {
  scatter_axis_ctx* c = vc;
  if (!c->fused) {
    scatter_axis_span(c, qb * c->per, qe * c->per);
    return;
  }
  if (c->inner == 1) { /* a call an outer row */
    for (int64_t l = qb; l < qe; l++)
      if (!scatter_axis_run(c, l, 0, 1)) return;
    return;
  }
  for (int64_t l = qb * c->along; l < qe * c->along; l++)
    if (!scatter_axis_run(c, l, 0, c->inner)) return;
}

/* Handles columns [rb, re) of the dims after the axis, for every outer row
 * and every step along the axis, in that (row-major) order: two positions
 * write the same output element only when they differ in their step along
 * the axis alone, so columns are independent too, and each element sees
 * its updates in the serial order (repeated indices: the same last write,
 * the same sums). The split for few outer rows: put_along_axis on axis 0
 * has one, which left the whole scatter to one thread. */
static void scatter_axis_cols(void* vc, int64_t rb, int64_t re) {
  scatter_axis_ctx* c = vc;
  int64_t lines = c->idx->size / c->inner; /* outer rows x steps */
  for (int64_t l = 0; l < lines; l++)
    if (c->fused ? !scatter_axis_run(c, l, rb, re)
                 : !scatter_axis_span(c, l * c->inner + rb,
                                      l * c->inner + re))
      return;
}

/* ScatterAxis: inputs a, indices, values (indices' shape). */
CMX__KERNEL(cmx__cpu_scatter_axis) {
  (void)nin;
  (void)nout;
  const cmx__axis_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], idx = in[1], val = in[2], o = out[0];
  cmx_status s = init_output(o, a);
  if (s != CMX_OK || idx->size == 0) return s;
  scatter_axis_ctx c;
  memset(&c, 0, sizeof c);
  c.fn = upd_table[q->mode][o->dtype];
  c.idx = idx;
  c.val = val;
  c.shape = idx->dims;
  c.nd = idx->ndim;
  c.axis = q->axis;
  for (int d = 0; d < o->ndim; d++) c.ost[d] = CMX__STRIDES(o)[d];
  c.axis_stride = c.ost[q->axis];
  c.ost[q->axis] = 0;
  c.dim = o->dims[q->axis];
  c.o = cmx_kernel_data(o);
  c.u = cmx_kernel_data(val);
  int64_t outer = 1;
  for (int d = 0; d < q->axis; d++) outer *= idx->dims[d];
  c.per = idx->size / outer;
  c.along = idx->dims[q->axis];
  c.inner = c.per / c.along;
  c.isz = (int64_t)cmx_dtype_size(o->dtype);
  /* fused runs of 2-15 positions would cost a call each: batches */
  c.fused = (c.inner == 1 || c.inner >= 16) &&
            (idx->dtype == CMX_INT32 || idx->dtype == CMX_INT64) &&
            (idx->flags & CMX__FLAG_ROW_CONTIG) &&
            (val->flags & CMX__FLAG_ROW_CONTIG) &&
            (o->flags & CMX__FLAG_ROW_CONTIG) && o->ndim == idx->ndim &&
            val->ndim == idx->ndim;
  for (int d = 0; c.fused && d < idx->ndim; d++)
    c.fused = val->dims[d] == idx->dims[d] &&
              (d == q->axis || o->dims[d] == idx->dims[d]);
  int threads = cmx__pool_threads();
  if (outer < threads && c.inner >= 2 * threads && idx->size >= 32768) {
    /* too few outer rows to share: split the columns after the axis */
    int64_t grain = 16384 / (outer * c.along);
    cmx__parallel_for(c.inner, grain < 1 ? 1 : grain, scatter_axis_cols, &c);
  } else {
    int64_t grain = 16384 / c.per;
    cmx__parallel_for(outer, grain < 1 ? 1 : grain, scatter_axis_rows, &c);
  }
  return cmx__idx_bad_seen(&c.bad)
             ? cmx__idx_bad_error(&c.bad, "put_along_axis")
             : CMX_OK;
}
