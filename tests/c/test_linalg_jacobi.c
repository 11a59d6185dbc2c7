/* cmx's batched Jacobi eigh and SVD (src/backend/cuda/kernels/linalg.cu,
 * used on the GPU for matrices up to 64 x 64).
 *
 * On the host (jacobi_host.h, no GPU needed): the kernels' own code, every
 * phase's items walked forward and backward (the results must be the same
 * bit for bit, else items of a phase depend on each other: a race on the
 * GPU). On each GPU (devices.h): mx.linalg.svd / eigh / eigvalsh, with the
 * Jacobi kernels and with CMX_CUDA_JACOBI=0 (cuSOLVER). Both check U S V^T
 * = A (V diag(w) V^T = A), orthogonal U and V, the order of the values,
 * and the values against the CPU's (LAPACK), in float32 and float64, for
 * n = 1, 2, 3, 17, 32, 33, 64 and non-square shapes, batches of 1 to 300,
 * random, rank-deficient, repeated-eigenvalue, zero and huge (squares
 * past float32's range) matrices, and a
 * non-finite matrix inside a batch (NaN results for it alone). */
#include "harness.h"
#include "jacobi_host.h"

enum { RANDOM, RANK_DEFICIENT, REPEATED, ZERO, HUGE_VALUES, NKINDS };
static const char* const kind_names[NKINDS] = {"random", "rank-deficient",
                                               "repeated", "zero", "huge"};

static double urand(uint64_t* s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*s >> 11) * (2.0 / 9007199254740992.0) - 1;
}

/* A batch of m x n row-major matrices of the kind. REPEATED (square):
 * H diag(d) H^T for a Householder reflection H and d in {-1, 0, 1, 2}
 * (each value several times). */
static void make(double* a, long long batch, int m, int n, int kind,
                 uint64_t* seed) {
  int k = m < n ? m : n, r = k / 2;
  for (long long b = 0; b < batch; b++) {
    double* x = a + b * m * n;
    /* HUGE_VALUES: squares overflow float32 (the kernels scale first) */
    double big = kind == HUGE_VALUES ? 1e20 : 1;
    for (int e = 0; e < m * n; e++)
      x[e] = kind == RANDOM || kind == HUGE_VALUES ? big * urand(seed) : 0;
    if (kind == RANK_DEFICIENT) { /* (m x r) (r x n) */
      double* f = malloc(sizeof(double) * (size_t)(m + n) * (r ? r : 1));
      for (int e = 0; e < (m + n) * r; e++) f[e] = urand(seed);
      for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
          for (int t = 0; t < r; t++)
            x[i * n + j] += f[i * r + t] * f[m * r + t * n + j];
      free(f);
    }
    if (kind == REPEATED) {
      double v[64], vv = 0;
      for (int i = 0; i < n; i++) {
        v[i] = urand(seed);
        vv += v[i] * v[i];
      }
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
          for (int t = 0; t < n; t++) {
            double hi = (i == t) - 2 * v[i] * v[t] / vv;
            double hj = (j == t) - 2 * v[j] * v[t] / vv;
            x[i * n + j] += hi * (double)(t % 4 - 1) * hj;
          }
    }
  }
}

/* What a run gave, as doubles. */
typedef struct {
  double *s, *u, *vt; /* svd (u, vt with uv) */
  double *w, *v;      /* eigh (v with vectors) */
} result;

static void result_free(result* r) {
  free(r->s), free(r->u), free(r->vt), free(r->w), free(r->v);
  memset(r, 0, sizeof *r);
}

/* ---------------- the kernels on the host ---------------- */
static void* to_dtype(const double* x, int64_t count, int dbl) {
  void* p = malloc((size_t)(count ? count : 1) * (dbl ? 8 : 4));
  for (int64_t i = 0; i < count; i++)
    if (dbl)
      ((double*)p)[i] = x[i];
    else
      ((float*)p)[i] = (float)x[i];
  return p;
}
static double* to_double(const void* p, int64_t count, int dbl) {
  double* x = malloc(sizeof(double) * (size_t)(count ? count : 1));
  for (int64_t i = 0; i < count; i++)
    x[i] = dbl ? ((const double*)p)[i] : ((const float*)p)[i];
  return x;
}

