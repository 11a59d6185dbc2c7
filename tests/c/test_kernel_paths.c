/* CPU kernel paths added for speed (benchmarks/bench_sweep.c found them
 * slow), each run at a size and layout that reaches it and checked against
 * a plain reference:
 *   - float16 conversions (branch-free, vectorised; cpu.h, copy.c) against
 *     the public cmx_float_to_float16 / cmx_float16_to_float, bit for bit,
 *     over every half and a dense sample of floats;
 *   - float floor_divide and remainder (binary.c: exact fmod in double for
 *     quotients below 2^29, the library's fmod otherwise) against NumPy's
 *     divmod written from its definition, bit for bit;
 *   - Var of rows holding NaN or infinities is NaN (it was 0);
 *   - LogSumExp, Softmax and Var over leading/middle axes (column blocks)
 *     and short rows (transposed tiles) (reduce_softmax.c) against a double
 *     reference, and bit for bit against the row kernels;
 *   - Reduce over rows shorter than 16 (reduce.c, impl->rows: many outputs
 *     a call), and narrow columns whose lanes combine as a tree when the
 *     operation is exact in any order (reduce_impl.c fold), against plain
 *     loops in the kernel's order;
 *   - ArgReduce over short rows, narrow columns and a transposed input's
 *     stride-1 dim (reduce_arg.c) against the first index of the extremum;
 *   - Scan along contiguous rows (scan.c: many rows a call, 8 side by side
 *     for max/min/logcumsumexp) against a plain sequential scan;
 *   - Sort/ArgSort/Partition/ArgPartition of short rows (sort.c: many rows
 *     a call) and along strided axes (tiles through contiguous buffers)
 *     against a stable sort in NumPy's order;
 *   - take along inner axes (indexing.c: strided slices gathered in
 *     tiles across positions) against plain indexing;
 *   - transposed convolutions with few output channels (conv_scatter.c:
 *     the innermost taps at once) against the definition.
 * The pool has 2 threads here (CMX_NUM_THREADS), so large work splits. */
#include <stdint.h>

#include "test.h"

#define S CMX_STREAM_DEFAULT

static uint64_t g_rng = 0x243f6a8885a308d3ull;
static uint32_t rnd32(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(g_rng >> 32);
}

static cmx_array from(const void* v, const int64_t* shape, int nd,
                      cmx_dtype dt) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, v, shape, nd, dt));
  return a;
}

/* ---------------- float16 conversions ---------------- */

/* Floats around every half's value and rounding midpoint, near the
 * subnormal and overflow thresholds, specials, and a stride over all bit
 * patterns; converted by astype, compared with cmx_float_to_float16. */
