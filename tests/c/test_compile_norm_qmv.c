/* compile's norm_qmm pass and the AddRMSNormQuantizedMatmul primitive it
 * makes (compile/norm_qmm.c, primitives/quantized.h):
 * - a decoding layer's residual add, RMSNorm and the one-row quantized
 *   projection reading the norm (plain: the fused qkv projection; swiglu:
 *   gate_up then silu(first half) * second half) compiles to a graph with
 *   one AddRMSNormQuantizedMatmul and no AddRMSNorm, QuantizedMatmul or
 *   QuantizedMatmulSwiGLU, for D 576 and 960 (SmolLM2-135M's and -360M's
 *   shapes), float32, float16 and bfloat16, 4 and 8 bits, groups of 32
 *   and 64; both outputs (h and the product) equal, bit for bit, the
 *   uncompiled function's and the function compiled with the pass off
 *   (AddRMSNorm then the product's own kernel);
 * - the same for shapes that take the GPU kernel's other launches: K 2560
 *   (96 threads a block playing AddRMSNorm's 128), K 4096 float32 (256 by
 *   128), N 2048 (two weight rows a block), N 16384 (past the fused
 *   launch's blocks: two launches), a batch of 2 rows, no norm
 *   weight, a strided r (element loads), h read by an op traced between
 *   the norm and the product (the fused op then takes the norm's place),
 *   and on a GPU CMX_CUDA_QMV=fast and CMX_QMM_PATH=tiled (the two-launch
 *   path);
 * - the pass stays out where it must: y also a graph output, x of 3 rows,
 *   weights not transposed, shapeless traces, CMX_COMPILE_NORM_QMV=0 or
 *   unset (the pass is opt-in: the tests set it to 1);
 * - the primitive's output_shapes, equal, hash, description and coverage.
 * Every case runs on each device (devices.h). */
#include <stdlib.h>

#include "compile/compile_internal.h"
#include "devices.h"
#include "compile_util.h"
#include "primitives/quantized.h"
#include "primitives/registry.h"
#include "rand_array.h"
#include "test.h"

static cmx_stream g_s;
#define S g_s

static uint64_t g_rng = 0x6a09e667f3bcc908ull;

/* A random array of the shape in dtype dt on S, values in [-scale,
 * scale). */
static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt, float scale) {
  return rand_array(&g_rng, shape, nd, dt, scale, S);
}

/* The number of distinct values among a's elements (as float32): a result
 * of zeros or of one repeated value would make the comparisons weak. */
static int distinct(cmx_array a) {
  cmx_array f = NULL;
  OK(cmx_astype(&f, a, CMX_FLOAT32, S));
  int64_t n = cmx_array_size(f);
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  int d = 0;
  if (cmx_array_copy_to(f, v, (size_t)n * sizeof *v) == CMX_OK)
    for (int64_t i = 0; i < n && d < 3; i++) {
      bool seen = false;
      for (int64_t j = 0; j < i && !seen && j < 64; j++) seen = v[j] == v[i];
      d += !seen;
    }
  free(v);
  cmx_array_release(f);
  return d;
}

/* ---------------- the layer ---------------- */

/* What layer_fn builds (payload). */
typedef struct {
  int g, bits;
  bool swiglu;    /* the product's halves through silu-mul */
  bool weight;    /* the norm has a weight (in[2]) */
  bool strided_r; /* r is in[1][..., ::2] */
  bool h_first;   /* outputs {h * 2, o}: h read before the product */
  bool y_out;     /* y also returned */
  bool no_trans;  /* weights stored (K, N), transpose false */
} layer_cfg;

/* in = {x (..., 1, D), r (x's shape, or twice as long: strided_r), w (D),
 * wq, scales, biases}: h = x + r; y = rms_norm(h, w); o = y @ W.T, or
 * silu(o[..., :n]) * o[..., n:] (swiglu); returns {o, h} ({h * 2, o} when
 * h_first), and y when y_out. */
