/* CPU kernel of CrossEntropy (contract in primitives/fast.h): each row is
 * read into a float32 buffer, then its max, its sum of exponentials
 * (vectorised exp, partial sums in float lanes, added in double) and the
 * target's logit give logsumexp - logit. As LogSumExp's kernel, a row
 * whose max is infinite or NaN has logsumexp = max. Rows are spread over
 * the thread pool. */
#include <math.h>
#include <stdlib.h>

#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */
#include "backend/cpu/fast.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vmath.h"

typedef struct {
  cmx_array x, t, o;
  int64_t V;
  _Atomic int failed;
  _Atomic int64_t bad_row; /* the first row with a target out of range */
} ce_job;

CMX__SIMD_CLONES
static float row_lse(const float* v, int64_t n) {
  float m = -INFINITY;
  for (int64_t i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
  for (int64_t i = 0; i < n; i++)
    if (v[i] != v[i]) return v[i];
  if (isinf(m)) return m;
  double total = 0;
  for (int64_t i = 0; i < n; i += 256) {
    int64_t e = i + 256 < n ? i + 256 : n;
    float acc[8] = {0};
    int64_t j = i;
    for (; j + 8 <= e; j += 8)
      for (int l = 0; l < 8; l++) acc[l] += cmx__vexpf(v[j + l] - m);
    for (; j < e; j++) acc[0] += cmx__vexpf(v[j] - m);
    for (int l = 0; l < 8; l++) total += acc[l];
  }
  return m + (float)log(total);
}

static void ce_chunk(void* ctx, int64_t begin, int64_t end) {
  ce_job* j = ctx;
  int64_t V = j->V, ls = CMX__STRIDES(j->x)[j->x->ndim - 1];
  cmx_dtype dt = j->x->dtype;
  size_t es = cmx_dtype_size(dt);
  float* v = cmx__fast_buf((size_t)V, &j->failed);
  if (!v) return;
  const char* src = cmx__node_ptr(j->x);
  const int64_t* tg = cmx__node_ptr(j->t);
  float* dst = cmx__node_ptr(j->o);
  for (int64_t r = begin; r < end; r++) {
    int64_t t = tg[r];
    if (t < 0) t += V;
    if (t < 0 || t >= V) {
      int64_t prev = atomic_load(&j->bad_row);
      while ((prev < 0 || r < prev) &&
             !atomic_compare_exchange_weak(&j->bad_row, &prev, r)) {
      }
      dst[r] = NAN;
      continue;
    }
    cmx__fast_load(src + cmx__fast_row_offset(j->x, r) * (int64_t)es, dt, ls, V,
                   v);
    dst[r] = row_lse(v, V) - v[t];
  }
  free(v);
}

CMX__KERNEL(cmx__cpu_cross_entropy) {
  (void)nin, (void)nout, (void)p;
  ce_job j = {.x = in[0], .t = in[1], .o = out[0]};
  atomic_init(&j.failed, 0);
  atomic_init(&j.bad_row, -1);
  if (!cmx__fast_dtype_ok(j.x->dtype) || j.t->dtype != CMX_INT64)
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[cross_entropy] unsupported dtype %s",
                            cmx_dtype_name(j.x->dtype));
  cmx_status st = cmx_kernel_alloc(j.o);
  if (st != CMX_OK || j.o->size == 0) return st;
  j.V = j.x->dims[j.x->ndim - 1];
  cmx__parallel_for(j.o->size, 16384 / (j.V + 1) + 1, ce_chunk, &j);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[cross_entropy] out of memory");
  int64_t bad = atomic_load(&j.bad_row);
  if (bad >= 0)
    return cmx_kernel_error(
        CMX_ERR_INDEX,
        "[cross_entropy] Index %lld is out of bounds for axis %d with size "
        "%lld.",
        (long long)((const int64_t*)cmx__node_ptr(j.t))[bad], j.x->ndim - 1,
        (long long)j.V);
  return CMX_OK;
}
