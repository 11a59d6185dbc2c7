/* Tests of gather_mm, segmented_mm and block_masked_mm against plain
 * double-precision references over dtypes, shapes and layouts, and their
 * error messages. Their transform rules are checked in
 * test_rules_matmul_gather.c. */
#include "harness.h"
#include "primitives/matmul_gather.h"

#define S CMX_STREAM_DEFAULT

/* Evaluating r fails with a message containing needle (kernel errors
 * reach eval as its failure). */
#define EVAL_FAILS(r, needle)                                       \
  do {                                                              \
    cmx_status st_ = cmx_array_eval(r);                             \
    CHECK_MSG(st_ != CMX_OK && strstr(cmx_last_error(), (needle)),  \
              "eval -> %s: '%s' (want '%s')", cmx_status_name(st_), \
              cmx_last_error(), (needle));                          \
  } while (0)

static const cmx_dtype FLOATS[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16,
                                   CMX_BFLOAT16};

/* ---------------- gather_mm ---------------- */
/* Reference out[i] = a[li[i]] @ b[ri[i]] over broadcast index shape. */
static h_tensor ref_gather_mm(const h_tensor* x, const h_tensor* y,
                              const int64_t* lv, const int64_t* rv,
                              const int64_t* ishape, int ind, cmx_dtype odt) {
  int64_t M = x->shape[x->ndim - 2], K = x->shape[x->ndim - 1],
          N = y->shape[y->ndim - 1];
  int64_t os[CMX_MAX_NDIM], ni = 1;
  for (int d = 0; d < ind; d++) os[d] = ishape[d], ni *= ishape[d];
  os[ind] = M, os[ind + 1] = N;
  h_tensor w = h_alloc(os, ind + 2, odt);
  for (int64_t i = 0; i < ni; i++)
    for (int64_t r = 0; r < M; r++)
      for (int64_t c = 0; c < N; c++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc +=
              x->re[(lv[i] * M + r) * K + k] * y->re[(rv[i] * K + k) * N + c];
        w.re[(i * M + r) * N + c] = acc;
      }
  return w;
}

