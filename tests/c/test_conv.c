/* Convolutions (conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d,
 * convolve): many configurations (batch 1 and > 1, odd sizes, strides above
 * the kernel size, dilations, groups including depthwise, padding larger
 * than the kernel, asymmetric and negative padding, input dilation, flip),
 * every floating dtype, inputs and weights in contiguous, transposed and
 * strided layouts, and error messages.
 *
 * References are plain double-precision loops written from the
 * definitions, independent of the kernel's index arithmetic:
 * - conv_general: the dilated, padded input is materialised explicitly,
 *   then correlated with the dilated (optionally flipped) kernel;
 * - conv_transpose: every input element scatters input * weight into the
 *   output (the transposed convolution's definition);
 * - convolve: the full 1-d convolution sum, sliced as NumPy's modes.
 * Each output element is checked against a bound scaled by the dtype's
 * epsilon and the sum of |terms| of that element. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

/* ---------------- references ---------------- */
typedef struct {
  int nsp;
  int64_t s[3], lo[3], hi[3], kd[3], id[3];
  int groups;
  bool flip;
} cfg;

/* Reference of conv_general. x (N, L..., C), w (O, K..., C/groups) hold
 * the logical values; writes out (values) and sumabs (sum of |terms|) of
 * shape (N, M..., O), allocated here. */
