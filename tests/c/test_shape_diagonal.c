/* Tests of diagonal (a view) and diag against index arithmetic over
 * dtypes, shapes and layouts, and their error messages. Their transform
 * rules are checked in test_rules_shape.c. */
#include "shape_util.h"

/* ---------------- diagonal and diag ---------------- */
static void check_diagonal(const int64_t* shape, int nd, int offset, int ax1,
                           int ax2, uint64_t seed) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                  CMX_INT32,   CMX_BOOL,    CMX_COMPLEX64};
  int a1 = ax1 < 0 ? ax1 + nd : ax1, a2 = ax2 < 0 ? ax2 + nd : ax2;
  int64_t off1 = offset < 0 ? -offset : 0, off2 = offset > 0 ? offset : 0;
  int64_t k =
      shape[a1] - off1 < shape[a2] - off2 ? shape[a1] - off1 : shape[a2] - off2;
  if (k < 0) k = 0;
  int64_t os[CMX_MAX_NDIM];
  int no = 0;
  for (int d = 0; d < nd; d++)
    if (d != a1 && d != a2) os[no++] = shape[d];
  os[no++] = k;
  for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
    cmx_dtype dt = dts[di];
    h_tensor x = h_random(shape, nd, dt, -5, 5, seed + di);
    h_tensor want = h_alloc(os, no, dt);
    for (int64_t o = 0; o < want.size; o++) {
      int64_t oi[CMX_MAX_NDIM], ii[CMX_MAX_NDIM];
      su_unravel(o, os, no, oi);
      int r = 0;
      for (int d = 0; d < nd; d++)
        if (d != a1 && d != a2) ii[d] = oi[r++];
      ii[a1] = oi[no - 1] + off1;
      ii[a2] = oi[no - 1] + off2;
      int64_t src = su_ravel(ii, shape, nd);
      want.re[o] = x.re[src];
      if (want.im) want.im[o] = x.im[src];
    }
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array a = h_array(&x, (h_layout)l), r = NULL;
      OK(cmx_diagonal(&r, a, offset, ax1, ax2, S));
      char what[160];
      snprintf(what, sizeof what, "diagonal %s offset %d axes (%d, %d) %s",
               cmx_dtype_name(dt), offset, ax1, ax2, h_layout_names[l]);
      /* A view: it shares the input's buffer. */
      if (r && cmx_array_eval(r) == CMX_OK && want.size > 0)
        CHECK_MSG(r->buf == a->buf, "%s: not a view", what);
      h_expect(r, &want, 0, what);
      cmx_array_release(a);
    }
    h_free(&x), h_free(&want);
  }
}

static void test_diagonal(void) {
  int64_t s2[2] = {4, 6}, s3[3] = {3, 4, 5}, s4[4] = {2, 3, 3, 2};
  check_diagonal(s2, 2, 0, 0, 1, 1);
  check_diagonal(s2, 2, 2, 0, 1, 2);
  check_diagonal(s2, 2, -3, 0, 1, 3);
  check_diagonal(s2, 2, 1, 1, 0, 4); /* axes swapped */
  check_diagonal(s2, 2, 9, 0, 1, 5); /* past the plane: empty */
  check_diagonal(s2, 2, -4, 0, 1, 6);
  check_diagonal(s3, 3, 1, 0, 2, 7);
  check_diagonal(s3, 3, -1, -1, 1, 8);
  check_diagonal(s4, 4, 0, 1, 2, 9);
  check_diagonal(s4, 4, 1, 3, 0, 10);
  int64_t s0[2] = {0, 3};
  check_diagonal(s0, 2, 0, 0, 1, 11);

  cmx_array a = NULL, r = NULL;
  OK(cmx_zeros(&a, s3, 3, CMX_FLOAT32, S));
  FAILS(cmx_diagonal(&r, a, 0, 0, 0, S), CMX_ERR_VALUE,
        "[diagonal] axis1 and axis2 cannot be the same axis");
  FAILS(cmx_diagonal(&r, a, 0, 0, 3, S), CMX_ERR_INDEX,
        "[diagonal] axis 3 is out of bounds");
  FAILS(cmx_diagonal(&r, a, 0, -4, 1, S), CMX_ERR_INDEX,
        "[diagonal] axis -4 is out of bounds");
  cmx_array_release(a);
  OK(cmx_zeros(&a, s3, 1, CMX_FLOAT32, S));
  FAILS(cmx_diagonal(&r, a, 0, 0, 1, S), CMX_ERR_VALUE,
        "[diagonal] Array must have at least two dimensions, but got 1");
  FAILS(cmx_diagonal(&r, NULL, 0, 0, 1, S), CMX_ERR_VALUE, "[diagonal]");
  cmx_array_release(a);
}

