/* compile's rope_multi pass and the RoPEMulti primitive it makes
 * (compile/rope_multi.c, primitives/fast.h):
 * - attention's q and k roped at one offset (q (B, 9, L, 64) fully, k
 *   (B, 3, L, 128) on its first 64 features, as SmolLM2's decoding) compile
 *   to one RoPEMulti and no RoPE, and the results equal the uncompiled
 *   ones bit for bit: float32, float16, bfloat16, traditional or not,
 *   base or freqs, a 0-d or a (B) offset, L 1 or 5, q transposed (a
 *   strided view, as a model's reshape + swapaxes makes);
 * - the kernel alone (the primitive applied to arrays) equals RoPE on each
 *   input bit for bit for 2, 3 and 4 inputs of different shapes, strided
 *   and offset views, an empty input, rows of more collapsed dims than the
 *   GPU table holds (its per-input fallback), prefill-sized inputs; on a
 *   GPU also near the CPU's RoPE;
 * - the pass leaves alone what it must: other parameters, other offsets,
 *   a RoPE of a RoPE, a member's output read before the later RoPE,
 *   shapeless traces, float64 (no RoPE node), CMX_COMPILE_ROPE_MULTI=0;
 *   six RoPEs make groups of at most four;
 * - the primitive's equal, hash and description.
 * Every case runs on each device (devices.h): on a GPU the one-launch
 * kernel is checked against that GPU's RoPE kernel, bit for bit too. */
#include <math.h>
#include <stdlib.h>

#include "compile/compile_internal.h"
#include "devices.h"
#include "compile_util.h"
#include "primitives/fast.h"
#include "primitives/registry.h"
#include "test.h"
#include "transforms/transforms_internal.h"

static cmx_stream g_s;
#define S g_s

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static float frand(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 4.f - 2.f;
}

/* A random array of the shape in dtype dt (made as float32, converted). */
static cmx_array rnd(const int64_t* shape, int nd, cmx_dtype dt) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float* v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = frand();
  cmx_array a = NULL, b = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32));
  free(v);
  OK(cmx_astype(&b, a, dt, S));
  OK(cmx_array_eval(b));
  cmx_array_release(a);
  return b;
}

/* int32 offsets: a 0-d array (n 0) or a vector of n. */
static cmx_array offsets(int n, int first) {
  int32_t v[4];
  for (int i = 0; i < 4; i++) v[i] = first + 7 * i;
  int64_t shp[1] = {n};
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, shp, n ? 1 : 0, CMX_INT32));
  return a;
}

/* The largest |a - b| over b's scale (float32 copies of both). */
static double rel_diff(cmx_array a, cmx_array b) {
  cmx_array fa = NULL, fb = NULL;
  OK(cmx_astype(&fa, a, CMX_FLOAT32, cmx_stream_on(cmx_device_cpu())));
  OK(cmx_astype(&fb, b, CMX_FLOAT32, cmx_stream_on(cmx_device_cpu())));
  size_t n = (size_t)cmx_array_size(a);
  float* u = malloc((n + 1) * sizeof *u);
  float* v = malloc((n + 1) * sizeof *v);
  OK(cmx_array_copy_to(fa, u, n * sizeof *u));
  OK(cmx_array_copy_to(fb, v, n * sizeof *v));
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)u[i] - v[i]) / (1.0 + fabs((double)v[i]));
    if (!(d <= m)) m = d; /* NaN counts as the largest */
  }
  free(u);
  free(v);
  cmx_array_release_all((cmx_array[]){fa, fb}, 2);
  return m;
}

static const float BASE = 10000.f;

/* rope(x) with dims, traditional, offset array off, freqs (or base). */
static cmx_status rope(cmx_array* out, cmx_array x, int dims, bool trad,
                       cmx_array off, cmx_array freqs) {
  return cmx_fast_rope(out, x, dims, trad, freqs ? NULL : &BASE, 1.0f, 0, off,
                       freqs, S);
}

/* ---------------- q and k ---------------- */

typedef struct {
  bool trad;
  bool transposed; /* q given as (B, L, 9, 64): swapaxes to (B, 9, L, 64) */
} qk_opts;

