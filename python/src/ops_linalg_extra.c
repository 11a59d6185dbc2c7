/* Bindings of the linear-algebra extras of ops.h: einsum, einsum_path,
 * diagonal, diag (also array methods), hadamard_transform, gather_mm,
 * segmented_mm and block_masked_mm, with mlx.core's signatures. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

CMXPY_DEF(einsum,
          "(subscripts: str, *operands: array, stream: StreamOrDevice = None) "
          "-> array",
          "Perform the Einstein summation convention on the operands.\n\n"
          "Args:\n    subscripts (str): The Einstein summation convention "
          "equation.\n    *operands (array): The input arrays.\n\nReturns:\n"
          "    array: The output array.") {
  return RET(cmx_einsum(OUT, STR(0), ARRAYS(1), STREAM));
}

/* einsum_path(subscripts, *operands) -> (list of tuples, str). */
CMXPY_DEF(einsum_path, "(subscripts: str, *operands: array)",
          "Compute the contraction order for the given Einstein summation."
          "\n\nArgs:\n    subscripts (str): The Einstein summation "
          "convention equation.\n    *operands (array): The input arrays.\n\n"
          "Returns:\n    tuple(list(tuple(int, int)), str): The einsum path "
          "and a string containing information about the chosen path.") {
  int *pos = NULL, *cnt = NULL, nsteps = 0;
  char* report = NULL;
  cmx_status st =
      cmx_einsum_path(&pos, &cnt, &nsteps, &report, STR(0), ARRAYS(1));
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

CMXPY_DEF(diagonal,
          "(a: array, offset: int = 0, axis1: int = 0, axis2: int = 1, "
          "stream: StreamOrDevice = None) -> array",
          "Return specified diagonals: the (axis1, axis2) planes' diagonal "
          "at offset (above the main diagonal for positive offsets) as the "
          "last axis of the result, a view of a.\n\nReturns:\n    array: The "
          "diagonals of the array.") {
  return RET(cmx_diagonal(OUT, ARR(0), INT(1), INT(2), INT(3), STREAM));
}

CMXPY_DEF(diag, "(a: array, /, k: int = 0, " STREAM_KW,
          "Extract a diagonal (2-D a) or construct a diagonal matrix (1-D "
          "a, on the k-th diagonal).\n\nReturns:\n    array: The extracted "
          "diagonal or the constructed diagonal matrix.") {
  return RET(cmx_diag(OUT, ARR(0), INT(1), STREAM));
}

CMXPY_DEF(hadamard_transform,
          "(a: array, scale: float | None = None, stream: StreamOrDevice = "
          "None) -> array",
          "Perform the Walsh-Hadamard transform along the final axis. "
          "Supports sizes n = m * 2^k for m in (1, 12, 20, 28); scale "
          "defaults to 1/sqrt(n), giving an orthonormal transform.\n\n"
          "Returns:\n    array: The transformed array.") {
  float scale = cmxpy_float(FLT(1));
  return RET(
      cmx_hadamard_transform(OUT, ARR(0), ISNONE(1) ? NULL : &scale, STREAM));
}

CMXPY_DEF(gather_mm,
          "(a: scalar | array, b: scalar | array, /, lhs_indices: array | "
          "None = None, rhs_indices: array | None = None, *, sorted_indices: "
          "bool = False, stream: StreamOrDevice = None) -> array",
          "Matrix multiplication with matrix-level gather: out[i] = "
          "a[lhs_indices[i]] @ b[rhs_indices[i]], the indices flat over the "
          "batch dimensions of a and b.\n\nReturns:\n    array: The output "
          "array.") {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(
      cmx_gather_mm(OUT, ARR(0), ARR(1), ARR(2), ARR(3), FLAG(4), STREAM));
}

CMXPY_DEF(
    segmented_mm,
    "(a: scalar | array, b: scalar | array, /, segments: array, " STREAM_KW,
    "Perform a matrix multiplication but segment the inner dimension "
    "and save the result for each segment separately: out[s] = a[:, "
    "k0:k1] @ b[k0:k1] for (k0, k1) = segments[s].\n\nReturns:\n    "
    "array: The result per segment of shape (..., M, N).") {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(cmx_segmented_mm(OUT, ARR(0), ARR(1), ARR(2), STREAM));
}

CMXPY_DEF(block_masked_mm,
          "(a: scalar | array, b: scalar | array, /, block_size: int = 64, "
          "mask_out: array | None = None, mask_lhs: array | None = None, "
          "mask_rhs: array | None = None, " STREAM_KW,
          "Matrix multiplication with block masking of the operands and the "
          "output (block_size 32 or 64). Boolean masks clear blocks; other "
          "masks scale them.\n\nReturns:\n    array: The output array.") {
  if (cmxpy_operands(A, 0, 1) < 0) return NULL;
  return RET(cmx_block_masked_mm(OUT, ARR(0), ARR(1), INT(2), ARR(3), ARR(4),
                                 ARR(5), STREAM));
}

CMXPY_METHOD_OF(diagonal)
CMXPY_METHOD_OF(diag)

static cmxpy_spec* const functions[] = {
    &spec_einsum,       &spec_einsum_path,        &spec_diagonal,
    &spec_diag,         &spec_hadamard_transform, &spec_gather_mm,
    &spec_segmented_mm, &spec_block_masked_mm};

static cmxpy_spec* const methods[] = {&spec_m_diagonal, &spec_m_diag};

int cmxpy_init_ops_linalg_extra(PyObject* m, cmxpy_deflist* array_methods) {
  return CMXPY_ADD_AREA(m, functions, array_methods, methods);
}
