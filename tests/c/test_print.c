/* Printing: cmx_array_tostring (repr), cmx_array_tostring_values (str) and
 * the print options. The expected strings are MLX's output for the same
 * arrays, written out from its format rules (see src/core/print.c) and the
 * examples in MLX's documentation ("array(2.36788, dtype=float32)",
 * "array([[0, 2],\n       [4, 6]], dtype=int32)", ...). */
#include <stdarg.h>
#include <stdint.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

/* Checks repr and (when want_str is non-NULL) str of a, then releases a. */
#define EXPECT(a, want_repr, want_str) expect_(a, want_repr, want_str, __LINE__)

static void expect_(cmx_array a, const char* want_repr, const char* want_str,
                    int line) {
  char* s = NULL;
  OK(cmx_array_tostring(a, &s));
  CHECK_MSG(s && strcmp(s, want_repr) == 0, "line %d:\n got: %s\nwant: %s",
            line, s ? s : "(null)", want_repr);
  cmx_free(s);
  if (want_str) {
    s = NULL;
    OK(cmx_array_tostring_values(a, &s));
    CHECK_MSG(s && strcmp(s, want_str) == 0, "line %d:\n got: %s\nwant: %s",
              line, s ? s : "(null)", want_str);
    cmx_free(s);
  }
  cmx_array_release(a);
}

static cmx_array arr(const void* data, cmx_dtype dt, int ndim, ...) {
  int64_t shape[8];
  va_list ap;
  va_start(ap, ndim);
  for (int i = 0; i < ndim; i++) shape[i] = va_arg(ap, int64_t);
  va_end(ap);
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, data, shape, ndim, dt));
  return a;
}

/* 0, 1, ..., n-1 as int32 with the given shape. */
static cmx_array iota(int ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  int32_t* v = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (int32_t)i;
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, shape, ndim, CMX_INT32));
  free(v);
  return a;
}

static void test_int_layouts(void) {
  int32_t v[4] = {1, 2, 3, 4};
  EXPECT(arr(v, CMX_INT32, 1, (int64_t)3), "array([1, 2, 3], dtype=int32)",
         "[1, 2, 3]");
  EXPECT(arr(v, CMX_INT32, 2, (int64_t)2, (int64_t)2),
         "array([[1, 2],\n       [3, 4]], dtype=int32)", "[[1, 2],\n [3, 4]]");
  EXPECT(iota(3, (int64_t[]){2, 2, 2}),
         "array([[[0, 1],\n"
         "        [2, 3]],\n"
         "       [[4, 5],\n"
         "        [6, 7]]], dtype=int32)",
         "[[[0, 1],\n  [2, 3]],\n [[4, 5],\n  [6, 7]]]");
  EXPECT(iota(4, (int64_t[]){1, 1, 1, 2}), "array([[[[0, 1]]]], dtype=int32)",
         "[[[[0, 1]]]]");
  EXPECT(iota(2, (int64_t[]){3, 1}),
         "array([[0],\n       [1],\n       [2]], dtype=int32)",
         "[[0],\n [1],\n [2]]");
  int32_t neg[3] = {-1, 0, -300};
  EXPECT(arr(neg, CMX_INT32, 1, (int64_t)3),
         "array([-1, 0, -300], dtype=int32)", "[-1, 0, -300]");
}

static void test_scalars(void) {
  cmx_array a;
  OK(cmx_array_from_int64(&a, 3, CMX_INT32));
  EXPECT(a, "array(3, dtype=int32)", "3");
  OK(cmx_array_from_double(&a, 1.0, CMX_FLOAT32));
  EXPECT(a, "array(1, dtype=float32)", "1");
  OK(cmx_array_from_double(&a, -1.0, CMX_FLOAT32));
  EXPECT(a, "array(-1, dtype=float32)", "-1");
  /* exp(-1) + 2, the compile page's example */
  OK(cmx_array_from_double(&a, 2.36787944117144, CMX_FLOAT32));
  EXPECT(a, "array(2.36788, dtype=float32)", "2.36788");
  OK(cmx_array_from_double(&a, 2.718281828, CMX_FLOAT32));
  EXPECT(a, "array(2.71828, dtype=float32)", NULL);
  OK(cmx_array_from_double(&a, 1.0, CMX_BOOL));
  EXPECT(a, "array(True, dtype=bool)", "True");
  OK(cmx_array_from_complex(&a, 1, 2));
  EXPECT(a, "array(1+2j, dtype=complex64)", "1+2j");
  /* weak scalars print as their default dtype */
  OK(cmx_array_weak_int(&a, 7));
  EXPECT(a, "array(7, dtype=int32)", NULL);
  OK(cmx_array_weak_float(&a, 0.25));
  EXPECT(a, "array(0.25, dtype=float32)", NULL);
  OK(cmx_array_weak_bool(&a, false));
  EXPECT(a, "array(False, dtype=bool)", NULL);
}