static h_tensor ref_conv(const h_tensor* x, const h_tensor* w, const cfg* c,
                         cmx_dtype odt, double** sumabs) {
  int nsp = c->nsp;
  int64_t N = x->shape[0], C = x->shape[nsp + 1], O = w->shape[0];
  int64_t Cg = C / c->groups, Og = O / c->groups;
  int64_t L[3] = {1, 1, 1}, K[3] = {1, 1, 1}, Lv[3] = {1, 1, 1},
          M[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, lo[3] = {0}, kd[3] = {1, 1, 1}, id[3] = {1, 1, 1};
  for (int d = 0; d < nsp; d++) {
    L[d] = x->shape[d + 1];
    K[d] = w->shape[d + 1];
    s[d] = c->s[d];
    lo[d] = c->lo[d];
    kd[d] = c->kd[d];
    id[d] = c->id[d];
    Lv[d] = (L[d] - 1) * id[d] + 1 + c->lo[d] + c->hi[d];
    M[d] = (Lv[d] - ((K[d] - 1) * kd[d] + 1)) / s[d] + 1;
  }
  /* The dilated, padded input, materialised. */
  int64_t nv = N * Lv[0] * Lv[1] * Lv[2] * C;
  double* xv = calloc((size_t)(nv ? nv : 1), sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t i0 = 0; i0 < L[0]; i0++)
      for (int64_t i1 = 0; i1 < L[1]; i1++)
        for (int64_t i2 = 0; i2 < L[2]; i2++) {
          int64_t p0 = i0 * id[0] + lo[0], p1 = i1 * id[1] + lo[1],
                  p2 = i2 * id[2] + lo[2];
          if (p0 < 0 || p0 >= Lv[0] || p1 < 0 || p1 >= Lv[1] || p2 < 0 ||
              p2 >= Lv[2])
            continue; /* cropped by negative padding */
          for (int64_t ci = 0; ci < C; ci++)
            xv[(((n * Lv[0] + p0) * Lv[1] + p1) * Lv[2] + p2) * C + ci] =
                x->re[(((n * L[0] + i0) * L[1] + i1) * L[2] + i2) * C + ci];
        }
  int64_t oshape[5];
  oshape[0] = N;
  for (int d = 0; d < nsp; d++) oshape[d + 1] = M[d];
  oshape[nsp + 1] = O;
  h_tensor out = h_alloc(oshape, nsp + 2, odt);
  *sumabs = calloc((size_t)(out.size ? out.size : 1), sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t m0 = 0; m0 < M[0]; m0++)
      for (int64_t m1 = 0; m1 < M[1]; m1++)
        for (int64_t m2 = 0; m2 < M[2]; m2++)
          for (int64_t co = 0; co < O; co++) {
            int64_t g = co / Og;
            double acc = 0, sa = 0;
            for (int64_t k0 = 0; k0 < K[0]; k0++)
              for (int64_t k1 = 0; k1 < K[1]; k1++)
                for (int64_t k2 = 0; k2 < K[2]; k2++) {
                  int64_t p0 = m0 * s[0] + k0 * kd[0],
                          p1 = m1 * s[1] + k1 * kd[1],
                          p2 = m2 * s[2] + k2 * kd[2];
                  int64_t w0 = c->flip ? K[0] - 1 - k0 : k0;
                  int64_t w1 = c->flip ? K[1] - 1 - k1 : k1;
                  int64_t w2 = c->flip ? K[2] - 1 - k2 : k2;
                  for (int64_t ci = 0; ci < Cg; ci++) {
                    int64_t xi = ((n * Lv[0] + p0) * Lv[1] + p1) * Lv[2] + p2;
                    int64_t wi = ((co * K[0] + w0) * K[1] + w1) * K[2] + w2;
                    double a = xv[xi * C + g * Cg + ci];
                    double b = w->re[wi * Cg + ci];
                    acc += a * b;
                    sa += fabs(a * b);
                  }
                }
            int64_t oi = (((n * M[0] + m0) * M[1] + m1) * M[2] + m2) * O + co;
            out.re[oi] = acc;
            (*sumabs)[oi] = sa;
          }
  free(xv);
  return out;
}

/* Reference of conv_transposeNd by scatter-add: input[n, i, g*Cg + ci] *
 * weight[co, k, ci] lands on out[n, i*s + k*dil - pad, co]. */
static h_tensor ref_transpose(const h_tensor* x, const h_tensor* w, int nsp,
                              const int* st, const int* pad, const int* dil,
                              const int* opad, int groups, cmx_dtype odt,
                              double** sumabs) {
  int64_t N = x->shape[0], C = x->shape[nsp + 1], O = w->shape[0];
  int64_t Cg = C / groups, Og = O / groups;
  int64_t L[3] = {1, 1, 1}, K[3] = {1, 1, 1}, M[3] = {1, 1, 1};
  int64_t s[3] = {1, 1, 1}, p[3] = {0}, dl[3] = {1, 1, 1};
  for (int d = 0; d < nsp; d++) {
    L[d] = x->shape[d + 1];
    K[d] = w->shape[d + 1];
    s[d] = st[d];
    p[d] = pad[d];
    dl[d] = dil[d];
    M[d] = (L[d] - 1) * st[d] - 2 * pad[d] + dil[d] * (K[d] - 1) + opad[d] + 1;
  }
  int64_t oshape[5];
  oshape[0] = N;
  for (int d = 0; d < nsp; d++) oshape[d + 1] = M[d];
  oshape[nsp + 1] = O;
  h_tensor out = h_alloc(oshape, nsp + 2, odt);
  *sumabs = calloc((size_t)(out.size ? out.size : 1), sizeof(double));
  for (int64_t n = 0; n < N; n++)
    for (int64_t i0 = 0; i0 < L[0]; i0++)
      for (int64_t i1 = 0; i1 < L[1]; i1++)
        for (int64_t i2 = 0; i2 < L[2]; i2++)
          for (int64_t co = 0; co < O; co++)
            for (int64_t k0 = 0; k0 < K[0]; k0++)
              for (int64_t k1 = 0; k1 < K[1]; k1++)
                for (int64_t k2 = 0; k2 < K[2]; k2++) {
                  int64_t o0 = i0 * s[0] + k0 * dl[0] - p[0];
                  int64_t o1 = i1 * s[1] + k1 * dl[1] - p[1];
                  int64_t o2 = i2 * s[2] + k2 * dl[2] - p[2];
                  if (o0 < 0 || o0 >= M[0] || o1 < 0 || o1 >= M[1] || o2 < 0 ||
                      o2 >= M[2])
                    continue;
                  int64_t g = co / Og;
                  int64_t oi =
                      (((n * M[0] + o0) * M[1] + o1) * M[2] + o2) * O + co;
                  for (int64_t ci = 0; ci < Cg; ci++) {
                    int64_t xi = ((n * L[0] + i0) * L[1] + i1) * L[2] + i2;
                    int64_t wi = ((co * K[0] + k0) * K[1] + k1) * K[2] + k2;
                    double a = x->re[xi * C + g * Cg + ci];
                    double b = w->re[wi * Cg + ci];
                    out.re[oi] += a * b;
                    (*sumabs)[oi] += fabs(a * b);
                  }
                }
  return out;
}

/* ---------------- comparison ---------------- */
/* |got - want| <= (rounding of the result to dt) + (accumulation error in
 * the compute type, scaled by the sum of |terms| and the term count). */
static bool compare(cmx_array r, const h_tensor* want, const double* sumabs,
                    int64_t nterms, const char* what) {
  h_tensor got = h_read(r);
  bool ok = true;
  if (got.size < 0) {
    fprintf(stderr, "FAIL %s: evaluation failed: %s\n", what, cmx_last_error());
    ok = false;
  } else if (got.dtype != want->dtype || got.ndim != want->ndim) {
    fprintf(stderr, "FAIL %s: dtype %s ndim %d, want %s ndim %d\n", what,
            cmx_dtype_name(got.dtype), got.ndim, cmx_dtype_name(want->dtype),
            want->ndim);
    ok = false;
  } else {
    for (int d = 0; d < got.ndim && ok; d++)
      if (got.shape[d] != want->shape[d]) {
        char a[128], b[128];
        fprintf(stderr, "FAIL %s: shape %s, want %s\n", what,
                cmx__shape_str(got.shape, got.ndim, a, sizeof a),
                cmx__shape_str(want->shape, want->ndim, b, sizeof b));
        ok = false;
      }
    cmx_dtype dt = want->dtype;
    double rel = dt == CMX_FLOAT16    ? 1.0 / 2048
                 : dt == CMX_BFLOAT16 ? 1.0 / 256
                                      : 0;
    double eps = dt == CMX_FLOAT64 ? 2.3e-16 : 1.2e-7;
    double grow = 4.0 + 2.0 * sqrt((double)nterms);
    for (int64_t i = 0; i < got.size && ok; i++) {
      double bound = rel * fabs(want->re[i]) + eps * grow * sumabs[i] + 1e-300;
      if (!(fabs(got.re[i] - want->re[i]) <= bound)) {
        fprintf(stderr,
                "FAIL %s: element %lld: got %.9g, want %.9g (bound "
                "%.3g)\n",
                what, (long long)i, got.re[i], want->re[i], bound);
        ok = false;
      }
    }
  }
  h_free(&got);
  return ok;
}

/* ---------------- conv_general / convNd cases ---------------- */
typedef struct {
  const char* name;
  int nsp;
  int64_t N, C, O;
  int64_t L[3], K[3];
  int s[3], lo[3], hi[3], kd[3], id[3];
  int groups;
  int flip;
} conv_case;

/* Shorthands: all-ones and all-zeros parameter triples. */
// clang-format off
#define ONE {1, 1, 1}
#define ZERO {0, 0, 0}
// clang-format on

// clang-format off
static const conv_case conv_cases[] = {
    /* 1-d */
    {"1d basic", 1, 2, 3, 4, {10}, {3}, ONE, ZERO, ZERO, ONE, ONE, 1, 0},
    {"1d batch1 odd", 1, 1, 5, 7, {13}, {5}, ONE, ZERO, ZERO, ONE, ONE, 1, 0},
    {"1d stride2 pad2", 1, 3, 2, 3, {11}, {3}, {2}, {2}, {2}, ONE, ONE, 1, 0},
    {"1d stride>kernel", 1, 2, 3, 2, {17}, {2}, {4}, ZERO, ZERO, ONE, ONE, 1,
     0},
    {"1d dilation", 1, 2, 2, 3, {15}, {3}, ONE, {1}, {1}, {3}, ONE, 1, 0},
    {"1d pad>kernel", 1, 2, 2, 2, {4}, {3}, ONE, {5}, {5}, ONE, ONE, 1, 0},
    {"1d groups3", 1, 2, 6, 9, {9}, {3}, ONE, {1}, {1}, ONE, ONE, 3, 0},
    {"1d depthwise", 1, 2, 4, 4, {12}, {5}, {2}, {2}, {2}, ONE, ONE, 4, 0},
    {"1d depthwise x2", 1, 3, 3, 6, {8}, {3}, ONE, {1}, {1}, {2}, ONE, 3, 0},
    {"1d K=1", 1, 2, 5, 3, {7}, {1}, ONE, ZERO, ZERO, ONE, ONE, 1, 0},
    {"1d K=1 stride3", 1, 2, 5, 3, {10}, {1}, {3}, ZERO, ZERO, ONE, ONE, 1, 0},
    {"1d K=L", 1, 2, 3, 2, {6}, {6}, ONE, ZERO, ZERO, ONE, ONE, 1, 0},
    {"1d asym pad", 1, 2, 3, 2, {9}, {4}, {2}, {3}, {0}, ONE, ONE, 1, 0},
    {"1d negative pad", 1, 2, 3, 2, {12}, {3}, ONE, {-2}, {-1}, ONE, ONE, 1,
     0},
    {"1d input dilation", 1, 2, 2, 3, {6}, {3}, ONE, {2}, {2}, ONE, {3}, 1, 0},
    {"1d flip", 1, 2, 3, 2, {9}, {4}, ONE, {1}, {2}, ONE, ONE, 1, 1},
    {"1d all", 1, 3, 4, 6, {9}, {3}, {2}, {4}, {1}, {2}, {2}, 2, 1},
    {"1d neg pad + input dil", 1, 2, 2, 2, {7}, {2}, ONE, {-3}, {-2}, ONE,
     {2}, 1, 0},
    {"1d empty length padded", 1, 2, 3, 2, {0}, {1}, ONE, {1}, {1}, ONE, ONE,
     1, 0},
    {"1d empty length depthwise", 1, 2, 3, 3, {0}, {2}, ONE, {2}, {1}, ONE,
     ONE, 3, 0},
    /* 2-d */
    {"2d basic", 2, 3, 2, 5, {11, 9}, {3, 2}, ONE, ZERO, ZERO, ONE, ONE, 1, 0},
    {"2d batch1", 2, 1, 3, 4, {7, 8}, {3, 3}, ONE, {1, 1}, {1, 1}, ONE, ONE, 1,
     0},
    {"2d stride pad", 2, 2, 3, 4, {10, 13}, {3, 4}, {2, 3}, {1, 2}, {1, 2},
     ONE, ONE, 1, 0},
    {"2d dilation", 2, 2, 2, 3, {12, 10}, {3, 2}, ONE, {1, 0}, {1, 0}, {2, 3},
     ONE, 1, 0},
    {"2d groups2", 2, 2, 4, 6, {7, 6}, {3, 3}, {1, 2}, {1, 1}, {1, 1}, ONE,
     ONE, 2, 0},
    {"2d depthwise", 2, 2, 5, 5, {9, 8}, {3, 3}, ONE, {1, 1}, {1, 1}, ONE, ONE,
     5, 0},
    {"2d pointwise", 2, 3, 6, 4, {5, 7}, {1, 1}, ONE, ZERO, ZERO, ONE, ONE, 1,
     0},
    {"2d pointwise groups", 2, 2, 6, 9, {4, 5}, {1, 1}, ONE, ZERO, ZERO, ONE,
     ONE, 3, 0},
    {"2d 1x1 stride2", 2, 2, 3, 4, {7, 6}, {1, 1}, {2, 2}, ZERO, ZERO, ONE,
     ONE, 1, 0},
    {"2d stride>kernel", 2, 2, 2, 3, {13, 11}, {2, 2}, {5, 3}, ZERO, ZERO, ONE,
     ONE, 1, 0},
    {"2d pad>kernel", 2, 1, 2, 2, {3, 4}, {2, 3}, ONE, {4, 3}, {4, 3}, ONE, ONE,
     1, 0},
    {"2d lenet-ish", 2, 4, 1, 6, {12, 12}, {5, 5}, ONE, ZERO, ZERO, ONE, ONE, 1,
     0},
    {"2d general", 2, 2, 4, 4, {8, 7}, {3, 2}, {2, 1}, {2, 0}, {1, 3}, {1, 2},
     {2, 3}, 2, 1},
    {"2d negative pad", 2, 2, 3, 2, {9, 8}, {3, 3}, ONE, {-1, 2}, {1, -2}, ONE,
     ONE, 1, 0},
    /* 3-d */
    {"3d basic", 3, 2, 2, 3, {5, 6, 4}, {2, 3, 2}, ONE, ZERO, ZERO, ONE, ONE,
     1, 0},
    {"3d stride pad dil", 3, 2, 3, 2, {7, 6, 8}, {3, 2, 3}, {2, 1, 3},
     {1, 2, 0}, {1, 2, 0}, {2, 1, 1}, ONE, 1, 0},
    {"3d groups", 3, 1, 4, 6, {4, 5, 3}, {2, 2, 2}, ONE, {1, 1, 1}, {1, 1, 1},
     ONE, ONE, 2, 0},
    {"3d general", 3, 2, 2, 2, {3, 4, 3}, {2, 2, 3}, {1, 2, 1}, {1, 0, 2},
     {0, 1, 1}, {1, 1, 2}, {2, 1, 2}, 1, 1},
    {"3d depthwise", 3, 2, 3, 3, {4, 3, 5}, {2, 3, 2}, {1, 1, 2}, {1, 1, 0},
     {0, 1, 1}, {1, 1, 2}, ONE, 3, 0},
    {"2d depthwise flip dil", 2, 2, 4, 4, {5, 6}, {3, 2}, {2, 1}, {2, 1},
     {1, 2}, {1, 2}, {2, 1}, 4, 1},
};
// clang-format on
#define N_CONV_CASES ((int)(sizeof conv_cases / sizeof conv_cases[0]))

static cfg case_cfg(const conv_case* c) {
  cfg f;
  memset(&f, 0, sizeof f);
  f.nsp = c->nsp;
  f.groups = c->groups;
  f.flip = c->flip;
  for (int d = 0; d < c->nsp; d++) {
    f.s[d] = c->s[d];
    f.lo[d] = c->lo[d];
    f.hi[d] = c->hi[d];
    f.kd[d] = c->kd[d];
    f.id[d] = c->id[d];
  }
  return f;
}

/* The convNd API applies when padding is symmetric and nothing else is
 * used. */
static bool nd_applies(const conv_case* c) {
  if (c->flip) return false;
  for (int d = 0; d < c->nsp; d++)
    if (c->lo[d] != c->hi[d] || c->id[d] != 1) return false;
  return true;
}

static cmx_status call_nd(cmx_array* r, cmx_array x, cmx_array w,
                          const conv_case* c) {
  const int *s = c->s, *p = c->lo, *d = c->kd;
  switch (c->nsp) {
    case 1:
      return cmx_conv1d(r, x, w, s[0], p[0], d[0], c->groups, S);
    case 2:
      return cmx_conv2d(r, x, w, s[0], s[1], p[0], p[1], d[0], d[1], c->groups,
                        S);
    default:
      return cmx_conv3d(r, x, w, s[0], s[1], s[2], p[0], p[1], p[2], d[0], d[1],
                        d[2], c->groups, S);
  }
}

static void shapes_of(const conv_case* c, int64_t* xs, int64_t* ws) {
  xs[0] = c->N;
  ws[0] = c->O;
  for (int d = 0; d < c->nsp; d++) {
    xs[d + 1] = c->L[d];
    ws[d + 1] = c->K[d];
  }
  xs[c->nsp + 1] = c->C;
  ws[c->nsp + 1] = c->C / c->groups;
}

static void test_conv_cases(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                  CMX_BFLOAT16};
  for (int ci = 0; ci < N_CONV_CASES; ci++) {
    const conv_case* c = &conv_cases[ci];
    int64_t xs[5], ws[5];
    shapes_of(c, xs, ws);
    cfg f = case_cfg(c);
    int64_t nterms = c->C / c->groups;
    for (int d = 0; d < c->nsp; d++) nterms *= c->K[d];
    for (int di = 0; di < 4; di++) {
      cmx_dtype dt = dts[di];
      h_tensor x = h_random(xs, c->nsp + 2, dt, -1, 1, (uint64_t)ci * 4 + 1);
      h_tensor w = h_random(ws, c->nsp + 2, dt, -1, 1, (uint64_t)ci * 4 + 2);
      double* sa;
      h_tensor want = ref_conv(&x, &w, &f, dt, &sa);
      /* Every layout pair for float32; contiguous and one mixed pair for
       * the other dtypes. */
      for (int lx = 0; lx < H_NUM_LAYOUTS; lx++)
        for (int lw = 0; lw < H_NUM_LAYOUTS; lw++) {
          if (dt != CMX_FLOAT32 && !(lx == lw && lx == 0) &&
              !(lx == 2 && lw == 1))
            continue;
          cmx_array a = h_array(&x, (h_layout)lx);
          cmx_array b = h_array(&w, (h_layout)lw);
          char what[256];
          snprintf(what, sizeof what, "conv_general %s %s x:%s w:%s", c->name,
                   cmx_dtype_name(dt), h_layout_names[lx], h_layout_names[lw]);
          cmx_array r = NULL;
          int n = c->nsp;
          OK(cmx_conv_general(&r, a, b, c->s, n, c->lo, n, c->hi, n, c->kd, n,
                              c->id, n, c->groups, c->flip, S));
          CHECK_MSG(r && compare(r, &want, sa, nterms, what), "%s", what);
          cmx_array_release(r);
          if (nd_applies(c)) {
            r = NULL;
            snprintf(what, sizeof what, "conv%dd %s %s x:%s w:%s", c->nsp,
                     c->name, cmx_dtype_name(dt), h_layout_names[lx],
                     h_layout_names[lw]);
            OK(call_nd(&r, a, b, c));
            CHECK_MSG(r && compare(r, &want, sa, nterms, what), "%s", what);
            cmx_array_release(r);
          }
          cmx_array_release(a);
          cmx_array_release(b);
        }
      free(sa);
      h_free(&x);
      h_free(&w);
      h_free(&want);
    }
  }
}

