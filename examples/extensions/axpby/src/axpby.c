/* The Axpby primitive: its op, CPU and CUDA kernels, and transform rules.
 * Public headers only (cmx/cmx.h: cmx/primitive.h, cmx/cuda.h). */
#include "axpby.h"

#include <complex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

typedef struct axpby_params {
  float alpha, beta;
} axpby_params;

/* ---------------- the CPU kernel ---------------- */

/* bfloat16 <-> float (round to nearest even). */
static float bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint16_t f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

typedef struct job job;
/* The loop of one dtype (below). */
typedef void (*run_fn)(const job* j, const char* x, const char* y, char* z,
                       int64_t n, int64_t sx, int64_t sy);
struct job {
  run_fn run;
  const char *x, *y;
  char* z;
  const int64_t *shape, *xs, *ys; /* strides in elements */
  int ndim, dtype;
  int64_t inner; /* elements of the last axis (1 for 0-d) */
  float a, b;
};

/* z[i] = a * x[i * sx] + b * y[i * sy] for i < n, in dtype T (a, b are
 * copied to locals and the pointers restrict-qualified, so the contiguous
 * loop vectorises). */
#define AXPBY_LOOP(T, LOAD, STORE)                                         \
  static void run_##T(const job* j, const char* x, const char* y, char* z, \
                      int64_t n, int64_t sx, int64_t sy) {                 \
    const T* restrict xp = (const T*)x;                                    \
    const T* restrict yp = (const T*)y;                                    \
    T* restrict zp = (T*)z;                                                \
    const float a = j->a, b = j->b;                                        \
    if (sx == 1 && sy == 1) {                                              \
      for (int64_t i = 0; i < n; i++)                                      \
        zp[i] = STORE(a * LOAD(xp[i]) + b * LOAD(yp[i]));                  \
    } else {                                                               \
      for (int64_t i = 0; i < n; i++)                                      \
        zp[i] = STORE(a * LOAD(xp[i * sx]) + b * LOAD(yp[i * sy]));        \
    }                                                                      \
  }
#define ID(v) (v)
typedef float f32;
typedef double f64;
typedef _Float16 f16;
typedef uint16_t bf16;
typedef float _Complex c64;
#define F16_LOAD(v) ((float)(v))
#define F16_STORE(v) ((_Float16)(v))
AXPBY_LOOP(f32, ID, ID)
AXPBY_LOOP(f64, ID, ID)
AXPBY_LOOP(f16, F16_LOAD, F16_STORE)
AXPBY_LOOP(bf16, bf16_to_f32, f32_to_bf16)
AXPBY_LOOP(c64, ID, ID)

/* Rows [begin, end) of the output (a row: the last axis). */
static void run_rows(void* ctx, int64_t begin, int64_t end) {
  const job* j = ctx;
  size_t item = cmx_dtype_size((cmx_dtype)j->dtype);
  int last = j->ndim - 1;
  for (int64_t r = begin; r < end; r++) {
    /* The offsets of row r in x and y: r's index over the leading axes. */
    int64_t ox = 0, oy = 0, rem = r;
    for (int d = last - 1; d >= 0; d--) {
      int64_t i = rem % j->shape[d];
      rem /= j->shape[d];
      ox += i * j->xs[d];
      oy += i * j->ys[d];
    }
    int64_t sx = j->ndim ? j->xs[last] : 1, sy = j->ndim ? j->ys[last] : 1;
    const char* x = j->x + ox * (int64_t)item;
    const char* y = j->y + oy * (int64_t)item;
    char* z = j->z + r * j->inner * (int64_t)item;
    j->run(j, x, y, z, j->inner, sx, sy);
  }
}

/* Contiguous x and y: the output is one row, split across threads. */
static void run_flat(void* ctx, int64_t begin, int64_t end) {
  const job* j = ctx;
  int64_t item = (int64_t)cmx_dtype_size((cmx_dtype)j->dtype);
  const char* x = j->x + begin * item;
  const char* y = j->y + begin * item;
  char* z = j->z + begin * item;
  int64_t n = end - begin;
  j->run(j, x, y, z, n, 1, 1);
}

