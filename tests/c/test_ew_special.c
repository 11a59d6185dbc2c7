/* The special values of the elementwise ops (decided once, in
 * primitives/ew_ops.h) on every device, and the agreement of every
 * backend with the op table:
 * - spec_*: each listed rule as an expected value, checked on the CPU and
 *   on the GPU when there is one (a device without the primitive's kernel
 *   is counted and reported, not skipped silently);
 * - fast_paths: the CPU's fast rows give the table row's bits;
 * - gpu_vs_cpu: every table op on every dtype it takes, over a battery of
 *   special and ordinary values, gives the CPU's results on the GPU
 *   (exact, except transcendental float math: within a few ulp).
 * Inputs are vectors of 19 equal elements and 0-d scalars, so the
 * vector loops, their tails and the broadcast paths all run.
 */
#include <math.h>
#include <stdint.h>

#include "backend/cpu/ew_dispatch.h"
#include "primitives/elementwise.h"
#include "primitives/ew_ops.h"
#include "primitives/registry.h"
#include "test.h"

#define N 19

static cmx_device g_devices[2];
static int g_ndev;
static int g_no_kernel; /* GPU cases without a GPU kernel */

static const char* dev_name(cmx_device d) {
  return d.type == CMX_GPU ? "gpu" : "cpu";
}

/* A vector of N copies of v (as an int64 or a double) of dtype dt. */
static cmx_array vec_of(cmx_dtype dt, bool is_int, int64_t iv, double dv) {
  cmx_array s = NULL, v = NULL;
  cmx_status st = is_int ? cmx_array_from_int64(&s, iv, dt)
                         : cmx_array_from_double(&s, dv, dt);
  if (st != CMX_OK) return NULL;
  int64_t shape[1] = {N};
  if (cmx_broadcast_to(&v, s, shape, 1, CMX_STREAM_DEFAULT) != CMX_OK) v = NULL;
  cmx_array c = NULL;
  if (v && cmx_contiguous(&c, v, false, CMX_STREAM_DEFAULT) != CMX_OK) c = NULL;
  cmx_array_release(s);
  cmx_array_release(v);
  return c;
}

typedef cmx_status (*un_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*bin_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);

/* Every element of r equals the first (results of equal inputs). */
static bool all_same(cmx_array r, double* first, int64_t* ifirst) {
  cmx_array f = NULL;
  if (cmx_astype(&f, r, CMX_FLOAT64, CMX_STREAM_DEFAULT) != CMX_OK)
    return false;
  double v[N];
  bool ok = cmx_array_copy_to(f, v, sizeof v) == CMX_OK;
  cmx_array_release(f);
  cmx_array i = NULL;
  int64_t w[N];
  if (ok && cmx_dtype_is_integer(cmx_array_dtype(r))) {
    ok = cmx_astype(&i, r, CMX_INT64, CMX_STREAM_DEFAULT) == CMX_OK &&
         cmx_array_copy_to(i, w, sizeof w) == CMX_OK;
    cmx_array_release(i);
  }
  if (!ok) return false;
  for (int k = 1; k < N; k++) {
    bool same = (isnan(v[k]) && isnan(v[0])) ||
                (v[k] == v[0] && signbit(v[k]) == signbit(v[0]));
    if (!same) return false;
    if (cmx_dtype_is_integer(cmx_array_dtype(r)) && w[k] != w[0]) return false;
  }
  *first = v[0];
  if (ifirst) *ifirst = cmx_dtype_is_integer(cmx_array_dtype(r)) ? w[0] : 0;
  return true;
}

/* ---------------- integer rules ---------------- */
typedef struct {
  const char* what;
  bin_fn fn;
  const char* prim; /* primitive name, for the coverage check */
  cmx_dtype dt;
  int64_t x, y, want;
} int_case;

