/* Bindings of the misc, indexing and linear-algebra op families of ops.h:
 * atleast_1d/2d/3d, unstack, meshgrid, window functions, nan_to_num,
 * isclose/allclose/array_equal, take/take_along_axis/put_along_axis,
 * tensordot/inner/outer/vecdot/kron/trace and depends. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

/* ---------------- atleast_nd, unstack, meshgrid ---------------- */
typedef cmx_status (*atleast_fn)(cmx_array*, cmx_array, cmx_stream);

/* One array for one argument, else a list. */
static PyObject* atleast(cmxpy_args* A) {
  int n = A->v[0].n;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = CMX_OK;
  for (int i = 0; i < n && st == CMX_OK; i++)
    st = DATA(atleast_fn)(&outs[i], A->v[0].arrays[i], STREAM);
  PyObject* l = cmxpy_list(st, outs, n);
  PyMem_RawFree(outs);
  if (!l || n != 1) return l;
  PyObject* one = Py_NewRef(PyList_GET_ITEM(l, 0));
  Py_DECREF(l);
  return one;
}
#define ATLEAST(nd, doc)                                                      \
  CMXPY_SPEC_FULL(atleast_##nd, "atleast_" #nd,                               \
                  "(*arys: array, stream: StreamOrDevice = None) -> array | " \
                  "list[array]",                                              \
                  doc, atleast, (const void*)cmx_atleast_##nd, 0, NULL)
ATLEAST(1d,
        "Convert all arrays to have at least one dimension.\n\nReturns:\n"
        "    array or list(array): An array or list of arrays with at least "
        "one dimension.")
ATLEAST(2d,
        "Convert all arrays to have at least two dimensions ((n,) becomes "
        "(1, n)).\n\nReturns:\n    array or list(array): An array or list of "
        "arrays with at least two dimensions.")
ATLEAST(3d,
        "Convert all arrays to have at least three dimensions ((n,) becomes "
        "(1, n, 1), (m, n) becomes (m, n, 1)).\n\nReturns:\n    array or "
        "list(array): An array or list of arrays with at least three "
        "dimensions.")

CMXPY_DEF(unstack, "(x: array, /, axis: int = 0, " STREAM_KW,
          "Split an array into its slices along an axis (the axis "
          "removed).\n\nReturns:\n    tuple(array): The slices (a tuple, "
          "as MLX's).") {
  int nd = cmx_array_ndim(ARR(0)), axis = INT(1);
  int64_t n = axis >= -nd && axis < nd
                  ? cmx_array_shape(ARR(0))[axis < 0 ? axis + nd : axis]
                  : 0;
  /* past INT_MAX cmx_unstack raises (no room needed) */
  cmx_array* outs =
      PyMem_RawCalloc((size_t)(n > 0 && n <= INT_MAX ? n : 1), sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = cmx_unstack(outs, ARR(0), axis, STREAM);
  PyObject* l = cmxpy_list(st, outs, st == CMX_OK ? (int)n : 0);
  PyMem_RawFree(outs);
  PyObject* t = l ? PyList_AsTuple(l) : NULL;
  Py_XDECREF(l);
  return t;
}

CMXPY_DEF(meshgrid,
          "(*arrays: array, sparse: bool = False, indexing: str = 'xy', "
          "stream: StreamOrDevice = None) -> tuple[array, ...]",
          "Generate multidimensional coordinate grids from 1-D coordinate "
          "arrays (NumPy's meshgrid).\n\nReturns:\n    tuple(array): The "
          "output arrays.") {
  int n = A->v[0].n;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = cmx_meshgrid(outs, ARRAYS(0), FLAG(1), STR(2), STREAM);
  PyObject* l = cmxpy_list(st, outs, st == CMX_OK ? n : 0);
  PyMem_RawFree(outs);
  PyObject* t = l ? PyList_AsTuple(l) : NULL; /* MLX returns a tuple */
  Py_XDECREF(l);
  return t;
}

/* ---------------- windows ---------------- */
typedef cmx_status (*window_fn)(cmx_array*, int64_t, cmx_stream);
static PyObject* window(cmxpy_args* A) {
  return RET(DATA(window_fn)(OUT, I64(0), STREAM));
}
#define WINDOW(name, doc)                                          \
  CMXPY_SPEC_FULL(name, #name, "(M: int, " STREAM_KW, doc, window, \
                  (const void*)cmx_##name, 0, NULL)
WINDOW(bartlett, "The Bartlett (triangular) window of length M (float32).")
WINDOW(hanning, "The Hanning window of length M (float32).")
WINDOW(hamming, "The Hamming window of length M (float32).")
WINDOW(blackman, "The Blackman window of length M (float32).")

/* ---------------- nan_to_num, closeness, equality ---------------- */
CMXPY_DEF(nan_to_num,
          "(a: array, nan: float = 0.0, posinf: float | None = None, neginf: "
          "float | None = None, " STREAM_KW,
          "Replace NaN and infinities with finite numbers (posinf/neginf "
          "default to the largest/lowest finite value of the dtype).\n\n"
          "Returns:\n    array: The array with NaN and infinities replaced.") {
  return RET(cmx_nan_to_num(OUT, ARR(0), FLT(1), ISNONE(2) ? NULL : &A->v[2].f,
                            ISNONE(3) ? NULL : &A->v[3].f, STREAM));
}

typedef cmx_status (*close_fn)(cmx_array*, cmx_array, cmx_array, double, double,
                               bool, cmx_stream);
static PyObject* close_to(cmxpy_args* A) {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(
      DATA(close_fn)(OUT, ARR(0), ARR(1), FLT(2), FLT(3), FLAG(4), STREAM));
}
#define CLOSE_SIG                                                         \
  "(a: scalar | array, b: scalar | array, /, rtol: float = 1e-05, atol: " \
  "float = 1e-08, *, equal_nan: bool = False, stream: StreamOrDevice = "  \
  "None) -> array"
CMXPY_FN(isclose, CLOSE_SIG, close_to, cmx_isclose,
         "Returns a boolean array where two arrays are element-wise "
         "equal within a tolerance: |a - b| <= atol + rtol * |b|. "
         "Infinities are close only to the same infinity; NaNs are "
         "close to NaNs only with equal_nan.\n\nReturns:\n    array: "
         "The boolean output.")
CMXPY_FN(allclose, CLOSE_SIG, close_to, cmx_allclose,
         "Approximate comparison of two arrays: all(isclose(a, b, "
         "...)).\n\nReturns:\n    array: The boolean output scalar.")

CMXPY_DEF(array_equal,
          "(a: scalar | array, b: scalar | array, *, equal_nan: bool = False, "
          "stream: StreamOrDevice = None) -> array",
          "Array equality check: true when the shapes are equal and all "
          "elements are equal (the dtypes may differ). NaNs count as equal "
          "with equal_nan.\n\nReturns:\n    array: A scalar boolean array.") {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(cmx_array_equal(OUT, ARR(0), ARR(1), FLAG(2), STREAM));
}

/* ---------------- take / along axis ---------------- */
typedef cmx_status (*take_fn)(cmx_array*, cmx_array, cmx_array, const int*,
                              cmx_stream);
static PyObject* take(cmxpy_args* A) {
  return RET(DATA(take_fn)(OUT, ARR(0), ARR(1), OPT_INT(2), STREAM));
}
#define TAKE_SIG \
  "(a: array, /, indices: array, axis: int | None = None, " STREAM_KW
CMXPY_FN(take, TAKE_SIG, take, cmx_take,
         "Take elements along an axis (of the flattened array when "
         "axis is None).\n\nReturns:\n    array: The indexed values of "
         "a.")
CMXPY_FN(take_along_axis, TAKE_SIG, take, cmx_take_along_axis,
         "Take values along an axis at the specified indices (NumPy's "
         "take_along_axis).\n\nReturns:\n    array: The output array.")

CMXPY_DEF(put_along_axis,
          "(a: array, /, indices: array, values: scalar | array, axis: int | "
          "None = None, " STREAM_KW,
          "A copy of a with values put along an axis at the specified "
          "indices.\n\nReturns:\n    array: The output array.") {
  if (cmxpy_operand(A, 2, cmx_array_dtype(ARR(0))) < 0) return NULL;
  return RET(
      cmx_put_along_axis(OUT, ARR(0), ARR(1), ARR(2), OPT_INT(3), STREAM));
}

/* ---------------- linear algebra ---------------- */
CMXPY_DEF(tensordot,
          "(a: scalar | array, b: scalar | array, /, axes: int | "
          "list[Sequence[int]] = 2, " STREAM_KW,
          "Compute the tensor dot product along the specified axes: the "
          "last `axes` axes of a with the first of b, or the axes of a and b "
          "given as two lists.\n\nReturns:\n    array: The tensor dot "
          "product.") {
  PyObject* axo = OBJ(2);
  bool pairs = !PyIndex_Check(axo);
  cmxpy_val xa = {.n = 0}, xb = {.n = 0}; /* the two axis lists */
  int64_t n = 2;
  if (!pairs) {
    PyObject* i = PyNumber_Index(axo);
    n = i ? PyLong_AsLongLong(i) : -1;
    Py_XDECREF(i);
    if (n == -1 && PyErr_Occurred()) return NULL;
  } else {
    PyObject* seq = PySequence_Check(axo) ? PySequence_Fast(axo, "") : NULL;
    int rc = seq && PySequence_Fast_GET_SIZE(seq) == 2 &&
                     cmxpy_convert_ints(A, 2, PySequence_Fast_GET_ITEM(seq, 0),
                                        &xa) == 0 &&
                     cmxpy_convert_ints(A, 2, PySequence_Fast_GET_ITEM(seq, 1),
                                        &xb) == 0 &&
                     xa.n == xb.n
                 ? 0
                 : -1;
    Py_XDECREF(seq);
    if (rc) {
      if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError,
                        "[tensordot] axes must be two lists of the same "
                        "length");
      }
      return NULL;
    }
  }
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  if (!pairs && (n < INT_MIN || n > INT_MAX)) n = n < 0 ? INT_MIN : INT_MAX;
  return RET(pairs ? cmx_tensordot_axes(OUT, ARR(0), ARR(1), xa.axes, xb.axes,
                                        xa.n, STREAM)
                   : cmx_tensordot(OUT, ARR(0), ARR(1), (int)n, STREAM));
}

typedef cmx_status (*pair_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
static PyObject* pair(cmxpy_args* A) {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(DATA(pair_fn)(OUT, ARR(0), ARR(1), STREAM));
}
#define PAIR(name, doc)                                                        \
  CMXPY_FN(name, "(a: scalar | array, b: scalar | array, /, " STREAM_KW, pair, \
           cmx_##name, doc)
PAIR(inner,
     "Ordinary inner product of vectors for 1-D arrays, in higher "
     "dimensions a sum product over the last axes.\n\nReturns:\n    array: "
     "The inner product.")
PAIR(outer,
     "Compute the outer product of two 1-D arrays (others are flattened)."
     "\n\nReturns:\n    array: The outer product.")
PAIR(kron,
     "The Kronecker product of two arrays.\n\nReturns:\n    array: The "
     "Kronecker product.")

CMXPY_DEF(
    vecdot,
    "(a: scalar | array, b: scalar | array, /, axis: int = -1, " STREAM_KW,
    "sum(conj(a) * b, axis) with a and b broadcast together.\n\n"
    "Returns:\n    array: The vector dot product.") {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(cmx_vecdot(OUT, ARR(0), ARR(1), INT(2), STREAM));
}

CMXPY_DEF(trace,
          "(a: array, /, offset: int = 0, axis1: int = 0, axis2: int = 1, "
          "dtype: Dtype | None = None, " STREAM_KW,
          "Sum along the specified diagonal of the (axis1, axis2) planes."
          "\n\nReturns:\n    array: The sum of the diagonal(s).") {
  cmx_dtype t = DTYPE(4);
  return RET(cmx_trace(OUT, ARR(0), INT(1), INT(2), INT(3),
                       t == CMX_DTYPE_AUTO ? NULL : &t, STREAM));
}

/* depends(inputs, dependencies): inputs (an array or a list of arrays)
 * whose computation waits for the dependencies; same structure back. */
CMXPY_DEF(depends,
          "(inputs: array | Sequence[array], dependencies: array | "
          "Sequence[array])",
          "The inputs (an array or a list of arrays), whose computation "
          "waits for the dependencies to be evaluated.\n\nReturns:\n    "
          "array or list(array): The inputs.") {
  bool single = CmxArray_Check(OBJ(0));
  for (int i = 0; i < 2; i++) {
    PyObject* o =
        CmxArray_Check(OBJ(i)) ? PyTuple_Pack(1, OBJ(i)) : Py_NewRef(OBJ(i));
    int rc = o ? cmxpy_convert_arrays(A, i, o) : -1;
    Py_XDECREF(o);
    if (rc < 0) return NULL;
  }
  int n = A->v[0].n;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = cmx_depends(outs, ARRAYS(0), ARRAYS(1), CMX_STREAM_DEFAULT);
  PyObject* l = cmxpy_list(st, outs, st == CMX_OK ? n : 0);
  PyMem_RawFree(outs);
  if (!l || !single) return l;
  PyObject* one = Py_NewRef(PyList_GET_ITEM(l, 0));
  Py_DECREF(l);
  return one;
}

static cmxpy_spec* const functions[] = {
    &spec_atleast_1d,     &spec_atleast_2d, &spec_atleast_3d,
    &spec_unstack,        &spec_meshgrid,   &spec_bartlett,
    &spec_hanning,        &spec_hamming,    &spec_blackman,
    &spec_nan_to_num,     &spec_isclose,    &spec_allclose,
    &spec_array_equal,    &spec_take,       &spec_take_along_axis,
    &spec_put_along_axis, &spec_tensordot,  &spec_inner,
    &spec_outer,          &spec_kron,       &spec_vecdot,
    &spec_trace,          &spec_depends};

int cmxpy_init_ops_misc(PyObject* m) {
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
