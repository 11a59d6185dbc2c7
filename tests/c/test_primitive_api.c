/* The open primitive API as an extension uses it: a user primitive with two
 * outputs, siblings evaluated together, dropped siblings, kernel failures
 * propagating to dependents, and a device with no kernel. */
#include "test.h"

#define S CMX_STREAM_DEFAULT

typedef struct {
  float scale;
} sumdiff_params;

static int g_runs;

/* out0 = scale * (a + b), out1 = scale * (a - b); contiguous float32 only
 * (inputs are made contiguous by the op). */
static cmx_status sumdiff_cpu(const cmx_primitive* p, const cmx_array* in,
                              int nin, const cmx_array* out, int nout) {
  (void)nin;
  (void)nout;
  g_runs++;
  const sumdiff_params* q = cmx_primitive_params(p);
  if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
  if (cmx_kernel_alloc(out[1]) != CMX_OK) return cmx_last_status();
  const float* a = cmx_kernel_data(in[0]);
  const float* b = cmx_kernel_data(in[1]);
  float* s = cmx_kernel_data(out[0]);
  float* d = cmx_kernel_data(out[1]);
  for (int64_t i = 0; i < cmx_array_size(out[0]); i++) {
    s[i] = q->scale * (a[i] + b[i]);
    d[i] = q->scale * (a[i] - b[i]);
  }
  return CMX_OK;
}

static const cmx_primitive_vtable sumdiff_vt = {.name = "SumDiff",
                                                .flags = CMX_PRIM_EXTERNAL,
                                                .id = -1,
                                                .eval_cpu = sumdiff_cpu};

static cmx_status sumdiff(cmx_array outs[2], cmx_array a, cmx_array b,
                          float scale) {
  sumdiff_params q = {scale};
  cmx_primitive* p = cmx_primitive_new(&sumdiff_vt, &q, sizeof q, S);
  if (!p) return cmx_last_status();
  cmx_array in[2] = {a, b};
  const int64_t* shapes[2] = {cmx_array_shape(a), cmx_array_shape(a)};
  int nd[2] = {cmx_array_ndim(a), cmx_array_ndim(a)};
  cmx_dtype dt[2] = {CMX_FLOAT32, CMX_FLOAT32};
  return cmx_primitive_apply(outs, 2, p, in, 2, shapes, nd, dt);
}

static cmx_status fail_cpu(const cmx_primitive* p, const cmx_array* in, int nin,
                           const cmx_array* out, int nout) {
  (void)p;
  (void)in;
  (void)nin;
  (void)out;
  (void)nout;
  return cmx_kernel_error(CMX_ERR_VALUE, "[Fail] this kernel always fails");
}
static const cmx_primitive_vtable fail_vt = {
    .name = "Fail", .id = -1, .eval_cpu = fail_cpu};

static void test_multi_output(void) {
  float x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
  int64_t n = 3;
  cmx_array a, b, o[2];
  OK(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32));
  OK(cmx_array_from_data(&b, y, &n, 1, CMX_FLOAT32));
  OK(sumdiff(o, a, b, 2.0f));
  CHECK(strcmp(cmx_primitive_name(cmx_array_primitive(o[0])), "SumDiff") == 0);
  CHECK(cmx_array_primitive(o[0]) == cmx_array_primitive(o[1]));
  int nin;
  cmx_array_inputs(o[1], &nin);
  CHECK(nin == 2);
  g_runs = 0;
  OK(cmx_array_eval(o[0])); /* computes both siblings at once */
  CHECK(g_runs == 1);
  CHECK(!cmx_array_is_lazy(o[1]));
  float r[3];
  OK(cmx_array_copy_to(o[1], r, sizeof r));
  CHECK(g_runs == 1 && r[0] == -18 && r[2] == -54);
  cmx_array_release_all(o, 2);

  /* A sibling dropped before evaluation: computed into a temporary. */
  OK(sumdiff(o, a, b, 1.0f));
  cmx_array_release(o[0]);
  OK(cmx_array_copy_to(o[1], r, sizeof r));
  CHECK(r[1] == -18);
  cmx_array_release(o[1]);
  /* Both dropped unevaluated: freed without leaks (ASan checks). */
  OK(sumdiff(o, a, b, 1.0f));
  cmx_array_release(o[1]);
  cmx_array_release(o[0]);
  /* Used as an input of a later op. */
  cmx_array c;
  OK(sumdiff(o, a, b, 1.0f));
  OK(cmx_add(&c, o[0], o[1], S));
  cmx_array_release_all(o, 2);
  OK(cmx_array_copy_to(c, r, sizeof r));
  CHECK(r[0] == 2 && r[1] == 4 && r[2] == 6);
  cmx_array_release_all((cmx_array[]){a, b, c}, 3);
}

