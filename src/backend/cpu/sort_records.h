/* Sorting and selection of fixed-size records, generated per record type
 * by CMX__SORT_RECORDS(NAME, R, LESS, KEYOF). Used by the sort kernels
 * (sort.c) only.
 *
 * A record holds an unsigned key (KEYOF(r, sh) gives its low `bits` bits
 * as a uint64, sh is a caller's shift for packed records) and possibly an
 * index below the key; LESS compares whole records, so records are in a
 * total order and every algorithm here yields the same result as a stable
 * sort of the keys (index records start in index order; key-only records
 * with equal keys are equal).
 *
 *   sort_NAME(a, t, n, sh, bits)          sorts a (t: n records of scratch)
 *   psort_NAME(a, t, n, sh, bits)         the same on the thread pool
 *   select_NAME(a, t, n, kth, sh, bits)   puts a's kth record in sorted
 *                                         position, smaller before, larger
 *                                         after
 *
 * Algorithm: a most-significant-digit radix sort (8-bit digits, stable
 * counting scatter) that skips the key bits all records share, splits
 * buckets until they fit in cache, then finishes each bucket with an LSD
 * radix sort of 8-bit digits, or a quicksort for small buckets. O(n) for
 * large inputs; memory traffic is one global scatter per 8 key bits that
 * vary, plus cache-local passes. Selection is a three-way quickselect with
 * a fallback to the radix sort when pivots keep failing.
 */
#ifndef CMX_BACKEND_CPU_SORT_RECORDS_H
#define CMX_BACKEND_CPU_SORT_RECORDS_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"

#ifndef CMX__SORT_SMALL
#define CMX__SORT_SMALL 32        /* insertion sort up to this size */
#endif
#ifndef CMX__SORT_QUICK
#define CMX__SORT_QUICK 64        /* quicksort leaves up to this size */
#endif
#ifndef CMX__SORT_LSD_MAX
#define CMX__SORT_LSD_MAX 65536   /* LSD (in cache) up to this size */
#endif
#ifndef CMX__SORT_MSD_BITS
#define CMX__SORT_MSD_BITS 8      /* digit width of the MSD passes */
#endif
#ifndef CMX__SORT_PAR_MIN
#define CMX__SORT_PAR_MIN (1 << 20) /* parallel top pass from this size */
#endif
#define CMX__SORT_MAX_THREADS 64

/* Highest set bit + 1 of x (0 for x == 0). */
static inline int cmx__bit_width(uint64_t x) {
  return x ? 64 - __builtin_clzll(x) : 0;
}