#define I64_MIN INT64_MIN
#define I32_MIN ((int64_t)INT32_MIN)
static const int_case INT_CASES[] = {
    {"int8 127 + 1 wraps", cmx_add, "Add", CMX_INT8, 127, 1, -128},
    {"uint8 255 + 1 wraps", cmx_add, "Add", CMX_UINT8, 255, 1, 0},
    {"uint8 0 - 1 wraps", cmx_subtract, "Subtract", CMX_UINT8, 0, 1, 255},
    {"int16 300 * 300 wraps", cmx_multiply, "Multiply", CMX_INT16, 300, 300,
     24464},
    {"uint16 65535 * 65535 wraps", cmx_multiply, "Multiply", CMX_UINT16, 65535,
     65535, 1},
    {"int64 min * -1 wraps", cmx_multiply, "Multiply", CMX_INT64, I64_MIN, -1,
     I64_MIN},
    {"int32 7 // 0 is 0", cmx_floor_divide, "FloorDivide", CMX_INT32, 7, 0, 0},
    {"uint8 7 // 0 is 0", cmx_floor_divide, "FloorDivide", CMX_UINT8, 7, 0, 0},
    {"int32 -7 // 2 floors", cmx_floor_divide, "FloorDivide", CMX_INT32, -7, 2,
     -4},
    {"int32 min // -1 wraps", cmx_floor_divide, "FloorDivide", CMX_INT32,
     I32_MIN, -1, I32_MIN},
    {"int64 min // -1 wraps", cmx_floor_divide, "FloorDivide", CMX_INT64,
     I64_MIN, -1, I64_MIN},
    {"int32 7 % 0 is 7", cmx_remainder, "Remainder", CMX_INT32, 7, 0, 7},
    {"int32 -7 % 2 has the divisor's sign", cmx_remainder, "Remainder",
     CMX_INT32, -7, 2, 1},
    {"int32 7 % -2 has the divisor's sign", cmx_remainder, "Remainder",
     CMX_INT32, 7, -2, -1},
    {"int32 min % -1 is 0", cmx_remainder, "Remainder", CMX_INT32, I32_MIN, -1,
     0},
    {"int32 2 ** -1 is 0", cmx_power, "Power", CMX_INT32, 2, -1, 0},
    {"int32 1 ** -5 is 0", cmx_power, "Power", CMX_INT32, 1, -5, 0},
    {"int32 -1 ** -3 is 0", cmx_power, "Power", CMX_INT32, -1, -3, 0},
    {"int32 -1 ** -2 is 0", cmx_power, "Power", CMX_INT32, -1, -2, 0},
    {"int32 0 ** -1 is 0", cmx_power, "Power", CMX_INT32, 0, -1, 0},
    /* 3^40 = 12157665459056928801 = 2830677889 * 2^32 + 689956897 */
    {"int32 3 ** 40 wraps", cmx_power, "Power", CMX_INT32, 3, 40, 689956897},
    {"int32 1 << 32 is 0", cmx_left_shift, "LeftShift", CMX_INT32, 1, 32, 0},
    {"int32 1 << -1 is 0", cmx_left_shift, "LeftShift", CMX_INT32, 1, -1, 0},
    {"int32 1 << 31 is min", cmx_left_shift, "LeftShift", CMX_INT32, 1, 31,
     I32_MIN},
    {"uint8 1 << 8 is 0", cmx_left_shift, "LeftShift", CMX_UINT8, 1, 8, 0},
    {"int32 -8 >> 1 is -4", cmx_right_shift, "RightShift", CMX_INT32, -8, 1,
     -4},
    {"int32 -8 >> 40 is -1", cmx_right_shift, "RightShift", CMX_INT32, -8, 40,
     -1},
    {"int32 8 >> 40 is 0", cmx_right_shift, "RightShift", CMX_INT32, 8, 40, 0},
    {"int32 -1 >> -1 is -1", cmx_right_shift, "RightShift", CMX_INT32, -1, -1,
     -1},
    {"uint16 0x8000 >> 15 is 1", cmx_right_shift, "RightShift", CMX_UINT16,
     0x8000, 15, 1},
    {"int8 max(-128, 127)", cmx_maximum, "Maximum", CMX_INT8, -128, 127, 127},
};

static const cmx_primitive_vtable* prim_named(const char* name) {
  for (int i = 0; i < cmx_builtin_primitive_count(); i++)
    if (!strcmp(cmx_builtin_primitive(i)->name, name))
      return cmx_builtin_primitive(i);
  return NULL;
}

/* Whether device d runs primitive `prim`; counts the GPU gaps. */
static bool runs_on(cmx_device d, const char* prim) {
  const cmx_primitive_vtable* vt = prim_named(prim);
  CHECK_MSG(vt != NULL, "unknown primitive %s", prim);
  if (!vt) return false;
  if (cmx_primitive_has_kernel(vt, d.type)) return true;
  g_no_kernel++;
  return false;
}

