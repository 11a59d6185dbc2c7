/* Arrays from Python buffer objects (PEP 3118: NumPy arrays, memoryviews,
 * bytes-likes), for mx.array and operands (convert.c): the buffer's format
 * gives the dtype, strided buffers are gathered, complex128 is narrowed to
 * complex64, and float64 becomes float32 unless a dtype is given.
 */
#include "convert.h"

/* The dtype of a PEP 3118 format; complex128 is reported as COMPLEX64 with
 * *c128 set (converted while copying). -1 when unsupported. */
static int format_dtype(const char* f, Py_ssize_t itemsize, bool* c128) {
  *c128 = false;
  if (!f) f = "B";
  if (*f == '@' || *f == '=' || *f == '<')
    f++;
  else if (*f == '>' || *f == '!')
    return -1; /* big-endian */
  if (f[0] == 'Z' && f[1] && !f[2]) {
    if (f[1] == 'f' && itemsize == 8) return CMX_COMPLEX64;
    if (f[1] == 'd' && itemsize == 16) {
      *c128 = true;
      return CMX_COMPLEX64;
    }
    return -1;
  }
  if (!f[0] || f[1]) return -1;
  switch (f[0]) {
    case '?':
      return itemsize == 1 ? CMX_BOOL : -1;
    case 'e':
      return itemsize == 2 ? CMX_FLOAT16 : -1;
    case 'f':
      return itemsize == 4 ? CMX_FLOAT32 : -1;
    case 'd':
      return itemsize == 8 ? CMX_FLOAT64 : -1;
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      return itemsize == 1   ? CMX_INT8
             : itemsize == 2 ? CMX_INT16
             : itemsize == 4 ? CMX_INT32
             : itemsize == 8 ? CMX_INT64
                             : -1;
    case 'B':
    case 'c':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      return itemsize == 1   ? CMX_UINT8
             : itemsize == 2 ? CMX_UINT16
             : itemsize == 4 ? CMX_UINT32
             : itemsize == 8 ? CMX_UINT64
                             : -1;
  }
  return -1;
}

/* Copies a strided buffer into contiguous dst (itemsize bytes each). */
static void gather(const Py_buffer* v, char* dst) {
  int nd = v->ndim;
  Py_ssize_t isz = v->itemsize;
  if (nd == 0) {
    memcpy(dst, v->buf, (size_t)isz);
    return;
  }
  Py_ssize_t idx[CMX_MAX_NDIM] = {0};
  const char* src = v->buf;
  Py_ssize_t inner = v->shape[nd - 1], stride = v->strides[nd - 1];
  for (;;) {
    const char* p = src;
    for (int k = 0; k < nd - 1; k++) p += idx[k] * v->strides[k];
    for (Py_ssize_t j = 0; j < inner; j++, dst += isz)
      memcpy(dst, p + j * stride, (size_t)isz);
    int k = nd - 2;
    while (k >= 0 && ++idx[k] == v->shape[k]) idx[k--] = 0;
    if (k < 0) return;
  }
}

cmx_array cmxpy_array_from_buffer(PyObject* o, cmx_dtype dtype) {
  Py_buffer v;
  if (PyObject_GetBuffer(o, &v, PyBUF_RECORDS_RO) < 0) return NULL;
  cmx_array out = NULL;
  char* tmp = NULL;
  bool c128;
  int src = format_dtype(v.format, v.itemsize, &c128);
  if (src < 0 || v.ndim > CMX_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError,
                 "Cannot convert a buffer of format '%s' to an array.",
                 v.format ? v.format : "B");
    goto done;
  }
  int64_t shape[CMX_MAX_NDIM];
  int64_t size = 1;
  for (int k = 0; k < v.ndim; k++) size *= (shape[k] = v.shape[k]);
  bool contig = PyBuffer_IsContiguous(&v, 'C');
  const void* data = v.buf;
  if (size == 0) {
    static const char zero[16];
    data = zero;
  } else if (!contig || c128) {
    tmp = PyMem_RawMalloc((size_t)size * (size_t)v.itemsize);
    if (!tmp) {
      PyErr_NoMemory();
      goto done;
    }
    if (contig)
      memcpy(tmp, v.buf, (size_t)size * (size_t)v.itemsize);
    else
      gather(&v, tmp);
    if (c128) /* in place: element i of complex64 precedes element i */
      for (int64_t i = 0; i < size; i++) {
        double re = ((double*)tmp)[2 * i], im = ((double*)tmp)[2 * i + 1];
        ((float*)tmp)[2 * i] = (float)re;
        ((float*)tmp)[2 * i + 1] = (float)im;
      }
    data = tmp;
  }
  cmx_status st = cmx_array_from_data(&out, data, shape, v.ndim, src);
  cmx_dtype want = dtype;
  if (want == CMX_DTYPE_AUTO) want = src == CMX_FLOAT64 ? CMX_FLOAT32 : src;
  if (st == CMX_OK && want != (cmx_dtype)src) {
    cmx_array c = NULL;
    st = cmx_astype(&c, out, want, CMX_STREAM_DEFAULT);
    cmx_array_release(out);
    out = c;
  }
  if (st != CMX_OK) {
    cmx_array_release(out);
    out = NULL;
    cmxpy_raise(st);
  }
done:
  PyMem_RawFree(tmp);
  PyBuffer_Release(&v);
  return out;
}
