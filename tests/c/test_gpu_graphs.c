/* CUDA graphs of batched launches (src/backend/cuda/graph.c): a stream's
 * launches wait in its batch and go out as one graph launch once the run
 * has been seen before (twice by default); a known run replays its
 * executable graph with updated arguments; a new shape makes a new graph;
 * an instantiation or capture that fails falls back to plain launches with
 * the same results; graphable library calls cut the batch, or with
 * capturing on are captured as child graphs; memory freed inside a batch
 * is reused by the same batch (peak memory as without graphs) and by
 * another stream only after the batch is issued; nothing leaks.
 * Runs on the fake driver too (tests/c/fake_cuda, which counts its graphs),
 * and on a real GPU, where a compiled MLP step (matmuls through cuBLASLt,
 * captured) replays as a graph across new values and shapes. */
#include <dlfcn.h>
#include <math.h>

#include "cmx/compile.h"
#include "gpu_util.h"

static bool g_fake;

static cmx__gpu_graph_stats gstats(void) {
  return cmx__gpu_graph_stats_get();
}

/* The fake driver's counters (0 on a real driver). */
static long fake_counter(const char* name) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  long (*f)(void) = NULL;
  void* p = lib ? dlsym(lib, name) : NULL;
  memcpy(&f, &p, sizeof p);
  long v = f ? f() : 0;
  if (lib) dlclose(lib);
  return v;
}

/* 0, 1, ... n-1 as float32, and a host copy in *ref. */
static cmx_array ramp(int64_t n, float** ref) {
  float* p = malloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(i % 1000);
  cmx_array a = arr(p, &n, 1, CMX_FLOAT32);
  if (ref)
    *ref = p;
  else
    free(p);
  return a;
}

/* start + n * inc, n dependent adds on the gpu (lazy); inc NULL: each
 * adds the last to itself. */
static cmx_array chain(cmx_array start, cmx_array inc, int n) {
  cmx_array cur = cmx_array_retain(start);
  for (int i = 0; cur && i < n; i++) {
    cmx_array next = NULL;
    if (cmx_add(&next, cur, inc ? inc : cur, gpu()) != CMX_OK) next = NULL;
    cmx_array_release(cur);
    cur = next;
  }
  return cur;
}

/* start * 2^n: n dependent adds of an array to itself (lazy). Unlike
 * chain's, these intermediates are not donated to the next add (it reads
 * them twice), so each is freed once the next has run. */
static cmx_array doubling(cmx_array start, int n) {
  return chain(start, NULL, n);
}

/* Evaluates a chain of len adds of `step` onto ramp(n) and checks it;
 * *keep (if given) gets the ramp, for the caller to release. */
static bool chain_keep(int64_t n, int len, float step, cmx_array* keep) {
  float* ref;
  cmx_array a = ramp(n, &ref);
  cmx_array inc = arr(&step, NULL, 0, CMX_FLOAT32);
  cmx_array c = chain(a, inc, len);
  bool ok = c && cmx_array_eval(c) == CMX_OK;
  for (int64_t i = 0; i < n; i++) ref[i] += (float)len * step;
  ok = ok && equal_f32(c, ref, n);
  if (keep) *keep = cmx_array_retain(a);
  cmx_array_release_all((cmx_array[]){a, inc, c}, 3);
  free(ref);
  return ok;
}

static bool chain_ok(int64_t n, int len, float step) {
  return chain_keep(n, len, step, NULL);
}

/* A chain's launches become one graph: plain the first two times (evals
 * that do not repeat pay no instantiation), instantiated the third,
 * replayed with new arguments after that; every result right. */
