/* Bindings of the linear-algebra extras of ops.h: einsum, einsum_path,
 * diagonal, diag (also array methods), hadamard_transform, gather_mm,
 * segmented_mm and block_masked_mm, with mlx.core's signatures. */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)

/* An optional array argument: None gives NULL (and 0); else a new
 * reference or -1 with the exception set. */
static int optional_array(PyObject* o, cmx_array* out, const char* fname) {
  *out = NULL;
  if (!o || o == Py_None) return 0;
  *out = cmxpy_to_array(o, fname);
  return *out ? 0 : -1;
}

/* The subscripts string and the operands (new references in *ops, n of
 * them) of einsum(subscripts, *operands). */
static int einsum_args(PyObject* args, const char* fname, const char** subs,
                       cmx_array** ops, int* n) {
  Py_ssize_t k = PyTuple_GET_SIZE(args);
  if (k < 1 || !PyUnicode_Check(PyTuple_GET_ITEM(args, 0))) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes the subscripts string as its first argument",
                 fname);
    return -1;
  }
  *subs = PyUnicode_AsUTF8(PyTuple_GET_ITEM(args, 0));
  if (!*subs) return -1;
  if (k - 1 > INT_MAX) {
    PyErr_Format(PyExc_ValueError, "[%s] Too many operands.", fname);
    return -1;
  }
  *n = (int)(k - 1);
  *ops = PyMem_RawCalloc((size_t)(k > 1 ? k - 1 : 1), sizeof **ops);
  if (!*ops) {
    PyErr_NoMemory();
    return -1;
  }
  for (int i = 0; i < *n; i++) {
    (*ops)[i] = cmxpy_to_array(PyTuple_GET_ITEM(args, i + 1), fname);
    if (!(*ops)[i]) {
      cmx_array_release_all(*ops, (size_t)i);
      PyMem_RawFree(*ops);
      *ops = NULL;
      return -1;
    }
  }
  return 0;
}

static PyObject* f_einsum(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"stream", NULL};
  PyObject *so = Py_None, *empty = PyTuple_New(0);
  if (!empty) return NULL;
  int ok = PyArg_ParseTupleAndKeywords(empty, kw, "|$O:einsum", kwlist, &so);
  Py_DECREF(empty);
  cmx_stream s;
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  const char* subs;
  cmx_array* ops;
  int n;
  if (einsum_args(args, "einsum", &subs, &ops, &n) < 0) return NULL;
  cmx_array out = NULL;
  cmx_status st = cmx_einsum(&out, subs, ops, n, s);
  cmx_array_release_all(ops, (size_t)n);
  PyMem_RawFree(ops);
  return cmxpy_result(st, &out);
}

/* einsum_path(subscripts, *operands) -> (list of tuples, str). */
static PyObject* f_einsum_path(PyObject* m, PyObject* args) {
  (void)m;
  const char* subs;
  cmx_array* ops;
  int n;
  if (einsum_args(args, "einsum_path", &subs, &ops, &n) < 0) return NULL;
  int *pos = NULL, *cnt = NULL, nsteps = 0;
  char* report = NULL;
  cmx_status st = cmx_einsum_path(&pos, &cnt, &nsteps, &report, subs, ops, n);
  cmx_array_release_all(ops, (size_t)n);
  PyMem_RawFree(ops);
  if (st != CMX_OK) return cmxpy_raise(st);
  PyObject* path = PyList_New(nsteps);
  PyObject* r = NULL;
  for (int i = 0, k = 0; path && i < nsteps; i++) {
    PyObject* t = PyTuple_New(cnt[i]);
    for (int j = 0; t && j < cnt[i]; j++, k++) {
      PyObject* v = PyLong_FromLong(pos[k]);
      if (!v)
        Py_CLEAR(t);
      else
        PyTuple_SET_ITEM(t, j, v);
    }
    if (!t)
      Py_CLEAR(path);
    else
      PyList_SET_ITEM(path, i, t);
  }
  if (path) r = Py_BuildValue("(Ns)", path, report);
  cmx_free(pos);
  cmx_free(cnt);
  cmx_free(report);
  return r;
}

/* diagonal(a, offset=0, axis1=0, axis2=1, stream=None); as a method, a is
 * self. */