static void test_f16_convert(void) {
  int64_t cap = 3 << 20, n = 0;
  uint32_t* bits = malloc((size_t)cap * sizeof(uint32_t));
  for (uint32_t h = 0; h < 0x7c00; h += 1) { /* positive finite halves */
    float f = cmx_float16_to_float((cmx_float16_t)h);
    uint32_t u;
    memcpy(&u, &f, 4);
    /* the value, its neighbours, and the midpoint to the next half */
    for (int d = -1; d <= 1; d++) bits[n++] = u + (uint32_t)d;
    float g = cmx_float16_to_float((cmx_float16_t)(h + 1));
    float mid = (f + g) / 2; /* exact in float */
    memcpy(&u, &mid, 4);
    for (int d = -1; d <= 1; d++) bits[n++] = u + (uint32_t)d;
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) bits[n++] = (uint32_t)u;
  const uint32_t special[] = {
      0x00000000u, 0x00000001u, 0x33000000u, 0x33000001u, 0x387fffffu,
      0x38800000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x47800000u,
      0x7f7fffffu, 0x7f800000u, 0x7f800001u, 0x7fc00000u, 0x7fffffffu};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    bits[n++] = special[i];
  /* both signs */
  int64_t half = n;
  for (int64_t i = 0; i < half; i++) bits[n++] = bits[i] ^ 0x80000000u;
  CHECK(n <= cap);
  int64_t shape[1] = {n};
  cmx_array x = from(bits, shape, 1, CMX_FLOAT32), h = NULL, back = NULL;
  OK(cmx_astype(&h, x, CMX_FLOAT16, S));
  const uint16_t* hp = NULL;
  OK(cmx_array_data(h, (const void**)&hp));
  int64_t bad = 0;
  for (int64_t i = 0; hp && i < n; i++) {
    float f;
    memcpy(&f, &bits[i], 4);
    if (hp[i] != cmx_float_to_float16(f) && bad++ < 5)
      fprintf(stderr, "f32 -> f16 %08x: %04x, want %04x\n", bits[i], hp[i],
              cmx_float_to_float16(f));
  }
  CHECK_MSG(bad == 0, "%lld float -> half mismatches", (long long)bad);
  /* every half back to float */
  uint16_t* all = malloc(65536 * sizeof(uint16_t));
  for (uint32_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  int64_t s2[1] = {65536};
  cmx_array ha = from(all, s2, 1, CMX_FLOAT16);
  OK(cmx_astype(&back, ha, CMX_FLOAT32, S));
  const float* fp = NULL;
  OK(cmx_array_data(back, (const void**)&fp));
  bad = 0;
  for (uint32_t i = 0; fp && i < 65536; i++) {
    float want = cmx_float16_to_float((cmx_float16_t)i);
    if (memcmp(&fp[i], &want, 4) && bad++ < 5)
      fprintf(stderr, "f16 -> f32 %04x wrong\n", i);
  }
  CHECK_MSG(bad == 0, "%lld half -> float mismatches", (long long)bad);
  /* an f16 op through the elementwise rows: negative of every half, and a
   * transposed (strided) conversion */
  cmx_array neg = NULL;
  OK(cmx_negative(&neg, ha, S));
  const uint16_t* np = NULL;
  OK(cmx_array_data(neg, (const void**)&np));
  bad = 0;
  for (uint32_t i = 0; np && i < 65536; i++) {
    uint16_t want = cmx_float_to_float16(-cmx_float16_to_float((uint16_t)i));
    bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
    if (!nan && np[i] != want && bad++ < 5)
      fprintf(stderr, "negative f16 %04x: %04x want %04x\n", i, np[i], want);
  }
  CHECK_MSG(bad == 0, "%lld negative f16 mismatches", (long long)bad);
  int64_t s3[2] = {512, 1024};
  cmx_array m = from(bits, s3, 2, CMX_FLOAT32), mt = NULL, mh = NULL;
  int perm[2] = {1, 0};
  OK(cmx_transpose(&mt, m, perm, 2, S));
  OK(cmx_astype(&mh, mt, CMX_FLOAT16, S));
  const uint16_t* mp = NULL;
  OK(cmx_array_data(mh, (const void**)&mp));
  bad = 0;
  for (int64_t i = 0; mp && i < 1024; i++)
    for (int64_t j = 0; j < 512; j++) {
      float f;
      memcpy(&f, &bits[j * 1024 + i], 4);
      if (mp[i * 512 + j] != cmx_float_to_float16(f)) bad++;
    }
  CHECK_MSG(bad == 0, "%lld transposed f32 -> f16 mismatches", (long long)bad);
  cmx_array_release_all((cmx_array[]){x, h, back, ha, neg, m, mt, mh}, 8);
  free(bits);
  free(all);
}

/* ---------------- float floor_divide / remainder ---------------- */

/* NumPy's divmod on doubles (npy_divmod), from its definition. */
static double ref_fdiv(double x, double y) {
  if (y == 0) return x / y;
  double mod = fmod(x, y), div = (x - mod) / y;
  if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
  if (div == 0) return copysign(0.0, x / y);
  double fl = floor(div);
  return div - fl > 0.5 ? fl + 1.0 : fl;
}
static float ref_rem(float x, float y) {
  float mod = fmodf(x, y);
  if (mod != 0) return (y < 0) != (mod < 0) ? mod + y : mod;
  return copysignf(0.0f, y);
}

/* A float of random sign and mantissa times 2^e, e in [lo, hi]. */
static float rand_float(int lo, int hi) {
  float m = 1.0f + (float)(rnd32() >> 8) / 16777216.0f;
  float v = ldexpf(m, lo + (int)(rnd32() % (uint32_t)(hi - lo + 1)));
  return rnd32() & 1 ? -v : v;
}

static bool same_float(float a, float b) {
  return (a != a && b != b) || memcmp(&a, &b, 4) == 0;
}

/* The branch-free blocks (quotients below 2^29), blocks mixing in
 * elements that need the library's fmod (large quotients, zeros,
 * infinities, NaN, subnormals), the scalar-operand and strided layouts,
 * and float16. */
static void test_fmod_rows(void) {
  enum { N = 1 << 16 };
  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) {
    if (i < N / 2) { /* whole blocks on the fast path */
      x[i] = rand_float(-20, 20);
      y[i] = rand_float(-12, 12);
      if (i % 97 == 0) y[i] = x[i] * (float)(i % 5 + 1); /* exact */
      if (i % 89 == 0) x[i] = y[i] * (float)(i % 7);     /* zero mod */
    } else {
      x[i] = rand_float(-140, 120);
      y[i] = rand_float(-140, 60);
      const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f};
      if (i % 13 == 0) x[i] = sp[(i / 13) % 6];
      if (i % 17 == 0) y[i] = sp[(i / 17) % 6];
    }
  }
  int64_t shape[1] = {N}, s2[2] = {256, 256};
  cmx_array xa = from(x, shape, 1, CMX_FLOAT32);
  cmx_array ya = from(y, shape, 1, CMX_FLOAT32);
  for (int op = 0; op < 2; op++) {
    cmx_status (*f)(cmx_array*, cmx_array, cmx_array, cmx_stream) =
        op ? cmx_remainder : cmx_floor_divide;
    const char* nm = op ? "remainder" : "floor_divide";
    cmx_array r = NULL, rs = NULL, sx = NULL, rt = NULL;
    cmx_array xm = NULL, ym = NULL, xt = NULL, yt = NULL;
    OK(f(&r, xa, ya, S));
    /* scalar operands: x // 2.5 and -7.25 // y */
    OK(cmx_array_from_double(&sx, op ? 2.5 : -7.25, CMX_FLOAT32));
    OK(op ? f(&rs, xa, sx, S) : f(&rs, sx, ya, S));
    /* transposed operands (strided rows) */
    OK(cmx_reshape(&xm, xa, s2, 2, S));
    OK(cmx_reshape(&ym, ya, s2, 2, S));
    int perm[2] = {1, 0};
    OK(cmx_transpose(&xt, xm, perm, 2, S));
    OK(cmx_transpose(&yt, ym, perm, 2, S));
    OK(f(&rt, xt, yt, S));
    const float *rp = NULL, *rsp = NULL, *rtp = NULL;
    OK(cmx_array_data(r, (const void**)&rp));
    OK(cmx_array_data(rs, (const void**)&rsp));
    OK(cmx_array_data(rt, (const void**)&rtp));
    int64_t bad = 0;
    for (int i = 0; rp && rsp && rtp && i < N; i++) {
      float want = op ? ref_rem(x[i], y[i]) : (float)ref_fdiv(x[i], y[i]);
      float ws = op ? ref_rem(x[i], 2.5f) : (float)ref_fdiv(-7.25f, y[i]);
      int ti = (i % 256) * 256 + i / 256; /* rt[i] = f(x[ti], y[ti]) */
      float wt = op ? ref_rem(x[ti], y[ti]) : (float)ref_fdiv(x[ti], y[ti]);
      if (!same_float(rp[i], want) || !same_float(rsp[i], ws) ||
          !same_float(rtp[i], wt)) {
        if (bad++ < 5)
          fprintf(stderr, "%s(%a, %a) = %a, want %a\n", nm, x[i], y[i], rp[i],
                  want);
      }
    }
    CHECK_MSG(bad == 0, "%s: %lld mismatches", nm, (long long)bad);
    /* float16: computed in float32 from the half values */
    cmx_array xh = NULL, yh = NULL, rh = NULL;
    OK(cmx_astype(&xh, xa, CMX_FLOAT16, S));
    OK(cmx_astype(&yh, ya, CMX_FLOAT16, S));
    OK(f(&rh, xh, yh, S));
    const uint16_t *hp = NULL, *xhp = NULL, *yhp = NULL;
    OK(cmx_array_data(rh, (const void**)&hp));
    OK(cmx_array_data(xh, (const void**)&xhp));
    OK(cmx_array_data(yh, (const void**)&yhp));
    bad = 0;
    for (int i = 0; hp && xhp && yhp && i < N; i++) {
      float a = cmx_float16_to_float(xhp[i]), b = cmx_float16_to_float(yhp[i]);
      float w = op ? ref_rem(a, b) : (float)ref_fdiv(a, b);
      float g = cmx_float16_to_float(hp[i]);
      if (!same_float(g, cmx_float16_to_float(cmx_float_to_float16(w)))) bad++;
    }
    CHECK_MSG(bad == 0, "%s f16: %lld mismatches", nm, (long long)bad);
    cmx_array_release_all(
        (cmx_array[]){r, rs, sx, rt, xm, ym, xt, yt, xh, yh, rh}, 11);
  }
  cmx_array_release(xa);
  cmx_array_release(ya);
  free(x);
  free(y);
}

/* ---------------- Var with NaN and infinities ---------------- */

/* NaN or an infinite element makes the variance NaN (NumPy); rows of 40
 * and of 3. */
static void test_var_nan(void) {
  for (int len = 3; len <= 40; len += 37) {
    float v[4 * 40];
    for (int i = 0; i < 4 * len; i++) v[i] = (float)(i % 7);
    v[0 * len + 1] = NAN;
    v[1 * len + 2] = INFINITY;
    v[2 * len + 0] = -INFINITY, v[2 * len + 1] = -INFINITY;
    int64_t sh[2] = {4, len};
    cmx_array x = from(v, sh, 2, CMX_FLOAT32), r = NULL;
    int ax[1] = {1};
    OK(cmx_var(&r, x, ax, 1, false, 0, S));
    float out[4] = {0};
    OK(cmx_array_copy_to(r, out, sizeof out));
    CHECK(out[0] != out[0] && out[1] != out[1] && out[2] != out[2]);
    double mu = 0, ss = 0;
    for (int i = 0; i < len; i++) mu += v[3 * len + i];
    mu /= len;
    for (int i = 0; i < len; i++)
      ss += (v[3 * len + i] - mu) * (v[3 * len + i] - mu);
    CHECK(fabs(out[3] - ss / len) <= 1e-5 * (1 + ss / len));
    cmx_array_release(x);
    cmx_array_release(r);
  }
}

/* ---------------- LogSumExp, Softmax, Var ---------------- */

/* a's values as doubles, row-major (NULL on failure). */
static double* read_f64(cmx_array a) {
  cmx_array d = NULL;
  if (cmx_astype(&d, a, CMX_FLOAT64, S) != CMX_OK) return NULL;
  int64_t n = cmx_array_size(d);
  double* v = malloc((size_t)(n ? n : 1) * sizeof(double));
  if (cmx_array_copy_to(d, v, (size_t)n * sizeof(double)) != CMX_OK) {
    free(v);
    v = NULL;
  }
  cmx_array_release(d);
  return v;
}

