/* Helpers shared by the CPU kernels of mx.fast (fast.c, fast_sdpa.c):
 * rows of any float dtype and stride read into and written from float32
 * buffers, and simple SIMD-friendly loops. */
#ifndef CMX_BACKEND_CPU_FAST_H
#define CMX_BACKEND_CPU_FAST_H

#include <stdlib.h>

#include "backend/cpu/cpu.h"

/* Element offset of entry r of a's first nd dimensions (nd = ndim - 1:
 * row r; ndim - 2: matrix r). */
int64_t cmx__fast_outer_offset(cmx_array a, int nd, int64_t r);
static inline int64_t cmx__fast_row_offset(cmx_array a, int64_t r) {
  return cmx__fast_outer_offset(a, a->ndim - 1, r);
}
/* A work buffer of n floats for a thread-pool chunk; NULL (and *failed
 * set) when out of memory. */
static inline float* cmx__fast_buf(size_t n, _Atomic int* failed) {
  float* v = malloc((n ? n : 1) * sizeof *v);
  if (!v) atomic_store(failed, 1);
  return v;
}
/* n elements of dtype dt (float16, bfloat16 or float32) at src, stride
 * st (elements), converted into dst. */
void cmx__fast_load(const void* src, cmx_dtype dt, int64_t st, int64_t n,
                    float* dst);
/* n floats of src stored contiguously at dst as dtype dt. */
void cmx__fast_store(void* dst, cmx_dtype dt, int64_t n, const float* src);
/* sum x[i] * y[i] over n (contiguous). */
float cmx__fast_dot(const float* x, const float* y, int64_t n);
/* y[i] += a * x[i] over n (contiguous). */
void cmx__fast_axpy(float a, const float* x, float* y, int64_t n);
/* Whether the kernels handle dtype dt (float16, bfloat16, float32). */
static inline bool cmx__fast_dtype_ok(cmx_dtype dt) {
  return dt == CMX_FLOAT32 || dt == CMX_FLOAT16 || dt == CMX_BFLOAT16;
}

#endif
