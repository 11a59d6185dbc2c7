/* The CPU kernel of ScaledDotProductAttention (contract in
 * primitives/fast.h). Work is split into tasks of (batch, kv head, block
 * of query rows): the query heads that share a kv head run together, so
 * that head's keys and values are converted to float32 once per task
 * (float32 keys and values with unit last stride are read in place). Each
 * query row computes its scores, their maximum, then the softmax-weighted
 * sum of value rows, all in float32. Decoding (one query position, float32
 * keys and values read in place, head dims a multiple of 16) takes an
 * AVX-512 path where the CPU has it: the query rows of a task against each
 * key and value row, loaded once for them all; each dot product sums its
 * 16 lanes as a tree (the generic path: in lane order). */
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
  bool dec;       /* the decoding path (sdpa_dec_rows) takes every task */
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

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SDPA_AVX512 __attribute__((target("avx512f,avx512dq,fma")))
enum { SDPA_DEC_ROWS = 8, SDPA_DEC_D = 256 };

/* The decoding path's rows: the nr (<= SDPA_DEC_ROWS) scaled query rows
 * q (nr x D, D a multiple of 16 up to SDPA_DEC_D) of one kv head against
 * its S keys and values (rows kf + t * kst, vf + t * vst), each row's
 * mask bytes m[r] (stride mst; NULL: no mask); scores into sc (nr x S),
 * outputs into out (nr x D). A key masked for every row is skipped; a
 * masked score is the lowest float, as in sdpa_row. */
SDPA_AVX512 static void sdpa_dec_512(const float* q, int nr, int64_t D,
                                     const float* kf, int64_t kst,
                                     const float* vf, int64_t vst, int64_t S,
                                     const uint8_t* const* m, int64_t mst,
                                     float* sc, float* out) {
  int nc = (int)(D / 16);
  for (int64_t t = 0; t < S; t++) {
    bool ok[SDPA_DEC_ROWS], any = false;
    for (int r = 0; r < nr; r++) any |= ok[r] = !m || m[r][t * mst];
    if (!any) {
      for (int r = 0; r < nr; r++) sc[r * S + t] = -FLT_MAX;
      continue;
    }
    __m512 k[SDPA_DEC_D / 16];
    for (int c = 0; c < nc; c++) k[c] = _mm512_loadu_ps(kf + t * kst + 16 * c);
    for (int r = 0; r < nr; r++) {
      __m512 a = _mm512_setzero_ps();
      for (int c = 0; c < nc; c++)
        a = _mm512_fmadd_ps(_mm512_loadu_ps(q + r * D + 16 * c), k[c], a);
      sc[r * S + t] = ok[r] ? _mm512_reduce_add_ps(a) : -FLT_MAX;
    }
  }
  for (int r = 0; r < nr; r++) {
    float* s = sc + r * S;
    float mx = -INFINITY, sum = 0;
    for (int64_t t = 0; t < S; t++) mx = s[t] > mx ? s[t] : mx;
    for (int64_t t = 0; t < S; t++) {
      /* a masked score's exponential is 0 unless every score is masked */
      s[t] = s[t] == -FLT_MAX && mx != -FLT_MAX ? 0.f : expf(s[t] - mx);
      sum += s[t];
    }
    /* the weighted sum of the value rows, 64 features at a time in
     * registers (in key order, as sdpa_row's axpys) */
    __m512 inv = _mm512_set1_ps(1.0f / sum);
    for (int c0 = 0; c0 < nc; c0 += 4) {
      int n4 = nc - c0 < 4 ? nc - c0 : 4;
      __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps(), _mm512_setzero_ps()};
      for (int64_t t = 0; t < S; t++) {
        if (s[t] == 0.f) continue;
        __m512 e = _mm512_set1_ps(s[t]);
        const float* v = vf + t * vst + 16 * c0;
        for (int c = 0; c < n4; c++)
          a[c] = _mm512_fmadd_ps(e, _mm512_loadu_ps(v + 16 * c), a[c]);
      }
      for (int c = 0; c < n4; c++)
        _mm512_storeu_ps(out + r * D + 16 * (c0 + c), _mm512_mul_ps(a[c], inv));
    }
  }
}

static bool sdpa_dec_cpu(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq");
}

/* The decoding path over rows [r0, r1) of kv head (b, hk). */
static void sdpa_dec_rows(const sdpa_job* j, int64_t b, int64_t hk, int64_t r0,
                          int64_t r1, const float* kf, int64_t kst,
                          const float* vf, int64_t vst, float* buf) {
  int64_t D = j->D, S = j->S;
  int nr = (int)(r1 - r0);
  float *q = buf, *out = q + SDPA_DEC_ROWS * D, *sc = out + SDPA_DEC_ROWS * D;
  const uint8_t* m[SDPA_DEC_ROWS];
  const int64_t* ms = j->mask ? CMX__STRIDES(j->mask) : NULL;
  const int64_t* qs = CMX__STRIDES(j->q);
  size_t qes = cmx_dtype_size(j->q->dtype), oes = cmx_dtype_size(j->o->dtype);
  for (int r = 0; r < nr; r++) {
    int64_t h = hk * j->R + r0 + r; /* L == 1: row r is head h, query 0 */
    cmx__fast_load((const char*)cmx__node_ptr(j->q) +
                       (b * qs[0] + h * qs[1]) * (int64_t)qes,
                   j->q->dtype, qs[3], D, q + r * D);
    for (int64_t d = 0; d < D; d++) q[r * D + d] *= j->p->scale;
    m[r] = ms ? (const uint8_t*)cmx__node_ptr(j->mask) + b * ms[0] + h * ms[1]
              : NULL;
  }
  sdpa_dec_512(q, nr, D, kf, kst, vf, vst, S, ms ? m : NULL, ms ? ms[3] : 0, sc,
               out);
  for (int r = 0; r < nr; r++)
    cmx__fast_store((char*)cmx__node_ptr(j->o) +
                        (b * j->H + hk * j->R + r0 + r) * D * (int64_t)oes,
                    j->o->dtype, D, out + r * D);
}
#else
enum { SDPA_DEC_ROWS = 8, SDPA_DEC_D = 256 };
static bool sdpa_dec_cpu(void) {
  return false;
}
static void sdpa_dec_rows(const sdpa_job* j, int64_t b, int64_t hk, int64_t r0,
                          int64_t r1, const float* kf, int64_t kst,
                          const float* vf, int64_t vst, float* buf) {
  (void)j, (void)b, (void)hk, (void)r0, (void)r1, (void)kf, (void)kst, (void)vf,
      (void)vst, (void)buf;
}
#endif

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
  if (j->dec) nf = (size_t)(SDPA_DEC_ROWS * (2 * D + S));
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
    if (j->dec) {
      sdpa_dec_rows(j, b, hk, r0, r1, kf, kst, vf, vst, buf);
      continue;
    }
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
  j.dec = j.kv_direct && j.L == 1 && j.S > 0 && j.D == j.Dv && j.D % 16 == 0 &&
          j.D <= SDPA_DEC_D && j.rows_per_task <= SDPA_DEC_ROWS &&
          !j.p->has_sinks && j.p->mask != CMX__SDPA_MASK_ADD && sdpa_dec_cpu();
  cmx__parallel_for(heads * j.ntasks_per_head, 1, sdpa_chunk, &j);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY,
                            "[scaled_dot_product_attention] out of memory");
  return CMX_OK;
}