static bool close_or_nan(double got, double want, double tol) {
  if (want != want) return got != got;
  if (isinf(want)) return got == want;
  return fabs(got - want) <= tol * (1 + fabs(want));
}

/* x as (no, nl, ni) (the reduced run in the middle): the double reference
 * of kind 0 logsumexp, 1 softmax, 2 var (ddof) into ref (ni per outer
 * position, or x's layout for softmax). */
static void ref_rows(const double* x, double* ref, int64_t no, int64_t nl,
                     int64_t ni, int kind, int ddof) {
  for (int64_t o = 0; o < no; o++)
    for (int64_t j = 0; j < ni; j++) {
      const double* c = x + o * nl * ni + j;
      double m = -INFINITY, s = 0, mu = 0;
      bool nan = false;
      for (int64_t r = 0; r < nl; r++) {
        nan |= c[r * ni] != c[r * ni];
        if (c[r * ni] > m) m = c[r * ni];
      }
      if (nan) m = NAN;
      for (int64_t r = 0; r < nl; r++) {
        s += exp(c[r * ni] - m);
        mu += c[r * ni];
      }
      mu /= (double)nl;
      if (kind == 0) {
        ref[o * ni + j] = (isinf(m) || m != m) ? m : m + log(s);
      } else if (kind == 1) {
        for (int64_t r = 0; r < nl; r++)
          ref[o * nl * ni + r * ni + j] = exp(c[r * ni] - m) / s;
      } else {
        double ss = 0;
        for (int64_t r = 0; r < nl; r++)
          ss += (c[r * ni] - mu) * (c[r * ni] - mu);
        double den = (double)nl - ddof;
        ref[o * ni + j] = ss / (den > 0 ? den : 0.0);
      }
    }
}

typedef struct {
  int64_t no, nl, ni; /* the input as (no, nl, ni), reduced over nl */
  bool transposed;    /* the input a transposed view */
  bool specials;      /* -inf rows, NaN, +inf */
} lsv_case;

static cmx_status lsv_op(int kind, cmx_array* r, cmx_array x, const int* ax,
                         int nax, int ddof) {
  if (kind == 0) return cmx_logsumexp(r, x, ax, nax, false, S);
  if (kind == 1) return cmx_softmax(r, x, ax, nax, true, S);
  return cmx_var(r, x, ax, nax, false, ddof, S);
}

/* The column path (reduced axes before at least 16 kept positions), the
 * short-row tiles (rows up to 32 long, also after a transposing copy;
 * tiles of more rows than items and the reverse, f32 rows of 2-16 items
 * unrolled),
 * every float dtype: against the double reference, and, for float32 with
 * rows longer than 32, bit for bit against the row kernels (the same
 * values laid out with the reduced axis last). */
static void test_softmax_paths(void) {
  /* rows of 5, 7, 16 (the last three): more of the unrolled f32 tile
   * transposes */
  const lsv_case cases[] = {
      {3, 40, 37, false, false},  {2, 300, 130, false, true},
      {1, 70, 200, false, false}, {5, 33, 16, true, true},
      {400, 10, 1, false, true},  {777, 3, 1, false, false},
      {130, 32, 1, true, false},  {65, 2, 1, false, true},
      {4, 1, 50, false, false},   {2, 600, 1, false, false},
      {100, 5, 1, false, true},   {64, 7, 1, true, false},
      {70, 16, 1, false, false}};
  const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT64, CMX_FLOAT16, CMX_BFLOAT16};
  const double tols[] = {2e-6, 1e-12, 2e-3, 2e-2};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    lsv_case c = cases[ci];
    int64_t n = c.no * c.nl * c.ni;
    double* v = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++)
      v[i] = (double)(int32_t)rnd32() / 2147483648.0 * 6.0;
    if (c.specials) { /* a -inf column, a NaN, a +inf */
      for (int64_t r = 0; r < c.nl; r++) v[r * c.ni] = -INFINITY;
      v[n - 1] = NAN;
      if (c.no > 1) v[c.nl * c.ni] = INFINITY;
    }
    /* x as (no, nl, ni), possibly a transposed view of (no, ni, nl) */
    int64_t sh[3] = {c.no, c.nl, c.ni}, tsh[3] = {c.no, c.ni, c.nl};
    cmx_array x64 = NULL;
    if (c.transposed) {
      double* t = malloc((size_t)n * sizeof(double));
      for (int64_t o = 0; o < c.no; o++)
        for (int64_t r = 0; r < c.nl; r++)
          for (int64_t j = 0; j < c.ni; j++)
            t[(o * c.ni + j) * c.nl + r] = v[(o * c.nl + r) * c.ni + j];
      cmx_array base = from(t, tsh, 3, CMX_FLOAT64);
      int perm[3] = {0, 2, 1};
      OK(cmx_transpose(&x64, base, perm, 3, S));
      cmx_array_release(base);
      free(t);
    } else {
      x64 = from(v, sh, 3, CMX_FLOAT64);
    }
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
      cmx_array x = NULL;
      OK(cmx_astype(&x, x64, dts[di], S));
      OK(cmx_array_eval(x));
      if (c.transposed) { /* keep the transposed layout in the dtype */
        cmx_array base = NULL, xt = NULL;
        int perm[3] = {0, 2, 1};
        OK(cmx_transpose(&xt, x, perm, 3, S));
        OK(cmx_contiguous(&base, xt, false, S));
        cmx_array_release(x);
        OK(cmx_transpose(&x, base, perm, 3, S));
        cmx_array_release(base);
        cmx_array_release(xt);
      }
      double* xv = read_f64(x); /* the values in the dtype */
      double* ref = malloc((size_t)n * sizeof(double));
      for (int kind = 0; kind < 3; kind++) {
        int ax[1] = {1}, ddof = kind == 2 ? (int)(ci % 2) : 0;
        cmx_array r = NULL;
        OK(lsv_op(kind, &r, x, ax, 1, ddof));
        double* got = read_f64(r);
        ref_rows(xv, ref, c.no, c.nl, c.ni, kind, ddof);
        int64_t nout = kind == 1 ? n : c.no * c.ni, bad = 0;
        for (int64_t i = 0; got && xv && i < nout; i++)
          if (!close_or_nan(got[i], ref[i], tols[di]) && bad++ < 3)
            fprintf(stderr,
                    "case %zu dtype %s kind %d [%lld]: %.9g want %.9g\n", ci,
                    cmx_dtype_name(dts[di]), kind, (long long)i, got[i],
                    ref[i]);
        CHECK_MSG(got && bad == 0, "case %zu %s kind %d: %lld mismatches", ci,
                  cmx_dtype_name(dts[di]), kind, (long long)bad);
        if (dts[di] == CMX_FLOAT32 && c.nl > 32 && c.ni > 1) {
          /* the row kernels on the same values, reduced axis last */
          cmx_array xt = NULL, xc = NULL, rr = NULL, rb = NULL;
          int perm[3] = {0, 2, 1}, ax2[1] = {2};
          OK(cmx_transpose(&xt, x, perm, 3, S));
          OK(cmx_contiguous(&xc, xt, false, S));
          OK(lsv_op(kind, &rr, xc, ax2, 1, ddof));
          if (kind == 1)
            OK(cmx_transpose(&rb, rr, perm, 3, S));
          else
            rb = cmx_array_retain(rr);
          float* a = malloc((size_t)nout * sizeof(float));
          float* b = malloc((size_t)nout * sizeof(float));
          OK(cmx_array_copy_to(r, a, (size_t)nout * sizeof(float)));
          OK(cmx_array_copy_to(rb, b, (size_t)nout * sizeof(float)));
          int64_t diff = 0;
          for (int64_t i = 0; i < nout; i++)
            if (!same_float(a[i], b[i])) diff++;
          CHECK_MSG(diff == 0, "case %zu kind %d: %lld differ from rows", ci,
                    kind, (long long)diff);
          free(a);
          free(b);
          cmx_array_release_all((cmx_array[]){xt, xc, rr, rb}, 4);
        }
        free(got);
        cmx_array_release(r);
      }
      free(xv);
      free(ref);
      cmx_array_release(x);
    }
    cmx_array_release(x64);
    free(v);
  }
  /* softmax in place: the input's buffer donated to the output (short rows
   * and columns) */
  int64_t sh[2] = {300, 20}, sh2[3] = {4, 30, 70};
  for (int k = 0; k < 2; k++) {
    int64_t n = k ? 4 * 30 * 70 : 300 * 20;
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 17) * 0.25f;
    cmx_array x = from(v, k ? sh2 : sh, k ? 3 : 2, CMX_FLOAT32);
    cmx_array one = NULL, t = NULL, r = NULL, want = NULL;
    OK(cmx_array_from_double(&one, 1.0, CMX_FLOAT32));
    OK(cmx_multiply(&t, x, one, S));
    int ax[1] = {1};
    OK(cmx_softmax(&r, t, ax, 1, false, S));
    cmx_array_release(t); /* r now holds the only reference */
    OK(cmx_softmax(&want, x, ax, 1, false, S));
    float* a = malloc((size_t)n * sizeof(float));
    float* b = malloc((size_t)n * sizeof(float));
    OK(cmx_array_copy_to(r, a, (size_t)n * sizeof(float)));
    OK(cmx_array_copy_to(want, b, (size_t)n * sizeof(float)));
    CHECK(memcmp(a, b, (size_t)n * sizeof(float)) == 0);
    free(a);
    free(b);
    free(v);
    cmx_array_release_all((cmx_array[]){x, one, r, want}, 4);
  }
}

