/* Transform rules of the shape and view primitives (Broadcast, Transpose,
 * Squeeze, ExpandDims, Slice, AsStrided, Reshape, Contiguous, View,
 * SliceUpdate, Concatenate, Pad, Diagonal), reached through the public ops: vjp
 * against finite differences and jvp against vjp in float64, vmap against
 * a loop for every input's axis, rule dtypes for float32/float16, and
 * second-order checks. */
#include "rules_util.h"
/* clang-format off */
#include "primitives/shape.h"
/* clang-format on */

#define TOL 1e-6

/* ---------------- tc_fn wrappers ---------------- */

typedef struct {
  int64_t shape[8];
  int nd;
} shape_ctx;

static cmx_status f_broadcast(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  shape_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_broadcast_to(&outs[0], in[0], c->shape, c->nd, S);
}

static cmx_status f_reshape(void* ctx, const cmx_array* in, int n,
                            cmx_array* outs, int* nout) {
  shape_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_reshape(&outs[0], in[0], c->shape, c->nd, S);
}

typedef struct {
  int axes[8];
  int naxes; /* -1: NULL axes */
} axes_ctx;

static cmx_status f_transpose(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  axes_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_transpose(&outs[0], in[0], c->naxes < 0 ? NULL : c->axes, c->naxes,
                       S);
}

static cmx_status f_squeeze(void* ctx, const cmx_array* in, int n,
                            cmx_array* outs, int* nout) {
  axes_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_squeeze(&outs[0], in[0], c->naxes < 0 ? NULL : c->axes, c->naxes,
                     S);
}

static cmx_status f_expand_dims(void* ctx, const cmx_array* in, int n,
                                cmx_array* outs, int* nout) {
  axes_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_expand_dims(&outs[0], in[0], c->axes, c->naxes, S);
}

static cmx_status f_flip(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  axes_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_flip(&outs[0], in[0], c->naxes < 0 ? NULL : c->axes, c->naxes, S);
}

typedef struct {
  int64_t start[8], stop[8], step[8];
} slice_ctx;

static cmx_status f_slice(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  slice_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_slice(&outs[0], in[0], c->start, c->stop, c->step, S);
}

static cmx_status f_slice_update(void* ctx, const cmx_array* in, int n,
                                 cmx_array* outs, int* nout) {
  slice_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_slice_update(&outs[0], in[0], in[1], c->start, c->stop, c->step,
                          S);
}

typedef struct {
  int64_t shape[8], strides[8], offset;
  int nd;
} strided_ctx;

static cmx_status f_as_strided(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  strided_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_as_strided(&outs[0], in[0], c->shape, c->nd, c->strides, c->offset,
                        S);
}

static cmx_status f_contiguous(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_contiguous(&outs[0], in[0], false, S);
}

static cmx_status f_concatenate(void* ctx, const cmx_array* in, int n,
                                cmx_array* outs, int* nout) {
  int axis = *(int*)ctx;
  *nout = 1;
  return cmx_concatenate(&outs[0], in, n, axis, S);
}

static cmx_status f_stack(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  int axis = *(int*)ctx;
  *nout = 1;
  return cmx_stack(&outs[0], in, n, axis, S);
}

typedef struct {
  int axes[8];
  int64_t low[8], high[8];
  int naxes;
  cmx_pad_mode mode;
  bool value_input; /* the padding value is input 1 */
} pad_ctx;

static cmx_status f_pad(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                        int* nout) {
  pad_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_pad(&outs[0], in[0], c->axes, c->low, c->high, c->naxes,
                 c->value_input ? in[1] : NULL, c->mode, S);
}

/* Runs the gradient checks and every vmap of one case. */
static void check_case(const char* name, tc_fn fn, void* ctx, cmx_array* x,
                       int n) {
  tc_check_grad(name, fn, ctx, x, n, TOL);
  ru_vmap_all(name, fn, ctx, x, n);
  ru_release(x, n);
}

/* ---------------- Broadcast ---------------- */

