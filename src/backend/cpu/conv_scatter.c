/* The scatter (col2im) form of the CPU convolution.
 *
 * With stride 1, output position o reads input position i through tap k
 * exactly when o = i * input_dilation + pad_lo - k * kernel_dilation (per
 * spatial dim). So instead of gathering, for each output row, a window of
 * the dilated, padded input (most of it zeros when the input is dilated or
 * heavily padded: the input gradient of a convolution, a transposed
 * convolution), each real input row is multiplied once by the weight of
 * every tap,
 *     P[i][(k, o)] = sum_c x[i][c] * W[o][k][c]      (one NT gemm per tile)
 * and P[i][k] is added into the output row it reaches. The products count
 * rows_in * taps * C * O instead of rows_out * taps * C * O: for LeNet's
 * second input gradient (8x8 -> 12x12, padding 4) 2.25x fewer, for a
 * stride-2 transposed convolution 4x fewer in 2-d.
 *
 * Work splits over the batch (each image's outputs belong to one worker,
 * so the additions never race): workers take images from a counter, with
 * OpenBLAS held to one thread; within an image, input rows go in tiles
 * whose P fits in L2, in order, so the result does not depend on timing.
 * On AVX-512 CPUs the float32 products are cmx__sgemm512's, with the
 * weight laid out once as (C, taps * O).
 */
#include <limits.h>
#include <stdlib.h>

#include "backend/cpu/blas.h"
#include "backend/cpu/conv_cpu.h"
#include "backend/cpu/sgemm512.h"

/* Bytes of a tile's P. */
#define SC_TILE_BYTES ((int64_t)384 << 10)

bool cmx__conv_scatter_applies(const cmx__conv_job* j, bool x_rowmajor,
                               int threads) {
  if (j->G != 1 || !x_rowmajor ||
      (j->kind != CMX__CV_F32 && j->kind != CMX__CV_F64))
    return false;
  int64_t in_sp = 1;
  for (int d = 0; d < j->nsp; d++) {
    if (j->stride[d] != 1) return false;
    in_sp *= j->in[d];
  }
  /* worth it: at least a quarter fewer products, and images enough for
   * the threads */
  if (4 * in_sp > 3 * j->out_sp || j->N < threads) return false;
  return j->taps * j->O <= INT_MAX;
}

typedef struct {
  const cmx__conv_job* j;
  const char* Wk; /* (taps * O, C): row (k, o) = W[o][k][:]; own: its
                     transpose (C, taps * O) */
  bool own;       /* float32 products by cmx__sgemm512 */
  char* y;
  int64_t mi;  /* input rows per tile */
  int64_t* om; /* per dim d (3, padded): om[d][i * K_d + k] = o or -1 */
  /* innermost dim: per input i, the taps [ka, kb) that land (an interval:
   * o falls by the kernel dilation kd2 per tap) and the first one's o */
  int64_t *ka, *kb, *oa, kd2;
  int64_t in[3], out[3], k[3];
  _Atomic int64_t next;
  _Atomic int failed;
} sc_plan;

/* Adds the products of the innermost dim's taps [ka, kb) of one input row
 * into the output row: y[o - (k - ka) * kd2][c] += p[k][c], k ascending
 * (the order the outputs have always accumulated in). One call per row and
 * outer tap rather than per tap: with few output channels the call and
 * the lookups cost more than the additions. */
#define ADD_TAPS(T)                                              \
  do {                                                           \
    T* a = (T*)(void*)yo;                                        \
    const T* b = (const T*)(const void*)p;                       \
    if (O == 1) /* one channel: the taps alone */                \
      for (int64_t k = 0; k < kb - ka; k++) a[-k * kd2] += b[k]; \
    else                                                         \
      for (int64_t k = ka; k < kb; k++, a -= kd2 * O, b += O)    \
        for (int64_t c = 0; c < O; c++) a[c] += b[c];            \
  } while (0)
/* Few output channels (fewer than SC_WIDE_O): a handful of additions a
 * call, inlined into the loop; a target clone's dispatch and vector
 * set-up cost more than they save there (the one-channel input gradient
 * of a 5x5 conv ran 1.3x slower through the clones, the six-channel one
 * and its conv_transpose 1.1x and 1.26x). */
#define SC_WIDE_O 16
static inline void add_taps_narrow(int kind, char* yo, const char* p,
                                   int64_t ka, int64_t kb, int64_t kd2,
                                   int64_t O) {
  if (kind == CMX__CV_F64)
    ADD_TAPS(double);
  else
    ADD_TAPS(float);
}
#undef ADD_TAPS

