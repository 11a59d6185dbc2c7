/* The ArgReduce kernel: argmin / argmax along one axis (or the flattened
 * array), uint32 indices.
 *
 * Ties give the first index (only a strictly better value replaces the
 * best); NaN counts as better than everything, so the first NaN wins, as
 * NumPy. Complex values order lexicographically; float16/bfloat16 compare
 * as float32. Contiguous rows take two passes: the vectorised min/max of
 * the Reduce kernel, then a scan for the first element equal to it (or the
 * first NaN when it is NaN), which gives the same index. Layouts: when the axis
 * is not the innermost and the remaining innermost dim is contiguous, whole
 * rows are scanned against a block of running best values (column case,
 * vectorisable); otherwise each output scans its strided lane (row case).
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions), so NaN-aware selects vectorise. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math", "no-loop-unroll-and-jam")
#endif
#include <complex.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/reduce.h"
#include "primitives/reduce.h"

/* mm: the Reduce min/max implementation of the dtype (its accumulator type
 * is the compare type C), for the two-pass scan of contiguous rows. */
typedef void (*arg_row_fn)(uint32_t* o, const void* x, int64_t n,
                           int64_t stride, const cmx__red_impl* mm);
typedef void (*arg_col_fn)(uint32_t* o, int64_t os, const void* x, int64_t n,
                           int64_t stride, int64_t w);
typedef void (*arg_rows_fn)(uint32_t* o, int64_t os, const void* x, int64_t xs,
                            int64_t nout, int64_t n, int64_t stride);

/* NAME_rowsN: nout contiguous rows of N elements into contiguous outputs
 * (o[k] is the index in the row at x + k * N), 8 rows side by side as in
 * NAME_rows, their winners leaving as one vector store. QPRAGMA: how the
 * 8-row loops are compiled (rows of 2: unrolled, the compiler pairs the
 * loads into vectors; rows of 3: kept as loops, which the loop vectoriser
 * takes, where unrolled ones became branches and ran 10x slower). */
#define ARG_ROWS_C(NAME, N, T, C, LD, BETTER, QPRAGMA)                  \
  static inline __attribute__((always_inline)) void NAME##_rows_c##N(   \
      uint32_t* o, const T* x, int64_t nout) {                          \
    int64_t k = 0;                                                      \
    for (; k + 8 <= nout; k += 8) {                                     \
      const T* xk = x + k * N;                                          \
      C best[8];                                                        \
      uint32_t bi[8];                                                   \
      for (int q = 0; q < 8; q++) {                                     \
        best[q] = LD(xk[q * N]);                                        \
        bi[q] = 0;                                                      \
      }                                                                 \
      for (int i = 1; i < N; i++) QPRAGMA for (int q = 0; q < 8; q++) { \
          C v = LD(xk[q * N + i]);                                      \
          bool b = BETTER(v, best[q]);                                  \
          best[q] = b ? v : best[q];                                    \
          bi[q] = b ? (uint32_t)i : bi[q];                              \
        }                                                               \
      for (int q = 0; q < 8; q++) o[k + q] = bi[q];                     \
    }                                                                   \
    for (; k < nout; k++) NAME##_row(o + k, x + k * N, N, 1, NULL);     \
  }

