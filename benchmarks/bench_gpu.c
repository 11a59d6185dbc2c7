/* GPU benchmarks (CUDA backend), for the lent GPU machine
 * (scripts/gpu-check.sh runs them). Without a GPU they say so and exit 0.
 *
 *   copy 64M f32 on the gpu     GB/s (read + written): cmx's floor here
 *   add 64M f32 on the gpu      GB/s (3 x 256 MB moved), fraction of copy
 *   add with host data          2 x 256 MB to the device, 256 MB back
 *   host->device, device->host  256 MB each way through the pinned
 *                               staging ring (cmx_array_device_data,
 *                               cmx_array_data): GB/s
 *   op overhead                 10,000 dependent 1-element adds: us per op
 *   first use of a kernel       NVRTC compile (or disk cache) + load
 *
 * For scale: an H100 moved about 3.0 TB/s in a device-to-device copy
 * through PyTorch here (KINDS.md), an H200 about 4.3 TB/s. Figures are
 * medians of several repetitions after a warm-up; device timings end with
 * cmx_synchronize, so they include launching.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cmx/cmx.h"

#define N (64 * 1024 * 1024)

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

static cmx_stream g_gpu;

static void check(cmx_status st, const char* what) {
  if (st != CMX_OK) {
    fprintf(stderr, "bench_gpu: %s: %s\n", what, cmx_last_error());
    exit(1);
  }
}

/* The inputs of the join benchmarks: two (4096, 8192) halves of a device
 * array, the whole (8192, 8192), a key. */
static cmx_array g_top, g_bot, g_sq, g_key, g_zero;

/* Seconds for join op `kind` on the gpu (2: concatenate rows, 3: columns,
 * 4: pad by 1 on every side, 5: 2^26 random words), evaluated. */
static double time_join(int kind) {
  double t0 = now();
  cmx_array c = NULL;
  cmx_array two[2] = {g_top, g_bot};
  if (kind == 2 || kind == 3) {
    check(cmx_concatenate(&c, two, 2, kind - 2, g_gpu), "concatenate");
  } else if (kind == 4) {
    check(cmx_pad(&c, g_sq, (int[]){0, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 1},
                  2, g_zero, CMX_PAD_CONSTANT, g_gpu),
          "pad");
  } else {
    int64_t n = N;
    check(cmx_random_bits(&c, &n, 1, 4, g_key, g_gpu), "bits");
  }
  check(cmx_array_eval(c), "eval");
  check(cmx_synchronize(g_gpu), "synchronize");
  double t = now() - t0;
  cmx_array_release(c);
  return t;
}

/* Seconds for op(a, b) on the gpu, output evaluated and released. */
static double time_op(int kind, cmx_array a, cmx_array b) {
  double t0 = now();
  cmx_array c = NULL;
  if (kind == 0)
    check(cmx_astype(&c, a, CMX_FLOAT32, g_gpu), "astype");
  else
    check(cmx_add(&c, a, b, g_gpu), "add");
  check(cmx_array_eval(c), "eval");
  check(cmx_synchronize(g_gpu), "synchronize");
  double t = now() - t0;
  cmx_array_release(c);
  return t;
}

