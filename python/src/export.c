/* Graph export, the flat layer (include/cmx/export.h): exporters and
 * imported functions as capsules, functions as Python callables from a list
 * of arrays to a list of arrays. MLX's signatures (export_function,
 * import_function, exporter, export_to_dot, pytrees, keyword inputs) are in
 * cmx/_export.py.
 *
 *   core._exporter_new(path, metadata) -> capsule
 *   core._exporter_add(e, fun, args, kwnames, kwargs, shapeless)
 *   core._exporter_close(e)
 *   core._export_visit(fun, args, kwnames, kwargs, shapeless) -> items
 *   core._export_to_dot(outputs) -> str
 *   core._import_function(path) -> capsule
 *   core._imported_info(f) -> (metadata, number of traces)
 *   core._imported_call(f, args, kwnames, kwargs) -> list[array]
 */
#include "args.h"

#define EXPORTER "cmx.exporter"
#define IMPORTED "cmx.imported"

static void exporter_destruct(PyObject* cap) {
  cmx_exporter_free(PyCapsule_GetPointer(cap, EXPORTER));
}

static void imported_destruct(PyObject* cap) {
  cmx_imported_free(PyCapsule_GetPointer(cap, IMPORTED));
}

/* The UTF-8 names of a list of str, malloc'ed (borrowed strings); n set. */
static const char** names_of(PyObject* list, int* n) {
  if (!PyList_Check(list)) {
    PyErr_SetString(PyExc_TypeError, "keyword names must be a list of str");
    return NULL;
  }
  Py_ssize_t len = PyList_GET_SIZE(list);
  const char** v = malloc((size_t)(len ? len : 1) * sizeof *v);
  if (!v) return (const char**)PyErr_NoMemory();
  for (Py_ssize_t i = 0; i < len; i++) {
    PyObject* o = PyList_GET_ITEM(list, i);
    v[i] = PyUnicode_Check(o) ? PyUnicode_AsUTF8(o) : NULL;
    if (!v[i]) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "keyword names must be str");
      free(v);
      return NULL;
    }
  }
  *n = (int)len;
  return v;
}

static PyObject* arrays_list(cmx_array* a, int n) {
  PyObject* l = PyList_New(n);
  for (int i = 0; i < n; i++) {
    if (!l) {
      cmx_array_release(a[i]);
      continue;
    }
    PyObject* w = cmxpy_wrap(a[i]);
    if (!w)
      Py_CLEAR(l);
    else
      PyList_SET_ITEM(l, i, w);
  }
  free(a);
  return l;
}

CMXPY_DEF(_exporter_new, "(path: str, metadata: str, /)",
          "A new exporter writing path (nothing is written before close).") {
  cmx_exporter* e = NULL;
  cmx_status st = cmx_exporter_new(&e, STR(0), STR(1));
  if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* cap = PyCapsule_New(e, EXPORTER, exporter_destruct);
  if (!cap) cmx_exporter_free(e);
  return cap;
}

/* Runs add (exporting) or visit (describing) of a flat function. */
static PyObject* trace(cmxpy_args* A, cmx_exporter* e, int k,
                       cmx_export_visit_fn visit, void* payload) {
  int nkw = 0;
  const char** kw = names_of(OBJ(k + 2), &nkw);
  if (!kw) return NULL;
  if (nkw != A->v[k + 3].n) {
    free(kw);
    return PyErr_Format(PyExc_ValueError, "%d keyword names for %d arrays", nkw,
                        A->v[k + 3].n);
  }
  cmx_closure f = {cmxpy_call_closure, OBJ(k)};
  cmx_status st;
  if (e)
    st = cmx_exporter_add(e, f, ARRAYS(k + 1), kw, A->v[k + 3].arrays, nkw,
                          FLAG(k + 4));
  else
    st = cmx_export_visit(f, ARRAYS(k + 1), kw, A->v[k + 3].arrays, nkw,
                          FLAG(k + 4), visit, payload);
  free(kw);
  return cmxpy_closure_result(st);
}

CMXPY_DEF(_exporter_add,
          "(e: object, fun: object, args: list[array], kwnames: object, "
          "kwargs: list[array], shapeless: bool, /)",
          "Traces fun on stand-ins for args then kwargs and adds the "
          "trace.") {
  cmx_exporter* e = PyCapsule_GetPointer(OBJ(0), EXPORTER);
  return e ? trace(A, e, 1, NULL, NULL) : NULL;
}

CMXPY_DEF(_exporter_close, "(e: object, /)", "Writes the exporter's file.") {
  cmx_exporter* e = PyCapsule_GetPointer(OBJ(0), EXPORTER);
  if (!e) return NULL;
  cmx_status st = cmx_exporter_close(e);
  if (st != CMX_OK) return cmxpy_raise(st);
  Py_RETURN_NONE;
}

