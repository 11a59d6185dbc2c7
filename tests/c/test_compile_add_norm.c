/* compile's add_rms_norm pass and the AddRMSNorm primitive it makes
 * (compile/add_rms_norm.c, primitives/fast.h):
 * - a transformer-block-like function (two residual adds, each feeding an
 *   RMSNorm) compiles to a graph with two AddRMSNorm ops and no Add, and
 *   its results equal the uncompiled function's bit for bit, for float32,
 *   float16 and bfloat16, with and without the norm's weight;
 * - the kernel alone on strided, broadcast and offset operands equals Add
 *   then RMSNorm bit for bit;
 * - the pass leaves alone what it must: shapeless traces, an RMSNorm that
 *   reads the Add's output as its weight too, float64 (no RMSNorm node);
 *   of two RMSNorms reading one Add, one fuses; CMX_COMPILE_ADD_RMS_NORM=0
 *   turns it off;
 * - the primitive's equal and hash.
 * Every case runs on each device (devices.h): on a GPU the fused kernel is
 * checked against that GPU's Add and RMSNorm kernels, bit for bit too. */
#include <stdlib.h>

#include "compile/compile_internal.h"
#include "devices.h"
#include "compile_util.h"
#include "primitives/fast.h"
#include "primitives/registry.h"
#include "rand_array.h"
#include "test.h"
#include "transforms/transforms_internal.h"

static cmx_stream g_s;
#define S g_s

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

/* A random array of the shape in dtype dt on S (rand_array.h). */
static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt) {
  return rand_array(&g_rng, shape, nd, dt, 2.f, S);
}

/* ---------------- the block ---------------- */

/* in = {x (B, D), wa (D, D), wm (D, D), [w1 (D), w2 (D)]}:
 *   h = x + rms_norm(x, w1) @ wa;  out = h + rms_norm(h, w2) @ wm;
 *   returns {rms_norm(out, w1), out, h}
 * (payload: whether the weights are given). */
static cmx_status block_fn(void* payload, const cmx_array* in, int n,
                           cmx_array** out, int* nout) {
  (void)n;
  bool weights = *(const bool*)payload;
  cmx_array w1 = weights ? in[3] : NULL, w2 = weights ? in[4] : NULL;
  cmx_array n1 = NULL, a = NULL, h = NULL, n2 = NULL, m = NULL, o = NULL,
            n3 = NULL;
  cmx_status st = cmx_fast_rms_norm(&n1, in[0], w1, 1e-5f, S);
  if (st == CMX_OK) st = cmx_matmul(&a, n1, in[1], S);
  if (st == CMX_OK) st = cmx_add(&h, in[0], a, S);
  if (st == CMX_OK) st = cmx_fast_rms_norm(&n2, h, w2, 1e-5f, S);
  if (st == CMX_OK) st = cmx_matmul(&m, n2, in[2], S);
  if (st == CMX_OK) st = cmx_add(&o, h, m, S);
  if (st == CMX_OK) st = cmx_fast_rms_norm(&n3, o, w1, 1e-5f, S);
  cmx_array_release_all((cmx_array[]){n1, a, n2, m}, 4);
  if (st != CMX_OK) {
    cmx_array_release_all((cmx_array[]){h, o, n3}, 3);
    return st;
  }
  *out = malloc(3 * sizeof **out);
  (*out)[0] = n3;
  (*out)[1] = o;
  (*out)[2] = h;
  *nout = 3;
  return CMX_OK;
}

