/* Transform rules of the binary and ternary elementwise primitives
 * (rules_binary.c): vjp against finite differences and jvp against vjp on
 * broadcast, transposed and strided operands (the ops broadcast
 * explicitly, so the Broadcast rule is exercised too), zero derivatives of
 * the non-differentiable ones, the rules' dtypes for float32/float16,
 * second derivatives, vmap against a loop with mapped and unmapped
 * operands, and MLX's conventions (ties of maximum/minimum, power at 0,
 * remainder's d/db). */
#include "rules_ew_util.h"

typedef cmx_status (*binary_api)(cmx_array*, cmx_array, cmx_array, cmx_stream);

/* DIFF: differentiable; ZERO: zero derivative. */
typedef enum { DIFF, ZERO } ew_kind;

/* Values in [lo, hi], or +-[lo, hi] when sgn. */
typedef struct dom {
  double lo, hi;
  bool sgn;
} dom;

typedef struct bcase {
  const char* name;
  const char* prim;
  binary_api f;
  dom a, b;
  ew_kind kind;
} bcase;

#define ANY \
  { -2, 2, false }
#define NONZERO \
  { 0.5, 2, true }
static const bcase BINARY[] = {
    {"add", "Add", cmx_add, ANY, ANY, DIFF},
    {"subtract", "Subtract", cmx_subtract, ANY, ANY, DIFF},
    {"multiply", "Multiply", cmx_multiply, ANY, ANY, DIFF},
    {"divide", "Divide", cmx_divide, ANY, NONZERO, DIFF},
    {"remainder", "Remainder", cmx_remainder, {-3, 3, false}, NONZERO, DIFF},
    {"power", "Power", cmx_power, {0.5, 2, false}, ANY, DIFF},
    {"maximum", "Maximum", cmx_maximum, ANY, ANY, DIFF},
    {"minimum", "Minimum", cmx_minimum, ANY, ANY, DIFF},
    {"arctan2", "ArcTan2", cmx_arctan2, {0.3, 2, true}, {0.3, 2, true}, DIFF},
    {"logaddexp",
     "LogAddExp",
     cmx_logaddexp,
     {-3, 3, false},
     {-3, 3, false},
     DIFF},
    {"floor_divide",
     "FloorDivide",
     cmx_floor_divide,
     {-3, 3, false},
     NONZERO,
     ZERO},
    {"equal", "Equal", cmx_equal, ANY, ANY, ZERO},
    {"not_equal", "NotEqual", cmx_not_equal, ANY, ANY, ZERO},
    {"less", "Less", cmx_less, ANY, ANY, ZERO},
    {"less_equal", "LessEqual", cmx_less_equal, ANY, ANY, ZERO},
    {"greater", "Greater", cmx_greater, ANY, ANY, ZERO},
    {"greater_equal", "GreaterEqual", cmx_greater_equal, ANY, ANY, ZERO},
    {"logical_and", "LogicalAnd", cmx_logical_and, ANY, ANY, ZERO},
    {"logical_or", "LogicalOr", cmx_logical_or, ANY, ANY, ZERO},
    {"logical_xor", "LogicalXor", cmx_logical_xor, ANY, ANY, ZERO},
};
#define NBINARY ((int)(sizeof BINARY / sizeof BINARY[0]))

static cmx_status t_binary(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  (void)n;
  *nout = 1;
  return ((const bcase*)ctx)->f(&outs[0], in[0], in[1], S);
}

static cmx_array rand_dom(const int64_t* shape, int ndim, dom d) {
  return ew_rand_s(shape, ndim, d.lo, d.hi, d.sgn);
}

/* Operand pairs: equal shapes, scalars, one or both broadcast, and
 * transposed against strided views. */
#define NPAIRS 7
static const char* PAIR_NAMES[NPAIRS] = {
    "scalars",  "(3,4) (3,4)",        "(3,4) (4)",    "(3,1) (1,4)",
    "() (2,3)", "transposed strided", "(2,3,4) (3,1)"};
