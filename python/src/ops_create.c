/* Creation ops (zeros, ones, full, arange, linspace, eye, tri ...) and
 * matrix products (matmul, addmm), with MLX's argument names and
 * defaults. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

/* ---------------- creation ---------------- */
typedef cmx_status (*shape_fn)(cmx_array*, const int64_t*, int, cmx_dtype,
                               cmx_stream);
static PyObject* from_shape(cmxpy_args* A) {
  return RET(DATA(shape_fn)(OUT, INTS(0), DTYPE(1), STREAM));
}
#define SHAPE_SIG \
  "(shape: int | Sequence[int], dtype: Dtype | None = float32, " STREAM_KW
CMXPY_FN(zeros, SHAPE_SIG, from_shape, cmx_zeros,
         "Construct an array of zeros.\n\nReturns:\n    array: The "
         "array of zeros.")
CMXPY_FN(ones, SHAPE_SIG, from_shape, cmx_ones,
         "Construct an array of ones.\n\nReturns:\n    array: The "
         "array of ones.")
CMXPY_ALIAS(empty, zeros, "An array of the given shape (zero-filled).")

typedef cmx_status (*like_fn)(cmx_array*, cmx_array, cmx_stream);
static PyObject* like(cmxpy_args* A) {
  return RET(DATA(like_fn)(OUT, ARR(0), STREAM));
}
CMXPY_FN(zeros_like, "(a: array, /, " STREAM_KW, like, cmx_zeros_like,
         "An array of zeros like the input.\n\nReturns:\n    array: "
         "The array of zeros.")
CMXPY_FN(ones_like, "(a: array, /, " STREAM_KW, like, cmx_ones_like,
         "An array of ones like the input.\n\nReturns:\n    array: "
         "The array of ones.")
CMXPY_ALIAS(empty_like, zeros_like, "An array like the input (zero-filled).")

CMXPY_DEF(full,
          "(shape: int | Sequence[int], vals: scalar | array, dtype: Dtype | "
          "None = None, " STREAM_KW,
          "Construct an array with the given value (vals broadcast to "
          "shape; dtype defaults to that of vals).\n\nReturns:\n    array: "
          "The output array.") {
  if (!(ARR(1) = cmxpy_array_from_object(OBJ(1), DTYPE(2)))) return NULL;
  return RET(cmx_full(OUT, INTS(0), ARR(1), DTYPE(2), STREAM));
}

CMXPY_DEF(full_like,
          "(a: array, /, fill_value: scalar | array, dtype: Dtype | None = "
          "None, " STREAM_KW,
          "An array of the shape (and dtype unless given) of a, filled with "
          "fill_value.") {
  cmx_dtype t = DTYPE(2);
  if (cmxpy_operand(A, 1, t == CMX_DTYPE_AUTO ? cmx_array_dtype(ARR(0)) : t) <
      0)
    return NULL;
  return RET(cmx_full_like(OUT, ARR(0), ARR(1), t, STREAM));
}

CMXPY_DEF(arange,
          "(start: int | float | None = None, stop: int | float | None = "
          "None, step: int | float | None = None, dtype: Dtype | None = "
          "None, " STREAM_KW,
          "Generates ranges of numbers: arange(stop) or arange(start, stop, "
          "step). int32 when every bound is an int, else float32.\n\n"
          "Returns:\n    array: The range of values.") {
  /* arange(stop) or arange(start, stop[, step]). */
  PyObject *start = OBJ(0), *stop = OBJ(1), *step = OBJ(2);
  if (stop == Py_None) {
    start = Py_None;
    stop = OBJ(0);
  }
  if (stop == Py_None) {
    PyErr_SetString(PyExc_TypeError, "[arange] stop is required");
    return NULL;
  }
  PyObject* vals[3] = {start, stop, step};
  double v[3] = {0, 0, 1};
  bool all_int = true;
  for (int i = 0; i < 3; i++) {
    if (vals[i] == Py_None) continue;
    if (!PyNumber_Check(vals[i]) || PyComplex_Check(vals[i])) {
      PyErr_Format(PyExc_TypeError,
                   "[arange] expected a real number, got %.100s",
                   Py_TYPE(vals[i])->tp_name);
      return NULL;
    }
    v[i] = PyFloat_AsDouble(vals[i]);
    if (v[i] == -1.0 && PyErr_Occurred()) return NULL;
    all_int &= PyLong_Check(vals[i]) && !PyBool_Check(vals[i]);
  }
  cmx_dtype t = DTYPE(3);
  if (t == CMX_DTYPE_AUTO) t = all_int ? CMX_INT32 : CMX_FLOAT32;
  return RET(cmx_arange(OUT, v[0], v[1], v[2], t, STREAM));
}