static cmx_array index_array(const int64_t* v, const int64_t* shape, int nd,
                             cmx_dtype dt) {
  h_tensor t = h_alloc(shape, nd, dt);
  for (int64_t i = 0; i < t.size; i++) t.re[i] = (double)v[i];
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

static void test_gather_mm(void) {
  int64_t sa[3] = {3, 4, 5}, sb[3] = {2, 5, 6};
  int64_t li[6] = {2, 0, 1, 1, 0, 2}, ri[6] = {1, 1, 0, 1, 0, 0};
  int64_t is[2] = {2, 3};
  for (int d = 0; d < 4; d++) {
    cmx_dtype dt = FLOATS[d];
    h_tensor x = h_random(sa, 3, dt, -1, 1, 80 + d),
             y = h_random(sb, 3, dt, -1, 1, 90 + d);
    h_tensor want = ref_gather_mm(&x, &y, li, ri, is, 2, dt);
    double tol = dt == CMX_FLOAT64 ? 1e-12 : 8 * h_tol(dt);
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array a = h_array(&x, (h_layout)l), b = h_array(&y, (h_layout)l);
      cmx_array L = index_array(li, is, 2, CMX_INT32),
                R = index_array(ri, is, 2, CMX_UINT8), r = NULL;
      OK(cmx_gather_mm(&r, a, b, L, R, l == 1, S));
      h_tensor wc = h_alloc(want.shape, want.ndim, dt);
      memcpy(wc.re, want.re, (size_t)want.size * sizeof(double));
      char what[96];
      snprintf(what, sizeof what, "gather_mm %s %s", cmx_dtype_name(dt),
               h_layout_names[l]);
      h_expect(r, &wc, tol, what);
      h_free(&wc);
      cmx_array_release(a), cmx_array_release(b), cmx_array_release(L),
          cmx_array_release(R);
    }
    h_free(&x), h_free(&y), h_free(&want);
  }
  /* Broadcast indices (3, 1) and (1, 2); rhs only (lhs default arange over
   * a's batch); 1-d operands. */
  h_tensor x = h_random(sa, 3, CMX_FLOAT32, -1, 1, 100),
           y = h_random(sb, 3, CMX_FLOAT32, -1, 1, 101);
  int64_t l31[3] = {0, 2, 1}, r12[2] = {1, 0}, s31[2] = {3, 1}, s12[2] = {1, 2};
  int64_t lb[6], rb[6], i32[2] = {3, 2};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 2; j++) lb[i * 2 + j] = l31[i], rb[i * 2 + j] = r12[j];
  h_tensor want = ref_gather_mm(&x, &y, lb, rb, i32, 2, CMX_FLOAT32);
  cmx_array a = h_array(&x, H_CONTIG), b = h_array(&y, H_CONTIG), r = NULL;
  cmx_array L = index_array(l31, s31, 2, CMX_INT64),
            R = index_array(r12, s12, 2, CMX_INT32);
  OK(cmx_gather_mm(&r, a, b, L, R, false, S));
  h_expect(r, &want, 1e-5, "gather_mm broadcast indices");
  h_free(&want);
  int64_t r3[3] = {1, 0, 1}, s3[1] = {3}, l3[3] = {0, 1, 2};
  want = ref_gather_mm(&x, &y, l3, r3, s3, 1, CMX_FLOAT32);
  cmx_array R3 = index_array(r3, s3, 1, CMX_UINT32);
  OK(cmx_gather_mm(&r, a, b, NULL, R3, true, S));
  h_expect(r, &want, 1e-5, "gather_mm default lhs indices");
  h_free(&want);
  /* a 1-d: (K,) @ b[ri] -> (I, N). */
  int64_t s5[1] = {5};
  h_tensor v = h_random(s5, 1, CMX_FLOAT32, -1, 1, 102);
  cmx_array va = h_array(&v, H_STRIDED);
  OK(cmx_gather_mm(&r, va, b, NULL, R3, false, S));
  int64_t os[2] = {3, 6};
  want = h_alloc(os, 2, CMX_FLOAT32);
  for (int i = 0; i < 3; i++)
    for (int c = 0; c < 6; c++) {
      double acc = 0;
      for (int k = 0; k < 5; k++)
        acc += v.re[k] * y.re[(r3[i] * 5 + k) * 6 + c];
      want.re[i * 6 + c] = acc;
    }
  h_expect(r, &want, 1e-5, "gather_mm 1-d a");
  h_free(&want);
  /* b 1-d: a[li] @ (K,) -> (I, M). */
  OK(cmx_gather_mm(&r, a, va, L, NULL, false, S));
  int64_t os2[3] = {3, 1, 4};
  want = h_alloc(os2, 3, CMX_FLOAT32);
  for (int i = 0; i < 3; i++)
    for (int m = 0; m < 4; m++) {
      double acc = 0;
      for (int k = 0; k < 5; k++)
        acc += x.re[(l31[i] * 4 + m) * 5 + k] * v.re[k];
      want.re[i * 4 + m] = acc;
    }
  h_expect(r, &want, 1e-5, "gather_mm 1-d b");
  h_free(&want);
  /* No indices: matmul. */
  int64_t sa2[2] = {4, 5};
  h_tensor x2 = h_random(sa2, 2, CMX_FLOAT32, -1, 1, 103);
  cmx_array a2 = h_array(&x2, H_CONTIG);
  OK(cmx_gather_mm(&r, a2, b, NULL, NULL, false, S));
  CHECK(r && cmx_array_ndim(r) == 3 && cmx_array_shape(r)[0] == 2);
  cmx_array_release(r);
  /* Errors. */
  cmx_array ai = NULL, bi = NULL, fi = NULL;
  OK(cmx_astype(&ai, a, CMX_INT32, S));
  OK(cmx_astype(&bi, b, CMX_INT32, S));
  FAILS(cmx_gather_mm(&r, ai, bi, L, NULL, false, S), CMX_ERR_VALUE,
        "[gather_mm] Only real floating point types are supported but int32 "
        "and int32");
  OK(cmx_astype(&fi, L, CMX_FLOAT32, S));
  FAILS(cmx_gather_mm(&r, a, b, fi, NULL, false, S), CMX_ERR_VALUE,
        "[gather_mm] Got lhs_indices with invalid dtype. Indices must be "
        "integral.");
  FAILS(cmx_gather_mm(&r, a, b, NULL, fi, false, S), CMX_ERR_VALUE,
        "[gather_mm] Got rhs_indices with invalid dtype");
  FAILS(cmx_gather_mm(&r, a, a, L, NULL, false, S), CMX_ERR_VALUE,
        "[gather_mm] Last dimension of first input with shape (3,4,5) must "
        "match second to last dimension of second input with shape (3,4,5).");
  cmx_array sc = NULL;
  OK(cmx_array_from_double(&sc, 1, CMX_FLOAT32));
  FAILS(cmx_gather_mm(&r, sc, b, L, NULL, false, S), CMX_ERR_VALUE,
        "[gather_mm] Got 0 dimension input");
  int64_t oob[3] = {0, 3, 1};
  cmx_array O = index_array(oob, s3, 1, CMX_INT32);
  /* The default rhs indices (arange(2)) do not broadcast with (3,). */
  FAILS(cmx_gather_mm(&r, a, b, O, NULL, false, S), CMX_ERR_VALUE,
        "[gather_mm] shapes (3) and (2) cannot be broadcast");
  OK(cmx_gather_mm(&r, a, b, O, R3, false, S));
  EVAL_FAILS(r,
             "[gather_mm] lhs index 3 is out of bounds for a batch of 3 "
             "matrices.");
  cmx_array_release(r);
  int64_t neg[3] = {0, -1, 1};
  cmx_array Ng = index_array(neg, s3, 1, CMX_INT32);
  OK(cmx_gather_mm(&r, a, b, NULL, Ng, false, S));
  EVAL_FAILS(r, "[gather_mm] rhs index 4294967295 is out of bounds");
  cmx_array_release(r);
  cmx_array_release(O), cmx_array_release(Ng), cmx_array_release(sc);
  cmx_array_release(ai), cmx_array_release(bi), cmx_array_release(fi);
  cmx_array_release(a2);
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(L),
      cmx_array_release(R), cmx_array_release(R3), cmx_array_release(va);
  h_free(&x), h_free(&y), h_free(&v), h_free(&x2);
}

