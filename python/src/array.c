/* The `array` type: construction, properties, item/tolist, printing, len,
 * iteration, truth value, copy and pickling. Operators live in number.c,
 * indexing in indexing.c, NumPy/DLPack interop in buffer.c and op methods
 * in ops.c; cmxpy_init_array assembles them. */
#include "args.h"

PyObject* cmxpy_wrap(cmx_array a) {
  if (!a) return NULL;
  CmxArrayObject* o =
      (CmxArrayObject*)CmxArray_Type.tp_alloc(&CmxArray_Type, 0);
  if (!o) {
    cmx_array_release(a);
    return NULL;
  }
  o->arr = a;
  return (PyObject*)o;
}

PyObject* cmxpy_result(cmx_status st, cmx_array* out) {
  if (st != CMX_OK) {
    cmx_array_release(*out);
    return cmxpy_raise(st);
  }
  return cmxpy_wrap(*out);
}

void cmxpy_array_replace(PyObject* self, cmx_array a) {
  cmx_array old = CMXPY_ARR(self);
  CMXPY_ARR(self) = a;
  cmx_array_release(old);
}

/* ---------------- construction ---------------- */
static PyObject* array_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"val", "dtype", NULL};
  PyObject *val, *dt = Py_None;
  cmx_dtype dtype;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:array", kwlist, &val, &dt) ||
      cmxpy_dtype_arg(dt, &dtype, true, "array") < 0)
    return NULL;
  cmx_array a = cmxpy_array_from_object(val, dtype);
  if (!a) return NULL;
  CmxArrayObject* o = (CmxArrayObject*)type->tp_alloc(type, 0);
  if (!o) {
    cmx_array_release(a);
    return NULL;
  }
  o->arr = a;
  return (PyObject*)o;
}

static void array_dealloc(PyObject* self) {
  CmxArrayObject* o = (CmxArrayObject*)self;
  if (o->weakrefs) PyObject_ClearWeakRefs(self);
  cmx_array_release(o->arr);
  Py_TYPE(self)->tp_free(self);
}

/* ---------------- properties ---------------- */
static PyObject* get_size(PyObject* s, void* c) {
  (void)c;
  return PyLong_FromLongLong(cmx_array_size(CMXPY_ARR(s)));
}
static PyObject* get_ndim(PyObject* s, void* c) {
  (void)c;
  return PyLong_FromLong(cmx_array_ndim(CMXPY_ARR(s)));
}
static PyObject* get_itemsize(PyObject* s, void* c) {
  (void)c;
  return PyLong_FromSize_t(cmx_array_itemsize(CMXPY_ARR(s)));
}
static PyObject* get_nbytes(PyObject* s, void* c) {
  (void)c;
  return PyLong_FromSize_t(cmx_array_nbytes(CMXPY_ARR(s)));
}
static PyObject* get_shape(PyObject* s, void* c) {
  (void)c;
  cmx_array a = CMXPY_ARR(s);
  return cmxpy_shape_tuple(cmx_array_shape(a), cmx_array_ndim(a));
}
static PyObject* get_dtype(PyObject* s, void* c) {
  (void)c;
  return cmxpy_dtype_object(cmx_array_dtype(CMXPY_ARR(s)));
}
static PyObject* get_real(PyObject* s, void* c) {
  (void)c;
  cmx_array out = NULL;
  return cmxpy_result(cmx_real(&out, CMXPY_ARR(s), CMX_STREAM_DEFAULT), &out);
}
static PyObject* get_imag(PyObject* s, void* c) {
  (void)c;
  cmx_array out = NULL;
  return cmxpy_result(cmx_imag(&out, CMXPY_ARR(s), CMX_STREAM_DEFAULT), &out);
}
static PyObject* get_T(PyObject* s, void* c) {
  (void)c;
  cmx_array out = NULL;
  return cmxpy_result(
      cmx_transpose(&out, CMXPY_ARR(s), NULL, 0, CMX_STREAM_DEFAULT), &out);
}
PyObject* cmxpy_matrix_transpose(cmx_array a, cmx_stream s) {
  if (cmx_array_ndim(a) < 2) {
    PyErr_SetString(PyExc_ValueError,
                    "[matrix_transpose] Input array must have at least 2 "
                    "dimensions.");
    return NULL;
  }
  cmx_array out = NULL;
  return cmxpy_result(cmx_swapaxes(&out, a, -1, -2, s), &out);
}
static PyObject* get_mT(PyObject* s, void* c) {
  (void)c;
  return cmxpy_matrix_transpose(CMXPY_ARR(s), CMX_STREAM_DEFAULT);
}
PyObject* cmxpy_array_at(PyObject* self, void* c); /* indexing.c */

