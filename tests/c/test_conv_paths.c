/* The CPU convolution's product forms at and across their thresholds
 * (src/backend/cpu/conv*.c): gather tiles (several row tiles, K-blocks
 * aligned and not aligned with the kernel's rows, a K-block split inside
 * one kernel row, K mode with partial products, pointwise tiles, the
 * strided-gather unfolding with K-blocks), the weight-gradient orientation
 * (the vjp's swapped views, in place and packed, one batch row or several,
 * many chunks), and the scatter form (input gradients, transposed
 * convolutions, several tiles per image). Every floating dtype where the
 * form handles it, 1-d to 3-d.
 *
 * The reference is a double-precision loop written from the definition of
 * conv_general. Results must also be identical when evaluated twice (the
 * partial products are added in a fixed order), and the OpenBLAS thread
 * count, which the kernel lowers while its tiles run, must come back.
 * The pool has 3 threads here (CMX_NUM_THREADS), so splits are uneven. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

#if defined(__GNUC__)
extern int openblas_get_num_threads(void) __attribute__((weak));
#endif

typedef struct {
  int nsp;
  int s[3], lo[3], hi[3], kd[3], id[3];
  int groups;
  bool flip;
} cparams;

/* Output length per dim, as conv_general defines it. */
static int64_t out_len(int64_t L, int64_t K, const cparams* p, int d) {
  int64_t lv = (L - 1) * p->id[d] + 1 + p->lo[d] + p->hi[d];
  return (lv - ((K - 1) * p->kd[d] + 1)) / p->s[d] + 1;
}

/* Reference: x (N, L..., C), w (O, K..., C/groups) logical values; fills
 * sumabs (sum of |terms| per output). */
static h_tensor ref_conv(const h_tensor* x, const h_tensor* w, const cparams* p,
                         cmx_dtype odt, double** sumabs) {
  const int nsp = p->nsp;
  int64_t N = x->shape[0], C = x->shape[nsp + 1], O = w->shape[0];
  int64_t Cg = C / p->groups, Og = O / p->groups;
  int64_t L[3] = {1, 1, 1}, K[3] = {1, 1, 1}, M[3] = {1, 1, 1};
  cparams q = *p;
  for (int d = nsp; d < 3; d++) q.s[d] = q.kd[d] = q.id[d] = 1;
  for (int d = 0; d < nsp; d++) {
    L[d] = x->shape[d + 1];
    K[d] = w->shape[d + 1];
    M[d] = out_len(L[d], K[d], p, d);
  }
  int64_t osh[5] = {N, 0, 0, 0, 0};
  for (int d = 0; d < nsp; d++) osh[d + 1] = M[d];
  osh[nsp + 1] = O;
  h_tensor out = h_alloc(osh, nsp + 2, odt);
  *sumabs = calloc((size_t)out.size, sizeof(double));
  int64_t oi = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t m0 = 0; m0 < M[0]; m0++)
      for (int64_t m1 = 0; m1 < M[1]; m1++)
        for (int64_t m2 = 0; m2 < M[2]; m2++)
          for (int64_t o = 0; o < O; o++, oi++) {
            int64_t g = o / Og, m[3] = {m0, m1, m2};
            double acc = 0, sa = 0;
            for (int64_t k0 = 0; k0 < K[0]; k0++)
              for (int64_t k1 = 0; k1 < K[1]; k1++)
                for (int64_t k2 = 0; k2 < K[2]; k2++) {
                  int64_t k[3] = {k0, k1, k2}, i[3] = {0, 0, 0};
                  bool in = true;
                  for (int d = 0; d < nsp && in; d++) {
                    int64_t v = m[d] * q.s[d] + k[d] * q.kd[d] - q.lo[d];
                    in = v >= 0 && v % q.id[d] == 0 && v / q.id[d] < L[d];
                    i[d] = in ? v / q.id[d] : 0;
                  }
                  if (!in) continue;
                  int64_t kk[3] = {k0, k1, k2};
                  if (p->flip)
                    for (int d = 0; d < nsp; d++) kk[d] = K[d] - 1 - k[d];
                  int64_t xr = ((n * L[0] + i[0]) * L[1] + i[1]) * L[2] + i[2];
                  int64_t wr =
                      ((o * K[0] + kk[0]) * K[1] + kk[1]) * K[2] + kk[2];
                  for (int64_t c = 0; c < Cg; c++) {
                    double t = x->re[xr * C + g * Cg + c] * w->re[wr * Cg + c];
                    acc += t;
                    sa += fabs(t);
                  }
                }
            out.re[oi] = acc;
            (*sumabs)[oi] = sa;
          }
  return out;
}

