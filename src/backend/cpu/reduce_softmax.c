/* Fused row kernels: LogSumExp, Softmax and Var (variance / standard
 * deviation). Their inputs are floating (the op layer converts integers).
 *
 * Each works on rows: the reduced axes as the trailing contiguous dims.
 * When the input is not laid out so, it is first copied with those axes
 * moved last (Softmax then copies its result back through a permuted view
 * of the output). float16/bfloat16/float32 compute in float32 (exp by
 * exp_nonpos, sums of exponentials in float lanes per batch of 256, the
 * batches in double); float64 in double with the C library's exp.
 *   logsumexp: m = max; m + log(sum(exp(x - m))), and m itself when m is
 *              infinite (an all -inf row gives -inf, not NaN) or NaN.
 *   softmax:   exp(x - m) / sum(exp(x - m)); a row of all -inf gives NaN,
 *              as MLX and NumPy.
 *   var:       two passes (mean, then the sum of squared deviations d,
 *              less (sum d)^2 / n which cancels the rounding error of
 *              the mean), divided by max(n - ddof, 0): n <= ddof gives inf, or
 * NaN for a zero sum, as NumPy; a NaN or infinite element gives NaN. Complex
 * inputs follow MLX: the mean of (x - mean)^2 with the complex square.
 */
/* The compiler may assume float operations do not trap (cmx never enables
 * floating-point exceptions): that lets the branch-free selects below
 * vectorise. Values are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <complex.h>
#include <stdlib.h>

#include "backend/cpu/kernels.h"
#include "backend/cpu/reduce.h"
#include "primitives/reduce.h"

typedef void (*lse_fn)(void* out, const void* x, int64_t n);
typedef void (*softmax_fn)(void* y, const void* x, int64_t n);
typedef void (*var_fn)(void* out, const void* x, int64_t n, int ddof, bool sq);

/* A NaN in b replaces a; a NaN in a stays. Written without short-circuit
 * operators so the lane loops vectorise. */
#define MAXF(a, b) ((((b) > (a)) | ((b) != (b))) ? (b) : (a))
#define LANES 16
#define CHUNK 256 /* exponentials computed per batch, summed in lanes */

/* exp(x) for x <= 0 (or NaN) in float32 arithmetic, branch-free so that
 * loops over it vectorise; softmax and logsumexp only take exponentials of
 * x - max. x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor polynomial
 * to degree 7 (truncation below 0.05 ulp), times 2^n built in the exponent
 * bits: within 1.2 ulp of the exact value. Results below the smallest
 * normal float (x < -87.34) flush to 0; NaN stays NaN. */
static inline float exp_nonpos(float x) {
  const float lo = -87.33654475f;
  float xc = x >= lo ? x : lo; /* NaN and -inf become lo */
  /* round to nearest by adding 1.5 * 2^23 */
  float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  /* ln2 split in a head exact to 16 bits and a tail (Cody-Waite) */
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  uint32_t bits = (uint32_t)((int32_t)n + 127) << 23; /* n in [-126, 0] */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  return x >= lo ? y : (x != x ? x : 0.0f);
}

/* Rows of T computed in C; SAME when T is C (softmax then keeps the
 * exponentials in the output instead of computing them twice). */