static void test_replay(void) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(0, -1); /* the defaults */
  cmx__gpu_graphs_forget_all();
  int64_t n = 3000;
  cmx__gpu_graph_stats s0 = gstats();
  CHECK(chain_ok(n, 30, 1.0f));
  CHECK(chain_ok(n, 30, 1.5f));
  cmx__gpu_graph_stats s1 = gstats();
  /* each chain: its step's put (the scalar's device copy, memory.c), then
   * the 30 adds */
  CHECK(s1.direct - s0.direct == 62 && s1.graph_launches == s0.graph_launches &&
        s1.instantiated == s0.instantiated);
  CHECK(chain_ok(n, 30, 2.0f));
  cmx__gpu_graph_stats s2 = gstats();
  CHECK(s2.instantiated - s1.instantiated == 1 &&
        s2.graph_launches - s1.graph_launches == 1 &&
        s2.graph_nodes - s1.graph_nodes == 31);
  /* each ramp outlives the next call: its buffer is new there, so the
   * first node's arguments must be updated */
  cmx_array prev = NULL, next = NULL;
  for (int r = 0; r < 3; r++) {
    CHECK(chain_keep(n, 30, 0.5f * (float)(r + 3), &next));
    cmx_array_release(prev);
    prev = next;
  }
  cmx_array_release(prev);
  cmx__gpu_graph_stats s3 = gstats();
  CHECK_MSG(s3.reused - s2.reused == 3 && s3.instantiated == s2.instantiated,
            "reused %llu, instantiated %llu",
            (unsigned long long)(s3.reused - s2.reused),
            (unsigned long long)(s3.instantiated - s2.instantiated));
  CHECK(s3.node_updates - s2.node_updates >= 2);
  if (g_fake) CHECK(fake_counter("fake_cuda_graph_launches") >= 4);
}

/* Programmatic edges (graph.c): on a card that has them, a graph's
 * kernel nodes after the first hang from the one before by a programmatic
 * edge, and the results are those without: chains of adds across many
 * blocks (grid-stride), and doublings whose intermediates are freed and
 * their memory rewritten by later nodes of the same graph (a kernel that
 * started early must not overwrite what an earlier one still reads). */
static bool doubling_ok(int64_t n, int len) {
  float* ref;
  cmx_array a = ramp(n, &ref);
  cmx_array c = doubling(a, len);
  bool ok = c && cmx_array_eval(c) == CMX_OK;
  for (int64_t i = 0; i < n; i++) ref[i] = ldexpf(ref[i], len);
  ok = ok && equal_f32(c, ref, n);
  cmx_array_release_all((cmx_array[]){a, c}, 2);
  free(ref);
  return ok;
}

static void test_programmatic(void) {
  cmx__gpu_device* d = cmx__gpu_device_get(0);
  bool has = !g_fake && d && d->cc_major >= 9 && cmx__cu.cuGraphAddDependencies;
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, -1); /* a graph from the second sight */
  /* mode 2 (one wave): edges after the small chain's kernels (16 blocks
   * at most), none after the large one's (a million threads or more, past
   * any card's one wave) */
  for (int on = 2; on >= 0; on--) {
    for (int big = 0; big < 2; big++) {
      cmx__gpu_graphs_pdl(on);
      cmx__gpu_graphs_forget_all();
      int64_t n = (int64_t)1 << (big ? 22 : 12);
      cmx__gpu_graph_stats s0 = gstats();
      for (int r = 0; r < 4; r++) {
        CHECK_MSG(chain_ok(n, 24, 0.25f * (float)(r + 1)),
                  "pdl %d n %lld run %d", on, (long long)n, r);
        CHECK_MSG(doubling_ok(n, 30), "pdl %d n %lld run %d", on,
                  (long long)n, r);
      }
      cmx__gpu_graph_stats s1 = gstats();
      CHECK(s1.instantiated > s0.instantiated);
      uint64_t prog = s1.programmatic - s0.programmatic;
      if (has && (on == 1 || (on == 2 && !big)))
        CHECK_MSG(prog > 0, "pdl %d n %lld: no programmatic edges on sm_%d%d",
                  on, (long long)n, d->cc_major, d->cc_minor);
      else if (has && on == 2)
        /* one at most a graph: after the chain's scalar put (one block,
         * memory.c), which comes first */
        CHECK_MSG(prog <= s1.instantiated - s0.instantiated,
                  "pdl 2 n %lld: %llu programmatic edges in %llu graphs",
                  (long long)n, (unsigned long long)prog,
                  (unsigned long long)(s1.instantiated - s0.instantiated));
      else
        CHECK_MSG(prog == 0, "pdl %d n %lld: %llu programmatic edges", on,
                  (long long)n, (unsigned long long)prog);
    }
  }
  cmx__gpu_graphs_pdl(-1);
  cmx__gpu_graphs_tune(0, -1);
}