/* The logical tensor of swapaxes(t, 0, -1). */
static h_tensor swap_first_last(const h_tensor* t) {
  int64_t sh[5];
  const int nd = t->ndim;
  for (int d = 0; d < nd; d++) sh[d] = t->shape[d];
  sh[0] = t->shape[nd - 1];
  sh[nd - 1] = t->shape[0];
  h_tensor r = h_alloc(sh, nd, t->dtype);
  int64_t A = t->shape[0], B = t->shape[nd - 1], mid = t->size / A / B;
  for (int64_t a = 0; a < A; a++)
    for (int64_t i = 0; i < mid; i++)
      for (int64_t b = 0; b < B; b++)
        r.re[(b * mid + i) * A + a] = t->re[(a * mid + i) * B + b];
  return r;
}

/* Evaluates conv_general(xa, wa, p) twice and checks it against the
 * reference of the logical x, w (same bound as test_conv: rounding to the
 * dtype plus accumulation error scaled by the sum of |terms|), the two
 * results bit for bit, and the OpenBLAS thread count before and after. */
static void check(const char* what, const h_tensor* x, cmx_array xa,
                  const h_tensor* w, cmx_array wa, const cparams* p) {
  int blas0 = 0;
#if defined(__GNUC__)
  if (openblas_get_num_threads) blas0 = openblas_get_num_threads();
#endif
  cmx_dtype dt = x->dtype;
  double* sa;
  h_tensor want = ref_conv(x, w, p, dt, &sa);
  int n = p->nsp;
  cmx_array r1 = NULL, r2 = NULL;
  OK(cmx_conv_general(&r1, xa, wa, p->s, n, p->lo, n, p->hi, n, p->kd, n, p->id,
                      n, p->groups, p->flip, S));
  OK(cmx_conv_general(&r2, xa, wa, p->s, n, p->lo, n, p->hi, n, p->kd, n, p->id,
                      n, p->groups, p->flip, S));
  h_tensor got = r1 ? h_read(r1) : (h_tensor){0};
  h_tensor again = r2 ? h_read(r2) : (h_tensor){0};
  CHECK_MSG(r1 && r2 && got.size == want.size && again.size == want.size,
            "%s: evaluation failed or wrong size: %s", what, cmx_last_error());
  if (got.size == want.size && again.size == want.size) {
    for (int d = 0; d < want.ndim; d++)
      CHECK_MSG(got.shape[d] == want.shape[d], "%s: dim %d is %lld, want %lld",
                what, d, (long long)got.shape[d], (long long)want.shape[d]);
    double rel = dt == CMX_FLOAT16    ? 1.0 / 2048
                 : dt == CMX_BFLOAT16 ? 1.0 / 256
                                      : 0;
    double eps = dt == CMX_FLOAT64 ? 2.3e-16 : 1.2e-7;
    int64_t nterms = w->size / w->shape[0];
    double grow = 4.0 + 2.0 * sqrt((double)nterms);
    int64_t bad = -1, diff = -1;
    for (int64_t i = 0; i < want.size; i++) {
      double bound = rel * fabs(want.re[i]) + eps * grow * sa[i] + 1e-300;
      if (bad < 0 && !(fabs(got.re[i] - want.re[i]) <= bound)) bad = i;
      if (diff < 0 && memcmp(&got.re[i], &again.re[i], sizeof(double)) != 0)
        diff = i;
    }
    CHECK_MSG(bad < 0, "%s: element %lld: got %.9g, want %.9g", what,
              (long long)bad, bad < 0 ? 0 : got.re[bad],
              bad < 0 ? 0 : want.re[bad]);
    CHECK_MSG(diff < 0, "%s: element %lld differs between two evaluations",
              what, (long long)diff);
  }
#if defined(__GNUC__)
  if (openblas_get_num_threads)
    CHECK_MSG(openblas_get_num_threads() == blas0,
              "%s: OpenBLAS threads %d after, %d before", what,
              openblas_get_num_threads(), blas0);
#endif
  h_free(&got);
  h_free(&again);
  h_free(&want);
  free(sa);
  cmx_array_release(r1);
  cmx_array_release(r2);
}

