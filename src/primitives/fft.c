/* The FFT primitive (contract in primitives/fft.h). */
#include "primitives/fft.h"

#include <stdio.h>

#include "core/internal.h"
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

static void fft_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__fft_params* q = cmx_primitive_params(p);
  int k = snprintf(buf, size, "FFT(%s%s, scale=%g, axes=[",
                   q->real ? (q->inverse ? "c2r" : "r2c") : "c2c",
                   q->real || !q->inverse ? "" : " inverse", q->scale);
  for (int i = 0; i < q->naxes && k > 0 && (size_t)k < size; i++)
    k += snprintf(buf + k, size - (size_t)k, i ? ", %d" : "%d", q->axes[i]);
  if (k > 0 && (size_t)k < size) snprintf(buf + k, size - (size_t)k, "])");
}

/* The output shape is the input's except along the real axis: r2c gives
 * real_n / 2 + 1 there, c2r real_n. */
static cmx_status fft_shapes(const cmx_primitive* p, const cmx_array* in,
                             int nin, cmx_shape* o, int nout) {
  (void)nin, (void)nout;
  const cmx__fft_params* q = cmx_primitive_params(p);
  cmx_array a = in[0];
  o->ndim = a->ndim;
  for (int d = 0; d < a->ndim; d++) o->dims[d] = a->dims[d];
  int last = q->axes[q->naxes - 1];
  if (q->real) o->dims[last] = q->inverse ? q->real_n : q->real_n / 2 + 1;
  return CMX_OK;
}

/* Kernels: the backends' kernel tables. The parameters are a plain struct
 * zeroed before filling (unused axes 0), compared and hashed as bytes. */
CMX__VTABLE(FFT, .vjp = cmx__vjp_fft, .jvp = cmx__jvp_fft,
            .vmap = cmx__vmap_fft, .output_shapes = fft_shapes,
            .equal = cmx__params_equal_bytes, .hash = cmx__params_hash_bytes,
            .print = fft_print);
