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
#include "args.h"

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

/* The result of a transform: (outputs, second) or outputs alone (second
 * NULL), or the exception (the callable's, else the cmx error). */
static PyObject* transform_result(cmx_status st, const cmx_array* outs, int no,
                                  const cmx_array* second, int ns) {
  if (!succeeded(st)) return fail(st);
  PyObject* o = list_of(outs, no);
  return second ? tuple2(o, list_of(second, ns)) : o;
}

CMXPY_DEF(_vjp,
          "(fun: object, primals: list[array], cotangents: list[array], /)",
          "Flat vjp: fun maps a list of arrays to a list of arrays. Returns "
          "(outputs, vjps).") {
  int np = A->v[1].n, no = 0;
  cmx_array *vjps = calloc((size_t)(np ? np : 1), sizeof *vjps), *outs = NULL;
  cmx_closure f = {call_python, OBJ(0)};
  cmx_status st = vjps ? cmx_vjp(f, ARRAYS(1), ARRAYS(2), &outs, &no, vjps)
                       : CMX_ERR_MEMORY;
  PyObject* r = transform_result(st, outs, no, vjps, np);
  cmx_arrays_free(outs, no);
  cmx_arrays_free(vjps, vjps ? np : 0);
  return r;
}

CMXPY_DEF(_jvp, "(fun: object, primals: list[array], tangents: list[array], /)",
          "Flat jvp. Returns (outputs, jvps).") {
  if (A->v[1].n != A->v[2].n)
    return PyErr_Format(PyExc_ValueError,
                        "[jvp] Number of inputs does not match number of "
                        "tangents (%d, %d).",
                        A->v[1].n, A->v[2].n);
  cmx_array *outs = NULL, *jvps = NULL;
  int no = 0;
  cmx_closure f = {call_python, OBJ(0)};
  cmx_status st = cmx_jvp(f, ARRAYS(1), A->v[2].arrays, &outs, &jvps, &no);
  PyObject* r = transform_result(st, outs, no, jvps, no);
  cmx_arrays_free(outs, no);
  cmx_arrays_free(jvps, no);
  return r;
}

/* A list of int-or-None -> ints (None: CMX_VMAP_NONE), malloc'ed. */
static int axes_of(PyObject* seq, int** out, int* n, const char* what) {
  PyObject* fast = PySequence_Fast(seq, what);
  if (!fast) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
  int* a = malloc((size_t)(len ? len : 1) * sizeof *a);
  int rc = a ? 0 : (PyErr_NoMemory(), -1);
  for (Py_ssize_t i = 0; !rc && i < len; i++) {
    PyObject* o = PySequence_Fast_GET_ITEM(fast, i);
    long v = o == Py_None ? CMX_VMAP_NONE : PyLong_AsLong(o);
    rc = v == -1 && PyErr_Occurred() ? -1 : 0;
    if (!rc) a[i] = (int)v;
  }
  Py_DECREF(fast);
  if (rc) free(a);
  *out = rc ? NULL : a;
  *n = (int)len;
  return rc;
}

CMXPY_DEF(_vmap,
          "(fun: object, inputs: list[array], in_axes: object, out_axes: "
          "object, /)",
          "Flat vmap: in_axes has an int or None per input; out_axes one int "
          "per output (or one for all). Returns the outputs.") {
  int ni = 0, no_ax = 0, no = 0;
  int *ia = NULL, *oa = NULL;
  PyObject* r = NULL;
  if (axes_of(OBJ(2), &ia, &ni, "in_axes") == 0 &&
      axes_of(OBJ(3), &oa, &no_ax, "out_axes") == 0) {
    if (ni != A->v[1].n) {
      PyErr_SetString(PyExc_ValueError,
                      "[vmap] in_axes must have one entry per input");
    } else {
      cmx_array* outs = NULL;
      cmx_closure f = {call_python, OBJ(0)};
      cmx_status st = cmx_vmap(f, ARRAYS(1), ia, oa, no_ax, &outs, &no);
      r = transform_result(st, outs, no, NULL, 0);
      cmx_arrays_free(outs, no);
    }
  }
  free(ia);
  free(oa);
  return r;
}

