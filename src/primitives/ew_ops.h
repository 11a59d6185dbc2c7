/* The op table: every elementwise op described once.
 *
 * Each row of CMX__EW_OPS(X) is
 *   X(Name, arity, out, in, flags, B, U, S, F, D, C)
 * Name    the primitive (src/primitives/list.h)
 * arity   1, 2 or 3 inputs (Select's first input is its bool condition)
 * out     output dtype: CMX__EW_OUT_SAME (the input's), _BOOL, or _REAL
 *         (complex64 gives float32, other dtypes their own)
 * in      the op layer's input rule: CMX__EW_IN_ANY (binary inputs promote
 *         to their result type), _FLOAT (integer and bool inputs are
 *         computed as float32, as MLX does), or _TRUTH (inputs are read
 *         as truth values: one shared dtype, else both converted to bool,
 *         so no value rounds to zero on the way). A dtype whose slot is
 *         NO is rejected; bool inputs of an op taking integers but not
 *         bool (shifts) compute as uint8.
 * flags   CMX__EW_HEAVY: float work is compute-bound (transcendental), so
 *         backends vectorise it harder (the CPU compiles float32 rows for
 *         AVX2/AVX-512 too); CMX__EW_PARAMS: the op takes cmx_ew_params,
 *         named CMX_EW_P in expressions
 * B U S F D C  the scalar semantics per dtype class: bool, unsigned ints
 *         (uint8..uint64), signed ints (int8..int64), float (float16,
 *         bfloat16, float32: computed in float), double (float64) and
 *         complex64. Each is CMX_EW_NO (the class is not supported: the
 *         op layer converts or rejects it first), or an expression of x
 *         (and y, and the condition c for Select):
 *           CMX_EW_E(expr)  operands in the storage type (halves in float)
 *           CMX_EW_W(expr)  integer operands in a wrapping unsigned type of
 *                           at least 32 bits (for +, -, *: no overflow UB)
 *         The result is converted to the output's storage type (truncated
 *         for integers, 0/1 for bool outputs, rounded for halves).
 * Expressions call the helpers of primitives/ew_scalar.h, which every
 * backend compiles; the CPU instantiates rows from these rows
 * (backend/cpu/ew_gen.h), CUDA builds kernels from their text
 * (cmx__ew_prelude, primitives/ew_ops.c), and so will compile's generated
 * code. Adding an elementwise op is one row here, its list.h entry and
 * vtable, and its tests.
 *
 * Special values, decided once (ew_scalar.h implements them; every device
 * is checked against them by tests/c/test_ew_special.c):
 * - Integers never hit undefined behaviour. +, -, *, negation, square and
 *   power wrap modulo 2^bits (abs(INT_MIN) is INT_MIN).
 * - Integer floor_divide by 0 gives 0 and remainder by 0 gives x, as MLX
 *   (NumPy gives 0 for both, with a warning); INT_MIN // -1 wraps to
 *   INT_MIN, INT_MIN % -1 is 0. Floor division rounds toward -inf; the
 *   remainder has the divisor's sign.
 * - Integer x ** negative gives 0 for every x (1 ** -5 too), as MLX.
 * - Shifts by a count < 0 or >= the bit width give 0 (left) or the sign
 *   fill, 0 or -1 (right). bool shifts compute as uint8 (op layer).
 * - Float division by 0 is IEEE (+-inf, NaN for 0 / 0); float
 *   floor_divide by 0 gives x / 0, remainder by 0 gives NaN; both follow
 *   the divisor's sign for zero results (-0.0 // 1 == -0.0).
 * - maximum/minimum propagate NaN (either argument); complex ones too,
 *   ordering lexicographically (real part, then imaginary).
 * - sign of -0, 0 and NaN is 0, as MLX; abs(-0.0) is +0; negative(0.0)
 *   is -0.0.
 * - logaddexp(x, x) is x + log 2 (so inf, inf gives inf), NaN propagates.
 * - erfinv outside [-1, 1] is NaN, +-1 gives +-inf.
 * - round is half to even; rounding to more decimals than a value holds
 *   leaves it unchanged; integers round only for negative decimals.
 * - Comparisons with NaN are false (!= is true); complex numbers compare
 *   equal by both parts and order lexicographically.
 * - Conversions (AsType): float -> integer truncates toward 0 and
 *   saturates at the 64-bit range, then wraps to narrower integers
 *   (300.7 -> uint8 is 44; 1e30 -> int32 is -1, from INT64_MAX); NaN -> 0;
 *   -inf -> int64 is INT64_MIN. To bool: nonzero, NaN included. Complex ->
 *   real takes the real part. float16/bfloat16 round to nearest even,
 *   float16 overflows to inf from 65520; NaN stays NaN.
 */
