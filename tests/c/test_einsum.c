/* Tests of einsum against a plain reference (a loop over every assignment
 * of the labels, in double precision), over the opt_einsum and MLX test
 * subscripts, ellipses, repeated labels, broadcasting, dtypes and
 * layouts; einsum_path's paths and report; and the error messages. */
#include "harness.h"

#define S CMX_STREAM_DEFAULT

static int lab(char c) {
  return c >= 'a' && c <= 'z'   ? c - 'a'
         : c >= 'A' && c <= 'Z' ? 26 + c - 'A'
                                : -1;
}

/* Reference einsum of letter-only subscripts (no ellipsis). Sizes of 1
 * broadcast. Results are exact sums in double, complex-aware; bool gives
 * any(product). */
static h_tensor ref_einsum(const char* subs, const h_tensor* ops, int n,
                           cmx_dtype odt) {
  char terms[16][64], out[64];
  int nt = 0, len = 0;
  const char* arrow = strstr(subs, "->");
  const char* end = arrow ? arrow : subs + strlen(subs);
  for (const char* c = subs;; c++) {
    if (c == end || *c == ',') {
      terms[nt][len] = 0;
      nt++, len = 0;
      if (c == end) break;
    } else if (*c != ' ') {
      terms[nt][len++] = *c;
    }
  }
  int64_t size[52];
  int count[52] = {0};
  for (int l = 0; l < 52; l++) size[l] = 1;
  for (int i = 0; i < n; i++)
    for (int j = 0; terms[i][j]; j++) {
      int l = lab(terms[i][j]);
      count[l]++;
      if (ops[i].shape[j] != 1) size[l] = ops[i].shape[j];
    }
  if (arrow) {
    len = 0;
    for (const char* c = arrow + 2; *c; c++)
      if (*c != ' ') out[len++] = *c;
    out[len] = 0;
  } else {
    len = 0;
    for (int l = 26; l < 52; l++)
      if (count[l] == 1) out[len++] = (char)('A' + l - 26);
    for (int l = 0; l < 26; l++)
      if (count[l] == 1) out[len++] = (char)('a' + l);
    out[len] = 0;
  }
  int used[52], nu = 0;
  for (int l = 0; l < 52; l++)
    if (count[l]) used[nu++] = l;
  int64_t oshape[CMX_MAX_NDIM];
  int ond = (int)strlen(out);
  for (int d = 0; d < ond; d++) oshape[d] = size[lab(out[d])];
  h_tensor w = h_alloc(oshape, ond, odt);
  int64_t total = 1;
  for (int u = 0; u < nu; u++) total *= size[used[u]];
  int64_t val[52] = {0};
  for (int64_t t = 0; t < total; t++) {
    int64_t rem = t;
    for (int u = nu - 1; u >= 0; u--) {
      val[used[u]] = rem % size[used[u]];
      rem /= size[used[u]];
    }
    double pr = 1, pi = 0;
    for (int i = 0; i < n; i++) {
      int64_t off = 0;
      for (int j = 0; terms[i][j]; j++) {
        int64_t dim = ops[i].shape[j];
        off = off * dim + (dim == 1 ? 0 : val[lab(terms[i][j])]);
      }
      double xr = ops[i].re[off], xi = ops[i].im ? ops[i].im[off] : 0;
      double nr = pr * xr - pi * xi, ni = pr * xi + pi * xr;
      pr = nr, pi = ni;
    }
    int64_t o = 0;
    for (int d = 0; d < ond; d++) o = o * oshape[d] + val[lab(out[d])];
    w.re[o] += pr;
    if (w.im) w.im[o] += pi;
  }
  if (odt == CMX_BOOL)
    for (int64_t i = 0; i < w.size; i++) w.re[i] = w.re[i] != 0;
  return w;
}

/* Shapes of the terms of ref subscripts from the size of each letter
 * (2, 3, 4, 5, 2, 3, ... by position in the alphabet). */
