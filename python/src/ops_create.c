/* Creation ops (zeros, ones, full, arange, linspace, eye, tri ...) and
 * matrix products (matmul, addmm), with MLX's argument names and
 * defaults. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)
#define NEEDS(f) ((const void*)(f))

/* Releases the input a; wraps *out (see cmxpy_result). */
static PyObject* finish(cmx_status st, cmx_array* out, cmx_array a) {
  cmx_array_release(a);
  return cmxpy_result(st, out);
}

#define OPEN_ARRAY(name, a, ao)           \
  cmx_array a = cmxpy_to_array(ao, name); \
  if (!a) return NULL

/* ---------------- creation ---------------- */
static int dtype_kw(PyObject* o, cmx_dtype* t, cmx_dtype dflt,
                    const char* fname) {
  if (cmxpy_dtype_arg(o, t, true, fname) < 0) return -1;
  if (*t == CMX_DTYPE_AUTO) *t = dflt;
  return 0;
}

typedef cmx_status (*shape_fn)(cmx_array*, const int64_t*, int, cmx_dtype,
                               cmx_stream);
static PyObject* call_shape_ctor(PyObject* args, PyObject* kw, shape_fn f,
                                 const char* name) {
  static char* kwlist[] = {"shape", "dtype", "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, "O|O$O:%s", name);
  PyObject *sho, *dto = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &sho, &dto, &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_dtype t;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, name) < 0 ||
      dtype_kw(dto, &t, CMX_FLOAT32, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(f(&out, shape, nd, t, s), &out);
}
static PyObject* f_zeros(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_shape_ctor(args, kw, cmx_zeros, "zeros");
}
static PyObject* f_ones(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_shape_ctor(args, kw, cmx_ones, "ones");
}

typedef cmx_status (*like_fn)(cmx_array*, cmx_array, cmx_stream);
static PyObject* call_like(PyObject* args, PyObject* kw, like_fn f,
                           const char* name) {
  static char* kwlist[] = {"", "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, "O|$O:%s", name);
  PyObject *ao, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY(name, a, ao);
  cmx_array out = NULL;
  return finish(f(&out, a, s), &out, a);
}
static PyObject* f_zeros_like(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_like(args, kw, cmx_zeros_like, "zeros_like");
}
static PyObject* f_ones_like(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_like(args, kw, cmx_ones_like, "ones_like");
}

static PyObject* f_full(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"shape", "vals", "dtype", "stream", NULL};
  PyObject *sho, *vo, *dto = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:full", kwlist, &sho, &vo,
                                   &dto, &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_dtype t;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, "full") < 0 ||
      cmxpy_dtype_arg(dto, &t, true, "full") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array v = cmxpy_array_from_object(vo, t), out = NULL;
  if (!v) return NULL;
  return finish(cmx_full(&out, shape, nd, v, t, s), &out, v);
}

static PyObject* f_full_like(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "fill_value", "dtype", "stream", NULL};
  PyObject *ao, *vo, *dto = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:full_like", kwlist, &ao,
                                   &vo, &dto, &so))
    return NULL;
  cmx_dtype t;
  cmx_stream s;
  if (cmxpy_dtype_arg(dto, &t, true, "full_like") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("full_like", a, ao);
  cmx_array v = cmxpy_to_operand(
      vo, t == CMX_DTYPE_AUTO ? cmx_array_dtype(a) : t, "full_like");
  cmx_array out = NULL;
  if (!v) {
    cmx_array_release(a);
    return NULL;
  }
  cmx_status st = cmx_full_like(&out, a, v, t, s);
  cmx_array_release(v);
  return finish(st, &out, a);
}

/* True for Python ints (not bools, not floats). */
static bool is_int(PyObject* o) {
  return PyLong_Check(o) && !PyBool_Check(o);
}

static PyObject* f_arange(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"start", "stop", "step", "dtype", "stream", NULL};
  PyObject *a0 = Py_None, *a1 = Py_None, *a2 = Py_None, *dto = Py_None,
           *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOO$O:arange", kwlist, &a0, &a1,
                                   &a2, &dto, &so))
    return NULL;
  /* arange(stop) or arange(start, stop[, step]). */
  PyObject *start = a0, *stop = a1, *step = a2;
  if (a1 == Py_None) {
    start = Py_None;
    stop = a0;
  }
  if (stop == Py_None) {
    PyErr_SetString(PyExc_TypeError, "[arange] stop is required");
    return NULL;
  }
  PyObject* vals[3] = {start, stop, step};
  double v[3] = {0, 0, 1};
  bool all_int = true;
  for (int i = 0; i < 3; i++) {
    if (vals[i] == Py_None) continue;
    if (!PyNumber_Check(vals[i]) || PyComplex_Check(vals[i])) {
      PyErr_Format(PyExc_TypeError,
                   "[arange] expected a real number, got %.100s",
                   Py_TYPE(vals[i])->tp_name);
      return NULL;
    }
    v[i] = PyFloat_AsDouble(vals[i]);
    if (v[i] == -1.0 && PyErr_Occurred()) return NULL;
    if (!is_int(vals[i])) all_int = false;
  }
  cmx_dtype t;
  cmx_stream s;
  if (dtype_kw(dto, &t, all_int ? CMX_INT32 : CMX_FLOAT32, "arange") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_arange(&out, v[0], v[1], v[2], t, s), &out);
}