/* The kernels over every block, items forward or backward. */
static void host_run(const double* a, long long batch, int m, int n, int dbl,
                     bool svd, int flag, int reverse, result* r) {
  int k = m < n ? m : n;
  void* in = to_dtype(a, batch * m * n, dbl);
  int64_t c1 = batch * (svd ? k : n), c2 = batch * m * m, c3 = batch * n * n;
  void *o1 = calloc((size_t)c1 + 1, 8), *o2 = calloc((size_t)c2 + 1, 8),
       *o3 = calloc((size_t)c3 + 1, 8);
  jh_reverse = reverse;
  for (long long b = 0; b < batch; b++) {
    cmx_la_host_block = b;
    if (svd && dbl) jh_svd_f64(in, o1, o2, o3, batch, m, n, flag);
    if (svd && !dbl) jh_svd_f32(in, o1, o2, o3, batch, m, n, flag);
    if (!svd && dbl) jh_eigh_f64(in, o1, o3, batch, n, flag, 1);
    if (!svd && !dbl) jh_eigh_f32(in, o1, o3, batch, n, flag, 1);
  }
  if (svd) {
    r->s = to_double(o1, c1, dbl);
    r->u = to_double(o2, c2, dbl);
    r->vt = to_double(o3, c3, dbl);
  } else {
    r->w = to_double(o1, c1, dbl);
    r->v = to_double(o3, c3, dbl);
  }
  free(in), free(o1), free(o2), free(o3);
}

/* ---------------- mx.linalg on a device ---------------- */
static double* read_all(cmx_array x) {
  h_tensor t = h_read(x);
  double* d = malloc(sizeof(double) * (size_t)(t.size ? t.size : 1));
  memcpy(d, t.re, sizeof(double) * (size_t)t.size);
  h_free(&t);
  return d;
}

/* svd (flag: compute_uv) or eigh (flag: upper) of a on device dev;
 * false (a failed check) when it does not evaluate. */
static bool device_run(const double* a, long long batch, int m, int n,
                       cmx_dtype dt, int dev, bool svd, int flag, result* r) {
  int64_t shape[3] = {batch, m, n};
  cmx_array x = h_from_doubles(a, shape, 3, dt), o[3] = {NULL, NULL, NULL};
  cmx_stream s = h_stream(dev);
  int nout = 0;
  cmx_status st = svd ? cmx_linalg_svd(o, &nout, x, flag, s)
                      : cmx_linalg_eigh(&o[0], &o[1], x, flag ? "U" : "L", s);
  if (!svd) nout = 2;
  bool ok = st == CMX_OK && cmx_eval(o, (size_t)nout) == CMX_OK;
  CHECK_MSG(ok, "svd/eigh on device %d: %s", dev, cmx_last_error());
  if (ok && svd && flag) {
    r->u = read_all(o[0]), r->s = read_all(o[1]), r->vt = read_all(o[2]);
  } else if (ok && svd) {
    r->s = read_all(o[0]);
  } else if (ok) {
    r->w = read_all(o[0]), r->v = read_all(o[1]);
  }
  for (int i = 0; i < 3; i++) cmx_array_release(o[i]);
  cmx_array_release(x);
  return ok;
}

/* ---------------- checks ---------------- */
static double max_abs(const double* x, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = fabs(x[i]) > m ? fabs(x[i]) : m;
  return m;
}

/* max |Q^T Q - I| of the d x d row-major q. */
static double orth_err(const double* q, int d) {
  double e = 0;
  for (int i = 0; i < d; i++)
    for (int j = 0; j < d; j++) {
      double acc = 0;
      for (int t = 0; t < d; t++) acc += q[t * d + i] * q[t * d + j];
      acc = fabs(acc - (i == j));
      e = acc > e || acc != acc ? acc : e;
    }
  return e;
}