static void make_pair(int k, dom da, dom db, cmx_array* a, cmx_array* b) {
  int64_t s0[1] = {0}, s34[2] = {3, 4}, s4[1] = {4}, s31[2] = {3, 1};
  int64_t s14[2] = {1, 4}, s23[2] = {2, 3}, s234[3] = {2, 3, 4};
  switch (k) {
    case 0:
      *a = rand_dom(s0, 0, da), *b = rand_dom(s0, 0, db);
      break;
    case 1:
      *a = rand_dom(s34, 2, da), *b = rand_dom(s34, 2, db);
      break;
    case 2:
      *a = rand_dom(s34, 2, da), *b = rand_dom(s4, 1, db);
      break;
    case 3:
      *a = rand_dom(s31, 2, da), *b = rand_dom(s14, 2, db);
      break;
    case 4:
      *a = rand_dom(s0, 0, da), *b = rand_dom(s23, 2, db);
      break;
    case 5:
      *a = ew_transposed(3, 4, da.lo, da.hi, da.sgn);
      *b = ew_sliced(3, 4, db.lo, db.hi, db.sgn);
      break;
    default:
      *a = rand_dom(s234, 3, da), *b = rand_dom(s31, 2, db);
      break;
  }
}

static void test_binary_grads(void) {
  char name[128];
  for (int i = 0; i < NBINARY; i++) {
    const bcase* c = &BINARY[i];
    for (int k = 0; k < NPAIRS; k++) {
      cmx_array ab[2];
      make_pair(k, c->a, c->b, &ab[0], &ab[1]);
      snprintf(name, sizeof name, "%s %s", c->name, PAIR_NAMES[k]);
      tc_check_grad(name, t_binary, (void*)c, ab, 2, 1e-6);
      if (c->kind == ZERO) ew_check_zero_grad(name, t_binary, (void*)c, ab, 2);
      cmx_array_release(ab[0]);
      cmx_array_release(ab[1]);
    }
  }
}

/* The rules called directly: cotangents and tangents in the inputs' and
 * output's dtypes for float32, float16 and float64. */
static void test_binary_rule_dtypes(void) {
  int64_t s34[2] = {3, 4};
  const cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_FLOAT64};
  char name[128];
  for (int i = 0; i < NBINARY; i++) {
    const bcase* c = &BINARY[i];
    cmx_array a = rand_dom(s34, 2, c->a), b = rand_dom(s34, 2, c->b);
    for (int d = 0; d < 3; d++) {
      cmx_array ab[2] = {ew_cast(a, dts[d]), ew_cast(b, dts[d])};
      snprintf(name, sizeof name, "%s %s", c->name, cmx_dtype_name(dts[d]));
      ew_check_rules(name, c->prim, t_binary, (void*)c, ab, 2, c->kind == ZERO);
      cmx_array_release(ab[0]);
      cmx_array_release(ab[1]);
    }
    cmx_array_release(a);
    cmx_array_release(b);
  }
}

/* Integer operands: the bitwise ops and shifts (integers only), and the
 * arithmetic ones, give no derivatives; their rules run (integer inputs
 * are traced too) and return none. */