/* Parameter lists of one entry apply to every spatial dim; empty lists are
 * the defaults. */
static void test_param_broadcast(void) {
  int64_t xs[4] = {2, 9, 8, 3}, ws[4] = {4, 3, 2, 3};
  h_tensor x = h_random(xs, 4, CMX_FLOAT32, -1, 1, 71);
  h_tensor w = h_random(ws, 4, CMX_FLOAT32, -1, 1, 72);
  cfg f;
  memset(&f, 0, sizeof f);
  f.nsp = 2;
  f.groups = 1;
  for (int d = 0; d < 2; d++) {
    f.s[d] = 2;
    f.lo[d] = 1;
    f.hi[d] = 0;
    f.kd[d] = 1;
    f.id[d] = 1;
  }
  double* sa;
  h_tensor want = ref_conv(&x, &w, &f, CMX_FLOAT32, &sa);
  cmx_array a = h_array(&x, H_CONTIG), b = h_array(&w, H_CONTIG), r = NULL;
  int two = 2, one = 1;
  OK(cmx_conv_general(&r, a, b, &two, 1, &one, 1, NULL, 0, NULL, 0, NULL, 0, 1,
                      false, S));
  CHECK(r && compare(r, &want, sa, 18, "conv_general broadcast params"));
  cmx_array_release(r);
  free(sa);
  h_free(&want);
  /* All defaults: stride 1, no padding, no dilation. */
  for (int d = 0; d < 2; d++) f.s[d] = 1, f.lo[d] = 0;
  want = ref_conv(&x, &w, &f, CMX_FLOAT32, &sa);
  r = NULL;
  OK(cmx_conv_general(&r, a, b, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, 1,
                      false, S));
  CHECK(r && compare(r, &want, sa, 18, "conv_general defaults"));
  cmx_array_release(r);
  free(sa);
  h_free(&want);
  cmx_array_release(a);
  cmx_array_release(b);
  h_free(&x);
  h_free(&w);
}

