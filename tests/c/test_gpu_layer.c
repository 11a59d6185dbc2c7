/* The CUDA kernel layer: the registry of kernel families, the encoder
 * (launch configurations in 1 to 3 dimensions, any number of arguments of
 * any size, dynamic shared memory past 48 KB, memsets and copies, and a
 * recorder that takes commands over and replays them), NVRTC's include
 * path for the toolkit's CCCL headers (CUB, libcu++) and its part in the
 * cache key, and the cuBLASLt loader.
 *
 * Kernels of this test's own families (registered at run time) run inside
 * GPU tasks of an extension primitive, as any GPU kernel does. Without a
 * GPU the registry, header and loader cases run (those needing NVRTC
 * where it loads); test_gpu_layer_fake_driver runs the launch cases on the
 * fake driver (tests/c/fake_cuda), which emulates these test kernels.
 */
#include "gpu_util.h"

/* ---------------- this test's kernel families ---------------- */

static const char k_launch_src[] = GPU_TEST_GRID_SRC
    "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_test_sum10)\n"
    "extern \"C\" __global__ void cmx_test_sum10(float* out,\n"
    "    const float* a0, const float* a1, const float* a2, const float* a3,\n"
    "    const float* a4, const float* a5, const float* a6, const float* a7,\n"
    "    const float* a8, const float* a9, long long n) {\n"
    "  const float* a[10] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9};\n"
    "  for (long long i = cmx_tid(); i < n; i += cmx_nthreads()) {\n"
    "    float acc = 0;\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < 10; k++) acc += (float)(k + 1) * a[k][i];\n"
    "    out[i] = acc;\n"
    "  }\n"
    "}\n"
    "#endif\n"
    "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_test_args)\n"
    "extern \"C\" __global__ void cmx_test_args(double* out, signed char c,\n"
    "    short s, int i, long long l, float f, double d, unsigned char u) {\n"
    "  out[0] = c; out[1] = s; out[2] = i; out[3] = (double)l; out[4] = f;\n"
    "  out[5] = d; out[6] = u;\n"
    "}\n"
    "#endif\n"
    "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_test_shared)\n"
    "extern \"C\" __global__ void cmx_test_shared(const float* in,\n"
    "    float* out, int n) {\n"
    "  extern __shared__ float buf[];\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = in[i];\n"
    "  __syncthreads();\n"
    "  for (int i = threadIdx.x; i < n; i += blockDim.x)\n"
    "    out[i] = buf[n - 1 - i];\n"
    "}\n"
    "#endif\n";

enum { K_GRID, K_SUM10, K_ARGS, K_SHARED };
static const char* const k_launch_kernels[] = {
    "cmx_test_grid", "cmx_test_sum10", "cmx_test_args", "cmx_test_shared",
    NULL};

static bool one_variant(int v, cmx__gpu_variant* out) {
  snprintf(out->name, sizeof out->name, "test_launch_%d", v);
  snprintf(out->prelude, sizeof out->prelude, "#define CMX_TEST_VARIANT %d\n",
           v);
  return v == 0;
}

static const cmx__gpu_family g_launch = {
    .name = "test_launch",
    .source = k_launch_src,
    .kernels = k_launch_kernels,
    .nvariants = 1,
    .variant = one_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 128, 4}};

/* A block sum through CUB, with a libc++ trait checked at compile time. */
static const char k_cccl_src[] =
    "#include <cub/block/block_reduce.cuh>\n"
    "#include <cuda/std/type_traits>\n"
    "static_assert(cuda::std::is_integral<long long>::value, \"libcu++\");\n"
    "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_test_block_sum)\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "cmx_test_block_sum(const int* in, long long* out, int n) {\n"
    "  typedef cub::BlockReduce<long long, 256> R;\n"
    "  __shared__ typename R::TempStorage tmp;\n"
    "  long long i = (long long)blockIdx.x * 256 + threadIdx.x;\n"
    "  long long s = R(tmp).Sum(i < n ? (long long)in[i] : 0);\n"
    "  if (threadIdx.x == 0) out[blockIdx.x] = s;\n"
    "}\n"
    "#endif\n";
static const char* const k_cccl_kernels[] = {"cmx_test_block_sum", NULL};

GPU_TEST_FAMILY(g_cccl, "test_cccl", k_cccl_src, k_cccl_kernels,
                CMX__GPU_NEEDS_CCCL, CMX__GPU_CUSTOM, 256, 0);

/* ---------------- a primitive that runs a test's GPU code ---------------- */

/* The GPU work of one test: fills out from in (on device dev). */
typedef cmx_status (*gpu_work)(const cmx_array* in, int nin, cmx_array out,
                               int dev, void* ctx);
typedef struct {
  gpu_work work;
  void* ctx;
} work_params;

static cmx_status work_gpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)nout;
  const work_params* q = cmx_primitive_params(p);
  int dev = cmx_primitive_stream(p).device.index;
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st == CMX_OK) st = q->work(in, nin, out[0], dev, q->ctx);
  if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
  return st;
}

static const cmx_primitive_vtable k_work_vt = {
    .name = "TestWork", .id = -1, .eval_gpu = work_gpu};

/* A lazy array of shape/dtype made by work on the gpu from inputs. */
static cmx_array run_work(gpu_work work, void* ctx, const cmx_array* in,
                          int nin, const int64_t* shape, int ndim,
                          cmx_dtype dt) {
  work_params q;
  memset(&q, 0, sizeof q);
  q.work = work;
  q.ctx = ctx;
  cmx_primitive* p = cmx_primitive_new(&k_work_vt, &q, sizeof q, gpu());
  cmx_array out = NULL;
  const int64_t* shapes[1] = {shape};
  OK(cmx_primitive_apply(&out, 1, p, in, nin, shapes, &ndim, &dt));
  return out;
}

