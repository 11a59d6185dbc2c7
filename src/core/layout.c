/* Layout helpers shared by the backends (see core/layout.h). */
#include "core/layout.h"

#include <stdlib.h>

#include "cmx/array.h" /* CMX_MAX_NDIM */

int cmx__layout_collapse(int64_t* shape, int nd, int64_t* const* st, int na) {
  int m = 0;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1) continue;
    if (m > 0) {
      bool merge = true;
      for (int k = 0; k < na; k++)
        merge = merge && st[k][m - 1] == st[k][d] * shape[d];
      if (merge) {
        shape[m - 1] *= shape[d];
        for (int k = 0; k < na; k++) st[k][m - 1] = st[k][d];
        continue;
      }
    }
    shape[m] = shape[d];
    for (int k = 0; k < na; k++) st[k][m] = st[k][d];
    m++;
  }
  return m;
}

int cmx__closest_outer_dim(const int64_t* st, int ndim) {
  if (ndim < 3) return -1;
  int best = -1;
  int64_t lim = llabs(st[ndim - 2]) < llabs(st[ndim - 1]) ? llabs(st[ndim - 2])
                                                          : llabs(st[ndim - 1]);
  for (int d = 0; d < ndim - 2; d++)
    if (llabs(st[d]) < lim) lim = llabs(st[d]), best = d;
  return best;
}

void cmx__row_major_strides(const int64_t* shape, int ndim, int64_t* out) {
  /* Unsigned products: an empty array may have huge other dims, whose
   * strides never matter but must not overflow (UB) either. */
  uint64_t s = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    out[d] = (int64_t)s;
    s *= shape[d] > 0 ? (uint64_t)shape[d] : 1u;
  }
}

bool cmx__reshape_strides(const int64_t* in_shape, const int64_t* in_strides,
                          int in_ndim, const int64_t* out_shape, int out_ndim,
                          int64_t* out_strides) {
  int64_t size = 1;
  for (int d = 0; d < in_ndim; d++) size *= in_shape[d];
  if (size == 0) {
    cmx__row_major_strides(out_shape, out_ndim, out_strides);
    return true;
  }
  /* Size-1 input dims carry no layout information: drop them. */
  int64_t ish[CMX_MAX_NDIM], ist[CMX_MAX_NDIM];
  int ni = 0;
  for (int d = 0; d < in_ndim; d++)
    if (in_shape[d] != 1) {
      ish[ni] = in_shape[d];
      ist[ni++] = in_strides[d];
    }
  /* Match runs of input dims and output dims with equal products; each
   * input run must be contiguous in itself, then the output run takes
   * strides counted up from the run's innermost input stride. */
  int i = 0, o = 0;
  while (i < ni && o < out_ndim) {
    int i1 = i + 1, o1 = o + 1;
    int64_t pi = ish[i], po = out_shape[o];
    while (pi != po) {
      if (pi < po)
        pi *= ish[i1++];
      else
        po *= out_shape[o1++];
    }
    for (int k = i; k < i1 - 1; k++)
      if (ist[k] != ist[k + 1] * ish[k + 1]) return false;
    out_strides[o1 - 1] = ist[i1 - 1];
    for (int k = o1 - 2; k >= o; k--)
      out_strides[k] = out_strides[k + 1] * out_shape[k + 1];
    i = i1;
    o = o1;
  }
  for (; o < out_ndim; o++) out_strides[o] = 1; /* remaining size-1 dims */
  return true;
}
