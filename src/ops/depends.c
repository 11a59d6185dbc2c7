/* depends: outputs equal to their inputs whose computation waits for other
 * arrays to be evaluated first (the Depends primitive, MLX's depends). */
#include <stdlib.h>

#include "ops/ops_internal.h"

/* ---------------- depends ---------------- */
bool cmx__depends(cmx_array* outs, const cmx_array* inputs, int n,
                  const cmx_array* deps, int m, cmx_stream s) {
  if (n < 0 || m < 0 || (n > 0 && !inputs) || (m > 0 && !deps)) {
    cmx__error(CMX_ERR_VALUE, "[depends] invalid array lists");
    return false;
  }
  if (n == 0) return true;
  cmx_array* all = malloc((size_t)(n + m) * sizeof(cmx_array));
  const int64_t** shapes = malloc((size_t)n * sizeof(int64_t*));
  int* ndims = malloc((size_t)n * sizeof(int));
  cmx_dtype* dts = malloc((size_t)n * sizeof(cmx_dtype));
  bool ok = all && shapes && ndims && dts;
  if (!ok) cmx__error(CMX_ERR_MEMORY, "[depends] out of memory");
  for (int i = 0; ok && i < n + m; i++) {
    all[i] = i < n ? inputs[i] : deps[i - n];
    ok = CMX__ARGS("depends", all[i]);
  }
  for (int i = 0; ok && i < n; i++)
    shapes[i] = inputs[i]->dims, ndims[i] = inputs[i]->ndim,
    dts[i] = inputs[i]->dtype;
  if (ok)
    ok = cmx__apply_n(&cmx__vt_Depends, NULL, 0, s, all, n + m, outs, n, shapes,
                      ndims, dts) == CMX_OK;
  free(all), free(shapes), free(ndims), free(dts);
  return ok;
}
cmx_status cmx_depends(cmx_array* outs, const cmx_array* inputs, int n,
                       const cmx_array* dependencies, int m, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[depends] output pointer is NULL");
  for (int i = 0; i < n; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__depends(outs, inputs, n, dependencies, m, s);
  return cmx__scope_exit_multi(mark, ok, outs, n > 0 ? n : 0);
}
