/* Convolution ops: conv1d/2d/3d, conv_transpose1d/2d/3d, conv_general and
 * convolve, all one Convolution primitive (primitives/conv.h), as in MLX.
 * Checks and messages follow MLX's ("[conv] ..."); the output shape comes
 * from the dilated, padded input and the dilated kernel. */
#include "primitives/conv.h"

#include <limits.h>
#include <string.h>

#include "ops/ops_internal.h"

/* Formats n ints as "(a,b)" into buf. */
static const char* ints_str(const int64_t* v, int n, char* buf, size_t size) {
  return cmx__shape_str(v, n, buf, size);
}

/* MLX's run_conv_checks plus the spatial-rank check; nsp is the expected
 * number of spatial dims. */
static bool conv_checks(cmx_array in, cmx_array wt, int nsp, int groups) {
  char s1[256], s2[256];
  if (!cmx_dtype_is_floating(in->dtype)) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] Invalid input array with type %s. Convolution "
               "currently only supports floating point types",
               cmx_dtype_name(in->dtype));
    return false;
  }
  if (in->ndim != nsp + 2) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] Invalid input array with %d dimensions for %dD "
               "convolution. Expected an array with %d dimensions following "
               "the format [N, ..., C_in].",
               in->ndim, nsp, nsp + 2);
    return false;
  }
  if (wt->ndim != nsp + 2) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] Invalid weight array with %d dimensions for %dD "
               "convolution. Expected an array with %d dimensions following "
               "the format [C_out, ..., C_in].",
               wt->ndim, nsp, nsp + 2);
    return false;
  }
  if (groups < 1) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] The number of groups must be positive. Got %d.", groups);
    return false;
  }
  int64_t cin = in->dims[nsp + 1], cout = wt->dims[0];
  if (cin % groups != 0) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] The input channels must be divisible by the number of "
               "groups. Got input with shape %s and %d groups.",
               cmx__shape_str(in->dims, in->ndim, s1, sizeof s1), groups);
    return false;
  }
  if (groups > 1 && cout % groups != 0) {
    cmx__error(CMX_ERR_VALUE,
               "[conv] If groups > 1, the output channels must be divisible "
               "by the number of groups. Got %lld output channels and %d "
               "groups.",
               (long long)cout, groups);
    return false;
  }
  if (cin != groups * wt->dims[nsp + 1]) {
    if (groups == 1)
      cmx__error(CMX_ERR_VALUE,
                 "[conv] Expect the input channels in the input and weight "
                 "array to match but got shapes - input: %s and weight: %s",
                 cmx__shape_str(in->dims, in->ndim, s1, sizeof s1),
                 cmx__shape_str(wt->dims, wt->ndim, s2, sizeof s2));
    else
      cmx__error(CMX_ERR_VALUE,
                 "[conv] Given groups=%d and weights of shape %s, expected to "
                 "have %lld input channels but got %lld input channels "
                 "instead.",
                 groups, cmx__shape_str(wt->dims, wt->ndim, s2, sizeof s2),
                 (long long)(groups * wt->dims[nsp + 1]), (long long)cin);
    return false;
  }
  return true;
}

/* Expands a parameter list (n == 0: def for all, n == 1: broadcast, else
 * one per spatial dim) into out; false with MLX's message otherwise. */
static bool expand_param(const char* what, const int* v, int n, int nsp,
                         int def, int64_t* out) {
  if (n < 0 || (n > 0 && !v)) {
    cmx__error(CMX_ERR_VALUE, "[conv] Invalid %s: a NULL list of %d values.",
               what, n);
    return false;
  }
  if (n > 1 && n != nsp) {
    int64_t tmp[16];
    int m = n < 16 ? n : 16;
    for (int i = 0; i < m; i++) tmp[i] = v[i];
    char b[256];
    cmx__error(CMX_ERR_VALUE, "[conv] Invalid %s %s for %dD convolution.", what,
               ints_str(tmp, m, b, sizeof b), nsp);
    return false;
  }
  for (int i = 0; i < nsp; i++) out[i] = n == 0 ? def : v[n == 1 ? 0 : i];
  return true;
}

/* Validates a resolved parameter set against in and wt, writes the output
 * shape. Sizes are computed with overflow checks (dims are int64, the
 * parameters int). */
