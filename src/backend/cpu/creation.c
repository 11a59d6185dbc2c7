/* CPU kernels of creation primitives: ranges, fills and triangular masks.
 * Values are computed in double and converted once (integers saturate, so
 * no conversion is undefined); integer aranges follow MLX's rule exactly
 * in wrapping unsigned arithmetic. */
#include "primitives/creation.h"

#include <complex.h>

#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/shape_copy.h"
#include "primitives/registry.h"

static inline int64_t sat_i64(double d) {
  if (d != d) return 0;
  if (d >= 9223372036854775807.0) return INT64_MAX;
  if (d <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)d;
}
static inline uint64_t sat_u64(double d) {
  if (d != d) return 0;
  if (d < 0) return (uint64_t)sat_i64(d);
  if (d >= 18446744073709551615.0) return UINT64_MAX;
  return (uint64_t)d;
}

/* double -> element of each dtype. */
#define CV_bool(v) ((uint8_t)((v) != 0))
#define CV_u8(v) ((uint8_t)sat_i64(v))
#define CV_u16(v) ((uint16_t)sat_i64(v))
#define CV_u32(v) ((uint32_t)sat_i64(v))
#define CV_u64(v) (sat_u64(v))
#define CV_i8(v) ((int8_t)sat_i64(v))
#define CV_i16(v) ((int16_t)sat_i64(v))
#define CV_i32(v) ((int32_t)sat_i64(v))
#define CV_i64(v) (sat_i64(v))
#define CV_f16(v) (cmx__f2h((float)(v)))
#define CV_bf16(v) (cmx__f2bf((float)(v)))
#define CV_f32(v) ((float)(v))
#define CV_f64(v) ((double)(v))
#define CV_c64(v) ((cmx__c64)(float)(v))

typedef struct {
  char* out;
  cmx_dtype dt;
  double start, step, stop;
  int64_t n;
  bool linspace;
  uint64_t a0, d; /* integer arange: first value and step, wrapped */
} range_ctx;

/* start + i * step in double, rounded once. */
#define RANGE_F(T, nm)                                                  \
  static void rf_##nm(const range_ctx* c, int64_t b, int64_t e) {       \
    double start = c->start, step = c->step;                            \
    /* Blocks with an int32 counter: int32 -> double vectorises. */     \
    for (int64_t blk = b; blk < e; blk += 1 << 30) {                    \
      T* o = (T*)c->out + blk;                                          \
      int32_t n = (int32_t)(e - blk < (1 << 30) ? e - blk : (1 << 30)); \
      double base = (double)blk;                                        \
      for (int32_t j = 0; j < n; j++)                                   \
        o[j] = CV_##nm(start + (base + (double)j) * step);              \
    }                                                                   \
    T* o = (T*)c->out;                                                  \
    if (c->linspace && e == c->n && e > 0) o[e - 1] = CV_##nm(c->stop); \
  }
/* MLX's integer arange: T(start) + i * (T(start + step) - T(start)). */
#define RANGE_I(T, nm)                                                      \
  static void ri_##nm(const range_ctx* c, int64_t b, int64_t e) {           \
    T* o = (T*)c->out;                                                      \
    for (int64_t i = b; i < e; i++) o[i] = (T)(c->a0 + (uint64_t)i * c->d); \
  }
#define RANGE_FI(T, nm) RANGE_F(T, nm) RANGE_I(T, nm)
RANGE_F(uint8_t, bool)
RANGE_FI(uint8_t, u8)
RANGE_FI(uint16_t, u16)
RANGE_FI(uint32_t, u32)
RANGE_FI(uint64_t, u64)
RANGE_FI(int8_t, i8)
RANGE_FI(int16_t, i16)
RANGE_FI(int32_t, i32)
RANGE_FI(int64_t, i64)
RANGE_F(uint16_t, f16)
RANGE_F(uint16_t, bf16)
RANGE_F(float, f32)
RANGE_F(double, f64)
RANGE_F(cmx__c64, c64)

typedef void (*range_fn)(const range_ctx*, int64_t, int64_t);
static const range_fn k_range_f[CMX_NUM_DTYPES] = {
    rf_bool, rf_u8,  rf_u16, rf_u32,  rf_u64, rf_i8,  rf_i16,
    rf_i32,  rf_i64, rf_f16, rf_bf16, rf_f32, rf_f64, rf_c64};
static const range_fn k_range_i[CMX_NUM_DTYPES] = {
    NULL,   ri_u8,  ri_u16, ri_u32, ri_u64, ri_i8, ri_i16,
    ri_i32, ri_i64, NULL,   NULL,   NULL,   NULL,  NULL};

