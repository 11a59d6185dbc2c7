/* GPU kernel of the FFT primitive (contract in primitives/fft.h) through
 * cuFFT (cufft.c), in the CPU kernel's order (backend/cpu/fft.c): one axis
 * at a time, the first reading the input and writing the output, later
 * axes in place on the output; c2r works on a complex copy of the input
 * (cuFFT's c2r overwrites its input): the other axes inverse c2c, then the
 * imaginary parts NumPy ignores (zero and Nyquist frequencies) cleared,
 * then the real axis into the output. The scale is applied once at the
 * end (kernels/fft.cu).
 *
 * An axis with one element per line (inner == 1) is one batched plan over
 * every line; otherwise a plan strided by `inner` over the inner lines,
 * executed once per outer index (a real transform whose executions would
 * start an odd number of floats in, which cuFFT rejects, moves the axis
 * last through copies instead). Any length (cuFFT's Bluestein path takes
 * large primes); length 1 is a copy. Plans are cached per (device, type,
 * length, strides, distances, batch) in a bounded cache (PLANS entries;
 * the least recently used idle one is destroyed, after the device
 * synchronises, when it is full); the work area comes from cmx's device
 * allocator per transform. Every cuFFT call goes through the encoder as a
 * CALL command.
 */
#include "primitives/fft.h"

#include <stdio.h>
#include <string.h>

#include "backend/cuda/kernels_linalg.h"
#include "backend/cuda/solver.h"

static const char* const k_kernels[] = {"cmx_fft_scale", "cmx_fft_herm",
                                        "cmx_fft_one", NULL};
enum { K_SCALE, K_HERM, K_ONE };

static bool fft_variant(int v, cmx__gpu_variant* out) {
  (void)v;
  snprintf(out->name, sizeof out->name, "fft");
  out->prelude[0] = 0;
  out->flags = 0;
  return true;
}

const cmx__gpu_family cmx__gpu_family_fft = {
    .name = "fft",
    .file = "fft",
    .kernels = k_kernels,
    .flags = CMX__GPU_GRID_WAITS,
    .nvariants = 1,
    .variant = fft_variant,
    .shape = {CMX__GPU_GRID_STRIDE, 256, 8}};

/* ---------------- plans ---------------- */
typedef struct {
  int dev, type;
  long long n, istride, idist, ostride, odist, batch;
} plan_key;

#define PLANS 64
typedef struct {
  plan_key key;
  cufftHandle h;
  size_t ws;
  uint64_t last_use;
  int busy; /* transforms between plan_get and plan_put */
  bool used;
} plan;

