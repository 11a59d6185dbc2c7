/* Tests of hadamard_transform against a plain double-precision
 * reference over dtypes, sizes and layouts, and its error messages. Its
 * transform rules are checked in test_rules_hadamard.c. */
#include "harness.h"
#include "primitives/hadamard.h"

#define S CMX_STREAM_DEFAULT

static const cmx_dtype FLOATS[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                   CMX_BFLOAT16};

/* ---------------- hadamard_transform ---------------- */
/* Entry (r, c) of H_m (x) H_n for N = m * n, scaled. */
static double had_entry(int64_t r, int64_t c, int m, int64_t n,
                        const int8_t* hm, bool transpose) {
  int64_t rm = r / n, rn = r % n, cm = c / n, cn = c % n;
  double hv = m == 1 ? 1 : transpose ? hm[cm * m + rm] : hm[rm * m + cm];
  return hv * (__builtin_popcountll((uint64_t)(rn & cn)) & 1 ? -1 : 1);
}

static void check_hadamard(const int64_t* shape, int nd, cmx_dtype dt,
                           const float* scale, uint64_t seed) {
  int64_t N = shape[nd - 1], n;
  int m;
  CHECK(cmx__hadamard_split(N, &m, &n));
  int8_t hm[28 * 28];
  if (m > 1) cmx__hadamard_m(m, hm);
  double sc = scale ? *scale : 1.0 / sqrt((double)N);
  if (dt != CMX_FLOAT64) sc = (float)sc; /* float32 math: a float scale */
  cmx_dtype odt = cmx_dtype_is_floating(dt) ? dt : CMX_FLOAT32;
  h_tensor x = h_random(shape, nd, dt, -1, 1, seed);
  h_tensor want = h_alloc(shape, nd, odt);
  int64_t rows = x.size / N;
  for (int64_t row = 0; row < rows; row++)
    for (int64_t r = 0; r < N; r++) {
      double acc = 0;
      for (int64_t c = 0; c < N; c++)
        acc += had_entry(r, c, m, n, hm, false) * x.re[row * N + c];
      want.re[row * N + r] = sc * acc;
    }
  double tol =
      (odt == CMX_FLOAT64 ? 1e-12 : h_tol(odt)) * 4 * (1 + log2((double)N));
  for (int l = 0; l < H_NUM_LAYOUTS; l++) {
    cmx_array a = h_array(&x, (h_layout)l), r = NULL;
    OK(cmx_hadamard_transform(&r, a, scale, S));
    char what[128], sh[64];
    snprintf(what, sizeof what, "hadamard %s %s %s",
             cmx__shape_str(shape, nd, sh, sizeof sh), cmx_dtype_name(dt),
             h_layout_names[l]);
    h_expect(r, &want, tol, what);
    cmx_array_release(a);
  }
  h_free(&x), h_free(&want);
}

static void test_hadamard(void) {
  /* The odd factors are Hadamard matrices: H H^T = m I. */
  int ms[3] = {12, 20, 28};
  for (int t = 0; t < 3; t++) {
    int m = ms[t];
    int8_t h[28 * 28];
    CHECK(cmx__hadamard_m(m, h));
    bool orth = true;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) {
        int dot = 0;
        for (int k = 0; k < m; k++) dot += h[i * m + k] * h[j * m + k];
        orth = orth && dot == (i == j ? m : 0);
      }
    CHECK_MSG(orth, "H_%d is not a Hadamard matrix", m);
  }
  int8_t dummy[4];
  CHECK(!cmx__hadamard_m(4, dummy));
  int64_t sizes[] = {2, 4, 8, 64, 12, 24, 20, 80, 28, 56, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    int64_t s1[1] = {sizes[i]}, s3[3] = {2, 3, sizes[i]};
    check_hadamard(s1, 1, CMX_FLOAT32, NULL, 50 + i);
    check_hadamard(s3, 3, CMX_FLOAT64, NULL, 60 + i);
  }
  int64_t s2[2] = {5, 48};
  float half = 0.5f, one = 1.0f;
  for (int d = 0; d < 4; d++) check_hadamard(s2, 2, FLOATS[d], &half, 70 + d);
  check_hadamard(s2, 2, CMX_INT32, NULL, 75); /* computed in float32 */
  int64_t s40[2] = {3, 40};
  check_hadamard(s40, 2, CMX_BFLOAT16, &one, 76);
  int64_t big[2] = {2, 4096};
  check_hadamard(big, 2, CMX_FLOAT32, NULL, 77);
  /* A last axis of 1 only scales; scale 1 gives a back. */
  int64_t s31[2] = {3, 1};
  cmx_array a = NULL, r = NULL;
  OK(cmx_ones(&a, s31, 2, CMX_INT32, S));
  OK(cmx_hadamard_transform(&r, a, NULL, S));
  CHECK(r == a);
  cmx_array_release(r);
  float three = 3;
  OK(cmx_hadamard_transform(&r, a, &three, S));
  double v = 0;
  int64_t zero[2] = {0, 0};
  (void)zero;
  CHECK(r && cmx_array_dtype(r) == CMX_FLOAT32);
  cmx_array first = NULL;
  int64_t st[2] = {0, 0}, sp[2] = {1, 1};
  OK(cmx_slice(&first, r, st, sp, NULL, S));
  OK(cmx_array_item_double(first, &v));
  CHECK(v == 3);
  cmx_array_release(first), cmx_array_release(r), cmx_array_release(a);
  /* Errors. */
  int64_t bad[2] = {2, 36}, e[2] = {0, 8};
  OK(cmx_ones(&a, bad, 2, CMX_FLOAT32, S));
  FAILS(cmx_hadamard_transform(&r, a, NULL, S), CMX_ERR_VALUE,
        "[hadamard_transform] Only supports n = m*2^k where m in (1, 12, 20, "
        "28), but the last axis has size 36.");
  cmx_array_release(a);
  OK(cmx_zeros(&a, e, 2, CMX_FLOAT32, S));
  FAILS(cmx_hadamard_transform(&r, a, NULL, S), CMX_ERR_VALUE,
        "[hadamard_transform] Does not support empty arrays.");
  cmx_array_release(a);
  bad[1] = 3;
  OK(cmx_ones(&a, bad, 2, CMX_FLOAT32, S));
  FAILS(cmx_hadamard_transform(&r, a, NULL, S), CMX_ERR_VALUE,
        "[hadamard_transform] Only supports");
  cmx_array_release(a);
}

int main(void) {
  RUN(test_hadamard);
  return test_summary("test_hadamard");
}