static void spec_integers(void) {
  for (int di = 0; di < g_ndev; di++) {
    cmx_stream s = cmx_stream_on(g_devices[di]);
    for (size_t c = 0; c < sizeof INT_CASES / sizeof INT_CASES[0]; c++) {
      const int_case* k = &INT_CASES[c];
      if (!runs_on(g_devices[di], k->prim)) continue;
      cmx_array x = vec_of(k->dt, true, k->x, 0),
                y = vec_of(k->dt, true, k->y, 0);
      cmx_array ys = NULL, r = NULL, r0 = NULL;
      OK(cmx_array_from_int64(&ys, k->y, k->dt));
      OK(k->fn(&r, x, y, s));
      OK(k->fn(&r0, x, ys, s)); /* y broadcast from a 0-d array */
      double v;
      int64_t iv = 0, iv0 = 0;
      CHECK_MSG(r && all_same(r, &v, &iv) && iv == k->want,
                "%s on %s: got %lld, want %lld", k->what,
                dev_name(g_devices[di]), (long long)iv, (long long)k->want);
      CHECK_MSG(r0 && all_same(r0, &v, &iv0) && iv0 == k->want,
                "%s (broadcast) on %s: got %lld", k->what,
                dev_name(g_devices[di]), (long long)iv0);
      cmx_array_release_all((cmx_array[]){x, y, ys, r, r0}, 5);
    }
  }
}

/* ---------------- float rules ---------------- */
typedef struct {
  const char* what;
  un_fn u; /* one of u, b */
  bin_fn b;
  const char* prim;
  cmx_dtype dt;
  double x, y, want; /* want NaN: any NaN; zeros compare by sign */
} float_case;

