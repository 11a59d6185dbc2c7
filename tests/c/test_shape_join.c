/* Shape ops that build arrays from pieces: slice_update, concatenate,
 * stack, split_sections, split_indices, pad, repeat, tile, roll, unstack,
 * atleast_1d/2d/3d. Checked
 * on many shapes, layouts and dtypes against index arithmetic (with dtype
 * promotion where the op promotes), plus buffer donation, views and
 * error messages. */
#include "shape_util.h"

/* A random (start, stop, step) per axis, and the Python-normalised start
 * and extent. */
static void random_region(const int64_t* shape, int nd, uint64_t* rng,
                          int64_t* st, int64_t* sp, int64_t* step, int64_t* nst,
                          int64_t* ext) {
  for (int d = 0; d < nd; d++) {
    int64_t n = shape[d];
    st[d] = (int64_t)(h_rand_u64(rng) % (uint64_t)(2 * n + 5)) - n - 2;
    sp[d] = (int64_t)(h_rand_u64(rng) % (uint64_t)(2 * n + 5)) - n - 2;
    step[d] = (int64_t)(h_rand_u64(rng) % 5) - 2;
    if (step[d] == 0) step[d] = 1;
    int64_t a = st[d], b = sp[d];
    ext[d] = py_slice(n, &a, &b, step[d]);
    nst[d] = a;
  }
}

/* ---------------- slice_update ---------------- */

static void test_slice_update(void) {
  for (int di = 0; SU_DTYPES[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      cmx_dtype dt = SU_DTYPES[di];
      int nd = sh->ndim;
      uint64_t rng = (uint64_t)(si * 100 + di);
      h_tensor x = h_random(sh->dims, nd, dt, -50, 50, rng);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, nd)) continue;
        for (int trial = 0; trial < 4; trial++) {
          int64_t st[4], sp[4], step[4], nst[4], ext[4], ush[4];
          random_region(sh->dims, nd, &rng, st, sp, step, nst, ext);
          /* Update shapes: the region, or one that broadcasts to it (a
           * size-1 first dim, or fewer dims); dtype sometimes other. */
          int und = nd;
          for (int d = 0; d < nd; d++) ush[d] = ext[d];
          if (trial == 1 && nd) ush[0] = 1;
          int off = 0;
          if (trial == 2 && nd) off = 1, und = nd - 1;
          cmx_dtype udt = trial == 3 ? CMX_INT32 : dt;
          h_tensor u = h_random(ush + off, und, udt, -50, 50, rng + 7);
          /* Reference: src with the region overwritten. */
          h_tensor want = h_alloc(sh->dims, nd, dt);
          for (int64_t k = 0; k < x.size; k++) {
            want.re[k] = x.re[k];
            if (want.im) want.im[k] = x.im[k];
          }
          int64_t reg = 1, idx[4], j[4], ui[4];
          for (int d = 0; d < nd; d++) reg *= ext[d];
          for (int64_t k = 0; k < reg; k++) {
            su_unravel(k, ext, nd, idx);
            for (int d = 0; d < nd; d++) j[d] = nst[d] + idx[d] * step[d];
            for (int d = 0; d < und; d++)
              ui[d] = ush[d + off] == 1 ? 0 : idx[d + off];
            int64_t dst = su_ravel(j, sh->dims, nd),
                    src = su_ravel(ui, ush + off, und);
            want.re[dst] = h_round_to(u.re[src], dt);
            if (want.im) want.im[dst] = u.im ? u.im[src] : 0;
          }
          cmx_array a = su_input(&x, l);
          cmx_array b = su_input(&u, su_layout_ok(l, und) ? l : SU_CONTIG);
          cmx_array r = NULL;
          char what[256];
          su_what(what, sizeof what, "slice_update", &x, l, "");
          OK(cmx_slice_update(&r, a, b, st, sp, step, S));
          su_check(r, &want, what);
          /* The source is unchanged. */
          su_check(a, &x, "slice_update source");
          cmx_array_release_all((cmx_array[]){a, b, r}, 3);
          h_free(&u);
          h_free(&want);
        }
      }
      h_free(&x);
    }
}

