/* Op functions of cmx.core, table-driven: the uniform families of ops.h
 * (unary, binary, reductions) are bound from its X-macro lists, each as a
 * module function and, where MLX has one, an array method served by the
 * same C function (cmxpy_method_args prepends self). Ops with their own
 * signatures are in ops_shape.c. Every entry names the C op it needs and is
 * registered only when libcmx has it. */
#include "cmxpy.h"

typedef cmx_status (*unary_fn)(cmx_array*, cmx_array, cmx_stream);
typedef cmx_status (*binary_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
typedef cmx_status (*reduce_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                cmx_stream);

/* ---------------- generic callers ---------------- */
/* fmt is "O|$O:<name>" (a literal, built by the wrapper macros). */
static PyObject* call_unary(PyObject* self, PyObject* args, PyObject* kw,
                            unary_fn f, const char* name, const char* fmt) {
  static char* kwlist[] = {"", "stream", NULL};
  bool method = self && CmxArray_Check(self);
  if ((!kw || !PyDict_GET_SIZE(kw)) && PyTuple_GET_SIZE(args) == !method) {
    /* Fast path of f(a) / a.f(): no argument parsing. */
    cmx_array a =
        cmxpy_to_array(method ? self : PyTuple_GET_ITEM(args, 0), name);
    cmx_array out = NULL;
    PyObject* r = a ? cmxpy_result(f(&out, a, CMX_STREAM_DEFAULT), &out) : NULL;
    cmx_array_release(a);
    return r;
  }
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *so = Py_None;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &so);
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (ok && cmxpy_stream_arg(so, &s) == 0 && (a = cmxpy_to_array(ao, name)))
    r = cmxpy_result(f(&out, a, s), &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}

static PyObject* call_binary(PyObject* self, PyObject* args, PyObject* kw,
                             binary_fn f, const char* name, const char* fmt) {
  static char* kwlist[] = {"a", "b", "stream", NULL};
  (void)self;
  PyObject *ao, *bo, *so = Py_None;
  if ((!kw || !PyDict_GET_SIZE(kw)) && PyTuple_GET_SIZE(args) == 2) {
    ao = PyTuple_GET_ITEM(args, 0); /* fast path: f(a, b) */
    bo = PyTuple_GET_ITEM(args, 1);
  } else if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &bo,
                                          &so)) {
    return NULL;
  }
  cmx_stream s;
  cmx_array a, b, out = NULL;
  if (cmxpy_stream_arg(so, &s) < 0 ||
      cmxpy_to_operands(ao, bo, &a, &b, name) < 0)
    return NULL;
  PyObject* r = cmxpy_result(f(&out, a, b, s), &out);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}

static PyObject* call_reduce(PyObject* self, PyObject* args, PyObject* kw,
                             reduce_fn f, const char* name, const char* fmt) {
  static char* kwlist[] = {"", "axis", "keepdims", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int keepdims = 0;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &axo,
                                       &keepdims, &so);
  cmxpy_axes ax;
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (ok && cmxpy_axes_arg(axo, &ax, name) == 0 &&
      cmxpy_stream_arg(so, &s) == 0 && (a = cmxpy_to_array(ao, name)))
    r = cmxpy_result(f(&out, a, ax.all ? NULL : ax.v, ax.n, keepdims, s), &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}

/* ---------------- per-op wrappers ---------------- */
#define UNARY_WRAP(name)                                                    \
  static PyObject* f_##name(PyObject* self, PyObject* args, PyObject* kw) { \
    return call_unary(self, args, kw, cmx_##name, #name, "O|$O:" #name);    \
  }
CMX__UNARY_OPS(UNARY_WRAP)

#define BINARY_WRAP(name)                                                   \
  static PyObject* f_##name(PyObject* self, PyObject* args, PyObject* kw) { \
    return call_binary(self, args, kw, cmx_##name, #name, "OO|$O:" #name);  \
  }
CMX__BINARY_OPS(BINARY_WRAP)

#define REDUCE_WRAP(name)                                                   \
  static PyObject* f_##name(PyObject* self, PyObject* args, PyObject* kw) { \
    return call_reduce(self, args, kw, cmx_##name, #name, "O|Op$O:" #name); \
  }
CMX__REDUCE_OPS(REDUCE_WRAP)

/* ---------------- ops with extra arguments ---------------- */
static PyObject* f_round(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "decimals", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *so = Py_None;
  int decimals = 0;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, "O|i$O:round", kwlist, &ao,
                                       &decimals, &so);
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (ok && cmxpy_stream_arg(so, &s) == 0 && (a = cmxpy_to_array(ao, "round")))
    r = cmxpy_result(cmx_round(&out, a, decimals, s), &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}

static PyObject* f_astype(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "dtype", "stream", NULL};
  PyObject *ao, *dto, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:astype", kwlist, &ao, &dto,
                                   &so))
    return NULL;
  cmx_dtype t;
  cmx_stream s;
  if (cmxpy_dtype_arg(dto, &t, false, "astype") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "astype"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(cmx_astype(&out, a, t, s), &out);
  cmx_array_release(a);
  return r;
}

