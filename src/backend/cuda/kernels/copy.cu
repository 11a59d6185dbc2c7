// Copy kernels for one element size, chosen by the module's prelude
// (see src/backend/cuda/copy.c): CMX_T is cmx_u8, cmx_u16, cmx_u32 or
// cmx_u64, so any dtype of that size copies bit for bit. The output is
// contiguous; the input is contiguous (v: 16-byte vectors when aligned) or
// strided over collapsed dims (g<ND>_<index bits>, ND = 0 for any).
// With CMX_ONLY defined, only the kernel K with CMX_ONLY_K is emitted.

typedef CMX_T T;

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_v)
extern "C" __global__ void cmx_copy_v(const T* a, T* o, long long n) {
  constexpr int V = 16 / sizeof(T);
  const long long t0 = cmx_tid(), nt = cmx_nthreads();
  const bool aligned =
      ((unsigned long long)o % 16 == 0) && ((unsigned long long)a % 16 == 0);
  const long long nv = aligned ? n / V : 0;
  for (long long i = t0; i < nv; i += nt)
    ((uint4*)o)[i] = ((const uint4*)a)[i];
  for (long long i = nv * V + t0; i < n; i += nt) o[i] = a[i];
}
#endif

template <typename I, int ND>
__device__ __forceinline__ void cmx_copy_strided(const T* a, T* o, I n,
                                                 const cmx_layout_n<2>& L) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[1];
    cmx_offsets<I, ND>(L, i, off);
    o[i] = a[off[0]];
  }
}

#define CMX_COPY_G(ND, BITS, I)                                           \
  extern "C" __global__ void cmx_copy_g##ND##_##BITS(                     \
      const T* a, T* o, I n, const CMX_GRID_CONST cmx_layout_n<2> L) {    \
    cmx_copy_strided<I, ND>(a, o, n, L);                                  \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g1_32)
CMX_COPY_G(1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g2_32)
CMX_COPY_G(2, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g3_32)
CMX_COPY_G(3, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g0_32)
CMX_COPY_G(0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g1_64)
CMX_COPY_G(1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g2_64)
CMX_COPY_G(2, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g3_64)
CMX_COPY_G(3, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g0_64)
CMX_COPY_G(0, 64, long long)
#endif