static cmx_status axpby_cpu(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  cmx_array x = in[0], y = in[1], z = out[0];
  /* Write in place over x or y when nothing else holds them. */
  bool donated = false;
  cmx_status st = cmx_kernel_alloc_donate(z, x, &donated);
  if (st != CMX_OK) return st;
  job j = {.x = cmx_kernel_data(x),
           .y = cmx_kernel_data(y),
           .z = cmx_kernel_data(z),
           .shape = cmx_array_shape(z),
           .xs = cmx_array_strides(x),
           .ys = cmx_array_strides(y),
           .ndim = cmx_array_ndim(z),
           .dtype = cmx_array_dtype(z),
           .a = q->alpha,
           .b = q->beta};
  switch (j.dtype) {
    case CMX_FLOAT32:
      j.run = run_f32;
      break;
    case CMX_FLOAT64:
      j.run = run_f64;
      break;
    case CMX_FLOAT16:
      j.run = run_f16;
      break;
    case CMX_BFLOAT16:
      j.run = run_bf16;
      break;
    case CMX_COMPLEX64:
      j.run = run_c64;
      break;
    default:
      return cmx_kernel_error(CMX_ERR_TYPE, "[axpby] no kernel for %s",
                              cmx_dtype_name((cmx_dtype)j.dtype));
  }
  int64_t n = cmx_array_size(z);
  if (n == 0) return CMX_OK;
  if (cmx_kernel_is_contiguous(x) && cmx_kernel_is_contiguous(y)) {
    cmx_parallel_for(n, 1 << 14, run_flat, &j);
  } else {
    j.inner = j.ndim ? j.shape[j.ndim - 1] : 1;
    int64_t rows = n / j.inner;
    int64_t grain = j.inner >= (1 << 14) ? 1 : (1 << 14) / j.inner;
    cmx_parallel_for(rows, grain, run_rows, &j);
  }
  return CMX_OK;
}

/* ---------------- the CUDA kernel ---------------- */

/* One program, one entry point per dtype and layout. Compiled by NVRTC at
 * first use through cmx's kernel cache (cmx/cuda.h). Both kernels loop
 * over the elements with a stride of the whole grid, which is sized to
 * the card: AXPBY_BLOCKS_PER_SM blocks a multiprocessor, all resident at
 * once (__launch_bounds__ keeps the registers within that: 32 a thread).
 * The contiguous one moves 16 bytes a load and store (W elements: 4
 * float32, 8 float16 or bfloat16, 2 float64) when x, y and z are all
 * 16-byte aligned (nv: the vectors, 0 otherwise), then the last
 * n - nv * W elements one by one. */