static void test_broadcast(void) {
  shape_ctx c1 = {{2, 3}, 2};
  check_case("broadcast (3)->(2,3)", f_broadcast, &c1,
             (cmx_array[]){ru_rand((int64_t[]){3}, 1)}, 1);
  shape_ctx c2 = {{4, 2, 5}, 3};
  check_case("broadcast (2,1)->(4,2,5)", f_broadcast, &c2,
             (cmx_array[]){ru_rand((int64_t[]){2, 1}, 2)}, 1);
  shape_ctx c3 = {{3, 2}, 2};
  check_case("broadcast ()->(3,2)", f_broadcast, &c3,
             (cmx_array[]){ru_rand(NULL, 0)}, 1);
  shape_ctx c4 = {{2, 3, 4}, 3};
  check_case("broadcast transposed (3,1)->(2,3,4)", f_broadcast, &c4,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){1, 3}, 2))}, 1);
}

/* ---------------- Transpose ---------------- */

static void test_transpose(void) {
  axes_ctx c1 = {{2, 0, 1}, 3};
  check_case("transpose (2,3,4) [2,0,1]", f_transpose, &c1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3, 4}, 3)}, 1);
  axes_ctx c2 = {{0}, -1};
  check_case("transpose of a transposed view", f_transpose, &c2,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 4}, 2))}, 1);
  axes_ctx c3 = {{-1, 0, -2}, 3};
  check_case("transpose negative axes", f_transpose, &c3,
             (cmx_array[]){ru_rand((int64_t[]){2, 1, 3}, 3)}, 1);
}

/* ---------------- Squeeze and ExpandDims ---------------- */

static void test_squeeze_expand(void) {
  axes_ctx c1 = {{1, 3}, 2};
  check_case("squeeze (2,1,3,1) [1,3]", f_squeeze, &c1,
             (cmx_array[]){ru_rand((int64_t[]){2, 1, 3, 1}, 4)}, 1);
  axes_ctx c2 = {{0}, -1};
  check_case("squeeze all (1,3,1)", f_squeeze, &c2,
             (cmx_array[]){ru_rand((int64_t[]){1, 3, 1}, 3)}, 1);
  check_case("squeeze (1) -> ()", f_squeeze, &c2,
             (cmx_array[]){ru_rand((int64_t[]){1}, 1)}, 1);
  axes_ctx c3 = {{0, 2}, 2};
  check_case("expand_dims (2,3) [0,2]", f_expand_dims, &c3,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2)}, 1);
  axes_ctx c4 = {{0}, 1};
  check_case("expand_dims ()", f_expand_dims, &c4,
             (cmx_array[]){ru_rand(NULL, 0)}, 1);
  axes_ctx c5 = {{-1}, 1};
  check_case("expand_dims transposed [-1]", f_expand_dims, &c5,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 2}, 2))}, 1);
}

/* ---------------- Slice ---------------- */

static void test_slice(void) {
  slice_ctx c1 = {{1, 0}, {4, 6}, {2, 1}};
  check_case("slice (5,6) [1:4:2, :]", f_slice, &c1,
             (cmx_array[]){ru_rand((int64_t[]){5, 6}, 2)}, 1);
  slice_ctx c2 = {{6}, {-8}, {-3}};
  check_case("slice (7) [6::-3]", f_slice, &c2,
             (cmx_array[]){ru_rand((int64_t[]){7}, 1)}, 1);
  slice_ctx c3 = {{3, 1}, {0, 5}, {-1, 2}};
  check_case("slice transposed (4,5) [3:0:-1, 1::2]", f_slice, &c3,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){5, 4}, 2))}, 1);
  slice_ctx c4 = {{-2, 0}, {100, 1}, {1, 1}};
  check_case("slice (3,2) [-2:, :1]", f_slice, &c4,
             (cmx_array[]){ru_rand((int64_t[]){3, 2}, 2)}, 1);
  slice_ctx c6 = {{2, 0}, {2, 3}, {1, 1}};
  check_case("slice to empty", f_slice, &c6,
             (cmx_array[]){ru_rand((int64_t[]){3, 3}, 2)}, 1);
  axes_ctx c5 = {{0, 1}, 2};
  check_case("flip (3,4)", f_flip, &c5,
             (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2)}, 1);
}

/* The cotangent of a strided slice lands exactly on the sliced places. */
static void test_slice_values(void) {
  double v[7] = {0, 1, 2, 3, 4, 5, 6};
  cmx_array x = ru_f64(v, (int64_t[]){7}, 1);
  slice_ctx c = {{6}, {-8}, {-3}};
  tc_closure cl = {f_slice, &c};
  cmx_closure f = {tc_call, &cl};
  double cv[3] = {10, 20, 30};
  cmx_array ct = ru_f64(cv, (int64_t[]){3}, 1), g = NULL;
  OK(cmx_vjp(f, &x, 1, &ct, 1, NULL, NULL, &g));
  const double* d = NULL;
  cmx_array gc = NULL;
  OK(cmx_contiguous(&gc, g, false, S));
  OK(cmx_array_eval(gc));
  OK(cmx_array_data(gc, (const void**)&d));
  double want[7] = {30, 0, 0, 20, 0, 0, 10};
  for (int i = 0; d && i < 7; i++) CHECK(d[i] == want[i]);
  ru_release((cmx_array[]){x, ct, g, gc}, 4);
}

