/* compile on the CPU: the generated kernels' walks over layouts that do
 * not collapse to one flat run (short rows with a broadcast row, rows
 * of strided views, per-row values), and outputs written into the buffer
 * of an argument nothing else holds (donation), against eager results.
 *
 * Fused float32 steps are built with FMA contraction exactly where
 * libcmx's eager rows are when gcc built libcmx (test_compile.c says
 * why): results are compared bit for bit there, to a few ulp otherwise.
 */
#include "compile/compile_internal.h"
#include "core/internal.h"
#include "test.h"
#include "transforms/transforms_internal.h"

#define S CMX_STREAM_DEFAULT

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TOL 0
#else
#define TOL 5e-7
#endif

static cmx_array from(const float* v, const int64_t* shape, int nd,
                      cmx_dtype dt) {
  cmx_array a = NULL, f = NULL;
  cmx_array_from_data(&a, v, shape, nd, CMX_FLOAT32);
  if (dt == CMX_FLOAT32) return a;
  cmx_astype(&f, a, dt, S);
  cmx_array_release(a);
  cmx_array_eval(f);
  return f;
}

static bool same(cmx_array a, cmx_array b, double tol) {
  int64_t n = cmx_array_size(a);
  if (cmx_array_ndim(a) != cmx_array_ndim(b) || n != cmx_array_size(b))
    return false;
  cmx_array x = NULL, y = NULL;
  cmx_astype(&x, a, CMX_FLOAT64, S);
  cmx_astype(&y, b, CMX_FLOAT64, S);
  double* u = malloc((size_t)(n + 1) * 8);
  double* v = malloc((size_t)(n + 1) * 8);
  bool ok = u && v && cmx_array_copy_to(x, u, (size_t)n * 8) == CMX_OK &&
            cmx_array_copy_to(y, v, (size_t)n * 8) == CMX_OK;
  for (int64_t i = 0; ok && i < n; i++)
    ok = (isnan(u[i]) && isnan(v[i])) || u[i] == v[i] ||
         fabs(u[i] - v[i]) <= tol * fmax(fabs(u[i]), fabs(v[i]));
  free(u);
  free(v);
  cmx_array_release_all((cmx_array[]){x, y}, 2);
  return ok;
}

static cmx_status outs(cmx_array* r, int n, cmx_array** out, int* nout) {
  for (int k = 0; k < n; k++)
    if (!r[k]) {
      cmx_array_release_all(r, (size_t)n);
      return cmx_last_status();
    }
  *out = malloc((size_t)n * sizeof(cmx_array));
  memcpy(*out, r, (size_t)n * sizeof(cmx_array));
  *nout = n;
  return CMX_OK;
}

/* (maximum(x + b, 0) * 2, x - b): a bias and relu as in a network. */
static cmx_status f_bias(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)payload, (void)n;
  cmx_array zero = NULL, two = NULL, s = NULL, m = NULL, r[2] = {NULL, NULL};
  cmx_array_weak_float(&zero, 0.0);
  cmx_array_weak_float(&two, 2.0);
  cmx_add(&s, in[0], in[1], S);
  cmx_maximum(&m, s, zero, S);
  cmx_multiply(&r[0], m, two, S);
  cmx_subtract(&r[1], in[0], in[1], S);
  cmx_array_release_all((cmx_array[]){zero, two, s, m}, 4);
  return outs(r, 2, out, nout);
}

/* (x + 1, exp(x + 1) * x), in that order when payload is NULL, else the
 * other: x is read again after x + 1 is stored (exp starts a loop of its
 * own where eager exp contracts), whichever output x's buffer goes to. */
static cmx_status f_late(void* payload, const cmx_array* in, int n,
                         cmx_array** out, int* nout) {
  (void)n;
  cmx_array one = NULL, e = NULL, r[2] = {NULL, NULL};
  int a = payload ? 1 : 0;
  cmx_array_weak_float(&one, 1.0);
  cmx_add(&r[a], in[0], one, S);
  cmx_exp(&e, r[a], S);
  cmx_multiply(&r[1 - a], e, in[0], S);
  cmx_array_release_all((cmx_array[]){one, e}, 2);
  return outs(r, 2, out, nout);
}

static float* values(int64_t n, int seed) {
  float* v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++)
    v[i] = sinf((float)(i * 7 + seed)) * 3.f - 0.5f;
  return v;
}

