/* Ops of mlx.core done in the binding: slice and slice_update with start
 * indices given as an array (read from it, so they evaluate it; MLX's
 * dynamic slicing) over cmx_slice / cmx_slice_update, and asarray. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)
#define NEEDS(f) ((const void*)(f))

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

static const cmxpy_def compose_functions[] = {
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