/* Large enough for every kernel path at scale: per-thread tiles (24
 * output channels), chunks unfolded over the pool and multiplied with
 * threaded BLAS (48 channels, and 128 in 2 groups), 1x1 kernels read in
 * place (K = 1), and the depthwise path (16 groups). */
static void test_large(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_BFLOAT16};
  static const struct {
    int groups;
    int64_t O, K;
  } cfgs[] = {{1, 24, 3}, {1, 48, 3}, {2, 128, 3}, {1, 300, 1}, {16, 16, 3}};
  for (int ci = 0; ci < 10; ci++) {
    cmx_dtype dt = dts[ci % 2];
    int G = cfgs[ci / 2].groups;
    int64_t K = cfgs[ci / 2].K;
    int64_t xs[4] = {9, 33, 31, 16}, ws[4] = {cfgs[ci / 2].O, K, K, 16 / G};
    h_tensor x = h_random(xs, 4, dt, -1, 1, 81);
    h_tensor w = h_random(ws, 4, dt, -1, 1, 82);
    cfg f;
    memset(&f, 0, sizeof f);
    f.nsp = 2;
    f.groups = G;
    int pad = K == 3 ? 1 : 0;
    for (int d = 0; d < 2; d++)
      f.s[d] = f.kd[d] = f.id[d] = 1, f.lo[d] = pad, f.hi[d] = pad;
    double* sa;
    h_tensor want = ref_conv(&x, &w, &f, dt, &sa);
    cmx_array a = h_array(&x, H_CONTIG), b = h_array(&w, H_CONTIG), r = NULL;
    OK(cmx_conv2d(&r, a, b, 1, 1, pad, pad, 1, 1, G, S));
    char what[96];
    snprintf(what, sizeof what, "conv2d large %s O=%lld K=%lld groups %d",
             cmx_dtype_name(dt), (long long)ws[0], (long long)K, G);
    CHECK_MSG(r && compare(r, &want, sa, K * K * 16 / G, what), "%s", what);
    cmx_array_release(r);
    cmx_array_release(a);
    cmx_array_release(b);
    free(sa);
    h_free(&want);
    h_free(&x);
    h_free(&w);
  }
}

