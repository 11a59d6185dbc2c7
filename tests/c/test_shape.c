/* Shape ops that view data: reshape, flatten, unflatten, squeeze,
 * expand_dims, transpose, swapaxes, moveaxis, broadcast_to,
 * broadcast_arrays, slice, flip, as_strided, contiguous, view. Every op is
 * checked on the harness shapes in five layouts and several dtypes against
 * plain index arithmetic, for sharing memory where MLX does, and for its
 * error messages. */
#include "shape_util.h"

/* ---- reference maps ---- */
typedef struct {
  const int64_t* in_shape;
  int in_nd;
  const int64_t* out_shape;
  int out_nd;
  const int* perm;
  const int64_t* start;
  const int64_t* step;
} map_ctx;

/* Same row-major position (reshape and friends). */
static int64_t map_flat(const int64_t* idx, const void* c) {
  const map_ctx* m = c;
  return su_ravel(idx, m->out_shape, m->out_nd);
}
/* out[i...] = in[j...] with j[perm[i]] = i-th index. */
static int64_t map_perm(const int64_t* idx, const void* c) {
  const map_ctx* m = c;
  int64_t j[CMX_MAX_NDIM];
  for (int d = 0; d < m->in_nd; d++) j[m->perm[d]] = idx[d];
  return su_ravel(j, m->in_shape, m->in_nd);
}
/* Broadcast: size-1 and missing dims read index 0. */
static int64_t map_bcast(const int64_t* idx, const void* c) {
  const map_ctx* m = c;
  int64_t j[CMX_MAX_NDIM];
  int lead = m->out_nd - m->in_nd;
  for (int d = 0; d < m->in_nd; d++)
    j[d] = m->in_shape[d] == 1 ? 0 : idx[d + lead];
  return su_ravel(j, m->in_shape, m->in_nd);
}
/* Slice: start + i * step per axis. */
static int64_t map_slice(const int64_t* idx, const void* c) {
  const map_ctx* m = c;
  int64_t j[CMX_MAX_NDIM];
  for (int d = 0; d < m->in_nd; d++) j[d] = m->start[d] + idx[d] * m->step[d];
  return su_ravel(j, m->in_shape, m->in_nd);
}

/* Runs fn(a) for every SU dtype in dts, harness shape with ndim >= min_nd,
 * and layout; fn checks and returns nothing. */
typedef void (*case_fn)(const h_tensor* x, cmx_array a, int layout);
static void for_cases(const cmx_dtype* dts, int min_nd, case_fn fn) {
  for (int di = 0; dts[di] != CMX_NUM_DTYPES; di++)
    for (int si = 0; si < H_NUM_SHAPES; si++) {
      const h_shape* sh = &h_shapes[si];
      if (sh->ndim < min_nd) continue;
      h_tensor x = h_random(sh->dims, sh->ndim, dts[di], -50, 50,
                            (uint64_t)(si * 31 + di));
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, sh->ndim)) continue;
        cmx_array a = su_input(&x, l);
        CHECK(a != NULL);
        if (a) fn(&x, a, l);
        cmx_array_release(a);
      }
      h_free(&x);
    }
}

/* Number of dims longer than 1. */
static int big_dims(const int64_t* shape, int nd) {
  int n = 0;
  for (int d = 0; d < nd; d++) n += shape[d] > 1;
  return n;
}

/* ---------------- reshape / flatten / unflatten ---------------- */

static void reshape_case(const h_tensor* x, cmx_array a, int l) {
  int64_t targets[6][CMX_MAX_NDIM + 2];
  int nds[6], nt = 0;
  int nd = x->ndim;
  nds[nt] = 1, targets[nt++][0] = -1;
  nds[nt] = 1, targets[nt++][0] = x->size;
  nds[nt] = nd + 2; /* (1, dims..., 1) */
  targets[nt][0] = 1;
  for (int d = 0; d < nd; d++) targets[nt][d + 1] = x->shape[d];
  targets[nt++][nd + 1] = 1;
  nds[nt] = nd; /* reversed dims */
  for (int d = 0; d < nd; d++) targets[nt][d] = x->shape[nd - 1 - d];
  nt++;
  if (x->size && x->size % 2 == 0)
    nds[nt] = 2, targets[nt][0] = 2, targets[nt++][1] = -1;
  if (nd >= 2) { /* merge the first two dims */
    nds[nt] = nd - 1;
    targets[nt][0] = x->shape[0] * x->shape[1];
    for (int d = 2; d < nd; d++) targets[nt][d - 1] = x->shape[d];
    nt++;
  }
  for (int t = 0; t < nt; t++) {
    int64_t oshape[CMX_MAX_NDIM + 2];
    int64_t known = 1;
    for (int d = 0; d < nds[t]; d++)
      if (targets[t][d] != -1) known *= targets[t][d];
    for (int d = 0; d < nds[t]; d++)
      oshape[d] = targets[t][d] == -1 ? x->size / known : targets[t][d];
    map_ctx m = {.out_shape = oshape, .out_nd = nds[t]};
    h_tensor want = su_map(x, oshape, nds[t], map_flat, &m, 0);
    cmx_array r = NULL;
    char what[512], tsh[256];
    su_what(what, sizeof what, "reshape", x, l,
            cmx__shape_str(targets[t], nds[t], tsh, sizeof tsh));
    OK(cmx_reshape(&r, a, targets[t], nds[t], S));
    su_check(r, &want, what);
    /* MLX: a view of contiguous data; a copy of data that cannot be
     * re-strided (transposed, flattened). */
    if (l == SU_CONTIG && x->size > 0) CHECK_MSG(su_shares(r, a), "%s", what);
    if (l == SU_TRANSPOSED && t == 0 && x->size && big_dims(x->shape, nd) >= 2)
      CHECK_MSG(!su_shares(r, a), "%s", what);
    if (l == SU_STRIDED && t == 0 && x->size > 1)
      CHECK_MSG(su_shares(r, a), "%s (step-2 data flattens as a view)", what);
    cmx_array_release(r);
    h_free(&want);
  }
}

