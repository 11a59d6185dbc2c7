/* CPU kernels of unary elementwise primitives: their rows come from the
 * op table (primitives/ew_ops.h, instantiated by ew_gen.h); this file adds
 * the float32 exp fast path and the kernel entry points.
 *
 * Integer and bool inputs of transcendental ops never get here: the op
 * layer converts them to float32 first (the table's CMX__EW_IN_FLOAT).
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "backend/cpu/ew_dispatch.h"
#include "backend/cpu/ew_gen.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__EW_UNARY_OPS(CMX__CPU_EW_ROWS)

/* ---------------- float32 exp ----------------
 * The generic row computes cmx__vexpf per element; the fast path below
 * gives the same values about twice as fast on contiguous data. */
/* e^x for x in [-87, 88] (NaN propagates too), where 2^k is a normal
 * float: cmx__vexpf (vmath.h) without the clamp and with one scaling by 2^k
 * instead of two, the same operations otherwise, so the same value (the
 * two-step scaling multiplies by the same power of two and rounds once if
 * at all). About a third fewer operations. */
static inline float vexpf_fast(float x) {
  const float shifter = 12582912.0f; /* 0x1.8p23 */
  float t = x * 1.44269504088896341f + shifter;
  float kf = t - shifter;
  float r = x - kf * 0.693145751953125f;
  r = r - kf * 1.428606765330187045e-6f;
  float q = 1.98412698412698413e-4f;
  q = q * r + 1.38888888888888889e-3f;
  q = q * r + 8.33333333333333333e-3f;
  q = q * r + 4.16666666666666667e-2f;
  q = q * r + 1.66666666666666667e-1f;
  q = q * r + 0.5f;
  float pr = 1.0f + (r + r * r * q);
  /* the biased exponent k + 127 from t's low bits (k is its integer) */
  return pr * cmx__bitsf((cmx__fbits(t) - 0x4B400000u + 127u) << 23);
}

/* float32 exp, contiguous: each stretch of EXP_CHUNK elements whose
 * inputs all lie in [-87, 88] is computed with vexpf_fast; a stretch with
 * any other value (infinities, inputs giving subnormal or infinite
 * results) with cmx__vexpf. NaN compares false and comes out NaN either
 * way. In the common case this is about twice as fast as cmx__vexpf alone
 * (AVX2 and AVX-512: the clamp and the second scaling were a third of the
 * work), with the same values. With pf (arrays too big to be in cache),
 * the input EXP_PF bytes ahead is prefetched as it goes (one hint per
 * cache line): the hardware prefetchers alone leave a core's stream short
 * of memory bandwidth. */
#define EXP_CHUNK 2048
#define EXP_SUB 256
#define EXP_PF 16384
#define EXP_PF_MIN ((int64_t)4 << 20) /* elements (16 MiB) */

/* Hints the `bytes` bytes EXP_PF past p into the L2 cache (the addresses
 * may lie past the array: a prefetch never faults); L2, not non-temporal,
 * as reduce_impl.c's prefetch_ahead says why. */
static inline void exp_prefetch(const float* p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64)
    __builtin_prefetch((const char*)((uintptr_t)p + EXP_PF + b), 0, 2);
}

/* Separate input and output: one pass computes the short form and checks
 * the range, a stretch that fails is computed again from its input. */
CMX__SIMD_CLONES static void exp_apart(float* restrict o,
                                       const float* restrict a, int64_t n,
                                       bool pf) {
  for (int64_t s = 0; s < n; s += EXP_CHUNK) {
    const int64_t m = n - s < EXP_CHUNK ? n - s : EXP_CHUNK;
    const float* as = a + s;
    float* os = o + s;
    int out = 0;
    for (int64_t c = 0; c < m; c += EXP_SUB) {
      const int64_t e = m - c < EXP_SUB ? m : c + EXP_SUB;
      if (pf) exp_prefetch(as + c, (e - c) * 4);
      for (int64_t i = c; i < e; i++) {
        os[i] = vexpf_fast(as[i]);
        out |= (as[i] < -87.0f) | (as[i] > 88.0f);
      }
    }
    if (out)
      for (int64_t i = 0; i < m; i++) os[i] = cmx__vexpf(as[i]);
  }
}

