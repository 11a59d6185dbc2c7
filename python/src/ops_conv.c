/* Bindings of the convolution family of ops.h: conv1d/2d/3d,
 * conv_transpose1d/2d/3d, conv_general and convolve, with mlx.core's
 * signatures (channels-last layouts; per-dimension parameters given as an
 * int for every spatial dimension or a tuple with one entry each). */
#include "cmxpy.h"

#define FN(f) ((PyCFunction)(void (*)(void))(f))
#define KW (METH_VARARGS | METH_KEYWORDS)
#define NEEDS(f) ((const void*)(f))

/* A parameter of an n-d convolution: an int (every dim) or a sequence of
 * exactly n ints. NULL (not given) keeps the defaults in v. */
static int per_dim(PyObject* o, int* v, int n, const char* fname,
                   const char* arg) {
  if (!o) return 0;
  if (PyIndex_Check(o) && !PyBool_Check(o)) {
    int x;
    if (cmxpy_int_arg(o, &x, fname, arg) < 0) return -1;
    for (int i = 0; i < n; i++) v[i] = x;
    return 0;
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    PyErr_Format(PyExc_TypeError,
                 "[%s] %s must be an int or a tuple of %d ints, got %.100s",
                 fname, arg, n, Py_TYPE(o)->tp_name);
    return -1;
  }
  if (PySequence_Fast_GET_SIZE(o) != n) {
    PyErr_Format(PyExc_ValueError, "[%s] %s must have %d entries, got %zd",
                 fname, arg, n, PySequence_Fast_GET_SIZE(o));
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (cmxpy_int_arg(PySequence_Fast_GET_ITEM(o, i), &v[i], fname, arg) < 0)
      return -1;
  return 0;
}

/* Input and weight of a convolution; 0 or -1 with the exception set. */
static int conv_operands(PyObject* io, PyObject* wo, cmx_array* in,
                         cmx_array* w, const char* fname) {
  *in = cmxpy_to_array(io, fname);
  *w = *in ? cmxpy_to_array(wo, fname) : NULL;
  if (*w) return 0;
  cmx_array_release(*in);
  *in = NULL;
  return -1;
}

/* ---------------- conv1d/2d/3d ---------------- */
/* convNd(input, weight, /, stride=1, padding=0, dilation=1, groups=1, *,
 * stream=None) for n = 1, 2, 3. */
static PyObject* call_conv(PyObject* args, PyObject* kw, int n,
                           const char* name, const char* fmt) {
  static char* kwlist[] = {"",         "",       "stride", "padding",
                           "dilation", "groups", "stream", NULL};
  PyObject *io, *wo, *sto = NULL, *po = NULL, *dio = NULL, *so = Py_None;
  int groups = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &io, &wo, &sto, &po,
                                   &dio, &groups, &so))
    return NULL;
  int st[3] = {1, 1, 1}, pd[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  cmx_stream s;
  if (per_dim(sto, st, n, name, "stride") < 0 ||
      per_dim(po, pd, n, name, "padding") < 0 ||
      per_dim(dio, dl, n, name, "dilation") < 0 || cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array in, w, out = NULL;
  if (conv_operands(io, wo, &in, &w, name) < 0) return NULL;
  cmx_status r;
  if (n == 1)
    r = cmx_conv1d(&out, in, w, st[0], pd[0], dl[0], groups, s);
  else if (n == 2)
    r = cmx_conv2d(&out, in, w, st[0], st[1], pd[0], pd[1], dl[0], dl[1],
                   groups, s);
  else
    r = cmx_conv3d(&out, in, w, st[0], st[1], st[2], pd[0], pd[1], pd[2], dl[0],
                   dl[1], dl[2], groups, s);
  cmx_array_release(in);
  cmx_array_release(w);
  return cmxpy_result_v(r, &out);
}

static PyObject* f_conv1d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv(args, kw, 1, "conv1d", "OO|OOOi$O:conv1d");
}
static PyObject* f_conv2d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv(args, kw, 2, "conv2d", "OO|OOOi$O:conv2d");
}
static PyObject* f_conv3d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv(args, kw, 3, "conv3d", "OO|OOOi$O:conv3d");
}

