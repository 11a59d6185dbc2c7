/* The sort family on every device against the CPU (the GPU's kernels in
 * src/backend/cuda/sort.c): sort and argsort must equal the CPU's bytes
 * (stable ties, NaN last, -0.0 and 0.0 equal but kept, NaN payloads);
 * partition and argpartition must satisfy the contract around kth (the
 * CPU's quickselect and the GPU's full sort arrange the sides
 * differently); topk the multiset of the CPU's; searchsorted the CPU's
 * indices exactly.
 *
 * Rows of 1, 2, 31, 1024, 1025, 4097 (shared-memory rows, short rows
 * several to a block, radix rows of two tiles) and 2^20 (many tiles) along
 * the last, first and middle axes, in row-major, transposed and strided
 * layouts, every dtype, many ties and float specials; empty arrays. On a
 * machine without a GPU only the CPU's results are computed. test_sort.c
 * checks the CPU against a reference.
 */
#include "harness.h"

enum { OP_SORT, OP_ARGSORT, OP_PART, OP_ARGPART, OP_TOPK, OP_NUM };
static const char* const op_names[OP_NUM] = {"sort", "argsort", "partition",
                                             "argpartition", "topk"};

static cmx_status apply(int op, cmx_array a, int axis, int kth, cmx_stream s,
                        cmx_array* r) {
  switch (op) {
    case OP_SORT:
      return cmx_sort(r, a, &axis, s);
    case OP_ARGSORT:
      return cmx_argsort(r, a, &axis, s);
    case OP_PART:
      return cmx_partition(r, a, kth, &axis, s);
    case OP_ARGPART:
      return cmx_argpartition(r, a, kth, &axis, s);
    default:
      return cmx_topk(r, a, kth, &axis, s);
  }
}

/* ---------------- NumPy's order over host values ---------------- */
static int order_real(double a, double b) {
  if (a != a || b != b) return (a != a) - (b != b);
  return (a > b) - (a < b);
}
/* Element i of t against element j of u (complex: NaN classes last). */
static int order_at(const h_tensor* t, int64_t i, const h_tensor* u,
                    int64_t j) {
  if (!t->im) return order_real(t->re[i], u->re[j]);
  int ct = (t->re[i] != t->re[i]) * 2 + (t->im[i] != t->im[i]);
  int cu = (u->re[j] != u->re[j]) * 2 + (u->im[j] != u->im[j]);
  if (ct != cu) return ct < cu ? -1 : 1;
  int c = order_real(t->re[i], u->re[j]);
  return c ? c : order_real(t->im[i], u->im[j]);
}

/* The line geometry of a row-major shape along axis. */
typedef struct {
  int64_t n, inner, lines;
} geo;
static geo geo_of(const int64_t* shape, int nd, int axis) {
  geo g = {shape[axis], 1, 1};
  for (int d = 0; d < nd; d++) {
    if (d > axis) g.inner *= shape[d];
    if (d != axis) g.lines *= shape[d];
  }
  return g;
}
static int64_t at(const geo* g, int64_t line, int64_t i) {
  return (line / g->inner * g->n + i) * g->inner + line % g->inner;
}

/* ---------------- contract checks ---------------- */
static const h_tensor* g_sort_t;
static int cmp_pos(const void* a, const void* b) {
  return order_at(g_sort_t, *(const int64_t*)a, g_sort_t, *(const int64_t*)b);
}

/* got[lo, hi) of line L, sorted, equals sorted's same places. */
static bool same_multiset(const h_tensor* got, const h_tensor* sorted,
                          const geo* g, int64_t L, int64_t lo, int64_t hi,
                          const geo* gs, int64_t off) {
  int64_t* p = malloc((size_t)(hi - lo + 1) * sizeof(int64_t));
  for (int64_t i = lo; i < hi; i++) p[i - lo] = at(g, L, i);
  g_sort_t = got;
  qsort(p, (size_t)(hi - lo), sizeof(int64_t), cmp_pos);
  bool ok = true;
  for (int64_t i = lo; i < hi && ok; i++)
    ok = order_at(got, p[i - lo], sorted, at(gs, L, i + off)) == 0;
  free(p);
  return ok;
}

