/* cmx's CPU FFT engine (contract in fft_plan.h).
 *
 * Stockham autosort, decimation in time: with Ns the length of the
 * sub-transforms done so far and a stage of radix R over N points, every
 * j = b Ns + k (k < Ns) reads v_r = x[j + r N / R] w^(r k), w =
 * exp(-2 pi i / (Ns R)), transforms v with a length-R DFT and writes
 * y[b Ns R + k + r Ns]. Stages ping-pong between two split buffers; the k
 * loop is contiguous in x, y and the twiddle table, so it vectorises. The
 * first stage (Ns = 1) loops over b instead. Inverse transforms conjugate
 * on the way in and out. Bluestein: X_k = w_k sum_j (x_j w_j) conj(w_{k-j})
 * with w_k = exp(-i pi k^2 / n), a circular convolution of length m = 2^p
 * >= 2n - 1 done with the power-of-two plan. Real transforms of even n pack
 * the n reals as n / 2 complex numbers (z_j = x_2j + i x_2j+1) and untangle
 * the spectrum of the two halves; odd n use the complex plan of n.
 */
#include "backend/cpu/fft_plan.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/sched.h"

#define MAXR 31  /* largest radix run directly; larger primes: Bluestein */
#define MAXST 64 /* stages of one plan (n < 2^63) */

typedef struct stage {
  int r;
  int64_t ns;
  float *twr, *twi;         /* (r - 1) * ns twiddles, index (q - 1) ns + k */
  float cr[MAXR], ci[MAXR]; /* odd radices: exp(-2 pi i t / r) */
} stage;

struct cmx__fft_plan {
  int64_t n;
  bool real;
  int nst;
  stage st[MAXST];
  int64_t m;                /* Bluestein length (0: direct) */
  const cmx__fft_plan* sub; /* Bluestein's length-m plan; real: complex plan */
  float *wr, *wi;           /* Bluestein chirp (n); real: twiddles (n/2+1) */
  float *br, *bi;           /* Bluestein: FFT of the conjugate chirp / m */
  int64_t work;
};

/* ---------------- butterflies ---------------- */
/* One complex multiply by the twiddle (tr, ti). */
#define CMUL(xr, xi, tr, ti)      \
  do {                            \
    float t_ = xr * tr - xi * ti; \
    xi = xr * ti + xi * tr;       \
    xr = t_;                      \
  } while (0)

/* Length-4 DFT (forward) of a0..a3 into b0..b3 (all split pairs). */
#define DFT4(a0r, a0i, a1r, a1i, a2r, a2i, a3r, a3i, b0r, b0i, b1r, b1i, b2r, \
             b2i, b3r, b3i)                                                   \
  do {                                                                        \
    float t0r = a0r + a2r, t0i = a0i + a2i, t1r = a0r - a2r, t1i = a0i - a2i; \
    float t2r = a1r + a3r, t2i = a1i + a3i, t3r = a1r - a3r, t3i = a1i - a3i; \
    b0r = t0r + t2r, b0i = t0i + t2i, b2r = t0r - t2r, b2i = t0i - t2i;       \
    b1r = t1r + t3i, b1i = t1i - t3r, b3r = t1r - t3i, b3i = t1i + t3r;       \
  } while (0)

typedef struct pass {
  int64_t ns, nb, L; /* sub-length, blocks (L / ns), stride L = n / r */
  int64_t kn;        /* k loop count: ns, or a slice of it (threads) */
  const float* restrict xr, * restrict xi;
  float* restrict yr, * restrict yi;
  const float* restrict twr, * restrict twi;
} pass;

static void radix2(const pass* P) {
  int64_t ns = P->ns, L = P->L;
  const float *xr = P->xr, *xi = P->xi, *twr = P->twr, *twi = P->twi;
  float* restrict yr = P->yr, * restrict yi = P->yi;
  for (int64_t b = 0; b < P->nb; b++) {
    const float *x0r = xr + b * ns, *x0i = xi + b * ns;
    float *y0r = yr + b * ns * 2, *y0i = yi + b * ns * 2;
    for (int64_t k = 0; k < P->kn; k++) {
      float ar = x0r[k + L], ai = x0i[k + L];
      CMUL(ar, ai, twr[k], twi[k]);
      y0r[k] = x0r[k] + ar, y0i[k] = x0i[k] + ai;
      y0r[k + ns] = x0r[k] - ar, y0i[k + ns] = x0i[k] - ai;
    }
  }
}