static PyObject* f_linspace(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"start", "stop", "num", "dtype", "stream", NULL};
  double start, stop;
  long long num = 50;
  PyObject *dto = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "dd|LO$O:linspace", kwlist, &start,
                                   &stop, &num, &dto, &so))
    return NULL;
  cmx_dtype t;
  cmx_stream s;
  if (dtype_kw(dto, &t, CMX_FLOAT32, "linspace") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_linspace(&out, start, stop, num, t, s), &out);
}

typedef cmx_status (*nmk_fn)(cmx_array*, int64_t, int64_t, int64_t, cmx_dtype,
                             cmx_stream);
static PyObject* call_nmk(PyObject* args, PyObject* kw, nmk_fn f,
                          const char* name) {
  static char* kwlist[] = {"n", "m", "k", "dtype", "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, "L|OLO$O:%s", name);
  long long n, k = 0;
  int64_t m = -1;
  PyObject *mo = Py_None, *dto = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &n, &mo, &k, &dto,
                                   &so))
    return NULL;
  cmx_dtype t;
  cmx_stream s;
  if ((mo != Py_None && cmxpy_int64_arg(mo, &m, name, "m") < 0) ||
      dtype_kw(dto, &t, CMX_FLOAT32, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(f(&out, n, mo == Py_None ? -1 : m, k, t, s), &out);
}
static PyObject* f_eye(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_nmk(args, kw, cmx_eye, "eye");
}
static PyObject* f_tri(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_nmk(args, kw, cmx_tri, "tri");
}

static PyObject* f_identity(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"n", "dtype", "stream", NULL};
  long long n;
  PyObject *dto = Py_None, *so = Py_None;
  cmx_dtype t;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "L|O$O:identity", kwlist, &n, &dto,
                                   &so) ||
      dtype_kw(dto, &t, CMX_FLOAT32, "identity") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_identity(&out, n, t, s), &out);
}

typedef cmx_status (*tri_fn)(cmx_array*, cmx_array, int64_t, cmx_stream);
static PyObject* call_trilu(PyObject* args, PyObject* kw, tri_fn f,
                            const char* name) {
  static char* kwlist[] = {"x", "k", "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, "O|L$O:%s", name);
  PyObject *ao, *so = Py_None;
  long long k = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &k, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY(name, a, ao);
  cmx_array out = NULL;
  return finish(f(&out, a, k, s), &out, a);
}
static PyObject* f_tril(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_trilu(args, kw, cmx_tril, "tril");
}
static PyObject* f_triu(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  return call_trilu(args, kw, cmx_triu, "triu");
}

/* ---------------- matrix products ---------------- */
static PyObject* f_matmul(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"a", "b", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:matmul", kwlist, &ao, &bo,
                                   &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "matmul"), b = NULL, out = NULL;
  if (!a || !(b = cmxpy_to_array(bo, "matmul"))) {
    cmx_array_release(a);
    return NULL;
  }
  cmx_status st = cmx_matmul(&out, a, b, s);
  cmx_array_release(b);
  return finish(st, &out, a);
}

static PyObject* f_addmm(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"c", "a", "b", "alpha", "beta", "stream", NULL};
  PyObject *co, *ao, *bo, *so = Py_None;
  float alpha = 1.0f, beta = 1.0f;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|ff$O:addmm", kwlist, &co, &ao,
                                   &bo, &alpha, &beta, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array c = cmxpy_to_array(co, "addmm"), a = NULL, b = NULL, out = NULL;
  PyObject* r = NULL;
  if (c && (a = cmxpy_to_array(ao, "addmm")) &&
      (b = cmxpy_to_array(bo, "addmm")))
    r = cmxpy_result(cmx_addmm(&out, c, a, b, alpha, beta, s), &out);
  cmx_array_release(c);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}

