/* The cmx demo: builds a small computation graph in C, evaluates it and
 * prints the results (as MLX prints them) and how long each step took.
 *
 * Ops only record graph nodes; nothing is computed until cmx_eval (or a
 * read such as cmx_array_tostring) asks for a result. */
#include <cmx/cmx.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define S CMX_STREAM_DEFAULT

/* Stops the demo with cmx's error message when a call fails. */
#define TRY(call)                                                  \
  do {                                                             \
    if ((call) != CMX_OK) {                                        \
      fprintf(stderr, "%s failed: %s\n", #call, cmx_last_error()); \
      exit(1);                                                     \
    }                                                              \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void show(const char* expr, cmx_array a) {
  char* s;
  TRY(cmx_array_tostring(a, &s));
  printf(">>> %s\n%s\n", expr, s);
  cmx_free(s);
}

/* An n x m float32 matrix of values in [-1, 1) from a fixed LCG. */
static cmx_array random_matrix(int64_t n, int64_t m, uint32_t seed) {
  float* v = malloc(sizeof(float) * (size_t)(n * m));
  if (!v) exit(1);
  for (int64_t i = 0; i < n * m; i++) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = (float)(seed >> 8) / (float)(1 << 23) - 1.0f;
  }
  cmx_array a;
  TRY(cmx_array_from_data(&a, v, (int64_t[]){n, m}, 2, CMX_FLOAT32));
  free(v);
  return a;
}

int main(void) {
  printf("cmx demo (gpu %s)\n\n",
         cmx_is_available(cmx_device_gpu()) ? "available" : "not available");

  /* 1. A small graph: a matmul, a broadcasting add, a reduction and a dtype
   * conversion. */
  cmx_array r, a, w, b, aw, y, ys, h;
  TRY(cmx_arange(&r, 0, 6, 1, CMX_FLOAT32, S));
  TRY(cmx_reshape(&a, r, (int64_t[]){2, 3}, 2, S));
  float wv[6] = {1, 0, 0, 1, 0.5f, -0.5f}, bv[2] = {0.25f, -10};
  TRY(cmx_array_from_data(&w, wv, (int64_t[]){3, 2}, 2, CMX_FLOAT32));
  TRY(cmx_array_from_data(&b, bv, (int64_t[]){2}, 1, CMX_FLOAT32));
  TRY(cmx_matmul(&aw, a, w, S));
  TRY(cmx_add(&y, aw, b, S)); /* (2,2) + (2,) broadcasts */
  TRY(cmx_sum(&ys, y, (int[]){1}, 1, false, S));
  TRY(cmx_astype(&h, y, CMX_FLOAT16, S));
  show("a = mx.arange(6.0).reshape(2, 3)", a);
  show("w", w);
  show("y = a @ w + b", y);
  show("y.sum(axis=1)", ys);
  show("y.astype(mx.float16)", h);
  cmx_array_release_all((cmx_array[]){r, a, w, b, aw, y, ys, h}, 8);

  /* 2. A bigger graph, timed: row sums of exp(0.1 * (x @ w + bias)). */
  const int64_t n = 1024;
  cmx_array x = random_matrix(n, n, 1), wb = random_matrix(n, n, 2),
            bias = random_matrix(1, n, 3), k, xw, z, kz, e, out;
  double t0 = now_ms();
  TRY(cmx_array_weak_float(&k, 0.1)); /* a Python-style scalar */
  TRY(cmx_matmul(&xw, x, wb, S));
  TRY(cmx_add(&z, xw, bias, S));
  TRY(cmx_multiply(&kz, k, z, S));
  TRY(cmx_exp(&e, kz, S));
  TRY(cmx_sum(&out, e, (int[]){-1}, 1, false, S));
  double t1 = now_ms();
  TRY(cmx_array_eval(out));
  double t2 = now_ms();

  printf("\n%lld x %lld float32 matrices x, w; bias of shape (1, %lld)\n",
         (long long)n, (long long)n, (long long)n);
  show("mx.exp(0.1 * (x @ w + bias)).sum(axis=-1)", out);
  double ms = t2 - t1, gflop = 2.0 * n * n * n / 1e9; /* the matmul's */
  printf("graph build: %.3f ms   eval: %.2f ms   %.1f GFLOP/s\n", t1 - t0, ms,
         gflop / (ms / 1e3));
  cmx_array_release_all((cmx_array[]){x, wb, bias, k, xw, z, kz, e, out}, 9);
  return 0;
}