static cmx_status layer_fn(void* payload, const cmx_array* in, int n,
                           cmx_array** out, int* nout) {
  (void)n;
  const layer_cfg* c = payload;
  cmx_array r = NULL, h = NULL, y = NULL, o = NULL, a = NULL, b = NULL,
            s = NULL, t = NULL, h2 = NULL, two = NULL;
  cmx_status st = CMX_OK;
  if (c->strided_r) {
    int nd = cmx_array_ndim(in[1]);
    int64_t s0[8] = {0}, s1[8], s2[8];
    for (int d = 0; d < nd; d++) s1[d] = cmx_array_shape(in[1])[d], s2[d] = 1;
    s2[nd - 1] = 2;
    st = cmx_slice(&r, in[1], s0, s1, s2, S);
  } else {
    r = cmx_array_retain(in[1]);
  }
  if (st == CMX_OK) st = cmx_add(&h, in[0], r, S);
  if (st == CMX_OK && c->h_first) {
    st = cmx_array_weak_float(&two, 2.0);
    if (st == CMX_OK) st = cmx_multiply(&h2, h, two, S);
  }
  if (st == CMX_OK)
    st = cmx_fast_rms_norm(&y, h, c->weight ? in[2] : NULL, 1e-5f, S);
  if (st == CMX_OK)
    st = cmx_quantized_matmul(&o, y, in[3], in[4], in[5], !c->no_trans, c->g,
                              c->bits, "affine", S);
  if (st == CMX_OK && c->swiglu) {
    int nd = cmx_array_ndim(o);
    int64_t start[8] = {0}, stop[8], step[8];
    for (int d = 0; d < nd; d++) stop[d] = cmx_array_shape(o)[d], step[d] = 1;
    int64_t N = stop[nd - 1];
    stop[nd - 1] = N / 2;
    st = cmx_slice(&a, o, start, stop, step, S);
    start[nd - 1] = N / 2;
    stop[nd - 1] = N;
    if (st == CMX_OK) st = cmx_slice(&b, o, start, stop, step, S);
    if (st == CMX_OK) st = cmx_sigmoid(&s, a, S);
    if (st == CMX_OK) st = cmx_multiply(&t, a, s, S);
    cmx_array_release(o);
    o = NULL;
    if (st == CMX_OK) st = cmx_multiply(&o, t, b, S);
  }
  if (st == CMX_OK) {
    *out = malloc(3 * sizeof **out);
    (*out)[0] = c->h_first ? cmx_array_retain(h2) : cmx_array_retain(o);
    (*out)[1] = c->h_first ? cmx_array_retain(o) : cmx_array_retain(h);
    *nout = 2;
    if (c->y_out) (*out)[(*nout)++] = cmx_array_retain(y);
  }
  cmx_array_release_all((cmx_array[]){r, h, y, o, a, b, s, t, h2, two}, 10);
  return st;
}

/* The layer's inputs: x (B, 1, D) or (1, M, D) when M > 1 (B 0: (1, D)),
 * r (x's shape, the last axis twice as long when strided), w (D), and W
 * (N, D) quantized ((D, N) when not transposed), all of dtype dt; in[6]. */
static void make_inputs(cmx_array* in, int64_t B, int64_t M, int64_t D,
                        int64_t N, cmx_dtype dt, const layer_cfg* c) {
  int64_t xs[3] = {B ? B : 1, M, D}, rs[3] = {B ? B : 1, M, 2 * D}, vs[1] = {D},
          ws[2] = {N, D}, wn[2] = {D, N};
  int nd = B ? 3 : 2;
  const int64_t* xshape = B ? xs : xs + 1;
  const int64_t* rshape = B ? rs : rs + 1;
  in[0] = rnd(xshape, nd, dt, 2.0f);
  in[1] = rnd(c->strided_r ? rshape : xshape, nd, dt, 2.0f);
  in[2] = rnd(vs, 1, dt, 1.5f);
  /* weights ~ 1/sqrt(D): the product stays near 1 (silu's curved part) */
  cmx_array w = rnd(c->no_trans ? wn : ws, 2, dt, 2.0f / 24.0f);
  OK(cmx_quantize(&in[3], &in[4], &in[5], w, c->g, c->bits, "affine", S));
  OK(cmx_array_eval(in[3]));
  cmx_array_release(w);
}

/* Compiles layer_fn (cfg) on in, calls it; checks the fused op count (1
 * fused: the graph has it and none of the ops it replaces; 0: it has
 * AddRMSNorm and the product), and every output against the uncompiled
 * function's and the compiled one's with the pass off. */