#define CMX__SORT_RECORDS(NAME, R, LESS, KEYOF)                               \
  static void ins_##NAME(R* a, int64_t n) {                                  \
    for (int64_t i = 1; i < n; i++) {                                        \
      R v = a[i];                                                            \
      int64_t j = i;                                                         \
      while (j > 0 && LESS(v, a[j - 1])) {                                   \
        a[j] = a[j - 1];                                                     \
        j--;                                                                 \
      }                                                                      \
      a[j] = v;                                                              \
    }                                                                        \
  }                                                                          \
                                                                             \
  /* Median-of-three Hoare quicksort; recursion on the smaller side keeps   \
   * the depth logarithmic. Only used for n <= CMX__SORT_QUICK. */          \
  static void quick_##NAME(R* a, int64_t n) {                                \
    while (n > CMX__SORT_SMALL) {                                            \
      int64_t m = n / 2;                                                     \
      R x = a[0], y = a[m], z = a[n - 1], p;                                 \
      if (LESS(x, y))                                                        \
        p = LESS(y, z) ? y : (LESS(x, z) ? z : x);                           \
      else                                                                   \
        p = LESS(x, z) ? x : (LESS(y, z) ? z : y);                           \
      int64_t i = -1, j = n;                                                 \
      for (;;) {                                                             \
        do i++;                                                              \
        while (LESS(a[i], p));                                               \
        do j--;                                                              \
        while (LESS(p, a[j]));                                               \
        if (i >= j) break;                                                   \
        R tmp = a[i];                                                        \
        a[i] = a[j];                                                         \
        a[j] = tmp;                                                          \
      }                                                                      \
      /* [0, j] <= p <= [j + 1, n) */                                        \
      if (j + 1 < n - j - 1) {                                               \
        quick_##NAME(a, j + 1);                                              \
        a += j + 1;                                                          \
        n -= j + 1;                                                          \
      } else {                                                               \
        quick_##NAME(a + j + 1, n - j - 1);                                  \
        n = j + 1;                                                           \
      }                                                                      \
    }                                                                        \
    ins_##NAME(a, n);                                                        \
  }                                                                          \
                                                                             \
  /* LSD radix sort of the low `bits` key bits (n <= CMX__SORT_LSD_MAX);    \
   * the result ends in t when to_other, else in a. */                       \
  static void lsd_##NAME(R* a, R* t, int64_t n, int sh, int bits,           \
                         int to_other) {                                     \
    int passes = (bits + 7) / 8, d = (bits + passes - 1) / passes;           \
    uint32_t mask = (1u << d) - 1;                                           \
    uint32_t cnt[8][256];                                                    \
    memset(cnt, 0, sizeof(cnt[0]) * (size_t)passes);                         \
    for (int64_t i = 0; i < n; i++) {                                        \
      uint64_t k = KEYOF(a[i], sh);                                          \
      for (int p = 0; p < passes; p++) cnt[p][(k >> (p * d)) & mask]++;      \
    }                                                                        \
    R *src = a, *dst = t;                                                    \
    for (int p = 0; p < passes; p++) {                                       \
      uint32_t* c = cnt[p];                                                  \
      uint32_t sum = 0;                                                      \
      bool one = false;                                                      \
      for (uint32_t b = 0; b <= mask; b++) {                                 \
        if (c[b] == (uint32_t)n) one = true;                                 \
        uint32_t v = c[b];                                                   \
        c[b] = sum;                                                          \
        sum += v;                                                            \
      }                                                                      \
      if (one) continue; /* every key has the same digit */                 \
      int s = p * d;                                                         \
      for (int64_t i = 0; i < n; i++)                                        \
        dst[c[(KEYOF(src[i], sh) >> s) & mask]++] = src[i];                  \
      R* sw = src;                                                           \
      src = dst;                                                             \
      dst = sw;                                                              \
    }                                                                        \
    R* want = to_other ? t : a;                                              \
    if (src != want) memcpy(want, src, (size_t)n * sizeof(R));               \
  }                                                                          \
                                                                             \
  static void msd_##NAME(R* a, R* t, int64_t n, int sh, int bits,           \
                         int to_other) {                                     \
    while (bits > 0 && n > CMX__SORT_LSD_MAX) {                              \
      int d = bits < CMX__SORT_MSD_BITS ? bits : CMX__SORT_MSD_BITS;         \
      int s = bits - d;                                                      \
      uint64_t mask = (1u << d) - 1;                                         \
      int64_t cnt[1 << CMX__SORT_MSD_BITS];                                  \
      memset(cnt, 0, sizeof(int64_t) << d);                                  \
      for (int64_t i = 0; i < n; i++) cnt[(KEYOF(a[i], sh) >> s) & mask]++;  \
      int64_t sum = 0;                                                       \
      bool one = false;                                                      \
      for (uint64_t b = 0; b <= mask; b++) {                                 \
        if (cnt[b] == n) one = true;                                         \
        int64_t v = cnt[b];                                                  \
        cnt[b] = sum;                                                        \
        sum += v;                                                            \
      }                                                                      \
      if (one) { /* a shared digit: nothing to move */                       \
        bits = s;                                                            \
        continue;                                                            \
      }                                                                      \
      for (int64_t i = 0; i < n; i++)                                        \
        t[cnt[(KEYOF(a[i], sh) >> s) & mask]++] = a[i];                      \
      /* cnt[b] is now the end of bucket b */                                \
      int64_t start = 0;                                                     \
      for (uint64_t b = 0; b <= mask; b++) {                                 \
        int64_t len = cnt[b] - start;                                        \
        if (len > 0)                                                         \
          msd_##NAME(t + start, a + start, len, sh, s, !to_other);           \
        start = cnt[b];                                                      \
      }                                                                      \
      return;                                                                \
    }                                                                        \
    if (bits > 0 && n > CMX__SORT_QUICK) {                                   \
      lsd_##NAME(a, t, n, sh, bits, to_other);                               \
      return;                                                                \
    }                                                                        \
    /* bits == 0: equal keys, already in index order */                      \
    if (bits > 0) quick_##NAME(a, n);                                        \
    if (to_other) memcpy(t, a, (size_t)n * sizeof(R));                       \
  }                                                                          \
                                                                             \
  /* The key bits that differ between records of a[0, n). */               \
  static int vary_bits_##NAME(const R* a, int64_t n, int sh) {              \
    uint64_t all_or = 0, all_and = ~(uint64_t)0;                             \
    for (int64_t i = 0; i < n; i++) {                                        \
      uint64_t k = KEYOF(a[i], sh);                                          \
      all_or |= k;                                                           \
      all_and &= k;                                                          \
    }                                                                        \
    return cmx__bit_width(all_or ^ all_and);                                 \
  }                                                                          \
                                                                             \
  static void sort_##NAME(R* a, R* t, int64_t n, int sh, int bits) {        \
    if (n <= CMX__SORT_QUICK) {                                              \
      quick_##NAME(a, n);                                                    \
      return;                                                                \
    }                                                                        \
    int vb = vary_bits_##NAME(a, n, sh);                                     \
    msd_##NAME(a, t, n, sh, vb < bits ? vb : bits, 0);                       \
  }                                                                          \
                                                                             \
  /* ---- the parallel top pass ---- */                                     \
  typedef struct {                                                           \
    R *a, *t;                                                                \
    int64_t n, chunk;                                                        \
    int sh, s;                                                               \
    uint64_t mask;                                                           \
    int64_t (*cnt)[1 << CMX__SORT_MSD_BITS]; /* [chunk][bucket] */           \
    uint64_t ors[CMX__SORT_MAX_THREADS], ands[CMX__SORT_MAX_THREADS];        \
    int64_t bucket_end[1 << CMX__SORT_MSD_BITS];                             \
    int64_t group_first[CMX__SORT_MAX_THREADS + 1]; /* bucket ranges */      \
  } par_##NAME;                                                              \
                                                                             \
  static void par_vary_##NAME(void* ctx, int64_t b, int64_t e) {             \
    par_##NAME* P = ctx;                                                     \
    for (int64_t c = b; c < e; c++) {                                        \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                         \
      if (hi > P->n) hi = P->n;                                              \
      uint64_t o = 0, an = ~(uint64_t)0;                                     \
      for (int64_t i = lo; i < hi; i++) {                                    \
        uint64_t k = KEYOF(P->a[i], P->sh);                                  \
        o |= k;                                                              \
        an &= k;                                                             \
      }                                                                      \
      P->ors[c] = o;                                                         \
      P->ands[c] = an;                                                       \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void par_count_##NAME(void* ctx, int64_t b, int64_t e) {            \
    par_##NAME* P = ctx;                                                     \
    for (int64_t c = b; c < e; c++) {                                        \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                         \
      if (hi > P->n) hi = P->n;                                              \
      int64_t* cnt = P->cnt[c];                                              \
      memset(cnt, 0, sizeof(int64_t) * (P->mask + 1));                       \
      for (int64_t i = lo; i < hi; i++)                                      \
        cnt[(KEYOF(P->a[i], P->sh) >> P->s) & P->mask]++;                    \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void par_scatter_##NAME(void* ctx, int64_t b, int64_t e) {          \
    par_##NAME* P = ctx;                                                     \
    for (int64_t c = b; c < e; c++) {                                        \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                         \
      if (hi > P->n) hi = P->n;                                              \
      int64_t* off = P->cnt[c];                                              \
      for (int64_t i = lo; i < hi; i++)                                      \
        P->t[off[(KEYOF(P->a[i], P->sh) >> P->s) & P->mask]++] = P->a[i];    \
    }                                                                        \
  }                                                                          \
                                                                             \
  static void par_finish_##NAME(void* ctx, int64_t b, int64_t e) {           \
    par_##NAME* P = ctx;                                                     \
    for (int64_t g = b; g < e; g++)                                          \
      for (int64_t k = P->group_first[g]; k < P->group_first[g + 1]; k++) {  \
        int64_t start = k ? P->bucket_end[k - 1] : 0;                        \
        int64_t len = P->bucket_end[k] - start;                              \
        if (len > 0)                                                         \
          msd_##NAME(P->t + start, P->a + start, len, P->sh, P->s, 1);       \
      }                                                                      \
  }                                                                          \
                                                                             \
  /* sort_NAME with the first MSD pass and the buckets spread over the      \
   * pool: chunk histograms, a stable parallel scatter, then groups of      \
   * buckets of balanced total size. False when out of memory. */           \
  static bool psort_##NAME(R* a, R* t, int64_t n, int sh, int bits) {       \
    int threads = cmx__pool_threads();                                       \
    if (threads > CMX__SORT_MAX_THREADS) threads = CMX__SORT_MAX_THREADS;    \
    if (threads < 2 || n < CMX__SORT_PAR_MIN) {                              \
      sort_##NAME(a, t, n, sh, bits);                                        \
      return true;                                                           \
    }                                                                        \
    par_##NAME* P = malloc(sizeof *P);                                       \
    if (!P) return false;                                                    \
    P->cnt = malloc(sizeof(*P->cnt) * (size_t)threads);                      \
    if (!P->cnt) {                                                           \
      free(P);                                                               \
      return false;                                                          \
    }                                                                        \
    P->a = a;                                                                \
    P->t = t;                                                                \
    P->n = n;                                                                \
    P->sh = sh;                                                              \
    P->chunk = (n + threads - 1) / threads;                                  \
    cmx__parallel_for(threads, 1, par_vary_##NAME, P);                       \
    uint64_t o = 0, an = ~(uint64_t)0;                                       \
    for (int c = 0; c < threads; c++) {                                      \
      o |= P->ors[c];                                                        \
      an &= P->ands[c];                                                      \
    }                                                                        \
    int vb = cmx__bit_width(o ^ an);                                         \
    if (vb < bits) bits = vb;                                                \
    if (bits == 0) { /* all keys equal: already sorted */                    \
      free(P->cnt);                                                          \
      free(P);                                                               \
      return true;                                                           \
    }                                                                        \
    int d = bits < CMX__SORT_MSD_BITS ? bits : CMX__SORT_MSD_BITS;           \
    P->s = bits - d;                                                         \
    P->mask = (1u << d) - 1;                                                 \
    cmx__parallel_for(threads, 1, par_count_##NAME, P);                      \
    /* exclusive offsets, bucket-major then chunk */                         \
    int64_t sum = 0;                                                         \
    for (uint64_t k = 0; k <= P->mask; k++) {                                \
      for (int c = 0; c < threads; c++) {                                    \
        int64_t v = P->cnt[c][k];                                            \
        P->cnt[c][k] = sum;                                                  \
        sum += v;                                                            \
      }                                                                      \
      P->bucket_end[k] = sum;                                                \
    }                                                                        \
    cmx__parallel_for(threads, 1, par_scatter_##NAME, P);                    \
    /* groups of consecutive buckets, about n / threads records each: group \
     * g starts at the first bucket starting at or after g * n / threads */ \
    int64_t nb = (int64_t)P->mask + 1, k = 0;                                \
    P->group_first[0] = 0;                                                   \
    for (int g = 1; g < threads; g++) {                                      \
      int64_t target = n / threads * g;                                      \
      while (k < nb && (k ? P->bucket_end[k - 1] : 0) < target) k++;         \
      P->group_first[g] = k;                                                 \
    }                                                                        \
    P->group_first[threads] = nb;                                            \
    cmx__parallel_for(threads, 1, par_finish_##NAME, P);                     \
    free(P->cnt);                                                            \
    free(P);                                                                 \
    return true;                                                             \
  }                                                                          \
                                                                             \
  static void select_##NAME(R* a, R* t, int64_t n, int64_t kth, int sh,     \
                            int bits) {                                      \
    int64_t lo = 0, hi = n;                                                  \
    int budget = 2 * cmx__bit_width((uint64_t)n) + 8;                        \
    while (hi - lo > CMX__SORT_SMALL) {                                      \
      if (budget-- == 0) {                                                   \
        sort_##NAME(a + lo, t, hi - lo, sh, bits);                           \
        return;                                                              \
      }                                                                      \
      int64_t m = lo + (hi - lo) / 2;                                        \
      R x = a[lo], y = a[m], z = a[hi - 1], p;                               \
      if (LESS(x, y))                                                        \
        p = LESS(y, z) ? y : (LESS(x, z) ? z : x);                           \
      else                                                                   \
        p = LESS(x, z) ? x : (LESS(y, z) ? z : y);                           \
      /* three-way: [lo, lt) < p, [lt, gt) == p, [gt, hi) > p */             \
      int64_t lt = lo, i = lo, gt = hi;                                      \
      while (i < gt) {                                                       \
        R v = a[i];                                                          \
        if (LESS(v, p)) {                                                    \
          a[i++] = a[lt];                                                    \
          a[lt++] = v;                                                       \
        } else if (LESS(p, v)) {                                             \
          a[i] = a[--gt];                                                    \
          a[gt] = v;                                                         \
        } else {                                                             \
          i++;                                                               \
        }                                                                    \
      }                                                                      \
      if (kth < lt)                                                          \
        hi = lt;                                                             \
      else if (kth >= gt)                                                    \
        lo = gt;                                                             \
      else                                                                   \
        return;                                                              \
    }                                                                        \
    ins_##NAME(a + lo, hi - lo);                                             \
  }

#endif
