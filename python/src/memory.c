/* Memory statistics and limits (mx.get_active_memory ...) and print
 * options (mx.set_printoptions, the mx.printoptions context). */
#include "args.h"
/* after Python.h (args.h) */
#include <structmember.h>

/* _fail_after(n): for the fuzzer (tests/fuzz/pyfuzz.py), see
 * cmx_debug_fail_after. Private: not part of mlx.core's API. */
static PyObject* impl_fail_after(cmxpy_args* A);
CMXPY_SPEC_FULL(fail_after, "_fail_after", "(n: int, /) -> None",
                "For tests: the n-th array made from now on by this thread "
                "fails with MemoryError (0: off).",
                impl_fail_after, NULL, 0, NULL)
static PyObject* impl_fail_after(cmxpy_args* A) {
  cmx_debug_fail_after(I64(0));
  Py_RETURN_NONE;
}

#define SIZE_FN(name, expr, doc)      \
  CMXPY_DEF(name, "() -> int", doc) { \
    (void)A;                          \
    return PyLong_FromSize_t(expr);   \
  }
SIZE_FN(get_active_memory, cmx_get_active_memory(),
        "Get the actively used memory in bytes (buffers held by arrays; the "
        "cache is not included).")
SIZE_FN(get_peak_memory, cmx_get_peak_memory(),
        "Get the peak amount of used memory in bytes since the program "
        "started or :func:`reset_peak_memory`.")
SIZE_FN(get_cache_memory, cmx_get_cache_memory(),
        "Get the cache size in bytes (freed buffers kept for reuse).")
SIZE_FN(get_memory_limit, cmx_get_memory_limit(),
        "Get the memory limit in bytes.")

CMXPY_DEF(reset_peak_memory, "() -> None",
          "Reset the peak memory to the current active memory.") {
  (void)A;
  cmx_reset_peak_memory();
  Py_RETURN_NONE;
}

CMXPY_DEF(clear_cache, "() -> None", "Clear the memory cache.") {
  (void)A;
  cmx_clear_cache();
  Py_RETURN_NONE;
}

/* The byte count of a limit argument (beyond size_t: no limit). */
static int limit_arg(cmxpy_args* A, size_t* out) {
  if (I64(0) < 0) {
    PyErr_Format(PyExc_ValueError,
                 "[%s] limit must be a non-negative number of bytes",
                 A->spec->name);
    return -1;
  }
  *out =
      A->v[0].exact && (uint64_t)I64(0) <= SIZE_MAX ? (size_t)I64(0) : SIZE_MAX;
  return 0;
}

typedef cmx_status (*limit_fn)(size_t, size_t*);
static PyObject* set_limit(cmxpy_args* A) {
  size_t limit, prev = 0;
  if (limit_arg(A, &limit) < 0) return NULL;
  cmx_status st = DATA(limit_fn)(limit, &prev);
  if (st != CMX_OK) return cmxpy_raise(st);
  return PyLong_FromSize_t(prev);
}
CMXPY_FN(set_memory_limit, "(limit: int) -> int", set_limit,
         cmx_set_memory_limit,
         "Set the memory limit.\n\n"
         "Allocations past the limit raise MemoryError from the op or "
         "eval that needed them; arrays whose eval failed so compute again "
         "once the limit is raised. The limit is taken as given, as in MLX: "
         "0 is a limit of 0 bytes (the default is the machine's memory).\n\n"
         "Args:\n    limit (int): Memory limit in bytes.\n\n"
         "Returns:\n    int: The previous memory limit in bytes.")
CMXPY_FN(set_cache_limit, "(limit: int) -> int", set_limit, cmx_set_cache_limit,
         "Set the free cache limit.\n\n"
         "Args:\n    limit (int): The cache limit in bytes (0 disables "
         "caching).\n\n"
         "Returns:\n    int: The previous cache limit in bytes.")

/* Wired memory is a Metal notion; kept for source compatibility. */
CMXPY_DEF(set_wired_limit, "(limit: int) -> int",
          "Accepted for compatibility with MLX (wired memory is a Metal "
          "notion); returns 0.") {
  size_t limit;
  return limit_arg(A, &limit) < 0 ? NULL : PyLong_FromLong(0);
}

