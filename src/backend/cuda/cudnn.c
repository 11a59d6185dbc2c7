/* The cuDNN path of the GPU convolution (conv.c), through cuDNN 9's
 * legacy convolution API (cudnnConvolutionForward and
 * cudnnConvolutionBackwardFilter with tensor, filter and convolution
 * descriptors), loaded at run time: never a link-time dependency.
 *
 * Where libcudnn.so.9 is looked for, in order: $CMX_CUDNN_PATH (the
 * library file, or a folder holding it), the loader's path, then each
 * folder of $CMX_CUDNN_SITE_DIRS (':'-separated; the Python package sets
 * it to the nvidia/cudnn/lib folders of the site-packages on sys.path, as
 * the nvidia-cudnn-cu12/cu13 wheels install them). From a folder, cuDNN's
 * sub-libraries are loaded first (global), so the dispatcher finds them.
 *
 * Cases taken (others fall back to cmx's own path):
 *   forward: 1-3 spatial dims (1-d as 2-d of height 1), float16,
 *       bfloat16, float32, float64, any groups, strides and kernel
 *       dilation, no input dilation, padding lo >= 0 whose symmetric
 *       version gives the same output length (a larger pad_hi is never
 *       read), flip as CUDNN_CONVOLUTION; input and weight row-major
 *       (channels last, as cmx's);
 *   weight gradient: a convolution whose input and weight are views of an
 *       original input x (N, L.., C) and output cotangent dy (N, M.., O),
 *       both row-major, with batch and channels exchanged (the vjp's
 *       form, rules_conv.c), one group, no flip or input dilation:
 *       cudnnConvolutionBackwardFilter computes dw (O, K.., C), then a
 *       transposing copy gives the primitive's (C, K.., O).
 * float32 runs with CUDNN_FMA_MATH (full float32, no TF32) unless
 * CMX_CUDA_ALLOW_TF32=1 (as matmul.c); 16-bit floats with tensor ops and
 * float32 accumulation. The algorithm is cuDNN's heuristic's first that
 * fits; descriptors and algorithm are cached per case; workspaces come
 * from cmx's allocator. CMX_CUDNN_DEBUG=1 prints why a case was refused.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/conv.h"
#include "core/layout.h"

typedef int cudnn_status;
typedef void* cudnn_ptr;
typedef struct {
  int algo;
  cudnn_status status;
  float time;
  size_t memory;
  int determinism, math;
  int reserved[3];
} algo_perf;

/* cuDNN's enum values (cudnn_graph.h, cudnn_cnn.h). */
enum {
  DATA_FLOAT = 0,
  DATA_DOUBLE = 1,
  DATA_HALF = 2,
  DATA_BFLOAT16 = 9,
  FORMAT_NHWC = 1,
  MODE_CONVOLUTION = 0,
  MODE_CROSS_CORRELATION = 1,
  MATH_DEFAULT = 0,
  MATH_TENSOR_OP = 1,
  MATH_FMA = 3
};