static void test_diag(void) {
  int64_t n1[1] = {4};
  int ks[4] = {-2, 0, 1, 3};
  for (int ki = 0; ki < 4; ki++)
    for (int di = 0; di < 3; di++) {
      cmx_dtype dt = di == 0 ? CMX_FLOAT32 : di == 1 ? CMX_INT64 : CMX_FLOAT16;
      int k = ks[ki];
      h_tensor x = h_random(n1, 1, dt, -9, 9, 30 + ki);
      int64_t n = 4 + (k < 0 ? -k : k), os[2] = {n, n};
      h_tensor want = h_alloc(os, 2, dt);
      for (int64_t i = 0; i < 4; i++) {
        int64_t row = k >= 0 ? i : i - k, col = k >= 0 ? i + k : i;
        want.re[row * n + col] = x.re[i];
      }
      cmx_array a = h_array(&x, H_STRIDED), r = NULL;
      OK(cmx_diag(&r, a, k, S));
      char what[64];
      snprintf(what, sizeof what, "diag 1-d k=%d %s", k, cmx_dtype_name(dt));
      h_expect(r, &want, 0, what);
      cmx_array_release(a), h_free(&x), h_free(&want);
    }
  /* A NaN or inf next to the diagonal stays out of the zeros. */
  double v[3] = {NAN, INFINITY, 2};
  int64_t s3[1] = {3};
  cmx_array a = h_from_doubles(v, s3, 1, CMX_FLOAT32), r = NULL;
  OK(cmx_diag(&r, a, 1, S));
  h_tensor g = h_read(r);
  CHECK(g.size == 16 && isnan(g.re[1]) && isinf(g.re[6]) && g.re[11] == 2);
  int zeros = 0;
  for (int64_t i = 0; i < g.size; i++) zeros += g.re[i] == 0;
  CHECK(zeros == 13);
  h_free(&g), cmx_array_release(r), cmx_array_release(a);
  /* 2-d: the diagonal. */
  int64_t s2[2] = {3, 5};
  h_tensor x = h_random(s2, 2, CMX_FLOAT64, -1, 1, 40);
  for (int k = -3; k <= 6; k += 3) {
    int64_t cnt = 0, os[1];
    double buf[8];
    for (int64_t i = 0; i < 3; i++)
      if (i + k >= 0 && i + k < 5) buf[cnt++] = x.re[i * 5 + i + k];
    os[0] = cnt;
    h_tensor want = h_alloc(os, 1, CMX_FLOAT64);
    for (int64_t i = 0; i < cnt; i++) want.re[i] = buf[i];
    a = h_array(&x, H_TRANSPOSED);
    r = NULL;
    OK(cmx_diag(&r, a, k, S));
    h_expect(r, &want, 0, "diag 2-d");
    cmx_array_release(a), h_free(&want);
  }
  h_free(&x);
  /* Empty vector: (|k|, |k|) zeros. */
  int64_t e[1] = {0};
  OK(cmx_zeros(&a, e, 1, CMX_FLOAT32, S));
  r = NULL;
  OK(cmx_diag(&r, a, 2, S));
  CHECK(r && cmx_array_ndim(r) == 2 && cmx_array_shape(r)[0] == 2 &&
        cmx_array_shape(r)[1] == 2);
  cmx_array_release(r);
  OK(cmx_diag(&r, a, 0, S));
  CHECK(r && cmx_array_size(r) == 0 && cmx_array_ndim(r) == 2);
  cmx_array_release(r), cmx_array_release(a);
  int64_t s33[3] = {2, 2, 2};
  OK(cmx_zeros(&a, s33, 3, CMX_FLOAT32, S));
  FAILS(cmx_diag(&r, a, 0, S), CMX_ERR_VALUE,
        "[diag] array must be 1-D or 2-D, got array with 3 dimensions.");
  cmx_array_release(a);
}

int main(void) {
  RUN(test_diagonal);
  RUN(test_diag);
  return test_summary("test_shape_diagonal");
}
