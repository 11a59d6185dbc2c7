/* The Reduce kernel: layout planning and the parallel drivers.
 *
 * The input's dims (size 1 dropped) each get an input stride and an output
 * stride (0 for reduced dims). Reduced dims with negative strides are
 * flipped (order does not matter to a reduction), dims are sorted by input
 * stride (broadcast dims outermost) and adjacent dims of the same kind that
 * are jointly contiguous merge. The innermost dim then decides the case:
 *   row:    it is reduced with stride 1: contiguous rows reduce with lane
 *           accumulators (impl->row).
 *   column: it is kept with stride 1 in input and output: whole rows
 *           accumulate into a block of outputs (impl->col).
 *   other:  the input is copied to a row-major temporary first, which is
 *           always one of the two.
 * The remaining outer dims split into kept ones (which outputs) and reduced
 * ones (which rows feed each output). Work splits over the thread pool by
 * outputs when there are enough of them; otherwise (a full reduction, a few
 * long rows, a few wide columns) the reduced range splits into parts whose
 * partial results merge in a fixed order afterwards.
 */
#include "backend/cpu/reduce.h"

#include <stdlib.h>

#include "backend/cpu/kernels.h"
#include "primitives/reduce.h"

cmx_array cmx__cpu_strided_view(cmx_array base, const int64_t* shape,
                                const int64_t* strides, int ndim) {
  cmx_array v = cmx__node_new("view", shape, ndim, base->dtype);
  if (!v) return NULL;
  v->buf = cmx__buffer_retain(base->buf);
  v->offset = base->offset;
  v->data_size = base->data_size;
  if (ndim) memcpy(CMX__STRIDES(v), strides, (size_t)ndim * sizeof(int64_t));
  cmx__node_update_flags(v);
  return v;
}

cmx_array cmx__cpu_permuted_copy(cmx_array in, const int* perm, cmx_dtype dt) {
  int64_t shape[CMX_MAX_NDIM] = {0}, strides[CMX_MAX_NDIM] = {0};
  for (int i = 0; i < in->ndim; i++) {
    int p = perm ? perm[i] : i;
    shape[i] = in->dims[p];
    strides[i] = CMX__STRIDES(in)[p];
  }
  cmx_array v = cmx__cpu_strided_view(in, shape, strides, in->ndim);
  cmx_array t = v ? cmx__node_new("reduce", shape, in->ndim, dt) : NULL;
  if (!t || cmx_kernel_alloc(t) != CMX_OK) {
    cmx_array_release(v);
    cmx_array_release(t);
    return NULL;
  }
  cmx__cpu_copy_convert(t, v);
  cmx_array_release(v);
  return t;
}

/* ---------------- planning ---------------- */

typedef struct {
  const cmx__red_impl* impl;
  const char* x; /* input element 0 after flips */
  size_t isz, asz;
  char* acc; /* accumulator array, nout elements */
  int64_t nout;
  bool col;      /* column case (else row case) */
  int64_t inner; /* row length or column width */
  /* outer kept dims (input and output strides) and outer reduced dims */
  int nko, nro;
  int64_t ko_n[CMX_MAX_NDIM], ko_is[CMX_MAX_NDIM], ko_os[CMX_MAX_NDIM];
  int64_t ro_n[CMX_MAX_NDIM], ro_is[CMX_MAX_NDIM];
  int64_t nk, nr; /* products of ko_n and ro_n */
  /* split of the reduced range */
  int parts;
  char* partials;
  int64_t njb; /* column blocks per output row (column case) */
  bool fold;   /* column case with narrow contiguous rows (impl->fold) */
} plan_t;

/* Builds the plan of reducing `a` over axes into an output of row-major
 * layout. Returns false when the layout is neither case (copy first). */
