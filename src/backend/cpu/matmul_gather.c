/* CPU kernels of the gathered matrix products: GatherMM and SegmentedMM
 * (one BLAS product per output matrix).
 *
 * The products read each matrix in place when BLAS can (unit stride along
 * rows or columns) and pack it otherwise; float16/bfloat16 compute in
 * float32. Many small products are spread over the thread pool; big ones
 * run one after another and OpenBLAS threads each (as matmul does).
 */
#include "primitives/matmul_gather.h"

#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

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
