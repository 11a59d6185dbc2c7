/* The cmx.core.linalg submodule over include/cmx/linalg.h, with
 * mlx.core.linalg's names, signatures and defaults. cmx runs every function
 * on any stream (MLX requires the CPU stream for most). */
#include "cmx/linalg.h"

#include "args.h"

#define SK "*, stream: StreamOrDevice = None)"

/* A tuple of the n arrays in outs (takes them; raises on st != CMX_OK). */
static PyObject* tuple_of(cmx_status st, cmx_array* outs, int n) {
  PyObject* l = cmxpy_list(st, outs, n);
  PyObject* t = l ? PyList_AsTuple(l) : NULL;
  Py_XDECREF(l);
  return t;
}

CMXPY_DEF(norm,
          "(a: array, /, ord: None | int | float | str = None, axis: None | "
          "int | list[int] = None, keepdims: bool = False, " SK " -> array",
          "Matrix or vector norm (numpy.linalg.norm's ord values).\n\n"
          "Args:\n    a (array): Input array. If axis is None, a must be 1-D "
          "or 2-D unless ord is None.\n    ord (int, float or str, optional):"
          " Order of the norm.\n    axis (int or list(int), optional): The "
          "axes of the vector (one) or matrix (two) norms.\n    keepdims "
          "(bool): Keep the reduced axes as size one.\n\nReturns:\n    array:"
          " The output containing the norm(s).") {
  const int* axes = NULL;
  int naxes = 0;
  if (!ISNONE(2)) {
    if (cmxpy_convert_ints(A, 2, OBJ(2), NULL) < 0) return NULL;
    axes = A->v[2].axes, naxes = A->v[2].n;
  }
  PyObject* o = OBJ(1);
  if (o == Py_None || !o)
    return RET(
        cmx_linalg_norm(OUT, ARR(0), NULL, axes, naxes, FLAG(3), STREAM));
  if (PyUnicode_Check(o)) {
    const char* s = PyUnicode_AsUTF8(o);
    if (!s) return NULL;
    return RET(
        cmx_linalg_norm_str(OUT, ARR(0), s, axes, naxes, FLAG(3), STREAM));
  }
  double ord = PyFloat_AsDouble(o);
  if (ord == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return cmxpy_type_error(A, 1);
  }
  return RET(cmx_linalg_norm(OUT, ARR(0), &ord, axes, naxes, FLAG(3), STREAM));
}

CMXPY_DEF(qr, "(a: array, " SK " -> tuple[array, array]",
          "The QR factorization of the input matrix (reduced: Q (..., M, K), "
          "R (..., K, N), K = min(M, N)).\n\nReturns:\n    tuple(array, "
          "array): Q and R.") {
  cmx_array o[2] = {NULL, NULL};
  return tuple_of(cmx_linalg_qr(&o[0], &o[1], ARR(0), STREAM), o, 2);
}

CMXPY_DEF(svd,
          "(a: array, compute_uv: bool = True, " SK
          " -> tuple[array, array, array]",
          "The Singular Value Decomposition (SVD) of the input matrix.\n\n"
          "Returns:\n    Union[tuple(array, ...), array]: U, S, Vt with A = "
          "U[:, :K] @ diag(S) @ Vt[:K], or S alone when compute_uv is False.") {
  cmx_array o[3] = {NULL, NULL, NULL};
  int n = 0;
  cmx_status st = cmx_linalg_svd(o, &n, ARR(0), FLAG(1), STREAM);
  if (!FLAG(1) && st == CMX_OK) return cmxpy_wrap(o[0]);
  return tuple_of(st, o, FLAG(1) ? 3 : 1);
}

CMXPY_DEF(inv, "(a: array, " SK " -> array",
          "Compute the inverse of a square matrix.\n\nReturns:\n    array: "
          "ainv such that dot(a, ainv) = dot(ainv, a) = eye(a.shape[0])") {
  return RET(cmx_linalg_inv(OUT, ARR(0), STREAM));
}

