/* compile: caching and recompilation, captured state, placeholders, the
 * graph passes, fusion against eager results for every table op and
 * dtype, layouts, transforms of compiled functions, and the disk cache's
 * checks.
 *
 * Kernels go to the user's kernel cache (CMX_CACHE_DIR, else
 * ~/.cache/cmx), so later runs, and other builds of the tests (the ASan
 * one), reuse them; test_disk_cache works in a folder of its own there.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/gpu.h"
#include "backend/cuda/kernels.h"
#include "compile/compile_internal.h"
#include "core/disk_cache.h"
#include "primitives/compiled.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"
#include "test.h"
#include "transforms/transforms_internal.h"

#define S CMX_STREAM_DEFAULT

/* Fused steps are compiled with FMA contraction exactly where libcmx's
 * eager rows are (the gcc-built AVX clones of transcendental float32 and
 * 16-bit float rows), so results are bit for bit the eager ones; a
 * library built by another compiler contracts differently: within a few
 * ulp there. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FMA_TOL 0
#else
#define FMA_TOL 5e-7
#endif

/* The GPU pass (main) reruns the fusion cases with the GPU as the default
 * device: compiled results against eager GPU results (gelu, layouts,
 * several outputs) and, for every table op and dtype, against the CPU's
 * eager results (the GPU's eager kernels of every op and dtype would take
 * NVRTC minutes to build). NVRTC contracts multiply-adds across fused
 * steps where the eager kernels round each step, and the GPU's libm is not
 * the CPU's, so inexact results agree to a tolerance there (g_atol: its
 * absolute floor, for results near 0). */
static bool g_on_gpu;
static double g_atol;
static double gpu_tol(cmx_dtype dt, double cpu_tol) {
  if (!g_on_gpu || !cmx_dtype_is_inexact(dt)) return cpu_tol;
  return dt == CMX_FLOAT16    ? 2e-3
         : dt == CMX_BFLOAT16 ? 1.6e-2
         : dt == CMX_FLOAT64  ? 1e-12
                              : 1e-5;
}

static cmx_compile_stats stats(void) {
  cmx_compile_stats s;
  cmx_compile_stats_get(&s);
  return s;
}

/* Returns one output; out is malloc'ed. */
static cmx_status one(cmx_array a, cmx_array** out, int* nout) {
  if (!a) return cmx_last_status();
  *out = malloc(sizeof(cmx_array));
  (*out)[0] = a;
  *nout = 1;
  return CMX_OK;
}

static cmx_array f32(const float* v, const int64_t* shape, int nd) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32);
  return a;
}

static double item(cmx_array a) {
  double d = NAN;
  cmx_array_item_double(a, &d);
  return d;
}

/* ---------------- functions ---------------- */

/* exp(-x) + y, counting its runs in *(int*)payload. */
static cmx_status f_basic(void* payload, const cmx_array* in, int n,
                          cmx_array** out, int* nout) {
  (void)n;
  if (payload) (*(int*)payload)++;
  cmx_array a = NULL, b = NULL;
  cmx_negative(&a, in[0], S);
  cmx_exp(&b, a, S);
  cmx_array r = NULL;
  cmx_add(&r, b, in[1], S);
  cmx_array_release(a);
  cmx_array_release(b);
  return one(r, out, nout);
}

/* gelu: x * (1 + erf(x / sqrt(2))) / 2 */
static cmx_status f_gelu(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array s2 = NULL, one_ = NULL, two = NULL, a = NULL, b = NULL, c = NULL,
            d = NULL, e = NULL;
  cmx_array_weak_float(&s2, sqrt(2.0));
  cmx_array_weak_float(&one_, 1.0);
  cmx_array_weak_float(&two, 2.0);
  cmx_divide(&a, in[0], s2, S);
  cmx_erf(&b, a, S);
  cmx_add(&c, one_, b, S);
  cmx_multiply(&d, in[0], c, S);
  cmx_divide(&e, d, two, S);
  cmx_array_release_all((cmx_array[]){s2, one_, two, a, b, c, d}, 7);
  return one(e, out, nout);
}

static bool same_values(cmx_array a, cmx_array b, double tol) {
  if (cmx_array_ndim(a) != cmx_array_ndim(b) ||
      cmx_array_size(a) != cmx_array_size(b))
    return false;
  int64_t n = cmx_array_size(a);
  cmx_array x = NULL, y = NULL;
  cmx_astype(&x, a, CMX_FLOAT64, S);
  cmx_astype(&y, b, CMX_FLOAT64, S);
  double* u = malloc((size_t)(n + 1) * 8);
  double* v = malloc((size_t)(n + 1) * 8);
  bool ok = cmx_array_copy_to(x, u, (size_t)n * 8) == CMX_OK &&
            cmx_array_copy_to(y, v, (size_t)n * 8) == CMX_OK;
  for (int64_t i = 0; ok && i < n; i++)
    ok = (isnan(u[i]) && isnan(v[i])) || u[i] == v[i] ||
         fabs(u[i] - v[i]) <= tol * fmax(fabs(u[i]), fabs(v[i])) + g_atol;
  free(u);
  free(v);
  cmx_array_release(x);
  cmx_array_release(y);
  return ok;
}

/* ---------------- basics and the cache ---------------- */

