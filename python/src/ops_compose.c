/* Ops of mlx.core that are compositions of C ops, done in the binding:
 * atleast_1d/2d/3d, unstack, meshgrid, slice and slice_update with start
 * indices (read from the array, so they evaluate it), asarray. */
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

/* atleast_Nd of one array: the shapes NumPy gives. */
static cmx_array atleast(cmx_array a, int n, cmx_stream s) {
  int nd = cmx_array_ndim(a);
  if (nd >= n) return cmx_array_retain(a);
  const int64_t* sh = cmx_array_shape(a);
  int64_t shape[3] = {1, 1, 1};
  if (n == 2 && nd == 1) shape[1] = sh[0];
  if (n == 3 && nd == 1) shape[1] = sh[0];
  if (n == 3 && nd == 2) shape[0] = sh[0], shape[1] = sh[1];
  cmx_array out = NULL;
  cmx_status st = cmx_reshape(&out, a, shape, n, s);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

static PyObject* call_atleast(PyObject* args, PyObject* kw, int n,
                              const char* fmt) {
  cmx_stream s;
  if (stream_only(kw, fmt, &s) < 0) return NULL;
  Py_ssize_t k = PyTuple_GET_SIZE(args);
  PyObject* list = PyList_New(k);
  if (!list) return NULL;
  for (Py_ssize_t i = 0; i < k; i++) {
    cmx_array a = cmxpy_to_array(PyTuple_GET_ITEM(args, i), fmt + 4);
    cmx_array r = a ? atleast(a, n, s) : NULL;
    cmx_array_release(a);
    PyObject* o = cmxpy_wrap(r);
    if (!o) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SET_ITEM(list, i, o);
  }
  if (k != 1) return list;
  PyObject* one = PyList_GET_ITEM(list, 0);
  Py_INCREF(one);
  Py_DECREF(list);
  return one;
}

static PyObject* f_atleast_1d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, 1, "|$O:atleast_1d");
}
static PyObject* f_atleast_2d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, 2, "|$O:atleast_2d");
}
static PyObject* f_atleast_3d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_atleast(args, kw, 3, "|$O:atleast_3d");
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
  if (!CMXPY_HAS(cmx_slice)) return cmxpy_missing("cmx_slice");
  cmx_array a = cmxpy_to_array(ao, "unstack");
  if (!a) return NULL;
  int nd = cmx_array_ndim(a);
  if (axis < -nd || axis >= nd) {
    cmx_array_release(a);
    PyErr_Format(PyExc_ValueError,
                 "[unstack] axis %d is out of bounds for array of dimension %d",
                 axis, nd);
    return NULL;
  }
  int ax = axis < 0 ? axis + nd : axis;
  int64_t n = cmx_array_shape(a)[ax];
  PyObject* list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list && i < n; i++) {
    int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
    for (int k = 0; k < nd; k++) {
      start[k] = k == ax ? i : 0;
      stop[k] = k == ax ? i + 1 : cmx_array_shape(a)[k];
    }
    cmx_array sl = NULL, sq = NULL;
    cmx_status st = cmx_slice(&sl, a, start, stop, NULL, s);
    if (st == CMX_OK) st = cmx_squeeze(&sq, sl, &ax, 1, s);
    cmx_array_release(sl);
    PyObject* o = cmxpy_result(st, &sq);
    if (!o)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, o);
  }
  cmx_array_release(a);
  return list;
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
  if (!CMXPY_HAS(cmx_reshape)) return cmxpy_missing("cmx_reshape");
  bool xy = !strcmp(indexing, "xy");
  if (!xy && strcmp(indexing, "ij")) {
    PyErr_SetString(PyExc_ValueError,
                    "[meshgrid] indexing must be either 'xy' or 'ij'");
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n > CMX_MAX_NDIM) {
    PyErr_SetString(PyExc_ValueError, "[meshgrid] too many arrays");
    return NULL;
  }
  int64_t full[CMX_MAX_NDIM];
  cmx_array in[CMX_MAX_NDIM] = {0};
  for (Py_ssize_t i = 0; i < n; i++) {
    in[i] = cmxpy_to_array(PyTuple_GET_ITEM(args, i), "meshgrid");
    if (!in[i]) {
      cmx_array_release_all(in, (size_t)n);
      return NULL;
    }
    full[i] = cmx_array_size(in[i]);
  }
  /* With 'xy' the first two output axes swap, as NumPy. */
  if (xy && n > 1) {
    int64_t t = full[0];
    full[0] = full[1];
    full[1] = t;
  }
  PyObject* list = PyList_New(n);
  for (Py_ssize_t i = 0; list && i < n; i++) {
    int pos = (int)i;
    if (xy && n > 1 && i < 2) pos = 1 - (int)i;
    int64_t shape[CMX_MAX_NDIM];
    for (Py_ssize_t k = 0; k < n; k++) shape[k] = k == pos ? full[k] : 1;
    cmx_array r = NULL, b = NULL;
    cmx_status st = cmx_reshape(&r, in[i], shape, (int)n, s);
    if (st == CMX_OK && !sparse) {
      st = cmx_broadcast_to(&b, r, full, (int)n, s);
      cmx_array_release(r);
      r = b;
    }
    PyObject* o = cmxpy_result(st, &r);
    if (!o)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, o);
  }
  cmx_array_release_all(in, (size_t)n);
  return list;
}