static void test_floats(void) {
  float f[4] = {0.5f, -0.5f, 1.0f, 0.0f};
  EXPECT(arr(f, CMX_FLOAT32, 1, (int64_t)2),
         "array([0.5, -0.5], dtype=float32)", "[0.5, -0.5]");
  float g[3] = {1, 0, 1};
  EXPECT(arr(g, CMX_FLOAT32, 1, (int64_t)3), "array([1, 0, 1], dtype=float32)",
         NULL);
  /* mixed magnitudes: 6 significant digits, exponent form outside
   * [1e-4, 1e6) as C++ streams (and %g) print */
  float m[8] = {1e-7f,   1e6f,  123456789.0f, 0.1f,
                1.5e-5f, 1e-4f, 999999.0f,    -3.14159265f};
  EXPECT(arr(m, CMX_FLOAT32, 1, (int64_t)6),
         "array([1e-07, 1e+06, 1.23457e+08, 0.1, 1.5e-05, 0.0001], "
         "dtype=float32)",
         NULL);
  EXPECT(arr(m + 6, CMX_FLOAT32, 1, (int64_t)2),
         "array([999999, -3.14159], dtype=float32)", NULL);
  float big[2] = {3.4028235e38f, -1.17549435e-38f};
  EXPECT(arr(big, CMX_FLOAT32, 1, (int64_t)2),
         "array([3.40282e+38, -1.17549e-38], dtype=float32)", NULL);
  float sp[5] = {NAN, INFINITY, -INFINITY, -0.0f, -NAN};
  EXPECT(arr(sp, CMX_FLOAT32, 1, (int64_t)5),
         "array([nan, inf, -inf, -0, nan], dtype=float32)",
         "[nan, inf, -inf, -0, nan]");
  double d[3] = {0.1, 1.0 / 3.0, 1e100};
  EXPECT(arr(d, CMX_FLOAT64, 1, (int64_t)3),
         "array([0.1, 0.333333, 1e+100], dtype=float64)", NULL);
  /* 2-d floats */
  float h[4] = {1.25f, -2, 3, 4.5f};
  EXPECT(arr(h, CMX_FLOAT32, 2, (int64_t)2, (int64_t)2),
         "array([[1.25, -2],\n       [3, 4.5]], dtype=float32)",
         "[[1.25, -2],\n [3, 4.5]]");
}

static void test_dtypes(void) {
  uint8_t b[2] = {1, 0};
  EXPECT(arr(b, CMX_BOOL, 1, (int64_t)2), "array([True, False], dtype=bool)",
         "[True, False]");
  uint8_t u8[3] = {0, 7, 255};
  EXPECT(arr(u8, CMX_UINT8, 1, (int64_t)3), "array([0, 7, 255], dtype=uint8)",
         NULL);
  int8_t i8[3] = {-128, 65, 127}; /* printed as numbers, not characters */
  EXPECT(arr(i8, CMX_INT8, 1, (int64_t)3), "array([-128, 65, 127], dtype=int8)",
         NULL);
  uint16_t u16[2] = {0, 65535};
  EXPECT(arr(u16, CMX_UINT16, 1, (int64_t)2), "array([0, 65535], dtype=uint16)",
         NULL);
  int16_t i16[2] = {-32768, 32767};
  EXPECT(arr(i16, CMX_INT16, 1, (int64_t)2),
         "array([-32768, 32767], dtype=int16)", NULL);
  uint32_t u32[2] = {0, 4294967295u};
  EXPECT(arr(u32, CMX_UINT32, 1, (int64_t)2),
         "array([0, 4294967295], dtype=uint32)", NULL);
  int32_t i32[2] = {INT32_MIN, INT32_MAX};
  EXPECT(arr(i32, CMX_INT32, 1, (int64_t)2),
         "array([-2147483648, 2147483647], dtype=int32)", NULL);
  uint64_t u64[2] = {0, UINT64_MAX};
  EXPECT(arr(u64, CMX_UINT64, 1, (int64_t)2),
         "array([0, 18446744073709551615], dtype=uint64)", NULL);
  int64_t i64[2] = {INT64_MIN, INT64_MAX};
  EXPECT(arr(i64, CMX_INT64, 1, (int64_t)2),
         "array([-9223372036854775808, 9223372036854775807], dtype=int64)",
         NULL);
  cmx_float16_t f16[4] = {
      cmx_float_to_float16(0.5f), cmx_float_to_float16(65504.0f),
      cmx_float_to_float16(1.0f / 3.0f), cmx_float_to_float16(-INFINITY)};
  /* float16(1/3) is 0.333251953125 */
  EXPECT(arr(f16, CMX_FLOAT16, 1, (int64_t)4),
         "array([0.5, 65504, 0.333252, -inf], dtype=float16)", NULL);
  cmx_bfloat16_t bf[3] = {cmx_float_to_bfloat16(1.0f / 3.0f),
                          cmx_float_to_bfloat16(-2.0f),
                          cmx_float_to_bfloat16(1e10f)};
  /* bfloat16(1/3) is 0.333984375, bfloat16(1e10) is 9999220736 */
  EXPECT(arr(bf, CMX_BFLOAT16, 1, (int64_t)3),
         "array([0.333984, -2, 9.99922e+09], dtype=bfloat16)", NULL);
  float c[10] = {1, 2, 1, -2, 0, 0, -1.5f, 0.25f, 0, -0.0f};
  EXPECT(arr(c, CMX_COMPLEX64, 1, (int64_t)5),
         "array([1+2j, 1-2j, 0+0j, -1.5+0.25j, 0+-0j], dtype=complex64)",
         "[1+2j, 1-2j, 0+0j, -1.5+0.25j, 0+-0j]");
  float cn[6] = {NAN, NAN, INFINITY, -INFINITY, 1e-7f, 3};
  EXPECT(arr(cn, CMX_COMPLEX64, 1, (int64_t)3),
         "array([nan+nanj, inf-infj, 1e-07+3j], dtype=complex64)", NULL);
}