#define FLOAT_ROWS(NAME, T, C, LD, ST, EXP, INF, SAME)                      \
  static C NAME##_max(const T* x, int64_t n) {                              \
    C lane[LANES];                                                          \
    for (int k = 0; k < LANES; k++) lane[k] = -INF;                         \
    int64_t i = 0;                                                          \
    for (; i + LANES <= n; i += LANES) {                                    \
      _Pragma("GCC unroll 1") for (int k = 0; k < LANES; k++) lane[k] =     \
          MAXF(lane[k], LD(x[i + k]));                                      \
    }                                                                       \
    for (int k = 0; i < n; i++, k++) lane[k] = MAXF(lane[k], LD(x[i]));     \
    for (int w = LANES / 2; w > 0; w /= 2)                                  \
      for (int k = 0; k < w; k++) lane[k] = MAXF(lane[k], lane[k + w]);     \
    return lane[0];                                                         \
  }                                                                         \
  /* e[k] = exp(x[k] - m), k < c <= CHUNK; returns their sum. */            \
  static C NAME##_exps(C* e, const T* x, int64_t c, C m) {                  \
    for (int64_t k = 0; k < c; k++) e[k] = EXP(LD(x[k]) - m);               \
    C lane[LANES];                                                          \
    for (int k = 0; k < LANES; k++) lane[k] = 0;                            \
    int64_t k = 0;                                                          \
    for (; k + LANES <= c; k += LANES)                                      \
      for (int j = 0; j < LANES; j++) lane[j] += e[k + j];                  \
    for (int j = 0; k < c; k++, j++) lane[j] += e[k];                       \
    for (int w = LANES / 2; w > 0; w /= 2)                                  \
      for (int j = 0; j < w; j++) lane[j] += lane[j + w];                   \
    return lane[0];                                                         \
  }                                                                         \
  static void NAME##_lse(void* op, const void* xp, int64_t n) {             \
    const T* x = xp;                                                        \
    C m = NAME##_max(x, n);                                                 \
    if (m != m || m == INF || m == -INF) {                                  \
      *(T*)op = ST(m);                                                      \
      return;                                                               \
    }                                                                       \
    double s = 0;                                                           \
    C e[CHUNK];                                                             \
    for (int64_t i = 0; i < n; i += CHUNK)                                  \
      s += (double)NAME##_exps(e, x + i, n - i < CHUNK ? n - i : CHUNK, m); \
    *(T*)op = ST((C)((double)m + log(s)));                                  \
  }                                                                         \
  /* y may be x (in place): each chunk is read before it is written. */     \
  static void NAME##_softmax(void* yp, const void* xp, int64_t n) {         \
    const T* x = xp;                                                        \
    T* y = yp;                                                              \
    C m = NAME##_max(x, n);                                                 \
    double s = 0;                                                           \
    C e[CHUNK];                                                             \
    for (int64_t i = 0; i < n; i += CHUNK) {                                \
      int64_t c = n - i < CHUNK ? n - i : CHUNK;                            \
      s += (double)NAME##_exps(e, x + i, c, m);                             \
      if (SAME) memcpy(y + i, e, (size_t)c * sizeof(C));                    \
    }                                                                       \
    C inv = (C)(1.0 / s);                                                   \
    if (SAME) {                                                             \
      for (int64_t i = 0; i < n; i++) y[i] = (T)(y[i] * inv);               \
      return;                                                               \
    }                                                                       \
    for (int64_t i = 0; i < n; i += CHUNK) {                                \
      int64_t c = n - i < CHUNK ? n - i : CHUNK;                            \
      for (int64_t k = 0; k < c; k++) e[k] = EXP(LD(x[i + k]) - m);         \
      for (int64_t k = 0; k < c; k++) y[i + k] = ST(e[k] * inv);            \
    }                                                                       \
  }                                                                         \
  /* Lane sums in double: the mean, then the deviations d (their sum and    \
   * their sum of squares). */                                              \
  static void NAME##_var(void* op, const void* xp, int64_t n, int ddof,     \
                         bool sq) {                                         \
    const T* x = xp;                                                        \
    double l1[8] = {0}, l2[8] = {0}, l3[8] = {0};                           \
    int64_t i = 0;                                                          \
    for (; i + 8 <= n; i += 8)                                              \
      for (int k = 0; k < 8; k++) l1[k] += (double)LD(x[i + k]);            \
    for (int k = 0; i < n; i++, k++) l1[k] += (double)LD(x[i]);             \
    double s = ((l1[0] + l1[4]) + (l1[1] + l1[5])) +                        \
               ((l1[2] + l1[6]) + (l1[3] + l1[7]));                         \
    double mu = s / (double)n;                                              \
    for (i = 0; i + 8 <= n; i += 8)                                         \
      for (int k = 0; k < 8; k++) {                                         \
        double d = (double)LD(x[i + k]) - mu;                               \
        l2[k] += d;                                                         \
        l3[k] += d * d;                                                     \
      }                                                                     \
    for (int k = 0; i < n; i++, k++) {                                      \
      double d = (double)LD(x[i]) - mu;                                     \
      l2[k] += d;                                                           \
      l3[k] += d * d;                                                       \
    }                                                                       \
    double s1 = 0, ss = 0;                                                  \
    for (int k = 0; k < 8; k++) s1 += l2[k], ss += l3[k];                   \
    if (n > 0) ss -= s1 * s1 / (double)n; /* cancels the error of mu */     \
    ss = ss > 0 || ss != ss ? ss : 0.0;   /* NaN stays */                   \
    double den = (double)n - (double)ddof;                                  \
    double v = ss / (den > 0 ? den : 0.0);                                  \
    *(T*)op = ST((C)(sq ? sqrt(v) : v));                                    \
  }