/* ---------------- Reduce: short rows ---------------- */

typedef struct {
  int64_t shape[3];
  int nd;
  int perm[3]; /* the input is the base transposed by perm (identity: not) */
  int axes[3], naxes;
} red_case;

/* The base values (float in [-2, 2), some exact in halves) as dtype dt,
 * transposed by perm. */
static cmx_array red_input(const red_case* c, const float* v, cmx_dtype dt) {
  int64_t base_shape[3];
  for (int i = 0; i < c->nd; i++) base_shape[c->perm[i]] = c->shape[i];
  cmx_array b = from(v, base_shape, c->nd, CMX_FLOAT32), bt = NULL, r = NULL;
  OK(cmx_astype(&bt, b, dt, S));
  OK(cmx_transpose(&r, bt, c->perm, c->nd, S));
  cmx_array_release(b);
  cmx_array_release(bt);
  return r;
}

/* A row's float sum and double product in the short-row kernel's order:
 * in sequence below 16 elements; from 16 on, in 8 lanes (element i into
 * lane i % 8 while whole groups of 8 last, the rest into lanes 0, 1, ...)
 * folded pairwise (lanes q and q + 4, then q + 2, then q + 1). */
static float row_sum_f(const double* e, int64_t n) {
  float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (n < 16) {
    for (int64_t i = 0; i < n; i++) l[0] += (float)e[i];
    return l[0];
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int q = 0; q < 8; q++) l[q] += (float)e[i + q];
  for (int q = 0; i < n; i++, q++) l[q] += (float)e[i];
  for (int w = 4; w > 0; w /= 2)
    for (int q = 0; q < w; q++) l[q] += l[q + w];
  return l[0];
}
static double row_prod_d(const double* e, int64_t n) {
  double l[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  if (n < 16) {
    for (int64_t i = 0; i < n; i++) l[0] *= e[i];
    return l[0];
  }
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int q = 0; q < 8; q++) l[q] *= e[i + q];
  for (int q = 0; i < n; i++, q++) l[q] *= e[i];
  for (int w = 4; w > 0; w /= 2)
    for (int q = 0; q < w; q++) l[q] *= l[q + w];
  return l[0];
}

/* Reductions over rows shorter than 64 (impl->rows: many outputs a call,
 * blocks of 8 below 16 elements, 8 lanes a row from 16 on, chunks of 2048
 * outputs), with reduced outer dims, a non-unit output stride, and few
 * outputs (serial): against plain loops in the kernel's order (row sums
 * in float added in double for float sums, products in double). No two
 * reduced dims are adjacent in memory (the kernel would merge them into
 * one row). */
static void test_reduce_short_rows(void) {
  const red_case cases[] = {{{600, 16}, 2, {0, 1}, {1}, 1},
                            {{500, 32}, 2, {0, 1}, {1}, 1},
                            {{300, 41}, 2, {0, 1}, {1}, 1},
                            {{3, 700, 24}, 3, {1, 0, 2}, {1, 2}, 2},
                            {{5003, 3}, 2, {0, 1}, {1}, 1},
                            {{4099, 2}, 2, {0, 1}, {1}, 1},
                            {{2, 9, 15}, 3, {0, 1, 2}, {2}, 1},
                            {{7, 2500, 3}, 3, {0, 1, 2}, {0, 2}, 2},
                            {{4, 3001, 5}, 3, {1, 0, 2}, {2}, 1},
                            {{3, 1000, 7}, 3, {1, 0, 2}, {1, 2}, 2},
                            {{333, 4, 2}, 3, {0, 1, 2}, {0, 2}, 2}};
  enum { SUM, PROD, MAX, MEAN, ANY };
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const red_case* c = &cases[ci];
    int64_t n = 1;
    for (int i = 0; i < c->nd; i++) n *= c->shape[i];
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
      v[i] = (float)(int32_t)rnd32() / 1073741824.0f; /* [-2, 2) */
    for (int64_t i = 0; i < n; i += 5)
      v[i] = (float)((int)(rnd32() % 9) - 4) * 0.5f;
    bool isred[3] = {false, false, false};
    for (int i = 0; i < c->naxes; i++) isred[c->axes[i]] = true;
    /* the innermost reduced dim is the row; the others are outer rows */
    int row_d = c->axes[c->naxes - 1];
    int64_t sh[3] = {1, 1, 1};
    for (int i = 0; i < c->nd; i++) sh[i] = c->shape[i];
    const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_INT32, CMX_BOOL};
    for (size_t di = 0; di < 4; di++) {
      cmx_array x = red_input(c, v, dts[di]);
      double* xv = read_f64(x); /* logical row-major values in the dtype */
      for (int kind = SUM; kind <= ANY; kind++) {
        if ((dts[di] == CMX_BOOL) != (kind == ANY)) continue;
        if (dts[di] == CMX_FLOAT16 && kind != SUM && kind != MAX) continue;
        if (dts[di] == CMX_INT32 && kind == MEAN) continue;
        cmx_array r = NULL;
        cmx_status (*f[5])(cmx_array*, cmx_array, const int*, int, bool,
                           cmx_stream) = {cmx_sum, cmx_prod, cmx_max, cmx_mean,
                                          cmx_any};
        OK(f[kind](&r, x, c->axes, c->naxes, false, S));
        double* got = read_f64(r);
        int64_t nout = cmx_array_size(r), bad = 0, o = 0;
        /* outputs in row-major order of the kept dims */
        for (int64_t i0 = 0; i0 < (isred[0] ? 1 : sh[0]); i0++)
          for (int64_t i1 = 0; i1 < (isred[1] ? 1 : sh[1]); i1++)
            for (int64_t i2 = 0; i2 < (isred[2] ? 1 : sh[2]); i2++, o++) {
              double acc = kind == PROD ? 1 : kind == MAX ? -INFINITY : 0;
              uint32_t iacc = kind == PROD ? 1 : 0;
              int64_t cnt = 0;
              /* outer reduced positions in row-major order, then the row */
              for (int64_t j0 = 0; j0 < (isred[0] ? sh[0] : 1); j0++)
                for (int64_t j1 = 0; j1 < (isred[1] ? sh[1] : 1); j1++)
                  for (int64_t j2 = 0; j2 < (isred[2] ? sh[2] : 1); j2++) {
                    int64_t idx[3] = {isred[0] ? j0 : i0, isred[1] ? j1 : i1,
                                      isred[2] ? j2 : i2};
                    if (idx[row_d] != 0) continue; /* row starts only */
                    double row[64];
                    uint32_t it = kind == PROD ? 1 : 0;
                    for (int64_t k = 0; k < sh[row_d]; k++) {
                      idx[row_d] = k;
                      int64_t li = (idx[0] * sh[1] + idx[1]) * sh[2] + idx[2];
                      if (c->nd == 2) li = idx[0] * sh[1] + idx[1];
                      double e = xv[li];
                      row[k] = e;
                      it = kind == PROD ? it * (uint32_t)(int32_t)e
                                        : it + (uint32_t)(int32_t)e;
                      if (kind == MAX && e > acc) acc = e;
                      if (kind == ANY && e != 0) acc = 1;
                      cnt++;
                    }
                    if (kind == SUM || kind == MEAN)
                      acc += (double)row_sum_f(row, sh[row_d]);
                    if (kind == PROD) acc *= row_prod_d(row, sh[row_d]);
                    iacc = kind == PROD ? iacc * it : iacc + it;
                  }
              double want = acc;
              if (dts[di] == CMX_INT32 && (kind == SUM || kind == PROD))
                want = (double)(int32_t)iacc;
              else if (kind == MEAN)
                want = (double)(float)(acc / (double)cnt);
              else if (dts[di] == CMX_FLOAT16)
                want = cmx_float16_to_float(cmx_float_to_float16((float)acc));
              else if (dts[di] == CMX_FLOAT32)
                want = (double)(float)acc;
              if (got && got[o] != want && bad++ < 3)
                fprintf(stderr,
                        "case %zu %s kind %d out %lld: %.9g want %.9g\n", ci,
                        cmx_dtype_name(dts[di]), kind, (long long)o, got[o],
                        want);
            }
        CHECK_MSG(got && o == nout && bad == 0,
                  "reduce case %zu %s kind %d: %lld mismatches", ci,
                  cmx_dtype_name(dts[di]), kind, (long long)bad);
        free(got);
        cmx_array_release(r);
      }
      free(xv);
      cmx_array_release(x);
    }
    free(v);
  }
}