/* ---------------- segmented_mm ---------------- */
static void test_segmented_mm(void) {
  int64_t sa[2] = {4, 10}, sb[2] = {10, 3};
  int64_t segs[10] = {0, 3, 3, 10, 2, 2, 5, 4, 0, 10};
  int64_t ss[2] = {5, 2};
  for (int d = 0; d < 4; d++) {
    cmx_dtype dt = FLOATS[d];
    h_tensor x = h_random(sa, 2, dt, -1, 1, 110 + d),
             y = h_random(sb, 2, dt, -1, 1, 120 + d);
    int64_t os[3] = {5, 4, 3};
    h_tensor want = h_alloc(os, 3, dt);
    for (int s = 0; s < 5; s++)
      for (int m = 0; m < 4; m++)
        for (int n = 0; n < 3; n++) {
          double acc = 0;
          for (int64_t k = segs[2 * s]; k < segs[2 * s + 1]; k++)
            acc += x.re[m * 10 + k] * y.re[k * 3 + n];
          want.re[(s * 4 + m) * 3 + n] = acc;
        }
    double tol = dt == CMX_FLOAT64 ? 1e-12 : 8 * h_tol(dt);
    for (int l = 0; l < H_NUM_LAYOUTS; l++) {
      cmx_array a = h_array(&x, (h_layout)l), b = h_array(&y, (h_layout)l),
                sg = index_array(segs, ss, 2, l ? CMX_INT64 : CMX_UINT32),
                r = NULL;
      OK(cmx_segmented_mm(&r, a, b, sg, S));
      h_tensor wc = h_alloc(os, 3, dt);
      memcpy(wc.re, want.re, (size_t)want.size * sizeof(double));
      char what[96];
      snprintf(what, sizeof what, "segmented_mm %s %s", cmx_dtype_name(dt),
               h_layout_names[l]);
      h_expect(r, &wc, tol, what);
      h_free(&wc);
      cmx_array_release(a), cmx_array_release(b), cmx_array_release(sg);
    }
    /* One segment of shape (2,), and a (2, 1, 2) batch of them. */
    cmx_array a = h_array(&x, H_CONTIG), b = h_array(&y, H_CONTIG), r = NULL;
    int64_t one[2] = {3, 10}, s1[1] = {2}, s212[3] = {2, 1, 2};
    cmx_array sg = index_array(one, s1, 1, CMX_INT32);
    OK(cmx_segmented_mm(&r, a, b, sg, S));
    int64_t o2[2] = {4, 3};
    h_tensor w2 = h_alloc(o2, 2, dt);
    memcpy(w2.re, want.re + 12, 12 * sizeof(double));
    h_expect(r, &w2, tol, "segmented_mm single segment");
    h_free(&w2);
    cmx_array_release(sg);
    sg = index_array(segs, s212, 3, CMX_INT32);
    OK(cmx_segmented_mm(&r, a, b, sg, S));
    CHECK(r && cmx_array_ndim(r) == 4 && cmx_array_shape(r)[0] == 2 &&
          cmx_array_shape(r)[1] == 1);
    int64_t o4[4] = {2, 1, 4, 3};
    h_tensor w4 = h_alloc(o4, 4, dt);
    memcpy(w4.re, want.re, 24 * sizeof(double));
    h_expect(r, &w4, tol, "segmented_mm batched segments");
    h_free(&w4);
    cmx_array_release(sg), cmx_array_release(a), cmx_array_release(b);
    h_free(&x), h_free(&y), h_free(&want);
  }
  /* Errors. */
  cmx_array a = NULL, b = NULL, a3 = NULL, ai = NULL, sg = NULL, r = NULL,
            bad = NULL, fs = NULL;
  OK(cmx_ones(&a, sa, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&b, sb, 2, CMX_FLOAT32, S));
  int64_t s3[3] = {2, 4, 10};
  OK(cmx_ones(&a3, s3, 3, CMX_FLOAT32, S));
  OK(cmx_ones(&ai, sa, 2, CMX_INT32, S));
  sg = index_array(segs, ss, 2, CMX_INT32);
  FAILS(cmx_segmented_mm(&r, a3, b, sg, S), CMX_ERR_VALUE,
        "[segmented_mm] Batched matmul not supported");
  FAILS(cmx_segmented_mm(&r, a, a, sg, S), CMX_ERR_VALUE,
        "[segmented_mm] Last dimension of first input with shape (4,10) must "
        "match first dimension of second input with shape (4,10).");
  FAILS(cmx_segmented_mm(&r, ai, ai, sg, S), CMX_ERR_VALUE,
        "[segmented_mm] Last dimension");
  int64_t b10[2] = {10, 4};
  cmx_array bi = NULL;
  OK(cmx_ones(&bi, b10, 2, CMX_INT32, S));
  FAILS(cmx_segmented_mm(&r, ai, bi, sg, S), CMX_ERR_VALUE,
        "[segmented_mm] Only real floating point types");
  int64_t s5[1] = {5};
  OK(cmx_ones(&bad, s5, 1, CMX_INT32, S));
  FAILS(cmx_segmented_mm(&r, a, b, bad, S), CMX_ERR_VALUE,
        "[segmented_mm] The segments should have shape (..., 2) but (5) was "
        "provided.");
  OK(cmx_astype(&fs, sg, CMX_FLOAT32, S));
  FAILS(cmx_segmented_mm(&r, a, b, fs, S), CMX_ERR_VALUE,
        "[segmented_mm] Got segments with invalid dtype");
  int64_t past[2] = {3, 11}, s2[1] = {2};
  cmx_array ps = index_array(past, s2, 1, CMX_INT32);
  OK(cmx_segmented_mm(&r, a, b, ps, S));
  EVAL_FAILS(r,
             "[segmented_mm] Segment bound 11 is out of bounds for the inner "
             "dimension 10.");
  cmx_array_release(r), cmx_array_release(ps), cmx_array_release(bi);
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(a3);
  cmx_array_release(ai), cmx_array_release(sg), cmx_array_release(bad);
  cmx_array_release(fs);
}

