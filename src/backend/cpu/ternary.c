/* CPU kernel of Select (where): out = cond ? x : y.
 *
 * Selection moves bits, so one row function per element size serves every
 * dtype. The common layouts (all contiguous, x or y a broadcast scalar)
 * get their own loops for the vectoriser.
 */
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* Branch-free: the condition becomes an all-ones or all-zeros mask and the
 * result is (x & m) | (y & ~m), so a random condition costs no branch
 * mispredictions and the loops vectorise (a branchy select ran ten times
 * slower than an add on random conditions). */
#define SEL(T, c, x, y) \
  (((x) & (T)(0 - (T)((c) != 0))) | ((y) & (T) ~(T)(0 - (T)((c) != 0))))
#define SEL_ROW(nm, T)                                                 \
  static void nm(char* const* p, const int64_t* st, int64_t n,         \
                 const void* ctx) {                                    \
    (void)ctx;                                                         \
    T* o = (T*)p[0];                                                   \
    const uint8_t* c = (const uint8_t*)p[1];                           \
    const T* a = (const T*)p[2];                                       \
    const T* b = (const T*)p[3];                                       \
    int64_t so = st[0], sc = st[1], sa = st[2], sb = st[3];            \
    if (so == 1 && sc == 1 && sa == 1 && sb == 1) {                    \
      for (int64_t i = 0; i < n; i++) o[i] = SEL(T, c[i], a[i], b[i]); \
    } else if (so == 1 && sc == 1 && sa == 1 && sb == 0) {             \
      T y = b[0];                                                      \
      for (int64_t i = 0; i < n; i++) o[i] = SEL(T, c[i], a[i], y);    \
    } else if (so == 1 && sc == 1 && sa == 0 && sb == 1) {             \
      T x = a[0];                                                      \
      for (int64_t i = 0; i < n; i++) o[i] = SEL(T, c[i], x, b[i]);    \
    } else if (so == 1 && sc == 1 && sa == 0 && sb == 0) {             \
      T x = a[0], y = b[0];                                            \
      for (int64_t i = 0; i < n; i++) o[i] = SEL(T, c[i], x, y);       \
    } else {                                                           \
      for (int64_t i = 0; i < n; i++)                                  \
        o[i * so] = SEL(T, c[i * sc], a[i * sa], b[i * sb]);           \
    }                                                                  \
  }
SEL_ROW(select_1, uint8_t)
SEL_ROW(select_2, uint16_t)
SEL_ROW(select_4, uint32_t)
SEL_ROW(select_8, uint64_t)

CMX__KERNEL(cmx__cpu_select) {
  (void)p;
  (void)nout;
  if (nin != 3 || in[0]->dtype != CMX_BOOL || in[1]->dtype != in[2]->dtype)
    return cmx_kernel_error(CMX_ERR_TYPE,
                            "[Select] expects a bool condition and two "
                            "inputs of one dtype");
  cmx__row_fn fn;
  switch (cmx_dtype_size(in[1]->dtype)) {
    case 1:
      fn = select_1;
      break;
    case 2:
      fn = select_2;
      break;
    case 4:
      fn = select_4;
      break;
    default:
      fn = select_8;
      break;
  }
  cmx_status st = cmx__cpu_ew_alloc(out[0], in, 3);
  if (st != CMX_OK) return st;
  cmx__cpu_ew_run(out[0], in, 3, fn, NULL);
  return CMX_OK;
}