static PyObject* f_diagonal(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"a", "offset", "axis1", "axis2", "stream", NULL};
  PyObject* all = cmxpy_method_args(self, args);
  if (!all) return NULL;
  PyObject *ao, *so = Py_None;
  int offset = 0, axis1 = 0, axis2 = 1;
  cmx_stream s;
  int ok = PyArg_ParseTupleAndKeywords(all, kw, "O|iiiO:diagonal", kwlist, &ao,
                                       &offset, &axis1, &axis2, &so);
  Py_DECREF(all);
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_array a = cmxpy_to_array(ao, "diagonal"), out = NULL;
  if (!a) return NULL;
  PyObject* r =
      cmxpy_result(cmx_diagonal(&out, a, offset, axis1, axis2, s), &out);
  cmx_array_release(a);
  return r;
}

/* diag(a, /, k=0, *, stream=None). */
static PyObject* f_diag(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"", "k", "stream", NULL};
  PyObject* all = cmxpy_method_args(self, args);
  if (!all) return NULL;
  PyObject *ao, *so = Py_None;
  int k = 0;
  cmx_stream s;
  int ok =
      PyArg_ParseTupleAndKeywords(all, kw, "O|i$O:diag", kwlist, &ao, &k, &so);
  Py_DECREF(all);
  if (!ok || cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_array a = cmxpy_to_array(ao, "diag"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(cmx_diag(&out, a, k, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_hadamard(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"a", "scale", "stream", NULL};
  PyObject *ao, *sco = Py_None, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:hadamard_transform", kwlist,
                                   &ao, &sco, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  float scale = 0;
  if (sco != Py_None) {
    double d = PyFloat_AsDouble(sco);
    if (d == -1.0 && PyErr_Occurred()) return NULL;
    scale = (float)d;
  }
  cmx_array a = cmxpy_to_array(ao, "hadamard_transform"), out = NULL;
  if (!a) return NULL;
  PyObject* r = cmxpy_result(
      cmx_hadamard_transform(&out, a, sco == Py_None ? NULL : &scale, s), &out);
  cmx_array_release(a);
  return r;
}

static PyObject* f_gather_mm(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {
      "", "", "lhs_indices", "rhs_indices", "sorted_indices", "stream", NULL};
  PyObject *ao, *bo, *lo = Py_None, *ro = Py_None, *so = Py_None;
  int sorted = 0;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO$pO:gather_mm", kwlist, &ao,
                                   &bo, &lo, &ro, &sorted, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, li = NULL, ri = NULL, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "gather_mm") < 0) return NULL;
  PyObject* r = NULL;
  if (optional_array(lo, &li, "gather_mm") == 0 &&
      optional_array(ro, &ri, "gather_mm") == 0)
    r = cmxpy_result(cmx_gather_mm(&out, a, b, li, ri, sorted != 0, s), &out);
  cmx_array_release(a), cmx_array_release(b);
  cmx_array_release(li), cmx_array_release(ri);
  return r;
}

static PyObject* f_segmented_mm(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "", "segments", "stream", NULL};
  PyObject *ao, *bo, *sgo, *so = Py_None;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|$O:segmented_mm", kwlist, &ao,
                                   &bo, &sgo, &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "segmented_mm") < 0) return NULL;
  cmx_array sg = cmxpy_to_array(sgo, "segmented_mm");
  PyObject* r =
      sg ? cmxpy_result(cmx_segmented_mm(&out, a, b, sg, s), &out) : NULL;
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(sg);
  return r;
}

static PyObject* f_block_masked_mm(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"",         "",         "block_size", "mask_out",
                           "mask_lhs", "mask_rhs", "stream",     NULL};
  PyObject *ao, *bo, *moo = Py_None, *mlo = Py_None, *mro = Py_None,
                     *so = Py_None;
  int bs = 64;
  cmx_stream s;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|iOOO$O:block_masked_mm",
                                   kwlist, &ao, &bo, &bs, &moo, &mlo, &mro,
                                   &so) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array a, b, mo = NULL, ml = NULL, mr = NULL, out = NULL;
  if (cmxpy_to_operands(ao, bo, &a, &b, "block_masked_mm") < 0) return NULL;
  PyObject* r = NULL;
  if (optional_array(moo, &mo, "block_masked_mm") == 0 &&
      optional_array(mlo, &ml, "block_masked_mm") == 0 &&
      optional_array(mro, &mr, "block_masked_mm") == 0)
    r = cmxpy_result(cmx_block_masked_mm(&out, a, b, bs, mo, ml, mr, s), &out);
  cmx_array_release(a), cmx_array_release(b);
  cmx_array_release(mo), cmx_array_release(ml), cmx_array_release(mr);
  return r;
}