CMXPY_DEF(tri_inv, "(a: array, upper: bool = False, " SK " -> array",
          "Compute the inverse of a triangular square matrix (only the upper "
          "or lower triangle is read).\n\nReturns:\n    array: The inverse.") {
  return RET(cmx_linalg_tri_inv(OUT, ARR(0), FLAG(1), STREAM));
}

CMXPY_DEF(cholesky, "(a: array, upper: bool = False, " SK " -> array",
          "Compute the Cholesky decomposition of a real symmetric positive "
          "definite matrix (only the lower, or upper, triangle is read).\n\n"
          "Returns:\n    array: L (lower) or U (upper) with A = L L^T = "
          "U^T U.") {
  return RET(cmx_linalg_cholesky(OUT, ARR(0), FLAG(1), STREAM));
}

CMXPY_DEF(cholesky_inv, "(a: array, upper: bool = False, " SK " -> array",
          "Compute the inverse of a real symmetric positive definite matrix "
          "from its Cholesky factor.\n\nReturns:\n    array: A^-1 where A = "
          "L L^T (U^T U when upper).") {
  return RET(cmx_linalg_cholesky_inv(OUT, ARR(0), FLAG(1), STREAM));
}

CMXPY_DEF(pinv, "(a: array, " SK " -> array",
          "Compute the (Moore-Penrose) pseudo-inverse of a matrix.\n\n"
          "Returns:\n    array: aplus such that a @ aplus @ a = a") {
  return RET(cmx_linalg_pinv(OUT, ARR(0), STREAM));
}

CMXPY_DEF(cross, "(a: array, b: array, axis: int = -1, " SK " -> array",
          "Compute the cross product of two arrays along a specified axis "
          "(of size 2 or 3).\n\nReturns:\n    array: The cross product.") {
  return RET(cmx_linalg_cross(OUT, ARR(0), ARR(1), INT(2), STREAM));
}

CMXPY_DEF(eigvals, "(a: array, " SK " -> array",
          "Compute the eigenvalues of a square matrix (complex64).\n\n"
          "Returns:\n    array: The eigenvalues.") {
  return RET(cmx_linalg_eigvals(OUT, ARR(0), STREAM));
}

CMXPY_DEF(eig, "(a: array, " SK " -> tuple[array, array]",
          "Compute the eigenvalues and right eigenvectors (columns) of a "
          "square matrix.\n\nReturns:\n    Tuple[array, array]: The "
          "eigenvalues and eigenvectors (complex64).") {
  cmx_array o[2] = {NULL, NULL};
  return tuple_of(cmx_linalg_eig(&o[0], &o[1], ARR(0), STREAM), o, 2);
}

CMXPY_DEF(eigvalsh, "(a: array, UPLO: str = 'L', " SK " -> array",
          "Compute the eigenvalues (ascending) of a real symmetric "
          "matrix.\n\nReturns:\n    array: The eigenvalues.") {
  return RET(cmx_linalg_eigvalsh(OUT, ARR(0), STR(1), STREAM));
}

CMXPY_DEF(eigh, "(a: array, UPLO: str = 'L', " SK " -> tuple[array, array]",
          "Compute the eigenvalues and eigenvectors of a real symmetric "
          "matrix.\n\nReturns:\n    Tuple[array, array]: The eigenvalues "
          "(ascending) and the normalized eigenvectors (columns).") {
  cmx_array o[2] = {NULL, NULL};
  return tuple_of(cmx_linalg_eigh(&o[0], &o[1], ARR(0), STR(1), STREAM), o, 2);
}

CMXPY_DEF(lu, "(a: array, " SK " -> tuple[array, array, array]",
          "Compute the LU factorization of the given matrix A: the pivots "
          "are row indices P, with A = L[P] @ U (2-D) or take_along_axis(L, "
          "P[..., None], axis=-2) @ U.\n\nReturns:\n    tuple(array, array, "
          "array): P, L and U.") {
  cmx_array o[3] = {NULL, NULL, NULL};
  return tuple_of(cmx_linalg_lu(&o[0], &o[1], &o[2], ARR(0), STREAM), o, 3);
}

