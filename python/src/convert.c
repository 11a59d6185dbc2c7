/* Conversion between Python values and arrays: the mx.array constructor
 * (scalars, nested lists and tuples, buffers such as NumPy arrays, objects
 * with __mlx_array__ or __array__), weakly typed operands of binary ops,
 * and item() / tolist(). Buffers (PEP 3118) are read in convert_buffer.c.
 *
 * Defaults follow MLX: bool -> bool, int -> int32 (int64 when a value does
 * not fit int32), float -> float32, complex -> complex64; NumPy float64 and
 * complex128 buffers become float32 and complex64 unless a dtype is given.
 */
#include "convert.h"

#include <limits.h>
#include <math.h>

/* ---------------- Python scalars ---------------- */
enum { K_BOOL = 0, K_INT = 1, K_FLOAT = 2, K_COMPLEX = 3, K_NONE = -1 };

static int scalar_kind(PyObject* o) {
  if (PyBool_Check(o)) return K_BOOL;
  if (PyLong_Check(o)) return K_INT;
  if (PyFloat_Check(o)) return K_FLOAT;
  if (PyComplex_Check(o)) return K_COMPLEX;
  return K_NONE;
}

/* A Python int as int64 (*big = 0), as uint64 above INT64_MAX (*big = 1), or
 * out of both ranges (*big = 2, *v = its sign). -1 with an exception only
 * for errors. */
static int int_value(PyObject* o, int64_t* v, uint64_t* u, int* big) {
  int overflow = 0;
  long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (x == -1 && PyErr_Occurred()) return -1;
  *big = 0;
  if (!overflow) {
    *v = (int64_t)x;
    return 0;
  }
  if (overflow > 0) {
    unsigned long long y = PyLong_AsUnsignedLongLong(o);
    if (!(y == (unsigned long long)-1 && PyErr_Occurred())) {
      *u = (uint64_t)y;
      *big = 1;
      return 0;
    }
    PyErr_Clear();
  }
  *big = 2;
  *v = overflow;
  return 0;
}

static PyObject* int_overflow(PyObject* o, const char* to) {
  PyErr_Format(PyExc_ValueError,
               "Converting %S to %s would result in overflow.", o, to);
  return NULL;
}

/* A Python int that does not convert to the C integer MLX reads it as:
 * RuntimeError, as MLX's failed cast (std::bad_cast). */
static PyObject* int_bad_cast(PyObject* o, const char* to) {
  PyErr_Format(PyExc_RuntimeError,
               "Converting %S to %s would result in overflow.", o, to);
  return NULL;
}

/* A double converted to an integer without UB: NaN -> 0, saturated. */
static int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}
static uint64_t sat_u64(double d) {
  if (d != d || d <= 0) return 0;
  if (d >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)d;
}

/* A scalar value in its widest form. */
typedef struct {
  int kind; /* K_* */
  int big;  /* for ints: 0 int64, 1 uint64, 2 beyond (use d) */
  int64_t i;
  uint64_t u;
  double d, im;
} scalar_val;

/* MLX reads the ints of an int/bool list given an integer or bool dtype t
 * as int32 (t of 32 bits or less, uint32 aside), uint32 or int64: whether
 * scalar s fits that type. */
static bool list_int_fits(const scalar_val* s, cmx_dtype t, const char** as) {
  if (t == CMX_UINT32) {
    *as = "uint32";
    return s->big == 0 && s->i >= 0 && s->i <= (int64_t)UINT32_MAX;
  }
  if (t == CMX_UINT64) { /* past MLX: the whole uint64 range */
    *as = "uint64";
    return s->big <= 1 && (s->big == 1 || s->i >= INT64_MIN);
  }
  if (cmx_dtype_size(t) == 8) {
    *as = "int64";
    return s->big == 0;
  }
  *as = "int32";
  return s->big == 0 && s->i >= INT32_MIN && s->i <= INT32_MAX;
}