static bool conv_out_shape(cmx_array in, cmx_array wt,
                           const cmx__conv_params* q, int64_t* shape) {
  int nsp = q->nsp;
  char s1[256], s2[256], s3[256], s4[256];
  for (int d = 0; d < nsp; d++) {
    const char* bad = NULL;
    const int64_t* list = NULL;
    if (q->kernel_dilation[d] <= 0) {
      bad = "Kernel dilation sizes must be positive. Got kernel dilation";
      list = q->kernel_dilation;
    } else if (q->input_dilation[d] <= 0) {
      bad = "Input dilation sizes must be positive. Got input dilation";
      list = q->input_dilation;
    } else if (q->stride[d] <= 0) {
      bad = "Stride sizes must be positive. Got strides";
      list = q->stride;
    }
    if (bad) {
      cmx__error(CMX_ERR_VALUE, "[conv] %s %s.", bad,
                 ints_str(list, nsp, s1, sizeof s1));
      return false;
    }
  }
  shape[0] = in->dims[0];
  for (int d = 0; d < nsp; d++) {
    /* Virtual input length and dilated kernel extent; |values| stay far
     * below 2^62 unless a dim is absurd, which the overflow checks catch. */
    int64_t len, ext, span;
    bool ovf =
        __builtin_mul_overflow(in->dims[d + 1] - 1, q->input_dilation[d], &len);
    ovf |= __builtin_add_overflow(len, 1 + q->pad_lo[d] + q->pad_hi[d], &len);
    ovf |= __builtin_mul_overflow(wt->dims[d + 1] - 1, q->kernel_dilation[d],
                                  &ext);
    ovf |= __builtin_sub_overflow(len, ext + 1, &span);
    if (ovf) {
      cmx__error(CMX_ERR_VALUE,
                 "[conv] Spatial size overflows at axis %d for input with "
                 "shape %s.",
                 d + 1, cmx__shape_str(in->dims, in->ndim, s1, sizeof s1));
      return false;
    }
    if (span < 0) {
      cmx__error(CMX_ERR_VALUE,
                 "[conv] Spatial dimensions of input after padding cannot be "
                 "smaller than weight spatial dimensions. Got error at axis "
                 "%d for input with shape %s, padding low %s, padding high "
                 "%s, and weight of shape %s.",
                 d + 1, cmx__shape_str(in->dims, in->ndim, s1, sizeof s1),
                 ints_str(q->pad_lo, nsp, s2, sizeof s2),
                 ints_str(q->pad_hi, nsp, s3, sizeof s3),
                 cmx__shape_str(wt->dims, wt->ndim, s4, sizeof s4));
      return false;
    }
    shape[d + 1] = span / q->stride[d] + 1;
  }
  shape[nsp + 1] = wt->dims[0];
  return true;
}

/* The shared body: checks (nsp spatial dims expected), promotion, node. */
static cmx_array conv_node(cmx_array in, cmx_array wt, cmx__conv_params* q,
                           cmx_stream s) {
  if (!conv_checks(in, wt, q->nsp, q->groups)) return NULL;
  cmx_array iw[2] = {in, wt};
  cmx_dtype dt = cmx__result_type(iw, 2);
  if (!cmx_dtype_is_floating(dt))
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[conv] Invalid weight array with type %s for input of "
                     "type %s: the promoted type %s is not a real floating "
                     "point type.",
                     cmx_dtype_name(wt->dtype), cmx_dtype_name(in->dtype),
                     cmx_dtype_name(dt));
  int64_t shape[CMX__CONV_MAX_SPATIAL + 2];
  if (!conv_out_shape(in, wt, q, shape)) return NULL;
  cmx_array inputs[2] = {cmx__as_dtype(in, dt, s), cmx__as_dtype(wt, dt, s)};
  return cmx__apply(&cmx__vt_Convolution, q, sizeof *q, s, inputs, 2, shape,
                    q->nsp + 2, dt);
}

/* Parameters of convNd / conv_transposeNd from per-dim int lists. */
static void init_params(cmx__conv_params* q, int nsp, int groups) {
  memset(q, 0, sizeof *q);
  q->nsp = nsp;
  q->groups = groups;
}

