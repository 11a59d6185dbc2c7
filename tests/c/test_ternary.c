/* where and clip: every dtype, broadcasting shape triples (0-d, empty,
 * large), every layout combination, against plain reference loops;
 * non-bool conditions, promotion with weak scalars, NaN handling and
 * error messages. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

typedef struct {
  h_shape c, x, y;
} shape3;

static const shape3 k_shapes[] = {
    {{2, {3, 4}}, {2, {3, 4}}, {2, {3, 4}}},
    {{2, {3, 1}}, {2, {1, 4}}, {0, {0}}},
    {{0, {0}}, {2, {2, 3}}, {1, {3}}},
    {{2, {0, 3}}, {1, {3}}, {2, {1, 3}}},
    {{3, {2, 3, 4}}, {2, {3, 4}}, {3, {2, 1, 4}}},
    {{1, {70001}}, {1, {70001}}, {0, {0}}},
    {{0, {0}}, {0, {0}}, {0, {0}}},
    {{4, {2, 3, 4, 5}}, {4, {2, 3, 4, 5}}, {1, {5}}},
};
#define NUM_SHAPES ((int)(sizeof k_shapes / sizeof k_shapes[0]))

/* Broadcast shape of up to three shapes (they are valid by construction). */
static int bshape(const h_shape* const* s, int n, int64_t* out) {
  int nd = 0;
  for (int k = 0; k < n; k++) nd = s[k]->ndim > nd ? s[k]->ndim : nd;
  for (int d = 0; d < nd; d++) {
    out[d] = 1;
    for (int k = 0; k < n; k++) {
      int dk = d - (nd - s[k]->ndim);
      if (dk >= 0 && s[k]->dims[dk] != 1) out[d] = s[k]->dims[dk];
    }
  }
  return nd;
}

/* Flat index into operand s of output position idx (broadcasting). */
static int64_t bindex(const h_shape* s, const int64_t* idx, int nd) {
  int64_t off = 0;
  for (int d = 0; d < s->ndim; d++) {
    int od = d + (nd - s->ndim);
    off = off * s->dims[d] + (s->dims[d] == 1 ? 0 : idx[od]);
  }
  return off;
}

/* where(cond, x, y) for x, y of dtype dt and cond of dtype cdt. */
static void check_where(cmx_dtype dt, cmx_dtype cdt) {
  for (int si = 0; si < NUM_SHAPES; si++) {
    const shape3* sh = &k_shapes[si];
    h_tensor c = h_random(sh->c.dims, sh->c.ndim, cdt, -1, 1, si + 1);
    h_tensor x = h_random(sh->x.dims, sh->x.ndim, dt, -50, 50, si + 101);
    h_tensor y = h_random(sh->y.dims, sh->y.ndim, dt, -50, 50, si + 201);
    const h_shape* all[3] = {&sh->c, &sh->x, &sh->y};
    int64_t osh[CMX_MAX_NDIM], idx[CMX_MAX_NDIM] = {0};
    int nd = bshape(all, 3, osh);
    h_tensor want = h_alloc(osh, nd, dt);
    for (int64_t k = 0; k < want.size; k++) {
      int64_t ic = bindex(&sh->c, idx, nd), ix = bindex(&sh->x, idx, nd),
              iy = bindex(&sh->y, idx, nd);
      bool t = c.re[ic] != 0 || (c.im && c.im[ic] != 0);
      want.re[k] = t ? x.re[ix] : y.re[iy];
      if (want.im) want.im[k] = t ? x.im[ix] : y.im[iy];
      for (int d = nd - 1; d >= 0; d--) {
        if (++idx[d] < osh[d]) break;
        idx[d] = 0;
      }
    }
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array ac = h_array(&c, (h_layout)l), ax = h_array(&x, (h_layout)l),
                ay = h_array(&y, (h_layout)((l + 1) % H_NUM_LAYOUTS)), r;
      char what[128];
      snprintf(what, sizeof what, "where %s cond %s shapes %d layout %s",
               cmx_dtype_name(dt), cmx_dtype_name(cdt), si, h_layout_names[l]);
      cmx_status st = cmx_where(&r, ac, ax, ay, S);
      CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
      if (st == CMX_OK) {
        h_tensor got = h_read(r);
        CHECK(h_close(&got, &want, 0, 0, what));
        h_free(&got);
        cmx_array_release(r);
      }
      cmx_array_release_all((cmx_array[]){ac, ax, ay}, 3);
    }
    h_free(&c);
    h_free(&x);
    h_free(&y);
    h_free(&want);
  }
}

