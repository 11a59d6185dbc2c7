/* The `array` type: construction, properties, item/tolist, printing, len,
 * iteration, truth value, copy and pickling. Operators live in number.c,
 * indexing in indexing.c, NumPy/DLPack interop in buffer.c and op methods
 * in ops.c; cmxpy_init_array assembles them. */
#include "cmxpy.h"

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

PyObject* cmxpy_method_args(PyObject* self, PyObject* args) {
  if (!self || !CmxArray_Check(self)) {
    Py_INCREF(args);
    return args;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* t = PyTuple_New(n + 1);
  if (!t) return NULL;
  Py_INCREF(self);
  PyTuple_SET_ITEM(t, 0, self);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* v = PyTuple_GET_ITEM(args, i);
    Py_INCREF(v);
    PyTuple_SET_ITEM(t, i + 1, v);
  }
  return t;
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
PyObject* cmxpy_array_at(PyObject* self, void* c); /* indexing.c */

typedef struct {
  PyGetSetDef def;
  const void* needs;
} getset_def;

static getset_def array_getset_all[] = {
    {{"size", get_size, NULL, "Number of elements in the array.", NULL},
     CMXPY_ALWAYS},
    {{"ndim", get_ndim, NULL, "The array's dimension.", NULL}, CMXPY_ALWAYS},
    {{"itemsize", get_itemsize, NULL,
      "The size of the array's datatype in bytes.", NULL},
     CMXPY_ALWAYS},
    {{"nbytes", get_nbytes, NULL, "The number of bytes in the array.", NULL},
     CMXPY_ALWAYS},
    {{"shape", get_shape, NULL,
      "The shape of the array as a Python tuple.\n\n"
      "Returns:\n  tuple(int): A tuple containing the sizes of each "
      "dimension.",
      NULL},
     CMXPY_ALWAYS},
    {{"dtype", get_dtype, NULL, "The array's :class:`Dtype`.", NULL},
     CMXPY_ALWAYS},
    {{"real", get_real, NULL, "The real part of a complex array.", NULL},
     (const void*)cmx_real},
    {{"imag", get_imag, NULL, "The imaginary part of a complex array.", NULL},
     (const void*)cmx_imag},
    {{"T", get_T, NULL,
      "Equivalent to calling ``self.transpose()`` with no arguments.", NULL},
     (const void*)cmx_transpose},
    {{"at", cmxpy_array_at, NULL,
      "Used to apply updates at the given indices.\n\n"
      ".. note::\n\n   Regular in-place updates map to assignment. For "
      "instance ``x[idx] += y`` maps to ``x[idx] = x[idx] + y``. As a "
      "result, assigning to the same index ignores all but one update. "
      "Using ``x.at[idx].add(y)`` will correctly apply all updates to all "
      "indices.\n\n"
      "Example:\n    >>> a = mx.array([0, 0])\n    >>> a.at[1].add(2)\n"
      "    array([0, 2], dtype=int32)",
      NULL},
     CMXPY_ALWAYS},
    {{NULL, NULL, NULL, NULL, NULL}, NULL}};

/* ---------------- methods ---------------- */
static PyObject* m_item(PyObject* self, PyObject* u) {
  (void)u;
  return cmxpy_item(CMXPY_ARR(self));
}

static PyObject* m_tolist(PyObject* self, PyObject* u) {
  (void)u;
  return cmxpy_tolist(CMXPY_ARR(self));
}

static PyObject* m_astype(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"dtype", "stream", NULL};
  PyObject *d, *so = Py_None;
  cmx_dtype t;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:astype", kwlist, &d, &so) ||
      cmxpy_dtype_arg(d, &t, false, "astype") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_astype(&out, CMXPY_ARR(self), t, s), &out);
}

static PyObject* m_array_namespace(PyObject* self, PyObject* args,
                                   PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"api_version", NULL};
  PyObject* v = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O:__array_namespace__", kwlist,
                                   &v))
    return NULL;
  if (v != Py_None) {
    PyErr_SetString(
        PyExc_ValueError,
        "Explicitly specifying api_version is not yet implemented.");
    return NULL;
  }
  return PyImport_ImportModule("cmx.core");
}

