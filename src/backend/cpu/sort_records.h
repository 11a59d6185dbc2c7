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
 *   select_NAME(a, t, n, kth)             puts a's kth record in sorted
 *                                         position, smaller before, larger
 *                                         after
 *
 * The sorts return false when out of memory. Algorithm (all stable
 * counting scatters, skipping the key bits every record shares):
 * - large inputs (> CMX__SORT_LSD_MAX): one counting pass over the top 16
 *   varying key bits, buckets merged into groups of consecutive keys of
 *   about CMX__SORT_GROUP records (so skewed keys such as float exponents
 *   still split evenly), one scatter into the groups, then each group
 *   sorted in cache; chunks and groups run on the thread pool (psort);
 * - groups that stay large: MSD passes of 8-bit digits until buckets fit;
 * - in-cache sizes: an LSD radix sort of 8-bit digits, quicksort below
 *   CMX__SORT_QUICK, insertion sort below CMX__SORT_SMALL.
 * Large inputs thus move through memory about four times (count, scatter,
 * the in-cache group sort). Selection is a quickselect: large ranges split
 * branch-free between the records and the scratch, small ones three-way in
 * place, with a fallback to the radix sort when pivots keep failing.
 */
#ifndef CMX_BACKEND_CPU_SORT_RECORDS_H
#define CMX_BACKEND_CPU_SORT_RECORDS_H

#include <stdint.h>
#include <string.h>

#include "core/internal.h"

#ifndef CMX__SORT_SMALL
#define CMX__SORT_SMALL 32 /* insertion sort up to this size */
#endif
#ifndef CMX__SORT_QUICK
#define CMX__SORT_QUICK 64 /* quicksort leaves up to this size */
#endif
#ifndef CMX__SORT_LSD_MAX
#define CMX__SORT_LSD_MAX 65536 /* LSD (in cache) up to this size */
#endif
#ifndef CMX__SORT_MSD_BITS
#define CMX__SORT_MSD_BITS 8 /* digit width of the MSD passes */
#endif
/* Branch-free selection above this size: from insertion-sort sizes up.
 * The three-way in-place quickselect mispredicts about every other record
 * on random keys; at 4096 (before) rows of 64 to 1024 records took 2-3x
 * the time (bench_sweep's partition/argpartition cases: 0.31-0.71x of
 * that time at 32, none slower; at 64 or 128 some rows kept the slow
 * loop). */
#ifndef CMX__SORT_SELECT_COPY
#define CMX__SORT_SELECT_COPY CMX__SORT_SMALL
#endif
#ifndef CMX__SORT_GROUP
#define CMX__SORT_GROUP 16384 /* records per group of the top pass */
#endif
#ifndef CMX__SORT_PAR_MIN
#define CMX__SORT_PAR_MIN (1 << 20) /* parallel top pass from this size */
#endif
#define CMX__SORT_MAX_THREADS 64

/* Highest set bit + 1 of x (0 for x == 0). */
static inline int cmx__bit_width(uint64_t x) {
  return x ? 64 - __builtin_clzll(x) : 0;
}

