/* Every case on every device: the device loop of the op harness and the
 * transform checker (devices.h, harness.h, tcheck.h).
 *
 * Three extension primitives, identities on the CPU, make each outcome of
 * a GPU case happen on purpose: CpuOnly has no GPU kernel (counted as "no
 * gpu kernel", from the coverage table), Partial's GPU kernel refuses with
 * CMX_ERR_NOT_IMPLEMENTED (counted as "not implemented on the gpu"), and
 * Wrong's GPU kernel writes zeros (a failure the harness must see). Add
 * runs on every device and must agree with the CPU bit for bit.
 *
 * On a machine with no GPU the cases run on the CPU alone and nothing is
 * counted; test_devices_fake_driver runs this file on the fake driver
 * (tests/c/fake_cuda), where the GPU pass happens.
 */
#include <fcntl.h>
#include <unistd.h>

#include "backend/cuda/gpu.h"
#include "harness.h"
#include "tcheck.h"

static bool g_gpu;

/* ---------------- three identities ---------------- */

static cmx_status copy_cpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)p;
  (void)nin;
  (void)nout;
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  /* Inputs here are row-major (h_array's contiguous layout, or made so). */
  memcpy(cmx_kernel_data(out[0]), cmx_kernel_data(in[0]),
         (size_t)cmx_array_nbytes(in[0]));
  return CMX_OK;
}

static cmx_status partial_gpu(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout) {
  (void)p;
  (void)nin;
  (void)out;
  (void)nout;
  return cmx_kernel_error(CMX_ERR_NOT_IMPLEMENTED,
                          "[Partial] has no gpu kernel for dtype %s",
                          cmx_dtype_name(cmx_array_dtype(in[0])));
}

static cmx_status zeros_gpu(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)in;
  (void)nin;
  (void)nout;
  int dev = cmx_primitive_stream(p).device.index;
  CUdeviceptr po;
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st == CMX_OK) st = cmx__gpu_ptr(out[0], dev, &po);
  if (st == CMX_OK)
    st = cmx__gpu_memset("Wrong", po, 0, 1, cmx_array_nbytes(out[0]));
  if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
  return st;
}

static const cmx_primitive_vtable k_cpu_only = {.name = "CpuOnly",
                                                .flags = CMX_PRIM_ELEMENTWISE,
                                                .id = -1,
                                                .eval_cpu = copy_cpu};
static const cmx_primitive_vtable k_partial = {
    .name = "Partial", .id = -1, .eval_cpu = copy_cpu, .eval_gpu = partial_gpu};
static const cmx_primitive_vtable k_wrong = {
    .name = "Wrong", .id = -1, .eval_cpu = copy_cpu, .eval_gpu = zeros_gpu};

static cmx_status apply(const cmx_primitive_vtable* vt, cmx_array* out,
                        cmx_array a, cmx_stream s) {
  cmx_array c = NULL;
  cmx_status st = cmx_contiguous(&c, a, false, s);
  if (st != CMX_OK) return st;
  char unused = 0;
  cmx_primitive* p = cmx_primitive_new(vt, &unused, 1, s);
  int nd = cmx_array_ndim(a);
  cmx_dtype dt = cmx_array_dtype(a);
  const int64_t* shapes[1] = {cmx_array_shape(a)};
  st = p ? cmx_primitive_apply(out, 1, p, &c, 1, shapes, &nd, &dt)
         : cmx_last_status();
  cmx_array_release(c);
  return st;
}
static cmx_status cpu_only(cmx_array* o, cmx_array a, cmx_stream s) {
  return apply(&k_cpu_only, o, a, s);
}
static cmx_status partial(cmx_array* o, cmx_array a, cmx_stream s) {
  return apply(&k_partial, o, a, s);
}
static cmx_status wrong(cmx_array* o, cmx_array a, cmx_stream s) {
  return apply(&k_wrong, o, a, s);
}

static void ref_id(double re, double im, double* o, double* oi) {
  *o = re, *oi = im;
}
static void ref_add(double ar, double ai, double br, double bi, double* o,
                    double* oi) {
  *o = ar + br, *oi = ai + bi;
}

static cmx_status cpu_only_fn(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  (void)ctx;
  (void)n;
  *nout = 1;
  return cpu_only(&outs[0], in[0], CMX_STREAM_DEFAULT);
}

static const cmx_dtype SOME[] = {CMX_FLOAT32, CMX_INT32, CMX_NUM_DTYPES};

