/* Shape ops (reshape, transpose, concatenate, split, pad ...) with MLX's
 * argument names and defaults, plus the array methods among them
 * (reshape(*shape), transpose(*axes), ...). Creation ops and matrix
 * products are in ops_create.c. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

/* ---------------- shape ---------------- */
CMXPY_DEF(reshape, "(a: array, /, shape: Sequence[int], " STREAM_KW,
          "Reshape an array while preserving the size.\n\n"
          "Args:\n    a (array): Input array.\n    shape (tuple(int)): New "
          "shape (one entry may be -1).\n    stream (Stream, optional): "
          "Stream or device.\n\nReturns:\n    array: The reshaped array.") {
  return RET(cmx_reshape(OUT, ARR(0), INTS(1), STREAM));
}

/* The ints of a method's *args: one sequence, or the ints themselves. */
static int star_ints(cmxpy_args* A, int i) {
  PyObject* t = OBJ(i);
  PyObject* o =
      PyTuple_GET_SIZE(t) == 1 && PySequence_Check(PyTuple_GET_ITEM(t, 0))
          ? PyTuple_GET_ITEM(t, 0)
          : t;
  return cmxpy_convert_ints(A, i, o, NULL);
}

CMXPY_DEF_METHOD(reshape,
                 "(self, *shape: int, stream: StreamOrDevice = None) -> array",
                 "Equivalent to :func:`reshape` but the shape can be passed "
                 "either as a tuple or as separate arguments.") {
  if (star_ints(A, 1) < 0) return NULL;
  return RET(cmx_reshape(OUT, ARR(0), INTS(1), STREAM));
}

CMXPY_DEF(flatten,
          "(a: array, /, start_axis: int = 0, end_axis: int = -1, " STREAM_KW,
          "Flatten an array: axes start_axis..end_axis (inclusive) merge "
          "into one.\n\nReturns:\n    array: The flattened array.") {
  return RET(cmx_flatten(OUT, ARR(0), INT(1), INT(2), STREAM));
}

CMXPY_DEF(unflatten,
          "(a: array, /, axis: int, shape: Sequence[int], " STREAM_KW,
          "Unflatten an axis of an array to a shape.\n\nReturns:\n    "
          "array: The unflattened array.") {
  return RET(cmx_unflatten(OUT, ARR(0), INT(1), INTS(2), STREAM));
}

typedef cmx_status (*axes_fn)(cmx_array*, cmx_array, const int*, int,
                              cmx_stream);
