/* Transform rules of the indexing primitives (Gather, Scatter in every
 * mode, GatherAxis, ScatterAxis), reached through the public ops (take,
 * gather, scatter*, take/put_along_axis, index get/set/update): vjp
 * against finite differences and jvp against vjp in float64 with repeated
 * and negative indices, vmap against a loop over every input (indices and
 * updates too), rule dtypes for float32/float16, and second-order checks. */
#include "rules_util.h"

#define TOL 1e-6

static cmx_array iv(const int32_t* v, const int64_t* shape, int nd) {
  return ru_ints(v, shape, nd);
}

/* ---------------- take and gather ---------------- */

typedef struct {
  int axis;
  bool flat; /* axis NULL */
} axis_ctx;

static cmx_status f_take(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  axis_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_take(&outs[0], in[0], in[1], c->flat ? NULL : &c->axis, S);
}

static void check_case(const char* name, tc_fn fn, void* ctx, cmx_array* x,
                       int n) {
  tc_check_grad(name, fn, ctx, x, n, TOL);
  ru_vmap_all(name, fn, ctx, x, n);
  ru_release(x, n);
}

static void test_take(void) {
  axis_ctx flat = {0, true}, ax0 = {0, false}, ax1 = {1, false};
  check_case(
      "take flat, repeated and negative", f_take, &flat,
      (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                    iv((int32_t[]){0, -1, 2, 2, -6, 5}, (int64_t[]){6}, 1)},
      2);
  check_case("take axis 0, 2-d indices", f_take, &ax0,
             (cmx_array[]){ru_rand((int64_t[]){4, 3}, 2),
                           iv((int32_t[]){1, -1, 1, 0}, (int64_t[]){2, 2}, 2)},
             2);
  check_case("take axis 1 of a transposed view", f_take, &ax1,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){3, 4, 2}, 3)),
                           iv((int32_t[]){2, 2, -3}, (int64_t[]){3}, 1)},
             2);
  check_case("take scalar index", f_take, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           iv((int32_t[]){-1}, NULL, 0)},
             2);
}

typedef struct {
  int axes[4], naxes;
  int64_t sizes[4];
  int nsizes;
} gather_ctx;

/* in[0] = a, in[1..] = the index arrays. */
static cmx_status f_gather(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  gather_ctx* c = ctx;
  *nout = 1;
  return cmx_gather(&outs[0], in[0], in + 1, n - 1, c->axes, c->naxes, c->sizes,
                    c->nsizes, S);
}

static void test_gather(void) {
  gather_ctx c1 = {{0, 2}, 2, {1, 2, 1}, 3};
  check_case(
      "gather two axes, slices on a third", f_gather, &c1,
      (cmx_array[]){ru_rand((int64_t[]){4, 5, 3}, 3),
                    iv((int32_t[]){0, 3, -1, 3, 0, 2}, (int64_t[]){2, 3}, 2),
                    iv((int32_t[]){2, 2, 0}, (int64_t[]){3}, 1)},
      3);
  /* Overlapping slices of extent 2 on the indexed axis. */
  gather_ctx c2 = {{0}, 1, {2, 3}, 2};
  check_case("gather overlapping slices", f_gather, &c2,
             (cmx_array[]){ru_rand((int64_t[]){4, 3}, 2),
                           iv((int32_t[]){0, 1, -2, 1}, (int64_t[]){4}, 1)},
             2);
}

/* ---------------- take/put_along_axis ---------------- */

static cmx_status f_take_along(void* ctx, const cmx_array* in, int n,
                               cmx_array* outs, int* nout) {
  axis_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_take_along_axis(&outs[0], in[0], in[1], c->flat ? NULL : &c->axis,
                             S);
}

static cmx_status f_put_along(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  axis_ctx* c = ctx;
  (void)n;
  *nout = 1;
  return cmx_put_along_axis(&outs[0], in[0], in[1], in[2],
                            c->flat ? NULL : &c->axis, S);
}

typedef struct {
  int axis;
  cmx__scatter_mode mode;
} mode_ctx;

/* ScatterAxis with a combining mode (no public op has them: the vjp of
 * take_along_axis makes the add form). */
