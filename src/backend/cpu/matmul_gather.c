/* CPU kernels of the linear-algebra extras: Diagonal (a strided view),
 * Hadamard (fast Walsh-Hadamard transform times a small Hadamard matrix),
 * GatherMM and SegmentedMM (one BLAS product per output matrix).
 *
 * The products read each matrix in place when BLAS can (unit stride along
 * rows or columns) and pack it otherwise; float16/bfloat16 compute in
 * float32. Many small products are spread over the thread pool; big ones
 * run one after another and OpenBLAS threads each (as matmul does).
 */
#include "primitives/matmul_gather.h"

#include <cblas.h>
#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* ---------------- Diagonal ---------------- */
CMX__KERNEL(cmx__cpu_diagonal) {
  (void)nin, (void)nout;
  const cmx__diagonal_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const int64_t* st = CMX__STRIDES(a);
  int64_t ost[CMX_MAX_NDIM];
  int j = 0;
  for (int d = 0; d < a->ndim; d++)
    if (d != q->axis1 && d != q->axis2) ost[j++] = st[d];
  ost[j] = st[q->axis1] + st[q->axis2];
  int64_t off1 = q->offset < 0 ? -q->offset : 0;
  int64_t off2 = q->offset > 0 ? q->offset : 0;
  int64_t off = o->size ? off1 * st[q->axis1] + off2 * st[q->axis2] : 0;
  return cmx_kernel_set_view(o, a, off, ost);
}

/* ---------------- Hadamard matrices ----------------
 * The odd factors are fixed matrices (any Hadamard matrix would do, these
 * are the ones MLX uses, so results agree with it):
 * - m = 12: Paley's second construction from GF(5): C (x) [[1, 1], [1, -1]]
 *   + I (x) [[1, -1], [-1, -1]], C the symmetric 6 x 6 conference matrix
 *   with zero diagonal, a first row and column of ones, and
 *   C[1 + i][1 + j] = chi(j - i) for the quadratic character chi mod 5.
 * - m = 20, 28: Williamson's array [[W, X, Y, Z], [-X, W, -Z, Y],
 *   [-Y, Z, W, -X], [-Z, -Y, X, W]] of p x p circulants (p = 5, 7), each
 *   M[r][c] = f[(c - r) mod p] with f = +1 on the set given below and -1
 *   elsewhere. */
typedef struct {
  int p;
  unsigned plus[4]; /* bit j: f[j] = +1, for W, X, Y, Z */
} williamson;

static const williamson W20 = {5, {0x01, 0x01, 0x13, 0x0d}};
static const williamson W28 = {7, {0x01, 0x43, 0x25, 0x19}};

static int chi5(int v) { /* quadratic character mod 5 (0 -> 0) */
  v = ((v % 5) + 5) % 5;
  return v == 0 ? 0 : (v == 1 || v == 4) ? 1 : -1;
}

static void williamson_fill(const williamson* w, int8_t* h) {
  /* Block (R, C) of the array: which circulant and its sign. */
  static const int which[4][4] = {
      {0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}};
  static const int sign[4][4] = {
      {1, 1, 1, 1}, {-1, 1, -1, 1}, {-1, 1, 1, -1}, {-1, -1, 1, 1}};
  int p = w->p, m = 4 * p;
  for (int R = 0; R < 4; R++)
    for (int C = 0; C < 4; C++)
      for (int r = 0; r < p; r++)
        for (int c = 0; c < p; c++) {
          int k = ((c - r) % p + p) % p;
          int f = (w->plus[which[R][C]] >> k) & 1 ? 1 : -1;
          h[(R * p + r) * m + C * p + c] = (int8_t)(sign[R][C] * f);
        }
}

bool cmx__hadamard_m(int m, int8_t* h) {
  if (m == 20 || m == 28) {
    williamson_fill(m == 20 ? &W20 : &W28, h);
    return true;
  }
  if (m != 12) return false;
  static const int K2[2][2] = {{1, 1}, {1, -1}}, D2[2][2] = {{1, -1}, {-1, -1}};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      int c = i == j ? 0 : (i == 0 || j == 0) ? 1 : chi5(j - i);
      for (int r = 0; r < 2; r++)
        for (int s = 0; s < 2; s++)
          h[(2 * i + r) * 12 + 2 * j + s] =
              (int8_t)(c * K2[r][s] + (i == j ? D2[r][s] : 0));
    }
  return true;
}