/* ---------------- without a device ---------------- */

static void test_registry(void) {
  CHECK(cmx__gpu_family_count() >= 2);
  CHECK(cmx__gpu_family_find("elementwise") == &cmx__gpu_family_elementwise);
  CHECK(cmx__gpu_family_find("convert") == &cmx__gpu_family_convert);
  CHECK(cmx__gpu_family_find("copy") == &cmx__gpu_family_copy);
  CHECK(cmx__gpu_family_find("no_such_family") == NULL);
  CHECK(cmx__gpu_family_nkernels(&cmx__gpu_family_elementwise) ==
        7 + CMX__GPU_NUM_STRIDED);
  CHECK(cmx__gpu_family_nkernels(&g_launch) == 4);
  /* Run-time families join the walk; names are unique. */
  CHECK(cmx__gpu_family_find("test_launch") == &g_launch);
  FAILS(cmx__gpu_family_register(&g_launch), CMX_ERR_VALUE,
        "kernel family 'test_launch' exists already");
  static const char* const none[] = {NULL};
  static const cmx__gpu_family bad = {.name = "test_bad",
                                      .source = "",
                                      .kernels = none,
                                      .nvariants = 1,
                                      .variant = one_variant};
  FAILS(cmx__gpu_family_register(&bad), CMX_ERR_VALUE,
        "a kernel family needs a name, one source");
  CHECK(cmx__gpu_family_find("test_bad") == NULL);
  bool found = false;
  for (int i = 0; i < cmx__gpu_family_count(); i++)
    found = found || cmx__gpu_family_at(i) == &g_cccl;
  CHECK(found && cmx__gpu_family_at(cmx__gpu_family_count()) == NULL);
  /* Variants: holes where a pair has no kernel (an op the table does not
   * hold, a dtype its row does not take); complex ones need CCCL. */
  cmx__gpu_variant var;
  CHECK(cmx__gpu_family_elementwise.variant(
            cmx__vt_Add.id * CMX_NUM_DTYPES + CMX_FLOAT32, &var) &&
        strstr(var.prelude, "#define CMX_EW_VARIANT \"Add float32\"") &&
        var.flags == 0);
  CHECK(cmx__gpu_family_elementwise.variant(
            cmx__vt_Exp.id * CMX_NUM_DTYPES + CMX_COMPLEX64, &var) &&
        (var.flags & CMX__GPU_NEEDS_CCCL));
  CHECK(!cmx__gpu_family_elementwise.variant(
      cmx__vt_Reshape.id * CMX_NUM_DTYPES + CMX_FLOAT32, &var));
  CHECK(!cmx__gpu_family_elementwise.variant(
      cmx__vt_Erf.id * CMX_NUM_DTYPES + CMX_INT32, &var));
  CHECK(cmx__gpu_family_convert.variant(
            CMX_FLOAT32 * CMX_NUM_DTYPES + CMX_FLOAT16, &var) &&
        strstr(var.prelude, "cmx_cvt_f16(f32, x)"));
  CHECK(cmx__gpu_family_copy.variant(cmx__gpu_copy_variant(8), &var) &&
        strcmp(var.name, "copy_8") == 0 && strstr(var.prelude, "cmx_u64"));
  /* One kernel's source: the prelude, CMX_ONLY_<kernel>, #line marks. */
  char* src = cmx__gpu_family_source(&g_launch, "#define X 1\n", K_ARGS);
  CHECK(src && strstr(src,
                      "#define X 1\n#define CMX_ONLY\n"
                      "#define CMX_ONLY_cmx_test_args\n"));
  CHECK(src && strstr(src, "#line 1 \"test_launch.cu\"") &&
        strstr(src, "#line 1 \"common.cu\""));
  free(src);
  /* Preamble sources go between the prelude and the family's own. */
  cmx__gpu_family pre = g_launch;
  pre.preamble = (const char* const[]){"copy", NULL};
  src = cmx__gpu_family_source(&pre, "#define X 2\n", -1);
  const char *px = src ? strstr(src, "#define X 2") : NULL,
             *pc = src ? strstr(src, "#line 1 \"copy.cu\"") : NULL,
             *pb = src ? strstr(src, "#line 1 \"test_launch.cu\"") : NULL;
  CHECK(px && pc && pb && px < pc && pc < pb &&
        !strstr(src, "#define CMX_ONLY"));
  free(src);
  pre.preamble = (const char* const[]){"no_such_source", NULL};
  CHECK(cmx__gpu_family_source(&pre, "", 0) == NULL);
  CHECK(strstr(cmx_last_error(), "no kernel source named 'no_such_source'"));
  /* Strided kernels: g1, g2, g3, then g0 (any rank), 32- then 64-bit. */
  cmx__gpu_layout l = {.ndim = 2};
  const char* const* bk = cmx__gpu_family_elementwise.kernels;
  CHECK(!strcmp(bk[7 + cmx__gpu_strided_kernel(&l, true)], "cmx_ew_g2_32"));
  l.ndim = 5;
  CHECK(!strcmp(bk[7 + cmx__gpu_strided_kernel(&l, false)], "cmx_ew_g0_64"));
  l.ndim = 0;
  CHECK(!strcmp(bk[7 + cmx__gpu_strided_kernel(&l, true)], "cmx_ew_g0_32"));
  /* Layouts of any number of operands: the broadcast operand keeps its
   * dims apart, the others merge when it is dropped. */
  int64_t shape[3] = {4, 1, 6}, c[3] = {6, 6, 1}, bst[3] = {0, 0, 1};
  cmx__gpu_layout_from(&l, shape, 3, (const int64_t* const[]){c, c, bst, c}, 4);
  CHECK(l.narr == 4 && l.ndim == 2 && l.shape[0] == 4 && l.shape[1] == 6);
  CHECK(l.strides[2][0] == 0 && l.strides[2][1] == 1 && l.strides[3][0] == 6);
  cmx__gpu_layout_from(&l, shape, 3, (const int64_t* const[]){c, c, c}, 3);
  CHECK(l.ndim == 1 && l.shape[0] == 24 && cmx__gpu_layout_fits_i32(&l, 24));
  l.strides[1][0] = (int64_t)1 << 30;
  CHECK(!cmx__gpu_layout_fits_i32(&l, 24));
}