static void test_block(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  /* D = 576 (SmolLM2's), one row as in decoding and 5; D = 100 and 1104
   * take the GPU's other kernels (not whole vectors; a block a row) */
  int64_t shapes[4][2] = {{1, 576}, {5, 576}, {3, 100}, {2, 1104}};
  for (int k = 0; k < 3; k++)
    for (int sh = 0; sh < 4; sh++)
      for (int wt = 0; wt < 2; wt++) {
        int64_t B = shapes[sh][0], D = shapes[sh][1];
        int64_t xs[2] = {B, D}, ms[2] = {D, D}, vs[1] = {D};
        cmx_array in[5] = {rnd(xs, 2, dts[k]), rnd(ms, 2, dts[k]),
                           rnd(ms, 2, dts[k]), rnd(vs, 1, dts[k]),
                           rnd(vs, 1, dts[k])};
        /* keep the matmuls' sums near 1 so the adds matter */
        cmx_array sc = NULL, t = NULL;
        OK(cmx_array_weak_float(&sc, 1.0 / (double)D));
        for (int i = 1; i < 3; i++) {
          OK(cmx_multiply(&t, in[i], sc, S));
          cmx_array_release(in[i]);
          in[i] = t;
        }
        bool weights = wt == 1;
        int nin = weights ? 5 : 3;
        cmx_array* ref = NULL;
        int nref = 0;
        OK(block_fn(&weights, in, nin, &ref, &nref));
        cmx_compiled* cf = NULL;
        OK(cmx_compile(&cf, (cmx_closure){block_fn, &weights}, NULL));
        cmx_array* got = NULL;
        int ngot = 0;
        OK(cmx_compiled_call(cf, in, nin, &got, &ngot));
        const cmx__cgraph* g = ngot == 3 ? graph_of(got[0]) : NULL;
        CHECK_MSG(g && count_ops(g, &cmx__vt_AddRMSNorm) == 2 &&
                      count_ops(g, &cmx__vt_Add) == 0 &&
                      count_ops(g, &cmx__vt_RMSNorm) == 1,
                  "%s (%lld, %lld) weights %d: the pass did not fuse both "
                  "adds",
                  cmx_dtype_name(dts[k]), (long long)B, (long long)D, wt);
        for (int i = 0; i < 3 && ngot == 3 && nref == 3; i++)
          CHECK_MSG(h_arrays_same_bytes(got[i], ref[i]),
                    "%s (%lld, %lld) weights %d: output %d differs from "
                    "uncompiled",
                    cmx_dtype_name(dts[k]), (long long)B, (long long)D, wt, i);
        cmx_arrays_free(got, ngot);
        cmx_arrays_free(ref, nref);
        cmx_compiled_release(cf);
        cmx_array_release(sc);
        cmx_array_release_all(in, 5);
      }
}

/* ---------------- the kernel on other layouts ---------------- */

/* AddRMSNorm applied to x, r, [w] (eps 1e-5): out = {h, y}. */
static void apply_add_norm(cmx_array x, cmx_array r, cmx_array w,
                           cmx_array* out) {
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.eps = 1e-5f;
  q.has_weight = w != NULL;
  const int64_t* shp[2] = {cmx_array_shape(x), cmx_array_shape(x)};
  int nd[2] = {cmx_array_ndim(x), cmx_array_ndim(x)};
  cmx_dtype dt[2] = {cmx_array_dtype(x), cmx_array_dtype(x)};
  cmx_array in[3] = {x, r, w};
  OK(cmx_primitive_apply(
      out, 2, cmx_primitive_new(&cmx__vt_AddRMSNorm, &q, sizeof q, S), in,
      w ? 3 : 2, shp, nd, dt));
}

static void check_layouts(const char* what, cmx_array x, cmx_array r,
                          cmx_array w) {
  cmx_array o[2] = {NULL, NULL}, h = NULL, y = NULL;
  apply_add_norm(x, r, w, o);
  OK(cmx_add(&h, x, r, S));
  OK(cmx_fast_rms_norm(&y, h, w, 1e-5f, S));
  CHECK_MSG(h_arrays_same_bytes(o[0], h), "%s %s: h differs from Add", what,
            cmx_dtype_name(cmx_array_dtype(x)));
  CHECK_MSG(h_arrays_same_bytes(o[1], y), "%s %s: y differs from RMSNorm", what,
            cmx_dtype_name(cmx_array_dtype(x)));
  cmx_array_release_all((cmx_array[]){o[0], o[1], h, y}, 4);
}

