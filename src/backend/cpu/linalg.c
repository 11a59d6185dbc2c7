/* CPU kernels of the factorization primitives (primitives/linalg.h) through
 * LAPACK (OpenBLAS's Fortran interface, backend/cpu/lapack.h) and CBLAS.
 *
 * One driver runs every primitive over its batch: a job describes the
 * matrices, workspace sizes come from one LAPACK query made before the
 * loop, and the batch is split over cmx's pool with OpenBLAS held to one
 * thread (one level of threading); a single matrix runs on the calling
 * thread with OpenBLAS's own threads. A row-major matrix is the transpose of
 * the column-major one LAPACK sees, which lets inverses and Cholesky work in
 * place on the output (inv(A^T) = inv(A)^T; the lower triangle of a
 * row-major matrix is the upper of its column-major view); the others copy
 * through a transposing scratch. Inputs with NaN or inf give NaN outputs for
 * the iterative routines (SVD, eigensolvers) instead of calling LAPACK.
 * complex64 input (SVD, Eigh, Eig: cgesdd, cheevd, cgeev) always goes
 * through transposing copies, the row-major view of a complex matrix being
 * its transpose, not its conjugate transpose.
 */
#include "primitives/linalg.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/lapack.h"

typedef enum {
  K_LUF,
  K_QRF,
  K_SVD,
  K_INV,
  K_CHOL,
  K_EIGH,
  K_EIG,
  K_SOLVE
} kind;

/* The float and double routine of each pair. */
#define PICK(name, dbl) ((dbl) ? d##name##_ : s##name##_)

typedef struct job {
  kind k;
  int dbl;           /* float64 (else float32 or complex64) */
  int cplx;          /* complex64 (float pairs; esz 8, dbl 0) */
  size_t esz;        /* bytes per element */
  int m, n, nrhs;    /* a is m x n; b is n x nrhs (Solve) */
  int upper, flag;   /* uplo; uv / tri / vectors per kind */
  int lwork, liwork; /* from the workspace query */
  int lrwork;        /* complex routines' real workspace (floats) */
  int64_t batch;
  const char *a, *b;    /* inputs */
  char* o[3];           /* outputs */
  size_t ws_bytes;      /* scratch per matrix */
  atomic_int fail_info; /* first LAPACK info > 0 (0: none) */
} job;

/* ---------------- element helpers ---------------- */
static inline double get(const job* j, const void* p, int64_t i) {
  return j->dbl ? ((const double*)p)[i] : ((const float*)p)[i];
}
static inline void put(const job* j, void* p, int64_t i, double v) {
  if (j->dbl)
    ((double*)p)[i] = v;
  else
    ((float*)p)[i] = (float)v;
}

/* dst (cols x rows, column-major of a rows x cols row-major src) = src^T
 * as memory: dst[c * rows + r] = src[r * cols + c]. */
static void transpose(const job* j, void* dst, const void* src, int rows,
                      int cols) {
  if (j->esz == 8) { /* float64 or complex64: moved as 8-byte words */
    const uint64_t* s = src;
    uint64_t* d = dst;
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++)
        d[(int64_t)c * rows + r] = s[(int64_t)r * cols + c];
  } else {
    const uint32_t* s = src;
    uint32_t* d = dst;
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++)
        d[(int64_t)c * rows + r] = s[(int64_t)r * cols + c];
  }
}

/* Zeros the strict upper (upper) or strict lower triangle of row-major
 * n x n p. */
static void zero_triangle(const job* j, void* p, int n, bool upper) {
  for (int r = 0; r < n; r++) {
    int c0 = upper ? r + 1 : 0, c1 = upper ? n : r;
    memset((char*)p + ((int64_t)r * n + c0) * j->esz, 0,
           (size_t)(c1 - c0) * j->esz);
  }
}

static bool all_finite(const job* j, const void* p, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(get(j, p, i))) return false;
  return true;
}

static void fill_nan(const job* j, void* p, int64_t n) {
  for (int64_t i = 0; i < n; i++) put(j, p, i, NAN);
}

static int lwork_of(const job* j, const void* w) {
  double v = get(j, w, 0);
  return v < 1 ? 1 : (int)v + 1;
}

/* ---------------- per-kind work ---------------- */
/* Each runs matrix b with scratch ws (j->ws_bytes) and returns LAPACK's
 * info (> 0 is a failure the kernel reports, < 0 a cmx bug). */

