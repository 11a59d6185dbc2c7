/* cmx/primitive.h: the open primitive API.
 *
 * A primitive is a node type of the graph: a const vtable of functions plus a
 * parameter struct. cmx's own ops and user extensions use the same API. To
 * add an op: define a params struct and a vtable, write the CPU (and
 * optionally GPU) kernel, and an op function that validates its arguments
 * and calls cmx_primitive_apply.
 *
 *     typedef struct { float alpha, beta; } axpby_params;
 *     static cmx_status axpby_cpu(const cmx_primitive* p, const cmx_array* in,
 *                                 int nin, const cmx_array* out, int nout) {
 *       const axpby_params* q = cmx_primitive_params(p);
 *       if (cmx_kernel_alloc(out[0]) != CMX_OK) return cmx_last_status();
 *       ... read cmx_kernel_data(in[i]) with cmx_array_strides(in[i]),
 *           write cmx_kernel_data(out[0]) (row-major contiguous) ...
 *       return CMX_OK;
 *     }
 *     static const cmx_primitive_vtable axpby_vt = {
 *       .name = "Axpby", .eval_cpu = axpby_cpu };
 *
 *     cmx_primitive* p = cmx_primitive_new(&axpby_vt, &params, sizeof params,
 *                                          stream);
 *     cmx_array out;
 *     cmx_primitive_apply(&out, 1, p, inputs, 2, shapes, ndims, dtypes);
 *
 * Kernels run on the stream's worker (cpu) or launch on its device stream
 * (gpu). They allocate their outputs (cmx_kernel_alloc or a donation from an
 * input) or make them views of an input (cmx_kernel_set_view), fill them, and
 * return CMX_OK, or set an error naming the op and return its status.
 * A NULL kernel slot means the primitive does not run on that device; a NULL
 * transform slot means it has no such rule (the transform reports so).
 * cmx's own primitives leave eval_cpu / eval_gpu NULL: their kernels are in
 * each backend's kernel table (see cmx_primitive_has_kernel).
 */
#ifndef CMX_PRIMITIVE_H
#define CMX_PRIMITIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmx/array.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmx_primitive cmx_primitive;

/* A shape used where primitives report output shapes. */
typedef struct cmx_shape {
  int ndim;
  int64_t dims[CMX_MAX_NDIM];
} cmx_shape;

/* Primitive flags. */
enum {
  CMX_PRIM_ELEMENTWISE = 1 << 0, /* output[i] depends on inputs[i] only */
  CMX_PRIM_FUSABLE = 1 << 1,     /* compile may fuse it into a kernel */
  CMX_PRIM_VIEW = 1 << 2,        /* output shares an input's memory */
  CMX_PRIM_RANDOM = 1 << 3,      /* depends on a key input, not pure data */
  CMX_PRIM_EXTERNAL = 1 << 4     /* defined outside cmx */
};

typedef cmx_status (*cmx_kernel_fn)(const cmx_primitive* p,
                                    const cmx_array* inputs, int nin,
                                    const cmx_array* outputs, int nout);

typedef struct cmx_primitive_vtable {
  const char* name; /* as printed in graphs and errors, e.g. "Add" */
  unsigned flags;   /* CMX_PRIM_* */
  int id; /* cmx's own primitives: their list.h index; extensions: -1 (cmx
           * tells its own apart by the vtable's address, not by id) */

  /* Kernels of an extension (cmx's own primitives: NULL, see above). */
  cmx_kernel_fn eval_cpu;
  cmx_kernel_fn eval_gpu;

  /* Transforms (NULL means no rule; the transform then reports it).
   * vjp: given the primals, the cotangents of every output (zeros for
   *   outputs nobody differentiates), and the positions `argnums` of the
   *   inputs wanted, write one cotangent per argnum to out: a new
   *   reference of that input's shape and dtype, or NULL for zero.
   *   `outputs` are the primal outputs (an entry may be NULL for a dropped
   *   output of a multi-output primitive).
   * jvp: given the primals, the primal outputs and the tangents of the
   *   inputs at `argnums`, write the tangent of each output to out (new
   *   reference, or NULL for zero).
   * vmap: inputs batched along axes[i] (-1 = not batched); `outputs` are
   *   the unbatched outputs as traced (shapes and dtypes only: never read
   *   their data); write each batched output (new reference) and the axis
   *   it is batched on (-1 = not batched). An elementwise primitive
   *   (CMX_PRIM_ELEMENTWISE) without a vmap rule gets a generic one.
   * Rules build their results with ops (public or internal); cmx's own
   *   rules are in src/transforms/rules_*.c. */
  cmx_status (*vjp)(const cmx_primitive* p, const cmx_array* primals, int nin,
                    const cmx_array* cotangents, int nout, const int* argnums,
                    int nargs, const cmx_array* outputs, cmx_array* out);
  cmx_status (*jvp)(const cmx_primitive* p, const cmx_array* primals, int nin,
                    const cmx_array* tangents, const int* argnums, int nargs,
                    const cmx_array* outputs, cmx_array* out, int nout);
  cmx_status (*vmap)(const cmx_primitive* p, const cmx_array* inputs, int nin,
                     const int* axes, const cmx_array* outputs, cmx_array* out,
                     int* out_axes, int nout);

  /* Output shapes from input shapes (shapeless compile). */
  cmx_status (*output_shapes)(const cmx_primitive* p, const cmx_array* inputs,
                              int nin, cmx_shape* out, int nout);
  /* Equality and hash of parameters (CSE in compile). NULL means compare
   * and hash the parameter bytes, so parameter structs must then be fully
   * initialised including padding (cmx_primitive_new copies them). */
  bool (*equal)(const cmx_primitive* a, const cmx_primitive* b);
  uint64_t (*hash)(const cmx_primitive* p);
  /* Writes a short description ("Reduce(sum, axes=[0])") into buf. NULL
   * prints the name. */
  void (*print)(const cmx_primitive* p, char* buf, size_t size);
  /* Frees anything the parameters own (the struct itself is freed by cmx). */
  void (*destroy)(void* params);
} cmx_primitive_vtable;