#define ID(x) (x)
#define LD_H(x) cmx__h2f(x)
#define LD_BF(x) cmx__bf2f(x)
#define ST_H(x) cmx__f2h(x)
#define ST_BF(x) cmx__f2bf(x)
FLOAT_ROWS(f16, uint16_t, float, LD_H, ST_H, exp_nonpos, INFINITY, 0)
FLOAT_ROWS(bf16, uint16_t, float, LD_BF, ST_BF, exp_nonpos, INFINITY, 0)
FLOAT_ROWS(f32, float, float, ID, ID, exp_nonpos, INFINITY, 1)
FLOAT_ROWS(f64, double, double, ID, ID, exp, (double)INFINITY, 1)

/* Column blocks: the same arithmetic, in the same order, for each of w
 * <= COLW columns at once, element r of column j at x[r * rs + j]. They
 * serve reductions over leading or middle axes (the kept inner positions
 * are the columns: no transposing copies) and short rows (a block of rows
 * transposed into a tile: the row kernels' per-row overhead would cost
 * ~100 instructions an element there). Each column gets bit for bit the
 * row kernels' result: max by the same selects, the exponentials summed
 * in the same 16 float lanes per chunk of 256 (element r in lane r % 16)
 * and the same halving tree (skipping lanes still zero, whose additions
 * change nothing), chunk sums in double; var with the same 8 double lanes
 * and final sums. */
