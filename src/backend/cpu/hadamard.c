/* The CPU kernel of Hadamard: a fast Walsh-Hadamard transform of each row
 * times the small Hadamard matrix of its odd factor (see
 * primitives/hadamard.h), rows spread over the thread pool. */
#include "primitives/hadamard.h"

#include <math.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

typedef struct {
  cmx_array a, o;
  int64_t N, n; /* row length, power-of-two part */
  int m;
  const int8_t* h; /* m x m, NULL for m == 1 */
  bool transpose;
  double scale;
  int64_t* row_off;   /* element offset of each input row */
  _Atomic int failed; /* a chunk could not allocate its row buffer */
} had_job;

/* x (length m * n) := scale * (H_m (x) H_n) x, in type T. */
#define HAD_ROW(T, NAME)                                                  \
  static void NAME(T* x, const had_job* j, T* tmp) {                      \
    int64_t n = j->n;                                                     \
    for (int64_t b = 0; b < j->m; b++) {                                  \
      T* y = x + b * n;                                                   \
      for (int64_t h = 1; h < n; h <<= 1)                                 \
        for (int64_t i = 0; i < n; i += 2 * h)                            \
          for (int64_t k = i; k < i + h; k++) {                           \
            T u = y[k], v = y[k + h];                                     \
            y[k] = u + v;                                                 \
            y[k + h] = u - v;                                             \
          }                                                               \
    }                                                                     \
    if (j->m > 1) {                                                       \
      int m = j->m;                                                       \
      for (int64_t i = 0; i < n; i++) {                                   \
        for (int r = 0; r < m; r++) {                                     \
          T acc = 0;                                                      \
          for (int c = 0; c < m; c++) {                                   \
            int8_t hv = j->transpose ? j->h[c * m + r] : j->h[r * m + c]; \
            acc += hv > 0 ? x[c * n + i] : -x[c * n + i];                 \
          }                                                               \
          tmp[r] = acc;                                                   \
        }                                                                 \
        for (int r = 0; r < m; r++) x[r * n + i] = tmp[r];                \
      }                                                                   \
    }                                                                     \
    T sc = (T)j->scale;                                                   \
    for (int64_t i = 0; i < j->N; i++) x[i] *= sc;                        \
  }
HAD_ROW(float, had_row_f)
HAD_ROW(double, had_row_d)

static void had_chunk(void* ctx, int64_t begin, int64_t end) {
  const had_job* j = ctx;
  cmx_dtype dt = j->o->dtype;
  int64_t N = j->N, ls = CMX__STRIDES(j->a)[j->a->ndim - 1];
  const char* src = cmx__node_ptr(j->a);
  char* dst = cmx__node_ptr(j->o);
  if (dt == CMX_FLOAT64) {
    double* x = malloc((size_t)N * sizeof(double));
    double tmp[28];
    if (!x) {
      atomic_store(&((had_job*)ctx)->failed, 1);
      return;
    }
    for (int64_t r = begin; r < end; r++) {
      const double* s = (const double*)src + j->row_off[r];
      for (int64_t i = 0; i < N; i++) x[i] = s[i * ls];
      had_row_d(x, j, tmp);
      memcpy(dst + r * N * 8, x, (size_t)N * 8);
    }
    free(x);
    return;
  }
  float* x = malloc((size_t)N * sizeof(float));
  float tmp[28];
  if (!x) {
    atomic_store(&((had_job*)ctx)->failed, 1);
    return;
  }
  for (int64_t r = begin; r < end; r++) {
    if (dt == CMX_FLOAT32) {
      const float* s = (const float*)src + j->row_off[r];
      for (int64_t i = 0; i < N; i++) x[i] = s[i * ls];
    } else {
      const uint16_t* s = (const uint16_t*)src + j->row_off[r];
      for (int64_t i = 0; i < N; i++)
        x[i] = dt == CMX_FLOAT16 ? cmx__h2f(s[i * ls]) : cmx__bf2f(s[i * ls]);
    }
    had_row_f(x, j, tmp);
    if (dt == CMX_FLOAT32) {
      memcpy(dst + r * N * 4, x, (size_t)N * 4);
    } else {
      uint16_t* d = (uint16_t*)dst + r * N;
      for (int64_t i = 0; i < N; i++)
        d[i] = dt == CMX_FLOAT16 ? cmx__f2h(x[i]) : cmx__f2bf(x[i]);
    }
  }
  free(x);
}

/* Element offsets of the rows (all but the last axis) of a. */
static int64_t* row_offsets(cmx_array a, int64_t rows) {
  int64_t* off = malloc((size_t)(rows ? rows : 1) * sizeof *off);
  if (!off) return NULL;
  int nd = a->ndim - 1;
  const int64_t* st = CMX__STRIDES(a);
  int64_t idx[CMX_MAX_NDIM] = {0}, cur = 0;
  for (int64_t r = 0; r < rows; r++) {
    off[r] = cur;
    for (int d = nd - 1; d >= 0; d--) {
      cur += st[d];
      if (++idx[d] < a->dims[d]) break;
      cur -= st[d] * a->dims[d];
      idx[d] = 0;
    }
  }
  return off;
}

CMX__KERNEL(cmx__cpu_hadamard) {
  (void)nin, (void)nout;
  const cmx__hadamard_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  cmx_dtype dt = o->dtype;
  if (a->dtype != dt || (dt != CMX_FLOAT32 && dt != CMX_FLOAT64 &&
                         dt != CMX_FLOAT16 && dt != CMX_BFLOAT16))
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[hadamard_transform] unsupported dtype %s",
                            cmx_dtype_name(a->dtype));
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  had_job j = {.a = a, .o = o, .transpose = q->transpose, .scale = q->scale};
  j.N = a->ndim ? a->dims[a->ndim - 1] : 1;
  int8_t h[28 * 28];
  if (!cmx__hadamard_split(j.N, &j.m, &j.n))
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[hadamard_transform] Unsupported size %lld.",
                            (long long)j.N);
  if (j.m > 1) {
    cmx__hadamard_m(j.m, h);
    j.h = h;
  }
  int64_t rows = o->size / j.N;
  if (a->ndim == 0) {
    j.row_off = malloc(sizeof(int64_t));
    if (j.row_off) j.row_off[0] = 0;
  } else {
    j.row_off = row_offsets(a, rows);
  }
  if (!j.row_off)
    return cmx_kernel_error(CMX_ERR_MEMORY,
                            "[hadamard_transform] out of "
                            "memory");
  /* Work per row ~ N log N: chunks of at least ~64K element-steps. */
  int64_t grain = 65536 / (j.N * (1 + (int64_t)log2((double)j.N)));
  cmx__parallel_for(rows, grain > 1 ? grain : 1, had_chunk, &j);
  free(j.row_off);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY,
                            "[hadamard_transform] out of memory");
  return CMX_OK;
}
