/* Bindings of the sort and scan family of ops.h: sort, argsort, partition,
 * argpartition, topk, searchsorted; the scans cumsum, cumprod, cummax,
 * cummin, logcumsumexp (functions and array methods) with the array-API
 * aliases cumulative_sum/cumulative_prod; diff, median and count_nonzero.
 * Signatures and defaults are mlx.core's. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

#define SEARCHSORTED_DOC                                                 \
  "Find the indices that keep ``sorted_sequence`` sorted when "          \
  "inserting ``values``.\n\nArgs:\n    sorted_sequence (array): A 1-D "  \
  "array sorted in ascending order.\n    values (array): The values to " \
  "insert. May have any shape.\n    side (str, optional): Either "       \
  "``'left'`` (the first suitable index: the number of elements "        \
  "strictly less than the value) or ``'right'`` (the last: the number "  \
  "of elements less than or equal to it). Default: "                     \
  "``'left'``.\n\nReturns:\n    array: A ``uint32`` array with the "     \
  "shape of ``values``, holding indices in ``[0, "                       \
  "sorted_sequence.size]``.\n\nExample:\n    >>> a = mx.array([1, 2, "   \
  "2, 4])\n    >>> mx.searchsorted(a, mx.array([0, 2, 3, 5]))\n    "     \
  "array([0, 1, 3, 4], dtype=uint32)"
#define DIFF_DOC                                                         \
  "The n-th discrete difference along the given axis, as "               \
  "``numpy.diff``: ``out[i] = a[i + 1] - a[i]``, applied ``n`` times "   \
  "(``not_equal`` for booleans).\n\nArgs:\n    a (array): Input array "  \
  "(at least 1-D).\n    n (int, optional): Number of times to take the " \
  "difference. Default: ``1``.\n    axis (int, optional): The axis. "    \
  "Default: ``-1``.\n    prepend, append (scalar or array, optional): "  \
  "Values joined to ``a`` along ``axis`` before "                        \
  "differencing.\n\nReturns:\n    array: The differences; the axis "     \
  "shrinks by ``n``."

/* ---------------- sort, argsort, partition, argpartition, topk ------- */
typedef cmx_status (*sort_fn)(cmx_array*, cmx_array, const int*, cmx_stream);
static PyObject* sort(cmxpy_args* A) {
  return RETV(DATA(sort_fn)(OUT, ARR(0), OPT_INT(1), STREAM));
}

typedef cmx_status (*kth_fn)(cmx_array*, cmx_array, int, const int*,
                             cmx_stream);
static PyObject* kth(cmxpy_args* A) {
  return RETV(DATA(kth_fn)(OUT, ARR(0), INT(1), OPT_INT(2), STREAM));
}

CMXPY_DEF(searchsorted,
          "(sorted_sequence: scalar | array, values: scalar | array, /, "
          "side: str = 'left', " STREAM_KW,
          SEARCHSORTED_DOC) {
  bool right = !strcmp(STR(2), "right");
  if (!right && strcmp(STR(2), "left")) {
    PyErr_Format(PyExc_ValueError,
                 "[searchsorted] side must be 'left' or 'right', got '%s'",
                 STR(2));
    return NULL;
  }
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RETV(cmx_searchsorted(OUT, ARR(0), ARR(1), right, STREAM));
}

/* ---------------- scans ---------------- */
typedef cmx_status (*scan_fn)(cmx_array*, cmx_array, const int*, bool, bool,
                              cmx_stream);
static PyObject* scan(cmxpy_args* A) {
  return RETV(DATA(scan_fn)(OUT, ARR(0), OPT_INT(1), FLAG(2), FLAG(3), STREAM));
}

/* cumulative_sum / cumulative_prod (array API). include_initial prepends
 * the identity: the input padded with one element at the end, scanned
 * exclusively, gives [identity, x0, x0 (+) x1, ..., total]. */
