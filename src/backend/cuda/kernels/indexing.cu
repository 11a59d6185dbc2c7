// Gather and scatter kernels (see src/backend/cuda/indexing.c). Two
// families share this source:
//   gather   CMX_T: the element type of its size (1, 2, 4, 8 bytes, or
//            uint4 for 16-byte vectors of a contiguous slice); the index
//            offsets kernel, Gather and GatherAxis
//   scatter  CMX_T, the mode (CMX_SC_MODE: 0 none, 1 add, 2 prod, 3 max,
//            4 min) and CMX_SC_OP(x, y), the combined value of the old
//            element x and the update y (storage values); Scatter and
//            ScatterAxis, updates applied with atomics
//   CMX_IDX_INLINE (either family): Gather's and Scatter's general
//            kernels read one index array in place instead of the
//            offsets pass's offsets (cmx_pos_src below)
// Index arrays are read in their own dtype (idt: cmx_dtype's number) and
// layout. A negative index is wrapped by its axis's size; an index that
// is still out of range marks its position bad: a gather writes zeros
// there, a scatter skips it.
// With CMX_ONLY defined, only the kernel K with CMX_ONLY_K is emitted.

typedef CMX_T T;
#define CMX_BAD_OFFSET (-0x7fffffffffffffffll - 1)

__device__ __forceinline__ long long cmx_load_index(const void* p, int dt,
                                                    long long off) {
  switch (dt) {
    case 1:
      return ((const cmx_u8*)p)[off];
    case 2:
      return ((const cmx_u16*)p)[off];
    case 3:
      return ((const cmx_u32*)p)[off];
    case 4: {  // above INT64_MAX: stays out of range
      cmx_u64 v = ((const cmx_u64*)p)[off];
      return v > 0x7fffffffffffffffull ? 0x7fffffffffffffffll : (long long)v;
    }
    case 5:
      return ((const cmx_i8*)p)[off];
    case 6:
      return ((const cmx_i16*)p)[off];
    case 7:
      return ((const cmx_i32*)p)[off];
    default:
      return ((const cmx_i64*)p)[off];
  }
}

// Wraps a negative x by dim; true when [x, x + ext) lies in [0, dim).
__device__ __forceinline__ bool cmx_wrap(long long& x, long long dim,
                                         long long ext) {
  if (x < 0) x += dim;
  return x >= 0 && x <= dim - ext;
}

// The rows kernels' index of row p: the index at position p of idx
// (layout L), wrapped by dim with room for ext, to x; false when it is
// out of range (lane 0 of the row's warp reports it).
__device__ __forceinline__ bool cmx_row_index(const void* idx, int idt,
                                              long long dim, long long ext,
                                              long long p,
                                              cmx_index_error* err, int code,
                                              int axis,
                                              const cmx_layout_n<2>& L,
                                              long long& x) {
  long long off[1];
  cmx_offsets<long long, 0>(L, p, off);
  x = cmx_load_index(idx, idt, off[0]);
  const long long x0 = x;
  if (cmx_wrap(x, dim, ext)) return true;
  if ((threadIdx.x & 31) == 0) cmx_report_bad_index(err, code, axis, x0, dim);
  return false;
}

// Where the slice of index position p starts, for Gather's and
// Scatter's general kernels (their parameters CMX_POS_PARAMS, passed on as
// CMX_POS_SRC to cmx_pos_base). Without CMX_IDX_INLINE: offs[p], the
// offsets pass's sum over the index arrays (offs NULL: no index array,
// offset 0). With it, one index array read in place, whose positions lie
// at one stride (istride; a contiguous or strided vector, a 0-d start):
// the index at p * istride of idx, wrapped by dim with room for ext, times
// stride. Every thread of a position reads it where it would read offs[p]
// (a cached load: the threads of a slice are neighbours). A bad index
// gives CMX_BAD_OFFSET; the thread passing report (one a position)
// records it.
#ifdef CMX_IDX_INLINE
struct cmx_pos_src {
  const void* idx;
  int idt;
  long long istride, dim, ext, stride;
  cmx_index_error* err;
  int code, axis;
};
#define CMX_POS_PARAMS                                                    \
  const void *idx, int idt, long long istride, long long dim,             \
      long long ext, long long stride, cmx_index_error *err, int code,    \
      int axis
#define CMX_POS_SRC \
  cmx_pos_src { idx, idt, istride, dim, ext, stride, err, code, axis }