/* ---------------- print options ----------------
 * As MLX: precision -1 (the default) prints the shortest round-trip
 * form; other negative values print 6 decimals. */
static int precision_arg(PyObject* o, int* out, const char* fname) {
  return cmxpy_int_arg(o, out, fname, "precision");
}

CMXPY_DEF(set_printoptions, "(precision: int = -1) -> None",
          "Set print options for arrays.\n\n"
          "Args:\n    precision (int, optional): Number of digits after the "
          "point for floating point values (-1: as many as needed to read "
          "the value back).") {
  cmx_status st = cmx_set_printoptions(INT(0));
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

/* ---- PrintOptions: what get_printoptions returns ---- */
typedef struct {
  PyObject_HEAD int precision;
} CmxPrintOptionsValueObject;

static PyMemberDef pov_members[] = {
    {"precision", T_INT, offsetof(CmxPrintOptionsValueObject, precision), 0,
     "Digits after the point for floating point values (-1: shortest)."},
    {NULL, 0, 0, 0, NULL}};

static PyObject* pov_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"precision", NULL};
  int prec = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|i:PrintOptions", kwlist, &prec))
    return NULL;
  CmxPrintOptionsValueObject* self =
      (CmxPrintOptionsValueObject*)type->tp_alloc(type, 0);
  if (self) self->precision = prec;
  return (PyObject*)self;
}

static PyTypeObject CmxPrintOptionsValue_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.PrintOptions",
    .tp_basicsize = sizeof(CmxPrintOptionsValueObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "PrintOptions(precision=-1)\n--\n\nThe print options of "
        "arrays (see :func:`get_printoptions`).",
    .tp_new = pov_new,
    .tp_members = pov_members,
};

CMXPY_DEF(get_printoptions, "() -> PrintOptions",
          "The current print options (a :class:`PrintOptions`).") {
  (void)A;
  CmxPrintOptionsValueObject* o =
      PyObject_New(CmxPrintOptionsValueObject, &CmxPrintOptionsValue_Type);
  if (o) o->precision = cmx_get_printoptions_precision();
  return (PyObject*)o;
}

typedef struct {
  PyObject_HEAD int precision;
  int saved[8];
  int depth;
} CmxPrintOptionsObject;

static PyObject* popts_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"precision", NULL};
  PyObject* p = NULL;
  int prec = -1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:printoptions", kwlist, &p) ||
      (p && precision_arg(p, &prec, "printoptions") < 0))
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
  cmx_status st = cmx_set_printoptions(self->precision);
  if (st != CMX_OK) {
    self->depth--;
    return cmxpy_raise(st);
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
        "printoptions(precision=-1)\n--\n\nA context manager that "
        "sets print options (as :func:`set_printoptions`) and restores "
        "them on exit.\n\n"
        "Example:\n    >>> with mx.printoptions(precision=2):\n"
        "    ...     print(mx.array([1.2345]))\n    array([1.23], "
        "dtype=float32)",
    .tp_new = popts_new,
    .tp_methods = popts_methods,
};

static cmxpy_spec* const memory_functions[] = {
    &spec_fail_after,
    &spec_get_active_memory, &spec_get_peak_memory,  &spec_reset_peak_memory,
    &spec_get_cache_memory,  &spec_get_memory_limit, &spec_set_memory_limit,
    &spec_set_cache_limit,   &spec_set_wired_limit,  &spec_clear_cache,
    &spec_set_printoptions,  &spec_get_printoptions};

int cmxpy_init_memory(PyObject* m) {
  if (cmxpy_add_functions(m, memory_functions, CMXPY_COUNT(memory_functions)) <
          0 ||
      PyType_Ready(&CmxPrintOptions_Type) < 0 ||
      PyType_Ready(&CmxPrintOptionsValue_Type) < 0)
    return -1;
  Py_INCREF(&CmxPrintOptionsValue_Type);
  if (PyModule_AddObject(m, "PrintOptions",
                         (PyObject*)&CmxPrintOptionsValue_Type) < 0)
    return -1;
  Py_INCREF(&CmxPrintOptions_Type);
  return PyModule_AddObject(m, "printoptions",
                            (PyObject*)&CmxPrintOptions_Type);
}