#define INF INFINITY
static const float_case FLOAT_CASES[] = {
    {"1 / 0 is inf", NULL, cmx_divide, "Divide", CMX_FLOAT32, 1, 0, INF},
    {"-1 / 0 is -inf", NULL, cmx_divide, "Divide", CMX_FLOAT32, -1, 0, -INF},
    {"0 / 0 is nan", NULL, cmx_divide, "Divide", CMX_FLOAT64, 0, 0, NAN},
    {"1 // 0.0 is inf", NULL, cmx_floor_divide, "FloorDivide", CMX_FLOAT32, 1,
     0, INF},
    {"-0.0 // 1 is -0.0", NULL, cmx_floor_divide, "FloorDivide", CMX_FLOAT32,
     -0.0, 1, -0.0},
    {"1 // 0.1 is 9", NULL, cmx_floor_divide, "FloorDivide", CMX_FLOAT64, 1,
     0.1, 9},
    {"1 % 0.0 is nan", NULL, cmx_remainder, "Remainder", CMX_FLOAT32, 1, 0,
     NAN},
    {"-1 % 3 is 2", NULL, cmx_remainder, "Remainder", CMX_FLOAT32, -1, 3, 2},
    {"1 % -3 is -2", NULL, cmx_remainder, "Remainder", CMX_FLOAT16, 1, -3, -2},
    {"-0.0 % 1 is +0.0", NULL, cmx_remainder, "Remainder", CMX_FLOAT64, -0.0, 1,
     0.0},
    {"maximum(nan, 1) is nan", NULL, cmx_maximum, "Maximum", CMX_FLOAT32, NAN,
     1, NAN},
    {"maximum(1, nan) is nan", NULL, cmx_maximum, "Maximum", CMX_BFLOAT16, 1,
     NAN, NAN},
    {"minimum(nan, 1) is nan", NULL, cmx_minimum, "Minimum", CMX_FLOAT64, NAN,
     1, NAN},
    {"minimum(1, nan) is nan", NULL, cmx_minimum, "Minimum", CMX_FLOAT16, 1,
     NAN, NAN},
    {"logaddexp(inf, inf) is inf", NULL, cmx_logaddexp, "LogAddExp",
     CMX_FLOAT32, INF, INF, INF},
    {"logaddexp(-inf, -inf) is -inf", NULL, cmx_logaddexp, "LogAddExp",
     CMX_FLOAT64, -INF, -INF, -INF},
    {"logaddexp(nan, 1) is nan", NULL, cmx_logaddexp, "LogAddExp", CMX_FLOAT32,
     NAN, 1, NAN},
    {"nan == nan is false", NULL, cmx_equal, "Equal", CMX_FLOAT32, NAN, NAN, 0},
    {"nan != nan is true", NULL, cmx_not_equal, "NotEqual", CMX_FLOAT16, NAN,
     NAN, 1},
    {"nan < 1 is false", NULL, cmx_less, "Less", CMX_FLOAT64, NAN, 1, 0},
    {"sign(-0.0) is 0", cmx_sign, NULL, "Sign", CMX_FLOAT32, -0.0, 0, 0.0},
    {"sign(nan) is 0", cmx_sign, NULL, "Sign", CMX_FLOAT64, NAN, 0, 0.0},
    {"sign(-3) is -1", cmx_sign, NULL, "Sign", CMX_BFLOAT16, -3, 0, -1},
    {"abs(-0.0) is +0.0", cmx_abs, NULL, "Abs", CMX_FLOAT16, -0.0, 0, 0.0},
    {"negative(0.0) is -0.0", cmx_negative, NULL, "Negative", CMX_FLOAT32, 0.0,
     0, -0.0},
    {"erfinv(1) is inf", cmx_erfinv, NULL, "ErfInv", CMX_FLOAT32, 1, 0, INF},
    {"erfinv(-1) is -inf", cmx_erfinv, NULL, "ErfInv", CMX_FLOAT64, -1, 0,
     -INF},
    {"erfinv(2) is nan", cmx_erfinv, NULL, "ErfInv", CMX_FLOAT32, 2, 0, NAN},
    {"floor(-0.5) is -1", cmx_floor, NULL, "Floor", CMX_FLOAT32, -0.5, 0, -1},
    {"ceil(-0.5) is -0.0", cmx_ceil, NULL, "Ceil", CMX_FLOAT64, -0.5, 0, -0.0},
    {"isnan(nan)", cmx_isnan, NULL, "IsNan", CMX_FLOAT16, NAN, 0, 1},
    {"isinf(-inf)", cmx_isinf, NULL, "IsInf", CMX_BFLOAT16, -INF, 0, 1},
    {"isfinite(nan) is false", cmx_isfinite, NULL, "IsFinite", CMX_FLOAT64, NAN,
     0, 0},
    {"isposinf(inf)", cmx_isposinf, NULL, "IsPosInf", CMX_FLOAT32, INF, 0, 1},
    {"isneginf(inf) is false", cmx_isneginf, NULL, "IsNegInf", CMX_FLOAT32, INF,
     0, 0},
    {"logical_not(nan) is false", cmx_logical_not, NULL, "LogicalNot",
     CMX_FLOAT32, NAN, 0, 0},
    {"sqrt(-1) is nan", cmx_sqrt, NULL, "Sqrt", CMX_FLOAT32, -1, 0, NAN},
    {"exp(-inf) is 0", cmx_exp, NULL, "Exp", CMX_FLOAT32, -INF, 0, 0},
    {"exp(inf) is inf", cmx_exp, NULL, "Exp", CMX_FLOAT16, INF, 0, INF},
    {"exp(nan) is nan", cmx_exp, NULL, "Exp", CMX_FLOAT32, NAN, 0, NAN},
    {"log(0) is -inf", cmx_log, NULL, "Log", CMX_FLOAT32, 0, 0, -INF},
    {"log(-1) is nan", cmx_log, NULL, "Log", CMX_FLOAT64, -1, 0, NAN},
    {"tanh(inf) is 1", cmx_tanh, NULL, "Tanh", CMX_FLOAT32, INF, 0, 1},
    {"tanh(-0.0) is -0.0", cmx_tanh, NULL, "Tanh", CMX_FLOAT32, -0.0, 0, -0.0},
    {"sigmoid(-inf) is 0", cmx_sigmoid, NULL, "Sigmoid", CMX_FLOAT32, -INF, 0,
     0},
    {"sigmoid(inf) is 1", cmx_sigmoid, NULL, "Sigmoid", CMX_FLOAT64, INF, 0, 1},
};

static void spec_floats(void) {
  for (int di = 0; di < g_ndev; di++) {
    cmx_stream s = cmx_stream_on(g_devices[di]);
    for (size_t c = 0; c < sizeof FLOAT_CASES / sizeof FLOAT_CASES[0]; c++) {
      const float_case* k = &FLOAT_CASES[c];
      if (!runs_on(g_devices[di], k->prim)) continue;
      cmx_array x = vec_of(k->dt, false, 0, k->x), r = NULL;
      cmx_array y = k->b ? vec_of(k->dt, false, 0, k->y) : NULL;
      OK(k->b ? k->b(&r, x, y, s) : k->u(&r, x, s));
      double v = 0;
      bool same = r && all_same(r, &v, NULL);
      bool ok = same && (isnan(k->want)
                             ? isnan(v)
                             : v == k->want && signbit(v) == signbit(k->want));
      CHECK_MSG(ok, "%s (%s) on %s: got %g", k->what, cmx_dtype_name(k->dt),
                dev_name(g_devices[di]), v);
      cmx_array_release_all((cmx_array[]){x, y, r}, 3);
    }
  }
}

