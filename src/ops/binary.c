/* Binary elementwise ops: promote, broadcast, build the node. */
#include "ops/ops_internal.h"

/* Promotes a and b to their result dtype and broadcasts them to a common
 * shape; writes the prepared inputs. */
static bool prepare(const char* op, cmx_array a, cmx_array b, cmx_stream s,
                    cmx_array* pa, cmx_array* pb, cmx_dtype* dt) {
  if (!CMX__ARGS(op, a, b)) return false;
  cmx_array ab[2] = {a, b};
  *dt = cmx__result_type(ab, 2);
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!cmx__broadcast_shape(op, a->dims, a->ndim, b->dims, b->ndim, shape,
                            &nd))
    return false;
  *pa = cmx__broadcast_to(cmx__as_dtype(a, *dt, s), shape, nd, s);
  *pb = cmx__broadcast_to(cmx__as_dtype(b, *dt, s), shape, nd, s);
  return *pa && *pb;
}

/* A binary primitive on prepared inputs with output dtype out_dt (or the
 * promoted dtype when out_dt is CMX_DTYPE_AUTO). */
static cmx_array binary(const char* op, const cmx_primitive_vtable* vt,
                        cmx_array a, cmx_array b, cmx_dtype out_dt,
                        cmx_stream s) {
  cmx_array pa, pb;
  cmx_dtype dt;
  if (!prepare(op, a, b, s, &pa, &pb, &dt)) return NULL;
  cmx_array in[2] = {pa, pb};
  return cmx__apply(vt, NULL, 0, s, in, 2, pa->dims, pa->ndim,
                    out_dt == CMX_DTYPE_AUTO ? dt : out_dt);
}

cmx_array cmx__add(cmx_array a, cmx_array b, cmx_stream s) {
  return binary("add", &cmx__vt_Add, a, b, CMX_DTYPE_AUTO, s);
}

cmx_status cmx_add(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s) {
  CMX__PUBLIC(out, "add", cmx__add(a, b, s));
}
