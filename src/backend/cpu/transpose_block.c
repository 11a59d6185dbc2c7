/* Block transposes with GCC/Clang vector extensions: one source of the
 * 8x8 (4-byte) and 4x4 (8-byte) shuffle networks, compiled for AVX2 and
 * for baseline x86-64 (where the 32-byte vectors become SSE pairs). */
/* Loops start on 32 bytes (GCC's default is 16): the element-by-element
 * loop of 1-byte items is 16-odd bytes, and where the function fell in the
 * library decided whether it straddled a 64-byte boundary; any over axis 0
 * of a (1, 2, 0)-transposed bool (64, 128, 256), whose copy runs that
 * loop, was 1.4-1.5x slower with identical machine code when it did. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("align-loops=32")
#endif
#include "backend/cpu/transpose_block.h"

#include <stdbool.h>
#include <string.h>

#include "backend/cpu/ew_rows.h" /* CMX__SIMD_CLONES */

#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define HAVE_SHUFFLE 1
#endif
#endif

/* Element by element, for the edges and for 1- and 2-byte items. */
#define SCALAR_AS(T)                                                          \
  static void scalar_##T(T* dst, int64_t dld, const T* src, int64_t sld,      \
                         int64_t rows, int64_t cols) {                        \
    for (int64_t j = 0; j < cols; j++)                                        \
      for (int64_t i = 0; i < rows; i++) dst[i * dld + j] = src[j * sld + i]; \
  }
SCALAR_AS(uint8_t)
SCALAR_AS(uint16_t)
SCALAR_AS(uint32_t)
SCALAR_AS(uint64_t)

#ifdef HAVE_SHUFFLE
typedef uint32_t v8u32 __attribute__((vector_size(32)));
typedef uint64_t v4u64 __attribute__((vector_size(32)));

/* Unaligned 32-byte load and store. */
#define LOADV(V, p)              \
  ({                             \
    V v_;                        \
    memcpy(&v_, (p), sizeof v_); \
    v_;                          \
  })
#define STOREV(p, v) memcpy((p), &(v), sizeof(v))

/* One 8x8 block of 4-byte elements: d[k * dld + m] = s[m * sld + k]
 * (unpack pairs, then quads, then halves). */