__device__ __forceinline__ long long cmx_pos_base(const cmx_pos_src& q,
                                                  long long p, bool report) {
  long long x = cmx_load_index(q.idx, q.idt, p * q.istride);
  const long long x0 = x;
  if (cmx_wrap(x, q.dim, q.ext)) return x * q.stride;
  if (report) cmx_report_bad_index(q.err, q.code, q.axis, x0, q.dim);
  return CMX_BAD_OFFSET;
}
#else
typedef const long long* cmx_pos_src;
#define CMX_POS_PARAMS const long long* offs
#define CMX_POS_SRC offs
__device__ __forceinline__ long long cmx_pos_base(const cmx_pos_src& offs,
                                                  long long p, bool) {
  return offs ? offs[p] : 0;
}
#endif

#ifndef CMX_SC_MODE
// ---------------- gather ----------------

// offs[i] (first: =, else +=) index i of idx (layout L) times stride, or
// CMX_BAD_OFFSET once any index of position i is out of range.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_idx_offsets)
extern "C" __global__ void cmx_idx_offsets(const void* idx, int idt,
                                           long long* offs, long long dim,
                                           long long ext, long long stride,
                                           int first, long long n,
                                           cmx_index_error* err, int code,
                                           int axis,
                                           const CMX_GRID_CONST
                                           cmx_layout_n<2> L) {
  CMX_GRID_WAIT();
  for (long long i = cmx_tid(); i < n; i += cmx_nthreads()) {
    long long off[1];
    cmx_offsets<long long, 0>(L, i, off);
    long long x = cmx_load_index(idx, idt, off[0]), x0 = x;
    long long prev = first ? 0 : offs[i];
    bool ok = cmx_wrap(x, dim, ext);
    if (!ok) cmx_report_bad_index(err, code, axis, x0, dim);
    offs[i] = (prev == CMX_BAD_OFFSET || !ok) ? CMX_BAD_OFFSET
                                              : prev + x * stride;
  }
}
#endif

// o[p * S + s] = a[base of p + slice offset of s] (slice layout L).
template <typename I, int ND>
__device__ __forceinline__ void cmx_gather_body(const T* a, T* o,
                                                const cmx_pos_src& pos,
                                                long long S, I n,
                                                const cmx_layout_n<2>& L) {
  const I nt = (I)cmx_nthreads(), s1 = (I)S;
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I p = i / s1, s = i - p * s1;
    long long base = cmx_pos_base(pos, p, s == 0);
    if (base == CMX_BAD_OFFSET) {
      o[i] = T();
      continue;
    }
    I off[1];
    cmx_offsets<I, ND>(L, s, off);
    o[i] = a[base + off[0]];
  }
}

#define CMX_GATHER(ND, BITS, I)                                          \
  extern "C" __global__ void cmx_gather_g##ND##_##BITS(                  \
      const T* a, T* o, CMX_POS_PARAMS, long long S, I n,                \
      const CMX_GRID_CONST cmx_layout_n<2> L) {                          \
    CMX_GRID_WAIT();                                                     \
    cmx_gather_body<I, ND>(a, o, CMX_POS_SRC, S, n, L);                  \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_g1_32)
CMX_GATHER(1, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_g0_32)
CMX_GATHER(0, 32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_g1_64)
CMX_GATHER(1, 64, long long)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_g0_64)
CMX_GATHER(0, 64, long long)
#endif

// Gather of whole rows (one index array, contiguous slices): row p of o
// (S elements at o + p * S) is a[x_p * stride ...], x_p the index at
// position p (layout L over the positions, idx's strides), wrapped by dim
// with room for ext; a warp per row, four loads in flight a lane. A bad
// index gives a row of zeros and is reported.
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_rows)
extern "C" __global__ void cmx_gather_rows(
    const T* __restrict__ a, T* __restrict__ o, const void* idx, int idt,
    long long dim, long long ext, long long stride, long long S,
    long long npos, cmx_index_error* err, int code, int axis,
    const CMX_GRID_CONST cmx_layout_n<2> L) {
  CMX_GRID_WAIT();
  const int lane = threadIdx.x & 31;
  const long long wpb = blockDim.x >> 5, nw = (long long)gridDim.x * wpb;
  for (long long p = (long long)blockIdx.x * wpb + (threadIdx.x >> 5);
       p < npos; p += nw) {
    long long x;
    T* dst = o + p * S;
    if (!cmx_row_index(idx, idt, dim, ext, p, err, code, axis, L, x)) {
      for (long long s = lane; s < S; s += 32) dst[s] = T();
      continue;
    }
    const T* src = a + x * stride;
    long long s = lane;
    for (; s + 96 < S; s += 128) {
      T r0 = src[s], r1 = src[s + 32], r2 = src[s + 64], r3 = src[s + 96];
      dst[s] = r0;
      dst[s + 32] = r1;
      dst[s + 64] = r2;
      dst[s + 96] = r3;
    }
    for (; s < S; s += 32) dst[s] = src[s];
  }
}
#endif