#define COLW 64
#define FLOAT_COLS(NAME, T, C, LD, ST, EXP, INF, SAME)                         \
  static void NAME##_cmax(C* m, const T* x, int64_t n, int64_t rs, int w) {    \
    for (int j = 0; j < w; j++) m[j] = -INF;                                   \
    for (int64_t r = 0; r < n; r++) {                                          \
      const T* xr = x + r * rs;                                                \
      for (int j = 0; j < w; j++) m[j] = MAXF(m[j], LD(xr[j]));                \
    }                                                                          \
  }                                                                            \
  /* s[j]: the row kernels' sum of exp(x - m[j]); y (softmax when SAME)        \
   * receives the exponentials. */                                             \
  static void NAME##_csum(double* s, const C* m, const T* x, T* y, int64_t n,  \
                          int64_t rs, int w) {                                 \
    C lane[LANES][COLW];                                                       \
    for (int j = 0; j < w; j++) s[j] = 0;                                      \
    for (int64_t c0 = 0; c0 < n; c0 += CHUNK) {                                \
      int64_t c = n - c0 < CHUNK ? n - c0 : CHUNK;                             \
      int a = c < LANES ? (int)c : LANES; /* lanes that may be nonzero */      \
      for (int k = 0; k < a; k++)                                              \
        for (int j = 0; j < w; j++) lane[k][j] = 0;                            \
      for (int64_t k = 0; k < c; k++) {                                        \
        const T* xr = x + (c0 + k) * rs;                                       \
        C* ln = lane[k % LANES];                                               \
        if (SAME && y) {                                                       \
          T* yr = y + (c0 + k) * rs;                                           \
          for (int j = 0; j < w; j++) {                                        \
            C e = EXP(LD(xr[j]) - m[j]);                                       \
            yr[j] = (T)e;                                                      \
            ln[j] += e;                                                        \
          }                                                                    \
        } else {                                                               \
          for (int j = 0; j < w; j++) ln[j] += EXP(LD(xr[j]) - m[j]);          \
        }                                                                      \
      }                                                                        \
      for (int h = LANES / 2; h > 0; h /= 2) {                                 \
        for (int k = 0; k < h && k + h < a; k++)                               \
          for (int j = 0; j < w; j++) lane[k][j] += lane[k + h][j];            \
        if (a > h) a = h;                                                      \
      }                                                                        \
      for (int j = 0; j < w; j++) s[j] += (double)lane[0][j];                  \
    }                                                                          \
  }                                                                            \
  /* out[j] (contiguous): logsumexp of column j. */                            \
  static void NAME##_clse(void* op, const void* xp, int64_t n, int64_t rs,     \
                          int w) {                                             \
    const T* x = xp;                                                           \
    T* out = op;                                                               \
    C m[COLW] = {0};                                                           \
    double s[COLW];                                                            \
    NAME##_cmax(m, x, n, rs, w);                                               \
    NAME##_csum(s, m, x, NULL, n, rs, w);                                      \
    for (int j = 0; j < w; j++)                                                \
      out[j] = (m[j] != m[j] || m[j] == INF || m[j] == -INF)                   \
                   ? ST(m[j])                                                  \
                   : ST((C)((double)m[j] + log(s[j])));                        \
  }                                                                            \
  /* y in x's layout (y may be x). */                                          \
  static void NAME##_csoftmax(void* yp, const void* xp, int64_t n, int64_t rs, \
                              int w) {                                         \
    const T* x = xp;                                                           \
    T* y = yp;                                                                 \
    C m[COLW] = {0}, inv[COLW];                                                \
    double s[COLW];                                                            \
    NAME##_cmax(m, x, n, rs, w);                                               \
    NAME##_csum(s, m, x, y, n, rs, w);                                         \
    for (int j = 0; j < w; j++) inv[j] = (C)(1.0 / s[j]);                      \
    for (int64_t r = 0; r < n; r++) {                                          \
      const T* xr = x + r * rs;                                                \
      T* yr = y + r * rs;                                                      \
      if (SAME)                                                                \
        for (int j = 0; j < w; j++) yr[j] = (T)(yr[j] * inv[j]);               \
      else                                                                     \
        for (int j = 0; j < w; j++)                                            \
          yr[j] = ST(EXP(LD(xr[j]) - m[j]) * inv[j]);                          \
    }                                                                          \
  }                                                                            \
  static void NAME##_cvar(void* op, const void* xp, int64_t n, int64_t rs,     \
                          int w, int ddof, bool sq) {                          \
    const T* x = xp;                                                           \
    T* out = op;                                                               \
    double l2[8][COLW], l3[8][COLW], mu[COLW];                                 \
    /* lanes at or past n stay zero: only the mean's tree reads them (the      \
     * final sums skip them, adding zeros changes nothing there) */            \
    int nk = n < 8 ? (int)n : 8;                                               \
    for (int k = 0; k < 8; k++)                                                \
      for (int j = 0; j < w; j++) l2[k][j] = 0;                                \
    for (int k = 0; k < nk; k++)                                               \
      for (int j = 0; j < w; j++) l3[k][j] = 0;                                \
    for (int64_t r = 0; r < n; r++) {                                          \
      const T* xr = x + r * rs;                                                \
      double* l = l2[r % 8];                                                   \
      for (int j = 0; j < w; j++) l[j] += (double)LD(xr[j]);                   \
    }                                                                          \
    for (int j = 0; j < w; j++) {                                              \
      double t = ((l2[0][j] + l2[4][j]) + (l2[1][j] + l2[5][j])) +             \
                 ((l2[2][j] + l2[6][j]) + (l2[3][j] + l2[7][j]));              \
      mu[j] = t / (double)n;                                                   \
    }                                                                          \
    for (int k = 0; k < nk; k++)                                               \
      for (int j = 0; j < w; j++) l2[k][j] = 0;                                \
    for (int64_t r = 0; r < n; r++) {                                          \
      const T* xr = x + r * rs;                                                \
      double *a2 = l2[r % 8], *a3 = l3[r % 8];                                 \
      for (int j = 0; j < w; j++) {                                            \
        double d = (double)LD(xr[j]) - mu[j];                                  \
        a2[j] += d;                                                            \
        a3[j] += d * d;                                                        \
      }                                                                        \
    }                                                                          \
    for (int j = 0; j < w; j++) {                                              \
      double s1 = 0, ss = 0;                                                   \
      for (int k = 0; k < nk; k++) s1 += l2[k][j], ss += l3[k][j];             \
      if (n > 0) ss -= s1 * s1 / (double)n;                                    \
      ss = ss > 0 || ss != ss ? ss : 0.0;                                      \
      double den = (double)n - (double)ddof;                                   \
      double v = ss / (den > 0 ? den : 0.0);                                   \
      out[j] = ST((C)(sq ? sqrt(v) : v));                                      \
    }                                                                          \
  }

FLOAT_COLS(f16, uint16_t, float, LD_H, ST_H, exp_nonpos, INFINITY, 0)
FLOAT_COLS(bf16, uint16_t, float, LD_BF, ST_BF, exp_nonpos, INFINITY, 0)
FLOAT_COLS(f32, float, float, ID, ID, exp_nonpos, INFINITY, 1)
FLOAT_COLS(f64, double, double, ID, ID, exp, (double)INFINITY, 1)

