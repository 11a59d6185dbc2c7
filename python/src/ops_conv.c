/* Bindings of the convolution family of ops.h: conv1d/2d/3d,
 * conv_transpose1d/2d/3d, conv_general and convolve, with mlx.core's
 * signatures (channels-last layouts; per-dimension parameters given as an
 * int for every spatial dimension or a tuple with one entry each). */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

/* ---------------- docs ---------------- */
#define CONV_DOC(nd, shape_in, shape_w, par)                                      \
#nd "D convolution over an input with several channels.\n\nArgs:\n    input "   \
      "(array): Input array of shape ``" shape_in                                 \
      "``.\n    weight (array): "                                                 \
      "Weight array of shape ``" shape_w "``.\n    stride (" par                  \
      ", optional): Kernel stride. Default: ``1``.\n    padding (" par            \
      ", optional): Symmetric input padding. Default: ``0``.\n    dilation (" par \
      ", optional): Kernel dilation. Default: ``1``.\n    groups (int, "          \
      "optional): Input feature groups. Default: ``1``.\n\nReturns:\n    array: " \
      "The convolved array."
#define CONVT_DOC(nd, shape_in, shape_w, par)                                     \
#nd "D transposed convolution over an input with several channels.\n\nArgs:\n"  \
      "    input (array): Input array of shape ``" shape_in                       \
      "``.\n    weight "                                                          \
      "(array): Weight array of shape ``" shape_w "``.\n    stride (" par         \
      ", optional): Kernel stride. Default: ``1``.\n    padding (" par            \
      ", optional): Input padding. Default: ``0``.\n    dilation (" par           \
      ", optional): Kernel dilation. Default: ``1``.\n    output_padding (" par   \
      ", optional): Output padding. Default: ``0``.\n    groups (int, "           \
      "optional): Input feature groups. Default: ``1``.\n\nReturns:\n    array: " \
      "The convolved array."

#define CONV_GENERAL_SIG                                                     \
  "(input: array, weight: array, /, stride: int | Sequence[int] = 1, "       \
  "padding: int | Sequence[int] | tuple[Sequence[int], Sequence[int]] = 0, " \
  "kernel_dilation: int | Sequence[int] = 1, input_dilation: int | "         \
  "Sequence[int] = 1, groups: int = 1, flip: bool = False, " STREAM_KW
#define CONV_GENERAL_DOC                                                     \
  "General convolution over an input with several channels.\n\nArgs:\n    "  \
  "input (array): Input array of shape ``(N, ..., C_in)``.\n    weight "     \
  "(array): Weight array of shape ``(C_out, ..., C_in)``.\n    stride (int " \
  "or list(int), optional): Kernel strides. All spatial dimensions get the " \
  "same stride if only one number is specified. Default: ``1``.\n    "       \
  "padding (int, list(int), or tuple(list(int), list(int)), optional): "     \
  "Input padding, the same on both sides or as ``(low, high)`` lists. "      \
  "Default: ``0``.\n    kernel_dilation (int or list(int), optional): "      \
  "Kernel dilation. Default: ``1``.\n    input_dilation (int or list(int), " \
  "optional): Input dilation. Default: ``1``.\n    groups (int, optional): " \
  "Input feature groups. Default: ``1``.\n    flip (bool, optional): Flip "  \
  "the order in which the spatial dimensions of the weights are "            \
  "processed: cross-correlation when ``False``, convolution when "           \
  "``True``. Default: ``False``.\n\nReturns:\n    array: The convolved "     \
  "array."
#define CONVOLVE_DOC                                                    \
  "The discrete convolution of 1D arrays.\n\nIf ``v`` is longer than "  \
  "``a``, then they are swapped. The conv filter is flipped following " \
  "signal processing convention.\n\nArgs:\n    a (array): 1D Input "    \
  "array.\n    v (array): 1D Input array.\n    mode (str, optional): "  \
  "{'full', 'valid', 'same'}\n\nReturns:\n    array: The convolved array."

