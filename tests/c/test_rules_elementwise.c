/* Transform rules of the unary elementwise primitives, copies and
 * conversions (rules_unary.c): vjp against finite differences and jvp
 * against vjp on several shapes and layouts, zero derivatives of the
 * non-differentiable ones, the rules' dtypes for float32/float16, second
 * derivatives (the rules compose), vmap against a loop, and MLX's complex
 * conventions. The binary and ternary primitives are in
 * test_rules_elementwise_binary.c. */
#include "rules_ew_util.h"

typedef cmx_status (*unary_api)(cmx_array*, cmx_array, cmx_stream);

/* DIFF: differentiable; ZERO: zero derivative. */
typedef enum { DIFF, ZERO } ew_kind;

typedef struct ucase {
  const char* name;
  const char* prim; /* the primitive the op makes for float input */
  unary_api f;
  double lo, hi; /* input domain where finite differences are valid */
  ew_kind kind;
} ucase;

static const ucase UNARY[] = {
    {"abs", "Abs", cmx_abs, -2, 2, DIFF},
    {"negative", "Negative", cmx_negative, -2, 2, DIFF},
    {"square", "Square", cmx_square, -2, 2, DIFF},
    {"sqrt", "Sqrt", cmx_sqrt, 0.3, 3, DIFF},
    {"rsqrt", "Rsqrt", cmx_rsqrt, 0.3, 3, DIFF},
    {"exp", "Exp", cmx_exp, -2, 2, DIFF},
    {"expm1", "Expm1", cmx_expm1, -2, 2, DIFF},
    {"log", "Log", cmx_log, 0.3, 3, DIFF},
    {"log2", "Log2", cmx_log2, 0.3, 3, DIFF},
    {"log10", "Log10", cmx_log10, 0.3, 3, DIFF},
    {"log1p", "Log1p", cmx_log1p, -0.5, 2, DIFF},
    {"erf", "Erf", cmx_erf, -2, 2, DIFF},
    {"erfinv", "ErfInv", cmx_erfinv, -0.9, 0.9, DIFF},
    {"sin", "Sin", cmx_sin, -3, 3, DIFF},
    {"cos", "Cos", cmx_cos, -3, 3, DIFF},
    {"tan", "Tan", cmx_tan, -1.2, 1.2, DIFF},
    {"arcsin", "ArcSin", cmx_arcsin, -0.9, 0.9, DIFF},
    {"arccos", "ArcCos", cmx_arccos, -0.9, 0.9, DIFF},
    {"arctan", "ArcTan", cmx_arctan, -2, 2, DIFF},
    {"sinh", "Sinh", cmx_sinh, -2, 2, DIFF},
    {"cosh", "Cosh", cmx_cosh, -2, 2, DIFF},
    {"tanh", "Tanh", cmx_tanh, -2, 2, DIFF},
    {"arcsinh", "ArcSinh", cmx_arcsinh, -2, 2, DIFF},
    {"arccosh", "ArcCosh", cmx_arccosh, 1.2, 3, DIFF},
    {"arctanh", "ArcTanh", cmx_arctanh, -0.9, 0.9, DIFF},
    {"sigmoid", "Sigmoid", cmx_sigmoid, -4, 4, DIFF},
    {"sign", "Sign", cmx_sign, -2, 2, ZERO},
    {"floor", "Floor", cmx_floor, -3, 3, ZERO},
    {"ceil", "Ceil", cmx_ceil, -3, 3, ZERO},
    {"trunc", "Trunc", cmx_trunc, -3, 3, ZERO},
    {"isnan", "IsNan", cmx_isnan, -2, 2, ZERO},
    {"isinf", "IsInf", cmx_isinf, -2, 2, ZERO},
    {"isfinite", "IsFinite", cmx_isfinite, -2, 2, ZERO},
    {"isposinf", "IsPosInf", cmx_isposinf, -2, 2, ZERO},
    {"isneginf", "IsNegInf", cmx_isneginf, -2, 2, ZERO},
    {"logical_not", "LogicalNot", cmx_logical_not, -2, 2, ZERO},
    /* The imaginary part of a real array: constant zeros. */
    {"imag (real input)", "Imag", cmx_imag, -2, 2, ZERO},
};
#define NUNARY ((int)(sizeof UNARY / sizeof UNARY[0]))

