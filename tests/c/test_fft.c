/* mx.fft through the C API against a direct O(n^2) DFT in double: c2c
 * forward and inverse, r2c and c2r (odd and even n), lengths 1..40, primes
 * (Bluestein), mixed radices and powers of two, two axes with padding and
 * truncation, the normalisations; errors; and the rules: vjp against finite
 * differences and jvp against vjp (tc_check_grad on real inputs, complex
 * ones built as re + i im), vmap against a loop. stft against frames built
 * here and the DFT, istft giving the signal back, their errors, vjp/jvp and
 * vmap. */
#include <complex.h>

#include "harness.h"
#include "tcheck.h"

#define S CMX_STREAM_DEFAULT

/* sum_j x_j exp(sign 2 pi i j k / n) * scale, k < nout. */
static void dft(const double complex* x, int64_t n, double complex* y,
                int64_t nout, int sign, double scale) {
  for (int64_t k = 0; k < nout; k++) {
    long double complex acc = 0;
    for (int64_t j = 0; j < n; j++) {
      long double a = sign * 2.0L * 3.14159265358979323846264338327950288L *
                      (long double)((j * k) % n) / (long double)n;
      acc += x[j] * (cosl(a) + I * sinl(a));
    }
    y[k] = (double complex)acc * scale;
  }
}

static cmx_array cvec(const double complex* x, int64_t n) {
  h_tensor t = h_alloc(&n, 1, CMX_COMPLEX64);
  for (int64_t i = 0; i < n; i++) t.re[i] = creal(x[i]), t.im[i] = cimag(x[i]);
  cmx_array a = h_array(&t, H_CONTIG);
  h_free(&t);
  return a;
}

/* max |got - want| / max(1, max |want|). */
static double rel_err(cmx_array got, const double complex* want, int64_t n) {
  h_tensor g = h_read(got);
  if (g.size != n) {
    h_free(&g);
    return INFINITY;
  }
  double e = 0, m = 1;
  for (int64_t i = 0; i < n; i++) {
    double complex gv = g.re[i] + I * (g.im ? g.im[i] : 0);
    if (!(cabs(gv - want[i]) <= e)) e = cabs(gv - want[i]);
    if (cabs(want[i]) > m) m = cabs(want[i]);
  }
  h_free(&g);
  return e / m;
}

static void check_length(int64_t n, uint64_t seed) {
  double complex* x = malloc((size_t)n * sizeof *x);
  double complex* y = malloc((size_t)n * sizeof *y);
  double complex* xr = malloc((size_t)n * sizeof *xr);
  for (int64_t i = 0; i < n; i++) {
    x[i] = h_rand_unit(&seed) - 0.5 + I * (h_rand_unit(&seed) - 0.5);
    xr[i] = creal(x[i]);
  }
  cmx_array a = cvec(x, n), ar = NULL, o = NULL;
  OK(cmx_real(&ar, a, S));
  double tol = 2e-6 * (1 + log2((double)n + 1));
  OK(cmx_fft_fft(&o, a, NULL, -1, NULL, S));
  dft(x, n, y, n, -1, 1);
  CHECK_MSG(rel_err(o, y, n) < tol, "fft n=%lld", (long long)n);
  cmx_array_release(o);
  OK(cmx_fft_ifft(&o, a, NULL, -1, "ortho", S));
  dft(x, n, y, n, 1, 1 / sqrt((double)n));
  CHECK_MSG(rel_err(o, y, n) < tol, "ifft ortho n=%lld", (long long)n);
  cmx_array_release(o);
  OK(cmx_fft_rfft(&o, ar, NULL, -1, NULL, S));
  dft(xr, n, y, n / 2 + 1, -1, 1);
  CHECK_MSG(rel_err(o, y, n / 2 + 1) < tol, "rfft n=%lld", (long long)n);
  cmx_array_release(o);
  /* irfft of the spectrum of xr gives xr back */
  cmx_array spec = cvec(y, n / 2 + 1);
  OK(cmx_fft_irfft(&o, spec, &n, -1, NULL, S));
  CHECK_MSG(rel_err(o, xr, n) < tol, "irfft n=%lld", (long long)n);
  cmx_array_release(o), cmx_array_release(spec);
  cmx_array_release(a), cmx_array_release(ar);
  free(x), free(y), free(xr);
}

