/* Gather, scatter (all reductions), take, take_along_axis and
 * put_along_axis against naive reference loops: random shapes (0-d,
 * empty, up to 4-d), broadcast index arrays of every integer dtype,
 * negative and repeated indices, slices wider than one element, inputs in
 * five memory layouts, and every dtype family; plus bounds errors at
 * evaluation and argument errors naming the op. */
#include "index_util.h"

/* ---------------- random gather / scatter cases ---------------- */

typedef struct {
  int nd;
  int64_t shape[4];
  int nidx;
  int axes[4];
  int64_t sizes[4]; /* slice sizes (gather) / update extents (scatter) */
  int bnd;          /* broadcast index shape */
  int64_t bshape[4];
  h_tensor idx[4];
  cmx_dtype idt[4];
} gcase;

/* A random case: a's shape, indexed axes (any order), slice sizes, index
 * arrays that broadcast to bshape, values in range (negative ones too). */
static gcase random_case(uint64_t* rng, bool allow_empty) {
  gcase c;
  memset(&c, 0, sizeof c);
  c.nd = (int)iu_rand(rng, 0, 4);
  for (int d = 0; d < c.nd; d++) {
    c.shape[d] = iu_rand(rng, 1, 5);
    if (allow_empty && iu_rand(rng, 0, 15) == 0) c.shape[d] = 0;
  }
  c.nidx = (int)iu_rand(rng, 0, c.nd);
  int perm[4] = {0, 1, 2, 3};
  for (int i = c.nd - 1; i > 0; i--) {
    int j = (int)iu_rand(rng, 0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int k = 0; k < c.nidx; k++) c.axes[k] = perm[k];
  for (int d = 0; d < c.nd; d++) {
    bool indexed = false;
    for (int k = 0; k < c.nidx; k++) indexed |= c.axes[k] == d;
    int64_t n = c.shape[d];
    if (indexed)
      c.sizes[d] = n == 0 ? 0 : iu_rand(rng, 0, 3) ? 1 : iu_rand(rng, 0, n);
    else
      c.sizes[d] = iu_rand(rng, 0, 2) ? n : iu_rand(rng, 0, n);
  }
  c.bnd = c.nidx ? (int)iu_rand(rng, 0, 3) : 0;
  for (int d = 0; d < c.bnd; d++) c.bshape[d] = iu_rand(rng, 1, 4);
  if (allow_empty && c.bnd && iu_rand(rng, 0, 10) == 0) c.bshape[0] = 0;
  for (int k = 0; k < c.nidx; k++) {
    int r = (int)iu_rand(rng, 0, c.bnd);
    if (k == 0) r = c.bnd; /* one array has the full rank */
    int64_t sh[4];
    for (int d = 0; d < r; d++) {
      sh[d] = c.bshape[c.bnd - r + d];
      if (k > 0 && iu_rand(rng, 0, 2) == 0) sh[d] = 1;
    }
    cmx_dtype dt = IU_IDX_DTYPES[iu_rand(rng, 0, IU_NUM_IDX_DTYPES - 1)];
    c.idt[k] = dt;
    c.idx[k] = h_alloc(sh, r, dt);
    int ax = c.axes[k];
    int64_t hi = c.shape[ax] - c.sizes[ax]; /* largest valid start */
    for (int64_t j = 0; j < c.idx[k].size; j++) {
      int64_t v = iu_rand(rng, 0, hi < 0 ? 0 : hi);
      if (cmx_dtype_is_signed(dt) && iu_rand(rng, 0, 1)) v -= c.shape[ax];
      if (dt == CMX_INT8 && (v < -128 || v > 127)) v = 0;
      c.idx[k].re[j] = (double)v;
    }
  }
  return c;
}

static void free_case(gcase* c) {
  for (int k = 0; k < c->nidx; k++) h_free(&c->idx[k]);
}

static void case_str(char* buf, size_t n, const char* op, cmx_dtype dt,
                     const gcase* c, int l) {
  char sh[128], bs[128], sz[128];
  snprintf(buf, n, "%s %s a%s %s axes[%d %d %d %d] n=%d sizes%s idx%s", op,
           cmx_dtype_name(dt), cmx__shape_str(c->shape, c->nd, sh, sizeof sh),
           su_layout_names[l], c->axes[0], c->axes[1], c->axes[2], c->axes[3],
           c->nidx, cmx__shape_str(c->sizes, c->nd, sz, sizeof sz),
           cmx__shape_str(c->bshape, c->bnd, bs, sizeof bs));
}

/* Start (wrapped) of the slice on every axis for index position pos. */
static void case_starts(const gcase* c, const int64_t* pos, int64_t* start) {
  for (int d = 0; d < c->nd; d++) start[d] = 0;
  for (int k = 0; k < c->nidx; k++) {
    int64_t v = iu_bload(&c->idx[k], pos, c->bnd);
    start[c->axes[k]] = v < 0 ? v + c->shape[c->axes[k]] : v;
  }
}

static cmx_array idx_array(const h_tensor* t, int k) {
  return h_array(t, k % 2 ? H_STRIDED : H_CONTIG);
}

static void test_gather_random(void) {
  uint64_t rng = 12345;
  static const cmx_dtype dts[] = {
      CMX_BOOL,    CMX_UINT8,    CMX_INT16,   CMX_INT32,   CMX_INT64,
      CMX_FLOAT16, CMX_BFLOAT16, CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
  for (int trial = 0; trial < 600; trial++) {
    gcase c = random_case(&rng, true);
    cmx_dtype dt = dts[trial % 10];
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, c.nd)) l = SU_CONTIG;
    h_tensor x = h_random(c.shape, c.nd, dt, -50, 50, (uint64_t)trial);
    /* Reference: out[i..., j...] = x[start(i) + j]. */
    int64_t oshape[8];
    memcpy(oshape, c.bshape, (size_t)c.bnd * 8);
    memcpy(oshape + c.bnd, c.sizes, (size_t)c.nd * 8);
    int ond = c.bnd + c.nd;
    h_tensor want = h_alloc(oshape, ond, dt);
    int64_t oi[8], st[4], src[4];
    for (int64_t k = 0; k < want.size; k++) {
      su_unravel(k, oshape, ond, oi);
      case_starts(&c, oi, st);
      for (int d = 0; d < c.nd; d++) src[d] = st[d] + oi[c.bnd + d];
      int64_t j = su_ravel(src, c.shape, c.nd);
      want.re[k] = x.re[j];
      if (want.im) want.im[k] = x.im[j];
    }
    cmx_array a = su_input(&x, l), idx[4], r = NULL;
    for (int k = 0; k < c.nidx; k++) idx[k] = idx_array(&c.idx[k], k);
    char what[512];
    case_str(what, sizeof what, "gather", dt, &c, l);
    /* Axes given negative half of the time. */
    int axes[4];
    for (int k = 0; k < c.nidx; k++)
      axes[k] = trial % 2 ? c.axes[k] - c.nd : c.axes[k];
    cmx_status s =
        cmx_gather(&r, a, idx, c.nidx, axes, c.nidx, c.sizes, c.nd, S);
    CHECK_MSG(s == CMX_OK, "%s: %s", what, cmx_last_error());
    if (s == CMX_OK) su_check(r, &want, what);
    cmx_array_release(a);
    cmx_array_release(r);
    for (int k = 0; k < c.nidx; k++) cmx_array_release(idx[k]);
    h_free(&x);
    h_free(&want);
    free_case(&c);
  }
}

/* Large gathers run on the thread pool: rows (memcpy slices) and single
 * elements, compared with the reference. */
static void test_gather_large(void) {
  int64_t shape[2] = {300, 257};
  h_tensor x = h_random(shape, 2, CMX_FLOAT32, -1, 1, 7);
  uint64_t rng = 99;
  int64_t n = 5000, vals[5000];
  for (int i = 0; i < n; i++) vals[i] = iu_rand(&rng, -300, 299);
  h_tensor it = iu_ints(&n, 1, CMX_INT64, vals);
  cmx_array a = h_array(&x, H_CONTIG), idx = h_array(&it, H_CONTIG), r = NULL;
  /* Rows: a[idx] via gather axis 0, slices (1, 257). */
  int ax = 0;
  int64_t sizes[2] = {1, 257};
  OK(cmx_gather(&r, a, &idx, 1, &ax, 1, sizes, 2, S));
  int64_t oshape[3] = {n, 1, 257};
  h_tensor want = h_alloc(oshape, 3, CMX_FLOAT32);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < 257; j++) {
      int64_t row = vals[i] < 0 ? vals[i] + 300 : vals[i];
      want.re[i * 257 + j] = x.re[row * 257 + j];
    }
  su_check(r, &want, "large gather rows");
  cmx_array_release(r);
  h_free(&want);
  /* Elements of the flattened array (take without an axis). */
  int64_t m = 200000, *ev = malloc((size_t)m * 8);
  for (int64_t i = 0; i < m; i++) ev[i] = iu_rand(&rng, -77100, 77099);
  h_tensor et = iu_ints(&m, 1, CMX_INT32, ev);
  cmx_array eidx = h_array(&et, H_STRIDED);
  OK(cmx_take(&r, a, eidx, NULL, S));
  want = h_alloc(&m, 1, CMX_FLOAT32);
  for (int64_t i = 0; i < m; i++)
    want.re[i] = x.re[ev[i] < 0 ? ev[i] + 77100 : ev[i]];
  su_check(r, &want, "large take flat");
  cmx_array_release_all((cmx_array[]){a, idx, r, eidx}, 4);
  h_free(&want);
  h_free(&x);
  h_free(&it);
  h_free(&et);
  free(ev);
}

