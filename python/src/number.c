/* Operators of `array`: arithmetic, bitwise, comparison, their reflected
 * and in-place forms, unary operators and scalar conversions, with MLX's
 * rules: Python scalars are weakly typed, other array-likes take the
 * array's dtype, bitwise operators refuse floating types, and in-place forms
 * update the array object itself (visible through every reference). */
#include "args.h"

typedef cmx_status (*binary_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);

/* Operator descriptions for messages ("Cannot perform addition on ..."). */
typedef struct {
  binary_fn fn;
  const char* what;
  bool bitwise; /* floating types not allowed */
} op_desc;

static PyObject* invalid_operation(const char* what, PyObject* other) {
  PyErr_Format(PyExc_ValueError,
               "Cannot perform %s on an cmx.core.array and %.100s", what,
               Py_TYPE(other)->tp_name);
  return NULL;
}

/* The result array of `x op y` where x or y is an array; NULL with an
 * exception on failure. */
static cmx_array binary(PyObject* x, PyObject* y, const op_desc* d,
                        bool inplace) {
  bool reflected = !CmxArray_Check(x);
  PyObject* self = reflected ? y : x;
  PyObject* other = reflected ? x : y;
  if (other == Py_None) { /* MLX: no overload takes None */
    PyErr_Format(PyExc_TypeError,
                 "Cannot perform %s on an cmx.core.array and NoneType",
                 d->what);
    return NULL;
  }
  /* MLX: operators take no lists or tuples (functions such as add do,
   * as cmx's array-likes). */
  if (!cmxpy_is_operand(other) || PyList_Check(other) || PyTuple_Check(other)) {
    if (inplace) {
      char buf[64];
      snprintf(buf, sizeof buf, "inplace %s", d->what);
      invalid_operation(buf, other);
    } else {
      invalid_operation(d->what, other);
    }
    return NULL;
  }
  cmx_array a = CMXPY_ARR(self);
  cmx_array b = cmxpy_to_operand(other, cmx_array_dtype(a), d->what);
  if (!b) return NULL;
  if (d->bitwise && (cmx_dtype_is_inexact(cmx_array_dtype(a)) ||
                     cmx_dtype_is_inexact(cmx_array_dtype(b)))) {
    cmx_array_release(b);
    PyErr_Format(PyExc_ValueError, "Floating point types not allowed with %s.",
                 d->what);
    return NULL;
  }
  cmx_array out = NULL;
  cmx_status st = reflected ? d->fn(&out, b, a, CMX_STREAM_DEFAULT)
                            : d->fn(&out, a, b, CMX_STREAM_DEFAULT);
  cmx_array_release(b);
  if (st != CMX_OK) {
    cmx_array_release(out);
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

static PyObject* inplace(PyObject* self, PyObject* other, const op_desc* d) {
  if (!CmxArray_Check(self)) Py_RETURN_NOTIMPLEMENTED;
  cmx_array out = binary(self, other, d, true);
  if (!out) return NULL;
  cmxpy_array_replace(self, out);
  Py_INCREF(self);
  return self;
}

#define BINOP(name, cfn, what, bitwise)                   \
  static const op_desc d_##name = {cfn, what, bitwise};   \
  static PyObject* nb_##name(PyObject* x, PyObject* y) {  \
    return cmxpy_wrap(binary(x, y, &d_##name, false));    \
  }                                                       \
  static PyObject* nb_i##name(PyObject* x, PyObject* y) { \
    return inplace(x, y, &d_##name);                      \
  }

BINOP(add, cmx_add, "addition", false)
BINOP(sub, cmx_subtract, "subtraction", false)
BINOP(mul, cmx_multiply, "multiplication", false)
BINOP(floordiv, cmx_floor_divide, "floor division", false)
BINOP(mod, cmx_remainder, "modulus", false)
BINOP(and, cmx_bitwise_and, "bitwise and", true)
BINOP(or, cmx_bitwise_or, "bitwise or", true)
BINOP(xor, cmx_bitwise_xor, "bitwise xor", true)
BINOP(lshift, cmx_left_shift, "left shift", true)
BINOP(rshift, cmx_right_shift, "right shift", true)
BINOP(matmul, cmx_matmul, "matrix multiplication", false)

static const op_desc d_div = {cmx_divide, "division", false};
static PyObject* nb_div(PyObject* x, PyObject* y) {
  return cmxpy_wrap(binary(x, y, &d_div, false));
}
static PyObject* nb_idiv(PyObject* x, PyObject* y) {
  if (CmxArray_Check(x) &&
      !cmx_dtype_is_inexact(cmx_array_dtype(CMXPY_ARR(x)))) {
    PyErr_SetString(
        PyExc_ValueError,
        "In place division cannot cast to non-floating point type.");
    return NULL;
  }
  return inplace(x, y, &d_div);
}

static const op_desc d_pow = {cmx_power, "power", false};
static PyObject* nb_pow(PyObject* x, PyObject* y, PyObject* z) {
  if (z != Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "pow() with a modulus is not supported for arrays");
    return NULL;
  }
  return cmxpy_wrap(binary(x, y, &d_pow, false));
}
static PyObject* nb_ipow(PyObject* x, PyObject* y, PyObject* z) {
  if (z != Py_None) {
    PyErr_SetString(PyExc_TypeError,
                    "pow() with a modulus is not supported for arrays");
    return NULL;
  }
  return inplace(x, y, &d_pow);
}

static PyObject* nb_divmod(PyObject* x, PyObject* y) {
  cmx_array q = binary(x, y, &d_floordiv, false);
  if (!q) return NULL;
  cmx_array r = binary(x, y, &d_mod, false);
  if (!r) {
    cmx_array_release(q);
    return NULL;
  }
  return Py_BuildValue("(NN)", cmxpy_wrap(q), cmxpy_wrap(r));
}

/* ---------------- unary ---------------- */
typedef cmx_status (*unary_fn)(cmx_array*, cmx_array, cmx_stream);

static PyObject* unary(PyObject* self, unary_fn f) {
  cmx_array out = NULL;
  return cmxpy_result(f(&out, CMXPY_ARR(self), CMX_STREAM_DEFAULT), &out);
}

static PyObject* nb_neg(PyObject* s) {
  return unary(s, cmx_negative);
}
static PyObject* nb_pos(PyObject* s) {
  return unary(s, cmx_positive);
}
static PyObject* nb_abs(PyObject* s) {
  return unary(s, cmx_abs);
}

static PyObject* nb_invert(PyObject* s) {
  cmx_dtype t = cmx_array_dtype(CMXPY_ARR(s));
  if (cmx_dtype_is_inexact(t)) {
    PyErr_SetString(PyExc_ValueError,
                    "Floating point types not allowed with bitwise inversion.");
    return NULL;
  }
  if (t == CMX_BOOL) return unary(s, cmx_logical_not);
  return unary(s, cmx_bitwise_invert);
}

static int nb_bool(PyObject* s) {
  PyObject* v = cmxpy_item(CMXPY_ARR(s));
  if (!v) return -1;
  int r = PyObject_IsTrue(v);
  Py_DECREF(v);
  return r;
}

static PyObject* nb_int(PyObject* s) {
  PyObject* v = cmxpy_item(CMXPY_ARR(s));
  if (!v) return NULL;
  PyObject* r = PyNumber_Long(v);
  Py_DECREF(v);
  return r;
}

static PyObject* nb_float(PyObject* s) {
  PyObject* v = cmxpy_item(CMXPY_ARR(s));
  if (!v) return NULL;
  PyObject* r = PyNumber_Float(v);
  Py_DECREF(v);
  return r;
}

/* ---------------- comparisons ---------------- */
static const op_desc d_cmp[6] = {
    [Py_LT] = {cmx_less, "less than", false},
    [Py_LE] = {cmx_less_equal, "less than or equal", false},
    [Py_EQ] = {cmx_equal, "equality", false},
    [Py_NE] = {cmx_not_equal, "inequality", false},
    [Py_GT] = {cmx_greater, "greater than", false},
    [Py_GE] = {cmx_greater_equal, "greater than or equal", false},
};

/* As MLX: == and != with a list, a tuple or another object that is not
 * an array (nor a scalar, a buffer or an __mlx_array__) are False and
 * True, not element-wise. */
static PyObject* richcompare(PyObject* self, PyObject* other, int op) {
  if ((op == Py_EQ || op == Py_NE) && other != Py_None &&
      (PyList_Check(other) || PyTuple_Check(other) || !cmxpy_is_operand(other)))
    return PyBool_FromLong(op == Py_NE);
  return cmxpy_wrap(binary(self, other, &d_cmp[op], false));
}

CMXPY_DEF_METHOD(__round__, "(self, ndigits: int | None = None, /)",
                 "round(self, ndigits): see :func:`round`.") {
  return RET(
      cmx_round(OUT, ARR(0), ISNONE(1) ? 0 : INT(1), CMX_STREAM_DEFAULT));
}

static PyNumberMethods number_procs = {
    .nb_add = nb_add,
    .nb_subtract = nb_sub,
    .nb_multiply = nb_mul,
    .nb_remainder = nb_mod,
    .nb_divmod = nb_divmod,
    .nb_power = nb_pow,
    .nb_negative = nb_neg,
    .nb_positive = nb_pos,
    .nb_absolute = nb_abs,
    .nb_bool = nb_bool,
    .nb_invert = nb_invert,
    .nb_lshift = nb_lshift,
    .nb_rshift = nb_rshift,
    .nb_and = nb_and,
    .nb_xor = nb_xor,
    .nb_or = nb_or,
    .nb_int = nb_int,
    .nb_float = nb_float,
    .nb_inplace_add = nb_iadd,
    .nb_inplace_subtract = nb_isub,
    .nb_inplace_multiply = nb_imul,
    .nb_inplace_remainder = nb_imod,
    .nb_inplace_power = nb_ipow,
    .nb_inplace_lshift = nb_ilshift,
    .nb_inplace_rshift = nb_irshift,
    .nb_inplace_and = nb_iand,
    .nb_inplace_xor = nb_ixor,
    .nb_inplace_or = nb_ior,
    .nb_floor_divide = nb_floordiv,
    .nb_true_divide = nb_div,
    .nb_inplace_floor_divide = nb_ifloordiv,
    .nb_inplace_true_divide = nb_idiv,
    .nb_matrix_multiply = nb_matmul,
    .nb_inplace_matrix_multiply = nb_imatmul,
};

int cmxpy_init_number(cmxpy_deflist* array_methods) {
  CmxArray_Type.tp_as_number = &number_procs;
  CmxArray_Type.tp_richcompare = richcompare;
  cmxpy_spec* const methods[] = {&spec_m___round__};
  return cmxpy_add_methods(array_methods, methods, CMXPY_COUNT(methods));
}