static int run_luf(job* j, int64_t b, char* ws) {
  int m = j->m, n = j->n, k = m < n ? m : n, info = 0;
  size_t mat = (size_t)m * n * j->esz;
  int* ipiv = (int*)(ws + mat);
  transpose(j, ws, j->a + b * mat, m, n);
  PICK(getrf, j->dbl)(&m, &n, ws, &m, ipiv, &info);
  transpose(j, j->o[0] + b * mat, ws, n, m);
  uint32_t* piv = (uint32_t*)j->o[1] + b * k;
  /* perm: the rows of a in the order of L U; out: where each row went */
  uint32_t* rows = (uint32_t*)j->o[2] + b * m;
  uint32_t* perm = (uint32_t*)(ipiv + k);
  for (int i = 0; i < m; i++) perm[i] = (uint32_t)i;
  for (int i = 0; i < k; i++) {
    int p = ipiv[i] - 1;
    piv[i] = (uint32_t)p;
    uint32_t t = perm[i];
    perm[i] = perm[p];
    perm[p] = t;
  }
  for (int i = 0; i < m; i++) rows[perm[i]] = (uint32_t)i;
  return 0; /* a zero pivot (info > 0) is a valid factorization */
}

static int run_qrf(job* j, int64_t b, char* ws) {
  int m = j->m, n = j->n, k = m < n ? m : n, info = 0;
  size_t mat = (size_t)m * n * j->esz;
  char* tau = ws + mat;
  char* work = tau + (size_t)k * j->esz;
  transpose(j, ws, j->a + b * mat, m, n);
  PICK(geqrf, j->dbl)(&m, &n, ws, &m, tau, work, &j->lwork, &info);
  if (info) return info;
  char* r = j->o[1] + b * (size_t)k * n * j->esz;
  for (int i = 0; i < k; i++) /* r[i][c] = A[i + c m] for c >= i */
    for (int c = 0; c < n; c++)
      put(j, r, (int64_t)i * n + c,
          c >= i ? get(j, ws, i + (int64_t)c * m) : 0);
  PICK(orgqr, j->dbl)(&m, &k, &k, ws, &m, tau, work, &j->lwork, &info);
  transpose(j, j->o[0] + b * (size_t)m * k * j->esz, ws, k, m);
  return info;
}

static int run_svd(job* j, int64_t b, char* ws) {
  int m = j->m, n = j->n, k = m < n ? m : n, info = 0;
  size_t mat = (size_t)m * n * j->esz, e = j->esz;
  char* s_out = j->o[j->flag ? 1 : 0] + b * k * e;
  char *u = ws + mat, *vt = u + (size_t)m * m * e,
       *work = vt + (size_t)n * n * e;
  int* iwork = (int*)(work + (size_t)j->lwork * e);
  if (!all_finite(j, j->a + b * mat, (int64_t)m * n)) {
    fill_nan(j, s_out, k);
    if (j->flag) {
      fill_nan(j, j->o[0] + b * (size_t)m * m * e, (int64_t)m * m);
      fill_nan(j, j->o[2] + b * (size_t)n * n * e, (int64_t)n * n);
    }
    return 0;
  }
  transpose(j, ws, j->a + b * mat, m, n);
  char jobz = j->flag ? 'A' : 'N';
  int one = 1, ldu = j->flag ? m : 1, ldvt = j->flag ? n : 1;
  PICK(gesdd, j->dbl)
  (&jobz, &m, &n, ws, &m, s_out, u, &ldu, vt, &ldvt, work, &j->lwork, iwork,
   &info, 1);
  (void)one;
  if (info || !j->flag) return info;
  transpose(j, j->o[0] + b * (size_t)m * m * e, u, m, m);
  transpose(j, j->o[2] + b * (size_t)n * n * e, vt, n, n);
  return 0;
}