/* Out-of-bounds indices fail at evaluation (never read out of bounds). */
static void test_gather_bounds(void) {
  int64_t shape[2] = {5, 3};
  h_tensor x = h_random(shape, 2, CMX_INT32, 0, 9, 1);
  cmx_array a = h_array(&x, H_CONTIG);
  struct {
    cmx_dtype dt;
    int64_t v;
    int64_t size;
    const char* msg;
  } cases[] = {
      {CMX_INT32, 5, 1,
       "[gather] Index 5 is out of bounds for axis 0 with size 5."},
      {CMX_INT64, -6, 1,
       "[gather] Index -6 is out of bounds for axis 0 with size 5."},
      {CMX_UINT8, 200, 1, "Index 200 is out of bounds"},
      {CMX_INT32, 4, 2, "Index 4 is out of bounds for axis 0"}, /* 4 + 2 > 5 */
      {CMX_INT64, INT64_MIN, 1, "out of bounds for axis 0 with size 5"},
      {CMX_INT64, INT64_MAX, 1, "out of bounds for axis 0 with size 5"},
  };
  for (int i = 0; i < 6; i++) {
    int64_t vals[3] = {0, cases[i].v, 1}, n = 3;
    h_tensor it = iu_ints(&n, 1, cases[i].dt, vals);
    cmx_array idx = h_array(&it, H_CONTIG), r = NULL;
    if (cases[i].dt == CMX_INT64) { /* exact, beyond double's range */
      cmx_array_release(idx);
      cmx_array_from_data(&idx, vals, &n, 1, CMX_INT64);
    }
    int ax = 0;
    int64_t sizes[2] = {cases[i].size, 3};
    OK(cmx_gather(&r, a, &idx, 1, &ax, 1, sizes, 2, S));
    iu_eval_fails(r, cases[i].msg, "gather bounds");
    cmx_array_release(idx);
    cmx_array_release(r);
    h_free(&it);
  }
  /* uint64 above INT64_MAX is out of bounds, not a wrapped negative. */
  {
    uint64_t big = UINT64_MAX;
    int64_t one = 1;
    cmx_array idx = NULL, r = NULL;
    cmx_array_from_data(&idx, &big, &one, 1, CMX_UINT64);
    OK(cmx_take(&r, a, idx, (int[]){0}, S));
    iu_eval_fails(r, "out of bounds for axis 0 with size 5", "uint64 max");
    cmx_array_release(idx);
    cmx_array_release(r);
  }
  /* The failure propagates to dependents; other work is unaffected. */
  {
    int64_t v = 9, one = 1;
    cmx_array idx = NULL, r = NULL, r2 = NULL;
    cmx_array_from_int64(&idx, v, CMX_INT32);
    OK(cmx_take(&r, a, idx, (int[]){1}, S));
    OK(cmx_take(&r2, r, idx, NULL, S));
    iu_eval_fails(r2, "Index 9 is out of bounds for axis 1 with size 3",
                  "propagated");
    cmx_array ok_idx = NULL, ok = NULL;
    cmx_array_from_data(&ok_idx, &one, &one, 1, CMX_INT64);
    OK(cmx_take(&ok, a, ok_idx, (int[]){1}, S));
    OK(cmx_array_eval(ok));
    cmx_array_release_all((cmx_array[]){idx, r, r2, ok_idx, ok}, 5);
  }
  cmx_array_release(a);
  h_free(&x);
}

static void test_gather_errors(void) {
  int64_t shape[2] = {4, 3}, n2 = 2;
  h_tensor x = h_random(shape, 2, CMX_FLOAT32, 0, 9, 1);
  cmx_array a = h_array(&x, H_CONTIG), r = NULL;
  float fv[2] = {0, 1};
  int64_t iv[2] = {0, 1}, iv3[3] = {0, 1, 2}, n3 = 3;
  uint8_t bv[2] = {0, 1};
  cmx_array fi = NULL, ii = NULL, i3 = NULL, bi = NULL;
  cmx_array_from_data(&fi, fv, &n2, 1, CMX_FLOAT32);
  cmx_array_from_data(&ii, iv, &n2, 1, CMX_INT64);
  cmx_array_from_data(&i3, iv3, &n3, 1, CMX_INT64);
  cmx_array_from_data(&bi, bv, &n2, 1, CMX_BOOL);
  int ax0 = 0, ax01[2] = {0, 1}, ax00[2] = {0, 0};
  int64_t sz[2] = {1, 3}, big[2] = {5, 3};
  FAILS(cmx_gather(&r, a, &fi, 1, &ax0, 1, sz, 2, S), CMX_ERR_TYPE,
        "[gather] Got indices with invalid dtype float32");
  FAILS(cmx_gather(&r, a, &bi, 1, &ax0, 1, sz, 2, S), CMX_ERR_TYPE,
        "[gather] Got indices with invalid dtype bool");
  FAILS(cmx_gather(&r, a, (cmx_array[]){ii, ii, ii}, 3, (int[]){0, 1, 0}, 3, sz,
                   2, S),
        CMX_ERR_VALUE, "[gather] Too many index arrays. Got 3");
  FAILS(cmx_gather(&r, a, &ii, 1, ax01, 2, sz, 2, S), CMX_ERR_VALUE,
        "[gather] Number of index arrays does not match number of axes.");
  FAILS(cmx_gather(&r, a, (cmx_array[]){ii, ii}, 2, ax00, 2, sz, 2, S),
        CMX_ERR_VALUE, "[gather] Repeat axes not allowed");
  FAILS(cmx_gather(&r, a, &ii, 1, (int[]){2}, 1, sz, 2, S), CMX_ERR_INDEX,
        "[gather] Axis 2 does not match");
  FAILS(cmx_gather(&r, a, &ii, 1, &ax0, 1, sz, 1, S), CMX_ERR_VALUE,
        "[gather] Got slice_sizes with size 1 for array with 2 dimensions.");
  FAILS(cmx_gather(&r, a, &ii, 1, &ax0, 1, big, 2, S), CMX_ERR_VALUE,
        "[gather] Slice sizes must be in [0, a.shape(i)]");
  FAILS(cmx_gather(&r, a, (cmx_array[]){ii, i3}, 2, ax01, 2, sz, 2, S),
        CMX_ERR_VALUE, "[gather] shapes (2) and (3) cannot be broadcast");
  FAILS(cmx_gather(&r, NULL, &ii, 1, &ax0, 1, sz, 2, S), CMX_ERR_VALUE,
        "[gather] argument");
  CHECK(r == NULL);
  cmx_array_release_all((cmx_array[]){a, fi, ii, i3, bi}, 5);
  h_free(&x);
}

/* ---------------- scatter ---------------- */

typedef cmx_status (*scatter_fn)(cmx_array*, cmx_array, const cmx_array*, int,
                                 cmx_array, const int*, int, cmx_stream);
static const scatter_fn scatter_fns[IU_NUM_MODES] = {
    cmx_scatter, cmx_scatter_add, cmx_scatter_prod, cmx_scatter_max,
    cmx_scatter_min};
static const char* const scatter_names[IU_NUM_MODES] = {
    "scatter", "scatter_add", "scatter_prod", "scatter_max", "scatter_min"};

/* Reference scatter: positions in row-major order, each slice's elements
 * in row-major order. */