static void test_reshape(void) {
  for_cases(SU_DTYPES, 0, reshape_case);
  /* A broadcast reshapes as a view when the stride-0 dim stays whole. */
  float v[4] = {1, 2, 3, 4};
  int64_t n4 = 4, sh34[2] = {3, 4}, sh322[3] = {3, 2, 2}, n12 = 12;
  cmx_array a, b, r1, r2;
  OK(cmx_array_from_data(&a, v, &n4, 1, CMX_FLOAT32));
  OK(cmx_broadcast_to(&b, a, sh34, 2, S));
  OK(cmx_reshape(&r1, b, sh322, 3, S));
  OK(cmx_reshape(&r2, b, &n12, 1, S));
  CHECK(su_shares(r1, a));
  CHECK(!su_shares(r2, a));
  float got[12];
  OK(cmx_array_copy_to(r2, got, sizeof got));
  for (int i = 0; i < 12; i++) CHECK(got[i] == v[i % 4]);
  OK(cmx_array_copy_to(r1, got, sizeof got));
  for (int i = 0; i < 12; i++) CHECK(got[i] == v[i % 4]);
  /* Same shape: the input itself. */
  cmx_array same;
  OK(cmx_reshape(&same, a, &n4, 1, S));
  CHECK(same == a);
  /* Errors. */
  int64_t six = 6, four = 4, two_neg[2] = {-1, -1}, bad[2] = {-2, 3};
  cmx_array c, e = (cmx_array)1;
  OK(cmx_array_from_data(&c, (float[6]){0}, &six, 1, CMX_FLOAT32));
  FAILS(cmx_reshape(&e, c, &four, 1, S), CMX_ERR_VALUE,
        "[reshape] Cannot reshape array of size 6 into shape (4).");
  CHECK(e == NULL);
  FAILS(cmx_reshape(&e, c, two_neg, 2, S), CMX_ERR_VALUE,
        "[reshape] Can only infer one dimension.");
  FAILS(cmx_reshape(&e, c, bad, 2, S), CMX_ERR_VALUE, "Invalid dimension -2");
  int64_t zero = 0, zinf[2] = {0, -1};
  cmx_array z;
  OK(cmx_array_from_data(&z, v, &zero, 1, CMX_FLOAT32));
  FAILS(cmx_reshape(&e, z, zinf, 2, S), CMX_ERR_VALUE,
        "[reshape] Cannot infer the shape of an empty array");
  FAILS(cmx_reshape(&e, NULL, &four, 1, S), CMX_ERR_VALUE, "null array");
  cmx_array_release_all((cmx_array[]){a, b, r1, r2, same, c, z}, 7);
}

static void flatten_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  for (int st = -nd; st < nd || (nd == 0 && st == 0); st++)
    for (int en = -nd; en < nd || (nd == 0 && en == 0); en++) {
      int s0 = st < 0 ? st + nd : st, e0 = en < 0 ? en + nd : en;
      if (nd && s0 > e0) continue;
      int64_t oshape[CMX_MAX_NDIM];
      int ond = 0;
      if (nd == 0) {
        oshape[ond++] = 1;
      } else {
        for (int d = 0; d < s0; d++) oshape[ond++] = x->shape[d];
        int64_t m = 1;
        for (int d = s0; d <= e0; d++) m *= x->shape[d];
        oshape[ond++] = m;
        for (int d = e0 + 1; d < nd; d++) oshape[ond++] = x->shape[d];
      }
      map_ctx m = {.out_shape = oshape, .out_nd = ond};
      h_tensor want = su_map(x, oshape, ond, map_flat, &m, 0);
      char what[512], ex[64];
      snprintf(ex, sizeof ex, "start %d end %d", st, en);
      su_what(what, sizeof what, "flatten", x, l, ex);
      cmx_array r = NULL;
      OK(cmx_flatten(&r, a, st, en, S));
      su_check(r, &want, what);
      if (l == SU_CONTIG && x->size) CHECK_MSG(su_shares(r, a), "%s", what);
      cmx_array_release(r);
      h_free(&want);
      if (nd == 0) return;
    }
}