/* got (an svd or eigh result of a) against ref's values (the CPU's). */
static void check(const char* what, const double* a, long long batch, int m,
                  int n, bool svd, int flag, int dbl, const result* got,
                  const result* ref) {
  int k = m < n ? m : n;
  /* At least 64 eps: cuSOLVER's float64 3x3 factors reach 24.1 eps of
   * orthogonality on the H200. */
  int big = m > n ? m : n;
  double eps = dbl ? 2.2e-16 : 1.2e-7, tol = 8 * eps * (big > 8 ? big : 8);
  for (long long b = 0; b < batch; b++) {
    const double* x = a + b * m * n;
    double scale = 1 + max_abs(x, (int64_t)m * n) * k;
    const double* vals = svd ? got->s + b * k : got->w + b * n;
    const double* want = svd ? ref->s + b * k : ref->w + b * n;
    double verr = 0, rec = 0, o1 = 0, o2 = 0;
    bool order = true;
    for (int t = 0; t < k; t++) {
      double d = fabs(vals[t] - want[t]);
      verr = d > verr || d != d ? d : verr;
      /* Repeated values may come out of order by rounding (cuSOLVER's
       * float64 eigh of a repeated spectrum did, by 2e-15). */
      double slack = tol * scale;
      if (t && (svd ? vals[t] > vals[t - 1] + slack
                    : vals[t] < vals[t - 1] - slack))
        order = false;
    }
    if (svd && flag) {
      const double *u = got->u + b * m * m, *vt = got->vt + b * n * n;
      for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
          double acc = 0;
          for (int t = 0; t < k; t++)
            acc += u[i * m + t] * vals[t] * vt[t * n + j];
          double d = fabs(acc - x[i * n + j]);
          rec = d > rec || d != d ? d : rec;
        }
      o1 = orth_err(u, m);
      /* vt's rows: orthogonal as vt^T's columns */
      double* v = malloc(sizeof(double) * (size_t)n * n);
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) v[i * n + j] = vt[j * n + i];
      o2 = orth_err(v, n);
      free(v);
    } else if (!svd) {
      const double* v = got->v + b * n * n;
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
          /* the triangle read: lower (or upper) of a, mirrored */
          bool keep = flag ? j >= i : j <= i;
          double want_ij = keep ? x[i * n + j] : x[j * n + i], acc = 0;
          for (int t = 0; t < n; t++)
            acc += v[i * n + t] * vals[t] * v[j * n + t];
          double d = fabs(acc - want_ij);
          rec = d > rec || d != d ? d : rec;
        }
      o1 = orth_err(v, n);
    }
    bool ok = verr <= tol * scale && rec <= tol * scale && o1 <= tol &&
              o2 <= tol && order;
    CHECK_MSG(ok,
              "%s matrix %lld: values %.2e reconstruction %.2e orthogonality "
              "%.2e %.2e (tol %.2e, scale %.1f) order %d",
              what, b, verr, rec, o1, o2, tol, scale, order);
    if (!ok) return;
  }
}

/* The CPU's values (svd without vectors, eigvalsh) of a. */
static void cpu_values(const double* a, long long batch, int m, int n,
                       cmx_dtype dt, bool svd, int flag, result* r) {
  int64_t shape[3] = {batch, m, n};
  cmx_array x = h_from_doubles(a, shape, 3, dt), o = NULL;
  int nout = 0;
  cmx_status st =
      svd ? cmx_linalg_svd(&o, &nout, x, false, h_stream(0))
          : cmx_linalg_eigvalsh(&o, x, flag ? "U" : "L", h_stream(0));
  CHECK(st == CMX_OK && cmx_eval(&o, 1) == CMX_OK);
  if (svd)
    r->s = read_all(o);
  else
    r->w = read_all(o);
  cmx_array_release(o);
  cmx_array_release(x);
}

static bool same(const double* x, const double* y, int64_t n) {
  return (!x && !y) ||
         (x && y && memcmp(x, y, sizeof(double) * (size_t)n) == 0);
}

/* One case on the host (both orders) and every GPU. */
static void run_case(long long batch, int m, int n, int kind, int dbl,
                     uint64_t seed) {
  cmx_dtype dt = dbl ? CMX_FLOAT64 : CMX_FLOAT32;
  int k = m < n ? m : n;
  double* a = malloc(sizeof(double) * (size_t)(batch * m * n));
  make(a, batch, m, n, kind, &seed);
  /* values of the matrices as stored in dt */
  for (long long i = 0; i < batch * m * n; i++)
    if (!dbl) a[i] = (float)a[i];
  for (int svd = 1; svd >= (m == n ? 0 : 1); svd--)
    for (int flag = 0; flag < 2; flag++) {
      char what[160];
      result ref = {0}, fw = {0}, bw = {0};
      cpu_values(a, batch, m, n, dt, svd, svd ? 0 : flag, &ref);
      snprintf(what, sizeof what, "host %s %s (%lld, %d, %d) %s %s=%d",
               svd ? "svd" : "eigh", dbl ? "f64" : "f32", batch, m, n,
               kind_names[kind], svd ? "uv" : "upper", flag);
      bool host = batch * m * n <= 40000; /* (300, 64, 64): the GPU only */
      if (host) host_run(a, batch, m, n, dbl, svd, flag, 0, &fw);
      if (host) host_run(a, batch, m, n, dbl, svd, flag, 1, &bw);
      if (host) check(what, a, batch, m, n, svd, flag, dbl, &fw, &ref);
      CHECK_MSG(
          !host || svd
              ? same(fw.s, bw.s, batch * k) &&
                    (!flag || (same(fw.u, bw.u, batch * m * m) &&
                               same(fw.vt, bw.vt, batch * n * n)))
              : same(fw.w, bw.w, batch * n) && same(fw.v, bw.v, batch * n * n),
          "%s: items of a phase depend on each other", what);
      result_free(&fw), result_free(&bw);
      for (int dev = 1; dev < h_ndevices(); dev++)
        for (int jac = 1; jac >= 0; jac--) {
          if (jac)
            unsetenv("CMX_CUDA_JACOBI");
          else
            setenv("CMX_CUDA_JACOBI", "0", 1);
          snprintf(what, sizeof what, "gpu:%d %s %s (%lld, %d, %d) %s %s=%d%s",
                   dev - 1, svd ? "svd" : "eigh", dbl ? "f64" : "f32", batch, m,
                   n, kind_names[kind], svd ? "uv" : "upper", flag,
                   jac ? "" : " (cuSOLVER)");
          result g = {0};
          if (device_run(a, batch, m, n, dt, dev, svd, flag, &g))
            check(what, a, batch, m, n, svd, flag, dbl, &g, &ref);
          result_free(&g);
          unsetenv("CMX_CUDA_JACOBI");
        }
      result_free(&ref);
    }
  free(a);
}

