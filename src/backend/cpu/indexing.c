/* CPU kernels of Gather and GatherAxis, and the index helpers that the
 * scatter kernels share (backend/cpu/indexing.h).
 *
 * Gather works on batches of index positions: it loads each index array's
 * values for the batch, wraps and bounds-checks them, sums them into
 * source offsets, then copies one slice per position (one element when the
 * slices are single elements, one memcpy when a slice is a contiguous
 * block of the source). Positions are split over the thread pool. */
#include "backend/cpu/indexing.h"

#include <stdlib.h>

#include "backend/cpu/kernels.h"
#include "core/layout.h"
#include "primitives/indexing.h"

void cmx__cpu_offsets(const int64_t* sh, const int64_t* st, int nd,
                      int64_t begin, int64_t n, int64_t* dst) {
  if (n <= 0) return;
  int64_t shape[CMX_MAX_NDIM], strides[CMX_MAX_NDIM];
  memcpy(shape, sh, (size_t)nd * sizeof(int64_t));
  memcpy(strides, st, (size_t)nd * sizeof(int64_t));
  int64_t* sts[1] = {strides};
  nd = cmx__layout_collapse(shape, nd, sts, 1);
  if (nd == 0) {
    for (int64_t j = 0; j < n; j++) dst[j] = 0;
    return;
  }
  if (nd == 1) {
    int64_t s0 = strides[0];
    for (int64_t j = 0; j < n; j++) dst[j] = (begin + j) * s0;
    return;
  }
  int64_t m[CMX_MAX_NDIM], k = begin, off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    m[d] = k % shape[d];
    k /= shape[d];
    off += m[d] * strides[d];
  }
  int64_t inner = shape[nd - 1], ist = strides[nd - 1];
  for (int64_t j = 0;;) {
    int64_t run = inner - m[nd - 1];
    if (run > n - j) run = n - j;
    for (int64_t r = 0; r < run; r++) dst[j + r] = off + r * ist;
    j += run;
    if (j >= n) break;
    /* The row is finished: step to the next one. */
    off -= m[nd - 1] * ist;
    m[nd - 1] = 0;
    for (int d = nd - 2; d >= 0; d--) {
      off += strides[d];
      if (++m[d] < shape[d]) break;
      off -= shape[d] * strides[d];
      m[d] = 0;
    }
  }
}

#define LOAD_IDX(T, CONV)                                           \
  do {                                                              \
    const T* p_ = (const T*)base;                                   \
    if (contig)                                                     \
      for (int64_t j = 0; j < n; j++) dst[j] = CONV(p_[begin + j]); \
    else                                                            \
      for (int64_t j = 0; j < n; j++) dst[j] = CONV(p_[dst[j]]);    \
  } while (0)
#define AS_I64(x) ((int64_t)(x))
#define U64_AS_I64(x) ((x) > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)(x))

void cmx__cpu_load_indices(cmx_array idx, int64_t begin, int64_t n,
                           int64_t* dst) {
  if (n <= 0) return;
  const char* base = cmx_kernel_data(idx);
  bool contig = (idx->flags & CMX__FLAG_ROW_CONTIG) != 0;
  if (idx->ndim == 0) {
    contig = false;
    for (int64_t j = 0; j < n; j++) dst[j] = 0;
  } else if (!contig) {
    /* dst holds the element offsets first, then the values. */
    cmx__cpu_offsets(idx->dims, CMX__STRIDES(idx), idx->ndim, begin, n, dst);
  }
  switch (idx->dtype) {
    case CMX_UINT8:
      LOAD_IDX(uint8_t, AS_I64);
      break;
    case CMX_UINT16:
      LOAD_IDX(uint16_t, AS_I64);
      break;
    case CMX_UINT32:
      LOAD_IDX(uint32_t, AS_I64);
      break;
    case CMX_UINT64:
      LOAD_IDX(uint64_t, U64_AS_I64);
      break;
    case CMX_INT8:
      LOAD_IDX(int8_t, AS_I64);
      break;
    case CMX_INT16:
      LOAD_IDX(int16_t, AS_I64);
      break;
    case CMX_INT32:
      LOAD_IDX(int32_t, AS_I64);
      break;
    case CMX_INT64:
      LOAD_IDX(int64_t, AS_I64);
      break;
    default: /* the op layer admits integer dtypes only */
      CMX__ASSERT(!"index array of a non-integer dtype");
  }
}

