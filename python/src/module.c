/* The cmx.core module: initialisation of every area, constants, eval /
 * async_eval over trees of arrays, and the kernel coverage table. */
#include <math.h>

#include "args.h"
#include "extension.h"

/* Evaluates the n arrays at arrs (retained by the caller) without the
 * GIL. */
static PyObject* eval_arrays(cmx_array* arrs, size_t n, bool async) {
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st =
      async ? cmx_async_eval(arrs, n) : cmx_eval(arrs, n);
  Py_END_ALLOW_THREADS cmx_array_release_all(arrs, n);
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

#define EVAL_FAST 8

static PyObject* eval_impl(PyObject* trees, bool async) {
  /* The usual call, eval(a) or eval(a, b, ...) of a few arrays: no tree
   * walk, no list. */
  Py_ssize_t nt = PyTuple_GET_SIZE(trees);
  if (nt <= EVAL_FAST) {
    cmx_array arrs[EVAL_FAST];
    Py_ssize_t k = 0;
    while (k < nt && CmxArray_Check(PyTuple_GET_ITEM(trees, k))) k++;
    if (k == nt) {
      /* Handles are retained: another thread may replace an object's
       * handle (a[i] = v) while this one evaluates without the GIL. */
      for (Py_ssize_t i = 0; i < nt; i++)
        arrs[i] = cmx_array_retain(CMXPY_ARR(PyTuple_GET_ITEM(trees, i)));
      return eval_arrays(arrs, (size_t)nt, async);
    }
  }
  PyObject* list = PyList_New(0);
  if (!list) return NULL;
  if (cmxpy_tree_arrays(trees, list) < 0) {
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
  PyObject* r = eval_arrays(arrs, (size_t)n, async);
  PyMem_RawFree(arrs);
  return r;
}

CMXPY_DEF(eval, "(*args) -> None",
          "Evaluate an :class:`array` or tree of :class:`array`.\n\n"
          "Args:\n    *args (arrays or trees of arrays): Each argument can be "
          "a single array or a tree of arrays. If a tree is given the nodes "
          "can be a Python :class:`list`, :class:`tuple` or :class:`dict`. "
          "Leaves which are not arrays are ignored.") {
  return eval_impl(OBJ(0), false);
}

CMXPY_DEF(async_eval, "(*args) -> None",
          "Asynchronously evaluate an :class:`array` or tree of "
          ":class:`array`: returns at once; reading the data waits.\n\n"
          "Args:\n    *args (arrays or trees of arrays): as :func:`eval`.\n\n"
          "Example:\n    >>> x = mx.array(1.0)\n    >>> y = mx.exp(x)\n"
          "    >>> mx.async_eval(y)\n    >>> print(y)") {
  return eval_impl(OBJ(0), true);
}

/* {name: (cpu, gpu)} from the one coverage table of include/cmx/
 * primitive.h. */
CMXPY_DEF(_kernel_coverage, "() -> dict",
          "Which built-in primitive has a kernel on which device: {name: "
          "(cpu, gpu)} (the table that build/cmx_coverage prints).") {
  (void)A;
  PyObject* d = PyDict_New();
  int n = cmx_builtin_primitive_count();
  for (int i = 0; d && i < n; i++) {
    const cmx_primitive_vtable* vt = cmx_builtin_primitive(i);
    PyObject* v = Py_BuildValue(
        "(NN)", PyBool_FromLong(cmx_primitive_has_kernel(vt, CMX_CPU)),
        PyBool_FromLong(cmx_primitive_has_kernel(vt, CMX_GPU)));
    if (!v || PyDict_SetItemString(d, vt->name, v) < 0) Py_CLEAR(d);
    Py_XDECREF(v);
  }
  return d;
}

static cmxpy_spec* const module_functions[] = {&spec_eval, &spec_async_eval,
                                               &spec__kernel_coverage};

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
};

static int add_constants(PyObject* m) {
  static const struct {
    const char* name;
    double v;
  } consts[] = {{"pi", 3.14159265358979323846},
                {"e", 2.71828182845904523536},
                {"euler_gamma", 0.57721566490153286060},
                {"inf", INFINITY},
                {"nan", NAN}};
  for (size_t i = 0; i < CMXPY_COUNT(consts); i++)
    if (PyModule_AddObject(m, consts[i].name, PyFloat_FromDouble(consts[i].v)) <
        0)
      return -1;
  Py_INCREF(Py_None);
  return PyModule_AddStringConstant(m, "__version__", "0.1.0") < 0 ||
                 PyModule_AddObject(m, "newaxis", Py_None) < 0
             ? -1
             : 0;
}

PyMODINIT_FUNC PyInit_core(void) {
  PyObject* m = PyModule_Create(&core_module);
  if (!m) return NULL;
  /* Areas add module functions and collect the array's methods; dtypes
   * and devices first (signature defaults name them), the array type
   * next (made ready with the methods), then areas that make arrays as
   * they start (random's key state). */
  cmxpy_deflist methods = {0};
  cmxpy_deflist* am = &methods;
  if (cmxpy_init_dtype(m) < 0 || cmxpy_init_device(m) < 0 ||
      cmxpy_init_memory(m) < 0 || cmxpy_init_tree(m) < 0 ||
      cmxpy_add_functions(m, module_functions, CMXPY_COUNT(module_functions)) <
          0 ||
      cmxpy_init_ops(m, am) < 0 || cmxpy_init_ops_shape(m, am) < 0 ||
      cmxpy_init_ops_linalg_extra(m, am) < 0 ||
      cmxpy_init_ops_sort(m, am) < 0 || cmxpy_init_buffer(m, am) < 0 ||
      cmxpy_init_number(am) < 0 || cmxpy_init_array(m, am) < 0 ||
      cmxpy_init_ops_create(m) < 0 || cmxpy_init_ops_compose(m) < 0 ||
      cmxpy_init_ops_misc(m) < 0 || cmxpy_init_ops_conv(m) < 0 ||
      cmxpy_init_random(m) < 0 || cmxpy_init_fast(m) < 0 ||
      cmxpy_init_ops_quantized(m) < 0 || cmxpy_init_io(m) < 0 ||
      cmxpy_init_linalg(m) < 0 || cmxpy_init_fft(m) < 0 ||
      cmxpy_init_distributed(m) < 0 || cmxpy_init_indexing(m) < 0 ||
      cmxpy_init_transforms(m) < 0 || cmxpy_init_compile(m) < 0 ||
      cmxpy_init_compat(m) < 0 || cmxpy_init_export(m) < 0 ||
      add_constants(m) < 0 || cmxpy_init_extension(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  cmxpy_install_interrupt_check();
  return m;
}