static h_tensor ref_scatter(const gcase* c, const h_tensor* x,
                            const h_tensor* u, int mode) {
  h_tensor want = iu_copy(x);
  int64_t npos = 1, slice = 1, pos[8], j[4], st[4], dst[4];
  for (int d = 0; d < c->bnd; d++) npos *= c->bshape[d];
  for (int d = 0; d < c->nd; d++) slice *= c->sizes[d];
  for (int64_t p = 0; p < npos; p++) {
    su_unravel(p, c->bshape, c->bnd, pos);
    case_starts(c, pos, st);
    for (int64_t e = 0; e < slice; e++) {
      su_unravel(e, c->sizes, c->nd, j);
      for (int d = 0; d < c->nd; d++) dst[d] = st[d] + j[d];
      int64_t o = su_ravel(dst, c->shape, c->nd), k = p * slice + e;
      iu_combine(mode, x->dtype, &want.re[o], want.im ? &want.im[o] : NULL,
                 u->re[k], u->im ? u->im[k] : 0);
    }
  }
  return want;
}

static void test_scatter_random(void) {
  uint64_t rng = 777;
  static const cmx_dtype dts[] = {
      CMX_BOOL,    CMX_UINT8,   CMX_INT8,     CMX_INT16,   CMX_UINT32,
      CMX_INT32,   CMX_INT64,   CMX_UINT64,   CMX_FLOAT16, CMX_BFLOAT16,
      CMX_FLOAT32, CMX_FLOAT64, CMX_COMPLEX64};
  for (int trial = 0; trial < 900; trial++) {
    gcase c = random_case(&rng, true);
    cmx_dtype dt = dts[trial % 13];
    int mode = (trial / 13) % IU_NUM_MODES;
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, c.nd)) l = SU_CONTIG;
    /* Products stay small; other values spread. */
    double lo = mode == IU_PROD ? -3 : -60, hi = mode == IU_PROD ? 3 : 60;
    h_tensor x = h_random(c.shape, c.nd, dt, lo, hi, (uint64_t)trial + 5);
    int64_t ushape[8];
    memcpy(ushape, c.bshape, (size_t)c.bnd * 8);
    memcpy(ushape + c.bnd, c.sizes, (size_t)c.nd * 8);
    int und = c.bnd + c.nd;
    h_tensor u = h_random(ushape, und, dt, lo, hi, (uint64_t)trial + 9);
    h_tensor want = ref_scatter(&c, &x, &u, mode);
    int ul = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(ul, und)) ul = SU_CONTIG;
    cmx_array a = su_input(&x, l), upd = su_input(&u, ul), idx[4], r = NULL;
    for (int k = 0; k < c.nidx; k++) idx[k] = idx_array(&c.idx[k], k + 1);
    char what[512];
    case_str(what, sizeof what, scatter_names[mode], dt, &c, l);
    cmx_status s =
        scatter_fns[mode](&r, a, idx, c.nidx, upd, c.axes, c.nidx, S);
    CHECK_MSG(s == CMX_OK, "%s: %s", what, cmx_last_error());
    if (s == CMX_OK) {
      h_tensor got = h_read(r), mag = {.size = -1};
      if (iu_any_order(r, mode)) {
        h_tensor ax = iu_abs(&x), au = iu_abs(&u);
        mag = ref_scatter(&c, &ax, &au, mode);
        h_free(&ax);
        h_free(&au);
      }
      CHECK(iu_close(&got, &want, mag.size >= 0 ? &mag : NULL, 0, what));
      h_free(&got);
      if (mag.size >= 0) h_free(&mag);
      /* The input is unchanged. */
      su_check(a, &x, "scatter input unchanged");
    }
    cmx_array_release_all((cmx_array[]){a, upd, r}, 3);
    for (int k = 0; k < c.nidx; k++) cmx_array_release(idx[k]);
    h_free(&x);
    h_free(&u);
    h_free(&want);
    free_case(&c);
  }
}

/* Repeated indices: last write wins; add/prod/max/min accumulate; the
 * input buffer is donated when nothing else holds it. */
static void test_scatter_repeated(void) {
  int64_t n = 6, m = 8;
  int64_t iv[8] = {1, 3, 1, -5, 0, 1, 5, 3};
  double uv[8] = {2, 7, -4, 3, 9, 6, -1, 8};
  static const cmx_dtype dts[] = {CMX_INT32,     CMX_UINT8,   CMX_FLOAT16,
                                  CMX_BFLOAT16,  CMX_FLOAT32, CMX_FLOAT64,
                                  CMX_COMPLEX64, CMX_INT64,   CMX_BOOL};
  for (int di = 0; di < 9; di++) {
    cmx_dtype dt = dts[di];
    for (int mode = 0; mode < IU_NUM_MODES; mode++) {
      h_tensor x = h_random(&n, 1, dt, -5, 5, (uint64_t)di);
      h_tensor u = h_alloc(&m, 1, dt);
      for (int i = 0; i < m; i++) {
        u.re[i] = h_round_to(uv[i], dt);
        if (u.im) u.im[i] = i % 3;
      }
      h_tensor want = iu_copy(&x);
      for (int i = 0; i < m; i++) {
        int64_t o = iv[i] < 0 ? iv[i] + n : iv[i];
        iu_combine(mode, dt, &want.re[o], want.im ? &want.im[o] : NULL, u.re[i],
                   u.im ? u.im[i] : 0);
      }
      h_tensor it = iu_ints(&m, 1, CMX_INT64, iv);
      /* a is a lazy result held only by the graph: its buffer is donated. */
      cmx_array base = h_array(&x, H_CONTIG), a = NULL;
      OK(cmx_astype(&a, base, dt, S));
      cmx_array idx = h_array(&it, H_CONTIG), r = NULL;
      int64_t ush[2] = {m, 1};
      cmx_array u1 = h_array(&u, H_CONTIG), upd = NULL;
      OK(cmx_reshape(&upd, u1, ush, 2, S));
      OK(scatter_fns[mode](&r, a, &idx, 1, upd, (int[]){0}, 1, S));
      cmx_array_release(a);
      char what[128];
      snprintf(what, sizeof what, "%s repeated %s", scatter_names[mode],
               cmx_dtype_name(dt));
      h_tensor got = h_read(r), mag = {.size = -1};
      if (iu_any_order(r, mode)) { /* the updates' magnitudes, as want */
        mag = iu_abs(&x);
        for (int i = 0; i < m; i++) {
          int64_t o = iv[i] < 0 ? iv[i] + n : iv[i];
          iu_combine(mode, dt, &mag.re[o], mag.im ? &mag.im[o] : NULL,
                     u.im ? hypot(u.re[i], u.im[i]) : fabs(u.re[i]), 0);
        }
      }
      CHECK(iu_close(&got, &want, mag.size >= 0 ? &mag : NULL, 0, what));
      h_free(&got);
      if (mag.size >= 0) h_free(&mag);
      cmx_array_release_all((cmx_array[]){base, idx, u1, upd, r}, 5);
      h_free(&x);
      h_free(&u);
      h_free(&want);
      h_free(&it);
    }
  }
}

/* NaN propagation of scatter max/min and complex ordering. */
static void test_scatter_nan(void) {
  float av[3] = {1, NAN, 3}, uv[3] = {NAN, 5, 2};
  int64_t n = 3, ush[2] = {3, 1};
  int64_t iv[3] = {0, 1, 2};
  cmx_array a = NULL, u = NULL, idx = NULL, r = NULL;
  cmx_array_from_data(&a, av, &n, 1, CMX_FLOAT32);
  cmx_array_from_data(&u, uv, ush, 2, CMX_FLOAT32);
  cmx_array_from_data(&idx, iv, &n, 1, CMX_INT64);
  for (int mode = IU_MAX; mode <= IU_MIN; mode++) {
    OK(scatter_fns[mode](&r, a, &idx, 1, u, (int[]){0}, 1, S));
    const float* p = NULL;
    OK(cmx_array_data(r, (const void**)&p));
    CHECK(p && isnan(p[0]) && isnan(p[1]));
    CHECK(p && p[2] == (mode == IU_MAX ? 3.0f : 2.0f));
    cmx_array_release(r);
    r = NULL;
  }
  cmx_array_release_all((cmx_array[]){a, u, idx}, 3);
  /* complex: (1+5i) vs (1+2i) vs (0+9i): max is 1+5i, min 0+9i. */
  cmx_complex64_t cv[1] = {{1, 2}}, cu[2] = {{1, 5}, {0, 9}};
  int64_t one = 1, cush[2] = {2, 1}, zz[2] = {0, 0}, two = 2;
  cmx_array_from_data(&a, cv, &one, 1, CMX_COMPLEX64);
  cmx_array_from_data(&u, cu, cush, 2, CMX_COMPLEX64);
  cmx_array_from_data(&idx, zz, &two, 1, CMX_INT64);
  for (int mode = IU_MAX; mode <= IU_MIN; mode++) {
    OK(scatter_fns[mode](&r, a, &idx, 1, u, (int[]){0}, 1, S));
    cmx_complex64_t got;
    OK(cmx_array_item_complex(r, &got));
    CHECK(mode == IU_MAX ? (got.re == 1 && got.im == 5)
                         : (got.re == 0 && got.im == 9));
    cmx_array_release(r);
    r = NULL;
  }
  cmx_array_release_all((cmx_array[]){a, u, idx}, 3);
}