/* partition: got[kth] is the sorted element, the sides are the sorted
 * sides as multisets. */
static bool check_partition(const h_tensor* got, const h_tensor* sorted,
                            const geo* g, int64_t kth) {
  for (int64_t L = 0; L < g->lines; L++) {
    if (order_at(got, at(g, L, kth), sorted, at(g, L, kth)) != 0) return false;
    if (!same_multiset(got, sorted, g, L, 0, kth, g, 0) ||
        !same_multiset(got, sorted, g, L, kth + 1, g->n, g, 0))
      return false;
  }
  return true;
}

/* argpartition: a permutation of each line whose entry kth is argsort's
 * and that splits the (value, index) order there. */
static bool check_argpartition(const h_tensor* got, const h_tensor* x,
                               const h_tensor* argsorted, const geo* g,
                               int64_t kth) {
  char* seen = malloc((size_t)g->n + 1);
  bool ok = true;
  for (int64_t L = 0; L < g->lines && ok; L++) {
    memset(seen, 0, (size_t)g->n + 1);
    int64_t pk = (int64_t)got->re[at(g, L, kth)];
    ok = got->re[at(g, L, kth)] == argsorted->re[at(g, L, kth)];
    for (int64_t i = 0; i < g->n && ok; i++) {
      int64_t p = (int64_t)got->re[at(g, L, i)];
      ok = p >= 0 && p < g->n && !seen[p];
      if (!ok) break;
      seen[p] = 1;
      int c = order_at(x, at(g, L, p), x, at(g, L, pk));
      if (c == 0) c = (p > pk) - (p < pk);
      ok = i < kth ? c < 0 : i > kth ? c > 0 : c == 0;
    }
  }
  free(seen);
  return ok;
}

/* ---------------- inputs ---------------- */
/* Values with many ties; floats with NaN, +-inf, -0.0 and 0.0 mixed in. */
static h_tensor input(const int64_t* shape, int nd, cmx_dtype dt, uint64_t seed,
                      double spread) {
  bool fl = cmx_dtype_is_inexact(dt);
  h_tensor x = h_random(shape, nd, dt, -spread, spread, seed);
  uint64_t s = seed * 131 + 5;
  static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
  for (int64_t i = 0; fl && i < x.size; i++) {
    x.re[i] = h_round_to(floor(x.re[i] * 4) / 4, dt);
    if (x.im) x.im[i] = h_round_to(floor(x.im[i] * 2) / 2, dt);
    uint64_t r = h_rand_u64(&s) % 20;
    if (r < 5) x.re[i] = sp[r];
    if (x.im && h_rand_u64(&s) % 10 == 0) x.im[i] = sp[h_rand_u64(&s) % 5];
  }
  return x;
}

