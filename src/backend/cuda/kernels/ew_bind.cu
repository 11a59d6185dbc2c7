// The CUDA binding of the elementwise semantics: what primitives/
// ew_scalar.h expects of a backend (see its header comment). A module that
// computes elementwise ops is this source, then ew_scalar.h's text, then
// its kernel file. Complex functions (cmx_z_*) come from libcu++'s
// cuda::std::complex, whose headers (the toolkit's CCCL) are only pulled
// in when the module defines CMX_EW_Z_FUNCTIONS.

typedef unsigned char uint8_t;
typedef signed char int8_t;
typedef unsigned short uint16_t;
typedef short int16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;

#define CMX_EW_FN static __device__ __forceinline__

CMX_EW_FN uint32_t cmx_fbits(float f) {
  return __float_as_uint(f);
}
CMX_EW_FN float cmx_bitsf(uint32_t u) {
  return __uint_as_float(u);
}
#define CMX_INFF __int_as_float(0x7f800000)
#define CMX_NANF __int_as_float(0x7fc00000)
#define cmx_expf expf
#define cmx_logf logf
#define cmx_tanhf tanhf

// complex64: two floats, 8-byte aligned like C's float _Complex.
struct __align__(8) cmx_c64 {
  float re, im;
};
struct __align__(16) cmx_c128 {
  double re, im;
};
#define cmx_cre(z) ((z).re)
#define cmx_cim(z) ((z).im)
#define cmx_zre(z) ((z).re)
#define cmx_zim(z) ((z).im)
CMX_EW_FN cmx_c64 cmx_c64_make(float re, float im) {
  cmx_c64 z;
  z.re = re;
  z.im = im;
  return z;
}
CMX_EW_FN cmx_c128 cmx_z_make(double re, double im) {
  cmx_c128 z;
  z.re = re;
  z.im = im;
  return z;
}

#ifdef CMX_EW_Z_FUNCTIONS
#include <cuda/std/complex>
typedef cuda::std::complex<double> cmx__zc;
CMX_EW_FN cmx__zc cmx__z_to(cmx_c128 z) {
  return cmx__zc(z.re, z.im);
}
CMX_EW_FN cmx_c128 cmx__z_from(cmx__zc z) {
  return cmx_z_make(z.real(), z.imag());
}
#define CMX__Z_FN(name, f)                       \
  CMX_EW_FN cmx_c128 cmx_z_##name(cmx_c128 z) { \
    return cmx__z_from(cuda::std::f(cmx__z_to(z))); \
  }