static void test_lengths(void) {
  for (int64_t n = 1; n <= 40; n++) check_length(n, 100 + (uint64_t)n);
  int64_t more[] = {41,  53,  61,  64,  97,   101, 128,
                    210, 257, 360, 509, 1009, 1024};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    check_length(more[i], 300 + i);
}

/* fft2 with s = (3, 8) on a (4, 5) input (truncate rows, pad columns)
 * against the separable DFT, and fftshift. */
static void test_two_axes(void) {
  double complex x[20], pad[3][8], tmp[3][8], col[3], colo[3], want[24];
  uint64_t seed = 7;
  for (int i = 0; i < 20; i++)
    x[i] = h_rand_unit(&seed) + I * h_rand_unit(&seed);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 8; c++) pad[r][c] = c < 5 ? x[r * 5 + c] : 0;
  for (int r = 0; r < 3; r++) dft(pad[r], 8, tmp[r], 8, -1, 1);
  for (int c = 0; c < 8; c++) {
    for (int r = 0; r < 3; r++) col[r] = tmp[r][c];
    dft(col, 3, colo, 3, -1, 1);
    for (int r = 0; r < 3; r++) want[r * 8 + c] = colo[r];
  }
  int64_t shape[2] = {4, 5};
  h_tensor t = h_alloc(shape, 2, CMX_COMPLEX64);
  for (int i = 0; i < 20; i++) t.re[i] = creal(x[i]), t.im[i] = cimag(x[i]);
  cmx_array a = h_array(&t, H_CONTIG), o = NULL;
  h_free(&t);
  int64_t s[2] = {3, 8};
  OK(cmx_fft_fft2(&o, a, s, 2, NULL, 0, NULL, S));
  CHECK(rel_err(o, want, 24) < 1e-5);
  cmx_array_release(o);
  int axes[2] = {-1, 0}; /* the same transform, axes listed the other way */
  int64_t s2[2] = {8, 3};
  OK(cmx_fft_fftn(&o, a, s2, 2, axes, 2, "forward", S));
  for (int i = 0; i < 24; i++) want[i] /= 24;
  CHECK(rel_err(o, want, 24) < 1e-5);
  cmx_array_release(o);
  FAILS(cmx_fft_fftn(&o, a, s, 2, NULL, 0, NULL, S), CMX_ERR_VALUE,
        "`axes` should not be `None`");
  FAILS(cmx_fft_fft(&o, a, NULL, -1, "sideways", S), CMX_ERR_VALUE,
        "Invalid norm");
  int64_t zero = 0;
  FAILS(cmx_fft_fft(&o, a, &zero, -1, NULL, S), CMX_ERR_VALUE,
        "Invalid FFT output size");
  cmx_array_release(a);
}

/* ---------------- transforms ---------------- */
typedef struct {
  int kind; /* 0 fft, 1 ifft, 2 rfft, 3 irfft, 4 fft2, 5 irfft2, 6 stft,
             * 7 istft */
  int64_t n;
  const cmx_array* base; /* the point the check differentiates at */
} fctx;

/* (in - base) * 1e6 in float64: zero at the base point and +-v at the
 * finite-difference points x +- 1e-6 v, so float32 transforms of it are
 * exact enough for the differences; the 1e-6 on the way out makes the
 * function the transform plus a constant. */
static cmx_array blow_up(cmx_array in, const cmx_array* base, int i) {
  if (!base) return cmx_array_retain(in); /* vmap checks: no differences */
  cmx_array d = NULL, k = NULL, r = NULL;
  cmx_subtract(&d, in, base[i], S);
  cmx_array_from_double(&k, 1e6, CMX_FLOAT64);
  cmx_multiply(&r, d, k, S);
  cmx_array_release(d), cmx_array_release(k);
  return r;
}

/* The transform of in[0] + i in[1] (real kinds: in[0]), as real and
 * imaginary parts (real outputs: one array), around the base point. */