static int run_inv(job* j, int64_t b, char* ws) {
  int n = j->n, info = 0;
  size_t mat = (size_t)n * n * j->esz;
  char* o = j->o[0] + b * mat;
  memcpy(o, j->a + b * mat, mat);
  if (j->flag) { /* triangular: row-major lower is column-major upper */
    char uplo = j->upper ? 'L' : 'U', diag = 'N';
    PICK(trtri, j->dbl)(&uplo, &diag, &n, o, &n, &info, 1, 1);
    zero_triangle(j, o, n, !j->upper);
    return info;
  }
  int* ipiv = (int*)(ws + (size_t)j->lwork * j->esz);
  PICK(getrf, j->dbl)(&n, &n, o, &n, ipiv, &info);
  if (info) return info;
  PICK(getri, j->dbl)(&n, o, &n, ipiv, ws, &j->lwork, &info);
  return info;
}

static int run_chol(job* j, int64_t b, char* ws) {
  (void)ws;
  int n = j->n, info = 0;
  size_t mat = (size_t)n * n * j->esz;
  char* o = j->o[0] + b * mat;
  memcpy(o, j->a + b * mat, mat);
  char uplo = j->upper ? 'L' : 'U';
  PICK(potrf, j->dbl)(&uplo, &n, o, &n, &info, 1);
  zero_triangle(j, o, n, !j->upper);
  return info;
}

static int run_eigh(job* j, int64_t b, char* ws) {
  int n = j->n, info = 0;
  size_t mat = (size_t)n * n * j->esz, e = j->esz;
  char* w = j->o[0] + b * n * e;
  char* work = ws + mat;
  int* iwork = (int*)(work + (size_t)j->lwork * e);
  if (!all_finite(j, j->a + b * mat, (int64_t)n * n)) {
    fill_nan(j, w, n);
    if (j->flag) fill_nan(j, j->o[1] + b * mat, (int64_t)n * n);
    return 0;
  }
  memcpy(ws, j->a + b * mat, mat); /* symmetric: the view is a itself */
  char jobz = j->flag ? 'V' : 'N', uplo = j->upper ? 'L' : 'U';
  PICK(syevd, j->dbl)
  (&jobz, &uplo, &n, ws, &n, w, work, &j->lwork, iwork, &j->liwork, &info, 1,
   1);
  if (!info && j->flag) transpose(j, j->o[1] + b * mat, ws, n, n);
  return info;
}

static int run_eig(job* j, int64_t b, char* ws) {
  int n = j->n, info = 0, one = 1;
  size_t mat = (size_t)n * n * j->esz, e = j->esz;
  char *wr = ws + mat, *wi = wr + n * e, *vr = wi + n * e;
  char* work = vr + mat;
  float* w = (float*)j->o[0] + 2 * b * n;
  float* v = j->flag ? (float*)j->o[1] + 2 * b * n * n : NULL;
  if (!all_finite(j, j->a + b * mat, (int64_t)n * n)) {
    for (int64_t i = 0; i < 2 * n; i++) w[i] = NAN;
    for (int64_t i = 0; v && i < 2 * (int64_t)n * n; i++) v[i] = NAN;
    return 0;
  }
  transpose(j, ws, j->a + b * mat, n, n);
  char jl = 'N', jr = j->flag ? 'V' : 'N';
  PICK(geev, j->dbl)
  (&jl, &jr, &n, ws, &n, wr, wi, NULL, &one, vr, j->flag ? &n : &one, work,
   &j->lwork, &info, 1, 1);
  if (info) return info;
  for (int c = 0; c < n; c++) {
    w[2 * c] = (float)get(j, wr, c);
    w[2 * c + 1] = (float)get(j, wi, c);
  }
  for (int c = 0; v && c < n; c++) {
    bool pair = get(j, wi, c) != 0 && c + 1 < n;
    for (int r = 0; r < n; r++) {
      double re = get(j, vr, r + (int64_t)c * n);
      double im = pair ? get(j, vr, r + (int64_t)(c + 1) * n) : 0;
      float* x = v + 2 * ((int64_t)r * n + c);
      x[0] = (float)re, x[1] = (float)im;
      if (pair) x[2] = (float)re, x[3] = (float)-im;
    }
    c += pair;
  }
  return 0;
}

static int run_solve(job* j, int64_t b, char* ws) {
  int n = j->n, k = j->nrhs, info = 0;
  size_t mat = (size_t)n * n * j->esz, rhs = (size_t)n * k * j->esz;
  char* bm = ws + mat;
  int* ipiv = (int*)(bm + rhs);
  memcpy(ws, j->a + b * mat, mat); /* the column-major view: a^T */
  PICK(getrf, j->dbl)(&n, &n, ws, &n, ipiv, &info);
  if (info) return info;
  transpose(j, bm, j->b + b * rhs, n, k);
  char t = 'T';
  PICK(getrs, j->dbl)(&t, &n, &k, ws, &n, ipiv, bm, &n, &info, 1);
  transpose(j, j->o[0] + b * rhs, bm, k, n);
  return info;
}