static void test_args(void) {
  /* Each value at its own alignment, in order. */
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  char c = 7;
  double d = 2.5;
  short s = -3;
  int i = 9;
  CMX__GPU_ARG(&a, c);
  CMX__GPU_ARG(&a, d);
  CMX__GPU_ARG(&a, s);
  CMX__GPU_ARG(&a, i);
  CHECK(a.n == 4 && !a.overflow);
  CHECK(a.offset[0] == 0 && a.offset[1] == 8 && a.offset[2] == 16 &&
        a.offset[3] == 20 && a.used == 24);
  CHECK(a.size[1] == 8 && memcmp(a.data + 8, &d, 8) == 0);
  /* A layout of n operands is 8 + 256 + n * 256 bytes. */
  cmx__gpu_layout l = {.ndim = 1, .narr = 3};
  cmx__gpu_args_layout(&a, &l);
  CHECK(a.n == 5 && a.size[4] == 8 + 256 + 3 * 256 && a.offset[4] == 24);
  /* Past the limits: flagged, so that launching fails. */
  for (int k = 0; k < CMX__GPU_MAX_ARGS; k++) CMX__GPU_ARG(&a, i);
  CHECK(a.overflow && a.n == CMX__GPU_MAX_ARGS);
  cmx__gpu_args_init(&a);
  l.narr = CMX__GPU_MAX_OPERANDS;
  cmx__gpu_args_layout(&a, &l);
  cmx__gpu_args_layout(&a, &l);
  CHECK(a.overflow && a.n == 1);
}

/* A folder that looks like a CCCL install of version `version`. */
static void fake_cccl(const char* dir, long version) {
  char p[600];
  snprintf(p, sizeof p, "mkdir -p %s/cub %s/cuda/std/__cccl", dir, dir);
  CHECK(system(p) == 0);
  snprintf(p, sizeof p, "%s/cub/cub.cuh", dir);
  FILE* f = fopen(p, "w");
  if (f) fclose(f);
  snprintf(p, sizeof p, "%s/cuda/std/__cccl/version.h", dir);
  f = fopen(p, "w");
  if (f) {
    fprintf(f, "#pragma once\n#define CCCL_VERSION %ld\n", version);
    fclose(f);
  }
}