int main(void) {
  if (!cmx_is_available(cmx_device_gpu())) {
    cmx_stream s;
    cmx_default_stream(&s, cmx_device_gpu());
    printf("bench_gpu: no GPU here (%s)\n", cmx_last_error());
    return 0;
  }
  check(cmx_default_stream(&g_gpu, cmx_device_gpu()), "stream");
  int64_t n = N;
  float* x = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 1000);
  cmx_array ha, hb, da = NULL, db = NULL;
  check(cmx_array_from_data(&ha, x, &n, 1, CMX_FLOAT32), "array");
  check(cmx_array_from_data(&hb, x, &n, 1, CMX_FLOAT32), "array");
  /* Device-resident inputs: results of a first add. */
  cmx_array zero;
  check(cmx_array_from_double(&zero, 0, CMX_FLOAT32), "scalar");
  check(cmx_add(&da, ha, zero, g_gpu), "add");
  check(cmx_add(&db, hb, zero, g_gpu), "add");
  check(cmx_eval((cmx_array[]){da, db}, 2), "eval");

  double t[16];
  const double bytes = (double)n * sizeof(float);
  for (int i = 0; i < 3; i++) time_op(0, da, NULL);
  for (int i = 0; i < 11; i++) t[i] = time_op(0, da, NULL);
  double tcopy = median(t, 11);
  for (int i = 0; i < 3; i++) time_op(1, da, db);
  for (int i = 0; i < 11; i++) t[i] = time_op(1, da, db);
  double tadd = median(t, 11);
  printf("copy 64M f32 on the gpu      %8.1f GB/s\n", 2 * bytes / tcopy / 1e9);
  printf("add 64M f32 on the gpu       %8.1f GB/s  (%.2f of copy)\n",
         3 * bytes / tadd / 1e9, (2 * bytes / tcopy) / (3 * bytes / tadd));

  /* Joins and random bits, as fractions of the copy bandwidth. */
  cmx_array sq = NULL;
  check(cmx_reshape(&sq, da, (int64_t[]){8192, 8192}, 2, g_gpu), "reshape");
  check(cmx_slice(&g_top, sq, (int64_t[]){0, 0}, (int64_t[]){4096, 8192},
                  (int64_t[]){1, 1}, g_gpu),
        "slice");
  check(cmx_slice(&g_bot, sq, (int64_t[]){4096, 0}, (int64_t[]){8192, 8192},
                  (int64_t[]){1, 1}, g_gpu),
        "slice");
  g_sq = sq;
  g_zero = zero;
  check(cmx_random_key(&g_key, 0), "key");
  static const char* const names[] = {
      "concatenate rows 2x128 MB   ", "concatenate cols 2x128 MB   ",
      "pad 256 MB by 1             ", "random bits 2^26 words      "};
  for (int kind = 2; kind <= 5; kind++) {
    for (int i = 0; i < 3; i++) time_join(kind);
    for (int i = 0; i < 11; i++) t[i] = time_join(kind);
    double tk = median(t, 11);
    /* bytes read + written (pad: the input once, the output once) */
    double moved = kind == 5   ? bytes
                   : kind == 4 ? bytes + 8194.0 * 8194.0 * sizeof(float)
                               : 2 * bytes;
    printf("%s %8.1f GB/s  (%.2f of copy)\n", names[kind - 2], moved / tk / 1e9,
           (moved / tk) / (2 * bytes / tcopy));
  }
  cmx_array_release_all((cmx_array[]){sq, g_top, g_bot, g_key}, 4);

  /* Host inputs each time: fresh arrays, moved up, result read back. */
  for (int i = 0; i < 5; i++) {
    cmx_array a, b, c = NULL;
    check(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32), "array");
    check(cmx_array_from_data(&b, x, &n, 1, CMX_FLOAT32), "array");
    double t0 = now();
    check(cmx_add(&c, a, b, g_gpu), "add");
    check(cmx_array_copy_to(c, x, (size_t)n * sizeof(float)), "copy_to");
    t[i] = now() - t0;
    cmx_array_release(a);
    cmx_array_release(b);
    cmx_array_release(c);
  }
  double tio = median(t, 5);
  printf(
      "add with host data           %8.1f GB/s  (768 MB moved over PCIe "
      "in %.1f ms)\n",
      3 * bytes / tio / 1e9, tio * 1e3);

  /* Plain copies: 256 MB up (a host array's device copy made), and a GPU
   * result's 256 MB down (its host copy made). */
  double tup[5], tdown[5];
  for (int i = 0; i < 5; i++) {
    cmx_array a, c = NULL;
    void* dptr;
    const void* hptr;
    check(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32), "array");
    double t0 = now();
    check(cmx_array_device_data(a, cmx_device_gpu(), &dptr), "device_data");
    tup[i] = now() - t0;
    check(cmx_add(&c, da, zero, g_gpu), "add");
    check(cmx_array_eval(c), "eval");
    t0 = now();
    check(cmx_array_data(c, &hptr), "data");
    tdown[i] = now() - t0;
    cmx_array_release(a);
    cmx_array_release(c);
  }
  printf("host->device copy            %8.1f GB/s  (256 MB)\n",
         bytes / median(tup, 5) / 1e9);
  printf("device->host copy            %8.1f GB/s  (256 MB)\n",
         bytes / median(tdown, 5) / 1e9);

  /* Per-op overhead: a chain of tiny dependent adds. */
  cmx_array one, cur;
  check(cmx_array_from_double(&one, 1, CMX_FLOAT32), "scalar");
  for (int rep = 0; rep < 3; rep++) {
    cur = cmx_array_retain(one);
    double t0 = now();
    for (int i = 0; i < 10000; i++) {
      cmx_array next = NULL;
      check(cmx_add(&next, cur, one, g_gpu), "add");
      cmx_array_release(cur);
      cur = next;
    }
    check(cmx_array_eval(cur), "eval");
    check(cmx_synchronize(g_gpu), "synchronize");
    t[rep] = (now() - t0) / 10000;
    double v = 0;
    check(cmx_array_item_double(cur, &v), "item");
    if (v != 10001) fprintf(stderr, "bench_gpu: chain gave %g\n", v);
    cmx_array_release(cur);
  }
  printf("op overhead (dependent adds) %8.1f us per op\n", median(t, 3) * 1e6);

  /* First use of a kernel not used yet (int16 add), then its second use. */
  int16_t small[1024] = {0};
  int64_t m = 1024;
  cmx_array s;
  check(cmx_array_from_data(&s, small, &m, 1, CMX_INT16), "array");
  double t0 = now();
  cmx_array c1 = NULL, c2 = NULL;
  check(cmx_add(&c1, s, s, g_gpu), "add");
  check(cmx_array_eval(c1), "eval");
  double first = now() - t0;
  t0 = now();
  check(cmx_add(&c2, s, s, g_gpu), "add");
  check(cmx_array_eval(c2), "eval");
  double second = now() - t0;
  printf(
      "first use of a kernel        %8.1f ms  (then %.1f us; compile or "
      "disk cache + load)\n",
      first * 1e3, second * 1e6);

  cmx_array_release_all((cmx_array[]){ha, hb, da, db, zero, one, s, c1, c2}, 9);
  free(x);
  return 0;
}