static PyObject* m_copy(PyObject* self, PyObject* u) {
  (void)u;
  return cmxpy_wrap(cmx_array_retain(CMXPY_ARR(self)));
}

/* deepcopy gives an independent buffer, so writes through a NumPy view of
 * one never show in the other. */
static PyObject* m_deepcopy(PyObject* self, PyObject* memo) {
  (void)memo;
  cmx_array a = CMXPY_ARR(self), out = NULL;
  return cmxpy_result(
      cmx_astype(&out, a, cmx_array_dtype(a), CMX_STREAM_DEFAULT), &out);
}

/* Pickles as (bytes, shape, dtype name); no NumPy needed on either side. */
static PyObject* m_reduce(PyObject* self, PyObject* u) {
  (void)u;
  /* Our own reference: evaluation releases the GIL, and another thread may
   * replace the object's handle meanwhile. */
  cmx_array a = cmx_array_retain(CMXPY_ARR(self));
  size_t nbytes = cmx_array_nbytes(a);
  PyObject* bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)nbytes);
  if (!bytes) {
    cmx_array_release(a);
    return NULL;
  }
  cmx_status st = cmxpy_eval(a);
  if (st == CMX_OK) st = cmx_array_copy_to(a, PyBytes_AS_STRING(bytes), nbytes);
  if (st != CMX_OK) {
    cmx_array_release(a);
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
  cmx_array_release(a);
  return r;
}

static PyObject* py_array_from_bytes(PyObject* m, PyObject* args) {
  (void)m;
  Py_buffer data;
  PyObject* shape_o;
  const char* dname;
  if (!PyArg_ParseTuple(args, "y*Os:_array_from_bytes", &data, &shape_o,
                        &dname))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd = 0;
  PyObject* r = NULL;
  int t = -1;
  for (int i = 0; i < CMX_NUM_DTYPES; i++)
    if (!strcmp(cmx_dtype_name((cmx_dtype)i), dname)) t = i;
  if (t < 0) {
    PyErr_Format(PyExc_ValueError, "[array] unknown dtype '%s'", dname);
  } else if (cmxpy_shape_arg(shape_o, shape, &nd, "array") == 0) {
    int64_t size = 1;
    bool bad = false;
    for (int i = 0; i < nd; i++)
      bad |= shape[i] < 0 || __builtin_mul_overflow(size, shape[i], &size);
    if (bad ||
        (size_t)size * cmx_dtype_size((cmx_dtype)t) != (size_t)data.len) {
      PyErr_SetString(PyExc_ValueError,
                      "[array] pickled data has the wrong size");
    } else {
      cmx_array out = NULL;
      r = cmxpy_result(cmx_array_from_data(&out, data.len ? data.buf : NULL,
                                           shape, nd, (cmx_dtype)t),
                       &out);
    }
  }
  PyBuffer_Release(&data);
  return r;
}

static PyObject* m_format(PyObject* self, PyObject* spec) {
  cmx_array a = CMXPY_ARR(self);
  if (!PyUnicode_Check(spec)) {
    PyErr_SetString(PyExc_TypeError, "format spec must be a str");
    return NULL;
  }
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
  return PyObject_Repr(self);
}

static PyObject* m_complex(PyObject* self, PyObject* u) {
  (void)u;
  PyObject* v = cmxpy_item(CMXPY_ARR(self));
  if (!v) return NULL;
  PyObject* r = PyObject_CallOneArg((PyObject*)&PyComplex_Type, v);
  Py_DECREF(v);
  return r;
}