/* ---- describing: each item becomes a tuple appended to a list ---- */
static PyObject* value_tuple(const cmx_export_value* v) {
  PyObject* shape = PyTuple_New(v->ndim);
  for (int i = 0; shape && i < v->ndim; i++)
    PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(v->shape[i]));
  PyObject* dt = cmxpy_dtype_object(v->dtype);
  PyObject* arr =
      v->array ? cmxpy_wrap(cmx_array_retain(v->array)) : Py_NewRef(Py_None);
  if (!shape || !dt || !arr) {
    Py_XDECREF(shape), Py_XDECREF(dt), Py_XDECREF(arr);
    return NULL;
  }
  return Py_BuildValue("(sNNN)", v->name, shape, dt, arr);
}

static PyObject* values_list(const cmx_export_value* v, int n) {
  PyObject* l = PyList_New(n);
  for (int i = 0; l && i < n; i++) {
    PyObject* t = value_tuple(&v[i]);
    if (!t)
      Py_CLEAR(l);
    else
      PyList_SET_ITEM(l, i, t);
  }
  return l;
}

/* The visit callback: payload is the list of items. */
static cmx_status on_item(void* payload, const cmx_export_item* it) {
  PyObject* items = payload;
  static const char* const kinds[] = {"input", "constant", "primitive",
                                      "output"};
  PyObject* t = NULL;
  if (it->kind == CMX_EXPORT_OP)
    t = Py_BuildValue("(sssNN)", kinds[it->kind], it->op, it->describe,
                      values_list(it->in, it->nin),
                      values_list(it->out, it->nout));
  else if (it->kind == CMX_EXPORT_OUTPUT)
    t = Py_BuildValue("(sOON)", kinds[it->kind], Py_None, Py_None,
                      values_list(it->in, 1));
  else
    t = Py_BuildValue("(szON)", kinds[it->kind], it->keyword, Py_None,
                      values_list(it->out, 1));
  if (!t || PyList_Append(items, t) < 0) {
    Py_XDECREF(t);
    return CMXPY_ERR_SET; /* the Python error is set */
  }
  Py_DECREF(t);
  return CMX_OK;
}

CMXPY_DEF(_export_visit,
          "(fun: object, args: list[array], kwnames: object, kwargs: "
          "list[array], shapeless: bool, items: object, /)",
          "Traces fun and appends one tuple per item of the trace to items: "
          "(kind, name or keyword, description, inputs, outputs).") {
  if (!PyList_Check(OBJ(5)))
    return PyErr_Format(PyExc_TypeError, "items must be a list");
  return trace(A, NULL, 0, on_item, OBJ(5));
}

CMXPY_DEF(_export_to_dot, "(outputs: list[array], /)",
          "The graph computing outputs, in Graphviz dot.") {
  char* dot = NULL;
  cmx_status st = cmx_export_to_dot(ARRAYS(0), &dot);
  if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* s = PyUnicode_FromString(dot);
  cmx_free(dot);
  return s;
}

/* ---- importing: MLX raises RuntimeError for files it cannot import ---- */
CMXPY_DEF(_import_function, "(path: str, /)",
          "Reads and validates an exported function's file.") {
  cmx_imported* f = NULL;
  cmx_status st = cmx_import_function(&f, STR(0));
  if (st != CMX_OK) {
    PyErr_SetString(PyExc_RuntimeError, cmx_last_error());
    return NULL;
  }
  PyObject* cap = PyCapsule_New(f, IMPORTED, imported_destruct);
  if (!cap) cmx_imported_free(f);
  return cap;
}

CMXPY_DEF(_imported_info, "(f: object, /)",
          "(metadata, number of traces) of an imported function.") {
  cmx_imported* f = PyCapsule_GetPointer(OBJ(0), IMPORTED);
  if (!f) return NULL;
  return Py_BuildValue("(si)", cmx_imported_metadata(f),
                       cmx_imported_traces(f));
}

CMXPY_DEF(_imported_call,
          "(f: object, args: list[array], kwnames: object, kwargs: "
          "list[array], /)",
          "Runs the first trace matching the call; its outputs.") {
  cmx_imported* f = PyCapsule_GetPointer(OBJ(0), IMPORTED);
  if (!f) return NULL;
  int nkw = 0;
  const char** kw = names_of(OBJ(2), &nkw);
  if (!kw) return NULL;
  if (nkw != A->v[3].n) {
    free(kw);
    return PyErr_Format(PyExc_ValueError, "%d keyword names for %d arrays", nkw,
                        A->v[3].n);
  }
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_status st =
      cmx_imported_call(f, ARRAYS(1), kw, A->v[3].arrays, nkw, &outs, &nout);
  free(kw);
  if (st != CMX_OK) return cmxpy_raise(st);
  return arrays_list(outs, nout);
}

int cmxpy_init_export(PyObject* m) {
  static cmxpy_spec* const functions[] = {
      &spec__exporter_new,  &spec__exporter_add,  &spec__exporter_close,
      &spec__export_visit,  &spec__export_to_dot, &spec__import_function,
      &spec__imported_info, &spec__imported_call};
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