static int read_scalar(PyObject* o, scalar_val* s) {
  s->kind = scalar_kind(o);
  s->big = 0;
  s->i = 0;
  s->u = 0;
  s->d = 0;
  s->im = 0;
  switch (s->kind) {
    case K_BOOL:
      s->i = o == Py_True;
      s->d = (double)s->i;
      return 0;
    case K_INT:
      if (int_value(o, &s->i, &s->u, &s->big) < 0) return -1;
      if (s->big == 2) {
        s->d = PyLong_AsDouble(o);
        if (s->d == -1.0 && PyErr_Occurred()) {
          PyErr_Clear();
          s->d = s->i < 0 ? -INFINITY : INFINITY;
        }
      } else {
        s->d = s->big ? (double)s->u : (double)s->i;
      }
      return 0;
    case K_FLOAT:
      s->d = PyFloat_AS_DOUBLE(o);
      return 0;
    case K_COMPLEX:
      s->d = PyComplex_RealAsDouble(o);
      s->im = PyComplex_ImagAsDouble(o);
      return 0;
  }
  PyErr_SetString(PyExc_TypeError, "not a scalar");
  return -1;
}

/* Writes s as dtype t at dst. Integers beyond int64 must have been checked
 * by the caller (they saturate here). */
static void store_scalar(void* dst, cmx_dtype t, const scalar_val* s) {
  bool exact_int = (s->kind == K_BOOL || s->kind == K_INT) && s->big < 2;
  uint64_t bits = s->big ? s->u : (uint64_t)s->i; /* two's complement */
  if (!exact_int) {
    bits = t >= CMX_UINT8 && t <= CMX_UINT64 ? sat_u64(s->d)
                                             : (uint64_t)sat_i64(s->d);
  }
  switch (t) {
    case CMX_BOOL:
      *(uint8_t*)dst = s->kind >= K_FLOAT ? (s->d != 0 || s->im != 0)
                                          : (s->big ? s->u != 0 : s->i != 0);
      break;
    case CMX_UINT8:
    case CMX_INT8:
      *(uint8_t*)dst = (uint8_t)bits;
      break;
    case CMX_UINT16:
    case CMX_INT16:
      *(uint16_t*)dst = (uint16_t)bits;
      break;
    case CMX_UINT32:
    case CMX_INT32:
      *(uint32_t*)dst = (uint32_t)bits;
      break;
    case CMX_UINT64:
    case CMX_INT64:
      *(uint64_t*)dst = bits;
      break;
    case CMX_FLOAT16:
      *(uint16_t*)dst = cmx_float_to_float16((float)s->d);
      break;
    case CMX_BFLOAT16:
      *(uint16_t*)dst = cmx_float_to_bfloat16((float)s->d);
      break;
    case CMX_FLOAT32:
      *(float*)dst = (float)s->d;
      break;
    case CMX_FLOAT64:
      *(double*)dst = s->d;
      break;
    case CMX_COMPLEX64:
      ((float*)dst)[0] = (float)s->d;
      ((float*)dst)[1] = (float)s->im;
      break;
    default:
      break;
  }
}