static void test_basics(void) {
  int runs = 0;
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_basic, &runs}, NULL));
  cmx_array x = NULL, y = NULL;
  cmx_array_from_double(&x, 1.0, CMX_FLOAT32);
  cmx_array_from_double(&y, 2.0, CMX_FLOAT32);
  cmx_compile_stats s0 = stats();
  cmx_array* o = NULL;
  int no = 0;
  OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no));
  CHECK(no == 1 && fabs(item(o[0]) - (exp(-1.0) + 2.0)) < 1e-6);
  char* s = NULL;
  OK(cmx_array_tostring(o[0], &s));
  CHECK(s && !strcmp(s, "array(2.36788, dtype=float32)"));
  cmx_free(s);
  cmx_arrays_free(o, no);
  /* Not traced again, by this handle or another of the same function. */
  OK(cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no));
  cmx_arrays_free(o, no);
  cmx_compiled* cf2 = NULL;
  OK(cmx_compile(&cf2, (cmx_closure){f_basic, &runs}, NULL));
  OK(cmx_compiled_call(cf2, (cmx_array[]){x, y}, 2, &o, &no));
  cmx_arrays_free(o, no);
  cmx_compile_stats s1 = stats();
  CHECK(runs == 1);
  CHECK(s1.traces - s0.traces == 1 && s1.hits - s0.hits == 2);
  CHECK(s1.fused - s0.fused == 1); /* negative, exp, add: one kernel */
  cmx_compiled_release(cf2);
  CHECK(stats().entries == s1.entries); /* cf still holds them */
  cmx_compiled_release(cf);
  CHECK(stats().entries == s0.entries); /* gone with the last handle */
  cmx_array_release(x);
  cmx_array_release(y);
}

static void test_recompile_triggers(void) {
  int runs = 0;
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_basic, &runs}, NULL));
  float v[6] = {1, 2, 3, 4, 5, 6};
  cmx_array a23 = f32(v, (int64_t[]){2, 3}, 2),
            a32 = f32(v, (int64_t[]){3, 2}, 2);
  cmx_array a6 = f32(v, (int64_t[]){6}, 1), d = NULL;
  cmx_astype(&d, a23, CMX_FLOAT64, S);
  cmx_array* o = NULL;
  int no = 0;
#define CALL(x, y, key, ksize)                                             \
  do {                                                                     \
    OK(cmx_compiled_call_keyed(cf, (cmx_array[]){x, y}, 2, key, ksize, &o, \
                               &no, NULL));                                \
    cmx_arrays_free(o, no);                                                \
  } while (0)
  CALL(a23, a23, NULL, 0);
  CHECK(runs == 1);
  CALL(a23, a23, NULL, 0);
  CHECK(runs == 1);
  CALL(a32, a32, NULL, 0); /* shape */
  CHECK(runs == 2);
  CALL(a6, a6, NULL, 0); /* ndim */
  CHECK(runs == 3);
  CALL(d, d, NULL, 0); /* dtype */
  CHECK(runs == 4);
  CALL(a23, a23, "k1", 2); /* constants */
  CHECK(runs == 5);
  CALL(a23, a23, "k1", 2);
  CALL(a32, a32, NULL, 0);
  CHECK(runs == 5);
  /* The number of inputs: f_basic reads two, a third is ignored. */
  OK(cmx_compiled_call(cf, (cmx_array[]){a23, a23, a23}, 3, &o, &no));
  cmx_arrays_free(o, no);
  CHECK(runs == 6);
  cmx_compiled_release(cf);
  /* Shapeless: new shapes of the same ndim reuse the trace. */
  cmx_compile_options opt = {.shapeless = true};
  runs = 0;
  OK(cmx_compile(&cf, (cmx_closure){f_basic, &runs}, &opt));
  CALL(a23, a23, NULL, 0);
  CALL(a32, a32, NULL, 0);
  CHECK(runs == 1);
  OK(cmx_compiled_call(cf, (cmx_array[]){a32, a32}, 2, &o, &no));
  CHECK(cmx_array_dim(o[0], 0) == 3 && cmx_array_dim(o[0], 1) == 2);
  float got[6];
  OK(cmx_array_copy_to(o[0], got, sizeof got));
  CHECK(fabsf(got[5] - (expf(-6.f) + 6.f)) < 1e-6f);
  cmx_arrays_free(o, no);
  CALL(a6, a6, NULL, 0); /* ndim still counts */
  CHECK(runs == 2);
#undef CALL
  cmx_compiled_release(cf);
  cmx_array_release_all((cmx_array[]){a23, a32, a6, d}, 4);
}

/* An LRU of two traces: a third shape evicts the oldest. */
static void test_lru(void) {
  int runs = 0;
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_basic, &runs}, NULL));
  OK(cmx_compile_set_cache_size(2));
  float v[4] = {1, 2, 3, 4};
  cmx_array a[3] = {f32(v, (int64_t[]){1}, 1), f32(v, (int64_t[]){2}, 1),
                    f32(v, (int64_t[]){3}, 1)};
  cmx_compile_stats s0 = stats();
  cmx_array* o;
  int no;
  for (int i = 0; i < 3; i++) {
    OK(cmx_compiled_call(cf, (cmx_array[]){a[i], a[i]}, 2, &o, &no));
    cmx_arrays_free(o, no);
  }
  CHECK(stats().entries == 2 && stats().evictions - s0.evictions == 1);
  OK(cmx_compiled_call(cf, (cmx_array[]){a[0], a[0]}, 2, &o, &no));
  cmx_arrays_free(o, no);
  CHECK(runs == 4); /* evicted, traced again */
  FAILS(cmx_compile_set_cache_size(0), CMX_ERR_VALUE, "at least one");
  OK(cmx_compile_set_cache_size(CMX_COMPILE_CACHE_SIZE));
  cmx_compiled_release(cf);
  cmx_array_release_all(a, 3);
}

static void test_disable(void) {
  int runs = 0;
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_basic, &runs}, NULL));
  cmx_array x = NULL;
  cmx_array_from_double(&x, 1.0, CMX_FLOAT32);
  cmx_disable_compile();
  CHECK(!cmx_compile_enabled());
  cmx_array* o;
  int no;
  for (int i = 0; i < 2; i++) {
    OK(cmx_compiled_call(cf, (cmx_array[]){x, x}, 2, &o, &no));
    cmx_arrays_free(o, no);
  }
  CHECK(runs == 2); /* plain calls */
  cmx_enable_compile();
  for (int i = 0; i < 2; i++) {
    OK(cmx_compiled_call(cf, (cmx_array[]){x, x}, 2, &o, &no));
    cmx_arrays_free(o, no);
  }
  CHECK(runs == 3);
  cmx_compiled_release(cf);
  cmx_array_release(x);
}

