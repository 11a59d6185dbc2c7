/* Function transforms, the flat layer: Python callables from a list of
 * arrays to a list of arrays become cmx_closures, and the C transforms
 * run on them. Pytrees, argnums/argnames and MLX's call signatures are in
 * cmx/_transforms.py, which exposes grad, value_and_grad, vjp, jvp, vmap,
 * custom_function and checkpoint on cmx.core.
 *
 *   core._vjp(fun, primals, cotangents) -> (outputs, vjps)
 *   core._jvp(fun, primals, tangents) -> (outputs, jvps)
 *   core._vmap(fun, inputs, in_axes, out_axes) -> outputs
 *   core._value_and_grad(fun, inputs) -> (outputs, grads)
 *   core._custom_function(fun, vjp, jvp, vmap, inputs) -> outputs
 *   core._checkpoint(fun, inputs) -> outputs
 *
 * A Python exception raised inside a callable is kept (per thread) while
 * the C transform unwinds, then raised again unchanged.
 */
#include "cmxpy.h"

/* The first Python exception raised by a callable during the current
 * transform call on this thread. */
static _Thread_local PyObject* tl_exc;

#if PY_VERSION_HEX >= 0x030C0000
static PyObject* take_exception(void) {
  return PyErr_GetRaisedException();
}
static void restore_exception(PyObject* e) {
  PyErr_SetRaisedException(e);
}
#else
/* Before 3.12 an exception is a (type, value, traceback) triple; keep it
 * as a tuple. */
static PyObject* take_exception(void) {
  PyObject *t, *v, *tb;
  PyErr_Fetch(&t, &v, &tb);
  PyErr_NormalizeException(&t, &v, &tb);
  PyObject* e =
      PyTuple_Pack(3, t ? t : Py_None, v ? v : Py_None, tb ? tb : Py_None);
  Py_XDECREF(t);
  Py_XDECREF(v);
  Py_XDECREF(tb);
  return e;
}
static void restore_exception(PyObject* e) {
  PyObject* t = PyTuple_GET_ITEM(e, 0);
  PyObject* v = PyTuple_GET_ITEM(e, 1);
  PyObject* tb = PyTuple_GET_ITEM(e, 2);
  PyErr_Restore(t == Py_None ? NULL : Py_NewRef(t),
                v == Py_None ? NULL : Py_NewRef(v),
                tb == Py_None ? NULL : Py_NewRef(tb));
  Py_DECREF(e);
}
#endif

static void keep_exception(void) {
  PyObject* e = take_exception();
  if (!tl_exc)
    tl_exc = e;
  else
    Py_XDECREF(e);
}

/* Whether a transform succeeded. A kept exception is then one the C side
 * handled (it never reaches the caller): it is dropped, so it cannot stand
 * in for a later, unrelated error. */
static bool succeeded(cmx_status st) {
  if (st != CMX_OK) return false;
  Py_CLEAR(tl_exc);
  return true;
}

/* Raises the kept Python exception if any, else the cmx error. */
static PyObject* fail(cmx_status st) {
  if (tl_exc) {
    PyObject* e = tl_exc;
    tl_exc = NULL;
    restore_exception(e);
    return NULL;
  }
  return cmxpy_raise(st);
}

static PyObject* list_of(const cmx_array* a, int n) {
  PyObject* l = PyList_New(n);
  if (!l) return NULL;
  for (int i = 0; i < n; i++) {
    PyObject* w = cmxpy_wrap(cmx_array_retain(a[i]));
    if (!w) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, i, w);
  }
  return l;
}

/* A sequence of arrays -> malloc'ed new references. */
static int arrays_of(PyObject* seq, cmx_array** out, int* n, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  cmx_array* a = malloc((size_t)(len ? len : 1) * sizeof *a);
  if (!a) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    if (!CmxArray_Check(o)) {
      PyErr_Format(PyExc_TypeError, "%s must contain only arrays, got %s", what,
                   Py_TYPE(o)->tp_name);
      for (Py_ssize_t j = 0; j < i; j++) cmx_array_release(a[j]);
      free(a);
      Py_DECREF(fast);
      return -1;
    }
    a[i] = cmx_array_retain(CMXPY_ARR(o));
  }
  Py_DECREF(fast);
  *out = a;
  *n = (int)len;
  return 0;
}