static void test_slice_update_donation(void) {
  /* A uniquely held contiguous source gives its buffer to the result. */
  int64_t n = 1000;
  cmx_array src, upd, r;
  OK(cmx_arange(&src, 0, 1000, 1, CMX_FLOAT32, S));
  OK(cmx_array_eval(src));
  const void* p;
  OK(cmx_array_data(src, &p));
  OK(cmx_array_weak_float(&upd, -1.0));
  OK(cmx_slice_update(&r, src, upd, (int64_t[]){10}, (int64_t[]){20}, NULL, S));
  cmx_array_release(src);
  const void* q;
  OK(cmx_array_data(r, &q));
  CHECK(p == q);
  const float* f = q;
  bool ok = true;
  for (int i = 0; i < 1000; i++) ok &= f[i] == (i >= 10 && i < 20 ? -1.f : i);
  CHECK(ok);
  cmx_array_release(r);
  /* A source still held elsewhere is copied and left intact. */
  OK(cmx_arange(&src, 0, 1000, 1, CMX_FLOAT32, S));
  OK(cmx_slice_update(&r, src, upd, (int64_t[]){-1}, (int64_t[]){-1001},
                      (int64_t[]){-100}, S));
  float got[1000], orig[1000];
  OK(cmx_array_copy_to(r, got, sizeof got));
  OK(cmx_array_copy_to(src, orig, sizeof orig));
  ok = true;
  for (int i = 0; i < 1000; i++) {
    ok &= orig[i] == i;
    ok &= got[i] == (i % 100 == 99 ? -1.f : i);
  }
  CHECK(ok);
  cmx_array_release(r);
  /* x[1:] = x[:-1] reads the old values (update aliases the source). */
  cmx_array head;
  OK(cmx_slice(&head, src, (int64_t[]){0}, (int64_t[]){999}, NULL, S));
  OK(cmx_slice_update(&r, src, head, (int64_t[]){1}, (int64_t[]){1000}, NULL,
                      S));
  cmx_array_release(head);
  cmx_array_release(src);
  OK(cmx_array_copy_to(r, got, sizeof got));
  ok = got[0] == 0;
  for (int i = 1; i < 1000; i++) ok &= got[i] == i - 1;
  CHECK(ok);
  cmx_array_release(r);
  /* Replacing everything gives the (broadcast) update. */
  OK(cmx_zeros(&src, &n, 1, CMX_INT8, S));
  OK(cmx_slice_update(&r, src, upd, (int64_t[]){0}, (int64_t[]){1000}, NULL,
                      S));
  CHECK(cmx_array_dtype(r) == CMX_INT8 && cmx_array_ndim(r) == 1);
  int8_t g8[1000];
  OK(cmx_array_copy_to(r, g8, sizeof g8));
  CHECK(g8[0] == -1 && g8[999] == -1);
  cmx_array e;
  int64_t three = 3;
  cmx_array bad;
  OK(cmx_zeros(&bad, &three, 1, CMX_INT8, S));
  FAILS(
      cmx_slice_update(&e, src, bad, (int64_t[]){0}, (int64_t[]){10}, NULL, S),
      CMX_ERR_VALUE,
      "[broadcast_to] Cannot broadcast array of shape (3) into shape (10).");
  FAILS(cmx_slice_update(&e, src, upd, (int64_t[]){0}, (int64_t[]){10},
                         (int64_t[]){0}, S),
        CMX_ERR_VALUE, "[slice_update] Slice step cannot be zero.");
  cmx_array_release_all((cmx_array[]){src, upd, r, bad}, 4);
}

/* ---------------- concatenate / stack ---------------- */