/* In place (the output took over the input's buffer): the range of a
 * stretch is checked before it is overwritten. */
CMX__SIMD_CLONES static void exp_inplace(float* x, int64_t n, bool pf) {
  for (int64_t s = 0; s < n; s += EXP_CHUNK) {
    const int64_t m = n - s < EXP_CHUNK ? n - s : EXP_CHUNK;
    float* xs = x + s;
    if (pf) exp_prefetch(xs, m * 4);
    int out = 0;
    for (int64_t i = 0; i < m; i++) out |= (xs[i] < -87.0f) | (xs[i] > 88.0f);
    if (out)
      for (int64_t i = 0; i < m; i++) xs[i] = cmx__vexpf(xs[i]);
    else
      for (int64_t i = 0; i < m; i++) xs[i] = vexpf_fast(xs[i]);
  }
}

/* Contiguous float32 exp, o and a the same array or not overlapping. */
static void exp_contig(float* o, const float* a, int64_t n, bool pf) {
  if (o == a)
    exp_inplace(o, n, pf);
  else
    exp_apart(o, a, n, pf);
}

CMX__SIMD_CLONES static void exp_f32(char* const* p, const int64_t* st,
                                     int64_t n, const void* ctx) {
  (void)ctx;
  float* o = (float*)p[0];
  const float* a = (const float*)p[1];
  if (st[0] == 1 && st[1] == 1) {
    exp_contig(o, a, n, n >= EXP_PF_MIN);
    return;
  }
  for (int64_t i = 0; i < n; i++) o[i * st[0]] = cmx__vexpf(a[i * st[1]]);
}
/* ---------------- large contiguous float32 exp ----------------
 * exp is the hot transcendental (softmax), and on big arrays it runs near
 * memory speed only if its arithmetic is cheap enough, so the contiguous
 * float32 case of large arrays has its own driver: workers take blocks of
 * EXP_BLK elements from a shared counter (a thread that starts late, woken
 * from an idle core, or is slowed on a busy machine takes fewer instead
 * of holding up the result), each computed by exp_contig (see there). */
#define EXP_BLK ((int64_t)1 << 16)

typedef struct {
  float* o;
  const float* a;
  int64_t n, nblk;
  _Atomic int64_t next;
} exp_job;

/* Pool task: takes blocks until none is left. */
static void exp_task(void* ctx, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  exp_job* j = ctx;
  for (;;) {
    int64_t blk = atomic_fetch_add(&j->next, 1);
    if (blk >= j->nblk) break;
    int64_t s = blk * EXP_BLK;
    exp_contig(j->o + s, j->a + s, j->n - s < EXP_BLK ? j->n - s : EXP_BLK,
               j->n >= EXP_PF_MIN);
  }
}

/* exp of a contiguous float32 array into a contiguous output. */
static void exp_large(float* o, const float* a, int64_t n) {
  exp_job j;
  memset(&j, 0, sizeof j);
  j.o = o;
  j.a = a;
  j.n = n;
  j.nblk = (n + EXP_BLK - 1) / EXP_BLK;
  int threads = cmx__pool_threads();
  if (threads > j.nblk) threads = (int)j.nblk;
  if (threads > 1)
    cmx__parallel_for(threads, 1, exp_task, &j);
  else
    exp_task(&j, 0, 1);
}

/* exp of a contiguous float32 array of n elements. */
static void exp_contig_large(void* o, const void* a, int64_t n) {
  exp_large(o, a, n);
}

const cmx__cpu_ew_fast cmx__cpu_ew_fast_unary[] = {
    {CMX__P_Exp, CMX_FLOAT32, exp_f32, exp_contig_large, 2 * EXP_BLK},
    {-1, 0, NULL, NULL, 0}};

CMX__KERNEL(cmx__cpu_unary) {
  (void)nout;
  return cmx__cpu_ew_eval(p, in, nin, out, NULL);
}

CMX__KERNEL(cmx__cpu_round) {
  (void)nout;
  cmx_ew_params c = cmx__ew_params_of(p);
  return cmx__cpu_ew_eval(p, in, nin, out, &c);
}
