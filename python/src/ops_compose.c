/* slice and slice_update with start indices given as an array (MLX's
 * dynamic slicing, done in C by cmx_slice_dynamic and
 * cmx_slice_update_dynamic), and asarray. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

CMXPY_DEF(slice,
          "(a: array, /, start_indices: array, axes: Sequence[int], "
          "slice_size: Sequence[int], " STREAM_KW,
          "Extract a window of the array: along axes[i] from "
          "start_indices[i] for slice_size[i] elements (start indices may "
          "be an array, read lazily; the window is clamped into the axis)."
          "\n\nReturns:\n    array: The sliced output array.") {
  if (A->v[2].n != A->v[3].n) {
    PyErr_SetString(PyExc_ValueError,
                    "[slice] axes and slice_size must have the same length");
    return NULL;
  }
  return RET(cmx_slice_dynamic(OUT, ARR(0), ARR(1), A->v[2].axes, A->v[2].n,
                               A->v[3].ints, STREAM));
}

CMXPY_DEF(slice_update,
          "(a: array, /, update: scalar | array, start_indices: array, axes: "
          "Sequence[int], " STREAM_KW,
          "A copy of a with the window starting at start_indices along axes "
          "replaced by update.\n\nReturns:\n    array: The output array.") {
  if (cmxpy_operand(A, 1, cmx_array_dtype(ARR(0))) < 0) return NULL;
  return RET(cmx_slice_update_dynamic(OUT, ARR(0), ARR(1), ARR(2), A->v[3].axes,
                                      A->v[3].n, STREAM));
}

CMXPY_DEF(asarray, "(a: object, dtype: Dtype | None = None) -> array",
          "Convert the input to an array (the input itself when it already "
          "is one of the requested dtype).") {
  PyObject* a = OBJ(0);
  if (CmxArray_Check(a) &&
      (DTYPE(1) == CMX_DTYPE_AUTO || DTYPE(1) == cmx_array_dtype(CMXPY_ARR(a))))
    return Py_NewRef(a);
  return cmxpy_wrap(cmxpy_array_from_object(a, DTYPE(1)));
}

static cmxpy_spec* const functions[] = {&spec_slice, &spec_slice_update,
                                        &spec_asarray};

int cmxpy_init_ops_compose(PyObject* m) {
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