/* Complex variance (MLX): sum((x - mean)^2) / max(n - ddof, 0). */
static void c64_var(void* op, const void* xp, int64_t n, int ddof, bool sq) {
  const cmx__c64* x = xp;
  double sr = 0, si = 0;
  for (int64_t i = 0; i < n; i++) {
    sr += crealf(x[i]);
    si += cimagf(x[i]);
  }
  double mr = sr / (double)n, mi = si / (double)n, ar = 0, ai = 0, br = 0,
         bi = 0;
  for (int64_t i = 0; i < n; i++) {
    double dr = crealf(x[i]) - mr, di = cimagf(x[i]) - mi;
    br += dr, bi += di;
    ar += dr * dr - di * di;
    ai += 2 * dr * di;
  }
  /* the corrected two-pass: subtract (sum d)^2 / n */
  if (n > 0) {
    ar -= (br * br - bi * bi) / (double)n;
    ai -= 2 * br * bi / (double)n;
  }
  double den = (double)n - (double)ddof;
  den = den > 0 ? den : 0.0;
  double _Complex v = CMPLX(ar / den, ai / den);
  if (sq) v = csqrt(v);
  *(cmx__c64*)op = CMPLXF((float)creal(v), (float)cimag(v));
}

static lse_fn lse_for(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return f16_lse;
    case CMX_BFLOAT16:
      return bf16_lse;
    case CMX_FLOAT32:
      return f32_lse;
    case CMX_FLOAT64:
      return f64_lse;
    default:
      return NULL;
  }
}
static softmax_fn softmax_for(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return f16_softmax;
    case CMX_BFLOAT16:
      return bf16_softmax;
    case CMX_FLOAT32:
      return f32_softmax;
    case CMX_FLOAT64:
      return f64_softmax;
    default:
      return NULL;
  }
}
static var_fn var_for(cmx_dtype dt) {
  switch (dt) {
    case CMX_FLOAT16:
      return f16_var;
    case CMX_BFLOAT16:
      return bf16_var;
    case CMX_FLOAT32:
      return f32_var;
    case CMX_FLOAT64:
      return f64_var;
    case CMX_COMPLEX64:
      return c64_var;
    default:
      return NULL;
  }
}

/* ---------------- columns ---------------- */

typedef void (*col_fn)(void* out, const void* x, int64_t n, int64_t rs, int w);
typedef void (*cvar_fn)(void* out, const void* x, int64_t n, int64_t rs, int w,
                        int ddof, bool sq);

/* Rows up to this long take the tile path (row kernels beyond). */
#define SHORT_MAX 32

typedef struct {
  int kind; /* 0 logsumexp, 1 softmax, 2 var */
  col_fn lse, softmax;
  cvar_fn var;
  int ddof;
  bool sq;
  const char* x;
  char* y;
  int64_t no, nl, ni; /* outer, reduced and inner extents */
  int64_t nb;         /* column blocks per outer position */
  int64_t isz;
} cols_ctx;

static bool cols_for(cmx_dtype dt, cols_ctx* c) {
  switch (dt) {
    case CMX_FLOAT16:
      c->lse = f16_clse, c->softmax = f16_csoftmax, c->var = f16_cvar;
      return true;
    case CMX_BFLOAT16:
      c->lse = bf16_clse, c->softmax = bf16_csoftmax, c->var = bf16_cvar;
      return true;
    case CMX_FLOAT32:
      c->lse = f32_clse, c->softmax = f32_csoftmax, c->var = f32_cvar;
      return true;
    case CMX_FLOAT64:
      c->lse = f64_clse, c->softmax = f64_csoftmax, c->var = f64_cvar;
      return true;
    default:
      return false;
  }
}

/* Runs column block x (n rows at stride rs, w columns) into y. */
static void cols_one(const cols_ctx* c, char* y, const char* x, int64_t rs,
                     int w) {
  switch (c->kind) {
    case 0:
      c->lse(y, x, c->nl, rs, w);
      break;
    case 1:
      c->softmax(y, x, c->nl, rs, w);
      break;
    default:
      c->var(y, x, c->nl, rs, w, c->ddof, c->sq);
  }
}

/* Units [b, e): column block u % nb of outer position u / nb. */
static void run_cols(void* ctx, int64_t b, int64_t e) {
  const cols_ctx* c = ctx;
  for (int64_t u = b; u < e; u++) {
    int64_t o = u / c->nb, j0 = (u % c->nb) * COLW;
    int w = (int)(c->ni - j0 < COLW ? c->ni - j0 : COLW);
    const char* x = c->x + (o * c->nl * c->ni + j0) * c->isz;
    int64_t yo = c->kind == 1 ? o * c->nl * c->ni + j0 : o * c->ni + j0;
    cols_one(c, c->y + yo * c->isz, x, c->ni, w);
  }
}

/* Rows of n 4-byte items into columns, n a constant: the loop over a
 * row unrolls whole, each row a few loads and stores. */
