/* Indexing: a[key], a[key] = v and a.at[key].add(v) ... over
 * cmx_index_get / cmx_index_set / cmx_index_update, which take NumPy-style
 * index entries (ints, slices, None, Ellipsis, integer arrays, boolean
 * masks) and do all the index arithmetic.
 *
 * This file only turns a Python key into those entries: lists, NumPy
 * arrays and other array-likes become index arrays (masks when boolean),
 * Python slice bounds become int64 (clamped: past the end is past the end
 * however far). */
#include "cmxpy.h"

/* Entries of one key, with the arrays they own. */
typedef struct {
  cmx_index* ix;
  cmx_array* owned; /* arrays referenced by ix, released by key_clear */
  int n, nowned, cap;
} key_entries;

static void key_clear(key_entries* k) {
  cmx_array_release_all(k->owned, (size_t)k->nowned);
  PyMem_RawFree(k->owned);
  PyMem_RawFree(k->ix);
  k->ix = NULL;
  k->owned = NULL;
}

static int key_push(key_entries* k, cmx_index e, cmx_array owned) {
  if (k->n == k->cap) {
    int cap = k->cap ? 2 * k->cap : 8;
    cmx_index* ix = PyMem_RawRealloc(k->ix, (size_t)cap * sizeof *ix);
    cmx_array* ow =
        ix ? PyMem_RawRealloc(k->owned, (size_t)cap * sizeof *ow) : NULL;
    if (ix) k->ix = ix;
    if (ow) k->owned = ow;
    if (!ix || !ow) {
      cmx_array_release(owned);
      PyErr_NoMemory();
      return -1;
    }
    k->cap = cap;
  }
  k->ix[k->n++] = e;
  if (owned) k->owned[k->nowned++] = owned;
  return 0;
}

/* A slice bound: None -> CMX_SLICE_NONE, ints clamped to int64 (above the
 * sentinel). */
static int slice_bound(PyObject* o, int64_t* out) {
  if (o == Py_None) {
    *out = CMX_SLICE_NONE;
    return 0;
  }
  PyObject* i = PyNumber_Index(o);
  if (!i) {
    PyErr_SetString(PyExc_TypeError,
                    "slice indices must be integers or None or have an "
                    "__index__ method");
    return -1;
  }
  int overflow;
  long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
  Py_DECREF(i);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (overflow) v = overflow > 0 ? INT64_MAX : INT64_MIN + 1;
  if (v == INT64_MIN) v = INT64_MIN + 1;
  *out = (int64_t)v;
  return 0;
}

static bool is_index_array(PyObject* o) {
  if (CmxArray_Check(o) || PyList_Check(o)) return true;
  if (PyBytes_Check(o) || PyUnicode_Check(o) || PyByteArray_Check(o) ||
      PyTuple_Check(o))
    return false;
  return PyObject_HasAttrString(o, "__mlx_array__") ||
         PyObject_CheckBuffer(o) || PyObject_HasAttrString(o, "__array__");
}

/* Parses key into entries. A boolean array is a mask (an extension over
 * MLX, which has none): evaluated here with the GIL released, then
 * expanded by the C op into the coordinates of its true elements. */
static int parse_key(PyObject* key, key_entries* k, const char* what) {
  memset(k, 0, sizeof *k);
  PyObject* items =
      PyTuple_Check(key) ? (Py_INCREF(key), key) : PyTuple_Pack(1, key);
  if (!items) return -1;
  int rc = 0;
  for (Py_ssize_t i = 0; !rc && i < PyTuple_GET_SIZE(items); i++) {
    PyObject* e = PyTuple_GET_ITEM(items, i);
    if (PyBool_Check(e)) {
      PyErr_Format(PyExc_ValueError,
                   "[%s] Python bool indices are not supported.", what);
      rc = -1;
    } else if (e == Py_None) {
      rc = key_push(k, cmx_index_newaxis(), NULL);
    } else if (e == Py_Ellipsis) {
      rc = key_push(k, cmx_index_ellipsis(), NULL);
    } else if (PySlice_Check(e)) {
      PySliceObject* sl = (PySliceObject*)e;
      int64_t start, stop, step;
      rc = slice_bound(sl->start, &start) || slice_bound(sl->stop, &stop) ||
                   slice_bound(sl->step, &step)
               ? -1
               : key_push(k, cmx_index_slice(start, stop, step), NULL);
    } else if (!PyLong_Check(e) && is_index_array(e)) {
      /* before __index__: NumPy arrays have it */
      cmx_array arr = cmxpy_to_array(e, what);
      cmx_status st = CMX_OK;
      bool mask = arr && cmx_array_dtype(arr) == CMX_BOOL;
      if (mask && (st = cmxpy_eval(arr)) != CMX_OK) cmxpy_raise(st);
      rc = !arr || st != CMX_OK
               ? (cmx_array_release(arr), -1)
               : key_push(k, mask ? cmx_index_mask(arr) : cmx_index_array(arr),
                          arr);
    } else if (PyIndex_Check(e)) {
      Py_ssize_t v = PyNumber_AsSsize_t(e, PyExc_IndexError);
      rc = v == -1 && PyErr_Occurred() ? -1
                                       : key_push(k, cmx_index_int(v), NULL);
    } else {
      PyErr_SetString(PyExc_ValueError,
                      "Cannot index an array with this type: only integers, "
                      "slices (`:`), ellipsis (`...`), None "
                      "and integer or boolean arrays are valid indices");
      rc = -1;
    }
  }
  Py_DECREF(items);
  if (rc) key_clear(k);
  return rc;
}

