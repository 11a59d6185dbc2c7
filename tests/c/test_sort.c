/* Sort family: sort, argsort, partition, argpartition, topk, searchsorted.
 *
 * Every op runs over the standard shapes plus shapes that reach each
 * algorithm (quicksort rows, in-cache radix rows, multi-pass radix rows, a
 * parallel single row), every axis (negative too) and the flattened form,
 * every dtype, and three layouts (row-major, transposed, strided). Inputs
 * hold many equal keys, and floats hold NaN, +-inf, -0.0 and 0.0. The
 * reference is a plain stable merge sort over the logical values in double
 * precision with NumPy's order (NaN last, -0.0 == 0.0, complex by real
 * then imaginary part with NaN classes last); sort and argsort must match
 * it exactly (bits of -0.0 and index order of ties included). Partitions
 * are checked by their defining property, topk as a multiset. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

/* ---------------- reference order ---------------- */
static int cmp_real(double a, double b) {
  bool na = a != a, nb = b != b;
  if (na || nb) return na - nb;
  return a < b ? -1 : a > b;
}

/* NumPy's complex order: no NaN < imag NaN < real NaN < both NaN; within a
 * class by the parts that are numbers. Element i of ta against j of tb. */
static int cmp2(const h_tensor* ta, int64_t i, const h_tensor* tb, int64_t j) {
  if (!ta->im) return cmp_real(ta->re[i], tb->re[j]);
  double ar = ta->re[i], ai = ta->im[i], br = tb->re[j], bi = tb->im[j];
  int ca = (ar != ar) * 2 + (ai != ai), cb = (br != br) * 2 + (bi != bi);
  if (ca != cb) return ca < cb ? -1 : 1;
  int c = cmp_real(ar, br);
  return c ? c : cmp_real(ai, bi);
}
static int cmp_val(const h_tensor* t, int64_t i, int64_t j) {
  return cmp2(t, i, t, j);
}

static const h_tensor* g_t; /* the tensor merge_sort compares */

/* Stable merge sort of the flat indices idx[0, n) of g_t. */
static void merge_sort(int64_t* idx, int64_t* tmp, int64_t n) {
  if (n < 2) return;
  int64_t h = n / 2;
  merge_sort(idx, tmp, h);
  merge_sort(idx + h, tmp, n - h);
  int64_t i = 0, j = h, k = 0;
  while (i < h && j < n)
    tmp[k++] = cmp_val(g_t, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, (size_t)n * sizeof(int64_t));
}

/* Lines along an axis of a row-major shape: line L, element i -> flat. */
typedef struct {
  int64_t outer, n, inner, lines;
} lines_t;
static lines_t lines_of(const int64_t* shape, int nd, int axis) {
  lines_t l = {1, nd ? shape[axis] : 1, 1, 0};
  for (int d = 0; d < nd; d++) {
    if (d < axis) l.outer *= shape[d];
    if (d > axis) l.inner *= shape[d];
  }
  l.lines = l.outer * l.inner;
  return l;
}
static int64_t flat(const lines_t* l, int64_t line, int64_t i) {
  return (line / l->inner * l->n + i) * l->inner + line % l->inner;
}

/* Same value, bit for bit in sign of zero and NaN-ness. */
static bool same(double a, double b) {
  if (a != a || b != b) return a != a && b != b;
  return a == b && signbit(a) == signbit(b);
}
static bool same_at(const h_tensor* g, int64_t gi, const h_tensor* w,
                    int64_t wi) {
  return same(g->re[gi], w->re[wi]) && (!g->im || same(g->im[gi], w->im[wi]));
}

/* ---------------- inputs ---------------- */
/* Random values with many ties; floats get specials sprinkled in. */
static h_tensor make_input(const int64_t* shape, int nd, cmx_dtype dt,
                           uint64_t seed, bool specials) {
  bool fl = cmx_dtype_is_inexact(dt);
  h_tensor x = h_random(shape, nd, dt, fl ? -4 : -6, fl ? 4 : 6, seed);
  uint64_t s = seed * 31 + 7;
  for (int64_t i = 0; i < x.size; i++) {
    if (fl) { /* ties: quarter steps */
      x.re[i] = h_round_to(floor(x.re[i] * 4) / 4, dt);
      if (x.im) x.im[i] = h_round_to(floor(x.im[i] * 2) / 2, dt);
    }
    if (!fl || !specials) continue;
    uint64_t r = h_rand_u64(&s) % 16;
    static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
    if (r < 5) x.re[i] = sp[r];
    if (x.im && h_rand_u64(&s) % 8 == 0) x.im[i] = sp[h_rand_u64(&s) % 5];
  }
  return x;
}