#define ARG_IMPL(NAME, T, C, LD, BETTER, EQ)                                   \
  static void NAME##_row(uint32_t* o, const void* xp, int64_t n, int64_t st,   \
                         const cmx__red_impl* mm) {                            \
    const T* x = xp;                                                           \
    if (st == 1 && n >= 64) {                                                  \
      /* the vectorised min/max, then the first element equal to it */         \
      C m;                                                                     \
      mm->fill(&m, 1);                                                         \
      mm->row(&m, x, n);                                                       \
      for (int64_t i = 0; i < n; i++)                                          \
        if (EQ(LD(x[i]), m)) {                                                 \
          *o = (uint32_t)i;                                                    \
          return;                                                              \
        }                                                                      \
    }                                                                          \
    C best = LD(x[0]);                                                         \
    uint32_t bi = 0;                                                           \
    for (int64_t i = 1; i < n; i++) {                                          \
      C v = LD(x[i * st]);                                                     \
      if (BETTER(v, best)) {                                                   \
        best = v;                                                              \
        bi = (uint32_t)i;                                                      \
      }                                                                        \
    }                                                                          \
    *o = bi;                                                                   \
  }                                                                            \
  /* o[j * os], j < w: columns j of n rows at stride st. */                    \
  static void NAME##_col(uint32_t* o, int64_t os, const void* xp, int64_t n,   \
                         int64_t st, int64_t w) {                              \
    const T* x = xp;                                                           \
    /* the running values 2 KB from x modulo 4 KB (cmx__red_lanes_near) */    \
    char buf[CMX__RED_COLW * (sizeof(C) + sizeof(uint32_t)) + 4096]            \
        __attribute__((aligned(64)));                                          \
    C* best = (C*)(void*)(buf + cmx__red_lanes_near((uintptr_t)x,              \
                                                    (uintptr_t)buf));          \
    uint32_t* bi =                                                             \
        (uint32_t*)(void*)((char*)best + CMX__RED_COLW * sizeof(C));           \
    for (int64_t j = 0; j < w; j++) {                                          \
      best[j] = LD(x[j]);                                                      \
      bi[j] = 0;                                                               \
    }                                                                          \
    for (int64_t i = 1; i < n; i++) {                                          \
      const T* xr = x + i * st;                                                \
      for (int64_t j = 0; j < w; j++) {                                        \
        C v = LD(xr[j]);                                                       \
        bool b = BETTER(v, best[j]);                                           \
        best[j] = b ? v : best[j];                                             \
        bi[j] = b ? (uint32_t)i : bi[j];                                       \
      }                                                                        \
    }                                                                          \
    for (int64_t j = 0; j < w; j++) o[j * os] = bi[j];                         \
  }                                                                            \
  /* Narrow columns (w < ARG_SHORT) of n adjacent rows (stride w): k rows      \
   * side by side fill a block of lanes (element (i, j) in lane                \
   * (i % k) * w + j, rows in order within a lane), whose winners then         \
   * merge, an equal value going to the smaller index: the first index of      \
   * the extremum, as the scan. n >= k. */                                     \
  static void NAME##_fold(uint32_t* o, int64_t os, const void* xp, int64_t n,  \
                          int64_t w) {                                         \
    const T* x = xp;                                                           \
    const int64_t k = 64 / w, lw = k * w;                                      \
    C best[64];                                                                \
    uint32_t bi[64], lr[64];                                                   \
    for (int64_t l = 0; l < lw; l++) {                                         \
      best[l] = LD(x[l]);                                                      \
      bi[l] = lr[l] = (uint32_t)(l / w);                                       \
    }                                                                          \
    int64_t i0 = k;                                                            \
    for (; i0 + k <= n; i0 += k) {                                             \
      const T* xr = x + i0 * w;                                                \
      for (int64_t l = 0; l < lw; l++) {                                       \
        C v = LD(xr[l]);                                                       \
        bool b = BETTER(v, best[l]);                                           \
        best[l] = b ? v : best[l];                                             \
        bi[l] = b ? (uint32_t)i0 + lr[l] : bi[l];                              \
      }                                                                        \
    }                                                                          \
    for (; i0 < n; i0++) /* the last rows into the first lanes */              \
      for (int64_t j = 0; j < w; j++) {                                        \
        C v = LD(x[i0 * w + j]);                                               \
        if (BETTER(v, best[j])) best[j] = v, bi[j] = (uint32_t)i0;             \
      }                                                                        \
    for (int64_t j = 0; j < w; j++) {                                          \
      C m = best[j];                                                           \
      uint32_t mi = bi[j];                                                     \
      for (int64_t l = j + w; l < lw; l += w)                                  \
        if (BETTER(best[l], m) || (EQ(best[l], m) && bi[l] < mi))              \
          m = best[l], mi = bi[l];                                             \
      o[j * os] = mi;                                                          \
    }                                                                          \
  }                                                                            \
  ARG_ROWS_C(NAME, 2, T, C, LD, BETTER, )                                      \
  ARG_ROWS_C(NAME, 3, T, C, LD, BETTER, _Pragma("GCC unroll 1"))               \
  /* Short rows (n < ARG_SHORT) of many outputs: o[k * os] is the index        \
   * in the row at x + k * xs (elements at stride st), k < nout; 8 rows        \
   * side by side, so the independent scans vectorise. As row's scan. */       \
  static void NAME##_rows(uint32_t* o, int64_t os, const void* xp, int64_t xs, \
                          int64_t nout, int64_t n, int64_t st) {               \
    const T* x = xp;                                                           \
    if (st == 1 && xs == n && (n == 2 || n == 3) && os == 1) {                 \
      /* rows of 2 or 3 adjacent elements (the last axis of a contiguous       \
       * array): the path below keeps its winners in a stack array, reread     \
       * one by one for a strided output (argmax over the last axis of         \
       * (1572864, 2) f32: 1.0-1.14x the old tree depending on where the       \
       * stack fell). 1 thread: (1572864, 2) 1.4 -> 0.64 ms, (1048576, 3)      \
       * 1.07 -> 0.80 ms. */                                                   \
      if (n == 2)                                                              \
        NAME##_rows_c2(o, x, nout);                                            \
      else                                                                     \
        NAME##_rows_c3(o, x, nout);                                            \
      return;                                                                  \
    }                                                                          \
    int64_t k = 0;                                                             \
    for (; k + 8 <= nout; k += 8) {                                            \
      C best[8];                                                               \
      uint32_t bi[8];                                                          \
      for (int q = 0; q < 8; q++) {                                            \
        best[q] = LD(x[(k + q) * xs]);                                         \
        bi[q] = 0;                                                             \
      }                                                                        \
      for (int64_t i = 1; i < n; i++) {                                        \
        _Pragma("GCC unroll 1") for (int q = 0; q < 8; q++) {                  \
          C v = LD(x[(k + q) * xs + i * st]);                                  \
          bool b = BETTER(v, best[q]);                                         \
          best[q] = b ? v : best[q];                                           \
          bi[q] = b ? (uint32_t)i : bi[q];                                     \
        }                                                                      \
      }                                                                        \
      for (int q = 0; q < 8; q++) o[(k + q) * os] = bi[q];                     \
    }                                                                          \
    for (; k < nout; k++) NAME##_row(o + k * os, x + k * xs, n, st, NULL);     \
  }