/* Big slices are split over threads when slices cannot overlap. */
static void test_scatter_large(void) {
  int64_t shape[2] = {5, 40000}, m = 7;
  int64_t iv[7] = {3, 0, 3, -2, 1, 3, 0};
  h_tensor x = h_random(shape, 2, CMX_FLOAT32, -10, 10, 3);
  int64_t ushape[3] = {m, 1, 40000};
  h_tensor u = h_random(ushape, 3, CMX_FLOAT32, -10, 10, 4);
  h_tensor it = iu_ints(&m, 1, CMX_INT32, iv);
  for (int mode = 0; mode < IU_NUM_MODES; mode++) {
    h_tensor want = iu_copy(&x);
    for (int i = 0; i < m; i++) {
      int64_t row = iv[i] < 0 ? iv[i] + 5 : iv[i];
      for (int64_t j = 0; j < 40000; j++)
        iu_combine(mode, CMX_FLOAT32, &want.re[row * 40000 + j], NULL,
                   u.re[i * 40000 + j], 0);
    }
    cmx_array a = h_array(&x, H_STRIDED), upd = h_array(&u, H_CONTIG),
              idx = h_array(&it, H_CONTIG), r = NULL;
    OK(scatter_fns[mode](&r, a, &idx, 1, upd, (int[]){0}, 1, S));
    char what[64];
    snprintf(what, sizeof what, "large %s", scatter_names[mode]);
    h_tensor got = h_read(r);
    CHECK(h_close(&got, &want, 4e-6, 4e-6, what));
    h_free(&got);
    cmx_array_release_all((cmx_array[]){a, upd, idx, r}, 4);
    h_free(&want);
  }
  h_free(&x);
  h_free(&u);
  h_free(&it);
}

static void test_scatter_errors(void) {
  int64_t shape[2] = {4, 3}, n2 = 2;
  h_tensor x = h_random(shape, 2, CMX_FLOAT32, 0, 9, 1);
  cmx_array a = h_array(&x, H_CONTIG), r = NULL;
  int64_t iv[2] = {0, 1};
  double fv[2] = {0, 1};
  cmx_array ii = NULL, fi = NULL, u = NULL, u2 = NULL, ubig = NULL;
  cmx_array_from_data(&ii, iv, &n2, 1, CMX_INT64);
  cmx_array_from_data(&fi, fv, &n2, 1, CMX_FLOAT64);
  int64_t ush[3] = {2, 1, 3}, ush2[2] = {2, 3}, ushb[3] = {2, 5, 3};
  cmx_zeros(&u, ush, 3, CMX_FLOAT32, S);
  cmx_zeros(&u2, ush2, 2, CMX_FLOAT32, S);
  cmx_zeros(&ubig, ushb, 3, CMX_FLOAT32, S);
  int ax0 = 0;
  FAILS(cmx_scatter_add(&r, a, &fi, 1, u, &ax0, 1, S), CMX_ERR_TYPE,
        "[scatter_add] Got indices with invalid dtype float64");
  FAILS(cmx_scatter(&r, a, &ii, 1, u2, &ax0, 1, S), CMX_ERR_VALUE,
        "[scatter] Updates with 2 dimensions does not match the sum of the "
        "array (2) and indices (1) dimensions.");
  FAILS(cmx_scatter_max(&r, a, &ii, 1, ubig, &ax0, 1, S), CMX_ERR_VALUE,
        "[scatter_max] Updates with shape (2,5,3) are too large for array "
        "with shape (4,3).");
  int64_t ush3[3] = {3, 1, 3};
  cmx_array u3 = NULL;
  cmx_zeros(&u3, ush3, 3, CMX_FLOAT32, S);
  FAILS(cmx_scatter_min(&r, a, &ii, 1, u3, &ax0, 1, S), CMX_ERR_VALUE,
        "[scatter_min] Update shape (3,1,3) is not valid for broadcasted "
        "index shape (2).");
  FAILS(cmx_scatter_prod(&r, a, (cmx_array[]){ii, ii, ii}, 3, u,
                         (int[]){0, 1, 1}, 3, S),
        CMX_ERR_VALUE, "[scatter_prod] Too many index arrays");
  FAILS(cmx_scatter(&r, a, &ii, 1, NULL, &ax0, 1, S), CMX_ERR_VALUE,
        "[scatter] argument");
  /* Out-of-bounds scatter indices fail at evaluation. */
  int64_t bad[2] = {0, 4};
  cmx_array bi = NULL;
  cmx_array_from_data(&bi, bad, &n2, 1, CMX_INT64);
  OK(cmx_scatter_add(&r, a, &bi, 1, u, &ax0, 1, S));
  iu_eval_fails(r, "[scatter] Index 4 is out of bounds for axis 0 with size 4.",
                "scatter bounds");
  cmx_array_release(r);
  cmx_array_release_all((cmx_array[]){a, ii, fi, u, u2, ubig, u3, bi}, 8);
  h_free(&x);
}

/* One contiguous int32/int64 index array choosing single elements (the
 * kernel's fused path): many updates into few bins, negative and repeated
 * indices, updates read with a stride, exact against a loop; and the first
 * bad index named. Values are eighths, so every bin's sum is exact in any
 * order (the GPU adds with atomics, in no set order). */
static void test_scatter_fused(void) {
  enum { NB = 1000, N = 100000 };
  int32_t* i32 = malloc(N * sizeof(int32_t));
  int64_t* i64 = malloc(N * sizeof(int64_t));
  float* uv = malloc(2 * N * sizeof(float));
  float* want = malloc(NB * sizeof(float));
  float bins[NB];
  uint64_t rng = 99;
  for (int i = 0; i < NB; i++) bins[i] = (float)iu_rand(&rng, -50, 50) / 8;
  for (int i = 0; i < N; i++) {
    i64[i] = iu_rand(&rng, -NB, NB - 1);
    i32[i] = (int32_t)i64[i];
  }
  for (int i = 0; i < 2 * N; i++) uv[i] = (float)iu_rand(&rng, -99, 99) / 8;
  int64_t nb = NB, n = N, n2 = 2 * N, ush[2] = {N, 1};
  /* (products of a hundred values a bin would overflow: not here) */
  static const int modes[4] = {IU_NONE, IU_ADD, IU_MAX, IU_MIN};
  for (int v = 0; v < 16; v++) {
    bool wide = v & 1, strided = v & 2;
    int mode = modes[v / 4];
    cmx_array a = NULL, idx = NULL, u = NULL, u2 = NULL, upd = NULL, r = NULL;
    cmx_array_from_data(&a, bins, &nb, 1, CMX_FLOAT32);
    cmx_array_from_data(&idx, wide ? (const void*)i64 : (const void*)i32, &n, 1,
                        wide ? CMX_INT64 : CMX_INT32);
    /* every other element of 2N (stride 2), or the first N */
    cmx_array_from_data(&u, uv, &n2, 1, CMX_FLOAT32);
    int64_t b0 = 0, e0 = strided ? 2 * N : N, st0 = strided ? 2 : 1;
    OK(cmx_slice(&u2, u, &b0, &e0, &st0, S));
    OK(cmx_reshape(&upd, u2, ush, 2, S));
    memcpy(want, bins, sizeof bins);
    for (int i = 0; i < N; i++) {
      int64_t o = i64[i] < 0 ? i64[i] + NB : i64[i];
      float x = want[o], y = uv[i * st0];
      want[o] = mode == IU_NONE  ? y
                : mode == IU_ADD ? x + y
                : mode == IU_MAX ? (y > x ? y : x)
                                 : (y < x ? y : x);
    }
    OK(scatter_fns[mode](&r, a, &idx, 1, upd, (int[]){0}, 1, S));
    const float* got = NULL;
    OK(cmx_array_data(r, (const void**)&got));
    int bad = -1;
    for (int i = 0; got && i < NB && bad < 0; i++)
      if (got[i] != want[i]) bad = i;
    CHECK_MSG(got && bad < 0, "fused %s %s%s: bin %d", scatter_names[mode],
              wide ? "int64" : "int32", strided ? " strided" : "", bad);
    cmx_array_release_all((cmx_array[]){a, idx, u, u2, upd, r}, 6);
  }
  /* A bad index late in the array (a positive and a negative one). */
  for (int k = 0; k < 2; k++) {
    int32_t keep = i32[77777];
    i32[77777] = k ? -NB - 3 : NB;
    cmx_array a = NULL, idx = NULL, upd = NULL, r = NULL;
    cmx_array_from_data(&a, bins, &nb, 1, CMX_FLOAT32);
    cmx_array_from_data(&idx, i32, &n, 1, CMX_INT32);
    cmx_array_from_data(&upd, uv, ush, 2, CMX_FLOAT32);
    OK(cmx_scatter_add(&r, a, &idx, 1, upd, (int[]){0}, 1, S));
    iu_eval_fails(r,
                  k ? "[scatter] Index -1003 is out of bounds for axis 0 with "
                      "size 1000."
                    : "[scatter] Index 1000 is out of bounds for axis 0 with "
                      "size 1000.",
                  "fused scatter bounds");
    cmx_array_release_all((cmx_array[]){a, idx, upd, r}, 4);
    i32[77777] = keep;
  }
  free(i32);
  free(i64);
  free(uv);
  free(want);
}