bool cmx__hadamard_split(int64_t n, int* m, int64_t* pow2) {
  static const int odd[4] = {1, 12, 20, 28};
  for (int i = 0; i < 4; i++) {
    if (n < odd[i] || n % odd[i]) continue;
    int64_t r = n / odd[i];
    if ((r & (r - 1)) == 0) {
      *m = odd[i];
      *pow2 = r;
      return true;
    }
  }
  return false;
}

/* ---------------- Hadamard kernel ---------------- */
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

/* ---------------- one matrix product ---------------- */
/* A rows x cols matrix at p with element strides rs, cs. */
typedef struct {
  const char* p;
  int64_t rows, cols, rs, cs;
} mat;

typedef struct {
  const void* p;
  bool trans;
  int ld;
} bmat;

/* How BLAS reads m in place (false: it must be packed). */
static bool direct(const mat* m, bmat* b) {
  int64_t minc = m->cols > 1 ? m->cols : 1, minr = m->rows > 1 ? m->rows : 1;
  if (m->cols == 1 || m->cs == 1) {
    int64_t ld = m->rows == 1 ? minc : m->rs;
    if (ld >= minc && ld <= INT_MAX) {
      *b = (bmat){m->p, false, (int)ld};
      return true;
    }
  }
  if (m->rows == 1 || m->rs == 1) {
    int64_t ld = m->cols == 1 ? minr : m->cs;
    if (ld >= minr && ld <= INT_MAX) {
      *b = (bmat){m->p, true, (int)ld};
      return true;
    }
  }
  return false;
}

/* m packed row-major into dst in the compute type (float32 for 16-bit). */
static void pack(void* dst, const mat* m, cmx_dtype dt) {
  int64_t k = 0;
  for (int64_t r = 0; r < m->rows; r++)
    for (int64_t c = 0; c < m->cols; c++, k++) {
      int64_t off = r * m->rs + c * m->cs;
      switch (dt) {
        case CMX_FLOAT64:
          ((double*)dst)[k] = ((const double*)m->p)[off];
          break;
        case CMX_FLOAT32:
          ((float*)dst)[k] = ((const float*)m->p)[off];
          break;
        case CMX_FLOAT16:
          ((float*)dst)[k] = cmx__h2f(((const uint16_t*)m->p)[off]);
          break;
        default:
          ((float*)dst)[k] = cmx__bf2f(((const uint16_t*)m->p)[off]);
          break;
      }
    }
}

typedef struct {
  cmx_dtype dt;
  bool wide; /* compute type differs (16-bit floats) */
  size_t csz;
  int64_t M, N, maxK;
} gemm_cfg;

/* Scratch of one worker: packed A and B and a float32 C. */
typedef struct {
  void *a, *b, *c;
} scratch;

static bool scratch_alloc(const gemm_cfg* g, scratch* s) {
  size_t ka = (size_t)(g->M * (g->maxK ? g->maxK : 1)) * g->csz;
  size_t kb = (size_t)(g->N * (g->maxK ? g->maxK : 1)) * g->csz;
  s->a = malloc(ka ? ka : 1);
  s->b = malloc(kb ? kb : 1);
  s->c = g->wide ? malloc((size_t)(g->M * g->N) * g->csz + 1) : NULL;
  return s->a && s->b && (!g->wide || s->c);
}

static void scratch_free(scratch* s) {
  free(s->a);
  free(s->b);
  free(s->c);
}

/* out (row-major M x N, dtype g->dt) = A (M x K) @ B (K x N). */
static void gemm_one(const gemm_cfg* g, mat A, mat B, int64_t K, char* out,
                     const scratch* s) {
  int64_t M = g->M, N = g->N, mn = M * N;
  void* C = g->wide ? s->c : out;
  if (K == 0) {
    memset(C, 0, (size_t)mn * g->csz);
  } else {
    A.rows = M, A.cols = K, B.rows = K, B.cols = N;
    bmat a, b;
    if (g->wide || !direct(&A, &a)) {
      pack(s->a, &A, g->dt);
      a = (bmat){s->a, false, (int)K};
    }
    if (g->wide || !direct(&B, &b)) {
      pack(s->b, &B, g->dt);
      b = (bmat){s->b, false, (int)N};
    }
    enum CBLAS_TRANSPOSE ta = a.trans ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = b.trans ? CblasTrans : CblasNoTrans;
    if (g->dt == CMX_FLOAT64)
      cblas_dgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0, a.p, a.ld,
                  b.p, b.ld, 0.0, C, (int)N);
    else
      cblas_sgemm(CblasRowMajor, ta, tb, (int)M, (int)N, (int)K, 1.0f, a.p,
                  a.ld, b.p, b.ld, 0.0f, C, (int)N);
  }
  if (!g->wide) return;
  uint16_t* d = (uint16_t*)out;
  const float* c = C;
  for (int64_t i = 0; i < mn; i++)
    d[i] = g->dt == CMX_FLOAT16 ? cmx__f2h(c[i]) : cmx__f2bf(c[i]);
}