static inline __attribute__((always_inline)) void tb_rows_n(
    uint32_t* dst, int64_t dn, const uint32_t* src, int64_t sn, int64_t rows,
    int n) {
  for (int64_t i = 0; i < rows; i++)
    for (int j = 0; j < n; j++) dst[j * dn + i] = src[i * sn + j];
}
static void tb_short_u32(uint32_t* dst, int64_t dn, const uint32_t* src,
                         int64_t sn, int64_t rows, int64_t cols) {
  switch (cols) {
    case 2:
      tb_rows_n(dst, dn, src, sn, rows, 2);
      break;
    case 3:
      tb_rows_n(dst, dn, src, sn, rows, 3);
      break;
    case 4:
      tb_rows_n(dst, dn, src, sn, rows, 4);
      break;
    case 5:
      tb_rows_n(dst, dn, src, sn, rows, 5);
      break;
    case 6:
      tb_rows_n(dst, dn, src, sn, rows, 6);
      break;
    case 7:
      tb_rows_n(dst, dn, src, sn, rows, 7);
      break;
    case 8:
      tb_rows_n(dst, dn, src, sn, rows, 8);
      break;
    case 9:
      tb_rows_n(dst, dn, src, sn, rows, 9);
      break;
    case 10:
      tb_rows_n(dst, dn, src, sn, rows, 10);
      break;
    case 11:
      tb_rows_n(dst, dn, src, sn, rows, 11);
      break;
    case 12:
      tb_rows_n(dst, dn, src, sn, rows, 12);
      break;
    case 13:
      tb_rows_n(dst, dn, src, sn, rows, 13);
      break;
    case 14:
      tb_rows_n(dst, dn, src, sn, rows, 14);
      break;
    case 15:
      tb_rows_n(dst, dn, src, sn, rows, 15);
      break;
    case 16:
      tb_rows_n(dst, dn, src, sn, rows, 16);
      break;
    default:
      tb_rows_n(dst, dn, src, sn, rows, (int)cols);
  }
}

/* dst[j * dn + i] = src[i * sn + j], i < rows, j < cols (element size
 * isz): a block of short rows into a tile of columns, and back.
 *
 * No short inner loop. A short row (cols of 2-10 items) as the inner loop
 * made a 5-instruction loop of a few iterations per row, bound by
 * instruction fetch and so by where the linker happened to place it: the
 * same machine code ran run_short 1.7x slower in one build than in another
 * (var and logsumexp over [N x 3] / [N x 10] rows 1.2x slower in all,
 * bench_sweep). Float32 rows of up to 16 items take the unrolled copies
 * above; otherwise the inner loop runs over the longer side. */
static void transpose_block(char* dst, int64_t dn, const char* src, int64_t sn,
                            int64_t rows, int64_t cols, int64_t isz) {
#define TB(T)                                                \
  if (cols >= rows) {                                        \
    for (int64_t i = 0; i < rows; i++)                       \
      for (int64_t j = 0; j < cols; j++)                     \
        ((T*)dst)[j * dn + i] = ((const T*)src)[i * sn + j]; \
  } else {                                                   \
    for (int64_t j = 0; j < cols; j++)                       \
      for (int64_t i = 0; i < rows; i++)                     \
        ((T*)dst)[j * dn + i] = ((const T*)src)[i * sn + j]; \
  }
  if (isz == 2) {
    TB(uint16_t)
  } else if (isz == 4) {
    if (cols < rows && cols >= 2 && cols <= 16) {
      tb_short_u32((uint32_t*)dst, dn, (const uint32_t*)src, sn, rows, cols);
      return;
    }
    TB(uint32_t)
  } else {
    TB(uint64_t)
  }
#undef TB
}

/* Units [b, e): COLW short rows each, transposed into a tile whose
 * columns are the rows. */
static void run_short(void* ctx, int64_t b, int64_t e) {
  const cols_ctx* c = ctx;
  double tile[SHORT_MAX * COLW], ytile[SHORT_MAX * COLW]; /* 8-byte items */
  for (int64_t u = b; u < e; u++) {
    int64_t r0 = u * COLW;
    int w = (int)(c->no - r0 < COLW ? c->no - r0 : COLW);
    const char* x = c->x + r0 * c->nl * c->isz;
    transpose_block((char*)tile, w, x, c->nl, w, c->nl, c->isz);
    if (c->kind != 1) {
      cols_one(c, c->y + r0 * c->isz, (const char*)tile, w, w);
    } else {
      cols_one(c, (char*)ytile, (const char*)tile, w, w);
      transpose_block(c->y + r0 * c->nl * c->isz, c->nl, (const char*)ytile, w,
                      c->nl, w, c->isz);
    }
  }
}