static void test_empty(void) {
  float z = 0;
  EXPECT(arr(&z, CMX_FLOAT32, 1, (int64_t)0), "array([], dtype=float32)", "[]");
  EXPECT(arr(&z, CMX_FLOAT32, 2, (int64_t)2, (int64_t)0),
         "array([[],\n       []], dtype=float32)", "[[],\n []]");
  EXPECT(arr(&z, CMX_INT32, 2, (int64_t)0, (int64_t)3),
         "array([], dtype=int32)", "[]");
  EXPECT(arr(&z, CMX_BOOL, 3, (int64_t)1, (int64_t)2, (int64_t)0),
         "array([[[],\n        []]], dtype=bool)", "[[[],\n  []]]");
}

static void test_summarised(void) {
  EXPECT(iota(1, (int64_t[]){6}), "array([0, 1, 2, 3, 4, 5], dtype=int32)",
         NULL);
  EXPECT(iota(1, (int64_t[]){7}), "array([0, 1, 2, ..., 4, 5, 6], dtype=int32)",
         "[0, 1, 2, ..., 4, 5, 6]");
  EXPECT(iota(1, (int64_t[]){10}),
         "array([0, 1, 2, ..., 7, 8, 9], dtype=int32)", NULL);
  EXPECT(iota(1, (int64_t[]){100000}),
         "array([0, 1, 2, ..., 99997, 99998, 99999], dtype=int32)", NULL);
  EXPECT(iota(2, (int64_t[]){10, 2}),
         "array([[0, 1],\n"
         "       [2, 3],\n"
         "       [4, 5],\n"
         "       ...,\n"
         "       [14, 15],\n"
         "       [16, 17],\n"
         "       [18, 19]], dtype=int32)",
         "[[0, 1],\n [2, 3],\n [4, 5],\n ...,\n [14, 15],\n [16, 17],\n"
         " [18, 19]]");
  EXPECT(iota(2, (int64_t[]){2, 10}),
         "array([[0, 1, 2, ..., 7, 8, 9],\n"
         "       [10, 11, 12, ..., 17, 18, 19]], dtype=int32)",
         NULL);
  EXPECT(iota(2, (int64_t[]){8, 8}),
         "array([[0, 1, 2, ..., 5, 6, 7],\n"
         "       [8, 9, 10, ..., 13, 14, 15],\n"
         "       [16, 17, 18, ..., 21, 22, 23],\n"
         "       ...,\n"
         "       [40, 41, 42, ..., 45, 46, 47],\n"
         "       [48, 49, 50, ..., 53, 54, 55],\n"
         "       [56, 57, 58, ..., 61, 62, 63]], dtype=int32)",
         NULL);
  EXPECT(iota(3, (int64_t[]){2, 7, 1}),
         "array([[[0],\n"
         "        [1],\n"
         "        [2],\n"
         "        ...,\n"
         "        [4],\n"
         "        [5],\n"
         "        [6]],\n"
         "       [[7],\n"
         "        [8],\n"
         "        [9],\n"
         "        ...,\n"
         "        [11],\n"
         "        [12],\n"
         "        [13]]], dtype=int32)",
         NULL);
  EXPECT(iota(3, (int64_t[]){7, 1, 1}),
         "array([[[0]],\n"
         "       [[1]],\n"
         "       [[2]],\n"
         "       ...,\n"
         "       [[4]],\n"
         "       [[5]],\n"
         "       [[6]]], dtype=int32)",
         "[[[0]],\n [[1]],\n [[2]],\n ...,\n [[4]],\n [[5]],\n [[6]]]");
  /* A huge broadcast array prints quickly: only the edges are read. */
  cmx_array five, big;
  OK(cmx_array_from_int64(&five, 5, CMX_INT32));
  OK(cmx_broadcast_to(&big, five, (int64_t[]){1000000, 1000000}, 2, S));
  cmx_array_release(five);
  EXPECT(big,
         "array([[5, 5, 5, ..., 5, 5, 5],\n"
         "       [5, 5, 5, ..., 5, 5, 5],\n"
         "       [5, 5, 5, ..., 5, 5, 5],\n"
         "       ...,\n"
         "       [5, 5, 5, ..., 5, 5, 5],\n"
         "       [5, 5, 5, ..., 5, 5, 5],\n"
         "       [5, 5, 5, ..., 5, 5, 5]], dtype=int32)",
         NULL);
}

