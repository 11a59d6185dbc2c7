/* Shape ops with their own signatures (reshape, transpose, concatenate,
 * split, pad ...), with MLX's argument names and defaults, plus the array
 * methods among them (reshape(*shape), transpose(*axes), ...). Creation
 * ops and matrix products are in ops_create.c. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)

/* Parses "O" + fmt into the first argument (an array) and the rest. */
#define OPEN_ARRAY(name, a, ao)           \
  cmx_array a = cmxpy_to_array(ao, name); \
  if (!a) return NULL

/* Releases the input a; wraps *out (see cmxpy_result). */
static PyObject* finish(cmx_status st, cmx_array* out, cmx_array a) {
  cmx_array_release(a);
  return cmxpy_result(st, out);
}

/* A list of arrays from a sequence argument (new references in *out). */
static int array_list(PyObject* o, const char* fname, cmx_array** out, int* n) {
  PyObject* seq = PySequence_Fast(o, "expected a list or tuple of arrays");
  if (!seq) return -1;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  cmx_array* a = PyMem_RawCalloc((size_t)(len ? len : 1), sizeof *a);
  if (!a) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; i++) {
    a[i] = cmxpy_to_array(PySequence_Fast_GET_ITEM(seq, i), fname);
    if (!a[i]) {
      cmx_array_release_all(a, (size_t)i);
      PyMem_RawFree(a);
      Py_DECREF(seq);
      return -1;
    }
  }
  Py_DECREF(seq);
  *out = a;
  *n = (int)len;
  return 0;
}

static void free_list(cmx_array* a, int n) {
  if (!a) return;
  cmx_array_release_all(a, (size_t)n);
  PyMem_RawFree(a);
}

static PyObject* list_result(cmx_status st, cmx_array* outs, int n) {
  if (st != CMX_OK) {
    for (int i = 0; i < n; i++) cmx_array_release(outs[i]);
    return cmxpy_raise(st);
  }
  PyObject* l = PyList_New(n);
  if (!l) {
    for (int i = 0; i < n; i++) cmx_array_release(outs[i]);
    return NULL;
  }
  for (int i = 0; i < n; i++) PyList_SET_ITEM(l, i, cmxpy_wrap(outs[i]));
  return l;
}

/* ---------------- shape ---------------- */
static PyObject* f_reshape(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "shape", "stream", NULL};
  PyObject *ao, *sho, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:reshape", kwlist, &ao, &sho,
                                   &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, "reshape") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("reshape", a, ao);
  cmx_array out = NULL;
  return finish(cmx_reshape(&out, a, shape, nd, s), &out, a);
}

/* a.reshape(*shape) or a.reshape(shape). */
static PyObject* m_reshape(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"stream", NULL};
  PyObject* so = Py_None;
  PyObject* empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|$O:reshape", kwlist, &so);
  Py_DECREF(empty);
  if (!ok) return NULL;
  PyObject* sho =
      PyTuple_GET_SIZE(args) == 1 && !PyIndex_Check(PyTuple_GET_ITEM(args, 0))
          ? PyTuple_GET_ITEM(args, 0)
          : args;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, "reshape") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(cmx_reshape(&out, CMXPY_ARR(self), shape, nd, s), &out);
}

static PyObject* f_flatten(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "start_axis", "end_axis", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *so = Py_None;
  int start = 0, end = -1;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, "O|ii$O:flatten", kwlist, &ao,
                                       &start, &end, &so);
  Py_DECREF(full);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  OPEN_ARRAY("flatten", a, ao);
  cmx_array out = NULL;
  return finish(cmx_flatten(&out, a, start, end, s), &out, a);
}

static PyObject* f_unflatten(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "axis", "shape", "stream", NULL};
  PyObject *ao, *sho, *so = Py_None;
  int axis;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OiO|$O:unflatten", kwlist, &ao,
                                   &axis, &sho, &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, "unflatten") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("unflatten", a, ao);
  cmx_array out = NULL;
  return finish(cmx_unflatten(&out, a, axis, shape, nd, s), &out, a);
}

typedef cmx_status (*axes_fn)(cmx_array*, cmx_array, const int*, int,
                              cmx_stream);

