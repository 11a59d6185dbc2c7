/* The cmx.core module: initialisation of every area, constants, and
 * eval / async_eval over trees of arrays. */
#include <math.h>

#include "cmxpy.h"

/* Linear-algebra extras (ops_linalg_extra.c). */
int cmxpy_init_ops_linalg_extra(PyObject* m);
/* compile (compile.c). */
int cmxpy_init_compile(PyObject* m);

/* Appends the arrays found in a tree (lists, tuples, dict values) to *out;
 * other leaves are ignored. */
static int collect_arrays(PyObject* o, PyObject* out) {
  if (CmxArray_Check(o)) return PyList_Append(out, o);
  if (!PyList_Check(o) && !PyTuple_Check(o) && !PyDict_Check(o)) return 0;
  if (Py_EnterRecursiveCall(" while flattening a tree of arrays")) return -1;
  int rc = 0;
  if (PyDict_Check(o)) {
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (!rc && PyDict_Next(o, &pos, &k, &v)) rc = collect_arrays(v, out);
  } else {
    PyObject* seq = PySequence_Fast(o, "tree");
    if (!seq) rc = -1;
    for (Py_ssize_t i = 0; seq && !rc && i < PySequence_Fast_GET_SIZE(seq); i++)
      rc = collect_arrays(PySequence_Fast_GET_ITEM(seq, i), out);
    Py_XDECREF(seq);
  }
  Py_LeaveRecursiveCall();
  return rc;
}

static PyObject* eval_impl(PyObject* args, bool async) {
  PyObject* list = PyList_New(0);
  if (!list) return NULL;
  if (collect_arrays(args, list) < 0) {
    Py_DECREF(list);
    return NULL;
  }
  Py_ssize_t n = PyList_GET_SIZE(list);
  cmx_array* arrs = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof *arrs);
  if (!arrs) {
    Py_DECREF(list);
    return PyErr_NoMemory();
  }
  /* Handles are retained: another thread may replace an object's handle
   * (a[i] = v) while this one evaluates without the GIL. */
  for (Py_ssize_t i = 0; i < n; i++)
    arrs[i] = cmx_array_retain(CMXPY_ARR(PyList_GET_ITEM(list, i)));
  Py_DECREF(list);
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st =
      async ? cmx_async_eval(arrs, (size_t)n) : cmx_eval(arrs, (size_t)n);
  Py_END_ALLOW_THREADS cmx_array_release_all(arrs, (size_t)n);
  PyMem_RawFree(arrs);
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject* py_eval(PyObject* m, PyObject* args) {
  (void)m;
  return eval_impl(args, false);
}

static PyObject* py_async_eval(PyObject* m, PyObject* args) {
  (void)m;
  return eval_impl(args, true);
}

static PyObject* py_unavailable(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return cmxpy_unavailable_list();
}

static PyMethodDef module_methods[] = {
    {"eval", py_eval, METH_VARARGS,
     "eval($module, *args)\n--\n\nEvaluate an :class:`array` or tree of "
     ":class:`array`.\n\n"
     "Args:\n    *args (arrays or trees of arrays): Each argument can be a "
     "single array or a tree of arrays. If a tree is given the nodes can be "
     "a Python :class:`list`, :class:`tuple` or :class:`dict`. Leaves which "
     "are not arrays are ignored."},
    {"async_eval", py_async_eval, METH_VARARGS,
     "async_eval($module, *args)\n--\n\nAsynchronously evaluate an "
     ":class:`array` or tree of :class:`array`: returns at once; reading "
     "the data waits.\n\n"
     "Args:\n    *args (arrays or trees of arrays): as :func:`eval`.\n\n"
     "Example:\n    >>> x = mx.array(1.0)\n    >>> y = mx.exp(x)\n"
     "    >>> mx.async_eval(y)\n    >>> print(y)"},
    {"_unavailable", py_unavailable, METH_NOARGS,
     "_unavailable($module, /)\n--\n\nNames of the functions, methods and "
     "properties left out because this build of libcmx lacks their C op."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core",
    .m_doc =
        "cmx.core: arrays, ops, devices and streams, as mlx.core.\n\n"
        "    import cmx.core as mx\n"
        "    a = mx.array([1.0, 2.0])\n"
        "    b = a + 1        # lazy\n"
        "    mx.eval(b)       # computed",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_core(void) {
  PyObject* m = PyModule_Create(&core_module);
  if (!m) return NULL;
  if (cmxpy_init_dtype(m) < 0 || cmxpy_init_device(m) < 0 ||
      cmxpy_init_memory(m) < 0 || cmxpy_init_ops(m) < 0 ||
      cmxpy_init_ops_shape(m) < 0 || cmxpy_init_ops_create(m) < 0 ||
      cmxpy_init_ops_compose(m) < 0 || cmxpy_init_ops_misc(m) < 0 ||
      cmxpy_init_io(m) < 0 || cmxpy_init_buffer(m) < 0 ||
      cmxpy_init_indexing(m) < 0 || cmxpy_init_array(m) < 0 ||
      cmxpy_init_transforms(m) < 0 ||
      cmxpy_init_ops_linalg_extra(m) < 0) /* after init_array: adds methods */
    goto fail;
  if (cmxpy_init_ops_sort(m) < 0 || cmxpy_init_ops_conv(m) < 0 ||
      cmxpy_init_random(m) < 0 || cmxpy_init_compile(m) < 0)
    goto fail;
  if (PyModule_AddObject(m, "pi", PyFloat_FromDouble(3.14159265358979323846)) <
          0 ||
      PyModule_AddObject(m, "e", PyFloat_FromDouble(2.71828182845904523536)) <
          0 ||
      PyModule_AddObject(m, "euler_gamma",
                         PyFloat_FromDouble(0.57721566490153286060)) < 0 ||
      PyModule_AddObject(m, "inf", PyFloat_FromDouble(INFINITY)) < 0 ||
      PyModule_AddObject(m, "nan", PyFloat_FromDouble(NAN)) < 0 ||
      PyModule_AddStringConstant(m, "__version__", "0.1.0") < 0)
    goto fail;
  Py_INCREF(Py_None);
  if (PyModule_AddObject(m, "newaxis", Py_None) < 0) goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
