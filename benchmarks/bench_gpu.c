/* GPU benchmarks (CUDA backend), for the lent GPU machine
 * (scripts/gpu-check.sh runs them). Without a GPU they say so and exit 0.
 *
 *   copy 64M f32 on the gpu     GB/s (read + written): cmx's floor here
 *   add 64M f32 on the gpu      GB/s (3 x 256 MB moved), fraction of copy
 *   add with host data          2 x 256 MB to the device, 256 MB back
 *   host->device, device->host  256 MB each way through the pinned
 *                               staging ring (cmx_array_device_data,
 *                               cmx_array_data): GB/s
 *   op overhead                 10,000 dependent 1-element adds and 1000
 *                               of a (16,) array: us per op, with the
 *                               launches batched into CUDA graphs and
 *                               without (CMX_CUDA_GRAPHS=0's path); the
 *                               crossover: evals of chains of N adds, N
 *                               launches against a graph replay, and the
 *                               one-time cost of instantiating the graph
 *                               (BENCH_GPU_ONLY=overhead: this alone)
 *   first use of a kernel       NVRTC compile (or disk cache) + load
 *   reductions of (8192, 4096) f32 (the first 32M elements of the add's
 *   input): sum over the last and the first axis,
 *   argmax, softmax and logsumexp over the last axis; cumsum of 64M f32:
 *   GB/s (bytes read + written) and the fraction of the copy's
 *   (goals: sum >= 0.85, argmax >= 0.8, cumsum >= 0.7)
 *
 * For scale: an H100 moved about 3.0 TB/s in a device-to-device copy
 * through PyTorch here (KINDS.md), an H200 about 4.3 TB/s. Figures are
 * medians of several repetitions after a warm-up; device timings end with
 * cmx_synchronize, so they include launching.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Seconds for op `kind` on the gpu (0: copy (astype to float32), 1: add,
 * 2: exp, 3: astype to bfloat16), output evaluated and released. */
static double time_op(int kind, cmx_array a, cmx_array b) {
  double t0 = now();
  cmx_array c = NULL;
  if (kind == 0)
    check(cmx_astype(&c, a, CMX_FLOAT32, g_gpu), "astype");
  else if (kind == 2)
    check(cmx_exp(&c, a, g_gpu), "exp");
  else if (kind == 3)
    check(cmx_astype(&c, a, CMX_BFLOAT16, g_gpu), "astype");
  else
    check(cmx_add(&c, a, b, g_gpu), "add");
  check(cmx_array_eval(c), "eval");
  check(cmx_synchronize(g_gpu), "synchronize");
  double t = now() - t0;
  cmx_array_release(c);
  return t;
}

/* Eager gelu x * (1 + erf(x / sqrt(2))) / 2 on (32, 1000, 4096) f32 (five
 * kernels), built from the 64M-element device array a; copy_bw: GB/s. */
static void gelu_benchmark(cmx_array a, double copy_bw) {
  int64_t shape[3] = {32, 1000, 4096}, start = 0, stop = 32 * 1000 * 4096;
  cmx_array two[2] = {a, a}, cat = NULL, flat = NULL, x = NULL;
  check(cmx_concatenate(&cat, two, 2, 0, g_gpu), "concatenate");
  check(cmx_slice(&flat, cat, &start, &stop, NULL, g_gpu), "slice");
  check(cmx_reshape(&x, flat, shape, 3, g_gpu), "reshape");
  check(cmx_array_eval(x), "eval");
  cmx_array_release_all((cmx_array[]){cat, flat}, 2);
  cmx_array r2, one, half;
  check(cmx_array_from_double(&r2, 1.4142135623730951, CMX_FLOAT32), "scalar");
  check(cmx_array_from_double(&one, 1, CMX_FLOAT32), "scalar");
  check(cmx_array_from_double(&half, 2, CMX_FLOAT32), "scalar");
  double t[8];
  for (int i = -2; i < 7; i++) {
    double t0 = now();
    cmx_array u = NULL, e = NULL, p = NULL, m = NULL, g = NULL;
    check(cmx_divide(&u, x, r2, g_gpu), "divide");
    check(cmx_erf(&e, u, g_gpu), "erf");
    check(cmx_add(&p, e, one, g_gpu), "add");
    check(cmx_multiply(&m, x, p, g_gpu), "multiply");
    check(cmx_divide(&g, m, half, g_gpu), "divide");
    cmx_array_release_all((cmx_array[]){u, e, p, m}, 4);
    check(cmx_array_eval(g), "eval");
    check(cmx_synchronize(g_gpu), "synchronize");
    if (i >= 0) t[i] = now() - t0;
    cmx_array_release(g);
  }
  double tg = median(t, 7), floor = 2.0 * (double)stop * 4 / (copy_bw * 1e9);
  printf(
      "eager gelu (32,1000,4096)    %8.3f ms  (5 kernels; one read + write "
      "at copy speed: %.3f ms)\n",
      tg * 1e3, floor * 1e3);
  cmx_array_release_all((cmx_array[]){x, r2, one, half}, 4);
}