/* Scans along a middle axis with an inner size of 2-4 (several outer
 * blocks scanned side by side, groups of 8 with a remainder): cumsum and
 * cummax of float32 and int32, forward and reverse, inclusive and
 * exclusive, against a plain sequential scan of each column (same order,
 * so the same bits). */
static void test_scan_narrow(void) {
  const int64_t outers[] = {3, 8, 13}, inners[] = {2, 3, 4}, n = 37;
  for (int oi = 0; oi < 3; oi++)
    for (int ii = 0; ii < 3; ii++) {
      int64_t O = outers[oi], I = inners[ii], sh[3] = {O, n, I};
      int64_t cnt = O * n * I;
      float* v = malloc((size_t)cnt * sizeof(float));
      for (int64_t i = 0; i < cnt; i++)
        v[i] = (float)((int)(rnd32() % 2001) - 1000) / 64.0f;
      cmx_array x = from(v, sh, 3, CMX_FLOAT32);
      const cmx_dtype dts[2] = {CMX_FLOAT32, CMX_INT32};
      for (int di = 0; di < 2; di++) {
        cmx_array xd = NULL;
        OK(cmx_astype(&xd, x, dts[di], S));
        double* xv = read_f64(xd);
        for (int kind = 0; kind < 2; kind++)
          for (int mode = 0; mode < 4; mode++) {
            bool rev = mode & 1, incl = !(mode & 2);
            cmx_array r = NULL;
            int ax = 1;
            if (kind == 0)
              OK(cmx_cumsum(&r, xd, &ax, rev, incl, S));
            else
              OK(cmx_cummax(&r, xd, &ax, rev, incl, S));
            double* got = read_f64(r);
            int64_t bad = 0;
            for (int64_t o = 0; o < O; o++)
              for (int64_t j = 0; j < I; j++) {
                float fa = kind ? -INFINITY : 0.0f;
                int32_t ia = kind ? INT32_MIN : 0;
                for (int64_t k = 0; k < n; k++) {
                  int64_t t = rev ? n - 1 - k : k, idx = (o * n + t) * I + j;
                  double e = xv[idx], want;
                  float fb = fa;
                  int32_t ib = ia;
                  if (kind == 0) {
                    fa += (float)e;
                    ia = (int32_t)((uint32_t)ia + (uint32_t)(int32_t)e);
                  } else {
                    if ((float)e > fa) fa = (float)e;
                    if ((int32_t)e > ia) ia = (int32_t)e;
                  }
                  if (dts[di] == CMX_INT32)
                    want = incl ? ia : ib;
                  else
                    want = incl ? fa : fb;
                  if (got && got[idx] != want && bad++ < 3)
                    fprintf(stderr,
                            "narrow scan O %lld I %lld %s kind %d "
                            "mode %d [%lld]: %g want %g\n",
                            (long long)O, (long long)I, cmx_dtype_name(dts[di]),
                            kind, mode, (long long)idx, got[idx], want);
                }
              }
            CHECK_MSG(got && bad == 0,
                      "narrow scan O %lld I %lld %s kind %d mode %d: %lld bad",
                      (long long)O, (long long)I, cmx_dtype_name(dts[di]), kind,
                      mode, (long long)bad);
            free(got);
            cmx_array_release(r);
          }
        free(xv);
        cmx_array_release(xd);
      }
      cmx_array_release(x);
      free(v);
    }
}

/* ---------------- ArgReduce ---------------- */

typedef struct {
  int64_t shape[3];
  int nd;
  int perm[3];
  int axis;
} arg_case;

/* Short rows (8 side by side; rows of 2 apart), narrow columns of adjacent
 * rows (lanes of rows merged by value, then index), the column case on a
 * transposed input's stride-1 dim (a strided output), with ties, NaN and
 * signed zeros: against the first index of the extremum (NaN first). */