static cmx_status f_scatter_axis_mode(void* ctx, const cmx_array* in, int n,
                                      cmx_array* outs, int* nout) {
  mode_ctx* c = ctx;
  (void)n;
  *nout = 1;
  size_t mark = cmx__scope_enter();
  if (mark == 0) cmx__error_reset_pending();
  cmx_array r = cmx__scatter_axis("scatter_axis", in[0], in[1], in[2], &c->axis,
                                  c->mode, S);
  return cmx__scope_exit(mark, r, &outs[0]);
}

static void test_along_axis(void) {
  axis_ctx ax1 = {1, false}, ax0 = {0, false}, flat = {0, true};
  int32_t rows[6] = {3, -1, 0, 1, 1, -4};
  check_case("take_along_axis axis 1 repeated/negative", f_take_along, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                           iv(rows, (int64_t[]){3, 2}, 2)},
             2);
  check_case("take_along_axis axis 0 broadcast", f_take_along, &ax0,
             (cmx_array[]){ru_T(ru_rand((int64_t[]){4, 3}, 2)),
                           iv((int32_t[]){2, -1}, (int64_t[]){2, 1}, 2)},
             2);
  check_case("take_along_axis flat", f_take_along, &flat,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           iv((int32_t[]){5, 0, 5}, (int64_t[]){3}, 1)},
             2);
  /* put_along_axis: a repeated index keeps the last value, so only that
   * value gets a cotangent. */
  check_case("put_along_axis axis 1 repeated", f_put_along, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                           iv(rows, (int64_t[]){3, 2}, 2),
                           ru_rand((int64_t[]){3, 2}, 2)},
             3);
  check_case("put_along_axis axis 0, broadcast values", f_put_along, &ax0,
             (cmx_array[]){ru_rand((int64_t[]){3, 2}, 2),
                           iv((int32_t[]){1, 1, 2, -3}, (int64_t[]){2, 2}, 2),
                           ru_rand((int64_t[]){1, 2}, 2)},
             3);
  const char* names[5] = {"none", "add", "prod", "max", "min"};
  for (int m = 0; m < 5; m++) {
    mode_ctx mc = {1, (cmx__scatter_mode)m};
    char name[64];
    snprintf(name, sizeof name, "scatter_axis %s repeated", names[m]);
    check_case(name, f_scatter_axis_mode, &mc,
               (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                             iv(rows, (int64_t[]){3, 2}, 2),
                             ru_rand((int64_t[]){3, 2}, 2)},
               3);
  }
}

/* ---------------- scatter ---------------- */

typedef struct {
  int axes[4], naxes;
  cmx__scatter_mode mode;
} scatter_ctx;

/* in[0] = a, in[1..n-2] = indices, in[n-1] = updates. */
static cmx_status f_scatter(void* ctx, const cmx_array* in, int n,
                            cmx_array* outs, int* nout) {
  scatter_ctx* c = ctx;
  *nout = 1;
  typedef cmx_status (*fn_t)(cmx_array*, cmx_array, const cmx_array*, int,
                             cmx_array, const int*, int, cmx_stream);
  static const fn_t fns[5] = {cmx_scatter, cmx_scatter_add, cmx_scatter_prod,
                              cmx_scatter_max, cmx_scatter_min};
  return fns[c->mode](&outs[0], in[0], in + 1, n - 2, in[n - 1], c->axes,
                      c->naxes, S);
}

static void test_scatter(void) {
  const char* names[5] = {"none", "add", "prod", "max", "min"};
  char name[96];
  for (int m = 0; m < 5; m++) {
    scatter_ctx c1 = {{0}, 1, (cmx__scatter_mode)m};
    snprintf(name, sizeof name, "scatter_%s rows, repeated/negative", names[m]);
    check_case(name, f_scatter, &c1,
               (cmx_array[]){ru_rand((int64_t[]){5, 3}, 2),
                             iv((int32_t[]){1, -2, 1, -4}, (int64_t[]){4}, 1),
                             ru_rand((int64_t[]){4, 1, 3}, 3)},
               3);
    scatter_ctx c2 = {{0, 1}, 2, (cmx__scatter_mode)m};
    snprintf(name, sizeof name, "scatter_%s two axes", names[m]);
    check_case(name, f_scatter, &c2,
               (cmx_array[]){ru_T(ru_rand((int64_t[]){5, 4}, 2)),
                             iv((int32_t[]){0, 3, 0, -1}, (int64_t[]){2, 2}, 2),
                             iv((int32_t[]){1, 4, 1, 2}, (int64_t[]){2, 2}, 2),
                             ru_rand((int64_t[]){2, 2, 1, 1}, 4)},
               4);
    /* Updates narrower than a (the first two columns) and 2 rows high on
     * the indexed axis, so slices of repeated positions overlap. */
    scatter_ctx c3 = {{0}, 1, (cmx__scatter_mode)m};
    snprintf(name, sizeof name, "scatter_%s overlapping partial slices",
             names[m]);
    check_case(name, f_scatter, &c3,
               (cmx_array[]){ru_rand((int64_t[]){4, 3}, 2),
                             iv((int32_t[]){0, 1, 2}, (int64_t[]){3}, 1),
                             ru_rand((int64_t[]){3, 2, 2}, 3)},
               3);
  }
}

