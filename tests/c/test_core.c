/* Core runtime: construction, lazy eval, add with broadcasting and
 * promotion, weak scalars, streams, errors, long chains, memory. */
#include <pthread.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

static cmx_array vec_f32(const float* v, int64_t n) {
  cmx_array a;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_FLOAT32));
  return a;
}

static void test_add_basic(void) {
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  cmx_array a = vec_f32(x, 3), b = vec_f32(y, 3), c;
  OK(cmx_add(&c, a, b, S));
  CHECK(cmx_array_is_lazy(c));
  OK(cmx_array_eval(c));
  CHECK(!cmx_array_is_lazy(c));
  const float* p;
  OK(cmx_array_data(c, (const void**)&p));
  CHECK(p[0] == 11 && p[1] == 22 && p[2] == 33);
  cmx_array_release(a);
  cmx_array_release(b);
  cmx_array_release(c);
}

static void test_broadcast(void) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[3] = {10, 20, 30};
  int64_t sh[2] = {2, 3};
  cmx_array a, b = vec_f32(y, 3), c;
  OK(cmx_array_from_data(&a, x, sh, 2, CMX_FLOAT32));
  OK(cmx_add(&c, a, b, S));
  CHECK(cmx_array_ndim(c) == 2 && cmx_array_shape(c)[0] == 2);
  float r[6];
  OK(cmx_array_copy_to(c, r, sizeof r));
  CHECK(r[0] == 11 && r[3] == 14 && r[5] == 36);
  int64_t bad[1] = {4};
  cmx_array d, e;
  OK(cmx_array_from_data(&d, x, bad, 1, CMX_FLOAT32));
  FAILS(cmx_add(&e, a, d, S), CMX_ERR_VALUE, "cannot be broadcast");
  CHECK(e == NULL);
  cmx_array_release_all((cmx_array[]){a, b, c, d}, 4);
}

static void test_promotion(void) {
  CHECK(cmx_dtype_promote(CMX_INT8, CMX_UINT8) == CMX_INT16);
  CHECK(cmx_dtype_promote(CMX_UINT64, CMX_INT8) == CMX_FLOAT32);
  CHECK(cmx_dtype_promote(CMX_FLOAT16, CMX_BFLOAT16) == CMX_FLOAT32);
  CHECK(cmx_dtype_promote(CMX_INT64, CMX_FLOAT16) == CMX_FLOAT16);
  CHECK(cmx_dtype_promote(CMX_FLOAT64, CMX_COMPLEX64) == CMX_COMPLEX64);
  CHECK(cmx_dtype_promote(CMX_BOOL, CMX_BOOL) == CMX_BOOL);
  CHECK(cmx_dtype_promote(CMX_UINT32, CMX_INT32) == CMX_INT64);
  /* weak scalars */
  int8_t v[2] = {100, 27};
  int64_t n = 2;
  cmx_array a, w, f, c1, c2;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_INT8));
  OK(cmx_array_weak_int(&w, 100));
  OK(cmx_add(&c1, a, w, S));
  CHECK(cmx_array_dtype(c1) == CMX_INT8);
  int8_t r[2];
  OK(cmx_array_copy_to(c1, r, 2));
  CHECK(r[0] == -56 && r[1] == 127); /* wraps as int8 */
  OK(cmx_array_weak_float(&f, 0.5));
  OK(cmx_add(&c2, a, f, S));
  CHECK(cmx_array_dtype(c2) == CMX_FLOAT32);
  float q[2];
  OK(cmx_array_copy_to(c2, q, sizeof q));
  CHECK(q[0] == 100.5f && q[1] == 27.5f);
  cmx_array_release_all((cmx_array[]){a, w, f, c1, c2}, 5);
  /* float64 + weak float keeps full precision */
  double d = 1.0;
  cmx_array a64, w64, c64;
  OK(cmx_array_from_data(&a64, &d, NULL, 0, CMX_FLOAT64));
  OK(cmx_array_weak_float(&w64, 0.1));
  OK(cmx_add(&c64, a64, w64, S));
  double got;
  OK(cmx_array_item_double(c64, &got));
  CHECK(cmx_array_dtype(c64) == CMX_FLOAT64 && got == 1.0 + 0.1);
  cmx_array_release_all((cmx_array[]){a64, w64, c64}, 3);
}