static void test_argreduce_paths(void) {
  const arg_case cases[] = {
      {{5003, 3}, 2, {0, 1}, 1},     {{4099, 2}, 2, {0, 1}, 1},
      {{2, 9, 15}, 3, {0, 1, 2}, 2}, {{4, 3001, 5}, 3, {1, 0, 2}, 2},
      {{1000, 2}, 2, {0, 1}, 0},     {{1501, 3}, 2, {0, 1}, 0},
      {{41, 15}, 2, {0, 1}, 0},      {{7, 100, 5}, 3, {0, 1, 2}, 1},
      {{3, 5}, 2, {0, 1}, 0},        {{40, 64, 9}, 3, {2, 0, 1}, 1},
      {{700000, 2}, 2, {0, 1}, 0},   {{1003, 1}, 2, {0, 1}, 1}};
  const cmx_dtype dts[] = {CMX_FLOAT32, CMX_INT32, CMX_FLOAT16};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const arg_case* c = &cases[ci];
    int64_t n = 1, sh[3] = {1, 1, 1};
    for (int i = 0; i < c->nd; i++) n *= c->shape[i], sh[i] = c->shape[i];
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(rnd32() % 7) - 3.0f;
    for (int64_t i = 0; i < n; i += 97) v[i] = (i / 97) % 2 ? -0.0f : 0.0f;
    for (int64_t i = 13; i < n; i += 211) v[i] = NAN;
    for (size_t di = 0; di < 3; di++) {
      red_case rc = {{sh[0], sh[1], sh[2]},
                     c->nd,
                     {c->perm[0], c->perm[1], c->perm[2]},
                     {0},
                     0};
      cmx_array x = red_input(&rc, v, dts[di]);
      double* xv = read_f64(x);
      for (int kind = 0; kind < 2; kind++) {
        cmx_array r = NULL;
        OK(kind ? cmx_argmax(&r, x, &c->axis, false, S)
                : cmx_argmin(&r, x, &c->axis, false, S));
        int64_t nout = cmx_array_size(r), bad = 0, o = 0;
        uint32_t* got = malloc((size_t)nout * sizeof(uint32_t));
        OK(cmx_array_copy_to(r, got, (size_t)nout * sizeof(uint32_t)));
        int64_t lst[3] = {sh[1] * sh[2], sh[2], 1};
        if (c->nd == 2) lst[0] = sh[1], lst[1] = 1;
        for (int64_t i0 = 0; i0 < (c->axis == 0 ? 1 : sh[0]); i0++)
          for (int64_t i1 = 0; i1 < (c->axis == 1 ? 1 : sh[1]); i1++)
            for (int64_t i2 = 0; i2 < (c->axis == 2 ? 1 : sh[2]); i2++, o++) {
              int64_t base = i0 * lst[0] + i1 * lst[1] + i2 * lst[2];
              double best = xv[base];
              uint32_t bi = 0;
              for (int64_t k = 1; k < sh[c->axis]; k++) {
                double e = xv[base + k * lst[c->axis]];
                bool better =
                    best == best && (e != e || (kind ? e > best : e < best));
                if (better) best = e, bi = (uint32_t)k;
              }
              if (o < nout && got[o] != bi && bad++ < 3)
                fprintf(stderr,
                        "arg case %zu %s kind %d out %lld: %u want %u\n", ci,
                        cmx_dtype_name(dts[di]), kind, (long long)o, got[o],
                        bi);
            }
        CHECK_MSG(o == nout && bad == 0, "arg case %zu %s kind %d: %lld bad",
                  ci, cmx_dtype_name(dts[di]), kind, (long long)bad);
        free(got);
        cmx_array_release(r);
      }
      free(xv);
      cmx_array_release(x);
    }
    free(v);
  }
}

/* Column reductions over narrow columns of adjacent rows (impl->fold):
 * operations exact in any order (integer sums and products, min/max,
 * any/all) now combine the lanes as a halving tree: against plain loops,
 * for widths and run lengths around the lane block's shape, NaN included. */
static void test_reduce_fold(void) {
  const int64_t ws[] = {2, 3, 5, 17, 100}, ns[] = {2, 3, 7, 64, 1000, 5001};
  for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
      int64_t w = ws[wi], n = ns[ni], A = 3, sh[3] = {A, n, w};
      int64_t tot = A * n * w;
      float* v = malloc((size_t)tot * sizeof(float));
      for (int64_t i = 0; i < tot; i++) v[i] = (float)(rnd32() % 201) - 100.0f;
      if (tot > 50) v[tot / 2] = NAN;
      const cmx_dtype dts[] = {CMX_FLOAT32, CMX_INT32, CMX_BOOL};
      for (int di = 0; di < 3; di++) {
        cmx_array b = from(v, sh, 3, CMX_FLOAT32), x = NULL;
        OK(cmx_astype(&x, b, dts[di], S));
        double* xv = read_f64(x);
        cmx_status (*fs[4])(cmx_array*, cmx_array, const int*, int, bool,
                            cmx_stream) = {cmx_max, cmx_min, cmx_sum, cmx_prod};
        int nk = dts[di] == CMX_FLOAT32 ? 2 : dts[di] == CMX_INT32 ? 4 : 2;
        for (int k = 0; k < nk; k++) {
          cmx_array r = NULL;
          int ax[1] = {1};
          if (dts[di] == CMX_BOOL)
            OK(k ? cmx_all(&r, x, ax, 1, false, S)
                 : cmx_any(&r, x, ax, 1, false, S));
          else
            OK(fs[k](&r, x, ax, 1, false, S));
          double* got = read_f64(r);
          int64_t bad = 0;
          for (int64_t a = 0; a < A; a++)
            for (int64_t j = 0; j < w; j++) {
              double m = xv[a * n * w + j];
              uint32_t acc = k == 3 ? 1u : 0u;
              bool nan = false, any = false, all = true;
              for (int64_t i = 0; i < n; i++) {
                double e = xv[(a * n + i) * w + j];
                nan |= e != e;
                if (k == 0 && e > m) m = e;
                if (k == 1 && e < m) m = e;
                acc = k == 3 ? acc * (uint32_t)(int32_t)e
                             : acc + (uint32_t)(int32_t)e;
                any |= e != 0;
                all &= e != 0;
              }
              double want = m;
              if (dts[di] == CMX_FLOAT32 && nan) want = NAN;
              if (dts[di] == CMX_INT32 && k >= 2) want = (double)(int32_t)acc;
              if (dts[di] == CMX_BOOL) want = k ? all : any;
              double g = got ? got[a * w + j] : -1;
              if (!(g == want || (g != g && want != want)) && bad++ < 3)
                fprintf(stderr, "fold w %lld n %lld %s k %d: %g want %g\n",
                        (long long)w, (long long)n, cmx_dtype_name(dts[di]), k,
                        g, want);
            }
          CHECK_MSG(got && bad == 0, "fold w %lld n %lld %s op %d: %lld bad",
                    (long long)w, (long long)n, cmx_dtype_name(dts[di]), k,
                    (long long)bad);
          free(got);
          cmx_array_release(r);
        }
        free(xv);
        cmx_array_release(b);
        cmx_array_release(x);
      }
      free(v);
    }
}

/* ---------------- Scan along contiguous rows ---------------- */

/* Scans along the last axis (one call for many rows; 8 rows side by side
 * for max/min and logcumsumexp), every kind, both directions, inclusive
 * and exclusive, row lengths around the unrolled ones, NaN included:
 * against a plain sequential scan in the accumulator type (logcumsumexp
 * within float rounding of a double reference). */
