/* Errors, evaluation without the GIL, method tables and argument helpers
 * shared by every area of the extension. */
#include <float.h>
#include <math.h>

#include "cmxpy.h"

PyObject* cmxpy_raise(cmx_status st) {
  if (st == CMXPY_ERR_SET) return NULL;
  /* An interrupted eval: the interrupt check left KeyboardInterrupt (or
   * what a signal handler raised) set. */
  if (st == CMX_ERR_INTERRUPTED && PyErr_Occurred()) return NULL;
  PyObject* type;
  switch (st) {
    case CMX_ERR_VALUE:
      type = PyExc_ValueError;
      break;
    case CMX_ERR_TYPE:
      type = PyExc_TypeError;
      break;
    case CMX_ERR_INDEX:
      type = PyExc_IndexError;
      break;
    case CMX_ERR_MEMORY:
      type = PyExc_MemoryError;
      break;
    case CMX_ERR_NOT_IMPLEMENTED:
      type = PyExc_NotImplementedError;
      break;
    case CMX_ERR_IO:
      type = PyExc_OSError;
      break;
    case CMX_ERR_INTERRUPTED:
      type = PyExc_KeyboardInterrupt;
      break;
    default:
      type = PyExc_RuntimeError;
      break;
  }
  const char* msg = cmx_last_error();
  PyErr_SetString(type, msg && *msg ? msg : cmx_status_name(st));
  return NULL;
}

PyObject* cmxpy_result_v(cmx_status st, cmx_array* out) {
  if (st == CMX_ERR_TYPE) {
    cmx_array_release(*out);
    *out = NULL;
    const char* msg = cmx_last_error();
    PyErr_SetString(PyExc_ValueError, msg && *msg ? msg : cmx_status_name(st));
    return NULL;
  }
  return cmxpy_result(st, out);
}

/* ---------------- method tables ---------------- */
int cmxpy_defs_add(cmxpy_deflist* l, const PyMethodDef* defs) {
  for (const PyMethodDef* d = defs; d->ml_name; d++) {
    if (l->n + 2 > l->cap) {
      size_t cap = l->cap ? 2 * l->cap : 64;
      PyMethodDef* p = PyMem_RawRealloc(l->items, cap * sizeof *p);
      if (!p) {
        PyErr_NoMemory();
        return -1;
      }
      l->items = p;
      l->cap = cap;
    }
    l->items[l->n++] = *d;
  }
  return 0;
}

/* Finished tables live for the whole process; keeping them here also
 * keeps them reachable for leak checkers after the interpreter exits. */
static PyMethodDef* g_tables[32];
static int g_ntables;

PyMethodDef* cmxpy_defs_finish(cmxpy_deflist* l) {
  if (!l->items) {
    l->items = PyMem_RawCalloc(1, sizeof(PyMethodDef));
    if (!l->items) {
      PyErr_NoMemory();
      return NULL;
    }
  } else {
    memset(&l->items[l->n], 0, sizeof(PyMethodDef));
  }
  if (g_ntables < (int)(sizeof g_tables / sizeof g_tables[0]))
    g_tables[g_ntables++] = l->items;
  return l->items;
}

/* ---------------- evaluation ---------------- */
/* The interrupt check cmx calls while an eval waits (without the GIL):
 * runs Python's signal handlers, so Ctrl-C stops a long eval (KeyboardInterrupt
 * stays set for the caller, see cmxpy_raise). Only the main thread runs
 * handlers; elsewhere this is a no-op. */
static bool check_signals(void* ctx) {
  (void)ctx;
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  PyGILState_STATE g = PyGILState_Ensure();
  bool stop = PyErr_CheckSignals() != 0;
  PyGILState_Release(g);
  return stop;
}

void cmxpy_install_interrupt_check(void) {
  cmx_set_interrupt_check(check_signals, NULL);
}

cmx_status cmxpy_eval(cmx_array a) {
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_array_eval(a);
  Py_END_ALLOW_THREADS return st;
}

cmx_status cmxpy_eval_many(const cmx_array* a, size_t n) {
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_eval(a, n);
  Py_END_ALLOW_THREADS return st;
}

cmx_status cmxpy_data(cmx_array a, const void** out) {
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_array_data(a, out);
  Py_END_ALLOW_THREADS return st;
}

/* ---------------- arguments ---------------- */
int cmxpy_int64_arg(PyObject* o, int64_t* out, const char* fname,
                    const char* arg) {
  if (PyBool_Check(o) || !PyIndex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "[%s] %s must be an integer, got %.100s",
                 fname, arg, Py_TYPE(o)->tp_name);
    return -1;
  }
  PyObject* i = PyNumber_Index(o);
  if (!i) return -1;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow) {
    PyErr_Format(PyExc_ValueError, "[%s] %s is too large", fname, arg);
    return -1;
  }
  *out = (int64_t)v;
  return 0;
}

int cmxpy_int_arg(PyObject* o, int* out, const char* fname, const char* arg) {
  int64_t v;
  if (cmxpy_int64_arg(o, &v, fname, arg) < 0) return -1;
  if (v < INT32_MIN || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "[%s] %s is out of range", fname, arg);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int cmxpy_axes_arg(PyObject* o, cmxpy_axes* out, const char* fname) {
  out->n = 0;
  out->all = false;
  if (!o || o == Py_None) {
    out->all = true;
    return 0;
  }
  if (PyIndex_Check(o) && !PyBool_Check(o)) {
    out->n = 1;
    return cmxpy_int_arg(o, &out->v[0], fname, "axis");
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    PyErr_Format(PyExc_TypeError,
                 "[%s] axis must be None, an int or a sequence of ints, got "
                 "%.100s",
                 fname, Py_TYPE(o)->tp_name);
    return -1;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > CMX_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError, "[%s] too many axes (%zd)", fname, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (cmxpy_int_arg(PySequence_Fast_GET_ITEM(o, i), &out->v[i], fname,
                      "axis") < 0)
      return -1;
  out->n = (int)n;
  return 0;
}

int cmxpy_shape_arg(PyObject* o, int64_t* shape, int* ndim, const char* fname) {
  if (PyIndex_Check(o) && !PyBool_Check(o)) {
    *ndim = 1;
    return cmxpy_int64_arg(o, &shape[0], fname, "shape");
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    PyErr_Format(PyExc_TypeError,
                 "[%s] shape must be an int or a sequence of ints, got %.100s",
                 fname, Py_TYPE(o)->tp_name);
    return -1;
  }
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > CMX_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError, "[%s] shape has too many dimensions (%zd)",
                 fname, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (cmxpy_int64_arg(PySequence_Fast_GET_ITEM(o, i), &shape[i], fname,
                        "shape") < 0)
      return -1;
  *ndim = (int)n;
  return 0;
}

PyObject* cmxpy_shape_tuple(const int64_t* shape, int ndim) {
  PyObject* t = PyTuple_New(ndim);
  if (!t) return NULL;
  for (int i = 0; i < ndim; i++) {
    PyObject* v = PyLong_FromLongLong(shape[i]);
    if (!v) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, i, v);
  }
  return t;
}

float cmxpy_float(double d) {
  return fabs(d) > FLT_MAX && !isinf(d) ? (float)copysign(INFINITY, d)
                                        : (float)d;
}
