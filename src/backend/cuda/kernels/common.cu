// Shared definitions of cmx's CUDA kernels: nvrtc.c puts this source first
// in every module, then the module's prelude (per-variant #defines), then
// the kernel file. Compiled by NVRTC at run time; needs no headers.

typedef unsigned char cmx_u8;
typedef signed char cmx_i8;
typedef unsigned short cmx_u16;
typedef short cmx_i16;
typedef unsigned int cmx_u32;
typedef int cmx_i32;
typedef unsigned long long cmx_u64;
typedef long long cmx_i64;

// Kernel parameters too large to copy per thread are read in place from
// the parameter space (sm_70 and later).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define CMX_GRID_CONST __grid_constant__
#else
#define CMX_GRID_CONST
#endif

// Programmatic dependent launch (sm_90 and later). Every built-in kernel
// starts with CMX_GRID_WAIT(): in a CUDA graph a kernel may be given a
// programmatic dependency on the kernel before it (graph.c), so that it is
// launched while that one still runs; the wait holds its threads until the
// kernels it depends on have finished and their writes are visible, which
// makes the early launch exactly as safe as a full dependency (reads and
// writes all come after it). It then lets the next kernel launch early in
// turn (launch_dependents; that kernel waits for this one to finish). Both
// are no-ops in a kernel launched without such a dependency.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CMX_GRID_WAIT()                                \
  do {                                                 \
    asm volatile("griddepcontrol.wait;" ::: "memory"); \
    asm volatile("griddepcontrol.launch_dependents;"); \
  } while (0)
#else
#define CMX_GRID_WAIT() \
  do {                  \
  } while (0)
#endif

// Asks L2 to fetch the line holding p (a hint: nothing is read into the
// thread, and since L2 is where the device's memory is coherent, a value
// written later by any kernel is what a later load sees). Kernels issue it
// before CMX_GRID_WAIT() for bytes no kernel of the graph writes before
// them in practice (weights), so a programmatic launch's wait overlaps
// their trip from memory.
static __device__ __forceinline__ void cmx_prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// Sixteen bytes of elements, moved with one 128-bit access.
template <typename T>
union cmx_pack {
  uint4 raw;
  T e[16 / sizeof(T)];
};

// Grid-stride loop helpers.
__device__ __forceinline__ long long cmx_tid() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long cmx_nthreads() {
  return (long long)gridDim.x * blockDim.x;
}

// A collapsed layout of N arrays of one shape (the output first): the
// kernel parameter that cmx__gpu_args_layout packs from a cmx__gpu_layout.
#define CMX_MAX_DIMS 32
template <int N>
struct cmx_layout_n {
  int ndim;
  long long shape[CMX_MAX_DIMS];
  long long strides[N][CMX_MAX_DIMS];
};
// The output and two inputs: the elementwise binary layout.
typedef cmx_layout_n<3> cmx_layout;

// Element offsets of linear index i in arrays 1 .. N-1 of layout L, in
// index type I, to off[0 .. N-2]. ND > 0: the layout has exactly ND dims
// (loop unrolled); ND == 0: any number of dims.
template <typename I, int ND, int N>
__device__ __forceinline__ void cmx_offsets(const cmx_layout_n<N>& L, I i,
                                            I (&off)[N - 1]) {
  I r = i;
#pragma unroll
  for (int a = 0; a < N - 1; a++) off[a] = 0;
  if (ND > 0) {
#pragma unroll
    for (int d = ND - 1; d >= 0; d--) {
      I s = (I)L.shape[d], q = r / s, k = r - q * s;
      r = q;
#pragma unroll
      for (int a = 0; a < N - 1; a++) off[a] += k * (I)L.strides[a + 1][d];
    }
  } else {
    for (int d = L.ndim - 1; d >= 0; d--) {
      I s = (I)L.shape[d], q = r / s, k = r - q * s;
      r = q;
#pragma unroll
      for (int a = 0; a < N - 1; a++) off[a] += k * (I)L.strides[a + 1][d];
    }
  }
}

// The stream's error record of out-of-range indices (host memory the
// device writes; gpu.h's cmx__gpu_index_error).
struct cmx_index_error {
  int code, axis;
  long long value, dim;
};

// Records index value (out of range for size dim of axis) unless an
// earlier error is recorded; code names the op (host side).
__device__ __forceinline__ void cmx_report_bad_index(cmx_index_error* e,
                                                     int code, int axis,
                                                     long long value,
                                                     long long dim) {
  if (e && atomicCAS(&e->code, 0, code) == 0) {
    e->axis = axis;
    e->value = value;
    e->dim = dim;
  }
}
