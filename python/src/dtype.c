/* Dtype objects (mx.float32 ...), the DtypeCategory enum (mx.floating ...),
 * finfo / iinfo, and issubdtype, result_type, can_cast, isdtype. */
#include <float.h>

#include "args.h"
#include "structmember.h"

typedef struct {
  PyObject_HEAD cmx_dtype t;
} CmxDtypeObject;

static PyObject* g_dtypes[CMX_NUM_DTYPES];
static PyObject* g_categories[CMX_CAT_BOOL]; /* enum members, by category */
static PyObject* g_category_type;

/* Module attribute names (bool is bool_ as in MLX). */
static const char* attr_name(cmx_dtype t) {
  return t == CMX_BOOL ? "bool_" : cmx_dtype_name(t);
}

static PyObject* dtype_repr(PyObject* self) {
  return PyUnicode_FromFormat("cmx.core.%s",
                              cmx_dtype_name(((CmxDtypeObject*)self)->t));
}

static PyObject* dtype_richcompare(PyObject* a, PyObject* b, int op) {
  if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
  bool eq =
      cmxpy_is_dtype(b) && ((CmxDtypeObject*)a)->t == ((CmxDtypeObject*)b)->t;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t dtype_hash(PyObject* self) {
  return (Py_hash_t)((CmxDtypeObject*)self)->t + 1;
}

static PyObject* dtype_size(PyObject* self, void* closure) {
  (void)closure;
  return PyLong_FromSize_t(cmx_dtype_size(((CmxDtypeObject*)self)->t));
}

/* Pickles by name: the module attribute mx.<name>. */
static PyObject* dtype_reduce(PyObject* self, PyObject* unused) {
  (void)unused;
  return PyUnicode_FromString(attr_name(((CmxDtypeObject*)self)->t));
}

static PyGetSetDef dtype_getset[] = {
    {"size", dtype_size, NULL, "Size of the type in bytes.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};

PyTypeObject CmxDtype_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.Dtype",
    .tp_basicsize = sizeof(CmxDtypeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "An object to hold the type of a :class:`array`.\n\n"
        "See the list of types (``cmx.core.float32`` ...) for the "
        "available data types.",
    .tp_repr = dtype_repr,
    .tp_richcompare = dtype_richcompare,
    .tp_hash = dtype_hash,
    .tp_getset = dtype_getset,
    .tp_methods = dtype_methods,
};

bool cmxpy_is_dtype(PyObject* o) {
  return Py_TYPE(o) == &CmxDtype_Type;
}

cmx_dtype cmxpy_dtype_value(PyObject* o) {
  return ((CmxDtypeObject*)o)->t;
}

PyObject* cmxpy_dtype_object(cmx_dtype t) {
  if (!cmx_dtype_valid((int)t)) {
    PyErr_SetString(PyExc_ValueError, "invalid dtype");
    return NULL;
  }
  Py_INCREF(g_dtypes[t]);
  return g_dtypes[t];
}

int cmxpy_dtype_arg(PyObject* o, cmx_dtype* out, bool allow_none,
                    const char* fname) {
  if (o == NULL || (allow_none && o == Py_None)) {
    *out = CMX_DTYPE_AUTO;
    return 0;
  }
  if (cmxpy_is_dtype(o)) {
    *out = ((CmxDtypeObject*)o)->t;
    return 0;
  }
  PyErr_Format(PyExc_TypeError,
               "[%s] dtype must be a cmx.core.Dtype, got %.100s", fname,
               Py_TYPE(o)->tp_name);
  return -1;
}

/* Category of an enum member, or -1. */
static int category_of(PyObject* o) {
  for (int c = 0; c < CMX_CAT_BOOL; c++)
    if (g_categories[c] == o) return c;
  return -1;
}

/* ---------------- finfo / iinfo ---------------- */
typedef struct {
  PyObject_HEAD PyObject* min;
  PyObject* max;
  PyObject* eps;      /* NULL for iinfo */
  PyObject* smallest; /* smallest_normal; NULL for iinfo */
  int bits;           /* finfo: bits of the (real) type */
  PyObject* dtype;
} CmxInfoObject;

static void info_dealloc(PyObject* self) {
  CmxInfoObject* i = (CmxInfoObject*)self;
  Py_XDECREF(i->min);
  Py_XDECREF(i->max);
  Py_XDECREF(i->eps);
  Py_XDECREF(i->smallest);
  Py_XDECREF(i->dtype);
  Py_TYPE(self)->tp_free(self);
}

static int info_dtype_arg(PyObject* args, PyObject* kw, const char* fname,
                          cmx_dtype* t) {
  static char* kwlist[] = {"dtype", NULL};
  PyObject* d;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O", kwlist, &d)) return -1;
  return cmxpy_dtype_arg(d, t, false, fname);
}

static PyObject* finfo_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  cmx_dtype t;
  if (info_dtype_arg(args, kw, "finfo", &t) < 0) return NULL;
  if (!cmx_dtype_is_inexact(t)) {
    PyErr_Format(PyExc_ValueError, "[finfo] dtype %s is not inexact.",
                 cmx_dtype_name(t));
    return NULL;
  }
  if (t == CMX_COMPLEX64) t = CMX_FLOAT32; /* as NumPy: the parts' type */
  double mx, eps, tiny;
  switch (t) {
    case CMX_FLOAT16:
      mx = 65504.0, eps = 0.0009765625, tiny = 6.103515625e-05;
      break;
    case CMX_BFLOAT16:
      mx = 3.3895313892515355e38, eps = 0.0078125, tiny = FLT_MIN;
      break;
    case CMX_FLOAT64:
      mx = DBL_MAX, eps = DBL_EPSILON, tiny = DBL_MIN;
      break;
    default:
      mx = FLT_MAX, eps = FLT_EPSILON, tiny = FLT_MIN;
      break;
  }
  CmxInfoObject* self = (CmxInfoObject*)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->min = PyFloat_FromDouble(-mx);
  self->max = PyFloat_FromDouble(mx);
  self->eps = PyFloat_FromDouble(eps);
  self->smallest = PyFloat_FromDouble(tiny);
  self->bits = (int)cmx_dtype_size(t) * 8;
  self->dtype = cmxpy_dtype_object(t);
  if (!self->min || !self->max || !self->eps || !self->smallest ||
      !self->dtype) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject*)self;
}

static PyObject* iinfo_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  cmx_dtype t;
  if (info_dtype_arg(args, kw, "iinfo", &t) < 0) return NULL;
  if (!cmx_dtype_is_integer(t)) {
    PyErr_Format(PyExc_ValueError, "[iinfo] dtype %s is not integral.",
                 cmx_dtype_name(t));
    return NULL;
  }
  CmxInfoObject* self = (CmxInfoObject*)type->tp_alloc(type, 0);
  if (!self) return NULL;
  int bits = (int)cmx_dtype_size(t) * 8;
  if (cmx_dtype_is_signed(t)) {
    int64_t hi = (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    self->min = PyLong_FromLongLong(-hi - 1);
    self->max = PyLong_FromLongLong(hi);
  } else {
    self->min = PyLong_FromLong(0);
    self->max = PyLong_FromUnsignedLongLong(
        bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
  }
  self->dtype = cmxpy_dtype_object(t);
  if (!self->min || !self->max || !self->dtype) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject*)self;
}

/* Formats a float as C++ streams do by default (%g, 6 digits), as MLX. */
static PyObject* short_float(PyObject* f) {
  char* s = PyOS_double_to_string(PyFloat_AsDouble(f), 'g', 6, 0, NULL);
  if (!s) return NULL;
  PyObject* r = PyUnicode_FromString(s);
  PyMem_Free(s);
  return r;
}

static PyObject* finfo_repr(PyObject* self) {
  CmxInfoObject* i = (CmxInfoObject*)self;
  PyObject *a = short_float(i->min), *b = short_float(i->max),
           *c = short_float(i->eps);
  PyObject* r = NULL;
  if (a && b && c)
    r = PyUnicode_FromFormat("finfo(min=%U, max=%U, eps=%U, dtype=%s)", a, b, c,
                             cmx_dtype_name(((CmxDtypeObject*)i->dtype)->t));
  Py_XDECREF(a);
  Py_XDECREF(b);
  Py_XDECREF(c);
  return r;
}

static PyObject* iinfo_repr(PyObject* self) {
  CmxInfoObject* i = (CmxInfoObject*)self;
  return PyUnicode_FromFormat("iinfo(min=%S, max=%S, dtype=%s)", i->min, i->max,
                              cmx_dtype_name(((CmxDtypeObject*)i->dtype)->t));
}

static PyMemberDef finfo_members[] = {
    {"min", T_OBJECT, offsetof(CmxInfoObject, min), READONLY,
     "The smallest representable number."},
    {"max", T_OBJECT, offsetof(CmxInfoObject, max), READONLY,
     "The largest representable number."},
    {"eps", T_OBJECT, offsetof(CmxInfoObject, eps), READONLY,
     "The difference between 1.0 and the next larger representable "
     "number."},
    {"smallest_normal", T_OBJECT, offsetof(CmxInfoObject, smallest), READONLY,
     "The smallest positive normal number."},
    {"bits", T_INT, offsetof(CmxInfoObject, bits), READONLY,
     "The number of bits of the type (of its real part for complex)."},
    {"dtype", T_OBJECT, offsetof(CmxInfoObject, dtype), READONLY,
     "The :obj:`Dtype`."},
    {NULL, 0, 0, 0, NULL}};

static PyMemberDef iinfo_members[] = {
    {"min", T_OBJECT, offsetof(CmxInfoObject, min), READONLY,
     "The smallest representable number."},
    {"max", T_OBJECT, offsetof(CmxInfoObject, max), READONLY,
     "The largest representable number."},
    {"dtype", T_OBJECT, offsetof(CmxInfoObject, dtype), READONLY,
     "The :obj:`Dtype`."},
    {NULL, 0, 0, 0, NULL}};

static PyTypeObject finfo_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.finfo",
    .tp_basicsize = sizeof(CmxInfoObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "finfo(dtype)\n--\n\nGet information on floating-point types "
        "(min, max, eps, dtype).",
    .tp_new = finfo_new,
    .tp_dealloc = info_dealloc,
    .tp_repr = finfo_repr,
    .tp_members = finfo_members,
};

static PyTypeObject iinfo_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "cmx.core.iinfo",
    .tp_basicsize = sizeof(CmxInfoObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "iinfo(dtype)\n--\n\nGet information on integer types (min, max, "
        "dtype).",
    .tp_new = iinfo_new,
    .tp_dealloc = info_dealloc,
    .tp_repr = iinfo_repr,
    .tp_members = iinfo_members,
};

/* ---------------- functions ---------------- */
CMXPY_DEF(issubdtype,
          "(arg1: Dtype | DtypeCategory, arg2: Dtype | DtypeCategory, /) -> "
          "bool",
          "Check if a :obj:`Dtype` or :obj:`DtypeCategory` is a subtype of "
          "another.\n\n"
          "Args:\n    arg1 (Dtype | DtypeCategory): First dtype or category.\n"
          "    arg2 (Dtype | DtypeCategory): Second dtype or category.\n\n"
          "Returns:\n    bool: Whether ``arg1`` is a subtype of ``arg2``.\n\n"
          "Example:\n    >>> mx.issubdtype(mx.float32, mx.floating)\n    True\n"
          "    >>> mx.issubdtype(mx.int8, mx.unsignedinteger)\n    False") {
  PyObject *a = OBJ(0), *b = OBJ(1);
  int ca = category_of(a), cb = category_of(b);
  bool da = cmxpy_is_dtype(a), db = cmxpy_is_dtype(b);
  if ((!da && ca < 0) || (!db && cb < 0)) {
    PyErr_SetString(PyExc_TypeError,
                    "[issubdtype] arguments must be Dtype or DtypeCategory");
    return NULL;
  }
  if (da && db)
    return PyBool_FromLong(((CmxDtypeObject*)a)->t == ((CmxDtypeObject*)b)->t);
  if (da)
    return PyBool_FromLong(
        cmx_dtype_issubdtype(((CmxDtypeObject*)a)->t, (cmx_dtype_category)cb));
  if (db) Py_RETURN_FALSE;
  return PyBool_FromLong(cmx_category_issubcategory((cmx_dtype_category)ca,
                                                    (cmx_dtype_category)cb));
}

/* Dtype of a Dtype or array argument; -1 (TypeError) otherwise. */
static int dtype_of(PyObject* o, cmx_dtype* t, const char* fname) {
  if (CmxArray_Check(o)) {
    *t = cmx_array_dtype(CMXPY_ARR(o));
    return 0;
  }
  if (cmxpy_is_dtype(o)) {
    *t = ((CmxDtypeObject*)o)->t;
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "[%s] expected an array or a Dtype, got %.100s",
               fname, Py_TYPE(o)->tp_name);
  return -1;
}

CMXPY_DEF(result_type, "(*arrays_and_dtypes: array | Dtype) -> Dtype",
          "The dtype that results from promoting the given arrays and dtypes "
          "(as MLX, Python scalars and lists are not accepted).\n\n"
          "Returns:\n    Dtype: The promoted type.") {
  PyObject* args = OBJ(0);
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "[result_type] At least one array or dtype is required.");
    return NULL;
  }
  cmx_dtype t = CMX_BOOL;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* o = PyTuple_GET_ITEM(args, i);
    cmx_dtype d;
    if (!cmxpy_is_dtype(o) && !CmxArray_Check(o)) {
      PyErr_SetString(PyExc_ValueError,
                      "[result_type] Inputs must be arrays or dtypes.");
      return NULL;
    }
    if (dtype_of(o, &d, "result_type") < 0) return NULL;
    t = i ? cmx_dtype_promote(t, d) : d;
  }
  return cmxpy_dtype_object(t);
}