/* ---------------- round ---------------- */
static void spec_round(void) {
  static const struct {
    cmx_dtype dt;
    double x;
    int decimals;
    double want;
  } R[] = {{CMX_FLOAT32, 2.5, 0, 2.0},     {CMX_FLOAT32, 3.5, 0, 4.0},
           {CMX_FLOAT64, -0.5, 0, -0.0},   {CMX_FLOAT64, 0.125, 2, 0.12},
           {CMX_INT32, 1250, -2, 1200},    {CMX_INT32, 1350, -2, 1400},
           {CMX_INT8, -125, -1, -120},     {CMX_INT64, 5, -30, 0},
           {CMX_FLOAT32, 1e30, 10, 1e30f}, {CMX_UINT8, 250, -1, 250}};
  for (int di = 0; di < g_ndev; di++) {
    cmx_stream s = cmx_stream_on(g_devices[di]);
    if (!runs_on(g_devices[di], "Round")) continue;
    for (size_t c = 0; c < sizeof R / sizeof R[0]; c++) {
      bool is_int = !cmx_dtype_is_floating(R[c].dt);
      cmx_array x = vec_of(R[c].dt, is_int, (int64_t)R[c].x, R[c].x), r = NULL;
      OK(cmx_round(&r, x, R[c].decimals, s));
      double v = 0;
      CHECK_MSG(r && all_same(r, &v, NULL) && v == R[c].want &&
                    signbit(v) == signbit(R[c].want),
                "round(%g, %d) as %s on %s: got %g, want %g", R[c].x,
                R[c].decimals, cmx_dtype_name(R[c].dt), dev_name(g_devices[di]),
                v, R[c].want);
      cmx_array_release(x);
      cmx_array_release(r);
    }
  }
}

/* ---------------- conversions ---------------- */
static void spec_convert(void) {
  static const struct {
    cmx_dtype src;
    double x;
    cmx_dtype dst;
    int64_t want; /* for integer and bool destinations */
    double fwant; /* for float destinations */
  } C[] = {
      {CMX_FLOAT32, 300.75, CMX_UINT8, 44, 0},
      {CMX_FLOAT32, 1e30, CMX_INT32, -1, 0},
      {CMX_FLOAT32, NAN, CMX_INT32, 0, 0},
      {CMX_FLOAT64, -INF, CMX_INT64, INT64_MIN, 0},
      {CMX_FLOAT64, INF, CMX_INT64, INT64_MAX, 0},
      {CMX_FLOAT32, -1.5, CMX_UINT32, 4294967295ll, 0},
      {CMX_FLOAT32, -2.75, CMX_INT16, -2, 0},
      {CMX_FLOAT32, NAN, CMX_BOOL, 1, 0},
      {CMX_FLOAT16, -0.0, CMX_BOOL, 0, 0},
      {CMX_FLOAT32, 65520, CMX_FLOAT16, 0, INF},
      {CMX_FLOAT32, 65519, CMX_FLOAT16, 0, 65504},
      {CMX_FLOAT32, 1.00390625, CMX_BFLOAT16, 0, 1.0},      /* tie -> even */
      {CMX_FLOAT32, 1.01171875, CMX_BFLOAT16, 0, 1.015625}, /* tie -> even */
      {CMX_FLOAT32, 5.9604644775390625e-08, CMX_FLOAT16, 0,
       5.9604644775390625e-08}, /* the smallest float16 subnormal */
      {CMX_FLOAT32, 2.98023223876953125e-08, CMX_FLOAT16, 0, 0.0}, /* tie */
      {CMX_FLOAT64, -NAN, CMX_FLOAT16, 0, NAN},
  };
  for (int di = 0; di < g_ndev; di++) {
    cmx_stream s = cmx_stream_on(g_devices[di]);
    if (!runs_on(g_devices[di], "AsType")) continue;
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
      cmx_array x = vec_of(C[c].src, false, 0, C[c].x), r = NULL;
      OK(cmx_astype(&r, x, C[c].dst, s));
      double v = 0;
      int64_t iv = 0;
      bool same = r && all_same(r, &v, &iv);
      bool ok;
      if (cmx_dtype_is_floating(C[c].dst))
        ok = same && (isnan(C[c].fwant) ? isnan(v) : v == C[c].fwant);
      else if (C[c].dst == CMX_BOOL)
        ok = same && (int64_t)v == C[c].want;
      else
        ok = same && iv == C[c].want;
      CHECK_MSG(ok, "%s %g -> %s on %s: got %g (%lld)",
                cmx_dtype_name(C[c].src), C[c].x, cmx_dtype_name(C[c].dst),
                dev_name(g_devices[di]), v, (long long)iv);
      cmx_array_release(x);
      cmx_array_release(r);
    }
  }
}