/* convNd with symmetric padding. */
static cmx_array conv_nd(cmx_array in, cmx_array wt, int nsp, const int* stride,
                         const int* padding, const int* dilation, int groups,
                         cmx_stream s) {
  if (!CMX__ARGS("conv", in, wt)) return NULL;
  cmx__conv_params q;
  init_params(&q, nsp, groups);
  for (int d = 0; d < nsp; d++) {
    q.stride[d] = stride[d];
    q.pad_lo[d] = q.pad_hi[d] = padding[d];
    q.kernel_dilation[d] = dilation[d];
    q.input_dilation[d] = 1;
  }
  return conv_node(in, wt, &q, s);
}

/* conv_transposeNd as MLX's conv_transpose_general: input dilated by the
 * stride, the kernel flipped, padded by dilation * (K - 1) - padding on
 * both sides plus output_padding on the high side. */
static cmx_array conv_transpose_nd(cmx_array in, cmx_array wt, int nsp,
                                   const int* stride, const int* padding,
                                   const int* dilation,
                                   const int* output_padding, int groups,
                                   cmx_stream s) {
  if (!CMX__ARGS("conv", in, wt)) return NULL;
  /* The weight's kernel sizes are read below, so check ranks first. */
  if (!conv_checks(in, wt, nsp, groups)) return NULL;
  cmx__conv_params q;
  init_params(&q, nsp, groups);
  q.flip = 1;
  for (int d = 0; d < nsp; d++) {
    /* The stride becomes the input dilation: report it as a stride. */
    const int* bad = dilation[d] <= 0 ? dilation
                     : stride[d] <= 0 ? stride
                                      : NULL;
    if (bad) {
      int64_t v[CMX__CONV_MAX_SPATIAL];
      for (int i = 0; i < nsp; i++) v[i] = bad[i];
      char b[128];
      return CMX__FAIL(CMX_ERR_VALUE, "[conv] %s %s.",
                       bad == stride
                           ? "Stride sizes must be positive. Got strides"
                           : "Kernel dilation sizes must be positive. Got "
                             "kernel dilation",
                       ints_str(v, nsp, b, sizeof b));
    }
    int64_t ext;
    if (__builtin_mul_overflow(wt->dims[d + 1] - 1, (int64_t)dilation[d], &ext))
      return CMX__FAIL(CMX_ERR_VALUE, "[conv] Kernel extent overflows.");
    q.stride[d] = 1;
    q.pad_lo[d] = ext - padding[d];
    q.pad_hi[d] = ext - padding[d] + output_padding[d];
    q.kernel_dilation[d] = dilation[d];
    q.input_dilation[d] = stride[d];
  }
  return conv_node(in, wt, &q, s);
}

cmx_array cmx__conv_general(cmx_array in, cmx_array wt, const int* stride,
                            int nstride, const int* padding_lo, int npadding_lo,
                            const int* padding_hi, int npadding_hi,
                            const int* kernel_dilation, int nkernel_dilation,
                            const int* input_dilation, int ninput_dilation,
                            int groups, bool flip, cmx_stream s) {
  if (!CMX__ARGS("conv", in, wt)) return NULL;
  int nsp = in->ndim - 2;
  if (nsp < 1 || nsp > CMX__CONV_MAX_SPATIAL)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[conv] Only works for inputs with 1-3 spatial "
                     "dimensions. The inputs must be in the format "
                     "[N, ..., C_in]");
  cmx__conv_params q;
  init_params(&q, nsp, groups);
  q.flip = flip ? 1 : 0;
  if (!expand_param("strides", stride, nstride, nsp, 1, q.stride) ||
      !expand_param("padding", padding_lo, npadding_lo, nsp, 0, q.pad_lo) ||
      !expand_param("padding", padding_hi, npadding_hi, nsp, 0, q.pad_hi) ||
      !expand_param("kernel dilation", kernel_dilation, nkernel_dilation, nsp,
                    1, q.kernel_dilation) ||
      !expand_param("input dilation", input_dilation, ninput_dilation, nsp, 1,
                    q.input_dilation))
    return NULL;
  return conv_node(in, wt, &q, s);
}

cmx_array cmx__conv1d(cmx_array in, cmx_array wt, int stride, int padding,
                      int dilation, int groups, cmx_stream s) {
  return conv_nd(in, wt, 1, &stride, &padding, &dilation, groups, s);
}