static void radix4(const pass* P) {
  int64_t ns = P->ns, L = P->L;
  const float *xr = P->xr, *xi = P->xi, *twr = P->twr, *twi = P->twi;
  float* restrict yr = P->yr, * restrict yi = P->yi;
  if (ns == 1) {
    for (int64_t b = 0; b < P->nb; b++) {
      float b0r, b0i, b1r, b1i, b2r, b2i, b3r, b3i;
      DFT4(xr[b], xi[b], xr[b + L], xi[b + L], xr[b + 2 * L], xi[b + 2 * L],
           xr[b + 3 * L], xi[b + 3 * L], b0r, b0i, b1r, b1i, b2r, b2i, b3r,
           b3i);
      yr[4 * b] = b0r, yi[4 * b] = b0i, yr[4 * b + 1] = b1r;
      yi[4 * b + 1] = b1i, yr[4 * b + 2] = b2r, yi[4 * b + 2] = b2i;
      yr[4 * b + 3] = b3r, yi[4 * b + 3] = b3i;
    }
    return;
  }
  for (int64_t b = 0; b < P->nb; b++) {
    const float *x0r = xr + b * ns, *x0i = xi + b * ns;
    float *y0r = yr + b * ns * 4, *y0i = yi + b * ns * 4;
    for (int64_t k = 0; k < P->kn; k++) {
      float a1r = x0r[k + L], a1i = x0i[k + L];
      float a2r = x0r[k + 2 * L], a2i = x0i[k + 2 * L];
      float a3r = x0r[k + 3 * L], a3i = x0i[k + 3 * L];
      CMUL(a1r, a1i, twr[k], twi[k]);
      CMUL(a2r, a2i, twr[k + ns], twi[k + ns]);
      CMUL(a3r, a3i, twr[k + 2 * ns], twi[k + 2 * ns]);
      DFT4(x0r[k], x0i[k], a1r, a1i, a2r, a2i, a3r, a3i, y0r[k], y0i[k],
           y0r[k + ns], y0i[k + ns], y0r[k + 2 * ns], y0i[k + 2 * ns],
           y0r[k + 3 * ns], y0i[k + 3 * ns]);
    }
  }
}

/* Length-8 DFT of a[0..7] (split) into y at stride st. */
#define DFT8_STORE(ar, ai, yr, yi, st)                                     \
  do {                                                                     \
    const float h_ = 0.70710678118654752f;                                 \
    float e0r, e0i, e1r, e1i, e2r, e2i, e3r, e3i;                          \
    float o0r, o0i, o1r, o1i, o2r, o2i, o3r, o3i;                          \
    DFT4(ar[0], ai[0], ar[2], ai[2], ar[4], ai[4], ar[6], ai[6], e0r, e0i, \
         e1r, e1i, e2r, e2i, e3r, e3i);                                    \
    DFT4(ar[1], ai[1], ar[3], ai[3], ar[5], ai[5], ar[7], ai[7], o0r, o0i, \
         o1r, o1i, o2r, o2i, o3r, o3i);                                    \
    float w1r = (o1r + o1i) * h_, w1i = (o1i - o1r) * h_;                  \
    float w2r = o2i, w2i = -o2r;                                           \
    float w3r = (o3i - o3r) * h_, w3i = -(o3r + o3i) * h_;                 \
    yr[0] = e0r + o0r, yi[0] = e0i + o0i;                                  \
    yr[4 * (st)] = e0r - o0r, yi[4 * (st)] = e0i - o0i;                    \
    yr[(st)] = e1r + w1r, yi[(st)] = e1i + w1i;                            \
    yr[5 * (st)] = e1r - w1r, yi[5 * (st)] = e1i - w1i;                    \
    yr[2 * (st)] = e2r + w2r, yi[2 * (st)] = e2i + w2i;                    \
    yr[6 * (st)] = e2r - w2r, yi[6 * (st)] = e2i - w2i;                    \
    yr[3 * (st)] = e3r + w3r, yi[3 * (st)] = e3i + w3i;                    \
    yr[7 * (st)] = e3r - w3r, yi[7 * (st)] = e3i - w3i;                    \
  } while (0)

