/* compile on the GPU: a fused region is one generated kernel launch, its
 * kernel is cached (a new call with new values builds nothing), shapeless
 * functions take changing shapes with one kernel, and results equal the
 * eager GPU results and the CPU's. (test_compile reruns its fusion cases,
 * every table op and dtype and the input layouts, on the GPU too.) Without
 * a GPU the cases are left out, unless CMX_TEST_REQUIRE_GPU=1. */
#include "gpu_util.h"

#define S CMX_STREAM_DEFAULT

static cmx_compile_stats stats(void) {
  cmx_compile_stats s;
  cmx_compile_stats_get(&s);
  return s;
}

/* Seven ops: sqrt(|tanh(x * 2 + 1) - y|) * 0.5 - y. */
static cmx_status f_chain(void* payload, const cmx_array* in, int n,
                          cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array two = NULL, one = NULL, half = NULL, a = NULL, b = NULL, c = NULL,
            d = NULL, e = NULL, f = NULL, g = NULL, r = NULL;
  cmx_array_weak_float(&two, 2.0);
  cmx_array_weak_float(&one, 1.0);
  cmx_array_weak_float(&half, 0.5);
  cmx_multiply(&a, in[0], two, S);
  cmx_add(&b, a, one, S);
  cmx_tanh(&c, b, S);
  cmx_subtract(&d, c, in[1], S);
  cmx_abs(&e, d, S);
  cmx_sqrt(&f, e, S);
  cmx_multiply(&g, f, half, S);
  cmx_subtract(&r, g, in[1], S);
  cmx_array_release_all((cmx_array[]){two, one, half, a, b, c, d, e, f, g}, 10);
  if (!r) return cmx_last_status();
  *out = malloc(sizeof(cmx_array));
  (*out)[0] = r;
  *nout = 1;
  return CMX_OK;
}

/* Values within rel of each other (float32 arrays of one size). */
static bool close_f32(cmx_array a, cmx_array b, double rel) {
  int64_t n = cmx_array_size(a);
  if (n != cmx_array_size(b)) return false;
  float* u = malloc((size_t)(n + 1) * 4);
  float* v = malloc((size_t)(n + 1) * 4);
  bool ok = cmx_array_copy_to(a, u, (size_t)n * 4) == CMX_OK &&
            cmx_array_copy_to(b, v, (size_t)n * 4) == CMX_OK;
  for (int64_t i = 0; ok && i < n; i++)
    ok = u[i] == v[i] || fabs((double)u[i] - v[i]) <=
                             rel * fmax(fabs(u[i]), fabs(v[i])) + 1e-30;
  free(u);
  free(v);
  return ok;
}

static cmx_array on_gpu(int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  float* v = rnd_floats(rows * cols);
  cmx_array a = arr(v, shape, 2, CMX_FLOAT32), g = NULL;
  free(v);
  OK(cmx_negative(&g, a, gpu())); /* made on the device */
  OK(cmx_array_eval(g));
  cmx_array_release(a);
  return g;
}

