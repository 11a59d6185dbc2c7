/* Bindings of the misc, indexing and linear-algebra op families of ops.h:
 * atleast_1d/2d/3d, unstack, meshgrid, window functions, nan_to_num,
 * isclose/allclose/array_equal, take/take_along_axis/put_along_axis,
 * tensordot/inner/outer/vecdot/kron/trace and depends. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)
#define NEEDS(f) ((const void*)(f))

/* The keyword-only `stream` of a *args function. */
static int stream_only(PyObject* kw, const char* fmt, cmx_stream* s) {
  static char* kwlist[] = {"stream", NULL};
  PyObject* so = Py_None;
  PyObject* empty = PyTuple_New(0);
  if (!empty) return -1;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, fmt, kwlist, &so);
  Py_DECREF(empty);
  return ok ? cmxpy_stream_arg(so, s) : -1;
}

/* A list of n arrays (takes the references) or NULL with the exception. */
static PyObject* list_of(cmx_status st, cmx_array* outs, int n) {
  if (st != CMX_OK) {
    cmx_array_release_all(outs, (size_t)n);
    return cmxpy_raise(st);
  }
  PyObject* l = PyList_New(n);
  if (!l) {
    cmx_array_release_all(outs, (size_t)n);
    return NULL;
  }
  for (int i = 0; i < n; i++) PyList_SET_ITEM(l, i, cmxpy_wrap(outs[i]));
  for (int i = 0; i < n; i++)
    if (!PyList_GET_ITEM(l, i)) {
      Py_DECREF(l);
      return NULL;
    }
  return l;
}

/* ---------------- atleast_nd, unstack, meshgrid ---------------- */
typedef cmx_status (*atleast_fn)(cmx_array*, cmx_array, cmx_stream);

static PyObject* call_atleast(PyObject* args, PyObject* kw, atleast_fn f,
                              const char* fmt) {
  cmx_stream s;
  if (stream_only(kw, fmt, &s) < 0) return NULL;
  Py_ssize_t k = PyTuple_GET_SIZE(args);
  PyObject* list = PyList_New(k);
  for (Py_ssize_t i = 0; list && i < k; i++) {
    cmx_array a = cmxpy_to_array(PyTuple_GET_ITEM(args, i), fmt + 4), r = NULL;
    PyObject* o = a ? cmxpy_result(f(&r, a, s), &r) : NULL;
    cmx_array_release(a);
    if (!o)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, o);
  }
  if (!list || k != 1) return list;
  PyObject* one = PyList_GET_ITEM(list, 0);
  Py_INCREF(one);
  Py_DECREF(list);
  return one;
}

static PyObject* f_atleast_1d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, cmx_atleast_1d, "|$O:atleast_1d");
}
static PyObject* f_atleast_2d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, cmx_atleast_2d, "|$O:atleast_2d");
}
static PyObject* f_atleast_3d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, cmx_atleast_3d, "|$O:atleast_3d");
}

static PyObject* f_unstack(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "axis", "stream", NULL};
  PyObject *ao, *so = Py_None;
  int axis = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i$O:unstack", kwlist, &ao,
                                   &axis, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "unstack");
  if (!a) return NULL;
  int nd = cmx_array_ndim(a);
  int64_t n = axis >= -nd && axis < nd
                  ? cmx_array_shape(a)[axis < 0 ? axis + nd : axis]
                  : 0;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) {
    cmx_array_release(a);
    return PyErr_NoMemory();
  }
  cmx_status st = cmx_unstack(outs, a, axis, s);
  cmx_array_release(a);
  PyObject* l = list_of(st, outs, st == CMX_OK ? (int)n : 0);
  PyMem_RawFree(outs);
  return l;
}

static PyObject* f_meshgrid(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"sparse", "indexing", "stream", NULL};
  int sparse = 0;
  const char* indexing = "xy";
  PyObject* so = Py_None;
  PyObject* empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|$psO:meshgrid", kwlist,
                                       &sparse, &indexing, &so);
  Py_DECREF(empty);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  cmx_array* in = PyMem_RawCalloc((size_t)(2 * n + 1), sizeof *in);
  if (!in) return PyErr_NoMemory();
  cmx_array* outs = in + n;
  for (Py_ssize_t i = 0; i < n; i++)
    if (!(in[i] = cmxpy_to_array(PyTuple_GET_ITEM(args, i), "meshgrid"))) {
      cmx_array_release_all(in, (size_t)i);
      PyMem_RawFree(in);
      return NULL;
    }
  cmx_status st = cmx_meshgrid(outs, in, (int)n, sparse, indexing, s);
  cmx_array_release_all(in, (size_t)n);
  PyObject* l = list_of(st, outs, st == CMX_OK ? (int)n : 0);
  PyMem_RawFree(in);
  return l;
}

