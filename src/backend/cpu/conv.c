/* CPU kernel of the Convolution primitive: preparation and the choice of
 * product.
 *
 * The output is a matrix of R rows (output positions) and O columns, the
 * product of the unfolded input and the weight (conv_cpu.h). Dilation,
 * padding and input dilation only change which input element (or zero) a
 * tap reads, so every convolution, transposed ones and the gradient-shaped
 * ones included, is one such product; the kernel computes it in the form
 * that does the least work for the parameters and layouts at hand:
 *   depthwise (one channel per group): a direct multiply-add over the
 *       channels, no BLAS (run_depthwise below);
 *   weight-gradient orientation: the input's batch dim is its unit-stride
 *       one (the vjp passes the input with batch and channels swapped):
 *       the product is taken in the forward convolution's orientation,
 *       with both operands read in place (conv_wgrad.c);
 *   scatter (col2im): stride 1 over a dilated or padded input (input
 *       gradients, transposed convolutions): each real input row times
 *       the weight, scattered into the outputs it reaches, skipping the
 *       padding and dilation zeros the gather form would multiply
 *       (conv_scatter.c);
 *   gather (im2col + gemm in tiles): everything else (conv_gemm.c); a 1x1
 *       kernel with stride 1 and no padding skips the unfolding.
 *
 * Preparation: the weight is packed to (O, Kc) in the compute type when it
 * is 16-bit, strided or flipped (flipping every spatial dim is reversing
 * the flat tap order, so no product ever flips). The input is packed to
 * row-major compute-type values when it is 16-bit (converted once, not
 * once per tap) or laid out so that a row's channels are not contiguous
 * (unless the weight-gradient orientation reads it in place).
 */
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "backend/cpu/conv_cpu.h"
#include "backend/cpu/kernels.h"

/* Products below this many flops run on the calling thread. */
#define PAR_FLOPS 2e6
/* Values a pool task should compute to outweigh the hand-off. */
#define FILL_GRAIN 16384

int cmx__conv_threads(double flops) {
  return flops < PAR_FLOPS ? 1 : cmx__pool_threads();
}

static cmx_status oom(void) {
  return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
}

/* Reverses the flat tap order of every output channel's weights in a
 * packed (O, taps, Cg) weight: the flipped kernel. */
static void reverse_taps(const cmx__conv_job* j, char* w) {
  const int64_t blk = j->Cg * j->csz;
  char tmp[64];
  for (int64_t o = 0; o < j->O; o++) {
    char* wo = w + o * j->Kc * j->csz;
    for (int64_t t = 0; t < j->taps / 2; t++) {
      char* a = wo + t * blk;
      char* b = wo + (j->taps - 1 - t) * blk;
      for (int64_t i = 0; i < blk; i += (int64_t)sizeof tmp) {
        size_t n =
            (size_t)(blk - i < (int64_t)sizeof tmp ? blk - i
                                                   : (int64_t)sizeof tmp);
        memcpy(tmp, a + i, n);
        memcpy(a + i, b + i, n);
        memcpy(b + i, tmp, n);
      }
    }
  }
}

/* ---- depthwise convolutions: a direct product ----
 * With one input and one output channel per group (groups == C_in ==
 * C_out), im2col + gemm degenerates into G products with one column each,
 * far too thin for BLAS. Instead every output row accumulates, tap by
 * tap, the input row under the tap times that tap's weights: a
 * multiply-add over all channels at once, read straight from the input
 * (no unfolded copy). */
typedef struct {
  const cmx__conv_job* j;
  const char* wt; /* weight [tap][c] in the compute type */
  char* y;        /* output, row-major (rows, C) */
  _Atomic int failed;
} dw_job;

/* acc[c] += xr[c] * wr[c] over the channels, xr in the compute type. */
#define DEFINE_DW_ROW(T, NAME)                               \
  static void NAME(T* restrict acc, const T* restrict xr,    \
                   const T* restrict wr, int64_t C) {        \
    for (int64_t c = 0; c < C; c++) acc[c] += xr[c] * wr[c]; \
  }
DEFINE_DW_ROW(float, dw_row_f32)
DEFINE_DW_ROW(double, dw_row_f64)