static bool make_plan(plan_t* p, cmx_array a, const int32_t* axes, int naxes) {
  int nd = 0;
  int64_t n[CMX_MAX_NDIM + 1], is[CMX_MAX_NDIM + 1], os[CMX_MAX_NDIM + 1];
  bool red[CMX_MAX_NDIM + 1];
  bool isred[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < naxes; i++) isred[axes[i]] = true;
  /* output strides: row-major over the kept dims */
  int64_t ostr[CMX_MAX_NDIM], s = 1;
  for (int d = a->ndim - 1; d >= 0; d--) {
    ostr[d] = isred[d] ? 0 : s;
    if (!isred[d]) s *= a->dims[d];
  }
  const char* x = cmx__node_ptr(a);
  for (int d = 0; d < a->ndim; d++) {
    if (a->dims[d] == 1) continue;
    int64_t st = CMX__STRIDES(a)[d];
    if (st < 0) {
      if (!isred[d]) return false; /* a flipped kept dim: copy first */
      x += (a->dims[d] - 1) * st * (int64_t)p->isz;
      st = -st;
    }
    n[nd] = a->dims[d];
    is[nd] = st;
    os[nd] = ostr[d];
    red[nd] = isred[d];
    nd++;
  }
  if (nd == 0) { /* one element per output */
    n[0] = 1, is[0] = 1, os[0] = 0, red[0] = true;
    nd = 1;
  }
  /* stable sort by input stride, descending; stride 0 outermost */
  for (int i = 1; i < nd; i++) {
    int64_t tn = n[i], ti = is[i], to = os[i];
    bool tr = red[i];
    uint64_t key = ti == 0 ? UINT64_MAX : (uint64_t)ti;
    int j = i - 1;
    while (j >= 0 && (is[j] == 0 ? UINT64_MAX : (uint64_t)is[j]) < key) {
      n[j + 1] = n[j], is[j + 1] = is[j], os[j + 1] = os[j];
      red[j + 1] = red[j];
      j--;
    }
    n[j + 1] = tn, is[j + 1] = ti, os[j + 1] = to, red[j + 1] = tr;
  }
  /* merge jointly contiguous neighbours of the same kind */
  int w = 0;
  for (int d = 1; d < nd; d++) {
    if (red[w] == red[d] && is[w] == is[d] * n[d] && os[w] == os[d] * n[d]) {
      n[w] *= n[d];
      is[w] = is[d];
      os[w] = os[d];
    } else {
      w++;
      n[w] = n[d], is[w] = is[d], os[w] = os[d], red[w] = red[d];
    }
  }
  nd = w + 1;
  int last = nd - 1;
  if (red[last] && is[last] == 1)
    p->col = false;
  else if (!red[last] && is[last] == 1 && os[last] == 1)
    p->col = true;
  else
    return false;
  p->x = x;
  p->inner = n[last];
  p->nko = p->nro = 0;
  p->nk = p->nr = 1;
  for (int d = 0; d < last; d++) {
    if (red[d]) {
      p->ro_n[p->nro] = n[d];
      p->ro_is[p->nro++] = is[d];
      p->nr *= n[d];
    } else {
      p->ko_n[p->nko] = n[d];
      p->ko_is[p->nko] = is[d];
      p->ko_os[p->nko++] = os[d];
      p->nk *= n[d];
    }
  }
  /* narrow columns whose rows follow each other: fold several rows into
   * one lane block */
  p->fold = p->col && p->nro > 0 && p->ro_is[p->nro - 1] == p->inner &&
            p->inner * 2 <= CMX__RED_COLW;
  return true;
}

/* ---------------- row case ---------------- */

/* Outputs [b, e): every reduced row of each. */
static void row_outputs(void* ctx, int64_t b, int64_t e) {
  const plan_t* p = ctx;
  red_iter ko;
  it_init(&ko, p->nko, p->ko_n, p->ko_is, p->ko_os, b);
  for (int64_t k = b; k < e; k++, it_next(&ko)) {
    char* a = p->acc + ko.out * (int64_t)p->asz;
    red_iter ro;
    it_init(&ro, p->nro, p->ro_n, p->ro_is, NULL, 0);
    for (int64_t r = 0; r < p->nr; r++, it_next(&ro))
      p->impl->row(a, p->x + (ko.in + ro.in) * (int64_t)p->isz, p->inner);
  }
}