/* Cases h_check_unary makes for dtypes (shapes times layouts). */
static int unary_cases(const cmx_dtype* dtypes) {
  int n = 0;
  for (int si = 0; si < H_NUM_SHAPES; si++)
    n += 1 + (h_shapes[si].ndim >= 2) + (h_shapes[si].ndim >= 1);
  int nd = 0;
  while (dtypes[nd] != CMX_NUM_DTYPES) nd++;
  return n * nd;
}

/* ---------------- cases ---------------- */

static void test_device_list(void) {
  CHECK(h_ndevices() == 1 + (g_gpu ? cmx_device_count(CMX_GPU) : 0));
  CHECK(h_device(0).type == CMX_CPU);
  char name[32];
  CHECK(!strcmp(h_device_name(0, name, sizeof name), "cpu:0"));
  if (g_gpu) {
    CHECK(h_device(1).type == CMX_GPU && h_device(1).index == 0);
    CHECK(!strcmp(h_device_name(1, name, sizeof name), "gpu:0"));
  }
}

static void test_same_bits(void) {
  float a[3] = {1.5f, -0.0f, NAN}, b[3] = {1.5f, -0.0f, -NAN};
  CHECK(h_same_bits(a, b, 3, CMX_FLOAT32)); /* any NaN matches */
  b[1] = 0.0f;
  CHECK(!h_same_bits(a, b, 3, CMX_FLOAT32)); /* -0 is not +0 */
  uint16_t h1[2] = {0x7e00, 0x3c00}, h2[2] = {0x7c01, 0x3c00};
  CHECK(h_same_bits(h1, h2, 2, CMX_FLOAT16));
  h2[0] = 0x7c00; /* inf is no NaN */
  CHECK(!h_same_bits(h1, h2, 2, CMX_FLOAT16));
  int32_t i1[2] = {1, 2}, i2[2] = {1, 3};
  CHECK(!h_same_bits(i1, i2, 2, CMX_INT32) &&
        h_same_bits(i1, i1, 2, CMX_INT32));
}

static void test_missing_walker(void) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  cmx_array x = NULL, c = NULL, d = NULL, e = NULL;
  OK(cmx_array_from_data(&x, v, (int64_t[]){2, 3}, 2, CMX_FLOAT32));
  char names[256] = "";
  CHECK(h_missing_kernels(&x, 1, names, sizeof names) == 0); /* data */
  /* On the CPU nothing is missing. */
  OK(cpu_only(&c, x, cmx_stream_on(cmx_device_cpu())));
  CHECK(h_missing_kernels(&c, 1, names, sizeof names) == 0 && !names[0]);
  cmx_array_release(c);
  if (!g_gpu) {
    cmx_array_release(x);
    return;
  }
  /* A diamond on the gpu: CpuOnly counted once, Add has a kernel. */
  cmx_stream g = cmx_stream_on(cmx_device_gpu());
  OK(cpu_only(&c, x, g));
  OK(cmx_add(&d, c, x, g));
  OK(cmx_add(&e, d, c, g));
  CHECK(h_missing_kernels(&e, 1, names, sizeof names) == 1);
  CHECK(!strcmp(names, "CpuOnly"));
  /* Partial has a gpu kernel: not missing. */
  cmx_array f = NULL;
  OK(partial(&f, e, g));
  names[0] = 0;
  CHECK(h_missing_kernels(&f, 1, names, sizeof names) == 1);
  h_list_add(names, sizeof names, "Partial");
  h_list_add(names, sizeof names, "CpuOnly");
  CHECK(!strcmp(names, "CpuOnly, Partial"));
  cmx_array_release_all((cmx_array[]){x, c, d, e, f}, 5);
}

static void test_no_gpu_kernel(void) {
  int p0 = t_passed, n0 = t_gpu_nokernel;
  int fails = h_check_unary("cpu_only", cpu_only, ref_id, SOME, h_same_dtype,
                            -50, 50, 0);
  int cases = unary_cases(SOME), passed = t_passed - p0;
  CHECK(fails == 0);
  /* One check per case: the CPU's; each GPU's is counted instead. */
  CHECK(passed == cases);
  /* every GPU of the machine counts its own */
  CHECK(t_gpu_nokernel - n0 == (h_ndevices() - 1) * cases);
  CHECK(!g_gpu || strstr(t_gpu_nokernel_names, "CpuOnly"));
  /* The transform checker too: vmap's GPU graph holds CpuOnly. */
  double v[12];
  for (int i = 0; i < 12; i++) v[i] = i * 0.5 - 2;
  cmx_array x = NULL;
  OK(cmx_array_from_data(&x, v, (int64_t[]){3, 4}, 2, CMX_FLOAT64));
  n0 = t_gpu_nokernel;
  p0 = t_passed;
  int f0 = t_failed;
  tc_check_vmap("cpu_only", cpu_only_fn, NULL, &x, 1, (int[]){0}, 0);
  CHECK(t_failed == f0 && t_passed > p0);
  CHECK(t_gpu_nokernel - n0 == h_ndevices() - 1);
  cmx_array_release(x);
}