/* The op of a case, on its input broadcast to (3, 4) first when bcast. */
typedef struct uctx {
  const ucase* c;
  bool bcast;
} uctx;

static cmx_status t_unary(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)n;
  const uctx* u = ctx;
  cmx_array x = in[0], b = NULL;
  *nout = 1;
  if (u->bcast) {
    int64_t sh[2] = {3, 4};
    cmx_status st = cmx_broadcast_to(&b, x, sh, 2, S);
    if (st != CMX_OK) return st;
    x = b;
  }
  cmx_status st = u->c->f(&outs[0], x, S);
  cmx_array_release(b);
  return st;
}

/* Finite differences and jvp-vs-vjp on scalars, vectors, matrices,
 * transposed and strided views and a broadcast input; zero derivatives
 * for the ZERO kind. */
static void test_unary_grads(void) {
  int64_t s0[1] = {0}, s7[1] = {7}, s34[2] = {3, 4}, s31[2] = {3, 1};
  char name[128];
  for (int i = 0; i < NUNARY; i++) {
    const ucase* c = &UNARY[i];
    uctx plain = {c, false}, bc = {c, true};
    cmx_array xs[6] = {ew_rand(s0, 0, c->lo, c->hi),
                       ew_rand(s7, 1, c->lo, c->hi),
                       ew_rand(s34, 2, c->lo, c->hi),
                       ew_transposed(3, 4, c->lo, c->hi, false),
                       ew_sliced(3, 3, c->lo, c->hi, false),
                       ew_rand(s31, 2, c->lo, c->hi)};
    const char* what[6] = {"scalar",     "(7)",           "(3,4)",
                           "transposed", "strided slice", "broadcast"};
    for (int k = 0; k < 6; k++) {
      snprintf(name, sizeof name, "%s %s", c->name, what[k]);
      tc_check_grad(name, t_unary, k == 5 ? &bc : &plain, &xs[k], 1, 1e-6);
      if (c->kind == ZERO)
        ew_check_zero_grad(name, t_unary, k == 5 ? &bc : &plain, &xs[k], 1);
    }
    for (int k = 0; k < 6; k++) cmx_array_release(xs[k]);
  }
}

/* The rules called directly on float32 and float16 (and float64) inputs
 * give cotangents and tangents of the input's and output's dtypes. */
static void test_unary_rule_dtypes(void) {
  int64_t s34[2] = {3, 4};
  const cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_FLOAT64};
  char name[128];
  for (int i = 0; i < NUNARY; i++) {
    const ucase* c = &UNARY[i];
    uctx plain = {c, false};
    cmx_array x64 = ew_rand(s34, 2, c->lo, c->hi);
    for (int d = 0; d < 3; d++) {
      cmx_array x = ew_cast(x64, dts[d]);
      snprintf(name, sizeof name, "%s %s", c->name, cmx_dtype_name(dts[d]));
      ew_check_rules(name, c->prim, t_unary, &plain, &x, 1, c->kind == ZERO);
      /* Through the public transform too. */
      int arg = 0;
      cmx_array g = NULL;
      cmx_closure f = {ew_sum_call, &(ew_grad_ctx){t_unary, &plain}};
      OK(cmx_value_and_grad(f, &x, 1, &arg, 1, NULL, NULL, &g));
      CHECK_MSG(g && cmx_array_dtype(g) == dts[d], "%s: grad dtype", name);
      cmx_array_release(g);
      cmx_array_release(x);
    }
    cmx_array_release(x64);
  }
}

/* Second derivatives: the gradient of sum(op(x)) differentiated again
 * (reverse over reverse against finite differences of the gradient,
 * forward over reverse against it), and vmap of the gradient. */
static void test_unary_second_order(void) {
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  char name[128];
  for (int i = 0; i < NUNARY; i++) {
    const ucase* c = &UNARY[i];
    uctx plain = {c, false};
    ew_grad_ctx g = {t_unary, &plain};
    cmx_array x = ew_rand(s34, 2, c->lo, c->hi);
    snprintf(name, sizeof name, "grad of grad of %s", c->name);
    tc_check_grad(name, ew_grad_fn, &g, &x, 1, 1e-5);
    cmx_array_release(x);
    if (c->kind == DIFF && i % 4 == 0) {
      cmx_array xb = ew_rand(s43, 2, c->lo, c->hi);
      int ax = 0;
      snprintf(name, sizeof name, "vmap of grad of %s", c->name);
      tc_check_vmap(name, ew_grad_fn, &g, &xb, 1, &ax, 0);
      cmx_array_release(xb);
    }
  }
}