/* ---------------- AsStrided ---------------- */

static void test_as_strided(void) {
  strided_ctx c1 = {{3, 3}, {5, 1}, 2, 2};
  check_case("as_strided (4,5) window", f_as_strided, &c1,
             (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2)}, 1);
  /* Overlapping windows read elements more than once: they accumulate. */
  strided_ctx c2 = {{6, 4}, {2, 1}, 1, 2};
  check_case("as_strided overlapping", f_as_strided, &c2,
             (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2)}, 1);
  check_case("as_strided of a transposed view", f_as_strided, &c2,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){5, 4}, 2))}, 1);
  strided_ctx c3 = {{3, 4}, {0, 1}, 3, 2};
  check_case("as_strided stride 0", f_as_strided, &c3,
             (cmx_array[]){ru_rand((int64_t[]){8}, 1)}, 1);
}

/* Each input element gets the number of times the view reads it. */
static void test_as_strided_counts(void) {
  cmx_array x = ru_rand((int64_t[]){6}, 1);
  strided_ctx c = {{3, 3}, {1, 1}, 0, 2}; /* reads 0..4 */
  tc_closure cl = {f_as_strided, &c};
  cmx_closure f = {tc_call, &cl};
  cmx_array ct = NULL, g = NULL;
  OK(cmx_ones(&ct, (int64_t[]){3, 3}, 2, CMX_FLOAT64, S));
  OK(cmx_vjp(f, &x, 1, &ct, 1, NULL, NULL, &g));
  double want[6] = {1, 2, 3, 2, 1, 0};
  for (int i = 0; i < 6; i++) {
    cmx_array e = NULL;
    double v = -1;
    cmx_array idx = NULL;
    cmx_array_from_double(&idx, i, CMX_INT32);
    cmx_take(&e, g, idx, NULL, S);
    cmx_array_item_double(e, &v);
    CHECK_MSG(v == want[i], "as_strided count %d: %g", i, v);
    ru_release((cmx_array[]){e, idx}, 2);
  }
  ru_release((cmx_array[]){x, ct, g}, 3);
}

/* ---------------- Reshape and Contiguous ---------------- */

static void test_reshape_contiguous(void) {
  shape_ctx c1 = {{6, 4}, 2};
  check_case("reshape (2,3,4)->(6,4)", f_reshape, &c1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3, 4}, 3)}, 1);
  shape_ctx c2 = {{12, 2}, 2};
  check_case("reshape transposed (4,3,2)->(12,2)", f_reshape, &c2,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){2, 3, 4}, 3))}, 1);
  shape_ctx c3 = {{1, 1}, 2};
  check_case("reshape ()->(1,1)", f_reshape, &c3,
             (cmx_array[]){ru_rand(NULL, 0)}, 1);
  shape_ctx c4 = {{-1}, 1};
  check_case("reshape (3,2)->(-1)", f_reshape, &c4,
             (cmx_array[]){ru_rand((int64_t[]){3, 2}, 2)}, 1);
  check_case("contiguous of a transposed view", f_contiguous, NULL,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 4}, 2))}, 1);
  check_case("contiguous (2,3)", f_contiguous, NULL,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2)}, 1);
}

/* ---------------- View ---------------- */

/* A View node of x's own dtype (the op never makes one: view to the same
 * dtype returns x), to check the identity case of the rules. */
static cmx_status f_view_same(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  cmx_dtype dt = cmx_array_dtype(in[0]);
  cmx__view_params q = {.dtype = (int)dt};
  cmx_primitive* p = cmx_primitive_new(&cmx__vt_View, &q, sizeof q, S);
  const int64_t* sh[1] = {cmx_array_shape(in[0])};
  int nd = cmx_array_ndim(in[0]);
  return cmx_primitive_apply(&outs[0], 1, p, in, 1, sh, &nd, &dt);
}