/* ---------------- one case ---------------- */
static void run_case(const h_tensor* x, h_layout lay, int axis) {
  char shs[96], what[256];
  snprintf(what, sizeof what, "%s %s axis %d %s", cmx_dtype_name(x->dtype),
           cmx__shape_str(x->shape, x->ndim, shs, sizeof shs), axis,
           h_layout_names[lay]);
  cmx_array a = h_array(x, lay);
  geo g = geo_of(x->shape, x->ndim, axis);
  int64_t kth = g.n / 2, k = g.n > 3 ? 3 : g.n;
  h_tensor want[OP_NUM];
  cmx_stream cpu = h_stream(0);
  for (int op = 0; op < OP_NUM; op++) {
    cmx_array r = NULL;
    memset(&want[op], 0, sizeof want[op]);
    if (g.n == 0 && (op == OP_PART || op == OP_ARGPART)) continue;
    OK(apply(op, a, axis, op == OP_TOPK ? (int)k : (int)kth, cpu, &r));
    want[op] = h_read_raw(r);
    cmx_array_release(r);
  }
  for (int dev = 1; dev < h_ndevices(); dev++) {
    char dn[32];
    h_device_name(dev, dn, sizeof dn);
    for (int op = 0; op < OP_NUM; op++) {
      if (g.n == 0 && (op == OP_PART || op == OP_ARGPART)) continue;
      char where[400];
      snprintf(where, sizeof where, "%s %s on %s", op_names[op], what, dn);
      cmx_array r = NULL;
      cmx_status st = apply(op, a, axis, op == OP_TOPK ? (int)k : (int)kth,
                            h_stream(dev), &r);
      if (st != CMX_OK) {
        CHECK_MSG(false, "%s: %s", where, cmx_last_error());
        continue;
      }
      if (h_gpu_skip_missing(&r, 1, where) || !h_gpu_eval(&r, 1, where)) {
        cmx_array_release(r);
        continue;
      }
      h_tensor got = h_read_raw(r);
      const h_tensor* w = &want[op];
      bool ok = got.size == w->size && got.dtype == w->dtype;
      size_t isz = cmx_dtype_size(got.dtype);
      if (ok && (op == OP_SORT || op == OP_ARGSORT))
        ok = memcmp(got.raw, w->raw, (size_t)got.size * isz) == 0;
      else if (ok && op == OP_PART)
        ok = check_partition(&got, &want[OP_SORT], &g, kth);
      else if (ok && op == OP_ARGPART)
        ok = check_argpartition(&got, x, &want[OP_ARGSORT], &g, kth);
      else if (ok) { /* topk: the last k of the sorted lines, any order */
        int64_t shp[CMX_MAX_NDIM];
        memcpy(shp, x->shape, sizeof shp);
        shp[axis] = k;
        geo gk = geo_of(shp, x->ndim, axis);
        for (int64_t L = 0; L < gk.lines && ok; L++)
          ok = same_multiset(&got, &want[OP_SORT], &gk, L, 0, k, &g, g.n - k);
      }
      CHECK_MSG(ok, "%s: differs from the cpu's (or breaks the contract)",
                where);
      h_free(&got);
      cmx_array_release(r);
    }
  }
  for (int op = 0; op < OP_NUM; op++) h_free(&want[op]);
  cmx_array_release(a);
}

/* ---------------- tests ---------------- */
/* Every dtype, row lengths up to 4097, the sorted axis last, first and in
 * the middle, three layouts. */
static void test_rows_axes_layouts(void) {
  static const int64_t lens[] = {1, 2, 31, 1024, 1025, 4097};
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++)
    for (int li = 0; li < 6; li++) {
      cmx_dtype dt = H_ALL[di];
      int64_t L = lens[li], other = L > 1000 ? 2 : 5;
      int64_t s_last[2] = {other, L}, s_first[2] = {L, other},
              s_mid[3] = {2, L, 3};
      h_tensor a = input(s_last, 2, dt, 3 + (uint64_t)li, 6);
      h_tensor b = input(s_first, 2, dt, 5 + (uint64_t)li, 6);
      h_tensor c = input(s_mid, 3, dt, 7 + (uint64_t)li, 6);
      for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
        run_case(&a, (h_layout)lay, 1);
        run_case(&b, (h_layout)lay, 0);
        run_case(&c, (h_layout)lay, 1);
      }
      h_free(&a);
      h_free(&b);
      h_free(&c);
    }
}

/* Rows of 2^20 (the radix sort over 256 tiles), several key widths, with
 * wide and narrow value ranges; two rows along axis 0 too. */
static void test_long_rows(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_INT64,     CMX_FLOAT16,
                                  CMX_UINT8,   CMX_COMPLEX64, CMX_FLOAT64,
                                  CMX_INT32,   CMX_BOOL};
  for (int di = 0; di < 8; di++) {
    int64_t n = 1 << 20;
    h_tensor x = input(&n, 1, dts[di], 41 + (uint64_t)di, 1e4);
    run_case(&x, H_CONTIG, 0);
    h_free(&x);
    if (di < 2) {
      int64_t s2[2] = {(1 << 20) + 3, 2};
      h_tensor y = input(s2, 2, dts[di], 43, 50);
      run_case(&y, H_TRANSPOSED, 0);
      h_free(&y);
    }
  }
}