/* ---------------- checks ---------------- */
typedef struct {
  int nd;
  int64_t dims[4];
} shape_t;

static const shape_t extra_shapes[] = {
    {2, {3, 1000}}, {2, {1000, 3}}, {3, {2, 300, 2}}, {1, {193}}, {1, {65537}}};
#define N_EXTRA ((int)(sizeof extra_shapes / sizeof extra_shapes[0]))

static const shape_t* shape_at(int i) {
  static shape_t tmp;
  if (i < H_NUM_SHAPES) {
    tmp.nd = h_shapes[i].ndim;
    memcpy(tmp.dims, h_shapes[i].dims, sizeof tmp.dims);
    return &tmp;
  }
  return &extra_shapes[i - H_NUM_SHAPES];
}

/* want: the stable sort (values and argsort indices) of x along axis
 * (axis < 0: flattened). */
static void ref_sort(const h_tensor* x, int axis, h_tensor* vals,
                     h_tensor* idx) {
  int64_t fshape[1] = {x->size};
  const int64_t* shape = axis < 0 ? fshape : x->shape;
  int nd = axis < 0 ? 1 : x->ndim;
  int ax = axis < 0 ? 0 : axis;
  *vals = h_alloc(shape, nd, x->dtype);
  *idx = h_alloc(shape, nd, CMX_UINT32);
  lines_t l = lines_of(shape, nd, ax);
  int64_t* ix = malloc((size_t)(l.n + 1) * sizeof(int64_t));
  int64_t* tmp = malloc((size_t)(l.n + 1) * sizeof(int64_t));
  g_t = x;
  for (int64_t L = 0; L < l.lines; L++) {
    for (int64_t i = 0; i < l.n; i++) ix[i] = flat(&l, L, i);
    merge_sort(ix, tmp, l.n);
    for (int64_t i = 0; i < l.n; i++) {
      int64_t o = flat(&l, L, i);
      vals->re[o] = x->re[ix[i]];
      if (vals->im) vals->im[o] = x->im[ix[i]];
      /* position along the axis of the source element */
      idx->re[o] = (double)((ix[i] / l.inner) % l.n);
    }
  }
  free(ix);
  free(tmp);
}

static bool exact(const h_tensor* got, const h_tensor* want, const char* what) {
  if (got->size < 0 || got->dtype != want->dtype || got->ndim != want->ndim ||
      got->size != want->size) {
    fprintf(stderr, "FAIL %s: result %s (dtype %s)\n", what,
            got->size < 0 ? cmx_last_error() : "of wrong shape or dtype",
            cmx_dtype_name(got->dtype));
    return false;
  }
  for (int64_t i = 0; i < got->size; i++)
    if (!same_at(got, i, want, i)) {
      fprintf(stderr, "FAIL %s: element %lld got %g%+gj want %g%+gj\n", what,
              (long long)i, got->re[i], got->im ? got->im[i] : 0.0, want->re[i],
              want->im ? want->im[i] : 0.0);
      return false;
    }
  return true;
}

/* The partition property of got (values) against the sorted reference:
 * got[kth] is the sorted element, and the elements before / after form the
 * same multisets as the sorted ones. */
static bool check_partition(const h_tensor* got, const h_tensor* sorted,
                            const lines_t* l, int64_t kth, const char* what) {
  if (got->size != sorted->size || got->dtype != sorted->dtype) {
    fprintf(stderr, "FAIL %s: %s\n", what, cmx_last_error());
    return false;
  }
  int64_t* ix = malloc((size_t)(l->n + 1) * sizeof(int64_t));
  int64_t* tmp = malloc((size_t)(l->n + 1) * sizeof(int64_t));
  bool ok = true;
  g_t = got;
  for (int64_t L = 0; L < l->lines && ok; L++) {
    int64_t k = flat(l, L, kth);
    ok = cmp2(got, k, sorted, k) == 0;
    /* sort each side of got and compare with the sorted reference */
    for (int part = 0; part < 2 && ok; part++) {
      int64_t b = part ? kth + 1 : 0, e = part ? l->n : kth;
      for (int64_t i = b; i < e; i++) ix[i - b] = flat(l, L, i);
      merge_sort(ix, tmp, e - b);
      for (int64_t i = b; i < e && ok; i++) {
        int64_t w = flat(l, L, i);
        ok = cmp2(got, ix[i - b], sorted, w) == 0;
      }
    }
    if (!ok)
      fprintf(stderr, "FAIL %s: line %lld is not partitioned at %lld\n", what,
              (long long)L, (long long)kth);
  }
  free(ix);
  free(tmp);
  return ok;
}

