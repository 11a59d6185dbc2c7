/* The GPU convolution's two paths (src/backend/cuda/conv.c: cmx's unfold +
 * cuBLASLt, and cuDNN through cudnn.c) against the CPU: forward results
 * and both cotangents (cmx_vjp: the input gradient and the weight
 * gradient, which the GPU may take as cuDNN's backward-filter form) for
 * 1-3 spatial dims, strides, asymmetric and negative padding, both
 * dilations, groups (depthwise too), flip, batch 1, odd sizes, a
 * transposed (strided) input, in float32, float16 and bfloat16. The data
 * are small integers, so every sum is exact in float32 and rounds once to
 * the 16-bit types: results must equal the CPU's bit for bit on both
 * paths (float32 runs without TF32). The path counters prove which path
 * ran: CMX_CUDA_CONV=fallback must keep cuDNN out; without it, where
 * cuDNN loads, the plain 2-d case must go through it. Without a GPU there
 * is nothing to compare and the test says so. */
#include "backend/cuda/conv.h"
#include "gpu_util.h"

typedef struct {
  const char* name;
  int nsp, N, C, O, groups, flip;
  int in[3], k[3], stride[3], lo[3], hi[3], kd[3], id[3];
  bool transposed_x; /* x given as a transposed view */
} ccase;

static const ccase k_cases[] = {
    {"2d resnet-like",
     2,
     2,
     8,
     16,
     1,
     0,
     {9, 7},
     {3, 3},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     false},
    {"2d lenet-like batch 1",
     2,
     1,
     3,
     6,
     1,
     0,
     {12, 12},
     {5, 5},
     {1, 1},
     {0, 0},
     {0, 0},
     {1, 1},
     {1, 1},
     false},
    {"2d strided dilated asym",
     2,
     3,
     4,
     5,
     1,
     0,
     {11, 10},
     {3, 2},
     {2, 3},
     {2, 0},
     {1, 2},
     {2, 1},
     {1, 1},
     false},
    {"2d groups flip",
     2,
     2,
     6,
     9,
     3,
     1,
     {7, 8},
     {3, 3},
     {1, 2},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     false},
    {"2d depthwise",
     2,
     2,
     5,
     5,
     5,
     0,
     {6, 9},
     {3, 3},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     false},
    {"2d input dilation (transposed conv)",
     2,
     2,
     4,
     3,
     1,
     1,
     {5, 4},
     {3, 3},
     {1, 1},
     {2, 2},
     {2, 3},
     {1, 1},
     {2, 2},
     false},
    {"2d negative padding",
     2,
     1,
     3,
     4,
     1,
     0,
     {9, 9},
     {2, 2},
     {1, 1},
     {-1, 0},
     {0, -2},
     {1, 1},
     {1, 1},
     false},
    {"2d pointwise",
     2,
     2,
     8,
     12,
     2,
     0,
     {5, 3},
     {1, 1},
     {1, 1},
     {0, 0},
     {0, 0},
     {1, 1},
     {1, 1},
     false},
    {"2d transposed input",
     2,
     3,
     4,
     8,
     1,
     0,
     {6, 7},
     {3, 3},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     {1, 1},
     true},
    {"1d", 1, 2, 3, 4, 1, 0, {13}, {4}, {2}, {1}, {2}, {1}, {1}, false},
    {"1d flip dilated",
     1,
     1,
     2,
     2,
     2,
     1,
     {10},
     {3},
     {1},
     {2},
     {2},
     {3},
     {1},
     false},
    {"3d",
     3,
     2,
     3,
     4,
     1,
     0,
     {5, 6, 4},
     {3, 2, 3},
     {1, 2, 1},
     {1, 0, 1},
     {1, 0, 1},
     {1, 1, 1},
     {1, 1, 1},
     false},
    {"3d odd",
     3,
     1,
     2,
     3,
     1,
     1,
     {4, 5, 5},
     {2, 3, 3},
     {2, 1, 1},
     {0, 1, 2},
     {1, 1, 0},
     {1, 2, 1},
     {1, 1, 2},
     false},
};

/* Small integers in [-3, 3] as an array of dtype dt (made on the CPU). */
static cmx_array ints(const int64_t* shape, int nd, cmx_dtype dt) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)(n ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) v[i] = (float)((int)(rnd() % 7) - 3);
  cmx_array a = arr(v, shape, nd, CMX_FLOAT32), out = NULL;
  free(v);
  OK(cmx_astype(&out, a, dt, cpu()));
  OK(cmx_array_eval(out));
  cmx_array_release(a);
  return out;
}