static void test_scan_rows(void) {
  const int64_t lens[] = {1, 2, 3, 4, 7, 300};
  cmx_status (*fs[5])(cmx_array*, cmx_array, const int*, bool, bool,
                      cmx_stream) = {cmx_cumsum, cmx_cumprod, cmx_cummax,
                                     cmx_cummin, cmx_logcumsumexp};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li], rows = 1003, sh[2] = {rows, n}, tot = rows * n;
    float* v = malloc((size_t)tot * sizeof(float));
    for (int64_t i = 0; i < tot; i++)
      v[i] = (float)((int)(rnd32() % 9) - 4) * 0.5f + 0.25f;
    v[tot / 3] = NAN;
    const cmx_dtype dts[] = {CMX_FLOAT32, CMX_FLOAT16, CMX_INT32};
    for (int di = 0; di < 3; di++) {
      cmx_array b = from(v, sh, 2, CMX_FLOAT32), x = NULL;
      OK(cmx_astype(&x, b, dts[di], S));
      double* xv = read_f64(x);
      for (int kind = 0; kind < 5; kind++) {
        if (kind == 4 && dts[di] == CMX_INT32) continue;
        for (int mode = 0; mode < 4; mode++) {
          bool rev = mode & 1, incl = !(mode & 2);
          cmx_array r = NULL;
          int ax = 1;
          OK(fs[kind](&r, x, &ax, rev, incl, S));
          double* got = read_f64(r);
          int64_t bad = 0;
          for (int64_t row = 0; row < rows; row++) {
            float fa = kind == 1   ? 1.0f
                       : kind == 2 ? -INFINITY
                       : kind == 3 ? INFINITY
                       : kind == 4 ? -INFINITY
                                   : 0.0f;
            uint32_t ia = kind == 1 ? 1u : 0u;
            int32_t im = kind == 2 ? INT32_MIN : INT32_MAX;
            double la = -INFINITY;
            for (int64_t k = 0; k < n; k++) {
              int64_t c = rev ? n - 1 - k : k, idx = row * n + c;
              double e = xv[idx], want;
              float before = fa;
              uint32_t ibefore = ia;
              int32_t imb = im;
              double lb = la;
              if (kind == 0) fa += (float)e, ia += (uint32_t)(int32_t)e;
              if (kind == 1) fa *= (float)e, ia *= (uint32_t)(int32_t)e;
              if (kind == 2) {
                if ((float)e > fa || e != e) fa = (float)e;
                if ((int32_t)e > im) im = (int32_t)e;
              }
              if (kind == 3) {
                if ((float)e < fa || e != e) fa = (float)e;
                if ((int32_t)e < im) im = (int32_t)e;
              }
              if (kind == 4) {
                double hi = la > e ? la : e, lo = la > e ? e : la;
                la = (la != la || e != e) ? NAN
                     : isinf(hi)          ? hi
                                          : hi + log1p(exp(lo - hi));
              }
              if (dts[di] == CMX_INT32)
                want = kind <= 1 ? (double)(int32_t)(incl ? ia : ibefore)
                                 : (double)(incl ? im : imb);
              else if (kind == 4)
                want = incl ? la : lb;
              else
                want = incl ? fa : before;
              if (dts[di] == CMX_FLOAT16 && kind != 4)
                want = cmx_float16_to_float(cmx_float_to_float16((float)want));
              double g = got ? got[idx] : -1;
              double tol =
                  kind == 4 ? (dts[di] == CMX_FLOAT16 ? 2e-3 : 1e-6) : 0;
              bool okv =
                  (g != g && want != want) ||
                  (isinf(want) ? g == want
                               : fabs(g - want) <= tol * (1 + fabs(want)));
              if (!okv && bad++ < 3)
                fprintf(stderr,
                        "scan n %lld %s kind %d mode %d [%lld]: %g want %g\n",
                        (long long)n, cmx_dtype_name(dts[di]), kind, mode,
                        (long long)idx, g, want);
            }
          }
          CHECK_MSG(got && bad == 0, "scan n %lld %s kind %d mode %d: %lld bad",
                    (long long)n, cmx_dtype_name(dts[di]), kind, mode,
                    (long long)bad);
          free(got);
          cmx_array_release(r);
        }
      }
      free(xv);
      cmx_array_release(b);
      cmx_array_release(x);
    }
    free(v);
  }
}

/* ---------------- Sort ---------------- */

/* NumPy's order on doubles: NaN last; -0.0 equals 0.0. */
static int np_cmp(double a, double b) {
  bool na = a != a, nb = b != b;
  if (na || nb) return na - nb;
  return (a > b) - (a < b);
}

typedef struct {
  const double* v;
  int64_t base, st;
} sort_ref_ctx;
static sort_ref_ctx g_src;
static int cmp_pos(const void* pa, const void* pb) {
  int64_t a = *(const int64_t*)pa, b = *(const int64_t*)pb;
  int c = np_cmp(g_src.v[g_src.base + a * g_src.st],
                 g_src.v[g_src.base + b * g_src.st]);
  return c ? c : (a > b) - (a < b); /* stable */
}

/* Short contiguous rows (many a call, branch-free insertion) and rows
 * along a strided axis whose neighbours are adjacent (copied TILE at a
 * time through contiguous buffers), every mode, with NaN and signed zeros:
 * against a stable sort in NumPy's order (partitions: the kth element and
 * both sides). */
static void test_sort_paths(void) {
  const arg_case cases[] = {
      {{1001, 1}, 2, {0, 1}, 1},       {{1001, 2}, 2, {0, 1}, 1},
      {{1001, 3}, 2, {0, 1}, 1},       {{997, 7}, 2, {0, 1}, 1},
      {{333, 16}, 2, {0, 1}, 1},       {{3, 501, 5}, 3, {0, 1, 2}, 2},
      {{40, 37, 20}, 3, {0, 1, 2}, 0}, {{2, 300, 4}, 3, {0, 1, 2}, 1},
      {{64, 8, 33}, 3, {0, 1, 2}, 0},  {{5, 40, 17}, 3, {2, 0, 1}, 1},
      {{37, 3, 5}, 3, {0, 1, 2}, 0}};
  const cmx_dtype dts[] = {CMX_FLOAT32, CMX_INT32, CMX_FLOAT64, CMX_FLOAT16,
                           CMX_UINT8};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    const arg_case* c = &cases[ci];
    int64_t n = 1, sh[3] = {1, 1, 1};
    for (int i = 0; i < c->nd; i++) n *= c->shape[i], sh[i] = c->shape[i];
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)((int)(rnd32() % 41) - 20);
    for (int64_t i = 0; i < n; i += 7) v[i] = (i / 7) % 2 ? -0.0f : 0.0f;
    for (int64_t i = 3; i < n; i += 29) v[i] = NAN;
    int64_t len = sh[c->axis];
    int64_t lst[3] = {sh[1] * sh[2], sh[2], 1};
    if (c->nd == 2) lst[0] = sh[1], lst[1] = 1;
    int64_t* pos = malloc((size_t)len * sizeof(int64_t));
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
      red_case rc = {{sh[0], sh[1], sh[2]},
                     c->nd,
                     {c->perm[0], c->perm[1], c->perm[2]},
                     {0},
                     0};
      cmx_array x = red_input(&rc, v, dts[di]);
      double* xv = read_f64(x);
      int kth = (int)(len / 2);
      for (int mode = 0; mode < 4; mode++) {
        cmx_array r = NULL;
        if (mode == 0) OK(cmx_sort(&r, x, &c->axis, S));
        if (mode == 1) OK(cmx_argsort(&r, x, &c->axis, S));
        if (mode == 2) OK(cmx_partition(&r, x, kth, &c->axis, S));
        if (mode == 3) OK(cmx_argpartition(&r, x, kth, &c->axis, S));
        double* got = read_f64(r);
        int64_t bad = 0;
        for (int64_t i0 = 0; i0 < (c->axis == 0 ? 1 : sh[0]); i0++)
          for (int64_t i1 = 0; i1 < (c->axis == 1 ? 1 : sh[1]); i1++)
            for (int64_t i2 = 0; i2 < (c->axis == 2 ? 1 : sh[2]); i2++) {
              int64_t base = i0 * lst[0] + i1 * lst[1] + i2 * lst[2];
              int64_t st = lst[c->axis];
              for (int64_t k = 0; k < len; k++) pos[k] = k;
              g_src = (sort_ref_ctx){xv, base, st};
              qsort(pos, (size_t)len, sizeof(int64_t), cmp_pos);
              bool okr = got != NULL;
              for (int64_t k = 0; okr && k < len; k++) {
                double g = got[base + k * st];
                double want_v = xv[base + pos[k] * st];
                if (mode == 0)
                  okr = (g != g && want_v != want_v) ||
                        (g == want_v && signbit(g) == signbit(want_v));
                else if (mode == 1)
                  okr = g == (double)pos[k];
                else {
                  /* the value at k (arg: the value it points to) */
                  double gv = mode == 2 ? g : xv[base + (int64_t)g * st];
                  double kv = xv[base + pos[kth] * st];
                  int cmpk = np_cmp(gv, kv);
                  okr = k < kth ? cmpk <= 0 : k > kth ? cmpk >= 0 : cmpk == 0;
                  if (mode == 3 && k == kth) okr = g == (double)pos[kth];
                }
              }
              if (!okr && bad++ < 3)
                fprintf(stderr, "sort case %zu %s mode %d row at %lld wrong\n",
                        ci, cmx_dtype_name(dts[di]), mode, (long long)base);
            }
        CHECK_MSG(got && bad == 0, "sort case %zu %s mode %d: %lld bad rows",
                  ci, cmx_dtype_name(dts[di]), mode, (long long)bad);
        free(got);
        cmx_array_release(r);
      }
      free(xv);
      cmx_array_release(x);
    }
    free(pos);
    free(v);
  }
}

