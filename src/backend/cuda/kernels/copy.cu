// Copy kernels for one element size, chosen by the module's prelude
// (see src/backend/cuda/copy.c): CMX_T is cmx_u8, cmx_u16, cmx_u32 or
// cmx_u64, so any dtype of that size copies bit for bit. The output is
// contiguous; the input is contiguous (v: 16-byte vectors when aligned) or
// strided over collapsed dims (g<ND>_<index bits>, ND = 0 for any).
// Two more forms write a destination that is not row-major: cmx_fill_v
// (one source element to every element of a contiguous run) and
// cmx_copyto_g<ND>_<bits> (strided source and destination: the bands,
// borders and strided regions of concatenate, pad and slice updates).
// With CMX_ONLY defined, only the kernel K with CMX_ONLY_K is emitted.

typedef CMX_T T;

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_v)
extern "C" __global__ void cmx_copy_v(const T* a, T* o, long long n) {
  CMX_GRID_WAIT();
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

// N == 2: the output row-major (index i), the source array 1 of L;
// N == 3: the destination array 1 of L, the source array 2 (array 0, the
// row-major walk, only orders the elements).
template <typename I, int ND, int N>
__device__ __forceinline__ void cmx_copy_strided(const T* a, T* o, I n,
                                                 const cmx_layout_n<N>& L) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[N - 1];
    cmx_offsets<I, ND>(L, i, off);
    if (N == 2)
      o[i] = a[off[0]];
    else
      o[off[0]] = a[off[N - 2]];
  }
}

#define CMX_COPY_G(NAME, N, ND, BITS, I)                                \
  extern "C" __global__ void NAME##_g##ND##_##BITS(                     \
      const T* a, T* o, I n, const CMX_GRID_CONST cmx_layout_n<N> L) {  \
    CMX_GRID_WAIT();                                                    \
    cmx_copy_strided<I, ND, N>(a, o, n, L);                             \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g1_32)
CMX_COPY_G(cmx_copy, 2, 1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g2_32)
CMX_COPY_G(cmx_copy, 2, 2, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g3_32)
CMX_COPY_G(cmx_copy, 2, 3, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g0_32)
CMX_COPY_G(cmx_copy, 2, 0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g1_64)
CMX_COPY_G(cmx_copy, 2, 1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g2_64)
CMX_COPY_G(cmx_copy, 2, 2, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g3_64)
CMX_COPY_G(cmx_copy, 2, 3, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copy_g0_64)
CMX_COPY_G(cmx_copy, 2, 0, 64, long long)
#endif

// One element put in place, its value a launch argument (memory.c: a
// small host array's device copy, made on the reading task's stream).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_put_v)
extern "C" __global__ void cmx_put_v(T* o, T v) {
  CMX_GRID_WAIT();
  if (threadIdx.x == 0 && blockIdx.x == 0) *o = v;
}
#endif

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_fill_v)
extern "C" __global__ void cmx_fill_v(const T* a, T* o, long long n) {
  CMX_GRID_WAIT();
  constexpr int V = 16 / sizeof(T);
  const long long t0 = cmx_tid(), nt = cmx_nthreads();
  const T v = a[0];
  cmx_pack<T> p;
#pragma unroll
  for (int k = 0; k < V; k++) p.e[k] = v;
  // elements before the first 16-byte boundary, then whole vectors
  long long head = (long long)((16 - (unsigned long long)o % 16) % 16) /
                   (long long)sizeof(T);
  if (head > n) head = n;
  const long long nv = (n - head) / V;
  uint4* ov = (uint4*)(o + head);
  for (long long i = t0; i < nv; i += nt) ov[i] = p.raw;
  for (long long i = t0; i < head; i += nt) o[i] = v;
  for (long long i = head + nv * V + t0; i < n; i += nt) o[i] = v;
}
#endif

#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g1_32)
CMX_COPY_G(cmx_copyto, 3, 1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g2_32)
CMX_COPY_G(cmx_copyto, 3, 2, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g3_32)
CMX_COPY_G(cmx_copyto, 3, 3, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g0_32)
CMX_COPY_G(cmx_copyto, 3, 0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g1_64)
CMX_COPY_G(cmx_copyto, 3, 1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g2_64)
CMX_COPY_G(cmx_copyto, 3, 2, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g3_64)
CMX_COPY_G(cmx_copyto, 3, 3, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_copyto_g0_64)
CMX_COPY_G(cmx_copyto, 3, 0, 64, long long)
#endif
