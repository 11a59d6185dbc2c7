/* Printing arrays in MLX's format (cmx_array_tostring and friends).
 *
 * The rules, as MLX prints (mlx/utils.cpp, Python's repr):
 * - "array(" + values + ", dtype=" + name + ")". A 0-d array prints its one
 *   value; otherwise nested brackets, elements of the last axis joined by
 *   ", ", sub-arrays joined by ",\n" and indented by 7 + depth spaces (the
 *   width of "array(" plus the open brackets). No blank lines between
 *   blocks (unlike NumPy).
 * - Any axis longer than 6 is summarised: its first 3 entries, "...", its
 *   last 3. There is no total-size threshold: arange(7) is summarised.
 * - Integers print exactly (int8/uint8 as numbers). bool as True/False.
 * - Floats (float16 and bfloat16 via float): with the default precision
 *   (-1) as C++ streams do by default, i.e. printf "%.6g" (1, 0.5, 2.36788,
 *   1e-07, 1e+06, -0, inf, -inf, nan). With a precision p >= 0 set by
 *   cmx_set_printoptions, fixed notation with p decimals ("%.pf"); another
 *   negative value gives fixed notation with 6 decimals, as C++'s stream does
 *   with a negative precision.
 * - complex64: real part, then "+" imag or "-" |imag|, then "j" ("1+2j",
 *   "1-2j"); the imaginary part takes "+" when it is >= 0 (so -0 prints as
 *   "+-0j") or NaN.
 * - NaN prints as "nan" whatever its sign bit (glibc would print "-nan" for
 *   x86's default NaN; MLX's reference platform prints "nan").
 * The values-only form (cmx_array_tostring_values) has the same layout with
 * the indentation of the bracket depth only (1 + depth spaces), as NumPy's
 * str: "[[1, 2],\n [3, 4]]". */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/strbuf.h"

/* Axes longer than 2 * EDGE are summarised to EDGE entries each side. */
#define EDGE 3
/* Largest precision accepted by cmx_set_printoptions. */
#define MAX_PRECISION 1000
/* Largest string a print may produce; more fails with CMX_ERR_MEMORY
 * (e.g. a broadcast array of 6^20 printed elements). */
#define MAX_OUTPUT ((size_t)1 << 30)

static _Atomic int g_precision = -1;

/* ---------------- elements ---------------- */

/* One real number in the current float format. */
static void put_real(cmx__strbuf* b, double v, int prec) {
  if (isnan(v))
    cmx__strbuf_puts(b, "nan");
  else if (prec == -1)
    cmx__strbuf_printf(b, "%.6g", v);
  else
    cmx__strbuf_printf(b, "%.*f", prec < 0 ? 6 : prec, v);
}

static void put_element(cmx__strbuf* b, const char* p, cmx_dtype dt, int prec) {
  switch (dt) {
    case CMX_BOOL:
      cmx__strbuf_puts(b, *(const uint8_t*)p ? "True" : "False");
      break;
    case CMX_UINT8:
      cmx__strbuf_printf(b, "%u", (unsigned)*(const uint8_t*)p);
      break;
    case CMX_UINT16:
      cmx__strbuf_printf(b, "%u", (unsigned)*(const uint16_t*)p);
      break;
    case CMX_UINT32:
      cmx__strbuf_printf(b, "%" PRIu32, *(const uint32_t*)p);
      break;
    case CMX_UINT64:
      cmx__strbuf_printf(b, "%" PRIu64, *(const uint64_t*)p);
      break;
    case CMX_INT8:
      cmx__strbuf_printf(b, "%d", (int)*(const int8_t*)p);
      break;
    case CMX_INT16:
      cmx__strbuf_printf(b, "%d", (int)*(const int16_t*)p);
      break;
    case CMX_INT32:
      cmx__strbuf_printf(b, "%" PRId32, *(const int32_t*)p);
      break;
    case CMX_INT64:
      cmx__strbuf_printf(b, "%" PRId64, *(const int64_t*)p);
      break;
    case CMX_COMPLEX64: {
      float re, im;
      memcpy(&re, p, sizeof re);
      memcpy(&im, p + sizeof re, sizeof im);
      put_real(b, re, prec);
      if (im >= 0 || isnan(im)) {
        cmx__strbuf_putn(b, "+", 1);
        put_real(b, im, prec);
      } else {
        cmx__strbuf_putn(b, "-", 1);
        put_real(b, -(double)im, prec);
      }
      cmx__strbuf_putn(b, "j", 1);
      break;
    }
    default:  // float16, bfloat16, float32, float64
      put_real(b, cmx__load_double(p, dt), prec);
  }
}