static bool gemm_setup(const char* name, cmx_array o, cmx_array a, cmx_array b,
                       int64_t maxK, gemm_cfg* g, cmx_status* st) {
  cmx_dtype dt = o->dtype;
  if (a->dtype != dt || b->dtype != dt ||
      (dt != CMX_FLOAT32 && dt != CMX_FLOAT64 && dt != CMX_FLOAT16 &&
       dt != CMX_BFLOAT16)) {
    *st = cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", name,
                           cmx_dtype_name(dt));
    return false;
  }
  g->dt = dt;
  g->wide = dt == CMX_FLOAT16 || dt == CMX_BFLOAT16;
  g->csz = dt == CMX_FLOAT64 ? 8 : 4;
  g->M = a->dims[a->ndim - 2];
  g->N = b->dims[b->ndim - 1];
  g->maxK = maxK;
  if (g->M > INT_MAX || g->N > INT_MAX || maxK > INT_MAX) {
    *st = cmx_kernel_error(CMX_ERR_VALUE,
                           "[%s] matrix dimensions exceed the BLAS limit "
                           "(2^31 - 1).",
                           name);
    return false;
  }
  *st = cmx_kernel_alloc(o);
  return *st == CMX_OK;
}

/* Flat index i over shape (dims, nd) to an element offset with strides. */
static int64_t unravel_offset(int64_t i, const int64_t* dims, const int64_t* st,
                              int nd) {
  int64_t off = 0;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t n = dims[d] ? dims[d] : 1;
    off += (i % n) * st[d];
    i /= n;
  }
  return off;
}

static uint32_t load_index(cmx_array ix, int64_t i) {
  const uint32_t* p = cmx__node_ptr(ix);
  return p[unravel_offset(i, ix->dims, CMX__STRIDES(ix), ix->ndim)];
}

/* Many products of at most SMALL multiply-adds go to the pool. */
#define SMALL_MNK 262144.0
#define CHUNK_MNK 65536.0

/* ---------------- GatherMM ---------------- */
typedef struct {
  gemm_cfg g;
  cmx_array a, b, li, ri;
  char* out;
  int64_t K;
  _Atomic int failed;
} gmm_job;

static mat batch_mat(cmx_array x, uint32_t idx) {
  int nb = x->ndim - 2;
  const int64_t* st = CMX__STRIDES(x);
  mat m = {
      (const char*)cmx__node_ptr(x) + unravel_offset(idx, x->dims, st, nb) *
                                          (int64_t)cmx_dtype_size(x->dtype),
      0, 0, st[nb], st[nb + 1]};
  return m;
}

static void gmm_chunk(void* ctx, int64_t begin, int64_t end) {
  gmm_job* j = ctx;
  scratch s;
  if (!scratch_alloc(&j->g, &s)) {
    atomic_store(&j->failed, 1);
    scratch_free(&s);
    return;
  }
  size_t esz = cmx_dtype_size(j->g.dt);
  for (int64_t i = begin; i < end; i++)
    gemm_one(&j->g, batch_mat(j->a, load_index(j->li, i)),
             batch_mat(j->b, load_index(j->ri, i)), j->K,
             j->out + i * j->g.M * j->g.N * (int64_t)esz, &s);
  scratch_free(&s);
}

/* Product of the batch dims of x (all but its last two). */
static int64_t batch_count(cmx_array x) {
  int64_t n = 1;
  for (int d = 0; d < x->ndim - 2; d++) n *= x->dims[d];
  return n;
}

/* Checks every index of ix against the batch size n. */
static bool check_indices(const char* name, const char* which, cmx_array ix,
                          int64_t count, int64_t n, cmx_status* st) {
  for (int64_t i = 0; i < count; i++) {
    uint32_t v = load_index(ix, i);
    if ((int64_t)v >= n) {
      *st = cmx_kernel_error(CMX_ERR_INDEX,
                             "[%s] %s index %u is out of bounds for a batch "
                             "of %lld matrices.",
                             name, which, v, (long long)n);
      return false;
    }
  }
  return true;
}

