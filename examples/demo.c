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

static void show(const char* name, cmx_array a) {
  char* s;
  TRY(cmx_array_tostring(a, &s));
  printf(">>> %s\n%s\n", name, s);
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

  /* 1. A small graph: broadcasting add and a dtype conversion. */
  float av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {0.5f, -1, 10};
  cmx_array a, b, c, h;
  TRY(cmx_array_from_data(&a, av, (int64_t[]){2, 3}, 2, CMX_FLOAT32));
  TRY(cmx_array_from_data(&b, bv, (int64_t[]){3}, 1, CMX_FLOAT32));
  TRY(cmx_add(&c, a, b, S)); /* (2,3) + (3,) -> (2,3) */
  TRY(cmx_astype(&h, c, CMX_FLOAT16, S));
  show("a", a);
  show("b", b);
  show("a + b", c);
  show("(a + b).astype(float16)", h);
  cmx_array_release_all((cmx_array[]){a, b, c, h}, 4);

  /* 2. A bigger graph, timed: y = x + bias, repeated, then converted. */
  const int64_t n = 1024;
  cmx_array x = random_matrix(n, n, 1), bias = random_matrix(1, n, 2);
  double t0 = now_ms();
  cmx_array y = cmx_array_retain(x);
  for (int i = 0; i < 8; i++) {
    cmx_array next;
    TRY(cmx_add(&next, y, bias, S));
    cmx_array_release(y);
    y = next;
  }
  cmx_array y16;
  TRY(cmx_astype(&y16, y, CMX_BFLOAT16, S));
  double t1 = now_ms();
  TRY(cmx_eval((cmx_array[]){y, y16}, 2));
  double t2 = now_ms();

  printf("\nx: %lldx%lld float32; y = x + bias, 8 times; y16 = bf16 of y\n",
         (long long)n, (long long)n);
  show("y16", y16);
  printf("graph build: %.3f ms   eval: %.3f ms\n", t1 - t0, t2 - t1);
  cmx_array_release_all((cmx_array[]){x, bias, y, y16}, 4);
  return 0;
}