/* ---------------- transposed convolutions ---------------- */
typedef struct {
  const char* name;
  int nsp;
  int64_t N, C, O;
  int64_t L[3], K[3];
  int s[3], p[3], d[3], op[3];
  int groups;
} tconv_case;

// clang-format off
static const tconv_case tconv_cases[] = {
    {"1d basic", 1, 2, 3, 4, {6}, {3}, ONE, ZERO, ONE, ZERO, 1},
    {"1d stride2", 1, 2, 3, 2, {5}, {3}, {2}, ZERO, ONE, ZERO, 1},
    {"1d stride3 pad1", 1, 1, 2, 3, {7}, {4}, {3}, {1}, ONE, ZERO, 1},
    {"1d dilation", 1, 2, 2, 2, {5}, {3}, {2}, {1}, {2}, ZERO, 1},
    {"1d output padding", 1, 2, 2, 3, {5}, {3}, {2}, {1}, ONE, {1}, 1},
    {"1d groups", 1, 2, 4, 6, {6}, {3}, {2}, {1}, ONE, ZERO, 2},
    {"1d depthwise", 1, 2, 3, 3, {7}, {2}, {2}, ZERO, ONE, ZERO, 3},
    {"1d pad>kernel", 1, 2, 2, 2, {9}, {2}, {3}, {3}, ONE, ZERO, 1},
    {"1d stride>kernel", 1, 2, 2, 2, {5}, {2}, {4}, ZERO, ONE, {2}, 1},
    {"2d basic", 2, 2, 3, 2, {4, 5}, {3, 3}, ONE, ZERO, ONE, ZERO, 1},
    {"2d stride pad", 2, 2, 2, 3, {5, 4}, {3, 2}, {2, 3}, {1, 1}, ONE, {1, 2},
     1},
    {"2d dil groups", 2, 1, 4, 4, {4, 4}, {2, 3}, {2, 1}, {1, 0}, {2, 2},
     {1, 0}, 2},
    {"2d pad>kernel", 2, 2, 2, 2, {6, 7}, {2, 2}, {2, 2}, {3, 2}, ONE, ZERO,
     1},
    {"3d basic", 3, 2, 2, 3, {3, 4, 3}, {2, 2, 3}, {2, 1, 2}, {0, 1, 1},
     {1, 1, 2}, {1, 0, 1}, 1},
};
// clang-format on
#define N_TCONV_CASES ((int)(sizeof tconv_cases / sizeof tconv_cases[0]))

