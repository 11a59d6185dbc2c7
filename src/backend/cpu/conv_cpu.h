/* Internals shared by the CPU convolution files: conv.c (the kernel, the
 * gemm drivers and the depthwise path) and conv_unfold.c (im2col).
 *
 * The output (N, M_1..M_d, O) is a matrix of R = N * prod(M) rows and O
 * columns. Row r of the unfolded input holds, for each group g, the input
 * values under every kernel tap: [g][tap][channel of g], Kc = taps * Cg
 * values per group, in the compute type (float32 for the 16-bit floats,
 * float64 for float64). The drivers unfold blocks of rows and of taps at a
 * time (see cmx__conv_unfold) and multiply them by the weight.
 */
#ifndef CMX_BACKEND_CPU_CONV_CPU_H
#define CMX_BACKEND_CPU_CONV_CPU_H

#include "backend/cpu/cpu.h"
#include "primitives/conv.h"

enum { CMX__CV_F32, CMX__CV_F64, CMX__CV_F16, CMX__CV_BF16 };

/* One convolution, as the kernel files see it. The flip flag of the
 * primitive never reaches here: the kernel reverses the weight's taps
 * instead (flipping every spatial dim reverses the flat tap order). */
typedef struct cmx__conv_job {
  int kind;    /* CMX__CV_* of the output's storage dtype */
  int xkind;   /* CMX__CV_* of the values at x (the compute type when the
                  kernel packed the input) */
  int64_t esz; /* output storage element size */
  int64_t xsz; /* element size at x */
  int64_t csz; /* compute element size (4 or 8) */
  union {      /* the sizes (primitives/conv.h; flip unused here) */
    cmx__conv_geom geom;
    struct {
      CMX__CONV_GEOM_FIELDS
    };
  };
  int64_t KL, Kc, rowlen; /* KL = k[nsp - 1]; rowlen = G * Kc */
  const char* x;          /* input element 0 */
  int64_t xs_n, xs[CMX__CONV_MAX_SPATIAL], xs_c; /* input strides */
  bool span_copy;    /* a row's last-dim taps are one contiguous input
                        span (one group, unit steps, channels-last) */
  const int64_t* ab; /* per last-dim tap k: output positions [ab[2k],
                        ab[2k+1]) of a line that read inside the input */
} cmx__conv_job;

/* Loads n elements of kind `kind` (source stride st, in elements) into
 * the compute type at dst. */
static inline void cmx__conv_load(int kind, char* dst, const char* src,
                                  int64_t n, int64_t st) {
  switch (kind) {
    case CMX__CV_F32: {
      float* d = (float*)dst;
      const float* s = (const float*)src;
      if (st == 1)
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
      else
        for (int64_t i = 0; i < n; i++) d[i] = s[i * st];
      return;
    }
    case CMX__CV_F64: {
      double* d = (double*)dst;
      const double* s = (const double*)src;
      if (st == 1)
        for (int64_t i = 0; i < n; i++) d[i] = s[i];
      else
        for (int64_t i = 0; i < n; i++) d[i] = s[i * st];
      return;
    }
    case CMX__CV_F16: {
      float* d = (float*)dst;
      const uint16_t* s = (const uint16_t*)src;
      for (int64_t i = 0; i < n; i++) d[i] = cmx__h2f(s[i * st]);
      return;
    }
    default: {
      float* d = (float*)dst;
      const uint16_t* s = (const uint16_t*)src;
      for (int64_t i = 0; i < n; i++) d[i] = cmx__bf2f(s[i * st]);
      return;
    }
  }
}

/* floor(a / b) and ceil(a / b) for b > 0. */
static inline int64_t cmx__conv_floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline int64_t cmx__conv_ceil_div(int64_t a, int64_t b) {
  return -cmx__conv_floor_div(-a, b);
}

/* The input position that output position o reads through tap k along
 * spatial dim d (unflipped), or false when it falls on padding or on an
 * input dilation hole. */
static inline bool cmx__conv_src_index(const cmx__conv_job* j, int d, int64_t o,
                                       int64_t k, int64_t* i) {
  int64_t v = o * j->stride[d] + k * j->kd[d] - j->lo[d];
  if (v < 0) return false;
  if (j->id[d] != 1) {
    if (v % j->id[d] != 0) return false;
    v /= j->id[d];
  }
  if (v >= j->in[d]) return false;
  *i = v;
  return true;
}