static void check_layer(const char* what, const layer_cfg* cfg,
                        const cmx_array* in, int fused, bool shapeless) {
  char dev[16];
  h_device_name(S.device.type == CMX_CPU ? 0 : S.device.index + 1, dev,
                sizeof dev);
  char tag[160];
  snprintf(tag, sizeof tag, "%s %s %s bits %d g %d%s", dev, what,
           cmx_dtype_name(cmx_array_dtype(in[0])), cfg->bits, cfg->g,
           cfg->swiglu ? " swiglu" : "");
  cmx_array* ref = NULL;
  int nref = 0;
  OK(layer_fn((void*)cfg, in, 6, &ref, &nref));
  cmx_compile_options opt = {.shapeless = shapeless};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){layer_fn, (void*)cfg}, &opt));
  cmx_array* got = NULL;
  int ngot = 0;
  OK(cmx_compiled_call(cf, in, 6, &got, &ngot));
  /* the pass turned off (another payload: compile keys its traces by the
   * closure) */
  layer_cfg cfg0 = *cfg;
  setenv("CMX_COMPILE_NORM_QMV", "0", 1);
  cmx_compiled* cf0 = NULL;
  OK(cmx_compile(&cf0, (cmx_closure){layer_fn, &cfg0}, &opt));
  cmx_array* off = NULL;
  int noff = 0;
  OK(cmx_compiled_call(cf0, in, 6, &off, &noff));
  setenv("CMX_COMPILE_NORM_QMV", "1", 1);
  if (!shapeless) {
    const cmx__cgraph* g = ngot ? graph_of(got[0]) : NULL;
    const cmx__cgraph* g0 = noff ? graph_of(off[0]) : NULL;
    const cmx_primitive_vtable* qvt =
        cfg->swiglu ? &cmx__vt_QuantizedMatmulSwiGLU : &cmx__vt_QuantizedMatmul;
    int nf = count_ops(g, &cmx__vt_AddRMSNormQuantizedMatmul);
    CHECK_MSG(g && nf == fused &&
                  count_ops(g, &cmx__vt_AddRMSNorm) == 1 - fused &&
                  count_ops(g, qvt) == 1 - fused,
              "%s: %d AddRMSNormQuantizedMatmul, %d AddRMSNorm, %d %s; "
              "expected %d fused",
              tag, g ? nf : -1, count_ops(g, &cmx__vt_AddRMSNorm),
              count_ops(g, qvt), qvt->name, fused);
    CHECK_MSG(g0 && count_ops(g0, &cmx__vt_AddRMSNormQuantizedMatmul) == 0,
              "%s: CMX_COMPILE_NORM_QMV=0 did not keep the pass off", tag);
  }
  CHECK_MSG(ngot == nref && noff == nref, "%s: %d, %d, %d outputs", tag, ngot,
            nref, noff);
  for (int i = 0; i < ngot && ngot == nref && noff == nref; i++) {
    CHECK_MSG(h_arrays_same_bytes(got[i], ref[i]),
              "%s: output %d differs from uncompiled", tag, i);
    CHECK_MSG(h_arrays_same_bytes(got[i], off[i]),
              "%s: output %d differs from the pass off", tag, i);
    CHECK_MSG(distinct(got[i]) >= 3, "%s: output %d nearly constant", tag, i);
  }
  cmx_arrays_free(got, ngot);
  cmx_arrays_free(off, noff);
  cmx_arrays_free(ref, nref);
  cmx_compiled_release(cf);
  cmx_compiled_release(cf0);
}

/* One configuration on fresh inputs (x (B, 1, D); B 0: (1, D)). */
static void run_layer(const char* what, layer_cfg c, int64_t B, int64_t D,
                      int64_t N, cmx_dtype dt, int fused) {
  cmx_array in[6];
  make_inputs(in, B, 1, D, N, dt, &c);
  check_layer(what, &c, in, fused, false);
  cmx_array_release_all(in, 6);
}

/* SmolLM2-135M's and -360M's decoding shapes, every dtype, bit width and
 * group size, both consumers. */
static void test_decoding(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  /* {D, N of qkv, N of gate_up (two halves)} */
  int64_t shapes[2][3] = {{576, 960, 3072}, {960, 1600, 5120}};
  int gs[2] = {32, 64}, bitss[2] = {4, 8};
  for (int k = 0; k < 3; k++)
    for (int sh = 0; sh < 2; sh++)
      for (int gi = 0; gi < 2; gi++)
        for (int bi = 0; bi < 2; bi++)
          for (int sg = 0; sg < 2; sg++) {
            layer_cfg c = {.g = gs[gi],
                           .bits = bitss[bi],
                           .swiglu = sg == 1,
                           .weight = true};
            char what[64];
            snprintf(what, sizeof what, "D %lld", (long long)shapes[sh][0]);
            run_layer(what, c, 1, shapes[sh][0], shapes[sh][1 + sg], dts[k], 1);
          }
}