/* Two keys only: stability decides every place. */
static void test_ties(void) {
  static const int64_t lens[] = {31, 4096, 70000};
  for (int li = 0; li < 3; li++)
    for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
      int64_t sh[2] = {3, lens[li]};
      h_tensor x = h_random(sh, 2, H_ALL[di], 0, 1, 9 + (uint64_t)di);
      for (int64_t i = 0; i < x.size; i++) {
        x.re[i] = floor(x.re[i] * 2) / 2;
        if (x.im) x.im[i] = 0;
      }
      run_case(&x, H_STRIDED, 1);
      h_free(&x);
    }
}

/* Empty arrays along and across the sorted axis. */
static void test_empty(void) {
  int64_t a[2] = {0, 5}, b[2] = {5, 0};
  for (int di = 0; di < 3; di++) {
    cmx_dtype dt = di == 0 ? CMX_FLOAT32 : di == 1 ? CMX_INT16 : CMX_COMPLEX64;
    h_tensor x = h_alloc(a, 2, dt), y = h_alloc(b, 2, dt);
    run_case(&x, H_CONTIG, 1);
    run_case(&x, H_CONTIG, 0);
    run_case(&y, H_CONTIG, 0);
    run_case(&y, H_TRANSPOSED, 1);
    h_free(&x);
    h_free(&y);
  }
}

/* searchsorted: both sides, every dtype, sequences of 0 to 1000 (strided
 * too), values in three layouts holding the sequence's own values. */
static void test_searchsorted(void) {
  static const int64_t lens[] = {0, 1, 7, 1000};
  cmx_stream cpu = h_stream(0);
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++)
    for (int li = 0; li < 4; li++) {
      cmx_dtype dt = H_ALL[di];
      int64_t n = lens[li], vs[2] = {9, 13};
      h_tensor raw = input(&n, 1, dt, 61 + (uint64_t)li, 5);
      h_tensor v = input(vs, 2, dt, 67 + (uint64_t)li, 6);
      for (int64_t i = 0; n && i < v.size; i += 2) {
        v.re[i] = raw.re[i % n];
        if (v.im) v.im[i] = raw.im[i % n];
      }
      cmx_array r0 = h_array(&raw, H_CONTIG), seq = NULL;
      int ax = 0;
      OK(cmx_sort(&seq, r0, &ax, cpu));
      h_tensor sorted = h_read(seq);
      for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
        cmx_array sa = h_array(&sorted, lay == 2 ? H_STRIDED : H_CONTIG);
        cmx_array va = h_array(&v, (h_layout)lay);
        for (int side = 0; side < 2; side++) {
          cmx_array w = NULL;
          OK(cmx_searchsorted(&w, sa, va, side, cpu));
          h_tensor want = h_read_raw(w);
          for (int dev = 1; dev < h_ndevices(); dev++) {
            char where[200], dn[32];
            snprintf(where, sizeof where,
                     "searchsorted %s n=%lld side %d %s "
                     "on %s",
                     cmx_dtype_name(dt), (long long)n, side,
                     h_layout_names[lay], h_device_name(dev, dn, sizeof dn));
            cmx_array r = NULL;
            OK(cmx_searchsorted(&r, sa, va, side, h_stream(dev)));
            if (!h_gpu_skip_missing(&r, 1, where) && h_gpu_eval(&r, 1, where)) {
              h_tensor got = h_read_raw(r);
              CHECK_MSG(
                  got.size == want.size &&
                      memcmp(got.raw, want.raw, (size_t)got.size * 4) == 0,
                  "%s: differs from the cpu's", where);
              h_free(&got);
            }
            cmx_array_release(r);
          }
          h_free(&want);
          cmx_array_release(w);
        }
        cmx_array_release(sa);
        cmx_array_release(va);
      }
      cmx_array_release(r0);
      cmx_array_release(seq);
      h_free(&raw);
      h_free(&sorted);
      h_free(&v);
    }
}

int main(void) {
  RUN(test_rows_axes_layouts);
  RUN(test_long_rows);
  RUN(test_ties);
  RUN(test_empty);
  RUN(test_searchsorted);
  return test_summary("test_sort_gpu");
}