/* A new shape is a new graph (seen twice, then kept); the old shape's
 * graph still replays. */
static void test_new_shape(void) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, -1); /* a graph from the second sight */
  int64_t n = 3000;
  CHECK(chain_ok(n, 12, 1.0f));
  CHECK(chain_ok(n, 12, 1.0f));
  cmx__gpu_graph_stats s0 = gstats();
  CHECK(chain_ok(5001, 12, 3.0f));
  CHECK(chain_ok(5001, 12, 4.0f));
  cmx__gpu_graph_stats s1 = gstats();
  CHECK(s1.instantiated - s0.instantiated == 1);
  CHECK(chain_ok(n, 12, 5.0f));
  CHECK(chain_ok(5001, 12, 6.0f));
  cmx__gpu_graph_stats s2 = gstats();
  CHECK(s2.reused - s1.reused == 2 && s2.instantiated == s1.instantiated);
}

/* An instantiation that fails falls back to plain launches: same
 * results; the next sight instantiates. */
static void test_fallback(void) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, -1);
  CHECK(chain_ok(777, 9, 1.0f));
  cmx__gpu_graph_stats s0 = gstats();
  cmx__gpu_graphs_fail_next(1);
  CHECK(chain_ok(777, 9, 2.0f));
  cmx__gpu_graph_stats s1 = gstats();
  CHECK(s1.fallbacks - s0.fallbacks == 1 && s1.direct - s0.direct == 10 &&
        s1.instantiated == s0.instantiated);
  CHECK(chain_ok(777, 9, 3.0f));
  CHECK(gstats().instantiated - s1.instantiated == 1);
  /* graphs off: no batch is issued at all */
  cmx__gpu_graphs_set(0, 0);
  cmx__gpu_graph_stats s2 = gstats();
  CHECK(chain_ok(777, 9, 4.0f));
  CHECK(chain_ok(777, 9, 5.0f));
  CHECK(gstats().flushes == s2.flushes);
  cmx__gpu_graphs_set(1, 2);
}

/* Frees wait for the batch: intermediates dropped while their kernels
 * are still batched (the fake poisons freed memory); an async_eval'd
 * chain is issued at once (its stream polled) and completes by polling
 * alone; threads share the stream. */
static void test_frees_and_polls(void) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, -1);
  int64_t n = 20000;
  float* ref;
  cmx_array a = ramp(n, &ref);
  float one = 1;
  cmx_array inc = arr(&one, NULL, 0, CMX_FLOAT32);
  for (int round = 0; round < 3; round++) {
    cmx_array c = chain(a, inc, 25);
    uint64_t flushes = gstats().flushes;
    OK(cmx_async_eval(&c, 1));
    CHECK(gstats().flushes > flushes);
    int polls = 0;
    while (!cmx_array_is_available(c) && polls < 1000000) polls++;
    CHECK(cmx_array_is_available(c));
    float* want = malloc((size_t)n * sizeof *want);
    for (int64_t i = 0; i < n; i++) want[i] = ref[i] + 25;
    CHECK(equal_f32(c, want, n));
    free(want);
    cmx_array_release(c);
  }
  /* a chain read on the CPU: its host copy waits for the batch */
  cmx_array c = chain(a, inc, 7), d = NULL;
  OK(cmx_add(&d, c, inc, cpu()));
  float* want = malloc((size_t)n * sizeof *want);
  for (int64_t i = 0; i < n; i++) want[i] = ref[i] + 8;
  CHECK(equal_f32(d, want, n));
  free(want);
  cmx_array_release_all((cmx_array[]){a, inc, c, d}, 4);
  free(ref);
}

/* ---------------- memory freed inside a batch ---------------- */

/* Peak memory (above what was active before) of evaluating len
 * doublings of a device-resident (n,) float32 array. */