/* cur + n * inc as n dependent lazy adds on the GPU (cur's reference is
 * taken over). */
static cmx_array add_n(cmx_array cur, cmx_array inc, int n) {
  for (int i = 0; i < n; i++) {
    cmx_array next = NULL;
    check(cmx_add(&next, cur, inc, g_gpu), "add");
    cmx_array_release(cur);
    cur = next;
  }
  return cur;
}

/* Seconds per op of a chain of n dependent adds of a one-element (or
 * 16-element when wide) array: built, then evaluated and synchronised.
 * *build gets the building part alone. */
static double chain(int n, bool wide, double* build) {
  float v[16] = {0};
  int64_t len = wide ? 16 : 1;
  cmx_array one, cur;
  check(cmx_array_from_data(&one, v, &len, 1, CMX_FLOAT32), "array");
  cmx_array inc;
  check(cmx_array_from_double(&inc, 1, CMX_FLOAT32), "scalar");
  check(cmx_add(&cur, one, inc, g_gpu), "add");
  check(cmx_array_eval(cur), "eval");
  double t0 = now();
  cur = add_n(cur, inc, n);
  double t1 = now();
  check(cmx_array_eval(cur), "eval");
  check(cmx_synchronize(g_gpu), "synchronize");
  double t2 = now();
  float got[16];
  check(cmx_array_copy_to(cur, got, sizeof got), "copy_to");
  if (got[0] != (float)n + 1)
    fprintf(stderr, "bench_gpu: chain gave %g\n", (double)got[0]);
  cmx_array_release_all((cmx_array[]){one, inc, cur}, 3);
  *build = (t1 - t0) / n;
  return (t2 - t0) / n;
}

/* The driver alone, for scale: an empty kernel launched n times on a
 * stream of its own, and n event records (libcuda loaded directly). */
static void driver_floor(int n) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) return;
  int (*dev_get)(int*, int) = (int (*)(int*, int))dlsym(lib, "cuDeviceGet");
  int (*retain)(void**, int) =
      (int (*)(void**, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
  int (*set_cur)(void*) = (int (*)(void*))dlsym(lib, "cuCtxSetCurrent");
  int (*load)(void**, const void*) =
      (int (*)(void**, const void*))dlsym(lib, "cuModuleLoadData");
  int (*get_fn)(void**, void*, const char*) =
      (int (*)(void**, void*, const char*))dlsym(lib, "cuModuleGetFunction");
  int (*mk_stream)(void**, unsigned) =
      (int (*)(void**, unsigned))dlsym(lib, "cuStreamCreate");
  int (*sync)(void*) = (int (*)(void*))dlsym(lib, "cuStreamSynchronize");
  int (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
                unsigned, unsigned, void*, void**, void**) =
      (int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned,
               unsigned, unsigned, void*, void**,
               void**))dlsym(lib, "cuLaunchKernel");
  int (*mk_event)(void**, unsigned) =
      (int (*)(void**, unsigned))dlsym(lib, "cuEventCreate");
  int (*record)(void*, void*) =
      (int (*)(void*, void*))dlsym(lib, "cuEventRecord");
  int (*query)(void*) = (int (*)(void*))dlsym(lib, "cuEventQuery");
  if (!dev_get || !retain || !set_cur || !load || !get_fn || !mk_stream ||
      !sync || !launch || !mk_event || !record || !query)
    return;
  static const char ptx[] =
      ".version 7.0\n.target sm_70\n.address_size 64\n"
      ".visible .entry cmx_bench_empty()\n{\n ret;\n}\n";
  int dev = 0;
  void *ctx = NULL, *mod = NULL, *fn = NULL, *st = NULL, *ev = NULL;
  if (dev_get(&dev, 0) || retain(&ctx, dev) || set_cur(ctx) ||
      load(&mod, ptx) || get_fn(&fn, mod, "cmx_bench_empty") ||
      mk_stream(&st, 1) || mk_event(&ev, 2))
    return;
  double tl = 0, te = 0, tq = 0;
  for (int rep = 0; rep < 2; rep++) {
    double t0 = now();
    for (int i = 0; i < n; i++)
      launch(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL);
    double t1 = now();
    for (int i = 0; i < n; i++) record(ev, st);
    double t2 = now();
    for (int i = 0; i < n; i++) query(ev);
    double t3 = now();
    sync(st);
    tl = (t1 - t0) / n, te = (t2 - t1) / n, tq = (t3 - t2) / n;
  }
  printf(
      "driver alone                 %8.2f us per empty launch, %.2f us per "
      "event record, %.2f us per event query\n",
      tl * 1e6, te * 1e6, tq * 1e6);
}

