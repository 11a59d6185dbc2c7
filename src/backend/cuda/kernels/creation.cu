// Creation kernels for one output dtype (src/backend/cuda/creation.c). The
// module is common.cu, the prelude, ew_bind.cu and primitives/ew_scalar.h
// (the conversions every backend shares), then this file. The prelude
// defines:
//   CMX_T            the output's storage type (cmx_<suffix>_t)
//   CMX_FROM_F64(x)  a double converted to it as the CPU converts
//   CMX_INT_RANGE    1 for integer dtypes (not bool): cmx_range_i exists
// Values are those of the CPU kernels (backend/cpu/creation.c) bit for
// bit: ranges are start + i * step in double, rounded once (no fused
// multiply-add), then converted; integer aranges wrap in uint64.

typedef CMX_T T;

// Arange and Linspace of floats (and of bool): element i of n is
// start + i * step; Linspace's last element is exactly stop.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_range_f)
extern "C" __global__ void cmx_range_f(T* o, long long n, double start,
                                       double step, double stop,
                                       int linspace) {
  CMX_GRID_WAIT();
  const long long nt = cmx_nthreads();
  for (long long i = cmx_tid(); i < n; i += nt) {
    double v = __dadd_rn(start, __dmul_rn((double)i, step));
    if (linspace && i == n - 1) v = stop;
    o[i] = CMX_FROM_F64(v);
  }
}
#endif

// Arange of integers (MLX's rule): a0 + i * d in wrapping uint64, stored
// truncated.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_range_i)
extern "C" __global__ void cmx_range_i(T* o, long long n,
                                       unsigned long long a0,
                                       unsigned long long d) {
  CMX_GRID_WAIT();
#if CMX_INT_RANGE
  const long long nt = cmx_nthreads();
  for (long long i = cmx_tid(); i < n; i += nt)
    o[i] = (T)(a0 + (unsigned long long)i * d);
#else
  // Not launched for this dtype (creation.c takes cmx_range_f).
  (void)o;
  (void)n;
  (void)a0;
  (void)d;
  __trap();
#endif
}
#endif

// Eye (ones where j - i == k) and Tri (ones where j - i <= k) of a row-major
// (rows, m) output of n elements; zeros elsewhere.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_eye_tri)
extern "C" __global__ void cmx_eye_tri(T* o, long long n, long long m,
                                       long long k, int tri) {
  CMX_GRID_WAIT();
  const T one = CMX_FROM_F64(1.0), zero = CMX_FROM_F64(0.0);
  const long long nt = cmx_nthreads();
  for (long long x = cmx_tid(); x < n; x += nt) {
    long long i = x / m, d = x - i * m - i;
    o[x] = (tri ? d <= k : d == k) ? one : zero;
  }
}
#endif

// Tril (lower) / Triu in place on a row-major stack of (rows, m) matrices
// of n elements: zeros where j - i > k (Tril) or j - i < k (Triu).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_tri_mask)
extern "C" __global__ void cmx_tri_mask(T* o, long long n, long long rows,
                                        long long m, long long k, int lower) {
  CMX_GRID_WAIT();
  const T zero = CMX_FROM_F64(0.0);
  const long long nt = cmx_nthreads();
  for (long long x = cmx_tid(); x < n; x += nt) {
    long long r = x / m, d = (x - r * m) - r % rows;
    if (lower ? d > k : d < k) o[x] = zero;
  }
}
#endif