/* vmap over the first and the last axis against a loop. */
static void test_unary_vmap(void) {
  int64_t s43[2] = {4, 3}, s253[3] = {2, 5, 3};
  char name[128];
  for (int i = 0; i < NUNARY; i++) {
    const ucase* c = &UNARY[i];
    uctx plain = {c, false};
    cmx_array a = ew_rand(s43, 2, c->lo, c->hi);
    cmx_array b = ew_rand(s253, 3, c->lo, c->hi);
    int ax0 = 0, axl = -1;
    snprintf(name, sizeof name, "vmap %s axis 0", c->name);
    tc_check_vmap(name, t_unary, &plain, &a, 1, &ax0, 0);
    snprintf(name, sizeof name, "vmap %s last axis", c->name);
    tc_check_vmap(name, t_unary, &plain, &b, 1, &axl, 1);
    cmx_array_release(a);
    cmx_array_release(b);
  }
}

/* ---------------- round ---------------- */
static cmx_status t_round(void* ctx, const cmx_array* in, int n,
                          cmx_array* outs, int* nout) {
  (void)n;
  *nout = 1;
  return cmx_round(&outs[0], in[0], *(const int*)ctx, S);
}

static void test_round(void) {
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  int dec[2] = {0, 1};
  for (int d = 0; d < 2; d++) {
    cmx_array x = ew_rand(s34, 2, -3, 3), t = ew_transposed(3, 4, -3, 3, 0);
    tc_check_grad("round", t_round, &dec[d], &x, 1, 1e-6);
    ew_check_zero_grad("round", t_round, &dec[d], &x, 1);
    ew_check_zero_grad("round transposed", t_round, &dec[d], &t, 1);
    cmx_array x32 = ew_cast(x, CMX_FLOAT32);
    ew_check_rules("round float32", "Round", t_round, &dec[d], &x32, 1, true);
    cmx_array xb = ew_rand(s43, 2, -3, 3);
    int ax = 0;
    tc_check_vmap("vmap round", t_round, &dec[d], &xb, 1, &ax, 0);
    ax = -1;
    tc_check_vmap("vmap round last axis", t_round, &dec[d], &xb, 1, &ax, 0);
    cmx_array_release(x);
    cmx_array_release(t);
    cmx_array_release(x32);
    cmx_array_release(xb);
  }
}

/* ---------------- copy and astype ---------------- */
static cmx_status t_copy(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  size_t mark = cmx__scope_enter();
  return cmx__scope_exit(mark, cmx__copy(in[0], S), &outs[0]);
}

static cmx_status t_astype(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  (void)n;
  *nout = 1;
  return cmx_astype(&outs[0], in[0], *(const cmx_dtype*)ctx, S);
}

static void test_copy(void) {
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  cmx_array xs[3] = {ew_rand(s34, 2, -2, 2), ew_transposed(3, 4, -2, 2, 0),
                     ew_sliced(3, 3, -2, 2, 0)};
  for (int k = 0; k < 3; k++)
    tc_check_grad("copy", t_copy, NULL, &xs[k], 1, 1e-6);
  cmx_array h = ew_cast(xs[0], CMX_FLOAT16);
  ew_check_rules("copy float16", "Copy", t_copy, NULL, &h, 1, false);
  cmx_array xb = ew_rand(s43, 2, -2, 2);
  int ax = 0, axl = -1;
  tc_check_vmap("vmap copy", t_copy, NULL, &xb, 1, &ax, 0);
  tc_check_vmap("vmap copy last axis", t_copy, NULL, &xb, 1, &axl, 1);
  for (int k = 0; k < 3; k++) cmx_array_release(xs[k]);
  cmx_array_release(h);
  cmx_array_release(xb);
}

/* Reads n elements of a (any dtype) as doubles. */
static void read_f64(cmx_array a, double* v, int n) {
  cmx_array c = ew_cast(a, CMX_FLOAT64);
  for (int i = 0; i < n; i++) v[i] = NAN;
  cmx_array_copy_to(c, v, (size_t)n * sizeof *v);
  cmx_array_release(c);
}