cmx_array cmx__conv2d(cmx_array in, cmx_array wt, int stride_0, int stride_1,
                      int padding_0, int padding_1, int dilation_0,
                      int dilation_1, int groups, cmx_stream s) {
  int st[2] = {stride_0, stride_1}, pd[2] = {padding_0, padding_1};
  int dl[2] = {dilation_0, dilation_1};
  return conv_nd(in, wt, 2, st, pd, dl, groups, s);
}

cmx_array cmx__conv3d(cmx_array in, cmx_array wt, int stride_0, int stride_1,
                      int stride_2, int padding_0, int padding_1, int padding_2,
                      int dilation_0, int dilation_1, int dilation_2,
                      int groups, cmx_stream s) {
  int st[3] = {stride_0, stride_1, stride_2};
  int pd[3] = {padding_0, padding_1, padding_2};
  int dl[3] = {dilation_0, dilation_1, dilation_2};
  return conv_nd(in, wt, 3, st, pd, dl, groups, s);
}

cmx_array cmx__conv_transpose1d(cmx_array in, cmx_array wt, int stride,
                                int padding, int dilation, int output_padding,
                                int groups, cmx_stream s) {
  return conv_transpose_nd(in, wt, 1, &stride, &padding, &dilation,
                           &output_padding, groups, s);
}

cmx_array cmx__conv_transpose2d(cmx_array in, cmx_array wt, int stride_0,
                                int stride_1, int padding_0, int padding_1,
                                int dilation_0, int dilation_1,
                                int output_padding_0, int output_padding_1,
                                int groups, cmx_stream s) {
  int st[2] = {stride_0, stride_1}, pd[2] = {padding_0, padding_1};
  int dl[2] = {dilation_0, dilation_1};
  int op[2] = {output_padding_0, output_padding_1};
  return conv_transpose_nd(in, wt, 2, st, pd, dl, op, groups, s);
}

cmx_array cmx__conv_transpose3d(cmx_array in, cmx_array wt, int stride_0,
                                int stride_1, int stride_2, int padding_0,
                                int padding_1, int padding_2, int dilation_0,
                                int dilation_1, int dilation_2,
                                int output_padding_0, int output_padding_1,
                                int output_padding_2, int groups,
                                cmx_stream s) {
  int st[3] = {stride_0, stride_1, stride_2};
  int pd[3] = {padding_0, padding_1, padding_2};
  int dl[3] = {dilation_0, dilation_1, dilation_2};
  int op[3] = {output_padding_0, output_padding_1, output_padding_2};
  return conv_transpose_nd(in, wt, 3, st, pd, dl, op, groups, s);
}

/* numpy.convolve through the primitive: the longer array is the signal
 * (1, N, 1), the shorter the kernel (1, M, 1), flipped; "same" pads
 * M / 2 before and (M - 1) / 2 after, which centres the output on the full
 * result as NumPy does (and MLX, which flips by slicing). */
cmx_array cmx__convolve(cmx_array a, cmx_array v, cmx_convolve_mode mode,
                        cmx_stream s) {
  if (!CMX__ARGS("convolve", a, v)) return NULL;
  if (a->ndim != 1 || v->ndim != 1)
    return CMX__FAIL(CMX_ERR_VALUE, "[convolve] Inputs must be 1D.");
  if (a->size == 0 || v->size == 0)
    return CMX__FAIL(CMX_ERR_VALUE, "[convolve] Inputs cannot be empty.");
  cmx_array sig = a->size < v->size ? v : a;
  cmx_array ker = a->size < v->size ? a : v;
  int64_t n = sig->size, m = ker->size, lo, hi;
  switch (mode) {
    case CMX_CONVOLVE_FULL:
      lo = hi = m - 1;
      break;
    case CMX_CONVOLVE_VALID:
      lo = hi = 0;
      break;
    case CMX_CONVOLVE_SAME:
      lo = m / 2;
      hi = (m - 1) / 2;
      break;
    default:
      return CMX__FAIL(CMX_ERR_VALUE, "[convolve] Invalid mode.");
  }
  int64_t sig_shape[3] = {1, n, 1}, ker_shape[3] = {1, m, 1};
  cmx_array x = cmx__reshape(sig, sig_shape, 3, s);
  cmx_array w = cmx__reshape(ker, ker_shape, 3, s);
  if (!x || !w) return NULL;
  cmx__conv_params q;
  init_params(&q, 1, 1);
  q.flip = 1;
  q.stride[0] = q.kernel_dilation[0] = q.input_dilation[0] = 1;
  q.pad_lo[0] = lo;
  q.pad_hi[0] = hi;
  cmx_array y = conv_node(x, w, &q, s);
  if (!y) return NULL;
  int64_t len = y->dims[1];
  return cmx__reshape(y, &len, 1, s);
}