static int shapes_for(const char* subs, int64_t shapes[][CMX_MAX_NDIM],
                      int* nds) {
  int n = 0, nd = 0;
  for (const char* c = subs;; c++) {
    if (!*c || *c == ',' || *c == '-') {
      nds[n++] = nd;
      nd = 0;
      if (*c != ',') break;
    } else if (lab(*c) >= 0) {
      shapes[n][nd++] = 2 + lab(*c) % 4;
    }
  }
  return n;
}

typedef struct {
  const char* subs; /* for cmx */
  const char* ref;  /* letters only, for the reference (NULL: subs) */
} ecase;

static void run_case(const char* subs, const char* ref, int n,
                     int64_t shapes[][CMX_MAX_NDIM], const int* nds,
                     cmx_dtype dt, h_layout layout, uint64_t seed) {
  h_tensor ops[16];
  cmx_array arrs[16];
  for (int i = 0; i < n; i++) {
    ops[i] = h_random(shapes[i], nds[i], dt, -2, 2, seed + (uint64_t)i);
    arrs[i] = h_array(&ops[i], layout);
  }
  h_tensor want = ref_einsum(ref, ops, n, dt);
  for (int64_t i = 0; i < want.size; i++) {
    want.re[i] = h_round_to(want.re[i], dt);
    if (want.im) want.im[i] = h_round_to(want.im[i], dt);
  }
  cmx_array r = NULL;
  char what[160];
  snprintf(what, sizeof what, "einsum '%s' %s %s", subs, cmx_dtype_name(dt),
           h_layout_names[layout]);
  cmx_status st = cmx_einsum(&r, subs, arrs, n, S);
  CHECK_MSG(st == CMX_OK, "%s: %s", what, cmx_last_error());
  if (st == CMX_OK) {
    h_tensor g = h_read(r);
    double tol = dt == CMX_FLOAT64    ? 1e-10
                 : dt == CMX_FLOAT16  ? 2e-2
                 : dt == CMX_BFLOAT16 ? 1e-1
                                      : 1e-4;
    CHECK_MSG(h_close(&g, &want, tol, tol, what), "%s", what);
    h_free(&g);
  }
  cmx_array_release(r);
  for (int i = 0; i < n; i++) h_free(&ops[i]), cmx_array_release(arrs[i]);
  h_free(&want);
}

static void check(const ecase* c, cmx_dtype dt, h_layout layout,
                  uint64_t seed) {
  const char* ref = c->ref ? c->ref : c->subs;
  int64_t shapes[16][CMX_MAX_NDIM];
  int nds[16];
  int n = shapes_for(ref, shapes, nds);
  run_case(c->subs, ref, n, shapes, nds, dt, layout, seed);
}