/* The GPU kernel's other launches (and the same checks on the CPU). */
static void test_launches(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  bool gpu = S.device.type == CMX_GPU;
  for (int k = 0; k < 3; k++) {
    cmx_dtype dt = dts[k];
    layer_cfg c = {.g = 64, .bits = 4, .weight = true};
    run_layer("K 2560", c, 1, 2560, 256, dt, 1);
    run_layer("N 2048", c, 1, 576, 2048, dt, 1);
    /* 8192 blocks: on a GPU the two launches (NORM_QMV_MAX_BLOCKS) */
    run_layer("N 16384", c, 1, 576, 16384, dt, 1);
    run_layer("batch 2", c, 2, 576, 192, dt, 1);
    c.swiglu = true;
    run_layer("batch 2", c, 2, 576, 384, dt, 1);
    run_layer("K 4096", c, 1, 4096, 128, dt, 1);
    c.swiglu = false;
    c.weight = false;
    run_layer("no weight", c, 1, 576, 960, dt, 1);
    c.weight = true;
    c.strided_r = true;
    run_layer("strided r", c, 1, 576, 960, dt, 1);
    c.strided_r = false;
    /* x (1, D): the weights need no broadcast, defined before the norm */
    c.h_first = true;
    run_layer("h read first", c, 0, 576, 960, dt, 1);
    c.h_first = false;
    c.bits = 3; /* values across words */
    c.g = 32;
    run_layer("3 bits", c, 1, 576, 960, dt, 1);
    if (gpu) { /* the two-launch path: the same bits */
      c.bits = 4;
      setenv("CMX_CUDA_QMV", "fast", 1);
      run_layer("CMX_CUDA_QMV=fast", c, 1, 576, 960, dt, 1);
      unsetenv("CMX_CUDA_QMV");
      setenv("CMX_QMM_PATH", "tiled", 1);
      run_layer("CMX_QMM_PATH=tiled", c, 1, 576, 960, dt, 1);
      unsetenv("CMX_QMM_PATH");
      setenv("CMX_CUDA_QMV", "r2", 1); /* cmx_qmv1n at N 960 */
      run_layer("CMX_CUDA_QMV=r2", c, 1, 576, 960, dt, 1);
      unsetenv("CMX_CUDA_QMV");
    }
  }
}

/* ---------------- where the pass stays out ---------------- */

static void test_left_alone(void) {
  layer_cfg c = {.g = 32, .bits = 4, .weight = true};
  cmx_array in[6];
  make_inputs(in, 1, 1, 64, 128, CMX_FLOAT32, &c);
  check_layer("fused", &c, in, 1, false);
  c.y_out = true; /* y read elsewhere */
  check_layer("y returned", &c, in, 0, false);
  c.y_out = false;
  check_layer("shapeless", &c, in, 0, true);
  setenv("CMX_COMPILE_NORM_QMV", "0", 1);
  check_layer("switched off", &c, in, 0, false);
  unsetenv("CMX_COMPILE_NORM_QMV"); /* the default: off (opt-in pass) */
  check_layer("by default", &c, in, 0, false);
  setenv("CMX_COMPILE_NORM_QMV", "1", 1);
  check_layer("switched on again", &c, in, 1, false);
  cmx_array_release_all(in, 6);
  /* x of 3 rows: not the mat-vec shape */
  make_inputs(in, 1, 3, 64, 128, CMX_FLOAT32, &c);
  check_layer("three rows", &c, in, 0, false);
  cmx_array_release_all(in, 6);
  /* W stored (K, N): not the transposed product */
  c.no_trans = true;
  make_inputs(in, 1, 1, 64, 128, CMX_FLOAT32, &c);
  check_layer("not transposed", &c, in, 0, false);
  cmx_array_release_all(in, 6);
}

/* ---------------- the primitive ---------------- */