static void test_failure_propagates(void) {
  float x[2] = {1, 2};
  int64_t n = 2;
  cmx_array a, f, g;
  OK(cmx_array_from_data(&a, x, &n, 1, CMX_FLOAT32));
  cmx_primitive* p = cmx_primitive_new(&fail_vt, NULL, 0, S);
  CHECK(p != NULL);
  const int64_t* shp[1] = {&n};
  int nd = 1;
  cmx_dtype dt = CMX_FLOAT32;
  OK(cmx_primitive_apply(&f, 1, p, &a, 1, shp, &nd, &dt));
  OK(cmx_add(&g, f, a, S));
  /* the kernel's status reaches the caller (a dependent's eval too) */
  FAILS(cmx_array_eval(g), CMX_ERR_VALUE, "always fails");
  const void* d;
  FAILS(cmx_array_data(f, &d), CMX_ERR_VALUE, "always fails");
  /* the rest of the system keeps working */
  cmx_array h;
  OK(cmx_add(&h, a, a, S));
  float r[2];
  OK(cmx_array_copy_to(h, r, sizeof r));
  CHECK(r[1] == 4);
  cmx_array_release_all((cmx_array[]){a, f, g, h}, 4);
}

static void test_bad_apply(void) {
  cmx_array o;
  cmx_primitive* p = cmx_primitive_new(&fail_vt, NULL, 0, S);
  FAILS(cmx_primitive_apply(&o, 1, p, NULL, 1, NULL, NULL, NULL), CMX_ERR_VALUE,
        "[Fail]");
  CHECK(cmx_primitive_new(NULL, NULL, 0, S) == NULL);
  cmx_primitive_vtable anon = {0};
  CHECK(cmx_primitive_new(&anon, NULL, 0, S) == NULL);
  CHECK(strstr(cmx_last_error(), "[primitive]") != NULL);
}

static void test_equal_hash(void) {
  sumdiff_params q1 = {1.0f}, q2 = {1.0f}, q3 = {2.0f};
  cmx_primitive* p1 = cmx_primitive_new(&sumdiff_vt, &q1, sizeof q1, S);
  cmx_primitive* p2 = cmx_primitive_new(&sumdiff_vt, &q2, sizeof q2, S);
  cmx_primitive* p3 = cmx_primitive_new(&sumdiff_vt, &q3, sizeof q3, S);
  CHECK(cmx_primitive_equal(p1, p2) && !cmx_primitive_equal(p1, p3));
  CHECK(cmx_primitive_hash(p1) == cmx_primitive_hash(p2));
  char buf[64];
  cmx_primitive_describe(p1, buf, sizeof buf);
  CHECK(strcmp(buf, "SumDiff") == 0);
  cmx_primitive_release(p1);
  cmx_primitive_release(p2);
  cmx_primitive_release(p3);
}

int main(void) {
  /* SumDiff and Fail have CPU kernels only (a user primitive without a GPU
   * kernel fails there, as in MLX): on the CPU whatever the default device
   * (a GPU when present). */
  OK(cmx_set_default_device(cmx_device_cpu()));
  RUN(test_multi_output);
  RUN(test_failure_propagates);
  RUN(test_bad_apply);
  RUN(test_equal_hash);
  return test_summary("test_primitive_api");
}
