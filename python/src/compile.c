/* compile, the flat layer: a Python callable from a list of arrays to a
 * list of arrays becomes a cmx_compiled (include/cmx/compile.h). Trees,
 * constants, captured state and MLX's call signature are in
 * cmx/_compile.py, which exposes compile on cmx.core.
 *
 *   core._compiled(fun, id, shapeless, name) -> handle
 *   handle.call(arrays, key) -> (outputs, aux)   # key: bytes
 *   core._compile_set_aux(obj)    # inside a trace: kept with the trace
 *   core.disable_compile(), core.enable_compile(), core._compile_enabled()
 *   core._compile_stats() -> dict, core._compile_cache_size(n),
 *   core._compile_clear_cache()
 *
 * A Python exception raised while tracing is kept on the handle while the
 * C call unwinds, then raised again unchanged.
 */
#include "cmxpy.h"

typedef struct {
  PyObject_HEAD cmx_compiled* c;
  PyObject* fun;
  PyObject *exc_type, *exc_value, *exc_tb; /* raised while tracing */
} CompiledObject;

/* The closure: payload is the CompiledObject (borrowed: it outlives its
 * cmx_compiled). */
static cmx_status call_python(void* payload, const cmx_array* in, int nin,
                              cmx_array** outputs, int* nout) {
  CompiledObject* self = payload;
  PyObject* args = PyList_New(nin);
  for (int i = 0; args && i < nin; i++) {
    PyObject* w = cmxpy_wrap(cmx_array_retain(in[i]));
    if (!w) Py_CLEAR(args);
    if (args) PyList_SET_ITEM(args, i, w);
  }
  PyObject* res = args ? PyObject_CallOneArg(self->fun, args) : NULL;
  Py_XDECREF(args);
  PyObject* fast = res ? PySequence_Fast(res, "compiled outputs") : NULL;
  Py_XDECREF(res);
  cmx_status st = CMX_OK;
  if (fast) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    cmx_array* out = malloc((size_t)(n ? n : 1) * sizeof *out);
    for (Py_ssize_t i = 0; out && i < n; i++) {
      PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
      if (!CmxArray_Check(o)) {
        PyErr_SetString(PyExc_TypeError,
                        "[compile] compiled outputs must be arrays");
        for (Py_ssize_t j = 0; j < i; j++) cmx_array_release(out[j]);
        free(out);
        out = NULL;
        break;
      }
      out[i] = cmx_array_retain(CMXPY_ARR(o));
    }
    if (out) {
      *outputs = out;
      *nout = (int)n;
    } else if (!PyErr_Occurred()) {
      PyErr_NoMemory();
    }
    Py_DECREF(fast);
  }
  if (PyErr_Occurred()) {
    Py_CLEAR(self->exc_type);
    Py_CLEAR(self->exc_value);
    Py_CLEAR(self->exc_tb);
    PyErr_Fetch(&self->exc_type, &self->exc_value, &self->exc_tb);
    st = CMX_ERR_RUNTIME;
  }
  return st;
}

static void compiled_dealloc(CompiledObject* self) {
  cmx_compiled_release(self->c);
  Py_XDECREF(self->fun);
  Py_XDECREF(self->exc_type);
  Py_XDECREF(self->exc_value);
  Py_XDECREF(self->exc_tb);
  Py_TYPE(self)->tp_free((PyObject*)self);
}

static void release_aux(void* p) {
  PyGILState_STATE g = PyGILState_Ensure();
  Py_XDECREF((PyObject*)p);
  PyGILState_Release(g);
}

static PyObject* compiled_call(CompiledObject* self, PyObject* args) {
  PyObject* list;
  Py_buffer key;
  if (!PyArg_ParseTuple(args, "O!y*", &PyList_Type, &list, &key)) return NULL;
  Py_ssize_t n = PyList_GET_SIZE(list);
  cmx_array* in = malloc((size_t)(n ? n : 1) * sizeof *in);
  if (!in) {
    PyBuffer_Release(&key);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* o = PyList_GET_ITEM(list, i);
    if (!CmxArray_Check(o)) {
      free(in);
      PyBuffer_Release(&key);
      return PyErr_Format(PyExc_TypeError,
                          "[compile] inputs must be arrays, got %s",
                          Py_TYPE(o)->tp_name);
    }
    in[i] = CMXPY_ARR(o);
  }
  cmx_array* outs = NULL;
  int nout = 0;
  void* aux = NULL;
  cmx_status st = cmx_compiled_call_keyed(self->c, in, (int)n, key.buf,
                                          (size_t)key.len, &outs, &nout, &aux);
  free(in);
  PyBuffer_Release(&key);
  if (st != CMX_OK) {
    if (self->exc_type) {
      PyErr_Restore(self->exc_type, self->exc_value, self->exc_tb);
      self->exc_type = self->exc_value = self->exc_tb = NULL;
      return NULL;
    }
    return cmxpy_raise(st);
  }
  PyObject* l = PyList_New(nout);
  for (int i = 0; i < nout; i++) {
    PyObject* w = l ? cmxpy_wrap(outs[i]) : NULL;
    if (!w) {
      for (int j = i + (l ? 1 : 0); j < nout; j++) cmx_array_release(outs[j]);
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, i, w);
  }
  free(outs);
  if (!l) return NULL;
  return Py_BuildValue("(NO)", l, aux ? (PyObject*)aux : Py_None);
}