/* var / std share a signature with ddof. */
typedef cmx_status (*moment_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                int, cmx_stream);
static PyObject* call_moment(PyObject* self, PyObject* args, PyObject* kw,
                             moment_fn f, const char* name) {
  static char* kwlist[] = {"", "axis", "keepdims", "ddof", "stream", NULL};
  char fmt[64];
  PyOS_snprintf(fmt, sizeof fmt, "O|Opi$O:%s", name);
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int keepdims = 0, ddof = 0;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &axo,
                                       &keepdims, &ddof, &so);
  cmxpy_axes ax;
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (ok && cmxpy_axes_arg(axo, &ax, name) == 0 &&
      cmxpy_stream_arg(so, &s) == 0 && (a = cmxpy_to_array(ao, name)))
    r = cmxpy_result(f(&out, a, ax.all ? NULL : ax.v, ax.n, keepdims, ddof, s),
                     &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}
static PyObject* f_var(PyObject* self, PyObject* args, PyObject* kw) {
  return call_moment(self, args, kw, cmx_var, "var");
}
static PyObject* f_std(PyObject* self, PyObject* args, PyObject* kw) {
  return call_moment(self, args, kw, cmx_std, "std");
}

typedef cmx_status (*arg_fn)(cmx_array*, cmx_array, const int*, bool,
                             cmx_stream);
static PyObject* call_argreduce(PyObject* self, PyObject* args, PyObject* kw,
                                arg_fn f, const char* name) {
  static char* kwlist[] = {"", "axis", "keepdims", "stream", NULL};
  char fmt[64];
  PyOS_snprintf(fmt, sizeof fmt, "O|Op$O:%s", name);
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int keepdims = 0, axis = 0;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &axo,
                                       &keepdims, &so);
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (ok && (axo == Py_None || cmxpy_int_arg(axo, &axis, name, "axis") == 0) &&
      cmxpy_stream_arg(so, &s) == 0 && (a = cmxpy_to_array(ao, name)))
    r = cmxpy_result(f(&out, a, axo == Py_None ? NULL : &axis, keepdims, s),
                     &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}
static PyObject* f_argmin(PyObject* self, PyObject* args, PyObject* kw) {
  return call_argreduce(self, args, kw, cmx_argmin, "argmin");
}
static PyObject* f_argmax(PyObject* self, PyObject* args, PyObject* kw) {
  return call_argreduce(self, args, kw, cmx_argmax, "argmax");
}

static PyObject* f_softmax(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "axis", "precise", "stream", NULL};
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int precise = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$pO:softmax", kwlist, &ao,
                                   &axo, &precise, &so))
    return NULL;
  cmxpy_axes ax;
  cmx_stream s;
  if (cmxpy_axes_arg(axo, &ax, "softmax") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "softmax"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(
      cmx_softmax(&out, a, ax.all ? NULL : ax.v, ax.n, precise, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_where(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"condition", "x", "y", "stream", NULL};
  PyObject *co, *xo, *yo, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$O:where", kwlist, &co, &xo,
                                   &yo, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_array c = cmxpy_to_array(co, "where"), x = NULL, y = NULL, out = NULL;
  if (!c || cmxpy_to_operands(xo, yo, &x, &y, "where") < 0) {
    cmx_array_release(c);
    return NULL;
  }
  PyObject* r = cmxpy_result(cmx_where(&out, c, x, y, s), &out);
  cmx_array_release(c);
  cmx_array_release(x);
  cmx_array_release(y);
  return r;
}

static PyObject* f_clip(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "a_min", "a_max", "stream", NULL};
  PyObject *ao, *lo, *hi, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$O:clip", kwlist, &ao, &lo,
                                   &hi, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  if (lo == Py_None && hi == Py_None) {
    PyErr_SetString(PyExc_ValueError,
                    "[clip] One of min or max must be provided.");
    return NULL;
  }
  cmx_array a = cmxpy_to_array(ao, "clip"), l = NULL, h = NULL, out = NULL;
  PyObject* r = NULL;
  if (!a) return NULL;
  cmx_dtype t = cmx_array_dtype(a);
  if ((lo == Py_None || (l = cmxpy_to_operand(lo, t, "clip"))) &&
      (hi == Py_None || (h = cmxpy_to_operand(hi, t, "clip"))))
    r = cmxpy_result(cmx_clip(&out, a, l, h, s), &out);
  cmx_array_release(a);
  cmx_array_release(l);
  cmx_array_release(h);
  return r;
}

/* divmod(a, b) = (floor_divide(a, b), remainder(a, b)). */
static PyObject* f_divmod(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"a", "b", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:divmod", kwlist, &ao, &bo,
                                   &so))
    return NULL;
  cmx_stream s;
  cmx_array a, b, qr[2] = {NULL, NULL};
  if (cmxpy_stream_arg(so, &s) < 0 ||
      cmxpy_to_operands(ao, bo, &a, &b, "divmod") < 0)
    return NULL;
  cmx_status st = cmx_divmod(qr, a, b, s);
  cmx_array_release(a);
  cmx_array_release(b);
  if (st != CMX_OK) {
    cmx_array_release_all(qr, 2);
    return cmxpy_raise(st);
  }
  return Py_BuildValue("(NN)", cmxpy_wrap(qr[0]), cmxpy_wrap(qr[1]));
}