/* A strong 0-d array of a Python scalar (dtype AUTO: MLX's default). */
static cmx_array scalar_array(PyObject* o, cmx_dtype dtype) {
  scalar_val s;
  if (read_scalar(o, &s) < 0) return NULL;
  cmx_dtype t = dtype;
  if (t == CMX_DTYPE_AUTO) {
    switch (s.kind) {
      case K_BOOL:
        t = CMX_BOOL;
        break;
      case K_INT:
        if (s.big) {
          int_bad_cast(o, "int64");
          return NULL;
        }
        t = (s.i < INT32_MIN || s.i > INT32_MAX) ? CMX_INT64 : CMX_INT32;
        break;
      case K_FLOAT:
        t = CMX_FLOAT32;
        break;
      default:
        t = CMX_COMPLEX64;
        break;
    }
  } else if (s.kind == K_INT && !cmx_dtype_is_inexact(t) &&
             (s.big == 2 || (s.big == 1 && t != CMX_UINT64))) {
    int_bad_cast(o, cmx_dtype_name(t)); /* past int64: MLX's failed cast */
    return NULL;
  }
  unsigned char buf[16];
  store_scalar(buf, t, &s);
  cmx_array out = NULL;
  cmx_status st = cmx_array_from_data(&out, buf, NULL, 0, t);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

/* ---------------- nested lists ---------------- */
typedef struct {
  int64_t shape[CMX_MAX_NDIM];
  int nlist;       /* levels of lists */
  int ndim;        /* nlist + ndim of array leaves */
  int kind;        /* widest scalar kind, K_NONE if none */
  bool int_wide;   /* an int outside int32 */
  bool int_big;    /* an int outside int64 */
  bool has_arrays; /* array leaves */
  cmx_dtype arr_dtype;
} list_info;

static int nonuniform(void) {
  PyErr_SetString(PyExc_ValueError,
                  "Initialization encountered non-uniform length.");
  return -1;
}

static bool is_seq(PyObject* o) {
  return PyList_Check(o) || PyTuple_Check(o);
}

static int list_validate(PyObject* o, int depth, list_info* info) {
  if (!is_seq(o)) return nonuniform();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n != info->shape[depth]) return nonuniform();
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* e = PySequence_Fast_GET_ITEM(o, i);
    if (depth + 1 < info->nlist) {
      if (list_validate(e, depth + 1, info) < 0) return -1;
      continue;
    }
    if (is_seq(e)) {
      PyErr_SetString(PyExc_ValueError,
                      "Initialization encountered extra dimension.");
      return -1;
    }
    if (CmxArray_Check(e)) {
      cmx_array a = CMXPY_ARR(e);
      int nd = cmx_array_ndim(a);
      if (nd != info->ndim - info->nlist) return nonuniform();
      const int64_t* sh = cmx_array_shape(a);
      for (int k = 0; k < nd; k++)
        if (sh[k] != info->shape[info->nlist + k]) return nonuniform();
      cmx_dtype t = cmx_array_dtype(a);
      info->arr_dtype =
          info->has_arrays ? cmx_dtype_promote(info->arr_dtype, t) : t;
      info->has_arrays = true;
      continue;
    }
    int k = scalar_kind(e);
    if (k == K_NONE) {
      /* NumPy scalars and other numbers: by their Python protocol. */
      if (PyIndex_Check(e))
        k = K_INT;
      else if (Py_TYPE(e)->tp_as_number && Py_TYPE(e)->tp_as_number->nb_float)
        k = K_FLOAT;
      else {
        PyErr_Format(PyExc_ValueError,
                     "Invalid type %.100s received in array initialization.",
                     Py_TYPE(e)->tp_name);
        return -1;
      }
    }
    if (info->ndim != info->nlist) return nonuniform();
    if (k == K_INT) {
      int64_t v = 0;
      uint64_t u;
      int big;
      PyObject* idx = PyLong_Check(e) ? (Py_INCREF(e), e) : PyNumber_Index(e);
      if (!idx) return -1;
      int rc = int_value(idx, &v, &u, &big);
      Py_DECREF(idx);
      if (rc < 0) return -1;
      if (big)
        info->int_big = true;
      else if (v < INT32_MIN || v > INT32_MAX)
        info->int_wide = true;
    }
    if (k > info->kind) info->kind = k;
  }
  return 0;
}

/* Reads a leaf scalar of any accepted kind. */
static int read_leaf(PyObject* e, scalar_val* s) {
  if (scalar_kind(e) != K_NONE) return read_scalar(e, s);
  PyObject* v = PyIndex_Check(e) ? PyNumber_Index(e) : PyNumber_Float(e);
  if (!v) return -1;
  int rc = read_scalar(v, s);
  Py_DECREF(v);
  return rc;
}

static int list_fill(PyObject* o, int depth, const list_info* info, cmx_dtype t,
                     char** dst, size_t leaf_bytes) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  size_t isz = cmx_dtype_size(t);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* e = PySequence_Fast_GET_ITEM(o, i);
    if (depth + 1 < info->nlist) {
      if (list_fill(e, depth + 1, info, t, dst, leaf_bytes) < 0) return -1;
    } else if (CmxArray_Check(e)) {
      cmx_array a = CMXPY_ARR(e), c = NULL;
      cmx_status st = CMX_OK;
      if (cmx_array_dtype(a) != t)
        st = cmx_astype(&c, a, t, CMX_STREAM_DEFAULT);
      else
        c = cmx_array_retain(a);
      if (st == CMX_OK) st = cmxpy_eval(c);
      if (st == CMX_OK) st = cmx_array_copy_to(c, *dst, leaf_bytes);
      cmx_array_release(c);
      if (st != CMX_OK) {
        cmxpy_raise(st);
        return -1;
      }
      *dst += leaf_bytes;
    } else {
      scalar_val s;
      if (read_leaf(e, &s) < 0) return -1;
      const char* as = "int64";
      if (s.kind == K_INT && !cmx_dtype_is_inexact(t) && info->kind <= K_INT &&
          !list_int_fits(&s, t, &as)) {
        int_bad_cast(e, as);
        return -1;
      }
      if (s.kind == K_INT && !cmx_dtype_is_inexact(t) &&
          (s.big == 2 || (s.big == 1 && t != CMX_UINT64))) {
        int_overflow(e, cmx_dtype_name(t));
        return -1;
      }
      store_scalar(*dst, t, &s);
      *dst += isz;
    }
  }
  return 0;
}

