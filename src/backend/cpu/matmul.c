/* CPU kernels of the matrix products (Matmul, AddMM) through OpenBLAS.
 *
 * Every batch element is one BLAS call on the operands where they lie: a
 * matrix whose column stride is 1 goes in row-major with its row stride as
 * the leading dimension, one whose row stride is 1 goes in as a transpose;
 * only other layouts are packed first. float16/bfloat16 are packed to
 * float32, computed, and rounded back. Operands repeated over the batch
 * (batch stride 0) are packed at most once. Products with a single row or
 * column use gemv, which skips gemm's packing.
 *
 * Threads: a medium product is cut into one part per pool thread
 * (product_parts), each a single-threaded BLAS call with OpenBLAS held to
 * one thread, so OpenBLAS's workers stay asleep and never compete for
 * cores with the pool's elementwise work between products; the largest
 * products are threaded by OpenBLAS itself; a batch of small products
 * (below OpenBLAS's threading threshold) is spread over the pool one
 * product per task. A stack
 * (..., M, K) @ (K, N) whose batch dims fold into rows becomes a single
 * (B*M, K) @ (K, N) call, which both threads and packs better.
 */
#include "primitives/matmul.h"

#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul_small.h"

/* OpenBLAS 0.3 runs gemm single-threaded when M*N*K is at most
 * 65536 * GEMM_MULTITHREAD_THRESHOLD (4): such products are the ones worth
 * spreading over the pool. */
#define SMALL_MNK 262144.0
/* Multiply-adds a pool chunk should hold to outweigh the hand-off. */
#define CHUNK_MNK 65536

/* One operand: a rows x cols matrix for every batch element. */
typedef struct {
  const char* base;           /* element 0 of batch element 0 */
  int64_t rows, cols, rs, cs; /* strides in elements */
  int64_t bst[CMX_MAX_NDIM];  /* strides over the output's batch dims */
  bool invariant;             /* the same matrix for every batch element */
  bool direct;                /* BLAS reads it in place, as: */
  bool dtrans;
  int64_t dld;
  void* packed; /* packed once (invariant operands) */
  bool ptrans;  /* layout of packed */
} operand;

typedef struct {
  cmx_dtype dt;    /* storage dtype */
  cmx_dtype ct;    /* compute dtype: float32 for the 16-bit floats */
  size_t esz, csz; /* element sizes of dt and ct */
  int64_t M, N, K;
  int nb; /* batch dims */
  int64_t bdims[CMX_MAX_NDIM];
  int64_t nbatch;
  operand a, b;
  char* out;          /* row-major nbatch x M x N */
  double alpha, beta; /* beta scales out's prior contents (c) */
  _Atomic int failed; /* a chunk could not allocate scratch */
} job;

/* A matrix as BLAS takes it: row-major (trans false) or the transpose of a
 * row-major matrix, with leading dimension ld. */
typedef struct {
  const void* p;
  bool trans;
  int ld;
} bmat;

/* Finds how BLAS can read a rows x cols matrix with strides (rs, cs) in
 * place; false when it has to be packed. Strides of size-1 dims do not
 * matter, so they are replaced by a valid leading dimension. */
static bool direct_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                          bool* trans, int64_t* ld) {
  int64_t min_n = cols > 1 ? cols : 1, min_t = rows > 1 ? rows : 1;
  if (cols == 1 || cs == 1) {
    int64_t l = rows == 1 ? min_n : rs;
    if (l >= min_n && l <= INT_MAX) {
      *trans = false;
      *ld = l;
      return true;
    }
  }
  if (rows == 1 || rs == 1) {
    int64_t l = cols == 1 ? min_t : cs;
    if (l >= min_t && l <= INT_MAX) {
      *trans = true;
      *ld = l;
      return true;
    }
  }
  return false;
}