/* ---------------- complex64 ----------------
 * A column-major copy of a (transpose), LAPACK's complex routine, the
 * results transposed back; real outputs (singular values, Hermitian
 * eigenvalues) are float32. Scratch: the copy, then what plan() sized. */
static bool c_nonfinite(job* j, int64_t b, int64_t nreal, float* r,
                        int64_t ncplx, float* c, int64_t ncplx2, float* c2) {
  size_t mat = (size_t)j->m * j->n * 8;
  if (all_finite(j, j->a + b * mat, 2 * (int64_t)j->m * j->n)) return false;
  fill_nan(j, r, nreal);
  if (c) fill_nan(j, c, 2 * ncplx);
  if (c2) fill_nan(j, c2, 2 * ncplx2);
  return true;
}

static int run_csvd(job* j, int64_t b, char* ws) {
  int m = j->m, n = j->n, k = m < n ? m : n, info = 0;
  size_t mat = (size_t)m * n * 8;
  float* s_out = (float*)j->o[j->flag ? 1 : 0] + b * k;
  char *uo = j->flag ? j->o[0] + b * (size_t)m * m * 8 : NULL,
       *vo = j->flag ? j->o[2] + b * (size_t)n * n * 8 : NULL;
  char *u = ws + mat, *vt = u + (size_t)m * m * 8,
       *work = vt + (size_t)n * n * 8;
  float* rwork = (float*)(work + (size_t)j->lwork * 8);
  int* iwork = (int*)(rwork + j->lrwork);
  if (c_nonfinite(j, b, k, s_out, (int64_t)m * m, (float*)uo, (int64_t)n * n,
                  (float*)vo))
    return 0;
  transpose(j, ws, j->a + b * mat, m, n);
  char jobz = j->flag ? 'A' : 'N';
  int ldu = j->flag ? m : 1, ldvt = j->flag ? n : 1;
  cgesdd_(&jobz, &m, &n, ws, &m, s_out, u, &ldu, vt, &ldvt, work, &j->lwork,
          rwork, iwork, &info, 1);
  if (info || !j->flag) return info;
  transpose(j, uo, u, m, m);
  transpose(j, vo, vt, n, n);
  return 0;
}

static int run_ceigh(job* j, int64_t b, char* ws) {
  int n = j->n, info = 0;
  size_t mat = (size_t)n * n * 8;
  float* w = (float*)j->o[0] + b * n;
  char* vo = j->flag ? j->o[1] + b * mat : NULL;
  char* work = ws + mat;
  float* rwork = (float*)(work + (size_t)j->lwork * 8);
  int* iwork = (int*)(rwork + j->lrwork);
  if (c_nonfinite(j, b, n, w, (int64_t)n * n, (float*)vo, 0, NULL)) return 0;
  transpose(j, ws, j->a + b * mat, n, n); /* a itself, column-major */
  char jobz = j->flag ? 'V' : 'N', uplo = j->upper ? 'U' : 'L';
  cheevd_(&jobz, &uplo, &n, ws, &n, w, work, &j->lwork, rwork, &j->lrwork,
          iwork, &j->liwork, &info, 1, 1);
  if (!info && vo) transpose(j, vo, ws, n, n);
  return info;
}

static int run_ceig(job* j, int64_t b, char* ws) {
  int n = j->n, info = 0, one = 1;
  size_t mat = (size_t)n * n * 8;
  float* w = (float*)j->o[0] + 2 * b * n;
  char* vo = j->flag ? j->o[1] + b * mat : NULL;
  char *vr = ws + mat, *work = vr + mat;
  float* rwork = (float*)(work + (size_t)j->lwork * 8);
  if (c_nonfinite(j, b, 2 * (int64_t)n, w, (int64_t)n * n, (float*)vo, 0, NULL))
    return 0;
  transpose(j, ws, j->a + b * mat, n, n);
  char jl = 'N', jr = j->flag ? 'V' : 'N';
  cgeev_(&jl, &jr, &n, ws, &n, w, NULL, &one, vr, j->flag ? &n : &one, work,
         &j->lwork, rwork, &info, 1, 1);
  if (!info && vo) transpose(j, vo, vr, n, n);
  return info;
}