/* One pass per batch: load (typed), wrap, check and scale. A negative x
 * (or any x above lim) compares above lim as unsigned, so the check is
 * branch-free; the bad index itself is looked up afterwards. */
#define INDEX_OFFSETS(T, CONV)                                     \
  do {                                                             \
    const T* p_ = (const T*)base;                                  \
    for (int64_t j = 0; j < n; j++) {                              \
      int64_t x = CONV(p_[contig ? begin + j : tmp[j]]);           \
      x += x < 0 ? dim : 0;                                        \
      any_bad |= (uint64_t)x > lim;                                \
      /* unsigned: a bad x may overflow; its batch is discarded */ \
      offs[j] = (int64_t)((uint64_t)(first ? 0 : offs[j]) +        \
                          (uint64_t)x * (uint64_t)stride);         \
    }                                                              \
  } while (0)

bool cmx__cpu_index_offsets(cmx_array idx, int64_t begin, int64_t n,
                            int64_t dim, int64_t ext, int64_t stride, int axis,
                            bool first, int64_t* offs, int64_t* tmp,
                            cmx__idx_bad* bad) {
  if (n <= 0) return true;
  const char* base = cmx_kernel_data(idx);
  bool contig = idx->ndim > 0 && (idx->flags & CMX__FLAG_ROW_CONTIG);
  if (!contig)
    cmx__cpu_offsets(idx->dims, CMX__STRIDES(idx), idx->ndim, begin, n, tmp);
  /* An axis shorter than the slice (an empty axis) admits no index; the
   * unsigned limit would wrap to admit every index. */
  uint64_t lim = dim >= ext ? (uint64_t)(dim - ext) : 0;
  uint64_t any_bad = dim < ext;
  switch (idx->dtype) {
    case CMX_UINT8:
      INDEX_OFFSETS(uint8_t, AS_I64);
      break;
    case CMX_UINT16:
      INDEX_OFFSETS(uint16_t, AS_I64);
      break;
    case CMX_UINT32:
      INDEX_OFFSETS(uint32_t, AS_I64);
      break;
    case CMX_UINT64:
      INDEX_OFFSETS(uint64_t, U64_AS_I64);
      break;
    case CMX_INT8:
      INDEX_OFFSETS(int8_t, AS_I64);
      break;
    case CMX_INT16:
      INDEX_OFFSETS(int16_t, AS_I64);
      break;
    case CMX_INT32:
      INDEX_OFFSETS(int32_t, AS_I64);
      break;
    case CMX_INT64:
      INDEX_OFFSETS(int64_t, AS_I64);
      break;
    default:
      CMX__ASSERT(!"index array of a non-integer dtype");
  }
  if (!any_bad) return true;
  cmx__cpu_load_indices(idx, begin, n, tmp);
  for (int64_t j = 0; j < n; j++) {
    int64_t x = tmp[j];
    if (!cmx__idx_wrap(&x, dim, ext)) {
      cmx__idx_bad_set(bad, tmp[j], axis, dim);
      break;
    }
  }
  return false;
}

bool cmx__cpu_check_indices(cmx_array idx, int64_t dim, int64_t ext, int axis,
                            cmx__idx_bad* bad) {
  int64_t offs[CMX__IDX_BATCH], tmp[CMX__IDX_BATCH];
  for (int64_t p0 = 0; p0 < idx->size; p0 += CMX__IDX_BATCH) {
    int64_t n =
        idx->size - p0 < CMX__IDX_BATCH ? idx->size - p0 : CMX__IDX_BATCH;
    if (!cmx__cpu_index_offsets(idx, p0, n, dim, ext, 0, axis, true, offs, tmp,
                                bad))
      return false;
  }
  return true;
}