static void test_astype(void) {
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  /* float64 -> float64 (still an AsType node): finite differences. */
  cmx_dtype f64 = CMX_FLOAT64, f32 = CMX_FLOAT32, f16 = CMX_FLOAT16;
  cmx_dtype i32 = CMX_INT32, b = CMX_BOOL, c64 = CMX_COMPLEX64;
  cmx_array x = ew_rand(s34, 2, -2, 2), t = ew_transposed(3, 4, -2, 2, 0);
  tc_check_grad("astype float64", t_astype, &f64, &x, 1, 1e-6);
  tc_check_grad("astype float64 transposed", t_astype, &f64, &t, 1, 1e-6);
  /* float64 -> float32: the cotangent comes back as float64 with the
   * same values; the tangent goes to float32. */
  cmx_array ct = ew_rand(s34, 2, -2, 2), ct32 = ew_cast(ct, f32), g = NULL;
  tc_closure c = {t_astype, &f32};
  cmx_closure f = {tc_call, &c};
  OK(cmx_vjp(f, &x, 1, &ct32, 1, NULL, NULL, &g));
  double gv[12], cv[12];
  read_f64(g, gv, 12);
  read_f64(ct32, cv, 12);
  bool same = g && cmx_array_dtype(g) == f64;
  for (int i = 0; i < 12; i++) same = same && gv[i] == cv[i];
  CHECK_MSG(same, "astype float64->float32: vjp is not the cast cotangent");
  cmx_array_release(g);
  cmx_array *jo = NULL, *jv = NULL;
  int nj = 0;
  OK(cmx_jvp(f, &x, 1, &ct, &jo, &jv, &nj));
  if (nj == 1) {
    read_f64(jv[0], gv, 12);
    same = cmx_array_dtype(jv[0]) == f32;
    for (int i = 0; i < 12; i++) same = same && gv[i] == cv[i];
    CHECK_MSG(same, "astype float64->float32: jvp is not the cast tangent");
  }
  cmx_arrays_free(jo, nj);
  cmx_arrays_free(jv, nj);
  /* The rules between inexact dtypes keep them; integer and bool sides
   * get no derivative. */
  struct {
    cmx_dtype from, to;
    bool zero;
  } casts[] = {{f64, f32, false}, {f32, f16, false}, {f16, f32, false},
               {f32, c64, false}, {c64, f32, false}, {f32, i32, true},
               {i32, f32, true},  {f32, b, true},    {b, f16, true}};
  char name[96];
  for (size_t k = 0; k < sizeof casts / sizeof casts[0]; k++) {
    cmx_array xin = ew_cast(x, casts[k].from);
    snprintf(name, sizeof name, "astype %s->%s", cmx_dtype_name(casts[k].from),
             cmx_dtype_name(casts[k].to));
    ew_check_rules(name, "AsType", t_astype, &casts[k].to, &xin, 1,
                   casts[k].zero);
    if (casts[k].zero)
      ew_check_zero_grad(name, t_astype, &casts[k].to, &xin, 1);
    cmx_array_release(xin);
  }
  /* float -> int -> float: no gradient flows through the integers. */
  cmx_array xi = ew_rand(s34, 2, -5, 5);
  cmx_dtype to_int = i32;
  ew_check_zero_grad("astype float64->int32", t_astype, &to_int, &xi, 1);
  cmx_array xb = ew_rand(s43, 2, -2, 2);
  int ax = 0, axl = -1;
  tc_check_vmap("vmap astype float32", t_astype, &f32, &xb, 1, &ax, 0);
  tc_check_vmap("vmap astype int32", t_astype, &to_int, &xb, 1, &axl, 1);
  cmx_array_release(xi);
  cmx_array_release(xb);
  cmx_array_release(x);
  cmx_array_release(t);
  cmx_array_release(ct);
  cmx_array_release(ct32);
}

/* bitwise_invert takes integers: zero derivatives, and its rules run
 * (integer inputs are traced too). */
static cmx_status t_invert(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_bitwise_invert(&outs[0], in[0], S);
}