/* Wider rows, also built for AVX2 and AVX-512 (picked at load time): the
 * additions run from L1/L2, where baseline SSE2's 4 floats per
 * instruction, not memory, limit them. Plain additions: the same sums on
 * every build. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SC_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SC_CLONES
#endif
SC_CLONES static void add_taps_wide(int kind, char* yo, const char* p,
                                    int64_t ka, int64_t kb, int64_t kd2,
                                    int64_t O) {
  add_taps_narrow(kind, yo, p, ka, kb, kd2, O); /* inlined into each clone */
}

/* The additions of one tile: input rows [r0, r0 + cnt) of an image, whose
 * products are P's rows, into the image's output yn. Everything it reads
 * comes in as locals of the caller, and `wide` is a constant in each of
 * its two inlined copies: with the plan's fields read through g, and the
 * clone call (which may write anything) in the loop, GCC reloaded them
 * all at every row and tap, and the one-channel input gradient of a 5x5
 * conv (vjp [256x28x28x1] -> 6) spent 1.2x the old tree's time here. The
 * row's coordinates advance by counting, without divisions. */
static inline __attribute__((always_inline)) void sc_add_tile(
    int kind, bool wide, char* yn, const char* P, int64_t r0, int64_t cnt,
    const int64_t* in, const int64_t* k, const int64_t* out, const int64_t* om0,
    const int64_t* om1, const int64_t* ka_, const int64_t* kb_,
    const int64_t* oa_, int64_t kd2, int64_t O, int64_t TO, int64_t csz) {
  int64_t i2 = r0 % in[2], i1 = r0 / in[2] % in[1], i0 = r0 / in[2] / in[1];
  const char* pr = P;
  for (int64_t r = 0; r < cnt; r++, pr += TO * csz) {
    const int64_t ka = ka_[i2], kb = kb_[i2];
    if (ka < kb) {
      const int64_t oa = oa_[i2];
      for (int64_t k0 = 0; k0 < k[0]; k0++) {
        int64_t o0 = om0[i0 * k[0] + k0];
        if (o0 < 0) continue;
        for (int64_t k1 = 0; k1 < k[1]; k1++) {
          int64_t o1 = om1[i1 * k[1] + k1];
          if (o1 < 0) continue;
          int64_t orow = (o0 * out[1] + o1) * out[2];
          int64_t t = (k0 * k[1] + k1) * k[2];
          char* yo = yn + (orow + oa) * O * csz;
          const char* po = pr + (t + ka) * O * csz;
          if (wide)
            add_taps_wide(kind, yo, po, ka, kb, kd2, O);
          else
            add_taps_narrow(kind, yo, po, ka, kb, kd2, O);
        }
      }
    }
    if (++i2 == in[2]) {
      i2 = 0;
      if (++i1 == in[1]) i1 = 0, i0++;
    }
  }
}

/* Pool task: takes images until none is left. */
static void sc_task(void* ctx, int64_t b, int64_t e) {
  (void)b;
  (void)e;
  sc_plan* g = ctx;
  const cmx__conv_job* j = g->j;
  const int kind = j->kind;
  const int64_t TO = j->taps * j->O, csz = j->csz, O = j->O, C = j->C;
  const int64_t N = j->N, out_sp = j->out_sp, mi = g->mi, kd2 = g->kd2;
  const int64_t in[3] = {g->in[0], g->in[1], g->in[2]};
  const int64_t k[3] = {g->k[0], g->k[1], g->k[2]};
  const int64_t out[3] = {g->out[0], g->out[1], g->out[2]};
  const int64_t *ka = g->ka, *kb = g->kb, *oa = g->oa;
  const int64_t in_sp = in[0] * in[1] * in[2];
  const bool own = g->own;
  const char *x = j->x, *Wk = g->Wk;
  char* y = g->y;
  char* P = malloc((size_t)(mi * TO * csz));
  if (!P) {
    atomic_store(&g->failed, 1);
    return;
  }
  const int64_t *om0 = g->om, *om1 = om0 + in[0] * k[0];
  for (;;) {
    int64_t n = atomic_fetch_add(&g->next, 1);
    if (n >= N) break;
    char* yn = y + n * out_sp * O * csz;
    memset(yn, 0, (size_t)(out_sp * O * csz));
    for (int64_t r0 = 0; r0 < in_sp; r0 += mi) {
      int64_t cnt = in_sp - r0 < mi ? in_sp - r0 : mi;
      const char* X = x + (n * in_sp + r0) * C * csz;
      if (own)
        cmx__sgemm512(cnt, TO, C, (const float*)X, C, 1, (const float*)Wk, TO,
                      (float*)P, TO, false);
      else if (kind == CMX__CV_F64)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)cnt, (int)TO,
                    (int)C, 1.0, (const double*)X, (int)C, (const double*)Wk,
                    (int)C, 0.0, (double*)P, (int)TO);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)cnt, (int)TO,
                    (int)C, 1.0f, (const float*)X, (int)C, (const float*)Wk,
                    (int)C, 0.0f, (float*)P, (int)TO);
      if (O < SC_WIDE_O)
        sc_add_tile(kind, false, yn, P, r0, cnt, in, k, out, om0, om1, ka, kb,
                    oa, kd2, O, TO, csz);
      else
        sc_add_tile(kind, true, yn, P, r0, cnt, in, k, out, om0, om1, ka, kb,
                    oa, kd2, O, TO, csz);
    }
  }
  free(P);
}