static cmx_status call_transpose(cmx_array* r, cmx_array x, cmx_array w,
                                 const tconv_case* c) {
  const int *s = c->s, *p = c->p, *d = c->d, *o = c->op;
  switch (c->nsp) {
    case 1:
      return cmx_conv_transpose1d(r, x, w, s[0], p[0], d[0], o[0], c->groups,
                                  S);
    case 2:
      return cmx_conv_transpose2d(r, x, w, s[0], s[1], p[0], p[1], d[0], d[1],
                                  o[0], o[1], c->groups, S);
    default:
      return cmx_conv_transpose3d(r, x, w, s[0], s[1], s[2], p[0], p[1], p[2],
                                  d[0], d[1], d[2], o[0], o[1], o[2], c->groups,
                                  S);
  }
}

static void test_transpose_cases(void) {
  static const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16};
  for (int ci = 0; ci < N_TCONV_CASES; ci++) {
    const tconv_case* c = &tconv_cases[ci];
    int64_t xs[5], ws[5];
    xs[0] = c->N;
    ws[0] = c->O;
    for (int d = 0; d < c->nsp; d++) {
      xs[d + 1] = c->L[d];
      ws[d + 1] = c->K[d];
    }
    xs[c->nsp + 1] = c->C;
    ws[c->nsp + 1] = c->C / c->groups;
    int64_t nterms = c->C / c->groups;
    for (int d = 0; d < c->nsp; d++) nterms *= c->K[d];
    for (int di = 0; di < 3; di++) {
      cmx_dtype dt = dts[di];
      h_tensor x = h_random(xs, c->nsp + 2, dt, -1, 1, (uint64_t)ci * 3 + 101);
      h_tensor w = h_random(ws, c->nsp + 2, dt, -1, 1, (uint64_t)ci * 3 + 102);
      double* sa;
      h_tensor want = ref_transpose(&x, &w, c->nsp, c->s, c->p, c->d, c->op,
                                    c->groups, dt, &sa);
      for (int l = 0; l < H_NUM_LAYOUTS; l++) {
        if (dt != CMX_FLOAT32 && l) continue;
        cmx_array a = h_array(&x, (h_layout)l);
        cmx_array b = h_array(&w, (h_layout)(H_NUM_LAYOUTS - 1 - l));
        char what[256];
        snprintf(what, sizeof what, "conv_transpose%dd %s %s layout %s", c->nsp,
                 c->name, cmx_dtype_name(dt), h_layout_names[l]);
        cmx_array r = NULL;
        OK(call_transpose(&r, a, b, c));
        CHECK_MSG(r && compare(r, &want, sa, nterms, what), "%s", what);
        cmx_array_release(r);
        cmx_array_release(a);
        cmx_array_release(b);
      }
      free(sa);
      h_free(&x);
      h_free(&w);
      h_free(&want);
    }
  }
}

/* ---------------- convolve ---------------- */
static void test_convolve(void) {
  static const int64_t lens[][2] = {{8, 3}, {8, 4}, {5, 5}, {3, 8},
                                    {1, 6}, {7, 1}, {2, 2}, {10, 6}};
  static const cmx_convolve_mode modes[] = {
      CMX_CONVOLVE_FULL, CMX_CONVOLVE_SAME, CMX_CONVOLVE_VALID};
  static const char* const mode_names[] = {"full", "same", "valid"};
  for (int li = 0; li < 8; li++) {
    int64_t na = lens[li][0], nv = lens[li][1];
    for (int dti = 0; dti < 2; dti++) {
      cmx_dtype dt = dti ? CMX_FLOAT64 : CMX_FLOAT32;
      h_tensor a = h_random(&na, 1, dt, -2, 2, (uint64_t)li + 201);
      h_tensor v = h_random(&nv, 1, dt, -2, 2, (uint64_t)li + 301);
      /* The full convolution from its definition. */
      int64_t nf = na + nv - 1, mn = na < nv ? na : nv, mx = na < nv ? nv : na;
      double* full = calloc((size_t)nf, sizeof(double));
      double* fabs_ = calloc((size_t)nf, sizeof(double));
      for (int64_t jj = 0; jj < nf; jj++)
        for (int64_t i = 0; i < na; i++)
          if (jj - i >= 0 && jj - i < nv) {
            full[jj] += a.re[i] * v.re[jj - i];
            fabs_[jj] += fabs(a.re[i] * v.re[jj - i]);
          }
      for (int mi = 0; mi < 3; mi++) {
        int64_t start = mi == 0 ? 0 : mi == 1 ? (mn - 1) / 2 : mn - 1;
        int64_t len = mi == 0 ? nf : mi == 1 ? mx : mx - mn + 1;
        h_tensor want = h_alloc(&len, 1, dt);
        double* sa = calloc((size_t)len, sizeof(double));
        for (int64_t i = 0; i < len; i++) {
          want.re[i] = full[start + i];
          sa[i] = fabs_[start + i];
        }
        cmx_array x = h_array(&a, dti ? H_STRIDED : H_CONTIG);
        cmx_array y = h_array(&v, H_CONTIG), r = NULL;
        char what[128];
        snprintf(what, sizeof what, "convolve %lld,%lld %s %s", (long long)na,
                 (long long)nv, mode_names[mi], cmx_dtype_name(dt));
        OK(cmx_convolve(&r, x, y, modes[mi], S));
        CHECK_MSG(r && compare(r, &want, sa, mn, what), "%s", what);
        cmx_array_release(r);
        cmx_array_release(x);
        cmx_array_release(y);
        h_free(&want);
        free(sa);
      }
      free(full);
      free(fabs_);
      h_free(&a);
      h_free(&v);
    }
  }
}