/* Parameter i of an n-d convolution: an int (every dim) or a sequence of
 * exactly n ints. */
static int per_dim(cmxpy_args* A, int i, int n, int* v) {
  cmxpy_val* x = &A->v[i];
  bool seq = PySequence_Check(x->obj);
  if (seq && x->n != n) {
    PyErr_Format(PyExc_ValueError, "[%s] %s must have %d entries, got %d",
                 A->spec->name, A->spec->params[i].cname, n, x->n);
    return -1;
  }
  for (int k = 0; k < n; k++) v[k] = x->axes[seq ? k : 0];
  return 0;
}

/* ---------------- conv1d/2d/3d, conv_transpose1d/2d/3d ---------------- */
/* The dimension count is the C op's data: 1, 2 or 3 (transposed: the
 * same, with output_padding, its parameter 5). */
static PyObject* conv(cmxpy_args* A) {
  int n = (int)(intptr_t)A->spec->data;
  bool t = n > 3;
  n -= t ? 3 : 0;
  int st[3], pd[3], dl[3], op[3] = {0, 0, 0};
  if (per_dim(A, 2, n, st) < 0 || per_dim(A, 3, n, pd) < 0 ||
      per_dim(A, 4, n, dl) < 0 || (t && per_dim(A, 5, n, op) < 0))
    return NULL;
  cmx_array in = ARR(0), w = ARR(1);
  int groups = INT(t ? 6 : 5);
  cmx_status r;
  if (!t && n == 1)
    r = cmx_conv1d(OUT, in, w, st[0], pd[0], dl[0], groups, STREAM);
  else if (!t && n == 2)
    r = cmx_conv2d(OUT, in, w, st[0], st[1], pd[0], pd[1], dl[0], dl[1], groups,
                   STREAM);
  else if (!t)
    r = cmx_conv3d(OUT, in, w, st[0], st[1], st[2], pd[0], pd[1], pd[2], dl[0],
                   dl[1], dl[2], groups, STREAM);
  else if (n == 1)
    r = cmx_conv_transpose1d(OUT, in, w, st[0], pd[0], dl[0], op[0], groups,
                             STREAM);
  else if (n == 2)
    r = cmx_conv_transpose2d(OUT, in, w, st[0], st[1], pd[0], pd[1], dl[0],
                             dl[1], op[0], op[1], groups, STREAM);
  else
    r = cmx_conv_transpose3d(OUT, in, w, st[0], st[1], st[2], pd[0], pd[1],
                             pd[2], dl[0], dl[1], dl[2], op[0], op[1], op[2],
                             groups, STREAM);
  return RETV(r);
}