/* Pool task: output rows [b, e). */
static void dw_task(void* ctx, int64_t b, int64_t e) {
  dw_job* d = ctx;
  const cmx__conv_job* j = d->j;
  const int nsp = j->nsp;
  const int64_t C = j->C, csz = j->csz;
  const bool half = j->kind == CMX__CV_F16 || j->kind == CMX__CV_BF16;
  /* Reads in place when the channels are contiguous in the compute type;
   * otherwise each input row is converted into tmp first. */
  const bool direct =
      (j->xkind == CMX__CV_F32 || j->xkind == CMX__CV_F64) && j->xs_c == 1;
  char* acc = malloc((size_t)(2 * C * csz));
  if (!acc) {
    atomic_store(&d->failed, 1);
    return;
  }
  char* tmp = acc + C * csz;
  for (int64_t r = b; r < e; r++) {
    int64_t o[CMX__CONV_MAX_SPATIAL], k[CMX__CONV_MAX_SPATIAL] = {0};
    int64_t rem = r % j->out_sp, n = r / j->out_sp;
    for (int dd = nsp - 1; dd >= 0; dd--) {
      o[dd] = rem % j->out[dd];
      rem /= j->out[dd];
    }
    /* float32/float64 rows accumulate in the output itself. */
    char* yr = d->y + r * C * j->esz;
    char* ar = half ? acc : yr;
    memset(ar, 0, (size_t)(C * csz));
    for (int64_t t = 0; t < j->taps; t++) {
      int64_t off = n * j->xs_n;
      bool valid = true;
      for (int dd = 0; dd < nsp && valid; dd++) {
        int64_t i;
        valid = cmx__conv_src_index(j, dd, o[dd], k[dd], &i);
        if (valid) off += i * j->xs[dd];
      }
      if (valid) {
        const char* xr = j->x + off * j->xsz;
        if (!direct) {
          cmx__conv_load(j->xkind, tmp, xr, C, j->xs_c);
          xr = tmp;
        }
        if (j->kind == CMX__CV_F64)
          dw_row_f64((double*)ar, (const double*)xr,
                     (const double*)d->wt + t * C, C);
        else
          dw_row_f32((float*)ar, (const float*)xr, (const float*)d->wt + t * C,
                     C);
      }
      for (int dd = nsp - 1; dd >= 0; dd--) {
        if (++k[dd] < j->k[dd]) break;
        k[dd] = 0;
      }
    }
    if (half) cmx__conv_narrow(j->kind, (uint16_t*)yr, (const float*)acc, C);
  }
  free(acc);
}

/* The depthwise path over all rows; W is the weight (C, taps) in the
 * compute type. */
static cmx_status run_depthwise(const cmx__conv_job* j, const char* W,
                                char* y) {
  dw_job d;
  memset(&d, 0, sizeof d);
  d.j = j;
  d.y = y;
  char* wt = malloc((size_t)(j->C * j->taps * j->csz));
  if (!wt) return oom();
  for (int64_t c = 0; c < j->C; c++) /* transpose to [tap][c] */
    for (int64_t t = 0; t < j->taps; t++)
      memcpy(wt + (t * j->C + c) * j->csz, W + (c * j->taps + t) * j->csz,
             (size_t)j->csz);
  d.wt = wt;
  int64_t grain = FILL_GRAIN / (j->taps * j->C);
  if (grain < 1) grain = 1;
  cmx__parallel_for(j->rows, grain, dw_task, &d);
  free(wt);
  return atomic_load(&d.failed) ? oom() : CMX_OK;
}

/* Depthwise: one input and one output channel per group. */
static bool is_depthwise(const cmx__conv_job* j) {
  return j->G > 1 && j->Cg == 1 && j->Og == 1;
}

/* True when the convolution is a plain matrix product of the input rows:
 * 1x1 kernel, stride 1, no padding or input dilation, input row-major in
 * the compute type. */
static bool is_pointwise(const cmx__conv_job* j, const cmx__conv_params* q,
                         bool x_rowmajor) {
  if (j->xkind != CMX__CV_F32 && j->xkind != CMX__CV_F64) return false;
  if (!x_rowmajor) return false;
  for (int d = 0; d < j->nsp; d++)
    if (j->k[d] != 1 || q->stride[d] != 1 || q->pad_lo[d] != 0 ||
        q->pad_hi[d] != 0 || q->input_dilation[d] != 1)
      return false;
  return true;
}

/* Sets the input fields of j (strides in elements). */
static void set_input(cmx__conv_job* j, const char* base, const int64_t* xs,
                      int64_t xs_n, int64_t xs_c) {
  j->x = base;
  j->xs_n = xs_n;
  j->xs_c = xs_c;
  for (int d = 0; d < j->nsp; d++) j->xs[d] = xs[d];
}

/* A row-major compute-type copy of array a, or NULL (out of memory). */
static char* pack_array(const cmx__conv_job* j, cmx_array a) {
  return cmx__conv_pack(j->kind, j->csz, a->ndim, a->dims, CMX__STRIDES(a),
                        cmx__node_ptr(a), j->esz);
}