static void test_concatenate(void) {
  static const cmx_dtype trio[][3] = {{CMX_INT16, CMX_UINT8, CMX_INT16},
                                      {CMX_BOOL, CMX_BOOL, CMX_BOOL},
                                      {CMX_FLOAT16, CMX_INT64, CMX_FLOAT16},
                                      {CMX_COMPLEX64, CMX_FLOAT32, CMX_INT8},
                                      {CMX_UINT32, CMX_INT32, CMX_FLOAT64},
                                      {CMX_BFLOAT16, CMX_BFLOAT16, CMX_UINT16}};
  for (size_t ti = 0; ti < sizeof trio / sizeof trio[0]; ti++) {
    cmx_dtype odt = cmx_dtype_promote(
        cmx_dtype_promote(trio[ti][0], trio[ti][1]), trio[ti][2]);
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      if (nd == 0 || sh->dims[0] > 1000) continue;
      for (int ax = 0; ax < nd; ax++) {
        int64_t ext[3] = {sh->dims[ax], 1, 2};
        h_tensor xs[3];
        int64_t osh[4];
        for (int d = 0; d < nd; d++) osh[d] = sh->dims[d];
        osh[ax] = ext[0] + ext[1] + ext[2];
        for (int i = 0; i < 3; i++) {
          int64_t s[4];
          memcpy(s, sh->dims, sizeof s);
          s[ax] = ext[i];
          xs[i] =
              h_random(s, nd, trio[ti][i], -30, 30, (uint64_t)(ti * 10 + i));
        }
        h_tensor want = h_alloc(osh, nd, odt);
        int64_t idx[4];
        for (int64_t k = 0; k < want.size; k++) {
          su_unravel(k, osh, nd, idx);
          int i = 0;
          while (idx[ax] >= ext[i]) idx[ax] -= ext[i++];
          int64_t j = su_ravel(idx, xs[i].shape, nd);
          want.re[k] = h_round_to(xs[i].re[j], odt);
          if (want.im) want.im[k] = xs[i].im ? xs[i].im[j] : 0;
        }
        for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
          if (!su_layout_ok(l, nd)) continue;
          cmx_array in[3], r = NULL;
          for (int i = 0; i < 3; i++)
            in[i] = su_input(&xs[i],
                             (l + i) % SU_NUM_LAYOUTS *
                                 su_layout_ok((l + i) % SU_NUM_LAYOUTS, nd));
          char what[256], ex[32];
          snprintf(ex, sizeof ex, "axis %d", ax);
          su_what(what, sizeof what, "concatenate", &xs[0], l, ex);
          OK(cmx_concatenate(&r, in, 3, ax - (l % 2) * nd, S));
          su_check(r, &want, what);
          cmx_array_release_all(in, 3);
          cmx_array_release(r);
        }
        for (int i = 0; i < 3; i++) h_free(&xs[i]);
        h_free(&want);
      }
    }
  }
  int64_t s23[2] = {2, 3}, s24[2] = {2, 4}, s2 = 2;
  cmx_array a, b, c, e, r;
  OK(cmx_zeros(&a, s23, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&b, s24, 2, CMX_FLOAT32, S));
  OK(cmx_zeros(&c, &s2, 1, CMX_FLOAT32, S));
  FAILS(cmx_concatenate(&e, (cmx_array[]){a, b}, 2, 0, S), CMX_ERR_VALUE,
        "[concatenate] All the input array dimensions must match exactly "
        "except for the concatenation axis. However, the provided shapes are "
        "(2,3), (2,4), and the concatenation axis is 0.");
  FAILS(cmx_concatenate(&e, (cmx_array[]){a, c}, 2, 0, S), CMX_ERR_VALUE,
        "[concatenate] All the input arrays must have the same number of "
        "dimensions. However, got arrays with dimensions 2 and 1.");
  FAILS(cmx_concatenate(&e, (cmx_array[]){a, b}, 2, 2, S), CMX_ERR_INDEX,
        "[concatenate] axis 2 is out of bounds for array of dimension 2");
  FAILS(cmx_concatenate(&e, NULL, 0, 0, S), CMX_ERR_VALUE,
        "[concatenate] No arrays provided for concatenation");
  FAILS(cmx_concatenate(&e, (cmx_array[]){a, NULL}, 2, 0, S), CMX_ERR_VALUE,
        "null array");
  OK(cmx_concatenate(&r, (cmx_array[]){a, b}, 2, -1, S));
  CHECK(cmx_array_dim(r, 1) == 7);
  cmx_array_release(r);
  OK(cmx_concatenate(&r, (cmx_array[]){a}, 1, 0, S));
  CHECK(r == a);
  cmx_array_release(r);
  /* Stack. */
  FAILS(cmx_stack(&e, (cmx_array[]){a, b}, 2, 0, S), CMX_ERR_VALUE,
        "[stack] All arrays must have the same shape");
  FAILS(cmx_stack(&e, NULL, 0, 0, S), CMX_ERR_VALUE,
        "[stack] No arrays provided for stacking");
  FAILS(cmx_stack(&e, (cmx_array[]){a, a}, 2, 3, S), CMX_ERR_INDEX,
        "[stack] axis 3 is out of bounds for array of dimension 3");
  cmx_array_release_all((cmx_array[]){a, b, c}, 3);
}