/* ---------------- block_masked_mm ---------------- */
/* Element (r, c) of block mask mk (batch element bi of a (.., Y, X) mask
 * broadcast from shape ms). */
static double mask_at(const h_tensor* mk, int64_t bi, int64_t r, int64_t c,
                      int bs) {
  if (!mk) return 1;
  int nd = mk->ndim;
  int64_t Y = mk->shape[nd - 2], X = mk->shape[nd - 1];
  int64_t per = Y * X, nb = mk->size / per;
  return mk->re[(nb > 1 ? bi % nb : 0) * per + (r / bs) * X + c / bs];
}

static void check_block_masked(const int64_t* sa, const int64_t* sb, int nb,
                               int bs, const h_tensor* mo, const h_tensor* ml,
                               const h_tensor* mr, cmx_dtype dt, uint64_t seed,
                               bool nan_in_masked) {
  int64_t M = sa[nb], K = sa[nb + 1], N = sb[nb + 1], B = 1;
  for (int d = 0; d < nb; d++) B *= sa[d];
  h_tensor x = h_random(sa, nb + 2, dt, -1, 1, seed),
           y = h_random(sb, nb + 2, dt, -1, 1, seed + 1);
  if (nan_in_masked && ml) /* a NaN in every cleared block of a */
    for (int64_t b = 0; b < B; b++)
      for (int64_t r = 0; r < M; r++)
        for (int64_t k = 0; k < K; k++)
          if (mask_at(ml, b, r, k, bs) == 0 && (r % bs == 0) && (k % bs == 0))
            x.re[(b * M + r) * K + k] = NAN;
  int64_t os[CMX_MAX_NDIM];
  memcpy(os, sa, (size_t)nb * sizeof *os);
  os[nb] = M, os[nb + 1] = N;
  h_tensor want = h_alloc(os, nb + 2, dt);
  for (int64_t b = 0; b < B; b++)
    for (int64_t r = 0; r < M; r++)
      for (int64_t c = 0; c < N; c++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++) {
          double ma = mask_at(ml, b, r, k, bs), mb = mask_at(mr, b, k, c, bs);
          double av = x.re[(b * M + r) * K + k], bv = y.re[(b * K + k) * N + c];
          if (ml && ml->dtype == CMX_BOOL && mr && mr->dtype == CMX_BOOL)
            acc += (ma ? av : 0) * (mb ? bv : 0);
          else
            acc += av * ma * bv * mb;
        }
        double m = mask_at(mo, b, r, c, bs);
        want.re[(b * M + r) * N + c] =
            mo && mo->dtype == CMX_BOOL ? (m ? acc : 0) : acc * m;
      }
  cmx_array a = h_array(&x, H_TRANSPOSED), bb = h_array(&y, H_STRIDED);
  cmx_array cmo = mo ? h_array(mo, H_CONTIG) : NULL,
            cml = ml ? h_array(ml, H_CONTIG) : NULL,
            cmr = mr ? h_array(mr, H_CONTIG) : NULL, r = NULL;
  OK(cmx_block_masked_mm(&r, a, bb, bs, cmo, cml, cmr, S));
  char what[96];
  snprintf(what, sizeof what, "block_masked_mm %s bs %d", cmx_dtype_name(dt),
           bs);
  h_expect(r, &want, dt == CMX_FLOAT64 ? 1e-12 : 16 * h_tol(dt), what);
  cmx_array_release(a), cmx_array_release(bb), cmx_array_release(cmo),
      cmx_array_release(cml), cmx_array_release(cmr);
  h_free(&x), h_free(&y), h_free(&want);
}

