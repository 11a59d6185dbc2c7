// Binary elementwise kernels for one (op, dtype) pair, chosen by the
// module's prelude (see src/backend/cuda/binary.c):
//   CMX_T         storage type of both inputs and of the output
//   CMX_CT        compute type (float for float16/bfloat16, unsigned
//                 integers for signed ones so that overflow wraps)
//   CMX_LOAD(x)   CMX_T -> CMX_CT
//   CMX_STORE(x)  CMX_CT -> CMX_T
//   CMX_OP(x, y)  the operation on two CMX_CT values
// The output is always contiguous. Layouts: both inputs contiguous (vv), one
// input a broadcast scalar (sv, vs), or general strides over collapsed dims
// (g<ND>_<index bits>, ND = 0 for any number of dims).
// With CMX_ONLY defined, only the kernel K with CMX_ONLY_K defined is
// emitted (the runtime builds one kernel per module: quicker first use).

typedef CMX_T T;

__device__ __forceinline__ T cmx_apply(T a, T b) {
  CMX_CT x = CMX_LOAD(a), y = CMX_LOAD(b);
  return CMX_STORE(CMX_OP(x, y));
}

// SA / SB: a / b is one value broadcast over all n elements. 16-byte
// vectors when every vector operand is 16-byte aligned, then a scalar tail.
template <bool SA, bool SB>
__device__ __forceinline__ void cmx_binary_contig(const T* a, const T* b,
                                                  T* o, long long n) {
  constexpr int V = 16 / sizeof(T);
  const long long t0 = cmx_tid(), nt = cmx_nthreads();
  const T xa = SA ? a[0] : T(), xb = SB ? b[0] : T();
  const bool aligned = ((unsigned long long)o % 16 == 0) &&
                       (SA || (unsigned long long)a % 16 == 0) &&
                       (SB || (unsigned long long)b % 16 == 0);
  const long long nv = aligned ? n / V : 0;
  for (long long i = t0; i < nv; i += nt) {
    cmx_pack<T> pa, pb, po;
    if (!SA) pa.raw = ((const uint4*)a)[i];
    if (!SB) pb.raw = ((const uint4*)b)[i];
#pragma unroll
    for (int k = 0; k < V; k++)
      po.e[k] = cmx_apply(SA ? xa : pa.e[k], SB ? xb : pb.e[k]);
    ((uint4*)o)[i] = po.raw;
  }
  for (long long i = nv * V + t0; i < n; i += nt)
    o[i] = cmx_apply(SA ? xa : a[i], SB ? xb : b[i]);
}

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_vv)
extern "C" __global__ void cmx_binary_vv(const T* a, const T* b, T* o,
                                         long long n) {
  cmx_binary_contig<false, false>(a, b, o, n);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_sv)
extern "C" __global__ void cmx_binary_sv(const T* a, const T* b, T* o,
                                         long long n) {
  cmx_binary_contig<true, false>(a, b, o, n);
}
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_vs)
extern "C" __global__ void cmx_binary_vs(const T* a, const T* b, T* o,
                                         long long n) {
  cmx_binary_contig<false, true>(a, b, o, n);
}
#endif

template <typename I, int ND>
__device__ __forceinline__ void cmx_binary_strided(const T* a, const T* b,
                                                   T* o, I n,
                                                   const cmx_layout& L) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[2];
    cmx_offsets<I, ND>(L, i, off);
    o[i] = cmx_apply(a[off[0]], b[off[1]]);
  }
}

#define CMX_BINARY_G(ND, BITS, I)                                          \
  extern "C" __global__ void cmx_binary_g##ND##_##BITS(                    \
      const T* a, const T* b, T* o, I n, const CMX_GRID_CONST cmx_layout L) { \
    cmx_binary_strided<I, ND>(a, b, o, n, L);                              \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g1_32)
CMX_BINARY_G(1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g2_32)
CMX_BINARY_G(2, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g3_32)
CMX_BINARY_G(3, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g0_32)
CMX_BINARY_G(0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g1_64)
CMX_BINARY_G(1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g2_64)
CMX_BINARY_G(2, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g3_64)
CMX_BINARY_G(3, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_binary_g0_64)
CMX_BINARY_G(0, 64, long long)
#endif
