/* Matrix-product primitives. */
#include "primitives/matmul.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void addmm_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__addmm_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "AddMM(alpha=%g, beta=%g)", (double)q->alpha,
           (double)q->beta);
}

/* a @ b with NumPy's rules (primitives/matmul.h): the broadcast batch
 * dims, then M if a has two dims or more, then N if b has. */
static cmx_status matmul_shapes(const cmx_primitive* p, const cmx_array* in,
                                int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  int na = cmx_array_ndim(in[0]), nb = cmx_array_ndim(in[1]);
  const int64_t *a = cmx_array_shape(in[0]), *b = cmx_array_shape(in[1]);
  if (na < 1 || nb < 1) return cmx__shape_fail(p, "a 0-d operand");
  int64_t k_a = a[na - 1], k_b = nb >= 2 ? b[nb - 2] : b[0];
  if (k_a != k_b) return cmx__shape_fail(p, "the inner dims differ");
  int ba = na >= 2 ? na - 2 : 0, bb = nb >= 2 ? nb - 2 : 0;
  int nd = ba > bb ? ba : bb;
  for (int d = 0; d < nd; d++) {
    int da = d - (nd - ba), db = d - (nd - bb);
    int64_t x = da >= 0 ? a[da] : 1, y = db >= 0 ? b[db] : 1;
    if (x != y && x != 1 && y != 1)
      return cmx__shape_fail(p, "the batch dims do not broadcast");
    out[0].dims[d] = x == 1 ? y : x;
  }
  if (na >= 2) out[0].dims[nd++] = a[na - 2];
  if (nb >= 2) out[0].dims[nd++] = b[nb - 1];
  out[0].ndim = nd;
  return CMX_OK;
}

/* AddMM: c (input 2) has the output's shape; a and b broadcast against
 * it (a vmapped c may add batch dims that a and b lack). */
static cmx_status addmm_shapes(const cmx_primitive* p, const cmx_array* in,
                               int nin, cmx_shape* out, int nout) {
  (void)nout;
  if (nin != 3) return cmx__shape_fail(p, "bad arity");
  cmx__shape_of(&out[0], in[2]);
  return CMX_OK;
}

/* AddMM's parameters are two floats (no padding): compared as bytes, so
 * -0.0 and 0.0 differ and a NaN equals itself, as CSE wants. */
CMX__VTABLE(Matmul, .vjp = cmx__vjp_matmul, .jvp = cmx__jvp_matmul,
            .vmap = cmx__vmap_matmul, .output_shapes = matmul_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes);
CMX__VTABLE(AddMM, .vjp = cmx__vjp_addmm, .jvp = cmx__jvp_addmm,
            .vmap = cmx__vmap_matmul, .print = addmm_print,
            .output_shapes = addmm_shapes, .equal = cmx__params_equal_bytes,
            .hash = cmx__params_hash_bytes);