static void radix8(const pass* P) {
  int64_t ns = P->ns, L = P->L;
  const float *xr = P->xr, *xi = P->xi, *twr = P->twr, *twi = P->twi;
  float* restrict yr = P->yr, * restrict yi = P->yi;
  for (int64_t b = 0; b < P->nb; b++) {
    const float *x0r = xr + b * ns, *x0i = xi + b * ns;
    float *y0r = yr + b * ns * 8, *y0i = yi + b * ns * 8;
    for (int64_t k = 0; k < P->kn; k++) {
      float ar[8], ai[8];
      ar[0] = x0r[k], ai[0] = x0i[k];
      for (int q = 1; q < 8; q++) {
        ar[q] = x0r[k + q * L], ai[q] = x0i[k + q * L];
        CMUL(ar[q], ai[q], twr[k + (q - 1) * ns], twi[k + (q - 1) * ns]);
      }
      float* zr = y0r + k;
      float* zi = y0i + k;
      DFT8_STORE(ar, ai, zr, zi, ns);
    }
  }
}

/* Any odd radix r <= MAXR, pairing q and r - q. */
static void radix_odd(const pass* P, const stage* s) {
  int r = s->r, h = r / 2;
  int64_t ns = P->ns, L = P->L;
  for (int64_t b = 0; b < P->nb; b++)
    for (int64_t k = 0; k < P->kn; k++) {
      float ar[MAXR], ai[MAXR], sr[MAXR], si[MAXR], dr[MAXR], di[MAXR];
      const float *x0r = P->xr + b * ns + k, *x0i = P->xi + b * ns + k;
      ar[0] = x0r[0], ai[0] = x0i[0];
      for (int q = 1; q < r; q++) {
        ar[q] = x0r[q * L], ai[q] = x0i[q * L];
        CMUL(ar[q], ai[q], P->twr[k + (q - 1) * ns], P->twi[k + (q - 1) * ns]);
      }
      float x0 = ar[0], y0 = ai[0];
      for (int q = 1; q <= h; q++) {
        sr[q] = ar[q] + ar[r - q], si[q] = ai[q] + ai[r - q];
        dr[q] = ar[q] - ar[r - q], di[q] = ai[q] - ai[r - q];
        x0 += sr[q], y0 += si[q];
      }
      float* yr = P->yr + b * ns * r + k;
      float* yi = P->yi + b * ns * r + k;
      yr[0] = x0, yi[0] = y0;
      for (int t = 1; t <= h; t++) {
        float pr = ar[0], pi = ai[0], qr = 0, qi = 0;
        for (int q = 1; q <= h; q++) {
          int e = (int)(((int64_t)q * t) % r);
          float c = s->cr[e], sn = -s->ci[e]; /* sin(2 pi q t / r) */
          pr += sr[q] * c, pi += si[q] * c;
          qr += di[q] * sn, qi += dr[q] * sn;
        }
        yr[t * ns] = pr + qr, yi[t * ns] = pi - qi;
        yr[(r - t) * ns] = pr - qr, yi[(r - t) * ns] = pi + qi;
      }
    }
}

static void run_pass(const pass* P, const stage* s) {
  switch (s->r) {
    case 2:
      radix2(P);
      break;
    case 4:
      radix4(P);
      break;
    case 8:
      radix8(P);
      break;
    default:
      radix_odd(P, s);
      break;
  }
}

/* A stage split over cmx's pool: by blocks b, or by k when the blocks are
 * few (the last stages). */
typedef struct par_ctx {
  const pass* P;
  const stage* s;
  int by_b;
} par_ctx;

static void pass_chunk(void* ctx, int64_t begin, int64_t end) {
  const par_ctx* c = ctx;
  pass Q = *c->P;
  int64_t off = c->by_b ? begin * Q.ns : begin;
  Q.xr += off, Q.xi += off;
  Q.yr += c->by_b ? off * c->s->r : off, Q.yi += c->by_b ? off * c->s->r : off;
  if (c->by_b) {
    Q.nb = end - begin;
  } else {
    Q.kn = end - begin;
    Q.twr += begin, Q.twi += begin;
  }
  run_pass(&Q, c->s);
}

