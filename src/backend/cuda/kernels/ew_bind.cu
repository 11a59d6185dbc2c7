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
CMX__Z_FN(sqrt, sqrt)
CMX__Z_FN(exp, exp)
CMX__Z_FN(log, log)
CMX__Z_FN(sin, sin)
CMX__Z_FN(cos, cos)
CMX__Z_FN(tan, tan)
CMX__Z_FN(asin, asin)
CMX__Z_FN(acos, acos)
CMX__Z_FN(atan, atan)
CMX__Z_FN(sinh, sinh)
CMX__Z_FN(cosh, cosh)
CMX__Z_FN(tanh, tanh)
CMX__Z_FN(asinh, asinh)
CMX__Z_FN(acosh, acosh)
CMX__Z_FN(atanh, atanh)
CMX_EW_FN cmx_c128 cmx_z_pow(cmx_c128 x, cmx_c128 y) {
  return cmx__z_from(cuda::std::pow(cmx__z_to(x), cmx__z_to(y)));
}
#else
#define CMX_EW_NO_Z_FUNCTIONS
#endif