static struct {
  pthread_mutex_t lock;
  plan slots[PLANS];
  uint64_t clock;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static cmx_status plan_make(const plan_key* k, const char* op, plan* p) {
  cufftResult r = cmx__ff.cufftCreate(&p->h);
  if (r) return cmx__cufft_fail(op, "cufftCreate", r);
  long long n = k->n;
  long long inl = k->type == CMX__CUFFT_C2R ? n / 2 + 1 : n;
  long long onl = k->type == CMX__CUFFT_R2C ? n / 2 + 1 : n;
  r = cmx__ff.cufftSetAutoAllocation(p->h, 0);
  if (!r)
    r = cmx__ff.cufftMakePlanMany64(p->h, 1, &n, &inl, k->istride, k->idist,
                                    &onl, k->ostride, k->odist, k->type,
                                    k->batch, &p->ws);
  if (r) {
    cmx__ff.cufftDestroy(p->h);
    return cmx__cufft_fail(op, "making a plan", r);
  }
  p->key = *k;
  return CMX_OK;
}

/* The cached plan of k (made if new), marked busy; *tmp set when the
 * cache was full of busy plans and p is a plan of its own (plan_put
 * destroys it). NULL with the error set. */
static plan* plan_get(const plan_key* k, const char* op, plan* tmp) {
  pthread_mutex_lock(&g.lock);
  plan* p = NULL;
  int free_i = -1, lru = -1;
  for (int i = 0; i < PLANS && !p; i++) {
    plan* s = &g.slots[i];
    if (s->used && !memcmp(&s->key, k, sizeof *k))
      p = s;
    else if (!s->used && free_i < 0)
      free_i = i;
    else if (s->used && !s->busy &&
             (lru < 0 || s->last_use < g.slots[lru].last_use))
      lru = i;
  }
  plan* victim = free_i >= 0 ? &g.slots[free_i]
                 : lru >= 0  ? &g.slots[lru]
                             : NULL;
  if (!p) {
    p = victim ? victim : tmp;
    if (p->used) { /* queued work may still use it */
      cmx__cu.cuCtxSynchronize();
      cmx__ff.cufftDestroy(p->h);
      p->used = false;
    }
    memset(p, 0, sizeof *p);
    if (plan_make(k, op, p) != CMX_OK)
      p = NULL;
    else
      p->used = true;
  }
  if (p) {
    p->busy++;
    p->last_use = ++g.clock;
  }
  pthread_mutex_unlock(&g.lock);
  return p;
}

static void plan_put(plan* p, plan* tmp) {
  pthread_mutex_lock(&g.lock);
  p->busy--;
  if (p == tmp) {
    cmx__cu.cuCtxSynchronize();
    cmx__ff.cufftDestroy(p->h);
  }
  pthread_mutex_unlock(&g.lock);
}

/* ---------------- transforms ---------------- */
typedef struct {
  plan* p;
  CUdeviceptr src, dst, ws;
  int64_t outer, sstep, dstep; /* executions, bytes between them */
  int dir;
  const char* op;
} exec_ctx;

static cmx_status exec_run(void* ctx, CUstream s) {
  exec_ctx* c = ctx;
  pthread_mutex_lock(&g.lock); /* the plan binds one stream at a time */
  cufftResult r = cmx__ff.cufftSetStream(c->p->h, s);
  if (!r && c->ws) r = cmx__ff.cufftSetWorkArea(c->p->h, (void*)c->ws);
  for (int64_t o = 0; !r && o < c->outer; o++) {
    void* in = (void*)(uintptr_t)(c->src + (CUdeviceptr)(o * c->sstep));
    void* out = (void*)(uintptr_t)(c->dst + (CUdeviceptr)(o * c->dstep));
    switch (c->p->key.type) {
      case CMX__CUFFT_R2C:
        r = cmx__ff.cufftExecR2C(c->p->h, in, out);
        break;
      case CMX__CUFFT_C2R:
        r = cmx__ff.cufftExecC2R(c->p->h, in, out);
        break;
      default:
        r = cmx__ff.cufftExecC2C(c->p->h, in, out, c->dir);
    }
  }
  pthread_mutex_unlock(&g.lock);
  return r ? cmx__cufft_fail(c->op, "executing a transform", r) : CMX_OK;
}

static cmx_status launch(int dev, int kernel, const cmx__gpu_args* args,
                         int64_t work) {
  const cmx__gpu_kernel* k =
      cmx__gpu_kernel_get(dev, &cmx__gpu_family_fft, 0, kernel);
  if (!k) return cmx_last_status();
  cmx__gpu_cfg cfg = cmx__gpu_cfg_for(k, work);
  return cmx__gpu_launch("fft", k, &cfg, args);
}

static cmx_status run_axis(int dev, int type, int dir, CUdeviceptr src,
                           const int64_t* sd, CUdeviceptr dst,
                           const int64_t* dd, int ndim, int ax, int64_t n);

/* The lines of a middle axis (outer and inner both > 1) of a real
 * transform whose per-outer executions would start at addresses cuFFT
 * rejects (an odd number of floats in): src moved so the axis is last
 * (outer, inner, slen), transformed as one batch, moved back. */
static cmx_status run_moved(int dev, int type, int dir, CUdeviceptr src,
                            int64_t slen, CUdeviceptr dst, int64_t dlen,
                            int64_t outer, int64_t inner, int64_t n) {
  size_t si = type == CMX__CUFFT_R2C ? 4 : 8,
         di = type == CMX__CUFFT_C2R ? 4 : 8;
  cmx__buffer* t1 =
      cmx__device_hooks->alloc_device((size_t)(outer * inner * slen) * si, dev);
  cmx__buffer* t2 = t1 ? cmx__device_hooks->alloc_device(
                             (size_t)(outer * inner * dlen) * di, dev)
                       : NULL;
  cmx_status st = t2 ? CMX_OK : cmx_last_status();
  const int64_t sshape[3] = {outer, slen, inner},
                dshape[3] = {outer, dlen, inner};
  const int64_t srm[3] = {slen * inner, inner, 1},
                smv[3] = {inner * slen, 1, slen};
  const int64_t drm[3] = {dlen * inner, inner, 1},
                dmv[3] = {inner * dlen, 1, dlen};
  const int64_t sd2[2] = {outer * inner, slen}, dd2[2] = {outer * inner, dlen};
  if (st == CMX_OK)
    st = cmx__gpu_copy_strided("fft", dev, t1->dev, smv, src, srm, sshape, 3,
                               si);
  if (st == CMX_OK)
    st = run_axis(dev, type, dir, t1->dev, sd2, t2->dev, dd2, 2, 1, n);
  if (st == CMX_OK)
    st = cmx__gpu_copy_strided("fft", dev, dst, drm, t2->dev, dmv, dshape, 3,
                               di);
  if (t1) cmx__buffer_release(t1);
  if (t2) cmx__buffer_release(t2);
  return st;
}

/* Transforms every line along axis ax of src (dims sd) into dst (dims dd;
 * they differ at ax only): type is a cuFFT type, n the length. */
static cmx_status run_axis(int dev, int type, int dir, CUdeviceptr src,
                           const int64_t* sd, CUdeviceptr dst,
                           const int64_t* dd, int ndim, int ax, int64_t n) {
  int sw = type == CMX__CUFFT_R2C ? 1 : 2, dw = type == CMX__CUFFT_C2R ? 1 : 2;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < ax; d++) outer *= dd[d];
  for (int d = ax + 1; d < ndim; d++) inner *= dd[d];
  if (outer * inner == 0) return CMX_OK;
  if (n == 1) {
    cmx__gpu_args a;
    cmx__gpu_args_init(&a);
    long long count = outer * inner;
    CMX__GPU_ARG(&a, src);
    CMX__GPU_ARG(&a, sw);
    CMX__GPU_ARG(&a, dst);
    CMX__GPU_ARG(&a, dw);
    CMX__GPU_ARG(&a, count);
    return launch(dev, K_ONE, &a, count);
  }
  plan_key k;
  memset(&k, 0, sizeof k);
  k.dev = dev;
  k.type = type;
  k.n = n;
  exec_ctx c = {.src = src, .dst = dst, .dir = dir, .op = "fft", .outer = 1};
  if (inner == 1) {
    k.istride = k.ostride = 1;
    k.idist = sd[ax];
    k.odist = dd[ax];
    k.batch = outer;
  } else {
    k.istride = k.ostride = inner;
    k.idist = k.odist = 1;
    k.batch = inner;
    c.outer = outer;
    c.sstep = sd[ax] * inner * sw * 4;
    c.dstep = dd[ax] * inner * dw * 4;
    if (outer > 1 && (c.sstep % 8 || c.dstep % 8))
      return run_moved(dev, type, dir, src, sd[ax], dst, dd[ax], outer, inner,
                       n);
  }
  plan tmp;
  c.p = plan_get(&k, "fft", &tmp);
  if (!c.p) return cmx_last_status();
  cmx__buffer* ws = NULL;
  cmx_status st = CMX_OK;
  if (c.p->ws) {
    ws = cmx__device_hooks->alloc_device(c.p->ws, dev);
    if (!ws)
      st = cmx_last_status();
    else
      c.ws = ws->dev;
  }
  if (st == CMX_OK) st = cmx__gpu_call("fft", exec_run, &c);
  if (ws) cmx__buffer_release(ws); /* stream-ordered */
  plan_put(c.p, &tmp);
  return st;
}