/* argpartition: a permutation of the line whose entry kth is argsort's
 * entry kth and that splits the (value, index) order there. */
static bool check_argpartition(const h_tensor* got, const h_tensor* x,
                               const h_tensor* argsorted, const lines_t* l,
                               int64_t kth, const char* what) {
  if (got->size != argsorted->size || got->dtype != CMX_UINT32) {
    fprintf(stderr, "FAIL %s: %s\n", what, cmx_last_error());
    return false;
  }
  char* seen = malloc((size_t)l->n + 1);
  bool ok = true;
  for (int64_t L = 0; L < l->lines && ok; L++) {
    memset(seen, 0, (size_t)l->n + 1);
    int64_t kk = flat(l, L, kth);
    int64_t pk = (int64_t)got->re[kk];
    ok = got->re[kk] == argsorted->re[kk];
    for (int64_t i = 0; i < l->n && ok; i++) {
      int64_t p = (int64_t)got->re[flat(l, L, i)];
      ok = p >= 0 && p < l->n && !seen[p];
      if (!ok) break;
      seen[p] = 1;
      int c = cmp_val(x, flat(l, L, p), flat(l, L, pk));
      if (c == 0) c = p < pk ? -1 : p > pk;
      ok = i < kth ? c < 0 : i > kth ? c > 0 : c == 0;
    }
    if (!ok)
      fprintf(stderr, "FAIL %s: line %lld is not arg-partitioned at %lld\n",
              what, (long long)L, (long long)kth);
  }
  free(seen);
  return ok;
}

static void test_sort_all(void) {
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    for (int si = 0; si < H_NUM_SHAPES + N_EXTRA; si++) {
      const shape_t* sh = shape_at(si);
      h_tensor x =
          make_input(sh->dims, sh->nd, dt, (uint64_t)si * 13 + di, si % 2 == 0);
      for (int axi = -1; axi < 2 * sh->nd; axi++) {
        /* axi -1: flattened; then axes 0..nd-1 and -nd..-1 */
        int axis = axi < sh->nd ? axi : axi - 2 * sh->nd;
        int norm = axi < 0 ? -1 : (axis < 0 ? axis + sh->nd : axis);
        h_tensor wv, wi;
        ref_sort(&x, norm, &wv, &wi);
        int64_t fshape[1] = {x.size};
        lines_t l =
            norm < 0 ? lines_of(fshape, 1, 0) : lines_of(x.shape, x.ndim, norm);
        for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
          if (lay == H_TRANSPOSED && sh->nd < 2) continue;
          if (lay == H_STRIDED && sh->nd < 1) continue;
          char what[256], ss[64], as[16];
          snprintf(as, sizeof as, "%d", axis);
          snprintf(what, sizeof what, "%s %s axis %s %s", cmx_dtype_name(dt),
                   cmx__shape_str(sh->dims, sh->nd, ss, sizeof ss),
                   axi < 0 ? "None" : as, h_layout_names[lay]);
          cmx_array a = h_array(&x, (h_layout)lay), r = NULL;
          const int* ap = axi < 0 ? NULL : &axis;
          OK(cmx_sort(&r, a, ap, S));
          h_tensor g = h_read(r);
          CHECK(exact(&g, &wv, what));
          h_free(&g);
          cmx_array_release(r);
          OK(cmx_argsort(&r, a, ap, S));
          g = h_read(r);
          CHECK(exact(&g, &wi, what));
          h_free(&g);
          cmx_array_release(r);
          if (l.n > 0) {
            int64_t kths[3] = {0, l.n / 2, l.n - 1};
            for (int ki = 0; ki < 3; ki++) {
              /* also as a negative kth */
              int kth = ki == 2 ? -1 : (int)kths[ki];
              OK(cmx_partition(&r, a, kth, ap, S));
              g = h_read(r);
              CHECK(check_partition(&g, &wv, &l, kths[ki], what));
              h_free(&g);
              cmx_array_release(r);
              OK(cmx_argpartition(&r, a, kth, ap, S));
              g = h_read(r);
              CHECK(check_argpartition(&g, &x, &wi, &l, kths[ki], what));
              h_free(&g);
              cmx_array_release(r);
            }
          }
          cmx_array_release(a);
        }
        h_free(&wv);
        h_free(&wi);
      }
      h_free(&x);
    }
  }
}