static void test_flatten(void) {
  for_cases(SU_FEW, 0, flatten_case);
  int64_t sh[3] = {2, 3, 4};
  cmx_array a, e;
  OK(cmx_zeros(&a, sh, 3, CMX_FLOAT32, S));
  FAILS(cmx_flatten(&e, a, 2, 1, S), CMX_ERR_VALUE,
        "[flatten] start_axis must be less than or equal to end_axis");
  /* Axes clamp first (as MLX), so out-of-range pairs end up reversed. */
  FAILS(cmx_flatten(&e, a, 3, 5, S), CMX_ERR_VALUE,
        "[flatten] start_axis must be less than or equal to end_axis");
  FAILS(cmx_flatten(&e, a, -9, -7, S), CMX_ERR_VALUE,
        "[flatten] start_axis must be less than or equal to end_axis");
  /* Clamped as MLX does. */
  OK(cmx_flatten(&e, a, -9, 9, S));
  CHECK(cmx_array_ndim(e) == 1 && cmx_array_dim(e, 0) == 24);
  cmx_array_release(e);
  cmx_array_release(a);
}

static void test_unflatten(void) {
  int64_t sh[3] = {2, 12, 5};
  h_tensor x = h_random(sh, 3, CMX_INT32, -100, 100, 7);
  struct {
    int axis, n;
    int64_t parts[3], want[3];
  } cases[] = {{1, 2, {3, 4}, {3, 4}},
               {-2, 2, {-1, 2}, {6, 2}},
               {1, 3, {2, -1, 3}, {2, 2, 3}},
               {0, 2, {1, 2}, {1, 2}},
               {2, 1, {5}, {5}},
               {-1, 2, {5, 1}, {5, 1}}};
  for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
    cmx_array a = su_input(&x, l);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int ax = cases[c].axis < 0 ? cases[c].axis + 3 : cases[c].axis;
      int64_t oshape[6];
      int ond = 0;
      for (int d = 0; d < ax; d++) oshape[ond++] = sh[d];
      for (int i = 0; i < cases[c].n; i++) oshape[ond++] = cases[c].want[i];
      for (int d = ax + 1; d < 3; d++) oshape[ond++] = sh[d];
      map_ctx m = {.out_shape = oshape, .out_nd = ond};
      h_tensor want = su_map(&x, oshape, ond, map_flat, &m, 0);
      cmx_array r = NULL;
      char what[256];
      su_what(what, sizeof what, "unflatten", &x, l, "");
      OK(cmx_unflatten(&r, a, cases[c].axis, cases[c].parts, cases[c].n, S));
      su_check(r, &want, what);
      if (l == SU_CONTIG) CHECK(su_shares(r, a));
      cmx_array_release(r);
      h_free(&want);
    }
    cmx_array e;
    FAILS(cmx_unflatten(&e, a, 1, (int64_t[]){5, -1}, 2, S), CMX_ERR_VALUE,
          "[unflatten] Cannot unflatten axis 1 with size 12 into shape "
          "(5,-1).");
    FAILS(cmx_unflatten(&e, a, 3, (int64_t[]){1}, 1, S), CMX_ERR_INDEX,
          "[unflatten] Invalid axes 3 for array with 3 dimensions.");
    FAILS(cmx_unflatten(&e, a, 1, NULL, 0, S), CMX_ERR_VALUE,
          "[unflatten] Shape to unflatten to cannot be empty.");
    FAILS(cmx_unflatten(&e, a, 1, (int64_t[]){-1, -1}, 2, S), CMX_ERR_VALUE,
          "[unflatten] Can only infer one dimension.");
    cmx_array_release(a);
  }
  h_free(&x);
}

/* ---------------- squeeze / expand_dims ---------------- */

static void squeeze_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  int64_t oshape[CMX_MAX_NDIM];
  int ond = 0, ones[CMX_MAX_NDIM], nones = 0;
  for (int d = 0; d < nd; d++) {
    if (x->shape[d] == 1)
      ones[nones++] = d - nd; /* negative form */
    else
      oshape[ond++] = x->shape[d];
  }
  map_ctx m = {.out_shape = oshape, .out_nd = ond};
  h_tensor want = su_map(x, oshape, ond, map_flat, &m, 0);
  char what[256];
  su_what(what, sizeof what, "squeeze", x, l, "");
  cmx_array r = NULL, r2 = NULL;
  OK(cmx_squeeze(&r, a, NULL, 0, S));
  su_check(r, &want, what);
  OK(cmx_squeeze(&r2, a, ones, nones, S));
  su_check(r2, &want, what);
  if (x->size) CHECK_MSG(su_shares(r, a) && su_shares(r2, a), "%s", what);
  cmx_array_release(r);
  cmx_array_release(r2);
  h_free(&want);
  /* expand_dims at the front, the back and in the middle (negative). */
  int axes_sets[4][2] = {{0, 0}, {-1, 0}, {0, -1}, {1, -2}};
  int nax[4] = {1, 1, 2, 2};
  for (int c = 0; c < (nd >= 2 ? 4 : 3); c++) {
    int ond2 = nd + nax[c];
    bool ins[CMX_MAX_NDIM] = {false};
    for (int i = 0; i < nax[c]; i++) {
      int ax = axes_sets[c][i] < 0 ? axes_sets[c][i] + ond2 : axes_sets[c][i];
      ins[ax] = true;
    }
    int64_t es[CMX_MAX_NDIM];
    for (int d = 0, j = 0; d < ond2; d++) es[d] = ins[d] ? 1 : x->shape[j++];
    map_ctx me = {.out_shape = es, .out_nd = ond2};
    h_tensor w2 = su_map(x, es, ond2, map_flat, &me, 0);
    cmx_array e = NULL;
    su_what(what, sizeof what, "expand_dims", x, l, "");
    OK(cmx_expand_dims(&e, a, axes_sets[c], nax[c], S));
    su_check(e, &w2, what);
    if (x->size) CHECK_MSG(su_shares(e, a), "%s", what);
    cmx_array_release(e);
    h_free(&w2);
  }
}