static cmx_status fft_run(int dev, const cmx__fft_params* q, cmx_array a,
                          cmx_array o, CUdeviceptr src, CUdeviceptr dst) {
  int nd = o->ndim, last = q->axes[q->naxes - 1];
  cmx_status st = CMX_OK;
  if (!q->real) {
    for (int i = 0; st == CMX_OK && i < q->naxes; i++) {
      int ax = q->axes[i];
      st = run_axis(dev, CMX__CUFFT_C2C,
                    q->inverse ? CMX__CUFFT_INVERSE : CMX__CUFFT_FORWARD,
                    i ? dst : src, o->dims, dst, o->dims, nd, ax, o->dims[ax]);
    }
    return st;
  }
  if (!q->inverse) {
    st = run_axis(dev, CMX__CUFFT_R2C, 0, src, a->dims, dst, o->dims, nd, last,
                  a->dims[last]);
    for (int i = 0; st == CMX_OK && i + 1 < q->naxes; i++)
      st = run_axis(dev, CMX__CUFFT_C2C, CMX__CUFFT_FORWARD, dst, o->dims, dst,
                    o->dims, nd, q->axes[i], o->dims[q->axes[i]]);
    return st;
  }
  /* c2r: on a complex copy of the input */
  size_t bytes = (size_t)a->size * 8;
  cmx__buffer* tmp = cmx__device_hooks->alloc_device(bytes, dev);
  if (!tmp) return cmx_last_status();
  st = cmx__gpu_copy_d2d("fft", tmp->dev, src, bytes);
  for (int i = 0; st == CMX_OK && i + 1 < q->naxes; i++)
    st = run_axis(dev, CMX__CUFFT_C2C, CMX__CUFFT_INVERSE, tmp->dev, a->dims,
                  tmp->dev, a->dims, nd, q->axes[i], a->dims[q->axes[i]]);
  if (st == CMX_OK) {
    long long len = a->dims[last], inner = 1, lines = a->size / (len ? len : 1);
    for (int d = last + 1; d < nd; d++) inner *= a->dims[d];
    int even = q->real_n % 2 == 0;
    cmx__gpu_args g_args;
    cmx__gpu_args_init(&g_args);
    CUdeviceptr t = tmp->dev;
    CMX__GPU_ARG(&g_args, t);
    CMX__GPU_ARG(&g_args, lines);
    CMX__GPU_ARG(&g_args, len);
    CMX__GPU_ARG(&g_args, inner);
    CMX__GPU_ARG(&g_args, even);
    st = launch(dev, K_HERM, &g_args, lines);
  }
  if (st == CMX_OK)
    st = run_axis(dev, CMX__CUFFT_C2R, 0, tmp->dev, a->dims, dst, o->dims, nd,
                  last, o->dims[last]);
  cmx__buffer_release(tmp);
  return st;
}