/* One long row sorts on the thread pool (value and index paths). */
static void test_large_rows(void) {
  const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_INT64, CMX_FLOAT16,
                           CMX_UINT8};
  for (int di = 0; di < 5; di++) {
    for (int sp = 0; sp < 2; sp++) {
      if (sp && !cmx_dtype_is_inexact(dts[di])) continue;
      int64_t n = (1 << 20) + 4097;
      h_tensor x = h_random(&n, 1, dts[di], -1e4, 1e4, 99 + di);
      if (sp) /* NaN and -0.0 take the index path */
        for (int64_t i = 0; i < n; i += 1001) x.re[i] = i % 2 ? NAN : -0.0;
      h_tensor wv, wi;
      ref_sort(&x, 0, &wv, &wi);
      cmx_array a = h_array(&x, H_CONTIG), r = NULL;
      int axis = 0;
      OK(cmx_sort(&r, a, &axis, S));
      h_tensor g = h_read(r);
      CHECK(exact(&g, &wv, "large sort"));
      h_free(&g);
      cmx_array_release(r);
      OK(cmx_argsort(&r, a, NULL, S));
      g = h_read(r);
      CHECK(exact(&g, &wi, "large argsort"));
      h_free(&g);
      cmx_array_release(r);
      lines_t l = lines_of(&n, 1, 0);
      OK(cmx_partition(&r, a, (int)(n / 3), &axis, S));
      g = h_read(r);
      CHECK(check_partition(&g, &wv, &l, n / 3, "large partition"));
      h_free(&g);
      cmx_array_release(r);
      cmx_array_release(a);
      h_free(&x);
      h_free(&wv);
      h_free(&wi);
    }
  }
}

/* Large rows with skewed keys: few distinct values (groups of equal keys
 * far above the in-cache size), and two clusters whose top key bits agree
 * (the multi-pass MSD path below the top pass). */
static void test_skewed_rows(void) {
  int64_t n = (1 << 20) + 3;
  for (int kind = 0; kind < 2; kind++) {
    cmx_dtype dt = kind ? CMX_INT64 : CMX_FLOAT32;
    h_tensor x = h_random(&n, 1, dt, 0, 1048575, 21 + kind);
    for (int64_t i = 0; i < n; i++)
      x.re[i] = kind ? (double)((i % 2) << 40) + x.re[i]
                     : (double)((int64_t)x.re[i] % 3);
    h_tensor wv, wi;
    ref_sort(&x, 0, &wv, &wi);
    cmx_array a = h_array(&x, H_CONTIG), r = NULL;
    OK(cmx_sort(&r, a, NULL, S));
    h_tensor g = h_read(r);
    CHECK(exact(&g, &wv, "skewed sort"));
    h_free(&g);
    cmx_array_release(r);
    OK(cmx_argsort(&r, a, NULL, S));
    g = h_read(r);
    CHECK(exact(&g, &wi, "skewed argsort"));
    h_free(&g);
    cmx_array_release(r);
    lines_t l = lines_of(&n, 1, 0);
    int64_t kths[4] = {0, 5, n / 2, n - 1};
    for (int ki = 0; ki < 4; ki++) {
      OK(cmx_partition(&r, a, (int)kths[ki], NULL, S));
      g = h_read(r);
      CHECK(check_partition(&g, &wv, &l, kths[ki], "skewed partition"));
      h_free(&g);
      cmx_array_release(r);
      OK(cmx_argpartition(&r, a, (int)kths[ki], NULL, S));
      g = h_read(r);
      CHECK(
          check_argpartition(&g, &x, &wi, &l, kths[ki], "skewed argpartition"));
      h_free(&g);
      cmx_array_release(r);
    }
    cmx_array_release(a);
    h_free(&x);
    h_free(&wv);
    h_free(&wi);
  }
}

/* Partitions of ordered inputs (sorted, reversed, organ pipe, sawtooth,
 * constant) large enough for the branch-free selection. */