/* ---------------- placeholders ---------------- */

static cmx_array g_leak;

static cmx_status f_eval_inside(void* payload, const cmx_array* in, int n,
                                cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array z = NULL;
  cmx_negative(&z, in[0], S);
  char* s = NULL;
  cmx_status st = cmx_array_tostring(z, &s); /* print(z) */
  cmx_free(s);
  if (st != CMX_OK) {
    cmx_array_release(z);
    return st;
  }
  cmx_array r = NULL;
  cmx_exp(&r, z, S);
  cmx_array_release(z);
  return one(r, out, nout);
}

static cmx_status f_leak(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array z = NULL;
  cmx_add(&z, in[0], in[1], S);
  g_leak = cmx_array_retain(z); /* state.append(z) */
  cmx_array r = NULL;
  cmx_exp(&r, z, S);
  cmx_array_release(z);
  return one(r, out, nout);
}

static void test_placeholders(void) {
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_eval_inside, NULL}, NULL));
  cmx_array x = NULL;
  cmx_array_from_double(&x, 5.0, CMX_FLOAT32);
  cmx_array* o = NULL;
  int no = 0;
  FAILS(cmx_compiled_call(cf, &x, 1, &o, &no), CMX_ERR_VALUE,
        "Attempting to eval an array during function transformations like "
        "compile");
  CHECK(o == NULL && stats().entries == 0);
  cmx_disable_compile(); /* the debugging advice: it runs eagerly */
  OK(cmx_compiled_call(cf, &x, 1, &o, &no));
  CHECK(no == 1 && fabs(item(o[0]) - exp(-5.0)) < 1e-9);
  cmx_arrays_free(o, no);
  cmx_enable_compile();
  cmx_compiled_release(cf);
  /* A placeholder kept past the trace: printing it fails, no crash. */
  OK(cmx_compile(&cf, (cmx_closure){f_leak, NULL}, NULL));
  OK(cmx_compiled_call(cf, (cmx_array[]){x, x}, 2, &o, &no));
  CHECK(fabs(item(o[0]) - exp(10.0)) < 1e-2 * exp(10.0));
  cmx_arrays_free(o, no);
  char* s = NULL;
  FAILS(cmx_array_tostring(g_leak, &s), CMX_ERR_VALUE, "Attempting to eval");
  FAILS(cmx_array_eval(g_leak), CMX_ERR_VALUE, "Attempting to eval");
  cmx_array_release(g_leak);
  cmx_compiled_release(cf);
  cmx_array_release(x);
  FAILS(cmx_compile_set_aux(NULL, NULL), CMX_ERR_VALUE, "outside");
  CHECK(!cmx_compile_tracing());
}

/* ---------------- captured state ---------------- */

/* The state: a slot read as input w, written as output w_new = w * x. */
typedef struct {
  cmx_array w;
  int runs;
} model;

static int get_w(void* ctx, cmx_array* out, int max) {
  if (max >= 1) out[0] = ((model*)ctx)->w;
  return 1;
}
static cmx_status set_w(void* ctx, const cmx_array* v, int n) {
  model* m = ctx;
  if (n != 1) return cmx__error(CMX_ERR_VALUE, "bad state size");
  cmx_array old = m->w;
  m->w = cmx_array_retain(v[0]);
  cmx_array_release(old);
  return CMX_OK;
}

/* y = x + w; then w = w * x (through the captured output). */
static cmx_status f_state(void* payload, const cmx_array* in, int n,
                          cmx_array** out, int* nout) {
  (void)n;
  model* m = payload;
  m->runs++;
  cmx_array y = NULL, w2 = NULL;
  cmx_add(&y, in[0], m->w, S);
  cmx_multiply(&w2, m->w, in[0], S);
  set_w(m, &w2, 1);
  cmx_array_release(w2);
  return one(y, out, nout);
}

static void test_captured_state(void) {
  model m = {0};
  cmx_array_from_double(&m.w, 1.0, CMX_FLOAT32);
  cmx_compile_options opt = {.inputs = {get_w, set_w, &m},
                             .outputs = {get_w, set_w, &m}};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_state, &m}, &opt));
  cmx_array x = NULL;
  cmx_array_from_double(&x, 2.0, CMX_FLOAT32);
  double want_y[3] = {3, 4, 6}, want_w[3] = {2, 4, 8};
  for (int i = 0; i < 3; i++) {
    cmx_array* o = NULL;
    int no = 0;
    OK(cmx_compiled_call(cf, &x, 1, &o, &no));
    CHECK(no == 1 && item(o[0]) == want_y[i] && item(m.w) == want_w[i]);
    cmx_arrays_free(o, no);
  }
  CHECK(m.runs == 1);
  cmx_compiled_release(cf);
  /* Not captured: w is a constant of the trace. */
  model c = {0};
  cmx_array_from_double(&c.w, 1.0, CMX_FLOAT32);
  OK(cmx_compile(&cf, (cmx_closure){f_state, &c}, NULL));
  cmx_array* o = NULL;
  int no = 0;
  OK(cmx_compiled_call(cf, &x, 1, &o, &no));
  CHECK(item(o[0]) == 3);
  cmx_arrays_free(o, no);
  set_w(&c, &x, 1); /* w = 2: not seen */
  OK(cmx_compiled_call(cf, &x, 1, &o, &no));
  CHECK(item(o[0]) == 3);
  cmx_arrays_free(o, no);
  cmx_compiled_release(cf);
  cmx_array_release_all((cmx_array[]){m.w, c.w, x}, 3);
}

/* ---------------- the passes ---------------- */

static int count_ops(const cmx__cgraph* g, const char* name) {
  int n = 0;
  for (int i = 0; i < g->nops; i++)
    n += !strcmp(cmx_primitive_name(g->ops[i].prim), name);
  return n;
}