/* Whether the reduced axes are one run [d0, d1) of a's dims; then the
 * extents before, of and after it. */
static bool axes_run(cmx_array a, const cmx__axes_params* q, int64_t* no,
                     int64_t* nl, int64_t* ni) {
  if (q->naxes < 1) return false;
  for (int i = 1; i < q->naxes; i++)
    if (q->axes[i] != q->axes[0] + i) return false;
  int d0 = q->axes[0], d1 = d0 + q->naxes;
  *no = *nl = *ni = 1;
  for (int d = 0; d < a->ndim; d++)
    *(d < d0 ? no : d < d1 ? nl : ni) *= a->dims[d];
  return true;
}

/* Inner extents from which the column path serves (narrower columns
 * vectorise poorly: rows after a transposing copy do better). */
#define COLS_MIN 16

/* The column path: reduced axes followed by at least COLS_MIN kept
 * positions. Non-contiguous inputs are copied row-major first (one copy,
 * where the row path moves the axes last and, for softmax, copies back). */
static cmx_status run_columns(cols_ctx* c, cmx_array a, cmx_array o) {
  cmx_array tmp = NULL;
  if (!(a->flags & CMX__FLAG_ROW_CONTIG)) {
    tmp = cmx__cpu_permuted_copy(a, NULL, a->dtype);
    if (!tmp) return cmx_last_status();
  }
  cmx_status st = c->kind == 1 && !tmp ? cmx_kernel_alloc_donate(o, a, NULL)
                                       : cmx_kernel_alloc(o);
  if (st == CMX_OK) {
    c->isz = (int64_t)cmx_dtype_size(a->dtype);
    c->x = cmx__node_ptr(tmp ? tmp : a);
    c->y = cmx__node_ptr(o);
    c->nb = (c->ni + COLW - 1) / COLW;
    int64_t per = c->nl * (c->ni < COLW ? c->ni : COLW);
    cmx__parallel_for(c->no * c->nb,
                      per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per,
                      run_cols, c);
  }
  cmx_array_release(tmp);
  return st;
}

/* ---------------- rows ---------------- */

typedef struct {
  int kind; /* 0 logsumexp, 1 softmax, 2 var */
  lse_fn lse;
  softmax_fn softmax;
  var_fn var;
  int ddof;
  bool sq;
  const char* x;
  char* y;
  int64_t len, isz;
} rows_ctx;

static void run_rows(void* ctx, int64_t b, int64_t e) {
  const rows_ctx* c = ctx;
  for (int64_t r = b; r < e; r++) {
    const char* x = c->x + r * c->len * c->isz;
    switch (c->kind) {
      case 0:
        c->lse(c->y + r * c->isz, x, c->len);
        break;
      case 1:
        c->softmax(c->y + r * c->len * c->isz, x, c->len);
        break;
      default:
        c->var(c->y + r * c->isz, x, c->len, c->ddof, c->sq);
    }
  }
}

/* The permutation moving the axes last (kept dims first, in order).
 * Returns 2 when it is the identity and a is row-contiguous (rows in
 * place), 1 when a seen through it is row-contiguous all the same (a
 * transposed input whose reduced axes lie innermost in memory: the rows
 * are read in place), 0 when the rows need a copy. */
static int rows_perm(cmx_array a, const cmx__axes_params* q, int* perm) {
  bool isred[CMX_MAX_NDIM] = {false};
  for (int i = 0; i < q->naxes; i++) isred[q->axes[i]] = true;
  int k = 0;
  bool ident = true;
  for (int d = 0; d < a->ndim; d++)
    if (!isred[d]) perm[k++] = d;
  for (int i = 0; i < q->naxes; i++) perm[k++] = q->axes[i];
  for (int d = 0; d < a->ndim; d++) ident = ident && perm[d] == d;
  if (ident && (a->flags & CMX__FLAG_ROW_CONTIG)) return 2;
  int64_t expect = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    int d = perm[i];
    if (a->dims[d] == 1) continue;
    if (CMX__STRIDES(a)[d] != expect) return 0;
    expect *= a->dims[d];
  }
  return 1;
}

/* A row-major array of a's shape permuted by perm (softmax's rows when
 * they cannot be computed in the output). NULL with the error set. */
static cmx_array rows_buffer(cmx_array a, const int* perm) {
  int64_t shape[CMX_MAX_NDIM];
  for (int i = 0; i < a->ndim; i++) shape[i] = a->dims[perm[i]];
  cmx_array t = cmx__node_new("softmax", shape, a->ndim, a->dtype);
  if (t && cmx_kernel_alloc(t) == CMX_OK) return t;
  cmx_array_release(t);
  return NULL;
}