#define CMX__SORT_RECORDS(NAME, R, LESS, KEYOF)                                \
  static void ins_##NAME(R* a, int64_t n) {                                    \
    for (int64_t i = 1; i < n; i++) {                                          \
      R v = a[i];                                                              \
      int64_t j = i;                                                           \
      while (j > 0 && LESS(v, a[j - 1])) {                                     \
        a[j] = a[j - 1];                                                       \
        j--;                                                                   \
      }                                                                        \
      a[j] = v;                                                                \
    }                                                                          \
  }                                                                            \
                                                                               \
  /* Median-of-three Hoare quicksort; recursion on the smaller side keeps      \
   * the depth logarithmic. Only used for n <= CMX__SORT_QUICK. */             \
  static void quick_##NAME(R* a, int64_t n) {                                  \
    while (n > CMX__SORT_SMALL) {                                              \
      int64_t m = n / 2;                                                       \
      R x = a[0], y = a[m], z = a[n - 1], p;                                   \
      if (LESS(x, y))                                                          \
        p = LESS(y, z) ? y : (LESS(x, z) ? z : x);                             \
      else                                                                     \
        p = LESS(x, z) ? x : (LESS(y, z) ? z : y);                             \
      int64_t i = -1, j = n;                                                   \
      for (;;) {                                                               \
        do i++;                                                                \
        while (LESS(a[i], p));                                                 \
        do j--;                                                                \
        while (LESS(p, a[j]));                                                 \
        if (i >= j) break;                                                     \
        R tmp = a[i];                                                          \
        a[i] = a[j];                                                           \
        a[j] = tmp;                                                            \
      }                                                                        \
      /* [0, j] <= p <= [j + 1, n) */                                          \
      if (j + 1 < n - j - 1) {                                                 \
        quick_##NAME(a, j + 1);                                                \
        a += j + 1;                                                            \
        n -= j + 1;                                                            \
      } else {                                                                 \
        quick_##NAME(a + j + 1, n - j - 1);                                    \
        n = j + 1;                                                             \
      }                                                                        \
    }                                                                          \
    ins_##NAME(a, n);                                                          \
  }                                                                            \
                                                                               \
  /* Merges the sorted runs of w0 records of a[0, n) pairwise until one is   \
   * left (t: n records of scratch), the result in a; a merge picks by a      \
   * select and advances both cursors by the comparison (no branch on the     \
   * keys), taking the earlier run's record on ties: stable. */               \
  static void merge_runs_##NAME(R* a, R* t, int64_t n, int64_t w0) {          \
    R *src = a, *dst = t;                                                      \
    for (int64_t w = w0; w < n; w *= 2) {                                      \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                              \
        int64_t mid = lo + w < n ? lo + w : n;                                 \
        int64_t hi = lo + 2 * w < n ? lo + 2 * w : n;                          \
        int64_t i = lo, j = mid, k = lo;                                       \
        while (i < mid && j < hi) {                                            \
          R x = src[i], y = src[j];                                            \
          bool take = LESS(y, x);                                              \
          dst[k++] = take ? y : x;                                             \
          j += take;                                                           \
          i += !take;                                                          \
        }                                                                      \
        while (i < mid) dst[k++] = src[i++];                                   \
        while (j < hi) dst[k++] = src[j++];                                    \
      }                                                                        \
      R* sw = src;                                                             \
      src = dst;                                                               \
      dst = sw;                                                                \
    }                                                                          \
    if (src != a) memcpy(a, src, sizeof(R) * (size_t)n);                       \
  }                                                                            \
                                                                               \
  /* Branch-free sort of a[0, n) for n <= CMX__SORT_QUICK (t: n records of    \
   * scratch): runs of 8 by insertion in which the new record moves down by    \
   * selects (the larger of each pair stays), then merges that pick by a       \
   * select and advance both cursors by the comparison. Random keys            \
   * mispredict nothing; the quicksort with insertion below it (used before)   \
   * mispredicted about once a record a level: argsort of rows of 64, 17 ns    \
   * a record, 60% of it in that sort. Stable like the others (index           \
   * records are distinct; key-only records that compare equal are equal). */ \
  static void small_##NAME(R* a, R* t, int64_t n) {                            \
    for (int64_t b = 0; b < n; b += 8) {                                       \
      int64_t e = b + 8 < n ? b + 8 : n;                                       \
      for (int64_t i = b + 1; i < e; i++) {                                    \
        R x = a[i];                                                            \
        for (int64_t j = i; j > b; j--) {                                      \
          R p = a[j - 1];                                                      \
          bool lt = LESS(x, p);                                                \
          a[j] = lt ? p : x;                                                   \
          x = lt ? x : p;                                                      \
        }                                                                      \
        a[b] = x;                                                              \
      }                                                                        \
    }                                                                          \
    merge_runs_##NAME(a, t, n, 8);                                             \
  }                                                                            \
                                                                               \
  /* LSD radix sort of the low `bits` key bits (n <= CMX__SORT_LSD_MAX);       \
   * the result ends in t when to_other, else in a. */                         \
  static void lsd_##NAME(R* a, R* t, int64_t n, int sh, int bits,              \
                         int to_other) {                                       \
    int passes = (bits + 7) / 8, d = (bits + passes - 1) / passes;             \
    uint32_t mask = (1u << d) - 1;                                             \
    uint32_t cnt[8][256];                                                      \
    memset(cnt, 0, sizeof(cnt[0]) * (size_t)passes);                           \
    for (int64_t i = 0; i < n; i++) {                                          \
      uint64_t k = KEYOF(a[i], sh);                                            \
      for (int p = 0; p < passes; p++) cnt[p][(k >> (p * d)) & mask]++;        \
    }                                                                          \
    R *src = a, *dst = t;                                                      \
    for (int p = 0; p < passes; p++) {                                         \
      uint32_t* c = cnt[p];                                                    \
      uint32_t sum = 0;                                                        \
      bool one = false;                                                        \
      for (uint32_t b = 0; b <= mask; b++) {                                   \
        if (c[b] == (uint32_t)n) one = true;                                   \
        uint32_t v = c[b];                                                     \
        c[b] = sum;                                                            \
        sum += v;                                                              \
      }                                                                        \
      if (one) continue; /* every key has the same digit */                    \
      int s = p * d;                                                           \
      for (int64_t i = 0; i < n; i++)                                          \
        dst[c[(KEYOF(src[i], sh) >> s) & mask]++] = src[i];                    \
      R* sw = src;                                                             \
      src = dst;                                                               \
      dst = sw;                                                                \
    }                                                                          \
    R* want = to_other ? t : a;                                                \
    if (src != want) memcpy(want, src, (size_t)n * sizeof(R));                 \
  }                                                                            \
                                                                               \
  static void msd_##NAME(R* a, R* t, int64_t n, int sh, int bits,              \
                         int to_other) {                                       \
    while (bits > 0 && n > CMX__SORT_LSD_MAX) {                                \
      int d = bits < CMX__SORT_MSD_BITS ? bits : CMX__SORT_MSD_BITS;           \
      int s = bits - d;                                                        \
      uint64_t mask = (1u << d) - 1;                                           \
      int64_t cnt[1 << CMX__SORT_MSD_BITS];                                    \
      memset(cnt, 0, sizeof(int64_t) << d);                                    \
      for (int64_t i = 0; i < n; i++) cnt[(KEYOF(a[i], sh) >> s) & mask]++;    \
      int64_t sum = 0;                                                         \
      bool one = false;                                                        \
      for (uint64_t b = 0; b <= mask; b++) {                                   \
        if (cnt[b] == n) one = true;                                           \
        int64_t v = cnt[b];                                                    \
        cnt[b] = sum;                                                          \
        sum += v;                                                              \
      }                                                                        \
      if (one) { /* a shared digit: nothing to move */                         \
        bits = s;                                                              \
        continue;                                                              \
      }                                                                        \
      for (int64_t i = 0; i < n; i++)                                          \
        t[cnt[(KEYOF(a[i], sh) >> s) & mask]++] = a[i];                        \
      /* cnt[b] is now the end of bucket b */                                  \
      int64_t start = 0;                                                       \
      for (uint64_t b = 0; b <= mask; b++) {                                   \
        int64_t len = cnt[b] - start;                                          \
        if (len > 0) msd_##NAME(t + start, a + start, len, sh, s, !to_other);  \
        start = cnt[b];                                                        \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    if (bits > 0 && n > CMX__SORT_QUICK) {                                     \
      lsd_##NAME(a, t, n, sh, bits, to_other);                                 \
      return;                                                                  \
    }                                                                          \
    /* bits == 0: equal keys, already in index order */                        \
    if (bits > 0) quick_##NAME(a, n);                                          \
    if (to_other) memcpy(t, a, (size_t)n * sizeof(R));                         \
  }                                                                            \
                                                                               \
  /* The key bits that differ between records of a[0, n). */                   \
  static int vary_bits_##NAME(const R* a, int64_t n, int sh) {                 \
    uint64_t all_or = 0, all_and = ~(uint64_t)0;                               \
    for (int64_t i = 0; i < n; i++) {                                          \
      uint64_t k = KEYOF(a[i], sh);                                            \
      all_or |= k;                                                             \
      all_and &= k;                                                            \
    }                                                                          \
    return cmx__bit_width(all_or ^ all_and);                                   \
  }                                                                            \
                                                                               \
  /* ---- the top pass of large inputs ---- */                                 \
  typedef struct {                                                             \
    R *a, *t;                                                                  \
    int64_t n, chunk, ngroups;                                                 \
    int sh, s;                                                                 \
    uint64_t mask;                                                             \
    uint32_t* cnt; /* [chunk][bucket] counts */                                \
    uint16_t* grp; /* bucket -> group */                                       \
    int64_t* goff; /* [chunk][group] counts, then scatter offsets */           \
    int64_t* gend; /* [group] end of the group */                              \
    int64_t part[CMX__SORT_MAX_THREADS + 1]; /* groups of each task */         \
    uint64_t ors[CMX__SORT_MAX_THREADS], ands[CMX__SORT_MAX_THREADS];          \
  } topctx_##NAME;                                                             \
                                                                               \
  static void top_vary_##NAME(void* ctx, int64_t b, int64_t e) {               \
    topctx_##NAME* P = ctx;                                                    \
    for (int64_t c = b; c < e; c++) {                                          \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                           \
      if (hi > P->n) hi = P->n;                                                \
      uint64_t o = 0, an = ~(uint64_t)0;                                       \
      for (int64_t i = lo; i < hi; i++) {                                      \
        uint64_t k = KEYOF(P->a[i], P->sh);                                    \
        o |= k;                                                                \
        an &= k;                                                               \
      }                                                                        \
      P->ors[c] = o;                                                           \
      P->ands[c] = an;                                                         \
    }                                                                          \
  }                                                                            \
                                                                               \
  static void top_count_##NAME(void* ctx, int64_t b, int64_t e) {              \
    topctx_##NAME* P = ctx;                                                    \
    for (int64_t c = b; c < e; c++) {                                          \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                           \
      if (hi > P->n) hi = P->n;                                                \
      uint32_t* cnt = P->cnt + (c << 16);                                      \
      memset(cnt, 0, sizeof(uint32_t) * (P->mask + 1));                        \
      for (int64_t i = lo; i < hi; i++)                                        \
        cnt[(KEYOF(P->a[i], P->sh) >> P->s) & P->mask]++;                      \
    }                                                                          \
  }                                                                            \
                                                                               \
  static void top_scatter_##NAME(void* ctx, int64_t b, int64_t e) {            \
    topctx_##NAME* P = ctx;                                                    \
    for (int64_t c = b; c < e; c++) {                                          \
      int64_t lo = c * P->chunk, hi = lo + P->chunk;                           \
      if (hi > P->n) hi = P->n;                                                \
      int64_t* off = P->goff + c * P->ngroups;                                 \
      for (int64_t i = lo; i < hi; i++)                                        \
        P->t[off[P->grp[(KEYOF(P->a[i], P->sh) >> P->s) & P->mask]]++] =       \
            P->a[i];                                                           \
    }                                                                          \
  }                                                                            \
                                                                               \
  static void top_finish_##NAME(void* ctx, int64_t b, int64_t e) {             \
    topctx_##NAME* P = ctx;                                                    \
    for (int64_t k = b; k < e; k++)                                            \
      for (int64_t g = P->part[k]; g < P->part[k + 1]; g++) {                  \
        int64_t start = g ? P->gend[g - 1] : 0, len = P->gend[g] - start;      \
        if (len <= 0) continue;                                                \
        int vb = vary_bits_##NAME(P->t + start, len, P->sh);                   \
        msd_##NAME(P->t + start, P->a + start, len, P->sh, vb, 1);             \
      }                                                                        \
  }                                                                            \
                                                                               \
  /* Sorts a large a in tasks on the pool (threads == 1: inline). One          \
   * counting pass over the top (up to 16) varying key bits, then buckets      \
   * merged into groups of consecutive keys holding about                      \
   * CMX__SORT_GROUP records each (so skewed keys, such as float exponents,    \
   * still split evenly), one stable scatter into the groups, and each group   \
   * sorted in cache. False when out of memory. */                             \
  static bool top_##NAME(R* a, R* t, int64_t n, int sh, int bits,              \
                         int threads) {                                        \
    topctx_##NAME* P = calloc(1, sizeof *P);                                   \
    uint32_t* cnt = malloc(sizeof(uint32_t) * ((size_t)threads << 16));        \
    int64_t* tot = malloc(sizeof(int64_t) << 16);                              \
    uint16_t* grp = malloc(sizeof(uint16_t) << 16);                            \
    int64_t* gend = malloc(sizeof(int64_t) << 16);                             \
    int64_t* goff = malloc(sizeof(int64_t) * ((size_t)threads << 16));         \
    bool ok = P && cnt && tot && grp && gend && goff;                          \
    if (ok) {                                                                  \
      P->a = a;                                                                \
      P->t = t;                                                                \
      P->n = n;                                                                \
      P->sh = sh;                                                              \
      P->chunk = (n + threads - 1) / threads;                                  \
      P->cnt = cnt;                                                            \
      P->grp = grp;                                                            \
      P->gend = gend;                                                          \
      P->goff = goff;                                                          \
      cmx__parallel_for(threads, 1, top_vary_##NAME, P);                       \
      uint64_t o = 0, an = ~(uint64_t)0;                                       \
      for (int c = 0; c < threads; c++) {                                      \
        o |= P->ors[c];                                                        \
        an &= P->ands[c];                                                      \
      }                                                                        \
      int vb = cmx__bit_width(o ^ an);                                         \
      if (vb < bits) bits = vb;                                                \
    }                                                                          \
    if (ok && bits > 0) {                                                      \
      int d = bits < 16 ? bits : 16;                                           \
      P->s = bits - d;                                                         \
      P->mask = ((uint64_t)1 << d) - 1;                                        \
      cmx__parallel_for(threads, 1, top_count_##NAME, P);                      \
      int64_t nb = (int64_t)P->mask + 1;                                       \
      for (int64_t k = 0; k < nb; k++) {                                       \
        int64_t v = 0;                                                         \
        for (int c = 0; c < threads; c++) v += cnt[((int64_t)c << 16) + k];    \
        tot[k] = v;                                                            \
      }                                                                        \
      /* groups: close one once it holds `target` records */                   \
      int64_t target =                                                         \
          n / 1024 > CMX__SORT_GROUP ? n / 1024 : CMX__SORT_GROUP;             \
      int64_t g = 0, acc = 0, run = 0;                                         \
      for (int64_t k = 0; k < nb; k++) {                                       \
        grp[k] = (uint16_t)g;                                                  \
        acc += tot[k];                                                         \
        run += tot[k];                                                         \
        if (acc >= target && k + 1 < nb) {                                     \
          gend[g++] = run;                                                     \
          acc = 0;                                                             \
        }                                                                      \
      }                                                                        \
      gend[g] = n;                                                             \
      P->ngroups = g + 1;                                                      \
      /* per chunk and group: counts, then offsets (group-major) */            \
      for (int c = 0; c < threads; c++) {                                      \
        int64_t* gc = goff + c * P->ngroups;                                   \
        memset(gc, 0, sizeof(int64_t) * (size_t)P->ngroups);                   \
        for (int64_t k = 0; k < nb; k++)                                       \
          gc[grp[k]] += cnt[((int64_t)c << 16) + k];                           \
      }                                                                        \
      int64_t pos = 0;                                                         \
      for (int64_t q = 0; q < P->ngroups; q++)                                 \
        for (int c = 0; c < threads; c++) {                                    \
          int64_t v = goff[c * P->ngroups + q];                                \
          goff[c * P->ngroups + q] = pos;                                      \
          pos += v;                                                            \
        }                                                                      \
      cmx__parallel_for(threads, 1, top_scatter_##NAME, P);                    \
      /* tasks of consecutive groups, about n / threads records each */        \
      int64_t q = 0;                                                           \
      P->part[0] = 0;                                                          \
      for (int k = 1; k < threads; k++) {                                      \
        int64_t want = n / threads * k;                                        \
        while (q < P->ngroups && (q ? gend[q - 1] : 0) < want) q++;            \
        P->part[k] = q;                                                        \
      }                                                                        \
      P->part[threads] = P->ngroups;                                           \
      cmx__parallel_for(threads, 1, top_finish_##NAME, P);                     \
    }                                                                          \
    free(P);                                                                   \
    free(cnt);                                                                 \
    free(tot);                                                                 \
    free(grp);                                                                 \
    free(gend);                                                                \
    free(goff);                                                                \
    return ok;                                                                 \
  }                                                                            \
                                                                               \
  static bool sort_##NAME(R* a, R* t, int64_t n, int sh, int bits) {           \
    if (n <= CMX__SORT_QUICK) {                                                \
      small_##NAME(a, t, n);                                                   \
      return true;                                                             \
    }                                                                          \
    if (n > CMX__SORT_LSD_MAX) return top_##NAME(a, t, n, sh, bits, 1);        \
    int vb = vary_bits_##NAME(a, n, sh);                                       \
    msd_##NAME(a, t, n, sh, vb < bits ? vb : bits, 0);                         \
    return true;                                                               \
  }                                                                            \
                                                                               \
  /* sort_NAME on the whole thread pool. */                                    \
  static bool psort_##NAME(R* a, R* t, int64_t n, int sh, int bits) {          \
    int threads = cmx__pool_threads();                                         \
    if (threads > CMX__SORT_MAX_THREADS) threads = CMX__SORT_MAX_THREADS;      \
    if (threads < 2 || n < CMX__SORT_PAR_MIN)                                  \
      return sort_##NAME(a, t, n, sh, bits);                                   \
    return top_##NAME(a, t, n, sh, bits, threads);                             \
  }                                                                            \
                                                                               \
  /* Branch-free split of cur[lo, hi) into oth[lo, hi): records with           \
   * below(v) first, the rest after (in reverse order); returns the split.     \
   * Every record is written to both ends, and only one end advances. */       \
  static int64_t split_below_##NAME(const R* cur, R* oth, int64_t lo,          \
                                    int64_t hi, R p, bool or_equal) {          \
    int64_t l = lo, h = hi - 1;                                                \
    for (int64_t i = lo; i < hi; i++) {                                        \
      R v = cur[i];                                                            \
      oth[l] = v;                                                              \
      oth[h] = v;                                                              \
      bool in = or_equal ? !LESS(p, v) : LESS(v, p);                           \
      l += in;                                                                 \
      h -= !in;                                                                \
    }                                                                          \
    return l;                                                                  \
  }                                                                            \
                                                                               \
  /* Median of three records at pseudo-random positions of [lo, hi): no        \
   * input order (sorted, reversed, organ pipe) makes it fail on purpose. */   \
  static R pivot3_##NAME(const R* a, int64_t lo, int64_t hi, uint64_t* rng) {  \
    R v[3];                                                                    \
    for (int k = 0; k < 3; k++) {                                              \
      *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;           \
      v[k] = a[lo + (int64_t)((*rng >> 33) % (uint64_t)(hi - lo))];            \
    }                                                                          \
    R x = v[0], y = v[1], z = v[2];                                            \
    if (LESS(x, y)) return LESS(y, z) ? y : (LESS(x, z) ? z : x);              \
    return LESS(x, z) ? x : (LESS(y, z) ? z : y);                              \
  }                                                                            \
                                                                               \
  /* Bottom-up merge sort by whole records (t: n records of scratch): the      \
   * selection's worst-case fallback, which cannot assume that records of      \
   * equal keys are in index order (the radix sorts do). */                    \
  static void msort_##NAME(R* a, R* t, int64_t n) {                            \
    for (int64_t i = 0; i < n; i += CMX__SORT_SMALL)                           \
      ins_##NAME(a + i, n - i < CMX__SORT_SMALL ? n - i : CMX__SORT_SMALL);    \
    merge_runs_##NAME(a, t, n, CMX__SORT_SMALL);                               \
  }                                                                            \
                                                                               \
  static void select_##NAME(R* a, R* t, int64_t n, int64_t kth) {              \
    int64_t lo = 0, hi = n;                                                    \
    int budget = 2 * cmx__bit_width((uint64_t)n) + 8;                          \
    uint64_t rng = (uint64_t)n ^ ((uint64_t)kth << 17);                        \
    /* Large ranges: branch-free splits between a and t. a outside [lo, hi)    \
     * is final; the live range is in cur. */                                  \
    R *cur = a, *oth = t;                                                      \
    while (hi - lo > CMX__SORT_SELECT_COPY) {                                  \
      if (budget-- == 0) {                                                     \
        if (cur != a) memcpy(a + lo, cur + lo, sizeof(R) * (size_t)(hi - lo)); \
        msort_##NAME(a + lo, t + lo, hi - lo);                                 \
        return;                                                                \
      }                                                                        \
      R p = pivot3_##NAME(cur, lo, hi, &rng);                                  \
      int64_t m = split_below_##NAME(cur, oth, lo, hi, p, false);              \
      R* sw = cur;                                                             \
      cur = oth;                                                               \
      oth = sw;                                                                \
      if (kth < m) {                                                           \
        if (cur != a) memcpy(a + m, cur + m, sizeof(R) * (size_t)(hi - m));    \
        hi = m;                                                                \
        continue;                                                              \
      }                                                                        \
      if (m == lo) { /* nothing below p: split off the records equal to it */  \
        m = split_below_##NAME(cur, oth, lo, hi, p, true);                     \
        sw = cur;                                                              \
        cur = oth;                                                             \
        oth = sw;                                                              \
        if (kth < m) { /* kth equals p: every record is placed */              \
          if (cur != a)                                                        \
            memcpy(a + lo, cur + lo, sizeof(R) * (size_t)(hi - lo));           \
          return;                                                              \
        }                                                                      \
      }                                                                        \
      if (cur != a) memcpy(a + lo, cur + lo, sizeof(R) * (size_t)(m - lo));    \
      lo = m;                                                                  \
    }                                                                          \
    if (cur != a) memcpy(a + lo, cur + lo, sizeof(R) * (size_t)(hi - lo));     \
                                                                               \
    while (hi - lo > CMX__SORT_SMALL) {                                        \
      if (budget-- == 0) {                                                     \
        msort_##NAME(a + lo, t, hi - lo);                                      \
        return;                                                                \
      }                                                                        \
      R p = pivot3_##NAME(a, lo, hi, &rng);                                    \
      /* three-way: [lo, lt) < p, [lt, gt) == p, [gt, hi) > p */               \
      int64_t lt = lo, i = lo, gt = hi;                                        \
      while (i < gt) {                                                         \
        R v = a[i];                                                            \
        if (LESS(v, p)) {                                                      \
          a[i++] = a[lt];                                                      \
          a[lt++] = v;                                                         \
        } else if (LESS(p, v)) {                                               \
          a[i] = a[--gt];                                                      \
          a[gt] = v;                                                           \
        } else {                                                               \
          i++;                                                                 \
        }                                                                      \
      }                                                                        \
      if (kth < lt)                                                            \
        hi = lt;                                                               \
      else if (kth >= gt)                                                      \
        lo = gt;                                                               \
      else                                                                     \
        return;                                                                \
    }                                                                          \
    ins_##NAME(a + lo, hi - lo);                                               \
  }

#endif