static void test_passes(void) {
  size_t mark = cmx__scope_enter();
  int64_t shape[1] = {4};
  cmx_array x = cmx__placeholder(shape, 1, CMX_FLOAT32);
  cmx_array ta = NULL, tb = NULL, e1 = NULL, e2 = NULL, m1 = NULL, m2 = NULL,
            s = NULL, id = NULL;
  cmx_array_weak_float(&ta, 2.0);
  cmx_array_weak_float(&tb, 2.0); /* an equal scalar, another node */
  cmx_exp(&e1, x, S);
  cmx_exp(&e2, x, S);
  cmx_multiply(&m1, e1, ta, S);
  cmx_multiply(&m2, e2, tb, S);
  cmx_add(&s, m1, m2, S);
  const int64_t* shp[1] = {shape};
  int nd = 1;
  cmx_dtype dt = CMX_FLOAT32;
  OK(cmx_primitive_apply(&id, 1,
                         cmx_primitive_new(&cmx__vt_Identity, NULL, 0, S), &s,
                         1, shp, &nd, &dt));
  cmx__cgraph g;
  OK(cmx__cgraph_from_trace(&g, &x, 1, &id, 1));
  CHECK(count_ops(&g, "Exp") == 2 && count_ops(&g, "Multiply") == 2 &&
        count_ops(&g, "Identity") == 1 && count_ops(&g, "Broadcast") == 2);
  cmx__cgraph_verify(&g, "test");
  OK(cmx__pass_merge_scalars(&g));
  int nconst = 0;
  for (int v = 0; v < g.nvals; v++) nconst += g.vals[v].kind == CMX__CV_CONST;
  CHECK(nconst == 1);
  OK(cmx__pass_drop_noops(&g));
  CHECK(count_ops(&g, "Identity") == 0);
  OK(cmx__pass_cse(&g));
  cmx__cgraph_verify(&g, "cse");
  CHECK(count_ops(&g, "Exp") == 1 && count_ops(&g, "Multiply") == 1 &&
        count_ops(&g, "Broadcast") == 1 && count_ops(&g, "Add") == 1);
  CHECK(g.nops == 4);
  /* The simplified graph still computes the function. */
  float v[4] = {0, 1, -1, 2};
  cmx_array in = f32(v, shape, 1), out = NULL;
  OK(cmx__cgraph_replay(&g, &in, &out));
  float got[4];
  OK(cmx_array_copy_to(out, got, sizeof got));
  for (int i = 0; i < 4; i++)
    CHECK(got[i] == 4.f * (float)exp(v[i]) ||
          fabsf(got[i] - 4.f * expf(v[i])) < 1e-5f);
  OK(cmx__pass_fuse(&g));
  cmx__cgraph_verify(&g, "fuse");
  CHECK(g.nops == 1 && count_ops(&g, "Compiled") == 1);
  cmx_array out2 = NULL;
  OK(cmx__cgraph_replay(&g, &in, &out2));
  CHECK(same_values(out, out2, 0));
  char desc[256];
  cmx_primitive_describe(g.ops[0].prim, desc, sizeof desc);
  CHECK_MSG(!strcmp(desc, "Compiled(Exp, Broadcast, Multiply, Add)"), "%s",
            desc);
  cmx__cgraph_free(&g);
  cmx_array_release_all(
      (cmx_array[]){ta, tb, e1, e2, m1, m2, s, id, in, out, out2}, 11);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
}

/* ---------------- fusion against eager ---------------- */

static void test_gelu(void) {
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_gelu, NULL}, NULL));
  int64_t n = 100003; /* several chunks for the pool, and a tail */
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)((i % 2001) - 1000) / 250.f;
  cmx_array x = f32(v, &n, 1);
  cmx_compile_stats s0 = stats();
  cmx_array *o = NULL, *e = NULL;
  int no = 0, ne = 0;
  OK(cmx_compiled_call(cf, &x, 1, &o, &no));
  CHECK(stats().fused - s0.fused == 1);
  OK(f_gelu(NULL, &x, 1, &e, &ne));
  /* The same operations as the eager rows, each contracted where its
   * eager row is: the same bits. */
  CHECK(same_values(o[0], e[0], gpu_tol(CMX_FLOAT32, FMA_TOL)));
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
  cmx_compiled_release(cf);
  cmx_array_release(x);
  free(v);
}

/* Layouts of the inputs: transposed, strided, broadcast, 0-d, empty.
 * sqrt(|x y|) - x: correctly rounded operations, so exactly eager's. */
static cmx_status f_axpb(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array a = NULL, b = NULL, c = NULL, r = NULL;
  cmx_multiply(&a, in[0], in[1], S);
  cmx_abs(&b, a, S);
  cmx_sqrt(&c, b, S);
  cmx_subtract(&r, c, in[0], S);
  cmx_array_release_all((cmx_array[]){a, b, c}, 3);
  return one(r, out, nout);
}

static void check_layout(cmx_compiled* cf, cmx_array x, cmx_array y,
                         const char* what) {
  cmx_array *o = NULL, *e = NULL;
  int no = 0, ne = 0;
  cmx_status st = cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no);
  CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
  if (st != CMX_OK) return;
  OK(f_axpb(NULL, (cmx_array[]){x, y}, 2, &e, &ne));
  CHECK_MSG(same_values(o[0], e[0], gpu_tol(CMX_FLOAT32, 0)), "%s", what);
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
}

