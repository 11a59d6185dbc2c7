/* Memory statistics and limits (mx.get_active_memory ...) and print
 * options (mx.set_printoptions, the mx.printoptions context). */
#include "cmxpy.h"

/* _fail_after(n): for the fuzzer (tests/fuzz/pyfuzz.py), see
 * cmx_debug_fail_after. Private: not part of mlx.core's API. */
static PyObject* py_fail_after(PyObject* m, PyObject* arg) {
  (void)m;
  long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  cmx_debug_fail_after((int64_t)n);
  Py_RETURN_NONE;
}

static PyObject* py_get_active_memory(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return PyLong_FromSize_t(cmx_get_active_memory());
}
static PyObject* py_get_peak_memory(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return PyLong_FromSize_t(cmx_get_peak_memory());
}
static PyObject* py_reset_peak_memory(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_reset_peak_memory();
  Py_RETURN_NONE;
}
static PyObject* py_get_cache_memory(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return PyLong_FromSize_t(cmx_get_cache_memory());
}
static PyObject* py_get_memory_limit(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return PyLong_FromSize_t(cmx_get_memory_limit());
}
static PyObject* py_clear_cache(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_clear_cache();
  Py_RETURN_NONE;
}

/* A non-negative byte count argument. */
static int bytes_arg(PyObject* args, PyObject* kw, const char* fname,
                     size_t* out) {
  static char* kwlist[] = {"limit", NULL};
  PyObject* o;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwlist, &o)) return -1;
  if (!PyLong_Check(o)) {
    PyErr_Format(PyExc_TypeError, "[%s] limit must be an int", fname);
    return -1;
  }
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError,
                 "[%s] limit must be a non-negative number "
                 "of bytes",
                 fname);
    return -1;
  }
  *out = (size_t)v;
  return 0;
}

static PyObject* py_set_memory_limit(PyObject* m, PyObject* args,
                                     PyObject* kw) {
  (void)m;
  size_t limit, prev = 0;
  if (bytes_arg(args, kw, "set_memory_limit", &limit) < 0) return NULL;
  cmx_status st = cmx_set_memory_limit(limit, &prev);
  if (st != CMX_OK) return cmxpy_raise(st);
  return PyLong_FromSize_t(prev);
}

static PyObject* py_set_cache_limit(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  size_t limit, prev = 0;
  if (bytes_arg(args, kw, "set_cache_limit", &limit) < 0) return NULL;
  cmx_status st = cmx_set_cache_limit(limit, &prev);
  if (st != CMX_OK) return cmxpy_raise(st);
  return PyLong_FromSize_t(prev);
}

/* Wired memory is a Metal notion; kept for source compatibility. */
static PyObject* py_set_wired_limit(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  size_t limit;
  if (bytes_arg(args, kw, "set_wired_limit", &limit) < 0) return NULL;
  return PyLong_FromLong(0);
}

/* ---------------- print options ---------------- */
static int precision_arg(PyObject* o, int* out) {
  if (o == Py_None) {
    *out = -1;
    return 0;
  }
  if (cmxpy_int_arg(o, out, "set_printoptions", "precision") < 0) return -1;
  if (*out < 0) {
    PyErr_SetString(PyExc_ValueError,
                    "[set_printoptions] precision must be non-negative");
    return -1;
  }
  return 0;
}

static PyObject* py_set_printoptions(PyObject* m, PyObject* args,
                                     PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"precision", NULL};
  PyObject* p = Py_None;
  int prec;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:set_printoptions", kwlist,
                                   &p) ||
      precision_arg(p, &prec) < 0)
    return NULL;
  if (prec >= 0) {
    cmx_status st = cmx_set_printoptions(prec);
    if (st != CMX_OK) return cmxpy_raise(st);
  }
  Py_RETURN_NONE;
}

/* precision None: the default (shortest round-trip) formatting. */
static PyObject* py_get_printoptions(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  int p = cmx_get_printoptions_precision();
  if (p < 0) return Py_BuildValue("{s:O}", "precision", Py_None);
  return Py_BuildValue("{s:i}", "precision", p);
}

typedef struct {
  PyObject_HEAD int precision; /* -1: unchanged */
  int saved[8];
  int depth;
} CmxPrintOptionsObject;

static PyObject* popts_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"precision", NULL};
  PyObject* p = Py_None;
  int prec;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:printoptions", kwlist, &p) ||
      precision_arg(p, &prec) < 0)
    return NULL;
  CmxPrintOptionsObject* self = (CmxPrintOptionsObject*)type->tp_alloc(type, 0);
  if (self) self->precision = prec;
  return (PyObject*)self;
}

static PyObject* popts_enter(PyObject* o, PyObject* u) {
  (void)u;
  CmxPrintOptionsObject* self = (CmxPrintOptionsObject*)o;
  if (self->depth >= 8) {
    PyErr_SetString(PyExc_RuntimeError, "[printoptions] entered too often");
    return NULL;
  }
  self->saved[self->depth++] = cmx_get_printoptions_precision();
  if (self->precision >= 0) {
    cmx_status st = cmx_set_printoptions(self->precision);
    if (st != CMX_OK) {
      self->depth--;
      return cmxpy_raise(st);
    }
  }
  Py_INCREF(o);
  return o;
}