CMXPY_DEF(linspace,
          "(start: float, stop: float, num: int | None = 50, dtype: Dtype | "
          "None = float32, " STREAM_KW,
          "Generate num evenly spaced numbers over [start, stop].\n\n"
          "Returns:\n    array: The range of values.") {
  return RET(cmx_linspace(OUT, FLT(0), FLT(1), ISNONE(2) ? 50 : I64(2),
                          DTYPE(3), STREAM));
}

typedef cmx_status (*nmk_fn)(cmx_array*, int64_t, int64_t, int64_t, cmx_dtype,
                             cmx_stream);
static PyObject* nmk(cmxpy_args* A) {
  return RET(DATA(nmk_fn)(OUT, I64(0), ISNONE(1) ? -1 : I64(1), I64(2),
                          DTYPE(3), STREAM));
}
#define NMK_SIG                                                       \
  "(n: int, m: int | None = None, k: int = 0, dtype: Dtype | None = " \
  "float32, " STREAM_KW
CMXPY_FN(eye, NMK_SIG, nmk, cmx_eye,
         "Create an identity matrix or a general diagonal matrix "
         "(ones on diagonal k).\n\nReturns:\n    array: An n x m "
         "array.")
CMXPY_FN(tri, NMK_SIG, nmk, cmx_tri,
         "An array with ones at and below the k-th diagonal and zeros "
         "elsewhere.\n\nReturns:\n    array: The array.")

CMXPY_DEF(identity, "(n: int, dtype: Dtype | None = float32, " STREAM_KW,
          "Create a square identity matrix.\n\nReturns:\n    array: An n x "
          "n identity matrix.") {
  return RET(cmx_identity(OUT, I64(0), DTYPE(1), STREAM));
}

typedef cmx_status (*trilu_fn)(cmx_array*, cmx_array, int64_t, cmx_stream);
static PyObject* trilu(cmxpy_args* A) {
  return RET(DATA(trilu_fn)(OUT, ARR(0), I64(1), STREAM));
}
CMXPY_FN(tril, "(x: array, k: int = 0, " STREAM_KW, trilu, cmx_tril,
         "Zeros the elements above the k-th diagonal.\n\nReturns:\n"
         "    array: The lower triangle.")
CMXPY_FN(triu, "(x: array, k: int = 0, " STREAM_KW, trilu, cmx_triu,
         "Zeros the elements below the k-th diagonal.\n\nReturns:\n"
         "    array: The upper triangle.")

/* ---------------- matrix products ---------------- */

CMXPY_DEF(matmul, "(a: array, b: array, /, " STREAM_KW,
          "Matrix multiplication with numpy broadcasting (1-d operands are "
          "promoted and squeezed).\n\nReturns:\n    array: The matrix "
          "product of a and b.") {
  return RET(cmx_matmul(OUT, ARR(0), ARR(1), STREAM));
}

CMXPY_DEF(addmm,
          "(c: array, a: array, b: array, /, alpha: float = 1.0, beta: float "
          "= 1.0, " STREAM_KW,
          "alpha * (a @ b) + beta * c.\n\nReturns:\n    array: The result.") {
  return RET(cmx_addmm(OUT, ARR(0), ARR(1), ARR(2), cmxpy_float(FLT(3)),
                       cmxpy_float(FLT(4)), STREAM));
}

static cmxpy_spec* const functions[] = {
    &spec_zeros,     &spec_ones,       &spec_empty, &spec_zeros_like,
    &spec_ones_like, &spec_empty_like, &spec_full,  &spec_full_like,
    &spec_arange,    &spec_linspace,   &spec_eye,   &spec_identity,
    &spec_tri,       &spec_tril,       &spec_triu,  &spec_matmul,
    &spec_addmm};

int cmxpy_init_ops_create(PyObject* m) {
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
