/* compile's qmm_swiglu pass and the QuantizedMatmulSwiGLU primitive it
 * makes (compile/qmm_swiglu.c, primitives/quantized.h):
 * - an MLP-like function (a quantized gate_up projection of one row of x,
 *   silu of its first half times its second half, as examples/llm's MLP)
 *   compiles to a graph with one QuantizedMatmulSwiGLU and no
 *   QuantizedMatmul, and its result equals, bit for bit, the uncompiled
 *   function's and the function compiled with the pass off, for float32,
 *   float16 and bfloat16 x, 4 and 8 bits, groups of 32 and 64, on
 *   SmolLM2's shape (K 576, N 3072) and a small one (K 64, N 128: on a
 *   GPU the other mat-vec kernel of QuantizedMatmul, one row a block), a
 *   batch of 2 rows of one row each, and the products' operands swapped;
 *   on a GPU also with CMX_CUDA_QMV=fast (the other sums);
 * - the pass stays out where it must: a slice or the silu product also
 *   read elsewhere (a graph output), y itself an output, x of several
 *   rows, other slices (not the two halves), Sigmoid of the second half,
 *   shapeless traces, CMX_COMPILE_SWIGLU=0;
 * - the primitive's output_shapes, equal, hash, description and coverage.
 * Every case runs on each device (devices.h). */
#include <stdlib.h>

#include "compile/compile_internal.h"
#include "devices.h"
#include "compile_util.h"
#include "primitives/quantized.h"
#include "primitives/registry.h"
#include "test.h"

static cmx_stream g_s;
#define S g_s

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static float frand(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 4.f - 2.f;
}

/* A random array of the shape in dtype dt (made as float32, converted),
 * times scale. */
static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt, float scale) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = frand() * scale;
  cmx_array a = NULL, b = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
  free(v);
  OK(cmx_astype(&b, a, dt, S));
  OK(cmx_array_eval(b));
  cmx_array_release(a);
  return b;
}

/* Whether any element of a is nonzero (the chain is not trivially 0). */
static bool any_nonzero(cmx_array a) {
  cmx_array f = NULL;
  OK(cmx_astype(&f, a, CMX_FLOAT32, S));
  int64_t n = cmx_array_size(f);
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  bool nz = false;
  if (cmx_array_copy_to(f, v, (size_t)n * sizeof *v) == CMX_OK)
    for (int64_t i = 0; i < n && !nz; i++) nz = v[i] != 0;
  free(v);
  cmx_array_release(f);
  return nz;
}

/* ---------------- the MLP ---------------- */

/* What mlp_fn builds (payload). */
typedef struct {
  int g, bits;
  bool swap;  /* Multiply(s, a) and Multiply(b, t) */
  int extra;  /* 0 none; 1 a also returned; 2 t also returned; 3 y also
                 returned; 4 b also returned */
  int slices; /* 0 the halves; 1 y[..., 1:n+1] and y[..., n+1:]; 2
                 sigmoid of the second half */
} mlp_cfg;

/* in = {x (..., 1, K), wq, scales, biases}: y = x @ W.T (N columns);
 * a, b = y's halves; out = silu(a) * b as nn.silu traces it (a *
 * sigmoid(a)), plus cfg->extra's value. */