static void test_cccl_headers(void) {
  char dir[4096], why[1024];
  long version = 0;
  bool have = cmx__toolkit_cccl(dir, sizeof dir, &version, why, sizeof why);
  if (have)
    printf("cccl: %s, version %ld\n", dir, version);
  else
    printf("cccl: not found (%s)\n", why);
  const char* opts[8];
  char buf[4400];
  /* Missing headers: a clear error naming the family and where it looked. */
  cmx__toolkit_cccl_override("");
  CHECK(!cmx__toolkit_cccl(dir, sizeof dir, &version, why, sizeof why));
  CHECK(cmx__gpu_family_options(&g_cccl, NULL, opts, 8, buf, sizeof buf) == -1);
  CHECK(strstr(cmx_last_error(),
               "[gpu] kernel family 'test_cccl' needs the CUDA toolkit's "
               "CCCL headers (CUB, libcu++), which were not found: looked "
               "in '' only"));
  CHECK(cmx__gpu_family_options(&g_launch, NULL, opts, 8, buf, sizeof buf) ==
        0);
  /* A variant may need them where its family does not. */
  cmx__gpu_variant complex_var = {.flags = CMX__GPU_NEEDS_CCCL};
  CHECK(cmx__gpu_family_options(&g_launch, &complex_var, opts, 8, buf,
                                sizeof buf) == -1);
  CHECK(strstr(cmx_last_error(), "kernel family 'test_launch' needs"));
  /* Another install: its folder and version are options, hence in the
   * disk cache's key. */
  char fake[400];
  snprintf(fake, sizeof fake, "%s/cccl-fake", g_tmp);
  fake_cccl(fake, 1234567);
  cmx__toolkit_cccl_override(fake);
  CHECK(cmx__gpu_family_options(&g_cccl, NULL, opts, 8, buf, sizeof buf) == 2);
  char want[500];
  snprintf(want, sizeof want, "-I%s", fake);
  CHECK(!strcmp(opts[0], want) &&
        !strcmp(opts[1], "-DCMX_CCCL_VERSION=1234567"));
  CHECK(cmx__gpu_family_options(&g_launch, &complex_var, opts, 8, buf,
                                sizeof buf) == 2 &&
        !strcmp(opts[0], want));
  CHECK(cmx__gpu_family_options(&g_cccl, NULL, opts, 8, buf, sizeof buf) == 2);
  if (g_nvrtc) {
    const char* src = "extern \"C\" __global__ void k(int* x) { x[0] = 1; }\n";
    cmx__gpu_image img;
    int origin = -1;
    cmx__gpu_cache_stats s0 = cmx__gpu_cache_stats_get();
    OK(cmx__gpu_image_get("cccl_key", src, g_arch, opts, 2, &img, &origin));
    CHECK(origin == CMX__IMAGE_COMPILED);
    cmx__gpu_image_free(&img);
    fake_cccl(fake, 1234568); /* the same folder, newer headers */
    cmx__toolkit_cccl_override(fake);
    CHECK(cmx__gpu_family_options(&g_cccl, NULL, opts, 8, buf, sizeof buf) ==
          2);
    CHECK(!strcmp(opts[1], "-DCMX_CCCL_VERSION=1234568"));
    OK(cmx__gpu_image_get("cccl_key", src, g_arch, opts, 2, &img, &origin));
    CHECK(origin == CMX__IMAGE_COMPILED);
    cmx__gpu_image_free(&img);
    OK(cmx__gpu_image_get("cccl_key", src, g_arch, opts, 2, &img, &origin));
    CHECK(origin == CMX__IMAGE_DISK);
    cmx__gpu_image_free(&img);
    cmx__gpu_cache_stats s1 = cmx__gpu_cache_stats_get();
    CHECK(s1.compiles == s0.compiles + 2 &&
          s1.disk_writes == s0.disk_writes + 2);
  }
  cmx__toolkit_cccl_override(NULL);
  CHECK(cmx__toolkit_cccl(dir, sizeof dir, &version, why, sizeof why) == have);
  if (!g_nvrtc) return;
  CHECK_MSG(have || !gpu_test_required(), "CCCL headers are needed: %s", why);
  if (!have) return;
  /* The real headers: the CUB family compiles (PTX, and to a CUBIN). */
  CHECK(version > 0);
  int n = cmx__gpu_family_options(&g_cccl, NULL, opts, 8, buf, sizeof buf);
  CHECK(n == 2);
  cmx__gpu_variant var;
  CHECK(g_cccl.variant(0, &var));
  char* src = cmx__gpu_family_source(&g_cccl, var.prelude, 0);
  for (int cubin = 0; cubin < 2 && src && n == 2; cubin++) {
    cmx__gpu_image img;
    OK(cmx__nvrtc_compile("test_cccl", src, g_arch, opts, n, !cubin, &img));
    CHECK(img.size > 0 &&
          (img.ptx ? strstr(img.data, ".entry cmx_test_block_sum(") != NULL
                   : memcmp(img.data, "\177ELF", 4) == 0));
    cmx__gpu_image_free(&img);
  }
  free(src);
  /* Without the include folder NVRTC cannot find CUB. */
  src = cmx__gpu_family_source(&g_cccl, var.prelude, 0);
  cmx__gpu_image img;
  FAILS(cmx__nvrtc_compile("test_cccl", src, g_arch, NULL, 0, true, &img),
        CMX_ERR_RUNTIME, "cub/block/block_reduce.cuh");
  free(src);
}

static void test_cublaslt_loader(void) {
  char why[768];
  CHECK(
      !cmx__cublaslt_probe("/nonexistent/libcublasLt.so.13", why, sizeof why));
  CHECK(strstr(why, "/nonexistent/libcublasLt.so.13 could not be loaded: "));
  CHECK(!cmx__cublaslt_probe("libm.so.6", why, sizeof why));
  CHECK(strstr(why, "libm.so.6 lacks cublasLtCreate"));
  const char* reason = NULL;
  bool ok = cmx__cublaslt_available(&reason);
  printf("cublasLt: %s (version %zu)\n", ok ? "loaded" : reason,
         cmx__cublaslt_version());
  CHECK(ok ? reason[0] == 0 && cmx__cublaslt_version() > 0
           : strstr(reason, "libcublasLt.so.13/.12/.11 was not found") != NULL);
  CHECK_MSG(ok || !gpu_test_required(), "cuBLASLt is needed: %s", reason);
}

/* ---------------- with a GPU (or the fake driver) ---------------- */

typedef struct {
  int kernel;
  cmx__gpu_cfg cfg;
  int marker, n;
  bool use_shape; /* cmx__gpu_cfg_for the family's shape instead of cfg */
} launch_ctx;