/* Start indices (an array or a sequence of ints) read as int64. */
static int read_starts(PyObject* o, int64_t* out, int* n, const char* fname) {
  cmx_array a = cmxpy_to_array(o, fname);
  if (!a) return -1;
  int rc = -1;
  if (cmx_array_ndim(a) > 1 || cmx_array_size(a) > CMX_MAX_NDIM ||
      !cmx_dtype_is_integer(cmx_array_dtype(a))) {
    PyErr_Format(PyExc_ValueError,
                 "[%s] start_indices must be a 1-d array of integers", fname);
  } else {
    PyObject* l = cmxpy_tolist(a);
    if (l && !PyList_Check(l)) { /* a scalar */
      PyObject* t = PyList_New(1);
      if (t) PyList_SET_ITEM(t, 0, l);
      l = t;
    }
    if (l) rc = cmxpy_shape_arg(l, out, n, fname);
    Py_XDECREF(l);
  }
  cmx_array_release(a);
  return rc;
}

/* Start/stop per axis of a from start indices along axes and sizes. */
static int slice_bounds(cmx_array a, PyObject* so, PyObject* axo,
                        const int64_t* sizes, int nsizes, int64_t* start,
                        int64_t* stop, const char* fname) {
  int64_t st[CMX_MAX_NDIM];
  int nst;
  cmxpy_axes ax;
  if (read_starts(so, st, &nst, fname) < 0 ||
      cmxpy_axes_arg(axo, &ax, fname) < 0)
    return -1;
  int nd = cmx_array_ndim(a);
  const int64_t* sh = cmx_array_shape(a);
  if (ax.all) {
    ax.n = nst;
    for (int i = 0; i < nst; i++) ax.v[i] = i;
  }
  if (ax.n != nst || (sizes && nsizes != nst) || nst > nd) {
    PyErr_Format(PyExc_ValueError,
                 "[%s] start_indices, axes and sizes must have one entry per "
                 "sliced axis",
                 fname);
    return -1;
  }
  for (int k = 0; k < nd; k++) start[k] = 0, stop[k] = sh[k];
  for (int i = 0; i < nst; i++) {
    int axis = ax.v[i] < 0 ? ax.v[i] + nd : ax.v[i];
    if (axis < 0 || axis >= nd) {
      PyErr_Format(PyExc_ValueError, "[%s] axis %d is out of bounds", fname,
                   ax.v[i]);
      return -1;
    }
    int64_t len = sizes ? sizes[i] : sh[axis];
    int64_t b = st[i] < 0 ? st[i] + sh[axis] : st[i];
    /* As MLX's dynamic slicing: the window is clamped into the axis. */
    if (b > sh[axis] - len) b = sh[axis] - len;
    if (b < 0) b = 0;
    start[axis] = b;
    stop[axis] = b + len;
  }
  return 0;
}