#define ID(x) (x)
#define PACK_LOOP(TO, TI, CONV)                   \
  do {                                            \
    TO* d = dst;                                  \
    const TI* s = (const TI*)src;                 \
    for (int64_t o = 0; o < no; o++)              \
      for (int64_t i = 0; i < ni; i++)            \
        d[o * ni + i] = CONV(s[o * so + i * si]); \
  } while (0)

/* Packs a rows x cols matrix of dtype dt (strides rs, cs) into dst in the
 * compute type: as a transpose (column-major) when trans, else row-major. */
static void pack(void* dst, const char* src, cmx_dtype dt, int64_t rows,
                 int64_t cols, int64_t rs, int64_t cs, bool trans) {
  int64_t no = trans ? cols : rows, ni = trans ? rows : cols;
  int64_t so = trans ? cs : rs, si = trans ? rs : cs;
  if (dt == CMX_FLOAT16)
    PACK_LOOP(float, uint16_t, cmx__h2f);
  else if (dt == CMX_BFLOAT16)
    PACK_LOOP(float, uint16_t, cmx__bf2f);
  else if (cmx_dtype_size(dt) == 4)
    PACK_LOOP(uint32_t, uint32_t, ID);
  else
    PACK_LOOP(uint64_t, uint64_t, ID);
}

/* Packing reads along the source's shorter stride. */
static bool pack_trans(const operand* o) {
  return llabs(o->rs) < llabs(o->cs);
}

static bmat packed_bmat(const operand* o, const void* p, bool trans) {
  int64_t ld = trans ? o->rows : o->cols;
  return (bmat){p, trans, (int)(ld > 1 ? ld : 1)};
}

/* The BLAS view of operand o at element offset off; packs into scratch
 * when o cannot be read in place. */
static bmat resolve(const job* j, const operand* o, int64_t off,
                    void* scratch) {
  if (o->packed) return packed_bmat(o, o->packed, o->ptrans);
  const char* src = o->base + off * (int64_t)j->esz;
  if (o->direct) return (bmat){src, o->dtrans, (int)o->dld};
  bool tr = pack_trans(o);
  pack(scratch, src, j->dt, o->rows, o->cols, o->rs, o->cs, tr);
  return packed_bmat(o, scratch, tr);
}

/* C (row-major, leading dimension ldc, compute type) = alpha * A @ B +
 * beta * C. */
static void blas_product(const job* j, int M, int N, int K, bmat A, bmat B,
                         void* C, int ldc) {
  const enum CBLAS_ORDER R = CblasRowMajor;
  const enum CBLAS_TRANSPOSE T = CblasTrans, NT = CblasNoTrans;
  float cal[2] = {(float)j->alpha, 0}, cbe[2] = {(float)j->beta, 0};
  if (cmx__small_gemm(j->ct, M, N, K, j->alpha, A.p, A.trans, A.ld, B.p,
                      B.trans, B.ld, C, ldc, j->beta))
    return;
  if (N == 1 || M == 1) {
    /* y = op(S) x: S is the matrix operand as stored, x a vector. */
    bmat S = N == 1 ? A : B;
    const void* x = N == 1 ? B.p : A.p;
    int incx = N == 1 ? (B.trans ? 1 : B.ld) : (A.trans ? A.ld : 1);
    /* For N == 1, y = A x; for M == 1, y = B^T x. */
    bool use_t = N == 1 ? S.trans : !S.trans;
    int sr = N == 1 ? (S.trans ? K : M) : (S.trans ? N : K);
    int sc = N == 1 ? (S.trans ? M : K) : (S.trans ? K : N);
    enum CBLAS_TRANSPOSE t = use_t ? T : NT;
    int incy = N == 1 ? ldc : 1; /* a column of C steps by ldc */
    /* BLAS says beta == 0 ignores y, but some OpenBLAS versions scale y by
     * zero (NaN * 0 = NaN); y may be an uninitialised recycled buffer. */
    if (j->beta == 0) {
      if (N == 1)
        for (int r = 0; r < M; r++)
          memset((char*)C + (size_t)r * (size_t)ldc * j->csz, 0, j->csz);
      else
        memset(C, 0, (size_t)N * j->csz);
    }
    switch (j->ct) {
      case CMX_FLOAT32:
        cblas_sgemv(R, t, sr, sc, (float)j->alpha, S.p, S.ld, x, incx,
                    (float)j->beta, C, incy);
        return;
      case CMX_FLOAT64:
        cblas_dgemv(R, t, sr, sc, j->alpha, S.p, S.ld, x, incx, j->beta, C,
                    incy);
        return;
      default:
        cblas_cgemv(R, t, sr, sc, cal, S.p, S.ld, x, incx, cbe, C, incy);
        return;
    }
  }
  enum CBLAS_TRANSPOSE ta = A.trans ? T : NT, tb = B.trans ? T : NT;
  switch (j->ct) {
    case CMX_FLOAT32:
      cblas_sgemm(R, ta, tb, M, N, K, (float)j->alpha, A.p, A.ld, B.p, B.ld,
                  (float)j->beta, C, ldc);
      return;
    case CMX_FLOAT64:
      cblas_dgemm(R, ta, tb, M, N, K, j->alpha, A.p, A.ld, B.p, B.ld, j->beta,
                  C, ldc);
      return;
    default:
      cblas_cgemm(R, ta, tb, M, N, K, cal, A.p, A.ld, B.p, B.ld, cbe, C, ldc);
      return;
  }
}