static cmx_primitive* norm_qmm(float eps, int has_weight, int bits,
                               int swiglu) {
  cmx__norm_qmm_params q;
  memset(&q, 0, sizeof q);
  q.norm.eps = eps;
  q.norm.has_weight = has_weight;
  q.q = (cmx__quant_params){.group_size = 32, .bits = bits, .transpose = 1};
  q.swiglu = swiglu;
  return cmx_primitive_new(&cmx__vt_AddRMSNormQuantizedMatmul, &q, sizeof q, S);
}

static void test_primitive(void) {
  cmx_primitive* a = norm_qmm(1e-5f, 1, 4, 0);
  cmx_primitive* b = norm_qmm(1e-5f, 1, 4, 0);
  cmx_primitive* others[4] = {
      norm_qmm(1e-6f, 1, 4, 0), norm_qmm(1e-5f, 0, 4, 0),
      norm_qmm(1e-5f, 1, 8, 0), norm_qmm(1e-5f, 1, 4, 1)};
  CHECK(cmx_primitive_equal(a, b) &&
        cmx_primitive_hash(a) == cmx_primitive_hash(b));
  for (int i = 0; i < 4; i++)
    CHECK_MSG(!cmx_primitive_equal(a, others[i]), "parameter set %d", i);
  char desc[128];
  cmx_primitive_describe(others[3], desc, sizeof desc);
  CHECK_MSG(!strcmp(desc,
                    "AddRMSNormQuantizedMatmul(eps=1e-05, weight, "
                    "group_size=32, bits=4, swiglu)"),
            "%s", desc);
  CHECK(cmx_primitive_has_kernel(&cmx__vt_AddRMSNormQuantizedMatmul, CMX_CPU) &&
        cmx_primitive_has_kernel(&cmx__vt_AddRMSNormQuantizedMatmul, CMX_GPU));
  /* output_shapes: h (1, 64); o (1, 96), halved by swiglu; the
   * inputs without a weight; an odd product for swiglu; missing inputs */
  layer_cfg c = {.g = 32, .bits = 4, .weight = true};
  cmx_array in[6];
  make_inputs(in, 0, 1, 64, 96, CMX_FLOAT32, &c);
  cmx_shape sh[2];
  const cmx_primitive_vtable* vt = &cmx__vt_AddRMSNormQuantizedMatmul;
  OK(vt->output_shapes(a, in, 6, sh, 2));
  CHECK(sh[0].ndim == 2 && sh[0].dims[0] == 1 && sh[0].dims[1] == 64 &&
        sh[1].ndim == 2 && sh[1].dims[0] == 1 && sh[1].dims[1] == 96);
  OK(vt->output_shapes(others[3], in, 6, sh, 2));
  CHECK(sh[1].ndim == 2 && sh[1].dims[1] == 48);
  const cmx_array nw[5] = {in[0], in[1], in[3], in[4], in[5]};
  OK(vt->output_shapes(others[1], nw, 5, sh, 2));
  CHECK(sh[1].dims[1] == 96);
  CHECK(vt->output_shapes(a, nw, 5, sh, 2) != CMX_OK);
  cmx__error_reset_pending();
  cmx_array w3 = NULL; /* 3 rows: an odd product */
  int64_t s0[2] = {0, 0}, s1[2] = {3, cmx_array_shape(in[3])[1]},
          st[2] = {1, 1};
  OK(cmx_slice(&w3, in[3], s0, s1, st, S));
  const cmx_array odd[6] = {in[0], in[1], in[2], w3, in[4], in[5]};
  CHECK(vt->output_shapes(others[3], odd, 6, sh, 2) != CMX_OK);
  cmx__error_reset_pending();
  cmx_array_release(w3);
  cmx_array_release_all(in, 6);
  cmx_primitive_release(a);
  cmx_primitive_release(b);
  for (int i = 0; i < 4; i++) cmx_primitive_release(others[i]);
}

int main(void) {
  setenv("CMX_COMPILE_NORM_QMV", "1", 1); /* the pass is opt-in */
  for (int dev = 0; dev < h_ndevices(); dev++) {
    g_s = h_stream(dev);
    OK(cmx_set_default_device(h_device(dev)));
    RUN(test_decoding);
    RUN(test_launches);
    RUN(test_left_alone);
  }
  OK(cmx_set_default_device(cmx_device_cpu()));
  g_s = cmx_stream_on(cmx_device_cpu());
  RUN(test_primitive);
  return test_summary("test_compile_norm_qmv");
}
