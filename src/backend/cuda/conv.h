/* Internals shared by the GPU convolution (conv.c: preparation and cmx's
 * own unfold + product path) and its cuDNN path (cudnn.c). */
#ifndef CMX_BACKEND_CUDA_CONV_H
#define CMX_BACKEND_CUDA_CONV_H

#include "backend/cuda/gpu.h"
#include "primitives/conv.h"

/* One convolution as the paths see it (primitives/conv.h's notation):
 * x (N, in..., C), w (O, k..., Cg), y (N, out..., O) row-major. */
typedef struct cmx__gpu_conv {
  int dev;
  cmx_dtype dt;
  union { /* the sizes (primitives/conv.h) */
    cmx__conv_geom geom;
    struct {
      CMX__CONV_GEOM_FIELDS
    };
  };
  CUdeviceptr x, w, y;
  /* x's element strides (batch, spatial, channel); x_rowmajor when they
   * are row-major. */
  int64_t xs_n, xs[CMX__CONV_MAX_SPATIAL], xs_c;
  bool x_rowmajor;
  /* w's element strides (out channel, spatial, in channel); w_rowmajor
   * when they are row-major. */
  int64_t ws_o, ws[CMX__CONV_MAX_SPATIAL], ws_c;
  bool w_rowmajor;
} cmx__gpu_conv;

/* Runs c through cuDNN when it is loadable and takes the case: *done
 * true when the output was computed (encoded on the task's stream).
 * Needs w row-major (wgrad false) or, for the weight-gradient form
 * (wgrad true: cudnnConvolutionBackwardFilter on the input and weight
 * read as the original input and output cotangent, see cudnn.c), any
 * strides. A case cuDNN does not take returns CMX_OK with *done false; a
 * failure of cuDNN itself returns its status with the error set (conv.c
 * clears it and computes the case on its own path). */
cmx_status cmx__cudnn_conv(const cmx__gpu_conv* c, bool wgrad, bool* done);

/* Whether cuDNN could be loaded; otherwise *why (if given) says why. */
bool cmx__cudnn_available(const char** why);

/* How many convolutions each path computed (for tests). */
typedef struct cmx__gpu_conv_stats {
  uint64_t cudnn, own;
} cmx__gpu_conv_stats;
cmx__gpu_conv_stats cmx__gpu_conv_stats_get(void);

#endif