/* ---------------- conv_transpose1d/2d/3d ---------------- */
static PyObject* call_conv_t(PyObject* args, PyObject* kw, int n,
                             const char* name, const char* fmt) {
  static char* kwlist[] = {"",        "",         "stride",
                           "padding", "dilation", "output_padding",
                           "groups",  "stream",   NULL};
  PyObject *io, *wo, *sto = NULL, *po = NULL, *dio = NULL, *opo = NULL,
                     *so = Py_None;
  int groups = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &io, &wo, &sto, &po,
                                   &dio, &opo, &groups, &so))
    return NULL;
  int st[3] = {1, 1, 1}, pd[3] = {0, 0, 0}, dl[3] = {1, 1, 1},
      op[3] = {0, 0, 0};
  cmx_stream s;
  if (per_dim(sto, st, n, name, "stride") < 0 ||
      per_dim(po, pd, n, name, "padding") < 0 ||
      per_dim(dio, dl, n, name, "dilation") < 0 ||
      per_dim(opo, op, n, name, "output_padding") < 0 ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  cmx_array in, w, out = NULL;
  if (conv_operands(io, wo, &in, &w, name) < 0) return NULL;
  cmx_status r;
  if (n == 1)
    r = cmx_conv_transpose1d(&out, in, w, st[0], pd[0], dl[0], op[0], groups,
                             s);
  else if (n == 2)
    r = cmx_conv_transpose2d(&out, in, w, st[0], st[1], pd[0], pd[1], dl[0],
                             dl[1], op[0], op[1], groups, s);
  else
    r = cmx_conv_transpose3d(&out, in, w, st[0], st[1], st[2], pd[0], pd[1],
                             pd[2], dl[0], dl[1], dl[2], op[0], op[1], op[2],
                             groups, s);
  cmx_array_release(in);
  cmx_array_release(w);
  return cmxpy_result_v(r, &out);
}

static PyObject* f_conv_transpose1d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv_t(args, kw, 1, "conv_transpose1d",
                     "OO|OOOOi$O:conv_transpose1d");
}
static PyObject* f_conv_transpose2d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv_t(args, kw, 2, "conv_transpose2d",
                     "OO|OOOOi$O:conv_transpose2d");
}
static PyObject* f_conv_transpose3d(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  return call_conv_t(args, kw, 3, "conv_transpose3d",
                     "OO|OOOOi$O:conv_transpose3d");
}

/* ---------------- conv_general ---------------- */
/* An int (one entry: every dim) or a sequence of up to 3 ints; *n gets the
 * count. */
static int int_list(PyObject* o, int* v, int* n, const char* arg) {
  if (PyIndex_Check(o) && !PyBool_Check(o)) {
    *n = 1;
    return cmxpy_int_arg(o, v, "conv_general", arg);
  }
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    PyErr_Format(PyExc_TypeError,
                 "[conv_general] %s must be an int or a sequence of ints, "
                 "got %.100s",
                 arg, Py_TYPE(o)->tp_name);
    return -1;
  }
  Py_ssize_t k = PySequence_Fast_GET_SIZE(o);
  if (k > 3) {
    PyErr_Format(PyExc_ValueError,
                 "[conv_general] %s has %zd entries; at most 3 spatial "
                 "dimensions are supported",
                 arg, k);
    return -1;
  }
  for (Py_ssize_t i = 0; i < k; i++)
    if (cmxpy_int_arg(PySequence_Fast_GET_ITEM(o, i), &v[i], "conv_general",
                      arg) < 0)
      return -1;
  *n = (int)k;
  return 0;
}

/* True for a pair of sequences: (low, high) padding. */
static bool is_lo_hi(PyObject* o) {
  if ((!PyTuple_Check(o) && !PyList_Check(o)) ||
      PySequence_Fast_GET_SIZE(o) != 2)
    return false;
  PyObject *a = PySequence_Fast_GET_ITEM(o, 0),
           *b = PySequence_Fast_GET_ITEM(o, 1);
  return (PyList_Check(a) || PyTuple_Check(a)) &&
         (PyList_Check(b) || PyTuple_Check(b));
}