CMX__KERNEL(cmx__cpu_gather_mm) {
  (void)p, (void)nin, (void)nout;
  gmm_job j;
  memset(&j, 0, sizeof j);
  j.a = in[0], j.b = in[1], j.li = in[2], j.ri = in[3];
  cmx_array o = out[0];
  j.K = j.a->dims[j.a->ndim - 1];
  cmx_status st;
  if (!gemm_setup("gather_mm", o, j.a, j.b, j.K, &j.g, &st)) return st;
  int64_t count = j.li->size;
  if (o->size == 0 && count == 0) return CMX_OK;
  if (!check_indices("gather_mm", "lhs", j.li, count, batch_count(j.a), &st) ||
      !check_indices("gather_mm", "rhs", j.ri, count, batch_count(j.b), &st))
    return st;
  if (o->size == 0) return CMX_OK;
  j.out = cmx__node_ptr(o);
  double mnk = (double)j.g.M * (double)j.g.N * (double)(j.K ? j.K : 1);
  if (count > 1 && mnk <= SMALL_MNK) {
    int64_t grain = (int64_t)(CHUNK_MNK / mnk);
    cmx__parallel_for(count, grain > 1 ? grain : 1, gmm_chunk, &j);
  } else {
    gmm_chunk(&j, 0, count);
  }
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[gather_mm] out of memory");
  return CMX_OK;
}

/* ---------------- SegmentedMM ---------------- */
typedef struct {
  gemm_cfg g;
  cmx_array a, b;
  const uint32_t* seg; /* contiguous (count, 2) */
  char* out;
  _Atomic int failed;
} smm_job;

static void smm_chunk(void* ctx, int64_t begin, int64_t end) {
  smm_job* j = ctx;
  scratch s;
  if (!scratch_alloc(&j->g, &s)) {
    atomic_store(&j->failed, 1);
    scratch_free(&s);
    return;
  }
  size_t esz = cmx_dtype_size(j->g.dt);
  const int64_t *sa = CMX__STRIDES(j->a), *sb = CMX__STRIDES(j->b);
  for (int64_t i = begin; i < end; i++) {
    int64_t k0 = j->seg[2 * i], k1 = j->seg[2 * i + 1];
    int64_t len = k1 > k0 ? k1 - k0 : 0;
    if (!len) k0 = 0;
    mat A = {(const char*)cmx__node_ptr(j->a) + k0 * sa[1] * (int64_t)esz, 0, 0,
             sa[0], sa[1]};
    mat B = {(const char*)cmx__node_ptr(j->b) + k0 * sb[0] * (int64_t)esz, 0, 0,
             sb[0], sb[1]};
    gemm_one(&j->g, A, B, len, j->out + i * j->g.M * j->g.N * (int64_t)esz, &s);
  }
  scratch_free(&s);
}

CMX__KERNEL(cmx__cpu_segmented_mm) {
  (void)p, (void)nin, (void)nout;
  smm_job j;
  memset(&j, 0, sizeof j);
  j.a = in[0], j.b = in[1];
  cmx_array sg = in[2], o = out[0];
  int64_t K = j.a->dims[1], count = sg->size / 2;
  cmx_status st;
  if (!gemm_setup("segmented_mm", o, j.a, j.b, K, &j.g, &st)) return st;
  /* The segments as a contiguous (count, 2) table, checked. */
  uint32_t* seg = malloc((size_t)(count ? count : 1) * 2 * sizeof *seg);
  if (!seg)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[segmented_mm] out of memory");
  for (int64_t i = 0; i < 2 * count; i++) {
    uint32_t v = seg[i] = load_index(sg, i);
    if ((int64_t)v > K) {
      free(seg);
      return cmx_kernel_error(CMX_ERR_INDEX,
                              "[segmented_mm] Segment bound %u is out of "
                              "bounds for the inner dimension %lld.",
                              v, (long long)K);
    }
  }
  if (o->size > 0) {
    j.seg = seg;
    j.out = cmx__node_ptr(o);
    double mnk = (double)j.g.M * (double)j.g.N * (double)(K ? K : 1);
    if (count > 1 && mnk <= SMALL_MNK) {
      int64_t grain = (int64_t)(CHUNK_MNK / mnk);
      cmx__parallel_for(count, grain > 1 ? grain : 1, smm_chunk, &j);
    } else {
      smm_chunk(&j, 0, count);
    }
  }
  free(seg);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[segmented_mm] out of memory");
  return CMX_OK;
}