/* ---------------- dtypes, empty shapes ---------------- */
static cmx_array filled(const int64_t* shape, int nd, cmx_dtype dt, double v) {
  cmx_array o = NULL, s = NULL;
  cmx_array_from_double(&s, v, dt);
  cmx_full(&o, shape, nd, s, dt, S);
  cmx_array_release(s);
  return o;
}

static void test_dtypes(void) {
  int64_t xs[3] = {2, 6, 3}, ws[3] = {2, 3, 3};
  /* float16 input with float32 weight promotes to float32. */
  h_tensor x = h_random(xs, 3, CMX_FLOAT16, -1, 1, 401);
  h_tensor w = h_random(ws, 3, CMX_FLOAT32, -1, 1, 402);
  cfg f;
  memset(&f, 0, sizeof f);
  f.nsp = 1;
  f.groups = 1;
  f.s[0] = f.kd[0] = f.id[0] = 1;
  double* sa;
  h_tensor want = ref_conv(&x, &w, &f, CMX_FLOAT32, &sa);
  cmx_array a = h_array(&x, H_CONTIG), b = h_array(&w, H_CONTIG), r = NULL;
  OK(cmx_conv1d(&r, a, b, 1, 0, 1, 1, S));
  CHECK(r && cmx_array_dtype(r) == CMX_FLOAT32);
  CHECK(r && compare(r, &want, sa, 9, "conv1d float16 x float32"));
  cmx_array_release(r);
  cmx_array_release(b);
  free(sa);
  h_free(&want);
  /* An integer weight takes the input's floating type (MLX checks only the
   * input's dtype). */
  h_tensor wi = h_random(ws, 3, CMX_INT32, -3, 3, 403);
  want = ref_conv(&x, &wi, &f, CMX_FLOAT16, &sa);
  b = h_array(&wi, H_CONTIG);
  r = NULL;
  OK(cmx_conv1d(&r, a, b, 1, 0, 1, 1, S));
  CHECK(r && compare(r, &want, sa, 9, "conv1d float16 x int32"));
  cmx_array_release(r);
  cmx_array_release(a);
  cmx_array_release(b);
  free(sa);
  h_free(&want);
  h_free(&wi);
  h_free(&x);
  h_free(&w);

  /* Empty batch: shape (0, M, O). Zero input channels: all zeros. */
  int64_t x0[3] = {0, 6, 3}, w0[3] = {4, 3, 3};
  cmx_array e = filled(x0, 3, CMX_FLOAT32, 1),
            k = filled(w0, 3, CMX_FLOAT32, 1);
  r = NULL;
  OK(cmx_conv1d(&r, e, k, 1, 0, 1, 1, S));
  CHECK(r && cmx_array_ndim(r) == 3 && cmx_array_shape(r)[0] == 0 &&
        cmx_array_shape(r)[1] == 4 && cmx_array_shape(r)[2] == 4);
  CHECK(r && cmx_array_eval(r) == CMX_OK);
  cmx_array_release(r);
  cmx_array_release(e);
  cmx_array_release(k);
  int64_t xc[3] = {2, 5, 0}, wc[3] = {3, 2, 0};
  e = filled(xc, 3, CMX_FLOAT32, 1);
  k = filled(wc, 3, CMX_FLOAT32, 1);
  r = NULL;
  OK(cmx_conv1d(&r, e, k, 1, 0, 1, 1, S));
  h_tensor got = r ? h_read(r) : (h_tensor){.size = -1};
  bool zero = got.size == 2 * 4 * 3;
  for (int64_t i = 0; zero && i < got.size; i++) zero = got.re[i] == 0;
  CHECK(zero);
  h_free(&got);
  cmx_array_release(r);
  cmx_array_release(e);
  cmx_array_release(k);
}