static const ecase CASES[] = {
    /* one operand: diagonals, traces, sums, transposes */
    {"ii->i", 0},
    {"iii->i", 0},
    {"iijj->ij", 0},
    {"ijij->ij", 0},
    {"ii", 0},
    {"ij->", 0},
    {"ij->i", 0},
    {"ij->j", 0},
    {"iii->", 0},
    {"ijij->j", 0},
    {"ij", 0},
    {"ij->ji", 0},
    {"ijk->jki", 0},
    {"jii->ij", 0},
    {"ba", 0},
    /* two operands */
    {"ik,kj", 0},
    {"ik,kj->ji", 0},
    {"i,i", 0},
    {"i,j->ij", 0},
    {"ij,ij->ij", 0},
    {"abcd,fgda->bfca", 0},
    {"ab,bc->c", 0},
    {"itjk,iujk->ijtu", 0},
    {"ijtu,iujk->itjk", 0},
    {"ijk,lmk,ijf->lf", 0},
    /* opt_einsum's cases (as MLX tests them) */
    {"a,ab,abc->abc", 0},
    {"a,b,ab->ab", 0},
    {"ea,fb,gc,hd,abcd->efgh", 0},
    {"ea,fb,abcd,gc,hd->efgh", 0},
    {"abcd,ea,fb,gc,hd->efgh", 0},
    {"acdf,jbje,gihb,hfac,gfac,gifabc,hfac", 0},
    {"cd,bdhe,aidb,hgca,gc,hgibcd,hgac", 0},
    {"abhe,hidj,jgba,hiab,gab", 0},
    {"bde,cdh,agdb,hica,ibd,hgicd,hiac", 0},
    {"chd,bde,agbc,hiad,hgc,hgi,hiad", 0},
    {"chd,bde,agbc,hiad,bdi,cgh,agdb", 0},
    {"bdhe,acad,hiab,agac,hibd", 0},
    {"ab,ab,c->", 0},
    {"ab,ab,c->c", 0},
    {"ab,ab,cd,cd->", 0},
    {"ab,ab,cd,cd->ac", 0},
    {"ab,ab,cd,cd->cd", 0},
    {"ab,ab,cd,cd,ef,ef->", 0},
    {"ab,cd,ef->abcdef", 0},
    {"ab,cd,ef->acdf", 0},
    {"ab,cd,de->abcde", 0},
    {"ab,cd,de->be", 0},
    {"ab,bcd,cd->abcd", 0},
    {"ab,bcd,cd->abd", 0},
    {"eb,cb,fb->cef", 0},
    {"dd,fb,be,cdb->cef", 0},
    {"bca,cdb,dbf,afc->", 0},
    {"dcc,fce,ea,dbf->ab", 0},
    {"fdf,cdd,ccd,afe->ae", 0},
    {"abcd,ad", 0},
    {"ed,fcd,ff,bcf->be", 0},
    {"baa,dcf,af,cde->be", 0},
    {"bd,db,eac->ace", 0},
    {"fff,fae,bef,def->abd", 0},
    {"efc,dbc,acf,fd->abe", 0},
    {"ab,ab", 0},
    {"ab,ba", 0},
    {"abc,abc", 0},
    {"abc,bac", 0},
    {"abc,cba", 0},
    {"ab,bc", 0},
    {"ab,cb", 0},
    {"ba,bc", 0},
    {"ba,cb", 0},
    {"abcd,cd", 0},
    {"abcd,ab", 0},
    {"abcd,cdef", 0},
    {"abcd,cdef->feba", 0},
    {"abcd,efdc", 0},
    {"aab,bc->ac", 0},
    {"ab,bcc->ac", 0},
    {"aab,bcc->ac", 0},
    {"baa,bcc->ac", 0},
    {"aab,ccb->ac", 0},
    {"aab,fa,df,ecc->bde", 0},
    {"ecb,fef,bad,ed->ac", 0},
    {"bcf,bbb,fbf,fc->", 0},
    {"bb,ff,be->e", 0},
    {"bcb,bb,fc,fff->", 0},
    {"fbb,dfd,fc,fc->", 0},
    {"afd,ba,cc,dc->bf", 0},
    {"adb,bc,fa,cfc->d", 0},
    {"bbd,bda,fc,db->acf", 0},
    {"dba,ead,cad->bce", 0},
    {"aef,fbc,dca->bde", 0},
    /* ellipses (MLX's cases), checked against their letter forms */
    {"...c->...", "abc->ab"},
    {"a...d->...", "abcd->bc"},
    {"...ij,...gj->...ig", "abij,abgj->abig"},
    {"...ij,...gj->...", "abij,abgj->ab"},
    {"...hh->...h", "abhh->abh"},
    {"...h,...j->...hj", "bch,bcj->bchj"},
    {"...c,cd", "bc,cd->bd"},
    {"...bc,...cd", "abc,acd->abd"},
    {"...cd,c", "abcd,c->abd"},
    {"...cd,c...->d...", "xycd,c->dxy"},
    {"ab...,b...->ab...", "abc,bc->abc"},
    {"ab...,b->ab...", "abc,b->abc"},
    {"ab...,...bc->a...c", "ab,bc->ac"},
    {"ab,b...->a...", "ab,b->a"},
    {"...def,defg->...g", "abcdef,defg->abcg"},
    {"Ab,bC->AC", 0},
    {"i,->i", 0},
};