static PyGetSetDef array_getset[] = {
    {"size", get_size, NULL, "Number of elements in the array.", NULL},
    {"ndim", get_ndim, NULL, "The array's dimension.", NULL},
    {"itemsize", get_itemsize, NULL,
     "The size of the array's datatype in bytes.", NULL},
    {"nbytes", get_nbytes, NULL, "The number of bytes in the array.", NULL},
    {"shape", get_shape, NULL,
     "The shape of the array as a Python tuple.\n\n"
     "Returns:\n  tuple(int): A tuple containing the sizes of each "
     "dimension.",
     NULL},
    {"dtype", get_dtype, NULL, "The array's :class:`Dtype`.", NULL},
    {"real", get_real, NULL, "The real part of a complex array.", NULL},
    {"imag", get_imag, NULL, "The imaginary part of a complex array.", NULL},
    {"T", get_T, NULL,
     "Equivalent to calling ``self.transpose()`` with no arguments.", NULL},
    {"mT", get_mT, NULL,
     "Equivalent to calling ``self.swapaxes(-1, -2)`` (at least 2 "
     "dimensions).",
     NULL},
    {"at", cmxpy_array_at, NULL,
     "Used to apply updates at the given indices.\n\n"
     ".. note::\n\n   Regular in-place updates map to assignment. For "
     "instance ``x[idx] += y`` maps to ``x[idx] = x[idx] + y``. As a "
     "result, assigning to the same index ignores all but one update. "
     "Using ``x.at[idx].add(y)`` will correctly apply all updates to all "
     "indices.\n\n"
     "Example:\n    >>> a = mx.array([0, 0])\n    >>> a.at[1].add(2)\n"
     "    array([0, 2], dtype=int32)",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ---------------- methods ---------------- */
CMXPY_DEF_METHOD(item, "(self, /)",
                 "Access the value of a scalar array.\n\nReturns:\n    "
                 "Standard Python scalar.") {
  return cmxpy_item(ARR(0));
}

CMXPY_DEF_METHOD(
    tolist, "(self, /)",
    "Convert the array to a Python :class:`list`.\n\nReturns:\n    list: The "
    "Python list.\n\n    If the array is a scalar then a standard Python "
    "scalar is returned.\n\n    If the array has more than one dimension "
    "then the result is a nested list of lists.\n\n    The value type of the "
    "list corresponding to the last dimension is either ``bool``, ``int``, "
    "``float`` or ``complex`` depending on the ``dtype`` of the array.") {
  return cmxpy_tolist(ARR(0));
}

CMXPY_DEF_METHOD(astype,
                 "(self, dtype: Dtype, stream: StreamOrDevice = None) -> "
                 "array",
                 "Cast the array to a specified type.\n\n"
                 "Args:\n    dtype (Dtype): Type to which the array is cast.\n"
                 "    stream (Stream): Stream (or device) for the operation."
                 "\n\nReturns:\n    array: The array with type ``dtype``.") {
  return RET(cmx_astype(OUT, ARR(0), DTYPE(1), STREAM));
}

CMXPY_DEF_METHOD(__array_namespace__,
                 "(self, /, *, api_version: object = None)",
                 "Returns an object that has all the array API functions on "
                 "it (the cmx.core module).") {
  if (!ISNONE(1)) {
    PyErr_SetString(
        PyExc_ValueError,
        "Explicitly specifying api_version is not yet implemented.");
    return NULL;
  }
  return PyImport_ImportModule("cmx.core");
}

CMXPY_DEF_METHOD(__copy__, "(self, /)",
                 "A new array object sharing the data.") {
  return cmxpy_wrap(cmx_array_retain(ARR(0)));
}

/* deepcopy gives an independent buffer, so writes through a NumPy view of
 * one never show in the other. */
CMXPY_DEF_METHOD(__deepcopy__, "(self, memo: object, /)",
                 "A copy with its own data.") {
  cmx_array a = ARR(0);
  return RET(cmx_astype(OUT, a, cmx_array_dtype(a), CMX_STREAM_DEFAULT));
}

/* Pickles as (bytes, shape, dtype name); no NumPy needed on either side. */
CMXPY_DEF_METHOD(__reduce__, "(self, /)", "Pickle support.") {
  /* ARR(0) is this call's own reference: evaluation releases the GIL, and
   * another thread may replace the object's handle meanwhile. */
  cmx_array a = ARR(0);
  size_t nbytes = cmx_array_nbytes(a);
  PyObject* bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
  if (!bytes) return NULL;
  cmx_status st = cmxpy_eval(a);
  if (st == CMX_OK) st = cmx_array_copy_to(a, PyBytes_AS_STRING(bytes), nbytes);
  if (st != CMX_OK) {
    Py_DECREF(bytes);
    return cmxpy_raise(st);
  }
  PyObject* mod = PyImport_ImportModule("cmx.core");
  PyObject* fn = mod ? PyObject_GetAttrString(mod, "_array_from_bytes") : NULL;
  Py_XDECREF(mod);
  PyObject* shape = cmxpy_shape_tuple(cmx_array_shape(a), cmx_array_ndim(a));
  PyObject* r = NULL;
  if (fn && shape)
    r = Py_BuildValue("(O(NNs))", fn, bytes, shape,
                      cmx_dtype_name(cmx_array_dtype(a)));
  else
    Py_DECREF(bytes), Py_XDECREF(shape);
  Py_XDECREF(fn);
  return r;
}

CMXPY_DEF(_array_from_bytes,
          "(data: bytes, shape: Sequence[int], dtype: str, /)",
          "Rebuilds a pickled array.") {
  Py_buffer data;
  if (PyObject_GetBuffer(OBJ(0), &data, PyBUF_SIMPLE) < 0) return NULL;
  PyObject* r = NULL;
  int t = -1;
  for (int i = 0; i < CMX_NUM_DTYPES; i++)
    if (!strcmp(cmx_dtype_name((cmx_dtype)i), STR(2))) t = i;
  int nd = A->v[1].n;
  const int64_t* shape = A->v[1].ints;
  int64_t size = 1;
  bool bad = t < 0;
  for (int i = 0; i < nd; i++)
    bad |= shape[i] < 0 || __builtin_mul_overflow(size, shape[i], &size);
  if (bad || (size_t)size * cmx_dtype_size((cmx_dtype)t) != (size_t)data.len)
    PyErr_SetString(PyExc_ValueError,
                    "[array] pickled data has the wrong size or dtype");
  else
    r = RET(cmx_array_from_data(OUT, data.len ? data.buf : NULL, shape, nd,
                                (cmx_dtype)t));
  PyBuffer_Release(&data);
  return r;
}

CMXPY_DEF_METHOD(__format__, "(self, format_spec: str, /)",
                 "Formats scalar arrays as their value; other arrays only "
                 "with an empty spec (their repr).") {
  cmx_array a = ARR(0);
  PyObject* spec = OBJ(1);
  if (cmx_array_ndim(a) == 0) {
    PyObject* v = cmxpy_item(a);
    if (!v) return NULL;
    PyObject* r = PyObject_Format(v, spec);
    Py_DECREF(v);
    return r;
  }
  if (PyUnicode_GET_LENGTH(spec) > 0) {
    PyErr_SetString(PyExc_TypeError,
                    "unsupported format string passed to mx.array.__format__");
    return NULL;
  }
  return PyObject_Repr(A->self);
}

CMXPY_DEF_METHOD(__complex__, "(self, /)", "complex(self) of a size-1 array.") {
  PyObject* v = cmxpy_item(ARR(0));
  if (!v) return NULL;
  PyObject* r = PyObject_CallOneArg((PyObject*)&PyComplex_Type, v);
  Py_DECREF(v);
  return r;
}

/* ---------------- protocols ---------------- */
static PyObject* array_repr(PyObject* self) {
  cmx_array a = cmx_array_retain(CMXPY_ARR(self));
  char* s = NULL;
  cmx_status st;
  Py_BEGIN_ALLOW_THREADS st = cmx_array_tostring(a, &s);
  Py_END_ALLOW_THREADS cmx_array_release(a);
  if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* r = PyUnicode_FromString(s ? s : "");
  cmx_free(s);
  return r;
}

static Py_ssize_t array_len(PyObject* self) {
  cmx_array a = CMXPY_ARR(self);
  if (cmx_array_ndim(a) == 0) {
    PyErr_SetString(PyExc_TypeError, "len() 0-dimensional array.");
    return -1;
  }
  return (Py_ssize_t)cmx_array_shape(a)[0];
}

static Py_hash_t array_hash(PyObject* self) {
  Py_hash_t h = (Py_hash_t)((uintptr_t)self >> 4);
  return h == -1 ? -2 : h;
}

/* ---------------- iteration ---------------- */
typedef struct {
  PyObject_HEAD cmx_array arr;
  int64_t i, n;
} CmxArrayIterObject;

static void iter_dealloc(PyObject* self) {
  cmx_array_release(((CmxArrayIterObject*)self)->arr);
  Py_TYPE(self)->tp_free(self);
}

static PyObject* iter_next(PyObject* self) {
  CmxArrayIterObject* it = (CmxArrayIterObject*)self;
  if (it->i >= it->n) return NULL; /* StopIteration */
  return cmxpy_wrap(cmxpy_index_int(it->arr, it->i++));
}

static PyTypeObject CmxArrayIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.ArrayIterator",
    .tp_basicsize = sizeof(CmxArrayIterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A helper object to iterate over the 1st dimension of an array.",
    .tp_dealloc = iter_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = iter_next,
};

static PyObject* array_iter(PyObject* self) {
  cmx_array a = CMXPY_ARR(self);
  if (cmx_array_ndim(a) == 0) {
    PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
    return NULL;
  }
  CmxArrayIterObject* it = PyObject_New(CmxArrayIterObject, &CmxArrayIter_Type);
  if (!it) return NULL;
  it->arr = cmx_array_retain(a);
  it->i = 0;
  it->n = cmx_array_shape(a)[0];
  return (PyObject*)it;
}

static PyMappingMethods array_mapping = {
    .mp_length = array_len,
    .mp_subscript = cmxpy_getitem,
    .mp_ass_subscript = cmxpy_setitem,
};

PyTypeObject CmxArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.array",
    .tp_basicsize = sizeof(CmxArrayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc =
        "array(val, dtype=None)\n--\n\nAn N-dimensional array object.\n\n"
        "Args:\n    val: a Python scalar, a (nested) list or tuple, a "
        "NumPy array or any object with the buffer protocol, or an "
        "array.\n    dtype (Dtype, optional): the element type. "
        "Default: inferred (bool, int32, float32, complex64; int64 for "
        "ints beyond int32; NumPy arrays keep their dtype except "
        "float64 -> float32).",
    .tp_new = array_new,
    .tp_dealloc = array_dealloc,
    .tp_repr = array_repr,
    .tp_str = array_repr,
    .tp_hash = array_hash,
    .tp_as_mapping = &array_mapping,
    .tp_as_buffer = &cmxpy_buffer_procs,
    .tp_iter = array_iter,
    .tp_weaklistoffset = offsetof(CmxArrayObject, weakrefs),
};

int cmxpy_init_array(PyObject* m, cmxpy_deflist* array_methods) {
  static cmxpy_spec* const methods[] = {
      &spec_m_item,       &spec_m_tolist,
      &spec_m_astype,     &spec_m___array_namespace__,
      &spec_m___copy__,   &spec_m___deepcopy__,
      &spec_m___reduce__, &spec_m___format__,
      &spec_m___complex__};
  static cmxpy_spec* const functions[] = {&spec__array_from_bytes};
  if (cmxpy_add_methods(array_methods, methods, CMXPY_COUNT(methods)) < 0)
    return -1;
  CmxArray_Type.tp_methods = cmxpy_defs_finish(array_methods);
  CmxArray_Type.tp_getset = array_getset;
  if (!CmxArray_Type.tp_methods || PyType_Ready(&CmxArray_Type) < 0 ||
      PyType_Ready(&CmxArrayIter_Type) < 0)
    return -1;
  Py_INCREF(&CmxArray_Type);
  if (PyModule_AddObject(m, "array", (PyObject*)&CmxArray_Type) < 0) return -1;
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
