// Helpers of the factorization primitives on the GPU
// (src/backend/cuda/linalg.c): layout changes between cmx's row-major
// matrices and the column-major ones cuSOLVER and cuBLAS take, pointer
// arrays of the batched routines, triangles, identities, the non-finite
// checks and the packing of results. T is float or double (the prelude).
// Every kernel is a grid-stride loop over `total` items.

#define CMX_LA_LOOP(i, total)                                              \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;    \
       i < (total); i += (long long)gridDim.x * blockDim.x)

// d[b] (c x r, at b * r * c) = transpose of s[b] (r x c, at b * sstep).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_transpose)
extern "C" __global__ void cmx_la_transpose(const T* s, T* d, long long batch,
                                            long long r, long long c,
                                            long long sstep) {
  long long per = r * c;
  CMX_LA_LOOP(t, batch * per) {
    long long b = t / per, e = t % per, i = e / c, j = e % c;
    d[b * per + j * r + i] = s[b * sstep + e];
  }
}
#endif

// p[i] = base + i * step (bytes): the matrices of a batch.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_ptrs)
extern "C" __global__ void cmx_la_ptrs(unsigned long long* p,
                                       unsigned long long base, long long step,
                                       long long n) {
  CMX_LA_LOOP(i, n) p[i] = base + (unsigned long long)(i * step);
}
#endif

// Zeros the strict upper (upper) or strict lower triangle of each n x n
// row-major matrix.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_tri_zero)
extern "C" __global__ void cmx_la_tri_zero(T* p, long long batch, long long n,
                                           int upper) {
  CMX_LA_LOOP(t, batch * n * n) {
    long long e = t % (n * n), i = e / n, j = e % n;
    if (upper ? j > i : j < i) p[t] = (T)0;
  }
}
#endif

// Identity matrices (r x c each).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_eye)
extern "C" __global__ void cmx_la_eye(T* p, long long batch, long long r,
                                      long long c) {
  CMX_LA_LOOP(t, batch * r * c) {
    long long e = t % (r * c);
    p[t] = e / c == e % c ? (T)1 : (T)0;
  }
}
#endif

// flag[i / per] = 1 where p[i] is NaN or infinite.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_nonfinite)
extern "C" __global__ void cmx_la_nonfinite(const T* p, long long per,
                                            long long total, int* flag) {
  CMX_LA_LOOP(i, total) if (!isfinite(p[i])) flag[i / per] = 1;
}
#endif

// p[i] = v where flag[i / per].
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_fill_where)
extern "C" __global__ void cmx_la_fill_where(T* p, long long per,
                                             long long total, const int* flag,
                                             T v) {
  CMX_LA_LOOP(i, total) if (flag[i / per]) p[i] = v;
}
#endif

// info[b] = 1 where n x n matrix b has a zero on its diagonal.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_diag_zero)
extern "C" __global__ void cmx_la_diag_zero(const T* p, long long batch,
                                            long long n, int* info) {
  CMX_LA_LOOP(t, batch * n) {
    long long b = t / n, i = t % n;
    if (p[b * n * n + i * n + i] == (T)0) info[b] = 1;
  }
}
#endif

// LU pivots, one thread per matrix: cuSOLVER's 1-based swaps ipiv (k per
// matrix) to 0-based piv (k) and rows (m: where each row went), perm (m)
// scratch.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_luf_piv)
extern "C" __global__ void cmx_la_luf_piv(const long long* ipiv,
                                          unsigned* piv, unsigned* rows,
                                          unsigned* perm, long long batch,
                                          long long m, long long k) {
  CMX_LA_LOOP(b, batch) {
    unsigned* pm = perm + b * m;
    for (long long i = 0; i < m; i++) pm[i] = (unsigned)i;
    for (long long i = 0; i < k; i++) {
      long long p = ipiv[b * k + i] - 1;
      piv[b * k + i] = (unsigned)p;
      unsigned t = pm[i];
      pm[i] = pm[p];
      pm[p] = t;
    }
    for (long long i = 0; i < m; i++) rows[b * m + pm[i]] = (unsigned)i;
  }
}
#endif

// R (k x n row-major) of QR from the factored column-major a (m x n).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_qr_r)
extern "C" __global__ void cmx_la_qr_r(const T* a, T* r, long long batch,
                                       long long m, long long n, long long k) {
  CMX_LA_LOOP(t, batch * k * n) {
    long long b = t / (k * n), e = t % (k * n), i = e / n, c = e % n;
    r[t] = c >= i ? a[b * m * n + i + c * m] : (T)0;
  }
}
#endif

