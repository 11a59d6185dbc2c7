/* Shared pieces of output_shapes, equal and hash (see shapes.h). */
#include "primitives/shapes.h"

#include <stdio.h>

#include "core/internal.h"

void cmx__shape_of(cmx_shape* s, cmx_array a) {
  cmx__shape_set(s, a->dims, a->ndim);
}

cmx_status cmx__shape_fail(const cmx_primitive* p, const char* why) {
  return cmx__error(CMX_ERR_VALUE, "[%s] cannot infer its output shape: %s",
                    cmx_primitive_name(p), why);
}

cmx_status cmx__shapes_elementwise(const cmx_primitive* p, const cmx_array* in,
                                   int nin, cmx_shape* out, int nout) {
  if (nin < 1 || nout != 1) return cmx__shape_fail(p, "bad arity");
  cmx_shape* o = &out[0];
  cmx__shape_of(o, in[0]);
  for (int i = 1; i < nin; i++) {
    cmx_array a = in[i];
    int nd = o->ndim > a->ndim ? o->ndim : a->ndim;
    int64_t dims[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
      int da = d - (nd - a->ndim), dout = d - (nd - o->ndim);
      int64_t x = da >= 0 ? a->dims[da] : 1, y = dout >= 0 ? o->dims[dout] : 1;
      if (x != y && x != 1 && y != 1)
        return cmx__shape_fail(p, "the inputs' shapes do not broadcast");
      dims[d] = x == 1 ? y : x;
    }
    cmx__shape_set(o, dims, nd);
  }
  return CMX_OK;
}

cmx_status cmx__shapes_like_input(const cmx_primitive* p, const cmx_array* in,
                                  int nin, cmx_shape* out, int nout) {
  if (nin < 1) return cmx__shape_fail(p, "no input");
  for (int i = 0; i < nout; i++) cmx__shape_of(&out[i], in[0]);
  return CMX_OK;
}

bool cmx__params_equal_bytes(const cmx_primitive* a, const cmx_primitive* b) {
  size_t n = cmx_primitive_params_size(a);
  return n == cmx_primitive_params_size(b) &&
         (n == 0 ||
          memcmp(cmx_primitive_params(a), cmx_primitive_params(b), n) == 0);
}

uint64_t cmx__hash_start(const cmx_primitive* p) {
  return cmx__hash_bytes(1469598103934665603ull,
                         &(uintptr_t){(uintptr_t)cmx_primitive_vt(p)},
                         sizeof(uintptr_t));
}

uint64_t cmx__hash_bytes(uint64_t h, const void* data, size_t n) {
  const unsigned char* c = data;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}

uint64_t cmx__params_hash_bytes(const cmx_primitive* p) {
  return cmx__hash_bytes(cmx__hash_start(p), cmx_primitive_params(p),
                         cmx_primitive_params_size(p));
}

uint64_t cmx__hash_ints(uint64_t h, const int* v, int n) {
  h = cmx__hash_i64(h, n);
  return n > 0 ? cmx__hash_bytes(h, v, (size_t)n * sizeof *v) : h;
}

uint64_t cmx__hash_i64s(uint64_t h, const int64_t* v, int n) {
  h = cmx__hash_i64(h, n);
  return n > 0 ? cmx__hash_bytes(h, v, (size_t)n * sizeof *v) : h;
}