static void test_squeeze_expand(void) {
  for_cases(SU_DTYPES, 0, squeeze_case);
  int64_t sh[3] = {4, 1, 5};
  cmx_array a, e;
  OK(cmx_zeros(&a, sh, 3, CMX_INT8, S));
  FAILS(cmx_squeeze(&e, a, (int[]){0}, 1, S), CMX_ERR_VALUE,
        "[squeeze] Cannot squeeze axis 0 with size 4 which is not equal to "
        "1.");
  FAILS(cmx_squeeze(&e, a, (int[]){3}, 1, S), CMX_ERR_INDEX,
        "[squeeze] Invalid axes 3 for array with 3 dimensions.");
  FAILS(cmx_squeeze(&e, a, (int[]){1, -2}, 2, S), CMX_ERR_VALUE,
        "[squeeze] Received duplicate axes.");
  FAILS(cmx_expand_dims(&e, a, (int[]){5}, 1, S), CMX_ERR_INDEX,
        "[expand_dims] Invalid axis 5 for output array with 4 dimensions.");
  FAILS(cmx_expand_dims(&e, a, (int[]){0, -5}, 2, S), CMX_ERR_VALUE,
        "[expand_dims] Received duplicate axes.");
  OK(cmx_squeeze(&e, a, NULL, 0, S));
  CHECK(cmx_array_ndim(e) == 2);
  cmx_array_release(e);
  OK(cmx_expand_dims(&e, a, NULL, 0, S));
  CHECK(e == a);
  cmx_array_release(e);
  /* Squeeze then expand keeps data in place and row-major. */
  cmx_array q, b;
  OK(cmx_squeeze(&q, a, NULL, 0, S));
  OK(cmx_expand_dims(&b, q, (int[]){1}, 1, S));
  CHECK(cmx_array_is_row_contiguous(b));
  cmx_array_release_all((cmx_array[]){a, q, b}, 3);
}

/* ---------------- transpose / swapaxes / moveaxis ---------------- */

static void check_perm(const h_tensor* x, cmx_array a, int l, const int* perm,
                       cmx_array r, const char* op) {
  int nd = x->ndim;
  int64_t oshape[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) oshape[d] = x->shape[perm[d]];
  map_ctx m = {.in_shape = x->shape, .in_nd = nd, .perm = perm};
  h_tensor want = su_map(x, oshape, nd, map_perm, &m, 0);
  char what[256], ps[128];
  int k = 0;
  for (int d = 0; d < nd; d++)
    k += snprintf(ps + k, sizeof ps - (size_t)k, "%d", perm[d]);
  su_what(what, sizeof what, op, x, l, ps);
  su_check(r, &want, what);
  if (x->size) CHECK_MSG(su_shares(r, a), "%s: not a view", what);
  h_free(&want);
}

static void transpose_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  if (nd > 4) return;
  /* Every permutation (Heap's algorithm, iterative). */
  int perm[4] = {0, 1, 2, 3}, c[4] = {0};
  for (int i = 0;;) {
    cmx_array r = NULL;
    OK(cmx_transpose(&r, a, perm, nd, S));
    check_perm(x, a, l, perm, r, "transpose");
    cmx_array_release(r);
    while (i < nd && c[i] >= i) c[i++] = 0;
    if (i >= nd) break;
    int j = i % 2 ? c[i] : 0, t = perm[j];
    perm[j] = perm[i];
    perm[i] = t;
    c[i]++;
    i = 0;
  }
  int rev[4];
  for (int d = 0; d < nd; d++) rev[d] = nd - 1 - d;
  cmx_array r = NULL;
  OK(cmx_transpose(&r, a, NULL, 0, S));
  check_perm(x, a, l, rev, r, "transpose(None)");
  cmx_array_release(r);
  for (int s1 = -nd; s1 < nd; s1++)
    for (int s2 = -nd; s2 < nd; s2++) {
      int p[4], q[4], n = 0;
      for (int d = 0; d < nd; d++) p[d] = d;
      int u = s1 < 0 ? s1 + nd : s1, v = s2 < 0 ? s2 + nd : s2;
      p[u] = v;
      p[v] = u;
      OK(cmx_swapaxes(&r, a, s1, s2, S));
      check_perm(x, a, l, p, r, "swapaxes");
      cmx_array_release(r);
      /* moveaxis: remove u, insert it at v. */
      for (int d = 0; d < nd; d++)
        if (d != u) q[n++] = d;
      for (int d = nd - 1; d > v; d--) q[d] = q[d - 1];
      q[v] = u;
      OK(cmx_moveaxis(&r, a, s1, s2, S));
      check_perm(x, a, l, q, r, "moveaxis");
      cmx_array_release(r);
    }
}

