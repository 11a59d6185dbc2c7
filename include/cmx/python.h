/* cmx/python.h: the cmx.core objects for CPython extension modules.
 *
 * An extension module built on cmx (an op of its own, cmx/primitive.h)
 * takes and returns cmx.core arrays and streams through this header
 * alone: it links libcmx (cmx::cmx) and reaches the cmx.core extension
 * through a capsule (cmx.core._C_API) that cmx_python_import() fetches, so
 * it needs no private symbol of cmx.core. Include <Python.h> first.
 *
 *     #include <Python.h>
 *     #include <cmx/python.h>
 *
 *     static PyObject* py_twice(PyObject* self, PyObject* args) {
 *       PyObject *xo, *so = Py_None;
 *       cmx_array x, y;
 *       cmx_stream s;
 *       if (!PyArg_ParseTuple(args, "O|O", &xo, &so) ||
 *           cmx_python_to_array(xo, &x) < 0)
 *         return NULL;
 *       if (cmx_python_to_stream(so, &s) < 0) {
 *         cmx_array_release(x);
 *         return NULL;
 *       }
 *       cmx_status st = cmx_add(&y, x, x, s);
 *       cmx_array_release(x);
 *       return cmx_python_result(st, y);
 *     }
 *     PyMODINIT_FUNC PyInit_twice(void) {
 *       if (cmx_python_import() < 0) return NULL;  // imports cmx.core
 *       return PyModule_Create(&twice_module);
 *     }
 *
 * Every function below needs the GIL; cmx_python_import() must have
 * succeeded (in the module's init) before any other is called.
 */
#ifndef CMX_PYTHON_H
#define CMX_PYTHON_H

#ifndef Py_PYTHON_H
#error "include <Python.h> before <cmx/python.h>"
#endif

#include "cmx/cmx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The table behind the capsule cmx.core._C_API. Fields are only ever
 * added at the end; version counts them. */
#define CMX_PYTHON_API_VERSION 1
typedef struct cmx_python_api {
  int version;
  PyTypeObject* array_type;  /* cmx.core.array */
  PyTypeObject* stream_type; /* cmx.core.Stream */
  /* A new cmx.core.array owning a (the reference is taken, also on
   * failure). */
  PyObject* (*wrap)(cmx_array a);
  /* The handle of a cmx.core.array (borrowed: valid while the object is
   * alive and not updated in place). */
  cmx_array (*handle)(PyObject* o);
  /* An op argument as cmx.core's ops take it (arrays, Python scalars,
   * array-likes): a new reference, or NULL with TypeError naming fname. */
  cmx_array (*to_array)(PyObject* o, const char* fname);
  /* None / Stream / Device -> a stream value; 0, or -1 with TypeError. */
  int (*to_stream)(PyObject* o, cmx_stream* out);
  /* A new cmx.core.Stream. */
  PyObject* (*stream)(cmx_stream s);
  /* Raises the Python exception matching st with cmx_last_error() (as
   * cmx.core does: ValueError, TypeError, MemoryError, RuntimeError ...)
   * and returns NULL. */
  PyObject* (*raise)(cmx_status st);
  /* Evaluates a with the GIL released. */
  cmx_status (*eval)(cmx_array a);
} cmx_python_api;

/* Set by cmx_python_import() (one per translation unit that includes this
 * header: call cmx_python_import() from each, or pass the table on). */
static const cmx_python_api* cmx_python_api_table = NULL;

/* Imports cmx.core and fetches its table. 0, or -1 with ImportError set
 * (cmx.core missing, or older than this header). */
static inline int cmx_python_import(void) {
  if (cmx_python_api_table) return 0;
  PyObject* m = PyImport_ImportModule("cmx.core");
  if (!m) return -1;
  Py_DECREF(m);
  const cmx_python_api* t =
      (const cmx_python_api*)PyCapsule_Import("cmx.core._C_API", 0);
  if (!t) return -1;
  if (t->version < CMX_PYTHON_API_VERSION) {
    PyErr_Format(PyExc_ImportError,
                 "cmx.core's C API is version %d; this extension was built "
                 "for version %d",
                 t->version, CMX_PYTHON_API_VERSION);
    return -1;
  }
  cmx_python_api_table = t;
  return 0;
}

/* True when o is a cmx.core.array. */
static inline int cmx_python_is_array(PyObject* o) {
  return PyObject_TypeCheck(o, cmx_python_api_table->array_type);
}
/* The borrowed handle of a cmx.core.array (see cmx_python_api.handle). */
static inline cmx_array cmx_python_handle(PyObject* o) {
  return cmx_python_api_table->handle(o);
}
/* o as an array argument (a new reference to release): 0, or -1 with
 * TypeError set. */
static inline int cmx_python_to_array(PyObject* o, cmx_array* out) {
  *out = cmx_python_api_table->to_array(o, "extension");
  return *out ? 0 : -1;
}
/* o (None, a Stream or a Device) as a stream: 0, or -1 with TypeError. */
static inline int cmx_python_to_stream(PyObject* o, cmx_stream* out) {
  return cmx_python_api_table->to_stream(o, out);
}
/* A new cmx.core.array owning a (reference taken). */
static inline PyObject* cmx_python_wrap(cmx_array a) {
  return cmx_python_api_table->wrap(a);
}
/* A new cmx.core.Stream for s. */
static inline PyObject* cmx_python_stream(cmx_stream s) {
  return cmx_python_api_table->stream(s);
}
/* The result of an op: st == CMX_OK gives cmx_python_wrap(a); otherwise
 * releases a (when not NULL) and raises the error. */
static inline PyObject* cmx_python_result(cmx_status st, cmx_array a) {
  if (st == CMX_OK) return cmx_python_api_table->wrap(a);
  if (a) cmx_array_release(a);
  return cmx_python_api_table->raise(st);
}
/* Raises st's Python exception with cmx_last_error(); returns NULL. */
static inline PyObject* cmx_python_raise(cmx_status st) {
  return cmx_python_api_table->raise(st);
}

#ifdef __cplusplus
}
#endif
#endif