/* f(a, /, axis=None|int|seq, *, stream): squeeze, flip; expand_dims needs
 * the axis. */
static PyObject* call_axes(PyObject* self, PyObject* args, PyObject* kw,
                           axes_fn f, const char* name, bool required) {
  static char* kwlist[] = {"", "axis", "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, required ? "OO|$O:%s" : "O|O$O:%s", name);
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &axo, &so);
  Py_DECREF(full);
  cmxpy_axes ax;
  cmx_stream s;
  if (!ok || cmxpy_axes_arg(axo, &ax, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  if (required && ax.all) {
    PyErr_Format(PyExc_TypeError, "[%s] axis is required", name);
    return NULL;
  }
  OPEN_ARRAY(name, a, ao);
  cmx_array out = NULL;
  return finish(f(&out, a, ax.all ? NULL : ax.v, ax.n, s), &out, a);
}

static PyObject* f_squeeze(PyObject* self, PyObject* args, PyObject* kw) {
  return call_axes(self, args, kw, cmx_squeeze, "squeeze", false);
}
static PyObject* f_expand_dims(PyObject* self, PyObject* args, PyObject* kw) {
  return call_axes(self, args, kw, cmx_expand_dims, "expand_dims", true);
}
static PyObject* f_flip(PyObject* self, PyObject* args, PyObject* kw) {
  return call_axes(self, args, kw, cmx_flip, "flip", false);
}

static PyObject* f_transpose(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "axes", "stream", NULL};
  PyObject *ao, *axo = Py_None, *so = Py_None;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:transpose", kwlist, &ao,
                                   &axo, &so))
    return NULL;
  cmxpy_axes ax;
  cmx_stream s;
  if (cmxpy_axes_arg(axo, &ax, "transpose") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("transpose", a, ao);
  cmx_array out = NULL;
  return finish(cmx_transpose(&out, a, ax.all ? NULL : ax.v, ax.n, s), &out, a);
}

/* a.transpose(*axes) or a.transpose(axes). */
static PyObject* m_transpose(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"stream", NULL};
  PyObject* so = Py_None;
  PyObject* empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|$O:transpose", kwlist, &so);
  Py_DECREF(empty);
  if (!ok) return NULL;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  PyObject* axo = n == 0 ? Py_None
                  : n == 1 && !PyIndex_Check(PyTuple_GET_ITEM(args, 0))
                      ? PyTuple_GET_ITEM(args, 0)
                      : args;
  cmxpy_axes ax;
  cmx_stream s;
  if (cmxpy_axes_arg(axo, &ax, "transpose") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array out = NULL;
  return cmxpy_result(
      cmx_transpose(&out, CMXPY_ARR(self), ax.all ? NULL : ax.v, ax.n, s),
      &out);
}

static PyObject* f_matrix_transpose(PyObject* self, PyObject* args,
                                    PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "stream", NULL};
  PyObject *ao, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$O:matrix_transpose", kwlist,
                                   &ao, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("matrix_transpose", a, ao);
  cmx_array out = NULL;
  return finish(cmx_swapaxes(&out, a, -1, -2, s), &out, a);
}

typedef cmx_status (*two_int_fn)(cmx_array*, cmx_array, int, int, cmx_stream);
static PyObject* call_two_int(PyObject* self, PyObject* args, PyObject* kw,
                              two_int_fn f, const char* name, const char* k1,
                              const char* k2) {
  char* kwlist[] = {"", (char*)k1, (char*)k2, "stream", NULL};
  char fmt[48];
  PyOS_snprintf(fmt, sizeof fmt, "Oii|$O:%s", name);
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *so = Py_None;
  int x, y;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &x, &y, &so);
  Py_DECREF(full);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  OPEN_ARRAY(name, a, ao);
  cmx_array out = NULL;
  return finish(f(&out, a, x, y, s), &out, a);
}
static PyObject* f_swapaxes(PyObject* self, PyObject* args, PyObject* kw) {
  return call_two_int(self, args, kw, cmx_swapaxes, "swapaxes", "axis1",
                      "axis2");
}
static PyObject* f_moveaxis(PyObject* self, PyObject* args, PyObject* kw) {
  return call_two_int(self, args, kw, cmx_moveaxis, "moveaxis", "source",
                      "destination");
}