static int run_one(job* j, int64_t b, char* ws) {
  if (j->cplx)
    return j->k == K_SVD    ? run_csvd(j, b, ws)
           : j->k == K_EIGH ? run_ceigh(j, b, ws)
                            : run_ceig(j, b, ws);
  switch (j->k) {
    case K_LUF:
      return run_luf(j, b, ws);
    case K_QRF:
      return run_qrf(j, b, ws);
    case K_SVD:
      return run_svd(j, b, ws);
    case K_INV:
      return run_inv(j, b, ws);
    case K_CHOL:
      return run_chol(j, b, ws);
    case K_EIGH:
      return run_eigh(j, b, ws);
    case K_EIG:
      return run_eig(j, b, ws);
    case K_SOLVE:
      return run_solve(j, b, ws);
  }
  return -1;
}

/* ---------------- workspace ---------------- */
static size_t align16(size_t x) {
  return (x + 15) & ~(size_t)15;
}

/* plan() of the complex kinds: work (complex), rwork (float), iwork. */
static void plan_complex(job* j) {
  int m = j->m, n = j->n, q = -1, one = 1, info = 0, iq = 0;
  size_t mn = (size_t)(m < n ? m : n), mx = (size_t)(m < n ? n : m);
  size_t mat = (size_t)m * n * 8, ints = 0;
  float wq[2] = {0, 0}, rq[2] = {0, 0}; /* queries write rwork[0] too */
  int iw[2] = {0, 0};
  size_t extra = 0; /* complex elements besides the copy and work */
  if (j->k == K_SVD) {
    char jobz = j->flag ? 'A' : 'N';
    int ldu = j->flag ? m : 1, ldvt = j->flag ? n : 1;
    cgesdd_(&jobz, &m, &n, NULL, &m, NULL, NULL, &ldu, NULL, &ldvt, wq, &q, rq,
            iw, &info, 1);
    size_t r1 = 5 * mn * mn + 5 * mn, r2 = 2 * mx * mn + 2 * mn * mn + mn;
    size_t lr = r1 > r2 ? r1 : r2;
    j->lrwork = (int)(lr > 7 * mn ? lr : 7 * mn);
    extra = (size_t)m * m + (size_t)n * n, ints = 8 * mn;
  } else if (j->k == K_EIGH) {
    char jobz = j->flag ? 'V' : 'N', uplo = 'L';
    cheevd_(&jobz, &uplo, &n, NULL, &n, NULL, wq, &q, rq, &q, &iq, &q, &info, 1,
            1);
    j->lrwork = rq[0] < 1 ? 1 : (int)rq[0] + 1;
    j->liwork = iq < 1 ? 1 : iq;
    ints = (size_t)j->liwork;
  } else {
    char jl = 'N', jr = j->flag ? 'V' : 'N';
    cgeev_(&jl, &jr, &n, NULL, &n, NULL, NULL, &one, NULL, j->flag ? &n : &one,
           wq, &q, rq, &info, 1, 1);
    j->lrwork = 2 * n;
    extra = (size_t)n * n;
  }
  j->lwork = lwork_of(j, wq);
  j->ws_bytes = align16(mat + (extra + (size_t)j->lwork) * 8 +
                        (size_t)j->lrwork * sizeof(float)) +
                ints * sizeof(int);
}