/* The closure trampoline: payload is a Python callable. */
static cmx_status call_python(void* payload, const cmx_array* in, int nin,
                              cmx_array** outputs, int* nout) {
  PyGILState_STATE g = PyGILState_Ensure();
  cmx_status st = CMX_OK;
  PyObject* args = list_of(in, nin);
  PyObject* res = args ? PyObject_CallOneArg((PyObject*)payload, args) : NULL;
  Py_XDECREF(args);
  if (!res || arrays_of(res, outputs, nout,
                        "the outputs of a transformed function") < 0) {
    keep_exception();
    st = CMX_ERR_RUNTIME;
  }
  Py_XDECREF(res);
  PyGILState_Release(g);
  if (st != CMX_OK) /* C callers see this; Python gets the exception */
    cmx_set_error(st, "[transform] the Python function raised an exception");
  return st;
}

static void release_payload(void* p) {
  if (!p) return;
  PyGILState_STATE g = PyGILState_Ensure();
  Py_DECREF((PyObject*)p);
  PyGILState_Release(g);
}

static void release_four(void* a, void* b, void* c, void* d) {
  release_payload(a);
  release_payload(b);
  release_payload(c);
  release_payload(d);
}

static PyObject* tuple2(PyObject* a, PyObject* b) {
  if (!a || !b) {
    Py_XDECREF(a);
    Py_XDECREF(b);
    return NULL;
  }
  PyObject* t = PyTuple_Pack(2, a, b);
  Py_DECREF(a);
  Py_DECREF(b);
  return t;
}

static PyObject* py_vjp(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *prims, *cots;
  if (!PyArg_ParseTuple(args, "OOO:_vjp", &fun, &prims, &cots)) return NULL;
  cmx_array *p = NULL, *c = NULL;
  int np = 0, nc = 0;
  if (arrays_of(prims, &p, &np, "primals") < 0) return NULL;
  if (arrays_of(cots, &c, &nc, "cotangents") < 0) {
    cmx_arrays_free(p, np);
    return NULL;
  }
  cmx_array* vjps = calloc((size_t)(np ? np : 1), sizeof *vjps);
  cmx_array* outs = NULL;
  int no = 0;
  cmx_closure f = {call_python, fun};
  cmx_status st =
      vjps ? cmx_vjp(f, p, np, c, nc, &outs, &no, vjps) : CMX_ERR_MEMORY;
  cmx_arrays_free(p, np);
  cmx_arrays_free(c, nc);
  PyObject* r = NULL;
  if (succeeded(st))
    r = tuple2(list_of(outs, no), list_of(vjps, np));
  else
    fail(st);
  cmx_arrays_free(outs, no);
  if (vjps)
    for (int i = 0; i < np; i++) cmx_array_release(vjps[i]);
  free(vjps);
  return r;
}

static PyObject* py_jvp(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *prims, *tans;
  if (!PyArg_ParseTuple(args, "OOO:_jvp", &fun, &prims, &tans)) return NULL;
  cmx_array *p = NULL, *t = NULL;
  int np = 0, nt = 0;
  if (arrays_of(prims, &p, &np, "primals") < 0) return NULL;
  if (arrays_of(tans, &t, &nt, "tangents") < 0) {
    cmx_arrays_free(p, np);
    return NULL;
  }
  if (nt != np) {
    cmx_arrays_free(p, np);
    cmx_arrays_free(t, nt);
    return PyErr_Format(PyExc_ValueError,
                        "[jvp] Number of inputs does not match number of "
                        "tangents (%d, %d).",
                        np, nt);
  }
  cmx_array *outs = NULL, *jvps = NULL;
  int no = 0;
  cmx_closure f = {call_python, fun};
  cmx_status st = cmx_jvp(f, p, np, t, &outs, &jvps, &no);
  cmx_arrays_free(p, np);
  cmx_arrays_free(t, nt);
  PyObject* r = NULL;
  if (succeeded(st))
    r = tuple2(list_of(outs, no), list_of(jvps, no));
  else
    fail(st);
  cmx_arrays_free(outs, no);
  cmx_arrays_free(jvps, no);
  return r;
}

