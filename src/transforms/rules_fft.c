/* Transform rules of the FFT primitive (primitives/fft.h). Every transform
 * is real-linear, so jvp applies the same FFT to the tangent. vjp, with
 * cmx's reading of complex cotangents (dL/dRe - i dL/dIm, see rules.h):
 * - c2c: y = A x with A = scale F (symmetric), so the cotangent of x is
 *   A^T g = the same FFT of g.
 * - r2c: y = A x keeps the first n / 2 + 1 rows of the full transform, so
 *   the cotangent of x is Re(A^T g): g zero-padded to n along the real axis,
 *   the c2c FFT (same direction and scale), real part.
 * - c2r: y_j = scale sum_k w_k Re(c_k e^(+i theta_jk)) with w_k = 2 except
 *   w = 1 at the zero and (even n) n / 2 frequencies; the cotangent of c_k
 *   is scale w_k sum_j g_j e^(+i theta_jk) = w_k conj(r2c FFT of g).
 * vmap moves the batch axis to the front and shifts the axes.
 */
#include <string.h>

#include "ops/ops_internal.h"
#include "primitives/fft.h"
#include "transforms/rules.h"

/* FFT q applied to x (contiguous copy made when needed). */
static cmx_array fft_with(const cmx__fft_params* q, cmx_array x, cmx_stream s) {
  x = cmx__contiguous(x, false, s);
  if (!x) return NULL;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, x->dims, (size_t)x->ndim * sizeof *shape);
  int last = q->axes[q->naxes - 1];
  cmx_dtype dt = CMX_COMPLEX64;
  if (q->real) {
    shape[last] = q->inverse ? q->real_n : q->real_n / 2 + 1;
    if (q->inverse) dt = CMX_FLOAT32;
  }
  return cmx__apply(&cmx__vt_FFT, q, sizeof *q, s, &x, 1, shape, x->ndim, dt);
}

static cmx_array as_dt(cmx_array x, cmx_dtype dt, cmx_stream s) {
  return x && x->dtype != dt ? cmx__astype(x, dt, s) : x;
}

CMX__RULE_JVP(cmx__jvp_fft) {
  (void)nin, (void)argnums, (void)nargs, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__fft_params* q = cmx_primitive_params(p);
  cmx_array t = as_dt(tangents[0], primals[0]->dtype, s);
  out[0] = cmx__rule_keep(fft_with(q, t, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VJP(cmx__vjp_fft) {
  (void)nin, (void)nout, (void)argnums, (void)outputs;
  if (!nargs) return CMX_OK;
  cmx_stream s = cmx__rule_stream(p);
  const cmx__fft_params* q = cmx_primitive_params(p);
  cmx_array g = cotangents[0], x = primals[0], r;
  int last = q->axes[q->naxes - 1];
  cmx__fft_params c = *q;
  if (!q->real) {
    r = fft_with(q, as_dt(g, CMX_COMPLEX64, s), s);
  } else if (!q->inverse) { /* r2c */
    int64_t lo = 0, hi = q->real_n - g->dims[last];
    cmx_array gp = cmx__pad(as_dt(g, CMX_COMPLEX64, s), &last, &lo, &hi, 1,
                            cmx__scalar(0, CMX_COMPLEX64), CMX_PAD_CONSTANT, s);
    c.real = 0;
    c.real_n = 0;
    r = cmx__real(fft_with(&c, gp, s), s);
  } else { /* c2r */
    c.inverse = 0;
    cmx_array f = cmx__conjugate(fft_with(&c, as_dt(g, CMX_FLOAT32, s), s), s);
    int64_t m = q->real_n / 2 + 1;
    int64_t wshape[CMX_MAX_NDIM];
    for (int d = 0; d < x->ndim; d++) wshape[d] = 1;
    wshape[last] = m;
    /* w = 2 - [k == 0] - [k == n / 2, n even] */
    cmx_array k = cmx__arange(0, (double)m, 1, CMX_FLOAT32, s);
    cmx_array w = cmx__subtract(
        cmx__scalar(2, CMX_FLOAT32),
        cmx__add(
            cmx__astype(cmx__equal(k, cmx__scalar(0, CMX_FLOAT32), s),
                        CMX_FLOAT32, s),
            cmx__astype(
                cmx__equal(k,
                           cmx__scalar(q->real_n % 2 ? -1.0 : (double)(m - 1),
                                       CMX_FLOAT32),
                           s),
                CMX_FLOAT32, s),
            s),
        s);
    r = cmx__multiply(f, cmx__reshape(w, wshape, x->ndim, s), s);
  }
  out[0] = cmx__rule_keep(as_dt(r, x->dtype, s));
  return out[0] ? CMX_OK : cmx_last_status();
}

CMX__RULE_VMAP(cmx__vmap_fft) {
  (void)nin, (void)outputs, (void)nout;
  cmx_stream s = cmx__rule_stream(p);
  cmx__fft_params q = *(const cmx__fft_params*)cmx_primitive_params(p);
  cmx_array x = cmx__moveaxis(inputs[0], axes[0], 0, s);
  for (int i = 0; i < q.naxes; i++) q.axes[i] += 1;
  out[0] = cmx__rule_keep(fft_with(&q, x, s));
  out_axes[0] = 0;
  return out[0] ? CMX_OK : cmx_last_status();
}