static void test_partition_patterns(void) {
  int64_t n = 20011;
  for (int pat = 0; pat < 5; pat++) {
    h_tensor x = h_alloc(&n, 1, CMX_INT32);
    for (int64_t i = 0; i < n; i++)
      x.re[i] = pat == 0   ? (double)i
                : pat == 1 ? (double)(n - i)
                : pat == 2 ? (double)(i < n / 2 ? i : n - i)
                : pat == 3 ? (double)(i % 97)
                           : 7.0;
    h_tensor wv, wi;
    ref_sort(&x, 0, &wv, &wi);
    lines_t l = lines_of(&n, 1, 0);
    cmx_array a = h_array(&x, H_CONTIG), r = NULL;
    int64_t kths[5] = {0, 1, n / 3, n - 2, n - 1};
    for (int ki = 0; ki < 5; ki++) {
      char what[64];
      snprintf(what, sizeof what, "pattern %d kth %lld", pat,
               (long long)kths[ki]);
      OK(cmx_partition(&r, a, (int)kths[ki], NULL, S));
      h_tensor g = h_read(r);
      CHECK(check_partition(&g, &wv, &l, kths[ki], what));
      h_free(&g);
      cmx_array_release(r);
      OK(cmx_argpartition(&r, a, (int)kths[ki], NULL, S));
      g = h_read(r);
      CHECK(check_argpartition(&g, &x, &wi, &l, kths[ki], what));
      h_free(&g);
      cmx_array_release(r);
    }
    cmx_array_release(a);
    h_free(&x);
    h_free(&wv);
    h_free(&wi);
  }
}

/* Stability with very many equal keys, all key widths. */
static void test_stability(void) {
  const cmx_dtype dts[] = {CMX_BOOL,    CMX_INT16,     CMX_UINT32,
                           CMX_FLOAT64, CMX_COMPLEX64, CMX_BFLOAT16};
  for (int di = 0; di < 6; di++) {
    int64_t shape[2] = {3, 5000};
    h_tensor x = h_random(shape, 2, dts[di], 0, 1, 5 + di);
    for (int64_t i = 0; i < x.size; i++) { /* two keys only */
      x.re[i] = floor(x.re[i] * 2) / 2;
      if (x.im) x.im[i] = floor(x.im[i] * 2) / 2;
    }
    h_tensor wv, wi;
    ref_sort(&x, 1, &wv, &wi);
    cmx_array a = h_array(&x, H_STRIDED), r = NULL;
    int axis = -1;
    OK(cmx_argsort(&r, a, &axis, S));
    h_tensor g = h_read(r);
    CHECK(exact(&g, &wi, "stability"));
    h_free(&g);
    cmx_array_release(r);
    cmx_array_release(a);
    h_free(&x);
    h_free(&wv);
    h_free(&wi);
  }
}

/* 64-bit integers at their extremes (beyond double precision). */
static void test_int64_extremes(void) {
  int64_t v[8] = {INT64_MAX,     -1, INT64_MIN,     0,
                  INT64_MAX - 1, 1,  INT64_MIN + 1, -2};
  int64_t want[8] = {INT64_MIN, INT64_MIN + 1, -2,       -1, 0,
                     1,         INT64_MAX - 1, INT64_MAX};
  uint64_t u[6] = {UINT64_MAX,     0, (uint64_t)1 << 63,
                   UINT64_MAX - 1, 1, ((uint64_t)1 << 63) - 1};
  uint64_t uw[6] = {
      0,         1, ((uint64_t)1 << 63) - 1, (uint64_t)1 << 63, UINT64_MAX - 1,
      UINT64_MAX};
  int64_t n = 8, m = 6;
  cmx_array a, b, r;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_INT64));
  OK(cmx_array_from_data(&b, u, &m, 1, CMX_UINT64));
  int64_t got[8];
  OK(cmx_sort(&r, a, NULL, S));
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(memcmp(got, want, sizeof got) == 0);
  cmx_array_release(r);
  uint64_t ug[6];
  OK(cmx_sort(&r, b, NULL, S));
  OK(cmx_array_copy_to(r, ug, sizeof ug));
  CHECK(memcmp(ug, uw, sizeof ug) == 0);
  cmx_array_release(r);
  /* topk of the largest two (any order) */
  OK(cmx_topk(&r, b, 2, NULL, S));
  OK(cmx_array_copy_to(r, ug, 2 * sizeof(uint64_t)));
  CHECK((ug[0] == UINT64_MAX && ug[1] == UINT64_MAX - 1) ||
        (ug[1] == UINT64_MAX && ug[0] == UINT64_MAX - 1));
  cmx_array_release_all((cmx_array[]){a, b, r}, 3);
}

