/* The convolution primitive. */
#include "primitives/conv.h"

#include <stdio.h>
#include <string.h>

#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

/* Appends "(a,b,c)" of n values to buf at *pos. */
static void put_list(char* buf, size_t size, size_t* pos, const char* name,
                     const int64_t* v, int n) {
  for (int i = 0; i < n && *pos < size; i++) {
    int w = snprintf(buf + *pos, size - *pos, "%s%lld", i ? "," : name,
                     (long long)v[i]);
    *pos += w > 0 ? (size_t)w : 0;
  }
  if (*pos < size) {
    int w = snprintf(buf + *pos, size - *pos, ")");
    *pos += w > 0 ? (size_t)w : 0;
  }
}

static void conv_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__conv_params* q = cmx_primitive_params(p);
  size_t pos = 0;
  put_list(buf, size, &pos, "Convolution(stride=(", q->stride, q->nsp);
  put_list(buf, size, &pos, ", padding_lo=(", q->pad_lo, q->nsp);
  put_list(buf, size, &pos, ", padding_hi=(", q->pad_hi, q->nsp);
  put_list(buf, size, &pos, ", kernel_dilation=(", q->kernel_dilation, q->nsp);
  put_list(buf, size, &pos, ", input_dilation=(", q->input_dilation, q->nsp);
  if (pos < size)
    snprintf(buf + pos, size - pos, ", groups=%d, flip=%s)", (int)q->groups,
             q->flip ? "true" : "false");
}

/* (N, M_1..M_d, O) with M from the formula of primitives/conv.h. */
static cmx_status conv_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)nin, (void)nout;
  const cmx__conv_params* q = cmx_primitive_params(p);
  int nd = cmx_array_ndim(in[0]);
  if (nd != q->nsp + 2 || cmx_array_ndim(in[1]) != nd)
    return cmx__shape_fail(p, "the operands' ranks do not fit");
  const int64_t *x = cmx_array_shape(in[0]), *w = cmx_array_shape(in[1]);
  out[0].ndim = nd;
  out[0].dims[0] = x[0];
  for (int i = 0; i < q->nsp; i++) {
    int64_t lv =
        (x[1 + i] - 1) * q->input_dilation[i] + 1 + q->pad_lo[i] + q->pad_hi[i];
    int64_t kv = (w[1 + i] - 1) * q->kernel_dilation[i] + 1;
    int64_t m = lv >= kv ? (lv - kv) / q->stride[i] + 1 : 0;
    out[0].dims[1 + i] = m;
  }
  out[0].dims[nd - 1] = w[0];
  return CMX_OK;
}

void cmx__conv_geom_fill(cmx__conv_geom* g, const cmx__conv_params* q,
                         const int64_t* x, const int64_t* w, const int64_t* y) {
  memset(g, 0, sizeof *g);
  int nsp = q->nsp;
  g->nsp = nsp;
  g->flip = q->flip;
  g->N = x[0];
  g->C = x[nsp + 1];
  g->O = y[nsp + 1];
  g->G = q->groups;
  g->Cg = g->C / g->G;
  g->Og = g->O / g->G;
  g->taps = 1;
  g->out_sp = 1;
  for (int d = 0; d < nsp; d++) {
    g->in[d] = x[d + 1];
    g->out[d] = y[d + 1];
    g->k[d] = w[d + 1];
    g->stride[d] = q->stride[d];
    g->lo[d] = q->pad_lo[d];
    g->hi[d] = q->pad_hi[d];
    g->kd[d] = q->kernel_dilation[d];
    g->id[d] = q->input_dilation[d];
    g->taps *= g->k[d];
    g->out_sp *= g->out[d];
  }
  g->rows = g->N * g->out_sp;
}

/* The spatial arrays are compared up to nsp (the rest is unused). */
static bool conv_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__conv_params *x = cmx_primitive_params(a),
                         *y = cmx_primitive_params(b);
  size_t n = (size_t)x->nsp * sizeof(int64_t);
  return x->nsp == y->nsp && x->groups == y->groups && x->flip == y->flip &&
         !memcmp(x->stride, y->stride, n) && !memcmp(x->pad_lo, y->pad_lo, n) &&
         !memcmp(x->pad_hi, y->pad_hi, n) &&
         !memcmp(x->kernel_dilation, y->kernel_dilation, n) &&
         !memcmp(x->input_dilation, y->input_dilation, n);
}
static uint64_t conv_hash(const cmx_primitive* p) {
  const cmx__conv_params* q = cmx_primitive_params(p);
  uint64_t h = cmx__hash_i64(cmx__hash_start(p), q->groups);
  h = cmx__hash_i64(h, q->flip);
  h = cmx__hash_i64s(h, q->stride, q->nsp);
  h = cmx__hash_i64s(h, q->pad_lo, q->nsp);
  h = cmx__hash_i64s(h, q->pad_hi, q->nsp);
  h = cmx__hash_i64s(h, q->kernel_dilation, q->nsp);
  return cmx__hash_i64s(h, q->input_dilation, q->nsp);
}

CMX__VTABLE(Convolution, .vjp = cmx__vjp_conv, .jvp = cmx__jvp_conv,
            .vmap = cmx__vmap_conv, .print = conv_print,
            .output_shapes = conv_shapes, .equal = conv_equal,
            .hash = conv_hash);