static PyObject* f_broadcast_to(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "shape", "stream", NULL};
  PyObject *ao, *sho, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:broadcast_to", kwlist, &ao,
                                   &sho, &so))
    return NULL;
  int64_t shape[CMX_MAX_NDIM];
  int nd;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shape, &nd, "broadcast_to") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("broadcast_to", a, ao);
  cmx_array out = NULL;
  return finish(cmx_broadcast_to(&out, a, shape, nd, s), &out, a);
}

static PyObject* f_broadcast_arrays(PyObject* self, PyObject* args,
                                    PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"stream", NULL};
  PyObject* so = Py_None;
  PyObject* empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|$O:broadcast_arrays",
                                       kwlist, &so);
  Py_DECREF(empty);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_array* in;
  int n;
  if (array_list(args, "broadcast_arrays", &in, &n) < 0) return NULL;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) {
    free_list(in, n);
    return PyErr_NoMemory();
  }
  cmx_status st = cmx_broadcast_arrays(outs, in, n, s);
  free_list(in, n);
  PyObject* l = list_result(st, outs, st == CMX_OK ? n : 0);
  PyMem_RawFree(outs);
  if (!l) return NULL;
  PyObject* t = PyList_AsTuple(l);
  Py_DECREF(l);
  return t;
}

static PyObject* f_broadcast_shapes(PyObject* self, PyObject* args) {
  (void)self;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n == 0) {
    PyErr_SetString(PyExc_ValueError, "[broadcast_shapes] No input shapes.");
    return NULL;
  }
  int64_t acc[CMX_MAX_NDIM], cur[CMX_MAX_NDIM], out[CMX_MAX_NDIM];
  int nacc, ncur, nout;
  if (cmxpy_shape_arg(PyTuple_GET_ITEM(args, 0), acc, &nacc,
                      "broadcast_shapes") < 0)
    return NULL;
  for (Py_ssize_t i = 1; i < n; i++) {
    if (cmxpy_shape_arg(PyTuple_GET_ITEM(args, i), cur, &ncur,
                        "broadcast_shapes") < 0)
      return NULL;
    cmx_status st = cmx_broadcast_shapes(out, &nout, acc, nacc, cur, ncur);
    if (st != CMX_OK) return cmxpy_raise(st);
    memcpy(acc, out, (size_t)nout * sizeof(int64_t));
    nacc = nout;
  }
  return cmxpy_shape_tuple(acc, nacc);
}

static PyObject* f_concatenate(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "axis", "stream", NULL};
  PyObject *lo, *axo = NULL, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$O:concatenate", kwlist, &lo,
                                   &axo, &so))
    return NULL;
  int axis = 0;
  bool flat = axo == Py_None;
  cmx_stream s;
  if ((axo && !flat && cmxpy_int_arg(axo, &axis, "concatenate", "axis") < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array* in;
  int n;
  if (array_list(lo, "concatenate", &in, &n) < 0) return NULL;
  cmx_status st = CMX_OK;
  if (flat && !CMXPY_HAS(cmx_reshape)) {
    free_list(in, n);
    return cmxpy_missing("cmx_reshape");
  }
  if (flat) { /* axis=None: concatenate the flattened arrays */
    int64_t m1 = -1;
    for (int i = 0; i < n && st == CMX_OK; i++) {
      cmx_array f = NULL;
      st = cmx_reshape(&f, in[i], &m1, 1, s);
      cmx_array_release(in[i]);
      in[i] = f;
    }
  }
  cmx_array out = NULL;
  if (st == CMX_OK) st = cmx_concatenate(&out, in, n, axis, s);
  free_list(in, n);
  return cmxpy_result(st, &out);
}

static PyObject* f_stack(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "axis", "stream", NULL};
  PyObject *lo, *so = Py_None;
  int axis = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i$O:stack", kwlist, &lo, &axis,
                                   &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array* in;
  int n;
  if (array_list(lo, "stack", &in, &n) < 0) return NULL;
  cmx_array out = NULL;
  cmx_status st = cmx_stack(&out, in, n, axis, s);
  free_list(in, n);
  return cmxpy_result(st, &out);
}