/* Compiled f(x, b) against eager f(x, b), every output. */
static void agree(cmx_compiled* cf, cmx_closure f, cmx_array x, cmx_array b,
                  const char* what) {
  cmx_array *o = NULL, *e = NULL;
  int no = 0, ne = 0;
  cmx_array args[2] = {x, b};
  int nargs = b ? 2 : 1;
  cmx_status st = cmx_compiled_call(cf, args, nargs, &o, &no);
  CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
  OK(f.fn(f.payload, args, nargs, &e, &ne));
  if (st == CMX_OK) {
    OK(cmx_eval(o, (size_t)no));
    for (int k = 0; k < no && k < ne; k++)
      CHECK_MSG(same(o[k], e[k], TOL), "%s: output %d", what, k);
  }
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
}

/* Rows shorter than a block, with a row every row repeats (bias), a row
 * per outer index ((5, 1, 7) against (5, 9, 7): the block's copy of it
 * must follow the outer index), rows of a strided view (copied per
 * block), a value per row, a row count that is not a multiple of the
 * rows a block takes, rows too long to tile; 1-, 2- and 4-byte items. */
static void test_short_rows(void) {
  cmx_compiled* cf = NULL;
  cmx_closure f = {f_bias, NULL};
  OK(cmx_compile(&cf, f, NULL));
  static const struct {
    int nx, nb;
    int64_t xs[4], bs[4];
  } cases[] = {
      {2, 1, {130, 32}, {32}},         {3, 3, {5, 9, 7}, {5, 1, 7}},
      {2, 2, {50, 8}, {50, 1}},        {3, 2, {3, 37, 24}, {1, 24}},
      {2, 1, {300, 2}, {2}},           {2, 1, {4, 129}, {129}},
      {4, 3, {4, 3, 2, 5}, {3, 1, 5}}, {2, 1, {1000, 17}, {17}},
  };
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_INT8,
                                  CMX_INT32};
  float* v = values(20000, 1);
  float* w = values(20000, 2);
  char what[96];
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      cmx_array x = from(v, cases[c].xs, cases[c].nx, dts[d]);
      cmx_array b = from(w, cases[c].bs, cases[c].nb, dts[d]);
      snprintf(what, sizeof what, "dtype %s, case %zu", cmx_dtype_name(dts[d]),
               c);
      agree(cf, f, x, b, what);
      cmx_array_release_all((cmx_array[]){x, b}, 2);
    }
  /* rows of strided views: x[:, ::2, 1::2] of (8, 12, 12, 6), with a row
   * b and with a second view as b */
  cmx_array big = from(v, (int64_t[]){8, 12, 12, 6}, 4, CMX_FLOAT32);
  cmx_array s1 = NULL, s2 = NULL;
  cmx_slice(&s1, big, (int64_t[]){0, 0, 1, 0}, (int64_t[]){8, 12, 12, 6},
            (int64_t[]){1, 2, 2, 1}, S);
  cmx_slice(&s2, big, (int64_t[]){0, 1, 0, 0}, (int64_t[]){8, 12, 12, 6},
            (int64_t[]){1, 2, 2, 1}, S);
  cmx_array row = from(w, (int64_t[]){6}, 1, CMX_FLOAT32);
  agree(cf, f, s1, row, "strided rows, broadcast row");
  agree(cf, f, s1, s2, "two strided views");
  agree(cf, f, row, s2, "broadcast row first");
  cmx_array_release_all((cmx_array[]){big, s1, s2, row}, 4);
  free(v);
  free(w);
  cmx_compiled_release(cf);
}

/* Calls cf on (x, b) with x held or not by the caller; returns whether
 * an output was given x's buffer, and checks every output against eager
 * results from x's values (xv) and, held, that x is unchanged. */
static bool donated(cmx_compiled* cf, cmx_closure f, const float* xv,
                    const int64_t* shape, int nd, cmx_array b, bool held,
                    const char* what) {
  cmx_array x = from(xv, shape, nd, CMX_FLOAT32);
  cmx_array xc = from(xv, shape, nd, CMX_FLOAT32);
  cmx__buffer* px = x->buf;
  cmx_array *o = NULL, *e = NULL;
  int no = 0, ne = 0;
  cmx_array args[2] = {x, b}, eargs[2] = {xc, b};
  int nargs = b ? 2 : 1;
  bool given = false;
  cmx_status st = cmx_compiled_call(cf, args, nargs, &o, &no);
  CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
  if (!held) cmx_array_release(x); /* the call's graph holds the last one */
  if (st == CMX_OK) {
    OK(cmx_eval(o, (size_t)no));
    for (int j = 0; j < no; j++) given = given || o[j]->buf == px;
    OK(f.fn(f.payload, eargs, nargs, &e, &ne));
    for (int j = 0; j < no && j < ne; j++)
      CHECK_MSG(same(o[j], e[j], TOL), "%s (held %d): output %d", what, held,
                j);
    if (held) CHECK_MSG(same(x, xc, 0), "%s: the held input changed", what);
  }
  if (held) cmx_array_release(x);
  cmx_arrays_free(o, no);
  cmx_arrays_free(e, ne);
  cmx_array_release(xc);
  return given;
}