static void test_stack(void) {
  for (int di = 0; SU_FEW[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      if (sh->ndim && sh->dims[0] > 1000) continue;
      h_tensor xs[3];
      for (int i = 0; i < 3; i++)
        xs[i] =
            h_random(sh->dims, nd, SU_FEW[di], -9, 9, (uint64_t)(si * 3 + i));
      for (int ax = -nd - 1; ax <= nd; ax++) {
        int a0 = ax < 0 ? ax + nd + 1 : ax;
        int64_t osh[5];
        for (int d = 0, j = 0; d <= nd; d++)
          osh[d] = d == a0 ? 3 : sh->dims[j++];
        h_tensor want = h_alloc(osh, nd + 1, SU_FEW[di]);
        int64_t idx[5], jdx[4];
        for (int64_t k = 0; k < want.size; k++) {
          su_unravel(k, osh, nd + 1, idx);
          for (int d = 0, j = 0; d <= nd; d++)
            if (d != a0) jdx[j++] = idx[d];
          int64_t src = su_ravel(jdx, sh->dims, nd);
          want.re[k] = xs[idx[a0]].re[src];
          if (want.im) want.im[k] = xs[idx[a0]].im[src];
        }
        int l = (ax + nd + 1) % SU_NUM_LAYOUTS;
        if (!su_layout_ok(l, nd)) l = SU_CONTIG;
        cmx_array in[3], r = NULL;
        for (int i = 0; i < 3; i++) in[i] = su_input(&xs[i], l);
        char what[256];
        su_what(what, sizeof what, "stack", &xs[0], l, "");
        OK(cmx_stack(&r, in, 3, ax, S));
        su_check(r, &want, what);
        cmx_array_release_all(in, 3);
        cmx_array_release(r);
        h_free(&want);
      }
      for (int i = 0; i < 3; i++) h_free(&xs[i]);
    }
}

/* ---------------- split ---------------- */

static void check_split(const h_tensor* x, cmx_array a, int l, int ax,
                        const int64_t* idx, int nidx, cmx_array* outs) {
  int nd = x->ndim;
  int64_t prev = 0;
  for (int i = 0; i <= nidx; i++) {
    int64_t st[4], sp[4], step[4] = {1, 1, 1, 1}, nst[4], ext[4];
    for (int d = 0; d < nd; d++) {
      st[d] = 0;
      sp[d] = x->shape[d];
    }
    st[ax] = prev;
    sp[ax] = i < nidx ? idx[i] : x->shape[ax];
    prev = sp[ax];
    for (int d = 0; d < nd; d++) {
      int64_t b = st[d], e = sp[d];
      ext[d] = py_slice(x->shape[d], &b, &e, 1);
      nst[d] = b;
    }
    h_tensor want = h_alloc(ext, nd, x->dtype);
    int64_t k2[4];
    for (int64_t k = 0; k < want.size; k++) {
      su_unravel(k, ext, nd, k2);
      for (int d = 0; d < nd; d++) k2[d] += nst[d];
      int64_t src = su_ravel(k2, x->shape, nd);
      want.re[k] = x->re[src];
      if (want.im) want.im[k] = x->im[src];
    }
    char what[256], ex[32];
    snprintf(ex, sizeof ex, "piece %d axis %d", i, ax);
    su_what(what, sizeof what, "split", x, l, ex);
    su_check(outs[i], &want, what);
    if (want.size) CHECK_MSG(su_shares(outs[i], a), "%s: not a view", what);
    h_free(&want);
    (void)step;
  }
}

static void test_split(void) {
  for (int di = 0; SU_FEW[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      if (nd == 0) continue;
      h_tensor x = h_random(sh->dims, nd, SU_FEW[di], -9, 9, (uint64_t)si);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, nd)) continue;
        cmx_array a = su_input(&x, l);
        for (int ax = 0; ax < nd; ax++) {
          int64_t n = sh->dims[ax];
          /* Indices: sorted, unsorted, negative, out of range, none. */
          int64_t sets[4][4] = {
              {1, n / 2, n - 1, n}, {n, 1, 2, 0}, {-1, -n - 5, n + 5, 2}, {0}};
          int counts[4] = {4, 4, 4, 0};
          for (int c = 0; c < 4; c++) {
            cmx_array outs[5];
            OK(cmx_split_indices(outs, a, sets[c], counts[c], ax - (c % 2) * nd,
                                 S));
            check_split(&x, a, l, ax, sets[c], counts[c], outs);
            cmx_array_release_all(outs, (size_t)counts[c] + 1);
          }
          for (int sec = 1; sec <= 4; sec++) {
            cmx_array outs[4];
            if (n % sec) {
              cmx_array e[4];
              char msg[256], shs[128];
              snprintf(msg, sizeof msg,
                       "[split] Array split does not result in sub arrays "
                       "with equal size: attempting %d splits along axis %d "
                       "for shape %s.",
                       sec, ax, cmx__shape_str(sh->dims, nd, shs, sizeof shs));
              FAILS(cmx_split_sections(e, a, sec, ax, S), CMX_ERR_VALUE, msg);
              CHECK(e[0] == NULL);
              continue;
            }
            OK(cmx_split_sections(outs, a, sec, ax, S));
            int64_t idx[3];
            for (int i = 0; i < sec - 1; i++) idx[i] = (i + 1) * (n / sec);
            check_split(&x, a, l, ax, idx, sec - 1, outs);
            cmx_array_release_all(outs, (size_t)sec);
          }
        }
        cmx_array e[2];
        FAILS(cmx_split_sections(e, a, 1, nd, S), CMX_ERR_INDEX,
              "[split] axis");
        FAILS(cmx_split_sections(e, a, 0, 0, S), CMX_ERR_VALUE,
              "[split] The number of sections must be positive, got 0.");
        cmx_array_release(a);
      }
      h_free(&x);
    }
}

/* ---------------- pad ---------------- */