static void test_astype(void) {
  float x[4] = {1.5f, -2.5f, 1e20f, NAN};
  cmx_array a = vec_f32(x, 4), b, c, h;
  OK(cmx_astype(&b, a, CMX_INT32, S));
  int32_t r[4];
  OK(cmx_array_copy_to(b, r, sizeof r));
  CHECK(r[0] == 1 && r[1] == -2 && r[3] == 0);
  OK(cmx_astype(&c, a, CMX_BOOL, S));
  uint8_t bl[4];
  OK(cmx_array_copy_to(c, bl, 4));
  CHECK(bl[0] == 1 && bl[1] == 1 && bl[3] == 1);
  OK(cmx_astype(&h, a, CMX_FLOAT16, S));
  uint16_t hv[4];
  OK(cmx_array_copy_to(h, hv, sizeof hv));
  CHECK(cmx_float16_to_float(hv[0]) == 1.5f);
  CHECK(isinf(cmx_float16_to_float(hv[2])));
  CHECK(isnan(cmx_float16_to_float(hv[3])));
  cmx_array_release_all((cmx_array[]){a, b, c, h}, 4);
}

static void test_long_chain(void) {
  /* 1,000,000 dependent adds: built, evaluated and freed iteratively. */
  cmx_array x, one;
  OK(cmx_array_from_double(&x, 0.0, CMX_FLOAT32));
  OK(cmx_array_from_double(&one, 1.0, CMX_FLOAT32));
  for (int i = 0; i < 1000000; i++) {
    cmx_array y;
    if (cmx_add(&y, x, one, S) != CMX_OK) break;
    cmx_array_release(x);
    x = y;
  }
  double v = 0;
  OK(cmx_array_item_double(x, &v));
  CHECK(v == 1000000.0);
  cmx_array_release(x);
  /* and a chain dropped without evaluation */
  OK(cmx_array_from_double(&x, 0.0, CMX_FLOAT32));
  for (int i = 0; i < 1000000; i++) {
    cmx_array y;
    if (cmx_add(&y, x, one, S) != CMX_OK) break;
    cmx_array_release(x);
    x = y;
  }
  cmx_array_release(x);
  cmx_array_release(one);
}

static void test_errors(void) {
  cmx_array c;
  FAILS(cmx_add(&c, NULL, NULL, S), CMX_ERR_VALUE, "[add]");
  FAILS(cmx_add(NULL, NULL, NULL, S), CMX_ERR_VALUE, "[add]");
  int64_t huge[3] = {1LL << 40, 1LL << 40, 1LL << 40};
  FAILS(cmx_array_from_data(&c, NULL, huge, 3, CMX_FLOAT32), CMX_ERR_VALUE,
        "too large");
  int64_t neg[1] = {-1};
  FAILS(cmx_array_from_data(&c, NULL, neg, 1, CMX_FLOAT32), CMX_ERR_VALUE,
        "negative");
  FAILS(cmx_astype(&c, NULL, CMX_INT32, S), CMX_ERR_VALUE, "[astype]");
  cmx_array a;
  OK(cmx_array_from_double(&a, 1, CMX_FLOAT32));
  FAILS(cmx_astype(&c, a, (cmx_dtype)99, S), CMX_ERR_TYPE, "invalid dtype");
  cmx_array_release(a);
}