/* in = {q, k, offset, [freqs]}: {rope(q, 64), rope(k, 64)} (k's last 64
 * features pass through). */
static cmx_status qk_fn(void* payload, const cmx_array* in, int n,
                        cmx_array** out, int* nout) {
  const qk_opts* o = payload;
  cmx_array fr = n > 3 ? in[3] : NULL, qt = NULL, rq = NULL, rk = NULL;
  cmx_status st = CMX_OK;
  cmx_array q = in[0];
  if (o->transposed) {
    st = cmx_swapaxes(&qt, in[0], 1, 2, S);
    q = qt;
  }
  if (st == CMX_OK) st = rope(&rq, q, 64, o->trad, in[2], fr);
  if (st == CMX_OK) st = rope(&rk, in[1], 64, o->trad, in[2], fr);
  cmx_array_release(qt);
  if (st != CMX_OK) {
    cmx_array_release_all((cmx_array[]){rq, rk}, 2);
    return st;
  }
  *out = malloc(2 * sizeof **out);
  (*out)[0] = rq;
  (*out)[1] = rk;
  *nout = 2;
  return CMX_OK;
}

static void test_qk(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  int64_t fs[1] = {32};
  for (int k = 0; k < 3; k++)
    for (int v = 0; v < 16; v++) {
      /* v's bits: traditional, freqs, (B) offset, L = 5 and q transposed */
      qk_opts o = {.trad = v & 1, .transposed = (v & 8) != 0};
      bool freqs = v & 2, vec = v & 4;
      int64_t B = vec ? 2 : 1, L = v & 8 ? 5 : 1;
      int64_t qs[4] = {B, 9, L, 64}, qts[4] = {B, L, 9, 64},
              ks[4] = {B, 3, L, 128};
      cmx_array in[4] = {rnd(o.transposed ? qts : qs, 4, dts[k]),
                         rnd(ks, 4, dts[k]), offsets(vec ? 2 : 0, 300 + v),
                         NULL};
      if (freqs) {
        cmx_array f0 = rnd(fs, 1, CMX_FLOAT32), f1 = NULL;
        OK(cmx_abs(&f1, f0, S)); /* positive frequencies, as models' */
        in[3] = f1;
        cmx_array_release(f0);
      }
      int nin = freqs ? 4 : 3;
      cmx_array* ref = NULL;
      int nref = 0;
      OK(qk_fn(&o, in, nin, &ref, &nref));
      cmx_compiled* cf = NULL;
      OK(cmx_compile(&cf, (cmx_closure){qk_fn, &o}, NULL));
      cmx_array* got = NULL;
      int ngot = 0;
      OK(cmx_compiled_call(cf, in, nin, &got, &ngot));
      const cmx__cgraph* g = ngot == 2 ? graph_of(got[0]) : NULL;
      CHECK_MSG(g && count_ops(g, &cmx__vt_RoPEMulti) == 1 &&
                    count_ops(g, &cmx__vt_RoPE) == 0,
                "%s variant %d: the pass did not fuse q's and k's RoPE",
                cmx_dtype_name(dts[k]), v);
      for (int i = 0; i < 2 && ngot == 2 && nref == 2; i++)
        CHECK_MSG(h_arrays_same_bytes(got[i], ref[i]),
                  "%s variant %d: output %d differs from uncompiled",
                  cmx_dtype_name(dts[k]), v, i);
      cmx_arrays_free(got, ngot);
      cmx_arrays_free(ref, nref);
      cmx_compiled_release(cf);
      cmx_array_release_all(in, 4);
    }
}

/* ---------------- the kernel on other layouts ---------------- */

