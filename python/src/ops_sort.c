/* Bindings of the sort and scan family of ops.h: sort, argsort, partition,
 * argpartition, topk, searchsorted; the scans cumsum, cumprod, cummax,
 * cummin, logcumsumexp (functions and array methods) with the array-API
 * aliases cumulative_sum/cumulative_prod; diff, median and count_nonzero.
 * Signatures and defaults are mlx.core's. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)
#define NEEDS(f) ((const void*)(f))

/* An optional axis: None gives *p = NULL (the flattened array), an int
 * points *p at *v. */
static int opt_axis(PyObject* o, int* v, const int** p, const char* fname) {
  if (o == Py_None) {
    *p = NULL;
    return 0;
  }
  if (cmxpy_int_arg(o, v, fname, "axis") < 0) return -1;
  *p = v;
  return 0;
}

/* ---------------- sort, argsort ---------------- */
typedef cmx_status (*sort_fn)(cmx_array*, cmx_array, const int*, cmx_stream);

static PyObject* call_sort(PyObject* args, PyObject* kw, sort_fn f,
                           const char* name, const char* fmt) {
  static char* kwlist[] = {"", "axis", "stream", NULL};
  PyObject *ao, *axo = NULL, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &axo, &so))
    return NULL;
  int axv = -1;
  const int* axis = &axv;
  cmx_stream s;
  if ((axo && opt_axis(axo, &axv, &axis, name) < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, name), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result_v(f(&out, a, axis, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_sort(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_sort(args, kw, cmx_sort, "sort", "O|O$O:sort");
}
static PyObject* f_argsort(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_sort(args, kw, cmx_argsort, "argsort", "O|O$O:argsort");
}

/* ---------------- partition, argpartition, topk ---------------- */
typedef cmx_status (*kth_fn)(cmx_array*, cmx_array, int, const int*,
                             cmx_stream);

static PyObject* call_kth(PyObject* args, PyObject* kw, kth_fn f,
                          const char* name, const char* kname,
                          const char* fmt) {
  char* kwlist[] = {"", (char*)kname, "axis", "stream", NULL};
  PyObject *ao, *ko, *axo = NULL, *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &ko, &axo, &so))
    return NULL;
  int k, axv = -1;
  const int* axis = &axv;
  cmx_stream s;
  if (cmxpy_int_arg(ko, &k, name, kname) < 0 ||
      (axo && opt_axis(axo, &axv, &axis, name) < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, name), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result_v(f(&out, a, k, axis, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_partition(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_kth(args, kw, cmx_partition, "partition", "kth",
                  "OO|O$O:partition");
}
static PyObject* f_argpartition(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_kth(args, kw, cmx_argpartition, "argpartition", "kth",
                  "OO|O$O:argpartition");
}
static PyObject* f_topk(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_kth(args, kw, cmx_topk, "topk", "k", "OO|O$O:topk");
}

static PyObject* f_searchsorted(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "", "side", "stream", NULL};
  PyObject *ao, *vo, *so = Py_None;
  const char* side = "left";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s$O:searchsorted", kwlist, &ao,
                                   &vo, &side, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  bool right = !strcmp(side, "right");
  if (!right && strcmp(side, "left")) {
    PyErr_Format(PyExc_ValueError,
                 "[searchsorted] side must be 'left' or 'right', got '%s'",
                 side);
    return NULL;
  }
  cmx_array a, v, out = NULL;
  if (cmxpy_to_operands(ao, vo, &a, &v, "searchsorted") < 0) return NULL;
  PyObject* r = cmxpy_result_v(cmx_searchsorted(&out, a, v, right, s), &out);
  cmx_array_release(a);
  cmx_array_release(v);
  return r;
}

/* ---------------- scans ---------------- */
typedef cmx_status (*scan_fn)(cmx_array*, cmx_array, const int*, bool, bool,
                              cmx_stream);

/* f(a, /, axis=None, *, reverse=False, inclusive=True, stream=None) and the
 * method a.f(axis=None, *, ...) (self prepended). */
static PyObject* call_scan(PyObject* self, PyObject* args, PyObject* kw,
                           scan_fn f, const char* name, const char* fmt) {
  static char* kwlist[] = {"", "axis", "reverse", "inclusive", "stream", NULL};
  PyObject* full = cmxpy_method_args(self, args);
  if (!full) return NULL;
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int reverse = 0, inclusive = 1, axv = 0;
  const int* axis = NULL;
  cmx_stream s;
  cmx_array a = NULL, out = NULL;
  PyObject* r = NULL;
  if (PyArg_ParseTupleAndKeywords(full, kw, fmt, kwlist, &ao, &axo, &reverse,
                                  &inclusive, &so) &&
      opt_axis(axo, &axv, &axis, name) == 0 && cmxpy_stream_arg(so, &s) == 0 &&
      (a = cmxpy_to_array(ao, name)))
    r = cmxpy_result_v(f(&out, a, axis, reverse, inclusive, s), &out);
  cmx_array_release(a);
  Py_DECREF(full);
  return r;
}

#define SCAN_WRAP(name)                                                     \
  static PyObject* f_##name(PyObject* self, PyObject* args, PyObject* kw) { \
    return call_scan(self, args, kw, cmx_##name, #name, "O|O$ppO:" #name);  \
  }
CMX__SCAN_OPS(SCAN_WRAP)

/* cumulative_sum / cumulative_prod (array API): (x, /, *, axis=None,
 * dtype=None, include_initial=False, stream=None). include_initial prepends
 * the identity: the input padded with one element at the end, scanned
 * exclusively, gives [identity, x0, x0 (+) x1, ..., total]. */
static PyObject* call_cumulative(PyObject* args, PyObject* kw, scan_fn f,
                                 const char* name, const char* fmt) {
  static char* kwlist[] = {"",       "axis", "dtype", "include_initial",
                           "stream", NULL};
  PyObject *ao, *axo = Py_None, *dto = Py_None, *so = Py_None;
  int include = 0, axv = 0;
  const int* axis = NULL;
  cmx_dtype t;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &axo, &dto,
                                   &include, &so) ||
      opt_axis(axo, &axv, &axis, name) < 0 ||
      cmxpy_dtype_arg(dto, &t, true, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, name), b = NULL, out = NULL;
  if (!a) return NULL;
  cmx_status st = CMX_OK;
  if (t != CMX_DTYPE_AUTO && t != cmx_array_dtype(a)) {
    st = cmx_astype(&b, a, t, s);
    cmx_array_release(a);
    a = b;
    b = NULL;
  }
  if (st == CMX_OK && include) {
    if (!axis) { /* the flattened array */
      int64_t n = (int64_t)cmx_array_size(a);
      st = cmx_reshape(&b, a, &n, 1, s);
      cmx_array_release(a);
      a = b;
      b = NULL;
      axv = 0;
      axis = &axv;
    }
    int64_t lo = 0, hi = 1;
    if (st == CMX_OK)
      st = cmx_pad(&b, a, axis, &lo, &hi, 1, NULL, CMX_PAD_CONSTANT, s);
    if (st == CMX_OK) st = f(&out, b, axis, false, false, s);
  } else if (st == CMX_OK) {
    st = f(&out, a, axis, false, true, s);
  }
  cmx_array_release(a);
  cmx_array_release(b);
  return cmxpy_result_v(st, &out);
}

static PyObject* f_cumulative_sum(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_cumulative(args, kw, cmx_cumsum, "cumulative_sum",
                         "O|$OOpO:cumulative_sum");
}
static PyObject* f_cumulative_prod(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_cumulative(args, kw, cmx_cumprod, "cumulative_prod",
                         "O|$OOpO:cumulative_prod");
}

/* ---------------- diff ---------------- */
/* prepend/append of diff as NumPy: a scalar is broadcast to a's shape with
 * the axis of size 1; an array must match a except along the axis. */
static cmx_array diff_side(PyObject* o, cmx_array a, int axis, cmx_stream s) {
  cmx_array v = cmxpy_to_operand(o, cmx_array_dtype(a), "diff"), b = NULL;
  if (!v || cmx_array_ndim(v) != 0) return v;
  if (!cmxpy_is_array_like(o) && cmx_array_dtype(v) != cmx_array_dtype(a)) {
    /* A Python scalar takes a's dtype (a weak scalar would lose its
     * weakness once broadcast, and promote the concatenation). */
    cmx_status st = cmx_astype(&b, v, cmx_array_dtype(a), s);
    cmx_array_release(v);
    if (st != CMX_OK) return cmxpy_raise(st), NULL;
    v = b;
    b = NULL;
  }
  int nd = cmx_array_ndim(a);
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, cmx_array_shape(a), (size_t)nd * sizeof *shape);
  if (axis < 0) axis += nd;
  if (axis >= 0 && axis < nd) shape[axis] = 1;
  cmx_status st = cmx_broadcast_to(&b, v, shape, nd, s);
  cmx_array_release(v);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return b;
}

static PyObject* f_diff(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"",       "n",      "axis", "prepend",
                           "append", "stream", NULL};
  PyObject *ao, *no = NULL, *axo = NULL, *po = Py_None, *apo = Py_None,
                *so = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOO$O:diff", kwlist, &ao, &no,
                                   &axo, &po, &apo, &so))
    return NULL;
  int n = 1, axis = -1;
  cmx_stream s;
  if ((no && cmxpy_int_arg(no, &n, "diff", "n") < 0) ||
      (axo && cmxpy_int_arg(axo, &axis, "diff", "axis") < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, "diff"), parts[3] = {NULL, NULL, NULL};
  cmx_array out = NULL;
  if (!a) return NULL;
  int np = 0;
  bool ok = true;
  if (po != Py_None || apo != Py_None) {
    if (cmx_array_ndim(a) == 0) {
      cmx_array_release(a);
      PyErr_SetString(PyExc_ValueError,
                      "[diff] requires an input that is at least one "
                      "dimensional");
      return NULL;
    }
    if (po != Py_None) ok = (parts[np++] = diff_side(po, a, axis, s)) != NULL;
    parts[np++] = cmx_array_retain(a);
    if (ok && apo != Py_None)
      ok = (parts[np++] = diff_side(apo, a, axis, s)) != NULL;
  }
  PyObject* r = NULL;
  if (ok && np) {
    cmx_array cat = NULL;
    cmx_status st = cmx_concatenate(&cat, parts, np, axis, s);
    if (st == CMX_OK) st = cmx_diff(&out, cat, n, axis, s);
    cmx_array_release(cat);
    r = cmxpy_result_v(st, &out);
  } else if (ok) {
    r = cmxpy_result_v(cmx_diff(&out, a, n, axis, s), &out);
  }
  cmx_array_release_all(parts, 3);
  cmx_array_release(a);
  return r;
}