static void test_empty_huge_dims(void) {
  /* size 0 with huge other dims: valid while the non-zero dims' product in
   * bytes fits in an int64 (NumPy's rule), so every stride fits too */
  int64_t sh[3] = {0, 1LL << 58, 4};
  cmx_array a;
  OK(cmx_array_from_data(&a, NULL, sh, 3, CMX_FLOAT32));
  CHECK(cmx_array_size(a) == 0 && cmx_array_nbytes(a) == 0);
  CHECK(cmx_array_is_row_contiguous(a));
  CHECK(cmx_array_strides(a)[0] == (1LL << 60));
  cmx_array_release(a);
  /* past it: a clear error, as NumPy's "array is too big" */
  int64_t big[3] = {0, 1LL << 62, 4};
  FAILS(cmx_array_from_data(&a, NULL, big, 3, CMX_FLOAT32), CMX_ERR_VALUE,
        "too large");
  int64_t big2[2] = {1LL << 61, 0};
  FAILS(cmx_array_from_data(&a, NULL, big2, 2, CMX_FLOAT32), CMX_ERR_VALUE,
        "too large");
}

static void test_memory_limit(void) {
  /* The limit bounds host memory: the CPU, whatever the default device. */
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(cmx_device_cpu()));
  size_t old;
  OK(cmx_set_memory_limit(1 << 20, &old));
  int64_t n = 1 << 20; /* 4 MiB of float32 */
  cmx_array a, b, c;
  OK(cmx_array_from_double(&a, 1, CMX_FLOAT32));
  OK(cmx_broadcast_to(&b, a, &n, 1, S));
  OK(cmx_add(&c, b, b, S));
  FAILS(cmx_array_eval(c), CMX_ERR_MEMORY, "memory limit");
  OK(cmx_set_memory_limit(old, NULL));
  cmx_array_release_all((cmx_array[]){a, b, c}, 3);
  /* memory is accounted and returns */
  size_t before = cmx_get_active_memory();
  float* big = calloc((size_t)n, 4);
  OK(cmx_array_from_data(&a, big, &n, 1, CMX_FLOAT32));
  CHECK(cmx_get_active_memory() >= before + ((size_t)n * 4));
  CHECK(cmx_get_peak_memory() >= cmx_get_active_memory());
  cmx_array_release(a);
  CHECK(cmx_get_active_memory() == before);
  CHECK(cmx_get_cache_memory() >= (size_t)n * 4);
  cmx_clear_cache();
  CHECK(cmx_get_cache_memory() == 0);
  free(big);
  OK(cmx_set_default_device(prev));
}

static void test_streams(void) {
  cmx_stream s1, s2;
  OK(cmx_new_stream(&s1, cmx_device_cpu()));
  OK(cmx_new_stream(&s2, cmx_device_cpu()));
  CHECK(s1.index != s2.index);
  float x[2] = {1, 2};
  cmx_array a = vec_f32(x, 2), b, c, d;
  OK(cmx_add(&b, a, a, s1));
  OK(cmx_add(&c, b, a, s2)); /* crosses streams: waits on s1 */
  OK(cmx_add(&d, c, b, s1));
  CHECK(cmx_array_stream(d).index == s1.index);
  float r[2];
  OK(cmx_array_copy_to(d, r, sizeof r));
  CHECK(r[0] == 5 && r[1] == 10);
  OK(cmx_synchronize(s2));
  cmx_stream bad = {999, {CMX_CPU, 0}};
  cmx_array e = NULL;
  FAILS(cmx_add(&e, a, a, bad), CMX_ERR_VALUE, "unknown stream");
  CHECK(e == NULL);
  cmx_array_release_all((cmx_array[]){a, b, c, d}, 4);
  /* Failed calls leave the default device as it was (the GPU when one is
   * present, as MLX). */
  cmx_device before = cmx_default_device();
  CHECK(before.type == (cmx_is_available(cmx_device_gpu()) &&
                                !(getenv("CMX_DEFAULT_DEVICE") &&
                                  !strcmp(getenv("CMX_DEFAULT_DEVICE"), "cpu"))
                            ? CMX_GPU
                            : CMX_CPU));
  if (!cmx_is_available(cmx_device_gpu()))
    FAILS(cmx_set_default_device(cmx_device_gpu()), CMX_ERR_VALUE,
          "not available");
  cmx_device bad_dev = {CMX_GPU, 99};
  FAILS(cmx_set_default_device(bad_dev), CMX_ERR_VALUE, "not available");
  CHECK(cmx_device_equal(cmx_default_device(), before));
}