static PyObject* cumulative(cmxpy_args* A) {
  cmx_array a = ARR(0), b = NULL;
  cmx_dtype t = DTYPE(2);
  const int* axis = OPT_INT(1);
  int axv = 0;
  cmx_status st = CMX_OK;
  if (t != CMX_DTYPE_AUTO && t != cmx_array_dtype(a)) {
    st = cmx_astype(&b, a, t, STREAM);
    a = b;
  }
  if (st == CMX_OK && FLAG(3)) {
    if (!axis) { /* the flattened array */
      int64_t n = (int64_t)cmx_array_size(a);
      cmx_array f = NULL;
      st = cmx_reshape(&f, a, &n, 1, STREAM);
      cmx_array_release(b);
      a = b = f;
      axis = &axv;
    }
    int64_t lo = 0, hi = 1;
    cmx_array p = NULL;
    if (st == CMX_OK)
      st = cmx_pad(&p, a, axis, &lo, &hi, 1, NULL, CMX_PAD_CONSTANT, STREAM);
    if (st == CMX_OK) st = DATA(scan_fn)(OUT, p, axis, false, false, STREAM);
    cmx_array_release(p);
  } else if (st == CMX_OK) {
    st = DATA(scan_fn)(OUT, a, axis, false, true, STREAM);
  }
  cmx_array_release(b);
  return RETV(st);
}

/* ---------------- diff ---------------- */
/* prepend/append of diff as NumPy: a scalar is broadcast to a's shape with
 * the axis of size 1; an array must match a except along the axis. The
 * operand is converted into value i; NULL with the exception on error. */
static cmx_array diff_side(cmxpy_args* A, int i, int axis) {
  cmx_array a = ARR(0), v = NULL;
  if (cmxpy_operand(A, i, cmx_array_dtype(a)) < 0) return NULL;
  if (cmx_array_ndim(ARR(i)) != 0) return cmx_array_retain(ARR(i));
  cmx_status st = CMX_OK;
  if (!cmxpy_is_array_like(OBJ(i)) &&
      cmx_array_dtype(ARR(i)) != cmx_array_dtype(a)) {
    /* A Python scalar takes a's dtype (a weak scalar would lose its
     * weakness once broadcast, and promote the concatenation). */
    st = cmx_astype(&v, ARR(i), cmx_array_dtype(a), STREAM);
  } else {
    v = cmx_array_retain(ARR(i));
  }
  int nd = cmx_array_ndim(a);
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, cmx_array_shape(a), (size_t)nd * sizeof *shape);
  if (axis < 0) axis += nd;
  if (axis >= 0 && axis < nd) shape[axis] = 1;
  cmx_array b = NULL;
  if (st == CMX_OK) st = cmx_broadcast_to(&b, v, shape, nd, STREAM);
  cmx_array_release(v);
  if (st != CMX_OK) return cmxpy_raise(st), NULL;
  return b;
}

CMXPY_DEF(diff,
          "(a: array, /, n: int = 1, axis: int = -1, prepend: scalar | array "
          "| None = None, append: scalar | array | None = None, " STREAM_KW,
          DIFF_DOC) {
  cmx_array a = ARR(0);
  int axis = INT(2);
  if (ISNONE(3) && ISNONE(4))
    return RETV(cmx_diff(OUT, a, INT(1), axis, STREAM));
  if (cmx_array_ndim(a) == 0) {
    PyErr_SetString(PyExc_ValueError,
                    "[diff] requires an input that is at least one "
                    "dimensional");
    return NULL;
  }
  cmx_array parts[3] = {NULL, NULL, NULL}, cat = NULL;
  int np = 0;
  bool ok = ISNONE(3) || (parts[np++] = diff_side(A, 3, axis));
  parts[np++] = cmx_array_retain(a);
  ok = ok && (ISNONE(4) || (parts[np++] = diff_side(A, 4, axis)));
  cmx_status st = CMXPY_ERR_SET;
  if (ok) {
    st = cmx_concatenate(&cat, parts, np, axis, STREAM);
    if (st == CMX_OK) st = cmx_diff(OUT, cat, INT(1), axis, STREAM);
  }
  cmx_array_release(cat);
  cmx_array_release_all(parts, 3);
  return RETV(st);
}

