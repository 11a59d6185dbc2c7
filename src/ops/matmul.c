/* Matrix-product ops: NumPy matmul shape rules (1-d operands promoted and
 * their dim dropped, batch dims broadcast), MLX dtype rules, node building.
 * Batch broadcasting and 1-d operands are handled by the kernels (see
 * primitives/matmul.h), so a product is a single node. */
#include "primitives/matmul.h"

#include <string.h>

#include "ops/ops_internal.h"

/* Checks the shapes of a @ b for op and writes the output shape. */
static bool product_shape(const char* op, cmx_array a, cmx_array b,
                          int64_t* shape, int* ndim) {
  if (a->ndim == 0 || b->ndim == 0) {
    cmx__error(CMX_ERR_VALUE,
               "[%s] Got 0 dimension input. Inputs must have at least one "
               "dimension.",
               op);
    return false;
  }
  /* The shapes with 1-d operands promoted, as the messages show them. */
  int64_t sa[CMX_MAX_NDIM + 1], sb[CMX_MAX_NDIM + 1];
  int na = a->ndim, nb = b->ndim;
  memcpy(sa, a->dims, (size_t)na * sizeof(int64_t));
  memcpy(sb, b->dims, (size_t)nb * sizeof(int64_t));
  if (na == 1) {
    sa[1] = sa[0];
    sa[0] = 1;
    na = 2;
  }
  if (nb == 1) {
    sb[1] = 1;
    nb = 2;
  }
  if (sa[na - 1] != sb[nb - 2]) {
    char s1[512], s2[512];
    cmx__error(CMX_ERR_VALUE,
               "[%s] Last dimension of first input with shape %s must match "
               "second to last dimension of second input with shape %s.",
               op, cmx__shape_str(sa, na, s1, sizeof s1),
               cmx__shape_str(sb, nb, s2, sizeof s2));
    return false;
  }
  int nd;
  if (!cmx__broadcast_shape(op, sa, na - 2, sb, nb - 2, shape, &nd))
    return false;
  if (a->ndim >= 2) shape[nd++] = sa[na - 2];
  if (b->ndim >= 2) shape[nd++] = sb[nb - 1];
  *ndim = nd;
  return true;
}

cmx_array cmx__matmul(cmx_array a, cmx_array b, cmx_stream s) {
  if (!CMX__ARGS("matmul", a, b)) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!product_shape("matmul", a, b, shape, &nd)) return NULL;
  cmx_array ab[2] = {a, b};
  cmx_dtype dt = cmx__result_type(ab, 2);
  if (!cmx_dtype_is_inexact(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[matmul] Only inexact types are supported but %s and "
                     "%s were provided which results in %s, which is not a "
                     "floating point type.",
                     cmx_dtype_name(a->dtype), cmx_dtype_name(b->dtype),
                     cmx_dtype_name(dt));
  cmx_array in[2] = {cmx__as_dtype(a, dt, s), cmx__as_dtype(b, dt, s)};
  return cmx__apply(&cmx__vt_Matmul, NULL, 0, s, in, 2, shape, nd, dt);
}

cmx_status cmx_matmul(cmx_array* out, cmx_array a, cmx_array b, cmx_stream s) {
  CMX__PUBLIC(out, "matmul", cmx__matmul(a, b, s));
}

cmx_array cmx__addmm(cmx_array c, cmx_array a, cmx_array b, float alpha,
                     float beta, cmx_stream s) {
  if (!CMX__ARGS("addmm", c, a, b)) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  if (!product_shape("addmm", a, b, shape, &nd)) return NULL;
  cmx_array abc[3] = {a, b, c};
  cmx_dtype dt = cmx__result_type(abc, 3);
  if (!cmx_dtype_is_inexact(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[addmm] Only inexact types are supported but %s, %s "
                     "and %s were provided which results in %s, which is "
                     "not a floating point type.",
                     cmx_dtype_name(c->dtype), cmx_dtype_name(a->dtype),
                     cmx_dtype_name(b->dtype), cmx_dtype_name(dt));
  /* c must broadcast to the output; it never widens the output (MLX). */
  bool fits = c->ndim <= nd;
  for (int i = 1; fits && i <= c->ndim; i++) {
    int64_t cd = c->dims[c->ndim - i];
    fits = cd == 1 || cd == shape[nd - i];
  }
  if (!fits) {
    char s1[512], s2[512];
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[addmm] Input c with shape %s must broadcast to the "
                     "output shape %s.",
                     cmx__shape_str(c->dims, c->ndim, s1, sizeof s1),
                     cmx__shape_str(shape, nd, s2, sizeof s2));
  }
  cmx__addmm_params q = {alpha, beta};
  cmx_array in[3] = {cmx__as_dtype(a, dt, s), cmx__as_dtype(b, dt, s),
                     cmx__broadcast_to(cmx__as_dtype(c, dt, s), shape, nd, s)};
  return cmx__apply(&cmx__vt_AddMM, &q, sizeof q, s, in, 3, shape, nd, dt);
}

cmx_status cmx_addmm(cmx_array* out, cmx_array c, cmx_array a, cmx_array b,
                     float alpha, float beta, cmx_stream s) {
  CMX__PUBLIC(out, "addmm", cmx__addmm(c, a, b, alpha, beta, s));
}
