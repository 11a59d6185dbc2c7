/* CPU kernels of RMSNorm, LayerNorm, AddRMSNorm and RoPE (contracts in
 * primitives/fast.h), and the row helpers of backend/cpu/fast.h. Rows are
 * read into float32 buffers (any stride, float16/bfloat16 converted),
 * computed there and stored once; rows are spread over the thread pool. */
#include "backend/cpu/fast.h"

#include <stdlib.h>

#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */
#include "backend/cpu/kernels.h"
#include "primitives/fast.h"

/* ---------------- helpers ---------------- */

int64_t cmx__fast_outer_offset(cmx_array a, int nd, int64_t r) {
  const int64_t* st = CMX__STRIDES(a);
  int64_t off = 0;
  for (int d = nd - 1; d >= 0 && r; d--) {
    off += (r % a->dims[d]) * st[d];
    r /= a->dims[d];
  }
  return off;
}

CMX__SIMD_CLONES
void cmx__fast_load(const void* src, cmx_dtype dt, int64_t st, int64_t n,
                    float* dst) {
  if (dt == CMX_FLOAT32) {
    const float* s = src;
    if (st == 1)
      memcpy(dst, s, (size_t)n * sizeof *dst);
    else
      for (int64_t i = 0; i < n; i++) dst[i] = s[i * st];
  } else if (dt == CMX_FLOAT16) {
    const uint16_t* s = src;
    if (st == 1)
      for (int64_t i = 0; i < n; i++) dst[i] = cmx__h2f(s[i]);
    else
      for (int64_t i = 0; i < n; i++) dst[i] = cmx__h2f(s[i * st]);
  } else {
    const uint16_t* s = src;
    if (st == 1)
      for (int64_t i = 0; i < n; i++) dst[i] = cmx__bf2f(s[i]);
    else
      for (int64_t i = 0; i < n; i++) dst[i] = cmx__bf2f(s[i * st]);
  }
}

CMX__SIMD_CLONES
void cmx__fast_store(void* dst, cmx_dtype dt, int64_t n, const float* src) {
  if (dt == CMX_FLOAT32) {
    memcpy(dst, src, (size_t)n * sizeof *src);
  } else if (dt == CMX_FLOAT16) {
    uint16_t* d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2h(src[i]);
  } else {
    uint16_t* d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2bf(src[i]);
  }
}

/* Eight independent partial sums, so the loop vectorises without
 * reassociating float math. */
CMX__SIMD_CLONES
float cmx__fast_dot(const float* x, const float* y, int64_t n) {
  float acc[16] = {0};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; l++) acc[l] += x[i + l] * y[i + l];
  float t = 0;
  for (; i < n; i++) t += x[i] * y[i];
  for (int l = 0; l < 16; l++) t += acc[l];
  return t;
}