/* No index arrays (the update block goes at the origin) and empty
 * index arrays (nothing taken or written). */
static void test_index_edges(void) {
  const char* names[5] = {"none", "add", "prod", "max", "min"};
  char name[96];
  for (int m = 0; m < 5; m++) {
    scatter_ctx c = {{0}, 0, (cmx__scatter_mode)m};
    snprintf(name, sizeof name, "scatter_%s without indices", names[m]);
    check_case(name, f_scatter, &c,
               (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                             ru_rand((int64_t[]){2, 3}, 2)},
               2);
    scatter_ctx c1 = {{1}, 1, (cmx__scatter_mode)m};
    snprintf(name, sizeof name, "scatter_%s empty indices", names[m]);
    check_case(name, f_scatter, &c1,
               (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                             iv(NULL, (int64_t[]){0}, 1),
                             ru_rand((int64_t[]){0, 3, 1}, 3)},
               3);
  }
  axis_ctx ax1 = {1, false};
  check_case("take empty indices", f_take, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           iv(NULL, (int64_t[]){0, 2}, 2)},
             2);
  check_case("take_along_axis empty", f_take_along, &ax1,
             (cmx_array[]){ru_rand((int64_t[]){2, 3}, 2),
                           iv(NULL, (int64_t[]){2, 0}, 2)},
             2);
}

/* Exact cotangents of a plain scatter with a repeated index: the write
 * that stays gets the cotangent, the overridden one none; and of a
 * product scatter with zeros among the factors. */
static void test_scatter_values(void) {
  double av[4] = {1, 2, 3, 4}, uv[3] = {10, 20, 30};
  cmx_array a = ru_f64(av, (int64_t[]){4}, 1);
  cmx_array u = ru_f64(uv, (int64_t[]){3, 1}, 2);
  cmx_array idx = iv((int32_t[]){2, 0, 2}, (int64_t[]){3}, 1);
  scatter_ctx c = {{0}, 1, CMX__SCATTER_NONE};
  tc_closure cl = {f_scatter, &c};
  cmx_array x[3] = {a, idx, u}, g[3] = {0};
  double cv[4] = {1, 2, 3, 4};
  cmx_array ct = ru_f64(cv, (int64_t[]){4}, 1);
  OK(tc_vjp_floats(&cl, x, 3, &ct, 1, g));
  double ga[4] = {0, 2, 0, 4}, gu[3] = {0, 1, 3};
  cmx_array wa = ru_f64(ga, (int64_t[]){4}, 1);
  cmx_array wu = ru_f64(gu, (int64_t[]){3, 1}, 2);
  CHECK(tc_max_err(g[0], wa) == 0);
  CHECK(tc_max_err(g[2], wu) == 0);
  ru_release(g, 3);
  ru_release((cmx_array[]){wa, wu}, 2);
  /* prod: place 0 gets factors {0, 5} (one zero), place 1 gets {0, 0}
   * (two zeros), place 3 gets {2}. */
  double pv[5] = {0, 5, 0, 0, 2};
  cmx_array pu = ru_f64(pv, (int64_t[]){5, 1}, 2);
  cmx_array pidx = iv((int32_t[]){0, 0, 1, 1, 3}, (int64_t[]){5}, 1);
  scatter_ctx cp = {{0}, 1, CMX__SCATTER_PROD};
  tc_closure clp = {f_scatter, &cp};
  cmx_array xp[3] = {a, pidx, pu};
  OK(tc_vjp_floats(&clp, xp, 3, &ct, 1, g));
  /* d/da = cot * product of the factors; d/du_i = cot * a * others. */
  double wpa[4] = {0, 0, 3, 8}, wpu[5] = {1 * 1 * 5, 0, 0, 0, 4 * 4};
  cmx_array wa2 = ru_f64(wpa, (int64_t[]){4}, 1);
  cmx_array wu2 = ru_f64(wpu, (int64_t[]){5, 1}, 2);
  CHECK_MSG(tc_max_err(g[0], wa2) == 0, "scatter_prod d/da");
  CHECK_MSG(tc_max_err(g[2], wu2) == 0, "scatter_prod d/du");
  tc_check_grad("scatter_prod with zero factors", f_scatter, &cp, xp, 3, TOL);
  ru_release(g, 3);
  ru_release((cmx_array[]){a, u, idx, ct, pu, pidx, wa2, wu2}, 8);
}

