/* Conversion internals shared by convert.c and convert_buffer.c. */
#ifndef CMXPY_CONVERT_H
#define CMXPY_CONVERT_H

#include "cmxpy.h"

/* A new array (owned by the caller) holding a copy of the PEP 3118 buffer
 * of o (NumPy arrays, memoryviews, bytes-likes), as dtype (CMX_DTYPE_AUTO:
 * the buffer's, float64 read as float32; complex128 is read as
 * complex64). NULL with a Python exception set when o has no buffer, its
 * format is not supported (ValueError) or memory runs out. */
cmx_array cmxpy_array_from_buffer(PyObject* o, cmx_dtype dtype);

#endif
