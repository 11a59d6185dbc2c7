/* Unary elementwise ops and dtype conversion. */
#include "ops/ops_internal.h"

cmx_array cmx__astype(cmx_array a, cmx_dtype dt, cmx_stream s) {
  if (!CMX__ARGS("astype", a)) return NULL;
  if (!cmx_dtype_valid((int)dt))
    return CMX__FAIL(CMX_ERR_TYPE, "[astype] invalid dtype %d", (int)dt);
  return cmx__apply(&cmx__vt_AsType, NULL, 0, s, &a, 1, a->dims, a->ndim, dt);
}

cmx_status cmx_astype(cmx_array* out, cmx_array a, cmx_dtype dt,
                      cmx_stream s) {
  CMX__PUBLIC(out, "astype", cmx__astype(a, dt, s));
}

cmx_array cmx__copy(cmx_array a, cmx_stream s) {
  if (!CMX__ARGS("copy", a)) return NULL;
  return cmx__apply(&cmx__vt_Copy, NULL, 0, s, &a, 1, a->dims, a->ndim,
                    a->dtype);
}