static void test_cases(void) {
  int n = (int)(sizeof CASES / sizeof *CASES);
  for (int i = 0; i < n; i++) check(&CASES[i], CMX_FLOAT32, H_CONTIG, 7 + i);
  /* Other dtypes and layouts on a selection. */
  static const cmx_dtype dts[] = {CMX_FLOAT64,   CMX_FLOAT16, CMX_BFLOAT16,
                                  CMX_COMPLEX64, CMX_INT32,   CMX_BOOL};
  for (int i = 0; i < n; i += 5)
    for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
      if (dts[d] == CMX_BFLOAT16 && strchr(CASES[i].subs, ',') &&
          strlen(CASES[i].subs) > 20)
        continue; /* long bfloat16 chains round too coarsely to compare */
      check(&CASES[i], dts[d], (h_layout)(d % H_NUM_LAYOUTS), 300 + i);
    }
  for (int i = 0; i < n; i += 3)
    check(&CASES[i], CMX_FLOAT32, H_TRANSPOSED, 500 + i);
  for (int i = 1; i < n; i += 4)
    check(&CASES[i], CMX_FLOAT64, H_STRIDED, 700 + i);
}

/* Size-1 dims broadcast against the same label elsewhere. */
static void test_broadcasting(void) {
  int64_t s1[2][CMX_MAX_NDIM] = {{5, 1}, {8, 2}};
  int n1[2] = {2, 2};
  run_case("ab,bc->c", "ab,bc->c", 2, s1, n1, CMX_FLOAT32, H_CONTIG, 1);
  int64_t s2[2][CMX_MAX_NDIM] = {{5, 1, 3, 1}, {1, 7, 1, 2}};
  int n2[2] = {4, 4};
  run_case("abcd,cdab->abcd", "abcd,cdab->abcd", 2, s2, n2, CMX_FLOAT32,
           H_CONTIG, 2);
  int64_t s3[2][CMX_MAX_NDIM] = {{1, 3, 4}, {2, 4, 5}};
  int n3[2] = {3, 3};
  run_case("...ij,...jk->...ik", "xij,xjk->xik", 2, s3, n3, CMX_FLOAT64,
           H_TRANSPOSED, 3);
  /* Ellipses of different lengths align to the right. */
  int64_t s4[2][CMX_MAX_NDIM] = {{2, 3, 4}, {3, 4}};
  int n4[2] = {3, 2};
  run_case("...j,...j->...", "abj,bj->ab", 2, s4, n4, CMX_FLOAT32, H_CONTIG, 4);
  /* A 0-d operand. */
  int64_t s5[2][CMX_MAX_NDIM] = {{0}, {4}};
  int n5[2] = {0, 1};
  run_case(",i->i", ",i->i", 2, s5, n5, CMX_FLOAT32, H_CONTIG, 5);
  /* Empty dims. */
  int64_t s6[2][CMX_MAX_NDIM] = {{3, 0}, {0, 2}};
  int n6[2] = {2, 2};
  run_case("ij,jk", "ij,jk->ik", 2, s6, n6, CMX_FLOAT32, H_CONTIG, 6);
  run_case("ij,jk->", "ij,jk->", 2, s6, n6, CMX_INT32, H_CONTIG, 6);
}