static void test_pad(void) {
  for (int di = 0; SU_DTYPES[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      cmx_dtype dt = SU_DTYPES[di];
      if (nd && sh->dims[0] > 1000) continue;
      h_tensor x = h_random(sh->dims, nd, dt, -9, 9, (uint64_t)(si + di));
      for (int mode = 0; mode < 2; mode++)
        for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
          if (!su_layout_ok(l, nd)) continue;
          /* Pad every other axis given as negative, with varied widths. */
          int axes[4], na = 0;
          int64_t lo[4], hi[4], plo[4] = {0}, phi[4] = {0}, osh[4];
          for (int d = 0; d < nd; d++) {
            if ((d + l) % 3 == 2) continue;
            axes[na] = d % 2 ? d - nd : d;
            lo[na] = (d + l) % 3;
            hi[na] = (d + 2 * l + 1) % 4;
            plo[d] = lo[na];
            phi[d] = hi[na];
            na++;
          }
          bool empty_edge = false;
          for (int d = 0; d < nd; d++) {
            osh[d] = sh->dims[d] + plo[d] + phi[d];
            empty_edge |= mode == 1 && sh->dims[d] == 0 && plo[d] + phi[d] > 0;
          }
          double fill = dt == CMX_BOOL ? 1 : -7;
          h_tensor want = h_alloc(osh, nd, dt);
          int64_t idx[4];
          for (int64_t k = 0; k < want.size && !empty_edge; k++) {
            su_unravel(k, osh, nd, idx);
            bool out = false;
            for (int d = 0; d < nd; d++) {
              idx[d] -= plo[d];
              if (idx[d] < 0 || idx[d] >= sh->dims[d]) {
                out = true;
                idx[d] = idx[d] < 0 ? 0 : sh->dims[d] - 1; /* edge */
              }
            }
            if (out && mode == 0) {
              want.re[k] = h_round_to(fill, dt);
            } else {
              int64_t j = su_ravel(idx, sh->dims, nd);
              want.re[k] = x.re[j];
              if (want.im) want.im[k] = x.im[j];
            }
          }
          cmx_array a = su_input(&x, l), v, r = NULL;
          OK(cmx_array_weak_int(&v, (int64_t)fill));
          char what[256];
          su_what(what, sizeof what, mode ? "pad(edge)" : "pad", &x, l, "");
          cmx_status st = cmx_pad(&r, a, axes, lo, hi, na, v,
                                  mode ? CMX_PAD_EDGE : CMX_PAD_CONSTANT, S);
          if (empty_edge) {
            CHECK_MSG(
                st == CMX_ERR_VALUE && strstr(cmx_last_error(), "in edge mode"),
                "%s: %s", what, cmx_last_error());
          } else {
            CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
            su_check(r, &want, what);
          }
          cmx_array_release_all((cmx_array[]){a, v, r}, 3);
          h_free(&want);
        }
      h_free(&x);
    }
  /* Defaults: value NULL is 0, axes NULL are the first naxes axes. */
  int64_t sh[2] = {2, 2};
  cmx_array a, r, e, v2;
  OK(cmx_ones(&a, sh, 2, CMX_INT32, S));
  OK(cmx_pad(&r, a, NULL, (int64_t[]){1}, (int64_t[]){0}, 1, NULL,
             CMX_PAD_CONSTANT, S));
  int32_t got[6];
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(cmx_array_dim(r, 0) == 3 && got[0] == 0 && got[1] == 0 && got[2] == 1 &&
        got[5] == 1);
  cmx_array_release(r);
  FAILS(cmx_pad(&e, a, NULL, (int64_t[]){-1}, (int64_t[]){0}, 1, NULL,
                CMX_PAD_CONSTANT, S),
        CMX_ERR_VALUE,
        "[pad] Invalid low padding size (-1) passed to pad for axis 0. "
        "Padding sizes must be non-negative");
  FAILS(cmx_pad(&e, a, (int[]){0, -2}, (int64_t[]){1, 1}, (int64_t[]){0, 0}, 2,
                NULL, CMX_PAD_CONSTANT, S),
        CMX_ERR_VALUE, "[pad] Received duplicate axes.");
  FAILS(cmx_pad(&e, a, NULL, (int64_t[]){1}, (int64_t[]){1}, 1, NULL,
                (cmx_pad_mode)5, S),
        CMX_ERR_VALUE, "[pad] Invalid padding mode (5) passed to pad");
  FAILS(cmx_pad(&e, a, (int[]){2}, (int64_t[]){1}, (int64_t[]){1}, 1, NULL,
                CMX_PAD_CONSTANT, S),
        CMX_ERR_INDEX,
        "[pad] axis 2 is out of bounds for array of dimension 2");
  OK(cmx_ones(&v2, sh, 2, CMX_INT32, S));
  FAILS(cmx_pad(&e, a, NULL, (int64_t[]){1}, (int64_t[]){1}, 1, v2,
                CMX_PAD_CONSTANT, S),
        CMX_ERR_VALUE, "[pad] The padding value must be a scalar");
  cmx_array_release_all((cmx_array[]){a, v2}, 2);
}

/* ---------------- repeat / tile / roll ---------------- */