static PyObject* with_axes(cmxpy_args* A) {
  return RET(DATA(axes_fn)(OUT, ARR(0), AXES(1), STREAM));
}
#define AXES_OP(name, sig, doc)                                          \
  CMXPY_SPEC_FULL(name, #name, "(a: array, /, " sig ", " STREAM_KW, doc, \
                  with_axes, (const void*)cmx_##name, 0, NULL)

AXES_OP(squeeze, "axis: None | int | Sequence[int] = None",
        "Remove length one axes from an array (all of them when axis is "
        "None).\n\nReturns:\n    array: The output array with length one "
        "axes removed.")
AXES_OP(expand_dims, "axis: int | Sequence[int]",
        "Add a size one dimension at the given axis (or axes).\n\n"
        "Returns:\n    array: The array with inserted dimensions.")
AXES_OP(flip, "axis: None | int | Sequence[int] = None",
        "Reverse the order of elements along the given axes (all when "
        "None).\n\nReturns:\n    array: The flipped array.")
AXES_OP(transpose, "axes: Sequence[int] | None = None",
        "Transpose the dimensions of the array (reversed when axes is "
        "None).\n\nReturns:\n    array: The transposed array.")
CMXPY_ALIAS(permute_dims, transpose, "See :func:`transpose`.")

CMXPY_DEF_METHOD(transpose,
                 "(self, *axes: int, stream: StreamOrDevice = None) -> array",
                 "Equivalent to :func:`transpose` but the axes can be passed "
                 "either as a tuple or as separate arguments.") {
  if (PyTuple_GET_SIZE(OBJ(1)) == 0) {
    A->v[1].none = true; /* reversed */
  } else if (star_ints(A, 1) < 0) {
    return NULL;
  }
  return RET(cmx_transpose(OUT, ARR(0), AXES(1), STREAM));
}

CMXPY_DEF(matrix_transpose, "(a: array, /, " STREAM_KW,
          "Swap the last two axes (array API).\n\nReturns:\n    array: The "
          "transposed array.") {
  return cmxpy_matrix_transpose(ARR(0), STREAM);
}

typedef cmx_status (*two_int_fn)(cmx_array*, cmx_array, int, int, cmx_stream);
static PyObject* two_ints(cmxpy_args* A) {
  return RET(DATA(two_int_fn)(OUT, ARR(0), INT(1), INT(2), STREAM));
}
CMXPY_FN(swapaxes, "(a: array, /, axis1: int, axis2: int, " STREAM_KW, two_ints,
         cmx_swapaxes,
         "Swap two axes of an array.\n\nReturns:\n    array: The "
         "array with swapped axes.")
CMXPY_FN(moveaxis, "(a: array, /, source: int, destination: int, " STREAM_KW,
         two_ints, cmx_moveaxis,
         "Move an axis to a new position.\n\nReturns:\n    array: The "
         "array with the axis moved.")

CMXPY_DEF(broadcast_to, "(a: array, /, shape: Sequence[int], " STREAM_KW,
          "Broadcast an array to the given shape (numpy rules).\n\n"
          "Args:\n    a (array): Input array (or scalar).\n    shape "
          "(list(int)): The shape to broadcast to.\n    stream (Stream, "
          "optional): Stream or device.\n\nReturns:\n    array: The output "
          "array with the new shape.") {
  return RET(cmx_broadcast_to(OUT, ARR(0), INTS(1), STREAM));
}

CMXPY_DEF(broadcast_arrays,
          "(*arrays: array, stream: StreamOrDevice = None) -> "
          "list[array]",
          "Broadcast arrays against one another.\n\nReturns:\n    "
          "list(array): The broadcast arrays (a list, as MLX's).") {
  int n = A->v[0].n;
  cmx_array* outs = PyMem_RawCalloc((size_t)(n ? n : 1), sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = cmx_broadcast_arrays(outs, ARRAYS(0), STREAM);
  PyObject* l = cmxpy_list(st, outs, st == CMX_OK ? n : 0);
  PyMem_RawFree(outs);
  return l;
}

CMXPY_DEF(broadcast_shapes, "(*shapes: Sequence[int]) -> tuple[int]",
          "The shape that the given shapes broadcast to (numpy rules).\n\n"
          "Raises:\n    ValueError: If the shapes cannot be broadcast.\n\n"
          "Returns:\n    tuple: The broadcast shape.\n\n"
          "Example:\n    >>> mx.broadcast_shapes((1,), (3, 1))\n    (3, 1)") {
  PyObject* shapes = OBJ(0);
  Py_ssize_t n = PyTuple_GET_SIZE(shapes);
  if (n == 0) {
    PyErr_SetString(PyExc_ValueError, "[broadcast_shapes] No input shapes.");
    return NULL;
  }
  int64_t acc[CMX_MAX_NDIM];
  int nacc = 0;
  cmxpy_val* v = &A->v[0];
  for (Py_ssize_t i = 0; i < n; i++) {
    if (cmxpy_convert_ints(A, 0, PyTuple_GET_ITEM(shapes, i), NULL) < 0)
      return NULL;
    if (i == 0) {
      memcpy(acc, v->ints, (size_t)v->n * sizeof *acc);
      nacc = v->n;
      continue;
    }
    int64_t out[CMX_MAX_NDIM];
    int nout;
    cmx_status st = cmx_broadcast_shapes(out, &nout, acc, nacc, v->ints, v->n);
    if (st != CMX_OK) return cmxpy_raise(st);
    memcpy(acc, out, (size_t)nout * sizeof *acc);
    nacc = nout;
  }
  return cmxpy_shape_tuple(acc, nacc);
}

/* ---------------- joining and splitting ---------------- */
CMXPY_DEF(concatenate, "(arrays: list[array], axis: int | None = 0, " STREAM_KW,
          "Concatenate the arrays along the given axis (of the flattened "
          "arrays when axis is None).\n\nReturns:\n    array: The "
          "concatenated array.") {
  cmxpy_val* v = &A->v[0];
  cmx_status st = CMX_OK;
  if (ISNONE(1)) { /* concatenate the flattened arrays */
    int64_t m1 = -1;
    for (int i = 0; i < v->n && st == CMX_OK; i++) {
      cmx_array f = NULL;
      st = cmx_reshape(&f, v->arrays[i], &m1, 1, STREAM);
      cmx_array_release(v->arrays[i]);
      v->arrays[i] = f;
    }
  }
  if (st == CMX_OK)
    st = cmx_concatenate(OUT, ARRAYS(0), ISNONE(1) ? 0 : INT(1), STREAM);
  return RET(st);
}
CMXPY_ALIAS(concat, concatenate, "See :func:`concatenate`.")

CMXPY_DEF(stack, "(arrays: list[array], axis: int = 0, " STREAM_KW,
          "Stacks the arrays along a new axis.\n\nReturns:\n    array: The "
          "resulting stacked array.") {
  return RET(cmx_stack(OUT, ARRAYS(0), INT(1), STREAM));
}

CMXPY_DEF(split,
          "(a: array, /, indices_or_sections: int | Sequence[int], axis: int "
          "= 0, " STREAM_KW,
          "Split an array along a given axis: into that many equal sections "
          "(an int) or at the given indices (a sequence).\n\nReturns:\n    "
          "list(array): A list of split arrays.") {
  bool sections = !PySequence_Check(OBJ(1)); /* an int */
  int64_t k = sections ? A->v[1].ints[0] : A->v[1].n;
  if (sections && (k <= 0 || k > INT_MAX)) {
    PyErr_SetString(PyExc_ValueError,
                    "[split] the number of sections must be positive");
    return NULL;
  }
  int nout = sections ? (int)k : (int)k + 1;
  cmx_array* outs = PyMem_RawCalloc((size_t)nout, sizeof *outs);
  if (!outs) return PyErr_NoMemory();
  cmx_status st = sections
                      ? cmx_split_sections(outs, ARR(0), (int)k, INT(2), STREAM)
                      : cmx_split_indices(outs, ARR(0), A->v[1].ints, (int)k,
                                          INT(2), STREAM);
  PyObject* l = cmxpy_list(st, outs, st == CMX_OK ? nout : 0);
  PyMem_RawFree(outs);
  return l;
}

/* pad_width: int, (before, after), or one (before, after) per axis. */
static int pad_widths(PyObject* pw, int nd, int64_t* lo, int64_t* hi) {
  int64_t pairs[CMX_MAX_NDIM][2];
  int np = 0, rc = 0;
  PyObject* seq = PyIndex_Check(pw) ? NULL : PySequence_Fast(pw, "");
  Py_ssize_t k = seq ? PySequence_Fast_GET_SIZE(seq) : 0;
  bool nested = k > 0 && !PyIndex_Check(PySequence_Fast_GET_ITEM(seq, 0));
  if (!seq && !PyIndex_Check(pw)) {
    rc = -1;            /* not a sequence */
  } else if (!nested) { /* n, (n,), (before, after): every axis */
    PyObject* lo_o = seq ? (k ? PySequence_Fast_GET_ITEM(seq, 0) : NULL) : pw;
    PyObject* hi_o =
        seq ? (k ? PySequence_Fast_GET_ITEM(seq, k - 1) : NULL) : pw;
    rc = k > 2 || !lo_o ||
                 cmxpy_int64_arg(lo_o, &pairs[0][0], "pad", "pad_width") < 0 ||
                 cmxpy_int64_arg(hi_o, &pairs[0][1], "pad", "pad_width") < 0
             ? -1
             : 0;
    np = 1;
  } else {
    rc = k > CMX_MAX_NDIM ? -1 : 0;
    for (Py_ssize_t i = 0; !rc && i < k; i++) {
      PyObject* p = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "");
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
  if (!rc && np != 1 && np != nd) {
    PyErr_Format(PyExc_ValueError,
                 "[pad] pad_width has %d entries for an array of %d dimensions",
                 np, nd);
    return -1;
  }
  if (rc) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_TypeError)) {
      PyErr_Clear();
      PyErr_SetString(PyExc_ValueError, "[pad] invalid pad_width");
    }
    return -1;
  }
  for (int i = 0; i < nd; i++) {
    lo[i] = pairs[np == 1 ? 0 : i][0];
    hi[i] = pairs[np == 1 ? 0 : i][1];
  }
  return 0;
}

