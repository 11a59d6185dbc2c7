/* Elementwise reduction of host buffers for the communication backends
 * (a received chunk with the local one). Max/min propagate NaN (as
 * mx.maximum); half types are computed in float and rounded once per
 * step; complex64 max/min order by the real then the imaginary part. */
#include <string.h>

#include "backend/cpu/ew_scalar_cpu.h"
#include "distributed/distributed.h"

#define LOOP(T, EXPR)                \
  do {                               \
    T* d = dst;                      \
    const T *x = a_, *y = b_;        \
    for (size_t i = 0; i < n; i++) { \
      T a = x[i], b = y[i];          \
      d[i] = (EXPR);                 \
    }                                \
  } while (0)

#define NUM(T)                            \
  do {                                    \
    if (red == CMX__RED_SUM)              \
      LOOP(T, (T)(a + b));                \
    else if (red == CMX__RED_MAX)         \
      LOOP(T, (a > b || a != a) ? a : b); \
    else                                  \
      LOOP(T, (a < b || a != a) ? a : b); \
  } while (0)

/* Wrap-around sums of signed integers, computed unsigned (no UB). */
#define INT(T, U)                \
  do {                           \
    if (red == CMX__RED_SUM)     \
      LOOP(T, (T)((U)a + (U)b)); \
    else                         \
      NUM(T);                    \
  } while (0)

#define HALF(TOF, FROMF)                                             \
  do {                                                               \
    uint16_t* d = dst;                                               \
    const uint16_t *x = a_, *y = b_;                                 \
    for (size_t i = 0; i < n; i++) {                                 \
      float a = TOF(x[i]), b = TOF(y[i]);                            \
      float r = red == CMX__RED_SUM   ? a + b                        \
                : red == CMX__RED_MAX ? ((a > b || a != a) ? a : b)  \
                                      : ((a < b || a != a) ? a : b); \
      d[i] = FROMF(r);                                               \
    }                                                                \
  } while (0)

static void complex64(float* d, const float* x, const float* y, size_t n,
                      cmx__red_op red) {
  for (size_t i = 0; i < n; i++) {
    float ar = x[2 * i], ai = x[2 * i + 1], br = y[2 * i], bi = y[2 * i + 1];
    if (red == CMX__RED_SUM) {
      d[2 * i] = ar + br;
      d[2 * i + 1] = ai + bi;
      continue;
    }
    bool a_gt = ar > br || (ar == br && ai > bi);
    bool a_lt = ar < br || (ar == br && ai < bi);
    bool take_b = red == CMX__RED_MAX ? !a_gt : !a_lt;
    d[2 * i] = take_b ? br : ar;
    d[2 * i + 1] = take_b ? bi : ai;
  }
}

void cmx__dist_reduce(void* dst, const void* a_, const void* b_, size_t n,
                      cmx_dtype dt, cmx__red_op red) {
  switch (dt) {
    case CMX_BOOL:
      if (red == CMX__RED_MIN)
        LOOP(bool, a&& b);
      else
        LOOP(bool, a || b);
      break;
    case CMX_UINT8:
      NUM(uint8_t);
      break;
    case CMX_UINT16:
      NUM(uint16_t);
      break;
    case CMX_UINT32:
      NUM(uint32_t);
      break;
    case CMX_UINT64:
      NUM(uint64_t);
      break;
    case CMX_INT8:
      INT(int8_t, uint8_t);
      break;
    case CMX_INT16:
      INT(int16_t, uint16_t);
      break;
    case CMX_INT32:
      INT(int32_t, uint32_t);
      break;
    case CMX_INT64:
      INT(int64_t, uint64_t);
      break;
    case CMX_FLOAT16:
      HALF(cmx_h2f, cmx_f2h);
      break;
    case CMX_BFLOAT16:
      HALF(cmx_bf2f, cmx_f2bf);
      break;
    case CMX_FLOAT32:
      NUM(float);
      break;
    case CMX_FLOAT64:
      NUM(double);
      break;
    case CMX_COMPLEX64:
      complex64(dst, a_, b_, n, red);
      break;
    default:
      break;
  }
}
