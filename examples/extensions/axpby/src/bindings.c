/* The Python binding of axpby: the module axpby._ext, with cmx.core
 * arrays and streams in and out through <cmx/python.h>. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <cmx/python.h>

#include "axpby.h"

static PyObject* py_axpby(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "", "alpha", "beta", "stream", NULL};
  PyObject *xo, *yo, *so = Py_None;
  float alpha, beta;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOff|$O:axpby", kwlist, &xo, &yo,
                                   &alpha, &beta, &so))
    return NULL;
  cmx_stream s;
  cmx_array x = NULL, y = NULL, z = NULL;
  if (cmx_python_to_stream(so, &s) < 0 || cmx_python_to_array(xo, &x) < 0)
    return NULL;
  if (cmx_python_to_array(yo, &y) < 0) {
    cmx_array_release(x);
    return NULL;
  }
  cmx_status st = axpby(&z, x, y, alpha, beta, s);
  cmx_array_release(x);
  cmx_array_release(y);
  return cmx_python_result(st, z);
}

static PyObject* py_cuda_source(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  return PyUnicode_FromString(axpby_cuda_source());
}

static PyMethodDef methods[] = {
    {"axpby", (PyCFunction)(void (*)(void))py_axpby,
     METH_VARARGS | METH_KEYWORDS,
     "axpby(x, y, /, alpha, beta, *, stream=None)\n--\n\n"
     "Scale and sum two arrays elementwise: ``alpha * x + beta * y``.\n\n"
     "x and y broadcast (NumPy rules); integer inputs are computed in\n"
     "float32.\n\n"
     "Args:\n"
     "    x (array): Input array.\n"
     "    y (array): Input array.\n"
     "    alpha (float): Scaling factor for ``x``.\n"
     "    beta (float): Scaling factor for ``y``.\n"
     "    stream (Stream or Device, optional): Where it runs.\n\n"
     "Returns:\n"
     "    array: ``alpha * x + beta * y``"},
    {"_cuda_source", py_cuda_source, METH_NOARGS,
     "The CUDA program of axpby's GPU kernels (for checking it with "
     "NVRTC)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_ext",
    .m_doc = "axpby: a cmx extension (C and CUDA)",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__ext(void) {
  if (cmx_python_import() < 0) return NULL;
  return PyModule_Create(&module);
}