cmx_status cmx__idx_bad_error(const cmx__idx_bad* b, const char* op) {
  return cmx_kernel_error(
      CMX_ERR_INDEX,
      "[%s] Index %lld is out of bounds for axis %d with size %lld.", op,
      (long long)b->value, b->axis, (long long)b->dim);
}

#define COPY_RUN(T)                                            \
  do {                                                         \
    T* d_ = (T*)dst;                                           \
    const T* s_ = (const T*)src;                               \
    if (ss == 0) {                                             \
      T v_ = s_[0];                                            \
      for (int64_t i = 0; i < n; i++) d_[i * ds] = v_;         \
    } else {                                                   \
      for (int64_t i = 0; i < n; i++) d_[i * ds] = s_[i * ss]; \
    }                                                          \
  } while (0)

void cmx__cpu_copy_run(char* dst, int64_t ds, const char* src, int64_t ss,
                       int64_t n, size_t isz) {
  if (ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * isz);
    return;
  }
  switch (isz) {
    case 1:
      COPY_RUN(uint8_t);
      break;
    case 2:
      COPY_RUN(uint16_t);
      break;
    case 4:
      COPY_RUN(uint32_t);
      break;
    default:
      COPY_RUN(uint64_t);
      break;
  }
}

/* ---------------- Gather ---------------- */

typedef struct {
  const cmx_array* idx;
  int nidx;
  int axis[CMX_MAX_NDIM];
  int64_t dim[CMX_MAX_NDIM], ast[CMX_MAX_NDIM], ext[CMX_MAX_NDIM];
  const char* src;
  char* dst;
  size_t isz;
  int snd; /* the slice, collapsed: shape and source strides */
  int64_t sshape[CMX_MAX_NDIM], sst[CMX_MAX_NDIM];
  int64_t S; /* elements per slice */
  cmx__idx_bad bad;
} gather_ctx;

/* Copies one slice (S elements) from src into the contiguous dst. */
static void gather_slice(const gather_ctx* c, char* dst, const char* src) {
  int nd = c->snd;
  size_t isz = c->isz;
  if (nd == 0) {
    memcpy(dst, src, isz);
    return;
  }
  int64_t inner = c->sshape[nd - 1], ist = c->sst[nd - 1];
  int64_t rows = c->S / inner, off = 0, m[CMX_MAX_NDIM] = {0};
  for (int64_t r = 0; r < rows; r++) {
    cmx__cpu_copy_run(dst + r * inner * (int64_t)isz, 1,
                      src + off * (int64_t)isz, ist, inner, isz);
    for (int d = nd - 2; d >= 0; d--) {
      off += c->sst[d];
      if (++m[d] < c->sshape[d]) break;
      off -= c->sshape[d] * c->sst[d];
      m[d] = 0;
    }
  }
}

/* Slices whose elements are strided in the source (a[:, idx] gathers
 * columns): a tile of GS_E slice elements of every position of the batch
 * is gathered element by element (each source row read once per batch
 * while its cache lines are hot, where a slice at a time reads one cache
 * line per element), then written out position by position. */