CMXPY_DEF(pad,
          "(a: array, /, pad_width: int | tuple[int] | tuple[int, int] | "
          "list[tuple[int, int]], mode: Literal['constant', 'edge', 'reflect', "
          "'symmetric'] = "
          "'constant', constant_values: scalar | array = 0, " STREAM_KW,
          "Pad an array with a constant value (mode 'constant'), its edge "
          "values (mode 'edge') or its mirror image without or with the edge "
          "(modes 'reflect' and 'symmetric', repeating periodically). "
          "pad_width is an int, a (before, after) "
          "pair, or one pair per axis.\n\nReturns:\n    array: The padded "
          "array.") {
  cmx_pad_mode pm;
  if (!strcmp(STR(2), "constant")) {
    pm = CMX_PAD_CONSTANT;
  } else if (!strcmp(STR(2), "edge")) {
    pm = CMX_PAD_EDGE;
  } else if (!strcmp(STR(2), "reflect")) {
    pm = CMX_PAD_REFLECT;
  } else if (!strcmp(STR(2), "symmetric")) {
    pm = CMX_PAD_SYMMETRIC;
  } else {
    PyErr_Format(PyExc_ValueError, "[pad] unsupported mode '%s'", STR(2));
    return NULL;
  }
  int nd = cmx_array_ndim(ARR(0));
  int64_t lo[CMX_MAX_NDIM], hi[CMX_MAX_NDIM];
  if (pad_widths(OBJ(1), nd, lo, hi) < 0 ||
      cmxpy_operand(A, 3, cmx_array_dtype(ARR(0))) < 0)
    return NULL;
  return RET(cmx_pad(OUT, ARR(0), NULL, lo, hi, nd, ARR(3), pm, STREAM));
}

