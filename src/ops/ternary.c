/* Ternary elementwise ops: where (the Select primitive) and clip. */
#include "ops/ops_internal.h"

/* cond as bool, x and y promoted together (weak scalars give way), all
 * three broadcast to one shape. */
cmx_array cmx__where(cmx_array cond, cmx_array x, cmx_array y, cmx_stream s) {
  if (!CMX__ARGS("where", cond, x, y)) return NULL;
  cmx_array xy[2] = {x, y};
  cmx_dtype dt = cmx__result_type(xy, 2);
  int64_t s1[CMX_MAX_NDIM], shape[CMX_MAX_NDIM];
  int n1, nd;
  if (!cmx__broadcast_shape("where", cond->dims, cond->ndim, x->dims, x->ndim,
                            s1, &n1) ||
      !cmx__broadcast_shape("where", s1, n1, y->dims, y->ndim, shape, &nd))
    return NULL;
  cmx_array in[3] = {
      cmx__broadcast_to(cmx__as_dtype(cond, CMX_BOOL, s), shape, nd, s),
      cmx__broadcast_to(cmx__as_dtype(x, dt, s), shape, nd, s),
      cmx__broadcast_to(cmx__as_dtype(y, dt, s), shape, nd, s)};
  if (!in[0] || !in[1] || !in[2]) return NULL;
  return cmx__apply(&cmx__vt_Select, NULL, 0, s, in, 3, shape, nd, dt);
}

cmx_status cmx_where(cmx_array* out, cmx_array cond, cmx_array x, cmx_array y,
                     cmx_stream s) {
  CMX__PUBLIC(out, "where", cmx__where(cond, x, y, s));
}

/* maximum(a, lo) then minimum(., hi), as MLX: dtypes promote with the
 * bounds and NaNs propagate. A NULL bound is "no bound"; when an error is
 * already pending a NULL bound is taken as that failure instead. */
cmx_array cmx__clip(cmx_array a, cmx_array lo, cmx_array hi, cmx_stream s) {
  if (!CMX__ARGS("clip", a)) return NULL;
  if (cmx__error_pending()) return NULL;
  if (!lo && !hi)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[clip] At most one of a_min and a_max may be None.");
  cmx_array r = a;
  if (lo) r = cmx__maximum(r, lo, s);
  if (hi) r = cmx__minimum(r, hi, s);
  return r;
}

cmx_status cmx_clip(cmx_array* out, cmx_array a, cmx_array a_min,
                    cmx_array a_max, cmx_stream s) {
  CMX__PUBLIC(out, "clip", cmx__clip(a, a_min, a_max, s));
}