#define AXPBY_THREADS 256
#define AXPBY_BLOCKS_PER_SM 8
#define STR_(x) #x
#define STR(x) STR_(x)
static const char* k_cuda_source =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#define AXPBY_BOUNDS __launch_bounds__(" STR(AXPBY_THREADS) ", " STR(
        AXPBY_BLOCKS_PER_SM) ")\n"
    "struct axpby_layout {\n"
    "  int ndim;\n"
    "  long long shape[32], xs[32], ys[32];\n"
    "};\n"
    "// Arithmetic in float, or double for double.\n"
    "template <typename T> struct acc { typedef float type; };\n"
    "template <> struct acc<double> { typedef double type; };\n"
    "template <typename T>\n"
    "__device__ T axpby_one(T x, T y, float a, float b) {\n"
    "  typedef typename acc<T>::type A;\n"
    "  return T(A(a) * A(x) + A(b) * A(y));\n"
    "}\n"
    "// 16 bytes of T: one vector load or store.\n"
    "template <typename T>\n"
    "struct alignas(16) axpby_vec {\n"
    "  T e[16 / sizeof(T)];\n"
    "};\n"
    "template <typename T>\n"
    "__device__ void axpby_contig(const T* x, const T* y, T* z, float a,\n"
    "                             float b, long long n, long long nv) {\n"
    "  typedef axpby_vec<T> V;\n"
    "  const int W = 16 / sizeof(T);\n"
    "  const long long nt = (long long)gridDim.x * blockDim.x;\n"
    "  const long long t0 = blockIdx.x * (long long)blockDim.x + "
    "threadIdx.x;\n"
    "  for (long long i = t0; i < nv; i += nt) {\n"
    "    const V vx = ((const V*)x)[i], vy = ((const V*)y)[i];\n"
    "    V vz;\n"
    "#pragma unroll\n"
    "    for (int k = 0; k < W; k++)\n"
    "      vz.e[k] = axpby_one(vx.e[k], vy.e[k], a, b);\n"
    "    ((V*)z)[i] = vz;\n"
    "  }\n"
    "  for (long long i = nv * W + t0; i < n; i += nt)\n"
    "    z[i] = axpby_one(x[i], y[i], a, b);\n"
    "}\n"
    "template <typename T>\n"
    "__device__ void axpby_general(const T* x, const T* y, T* z, float a,\n"
    "                              float b, long long n,\n"
    "                              const axpby_layout& l) {\n"
    "  const long long nt = (long long)gridDim.x * blockDim.x;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "       i < n; i += nt) {\n"
    "    long long ox = 0, oy = 0, rem = i;\n"
    "    for (int d = l.ndim - 1; d >= 0; d--) {\n"
    "      long long k = rem % l.shape[d];\n"
    "      rem /= l.shape[d];\n"
    "      ox += k * l.xs[d];\n"
    "      oy += k * l.ys[d];\n"
    "    }\n"
    "    z[i] = axpby_one(x[ox], y[oy], a, b);\n"
    "  }\n"
    "}\n"
    "#define AXPBY_INSTANTIATE(name, T)                                   \\\n"
    "  extern \"C\" __global__ void AXPBY_BOUNDS axpby_contig_##name(     \\\n"
    "      const T* x, const T* y, T* z, float a, float b, long long n,   \\\n"
    "      long long nv) {                                                \\\n"
    "    axpby_contig<T>(x, y, z, a, b, n, nv);                           \\\n"
    "  }                                                                  \\\n"
    "  extern \"C\" __global__ void AXPBY_BOUNDS axpby_general_##name(    \\\n"
    "      const T* x, const T* y, T* z, float a, float b, long long n,   \\\n"
    "      const axpby_layout l) {                                        \\\n"
    "    axpby_general<T>(x, y, z, a, b, n, l);                           \\\n"
    "  }\n"
    "AXPBY_INSTANTIATE(float32, float)\n"
    "AXPBY_INSTANTIATE(float16, __half)\n"
    "AXPBY_INSTANTIATE(bfloat16, __nv_bfloat16)\n"
    "AXPBY_INSTANTIATE(float64, double)\n";

/* The CUDA source above (for checking it where there is no GPU). */
const char* axpby_cuda_source(void) {
  return k_cuda_source;
}

/* The grid of device `dev`: AXPBY_BLOCKS_PER_SM blocks on each of its
 * multiprocessors, fewer where one runs fewer threads than that (by
 * compute capability: 2048 on 7.0, 8.0, 9.0 and 10.x, 1024 on 7.5, else
 * taken as 1536: 8.6, 8.9 and 12.x run that many); asked once a device,
 * 0 when unknown. */
static unsigned card_blocks(cmx_device dev) {
  enum { MAX_DEVICES = 64 };
  static _Atomic unsigned known[MAX_DEVICES];
  if (dev.index < 0 || dev.index >= MAX_DEVICES) return 0;
  unsigned v = atomic_load(&known[dev.index]);
  if (v) return v;
  cmx_device_info info;
  if (cmx_device_get_info(dev, &info) != CMX_OK || info.sm_count <= 0) {
    cmx_clear_error();
    return 0;
  }
  int cc = info.compute_major * 10 + info.compute_minor;
  int threads = cc == 75                              ? 1024
                : (cc >= 86 && cc <= 89) || cc >= 110 ? 1536
                                                      : 2048;
  int per_sm = threads / AXPBY_THREADS;
  if (per_sm > AXPBY_BLOCKS_PER_SM) per_sm = AXPBY_BLOCKS_PER_SM;
  v = (unsigned)(info.sm_count * per_sm);
  atomic_store(&known[dev.index], v);
  return v;
}

/* The layout parameter of axpby_general (as the CUDA struct lays it out). */
typedef struct axpby_layout {
  int32_t ndim, pad;
  int64_t shape[32], xs[32], ys[32];
} axpby_layout;

static cmx_status axpby_gpu(const cmx_primitive* p, const cmx_array* in,
                            int nin, const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  cmx_array x = in[0], y = in[1], z = out[0];
  const char* dt = NULL;
  switch (cmx_array_dtype(z)) {
    case CMX_FLOAT32:
      dt = "float32";
      break;
    case CMX_FLOAT64:
      dt = "float64";
      break;
    case CMX_FLOAT16:
      dt = "float16";
      break;
    case CMX_BFLOAT16:
      dt = "bfloat16";
      break;
    default:
      return cmx_kernel_error(CMX_ERR_TYPE,
                              "[axpby] the gpu kernel supports float16, "
                              "bfloat16, float32 and float64, not %s",
                              cmx_dtype_name(cmx_array_dtype(z)));
  }
  bool contig = cmx_kernel_is_contiguous(x) && cmx_kernel_is_contiguous(y);
  char entry[64];
  snprintf(entry, sizeof entry, "axpby_%s_%s", contig ? "contig" : "general",
           dt);
  const cmx_cuda_kernel* k;
  cmx_status st = cmx_cuda_kernel_get(&k, "axpby", k_cuda_source, entry);
  if (st == CMX_OK) st = cmx_kernel_alloc(z);
  if (st != CMX_OK) return st;
  long long n = cmx_array_size(z);
  if (n == 0) return CMX_OK;
  uint64_t xp = cmx_kernel_device_ptr(x), yp = cmx_kernel_device_ptr(y),
           zp = cmx_kernel_device_ptr(z);
  if (!xp || !yp || !zp) return cmx_last_status();
  float a = q->alpha, b = q->beta;
  axpby_layout l = {0};
  l.ndim = cmx_array_ndim(z);
  for (int d = 0; d < l.ndim; d++) {
    l.shape[d] = cmx_array_shape(z)[d];
    l.xs[d] = cmx_array_strides(x)[d];
    l.ys[d] = cmx_array_strides(y)[d];
  }
  /* vectors when every pointer is 16-byte aligned; a thread a vector (or
   * an element), at most the card's grid */
  int64_t w = 16 / (int64_t)cmx_dtype_size(cmx_array_dtype(z));
  bool aligned = contig && (xp | yp | zp) % 16 == 0;
  long long nv = aligned ? n / w : 0;
  int64_t per = aligned ? w : 1;
  int64_t blocks = ((n + per - 1) / per + AXPBY_THREADS - 1) / AXPBY_THREADS;
  unsigned cap = card_blocks(cmx_primitive_stream(p).device);
  if (cap && blocks > cap) blocks = cap;
  if (blocks > 0x7fffffff) blocks = 0x7fffffff;
  const void* args[7] = {&xp, &yp, &zp, &a, &b, &n, contig ? (void*)&nv : &l};
  const size_t sizes[7] = {8, 8, 8, 4, 4, 8, contig ? 8 : sizeof l};
  cmx_cuda_cfg cfg = {{(unsigned)blocks, 1, 1}, {AXPBY_THREADS, 1, 1}, 0};
  st = cmx_cuda_launch("axpby", k, &cfg, args, sizes, 7);
  if (st == CMX_OK) cmx_kernel_mark_device_written(z);
  return st;
}

/* ---------------- transforms ---------------- */

/* out = c * scale (a new reference), on stream s. */
static cmx_status scaled(cmx_array* out, cmx_array c, float scale,
                         cmx_stream s) {
  cmx_array k = NULL;
  cmx_status st = cmx_array_weak_float(&k, scale);
  if (st == CMX_OK) st = cmx_multiply(out, c, k, s);
  cmx_array_release(k);
  return st;
}

/* d(alpha x + beta y)/dx = alpha, /dy = beta: each cotangent scaled. */
static cmx_status axpby_vjp(const cmx_primitive* p, const cmx_array* primals,
                            int nin, const cmx_array* cotangents, int nout,
                            const int* argnums, int nargs,
                            const cmx_array* outputs, cmx_array* out) {
  (void)primals, (void)nin, (void)nout, (void)outputs;
  const axpby_params* q = cmx_primitive_params(p);
  for (int k = 0; k < nargs; k++) {
    cmx_status st =
        scaled(&out[k], cotangents[0], argnums[k] == 0 ? q->alpha : q->beta,
               cmx_primitive_stream(p));
    if (st != CMX_OK) {
      for (int j = 0; j < k; j++) cmx_array_release(out[j]);
      return st;
    }
  }
  return CMX_OK;
}

/* Both tangents: axpby of the tangents; one: that tangent scaled. */
static cmx_status axpby_jvp(const cmx_primitive* p, const cmx_array* primals,
                            int nin, const cmx_array* tangents,
                            const int* argnums, int nargs,
                            const cmx_array* outputs, cmx_array* out,
                            int nout) {
  (void)primals, (void)nin, (void)outputs, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx_primitive_stream(p);
  if (nargs == 2)
    return axpby(&out[0], tangents[0], tangents[1], q->alpha, q->beta, s);
  return scaled(&out[0], tangents[0], argnums[0] == 0 ? q->alpha : q->beta, s);
}

/* Batched inputs get their batch axis in front, unbatched ones a leading
 * axis of size 1; the op's broadcasting does the rest. */
static cmx_status axpby_vmap(const cmx_primitive* p, const cmx_array* inputs,
                             int nin, const int* axes, const cmx_array* outputs,
                             cmx_array* out, int* out_axes, int nout) {
  (void)nin, (void)outputs, (void)nout;
  const axpby_params* q = cmx_primitive_params(p);
  cmx_stream s = cmx_primitive_stream(p);
  cmx_array front[2] = {NULL, NULL};
  cmx_status st = CMX_OK;
  for (int i = 0; i < 2 && st == CMX_OK; i++) {
    int zero = 0;
    st = axes[i] >= 0 ? cmx_moveaxis(&front[i], inputs[i], axes[i], 0, s)
                      : cmx_expand_dims(&front[i], inputs[i], &zero, 1, s);
  }
  if (st == CMX_OK)
    st = axpby(&out[0], front[0], front[1], q->alpha, q->beta, s);
  out_axes[0] = 0;
  cmx_array_release(front[0]);
  cmx_array_release(front[1]);
  return st;
}

/* The output has the (already broadcast) inputs' shape. */
static cmx_status axpby_shapes(const cmx_primitive* p, const cmx_array* inputs,
                               int nin, cmx_shape* out, int nout) {
  (void)p, (void)nin, (void)nout;
  out[0].ndim = cmx_array_ndim(inputs[0]);
  memcpy(out[0].dims, cmx_array_shape(inputs[0]),
         (size_t)out[0].ndim * sizeof(int64_t));
  return CMX_OK;
}

static void axpby_print(const cmx_primitive* p, char* buf, size_t size) {
  const axpby_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Axpby(alpha=%g, beta=%g)", q->alpha, q->beta);
}

/* Equality and hash: the default (the parameter bytes: alpha and beta). */
static const cmx_primitive_vtable axpby_vt = {.name = "Axpby",
                                              .flags = CMX_PRIM_EXTERNAL,
                                              .id = -1,
                                              .eval_cpu = axpby_cpu,
                                              .eval_gpu = axpby_gpu,
                                              .vjp = axpby_vjp,
                                              .jvp = axpby_jvp,
                                              .vmap = axpby_vmap,
                                              .output_shapes = axpby_shapes,
                                              .print = axpby_print};

/* ---------------- the op ---------------- */

cmx_status axpby(cmx_array* out, cmx_array x, cmx_array y, float alpha,
                 float beta, cmx_stream s) {
  *out = NULL;
  cmx_dtype dt = cmx_dtype_promote(cmx_array_dtype(x), cmx_array_dtype(y));
  if (!cmx_dtype_is_inexact(dt)) dt = cmx_dtype_promote(dt, CMX_FLOAT32);
  cmx_array in[2] = {x, y}, c[2] = {NULL, NULL}, b[2] = {NULL, NULL};
  cmx_status st = CMX_OK;
  /* Casts and broadcasts only where needed (each is a pass over memory
   * otherwise). */
  for (int i = 0; i < 2 && st == CMX_OK; i++)
    st = cmx_array_dtype(in[i]) == dt ? (c[i] = cmx_array_retain(in[i]), CMX_OK)
                                      : cmx_astype(&c[i], in[i], dt, s);
  bool same = st == CMX_OK && cmx_array_ndim(c[0]) == cmx_array_ndim(c[1]) &&
              !memcmp(cmx_array_shape(c[0]), cmx_array_shape(c[1]),
                      (size_t)cmx_array_ndim(c[0]) * sizeof(int64_t));
  if (same)
    for (int i = 0; i < 2; i++) b[i] = cmx_array_retain(c[i]);
  else if (st == CMX_OK)
    st = cmx_broadcast_arrays(b, c, 2, s);
  if (st == CMX_OK) {
    axpby_params q = {alpha, beta};
    cmx_primitive* p = cmx_primitive_new(&axpby_vt, &q, sizeof q, s);
    const int64_t* shapes[1] = {cmx_array_shape(b[0])};
    int nd = cmx_array_ndim(b[0]);
    st = p ? cmx_primitive_apply(out, 1, p, b, 2, shapes, &nd, &dt)
           : cmx_last_status();
  }
  for (int i = 0; i < 2; i++) {
    cmx_array_release(c[i]);
    cmx_array_release(b[i]);
  }
  return st;
}
