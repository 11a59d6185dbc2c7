/* The fuse pass keeps the graph acyclic through the regions it has
 * already fused. Two regions can each be convex in the op graph while the
 * Compiled op replacing the first makes a path from the second's inputs
 * to its outputs (it reads all its members' inputs, writes all their
 * outputs): fusing the second then closed a cycle, and the run read a
 * value not computed yet (a segfault in the one-op run, '[Compiled] input
 * k is a null array' op by op). Here A = {exp(x), exp * b'} and
 * B = {b = sin(y), b * sum(exp)}: A reads B's b (through expand_dims)
 * and B reads A's exp (through the sum). In either op order only one of
 * them may fuse. The backward graph of grad(rms_norm(x, w) ** 2) over x
 * and w had this shape.
 */
#include "compile/compile_internal.h"
#include "core/internal.h"
#include "test.h"
#include "transforms/transforms_internal.h"

#define S CMX_STREAM_DEFAULT

static cmx_array f32(const float* v, const int64_t* shape, int nd) {
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32);
  return a;
}

/* (exp(x) * sin(y)[:, None], sin(y) * sum(exp(x), 1)), swapped when
 * *(bool*)payload: the trace's op order, hence which region is seeded
 * first, follows the outputs' order. */
static cmx_status f_regions(void* payload, const cmx_array* in, int n,
                            cmx_array** out, int* nout) {
  (void)n;
  bool swap = payload && *(bool*)payload;
  cmx_array e = NULL, b = NULL, bb = NULL, a = NULL, s = NULL, c = NULL;
  int ax = 1;
  cmx_exp(&e, in[0], S);
  cmx_sin(&b, in[1], S);
  cmx_expand_dims(&bb, b, &ax, 1, S);
  cmx_multiply(&a, e, bb, S);
  cmx_sum(&s, e, &ax, 1, false, S);
  cmx_multiply(&c, b, s, S);
  cmx_array_release_all((cmx_array[]){e, b, bb, s}, 4);
  if (!a || !c) {
    cmx_array_release_all((cmx_array[]){a, c}, 2);
    return cmx_last_status();
  }
  cmx_array* o = malloc(2 * sizeof *o);
  o[swap] = a;
  o[!swap] = c;
  *out = o;
  *nout = 2;
  return CMX_OK;
}

static bool close_to(cmx_array got, cmx_array want) {
  int64_t n = cmx_array_size(want);
  if (!got || cmx_array_size(got) != n || n > 64) return false;
  float g[64], w[64];
  if (cmx_array_copy_to(got, g, (size_t)n * 4) != CMX_OK ||
      cmx_array_copy_to(want, w, (size_t)n * 4) != CMX_OK)
    return false;
  for (int64_t i = 0; i < n; i++)
    if (fabsf(g[i] - w[i]) > 1e-6f * fmaxf(1.f, fabsf(w[i]))) return false;
  return true;
}

static uint64_t fused_count(void) {
  cmx_compile_stats s;
  cmx_compile_stats_get(&s);
  return s.fused;
}

/* Compiled calls against the eager function, in both op orders, run as
 * one op and op by op (CMX_COMPILE_OP_BY_OP is read at each trace). */