static cmx_status t_fft(void* c, const cmx_array* in, int nin, cmx_array* o,
                        int* no) {
  const fctx* f = c;
  cmx_array x = NULL, im = NULL, iu = NULL, y = NULL, y6 = NULL, k = NULL;
  cmx_array b0 = blow_up(in[0], f->base, 0);
  cmx_status st = b0 ? CMX_OK : cmx_last_status();
  if (st == CMX_OK && nin == 2) {
    cmx_array b1 = blow_up(in[1], f->base, 1);
    st = cmx_array_from_complex(&iu, 0, 1);
    if (st == CMX_OK) st = cmx_multiply(&im, b1, iu, S);
    if (st == CMX_OK) st = cmx_add(&x, b0, im, S);
    cmx_array_release(b1);
  } else if (st == CMX_OK) {
    x = cmx_array_retain(b0);
  }
  cmx_array_release(b0);
  const int64_t* n = f->n ? &f->n : NULL;
  if (st == CMX_OK) switch (f->kind) {
      case 0:
        st = cmx_fft_fft(&y, x, n, -1, NULL, S);
        break;
      case 1:
        st = cmx_fft_ifft(&y, x, n, 0, "ortho", S);
        break;
      case 2:
        st = cmx_fft_rfft(&y, x, n, -1, NULL, S);
        break;
      case 3:
        st = cmx_fft_irfft(&y, x, n, -1, NULL, S);
        break;
      case 4:
        st = cmx_fft_fft2(&y, x, NULL, 0, NULL, 0, NULL, S);
        break;
      case 5:
        st = cmx_fft_irfft2(&y, x, NULL, 0, NULL, 0, NULL, S);
        break;
      case 6: { /* n_fft 4, hop 2, edge padding */
        int64_t hop = 2;
        st = cmx_fft_stft(&y, x, 4, &hop, NULL, NULL, true, "edge", NULL, NULL,
                          S);
        break;
      }
      default: { /* n_fft 4 (3 bins), hop 1, trimmed to 6 samples */
        int64_t hop = 1, len = 6;
        st = cmx_fft_istft(&y, x, NULL, &hop, NULL, NULL, true, NULL, NULL,
                           &len, S);
        break;
      }
    }
  cmx_array_release(x), cmx_array_release(im), cmx_array_release(iu);
  if (st == CMX_OK) st = cmx_array_from_double(&k, 1e-6, CMX_FLOAT32);
  if (st == CMX_OK) st = cmx_multiply(&y6, y, k, S);
  cmx_array_release(y), cmx_array_release(k);
  y = y6;
  if (st != CMX_OK) return st;
  if (cmx_array_dtype(y) != CMX_COMPLEX64) {
    *no = 1;
    o[0] = y;
    return CMX_OK;
  }
  *no = 2;
  st = cmx_real(&o[0], y, S);
  if (st == CMX_OK) st = cmx_imag(&o[1], y, S);
  cmx_array_release(y);
  return st;
}