cmx_status cmx__conv_run_scatter(const cmx__conv_job* j, const char* W,
                                 char* y) {
  sc_plan g;
  memset(&g, 0, sizeof g);
  g.j = j;
  g.y = y;
  int64_t id[3] = {1, 1, 1}, lo[3] = {0}, kd[3] = {1, 1, 1};
  for (int d = 0; d < 3; d++) {
    int dd = d - (3 - j->nsp); /* spatial dims right-aligned */
    g.in[d] = dd >= 0 ? j->in[dd] : 1;
    g.out[d] = dd >= 0 ? j->out[dd] : 1;
    g.k[d] = dd >= 0 ? j->k[dd] : 1;
    if (dd >= 0) {
      id[d] = j->id[dd];
      lo[d] = j->lo[dd];
      kd[d] = j->kd[dd];
    }
  }
  const int64_t TO = j->taps * j->O, csz = j->csz;
  int64_t nom = g.in[0] * g.k[0] + g.in[1] * g.k[1] + g.in[2] * g.k[2];
  g.om = malloc((size_t)(nom + 3 * g.in[2]) * sizeof(int64_t));
  char* Wk = malloc((size_t)(TO * j->C * csz));
  if (!g.om || !Wk) {
    free(g.om);
    free(Wk);
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  }
  for (int d = 0, at = 0; d < 3; d++)
    for (int64_t i = 0; i < g.in[d]; i++)
      for (int64_t k = 0; k < g.k[d]; k++, at++) {
        int64_t o = i * id[d] + lo[d] - k * kd[d];
        g.om[at] = o >= 0 && o < g.out[d] ? o : -1;
      }
  g.ka = g.om + nom;
  g.kb = g.ka + g.in[2];
  g.oa = g.kb + g.in[2];
  g.kd2 = kd[2];
  for (int64_t i = 0; i < g.in[2]; i++) {
    const int64_t* om2 = g.om + nom - g.in[2] * g.k[2] + i * g.k[2];
    int64_t ka = 0, kb;
    while (ka < g.k[2] && om2[ka] < 0) ka++;
    for (kb = ka; kb < g.k[2] && om2[kb] >= 0;) kb++;
    g.ka[i] = ka;
    g.kb[i] = kb;
    g.oa[i] = ka < kb ? om2[ka] : 0;
  }
  g.own = j->kind == CMX__CV_F32 && cmx__sgemm512_available();
  if (g.own) /* (O, taps, C) -> (C, taps, O) */
    for (int64_t o = 0; o < j->O; o++)
      for (int64_t t = 0; t < j->taps; t++)
        for (int64_t c = 0; c < j->C; c++)
          ((float*)Wk)[c * TO + t * j->O + o] =
              ((const float*)W)[(o * j->taps + t) * j->C + c];
  else /* (O, taps, C) -> (taps, O, C) */
    for (int64_t o = 0; o < j->O; o++)
      for (int64_t t = 0; t < j->taps; t++)
        memcpy(Wk + (t * j->O + o) * j->C * csz,
               W + (o * j->taps + t) * j->C * csz, (size_t)(j->C * csz));
  g.Wk = Wk;
  g.mi = SC_TILE_BYTES / (TO * csz);
  if (g.mi < 8) g.mi = 8;
  int64_t in_sp = g.in[0] * g.in[1] * g.in[2];
  if (g.mi > in_sp) g.mi = in_sp;
  const int threads = cmx__conv_threads(2.0 * (double)j->N * (double)in_sp *
                                        (double)TO * (double)j->C);
  const bool single = threads > 1 && cmx__blas_single_begin();
  if (threads > 1)
    cmx__parallel_for(threads, 1, sc_task, &g);
  else
    sc_task(&g, 0, 1);
  if (single) cmx__blas_single_end();
  free(g.om);
  free(Wk);
  if (atomic_load(&g.failed))
    return cmx_kernel_error(CMX_ERR_MEMORY, "[conv] out of memory");
  return CMX_OK;
}