static size_t doubling_peak(int64_t n, int len) {
  float* ref;
  cmx_array a = ramp(n, &ref);
  cmx_array w = doubling(a, 1); /* a's device copy, made before the base */
  OK(cmx_array_eval(w));
  cmx_array_release(w);
  OK(cmx_synchronize(gpu()));
  cmx_reset_peak_memory();
  size_t base = cmx_get_active_memory();
  cmx_array c = doubling(a, len);
  OK(cmx_array_eval(c));
  size_t peak = cmx_get_peak_memory() - base;
  for (int64_t i = 0; i < n; i++) ref[i] *= (float)(1 << len);
  CHECK(equal_f32(c, ref, n));
  cmx_array_release_all((cmx_array[]){a, c}, 2);
  free(ref);
  return peak;
}

/* A buffer freed while its stream's batch holds launches is reused by the
 * batch's later launches, as eager launches reuse it: the peak memory of
 * a chain is the same with graphs (plain and replayed) as without (it
 * was every intermediate at once when frees waited for the batch). */
static void test_peak_in_batch(void) {
  cmx__gpu_graphs_tune(1, -1);
  int64_t n = 1 << 18;
  size_t block = (size_t)n * 4;
  cmx__gpu_graphs_set(0, 0);
  size_t off = doubling_peak(n, 20);
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graph_stats s0 = gstats();
  size_t on[3];
  for (int r = 0; r < 3; r++) on[r] = doubling_peak(n, 20);
  cmx__gpu_graph_stats s1 = gstats();
  CHECK(s1.reused > s0.reused); /* the later chains were graphs */
  for (int r = 0; r < 3; r++)
    CHECK_MSG(on[r] <= off && on[r] <= 4 * block,
              "chain %d: peak %zu blocks with graphs, %zu without", r,
              on[r] / block, off / block);
}

/* ---------------- captured library calls ---------------- */

static const char* const k_kernels[] = {"cmx_test_grid", NULL};
GPU_TEST_FAMILY(g_fam, "test_graphs", GPU_TEST_GRID_SRC, k_kernels, 0,
                CMX__GPU_CUSTOM, 128, 0);

/* A "library" call: launches cmx_test_grid (4 blocks of 64) itself on the
 * stream it is given; `sync` first synchronises that stream, which a
 * capture does not allow. */
typedef struct {
  CUfunction fn;
  CUdeviceptr out;
  int marker;
  bool sync;
} lib_call;

static cmx_status lib_run(void* ctx, CUstream s) {
  lib_call* c = ctx;
  if (c->sync && cmx__cu.cuStreamSynchronize(s) != CUDA_SUCCESS)
    return cmx__error(CMX_ERR_RUNTIME, "[test] sync refused");
  void* params[2] = {&c->out, &c->marker};
  CUresult r =
      cmx__cu.cuLaunchKernel(c->fn, 4, 1, 1, 64, 1, 1, 0, s, params, NULL);
  return r == CUDA_SUCCESS ? CMX_OK
                           : cmx__cu_error(r, "test", "launching in a call");
}

typedef struct {
  int marker;
  bool sync;
} lib_params;

static cmx_status lib_gpu(const cmx_primitive* p, const cmx_array* in, int nin,
                          const cmx_array* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const lib_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &g_fam, 0, 0);
  if (!k) return cmx_last_status();
  cmx_status st = cmx_kernel_alloc(out[0]);
  lib_call c = {k->fn, 0, q->marker, q->sync};
  if (st == CMX_OK) st = cmx__gpu_ptr(out[0], dev, &c.out);
  if (st == CMX_OK) st = cmx__gpu_call_graphable("TestLib", lib_run, &c);
  if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
  return st;
}

static const cmx_primitive_vtable k_lib_vt = {
    .name = "TestLib", .id = -1, .eval_gpu = lib_gpu};

static cmx_array lib_array_on(int marker, bool sync, cmx_stream s) {
  lib_params q = {marker, sync};
  cmx_primitive* p = cmx_primitive_new(&k_lib_vt, &q, sizeof q, s);
  cmx_array out = NULL;
  int64_t n = 256;
  const int64_t* shapes[1] = {&n};
  int nd = 1;
  cmx_dtype dt = CMX_INT32;
  OK(cmx_primitive_apply(&out, 1, p, NULL, 0, shapes, &nd, &dt));
  return out;
}

static cmx_array lib_array(int marker, bool sync) {
  return lib_array_on(marker, sync, gpu());
}