/* ---------------- tables and docs ---------------- */
typedef struct {
  const char* name; /* Python name */
  PyCFunction fn;
  const void* needs;   /* C op (weak) */
  const char* sig;     /* text signature after the name */
  const char* summary; /* first docstring paragraph */
  bool method;         /* also an array method */
} op_entry;

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define SIG_UNARY "(a, /, *, stream=None)"
#define SIG_BINARY "(a, b, /, *, stream=None)"
#define SIG_REDUCE "(a, /, axis=None, keepdims=False, *, stream=None)"
#define U(n, sum, m) \
  { #n, FN(f_##n), (const void*)cmx_##n, SIG_UNARY, sum, m }
#define UA(alias, n, sum) \
  { #alias, FN(f_##n), (const void*)cmx_##n, SIG_UNARY, sum, false }
#define B(n, sum) \
  { #n, FN(f_##n), (const void*)cmx_##n, SIG_BINARY, sum, false }
#define BA(alias, n, sum) \
  { #alias, FN(f_##n), (const void*)cmx_##n, SIG_BINARY, sum, false }
#define R(n, sum) \
  { #n, FN(f_##n), (const void*)cmx_##n, SIG_REDUCE, sum, true }

static const op_entry ops_table[] = {
    /* unary */
    U(abs, "Element-wise absolute value.", true),
    U(sign, "Element-wise sign.", false),
    U(negative, "Element-wise negation.", false),
    U(positive, "Element-wise positive (a copy of the values).", false),
    U(square, "Element-wise square.", true),
    U(sqrt, "Element-wise square root.", true),
    U(rsqrt, "Element-wise reciprocal and square root.", true),
    U(reciprocal, "Element-wise reciprocal.", true),
    U(exp, "Element-wise exponential.", true),
    U(expm1, "Element-wise exponential minus 1 (accurate for small values).",
      false),
    U(log, "Element-wise natural logarithm.", true),
    U(log2, "Element-wise base-2 logarithm.", true),
    U(log10, "Element-wise base-10 logarithm.", true),
    U(log1p, "Element-wise natural log of one plus the array.", true),
    U(erf, "Element-wise error function.", false),
    U(erfinv, "Element-wise inverse of the error function.", false),
    U(sin, "Element-wise sine.", true),
    U(cos, "Element-wise cosine.", true),
    U(tan, "Element-wise tangent.", false),
    U(arcsin, "Element-wise inverse sine.", false),
    U(arccos, "Element-wise inverse cosine.", false),
    U(arctan, "Element-wise inverse tangent.", false),
    U(sinh, "Element-wise hyperbolic sine.", false),
    U(cosh, "Element-wise hyperbolic cosine.", false),
    U(tanh, "Element-wise hyperbolic tangent.", false),
    U(arcsinh, "Element-wise inverse hyperbolic sine.", false),
    U(arccosh, "Element-wise inverse hyperbolic cosine.", false),
    U(arctanh, "Element-wise inverse hyperbolic tangent.", false),
    UA(asin, arcsin, "Alias of :func:`arcsin`."),
    UA(acos, arccos, "Alias of :func:`arccos`."),
    UA(atan, arctan, "Alias of :func:`arctan`."),
    UA(asinh, arcsinh, "Alias of :func:`arcsinh`."),
    UA(acosh, arccosh, "Alias of :func:`arccosh`."),
    UA(atanh, arctanh, "Alias of :func:`arctanh`."),
    U(degrees, "Convert angles from radians to degrees.", false),
    U(radians, "Convert angles from degrees to radians.", false),
    U(sigmoid, "Element-wise logistic sigmoid 1 / (1 + exp(-a)).", false),
    U(floor, "Element-wise floor.", false),
    U(ceil, "Element-wise ceil.", false),
    U(trunc, "Element-wise truncation toward zero.", false),
    U(isnan, "Return a boolean array indicating which elements are NaN.",
      false),
    U(isinf,
      "Return a boolean array indicating which elements are +/- "
      "infinity.",
      false),
    U(isfinite,
      "Return a boolean array indicating which elements are "
      "finite.",
      false),
    U(isposinf,
      "Return a boolean array indicating which elements are "
      "positive infinity.",
      false),
    U(isneginf,
      "Return a boolean array indicating which elements are "
      "negative infinity.",
      false),
    U(logical_not, "Element-wise logical not.", false),
    U(conjugate, "Return the elementwise complex conjugate of the input.",
      false),
    {"conj", FN(f_conjugate), (const void*)cmx_conjugate, SIG_UNARY,
     "Return the elementwise complex conjugate of the input. Alias for "
     "`mx.conjugate`.",
     true},
    U(real, "Returns the real part of a complex array.", false),
    U(imag, "Returns the imaginary part of a complex array.", false),
    U(bitwise_invert, "Element-wise bitwise inverse.", false),
    U(stop_gradient,
      "Stop gradients from being computed: the identity in "
      "the forward pass.",
      false),
    {"round", FN(f_round), (const void*)cmx_round,
     "(a, /, decimals=0, *, stream=None)",
     "Round to the given number of decimals (half to even).", true},
    {"astype", FN(f_astype), (const void*)cmx_astype,
     "(a, /, dtype, *, stream=None)", "Cast an array to a given dtype.", false},
    /* binary */
    B(add, "Element-wise addition with numpy-style broadcasting."),
    B(subtract, "Element-wise subtraction with numpy-style broadcasting."),
    B(multiply, "Element-wise multiplication with numpy-style broadcasting."),
    B(divide, "Element-wise division with numpy-style broadcasting."),
    B(floor_divide,
      "Element-wise integer division (rounds toward negative "
      "infinity)."),
    B(remainder,
      "Element-wise remainder of division (the sign of the "
      "divisor, as NumPy)."),
    B(power, "Element-wise power operation a ** b."),
    BA(pow, power, "Alias of :func:`power`."),
    B(maximum, "Element-wise maximum."),
    B(minimum, "Element-wise minimum."),
    B(arctan2, "Element-wise inverse tangent of the ratio a / b."),
    BA(atan2, arctan2, "Alias of :func:`arctan2`."),
    B(logaddexp,
      "Element-wise log-add-exp: log(exp(a) + exp(b)), "
      "computed stably."),
    B(equal, "Element-wise equality."),
    B(not_equal, "Element-wise not equal."),
    B(less, "Element-wise less than."),
    B(less_equal, "Element-wise less than or equal."),
    B(greater, "Element-wise greater than."),
    B(greater_equal, "Element-wise greater than or equal."),
    B(logical_and, "Element-wise logical and."),
    B(logical_or, "Element-wise logical or."),
    B(logical_xor, "Element-wise logical exclusive or."),
    B(bitwise_and, "Element-wise bitwise and."),
    B(bitwise_or, "Element-wise bitwise or."),
    B(bitwise_xor, "Element-wise bitwise xor."),
    B(left_shift, "Element-wise left shift."),
    B(right_shift, "Element-wise right shift."),
    {"divmod", FN(f_divmod), (const void*)cmx_divmod, SIG_BINARY,
     "Element-wise quotient and remainder: (floor_divide(a, b), "
     "remainder(a, b)).",
     false},
    {"where", FN(f_where), (const void*)cmx_where,
     "(condition, x, y, /, *, stream=None)",
     "Select from x or y according to condition (all broadcast together).",
     false},
    {"clip", FN(f_clip), (const void*)cmx_clip,
     "(a, /, a_min, a_max, *, stream=None)",
     "Clip the values of the array between the given minimum and maximum "
     "(either may be None, not both).",
     false},
    /* reductions */
    R(sum, "Sum reduce the array over the given axes."),
    R(prod, "A product reduction over the given axes."),
    R(min, "A min reduction over the given axes."),
    R(max, "A max reduction over the given axes."),
    R(mean, "Compute the mean(s) over the given axes."),
    R(all, "An and reduction over the given axes."),
    R(any, "An or reduction over the given axes."),
    R(logsumexp,
      "A log-sum-exp reduction over the given axes: "
      "log(sum(exp(a), axis)), computed stably."),
    {"var", FN(f_var), (const void*)cmx_var,
     "(a, /, axis=None, keepdims=False, ddof=0, *, stream=None)",
     "Compute the variance(s) over the given axes (divisor N - ddof).", true},
    {"std", FN(f_std), (const void*)cmx_std,
     "(a, /, axis=None, keepdims=False, ddof=0, *, stream=None)",
     "Compute the standard deviation(s) over the given axes.", true},
    {"argmin", FN(f_argmin), (const void*)cmx_argmin,
     "(a, /, axis=None, keepdims=False, *, stream=None)",
     "Indices of the minimum values along the axis (of the flattened array "
     "when axis is None); uint32.",
     true},
    {"argmax", FN(f_argmax), (const void*)cmx_argmax,
     "(a, /, axis=None, keepdims=False, *, stream=None)",
     "Indices of the maximum values along the axis (of the flattened array "
     "when axis is None); uint32.",
     true},
    {"softmax", FN(f_softmax), (const void*)cmx_softmax,
     "(a, /, axis=None, *, precise=False, stream=None)",
     "Perform the softmax along the given axis: exp(a) / sum(exp(a), "
     "axis), computed stably.",
     false},
    {NULL, NULL, NULL, NULL, NULL, false}};

/* Builds "name(sig)\n--\n\nsummary\n\n...": a docstring with a text
 * signature, so that inspect.signature works. */
static char* make_doc(const char* name, const char* sig, const char* summary,
                      bool method) {
  char sigbuf[256];
  if (method) {
    /* "(a, /, rest)" -> "($self, /, rest)"; "(a, b, ...)" is not a method. */
    const char* rest = strchr(sig, ',');
    PyOS_snprintf(sigbuf, sizeof sigbuf, "($self%s", rest ? rest : ")");
  } else {
    PyOS_snprintf(sigbuf, sizeof sigbuf, "%s", sig);
  }
  const char* tail =
      method ? "See :func:`%s`."
             : "Args:\n    Arrays may be arrays, Python scalars (weakly "
               "typed) or array-likes.\n    stream (Stream | Device | None): "
               "where the op runs (default: the default stream).\n\n"
               "Returns:\n    array: The result.";
  size_t n = strlen(name) + strlen(sigbuf) + strlen(summary) + strlen(tail) +
             strlen(name) + 32;
  char* d = PyMem_RawMalloc(n);
  if (!d) return NULL;
  int k = PyOS_snprintf(d, n, "%s%s\n--\n\n%s%s", name, sigbuf, summary,
                        *summary ? "\n\n" : "");
  PyOS_snprintf(d + k, n - (size_t)k, tail, name);
  return d;
}

static cmxpy_def* g_methods; /* array methods, built by cmxpy_init_ops */

int cmxpy_ops_array_methods(cmxpy_deflist* l) {
  if (!g_methods) return 0;
  return cmxpy_defs_add(l, g_methods);
}

/* Registers module functions and prepares the array methods (called before
 * the array type is made ready). */
int cmxpy_init_ops(PyObject* m) {
  size_t n = 0;
  for (const op_entry* e = ops_table; e->name; e++) n++;
  static cmxpy_def* funcs; /* process lifetime, like the tables */
  funcs = PyMem_RawCalloc(n + 1, sizeof *funcs);
  g_methods = PyMem_RawCalloc(n + 1, sizeof *g_methods);
  if (!funcs || !g_methods) {
    PyErr_NoMemory();
    return -1;
  }
  size_t nm = 0;
  for (size_t i = 0; i < n; i++) {
    const op_entry* e = &ops_table[i];
    char* doc = make_doc(e->name, e->sig, e->summary, false);
    if (!doc) return PyErr_NoMemory(), -1;
    funcs[i] = (cmxpy_def){{e->name, e->fn, METH_VARARGS | METH_KEYWORDS, doc},
                           e->needs};
    if (e->method) {
      char* mdoc = make_doc(e->name, e->sig, "", true);
      if (!mdoc) return PyErr_NoMemory(), -1;
      g_methods[nm++] = (cmxpy_def){
          {e->name, e->fn, METH_VARARGS | METH_KEYWORDS, mdoc}, e->needs};
    }
  }
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, funcs) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