static void test_binary_integers(void) {
  int32_t av[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int32_t bv[12] = {3, 1, 2, 0, 1, 3, 2, 1, 0, 2, 1, 3};
  int64_t s34[2] = {3, 4}, s4[1] = {4}, s43[2] = {4, 3}, s3[1] = {3};
  cmx_array ab[2] = {NULL, NULL}, abb[2] = {NULL, NULL};
  cmx_array_from_data(&ab[0], av, s34, 2, CMX_INT32);
  cmx_array_from_data(&ab[1], bv, s34, 2, CMX_INT32);
  cmx_array_from_data(&abb[0], av, s43, 2, CMX_INT32);
  cmx_array_from_data(&abb[1], bv, s3, 1, CMX_INT32);
  const bcase ints[] = {
      {"bitwise_and", "BitwiseAnd", cmx_bitwise_and, ANY, ANY, ZERO},
      {"bitwise_or", "BitwiseOr", cmx_bitwise_or, ANY, ANY, ZERO},
      {"bitwise_xor", "BitwiseXor", cmx_bitwise_xor, ANY, ANY, ZERO},
      {"left_shift", "LeftShift", cmx_left_shift, ANY, ANY, ZERO},
      {"right_shift", "RightShift", cmx_right_shift, ANY, ANY, ZERO},
      {"add int", "Add", cmx_add, ANY, ANY, DIFF},
      {"multiply int", "Multiply", cmx_multiply, ANY, ANY, DIFF},
      {"power int", "Power", cmx_power, ANY, ANY, DIFF},
      {"maximum int", "Maximum", cmx_maximum, ANY, ANY, DIFF},
      {"remainder int", "Remainder", cmx_remainder, ANY, ANY, DIFF},
      {"logical_and int", "LogicalAnd", cmx_logical_and, ANY, ANY, ZERO}};
  for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
    const bcase* c = &ints[k];
    tc_check_grad(c->name, t_binary, (void*)c, ab, 2, 1e-6);
    ew_check_zero_grad(c->name, t_binary, (void*)c, ab, 2);
    ew_check_zero_grad(c->name, t_binary, (void*)c, abb, 2);
    /* Integer inputs get no cotangent from any rule. */
    ew_check_rules(c->name, c->prim, t_binary, (void*)c, ab, 2, true);
    int ax[2] = {0, 0}, ax2[2] = {0, CMX_VMAP_NONE};
    tc_check_vmap(c->name, t_binary, (void*)c, ab, 2, ax, 0);
    tc_check_vmap(c->name, t_binary, (void*)c, abb, 2, ax2, 1);
  }
  /* Booleans through the logical ops. */
  bool pv[4] = {true, false, true, false}, qv[4] = {true, true, false, false};
  cmx_array pq[2] = {NULL, NULL};
  cmx_array_from_data(&pq[0], pv, s4, 1, CMX_BOOL);
  cmx_array_from_data(&pq[1], qv, s4, 1, CMX_BOOL);
  for (int i = 0; i < NBINARY; i++)
    if (!strncmp(BINARY[i].name, "logical", 7)) {
      ew_check_zero_grad(BINARY[i].name, t_binary, (void*)&BINARY[i], pq, 2);
      ew_check_rules(BINARY[i].name, BINARY[i].prim, t_binary,
                     (void*)&BINARY[i], pq, 2, true);
    }
  for (int i = 0; i < 2; i++) {
    cmx_array_release(ab[i]);
    cmx_array_release(abb[i]);
    cmx_array_release(pq[i]);
  }
}

/* Second derivatives: the gradients of sum(op(a, b)) differentiated again,
 * and vmap of the gradients. Operands of one shape: differentiating the
 * Broadcast rule's reduction (sum then Reshape) again needs the shape
 * family's Reshape rules. */
static void test_binary_second_order(void) {
  char name[128];
  int64_t s43[2] = {4, 3}, s3[1] = {3};
  for (int i = 0; i < NBINARY; i++) {
    const bcase* c = &BINARY[i];
    ew_grad_ctx g = {t_binary, (void*)c};
    for (int k = 0; k <= 1; k++) {
      cmx_array ab[2];
      make_pair(k, c->a, c->b, &ab[0], &ab[1]);
      snprintf(name, sizeof name, "grad of grad of %s %s", c->name,
               PAIR_NAMES[k]);
      tc_check_grad(name, ew_grad_fn, &g, ab, 2, 1e-5);
      cmx_array_release(ab[0]);
      cmx_array_release(ab[1]);
    }
    if (c->kind == DIFF) {
      cmx_array ab[2] = {rand_dom(s43, 2, c->a), rand_dom(s43, 2, c->b)};
      cmx_array b3 = rand_dom(s3, 1, c->b);
      cmx_array a_b3[2] = {ab[0], b3};
      int ax[2] = {0, CMX_VMAP_NONE}, ax2[2] = {1, 1};
      snprintf(name, sizeof name, "vmap of grad of %s", c->name);
      tc_check_vmap(name, ew_grad_fn, &g, a_b3, 2, ax, 0);
      tc_check_vmap(name, ew_grad_fn, &g, ab, 2, ax2, 1);
      cmx_array_release(ab[0]);
      cmx_array_release(ab[1]);
      cmx_array_release(b3);
    }
  }
}

/* vmap against a loop: both mapped on axis 0, the last axis against an
 * unmapped operand, unmapped against mapped, and different axes. */
