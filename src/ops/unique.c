/* unique with a static output size, as MLX's: a composite of sort, scan
 * and scatter ops, so its graph does not depend on the data (it runs
 * under vmap and compile, and differentiates through the gathered
 * values).
 *
 * For the flattened input of n elements sorted stably (order), a run of
 * equal values starts where sorted[i] != sorted[i-1] (NaNs never equal, so
 * each is its own run; -0 equals 0); rank[i] is the run of sorted element
 * i. Run k starts at sorted position start[k] (found by a scatter-min of
 * positions into slot rank, with runs past the output size sent to a
 * spare slot), its first occurrence in the input is order[start[k]], its
 * count start[k+1] - start[k]. Slots past the number of runs take the
 * fill value (default: the first unique value), the index of the first
 * unique value and a count of 0; the inverse of an element is its run,
 * clamped to size - 1. */
#include "ops/ops_internal.h"
#include "ops/shape_internal.h"

static cmx_array flat_positions(int64_t n, cmx_dtype dt, cmx_stream s) {
  return cmx__arange(0, (double)n, 1, dt, s);
}

bool cmx__unique(cmx_array* outs, cmx_array a, int64_t size, cmx_array fill,
                 cmx_stream s) {
  if (!CMX__ARGS("unique", a)) return false;
  if (size < 0) {
    cmx__error(CMX_ERR_VALUE, "[unique] Received negative size %lld.",
               (long long)size);
    return false;
  }
  if (size > INT32_MAX) {
    cmx__error(CMX_ERR_VALUE, "[unique] size %lld is too large.",
               (long long)size);
    return false;
  }
  int64_t n = a->size;
  if (n > UINT32_MAX) {
    cmx__error(CMX_ERR_VALUE, "[unique] input of %lld elements is too large.",
               (long long)n);
    return false;
  }
  if (fill) {
    if (fill->size != 1) {
      char sh[32 + CMX_MAX_NDIM * 21];
      cmx__shape_str(fill->dims, fill->ndim, sh, sizeof sh);
      cmx__error(CMX_ERR_VALUE,
                 "[unique] Fill value must have one element, but got shape "
                 "%s.",
                 sh);
      return false;
    }
    fill = cmx__astype(cmx__reshape(fill, NULL, 0, s), a->dtype, s);
  } else if (n == 0 && size > 0) {
    cmx__error(CMX_ERR_VALUE,
               "[unique] A fill value is required for an empty input with a "
               "non-zero size.");
    return false;
  }
  int64_t k = size;
  if (n == 0) { /* every slot is fill */
    outs[0] = fill ? cmx__broadcast_to(fill, &k, 1, s)
                   : cmx__zeros(&k, 1, a->dtype, s);
    outs[1] = cmx__zeros(&k, 1, CMX_UINT32, s);
    outs[2] = cmx__zeros(a->dims, a->ndim, CMX_UINT32, s);
    outs[3] = cmx__zeros(&k, 1, CMX_INT32, s);
    return outs[0] && outs[1] && outs[2] && outs[3];
  }
  int axis0 = 0;
  cmx_array flat = cmx__reshape(a, &n, 1, s);
  cmx_array order = cmx__argsort(flat, &axis0, s);
  cmx_array sorted = cmx__take(flat, order, &axis0, s);
  int64_t zero = 0, one = 1, nm1 = n - 1, nn = n;
  cmx_array head = cmx__full(&one, 1, cmx__scalar(1, CMX_BOOL), CMX_BOOL, s);
  cmx_array neq = cmx__not_equal(cmx__slice(sorted, &one, &nn, &one, s),
                                 cmx__slice(sorted, &zero, &nm1, &one, s), s);
  cmx_array parts[2] = {head, neq};
  cmx_array first = cmx__concatenate(parts, 2, 0, s);
  cmx_array rank = cmx__subtract(
      cmx__cumsum(cmx__astype(first, CMX_INT32, s), &axis0, false, true, s),
      cmx__scalar(1, CMX_INT32), s);
  /* start[j] for j <= size: slot j gets the positions of the first
   * elements of run j; every other element goes to slot size + 1. */
  int64_t ks = k + 2;
  cmx_array pos = flat_positions(n, CMX_INT32, s);
  cmx_array slot = cmx__where(
      cmx__logical_and(
          first, cmx__less_equal(rank, cmx__scalar((double)k, CMX_INT32), s),
          s),
      rank, cmx__scalar((double)(k + 1), CMX_INT32), s);
  cmx_array start = cmx__scatter_axis(
      "unique",
      cmx__full(&ks, 1, cmx__scalar((double)n, CMX_INT32), CMX_INT32, s), slot,
      pos, &axis0, CMX__SCATTER_MIN, s);
  int64_t kk = k, k1 = k + 1;
  cmx_array starts = cmx__slice(start, &zero, &kk, &one, s);
  cmx_array ends = cmx__slice(start, &one, &k1, &one, s);
  cmx_array nuniq = cmx__add(cmx__slice(rank, &nm1, &nn, &one, s),
                             cmx__scalar(1, CMX_INT32), s);
  cmx_array valid = cmx__less(flat_positions(k, CMX_INT32, s), nuniq, s);
  cmx_array at = cmx__where(valid, starts, cmx__scalar(0, CMX_INT32), s);
  cmx_array index = cmx__take(order, at, &axis0, s);
  cmx_array values = cmx__take(flat, index, &axis0, s);
  if (fill) values = cmx__where(valid, values, fill, s);
  cmx_array counts = cmx__where(valid, cmx__subtract(ends, starts, s),
                                cmx__scalar(0, CMX_INT32), s);
  /* The inverse: each sorted element's run, put back in input order. */
  cmx_array clamped = cmx__minimum(
      rank, cmx__scalar((double)(k > 0 ? k - 1 : 0), CMX_INT32), s);
  cmx_array inverse = cmx__put_along_axis(cmx__zeros(&nn, 1, CMX_INT32, s),
                                          order, clamped, &axis0, s);
  outs[0] = values;
  outs[1] = cmx__astype(index, CMX_UINT32, s);
  outs[2] =
      cmx__reshape(cmx__astype(inverse, CMX_UINT32, s), a->dims, a->ndim, s);
  outs[3] = counts;
  return outs[0] && outs[1] && outs[2] && outs[3];
}

cmx_status cmx_unique(cmx_array* outs, cmx_array a, int64_t size,
                      cmx_array fill, cmx_stream s) {
  if (!outs)
    return cmx__error(CMX_ERR_VALUE, "[unique] output pointer is NULL");
  for (int i = 0; i < 4; i++) outs[i] = NULL;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  bool ok = cmx__unique(outs, a, size, fill, s);
  return cmx__scope_exit_multi(mark, ok, outs, 4);
}