CMX__KERNEL(cmx__cpu_conv) {
  (void)nin;
  (void)nout;
  const cmx__conv_params* q = cmx_primitive_params(p);
  cmx_array x = in[0], w = in[1], y = out[0];
  cmx_dtype dt = y->dtype;
  if (!cmx_dtype_is_floating(dt) || x->dtype != dt || w->dtype != dt)
    return cmx_kernel_error(CMX_ERR_TYPE, "[conv] unsupported dtype %s",
                            cmx_dtype_name(dt));
  cmx_status st = cmx_kernel_alloc(y);
  if (st != CMX_OK || y->size == 0) return st;

  cmx__conv_job j;
  memset(&j, 0, sizeof j);
  j.kind = dt == CMX_FLOAT32   ? CMX__CV_F32
           : dt == CMX_FLOAT64 ? CMX__CV_F64
           : dt == CMX_FLOAT16 ? CMX__CV_F16
                               : CMX__CV_BF16;
  j.xkind = j.kind;
  j.esz = j.xsz = (int64_t)cmx_dtype_size(dt);
  j.csz = j.kind == CMX__CV_F64 ? 8 : 4;
  const int ckind = j.kind == CMX__CV_F64 ? CMX__CV_F64 : CMX__CV_F32;
  cmx__conv_geom_fill(&j.geom, q, x->dims, w->dims, y->dims);
  const int64_t* xs = CMX__STRIDES(x);
  j.KL = j.k[j.nsp - 1];
  j.Kc = j.taps * j.Cg;
  j.rowlen = j.G * j.Kc;
  set_input(&j, cmx__node_ptr(x), xs + 1, xs[0], xs[x->ndim - 1]);
  char* yp = cmx__node_ptr(y);
  if (j.Kc == 0 || x->size == 0) { /* no terms: every sum is empty */
    memset(yp, 0, (size_t)(y->size * j.esz));
    return CMX_OK;
  }
  if (j.rowlen > INT_MAX || j.O > INT_MAX || j.C > INT_MAX)
    return cmx_kernel_error(CMX_ERR_VALUE,
                            "[conv] matrix dimensions exceed the BLAS limit "
                            "(2^31 - 1).");

  if (!q->flip && cmx__conv_wgrad_applies(&j))
    return cmx__conv_run_wgrad(&j, cmx__node_ptr(w), CMX__STRIDES(w), yp);

  /* The weight as (O, Kc) row-major in the compute type, taps reversed
   * for a flipped kernel. */
  char* wpack = NULL;
  const char* W = cmx__node_ptr(w);
  if (j.kind != ckind || !(w->flags & CMX__FLAG_ROW_CONTIG) || q->flip) {
    wpack = pack_array(&j, w);
    if (!wpack) return oom();
    if (q->flip) reverse_taps(&j, wpack);
    W = wpack;
  }
  /* The input row-major in the compute type when it is 16-bit or its
   * channels (or adjacent positions) are not contiguous. */
  const int L = j.nsp - 1;
  bool x_rowmajor = (x->flags & CMX__FLAG_ROW_CONTIG) != 0;
  bool layout_ok = x_rowmajor || ((j.xs_c == 1 || j.C == 1) && j.xs[L] == j.C);
  char* xpack = NULL;
  if (j.kind != ckind || !layout_ok) {
    xpack = pack_array(&j, x);
    if (!xpack) {
      free(wpack);
      return oom();
    }
    int64_t s[CMX__CONV_MAX_SPATIAL], acc = j.C;
    for (int d = j.nsp - 1; d >= 0; d--) {
      s[d] = acc;
      acc *= j.in[d];
    }
    set_input(&j, xpack, s, acc, 1);
    j.xkind = ckind;
    j.xsz = j.csz;
    x_rowmajor = true;
  }

  cmx_status rc;
  bool pointwise = is_pointwise(&j, q, x_rowmajor);
  j.span_copy = cmx__conv_span_applies(&j);
  int64_t* ab = pointwise ? NULL : cmx__conv_ab_new(&j);
  j.ab = ab;
  if (!pointwise && !ab)
    rc = oom();
  else if (is_depthwise(&j))
    rc = run_depthwise(&j, W, yp);
  else if (cmx__conv_scatter_applies(&j, x_rowmajor, cmx__pool_threads()))
    rc = cmx__conv_run_scatter(&j, W, yp);
  else
    rc = cmx__conv_run_gemm(&j, W, yp, pointwise);
  free(ab);
  free(xpack);
  free(wpack);
  return rc;
}
