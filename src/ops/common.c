/* Shared helpers of the op layer: applying primitives, dtype promotion with
 * weak scalars, axis normalisation and broadcasting of shapes. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

cmx_array cmx__apply(const cmx_primitive_vtable* vt, const void* params,
                     size_t psize, cmx_stream s, const cmx_array* inputs,
                     int nin, const int64_t* shape, int ndim, cmx_dtype dt) {
  for (int i = 0; i < nin; i++)
    if (!inputs[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[%s] input %d is a null array", vt->name, i);
      return NULL;
    }
  cmx_primitive* p = cmx_primitive_new(vt, params, psize, s);
  if (!p) return NULL;
  cmx_array out;
  const int64_t* shapes[1] = {shape};
  if (cmx_primitive_apply(&out, 1, p, inputs, nin, shapes, &ndim, &dt) !=
      CMX_OK)
    return NULL;
  return cmx__own(out);
}

cmx_status cmx__apply_n(const cmx_primitive_vtable* vt, const void* params,
                        size_t psize, cmx_stream s, const cmx_array* inputs,
                        int nin, cmx_array* outs, int nout,
                        const int64_t* const* shapes, const int* ndims,
                        const cmx_dtype* dts) {
  for (int i = 0; i < nin; i++)
    if (!inputs[i]) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[%s] input %d is a null array", vt->name, i);
      return cmx_last_status();
    }
  cmx_primitive* p = cmx_primitive_new(vt, params, psize, s);
  if (!p) return cmx_last_status();
  cmx_status st =
      cmx_primitive_apply(outs, nout, p, inputs, nin, shapes, ndims, dts);
  if (st != CMX_OK) return st;
  for (int i = 0; i < nout; i++) cmx__own(outs[i]);
  return CMX_OK;
}

/* Kind of a weak scalar: 1 int, 2 uint, 3 float, 4 complex, 5 bool. */
static bool weak_fits(int weak, cmx_dtype strong) {
  switch (weak) {
    case 5:
      return true;
    case 1:
    case 2:
      return strong != CMX_BOOL;
    case 3:
      return cmx_dtype_is_inexact(strong);
    case 4:
      return cmx_dtype_is_complex(strong);
  }
  return false;
}

static cmx_dtype weak_default(int weak) {
  return weak == 5   ? CMX_BOOL
         : weak <= 2 ? CMX_INT32
         : weak == 3 ? CMX_FLOAT32
                     : CMX_COMPLEX64;
}

cmx_dtype cmx__result_type(const cmx_array* arrays, int n) {
  bool have_strong = false;
  cmx_dtype t = CMX_BOOL;
  for (int i = 0; i < n; i++) {
    if (!arrays[i] || arrays[i]->weak) continue;
    t = have_strong ? cmx_dtype_promote(t, arrays[i]->dtype) : arrays[i]->dtype;
    have_strong = true;
  }
  if (!have_strong) { /* only weak scalars: the widest default kind */
    int best = 5;
    for (int i = 0; i < n; i++) {
      if (!arrays[i]) continue;
      int w = arrays[i]->weak;
      int rank = w == 5 ? 0 : w <= 2 ? 1 : w == 3 ? 2 : 3;
      int brank = best == 5 ? 0 : best <= 2 ? 1 : best == 3 ? 2 : 3;
      if (rank > brank) best = w;
    }
    return weak_default(best);
  }
  for (int i = 0; i < n; i++) {
    if (!arrays[i] || !arrays[i]->weak) continue;
    if (!weak_fits(arrays[i]->weak, t))
      t = cmx_dtype_promote(t, weak_default(arrays[i]->weak));
  }
  return t;
}

cmx_array cmx__as_dtype(cmx_array a, cmx_dtype dt, cmx_stream s) {
  if (!a) return NULL;
  if (a->weak) {
    if (a->dtype == dt) return a;
    return cmx__own(cmx__weak_cast(a, dt));
  }
  if (a->dtype == dt) return a;
  return cmx__astype(a, dt, s);
}

bool cmx__norm_axis(const char* op, int* axis, int ndim) {
  int ax = *axis;
  if (ax < -ndim || ax >= ndim) {
    cmx__error(CMX_ERR_INDEX,
               "[%s] axis %d is out of bounds for array of dimension %d", op,
               ax, ndim);
    return false;
  }
  *axis = ax < 0 ? ax + ndim : ax;
  return true;
}

static int cmp_int(const void* a, const void* b) {
  return *(const int*)a - *(const int*)b;
}

int cmx__norm_axes(const char* op, const int* axes, int naxes, int ndim,
                   int* out) {
  if (!axes) {
    for (int i = 0; i < ndim; i++) out[i] = i;
    return ndim;
  }
  if (naxes < 0 || naxes > CMX_MAX_NDIM) {
    cmx__error(CMX_ERR_VALUE, "[%s] invalid number of axes %d", op, naxes);
    return -1;
  }
  for (int i = 0; i < naxes; i++) {
    out[i] = axes[i];
    if (!cmx__norm_axis(op, &out[i], ndim)) return -1;
  }
  qsort(out, (size_t)naxes, sizeof(int), cmp_int);
  for (int i = 1; i < naxes; i++)
    if (out[i] == out[i - 1]) {
      cmx__error(CMX_ERR_VALUE, "[%s] received duplicate axis %d", op, out[i]);
      return -1;
    }
  return naxes;
}

cmx_array cmx__scalar(double v, cmx_dtype dt) {
  cmx__scalar_value sc;
  sc.f = v;
  return cmx__own(cmx__scalar_node("scalar", sc, 2, dt, false));
}

cmx_array cmx__ref(cmx_array a) {
  return a ? cmx__own(cmx_array_retain(a)) : NULL;
}

bool cmx__broadcast_shape(const char* op, const int64_t* a, int na,
                          const int64_t* b, int nb, int64_t* out, int* nout) {
  int n = na > nb ? na : nb;
  for (int i = 0; i < n; i++) {
    int64_t da = i < n - na ? 1 : a[i - (n - na)];
    int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
    if (da != db && da != 1 && db != 1) {
      char sa[512], sb[512];
      cmx__error(CMX_ERR_VALUE, "[%s] shapes %s and %s cannot be broadcast.",
                 op, cmx__shape_str(a, na, sa, sizeof sa),
                 cmx__shape_str(b, nb, sb, sizeof sb));
      return false;
    }
    out[i] = da == 1 ? db : da;
  }
  *nout = n;
  return true;
}

cmx_status cmx_broadcast_shapes(int64_t* out, int* out_ndim, const int64_t* a,
                                int na, const int64_t* b, int nb) {
  if (!out || !out_ndim || na < 0 || nb < 0 || na > CMX_MAX_NDIM ||
      nb > CMX_MAX_NDIM || (na && !a) || (nb && !b))
    return cmx__error(CMX_ERR_VALUE, "[broadcast_shapes] bad arguments");
  cmx__error_reset_pending();
  return cmx__broadcast_shape("broadcast_shapes", a, na, b, nb, out, out_ndim)
             ? CMX_OK
             : cmx_last_status();
}

cmx_status cmx__scope_exit_multi(size_t mark, bool ok, cmx_array* outs, int n) {
  if (!ok)
    for (int i = 0; i < n; i++) outs[i] = NULL;
  cmx_status st = cmx__scope_exit_n(mark, outs, outs, (size_t)(n > 0 ? n : 0));
  return ok ? st : cmx_last_status();
}
