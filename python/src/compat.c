/* Names of mlx.core that are small helpers over other ops: minmax,
 * unique, get_array_buffer_size and the ArrayLike protocol class. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None)"

CMXPY_DEF(minmax,
          "(a: array, /, axis: None | int | Sequence[int] = None, keepdims: "
          "bool = False, " STREAM_KW " -> tuple[array, array]",
          "The minimum and the maximum over the given axes, as a tuple "
          "(min(a, axis), max(a, axis)).") {
  cmx_array lo = NULL, hi = NULL;
  cmx_status st = cmx_min(&lo, ARR(0), AXES(1), FLAG(2), STREAM);
  if (st == CMX_OK) st = cmx_max(&hi, ARR(0), AXES(1), FLAG(2), STREAM);
  if (st != CMX_OK) {
    cmx_array_release(lo);
    cmx_array_release(hi);
    return cmxpy_raise(st);
  }
  return Py_BuildValue("(NN)", cmxpy_wrap(lo), cmxpy_wrap(hi));
}

CMXPY_DEF(get_array_buffer_size, "(*args) -> int",
          "The total bytes of the buffers of the given arrays (or trees of "
          "arrays): a view counts its whole buffer, a broadcast its source. "
          "The arrays must have been evaluated.") {
  PyObject* list = PyList_New(0);
  if (!list || cmxpy_tree_arrays(OBJ(0), list) < 0) {
    Py_XDECREF(list);
    return NULL;
  }
  size_t total = 0;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
    size_t n;
    cmx_status st;
    cmx_array a = CMXPY_ARR(PyList_GET_ITEM(list, i));
    Py_BEGIN_ALLOW_THREADS st = cmx_array_buffer_size(a, &n);
    Py_END_ALLOW_THREADS if (st != CMX_OK) {
      Py_DECREF(list);
      return cmxpy_raise(st);
    }
    total += n;
  }
  Py_DECREF(list);
  return PyLong_FromSize_t(total);
}

CMXPY_DEF(unique,
          "(a: array, /, size: int, return_index: bool = False, "
          "return_inverse: bool = False, return_counts: bool = False, "
          "fill_value: scalar | array | None = None, " STREAM_KW
          " -> array | tuple[array, ...]",
          "The unique values of the flattened array, ascending, in an array "
          "of the static length ``size`` (slots past the number of unique "
          "values hold ``fill_value``, default the smallest unique value).\n\n"
          "Args:\n    a (array): Input array.\n    size (int): Length of the "
          "outputs.\n    return_index (bool): Also return the uint32 index of "
          "each value's first occurrence.\n    return_inverse (bool): Also "
          "return, for each element of ``a``, the position of its value "
          "(uint32, shape of ``a``).\n    return_counts (bool): Also return "
          "the int32 count of each value (0 in fill slots).\n    fill_value "
          "(scalar or array, optional): The value of the slots past the "
          "unique values.\n\nReturns:\n    array or tuple(array): The values, "
          "then the requested outputs in this order.") {
  cmx_array o[4] = {NULL, NULL, NULL, NULL};
  if (cmxpy_operand(A, 5, cmx_array_dtype(ARR(0))) < 0) return NULL;
  cmx_status st = cmx_unique(o, ARR(0), I64(1), ARR(5), STREAM);
  if (st != CMX_OK) return cmxpy_raise(st);
  bool want[4] = {true, FLAG(2), FLAG(3), FLAG(4)};
  int n = 0;
  for (int i = 0; i < 4; i++) n += want[i];
  if (n == 1) {
    for (int i = 1; i < 4; i++) cmx_array_release(o[i]);
    return cmxpy_wrap(o[0]);
  }
  PyObject* t = PyTuple_New(n);
  for (int i = 0, j = 0; i < 4; i++) {
    if (!want[i] || !t) {
      cmx_array_release(o[i]);
      continue;
    }
    PyTuple_SET_ITEM(t, j++, cmxpy_wrap(o[i]));
  }
  return t;
}

/* mlx.core.ArrayLike: the protocol of objects with __mlx_array__. */
static PyObject* array_like_check(PyObject* cls, PyObject* o) {
  (void)cls;
  return PyBool_FromLong(cmxpy_is_array_like(o));
}

static PyMethodDef array_like_methods[] = {
    {"__instancecheck__", array_like_check, METH_O, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CmxArrayLikeMeta_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core._ArrayLikeMeta",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = array_like_methods,
};

static cmxpy_spec* const compat_functions[] = {
    &spec_minmax, &spec_get_array_buffer_size, &spec_unique};

int cmxpy_init_compat(PyObject* m) {
  CmxArrayLikeMeta_Type.tp_base = &PyType_Type;
  if (PyType_Ready(&CmxArrayLikeMeta_Type) < 0) return -1;
  PyObject* cls = PyObject_CallFunction(
      (PyObject*)&CmxArrayLikeMeta_Type, "s(){s:s,s:s}", "ArrayLike",
      "__module__", "cmx.core", "__doc__",
      "Any Python object which has an ``__mlx_array__`` method that returns "
      "an :obj:`array` (isinstance checks for it).");
  if (!cls || PyModule_AddObject(m, "ArrayLike", cls) < 0) {
    Py_XDECREF(cls);
    return -1;
  }
  return cmxpy_add_functions(m, compat_functions,
                             CMXPY_COUNT(compat_functions));
}