static PyObject* f_split(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "indices_or_sections", "axis", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *io, *so = Py_None;
  int axis = 0;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, "OO|i$O:split", kwlist, &ao,
                                       &io, &axis, &so);
  Py_DECREF(full);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  OPEN_ARRAY("split", a, ao);
  cmx_array* outs = NULL;
  int nout = 0;
  cmx_status st;
  if (PyIndex_Check(io)) {
    int sections;
    if (cmxpy_int_arg(io, &sections, "split", "indices_or_sections") < 0 ||
        sections <= 0) {
      if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError,
                        "[split] the number of sections must be positive");
      cmx_array_release(a);
      return NULL;
    }
    nout = sections;
    outs = PyMem_RawCalloc((size_t)nout, sizeof *outs);
    if (!CMXPY_HAS(cmx_split_sections)) {
      cmx_array_release(a);
      PyMem_RawFree(outs);
      return cmxpy_missing("cmx_split_sections");
    }
    st = outs ? cmx_split_sections(outs, a, sections, axis, s) : CMXPY_ERR_SET;
  } else {
    PyObject* seq = PySequence_Fast(io, "[split] indices must be a sequence");
    if (!seq) {
      cmx_array_release(a);
      return NULL;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(seq);
    int64_t* idx = PyMem_RawCalloc((size_t)(k ? k : 1), sizeof *idx);
    nout = (int)k + 1;
    outs = PyMem_RawCalloc((size_t)nout, sizeof *outs);
    int bad = !idx || !outs;
    for (Py_ssize_t i = 0; !bad && i < k; i++)
      bad = cmxpy_int64_arg(PySequence_Fast_GET_ITEM(seq, i), &idx[i], "split",
                            "indices") < 0;
    Py_DECREF(seq);
    st = bad ? CMX_OK : cmx_split_indices(outs, a, idx, (int)k, axis, s);
    PyMem_RawFree(idx);
    if (bad) {
      cmx_array_release(a);
      PyMem_RawFree(outs);
      return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
  }
  cmx_array_release(a);
  if (!outs) return PyErr_NoMemory();
  PyObject* l = list_result(st, outs, st == CMX_OK ? nout : 0);
  PyMem_RawFree(outs);
  return l;
}

/* pad_width: int, (before, after), or one (before, after) per axis. */
static PyObject* f_pad(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"",       "pad_width", "mode", "constant_values",
                           "stream", NULL};
  PyObject *ao, *pw, *cvo = NULL, *so = Py_None;
  const char* mode = "constant";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sO$O:pad", kwlist, &ao, &pw,
                                   &mode, &cvo, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_pad_mode pm;
  if (!strcmp(mode, "constant"))
    pm = CMX_PAD_CONSTANT;
  else if (!strcmp(mode, "edge"))
    pm = CMX_PAD_EDGE;
  else {
    PyErr_Format(PyExc_ValueError, "[pad] unsupported mode '%s'", mode);
    return NULL;
  }
  OPEN_ARRAY("pad", a, ao);
  int nd = cmx_array_ndim(a);
  int64_t lo[CMX_MAX_NDIM], hi[CMX_MAX_NDIM];
  int64_t pairs[CMX_MAX_NDIM][2];
  int np = 0;
  int rc = 0;
  if (PyIndex_Check(pw)) {
    rc = cmxpy_int64_arg(pw, &pairs[0][0], "pad", "pad_width");
    pairs[0][1] = pairs[0][0];
    np = 1;
  } else {
    PyObject* seq = PySequence_Fast(pw, "[pad] pad_width must be a sequence");
    if (!seq) rc = -1;
    Py_ssize_t k = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
    bool nested = k > 0 && !PyIndex_Check(PySequence_Fast_GET_ITEM(seq, 0));
    if (!rc && !nested) { /* (before, after) or (both,) for every axis */
      if (k < 1 || k > 2 ||
          cmxpy_int64_arg(PySequence_Fast_GET_ITEM(seq, 0), &pairs[0][0], "pad",
                          "pad_width") < 0 ||
          cmxpy_int64_arg(PySequence_Fast_GET_ITEM(seq, k - 1), &pairs[0][1],
                          "pad", "pad_width") < 0)
        rc = -1;
      np = 1;
    } else if (!rc) {
      if (k > CMX_MAX_NDIM) rc = -1;
      for (Py_ssize_t i = 0; !rc && i < k; i++) {
        PyObject* p = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i),
                                      "[pad] pad_width entries must be pairs");
        Py_ssize_t m = p ? PySequence_Fast_GET_SIZE(p) : 0;
        if (!p || m < 1 || m > 2 ||
            cmxpy_int64_arg(PySequence_Fast_GET_ITEM(p, 0), &pairs[i][0], "pad",
                            "pad_width") < 0 ||
            cmxpy_int64_arg(PySequence_Fast_GET_ITEM(p, m - 1), &pairs[i][1],
                            "pad", "pad_width") < 0)
          rc = -1;
        Py_XDECREF(p);
      }
      np = (int)k;
    }
    Py_XDECREF(seq);
  }
  if (!rc && np != 1 && np != nd) {
    PyErr_Format(PyExc_ValueError,
                 "[pad] pad_width has %d entries for an array of %d dimensions",
                 np, nd);
    rc = -1;
  }
  if (rc) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "[pad] invalid pad_width");
    cmx_array_release(a);
    return NULL;
  }
  for (int i = 0; i < nd; i++) {
    lo[i] = pairs[np == 1 ? 0 : i][0];
    hi[i] = pairs[np == 1 ? 0 : i][1];
  }
  cmx_array v = NULL, out = NULL;
  if (cvo && !(v = cmxpy_to_operand(cvo, cmx_array_dtype(a), "pad"))) {
    cmx_array_release(a);
    return NULL;
  }
  cmx_status st = cmx_pad(&out, a, NULL, lo, hi, nd, v, pm, s);
  cmx_array_release(v);
  return finish(st, &out, a);
}