static void test_binary_vmap(void) {
  int64_t s43[2] = {4, 3}, s34[2] = {3, 4}, s3[1] = {3}, s235[3] = {2, 3, 5};
  int64_t s53[2] = {5, 3};
  char name[128];
  for (int i = 0; i < NBINARY; i++) {
    const bcase* c = &BINARY[i];
    struct {
      const int64_t *sa, *sb;
      int na, nb;
      int ax[2];
      int out;
    } cfg[] = {{s43, s43, 2, 2, {0, 0}, 0},
               {s34, s3, 2, 1, {-1, CMX_VMAP_NONE}, 0},
               {s3, s43, 1, 2, {CMX_VMAP_NONE, 0}, 1},
               {s34, s43, 2, 2, {1, 0}, 1},
               {s235, s53, 3, 2, {2, 0}, 0}};
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
      cmx_array ab[2] = {rand_dom(cfg[k].sa, cfg[k].na, c->a),
                         rand_dom(cfg[k].sb, cfg[k].nb, c->b)};
      snprintf(name, sizeof name, "vmap %s config %zu", c->name, k);
      tc_check_vmap(name, t_binary, (void*)c, ab, 2, cfg[k].ax, cfg[k].out);
      cmx_array_release(ab[0]);
      cmx_array_release(ab[1]);
    }
  }
}

/* ---------------- MLX's conventions, by value ---------------- */
static cmx_array f64v(const double* v, int n) {
  int64_t sh[1] = {n};
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, sh, 1, CMX_FLOAT64);
  return a;
}

/* Gradients of sum(op(a, b)) at given values, compared with want. */
static void grads_equal(const char* name, const bcase* c, const double* av,
                        const double* bv, int n, const double* ga,
                        const double* gb) {
  cmx_array ab[2] = {f64v(av, n), f64v(bv, n)}, g[2] = {NULL, NULL};
  cmx_closure f = {ew_sum_call, &(ew_grad_ctx){t_binary, (void*)c}};
  int args[2] = {0, 1};
  OK(cmx_value_and_grad(f, ab, 2, args, 2, NULL, NULL, g));
  for (int k = 0; k < 2 && g[k]; k++) {
    double v[8];
    cmx_array_copy_to(g[k], v, (size_t)n * sizeof(double));
    bool same = true;
    for (int i = 0; i < n; i++)
      same = same && fabs(v[i] - (k ? gb : ga)[i]) <= 1e-12;
    CHECK_MSG(same, "%s: d/d%s differs", name, k ? "b" : "a");
  }
  for (int k = 0; k < 2; k++) {
    cmx_array_release(ab[k]);
    cmx_array_release(g[k]);
  }
}

static const bcase* find_case(const char* name) {
  for (int i = 0; i < NBINARY; i++)
    if (!strcmp(BINARY[i].name, name)) return &BINARY[i];
  return NULL;
}

static void test_conventions(void) {
  /* Ties: maximum's and minimum's derivative goes to b. */
  double a[3] = {1, 2, 3}, b[3] = {1, 0, 5};
  grads_equal("maximum ties", find_case("maximum"), a, b, 3,
              (double[]){0, 1, 0}, (double[]){1, 0, 1});
  grads_equal("minimum ties", find_case("minimum"), a, b, 3,
              (double[]){0, 0, 1}, (double[]){1, 1, 0});
  /* remainder: d/da = 1, d/db = -floor(a / b), divisor of either sign. */
  double ra[4] = {5.5, -5.5, 5.5, -5.5}, rb[4] = {2, 2, -2, -2};
  grads_equal("remainder", find_case("remainder"), ra, rb, 4,
              (double[]){1, 1, 1, 1}, (double[]){-2, 3, 3, -2});
  /* power at a = 0: d/da = b 0^(b-1), d/db = 0 (not 0 * log 0). */
  double pa[3] = {0, 0, 2}, pb[3] = {2, 3, 3};
  grads_equal("power at 0", find_case("power"), pa, pb, 3, (double[]){0, 0, 12},
              (double[]){0, 0, 8 * log(2.0)});
  /* divide and arctan2 by value. */
  double da[2] = {3, -1}, db[2] = {2, 4};
  grads_equal("divide", find_case("divide"), da, db, 2, (double[]){0.5, 0.25},
              (double[]){-0.75, 1.0 / 16});
  grads_equal("arctan2", find_case("arctan2"), da, db, 2,
              (double[]){2.0 / 13, 4.0 / 17}, (double[]){-3.0 / 13, 1.0 / 17});
}

/* power with a negative base and an integer exponent (an int32 operand:
 * no derivative for it). */