/* ---------------- windows ---------------- */
typedef cmx_status (*window_fn)(cmx_array*, int64_t, cmx_stream);
static PyObject* call_window(PyObject* args, PyObject* kw, window_fn f,
                             const char* fmt) {
  static char* kwlist[] = {"M", "stream", NULL};
  long long mlen;
  PyObject* so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &mlen, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(f(&out, mlen, s), &out);
}
#define WINDOW(name)                                                     \
  static PyObject* f_##name(PyObject* m, PyObject* args, PyObject* kw) { \
    (void)m;                                                             \
    return call_window(args, kw, cmx_##name, "L|$O:" #name);             \
  }
WINDOW(bartlett)
WINDOW(hanning)
WINDOW(hamming)
WINDOW(blackman)

/* ---------------- nan_to_num, closeness, equality ---------------- */
static int opt_double(PyObject* o, double* v, const double** p) {
  if (o == Py_None) {
    *p = NULL;
    return 0;
  }
  *v = PyFloat_AsDouble(o);
  if (*v == -1.0 && PyErr_Occurred()) return -1;
  *p = v;
  return 0;
}

static PyObject* f_nan_to_num(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "nan", "posinf", "neginf", "stream", NULL};
  PyObject *ao, *po = Py_None, *no = Py_None, *so = Py_None;
  double nan = 0.0, pv, nv;
  const double *pp, *np;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dOO$O:nan_to_num", kwlist, &ao,
                                   &nan, &po, &no, &so) ||
      opt_double(po, &pv, &pp) < 0 || opt_double(no, &nv, &np) < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "nan_to_num"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(cmx_nan_to_num(&out, a, nan, pp, np, s), &out);
  cmx_array_release(a);
  return r;
}

typedef cmx_status (*close_fn)(cmx_array*, cmx_array, cmx_array, double, double,
                               bool, cmx_stream);
static PyObject* call_close(PyObject* args, PyObject* kw, close_fn f,
                            const char* fmt) {
  static char* kwlist[] = {"a",         "b",      "rtol", "atol",
                           "equal_nan", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  double rtol = 1e-5, atol = 1e-8;
  int equal_nan = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &bo, &rtol,
                                   &atol, &equal_nan, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, fmt + 9) < 0) return NULL;
  PyObject* r = cmxpy_result(f(&out, a, b, rtol, atol, equal_nan, s), &out);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}
static PyObject* f_isclose(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_close(args, kw, cmx_isclose, "OO|dd$pO:isclose");
}
static PyObject* f_allclose(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_close(args, kw, cmx_allclose, "OO|dd$pO:allclose");
}

static PyObject* f_array_equal(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "b", "equal_nan", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  int equal_nan = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$pO:array_equal", kwlist, &ao,
                                   &bo, &equal_nan, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "array_equal") < 0) return NULL;
  PyObject* r = cmxpy_result(cmx_array_equal(&out, a, b, equal_nan, s), &out);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}

/* ---------------- take / along axis ---------------- */
/* The optional int axis argument (None: flattened). */
static int axis_opt(PyObject* o, int* axis, const int** p, const char* f) {
  *p = NULL;
  if (o == Py_None) return 0;
  if (cmxpy_int_arg(o, axis, f, "axis") < 0) return -1;
  *p = axis;
  return 0;
}

static PyObject* f_take(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "indices", "axis", "stream", NULL};
  PyObject *ao, *io, *axo = Py_None, *so = Py_None;
  int axis;
  const int* pax;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:take", kwlist, &ao, &io,
                                   &axo, &so) ||
      axis_opt(axo, &axis, &pax, "take") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "take"), idx = NULL, out = NULL;
  PyObject* r = NULL;
  if (a && (idx = cmxpy_to_array(io, "take")))
    r = cmxpy_result(cmx_take(&out, a, idx, pax, s), &out);
  cmx_array_release(a);
  cmx_array_release(idx);
  return r;
}

static PyObject* f_take_along_axis(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "indices", "axis", "stream", NULL};
  PyObject *ao, *io, *axo = Py_None, *so = Py_None;
  int axis;
  const int* pax;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:take_along_axis", kwlist,
                                   &ao, &io, &axo, &so) ||
      axis_opt(axo, &axis, &pax, "take_along_axis") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "take_along_axis"), idx = NULL, out = NULL;
  PyObject* r = NULL;
  if (a && (idx = cmxpy_to_array(io, "take_along_axis")))
    r = cmxpy_result(cmx_take_along_axis(&out, a, idx, pax, s), &out);
  cmx_array_release(a);
  cmx_array_release(idx);
  return r;
}