static void test_layouts(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (int k = 0; k < 3; k++) {
    cmx_dtype dt = dts[k];
    int64_t xs[3] = {2, 3, 64}, ts[3] = {2, 64, 3}, ws[1] = {64};
    int64_t rs[1] = {64};
    cmx_array x = rnd(xs, 3, dt), r = rnd(xs, 3, dt), w = rnd(ws, 1, dt);
    check_layouts("contiguous", x, r, w);
    check_layouts("no weight", x, r, NULL);
    /* x transposed: its last axis strided */
    cmx_array xt0 = rnd(ts, 3, dt), xt = NULL;
    OK(cmx_swapaxes(&xt, xt0, 1, 2, S));
    check_layouts("strided x", xt, r, w);
    /* r broadcast along rows (stride 0) */
    cmx_array r1 = rnd(rs, 1, dt), rb = NULL;
    OK(cmx_broadcast_to(&rb, r1, xs, 3, S));
    check_layouts("broadcast r", x, rb, w);
    /* rows starting 1 element in: not 16-byte aligned */
    int64_t bs[3] = {2, 3, 65}, start[3] = {0, 0, 1}, stop[3] = {2, 3, 65},
            step[3] = {1, 1, 1};
    cmx_array big = rnd(bs, 3, dt), xo = NULL;
    OK(cmx_slice(&xo, big, start, stop, step, S));
    check_layouts("offset x", xo, r, w);
    /* a strided weight */
    int64_t w2s[1] = {128}, wst = 2, w0 = 0, w1 = 128;
    cmx_array wbig = rnd(w2s, 1, dt), wsl = NULL;
    OK(cmx_slice(&wsl, wbig, &w0, &w1, &wst, S));
    check_layouts("strided weight", x, r, wsl);
    cmx_array_release_all(
        (cmx_array[]){x, r, w, xt0, xt, r1, rb, big, xo, wbig, wsl}, 11);
  }
}

/* ---------------- where the pass stays out ---------------- */

/* payload selects: 0 rms_norm(x + r, x + r) on 1-d inputs (the Add is the
 * weight too); 1 two norms of one sum, returned with the sum; 2 x + r used
 * before the norm (by a Multiply) and the weight computed after the Add. */
static cmx_status odd_fn(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)n;
  int v = *(const int*)payload;
  cmx_array h = NULL, a = NULL, b = NULL, c = NULL, w = NULL;
  cmx_status st = cmx_add(&h, in[0], in[1], S);
  if (st == CMX_OK && v == 0) {
    st = cmx_fast_rms_norm(&a, h, h, 1e-5f, S);
  } else if (st == CMX_OK && v == 1) {
    st = cmx_fast_rms_norm(&a, h, NULL, 1e-5f, S);
    if (st == CMX_OK) st = cmx_fast_rms_norm(&b, h, NULL, 1e-3f, S);
  } else if (st == CMX_OK) {
    st = cmx_multiply(&c, h, h, S);
    if (st == CMX_OK) st = cmx_exp(&w, in[2], S);
    if (st == CMX_OK) st = cmx_fast_rms_norm(&a, h, w, 1e-5f, S);
  }
  if (st != CMX_OK) {
    cmx_array_release_all((cmx_array[]){h, a, b, c, w}, 5);
    return st;
  }
  cmx_array_release(w);
  *out = malloc(4 * sizeof **out);
  int k = 0;
  (*out)[k++] = a;
  if (b) (*out)[k++] = b;
  if (c) (*out)[k++] = c;
  (*out)[k++] = h;
  *nout = k;
  return CMX_OK;
}

/* Compiles odd_fn variant v (shapeless or not) on in (nin), checks the
 * graph's AddRMSNorm count and every output against the uncompiled. */
static void check_odd(int v, bool shapeless, const cmx_array* in, int nin,
                      int fused) {
  cmx_array* ref = NULL;
  int nref = 0;
  OK(odd_fn(&v, in, nin, &ref, &nref));
  cmx_compile_options opt = {.shapeless = shapeless};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){odd_fn, &v}, &opt));
  cmx_array* got = NULL;
  int ngot = 0;
  OK(cmx_compiled_call(cf, in, nin, &got, &ngot));
  /* a shapeless trace runs op by op: its graph is the cache entry's */
  cmx__cgraph g;
  bool traced = false;
  if (shapeless) {
    size_t mark = cmx__scope_enter(); /* placeholders are scope-owned */
    cmx_array ph[3];
    for (int i = 0; i < nin; i++)
      ph[i] = cmx__placeholder(cmx_array_shape(in[i]), cmx_array_ndim(in[i]),
                               cmx_array_dtype(in[i]));
    cmx_array* outs = NULL;
    int no = 0;
    OK(odd_fn(&v, ph, nin, &outs, &no));
    traced = cmx__cgraph_from_trace(&g, ph, nin, outs, no) == CMX_OK;
    g.shapeless = true;
    OK(cmx__pass_add_rms_norm(&g));
    cmx_arrays_free(outs, no);
    cmx__scope_exit_n(mark, NULL, NULL, 0);
  }
  const cmx__cgraph* gp = shapeless ? (traced ? &g : NULL) : graph_of(got[0]);
  CHECK_MSG(gp && count_ops(gp, &cmx__vt_AddRMSNorm) == fused,
            "variant %d%s: %d AddRMSNorm, expected %d", v,
            shapeless ? " shapeless" : "",
            gp ? count_ops(gp, &cmx__vt_AddRMSNorm) : -1, fused);
  CHECK(ngot == nref);
  for (int i = 0; i < ngot && ngot == nref; i++)
    CHECK_MSG(h_arrays_same_bytes(got[i], ref[i]),
              "variant %d: output %d differs", v, i);
  if (traced) cmx__cgraph_free(&g);
  cmx_arrays_free(got, ngot);
  cmx_arrays_free(ref, nref);
  cmx_compiled_release(cf);
}