static PyObject* f_slice(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"",           "start_indices", "axes",
                           "slice_size", "stream",        NULL};
  PyObject *ao, *so, *axo, *szo, *sto = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$O:slice", kwlist, &ao, &so,
                                   &axo, &szo, &sto) ||
      cmxpy_stream_arg(sto, &s) < 0)
    return NULL;
  int64_t sizes[CMX_MAX_NDIM];
  int nsz;
  if (cmxpy_shape_arg(szo, sizes, &nsz, "slice") < 0) return NULL;
  cmx_array a = cmxpy_to_array(ao, "slice"), out = NULL;
  if (!a) return NULL;
  int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM];
  PyObject* r = NULL;
  if (slice_bounds(a, so, axo, sizes, nsz, start, stop, "slice") == 0)
    r = cmxpy_result(cmx_slice(&out, a, start, stop, NULL, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_slice_update(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"",     "update", "start_indices",
                           "axes", "stream", NULL};
  PyObject *ao, *uo, *so, *axo, *sto = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOO|$O:slice_update", kwlist,
                                   &ao, &uo, &so, &axo, &sto) ||
      cmxpy_stream_arg(sto, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "slice_update"), u = NULL, out = NULL;
  if (!a) return NULL;
  PyObject* r = NULL;
  u = cmxpy_to_operand(uo, cmx_array_dtype(a), "slice_update");
  if (u) {
    /* The window has the update's shape (right-aligned, 1 where the update
     * has fewer dims); it starts at start_indices along axes, 0 elsewhere. */
    int nd = cmx_array_ndim(a), und = cmx_array_ndim(u);
    int64_t start[CMX_MAX_NDIM], stop[CMX_MAX_NDIM], st[CMX_MAX_NDIM];
    int nst;
    cmxpy_axes ax;
    if (und <= nd && read_starts(so, st, &nst, "slice_update") == 0 &&
        cmxpy_axes_arg(axo, &ax, "slice_update") == 0) {
      if (ax.all) {
        ax.n = nst;
        for (int i = 0; i < nst; i++) ax.v[i] = i;
      }
      const int64_t* sh = cmx_array_shape(a);
      for (int k = 0; k < nd; k++) {
        int j = k - (nd - und);
        stop[k] = j >= 0 ? cmx_array_shape(u)[j] : 1; /* window size */
        start[k] = 0;
      }
      bool ok = ax.n == nst;
      for (int i = 0; ok && i < nst; i++) {
        int axis = ax.v[i] < 0 ? ax.v[i] + nd : ax.v[i];
        ok = axis >= 0 && axis < nd;
        if (!ok) break;
        int64_t b = st[i] < 0 ? st[i] + sh[axis] : st[i];
        if (b > sh[axis] - stop[axis]) b = sh[axis] - stop[axis];
        start[axis] = b < 0 ? 0 : b;
      }
      for (int k = 0; k < nd; k++) stop[k] += start[k];
      if (ok)
        r = cmxpy_result(cmx_slice_update(&out, a, u, start, stop, NULL, s),
                         &out);
      else
        PyErr_SetString(PyExc_ValueError,
                        "[slice_update] start_indices and axes must have one "
                        "entry per sliced axis");
    } else if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError,
                      "[slice_update] the update has more dimensions than the "
                      "array");
    }
  }
  cmx_array_release(a);
  cmx_array_release(u);
  return r;
}

static PyObject* f_asarray(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "dtype", NULL};
  PyObject *ao, *dto = Py_None;
  cmx_dtype t;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:asarray", kwlist, &ao,
                                   &dto) ||
      cmxpy_dtype_arg(dto, &t, true, "asarray") < 0)
    return NULL;
  if (CmxArray_Check(ao) &&
      (t == CMX_DTYPE_AUTO || t == cmx_array_dtype(CMXPY_ARR(ao)))) {
    Py_INCREF(ao);
    return ao;
  }
  return cmxpy_wrap(cmxpy_array_from_object(ao, t));
}