static cmx_status mlp_fn(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)n;
  const mlp_cfg* c = payload;
  cmx_array y = NULL, a = NULL, b = NULL, s = NULL, t = NULL, o = NULL;
  cmx_status st = cmx_quantized_matmul(&y, in[0], in[1], in[2], in[3], true,
                                       c->g, c->bits, "affine", S);
  if (st == CMX_OK) {
    int nd = cmx_array_ndim(y);
    int64_t start[8] = {0}, stop[8], step[8];
    for (int d = 0; d < nd; d++) stop[d] = cmx_array_shape(y)[d], step[d] = 1;
    int64_t N = stop[nd - 1], h = N / 2, off = c->slices == 1 ? 1 : 0;
    stop[nd - 1] = h + off;
    start[nd - 1] = off;
    st = cmx_slice(&a, y, start, stop, step, S);
    start[nd - 1] = h + off;
    stop[nd - 1] = N;
    if (st == CMX_OK) st = cmx_slice(&b, y, start, stop, step, S);
    if (st == CMX_OK && c->slices == 1) { /* shapes equal again: b's n - 1 */
      cmx_array a2 = NULL;
      int64_t s0[8] = {0}, s1[8];
      for (int d = 0; d < nd; d++) s1[d] = cmx_array_shape(b)[d];
      st = cmx_slice(&a2, a, s0, s1, step, S);
      cmx_array_release(a);
      a = a2;
    }
    if (st == CMX_OK) st = cmx_sigmoid(&s, c->slices == 2 ? b : a, S);
    if (st == CMX_OK)
      st = c->swap ? cmx_multiply(&t, s, a, S) : cmx_multiply(&t, a, s, S);
    if (st == CMX_OK)
      st = c->swap ? cmx_multiply(&o, b, t, S) : cmx_multiply(&o, t, b, S);
  }
  cmx_array keep = c->extra == 1   ? a
                   : c->extra == 2 ? t
                   : c->extra == 3 ? y
                   : c->extra == 4 ? b
                                   : NULL;
  if (st == CMX_OK) {
    *out = malloc(2 * sizeof **out);
    (*out)[0] = o;
    *nout = 1;
    if (keep) (*out)[(*nout)++] = cmx_array_retain(keep);
    o = NULL;
  }
  cmx_array_release_all((cmx_array[]){y, a, b, s, t, o}, 6);
  return st;
}

/* x (batch, M, K) or (M, K) when batch is 0, and W (N, K) quantized, in
 * dtype dt (scales and biases too); in[4]. */
static void make_inputs(cmx_array* in, int64_t batch, int64_t M, int64_t K,
                        int64_t N, cmx_dtype dt, int g, int bits) {
  int64_t xs[3] = {batch, M, K}, ws[2] = {N, K};
  in[0] = batch ? rnd(xs, 3, dt, 1.0f) : rnd(xs + 1, 2, dt, 1.0f);
  /* weights ~ 1/sqrt(K) so y stays in silu's interesting range */
  cmx_array w = rnd(ws, 2, dt, 2.0f / 24.0f);
  OK(cmx_quantize(&in[1], &in[2], &in[3], w, g, bits, "affine", S));
  OK(cmx_array_eval(in[1]));
  cmx_array_release(w);
}

/* Compiles mlp_fn (cfg) on in, calls it; checks the fused op count, and
 * every output against the uncompiled function's and (when a pass-off
 * reference is asked) against the compiled one with the pass off. */