/* ---------------- Gather of strided slices ---------------- */

/* take along inner axes gathers slices whose elements are strided in the
 * source (indexing.c: tiles of 32 slice elements across a batch of
 * positions): every element size, batches and tiles cut unevenly,
 * negative indices, and an out-of-bounds index still reported. */
static void test_gather_strided(void) {
  const int64_t shapes[][3] = {{37, 45, 3}, {5, 1100, 2}, {3, 7, 70}};
  const cmx_dtype dts[] = {CMX_FLOAT32, CMX_UINT8, CMX_INT16, CMX_FLOAT64};
  for (int si = 0; si < 3; si++) {
    const int64_t* sh = shapes[si];
    int64_t n = sh[0] * sh[1] * sh[2];
    float* v = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(i % 251);
    for (int ax = 1; ax < 3; ax++) {
      int64_t ni = 1203, ish[1] = {ni};
      int32_t* ix = malloc((size_t)ni * sizeof(int32_t));
      for (int64_t i = 0; i < ni; i++) {
        ix[i] = (int32_t)(rnd32() % (uint32_t)sh[ax]);
        if (i % 5 == 0) ix[i] -= (int32_t)sh[ax]; /* negative */
      }
      cmx_array ia = from(ix, ish, 1, CMX_INT32);
      for (int di = 0; di < 4; di++) {
        cmx_array b = from(v, sh, 3, CMX_FLOAT32), x = NULL, r = NULL;
        OK(cmx_astype(&x, b, dts[di], S));
        OK(cmx_take(&r, x, ia, &ax, S));
        double* got = read_f64(r);
        int64_t bad = 0, o = 0;
        /* out[i0, j, i2] (ax 1) or out[i0, i1, j] (ax 2) */
        for (int64_t i0 = 0; i0 < sh[0]; i0++)
          for (int64_t i1 = 0; i1 < (ax == 1 ? ni : sh[1]); i1++)
            for (int64_t i2 = 0; i2 < (ax == 2 ? ni : sh[2]); i2++, o++) {
              int64_t k = ax == 1 ? i1 : i2,
                      t = ix[k] < 0 ? ix[k] + sh[ax] : ix[k];
              int64_t src = ax == 1 ? (i0 * sh[1] + t) * sh[2] + i2
                                    : (i0 * sh[1] + i1) * sh[2] + t;
              if (got && got[o] != (double)v[src]) bad++;
            }
        CHECK_MSG(got && bad == 0, "take shape %d axis %d %s: %lld bad", si, ax,
                  cmx_dtype_name(dts[di]), (long long)bad);
        free(got);
        cmx_array_release_all((cmx_array[]){b, x, r}, 3);
      }
      /* an index out of bounds fails the evaluation */
      ix[ni - 1] = (int32_t)sh[ax];
      cmx_array ib = from(ix, ish, 1, CMX_INT32),
                xb = from(v, sh, 3, CMX_FLOAT32), rb = NULL;
      OK(cmx_take(&rb, xb, ib, &ax, S));
      FAILS(cmx_array_eval(rb), CMX_ERR_INDEX, "out of bounds for axis");
      cmx_array_release_all((cmx_array[]){ia, ib, xb, rb}, 4);
      free(ix);
    }
    free(v);
  }
}

/* ---------------- transposed convolution, few output channels ---------- */

/* The scatter form adds each input row's tap products into the output
 * row (conv_scatter.c: the taps of the innermost dim at once, one channel
 * specially): 2-d transposed convolutions with 1 and 3 output channels,
 * strides, kernel dilation and padding, against the definition
 * out[n, i*s + k*d - p, o] += x[n, i, c] * w[o, k, c] in double. */
static void test_conv_transpose_few_channels(void) {
  const int cfg[][4] = {/* stride, padding, dilation, C_out */
                        {1, 0, 1, 1},
                        {2, 1, 1, 1},
                        {1, 2, 2, 1},
                        {1, 0, 1, 3},
                        {2, 0, 2, 3}};
  for (int t = 0; t < 5; t++) {
    int st = cfg[t][0], pd = cfg[t][1], dl = cfg[t][2];
    int64_t N = 3, H = 6, W = 7, C = 4, O = cfg[t][3], K = 5;
    int64_t xs[4] = {N, H, W, C}, ws[4] = {O, K, K, C};
    int64_t OH = (H - 1) * st - 2 * pd + dl * (K - 1) + 1;
    int64_t OW = (W - 1) * st - 2 * pd + dl * (K - 1) + 1;
    float* xv = malloc((size_t)(N * H * W * C) * sizeof(float));
    float* wv = malloc((size_t)(O * K * K * C) * sizeof(float));
    for (int64_t i = 0; i < N * H * W * C; i++)
      xv[i] = (float)(int32_t)rnd32() / 2147483648.0f;
    for (int64_t i = 0; i < O * K * K * C; i++)
      wv[i] = (float)(int32_t)rnd32() / 2147483648.0f;
    cmx_array x = from(xv, xs, 4, CMX_FLOAT32),
              w = from(wv, ws, 4, CMX_FLOAT32);
    cmx_array r = NULL;
    OK(cmx_conv_transpose2d(&r, x, w, st, st, pd, pd, dl, dl, 0, 0, 1, S));
    double* want = calloc((size_t)(N * OH * OW * O), sizeof(double));
    for (int64_t n = 0; n < N; n++)
      for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++)
          for (int64_t ki = 0; ki < K; ki++)
            for (int64_t kj = 0; kj < K; kj++) {
              int64_t oi = i * st + ki * dl - pd, oj = j * st + kj * dl - pd;
              if (oi < 0 || oi >= OH || oj < 0 || oj >= OW) continue;
              for (int64_t o = 0; o < O; o++)
                for (int64_t c = 0; c < C; c++)
                  want[((n * OH + oi) * OW + oj) * O + o] +=
                      (double)xv[((n * H + i) * W + j) * C + c] *
                      wv[((o * K + ki) * K + kj) * C + c];
            }
    double* got = r ? read_f64(r) : NULL;
    int64_t bad = 0;
    CHECK(r && cmx_array_size(r) == N * OH * OW * O);
    for (int64_t i = 0; got && i < N * OH * OW * O; i++)
      if (fabs(got[i] - want[i]) > 1e-5 * (1 + fabs(want[i]))) bad++;
    CHECK_MSG(got && bad == 0, "conv_transpose case %d: %lld bad", t,
              (long long)bad);
    free(got);
    free(want);
    free(xv);
    free(wv);
    cmx_array_release_all((cmx_array[]){x, w, r}, 3);
  }
}

int main(void) {
  setenv("CMX_NUM_THREADS", "2", 1);
  /* CPU kernels, checked in their own summation orders: on the CPU
   * whatever the default device (a GPU when present). */
  OK(cmx_set_default_device(cmx_device_cpu()));
  RUN(test_f16_convert);
  RUN(test_fmod_rows);
  RUN(test_var_nan);
  RUN(test_softmax_paths);
  RUN(test_reduce_short_rows);
  RUN(test_reduce_fold);
  RUN(test_argreduce_paths);
  RUN(test_scan_rows);
  RUN(test_scan_narrow);
  RUN(test_sort_paths);
  RUN(test_gather_strided);
  RUN(test_conv_transpose_few_channels);
  return test_summary("test_kernel_paths");
}