#define ID(x) (x)
#define LD_H(x) cmx__h2f(x)
#define LD_BF(x) cmx__bf2f(x)
#define GT(v, b) ((v) > (b))
#define LT(v, b) ((v) < (b))
/* A NaN best is never replaced; a NaN value replaces any other best. */
#define GTF(v, b) (((b) == (b)) & (((v) > (b)) | ((v) != (v))))
#define LTF(v, b) (((b) == (b)) & (((v) < (b)) | ((v) != (v))))

static inline bool c_isnan(cmx__c64 z) {
  return crealf(z) != crealf(z) || cimagf(z) != cimagf(z);
}
static inline bool c_less(cmx__c64 a, cmx__c64 b) {
  return crealf(a) < crealf(b) ||
         (crealf(a) == crealf(b) && cimagf(a) < cimagf(b));
}
#define GTC(v, b) (!c_isnan(b) && (c_isnan(v) || c_less((b), (v))))
#define LTC(v, b) (!c_isnan(b) && (c_isnan(v) || c_less((v), (b))))
/* v is the extremum m (any NaN matches a NaN m, which NaN won) */
#define EQI(v, m) ((v) == (m))
#define EQF(v, m) ((v) == (m) || ((m) != (m) && (v) != (v)))
#define EQC(v, m) ((v) == (m) || (c_isnan(m) && c_isnan(v)))