static void check_mlp(const char* what, const mlp_cfg* cfg, const cmx_array* in,
                      int fused, bool shapeless) {
  char dev[16];
  h_device_name(S.device.type == CMX_CPU ? 0 : S.device.index + 1, dev,
                sizeof dev);
  cmx_array* ref = NULL;
  int nref = 0;
  OK(mlp_fn((void*)cfg, in, 4, &ref, &nref));
  cmx_compile_options opt = {.shapeless = shapeless};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){mlp_fn, (void*)cfg}, &opt));
  cmx_array* got = NULL;
  int ngot = 0;
  OK(cmx_compiled_call(cf, in, 4, &got, &ngot));
  /* the pass turned off: the graph the fused op replaces (another
   * payload: compile keys its traces by the closure) */
  mlp_cfg cfg0 = *cfg;
  setenv("CMX_COMPILE_SWIGLU", "0", 1);
  cmx_compiled* cf0 = NULL;
  OK(cmx_compile(&cf0, (cmx_closure){mlp_fn, &cfg0}, &opt));
  cmx_array* off = NULL;
  int noff = 0;
  OK(cmx_compiled_call(cf0, in, 4, &off, &noff));
  unsetenv("CMX_COMPILE_SWIGLU");
  if (!shapeless) {
    const cmx__cgraph* g = ngot ? graph_of(got[0]) : NULL;
    const cmx__cgraph* g0 = noff ? graph_of(off[0]) : NULL;
    int nf = count_ops(g, &cmx__vt_QuantizedMatmulSwiGLU);
    CHECK_MSG(
        g && nf == fused && count_ops(g, &cmx__vt_QuantizedMatmul) == 1 - fused,
        "%s %s %s bits %d g %d: %d QuantizedMatmulSwiGLU, expected %d", dev,
        what, cmx_dtype_name(cmx_array_dtype(in[0])), cfg->bits, cfg->g,
        g ? nf : -1, fused);
    CHECK_MSG(g0 && count_ops(g0, &cmx__vt_QuantizedMatmulSwiGLU) == 0 &&
                  count_ops(g0, &cmx__vt_QuantizedMatmul) == 1,
              "%s %s: CMX_COMPILE_SWIGLU=0 did not keep the pass off (%p "
              "%d %d)",
              dev, what, (const void*)g0,
              count_ops(g0, &cmx__vt_QuantizedMatmulSwiGLU),
              count_ops(g0, &cmx__vt_QuantizedMatmul));
  }
  CHECK(ngot == nref && noff == nref);
  for (int i = 0; i < ngot && ngot == nref && noff == nref; i++) {
    CHECK_MSG(h_arrays_same_bytes(got[i], ref[i]),
              "%s %s %s bits %d g %d: output %d differs from uncompiled", dev,
              what, cmx_dtype_name(cmx_array_dtype(in[0])), cfg->bits, cfg->g,
              i);
    CHECK_MSG(h_arrays_same_bytes(got[i], off[i]),
              "%s %s %s bits %d g %d: output %d differs from the pass off", dev,
              what, cmx_dtype_name(cmx_array_dtype(in[0])), cfg->bits, cfg->g,
              i);
  }
  if (ngot) CHECK_MSG(any_nonzero(got[0]), "%s %s: all zeros", dev, what);
  cmx_arrays_free(got, ngot);
  cmx_arrays_free(off, noff);
  cmx_arrays_free(ref, nref);
  cmx_compiled_release(cf);
  cmx_compiled_release(cf0);
}

static void test_mlp(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  /* {batch, K, N}: SmolLM2's gate_up (x (1, 1, 576), 2 x 1536 rows), a
   * small one, a 2-d x, a batch of 2 */
  int64_t shapes[4][3] = {
      {1, 576, 3072}, {1, 64, 128}, {0, 128, 256}, {2, 64, 192}};
  int gs[2] = {32, 64}, bitss[2] = {4, 8};
  bool gpu = S.device.type == CMX_GPU;
  for (int k = 0; k < 3; k++)
    for (int sh = 0; sh < 4; sh++)
      for (int gi = 0; gi < 2; gi++)
        for (int bi = 0; bi < 2; bi++) {
          int64_t B = shapes[sh][0], K = shapes[sh][1], N = shapes[sh][2];
          cmx_array in[4];
          make_inputs(in, B, 1, K, N, dts[k], gs[gi], bitss[bi]);
          mlp_cfg c = {.g = gs[gi], .bits = bitss[bi], .swap = sh == 1};
          char what[64];
          snprintf(what, sizeof what, "(%lld, 1, %lld) N %lld", (long long)B,
                   (long long)K, (long long)N);
          check_mlp(what, &c, in, 1, false);
          if (gpu && sh < 2) { /* the other GPU sums, the same on both */
            setenv("CMX_CUDA_QMV", "fast", 1);
            check_mlp("CMX_CUDA_QMV=fast", &c, in, 1, false);
            unsetenv("CMX_CUDA_QMV");
          }
          cmx_array_release_all(in, 4);
        }
}

/* ---------------- where the pass stays out ---------------- */

