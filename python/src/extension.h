/* extension.h: the parts of cmx.core that serve extensions: the C API
 * capsule of cmx/python.h (capi.c) and mx.fast.cuda_kernel's primitive
 * (fast_cuda.c). */
#ifndef CMXPY_EXTENSION_H
#define CMXPY_EXTENSION_H

#include "cmxpy.h"

/* A new Stream object for s, and the Stream type (device.c). */
PyObject* cmxpy_stream_object(cmx_stream s);
PyTypeObject* cmxpy_stream_type(void);

/* Adds the capsule cmx.core._C_API and the entry points of
 * mx.fast.cuda_kernel (_cuda_kernel_apply, _cuda_compile_check) to m. */
int cmxpy_init_extension(PyObject* m);
/* The cuda_kernel entry points (fast_cuda.c). */
int cmxpy_init_fast_cuda(PyObject* m);

#endif