/* Short rows (inner < CMX__RED_SHORT): a call per row would cost several
 * times the row's own work, so impl->rows takes up to SHORT_CH outputs
 * along the last kept dim at once, for one reduced row position after
 * another (each output still sees its rows in order). Units [b, e): chunk
 * u % nch of the outputs along that dim, at position u / nch of the other
 * kept dims. */
#define SHORT_CH 2048
static void short_units(void* ctx, int64_t b, int64_t e) {
  const plan_t* p = ctx;
  int last = p->nko - 1;
  int64_t nl = p->ko_n[last], xs = p->ko_is[last], os = p->ko_os[last];
  int64_t nch = (nl + SHORT_CH - 1) / SHORT_CH;
  for (int64_t u = b; u < e; u++) {
    int64_t c0 = (u % nch) * SHORT_CH;
    int64_t cnt = nl - c0 < SHORT_CH ? nl - c0 : SHORT_CH;
    red_iter ko, ro;
    it_init(&ko, last, p->ko_n, p->ko_is, p->ko_os, u / nch);
    char* acc = p->acc + (ko.out + c0 * os) * (int64_t)p->asz;
    const char* x = p->x + (ko.in + c0 * xs) * (int64_t)p->isz;
    it_init(&ro, p->nro, p->ro_n, p->ro_is, NULL, 0);
    for (int64_t r = 0; r < p->nr; r++, it_next(&ro))
      p->impl->rows(acc, os, x + ro.in * (int64_t)p->isz, xs, cnt, p->inner);
  }
}

/* First element of part q of a range of `total` split into `parts`. */
static int64_t part_start(int64_t total, int parts, int64_t q) {
  int64_t base = total / parts, rem = total % parts;
  return q * base + (q < rem ? q : rem);
}

/* Parts [b, e) of the reduced range (rows x row length), for every output,
 * into the parts' partial accumulators (indexed by output number k). */
static void row_parts(void* ctx, int64_t b, int64_t e) {
  const plan_t* p = ctx;
  int64_t total = p->nr * p->inner;
  for (int64_t q = b; q < e; q++) {
    int64_t s = part_start(total, p->parts, q);
    int64_t end = part_start(total, p->parts, q + 1);
    red_iter ko;
    it_init(&ko, p->nko, p->ko_n, p->ko_is, p->ko_os, 0);
    for (int64_t k = 0; k < p->nk; k++, it_next(&ko)) {
      char* a = p->partials + (q * p->nk + k) * (int64_t)p->asz;
      int64_t cur = s, pos = s % p->inner;
      red_iter ro;
      it_init(&ro, p->nro, p->ro_n, p->ro_is, NULL, s / p->inner);
      while (cur < end) {
        int64_t seg = p->inner - pos < end - cur ? p->inner - pos : end - cur;
        p->impl->row(a, p->x + (ko.in + ro.in + pos) * (int64_t)p->isz, seg);
        cur += seg;
        pos = 0;
        it_next(&ro);
      }
    }
  }
}

/* ---------------- column case ---------------- */

/* Column blocks of the rows r in [r0, r1) of output row k (input offset
 * in0) into acc (the block's first output). */