static void test_power_negative_base(void) {
  int32_t ev[12] = {2, 3, 1, 0, 4, 3, 2, 5, 1, 2, 3, 2};
  int64_t s34[2] = {3, 4};
  cmx_array ab[2] = {ew_rand_s(s34, 2, 0.5, 2, true), NULL};
  cmx_array_from_data(&ab[1], ev, s34, 2, CMX_INT32);
  const bcase* c = find_case("power");
  tc_check_grad("power negative base", t_binary, (void*)c, ab, 2, 1e-6);
  ew_grad_ctx g = {t_binary, (void*)c};
  tc_check_grad("grad of grad of power negative base", ew_grad_fn, &g, ab, 2,
                1e-5);
  cmx_array_release(ab[0]);
  cmx_array_release(ab[1]);
}

/* Mixed dtypes: float32 * float64 promotes (an AsType node); the float32
 * input's gradient is float32 with the right values. */
static void test_mixed_dtypes(void) {
  double av[3] = {1.5, -2, 0.25}, bv[3] = {3, 0.5, -4};
  cmx_array a64 = f64v(av, 3), ab[2] = {ew_cast(a64, CMX_FLOAT32), f64v(bv, 3)},
            g[2] = {NULL, NULL};
  cmx_closure f = {ew_sum_call,
                   &(ew_grad_ctx){t_binary, (void*)find_case("multiply")}};
  int args[2] = {0, 1};
  OK(cmx_value_and_grad(f, ab, 2, args, 2, NULL, NULL, g));
  CHECK(g[0] && cmx_array_dtype(g[0]) == CMX_FLOAT32);
  CHECK(g[1] && cmx_array_dtype(g[1]) == CMX_FLOAT64);
  float v[3] = {0};
  if (g[0]) cmx_array_copy_to(g[0], v, sizeof v);
  CHECK(v[0] == 3 && v[1] == 0.5f && v[2] == -4);
  cmx_array_release(a64);
  for (int k = 0; k < 2; k++) {
    cmx_array_release(ab[k]);
    cmx_array_release(g[k]);
  }
}

/* ---------------- where (Select) ---------------- */
static cmx_status t_where(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_where(&outs[0], in[0], in[1], in[2], S);
}