/* Queries LAPACK's optimal workspace and sets j->ws_bytes. */
static void plan(job* j) {
  if (j->cplx) {
    plan_complex(j);
    return;
  }
  int m = j->m, n = j->n, k = m < n ? m : n, info = 0, q = -1, one = 1;
  size_t e = j->esz, mat = (size_t)m * n * e;
  double wq[2] = {0, 0}; /* room for one element of either type */
  int iq = 0;
  j->lwork = 1, j->liwork = 1;
  switch (j->k) {
    case K_LUF:
      j->ws_bytes = align16(mat) + (size_t)(k + m) * sizeof(int);
      break;
    case K_QRF:
      PICK(geqrf, j->dbl)(&m, &n, NULL, &m, NULL, wq, &q, &info);
      j->lwork = lwork_of(j, wq);
      PICK(orgqr, j->dbl)(&m, &k, &k, NULL, &m, NULL, wq, &q, &info);
      if (lwork_of(j, wq) > j->lwork) j->lwork = lwork_of(j, wq);
      j->ws_bytes = mat + (size_t)(k + j->lwork) * e;
      break;
    case K_SVD: {
      char jobz = j->flag ? 'A' : 'N';
      int ldu = j->flag ? m : 1, ldvt = j->flag ? n : 1;
      PICK(gesdd, j->dbl)
      (&jobz, &m, &n, NULL, &m, NULL, NULL, &ldu, NULL, &ldvt, wq, &q, NULL,
       &info, 1);
      j->lwork = lwork_of(j, wq);
      j->ws_bytes = align16(mat + (size_t)(m * m + n * n + j->lwork) * e) +
                    (size_t)8 * (k + 1) * sizeof(int);
      break;
    }
    case K_INV:
      if (!j->flag) {
        PICK(getri, j->dbl)(&n, NULL, &n, NULL, wq, &q, &info);
        j->lwork = lwork_of(j, wq);
      }
      j->ws_bytes = align16((size_t)j->lwork * e) + (size_t)n * sizeof(int);
      break;
    case K_CHOL:
      j->ws_bytes = 16;
      break;
    case K_EIGH: {
      char jobz = j->flag ? 'V' : 'N', uplo = 'U';
      PICK(syevd, j->dbl)
      (&jobz, &uplo, &n, NULL, &n, NULL, wq, &q, &iq, &q, &info, 1, 1);
      j->lwork = lwork_of(j, wq);
      j->liwork = iq < 1 ? 1 : iq;
      j->ws_bytes =
          align16(mat + (size_t)j->lwork * e) + (size_t)j->liwork * sizeof(int);
      break;
    }
    case K_EIG: {
      char jl = 'N', jr = j->flag ? 'V' : 'N';
      PICK(geev, j->dbl)
      (&jl, &jr, &n, NULL, &n, NULL, NULL, NULL, &one, NULL,
       j->flag ? &n : &one, wq, &q, &info, 1, 1);
      j->lwork = lwork_of(j, wq);
      j->ws_bytes = (2 * mat + (size_t)(2 * n + j->lwork) * e);
      break;
    }
    case K_SOLVE:
      j->ws_bytes =
          align16(mat + (size_t)n * j->nrhs * e) + (size_t)n * sizeof(int);
      break;
  }
}

static void chunk(void* ctx, int64_t begin, int64_t end) {
  job* j = ctx;
  char* ws = malloc(j->ws_bytes ? j->ws_bytes : 1);
  if (!ws) {
    int zero = 0;
    atomic_compare_exchange_strong(&j->fail_info, &zero, -2);
    return;
  }
  for (int64_t b = begin; b < end; b++) {
    int info = run_one(j, b, ws);
    if (info) {
      int zero = 0;
      atomic_compare_exchange_strong(&j->fail_info, &zero, info);
    }
  }
  free(ws);
}

/* What a failing info means, per kind (as NumPy's LinAlgError says it). */
static cmx_status report(const job* j, const char* op, int info) {
  if (info == -2)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[%s] out of memory.", op);
  if (info < 0)
    return cmx_kernel_error(CMX_ERR_RUNTIME,
                            "[%s] LAPACK rejected argument %d.", op, -info);
  switch (j->k) {
    case K_INV:
    case K_SOLVE:
      return cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] Singular matrix.", op);
    case K_CHOL:
      return cmx_kernel_error(CMX_ERR_RUNTIME,
                              "[%s] Matrix is not positive definite.", op);
    default:
      return cmx_kernel_error(CMX_ERR_RUNTIME, "[%s] %s did not converge.", op,
                              j->k == K_SVD ? "SVD" : "Eigensolver");
  }
}

/* Matrices with no rows or no columns: zeros, except the identities an
 * empty factorization still has (SVD's U and Vt, LU's row order). */