CMXPY_DEF(can_cast, "(from_: array | Dtype, to: Dtype, /) -> bool",
          "Whether a value of ``from_`` (a Dtype or array) converts to ``to`` "
          "without losing information under the promotion rules.\n\n"
          "Returns:\n    bool") {
  cmx_dtype ta;
  if (dtype_of(OBJ(0), &ta, "can_cast") < 0) return NULL;
  return PyBool_FromLong(cmx_dtype_can_cast(ta, DTYPE(1)));
}

/* One `kind` of isdtype: a Dtype, a category, or an array-API kind name. */
static int isdtype_one(cmx_dtype t, PyObject* kind) {
  if (cmxpy_is_dtype(kind)) return ((CmxDtypeObject*)kind)->t == t;
  int c = category_of(kind);
  if (c >= 0) return cmx_dtype_issubdtype(t, (cmx_dtype_category)c);
  if (PyUnicode_Check(kind)) {
    const char* k = PyUnicode_AsUTF8(kind);
    if (!k) return -1;
    if (!strcmp(k, "bool")) return t == CMX_BOOL;
    if (!strcmp(k, "signed integer"))
      return cmx_dtype_is_integer(t) && cmx_dtype_is_signed(t);
    if (!strcmp(k, "unsigned integer"))
      return cmx_dtype_is_integer(t) && !cmx_dtype_is_signed(t);
    if (!strcmp(k, "integral")) return cmx_dtype_is_integer(t);
    if (!strcmp(k, "real floating")) return cmx_dtype_is_floating(t);
    if (!strcmp(k, "complex floating")) return cmx_dtype_is_complex(t);
    if (!strcmp(k, "numeric")) return t != CMX_BOOL;
    PyErr_Format(PyExc_ValueError, "[isdtype] unknown kind '%s'", k);
    return -1;
  }
  PyErr_Format(PyExc_TypeError,
               "[isdtype] kind must be a Dtype, a str or a tuple, got %.100s",
               Py_TYPE(kind)->tp_name);
  return -1;
}

