/* CPU backend internals: dtype dispatch, 16-bit float conversion, and the
 * elementwise driver that every elementwise kernel uses.
 *
 * Elementwise kernels supply a row function: it processes n elements of one
 * row, given a pointer and a stride (in elements) per array, output first.
 * The driver collapses the arrays' shared layout to the fewest dims, so
 * contiguous data becomes one long row (stride 1), broadcast scalars get
 * stride 0, and only genuinely strided data loops over outer dims. Large
 * work is split over the thread pool.
 */
#ifndef CMX_BACKEND_CPU_H
#define CMX_BACKEND_CPU_H

#include <complex.h>
#include <math.h>
#include <string.h>

#include "backend/cpu/ew_scalar_cpu.h" /* half conversions */
#include "backend/cpu/vmath.h" /* CMX__KINLINE, cmx__fbits, cmx__bitsf */
#include "core/internal.h"

/* glibc's <complex.h> (2.36) defines CMPLX and CMPLXF for GCC only, so
 * clang (make fuzz) gets them from its __builtin_complex here. */
#if defined(__clang__) && !defined(CMPLX)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#if defined(__clang__) && !defined(CMPLXF)
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

/* ---- 16-bit floats, inline for kernels ----
 * The conversions of the elementwise semantics (primitives/ew_scalar.h):
 * branch-free, so loops over them vectorise; the same bits as
 * cmx_float16_to_float / cmx_float_to_float16 (tests/c/test_kernel_paths.c
 * checks every input). */
#define cmx__h2f cmx_h2f
#define cmx__f2h cmx_f2h
#define cmx__bf2f cmx_bf2f
#define cmx__f2bf cmx_f2bf

/* Complex64 as a C complex. */
typedef float _Complex cmx__c64;

/* ---- dtype dispatch ----
 * CMX__FOR_DTYPES(X) calls X(ENUM, ctype, suffix) for every dtype; half
 * types use uint16_t storage. */
#define CMX__FOR_DTYPES(X)        \
  X(CMX_BOOL, uint8_t, bool)      \
  X(CMX_UINT8, uint8_t, u8)       \
  X(CMX_UINT16, uint16_t, u16)    \
  X(CMX_UINT32, uint32_t, u32)    \
  X(CMX_UINT64, uint64_t, u64)    \
  X(CMX_INT8, int8_t, i8)         \
  X(CMX_INT16, int16_t, i16)      \
  X(CMX_INT32, int32_t, i32)      \
  X(CMX_INT64, int64_t, i64)      \
  X(CMX_FLOAT16, uint16_t, f16)   \
  X(CMX_BFLOAT16, uint16_t, bf16) \
  X(CMX_FLOAT32, float, f32)      \
  X(CMX_FLOAT64, double, f64)     \
  X(CMX_COMPLEX64, cmx__c64, c64)

/* ---- the elementwise driver ---- */
typedef void (*cmx__row_fn)(char* const* ptrs, const int64_t* strides,
                            int64_t n, const void* ctx);

/* Runs fn over every element of out (already allocated) and the nin inputs
 * (same shape as out, any strides). ptrs[0]/strides[0] are out's. */
/* Holds OpenBLAS to one thread (process-wide) while cmx's pool runs
 * several BLAS calls at once, and restores its count at the matching end
 * (nested holds from several streams restore the first saved value).
 * False, and nothing held, without OpenBLAS's thread functions. */
bool cmx__blas_single_begin(void);
void cmx__blas_single_end(void);

void cmx__cpu_ew_run(cmx_array out, const cmx_array* ins, int nin,
                     cmx__row_fn fn, const void* ctx);

/* Allocates out for an elementwise kernel, donating the buffer of an input
 * of the same dtype size that nothing else holds. */
cmx_status cmx__cpu_ew_alloc(cmx_array out, const cmx_array* ins, int nin);

/* Strided copy (with optional conversion) of src into dst, same shape:
 * the Copy/AsType kernel body, also used by other kernels. */
cmx_status cmx__cpu_copy_convert(cmx_array dst, cmx_array src);

#endif