static PyObject* f_put_along_axis(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "indices", "values", "axis", "stream", NULL};
  PyObject *ao, *io, *vo, *axo = Py_None, *so = Py_None;
  int axis;
  const int* pax;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O$O:put_along_axis", kwlist,
                                   &ao, &io, &vo, &axo, &so) ||
      axis_opt(axo, &axis, &pax, "put_along_axis") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "put_along_axis"), idx = NULL, v = NULL,
            out = NULL;
  PyObject* r = NULL;
  if (a && (idx = cmxpy_to_array(io, "put_along_axis")) &&
      (v = cmxpy_to_operand(vo, cmx_array_dtype(a), "put_along_axis")))
    r = cmxpy_result(cmx_put_along_axis(&out, a, idx, v, pax, s), &out);
  cmx_array_release(a);
  cmx_array_release(idx);
  cmx_array_release(v);
  return r;
}

/* ---------------- linear algebra ---------------- */
static PyObject* f_tensordot(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "b", "axes", "stream", NULL};
  PyObject *ao, *bo, *axo = NULL, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:tensordot", kwlist, &ao,
                                   &bo, &axo, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  int n = 2;
  cmxpy_axes xa = {.n = 0}, xb = {.n = 0};
  bool pairs = axo && !PyIndex_Check(axo);
  if (axo && !pairs && cmxpy_int_arg(axo, &n, "tensordot", "axes") < 0)
    return NULL;
  if (pairs) {
    PyObject* seq = PySequence_Fast(axo,
                                    "[tensordot] axes must be an int "
                                    "or a pair of axis lists");
    if (!seq) return NULL;
    int rc = PySequence_Fast_GET_SIZE(seq) == 2 ? 0 : -1;
    if (!rc)
      rc = cmxpy_axes_arg(PySequence_Fast_GET_ITEM(seq, 0), &xa, "tensordot") ||
           cmxpy_axes_arg(PySequence_Fast_GET_ITEM(seq, 1), &xb, "tensordot");
    Py_DECREF(seq);
    if (!rc && (xa.all || xb.all || xa.n != xb.n)) rc = -1;
    if (rc) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError,
                        "[tensordot] axes must be two lists of the same "
                        "length");
      return NULL;
    }
  }
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "tensordot") < 0) return NULL;
  cmx_status st = pairs ? cmx_tensordot_axes(&out, a, b, xa.v, xb.v, xa.n, s)
                        : cmx_tensordot(&out, a, b, n, s);
  cmx_array_release(a);
  cmx_array_release(b);
  return cmxpy_result(st, &out);
}

typedef cmx_status (*pair_fn)(cmx_array*, cmx_array, cmx_array, cmx_stream);
static PyObject* call_pair(PyObject* args, PyObject* kw, pair_fn f,
                           const char* fmt) {
  static char* kwlist[] = {"a", "b", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &bo, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, fmt + 6) < 0) return NULL;
  PyObject* r = cmxpy_result(f(&out, a, b, s), &out);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}
static PyObject* f_inner(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_pair(args, kw, cmx_inner, "OO|$O:inner");
}
static PyObject* f_outer(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_pair(args, kw, cmx_outer, "OO|$O:outer");
}
static PyObject* f_kron(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_pair(args, kw, cmx_kron, "OO|$O:kron");
}

static PyObject* f_vecdot(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "b", "axis", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  int axis = -1;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|i$O:vecdot", kwlist, &ao, &bo,
                                   &axis, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "vecdot") < 0) return NULL;
  PyObject* r = cmxpy_result(cmx_vecdot(&out, a, b, axis, s), &out);
  cmx_array_release(a);
  cmx_array_release(b);
  return r;
}

static PyObject* f_trace(PyObject* m, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"",      "offset", "axis1", "axis2",
                           "dtype", "stream", NULL};
  (void)m;
  PyObject *ao, *dto = Py_None, *so = Py_None;
  int offset = 0, axis1 = 0, axis2 = 1;
  cmx_dtype t;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|iiiO$O:trace", kwlist, &ao,
                                   &offset, &axis1, &axis2, &dto, &so) ||
      cmxpy_dtype_arg(dto, &t, true, "trace") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "trace"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(cmx_trace(&out, a, offset, axis1, axis2,
                                       t == CMX_DTYPE_AUTO ? NULL : &t, s),
                             &out);
  cmx_array_release(a);
  return r;
}

/* depends(inputs, dependencies): inputs (an array or a list of arrays)
 * whose computation waits for the dependencies; same structure back. */