CMXPY_DEF(isdtype,
          "(dtype: Dtype, kind: Dtype | str | tuple[Dtype | str, ...], /) -> "
          "bool",
          "Array API ``isdtype``: whether ``dtype`` is of ``kind`` (a Dtype, "
          "a DtypeCategory, one of 'bool', 'signed integer', 'unsigned "
          "integer', 'integral', 'real floating', 'complex floating', "
          "'numeric', or a tuple of these).\n\n"
          "Returns:\n    bool") {
  cmx_dtype t = DTYPE(0);
  PyObject* kind = OBJ(1);
  if (!PyTuple_Check(kind)) {
    int r = isdtype_one(t, kind);
    return r < 0 ? NULL : PyBool_FromLong(r);
  }
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kind); i++) {
    int r = isdtype_one(t, PyTuple_GET_ITEM(kind, i));
    if (r < 0) return NULL;
    if (r) Py_RETURN_TRUE;
  }
  Py_RETURN_FALSE;
}

static cmxpy_spec* const dtype_functions[] = {
    &spec_issubdtype, &spec_result_type, &spec_can_cast, &spec_isdtype};

int cmxpy_init_dtype(PyObject* m) {
  if (PyType_Ready(&CmxDtype_Type) < 0 || PyType_Ready(&finfo_type) < 0 ||
      PyType_Ready(&iinfo_type) < 0)
    return -1;
  for (int t = 0; t < CMX_NUM_DTYPES; t++) {
    CmxDtypeObject* d = PyObject_New(CmxDtypeObject, &CmxDtype_Type);
    if (!d) return -1;
    d->t = (cmx_dtype)t;
    g_dtypes[t] = (PyObject*)d;
    Py_INCREF(d);
    if (PyModule_AddObject(m, attr_name((cmx_dtype)t), (PyObject*)d) < 0) {
      Py_DECREF(d);
      return -1;
    }
  }
  Py_INCREF(&CmxDtype_Type);
  if (PyModule_AddObject(m, "Dtype", (PyObject*)&CmxDtype_Type) < 0) return -1;
  Py_INCREF(&finfo_type);
  if (PyModule_AddObject(m, "finfo", (PyObject*)&finfo_type) < 0) return -1;
  Py_INCREF(&iinfo_type);
  if (PyModule_AddObject(m, "iinfo", (PyObject*)&iinfo_type) < 0) return -1;

  /* DtypeCategory: a Python enum, as nanobind's enums are. */
  static const struct {
    const char* name;
    cmx_dtype_category c;
  } cats[] = {{"complexfloating", CMX_CAT_COMPLEXFLOATING},
              {"floating", CMX_CAT_FLOATING},
              {"inexact", CMX_CAT_INEXACT},
              {"signedinteger", CMX_CAT_SIGNEDINTEGER},
              {"unsignedinteger", CMX_CAT_UNSIGNEDINTEGER},
              {"integer", CMX_CAT_INTEGER},
              {"number", CMX_CAT_NUMBER},
              {"generic", CMX_CAT_GENERIC}};
  const int ncats = (int)(sizeof cats / sizeof cats[0]);
  PyObject* members = PyList_New(ncats);
  if (!members) return -1;
  for (int i = 0; i < ncats; i++)
    PyList_SET_ITEM(members, i,
                    Py_BuildValue("(si)", cats[i].name, (int)cats[i].c));
  PyObject* enum_mod = PyImport_ImportModule("enum");
  if (!enum_mod) {
    Py_DECREF(members);
    return -1;
  }
  g_category_type =
      PyObject_CallMethod(enum_mod, "Enum", "sO", "DtypeCategory", members);
  Py_DECREF(enum_mod);
  Py_DECREF(members);
  if (!g_category_type) return -1;
  PyObject* modname = PyModule_GetNameObject(m);
  PyObject* doc = PyUnicode_FromString(
      "Type to hold categories of dtypes: generic > number > {integer > "
      "{signedinteger, unsignedinteger}, inexact > {floating, "
      "complexfloating}}; bool_ is only a generic.");
  int rc = (modname && doc) ? 0 : -1;
  if (!rc) rc = PyObject_SetAttrString(g_category_type, "__module__", modname);
  if (!rc) rc = PyObject_SetAttrString(g_category_type, "__doc__", doc);
  Py_XDECREF(modname);
  Py_XDECREF(doc);
  if (rc < 0) return -1;
  for (int i = 0; i < ncats; i++) {
    PyObject* v = PyObject_GetAttrString(g_category_type, cats[i].name);
    if (!v) return -1;
    g_categories[cats[i].c] = v; /* keeps the reference */
    Py_INCREF(v);
    if (PyModule_AddObject(m, cats[i].name, v) < 0) {
      Py_DECREF(v);
      return -1;
    }
  }
  Py_INCREF(g_category_type);
  if (PyModule_AddObject(m, "DtypeCategory", g_category_type) < 0) return -1;
  return cmxpy_add_functions(m, dtype_functions, CMXPY_COUNT(dtype_functions));
}