static const cmxpy_def create_functions[] = {
    {{"zeros", FN(f_zeros), KW,
      "zeros(shape, dtype=None, *, stream=None)\n--\n\nConstruct an "
      "array of zeros.\n\nReturns:\n    array: The array of zeros."},
     NEEDS(cmx_zeros)},
    {{"ones", FN(f_ones), KW,
      "ones(shape, dtype=None, *, stream=None)\n--\n\nConstruct an array "
      "of ones.\n\nReturns:\n    array: The array of ones."},
     NEEDS(cmx_ones)},
    {{"empty", FN(f_zeros), KW,
      "empty(shape, dtype=None, *, stream=None)\n--\n\nAn array of the "
      "given shape (zero-filled)."},
     NEEDS(cmx_zeros)},
    {{"zeros_like", FN(f_zeros_like), KW,
      "zeros_like(a, /, *, stream=None)\n--\n\nAn array of zeros like the "
      "input.\n\nReturns:\n    array: The array of zeros."},
     NEEDS(cmx_zeros_like)},
    {{"ones_like", FN(f_ones_like), KW,
      "ones_like(a, /, *, stream=None)\n--\n\nAn array of ones like the "
      "input.\n\nReturns:\n    array: The array of ones."},
     NEEDS(cmx_ones_like)},
    {{"empty_like", FN(f_zeros_like), KW,
      "empty_like(a, /, *, stream=None)\n--\n\nAn array like the input "
      "(zero-filled)."},
     NEEDS(cmx_zeros_like)},
    {{"full", FN(f_full), KW,
      "full(shape, vals, dtype=None, *, stream=None)\n--\n\nConstruct an "
      "array with the given value (vals broadcast to shape; dtype "
      "defaults to that of vals).\n\nReturns:\n    array: The output "
      "array."},
     NEEDS(cmx_full)},
    {{"full_like", FN(f_full_like), KW,
      "full_like(a, /, fill_value, dtype=None, *, stream=None)\n--\n\nAn "
      "array of the shape (and dtype unless given) of a, filled with "
      "fill_value."},
     NEEDS(cmx_full_like)},
    {{"arange", FN(f_arange), KW,
      "arange(start, stop, step=None, dtype=None, *, stream=None)\n--\n\n"
      "Generates ranges of numbers: arange(stop) or arange(start, stop, "
      "step). int32 when every bound is an int, else float32.\n\n"
      "Returns:\n    array: The range of values."},
     NEEDS(cmx_arange)},
    {{"linspace", FN(f_linspace), KW,
      "linspace(start, stop, num=50, dtype=None, *, stream=None)\n--\n\n"
      "Generate num evenly spaced numbers over [start, stop].\n\n"
      "Returns:\n    array: The range of values."},
     NEEDS(cmx_linspace)},
    {{"eye", FN(f_eye), KW,
      "eye(n, m=None, k=0, dtype=None, *, stream=None)\n--\n\nCreate an "
      "identity matrix or a general diagonal matrix (ones on diagonal "
      "k).\n\nReturns:\n    array: An n x m array."},
     NEEDS(cmx_eye)},
    {{"identity", FN(f_identity), KW,
      "identity(n, dtype=None, *, stream=None)\n--\n\nCreate a square "
      "identity matrix.\n\nReturns:\n    array: An n x n identity matrix."},
     NEEDS(cmx_identity)},
    {{"tri", FN(f_tri), KW,
      "tri(n, m=None, k=0, dtype=None, *, stream=None)\n--\n\nAn array "
      "with ones at and below the k-th diagonal and zeros elsewhere.\n\n"
      "Returns:\n    array: The array."},
     NEEDS(cmx_tri)},
    {{"tril", FN(f_tril), KW,
      "tril(x, k=0, *, stream=None)\n--\n\nZeros the elements above the "
      "k-th diagonal.\n\nReturns:\n    array: The lower triangle."},
     NEEDS(cmx_tril)},
    {{"triu", FN(f_triu), KW,
      "triu(x, k=0, *, stream=None)\n--\n\nZeros the elements below the "
      "k-th diagonal.\n\nReturns:\n    array: The upper triangle."},
     NEEDS(cmx_triu)},
    {{"matmul", FN(f_matmul), KW,
      "matmul(a, b, *, stream=None)\n--\n\nMatrix multiplication with numpy "
      "broadcasting (1-d operands are promoted and squeezed).\n\nReturns:\n"
      "    array: The matrix product of a and b."},
     NEEDS(cmx_matmul)},
    {{"addmm", FN(f_addmm), KW,
      "addmm(c, a, b, /, alpha=1.0, beta=1.0, *, stream=None)\n--\n\n"
      "alpha * (a @ b) + beta * c.\n\nReturns:\n    array: The result."},
     NEEDS(cmx_addmm)},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_create(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, create_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