static PyObject* f_repeat(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "repeats", "axis", "stream", NULL};
  PyObject *ao, *axo = Py_None, *so = Py_None;
  long long repeats;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|O$O:repeat", kwlist, &ao,
                                   &repeats, &axo, &so))
    return NULL;
  int axis = 0;
  cmx_stream s;
  if ((axo != Py_None && cmxpy_int_arg(axo, &axis, "repeat", "axis") < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("repeat", a, ao);
  cmx_array out = NULL;
  return finish(cmx_repeat(&out, a, repeats, axo == Py_None ? NULL : &axis, s),
                &out, a);
}

static PyObject* f_tile(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "reps", "stream", NULL};
  PyObject *ao, *ro, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|$O:tile", kwlist, &ao, &ro,
                                   &so))
    return NULL;
  int64_t reps[CMX_MAX_NDIM];
  int n;
  cmx_stream s;
  if (cmxpy_shape_arg(ro, reps, &n, "tile") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("tile", a, ao);
  cmx_array out = NULL;
  return finish(cmx_tile(&out, a, reps, n, s), &out, a);
}

static PyObject* f_roll(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "shift", "axis", "stream", NULL};
  PyObject *ao, *sho, *axo = Py_None, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O$O:roll", kwlist, &ao, &sho,
                                   &axo, &so))
    return NULL;
  int64_t shifts[CMX_MAX_NDIM];
  int ns;
  cmxpy_axes ax;
  cmx_stream s;
  if (cmxpy_shape_arg(sho, shifts, &ns, "roll") < 0 ||
      cmxpy_axes_arg(axo, &ax, "roll") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("roll", a, ao);
  cmx_array out = NULL;
  return finish(cmx_roll(&out, a, shifts, ns, ax.all ? NULL : ax.v, ax.n, s),
                &out, a);
}