/* RoPEMulti (dims, trad, base) applied to xs[0..n), offset off: out[n]. */
static void apply_multi(const cmx_array* xs, int n, int dims, bool trad,
                        cmx_array off, cmx_array freqs, cmx_array* out) {
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.dims = dims;
  q.traditional = trad;
  q.base = freqs ? 0.f : BASE;
  q.scale = 1.0f;
  q.has_freqs = freqs != NULL;
  const int64_t* shp[CMX__ROPE_MULTI_MAX];
  int nd[CMX__ROPE_MULTI_MAX];
  cmx_dtype dt[CMX__ROPE_MULTI_MAX];
  cmx_array in[CMX__ROPE_MULTI_MAX + 2];
  for (int i = 0; i < n; i++) {
    shp[i] = cmx_array_shape(xs[i]);
    nd[i] = cmx_array_ndim(xs[i]);
    dt[i] = cmx_array_dtype(xs[i]);
    in[i] = xs[i];
  }
  in[n] = off;
  in[n + 1] = freqs;
  OK(cmx_primitive_apply(out, n,
                         cmx_primitive_new(&cmx__vt_RoPEMulti, &q, sizeof q, S),
                         in, n + 1 + (freqs != NULL), shp, nd, dt));
}

/* Checks RoPEMulti on xs against RoPE of each (bit for bit) and, off the
 * CPU, against the CPU's RoPE (near: another cos/sin). */
static void check_multi(const char* what, const cmx_array* xs, int n, int dims,
                        bool trad, cmx_array off, cmx_array freqs) {
  cmx_array o[CMX__ROPE_MULTI_MAX] = {NULL};
  apply_multi(xs, n, dims, trad, off, freqs, o);
  OK(cmx_eval(o, (size_t)n));
  cmx_stream cpu = cmx_stream_on(cmx_device_cpu());
  for (int i = 0; i < n; i++) {
    cmx_array r = NULL;
    OK(rope(&r, xs[i], dims, trad, off, freqs));
    CHECK_MSG(h_arrays_same_bytes(o[i], r),
              "%s %s trad %d: output %d differs from RoPE", what,
              cmx_dtype_name(cmx_array_dtype(xs[i])), trad, i);
    if (S.device.type != CMX_CPU && cmx_array_size(r) > 0) {
      cmx_array c = NULL;
      OK(cmx_fast_rope(&c, xs[i], dims, trad, freqs ? NULL : &BASE, 1.0f, 0,
                       off, freqs, cpu));
      double tol = cmx_array_dtype(r) == CMX_FLOAT32 ? 1e-4 : 2e-2;
      double d = rel_diff(o[i], c);
      CHECK_MSG(d <= tol, "%s %s: output %d is %g from the CPU's RoPE", what,
                cmx_dtype_name(cmx_array_dtype(r)), i, d);
      cmx_array_release(c);
    }
    cmx_array_release(r);
  }
  cmx_array_release_all(o, (size_t)n);
}