static void col_block(const plan_t* p, char* acc, int64_t in0, int64_t j0,
                      int64_t r0, int64_t r1) {
  if (p->fold) { /* runs of contiguous rows along the last reduced dim */
    int64_t nl = p->ro_n[p->nro - 1], pos = r0 % nl;
    int64_t chunk = (CMX__RED_COLW / p->inner) * CMX__RED_COLR;
    red_iter ro;
    it_init(&ro, p->nro - 1, p->ro_n, p->ro_is, NULL, r0 / nl);
    for (int64_t r = r0; r < r1; pos = 0, it_next(&ro)) {
      int64_t run = nl - pos < r1 - r ? nl - pos : r1 - r;
      const char* x = p->x + (in0 + ro.in + pos * p->inner) * (int64_t)p->isz;
      for (int64_t c = 0; c < run; c += chunk)
        p->impl->fold(acc, x + c * p->inner * (int64_t)p->isz,
                      run - c < chunk ? run - c : chunk, p->inner);
      r += run;
    }
    return;
  }
  int64_t w = p->inner - j0 < CMX__RED_COLW ? p->inner - j0 : CMX__RED_COLW;
  const char* rows[CMX__RED_COLR];
  red_iter ro;
  it_init(&ro, p->nro, p->ro_n, p->ro_is, NULL, r0);
  for (int64_t r = r0; r < r1;) {
    int nrows = 0;
    for (; nrows < CMX__RED_COLR && r < r1; nrows++, r++, it_next(&ro))
      rows[nrows] = p->x + (in0 + ro.in) * (int64_t)p->isz;
    p->impl->col(acc, rows, nrows, j0, w);
  }
}

/* Units [b, e), a unit being one column block of one output row. */
static void col_units(void* ctx, int64_t b, int64_t e) {
  const plan_t* p = ctx;
  for (int64_t u = b; u < e; u++) {
    int64_t k = u / p->njb, j0 = (u % p->njb) * CMX__RED_COLW;
    red_iter ko;
    it_init(&ko, p->nko, p->ko_n, p->ko_is, p->ko_os, k);
    col_block(p, p->acc + (ko.out + j0) * (int64_t)p->asz, ko.in, j0, 0, p->nr);
  }
}

/* Parts [b, e) of the reduced rows, every unit, into the parts' private
 * accumulator arrays (nout elements each). */
static void col_parts(void* ctx, int64_t b, int64_t e) {
  const plan_t* p = ctx;
  for (int64_t q = b; q < e; q++) {
    int64_t r0 = part_start(p->nr, p->parts, q);
    int64_t r1 = part_start(p->nr, p->parts, q + 1);
    char* base = p->partials + q * p->nout * (int64_t)p->asz;
    red_iter ko;
    it_init(&ko, p->nko, p->ko_n, p->ko_is, p->ko_os, 0);
    for (int64_t k = 0; k < p->nk; k++, it_next(&ko))
      for (int64_t j0 = 0; j0 < p->inner; j0 += CMX__RED_COLW)
        col_block(p, base + (ko.out + j0) * (int64_t)p->asz, ko.in, j0, r0, r1);
  }
}

/* ---------------- driver ---------------- */

/* Units [0, n) of fn, each about `per` elements of work: on the calling
 * thread when serial, else over the pool in chunks worth a thread. */
static void for_units(plan_t* p, int64_t n, int64_t per, bool serial,
                      void (*fn)(void*, int64_t, int64_t)) {
  if (serial) {
    fn(p, 0, n);
    return;
  }
  cmx__parallel_for(n, per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per, fn, p);
}