static void test_left_alone(void) {
  int64_t s1[1] = {16}, s2[2] = {3, 16};
  cmx_array v1[2] = {rnd(s1, 1, CMX_FLOAT32), rnd(s1, 1, CMX_FLOAT32)};
  cmx_array v2[3] = {rnd(s2, 2, CMX_FLOAT32), rnd(s2, 2, CMX_FLOAT32),
                     rnd(s1, 1, CMX_FLOAT32)};
  check_odd(0, false, v1, 2, 0); /* the sum is the weight too */
  check_odd(1, false, v2, 2, 1); /* two norms of one sum: one fuses */
  check_odd(2, false, v2, 3, 1); /* fused at the Add's place */
  check_odd(1, true, v2, 2, 0);  /* shapeless */
  /* float64: rms_norm is its composite (no RMSNorm node) */
  cmx_array d[2] = {NULL, NULL};
  OK(cmx_astype(&d[0], v2[0], CMX_FLOAT64, S));
  OK(cmx_astype(&d[1], v2[1], CMX_FLOAT64, S));
  check_odd(1, false, d, 2, 0);
  /* switched off */
  setenv("CMX_COMPILE_ADD_RMS_NORM", "0", 1);
  check_odd(2, false, v2, 3, 0);
  unsetenv("CMX_COMPILE_ADD_RMS_NORM");
  cmx_array_release_all(
      (cmx_array[]){v1[0], v1[1], v2[0], v2[1], v2[2], d[0], d[1]}, 7);
}

/* ---------------- equal and hash ---------------- */

static void test_equal_hash(void) {
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.eps = 1e-5f;
  q.has_weight = 1;
  cmx_primitive* a = cmx_primitive_new(&cmx__vt_AddRMSNorm, &q, sizeof q, S);
  cmx_primitive* b = cmx_primitive_new(&cmx__vt_AddRMSNorm, &q, sizeof q, S);
  q.eps = 1e-6f;
  cmx_primitive* c = cmx_primitive_new(&cmx__vt_AddRMSNorm, &q, sizeof q, S);
  q.eps = 1e-5f;
  q.has_weight = 0;
  cmx_primitive* d = cmx_primitive_new(&cmx__vt_AddRMSNorm, &q, sizeof q, S);
  q.has_weight = 1;
  cmx_primitive* n = cmx_primitive_new(&cmx__vt_RMSNorm, &q, sizeof q, S);
  CHECK(cmx_primitive_equal(a, b) &&
        cmx_primitive_hash(a) == cmx_primitive_hash(b));
  CHECK(!cmx_primitive_equal(a, c) && !cmx_primitive_equal(a, d));
  CHECK(!cmx_primitive_equal(a, n)); /* another kind, the same bytes */
  char desc[64];
  cmx_primitive_describe(a, desc, sizeof desc);
  CHECK_MSG(!strcmp(desc, "AddRMSNorm(eps=1e-05)"), "%s", desc);
  CHECK(cmx_primitive_has_kernel(&cmx__vt_AddRMSNorm, CMX_CPU) &&
        cmx_primitive_has_kernel(&cmx__vt_AddRMSNorm, CMX_GPU));
  cmx_primitive* all[5] = {a, b, c, d, n};
  for (int i = 0; i < 5; i++) cmx_primitive_release(all[i]);
}

int main(void) {
  for (int dev = 0; dev < h_ndevices(); dev++) {
    g_s = h_stream(dev);
    OK(cmx_set_default_device(h_device(dev)));
    RUN(test_block);
    RUN(test_layouts);
    RUN(test_left_alone);
  }
  OK(cmx_set_default_device(cmx_device_cpu()));
  g_s = cmx_stream_on(cmx_device_cpu());
  RUN(test_equal_hash);
  return test_summary("test_compile_add_norm");
}