cmx_status cmx__gpu_fft(const cmx_primitive* p, const cmx_array* in, int nin,
                        const cmx_array* out, int nout) {
  (void)nin, (void)nout;
  const cmx__fft_params* q = cmx_primitive_params(p);
  cmx_array a = in[0], o = out[0];
  int dev = cmx_primitive_stream(p).device.index;
  if (!cmx_kernel_is_contiguous(a))
    return cmx_kernel_error(CMX_ERR_VALUE, "[fft] expects a contiguous input.");
  cmx_status st = cmx_kernel_alloc(o);
  if (st != CMX_OK || o->size == 0) return st;
  if ((st = cmx__cufft_load("fft")) != CMX_OK) return st;
  CUdeviceptr src, dst;
  if ((st = cmx__gpu_ptr(a, dev, &src)) != CMX_OK ||
      (st = cmx__gpu_ptr(o, dev, &dst)) != CMX_OK)
    return st;
  st = fft_run(dev, q, a, o, src, dst);
  if (st == CMX_OK && q->scale != 1.0) {
    cmx__gpu_args args;
    cmx__gpu_args_init(&args);
    long long n = o->size * (q->real && q->inverse ? 1 : 2);
    float s = (float)q->scale;
    CMX__GPU_ARG(&args, dst);
    CMX__GPU_ARG(&args, n);
    CMX__GPU_ARG(&args, s);
    st = launch(dev, K_SCALE, &args, n);
  }
  if (st == CMX_OK) cmx_kernel_mark_device_written(o);
  return st;
}
