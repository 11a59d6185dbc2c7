/* cmx/interop.h: sharing device memory with other libraries (DLPack).
 *
 *     void* ptr;
 *     cmx_array_device_data(a, cmx_device_gpu(), &ptr);   // a's data on gpu 0
 *     cmx_array b;                                         // wraps torch's
 *     cmx_array_from_device_memory(&b, p, cmx_device_gpu(), shape, 2,
 *                                  CMX_FLOAT32, release, ctx);
 */
#ifndef CMX_INTEROP_H
#define CMX_INTEROP_H

#include <stdint.h>

#include "cmx/array.h"
#include "cmx/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Evaluates a, waits for it, and writes the address of its first element
 * in dev's memory to *out (moving the data to dev first if needed; NULL
 * for an empty array). The memory belongs to a: valid while a lives, and
 * never to be written. dev must be a GPU. */
cmx_status cmx_array_device_data(cmx_array a, cmx_device dev, void** out);

/* Evaluates a, waits for it, and writes where its data is current to
 * *out: the CPU when a host copy is valid (or the array is empty), else
 * the GPU whose memory holds it (a GPU result not yet read on the host). */
cmx_status cmx_array_data_device(cmx_array a, cmx_device* out);

/* A new evaluated array (*out, owned) over row-major device memory at ptr
 * on GPU dev, without a copy. The memory stays the caller's: cmx never
 * writes or frees it; once the array's last reference is dropped and no
 * queued work reads it any more, release(ctx) is called (on any thread;
 * release may be NULL). Errors: dev not an available GPU, invalid
 * shape/dtype, ptr NULL for a non-empty shape. On error release is not
 * called. */
cmx_status cmx_array_from_device_memory(cmx_array* out, void* ptr,
                                        cmx_device dev, const int64_t* shape,
                                        int ndim, cmx_dtype dtype,
                                        void (*release)(void* ctx), void* ctx);

/* The native handle of stream s (a CUstream for a GPU stream; NULL for a
 * CPU stream) in *out. Work queued on it after an eval has returned runs
 * after that eval's work. */
cmx_status cmx_stream_native_handle(cmx_stream s, void** out);

#ifdef __cplusplus
}
#endif
#endif
