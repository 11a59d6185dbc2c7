/* The C API of cmx.core for extension modules (include/cmx/python.h): a
 * table of functions in the capsule cmx.core._C_API. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "cmx/python.h"
#include "extension.h"

static cmx_array handle(PyObject* o) {
  return CMXPY_ARR(o);
}

static cmx_status eval_one(cmx_array a) {
  return cmxpy_eval(a);
}

static cmx_python_api g_api = {
    .version = CMX_PYTHON_API_VERSION,
    .wrap = cmxpy_wrap,
    .handle = handle,
    .to_array = cmxpy_to_array,
    .to_stream = cmxpy_stream_arg,
    .stream = cmxpy_stream_object,
    .raise = cmxpy_raise,
    .eval = eval_one,
};

int cmxpy_init_extension(PyObject* m) {
  g_api.array_type = &CmxArray_Type;
  g_api.stream_type = cmxpy_stream_type();
  PyObject* cap = PyCapsule_New(&g_api, "cmx.core._C_API", NULL);
  if (!cap || PyModule_AddObject(m, "_C_API", cap) < 0) {
    Py_XDECREF(cap);
    return -1;
  }
  return cmxpy_init_fast_cuda(m);
}