static bool lib_ok(cmx_array a, int marker) {
  int got[256];
  if (cmx_array_copy_to(a, got, sizeof got) != CMX_OK) return false;
  for (int i = 0; i < 256; i++)
    if (got[i] != marker + (i / 64) * 1000 + i % 64) {
      fprintf(stderr, "  element %d: got %d\n", i, got[i]);
      return false;
    }
  return true;
}

/* Three evals of a graphable call and a chain of adds after it, every
 * result right. Capturing off (the default), the call cuts the batch: it
 * runs directly on the stream after the launches batched before it, none
 * captured, and the chain is a batch of its own, replayed once known.
 * Capturing on, the call is captured as a child graph: call and chain are
 * one graph from the first sight, replayed with the new call's capture. */
static void call_rounds(int capture) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, capture);
  int32_t one = 1;
  cmx_array inc = arr(&one, NULL, 0, CMX_INT32);
  /* inc's device copy first (its put is then in no round's batch) */
  cmx_array warm = chain(inc, inc, 1);
  OK(cmx_eval(&warm, 1));
  cmx_array_release(warm);
  for (int r = 0; r < 3; r++) {
    cmx__gpu_graph_stats s0 = gstats();
    cmx__gpu_encoder_stats e0 = cmx__gpu_encoder_stats_get();
    cmx_array l = lib_array(100 * r, false);
    cmx_array c = chain(l, inc, 4);
    OK(cmx_eval((cmx_array[]){c, l}, 2));
    cmx__gpu_graph_stats s1 = gstats();
    cmx__gpu_encoder_stats e1 = cmx__gpu_encoder_stats_get();
    CHECK(lib_ok(l, 100 * r));
    CHECK(lib_ok(c, 100 * r + 4));
    if (capture) {
      CHECK(s1.captures - s0.captures == 1);
      CHECK(s1.graph_launches - s0.graph_launches >= 1);
      if (r > 0) CHECK(s1.reused - s0.reused >= 1);
    } else {
      CHECK(s1.captures == s0.captures && e1.calls - e0.calls == 1);
      if (r == 2) CHECK(s1.reused - s0.reused == 1);
    }
    cmx_array_release_all((cmx_array[]){l, c}, 2);
  }
  cmx_array_release(inc);
}

static void test_call_cuts(void) {
  call_rounds(0);
}

/* Capturing on, as above; and a call that cannot be captured runs
 * directly, with the same result. */
static void test_capture(void) {
  call_rounds(1);
  cmx__gpu_graph_stats s0 = gstats();
  cmx_array l = lib_array(7, true);
  OK(cmx_array_eval(l));
  CHECK(lib_ok(l, 7));
  cmx__gpu_graph_stats s1 = gstats();
  CHECK(s1.captures == s0.captures && s1.fallbacks - s0.fallbacks == 1);
  cmx_array_release(l);
  cmx__gpu_graphs_tune(1, -1);
}

/* Memory freed inside stream A's batch and taken by stream B is written
 * by B only after A's batch has run. B's write here is a library call (it
 * cuts B's batch: issued at once), into the 1 KB that the last
 * intermediate of a chain on A gave back while the chain's launches still
 * waited in A's batch: were B not ordered after that batch, the chain's
 * launches, issued later, would overwrite B's result. */
static void test_reuse_across_streams(void) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, -1);
  cmx_stream b;
  OK(cmx_new_stream(&b, cmx_device_gpu()));
  int64_t n = 256;
  float* ref;
  cmx_array a = ramp(n, &ref);
  for (int64_t i = 0; i < n; i++) ref[i] *= 1024;
  OK(cmx_array_eval(a));
  for (int round = 0; round < 4; round++) {
    cmx_array c = doubling(a, 10);
    cmx_array d = lib_array_on(10 * round, false, b);
    /* c's tasks run first: its launches wait in A's batch when d's task
     * takes the memory c's intermediates gave back */
    OK(cmx_eval((cmx_array[]){c, d}, 2));
    CHECK(equal_f32(c, ref, n));
    CHECK_MSG(lib_ok(d, 10 * round), "round %d", round);
    cmx_array_release_all((cmx_array[]){c, d}, 2);
  }
  free(ref);
  cmx_array_release(a);
}