static void test_async(void) {
  float x[2] = {1, 2};
  cmx_array a = vec_f32(x, 2), b;
  OK(cmx_add(&b, a, a, S));
  OK(cmx_async_eval(&b, 1));
  CHECK(!cmx_array_is_lazy(b));
  float r[2];
  OK(cmx_array_copy_to(b, r, sizeof r)); /* waits */
  CHECK(r[1] == 4 && cmx_array_is_available(b));
  cmx_array_release_all((cmx_array[]){a, b}, 2);
}

static void* thread_work(void* arg) {
  (void)arg;
  float x[4] = {1, 2, 3, 4};
  int64_t n = 4;
  cmx_array a, b;
  cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32);
  for (int i = 0; i < 2000; i++) {
    if (cmx_add(&b, a, a, S) != CMX_OK) return (void*)1;
    cmx_array_release(a);
    a = b;
  }
  float r[4];
  cmx_status st = cmx_array_copy_to(a, r, sizeof r);
  cmx_array_release(a);
  return (st == CMX_OK && isinf(r[0])) ? NULL : (void*)1;
}

static void test_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_work, NULL);
  for (int i = 0; i < 4; i++) {
    void* r;
    pthread_join(t[i], &r);
    CHECK(r == NULL);
  }
}

/* Small evals run on the caller's thread when the stream is idle (see
 * scheduler.c); they interleave here with async evals of long chains that
 * the worker runs, from several threads at once, on the default stream and
 * on a second stream the chains depend on. Every step's value is checked. */
static cmx_stream g_side;
static void* mixed_work(void* arg) {
  (void)arg;
  float zero = 0;
  cmx_array x = NULL, one = NULL;
  cmx_array_from_data(&x, &zero, NULL, 0, CMX_FLOAT32);
  cmx_array_from_double(&one, 1.0, CMX_FLOAT32);
  float want = 0;
  bool ok = true;
  for (int i = 0; ok && i < 400; i++) {
    cmx_array y = NULL;
    if (i % 40 == 39) { /* a long chain: async, partly on the side stream */
      cmx_array c = cmx_array_retain(x);
      for (int k = 0; ok && k < 100; k++) {
        ok = cmx_add(&y, c, one, k % 2 ? g_side : S) == CMX_OK;
        cmx_array_release(c);
        c = y;
      }
      want += 100;
      ok = ok && cmx_async_eval(&y, 1) == CMX_OK;
    } else { /* a small eval: x + 1 */
      ok = cmx_add(&y, x, one, S) == CMX_OK && cmx_array_eval(y) == CMX_OK;
      want += 1;
    }
    cmx_array_release(x);
    x = y;
    float r = -1;
    ok = ok && cmx_array_copy_to(x, &r, sizeof r) == CMX_OK && r == want;
  }
  cmx_array_release(x);
  cmx_array_release(one);
  return ok ? NULL : (void*)1;
}

static void test_threads_mixed(void) {
  OK(cmx_new_stream(&g_side, cmx_device_cpu()));
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, mixed_work, NULL);
  for (int i = 0; i < 4; i++) {
    void* r;
    pthread_join(t[i], &r);
    CHECK(r == NULL);
  }
}

int main(void) {
  RUN(test_add_basic);
  RUN(test_broadcast);
  RUN(test_promotion);
  RUN(test_astype);
  RUN(test_long_chain);
  RUN(test_errors);
  RUN(test_empty_huge_dims);
  RUN(test_memory_limit);
  RUN(test_streams);
  RUN(test_async);
  RUN(test_threads);
  RUN(test_threads_mixed);
  return test_summary("test_core");
}