static cmx_status fill_empty(const job* j, const cmx_array* out, int nout) {
  for (int i = 0; i < nout; i++)
    if (out[i]->size)
      memset(j->o[i], 0, (size_t)out[i]->size * cmx_dtype_size(out[i]->dtype));
  for (int64_t b = 0; b < j->batch; b++) {
    if (j->k == K_SVD && j->flag) { /* complex: the real parts */
      int64_t c = j->cplx ? 2 : 1;
      for (int64_t r = 0; r < j->m; r++)
        put(j, j->o[0], c * ((b * j->m + r) * j->m + r), 1);
      for (int64_t r = 0; r < j->n; r++)
        put(j, j->o[2], c * ((b * j->n + r) * j->n + r), 1);
    }
    if (j->k == K_LUF)
      for (int64_t r = 0; r < j->m; r++)
        ((uint32_t*)j->o[2])[b * j->m + r] = (uint32_t)r;
  }
  return CMX_OK;
}

/* Allocates the outputs, runs the job over the batch, reports. */
static cmx_status run(job* j, const char* op, const cmx_array* out, int nout) {
  for (int i = 0; i < nout; i++) {
    if (cmx_kernel_alloc(out[i]) != CMX_OK) return cmx_last_status();
    j->o[i] = cmx_kernel_data(out[i]);
  }
  if (j->batch == 0 || j->m == 0 || j->n == 0) return fill_empty(j, out, nout);
  plan(j);
  atomic_init(&j->fail_info, 0);
  if (j->batch == 1) {
    chunk(j, 0, 1);
  } else {
    bool held = cmx__blas_single_begin();
    double flops = (double)j->m * j->n * (j->m > j->n ? j->m : j->n);
    cmx__parallel_for(j->batch, 1 + (int64_t)(65536 / (flops + 1)), chunk, j);
    if (held) cmx__blas_single_end();
  }
  int info = atomic_load(&j->fail_info);
  return info ? report(j, op, info) : CMX_OK;
}

static job job_of(kind k, cmx_array a) {
  job j;
  memset(&j, 0, sizeof j);
  j.k = k;
  j.dbl = a->dtype == CMX_FLOAT64;
  j.cplx = a->dtype == CMX_COMPLEX64;
  j.esz = j.dbl || j.cplx ? 8 : 4;
  j.m = (int)a->dims[a->ndim - 2];
  j.n = (int)a->dims[a->ndim - 1];
  j.batch = a->size / ((int64_t)j.m * j.n > 0 ? (int64_t)j.m * j.n : 1);
  if ((int64_t)j.m * j.n == 0) {
    j.batch = 1;
    for (int d = 0; d < a->ndim - 2; d++) j.batch *= a->dims[d];
  }
  j.a = cmx_kernel_data(a);
  return j;
}

#define CHECK_IN(op, a)                                                       \
  if (!cmx_kernel_is_contiguous(a) ||                                         \
      ((a)->dtype != CMX_FLOAT32 && (a)->dtype != CMX_FLOAT64))               \
    return cmx_kernel_error(CMX_ERR_VALUE, "[" op                             \
                                           "] expects contiguous float32 or " \
                                           "float64 input.");
/* CHECK_IN, complex64 allowed too (SVD, Eigh, Eig). */
#define CHECK_IN_C(op, a)                                               \
  if (!cmx_kernel_is_contiguous(a) ||                                   \
      ((a)->dtype != CMX_FLOAT32 && (a)->dtype != CMX_FLOAT64 &&        \
       (a)->dtype != CMX_COMPLEX64))                                    \
    return cmx_kernel_error(CMX_ERR_VALUE,                              \
                            "[" op                                      \
                            "] expects contiguous float32, float64 or " \
                            "complex64 input.");

CMX__KERNEL(cmx__cpu_luf) {
  (void)p, (void)nin;
  CHECK_IN("linalg::lu_factor", in[0]);
  job j = job_of(K_LUF, in[0]);
  return run(&j, "linalg::lu_factor", out, nout);
}

CMX__KERNEL(cmx__cpu_qrf) {
  (void)p, (void)nin;
  CHECK_IN("linalg::qr", in[0]);
  job j = job_of(K_QRF, in[0]);
  return run(&j, "linalg::qr", out, nout);
}

CMX__KERNEL(cmx__cpu_svd) {
  (void)nin;
  CHECK_IN_C("linalg::svd", in[0]);
  job j = job_of(K_SVD, in[0]);
  j.flag = ((const cmx__svd_params*)cmx_primitive_params(p))->uv;
  return run(&j, "linalg::svd", out, nout);
}