/* ---------------- one index array, on every device ---------------- */

/* A 3x4 index array of dtype dt holding vals in layout l: contiguous or
 * every other element (positions at one stride: read in place on the
 * GPU), or column-major (the offsets pass). */
static cmx_array one_index(const int64_t* vals, cmx_dtype dt, h_layout l) {
  int64_t sh[2] = {3, 4};
  h_tensor t = iu_ints(sh, 2, dt, vals);
  cmx_array r = h_array(&t, l);
  h_free(&t);
  return r;
}

/* Index values of a 3x4 array for axis 1 (size 5) with room for 2: in
 * [0, 3], negative ones (-5 .. -2) where dt is signed, repeated. */
static void one_index_vals(cmx_dtype dt, int seed, int64_t* v) {
  for (int i = 0; i < 12; i++) {
    v[i] = (i * 7 + seed) % 4;
    if (cmx_dtype_is_signed(dt) && (i + seed) % 3 == 0) v[i] -= 5;
  }
}

/* The values of a with shape (6, 5, 4) (or a's own shape) gathered by
 * positions x[0..npos) on axis ax with slice sizes sz: the model. */
static h_tensor one_gather_ref(const h_tensor* a, const int64_t* x,
                               int64_t npos, int ax, const int64_t* sz) {
  int nd = a->ndim;
  int64_t osh[CMX_MAX_NDIM + 1], n = 1, j[CMX_MAX_NDIM], src[CMX_MAX_NDIM];
  osh[0] = npos;
  for (int d = 0; d < nd; d++) osh[d + 1] = sz[d], n *= sz[d];
  h_tensor w = h_alloc(osh, nd + 1, a->dtype);
  for (int64_t p = 0; p < npos; p++)
    for (int64_t e = 0; e < n; e++) {
      su_unravel(e, sz, nd, j);
      for (int d = 0; d < nd; d++) src[d] = j[d];
      src[ax] += x[p] < 0 ? x[p] + a->shape[ax] : x[p];
      int64_t k = su_ravel(src, a->shape, nd);
      w.re[p * n + e] = a->re[k];
      if (w.im) w.im[p * n + e] = a->im[k];
    }
  return w;
}

/* Evaluates r on device dev expecting an index error; returns its
 * message (static storage, overwritten by the next call). */
static const char* one_index_error(cmx_array r, const char* what) {
  static char msg[256];
  cmx_status st = r ? cmx_array_eval(r) : CMX_ERR_VALUE;
  snprintf(msg, sizeof msg, "%s", cmx_last_error());
  CHECK_MSG(st == CMX_ERR_INDEX && strstr(msg, "out of bounds"),
            "%s: eval -> %s '%s'", what, cmx_status_name(st), msg);
  return msg;
}

/* Gather and Scatter with one index array, whose GPU kernels read the
 * index in place (no offsets pass) when its positions lie at one stride:
 * every integer index dtype, negative and repeated indices, contiguous,
 * strided and 0-d index arrays (column-major ones too, which take the
 * offsets pass), slices that are not whole rows (the general kernels,
 * elements of 1 to 16 bytes: a float32 row of 8 moves as two 16-byte
 * vectors), every scatter mode and dtype family. On every device against a
 * model (values whose sums and products are exact in any order); out-of-range
 * indices fail the eval with the CPU's message on every device, empty
 * updates included, and later work is unaffected. */
