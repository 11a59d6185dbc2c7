/* The CPU kernel of ScaledDotProductAttention (contract in
 * primitives/fast.h). Work is split into tasks of (batch, kv head, block
 * of query rows): the query heads that share a kv head run together, so
 * that head's keys and values are converted to float32 once per task
 * (float32 keys and values with unit last stride are read in place). Each
 * query row computes its scores, their maximum, then the softmax-weighted
 * sum of value rows, all in float32. */
#include <float.h>
#include <stdlib.h>

#include "backend/cpu/fast.h"
#include "backend/cpu/kernels.h"
#include "primitives/fast.h"

typedef struct {
  cmx_array q, k, v, mask, sinks, o;
  const cmx__fast_params* p;
  int64_t B, H, Hk, L, S, D, Dv, R; /* R = H / Hk */
  int64_t rows_per_task, ntasks_per_head;
  bool kv_direct; /* float32 k and v with unit last stride */
  _Atomic int failed;
} sdpa_job;

/* One query row: scores into sc (S floats), then out (Dv floats). */
static void sdpa_row(const sdpa_job* j, const float* qr, const float* kf,
                     int64_t kst, const float* vf, int64_t vst, int64_t b,
                     int64_t h, int64_t i, float* sc, float* mrow, float* acc) {
  int64_t S = j->S, D = j->D, Dv = j->Dv, jend = S;
  const cmx__fast_params* p = j->p;
  bool all_masked = false;
  if (p->mask == CMX__SDPA_MASK_CAUSAL) {
    jend = i + S - j->L + 1;
    if (jend > S) jend = S;
    if (jend <= 0) {
      jend = 0;
      all_masked = !p->has_sinks;
    }
  }
  const int64_t* ms = j->mask ? CMX__STRIDES(j->mask) : NULL;
  int64_t moff = ms ? b * ms[0] + h * ms[1] + i * ms[2] : 0;
  if (p->mask == CMX__SDPA_MASK_BOOL) {
    /* masked keys get the lowest score without their dot product (a
     * decoding step's mask hides the cache past its position) */
    const uint8_t* m = (const uint8_t*)cmx__node_ptr(j->mask) + moff;
    for (int64_t t = 0; t < jend; t++)
      sc[t] = m[t * ms[3]] ? cmx__fast_dot(qr, kf + t * kst, D) : -FLT_MAX;
  } else {
    for (int64_t t = 0; t < jend; t++)
      sc[t] = cmx__fast_dot(qr, kf + t * kst, D);
  }
  if (all_masked) { /* every score is the lowest float: a uniform average */
    jend = S;
    for (int64_t t = 0; t < S; t++) sc[t] = -FLT_MAX;
  }
  if (p->mask == CMX__SDPA_MASK_ADD) {
    size_t es = cmx_dtype_size(j->mask->dtype);
    cmx__fast_load((const char*)cmx__node_ptr(j->mask) + moff * (int64_t)es,
                   j->mask->dtype, ms[3], S, mrow);
    for (int64_t t = 0; t < S; t++) sc[t] += mrow[t];
  }
  float mx = -INFINITY, sink = 0;
  if (p->has_sinks) {
    cmx__fast_load((const char*)cmx__node_ptr(j->sinks) +
                       h * (int64_t)cmx_dtype_size(j->sinks->dtype),
                   j->sinks->dtype, 1, 1, &sink);
    mx = sink;
  }
  for (int64_t t = 0; t < jend; t++) mx = sc[t] > mx ? sc[t] : mx;
  float sum = p->has_sinks ? expf(sink - mx) : 0.f;
  for (int64_t d = 0; d < Dv; d++) acc[d] = 0;
  for (int64_t t = 0; t < jend; t++) {
    float e = expf(sc[t] - mx);
    sum += e;
    if (e != 0.f) cmx__fast_axpy(e, vf + t * vst, acc, Dv);
  }
  float inv = 1.0f / sum;
  for (int64_t d = 0; d < Dv; d++) acc[d] *= inv;
}

/* The S rows of (b, kv head hk) of a as float32: in place, or converted
 * into buf; *rst is the row stride. */
static const float* kv_rows(const sdpa_job* j, cmx_array a, int64_t b,
                            int64_t hk, float* buf, int64_t* rst) {
  const int64_t* st = CMX__STRIDES(a);
  size_t es = cmx_dtype_size(a->dtype);
  const char* base =
      (const char*)cmx__node_ptr(a) + (b * st[0] + hk * st[1]) * (int64_t)es;
  if (j->kv_direct) {
    *rst = st[2];
    return (const float*)base;
  }
  int64_t w = a->dims[3];
  for (int64_t t = 0; t < j->S; t++)
    cmx__fast_load(base + t * st[2] * (int64_t)es, a->dtype, st[3], w,
                   buf + t * w);
  *rst = w;
  return buf;
}

