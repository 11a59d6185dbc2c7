/* cmx/array.h: array handles, construction, evaluation and data access.
 *
 * A cmx_array is an opaque, reference-counted handle to a node of the
 * computation graph. Functions that return arrays give new references (the
 * caller releases them with cmx_array_release); array arguments are borrowed.
 *
 *     int64_t shape[2] = {2, 2};
 *     float v[4] = {1, 2, 3, 4};
 *     cmx_array a, b;
 *     cmx_array_from_data(&a, v, shape, 2, CMX_FLOAT32);
 *     cmx_exp(&b, a, CMX_STREAM_DEFAULT);   // lazy: nothing computed yet
 *     cmx_array_eval(b);                     // computes b
 *     const float* p;
 *     cmx_array_data(b, (const void**)&p);  // p[0] == expf(1)
 *     cmx_array_release(a); cmx_array_release(b);
 *
 * Arrays are computed lazily: ops build graph nodes; cmx_eval computes them.
 * Reading data (cmx_array_data, cmx_array_item_*, cmx_array_tostring)
 * evaluates first.
 */
#ifndef CMX_ARRAY_H
#define CMX_ARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmx/device.h"
#include "cmx/dtype.h"
#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest rank an array may have. */
#define CMX_MAX_NDIM 32

typedef struct cmx_array_node* cmx_array;

/* ---- Reference counting ---- */
/* Adds a reference; returns a. NULL is ignored. */
cmx_array cmx_array_retain(cmx_array a);
/* Drops a reference; frees the node (and, iteratively, any history only it
 * held) when the last one goes. NULL is ignored. */
void cmx_array_release(cmx_array a);
/* Releases n handles of an array of handles (NULL entries skipped). */
void cmx_array_release_all(cmx_array* arrays, size_t n);

/* ---- Construction (all copy their input; results are available) ---- */
/* An array of the given shape and dtype holding a row-major copy of data
 * (cmx_dtype_size(dtype) * prod(shape) bytes). ndim 0 is a scalar. */
cmx_status cmx_array_from_data(cmx_array* out, const void* data,
                               const int64_t* shape, int ndim, cmx_dtype dtype);
/* A 0-d array holding v converted to dtype (ints, floats, bool, complex64
 * with zero imaginary part). */
cmx_status cmx_array_from_double(cmx_array* out, double v, cmx_dtype dtype);
/* A 0-d array holding v converted to dtype; exact for 64-bit integers. */
cmx_status cmx_array_from_int64(cmx_array* out, int64_t v, cmx_dtype dtype);
/* A 0-d uint64 array (or other integer dtype) holding v exactly. */
cmx_status cmx_array_from_uint64(cmx_array* out, uint64_t v, cmx_dtype dtype);
/* A 0-d complex64 array. */
cmx_status cmx_array_from_complex(cmx_array* out, float re, float im);

/* Weakly typed scalars, as Python scalars in MLX: in a binary op they take
 * the other operand's dtype when it is of the same kind or wider
 * (int8_array + weak_int(1) is int8; int8_array + weak_float(0.5) is
 * float32; float16_array + weak_float(2.0) is float16). Alone they are
 * bool, int32, float32 and complex64. */
cmx_status cmx_array_weak_bool(cmx_array* out, bool v);
cmx_status cmx_array_weak_int(cmx_array* out, int64_t v);
cmx_status cmx_array_weak_float(cmx_array* out, double v);
cmx_status cmx_array_weak_complex(cmx_array* out, double re, double im);
/* True when a is a weakly typed scalar. */
bool cmx_array_is_weak(cmx_array a);