#define GS_E 32
static void gather_strided_slices(const gather_ctx* c, int64_t p0, int64_t n,
                                  const int64_t* offs, uint64_t* tile) {
  int nd = c->snd;
  int64_t inner = c->sshape[nd - 1], ist = c->sst[nd - 1], S = c->S;
  int64_t isz = (int64_t)c->isz;
  int64_t so[GS_E], m[CMX_MAX_NDIM] = {0}, off = 0, i = 0;
  for (int64_t e0 = 0; e0 < S; e0 += GS_E) {
    int64_t w = S - e0 < GS_E ? S - e0 : GS_E;
    for (int64_t t = 0; t < w; t++) { /* source offsets of the elements */
      so[t] = off + i * ist;
      if (++i == inner) {
        i = 0;
        for (int d = nd - 2; d >= 0; d--) {
          off += c->sst[d];
          if (++m[d] < c->sshape[d]) break;
          off -= c->sshape[d] * c->sst[d];
          m[d] = 0;
        }
      }
    }
#define GS(T)                                                              \
  do {                                                                     \
    T* t_ = (T*)(void*)tile;                                               \
    const T* s_ = (const T*)(const void*)c->src;                           \
    for (int64_t t = 0; t < w; t++)                                        \
      for (int64_t j = 0; j < n; j++) t_[j * w + t] = s_[offs[j] + so[t]]; \
  } while (0)
    switch (isz) {
      case 1:
        GS(uint8_t);
        break;
      case 2:
        GS(uint16_t);
        break;
      case 4:
        GS(uint32_t);
        break;
      default:
        GS(uint64_t);
    }
#undef GS
    for (int64_t j = 0; j < n; j++)
      memcpy(c->dst + ((p0 + j) * S + e0) * isz,
             (const char*)tile + j * w * isz, (size_t)(w * isz));
  }
}

#define GATHER_ELEMS(T)                                  \
  do {                                                   \
    T* d_ = (T*)c->dst + p0;                             \
    const T* s_ = (const T*)c->src;                      \
    for (int64_t j = 0; j < n; j++) d_[j] = s_[offs[j]]; \
  } while (0)

/* GATHER_ELEMS with the unsigned type of c->isz bytes. */
#define GATHER_ELEMS_BY_SIZE()  \
  do {                          \
    switch (c->isz) {           \
      case 1:                   \
        GATHER_ELEMS(uint8_t);  \
        break;                  \
      case 2:                   \
        GATHER_ELEMS(uint16_t); \
        break;                  \
      case 4:                   \
        GATHER_ELEMS(uint32_t); \
        break;                  \
      default:                  \
        GATHER_ELEMS(uint64_t); \
        break;                  \
    }                           \
  } while (0)

static void gather_chunk(void* vc, int64_t b, int64_t e) {
  gather_ctx* c = vc;
  int64_t offs[CMX__IDX_BATCH], v[CMX__IDX_BATCH];
  /* n x GS_E elements of the strided-slice tile (NULL: slice by slice) */
  uint64_t* tile = c->S > 1 && c->snd > 0 && c->sst[c->snd - 1] != 1
                       ? malloc(CMX__IDX_BATCH * GS_E * sizeof(uint64_t))
                       : NULL;
  for (int64_t p0 = b; p0 < e; p0 += CMX__IDX_BATCH) {
    if (cmx__idx_bad_seen(&c->bad)) break;
    int64_t n = e - p0 < CMX__IDX_BATCH ? e - p0 : CMX__IDX_BATCH;
    if (c->nidx == 0)
      for (int64_t j = 0; j < n; j++) offs[j] = 0;
    for (int k = 0; k < c->nidx; k++)
      if (!cmx__cpu_index_offsets(c->idx[k], p0, n, c->dim[k], c->ext[k],
                                  c->ast[k], c->axis[k], k == 0, offs, v,
                                  &c->bad)) {
        free(tile);
        return;
      }
    if (c->S == 1) {
      GATHER_ELEMS_BY_SIZE();
    } else if (tile) {
      gather_strided_slices(c, p0, n, offs, tile);
    } else {
      int64_t step = c->S * (int64_t)c->isz;
      for (int64_t j = 0; j < n; j++)
        gather_slice(c, c->dst + (p0 + j) * step,
                     c->src + offs[j] * (int64_t)c->isz);
    }
  }
  free(tile);
}

/* Gather: out[i..., j...] = a[starts(i) + j]; inputs a, then the index
 * arrays (one shape). */