static PyMethodDef linalg_functions[] = {
    {"einsum", FN(f_einsum), KW,
     "einsum(subscripts, *operands, stream=None)\n--\n\nPerform the Einstein "
     "summation convention on the operands.\n\nArgs:\n    subscripts (str): "
     "The Einstein summation convention equation.\n    *operands (array): "
     "The input arrays.\n\nReturns:\n    array: The output array."},
    {"einsum_path", FN(f_einsum_path), METH_VARARGS,
     "einsum_path(subscripts, *operands)\n--\n\nCompute the contraction "
     "order for the given Einstein summation.\n\nArgs:\n    subscripts "
     "(str): The Einstein summation convention equation.\n    *operands "
     "(array): The input arrays.\n\nReturns:\n    tuple(list(tuple(int, "
     "int)), str): The einsum path and a string containing information "
     "about the chosen path."},
    {"diagonal", FN(f_diagonal), KW,
     "diagonal(a, offset=0, axis1=0, axis2=1, stream=None)\n--\n\nReturn "
     "specified diagonals: the (axis1, axis2) planes' diagonal at offset "
     "(above the main diagonal for positive offsets) as the last axis of "
     "the result, a view of a.\n\nReturns:\n    array: The diagonals of the "
     "array."},
    {"diag", FN(f_diag), KW,
     "diag(a, /, k=0, *, stream=None)\n--\n\nExtract a diagonal (2-D a) or "
     "construct a diagonal matrix (1-D a, on the k-th diagonal).\n\n"
     "Returns:\n    array: The extracted diagonal or the constructed "
     "diagonal matrix."},
    {"hadamard_transform", FN(f_hadamard), KW,
     "hadamard_transform(a, scale=None, stream=None)\n--\n\nPerform the "
     "Walsh-Hadamard transform along the final axis. Supports sizes n = m * "
     "2^k for m in (1, 12, 20, 28); scale defaults to 1/sqrt(n), giving an "
     "orthonormal transform.\n\nReturns:\n    array: The transformed "
     "array."},
    {"gather_mm", FN(f_gather_mm), KW,
     "gather_mm(a, b, /, lhs_indices=None, rhs_indices=None, *, "
     "sorted_indices=False, stream=None)\n--\n\nMatrix multiplication with "
     "matrix-level gather: out[i] = a[lhs_indices[i]] @ b[rhs_indices[i]], "
     "the indices flat over the batch dimensions of a and b.\n\nReturns:\n"
     "    array: The output array."},
    {"segmented_mm", FN(f_segmented_mm), KW,
     "segmented_mm(a, b, /, segments, *, stream=None)\n--\n\nPerform a "
     "matrix multiplication but segment the inner dimension and save the "
     "result for each segment separately: out[s] = a[:, k0:k1] @ b[k0:k1] "
     "for (k0, k1) = segments[s].\n\nReturns:\n    array: The result per "
     "segment of shape (..., M, N)."},
    {"block_masked_mm", FN(f_block_masked_mm), KW,
     "block_masked_mm(a, b, /, block_size=64, mask_out=None, mask_lhs=None, "
     "mask_rhs=None, *, stream=None)\n--\n\nMatrix multiplication with "
     "block masking of the operands and the output (block_size 32 or 64). "
     "Boolean masks clear blocks; other masks scale them.\n\nReturns:\n    "
     "array: The output array."},
    {NULL, NULL, 0, NULL}};

/* Methods of array (a is self). */
static PyMethodDef linalg_methods[] = {
    {"diagonal", FN(f_diagonal), KW,
     "diagonal(self, offset=0, axis1=0, axis2=1, stream=None)\n--\n\nSee "
     ":func:`diagonal`."},
    {"diag", FN(f_diag), KW,
     "diag(self, k=0, *, stream=None)\n--\n\nExtract a diagonal or "
     "construct a diagonal matrix. See :func:`diag`."},
    {NULL, NULL, 0, NULL}};

/* Adds the functions to the module and the methods to array (run after
 * the array type is ready; a method already defined there is kept). */
int cmxpy_init_ops_linalg_extra(PyObject* m) {
  if (PyModule_AddFunctions(m, linalg_functions) < 0) return -1;
  PyObject* dict = CmxArray_Type.tp_dict;
  if (!dict) return 0;
  for (PyMethodDef* d = linalg_methods; d->ml_name; d++) {
    if (PyDict_GetItemString(dict, d->ml_name)) continue;
    PyObject* descr = PyDescr_NewMethod(&CmxArray_Type, d);
    if (!descr || PyDict_SetItemString(dict, d->ml_name, descr) < 0) {
      Py_XDECREF(descr);
      return -1;
    }
    Py_DECREF(descr);
  }
  PyType_Modified(&CmxArray_Type);
  return 0;
}