#define ARG_ALL(K, I, F, C)                          \
  ARG_IMPL(K##_bool, uint8_t, uint8_t, ID, I, EQI)   \
  ARG_IMPL(K##_u8, uint8_t, uint8_t, ID, I, EQI)     \
  ARG_IMPL(K##_u16, uint16_t, uint16_t, ID, I, EQI)  \
  ARG_IMPL(K##_u32, uint32_t, uint32_t, ID, I, EQI)  \
  ARG_IMPL(K##_u64, uint64_t, uint64_t, ID, I, EQI)  \
  ARG_IMPL(K##_i8, int8_t, int8_t, ID, I, EQI)       \
  ARG_IMPL(K##_i16, int16_t, int16_t, ID, I, EQI)    \
  ARG_IMPL(K##_i32, int32_t, int32_t, ID, I, EQI)    \
  ARG_IMPL(K##_i64, int64_t, int64_t, ID, I, EQI)    \
  ARG_IMPL(K##_f16, uint16_t, float, LD_H, F, EQF)   \
  ARG_IMPL(K##_bf16, uint16_t, float, LD_BF, F, EQF) \
  ARG_IMPL(K##_f32, float, float, ID, F, EQF)        \
  ARG_IMPL(K##_f64, double, double, ID, F, EQF)      \
  ARG_IMPL(K##_c64, cmx__c64, cmx__c64, ID, C, EQC)
ARG_ALL(amin, LT, LTF, LTC)
ARG_ALL(amax, GT, GTF, GTC)

#define TABLE(K, S)                                                        \
  {                                                                        \
    K##_bool##S, K##_u8##S, K##_u16##S, K##_u32##S, K##_u64##S, K##_i8##S, \
        K##_i16##S, K##_i32##S, K##_i64##S, K##_f16##S, K##_bf16##S,       \
        K##_f32##S, K##_f64##S, K##_c64##S                                 \
  }
static const arg_row_fn g_rows[2][CMX_NUM_DTYPES] = {TABLE(amin, _row),
                                                     TABLE(amax, _row)};
static const arg_col_fn g_cols[2][CMX_NUM_DTYPES] = {TABLE(amin, _col),
                                                     TABLE(amax, _col)};
static const arg_rows_fn g_short[2][CMX_NUM_DTYPES] = {TABLE(amin, _rows),
                                                       TABLE(amax, _rows)};
typedef void (*arg_fold_fn)(uint32_t* o, int64_t os, const void* x, int64_t n,
                            int64_t w);
static const arg_fold_fn g_fold[2][CMX_NUM_DTYPES] = {TABLE(amin, _fold),
                                                      TABLE(amax, _fold)};

/* Rows shorter than this scan many outputs per call (impl rows). */
#define ARG_SHORT 16
/* Outputs per call there. */
#define ARG_CH 2048

typedef struct {
  arg_row_fn row;
  arg_col_fn col;
  arg_rows_fn rows;
  arg_fold_fn fold;
  const cmx__red_impl* mm;
  const char* x;
  int64_t isz;
  uint32_t* out;
  int64_t n, stride; /* the reduced axis */
  int nd;            /* remaining dims (for the column case: outer ones) */
  int64_t shape[CMX_MAX_NDIM], is[CMX_MAX_NDIM], os[CMX_MAX_NDIM];
  int64_t width, wos, njb; /* column case (width, its output stride) */
} arg_plan;

static void arg_rows(void* ctx, int64_t b, int64_t e) {
  const arg_plan* p = ctx;
  red_iter it;
  it_init(&it, p->nd, p->shape, p->is, p->os, b);
  for (int64_t k = b; k < e; k++, it_next(&it))
    p->row(p->out + it.out, p->x + it.in * p->isz, p->n, p->stride, p->mm);
}

/* Short rows: units [b, e) of ARG_CH outputs along the last remaining
 * dim, at position u / nch of the other ones. */
static void arg_short(void* ctx, int64_t b, int64_t e) {
  const arg_plan* p = ctx;
  int last = p->nd - 1;
  int64_t nl = p->shape[last], nch = (nl + ARG_CH - 1) / ARG_CH;
  for (int64_t u = b; u < e; u++) {
    int64_t c0 = (u % nch) * ARG_CH;
    int64_t cnt = nl - c0 < ARG_CH ? nl - c0 : ARG_CH;
    red_iter it;
    it_init(&it, last, p->shape, p->is, p->os, u / nch);
    p->rows(p->out + it.out + c0 * p->os[last], p->os[last],
            p->x + (it.in + c0 * p->is[last]) * p->isz, p->is[last], cnt, p->n,
            p->stride);
  }
}

static void arg_cols(void* ctx, int64_t b, int64_t e) {
  const arg_plan* p = ctx;
  for (int64_t u = b; u < e; u++) {
    int64_t k = u / p->njb, j0 = (u % p->njb) * CMX__RED_COLW;
    int64_t w = p->width - j0 < CMX__RED_COLW ? p->width - j0 : CMX__RED_COLW;
    red_iter it;
    it_init(&it, p->nd, p->shape, p->is, p->os, k);
    uint32_t* o = p->out + it.out + j0 * p->wos;
    const char* x = p->x + (it.in + j0) * p->isz;
    if (w < ARG_SHORT && p->stride == w && p->n >= 64 / w)
      p->fold(o, p->wos, x, p->n, w); /* narrow columns, adjacent rows */
    else
      p->col(o, p->wos, x, p->n, p->stride, w);
  }
}

CMX__KERNEL(cmx__cpu_arg_reduce) {
  (void)nin;
  (void)nout;
  const cmx__argreduce_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  cmx_array tmp = NULL;
  if (q->axis < 0 && !(a->flags & CMX__FLAG_ROW_CONTIG)) {
    tmp = cmx__cpu_permuted_copy(a, NULL, a->dtype);
    if (!tmp) return cmx_last_status();
    a = tmp;
  }
  arg_plan pl;
  memset(&pl, 0, sizeof pl);
  pl.row = g_rows[q->kind][a->dtype];
  pl.col = g_cols[q->kind][a->dtype];
  pl.rows = g_short[q->kind][a->dtype];
  pl.fold = g_fold[q->kind][a->dtype];
  pl.mm = cmx__reduce_impl(
      q->kind == CMX__ARG_MIN ? CMX__RED_MIN : CMX__RED_MAX, a->dtype);
  pl.x = cmx__node_ptr(a);
  pl.isz = (int64_t)cmx_dtype_size(a->dtype);
  pl.out = cmx__node_ptr(o);
  if (q->axis < 0) {
    pl.n = a->size;
    pl.stride = 1;
  } else {
    pl.n = a->dims[q->axis];
    pl.stride = CMX__STRIDES(a)[q->axis];
    /* remaining dims, size 1 dropped, jointly contiguous ones merged (the
     * output is row-major over them, so output strides always merge) */
    int64_t os = 1;
    for (int d = a->ndim - 1; d >= 0; d--) {
      if (d == q->axis || a->dims[d] == 1) continue;
      int64_t ist = CMX__STRIDES(a)[d];
      if (pl.nd > 0 && pl.is[0] * pl.shape[0] == ist) {
        pl.shape[0] *= a->dims[d];
      } else {
        memmove(pl.shape + 1, pl.shape, (size_t)pl.nd * sizeof(int64_t));
        memmove(pl.is + 1, pl.is, (size_t)pl.nd * sizeof(int64_t));
        memmove(pl.os + 1, pl.os, (size_t)pl.nd * sizeof(int64_t));
        pl.shape[0] = a->dims[d];
        pl.is[0] = ist;
        pl.os[0] = os;
        pl.nd++;
      }
      os *= a->dims[d];
    }
  }
  int64_t nrows = o->size;
  /* the column case takes the remaining dim of input stride 1, wherever
   * it is (a transposed input has it outermost) */
  int cd = -1;
  for (int d = 0; d < pl.nd && pl.n > 1 && pl.stride != 1; d++)
    if (pl.is[d] == 1) cd = d;
  if (cd >= 0) {
    pl.width = pl.shape[cd];
    pl.wos = pl.os[cd];
    for (int d = cd; d + 1 < pl.nd; d++) {
      pl.shape[d] = pl.shape[d + 1];
      pl.is[d] = pl.is[d + 1];
      pl.os[d] = pl.os[d + 1];
    }
    pl.nd--;
    pl.njb = (pl.width + CMX__RED_COLW - 1) / CMX__RED_COLW;
    int64_t units = (nrows / pl.width) * pl.njb;
    int64_t per = pl.n * (pl.width < CMX__RED_COLW ? pl.width : CMX__RED_COLW);
    cmx__parallel_for(units, per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per,
                      arg_cols, &pl);
  } else if (pl.n < ARG_SHORT && pl.nd > 0) {
    int64_t nl = pl.shape[pl.nd - 1];
    int64_t units = nrows / nl * ((nl + ARG_CH - 1) / ARG_CH);
    int64_t per = (nl < ARG_CH ? nl : ARG_CH) * pl.n;
    cmx__parallel_for(units, per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per,
                      arg_short, &pl);
  } else {
    cmx__parallel_for(nrows, pl.n >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / pl.n,
                      arg_rows, &pl);
  }
  cmx_array_release(tmp);
  return CMX_OK;
}