static void test_transpose(void) {
  for_cases(SU_DTYPES, 1, transpose_case);
  int64_t sh[3] = {2, 3, 4};
  cmx_array a, e;
  OK(cmx_zeros(&a, sh, 3, CMX_FLOAT16, S));
  FAILS(cmx_transpose(&e, a, (int[]){0, 1}, 2, S), CMX_ERR_VALUE,
        "[transpose] Received 2 axes for array with 3 dimensions.");
  FAILS(cmx_transpose(&e, a, (int[]){0, 1, 3}, 3, S), CMX_ERR_INDEX,
        "[transpose] Invalid axis (3) for array with 3 dimensions.");
  FAILS(cmx_transpose(&e, a, (int[]){0, 1, -2}, 3, S), CMX_ERR_VALUE,
        "[transpose] Repeat axes not allowed.");
  FAILS(cmx_swapaxes(&e, a, 0, 3, S), CMX_ERR_INDEX,
        "[swapaxes] Invalid axis 3 for array with 3 dimensions.");
  FAILS(cmx_moveaxis(&e, a, -4, 0, S), CMX_ERR_INDEX,
        "[moveaxis] Invalid axis -4 for array with 3 dimensions.");
  cmx_array_release(a);
}

/* ---------------- broadcast ---------------- */

static void test_broadcast(void) {
  for (int di = 0; SU_DTYPES[di] != CMX_NUM_DTYPES; di++)
    for (int pi = 0; pi < H_NUM_BCAST; pi++) {
      const h_shape* sa = &h_bcast_pairs[pi][0];
      const h_shape* sb = &h_bcast_pairs[pi][1];
      int64_t osh[CMX_MAX_NDIM];
      int ond;
      OK(cmx_broadcast_shapes(osh, &ond, sa->dims, sa->ndim, sb->dims,
                              sb->ndim));
      h_tensor x = h_random(sa->dims, sa->ndim, SU_DTYPES[di], -9, 9, 3);
      h_tensor y = h_random(sb->dims, sb->ndim, SU_DTYPES[di], -9, 9, 4);
      for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
        if (!su_layout_ok(l, sa->ndim) || !su_layout_ok(l, sb->ndim)) continue;
        cmx_array a = su_input(&x, l), b = su_input(&y, l), r = NULL;
        map_ctx mx = {.in_shape = x.shape, .in_nd = x.ndim, .out_nd = ond};
        map_ctx my = {.in_shape = y.shape, .in_nd = y.ndim, .out_nd = ond};
        h_tensor wx = su_map(&x, osh, ond, map_bcast, &mx, 0);
        h_tensor wy = su_map(&y, osh, ond, map_bcast, &my, 0);
        char what[256];
        su_what(what, sizeof what, "broadcast_to", &x, l, "");
        OK(cmx_broadcast_to(&r, a, osh, ond, S));
        su_check(r, &wx, what);
        if (wx.size && x.size) CHECK(su_shares(r, a));
        cmx_array outs[3] = {NULL, NULL, NULL};
        OK(cmx_broadcast_arrays(outs, (cmx_array[]){a, b, a}, 3, S));
        su_what(what, sizeof what, "broadcast_arrays", &x, l, "");
        su_check(outs[0], &wx, what);
        su_check(outs[1], &wy, what);
        su_check(outs[2], &wx, what);
        cmx_array_release_all(outs, 3);
        cmx_array_release_all((cmx_array[]){a, b, r}, 3);
        h_free(&wx);
        h_free(&wy);
      }
      h_free(&x);
      h_free(&y);
    }
  int64_t s3 = 3, s23[2] = {2, 3}, s4 = 4;
  cmx_array a, b, e, outs[2] = {(cmx_array)1, (cmx_array)1};
  OK(cmx_zeros(&a, &s3, 1, CMX_INT32, S));
  OK(cmx_zeros(&b, &s4, 1, CMX_INT32, S));
  FAILS(cmx_broadcast_to(&e, a, &s4, 1, S), CMX_ERR_VALUE,
        "[broadcast_to] Cannot broadcast array of shape (3) into shape (4).");
  FAILS(cmx_broadcast_arrays(outs, (cmx_array[]){a, b}, 2, S), CMX_ERR_VALUE,
        "[broadcast_arrays] shapes (3) and (4) cannot be broadcast.");
  CHECK(outs[0] == NULL && outs[1] == NULL);
  OK(cmx_broadcast_to(&e, a, s23, 2, S));
  CHECK(cmx_array_ndim(e) == 2 && !cmx_array_is_row_contiguous(e));
  cmx_array_release_all((cmx_array[]){a, b, e}, 3);
}