static struct {
  size_t (*GetVersion)(void);
  const char* (*GetErrorString)(cudnn_status);
  cudnn_status (*Create)(cudnn_ptr*);
  cudnn_status (*SetStream)(cudnn_ptr, CUstream);
  cudnn_status (*CreateTensorDescriptor)(cudnn_ptr*);
  cudnn_status (*SetTensorNdDescriptor)(cudnn_ptr, int, int, const int*,
                                        const int*);
  cudnn_status (*DestroyTensorDescriptor)(cudnn_ptr);
  cudnn_status (*CreateFilterDescriptor)(cudnn_ptr*);
  cudnn_status (*SetFilterNdDescriptor)(cudnn_ptr, int, int, int, const int*);
  cudnn_status (*DestroyFilterDescriptor)(cudnn_ptr);
  cudnn_status (*CreateConvolutionDescriptor)(cudnn_ptr*);
  cudnn_status (*SetConvolutionNdDescriptor)(cudnn_ptr, int, const int*,
                                             const int*, const int*, int, int);
  cudnn_status (*SetConvolutionGroupCount)(cudnn_ptr, int);
  cudnn_status (*SetConvolutionMathType)(cudnn_ptr, int);
  cudnn_status (*DestroyConvolutionDescriptor)(cudnn_ptr);
  cudnn_status (*GetConvolutionForwardAlgorithm_v7)(cudnn_ptr, cudnn_ptr,
                                                    cudnn_ptr, cudnn_ptr,
                                                    cudnn_ptr, int, int*,
                                                    algo_perf*);
  cudnn_status (*ConvolutionForward)(cudnn_ptr, const void*, cudnn_ptr,
                                     const void*, cudnn_ptr, const void*,
                                     cudnn_ptr, int, void*, size_t, const void*,
                                     cudnn_ptr, void*);
  cudnn_status (*GetConvolutionBackwardFilterAlgorithm_v7)(cudnn_ptr, cudnn_ptr,
                                                           cudnn_ptr, cudnn_ptr,
                                                           cudnn_ptr, int, int*,
                                                           algo_perf*);
  cudnn_status (*ConvolutionBackwardFilter)(cudnn_ptr, const void*, cudnn_ptr,
                                            const void*, cudnn_ptr, const void*,
                                            cudnn_ptr, int, void*, size_t,
                                            const void*, cudnn_ptr, void*);
  cudnn_status (*GetConvolutionForwardWorkspaceSize)(cudnn_ptr, cudnn_ptr,
                                                     cudnn_ptr, cudnn_ptr,
                                                     cudnn_ptr, int, size_t*);
  cudnn_status (*GetConvolutionBackwardFilterWorkspaceSize)(
      cudnn_ptr, cudnn_ptr, cudnn_ptr, cudnn_ptr, cudnn_ptr, int, size_t*);
} dnn;

static const char* const k_entry[] = {
    "cudnnGetVersion",
    "cudnnGetErrorString",
    "cudnnCreate",
    "cudnnSetStream",
    "cudnnCreateTensorDescriptor",
    "cudnnSetTensorNdDescriptor",
    "cudnnDestroyTensorDescriptor",
    "cudnnCreateFilterDescriptor",
    "cudnnSetFilterNdDescriptor",
    "cudnnDestroyFilterDescriptor",
    "cudnnCreateConvolutionDescriptor",
    "cudnnSetConvolutionNdDescriptor",
    "cudnnSetConvolutionGroupCount",
    "cudnnSetConvolutionMathType",
    "cudnnDestroyConvolutionDescriptor",
    "cudnnGetConvolutionForwardAlgorithm_v7",
    "cudnnConvolutionForward",
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
    "cudnnConvolutionBackwardFilter",
    "cudnnGetConvolutionForwardWorkspaceSize",
    "cudnnGetConvolutionBackwardFilterWorkspaceSize"};
#define NENTRY (sizeof k_entry / sizeof k_entry[0])
_Static_assert(sizeof dnn == NENTRY * sizeof(void*), "one pointer an entry");

static struct {
  pthread_once_t once;
  bool ok;
  char why[1024];
  pthread_mutex_t lock; /* handles and their use (stream set per call) */
  cudnn_ptr handle[16];
} g = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

