/* The CPU's binding of the elementwise scalar semantics: the types, bit
 * casts and math library that primitives/ew_scalar.h expects (see its
 * header comment), then the semantics themselves.
 *
 * Float exp/log/tanh/erf are the vectorisable versions of vmath.h; complex
 * functions are C99's (glibc), in double. Compile's generated C includes
 * this same binding.
 */
#ifndef CMX_BACKEND_CPU_EW_SCALAR_CPU_H
#define CMX_BACKEND_CPU_EW_SCALAR_CPU_H

#include <complex.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend/cpu/vmath.h"

#define CMX_EW_FN CMX__KINLINE
#define cmx_fbits cmx__fbits
#define cmx_bitsf cmx__bitsf
#define CMX_INFF INFINITY
#define CMX_NANF NAN
#define cmx_expf cmx__vexpf
#define cmx_logf cmx__vlogf
#define cmx_tanhf cmx__vtanhf
#define cmx_erff cmx__verff

typedef float _Complex cmx_c64;
typedef double _Complex cmx_c128;
#define cmx_cre(z) crealf(z)
#define cmx_cim(z) cimagf(z)
#define cmx_zre(z) creal(z)
#define cmx_zim(z) cimag(z)
/* Built from parts without CMPLXF (which clang with glibc 2.36 lacks). */
CMX__KINLINE cmx_c64 cmx_c64_make(float re, float im) {
  cmx_c64 z;
  __real__ z = re;
  __imag__ z = im;
  return z;
}
CMX__KINLINE cmx_c128 cmx_z_make(double re, double im) {
  cmx_c128 z;
  __real__ z = re;
  __imag__ z = im;
  return z;
}
#define cmx_z_sqrt csqrt
#define cmx_z_exp cexp
#define cmx_z_log clog
#define cmx_z_sin csin
#define cmx_z_cos ccos
#define cmx_z_tan ctan
#define cmx_z_asin casin
#define cmx_z_acos cacos
#define cmx_z_atan catan
#define cmx_z_sinh csinh
#define cmx_z_cosh ccosh
#define cmx_z_tanh ctanh
#define cmx_z_asinh casinh
#define cmx_z_acosh cacosh
#define cmx_z_atanh catanh
#define cmx_z_pow cpow

#include "primitives/ew_scalar.h"

#endif
