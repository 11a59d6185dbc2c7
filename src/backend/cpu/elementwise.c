/* The elementwise driver: layout collapse and parallel row iteration. */
#include "backend/cpu/cpu.h"

#define MAX_ARRAYS 8
#define GRAIN (1 << 15) /* elements per chunk worth a thread */

typedef struct {
  int ndim, narr;
  int64_t shape[CMX_MAX_NDIM];
  int64_t strides[MAX_ARRAYS][CMX_MAX_NDIM]; /* in elements */
  int64_t isz[MAX_ARRAYS];                   /* item sizes in bytes */
  char* base[MAX_ARRAYS];
  cmx__row_fn fn;
  const void* ctx;
} ew_plan;

/* Drops size-1 dims and merges dims that are jointly contiguous. */
static void collapse(ew_plan* p) {
  int nd = 0;
  for (int d = 0; d < p->ndim; d++) {
    if (p->shape[d] == 1) continue;
    p->shape[nd] = p->shape[d];
    for (int k = 0; k < p->narr; k++) p->strides[k][nd] = p->strides[k][d];
    nd++;
  }
  p->ndim = nd;
  if (nd <= 1) return;
  int w = 0;
  for (int d = 1; d < nd; d++) {
    bool merge = true;
    for (int k = 0; k < p->narr && merge; k++)
      merge = p->strides[k][w] == p->strides[k][d] * p->shape[d];
    if (merge)
      p->shape[w] *= p->shape[d];
    else
      p->shape[++w] = p->shape[d];
    for (int k = 0; k < p->narr; k++) p->strides[k][w] = p->strides[k][d];
  }
  p->ndim = w + 1;
}

/* One-dim case: a chunk [b, e) of the single row. */
static void run_flat(void* ctx, int64_t b, int64_t e) {
  const ew_plan* p = ctx;
  char* ptrs[MAX_ARRAYS];
  int64_t st[MAX_ARRAYS];
  for (int k = 0; k < p->narr; k++) {
    st[k] = p->ndim ? p->strides[k][0] : 0;
    ptrs[k] = p->base[k] + b * st[k] * p->isz[k];
  }
  p->fn(ptrs, st, e - b, p->ctx);
}

/* General case: rows [b, e) of the outer dims, one call of fn per row. */
static void run_rows(void* ctx, int64_t b, int64_t e) {
  const ew_plan* p = ctx;
  int outer = p->ndim - 1;
  int64_t idx[CMX_MAX_NDIM];
  int64_t rem = b;
  for (int d = outer - 1; d >= 0; d--) {
    idx[d] = rem % p->shape[d];
    rem /= p->shape[d];
  }
  char* ptrs[MAX_ARRAYS];
  int64_t st[MAX_ARRAYS];
  for (int k = 0; k < p->narr; k++) {
    int64_t off = 0;
    for (int d = 0; d < outer; d++) off += idx[d] * p->strides[k][d];
    ptrs[k] = p->base[k] + off * p->isz[k];
    st[k] = p->strides[k][outer];
  }
  int64_t inner = p->shape[outer];
  for (int64_t r = b; r < e; r++) {
    p->fn(ptrs, st, inner, p->ctx);
    for (int d = outer - 1; d >= 0; d--) {
      if (++idx[d] < p->shape[d]) {
        for (int k = 0; k < p->narr; k++)
          ptrs[k] += p->strides[k][d] * p->isz[k];
        break;
      }
      for (int k = 0; k < p->narr; k++)
        ptrs[k] -= (p->shape[d] - 1) * p->strides[k][d] * p->isz[k];
      idx[d] = 0;
    }
  }
}

void cmx__cpu_ew_run(cmx_array out, const cmx_array* ins, int nin,
                     cmx__row_fn fn, const void* ctx) {
  if (out->size == 0) return;
  CMX__ASSERT(nin + 1 <= MAX_ARRAYS);
  ew_plan p;
  p.ndim = out->ndim;
  p.narr = nin + 1;
  p.fn = fn;
  p.ctx = ctx;
  memcpy(p.shape, out->dims, (size_t)out->ndim * sizeof(int64_t));
  for (int k = 0; k < p.narr; k++) {
    cmx_array a = k == 0 ? out : ins[k - 1];
    CMX__ASSERT(a->ndim == out->ndim);
    memcpy(p.strides[k], CMX__STRIDES(a), (size_t)a->ndim * sizeof(int64_t));
    p.base[k] = cmx__node_ptr(a);
    p.isz[k] = (int64_t)cmx_dtype_size(a->dtype);
  }
  collapse(&p);
  if (p.ndim <= 1) {
    cmx__parallel_for(p.ndim ? p.shape[0] : 1, GRAIN, run_flat, &p);
    return;
  }
  int outer = p.ndim - 1;
  int64_t rows = 1;
  for (int d = 0; d < outer; d++) rows *= p.shape[d];
  int64_t inner = p.shape[outer];
  int64_t grain = inner >= GRAIN ? 1 : GRAIN / inner;
  cmx__parallel_for(rows, grain, run_rows, &p);
}

cmx_status cmx__cpu_ew_alloc(cmx_array out, const cmx_array* ins, int nin) {
  for (int i = 0; i < nin; i++) {
    cmx_array in = ins[i];
    if (cmx_dtype_size(in->dtype) != cmx_dtype_size(out->dtype) ||
        in->size != out->size || !(in->flags & CMX__FLAG_ROW_CONTIG))
      continue;
    if (cmx__can_donate(out, in)) return cmx_kernel_alloc_donate(out, in, NULL);
  }
  return cmx_kernel_alloc(out);
}