static PyObject* f_as_strided(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "shape", "strides", "offset", "stream", NULL};
  PyObject *ao, *sho = Py_None, *sto = Py_None, *so = Py_None;
  long long offset = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOL$O:as_strided", kwlist, &ao,
                                   &sho, &sto, &offset, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  OPEN_ARRAY("as_strided", a, ao);
  int64_t shape[CMX_MAX_NDIM], strides[CMX_MAX_NDIM];
  int nd = cmx_array_ndim(a), ns = nd;
  memcpy(shape, cmx_array_shape(a), (size_t)nd * sizeof(int64_t));
  if (sho != Py_None && cmxpy_shape_arg(sho, shape, &nd, "as_strided") < 0) {
    cmx_array_release(a);
    return NULL;
  }
  if (sto != Py_None) {
    if (cmxpy_shape_arg(sto, strides, &ns, "as_strided") < 0) {
      cmx_array_release(a);
      return NULL;
    }
  } else { /* row-major strides of the new shape */
    ns = nd;
    int64_t acc = 1;
    for (int i = nd - 1; i >= 0; i--) {
      strides[i] = acc;
      if (__builtin_mul_overflow(acc, shape[i] > 0 ? shape[i] : 1, &acc)) {
        cmx_array_release(a);
        PyErr_SetString(PyExc_ValueError, "[as_strided] shape is too large");
        return NULL;
      }
    }
  }
  if (ns != nd) {
    cmx_array_release(a);
    PyErr_SetString(PyExc_ValueError,
                    "[as_strided] shape and strides must have the same length");
    return NULL;
  }
  cmx_array out = NULL;
  return finish(cmx_as_strided(&out, a, shape, nd, strides, offset, s), &out,
                a);
}

static PyObject* f_contiguous(PyObject* self, PyObject* args, PyObject* kw) {
  (void)self;
  static char* kwlist[] = {"", "allow_col_major", "stream", NULL};
  PyObject *ao, *so = Py_None;
  int col = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p$O:contiguous", kwlist, &ao,
                                   &col, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("contiguous", a, ao);
  cmx_array out = NULL;
  return finish(cmx_contiguous(&out, a, col, s), &out, a);
}