static PyObject* f_conv_general(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"",
                           "",
                           "stride",
                           "padding",
                           "kernel_dilation",
                           "input_dilation",
                           "groups",
                           "flip",
                           "stream",
                           NULL};
  PyObject *io, *wo, *sto = NULL, *po = NULL, *kdo = NULL, *ido = NULL,
                     *so = Py_None;
  int groups = 1, flip = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOOip$O:conv_general", kwlist,
                                   &io, &wo, &sto, &po, &kdo, &ido, &groups,
                                   &flip, &so))
    return NULL;
  int st[3], lo[3], hi[3], kd[3], id[3];
  int nst = 0, nlo = 0, nhi = 0, nkd = 0, nid = 0;
  cmx_stream s;
  if ((sto && int_list(sto, st, &nst, "stride") < 0) ||
      (kdo && int_list(kdo, kd, &nkd, "kernel_dilation") < 0) ||
      (ido && int_list(ido, id, &nid, "input_dilation") < 0) ||
      cmxpy_stream_arg(so, &s) < 0)
    return NULL;
  if (po && is_lo_hi(po)) {
    if (int_list(PySequence_Fast_GET_ITEM(po, 0), lo, &nlo, "padding") < 0 ||
        int_list(PySequence_Fast_GET_ITEM(po, 1), hi, &nhi, "padding") < 0)
      return NULL;
  } else if (po) {
    if (int_list(po, lo, &nlo, "padding") < 0) return NULL;
    memcpy(hi, lo, sizeof lo);
    nhi = nlo;
  }
  cmx_array in, w, out = NULL;
  if (conv_operands(io, wo, &in, &w, "conv_general") < 0) return NULL;
  cmx_status r = cmx_conv_general(
      &out, in, w, nst ? st : NULL, nst, nlo ? lo : NULL, nlo, nhi ? hi : NULL,
      nhi, nkd ? kd : NULL, nkd, nid ? id : NULL, nid, groups, flip, s);
  cmx_array_release(in);
  cmx_array_release(w);
  return cmxpy_result_v(r, &out);
}

/* ---------------- convolve ---------------- */
static PyObject* f_convolve(PyObject* m, PyObject* args, PyObject* kw) {
  (void)m;
  static char* kwlist[] = {"", "", "mode", "stream", NULL};
  PyObject *ao, *vo, *so = Py_None;
  const char* mode = "full";
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s$O:convolve", kwlist, &ao,
                                   &vo, &mode, &so))
    return NULL;
  cmx_stream s;
  if (cmxpy_stream_arg(so, &s) < 0) return NULL;
  cmx_convolve_mode md;
  if (!strcmp(mode, "full"))
    md = CMX_CONVOLVE_FULL;
  else if (!strcmp(mode, "same"))
    md = CMX_CONVOLVE_SAME;
  else if (!strcmp(mode, "valid"))
    md = CMX_CONVOLVE_VALID;
  else {
    PyErr_Format(PyExc_ValueError,
                 "[convolve] Invalid mode '%s': expected 'full', 'same' or "
                 "'valid'",
                 mode);
    return NULL;
  }
  cmx_array a, v, out = NULL;
  if (cmxpy_to_operands(ao, vo, &a, &v, "convolve") < 0) return NULL;
  PyObject* r = cmxpy_result_v(cmx_convolve(&out, a, v, md, s), &out);
  cmx_array_release(a);
  cmx_array_release(v);
  return r;
}

/* ---------------- table ---------------- */
#define CONV_DOC(nd, shape_in, shape_w, par)                                  \
  "conv" #nd                                                                  \
  "d(input, weight, /, stride=1, padding=0, dilation=1, "                     \
  "groups=1, *, stream=None)\n--\n\n" #nd                                     \
  "D convolution over an input with several channels.\n\nArgs:\n    input "   \
  "(array): Input array of shape ``" shape_in                                 \
  "``.\n    weight (array): "                                                 \
  "Weight array of shape ``" shape_w "``.\n    stride (" par                  \
  ", optional): Kernel stride. Default: ``1``.\n    padding (" par            \
  ", optional): Symmetric input padding. Default: ``0``.\n    dilation (" par \
  ", optional): Kernel dilation. Default: ``1``.\n    groups (int, "          \
  "optional): Input feature groups. Default: ``1``.\n\nReturns:\n    array: " \
  "The convolved array."
#define CONVT_DOC(nd, shape_in, shape_w, par)                                 \
  "conv_transpose" #nd                                                        \
  "d(input, weight, /, stride=1, padding=0, "                                 \
  "dilation=1, output_padding=0, groups=1, *, stream=None)\n--\n\n" #nd       \
  "D transposed convolution over an input with several channels.\n\nArgs:\n"  \
  "    input (array): Input array of shape ``" shape_in                       \
  "``.\n    weight "                                                          \
  "(array): Weight array of shape ``" shape_w "``.\n    stride (" par         \
  ", optional): Kernel stride. Default: ``1``.\n    padding (" par            \
  ", optional): Input padding. Default: ``0``.\n    dilation (" par           \
  ", optional): Kernel dilation. Default: ``1``.\n    output_padding (" par   \
  ", optional): Output padding. Default: ``0``.\n    groups (int, "           \
  "optional): Input feature groups. Default: ``1``.\n\nReturns:\n    array: " \
  "The convolved array."