/* The backend's switch for CUDA graphs (src/backend/cuda/graph.c; an
 * internal symbol of libcmx): on (1) or off (0), and the fewest nodes a
 * replayed batch needs to go as a graph (0: the default). */
void cmx__gpu_graphs_set(int on, int min_nodes);
/* The plain sightings a run needs before it is made a graph (0: the
 * default) and whether library calls are captured (-1: the default). */
void cmx__gpu_graphs_tune(int min_seen, int capture);

/* Seconds per eval of a chain of n dependent adds on a (16,) array (the
 * median of reps evals after two: the second of which instantiates the
 * graph; *first gets that one's time). */
static double eval_chain(int n, int reps, double* first) {
  double t[64];
  float v[16] = {0};
  int64_t len = 16;
  cmx_array x, inc;
  check(cmx_array_from_data(&x, v, &len, 1, CMX_FLOAT32), "array");
  check(cmx_array_from_double(&inc, 1, CMX_FLOAT32), "scalar");
  check(cmx_array_eval(x), "eval");
  for (int r = -2; r < reps; r++) {
    cmx_array cur = add_n(cmx_array_retain(x), inc, n);
    double t0 = now();
    check(cmx_array_eval(cur), "eval");
    check(cmx_synchronize(g_gpu), "synchronize");
    double dt = now() - t0;
    if (r == -1 && first) *first = dt;
    if (r >= 0) t[r] = dt;
    cmx_array_release(cur);
  }
  cmx_array_release_all((cmx_array[]){x, inc}, 2);
  return median(t, reps);
}

/* Per-op overhead: chains of tiny dependent adds (the figure: 1000
 * adds of a (16,) array), building apart, graphs on and off; the
 * crossover of graphs against launches; the driver's own costs. */
static void overhead_benchmarks(void) {
  double t[5], b[5], build;
  for (int graphs = 1; graphs >= 0; graphs--) {
    cmx__gpu_graphs_set(graphs, 0);
    for (int w = 0; w < 2; w++) {
      int n = w ? 1000 : 10000;
      chain(n, w, &build);
      for (int rep = 0; rep < 5; rep++) t[rep] = chain(n, w, &b[rep]);
      printf(
          "op overhead (dependent adds) %8.2f us per op  (%d adds of (%d,); "
          "building the graph %.2f us of it; cuda graphs %s)\n",
          median(t, 5) * 1e6, n, w ? 16 : 1, median(b, 5) * 1e6,
          graphs ? "on" : "off");
    }
  }
  /* the crossover: an eval of N launches, or a graph of N nodes replayed
   * (every batch a graph: threshold 1), and the graph's first build */
  static const int ns[] = {1, 2, 3, 4, 8, 16, 64, 256};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    double first = 0;
    cmx__gpu_graphs_set(0, 0);
    double plain = eval_chain(ns[i], 15, NULL);
    cmx__gpu_graphs_set(1, 1);
    cmx__gpu_graphs_tune(1, -1); /* a graph from the second sight */
    double graph = eval_chain(ns[i], 15, &first);
    cmx__gpu_graphs_tune(0, -1);
    printf(
        "eval of %3d dependent adds    launches %8.2f us, graph replay %8.2f "
        "us, graph instantiated %8.2f us (first build + launch)\n",
        ns[i], plain * 1e6, graph * 1e6, first * 1e6);
  }
  cmx__gpu_graphs_set(-1, 0);
  driver_floor(10000);
}