static void test_layouts(void) {
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_axpb, NULL}, NULL));
  float v[1205]; /* b reads 600 from v + 5, b6 1200 */
  for (int i = 0; i < 1205; i++) v[i] = sinf((float)i) * 3;
  cmx_array a = f32(v, (int64_t[]){20, 30}, 2),
            b = f32(v + 5, (int64_t[]){20, 30}, 2);
  cmx_array t = NULL, sl = NULL, row = f32(v, (int64_t[]){30}, 1), sc = NULL,
            e1 = f32(v, (int64_t[]){0, 3}, 2), big = NULL, bigt = NULL;
  cmx_array t0 = f32(v, (int64_t[]){30, 20}, 2);
  cmx_transpose(&t, t0, NULL, 0, S);
  cmx_array_from_double(&sc, 0.25, CMX_FLOAT32);
  cmx_array b6 = f32(v, (int64_t[]){20, 60}, 2);
  cmx_slice(&sl, b6, (int64_t[]){0, 0}, (int64_t[]){20, 60}, (int64_t[]){1, 2},
            S);
  check_layout(cf, a, b, "contiguous");
  check_layout(cf, a, t, "transposed");
  check_layout(cf, t, sl, "strided");
  cmx_array rb = NULL, sb = NULL;
  cmx_broadcast_to(&rb, row, (int64_t[]){20, 30}, 2, S);
  cmx_broadcast_to(&sb, sc, (int64_t[]){20, 30}, 2, S);
  check_layout(cf, a, rb, "broadcast row");
  check_layout(cf, sb, a, "broadcast scalar");
  check_layout(cf, sc, sc, "0-d");
  check_layout(cf, e1, e1, "empty");
  float* w = malloc(300000 * sizeof *w);
  for (int i = 0; i < 300000; i++) w[i] = (float)(i % 977) / 300.f - 1.f;
  big = f32(w, (int64_t[]){600, 500}, 2);
  cmx_array bt0 = f32(w, (int64_t[]){500, 600}, 2);
  cmx_transpose(&bigt, bt0, NULL, 0, S);
  check_layout(cf, big, bigt, "large transposed");
  free(w);
  cmx_compiled_release(cf);
  cmx_array_release_all(
      (cmx_array[]){a, b, t, sl, row, sc, e1, big, bigt, b6, rb, sb, t0, bt0},
      14);
}

/* (exp(x) * 2, exp(x) + 1, sum(exp(x) + 1)): exp is used by both
 * outputs, the sum reads a fused value. */
static cmx_status f_multi(void* payload, const cmx_array* in, int n,
                          cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array e = NULL, two = NULL, one_ = NULL, a = NULL, b = NULL, c = NULL,
            d = NULL;
  cmx_array_weak_float(&two, 2.0);
  cmx_array_weak_float(&one_, 1.0);
  cmx_exp(&e, in[0], S);
  cmx_multiply(&a, e, two, S);
  cmx_add(&b, e, one_, S);
  cmx_sqrt(&c, b, S);
  cmx_sum(&d, b, NULL, 0, false, S);
  cmx_array_release_all((cmx_array[]){e, two, one_}, 3);
  *out = malloc(4 * sizeof(cmx_array));
  (*out)[0] = a;
  (*out)[1] = b;
  (*out)[2] = c;
  (*out)[3] = d;
  *nout = 4;
  return CMX_OK;
}

static void test_multi_output(void) {
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){f_multi, NULL}, NULL));
  float v[7] = {0, 1, -1, 2, -3, 0.5f, 4};
  cmx_array x = f32(v, (int64_t[]){7}, 1);
  cmx_compile_stats s0 = stats();
  cmx_array *o = NULL, *e = NULL;
  int no = 0, ne = 0;
  OK(cmx_compiled_call(cf, &x, 1, &o, &no));
  CHECK(stats().fused - s0.fused == 1); /* exp, add, sqrt; multiply alone */
  OK(f_multi(NULL, &x, 1, &e, &ne));
  for (int i = 0; i < 4 && no == 4; i++) CHECK(same_values(o[i], e[i], 1e-6));
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
  cmx_compiled_release(cf);
  cmx_array_release(x);
}

/* ---------------- every table op and dtype ----------------
 * One function per dtype applies every op that takes it (op(x) or
 * op(x, y)), every conversion, Round and Select, each result an output,
 * all chained into one accumulator (where(c, astype(r), acc)) so the
 * whole function is one fused region with many outputs. Compiled results must
 * be the eager ones: exactly, except where the eager rows are compiled with FMA
 * contraction (transcendental float32 rows, the 16-bit float rows), within a
 * few ulp. */

#define SWEEP_N 37