static void test_layouts(void) {
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (int k = 0; k < 3; k++)
    for (int trad = 0; trad < 2; trad++) {
      cmx_dtype dt = dts[k];
      int64_t as[4] = {2, 4, 3, 16}, bs[4] = {2, 1, 3, 24}, cs[3] = {2, 7, 16},
              ds[4] = {2, 2, 3, 20};
      cmx_array a = rnd(as, 4, dt), b = rnd(bs, 4, dt), c = rnd(cs, 3, dt),
                d = rnd(ds, 4, dt);
      cmx_array o0 = offsets(0, 11), o2 = offsets(2, 5);
      cmx_array xs[4] = {a, b, c, d};
      check_multi("two", xs, 2, 16, trad, o0, NULL);
      check_multi("three", xs, 3, 8, trad, o2, NULL);
      check_multi("four", xs, 4, 16, trad, o2, NULL);
      /* views: a transposed (last axis strided), b sliced from 1 in, c
       * with its rows reversed (negative strides are not made: a strided
       * step over rows instead) */
      int64_t ts[4] = {2, 4, 16, 3}, bb[4] = {2, 1, 3, 25},
              start[4] = {0, 0, 0, 1}, stop[4] = {2, 1, 3, 25},
              step[4] = {1, 1, 1, 1}, cb[3] = {2, 14, 16},
              cstart[3] = {0, 0, 0}, cstop[3] = {2, 14, 16},
              cstep[3] = {1, 2, 1};
      cmx_array at0 = rnd(ts, 4, dt), at = NULL, b0 = rnd(bb, 4, dt), bo = NULL,
                c0 = rnd(cb, 3, dt), cv = NULL;
      OK(cmx_swapaxes(&at, at0, 2, 3, S));
      OK(cmx_slice(&bo, b0, start, stop, step, S));
      OK(cmx_slice(&cv, c0, cstart, cstop, cstep, S));
      cmx_array vs[3] = {at, bo, cv};
      check_multi("views", vs, 3, 16, trad, o2, NULL);
      /* freqs, and an empty input among others */
      int64_t fs[1] = {8}, es[4] = {2, 0, 3, 16};
      cmx_array f0 = rnd(fs, 1, CMX_FLOAT32), f = NULL, e = rnd(es, 4, dt);
      OK(cmx_abs(&f, f0, S));
      cmx_array fe[3] = {a, e, c};
      check_multi("freqs and empty", fe, 3, 16, trad, o0, f);
      /* rows over 8 dims that do not merge (the axes reversed): more than
       * the GPU kernel's table holds, so RoPE per input there */
      int64_t ws[10] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 8};
      int perm[10] = {7, 6, 5, 4, 3, 2, 1, 0, 8, 9};
      cmx_array w0 = rnd(ws, 10, dt), w = NULL;
      OK(cmx_transpose(&w, w0, perm, 10, S));
      cmx_array wide[2] = {w, c};
      check_multi("wide", wide, 2, 8, trad, o2, NULL);
      if (trad) {
        /* prefill-sized: on a GPU more work than one pass of the grid (its
         * threads loop across the part boundary); (B) offsets */
        int64_t qs[4] = {2, 16, 300, 64}, ks[4] = {2, 4, 300, 128};
        cmx_array big[2] = {rnd(qs, 4, dt), rnd(ks, 4, dt)};
        check_multi("prefill", big, 2, 64, trad, o2, NULL);
        cmx_array_release_all(big, 2);
      }
      cmx_array_release_all((cmx_array[]){a, b, c, d, o0, o2, at0, at, b0, bo,
                                          c0, cv, f0, f, e, w0, w},
                            17);
    }
}

/* ---------------- where the pass stays out ---------------- */

/* in = {x (2, 3, 4, 16), y (2, 3, 4, 16), o1, o2 (0-d offsets)}; payload
 * selects what the function returns:
 *   0 rope(x, 16), rope(y, 8): other dims;
 *   1 rope(x, o1), rope(y, o2): other offsets;
 *   2 rope(rope(x)): the second reads the first;
 *   3 exp(rope(x)), rope(y): rope(x) read in between (the trace orders
 *     the ops output by output);
 *   4 six RoPEs of x * i at o1: groups of four and two;
 *   5 rope(x), rope(y), traditional and not. */
static cmx_status odd_fn(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)n;
  int v = *(const int*)payload;
  cmx_array r[6] = {NULL}, t = NULL, e = NULL;
  int k = 0;
  cmx_status st = CMX_OK;
  switch (v) {
    case 0:
      st = rope(&r[k++], in[0], 16, false, in[2], NULL);
      if (st == CMX_OK) st = rope(&r[k++], in[1], 8, false, in[2], NULL);
      break;
    case 1:
      st = rope(&r[k++], in[0], 16, false, in[2], NULL);
      if (st == CMX_OK) st = rope(&r[k++], in[1], 16, false, in[3], NULL);
      break;
    case 2:
      st = rope(&t, in[0], 16, false, in[2], NULL);
      if (st == CMX_OK) st = rope(&r[k++], t, 16, false, in[2], NULL);
      break;
    case 3:
      st = rope(&t, in[0], 16, false, in[2], NULL);
      if (st == CMX_OK) st = cmx_exp(&r[k++], t, S);
      if (st == CMX_OK) st = rope(&r[k++], in[1], 16, false, in[2], NULL);
      break;
    case 4:
      for (int i = 0; i < 6 && st == CMX_OK; i++) {
        cmx_array c = NULL, m = NULL;
        st = cmx_array_weak_float(&c, 1.0 + i);
        if (st == CMX_OK) st = cmx_multiply(&m, in[i % 2], c, S);
        if (st == CMX_OK) st = rope(&r[k++], m, 16, false, in[2], NULL);
        cmx_array_release_all((cmx_array[]){c, m}, 2);
      }
      break;
    default:
      st = rope(&r[k++], in[0], 16, false, in[2], NULL);
      if (st == CMX_OK) st = rope(&r[k++], in[1], 16, true, in[2], NULL);
  }
  cmx_array_release_all((cmx_array[]){t, e}, 2);
  if (st != CMX_OK) {
    cmx_array_release_all(r, 6);
    return st;
  }
  *out = malloc((size_t)k * sizeof **out);
  for (int i = 0; i < k; i++) (*out)[i] = r[i];
  *nout = k;
  return CMX_OK;
}