static cmx_status launch_work(const cmx_array* in, int nin, cmx_array out,
                              int dev, void* ctx) {
  launch_ctx* c = ctx;
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &g_launch, 0, c->kernel);
  if (!k) return cmx_last_status();
  CUdeviceptr po, pi[10];
  cmx_status st = cmx__gpu_ptr(out, dev, &po);
  for (int i = 0; i < nin && st == CMX_OK; i++)
    st = cmx__gpu_ptr(in[i], dev, &pi[i]);
  if (st != CMX_OK) return st;
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  CMX__GPU_ARG(&a, po);
  long long n = c->n;
  if (c->kernel == K_GRID) {
    CMX__GPU_ARG(&a, c->marker);
  } else if (c->kernel == K_SUM10) {
    for (int i = 0; i < nin; i++) CMX__GPU_ARG(&a, pi[i]);
    CMX__GPU_ARG(&a, n);
  } else if (c->kernel == K_ARGS) {
    signed char ch = -5;
    short sh = -300;
    int i = 123456;
    long long l = ((long long)1 << 40) + 3;
    float f = 2.5f;
    double d = -1.25e100;
    unsigned char u = 200;
    CMX__GPU_ARG(&a, ch);
    CMX__GPU_ARG(&a, sh);
    CMX__GPU_ARG(&a, i);
    CMX__GPU_ARG(&a, l);
    CMX__GPU_ARG(&a, f);
    CMX__GPU_ARG(&a, d);
    CMX__GPU_ARG(&a, u);
  } else { /* K_SHARED: out is arg 1, the input arg 0 */
    cmx__gpu_args_init(&a);
    CMX__GPU_ARG(&a, pi[0]);
    CMX__GPU_ARG(&a, po);
    CMX__GPU_ARG(&a, c->n);
  }
  cmx__gpu_cfg cfg = c->use_shape ? cmx__gpu_cfg_for(k, n) : c->cfg;
  return cmx__gpu_launch("TestWork", k, &cfg, &a);
}

static void test_launch_shapes(void) {
  /* A 3-d grid of 3-d blocks: every thread writes its own cell. */
  launch_ctx c = {
      .kernel = K_GRID, .cfg = {{3, 2, 2}, {4, 3, 2}, 0}, .marker = 77};
  int64_t n = 12 * 24;
  cmx_array o = run_work(launch_work, &c, NULL, 0, &n, 1, CMX_INT32);
  int32_t* got = malloc(n * 4);
  OK(cmx_array_copy_to(o, got, n * 4));
  int bad = 0;
  for (int64_t i = 0; i < n; i++)
    bad += got[i] != 77 + (i / 24) * 1000 + i % 24;
  CHECK(bad == 0);
  cmx_array_release(o);
  /* Mixed argument sizes and alignments. */
  c = (launch_ctx){.kernel = K_ARGS, .cfg = {{1, 1, 1}, {1, 1, 1}, 0}};
  n = 7;
  o = run_work(launch_work, &c, NULL, 0, &n, 1, CMX_FLOAT64);
  double d[7];
  OK(cmx_array_copy_to(o, d, sizeof d));
  CHECK(d[0] == -5 && d[1] == -300 && d[2] == 123456 &&
        d[3] == (double)(((long long)1 << 40) + 3) && d[4] == 2.5 &&
        d[5] == -1.25e100 && d[6] == 200);
  cmx_array_release(o);
  /* Invalid configurations fail with what they broke, naming the op; the
   * next launch works. */
  c = (launch_ctx){.kernel = K_GRID, .cfg = {{1, 1, 1}, {2048, 1, 1}, 0}};
  n = 2048;
  o = run_work(launch_work, &c, NULL, 0, &n, 1, CMX_INT32);
  FAILS(cmx_array_eval(o), CMX_ERR_RUNTIME,
        "[TestWork] gpu kernel cmx_test_grid launched with 2048 threads per "
        "block; it allows at most");
  cmx_array_release(o);
  c.cfg = (cmx__gpu_cfg){{1, 70000, 1}, {1, 1, 1}, 0};
  n = 70000;
  o = run_work(launch_work, &c, NULL, 0, &n, 1, CMX_INT32);
  FAILS(cmx_array_eval(o), CMX_ERR_RUNTIME,
        "[TestWork] invalid launch of gpu kernel cmx_test_grid: grid (1, "
        "70000, 1)");
  cmx_array_release(o);
  /* The family shapes' configurations. */
  cmx__gpu_device* dev = cmx__gpu_device_get(0);
  /* kernel_get outside a task is fine (compiles, loads). */
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(0, &g_launch, 0, K_GRID);
  CHECK(k && k->family == &g_launch && !strcmp(k->name, "cmx_test_grid") &&
        k->max_threads >= 256);
  CHECK(cmx__gpu_kernel_get(0, &g_launch, 0, K_GRID) == k);
  CHECK(cmx__gpu_kernel_get(0, &g_launch, 1, K_GRID) == NULL);
  CHECK(
      strstr(cmx_last_error(), "kernel family 'test_launch' has no variant 1"));
  CHECK(cmx__gpu_kernel_get(0, &g_launch, 0, 4) == NULL);
  CHECK(
      strstr(cmx_last_error(), "kernel family 'test_launch' has no kernel 4"));
  if (k && dev) {
    cmx__gpu_cfg g = cmx__gpu_cfg_for(k, (int64_t)1 << 40);
    CHECK(g.grid[0] == (unsigned)dev->sm_count * 4 && g.block[0] == 128 &&
          g.grid[1] == 1 && g.block[1] == 1 && g.shared == 0);
    g = cmx__gpu_cfg_for(k, 0);
    CHECK(g.grid[0] == 1);
    cmx__gpu_family per_item = g_launch;
    per_item.shape = (cmx__gpu_shape){CMX__GPU_ONE_PER_ITEM, 0, 0};
    cmx__gpu_kernel k2 = {.family = &per_item, .dev = 0};
    g = cmx__gpu_cfg_for(&k2, 1000000);
    CHECK(g.grid[0] == 3907 && g.block[0] == 256);
    /* one-shot: the grid covers the work uncapped */
    g = cmx__gpu_cfg_one_shot(k, (int64_t)1 << 30);
    CHECK(g.grid[0] == (1u << 23) && g.block[0] == 128);
    g = cmx__gpu_cfg_one_shot(k, 1000000);
    CHECK(g.grid[0] == 7813 && g.block[0] == 128);
  }
  /* Outside a GPU task nothing can be encoded. */
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  cmx__gpu_cfg cfg = {{1, 1, 1}, {1, 1, 1}, 0};
  if (k)
    FAILS(cmx__gpu_launch("Outside", k, &cfg, &a), CMX_ERR_RUNTIME,
          "[Outside] gpu work can only be issued by a task of a gpu stream");
  free(got);
}