static PyMethodDef compiled_methods[] = {
    {"call", (PyCFunction)compiled_call, METH_VARARGS,
     "call(arrays, key) -> (outputs, aux)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject Compiled_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core._CompiledHandle",
    .tp_basicsize = sizeof(CompiledObject),
    .tp_dealloc = (destructor)compiled_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = compiled_methods,
    .tp_doc = "A compiled function's C handle (see cmx/_compile.py)."};

static PyObject* py_compiled(PyObject* m, PyObject* args) {
  (void)m;
  PyObject* fun;
  unsigned long long id;
  int shapeless;
  const char* name;
  if (!PyArg_ParseTuple(args, "OKps", &fun, &id, &shapeless, &name))
    return NULL;
  CompiledObject* self = PyObject_New(CompiledObject, &Compiled_Type);
  if (!self) return NULL;
  self->fun = Py_NewRef(fun);
  self->c = NULL;
  self->exc_type = self->exc_value = self->exc_tb = NULL;
  cmx_compile_options opt = {
      .shapeless = shapeless != 0, .id = (uint64_t)id, .name = name};
  cmx_status st = cmx_compile(&self->c, (cmx_closure){call_python, self}, &opt);
  if (st != CMX_OK) {
    Py_DECREF(self);
    return cmxpy_raise(st);
  }
  return (PyObject*)self;
}

static PyObject* py_set_aux(PyObject* m, PyObject* obj) {
  (void)m;
  Py_INCREF(obj);
  cmx_status st = cmx_compile_set_aux(obj, release_aux);
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject* py_disable(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_disable_compile();
  Py_RETURN_NONE;
}

static PyObject* py_enable(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_enable_compile();
  Py_RETURN_NONE;
}

static PyObject* py_enabled(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return PyBool_FromLong(cmx_compile_enabled());
}

static PyObject* py_stats(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_compile_stats s;
  cmx_compile_stats_get(&s);
  return Py_BuildValue("{sKsKsKsKsKsKsKsKsK}", "traces", s.traces, "hits",
                       s.hits, "evictions", s.evictions, "entries", s.entries,
                       "fused", s.fused, "kernels_built", s.kernels_built,
                       "disk_hits", s.disk_hits, "disk_rejects", s.disk_rejects,
                       "memory_hits", s.memory_hits);
}

static PyObject* py_cache_size(PyObject* m, PyObject* arg) {
  (void)m;
  int n = (int)PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  cmx_status st = cmx_compile_set_cache_size(n);
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

static PyObject* py_clear(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  cmx_compile_clear_cache();
  Py_RETURN_NONE;
}

static PyMethodDef compile_functions[] = {
    {"_compiled", py_compiled, METH_VARARGS,
     "_compiled(fun, id, shapeless, name) -> handle"},
    {"_compile_set_aux", py_set_aux, METH_O,
     "_compile_set_aux(obj): keeps obj with the trace being made"},
    {"disable_compile", py_disable, METH_NOARGS,
     "disable_compile($module, /)\n--\n\nGlobally disable compilation. "
     "Setting the environment variable ``MLX_DISABLE_COMPILE`` (or "
     "``CMX_DISABLE_COMPILE``) also disables compilation."},
    {"enable_compile", py_enable, METH_NOARGS,
     "enable_compile($module, /)\n--\n\nGlobally enable compilation. This "
     "will override the environment variable ``MLX_DISABLE_COMPILE`` if "
     "set."},
    {"_compile_enabled", py_enabled, METH_NOARGS, "Whether compile is on."},
    {"_compile_stats", py_stats, METH_NOARGS,
     "Counters of compile (traces, cache hits, kernels built ...)."},
    {"_compile_cache_size", py_cache_size, METH_O,
     "Sets how many traces the compile cache keeps."},
    {"_compile_clear_cache", py_clear, METH_NOARGS,
     "Drops every cached trace."},
    {NULL, NULL, 0, NULL}};

int cmxpy_init_compile(PyObject* m) {
  if (PyType_Ready(&Compiled_Type) < 0) return -1;
  return PyModule_AddFunctions(m, compile_functions);
}