CMX__KERNEL(cmx__cpu_inverse) {
  (void)nin;
  const cmx__inverse_params* q = cmx_primitive_params(p);
  CHECK_IN("linalg::inv", in[0]);
  job j = job_of(K_INV, in[0]);
  j.flag = q->tri, j.upper = q->upper;
  return run(&j, q->tri ? "linalg::tri_inv" : "linalg::inv", out, nout);
}

CMX__KERNEL(cmx__cpu_cholesky) {
  (void)nin;
  CHECK_IN("linalg::cholesky", in[0]);
  job j = job_of(K_CHOL, in[0]);
  j.upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  return run(&j, "linalg::cholesky", out, nout);
}

CMX__KERNEL(cmx__cpu_eigh) {
  (void)nin;
  const cmx__eigh_params* q = cmx_primitive_params(p);
  CHECK_IN_C("linalg::eigh", in[0]);
  job j = job_of(K_EIGH, in[0]);
  j.upper = q->upper, j.flag = q->vectors;
  return run(&j, "linalg::eigh", out, nout);
}

CMX__KERNEL(cmx__cpu_eig) {
  (void)nin;
  CHECK_IN_C("linalg::eig", in[0]);
  job j = job_of(K_EIG, in[0]);
  j.flag = ((const cmx__eig_params*)cmx_primitive_params(p))->vectors;
  return run(&j, "linalg::eig", out, nout);
}

CMX__KERNEL(cmx__cpu_solve) {
  (void)p, (void)nin;
  CHECK_IN("linalg::solve", in[0]);
  CHECK_IN("linalg::solve", in[1]);
  job j = job_of(K_SOLVE, in[0]);
  j.b = cmx_kernel_data(in[1]);
  j.nrhs = (int)in[1]->dims[in[1]->ndim - 1];
  if (j.nrhs == 0) {
    for (int i = 0; i < nout; i++)
      if (cmx_kernel_alloc(out[i]) != CMX_OK) return cmx_last_status();
    return CMX_OK;
  }
  return run(&j, "linalg::solve", out, nout);
}

/* b copied to x, then x = a^-1 x in place by trsm on the row-major data. */
CMX__KERNEL(cmx__cpu_solve_triangular) {
  (void)nin, (void)nout;
  CHECK_IN("linalg::solve_triangular", in[0]);
  CHECK_IN("linalg::solve_triangular", in[1]);
  cmx_array a = in[0], bb = in[1], o = out[0];
  int upper = ((const cmx__uplo_params*)cmx_primitive_params(p))->upper;
  if (cmx_kernel_alloc(o) != CMX_OK) return cmx_last_status();
  int64_t n = a->dims[a->ndim - 1], k = bb->dims[bb->ndim - 1];
  if (o->size == 0 || n == 0) return CMX_OK;
  int64_t batch = o->size / (n * k);
  memcpy(cmx_kernel_data(o), cmx_kernel_data(bb),
         (size_t)o->size * (a->dtype == CMX_FLOAT64 ? 8 : 4));
  CBLAS_UPLO ul = upper ? CblasUpper : CblasLower;
  job j = job_of(K_SOLVE, a);
  for (int64_t b = 0; b < batch; b++)
    for (int64_t i = 0; i < n; i++)
      if (get(&j, j.a, b * n * n + i * n + i) == 0)
        return cmx_kernel_error(CMX_ERR_RUNTIME,
                                "[linalg::solve_triangular] Singular matrix.");
  for (int64_t b = 0; b < batch; b++) {
    if (a->dtype == CMX_FLOAT64)
      cblas_dtrsm(CblasRowMajor, CblasLeft, ul, CblasNoTrans, CblasNonUnit,
                  (int)n, (int)k, 1.0,
                  (const double*)cmx_kernel_data(a) + b * n * n, (int)n,
                  (double*)cmx_kernel_data(o) + b * n * k, (int)k);
    else
      cblas_strsm(CblasRowMajor, CblasLeft, ul, CblasNoTrans, CblasNonUnit,
                  (int)n, (int)k, 1.0f,
                  (const float*)cmx_kernel_data(a) + b * n * n, (int)n,
                  (float*)cmx_kernel_data(o) + b * n * k, (int)k);
  }
  return CMX_OK;
}