static void test_repeat(void) {
  for (int di = 0; SU_FEW[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      if (nd && sh->dims[0] > 1000) continue;
      h_tensor x = h_random(sh->dims, nd, SU_FEW[di], -9, 9, (uint64_t)si);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, nd)) continue;
        cmx_array a = su_input(&x, l);
        for (int64_t rep = 0; rep <= 3; rep++)
          for (int ax = -1; ax < nd; ax++) { /* -1: flattened */
            int64_t osh[4];
            int ond = ax < 0 ? 1 : nd;
            if (ax < 0)
              osh[0] = x.size * rep;
            else
              for (int d = 0; d < nd; d++)
                osh[d] = sh->dims[d] * (d == ax ? rep : 1);
            h_tensor want = h_alloc(osh, ond, x.dtype);
            int64_t idx[4];
            for (int64_t k = 0; k < want.size; k++) {
              su_unravel(k, osh, ond, idx);
              int64_t j;
              if (ax < 0) {
                j = idx[0] / rep;
              } else {
                idx[ax] /= rep;
                j = su_ravel(idx, sh->dims, nd);
              }
              want.re[k] = x.re[j];
              if (want.im) want.im[k] = x.im[j];
            }
            cmx_array r = NULL;
            char what[256], ex[64];
            snprintf(ex, sizeof ex, "x%lld axis %d", (long long)rep, ax);
            su_what(what, sizeof what, "repeat", &x, l, ex);
            OK(cmx_repeat(&r, a, rep, ax < 0 ? NULL : &ax, S));
            su_check(r, &want, what);
            cmx_array_release(r);
            h_free(&want);
          }
        cmx_array e;
        FAILS(cmx_repeat(&e, a, -1, NULL, S), CMX_ERR_VALUE,
              "[repeat] Number of repeats cannot be negative");
        FAILS(cmx_repeat(&e, a, 2, &nd, S), CMX_ERR_INDEX, "[repeat] axis");
        cmx_array_release(a);
      }
      h_free(&x);
    }
  /* 32 dims: no room for the helper axis. */
  int64_t sh[32];
  for (int d = 0; d < 32; d++) sh[d] = d % 7 == 0 ? 2 : 1;
  h_tensor x = h_random(sh, 32, CMX_INT32, -9, 9, 5);
  cmx_array a = h_array(&x, H_CONTIG), r;
  int ax = 7;
  OK(cmx_repeat(&r, a, 3, &ax, S));
  h_tensor got = h_read(r);
  bool ok = got.size == x.size * 3 && cmx_array_dim(r, 7) == 6;
  int64_t idx[32];
  for (int64_t k = 0; ok && k < got.size; k++) {
    su_unravel(k, got.shape, 32, idx);
    idx[7] /= 3;
    ok = got.re[k] == x.re[su_ravel(idx, sh, 32)];
  }
  CHECK(ok);
  h_free(&got);
  h_free(&x);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

/* out index -> input index modulo the input shape (tile, left-padded). */
static void check_tile(const h_tensor* x, cmx_array a, const int64_t* reps,
                       int nreps, const char* what) {
  int nd = x->ndim > nreps ? x->ndim : nreps;
  int64_t osh[CMX_MAX_NDIM], ish[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) {
    int da = d - (nd - x->ndim), dr = d - (nd - nreps);
    ish[d] = da < 0 ? 1 : x->shape[da];
    osh[d] = ish[d] * (dr < 0 ? 1 : reps[dr]);
  }
  h_tensor want = h_alloc(osh, nd, x->dtype);
  int64_t idx[CMX_MAX_NDIM];
  for (int64_t k = 0; k < want.size; k++) {
    su_unravel(k, osh, nd, idx);
    for (int d = 0; d < nd; d++) idx[d] %= ish[d];
    int64_t j = su_ravel(idx, ish, nd);
    want.re[k] = x->re[j];
    if (want.im) want.im[k] = x->im[j];
  }
  cmx_array r = NULL;
  OK(cmx_tile(&r, a, reps, nreps, S));
  su_check(r, &want, what);
  cmx_array_release(r);
  h_free(&want);
}

static void test_tile(void) {
  static const int64_t repsets[][4] = {{2},    {1, 3},       {2, 1, 2},
                                       {0, 2}, {1, 1, 1, 2}, {3, 2, 1, 1}};
  static const int nr[] = {1, 2, 3, 2, 4, 4};
  for (int di = 0; SU_FEW[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      if (sh->ndim && sh->dims[0] > 1000) continue;
      h_tensor x =
          h_random(sh->dims, sh->ndim, SU_FEW[di], -9, 9, (uint64_t)si);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, sh->ndim)) continue;
        cmx_array a = su_input(&x, l);
        for (int c = 0; c < 6; c++) {
          char what[256];
          su_what(what, sizeof what, "tile", &x, l, "");
          check_tile(&x, a, repsets[c], nr[c], what);
        }
        check_tile(&x, a, NULL, 0, "tile(no reps)");
        cmx_array e;
        FAILS(cmx_tile(&e, a, (int64_t[]){-1}, 1, S), CMX_ERR_VALUE,
              "[tile] Repetitions must be non-negative, got -1.");
        cmx_array_release(a);
      }
      h_free(&x);
    }
  /* Many dims: the one-pass form would need more than 32. */
  int64_t sh[20], reps[22];
  for (int d = 0; d < 20; d++) sh[d] = d % 5 == 0 ? 2 : 1;
  for (int d = 0; d < 22; d++) reps[d] = d % 4 == 1 ? 1 : 2;
  h_tensor x = h_random(sh, 20, CMX_INT8, -9, 9, 9);
  cmx_array a = h_array(&x, H_CONTIG);
  check_tile(&x, a, reps, 22, "tile(22 dims)");
  cmx_array_release(a);
  h_free(&x);
}