typedef struct {
  cmx_dtype dt;
} view_ctx;

static cmx_status f_view(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)n;
  *nout = 1;
  return cmx_view(&outs[0], in[0], ((view_ctx*)ctx)->dt, S);
}

/* x + view(view(x, int32), float32): the reinterpreted path carries no
 * derivative (bits are not differentiable), so the gradient is 1. */
static cmx_status f_view_roundtrip(void* ctx, const cmx_array* in, int n,
                                   cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  cmx_array i = NULL, f = NULL;
  cmx_view(&i, in[0], CMX_INT32, S);
  cmx_view(&f, i, CMX_FLOAT32, S);
  cmx_status st = cmx_add(&outs[0], in[0], f, S);
  ru_release((cmx_array[]){i, f}, 2);
  return st;
}

static void test_view(void) {
  check_case("view, same dtype", f_view_same, NULL,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 4}, 2))}, 1);
  cmx_array b = ru_rand((int64_t[]){2, 3}, 2);
  cmx_array x32 = ru_astype(b, CMX_FLOAT32);
  cmx_array_release(b);
  tc_closure cl = {f_view_roundtrip, NULL};
  cmx_closure f = {tc_call, &cl};
  cmx_array ct = NULL, g = NULL, ones = NULL;
  OK(cmx_ones_like(&ct, x32, S));
  OK(cmx_vjp(f, &x32, 1, &ct, 1, NULL, NULL, &g));
  CHECK(g && cmx_array_dtype(g) == CMX_FLOAT32);
  OK(cmx_ones_like(&ones, x32, S));
  CHECK(g && tc_max_err(g, ones) == 0);
  cmx_array* jv = NULL;
  int nj = 0;
  OK(cmx_jvp(f, &x32, 1, &ones, NULL, &jv, &nj));
  CHECK(nj == 1 && tc_max_err(jv[0], ones) == 0);
  cmx_arrays_free(jv, nj);
  /* vmap of views to a wider, a narrower and a same-size dtype. */
  view_ctx v64 = {CMX_FLOAT64}, v16 = {CMX_INT16}, vi = {CMX_UINT32};
  b = ru_rand((int64_t[]){3, 4}, 2);
  cmx_array x4 = ru_astype(b, CMX_FLOAT32);
  cmx_array_release(b);
  ru_vmap_all("view float32->float64", f_view, &v64, &x4, 1);
  ru_vmap_all("view float32->int16", f_view, &v16, &x4, 1);
  ru_vmap_all("view float32->uint32", f_view, &vi, &x4, 1);
  ru_release((cmx_array[]){x32, ct, g, ones, x4}, 5);
}

/* ---------------- SliceUpdate ---------------- */

static void test_slice_update(void) {
  slice_ctx c1 = {{1, 0}, {3, 5}, {1, 1}};
  check_case("slice_update (4,5) [1:3, :]", f_slice_update, &c1,
             (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2),
                           ru_rand((int64_t[]){2, 5}, 2)},
             2);
  slice_ctx c2 = {{5, 1}, {-10, 4}, {-2, 2}};
  check_case("slice_update negative step", f_slice_update, &c2,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 6}, 2)),
                           ru_rand((int64_t[]){3, 1}, 2)},
             2);
  /* A broadcast update: the op broadcasts (1,) to the region. */
  slice_ctx c3 = {{0}, {6}, {2}};
  check_case(
      "slice_update broadcast update", f_slice_update, &c3,
      (cmx_array[]){ru_rand((int64_t[]){7}, 1), ru_rand((int64_t[]){1}, 1)}, 2);
}

/* ---------------- Concatenate ---------------- */

static void test_concatenate(void) {
  int ax1 = 1, ax0 = 0, axm = -1;
  check_case("concatenate 3 arrays axis 1", f_concatenate, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           ru_T(ru_rand((int64_t[]){1, 2}, 2)),
                           ru_rand((int64_t[]){2, 4}, 2)},
             3);
  check_case("concatenate axis 0", f_concatenate, &ax0,
             (cmx_array[]){ru_rand((int64_t[]){1, 3}, 2),
                           ru_rand((int64_t[]){2, 3}, 2)},
             2);
  check_case("concatenate with an empty piece", f_concatenate, &ax0,
             (cmx_array[]){ru_rand((int64_t[]){0, 3}, 2),
                           ru_rand((int64_t[]){2, 3}, 2)},
             2);
  check_case("stack axis -1", f_stack, &axm,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           ru_rand((int64_t[]){2, 3}, 2)},
             2);
}