static void test_bitwise_invert(void) {
  int32_t v[12] = {0, 1, -2, 3, 7, -8, 100, 5, 9, -1, 42, 6};
  int64_t s34[2] = {3, 4}, s43[2] = {4, 3};
  cmx_array x = NULL, y = NULL;
  cmx_array_from_data(&x, v, s34, 2, CMX_INT32);
  cmx_array_from_data(&y, v, s43, 2, CMX_INT32);
  tc_check_grad("bitwise_invert", t_invert, NULL, &x, 1, 1e-6);
  ew_check_zero_grad("bitwise_invert", t_invert, NULL, &x, 1);
  ew_check_rules("bitwise_invert", "BitwiseInvert", t_invert, NULL, &x, 1,
                 true);
  int ax = 0, axl = -1;
  tc_check_vmap("vmap bitwise_invert", t_invert, NULL, &y, 1, &ax, 0);
  tc_check_vmap("vmap bitwise_invert last", t_invert, NULL, &y, 1, &axl, 0);
  cmx_array_release(x);
  cmx_array_release(y);
}

/* abs at 0 has derivative 0 (sign(0)), as MLX. */
static void test_abs_at_zero(void) {
  double v[3] = {0, -1.5, 2};
  int64_t s3[1] = {3};
  cmx_array x = NULL, g = NULL;
  cmx_array_from_data(&x, v, s3, 1, CMX_FLOAT64);
  uctx u = {&UNARY[0], false};
  cmx_closure f = {ew_sum_call, &(ew_grad_ctx){t_unary, &u}};
  int arg = 0;
  OK(cmx_value_and_grad(f, &x, 1, &arg, 1, NULL, NULL, &g));
  double gv[3];
  read_f64(g, gv, 3);
  CHECK(gv[0] == 0 && gv[1] == -1 && gv[2] == 1);
  cmx_array_release(g);
  cmx_array_release(x);
}

/* ---------------- complex numbers ----------------
 * MLX reads the cotangent of a complex z as dL/dRe z - i dL/dIm z, for a
 * real loss L: real(z) passes c + 0i, imag(z) passes -i c, conj passes
 * conj(c), |z| passes c conj(z)/|z|, holomorphic f passes c f'(z). The
 * check: for L(z) = sum(Re(w * f(z))) (or sum(w * f(z)) for real f),
 * Re(sum(grad * d)) equals the directional derivative of L along d, by
 * finite differences (float32, so loosely) and by jvp. */
typedef cmx_status (*cfun)(cmx_array* out, cmx_array z);
static cmx_status cf_real(cmx_array* o, cmx_array z) {
  return cmx_real(o, z, S);
}
static cmx_status cf_imag(cmx_array* o, cmx_array z) {
  return cmx_imag(o, z, S);
}
static cmx_status cf_conj(cmx_array* o, cmx_array z) {
  return cmx_conjugate(o, z, S);
}
static cmx_status cf_abs(cmx_array* o, cmx_array z) {
  return cmx_abs(o, z, S);
}
static cmx_status cf_exp(cmx_array* o, cmx_array z) {
  return cmx_exp(o, z, S);
}
static cmx_status cf_sin(cmx_array* o, cmx_array z) {
  return cmx_sin(o, z, S);
}
static cmx_status cf_square(cmx_array* o, cmx_array z) {
  return cmx_square(o, z, S);
}
static cmx_status cf_sqrt(cmx_array* o, cmx_array z) {
  return cmx_sqrt(o, z, S);
}
static cmx_status cf_log(cmx_array* o, cmx_array z) {
  return cmx_log(o, z, S);
}
static cmx_status cf_negative(cmx_array* o, cmx_array z) {
  return cmx_negative(o, z, S);
}
static cmx_status cf_to_f32(cmx_array* o, cmx_array z) {
  return cmx_astype(o, z, CMX_FLOAT32, S);
}

typedef struct closs {
  cfun f;
  cmx_array w;  /* complex64 weights */
  cmx_array wr; /* float32 weights */
} closs;