/* ---------------- slice / flip ---------------- */

static void slice_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  uint64_t rng = (uint64_t)x->size * 13 + (uint64_t)l;
  for (int trial = 0; trial < 12; trial++) {
    int64_t st[CMX_MAX_NDIM], sp[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
    int64_t nst[CMX_MAX_NDIM], nsp[CMX_MAX_NDIM], osh[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
      int64_t n = x->shape[d];
      st[d] = (int64_t)(h_rand_u64(&rng) % (uint64_t)(2 * n + 7)) - n - 3;
      sp[d] = (int64_t)(h_rand_u64(&rng) % (uint64_t)(2 * n + 7)) - n - 3;
      step[d] = (int64_t)(h_rand_u64(&rng) % 7) - 3;
      if (step[d] == 0) step[d] = trial % 2 ? -1 : 1;
      if (trial == 0) st[d] = 0, sp[d] = n, step[d] = 1;        /* whole */
      if (trial == 1) st[d] = -1, sp[d] = -n - 1, step[d] = -1; /* [::-1] */
      nst[d] = st[d];
      nsp[d] = sp[d];
      osh[d] = py_slice(n, &nst[d], &nsp[d], step[d]);
    }
    map_ctx m = {.in_shape = x->shape, .in_nd = nd, .start = nst, .step = step};
    h_tensor want = su_map(x, osh, nd, map_slice, &m, 0);
    char what[256];
    su_what(what, sizeof what, "slice", x, l, "");
    cmx_array r = NULL;
    OK(cmx_slice(&r, a, st, sp, step, S));
    su_check(r, &want, what);
    if (want.size) CHECK_MSG(su_shares(r, a), "%s: not a view", what);
    if (trial == 0) CHECK(r == a);
    cmx_array_release(r);
    h_free(&want);
  }
}

static void test_slice(void) {
  for_cases(SU_DTYPES, 0, slice_case);
  int64_t sh[2] = {3, 4};
  cmx_array a, e, r;
  OK(cmx_zeros(&a, sh, 2, CMX_FLOAT32, S));
  FAILS(cmx_slice(&e, a, (int64_t[]){0, 0}, (int64_t[]){3, 4},
                  (int64_t[]){1, 0}, S),
        CMX_ERR_VALUE, "[slice] Slice step cannot be zero.");
  /* strides NULL: step 1; huge and tiny bounds clamp. */
  OK(cmx_slice(&r, a, (int64_t[]){INT64_MIN, 1}, (int64_t[]){INT64_MAX, 3},
               NULL, S));
  CHECK(cmx_array_dim(r, 0) == 3 && cmx_array_dim(r, 1) == 2);
  cmx_array_release(r);
  OK(cmx_slice(&r, a, (int64_t[]){INT64_MAX, 0}, (int64_t[]){INT64_MIN, 4},
               (int64_t[]){INT64_MIN, 1}, S));
  CHECK(cmx_array_dim(r, 0) == 1 && cmx_array_dim(r, 1) == 4);
  cmx_array_release(r);
  cmx_array_release(a);
}

