/* Pieces shared by the primitive vtables' output_shapes, equal and hash
 * (shapes.c). Each vtable names its own functions; these are the parts
 * several families use.
 *
 *     static cmx_status reduce_shapes(const cmx_primitive* p,
 *                                     const cmx_array* in, int nin,
 *                                     cmx_shape* out, int nout) {
 *       ... cmx__shape_set(&out[0], dims, nd) ...
 *     }
 *     static uint64_t reduce_hash(const cmx_primitive* p) {
 *       const cmx__reduce_params* q = cmx_primitive_params(p);
 *       uint64_t h = cmx__hash_start(p);
 *       h = cmx__hash_i64(h, q->kind);
 *       return cmx__hash_ints(h, q->axes, q->naxes);
 *     }
 */
#ifndef CMX_PRIMITIVES_SHAPES_H
#define CMX_PRIMITIVES_SHAPES_H

#include <stdint.h>
#include <string.h>

#include "cmx/primitive.h"

/* ---- output shapes ---- */
/* Sets s to the nd dims at dims. */
static inline void cmx__shape_set(cmx_shape* s, const int64_t* dims, int nd) {
  s->ndim = nd;
  if (nd) memcpy(s->dims, dims, (size_t)nd * sizeof(int64_t));
}
/* Sets s to a's shape. */
void cmx__shape_of(cmx_shape* s, cmx_array a);
/* Sets the error "[Name] cannot infer its output shape: <why>" and returns
 * its status (CMX_ERR_VALUE). */
cmx_status cmx__shape_fail(const cmx_primitive* p, const char* why);
/* Elementwise primitives: one output with the broadcast shape of every
 * input (an error when they do not broadcast). */
cmx_status cmx__shapes_elementwise(const cmx_primitive* p, const cmx_array* in,
                                   int nin, cmx_shape* out, int nout);
/* Every output has input 0's shape (copies, sorts, scans, updates). */
cmx_status cmx__shapes_like_input(const cmx_primitive* p, const cmx_array* in,
                                  int nin, cmx_shape* out, int nout);

/* ---- equality and hash ----
 * Parameter-free primitives and fully initialised plain structs (no
 * padding, no pointers, no arrays longer than their used part) compare and
 * hash their parameter bytes. */
bool cmx__params_equal_bytes(const cmx_primitive* a, const cmx_primitive* b);
uint64_t cmx__params_hash_bytes(const cmx_primitive* p);
/* Hash building blocks (FNV-1a): the seed of p's kind, then fields. */
uint64_t cmx__hash_start(const cmx_primitive* p);
uint64_t cmx__hash_bytes(uint64_t h, const void* data, size_t n);
static inline uint64_t cmx__hash_i64(uint64_t h, int64_t v) {
  return cmx__hash_bytes(h, &v, sizeof v);
}
/* n ints of v (and n itself). */
uint64_t cmx__hash_ints(uint64_t h, const int* v, int n);
/* n int64 of v (and n itself). */
uint64_t cmx__hash_i64s(uint64_t h, const int64_t* v, int n);

#endif