/* The reduction benchmarks: op k on x (see reduction_benchmarks). */
static cmx_status red_op(int k, cmx_array x, cmx_array* out) {
  int last = -1, first = 0;
  switch (k) {
    case 0:
      return cmx_sum(out, x, &last, 1, false, g_gpu);
    case 1:
      return cmx_sum(out, x, &first, 1, false, g_gpu);
    case 2:
      return cmx_argmax(out, x, &last, false, g_gpu);
    case 3:
      return cmx_softmax(out, x, &last, 1, false, g_gpu);
    case 4:
      return cmx_logsumexp(out, x, &last, 1, false, g_gpu);
    default:
      return cmx_cumsum(out, x, &first, false, true, g_gpu);
  }
}

/* Median seconds of op k on x (3 warm-ups, 11 timed runs of 10 ops
 * evaluated together: launch overhead is amortised as in a real graph). */
static double time_red(int k, cmx_array x) {
  double t[11];
  for (int i = -3; i < 11; i++) {
    cmx_array r[10] = {NULL};
    double t0 = now();
    for (int j = 0; j < 10; j++) check(red_op(k, x, &r[j]), "reduction");
    check(cmx_eval(r, 10), "eval");
    check(cmx_synchronize(g_gpu), "synchronize");
    if (i >= 0) t[i] = (now() - t0) / 10;
    cmx_array_release_all(r, 10);
  }
  return median(t, 11);
}

/* Reductions of a device-resident (8192, 4096) f32 array and a cumsum of
 * the flat 64M array xflat; copy_bw: the copy's GB/s. */
static void reduction_benchmarks(cmx_array xflat, double copy_bw) {
  int64_t shape[2] = {8192, 4096}, start = 0, stop = 8192 * 4096;
  cmx_array x = NULL, half = NULL;
  check(cmx_slice(&half, xflat, &start, &stop, NULL, g_gpu), "slice");
  check(cmx_reshape(&x, half, shape, 2, g_gpu), "reshape");
  check(cmx_array_eval(x), "eval");
  cmx_array_release(half);
  static const char* const names[] = {
      "sum (8192,4096) last axis",  "sum (8192,4096) first axis",
      "argmax (8192,4096) last",    "softmax (8192,4096) last",
      "logsumexp (8192,4096) last", "cumsum 64M f32"};
  /* bytes moved per element: read, plus written for same-size outputs */
  static const double moved[] = {1, 1, 1, 2, 1, 2};
  for (int k = 0; k < 6; k++) {
    double t = time_red(k, k == 5 ? xflat : x);
    double elems = k == 5 ? (double)N : 8192.0 * 4096.0;
    double bw = moved[k] * elems * sizeof(float) / t / 1e9;
    printf("%-28s %8.1f GB/s  (%.2f of copy, %.3f ms)\n", names[k], bw,
           bw / copy_bw, t * 1e3);
  }
  /* smaller scan tiles (more look-backs) than the default 1024 threads:
   * CMX_GPU_SCAN_THREADS */
  static const char* const tiles[] = {"256", "512"};
  for (int i = 0; i < 2; i++) {
    setenv("CMX_GPU_SCAN_THREADS", tiles[i], 1);
    double t = time_red(5, xflat);
    double bw = 2.0 * N * sizeof(float) / t / 1e9;
    printf("cumsum 64M f32, %4s threads %8.1f GB/s  (%.2f of copy, %.3f ms)\n",
           tiles[i], bw, bw / copy_bw, t * 1e3);
  }
  unsetenv("CMX_GPU_SCAN_THREADS");
  cmx_array_release(x);
}

