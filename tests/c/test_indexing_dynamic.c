/* Indexing whose positions come from data: cmx_slice_dynamic and
 * cmx_slice_update_dynamic (start indices in an array, negative from the
 * end, windows clamped into the axis) against a plain model over random
 * shapes, axes, starts, dtypes and layouts, with lazy start arrays; and
 * boolean masks in cmx_index_get / cmx_index_set against NumPy's rule
 * (the true elements' coordinates, row-major). */
#include "shape_util.h"

/* The model's window start: wrapped when negative, then clamped. */
static int64_t model_start(int64_t st, int64_t dim, int64_t size) {
  if (st < 0) st += dim;
  if (st > dim - size) st = dim - size;
  return st < 0 ? 0 : st;
}

typedef struct {
  int nd;
  const int64_t* shape;
  int64_t first[CMX_MAX_NDIM]; /* window start per axis */
} window_ctx;

/* Element of a at window position idx. */
static int64_t window_map(const int64_t* idx, const void* p) {
  const window_ctx* c = p;
  int64_t src[CMX_MAX_NDIM];
  for (int d = 0; d < c->nd; d++) src[d] = c->first[d] + idx[d];
  return su_ravel(src, c->shape, c->nd);
}

/* A start array holding v (lazy: the sum of two arrays). */
static cmx_array lazy_starts(const int64_t* v, int n, cmx_dtype dt) {
  int64_t half[CMX_MAX_NDIM], rest[CMX_MAX_NDIM], len = n;
  for (int i = 0; i < n; i++) half[i] = v[i] / 2, rest[i] = v[i] - v[i] / 2;
  cmx_array a = NULL, b = NULL, a2 = NULL, b2 = NULL, s = NULL;
  OK(cmx_array_from_data(&a, half, &len, 1, CMX_INT64));
  OK(cmx_array_from_data(&b, rest, &len, 1, CMX_INT64));
  OK(cmx_astype(&a2, a, dt, S));
  OK(cmx_astype(&b2, b, dt, S));
  OK(cmx_add(&s, a2, b2, S));
  cmx_array_release(a), cmx_array_release(b);
  cmx_array_release(a2), cmx_array_release(b2);
  return s;
}

static void test_slice_dynamic_random(void) {
  uint64_t rng = 11;
  const cmx_dtype starts_dt[] = {CMX_INT32, CMX_INT64, CMX_UINT8, CMX_INT16};
  for (int t = 0; t < 300; t++) {
    int nd = 1 + (int)(h_rand_u64(&rng) % 4);
    int64_t shape[4];
    for (int d = 0; d < nd; d++) shape[d] = (int64_t)(h_rand_u64(&rng) % 5);
    cmx_dtype dt = SU_FEW[t % 5];
    h_tensor x = h_random(shape, nd, dt, -9, 9, rng++);
    cmx_array a = su_input(&x, t % SU_NUM_LAYOUTS);
    int naxes = 1 + (int)(h_rand_u64(&rng) % (uint64_t)nd);
    int axes[4], perm[4] = {0, 1, 2, 3};
    for (int i = 3; i > 0; i--) { /* distinct axes, random order */
      int j = (int)(h_rand_u64(&rng) % (uint64_t)(i + 1));
      int tmp = perm[i];
      perm[i] = perm[j], perm[j] = tmp;
    }
    window_ctx c = {.nd = nd, .shape = shape};
    int64_t sizes[4], st[4], wshape[4];
    memcpy(wshape, shape, sizeof wshape);
    int k = 0;
    for (int i = 0; i < 4 && k < naxes; i++) {
      if (perm[i] >= nd) continue;
      int ax = perm[i];
      axes[k] = (h_rand_u64(&rng) & 1) ? ax - nd : ax; /* negative too */
      sizes[k] = (int64_t)(h_rand_u64(&rng) % (uint64_t)(shape[ax] + 1));
      cmx_dtype sdt = starts_dt[t % 4];
      int64_t lo = sdt == CMX_UINT8 ? 0 : -7;
      st[k] = lo + (int64_t)(h_rand_u64(&rng) % 15); /* past both ends */
      c.first[ax] = model_start(st[k], shape[ax], sizes[k]);
      wshape[ax] = sizes[k];
      k++;
    }
    cmx_array start = lazy_starts(st, k, starts_dt[t % 4]), r = NULL;
    OK(cmx_slice_dynamic(&r, a, start, axes, k, sizes, S));
    h_tensor want = su_map(&x, wshape, nd, window_map, &c, 0);
    char what[96];
    snprintf(what, sizeof what, "slice_dynamic case %d", t);
    su_check(r, &want, what);
    h_free(&want);

    /* The update writes that window with update's values. */
    h_tensor u = h_random(wshape, nd, dt, -9, 9, rng++);
    cmx_array ua = h_array(&u, H_CONTIG), w = NULL;
    OK(cmx_slice_update_dynamic(&w, a, ua, start, axes, k, S));
    h_tensor want_w = h_alloc(shape, nd, dt);
    memcpy(want_w.re, x.re, (size_t)x.size * sizeof(double));
    if (x.im) memcpy(want_w.im, x.im, (size_t)x.size * sizeof(double));
    int64_t idx[CMX_MAX_NDIM];
    for (int64_t e = 0; e < u.size; e++) {
      su_unravel(e, wshape, nd, idx);
      for (int d = 0; d < nd; d++) idx[d] += c.first[d];
      int64_t dst = su_ravel(idx, shape, nd);
      want_w.re[dst] = u.re[e];
      if (u.im) want_w.im[dst] = u.im[e];
    }
    snprintf(what, sizeof what, "slice_update_dynamic case %d", t);
    su_check(w, &want_w, what);
    h_free(&want_w), h_free(&u), h_free(&x);
    cmx_array_release(ua), cmx_array_release(w), cmx_array_release(r);
    cmx_array_release(start), cmx_array_release(a);
  }
}