static void test_topk(void) {
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    int64_t shape[3] = {3, 17, 4};
    h_tensor x = make_input(shape, 3, dt, 77 + di, true);
    for (int axis = -3; axis < 3; axis++) {
      int norm = axis < 0 ? axis + 3 : axis;
      h_tensor wv, wi;
      ref_sort(&x, norm, &wv, &wi);
      lines_t l = lines_of(shape, 3, norm);
      for (int k = 0; k <= (int)l.n; k += (int)l.n > 4 ? 3 : 1) {
        cmx_array a = h_array(&x, H_TRANSPOSED), r = NULL;
        OK(cmx_topk(&r, a, k, &axis, S));
        h_tensor g = h_read(r);
        CHECK(g.size == l.lines * k && g.shape[norm] == k);
        /* sort the result along the axis: it must be the last k sorted */
        int64_t oshape[3] = {shape[0], shape[1], shape[2]};
        oshape[norm] = k;
        lines_t lk = lines_of(oshape, 3, norm);
        int64_t* ix = malloc(sizeof(int64_t) * (size_t)(k + 1));
        int64_t* tmp = malloc(sizeof(int64_t) * (size_t)(k + 1));
        bool ok = g.size == l.lines * k;
        g_t = &g;
        for (int64_t L = 0; L < lk.lines && ok; L++) {
          for (int i = 0; i < k; i++) ix[i] = flat(&lk, L, i);
          merge_sort(ix, tmp, k);
          for (int i = 0; i < k && ok; i++) {
            int64_t w = flat(&l, L, l.n - k + i);
            ok = cmp2(&g, ix[i], &wv, w) == 0;
          }
        }
        CHECK_MSG(ok, "topk %s axis %d k %d", cmx_dtype_name(dt), axis, k);
        if (k == (int)l.n) { /* the whole axis: the input unchanged */
          h_tensor xa = h_read(a);
          CHECK(exact(&g, &xa, "topk k == n"));
          h_free(&xa);
        }
        free(ix);
        free(tmp);
        h_free(&g);
        cmx_array_release(a);
        cmx_array_release(r);
      }
      h_free(&wv);
      h_free(&wi);
    }
    h_free(&x);
  }
}

static void test_searchsorted(void) {
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_ALL[di];
    for (int n = 0; n < 300; n = n * 3 + 1) {
      int64_t nn = n;
      h_tensor seq0 = make_input(&nn, 1, dt, 3 + n, true);
      h_tensor seq, idx;
      ref_sort(&seq0, 0, &seq, &idx);
      int64_t vshape[3] = {2, 7, 3};
      h_tensor v = make_input(vshape, 3, dt, 11 + n, true);
      /* some values exactly from the sequence (ties) */
      for (int64_t i = 0; n > 0 && i < v.size; i += 3) {
        v.re[i] = seq.re[i % n];
        if (v.im) v.im[i] = seq.im[i % n];
      }
      for (int side = 0; side < 2; side++) {
        h_tensor want = h_alloc(vshape, 3, CMX_UINT32);
        h_tensor both = h_alloc((int64_t[]){nn + 1}, 1, dt);
        memcpy(both.re, seq.re, sizeof(double) * (size_t)n);
        if (both.im) memcpy(both.im, seq.im, sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < v.size; i++) {
          both.re[n] = v.re[i];
          if (both.im) both.im[n] = v.im[i];
          int64_t c = 0;
          for (int64_t j = 0; j < n; j++) {
            int r = cmp_val(&both, j, n);
            c += side ? r <= 0 : r < 0;
          }
          want.re[i] = (double)c;
        }
        for (int lay = 0; lay < H_NUM_LAYOUTS; lay++) {
          cmx_array sa = h_array(&seq, lay == H_STRIDED ? H_STRIDED : H_CONTIG);
          cmx_array va = h_array(&v, (h_layout)lay), r = NULL;
          OK(cmx_searchsorted(&r, sa, va, side == 1, S));
          h_tensor g = h_read(r);
          char what[128];
          snprintf(what, sizeof what, "searchsorted %s n=%d side=%d %s",
                   cmx_dtype_name(dt), n, side, h_layout_names[lay]);
          CHECK(exact(&g, &want, what));
          h_free(&g);
          cmx_array_release_all((cmx_array[]){sa, va, r}, 3);
        }
        h_free(&want);
        h_free(&both);
      }
      h_free(&seq0);
      h_free(&seq);
      h_free(&idx);
      h_free(&v);
    }
  }
  /* mixed dtypes promote: int32 sequence, float32 values */
  int32_t sv[4] = {1, 2, 2, 4};
  float vv[5] = {0.5f, 2.0f, 2.5f, 5.0f, NAN};
  uint32_t wl[5] = {0, 1, 3, 4, 4}, wr[5] = {0, 3, 3, 4, 4}, got[5];
  int64_t n4 = 4, n5 = 5;
  cmx_array sa, va, r;
  OK(cmx_array_from_data(&sa, sv, &n4, 1, CMX_INT32));
  OK(cmx_array_from_data(&va, vv, &n5, 1, CMX_FLOAT32));
  OK(cmx_searchsorted(&r, sa, va, false, S));
  CHECK(cmx_array_dtype(r) == CMX_UINT32);
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(memcmp(got, wl, sizeof got) == 0);
  cmx_array_release(r);
  OK(cmx_searchsorted(&r, sa, va, true, S));
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(memcmp(got, wr, sizeof got) == 0);
  cmx_array_release_all((cmx_array[]){sa, va, r}, 3);
}