/* ---- one big product split over cmx's pool ----
 * A product big enough for OpenBLAS to thread (but below SPLIT_MAX_MNK)
 * is cut instead into a grid
 * of parts, tm row blocks by tn column blocks with tm * tn <= the pool's
 * threads, each part a single-threaded BLAS call with OpenBLAS held to one
 * thread meanwhile. The grid is as square as the shape allows (tm / tn
 * close to M / N), so each part packs as little of A and B as possible.
 * One level of threading: OpenBLAS's own workers, which spin for a while
 * after each call, would otherwise compete for the cores with cmx's pool
 * in the elementwise work between products (on 16 cores that doubled the
 * time of the ops after a matmul). Above SPLIT_MAX_MNK OpenBLAS threads
 * the product itself: its shared packing beat the split there (1024^3 on
 * 16 cores: 900 against 640 GFLOP/s), while below it the split kept pace
 * (256 x 784 x 512: 490 against 400-520). */
#define SPLIT_MIN 32              /* rows and columns per part at least */
#define SPLIT_MAX_MNK 134217728.0 /* 2^27 = 512^3 multiply-adds */

typedef struct {
  const job* j;
  int M, N, K, ldc;
  bmat A, B;
  char* C;
  int64_t tn;           /* column blocks */
  int64_t mstep, nstep; /* rows and columns per block */
} split_job;

static void run_parts(void* ctx, int64_t b, int64_t e) {
  const split_job* s = ctx;
  size_t csz = s->j->csz;
  for (int64_t part = b; part < e; part++) {
    int64_t m0 = (part / s->tn) * s->mstep, n0 = (part % s->tn) * s->nstep;
    int m = (int)(s->M - m0 < s->mstep ? s->M - m0 : s->mstep);
    int n = (int)(s->N - n0 < s->nstep ? s->N - n0 : s->nstep);
    if (m <= 0 || n <= 0) continue;
    bmat A = s->A, B = s->B;
    /* rows m0.. of A, columns n0.. of B, that block of C */
    A.p = (const char*)A.p + (size_t)m0 * (A.trans ? 1 : (size_t)A.ld) * csz;
    B.p = (const char*)B.p + (size_t)n0 * (B.trans ? (size_t)B.ld : 1) * csz;
    char* C = s->C + ((size_t)m0 * (size_t)s->ldc + (size_t)n0) * csz;
    blas_product(s->j, m, n, s->K, A, B, C, s->ldc);
  }
}

