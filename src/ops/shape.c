/* Shape ops: views and layout changes. */
#include <string.h>
#include "ops/ops_internal.h"

cmx_array cmx__broadcast_to(cmx_array a, const int64_t* shape, int ndim,
                            cmx_stream s) {
  if (!CMX__ARGS("broadcast_to", a)) return NULL;
  if (ndim < 0 || ndim > CMX_MAX_NDIM || (ndim && !shape))
    return CMX__FAIL(CMX_ERR_VALUE, "[broadcast_to] invalid shape");
  int64_t bs[CMX_MAX_NDIM];
  int nb;
  char sa[512], sb[512];
  if (ndim < a->ndim ||
      !cmx__broadcast_shape("broadcast_to", a->dims, a->ndim, shape, ndim, bs,
                            &nb) ||
      memcmp(bs, shape, (size_t)ndim * sizeof(int64_t)) != 0) {
    cmx__error_reset_pending();
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[broadcast_to] cannot broadcast array of shape %s into "
                     "shape %s.",
                     cmx__shape_str(a->dims, a->ndim, sa, sizeof sa),
                     cmx__shape_str(shape, ndim, sb, sizeof sb));
  }
  if (ndim == a->ndim &&
      (ndim == 0 || memcmp(a->dims, shape, (size_t)ndim * 8) == 0))
    return a;
  return cmx__apply(&cmx__vt_Broadcast, NULL, 0, s, &a, 1, shape, ndim,
                    a->dtype);
}

cmx_status cmx_broadcast_to(cmx_array* out, cmx_array a, const int64_t* shape,
                            int ndim, cmx_stream s) {
  CMX__PUBLIC(out, "broadcast_to", cmx__broadcast_to(a, shape, ndim, s));
}