static const cmx_dtype k_dtypes[] = {
    CMX_BOOL,     CMX_UINT8,   CMX_UINT16,  CMX_UINT32,   CMX_UINT64,
    CMX_INT8,     CMX_INT16,   CMX_INT32,   CMX_INT64,    CMX_FLOAT16,
    CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
#define NDT ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

typedef struct {
  cmx_dtype dt;
  int n;       /* outputs before the accumulator */
  int id[256]; /* primitive of output i (-1: a conversion, -2: Round) */
  cmx_dtype cvt[256];
} sweep;

static cmx_array apply_id(int id, const cmx_array* in, int n) {
  const cmx__ew_op* op = cmx__ew_op_get(id);
  cmx_array last = in[n - 1];
  cmx_dtype odt = cmx__ew_out_dtype(op, cmx_array_dtype(last));
  int nd = cmx_array_ndim(last);
  const int64_t* shp[1] = {cmx_array_shape(last)};
  cmx_array r = NULL;
  cmx_primitive* p = cmx_primitive_new(cmx_builtin_primitive(id), NULL, 0, S);
  if (cmx_primitive_apply(&r, 1, p, in, n, shp, &nd, &odt) != CMX_OK)
    return NULL;
  return r;
}

/* Output i of the sweep (NULL with the error set). */
static cmx_array sweep_output(const sweep* sw, int i, cmx_array x, cmx_array y,
                              cmx_array c) {
  int id = sw->id[i];
  cmx_array a = NULL, b = NULL, r = NULL;
  if (id == -1) {
    cmx_astype(&r, x, sw->cvt[i], S);
  } else if (id == -2) {
    cmx_round(&a, x, 1, S);
    cmx_round(&b, y, -1, S);
    cmx_where(&r, c, a, b, S);
  } else {
    const cmx__ew_op* op = cmx__ew_op_get(id);
    r = op->arity == 1 ? apply_id(id, &x, 1)
                       : apply_id(id, (cmx_array[]){x, y}, 2);
  }
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}

static cmx_status f_sweep(void* payload, const cmx_array* in, int n,
                          cmx_array** out, int* nout) {
  (void)n;
  sweep* sw = payload;
  cmx_array x = in[0], y = in[1], c = in[2];
  cmx_array* o = calloc(260, sizeof *o);
  int k = 0;
  cmx_array acc = cmx_array_retain(x);
  for (int i = 0; i < sw->n; i++) {
    cmx_array r = sweep_output(sw, i, x, y, c);
    if (!r) break;
    o[k++] = r;
    cmx_array t = NULL, acc2 = NULL;
    cmx_astype(&t, r, sw->dt, S);
    cmx_where(&acc2, c, acc, t, S);
    cmx_array_release(t);
    cmx_array_release(acc);
    acc = acc2;
  }
  o[k++] = acc;
  *out = o;
  *nout = k;
  return k == sw->n + 1 ? CMX_OK : cmx_last_status();
}

/* x and y of dtype dt with special and ordinary values. */
static void sweep_inputs(cmx_dtype dt, cmx_array* x, cmx_array* y) {
  static const double fv[] = {
      0.0,   -0.0,  1.0,      -1.0,      0.5,     -2.5,    3.75,  1e3,
      -1e-3, NAN,   INFINITY, -INFINITY, 65504.0, 1e30,    -7.0,  2.0,
      0.1,   1e-40, 100.5,    -0.75,     12.0,    -123.25, 0.999, 1.001,
      -1e5,  3.0,   -3.0,     6.5,       0.25,    42.0,    -42.0, 7e-5,
      1.5,   -1.5,  8.0,      9.0,       -9.0};
  static const int64_t iv[] = {0,
                               1,
                               -1,
                               2,
                               -2,
                               7,
                               -7,
                               100,
                               127,
                               -128,
                               255,
                               32767,
                               -32768,
                               65535,
                               2147483647,
                               -2147483647 - 1,
                               4294967295LL,
                               3,
                               64,
                               33,
                               8,
                               INT64_MAX,
                               INT64_MIN,
                               5,
                               -5,
                               16,
                               31,
                               63,
                               9,
                               -9,
                               1000,
                               -1000,
                               12,
                               13,
                               6,
                               -6,
                               4};
  bool is_float = cmx_dtype_is_inexact(dt);
  cmx_array a = NULL, b = NULL;
  int64_t n = SWEEP_N;
  if (dt == CMX_COMPLEX64) {
    float re[2 * SWEEP_N], im[2 * SWEEP_N];
    for (int i = 0; i < SWEEP_N; i++) {
      re[2 * i] = (float)fv[i];
      re[2 * i + 1] = (float)fv[(i + 7) % SWEEP_N];
      im[2 * i] = (float)fv[(i + 3) % SWEEP_N];
      im[2 * i + 1] = (float)fv[(i + 11) % SWEEP_N];
    }
    cmx_array_from_data(x, re, &n, 1, CMX_COMPLEX64);
    cmx_array_from_data(y, im, &n, 1, CMX_COMPLEX64);
    return;
  }
  if (is_float) {
    double u[SWEEP_N], w[SWEEP_N];
    for (int i = 0; i < SWEEP_N; i++) {
      u[i] = fv[i];
      w[i] = fv[(i * 5 + 3) % SWEEP_N];
    }
    cmx_array_from_data(&a, u, &n, 1, CMX_FLOAT64);
    cmx_array_from_data(&b, w, &n, 1, CMX_FLOAT64);
  } else {
    int64_t u[SWEEP_N], w[SWEEP_N];
    for (int i = 0; i < SWEEP_N; i++) {
      u[i] = iv[i];
      w[i] = iv[(i * 5 + 3) % SWEEP_N];
    }
    cmx_array_from_data(&a, u, &n, 1, CMX_INT64);
    cmx_array_from_data(&b, w, &n, 1, CMX_INT64);
  }
  cmx_astype(x, a, dt, S);
  cmx_astype(y, b, dt, S);
  cmx_array_eval(*x);
  cmx_array_eval(*y);
  cmx_array_release(a);
  cmx_array_release(b);
}

/* Exactly equal bytes, or for tol > 0 equal within tol (relative, NaNs
 * alike). */
static bool agree(cmx_array a, cmx_array b, double tol) {
  size_t n = cmx_array_nbytes(a);
  if (n != cmx_array_nbytes(b) || cmx_array_dtype(a) != cmx_array_dtype(b))
    return false;
  if (tol > 0 && cmx_array_dtype(a) != CMX_COMPLEX64)
    return same_values(a, b, tol);
  unsigned char* u = malloc(n + 1);
  unsigned char* w = malloc(n + 1);
  bool ok = cmx_array_copy_to(a, u, n) == CMX_OK &&
            cmx_array_copy_to(b, w, n) == CMX_OK;
  if (ok && tol > 0) { /* complex64: both parts within tol */
    for (size_t i = 0; ok && i < n / 4; i++) {
      float x, y;
      memcpy(&x, u + 4 * i, 4);
      memcpy(&y, w + 4 * i, 4);
      ok = (isnan(x) && isnan(y)) || x == y ||
           fabs((double)x - y) <= tol * fmax(fabs(x), fabs(y)) + g_atol;
    }
  } else {
    ok = ok && !memcmp(u, w, n);
  }
  free(u);
  free(w);
  return ok;
}

static void test_every_op(void) {
  int nops = cmx_builtin_primitive_count(), total = 0;
  for (int d = 0; d < NDT; d++) {
    sweep sw = {.dt = k_dtypes[d]};
    for (int id = 0; id < nops; id++) {
      const cmx__ew_op* op = cmx__ew_op_get(id);
      if (!op || id == CMX__P_Select || id == CMX__P_Round ||
          !cmx__ew_accepts(op, sw.dt))
        continue;
      sw.id[sw.n++] = id;
    }
    if (sw.dt != CMX_BOOL && sw.dt != CMX_COMPLEX64) sw.id[sw.n++] = -2;
    for (int e = 0; e < NDT; e++) {
      sw.id[sw.n] = -1;
      sw.cvt[sw.n++] = k_dtypes[e];
    }
    cmx_array x = NULL, y = NULL, c = NULL;
    sweep_inputs(sw.dt, &x, &y);
    bool cv[SWEEP_N];
    for (int i = 0; i < SWEEP_N; i++) cv[i] = (i * 7) % 3 != 0;
    int64_t n = SWEEP_N;
    cmx_array_from_data(&c, cv, &n, 1, CMX_BOOL);
    cmx_compiled* cf = NULL;
    OK(cmx_compile(&cf, (cmx_closure){f_sweep, &sw}, NULL));
    cmx_compile_stats s0 = stats();
    cmx_array *o = NULL, *e = NULL;
    int no = 0, ne = 0;
    cmx_status st = cmx_compiled_call(cf, (cmx_array[]){x, y, c}, 3, &o, &no);
    CHECK_MSG(st == CMX_OK, "%s: %s", cmx_dtype_name(sw.dt), cmx_last_error());
    CHECK_MSG(stats().fused - s0.fused == 1, "%s: one region",
              cmx_dtype_name(sw.dt));
    /* On the CPU, the same region's CUDA source must compile too. */
    cmx__op* fop = st == CMX_OK && no ? o[0]->op : NULL;
    cmx_primitive* fp = fop ? fop->prim : NULL;
    /* the call's op runs the graph (src/compile/run.c): its region */
    const cmx__cgraph* run = cmx__cplan_graph_of(fp);
    for (int i = 0; run && i < run->nops; i++)
      if (cmx_primitive_vt(fp = run->ops[i].prim)->id == CMX__P_Compiled) break;
    if (!g_on_gpu && fp && cmx__nvrtc_available(NULL)) {
      CHECK(cmx_primitive_vt(fp)->id == CMX__P_Compiled);
      cmx_status cs = cmx__gpu_compiled_check(cmx__compiled_program(fp), 90);
      CHECK_MSG(cs == CMX_OK, "%s: CUDA source: %.3000s", cmx_dtype_name(sw.dt),
                cmx_last_error());
    }
    if (g_on_gpu) OK(cmx_set_default_device(cmx_device_cpu()));
    OK(f_sweep(&sw, (cmx_array[]){x, y, c}, 3, &e, &ne));
    if (g_on_gpu) OK(cmx_set_default_device(cmx_device_gpu()));
    for (int i = 0; st == CMX_OK && i < sw.n && i < no; i++) {
      int id = sw.id[i];
      const cmx__ew_op* op = id >= 0 ? cmx__ew_op_get(id) : NULL;
      cmx_dtype odt = cmx_array_dtype(e[i]);
      double tol = 0;
      if (FMA_TOL > 0 && (sw.dt == CMX_FLOAT16 || sw.dt == CMX_BFLOAT16))
        tol = sw.dt == CMX_FLOAT16 ? 1e-3 : 8e-3;
      else if (op && (op->flags & CMX__EW_HEAVY) && sw.dt == CMX_FLOAT32)
        tol = FMA_TOL;
      tol = gpu_tol(odt, tol);
      if (odt == CMX_BOOL) tol = 0;
      const char* what = id >= 0    ? cmx_builtin_primitive(id)->name
                         : id == -2 ? "Round"
                                    : cmx_dtype_name(sw.cvt[i]);
      bool ok = agree(o[i], e[i], tol);
      if (!ok && g_on_gpu) {
        /* The GPU's eager kernel may differ from the CPU's (special
         * values of libcu++'s complex functions): the compiled result
         * must then be the GPU's eager one. */
        cmx_array r = sweep_output(&sw, i, x, y, c);
        ok = r && agree(o[i], r, tol);
        if (ok)
          fprintf(stderr,
                  "  note: %s %s: the GPU's eager result differs from the "
                  "CPU's; compiled agrees with the GPU's\n",
                  cmx_dtype_name(sw.dt), what);
        cmx_array_release(r);
      }
      CHECK_MSG(ok, "%s %s", cmx_dtype_name(sw.dt), what);
      total++;
    }
    cmx_arrays_free(o, no);
    cmx_arrays_free(e, ne);
    cmx_compiled_release(cf);
    cmx_array_release_all((cmx_array[]){x, y, c}, 3);
  }
  CHECK(total > 600);
}

/* ---------------- transforms ---------------- */

static cmx_compiled* g_cf;

/* sum(gelu(x)) through the compiled gelu. */
static cmx_status f_loss(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)n;
  cmx_array* o = NULL;
  int no = 0;
  cmx_status st = payload ? cmx_compiled_call(g_cf, in, 1, &o, &no)
                          : f_gelu(NULL, in, 1, &o, &no);
  if (st != CMX_OK) return st;
  cmx_array s = NULL;
  cmx_sum(&s, o[0], NULL, 0, false, S);
  cmx_arrays_free(o, no);
  return one(s, out, nout);
}