/* Lazy results are evaluated; strided and broadcast views print in
 * logical (row-major) order. */
static void test_lazy_and_views(void) {
  int32_t v[3] = {1, 2, 3};
  cmx_array a = arr(v, CMX_INT32, 1, (int64_t)3), b, c, d;
  OK(cmx_broadcast_to(&b, a, (int64_t[]){2, 3}, 2, S));
  CHECK(cmx_array_is_lazy(b));
  EXPECT(cmx_array_retain(b),
         "array([[1, 2, 3],\n       [1, 2, 3]], dtype=int32)", NULL);
  int32_t col[2] = {10, 20};
  cmx_array e = arr(col, CMX_INT32, 2, (int64_t)2, (int64_t)1);
  OK(cmx_add(&c, b, e, S));
  CHECK(cmx_array_is_lazy(c));
  EXPECT(cmx_array_retain(c),
         "array([[11, 12, 13],\n       [21, 22, 23]], dtype=int32)", NULL);
  OK(cmx_astype(&d, c, CMX_FLOAT16, S));
  EXPECT(d, "array([[11, 12, 13],\n       [21, 22, 23]], dtype=float16)", NULL);
  cmx_array_release_all((cmx_array[]){a, b, c, e}, 4);
}

/* Transposed and stepped views (non-contiguous strides) print in logical
 * order; the index examples of MLX's indexing page. */