/* a and b hold the same shape and values (compared as float32). */
static bool same_values(cmx_array a, cmx_array b, const char* what) {
  cmx_array fa = NULL, fb = NULL;
  bool ok = cmx_astype(&fa, a, CMX_FLOAT32, cpu()) == CMX_OK &&
            cmx_astype(&fb, b, CMX_FLOAT32, cpu()) == CMX_OK &&
            cmx_array_ndim(a) == cmx_array_ndim(b);
  for (int d = 0; ok && d < cmx_array_ndim(a); d++)
    ok = cmx_array_dim(a, d) == cmx_array_dim(b, d);
  int64_t n = ok ? cmx_array_size(a) : 0;
  float* x = malloc((size_t)(n ? n : 1) * sizeof(float));
  float* y = malloc((size_t)(n ? n : 1) * sizeof(float));
  ok = ok && cmx_array_copy_to(fa, x, (size_t)n * 4) == CMX_OK &&
       cmx_array_copy_to(fb, y, (size_t)n * 4) == CMX_OK;
  if (!ok) fprintf(stderr, "  %s: %s\n", what, cmx_last_error());
  for (int64_t i = 0; ok && i < n; i++)
    if (x[i] != y[i]) {
      fprintf(stderr, "  %s: element %lld: gpu %g, cpu %g\n", what,
              (long long)i, x[i], y[i]);
      ok = false;
    }
  free(x);
  free(y);
  cmx_array_release(fa);
  cmx_array_release(fb);
  return ok;
}

static cmx_status conv_of(const ccase* c, cmx_array x, cmx_array w,
                          cmx_array* out) {
  int s[3], lo[3], hi[3], kd[3], id[3];
  for (int d = 0; d < c->nsp; d++) {
    s[d] = c->stride[d], lo[d] = c->lo[d], hi[d] = c->hi[d];
    kd[d] = c->kd[d], id[d] = c->id[d];
  }
  return cmx_conv_general(out, x, w, s, c->nsp, lo, c->nsp, hi, c->nsp, kd,
                          c->nsp, id, c->nsp, c->groups, c->flip != 0,
                          CMX_STREAM_DEFAULT);
}

static cmx_status conv_closure(void* payload, const cmx_array* in, int nin,
                               cmx_array** out, int* nout) {
  (void)nin;
  *out = malloc(sizeof(cmx_array));
  *nout = 1;
  cmx_status st = conv_of(payload, in[0], in[1], &(*out)[0]);
  if (st != CMX_OK) {
    free(*out);
    *out = NULL;
    *nout = 0;
  }
  return st;
}

/* y, dx, dw of case c on device dev (the default device meanwhile). */
static bool run_case(const ccase* c, cmx_device dev, cmx_array x, cmx_array w,
                     cmx_array r, cmx_array res[3]) {
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(dev));
  cmx_array prim[2] = {x, w}, *outs = NULL;
  int nout = 0;
  cmx_closure f = {conv_closure, (void*)c};
  cmx_status st = cmx_vjp(f, prim, 2, &r, 1, &outs, &nout, res + 1);
  if (st == CMX_OK) {
    res[0] = outs[0];
    free(outs);
    st = cmx_eval(res, 3);
  }
  OK(cmx_set_default_device(prev));
  if (st != CMX_OK) fprintf(stderr, "  %s: %s\n", c->name, cmx_last_error());
  return st == CMX_OK;
}