static void test_slice_dynamic_errors(void) {
  int64_t shape[2] = {4, 5}, one = 1, two[2] = {1, 2}, sizes[2] = {2, 2};
  cmx_array a = NULL, i1 = NULL, i2 = NULL, f = NULL, r = NULL, u = NULL;
  OK(cmx_zeros(&a, shape, 2, CMX_FLOAT32, S));
  OK(cmx_array_from_data(&i1, &one, &one, 1, CMX_INT64));
  int64_t n2 = 2;
  OK(cmx_array_from_data(&i2, two, &n2, 1, CMX_INT64));
  OK(cmx_ones(&f, &one, 1, CMX_FLOAT32, S));
  int ax0 = 0, ax01[2] = {0, 1}, ax00[2] = {0, 0}, ax9 = 9;
  int64_t big = 5;
  FAILS(cmx_slice_dynamic(&r, a, f, &ax0, 1, sizes, S), CMX_ERR_VALUE,
        "[slice] start_indices must be");
  FAILS(cmx_slice_dynamic(&r, a, i1, ax01, 2, sizes, S), CMX_ERR_VALUE,
        "one entry per sliced axis (2)");
  FAILS(cmx_slice_dynamic(&r, a, i2, ax00, 2, sizes, S), CMX_ERR_VALUE,
        "Repeated axis");
  FAILS(cmx_slice_dynamic(&r, a, i1, &ax9, 1, sizes, S), CMX_ERR_INDEX,
        "out of bounds"); /* MLX: IndexError */
  FAILS(cmx_slice_dynamic(&r, a, i1, &ax0, 1, &big, S), CMX_ERR_VALUE,
        "does not fit axis 0");
  int64_t ushape[3] = {1, 4, 5};
  OK(cmx_zeros(&u, ushape, 3, CMX_FLOAT32, S));
  FAILS(cmx_slice_update_dynamic(&r, a, u, i1, &ax0, 1, S), CMX_ERR_VALUE,
        "more dimensions");
  cmx_array_release(u);
  int64_t wide[2] = {1, 6};
  OK(cmx_zeros(&u, wide, 2, CMX_FLOAT32, S));
  FAILS(cmx_slice_update_dynamic(&r, a, u, i1, &ax0, 1, S), CMX_ERR_VALUE,
        "does not fit axis 1");
  CHECK(r == NULL);
  cmx_array_release(u), cmx_array_release(a), cmx_array_release(i1);
  cmx_array_release(i2), cmx_array_release(f);
}

/* ---------------- masks ---------------- */
typedef struct {
  const h_tensor* mask;
  int axis; /* first masked axis */
  const int64_t* shape;
  int nd;
  int64_t* coords; /* mask->ndim rows of count */
  int64_t count;
} mask_ctx;

/* a[..., mask, ...] with the mask over axes [axis, axis + mask->ndim):
 * the result has the mask's true count in place of those axes. */
static int64_t mask_map(const int64_t* idx, const void* p) {
  const mask_ctx* c = p;
  int md = c->mask->ndim;
  int64_t src[CMX_MAX_NDIM];
  for (int d = 0; d < c->axis; d++) src[d] = idx[d];
  for (int d = 0; d < md; d++)
    src[c->axis + d] = c->coords[d * c->count + idx[c->axis]];
  for (int d = c->axis + md; d < c->nd; d++) src[d] = idx[d - md + 1];
  return su_ravel(src, c->shape, c->nd);
}