static void flip_case(const h_tensor* x, cmx_array a, int l) {
  int nd = x->ndim;
  for (int mask = 0; mask < (1 << nd) && mask < 16; mask++) {
    int axes[CMX_MAX_NDIM], n = 0;
    int64_t start[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
    for (int d = 0; d < nd; d++) {
      bool f = (mask >> d) & 1;
      if (f) axes[n++] = d - (d % 2) * nd; /* mix negative axes in */
      start[d] = f ? x->shape[d] - 1 : 0;
      step[d] = f ? -1 : 1;
    }
    map_ctx m = {
        .in_shape = x->shape, .in_nd = nd, .start = start, .step = step};
    h_tensor want = su_map(x, x->shape, nd, map_slice, &m, 0);
    char what[256];
    su_what(what, sizeof what, "flip", x, l, "");
    cmx_array r = NULL;
    OK(cmx_flip(&r, a, axes, n, S));
    su_check(r, &want, what);
    if (x->size) CHECK_MSG(su_shares(r, a), "%s: not a view", what);
    cmx_array_release(r);
    h_free(&want);
  }
  /* flip(None) reverses every axis. */
  int64_t start[CMX_MAX_NDIM], step[CMX_MAX_NDIM];
  for (int d = 0; d < nd; d++) start[d] = x->shape[d] - 1, step[d] = -1;
  map_ctx m = {.in_shape = x->shape, .in_nd = nd, .start = start, .step = step};
  h_tensor want = su_map(x, x->shape, nd, map_slice, &m, 0);
  cmx_array r = NULL;
  OK(cmx_flip(&r, a, NULL, 0, S));
  su_check(r, &want, "flip(None)");
  cmx_array_release(r);
  h_free(&want);
}

static void test_flip(void) {
  for_cases(SU_DTYPES, 0, flip_case);
  int64_t n = 5;
  cmx_array a, f, g, e;
  OK(cmx_arange(&a, 0, 5, 1, CMX_INT32, S));
  OK(cmx_flip(&f, a, NULL, 0, S));
  OK(cmx_flip(&g, f, NULL, 0, S));
  OK(cmx_array_eval(g));
  CHECK(cmx_array_strides(f)[0] == -1 && cmx_array_strides(g)[0] == 1);
  CHECK(cmx_array_is_row_contiguous(g) && su_shares(g, a));
  int32_t got[5];
  OK(cmx_array_copy_to(f, got, sizeof got));
  for (int i = 0; i < 5; i++) CHECK(got[i] == 4 - i);
  FAILS(cmx_flip(&e, a, (int[]){0, -1}, 2, S), CMX_ERR_VALUE,
        "[flip] received duplicate axis 0");
  FAILS(cmx_flip(&e, a, (int[]){1}, 1, S), CMX_ERR_INDEX,
        "[flip] axis 1 is out of bounds for array of dimension 1");
  (void)n;
  cmx_array_release_all((cmx_array[]){a, f, g}, 3);
}

/* ---------------- as_strided / contiguous / view ---------------- */

static void test_as_strided(void) {
  /* Sliding windows of a 1-d array, from every layout. */
  int64_t n = 10;
  h_tensor x = h_random(&n, 1, CMX_FLOAT64, -5, 5, 11);
  for (int l = 0; l < SU_NUM_LAYOUTS; l++) {
    if (!su_layout_ok(l, 1)) continue;
    cmx_array a = su_input(&x, l), r = NULL;
    int64_t shape[2] = {4, 3}, strides[2] = {2, 1};
    OK(cmx_as_strided(&r, a, shape, 2, strides, 1, S));
    h_tensor got = h_read(r);
    bool ok = got.size == 12;
    for (int i = 0; i < 4 && ok; i++)
      for (int j = 0; j < 3; j++)
        ok &= got.re[i * 3 + j] == x.re[1 + 2 * i + j];
    CHECK_MSG(ok, "as_strided windows %s", su_layout_names[l]);
    if (l == SU_CONTIG) CHECK(su_shares(r, a));
    h_free(&got);
    cmx_array_release(r);
    /* Default strides: row-major. Negative strides walk back. */
    OK(cmx_as_strided(&r, a, (int64_t[]){2, 5}, 2, NULL, 0, S));
    got = h_read(r);
    ok = got.size == 10;
    for (int i = 0; i < 10 && ok; i++) ok &= got.re[i] == x.re[i];
    CHECK(ok);
    h_free(&got);
    cmx_array_release(r);
    OK(cmx_as_strided(&r, a, (int64_t[]){10}, 1, (int64_t[]){-1}, 9, S));
    got = h_read(r);
    ok = got.size == 10;
    for (int i = 0; i < 10 && ok; i++) ok &= got.re[i] == x.re[9 - i];
    CHECK(ok);
    h_free(&got);
    cmx_array_release(r);
    cmx_array e;
    FAILS(cmx_as_strided(&e, a, (int64_t[]){4, 3}, 2, (int64_t[]){3, 1}, 0, S),
          CMX_ERR_VALUE, "[as_strided] The view reads outside the array's 10");
    FAILS(cmx_as_strided(&e, a, (int64_t[]){2}, 1, (int64_t[]){-1}, 0, S),
          CMX_ERR_VALUE, "reads outside");
    FAILS(
        cmx_as_strided(&e, a, (int64_t[]){2}, 1, (int64_t[]){INT64_MAX}, 0, S),
        CMX_ERR_VALUE, "reads outside");
    /* An empty view reads nothing: any strides and offset. */
    OK(cmx_as_strided(&e, a, (int64_t[]){0, 3}, 2, (int64_t[]){99, 99}, 50, S));
    OK(cmx_array_eval(e));
    cmx_array_release(e);
    cmx_array_release(a);
  }
  h_free(&x);
}

static void contiguous_case(const h_tensor* x, cmx_array a, int l) {
  char what[256];
  su_what(what, sizeof what, "contiguous", x, l, "");
  for (int col = 0; col < 2; col++) {
    cmx_array r = NULL;
    OK(cmx_contiguous(&r, a, col, S));
    su_check(r, x, what);
    OK(cmx_array_eval(r));
    bool row = r->flags & CMX__FLAG_ROW_CONTIG;
    bool colf = r->flags & CMX__FLAG_COL_CONTIG;
    CHECK_MSG(row || (col && colf), "%s: not contiguous", what);
    /* Contiguous data stays where it is (and column-major too when
     * allowed); anything else is copied. */
    if (x->size > 1 && l == SU_CONTIG) CHECK_MSG(su_shares(r, a), "%s", what);
    if (x->size > 1 && l == SU_TRANSPOSED && big_dims(x->shape, x->ndim) > 1)
      CHECK_MSG(su_shares(r, a) == (bool)col, "%s col=%d", what, col);
    if (x->size > 1 && l == SU_STRIDED) CHECK_MSG(!su_shares(r, a), "%s", what);
    cmx_array_release(r);
  }
}

static void test_contiguous(void) {
  for_cases(SU_FEW, 0, contiguous_case);
  /* An evaluated contiguous array is returned as is. */
  int64_t n = 6;
  cmx_array a, r;
  OK(cmx_zeros(&a, &n, 1, CMX_INT8, S));
  OK(cmx_array_eval(a));
  OK(cmx_contiguous(&r, a, false, S));
  CHECK(r == a);
  cmx_array_release_all((cmx_array[]){a, r}, 2);
}

/* Row-major bytes of a. */
static unsigned char* bytes_of(cmx_array a, size_t* n) {
  *n = cmx_array_nbytes(a);
  unsigned char* b = malloc(*n ? *n : 1);
  if (cmx_array_copy_to(a, b, *n) != CMX_OK) *n = (size_t)-1;
  return b;
}

static void view_case(const h_tensor* x, cmx_array a, int l) {
  size_t nx;
  unsigned char* want = bytes_of(a, &nx);
  for (int dt = 0; dt < CMX_NUM_DTYPES; dt++) {
    size_t ib = cmx_dtype_size(x->dtype), ob = cmx_dtype_size((cmx_dtype)dt);
    int nd = x->ndim;
    bool fits =
        ib == ob ||
        (nd > 0 &&
         (ib > ob || (x->shape[nd - 1] * (int64_t)ib) % (int64_t)ob == 0));
    cmx_array r = NULL;
    char what[256];
    su_what(what, sizeof what, "view", x, l, cmx_dtype_name((cmx_dtype)dt));
    cmx_status st = cmx_view(&r, a, (cmx_dtype)dt, S);
    CHECK_MSG((st == CMX_OK) == fits, "%s: %s", what, cmx_last_error());
    if (st != CMX_OK) continue;
    CHECK(cmx_array_ndim(r) == nd);
    for (int d = 0; d + 1 < nd; d++) CHECK(cmx_array_dim(r, d) == x->shape[d]);
    if (nd)
      CHECK(cmx_array_dim(r, -1) * (int64_t)ob ==
            x->shape[nd - 1] * (int64_t)ib);
    size_t nr;
    unsigned char* got = bytes_of(r, &nr);
    CHECK_MSG(nr == nx && memcmp(got, want, nx) == 0, "%s: bytes differ", what);
    free(got);
    /* Shared with contiguous input; same-size views always. */
    if (x->size && (l == SU_CONTIG || ib == ob))
      CHECK_MSG(su_shares(r, a), "%s: not a view", what);
    cmx_array_release(r);
  }
  free(want);
}

static void test_view(void) {
  static const cmx_dtype dts[] = {CMX_BOOL, CMX_INT16, CMX_FLOAT32,
                                  CMX_COMPLEX64, CMX_NUM_DTYPES};
  for_cases(dts, 0, view_case);
  /* A uint8 slice at an odd offset viewed as int32 must be copied. */
  uint8_t v[9] = {9, 1, 0, 0, 0, 2, 0, 0, 0};
  int64_t n = 9;
  cmx_array a, s1, r, e;
  OK(cmx_array_from_data(&a, v, &n, 1, CMX_UINT8));
  OK(cmx_slice(&s1, a, (int64_t[]){1}, (int64_t[]){9}, NULL, S));
  OK(cmx_view(&r, s1, CMX_INT32, S));
  int32_t got[2];
  OK(cmx_array_copy_to(r, got, sizeof got));
  CHECK(got[0] == 1 && got[1] == 2); /* little-endian */
  CHECK(!su_shares(r, a));
  cmx_array_release(r);
  cmx_array z;
  OK(cmx_array_from_double(&z, 1.0, CMX_FLOAT32));
  FAILS(cmx_view(&e, z, CMX_FLOAT16, S), CMX_ERR_VALUE,
        "[view] Changing the type of a scalar is only allowed for types with "
        "the same size.");
  OK(cmx_view(&e, z, CMX_INT32, S));
  int64_t bits;
  OK(cmx_array_item_int64(e, &bits));
  CHECK(bits == 0x3f800000);
  cmx_array_release(e);
  FAILS(cmx_view(&e, a, CMX_FLOAT64, S), CMX_ERR_VALUE,
        "[view] When viewing as a larger dtype, the size in bytes of the last "
        "axis must be a multiple of the requested type size.");
  FAILS(cmx_view(&e, a, (cmx_dtype)99, S), CMX_ERR_TYPE,
        "[view] invalid dtype");
  cmx_array_release_all((cmx_array[]){a, s1, z}, 3);
}

int main(void) {
  RUN(test_reshape);
  RUN(test_flatten);
  RUN(test_unflatten);
  RUN(test_squeeze_expand);
  RUN(test_transpose);
  RUN(test_broadcast);
  RUN(test_slice);
  RUN(test_flip);
  RUN(test_as_strided);
  RUN(test_contiguous);
  RUN(test_view);
  return test_summary("test_shape");
}