CMXPY_DEF(repeat,
          "(array: array, /, repeats: int, axis: int | None = None, " STREAM_KW,
          "Repeat each element along an axis (of the flattened array when "
          "None).\n\nReturns:\n    array: The repeated array.") {
  return RET(cmx_repeat(OUT, ARR(0), I64(1), OPT_INT(2), STREAM));
}

CMXPY_DEF(tile, "(a: array, /, reps: int | Sequence[int], " STREAM_KW,
          "Construct an array by repeating a the number of times given by "
          "reps.\n\nReturns:\n    array: The tiled array.") {
  return RET(cmx_tile(OUT, ARR(0), INTS(1), STREAM));
}

CMXPY_DEF(roll,
          "(a: array, /, shift: int | tuple[int], axis: None | int | "
          "tuple[int] = None, " STREAM_KW,
          "Roll array elements along the given axes (of the flattened array "
          "when None).\n\nReturns:\n    array: The rolled array.") {
  return RET(cmx_roll(OUT, ARR(0), INTS(1), AXES(2), STREAM));
}

CMXPY_DEF(as_strided,
          "(a: array, /, shape: Sequence[int] | None = None, strides: "
          "Sequence[int] | None = None, offset: int = 0, " STREAM_KW,
          "Create a view into the array with the given shape and strides "
          "(in elements).\n\nReturns:\n    array: The output array.") {
  cmx_array a = ARR(0);
  cmxpy_val *sh = &A->v[1], *st = &A->v[2];
  if (sh->none) { /* a's shape */
    sh->n = cmx_array_ndim(a);
    memcpy(sh->ints, cmx_array_shape(a), (size_t)sh->n * sizeof(int64_t));
  }
  if (st->none) { /* row-major strides of the shape */
    st->n = sh->n;
    int64_t acc = 1;
    for (int i = sh->n - 1; i >= 0; i--) {
      st->ints[i] = acc;
      if (__builtin_mul_overflow(acc, sh->ints[i] > 0 ? sh->ints[i] : 1,
                                 &acc)) {
        PyErr_SetString(PyExc_ValueError, "[as_strided] shape is too large");
        return NULL;
      }
    }
  }
  if (st->n != sh->n) {
    PyErr_SetString(PyExc_ValueError,
                    "[as_strided] shape and strides must have the same length");
    return NULL;
  }
  return RET(cmx_as_strided(OUT, a, sh->ints, sh->n, st->ints, I64(3), STREAM));
}