/* ---------------- Python-style indexing ---------------- */

typedef struct {
  int kind; /* 0 get, 1 set, 2 update */
  cmx_index_update_op op;
  cmx_array value; /* a constant value (NULL: input 2) */
  int form;        /* which index */
} index_ctx;

/* The index of form f with the index array in[1]. */
static int make_index(int form, cmx_array idx, cmx_index* ix) {
  switch (form) {
    case 0: /* x[idx] */
      ix[0] = cmx_index_array(idx);
      return 1;
    case 1: /* x[idx, 1::2] */
      ix[0] = cmx_index_array(idx);
      ix[1] = cmx_index_slice(1, CMX_SLICE_NONE, 2);
      return 2;
    case 2: /* x[:, idx, None] */
      ix[0] = cmx_index_all();
      ix[1] = cmx_index_array(idx);
      ix[2] = cmx_index_newaxis();
      return 3;
    default: /* x[-1, idx] */
      ix[0] = cmx_index_int(-1);
      ix[1] = cmx_index_array(idx);
      return 2;
  }
}

static cmx_status f_index(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  index_ctx* c = ctx;
  (void)n;
  *nout = 1;
  cmx_index ix[4];
  int k = make_index(c->form, in[1], ix);
  cmx_array v = c->value ? c->value : (n > 2 ? in[2] : NULL);
  switch (c->kind) {
    case 0:
      return cmx_index_get(&outs[0], in[0], ix, k, S);
    case 1:
      return cmx_index_set(&outs[0], in[0], ix, k, v, S);
    default:
      return cmx_index_update(&outs[0], in[0], ix, k, v, c->op, S);
  }
}

/* Basic (slice-only) updates go through SliceUpdate. */
static cmx_status f_set_slice(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  cmx_index ix[2] = {cmx_index_slice(3, 0, -2), cmx_index_int(1)};
  return cmx_index_set(&outs[0], in[0], ix, 2, in[1], S);
}

static void test_index_ops(void) {
  int32_t rep[4] = {2, -1, 2, 0};
  char name[96];
  for (int form = 0; form < 4; form++) {
    index_ctx get = {0, 0, NULL, form};
    snprintf(name, sizeof name, "index_get form %d", form);
    check_case(name, f_index, &get,
               (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2),
                             iv(rep, (int64_t[]){4}, 1)},
               2);
  }
  /* Value shapes of a[idx] (4,5), a[idx, 1::2] (4,2), a[:, idx, None]
   * (4,4,1), a[-1, idx] (4). */
  const int64_t vshape[4][3] = {{4, 5}, {4, 2}, {4, 4, 1}, {4}};
  const int vnd[4] = {2, 2, 3, 1};
  for (int form = 0; form < 4; form++) {
    index_ctx set = {1, 0, NULL, form};
    snprintf(name, sizeof name, "index_set form %d repeated", form);
    check_case(
        name, f_index, &set,
        (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2), iv(rep, (int64_t[]){4}, 1),
                      ru_rand(vshape[form], vnd[form])},
        3);
  }
  cmx_index_update_op ops[4] = {CMX_UPDATE_ADD, CMX_UPDATE_MULTIPLY,
                                CMX_UPDATE_MAXIMUM, CMX_UPDATE_MINIMUM};
  for (int k = 0; k < 4; k++) {
    index_ctx up = {2, ops[k], NULL, 1};
    snprintf(name, sizeof name, "index_update op %d repeated", (int)ops[k]);
    check_case(
        name, f_index, &up,
        (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2), iv(rep, (int64_t[]){4}, 1),
                      ru_rand((int64_t[]){4, 2}, 2)},
        3);
  }
  /* subtract / divide with a constant value (their value paths go
   * through negative and reciprocal, other families' rules). */
  cmx_array cv = ru_rand((int64_t[]){2}, 1);
  cmx_index_update_op cops[2] = {CMX_UPDATE_SUBTRACT, CMX_UPDATE_DIVIDE};
  for (int k = 0; k < 2; k++) {
    index_ctx up = {2, cops[k], cv, 1};
    snprintf(name, sizeof name, "index_update op %d constant value",
             (int)cops[k]);
    check_case(name, f_index, &up,
               (cmx_array[]){ru_rand((int64_t[]){4, 5}, 2),
                             iv(rep, (int64_t[]){4}, 1)},
               2);
  }
  cmx_array_release(cv);
  check_case(
      "index_set x[3:0:-2, 1] = v", f_set_slice, NULL,
      (cmx_array[]){ru_rand((int64_t[]){4, 3}, 2), ru_rand((int64_t[]){2}, 1)},
      2);
}

