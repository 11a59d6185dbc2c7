/* Transform rules of the Convolution primitive: vjp against finite
 * differences and jvp against vjp (float64) for conv1d/2d/3d with strides,
 * padding, dilation and groups, conv_transpose1d/2d/3d, and conv_general
 * with flip, input dilation and asymmetric/negative padding; vmap against
 * a loop over the input, the weight, and both; cotangent dtypes; grad of
 * grad and vmap of grad for conv2d. Shapes are small (ASan runs these). */
#include "rules_mm_util.h"

/* One convolution call: kind selects the op, the rest are its
 * parameters (per spatial dim). */
typedef enum { CONV, CONV_T, CONV_GENERAL } conv_kind;
typedef struct {
  const char* name;
  conv_kind kind;
  int nsp;
  int64_t x[5], w[5];
  int stride[3], pad[3], dil[3], outpad[3], groups;
  /* conv_general only */
  int pad_hi[3], in_dil[3];
  bool flip;
} conv_case;

static cmx_status t_conv(void* ctx, const cmx_array* in, int n, cmx_array* outs,
                         int* nout) {
  (void)n;
  const conv_case* c = ctx;
  const int *st = c->stride, *p = c->pad, *d = c->dil, *op = c->outpad;
  *nout = 1;
  cmx_array x = in[0], w = in[1];
  if (c->kind == CONV_GENERAL)
    return cmx_conv_general(&outs[0], x, w, st, c->nsp, p, c->nsp, c->pad_hi,
                            c->nsp, d, c->nsp, c->in_dil, c->nsp, c->groups,
                            c->flip, S);
  if (c->kind == CONV) {
    switch (c->nsp) {
      case 1:
        return cmx_conv1d(&outs[0], x, w, st[0], p[0], d[0], c->groups, S);
      case 2:
        return cmx_conv2d(&outs[0], x, w, st[0], st[1], p[0], p[1], d[0], d[1],
                          c->groups, S);
      default:
        return cmx_conv3d(&outs[0], x, w, st[0], st[1], st[2], p[0], p[1], p[2],
                          d[0], d[1], d[2], c->groups, S);
    }
  }
  switch (c->nsp) {
    case 1:
      return cmx_conv_transpose1d(&outs[0], x, w, st[0], p[0], d[0], op[0],
                                  c->groups, S);
    case 2:
      return cmx_conv_transpose2d(&outs[0], x, w, st[0], st[1], p[0], p[1],
                                  d[0], d[1], op[0], op[1], c->groups, S);
    default:
      return cmx_conv_transpose3d(&outs[0], x, w, st[0], st[1], st[2], p[0],
                                  p[1], p[2], d[0], d[1], d[2], op[0], op[1],
                                  op[2], c->groups, S);
  }
}

/* name, op, spatial dims, x, w, stride, padding (lo), dilation,
 * output_padding, groups; conv_general: padding hi, input dilation, flip. */