/* A list of int-or-None -> ints (None: CMX_VMAP_NONE). */
static int axes_of(PyObject* seq, int** out, int* n, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  int* a = malloc((size_t)(len ? len : 1) * sizeof *a);
  if (!a) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    if (o == Py_None) {
      a[i] = CMX_VMAP_NONE;
      continue;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
      free(a);
      Py_DECREF(fast);
      return -1;
    }
    a[i] = (int)v;
  }
  Py_DECREF(fast);
  *out = a;
  *n = (int)len;
  return 0;
}

static PyObject* py_vmap(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *ins, *iax, *oax;
  if (!PyArg_ParseTuple(args, "OOOO:_vmap", &fun, &ins, &iax, &oax))
    return NULL;
  cmx_array* in = NULL;
  int n = 0, ni = 0, no_ax = 0;
  int *ia = NULL, *oa = NULL;
  if (arrays_of(ins, &in, &n, "inputs") < 0) return NULL;
  if (axes_of(iax, &ia, &ni, "in_axes") < 0 ||
      axes_of(oax, &oa, &no_ax, "out_axes") < 0) {
    cmx_arrays_free(in, n);
    free(ia);
    return NULL;
  }
  PyObject* r = NULL;
  if (ni != n) {
    PyErr_SetString(PyExc_ValueError,
                    "[vmap] in_axes must have one entry per input");
  } else {
    cmx_array* outs = NULL;
    int no = 0;
    cmx_closure f = {call_python, fun};
    cmx_status st = cmx_vmap(f, in, n, ia, oa, no_ax, &outs, &no);
    if (succeeded(st))
      r = list_of(outs, no);
    else
      fail(st);
    cmx_arrays_free(outs, no);
  }
  cmx_arrays_free(in, n);
  free(ia);
  free(oa);
  return r;
}

static PyObject* py_value_and_grad(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *ins;
  if (!PyArg_ParseTuple(args, "OO:_value_and_grad", &fun, &ins)) return NULL;
  cmx_array* in = NULL;
  int n = 0;
  if (arrays_of(ins, &in, &n, "inputs") < 0) return NULL;
  int* argnums = malloc((size_t)(n ? n : 1) * sizeof *argnums);
  cmx_array* grads = calloc((size_t)(n ? n : 1), sizeof *grads);
  PyObject* r = NULL;
  if (!argnums || !grads) {
    PyErr_NoMemory();
  } else {
    for (int i = 0; i < n; i++) argnums[i] = i;
    cmx_array* outs = NULL;
    int no = 0;
    cmx_closure f = {call_python, fun};
    cmx_status st = cmx_value_and_grad(f, in, n, argnums, n, &outs, &no, grads);
    if (succeeded(st))
      r = tuple2(list_of(outs, no), list_of(grads, n));
    else
      fail(st);
    cmx_arrays_free(outs, no);
    for (int i = 0; i < n; i++) cmx_array_release(grads[i]);
  }
  free(argnums);
  free(grads);
  cmx_arrays_free(in, n);
  return r;
}

static PyObject* py_custom_function(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *vjp, *jvp, *vmap, *ins;
  if (!PyArg_ParseTuple(args, "OOOOO:_custom_function", &fun, &vjp, &jvp, &vmap,
                        &ins))
    return NULL;
  cmx_array* in = NULL;
  int n = 0;
  if (arrays_of(ins, &in, &n, "inputs") < 0) return NULL;
  cmx_custom_function cf = {.release = release_four};
  PyObject* parts[4] = {fun, vjp, jvp, vmap};
  cmx_closure* slots[4] = {&cf.fun, &cf.vjp, &cf.jvp, &cf.vmap};
  for (int k = 0; k < 4; k++) {
    if (parts[k] == Py_None) continue;
    Py_INCREF(parts[k]);
    slots[k]->fn = call_python;
    slots[k]->payload = parts[k];
  }
  cmx_array* outs = NULL;
  int no = 0;
  cmx_status st = cmx_custom_function_apply(&cf, in, n, &outs, &no);
  cmx_arrays_free(in, n);
  PyObject* r = NULL;
  if (succeeded(st))
    r = list_of(outs, no);
  else
    fail(st);
  cmx_arrays_free(outs, no);
  return r;
}

