/* Element-wise ops and reductions of cmx.core: unary, binary, ternary
 * (where, clip), astype, round, divmod, the reductions, var/std,
 * argmin/argmax and softmax, as module functions and, where MLX has them,
 * array methods. The uniform families share one body each, which calls
 * the C op named in the spec. */
#include "args.h"

typedef cmx_status (*unary_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*binary_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
typedef cmx_status (*reduce_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                cmx_stream);
typedef cmx_status (*moment_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                int, cmx_stream);
typedef cmx_status (*arg_fn)(cmx_array*, cmx_array, const int*, bool,
                             cmx_stream);

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"
#define SIG_UNARY "(a: array, /, " STREAM_KW
#define SIG_BINARY "(a: scalar | array, b: scalar | array, /, " STREAM_KW
#define SIG_REDUCE                                                         \
  "(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool " \
  "= False, " STREAM_KW
#define DOC_TAIL                                                           \
  "\n\nArgs:\n    Arrays may be arrays, Python scalars (weakly typed) or " \
  "array-likes.\n    stream (Stream | Device | None): where the op runs "  \
  "(default: the default stream).\n\nReturns:\n    array: The result."

/* ---------------- shared bodies ---------------- */
static PyObject* unary(cmxpy_args* A) {
  return RET(DATA(unary_fn)(OUT, ARR(0), STREAM));
}

static PyObject* binary(cmxpy_args* A) {
  /* Two arrays (the usual call) convert without running any Python code,
   * and the op runs holding the GIL: their handles stay in place, so the
   * call borrows them (no retain and release of each). */
  if (CmxArray_Check(OBJ(0)) && CmxArray_Check(OBJ(1)))
    return RET(
        DATA(binary_fn)(OUT, CMXPY_ARR(OBJ(0)), CMXPY_ARR(OBJ(1)), STREAM));
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(DATA(binary_fn)(OUT, ARR(0), ARR(1), STREAM));
}

static PyObject* reduce(cmxpy_args* A) {
  return RET(DATA(reduce_fn)(OUT, ARR(0), AXES(1), FLAG(2), STREAM));
}

static PyObject* moment(cmxpy_args* A) {
  return RET(DATA(moment_fn)(OUT, ARR(0), AXES(1), FLAG(2), INT(3), STREAM));
}

static PyObject* argreduce(cmxpy_args* A) {
  return RET(DATA(arg_fn)(OUT, ARR(0), OPT_INT(1), FLAG(2), STREAM));
}

/* ---------------- the families ---------------- */
#define FN(name, sig, body, doc)                        \
  CMXPY_SPEC_FULL(name, #name, sig, doc DOC_TAIL, body, \
                  (const void*)cmx_##name, 0, NULL)
#define ALIAS(alias, name) \
  CMXPY_ALIAS(alias, name, "Alias of :func:`" #name "`.")
#define METHOD(name) CMXPY_METHOD_OF(name)

#define UNARY(name, doc) FN(name, SIG_UNARY, unary, doc)
#define BINARY(name, doc) FN(name, SIG_BINARY, binary, doc)
#define REDUCE(name, doc) FN(name, SIG_REDUCE, reduce, doc)

UNARY(abs, "Element-wise absolute value.")
UNARY(sign, "Element-wise sign.")
UNARY(negative, "Element-wise negation.")
UNARY(positive, "Element-wise positive (a copy of the values).")
UNARY(square, "Element-wise square.")
UNARY(sqrt, "Element-wise square root.")
UNARY(rsqrt, "Element-wise reciprocal and square root.")
UNARY(reciprocal, "Element-wise reciprocal.")
UNARY(exp, "Element-wise exponential.")
UNARY(expm1, "Element-wise exponential minus 1 (accurate for small values).")
UNARY(log, "Element-wise natural logarithm.")
UNARY(log2, "Element-wise base-2 logarithm.")
UNARY(log10, "Element-wise base-10 logarithm.")
UNARY(log1p, "Element-wise natural log of one plus the array.")
UNARY(erf, "Element-wise error function.")
UNARY(erfinv, "Element-wise inverse of the error function.")
UNARY(sin, "Element-wise sine.")
UNARY(cos, "Element-wise cosine.")
UNARY(tan, "Element-wise tangent.")
UNARY(arcsin, "Element-wise inverse sine.")
UNARY(arccos, "Element-wise inverse cosine.")
UNARY(arctan, "Element-wise inverse tangent.")
UNARY(sinh, "Element-wise hyperbolic sine.")
UNARY(cosh, "Element-wise hyperbolic cosine.")
UNARY(tanh, "Element-wise hyperbolic tangent.")
UNARY(arcsinh, "Element-wise inverse hyperbolic sine.")
UNARY(arccosh, "Element-wise inverse hyperbolic cosine.")
UNARY(arctanh, "Element-wise inverse hyperbolic tangent.")
UNARY(degrees, "Convert angles from radians to degrees.")
UNARY(radians, "Convert angles from degrees to radians.")
UNARY(sigmoid, "Element-wise logistic sigmoid 1 / (1 + exp(-a)).")
UNARY(floor, "Element-wise floor.")
UNARY(ceil, "Element-wise ceil.")
UNARY(trunc, "Element-wise truncation toward zero.")
UNARY(isnan, "Return a boolean array indicating which elements are NaN.")
UNARY(isinf,
      "Return a boolean array indicating which elements are +/- infinity.")
UNARY(isfinite, "Return a boolean array indicating which elements are finite.")
UNARY(isposinf,
      "Return a boolean array indicating which elements are positive "
      "infinity.")
UNARY(isneginf,
      "Return a boolean array indicating which elements are negative "
      "infinity.")
UNARY(logical_not, "Element-wise logical not.")
UNARY(conjugate, "Return the elementwise complex conjugate of the input.")
UNARY(real, "Returns the real part of a complex array.")
UNARY(imag, "Returns the imaginary part of a complex array.")
UNARY(bitwise_invert, "Element-wise bitwise inverse.")
UNARY(stop_gradient,
      "Stop gradients from being computed: the identity in the forward pass.")
ALIAS(asin, arcsin)
ALIAS(acos, arccos)
ALIAS(atan, arctan)
ALIAS(asinh, arcsinh)
ALIAS(acosh, arccosh)
ALIAS(atanh, arctanh)
ALIAS(conj, conjugate)

BINARY(add, "Element-wise addition with numpy-style broadcasting.")
BINARY(subtract, "Element-wise subtraction with numpy-style broadcasting.")
BINARY(multiply, "Element-wise multiplication with numpy-style broadcasting.")
BINARY(divide, "Element-wise division with numpy-style broadcasting.")
BINARY(floor_divide,
       "Element-wise integer division (rounds toward negative infinity).")
BINARY(remainder,
       "Element-wise remainder of division (the sign of the divisor, as "
       "NumPy).")
BINARY(power, "Element-wise power operation a ** b.")
BINARY(maximum, "Element-wise maximum.")
BINARY(minimum, "Element-wise minimum.")
BINARY(arctan2, "Element-wise inverse tangent of the ratio a / b.")
BINARY(logaddexp,
       "Element-wise log-add-exp: log(exp(a) + exp(b)), computed stably.")
BINARY(equal, "Element-wise equality.")
BINARY(not_equal, "Element-wise not equal.")
BINARY(less, "Element-wise less than.")
BINARY(less_equal, "Element-wise less than or equal.")
BINARY(greater, "Element-wise greater than.")
BINARY(greater_equal, "Element-wise greater than or equal.")
BINARY(logical_and, "Element-wise logical and.")
BINARY(logical_or, "Element-wise logical or.")
BINARY(logical_xor, "Element-wise logical exclusive or.")
BINARY(bitwise_and, "Element-wise bitwise and.")
BINARY(bitwise_or, "Element-wise bitwise or.")
BINARY(bitwise_xor, "Element-wise bitwise xor.")
BINARY(left_shift, "Element-wise left shift.")
BINARY(right_shift, "Element-wise right shift.")
ALIAS(pow, power)
ALIAS(bitwise_left_shift, left_shift)
ALIAS(bitwise_right_shift, right_shift)
ALIAS(atan2, arctan2)

REDUCE(sum, "Sum reduce the array over the given axes.")
REDUCE(prod, "A product reduction over the given axes.")
REDUCE(min, "A min reduction over the given axes.")
REDUCE(max, "A max reduction over the given axes.")
REDUCE(mean, "Compute the mean(s) over the given axes.")
REDUCE(all, "An and reduction over the given axes.")
REDUCE(any, "An or reduction over the given axes.")
REDUCE(logsumexp,
       "A log-sum-exp reduction over the given axes: log(sum(exp(a), "
       "axis)), computed stably.")
FN(var,
   "(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = "
   "False, ddof: int = 0, " STREAM_KW,
   moment, "Compute the variance(s) over the given axes (divisor N - ddof).")
FN(std,
   "(a: array, /, axis: None | int | Sequence[int] = None, keepdims: bool = "
   "False, ddof: int = 0, " STREAM_KW,
   moment, "Compute the standard deviation(s) over the given axes.")
FN(argmin,
   "(a: array, /, axis: None | int = None, keepdims: bool = False, " STREAM_KW,
   argreduce,
   "Indices of the minimum values along the axis (of the flattened array "
   "when axis is None); uint32.")
FN(argmax,
   "(a: array, /, axis: None | int = None, keepdims: bool = False, " STREAM_KW,
   argreduce,
   "Indices of the maximum values along the axis (of the flattened array "
   "when axis is None); uint32.")

/* ---------------- ops with their own bodies ---------------- */
CMXPY_DEF(round, "(a: array, /, decimals: int = 0, " STREAM_KW,
          "Round to the given number of decimals (half to even)." DOC_TAIL) {
  return RET(cmx_round(OUT, ARR(0), INT(1), STREAM));
}

CMXPY_DEF(astype, "(a: array, dtype: Dtype, /, " STREAM_KW,
          "Cast an array to a given dtype." DOC_TAIL) {
  return RET(cmx_astype(OUT, ARR(0), DTYPE(1), STREAM));
}

CMXPY_DEF(softmax,
          "(a: array, /, axis: None | int | Sequence[int] = None, *, precise: "
          "bool = False, stream: StreamOrDevice = None) -> array",
          "Perform the softmax along the given axis: exp(a) / sum(exp(a), "
          "axis), computed stably." DOC_TAIL) {
  return RET(cmx_softmax(OUT, ARR(0), AXES(1), FLAG(2), STREAM));
}

CMXPY_DEF(where,
          "(condition: scalar | array, x: scalar | array, y: scalar | array, "
          "/, " STREAM_KW,
          "Select from x or y according to condition (all broadcast "
          "together)." DOC_TAIL) {
  if (cmxpy_operand(A, 0, CMX_DTYPE_AUTO) < 0 || cmxpy_operands(A, 1, 2) < 0)
    return NULL;
  return RET(cmx_where(OUT, ARR(0), ARR(1), ARR(2), STREAM));
}

CMXPY_DEF(clip,
          "(a: array, /, a_min: scalar | array | None, a_max: scalar | array "
          "| None, " STREAM_KW,
          "Clip the values of the array between the given minimum and "
          "maximum (either may be None, not both)." DOC_TAIL) {
  if (ISNONE(1) && ISNONE(2)) {
    PyErr_SetString(PyExc_ValueError,
                    "[clip] One of min or max must be provided.");
    return NULL;
  }
  cmx_dtype t = cmx_array_dtype(ARR(0));
  if (cmxpy_operand(A, 1, t) < 0 || cmxpy_operand(A, 2, t) < 0) return NULL;
  return RET(cmx_clip(OUT, ARR(0), ARR(1), ARR(2), STREAM));
}

/* divmod(a, b) = (floor_divide(a, b), remainder(a, b)). */
CMXPY_DEF(divmod, SIG_BINARY,
          "Element-wise quotient and remainder: (floor_divide(a, b), "
          "remainder(a, b))." DOC_TAIL) {
  cmx_array qr[2] = {NULL, NULL};
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  /* a list, as MLX returns */
  return cmxpy_list(cmx_divmod(qr, ARR(0), ARR(1), STREAM), qr, 2);
}

/* ---------------- methods ---------------- */
METHOD(abs)
METHOD(square)
METHOD(sqrt)
METHOD(rsqrt)
METHOD(reciprocal)
METHOD(exp)
METHOD(log)
METHOD(log2)
METHOD(log10)
METHOD(log1p)
METHOD(sin)
METHOD(cos)
METHOD(conj)
METHOD(round)
METHOD(sum)
METHOD(prod)
METHOD(min)
METHOD(max)
METHOD(mean)
METHOD(all)
METHOD(any)
METHOD(logsumexp)
METHOD(var)
METHOD(std)
METHOD(argmin)
METHOD(argmax)

#define P(name) &spec_##name,
static cmxpy_spec* const functions[] = {
    P(abs) P(sign) P(negative) P(positive) P(square) P(sqrt) P(rsqrt) P(
        reciprocal) P(exp) P(expm1) P(log) P(log2) P(log10) P(log1p) P(erf)
        P(erfinv) P(sin) P(cos) P(tan) P(arcsin) P(arccos) P(arctan) P(sinh) P(
            cosh) P(tanh) P(arcsinh) P(arccosh) P(arctanh) P(degrees) P(radians)
            P(sigmoid) P(floor) P(ceil) P(trunc) P(isnan) P(isinf) P(
                isfinite) P(isposinf) P(isneginf) P(logical_not) P(conjugate)
                P(real) P(imag) P(bitwise_invert) P(
                    stop_gradient) P(asin) P(acos) P(atan) P(asinh)
                    P(acosh) P(atanh) P(conj) P(add) P(subtract) P(multiply) P(
                        divide) P(floor_divide) P(remainder) P(power) P(maximum)
                        P(minimum) P(arctan2) P(logaddexp) P(equal)
                            P(not_equal) P(less) P(less_equal) P(greater) P(
                                greater_equal) P(logical_and) P(logical_or)
                                P(logical_xor) P(bitwise_and) P(bitwise_or) P(
                                    bitwise_xor) P(left_shift) P(right_shift)
                                    P(bitwise_left_shift) P(bitwise_right_shift)
                                        P(pow) P(atan2)
                                            P(sum) P(prod) P(min) P(max) P(mean)
                                                P(all) P(any) P(logsumexp)
                                                    P(var) P(std) P(argmin)
                                                        P(argmax) P(round)
                                                            P(astype) P(softmax)
                                                                P(where) P(clip)
                                                                    P(divmod)};

static cmxpy_spec* const methods[] = {
    P(m_abs) P(m_square) P(m_sqrt) P(m_rsqrt) P(m_reciprocal) P(m_exp) P(m_log)
        P(m_log2) P(m_log10) P(m_log1p) P(m_sin) P(m_cos) P(m_conj) P(m_round)
            P(m_sum) P(m_prod) P(m_min) P(m_max) P(m_mean) P(m_all) P(m_any)
                P(m_logsumexp) P(m_var) P(m_std) P(m_argmin) P(m_argmax)};

int cmxpy_init_ops(PyObject* m, cmxpy_deflist* array_methods) {
  return CMXPY_ADD_AREA(m, functions, array_methods, methods);
}
