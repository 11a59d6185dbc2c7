/* compile's one-op run (src/compile/run.c): a call's outputs are those of
 * one CompiledGraph op that runs the trace's kernels in order. Results
 * against eager ones with outputs repeated, outputs that are inputs or
 * constants, an intermediate read by several ops; an input read again
 * later is never donated to an earlier op, one read for the last time is;
 * a failure inside the op fails the eval and a later eval computes the
 * outputs; shapeless graphs and calls under a transform replay op by op,
 * calls on a finished transform's results (stale tracer flags) do not.
 */
#include "compile/compile_internal.h"
#include "core/internal.h"
#include "test.h"

#define S CMX_STREAM_DEFAULT

static cmx_array f32(const float* v, const int64_t* shape, int nd) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32);
  cmx_array_eval(a);
  return a;
}

static bool values_are(cmx_array a, const float* want, int n, double tol) {
  float got[16];
  if (n > 16 || cmx_array_size(a) != n || cmx_array_dtype(a) != CMX_FLOAT32 ||
      cmx_array_copy_to(a, got, sizeof got) != CMX_OK)
    return false;
  for (int i = 0; i < n; i++)
    if (fabs((double)got[i] - want[i]) > tol * fabs((double)want[i]))
      return false;
  return true;
}

/* The op that computes a (pending), or its name. */
static const char* op_name(cmx_array a) {
  return a->op ? a->op->prim->vt->name : "(none)";
}

static cmx_array g_k; /* a constant of f_mix's trace */

/* r = exp(x) * 2 + sum(y); returns r, r, x, sum(y), g_k. */
static cmx_status f_mix(void* payload, const cmx_array* in, int n,
                        cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array two = NULL, e = NULL, m = NULL, s = NULL, r = NULL;
  cmx_array_weak_float(&two, 2.0);
  cmx_exp(&e, in[0], S);
  cmx_multiply(&m, e, two, S);
  cmx_sum(&s, in[1], NULL, 0, false, S);
  cmx_add(&r, m, s, S);
  cmx_array* o = calloc(5, sizeof *o);
  o[0] = r;
  o[1] = cmx_array_retain(r);
  o[2] = cmx_array_retain(in[0]);
  o[3] = s;
  o[4] = cmx_array_retain(g_k);
  cmx_array_release_all((cmx_array[]){two, e, m}, 3);
  *out = o;
  *nout = 5;
  return r ? CMX_OK : cmx_last_status();
}

/* concatenate(exp(x) * 2, x): x is read by two ops, and the first (a
 * fused region, which may write into an argument nothing else holds) is
 * not its last reader. */
static cmx_status f_two(void* payload, const cmx_array* in, int n,
                        cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array two = NULL, e = NULL, m = NULL;
  cmx_array* o = calloc(1, sizeof *o);
  cmx_array_weak_float(&two, 2.0);
  cmx_exp(&e, in[0], S);
  cmx_multiply(&m, e, two, S);
  cmx_concatenate(&o[0], (cmx_array[]){m, in[0]}, 2, 0, S);
  cmx_array_release_all((cmx_array[]){two, e, m}, 3);
  *out = o;
  *nout = 1;
  return o[0] ? CMX_OK : cmx_last_status();
}

static void test_outputs(void) {
  const int64_t sh[] = {4};
  const float xv[] = {0.5f, -1, 2, 0}, yv[] = {1, 2, 3, 4},
              kv[] = {7, 8, 9, 10};
  g_k = f32(kv, sh, 1);
  cmx_array x = f32(xv, sh, 1), y = f32(yv, sh, 1);
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_mix, NULL}, NULL));
  float want[4];
  for (int i = 0; i < 4; i++) want[i] = expf(xv[i]) * 2 + 10;
  for (int call = 0; call < 2; call++) { /* a trace, then a cached one */
    cmx_array* o = NULL;
    int n = 0;
    OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &n));
    CHECK(n == 5);
    if (n != 5) break;
    CHECK(strcmp(op_name(o[0]), "CompiledGraph") == 0);
    CHECK(o[3]->op == o[0]->op); /* one op computes both */
    CHECK(o[1] == o[0] && o[2] == x && o[4] == g_k);
    OK(cmx_eval(o, 5));
    CHECK(values_are(o[0], want, 4, 1e-6));
    CHECK(values_are(o[3], (const float[]){10}, 1, 0));
    CHECK(values_are(o[2], xv, 4, 0) && values_are(o[4], kv, 4, 0));
    cmx_arrays_free(o, n);
  }
  cmx_compiled_release(cf);
  cmx_array_release_all((cmx_array[]){x, y, g_k}, 3);
}

/* An input the caller dropped: the fused region reads it first but the
 * concatenation reads it after, so the region must not write into it. */
static void test_donation(void) {
  const int64_t sh[] = {4};
  const float xv[] = {1, 2, 3, 4};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_two, NULL}, NULL));
  float want[8];
  for (int i = 0; i < 4; i++) want[i] = expf(xv[i]) * 2, want[4 + i] = xv[i];
  for (int call = 0; call < 2; call++) {
    cmx_array x = f32(xv, sh, 1);
    cmx_array* o = NULL;
    int n = 0;
    OK(cmx_compiled_call(cf, &x, 1, &o, &n));
    cmx_array_release(x); /* the op holds the only reference */
    CHECK(n == 1 && strcmp(op_name(o[0]), "CompiledGraph") == 0);
    OK(cmx_eval(o, 1));
    CHECK_MSG(values_are(o[0], want, 8, 1e-6),
              "x was read after the region wrote into it");
    cmx_arrays_free(o, n);
  }
  cmx_compiled_release(cf);
}