// GatherAxis: L = (output row-major, a with stride 0 on the axis, idx).
template <typename I>
__device__ __forceinline__ void cmx_gather_axis_body(
    const T* a, T* o, const void* idx, int idt, long long dim,
    long long axis_stride, cmx_index_error* err, int code, int axis, I n,
    const cmx_layout_n<3>& L) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[2];
    cmx_offsets<I, 0>(L, i, off);
    long long x = cmx_load_index(idx, idt, off[1]), x0 = x;
    if (cmx_wrap(x, dim, 1)) {
      o[i] = a[off[0] + x * axis_stride];
    } else {
      o[i] = T();
      cmx_report_bad_index(err, code, axis, x0, dim);
    }
  }
}

#define CMX_GATHER_AXIS(BITS, I)                                            \
  extern "C" __global__ void cmx_gather_axis_##BITS(                        \
      const T* a, T* o, const void* idx, int idt, long long dim,            \
      long long axis_stride, cmx_index_error* err, int code, int axis, I n, \
      const CMX_GRID_CONST cmx_layout_n<3> L) {                             \
    CMX_GRID_WAIT();                                                        \
    cmx_gather_axis_body<I>(a, o, idx, idt, dim, axis_stride, err, code,    \
                            axis, n, L);                                    \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_axis_32)
CMX_GATHER_AXIS(32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_gather_axis_64)
CMX_GATHER_AXIS(64, long long)
#endif

#else
// ---------------- scatter ----------------

// max/min as the CPU's: a NaN (either side) wins; complex64 compares
// (real, imaginary) lexicographically.
#define CMX_FMAX(x, y) ((x) != (x) ? (x) : ((y) != (y) || (y) > (x)) ? (y) : (x))
#define CMX_FMIN(x, y) ((x) != (x) ? (x) : ((y) != (y) || (y) < (x)) ? (y) : (x))
__device__ __forceinline__ bool cmx_c64_nan(cmx_c64 z) {
  return z.re != z.re || z.im != z.im;
}
__device__ __forceinline__ cmx_c64 cmx_c64_max(cmx_c64 x, cmx_c64 y) {
  if (cmx_c64_nan(x)) return x;
  if (cmx_c64_nan(y)) return y;
  return (y.re > x.re || (y.re == x.re && y.im > x.im)) ? y : x;
}
__device__ __forceinline__ cmx_c64 cmx_c64_min(cmx_c64 x, cmx_c64 y) {
  if (cmx_c64_nan(x)) return x;
  if (cmx_c64_nan(y)) return y;
  return (y.re < x.re || (y.re == x.re && y.im < x.im)) ? y : x;
}
__device__ __forceinline__ cmx_c64 cmx_c64_mul(cmx_c64 x, cmx_c64 y) {
  return cmx_c64_make(__fsub_rn(__fmul_rn(x.re, y.re), __fmul_rn(x.im, y.im)),
                      __fadd_rn(__fmul_rn(x.re, y.im), __fmul_rn(x.im, y.re)));
}