static PyObject* f_depends(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"inputs", "dependencies", NULL};
  PyObject *io, *dep;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:depends", kwlist, &io, &dep))
    return NULL;
  bool single = CmxArray_Check(io);
  PyObject* ins = single ? PyTuple_Pack(1, io)
                         : PySequence_Fast(io,
                                           "[depends] inputs must be an "
                                           "array or a list of arrays");
  /* not with the first's exception pending (SystemError) */
  PyObject* deps = !ins ? NULL
                   : CmxArray_Check(dep)
                       ? PyTuple_Pack(1, dep)
                       : PySequence_Fast(dep,
                                         "[depends] dependencies must be "
                                         "an array or a list of arrays");
  PyObject* r = NULL;
  if (ins && deps) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(ins);
    Py_ssize_t k = PySequence_Fast_GET_SIZE(deps);
    cmx_array* buf = PyMem_RawCalloc((size_t)(2 * n + k + 1), sizeof *buf);
    int ok = buf != NULL;
    for (Py_ssize_t i = 0; ok && i < n + k; i++) {
      PyObject* o = i < n ? PySequence_Fast_GET_ITEM(ins, i)
                          : PySequence_Fast_GET_ITEM(deps, i - n);
      ok = (buf[i] = cmxpy_to_array(o, "depends")) != NULL;
    }
    if (ok) {
      cmx_array* outs = buf + n + k;
      cmx_status st =
          cmx_depends(outs, buf, (int)n, buf + n, (int)k, CMX_STREAM_DEFAULT);
      PyObject* l = list_of(st, outs, st == CMX_OK ? (int)n : 0);
      if (l && single) {
        r = PyList_GET_ITEM(l, 0);
        Py_INCREF(r);
        Py_DECREF(l);
      } else {
        r = l;
      }
    } else if (!buf) {
      PyErr_NoMemory();
    }
    if (buf) cmx_array_release_all(buf, (size_t)(n + k));
    PyMem_RawFree(buf);
  }
  Py_XDECREF(ins);
  Py_XDECREF(deps);
  return r;
}