/* Whether a list holds arrays beside lists somewhere (MLX takes
 * [array, [1.0, 2.0]]): such a list is built element by element and
 * stacked. */
static bool mixes_arrays(PyObject* o) {
  bool arr = false, seq = false, inner = false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject* e = PySequence_Fast_GET_ITEM(o, i);
    if (CmxArray_Check(e)) arr = true;
    if (is_seq(e)) {
      seq = true;
      inner = inner || mixes_arrays(e);
    }
  }
  return (arr && seq) || inner;
}

static cmx_array array_from_list(PyObject* o, cmx_dtype dtype);

/* The mixed list o as the stack of its elements, each made an array. */
static cmx_array stack_elements(PyObject* o, cmx_dtype dtype) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  if (n > INT_MAX) return int_overflow(o, "a list length"), NULL;
  cmx_array* parts = PyMem_RawCalloc((size_t)n, sizeof *parts);
  if (!parts) return PyErr_NoMemory(), NULL;
  cmx_array out = NULL;
  bool ok = true;
  for (Py_ssize_t i = 0; ok && i < n; i++) {
    PyObject* e = PySequence_Fast_GET_ITEM(o, i);
    parts[i] = is_seq(e) ? array_from_list(e, dtype)
                         : cmxpy_array_from_object(e, dtype);
    ok = parts[i] != NULL;
  }
  cmx_status st =
      ok ? cmx_stack(&out, parts, (int)n, 0, CMX_STREAM_DEFAULT) : CMX_OK;
  cmx_array_release_all(parts, (size_t)n);
  PyMem_RawFree(parts);
  if (st != CMX_OK) {
    PyErr_SetString(PyExc_ValueError,
                    "Initialization encountered non-uniform length.");
    return NULL;
  }
  return out;
}