/* ---------------- conv_general ---------------- */
/* An int list of conv_general (parameter i) has at most 3 entries. */
static int up_to_3(cmxpy_args* A, int i, const cmxpy_val* v) {
  if (v->n <= 3) return 0;
  PyErr_Format(PyExc_ValueError,
               "[conv_general] %s has %d entries; at most 3 spatial "
               "dimensions are supported",
               A->spec->params[i].cname, v->n);
  return -1;
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

/* The values of an int list as C arguments: values (NULL if none),
 * count. */
#define LIST(v) ((v).n ? (v).axes : NULL), (v).n

CMXPY_DEF(conv_general, CONV_GENERAL_SIG, CONV_GENERAL_DOC) {
  /* padding: an int list for both sides, or (low, high) lists. */
  PyObject* po = OBJ(3);
  bool lohi = is_lo_hi(po);
  cmxpy_val lo = {.n = 0}, hi = {.n = 0};
  if (cmxpy_convert_ints(A, 3, lohi ? PySequence_Fast_GET_ITEM(po, 0) : po,
                         &lo) < 0 ||
      cmxpy_convert_ints(A, 3, lohi ? PySequence_Fast_GET_ITEM(po, 1) : po,
                         &hi) < 0 ||
      up_to_3(A, 3, &lo) < 0 || up_to_3(A, 3, &hi) < 0 ||
      up_to_3(A, 2, &A->v[2]) < 0 || up_to_3(A, 4, &A->v[4]) < 0 ||
      up_to_3(A, 5, &A->v[5]) < 0)
    return NULL;
  return RETV(cmx_conv_general(OUT, ARR(0), ARR(1), LIST(A->v[2]), LIST(lo),
                               LIST(hi), LIST(A->v[4]), LIST(A->v[5]), INT(6),
                               FLAG(7), STREAM));
}

/* ---------------- convolve ---------------- */
CMXPY_DEF(convolve,
          "(a: scalar | array, v: scalar | array, /, mode: str = "
          "'full', " STREAM_KW,
          CONVOLVE_DOC) {
  cmx_convolve_mode md;
  if (!strcmp(STR(2), "full")) {
    md = CMX_CONVOLVE_FULL;
  } else if (!strcmp(STR(2), "same")) {
    md = CMX_CONVOLVE_SAME;
  } else if (!strcmp(STR(2), "valid")) {
    md = CMX_CONVOLVE_VALID;
  } else {
    PyErr_Format(PyExc_ValueError,
                 "[convolve] Invalid mode '%s': expected 'full', 'same' or "
                 "'valid'",
                 STR(2));
    return NULL;
  }
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RETV(cmx_convolve(OUT, ARR(0), ARR(1), md, STREAM));
}

/* A convolution's spec: data is the number of spatial dimensions, plus
 * 3 for a transposed one. */
#define CONV_SIG(par, extra)                                            \
  "(input: array, weight: array, /, stride: " par " = 1, padding: " par \
  " = 0, dilation: " par " = 1, " extra "groups: int = 1, " STREAM_KW
#define CONV(name, n, par, doc)                              \
  CMXPY_SPEC_FULL(name, #name, CONV_SIG(par, ""), doc, conv, \
                  (const void*)(intptr_t)(n), 0, NULL)
#define CONVT(name, n, par, doc)                                               \
  CMXPY_SPEC_FULL(name, #name, CONV_SIG(par, "output_padding: " par " = 0, "), \
                  doc, conv, (const void*)(intptr_t)(n + 3), 0, NULL)
#define PAR2 "int | tuple[int, int]"
#define PAR3 "int | tuple[int, int, int]"
CONV(conv1d, 1, "int | tuple[int]",
     CONV_DOC(1, "(N, L, C_in)", "(C_out, K, C_in)", "int"))
CONV(conv2d, 2, PAR2,
     CONV_DOC(2, "(N, H, W, C_in)", "(C_out, KH, KW, C_in)",
              "int or tuple(int)"))
CONV(conv3d, 3, PAR3,
     CONV_DOC(3, "(N, D, H, W, C_in)", "(C_out, KD, KH, KW, C_in)",
              "int or tuple(int)"))
CONVT(conv_transpose1d, 1, "int | tuple[int]",
      CONVT_DOC(1, "(N, L, C_in)", "(C_out, K, C_in)", "int"))
CONVT(conv_transpose2d, 2, PAR2,
      CONVT_DOC(2, "(N, H, W, C_in)", "(C_out, KH, KW, C_in)",
                "int or tuple(int)"))
CONVT(conv_transpose3d, 3, PAR3,
      CONVT_DOC(3, "(N, D, H, W, C_in)", "(C_out, KD, KH, KW, C_in)",
                "int or tuple(int)"))

static cmxpy_spec* const functions[] = {
    &spec_conv1d,           &spec_conv2d,           &spec_conv3d,
    &spec_conv_transpose1d, &spec_conv_transpose2d, &spec_conv_transpose3d,
    &spec_conv_general,     &spec_convolve};

int cmxpy_init_ops_conv(PyObject* m) {
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