// Eig's results as complex64, one thread per (matrix, column): w (complex
// T, n per matrix) and, with vectors, vr (column-major n x n: a complex
// pair's columns hold re and im of its first vector) to v (row-major n x n
// complex). NaN where flag (non-finite input).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_eig_pack)
extern "C" __global__ void cmx_la_eig_pack(const T* w, const T* vr, float* ow,
                                           float* ov, long long batch,
                                           long long n, const int* flag) {
  CMX_LA_LOOP(t, batch * n) {
    long long b = t / n, c = t % n;
    bool bad = flag[b] != 0;
    float nan = __int_as_float(0x7fc00000);
    T wi = w[2 * t + 1];
    ow[2 * t] = bad ? nan : (float)w[2 * t];
    ow[2 * t + 1] = bad ? nan : (float)wi;
    if (!ov) continue;
    const T* v = vr + b * n * n;
    float* o = ov + 2 * b * n * n;
    // first of a pair: +im part in the next column; second: conjugate
    long long re_c = c, im_c = -1;
    float sign = 1.f;
    if (wi > (T)0 && c + 1 < n) im_c = c + 1;
    if (wi < (T)0 && c > 0) re_c = c - 1, im_c = c, sign = -1.f;
    for (long long r = 0; r < n; r++) {
      float re = (float)v[r + re_c * n];
      float im = im_c >= 0 ? sign * (float)v[r + im_c * n] : 0.f;
      o[2 * (r * n + c)] = bad ? nan : re;
      o[2 * (r * n + c) + 1] = bad ? nan : im;
    }
  }
}
#endif

// CovSqrt, one thread per matrix of a float32 stack: U diag(sqrt(s)) V^T
// of the n x n matrix's SVD in double by one-sided Jacobi, as the CPU's
// kernel (backend/cpu/random.c) computes it: rotations V make the columns
// of W = A V orthogonal, then out = W diag(1 / sqrt(|w_j|)) V^T, columns
// at rounding level counting as zero. ws: 2 n^2 + n doubles per matrix.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_cov_sqrt)
extern "C" __global__ void cmx_la_cov_sqrt(const float* in, float* out,
                                           double* ws, long long batch,
                                           long long n) {
  CMX_LA_LOOP(b, batch) {
    long long nn = n * n;
    double* w = ws + b * (2 * nn + n);
    double* v = w + nn;
    double* sig = v + nn;
    for (long long i = 0; i < nn; i++) {
      w[i] = (double)in[b * nn + i];
      v[i] = i / n == i % n ? 1.0 : 0.0;
    }
    for (int sweep = 0; sweep < 60; sweep++) {
      bool rotated = false;
      for (long long p = 0; p < n - 1; p++)
        for (long long q = p + 1; q < n; q++) {
          double al = 0, be = 0, ga = 0;
          for (long long k = 0; k < n; k++) {
            double x = w[k * n + p], y = w[k * n + q];
            al += x * x;
            be += y * y;
            ga += x * y;
          }
          if (!(fabs(ga) > 1e-15 * sqrt(al * be))) continue;
          rotated = true;
          double zeta = (be - al) / (2 * ga);
          double t = (zeta >= 0 ? 1.0 : -1.0) /
                     (fabs(zeta) + sqrt(1 + zeta * zeta));
          double cs = 1 / sqrt(1 + t * t), sn = cs * t;
          for (long long k = 0; k < n; k++) {
            double x = w[k * n + p], y = w[k * n + q];
            w[k * n + p] = cs * x - sn * y;
            w[k * n + q] = sn * x + cs * y;
            x = v[k * n + p];
            y = v[k * n + q];
            v[k * n + p] = cs * x - sn * y;
            v[k * n + q] = sn * x + cs * y;
          }
        }
      if (!rotated) break;
    }
    double smax = 0;
    for (long long j = 0; j < n; j++) {
      double s2 = 0;
      for (long long k = 0; k < n; k++) s2 += w[k * n + j] * w[k * n + j];
      sig[j] = sqrt(s2);
      if (sig[j] > smax) smax = sig[j];
    }
    double tol = smax * (double)n * 2.220446049250313e-16;
    for (long long j = 0; j < n; j++)
      sig[j] = sig[j] > tol ? 1 / sqrt(sig[j]) : 0;
    for (long long r = 0; r < n; r++)
      for (long long c = 0; c < n; c++) {
        double acc = 0;
        for (long long j = 0; j < n; j++)
          acc += w[r * n + j] * sig[j] * v[c * n + j];
        out[b * nn + r * n + c] = (float)acc;
      }
  }
}
#endif