static void test_chain_one_launch(void) {
  OK(cmx_set_default_device(cmx_device_gpu()));
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_chain, NULL}, NULL));
  cmx_array x = on_gpu(300, 257), y = on_gpu(300, 257);
  cmx_array *o = NULL, *e = NULL, *c = NULL;
  int no = 0, ne = 0, nc = 0;
  cmx_compile_stats s0 = stats();
  OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no));
  OK(cmx_array_eval(o[0]));
  CHECK(stats().fused - s0.fused == 1);
  cmx_arrays_free(o, no);
  /* new values, same shapes: one launch, nothing built */
  cmx_array x2 = on_gpu(300, 257), y2 = on_gpu(300, 257);
  cmx_compile_stats s1 = stats();
  cmx__gpu_encoder_stats g0 = cmx__gpu_encoder_stats_get();
  OK(cmx_compiled_call(cf, (cmx_array[]){x2, y2}, 2, &o, &no));
  OK(cmx_array_eval(o[0]));
  cmx__gpu_encoder_stats g1 = cmx__gpu_encoder_stats_get();
  CHECK_MSG(g1.launches - g0.launches == 1, "%llu launches",
            (unsigned long long)(g1.launches - g0.launches));
  CHECK(g1.memsets == g0.memsets && g1.copies == g0.copies);
  CHECK(stats().kernels_built == s1.kernels_built);
  CHECK(device_only(o[0]));
  /* the eager GPU graph: seven launches, the same values */
  g0 = cmx__gpu_encoder_stats_get();
  OK(f_chain(NULL, (cmx_array[]){x2, y2}, 2, &e, &ne));
  OK(cmx_array_eval(e[0]));
  g1 = cmx__gpu_encoder_stats_get();
  CHECK_MSG(g1.launches - g0.launches >= 7, "eager: %llu launches",
            (unsigned long long)(g1.launches - g0.launches));
  CHECK(close_f32(o[0], e[0], 2e-6));
  /* and the CPU's */
  OK(cmx_set_default_device(cmx_device_cpu()));
  OK(f_chain(NULL, (cmx_array[]){x2, y2}, 2, &c, &nc));
  CHECK(close_f32(o[0], c[0], 1e-5));
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
  cmx_arrays_free(c, nc);
  cmx_compiled_release(cf);
  cmx_array_release_all((cmx_array[]){x, y, x2, y2}, 4);
}

/* Shapeless: the same trace and kernel for every shape of rank 2, with
 * broadcasting inputs and odd sizes (vector tails), results equal to
 * the eager GPU's. */
static void test_shapeless(void) {
  OK(cmx_set_default_device(cmx_device_gpu()));
  cmx_compiled* cf = NULL;
  cmx_compile_options opt = {.shapeless = true};
  OK(cmx_compile(&cf, (cmx_closure){f_chain, NULL}, &opt));
  static const int64_t shapes[][4] = {{4, 5, 4, 5},        {7, 3, 1, 3},
                                      {1000, 33, 1000, 1}, {1, 1, 1, 1},
                                      {3, 4097, 3, 4097},  {64, 1, 64, 1}};
  cmx_compile_stats s0 = stats();
  for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
    cmx_array x = on_gpu(shapes[t][0], shapes[t][1]),
              y = on_gpu(shapes[t][2], shapes[t][3]);
    cmx_array *o = NULL, *e = NULL;
    int no = 0, ne = 0;
    cmx_status st = cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no);
    CHECK_MSG(st == CMX_OK, "shape %zu: %s", t, cmx_last_error());
    if (st == CMX_OK) {
      OK(f_chain(NULL, (cmx_array[]){x, y}, 2, &e, &ne));
      CHECK(cmx_array_ndim(o[0]) == 2 &&
            cmx_array_shape(o[0])[0] == shapes[t][0] &&
            cmx_array_shape(o[0])[1] == shapes[t][1]);
      CHECK_MSG(close_f32(o[0], e[0], 2e-6), "shape %zu", t);
    }
    cmx_arrays_free(o, no);
    cmx_arrays_free(e, ne);
    cmx_array_release_all((cmx_array[]){x, y}, 2);
  }
  cmx_compile_stats s1 = stats();
  CHECK(s1.traces - s0.traces == 1);
  CHECK(s1.fused - s0.fused == 1);
  CHECK(s1.kernels_built - s0.kernels_built <= 1);
  cmx_compiled_release(cf);
  OK(cmx_set_default_device(cmx_device_cpu()));
}

/* x * 2 + 1 (one fused kernel) and sum(x) (a reduction reading x too). */
static cmx_status f_two(void* payload, const cmx_array* in, int n,
                        cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array two = NULL, one = NULL, a = NULL, r = NULL, s = NULL;
  cmx_array_weak_float(&two, 2.0);
  cmx_array_weak_float(&one, 1.0);
  cmx_multiply(&a, in[0], two, S);
  cmx_add(&r, a, one, S);
  cmx_sum(&s, in[0], NULL, 0, false, S);
  cmx_array_release_all((cmx_array[]){two, one, a}, 3);
  if (!r || !s) return cmx_last_status();
  *out = malloc(2 * sizeof(cmx_array));
  (*out)[0] = r;
  (*out)[1] = s;
  *nout = 2;
  return CMX_OK;
}