/* Runs the plan into p->acc (already holding identities). */
static cmx_status run_plan(plan_t* p) {
  int threads = cmx__pool_threads();
  int64_t total = p->nk * p->nr * p->inner;
  bool serial = threads == 1 || total < 2 * CMX__RED_GRAIN;
  if (!p->col) {
    if (p->inner < CMX__RED_SHORT && p->nko > 0 &&
        (serial || p->nk >= 4 * threads)) {
      int64_t nl = p->ko_n[p->nko - 1];
      int64_t units = p->nk / nl * ((nl + SHORT_CH - 1) / SHORT_CH);
      int64_t per = (nl < SHORT_CH ? nl : SHORT_CH) * p->nr * p->inner;
      for_units(p, units, per, serial, short_units);
      return CMX_OK;
    }
    if (serial || p->nk >= 4 * threads) {
      for_units(p, p->nk, p->nr * p->inner, serial, row_outputs);
      return CMX_OK;
    }
    p->parts = threads;
    size_t bytes = (size_t)(p->parts * p->nk) * p->asz;
    p->partials = malloc(bytes);
    if (!p->partials)
      return cmx__error(CMX_ERR_MEMORY, "[Reduce] out of host memory");
    p->impl->fill(p->partials, p->parts * p->nk);
    cmx__parallel_for(p->parts, 1, row_parts, p);
    red_iter ko;
    for (int q = 0; q < p->parts; q++) {
      it_init(&ko, p->nko, p->ko_n, p->ko_is, p->ko_os, 0);
      for (int64_t k = 0; k < p->nk; k++, it_next(&ko))
        p->impl->merge(p->acc + ko.out * (int64_t)p->asz,
                       p->partials + (q * p->nk + k) * (int64_t)p->asz, 1);
    }
    free(p->partials);
    return CMX_OK;
  }
  p->njb = (p->inner + CMX__RED_COLW - 1) / CMX__RED_COLW;
  int64_t units = p->nk * p->njb;
  if (serial || units >= 4 * threads || p->nr < 2 * threads) {
    int64_t w = p->inner < CMX__RED_COLW ? p->inner : CMX__RED_COLW;
    for_units(p, units, p->nr * w, serial, col_units);
    return CMX_OK;
  }
  p->parts = threads;
  p->partials = malloc((size_t)(p->parts * p->nout) * p->asz);
  if (!p->partials)
    return cmx__error(CMX_ERR_MEMORY, "[Reduce] out of host memory");
  p->impl->fill(p->partials, p->parts * p->nout);
  cmx__parallel_for(p->parts, 1, col_parts, p);
  for (int q = 0; q < p->parts; q++)
    p->impl->merge(p->acc, p->partials + q * p->nout * (int64_t)p->asz,
                   p->nout);
  free(p->partials);
  return CMX_OK;
}

typedef struct {
  const cmx__red_impl* impl;
  char* dst;
  const char* src;
  size_t osz, asz;
  double count;
} store_ctx;

static void store_range(void* ctx, int64_t b, int64_t e) {
  const store_ctx* c = ctx;
  c->impl->store(c->dst + b * (int64_t)c->osz, c->src + b * (int64_t)c->asz,
                 e - b, c->count);
}

CMX__KERNEL(cmx__cpu_reduce) {
  (void)nin;
  (void)nout;
  const cmx__reduce_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  const cmx__red_impl* impl = cmx__reduce_impl(q->kind, a->dtype);
  if (!impl)
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            cmx__reduce_kind_name(q->kind),
                            cmx_dtype_name(a->dtype));
  double count;
  cmx_status st = cmx__reduce_count(q, a, o, &count);
  if (st != CMX_OK) return st;
  st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  plan_t plan;
  memset(&plan, 0, sizeof plan);
  plan.impl = impl;
  plan.isz = cmx_dtype_size(a->dtype);
  plan.asz = impl->asz;
  plan.nout = o->size;
  plan.acc =
      impl->direct ? cmx__node_ptr(o) : malloc((size_t)o->size * impl->asz);
  if (!plan.acc)
    return cmx_kernel_error(CMX_ERR_MEMORY, "[Reduce] out of host memory");
  impl->fill(plan.acc, o->size);
  cmx_array tmp = NULL;
  if (a->size > 0) {
    if (!make_plan(&plan, a, q->axes, q->naxes)) {
      tmp = cmx__cpu_permuted_copy(a, NULL, a->dtype);
      if (!tmp)
        st = cmx_last_status();
      else
        CMX__ASSERT(make_plan(&plan, tmp, q->axes, q->naxes));
    }
    if (st == CMX_OK) st = run_plan(&plan);
  }
  if (st == CMX_OK && !impl->direct) {
    store_ctx sc = {impl,      cmx__node_ptr(o),
                    plan.acc,  cmx_dtype_size(o->dtype),
                    impl->asz, count};
    cmx__parallel_for(o->size, CMX__RED_GRAIN, store_range, &sc);
  }
  if (!impl->direct) free(plan.acc);
  cmx_array_release(tmp);
  return st;
}