#ifndef CMX_PRIMITIVES_EW_OPS_H
#define CMX_PRIMITIVES_EW_OPS_H

/* Output rules, input rules and flags. */
enum { CMX__EW_OUT_SAME = 0, CMX__EW_OUT_BOOL = 1, CMX__EW_OUT_REAL = 2 };
enum { CMX__EW_IN_ANY = 0, CMX__EW_IN_FLOAT = 1, CMX__EW_IN_TRUTH = 2 };
enum { CMX__EW_HEAVY = 1, CMX__EW_PARAMS = 2 };

/* Dtype classes, in slot order. */
enum {
  CMX__EW_CLASS_B = 0, /* bool */
  CMX__EW_CLASS_U,     /* uint8 ... uint64 */
  CMX__EW_CLASS_S,     /* int8 ... int64 */
  CMX__EW_CLASS_F,     /* float16, bfloat16, float32 (in float) */
  CMX__EW_CLASS_D,     /* float64 */
  CMX__EW_CLASS_C,     /* complex64 */
  CMX__EW_NUM_CLASSES
};
/* Slot kinds. */
enum { CMX__EW_KIND_NO = 0, CMX__EW_KIND_E = 1, CMX__EW_KIND_W = 2 };

#define CMX__EW_OPS(X) \
  CMX__EW_UNARY_OPS(X) \
  CMX__EW_BINARY_OPS(X) CMX__EW_COMPARE_OPS(X) CMX__EW_TERNARY_OPS(X)

/* Rows use writing helpers (CMX__EW_MATH ...) that stand for several
 * slots, so a consumer's X takes (Name, arity, out, in, flags, ...) and
 * forwards: CMX__EW_FWD(M, Name, arity, out, in, flags, __VA_ARGS__)
 * calls M with the six slots expanded. */
#define CMX__EW_FWD(M, ...) M(__VA_ARGS__)

/* Writing helpers for the rows. */
#define CMX__EW_NONE_INT CMX_EW_NO, CMX_EW_NO, CMX_EW_NO
/* A float function: libm's float and double versions (FF, DF) and
 * ew_scalar.h's complex one (cmx_c_<nm>). */