CMX__SIMD_CLONES
void cmx__fast_axpy(float a, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

/* ---------------- RMSNorm, LayerNorm ---------------- */

typedef struct {
  cmx_array x, w, b, o;
  int64_t D;
  float eps;
  bool layer;
  float *wf, *bf; /* weight, bias as float32 (NULL: none) */
  _Atomic int failed;
} norm_job;

CMX__SIMD_CLONES
static void norm_row(float* v, int64_t D, const norm_job* j) {
  float m = 0;
  if (j->layer) {
    float acc[16] = {0}, t = 0;
    int64_t i = 0;
    for (; i + 16 <= D; i += 16)
      for (int l = 0; l < 16; l++) acc[l] += v[i + l];
    for (; i < D; i++) t += v[i];
    for (int l = 0; l < 16; l++) t += acc[l];
    m = t / (float)D;
    for (i = 0; i < D; i++) v[i] -= m;
  }
  float r = 1.0f / sqrtf(cmx__fast_dot(v, v, D) / (float)D + j->eps);
  if (j->wf && j->bf)
    for (int64_t i = 0; i < D; i++) v[i] = v[i] * r * j->wf[i] + j->bf[i];
  else if (j->wf)
    for (int64_t i = 0; i < D; i++) v[i] = v[i] * r * j->wf[i];
  else if (j->bf)
    for (int64_t i = 0; i < D; i++) v[i] = v[i] * r + j->bf[i];
  else
    for (int64_t i = 0; i < D; i++) v[i] *= r;
}

static void norm_chunk(void* ctx, int64_t begin, int64_t end) {
  norm_job* j = ctx;
  int64_t D = j->D, ls = CMX__STRIDES(j->x)[j->x->ndim - 1];
  cmx_dtype dt = j->x->dtype;
  size_t es = cmx_dtype_size(dt);
  float* v = cmx__fast_buf((size_t)D, &j->failed);
  if (!v) return;
  const char* src = cmx__node_ptr(j->x);
  char* dst = cmx__node_ptr(j->o);
  for (int64_t r = begin; r < end; r++) {
    cmx__fast_load(src + cmx__fast_row_offset(j->x, r) * (int64_t)es, dt, ls, D,
                   v);
    norm_row(v, D, j);
    cmx__fast_store(dst + r * D * (int64_t)es, dt, D, v);
  }
  free(v);
}

/* A 1-d input as a float32 buffer (malloc'ed; NULL on failure). */
static float* vec_f32(cmx_array a) {
  int64_t n = a->dims[0];
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (v) cmx__fast_load(cmx__node_ptr(a), a->dtype, CMX__STRIDES(a)[0], n, v);
  return v;
}

static cmx_status norm_run(const cmx_primitive* p, const cmx_array* in,
                           const cmx_array* out, bool layer) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  const char* op = layer ? "layer_norm" : "rms_norm";
  norm_job j = {.x = in[0], .o = out[0], .eps = q->eps, .layer = layer};
  if (!cmx__fast_dtype_ok(j.x->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(j.x->dtype));
  cmx_status st = cmx_kernel_alloc(j.o);
  if (st != CMX_OK || j.o->size == 0) return st;
  j.D = j.x->dims[j.x->ndim - 1];
  int i = 1;
  bool oom = false;
  if (q->has_weight) oom |= !(j.wf = vec_f32(in[i++]));
  if (q->has_bias) oom |= !(j.bf = vec_f32(in[i++]));
  if (!oom) {
    int64_t rows = j.o->size / j.D, grain = 16384 / j.D + 1;
    cmx__parallel_for(rows, grain, norm_chunk, &j);
  }
  free(j.wf);
  free(j.bf);
  if (oom || atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_rms_norm) {
  (void)nin, (void)nout;
  return norm_run(p, in, out, false);
}

CMX__KERNEL(cmx__cpu_layer_norm) {
  (void)nin, (void)nout;
  return norm_run(p, in, out, true);
}

/* AddRMSNorm: per row, h = x + r stored in the dtype (float32 sums
 * rounded once, as Add's row functions), then that stored h read back and
 * normed by norm_row, so h and y are bit for bit Add's and RMSNorm's. */
typedef struct {
  norm_job n; /* x, w, o (y), D, eps, wf */
  cmx_array r, h;
} add_norm_job;

static void add_norm_chunk(void* ctx, int64_t begin, int64_t end) {
  add_norm_job* j = ctx;
  cmx_array x = j->n.x, r = j->r;
  int64_t D = j->n.D, lx = CMX__STRIDES(x)[x->ndim - 1],
          lr = CMX__STRIDES(r)[r->ndim - 1];
  cmx_dtype dt = x->dtype;
  size_t es = cmx_dtype_size(dt);
  float* v = cmx__fast_buf(2 * (size_t)D, &j->n.failed);
  if (!v) return;
  float* u = v + D;
  const char *px = cmx__node_ptr(x), *pr = cmx__node_ptr(r);
  char *ph = cmx__node_ptr(j->h), *py = cmx__node_ptr(j->n.o);
  for (int64_t i = begin; i < end; i++) {
    cmx__fast_load(px + cmx__fast_row_offset(x, i) * (int64_t)es, dt, lx, D, v);
    cmx__fast_load(pr + cmx__fast_row_offset(r, i) * (int64_t)es, dt, lr, D, u);
    for (int64_t k = 0; k < D; k++) v[k] += u[k];
    char* hrow = ph + i * D * (int64_t)es;
    cmx__fast_store(hrow, dt, D, v);
    /* the norm reads the rounded h, as RMSNorm would read Add's output */
    if (dt != CMX_FLOAT32) cmx__fast_load(hrow, dt, 1, D, v);
    norm_row(v, D, &j->n);
    cmx__fast_store(py + i * D * (int64_t)es, dt, D, v);
  }
  free(v);
}

CMX__KERNEL(cmx__cpu_add_rms_norm) {
  (void)nin, (void)nout;
  const cmx__fast_params* q = cmx_primitive_params(p);
  add_norm_job j = {
      .n = {.x = in[0], .o = out[1], .eps = q->eps}, .r = in[1], .h = out[0]};
  cmx_dtype dt = j.n.x->dtype;
  if (!cmx__fast_dtype_ok(dt) || j.r->dtype != dt)
    return cmx_kernel_error(CMX_ERR_TYPE, "[add_rms_norm] unsupported dtype %s",
                            cmx_dtype_name(dt));
  cmx_status st = cmx_kernel_alloc(j.h);
  if (st == CMX_OK) st = cmx_kernel_alloc(j.n.o);
  if (st != CMX_OK || j.h->size == 0) return st;
  j.n.D = j.n.x->dims[j.n.x->ndim - 1];
  if (q->has_weight && !(j.n.wf = vec_f32(in[2])))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[add_rms_norm] out of memory");
  int64_t rows = j.h->size / j.n.D, grain = 16384 / j.n.D + 1;
  cmx__parallel_for(rows, grain, add_norm_chunk, &j);
  free(j.n.wf);
  if (atomic_load(&j.n.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[add_rms_norm] out of memory");
  return CMX_OK;
}

/* ---------------- RoPE ---------------- */

typedef struct {
  cmx_array x, o;
  const cmx__fast_params* q;
  int64_t L, D, h, per_b; /* rows per batch entry (x->dims[0]) */
  const int32_t* off;     /* offsets */
  bool off_vec;           /* one offset per batch entry */
  const float* inv;       /* h inverse frequencies */
  float* table;           /* scalar offset: cos, sin of (L, h) */
  _Atomic int failed;
} rope_job;

static void rope_angles(const rope_job* j, int64_t pos, float* c, float* s) {
  float p = (float)pos * j->q->scale;
  for (int64_t i = 0; i < j->h; i++) {
    float t = p * j->inv[i];
    c[i] = cosf(t);
    s[i] = sinf(t);
  }
}

static void rope_table_chunk(void* ctx, int64_t begin, int64_t end) {
  rope_job* j = ctx;
  for (int64_t l = begin; l < end; l++)
    rope_angles(j, (int64_t)j->off[0] + l, j->table + 2 * l * j->h,
                j->table + (2 * l + 1) * j->h);
}

CMX__SIMD_CLONES
static void rope_rotate(float* v, const float* c, const float* s, int64_t h,
                        bool traditional) {
  if (traditional) {
    for (int64_t i = 0; i < h; i++) {
      float a = v[2 * i], b = v[2 * i + 1];
      v[2 * i] = a * c[i] - b * s[i];
      v[2 * i + 1] = a * s[i] + b * c[i];
    }
  } else {
    float *x1 = v, *x2 = v + h;
    for (int64_t i = 0; i < h; i++) {
      float a = x1[i], b = x2[i];
      x1[i] = a * c[i] - b * s[i];
      x2[i] = a * s[i] + b * c[i];
    }
  }
}

static void rope_chunk(void* ctx, int64_t begin, int64_t end) {
  rope_job* j = ctx;
  int64_t D = j->D, h = j->h, ls = CMX__STRIDES(j->x)[j->x->ndim - 1];
  cmx_dtype dt = j->x->dtype;
  size_t es = cmx_dtype_size(dt);
  float* v = cmx__fast_buf((size_t)(D + 2 * h), &j->failed);
  if (!v) return;
  const char* src = cmx__node_ptr(j->x);
  char* dst = cmx__node_ptr(j->o);
  for (int64_t r = begin; r < end; r++) {
    int64_t l = r % j->L;
    const float *c, *s;
    if (j->off_vec) {
      rope_angles(j, (int64_t)j->off[r / j->per_b] + l, v + D, v + D + h);
      c = v + D;
      s = v + D + h;
    } else {
      c = j->table + 2 * l * h;
      s = c + h;
    }
    cmx__fast_load(src + cmx__fast_row_offset(j->x, r) * (int64_t)es, dt, ls, D,
                   v);
    rope_rotate(v, c, s, h, j->q->traditional);
    cmx__fast_store(dst + r * D * (int64_t)es, dt, D, v);
  }
  free(v);
}

/* RoPE of x into o (q's parameters, offsets off, freqs or NULL); op
 * names the primitive in errors. */
static cmx_status rope_run(const cmx__fast_params* q, cmx_array x,
                           cmx_array off, cmx_array freqs, cmx_array o,
                           const char* op) {
  rope_job j = {.x = x, .o = o, .q = q};
  if (!cmx__fast_dtype_ok(j.x->dtype))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", op,
                            cmx_dtype_name(j.x->dtype));
  cmx_status st = cmx_kernel_alloc(j.o);
  if (st != CMX_OK || j.o->size == 0) return st;
  int nd = j.x->ndim;
  j.L = j.x->dims[nd - 2];
  j.D = j.x->dims[nd - 1];
  j.h = j.q->dims / 2;
  j.per_b = j.o->size / (j.D * j.x->dims[0]);
  int64_t noff = off->size;
  int32_t* offs = malloc((size_t)noff * sizeof *offs);
  float* inv = malloc((size_t)(j.h ? j.h : 1) * sizeof *inv);
  if (!offs || !inv) {
    free(offs);
    free(inv);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  }
  const int32_t* os = cmx__node_ptr(off);
  for (int64_t i = 0; i < noff; i++)
    offs[i] = os[off->ndim ? i * CMX__STRIDES(off)[0] : 0];
  j.off = offs;
  j.off_vec = off->ndim == 1;
  if (j.q->has_freqs) {
    cmx__fast_load(cmx__node_ptr(freqs), CMX_FLOAT32, CMX__STRIDES(freqs)[0],
                   j.h, inv);
    for (int64_t i = 0; i < j.h; i++) inv[i] = 1.0f / inv[i];
  } else {
    /* as the composite: exp(i * (-2 log(base) / dims)) in float32 */
    float k = (float)(-2.0 * log((double)j.q->base) / (double)j.q->dims);
    for (int64_t i = 0; i < j.h; i++) inv[i] = expf((float)i * k);
  }
  j.inv = inv;
  if (!j.off_vec) {
    j.table = malloc((size_t)(2 * j.L * j.h + 1) * sizeof(float));
    if (j.table)
      cmx__parallel_for(j.L, 64, rope_table_chunk, &j);
    else
      atomic_store(&j.failed, 1);
  }
  if (!atomic_load(&j.failed)) {
    int64_t rows = j.o->size / j.D, grain = 16384 / j.D + 1;
    cmx__parallel_for(rows, grain, rope_chunk, &j);
  }
  free(j.table);
  free(offs);
  free(inv);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", op);
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_rope) {
  (void)nin, (void)nout;
  const cmx__fast_params* q = cmx_primitive_params(p);
  return rope_run(q, in[0], in[1], q->has_freqs ? in[2] : NULL, out[0], "rope");
}

/* RoPEMulti: {x_1 .. x_N, offset, [freqs]} -> N outputs, each RoPE's own
 * code on its x (so bit for bit RoPE's result), one after another. */
CMX__KERNEL(cmx__cpu_rope_multi) {
  const cmx__fast_params* q = cmx_primitive_params(p);
  if (nout < 1 || nin != nout + 1 + (q->has_freqs != 0))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[rope_multi] %d inputs for %d outputs", nin, nout);
  cmx_array off = in[nout], fr = q->has_freqs ? in[nout + 1] : NULL;
  for (int i = 0; i < nout; i++) {
    cmx_status st = rope_run(q, in[i], off, fr, out[i], "rope_multi");
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}