static inline __attribute__((always_inline)) void block_u32(uint32_t* d,
                                                            int64_t dld,
                                                            const uint32_t* s,
                                                            int64_t sld) {
  v8u32 r[8], t[8], u[8];
  for (int k = 0; k < 8; k++) r[k] = LOADV(v8u32, s + k * sld);
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shufflevector(r[k], r[k + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[k + 1] =
        __builtin_shufflevector(r[k], r[k + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = __builtin_shufflevector(t[k], t[k + 2], 0, 1, 8, 9, 4, 5, 12, 13);
    u[k + 1] =
        __builtin_shufflevector(t[k], t[k + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    u[k + 2] =
        __builtin_shufflevector(t[k + 1], t[k + 3], 0, 1, 8, 9, 4, 5, 12, 13);
    u[k + 3] =
        __builtin_shufflevector(t[k + 1], t[k + 3], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int k = 0; k < 4; k++) {
    v8u32 lo =
        __builtin_shufflevector(u[k], u[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    v8u32 hi =
        __builtin_shufflevector(u[k], u[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    STOREV(d + k * dld, lo);
    STOREV(d + (k + 4) * dld, hi);
  }
}

/* One 4x4 block of 8-byte elements. */
static inline __attribute__((always_inline)) void block_u64(uint64_t* d,
                                                            int64_t dld,
                                                            const uint64_t* s,
                                                            int64_t sld) {
  v4u64 r0 = LOADV(v4u64, s), r1 = LOADV(v4u64, s + sld),
        r2 = LOADV(v4u64, s + 2 * sld), r3 = LOADV(v4u64, s + 3 * sld);
  v4u64 t0 = __builtin_shufflevector(r0, r1, 0, 4, 2, 6);
  v4u64 t1 = __builtin_shufflevector(r0, r1, 1, 5, 3, 7);
  v4u64 t2 = __builtin_shufflevector(r2, r3, 0, 4, 2, 6);
  v4u64 t3 = __builtin_shufflevector(r2, r3, 1, 5, 3, 7);
  v4u64 c0 = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
  v4u64 c1 = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
  v4u64 c2 = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
  v4u64 c3 = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
  STOREV(d, c0);
  STOREV(d + dld, c1);
  STOREV(d + 2 * dld, c2);
  STOREV(d + 3 * dld, c3);
}

/* The walk shared by both sizes, for blocks of B x B elements of T:
 * strips of SH = 64 / sizeof(T) destination rows (one source cache line
 * wide, so each source line is used whole while it is in L1), columns in
 * chunks of JC. When the destination stride is a multiple of 512 bytes
 * the strip's rows share a few cache sets and writing them a block at a
 * time would evict them between blocks: each chunk is then transposed
 * into an L1 staging buffer with an odd stride and copied out row by
 * row. Other strides take the blocks straight to the destination. */
#define JC 64
#define WALK(T, B, BLOCK)                                                      \
  do {                                                                         \
    enum { SH = 64 / sizeof(T), SLD = JC + 64 / sizeof(T) };                   \
    T stage[SH * SLD];                                                         \
    bool staged = (dld * (int64_t)sizeof(T)) % 512 == 0;                       \
    int64_t rb = rows & ~(int64_t)(B - 1), cb = cols & ~(int64_t)(B - 1);      \
    for (int64_t i0 = 0; i0 < rb; i0 += SH) {                                  \
      int64_t ni = rb - i0 < SH ? rb - i0 : SH;                                \
      for (int64_t j0 = 0; j0 < cb; j0 += JC) {                                \
        int64_t nj = cb - j0 < JC ? cb - j0 : JC;                              \
        T* out = staged ? stage : dst + i0 * dld + j0;                         \
        int64_t old = staged ? SLD : dld;                                      \
        for (int64_t j = 0; j < nj; j += B)                                    \
          for (int64_t i = 0; i < ni; i += B)                                  \
            BLOCK(out + i * old + j, old, src + (j0 + j) * sld + i0 + i, sld); \
        if (staged)                                                            \
          for (int64_t i = 0; i < ni; i++)                                     \
            memcpy(dst + (i0 + i) * dld + j0, stage + i * SLD,                 \
                   (size_t)nj * sizeof(T));                                    \
      }                                                                        \
    }                                                                          \
    if (rb < rows)                                                             \
      scalar_##T(dst + rb * dld, dld, src + rb, sld, rows - rb, cb);           \
    if (cb < cols)                                                             \
      scalar_##T(dst + cb, dld, src + cb * sld, sld, rows, cols - cb);         \
  } while (0)

/* 4-byte elements: 8x8 blocks. */
CMX__SIMD_CLONES static void vec_u32(uint32_t* dst, int64_t dld,
                                     const uint32_t* src, int64_t sld,
                                     int64_t rows, int64_t cols) {
  WALK(uint32_t, 8, block_u32);
}

/* 8-byte elements: 4x4 blocks. */
CMX__SIMD_CLONES static void vec_u64(uint64_t* dst, int64_t dld,
                                     const uint64_t* src, int64_t sld,
                                     int64_t rows, int64_t cols) {
  WALK(uint64_t, 4, block_u64);
}
#endif

void cmx__transpose_block(char* dst, int64_t dst_ld, const char* src,
                          int64_t src_ld, int64_t rows, int64_t cols,
                          int64_t isz) {
  switch (isz) {
    case 1:
      scalar_uint8_t((uint8_t*)dst, dst_ld, (const uint8_t*)src, src_ld, rows,
                     cols);
      break;
    case 2:
      scalar_uint16_t((uint16_t*)(void*)dst, dst_ld,
                      (const uint16_t*)(const void*)src, src_ld, rows, cols);
      break;
#ifdef HAVE_SHUFFLE
    case 4:
      vec_u32((uint32_t*)(void*)dst, dst_ld, (const uint32_t*)(const void*)src,
              src_ld, rows, cols);
      break;
    default:
      vec_u64((uint64_t*)(void*)dst, dst_ld, (const uint64_t*)(const void*)src,
              src_ld, rows, cols);
      break;
#else
    case 4:
      scalar_uint32_t((uint32_t*)(void*)dst, dst_ld,
                      (const uint32_t*)(const void*)src, src_ld, rows, cols);
      break;
    default:
      scalar_uint64_t((uint64_t*)(void*)dst, dst_ld,
                      (const uint64_t*)(const void*)src, src_ld, rows, cols);
      break;
#endif
  }
}