static PyObject* f_view(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "dtype", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *dto, *so = Py_None;
  int ok = PyArg_ParseTupleAndKeywords(full, kw, "OO|$O:view", kwlist, &ao,
                                       &dto, &so);
  Py_DECREF(full);
  cmx_dtype t;
  cmx_stream s;
  if (!ok || cmxpy_dtype_arg(dto, &t, false, "view") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  OPEN_ARRAY("view", a, ao);
  cmx_array out = NULL;
  return finish(cmx_view(&out, a, t, s), &out, a);
}

/* ---------------- tables ---------------- */
#define NEEDS(f) ((const void*)(f))

static const cmxpy_def shape_functions[] = {
    {{"reshape", FN(f_reshape), KW,
      "reshape(a, /, shape, *, stream=None)\n--\n\nReshape an array while "
      "preserving the size.\n\n"
      "Args:\n    a (array): Input array.\n    shape (tuple(int)): New shape "
      "(one entry may be -1).\n    stream (Stream, optional): Stream or "
      "device.\n\nReturns:\n    array: The reshaped array."},
     NEEDS(cmx_reshape)},
    {{"flatten", FN(f_flatten), KW,
      "flatten(a, /, start_axis=0, end_axis=-1, *, stream=None)\n--\n\n"
      "Flatten an array: axes start_axis..end_axis (inclusive) merge into "
      "one.\n\nReturns:\n    array: The flattened array."},
     NEEDS(cmx_flatten)},
    {{"unflatten", FN(f_unflatten), KW,
      "unflatten(a, /, axis, shape, *, stream=None)\n--\n\nUnflatten an axis "
      "of an array to a shape.\n\nReturns:\n    array: The unflattened "
      "array."},
     NEEDS(cmx_unflatten)},
    {{"squeeze", FN(f_squeeze), KW,
      "squeeze(a, /, axis=None, *, stream=None)\n--\n\nRemove length one "
      "axes from an array (all of them when axis is None).\n\nReturns:\n"
      "    array: The output array with length one axes removed."},
     NEEDS(cmx_squeeze)},
    {{"expand_dims", FN(f_expand_dims), KW,
      "expand_dims(a, /, axis, *, stream=None)\n--\n\nAdd a size one "
      "dimension at the given axis (or axes).\n\nReturns:\n    array: The "
      "array with inserted dimensions."},
     NEEDS(cmx_expand_dims)},
    {{"flip", FN(f_flip), KW,
      "flip(a, /, axis=None, *, stream=None)\n--\n\nReverse the order of "
      "elements along the given axes (all when None).\n\nReturns:\n    "
      "array: The flipped array."},
     NEEDS(cmx_flip)},
    {{"transpose", FN(f_transpose), KW,
      "transpose(a, /, axes=None, *, stream=None)\n--\n\nTranspose the "
      "dimensions of the array (reversed when axes is None).\n\nReturns:\n"
      "    array: The transposed array."},
     NEEDS(cmx_transpose)},
    {{"permute_dims", FN(f_transpose), KW,
      "permute_dims(a, /, axes=None, *, stream=None)\n--\n\nSee "
      ":func:`transpose`."},
     NEEDS(cmx_transpose)},
    {{"matrix_transpose", FN(f_matrix_transpose), KW,
      "matrix_transpose(a, /, *, stream=None)\n--\n\nSwap the last two axes "
      "(array API).\n\nReturns:\n    array: The transposed array."},
     NEEDS(cmx_swapaxes)},
    {{"swapaxes", FN(f_swapaxes), KW,
      "swapaxes(a, /, axis1, axis2, *, stream=None)\n--\n\nSwap two axes of "
      "an array.\n\nReturns:\n    array: The array with swapped axes."},
     NEEDS(cmx_swapaxes)},
    {{"moveaxis", FN(f_moveaxis), KW,
      "moveaxis(a, /, source, destination, *, stream=None)\n--\n\nMove an "
      "axis to a new position.\n\nReturns:\n    array: The array with the "
      "axis moved."},
     NEEDS(cmx_moveaxis)},
    {{"broadcast_to", FN(f_broadcast_to), KW,
      "broadcast_to(a, /, shape, *, stream=None)\n--\n\nBroadcast an array "
      "to the given shape (numpy rules).\n\n"
      "Args:\n    a (array): Input array (or scalar).\n    shape "
      "(list(int)): The shape to broadcast to.\n    stream (Stream, "
      "optional): Stream or device.\n\nReturns:\n    array: The output array "
      "with the new shape."},
     NEEDS(cmx_broadcast_to)},
    {{"broadcast_arrays", FN(f_broadcast_arrays), KW,
      "broadcast_arrays(*arrays, stream=None)\n--\n\nBroadcast arrays "
      "against one another.\n\nReturns:\n    tuple(array): The broadcast "
      "arrays."},
     NEEDS(cmx_broadcast_arrays)},
    {{"broadcast_shapes", FN(f_broadcast_shapes), METH_VARARGS,
      "broadcast_shapes(*shapes)\n--\n\nThe shape that the given shapes "
      "broadcast to (numpy rules).\n\n"
      "Raises:\n    ValueError: If the shapes cannot be broadcast.\n\n"
      "Returns:\n    tuple: The broadcast shape.\n\n"
      "Example:\n    >>> mx.broadcast_shapes((1,), (3, 1))\n    (3, 1)"},
     NEEDS(cmx_broadcast_shapes)},
    {{"concatenate", FN(f_concatenate), KW,
      "concatenate(arrays, /, axis=0, *, stream=None)\n--\n\nConcatenate "
      "the arrays along the given axis (of the flattened arrays when axis "
      "is None).\n\nReturns:\n    array: The concatenated array."},
     NEEDS(cmx_concatenate)},
    {{"concat", FN(f_concatenate), KW,
      "concat(arrays, /, axis=0, *, stream=None)\n--\n\nSee "
      ":func:`concatenate`."},
     NEEDS(cmx_concatenate)},
    {{"stack", FN(f_stack), KW,
      "stack(arrays, /, axis=0, *, stream=None)\n--\n\nStacks the arrays "
      "along a new axis.\n\nReturns:\n    array: The resulting stacked "
      "array."},
     NEEDS(cmx_stack)},
    {{"split", FN(f_split), KW,
      "split(a, /, indices_or_sections, axis=0, *, stream=None)\n--\n\nSplit "
      "an array along a given axis: into that many equal sections (an int) "
      "or at the given indices (a sequence).\n\nReturns:\n    list(array): "
      "A list of split arrays."},
     NEEDS(cmx_split_indices)},
    {{"pad", FN(f_pad), KW,
      "pad(a, /, pad_width, mode='constant', constant_values=0, *, "
      "stream=None)\n--\n\nPad an array with a constant value (mode "
      "'constant') or its edge values (mode 'edge'). pad_width is an int, "
      "a (before, after) pair, or one pair per axis.\n\nReturns:\n    array: "
      "The padded array."},
     NEEDS(cmx_pad)},
    {{"repeat", FN(f_repeat), KW,
      "repeat(array, /, repeats, axis=None, *, stream=None)\n--\n\nRepeat "
      "each element along an axis (of the flattened array when None).\n\n"
      "Returns:\n    array: The repeated array."},
     NEEDS(cmx_repeat)},
    {{"tile", FN(f_tile), KW,
      "tile(a, /, reps, *, stream=None)\n--\n\nConstruct an array by "
      "repeating a the number of times given by reps.\n\nReturns:\n    "
      "array: The tiled array."},
     NEEDS(cmx_tile)},
    {{"roll", FN(f_roll), KW,
      "roll(a, /, shift, axis=None, *, stream=None)\n--\n\nRoll array "
      "elements along the given axes (of the flattened array when None)."
      "\n\nReturns:\n    array: The rolled array."},
     NEEDS(cmx_roll)},
    {{"as_strided", FN(f_as_strided), KW,
      "as_strided(a, /, shape=None, strides=None, offset=0, *, stream=None)"
      "\n--\n\nCreate a view into the array with the given shape and "
      "strides (in elements).\n\nReturns:\n    array: The output array."},
     NEEDS(cmx_as_strided)},
    {{"contiguous", FN(f_contiguous), KW,
      "contiguous(a, /, allow_col_major=False, *, stream=None)\n--\n\nA "
      "row-major contiguous array (a itself when already so).\n\nReturns:\n"
      "    array: The contiguous array."},
     NEEDS(cmx_contiguous)},
    {{"view", FN(f_view), KW,
      "view(a, /, dtype, *, stream=None)\n--\n\nView the array as a "
      "different type (the last axis scales by the size ratio).\n\n"
      "Returns:\n    array: The array of the new type."},
     NEEDS(cmx_view)},
    {{NULL, NULL, 0, NULL}, NULL}};

const cmxpy_def cmxpy_shape_methods[] = {
    {{"reshape", FN(m_reshape), KW,
      "reshape($self, *shape, stream=None)\n--\n\nEquivalent to "
      ":func:`reshape` but the shape can be passed either as a tuple or as "
      "separate arguments."},
     NEEDS(cmx_reshape)},
    {{"flatten", FN(f_flatten), KW,
      "flatten($self, /, start_axis=0, end_axis=-1, *, stream=None)\n--\n\n"
      "See :func:`flatten`."},
     NEEDS(cmx_flatten)},
    {{"squeeze", FN(f_squeeze), KW,
      "squeeze($self, /, axis=None, *, stream=None)\n--\n\nSee "
      ":func:`squeeze`."},
     NEEDS(cmx_squeeze)},
    {{"transpose", FN(m_transpose), KW,
      "transpose($self, *axes, stream=None)\n--\n\nEquivalent to "
      ":func:`transpose` but the axes can be passed either as a tuple or as "
      "separate arguments."},
     NEEDS(cmx_transpose)},
    {{"swapaxes", FN(f_swapaxes), KW,
      "swapaxes($self, /, axis1, axis2, *, stream=None)\n--\n\nSee "
      ":func:`swapaxes`."},
     NEEDS(cmx_swapaxes)},
    {{"moveaxis", FN(f_moveaxis), KW,
      "moveaxis($self, /, source, destination, *, stream=None)\n--\n\nSee "
      ":func:`moveaxis`."},
     NEEDS(cmx_moveaxis)},
    {{"split", FN(f_split), KW,
      "split($self, /, indices_or_sections, axis=0, *, stream=None)\n--\n\n"
      "See :func:`split`."},
     NEEDS(cmx_split_indices)},
    {{"view", FN(f_view), KW,
      "view($self, /, dtype, *, stream=None)\n--\n\nSee :func:`view`."},
     NEEDS(cmx_view)},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_shape(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, shape_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
