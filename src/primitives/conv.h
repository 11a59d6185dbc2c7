/* Parameters of the Convolution primitive, shared by the op layer, the
 * vtable and the kernels.
 *
 * Convolution: inputs x (N, L_1..L_d, C) and w (O, K_1..K_d, C / groups),
 * both of the output's dtype, any strides; output (N, M_1..M_d, O). Per
 * spatial dim, x is dilated (input_dilation - 1 zeros between elements:
 * virtual position j holds x[j / id] when id divides j), then padded with
 * pad_lo / pad_hi zeros (negative values crop), and
 *   out[n, m, o] = sum_{k, c} xv[n, m * stride + k * kernel_dilation, c']
 *                             * w[o, flip ? K - 1 - k : k, c]
 * with c' = g * C / groups + c for output channel o in group g
 * (o / (O / groups)), xv the dilated padded input (coordinates shifted by
 * pad_lo). M = (L_virtual - ((K - 1) * kernel_dilation + 1)) / stride + 1
 * where L_virtual = (L - 1) * input_dilation + 1 + pad_lo + pad_hi; the op
 * layer guarantees M >= 1 (or an empty batch). All of MLX's convolutions
 * are this primitive (conv_transpose: input_dilation = stride, flip). */
#ifndef CMX_PRIMITIVES_CONV_H
#define CMX_PRIMITIVES_CONV_H

#include <stdint.h>

#define CMX__CONV_MAX_SPATIAL 3

/* Fully initialised (memset) before use: compile compares the bytes. */
typedef struct cmx__conv_params {
  int32_t nsp;    /* spatial dims, 1..CMX__CONV_MAX_SPATIAL */
  int32_t groups; /* >= 1, divides C and O */
  int32_t flip;   /* 0 or 1 */
  int32_t unused; /* keeps the layout free of padding bytes */
  int64_t stride[CMX__CONV_MAX_SPATIAL];
  int64_t pad_lo[CMX__CONV_MAX_SPATIAL];
  int64_t pad_hi[CMX__CONV_MAX_SPATIAL];
  int64_t kernel_dilation[CMX__CONV_MAX_SPATIAL];
  int64_t input_dilation[CMX__CONV_MAX_SPATIAL];
} cmx__conv_params;

/* The sizes of one convolution as the backends' kernels see them: the
 * fields of a cmx__conv_geom, which the kernels' job structs hold in a
 * union with one (a whole to fill, fields to read):
 *   union { cmx__conv_geom geom; struct { CMX__CONV_GEOM_FIELDS }; };
 * N batch, C / O input / output channels, G groups, Cg / Og channels a
 * group; per spatial dim: in (L) and out (M) lengths, k kernel length,
 * stride, lo / hi padding, kd / id kernel / input dilation; taps =
 * prod(k), out_sp = prod(M), rows = N * out_sp (the output's rows). */
#define CMX__CONV_GEOM_FIELDS                                      \
  int nsp, flip;                                                   \
  int64_t N, C, O, G, Cg, Og;                                      \
  int64_t in[CMX__CONV_MAX_SPATIAL], out[CMX__CONV_MAX_SPATIAL];   \
  int64_t k[CMX__CONV_MAX_SPATIAL], stride[CMX__CONV_MAX_SPATIAL]; \
  int64_t lo[CMX__CONV_MAX_SPATIAL], hi[CMX__CONV_MAX_SPATIAL];    \
  int64_t kd[CMX__CONV_MAX_SPATIAL], id[CMX__CONV_MAX_SPATIAL];    \
  int64_t taps, out_sp, rows;
typedef struct cmx__conv_geom {
  CMX__CONV_GEOM_FIELDS
} cmx__conv_geom;

/* Fills g for the convolution q of an input of dims x and a weight of
 * dims w into an output of dims y (nsp + 2 dims each, the primitive's
 * layouts). */
void cmx__conv_geom_fill(cmx__conv_geom* g, const cmx__conv_params* q,
                         const int64_t* x, const int64_t* w, const int64_t* y);

#endif