/* ---------------- median, count_nonzero ---------------- */
typedef cmx_status (*reduce_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                cmx_stream);

static PyObject* call_reduce(PyObject* args, PyObject* kw, reduce_fn f,
                             const char* name, const char* fmt) {
  static char* kwlist[] = {"", "axis", "keepdims", "stream", NULL};
  PyObject *ao, *axo = Py_None, *so = Py_None;
  int keepdims = 0;
  cmxpy_axes ax;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &ao, &axo, &keepdims,
                                   &so) ||
      cmxpy_axes_arg(axo, &ax, name) < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a = cmxpy_to_array(ao, name), out = NULL;
  if (!a) return NULL;
  PyObject* r =
      cmxpy_result_v(f(&out, a, ax.all ? NULL : ax.v, ax.n, keepdims, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_median(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_reduce(args, kw, cmx_median, "median", "O|Op$O:median");
}
static PyObject* f_count_nonzero(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_reduce(args, kw, cmx_count_nonzero, "count_nonzero",
                     "O|Op$O:count_nonzero");
}

/* ---------------- tables ---------------- */
#define SCAN_DOC(name, what)                                               \
#name                                                                    \
      "(a, /, axis=None, *, reverse=False, inclusive=True, stream=None)\n" \
      "--\n\nReturn the cumulative " what                                  \
      " of the elements along the given axis.\n\n"                         \
      "Args:\n    a (array): Input array\n    axis (int, optional): "      \
      "Optional axis to compute the cumulative " what                      \
      " over. If unspecified the cumulative " what                         \
      " of the flattened array is returned.\n    reverse (bool): Perform " \
      "the cumulative " what                                               \
      " in reverse.\n    inclusive (bool): The i-th element of the "       \
      "output includes the i-th element of the input.\n\n"                 \
      "Returns:\n    array: The output array."
#define SCAN_MDOC(name)                                          \
#name                                                          \
      "($self, /, axis=None, *, reverse=False, inclusive=True, " \
      "stream=None)\n--\n\nSee :func:`" #name "`."

static const cmxpy_def sort_functions[] = {
    {{"sort", FN(f_sort), KW,
      "sort(a, /, axis=-1, *, stream=None)\n--\n\nReturns a sorted copy of "
      "the array.\n\nArgs:\n    a (array): Input array.\n    axis (int or "
      "None, optional): Optional axis to sort over. If ``None``, this sorts "
      "over the flattened array. If unspecified, it defaults to -1 (sorting "
      "over the last axis).\n\nReturns:\n    array: The sorted array (stable; "
      "NaNs last)."},
     NEEDS(cmx_sort)},
    {{"argsort", FN(f_argsort), KW,
      "argsort(a, /, axis=-1, *, stream=None)\n--\n\nReturns the indices "
      "that sort the array.\n\nArgs:\n    a (array): Input array.\n    axis "
      "(int or None, optional): Optional axis to sort over. If ``None``, this "
      "sorts over the flattened array. If unspecified, it defaults to -1 "
      "(sorting over the last axis).\n\nReturns:\n    array: The ``uint32`` "
      "array containing indices that sort the input (stable)."},
     NEEDS(cmx_argsort)},
    {{"partition", FN(f_partition), KW,
      "partition(a, /, kth, axis=-1, *, stream=None)\n--\n\nReturns a "
      "partitioned copy of the array such that the smaller ``kth`` elements "
      "are first.\n\nThe ordering of the elements in partitions is "
      "undefined.\n\nArgs:\n    a (array): Input array.\n    kth (int): "
      "Element at the ``kth`` index will be in its sorted position in the "
      "output. All elements before the kth index will be less or equal to "
      "the ``kth`` element and all elements after will be greater or equal "
      "to the ``kth`` element in the output.\n    axis (int or None, "
      "optional): Optional axis to partition over. If ``None``, this "
      "partitions over the flattened array. If unspecified, it defaults to "
      "``-1``.\n\nReturns:\n    array: The partitioned array."},
     NEEDS(cmx_partition)},
    {{"argpartition", FN(f_argpartition), KW,
      "argpartition(a, /, kth, axis=-1, *, stream=None)\n--\n\nReturns the "
      "indices that partition the array.\n\nThe ordering of the elements "
      "within a partition in given by the indices is undefined.\n\nArgs:\n"
      "    a (array): Input array.\n    kth (int): Element index at the "
      "``kth`` position in the output will give the sorted position. All "
      "indices before the ``kth`` position will be of elements less or equal "
      "to the element at the ``kth`` index and all indices after will be of "
      "elements greater or equal to the element at the ``kth`` index.\n"
      "    axis (int or None, optional): Optional axis to partition over. If "
      "``None``, this partitions over the flattened array. If unspecified, "
      "it defaults to ``-1``.\n\nReturns:\n    array: The ``uint32`` array "
      "containing indices that partition the input."},
     NEEDS(cmx_argpartition)},
    {{"topk", FN(f_topk), KW,
      "topk(a, /, k, axis=-1, *, stream=None)\n--\n\nReturns the ``k`` "
      "largest elements from the input along a given axis.\n\nThe elements "
      "will not necessarily be in sorted order.\n\nArgs:\n    a (array): "
      "Input array.\n    k (int): ``k`` top elements to be returned\n    axis "
      "(int or None, optional): Optional axis to select over. If ``None``, "
      "this selects the top ``k`` elements over the flattened array. If "
      "unspecified, it defaults to ``-1``.\n\nReturns:\n    array: The top "
      "``k`` elements from the input."},
     NEEDS(cmx_topk)},
    {{"searchsorted", FN(f_searchsorted), KW,
      "searchsorted(sorted_sequence, values, /, side='left', *, "
      "stream=None)\n--\n\nFind the indices that keep ``sorted_sequence`` "
      "sorted when inserting ``values``.\n\nArgs:\n    sorted_sequence "
      "(array): A 1-D array sorted in ascending order.\n    values (array): "
      "The values to insert. May have any shape.\n    side (str, optional): "
      "Either ``'left'`` (the first suitable index: the number of elements "
      "strictly less than the value) or ``'right'`` (the last: the number "
      "of elements less than or equal to it). Default: ``'left'``.\n\n"
      "Returns:\n    array: A ``uint32`` array with the shape of ``values``, "
      "holding indices in ``[0, sorted_sequence.size]``.\n\nExample:\n"
      "    >>> a = mx.array([1, 2, 2, 4])\n    >>> mx.searchsorted(a, "
      "mx.array([0, 2, 3, 5]))\n    array([0, 1, 3, 4], dtype=uint32)"},
     NEEDS(cmx_searchsorted)},
    {{"cumsum", FN(f_cumsum), KW, SCAN_DOC(cumsum, "sum")}, NEEDS(cmx_cumsum)},
    {{"cumprod", FN(f_cumprod), KW, SCAN_DOC(cumprod, "product")},
     NEEDS(cmx_cumprod)},
    {{"cummax", FN(f_cummax), KW, SCAN_DOC(cummax, "maximum")},
     NEEDS(cmx_cummax)},
    {{"cummin", FN(f_cummin), KW, SCAN_DOC(cummin, "minimum")},
     NEEDS(cmx_cummin)},
    {{"logcumsumexp", FN(f_logcumsumexp), KW,
      SCAN_DOC(logcumsumexp, "logsumexp")},
     NEEDS(cmx_logcumsumexp)},
    {{"cumulative_sum", FN(f_cumulative_sum), KW,
      "cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False, "
      "stream=None)\n--\n\nThe cumulative sum along ``axis`` (array API).\n\n"
      "Args:\n    x (array): Input array.\n    axis (int, optional): The "
      "axis; ``None`` scans the flattened array.\n    dtype (Dtype, "
      "optional): Convert the input to this type first.\n    "
      "include_initial (bool): Start the output with the sum of no "
      "elements (0), so the axis grows by one.\n\nReturns:\n    array: The "
      "cumulative sums."},
     NEEDS(cmx_cumsum)},
    {{"cumulative_prod", FN(f_cumulative_prod), KW,
      "cumulative_prod(x, /, *, axis=None, dtype=None, "
      "include_initial=False, stream=None)\n--\n\nThe cumulative product "
      "along ``axis`` (array API).\n\nArgs:\n    x (array): Input array.\n"
      "    axis (int, optional): The axis; ``None`` scans the flattened "
      "array.\n    dtype (Dtype, optional): Convert the input to this type "
      "first.\n    include_initial (bool): Start the output with the "
      "product of no elements (1), so the axis grows by one.\n\nReturns:\n"
      "    array: The cumulative products."},
     NEEDS(cmx_cumprod)},
    {{"diff", FN(f_diff), KW,
      "diff(a, /, n=1, axis=-1, prepend=None, append=None, *, stream=None)\n"
      "--\n\nThe n-th discrete difference along the given axis, as "
      "``numpy.diff``: ``out[i] = a[i + 1] - a[i]``, applied ``n`` times "
      "(``not_equal`` for booleans).\n\nArgs:\n    a (array): Input array "
      "(at least 1-D).\n    n (int, optional): Number of times to take the "
      "difference. Default: ``1``.\n    axis (int, optional): The axis. "
      "Default: ``-1``.\n    prepend, append (scalar or array, optional): "
      "Values joined to ``a`` along ``axis`` before differencing.\n\n"
      "Returns:\n    array: The differences; the axis shrinks by ``n``."},
     NEEDS(cmx_diff)},
    {{"median", FN(f_median), KW,
      "median(a, /, axis=None, keepdims=False, *, stream=None)\n--\n\n"
      "Compute the median(s) over the given axes.\n\nArgs:\n    a (array): "
      "Input array.\n    axis (int or list(int), optional): Optional axis "
      "or axes to reduce over. If unspecified this defaults to reducing over "
      "the entire array.\n    keepdims (bool, optional): Keep reduced axes "
      "as singleton dimensions, defaults to `False`.\n\nReturns:\n    array: "
      "The output array of medians."},
     NEEDS(cmx_median)},
    {{"count_nonzero", FN(f_count_nonzero), KW,
      "count_nonzero(a, /, axis=None, keepdims=False, *, stream=None)\n--\n\n"
      "Count the non-zero elements over the given axes.\n\nArgs:\n    a "
      "(array): Input array.\n    axis (int or list(int), optional): Axis "
      "or axes to count over; all by default.\n    keepdims (bool, "
      "optional): Keep reduced axes as singleton dimensions.\n\nReturns:\n"
      "    array: The ``int32`` counts."},
     NEEDS(cmx_count_nonzero)},
    {{NULL, NULL, 0, NULL}, NULL}};

const cmxpy_def cmxpy_scan_methods[] = {
    {{"cumsum", FN(f_cumsum), KW, SCAN_MDOC(cumsum)}, NEEDS(cmx_cumsum)},
    {{"cumprod", FN(f_cumprod), KW, SCAN_MDOC(cumprod)}, NEEDS(cmx_cumprod)},
    {{"cummax", FN(f_cummax), KW, SCAN_MDOC(cummax)}, NEEDS(cmx_cummax)},
    {{"cummin", FN(f_cummin), KW, SCAN_MDOC(cummin)}, NEEDS(cmx_cummin)},
    {{"logcumsumexp", FN(f_logcumsumexp), KW, SCAN_MDOC(logcumsumexp)},
     NEEDS(cmx_logcumsumexp)},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_sort(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, sort_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