static cmx_status run_kernel(const cmx_primitive* p, cmx_array a, cmx_array o,
                             int kind) {
  const cmx__axes_params* q = cmx_primitive_params(p);
  rows_ctx c;
  memset(&c, 0, sizeof c);
  c.kind = kind;
  c.lse = lse_for(a->dtype);
  c.softmax = softmax_for(a->dtype);
  c.var = var_for(a->dtype);
  c.ddof = q->ddof;
  c.sq = q->sqrt != 0;
  if ((kind == 0 && !c.lse) || (kind == 1 && !c.softmax) ||
      (kind == 2 && !c.var))
    return cmx_kernel_error(CMX_ERR_TYPE, "[%s] unsupported dtype %s",
                            cmx_primitive_name(p), cmx_dtype_name(a->dtype));
  cols_ctx cc;
  memset(&cc, 0, sizeof cc);
  cc.kind = kind;
  cc.ddof = q->ddof;
  cc.sq = q->sqrt != 0;
  bool cols = cols_for(a->dtype, &cc);
  int perm[CMX_MAX_NDIM];
  int mode = a->size == 0 ? 2 : rows_perm(a, q, perm);
  /* columns unless the rows can be read in place (softmax would still
   * write them through a permuted view of its output, a slow scatter) */
  if ((mode == 0 || (mode == 1 && kind == 1)) && cols &&
      axes_run(a, q, &cc.no, &cc.nl, &cc.ni) && cc.ni >= COLS_MIN)
    return run_columns(&cc, a, o);
  bool direct = mode == 2;
  /* softmax on rows in place may take the input's buffer */
  cmx_status st = kind == 1 && direct ? cmx_kernel_alloc_donate(o, a, NULL)
                                      : cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  c.isz = (int64_t)cmx_dtype_size(a->dtype);
  c.len = 1;
  for (int i = 0; i < q->naxes; i++) c.len *= a->dims[q->axes[i]];
  int64_t rows = kind == 1 ? (c.len ? a->size / c.len : 0) : o->size;
  cmx_array tmp = NULL;
  if (mode == 0) {
    tmp = cmx__cpu_permuted_copy(a, perm, a->dtype);
    if (!tmp) return cmx_last_status();
  } else if (mode == 1 && kind == 1) {
    tmp = rows_buffer(a, perm);
    if (!tmp) return cmx_last_status();
  }
  c.x = a->size == 0 ? NULL : cmx__node_ptr(mode ? a : tmp);
  /* softmax through a copy computes in place, then scatters back */
  c.y = (kind == 1 && !direct) ? cmx__node_ptr(tmp) : cmx__node_ptr(o);
  int64_t per = c.len > 0 ? c.len : 1;
  if (cols && c.len > 0 && c.len <= SHORT_MAX) { /* short rows: tiles */
    cc.no = rows;
    cc.nl = c.len;
    cc.x = c.x;
    cc.y = c.y;
    cc.isz = c.isz;
    per = c.len * COLW;
    cmx__parallel_for((rows + COLW - 1) / COLW,
                      per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per,
                      run_short, &cc);
  } else {
    cmx__parallel_for(rows, per >= CMX__RED_GRAIN ? 1 : CMX__RED_GRAIN / per,
                      run_rows, &c);
  }
  if (kind == 1 && !direct) {
    int64_t shape[CMX_MAX_NDIM], strides[CMX_MAX_NDIM];
    const int64_t* ost = CMX__STRIDES(o);
    for (int i = 0; i < o->ndim; i++) {
      shape[i] = o->dims[perm[i]];
      strides[i] = ost[perm[i]];
    }
    cmx_array v = cmx__cpu_strided_view(o, shape, strides, o->ndim);
    if (!v)
      st = cmx_last_status();
    else
      cmx__cpu_copy_convert(v, tmp);
    cmx_array_release(v);
  }
  cmx_array_release(tmp);
  return st;
}

CMX__KERNEL(cmx__cpu_logsumexp) {
  (void)nin;
  (void)nout;
  return run_kernel(p, in[0], out[0], 0);
}

CMX__KERNEL(cmx__cpu_softmax) {
  (void)nin;
  (void)nout;
  return run_kernel(p, in[0], out[0], 1);
}

CMX__KERNEL(cmx__cpu_var) {
  (void)nin;
  (void)nout;
  return run_kernel(p, in[0], out[0], 2);
}