#if CMX_SC_MODE != 0
// *p = CMX_SC_OP(*p, y) atomically: a compare-and-swap loop on the
// aligned word holding *p (the 32-bit word around a 1- or 2-byte value).
// CMX_SC_BYTES is sizeof(T).
__device__ __forceinline__ void cmx_cas_update(T* p, T y) {
#if CMX_SC_BYTES < 4
  unsigned long long addr = (unsigned long long)p;
  unsigned* w = (unsigned*)(addr & ~3ull);
  unsigned shift = (unsigned)(addr & 3) * 8;
  unsigned mask = (CMX_SC_BYTES == 1 ? 0xffu : 0xffffu) << shift;
  unsigned old = *(volatile unsigned*)w, assumed;
  do {
    assumed = old;
    T x = (T)((assumed & mask) >> shift);
    T r = CMX_SC_OP(x, y);
    unsigned nw = (assumed & ~mask) | (((unsigned)r << shift) & mask);
    if (nw == assumed) return;
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
#else
#if CMX_SC_BYTES == 4
  typedef unsigned W;
#else
  typedef unsigned long long W;
#endif
  W* w = (W*)p;
  W old = *(volatile W*)w, assumed;
  do {
    assumed = old;
    union {
      W u;
      T t;
    } x, r;
    x.u = assumed;
    r.t = CMX_SC_OP(x.t, y);
    if (r.u == assumed) return;
    old = atomicCAS(w, assumed, r.u);
  } while (old != assumed);
#endif
}
#endif

// Sums of float32 (CMX_SC_RED 1), float16 (2) and bfloat16 (3): one
// reduction instruction (sm_90: 16-byte vectors, and 16-bit floats alone;
// sm_70: float16 alone), else the loop above. A 16-bit sum rounds the
// exact sum once where the CPU rounds it to float32 first (the same value
// but for rare halfway cases, which an unordered sum may give anyway).
#if defined(CMX_SC_RED) && CMX_SC_MODE == 1
#if CMX_SC_RED == 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CMX_SC_RED_VEC 1
__device__ __forceinline__ void cmx_red_vec(T* p, uint4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "f"(__uint_as_float(v.x)), "f"(__uint_as_float(v.y)),
               "f"(__uint_as_float(v.z)), "f"(__uint_as_float(v.w))
               : "memory");
}
#elif CMX_SC_RED >= 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CMX_SC_RED_VEC 1
#if CMX_SC_RED == 2
#define CMX_SC_RED_PTX "red.global.add.noftz.v4.f16x2 [%0], {%1, %2, %3, %4};"
#else
#define CMX_SC_RED_PTX "red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};"
#endif
__device__ __forceinline__ void cmx_red_vec(T* p, uint4 v) {
  asm volatile(CMX_SC_RED_PTX ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
#endif
#if (CMX_SC_RED == 2 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700) || \
    (CMX_SC_RED == 3 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900)
__device__ __forceinline__ void cmx_red16(T* p, T y) {
#if CMX_SC_RED == 2
  asm volatile("red.global.add.noftz.f16 [%0], %1;" ::"l"(p), "h"(y)
               : "memory");
#else
  asm volatile("red.global.add.noftz.bf16 [%0], %1;" ::"l"(p), "h"(y)
               : "memory");
#endif
}
#define CMX_SC_ATOMIC_ADD(p, y) cmx_red16(p, y)
#endif
#endif

// Update number id (1-based, in the CPU's order) of value y for element e
// of o. Mode none keeps the last update as the CPU does: with a winner
// buffer W, pass 1 takes the largest id per element, pass 2 lets only that
// update write (without W, a plain store).
__device__ __forceinline__ void cmx_apply(T* o, long long e, T y,
                                         unsigned long long* W, int pass,
                                         unsigned long long id) {
#if CMX_SC_MODE == 0
  if (!W)
    o[e] = y;
  else if (pass == 1)
    atomicMax(W + e, id);
  else if (W[e] == id)
    o[e] = y;
#elif defined(CMX_SC_ATOMIC_ADD)
  (void)W, (void)pass, (void)id;
  CMX_SC_ATOMIC_ADD(o + e, y);
#else
  (void)W, (void)pass, (void)id;
  cmx_cas_update(o + e, y);
#endif
}

// Scatter: update i (layout LU over the updates' shape) goes to
// o[base of p + slice offset of s] (LO: the slice's shape, o's strides).
// A bad index is reported in the first pass only.
template <typename I>
__device__ __forceinline__ void cmx_scatter_body(
    T* o, const T* u, const cmx_pos_src& pos, long long S, I n,
    const cmx_layout_n<2>& LO, const cmx_layout_n<2>& LU,
    unsigned long long* W, int pass) {
  const I nt = (I)cmx_nthreads(), s1 = (I)S;
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I p = i / s1, s = i - p * s1;
    long long base = cmx_pos_base(pos, p, s == 0 && pass < 2);
    if (base == CMX_BAD_OFFSET) continue;
    I oo[1], uo[1];
    cmx_offsets<I, 0>(LO, s, oo);
    cmx_offsets<I, 0>(LU, i, uo);
    cmx_apply(o, base + oo[0], u[uo[0]], W, pass,
              (unsigned long long)i + 1);
  }
}

#define CMX_SCATTER(BITS, I)                                         \
  extern "C" __global__ void cmx_scatter_##BITS(                     \
      T* o, const T* u, CMX_POS_PARAMS, long long S, I n,            \
      const CMX_GRID_CONST cmx_layout_n<2> LO,                       \
      const CMX_GRID_CONST cmx_layout_n<2> LU, unsigned long long* W, \
      int pass) {                                                    \
    CMX_GRID_WAIT();                                                 \
    cmx_scatter_body<I>(o, u, CMX_POS_SRC, S, n, LO, LU, W, pass);   \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scatter_32)