static const cmxpy_def conv_functions[] = {
    {{"conv1d", FN(f_conv1d), KW,
      CONV_DOC(1, "(N, L, C_in)", "(C_out, K, C_in)", "int")},
     NEEDS(cmx_conv1d)},
    {{"conv2d", FN(f_conv2d), KW,
      CONV_DOC(2, "(N, H, W, C_in)", "(C_out, KH, KW, C_in)",
               "int or tuple(int)")},
     NEEDS(cmx_conv2d)},
    {{"conv3d", FN(f_conv3d), KW,
      CONV_DOC(3, "(N, D, H, W, C_in)", "(C_out, KD, KH, KW, C_in)",
               "int or tuple(int)")},
     NEEDS(cmx_conv3d)},
    {{"conv_transpose1d", FN(f_conv_transpose1d), KW,
      CONVT_DOC(1, "(N, L, C_in)", "(C_out, K, C_in)", "int")},
     NEEDS(cmx_conv_transpose1d)},
    {{"conv_transpose2d", FN(f_conv_transpose2d), KW,
      CONVT_DOC(2, "(N, H, W, C_in)", "(C_out, KH, KW, C_in)",
                "int or tuple(int)")},
     NEEDS(cmx_conv_transpose2d)},
    {{"conv_transpose3d", FN(f_conv_transpose3d), KW,
      CONVT_DOC(3, "(N, D, H, W, C_in)", "(C_out, KD, KH, KW, C_in)",
                "int or tuple(int)")},
     NEEDS(cmx_conv_transpose3d)},
    {{"conv_general", FN(f_conv_general), KW,
      "conv_general(input, weight, /, stride=1, padding=0, "
      "kernel_dilation=1, input_dilation=1, groups=1, flip=False, *, "
      "stream=None)\n--\n\nGeneral convolution over an input with several "
      "channels.\n\nArgs:\n    input (array): Input array of shape ``(N, "
      "..., C_in)``.\n    weight (array): Weight array of shape ``(C_out, "
      "..., C_in)``.\n    stride (int or list(int), optional): Kernel "
      "strides. All spatial dimensions get the same stride if only one "
      "number is specified. Default: ``1``.\n    padding (int, list(int), "
      "or tuple(list(int), list(int)), optional): Input padding, the same "
      "on both sides or as ``(low, high)`` lists. Default: ``0``.\n    "
      "kernel_dilation (int or list(int), optional): Kernel dilation. "
      "Default: ``1``.\n    input_dilation (int or list(int), optional): "
      "Input dilation. Default: ``1``.\n    groups (int, optional): Input "
      "feature groups. Default: ``1``.\n    flip (bool, optional): Flip the "
      "order in which the spatial dimensions of the weights are processed: "
      "cross-correlation when ``False``, convolution when ``True``. "
      "Default: ``False``.\n\nReturns:\n    array: The convolved array."},
     NEEDS(cmx_conv_general)},
    {{"convolve", FN(f_convolve), KW,
      "convolve(a, v, /, mode='full', *, stream=None)\n--\n\nThe discrete "
      "convolution of 1D arrays.\n\nIf ``v`` is longer than ``a``, then "
      "they are swapped. The conv filter is flipped following signal "
      "processing convention.\n\nArgs:\n    a (array): 1D Input array.\n"
      "    v (array): 1D Input array.\n    mode (str, optional): "
      "{'full', 'valid', 'same'}\n\nReturns:\n    array: The convolved "
      "array."},
     NEEDS(cmx_convolve)},
    {{NULL, NULL, 0, NULL}, NULL}};

int cmxpy_init_ops_conv(PyObject* m) {
  cmxpy_deflist l = {0};
  if (cmxpy_defs_add(&l, conv_functions) < 0) return -1;
  PyMethodDef* defs = cmxpy_defs_finish(&l);
  if (!defs) return -1;
  return PyModule_AddFunctions(m, defs);
}
