/* mx.fft: argument handling in front of the FFT primitive
 * (primitives/fft.h): axes and sizes (MLX's rules and messages), padding
 * or truncating the input to the transform lengths, dtype conversion and
 * the normalisation's scale. fftshift/ifftshift are rolls; fftfreq and
 * rfftfreq are aranges. */
#include "cmx/fft.h"

#include <math.h>
#include <string.h>

#include "ops/fft_internal.h"
#include "ops/ops_internal.h"
#include "primitives/fft.h"

bool cmx__fft_norm(const char* op, const char* norm, int* out) {
  if (!norm || strcmp(norm, "backward") == 0)
    return (*out = CMX__NORM_BACKWARD), true;
  if (strcmp(norm, "ortho") == 0) return (*out = CMX__NORM_ORTHO), true;
  if (strcmp(norm, "forward") == 0) return (*out = CMX__NORM_FORWARD), true;
  cmx__error(CMX_ERR_VALUE,
             "[%s] Invalid norm. Expected one of {'backward', 'ortho', "
             "'forward'}.",
             op);
  return false;
}

/* a zero-padded or truncated to length n along axis ax. */
static cmx_array resize(cmx_array a, int ax, int64_t n, cmx_stream s) {
  if (!a || a->dims[ax] == n) return a;
  if (a->dims[ax] > n) {
    int64_t st[CMX_MAX_NDIM], sp[CMX_MAX_NDIM], one[CMX_MAX_NDIM];
    for (int d = 0; d < a->ndim; d++) st[d] = 0, sp[d] = a->dims[d], one[d] = 1;
    sp[ax] = n;
    return cmx__slice(a, st, sp, one, s);
  }
  int64_t lo = 0, hi = n - a->dims[ax];
  return cmx__pad(a, &ax, &lo, &hi, 1, cmx__scalar(0, a->dtype),
                  CMX_PAD_CONSTANT, s);
}

/* The transform of a over ax[0 .. nax) (normalised, distinct) with lengths
 * n (c2r: n[last] is the real output's length). */
static cmx_array fft_apply(cmx_array a, const int* ax, const int64_t* n,
                           int nax, bool inverse, bool real, int norm,
                           cmx_stream s) {
  cmx_array x;
  if (!real || inverse)
    x = cmx__as_dtype(a, CMX_COMPLEX64, s);
  else
    x = cmx_dtype_is_complex(a->dtype) ? cmx__real(a, s)
                                       : cmx__as_dtype(a, CMX_FLOAT32, s);
  int last = ax[nax - 1];
  for (int i = 0; i < nax; i++)
    x = resize(x, ax[i], real && inverse && i == nax - 1 ? n[i] / 2 + 1 : n[i],
               s);
  x = cmx__contiguous(x, false, s);
  if (!x) return NULL;
  double total = 1;
  for (int i = 0; i < nax; i++) total *= (double)n[i];
  cmx__fft_params q;
  memset(&q, 0, sizeof q);
  for (int i = 0; i < nax; i++) q.axes[i] = ax[i];
  q.naxes = nax;
  q.inverse = inverse;
  q.real = real;
  q.real_n = real ? n[nax - 1] : 0;
  q.scale = norm == CMX__NORM_ORTHO                  ? 1.0 / sqrt(total)
            : (norm == CMX__NORM_FORWARD) != inverse ? 1.0 / total
                                                     : 1.0;
  int64_t shape[CMX_MAX_NDIM];
  memcpy(shape, x->dims, (size_t)x->ndim * sizeof *shape);
  cmx_dtype dt = CMX_COMPLEX64;
  if (real) {
    shape[last] = inverse ? n[nax - 1] : n[nax - 1] / 2 + 1;
    dt = inverse ? CMX_FLOAT32 : CMX_COMPLEX64;
  }
  return cmx__apply(&cmx__vt_FFT, &q, sizeof q, s, &x, 1, shape, x->ndim, dt);
}

cmx_array cmx__fft_axis(cmx_array a, int axis, int64_t n, bool inverse,
                        bool real, int norm, cmx_stream s) {
  return a ? fft_apply(a, &axis, &n, 1, inverse, real, norm, s) : NULL;
}

/* MLX's fftn argument rules. sizes NULL: the input's lengths (irfft: 2 (m
 * - 1) on the last axis); axes NULL: all axes (sizes must then be NULL),
 * or the defaults def (ndef of them) when given. */
