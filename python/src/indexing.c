/* Indexing: a[key], a[key] = v and a.at[key].add(v) ...
 *
 * Basic indices (ints, slices with steps, Ellipsis, None, tuples of these)
 * become one cmx_slice of the input plus one cmx_reshape that drops the
 * integer-indexed axes and inserts the None axes; assignment is one
 * cmx_slice_update whose update is broadcast to a[key].shape and laid out
 * in the sliced region's shape. Integer out-of-range indices raise
 * IndexError as NumPy does. Array (advanced) indices need gather/scatter,
 * which libcmx does not have yet: they raise NotImplementedError. */
#include "cmxpy.h"

typedef struct {
  int nd_in;                   /* rank of the indexed array */
  int64_t start[CMX_MAX_NDIM]; /* per input axis, for cmx_slice */
  int64_t stop[CMX_MAX_NDIM];
  int64_t step[CMX_MAX_NDIM];
  int64_t len[CMX_MAX_NDIM]; /* sliced length per input axis */
  bool is_int[CMX_MAX_NDIM]; /* axis indexed by an integer (dropped) */
  bool sliced;               /* some axis is not the full range */
  int nd_out;                /* rank of a[key] */
  int src[CMX_MAX_NDIM];     /* per output axis: input axis or -1 (None) */
  int64_t out_shape[CMX_MAX_NDIM];
} basic_index;

enum { IDX_OK = 0, IDX_ERROR = -1, IDX_ADVANCED = 1 };

static bool is_advanced(PyObject* o) {
  return CmxArray_Check(o) || PyList_Check(o) ||
         PyObject_HasAttrString(o, "__mlx_array__") ||
         (PyObject_CheckBuffer(o) && !PyBytes_Check(o) && !PyUnicode_Check(o) &&
          !PyByteArray_Check(o));
}