/* A leading dimension >= n for rows of n compute elements (size csz)
 * written a column block at a time: a row size that is a multiple of 256
 * bytes puts the rows of a block into a few cache sets (at 4 KiB, all in
 * one, which thrashes L1), so such rows get a cache line of padding. */
static inline int64_t cmx__conv_pad_ld(int64_t n, int64_t csz) {
  return (n * csz) % 256 == 0 ? n + 64 / csz : n;
}

/* Rounds n float32 values to the 16-bit storage type `kind`. */
static inline void cmx__conv_narrow(int kind, uint16_t* d, const float* s,
                                    int64_t n) {
  if (kind == CMX__CV_F16)
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2h(s[i]);
  else
    for (int64_t i = 0; i < n; i++) d[i] = cmx__f2bf(s[i]);
}

/* Unfolds output rows [r0, r0 + cnt) (absolute) for the flat taps
 * [ta, tb) into dst, in the compute type: row i starts at dst + i * ld
 * compute elements, group g's block at column g * gw (gw >= (tb - ta) *
 * Cg), tap t at column (t - ta) * Cg within it. Padding and input
 * dilation holes read as zeros. Thread-safe (j is only read). */
void cmx__conv_unfold(const cmx__conv_job* j, int64_t r0, int64_t cnt,
                      int64_t ta, int64_t tb, char* dst, int64_t ld,
                      int64_t gw);

/* Whether the transposed unfolding below applies: one input channel read
 * in contiguous runs along the last spatial dim (one group, unit stride,
 * span layout) and short rows (Kc <= 64). */
bool cmx__conv_cols_applies(const cmx__conv_job* j);

/* Unfolds output rows [r0, r0 + cnt), all taps, transposed: the value of
 * row r and tap t at dst + (t * ldt + r - r0) compute elements (ldt >=
 * cnt). With one channel, row-major spans would be KL values each; down
 * the columns a line of the output is one contiguous input run per tap. */
void cmx__conv_unfold_cols(const cmx__conv_job* j, int64_t r0, int64_t cnt,
                           char* dst, int64_t ldt);

/* Whether a row's last-dim taps are one contiguous input span for j's
 * input layout and parameters (sets nothing). */
bool cmx__conv_span_applies(const cmx__conv_job* j);

/* Per last-dim tap k of j, the output positions [ab[2k], ab[2k+1]) of a
 * line whose input coordinate lies inside the (dilated) input: a new
 * array of 2 * KL values (free it), or NULL when memory runs out. */
int64_t* cmx__conv_ab_new(const cmx__conv_job* j);

/* A row-major copy, in the compute type (element size csz), of the nd-dim
 * strided array of kind `kind` (element size esz) at base with dims and
 * strides (elements, any sign): a new buffer (free it), or NULL when
 * memory runs out. Runs over cmx's pool. */
char* cmx__conv_pack(int kind, int64_t csz, int nd, const int64_t* dims,
                     const int64_t* st, const char* base, int64_t esz);

/* Threads for a product of `flops`: the pool's, or 1 when too small to be
 * worth splitting. */
int cmx__conv_threads(double flops);

/* ---- the products (each writes all of the output y, storage type) ---- */

/* im2col + gemm in tiles over j's rows; W: the weight as (O, Kc) in the
 * compute type (taps already reversed when flipped). pointwise: the input
 * rows (row-major, compute type) are the unfolded matrix. */
cmx_status cmx__conv_run_gemm(const cmx__conv_job* j, const char* W, char* y,
                              bool pointwise);

/* The weight-gradient orientation (G = 1, float32/float64): see
 * conv_wgrad.c. w: the weight's element 0, ws its strides (O, spatial...,
 * C order). True when it applies to j. */
bool cmx__conv_wgrad_applies(const cmx__conv_job* j);
cmx_status cmx__conv_run_wgrad(const cmx__conv_job* j, const char* w,
                               const int64_t* ws, char* y);

/* The scatter (col2im) form for stride-1 convolutions of a dilated or
 * padded input (input gradients, transposed convolutions): see
 * conv_scatter.c. W as for cmx__conv_run_gemm; x row-major. threads: the
 * pool's thread count. True when it applies and saves work. */
bool cmx__conv_scatter_applies(const cmx__conv_job* j, bool x_rowmajor,
                               int threads);
cmx_status cmx__conv_run_scatter(const cmx__conv_job* j, const char* W,
                                 char* y);

#endif