static cmx_array fftn(const char* op, cmx_array a, const int64_t* sizes,
                      int nsizes, const int* axes, int naxes, const int* def,
                      int ndef, const char* norm, bool inverse, bool real,
                      cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  int nm;
  if (!cmx__fft_norm("fft", norm, &nm)) return NULL;
  if (!axes && def) axes = def, naxes = ndef;
  int ax[CMX_MAX_NDIM];
  int64_t n[CMX_MAX_NDIM];
  if (!axes) {
    if (sizes)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[fftn] `axes` should not be `None` if `s` is not "
                       "`None`.");
    naxes = a->ndim;
    for (int i = 0; i < naxes; i++) ax[i] = i;
  } else {
    if (naxes > CMX_MAX_NDIM)
      return CMX__FAIL(CMX_ERR_VALUE, "[fftn] Too many axes.");
    for (int i = 0; i < naxes; i++) {
      ax[i] = axes[i];
      if (!cmx__norm_axis("fftn", &ax[i], a->ndim)) return NULL;
      for (int j = 0; j < i; j++)
        if (ax[j] == ax[i])
          return CMX__FAIL(CMX_ERR_VALUE,
                           "[fftn] Duplicated axis received "
                           "(%d, %d)",
                           axes[j], axes[i]);
    }
  }
  if (sizes && nsizes != naxes)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[fftn] Shape and axes have different "
                     "sizes.");
  if (naxes == 0) return a;
  for (int i = 0; i < naxes; i++) {
    n[i] = sizes ? sizes[i] : a->dims[ax[i]];
    if (!sizes && real && inverse && i == naxes - 1)
      n[i] = 2 * (a->dims[ax[i]] - 1);
    if (n[i] <= 0)
      return CMX__FAIL(CMX_ERR_VALUE,
                       "[fftn] Invalid FFT output size requested (%lld)",
                       (long long)n[i]);
  }
  return fft_apply(a, ax, n, naxes, inverse, real, nm, s);
}

#define DEFINE_1D(name, inv, re)                                            \
  cmx_status cmx_fft_##name(cmx_array* out, cmx_array a, const int64_t* n,  \
                            int axis, const char* norm, cmx_stream s) {     \
    CMX__PUBLIC(                                                            \
        out, #name,                                                         \
        fftn(#name, a, n, n ? 1 : 0, &axis, 1, NULL, 0, norm, inv, re, s)); \
  }
#define DEFINE_ND(name, inv, re, def, ndef)                                    \
  cmx_status cmx_fft_##name(cmx_array* out, cmx_array a, const int64_t* sizes, \
                            int nsizes, const int* axes, int naxes,            \
                            const char* norm, cmx_stream s) {                  \
    CMX__PUBLIC(out, #name,                                                    \
                fftn(#name, a, sizes, nsizes, axes, naxes, def, ndef, norm,    \
                     inv, re, s));                                             \
  }

static const int k_two[2] = {-2, -1};
DEFINE_1D(fft, false, false)
DEFINE_1D(ifft, true, false)
DEFINE_1D(rfft, false, true)
DEFINE_1D(irfft, true, true)
DEFINE_ND(fft2, false, false, k_two, 2)
DEFINE_ND(ifft2, true, false, k_two, 2)
DEFINE_ND(rfft2, false, true, k_two, 2)
DEFINE_ND(irfft2, true, true, k_two, 2)
DEFINE_ND(fftn, false, false, NULL, 0)
DEFINE_ND(ifftn, true, false, NULL, 0)
DEFINE_ND(rfftn, false, true, NULL, 0)
DEFINE_ND(irfftn, true, true, NULL, 0)

/* ---------------- shifts and frequencies ---------------- */
static cmx_array shift(const char* op, cmx_array a, const int* axes, int naxes,
                       int sign, cmx_stream s) {
  if (!CMX__ARGS(op, a)) return NULL;
  int ax[CMX_MAX_NDIM];
  int64_t sh[CMX_MAX_NDIM];
  if (!axes) naxes = a->ndim;
  if (naxes > CMX_MAX_NDIM)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] Too many axes.", op);
  for (int i = 0; i < naxes; i++) {
    ax[i] = axes ? axes[i] : i;
    if (!cmx__norm_axis(op, &ax[i], a->ndim)) return NULL;
    sh[i] = sign * (a->dims[ax[i]] / 2);
  }
  if (naxes == 0) return a;
  return cmx__roll(a, sh, naxes, ax, naxes, s);
}

cmx_status cmx_fft_fftshift(cmx_array* out, cmx_array a, const int* axes,
                            int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "fftshift", shift("fftshift", a, axes, naxes, 1, s));
}
cmx_status cmx_fft_ifftshift(cmx_array* out, cmx_array a, const int* axes,
                             int naxes, cmx_stream s) {
  CMX__PUBLIC(out, "ifftshift", shift("ifftshift", a, axes, naxes, -1, s));
}

static cmx_array freq(const char* op, int64_t n, double d, bool half,
                      cmx_stream s) {
  if (n <= 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] `n` must be greater than 0.", op);
  if (d == 0) return CMX__FAIL(CMX_ERR_VALUE, "[%s] `d` must be non-zero.", op);
  int64_t len = half ? n / 2 + 1 : n;
  cmx_array k = cmx__arange(0, (double)len, 1, CMX_FLOAT32, s);
  if (!half) {
    cmx_array hi = cmx__greater_equal(
        k, cmx__scalar((double)((n + 1) / 2), CMX_FLOAT32), s);
    k = cmx__where(hi, cmx__subtract(k, cmx__scalar((double)n, CMX_FLOAT32), s),
                   k, s);
  }
  return cmx__divide(k, cmx__scalar((double)n * d, CMX_FLOAT32), s);
}

cmx_status cmx_fft_fftfreq(cmx_array* out, int64_t n, double d, cmx_stream s) {
  CMX__PUBLIC(out, "fftfreq", freq("fftfreq", n, d, false, s));
}
cmx_status cmx_fft_rfftfreq(cmx_array* out, int64_t n, double d, cmx_stream s) {
  CMX__PUBLIC(out, "rfftfreq", freq("rfftfreq", n, d, true, s));
}
