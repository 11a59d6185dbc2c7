// Helpers of the factorization primitives on the GPU
// (src/backend/cuda/linalg.c): layout changes between cmx's row-major
// matrices and the column-major ones cuSOLVER and cuBLAS take, pointer
// arrays of the batched routines, triangles, identities, the non-finite
// checks and the packing of results. T is float or double (the prelude).
// Every kernel is a grid-stride loop over `total` items.

#define CMX_LA_LOOP(i, total)                                          \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; \
       i < (total); i += (long long)gridDim.x * blockDim.x)

// d[b] (c x r, at b * r * c) = transpose of s[b] (r x c, at b * sstep).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_transpose)
extern "C" __global__ void cmx_la_transpose(const T* s, T* d, long long batch,
                                            long long r, long long c,
                                            long long sstep) {
  CMX_GRID_WAIT();
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
  CMX_GRID_WAIT();
  CMX_LA_LOOP(i, n) p[i] = base + (unsigned long long)(i * step);
}
#endif

// Zeros the strict upper (upper) or strict lower triangle of each n x n
// row-major matrix.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_tri_zero)
extern "C" __global__ void cmx_la_tri_zero(T* p, long long batch, long long n,
                                           int upper) {
  CMX_GRID_WAIT();
  CMX_LA_LOOP(t, batch * n * n) {
    long long e = t % (n * n), i = e / n, j = e % n;
    if (upper ? j > i : j < i) p[t] = (T)0;
  }
}
#endif

// Identity matrices (r x c each) at every step-th element (step 2: the real
// parts of complex64 ones, the imaginary parts left as they are).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_eye)
extern "C" __global__ void cmx_la_eye(T* p, long long batch, long long r,
                                      long long c, int step) {
  CMX_GRID_WAIT();
  CMX_LA_LOOP(t, batch * r * c) {
    long long e = t % (r * c);
    p[t * step] = e / c == e % c ? (T)1 : (T)0;
  }
}
#endif

// complex64 (float pairs, whatever T): d[b] = conj(s[b])^T, as
// cmx_la_transpose (the layout change that also conjugates: cuSOLVER's
// vectors of a row-major complex matrix read in place).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_ctranspose)
extern "C" __global__ void cmx_la_ctranspose(const float2* s, float2* d,
                                             long long batch, long long r,
                                             long long c, long long sstep) {
  CMX_GRID_WAIT();
  long long per = r * c;
  CMX_LA_LOOP(t, batch * per) {
    long long b = t / per, e = t % per, i = e / c, j = e % c;
    float2 v = s[b * sstep + e];
    d[b * per + j * r + i] = make_float2(v.x, -v.y);
  }
}
#endif

// flag[i / per] = 1 where p[i] is NaN or infinite.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_nonfinite)
extern "C" __global__ void cmx_la_nonfinite(const T* p, long long per,
                                            long long total, int* flag) {
  CMX_GRID_WAIT();
  CMX_LA_LOOP(i, total) if (!isfinite(p[i])) flag[i / per] = 1;
}
#endif

// p[i] = v where flag[i / per].
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_fill_where)
extern "C" __global__ void cmx_la_fill_where(T* p, long long per,
                                             long long total, const int* flag,
                                             T v) {
  CMX_GRID_WAIT();
  CMX_LA_LOOP(i, total) if (flag[i / per]) p[i] = v;
}
#endif

