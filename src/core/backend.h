/* Backends and built-in primitives as core sees them: tables that the
 * layers above register when the library loads, so core never names a
 * backend function or a primitive.
 *
 * - Each device backend registers one cmx__backend: its kernel table,
 *   indexed by built-in primitive id (src/primitives/list.h), and, for
 *   devices other than the CPU, the device queries and stream creation
 *   that core/stream.c calls.
 * - The primitives layer registers the table of built-in vtables, so a
 *   vtable is known to be cmx's own by identity (an extension's id field
 *   may be anything).
 *
 *     // src/backend/<dev>/kernel_table.c
 *     static const cmx_kernel_fn table[CMX__NUM_PRIMITIVES] = {
 *         [CMX__P_Add] = cmx__cpu_binary, ...};
 *     static const cmx__backend cpu = {.type = CMX_CPU, .kernels = table,
 *                                      .nkernels = CMX__NUM_PRIMITIVES};
 *     CMX__REGISTER(cpu_backend) { cmx__backend_register(&cpu); }
 */
#ifndef CMX_CORE_BACKEND_H
#define CMX_CORE_BACKEND_H

#include "cmx/primitive.h"

typedef struct cmx__stream cmx__stream;

typedef struct cmx__backend {
  cmx_device_type type;
  /* Kernels of the built-in primitives by id; a NULL entry (or an id past
   * nkernels) means the primitive does not run on this device. */
  const cmx_kernel_fn* kernels;
  int nkernels;
  /* Devices of this type that can run (0 when none, e.g. no driver); the
   * first call may load the device's driver. NULL for the CPU (one). */
  int (*device_count)(void);
  /* Why no device of this type is available ("" when one is). */
  const char* (*unavailable_reason)(void);
  /* Creates and registers a stream on device index; NULL with the error
   * set. NULL for the CPU, whose streams are core's worker threads. */
  cmx__stream* (*stream_new)(int device_index);
  /* Describes device index (cmx_device_get_info); NULL for the CPU. */
  cmx_status (*device_info)(int device_index, cmx_device_info* out);
} cmx__backend;

/* Runs fn when the library is loaded (before any public call): the layers
 * above core register their tables with it. */
#define CMX__REGISTER(fn)                            \
  static void fn(void) __attribute__((constructor)); \
  static void fn(void)

/* Makes b (static storage, not copied) the backend of b->type. */
void cmx__backend_register(const cmx__backend* b);
/* The backend of device type t, or NULL when none registered. */
const cmx__backend* cmx__backend_get(cmx_device_type t);

/* Makes vts[0..n) (static storage) the built-in primitives, vts[i] the one
 * with id i. */
void cmx__builtins_register(const cmx_primitive_vtable* const* vts, int n);
/* The number of built-in primitives and the one with id i (NULL out of
 * range). */
int cmx__builtin_count(void);
const cmx_primitive_vtable* cmx__builtin(int i);
/* True when vt is one of the registered built-in vtables. */
bool cmx__is_builtin(const cmx_primitive_vtable* vt);

/* The kernel that runs vt on device type dev: the backend's table entry
 * for a built-in primitive, the vtable's eval_cpu / eval_gpu for an
 * extension. NULL when there is none. */
cmx_kernel_fn cmx__kernel_lookup(const cmx_primitive_vtable* vt,
                                 cmx_device_type dev);

#endif