/* A parameter set: every dim gets the same values unless set later. */
static cparams params(int nsp, int s, int lo, int hi, int kd, int id,
                      int groups, bool flip) {
  cparams p;
  memset(&p, 0, sizeof p);
  p.nsp = nsp;
  p.groups = groups;
  p.flip = flip;
  for (int d = 0; d < 3; d++) {
    p.s[d] = s;
    p.lo[d] = lo;
    p.hi[d] = hi;
    p.kd[d] = kd;
    p.id[d] = id;
  }
  return p;
}

/* Checks a forward-layout case (contiguous x and w) in dtype dt. */
static void check_plain(const char* name, int nsp, const int64_t* xs,
                        const int64_t* ws, const cparams* p, cmx_dtype dt,
                        uint64_t seed) {
  h_tensor x = h_random(xs, nsp + 2, dt, -1, 1, seed);
  h_tensor w = h_random(ws, nsp + 2, dt, -1, 1, seed + 1);
  cmx_array xa = h_array(&x, H_CONTIG), wa = h_array(&w, H_CONTIG);
  char what[160];
  snprintf(what, sizeof what, "%s %s", name, cmx_dtype_name(dt));
  check(what, &x, xa, &w, wa, p);
  cmx_array_release(xa);
  cmx_array_release(wa);
  h_free(&x);
  h_free(&w);
}

static const cmx_dtype k_floats[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                     CMX_BFLOAT16};

/* ---------------- gather tiles ---------------- */
static void test_gather_tiles(void) {
  /* several row tiles of full rows (C_in = 1: the span copy of 5) */
  {
    int64_t xs[4] = {6, 30, 29, 1}, ws[4] = {9, 5, 5, 1};
    cparams p = params(2, 1, 2, 1, 1, 1, 1, false);
    check_plain("gather row tiles C=1", 2, xs, ws, &p, CMX_FLOAT32, 11);
    p.flip = true;
    check_plain("gather row tiles C=1 flip", 2, xs, ws, &p, CMX_FLOAT32, 12);
    check_plain("gather row tiles C=1 flip", 2, xs, ws, &p, CMX_FLOAT64, 13);
    /* 1-d and 3-d single-channel inputs (transposed unfolding) */
    int64_t x1[3] = {3, 50, 1}, w1[3] = {4, 7, 1};
    cparams q = params(1, 1, 3, 2, 1, 1, 1, false);
    check_plain("gather C=1 1d", 1, x1, w1, &q, CMX_FLOAT32, 14);
    int64_t x3[5] = {2, 6, 7, 9, 1}, w3[5] = {5, 3, 2, 4, 1};
    cparams r = params(3, 1, 1, 1, 1, 1, 1, true);
    r.s[0] = 2;
    r.kd[1] = 2;
    check_plain("gather C=1 3d", 3, x3, w3, &r, CMX_FLOAT32, 15);
  }
  /* K-blocks crossing kernel rows (3x7 taps in blocks of 6), padding */
  for (int di = 0; di < 4; di++) {
    int64_t xs[4] = {3, 9, 11, 128}, ws[4] = {10, 3, 7, 128};
    cparams p = params(2, 1, 1, 1, 1, 1, 1, false);
    p.lo[1] = p.hi[1] = 3;
    check_plain("gather K-blocks", 2, xs, ws, &p, k_floats[di], 21);
  }
  /* K mode: one row tile, partial products over K-block ranges */
  for (int di = 0; di < 4; di++) {
    int64_t xs[4] = {1, 6, 12, 256}, ws[4] = {32, 3, 9, 256};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, di == 1);
    check_plain("gather K mode", 2, xs, ws, &p, k_floats[di], 31);
  }
  /* one kernel row (1-d) split into K-blocks of 3 taps, border rows */
  {
    int64_t xs[3] = {2, 40, 256}, ws[3] = {5, 33, 256};
    cparams p = params(1, 1, 16, 16, 1, 1, 1, false);
    check_plain("gather K-blocks in one kernel row", 1, xs, ws, &p, CMX_FLOAT32,
                41);
    p.s[0] = 3;
    check_plain("gather K-blocks in one kernel row stride 3", 1, xs, ws, &p,
                CMX_FLOAT64, 42);
  }
  /* the strided gather (groups, dilations) with K-blocks */
  {
    int64_t xs[4] = {2, 7, 9, 256}, ws[4] = {6, 3, 5, 128};
    cparams p = params(2, 1, 2, 1, 2, 2, 2, false);
    check_plain("gather taps groups dilations K-blocks", 2, xs, ws, &p,
                CMX_FLOAT32, 51);
    p.flip = true;
    check_plain("gather taps groups dilations K-blocks flip", 2, xs, ws, &p,
                CMX_BFLOAT16, 52);
  }
  /* 3-d with K-blocks */
  {
    int64_t xs[5] = {2, 4, 5, 6, 160}, ws[5] = {8, 2, 3, 3, 160};
    cparams p = params(3, 1, 1, 0, 1, 1, 1, false);
    check_plain("gather 3d K-blocks", 3, xs, ws, &p, CMX_FLOAT32, 61);
  }
  /* no padding: rows read in place where cmx's AVX-512 product runs
   * (conv_gemm.c's direct form), across lines and tiles, with strides
   * (last dim too), outer-dim dilation, 1-d to 3-d, 16-bit inputs packed
   * first; LeNet's second layer */
  {
    int64_t xs[4] = {5, 14, 13, 32}, ws[4] = {16, 3, 4, 32};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, false);
    p.s[0] = 2;
    p.kd[0] = 2;
    check_plain("gather in place strided dilated", 2, xs, ws, &p, CMX_FLOAT32,
                81);
    p.s[1] = 3;
    check_plain("gather in place last-dim stride", 2, xs, ws, &p, CMX_BFLOAT16,
                82);
    int64_t x1[3] = {4, 40, 48}, w1[3] = {20, 9, 48};
    cparams q = params(1, 2, 0, 0, 1, 1, 1, true);
    check_plain("gather in place 1d flip", 1, x1, w1, &q, CMX_FLOAT32, 83);
    int64_t x3[5] = {2, 5, 6, 7, 24}, w3[5] = {8, 2, 3, 3, 24};
    cparams r = params(3, 1, 0, 0, 1, 1, 1, false);
    check_plain("gather in place 3d", 3, x3, w3, &r, CMX_FLOAT32, 84);
    check_plain("gather in place 3d", 3, x3, w3, &r, CMX_FLOAT16, 85);
    int64_t xl[4] = {3, 12, 12, 32}, wl[4] = {64, 5, 5, 32};
    cparams l = params(2, 1, 0, 0, 1, 1, 1, false);
    check_plain("gather in place LeNet conv2", 2, xl, wl, &l, CMX_FLOAT32, 86);
  }
  /* pointwise tiles (no unfolding), and 16-bit pointwise (packed input) */
  for (int di = 0; di < 4; di++) {
    int64_t xs[4] = {3, 20, 21, 16}, ws[4] = {24, 1, 1, 16};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, false);
    check_plain("gather pointwise tiles", 2, xs, ws, &p, k_floats[di], 71);
  }
}