/* ---------------- a compiled step on a real GPU ---------------- */

/* One SGD step of a 2-layer MLP: returns the new w1, w2 and the loss. */
static cmx_status mlp_step(void* payload, const cmx_array* in, int n,
                           cmx_array** out, int* nout) {
  (void)payload, (void)n;
  const cmx_stream S = CMX_STREAM_DEFAULT;
  cmx_array x = in[0], w1 = in[1], w2 = in[2];
  cmx_array h = NULL, r = NULL, y = NULL, l = NULL, dy = NULL, g2 = NULL,
            w2t = NULL, dh = NULL, mask = NULL, dr = NULL, xt = NULL, g1 = NULL,
            ht = NULL, lr = NULL, s1 = NULL, s2 = NULL, n1 = NULL, n2 = NULL,
            zero = NULL;
  cmx_array_weak_float(&lr, 0.01);
  cmx_array_weak_float(&zero, 0.0);
  cmx_matmul(&h, x, w1, S);
  cmx_maximum(&r, h, zero, S);
  cmx_matmul(&y, r, w2, S);
  cmx_multiply(&dy, y, lr, S); /* d(0.5*lr*|y|^2)/dy, scaled */
  cmx_sum(&l, y, NULL, 0, false, S);
  cmx_transpose(&ht, r, NULL, 0, S);
  cmx_matmul(&g2, ht, dy, S);
  cmx_transpose(&w2t, w2, NULL, 0, S);
  cmx_matmul(&dh, dy, w2t, S);
  cmx_greater(&mask, h, zero, S);
  cmx_multiply(&dr, dh, mask, S);
  cmx_transpose(&xt, x, NULL, 0, S);
  cmx_matmul(&g1, xt, dr, S);
  cmx_multiply(&s1, g1, lr, S);
  cmx_multiply(&s2, g2, lr, S);
  cmx_subtract(&n1, w1, s1, S);
  cmx_subtract(&n2, w2, s2, S);
  cmx_array_release_all((cmx_array[]){h, r, y, dy, g2, w2t, dh, mask, dr, xt,
                                      g1, ht, lr, s1, s2, zero},
                        16);
  if (!n1 || !n2 || !l) return cmx_last_status();
  *out = malloc(3 * sizeof(cmx_array));
  (*out)[0] = n1;
  (*out)[1] = n2;
  (*out)[2] = l;
  *nout = 3;
  return CMX_OK;
}

static cmx_array rnd_matrix(int64_t r, int64_t c) {
  float* p = malloc((size_t)(r * c) * sizeof *p);
  for (int64_t i = 0; i < r * c; i++) p[i] = rndf() / 4096.0f;
  cmx_array a = arr(p, (int64_t[]){r, c}, 2, CMX_FLOAT32);
  free(p);
  return a;
}

static bool close_arrays(cmx_array a, cmx_array b, float tol) {
  int64_t n = cmx_array_size(a);
  float* x = malloc((size_t)n * 4);
  float* y = malloc((size_t)n * 4);
  bool ok = n == cmx_array_size(b) &&
            cmx_array_copy_to(a, x, (size_t)n * 4) == CMX_OK &&
            cmx_array_copy_to(b, y, (size_t)n * 4) == CMX_OK;
  for (int64_t i = 0; ok && i < n; i++) {
    float d = x[i] - y[i];
    float m = y[i] < 0 ? -y[i] : y[i];
    if ((d < 0 ? -d : d) > tol * (1 + m)) {
      fprintf(stderr, "  element %lld: %g vs %g\n", (long long)i, x[i], y[i]);
      ok = false;
    }
  }
  free(x);
  free(y);
  return ok;
}

/* The compiled step on the GPU, called repeatedly with new weights (its
 * own outputs) and data, equal to the step run eagerly on the CPU: with
 * captures, one graph (matmuls captured) replayed, and a new batch size
 * re-captures; without (the default), the launches between products. */
