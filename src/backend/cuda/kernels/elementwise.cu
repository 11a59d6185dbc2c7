// Elementwise kernels for one (op, dtype) pair of the op table, or one
// dtype conversion. The module is common.cu, the prelude, ew_bind.cu and
// primitives/ew_scalar.h (the scalar semantics every backend shares), then
// this file. The prelude (cmx__ew_prelude, or the conversion's) defines:
//   CMX_EW_ARITY   1, 2 or 3 inputs (3: Select, its condition first)
//   CMX_IN_T, CMX_OUT_T       storage types of the inputs and the output
//   CMX_CT                    the compute type of x and y
//   CMX_LOAD(v), CMX_STORE(v) storage <-> compute conversions
//   CMX_OP(x) / CMX_OP(x, y) / CMX_OP(c, x, y)   the table's expression
// Every kernel takes three input pointers (the unused ones null), the
// output, the element count and the op's parameters (cmx_ew_params, P in
// expressions). The output is contiguous: fresh, or an input's buffer
// donated in place. Kernels:
//   cmx_ew_c<mask>    every operand contiguous except those in mask (bit k:
//                     input k is one value broadcast), 16-byte vector
//                     accesses when aligned, then a scalar tail
//   cmx_ew_g<ND>_<bits>   general strides over collapsed dims (ND dims, 0:
//                     any), 32- or 64-bit index arithmetic
// With CMX_ONLY defined only the kernel named by CMX_ONLY_<name> is
// emitted (one kernel a module: quicker first use).

#define CMX_EW_P P

// The variant's name ("Add float32", "convert int32 float16"): visible in
// the PTX and to cuobjdump, and how the fake driver of the tests knows
// what a kernel computes.
extern "C" __device__ const char cmx_ew_variant[] = CMX_EW_VARIANT;

#if CMX_EW_ARITY == 3
typedef cmx_b8_t cmx_t0;
#else
typedef CMX_IN_T cmx_t0;
#endif
typedef CMX_IN_T cmx_t1;
typedef CMX_IN_T cmx_t2;
typedef CMX_OUT_T cmx_to;

// One element.
__device__ __forceinline__ cmx_to cmx_ew_apply(cmx_t0 v0, cmx_t1 v1, cmx_t2 v2,
                                               const cmx_ew_params& P) {
#if CMX_EW_ARITY == 1
  (void)v1;
  (void)v2;
  CMX_CT x = CMX_LOAD(v0);
  return CMX_STORE(CMX_OP(x));
#elif CMX_EW_ARITY == 2
  (void)v2;
  CMX_CT x = CMX_LOAD(v0), y = CMX_LOAD(v1);
  return CMX_STORE(CMX_OP(x, y));
#else
  bool c = v0 != 0;
  CMX_CT x = CMX_LOAD(v1), y = CMX_LOAD(v2);
  return CMX_STORE(CMX_OP(c, x, y));
#endif
}

template <typename T, int V>
struct alignas(sizeof(T) * V) cmx_vec {
  T e[V];
};

template <typename A, typename B>
struct cmx_max_size {
  static constexpr int value = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
};
// Elements per vector access: 16 bytes of the widest operand.
constexpr int CMX_EW_WIDEST =
    cmx_max_size<cmx_t0, cmx_t1>::value > cmx_max_size<cmx_t2, cmx_to>::value
        ? cmx_max_size<cmx_t0, cmx_t1>::value
        : cmx_max_size<cmx_t2, cmx_to>::value;
constexpr int CMX_EW_V = 16 / CMX_EW_WIDEST > 0 ? 16 / CMX_EW_WIDEST : 1;

template <typename T>
__device__ __forceinline__ bool cmx_aligned(const T* p) {
  return (unsigned long long)p % (sizeof(T) * CMX_EW_V) == 0;
}

// Input k takes part as a vector (it exists and is not broadcast).
#define CMX_EW_VEC(k, MASK) (CMX_EW_ARITY > (k) && !((MASK) >> (k)&1))