/* ---------------- the weight-gradient orientation ---------------- */

/* conv_general(swapaxes(x0), wv, p) where x0 is (N0, L..., C0) contiguous
 * and the weight is swapaxes(dy) of a contiguous dy (N0, K..., O) when
 * w_swapped, else a contiguous (O, K..., N0) array. */
static void check_wgrad(const char* name, int nsp, const int64_t* x0s,
                        const int64_t* dys, bool w_swapped, const cparams* p,
                        cmx_dtype dt, uint64_t seed) {
  h_tensor x0 = h_random(x0s, nsp + 2, dt, -1, 1, seed);
  h_tensor dy = h_random(dys, nsp + 2, dt, -1, 1, seed + 1);
  h_tensor x = swap_first_last(&x0), w = swap_first_last(&dy);
  cmx_array x0a = h_array(&x0, H_CONTIG), xa = NULL, wa = NULL, dya = NULL;
  OK(cmx_swapaxes(&xa, x0a, 0, nsp + 1, S));
  if (w_swapped) {
    dya = h_array(&dy, H_CONTIG);
    OK(cmx_swapaxes(&wa, dya, 0, nsp + 1, S));
  } else {
    wa = h_array(&w, H_CONTIG);
  }
  char what[160];
  snprintf(what, sizeof what, "%s %s", name, cmx_dtype_name(dt));
  if (xa && wa) check(what, &x, xa, &w, wa, p);
  cmx_array all[] = {x0a, xa, wa, dya};
  cmx_array_release_all(all, 4);
  h_free(&x0);
  h_free(&dy);
  h_free(&x);
  h_free(&w);
}