/* Opens libcudnn.so.9 in folder dir (its sub-libraries first). */
static void* open_in(const char* dir) {
  static const char* const subs[] = {
      "libcudnn_graph.so.9",     "libcudnn_engines_precompiled.so.9",
      "libcudnn_heuristic.so.9", "libcudnn_engines_runtime_compiled.so.9",
      "libcudnn_ops.so.9",       "libcudnn_cnn.so.9"};
  char path[4096];
  snprintf(path, sizeof path, "%s/libcudnn.so.9", dir);
  void* lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib) return lib;
  if (access(path, R_OK) != 0) return NULL;
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char sp[4096];
    snprintf(sp, sizeof sp, "%s/%s", dir, subs[i]);
    (void)dlopen(sp, RTLD_LAZY | RTLD_GLOBAL); /* kept for the process */
  }
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Opens the first library found (see the top of the file). */
static void* find_library(char* tried, size_t size) {
  const char* e = getenv("CMX_CUDNN_PATH");
  void* lib = NULL;
  if (e && e[0]) {
    lib = dlopen(e, RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = open_in(e);
    if (lib) return lib;
  }
  lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (lib) return lib;
  const char* err = dlerror();
  snprintf(tried, size, "%s", err ? err : "libcudnn.so.9 not found");
  const char* dirs = getenv("CMX_CUDNN_SITE_DIRS");
  while (dirs && *dirs) {
    const char* end = strchr(dirs, ':');
    size_t n = end ? (size_t)(end - dirs) : strlen(dirs);
    char dir[4096];
    if (n > 0 && n < sizeof dir) {
      memcpy(dir, dirs, n);
      dir[n] = 0;
      lib = open_in(dir);
      if (lib) return lib;
    }
    dirs = end ? end + 1 : NULL;
  }
  return NULL;
}

static void load(void) {
  char tried[512] = "";
  /* cuDNN loads cuBLASLt by name: the one cmx uses is found loaded */
  (void)cmx__cublaslt_available(NULL);
  void* lib = find_library(tried, sizeof tried);
  if (!lib) {
    snprintf(g.why, sizeof g.why,
             "libcudnn.so.9 was not found ($CMX_CUDNN_PATH, the loader "
             "path, the nvidia/cudnn/lib folders of site-packages): %s",
             tried);
    return;
  }
  for (size_t i = 0; i < NENTRY; i++) {
    void* p = dlsym(lib, k_entry[i]);
    if (!p) {
      snprintf(g.why, sizeof g.why, "libcudnn.so.9 lacks %s", k_entry[i]);
      memset(&dnn, 0, sizeof dnn);
      return;
    }
    memcpy((char*)&dnn + i * sizeof(void*), &p, sizeof p);
  }
  g.ok = true;
}

bool cmx__cudnn_available(const char** why) {
  pthread_once(&g.once, load);
  if (why) *why = g.ok ? "" : g.why;
  return g.ok;
}

static bool debug(void) {
  const char* e = getenv("CMX_CUDNN_DEBUG");
  return e && e[0] == '1';
}

/* A refusal: *done stays false. */
static cmx_status refuse(const char* why) {
  if (debug()) fprintf(stderr, "[conv] cuDNN path not taken: %s\n", why);
  return CMX_OK;
}

static cmx_status dnn_fail(const char* what, cudnn_status r) {
  if (debug())
    fprintf(stderr, "[conv] cuDNN %s failed: %s\n", what,
            dnn.GetErrorString(r));
  return cmx__error(CMX_ERR_RUNTIME, "[conv] cuDNN %s failed: %s", what,
                    dnn.GetErrorString(r));
}

/* ---------------- plans ---------------- */

/* One case in cuDNN's terms (4-5 dims, NCHW order of dims, NHWC-packed
 * memory). Zeroed before filling: compared as bytes. */
typedef struct {
  int dev, dtype, wgrad, nb, mode, groups, math, compute;
  int xdims[5], wdims[5], ydims[5];
  int pad[3], stride[3], dil[3];
} plan_key;

typedef struct {
  plan_key key;
  bool ready;
  cudnn_ptr xd, yd, fd, cd;
  int algo;
  size_t ws;
} plan;

#define NPLANS 256
#define WS_MAX ((size_t)1 << 30)
static struct {
  pthread_mutex_t lock;
  plan slots[NPLANS];
  int used;
} g_plans = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void plan_destroy(plan* p) {
  if (p->xd) dnn.DestroyTensorDescriptor(p->xd);
  if (p->yd) dnn.DestroyTensorDescriptor(p->yd);
  if (p->fd) dnn.DestroyFilterDescriptor(p->fd);
  if (p->cd) dnn.DestroyConvolutionDescriptor(p->cd);
  p->xd = p->yd = p->fd = p->cd = NULL;
}

/* NHWC-packed strides of dims (N, C, spatial...) in NCHW order. */
static void packed_strides(const int* dims, int nb, int* st) {
  int acc = dims[1];
  st[1] = 1;
  for (int d = nb - 1; d >= 2; d--) {
    st[d] = acc;
    acc *= dims[d];
  }
  st[0] = acc;
}

static cmx_status plan_build(plan* p, cudnn_ptr h) {
  const plan_key* k = &p->key;
  int xs[5], ys[5];
  packed_strides(k->xdims, k->nb, xs);
  packed_strides(k->ydims, k->nb, ys);
  const char* what = "creating descriptors";
  cudnn_status r = dnn.CreateTensorDescriptor(&p->xd);
  if (!r) r = dnn.CreateTensorDescriptor(&p->yd);
  if (!r) r = dnn.CreateFilterDescriptor(&p->fd);
  if (!r) r = dnn.CreateConvolutionDescriptor(&p->cd);
  if (!r) {
    what = "describing the convolution";
    r = dnn.SetTensorNdDescriptor(p->xd, k->dtype, k->nb, k->xdims, xs);
  }
  if (!r) r = dnn.SetTensorNdDescriptor(p->yd, k->dtype, k->nb, k->ydims, ys);
  if (!r)
    r = dnn.SetFilterNdDescriptor(p->fd, k->dtype, FORMAT_NHWC, k->nb,
                                  k->wdims);
  if (!r)
    r = dnn.SetConvolutionNdDescriptor(p->cd, k->nb - 2, k->pad, k->stride,
                                       k->dil, k->mode, k->compute);
  if (!r) r = dnn.SetConvolutionGroupCount(p->cd, k->groups);
  if (!r) r = dnn.SetConvolutionMathType(p->cd, k->math);
  algo_perf perf[16];
  int n = 0;
  if (!r) {
    what = "choosing an algorithm";
    memset(perf, 0, sizeof perf);
    r = k->wgrad ? dnn.GetConvolutionBackwardFilterAlgorithm_v7(
                       h, p->xd, p->yd, p->cd, p->fd, 16, &n, perf)
                 : dnn.GetConvolutionForwardAlgorithm_v7(h, p->xd, p->fd, p->cd,
                                                         p->yd, 16, &n, perf);
  }
  if (r) {
    cmx_status st = dnn_fail(what, r);
    plan_destroy(p);
    return st;
  }
  /* Full float32 keeps the descriptor's FMA math (an algorithm that
   * cannot run so fails at execution, and the own path takes over);
   * other types take the math type the heuristic names. */
  for (int i = 0; i < n; i++) {
    if (perf[i].status != 0) continue;
    int math = k->math == MATH_FMA ? MATH_FMA : perf[i].math;
    if (dnn.SetConvolutionMathType(p->cd, math) != 0) continue;
    size_t ws = 0;
    r = k->wgrad ? dnn.GetConvolutionBackwardFilterWorkspaceSize(
                       h, p->xd, p->yd, p->cd, p->fd, perf[i].algo, &ws)
                 : dnn.GetConvolutionForwardWorkspaceSize(
                       h, p->xd, p->fd, p->cd, p->yd, perf[i].algo, &ws);
    if (r != 0 || ws > WS_MAX) continue;
    p->algo = perf[i].algo;
    p->ws = ws;
    return CMX_OK;
  }
  plan_destroy(p);
  (void)refuse("no algorithm for the case");
  return cmx__error(CMX_ERR_NOT_IMPLEMENTED,
                    "[conv] cuDNN has no algorithm for the case");
}

/* The cached plan of key, or one built into *tmp (the caller destroys
 * it) when the cache is full. NULL with the error set. */
static plan* plan_get(const plan_key* key, cudnn_ptr h, plan* tmp) {
  uint64_t hash = 1469598103934665603ull;
  const unsigned char* b = (const unsigned char*)key;
  for (size_t i = 0; i < sizeof *key; i++)
    hash = (hash ^ b[i]) * 1099511628211ull;
  pthread_mutex_lock(&g_plans.lock);
  plan* p = NULL;
  for (int i = 0; i < NPLANS; i++) {
    plan* s = &g_plans.slots[(hash + (uint64_t)i) % NPLANS];
    if (!s->ready) {
      if (g_plans.used >= NPLANS * 3 / 4) break;
      s->key = *key;
      if (plan_build(s, h) != CMX_OK) {
        memset(&s->key, 0, sizeof s->key);
        pthread_mutex_unlock(&g_plans.lock);
        return NULL;
      }
      s->ready = true;
      g_plans.used++;
      p = s;
      break;
    }
    if (memcmp(&s->key, key, sizeof *key) == 0) {
      p = s;
      break;
    }
  }
  pthread_mutex_unlock(&g_plans.lock);
  if (p) return p;
  memset(tmp, 0, sizeof *tmp);
  tmp->key = *key;
  return plan_build(tmp, h) == CMX_OK ? tmp : NULL;
}

/* The handle of device dev (created at first use). Called with g.lock
 * held. */
static cmx_status handle_of(int dev, cudnn_ptr* out) {
  if (dev < 0 || dev >= (int)(sizeof g.handle / sizeof g.handle[0]))
    return cmx__error(CMX_ERR_RUNTIME, "[conv] cuDNN: device %d", dev);
  if (!g.handle[dev]) {
    cmx_status st = cmx__gpu_ctx_enter(dev);
    if (st != CMX_OK) return st;
    cudnn_status r = dnn.Create(&g.handle[dev]);
    if (r) {
      g.handle[dev] = NULL;
      return dnn_fail("cudnnCreate", r);
    }
  }
  *out = g.handle[dev];
  return CMX_OK;
}

/* ---------------- running ---------------- */

typedef struct {
  int dev;
  const plan* p;
  const void *alpha, *beta;
  CUdeviceptr x, w, y, ws;
} run_ctx;

static cmx_status run(void* ctx, CUstream s) {
  run_ctx* c = ctx;
  const plan* p = c->p;
  pthread_mutex_lock(&g.lock);
  cudnn_ptr h = NULL;
  cmx_status st = handle_of(c->dev, &h);
  cudnn_status r = 0;
  if (st == CMX_OK) r = dnn.SetStream(h, s);
  void *x = (void*)(uintptr_t)c->x, *w = (void*)(uintptr_t)c->w,
       *y = (void*)(uintptr_t)c->y, *ws = (void*)(uintptr_t)c->ws;
  if (st == CMX_OK && !r)
    r = p->key.wgrad
            ? dnn.ConvolutionBackwardFilter(h, c->alpha, p->xd, x, p->yd, y,
                                            p->cd, p->algo, ws, p->ws, c->beta,
                                            p->fd, w)
            : dnn.ConvolutionForward(h, c->alpha, p->xd, x, p->fd, w, p->cd,
                                     p->algo, ws, p->ws, c->beta, p->yd, y);
  pthread_mutex_unlock(&g.lock);
  if (st == CMX_OK && r) st = dnn_fail("convolution", r);
  return st;
}

/* Whether (N, L.., C) with these element strides is NHWC-packed (strides
 * of size-1 dims do not matter). */
static bool nhwc(int nsp, int64_t N, const int64_t* L, int64_t C, int64_t sn,
                 const int64_t* sl, int64_t sc) {
  if (C > 1 && sc != 1) return false;
  int64_t acc = C;
  for (int d = nsp - 1; d >= 0; d--) {
    if (L[d] > 1 && sl[d] != acc) return false;
    acc *= L[d];
  }
  return N <= 1 || sn == acc;
}

static bool fits(int64_t v) {
  return v >= 0 && v < 0x7fffffff;
}

/* Writes dims (n, c, spatial...) into key dims of nb entries (a 1-d case
 * gets a leading spatial dim of 1). */
static void put_dims(int* out, int nsp, int64_t n, int64_t c,
                     const int64_t* sp) {
  out[0] = (int)n;
  out[1] = (int)c;
  if (nsp == 1) {
    out[2] = 1;
    out[3] = (int)sp[0];
  } else {
    for (int d = 0; d < nsp; d++) out[2 + d] = (int)sp[d];
  }
}

static void put_conv(plan_key* k, int nsp, const int64_t* pad,
                     const int64_t* stride, const int64_t* dil) {
  int o = nsp == 1 ? 1 : 0;
  if (o) k->pad[0] = 0, k->stride[0] = 1, k->dil[0] = 1;
  for (int d = 0; d < nsp; d++) {
    k->pad[o + d] = (int)pad[d];
    k->stride[o + d] = (int)stride[d];
    k->dil[o + d] = (int)dil[d];
  }
}

static bool tf32_allowed(void) {
  const char* e = getenv("CMX_CUDA_ALLOW_TF32");
  return e && e[0] == '1' && e[1] == 0;
}

cmx_status cmx__cudnn_conv(const cmx__gpu_conv* c, bool wgrad, bool* done) {
  *done = false;
  const char* why;
  if (!cmx__cudnn_available(&why)) return refuse(why);
  plan_key key;
  memset(&key, 0, sizeof key);
  key.dev = c->dev;
  key.wgrad = wgrad;
  key.nb = (c->nsp == 1 ? 2 : c->nsp) + 2;
  switch (c->dt) {
    case CMX_FLOAT16:
      key.dtype = DATA_HALF, key.math = MATH_TENSOR_OP;
      break;
    case CMX_BFLOAT16:
      key.dtype = DATA_BFLOAT16, key.math = MATH_TENSOR_OP;
      break;
    case CMX_FLOAT32:
      key.dtype = DATA_FLOAT;
      key.math = tf32_allowed() ? MATH_DEFAULT : MATH_FMA;
      break;
    default:
      key.dtype = DATA_DOUBLE, key.math = MATH_DEFAULT;
  }
  key.compute = c->dt == CMX_FLOAT64 ? DATA_DOUBLE : DATA_FLOAT;
  for (int d = 0; d < c->nsp; d++)
    if (c->id[d] != 1 || c->lo[d] < 0) return refuse("input dilation or crop");
  int64_t xsize = c->N * c->C;
  for (int d = 0; d < c->nsp; d++) xsize *= c->in[d];
  if (!fits(xsize) || !fits(c->rows * c->O) || !fits(c->O * c->taps * c->Cg))
    return refuse("sizes past 32-bit");
  int64_t pad[CMX__CONV_MAX_SPATIAL];
  cmx__buffer* tmp = NULL;
  CUdeviceptr x = c->x, w = c->w, y = c->y;
  if (wgrad) {
    /* x is the original input (N_o, L.., C_o) read as (C_o, L.., N_o),
     * w the cotangent (N_o, M.., O_o) read as (O_o, M.., N_o) */
    if (c->G != 1 || c->flip) return refuse("groups or flip (wgrad)");
    if (!nhwc(c->nsp, c->C, c->in, c->N, c->xs_c, c->xs, c->xs_n) ||
        !nhwc(c->nsp, c->Cg, c->k, c->O, c->ws_c, c->ws, c->ws_o))
      return refuse("operands not views of NHWC arrays (wgrad)");
    for (int d = 0; d < c->nsp; d++) {
      /* original stride c->kd, dilation c->stride, kernel c->out */
      int64_t span = (c->out[d] - 1) * c->stride[d] + 1;
      int64_t m = c->in[d] + 2 * c->lo[d] - span;
      if (m < 0 || m / c->kd[d] + 1 != c->k[d])
        return refuse("padding not symmetric (wgrad)");
      pad[d] = c->lo[d];
    }
    key.mode = MODE_CROSS_CORRELATION;
    key.groups = 1;
    put_dims(key.xdims, c->nsp, c->C, c->N, c->in);
    put_dims(key.ydims, c->nsp, c->Cg, c->O, c->k);
    put_dims(key.wdims, c->nsp, c->O, c->N, c->out);
    put_conv(&key, c->nsp, pad, c->kd, c->stride);
  } else {
    if (!c->w_rowmajor ||
        !nhwc(c->nsp, c->N, c->in, c->C, c->xs_n, c->xs, c->xs_c))
      return refuse("input or weight not row-major");
    for (int d = 0; d < c->nsp; d++) {
      int64_t span = (c->k[d] - 1) * c->kd[d] + 1;
      int64_t m = c->in[d] + 2 * c->lo[d] - span;
      if (m < 0 || m / c->stride[d] + 1 != c->out[d])
        return refuse("padding not symmetric");
      pad[d] = c->lo[d];
    }
    key.mode = c->flip ? MODE_CONVOLUTION : MODE_CROSS_CORRELATION;
    key.groups = (int)c->G;
    put_dims(key.xdims, c->nsp, c->N, c->C, c->in);
    put_dims(key.ydims, c->nsp, c->N, c->O, c->out);
    put_dims(key.wdims, c->nsp, c->O, c->Cg, c->k);
    put_conv(&key, c->nsp, pad, c->stride, c->kd);
  }
  pthread_mutex_lock(&g.lock);
  cudnn_ptr h = NULL;
  cmx_status st = handle_of(c->dev, &h);
  pthread_mutex_unlock(&g.lock);
  if (st != CMX_OK) return st;
  plan ptmp;
  plan* p = plan_get(&key, h, &ptmp);
  if (!p) return cmx_last_status();
  const int64_t esz = (int64_t)cmx_dtype_size(c->dt);
  cmx__buffer* ws = NULL;
  if (p->ws) {
    ws = cmx__device_hooks->alloc_device(p->ws, c->dev);
    if (!ws) st = cmx_last_status();
  }
  if (st == CMX_OK && wgrad) { /* dw (O_o, K.., C_o) before its transpose */
    tmp = cmx__device_hooks->alloc_device(
        (size_t)(c->O * c->out_sp * c->N * esz), c->dev);
    if (!tmp) st = cmx_last_status();
  }
  float f1 = 1, f0 = 0;
  double d1 = 1, d0 = 0;
  bool dbl = c->dt == CMX_FLOAT64;
  /* the backward-filter form reads dy where the forward writes y and
   * writes dw (tmp) where the forward reads w */
  run_ctx rc = {c->dev,
                p,
                dbl ? (const void*)&d1 : (const void*)&f1,
                dbl ? (const void*)&d0 : (const void*)&f0,
                x,
                wgrad && tmp ? tmp->dev : w,
                wgrad ? w : y,
                ws ? ws->dev : 0};
  if (st == CMX_OK) st = cmx__gpu_call("conv", run, &rc);
  if (st == CMX_OK && wgrad) {
    /* (O_o, K.., C_o) -> the primitive's (C_o, K.., O_o) */
    int nd = c->nsp + 2;
    int64_t shape[CMX__CONV_MAX_SPATIAL + 2], src[CMX__CONV_MAX_SPATIAL + 2],
        dst[CMX__CONV_MAX_SPATIAL + 2];
    shape[0] = c->O;
    shape[nd - 1] = c->N;
    int64_t acc = c->O;
    for (int d = c->nsp - 1; d >= 0; d--) {
      shape[1 + d] = c->out[d];
      dst[1 + d] = acc;
      acc *= c->out[d];
    }
    dst[0] = 1;
    dst[nd - 1] = acc;
    cmx__row_major_strides(shape, nd, src);
    st = cmx__gpu_copy_strided("conv", c->dev, y, dst, tmp->dev, src, shape, nd,
                               (size_t)esz);
  }
  if (ws) cmx__buffer_release(ws);
  if (tmp) cmx__buffer_release(tmp);
  if (p == &ptmp) plan_destroy(&ptmp);
  if (st == CMX_OK) *done = true;
  return st;
}