/* Runs p's stages on (xr, xi) with (yr, yi) as the other buffer; returns
 * the buffer holding the result (0: x, 1: y). par: split each stage over
 * the pool (one long transform). */
static int run_stages(const cmx__fft_plan* p, float* xr, float* xi, float* yr,
                      float* yi, bool par) {
  int where = 0;
  for (int i = 0; i < p->nst; i++) {
    const stage* s = &p->st[i];
    pass P = {.ns = s->ns, .L = p->n / s->r, .twr = s->twr, .twi = s->twi};
    P.nb = P.L / s->ns;
    P.kn = s->ns;
    P.xr = where ? yr : xr, P.xi = where ? yi : xi;
    P.yr = where ? xr : yr, P.yi = where ? xi : yi;
    if (par) {
      par_ctx c = {&P, s, P.nb >= 16 || s->ns == 1};
      int64_t units = c.by_b ? P.nb : s->ns;
      int64_t per = p->n / units; /* points per unit */
      cmx__parallel_for(units, 1 + 16384 / per, pass_chunk, &c);
    } else {
      run_pass(&P, s);
    }
    where ^= 1;
  }
  return where;
}

/* Forward transform of (xr, xi) (length n); the result lands in (*rr, *ri),
 * one of the buffers x, y. extra: Bluestein's 4 m floats. */
static void transform(const cmx__fft_plan* p, float* xr, float* xi, float* yr,
                      float* yi, float* extra, float** rr, float** ri,
                      bool par) {
  if (!p->m) {
    int w = run_stages(p, xr, xi, yr, yi, par);
    *rr = w ? yr : xr, *ri = w ? yi : xi;
    return;
  }
  int64_t n = p->n, m = p->m;
  float *ar = extra, *ai = ar + m, *tr = ai + m, *ti = tr + m;
  for (int64_t k = 0; k < n; k++) {
    float a = xr[k], b = xi[k];
    CMUL(a, b, p->wr[k], p->wi[k]);
    ar[k] = a, ai[k] = b;
  }
  memset(ar + n, 0, (size_t)(m - n) * sizeof(float));
  memset(ai + n, 0, (size_t)(m - n) * sizeof(float));
  int w = run_stages(p->sub, ar, ai, tr, ti, par);
  float *fr = w ? tr : ar, *fi = w ? ti : ai;
  for (int64_t k = 0; k < m; k++) { /* conj(F * B) feeds the inverse */
    float a = fr[k], b = fi[k];
    CMUL(a, b, p->br[k], p->bi[k]);
    fr[k] = a, fi[k] = -b;
  }
  float *gr = w ? ar : tr, *gi = w ? ai : ti;
  w = run_stages(p->sub, fr, fi, gr, gi, par);
  float *hr = w ? gr : fr, *hi = w ? gi : fi;
  for (int64_t k = 0; k < n; k++) {
    float a = hr[k], b = -hi[k];
    CMUL(a, b, p->wr[k], p->wi[k]);
    yr[k] = a, yi[k] = b;
  }
  *rr = yr, *ri = yi;
}

/* ---------------- lines ---------------- */
void cmx__fft_c2c(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, bool inverse, float scale,
                  float* work, bool par) {
  int64_t n = p->n;
  float *xr = work, *xi = xr + n, *yr = xi + n, *yi = yr + n, *rr, *ri;
  float sg = inverse ? -1.f : 1.f;
  for (int64_t j = 0; j < n; j++)
    xr[j] = in[2 * j * is], xi[j] = sg * in[2 * j * is + 1];
  transform(p, xr, xi, yr, yi, yi + n, &rr, &ri, par);
  float si = sg * scale;
  for (int64_t k = 0; k < n; k++)
    out[2 * k * os] = scale * rr[k], out[2 * k * os + 1] = si * ri[k];
}