static void test_errors(void) {
  int64_t sh[2] = {3, 4};
  cmx_array a, z, r = NULL;
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  OK(cmx_array_from_double(&z, 1.0, CMX_FLOAT32));
  int ax = 2, neg = -3, zero = 0;
  FAILS(cmx_sort(&r, a, &ax, S), CMX_ERR_INDEX,
        "[sort] Received invalid axis 2 for array with 2 dimensions.");
  FAILS(cmx_argsort(&r, a, &neg, S), CMX_ERR_INDEX,
        "[argsort] Received invalid axis -3");
  FAILS(cmx_sort(&r, z, &zero, S), CMX_ERR_INDEX,
        "[sort] Received invalid axis 0 for array with 0 dimensions.");
  FAILS(cmx_partition(&r, a, 12, NULL, S), CMX_ERR_VALUE,
        "[partition] Received invalid kth 12");
  FAILS(cmx_partition(&r, a, -5, &(int){1}, S), CMX_ERR_VALUE,
        "[partition] Received invalid kth -5 along axis 1 for array with "
        "shape (3,4).");
  FAILS(cmx_argpartition(&r, a, 3, &(int){0}, S), CMX_ERR_VALUE,
        "[argpartition] Received invalid kth 3");
  FAILS(cmx_argpartition(&r, a, 0, &ax, S), CMX_ERR_INDEX,
        "[argpartition] Received invalid axis 2");
  FAILS(cmx_topk(&r, a, 5, &(int){-1}, S), CMX_ERR_VALUE,
        "[topk] Received invalid k=5 along axis -1 for array with shape "
        "(3,4).");
  FAILS(cmx_topk(&r, a, -1, NULL, S), CMX_ERR_VALUE,
        "[topk] Received invalid k=-1");
  FAILS(cmx_topk(&r, a, 1, &ax, S), CMX_ERR_INDEX,
        "[topk] Received invalid axis 2");
  FAILS(cmx_searchsorted(&r, a, z, false, S), CMX_ERR_VALUE,
        "[searchsorted] sorted_sequence must be 1-dimensional, got 2");
  FAILS(cmx_sort(&r, NULL, NULL, S), CMX_ERR_VALUE, "[sort]");
  CHECK(r == NULL);
  /* a 0-d array flattens to one element */
  OK(cmx_sort(&r, z, NULL, S));
  CHECK(cmx_array_ndim(r) == 1 && cmx_array_shape(r)[0] == 1);
  cmx_array_release_all((cmx_array[]){a, z, r}, 3);
}

int main(void) {
  RUN(test_sort_all);
  RUN(test_large_rows);
  RUN(test_skewed_rows);
  RUN(test_partition_patterns);
  RUN(test_stability);
  RUN(test_int64_extremes);
  RUN(test_topk);
  RUN(test_searchsorted);
  RUN(test_errors);
  return test_summary("test_sort");
}