static cmx_status f_grad(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  int arg = 0;
  cmx_array g = NULL;
  cmx_status st = cmx_value_and_grad((cmx_closure){f_loss, NULL}, in, 1, &arg,
                                     1, NULL, NULL, &g);
  return st == CMX_OK ? one(g, out, nout) : st;
}

static cmx_status f_call(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  return cmx_compiled_call(g_cf, in, 1, out, nout);
}

static void test_transforms(void) {
  OK(cmx_compile(&g_cf, (cmx_closure){f_gelu, NULL}, NULL));
  float v[9] = {-3, -1.5f, -0.5f, 0, 0.25f, 1, 2, 3.5f, -0.1f};
  cmx_array x = f32(v, (int64_t[]){9}, 1);
  int arg = 0;
  /* grad of a function calling the compiled one (through Compiled's
   * vjp), and of the plain one */
  cmx_array g1 = NULL, g2 = NULL;
  OK(cmx_value_and_grad((cmx_closure){f_loss, g_cf}, &x, 1, &arg, 1, NULL, NULL,
                        &g1));
  OK(cmx_value_and_grad((cmx_closure){f_loss, NULL}, &x, 1, &arg, 1, NULL, NULL,
                        &g2));
  CHECK(g1 && g2 && same_values(g1, g2, 1e-6));
  /* jvp and vmap of the compiled function */
  cmx_array* jv = NULL;
  int nj = 0;
  cmx_array ones = NULL;
  cmx_ones_like(&ones, x, S);
  OK(cmx_jvp((cmx_closure){f_call, NULL}, &x, 1, &ones, NULL, &jv, &nj));
  CHECK(nj == 1 && jv && same_values(jv[0], g2, 1e-6));
  cmx_arrays_free(jv, nj);
  float m[18];
  for (int i = 0; i < 18; i++) m[i] = v[i % 9] * (i < 9 ? 1 : -1);
  cmx_array xm = f32(m, (int64_t[]){2, 9}, 2);
  cmx_array *vo = NULL, *eo = NULL;
  int nv = 0, neo = 0;
  int ax = 0;
  OK(cmx_vmap((cmx_closure){f_call, NULL}, &xm, 1, &ax, &ax, 1, &vo, &nv));
  OK(f_gelu(NULL, &xm, 1, &eo, &neo));
  CHECK(nv == 1 && same_values(vo[0], eo[0], 0));
  cmx_arrays_free(vo, nv);
  cmx_arrays_free(eo, neo);
  /* Compiling a transformed function: grad, compiled and fused. */
  cmx_compiled* cg = NULL;
  OK(cmx_compile(&cg, (cmx_closure){f_grad, NULL}, NULL));
  cmx_compile_stats s0 = stats();
  cmx_array* go = NULL;
  int ng = 0;
  OK(cmx_compiled_call(cg, &x, 1, &go, &ng));
  CHECK(stats().fused > s0.fused);
  CHECK(ng == 1 && same_values(go[0], g2, 1e-6));
  cmx_arrays_free(go, ng);
  cmx_compiled_release(cg);
  cmx_compiled_release(g_cf);
  cmx_array_release_all((cmx_array[]){x, g1, g2, ones, xm}, 5);
}