static void test_many_operands(void) {
  /* Ten inputs and an output: eleven pointers and a count. */
  int64_t n = 1000;
  cmx_array in[10];
  float* x[10];
  for (int k = 0; k < 10; k++) {
    x[k] = malloc(n * 4);
    for (int64_t i = 0; i < n; i++)
      x[k][i] = (float)((int)(rnd() % 2001) - 1000);
    in[k] = arr(x[k], &n, 1, CMX_FLOAT32);
  }
  launch_ctx c = {.kernel = K_SUM10, .n = (int)n, .use_shape = true};
  cmx_array o = run_work(launch_work, &c, in, 10, &n, 1, CMX_FLOAT32);
  float* want = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) {
    float acc = 0; /* integers below 2^24: exact in any order */
    for (int k = 0; k < 10; k++) acc += (float)(k + 1) * x[k][i];
    want[i] = acc;
  }
  CHECK(equal_f32(o, want, n));
  cmx_array_release(o);
  for (int k = 0; k < 10; k++) {
    cmx_array_release(in[k]);
    free(x[k]);
  }
  free(want);
}

static void test_shared_memory(void) {
  cmx__gpu_device* d = cmx__gpu_device_get(0);
  if (!d) return;
  /* More than 48 KB of dynamic shared memory: the kernel is opted in. */
  int64_t n = 20000; /* 80000 bytes */
  CHECK(d->shared_optin >= n * 4);
  float* x = rnd_floats(n);
  float* want = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) want[i] = x[n - 1 - i];
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32);
  launch_ctx c = {.kernel = K_SHARED,
                  .n = (int)n,
                  .cfg = {{1, 1, 1}, {256, 1, 1}, (size_t)n * 4}};
  cmx_array o = run_work(launch_work, &c, &a, 1, &n, 1, CMX_FLOAT32);
  CHECK(equal_f32(o, want, n));
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(0, &g_launch, 0, K_SHARED);
  CHECK(k && atomic_load(&k->dynamic_shared) >= n * 4);
  cmx_array_release(o);
  /* Past the device's limit: refused, naming the sizes. */
  int64_t m = d->shared_optin / 4 + 1;
  float* y = calloc((size_t)m, 4);
  cmx_array b = arr(y, &m, 1, CMX_FLOAT32);
  c.n = (int)m;
  c.cfg.shared = (size_t)m * 4;
  o = run_work(launch_work, &c, &b, 1, &m, 1, CMX_FLOAT32);
  char want_msg[400];
  snprintf(want_msg, sizeof want_msg,
           "[TestWork] gpu kernel cmx_test_shared asks for %lld bytes of "
           "shared memory per block; %s allows",
           (long long)m * 4, d->name);
  FAILS(cmx_array_eval(o), CMX_ERR_RUNTIME, want_msg);
  cmx_array_release_all((cmx_array[]){a, b, o}, 3);
  free(x);
  free(y);
  free(want);
}

/* Fills an int32 output of 1000: memsets of 4-, 2- and 1-byte elements,
 * then a device-to-device copy of in[0]'s first 100 bytes to byte 400. */
static cmx_status fill_work(const cmx_array* in, int nin, cmx_array out,
                            int dev, void* ctx) {
  (void)nin;
  (void)ctx;
  CUdeviceptr po, pi;
  cmx_status st = cmx__gpu_ptr(out, dev, &po);
  if (st == CMX_OK) st = cmx__gpu_ptr(in[0], dev, &pi);
  if (st == CMX_OK) st = cmx__gpu_memset("Fill", po, 0x01020304u, 4, 1000);
  if (st == CMX_OK) st = cmx__gpu_memset("Fill", po + 3000, 0xBEEF, 2, 6);
  if (st == CMX_OK) st = cmx__gpu_memset("Fill", po + 3990, 0xAB, 1, 10);
  if (st == CMX_OK) st = cmx__gpu_copy_d2d("Fill", po + 400, pi, 100);
  if (st == CMX_OK) st = cmx__gpu_memset("Fill", po, 0, 1, 0); /* nothing */
  return st;
}

static void want_fill(const uint8_t* src, uint8_t* w) {
  for (int i = 0; i < 1000; i++) {
    uint32_t v = 0x01020304u;
    memcpy(w + 4 * i, &v, 4);
  }
  for (int i = 0; i < 6; i++) {
    uint16_t v = 0xBEEF;
    memcpy(w + 3000 + 2 * i, &v, 2);
  }
  memset(w + 3990, 0xAB, 10);
  memcpy(w + 400, src, 100);
}

static void test_memset_copy(void) {
  int64_t n = 1000;
  uint8_t src[400], want[4000], got[4000];
  for (int i = 0; i < 400; i++) src[i] = (uint8_t)(rnd() >> 7);
  cmx_array a = arr(src, (int64_t[]){100}, 1, CMX_INT32);
  cmx__gpu_encoder_stats s0 = cmx__gpu_encoder_stats_get();
  cmx_array o = run_work(fill_work, NULL, &a, 1, &n, 1, CMX_INT32);
  OK(cmx_array_copy_to(o, got, sizeof got));
  want_fill(src, want);
  CHECK(memcmp(got, want, sizeof got) == 0);
  cmx__gpu_encoder_stats s1 = cmx__gpu_encoder_stats_get();
  CHECK(s1.memsets == s0.memsets + 3 && s1.copies == s0.copies + 1);
  cmx_array_release_all((cmx_array[]){a, o}, 2);
}