static void test_masks_random(void) {
  uint64_t rng = 5;
  for (int t = 0; t < 120; t++) {
    int nd = 1 + (int)(h_rand_u64(&rng) % 3);
    int64_t shape[3];
    for (int d = 0; d < nd; d++) shape[d] = 1 + (int64_t)(h_rand_u64(&rng) % 4);
    int axis = (int)(h_rand_u64(&rng) % (uint64_t)nd);
    int md = 1 + (int)(h_rand_u64(&rng) % (uint64_t)(nd - axis));
    h_tensor x = h_random(shape, nd, SU_FEW[t % 5], -9, 9, rng++);
    h_tensor m = h_alloc(shape + axis, md, CMX_BOOL);
    int64_t count = 0;
    for (int64_t e = 0; e < m.size; e++)
      count += (m.re[e] = (double)(h_rand_u64(&rng) % 3 == 0)) != 0;
    int64_t* coords = calloc((size_t)(count * md + 1), sizeof *coords);
    int64_t idx[CMX_MAX_NDIM];
    for (int64_t e = 0, c = 0; e < m.size; e++) {
      if (!m.re[e]) continue;
      su_unravel(e, m.shape, md, idx);
      for (int d = 0; d < md; d++) coords[d * count + c] = idx[d];
      c++;
    }
    mask_ctx c = {&m, axis, shape, nd, coords, count};
    int64_t rshape[CMX_MAX_NDIM];
    int rnd = 0;
    for (int d = 0; d < axis; d++) rshape[rnd++] = shape[d];
    rshape[rnd++] = count;
    for (int d = axis + md; d < nd; d++) rshape[rnd++] = shape[d];
    /* a[:, ..., mask] written with full slices before the mask, or an
     * ellipsis when the mask ends the key. */
    cmx_array a = su_input(&x, t % SU_NUM_LAYOUTS);
    cmx_array ma = su_input(&m, (t / 2) % SU_NUM_LAYOUTS), r = NULL;
    cmx_index ix[4];
    int n = 0;
    bool ell = axis + md == nd && axis > 0 && (t & 1);
    if (ell) {
      ix[n++] = cmx_index_ellipsis();
    } else {
      for (int d = 0; d < axis; d++) ix[n++] = cmx_index_all();
    }
    ix[n++] = cmx_index_mask(ma);
    OK(cmx_index_get(&r, a, ix, n, S));
    h_tensor want = su_map(&x, rshape, rnd, mask_map, &c, 0);
    char what[64];
    snprintf(what, sizeof what, "mask case %d", t);
    su_check(r, &want, what);

    /* a[mask] = 7 sets exactly the masked elements. */
    cmx_array seven = NULL, w = NULL;
    OK(cmx_array_weak_float(&seven, 7.0));
    OK(cmx_index_set(&w, a, ix, n, seven, S));
    h_tensor got = h_read(w);
    bool ok = got.size == x.size;
    for (int64_t e = 0; ok && e < x.size; e++) {
      su_unravel(e, shape, nd, idx);
      int64_t me = su_ravel(idx + axis, m.shape, md);
      double v = m.re[me] ? h_round_to(7.0, x.dtype) : x.re[e];
      ok = got.re[e] == v;
    }
    CHECK_MSG(ok, "mask set case %d", t);
    h_free(&got), h_free(&want), h_free(&x), h_free(&m);
    free(coords);
    cmx_array_release(a), cmx_array_release(ma), cmx_array_release(r);
    cmx_array_release(seven), cmx_array_release(w);
  }
}

static void test_mask_errors(void) {
  int64_t shape[2] = {3, 4}, mshape[2] = {3, 3};
  cmx_array a = NULL, m = NULL, f = NULL, r = NULL;
  OK(cmx_zeros(&a, shape, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&m, mshape, 2, CMX_BOOL, S));
  OK(cmx_zeros(&f, shape, 1, CMX_FLOAT32, S));
  cmx_index ix = cmx_index_mask(m);
  FAILS(cmx_index_get(&r, a, &ix, 1, S), CMX_ERR_INDEX,
        "boolean index did not match the indexed array along axis 0");
  cmx_index two[2] = {cmx_index_int(0), cmx_index_mask(f)};
  FAILS(cmx_index_get(&r, a, two, 2, S), CMX_ERR_TYPE,
        "A mask index must be a boolean array");
  cmx_index arr = cmx_index_array(m);
  FAILS(cmx_index_get(&r, a, &arr, 1, S), CMX_ERR_TYPE,
        "Boolean index arrays are not supported");
  CHECK(r == NULL);
  cmx_array_release(a), cmx_array_release(m), cmx_array_release(f);
}

int main(void) {
  RUN(test_slice_dynamic_random);
  RUN(test_slice_dynamic_errors);
  RUN(test_masks_random);
  RUN(test_mask_errors);
  return test_summary("test_indexing_dynamic");
}