static cmx_array index_array(cmx_array a, PyObject* key, const char* what) {
  key_entries k;
  if (parse_key(key, &k, what) < 0) return NULL;
  cmx_array out = NULL;
  cmx_status st = cmx_index_get(&out, a, k.ix, k.n, CMX_STREAM_DEFAULT);
  key_clear(&k);
  if (st != CMX_OK) {
    cmx_array_release(out);
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

PyObject* cmxpy_getitem(PyObject* self, PyObject* key) {
  return cmxpy_wrap(index_array(CMXPY_ARR(self), key, "getitem"));
}

cmx_array cmxpy_index_int(cmx_array a, int64_t i) {
  cmx_index e = cmx_index_int(i);
  cmx_array out = NULL;
  cmx_status st = cmx_index_get(&out, a, &e, 1, CMX_STREAM_DEFAULT);
  if (st != CMX_OK) {
    cmx_array_release(out);
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

/* a[mask] = v for a boolean array mask (a's shape or a prefix of it)
 * and a one-element v: where(mask, v, a), with no evaluation of the mask,
 * so it works inside vmap and compile (MLX's masked_scatter does). 1 when
 * done, 0 when the key or value is not of this kind, -1 on error. */
static int set_mask_scalar(PyObject* self, PyObject* key, PyObject* value) {
  cmx_array a = CMXPY_ARR(self);
  if (!CmxArray_Check(key) || cmx_array_dtype(CMXPY_ARR(key)) != CMX_BOOL)
    return 0;
  cmx_array m = CMXPY_ARR(key);
  int nd = cmx_array_ndim(a), md = cmx_array_ndim(m);
  if (md == 0 || md > nd) return 0;
  const int64_t* as = cmx_array_shape(a);
  const int64_t* ms = cmx_array_shape(m);
  for (int d = 0; d < md; d++)
    if (ms[d] != as[d]) return 0;
  if (CmxArray_Check(value) && cmx_array_size(CMXPY_ARR(value)) != 1) return 0;
  if (!CmxArray_Check(value) && !PyBool_Check(value) && !PyLong_Check(value) &&
      !PyFloat_Check(value) && !PyComplex_Check(value))
    return 0;
  cmx_array v = cmxpy_to_operand(value, cmx_array_dtype(a), "setitem");
  if (!v) return -1;
  int64_t shape[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) shape[d] = d < md ? ms[d] : 1;
  cmx_array mb = NULL, vs = NULL, w = NULL, out = NULL;
  int64_t one = 1;
  cmx_status st = cmx_reshape(&mb, m, shape, nd, CMX_STREAM_DEFAULT);
  if (st == CMX_OK) /* a one-element value of any shape */
    st = cmx_reshape(&vs, v, &one, 0, CMX_STREAM_DEFAULT);
  if (st == CMX_OK) st = cmx_where(&w, mb, vs, a, CMX_STREAM_DEFAULT);
  if (st == CMX_OK)
    st = cmx_astype(&out, w, cmx_array_dtype(a), CMX_STREAM_DEFAULT);
  cmx_array_release(v);
  cmx_array_release(mb);
  cmx_array_release(vs);
  cmx_array_release(w);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return -1;
  }
  cmxpy_array_replace(self, out);
  return 1;
}

int cmxpy_setitem(PyObject* self, PyObject* key, PyObject* value) {
  if (!value) {
    PyErr_SetString(PyExc_TypeError, "array items cannot be deleted");
    return -1;
  }
  int done = set_mask_scalar(self, key, value);
  if (done) return done < 0 ? -1 : 0;
  cmx_array a = CMXPY_ARR(self);
  key_entries k;
  if (parse_key(key, &k, "setitem") < 0) return -1;
  /* Python scalars are checked against the array's dtype as MLX does
   * (overflow); the C op converts the value to that dtype. */
  cmx_array v = cmxpy_to_operand(value, cmx_array_dtype(a), "setitem");
  cmx_array out = NULL;
  cmx_status st =
      v ? cmx_index_set(&out, a, k.ix, k.n, v, CMX_STREAM_DEFAULT) : CMX_OK;
  key_clear(&k);
  cmx_array_release(v);
  if (!v) return -1;
  if (st != CMX_OK) {
    cmx_array_release(out);
    cmxpy_raise(st);
    return -1;
  }
  cmxpy_array_replace(self, out);
  return 0;
}

/* ---------------- a.at[key] ---------------- */
typedef struct {
  PyObject_HEAD cmx_array arr;
  PyObject* key; /* NULL until indexed */
} CmxArrayAtObject;

static void at_dealloc(PyObject* self) {
  CmxArrayAtObject* at = (CmxArrayAtObject*)self;
  cmx_array_release(at->arr);
  Py_XDECREF(at->key);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* at_getitem(PyObject* self, PyObject* key) {
  CmxArrayAtObject* at = (CmxArrayAtObject*)self;
  Py_INCREF(key);
  Py_XSETREF(at->key, key);
  Py_INCREF(self);
  return self;
}

/* x with x[key] OP= value, every occurrence of a repeated index applied. */
static PyObject* at_apply(PyObject* self, PyObject* value,
                          cmx_index_update_op op, const char* name) {
  CmxArrayAtObject* at = (CmxArrayAtObject*)self;
  if (!at->key) {
    PyErr_Format(PyExc_ValueError,
                 "[at.%s] index the array first: a.at[idx].%s(v)", name, name);
    return NULL;
  }
  key_entries k;
  if (parse_key(at->key, &k, name) < 0) return NULL;
  cmx_array v = cmxpy_to_operand(value, cmx_array_dtype(at->arr), name);
  cmx_array out = NULL;
  cmx_status st =
      v ? cmx_index_update(&out, at->arr, k.ix, k.n, v, op, CMX_STREAM_DEFAULT)
        : CMX_OK;
  key_clear(&k);
  cmx_array_release(v);
  if (!v) return NULL;
  return cmxpy_result(st, &out);
}

#define AT_METHOD(name, op)                                     \
  static PyObject* at_##name(PyObject* self, PyObject* value) { \
    return at_apply(self, value, op, #name);                    \
  }
AT_METHOD(add, CMX_UPDATE_ADD)
AT_METHOD(subtract, CMX_UPDATE_SUBTRACT)
AT_METHOD(multiply, CMX_UPDATE_MULTIPLY)
AT_METHOD(divide, CMX_UPDATE_DIVIDE)
AT_METHOD(maximum, CMX_UPDATE_MAXIMUM)
AT_METHOD(minimum, CMX_UPDATE_MINIMUM)

static PyMethodDef at_methods[] = {
    {"add", at_add, METH_O,
     "add($self, value, /)\n--\n\nx[idx] + value (repeated indices "
     "accumulate)."},
    {"subtract", at_subtract, METH_O,
     "subtract($self, value, /)\n--\n\nx[idx] - value."},
    {"multiply", at_multiply, METH_O,
     "multiply($self, value, /)\n--\n\nx[idx] * value."},
    {"divide", at_divide, METH_O,
     "divide($self, value, /)\n--\n\nx[idx] / value."},
    {"maximum", at_maximum, METH_O,
     "maximum($self, value, /)\n--\n\nmaximum(x[idx], value)."},
    {"minimum", at_minimum, METH_O,
     "minimum($self, value, /)\n--\n\nminimum(x[idx], value)."},
    {NULL, NULL, 0, NULL}};

static PyMappingMethods at_mapping = {.mp_subscript = at_getitem};

static PyTypeObject CmxArrayAt_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.ArrayAt",
    .tp_basicsize = sizeof(CmxArrayAtObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A helper object to apply updates at specific indices; each "
        "method returns the updated array.",
    .tp_dealloc = at_dealloc,
    .tp_as_mapping = &at_mapping,
    .tp_methods = at_methods,
};

PyObject* cmxpy_array_at(PyObject* self, void* c) {
  (void)c;
  CmxArrayAtObject* at = PyObject_New(CmxArrayAtObject, &CmxArrayAt_Type);
  if (!at) return NULL;
  at->arr = cmx_array_retain(CMXPY_ARR(self));
  at->key = NULL;
  return (PyObject*)at;
}

int cmxpy_init_indexing(PyObject* m) {
  if (PyType_Ready(&CmxArrayAt_Type) < 0) return -1;
  Py_INCREF(&CmxArrayAt_Type);
  return PyModule_AddObject(m, "ArrayAt", (PyObject*)&CmxArrayAt_Type);
}
