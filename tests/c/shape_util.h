/* Helpers of the shape-op tests: inputs in five layouts (the harness's
 * three plus a negative-stride view and a view of a view of a strided
 * buffer), a reference built by plain index mapping, and exact compares.
 *
 *   cmx_array a = su_input(&x, SU_FLIPPED);
 *   h_tensor want = su_map(&x, oshape, ond, map_fn, ctx, 0);
 *   su_check(result, &want, "what");
 */
#ifndef CMX_TEST_SHAPE_UTIL_H
#define CMX_TEST_SHAPE_UTIL_H

#include "harness.h"

#define S CMX_STREAM_DEFAULT

enum {
  SU_CONTIG = H_CONTIG,
  SU_TRANSPOSED = H_TRANSPOSED,
  SU_STRIDED = H_STRIDED,
  SU_FLIPPED,  /* cmx_flip of reversed data: negative strides */
  SU_VIEWVIEW, /* transpose of a slice of a strided buffer */
  SU_NUM_LAYOUTS
};
static const char* const su_layout_names[] = {
    "contiguous", "transposed", "strided", "flipped", "view-of-view"};

/* Dtypes covering every item size and kind. */
static const cmx_dtype SU_DTYPES[] = {CMX_BOOL,      CMX_UINT8,     CMX_INT16,
                                      CMX_UINT32,    CMX_INT64,     CMX_FLOAT16,
                                      CMX_BFLOAT16,  CMX_FLOAT32,   CMX_FLOAT64,
                                      CMX_COMPLEX64, CMX_NUM_DTYPES};
static const cmx_dtype SU_FEW[] = {CMX_BOOL,    CMX_INT16,     CMX_INT64,
                                   CMX_FLOAT32, CMX_COMPLEX64, CMX_NUM_DTYPES};

static inline void su_unravel(int64_t k, const int64_t* shape, int nd,
                              int64_t* idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = shape[d] ? k % shape[d] : 0;
    k = shape[d] ? k / shape[d] : 0;
  }
}
static inline int64_t su_ravel(const int64_t* idx, const int64_t* shape,
                               int nd) {
  int64_t k = 0;
  for (int d = 0; d < nd; d++) k = k * shape[d] + idx[d];
  return k;
}

/* A tensor of the same dtype as x with the given shape, element k taken
 * from x at map(idx of k) (or fill where map returns -1). */
typedef int64_t (*su_map_fn)(const int64_t* idx, const void* ctx);
static inline h_tensor su_map(const h_tensor* x, const int64_t* shape, int nd,
                              su_map_fn map, const void* ctx, double fill) {
  h_tensor t = h_alloc(shape, nd, x->dtype);
  int64_t idx[CMX_MAX_NDIM];
  for (int64_t k = 0; k < t.size; k++) {
    su_unravel(k, shape, nd, idx);
    int64_t j = map(idx, ctx);
    t.re[k] = j < 0 ? fill : x->re[j];
    if (t.im) t.im[k] = j < 0 ? 0 : x->im[j];
  }
  return t;
}