static void test_calls(void) {
  float xv[32], yv[4];
  for (int i = 0; i < 32; i++) xv[i] = sinf((float)i) * 0.8f;
  for (int i = 0; i < 4; i++) yv[i] = cosf((float)i) * 1.5f;
  cmx_array x = f32(xv, (int64_t[]){4, 8}, 2), y = f32(yv, (int64_t[]){4}, 1);
  for (int mode = 0; mode < 2; mode++) {
    if (mode)
      setenv("CMX_COMPILE_OP_BY_OP", "1", 1);
    else
      unsetenv("CMX_COMPILE_OP_BY_OP");
    for (int sw = 0; sw < 2; sw++) {
      bool swap = sw;
      cmx_compiled* cf = NULL;
      OK(cmx_compile(&cf, (cmx_closure){f_regions, &swap}, NULL));
      uint64_t f0 = fused_count();
      cmx_array *o = NULL, *e = NULL;
      int no = 0, ne = 0;
      cmx_status st = cmx_compiled_call(cf, (cmx_array[]){x, y}, 2, &o, &no);
      CHECK_MSG(st == CMX_OK, "mode %d swap %d: %s", mode, sw,
                cmx_last_error());
      if (st == CMX_OK) st = cmx_eval(o, no);
      CHECK_MSG(st == CMX_OK, "mode %d swap %d: eval: %s", mode, sw,
                cmx_last_error());
      CHECK_MSG(fused_count() - f0 == 1, "mode %d swap %d: %d regions fused",
                mode, sw, (int)(fused_count() - f0));
      OK(f_regions(&swap, (cmx_array[]){x, y}, 2, &e, &ne));
      CHECK(st == CMX_OK && no == 2 && ne == 2);
      for (int k = 0; st == CMX_OK && k < 2 && no == 2; k++)
        CHECK_MSG(close_to(o[k], e[k]), "mode %d swap %d output %d", mode, sw,
                  k);
      cmx_arrays_free(o, no);
      cmx_arrays_free(e, ne);
      cmx_compiled_release(cf);
    }
  }
  unsetenv("CMX_COMPILE_OP_BY_OP");
  cmx_array_release_all((cmx_array[]){x, y}, 2);
}

/* The pass itself: after it, every op reads only inputs, constants and
 * values of earlier ops (what cmx__cgraph_verify asserts, checked here
 * without aborting), and the graph still computes the function. */
static void test_pass_order(void) {
  for (int sw = 0; sw < 2; sw++) {
    bool swap = sw;
    size_t mark = cmx__scope_enter();
    cmx_array ph[2] = {cmx__placeholder((int64_t[]){4, 8}, 2, CMX_FLOAT32),
                       cmx__placeholder((int64_t[]){4}, 1, CMX_FLOAT32)};
    cmx_array* o = NULL;
    int no = 0;
    OK(f_regions(&swap, ph, 2, &o, &no));
    cmx__cgraph g;
    OK(cmx__cgraph_from_trace(&g, ph, 2, o, no));
    OK(cmx__pass_fuse(&g));
    int compiled = 0;
    bool ordered = true;
    for (int i = 0; i < g.nops; i++) {
      compiled += !strcmp(cmx_primitive_name(g.ops[i].prim), "Compiled");
      for (int k = 0; k < g.ops[i].nin; k++) {
        const cmx__cval* v = &g.vals[g.ops[i].in[k]];
        ordered = ordered && (v->kind != CMX__CV_OP || v->index < i);
      }
    }
    CHECK_MSG(ordered, "swap %d: an op reads a later op's value", sw);
    CHECK_MSG(compiled == 1, "swap %d: %d Compiled ops", sw, compiled);
    if (ordered) {
      float xv[32], yv[4] = {0.5f, -1, 2, 0.25f};
      for (int i = 0; i < 32; i++) xv[i] = (float)(i % 7) * 0.3f - 1;
      cmx_array in[2] = {f32(xv, (int64_t[]){4, 8}, 2),
                         f32(yv, (int64_t[]){4}, 1)};
      cmx_array r[2] = {NULL, NULL}, *e = NULL;
      int ne = 0;
      OK(cmx__cgraph_replay(&g, in, r));
      OK(f_regions(&swap, in, 2, &e, &ne));
      for (int k = 0; k < 2 && ne == 2; k++) CHECK(close_to(r[k], e[k]));
      cmx_arrays_free(e, ne);
      cmx_array_release_all(r, 2);
      cmx_array_release_all(in, 2);
    }
    cmx__cgraph_free(&g);
    cmx_arrays_free(o, no);
    cmx__scope_exit_n(mark, NULL, NULL, 0);
  }
}

int main(void) {
  RUN(test_calls);
  RUN(test_pass_order);
  return test_summary("test_compile_fuse_paths");
}