/* ---------------- layout ---------------- */

typedef struct printer {
  cmx__strbuf* b;
  const char* data; /* element 0 */
  const int64_t* shape;
  const int64_t* strides; /* in elements */
  int ndim;
  cmx_dtype dtype;
  size_t isz;
  int indent; /* spaces before a sub-array at depth 1 */
  int prec;
} printer;

/* Prints the sub-array at depth `dim` whose first element is `off` bytes
 * from element 0 (offsets, not pointers: an empty array has no data). */
static void put_subarray(const printer* pr, int64_t off, int dim) {
  cmx__strbuf* b = pr->b;
  int64_t n = pr->shape[dim];
  int64_t step = pr->strides[dim] * (int64_t)pr->isz;
  bool last = dim == pr->ndim - 1;
  cmx__strbuf_putn(b, "[", 1);
  for (int64_t i = 0; i < n && !b->failed; i++) {
    if (i > 0) {
      if (last)
        cmx__strbuf_putn(b, ", ", 2);
      else {
        cmx__strbuf_putn(b, ",\n", 2);
        cmx__strbuf_repeat(b, ' ', (size_t)(pr->indent + dim));
      }
    }
    if (i == EDGE && n > 2 * EDGE) {
      cmx__strbuf_putn(b, "...", 3);
      i = n - EDGE - 1;  // the loop's increment moves to the tail
      continue;
    }
    if (last)
      put_element(b, pr->data + off + i * step, pr->dtype, pr->prec);
    else
      put_subarray(pr, off + i * step, dim + 1);
  }
  cmx__strbuf_putn(b, "]", 1);
}

/* Formats a (evaluating it first) as repr or values-only. */
static cmx_status format_array(cmx_array a, char** out, bool repr) {
  const char* op = repr ? "repr" : "str";
  if (!out) return cmx__error(CMX_ERR_VALUE, "[%s] output pointer is NULL", op);
  *out = NULL;
  if (!a) return cmx__error(CMX_ERR_VALUE, "[%s] argument is a null array", op);
  void* data = NULL;
  cmx_status st = a->size > 0 ? cmx__node_host(a, &data) : cmx__node_wait(a);
  if (st != CMX_OK) return st;

  cmx__strbuf b = {.limit = MAX_OUTPUT};
  printer pr = {.b = &b,
                .data = data,
                .shape = CMX__SHAPE(a),
                .strides = CMX__STRIDES(a),
                .ndim = a->ndim,
                .dtype = a->dtype,
                .isz = cmx_dtype_size(a->dtype),
                .indent = repr ? 7 : 1,
                .prec = cmx_get_printoptions_precision()};
  if (repr) cmx__strbuf_puts(&b, "array(");
  if (a->ndim == 0)
    put_element(&b, pr.data, pr.dtype, pr.prec);
  else
    put_subarray(&pr, 0, 0);
  if (repr) {
    cmx__strbuf_puts(&b, ", dtype=");
    cmx__strbuf_puts(&b, cmx_dtype_name(a->dtype));
    cmx__strbuf_puts(&b, ")");
  }
  if (b.failed) {
    free(b.p);
    return cmx__error(CMX_ERR_MEMORY,
                      "[%s] out of memory (or output over %zu bytes)", op,
                      MAX_OUTPUT);
  }
  *out = b.p;
  return CMX_OK;
}

/* ---------------- public ---------------- */

cmx_status cmx_array_tostring(cmx_array a, char** out) {
  return format_array(a, out, true);
}

cmx_status cmx_array_tostring_values(cmx_array a, char** out) {
  return format_array(a, out, false);
}

cmx_status cmx_set_printoptions(int precision) {
  if (precision > MAX_PRECISION)
    return cmx__error(CMX_ERR_VALUE,
                      "[set_printoptions] precision must be at most %d, got %d",
                      MAX_PRECISION, precision);
  g_precision = precision;
  return CMX_OK;
}

int cmx_get_printoptions_precision(void) {
  return g_precision;
}