/* MLX's documented example: x[idx] = 2 then sum has gradient 1 off idx. */
static cmx_status f_doc(void* pl, const cmx_array* in, int n, cmx_array** outs,
                        int* nout) {
  (void)pl, (void)n;
  cmx_array two = NULL, y = NULL;
  cmx_array_from_double(&two, 2.0, CMX_FLOAT32);
  cmx_index ix[1] = {cmx_index_array(in[1])};
  cmx_status st = cmx_index_set(&y, in[0], ix, 1, two, S);
  *outs = malloc(sizeof(cmx_array));
  (*outs)[0] = NULL;
  if (st == CMX_OK) st = cmx_sum(&(*outs)[0], y, NULL, 0, false, S);
  ru_release((cmx_array[]){two, y}, 2);
  *nout = 1;
  return st;
}

static void test_documented_example(void) {
  float xv[3] = {1, 2, 3};
  cmx_array x = NULL, g = NULL;
  cmx_array_from_data(&x, xv, (int64_t[]){3}, 1, CMX_FLOAT32);
  cmx_array idx = iv((int32_t[]){1}, (int64_t[]){1}, 1);
  cmx_closure f = {f_doc, NULL};
  int arg = 0;
  OK(cmx_value_and_grad(f, (cmx_array[]){x, idx}, 2, &arg, 1, NULL, NULL, &g));
  char* s = NULL;
  if (g) cmx_array_tostring(g, &s);
  CHECK_MSG(s && !strcmp(s, "array([1, 0, 1], dtype=float32)"), "got %s",
            s ? s : "(null)");
  cmx_free(s);
  ru_release((cmx_array[]){x, g, idx}, 3);
}

/* ---------------- dtypes of the rules ---------------- */

static void test_rule_dtypes(void) {
  cmx_dtype dts[2] = {CMX_FLOAT32, CMX_FLOAT16};
  cmx_array idx = iv((int32_t[]){1, -1, 1}, (int64_t[]){3}, 1);
  cmx_array idx2 = iv((int32_t[]){0, 3, 3, 1, 0, 2}, (int64_t[]){3, 2}, 2);
  for (int k = 0; k < 2; k++) {
    cmx_dtype dt = dts[k];
    cmx_array b = ru_rand((int64_t[]){3, 4}, 2);
    cmx_array x = ru_astype(b, dt), bu = ru_rand((int64_t[]){3, 1, 4}, 3);
    cmx_array u = ru_astype(bu, dt), bv = ru_rand((int64_t[]){3, 2}, 2);
    cmx_array v = ru_astype(bv, dt), y = NULL;
    char name[64];
    int ax0 = 0, ax1 = 1;
#define DT_CASE(label, call)                                           \
  do {                                                                 \
    snprintf(name, sizeof name, "%s (%s)", label, cmx_dtype_name(dt)); \
    OK(call);                                                          \
    ru_rule_dtypes(name, y);                                           \
    cmx_array_release(y);                                              \
    y = NULL;                                                          \
  } while (0)
    DT_CASE("gather",
            cmx_gather(&y, x, &idx, 1, &ax0, 1, (int64_t[]){1, 4}, 2, S));
    DT_CASE("scatter", cmx_scatter(&y, x, &idx, 1, u, &ax0, 1, S));
    DT_CASE("scatter_add", cmx_scatter_add(&y, x, &idx, 1, u, &ax0, 1, S));
    DT_CASE("scatter_prod", cmx_scatter_prod(&y, x, &idx, 1, u, &ax0, 1, S));
    DT_CASE("scatter_max", cmx_scatter_max(&y, x, &idx, 1, u, &ax0, 1, S));
    DT_CASE("scatter_min", cmx_scatter_min(&y, x, &idx, 1, u, &ax0, 1, S));
    DT_CASE("take_along_axis", cmx_take_along_axis(&y, x, idx2, &ax1, S));
    DT_CASE("put_along_axis", cmx_put_along_axis(&y, x, idx2, v, &ax1, S));
#undef DT_CASE
    ru_release((cmx_array[]){b, x, bu, u, bv, v}, 6);
  }
  ru_release((cmx_array[]){idx, idx2}, 2);
}