static void test_left_alone(void) {
  cmx_array in[4];
  make_inputs(in, 1, 1, 64, 128, CMX_FLOAT32, 32, 4);
  mlp_cfg c = {.g = 32, .bits = 4};
  for (c.extra = 1; c.extra <= 4; c.extra++) /* a, t, y, b read elsewhere */
    check_mlp("extra output", &c, in, 0, false);
  c.extra = 0;
  c.slices = 1; /* not the halves */
  check_mlp("other slices", &c, in, 0, false);
  c.slices = 2; /* silu of the second half */
  check_mlp("sigmoid of b", &c, in, 0, false);
  c.slices = 0;
  check_mlp("shapeless", &c, in, 0, true);
  setenv("CMX_COMPILE_SWIGLU", "0", 1);
  check_mlp("switched off", &c, in, 0, false);
  unsetenv("CMX_COMPILE_SWIGLU");
  check_mlp("switched on again", &c, in, 1, false);
  cmx_array_release_all(in, 4);
  /* x of 3 rows: not the mat-vec shape the kernel takes */
  make_inputs(in, 1, 3, 64, 128, CMX_FLOAT32, 32, 4);
  check_mlp("three rows", &c, in, 0, false);
  cmx_array_release_all(in, 4);
}

/* ---------------- the primitive ---------------- */

static void test_primitive(void) {
  cmx__quant_params q = {.group_size = 32, .bits = 4, .transpose = 1};
  cmx_primitive* a =
      cmx_primitive_new(&cmx__vt_QuantizedMatmulSwiGLU, &q, sizeof q, S);
  cmx_primitive* b =
      cmx_primitive_new(&cmx__vt_QuantizedMatmulSwiGLU, &q, sizeof q, S);
  q.bits = 8;
  cmx_primitive* c =
      cmx_primitive_new(&cmx__vt_QuantizedMatmulSwiGLU, &q, sizeof q, S);
  q.bits = 4;
  cmx_primitive* m =
      cmx_primitive_new(&cmx__vt_QuantizedMatmul, &q, sizeof q, S);
  CHECK(cmx_primitive_equal(a, b) &&
        cmx_primitive_hash(a) == cmx_primitive_hash(b));
  CHECK(!cmx_primitive_equal(a, c) && !cmx_primitive_equal(a, m));
  char desc[96];
  cmx_primitive_describe(a, desc, sizeof desc);
  CHECK_MSG(!strcmp(desc,
                    "QuantizedMatmulSwiGLU(group_size=32, bits=4, "
                    "transpose)"),
            "%s", desc);
  CHECK(cmx_primitive_has_kernel(&cmx__vt_QuantizedMatmulSwiGLU, CMX_CPU) &&
        cmx_primitive_has_kernel(&cmx__vt_QuantizedMatmulSwiGLU, CMX_GPU));
  /* output_shapes: (1, 192) columns of the product -> 96; odd: error */
  cmx_array in[4];
  make_inputs(in, 0, 1, 64, 192, CMX_FLOAT32, 32, 4);
  cmx_shape sh[1];
  const cmx_primitive_vtable* vt = cmx_primitive_vt(a);
  OK(vt->output_shapes(a, in, 4, sh, 1));
  CHECK(sh[0].ndim == 2 && sh[0].dims[0] == 1 && sh[0].dims[1] == 96);
  cmx_array_release_all(in, 4);
  make_inputs(in, 0, 1, 64, 96, CMX_FLOAT32, 32, 4);
  cmx_array w3 = NULL; /* 3 rows: an odd product */
  int64_t s0[2] = {0, 0}, s1[2] = {3, cmx_array_shape(in[1])[1]},
          st[2] = {1, 1};
  OK(cmx_slice(&w3, in[1], s0, s1, st, S));
  cmx_array in3[4] = {in[0], w3, in[2], in[3]};
  CHECK(vt->output_shapes(a, in3, 4, sh, 1) != CMX_OK);
  cmx__error_reset_pending();
  cmx_array_release(w3);
  cmx_array_release_all(in, 4);
  cmx_primitive* all[4] = {a, b, c, m};
  for (int i = 0; i < 4; i++) cmx_primitive_release(all[i]);
}

int main(void) {
  for (int dev = 0; dev < h_ndevices(); dev++) {
    g_s = h_stream(dev);
    OK(cmx_set_default_device(h_device(dev)));
    RUN(test_mlp);
    RUN(test_left_alone);
  }
  OK(cmx_set_default_device(cmx_device_cpu()));
  g_s = cmx_stream_on(cmx_device_cpu());
  RUN(test_primitive);
  return test_summary("test_compile_swiglu");
}