/* ---------------- closeness and equality ---------------- */
/* A chain of C ops: each step writes a temporary that `chain_end` releases
 * (keeping the last one); the first failure stops the chain. */
typedef struct {
  cmx_array t[24];
  int n;
  cmx_status st;
} chain;

static cmx_array* chain_slot(chain* c) {
  if (c->n == (int)(sizeof c->t / sizeof c->t[0])) {
    c->st = CMX_ERR_RUNTIME;
    return &c->t[c->n - 1];
  }
  return &c->t[c->n++];
}
#define STEP(c, call_with_out) \
  ((c)->st == CMX_OK ? ((c)->st = call_with_out, (c)->t[(c)->n - 1]) : NULL)
#define OUT(c) chain_slot(c)

static PyObject* chain_end(chain* c, cmx_array result) {
  cmx_array r = c->st == CMX_OK ? cmx_array_retain(result) : NULL;
  cmx_array_release_all(c->t, (size_t)c->n);
  return cmxpy_result(c->st, &r);
}

/* isclose as MLX: |a - b| <= atol + rtol * |b|, infinities close only to
 * the same infinity, NaNs close to NaNs only with equal_nan. */
static cmx_array isclose_chain(chain* c, cmx_array a, cmx_array b, double rtol,
                               double atol, bool equal_nan, cmx_stream s) {
  cmx_array rt = STEP(c, cmx_array_weak_float(OUT(c), rtol));
  cmx_array at = STEP(c, cmx_array_weak_float(OUT(c), atol));
  cmx_array absb = STEP(c, cmx_abs(OUT(c), b, s));
  cmx_array scaled = STEP(c, cmx_multiply(OUT(c), rt, absb, s));
  cmx_array rhs = STEP(c, cmx_add(OUT(c), at, scaled, s));
  cmx_array diff = STEP(c, cmx_subtract(OUT(c), a, b, s));
  cmx_array lhs = STEP(c, cmx_abs(OUT(c), diff, s));
  cmx_array close = STEP(c, cmx_less_equal(OUT(c), lhs, rhs, s));
  cmx_array ia = STEP(c, cmx_isinf(OUT(c), a, s));
  cmx_array ib = STEP(c, cmx_isinf(OUT(c), b, s));
  cmx_array any_inf = STEP(c, cmx_logical_or(OUT(c), ia, ib, s));
  cmx_array both_inf = STEP(c, cmx_logical_and(OUT(c), ia, ib, s));
  cmx_array finite = STEP(c, cmx_logical_not(OUT(c), any_inf, s));
  cmx_array r = STEP(c, cmx_logical_and(OUT(c), close, finite, s));
  cmx_array eq = STEP(c, cmx_equal(OUT(c), a, b, s));
  cmx_array same_inf = STEP(c, cmx_logical_and(OUT(c), both_inf, eq, s));
  r = STEP(c, cmx_logical_or(OUT(c), r, same_inf, s));
  if (equal_nan) {
    cmx_array na = STEP(c, cmx_isnan(OUT(c), a, s));
    cmx_array nb = STEP(c, cmx_isnan(OUT(c), b, s));
    cmx_array both_nan = STEP(c, cmx_logical_and(OUT(c), na, nb, s));
    r = STEP(c, cmx_logical_or(OUT(c), r, both_nan, s));
  }
  return r;
}

static PyObject* call_close(PyObject* args, PyObject* kw, bool all,
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
  cmx_array a, b;
  if (cmxpy_to_operands(ao, bo, &a, &b, fmt + 9) < 0) return NULL;
  chain c = {.st = CMX_OK};
  cmx_array r = isclose_chain(&c, a, b, rtol, atol, equal_nan, s);
  if (all) r = STEP(&c, cmx_all(OUT(&c), r, NULL, 0, false, s));
  cmx_array_release(a);
  cmx_array_release(b);
  return chain_end(&c, r);
}