static void sdpa_chunk(void* ctx, int64_t begin, int64_t end) {
  sdpa_job* j = ctx;
  int64_t S = j->S, D = j->D, Dv = j->Dv;
  size_t nf = (size_t)(2 * S + D + Dv);
  if (!j->kv_direct) nf += (size_t)(S * (D + Dv));
  float* buf = cmx__fast_buf(nf, &j->failed);
  if (!buf) return;
  float *sc = buf, *mrow = sc + S, *qr = mrow + S, *acc = qr + D,
        *kb = acc + Dv, *vb = kb + S * D;
  cmx_dtype qt = j->q->dtype, ot = j->o->dtype;
  size_t qes = cmx_dtype_size(qt), oes = cmx_dtype_size(ot);
  const int64_t* qs = CMX__STRIDES(j->q);
  for (int64_t task = begin; task < end; task++) {
    int64_t head = task / j->ntasks_per_head; /* b * Hk + hk */
    int64_t blk = task % j->ntasks_per_head;
    int64_t b = head / j->Hk, hk = head % j->Hk;
    int64_t r0 = blk * j->rows_per_task, r1 = r0 + j->rows_per_task;
    if (r1 > j->R * j->L) r1 = j->R * j->L;
    int64_t kst, vst;
    const float* kf = kv_rows(j, j->k, b, hk, kb, &kst);
    const float* vf = kv_rows(j, j->v, b, hk, vb, &vst);
    for (int64_t r = r0; r < r1; r++) {
      int64_t h = hk * j->R + r / j->L, i = r % j->L;
      cmx__fast_load((const char*)cmx__node_ptr(j->q) +
                         (b * qs[0] + h * qs[1] + i * qs[2]) * (int64_t)qes,
                     qt, qs[3], D, qr);
      for (int64_t d = 0; d < D; d++) qr[d] *= j->p->scale;
      sdpa_row(j, qr, kf, kst, vf, vst, b, h, i, sc, mrow, acc);
      cmx__fast_store((char*)cmx__node_ptr(j->o) +
                          (((b * j->H + h) * j->L) + i) * Dv * (int64_t)oes,
                      ot, Dv, acc);
    }
  }
  free(buf);
}

CMX__KERNEL(cmx__cpu_sdpa) {
  (void)nout;
  sdpa_job j = {.q = in[0], .k = in[1], .v = in[2], .o = out[0]};
  j.p = cmx_primitive_params(p);
  int n = 3;
  if (j.p->mask == CMX__SDPA_MASK_BOOL || j.p->mask == CMX__SDPA_MASK_ADD)
    j.mask = in[n++];
  if (j.p->has_sinks) j.sinks = in[n++];
  if (n != nin || !cmx__fast_dtype_ok(j.q->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[scaled_dot_product_attention] unsupported "
                            "dtype %s",
                            cmx_dtype_name(j.q->dtype));
  cmx_status st = cmx_kernel_alloc(j.o);
  if (st != CMX_OK || j.o->size == 0) return st;
  j.B = j.q->dims[0];
  j.H = j.q->dims[1];
  j.L = j.q->dims[2];
  j.D = j.q->dims[3];
  j.Hk = j.k->dims[1];
  j.S = j.k->dims[2];
  j.Dv = j.v->dims[3];
  j.R = j.H / j.Hk;
  j.kv_direct = j.k->dtype == CMX_FLOAT32 && CMX__STRIDES(j.k)[3] == 1 &&
                CMX__STRIDES(j.v)[3] == 1;
  /* Enough tasks to keep the pool busy, each at least a few rows. */
  int64_t heads = j.B * j.Hk, rows = j.R * j.L;
  int64_t want = 4 * (int64_t)cmx__pool_threads();
  int64_t per = heads >= want ? 1 : (want + heads - 1) / heads;
  if (per > rows) per = rows;
  j.rows_per_task = (rows + per - 1) / per;
  j.ntasks_per_head = (rows + j.rows_per_task - 1) / j.rows_per_task;
  cmx__parallel_for(heads * j.ntasks_per_head, 1, sdpa_chunk, &j);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY,
                            "[scaled_dot_product_attention] out of memory");
  return CMX_OK;
}