static cmx_array array_from_list(PyObject* o, cmx_dtype dtype) {
  if (PySequence_Fast_GET_SIZE(o) > 0 && mixes_arrays(o))
    return stack_elements(o, dtype);
  list_info info = {.kind = K_NONE};
  PyObject* cur = o;
  while (is_seq(cur)) {
    if (info.nlist == CMX_MAX_NDIM) {
      PyErr_Format(PyExc_ValueError,
                   "[array] nested lists deeper than %d dimensions",
                   CMX_MAX_NDIM);
      return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(cur);
    info.shape[info.nlist++] = n;
    if (n == 0) break;
    cur = PySequence_Fast_GET_ITEM(cur, 0);
  }
  info.ndim = info.nlist;
  if (CmxArray_Check(cur)) {
    cmx_array a = CMXPY_ARR(cur);
    int nd = cmx_array_ndim(a);
    if (info.ndim + nd > CMX_MAX_NDIM) {
      PyErr_SetString(PyExc_ValueError, "[array] too many dimensions");
      return NULL;
    }
    for (int k = 0; k < nd; k++)
      info.shape[info.ndim++] = cmx_array_shape(a)[k];
  }
  if (list_validate(o, 0, &info) < 0) return NULL;

  cmx_dtype t = dtype;
  if (t == CMX_DTYPE_AUTO) {
    static const cmx_dtype kdef[] = {CMX_BOOL, CMX_INT32, CMX_FLOAT32,
                                     CMX_COMPLEX64};
    cmx_dtype st = info.kind == K_NONE ? CMX_FLOAT32 : kdef[info.kind];
    if (info.kind == K_INT && (info.int_wide || info.int_big)) st = CMX_INT64;
    if (info.has_arrays)
      t = info.kind == K_NONE ? info.arr_dtype
                              : cmx_dtype_promote(info.arr_dtype, st);
    else
      t = st;
  }
  int64_t size = 1;
  for (int k = 0; k < info.ndim; k++) size *= info.shape[k];
  size_t isz = cmx_dtype_size(t);
  int64_t leaf = 1;
  for (int k = info.nlist; k < info.ndim; k++) leaf *= info.shape[k];
  char* buf = PyMem_RawMalloc(size > 0 ? (size_t)size * isz : 1);
  if (!buf) {
    PyErr_NoMemory();
    return NULL;
  }
  char* p = buf;
  cmx_array out = NULL;
  if (size > 0 && list_fill(o, 0, &info, t, &p, (size_t)leaf * isz) < 0) {
    PyMem_RawFree(buf);
    return NULL;
  }
  cmx_status st = cmx_array_from_data(&out, buf, info.shape, info.ndim, t);
  PyMem_RawFree(buf);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

/* ---------------- entry points ---------------- */
static PyObject* mlx_array_attr(PyObject* o) {
  PyObject* f = PyObject_GetAttrString(o, "__mlx_array__");
  if (!f) {
    PyErr_Clear();
    return NULL;
  }
  PyObject* r = PyObject_CallNoArgs(f);
  Py_DECREF(f);
  if (r && !CmxArray_Check(r)) {
    PyErr_SetString(PyExc_TypeError, "__mlx_array__ must return an array");
    Py_DECREF(r);
    return NULL;
  }
  return r;
}

static cmx_array retype(cmx_array a, cmx_dtype dtype) {
  if (dtype == CMX_DTYPE_AUTO || dtype == cmx_array_dtype(a))
    return cmx_array_retain(a);
  cmx_array out = NULL;
  cmx_status st = cmx_astype(&out, a, dtype, CMX_STREAM_DEFAULT);
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return out;
}

static bool is_text(PyObject* o) {
  return PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o);
}

/* Array-likes other than arrays and scalars; NULL with no exception when o
 * is none of them. */
static cmx_array from_array_like(PyObject* o, cmx_dtype dtype, bool* handled) {
  *handled = true;
  if (is_seq(o)) return array_from_list(o, dtype);
  if (PyObject_HasAttrString(o, "__mlx_array__")) {
    PyObject* r = mlx_array_attr(o);
    if (!r) return NULL;
    cmx_array a = retype(CMXPY_ARR(r), dtype);
    Py_DECREF(r);
    return a;
  }
  if (!is_text(o) && PyObject_CheckBuffer(o))
    return cmxpy_array_from_buffer(o, dtype);
  bool cuda;
  cmx_array c = cmxpy_array_from_cuda_tensor(o, &cuda);
  if (cuda) {
    cmx_array r = c ? retype(c, dtype) : NULL;
    cmx_array_release(c);
    return r;
  }
  if (!is_text(o) && PyObject_HasAttrString(o, "__array__")) {
    PyObject* r = PyObject_CallMethod(o, "__array__", NULL);
    if (!r) return NULL;
    cmx_array a =
        PyObject_CheckBuffer(r) ? cmxpy_array_from_buffer(r, dtype) : NULL;
    if (!a && !PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "__array__ did not return a buffer");
    Py_DECREF(r);
    return a;
  }
  bool dl = false; /* a host DLPack producer: copied */
  c = is_text(o) ? NULL : cmxpy_array_from_dlpack_object(o, &dl);
  if (dl) {
    cmx_array r = c ? retype(c, dtype) : NULL;
    cmx_array_release(c);
    return r;
  }
  *handled = false;
  return NULL;
}

cmx_array cmxpy_array_from_object(PyObject* o, cmx_dtype dtype) {
  if (CmxArray_Check(o)) return retype(CMXPY_ARR(o), dtype);
  if (scalar_kind(o) != K_NONE) {
    if (PyComplex_Check(o) && dtype != CMX_DTYPE_AUTO &&
        dtype != CMX_COMPLEX64) {
      cmx_array c = scalar_array(o, CMX_COMPLEX64);
      cmx_array r = c ? retype(c, dtype) : NULL;
      cmx_array_release(c);
      return r;
    }
    return scalar_array(o, dtype);
  }
  bool handled;
  cmx_array a = from_array_like(o, dtype, &handled);
  if (!handled)
    PyErr_Format(PyExc_ValueError,
                 "Invalid type %.100s received in array initialization.",
                 Py_TYPE(o)->tp_name);
  return a;
}

bool cmxpy_is_array_like(PyObject* o) {
  if (CmxArray_Check(o)) return true;
  if (scalar_kind(o) != K_NONE || is_seq(o)) return false; /* fast path */
  return PyObject_HasAttrString(o, "__mlx_array__");
}

bool cmxpy_is_operand(PyObject* o) {
  if (CmxArray_Check(o) || scalar_kind(o) != K_NONE || is_seq(o)) return true;
  if (is_text(o)) return false;
  return PyObject_HasAttrString(o, "__mlx_array__") ||
         PyObject_CheckBuffer(o) || PyObject_HasAttrString(o, "__array__");
}

cmx_array cmxpy_to_array(PyObject* o, const char* fname) {
  if (CmxArray_Check(o)) return cmx_array_retain(CMXPY_ARR(o));
  if (scalar_kind(o) != K_NONE) return scalar_array(o, CMX_DTYPE_AUTO);
  bool handled;
  cmx_array a = from_array_like(o, CMX_DTYPE_AUTO, &handled);
  if (!handled)
    PyErr_Format(PyExc_TypeError, "[%s] expected an array, got %.100s", fname,
                 Py_TYPE(o)->tp_name);
  return a;
}

/* Takes a pointer: the callers write *a in the same call expression. */
static cmx_array weak_result(cmx_status st, cmx_array* a) {
  if (st != CMX_OK) {
    cmxpy_raise(st);
    return NULL;
  }
  return *a;
}

cmx_array cmxpy_to_operand(PyObject* o, cmx_dtype partner, const char* fname) {
  if (CmxArray_Check(o)) return cmx_array_retain(CMXPY_ARR(o));
  if (partner == CMX_DTYPE_AUTO) return cmxpy_to_array(o, fname);
  cmx_array a = NULL;
  switch (scalar_kind(o)) {
    case K_BOOL:
      return weak_result(cmx_array_weak_bool(&a, o == Py_True), &a);
    case K_FLOAT:
      return weak_result(cmx_array_weak_float(&a, PyFloat_AS_DOUBLE(o)), &a);
    case K_COMPLEX:
      return weak_result(cmx_array_weak_complex(&a, PyComplex_RealAsDouble(o),
                                                PyComplex_ImagAsDouble(o)),
                         &a);
    case K_INT: {
      int64_t v = 0;
      uint64_t u;
      int big;
      if (int_value(o, &v, &u, &big) < 0) return NULL;
      if (big == 1 && partner == CMX_UINT64)
        return weak_result(cmx_array_from_uint64(&a, u, CMX_UINT64), &a);
      if (big == 1 && cmx_dtype_is_inexact(partner))
        return weak_result(cmx_array_weak_float(&a, (double)u), &a);
      if (big) { /* past int64: MLX's failed cast */
        int_bad_cast(o, cmx_dtype_is_integer(partner) ? cmx_dtype_name(partner)
                                                      : "int64");
        return NULL;
      }
      /* MLX checks the value against integer partners narrower than 64
       * bits; bool partners promote to int32 (int64 when it does not fit). */
      if (cmx_dtype_is_integer(partner) && cmx_dtype_size(partner) < 8) {
        int bits = (int)cmx_dtype_size(partner) * 8;
        int64_t lo =
            cmx_dtype_is_signed(partner) ? -((int64_t)1 << (bits - 1)) : 0;
        int64_t hi = cmx_dtype_is_signed(partner)
                         ? ((int64_t)1 << (bits - 1)) - 1
                         : ((int64_t)1 << bits) - 1;
        if (v < lo || v > hi) {
          int_overflow(o, cmx_dtype_name(partner));
          return NULL;
        }
      }
      if (partner == CMX_BOOL && (v < INT32_MIN || v > INT32_MAX))
        return weak_result(cmx_array_from_int64(&a, v, CMX_INT64), &a);
      return weak_result(cmx_array_weak_int(&a, v), &a);
    }
  }
  bool handled;
  a = from_array_like(o, partner, &handled);
  if (!handled)
    PyErr_Format(PyExc_TypeError,
                 "[%s] expected an array or a scalar, got %.100s", fname,
                 Py_TYPE(o)->tp_name);
  return a;
}

/* The array behind an array-like operand (new reference) or NULL. */
static cmx_array array_of(PyObject* o) {
  if (CmxArray_Check(o)) return cmx_array_retain(CMXPY_ARR(o));
  PyObject* r = mlx_array_attr(o);
  if (!r) return NULL;
  cmx_array a = cmx_array_retain(CMXPY_ARR(r));
  Py_DECREF(r);
  return a;
}

int cmxpy_to_operands(PyObject* a, PyObject* b, cmx_array* pa, cmx_array* pb,
                      const char* fname) {
  *pa = *pb = NULL;
  if (cmxpy_is_array_like(a)) {
    if (!(*pa = array_of(a))) return -1;
    *pb = cmxpy_to_operand(b, cmx_array_dtype(*pa), fname);
  } else if (cmxpy_is_array_like(b)) {
    if (!(*pb = array_of(b))) return -1;
    *pa = cmxpy_to_operand(a, cmx_array_dtype(*pb), fname);
  } else {
    *pa = cmxpy_to_array(a, fname);
    if (*pa) *pb = cmxpy_to_array(b, fname);
  }
  if (!*pa || !*pb) {
    cmx_array_release(*pa);
    cmx_array_release(*pb);
    *pa = *pb = NULL;
    return -1;
  }
  return 0;
}

/* ---------------- to Python ---------------- */
PyObject* cmxpy_scalar_at(const void* p, cmx_dtype t) {
  switch (t) {
    case CMX_BOOL:
      return PyBool_FromLong(*(const uint8_t*)p != 0);
    case CMX_UINT8:
      return PyLong_FromUnsignedLong(*(const uint8_t*)p);
    case CMX_UINT16:
      return PyLong_FromUnsignedLong(*(const uint16_t*)p);
    case CMX_UINT32:
      return PyLong_FromUnsignedLong(*(const uint32_t*)p);
    case CMX_UINT64:
      return PyLong_FromUnsignedLongLong(*(const uint64_t*)p);
    case CMX_INT8:
      return PyLong_FromLong(*(const int8_t*)p);
    case CMX_INT16:
      return PyLong_FromLong(*(const int16_t*)p);
    case CMX_INT32:
      return PyLong_FromLong(*(const int32_t*)p);
    case CMX_INT64:
      return PyLong_FromLongLong(*(const int64_t*)p);
    case CMX_FLOAT16:
      return PyFloat_FromDouble(cmx_float16_to_float(*(const uint16_t*)p));
    case CMX_BFLOAT16:
      return PyFloat_FromDouble(cmx_bfloat16_to_float(*(const uint16_t*)p));
    case CMX_FLOAT32:
      return PyFloat_FromDouble(*(const float*)p);
    case CMX_FLOAT64:
      return PyFloat_FromDouble(*(const double*)p);
    case CMX_COMPLEX64:
      return PyComplex_FromDoubles(((const float*)p)[0], ((const float*)p)[1]);
    default:
      break;
  }
  PyErr_SetString(PyExc_TypeError,
                  "type cannot be converted to Python scalar.");
  return NULL;
}

/* The data is read with the GIL released, while another thread may replace
 * the handle inside the array object (a[i] = v) and drop its reference:
 * readers hold their own reference to a throughout. */
PyObject* cmxpy_item(cmx_array a) {
  if (cmx_array_size(a) != 1) {
    PyErr_SetString(PyExc_ValueError,
                    "[convert] Only length-1 arrays can be converted to Python "
                    "scalars.");
    return NULL;
  }
  const void* p;
  a = cmx_array_retain(a);
  cmx_status st = cmxpy_data(a, &p);
  PyObject* r =
      st == CMX_OK ? cmxpy_scalar_at(p, cmx_array_dtype(a)) : cmxpy_raise(st);
  cmx_array_release(a);
  return r;
}

static PyObject* tolist_rec(const char* p, const int64_t* shape,
                            const int64_t* strides, int nd, size_t isz,
                            cmx_dtype t) {
  PyObject* l = PyList_New((Py_ssize_t)shape[0]);
  if (!l) return NULL;
  for (int64_t i = 0; i < shape[0]; i++) {
    const char* q = p + i * strides[0] * (int64_t)isz;
    PyObject* e = nd == 1
                      ? cmxpy_scalar_at(q, t)
                      : tolist_rec(q, shape + 1, strides + 1, nd - 1, isz, t);
    if (!e) {
      Py_DECREF(l);
      return NULL;
    }
    PyList_SET_ITEM(l, (Py_ssize_t)i, e);
  }
  return l;
}

PyObject* cmxpy_tolist(cmx_array a) {
  if (cmx_array_ndim(a) == 0) return cmxpy_item(a);
  const void* p;
  a = cmx_array_retain(a); /* see cmxpy_item */
  cmx_status st = cmxpy_data(a, &p);
  cmx_dtype t = cmx_array_dtype(a);
  PyObject* r = st == CMX_OK
                    ? tolist_rec(p, cmx_array_shape(a), cmx_array_strides(a),
                                 cmx_array_ndim(a), cmx_dtype_size(t), t)
                    : cmxpy_raise(st);
  cmx_array_release(a);
  return r;
}