static cmx_status f_exp2(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array two = NULL, e = NULL;
  cmx_array* o = calloc(1, sizeof *o);
  cmx_array_weak_float(&two, 2.0);
  cmx_exp(&e, in[0], S);
  cmx_multiply(&o[0], e, two, S);
  cmx_array_release(two);
  cmx_array_release(e);
  *out = o;
  *nout = 1;
  return o[0] ? CMX_OK : cmx_last_status();
}

/* Buffer identity is checked on the CPU: on a GPU default device the
 * input made from host data is uploaded, so its host buffer cannot become
 * a device output (no donation to see there). */
static void test_donation_last_read(void) {
  cmx_device prev = cmx_default_device();
  OK(cmx_set_default_device(cmx_device_cpu()));
  const int64_t sh[] = {4};
  const float xv[] = {1, 2, 3, 4};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_exp2, NULL}, NULL));
  float want[4];
  for (int i = 0; i < 4; i++) want[i] = expf(xv[i]) * 2;
  for (int call = 0; call < 2; call++) {
    cmx_array x = f32(xv, sh, 1);
    cmx__buffer* xb = x->buf;
    cmx_array* o = NULL;
    int n = 0;
    OK(cmx_compiled_call(cf, &x, 1, &o, &n));
    cmx_array_release(x);
    CHECK(n == 1 && strcmp(op_name(o[0]), "CompiledGraph") == 0);
    OK(cmx_eval(o, 1));
    CHECK(values_are(o[0], want, 4, 1e-6));
    CHECK_MSG(o[0]->buf == xb, "the dropped input was not donated");
    cmx_arrays_free(o, n);
  }
  cmx_compiled_release(cf);
  OK(cmx_set_default_device(prev));
}

/* An intermediate that cannot be made: the eval fails as out of memory,
 * and the next eval computes the outputs. */
static void test_failure(void) {
  const int64_t sh[] = {4};
  const float xv[] = {0.5f, -1, 2, 0}, yv[] = {1, 2, 3, 4};
  cmx_array x = f32(xv, sh, 1), y = f32(yv, sh, 1);
  g_k = f32(yv, sh, 1);
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_mix, NULL}, NULL));
  cmx_array* o = NULL;
  int n = 0;
  OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &n));
  cmx_arrays_free(o, n); /* traced */
  OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &n));
  /* r: only the sum inside is a new node (the outputs exist already) */
  cmx_array r = cmx_array_retain(o[0]);
  cmx_arrays_free(o, n);
  cmx_debug_fail_after(1);
  FAILS(cmx_array_eval(r), CMX_ERR_MEMORY, "injected");
  cmx_debug_fail_after(0);
  float want[4];
  for (int i = 0; i < 4; i++) want[i] = expf(xv[i]) * 2 + 10;
  OK(cmx_array_eval(r));
  CHECK(values_are(r, want, 4, 1e-6));
  cmx_array_release(r);
  cmx_compiled_release(cf);
  cmx_array_release_all((cmx_array[]){x, y, g_k}, 3);
}

static cmx_compiled* g_cf;
static cmx_status f_call(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload;
  return cmx_compiled_call(g_cf, in, n, out, nout);
}

/* Shapeless traces and calls on a running transform's tracers replay op
 * by op (the transform sees the ops); results stay right. After the
 * transform, calls on its results run as one op again. */
static void test_op_by_op(void) {
  const int64_t sh[] = {4};
  const float xv[] = {1, 2, 3, 4};
  cmx_array x = f32(xv, sh, 1);
  cmx_compile_options opt = {.shapeless = true};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_exp2, NULL}, &opt));
  cmx_array* o = NULL;
  int n = 0;
  OK(cmx_compiled_call(cf, &x, 1, &o, &n));
  CHECK(n == 1 && strcmp(op_name(o[0]), "CompiledGraph") != 0);
  cmx_arrays_free(o, n);
  cmx_compiled_release(cf);
  /* grad of sum(exp(x) * 2) through the compiled function: exp(x) * 2 */
  OK(cmx_compile(&g_cf, (cmx_closure){f_exp2, NULL}, NULL));
  cmx_array* v = NULL;
  int nv = 0;
  OK(cmx_compiled_call(g_cf, &x, 1, &v, &nv)); /* traced, one-op call */
  cmx_arrays_free(v, nv);
  cmx_array ones = NULL, g = NULL;
  OK(cmx_ones_like(&ones, x, S));
  OK(cmx_vjp((cmx_closure){f_call, NULL}, &x, 1, &ones, 1, &v, &nv, &g));
  float want[4];
  for (int i = 0; i < 4; i++) want[i] = expf(xv[i]) * 2;
  CHECK(g && values_are(g, want, 4, 1e-6));
  /* After the transform: its results keep their tracer flag, stale now;
   * a call on them runs as one op again. */
  cmx_array* w = NULL;
  int nw = 0;
  CHECK(nv == 1 && v[0]->tracer);
  OK(cmx_compiled_call(g_cf, v, 1, &w, &nw));
  CHECK(nw == 1 && strcmp(op_name(w[0]), "CompiledGraph") == 0);
  for (int i = 0; i < 4; i++) want[i] = expf(want[i]) * 2;
  CHECK(nw == 1 && values_are(w[0], want, 4, 1e-5));
  cmx_arrays_free(w, nw);
  cmx_arrays_free(v, nv);
  cmx_array_release(g);
  cmx_array_release(ones);
  cmx_compiled_release(g_cf);
  cmx_array_release(x);
}

int main(void) {
  RUN(test_outputs);
  RUN(test_donation);
  RUN(test_donation_last_read);
  RUN(test_failure);
  RUN(test_op_by_op);
  return test_summary("test_compile_run");
}