static void test_transforms(void) {
  int64_t s36[2] = {3, 6}, s35[2] = {3, 5};
  cmx_array re = NULL, im = NULL, r5 = NULL, i5 = NULL;
  h_tensor t = h_random(s36, 2, CMX_FLOAT64, -1, 1, 41);
  re = h_array(&t, H_CONTIG);
  h_free(&t);
  t = h_random(s36, 2, CMX_FLOAT64, -1, 1, 42);
  im = h_array(&t, H_CONTIG);
  h_free(&t);
  t = h_random(s35, 2, CMX_FLOAT64, -1, 1, 43);
  r5 = h_array(&t, H_CONTIG);
  h_free(&t);
  t = h_random(s35, 2, CMX_FLOAT64, -1, 1, 44);
  i5 = h_array(&t, H_CONTIG);
  h_free(&t);
  cmx_array c6[2] = {re, im}, c5[2] = {r5, i5};
  fctx k[] = {{0, 0, c6}, {1, 0, c6}, {0, 8, c6}, {4, 0, c6},
              {3, 0, c5}, {3, 7, c5}, {5, 0, c5}};
  const char* names[] = {"fft",   "ifft ortho axis 0", "fft n=8", "fft2",
                         "irfft", "irfft n=7",         "irfft2"};
  for (int i = 0; i < 7; i++)
    tc_check_grad(names[i], t_fft, &k[i], k[i].base, 2, 1e-3);
  fctx kr[] = {{2, 0, c6}, {2, 5, c6}, {2, 9, c6}, {6, 0, c6}};
  for (int i = 0; i < 4; i++)
    tc_check_grad(i < 3 ? "rfft" : "stft", t_fft, &kr[i], &re, 1, 1e-3);
  fctx ki = {7, 0, c5};
  tc_check_grad("istft", t_fft, &ki, ki.base, 2, 1e-3);
  /* vmap (no base point: the plain transforms) */
  int ax0[2] = {0, 0}, ax1[1] = {1};
  fctx vf = {0, 0, NULL}, vi = {3, 0, NULL}, vr = {2, 0, NULL};
  tc_check_vmap("vmap fft", t_fft, &vf, c6, 2, ax0, 0);
  tc_check_vmap("vmap irfft", t_fft, &vi, c5, 2, ax0, 1);
  tc_check_vmap("vmap rfft axis 1", t_fft, &vr, &re, 1, ax1, 0);
  fctx vs = {6, 0, NULL}, vis = {7, 0, NULL};
  tc_check_vmap("vmap stft axis 1", t_fft, &vs, &re, 1, ax1, 1);
  cmx_array c3[2] = {NULL, NULL}; /* (3, 2, 3): spectra of 2 bins */
  for (int i = 0; i < 2; i++)
    OK(cmx_reshape(&c3[i], c6[i], (int64_t[]){3, 2, 3}, 3, S));
  tc_check_vmap("vmap istft", t_fft, &vis, c3, 2, ax0, 0);
  cmx_array_release(c3[0]), cmx_array_release(c3[1]);
  cmx_array_release(re), cmx_array_release(im);
  cmx_array_release(r5), cmx_array_release(i5);
}

/* ---------------- stft / istft ---------------- */
/* stft of (2, 21) float32 with a 6-sample window centred in n_fft = 8, hop
 * 3, reflect padding, against the DFT of frames built here; istft of it
 * (length 21) gives the signal back; the errors name the op. */