/* ---------------- errors ---------------- */
static void test_errors(void) {
  int64_t xs[4] = {1, 6, 6, 4}, ws[4] = {2, 3, 3, 4};
  cmx_array x = filled(xs, 4, CMX_FLOAT32, 1),
            w = filled(ws, 4, CMX_FLOAT32, 1);
  cmx_array xi = filled(xs, 4, CMX_INT32, 1);
  cmx_array r = NULL;
  const cmx_status V = CMX_ERR_VALUE;
  FAILS(cmx_conv2d(&r, xi, w, 1, 1, 0, 0, 1, 1, 1, S), V, /* MLX's type */
        "[conv] Invalid input array with type int32");
  CHECK(r == NULL);
  FAILS(cmx_conv1d(&r, x, w, 1, 0, 1, 1, S), V,
        "[conv] Invalid input array with 4 dimensions for 1D convolution. "
        "Expected an array with 3 dimensions");
  int64_t w3s[3] = {2, 3, 4};
  cmx_array w3 = filled(w3s, 3, CMX_FLOAT32, 1);
  FAILS(cmx_conv2d(&r, x, w3, 1, 1, 0, 0, 1, 1, 1, S), V,
        "[conv] Invalid weight array with 3 dimensions for 2D convolution");
  int64_t wbs[4] = {2, 3, 3, 3};
  cmx_array wb = filled(wbs, 4, CMX_FLOAT32, 1);
  FAILS(cmx_conv2d(&r, x, wb, 1, 1, 0, 0, 1, 1, 1, S), V,
        "[conv] Expect the input channels in the input and weight array to "
        "match but got shapes - input: (1,6,6,4) and weight: (2,3,3,3)");
  FAILS(cmx_conv2d(&r, x, w, 1, 1, 0, 0, 1, 1, 3, S), V,
        "[conv] The input channels must be divisible by the number of "
        "groups. Got input with shape (1,6,6,4) and 3 groups.");
  int64_t wgs[4] = {3, 3, 3, 2};
  cmx_array wg = filled(wgs, 4, CMX_FLOAT32, 1);
  FAILS(cmx_conv2d(&r, x, wg, 1, 1, 0, 0, 1, 1, 2, S), V,
        "[conv] If groups > 1, the output channels must be divisible by the "
        "number of groups. Got 3 output channels and 2 groups.");
  FAILS(cmx_conv2d(&r, x, w, 1, 1, 0, 0, 1, 1, 2, S), V,
        "Given groups=2 and weights of shape (2,3,3,4), expected to have 8 "
        "input channels but got 4 input channels instead.");
  FAILS(cmx_conv2d(&r, x, w, 1, 1, 0, 0, 1, 1, 0, S), V,
        "[conv] The number of groups must be positive");
  int64_t wls[4] = {2, 7, 3, 4};
  cmx_array wl = filled(wls, 4, CMX_FLOAT32, 1);
  FAILS(cmx_conv2d(&r, x, wl, 1, 1, 0, 0, 1, 1, 1, S), V,
        "[conv] Spatial dimensions of input after padding cannot be smaller "
        "than weight spatial dimensions. Got error at axis 1 for input with "
        "shape (1,6,6,4), padding low (0,0), padding high (0,0), and weight "
        "of shape (2,7,3,4).");
  /* Padding makes it fit; dilation makes it too big again. */
  OK(cmx_conv2d(&r, x, wl, 1, 1, 1, 0, 1, 1, 1, S));
  cmx_array_release(r);
  r = NULL;
  FAILS(cmx_conv2d(&r, x, w, 1, 1, 0, 0, 1, 3, 1, S), V, "Got error at axis 2");
  FAILS(cmx_conv2d(&r, x, w, 0, 1, 0, 0, 1, 1, 1, S), V,
        "[conv] Stride sizes must be positive. Got strides (0,1).");
  FAILS(cmx_conv2d(&r, x, w, 1, 1, 0, 0, 1, -1, 1, S), V,
        "[conv] Kernel dilation sizes must be positive. Got kernel dilation "
        "(1,-1).");
  int st3[3] = {1, 1, 1}, id0[2] = {1, 0};
  FAILS(cmx_conv_general(&r, x, w, st3, 3, NULL, 0, NULL, 0, NULL, 0, NULL, 0,
                         1, false, S),
        V, "[conv] Invalid strides (1,1,1) for 2D convolution.");
  FAILS(cmx_conv_general(&r, x, w, NULL, 0, st3, 3, NULL, 0, NULL, 0, NULL, 0,
                         1, false, S),
        V, "[conv] Invalid padding (1,1,1) for 2D convolution.");
  FAILS(cmx_conv_general(&r, x, w, NULL, 0, NULL, 0, NULL, 0, NULL, 0, id0, 2,
                         1, false, S),
        V,
        "[conv] Input dilation sizes must be positive. Got input dilation "
        "(1,0).");
  int neg[2] = {-3, 0};
  FAILS(cmx_conv_general(&r, x, w, NULL, 0, neg, 2, neg, 2, NULL, 0, NULL, 0, 1,
                         false, S),
        V, "Got error at axis 1");
  int64_t x5s[6] = {1, 2, 2, 2, 2, 1}, w5s[6] = {1, 1, 1, 1, 1, 1};
  cmx_array x5 = filled(x5s, 6, CMX_FLOAT32, 1);
  cmx_array w5 = filled(w5s, 6, CMX_FLOAT32, 1);
  FAILS(cmx_conv_general(&r, x5, w5, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL,
                         0, 1, false, S),
        V, "[conv] Only works for inputs with 1-3 spatial dimensions.");
  FAILS(cmx_conv_transpose2d(&r, x, w, 0, 1, 0, 0, 1, 1, 0, 0, 1, S), V,
        "[conv] Stride sizes must be positive. Got strides (0,1).");
  FAILS(cmx_conv_transpose2d(&r, x, wb, 1, 1, 0, 0, 1, 1, 0, 0, 1, S), V,
        "[conv] Expect the input channels");
  FAILS(cmx_conv2d(&r, NULL, w, 1, 1, 0, 0, 1, 1, 1, S), V, "null array");
  FAILS(cmx_conv2d(NULL, x, w, 1, 1, 0, 0, 1, 1, 1, S), V,
        "[conv2d] output pointer is NULL");

  /* convolve */
  int64_t n4 = 4, n0 = 0, m22[2] = {2, 2};
  cmx_array v4 = filled(&n4, 1, CMX_FLOAT32, 1),
            v0 = filled(&n0, 1, CMX_FLOAT32, 1);
  cmx_array m2 = filled(m22, 2, CMX_FLOAT32, 1);
  cmx_array i4 = filled(&n4, 1, CMX_INT32, 1);
  FAILS(cmx_convolve(&r, v4, m2, CMX_CONVOLVE_FULL, S), V,
        "[convolve] Inputs must be 1D.");
  FAILS(cmx_convolve(&r, v0, v4, CMX_CONVOLVE_FULL, S), V,
        "[convolve] Inputs cannot be empty.");
  FAILS(cmx_convolve(&r, v4, v4, (cmx_convolve_mode)7, S), V,
        "[convolve] Invalid mode.");
  FAILS(cmx_convolve(&r, i4, i4, CMX_CONVOLVE_FULL, S), V,
        "[conv] Invalid input array with type int32");
  CHECK(r == NULL);

  cmx_array all[] = {x, w, xi, w3, wb, wg, wl, x5, w5, v4, v0, m2, i4};
  cmx_array_release_all(all, sizeof all / sizeof all[0]);
}

int main(void) {
  RUN(test_conv_cases);
  RUN(test_param_broadcast);
  RUN(test_large);
  RUN(test_transpose_cases);
  RUN(test_convolve);
  RUN(test_dtypes);
  RUN(test_errors);
  return test_summary("test_conv");
}