/* ---------------- public wrappers ---------------- */
cmx_status cmx_conv1d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride, int padding, int dilation, int groups,
                      cmx_stream s) {
  CMX__PUBLIC(out, "conv1d",
              cmx__conv1d(input, weight, stride, padding, dilation, groups, s));
}

cmx_status cmx_conv2d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride_0, int stride_1, int padding_0, int padding_1,
                      int dilation_0, int dilation_1, int groups,
                      cmx_stream s) {
  CMX__PUBLIC(out, "conv2d",
              cmx__conv2d(input, weight, stride_0, stride_1, padding_0,
                          padding_1, dilation_0, dilation_1, groups, s));
}

cmx_status cmx_conv3d(cmx_array* out, cmx_array input, cmx_array weight,
                      int stride_0, int stride_1, int stride_2, int padding_0,
                      int padding_1, int padding_2, int dilation_0,
                      int dilation_1, int dilation_2, int groups,
                      cmx_stream s) {
  CMX__PUBLIC(out, "conv3d",
              cmx__conv3d(input, weight, stride_0, stride_1, stride_2,
                          padding_0, padding_1, padding_2, dilation_0,
                          dilation_1, dilation_2, groups, s));
}

cmx_status cmx_conv_transpose1d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride, int padding,
                                int dilation, int output_padding, int groups,
                                cmx_stream s) {
  CMX__PUBLIC(out, "conv_transpose1d",
              cmx__conv_transpose1d(input, weight, stride, padding, dilation,
                                    output_padding, groups, s));
}

cmx_status cmx_conv_transpose2d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride_0, int stride_1,
                                int padding_0, int padding_1, int dilation_0,
                                int dilation_1, int output_padding_0,
                                int output_padding_1, int groups,
                                cmx_stream s) {
  CMX__PUBLIC(
      out, "conv_transpose2d",
      cmx__conv_transpose2d(input, weight, stride_0, stride_1, padding_0,
                            padding_1, dilation_0, dilation_1, output_padding_0,
                            output_padding_1, groups, s));
}

cmx_status cmx_conv_transpose3d(cmx_array* out, cmx_array input,
                                cmx_array weight, int stride_0, int stride_1,
                                int stride_2, int padding_0, int padding_1,
                                int padding_2, int dilation_0, int dilation_1,
                                int dilation_2, int output_padding_0,
                                int output_padding_1, int output_padding_2,
                                int groups, cmx_stream s) {
  CMX__PUBLIC(
      out, "conv_transpose3d",
      cmx__conv_transpose3d(input, weight, stride_0, stride_1, stride_2,
                            padding_0, padding_1, padding_2, dilation_0,
                            dilation_1, dilation_2, output_padding_0,
                            output_padding_1, output_padding_2, groups, s));
}

cmx_status cmx_conv_general(cmx_array* out, cmx_array input, cmx_array weight,
                            const int* stride, int nstride,
                            const int* padding_lo, int npadding_lo,
                            const int* padding_hi, int npadding_hi,
                            const int* kernel_dilation, int nkernel_dilation,
                            const int* input_dilation, int ninput_dilation,
                            int groups, bool flip, cmx_stream s) {
  CMX__PUBLIC(out, "conv_general",
              cmx__conv_general(
                  input, weight, stride, nstride, padding_lo, npadding_lo,
                  padding_hi, npadding_hi, kernel_dilation, nkernel_dilation,
                  input_dilation, ninput_dilation, groups, flip, s));
}

cmx_status cmx_convolve(cmx_array* out, cmx_array a, cmx_array v,
                        cmx_convolve_mode mode, cmx_stream s) {
  CMX__PUBLIC(out, "convolve", cmx__convolve(a, v, mode, s));
}