static void compiled_step(int capture) {
  cmx__gpu_graphs_set(1, 2);
  cmx__gpu_graphs_tune(1, capture);
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){mlp_step, NULL}, NULL));
  cmx_array w1 = rnd_matrix(64, 32), w2 = rnd_matrix(32, 10);
  OK(cmx_set_default_device(cmx_device_gpu()));
  for (int call = 0; call < 5; call++) {
    int64_t batch = call < 4 ? 16 : 24;
    cmx_array x = rnd_matrix(batch, 64);
    cmx_array* o = NULL;
    int no = 0;
    cmx__gpu_graph_stats s0 = gstats();
    OK(cmx_compiled_call(cf, (cmx_array[]){x, w1, w2}, 3, &o, &no));
    CHECK(no == 3);
    if (no != 3) break;
    OK(cmx_eval(o, 3));
    cmx__gpu_graph_stats s1 = gstats();
    /* the reference: the same step, eager, on the CPU */
    OK(cmx_set_default_device(cmx_device_cpu()));
    cmx_array* ref = NULL;
    int nr = 0;
    OK(mlp_step(NULL, (cmx_array[]){x, w1, w2}, 3, &ref, &nr));
    OK(cmx_eval(ref, 3));
    OK(cmx_set_default_device(cmx_device_gpu()));
    for (int k = 0; k < 3; k++) CHECK(close_arrays(o[k], ref[k], 1e-3f));
    printf(
        "  capture %d call %d: %llu graph launches (%llu reused), %llu "
        "plain launches, %llu captures\n",
        capture, call,
        (unsigned long long)(s1.graph_launches - s0.graph_launches),
        (unsigned long long)(s1.reused - s0.reused),
        (unsigned long long)(s1.direct - s0.direct),
        (unsigned long long)(s1.captures - s0.captures));
    if (capture && (call == 2 || call == 3))
      CHECK_MSG(s1.reused > s0.reused, "call %d: no graph replayed", call);
    if (capture && call == 4) /* new shape */
      CHECK(s1.instantiated > s0.instantiated);
    if (!capture) CHECK(s1.captures == s0.captures);
    cmx_array_release_all(ref, 3);
    free(ref);
    cmx_array_release_all((cmx_array[]){w1, w2, x, o[2]}, 4);
    w1 = o[0];
    w2 = o[1];
    free(o);
  }
  OK(cmx_set_default_device(cmx_device_cpu()));
  cmx_array_release_all((cmx_array[]){w1, w2}, 2);
  cmx_compiled_release(cf);
  cmx__gpu_graphs_tune(1, -1);
}

static void test_compiled_step(void) {
  compiled_step(0);
  compiled_step(1);
}

/* Every executable graph goes with its stream's batch; no capture graph is
 * left behind (fake driver counters). */
static void test_no_leaks(void) {
  cmx__gpu_graphs_forget_all();
  CHECK(fake_counter("fake_cuda_execs_live") == 0);
  CHECK(fake_counter("fake_cuda_graphs_live") == 0);
}

int main(void) {
  if (!gpu_test_begin("test-gpu-graphs")) return 1;
  g_fake = getenv("CMX_TEST_FAKE_DRIVER") != NULL;
  /* off by default for now (graph.c): asked for here */
  cmx__gpu_graphs_set(1, 2);
  if (g_gpu && g_nvrtc && cmx__gpu_graphs_enabled()) {
    CASE(test_replay);
    CASE(test_new_shape);
    CASE(test_programmatic);
    CASE(test_fallback);
    CASE(test_frees_and_polls);
    CASE(test_peak_in_batch);
    CASE(test_reuse_across_streams);
    CASE(test_call_cuts);
    CASE(test_capture);
    if (!g_fake) CASE(test_compiled_step); /* the fake has no matmul */
    CASE(test_no_leaks);
  } else {
    printf("gpu: unavailable or without graphs, cases not run (%s)\n",
           g_gpu ? "no NVRTC or no graph entry points"
                 : cmx__gpu_unavailable_reason());
    CHECK_MSG(!gpu_test_required(), "CMX_TEST_REQUIRE_GPU: no GPU graphs");
  }
  cmx__gpu_graphs_set(-1, 0);
  cmx__gpu_graphs_tune(0, -1);
  gpu_test_end();
  return test_summary("test_gpu_graphs");
}