static void test_wgrad(void) {
  for (int di = 0; di < 4; di++) {
    /* LeNet-like: x0 (6, 10, 9, 5), dy (6, 8, 7, 7) -> kernel (5, 3, 3, 7) */
    int64_t x0s[4] = {6, 10, 9, 5}, dys[4] = {6, 8, 7, 7};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, false);
    check_wgrad("wgrad views", 2, x0s, dys, true, &p, k_floats[di], 101);
    check_wgrad("wgrad packed cotangent", 2, x0s, dys, false, &p, k_floats[di],
                102);
  }
  {
    /* one input channel: the product's rows are y's (no reorder) */
    int64_t x0s[4] = {16, 14, 13, 1}, dys[4] = {16, 10, 9, 8};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, false);
    check_wgrad("wgrad C=1", 2, x0s, dys, true, &p, CMX_FLOAT32, 111);
    check_wgrad("wgrad C=1", 2, x0s, dys, true, &p, CMX_FLOAT64, 112);
  }
  {
    /* forward stride 2, dilation 2, padding: the vjp's stride / kernel
     * dilation swap, asymmetric padding */
    int64_t x0s[4] = {5, 11, 12, 3}, dys[4] = {5, 4, 6, 4};
    cparams p = params(2, 2, 1, 1, 2, 1, 1, false);
    p.s[1] = 1;
    p.kd[1] = 2;
    p.hi[1] = 2;
    check_wgrad("wgrad strides dilations padding", 2, x0s, dys, true, &p,
                CMX_FLOAT32, 121);
    /* input dilation */
    cparams q = params(2, 1, 0, 0, 1, 2, 1, false);
    int64_t dy2[4] = {5, 18, 20, 4};
    check_wgrad("wgrad input dilation", 2, x0s, dy2, true, &q, CMX_FLOAT32,
                122);
  }
  {
    /* many F tiles and chunks: K = 64 * 64 rows */
    int64_t x0s[4] = {64, 12, 12, 4}, dys[4] = {64, 8, 8, 6};
    cparams p = params(2, 1, 0, 0, 1, 1, 1, false);
    check_wgrad("wgrad chunks", 2, x0s, dys, true, &p, CMX_FLOAT32, 131);
  }
  {
    int64_t x0s[3] = {7, 30, 6}, dys[3] = {7, 24, 5};
    cparams p = params(1, 1, 1, 1, 1, 1, 1, false);
    check_wgrad("wgrad 1d", 1, x0s, dys, true, &p, CMX_FLOAT32, 141);
    int64_t x3[5] = {3, 5, 6, 4, 3}, dy3[5] = {3, 4, 4, 3, 2};
    cparams q = params(3, 1, 0, 0, 1, 1, 1, false);
    check_wgrad("wgrad 3d", 3, x3, dy3, true, &q, CMX_FLOAT64, 142);
  }
}

/* ---------------- the scatter form ---------------- */

/* conv_general(dy, swapaxes(w0), p): dy (N, L..., C) contiguous, w0
 * (C', K..., O') contiguous swapped to (O', K..., C'). */
static void check_scatter(const char* name, int nsp, const int64_t* dys,
                          const int64_t* w0s, const cparams* p, cmx_dtype dt,
                          uint64_t seed) {
  h_tensor x = h_random(dys, nsp + 2, dt, -1, 1, seed);
  h_tensor w0 = h_random(w0s, nsp + 2, dt, -1, 1, seed + 1);
  h_tensor w = swap_first_last(&w0);
  cmx_array xa = h_array(&x, H_CONTIG), w0a = h_array(&w0, H_CONTIG);
  cmx_array wa = NULL;
  OK(cmx_swapaxes(&wa, w0a, 0, nsp + 1, S));
  char what[160];
  snprintf(what, sizeof what, "%s %s", name, cmx_dtype_name(dt));
  if (wa) check(what, &x, xa, &w, wa, p);
  cmx_array all[] = {xa, w0a, wa};
  cmx_array_release_all(all, 3);
  h_free(&x);
  h_free(&w0);
  h_free(&w);
}