/* ---------------- the CPU's fast rows ---------------- */
/* Raw element values covering specials, both signs, subnormals, huge and
 * ordinary values, for a float dtype. */
static int special_values(cmx_dtype dt, double* out) {
  static const double V[] = {
      0.0,      -0.0,      1.0,   -1.0, 0.5,  -2.5,  3.0,   7.25,   -9.75, 1e-3,
      -1e-3,    100,       -87.5, 88.5, 1e30, -1e30, 1e-40, -1e-40, 1e-7,  NAN,
      INFINITY, -INFINITY, 0.1,   6.5,  -6.5, 65504, 1e5,   -1e5};
  int n = (int)(sizeof V / sizeof V[0]);
  for (int i = 0; i < n; i++) out[i] = V[i];
  (void)dt;
  return n;
}

static void fast_paths(void) {
  int checked = 0;
  for (int id = 0; id < CMX__NUM_PRIMITIVES; id++) {
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
      cmx__row_fn fast = cmx__cpu_ew_row(id, (cmx_dtype)dt, false);
      cmx__row_fn gen = cmx__cpu_ew_row(id, (cmx_dtype)dt, true);
      if (!fast || fast == gen) continue;
      const cmx__ew_op* op = cmx__ew_op_get(id);
      CHECK(op != NULL);
      if (!op) continue;
      /* every pair of values (binary) or every value (unary), as arrays
       * of the dtype built through AsType from float64 */
      double v[64];
      int n = special_values((cmx_dtype)dt, v);
      int m = op->arity == 2 ? n * n : n;
      double* xs = malloc((size_t)m * sizeof(double));
      double* ys = malloc((size_t)m * sizeof(double));
      for (int i = 0; i < m; i++) {
        xs[i] = op->arity == 2 ? v[i / n] : v[i];
        ys[i] = op->arity == 2 ? v[i % n] : 0;
      }
      int64_t shape[1] = {m};
      cmx_array xd = NULL, yd = NULL, x = NULL, y = NULL;
      OK(cmx_array_from_data(&xd, xs, shape, 1, CMX_FLOAT64));
      OK(cmx_array_from_data(&yd, ys, shape, 1, CMX_FLOAT64));
      OK(cmx_astype(&x, xd, (cmx_dtype)dt, CMX_STREAM_DEFAULT));
      OK(cmx_astype(&y, yd, (cmx_dtype)dt, CMX_STREAM_DEFAULT));
      OK(cmx_eval((cmx_array[]){x, y}, 2));
      const void *px = NULL, *py = NULL;
      OK(cmx_array_data(x, &px));
      OK(cmx_array_data(y, &py));
      size_t isz = cmx_dtype_size(cmx__ew_out_dtype(op, (cmx_dtype)dt));
      char* o1 = malloc((size_t)m * isz);
      char* o2 = malloc((size_t)m * isz);
      cmx_ew_params prm = {0, 0};
      /* contiguous, then strided (every other element of the first half) */
      for (int layout = 0; layout < 2 && px && py; layout++) {
        int64_t st[3] = {1, layout ? 2 : 1, layout ? 2 : 1};
        int64_t len = layout ? m / 2 : m;
        char* p1[3] = {o1, (char*)px, (char*)py};
        char* p2[3] = {o2, (char*)px, (char*)py};
        memset(o1, 0x5a, (size_t)m * isz);
        memset(o2, 0xa5, (size_t)m * isz);
        fast(p1, st, len, &prm);
        gen(p2, st, len, &prm);
        CHECK_MSG(!memcmp(o1, o2, (size_t)len * isz),
                  "%s on %s: fast row differs from the table's (layout %d)",
                  op->name, cmx_dtype_name((cmx_dtype)dt), layout);
      }
      checked++;
      free(o1);
      free(o2);
      free(xs);
      free(ys);
      cmx_array_release_all((cmx_array[]){xd, yd, x, y}, 4);
    }
  }
  CHECK_MSG(checked >= 4, "only %d fast rows checked", checked);
}