/* Parses key against shape; IDX_ADVANCED when it holds array indices. */
static int parse_index(PyObject* key, const int64_t* shape, int nd,
                       basic_index* ix) {
  PyObject* items;
  if (PyTuple_Check(key)) {
    items = key;
    Py_INCREF(items);
  } else {
    items = PyTuple_Pack(1, key);
    if (!items) return IDX_ERROR;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(items);
  int consumed = 0, ellipsis = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* e = PyTuple_GET_ITEM(items, i);
    if (e == Py_Ellipsis)
      ellipsis++;
    else if (e == Py_None)
      continue;
    else if (PyBool_Check(e)) {
      Py_DECREF(items);
      PyErr_SetString(PyExc_ValueError,
                      "[getitem] boolean indices are not supported.");
      return IDX_ERROR;
    } else if (PySlice_Check(e) || PyIndex_Check(e))
      consumed++;
    else if (is_advanced(e)) {
      Py_DECREF(items);
      return IDX_ADVANCED;
    } else {
      Py_DECREF(items);
      PyErr_SetString(PyExc_IndexError,
                      "only integers, slices (`:`), ellipsis (`...`), None "
                      "and integer arrays are valid indices");
      return IDX_ERROR;
    }
  }
  if (ellipsis > 1) {
    Py_DECREF(items);
    PyErr_SetString(PyExc_IndexError,
                    "an index can only have a single ellipsis ('...')");
    return IDX_ERROR;
  }
  if (consumed > nd) {
    Py_DECREF(items);
    PyErr_Format(PyExc_IndexError,
                 "too many indices for array: array is %d-dimensional, but %d "
                 "were indexed",
                 nd, consumed);
    return IDX_ERROR;
  }
  ix->nd_in = nd;
  ix->sliced = false;
  ix->nd_out = 0;
  int axis = 0;
  for (Py_ssize_t i = 0; i <= n; i++) {
    /* After the last entry, the remaining axes are taken whole. */
    PyObject* e = i < n ? PyTuple_GET_ITEM(items, i) : NULL;
    if (!e || e == Py_Ellipsis) {
      int take = e ? nd - consumed : nd - axis;
      for (int k = 0; k < take; k++, axis++) {
        ix->start[axis] = 0;
        ix->stop[axis] = shape[axis];
        ix->step[axis] = 1;
        ix->len[axis] = shape[axis];
        ix->is_int[axis] = false;
        if (ix->nd_out == CMX_MAX_NDIM) goto too_many;
        ix->src[ix->nd_out] = axis;
        ix->out_shape[ix->nd_out++] = shape[axis];
      }
      continue;
    }
    if (e == Py_None) {
      if (ix->nd_out == CMX_MAX_NDIM) goto too_many;
      ix->src[ix->nd_out] = -1;
      ix->out_shape[ix->nd_out++] = 1;
      continue;
    }
    int64_t dim = shape[axis];
    if (PySlice_Check(e)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(e, &start, &stop, &step) < 0) goto fail;
      Py_ssize_t len =
          PySlice_AdjustIndices((Py_ssize_t)dim, &start, &stop, step);
      if (len == 0) {
        start = stop = 0;
        step = 1;
      } else if (step < 0 && stop < 0) {
        /* "before element 0": -(dim + 1) reads the same whether negative
         * bounds are taken as offsets from the end or clamped. */
        stop = -(Py_ssize_t)dim - 1;
      }
      ix->start[axis] = start;
      ix->stop[axis] = stop;
      ix->step[axis] = step;
      ix->len[axis] = len;
      ix->is_int[axis] = false;
      if (len != dim || step != 1) ix->sliced = true;
      if (ix->nd_out == CMX_MAX_NDIM) goto too_many;
      ix->src[ix->nd_out] = axis;
      ix->out_shape[ix->nd_out++] = len;
    } else {
      Py_ssize_t v = PyNumber_AsSsize_t(e, PyExc_IndexError);
      if (v == -1 && PyErr_Occurred()) goto fail;
      if (v < -dim || v >= dim) {
        PyErr_Format(PyExc_IndexError,
                     "index %zd is out of bounds for axis %d with size %lld", v,
                     axis, (long long)dim);
        goto fail;
      }
      if (v < 0) v += (Py_ssize_t)dim;
      ix->start[axis] = v;
      ix->stop[axis] = v + 1;
      ix->step[axis] = 1;
      ix->len[axis] = 1;
      ix->is_int[axis] = true;
      if (dim != 1) ix->sliced = true;
    }
    axis++;
  }
  Py_DECREF(items);
  return IDX_OK;
too_many:
  PyErr_SetString(PyExc_IndexError, "too many dimensions in the index");
fail:
  Py_DECREF(items);
  return IDX_ERROR;
}

static PyObject* advanced_unsupported(const char* what) {
  PyErr_Format(PyExc_NotImplementedError,
               "[%s] indexing with arrays needs gather/scatter, which this "
               "build of libcmx does not have yet",
               what);
  return NULL;
}