static const conv_case cases[] = {
    {"conv1d",
     CONV,
     1,
     {2, 7, 3},
     {4, 3, 3},
     {1},
     {0},
     {1},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv1d stride 2 pad 1 dilation 2",
     CONV,
     1,
     {2, 9, 3},
     {4, 3, 3},
     {2},
     {1},
     {2},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv1d stride 3 (uneven)",
     CONV,
     1,
     {1, 8, 2},
     {3, 2, 2},
     {3},
     {0},
     {1},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv1d groups 3",
     CONV,
     1,
     {2, 6, 3},
     {6, 3, 1},
     {1},
     {1},
     {1},
     {0},
     3,
     {0},
     {0},
     false},
    {"conv1d pad beyond kernel",
     CONV,
     1,
     {1, 3, 2},
     {2, 2, 2},
     {1},
     {3},
     {1},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv2d",
     CONV,
     2,
     {2, 5, 4, 3},
     {4, 3, 2, 3},
     {1, 1},
     {0, 0},
     {1, 1},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv2d stride pad dilation groups 2",
     CONV,
     2,
     {2, 6, 5, 4},
     {4, 3, 2, 2},
     {2, 1},
     {1, 0},
     {1, 2},
     {0},
     2,
     {0},
     {0},
     false},
    {"conv2d depthwise",
     CONV,
     2,
     {1, 4, 4, 2},
     {2, 2, 2, 1},
     {1, 2},
     {1, 1},
     {1, 1},
     {0},
     2,
     {0},
     {0},
     false},
    {"conv3d",
     CONV,
     3,
     {1, 4, 5, 4, 2},
     {2, 2, 3, 2, 2},
     {1, 2, 1},
     {1, 0, 1},
     {1, 1, 2},
     {0},
     1,
     {0},
     {0},
     false},
    {"conv_transpose1d stride 2 outpad 1",
     CONV_T,
     1,
     {2, 5, 3},
     {4, 3, 3},
     {2},
     {1},
     {1},
     {1},
     1,
     {0},
     {0},
     false},
    {"conv_transpose1d groups dilation",
     CONV_T,
     1,
     {1, 4, 4},
     {6, 2, 2},
     {1},
     {0},
     {2},
     {0},
     2,
     {0},
     {0},
     false},
    {"conv_transpose2d stride 2 groups 2",
     CONV_T,
     2,
     {1, 3, 4, 4},
     {4, 2, 3, 2},
     {2, 2},
     {0, 1},
     {1, 1},
     {1, 0},
     2,
     {0},
     {0},
     false},
    {"conv_transpose3d",
     CONV_T,
     3,
     {1, 3, 2, 3, 2},
     {2, 2, 2, 2, 2},
     {2, 1, 2},
     {0, 0, 1},
     {1, 1, 1},
     {0, 0, 1},
     1,
     {0},
     {0},
     false},
    {"conv_general flip, input dilation, asymmetric pad",
     CONV_GENERAL,
     1,
     {2, 5, 2},
     {3, 3, 2},
     {2},
     {2},
     {1},
     {0},
     1,
     {1},
     {3},
     true},
    {"conv_general negative padding",
     CONV_GENERAL,
     2,
     {1, 7, 6, 2},
     {2, 2, 3, 2},
     {1, 2},
     {-1, 1},
     {2, 1},
     {0},
     1,
     {0, -1},
     {1, 2},
     false},
    {"conv_general flip groups 2 everything",
     CONV_GENERAL,
     2,
     {2, 4, 3, 4},
     {4, 2, 2, 2},
     {2, 1},
     {1, 0},
     {1, 2},
     {0},
     2,
     {2, 1},
     {2, 1},
     true},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static void test_conv_grad(void) {
  for (int i = 0; i < NCASES; i++) {
    const conv_case* c = &cases[i];
    cmx_array in[2] = {rnd(c->x, c->nsp + 2), rnd(c->w, c->nsp + 2)};
    tc_check_grad(c->name, t_conv, (void*)c, in, 2, 1e-6);
    release_all(in, 2);
  }
  /* Non-contiguous input and weight. */
  const conv_case* c = &cases[6];
  cmx_array in[2] = {rnd_t(c->x, 4), rnd_t(c->w, 4)};
  tc_check_grad("conv2d transposed layouts", t_conv, (void*)c, in, 2, 1e-6);
  release_all(in, 2);
}

static void test_conv_vmap(void) {
  const int64_t B = 2;
  int choice[][2] = {{0, CMX_VMAP_NONE},
                     {-1, CMX_VMAP_NONE},
                     {CMX_VMAP_NONE, 0},
                     {CMX_VMAP_NONE, -1},
                     {0, -1},
                     {-1, 0}};
  for (int i = 0; i < NCASES; i++) {
    const conv_case* c = &cases[i];
    int nd = c->nsp + 2;
    for (int k = 0; k < 6; k++) {
      cmx_array in[2];
      const int64_t* sh[2] = {c->x, c->w};
      for (int j = 0; j < 2; j++)
        in[j] = choice[k][j] == CMX_VMAP_NONE
                    ? rnd(sh[j], nd)
                    : rnd_batched(sh[j], nd, choice[k][j] < 0 ? nd : 0, B);
      char name[128];
      snprintf(name, sizeof name, "%s, in_axes %d/%d", c->name, choice[k][0],
               choice[k][1]);
      tc_check_vmap(name, t_conv, (void*)c, in, 2, choice[k], k % 2 ? -1 : 0);
      release_all(in, 2);
    }
  }
}

/* vmap over the weight with the batch in the middle of it. */
static void test_conv_vmap_middle(void) {
  const conv_case* c = &cases[6]; /* groups 2 */
  int64_t B = 3;
  cmx_array in[2] = {rnd(c->x, 4), rnd_batched(c->w, 4, 2, B)};
  int ax[2] = {CMX_VMAP_NONE, 2};
  tc_check_vmap("conv2d weight batched on axis 2", t_conv, (void*)c, in, 2, ax,
                1);
  release_all(in, 2);
}

static void test_cotangent_dtypes(void) {
  const conv_case* c = &cases[6];
  cmx_array x64 = rnd(c->x, 4), w64 = rnd(c->w, 4);
  cmx_array o[1] = {NULL};
  int no = 0;
  cmx_array in64[2] = {x64, w64};
  OK(t_conv((void*)c, in64, 2, o, &no));
  cmx_array ct64 = tc_random_like(o[0]), ref[2] = {0};
  cmx_array_release(o[0]);
  tc_closure cl = {t_conv, (void*)c};
  cmx_closure f = {tc_call, &cl};
  OK(cmx_vjp(f, in64, 2, &ct64, 1, NULL, NULL, ref));
  cmx_dtype dts[3] = {CMX_FLOAT32, CMX_FLOAT16, CMX_BFLOAT16};
  for (int i = 0; i < 3; i++) {
    cmx_array in[2] = {NULL, NULL}, ct = NULL, vjps[2] = {0};
    cmx_astype(&in[0], x64, dts[i], S);
    cmx_astype(&in[1], w64, dts[i], S);
    cmx_astype(&ct, ct64, dts[i], S);
    OK(cmx_vjp(f, in, 2, &ct, 1, NULL, NULL, vjps));
    double tol = dts[i] == CMX_FLOAT32 ? 1e-5 : 5e-2;
    for (int k = 0; k < 2; k++) {
      CHECK(vjps[k] && cmx_array_dtype(vjps[k]) == dts[i]);
      CHECK_MSG(tc_max_err(vjps[k], ref[k]) < tol, "dtype %d arg %d: %g", i, k,
                tc_max_err(vjps[k], ref[k]));
    }
    release_all(vjps, 2);
    release_all(in, 2);
    cmx_array_release(ct);
  }
  release_all(ref, 2);
  cmx_array_release(ct64);
  cmx_array_release(x64);
  cmx_array_release(w64);
}

static void test_second_order(void) {
  const cmx_primitive_vtable* vts[] = {&cmx__vt_Transpose, &cmx__vt_Reshape,
                                       &cmx__vt_Slice};
  conv_case c2 = {"conv2d", CONV, 2, {1, 5, 4, 2}, {2, 3, 2, 2}, {2, 1}, {1, 0},
                  {1, 1},   {0},  1, {0},          {0},          false};
  int64_t xb[5] = {2, 1, 5, 4, 2}, wb[5] = {2, 2, 3, 2, 2};
  cmx_array x[2] = {rnd(c2.x, 4), rnd(c2.w, 4)};
  cmx_array b[2] = {rnd(xb, 5), rnd(wb, 5)};
  check_second_order("conv2d", t_conv, &c2, x, b, 2, vts, 3);
  release_all(x, 2);
  release_all(b, 2);
  /* Groups, flip and input dilation in the second order too. */
  const conv_case* g = &cases[NCASES - 1];
  int64_t gx[5] = {2, 2, 4, 3, 4}, gw[5] = {2, 4, 2, 2, 2};
  cmx_array y[2] = {rnd(g->x, 4), rnd(g->w, 4)};
  cmx_array yb[2] = {rnd(gx, 5), rnd(gw, 5)};
  check_second_order(g->name, t_conv, (void*)g, y, yb, 2, vts, 3);
  release_all(y, 2);
  release_all(yb, 2);
}

int main(void) {
  RUN(test_conv_grad);
  RUN(test_conv_vmap);
  RUN(test_conv_vmap_middle);
  RUN(test_cotangent_dtypes);
  RUN(test_second_order);
  return test_summary("test_rules_conv");
}