/* ---------------- the disk cache's checks ---------------- */

static void entry_path(char* buf, size_t size, const char* name) {
  char dir[4096];
  cmx__disk_cache_dir("test", dir, sizeof dir);
  snprintf(buf, size, "%s/%s", dir, name);
}

static void test_disk_cache(void) {
  char dir[4096], path[4200];
  CHECK(cmx__disk_cache_dir("test", dir, sizeof dir));
  struct stat st;
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  cmx__key128 k = cmx__key128_add(cmx__key128_init(), "key", 3);
  const char payload[] = "a kernel's bytes";
  CHECK(cmx__disk_cache_write("test", "entry", k, payload, sizeof payload));
  entry_path(path, sizeof path, "entry");
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
  void* data = NULL;
  size_t n = 0;
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == 1 &&
        n == sizeof payload && !memcmp(data, payload, n));
  free(data);
  cmx__key128 other = cmx__key128_add(k, "x", 1);
  CHECK(cmx__disk_cache_read("test", "entry", other, &data, &n) == -1);
  CHECK(cmx__disk_cache_read("test", "none", k, &data, &n) == 0);
  /* Tampered: one payload byte changed. */
  FILE* f = fopen(path, "r+b");
  CHECK(f != NULL);
  if (f) {
    fseek(f, -3, SEEK_END);
    fputc('X', f);
    fclose(f);
  }
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == -1 && !data);
  /* Loose permissions: writable by others. */
  CHECK(cmx__disk_cache_write("test", "entry", k, payload, sizeof payload));
  chmod(path, 0666);
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == -1);
  chmod(path, 0600);
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == 1);
  free(data);
  /* A link in place of an entry. */
  char lnk[4200];
  entry_path(lnk, sizeof lnk, "link");
  unlink(lnk);
  CHECK(symlink(path, lnk) == 0);
  CHECK(cmx__disk_cache_read("test", "link", k, &data, &n) == -1);
  unlink(lnk);
  /* Owned by another user (only root can make one). */
  if (geteuid() == 0) {
    CHECK(chown(path, 12345, 12345) == 0);
    CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == -1);
    CHECK(chown(path, 0, 0) == 0);
  } else {
    printf("test_disk_cache: not root, the foreign-owner case needs root\n");
  }
  /* A folder others can write is not used at all. */
  chmod(dir, 0777);
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == 0);
  CHECK(!cmx__disk_cache_write("test", "entry2", k, payload, sizeof payload));
  chmod(dir, 0700);
  CHECK(cmx__disk_cache_read("test", "entry", k, &data, &n) == 1);
  free(data);
  unlink(path);
}

int main(void) {
  /* CMX_TEST_GPU_PASS_ONLY=1: the GPU pass alone (the lent GPU machine) */
  const char* only = getenv("CMX_TEST_GPU_PASS_ONLY");
  /* The first pass is the CPU's (C code generation), whatever the default
   * device (a GPU when present); the GPU pass below makes the GPU it. */
  OK(cmx_set_default_device(cmx_device_cpu()));
  if (only && *only == '1') goto gpu_pass;
  RUN(test_basics);
  RUN(test_recompile_triggers);
  RUN(test_lru);
  RUN(test_disable);
  RUN(test_placeholders);
  RUN(test_captured_state);
  RUN(test_passes);
  RUN(test_gelu);
  RUN(test_layouts);
  RUN(test_multi_output);
  RUN(test_every_op);
  RUN(test_transforms);
  RUN(test_disk_cache);
gpu_pass:
  if (cmx_is_available(cmx_device_gpu())) {
    OK(cmx_set_default_device(cmx_device_gpu()));
    g_on_gpu = true;
    g_atol = 1e-6;
    RUN(test_gelu);
    RUN(test_layouts);
    RUN(test_multi_output);
    RUN(test_every_op);
    g_on_gpu = false;
    g_atol = 0;
    OK(cmx_set_default_device(cmx_device_cpu()));
  }
  return test_summary("test_compile");
}