static bool same_shape(const int64_t* a, int na, const int64_t* b, int nb) {
  if (na != nb) return false;
  for (int i = 0; i < na; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* a[ix] as a new reference (NULL with the exception set). */
static cmx_array apply_basic(cmx_array a, const basic_index* ix) {
  cmx_array cur = cmx_array_retain(a), next = NULL;
  cmx_status st = CMX_OK;
  if (ix->sliced) {
    if (!CMXPY_HAS(cmx_slice)) {
      cmx_array_release(cur);
      cmxpy_missing("cmx_slice");
      return NULL;
    }
    st = cmx_slice(&next, cur, ix->start, ix->stop, ix->step,
                   CMX_STREAM_DEFAULT);
    cmx_array_release(cur);
    cur = next;
  }
  if (st == CMX_OK && !same_shape(cmx_array_shape(cur), cmx_array_ndim(cur),
                                  ix->out_shape, ix->nd_out)) {
    if (!CMXPY_HAS(cmx_reshape)) {
      cmx_array_release(cur);
      cmxpy_missing("cmx_reshape");
      return NULL;
    }
    st = cmx_reshape(&next, cur, ix->out_shape, ix->nd_out, CMX_STREAM_DEFAULT);
    cmx_array_release(cur);
    cur = next;
  }
  if (st != CMX_OK) {
    cmx_array_release(cur);
    cmxpy_raise(st);
    return NULL;
  }
  return cur;
}

static cmx_array index_array(cmx_array a, PyObject* key, const char* what) {
  basic_index ix;
  int r = parse_index(key, cmx_array_shape(a), cmx_array_ndim(a), &ix);
  if (r == IDX_ADVANCED) advanced_unsupported(what);
  if (r != IDX_OK) return NULL;
  return apply_basic(a, &ix);
}

PyObject* cmxpy_getitem(PyObject* self, PyObject* key) {
  return cmxpy_wrap(index_array(CMXPY_ARR(self), key, "getitem"));
}

cmx_array cmxpy_index_int(cmx_array a, int64_t i) {
  PyObject* key = PyLong_FromLongLong(i);
  if (!key) return NULL;
  cmx_array r = index_array(a, key, "iter");
  Py_DECREF(key);
  return r;
}

/* src with src[ix] = update, as a new array (NULL with the exception). */
static cmx_array update_basic(cmx_array src, const basic_index* ix,
                              cmx_array upd, const char* what) {
  if (!CMXPY_HAS(cmx_slice_update) || !CMXPY_HAS(cmx_reshape)) {
    cmxpy_missing(CMXPY_HAS(cmx_reshape) ? "cmx_slice_update" : "cmx_reshape");
    return NULL;
  }
  /* Broadcast the update against a[key].shape (right-aligned)... */
  int und = cmx_array_ndim(upd);
  const int64_t* ush = cmx_array_shape(upd);
  int64_t ex[CMX_MAX_NDIM];
  int lead = und - ix->nd_out; /* extra leading update dims must be 1 */
  for (int k = 0; k < lead; k++)
    if (ush[k] != 1) goto bad_shape;
  for (int k = 0; k < ix->nd_out; k++) {
    int j = k - (ix->nd_out - und);
    ex[k] = j >= 0 ? ush[j] : 1;
    if (ex[k] != 1 && ex[k] != ix->out_shape[k]) goto bad_shape;
  }
  /* ...then lay it out in the sliced region's shape: integer-indexed axes
   * become size 1, None axes (size 1 in the update) disappear. */
  int64_t lay[CMX_MAX_NDIM];
  int o = 0;
  for (int axis = 0; axis < ix->nd_in; axis++) {
    if (ix->is_int[axis]) {
      lay[axis] = 1;
      continue;
    }
    while (o < ix->nd_out && ix->src[o] != axis) o++;
    lay[axis] = o < ix->nd_out ? ex[o++] : 1;
  }
  cmx_array u = NULL, out = NULL;
  cmx_status st;
  if (same_shape(ush, und, lay, ix->nd_in)) {
    u = cmx_array_retain(upd);
    st = CMX_OK;
  } else {
    st = cmx_reshape(&u, upd, lay, ix->nd_in, CMX_STREAM_DEFAULT);
  }
  if (st == CMX_OK)
    st = cmx_slice_update(&out, src, u, ix->start, ix->stop, ix->step,
                          CMX_STREAM_DEFAULT);
  cmx_array_release(u);
  if (st != CMX_OK) {
    cmx_array_release(out);
    cmxpy_raise(st);
    return NULL;
  }
  return out;
bad_shape : {
  PyObject* us = cmxpy_shape_tuple(ush, und);
  PyObject* ts = cmxpy_shape_tuple(ix->out_shape, ix->nd_out);
  if (us && ts)
    PyErr_Format(PyExc_ValueError,
                 "[%s] cannot broadcast an update of shape %R to the indexed "
                 "shape %R",
                 what, us, ts);
  Py_XDECREF(us);
  Py_XDECREF(ts);
  return NULL;
}
}

/* The update value as an array of src's dtype (MLX converts it). */
static cmx_array update_value(PyObject* value, cmx_dtype t, const char* what) {
  cmx_array v = cmxpy_to_operand(value, t, what);
  if (!v || cmx_array_dtype(v) == t) return v;
  cmx_array c = NULL;
  cmx_status st = cmxpy_astype(&c, v, t, CMX_STREAM_DEFAULT);
  cmx_array_release(v);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return c;
}

int cmxpy_setitem(PyObject* self, PyObject* key, PyObject* value) {
  if (!value) {
    PyErr_SetString(PyExc_TypeError, "array items cannot be deleted");
    return -1;
  }
  cmx_array a = CMXPY_ARR(self);
  basic_index ix;
  int r = parse_index(key, cmx_array_shape(a), cmx_array_ndim(a), &ix);
  if (r == IDX_ADVANCED) advanced_unsupported("setitem");
  if (r != IDX_OK) return -1;
  cmx_array v = update_value(value, cmx_array_dtype(a), "setitem");
  if (!v) return -1;
  cmx_array out = update_basic(a, &ix, v, "setitem");
  cmx_array_release(v);
  if (!out) return -1;
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

typedef cmx_status (*binary_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);

/* x with x[key] = f(x[key], value); duplicates in array indices would need
 * scatter (they accumulate in MLX), so only basic indices are handled. */
static PyObject* at_apply(PyObject* self, PyObject* value, binary_fn f,
                          const char* name, const char* cname) {
  CmxArrayAtObject* at = (CmxArrayAtObject*)self;
  if (!at->key) {
    PyErr_Format(PyExc_ValueError,
                 "[at.%s] index the array first: a.at[idx].%s(v)", name, name);
    return NULL;
  }
  if (!f) return cmxpy_missing(cname);
  basic_index ix;
  int r = parse_index(at->key, cmx_array_shape(at->arr),
                      cmx_array_ndim(at->arr), &ix);
  if (r == IDX_ADVANCED) return advanced_unsupported(name);
  if (r != IDX_OK) return NULL;
  cmx_array cur = apply_basic(at->arr, &ix);
  if (!cur) return NULL;
  cmx_array v = cmxpy_to_operand(value, cmx_array_dtype(cur), name);
  cmx_array res = NULL, out = NULL;
  cmx_status st = v ? f(&res, cur, v, CMX_STREAM_DEFAULT) : CMX_OK;
  cmx_array_release(cur);
  cmx_array_release(v);
  if (!v) return NULL;
  if (st != CMX_OK) {
    cmx_array_release(res);
    return cmxpy_raise(st);
  }
  cmx_dtype t = cmx_array_dtype(at->arr);
  if (cmx_array_dtype(res) != t) {
    cmx_array c = NULL;
    st = cmxpy_astype(&c, res, t, CMX_STREAM_DEFAULT);
    cmx_array_release(res);
    if (st != CMX_OK) return cmxpy_raise(st);
    res = c;
  }
  out = update_basic(at->arr, &ix, res, name);
  cmx_array_release(res);
  return cmxpy_wrap(out);
}

#define AT_METHOD(name, cfn)                                    \
  static PyObject* at_##name(PyObject* self, PyObject* value) { \
    return at_apply(self, value, cfn, #name, #cfn);             \
  }
AT_METHOD(add, cmx_add)
AT_METHOD(subtract, cmx_subtract)
AT_METHOD(multiply, cmx_multiply)
AT_METHOD(divide, cmx_divide)
AT_METHOD(maximum, cmx_maximum)
AT_METHOD(minimum, cmx_minimum)

static PyMethodDef at_methods[] = {
    {"add", at_add, METH_O, "add($self, value, /)\n--\n\nx[idx] + value."},
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

const cmxpy_def cmxpy_index_methods[] = {{{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_indexing(PyObject* m) {
  if (PyType_Ready(&CmxArrayAt_Type) < 0) return -1;
  Py_INCREF(&CmxArrayAt_Type);
  return PyModule_AddObject(m, "ArrayAt", (PyObject*)&CmxArrayAt_Type);
}
