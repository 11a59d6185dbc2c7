/* Matrix products big enough to be split over cmx's pool
 * (backend/cpu/matmul.c, product_parts): by rows (M >= N) and by columns,
 * parts of uneven size down to a last part of one row or column (a gemv),
 * transposed operands, 16-bit floats through float32 scratch, addmm's
 * alpha and beta, and batched big products; against a double reference.
 * The pool has 3 threads (CMX_NUM_THREADS). */
#include <math.h>
#include <stdlib.h>

#include "cmx/cmx.h"
#include "test.h"

static cmx_stream S = CMX_STREAM_DEFAULT;
static uint64_t g_seed = 99;

static double urand(void) {
  g_seed = g_seed * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(g_seed >> 11) / 9007199254740992.0 - 0.5;
}

/* A (r, c) array of dtype dt with values from v (doubles, row-major). */
static cmx_array make(const double* v, int64_t r, int64_t c, cmx_dtype dt) {
  int64_t sh[2] = {r, c};
  cmx_array a64 = NULL, a = NULL;
  cmx_array_from_data(&a64, v, sh, 2, CMX_FLOAT64);
  cmx_astype(&a, a64, dt, S);
  cmx_array_release(a64);
  return a;
}

static double* rand_mat(int64_t n) {
  double* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = urand();
  return v;
}

/* max |got - want| / (1 + |want|) over an (M, N) result. */
static double max_err(cmx_array got, const double* want, int64_t n) {
  cmx_array g64 = NULL;
  const double* p = NULL;
  double e = INFINITY;
  if (cmx_astype(&g64, got, CMX_FLOAT64, S) == CMX_OK &&
      cmx_array_data(g64, (const void**)&p) == CMX_OK) {
    e = 0;
    for (int64_t i = 0; i < n; i++) {
      double d = fabs(p[i] - want[i]) / (1 + fabs(want[i]));
      if (!(d <= e)) e = d; /* NaN counts as the largest error */
    }
  }
  cmx_array_release(g64);
  return e;
}

/* alpha * op(A) @ op(B) + beta * C, with op a transpose when ta / tb (the
 * operand is then stored transposed, so BLAS reads it as a transpose). */
static void check(int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                  cmx_dtype dt, double alpha, double beta) {
  double *a = rand_mat(M * K), *b = rand_mat(K * N), *c = rand_mat(M * N);
  double* want = malloc((size_t)(M * N) * sizeof *want);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double s = 0;
      for (int64_t k = 0; k < K; k++) s += a[i * K + k] * b[k * N + j];
      want[i * N + j] = alpha * s + beta * c[i * N + j];
    }
  /* Stored transposed: at = a^T as an (K, M) array, viewed back. */
  double *as = a, *bs = b;
  if (ta) {
    as = malloc((size_t)(M * K) * sizeof *as);
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) as[k * M + i] = a[i * K + k];
  }
  if (tb) {
    bs = malloc((size_t)(K * N) * sizeof *bs);
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) bs[j * K + k] = b[k * N + j];
  }
  cmx_array A0 = ta ? make(as, K, M, dt) : make(as, M, K, dt);
  cmx_array B0 = tb ? make(bs, N, K, dt) : make(bs, K, N, dt);
  cmx_array A = NULL, B = NULL, C = make(c, M, N, dt), R = NULL;
  OK(ta ? cmx_transpose(&A, A0, NULL, 0, S) : cmx_contiguous(&A, A0, 0, S));
  OK(tb ? cmx_transpose(&B, B0, NULL, 0, S) : cmx_contiguous(&B, B0, 0, S));
  if (alpha == 1 && beta == 0)
    OK(cmx_matmul(&R, A, B, S));
  else
    OK(cmx_addmm(&R, C, A, B, alpha, beta, S));
  double tol = dt == CMX_FLOAT64   ? 1e-12
               : dt == CMX_FLOAT32 ? 1e-5 * sqrt((double)K)
                                   : 2e-2;
  double e = max_err(R, want, M * N);
  CHECK_MSG(e <= tol, "%lldx%lldx%lld ta=%d tb=%d %s alpha=%g beta=%g: %g",
            (long long)M, (long long)N, (long long)K, ta, tb,
            cmx_dtype_name(dt), alpha, beta, e);
  cmx_array_release_all((cmx_array[]){A0, B0, A, B, C, R}, 6);
  if (as != a) free(as);
  if (bs != b) free(bs);
  free(a), free(b), free(c), free(want);
}

static void test_split(void) {
  /* By rows, ragged: the last part of 1 row (97 = 3 * 32 + 1). */
  check(97, 70, 80, false, false, CMX_FLOAT32, 1, 0);
  check(97, 70, 80, true, true, CMX_FLOAT64, 1, 0);
  /* By columns (N > M), the last part a single column. */
  check(70, 129, 64, false, false, CMX_FLOAT64, 1, 0);
  check(70, 129, 64, true, false, CMX_FLOAT32, 1, 0);
  check(40, 161, 90, false, true, CMX_FLOAT64, 1, 0);
  /* Even parts, bigger. */
  check(256, 200, 128, false, false, CMX_FLOAT32, 1, 0);
  /* 16-bit floats through float32 scratch. */
  check(130, 66, 96, false, true, CMX_FLOAT16, 1, 0);
  check(66, 130, 96, true, false, CMX_BFLOAT16, 1, 0);
  /* addmm: alpha and beta on every part. */
  check(97, 70, 80, false, false, CMX_FLOAT64, 0.5, -2.0);
  check(70, 129, 64, true, true, CMX_FLOAT64, 2.0, 1.0);
  check(130, 66, 96, false, false, CMX_FLOAT16, 1.5, 0.5);
  /* Just below the threshold (64^3) and just above. */
  check(64, 64, 64, false, false, CMX_FLOAT64, 1, 0);
  check(65, 64, 64, false, false, CMX_FLOAT64, 1, 0);
}

/* A batch of big products: each one split in turn. */
static void test_batched(void) {
  int64_t B = 3, M = 97, K = 70, N = 65;
  double *a = rand_mat(B * M * K), *b = rand_mat(B * K * N);
  double* want = calloc((size_t)(B * M * N), sizeof *want);
  for (int64_t t = 0; t < B; t++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++)
          s += a[(t * M + i) * K + k] * b[(t * K + k) * N + j];
        want[(t * M + i) * N + j] = s;
      }
  int64_t sa[3] = {B, M, K}, sb[3] = {B, K, N};
  cmx_array A = NULL, Bm = NULL, R = NULL;
  OK(cmx_array_from_data(&A, a, sa, 3, CMX_FLOAT64));
  OK(cmx_array_from_data(&Bm, b, sb, 3, CMX_FLOAT64));
  OK(cmx_matmul(&R, A, Bm, S));
  CHECK(max_err(R, want, B * M * N) <= 1e-12);
  cmx_array_release_all((cmx_array[]){A, Bm, R}, 3);
  free(a), free(b), free(want);
}

int main(void) {
  setenv("CMX_NUM_THREADS", "3", 1);
  RUN(test_split);
  RUN(test_batched);
  return test_summary("test_matmul_split");
}
