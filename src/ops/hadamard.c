/* hadamard_transform: the Hadamard primitive (a fast Walsh-Hadamard
 * transform times a small Hadamard matrix), with MLX's checks. */
#include "primitives/hadamard.h"

#include <math.h>
#include <string.h>

#include "ops/ops_internal.h"

/* ---------------- hadamard_transform ---------------- */
cmx_array cmx__hadamard_transform(cmx_array a, const float* scale,
                                  cmx_stream s) {
  if (!CMX__ARGS("hadamard_transform", a)) return NULL;
  if (a->size == 0)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[hadamard_transform] Does not support empty arrays.");
  int64_t n = a->ndim ? a->dims[a->ndim - 1] : 1;
  /* 1/sqrt(n) stays double for float64 data; float32 math rounds it. */
  double sc = scale ? (double)*scale : 1.0 / sqrt((double)n);
  cmx_dtype dt = a->dtype;
  if (!cmx_dtype_is_floating(dt)) dt = CMX_FLOAT32;
  if (n == 1) /* nothing to transform: only the scale (MLX) */
    return sc == 1.0 ? a : cmx__multiply(a, cmx__scalar(sc, dt), s);
  int m;
  int64_t p2;
  if (!cmx__hadamard_split(n, &m, &p2))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[hadamard_transform] Only supports n = m*2^k where m in "
                     "(1, 12, 20, 28), but the last axis has size %lld.",
                     (long long)n);
  cmx__hadamard_params q;
  memset(&q, 0, sizeof q);
  q.scale = sc;
  cmx_array x = cmx__as_dtype(a, dt, s);
  if (!x) return NULL;
  return cmx__apply(&cmx__vt_Hadamard, &q, sizeof q, s, &x, 1, a->dims, a->ndim,
                    dt);
}

cmx_status cmx_hadamard_transform(cmx_array* out, cmx_array a,
                                  const float* scale, cmx_stream s) {
  CMX__PUBLIC(out, "hadamard_transform", cmx__hadamard_transform(a, scale, s));
}