void cmx__fft_r2c(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, float scale, float* work, bool par) {
  const cmx__fft_plan* c = p->sub;
  int64_t n = p->n, h = c->n;
  float *xr = work, *xi = xr + h, *yr = xi + h, *yi = yr + h, *rr, *ri;
  if (n & 1) {
    for (int64_t j = 0; j < n; j++) xr[j] = in[j * is], xi[j] = 0;
    transform(c, xr, xi, yr, yi, yi + h, &rr, &ri, par);
    for (int64_t k = 0; k <= n / 2; k++)
      out[2 * k * os] = scale * rr[k], out[2 * k * os + 1] = scale * ri[k];
    return;
  }
  for (int64_t j = 0; j < h; j++)
    xr[j] = in[2 * j * is], xi[j] = in[(2 * j + 1) * is];
  transform(c, xr, xi, yr, yi, yi + h, &rr, &ri, par);
  float hs = 0.5f * scale;
  for (int64_t k = 0; k <= h; k++) {
    int64_t k1 = k == h ? 0 : k, k2 = k == 0 ? 0 : h - k;
    float zr = rr[k1], zi = ri[k1], cr = rr[k2], ci = -ri[k2];
    float er = zr + cr, ei = zi + ci;  /* 2 E_k */
    float or_ = zi - ci, oi = cr - zr; /* 2 O_k = (Z - conj Z') / i */
    CMUL(or_, oi, p->wr[k], p->wi[k]);
    out[2 * k * os] = hs * (er + or_), out[2 * k * os + 1] = hs * (ei + oi);
  }
}

void cmx__fft_c2r(const cmx__fft_plan* p, const float* in, int64_t is,
                  float* out, int64_t os, float scale, float* work, bool par) {
  const cmx__fft_plan* c = p->sub;
  int64_t n = p->n, h = c->n;
  float *xr = work, *xi = xr + h, *yr = xi + h, *yi = yr + h, *rr, *ri;
  if (n & 1) { /* the Hermitian extension, conjugated for the inverse */
    for (int64_t k = 0; k < n; k++) {
      int64_t src = k <= n / 2 ? k : n - k;
      float im = k == 0 ? 0 : in[2 * src * is + 1];
      xr[k] = in[2 * src * is], xi[k] = k <= n / 2 ? -im : im;
    }
    transform(c, xr, xi, yr, yi, yi + h, &rr, &ri, par);
    for (int64_t j = 0; j < n; j++) out[j * os] = scale * rr[j];
    return;
  }
  for (int64_t k = 0; k < h; k++) {
    float ar = in[2 * k * is], ai = k == 0 ? 0 : in[2 * k * is + 1];
    int64_t k2 = h - k;
    float br = in[2 * k2 * is], bi = (k2 == h) ? 0 : -in[2 * k2 * is + 1];
    float dr = ar - br, di = ai - bi; /* X_k - conj X_{h-k} */
    CMUL(dr, di, p->wr[k], -p->wi[k]);
    /* Z = (X + conj X') + i d; loaded conjugated for the inverse */
    xr[k] = (ar + br) - di, xi[k] = -((ai + bi) + dr);
  }
  transform(c, xr, xi, yr, yi, yi + h, &rr, &ri, par);
  for (int64_t j = 0; j < h; j++)
    out[2 * j * os] = scale * rr[j], out[(2 * j + 1) * os] = -scale * ri[j];
}

/* ---------------- plans ---------------- */
static void plan_free(cmx__fft_plan* p) {
  if (!p) return;
  for (int i = 0; i < p->nst; i++) free(p->st[i].twr);
  free(p->wr);
  free(p->br);
  free(p);
}

/* exp(-2 pi i num / den) with num reduced mod den, in double. */
static void expi(int64_t num, int64_t den, double* c, double* s) {
  double a = -2.0 * M_PI * (double)(num % den) / (double)den;
  *c = cos(a), *s = sin(a);
}

/* The radices of n (8s, 4, 2, then odd factors); false when a prime
 * factor exceeds MAXR. */
static bool factor(int64_t n, int* rs, int* nr) {
  *nr = 0;
  while (n % 8 == 0) rs[(*nr)++] = 8, n /= 8;
  if (n % 4 == 0) rs[(*nr)++] = 4, n /= 4;
  if (n % 2 == 0) rs[(*nr)++] = 2, n /= 2;
  for (int f = 3; n > 1; f += 2) {
    if (f > MAXR) return false;
    while (n % f == 0) rs[(*nr)++] = f, n /= f;
  }
  return true;
}

static const cmx__fft_plan* plan_lookup(int64_t n, bool real);