/* ---------------- second order ---------------- */

/* sum(g(x)^2) for g an indexing op of the inputs (ctx: which). */
typedef struct {
  int which; /* 0 take, 1 take_along_axis, 2 scatter_max, 3 put_along */
} so_ctx;

static cmx_status so_inner(void* pl, const cmx_array* in, int n,
                           cmx_array** outs, int* nout) {
  so_ctx* c = pl;
  (void)n;
  cmx_array y = NULL, m = NULL;
  int ax0 = 0, ax1 = 1;
  cmx_status st;
  switch (c->which) {
    case 0:
      st = cmx_take(&y, in[0], in[1], &ax0, S);
      break;
    case 1:
      st = cmx_take_along_axis(&y, in[0], in[1], &ax1, S);
      break;
    case 2:
      st = cmx_scatter_max(&y, in[0], &in[1], 1, in[2], &ax0, 1, S);
      break;
    default:
      st = cmx_put_along_axis(&y, in[0], in[1], in[2], &ax1, S);
  }
  if (st == CMX_OK) st = cmx_multiply(&m, y, y, S);
  *outs = malloc(sizeof(cmx_array));
  (*outs)[0] = NULL;
  if (st == CMX_OK) st = cmx_sum(&(*outs)[0], m, NULL, 0, false, S);
  ru_release((cmx_array[]){y, m}, 2);
  *nout = 1;
  return st;
}

/* The gradient of so_inner with respect to its float inputs. */
static cmx_status so_grad(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  cmx_closure f = {so_inner, ctx};
  int args[2] = {0, 2};
  int nargs = n > 2 ? 2 : 1;
  cmx_status st = cmx_value_and_grad(f, in, n, args, nargs, NULL, NULL, outs);
  *nout = st == CMX_OK ? nargs : 0;
  return st;
}

static void test_second_order(void) {
  int32_t rows[6] = {3, -1, 0, 1, 1, -4};
  so_ctx c0 = {0}, c1 = {1}, c2 = {2}, c3 = {3};
  check_case("grad of take", so_grad, &c0,
             (cmx_array[]){ru_rand((int64_t[]){4, 3}, 2),
                           iv((int32_t[]){1, -1, 1, 0}, (int64_t[]){2, 2}, 2)},
             2);
  check_case("grad of take_along_axis", so_grad, &c1,
             (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                           iv(rows, (int64_t[]){3, 2}, 2)},
             2);
  check_case("grad of scatter_max", so_grad, &c2,
             (cmx_array[]){ru_rand((int64_t[]){5, 3}, 2),
                           iv((int32_t[]){1, -2, 1, -4}, (int64_t[]){4}, 1),
                           ru_rand((int64_t[]){4, 1, 3}, 3)},
             3);
  check_case("grad of put_along_axis", so_grad, &c3,
             (cmx_array[]){ru_rand((int64_t[]){3, 4}, 2),
                           iv(rows, (int64_t[]){3, 2}, 2),
                           ru_rand((int64_t[]){3, 2}, 2)},
             3);
}

int main(void) {
  RUN(test_take);
  RUN(test_gather);
  RUN(test_along_axis);
  RUN(test_scatter);
  RUN(test_scatter_values);
  RUN(test_index_edges);
  RUN(test_index_ops);
  RUN(test_documented_example);
  RUN(test_rule_dtypes);
  RUN(test_second_order);
  return test_summary("test_rules_indexing");
}