static void test_one_index_devices(void) {
  int64_t ash[3] = {6, 5, 4}, sz[3] = {6, 2, 3};
  static const cmx_dtype gdts[] = {CMX_FLOAT32, CMX_INT8,      CMX_FLOAT16,
                                   CMX_INT64,   CMX_COMPLEX64, CMX_BOOL,
                                   CMX_UINT16,  CMX_BFLOAT16};
  static const cmx_dtype sdts[] = {CMX_INT32,    CMX_FLOAT32,   CMX_FLOAT16,
                                   CMX_BFLOAT16, CMX_UINT8,     CMX_INT64,
                                   CMX_FLOAT64,  CMX_COMPLEX64, CMX_BOOL};
  char cpu_msg[3][256] = {"", "", ""};
  for (int dv = 0; dv < h_ndevices(); dv++) {
    cmx_stream s = h_stream(dv);
    char dn[16], what[160];
    h_device_name(dv, dn, sizeof dn);
    /* gathers: each index dtype in each layout */
    for (int c = 0; c < 3 * IU_NUM_IDX_DTYPES; c++) {
      cmx_dtype it = IU_IDX_DTYPES[c % IU_NUM_IDX_DTYPES], dt = gdts[c % 8];
      h_layout l = (h_layout)(c / IU_NUM_IDX_DTYPES);
      int64_t v[12];
      one_index_vals(it, c, v);
      h_tensor x = h_random(ash, 3, dt, -50, 50, (uint64_t)c);
      h_tensor want = one_gather_ref(&x, v, 12, 1, sz);
      want.shape[0] = 3, want.shape[1] = 4; /* positions 3x4 */
      memcpy(want.shape + 2, sz, sizeof sz);
      want.ndim = 5;
      cmx_array a = h_array(&x, H_CONTIG), idx = one_index(v, it, l), r = NULL;
      snprintf(what, sizeof what, "%s gather %s by %s %s", dn,
               cmx_dtype_name(dt), cmx_dtype_name(it), h_layout_names[l]);
      OK(cmx_gather(&r, a, &idx, 1, (int[]){1}, 1, sz, 3, s));
      su_check(r, &want, what);
      cmx_array_release_all((cmx_array[]){a, idx, r}, 3);
      h_free(&x);
      h_free(&want);
    }
    /* whole rows of 8 float32 (two 16-byte vectors), a 0-d index */
    {
      int64_t rsh[2] = {10, 8}, rsz[2] = {1, 8}, zero = 0, v[12];
      for (int i = 0; i < 12; i++) v[i] = (i * 7 + 3) % 10 - (i % 3 ? 0 : 10);
      h_tensor x = h_random(rsh, 2, CMX_FLOAT32, -9, 9, 3);
      h_tensor want = one_gather_ref(&x, v, 12, 0, rsz);
      int64_t wsh[4] = {3, 4, 1, 8};
      memcpy(want.shape, wsh, sizeof wsh);
      want.ndim = 4;
      cmx_array a = h_array(&x, H_CONTIG),
                idx = one_index(v, CMX_INT32, H_STRIDED), r = NULL;
      OK(cmx_gather(&r, a, &idx, 1, (int[]){0}, 1, rsz, 2, s));
      snprintf(what, sizeof what, "%s gather vector rows", dn);
      su_check(r, &want, what);
      cmx_array_release(r);
      h_free(&want);
      int64_t x0 = -3;
      want = one_gather_ref(&x, &x0, 1, 0, rsz);
      memcpy(want.shape, rsz, sizeof rsz); /* no position dims */
      want.ndim = 2;
      cmx_array i0 = NULL;
      OK(cmx_array_from_data(&i0, &x0, &zero, 0, CMX_INT64));
      OK(cmx_gather(&r, a, &i0, 1, (int[]){0}, 1, rsz, 2, s));
      snprintf(what, sizeof what, "%s gather 0-d index", dn);
      su_check(r, &want, what);
      cmx_array_release_all((cmx_array[]){a, idx, r, i0}, 4);
      h_free(&x);
      h_free(&want);
    }
    /* scatters: every mode and dtype family, 12 and one position */
    for (int c = 0; c < 2 * IU_NUM_MODES * 9; c++) {
      int mode = c % IU_NUM_MODES;
      bool one = c >= IU_NUM_MODES * 9;
      cmx_dtype dt = sdts[(c / IU_NUM_MODES) % 9],
                it = IU_IDX_DTYPES[c % IU_NUM_IDX_DTYPES];
      h_layout l = (h_layout)(c % 3);
      int64_t v[12], npos = one ? 1 : 12;
      one_index_vals(it, c, v);
      bool uns = !cmx_dtype_is_signed(dt) && dt != CMX_BOOL &&
                 !cmx_dtype_is_inexact(dt);
      int64_t ush[5] = {3, 4, 6, 2, 3}, ush1[3] = {6, 2, 3};
      h_tensor x = h_alloc(ash, 3, dt),
               u = one ? h_alloc(ush1, 3, dt) : h_alloc(ush, 5, dt);
      uint64_t rng = (uint64_t)c + 1;
      for (int64_t k = 0; k < x.size + u.size; k++) { /* exact any order */
        double* pr = k < x.size ? &x.re[k] : &u.re[k - x.size];
        int64_t r = mode == IU_PROD ? iu_rand(&rng, 1, 2)
                                    : iu_rand(&rng, uns ? 0 : -9, 9);
        if (mode == IU_PROD && !uns && iu_rand(&rng, 0, 1)) r = -r;
        *pr = h_round_to((double)r, dt);
        double* pi = k < x.size ? (x.im ? &x.im[k] : NULL)
                                : (u.im ? &u.im[k - x.size] : NULL);
        if (pi) *pi = mode == IU_PROD ? 0 : (double)iu_rand(&rng, -3, 3);
      }
      h_tensor want = iu_copy(&x);
      int64_t n = 36, j[3], dst[3];
      for (int64_t p = 0; p < npos; p++)
        for (int64_t e = 0; e < n; e++) {
          su_unravel(e, sz, 3, j);
          memcpy(dst, j, sizeof j);
          dst[1] += v[p] < 0 ? v[p] + 5 : v[p];
          int64_t o = su_ravel(dst, ash, 3), k = p * n + e;
          iu_combine(mode, dt, &want.re[o], want.im ? &want.im[o] : NULL,
                     u.re[k], u.im ? u.im[k] : 0);
        }
      cmx_array a = h_array(&x, H_CONTIG), upd = h_array(&u, H_CONTIG),
                idx = NULL, r = NULL;
      if (one)
        OK(cmx_array_from_data(&idx, v, (int64_t[]){1}, 0, CMX_INT64));
      else
        idx = one_index(v, it, l);
      snprintf(what, sizeof what, "%s %s %s by %s%s", dn, scatter_names[mode],
               cmx_dtype_name(dt), one ? "a 0-d int64" : cmx_dtype_name(it),
               one ? "" : h_layout_names[l]);
      OK(scatter_fns[mode](&r, a, &idx, 1, upd, (int[]){1}, 1, s));
      h_tensor got = h_read(r);
      CHECK(iu_close(&got, &want, NULL, 0, what));
      h_free(&got);
      cmx_array_release_all((cmx_array[]){a, upd, idx, r}, 4);
      h_free(&x);
      h_free(&u);
      h_free(&want);
    }
    /* out of range: a gather, a scatter (winner pass), empty updates */
    {
      int64_t v[12], ush[5] = {3, 4, 6, 2, 3}, esh[5] = {3, 4, 0, 2, 3};
      one_index_vals(CMX_INT16, 0, v);
      v[7] = 4; /* 4 + 2 > 5 */
      h_tensor x = h_random(ash, 3, CMX_FLOAT32, -9, 9, 5);
      cmx_array a = h_array(&x, H_CONTIG),
                idx = one_index(v, CMX_INT16, H_TRANSPOSED), u = NULL, e = NULL,
                r[3] = {NULL, NULL, NULL};
      OK(cmx_ones(&u, ush, 5, CMX_FLOAT32, s));
      OK(cmx_ones(&e, esh, 5, CMX_FLOAT32, s));
      OK(cmx_gather(&r[0], a, &idx, 1, (int[]){1}, 1, sz, 3, s));
      OK(cmx_scatter(&r[1], a, &idx, 1, u, (int[]){1}, 1, s));
      OK(cmx_scatter_max(&r[2], a, &idx, 1, e, (int[]){1}, 1, s));
      for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "%s out of range %d", dn, k);
        const char* msg = one_index_error(r[k], what);
        if (dv == 0) snprintf(cpu_msg[k], sizeof cpu_msg[k], "%s", msg);
        CHECK_MSG(
            strstr(msg, "Index 4 is out of bounds for axis 1 with size 5") &&
                strcmp(msg, cpu_msg[k]) == 0,
            "%s: '%s' (the cpu: '%s')", what, msg, cpu_msg[k]);
      }
      /* in range again: empty updates leave the array as it was */
      cmx_array_release(idx);
      v[7] = -2;
      idx = one_index(v, CMX_INT16, H_TRANSPOSED);
      cmx_array ok = NULL;
      OK(cmx_scatter_max(&ok, a, &idx, 1, e, (int[]){1}, 1, s));
      snprintf(what, sizeof what, "%s empty updates", dn);
      su_check(ok, &x, what);
      cmx_array_release_all((cmx_array[]){a, idx, u, e, r[0], r[1], r[2], ok},
                            8);
      h_free(&x);
    }
  }
}

/* ---------------- take ---------------- */

static void test_take(void) {
  uint64_t rng = 4242;
  static const cmx_dtype dts[] = {CMX_BOOL,     CMX_INT8,    CMX_UINT16,
                                  CMX_INT64,    CMX_FLOAT16, CMX_FLOAT32,
                                  CMX_COMPLEX64};
  for (int trial = 0; trial < 300; trial++) {
    cmx_dtype dt = dts[trial % 7];
    int nd = (int)iu_rand(&rng, 1, 4);
    int64_t shape[4];
    for (int d = 0; d < nd; d++) shape[d] = iu_rand(&rng, 1, 5);
    bool flat = trial % 5 == 0;
    int axis = (int)iu_rand(&rng, -nd, nd - 1),
        ax = axis < 0 ? axis + nd : axis;
    int64_t size = 1;
    for (int d = 0; d < nd; d++) size *= shape[d];
    int64_t dim = flat ? size : shape[ax];
    int ind = (int)iu_rand(&rng, 0, 2);
    int64_t ishape[2];
    for (int d = 0; d < ind; d++) ishape[d] = iu_rand(&rng, 0, 4);
    cmx_dtype idt = IU_IDX_DTYPES[trial % 3];
    h_tensor it = h_alloc(ishape, ind, idt);
    for (int64_t k = 0; k < it.size; k++)
      it.re[k] = (double)iu_rand(&rng, idt == CMX_INT16 ? 0 : -dim, dim - 1);
    h_tensor x = h_random(shape, nd, dt, -20, 20, (uint64_t)trial);
    /* Reference: a.shape[:ax] + idx.shape + a.shape[ax+1:]. */
    int64_t osh[8];
    int ond = 0;
    if (flat) {
      for (int d = 0; d < ind; d++) osh[ond++] = ishape[d];
    } else {
      for (int d = 0; d < ax; d++) osh[ond++] = shape[d];
      for (int d = 0; d < ind; d++) osh[ond++] = ishape[d];
      for (int d = ax + 1; d < nd; d++) osh[ond++] = shape[d];
    }
    h_tensor want = h_alloc(osh, ond, dt);
    int64_t oi[8], src[4];
    for (int64_t k = 0; k < want.size; k++) {
      su_unravel(k, osh, ond, oi);
      int64_t j;
      if (flat) {
        int64_t v = (int64_t)it.re[su_ravel(oi, ishape, ind)];
        j = v < 0 ? v + size : v;
      } else {
        int64_t v = (int64_t)it.re[su_ravel(oi + ax, ishape, ind)];
        for (int d = 0; d < ax; d++) src[d] = oi[d];
        src[ax] = v < 0 ? v + dim : v;
        for (int d = ax + 1; d < nd; d++) src[d] = oi[d - 1 + ind];
        j = su_ravel(src, shape, nd);
      }
      want.re[k] = x.re[j];
      if (want.im) want.im[k] = x.im[j];
    }
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, nd)) l = SU_CONTIG;
    cmx_array a = su_input(&x, l), idx = h_array(&it, H_STRIDED), r = NULL;
    char what[256];
    su_what(what, sizeof what, flat ? "take flat" : "take", &x, l, "");
    OK(cmx_take(&r, a, idx, flat ? NULL : &axis, S));
    su_check(r, &want, what);
    cmx_array_release_all((cmx_array[]){a, idx, r}, 3);
    h_free(&x);
    h_free(&it);
    h_free(&want);
  }
  /* Errors. */
  int64_t shape[2] = {3, 0};
  cmx_array a = NULL, idx = NULL, fidx = NULL, r = NULL;
  cmx_zeros(&a, shape, 2, CMX_FLOAT32, S);
  cmx_array_from_int64(&idx, 0, CMX_INT32);
  cmx_array_from_double(&fidx, 0, CMX_FLOAT32);
  FAILS(cmx_take(&r, a, idx, (int[]){2}, S), CMX_ERR_INDEX,
        "[take] Received invalid axis 2 for array with 2 dimensions.");
  FAILS(cmx_take(&r, a, idx, (int[]){1}, S), CMX_ERR_VALUE,
        "[take] Cannot do a non-empty take from an empty axis.");
  FAILS(cmx_take(&r, a, fidx, (int[]){0}, S), CMX_ERR_TYPE,
        "[take] Got indices with invalid dtype float32");
  /* An empty take from an empty axis is fine. */
  int64_t zero = 0;
  cmx_array eidx = NULL;
  cmx_zeros(&eidx, &zero, 1, CMX_INT32, S);
  OK(cmx_take(&r, a, eidx, (int[]){1}, S));
  CHECK(r && cmx_array_ndim(r) == 2 && cmx_array_dim(r, 0) == 3 &&
        cmx_array_dim(r, 1) == 0);
  OK(cmx_array_eval(r));
  cmx_array_release_all((cmx_array[]){a, idx, fidx, eidx, r}, 5);
}