static cmx__fft_plan* plan_new(int64_t n, bool real) {
  cmx__fft_plan* p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = n, p->real = real;
  if (real) {
    int64_t h = n & 1 ? n : n / 2;
    p->sub = plan_lookup(h, false);
    p->wr = malloc((size_t)(2 * (n / 2 + 1)) * sizeof(float));
    if (!p->sub || !p->wr) return plan_free(p), NULL;
    p->wi = p->wr + n / 2 + 1;
    for (int64_t k = 0; k <= n / 2; k++) {
      double c, s;
      expi(k, n, &c, &s);
      p->wr[k] = (float)c, p->wi[k] = (float)s;
    }
    p->work = p->sub->work;
    return p;
  }
  int rs[MAXST], nr;
  if (factor(n, rs, &nr)) {
    int64_t ns = 1;
    for (int i = 0; i < nr; i++) {
      stage* s = &p->st[p->nst++];
      s->r = rs[i], s->ns = ns;
      int64_t cnt = (int64_t)(s->r - 1) * ns;
      s->twr = malloc((size_t)(2 * cnt + 1) * sizeof(float));
      if (!s->twr) return plan_free(p), NULL;
      s->twi = s->twr + cnt;
      for (int q = 1; q < s->r; q++)
        for (int64_t k = 0; k < ns; k++) {
          double c, sn;
          expi(q * k, ns * s->r, &c, &sn);
          s->twr[(q - 1) * ns + k] = (float)c,
                                s->twi[(q - 1) * ns + k] = (float)sn;
        }
      for (int t = 0; t < s->r; t++) {
        double c, sn;
        expi(t, s->r, &c, &sn);
        s->cr[t] = (float)c, s->ci[t] = (float)sn;
      }
      ns *= s->r;
    }
    p->work = 4 * n;
    return p;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  p->sub = plan_lookup(m, false);
  p->wr = malloc((size_t)(2 * n) * sizeof(float));
  p->br = malloc((size_t)(2 * m) * sizeof(float));
  float* tmp = malloc((size_t)(4 * m) * sizeof(float));
  if (!p->sub || !p->wr || !p->br || !tmp) return free(tmp), plan_free(p), NULL;
  p->wi = p->wr + n, p->bi = p->br + m;
  memset(p->br, 0, (size_t)(2 * m) * sizeof(float));
  for (int64_t k = 0; k < n; k++) {
    double c, s; /* exp(-i pi k^2 / n) = exp(-2 pi i k^2 / 2n) */
    expi((int64_t)((unsigned __int128)k * k % (unsigned __int128)(2 * n)),
         2 * n, &c, &s);
    p->wr[k] = (float)c, p->wi[k] = (float)s;
    p->br[k] = (float)(c / (double)m), p->bi[k] = (float)(-s / (double)m);
    if (k) p->br[m - k] = p->br[k], p->bi[m - k] = p->bi[k];
  }
  int w = run_stages(p->sub, p->br, p->bi, tmp, tmp + m, false);
  if (w) {
    memcpy(p->br, tmp, (size_t)m * sizeof(float));
    memcpy(p->bi, tmp + m, (size_t)m * sizeof(float));
  }
  free(tmp);
  p->work = 4 * n + 4 * m;
  return p;
}

typedef struct entry {
  cmx__fft_plan* p;
  struct entry* next;
} entry;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static entry* g_plans;

/* Called with g_mu held (plans of sub-lengths are built recursively). */
static const cmx__fft_plan* plan_lookup(int64_t n, bool real) {
  for (entry* e = g_plans; e; e = e->next)
    if (e->p->n == n && e->p->real == real) return e->p;
  entry* e = malloc(sizeof *e);
  cmx__fft_plan* p = e ? plan_new(n, real) : NULL;
  if (!p) return free(e), NULL;
  e->p = p;
  e->next = g_plans;
  g_plans = e;
  return p;
}

void cmx__fft_plans_fork(int phase) {
  if (phase == CMX__FORK_PREPARE)
    pthread_mutex_lock(&g_mu);
  else
    pthread_mutex_unlock(&g_mu);
}

const cmx__fft_plan* cmx__fft_plan_get(int64_t n, bool real) {
  if (n < 1) return NULL;
  pthread_mutex_lock(&g_mu);
  const cmx__fft_plan* p = plan_lookup(n, real);
  pthread_mutex_unlock(&g_mu);
  return p;
}

int64_t cmx__fft_work_floats(const cmx__fft_plan* p) {
  return p->work;
}