/* Input donation: an input whose only reference is the compiled call's
 * graph gives its device buffer to the fused output of its size and
 * dtype (written in place, results as without donation); one the caller
 * still holds keeps its buffer and values; an input another op still has
 * to read is not overwritten before that op reads it. */
static void test_donation(void) {
  OK(cmx_set_default_device(cmx_device_gpu()));
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_chain, NULL}, NULL));
  int64_t rows = 200, cols = 129, n = rows * cols;
  float* xv = malloc((size_t)n * 4);
  for (int held = 0; held < 2; held++) {
    cmx_array x = on_gpu(rows, cols), y = on_gpu(rows, cols);
    OK(cmx_array_copy_to(x, xv, (size_t)n * 4));
    CUdeviceptr px = x->buf->dev;
    cmx_array *o = NULL, *c = NULL;
    int no = 0, nc = 0;
    OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no));
    if (!held) cmx_array_release(x); /* the graph's reference is the last */
    OK(cmx_array_eval(o[0]));
    CHECK_MSG((o[0]->buf->dev == px) == !held, "held %d: donated %d", held,
              o[0]->buf->dev == px);
    /* the CPU's result from the saved values */
    OK(cmx_set_default_device(cmx_device_cpu()));
    cmx_array xc = arr(xv, (int64_t[]){rows, cols}, 2, CMX_FLOAT32);
    OK(f_chain(NULL, (cmx_array[]){xc, y}, 2, &c, &nc));
    CHECK(close_f32(o[0], c[0], 1e-5));
    if (held) CHECK(close_f32(x, xc, 0)); /* untouched */
    OK(cmx_set_default_device(cmx_device_gpu()));
    cmx_arrays_free(o, no);
    cmx_arrays_free(c, nc);
    cmx_array_release_all((cmx_array[]){xc, y}, 2);
    if (held) cmx_array_release(x);
  }
  cmx_compiled_release(cf);
  /* x is read by the sum too: whichever runs second sees x's values */
  OK(cmx_compile(&cf, (cmx_closure){f_two, NULL}, NULL));
  for (int r = 0; r < 3; r++) {
    cmx_array x = on_gpu(rows, cols);
    OK(cmx_array_copy_to(x, xv, (size_t)n * 4));
    cmx_array *o = NULL, *c = NULL;
    int no = 0, nc = 0;
    OK(cmx_compiled_call(cf, &x, 1, &o, &no));
    cmx_array_release(x);
    OK(cmx_eval(o, 2));
    OK(cmx_set_default_device(cmx_device_cpu()));
    cmx_array xc = arr(xv, (int64_t[]){rows, cols}, 2, CMX_FLOAT32);
    OK(f_two(NULL, &xc, 1, &c, &nc));
    CHECK(close_f32(o[0], c[0], 1e-6) && close_f32(o[1], c[1], 1e-4));
    OK(cmx_set_default_device(cmx_device_gpu()));
    cmx_arrays_free(o, no);
    cmx_arrays_free(c, nc);
    cmx_array_release(xc);
  }
  cmx_compiled_release(cf);
  free(xv);
  OK(cmx_set_default_device(cmx_device_cpu()));
}

int main(void) {
  if (!gpu_test_begin("compile-gpu")) return 1;
  if (g_gpu && g_nvrtc) {
    CASE(test_chain_one_launch);
    CASE(test_shapeless);
    CASE(test_donation);
  } else {
    CHECK_MSG(!gpu_test_required(), "no GPU or NVRTC: %s",
              cmx__gpu_unavailable_reason());
    printf("test_compile_gpu: no GPU, cases left out\n");
  }
  gpu_test_end();
  return test_summary("test_compile_gpu");
}
