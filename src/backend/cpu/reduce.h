/* Internals shared by the CPU reduction kernels (reduce.c, reduce_impl.c,
 * reduce_arg.c, reduce_softmax.c). */
#ifndef CMX_BACKEND_CPU_REDUCE_H
#define CMX_BACKEND_CPU_REDUCE_H

#include "backend/cpu/cpu.h"

/* Work below this many elements runs on one thread. */
#define CMX__RED_GRAIN (1 << 15)
/* Column reductions: at most this many columns per block (the block's
 * lane accumulators stay in L1, and rows of up to this width stream
 * whole) and this many rows folded into them before they merge into the
 * accumulator array (blocked summation). */
#define CMX__RED_COLW 4096
#define CMX__RED_COLR 128
/* Rows shorter than this reduce many outputs per call (impl->rows). */
#define CMX__RED_SHORT 64

/* One (reduction kind, input dtype) instantiation. Reductions accumulate
 * into an accumulator array of `asz`-byte elements (float sums use double
 * accumulators fed by float lanes), then `store` writes the output dtype.
 * All functions combine into existing accumulator values, so partial
 * results of different threads merge with `merge`. */
typedef struct cmx__red_impl {
  size_t asz;  /* accumulator element size in bytes */
  bool direct; /* the accumulator has the output's layout and store is a
                  plain copy: the output buffer may serve as accumulator */
  /* acc[i] = identity, i < n. */
  void (*fill)(void* acc, int64_t n);
  /* *acc = op(*acc, reduction of the n contiguous elements at x). */
  void (*row)(void* acc, const void* x, int64_t n);
  /* Short rows (n < 16) of many outputs: acc[k * os] = op(acc[k * os],
   * reduction of the n contiguous elements at x + k * xs), k < nout; for
   * each output the same arithmetic as row. */
  void (*rows)(void* acc, int64_t os, const void* x, int64_t xs, int64_t nout,
               int64_t n);
  /* acc[j] = op(acc[j], reduction over r < nrows of row r's element j),
   * j < w <= CMX__RED_COLW, where row r starts at (T*)rows[r] + off. */
  void (*col)(void* acc, const char* const* rows, int nrows, int64_t off,
              int64_t w);
  /* Narrow columns of contiguous rows: acc[j] = op(acc[j], reduction over
   * r < nrows of x[r * w + j]), j < w, where w <= CMX__RED_COLW / 2 and
   * nrows <= (CMX__RED_COLW / w) * CMX__RED_COLR. Several rows at once
   * fill a full-width lane block, folded together at the end. */
  void (*fold)(void* acc, const void* x, int64_t nrows, int64_t w);
  /* acc[i] = op(acc[i], part[i]), i < n. */
  void (*merge)(void* acc, const void* part, int64_t n);
  /* out[i] = final(acc[i]) as the output dtype; count is the number of
   * elements reduced into each output (mean divides by it). */
  void (*store)(void* out, const void* acc, int64_t n, double count);
} cmx__red_impl;

/* The implementation of reduction `kind` (cmx__reduce_kind) for input dtype
 * dt, or NULL when the pair is not supported. */
const cmx__red_impl* cmx__reduce_impl(int kind, cmx_dtype dt);

/* A temporary row-major array holding `in` with its axes permuted by perm
 * (perm[i] is the input axis of result axis i; NULL: identity) converted to
 * dtype dt. NULL with the error set when memory runs out. The caller
 * releases it. */
cmx_array cmx__cpu_permuted_copy(cmx_array in, const int* perm, cmx_dtype dt);

/* A node viewing base's buffer (from its first element) with the given
 * shape and strides (elements), for strided copies inside kernels. */
cmx_array cmx__cpu_strided_view(cmx_array base, const int64_t* shape,
                                const int64_t* strides, int ndim);

/* An odometer over nd dims giving the input offset (and output offset). */
typedef struct {
  int nd;
  const int64_t *n, *is, *os;
  int64_t idx[CMX_MAX_NDIM];
  int64_t in, out;
} red_iter;

static inline void it_init(red_iter* it, int nd, const int64_t* n,
                           const int64_t* is, const int64_t* os,
                           int64_t start) {
  it->nd = nd, it->n = n, it->is = is, it->os = os;
  it->in = it->out = 0;
  for (int d = nd - 1; d >= 0; d--) {
    it->idx[d] = start % n[d];
    start /= n[d];
    it->in += it->idx[d] * is[d];
    if (os) it->out += it->idx[d] * os[d];
  }
}

static inline void it_next(red_iter* it) {
  for (int d = it->nd - 1; d >= 0; d--) {
    if (++it->idx[d] < it->n[d]) {
      it->in += it->is[d];
      if (it->os) it->out += it->os[d];
      return;
    }
    it->in -= (it->n[d] - 1) * it->is[d];
    if (it->os) it->out -= (it->n[d] - 1) * it->os[d];
    it->idx[d] = 0;
  }
}

/* Offset into a scratch buffer (4 KB longer than needed) of running
 * values ("lanes") that lie 2 KB from x modulo 4 KB. The column loops
 * store lanes and load the input in the same loop, and a load whose
 * address matches a pending store's in its low 12 bits waits for it (4K
 * aliasing). On the stack the lanes' distance from the input would depend
 * on where the stack fell: large inputs start on 2 MB, so their rows often
 * start on 4 KB (argmax over the middle axis of (1024, 2, 1024) ran
 * 1.14-1.20x slower once the caller's stack moved). */
static inline uintptr_t cmx__red_lanes_near(uintptr_t x, uintptr_t buf) {
  return (x + 2048 - buf) & 4095 & ~(uintptr_t)63;
}

#endif