/* ---------------- Pad ---------------- */

static void test_pad(void) {
  pad_ctx c1 = {{0, 1}, {1, 0}, {2, 3}, 2, CMX_PAD_CONSTANT, true};
  check_case("pad constant with a value input", f_pad, &c1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2), ru_rand(NULL, 0)}, 2);
  pad_ctx c2 = {{-1}, {2}, {1}, 1, CMX_PAD_CONSTANT, false};
  check_case("pad constant zero, transposed", f_pad, &c2,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){4, 2}, 2))}, 1);
  pad_ctx c3 = {{0, 1}, {1, 2}, {2, 1}, 2, CMX_PAD_EDGE, false};
  check_case("pad edge", f_pad, &c3,
             (cmx_array[]){ru_rand((int64_t[]){3, 2}, 2)}, 1);
}

/* ---------------- dtypes of the rules ---------------- */

/* ---------------- Diagonal ---------------- */
typedef struct {
  int offset, ax1, ax2;
} diag_ctx;

static cmx_status t_diagonal(void* ctx, const cmx_array* in, int n,
                             cmx_array* outs, int* nout) {
  (void)n;
  const diag_ctx* c = ctx;
  *nout = 1;
  return cmx_diagonal(&outs[0], in[0], c->offset, c->ax1, c->ax2, S);
}

static void test_diagonal(void) {
  int64_t s345[3] = {3, 4, 5}, s44[2] = {4, 4};
  cmx_array x3 = ru_rand(s345, 3), x2 = ru_rand(s44, 2);
  diag_ctx d1 = {1, 0, 1}, d2 = {-1, 1, 0}, d3 = {0, -1, 0}, past = {9, 0, 1};
  tc_check_grad("diagonal 2-d", t_diagonal, &d2, &x2, 1, TOL);
  tc_check_grad("diagonal 3-d", t_diagonal, &d1, &x3, 1, TOL);
  tc_check_grad("diagonal 3-d last/first", t_diagonal, &d3, &x3, 1, TOL);
  for (int ax = 0; ax < 3; ax++) {
    char name[64];
    snprintf(name, sizeof name, "vmap diagonal axis %d", ax);
    tc_check_vmap(name, t_diagonal, &d1, &x3, 1, &ax, 0);
    tc_check_vmap(name, t_diagonal, &d2, &x3, 1, &ax, 1);
    tc_check_vmap(name, t_diagonal, &past, &x3, 1, &ax, 0); /* empty */
  }
  cmx_array_release(x3), cmx_array_release(x2);
}

static void test_rule_dtypes(void) {
  cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT16};
  for (int k = 0; k < 2; k++) {
    cmx_dtype dt = dts[k];
    cmx_array b = ru_rand((int64_t[]){3, 4}, 2);
    cmx_array x = ru_astype(b, dt), b1 = ru_rand((int64_t[]){1, 4}, 2);
    cmx_array x1 = ru_astype(b1, dt), y = NULL;
    char name[64];
#define DT_CASE(label, call)                                           \
  do {                                                                 \
    snprintf(name, sizeof name, "%s (%s)", label, cmx_dtype_name(dt)); \
    OK(call);                                                          \
    ru_rule_dtypes(name, y);                                           \
    cmx_array_release(y);                                              \
    y = NULL;                                                          \
  } while (0)
    DT_CASE("broadcast", cmx_broadcast_to(&y, x1, (int64_t[]){2, 3, 4}, 3, S));
    DT_CASE("transpose", cmx_transpose(&y, x, NULL, 0, S));
    DT_CASE("squeeze", cmx_squeeze(&y, x1, NULL, 0, S));
    DT_CASE("expand_dims", cmx_expand_dims(&y, x, (int[]){1}, 1, S));
    DT_CASE("slice", cmx_slice(&y, x, (int64_t[]){2, 0}, (int64_t[]){0, 4},
                               (int64_t[]){-1, 2}, S));
    DT_CASE("as_strided", cmx_as_strided(&y, x, (int64_t[]){3, 3}, 2,
                                         (int64_t[]){2, 1}, 1, S));
    DT_CASE("reshape", cmx_reshape(&y, x, (int64_t[]){6, 2}, 2, S));
    cmx_array xt = NULL;
    cmx_transpose(&xt, x, NULL, 0, S);
    DT_CASE("contiguous", cmx_contiguous(&y, xt, false, S));
    DT_CASE("slice_update", cmx_slice_update(&y, x, x1, (int64_t[]){1, 0},
                                             (int64_t[]){2, 4}, NULL, S));
    DT_CASE("concatenate", cmx_concatenate(&y, (cmx_array[]){x, x1}, 2, 0, S));
    DT_CASE("pad", cmx_pad(&y, x, NULL, (int64_t[]){1, 0}, (int64_t[]){0, 2}, 2,
                           NULL, CMX_PAD_CONSTANT, S));
#undef DT_CASE
    ru_release((cmx_array[]){b, x, b1, x1, xt}, 5);
  }
}