/* An argument only the compiled call still holds gives its buffer to an
 * output of its size and item size (results as without); one the caller
 * holds keeps its buffer and values; the donated argument may be read
 * after the output's step (f_late) and through the short-row walk. */
static void test_donation(void) {
  float* v = values(70000, 3);
  float* w = values(64, 4);
  cmx_compiled* cf = NULL;
  cmx_closure bias = {f_bias, NULL};
  static int flip;
  static const int64_t shapes[][2] = {{300, 200}, {7, 5}, {1, 1}};
  for (int order = 0; order < 2; order++) {
    cmx_closure late = {f_late, order ? &flip : NULL};
    OK(cmx_compile(&cf, late, NULL));
    for (int t = 0; t < 3; t++)
      for (int held = 0; held < 2; held++) {
        bool g = donated(cf, late, v, shapes[t], 2, NULL, held, "late read");
        CHECK_MSG(g == !held, "order %d shape %d held %d: donated %d", order, t,
                  held, g);
      }
    cmx_compiled_release(cf);
  }
  OK(cmx_compile(&cf, bias, NULL));
  cmx_array row = from(w, (int64_t[]){32}, 1, CMX_FLOAT32);
  for (int held = 0; held < 2; held++) {
    bool g =
        donated(cf, bias, v, (int64_t[]){2000, 32}, 2, row, held, "short rows");
    CHECK_MSG(g == !held, "short rows held %d: donated %d", held, g);
  }
  cmx_array_release(row);
  cmx_compiled_release(cf);
  free(v);
  free(w);
}

static int count_ops(const cmx__cgraph* g, const char* name) {
  int n = 0;
  for (int i = 0; i < g->nops; i++)
    n += !strcmp(cmx_primitive_name(g->ops[i].prim), name);
  return n;
}

/* maximum(x + b, broadcast(0)) with the broadcast zeros also read outside
 * the region (a graph output here; in a network, the maximum's
 * gradient): the Broadcast stays a view outside the fused op, which takes
 * it as an argument, instead of writing it out as a full extra output. */
static void test_shared_broadcast(void) {
  size_t mark = cmx__scope_enter();
  int64_t xs[2] = {64, 32}, bs[1] = {32};
  cmx_array ph[2] = {cmx__placeholder(xs, 2, CMX_FLOAT32),
                     cmx__placeholder(bs, 1, CMX_FLOAT32)};
  cmx_array zero = NULL, z = NULL, s = NULL, r = NULL;
  cmx_array_from_double(&zero, 0.0, CMX_FLOAT32);
  cmx_broadcast_to(&z, zero, xs, 2, S);
  cmx_add(&s, ph[0], ph[1], S);
  cmx_maximum(&r, s, z, S);
  cmx__cgraph g;
  OK(cmx__cgraph_from_trace(&g, ph, 2, (cmx_array[]){r, z}, 2));
  OK(cmx__pass_fuse(&g));
  cmx__cgraph_verify(&g, "fuse");
  int compiled = -1;
  for (int i = 0; i < g.nops; i++)
    if (!strcmp(cmx_primitive_name(g.ops[i].prim), "Compiled")) compiled = i;
  CHECK(compiled >= 0 && g.ops[compiled].nout == 1);
  CHECK(count_ops(&g, "Compiled") == 1);
  CHECK_MSG(count_ops(&g, "Broadcast") >= 1, "the shared zeros were fused");
  /* and the graph still computes both outputs */
  float* xv = values(64 * 32, 5);
  float* bv = values(32, 6);
  cmx_array in[2] = {from(xv, xs, 2, CMX_FLOAT32),
                     from(bv, bs, 1, CMX_FLOAT32)};
  cmx_array got[2] = {NULL, NULL}, want = NULL, ws = NULL;
  OK(cmx__cgraph_replay(&g, in, got));
  cmx_add(&ws, in[0], in[1], S);
  cmx_maximum(&want, ws, z, S);
  CHECK(got[0] && same(got[0], want, TOL));
  CHECK(got[1] && same(got[1], z, 0));
  cmx__cgraph_free(&g);
  cmx_array_release_all((cmx_array[]){zero, z, s, r, want, ws}, 6);
  cmx_array_release_all(in, 2);
  cmx_array_release_all(got, 2);
  free(xv);
  free(bv);
  cmx__scope_exit_n(mark, NULL, NULL, 0);
}

int main(void) {
  OK(cmx_set_default_device(cmx_device_cpu()));
  RUN(test_short_rows);
  RUN(test_donation);
  RUN(test_shared_broadcast);
  return test_summary("test_compile_cpu");
}
