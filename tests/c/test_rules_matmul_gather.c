/* Transform rules of the gathered matrix products (GatherMM, SegmentedMM,
 * and the composites einsum and block_masked_mm): vjp against central
 * finite differences and jvp against vjp (tc_check_grad, float64), vmap
 * over each argument's axis against a loop (tc_check_vmap), and cotangent
 * dtypes. */
#include "harness.h"
#include "tcheck.h"

#define S CMX_STREAM_DEFAULT

static cmx_array index_array(const int64_t* v, const int64_t* shape, int nd,
                             cmx_dtype dt) {
  h_tensor t = h_alloc(shape, nd, dt);
  for (int64_t i = 0; i < t.size; i++) t.re[i] = (double)v[i];
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

static cmx_status t_gather_mm(void* ctx, const cmx_array* in, int n,
                              cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_gather_mm(&outs[0], in[0], in[1], in[2], in[3], false, S);
}
static cmx_status t_segmented_mm(void* ctx, const cmx_array* in, int n,
                                 cmx_array* outs, int* nout) {
  (void)ctx, (void)n;
  *nout = 1;
  return cmx_segmented_mm(&outs[0], in[0], in[1], in[2], S);
}
static cmx_array rnd(const int64_t* shape, int nd, uint64_t seed) {
  h_tensor t = h_random(shape, nd, CMX_FLOAT64, -1, 1, seed);
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

#define NA CMX_VMAP_NONE

/* GatherMM: gradients for a and b, none for the indices. */
static void test_gather_mm(void) {
  int64_t sa[3] = {3, 4, 5}, sb[3] = {2, 5, 6}, s6[1] = {6};
  int64_t li[6] = {2, 0, 1, 1, 0, 2}, ri[6] = {1, 1, 0, 1, 0, 0};
  cmx_array g[4] = {rnd(sa, 3, 220), rnd(sb, 3, 221),
                    index_array(li, s6, 1, CMX_UINT32),
                    index_array(ri, s6, 1, CMX_UINT32)};
  tc_check_grad("gather_mm", t_gather_mm, NULL, g, 4, 1e-6);
  /* vmap over each argument, then over all of them. */
  int64_t vsa[4] = {3, 4, 5, 2}, vsb[4] = {2, 2, 5, 6}, vsi[2] = {2, 6};
  int64_t lv[12] = {2, 0, 1, 1, 0, 2, 0, 0, 1, 2, 2, 1},
          rv[12] = {1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0};
  cmx_array va[4] = {rnd(vsa, 4, 222), rnd(vsb, 4, 223),
                     index_array(lv, vsi, 2, CMX_UINT32),
                     index_array(rv, vsi, 2, CMX_UINT32)};
  int ax_a[4] = {3, NA, NA, NA}, ax_b[4] = {NA, 1, NA, NA},
      ax_l[4] = {NA, NA, 0, NA}, ax_r[4] = {NA, NA, NA, 0},
      ax_all[4] = {3, 1, 0, 0};
  cmx_array mix[4];
  for (int i = 0; i < 4; i++) mix[i] = i ? g[i] : va[0];
  tc_check_vmap("vmap gather_mm a", t_gather_mm, NULL, mix, 4, ax_a, 0);
  for (int i = 0; i < 4; i++) mix[i] = i == 1 ? va[1] : g[i];
  tc_check_vmap("vmap gather_mm b", t_gather_mm, NULL, mix, 4, ax_b, 0);
  for (int i = 0; i < 4; i++) mix[i] = i == 2 ? va[2] : g[i];
  tc_check_vmap("vmap gather_mm lhs", t_gather_mm, NULL, mix, 4, ax_l, 1);
  for (int i = 0; i < 4; i++) mix[i] = i == 3 ? va[3] : g[i];
  tc_check_vmap("vmap gather_mm rhs", t_gather_mm, NULL, mix, 4, ax_r, 0);
  tc_check_vmap("vmap gather_mm all", t_gather_mm, NULL, va, 4, ax_all, 2);
  for (int i = 0; i < 4; i++) cmx_array_release(g[i]), cmx_array_release(va[i]);
}

static void test_segmented_mm(void) {
  int64_t ta[2] = {4, 10}, tb[2] = {10, 3}, ts[2] = {4, 2};
  int64_t segs[8] = {0, 3, 3, 10, 2, 2, 1, 9};
  cmx_array sm[3] = {rnd(ta, 2, 230), rnd(tb, 2, 231),
                     index_array(segs, ts, 2, CMX_UINT32)};
  tc_check_grad("segmented_mm", t_segmented_mm, NULL, sm, 3, 1e-6);
  int64_t vta[3] = {2, 4, 10}, vtb[3] = {10, 3, 2}, vts[3] = {4, 2, 2};
  int64_t vsegs[16] = {0, 3, 0, 1, 3, 10, 2, 8, 2, 2, 5, 10, 1, 9, 0, 10};
  cmx_array vsm[3] = {rnd(vta, 3, 232), rnd(vtb, 3, 233),
                      index_array(vsegs, vts, 3, CMX_UINT32)};
  int sx_a[3] = {0, NA, NA}, sx_b[3] = {NA, 2, NA}, sx_s[3] = {NA, NA, 2},
      sx_all[3] = {0, 2, 2}, sx_as[3] = {0, NA, 2};
  cmx_array m3[3];
  for (int i = 0; i < 3; i++) m3[i] = i ? sm[i] : vsm[0];
  tc_check_vmap("vmap segmented_mm a", t_segmented_mm, NULL, m3, 3, sx_a, 0);
  for (int i = 0; i < 3; i++) m3[i] = i == 1 ? vsm[1] : sm[i];
  tc_check_vmap("vmap segmented_mm b", t_segmented_mm, NULL, m3, 3, sx_b, 2);
  for (int i = 0; i < 3; i++) m3[i] = i == 2 ? vsm[2] : sm[i];
  tc_check_vmap("vmap segmented_mm segments", t_segmented_mm, NULL, m3, 3, sx_s,
                0);
  tc_check_vmap("vmap segmented_mm all", t_segmented_mm, NULL, vsm, 3, sx_all,
                1);
  for (int i = 0; i < 3; i++) m3[i] = i == 1 ? sm[1] : vsm[i];
  tc_check_vmap("vmap segmented_mm a and segments", t_segmented_mm, NULL, m3, 3,
                sx_as, 0);
  for (int i = 0; i < 3; i++)
    cmx_array_release(sm[i]), cmx_array_release(vsm[i]);
}

/* einsum composes primitives, so its transforms are theirs: Diagonal,
 * sums and products, and for contractions Matmul, Transpose and Reshape. */
static cmx_status t_einsum(void* ctx, const cmx_array* in, int n,
                           cmx_array* outs, int* nout) {
  *nout = 1;
  return cmx_einsum(&outs[0], ctx, in, n, S);
}

static void test_einsum(void) {
  int64_t s44[2] = {4, 4}, s343[3] = {3, 4, 3}, s35[2] = {3, 5}, s5[1] = {5};
  cmx_array sq = rnd(s44, 2, 240), cube = rnd(s343, 3, 241),
            m[2] = {rnd(s35, 2, 242), rnd(s35, 2, 243)},
            v[2] = {rnd(s5, 1, 244), rnd(s5, 1, 245)};
  const char* one[] = {"ii", "ii->i", "ij->"};
  for (int i = 0; i < 3; i++)
    tc_check_grad(one[i], t_einsum, (void*)one[i], &sq, 1, 1e-6);
  tc_check_grad("iji->j", t_einsum, (void*)"iji->j", &cube, 1, 1e-6);
  tc_check_grad("ij,ij->ij", t_einsum, "ij,ij->ij", m, 2, 1e-6);
  tc_check_grad("i,i->i", t_einsum, "i,i->i", v, 2, 1e-6);
  int a1 = 1, a2 = 2, both[2] = {1, 0};
  tc_check_vmap("vmap ii->i", t_einsum, "ii->i", &cube, 1, &a1, 1);
  tc_check_vmap("vmap ii (axis 1)", t_einsum, "ii", &cube, 1, &a1, 0);
  tc_check_vmap("vmap ij-> (axis 2)", t_einsum, "ij->", &cube, 1, &a2, 0);
  cmx_array mt[2] = {m[0], NULL};
  cmx_transpose(&mt[1], m[1], NULL, 0, S); /* (5, 3) */
  tc_check_vmap("vmap i,i->i", t_einsum, "i,i->i", mt, 2, both, 1);
  cmx_array_release(mt[1]);
  /* Contractions (one matmul, batched, and a three-operand path). */
  int64_t s53[2] = {5, 3}, s34[2] = {3, 4}, s235[3] = {2, 3, 5},
          s254[3] = {2, 5, 4};
  cmx_array mm[2] = {m[0], rnd(s53, 2, 246)};
  cmx_array bm[2] = {rnd(s235, 3, 247), rnd(s254, 3, 248)};
  cmx_array ch[3] = {m[0], mm[1], rnd(s34, 2, 249)};
  tc_check_grad("ij,jk->ik", t_einsum, "ij,jk->ik", mm, 2, 1e-6);
  tc_check_grad("ij,jk->ki", t_einsum, "ij,jk->ki", mm, 2, 1e-6);
  tc_check_grad("bij,bjk->bik", t_einsum, "bij,bjk->bik", bm, 2, 1e-6);
  tc_check_grad("ij,jk,kl->il", t_einsum, "ij,jk,kl->il", ch, 3, 1e-6);
  int b0[2] = {0, 0}, bn[2] = {0, NA};
  tc_check_vmap("vmap ij,jk->ik (both)", t_einsum, "ij,jk->ik", bm, 2, b0, 0);
  cmx_array bx[2] = {bm[0], mm[1]};
  tc_check_vmap("vmap ij,jk->ik (first)", t_einsum, "ij,jk->ik", bx, 2, bn, 1);
  cmx_array_release(mm[1]), cmx_array_release(ch[2]);
  cmx_array_release(bm[0]), cmx_array_release(bm[1]);
  cmx_array_release(sq), cmx_array_release(cube);
  for (int i = 0; i < 2; i++) cmx_array_release(m[i]), cmx_array_release(v[i]);
}

/* block_masked_mm composes where/multiply and matmul. ctx: the masks. */
typedef struct bmm_case {
  cmx_array mask_out, mask_lhs, mask_rhs;
} bmm_case;
static cmx_status t_bmm(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                        int* nout) {
  (void)n;
  bmm_case* c = ctx;
  *nout = 1;
  return cmx_block_masked_mm(&outs[0], in[0], in[1], 32, c->mask_out,
                             c->mask_lhs, c->mask_rhs, S);
}

static void test_block_masked_mm(void) {
  /* (40, 70) @ (70, 33): 2 x 3 x 2 blocks of 32, ragged edges. */
  int64_t sa[2] = {40, 70}, sb[2] = {70, 33}, so[2] = {2, 2}, sl[2] = {2, 3},
          sr[2] = {3, 2};
  cmx_array ab[2] = {rnd(sa, 2, 250), rnd(sb, 2, 251)};
  bool mo[4] = {1, 0, 1, 1}, ml[6] = {1, 1, 0, 1, 0, 1},
       mr[6] = {0, 1, 1, 1, 1, 0};
  bmm_case c = {NULL, NULL, NULL};
  OK(cmx_array_from_data(&c.mask_out, mo, so, 2, CMX_BOOL));
  OK(cmx_array_from_data(&c.mask_lhs, ml, sl, 2, CMX_BOOL));
  OK(cmx_array_from_data(&c.mask_rhs, mr, sr, 2, CMX_BOOL));
  tc_check_grad("block_masked_mm bool masks", t_bmm, &c, ab, 2, 1e-6);
  bmm_case scaled = {NULL, rnd(sl, 2, 252), rnd(sr, 2, 253)};
  tc_check_grad("block_masked_mm scaling masks", t_bmm, &scaled, ab, 2, 1e-6);
  cmx_array_release(c.mask_out), cmx_array_release(c.mask_lhs);
  cmx_array_release(c.mask_rhs), cmx_array_release(scaled.mask_lhs);
  cmx_array_release(scaled.mask_rhs);
  cmx_array_release(ab[0]), cmx_array_release(ab[1]);
}

int main(void) {
  RUN(test_gather_mm);
  RUN(test_segmented_mm);
  RUN(test_einsum);
  RUN(test_block_masked_mm);
  return test_summary("test_rules_matmul_gather");
}