#define CMX__EW_MATH(FF, DF, nm) \
  CMX__EW_NONE_INT, CMX_EW_E(FF(x)), CMX_EW_E(DF(x)), CMX_EW_E(cmx_c_##nm(x))
/* A float function row: integer inputs as float32, libm's float and
 * double functions (FF, DF) and ew_scalar.h's complex one (cmx_c_<nm>). */
#define CMX__EW_FN(X, Nm, fl, FF, DF, nm) \
  X(Nm, 1, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, fl, CMX__EW_MATH(FF, DF, nm))
/* Predicates: I for integers and bool, F for float and double, Z complex. */
#define CMX__EW_PRED(I, F, Z) \
  CMX_EW_E(I), CMX_EW_E(I), CMX_EW_E(I), CMX_EW_E(F), CMX_EW_E(F), CMX_EW_E(Z)
#define CMX__EW_ZERO ((void)x, 0)

// clang-format off
/* ---- unary (x) ---- */
#define CMX__EW_UNARY_OPS(X)                                                  \
  X(Abs, 1, CMX__EW_OUT_REAL, CMX__EW_IN_ANY, 0,                              \
    CMX_EW_E(x), CMX_EW_E(x), CMX_EW_E(cmx_ew_iabs(x)), CMX_EW_E(fabsf(x)),      \
    CMX_EW_E(fabs(x)), CMX_EW_E(cmx_c_abs(x)))                                \
  X(Sign, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                             \
    CMX_EW_E(x), CMX_EW_E(x > 0), CMX_EW_E((x > 0) - (x < 0)),                \
    CMX_EW_E(cmx_ew_signf(x)), CMX_EW_E(cmx_ew_sign(x)), CMX_EW_E(cmx_c_sign(x)))   \
  X(Negative, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                         \
    CMX_EW_NO, CMX_EW_E(cmx_ew_negw(x)), CMX_EW_E(cmx_ew_negw(x)), CMX_EW_E(-x),    \
    CMX_EW_E(-x), CMX_EW_E(cmx_c_neg(x)))                                     \
  X(Square, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                           \
    CMX_EW_E(x), CMX_EW_E(cmx_ew_mulw(x, x)), CMX_EW_E(cmx_ew_mulw(x, x)),          \
    CMX_EW_E(x * x), CMX_EW_E(x * x), CMX_EW_E(cmx_c_square(x)))              \
  CMX__EW_FN(X, Sqrt, 0, sqrtf, sqrt, sqrt)                                   \
  X(Rsqrt, 1, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, 0, CMX__EW_NONE_INT,        \
    CMX_EW_E(1.0f / sqrtf(x)), CMX_EW_E(1.0 / sqrt(x)),                       \
    CMX_EW_E(cmx_c_rsqrt(x)))                                                 \
  CMX__EW_FN(X, Exp, CMX__EW_HEAVY, cmx_expf, exp, exp)                       \
  CMX__EW_FN(X, Expm1, 0, expm1f, expm1, expm1)                               \
  CMX__EW_FN(X, Log, CMX__EW_HEAVY, cmx_logf, log, log)                       \
  CMX__EW_FN(X, Log2, 0, log2f, log2, log2)                                   \
  CMX__EW_FN(X, Log10, 0, log10f, log10, log10)                               \
  CMX__EW_FN(X, Log1p, 0, log1pf, log1p, log1p)                               \
  X(Erf, 1, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, CMX__EW_HEAVY,              \
    CMX__EW_NONE_INT, CMX_EW_E(cmx_erff(x)), CMX_EW_E(erf(x)), CMX_EW_NO)     \
  X(ErfInv, 1, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, 0, CMX__EW_NONE_INT,       \
    CMX_EW_E((float)cmx_ew_erfinv(x)), CMX_EW_E(cmx_ew_erfinv(x)), CMX_EW_NO)       \
  CMX__EW_FN(X, Sin, 0, sinf, sin, sin)                                       \
  CMX__EW_FN(X, Cos, 0, cosf, cos, cos)                                       \
  CMX__EW_FN(X, Tan, 0, tanf, tan, tan)                                       \
  CMX__EW_FN(X, ArcSin, 0, asinf, asin, arcsin)                               \
  CMX__EW_FN(X, ArcCos, 0, acosf, acos, arccos)                               \
  CMX__EW_FN(X, ArcTan, 0, atanf, atan, arctan)                               \
  CMX__EW_FN(X, Sinh, 0, sinhf, sinh, sinh)                                   \
  CMX__EW_FN(X, Cosh, 0, coshf, cosh, cosh)                                   \
  CMX__EW_FN(X, Tanh, CMX__EW_HEAVY, cmx_tanhf, tanh, tanh)                   \
  CMX__EW_FN(X, ArcSinh, 0, asinhf, asinh, arcsinh)                           \
  CMX__EW_FN(X, ArcCosh, 0, acoshf, acosh, arccosh)                           \
  CMX__EW_FN(X, ArcTanh, 0, atanhf, atanh, arctanh)                           \
  CMX__EW_FN(X, Sigmoid, CMX__EW_HEAVY, cmx_ew_sigmoidf, cmx_ew_sigmoid,       \
             sigmoid)                                                         \
  X(Floor, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_NONE_INT,          \
    CMX_EW_E(floorf(x)), CMX_EW_E(floor(x)), CMX_EW_NO)                       \
  X(Ceil, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_NONE_INT,           \
    CMX_EW_E(ceilf(x)), CMX_EW_E(ceil(x)), CMX_EW_NO)                         \
  X(Trunc, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_NONE_INT,          \
    CMX_EW_E(truncf(x)), CMX_EW_E(trunc(x)), CMX_EW_NO)                       \
  X(Round, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, CMX__EW_PARAMS,               \
    CMX_EW_E(cmx_ew_round_u(x, CMX_EW_P)), CMX_EW_E(cmx_ew_round_u(x, CMX_EW_P)),                 \
    CMX_EW_E(cmx_ew_round_s(x, CMX_EW_P)), CMX_EW_E(cmx_ew_round_f(x, CMX_EW_P)),                 \
    CMX_EW_E(cmx_ew_round_d(x, CMX_EW_P)), CMX_EW_NO)                                   \
  X(IsNan, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                            \
    CMX__EW_PRED(CMX__EW_ZERO, isnan(x), cmx_c_isnan(x)))                     \
  X(IsInf, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                            \
    CMX__EW_PRED(CMX__EW_ZERO, isinf(x), cmx_c_isinf(x)))                     \
  X(IsFinite, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                         \
    CMX__EW_PRED(((void)x, 1), isfinite(x), cmx_c_isfinite(x)))               \
  /* complex values are +-inf when equal to them (zero imaginary part) */     \
  X(IsPosInf, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                         \
    CMX__EW_PRED(CMX__EW_ZERO, x == CMX_INFF,                                 \
                 cmx_cre(x) == CMX_INFF && cmx_cim(x) == 0))                  \
  X(IsNegInf, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                         \
    CMX__EW_PRED(CMX__EW_ZERO, x == -CMX_INFF,                                \
                 cmx_cre(x) == -CMX_INFF && cmx_cim(x) == 0))                 \
  X(LogicalNot, 1, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                       \
    CMX__EW_PRED(x == 0, x == 0, !cmx_c_nz(x)))                               \
  X(Conjugate, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_NONE_INT,      \
    CMX_EW_NO, CMX_EW_NO, CMX_EW_E(cmx_c_conj(x)))                            \
  X(Real, 1, CMX__EW_OUT_REAL, CMX__EW_IN_ANY, 0, CMX__EW_NONE_INT,           \
    CMX_EW_NO, CMX_EW_NO, CMX_EW_E(cmx_cre(x)))                               \
  /* the imaginary part of a real value: 0 of its dtype */                    \
  X(Imag, 1, CMX__EW_OUT_REAL, CMX__EW_IN_ANY, 0,                             \
    CMX__EW_PRED(CMX__EW_ZERO, CMX__EW_ZERO, cmx_cim(x)))                     \
  X(BitwiseInvert, 1, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                    \
    CMX_EW_E(!x), CMX_EW_E(~x), CMX_EW_E(~x), CMX_EW_NO, CMX_EW_NO,           \
    CMX_EW_NO)

/* ---- binary arithmetic (x, y) ---- */
#define CMX__EW_BINARY_OPS(X)                                                 \
  X(Add, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                              \
    CMX_EW_E(x | y), CMX_EW_W(x + y), CMX_EW_W(x + y), CMX_EW_E(x + y),       \
    CMX_EW_E(x + y), CMX_EW_E(cmx_c_add(x, y)))                               \
  X(Subtract, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                         \
    CMX_EW_E(x ^ y), CMX_EW_W(x - y), CMX_EW_W(x - y), CMX_EW_E(x - y),       \
    CMX_EW_E(x - y), CMX_EW_E(cmx_c_sub(x, y)))                               \
  X(Multiply, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                         \
    CMX_EW_E(x & y), CMX_EW_W(x * y), CMX_EW_W(x * y), CMX_EW_E(x * y),       \
    CMX_EW_E(x * y), CMX_EW_E(cmx_c_mul(x, y)))                               \
  X(Divide, 2, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, 0, CMX__EW_NONE_INT,       \
    CMX_EW_E(x / y), CMX_EW_E(x / y), CMX_EW_E(cmx_c_div(x, y)))              \
  X(FloorDivide, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                      \
    CMX_EW_E(x & y), CMX_EW_E(cmx_ew_fdiv_u(x, y)), CMX_EW_E(cmx_ew_fdiv_s(x, y)),  \
    CMX_EW_E((float)cmx_ew_fdiv_d(x, y)), CMX_EW_E(cmx_ew_fdiv_d(x, y)), CMX_EW_NO) \
  X(Remainder, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                        \
    CMX_EW_E(x && !y), CMX_EW_E(cmx_ew_rem_u(x, y)),               \
    CMX_EW_E(cmx_ew_rem_s(x, y)), CMX_EW_E(cmx_ew_rem_f(x, y)),                     \
    CMX_EW_E(cmx_ew_rem_d(x, y)), CMX_EW_NO)                                     \
  X(Power, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                            \
    CMX_EW_E(x | !y), CMX_EW_E(cmx_ew_ipow_u(x, y)), CMX_EW_E(cmx_ew_ipow_s(x, y)), \
    CMX_EW_E(powf(x, y)), CMX_EW_E(pow(x, y)), CMX_EW_E(cmx_c_pow(x, y)))     \
  X(Maximum, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                          \
    CMX_EW_E(x | y), CMX_EW_E(x > y ? x : y), CMX_EW_E(x > y ? x : y),        \
    CMX_EW_E(cmx_ew_fmax(x, y)), CMX_EW_E(cmx_ew_fmax(x, y)),                       \
    CMX_EW_E(cmx_c_max(x, y)))                                                \
  X(Minimum, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                          \
    CMX_EW_E(x & y), CMX_EW_E(x < y ? x : y), CMX_EW_E(x < y ? x : y),        \
    CMX_EW_E(cmx_ew_fmin(x, y)), CMX_EW_E(cmx_ew_fmin(x, y)),                       \
    CMX_EW_E(cmx_c_min(x, y)))                                                \
  X(ArcTan2, 2, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, 0, CMX__EW_NONE_INT,      \
    CMX_EW_E(atan2f(x, y)), CMX_EW_E(atan2(x, y)), CMX_EW_NO)                 \
  X(LogAddExp, 2, CMX__EW_OUT_SAME, CMX__EW_IN_FLOAT, CMX__EW_HEAVY,          \
    CMX__EW_NONE_INT, CMX_EW_E(cmx_ew_logaddexpf(x, y)),                         \
    CMX_EW_E(cmx_ew_logaddexp(x, y)), CMX_EW_NO)

/* ---- comparisons, logical, bitwise and shifts (x, y) ---- */
/* A comparison: E over real values (halves in float), Z over complex. */
#define CMX__EW_CMP(E, Z) CMX__EW_PRED(E, E, Z)
#define CMX__EW_BITS(E) CMX_EW_E(E), CMX_EW_E(E), CMX_EW_E(E), \
    CMX_EW_NO, CMX_EW_NO, CMX_EW_NO
#define CMX__EW_COMPARE_OPS(X)                                                \
  X(Equal, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                            \
    CMX__EW_CMP(x == y, cmx_c_eq(x, y)))                                      \
  X(NotEqual, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                         \
    CMX__EW_CMP(x != y, !cmx_c_eq(x, y)))                                     \
  X(Less, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                             \
    CMX__EW_CMP(x < y, cmx_c_lt(x, y)))                                       \
  X(LessEqual, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                        \
    CMX__EW_CMP(x <= y, cmx_c_le(x, y)))                                      \
  X(Greater, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                          \
    CMX__EW_CMP(x > y, cmx_c_lt(y, x)))                                       \
  X(GreaterEqual, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_ANY, 0,                     \
    CMX__EW_CMP(x >= y, cmx_c_le(y, x)))                                      \
  X(LogicalAnd, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_TRUTH, 0,                       \
    CMX__EW_CMP(x != 0 && y != 0, cmx_c_nz(x) && cmx_c_nz(y)))                \
  X(LogicalOr, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_TRUTH, 0,                        \
    CMX__EW_CMP(x != 0 || y != 0, cmx_c_nz(x) || cmx_c_nz(y)))                \
  X(LogicalXor, 2, CMX__EW_OUT_BOOL, CMX__EW_IN_TRUTH, 0,                       \
    CMX__EW_CMP((x != 0) != (y != 0), cmx_c_nz(x) != cmx_c_nz(y)))            \
  X(BitwiseAnd, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_BITS(x & y))  \
  X(BitwiseOr, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_BITS(x | y))   \
  X(BitwiseXor, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX__EW_BITS(x ^ y))  \
  X(LeftShift, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX_EW_NO,             \
    CMX_EW_E(cmx_ew_lsh_u(x, y, 8 * sizeof(x))),                                 \
    CMX_EW_E(cmx_ew_lsh_s(x, y, 8 * sizeof(x))), CMX_EW_NO, CMX_EW_NO,           \
    CMX_EW_NO)                                                                \
  X(RightShift, 2, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0, CMX_EW_NO,            \
    CMX_EW_E(cmx_ew_rsh_u(x, y, 8 * sizeof(x))),                                 \
    CMX_EW_E(cmx_ew_rsh_s(x, y, 8 * sizeof(x))), CMX_EW_NO, CMX_EW_NO,           \
    CMX_EW_NO)

/* ---- ternary (c, x, y) ---- */
/* Select moves x's or y's bits: every class the same. */
#define CMX__EW_TERNARY_OPS(X)                                                \
  X(Select, 3, CMX__EW_OUT_SAME, CMX__EW_IN_ANY, 0,                           \
    CMX_EW_E(c ? x : y), CMX_EW_E(c ? x : y), CMX_EW_E(c ? x : y),            \
    CMX_EW_E(c ? x : y), CMX_EW_E(c ? x : y), CMX_EW_E(c ? x : y))
// clang-format on

/* ---- reading a slot ----
 * CMX__EW_SPLIT(slot) gives "kind, (expr)": E, W or NO, and the
 * parenthesised expression (empty for NO). CMX__EW_SLOT(M, slot) calls
 * M(kind, (expr)); consumers paste the kind onto a prefix to pick what to
 * generate: CMX__EW_CAT(GEN_, kind). (A macro cannot expand inside its own
 * expansion, so slot reading has its own forwarder, distinct from
 * CMX__EW_FWD, and generators that pass extra arguments use
 * CMX__EW_SLOT_ARGS(M, slot, args...) -> M(kind, (expr), args...).) */
#define CMX__EW_CAT(a, b) CMX__EW_CAT_(a, b)
#define CMX__EW_CAT_(a, b) a##b
#define CMX__EW_SPLIT(slot) CMX__EW_CAT(CMX__EW_SPLIT_, slot)
#define CMX__EW_SLOT(M, slot) CMX__EW_SLOT_(M, CMX__EW_SPLIT(slot))
#define CMX__EW_SLOT_(M, ...) M(__VA_ARGS__)
#define CMX__EW_SLOT_ARGS(M, slot, ...) \
  CMX__EW_SLOT_(M, CMX__EW_SPLIT(slot), __VA_ARGS__)
#define CMX__EW_SPLIT_CMX_EW_E(...) E, (__VA_ARGS__)
#define CMX__EW_SPLIT_CMX_EW_W(...) W, (__VA_ARGS__)
#define CMX__EW_SPLIT_CMX_EW_NO NO, ()

/* ---- the table as data (ew_ops.c) ---- */
#include <stdbool.h>
#include <stddef.h>

#include "cmx/dtype.h"
#include "cmx/primitive.h"

/* The parameters of parametrised ops, as ew_scalar.h declares them. */
#ifndef CMX_EW_PARAMS_DEFINED
#define CMX_EW_PARAMS_DEFINED
typedef struct cmx_ew_params {
  int decimals;
  uint64_t q;
} cmx_ew_params;
#endif

typedef struct cmx__ew_op {
  int id; /* primitive id (CMX__P_<Name>) */
  const char* name;
  int arity, out, in, flags;
  int kind[CMX__EW_NUM_CLASSES];         /* CMX__EW_KIND_* */
  const char* expr[CMX__EW_NUM_CLASSES]; /* the expression's text, or NULL */
} cmx__ew_op;

/* The row of primitive id, or NULL when it is not a table op. */
const cmx__ew_op* cmx__ew_op_get(int id);
/* The dtype class (CMX__EW_CLASS_*) of dt. */
int cmx__ew_class(cmx_dtype dt);
/* Whether op accepts input dtype dt (its class's slot is not NO). */
bool cmx__ew_accepts(const cmx__ew_op* op, cmx_dtype dt);
/* The output dtype of op on input dtype dt. */
cmx_dtype cmx__ew_out_dtype(const cmx__ew_op* op, cmx_dtype dt);
/* Writes the definitions a generated kernel (CUDA, or compile's C) needs
 * to compute op on input dtype dt, after ew_scalar.h and a backend
 * binding, as macros:
 *   CMX_IN_T, CMX_OUT_T     storage types of the inputs (x, y) and output
 *   CMX_CT                  the compute type of x and y
 *   CMX_LOAD(v)             an input's storage value -> CMX_CT
 *   CMX_STORE(v)            the expression's value -> CMX_OUT_T
 *   CMX_OP(c, x, y)         the expression (c only for Select, y binary)
 * `prefix` is prepended to each macro name (e.g. "" or "OP3_" for fused
 * kernels). Returns false when dt is not accepted or buf is too small. */
bool cmx__ew_prelude(const cmx__ew_op* op, cmx_dtype dt, const char* prefix,
                     char* buf, size_t size);
/* The conversion of one element: writes "cmx_cvt_<dst>(<src>, x)" and the
 * two storage types as CMX_IN_T/CMX_OUT_T definitions; false on bad
 * dtypes or a short buffer. */
bool cmx__ew_convert_prelude(cmx_dtype src, cmx_dtype dst, const char* prefix,
                             char* buf, size_t size);
/* The kernel parameters of table primitive p (cmx_ew_params, the
 * expressions' CMX_EW_P): for Round, its decimals clamped to +-400
 * (beyond, every double is unchanged or rounds to 0) and, for negative
 * decimals, the integer rounding quantum q = 10^-decimals (0 when it
 * exceeds 64 bits: everything rounds to 0); zeros for other ops. */
cmx_ew_params cmx__ew_params_of(const cmx_primitive* p);
/* The dtype's suffix in ew_scalar.h ("f32", "b8" ...). */
const char* cmx__ew_suffix(cmx_dtype dt);

#endif