CMX__Z_FN(exp, exp)
CMX__Z_FN(log, log)
CMX__Z_FN(sin, sin)
CMX__Z_FN(cos, cos)
CMX__Z_FN(atan, atan)
CMX__Z_FN(tanh, tanh)
CMX__Z_FN(atanh, atanh)
// libcu++ loses these at the extremes the host's libm (C Annex G) gets
// right: sqrt by polar form (sqrt(-1e30) gets a real part), sinh/cosh of a
// huge real (inf * 0 = NaN), asin/acos/asinh/acosh of huge values, tan of
// NaN + 0i. cmx's own, in double (complex64 values square without
// overflow there), matching the host's special values.
CMX_EW_FN cmx_c128 cmx_z_sqrt(cmx_c128 z) {
  double x = z.re, y = z.im, inf = __longlong_as_double(0x7ff0000000000000LL);
  if (isinf(y)) return cmx_z_make(inf, y);
  if (isinf(x)) {
    if (x > 0) return cmx_z_make(x, isnan(y) ? y : copysign(0.0, y));
    return cmx_z_make(isnan(y) ? y : 0.0, copysign(inf, y));
  }
  if (isnan(x) || isnan(y)) return cmx_z_make(x + y, x + y);
  if (x == 0 && y == 0) return cmx_z_make(0.0, y);
  double t = sqrt((fabs(x) + hypot(x, y)) * 0.5);
  if (x >= 0) return cmx_z_make(t, y / (2 * t));
  return cmx_z_make(fabs(y) / (2 * t), copysign(t, y));
}
CMX_EW_FN cmx_c128 cmx_z_sinh(cmx_c128 z) {
  if (z.im == 0) return cmx_z_make(sinh(z.re), z.im);
  return cmx_z_make(sinh(z.re) * cos(z.im), cosh(z.re) * sin(z.im));
}
CMX_EW_FN cmx_c128 cmx_z_cosh(cmx_c128 z) {
  if (z.im == 0)
    return cmx_z_make(cosh(z.re),
                      signbit(z.re) != signbit(z.im) ? -0.0 : 0.0);
  return cmx_z_make(cosh(z.re) * cos(z.im), sinh(z.re) * sin(z.im));
}
// asinh(z) = log(z + sqrt(z^2 + 1)) on the half plane re >= 0 (no
// cancellation), odd symmetry for the other half; z - z^3/6 near 0.
CMX_EW_FN cmx_c128 cmx_z_asinh(cmx_c128 z) {
  if (isinf(z.re) || isinf(z.im))
    return cmx__z_from(cuda::std::asinh(cmx__z_to(z)));
  if (z.im == 0) return cmx_z_make(asinh(z.re), z.im); /* NaN + 0i too */
  bool neg = signbit(z.re);
  cmx__zc w(neg ? -z.re : z.re, neg ? -z.im : z.im), r;
  if (cuda::std::abs(w) < 1e-4)
    r = w - w * w * w / 6.0;
  else
    r = cuda::std::log(w + cmx__z_to(cmx_z_sqrt(cmx__z_from(w * w + 1.0))));
  return neg ? cmx_z_make(-r.real(), -r.imag()) : cmx__z_from(r);
}
// asin(z) = -i asinh(i z); acos(z) = pi/2 - asin(z).
CMX_EW_FN cmx_c128 cmx_z_asin(cmx_c128 z) {
  cmx_c128 w = cmx_z_asinh(cmx_z_make(-z.im, z.re));
  return cmx_z_make(w.im, -w.re);
}
CMX_EW_FN cmx_c128 cmx_z_acos(cmx_c128 z) {
  if (isinf(z.re) || isinf(z.im))
    return cmx__z_from(cuda::std::acos(cmx__z_to(z)));
  cmx_c128 a = cmx_z_asin(z);
  return cmx_z_make(1.5707963267948966 - a.re, -a.im);
}
// acosh(z) = log(z + sqrt(z + 1) sqrt(z - 1)).
CMX_EW_FN cmx_c128 cmx_z_acosh(cmx_c128 z) {
  if (isinf(z.re) || isinf(z.im))
    return cmx__z_from(cuda::std::acosh(cmx__z_to(z)));
  cmx__zc w = cmx__z_to(z);
  cmx__zc p = cmx__z_to(cmx_z_sqrt(cmx__z_from(w + 1.0))) *
              cmx__z_to(cmx_z_sqrt(cmx__z_from(w - 1.0)));
  return cmx__z_from(cuda::std::log(w + p));
}
// tan(z) = -i tanh(i z); tanh(0 + iy) is 0 + i tan(y), NaN y included.
CMX_EW_FN cmx_c128 cmx_z_tan(cmx_c128 z) {
  if (z.im == 0) return cmx_z_make(tan(z.re), z.im);
  cmx__zc t = cuda::std::tanh(cmx__zc(-z.im, z.re));
  return cmx_z_make(t.imag(), -t.real());
}
CMX_EW_FN cmx_c128 cmx_z_pow(cmx_c128 x, cmx_c128 y) {
  return cmx__z_from(cuda::std::pow(cmx__z_to(x), cmx__z_to(y)));
}
#else
#define CMX_EW_NO_Z_FUNCTIONS
#endif