/* ---- Properties (never evaluate; NULL gives 0 / invalid values) ---- */
int cmx_array_ndim(cmx_array a);
/* Pointer to ndim dims, valid while a is alive. */
const int64_t* cmx_array_shape(cmx_array a);
/* Dimension i (negative counts from the end); 0 if out of range. */
int64_t cmx_array_dim(cmx_array a, int i);
int64_t cmx_array_size(cmx_array a);  /* number of elements */
size_t cmx_array_nbytes(cmx_array a); /* size * itemsize */
size_t cmx_array_itemsize(cmx_array a);
cmx_dtype cmx_array_dtype(cmx_array a);
/* The stream the array's producer runs on (its device for constants). */
cmx_stream cmx_array_stream(cmx_array a);

/* ---- Evaluation ---- */
/* Computes every array in the list (and what it depends on), waiting until
 * they are available. Returns the first failure of their computation. */
cmx_status cmx_eval(const cmx_array* arrays, size_t n);
/* cmx_eval of one array. */
cmx_status cmx_array_eval(cmx_array a);
/* Schedules the computation and returns at once; reading data waits. */
cmx_status cmx_async_eval(const cmx_array* arrays, size_t n);
/* Installs the interrupt check (NULL removes it). A thread waiting in
 * cmx_eval (or for data) on CPU streams calls check(ctx) about every 50 ms,
 * without any cmx lock held; when it returns true the eval cancels its work
 * not yet started, waits for the kernels running now, and fails with
 * CMX_ERR_INTERRUPTED. Cancelled arrays are computed again by a later eval.
 * The Python module installs one that runs Python's signal handlers
 * (Ctrl-C raises KeyboardInterrupt). */
void cmx_set_interrupt_check(bool (*check)(void* ctx), void* ctx);
/* True when the array's data is computed and readable without waiting. */
bool cmx_array_is_available(cmx_array a);
/* True when the array still has a producer that has not been scheduled. */
bool cmx_array_is_lazy(cmx_array a);

/* Bytes of the buffer a's data lives in (a view's whole buffer, a
 * broadcast's source), as MLX's get_array_buffer_size. Waits for a
 * scheduled array. Errors: a not evaluated yet (CMX_ERR_VALUE: "Arrays
 * must be evaluated before querying buffer size."). */
cmx_status cmx_array_buffer_size(cmx_array a, size_t* out);

/* ---- Data access (evaluate and wait first) ---- */
/* Pointer to the first element of a's storage on the host. Elements are laid
 * out by cmx_array_strides (in elements), which may be non-contiguous or 0
 * for broadcast dims. Valid while a is alive and not modified. */
cmx_status cmx_array_data(cmx_array a, const void** out);
/* Strides in elements (valid after evaluation; row-major before). */
const int64_t* cmx_array_strides(cmx_array a);
/* True when the data is row-major contiguous. Evaluates first. */
bool cmx_array_is_row_contiguous(cmx_array a);
/* Copies all elements in row-major order into dst (capacity bytes). */
cmx_status cmx_array_copy_to(cmx_array a, void* dst, size_t capacity);
/* The single element of a size-1 array, converted. */
cmx_status cmx_array_item_double(cmx_array a, double* out);
cmx_status cmx_array_item_int64(cmx_array a, int64_t* out);
cmx_status cmx_array_item_bool(cmx_array a, bool* out);
cmx_status cmx_array_item_complex(cmx_array a, cmx_complex64_t* out);

/* ---- Printing ---- */
/* MLX's repr: "array([[1, 2],\n       [3, 4]], dtype=int32)". *out is a
 * malloc'd string the caller frees with cmx_free. */
cmx_status cmx_array_tostring(cmx_array a, char** out);
/* MLX's str: the values only ("[[1, 2],\n [3, 4]]"). */
cmx_status cmx_array_tostring_values(cmx_array a, char** out);
/* Print options (mx.set_printoptions): digits after the point for floats. */
cmx_status cmx_set_printoptions(int precision);
int cmx_get_printoptions_precision(void);

/* Frees memory that cmx returned (strings, lists). */
void cmx_free(void* p);

#ifdef __cplusplus
}
#endif
#endif
