/* CPU kernels of the arithmetic binary primitives (Add ... LogAddExp):
 * their rows come from the op table (primitives/ew_ops.h, instantiated by
 * ew_gen.h); this file adds the float floor_divide/remainder fast paths
 * and the kernel entry point.
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions), so the branch-free selects of the fmod rows
 * vectorise. Values are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include "backend/cpu/ew_dispatch.h"
#include "backend/cpu/ew_gen.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__EW_BINARY_OPS(CMX__CPU_EW_ROWS)

/* float32 (and 16-bit float) floor_divide and remainder without the
 * library's fmod (~60 instructions and unpredictable branches an
 * element): blocks of FM_BLK elements go through a branch-free pass that
 * vectorises, computing fmod as x - trunc(x / y) * y in double. That is
 * exact whenever |x / y| < 2^29 and y is finite: the truncated double
 * quotient is then the true one (x / y lies at least 2^-24 from any other
 * integer and the division errs by at most |x / y| 2^-53), the product is
 * exact (29 + 24 bits), and so is the difference (the remainder is
 * representable). A block with an element outside that range is
 * recomputed by fdiv_d / rem_f. The block buffer keeps the inputs intact
 * until then (the output may be a donated input). */
#define FM_BLK 256
#define FM_OK(q, y) (fabs(q) < 536870912.0 && fabs(y) <= 3.4028234663852886e38)
/* x // y where FM_OK; `bad` collects the elements where it does not hold. */
#define FDIV_FAST(xf, yf, bad)                                              \
  __extension__({                                                           \
    double x_ = (xf), y_ = (yf), q_ = x_ / y_;                              \
    int ok_ = FM_OK(q_, y_);                                                \
    bad |= !ok_;                                                            \
    double m_ = x_ - (double)(int32_t)(ok_ ? q_ : 0.0) * y_;                \
    m_ = m_ != 0 ? m_ : copysign(0.0, x_);                                  \
    /* x - m is n y exactly, so the quotient is the integer n: its floor */ \
    double d_ = (x_ - m_) / y_;                                             \
    d_ -= ((m_ != 0) & ((y_ < 0) != (m_ < 0))) ? 1.0 : 0.0;                 \
    (float)(d_ == 0 ? copysign(0.0, q_) : d_);                              \
  })
#define REM_FAST(xf, yf, bad)                                        \
  __extension__({                                                    \
    float xs_ = (xf), ys_ = (yf);                                    \
    double x_ = xs_, y_ = ys_, q_ = x_ / y_;                         \
    int ok_ = FM_OK(q_, y_);                                         \
    bad |= !ok_;                                                     \
    float m_ = (float)(x_ - (double)(int32_t)(ok_ ? q_ : 0.0) * y_); \
    m_ != 0 ? (((ys_ < 0) != (m_ < 0)) ? m_ + ys_ : m_)              \
            : copysignf(0.0f, ys_);                                  \
  })
#define FDIV_SLOW(x, y) ((float)cmx_ew_fdiv_d((x), (y)))
#define FMOD_ROW(fn, T, LD, ST, FAST, SLOW)                               \
  static void fn(char* const* p, const int64_t* st, int64_t n,            \
                 const void* ctx) {                                       \
    (void)ctx;                                                            \
    T* o = (T*)p[0];                                                      \
    const T* a = (const T*)p[1];                                          \
    const T* b = (const T*)p[2];                                          \
    int64_t so = st[0], sa = st[1], sb = st[2];                           \
    float buf[FM_BLK];                                                    \
    for (int64_t i0 = 0; i0 < n; i0 += FM_BLK) {                          \
      int64_t m = n - i0 < FM_BLK ? n - i0 : FM_BLK;                      \
      const T* ab = a + i0 * sa;                                          \
      const T* bb = b + i0 * sb;                                          \
      int bad = 0;                                                        \
      if (sa == 1 && sb == 1) {                                           \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = FAST(LD(ab[k]), LD(bb[k]), bad);                       \
      } else if (sa == 0 && sb == 1) {                                    \
        float x = LD(ab[0]);                                              \
        for (int64_t k = 0; k < m; k++) buf[k] = FAST(x, LD(bb[k]), bad); \
      } else if (sa == 1 && sb == 0) {                                    \
        float y = LD(bb[0]);                                              \
        for (int64_t k = 0; k < m; k++) buf[k] = FAST(LD(ab[k]), y, bad); \
      } else {                                                            \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = FAST(LD(ab[k * sa]), LD(bb[k * sb]), bad);             \
      }                                                                   \
      if (bad)                                                            \
        for (int64_t k = 0; k < m; k++)                                   \
          buf[k] = SLOW(LD(ab[k * sa]), LD(bb[k * sb]));                  \
      T* ob = o + i0 * so;                                                \
      for (int64_t k = 0; k < m; k++) ob[k * so] = ST(buf[k]);            \
    }                                                                     \
  }
#define FMOD_ROWS(nm, FAST, SLOW)                         \
  FMOD_ROW(nm##_f16, uint16_t, LD_H, ST_H, FAST, SLOW)    \
  FMOD_ROW(nm##_bf16, uint16_t, LD_BF, ST_BF, FAST, SLOW) \
  FMOD_ROW(nm##_f32, float, LD_ID, ST_ID, FAST, SLOW)
FMOD_ROWS(floor_divide, FDIV_FAST, FDIV_SLOW)
FMOD_ROWS(remainder, REM_FAST, cmx_ew_rem_f)

const cmx__cpu_ew_fast cmx__cpu_ew_fast_binary[] = {
    {CMX__P_FloorDivide, CMX_FLOAT16, floor_divide_f16, NULL, 0},
    {CMX__P_FloorDivide, CMX_BFLOAT16, floor_divide_bf16, NULL, 0},
    {CMX__P_FloorDivide, CMX_FLOAT32, floor_divide_f32, NULL, 0},
    {CMX__P_Remainder, CMX_FLOAT16, remainder_f16, NULL, 0},
    {CMX__P_Remainder, CMX_BFLOAT16, remainder_bf16, NULL, 0},
    {CMX__P_Remainder, CMX_FLOAT32, remainder_f32, NULL, 0},
    {-1, 0, NULL, NULL, 0}};

CMX__KERNEL(cmx__cpu_binary) {
  (void)nout;
  return cmx__cpu_ew_eval(p, in, nin, out, NULL);
}