template <int MASK>
__device__ __forceinline__ void cmx_ew_contig(const cmx_t0* a0,
                                              const cmx_t1* a1,
                                              const cmx_t2* a2, cmx_to* o,
                                              long long n,
                                              const cmx_ew_params& P) {
  constexpr int V = CMX_EW_V;
  const long long t0 = cmx_tid(), nt = cmx_nthreads();
  const cmx_t0 s0 = (MASK & 1) ? a0[0] : cmx_t0();
  const cmx_t1 s1 = (CMX_EW_ARITY > 1 && (MASK & 2)) ? a1[0] : cmx_t1();
  const cmx_t2 s2 = (CMX_EW_ARITY > 2 && (MASK & 4)) ? a2[0] : cmx_t2();
  const bool aligned = cmx_aligned(o) &&
                       (!CMX_EW_VEC(0, MASK) || cmx_aligned(a0)) &&
                       (!CMX_EW_VEC(1, MASK) || cmx_aligned(a1)) &&
                       (!CMX_EW_VEC(2, MASK) || cmx_aligned(a2));
  const long long nv = aligned ? n / V : 0;
  for (long long i = t0; i < nv; i += nt) {
    cmx_vec<cmx_t0, V> v0;
    cmx_vec<cmx_t1, V> v1;
    cmx_vec<cmx_t2, V> v2;
    cmx_vec<cmx_to, V> vo;
    if (CMX_EW_VEC(0, MASK)) v0 = ((const cmx_vec<cmx_t0, V>*)a0)[i];
    if (CMX_EW_VEC(1, MASK)) v1 = ((const cmx_vec<cmx_t1, V>*)a1)[i];
    if (CMX_EW_VEC(2, MASK)) v2 = ((const cmx_vec<cmx_t2, V>*)a2)[i];
#pragma unroll
    for (int k = 0; k < V; k++)
      vo.e[k] = cmx_ew_apply(CMX_EW_VEC(0, MASK) ? v0.e[k] : s0,
                             CMX_EW_VEC(1, MASK) ? v1.e[k] : s1,
                             CMX_EW_VEC(2, MASK) ? v2.e[k] : s2, P);
    ((cmx_vec<cmx_to, V>*)o)[i] = vo;
  }
  for (long long i = nv * V + t0; i < n; i += nt)
    o[i] = cmx_ew_apply(CMX_EW_VEC(0, MASK) ? a0[i] : s0,
                        CMX_EW_VEC(1, MASK) ? a1[i] : s1,
                        CMX_EW_VEC(2, MASK) ? a2[i] : s2, P);
}

#define CMX_EW_C(MASK)                                                 \
  extern "C" __global__ void cmx_ew_c##MASK(                           \
      const cmx_t0* a0, const cmx_t1* a1, const cmx_t2* a2, cmx_to* o, \
      long long n, cmx_ew_params P) {                                  \
    CMX_GRID_WAIT();                                                   \
    cmx_ew_contig<MASK>(a0, a1, a2, o, n, P);                          \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c0)
CMX_EW_C(0)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c1)
CMX_EW_C(1)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c2)
CMX_EW_C(2)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c3)
CMX_EW_C(3)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c4)
CMX_EW_C(4)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c5)
CMX_EW_C(5)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_c6)
CMX_EW_C(6)
#endif

typedef cmx_layout_n<CMX_EW_ARITY + 1> cmx_ew_layout;

template <typename I, int ND>
__device__ __forceinline__ void cmx_ew_strided(const cmx_t0* a0,
                                               const cmx_t1* a1,
                                               const cmx_t2* a2, cmx_to* o, I n,
                                               const cmx_ew_layout& L,
                                               const cmx_ew_params& P) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[CMX_EW_ARITY];
    cmx_offsets<I, ND, CMX_EW_ARITY + 1>(L, i, off);
#if CMX_EW_ARITY == 1
    o[i] = cmx_ew_apply(a0[off[0]], cmx_t1(), cmx_t2(), P);
#elif CMX_EW_ARITY == 2
    o[i] = cmx_ew_apply(a0[off[0]], a1[off[1]], cmx_t2(), P);
#else
    o[i] = cmx_ew_apply(a0[off[0]], a1[off[1]], a2[off[2]], P);
#endif
  }
}

#define CMX_EW_G(ND, BITS, I)                                               \
  extern "C" __global__ void cmx_ew_g##ND##_##BITS(                         \
      const cmx_t0* a0, const cmx_t1* a1, const cmx_t2* a2, cmx_to* o, I n, \
      cmx_ew_params P, const CMX_GRID_CONST cmx_ew_layout L) {              \
    CMX_GRID_WAIT();                                                        \
    cmx_ew_strided<I, ND>(a0, a1, a2, o, n, L, P);                          \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g1_32)
CMX_EW_G(1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g2_32)
CMX_EW_G(2, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g3_32)
CMX_EW_G(3, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g0_32)
CMX_EW_G(0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g1_64)
CMX_EW_G(1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g2_64)
CMX_EW_G(2, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g3_64)
CMX_EW_G(3, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_ew_g0_64)
CMX_EW_G(0, 64, long long)
#endif