/* Compiles odd_fn variant v (shapeless or not) on in, checks the graph's
 * RoPEMulti count and every output against the uncompiled. */
static void check_odd(int v, bool shapeless, const cmx_array* in, int fused) {
  cmx_array* ref = NULL;
  int nref = 0;
  OK(odd_fn(&v, in, 4, &ref, &nref));
  cmx_compile_options opt = {.shapeless = shapeless};
  cmx_compiled* cf = NULL;
  OK(cmx_compile(&cf, (cmx_closure){odd_fn, &v}, &opt));
  cmx_array* got = NULL;
  int ngot = 0;
  OK(cmx_compiled_call(cf, in, 4, &got, &ngot));
  /* a shapeless trace runs op by op: its graph is traced again here */
  cmx__cgraph g;
  bool traced = false;
  if (shapeless) {
    size_t mark = cmx__scope_enter(); /* placeholders are scope-owned */
    cmx_array ph[4];
    for (int i = 0; i < 4; i++)
      ph[i] = cmx__placeholder(cmx_array_shape(in[i]), cmx_array_ndim(in[i]),
                               cmx_array_dtype(in[i]));
    cmx_array* outs = NULL;
    int no = 0;
    OK(odd_fn(&v, ph, 4, &outs, &no));
    traced = cmx__cgraph_from_trace(&g, ph, 4, outs, no) == CMX_OK;
    g.shapeless = true;
    OK(cmx__pass_rope_multi(&g));
    cmx_arrays_free(outs, no);
    cmx__scope_exit_n(mark, NULL, NULL, 0);
  }
  const cmx__cgraph* gp = shapeless ? (traced ? &g : NULL) : graph_of(got[0]);
  CHECK_MSG(gp && count_ops(gp, &cmx__vt_RoPEMulti) == fused,
            "variant %d%s: %d RoPEMulti, expected %d", v,
            shapeless ? " shapeless" : "",
            gp ? count_ops(gp, &cmx__vt_RoPEMulti) : -1, fused);
  CHECK(ngot == nref);
  /* float32 goes through RoPE's kernel either way: bit for bit. float64 is
   * rope's composite, which compile may fuse into one kernel whose multiply
   * and add contract to an fma (the GPU's): equal to float64 rounding. */
  bool exact = cmx_array_dtype(in[0]) != CMX_FLOAT64;
  for (int i = 0; i < ngot && ngot == nref; i++)
    CHECK_MSG(exact ? h_arrays_same_bytes(got[i], ref[i])
                    : rel_diff(got[i], ref[i]) < 1e-6,
              "variant %d%s %s: output %d differs", v,
              shapeless ? " shapeless" : "",
              cmx_dtype_name(cmx_array_dtype(in[0])), i);
  if (traced) cmx__cgraph_free(&g);
  cmx_arrays_free(got, ngot);
  cmx_arrays_free(ref, nref);
  cmx_compiled_release(cf);
}