static void test_block_masked_mm(void) {
  /* (2, 70, 40) @ (2, 40, 33), block 32: tm = 3, tk = 2, tn = 2. */
  int64_t sa[3] = {2, 70, 40}, sb[3] = {2, 40, 33};
  int64_t mls[3] = {2, 3, 2}, mrs[2] = {2, 2}, mos[2] = {3, 2};
  h_tensor ml = h_random(mls, 3, CMX_BOOL, 0, 1, 130),
           mr = h_random(mrs, 2, CMX_BOOL, 0, 1, 131),
           mo = h_random(mos, 2, CMX_BOOL, 0, 1, 132);
  ml.re[0] = 0, mr.re[0] = 1, mo.re[0] = 1; /* at least one cleared block */
  for (int d = 0; d < 4; d++)
    check_block_masked(sa, sb, 1, 32, &mo, &ml, &mr, FLOATS[d], 140 + d, false);
  check_block_masked(sa, sb, 1, 32, NULL, &ml, &mr, CMX_FLOAT32, 150, true);
  check_block_masked(sa, sb, 1, 32, &mo, NULL, NULL, CMX_FLOAT64, 151, false);
  check_block_masked(sa, sb, 1, 32, NULL, &ml, NULL, CMX_FLOAT32, 152, false);
  /* Numeric masks scale their blocks. */
  h_tensor fl = h_random(mls, 3, CMX_FLOAT32, -2, 2, 133),
           fo = h_random(mos, 2, CMX_FLOAT32, -2, 2, 134);
  check_block_masked(sa, sb, 1, 32, &fo, &fl, &mr, CMX_FLOAT32, 153, false);
  check_block_masked(sa, sb, 1, 32, &fo, NULL, NULL, CMX_FLOAT64, 154, false);
  /* Block 64: tm = 2, tk = 1, tn = 1. */
  int64_t m64[2] = {2, 1}, o64[2] = {2, 1};
  h_tensor ml64 = h_random(m64, 2, CMX_BOOL, 0, 1, 135),
           mo64 = h_random(o64, 2, CMX_BOOL, 0, 1, 136);
  ml64.re[1] = 0;
  check_block_masked(sa, sb, 1, 64, &mo64, &ml64, NULL, CMX_FLOAT32, 155,
                     false);
  h_free(&ml), h_free(&mr), h_free(&mo), h_free(&fl), h_free(&fo);
  h_free(&ml64), h_free(&mo64);

  /* 1-d a: (40,) @ (40, 33) with mask_out (tn,) and mask_lhs (tk,). */
  int64_t s40[1] = {40}, s4033[2] = {40, 33}, s2[1] = {2};
  h_tensor v = h_random(s40, 1, CMX_FLOAT32, -1, 1, 160),
           w = h_random(s4033, 2, CMX_FLOAT32, -1, 1, 161);
  double olv[2] = {1, 0}, llv[2] = {0, 1};
  cmx_array a = h_array(&v, H_CONTIG), b = h_array(&w, H_CONTIG), r = NULL;
  cmx_array mo1 = h_from_doubles(olv, s2, 1, CMX_BOOL),
            ml1 = h_from_doubles(llv, s2, 1, CMX_BOOL);
  OK(cmx_block_masked_mm(&r, a, b, 32, mo1, ml1, NULL, S));
  int64_t s33[1] = {33};
  h_tensor want = h_alloc(s33, 1, CMX_FLOAT32);
  for (int c = 0; c < 33; c++) {
    double acc = 0;
    for (int k = 32; k < 40; k++) acc += v.re[k] * w.re[k * 33 + c];
    want.re[c] = c < 32 ? acc : 0;
  }
  h_expect(r, &want, 1e-5, "block_masked_mm 1-d a");
  h_free(&want);
  /* No masks: matmul. */
  OK(cmx_block_masked_mm(&r, a, b, 16, NULL, NULL, NULL, S));
  OK(cmx_array_eval(r));
  CHECK(r && cmx_array_ndim(r) == 1 && cmx_array_shape(r)[0] == 33);
  cmx_array_release(r);
  /* Errors. */
  FAILS(cmx_block_masked_mm(&r, a, b, 16, mo1, NULL, NULL, S), CMX_ERR_VALUE,
        "[block_masked_mm] Only block_sizes 32, 64 are supported. Got block "
        "size 16.");
  cmx_array bad = NULL;
  int64_t s3[1] = {3};
  OK(cmx_ones(&bad, s3, 1, CMX_BOOL, S));
  FAILS(cmx_block_masked_mm(&r, a, b, 32, bad, NULL, NULL, S), CMX_ERR_VALUE,
        "[block_masked_mm] mask_out with shape (1,3) cannot be broadcast to "
        "the block shape (1,2).");
  FAILS(cmx_block_masked_mm(&r, a, b, 32, NULL, NULL, bad, S), CMX_ERR_VALUE,
        "[block_masked_mm] mask_rhs with shape (3) cannot be broadcast");
  cmx_array ai = NULL;
  OK(cmx_astype(&ai, b, CMX_INT32, S));
  FAILS(cmx_block_masked_mm(&r, ai, ai, 32, mo1, NULL, NULL, S), CMX_ERR_VALUE,
        "[block_masked_mm] Last dimension");
  OK(cmx_block_masked_mm(&r, a, ai, 32, mo1, NULL, NULL, S)); /* float32 */
  CHECK(r && cmx_array_dtype(r) == CMX_FLOAT32);
  cmx_array_release(r);
  cmx_array ai1 = NULL;
  OK(cmx_astype(&ai1, a, CMX_INT32, S));
  FAILS(cmx_block_masked_mm(&r, ai1, ai, 32, mo1, NULL, NULL, S), CMX_ERR_VALUE,
        "[block_masked_mm] Only real floating point types");
  cmx_array_release(ai1), cmx_array_release(ai), cmx_array_release(bad);
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(mo1),
      cmx_array_release(ml1);
  h_free(&v), h_free(&w);
}

int main(void) {
  RUN(test_gather_mm);
  RUN(test_segmented_mm);
  RUN(test_block_masked_mm);
  return test_summary("test_matmul_gather");
}