static void range_chunk(void* ctx, int64_t b, int64_t e) {
  const range_ctx* c = ctx;
  range_fn f =
      (!c->linspace && k_range_i[c->dt]) ? k_range_i[c->dt] : k_range_f[c->dt];
  f(c, b, e);
}

/* Arange and Linspace share this kernel (the vtable's id tells which). */
CMX__KERNEL(cmx__cpu_range) {
  (void)in;
  (void)nin;
  (void)nout;
  const cmx__range_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  range_ctx c = {.out = cmx_kernel_data(o),
                 .dt = o->dtype,
                 .start = q->start,
                 .step = q->step,
                 .stop = q->stop,
                 .n = o->size,
                 .linspace = cmx_primitive_vt(p)->id == CMX__P_Linspace};
  int64_t a0 = sat_i64(q->start), a1 = sat_i64(q->start + q->step);
  c.a0 = (uint64_t)a0;
  c.d = (uint64_t)a1 - (uint64_t)a0;
  if (o->size) cmx__parallel_for(o->size, 1 << 16, range_chunk, &c);
  return CMX_OK;
}

/* Full: the op broadcast the value to the output shape; copy it out
 * (taking its buffer when it is a uniquely held contiguous array). */
CMX__KERNEL(cmx__cpu_full) {
  (void)p;
  (void)nin;
  (void)nout;
  bool donated;
  cmx_status s = cmx_kernel_alloc_donate(out[0], in[0], &donated);
  if (s != CMX_OK) return s;
  if (!donated) cmx__cpu_copy_rowmajor(cmx_kernel_data(out[0]), in[0]);
  return CMX_OK;
}

/* Eye (ones on diagonal k) and Tri (ones at and below diagonal k) of an
 * n x m output. Zero is all-zero bytes in every dtype. */
CMX__KERNEL(cmx__cpu_eye_tri) {
  (void)in;
  (void)nin;
  (void)nout;
  const cmx__diag_params* q = cmx_primitive_params(p);
  cmx_array o = out[0];
  cmx_status s = cmx_kernel_alloc(o);
  if (s != CMX_OK) return s;
  if (o->size == 0) return CMX_OK;
  size_t isz = cmx_dtype_size(o->dtype);
  int64_t n = o->dims[0], m = o->dims[1];
  char* base = cmx_kernel_data(o);
  memset(base, 0, (size_t)o->size * isz);
  _Alignas(16) unsigned char one[16];
  cmx__store_scalar(one, o->dtype, 0, (cmx__scalar_value){.i = 1});
  bool tri = cmx_primitive_vt(p)->id == CMX__P_Tri;
  for (int64_t i = 0; i < n; i++) {
    /* Columns j with j - i <= k (tri) or j - i == k (eye); k is clamped
     * so i + k cannot overflow. */
    int64_t k = q->k < -n ? -n : q->k > m ? m : q->k;
    int64_t j = i + k;
    char* row = base + i * m * (int64_t)isz;
    if (tri) {
      int64_t end = j + 1 < m ? j + 1 : m;
      if (end > 0) cmx__cpu_fill(row, end, one, isz);
    } else if (j >= 0 && j < m) {
      memcpy(row + j * (int64_t)isz, one, isz);
    }
  }
  return CMX_OK;
}

/* Tril / Triu: a copy of the input (donated when possible) with the
 * elements above / below diagonal k of every matrix zeroed. */
CMX__KERNEL(cmx__cpu_tril_triu) {
  (void)nin;
  (void)nout;
  const cmx__diag_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  bool donated;
  cmx_status s = cmx_kernel_alloc_donate(o, a, &donated);
  if (s != CMX_OK) return s;
  if (o->size == 0) return CMX_OK;
  if (!donated) cmx__cpu_copy_rowmajor(cmx_kernel_data(o), a);
  int64_t isz = (int64_t)cmx_dtype_size(o->dtype);
  int64_t n = o->dims[o->ndim - 2], m = o->dims[o->ndim - 1];
  int64_t rows = o->size / m;
  int64_t k = q->k < -n - 1 ? -n - 1 : q->k > m + 1 ? m + 1 : q->k;
  bool lower = cmx_primitive_vt(p)->id == CMX__P_Tril;
  char* base = cmx_kernel_data(o);
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = r % n;
    char* row = base + r * m * isz;
    if (lower) { /* keep j <= i + k */
      int64_t b = i + k + 1 < 0 ? 0 : i + k + 1;
      if (b < m) memset(row + b * isz, 0, (size_t)((m - b) * isz));
    } else { /* keep j >= i + k */
      int64_t e = i + k > m ? m : i + k;
      if (e > 0) memset(row, 0, (size_t)(e * isz));
    }
  }
  return CMX_OK;
}