static void expect_path(const char* subs, int n, int64_t shapes[][CMX_MAX_NDIM],
                        const int* nds, const int* want, const int* want_counts,
                        int nsteps) {
  cmx_array ops[8];
  for (int i = 0; i < n; i++)
    cmx_ones(&ops[i], shapes[i], nds[i], CMX_FLOAT32, S);
  int *pos = NULL, *cnt = NULL, ns = 0;
  char* rep = NULL;
  OK(cmx_einsum_path(&pos, &cnt, &ns, &rep, subs, ops, n));
  bool same = ns == nsteps;
  int k = 0;
  for (int i = 0; same && i < ns; i++) {
    same = cnt[i] == want_counts[i];
    for (int j = 0; same && j < cnt[i]; j++, k++) same = pos[k] == want[k];
  }
  CHECK_MSG(same, "einsum_path '%s': %d steps", subs, ns);
  CHECK(rep && strstr(rep, "  Complete contraction:  ") && strstr(rep, subs));
  cmx_free(pos), cmx_free(cnt), cmx_free(rep);
  for (int i = 0; i < n; i++) cmx_array_release(ops[i]);
}

/* The paths MLX's own tests expect. */
static void test_paths(void) {
  {
    int64_t s[3][CMX_MAX_NDIM] = {{2, 2}, {2, 4}, {4, 2}};
    int nd[3] = {2, 2, 2}, w[4] = {1, 2, 0, 1}, c[2] = {2, 2};
    expect_path("ij,jk,kl", 3, s, nd, w, c, 2);
  }
  {
    int64_t s[1][CMX_MAX_NDIM] = {{2, 3, 4}};
    int nd[1] = {3}, w[1] = {0}, c[1] = {1};
    expect_path("jki", 1, s, nd, w, c, 1);
  }
  {
    int64_t s[2][CMX_MAX_NDIM] = {{2}, {1}};
    int nd[2] = {1, 1}, w[2] = {0, 1}, c[1] = {2};
    expect_path("i,i", 2, s, nd, w, c, 1);
  }
  {
    int64_t s[2][CMX_MAX_NDIM] = {{3, 4, 5}, {4, 3, 2}};
    int nd[2] = {3, 3}, w[2] = {0, 1}, c[1] = {2};
    expect_path("ijk,jil->kl", 2, s, nd, w, c, 1);
  }
  {
    int64_t s[5][CMX_MAX_NDIM] = {
        {2, 6, 8}, {2, 4, 5}, {3, 6, 5}, {3, 4, 8}, {9, 4, 7}};
    int nd[5] = {3, 3, 3, 3, 3}, w[8] = {0, 3, 1, 3, 0, 2, 0, 1},
        c[4] = {2, 2, 2, 2};
    expect_path("ijk,ilm,njm,nlk,abc->", 5, s, nd, w, c, 4);
  }
  {
    int64_t s[5][CMX_MAX_NDIM] = {
        {10, 10}, {10, 10}, {10, 10, 10, 10}, {10, 10}, {10, 10}};
    int nd[5] = {2, 2, 4, 2, 2}, w[8] = {0, 2, 0, 3, 0, 2, 0, 1},
        c[4] = {2, 2, 2, 2};
    expect_path("ea,fb,abcd,gc,hd->efgh", 5, s, nd, w, c, 4);
  }
  {
    int64_t s[3][CMX_MAX_NDIM] = {{5, 8}, {8, 3}, {3, 7}};
    int nd[3] = {2, 2, 2}, w[4] = {0, 1, 0, 1}, c[2] = {2, 2};
    expect_path("ij,jk,kl", 3, s, nd, w, c, 2);
    int64_t t[3][CMX_MAX_NDIM] = {{5, 8}, {8, 10}, {10, 7}};
    int w2[4] = {1, 2, 0, 1};
    expect_path("ij,jk,kl", 3, t, nd, w2, c, 2);
  }
  {
    int64_t s[1][CMX_MAX_NDIM] = {{5, 5}};
    int nd[1] = {2}, w[1] = {0}, c[1] = {1};
    expect_path("ii->i", 1, s, nd, w, c, 1);
  }
  /* The report's figures for ij,jk,kl with (2,2), (2,4), (4,2): naive
   * 2*2*4*2 * (2 + 1) = 96 over 4 labels; the path costs 16*2 + 8*2. */
  cmx_array ops[3];
  int64_t s0[2] = {2, 2}, s1[2] = {2, 4}, s2[2] = {4, 2};
  cmx_ones(&ops[0], s0, 2, CMX_FLOAT32, S);
  cmx_ones(&ops[1], s1, 2, CMX_FLOAT32, S);
  cmx_ones(&ops[2], s2, 2, CMX_FLOAT32, S);
  int *pos = NULL, *cnt = NULL, ns = 0;
  char* rep = NULL;
  OK(cmx_einsum_path(&pos, &cnt, &ns, &rep, "ij,jk,kl", ops, 3));
  CHECK(rep && strstr(rep,
                      "  Complete contraction:  ij,jk,kl\n"
                      "         Naive scaling:  4\n"
                      "     Optimized scaling:  3\n"
                      "      Naive FLOP count:  96\n"
                      "  Optimized FLOP count:  48\n"));
  CHECK(rep && strstr(rep, "Theoretical speedup:  2.000"));
  CHECK(rep && strstr(rep, "jk,kl->jl") && strstr(rep, "ij,jl->il"));
  cmx_free(pos), cmx_free(cnt), cmx_free(rep);
  /* report may be left out */
  OK(cmx_einsum_path(&pos, &cnt, &ns, NULL, "ij,jk,kl", ops, 3));
  CHECK(ns == 2);
  cmx_free(pos), cmx_free(cnt);
  FAILS(cmx_einsum_path(&pos, &cnt, &ns, NULL, "ij,jk", ops, 3), CMX_ERR_VALUE,
        "[einsum_path] Number of operands, 3, does not match number of input "
        "subscripts, 2.");
  FAILS(cmx_einsum_path(NULL, &cnt, &ns, NULL, "ij", ops, 1), CMX_ERR_VALUE,
        "[einsum_path] output pointer is NULL");
  for (int i = 0; i < 3; i++) cmx_array_release(ops[i]);
}