static PyObject* popts_exit(PyObject* o, PyObject* args) {
  (void)args;
  CmxPrintOptionsObject* self = (CmxPrintOptionsObject*)o;
  if (self->depth > 0) cmx_set_printoptions(self->saved[--self->depth]);
  Py_RETURN_FALSE;
}

static PyMethodDef popts_methods[] = {
    {"__enter__", popts_enter, METH_NOARGS, NULL},
    {"__exit__", popts_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject CmxPrintOptions_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.printoptions",
    .tp_basicsize = sizeof(CmxPrintOptionsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "printoptions(*, precision=None)\n--\n\nA context manager that "
        "sets print options (as :func:`set_printoptions`) and restores "
        "them on exit.\n\n"
        "Example:\n    >>> with mx.printoptions(precision=2):\n"
        "    ...     print(mx.array([1.2345]))\n    array([1.23], "
        "dtype=float32)",
    .tp_new = popts_new,
    .tp_methods = popts_methods,
};

static const cmxpy_def memory_functions[] = {
    {{"_fail_after", py_fail_after, METH_O,
      "_fail_after($module, n, /)\n--\n\nFor tests: the n-th array made "
      "from now on by this thread fails with MemoryError (0: off)."},
     CMXPY_ALWAYS},
    {{"get_active_memory", py_get_active_memory, METH_NOARGS,
      "get_active_memory($module, /)\n--\n\nGet the actively used memory in "
      "bytes (buffers held by arrays; the cache is not included)."},
     CMXPY_ALWAYS},
    {{"get_peak_memory", py_get_peak_memory, METH_NOARGS,
      "get_peak_memory($module, /)\n--\n\nGet the peak amount of used memory "
      "in bytes since the program started or :func:`reset_peak_memory`."},
     CMXPY_ALWAYS},
    {{"reset_peak_memory", py_reset_peak_memory, METH_NOARGS,
      "reset_peak_memory($module, /)\n--\n\nReset the peak memory to the "
      "current active memory."},
     CMXPY_ALWAYS},
    {{"get_cache_memory", py_get_cache_memory, METH_NOARGS,
      "get_cache_memory($module, /)\n--\n\nGet the cache size in bytes "
      "(freed buffers kept for reuse)."},
     CMXPY_ALWAYS},
    {{"get_memory_limit", py_get_memory_limit, METH_NOARGS,
      "get_memory_limit($module, /)\n--\n\nGet the memory limit in bytes."},
     CMXPY_ALWAYS},
    {{"set_memory_limit", (PyCFunction)(void (*)(void))py_set_memory_limit,
      METH_VARARGS | METH_KEYWORDS,
      "set_memory_limit($module, limit)\n--\n\nSet the memory limit.\n\n"
      "Allocations past the limit raise MemoryError from the op or eval "
      "that needed them; arrays whose eval failed so compute again once the "
      "limit is raised. The limit is taken as given, as in MLX: 0 is a "
      "limit of 0 bytes (the default is the machine's memory).\n\n"
      "Args:\n    limit (int): Memory limit in bytes.\n\n"
      "Returns:\n    int: The previous memory limit in bytes."},
     CMXPY_ALWAYS},
    {{"set_cache_limit", (PyCFunction)(void (*)(void))py_set_cache_limit,
      METH_VARARGS | METH_KEYWORDS,
      "set_cache_limit($module, limit)\n--\n\nSet the free cache limit.\n\n"
      "Args:\n    limit (int): The cache limit in bytes (0 disables "
      "caching).\n\n"
      "Returns:\n    int: The previous cache limit in bytes."},
     CMXPY_ALWAYS},
    {{"set_wired_limit", (PyCFunction)(void (*)(void))py_set_wired_limit,
      METH_VARARGS | METH_KEYWORDS,
      "set_wired_limit($module, limit)\n--\n\nAccepted for compatibility "
      "with MLX (wired memory is a Metal notion); returns 0."},
     CMXPY_ALWAYS},
    {{"clear_cache", py_clear_cache, METH_NOARGS,
      "clear_cache($module, /)\n--\n\nClear the memory cache."},
     CMXPY_ALWAYS},
    {{"set_printoptions", (PyCFunction)(void (*)(void))py_set_printoptions,
      METH_VARARGS | METH_KEYWORDS,
      "set_printoptions($module, /, *, precision=None)\n--\n\nSet print "
      "options for arrays.\n\n"
      "Args:\n    precision (int, optional): Number of digits after the "
      "point for floating point values."},
     (const void*)cmx_set_printoptions},
    {{"get_printoptions", py_get_printoptions, METH_NOARGS,
      "get_printoptions($module, /)\n--\n\nThe current print options as a "
      "dict."},
     (const void*)cmx_get_printoptions_precision},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_memory(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, memory_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs || PyModule_AddFunctions(m, defs) < 0) return -1;
  if (CMXPY_HAS(cmx_set_printoptions) &&
      CMXPY_HAS(cmx_get_printoptions_precision)) {
    if (PyType_Ready(&CmxPrintOptions_Type) < 0) return -1;
    Py_INCREF(&CmxPrintOptions_Type);
    if (PyModule_AddObject(m, "printoptions",
                           (PyObject*)&CmxPrintOptions_Type) < 0)
      return -1;
  } else {
    cmxpy_note_missing("printoptions");
  }
  return 0;
}
