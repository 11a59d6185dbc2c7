/* cmx/dtype.h: the 14 element types, their sizes and categories, and MLX's
 * type promotion.
 *
 *     cmx_dtype t = cmx_dtype_promote(CMX_INT8, CMX_UINT8);   // CMX_INT16
 *     size_t n = cmx_dtype_size(CMX_BFLOAT16);                // 2
 *
 * float16 and bfloat16 values cross the API as their 16-bit patterns
 * (cmx_float16_t, cmx_bfloat16_t); complex64 as two floats.
 */
#ifndef CMX_DTYPE_H
#define CMX_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The element types. The order is fixed and part of the ABI. */
typedef enum cmx_dtype {
  CMX_DTYPE_AUTO = -1, /* "infer it", where an op takes an optional dtype */
  CMX_BOOL = 0,
  CMX_UINT8,
  CMX_UINT16,
  CMX_UINT32,
  CMX_UINT64,
  CMX_INT8,
  CMX_INT16,
  CMX_INT32,
  CMX_INT64,
  CMX_FLOAT16,
  CMX_BFLOAT16,
  CMX_FLOAT32,
  CMX_FLOAT64,
  CMX_COMPLEX64,
  CMX_NUM_DTYPES
} cmx_dtype;

/* Dtype categories, as mlx.core's: generic > number > {integer > {signed,
 * unsigned}, inexact > {floating, complexfloating}}, plus bool. */
typedef enum cmx_dtype_category {
  CMX_CAT_GENERIC = 0,
  CMX_CAT_NUMBER,
  CMX_CAT_INTEGER,
  CMX_CAT_SIGNEDINTEGER,
  CMX_CAT_UNSIGNEDINTEGER,
  CMX_CAT_INEXACT,
  CMX_CAT_FLOATING,
  CMX_CAT_COMPLEXFLOATING,
  CMX_CAT_BOOL
} cmx_dtype_category;

typedef uint16_t cmx_float16_t;  /* IEEE binary16 bit pattern */
typedef uint16_t cmx_bfloat16_t; /* bfloat16 bit pattern */
typedef struct cmx_complex64_t {
  float re, im;
} cmx_complex64_t;

/* Size in bytes of one element. */
size_t cmx_dtype_size(cmx_dtype t);
/* Lower-case name as mlx prints it ("float32", "bool", ...). */
const char* cmx_dtype_name(cmx_dtype t);
/* True for valid enum values. */
bool cmx_dtype_valid(int t);
/* The dtype's most specific category (CMX_CAT_SIGNEDINTEGER for int8 ...). */
cmx_dtype_category cmx_dtype_kind(cmx_dtype t);
/* True when dtype t belongs to category c (mx.issubdtype(t, c)). */
bool cmx_dtype_issubdtype(cmx_dtype t, cmx_dtype_category c);
/* True when category a is b or below b (mx.issubdtype(a, b) for categories). */
bool cmx_category_issubcategory(cmx_dtype_category a, cmx_dtype_category b);
bool cmx_dtype_is_integer(cmx_dtype t);  /* signed or unsigned, not bool */
bool cmx_dtype_is_signed(cmx_dtype t);   /* signed integers and inexact */
bool cmx_dtype_is_floating(cmx_dtype t); /* float16, bfloat16, 32, 64 */
bool cmx_dtype_is_complex(cmx_dtype t);
bool cmx_dtype_is_inexact(cmx_dtype t); /* floating or complex */

/* MLX's promotion table: the dtype of a binary op on arrays of a and b. */
cmx_dtype cmx_dtype_promote(cmx_dtype a, cmx_dtype b);

/* True when a value of `from` converts to `to` without losing information
 * under MLX's rules (mx.can_cast): promote(from, to) == to. */
bool cmx_dtype_can_cast(cmx_dtype from, cmx_dtype to);

/* Conversions between float and the 16-bit float formats (round to nearest
 * even; NaN stays NaN). */
float cmx_float16_to_float(cmx_float16_t h);
cmx_float16_t cmx_float_to_float16(float f);
float cmx_bfloat16_to_float(cmx_bfloat16_t h);
cmx_bfloat16_t cmx_float_to_bfloat16(float f);

#ifdef __cplusplus
}
#endif
#endif