static void test_sizes(void) {
  static const int sq[] = {1, 2, 3, 17, 32, 33, 64};
  uint64_t seed = 7;
  for (int dbl = 0; dbl < 2; dbl++)
    for (size_t i = 0; i < sizeof sq / sizeof sq[0]; i++)
      for (int kind = 0; kind < NKINDS; kind++)
        run_case(kind == RANDOM ? 3 : 1, sq[i], sq[i], kind, dbl, seed++);
}

static void test_shapes_and_batches(void) {
  static const int mn[][2] = {{64, 3}, {3, 64}, {10, 7},  {7, 10},
                              {1, 5},  {5, 1},  {64, 63}, {33, 64}};
  uint64_t seed = 101;
  for (int dbl = 0; dbl < 2; dbl++)
    for (size_t i = 0; i < sizeof mn / sizeof mn[0]; i++) {
      run_case(2, mn[i][0], mn[i][1], RANDOM, dbl, seed++);
      run_case(1, mn[i][0], mn[i][1], RANK_DEFICIENT, dbl, seed++);
    }
  /* long batches of small matrices, one of 64 x 64 */
  run_case(300, 2, 2, RANDOM, 0, seed++);
  run_case(300, 3, 3, REPEATED, 1, seed++);
  run_case(300, 5, 4, RANDOM, 0, seed++);
  run_case(37, 17, 17, RANDOM, 0, seed++);
  if (h_ndevices() > 1) run_case(300, 64, 64, RANDOM, 0, seed++);
}

/* A non-finite matrix inside a batch: NaN values (and vectors) for it,
 * the others as usual. */
static void test_nonfinite(void) {
  for (int dev = 0; dev < h_ndevices(); dev++)
    for (int dbl = 0; dbl < 2; dbl++) {
      int n = 4;
      double a[3 * 16];
      uint64_t seed = 5;
      make(a, 3, n, n, RANDOM, &seed);
      a[16 + 5] = dbl ? INFINITY : NAN;
      for (int svd = 0; svd < 2; svd++) {
        result r = {0};
        if (dev == 0)
          host_run(a, 3, n, n, dbl, svd, 1, 0, &r);
        else if (!device_run(a, 3, n, n, dbl ? CMX_FLOAT64 : CMX_FLOAT32, dev,
                             svd, 1, &r))
          continue;
        const double* vals = svd ? r.s : r.w;
        const double* vec = svd ? r.u : r.v;
        bool ok = true;
        for (int i = 0; i < 3 * n; i++)
          ok = ok && (i / n == 1) == (vals[i] != vals[i]);
        for (int i = 0; i < 3 * n * n; i++)
          ok = ok && (i / (n * n) == 1) == (vec[i] != vec[i]);
        CHECK_MSG(ok, "%s %s non-finite matrix on %s", svd ? "svd" : "eigh",
                  dbl ? "f64" : "f32", dev ? "gpu" : "host");
        result_free(&r);
      }
    }
}

int main(void) {
  cmx_la_host_smem = malloc(1 << 20);
  RUN(test_sizes);
  RUN(test_shapes_and_batches);
  RUN(test_nonfinite);
  free(cmx_la_host_smem);
  return test_summary("test_linalg_jacobi");
}