static void test_where_table(void) {
  for (int di = 0; H_ALL[di] != CMX_NUM_DTYPES; di++)
    check_where(H_ALL[di], CMX_BOOL);
  /* conditions of other dtypes are truth values (converted to bool) */
  const cmx_dtype conds[4] = {CMX_INT32, CMX_FLOAT32, CMX_UINT8, CMX_COMPLEX64};
  for (int k = 0; k < 4; k++) check_where(CMX_FLOAT32, conds[k]);
}

static cmx_array arr(const void* data, int64_t n, cmx_dtype dt) {
  cmx_array a;
  OK(cmx_array_from_data(&a, data, &n, 1, dt));
  return a;
}

static void test_where_dtypes_errors(void) {
  uint8_t cv[3] = {1, 0, 1};
  int8_t iv[3] = {1, 2, 3};
  float fv[3] = {0.5f, NAN, 2.5f};
  cmx_array c = arr(cv, 3, CMX_BOOL), i8 = arr(iv, 3, CMX_INT8),
            f = arr(fv, 3, CMX_FLOAT32), w0, w15, r;
  OK(cmx_array_weak_int(&w0, -7));
  OK(cmx_array_weak_float(&w15, 1.5));
  OK(cmx_where(&r, c, i8, w0, S));
  CHECK(cmx_array_dtype(r) == CMX_INT8);
  int8_t ig[3];
  OK(cmx_array_copy_to(r, ig, 3));
  CHECK(ig[0] == 1 && ig[1] == -7 && ig[2] == 3);
  cmx_array_release(r);
  OK(cmx_where(&r, c, i8, f, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32);
  float fg[3];
  OK(cmx_array_copy_to(r, fg, sizeof fg));
  CHECK(fg[0] == 1 && isnan(fg[1]) && fg[2] == 3);
  cmx_array_release(r);
  OK(cmx_where(&r, c, w15, w0, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32 && cmx_array_ndim(r) == 1);
  OK(cmx_array_copy_to(r, fg, sizeof fg));
  CHECK(fg[0] == 1.5f && fg[1] == -7 && fg[2] == 1.5f);
  cmx_array_release(r);
  int64_t n4 = 4;
  float z4[4] = {0};
  cmx_array bad;
  OK(cmx_array_from_data(&bad, z4, &n4, 1, CMX_FLOAT32));
  FAILS(cmx_where(&r, c, i8, bad, S), CMX_ERR_VALUE,
        "[where] shapes (3) and (4) cannot be broadcast.");
  CHECK(r == NULL);
  FAILS(cmx_where(&r, c, NULL, f, S), CMX_ERR_VALUE, "[where]");
  cmx_array_release_all((cmx_array[]){c, i8, f, w0, w15, bad}, 6);
}

/* clip(a, lo, hi) = minimum(maximum(a, lo), hi) with broadcasting bounds,
 * NULL bounds, NaNs propagating. */
static void test_clip(void) {
  for (int di = 0; H_REAL[di] != CMX_NUM_DTYPES; di++) {
    cmx_dtype dt = H_REAL[di];
    int64_t sh[2] = {5, 7}, lsh[1] = {7}, hsh[2] = {5, 1};
    h_tensor a = h_random(sh, 2, dt, -20, 20, 1);
    h_tensor lo = h_random(lsh, 1, dt, -10, 0, 2);
    h_tensor hi = h_random(hsh, 2, dt, 0, 10, 3);
    h_tensor w[3];
    for (int k = 0; k < 3; k++) w[k] = h_alloc(sh, 2, dt);
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 7; j++) {
        double v = a.re[i * 7 + j], l = lo.re[j], h = hi.re[i];
        double vl = v < l ? l : v, vh = v > h ? h : v;
        w[0].re[i * 7 + j] = vl > h ? h : vl; /* both bounds */
        w[1].re[i * 7 + j] = vl;              /* lower only */
        w[2].re[i * 7 + j] = vh;              /* upper only */
      }
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array x = h_array(&a, (h_layout)l), xl = h_array(&lo, H_STRIDED),
                xh = h_array(&hi, (h_layout)l), r[3];
      OK(cmx_clip(&r[0], x, xl, xh, S));
      OK(cmx_clip(&r[1], x, xl, NULL, S));
      OK(cmx_clip(&r[2], x, NULL, xh, S));
      for (int k = 0; k < 3; k++) {
        h_tensor got = h_read(r[k]);
        char what[96];
        snprintf(what, sizeof what, "clip %s case %d layout %s",
                 cmx_dtype_name(dt), k, h_layout_names[l]);
        CHECK(h_close(&got, &w[k], 0, 0, what));
        h_free(&got);
        cmx_array_release(r[k]);
      }
      cmx_array_release_all((cmx_array[]){x, xl, xh}, 3);
    }
    for (int k = 0; k < 3; k++) h_free(&w[k]);
    h_free(&a);
    h_free(&lo);
    h_free(&hi);
  }
  /* NaN propagates; weak bounds keep the dtype; float bounds promote */
  float fv[4] = {NAN, -5, 5, 0.5f};
  int8_t iv[4] = {-100, 0, 100, 7};
  cmx_array f = arr(fv, 4, CMX_FLOAT32), i8 = arr(iv, 4, CMX_INT8), wl, wh, fl,
            r;
  OK(cmx_array_weak_int(&wl, -1));
  OK(cmx_array_weak_int(&wh, 1));
  OK(cmx_array_from_double(&fl, 0.5, CMX_FLOAT32));
  OK(cmx_clip(&r, f, wl, wh, S));
  float fg[4];
  OK(cmx_array_copy_to(r, fg, sizeof fg));
  CHECK(isnan(fg[0]) && fg[1] == -1 && fg[2] == 1 && fg[3] == 0.5f);
  cmx_array_release(r);
  OK(cmx_clip(&r, i8, wl, wh, S));
  CHECK(cmx_array_dtype(r) == CMX_INT8);
  int8_t ig[4];
  OK(cmx_array_copy_to(r, ig, 4));
  CHECK(ig[0] == -1 && ig[1] == 0 && ig[2] == 1 && ig[3] == 1);
  cmx_array_release(r);
  OK(cmx_clip(&r, i8, fl, NULL, S));
  CHECK(cmx_array_dtype(r) == CMX_FLOAT32);
  OK(cmx_array_copy_to(r, fg, sizeof fg));
  CHECK(fg[0] == 0.5f && fg[1] == 0.5f && fg[2] == 100 && fg[3] == 7);
  cmx_array_release(r);
  /* lo > hi gives hi everywhere, as NumPy */
  OK(cmx_clip(&r, i8, wh, wl, S));
  OK(cmx_array_copy_to(r, ig, 4));
  CHECK(ig[0] == -1 && ig[1] == -1 && ig[2] == -1 && ig[3] == -1);
  cmx_array_release(r);
  FAILS(cmx_clip(&r, f, NULL, NULL, S), CMX_ERR_VALUE,
        "[clip] At most one of a_min and a_max may be None.");
  CHECK(r == NULL);
  FAILS(cmx_clip(&r, NULL, wl, wh, S), CMX_ERR_VALUE, "[clip]");
  cmx_array_release_all((cmx_array[]){f, i8, wl, wh, fl}, 5);
}

int main(void) {
  RUN(test_where_table);
  RUN(test_where_dtypes_errors);
  RUN(test_clip);
  return test_summary("test_ternary");
}