static cmx_array bool_pattern(const int64_t* shape, int ndim) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  bool* v = malloc((size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = (i * 7 + 3) % 5 < 2;
  cmx_array a = NULL;
  cmx_array_from_data(&a, v, shape, ndim, CMX_BOOL);
  free(v);
  return a;
}

static void test_where(void) {
  int64_t s0[1] = {0}, s34[2] = {3, 4}, s31[2] = {3, 1}, s14[2] = {1, 4};
  int64_t s4[1] = {4}, s43[2] = {4, 3}, s3[1] = {3};
  cmx_array cases[4][3] = {
      {bool_pattern(s34, 2), ew_rand(s34, 2, -2, 2), ew_rand(s34, 2, -2, 2)},
      {bool_pattern(s31, 2), ew_rand(s14, 2, -2, 2), ew_rand(s0, 0, -2, 2)},
      {bool_pattern(s0, 0), ew_transposed(3, 4, -2, 2, false),
       ew_sliced(3, 4, -2, 2, false)},
      {bool_pattern(s4, 1), ew_sliced(3, 4, -2, 2, false),
       ew_rand(s31, 2, -2, 2)}};
  char name[64];
  for (int k = 0; k < 4; k++) {
    snprintf(name, sizeof name, "where case %d", k);
    tc_check_grad(name, t_where, NULL, cases[k], 3, 1e-6);
    /* Second order where x and y need no broadcasting (see
     * test_binary_second_order). */
    if (k != 0 && k != 2) continue;
    ew_grad_ctx g = {t_where, NULL};
    snprintf(name, sizeof name, "grad of grad of where case %d", k);
    tc_check_grad(name, ew_grad_fn, &g, cases[k], 3, 1e-5);
  }
  /* By value: x gets the cotangent where cond holds, y elsewhere. */
  {
    bool cv[3] = {true, false, true};
    double xv[3] = {1, 2, 3}, yv[3] = {4, 5, 6};
    cmx_array in[3] = {NULL, f64v(xv, 3), f64v(yv, 3)}, g[3] = {0};
    cmx_array_from_data(&in[0], cv, s3, 1, CMX_BOOL);
    cmx_closure f = {ew_sum_call, &(ew_grad_ctx){t_where, NULL}};
    int args[3] = {0, 1, 2};
    OK(cmx_value_and_grad(f, in, 3, args, 3, NULL, NULL, g));
    double gx[3] = {0}, gy[3] = {0};
    bool gc[3] = {true, true, true};
    if (g[0]) cmx_array_copy_to(g[0], gc, sizeof gc);
    if (g[1]) cmx_array_copy_to(g[1], gx, sizeof gx);
    if (g[2]) cmx_array_copy_to(g[2], gy, sizeof gy);
    CHECK(g[0] && cmx_array_dtype(g[0]) == CMX_BOOL && !gc[0] && !gc[1] &&
          !gc[2]);
    CHECK(gx[0] == 1 && gx[1] == 0 && gx[2] == 1);
    CHECK(gy[0] == 0 && gy[1] == 1 && gy[2] == 0);
    for (int i = 0; i < 3; i++) {
      cmx_array_release(in[i]);
      cmx_array_release(g[i]);
    }
  }
  /* Rules' dtypes: the condition gets none, x and y their dtype. */
  const cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_FLOAT64};
  for (int d = 0; d < 3; d++) {
    cmx_array in[3] = {cmx_array_retain(cases[0][0]),
                       ew_cast(cases[0][1], dts[d]),
                       ew_cast(cases[0][2], dts[d])};
    snprintf(name, sizeof name, "where %s", cmx_dtype_name(dts[d]));
    ew_check_rules(name, "Select", t_where, NULL, in, 3, false);
    for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
  }
  /* Integer x and y: no derivatives. */
  {
    cmx_array in[3] = {cmx_array_retain(cases[0][0]),
                       ew_cast(cases[0][1], CMX_INT32),
                       ew_cast(cases[0][2], CMX_INT32)};
    ew_check_rules("where int32", "Select", t_where, NULL, in, 3, true);
    ew_check_zero_grad("where int32", t_where, NULL, in, 3);
    for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
  }
  /* vmap: everything mapped, only the condition, only x, last axes. */
  {
    cmx_array in[3] = {bool_pattern(s43, 2), ew_rand(s43, 2, -2, 2),
                       ew_rand(s43, 2, -2, 2)};
    cmx_array v3 = ew_rand(s3, 1, -2, 2), c3 = bool_pattern(s3, 1);
    int all0[3] = {0, 0, 0};
    tc_check_vmap("vmap where all", t_where, NULL, in, 3, all0, 0);
    cmx_array c_only[3] = {in[0], v3, v3};
    int ax_c[3] = {0, CMX_VMAP_NONE, CMX_VMAP_NONE};
    tc_check_vmap("vmap where cond", t_where, NULL, c_only, 3, ax_c, 1);
    cmx_array y34 = ew_rand(s34, 2, -2, 2), x4 = ew_rand(s4, 1, -2, 2);
    cmx_array x_only[3] = {c3, y34, v3};
    int ax_x[3] = {CMX_VMAP_NONE, -1, CMX_VMAP_NONE};
    tc_check_vmap("vmap where x last axis", t_where, NULL, x_only, 3, ax_x, 0);
    int ax_mix[3] = {1, CMX_VMAP_NONE, 0};
    /* cond (4, 3) mapped on axis 1 and y (3, 4) on axis 0 (B = 3), x
     * unmapped. */
    cmx_array m[3] = {in[0], x4, y34};
    tc_check_vmap("vmap where mixed axes", t_where, NULL, m, 3, ax_mix, 0);
    ew_grad_ctx g = {t_where, NULL};
    tc_check_vmap("vmap of grad of where", ew_grad_fn, &g, in, 3, all0, 0);
    for (int i = 0; i < 3; i++) cmx_array_release(in[i]);
    cmx_array_release(v3);
    cmx_array_release(c3);
    cmx_array_release(y34);
    cmx_array_release(x4);
  }
  for (int k = 0; k < 4; k++)
    for (int i = 0; i < 3; i++) cmx_array_release(cases[k][i]);
}

int main(void) {
  RUN(test_binary_grads);
  RUN(test_binary_rule_dtypes);
  RUN(test_binary_integers);
  RUN(test_binary_second_order);
  RUN(test_binary_vmap);
  RUN(test_conventions);
  RUN(test_power_negative_base);
  RUN(test_mixed_dtypes);
  RUN(test_where);
  return test_summary("test_rules_elementwise_binary");
}