CMX_SCATTER(32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scatter_64)
CMX_SCATTER(64, long long)
#endif

// Scatter of whole rows (one index array, contiguous slices of o,
// row-contiguous updates): update row p (S elements at u + p * S) goes
// to o + x_p * stride, x_p the index at position p (layout L), wrapped by
// dim with room for ext; a warp per row. vec: S, stride and both
// pointers in 16-byte units, each vector one reduction (CMX_SC_RED_VEC).
// A bad index is reported and its row dropped. Not for mode none (its
// updates would land in any order).
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scatter_rows)
extern "C" __global__ void cmx_scatter_rows(
    T* o, const T* __restrict__ u, const void* idx, int idt, long long dim,
    long long ext, long long stride, long long S, long long npos, int vec,
    cmx_index_error* err, int code, int axis,
    const CMX_GRID_CONST cmx_layout_n<2> L) {
  CMX_GRID_WAIT();
  const int lane = threadIdx.x & 31;
  const long long wpb = blockDim.x >> 5, nw = (long long)gridDim.x * wpb;
  for (long long p = (long long)blockIdx.x * wpb + (threadIdx.x >> 5);
       p < npos; p += nw) {
    long long x;
    if (!cmx_row_index(idx, idt, dim, ext, p, err, code, axis, L, x))
      continue;
    T* dst = o + x * stride;
    const T* src = u + p * S;
#ifdef CMX_SC_RED_VEC
    if (vec) {
      const long long nv = S * (long long)sizeof(T) / 16;
      const uint4* s4 = (const uint4*)src;
      long long i = lane;
      for (; i + 96 < nv; i += 128) {
        uint4 r0 = s4[i], r1 = s4[i + 32], r2 = s4[i + 64], r3 = s4[i + 96];
        cmx_red_vec(dst + i * (16 / sizeof(T)), r0);
        cmx_red_vec(dst + (i + 32) * (16 / sizeof(T)), r1);
        cmx_red_vec(dst + (i + 64) * (16 / sizeof(T)), r2);
        cmx_red_vec(dst + (i + 96) * (16 / sizeof(T)), r3);
      }
      for (; i < nv; i += 32) cmx_red_vec(dst + i * (16 / sizeof(T)), s4[i]);
      continue;
    }
#endif
    for (long long s = lane; s < S; s += 32)
      cmx_apply(dst, s, src[s], (unsigned long long*)0, 0, 0);
  }
}
#endif

// ScatterAxis: L = (positions row-major, o with stride 0 on the axis, idx,
// values).
template <typename I>
__device__ __forceinline__ void cmx_scatter_axis_body(
    T* o, const T* u, const void* idx, int idt, long long dim,
    long long axis_stride, cmx_index_error* err, int code, int axis, I n,
    const cmx_layout_n<4>& L, unsigned long long* W, int pass) {
  const I nt = (I)cmx_nthreads();
  for (I i = (I)cmx_tid(); i < n; i += nt) {
    I off[3];
    cmx_offsets<I, 0>(L, i, off);
    long long x = cmx_load_index(idx, idt, off[1]), x0 = x;
    if (cmx_wrap(x, dim, 1))
      cmx_apply(o, off[0] + x * axis_stride, u[off[2]], W, pass,
                (unsigned long long)i + 1);
    else if (pass < 2)
      cmx_report_bad_index(err, code, axis, x0, dim);
  }
}

#define CMX_SCATTER_AXIS(BITS, I)                                           \
  extern "C" __global__ void cmx_scatter_axis_##BITS(                       \
      T* o, const T* u, const void* idx, int idt, long long dim,            \
      long long axis_stride, cmx_index_error* err, int code, int axis, I n, \
      const CMX_GRID_CONST cmx_layout_n<4> L, unsigned long long* W,        \
      int pass) {                                                           \
    CMX_GRID_WAIT();                                                        \
    cmx_scatter_axis_body<I>(o, u, idx, idt, dim, axis_stride, err, code,   \
                             axis, n, L, W, pass);                          \
  }
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scatter_axis_32)
CMX_SCATTER_AXIS(32, int)
#endif
#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_scatter_axis_64)
CMX_SCATTER_AXIS(64, long long)
#endif
#endif