/* ---------------- every table op: the GPU against the CPU ---------------- */
/* The primitive of table op `op` applied to inputs on stream s. */
static cmx_status apply_op(const cmx__ew_op* op, const cmx_array* in, int nin,
                           cmx_stream s, cmx_array* out) {
  const cmx_primitive_vtable* vt = cmx_builtin_primitive(op->id);
  cmx__round_params rp = {1};
  bool params = op->flags & CMX__EW_PARAMS;
  cmx_primitive* p =
      cmx_primitive_new(vt, params ? &rp : NULL, params ? sizeof rp : 0, s);
  if (!p) return cmx_last_status();
  cmx_dtype dt = cmx_array_dtype(in[nin == 3 ? 1 : 0]);
  cmx_dtype odt = cmx__ew_out_dtype(op, dt);
  int64_t shape[1] = {cmx_array_dim(in[0], 0)};
  const int64_t* shapes[1] = {shape};
  int ndims[1] = {1};
  return cmx_primitive_apply(out, 1, p, in, nin, shapes, ndims, &odt);
}

/* Whether the CPU and the GPU may round op's float results differently:
 * libm and CUDA's math library agree only to an ulp or two on
 * transcendental functions (and rsqrt), and complex products may be
 * contracted into FMAs on one side. The ops listed as exact are plain IEEE
 * operations (correctly rounded on both: +, -, *, /, sqrt) or exact ones
 * (comparisons, rounding, selection, sign changes). */
static bool transcendental(const cmx__ew_op* op, int cls) {
  if (cls != CMX__EW_CLASS_F && cls != CMX__EW_CLASS_D &&
      cls != CMX__EW_CLASS_C)
    return false;
  if (op->out == CMX__EW_OUT_BOOL) return false;
  switch (op->id) {
    case CMX__P_Add:
    case CMX__P_Subtract:
    case CMX__P_Negative:
    case CMX__P_Conjugate:
    case CMX__P_Real:
    case CMX__P_Imag:
    case CMX__P_Maximum:
    case CMX__P_Minimum:
    case CMX__P_Select:
      return false;
    case CMX__P_Multiply:
    case CMX__P_Divide:
    case CMX__P_Square:
    case CMX__P_Sqrt:
    case CMX__P_Abs:
    case CMX__P_Sign:
      return cls == CMX__EW_CLASS_C; /* complex: several roundings */
    case CMX__P_Floor:
    case CMX__P_Ceil:
    case CMX__P_Trunc:
    case CMX__P_Round:
    case CMX__P_Remainder:
    case CMX__P_FloorDivide:
      return false;
    default:
      return true;
  }
}