static void test_scatter(void) {
  for (int di = 0; di < 4; di++) {
    /* an input gradient: full correlation with the flipped kernel */
    int64_t dys[4] = {4, 6, 5, 8}, w0s[4] = {8, 3, 4, 3};
    cparams p = params(2, 1, 2, 2, 1, 1, 1, true);
    p.lo[1] = p.hi[1] = 3;
    check_scatter("scatter input gradient", 2, dys, w0s, &p, k_floats[di], 201);
  }
  {
    /* several tiles per image (taps * O large), LeNet's conv2 shape */
    int64_t dys[4] = {4, 8, 8, 64}, w0s[4] = {64, 5, 5, 128};
    cparams p = params(2, 1, 4, 4, 1, 1, 1, true);
    check_scatter("scatter tiles", 2, dys, w0s, &p, CMX_FLOAT32, 211);
  }
  for (int di = 0; di < 2; di++) {
    /* one output channel (the taps added alone, the one-channel input
     * gradient of LeNet's first conv), and 16 (the wide additions) */
    int64_t dys[4] = {3, 7, 6, 6}, w0s[4] = {6, 5, 5, 1},
            w16[4] = {6, 3, 5, 16};
    cparams p = params(2, 1, 4, 4, 1, 1, 1, true);
    check_scatter("scatter one channel", 2, dys, w0s, &p, k_floats[di], 205);
    cparams q = params(2, 1, 2, 4, 1, 1, 1, true);
    check_scatter("scatter 16 channels", 2, dys, w16, &q, k_floats[di], 207);
  }
  {
    /* transposed convolutions: input dilation 2 (stride-2 transpose) */
    int64_t dys[4] = {5, 4, 5, 6}, w0s[4] = {6, 3, 3, 4};
    cparams p = params(2, 1, 2, 3, 1, 2, 1, true);
    check_scatter("scatter input dilation", 2, dys, w0s, &p, CMX_FLOAT32, 221);
    check_scatter("scatter input dilation", 2, dys, w0s, &p, CMX_FLOAT64, 222);
    /* kernel dilation, negative padding on one side (crop) */
    cparams q = params(2, 1, 3, -1, 2, 2, 1, false);
    check_scatter("scatter kernel dilation crop", 2, dys, w0s, &q, CMX_FLOAT32,
                  223);
  }
  {
    int64_t d1[3] = {6, 9, 5}, w1[3] = {5, 4, 3};
    cparams p = params(1, 1, 3, 3, 1, 2, 1, true);
    check_scatter("scatter 1d", 1, d1, w1, &p, CMX_FLOAT32, 231);
    int64_t d3[5] = {3, 3, 4, 3, 4}, w3[5] = {4, 2, 3, 2, 5};
    cparams q = params(3, 1, 1, 2, 1, 1, 1, true);
    check_scatter("scatter 3d", 3, d3, w3, &q, CMX_FLOAT64, 232);
  }
  {
    /* the API's transposed convolution, stride 2 */
    int64_t xs[4] = {4, 5, 6, 3}, ws[4] = {5, 3, 3, 3};
    h_tensor x = h_random(xs, 4, CMX_FLOAT32, -1, 1, 241);
    h_tensor w = h_random(ws, 4, CMX_FLOAT32, -1, 1, 242);
    cmx_array xa = h_array(&x, H_CONTIG), wa = h_array(&w, H_CONTIG);
    cmx_array r = NULL;
    OK(cmx_conv_transpose2d(&r, xa, wa, 2, 2, 1, 1, 1, 1, 1, 0, 1, S));
    /* the same as conv_general with input dilation 2, padding K - 1 - p
     * (+ output padding on the high side) and the flipped kernel */
    cparams p = params(2, 1, 1, 2, 1, 2, 1, true);
    p.hi[1] = 1;
    double* sa;
    h_tensor want = ref_conv(&x, &w, &p, CMX_FLOAT32, &sa);
    h_tensor got = r ? h_read(r) : (h_tensor){0};
    CHECK(got.size == want.size);
    for (int64_t i = 0; i < want.size && got.size == want.size; i++)
      if (!(fabs(got.re[i] - want.re[i]) <= 1e-5 * (1 + sa[i]))) {
        CHECK_MSG(0, "conv_transpose2d element %lld: got %g want %g",
                  (long long)i, got.re[i], want.re[i]);
        break;
      }
    free(sa);
    h_free(&got);
    h_free(&want);
    h_free(&x);
    h_free(&w);
    cmx_array_release(r);
    cmx_array_release(xa);
    cmx_array_release(wa);
  }
}

int main(void) {
  setenv("CMX_NUM_THREADS", "3", 1);
  /* The CPU's product forms (and their fixed order, two evaluations bit
   * for bit): on the CPU whatever the default device. The GPU's
   * convolution is test_gpu_conv's; its cuDNN weight gradient may pick a
   * nondeterministic algorithm, as torch (cudnn.deterministic off) and
   * MLX's CUDA backend do. */
  OK(cmx_set_default_device(cmx_device_cpu()));
  RUN(test_gather_tiles);
  RUN(test_wgrad);
  RUN(test_scatter);
  return test_summary("test_conv_paths");
}