static void test_left_alone(void) {
  int64_t s[4] = {2, 3, 4, 16};
  cmx_array in[4] = {rnd(s, 4, CMX_FLOAT32), rnd(s, 4, CMX_FLOAT32),
                     offsets(0, 3), offsets(0, 9)};
  check_odd(0, false, in, 0); /* other dims */
  check_odd(1, false, in, 0); /* other offsets */
  check_odd(2, false, in, 0); /* a RoPE of a RoPE */
  check_odd(3, false, in, 0); /* read in between */
  check_odd(4, false, in, 2); /* 4 + 2 */
  check_odd(5, false, in, 0); /* traditional and not */
  check_odd(4, true, in, 0);  /* shapeless */
  {
    /* a RoPEMulti of 4 and one of 2, no RoPE left */
    int v = 4;
    cmx_compiled* cf = NULL;
    OK(cmx_compile(&cf, (cmx_closure){odd_fn, &v}, NULL));
    cmx_array* got = NULL;
    int ngot = 0;
    OK(cmx_compiled_call(cf, in, 4, &got, &ngot));
    const cmx__cgraph* g = ngot ? graph_of(got[0]) : NULL;
    int sizes = 0;
    for (int i = 0; g && i < g->nops; i++)
      if (cmx_primitive_vt(g->ops[i].prim) == &cmx__vt_RoPEMulti)
        sizes = sizes * 10 + g->ops[i].nout;
    CHECK_MSG(g && count_ops(g, &cmx__vt_RoPE) == 0 && sizes == 42,
              "six RoPEs: groups %d", sizes);
    cmx_arrays_free(got, ngot);
    cmx_compiled_release(cf);
  }
  /* float64: rope is its composite (no RoPE node) */
  cmx_array d[4] = {NULL, NULL, in[2], in[3]};
  OK(cmx_astype(&d[0], in[0], CMX_FLOAT64, S));
  OK(cmx_astype(&d[1], in[1], CMX_FLOAT64, S));
  check_odd(4, false, d, 0);
  /* switched off */
  setenv("CMX_COMPILE_ROPE_MULTI", "0", 1);
  check_odd(4, false, in, 0);
  unsetenv("CMX_COMPILE_ROPE_MULTI");
  cmx_array_release_all((cmx_array[]){in[0], in[1], in[2], in[3], d[0], d[1]},
                        6);
}

/* ---------------- equal and hash ---------------- */

static void test_equal_hash(void) {
  cmx__fast_params q;
  memset(&q, 0, sizeof q);
  q.dims = 64;
  q.base = 10000.f;
  q.scale = 1.f;
  cmx_primitive* a = cmx_primitive_new(&cmx__vt_RoPEMulti, &q, sizeof q, S);
  cmx_primitive* b = cmx_primitive_new(&cmx__vt_RoPEMulti, &q, sizeof q, S);
  q.traditional = 1;
  cmx_primitive* c = cmx_primitive_new(&cmx__vt_RoPEMulti, &q, sizeof q, S);
  q.traditional = 0;
  q.dims = 32;
  cmx_primitive* d = cmx_primitive_new(&cmx__vt_RoPEMulti, &q, sizeof q, S);
  q.dims = 64;
  cmx_primitive* r = cmx_primitive_new(&cmx__vt_RoPE, &q, sizeof q, S);
  CHECK(cmx_primitive_equal(a, b) &&
        cmx_primitive_hash(a) == cmx_primitive_hash(b));
  CHECK(!cmx_primitive_equal(a, c) && !cmx_primitive_equal(a, d));
  CHECK(!cmx_primitive_equal(a, r)); /* another kind, the same bytes */
  char desc[96];
  cmx_primitive_describe(a, desc, sizeof desc);
  CHECK_MSG(!strcmp(desc, "RoPEMulti(dims=64, base=10000, scale=1)"), "%s",
            desc);
  CHECK(cmx_primitive_has_kernel(&cmx__vt_RoPEMulti, CMX_CPU) &&
        cmx_primitive_has_kernel(&cmx__vt_RoPEMulti, CMX_GPU));
  cmx_primitive* all[5] = {a, b, c, d, r};
  for (int i = 0; i < 5; i++) cmx_primitive_release(all[i]);
}

int main(void) {
  for (int dev = 0; dev < h_ndevices(); dev++) {
    g_s = h_stream(dev);
    OK(cmx_set_default_device(h_device(dev)));
    RUN(test_qk);
    RUN(test_layouts);
    RUN(test_left_alone);
  }
  OK(cmx_set_default_device(cmx_device_cpu()));
  g_s = cmx_stream_on(cmx_device_cpu());
  RUN(test_equal_hash);
  return test_summary("test_compile_rope_multi");
}