CMXPY_DEF(lu_factor, "(a: array, " SK " -> tuple[array, array]",
          "Computes a compact representation of the LU factorization (as "
          "LAPACK's getrf).\n\nReturns:\n    tuple(array, array): The LU "
          "matrix and the pivots (row i swapped with pivots[i]).") {
  cmx_array o[2] = {NULL, NULL};
  return tuple_of(cmx_linalg_lu_factor(&o[0], &o[1], ARR(0), STREAM), o, 2);
}

CMXPY_DEF(solve, "(a: array, b: array, " SK " -> array",
          "Compute the solution to a system of linear equations AX = B.\n\n"
          "Returns:\n    array: The unique solution to the system AX = B.") {
  return RET(cmx_linalg_solve(OUT, ARR(0), ARR(1), STREAM));
}

CMXPY_DEF(solve_triangular,
          "(a: array, b: array, *, upper: bool = False, stream: "
          "StreamOrDevice = None) -> array",
          "Computes the solution of a triangular system of linear equations "
          "AX = B.\n\nReturns:\n    array: The unique solution.") {
  return RET(cmx_linalg_solve_triangular(OUT, ARR(0), ARR(1), FLAG(2), STREAM));
}

CMXPY_DEF(det, "(a: array, " SK " -> array",
          "Compute the determinant of a square matrix (through its LU "
          "factorization).\n\nReturns:\n    array: The determinant.") {
  return RET(cmx_linalg_det(OUT, ARR(0), STREAM));
}

CMXPY_DEF(slogdet, "(a: array, " SK " -> tuple[array, array]",
          "Compute the sign and natural log of the absolute value of the "
          "determinant.\n\nReturns:\n    tuple(array, array): sign and "
          "logabsdet.") {
  cmx_array o[2] = {NULL, NULL};
  return tuple_of(cmx_linalg_slogdet(&o[0], &o[1], ARR(0), STREAM), o, 2);
}

static cmxpy_spec* const linalg_functions[] = {&spec_norm,
                                               &spec_qr,
                                               &spec_svd,
                                               &spec_inv,
                                               &spec_tri_inv,
                                               &spec_cholesky,
                                               &spec_cholesky_inv,
                                               &spec_pinv,
                                               &spec_cross,
                                               &spec_eigvals,
                                               &spec_eig,
                                               &spec_eigvalsh,
                                               &spec_eigh,
                                               &spec_lu,
                                               &spec_lu_factor,
                                               &spec_solve,
                                               &spec_solve_triangular,
                                               &spec_det,
                                               &spec_slogdet};

static struct PyModuleDef linalg_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.linalg",
    .m_doc = "cmx.core.linalg: linear algebra (as mlx.core.linalg).",
    .m_size = -1,
};

/* Adds a submodule `name` of m (also importable as cmx.core.<name>). */
int cmxpy_add_submodule(PyObject* m, PyObject* sub, const char* name,
                        const char* full) {
  Py_INCREF(sub);
  if (PyModule_AddObject(m, name, sub) < 0) {
    Py_DECREF(sub);
    Py_DECREF(sub);
    return -1;
  }
  int rc = PyDict_SetItemString(PyImport_GetModuleDict(), full, sub);
  Py_DECREF(sub);
  return rc;
}

int cmxpy_init_linalg(PyObject* m) {
  PyObject* sub = PyModule_Create(&linalg_module);
  if (!sub) return -1;
  if (cmxpy_add_functions(sub, linalg_functions,
                          CMXPY_COUNT(linalg_functions)) < 0) {
    Py_DECREF(sub);
    return -1;
  }
  return cmxpy_add_submodule(m, sub, "linalg", "cmx.core.linalg");
}