/* Creates a primitive with a copy of params (size bytes) on stream s (a
 * stream-or-device value, resolved now). Returns NULL with the error set on
 * failure. The caller owns one reference and passes it to
 * cmx_primitive_apply (which takes it) or releases it. */
cmx_primitive* cmx_primitive_new(const cmx_primitive_vtable* vt,
                                 const void* params, size_t size, cmx_stream s);
void cmx_primitive_retain(cmx_primitive* p);
void cmx_primitive_release(cmx_primitive* p);

/* Accessors. */
const cmx_primitive_vtable* cmx_primitive_vt(const cmx_primitive* p);
const void* cmx_primitive_params(const cmx_primitive* p);
size_t cmx_primitive_params_size(const cmx_primitive* p);
const char* cmx_primitive_name(const cmx_primitive* p);
cmx_stream cmx_primitive_stream(const cmx_primitive* p);
/* True when a and b are the same kind with equal parameters. */
bool cmx_primitive_equal(const cmx_primitive* a, const cmx_primitive* b);
uint64_t cmx_primitive_hash(const cmx_primitive* p);
/* The primitive's description (its print, else its name). */
void cmx_primitive_describe(const cmx_primitive* p, char* buf, size_t size);

/* ---- Built-in primitives and their kernels (the coverage table) ---- */
/* The number of cmx's own primitives (src/primitives/list.h). */
int cmx_builtin_primitive_count(void);
/* Built-in primitive i (0 <= i < count), or NULL when i is out of range. */
const cmx_primitive_vtable* cmx_builtin_primitive(int i);
/* True when primitive vt has a kernel for device type dev: the backend's
 * kernel table for cmx's own primitives, the vtable's slot for extensions.
 * A primitive without one fails on that device with
 * "[Name] has no <dev> implementation". */
bool cmx_primitive_has_kernel(const cmx_primitive_vtable* vt,
                              cmx_device_type dev);

/* Creates nout lazy output arrays of primitive p applied to inputs. Takes
 * the caller's reference to p (also on failure). Inputs are retained.
 * shapes[i] points to ndims[i] dims. Writes new references to outs. */
cmx_status cmx_primitive_apply(cmx_array* outs, int nout, cmx_primitive* p,
                               const cmx_array* inputs, int nin,
                               const int64_t* const* shapes, const int* ndims,
                               const cmx_dtype* dtypes);
/* The primitive producing a lazy array (NULL once scheduled or for data). */
const cmx_primitive* cmx_array_primitive(cmx_array a);
/* The inputs of a lazy array's primitive; writes the count to *n. */
const cmx_array* cmx_array_inputs(cmx_array a, int* n);

/* ---- Kernel helpers (inside eval_cpu / eval_gpu) ---- */
/* Allocates out as a fresh row-major contiguous buffer on the kernel's
 * device. CMX_ERR_MEMORY when the memory limit would be exceeded. */
cmx_status cmx_kernel_alloc(cmx_array out);
/* Gives out the buffer of in when in is contiguous, of the same byte size,
 * and held by nothing else (in's data is then out's; in must not be read
 * after writing out). Otherwise allocates. Returns whether it donated in
 * *donated (may be NULL). */
cmx_status cmx_kernel_alloc_donate(cmx_array out, cmx_array in, bool* donated);
/* Makes out a view of src's memory: element offset (relative to src's first
 * element) and strides in elements for out's shape. */
cmx_status cmx_kernel_set_view(cmx_array out, cmx_array src, int64_t offset,
                               const int64_t* strides);
/* Host pointer to the array's first element (inside a kernel the data is on
 * the host already for cpu kernels). Must have been allocated. */
void* cmx_kernel_data(cmx_array a);
/* Device pointer (CUdeviceptr as uint64) to the first element for gpu
 * kernels; moves the data to the device if needed. 0 on failure. */
uint64_t cmx_kernel_device_ptr(cmx_array a);
/* Marks a gpu kernel's output as valid on the device only. */
void cmx_kernel_mark_device_written(cmx_array a);
/* True when a's elements are row-major contiguous. */
bool cmx_kernel_is_contiguous(cmx_array a);
/* Runs fn(ctx, begin, end) over the ranges of a split of [0, n) into
 * chunks of at least `grain` items on cmx's CPU thread pool (the calling
 * thread takes part; a call from inside another parallel_for, or with
 * n < 2 * grain, runs fn(ctx, 0, n) on the caller) and returns once every
 * range is done. For eval_cpu kernels; fn must not fail or block. */
void cmx_parallel_for(int64_t n, int64_t grain,
                      void (*fn)(void* ctx, int64_t begin, int64_t end),
                      void* ctx);
/* The number of threads cmx_parallel_for may use (CMX_NUM_THREADS). */
int cmx_parallel_threads(void);
/* Sets the error for a failing kernel and returns status. */
cmx_status cmx_kernel_error(cmx_status status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