CMX__KERNEL(cmx__cpu_gather) {
  (void)nout;
  const cmx__gather_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  if (o->size == 0) { /* nothing to copy, but the indices must be valid */
    cmx__idx_bad bad;
    memset(&bad, 0, sizeof bad);
    for (int k = 1; k < nin; k++)
      if (!cmx__cpu_check_indices(in[k], a->dims[q->axes[k - 1]],
                                  q->slice_sizes[q->axes[k - 1]],
                                  q->axes[k - 1], &bad))
        return cmx__idx_bad_error(&bad, "gather");
    return CMX_OK;
  }
  gather_ctx* c = calloc(1, sizeof *c);
  if (!c) return cmx_kernel_error(CMX_ERR_MEMORY, "[gather] out of memory");
  c->idx = in + 1;
  c->nidx = nin - 1;
  c->src = cmx_kernel_data(a);
  c->dst = cmx_kernel_data(o);
  c->isz = cmx_dtype_size(a->dtype);
  for (int k = 0; k < c->nidx; k++) {
    int ax = q->axes[k];
    c->axis[k] = ax;
    c->dim[k] = a->dims[ax];
    c->ast[k] = CMX__STRIDES(a)[ax];
    c->ext[k] = q->slice_sizes[ax];
  }
  c->S = 1;
  for (int d = 0; d < a->ndim; d++) {
    c->sshape[d] = q->slice_sizes[d];
    c->sst[d] = CMX__STRIDES(a)[d];
    c->S *= q->slice_sizes[d];
  }
  int64_t* sts[1] = {c->sst};
  c->snd = cmx__layout_collapse(c->sshape, a->ndim, sts, 1);
  int64_t npos = o->size / c->S;
  int64_t grain = 16384 / c->S;
  cmx__parallel_for(npos, grain < 1 ? 1 : grain, gather_chunk, c);
  s = cmx__idx_bad_seen(&c->bad) ? cmx__idx_bad_error(&c->bad, "gather")
                                 : CMX_OK;
  free(c);
  return s;
}

/* ---------------- GatherAxis ---------------- */

typedef struct {
  cmx_array idx;
  const int64_t* shape; /* the output's (and the indices') shape */
  int nd, axis;
  int64_t ast[CMX_MAX_NDIM]; /* a's strides, 0 on the axis */
  int64_t axis_stride, dim;
  const char* src;
  char* dst;
  size_t isz;
  cmx__idx_bad bad;
} gather_axis_ctx;

static void gather_axis_chunk(void* vc, int64_t b, int64_t e) {
  gather_axis_ctx* c = vc;
  int64_t offs[CMX__IDX_BATCH], v[CMX__IDX_BATCH];
  for (int64_t p0 = b; p0 < e; p0 += CMX__IDX_BATCH) {
    if (cmx__idx_bad_seen(&c->bad)) return;
    int64_t n = e - p0 < CMX__IDX_BATCH ? e - p0 : CMX__IDX_BATCH;
    cmx__cpu_offsets(c->shape, c->ast, c->nd, p0, n, offs);
    if (!cmx__cpu_index_offsets(c->idx, p0, n, c->dim, 1, c->axis_stride,
                                c->axis, false, offs, v, &c->bad))
      return;
    GATHER_ELEMS_BY_SIZE();
  }
}

/* GatherAxis: out[..., i, ...] = a[..., idx[..., i, ...], ...]. */
CMX__KERNEL(cmx__cpu_gather_axis) {
  (void)nin;
  (void)nout;
  const cmx__axis_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  if (o->size == 0) return CMX_OK; /* the indices are empty too */
  gather_axis_ctx c;
  memset(&c, 0, sizeof c);
  c.idx = in[1];
  c.shape = o->dims;
  c.nd = o->ndim;
  c.axis = q->axis;
  for (int d = 0; d < a->ndim; d++) c.ast[d] = CMX__STRIDES(a)[d];
  c.axis_stride = c.ast[q->axis];
  c.ast[q->axis] = 0;
  c.dim = a->dims[q->axis];
  c.src = cmx_kernel_data(a);
  c.dst = cmx_kernel_data(o);
  c.isz = cmx_dtype_size(a->dtype);
  cmx__parallel_for(o->size, 8192, gather_axis_chunk, &c);
  return cmx__idx_bad_seen(&c.bad)
             ? cmx__idx_bad_error(&c.bad, "take_along_axis")
             : CMX_OK;
}