/* The grid for a product of M x N on `threads` threads: tm * tn parts. */
static void split_grid(int64_t M, int64_t N, int threads, int64_t* tm,
                       int64_t* tn) {
  int64_t best_m = 1, best_n = 1;
  double best = -1;
  for (int64_t a = 1; a <= threads; a++) {
    int64_t b = threads / a;
    if (M / a < SPLIT_MIN || N / b < SPLIT_MIN) continue;
    /* most parts first, then the squarest parts (least packing) */
    double sq = (double)(M / a) / (double)(N / b);
    if (sq > 1) sq = 1 / sq;
    double score = (double)(a * b) * 4 + sq;
    if (score > best) best = score, best_m = a, best_n = b;
  }
  *tm = best_m;
  *tn = best_n;
}

/* C (ldc = N) = alpha * A @ B + beta * C, split over the pool when big. */
static void product_parts(const job* j, int M, int N, int K, bmat A, bmat B,
                          void* C) {
  double mnk = (double)M * (double)N * (double)K;
  int64_t tm = 1, tn = 1;
  if (mnk > SMALL_MNK && mnk < SPLIT_MAX_MNK && M > 1 && N > 1)
    split_grid(M, N, cmx__pool_threads(), &tm, &tn);
  if (tm * tn < 2 || !cmx__blas_single_begin()) {
    blas_product(j, M, N, K, A, B, C, N);
    return;
  }
  split_job s = {
      j, M, N, K, N, A, B, (char*)C, tn, (M + tm - 1) / tm, (N + tn - 1) / tn};
  cmx__parallel_for(tm * tn, 1, run_parts, &s);
  cmx__blas_single_end();
}