static cmx_status c_loss(void* payload, const cmx_array* in, int nin,
                         cmx_array** outputs, int* nout) {
  (void)nin;
  closs* c = payload;
  cmx_array y = NULL, p = NULL, r = NULL, s = NULL;
  cmx_status st = c->f(&y, in[0]);
  if (st == CMX_OK && cmx_array_dtype(y) == CMX_COMPLEX64) {
    st = cmx_multiply(&p, y, c->w, S);
    if (st == CMX_OK) st = cmx_real(&r, p, S);
  } else if (st == CMX_OK) {
    st = cmx_multiply(&r, y, c->wr, S);
  }
  if (st == CMX_OK) st = cmx_sum(&s, r, NULL, 0, false, S);
  cmx_array_release(y);
  cmx_array_release(p);
  cmx_array_release(r);
  if (st != CMX_OK) return st;
  *outputs = malloc(sizeof(cmx_array));
  (*outputs)[0] = s;
  *nout = 1;
  return CMX_OK;
}

static cmx_array c64_array(const float* re_im, int n) {
  int64_t sh[1] = {n};
  cmx_array a = NULL;
  cmx_array_from_data(&a, re_im, sh, 1, CMX_COMPLEX64);
  return a;
}

static double c_loss_at(closs* c, cmx_array z) {
  cmx_array* o = NULL;
  int no = 0;
  double v = NAN;
  if (c_loss(c, &z, 1, &o, &no) == CMX_OK) cmx_array_item_double(o[0], &v);
  cmx_arrays_free(o, no);
  return v;
}

static void test_complex(void) {
  const struct {
    const char* name;
    cfun f;
  } fs[] = {{"real", cf_real},
            {"imag", cf_imag},
            {"conjugate", cf_conj},
            {"abs", cf_abs},
            {"exp", cf_exp},
            {"sin", cf_sin},
            {"square", cf_square},
            {"sqrt", cf_sqrt},
            {"log", cf_log},
            {"negative", cf_negative},
            {"astype float32", cf_to_f32}};
  float zv[8] = {0.7f, -0.4f, -1.1f, 0.6f, 0.3f, 0.9f, -0.5f, -0.8f};
  float wv[8] = {0.5f, 1.2f, -0.7f, 0.4f, 1.1f, -0.3f, 0.2f, 0.9f};
  float wr[4] = {0.8f, -1.3f, 0.6f, 1.5f};
  float dv[3][8] = {{0.3f, 0, -0.8f, 0, 0.5f, 0, 0.9f, 0},
                    {0, 0.6f, 0, -0.2f, 0, 0.7f, 0, -0.9f},
                    {0.4f, -0.5f, 0.9f, 0.3f, -0.6f, 0.2f, 0.1f, 0.8f}};
  int64_t s4[1] = {4};
  cmx_array z = c64_array(zv, 4), w = c64_array(wv, 4), wrr = NULL;
  cmx_array_from_data(&wrr, wr, s4, 1, CMX_FLOAT32);
  for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++) {
    closs c = {fs[k].f, w, wrr};
    cmx_closure f = {c_loss, &c};
    int arg = 0;
    cmx_array g = NULL;
    OK(cmx_value_and_grad(f, &z, 1, &arg, 1, NULL, NULL, &g));
    CHECK_MSG(g && cmx_array_dtype(g) == CMX_COMPLEX64,
              "complex %s: gradient dtype", fs[k].name);
    for (int d = 0; d < 3 && g; d++) {
      cmx_array dir = c64_array(dv[d], 4), gd = NULL, re = NULL, sm = NULL;
      cmx_array gc = NULL; /* MLX's gradient: dL/dRe + i dL/dIm */
      cmx_conjugate(&gc, g, S);
      cmx_multiply(&gd, gc, dir, S);
      cmx_array_release(gc);
      cmx_real(&re, gd, S);
      cmx_sum(&sm, re, NULL, 0, false, S);
      double want = NAN;
      cmx_array_item_double(sm, &want);
      /* Finite differences along dir. */
      double h = 1e-2;
      cmx_array hs = NULL, hd = NULL, zp = NULL, zm = NULL;
      cmx_array_from_double(&hs, h, CMX_FLOAT32);
      cmx_multiply(&hd, dir, hs, S);
      cmx_add(&zp, z, hd, S);
      cmx_subtract(&zm, z, hd, S);
      double fd = (c_loss_at(&c, zp) - c_loss_at(&c, zm)) / (2 * h);
      CHECK_MSG(fabs(fd - want) <= 2e-3 * fmax(1.0, fabs(want)),
                "complex %s, direction %d: Re(grad . d) = %g, finite "
                "differences %g",
                fs[k].name, d, want, fd);
      /* jvp gives the same directional derivative. */
      cmx_array *jo = NULL, *jv = NULL;
      int nj = 0;
      OK(cmx_jvp(f, &z, 1, &dir, &jo, &jv, &nj));
      double jd = NAN;
      if (nj == 1) cmx_array_item_double(jv[0], &jd);
      CHECK_MSG(fabs(jd - want) <= 1e-5 * fmax(1.0, fabs(want)),
                "complex %s, direction %d: jvp %g, vjp %g", fs[k].name, d, jd,
                want);
      cmx_arrays_free(jo, nj);
      cmx_arrays_free(jv, nj);
      cmx_array_release(dir);
      cmx_array_release(gd);
      cmx_array_release(re);
      cmx_array_release(sm);
      cmx_array_release(hs);
      cmx_array_release(hd);
      cmx_array_release(zp);
      cmx_array_release(zm);
    }
    cmx_array_release(g);
  }
  /* The exact cotangents of real and imag (MLX's): c + 0i and i c. */
  const cfun parts[2] = {cf_real, cf_imag};
  for (int k = 0; k < 2; k++) {
    closs c = {parts[k], w, wrr};
    cmx_closure f = {c_loss, &c};
    int arg = 0;
    cmx_array g = NULL;
    OK(cmx_value_and_grad(f, &z, 1, &arg, 1, NULL, NULL, &g));
    cmx_complex64_t gv[4] = {{0, 0}};
    if (g) cmx_array_copy_to(g, gv, sizeof gv);
    bool ok = g != NULL;
    for (int i = 0; i < 4; i++)
      ok = ok && (k == 0 ? gv[i].re == wr[i] && gv[i].im == 0
                         : gv[i].re == 0 && gv[i].im == wr[i]);
    CHECK_MSG(ok, "complex %s: cotangent is not MLX's", k ? "imag" : "real");
    cmx_array_release(g);
  }
  cmx_array_release(z);
  cmx_array_release(w);
  cmx_array_release(wrr);
}