static PyObject* f_isclose(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_close(args, kw, false, "OO|dd$pO:isclose");
}
static PyObject* f_allclose(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_close(args, kw, true, "OO|dd$pO:allclose");
}

static PyObject* f_array_equal(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "b", "equal_nan", "stream", NULL};
  PyObject *ao, *bo, *so = Py_None;
  int equal_nan = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|p$O:array_equal", kwlist, &ao,
                                   &bo, &equal_nan, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b;
  if (cmxpy_to_operands(ao, bo, &a, &b, "array_equal") < 0) return NULL;
  chain c = {.st = CMX_OK};
  cmx_array r;
  int nd = cmx_array_ndim(a);
  bool same =
      nd == cmx_array_ndim(b) && !memcmp(cmx_array_shape(a), cmx_array_shape(b),
                                         (size_t)nd * sizeof(int64_t));
  if (!same) { /* different shapes are simply not equal */
    r = STEP(&c, cmx_array_from_int64(OUT(&c), 0, CMX_BOOL));
  } else {
    r = STEP(&c, cmx_equal(OUT(&c), a, b, s));
    if (equal_nan) {
      cmx_array na = STEP(&c, cmx_isnan(OUT(&c), a, s));
      cmx_array nb = STEP(&c, cmx_isnan(OUT(&c), b, s));
      cmx_array both = STEP(&c, cmx_logical_and(OUT(&c), na, nb, s));
      r = STEP(&c, cmx_logical_or(OUT(&c), r, both, s));
    }
    r = STEP(&c, cmx_all(OUT(&c), r, NULL, 0, false, s));
  }
  cmx_array_release(a);
  cmx_array_release(b);
  return chain_end(&c, r);
}

/* nan_to_num as MLX: NaN -> nan, +inf -> posinf (default: the largest
 * finite value of the dtype), -inf -> neginf (default: the lowest);
 * non-floating arrays come back unchanged. */
static PyObject* f_nan_to_num(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "nan", "posinf", "neginf", "stream", NULL};
  PyObject *ao, *po = Py_None, *no = Py_None, *so = Py_None;
  double nan = 0.0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dOO$O:nan_to_num", kwlist, &ao,
                                   &nan, &po, &no, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "nan_to_num");
  if (!a) return NULL;
  cmx_dtype t = cmx_array_dtype(a);
  if (!cmx_dtype_is_floating(t)) return cmxpy_wrap(a);
  double big = t == CMX_FLOAT16    ? 65504.0
               : t == CMX_BFLOAT16 ? 3.3895313892515355e38
               : t == CMX_FLOAT64  ? 1.7976931348623157e308
                                   : 3.4028234663852886e38;
  double pinf = po == Py_None ? big : PyFloat_AsDouble(po);
  double ninf = no == Py_None ? -big : PyFloat_AsDouble(no);
  if (PyErr_Occurred()) {
    cmx_array_release(a);
    return NULL;
  }
  chain c = {.st = CMX_OK};
  cmx_array vn = STEP(&c, cmx_array_weak_float(OUT(&c), nan));
  cmx_array vp = STEP(&c, cmx_array_weak_float(OUT(&c), pinf));
  cmx_array vm = STEP(&c, cmx_array_weak_float(OUT(&c), ninf));
  cmx_array isn = STEP(&c, cmx_isnan(OUT(&c), a, s));
  cmx_array r = STEP(&c, cmx_where(OUT(&c), isn, vn, a, s));
  cmx_array isp = STEP(&c, cmx_isposinf(OUT(&c), a, s));
  r = STEP(&c, cmx_where(OUT(&c), isp, vp, r, s));
  cmx_array ism = STEP(&c, cmx_isneginf(OUT(&c), a, s));
  r = STEP(&c, cmx_where(OUT(&c), ism, vm, r, s));
  cmx_array_release(a);
  return chain_end(&c, r);
}