static const cmxpy_def misc_functions[] = {
    {{"atleast_1d", FN(f_atleast_1d), KW,
      "atleast_1d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least one dimension.\n\nReturns:\n    array or list(array): An array "
      "or list of arrays with at least one dimension."},
     NEEDS(cmx_atleast_1d)},
    {{"atleast_2d", FN(f_atleast_2d), KW,
      "atleast_2d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least two dimensions ((n,) becomes (1, n)).\n\nReturns:\n    array or "
      "list(array): An array or list of arrays with at least two "
      "dimensions."},
     NEEDS(cmx_atleast_2d)},
    {{"atleast_3d", FN(f_atleast_3d), KW,
      "atleast_3d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, "
      "1)).\n\nReturns:\n    array or list(array): An array or list of "
      "arrays with at least three dimensions."},
     NEEDS(cmx_atleast_3d)},
    {{"unstack", FN(f_unstack), KW,
      "unstack(x, /, axis=0, *, stream=None)\n--\n\nSplit an array into its "
      "slices along an axis (the axis removed).\n\nReturns:\n    "
      "list(array): The slices."},
     NEEDS(cmx_unstack)},
    {{"meshgrid", FN(f_meshgrid), KW,
      "meshgrid(*arrays, sparse=False, indexing='xy', stream=None)\n--\n\n"
      "Generate multidimensional coordinate grids from 1-D coordinate "
      "arrays (NumPy's meshgrid).\n\nReturns:\n    list(array): The output "
      "arrays."},
     NEEDS(cmx_meshgrid)},
    {{"bartlett", FN(f_bartlett), KW,
      "bartlett(M, *, stream=None)\n--\n\nThe Bartlett (triangular) window "
      "of length M (float32)."},
     NEEDS(cmx_bartlett)},
    {{"hanning", FN(f_hanning), KW,
      "hanning(M, *, stream=None)\n--\n\nThe Hanning window of length M "
      "(float32)."},
     NEEDS(cmx_hanning)},
    {{"hamming", FN(f_hamming), KW,
      "hamming(M, *, stream=None)\n--\n\nThe Hamming window of length M "
      "(float32)."},
     NEEDS(cmx_hamming)},
    {{"blackman", FN(f_blackman), KW,
      "blackman(M, *, stream=None)\n--\n\nThe Blackman window of length M "
      "(float32)."},
     NEEDS(cmx_blackman)},
    {{"nan_to_num", FN(f_nan_to_num), KW,
      "nan_to_num(a, nan=0.0, posinf=None, neginf=None, *, stream=None)\n--\n"
      "\nReplace NaN and infinities with finite numbers (posinf/neginf "
      "default to the largest/lowest finite value of the dtype).\n\n"
      "Returns:\n    array: The array with NaN and infinities replaced."},
     NEEDS(cmx_nan_to_num)},
    {{"isclose", FN(f_isclose), KW,
      "isclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, "
      "stream=None)\n--\n\nReturns a boolean array where two arrays are "
      "element-wise equal within a tolerance: |a - b| <= atol + rtol * |b|. "
      "Infinities are close only to the same infinity; NaNs are close to "
      "NaNs only with equal_nan.\n\nReturns:\n    array: The boolean "
      "output."},
     NEEDS(cmx_isclose)},
    {{"allclose", FN(f_allclose), KW,
      "allclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, "
      "stream=None)\n--\n\nApproximate comparison of two arrays: "
      "all(isclose(a, b, ...)).\n\nReturns:\n    array: The boolean output "
      "scalar."},
     NEEDS(cmx_allclose)},
    {{"array_equal", FN(f_array_equal), KW,
      "array_equal(a, b, *, equal_nan=False, stream=None)\n--\n\nArray "
      "equality check: true when the shapes are equal and all elements are "
      "equal (the dtypes may differ). NaNs count as equal with "
      "equal_nan.\n\nReturns:\n    array: A scalar boolean array."},
     NEEDS(cmx_array_equal)},
    {{"take", FN(f_take), KW,
      "take(a, /, indices, axis=None, *, stream=None)\n--\n\nTake elements "
      "along an axis (of the flattened array when axis is None).\n\n"
      "Returns:\n    array: The indexed values of a."},
     NEEDS(cmx_take)},
    {{"take_along_axis", FN(f_take_along_axis), KW,
      "take_along_axis(a, /, indices, axis=None, *, stream=None)\n--\n\n"
      "Take values along an axis at the specified indices (NumPy's "
      "take_along_axis).\n\nReturns:\n    array: The output array."},
     NEEDS(cmx_take_along_axis)},
    {{"put_along_axis", FN(f_put_along_axis), KW,
      "put_along_axis(a, /, indices, values, axis=None, *, stream=None)\n--\n"
      "\nA copy of a with values put along an axis at the specified "
      "indices.\n\nReturns:\n    array: The output array."},
     NEEDS(cmx_put_along_axis)},
    {{"tensordot", FN(f_tensordot), KW,
      "tensordot(a, b, /, axes=2, *, stream=None)\n--\n\nCompute the tensor "
      "dot product along the specified axes: the last `axes` axes of a with "
      "the first of b, or the axes of a and b given as two lists.\n\n"
      "Returns:\n    array: The tensor dot product."},
     NEEDS(cmx_tensordot)},
    {{"inner", FN(f_inner), KW,
      "inner(a, b, /, *, stream=None)\n--\n\nOrdinary inner product of "
      "vectors for 1-D arrays, in higher dimensions a sum product over the "
      "last axes.\n\nReturns:\n    array: The inner product."},
     NEEDS(cmx_inner)},
    {{"outer", FN(f_outer), KW,
      "outer(a, b, /, *, stream=None)\n--\n\nCompute the outer product of "
      "two 1-D arrays (others are flattened).\n\nReturns:\n    array: The "
      "outer product."},
     NEEDS(cmx_outer)},
    {{"vecdot", FN(f_vecdot), KW,
      "vecdot(a, b, /, axis=-1, *, stream=None)\n--\n\nsum(conj(a) * b, "
      "axis) with a and b broadcast together.\n\nReturns:\n    array: The "
      "vector dot product."},
     NEEDS(cmx_vecdot)},
    {{"kron", FN(f_kron), KW,
      "kron(a, b, *, stream=None)\n--\n\nThe Kronecker product of two "
      "arrays.\n\nReturns:\n    array: The Kronecker product."},
     NEEDS(cmx_kron)},
    {{"trace", FN(f_trace), KW,
      "trace(a, /, offset=0, axis1=0, axis2=1, dtype=None, *, stream=None)\n"
      "--\n\nSum along the specified diagonal of the (axis1, axis2) "
      "planes.\n\nReturns:\n    array: The sum of the diagonal(s)."},
     NEEDS(cmx_trace)},
    {{"depends", FN(f_depends), KW,
      "depends(inputs, dependencies)\n--\n\nThe inputs (an array or a list "
      "of arrays), whose computation waits for the dependencies to be "
      "evaluated.\n\nReturns:\n    array or list(array): The inputs."},
     NEEDS(cmx_depends)},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_misc(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, misc_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