/* ---------------- take_along_axis / put_along_axis ---------------- */

static void test_along_axis(void) {
  uint64_t rng = 5151;
  static const cmx_dtype dts[] = {CMX_BOOL,    CMX_UINT8,    CMX_INT32,
                                  CMX_INT64,   CMX_FLOAT16,  CMX_BFLOAT16,
                                  CMX_FLOAT64, CMX_COMPLEX64};
  for (int trial = 0; trial < 400; trial++) {
    cmx_dtype dt = dts[trial % 8];
    bool put = trial % 2;
    bool flat = trial % 7 == 0;
    int nd = (int)iu_rand(&rng, 1, 4);
    int64_t ashape[4], ishape[4], bshape[4];
    int axis = (int)iu_rand(&rng, -nd, nd - 1),
        ax = axis < 0 ? axis + nd : axis;
    for (int d = 0; d < nd; d++) {
      bshape[d] = iu_rand(&rng, 1, 4);
      /* a and indices broadcast against each other off the axis. */
      int which = (int)iu_rand(&rng, 0, 3);
      ashape[d] = which == 1 ? 1 : bshape[d];
      ishape[d] = which == 2 ? 1 : bshape[d];
      if (put) ashape[d] = bshape[d]; /* put keeps a's shape */
    }
    ashape[ax] = iu_rand(&rng, 1, 5);
    ishape[ax] = iu_rand(&rng, 0, 4);
    if (flat) {
      for (int d = 0; d < nd; d++) ishape[d] = iu_rand(&rng, 1, 3);
    }
    h_tensor x = h_random(ashape, nd, dt, -20, 20, (uint64_t)trial);
    int64_t asize = x.size;
    int64_t dim = flat ? asize : ashape[ax];
    h_tensor it = h_alloc(ishape, nd, CMX_INT32);
    for (int64_t k = 0; k < it.size; k++)
      it.re[k] = (double)iu_rand(&rng, -dim, dim - 1);
    /* Output / iteration shape: broadcast off the axis. */
    int64_t osh[4];
    for (int d = 0; d < nd; d++)
      osh[d] = d == ax ? ishape[ax] : (ashape[d] == 1 ? ishape[d] : ashape[d]);
    if (flat) {
      osh[0] = it.size;
    }
    int ond = flat ? 1 : nd;
    char what[256];
    su_what(what, sizeof what, put ? "put_along_axis" : "take_along_axis", &x,
            0, flat ? "flat" : "");
    int l = (int)iu_rand(&rng, 0, SU_NUM_LAYOUTS - 1);
    if (!su_layout_ok(l, nd)) l = SU_CONTIG;
    cmx_array a = su_input(&x, l), idx = h_array(&it, H_STRIDED), r = NULL;
    int64_t oi[4], src[4];
    if (!put) {
      h_tensor want = h_alloc(osh, ond, dt);
      for (int64_t k = 0; k < want.size; k++) {
        int64_t j;
        if (flat) {
          int64_t v = (int64_t)it.re[k];
          j = v < 0 ? v + asize : v;
        } else {
          su_unravel(k, osh, nd, oi);
          for (int d = 0; d < nd; d++) src[d] = ashape[d] == 1 ? 0 : oi[d];
          for (int d = 0; d < nd; d++) oi[d] = ishape[d] == 1 ? 0 : oi[d];
          int64_t v = (int64_t)it.re[su_ravel(oi, ishape, nd)];
          src[ax] = v < 0 ? v + dim : v;
          j = su_ravel(src, ashape, nd);
        }
        want.re[k] = x.re[j];
        if (want.im) want.im[k] = x.im[j];
      }
      OK(cmx_take_along_axis(&r, a, idx, flat ? NULL : &axis, S));
      su_check(r, &want, what);
      h_free(&want);
    } else {
      /* Values: the iteration shape, or a broadcastable one. */
      int64_t vsh[4];
      for (int d = 0; d < ond; d++) vsh[d] = (trial % 3 == 0) ? 1 : osh[d];
      h_tensor v = h_random(vsh, ond, dt, -20, 20, (uint64_t)trial + 3);
      h_tensor want = iu_copy(&x);
      int64_t n = 1;
      for (int d = 0; d < ond; d++) n *= osh[d];
      for (int64_t k = 0; k < n; k++) {
        su_unravel(k, osh, ond, oi);
        int64_t vi[4];
        for (int d = 0; d < ond; d++) vi[d] = vsh[d] == 1 ? 0 : oi[d];
        int64_t vk = su_ravel(vi, vsh, ond), j;
        if (flat) {
          int64_t iv = (int64_t)it.re[k];
          j = iv < 0 ? iv + asize : iv;
        } else {
          int64_t ii[4];
          for (int d = 0; d < nd; d++) ii[d] = ishape[d] == 1 ? 0 : oi[d];
          int64_t iv = (int64_t)it.re[su_ravel(ii, ishape, nd)];
          for (int d = 0; d < nd; d++) src[d] = oi[d];
          src[ax] = iv < 0 ? iv + dim : iv;
          j = su_ravel(src, ashape, nd);
        }
        want.re[j] = v.re[vk];
        if (want.im) want.im[j] = v.im[vk];
      }
      cmx_array va = h_array(&v, H_CONTIG);
      OK(cmx_put_along_axis(&r, a, idx, va, flat ? NULL : &axis, S));
      su_check(r, &want, what);
      cmx_array_release(va);
      h_free(&v);
      h_free(&want);
    }
    cmx_array_release_all((cmx_array[]){a, idx, r}, 3);
    h_free(&x);
    h_free(&it);
  }
}

static void test_along_axis_errors(void) {
  int64_t shape[2] = {3, 4}, ishape[1] = {2}, i2[2] = {2, 4};
  cmx_array a = NULL, i1 = NULL, ib = NULL, fi = NULL, v = NULL, r = NULL;
  cmx_zeros(&a, shape, 2, CMX_FLOAT32, S);
  cmx_zeros(&i1, ishape, 1, CMX_INT32, S);
  cmx_zeros(&ib, i2, 2, CMX_INT32, S);
  cmx_zeros(&fi, shape, 2, CMX_FLOAT32, S);
  cmx_array_from_double(&v, 1, CMX_FLOAT32);
  FAILS(cmx_take_along_axis(&r, a, i1, (int[]){0}, S), CMX_ERR_VALUE,
        "[take_along_axis] Indices of dimension 1 does not match array of "
        "dimension 2.");
  FAILS(cmx_take_along_axis(&r, a, ib, (int[]){3}, S), CMX_ERR_INDEX,
        "[take_along_axis] Received invalid axis 3");
  FAILS(cmx_take_along_axis(&r, a, fi, (int[]){0}, S), CMX_ERR_TYPE,
        "[take_along_axis] Got indices with invalid dtype float32");
  FAILS(cmx_take_along_axis(&r, a, ib, (int[]){1}, S), CMX_ERR_VALUE,
        "[take_along_axis] Shapes (3,4) and (2,4) cannot be broadcast");
  FAILS(cmx_put_along_axis(&r, a, i1, v, (int[]){0}, S), CMX_ERR_VALUE,
        "[put_along_axis] Indices of dimension 1 does not match");
  /* Bounds at evaluation. */
  int32_t bad[8] = {0, 1, 2, 3, 3, 2, 1, 0};
  cmx_array bi = NULL;
  cmx_array_from_data(&bi, bad, i2, 2, CMX_INT32);
  OK(cmx_take_along_axis(&r, a, bi, (int[]){0}, S));
  iu_eval_fails(r,
                "[take_along_axis] Index 3 is out of bounds for axis 0 "
                "with size 3.",
                "take_along_axis bounds");
  cmx_array_release(r);
  OK(cmx_put_along_axis(&r, a, bi, v, (int[]){0}, S));
  iu_eval_fails(r,
                "[put_along_axis] Index 3 is out of bounds for axis 0 with "
                "size 3.",
                "put_along_axis bounds");
  cmx_array_release(r);
  cmx_array_release_all((cmx_array[]){a, i1, ib, fi, v, bi}, 6);
}