static void gpu_vs_cpu(void) {
  if (g_ndev < 2) return;
  cmx_stream cs = cmx_stream_on(g_devices[0]), gs = cmx_stream_on(g_devices[1]);
  int compared = 0;
  for (int id = 0; id < CMX__NUM_PRIMITIVES; id++) {
    const cmx__ew_op* op = cmx__ew_op_get(id);
    if (!op) continue;
    if (!cmx_primitive_has_kernel(cmx_builtin_primitive(id), CMX_GPU)) {
      g_no_kernel++;
      continue;
    }
    for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
      if (!cmx__ew_accepts(op, (cmx_dtype)dt)) continue;
      double v[64];
      int n = special_values((cmx_dtype)dt, v);
      int m = op->arity >= 2 ? n * n : n;
      double* xs = malloc((size_t)m * sizeof(double));
      double* ys = malloc((size_t)m * sizeof(double));
      uint8_t* cs8 = malloc((size_t)m);
      for (int i = 0; i < m; i++) {
        xs[i] = op->arity >= 2 ? v[i / n] : v[i];
        ys[i] = op->arity >= 2 ? v[i % n] : 0;
        cs8[i] = (uint8_t)(i % 3 == 0);
      }
      int64_t shape[1] = {m};
      cmx_array xd = NULL, yd = NULL, cd = NULL, x = NULL, y = NULL;
      OK(cmx_array_from_data(&xd, xs, shape, 1, CMX_FLOAT64));
      OK(cmx_array_from_data(&yd, ys, shape, 1, CMX_FLOAT64));
      OK(cmx_array_from_data(&cd, cs8, shape, 1, CMX_BOOL));
      OK(cmx_astype(&x, xd, (cmx_dtype)dt, CMX_STREAM_DEFAULT));
      OK(cmx_astype(&y, yd, (cmx_dtype)dt, CMX_STREAM_DEFAULT));
      cmx_array in[3];
      int nin = op->arity;
      if (nin == 3) {
        in[0] = cd;
        in[1] = x;
        in[2] = y;
      } else {
        in[0] = x;
        in[1] = y;
      }
      cmx_array rc = NULL, rg = NULL, dc = NULL, dg = NULL;
      OK(apply_op(op, in, nin, cs, &rc));
      OK(apply_op(op, in, nin, gs, &rg));
      cmx_dtype odt = cmx__ew_out_dtype(op, (cmx_dtype)dt);
      int cls = cmx__ew_class((cmx_dtype)dt);
      bool exact = !transcendental(op, cls);
      if (odt == CMX_COMPLEX64) {
        cmx_array rr = NULL, ri = NULL, gr = NULL, gi = NULL;
        OK(cmx_real(&rr, rc, CMX_STREAM_DEFAULT));
        OK(cmx_imag(&ri, rc, CMX_STREAM_DEFAULT));
        OK(cmx_real(&gr, rg, CMX_STREAM_DEFAULT));
        OK(cmx_imag(&gi, rg, CMX_STREAM_DEFAULT));
        cmx_array c2 = NULL, g2 = NULL; /* float32: read as float64 */
        OK(cmx_concatenate(&c2, (cmx_array[]){rr, ri}, 2, 0,
                           CMX_STREAM_DEFAULT));
        OK(cmx_concatenate(&g2, (cmx_array[]){gr, gi}, 2, 0,
                           CMX_STREAM_DEFAULT));
        OK(cmx_astype(&dc, c2, CMX_FLOAT64, CMX_STREAM_DEFAULT));
        OK(cmx_astype(&dg, g2, CMX_FLOAT64, CMX_STREAM_DEFAULT));
        cmx_array_release_all((cmx_array[]){rr, ri, gr, gi, c2, g2}, 6);
        m *= 2;
      } else {
        OK(cmx_astype(&dc, rc, CMX_FLOAT64, CMX_STREAM_DEFAULT));
        OK(cmx_astype(&dg, rg, CMX_FLOAT64, CMX_STREAM_DEFAULT));
      }
      double* a = malloc((size_t)m * sizeof(double));
      double* b = malloc((size_t)m * sizeof(double));
      bool read =
          dc && dg &&
          cmx_array_copy_to(dc, a, (size_t)m * sizeof(double)) == CMX_OK &&
          cmx_array_copy_to(dg, b, (size_t)m * sizeof(double)) == CMX_OK;
      CHECK_MSG(read, "%s on %s: %s", op->name, cmx_dtype_name((cmx_dtype)dt),
                cmx_last_error());
      /* ulp-scale tolerance of the output dtype */
      double eps = odt == CMX_FLOAT64                            ? 1e-13
                   : (odt == CMX_FLOAT16 || odt == CMX_BFLOAT16) ? 1e-2
                                                                 : 4e-6;
      int bad = 0, first = -1;
      for (int i = 0; read && i < m; i++) {
        bool same = (isnan(a[i]) && isnan(b[i])) ||
                    (a[i] == b[i] && signbit(a[i]) == signbit(b[i]));
        if (!same && !exact && isfinite(a[i]) && isfinite(b[i]))
          same = fabs(a[i] - b[i]) <= eps * fmax(fabs(a[i]), 1e-30) +
                                          (cls == CMX__EW_CLASS_C ? eps : 0);
        if (!same && first < 0) first = i;
        bad += !same;
      }
      CHECK_MSG(!bad,
                "%s on %s: gpu differs from cpu at %d of %d elements "
                "(first: x=%g y=%g cpu=%.17g gpu=%.17g)",
                op->name, cmx_dtype_name((cmx_dtype)dt), bad, m,
                first >= 0 ? xs[first % (op->arity >= 2 ? n * n : n)] : 0,
                first >= 0 ? ys[first % (op->arity >= 2 ? n * n : n)] : 0,
                first >= 0 ? a[first] : 0, first >= 0 ? b[first] : 0);
      compared++;
      free(a);
      free(b);
      free(xs);
      free(ys);
      free(cs8);
      cmx_array_release_all((cmx_array[]){xd, yd, cd, x, y, rc, rg, dc, dg}, 9);
    }
  }
  printf("gpu_vs_cpu: %d (op, dtype) pairs compared\n", compared);
}

int main(void) {
  g_devices[g_ndev++] = cmx_device_cpu();
  if (cmx_is_available(cmx_device_gpu()))
    g_devices[g_ndev++] = cmx_device_gpu();
  RUN(spec_integers);
  RUN(spec_floats);
  RUN(spec_round);
  RUN(spec_convert);
  RUN(fast_paths);
  RUN(gpu_vs_cpu);
  if (g_ndev < 2) printf("test_ew_special: no gpu here: the cpu only\n");
  if (g_no_kernel)
    printf(
        "test_ew_special: %d gpu cases have no gpu kernel (see "
        "cmx_coverage)\n",
        g_no_kernel);
  return test_summary("test_ew_special");
}