static const cmxpy_def compose_functions[] = {
    {{"atleast_1d", FN(f_atleast_1d), KW,
      "atleast_1d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least one dimension.\n\nReturns:\n    array or list(array): An array "
      "or list of arrays with at least one dimension."},
     NEEDS(cmx_reshape)},
    {{"atleast_2d", FN(f_atleast_2d), KW,
      "atleast_2d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least two dimensions ((n,) becomes (1, n)).\n\nReturns:\n    array or "
      "list(array): An array or list of arrays with at least two "
      "dimensions."},
     NEEDS(cmx_reshape)},
    {{"atleast_3d", FN(f_atleast_3d), KW,
      "atleast_3d(*arys, stream=None)\n--\n\nConvert all arrays to have at "
      "least three dimensions ((n,) becomes (1, n, 1), (m, n) becomes (m, n, "
      "1)).\n\nReturns:\n    array or list(array): An array or list of "
      "arrays with at least three dimensions."},
     NEEDS(cmx_reshape)},
    {{"unstack", FN(f_unstack), KW,
      "unstack(x, /, axis=0, *, stream=None)\n--\n\nSplit an array into its "
      "slices along an axis (the axis removed).\n\nReturns:\n    "
      "list(array): The slices."},
     NEEDS(cmx_squeeze)},
    {{"meshgrid", FN(f_meshgrid), KW,
      "meshgrid(*arrays, sparse=False, indexing='xy', stream=None)\n--\n\n"
      "Generate multidimensional coordinate grids from 1-D coordinate "
      "arrays (NumPy's meshgrid).\n\nReturns:\n    list(array): The output "
      "arrays."},
     NEEDS(cmx_broadcast_to)},
    {{"slice", FN(f_slice), KW,
      "slice(a, /, start_indices, axes, slice_size, *, stream=None)\n--\n\n"
      "Extract a window of the array: along axes[i] from start_indices[i] "
      "for slice_size[i] elements (start indices may be an array; the "
      "window is clamped into the axis).\n\nReturns:\n    array: The "
      "sliced output array."},
     NEEDS(cmx_slice)},
    {{"slice_update", FN(f_slice_update), KW,
      "slice_update(a, /, update, start_indices, axes, *, stream=None)\n--\n\n"
      "A copy of a with the window starting at start_indices along axes "
      "replaced by update.\n\nReturns:\n    array: The output array."},
     NEEDS(cmx_slice_update)},
    {{"isclose", FN(f_isclose), KW,
      "isclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, "
      "stream=None)\n--\n\nReturns a boolean array where two arrays are "
      "element-wise equal within a tolerance: |a - b| <= atol + rtol * |b|. "
      "Infinities are close only to the same infinity; NaNs are close to "
      "NaNs only with equal_nan.\n\nReturns:\n    array: The boolean "
      "output."},
     NEEDS(cmx_logical_or)},
    {{"allclose", FN(f_allclose), KW,
      "allclose(a, b, /, rtol=1e-05, atol=1e-08, *, equal_nan=False, "
      "stream=None)\n--\n\nApproximate comparison of two arrays: "
      "all(isclose(a, b, ...)).\n\nReturns:\n    array: The boolean output "
      "scalar."},
     NEEDS(cmx_all)},
    {{"array_equal", FN(f_array_equal), KW,
      "array_equal(a, b, *, equal_nan=False, stream=None)\n--\n\nArray "
      "equality check: true when the shapes are equal and all elements are "
      "equal (the dtypes may differ). NaNs count as equal with "
      "equal_nan.\n\nReturns:\n    array: A scalar boolean array."},
     NEEDS(cmx_all)},
    {{"nan_to_num", FN(f_nan_to_num), KW,
      "nan_to_num(a, nan=0.0, posinf=None, neginf=None, *, stream=None)\n--\n"
      "\nReplace NaN and infinities with finite numbers (posinf/neginf "
      "default to the largest/lowest finite value of the dtype).\n\n"
      "Returns:\n    array: The array with NaN and infinities replaced."},
     NEEDS(cmx_where)},
    {{"asarray", FN(f_asarray), KW,
      "asarray(a, dtype=None)\n--\n\nConvert the input to an array (the "
      "input itself when it already is one of the requested dtype)."},
     CMXPY_ALWAYS},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_compose(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, compose_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