static void test_not_implemented(void) {
  int p0 = t_passed, n0 = t_gpu_notimpl;
  int fails =
      h_check_unary("partial", partial, ref_id, SOME, h_same_dtype, -50, 50, 0);
  int cases = unary_cases(SOME), passed = t_passed - p0;
  CHECK(fails == 0 && passed == cases);
  CHECK(t_gpu_notimpl - n0 == (h_ndevices() - 1) * cases);
  CHECK(!g_gpu || strstr(t_gpu_notimpl_names, "Partial"));
}

static void test_wrong_result_fails(void) {
  /* Values in [1, 50]: zeros are wrong everywhere but in empty arrays. */
  int p0 = t_passed, f0 = t_failed;
  /* The harness's FAIL lines are expected here: not shown. */
  fflush(stderr);
  int err = dup(2), null = open("/dev/null", O_WRONLY);
  dup2(null, 2);
  int fails =
      h_check_unary("wrong", wrong, ref_id, SOME, h_same_dtype, 1, 50, 0);
  fflush(stderr);
  dup2(err, 2);
  close(err);
  close(null);
  int passed = t_passed - p0, failed = t_failed - f0;
  t_passed = p0; /* this case's own verdict is below */
  t_failed = f0;
  int cases = unary_cases(SOME), empty = 0;
  for (int si = 0; si < H_NUM_SHAPES; si++) {
    int64_t n = 1;
    for (int d = 0; d < h_shapes[si].ndim; d++) n *= h_shapes[si].dims[d];
    if (n == 0)
      empty += 1 + (h_shapes[si].ndim >= 2) + (h_shapes[si].ndim >= 1);
  }
  empty *= 2; /* two dtypes */
  int gpu_fails = g_gpu ? (cases - empty) * (h_ndevices() - 1) : 0;
  CHECK_MSG(fails == gpu_fails && failed == gpu_fails &&
                passed == cases * h_ndevices() - gpu_fails,
            "fails %d (want %d), passed %d", fails, gpu_fails, passed);
}

static cmx_status add_fn(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)ctx;
  (void)n;
  *nout = 1;
  return cmx_add(&outs[0], in[0], in[1], CMX_STREAM_DEFAULT);
}

static void test_add_everywhere(void) {
  /* Add is correctly rounded on both: equal bits on every device. */
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_INT32,
                                  CMX_UINT8,   CMX_INT64,   CMX_NUM_DTYPES};
  int p0 = t_passed;
  h_devices_exact = true;
  int fails = h_check_binary("add", cmx_add, ref_add, dts, h_same_dtype, -100,
                             100, -100, 100, 1);
  h_devices_exact = false;
  int checks = t_passed - p0;
  CHECK(fails == 0 && checks > 0 && checks % h_ndevices() == 0);
  /* Its transforms on every device. */
  double a[12], b[12];
  for (int i = 0; i < 12; i++) a[i] = i * 0.25 - 1, b[i] = 3 - i * 0.125;
  cmx_array x[2] = {NULL, NULL};
  OK(cmx_array_from_data(&x[0], a, (int64_t[]){3, 4}, 2, CMX_FLOAT64));
  OK(cmx_array_from_data(&x[1], b, (int64_t[]){3, 4}, 2, CMX_FLOAT64));
  int n0 = t_gpu_nokernel, m0 = t_gpu_notimpl, f0 = t_failed;
  p0 = t_passed;
  tc_check_grad("add", add_fn, NULL, x, 2, 1e-6);
  tc_check_vmap("add", add_fn, NULL, x, 2, (int[]){1, 1}, 0);
  /* Every GPU comparison ran: nothing was left out. */
  CHECK(t_failed == f0 && t_passed > p0);
  CHECK(t_gpu_nokernel == n0 && t_gpu_notimpl == m0);
  cmx_array_release_all(x, 2);
}

int main(void) {
  g_gpu = cmx_is_available(cmx_device_gpu());
  CHECK_MSG(!getenv("CMX_TEST_FAKE_DRIVER") || g_gpu,
            "the fake driver was not loaded: %s",
            cmx__gpu_unavailable_reason());
  RUN(test_device_list);
  RUN(test_same_bits);
  RUN(test_missing_walker);
  RUN(test_no_gpu_kernel);
  RUN(test_not_implemented);
  RUN(test_wrong_result_fails);
  RUN(test_add_everywhere);
  return test_summary("test_devices");
}