/* ---------------- second order ---------------- */

/* d/dx sum(h(x) * h(x)) for a chain h of shape ops: a gradient whose own
 * derivative goes through the vjp rules' ops (slice updates, pads,
 * transposes, concatenations). */
static cmx_status h_chain(const cmx_array* in, cmx_array* out) {
  cmx_array t = NULL, s = NULL, p = NULL, c = NULL, r = NULL;
  cmx_transpose(&t, in[0], NULL, 0, S);
  cmx_slice(&s, t, (int64_t[]){3, 0}, (int64_t[]){0, 3}, (int64_t[]){-1, 1}, S);
  cmx_pad(&p, s, NULL, (int64_t[]){1, 0}, (int64_t[]){0, 0}, 2, in[1],
          CMX_PAD_CONSTANT, S);
  cmx_concatenate(&c, (cmx_array[]){p, t}, 2, 0, S);
  cmx_reshape(&r, c, (int64_t[]){-1}, 1, S);
  cmx_status st = cmx_multiply(out, r, r, S);
  ru_release((cmx_array[]){t, s, p, c, r}, 5);
  return st;
}

static cmx_status f_chain_sum(void* ctx, const cmx_array* in, int n,
                              cmx_array** outs, int* nout) {
  (void)ctx, (void)n;
  cmx_array m = NULL;
  cmx_status st = h_chain(in, &m);
  *outs = malloc(sizeof(cmx_array));
  (*outs)[0] = NULL;
  if (st == CMX_OK) st = cmx_sum(&(*outs)[0], m, NULL, 0, false, S);
  cmx_array_release(m);
  *nout = st == CMX_OK ? 1 : 0;
  if (st != CMX_OK) free(*outs);
  return st;
}

/* The gradient of f_chain_sum with respect to both inputs. */
static cmx_status f_chain_grad(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  (void)ctx;
  cmx_closure f = {f_chain_sum, NULL};
  int args[2] = {0, 1};
  cmx_status st = cmx_value_and_grad(f, in, n, args, 2, NULL, NULL, outs);
  *nout = st == CMX_OK ? 2 : 0;
  return st;
}

static void test_second_order(void) {
  cmx_array x[2] = {ru_rand((int64_t[]){3, 4}, 2), ru_rand(NULL, 0)};
  tc_check_grad("grad of grad through shape ops", f_chain_grad, NULL, x, 2,
                TOL);
  int axes[2] = {0, CMX_VMAP_NONE};
  cmx_array xb[2] = {ru_rand((int64_t[]){RU_B, 3, 4}, 3),
                     cmx_array_retain(x[1])};
  tc_check_vmap("vmap of grad through shape ops", f_chain_grad, NULL, xb, 2,
                axes, 0);
  int axes2[2] = {CMX_VMAP_NONE, 0};
  cmx_array xc[2] = {cmx_array_retain(x[0]), ru_rand((int64_t[]){RU_B}, 1)};
  tc_check_vmap("vmap of grad over the pad value", f_chain_grad, NULL, xc, 2,
                axes2, 0);
  ru_release(x, 2);
  ru_release(xb, 2);
  ru_release(xc, 2);
}

int main(void) {
  RUN(test_broadcast);
  RUN(test_transpose);
  RUN(test_squeeze_expand);
  RUN(test_slice);
  RUN(test_slice_values);
  RUN(test_as_strided);
  RUN(test_as_strided_counts);
  RUN(test_reshape_contiguous);
  RUN(test_view);
  RUN(test_slice_update);
  RUN(test_concatenate);
  RUN(test_pad);
  RUN(test_diagonal);
  RUN(test_rule_dtypes);
  RUN(test_second_order);
  return test_summary("test_rules_shape");
}