/* A recorder that keeps every command (with a copy of its arguments) and
 * lets none through. */
typedef struct {
  int n;
  cmx__gpu_cmd cmd[16];
  cmx__gpu_args args[16];
  int dev[16];
  CUstream s[16];
} keep_all;

static cmx_status keep(void* ctx, int dev, CUstream s, const cmx__gpu_cmd* cmd,
                       bool* issue) {
  keep_all* r = ctx;
  if (r->n == 16) return cmx__error(CMX_ERR_RUNTIME, "[test] recorder full");
  int i = r->n++;
  r->cmd[i] = *cmd;
  if (cmd->args) {
    r->args[i] = *cmd->args;
    r->cmd[i].args = &r->args[i];
  }
  r->dev[i] = dev;
  r->s[i] = s;
  *issue = false;
  return CMX_OK;
}

static void replay(keep_all* r) {
  for (int i = 0; i < r->n; i++)
    OK(cmx__gpu_cmd_issue(r->dev[i], r->s[i], &r->cmd[i]));
  for (int i = 0; i < r->n; i++) {
    OK(cmx__gpu_ctx_enter(r->dev[i]));
    CHECK(cmx__cu.cuStreamSynchronize(r->s[i]) == CUDA_SUCCESS);
  }
}

static void test_recorder(void) {
  /* An Add's one launch, taken over by the recorder: the output stays
   * unwritten until the replay. */
  int64_t n = 1000;
  float *x = rnd_floats(n), *y = rnd_floats(n), *want = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) want[i] = x[i] + y[i];
  cmx_array a = arr(x, &n, 1, CMX_FLOAT32), b = arr(y, &n, 1, CMX_FLOAT32);
  cmx_array c = NULL;
  static keep_all r;
  memset(&r, 0, sizeof r);
  cmx__gpu_recorder rec = {keep, &r};
  cmx__gpu_encoder_stats s0 = cmx__gpu_encoder_stats_get();
  CHECK(cmx__gpu_recorder_set(&rec) == NULL);
  OK(cmx_add(&c, a, b, gpu()));
  OK(cmx_array_eval(c));
  CHECK(cmx__gpu_recorder_set(NULL) == &rec);
  cmx__gpu_encoder_stats s1 = cmx__gpu_encoder_stats_get();
  CHECK(s1.recorded == s0.recorded + 1 && s1.launches == s0.launches);
  CHECK(r.n == 1 && r.cmd[0].kind == CMX__GPU_CMD_LAUNCH &&
        !strcmp(r.cmd[0].op, "Add") &&
        !strcmp(r.cmd[0].kernel->name, "cmx_ew_c0") && r.cmd[0].args->n == 6 &&
        r.cmd[0].cfg.block[0] == 256 && r.cmd[0].cfg.grid[0] >= 1);
  replay(&r);
  CHECK(equal_f32(c, want, n));
  CHECK(cmx__gpu_encoder_stats_get().launches == s1.launches + 1);
  /* An eval of two dependent adds: two launches in order, the second
   * reading the first's output (c2 is held, so its buffer outlives the
   * replay). */
  memset(&r, 0, sizeof r);
  cmx_array c2 = NULL, d2 = NULL;
  OK(cmx_add(&c2, a, b, gpu()));
  OK(cmx_add(&d2, c2, a, gpu()));
  cmx__gpu_recorder_set(&rec);
  OK(cmx_eval((cmx_array[]){d2, c2}, 2));
  cmx__gpu_recorder_set(NULL);
  CUdeviceptr out0 = 0, in1 = 0;
  if (r.n == 2) {
    /* arguments: the three input slots, then the output */
    memcpy(&out0, r.args[0].data + r.args[0].offset[3], 8);
    memcpy(&in1, r.args[1].data + r.args[1].offset[0], 8);
  }
  CHECK(r.n == 2 && out0 != 0 && out0 == in1);
  replay(&r);
  for (int64_t i = 0; i < n; i++) want[i] = (x[i] + y[i]) + x[i];
  CHECK(equal_f32(d2, want, n));
  cmx_array_release_all((cmx_array[]){c2, d2}, 2);
  /* Memsets and copies are commands too, in order. */
  memset(&r, 0, sizeof r);
  uint8_t src[400], bytes[4000], got[4000];
  for (int i = 0; i < 400; i++) src[i] = (uint8_t)(rnd() >> 9);
  cmx_array s = arr(src, (int64_t[]){100}, 1, CMX_INT32);
  cmx__gpu_recorder_set(&rec);
  cmx_array o = run_work(fill_work, NULL, &s, 1, &n, 1, CMX_INT32);
  OK(cmx_array_eval(o));
  cmx__gpu_recorder_set(NULL);
  CHECK(r.n == 4 && r.cmd[0].kind == CMX__GPU_CMD_MEMSET &&
        r.cmd[0].elem == 4 && r.cmd[1].elem == 2 && r.cmd[2].elem == 1 &&
        r.cmd[3].kind == CMX__GPU_CMD_COPY && r.cmd[3].count == 100 &&
        !strcmp(r.cmd[3].op, "Fill"));
  replay(&r);
  OK(cmx_array_copy_to(o, got, sizeof got));
  want_fill(src, bytes);
  CHECK(memcmp(got, bytes, sizeof got) == 0);
  /* A recorder's error fails the task, naming the op's problem. */
  memset(&r, 0, sizeof r);
  r.n = 16;
  cmx_array e = NULL;
  cmx__gpu_recorder_set(&rec);
  OK(cmx_add(&e, a, b, gpu()));
  FAILS(cmx_array_eval(e), CMX_ERR_RUNTIME, "[test] recorder full");
  cmx__gpu_recorder_set(NULL);
  cmx_array_release_all((cmx_array[]){a, b, c, s, o, e}, 6);
  free(x);
  free(y);
  free(want);
}