// info[b] = 1 where n x n matrix b has a zero on its diagonal.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_diag_zero)
extern "C" __global__ void cmx_la_diag_zero(const T* p, long long batch,
                                            long long n, int* info) {
  CMX_GRID_WAIT();
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
extern "C" __global__ void cmx_la_luf_piv(const long long* ipiv, unsigned* piv,
                                          unsigned* rows, unsigned* perm,
                                          long long batch, long long m,
                                          long long k) {
  CMX_GRID_WAIT();
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
  CMX_GRID_WAIT();
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
  CMX_GRID_WAIT();
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
  CMX_GRID_WAIT();
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
          double t =
              (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
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

// ---------------- batched Jacobi for small matrices ----------------
// Eigh and SVD of matrices up to 64 x 64 (linalg_eigen.c), one block per
// matrix, the matrix and its rotations in (dynamic) shared memory. Each
// sweep visits every pair of indices once in round-robin order: n/2
// disjoint pairs per step, rotated at the same time, n - 1 steps. The
// work of a step is split in phases between barriers; within a phase no
// item reads what another writes (tests/c/test_linalg_jacobi.c runs these
// kernels on the host, items in both orders, and checks that). Matrices
// are scaled by a power of 2 near their largest magnitude first (no overflow in
// the squared norms), non-finite ones give NaN results as on the CPU.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_jacobi_eigh) || \
    defined(CMX_ONLY_cmx_la_jacobi_svd)
#ifndef CMX_LA_HOST
#define CMX_LA_KERNEL extern "C" __global__
#define CMX_LA_TID ((int)threadIdx.x)
#define CMX_LA_NT ((int)blockDim.x)
#define CMX_LA_SYNC() __syncthreads()
#define CMX_LA_FOR(i, total) \
  for (int i = CMX_LA_TID; i < (total); i += CMX_LA_NT)
// the same for items whose values a thread sums (the host walks them
// forward: a sum's rounding depends on its order)
#define CMX_LA_FOR_SUM(i, total) CMX_LA_FOR(i, total)
#define CMX_LA_DEV __device__ static inline
#define CMX_LA_NAN ((T)__int_as_float(0x7fc00000))
#define CMX_LA_BLOCK ((long long)blockIdx.x)
// sm: the block's dynamic shared memory
#define CMX_LA_SHARED(sm)                                      \
  extern __shared__ __align__(16) unsigned char cmx_la_smem[]; \
  unsigned char* sm = cmx_la_smem
#endif
#define CMX_LA_SQRT(x) \
  (sizeof(T) == 4 ? (T)sqrtf((float)(x)) : (T)sqrt((double)(x)))
#define CMX_LA_ABS(x) \
  (sizeof(T) == 4 ? (T)fabsf((float)(x)) : (T)fabs((double)(x)))
#define CMX_LA_EPS \
  (sizeof(T) == 4 ? (T)1.1920928955078125e-7 : (T)2.220446049250313e-16)
#define CMX_LA_SWEEPS 40

// Pair i (0 <= i < N / 2) of step s of the round-robin order over N
// (even) indices: index 0 stays, 1 .. N - 1 turn one place a step.
CMX_LA_DEV void cmx_la_pair(int N, int s, int i, int* p, int* q) {
  int x = i == 0 ? 0 : (i - 1 + s) % (N - 1) + 1;
  int y = (N - 2 - i + s) % (N - 1) + 1;
  *p = x < y ? x : y;
  *q = x < y ? y : x;
}

// The block's sum (or max, of non-negative values) of v, through part
// (one T a thread); every thread gets it.
CMX_LA_DEV T cmx_la_reduce(T* part, T v, int max) {
  part[CMX_LA_TID] = v;
  CMX_LA_SYNC();
  if (CMX_LA_TID == 0) {
    T r = part[0];
    for (int i = 1; i < CMX_LA_NT; i++)
      r = max ? (part[i] > r ? part[i] : r) : r + part[i];
    part[0] = r;
  }
  CMX_LA_SYNC();
  T r = part[0];
  CMX_LA_SYNC();
  return r;
}

// The Jacobi rotation (c, s) with tangent t that zeroes the off-diagonal
// entry g of the 2 x 2 symmetric [[a, g], [g, b]] (c = 1, s = t = 0 when g
// is 0): t = sign(z) / (|z| + sqrt(1 + z^2)), z = (b - a) / (2 g).
CMX_LA_DEV void cmx_la_rotation(T a, T b, T g, T* c, T* s, T* t) {
  if (g == (T)0) {
    *c = (T)1, *s = (T)0, *t = (T)0;
    return;
  }
  T z = (b - a) / (2 * g), az = CMX_LA_ABS(z);
  T tt = az > (T)1e15 ? (T)0.5 / az : (T)1 / (az + CMX_LA_SQRT(1 + az * az));
  if (z < (T)0) tt = -tt;
  *t = tt;
  *c = (T)1 / CMX_LA_SQRT(1 + tt * tt);
  *s = *c * tt;
}

// Loads the row-major r x c matrix src into columns of dst (column j at
// j * ld: dst[j * ld + i] = src[i][j], or src[j][i] when trans) scaled by
// 1 / the power of 2 that brings its largest magnitude into [1, 2);
// returns that scale, or -1 when some element is not finite.
CMX_LA_DEV T cmx_la_load(const T* src, T* dst, int r, int c, int ld, int trans,
                         T* part) {
  T amax = (T)0;
  int bad = 0;
  CMX_LA_FOR(e, r * c) {
    T x = src[e];
    if (!isfinite(x)) bad = 1;
    T ax = CMX_LA_ABS(x);
    if (ax > amax) amax = ax;
    int i = e / c, j = e % c;
    if (trans)
      dst[i * ld + j] = x;
    else
      dst[j * ld + i] = x;
  }
  T flag = cmx_la_reduce(part, bad ? (T)1 : (T)0, 1);
  if (flag > (T)0) return (T)-1;
  amax = cmx_la_reduce(part, amax, 1);
  int ex = 1;
  if (amax > (T)0) frexp((double)amax, &ex);
  T scale = (T)ldexp(1.0, ex - 1); /* a power of 2: exact */
  CMX_LA_FOR(e, r * c) {
    int i = e / c, j = e % c;
    if (trans)
      dst[i * ld + j] /= scale;
    else
      dst[j * ld + i] /= scale;
  }
  CMX_LA_SYNC();
  return scale;
}

// rank[j] = the place of value d[j] (0 <= j < n) in ascending (desc = 0)
// or descending order, ties by index.
CMX_LA_DEV void cmx_la_rank(const T* d, int n, int desc, int* rank) {
  CMX_LA_FOR(j, n) {
    int r = 0;
    for (int i = 0; i < n; i++) {
      bool before = desc ? d[i] > d[j] : d[i] < d[j];
      if (before || (d[i] == d[j] && i < j)) r++;
    }
    rank[j] = r;
  }
  CMX_LA_SYNC();
}
#endif

// Eigh (two-sided Jacobi) of n x n symmetric matrices (n <= 64; the lower
// triangle of each row-major matrix, or the upper one when upper): w (n
// each) ascending, with vectors v (row-major n x n, eigenvector j in
// column j). A sweep rotates every pair (p, q): A = J^T A J, V = V J
// (rows p and q, then columns p and q); it stops when the off-diagonal
// norm is at most eps times the Frobenius norm (invariant), or after
// CMX_LA_SWEEPS. Shared: A and V (n x (n + 1) each), 5 N/2 + n + NT T
// (N: n rounded up to even), n ints.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_jacobi_eigh)
CMX_LA_KERNEL void cmx_la_jacobi_eigh(const T* in, T* w, T* v, long long batch,
                                      int n, int upper, int vectors) {
  CMX_GRID_WAIT();
  CMX_LA_SHARED(sm);
  long long b = CMX_LA_BLOCK;
  if (b >= batch) return;
  int ld = n + 1, N = n + (n & 1), P = N / 2;
  T* A = (T*)sm;
  T* V = A + n * ld;
  T* cs = V + n * ld;
  T* sn = cs + P;
  T* gpq = sn + P;
  T* dp = gpq + P;
  T* dq = dp + P;
  T* d = dq + P;
  T* part = d + n;
  int* rank = (int*)(part + CMX_LA_NT);
  const T* a = in + b * n * n;
  // symmetric from one triangle (A row-major: A[i * ld + j])
  T scale = cmx_la_load(a, A, n, n, ld, 1, part);
  T nan = CMX_LA_NAN;
  if (scale < (T)0) {
    CMX_LA_FOR(e, n) w[b * n + e] = nan;
    if (vectors) CMX_LA_FOR(e, n * n) v[b * n * n + e] = nan;
    return;
  }
  CMX_LA_FOR(e, n * n) {
    int i = e / n, j = e % n;
    bool keep = upper ? j >= i : j <= i;
    V[i * ld + j] = i == j ? (T)1 : (T)0;
    if (!keep) A[i * ld + j] = A[j * ld + i];
  }
  CMX_LA_SYNC();
  T acc = (T)0;
  CMX_LA_FOR_SUM(e, n * n)
  acc += A[(e / n) * ld + e % n] * A[(e / n) * ld + e % n];
  T fro2 = cmx_la_reduce(part, acc, 0);
  T tol2 = CMX_LA_EPS * CMX_LA_EPS * fro2;
  for (int sweep = 0; sweep < CMX_LA_SWEEPS; sweep++) {
    acc = (T)0;
    CMX_LA_FOR_SUM(e, n * n) {
      int i = e / n, j = e % n;
      if (i != j) acc += A[i * ld + j] * A[i * ld + j];
    }
    if (cmx_la_reduce(part, acc, 0) <= tol2) break;
    for (int step = 0; step < N - 1; step++) {
      CMX_LA_FOR(i, P) {
        int p, q;
        cmx_la_pair(N, step, i, &p, &q);
        T g = q < n ? A[p * ld + q] : (T)0, t = (T)0;
        T app = q < n ? A[p * ld + p] : (T)0,
          aqq = q < n ? A[q * ld + q] : (T)0;
        cmx_la_rotation(app, aqq, g, &cs[i], &sn[i], &t);
        gpq[i] = g;
        dp[i] = app - t * g;
        dq[i] = aqq + t * g;
      }
      CMX_LA_SYNC();
      // rows p and q of A
      CMX_LA_FOR(e, P * n) {
        int i = e / n, k = e % n, p, q;
        cmx_la_pair(N, step, i, &p, &q);
        if (q >= n || gpq[i] == (T)0) continue;
        T x = A[p * ld + k], y = A[q * ld + k];
        A[p * ld + k] = cs[i] * x - sn[i] * y;
        A[q * ld + k] = sn[i] * x + cs[i] * y;
      }
      CMX_LA_SYNC();
      // columns p and q of A (its 2 x 2 block set exactly) and of V
      CMX_LA_FOR(e, P * n) {
        int i = e / n, k = e % n, p, q;
        cmx_la_pair(N, step, i, &p, &q);
        if (q >= n || gpq[i] == (T)0) continue;
        T c = cs[i], s = sn[i], x = A[k * ld + p], y = A[k * ld + q];
        A[k * ld + p] = k == p ? dp[i] : k == q ? (T)0 : c * x - s * y;
        A[k * ld + q] = k == q ? dq[i] : k == p ? (T)0 : s * x + c * y;
        if (!vectors) continue;
        x = V[k * ld + p];
        y = V[k * ld + q];
        V[k * ld + p] = c * x - s * y;
        V[k * ld + q] = s * x + c * y;
      }
      CMX_LA_SYNC();
    }
  }
  CMX_LA_FOR(j, n) d[j] = A[j * ld + j];
  CMX_LA_SYNC();
  cmx_la_rank(d, n, 0, rank);
  CMX_LA_FOR(j, n) w[b * n + rank[j]] = d[j] * scale;
  if (vectors) CMX_LA_FOR(e, n * n) {
      int r = e / n, j = e % n;
      v[b * n * n + r * n + rank[j]] = V[r * ld + j];
    }
}
#endif

// SVD (one-sided Jacobi) of m x n matrices (m, n <= 64): the columns of
// W (A, or A^T when m < n: R = max(m, n) rows, C = min(m, n) columns) are
// rotated in pairs until each pair is orthogonal to R eps relative to its
// norms (a sweep with no rotation; at most CMX_LA_SWEEPS), V = the product
// of the rotations; then s (C each, descending) = the column norms and,
// with uv, W's columns normalised give C columns of an R x R orthogonal
// matrix, whose columns at rounding level (norm <= R eps max norm) and
// last R - C columns are completed by Gram-Schmidt (twice) from the unit
// vector least covered so far. A = U S V^T: u (m x m) and vt (n x n)
// row-major, the CPU's full matrices. Shared: (uv ? R : C) x (R + 1) W,
// C x (C + 1) V (uv), N + 2 R + NT T (N: C rounded up to even), 2 R + 1
// ints.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_la_jacobi_svd)
// out (D x D row-major) from the D columns of M (column j at j * ldm):
// column (rows = 0) or row (rows = 1) rank[j] of out is column j of M,
// for j < nr; columns j >= nr keep their place.
CMX_LA_DEV void cmx_la_put(const T* M, int ldm, int D, const int* rank, int nr,
                           T* out, int rows) {
  CMX_LA_FOR(e, D * D) {
    int j = e / D, r = e % D, at = j < nr ? rank[j] : j;
    out[rows ? at * D + r : r * D + at] = M[j * ldm + r];
  }
}

CMX_LA_KERNEL void cmx_la_jacobi_svd(const T* in, T* s, T* u, T* vt,
                                     long long batch, int m, int n, int uv) {
  CMX_GRID_WAIT();
  CMX_LA_SHARED(sm);
  long long b = CMX_LA_BLOCK;
  if (b >= batch) return;
  int tall = m >= n, R = tall ? m : n, C = tall ? n : m;
  int ld = R + 1, ldv = C + 1, N = C + (C & 1), P = N / 2;
  int L = R + (uv ? C : 0);
  T* W = (T*)sm;
  T* V = W + (uv ? R : C) * ld;
  T* cs = V + (uv ? C * ldv : 0);
  T* sn = cs + P;
  T* sig = sn + P;
  T* coef = sig + R;
  T* part = coef + R;
  int* rank = (int*)(part + CMX_LA_NT);
  int* est = rank + R;
  int* flag = est + R;
  const T* a = in + b * m * n;
  T* so = s + b * C;
  T* uo = u + b * m * m;
  T* vo = vt + b * n * n;
  T scale = cmx_la_load(a, W, m, n, ld, !tall, part);
  if (scale < (T)0) {
    T nan = CMX_LA_NAN;
    CMX_LA_FOR(e, C) so[e] = nan;
    if (uv) {
      CMX_LA_FOR(e, m * m) uo[e] = nan;
      CMX_LA_FOR(e, n * n) vo[e] = nan;
    }
    return;
  }
  if (uv) CMX_LA_FOR(e, C * C) V[(e / C) * ldv + e % C] = e / C == e % C;
  T tol = CMX_LA_EPS * (T)R;
  for (int sweep = 0; sweep < CMX_LA_SWEEPS; sweep++) {
    if (CMX_LA_TID == 0) *flag = 0;
    CMX_LA_SYNC();
    for (int step = 0; step < N - 1; step++) {
      CMX_LA_FOR(i, P) {
        int p, q;
        cmx_la_pair(N, step, i, &p, &q);
        T al = (T)0, be = (T)0, ga = (T)0, t;
        for (int k = 0; q < C && k < R; k++) {
          T x = W[p * ld + k], y = W[q * ld + k];
          al += x * x;
          be += y * y;
          ga += x * y;
        }
        if (ga != (T)0 && ga * ga > tol * tol * al * be) {
          cmx_la_rotation(al, be, ga, &cs[i], &sn[i], &t);
          *flag = 1;
        } else {
          cs[i] = (T)1, sn[i] = (T)0;
        }
      }
      CMX_LA_SYNC();
      // columns p and q of W (items k < R) and of V
      CMX_LA_FOR(e, P * L) {
        int i = e / L, k = e % L, p, q;
        if (sn[i] == (T)0) continue;
        cmx_la_pair(N, step, i, &p, &q);
        T* M = k < R ? W : V;
        int l = k < R ? ld : ldv;
        k = k < R ? k : k - R;
        T x = M[p * l + k], y = M[q * l + k];
        M[p * l + k] = cs[i] * x - sn[i] * y;
        M[q * l + k] = sn[i] * x + cs[i] * y;
      }
      CMX_LA_SYNC();
    }
    int rotated = *flag;
    CMX_LA_SYNC();
    if (!rotated) break;
  }
  CMX_LA_FOR(j, C) {
    T acc = (T)0;
    for (int k = 0; k < R; k++) acc += W[j * ld + k] * W[j * ld + k];
    sig[j] = CMX_LA_SQRT(acc);
  }
  CMX_LA_SYNC();
  cmx_la_rank(sig, C, 1, rank);
  CMX_LA_FOR(j, C) so[rank[j]] = sig[j] * scale;
  if (!uv) return;
  T smax = (T)0;
  CMX_LA_FOR(j, C) smax = sig[j] > smax ? sig[j] : smax;
  T thr = cmx_la_reduce(part, smax, 1) * tol;
  CMX_LA_FOR(j, R) est[j] = j < C && sig[j] > thr && sig[j] > (T)0;
  CMX_LA_SYNC();
  CMX_LA_FOR(e, C * R) {
    int j = e / R;
    if (est[j]) W[j * ld + e % R] /= sig[j];
  }
  CMX_LA_SYNC();
  for (int j = 0; j < R; j++) {
    if (est[j]) continue;
    // the unit vector e_k least covered by the columns so far ...
    CMX_LA_FOR(k, R) {
      T acc = (T)0;
      for (int c = 0; c < R; c++)
        if (est[c]) acc += W[c * ld + k] * W[c * ld + k];
      sig[k] = acc;
    }
    CMX_LA_SYNC();
    if (CMX_LA_TID == 0) {
      int best = 0;
      for (int k = 1; k < R; k++)
        if (sig[k] < sig[best]) best = k;
      *flag = best;
    }
    CMX_LA_SYNC();
    int ks = *flag;
    // ... less its projections on them, twice
    CMX_LA_FOR(k, R) {
      T acc = k == ks ? (T)1 : (T)0;
      for (int c = 0; c < R; c++)
        if (est[c]) acc -= W[c * ld + k] * W[c * ld + ks];
      W[j * ld + k] = acc;
    }
    CMX_LA_SYNC();
    CMX_LA_FOR(c, R) {
      T acc = (T)0;
      for (int k = 0; est[c] && k < R; k++)
        acc += W[c * ld + k] * W[j * ld + k];
      coef[c] = acc;
    }
    CMX_LA_SYNC();
    T nrm = (T)0;
    CMX_LA_FOR_SUM(k, R) {
      T acc = W[j * ld + k];
      for (int c = 0; c < R; c++)
        if (est[c]) acc -= coef[c] * W[c * ld + k];
      W[j * ld + k] = acc;
      nrm += acc * acc;
    }
    nrm = CMX_LA_SQRT(cmx_la_reduce(part, nrm, 0));
    CMX_LA_FOR(k, R) W[j * ld + k] /= nrm;
    if (CMX_LA_TID == 0) est[j] = 1;
    CMX_LA_SYNC();
  }
  if (tall) {
    cmx_la_put(W, ld, m, rank, C, uo, 0);
    cmx_la_put(V, ldv, n, rank, C, vo, 1);
  } else {
    cmx_la_put(V, ldv, m, rank, C, uo, 0);
    cmx_la_put(W, ld, n, rank, C, vo, 1);
  }
}
#endif
