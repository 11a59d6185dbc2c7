/* Random-number primitives (see primitives/random.h). */
#include "primitives/random.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void bits_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__random_bits_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "RandomBits(width=%d)", q->width);
}

/* RandomBits: the keys' batch shape (all but the last axis), then each
 * key's block shape. */
static cmx_status bits_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__random_bits_params* q = cmx_primitive_params(p);
  int kd = cmx_array_ndim(in[0]) - 1;
  if (kd < 0 || cmx_array_shape(in[0])[kd] != 2)
    return cmx__shape_fail(p, "the keys' last axis is not 2");
  if (kd + q->ndim > CMX_MAX_NDIM)
    return cmx__shape_fail(p, "too many dimensions");
  cmx__shape_set(&out[0], cmx_array_shape(in[0]), kd);
  memcpy(out[0].dims + kd, q->shape, (size_t)q->ndim * sizeof(int64_t));
  out[0].ndim = kd + q->ndim;
  return CMX_OK;
}

static bool bits_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__random_bits_params *x = cmx_primitive_params(a),
                                *y = cmx_primitive_params(b);
  return x->width == y->width && x->ndim == y->ndim &&
         !memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof *x->shape);
}
static uint64_t bits_hash(const cmx_primitive* p) {
  const cmx__random_bits_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64(cmx__hash_start(p), q->width);
  return cmx__hash_i64s(h, q->shape, q->ndim);
}

/* Bits have no derivative; a batch of keys gives one block per key. */
CMX__VTABLE(RandomBits, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .vmap = cmx__vmap_random_bits, .print = bits_print,
            .output_shapes = bits_shapes, .equal = bits_equal,
            .hash = bits_hash);
CMX__VTABLE(CovSqrt, .vjp = cmx__vjp_cov_sqrt, .jvp = cmx__jvp_cov_sqrt,
            .vmap = cmx__vmap_cov_sqrt, .output_shapes = cmx__shapes_like_input,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