/* ---------------- median, count_nonzero ---------------- */
typedef cmx_status (*reduce_fn)(cmx_array*, cmx_array, const int*, int, bool,
                                cmx_stream);
static PyObject* reduce(cmxpy_args* A) {
  return RETV(DATA(reduce_fn)(OUT, ARR(0), AXES(1), FLAG(2), STREAM));
}

/* ---------------- tables ---------------- */
#define SORT(name, doc)                                                   \
  CMXPY_FN(name, "(a: array, /, axis: None | int = -1, " STREAM_KW, sort, \
           cmx_##name, doc)
SORT(sort,
     "Returns a sorted copy of the array.\n\nArgs:\n    a (array): Input "
     "array.\n    axis (int or None, optional): Optional axis to sort "
     "over. If ``None``, this sorts over the flattened array. If "
     "unspecified, it defaults to -1 (sorting over the last "
     "axis).\n\nReturns:\n    array: The sorted array (stable; NaNs "
     "last).")
SORT(argsort,
     "Returns the indices that sort the array.\n\nArgs:\n    a (array): "
     "Input array.\n    axis (int or None, optional): Optional axis to "
     "sort over. If ``None``, this sorts over the flattened array. If "
     "unspecified, it defaults to -1 (sorting over the last "
     "axis).\n\nReturns:\n    array: The ``uint32`` array containing "
     "indices that sort the input (stable).")

#define KTH(name, k, doc)                                     \
  CMXPY_SPEC_FULL(name, #name,                                \
                  "(a: array, /, " k                          \
                  ": int, axis: None | int = -1, " STREAM_KW, \
                  doc, kth, (const void*)cmx_##name, 0, NULL)
KTH(partition, "kth",
    "Returns a partitioned copy of the array such that the smaller "
    "``kth`` elements are first.\n\nThe ordering of the elements in "
    "partitions is undefined.\n\nArgs:\n    a (array): Input array.\n    "
    "kth (int): Element at the ``kth`` index will be in its sorted "
    "position in the output. All elements before the kth index will be "
    "less or equal to the ``kth`` element and all elements after will be "
    "greater or equal to the ``kth`` element in the output.\n    axis "
    "(int or None, optional): Optional axis to partition over. If "
    "``None``, this partitions over the flattened array. If unspecified, "
    "it defaults to ``-1``.\n\nReturns:\n    array: The partitioned "
    "array.")
KTH(argpartition, "kth",
    "Returns the indices that partition the array.\n\nThe ordering of "
    "the elements within a partition in given by the indices is "
    "undefined.\n\nArgs:\n    a (array): Input array.\n    kth (int): "
    "Element index at the ``kth`` position in the output will give the "
    "sorted position. All indices before the ``kth`` position will be of "
    "elements less or equal to the element at the ``kth`` index and all "
    "indices after will be of elements greater or equal to the element "
    "at the ``kth`` index.\n    axis (int or None, optional): Optional "
    "axis to partition over. If ``None``, this partitions over the "
    "flattened array. If unspecified, it defaults to "
    "``-1``.\n\nReturns:\n    array: The ``uint32`` array containing "
    "indices that partition the input.")
KTH(topk, "k",
    "Returns the ``k`` largest elements from the input along a given "
    "axis.\n\nThe elements will not necessarily be in sorted "
    "order.\n\nArgs:\n    a (array): Input array.\n    k (int): ``k`` "
    "top elements to be returned\n    axis (int or None, optional): "
    "Optional axis to select over. If ``None``, this selects the top "
    "``k`` elements over the flattened array. If unspecified, it "
    "defaults to ``-1``.\n\nReturns:\n    array: The top ``k`` elements "
    "from the input.")

#define SCAN(name, what)                                                     \
  CMXPY_SPEC_FULL(                                                           \
      name, #name,                                                           \
      "(a: array, /, axis: int | None = None, *, reverse: bool = False, "    \
      "inclusive: bool = True, stream: StreamOrDevice = None) -> array",     \
      "Return the cumulative " what                                          \
      " of the elements along the given axis.\n\nArgs:\n    a (array): "     \
      "Input array\n    axis (int, optional): Optional axis to compute the " \
      "cumulative " what " over. If unspecified the cumulative " what        \
      " of the flattened array is returned.\n    reverse (bool): Perform "   \
      "the cumulative " what                                                 \
      " in reverse.\n    inclusive (bool): The i-th element of the output "  \
      "includes the i-th element of the input.\n\nReturns:\n    array: "     \
      "The output array.",                                                   \
      scan, (const void*)cmx_##name, 0, NULL)                                \
  CMXPY_METHOD_OF(name)
SCAN(cumsum, "sum")
SCAN(cumprod, "product")
SCAN(cummax, "maximum")
SCAN(cummin, "minimum")
SCAN(logcumsumexp, "logsumexp")

#define CUMULATIVE(name, op, doc)                                           \
  CMXPY_SPEC_FULL(name, #name,                                              \
                  "(x: array, /, *, axis: int | None = None, dtype: Dtype " \
                  "| None = None, include_initial: bool = False, stream: "  \
                  "StreamOrDevice = None) -> array",                        \
                  doc, cumulative, (const void*)cmx_##op, 0, NULL)
CUMULATIVE(
    cumulative_sum, cumsum,
    "The cumulative sum along ``axis`` (array API).\n\nArgs:\n    x "
    "(array): Input array.\n    axis (int, optional): The axis; ``None`` "
    "scans the flattened array.\n    dtype (Dtype, optional): Convert "
    "the input to this type first.\n    include_initial (bool): Start "
    "the output with the sum of no elements (0), so the axis grows by "
    "one.\n\nReturns:\n    array: The cumulative sums.")
CUMULATIVE(
    cumulative_prod, cumprod,
    "The cumulative product along ``axis`` (array API).\n\nArgs:\n    x "
    "(array): Input array.\n    axis (int, optional): The axis; ``None`` "
    "scans the flattened array.\n    dtype (Dtype, optional): Convert "
    "the input to this type first.\n    include_initial (bool): Start "
    "the output with the product of no elements (1), so the axis grows "
    "by one.\n\nReturns:\n    array: The cumulative products.")

#define REDUCE(name, doc)                                                   \
  CMXPY_SPEC_FULL(name, #name,                                              \
                  "(a: array, /, axis: None | int | Sequence[int] = None, " \
                  "keepdims: bool = False, " STREAM_KW,                     \
                  doc, reduce, (const void*)cmx_##name, 0, NULL)
REDUCE(median,
       "Compute the median(s) over the given axes.\n\nArgs:\n    a (array): "
       "Input array.\n    axis (int or list(int), optional): Optional axis "
       "or axes to reduce over. If unspecified this defaults to reducing "
       "over the entire array.\n    keepdims (bool, optional): Keep reduced "
       "axes as singleton dimensions, defaults to `False`.\n\nReturns:\n    "
       "array: The output array of medians.")
REDUCE(count_nonzero,
       "Count the non-zero elements over the given axes.\n\nArgs:\n    a "
       "(array): Input array.\n    axis (int or list(int), optional): Axis "
       "or axes to count over; all by default.\n    keepdims (bool, "
       "optional): Keep reduced axes as singleton dimensions.\n\nReturns:\n "
       "   array: The ``int32`` counts.")

static cmxpy_spec* const functions[] = {&spec_sort,
                                        &spec_argsort,
                                        &spec_partition,
                                        &spec_argpartition,
                                        &spec_topk,
                                        &spec_searchsorted,
                                        &spec_cumsum,
                                        &spec_cumprod,
                                        &spec_cummax,
                                        &spec_cummin,
                                        &spec_logcumsumexp,
                                        &spec_cumulative_sum,
                                        &spec_cumulative_prod,
                                        &spec_diff,
                                        &spec_median,
                                        &spec_count_nonzero};

static cmxpy_spec* const methods[] = {&spec_m_cumsum, &spec_m_cumprod,
                                      &spec_m_cummax, &spec_m_cummin,
                                      &spec_m_logcumsumexp};

int cmxpy_init_ops_sort(PyObject* m, cmxpy_deflist* array_methods) {
  return CMXPY_ADD_AREA(m, functions, array_methods, methods);
}
