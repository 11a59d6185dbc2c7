/* The CPU kernel of the FFT primitive (contract in primitives/fft.h): one
 * axis at a time, every line of that axis through the engine of
 * fft_plan.c, lines split over cmx's pool. The first axis reads the input
 * and writes the output; later axes work in place on the output (c2r: on a
 * complex copy of the input, then the real axis writes the output). */
#include "primitives/fft.h"

#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/fft_plan.h"
#include "backend/cpu/kernels.h"

typedef enum { C2C, C2C_INV, R2C, C2R } line_kind;

typedef struct axis_job {
  line_kind k;
  const cmx__fft_plan* plan;
  const float* src;
  float* dst;
  int64_t inner;      /* elements after the axis (= the line stride) */
  int64_t slen, dlen; /* the axis' length in src and dst */
  int sw, dw;         /* floats per element in src and dst */
  float scale;
  bool par; /* one long line: the engine splits it over the pool */
  int failed;
} axis_job;

static void axis_chunk(void* ctx, int64_t begin, int64_t end) {
  axis_job* j = ctx;
  float* work = malloc((size_t)cmx__fft_work_floats(j->plan) * sizeof(float));
  if (!work) {
    j->failed = 1;
    return;
  }
  for (int64_t l = begin; l < end; l++) {
    int64_t outer = l / j->inner, in = l % j->inner;
    const float* s = j->src + (outer * j->slen * j->inner + in) * j->sw;
    float* d = j->dst + (outer * j->dlen * j->inner + in) * j->dw;
    switch (j->k) {
      case C2C:
      case C2C_INV:
        cmx__fft_c2c(j->plan, s, j->inner, d, j->inner, j->k == C2C_INV,
                     j->scale, work, j->par);
        break;
      case R2C:
        cmx__fft_r2c(j->plan, s, j->inner, d, j->inner, j->scale, work, j->par);
        break;
      case C2R:
        cmx__fft_c2r(j->plan, s, j->inner, d, j->inner, j->scale, work, j->par);
        break;
    }
  }
  free(work);
}

/* Transforms every line along axis ax of src (dims sd) into dst (dims dd;
 * they differ at ax only). n is the transform length. */
static cmx_status run_axis(line_kind k, const float* src, const int64_t* sd,
                           float* dst, const int64_t* dd, int ndim, int ax,
                           int64_t n, float scale) {
  axis_job j = {.k = k,
                .src = src,
                .dst = dst,
                .slen = sd[ax],
                .dlen = dd[ax],
                .scale = scale};
  j.plan = cmx__fft_plan_get(n, k == R2C || k == C2R);
  if (!j.plan) return cmx_kernel_error(CMX_ERR_MEMORY, "[fft] out of memory.");
  j.sw = k == R2C ? 1 : 2;
  j.dw = k == C2R ? 1 : 2;
  int64_t lines = 1;
  j.inner = 1;
  for (int d = 0; d < ndim; d++)
    if (d != ax) lines *= dd[d];
  for (int d = ax + 1; d < ndim; d++) j.inner *= dd[d];
  if (lines == 0) return CMX_OK;
  j.par = lines == 1 && n >= 32768 && cmx__pool_threads() > 1;
  cmx__parallel_for(lines, 1 + 32768 / n, axis_chunk, &j);
  if (j.failed) return cmx_kernel_error(CMX_ERR_MEMORY, "[fft] out of memory.");
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_fft) {
  (void)nin, (void)nout;
  const cmx__fft_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  if (!cmx_kernel_is_contiguous(a))
    return cmx_kernel_error(CMX_ERR_VALUE, "[fft] expects a contiguous input.");
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  if (o->size == 0) return CMX_OK;
  int nd = o->ndim, last = q->axes[q->naxes - 1];
  const float* src = cmx_kernel_data(a);
  float* dst = cmx_kernel_data(o);
  float sc = (float)q->scale;
  cmx_status st = CMX_OK;
  if (!q->real) {
    for (int i = 0; st == CMX_OK && i < q->naxes; i++) {
      int ax = q->axes[i];
      st = run_axis(q->inverse ? C2C_INV : C2C, i ? dst : src, o->dims, dst,
                    o->dims, nd, ax, o->dims[ax], i ? 1.f : sc);
    }
    return st;
  }
  if (!q->inverse) {
    st = run_axis(R2C, src, a->dims, dst, o->dims, nd, last, a->dims[last], sc);
    for (int i = 0; st == CMX_OK && i + 1 < q->naxes; i++)
      st = run_axis(C2C, dst, o->dims, dst, o->dims, nd, q->axes[i],
                    o->dims[q->axes[i]], 1.f);
    return st;
  }
  float* tmp = NULL;
  if (q->naxes > 1) {
    tmp = malloc((size_t)a->size * 2 * sizeof(float));
    if (!tmp) return cmx_kernel_error(CMX_ERR_MEMORY, "[fft] out of memory.");
    for (int i = 0; st == CMX_OK && i + 1 < q->naxes; i++)
      st = run_axis(C2C_INV, i ? tmp : src, a->dims, tmp, a->dims, nd,
                    q->axes[i], a->dims[q->axes[i]], 1.f);
  }
  if (st == CMX_OK)
    st = run_axis(C2R, tmp ? tmp : src, a->dims, dst, o->dims, nd, last,
                  o->dims[last], sc);
  free(tmp);
  return st;
}