static void test_roll(void) {
  for (int di = 0; SU_FEW[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      int nd = sh->ndim;
      if (nd && sh->dims[0] > 1000) continue;
      h_tensor x = h_random(sh->dims, nd, SU_FEW[di], -9, 9, (uint64_t)si);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, nd)) continue;
        cmx_array a = su_input(&x, l);
        int64_t shifts[] = {0, 1, -1, 3, -8, 100};
        for (int c = 0; c < 6; c++) {
          /* Flattened. */
          h_tensor want = h_alloc(sh->dims, nd, x.dtype);
          for (int64_t k = 0; k < x.size; k++) {
            int64_t j = ((k - shifts[c]) % x.size + x.size) % x.size;
            want.re[k] = x.re[j];
            if (want.im) want.im[k] = x.im[j];
          }
          cmx_array r = NULL;
          char what[256];
          su_what(what, sizeof what, "roll(flat)", &x, l, "");
          OK(cmx_roll(&r, a, &shifts[c], 1, NULL, 0, S));
          su_check(r, &want, what);
          cmx_array_release(r);
          /* Along every axis at once with per-axis shifts, axis order
           * reversed and negative. */
          int axes[4];
          int64_t sft[4];
          for (int d = 0; d < nd; d++) {
            axes[d] = d - nd;
            sft[d] = shifts[(c + d) % 6];
          }
          int64_t idx[4];
          for (int64_t k = 0; k < want.size; k++) {
            su_unravel(k, sh->dims, nd, idx);
            for (int d = 0; d < nd; d++) {
              int64_t n = sh->dims[d];
              idx[d] = ((idx[d] - sft[d]) % n + n) % n;
            }
            int64_t j = su_ravel(idx, sh->dims, nd);
            want.re[k] = x.re[j];
            if (want.im) want.im[k] = x.im[j];
          }
          su_what(what, sizeof what, "roll(axes)", &x, l, "");
          if (nd) {
            OK(cmx_roll(&r, a, sft, nd, axes, nd, S));
            su_check(r, &want, what);
            cmx_array_release(r);
          }
          h_free(&want);
        }
        cmx_array e;
        if (nd) {
          FAILS(cmx_roll(&e, a, (int64_t[]){1, 2}, 2, (int[]){0}, 1, S),
                CMX_ERR_VALUE, "[roll] Got 2 shifts for 1 axes");
          FAILS(cmx_roll(&e, a, (int64_t[]){1}, 1, (int[]){nd}, 1, S),
                CMX_ERR_INDEX, "[roll] axis");
        }
        /* MLX: shifts without axes roll the flattened array by each. */
        cmx_array r3, eq;
        bool same = false;
        OK(cmx_roll(&e, a, (int64_t[]){1, 2}, 2, NULL, 0, S));
        OK(cmx_roll(&r3, a, (int64_t[]){3}, 1, NULL, 0, S));
        OK(cmx_array_equal(&eq, e, r3, false, S));
        OK(cmx_array_item_bool(eq, &same));
        CHECK(same);
        cmx_array_release(e);
        cmx_array_release(r3);
        cmx_array_release(eq);
        cmx_array_release(a);
      }
      h_free(&x);
    }
  /* One shift for several axes applies to each. */
  int64_t sh[2] = {2, 3};
  cmx_array a, r;
  OK(cmx_arange(&a, 0, 6, 1, CMX_INT32, S));
  cmx_array b;
  OK(cmx_reshape(&b, a, sh, 2, S));
  OK(cmx_roll(&r, b, (int64_t[]){1}, 1, (int[]){0, 1}, 2, S));
  int32_t got[6], want[6] = {5, 3, 4, 2, 0, 1};
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(memcmp(got, want, sizeof got) == 0);
  cmx_array_release_all((cmx_array[]){a, b, r}, 3);
}

/* ---------------- atleast_*d and unstack ---------------- */
static void test_atleast(void) {
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = i - 5;
  int64_t shapes[4][3] = {{0}, {4}, {2, 3}, {2, 3, 4}};
  int64_t want[3][4][3] = {{{1}, {4}, {2, 3}, {2, 3, 4}},
                           {{1, 1}, {1, 4}, {2, 3}, {2, 3, 4}},
                           {{1, 1, 1}, {1, 4, 1}, {2, 3, 1}, {2, 3, 4}}};
  cmx_status (*fns[3])(cmx_array*, cmx_array, cmx_stream) = {
      cmx_atleast_1d, cmx_atleast_2d, cmx_atleast_3d};
  for (int nd = 0; nd < 4; nd++) {
    cmx_array a = h_from_doubles(v, shapes[nd], nd, CMX_INT64);
    h_tensor x = h_read(a);
    for (int k = 0; k < 3; k++) {
      cmx_array r = NULL;
      OK(fns[k](&r, a, S));
      int wnd = nd > k + 1 ? nd : k + 1;
      CHECK_MSG(su_has_shape(r, want[k][nd], wnd), "atleast_%dd of %dd", k + 1,
                nd);
      h_tensor g = h_read(r);
      CHECK(g.size == x.size && g.dtype == CMX_INT64);
      for (int64_t i = 0; i < x.size && g.size == x.size; i++)
        CHECK(g.re[i] == x.re[i]);
      h_free(&g);
      cmx_array_release(r);
    }
    h_free(&x);
    cmx_array_release(a);
  }
}