/* 16-bit float rows to and from float32. */
static void widen(float* d, const uint16_t* s, int64_t n, cmx_dtype dt) {
  if (dt == CMX_FLOAT16)
    for (int64_t i = 0; i < n; i++) d[i] = cmx__h2f(s[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = cmx__bf2f(s[i]);
}
static void narrow(uint16_t* d, const float* s, int64_t n, cmx_dtype dt) {
  if (dt == CMX_FLOAT16)
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2h(s[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2bf(s[i]);
}

/* Computes batch element i. sa, sb, sc: scratch for packing A, B and for
 * a float32 copy of C (16-bit floats). */
static void run_one(const job* j, int64_t i, void* sa, void* sb, void* sc) {
  int64_t offa = 0, offb = 0, rem = i;
  for (int d = j->nb - 1; d >= 0; d--) {
    int64_t idx = rem % j->bdims[d];
    rem /= j->bdims[d];
    offa += idx * j->a.bst[d];
    offb += idx * j->b.bst[d];
  }
  bmat A = resolve(j, &j->a, offa, sa), B = resolve(j, &j->b, offb, sb);
  int64_t mn = j->M * j->N;
  char* o = j->out + i * mn * (int64_t)j->esz;
  if (j->dt == j->ct) {
    product_parts(j, (int)j->M, (int)j->N, (int)j->K, A, B, o);
    return;
  }
  if (j->beta != 0) widen(sc, (const uint16_t*)o, mn, j->dt);
  product_parts(j, (int)j->M, (int)j->N, (int)j->K, A, B, sc);
  narrow((uint16_t*)o, sc, mn, j->dt);
}

/* Batch elements [begin, end), with their own scratch. */
static void run_chunk(void* ctx, int64_t begin, int64_t end) {
  job* j = ctx;
  size_t na = j->a.direct || j->a.packed ? 0 : (size_t)(j->M * j->K) * j->csz;
  size_t nb = j->b.direct || j->b.packed ? 0 : (size_t)(j->K * j->N) * j->csz;
  size_t nc = j->dt != j->ct ? (size_t)(j->M * j->N) * j->csz : 0;
  void* sa = na ? malloc(na) : NULL;
  void* sb = nb ? malloc(nb) : NULL;
  void* sc = nc ? malloc(nc) : NULL;
  if ((na && !sa) || (nb && !sb) || (nc && !sc)) {
    atomic_store(&j->failed, 1);
  } else {
    for (int64_t i = begin; i < end; i++) run_one(j, i, sa, sb, sc);
  }
  free(sa);
  free(sb);
  free(sc);
}

/* Describes input x (>= 1-d) as operand a (is_a) or b of job j. */
static void setup(const job* j, operand* o, cmx_array x, bool is_a) {
  const int64_t* st = CMX__STRIDES(x);
  int nd = x->ndim, nbd;
  o->base = cmx__node_ptr(x);
  if (nd == 1) { /* a row (a) or a column (b) */
    o->rows = is_a ? 1 : j->K;
    o->cols = is_a ? j->K : 1;
    o->rs = is_a ? 0 : st[0];
    o->cs = is_a ? st[0] : 0;
    nbd = 0;
  } else {
    o->rows = x->dims[nd - 2];
    o->cols = x->dims[nd - 1];
    o->rs = st[nd - 2];
    o->cs = st[nd - 1];
    nbd = nd - 2;
  }
  o->invariant = true;
  for (int d = 0; d < j->nb; d++) {
    int xd = d - (j->nb - nbd);
    o->bst[d] = (xd < 0 || x->dims[xd] == 1) ? 0 : st[xd];
    if (o->bst[d] != 0 && j->bdims[d] > 1) o->invariant = false;
  }
  o->direct = j->dt == j->ct && direct_layout(o->rows, o->cols, o->rs, o->cs,
                                              &o->dtrans, &o->dld);
  o->packed = NULL;
}

/* (..., M, K) @ (K, N): when a's batch dims step through memory like
 * further rows, the whole batch is one (B*M, K) @ (K, N) product. */
static void fold_batch(job* j) {
  operand* a = &j->a;
  if (j->nbatch <= 1 || !j->b.invariant || !(a->cols == 1 || a->cs == 1))
    return;
  int64_t row = a->rows > 1 ? a->rs : 0, span = a->rows;
  for (int d = j->nb - 1; d >= 0; d--) {
    if (j->bdims[d] == 1) continue;
    if (row == 0) row = a->bst[d];
    if (a->bst[d] != row * span) return;
    span *= j->bdims[d];
  }
  int64_t min_ld = a->cols > 1 ? a->cols : 1;
  if (row < min_ld || row > INT_MAX || span > INT_MAX) return;
  a->rows = span;
  a->rs = row;
  a->direct = j->dt == j->ct && direct_layout(a->rows, a->cols, a->rs, a->cs,
                                              &a->dtrans, &a->dld);
  j->M = span;
  j->nbatch = 1;
  j->nb = 0;
}

/* Packs an invariant operand that BLAS cannot read in place, once. */
static bool prepack(job* j, operand* o) {
  if (o->direct || !o->invariant) return true;
  o->packed = malloc((size_t)(o->rows * o->cols) * j->csz);
  if (!o->packed) return false;
  o->ptrans = pack_trans(o);
  pack(o->packed, o->base, j->dt, o->rows, o->cols, o->rs, o->cs, o->ptrans);
  return true;
}

/* out = beta * out for a product with K == 0 (no terms). */
static void scale_out(const job* j, int64_t n) {
  if (j->beta == 1) return;
  if (j->beta == 0) {
    memset(j->out, 0, (size_t)n * j->esz); /* all-zero bits are 0.0 */
    return;
  }
  float bf = (float)j->beta;
  switch (j->dt) {
    case CMX_FLOAT32: {
      float* p = (float*)j->out;
      for (int64_t i = 0; i < n; i++) p[i] *= bf;
      break;
    }
    case CMX_FLOAT64: {
      double* p = (double*)j->out;
      for (int64_t i = 0; i < n; i++) p[i] *= j->beta;
      break;
    }
    case CMX_COMPLEX64: { /* both parts, as two floats per element */
      float* p = (float*)j->out;
      for (int64_t i = 0; i < 2 * n; i++) p[i] *= bf;
      break;
    }
    default: { /* 16-bit floats */
      uint16_t* p = (uint16_t*)j->out;
      for (int64_t i = 0; i < n; i++) {
        float v;
        widen(&v, &p[i], 1, j->dt);
        v *= bf;
        narrow(&p[i], &v, 1, j->dt);
      }
      break;
    }
  }
}

/* The shared body: out = alpha * (in[0] @ in[1]) (+ beta * in[2]). */
static cmx_status product(const char* name, const cmx_array* in, int nin,
                          cmx_array out, double alpha, double beta) {
  cmx_array a = in[0], b = in[1];
  cmx_dtype dt = out->dtype;
  if (!cmx_dtype_is_inexact(dt) || a->dtype != dt || b->dtype != dt ||
      (nin > 2 && in[2]->dtype != dt))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s", name,
                            cmx_dtype_name(dt));
  cmx_status st;
  if (nin > 2) { /* start from c: its buffer when free, else a copy */
    bool donated = false;
    st = cmx_kernel_alloc_donate(out, in[2], &donated);
    if (st == CMX_OK && !donated && beta != 0 && out->size > 0)
      st = cmx__cpu_copy_convert(out, in[2]);
  } else {
    st = cmx_kernel_alloc(out);
    beta = 0;
  }
  if (st != CMX_OK || out->size == 0) return st;

  job j;
  memset(&j, 0, sizeof j);
  j.dt = dt;
  j.ct = (dt == CMX_FLOAT16 || dt == CMX_BFLOAT16) ? CMX_FLOAT32 : dt;
  j.esz = cmx_dtype_size(dt);
  j.csz = cmx_dtype_size(j.ct);
  j.K = a->dims[a->ndim - 1];
  j.M = a->ndim >= 2 ? a->dims[a->ndim - 2] : 1;
  j.N = b->ndim >= 2 ? b->dims[b->ndim - 1] : 1;
  j.nb = out->ndim - (a->ndim >= 2) - (b->ndim >= 2);
  j.nbatch = 1;
  for (int d = 0; d < j.nb; d++) {
    j.bdims[d] = out->dims[d];
    j.nbatch *= out->dims[d];
  }
  j.out = cmx__node_ptr(out);
  j.alpha = alpha;
  j.beta = beta;
  if (j.K == 0) {
    scale_out(&j, out->size);
    return CMX_OK;
  }
  if (j.M > INT_MAX || j.N > INT_MAX || j.K > INT_MAX)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[%s] matrix dimensions exceed the BLAS limit "
                            "(2^31 - 1).",
                            name);
  setup(&j, &j.a, a, true);
  setup(&j, &j.b, b, false);
  fold_batch(&j);
  if (!prepack(&j, &j.a) || !prepack(&j, &j.b)) {
    free(j.a.packed);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", name);
  }
  double mnk = (double)j.M * (double)j.N * (double)j.K;
  if (j.nbatch > 1 && mnk <= SMALL_MNK) {
    int64_t grain = CHUNK_MNK / (int64_t)mnk;
    cmx__parallel_for(j.nbatch, grain > 1 ? grain : 1, run_chunk, &j);
  } else {
    run_chunk(&j, 0, j.nbatch);
  }
  free(j.a.packed);
  free(j.b.packed);
  if (atomic_load(&j.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory", name);
  return CMX_OK;
}

CMX__KERNEL(cmx__cpu_matmul) {
  (void)p;
  (void)nout;
  (void)nin;
  return product("matmul", in, 2, out[0], 1.0, 0.0);
}

CMX__KERNEL(cmx__cpu_addmm) {
  (void)nout;
  const cmx__addmm_params* q = cmx_primitive_params(p);
  return product("addmm", in, nin, out[0], q->alpha, q->beta);
}