static PyObject* py_checkpoint(PyObject* m, PyObject* args) {
  (void)m;
  PyObject *fun, *ins;
  if (!PyArg_ParseTuple(args, "OO:_checkpoint", &fun, &ins)) return NULL;
  cmx_array* in = NULL;
  int n = 0;
  if (arrays_of(ins, &in, &n, "inputs") < 0) return NULL;
  Py_INCREF(fun);
  cmx_closure f = {call_python, fun};
  cmx_array* outs = NULL;
  int no = 0;
  cmx_status st = cmx_checkpoint_apply(f, release_payload, in, n, &outs, &no);
  cmx_arrays_free(in, n);
  PyObject* r = NULL;
  if (succeeded(st))
    r = list_of(outs, no);
  else
    fail(st);
  cmx_arrays_free(outs, no);
  return r;
}

/* A list of n ints read by get(buf, max) (None for CMX_VMAP_NONE). */
static PyObject* int_list(int (*get)(int*, int)) {
  int n = get(NULL, 0);
  int* v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  if (!v) return PyErr_NoMemory();
  get(v, n);
  PyObject* l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject* o =
        v[i] == CMX_VMAP_NONE ? Py_NewRef(Py_None) : PyLong_FromLong(v[i]);
    if (!o) {
      Py_CLEAR(l);
      break;
    }
    PyList_SET_ITEM(l, i, o);
  }
  free(v);
  return l;
}

static PyObject* py_vmap_axes(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return int_list(cmx_custom_vmap_axes);
}

static PyObject* py_jvp_argnums(PyObject* m, PyObject* u) {
  (void)m, (void)u;
  return int_list(cmx_custom_jvp_argnums);
}

static PyMethodDef transform_methods[] = {
    {"_vjp", py_vjp, METH_VARARGS,
     "_vjp(fun, primals, cotangents)\n--\n\nFlat vjp: fun maps a list of "
     "arrays to a list of arrays. Returns (outputs, vjps)."},
    {"_jvp", py_jvp, METH_VARARGS,
     "_jvp(fun, primals, tangents)\n--\n\nFlat jvp. Returns (outputs, "
     "jvps)."},
    {"_vmap", py_vmap, METH_VARARGS,
     "_vmap(fun, inputs, in_axes, out_axes)\n--\n\nFlat vmap: in_axes has "
     "an int or None per input; out_axes one int per output (or one for "
     "all). Returns the outputs."},
    {"_value_and_grad", py_value_and_grad, METH_VARARGS,
     "_value_and_grad(fun, inputs)\n--\n\nFlat value_and_grad with respect "
     "to every input; fun's first output is the scalar loss, the rest are "
     "auxiliary. Returns (outputs, grads)."},
    {"_custom_function", py_custom_function, METH_VARARGS,
     "_custom_function(fun, vjp, jvp, vmap, inputs)\n--\n\nApplies fun "
     "with the given flat rules (None: transform fun itself)."},
    {"_checkpoint", py_checkpoint, METH_VARARGS,
     "_checkpoint(fun, inputs)\n--\n\nApplies fun, recomputing it in the "
     "backward pass."},
    {"_custom_vmap_axes", py_vmap_axes, METH_NOARGS,
     "_custom_vmap_axes()\n--\n\nInside a custom vmap rule: the in_axes of "
     "its inputs."},
    {"_custom_jvp_argnums", py_jvp_argnums, METH_NOARGS,
     "_custom_jvp_argnums()\n--\n\nInside a custom jvp rule: the indices "
     "of the inputs that have a tangent."},
    {NULL, NULL, 0, NULL}};

int cmxpy_init_transforms(PyObject* m) {
  return PyModule_AddFunctions(m, transform_methods);
}