CMXPY_DEF(contiguous, "(a: array, /, allow_col_major: bool = False, " STREAM_KW,
          "A row-major contiguous array (a itself when already so).\n\n"
          "Returns:\n    array: The contiguous array.") {
  return RET(cmx_contiguous(OUT, ARR(0), FLAG(1), STREAM));
}

CMXPY_DEF(view, "(a: array, /, dtype: Dtype, " STREAM_KW,
          "View the array as a different type (the last axis scales by the "
          "size ratio).\n\nReturns:\n    array: The array of the new type.") {
  return RET(cmx_view(OUT, ARR(0), DTYPE(1), STREAM));
}

CMXPY_METHOD_OF(flatten)
CMXPY_METHOD_OF(squeeze)
CMXPY_METHOD_OF(swapaxes)
CMXPY_METHOD_OF(moveaxis)
CMXPY_METHOD_OF(split)
CMXPY_METHOD_OF(view)

/* ---------------- tables ---------------- */
static cmxpy_spec* const functions[] = {&spec_reshape,
                                        &spec_flatten,
                                        &spec_unflatten,
                                        &spec_squeeze,
                                        &spec_expand_dims,
                                        &spec_flip,
                                        &spec_transpose,
                                        &spec_permute_dims,
                                        &spec_matrix_transpose,
                                        &spec_swapaxes,
                                        &spec_moveaxis,
                                        &spec_broadcast_to,
                                        &spec_broadcast_arrays,
                                        &spec_broadcast_shapes,
                                        &spec_concatenate,
                                        &spec_concat,
                                        &spec_stack,
                                        &spec_split,
                                        &spec_pad,
                                        &spec_repeat,
                                        &spec_tile,
                                        &spec_roll,
                                        &spec_as_strided,
                                        &spec_contiguous,
                                        &spec_view};

static cmxpy_spec* const methods[] = {
    &spec_m_reshape,  &spec_m_flatten,  &spec_m_squeeze, &spec_m_transpose,
    &spec_m_swapaxes, &spec_m_moveaxis, &spec_m_split,   &spec_m_view};

int cmxpy_init_ops_shape(PyObject* m, cmxpy_deflist* array_methods) {
  return CMXPY_ADD_AREA(m, functions, array_methods, methods);
}