static void test_errors(void) {
  int64_t s23[2] = {2, 3}, s45[2] = {4, 5}, s3[1] = {3};
  cmx_array a = NULL, b = NULL, v = NULL, r = NULL;
  OK(cmx_ones(&a, s23, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&b, s45, 2, CMX_FLOAT32, S));
  OK(cmx_ones(&v, s3, 1, CMX_FLOAT32, S));
  cmx_array ab[2] = {a, b};
  FAILS(cmx_einsum(&r, "ij,jk", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Number of operands, 1, does not match number of input "
        "subscripts, 2.");
  FAILS(cmx_einsum(&r, "i1", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Subscripts must be letters, but got '1'.");
  FAILS(cmx_einsum(&r, "i\xc3\xa9", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Subscripts must be letters, but got byte 0xc3.");
  FAILS(cmx_einsum(&r, "i..", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Subscripts must be letters, but got '.'.");
  FAILS(cmx_einsum(&r, "ij->-i", ab, 1, S), CMX_ERR_VALUE,
        "Subscripts must be letters, but got '-'.");
  FAILS(cmx_einsum(&r, "a...b...", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Only one ellipsis per subscript is allowed but found more "
        "in 'a...b...'.");
  FAILS(cmx_einsum(&r, "ij->ii", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Repeat indices not allowed in output.");
  FAILS(cmx_einsum(&r, "ij->k", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Output subscript 'k' does not appear in the input "
        "subscripts.");
  FAILS(cmx_einsum(&r, "ijk", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Invalid number of subscripts 3 for input 0 with 2 "
        "dimensions.");
  FAILS(cmx_einsum(&r, "ij,jk", ab, 2, S), CMX_ERR_VALUE,
        "[einsum] Cannot broadcast dimension 0 of input 1 with shape (4,5) to "
        "size 3.");
  FAILS(cmx_einsum(&r, "ii", ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Dimensions of repeated subscripts do not have the same size "
        "(2 != 3).");
  FAILS(cmx_einsum(&r, "...ij", &v, 1, S), CMX_ERR_VALUE,
        "[einsum] Operand 0 with shape (3) has insufficient dimensions for "
        "subscript '...ij'.");
  FAILS(cmx_einsum(&r, "i", NULL, 0, S), CMX_ERR_VALUE,
        "[einsum] At least one operand is required.");
  FAILS(cmx_einsum(&r, NULL, ab, 1, S), CMX_ERR_VALUE,
        "[einsum] subscripts is NULL.");
  cmx_array nul[1] = {NULL};
  FAILS(cmx_einsum(&r, "i", nul, 1, S), CMX_ERR_VALUE, "[einsum]");
  char longsub[200];
  memset(longsub, 'a', sizeof longsub - 1);
  longsub[sizeof longsub - 1] = 0;
  FAILS(cmx_einsum(&r, longsub, ab, 1, S), CMX_ERR_VALUE,
        "[einsum] Too many subscripts");
  CHECK(r == NULL);
  cmx_array_release(a), cmx_array_release(b), cmx_array_release(v);
}

/* Implicit output: letters used once, upper case before lower case, after
 * the ellipsis; and the dtype of mixed operands. */
static void test_implicit_and_dtypes(void) {
  int64_t s[3] = {2, 3, 4};
  cmx_array a = NULL, b = NULL, r = NULL;
  OK(cmx_ones(&a, s, 3, CMX_FLOAT16, S));
  OK(cmx_ones(&b, s + 2, 1, CMX_INT32, S));
  cmx_array ab[2] = {a, b};
  OK(cmx_einsum(&r, "bAc,c", ab, 2, S)); /* output "Ab": (3, 2) */
  CHECK(r && cmx_array_ndim(r) == 2 && cmx_array_shape(r)[0] == 3 &&
        cmx_array_shape(r)[1] == 2 && cmx_array_dtype(r) == CMX_FLOAT16);
  double v = 0;
  cmx_array e = NULL;
  int64_t st[2] = {0, 0}, sp[2] = {1, 1};
  OK(cmx_slice(&e, r, st, sp, NULL, S));
  OK(cmx_array_item_double(e, &v));
  CHECK(v == 4);
  cmx_array_release(e), cmx_array_release(r);
  OK(cmx_einsum(&r, "...c->...", &a, 1, S));
  CHECK(r && cmx_array_ndim(r) == 2 && cmx_array_shape(r)[1] == 3);
  cmx_array_release(r);
  OK(cmx_einsum(&r, "c...", &a, 1, S)); /* implicit: "...c" */
  CHECK(r && cmx_array_ndim(r) == 3 && cmx_array_shape(r)[0] == 3 &&
        cmx_array_shape(r)[1] == 4 && cmx_array_shape(r)[2] == 2);
  cmx_array_release(r);
  /* A diagonal alone stays a view. */
  int64_t sq[2] = {4, 4};
  cmx_array m = NULL;
  OK(cmx_ones(&m, sq, 2, CMX_FLOAT32, S));
  OK(cmx_array_eval(m));
  OK(cmx_einsum(&r, "ii->i", &m, 1, S));
  OK(cmx_array_eval(r));
  CHECK(r && r->buf == m->buf);
  cmx_array_release(r), cmx_array_release(m);
  cmx_array_release(a), cmx_array_release(b);
}

int main(void) {
  RUN(test_cases);
  RUN(test_broadcasting);
  RUN(test_paths);
  RUN(test_errors);
  RUN(test_implicit_and_dtypes);
  return test_summary("test_einsum");
}