static cmx_status block_sum_work(const cmx_array* in, int nin, cmx_array out,
                                 int dev, void* ctx) {
  (void)nin;
  (void)ctx;
  const cmx__gpu_kernel* k = cmx__gpu_kernel_get(dev, &g_cccl, 0, 0);
  if (!k) return cmx_last_status();
  CUdeviceptr pi, po;
  cmx_status st = cmx__gpu_ptr(in[0], dev, &pi);
  if (st == CMX_OK) st = cmx__gpu_ptr(out, dev, &po);
  if (st != CMX_OK) return st;
  int n = (int)cmx_array_size(in[0]);
  cmx__gpu_args a;
  cmx__gpu_args_init(&a);
  CMX__GPU_ARG(&a, pi);
  CMX__GPU_ARG(&a, po);
  CMX__GPU_ARG(&a, n);
  cmx__gpu_cfg cfg = {{(unsigned)cmx_array_size(out), 1, 1}, {256, 1, 1}, 0};
  return cmx__gpu_launch("BlockSum", k, &cfg, &a);
}

static void test_cccl_kernel(void) {
  if (!cmx__toolkit_cccl(NULL, 0, NULL, NULL, 0)) {
    CHECK_MSG(!gpu_test_required(), "CCCL headers missing on the gpu machine");
    printf("cccl: headers missing, CUB kernel not run\n");
    return;
  }
  int64_t n = 100003, nb = (n + 255) / 256;
  int32_t* x = malloc(n * 4);
  for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(rnd() >> 40) - (1 << 23);
  cmx_array a = arr(x, &n, 1, CMX_INT32);
  cmx_array o = run_work(block_sum_work, NULL, &a, 1, &nb, 1, CMX_INT64);
  int64_t* got = malloc(nb * 8);
  OK(cmx_array_copy_to(o, got, nb * 8));
  int bad = 0;
  for (int64_t b = 0; b < nb; b++) {
    int64_t s = 0;
    for (int64_t i = b * 256; i < n && i < (b + 1) * 256; i++) s += x[i];
    bad += got[b] != s;
  }
  CHECK(bad == 0);
  cmx_array_release_all((cmx_array[]){a, o}, 2);
  free(x);
  free(got);
}

static void test_cublaslt(void) {
  const char* why;
  if (!cmx__cublaslt_available(&why)) {
    CHECK_MSG(!gpu_test_required(), "cuBLASLt is needed: %s", why);
    return;
  }
  cublasLtHandle_t h = NULL, h2 = NULL;
  OK(cmx__cublaslt_handle(0, "matmul", &h));
  OK(cmx__cublaslt_handle(0, "matmul", &h2));
  CHECK(h != NULL && h == h2);
  FAILS(cmx__cublaslt_handle(99, "matmul", &h2), CMX_ERR_VALUE,
        "gpu:99 does not exist");
  /* A handle of one's own, and a descriptor, made and destroyed. */
  OK(cmx__gpu_ctx_enter(0));
  cublasLtHandle_t mine = NULL;
  CHECK(cmx__lt.cublasLtCreate(&mine) == CUBLAS_STATUS_SUCCESS && mine);
  cublasLtMatmulDesc_t desc = NULL;
  /* CUBLAS_COMPUTE_32F = 68, CUDA_R_32F = 0 */
  CHECK(cmx__lt.cublasLtMatmulDescCreate(&desc, 68, 0) ==
        CUBLAS_STATUS_SUCCESS);
  CHECK(cmx__lt.cublasLtMatmulDescDestroy(desc) == CUBLAS_STATUS_SUCCESS);
  CHECK(cmx__lt.cublasLtDestroy(mine) == CUBLAS_STATUS_SUCCESS);
  printf("cublasLt %zu: handle on gpu:0 made and destroyed\n",
         cmx__cublaslt_version());
}

int main(void) {
  if (!gpu_test_begin("test-gpu-layer")) return 1;
  OK(cmx__gpu_family_register(&g_launch));
  OK(cmx__gpu_family_register(&g_cccl));
  CASE(test_registry);
  CASE(test_args);
  CASE(test_cccl_headers);
  CASE(test_cublaslt_loader);
  if (g_gpu && g_nvrtc) {
    CASE(test_launch_shapes);
    CASE(test_many_operands);
    CASE(test_shared_memory);
    CASE(test_memset_copy);
    CASE(test_recorder);
    CASE(test_cccl_kernel);
    CASE(test_cublaslt);
  } else {
    printf("gpu: unavailable, GPU cases not run (%s)\n",
           g_gpu ? "no NVRTC" : cmx__gpu_unavailable_reason());
    CHECK_MSG(!gpu_test_required(), "CMX_TEST_REQUIRE_GPU: no GPU or NVRTC");
  }
  gpu_test_end();
  return test_summary("test_gpu_layer");
}