static void check_case(const ccase* c, cmx_dtype dt, const char* path) {
  int64_t xs[5], ws[5], ys[5];
  int nd = c->nsp + 2;
  xs[0] = c->N, xs[nd - 1] = c->C;
  ws[0] = c->O, ws[nd - 1] = c->C / c->groups;
  ys[0] = c->N, ys[nd - 1] = c->O;
  for (int d = 0; d < c->nsp; d++) {
    xs[1 + d] = c->in[d];
    ws[1 + d] = c->k[d];
    int64_t lv = (c->in[d] - 1) * c->id[d] + 1 + c->lo[d] + c->hi[d];
    ys[1 + d] = (lv - ((c->k[d] - 1) * c->kd[d] + 1)) / c->stride[d] + 1;
  }
  cmx_array x = NULL, w = ints(ws, nd, dt), r = ints(ys, nd, dt);
  if (c->transposed_x) { /* (N, H, W, C) as a view of (C, W, H, N) data */
    int64_t ts[5] = {c->C, xs[2], xs[1], c->N}, st[5];
    cmx_array base = ints(ts, 4, dt);
    st[0] = 1, st[1] = c->N, st[2] = c->N * xs[1], st[3] = c->N * xs[1] * xs[2];
    x = view(base, xs, st, 4, 0);
    cmx_array_release(base);
  } else {
    x = ints(xs, nd, dt);
  }
  cmx_array want[3] = {NULL, NULL, NULL}, got[3] = {NULL, NULL, NULL};
  char what[160];
  snprintf(what, sizeof what, "%s %s (%s)", c->name, cmx_dtype_name(dt), path);
  bool ok = run_case(c, cmx_device_cpu(), x, w, r, want) &&
            run_case(c, cmx_device_gpu(), x, w, r, got);
  CHECK_MSG(ok, "%s: evaluation failed", what);
  static const char* const part[3] = {"y", "dx", "dw"};
  for (int i = 0; ok && i < 3; i++) {
    char p[200];
    snprintf(p, sizeof p, "%s %s", what, part[i]);
    CHECK_MSG(same_values(got[i], want[i], p), "%s differs from the cpu", p);
  }
  for (int i = 0; i < 3; i++) {
    cmx_array_release(want[i]);
    cmx_array_release(got[i]);
  }
  cmx_array_release(x);
  cmx_array_release(w);
  cmx_array_release(r);
}

static void all_cases(const char* path) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++)
    for (size_t t = 0; t < 3; t++) check_case(&k_cases[i], dts[t], path);
}

/* One forward 2-d convolution on the GPU: the path counters' change. */
static cmx__gpu_conv_stats one_forward(void) {
  cmx__gpu_conv_stats a = cmx__gpu_conv_stats_get();
  int64_t xs[4] = {2, 8, 8, 16}, ws[4] = {16, 3, 3, 16};
  cmx_array x = ints(xs, 4, CMX_FLOAT32), w = ints(ws, 4, CMX_FLOAT32),
            y = NULL;
  OK(cmx_conv2d(&y, x, w, 1, 1, 1, 1, 1, 1, 1, gpu()));
  OK(cmx_array_eval(y));
  cmx_array_release(x);
  cmx_array_release(w);
  cmx_array_release(y);
  cmx__gpu_conv_stats b = cmx__gpu_conv_stats_get();
  return (cmx__gpu_conv_stats){b.cudnn - a.cudnn, b.own - a.own};
}

static void test_paths(void) {
  const char* why = "";
  bool have = cmx__cudnn_available(&why);
  printf("test_gpu_conv: cuDNN %s%s\n",
         have ? "loaded" : "not loaded: ", have ? "" : why);
  setenv("CMX_CUDA_CONV", "fallback", 1);
  cmx__gpu_conv_stats f = one_forward();
  CHECK_MSG(f.cudnn == 0 && f.own == 1,
            "fallback forced: %llu cudnn, %llu own runs",
            (unsigned long long)f.cudnn, (unsigned long long)f.own);
  all_cases("own path");
  unsetenv("CMX_CUDA_CONV");
  cmx__gpu_conv_stats d = one_forward();
  if (have)
    CHECK_MSG(d.cudnn == 1 && d.own == 0,
              "default path with cuDNN: %llu cudnn, %llu own runs",
              (unsigned long long)d.cudnn, (unsigned long long)d.own);
  else
    CHECK(d.own == 1);
  CHECK_MSG(have || !getenv("CMX_TEST_REQUIRE_CUDNN"),
            "CMX_TEST_REQUIRE_CUDNN is set but cuDNN did not load: %s", why);
  all_cases(have ? "cudnn path" : "default path");
}

int main(void) {
  /* (the kernel cache stays the user's: gpu_test_begin's private one
   * would compile every kernel afresh) */
  g_gpu = cmx_is_available(cmx_device_gpu());
  if (!g_gpu) {
    CHECK_MSG(!gpu_test_required(), "no GPU: %s",
              cmx__gpu_unavailable_reason());
    printf("test_gpu_conv: no gpu here; nothing to compare\n");
  } else {
    RUN(test_paths);
  }
  return test_summary("test_gpu_conv");
}