/* Rules of the complex-part primitives called directly on complex64. */
static cmx_status t_cfun(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)n;
  *nout = 1;
  return (*(const cfun*)ctx)(&outs[0], in[0]);
}

static void test_complex_rule_dtypes(void) {
  float zv[8] = {0.7f, -0.4f, -1.1f, 0.6f, 0.3f, 0.9f, -0.5f, -0.8f};
  cmx_array z = c64_array(zv, 4);
  const struct {
    const char* prim;
    cfun f;
  } fs[] = {{"Real", cf_real}, {"Imag", cf_imag},     {"Conjugate", cf_conj},
            {"Abs", cf_abs},   {"Exp", cf_exp},       {"Sqrt", cf_sqrt},
            {"Log", cf_log},   {"Square", cf_square}, {"AsType", cf_to_f32}};
  for (size_t k = 0; k < sizeof fs / sizeof fs[0]; k++)
    ew_check_rules(fs[k].prim, fs[k].prim, t_cfun, (void*)&fs[k].f, &z, 1,
                   false);
  /* vmap of the complex parts. */
  float mv[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int64_t s23[2] = {2, 3};
  cmx_array m = NULL;
  cmx_array_from_data(&m, mv, s23, 2, CMX_COMPLEX64);
  int ax = 0, axl = -1;
  for (size_t k = 0; k < 4; k++) {
    tc_check_vmap(fs[k].prim, t_cfun, (void*)&fs[k].f, &m, 1, &ax, 0);
    tc_check_vmap(fs[k].prim, t_cfun, (void*)&fs[k].f, &m, 1, &axl, 1);
  }
  cmx_array_release(m);
  cmx_array_release(z);
}

int main(void) {
  RUN(test_unary_grads);
  RUN(test_unary_rule_dtypes);
  RUN(test_unary_second_order);
  RUN(test_unary_vmap);
  RUN(test_round);
  RUN(test_copy);
  RUN(test_astype);
  RUN(test_bitwise_invert);
  RUN(test_abs_at_zero);
  RUN(test_complex);
  RUN(test_complex_rule_dtypes);
  return test_summary("test_rules_elementwise");
}