static const cmxpy_def array_methods_base[] = {
    {{"item", m_item, METH_NOARGS,
      "item($self, /)\n--\n\nAccess the value of a scalar array.\n\n"
      "Returns:\n    Standard Python scalar."},
     CMXPY_ALWAYS},
    {{"tolist", m_tolist, METH_NOARGS,
      "tolist($self, /)\n--\n\nConvert the array to a Python :class:`list`."
      "\n\nReturns:\n    list: The Python list.\n\n    If the array is a "
      "scalar then a standard Python scalar is returned.\n\n    If the array "
      "has more than one dimension then the result is a nested list of "
      "lists.\n\n    The value type of the list corresponding to the last "
      "dimension is either ``bool``, ``int``, ``float`` or ``complex`` "
      "depending on the ``dtype`` of the array."},
     CMXPY_ALWAYS},
    {{"astype", (PyCFunction)(void (*)(void))m_astype,
      METH_VARARGS | METH_KEYWORDS,
      "astype($self, /, dtype, stream=None)\n--\n\nCast the array to a "
      "specified type.\n\n"
      "Args:\n    dtype (Dtype): Type to which the array is cast.\n"
      "    stream (Stream): Stream (or device) for the operation.\n\n"
      "Returns:\n    array: The array with type ``dtype``."},
     (const void*)cmx_astype},
    {{"__array_namespace__", (PyCFunction)(void (*)(void))m_array_namespace,
      METH_VARARGS | METH_KEYWORDS,
      "__array_namespace__($self, /, *, api_version=None)\n--\n\nReturns an "
      "object that has all the array API functions on it (the cmx.core "
      "module)."},
     CMXPY_ALWAYS},
    {{"__copy__", m_copy, METH_NOARGS,
      "__copy__($self, /)\n--\n\nA new array object sharing the data."},
     CMXPY_ALWAYS},
    {{"__deepcopy__", m_deepcopy, METH_O,
      "__deepcopy__($self, memo, /)\n--\n\nA copy with its own data."},
     (const void*)cmx_astype},
    {{"__reduce__", m_reduce, METH_NOARGS,
      "__reduce__($self, /)\n--\n\nPickle support."},
     CMXPY_ALWAYS},
    {{"__format__", m_format, METH_O,
      "__format__($self, format_spec, /)\n--\n\nFormats scalar arrays as "
      "their value; other arrays only with an empty spec (their repr)."},
     CMXPY_ALWAYS},
    {{"__complex__", m_complex, METH_NOARGS,
      "__complex__($self, /)\n--\n\ncomplex(self) of a size-1 array."},
     CMXPY_ALWAYS},
    {{NULL, NULL, 0, NULL}, NULL}};

/* ---------------- protocols ---------------- */
static PyObject* array_repr(PyObject* self) {
  if (!CMXPY_HAS(cmx_array_tostring))
    return cmxpy_missing("array printing (cmx_array_tostring)");
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

static PyMethodDef module_functions[] = {
    {"_array_from_bytes", py_array_from_bytes, METH_VARARGS,
     "_array_from_bytes($module, data, shape, dtype, /)\n--\n\nRebuilds a "
     "pickled array."},
    {NULL, NULL, 0, NULL}};

int cmxpy_init_array(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, array_methods_base) < 0 ||
      cmxpy_defs_add(&l, cmxpy_buffer_methods) < 0 ||
      cmxpy_defs_add(&l, cmxpy_number_methods) < 0 ||
      cmxpy_defs_add(&l, cmxpy_index_methods) < 0 ||
      cmxpy_defs_add(&l, cmxpy_shape_methods) < 0 ||
      cmxpy_defs_add(&l, cmxpy_scan_methods) < 0 ||
      cmxpy_ops_array_methods(&l) < 0)
    return -1;
  CmxArray_Type.tp_methods = cmxpy_defs_finish(&l);
  if (!CmxArray_Type.tp_methods) return -1;

  size_t n = 0;
  for (getset_def* g = array_getset_all; g->def.name; g++) n++;
  PyGetSetDef* gs = PyMem_RawCalloc(n + 1, sizeof *gs);
  if (!gs) {
    PyErr_NoMemory();
    return -1;
  }
  size_t k = 0;
  for (getset_def* g = array_getset_all; g->def.name; g++) {
    if (g->needs)
      gs[k++] = g->def;
    else
      cmxpy_note_missing(g->def.name);
  }
  CmxArray_Type.tp_getset = gs;
  if (cmxpy_init_number(&CmxArray_Type) < 0) return -1;
  if (PyType_Ready(&CmxArray_Type) < 0 || PyType_Ready(&CmxArrayIter_Type) < 0)
    return -1;
  Py_INCREF(&CmxArray_Type);
  if (PyModule_AddObject(m, "array", (PyObject*)&CmxArray_Type) < 0) return -1;
  return PyModule_AddFunctions(m, module_functions);
}