static void first_use(void) {
  /* First use of kernels not used yet (int16 add, subtract, multiply,
   * maximum, minimum), then a second use. A second run of this program
   * finds them in the disk cache: the warm-start figure. */
  int16_t small[1024] = {0};
  int64_t m = 1024;
  cmx_array s;
  check(cmx_array_from_data(&s, small, &m, 1, CMX_INT16), "array");
  double t0 = now();
  for (int k = 0; k < 5; k++) {
    cmx_array c1 = NULL;
    cmx_status st = k == 0   ? cmx_add(&c1, s, s, g_gpu)
                    : k == 1 ? cmx_subtract(&c1, s, s, g_gpu)
                    : k == 2 ? cmx_multiply(&c1, s, s, g_gpu)
                    : k == 3 ? cmx_maximum(&c1, s, s, g_gpu)
                             : cmx_minimum(&c1, s, s, g_gpu);
    check(st, "int16 op");
    check(cmx_array_eval(c1), "eval");
    cmx_array_release(c1);
  }
  double first = (now() - t0) / 5;
  t0 = now();
  cmx_array c2 = NULL;
  check(cmx_add(&c2, s, s, g_gpu), "add");
  check(cmx_array_eval(c2), "eval");
  double second = now() - t0;
  printf(
      "first use of a kernel        %8.2f ms per kernel (5 kernels; then "
      "%.1f us; NVRTC compile, or the disk cache on a second run, + load)\n",
      first * 1e3, second * 1e6);

  cmx_array_release_all((cmx_array[]){s, c2}, 2);
}

int main(void) {
  if (!cmx_is_available(cmx_device_gpu())) {
    cmx_stream s;
    cmx_default_stream(&s, cmx_device_gpu());
    printf("bench_gpu: no GPU here (%s)\n", cmx_last_error());
    return 0;
  }
  check(cmx_default_stream(&g_gpu, cmx_device_gpu()), "stream");
  /* BENCH_GPU_ONLY=first_use: only the kernel-load figure (a second run
   * with a warm disk cache) */
  const char* only = getenv("BENCH_GPU_ONLY");
  if (only && !strcmp(only, "first_use")) {
    first_use();
    return 0;
  }
  if (only && !strcmp(only, "overhead")) {
    overhead_benchmarks();
    return 0;
  }
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
         3 * bytes / tadd / 1e9, (3 * bytes / tadd) / (2 * bytes / tcopy));
  /* exp and astype to bfloat16: bytes read + written, against the copy */
  for (int kind = 2; kind <= 3; kind++) {
    for (int i = 0; i < 3; i++) time_op(kind, da, NULL);
    for (int i = 0; i < 11; i++) t[i] = time_op(kind, da, NULL);
    double moved = kind == 2 ? 2 * bytes : 1.5 * bytes;
    double tk = median(t, 11);
    printf("%s %8.1f GB/s  (%.2f of copy)\n",
           kind == 2 ? "exp 64M f32 on the gpu      "
                     : "astype 64M f32->bf16        ",
           moved / tk / 1e9, (moved / tk) / (2 * bytes / tcopy));
  }
  gelu_benchmark(da, 2 * bytes / tcopy / 1e9);

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

  reduction_benchmarks(da, 2 * bytes / tcopy / 1e9);

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
   * result's 256 MB down (its host copy made): through the pinned ring,
   * then straight into the page-locked destination. */
  for (int mode = 0; mode < 2; mode++) {
    double tup[5], tdown[5];
    if (mode) setenv("CMX_GPU_D2H_REGISTER", "1", 1);
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
    unsetenv("CMX_GPU_D2H_REGISTER");
    if (!mode)
      printf("host->device copy            %8.1f GB/s  (256 MB)\n",
             bytes / median(tup, 5) / 1e9);
    printf("device->host copy            %8.1f GB/s  (256 MB, %s)\n",
           bytes / median(tdown, 5) / 1e9,
           mode ? "CMX_GPU_D2H_REGISTER=1: into the registered destination"
                : "pinned staging ring");
  }

  overhead_benchmarks();

  first_use();
  cmx_array_release_all((cmx_array[]){ha, hb, da, db, zero}, 5);
  free(x);
  return 0;
}