/* x's values in layout l as a new (possibly lazy) array. */
static inline cmx_array su_input(const h_tensor* x, int l) {
  int nd = x->ndim;
  if (l < SU_FLIPPED) return h_array(x, (h_layout)l);
  if (nd == 0) return h_array(x, H_CONTIG);
  int64_t idx[CMX_MAX_NDIM], j[CMX_MAX_NDIM];
  if (l == SU_FLIPPED) {
    h_tensor r = h_alloc(x->shape, nd, x->dtype);
    for (int64_t k = 0; k < x->size; k++) {
      su_unravel(k, x->shape, nd, idx);
      for (int d = 0; d < nd; d++) idx[d] = x->shape[d] - 1 - idx[d];
      int64_t src = su_ravel(idx, x->shape, nd);
      r.re[k] = x->re[src];
      if (r.im) r.im[k] = x->im[src];
    }
    cmx_array a = h_array(&r, H_CONTIG), f = NULL;
    cmx_flip(&f, a, NULL, 0, S);
    cmx_array_release(a);
    h_free(&r);
    return f;
  }
  /* Storage u of shape reversed(x.shape) + 1 in a strided buffer; slice
   * off the padding and transpose back. */
  int64_t ushape[CMX_MAX_NDIM], start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) {
    ushape[d] = x->shape[nd - 1 - d] + 1;
    start[d] = 0;
    stop[d] = x->shape[nd - 1 - d];
  }
  h_tensor u = h_alloc(ushape, nd, x->dtype);
  for (int64_t k = 0; k < u.size; k++) {
    su_unravel(k, ushape, nd, idx);
    bool pad = false;
    for (int d = 0; d < nd; d++) {
      j[nd - 1 - d] = idx[d];
      pad |= idx[d] >= x->shape[nd - 1 - d];
    }
    u.re[k] = pad ? 1 : x->re[su_ravel(j, x->shape, nd)];
    if (u.im) u.im[k] = pad ? 1 : x->im[su_ravel(j, x->shape, nd)];
  }
  cmx_array a = h_array(&u, H_STRIDED), sl = NULL, tr = NULL;
  cmx_slice(&sl, a, start, stop, NULL, S);
  cmx_transpose(&tr, sl, NULL, 0, S);
  cmx_array_release(a);
  cmx_array_release(sl);
  h_free(&u);
  return tr;
}

/* Evaluates r and compares it exactly with want. */
static inline bool su_check(cmx_array r, const h_tensor* want,
                            const char* what) {
  if (!r) {
    fprintf(stderr, "FAIL %s: no result: %s\n", what, cmx_last_error());
    CHECK(false);
    return false;
  }
  h_tensor got = h_read(r);
  bool ok = h_close(&got, want, 0, 0, what);
  h_free(&got);
  CHECK(ok);
  return ok;
}

/* True when r's data lies in a's buffer (evaluates both). */
static inline bool su_shares(cmx_array r, cmx_array a) {
  if (cmx_array_eval(r) != CMX_OK || cmx_array_eval(a) != CMX_OK) return false;
  return r->buf && r->buf == a->buf;
}

static inline void su_what(char* buf, size_t n, const char* op,
                           const h_tensor* x, int l, const char* extra) {
  char sh[256];
  snprintf(buf, n, "%s %s %s %s %s", op, cmx_dtype_name(x->dtype),
           cmx__shape_str(x->shape, x->ndim, sh, sizeof sh), su_layout_names[l],
           extra ? extra : "");
}

/* Whether layout l applies to rank nd (else it duplicates contiguous). */
static inline bool su_layout_ok(int l, int nd) {
  if (l == SU_TRANSPOSED) return nd >= 2;
  if (l != SU_CONTIG) return nd >= 1;
  return true;
}

/* Python's slice.indices(n) as CPython computes it. */
static inline int64_t py_slice(int64_t n, int64_t* start, int64_t* stop,
                               int64_t step) {
  int64_t* p[2] = {start, stop};
  for (int i = 0; i < 2; i++) {
    if (*p[i] < 0) {
      *p[i] += n;
      if (*p[i] < 0) *p[i] = step < 0 ? -1 : 0;
    } else if (*p[i] >= n) {
      *p[i] = step < 0 ? n - 1 : n;
    }
  }
  if (step < 0) return *stop < *start ? (*start - *stop - 1) / (-step) + 1 : 0;
  return *start < *stop ? (*stop - *start - 1) / step + 1 : 0;
}

/* True when a has shape s (nd dims). */
static inline bool su_has_shape(cmx_array a, const int64_t* s, int nd) {
  if (!a || cmx_array_ndim(a) != nd) return false;
  for (int i = 0; i < nd; i++)
    if (cmx_array_shape(a)[i] != s[i]) return false;
  return true;
}

#endif