static void test_unstack(void) {
  int64_t sh[3] = {2, 3, 4};
  h_tensor x = h_random(sh, 3, CMX_FLOAT32, -1, 1, 7);
  for (int l = 0; l < 2; l++) {
    cmx_array a = h_array(&x, l ? H_TRANSPOSED : H_CONTIG);
    for (int axis = -3; axis < 3; axis++) {
      int ax = axis < 0 ? axis + 3 : axis;
      cmx_array outs[4] = {0};
      OK(cmx_unstack(outs, a, axis, S));
      for (int64_t k = 0; k < sh[ax]; k++) {
        h_tensor g = h_read(outs[k]);
        CHECK(g.ndim == 2 && g.size == 24 / sh[ax]);
        int64_t j = 0;
        for (int64_t i0 = 0; i0 < 2; i0++)
          for (int64_t i1 = 0; i1 < 3; i1++)
            for (int64_t i2 = 0; i2 < 4; i2++) {
              int64_t id[3] = {i0, i1, i2};
              if (id[ax] != k) continue;
              double w = x.re[(i0 * 3 + i1) * 4 + i2];
              CHECK(j < g.size && g.re[j] == w);
              j++;
            }
        h_free(&g);
        cmx_array_release(outs[k]);
      }
    }
    cmx_array outs[4];
    FAILS(cmx_unstack(outs, a, 3, S), CMX_ERR_INDEX,
          "[unstack] axis 3 is out of bounds");
    cmx_array_release(a);
  }
  h_free(&x);
  cmx_array z = NULL, outs[1];
  OK(cmx_array_from_double(&z, 1, CMX_FLOAT32));
  FAILS(cmx_unstack(outs, z, 0, S), CMX_ERR_VALUE, "[unstack]");
  cmx_array_release(z);
}

/* Reflect and symmetric padding against a bouncing reference (the
 * position reflected at the edges until it lands in the array). */
static int64_t bounce(int64_t p, int64_t n, bool symmetric) {
  if (!symmetric && n == 1) return 0;
  while (p < 0 || p >= n) {
    if (p < 0) p = symmetric ? -p - 1 : -p;
    if (p >= n) p = symmetric ? 2 * n - 1 - p : 2 * (n - 1) - p;
  }
  return p;
}

static void test_pad_mirror(void) {
  for (int sym = 0; sym < 2; sym++)
    for (int64_t n = 1; n <= 4; n++)
      for (int64_t lo = 0; lo <= 9; lo += 3)
        for (int64_t hi = 0; hi <= 7; hi += 2) {
          cmx_array a = NULL, r = NULL;
          OK(cmx_arange(&a, 0, (double)n, 1, CMX_INT32, S));
          OK(cmx_pad(&r, a, NULL, &lo, &hi, 1, NULL,
                     sym ? CMX_PAD_SYMMETRIC : CMX_PAD_REFLECT, S));
          int32_t got[32] = {0};
          int64_t len = n + lo + hi;
          CHECK(r && cmx_array_size(r) == len);
          if (r) OK(cmx_array_copy_to(r, got, (size_t)len * sizeof *got));
          bool ok = true;
          for (int64_t i = 0; i < len; i++)
            ok &= got[i] == bounce(i - lo, n, sym);
          CHECK_MSG(ok, "%s n=%lld lo=%lld hi=%lld",
                    sym ? "symmetric" : "reflect", (long long)n, (long long)lo,
                    (long long)hi);
          cmx_array_release_all((cmx_array[]){a, r}, 2);
        }
  /* Two axes, and an empty axis. */
  int64_t sh[2] = {2, 3}, lo[2] = {1, 2}, hi[2] = {2, 1};
  cmx_array flat = NULL, a = NULL, r = NULL, z = NULL, e = NULL;
  OK(cmx_arange(&flat, 0, 6, 1, CMX_INT32, S));
  OK(cmx_reshape(&a, flat, sh, 2, S));
  OK(cmx_pad(&r, a, NULL, lo, hi, 2, NULL, CMX_PAD_REFLECT, S));
  int32_t got[30] = {0};
  if (r) OK(cmx_array_copy_to(r, got, sizeof got));
  bool ok = r && cmx_array_dim(r, 0) == 5 && cmx_array_dim(r, 1) == 6;
  for (int i = 0; ok && i < 5; i++)
    for (int j = 0; j < 6; j++)
      ok &= got[i * 6 + j] ==
            bounce(i - 1, 2, false) * 3 + bounce(j - 2, 3, false);
  CHECK(ok);
  OK(cmx_zeros(&z, (int64_t[]){0, 2}, 2, CMX_FLOAT32, S));
  FAILS(cmx_pad(&e, z, NULL, lo, hi, 1, NULL, CMX_PAD_SYMMETRIC, S),
        CMX_ERR_VALUE, "[pad] Cannot pad an empty axis (0) in symmetric mode");
  cmx_array_release_all((cmx_array[]){flat, a, r, z}, 4);
}

int main(void) {
  RUN(test_slice_update);
  RUN(test_slice_update_donation);
  RUN(test_concatenate);
  RUN(test_stack);
  RUN(test_split);
  RUN(test_pad);
  RUN(test_pad_mirror);
  RUN(test_repeat);
  RUN(test_tile);
  RUN(test_roll);
  RUN(test_atleast);
  RUN(test_unstack);
  return test_summary("test_shape_join");
}