/* put_along_axis of a (shape ash) along axis with int32 and int16
 * indices of shape ish (values in [-d, d), d = ash[axis], repeated along
 * the axis), values -k: the last write of each element wins, in the order
 * of the index positions; then one bad index near the end is named. */
static void put_along_case(const int64_t* ash, const int64_t* ish, int axis) {
  int64_t asz = ash[0] * ash[1] * ash[2], isz = ish[0] * ish[1] * ish[2];
  int64_t d = ash[axis];
  float* av = malloc((size_t)asz * sizeof(float));
  float* vv = malloc((size_t)isz * sizeof(float));
  float* want = malloc((size_t)asz * sizeof(float));
  int32_t* iv = malloc((size_t)isz * sizeof(int32_t));
  uint64_t rng = 5 + (uint64_t)axis + (uint64_t)isz;
  for (int64_t k = 0; k < asz; k++) want[k] = av[k] = (float)k;
  for (int64_t k = 0; k < isz; k++) {
    vv[k] = (float)-k;
    iv[k] = (int32_t)iu_rand(&rng, -d, d - 1);
  }
  for (int64_t k = 0; k < isz; k++) { /* positions in row-major order */
    int64_t c[3] = {k / (ish[1] * ish[2]), k / ish[2] % ish[1], k % ish[2]};
    c[axis] = iv[k] < 0 ? iv[k] + d : iv[k];
    want[(c[0] * ash[1] + c[1]) * ash[2] + c[2]] = vv[k];
  }
  cmx_array a = NULL, idx = NULL, v = NULL, r = NULL, i32 = NULL;
  cmx_array_from_data(&a, av, ash, 3, CMX_FLOAT32);
  cmx_array_from_data(&i32, iv, ish, 3, CMX_INT32);
  cmx_array_from_data(&v, vv, ish, 3, CMX_FLOAT32);
  /* int32 (the kernel's fused runs) and int16 (its batches) */
  for (int w = 0; w < 2; w++) {
    if (w == 0)
      idx = cmx_array_retain(i32);
    else
      OK(cmx_astype(&idx, i32, CMX_INT16, S));
    OK(cmx_put_along_axis(&r, a, idx, v, &axis, S));
    const float* got = NULL;
    OK(cmx_array_data(r, (const void**)&got));
    int64_t bad = -1;
    for (int64_t k = 0; got && k < asz && bad < 0; k++)
      if (got[k] != want[k]) bad = k;
    CHECK_MSG(got && bad < 0,
              "put_along_axis [%lld,%lld,%lld] axis %d %s: element %lld",
              (long long)ash[0], (long long)ash[1], (long long)ash[2], axis,
              w ? "int16" : "int32", (long long)bad);
    cmx_array_release_all((cmx_array[]){idx, r}, 2);
    idx = r = NULL;
  }
  cmx_array_release(i32);
  iv[isz - 100] = (int32_t)d; /* out of bounds, among the last positions */
  cmx_array_from_data(&idx, iv, ish, 3, CMX_INT32);
  OK(cmx_put_along_axis(&r, a, idx, v, &axis, S));
  char msg[96];
  snprintf(msg, sizeof msg,
           "[put_along_axis] Index %lld is out of bounds for axis %d with "
           "size %lld.",
           (long long)d, axis, (long long)d);
  iu_eval_fails(r, msg, "put_along_axis bounds");
  cmx_array_release_all((cmx_array[]){a, idx, v, r}, 4);
  free(av);
  free(vv);
  free(want);
  free(iv);
}

/* put_along_axis on the kernel's paths: few rows before the axis (axis 0:
 * one), many positions: the columns after the axis split over threads;
 * the last axis (runs of one position: a fused call an outer row); a
 * short run after the axis (batches). */
static void test_put_along_axis_columns(void) {
  put_along_case((int64_t[]){8, 48, 96}, (int64_t[]){40, 48, 96}, 0);
  put_along_case((int64_t[]){1, 8, 4608}, (int64_t[]){1, 40, 4608}, 1);
  put_along_case((int64_t[]){64, 16, 9}, (int64_t[]){64, 16, 30}, 2);
  put_along_case((int64_t[]){300, 9, 3}, (int64_t[]){300, 20, 3}, 1);
}

/* Element k of a 1-d float32 or int32 array, as double. */
static double elem(cmx_array a, int64_t k) {
  const void* p = NULL;
  if (cmx_array_data(a, &p) != CMX_OK) return NAN;
  return cmx_array_dtype(a) == CMX_FLOAT32 ? ((const float*)p)[k]
                                           : ((const int32_t*)p)[k];
}

/* A uniquely held contiguous input gives its buffer to the result of
 * scatter, put_along_axis and index updates; a shared one does not. */
static void test_donation(void) {
  for (int which = 0; which < 4; which++) {
    cmx_array src = NULL, idx = NULL, upd = NULL, r = NULL;
    OK(cmx_arange(&src, 0, 1000, 1, CMX_FLOAT32, S));
    OK(cmx_array_eval(src));
    const void *p = NULL, *q = NULL;
    OK(cmx_array_data(src, &p));
    int64_t iv[3] = {5, -1, 5}, three = 3, ush[2] = {3, 1};
    cmx_array_from_data(&idx, iv, &three, 1, CMX_INT64);
    OK(cmx_ones(&upd, which == 0 ? ush : &three, which == 0 ? 2 : 1,
                CMX_FLOAT32, S));
    cmx_index ix = cmx_index_array(idx);
    int ax = 0;
    switch (which) {
      case 0:
        OK(cmx_scatter_add(&r, src, &idx, 1, upd, &ax, 1, S));
        break;
      case 1:
        OK(cmx_put_along_axis(&r, src, idx, upd, NULL, S));
        break;
      case 2:
        OK(cmx_index_update(&r, src, &ix, 1, upd, CMX_UPDATE_ADD, S));
        break;
      default:
        OK(cmx_index_set(&r, src, &ix, 1, upd, S));
        break;
    }
    cmx_array_release(src);
    OK(cmx_array_data(r, &q));
    CHECK_MSG(p == q, "donation case %d", which);
    /* add cases: 5 + 1 + 1 and 999 + 1; put/set: 1 and 1. */
    bool add = which == 0 || which == 2;
    CHECK_MSG(elem(r, 5) == (add ? 7 : 1) && elem(r, 999) == (add ? 1000 : 1) &&
                  elem(r, 6) == 6,
              "donation case %d values", which);
    cmx_array_release_all((cmx_array[]){idx, upd, r}, 3);
  }
  /* Shared: the input stays intact and the result has its own buffer. */
  cmx_array src = NULL, idx = NULL, one = NULL, r = NULL;
  OK(cmx_arange(&src, 0, 10, 1, CMX_INT32, S));
  OK(cmx_array_eval(src));
  cmx_array_from_int64(&idx, 3, CMX_INT32);
  cmx_array_weak_int(&one, 100);
  cmx_index ix = cmx_index_array(idx);
  OK(cmx_index_update(&r, src, &ix, 1, one, CMX_UPDATE_ADD, S));
  const void *p = NULL, *q = NULL;
  OK(cmx_array_data(r, &q));
  OK(cmx_array_data(src, &p));
  CHECK(p != q && elem(src, 3) == 3 && elem(r, 3) == 103);
  cmx_array_release_all((cmx_array[]){src, idx, one, r}, 4);
}

int main(void) {
  RUN(test_gather_random);
  RUN(test_gather_large);
  RUN(test_gather_bounds);
  RUN(test_gather_errors);
  RUN(test_scatter_random);
  RUN(test_scatter_repeated);
  RUN(test_scatter_nan);
  RUN(test_scatter_large);
  RUN(test_scatter_errors);
  RUN(test_scatter_fused);
  RUN(test_one_index_devices);
  RUN(test_take);
  RUN(test_along_axis);
  RUN(test_along_axis_errors);
  RUN(test_put_along_axis_columns);
  RUN(test_donation);
  return test_summary("test_indexing");
}