CMXPY_DEF(_value_and_grad, "(fun: object, inputs: list[array], /)",
          "Flat value_and_grad with respect to every input; fun's first "
          "output is the scalar loss, the rest are auxiliary. Returns "
          "(outputs, grads).") {
  int n = A->v[1].n, no = 0;
  int* argnums = malloc((size_t)(n ? n : 1) * sizeof *argnums);
  cmx_array *grads = calloc((size_t)(n ? n : 1), sizeof *grads), *outs = NULL;
  PyObject* r = NULL;
  if (!argnums || !grads) {
    PyErr_NoMemory();
  } else {
    for (int i = 0; i < n; i++) argnums[i] = i;
    cmx_closure f = {call_python, OBJ(0)};
    cmx_status st =
        cmx_value_and_grad(f, ARRAYS(1), argnums, n, &outs, &no, grads);
    r = transform_result(st, outs, no, grads, n);
    cmx_arrays_free(outs, no);
  }
  free(argnums);
  cmx_arrays_free(grads, grads ? n : 0);
  return r;
}

CMXPY_DEF(_custom_function,
          "(fun: object, vjp: object, jvp: object, vmap: object, inputs: "
          "list[array], /)",
          "Applies fun with the given flat rules (None: transform fun "
          "itself).") {
  cmx_custom_function cf = {.release = release_four};
  cmx_closure* slots[4] = {&cf.fun, &cf.vjp, &cf.jvp, &cf.vmap};
  for (int k = 0; k < 4; k++) {
    if (ISNONE(k)) continue;
    slots[k]->fn = call_python;
    slots[k]->payload = Py_NewRef(OBJ(k));
  }
  cmx_array* outs = NULL;
  int no = 0;
  cmx_status st = cmx_custom_function_apply(&cf, ARRAYS(4), &outs, &no);
  PyObject* r = transform_result(st, outs, no, NULL, 0);
  cmx_arrays_free(outs, no);
  return r;
}

CMXPY_DEF(_checkpoint, "(fun: object, inputs: list[array], /)",
          "Applies fun, recomputing it in the backward pass.") {
  cmx_closure f = {call_python, Py_NewRef(OBJ(0))};
  cmx_array* outs = NULL;
  int no = 0;
  cmx_status st =
      cmx_checkpoint_apply(f, release_payload, ARRAYS(1), &outs, &no);
  PyObject* r = transform_result(st, outs, no, NULL, 0);
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

CMXPY_DEF(_custom_vmap_axes, "()",
          "Inside a custom vmap rule: the in_axes of its inputs.") {
  (void)A;
  return int_list(cmx_custom_vmap_axes);
}

CMXPY_DEF(_custom_jvp_argnums, "()",
          "Inside a custom jvp rule: the indices of the inputs that have a "
          "tangent.") {
  (void)A;
  return int_list(cmx_custom_jvp_argnums);
}

int cmxpy_init_transforms(PyObject* m) {
  static cmxpy_spec* const functions[] = {&spec__vjp,
                                          &spec__jvp,
                                          &spec__vmap,
                                          &spec__value_and_grad,
                                          &spec__custom_function,
                                          &spec__checkpoint,
                                          &spec__custom_vmap_axes,
                                          &spec__custom_jvp_argnums};
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}

/* ---- for other areas (export.c): the closure trampoline and the
 * transform error path ---- */
cmx_status cmxpy_call_closure(void* fun, const cmx_array* in, int nin,
                              cmx_array** outputs, int* nout) {
  return call_python(fun, in, nin, outputs, nout);
}

PyObject* cmxpy_closure_result(cmx_status st) {
  return succeeded(st) ? Py_NewRef(Py_None) : fail(st);
}