static void test_strided_views(void) {
  cmx_array a, t, s, r;
  OK(cmx_arange(&a, 0, 6, 1, CMX_INT32, S));
  OK(cmx_reshape(&r, a, (int64_t[]){2, 3}, 2, S));
  OK(cmx_transpose(&t, r, NULL, 0, S));
  EXPECT(t, "array([[0, 3],\n       [1, 4],\n       [2, 5]], dtype=int32)",
         "[[0, 3],\n [1, 4],\n [2, 5]]");
  cmx_array_release_all((cmx_array[]){a, r}, 2);
  OK(cmx_arange(&a, 0, 10, 1, CMX_INT32, S));
  EXPECT(cmx_array_retain(a), "array([0, 1, 2, ..., 7, 8, 9], dtype=int32)",
         NULL);
  OK(cmx_slice(&s, a, (int64_t[]){2}, (int64_t[]){8}, (int64_t[]){2}, S));
  EXPECT(s, "array([2, 4, 6], dtype=int32)", NULL);
  cmx_array_release(a);
  /* arange(8).reshape(2, 2, 2)[:, :, 0] */
  OK(cmx_arange(&a, 0, 8, 1, CMX_INT32, S));
  OK(cmx_reshape(&r, a, (int64_t[]){2, 2, 2}, 3, S));
  OK(cmx_slice(&s, r, (int64_t[]){0, 0, 0}, (int64_t[]){2, 2, 1},
               (int64_t[]){1, 1, 1}, S));
  OK(cmx_reshape(&t, s, (int64_t[]){2, 2}, 2, S));
  EXPECT(t, "array([[0, 2],\n       [4, 6]], dtype=int32)", NULL);
  cmx_array_release_all((cmx_array[]){a, r, s}, 3);
  /* a transposed 8x8: both axes summarised, read through the strides */
  OK(cmx_arange(&a, 0, 64, 1, CMX_FLOAT32, S));
  OK(cmx_reshape(&r, a, (int64_t[]){8, 8}, 2, S));
  OK(cmx_transpose(&t, r, NULL, 0, S));
  EXPECT(t,
         "array([[0, 8, 16, ..., 40, 48, 56],\n"
         "       [1, 9, 17, ..., 41, 49, 57],\n"
         "       [2, 10, 18, ..., 42, 50, 58],\n"
         "       ...,\n"
         "       [5, 13, 21, ..., 45, 53, 61],\n"
         "       [6, 14, 22, ..., 46, 54, 62],\n"
         "       [7, 15, 23, ..., 47, 55, 63]], dtype=float32)",
         NULL);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

static void test_precision(void) {
  CHECK(cmx_get_printoptions_precision() == -1);
  float f[3] = {0.5f, 1.0f, 2.36787944f};
  cmx_array a = arr(f, CMX_FLOAT32, 1, (int64_t)3);
  OK(cmx_set_printoptions(3));
  CHECK(cmx_get_printoptions_precision() == 3);
  EXPECT(cmx_array_retain(a), "array([0.500, 1.000, 2.368], dtype=float32)",
         "[0.500, 1.000, 2.368]");
  OK(cmx_set_printoptions(0));
  EXPECT(cmx_array_retain(a), "array([0, 1, 2], dtype=float32)", NULL);
  OK(cmx_set_printoptions(2));
  /* fixed notation, no exponent; integers, bools untouched */
  float m[4] = {1e-7f, 1e6f, NAN, -INFINITY};
  EXPECT(arr(m, CMX_FLOAT32, 1, (int64_t)4),
         "array([0.00, 1000000.00, nan, -inf], dtype=float32)", NULL);
  int32_t iv[2] = {1, -2};
  EXPECT(arr(iv, CMX_INT32, 1, (int64_t)2), "array([1, -2], dtype=int32)",
         NULL);
  float c[4] = {1, 2, 0.125f, -3};
  EXPECT(arr(c, CMX_COMPLEX64, 1, (int64_t)2),
         "array([1.00+2.00j, 0.12-3.00j], dtype=complex64)", NULL);
  cmx_float16_t h = cmx_float_to_float16(1.0f / 3.0f);
  EXPECT(arr(&h, CMX_FLOAT16, 0), "array(0.33, dtype=float16)", NULL);
  double d = 1.0 / 3.0;
  OK(cmx_set_printoptions(12));
  EXPECT(arr(&d, CMX_FLOAT64, 0), "array(0.333333333333, dtype=float64)", NULL);
  /* negative values other than -1: fixed with 6 decimals (as C++ streams) */
  OK(cmx_set_printoptions(-5));
  EXPECT(cmx_array_retain(a),
         "array([0.500000, 1.000000, 2.367879], dtype=float32)", NULL);
  FAILS(cmx_set_printoptions(100000), CMX_ERR_VALUE, "[set_printoptions]");
  CHECK(cmx_get_printoptions_precision() == -5);
  OK(cmx_set_printoptions(-1));
  EXPECT(a, "array([0.5, 1, 2.36788], dtype=float32)", NULL);
}

static void test_errors(void) {
  char* s = (char*)"x";
  FAILS(cmx_array_tostring(NULL, &s), CMX_ERR_VALUE, "[repr]");
  CHECK(s == NULL);
  s = (char*)"x";
  FAILS(cmx_array_tostring_values(NULL, &s), CMX_ERR_VALUE, "[str]");
  CHECK(s == NULL);
  cmx_array a;
  OK(cmx_array_from_int64(&a, 1, CMX_INT32));
  FAILS(cmx_array_tostring(a, NULL), CMX_ERR_VALUE, "[repr]");
  /* printing works again after a failure */
  s = NULL;
  OK(cmx_array_tostring(a, &s));
  CHECK(s && strcmp(s, "array(1, dtype=int32)") == 0);
  cmx_free(s);
  cmx_array_release(a);
}

int main(void) {
  RUN(test_int_layouts);
  RUN(test_scalars);
  RUN(test_floats);
  RUN(test_dtypes);
  RUN(test_empty);
  RUN(test_summarised);
  RUN(test_lazy_and_views);
  RUN(test_strided_views);
  RUN(test_precision);
  RUN(test_errors);
  return test_summary("test_print");
}