static void test_stft(void) {
  enum { B = 2, N = 21, NFFT = 8, HOP = 3, NFR = 1 + (N + NFFT - NFFT) / HOP };
  int64_t shape[2] = {B, N}, wn = 6, n_fft = NFFT, hop = HOP, len = N;
  const double wv[6] = {0.2, 0.5, 0.9, 1.0, 0.7, 0.3};
  double wc[NFFT] = {0};
  for (int k = 0; k < 6; k++) wc[1 + k] = wv[k]; /* (8 - 6) / 2 zeros */
  h_tensor tx = h_random(shape, 2, CMX_FLOAT32, -1, 1, 51);
  cmx_array x = h_array(&tx, H_CONTIG), y = NULL, X = NULL, bad = NULL;
  cmx_array w = h_from_doubles(wv, &wn, 1, CMX_FLOAT32);
  OK(cmx_fft_stft(&X, x, NFFT, &hop, NULL, w, true, "reflect", "ortho", NULL,
                  S));
  CHECK(X && cmx_array_ndim(X) == 3 && cmx_array_dim(X, 1) == NFFT / 2 + 1 &&
        cmx_array_dim(X, 2) == NFR);
  double complex want[B * (NFFT / 2 + 1) * NFR], frame[NFFT], bins[NFFT];
  for (int b = 0; b < B; b++)
    for (int f = 0; f < NFR; f++) {
      for (int k = 0; k < NFFT; k++) {
        int j = f * HOP + k - NFFT / 2; /* reflected into [0, N) */
        j = j < 0 ? -j : j >= N ? 2 * (N - 1) - j : j;
        frame[k] = tx.re[b * N + j] * wc[k];
      }
      dft(frame, NFFT, bins, NFFT / 2 + 1, -1, 1 / sqrt(NFFT));
      for (int q = 0; q <= NFFT / 2; q++)
        want[(b * (NFFT / 2 + 1) + q) * NFR + f] = bins[q];
    }
  CHECK(rel_err(X, want, B * (NFFT / 2 + 1) * NFR) < 1e-5);
  OK(cmx_fft_istft(&y, X, &n_fft, &hop, NULL, w, true, "ortho", NULL, &len, S));
  double complex sig[B * N];
  for (int i = 0; i < B * N; i++) sig[i] = tx.re[i];
  CHECK(rel_err(y, sig, B * N) < 1e-5);
  cmx_array_release(y);
  y = NULL;
  int64_t zero = 0, big = 9;
  FAILS(cmx_fft_stft(&y, x, 0, NULL, NULL, NULL, true, NULL, NULL, NULL, S),
        CMX_ERR_VALUE, "[stft] n_fft must be positive.");
  FAILS(cmx_fft_stft(&y, x, 8, &zero, NULL, NULL, true, NULL, NULL, NULL, S),
        CMX_ERR_VALUE, "[stft] hop_length must be positive.");
  FAILS(cmx_fft_stft(&y, x, 8, NULL, &big, NULL, true, NULL, NULL, NULL, S),
        CMX_ERR_VALUE, "[stft] window length must not exceed n_fft.");
  FAILS(cmx_fft_stft(&y, x, 8, NULL, NULL, NULL, true, "wrap", NULL, NULL, S),
        CMX_ERR_VALUE, "[stft] Invalid padding mode (wrap) passed to pad");
  FAILS(cmx_fft_stft(&y, x, 32, NULL, NULL, NULL, false, NULL, NULL, NULL, S),
        CMX_ERR_VALUE, "[stft] Input is too short for the given n_fft.");
  OK(cmx_reshape(&bad, x, (int64_t[]){B * N}, 1, S));
  FAILS(
      cmx_fft_istft(&y, bad, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, S),
      CMX_ERR_VALUE, "[istft] Input must have at least two dimensions");
  FAILS(cmx_fft_istft(&y, X, NULL, NULL, NULL, w, true, "sideways", NULL, NULL,
                      S),
        CMX_ERR_VALUE, "[istft] Invalid norm.");
  CHECK(y == NULL);
  h_free(&tx);
  cmx_array_release(x), cmx_array_release(w), cmx_array_release(X);
  cmx_array_release(bad);
}

/* Long single transforms (split over the pool): round trips of 2^16 and
 * the prime 65537 (Bluestein over 2^18), and Parseval's identity. */
static void test_long(void) {
  int64_t ns[2] = {65536, 65537};
  for (int i = 0; i < 2; i++) {
    int64_t n = ns[i];
    h_tensor t = h_random(&n, 1, CMX_COMPLEX64, -1, 1, 900 + (uint64_t)i);
    cmx_array x = h_array(&t, H_CONTIG), y = NULL, z = NULL;
    OK(cmx_fft_fft(&y, x, NULL, -1, "ortho", S));
    OK(cmx_fft_ifft(&z, y, NULL, -1, "ortho", S));
    h_tensor ty = h_read(y), tz = h_read(z);
    double e = 0, ex = 0, ey = 0;
    for (int64_t k = 0; k < n && ty.size == n && tz.size == n; k++) {
      e = fmax(e, fabs(tz.re[k] - t.re[k]) + fabs(tz.im[k] - t.im[k]));
      ex += t.re[k] * t.re[k] + t.im[k] * t.im[k];
      ey += ty.re[k] * ty.re[k] + ty.im[k] * ty.im[k];
    }
    CHECK_MSG(ty.size == n && e < 1e-4, "round trip n=%lld: %g", (long long)n,
              e);
    CHECK_MSG(fabs(ex - ey) < 1e-4 * ex, "Parseval n=%lld", (long long)n);
    h_free(&t), h_free(&ty), h_free(&tz);
    cmx_array_release(x), cmx_array_release(y), cmx_array_release(z);
  }
}

int main(void) {
  RUN(test_lengths);
  RUN(test_long);
  RUN(test_two_axes);
  RUN(test_transforms);
  RUN(test_stft);
  return test_summary("test_fft");
}
