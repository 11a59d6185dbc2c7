/* Loaded kernels: the in-memory module cache.
 *
 * Each (device, family, variant, kernel) is its own module, built at first
 * use from the family's source with that variant's prelude and only that
 * kernel in it (CMX_ONLY_<kernel>: a first use compiles one function, not
 * the file's all), through the disk cache (nvrtc.c), and loaded with
 * cuModuleLoadData. Lookups, once a kernel is loaded, take no lock: entries
 * are only ever added (published with a release store) until
 * cmx__gpu_module_cache_clear, which tests call with no GPU work running.
 * Building happens outside the lock, so threads compiling different
 * kernels do not wait for each other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

typedef struct entry {
  cmx__gpu_kernel k; /* first: lookups hand out &e->k */
  struct entry* _Atomic next;
  CUmodule mod;
} entry;

#define NBUCKETS 1024
static struct {
  pthread_mutex_t lock; /* insertions and clearing */
  entry* _Atomic buckets[NBUCKETS];
} g_mods = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned bucket_of(int dev, const cmx__gpu_family* f, int v, int k) {
  uint64_t h = (uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15ull;
  h ^= ((uint64_t)(unsigned)v * 0xff51afd7ed558ccdull) + (uint64_t)k * 131 +
       (uint64_t)dev * 7919;
  h ^= h >> 29;
  return (unsigned)(h % NBUCKETS);
}

static entry* find(unsigned b, int dev, const cmx__gpu_family* f, int v,
                   int k) {
  entry* e = atomic_load_explicit(&g_mods.buckets[b], memory_order_acquire);
  for (; e; e = atomic_load_explicit(&e->next, memory_order_acquire))
    if (e->k.family == f && e->k.variant == v && e->k.index == k &&
        e->k.dev == dev)
      return e;
  return NULL;
}

/* Builds and loads the module of kernel k of variant v for dev. The name
 * of its disk-cache entry is the variant's, for people browsing the
 * cache. */
static cmx_status load_module(int dev, const cmx__gpu_family* f, int v, int k,
                              CUmodule* mod) {
  cmx__gpu_device* d = cmx__gpu_device_get(dev);
  if (!d) return cmx_last_status();
  int arch = d->cc_major * 10 + d->cc_minor;
  cmx__gpu_variant var;
  var.flags = 0;
  if (v < 0 || v >= f->nvariants || !f->variant(v, &var))
    return cmx__error(CMX_ERR_RUNTIME,
                      "[gpu] kernel family '%s' has no variant %d", f->name, v);
  const char* opts[8];
  char optbuf[4400];
  int nopts = cmx__gpu_family_options(f, &var, opts, 8, optbuf, sizeof optbuf);
  if (nopts < 0) return cmx_last_status();
  char* src = cmx__gpu_family_source(f, var.prelude, k);
  if (!src) return cmx_last_status();
  cmx__gpu_image img;
  int origin;
  cmx_status st =
      cmx__gpu_image_get(var.name, src, arch, opts, nopts, &img, &origin);
  if (st == CMX_OK) st = cmx__gpu_ctx_enter(dev);
  CUresult r = CUDA_SUCCESS;
  if (st == CMX_OK) {
    r = cmx__cu.cuModuleLoadData(mod, img.data);
    if (r != CUDA_SUCCESS && origin == CMX__IMAGE_DISK) {
      /* The driver refused a cached image: compile it afresh. */
      cmx__gpu_image_free(&img);
      cmx__gpu_image_forget(var.name, src, arch, opts, nopts);
      st = cmx__gpu_image_get(var.name, src, arch, opts, nopts, &img, &origin);
      if (st == CMX_OK) r = cmx__cu.cuModuleLoadData(mod, img.data);
    }
    if (st == CMX_OK && r != CUDA_SUCCESS) {
      char what[192];
      snprintf(what, sizeof what, "loading kernel module '%s' (%s, sm_%d)",
               var.name, img.ptx ? "PTX" : "CUBIN", arch);
      st = cmx__cu_error(r, "gpu", what);
    }
  }
  cmx__gpu_image_free(&img);
  free(src);
  return st;
}

/* Finds kernel k in mod and reads its launch limits into e. */
static cmx_status describe(entry* e, CUmodule mod) {
  CUresult r = cmx__cu.cuModuleGetFunction(&e->k.fn, mod, e->k.name);
  if (r != CUDA_SUCCESS) {
    char what[192];
    snprintf(what, sizeof what, "finding kernel '%s' of family '%s'", e->k.name,
             e->k.family->name);
    return cmx__cu_error(r, "gpu", what);
  }
  int v = 0;
  e->k.max_threads =
      cmx__cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                 e->k.fn) == CUDA_SUCCESS
          ? v
          : 1024;
  e->k.static_shared =
      cmx__cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                 e->k.fn) == CUDA_SUCCESS
          ? v
          : 0;
  e->k.regs = cmx__cu.cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                         e->k.fn) == CUDA_SUCCESS &&
                      v > 0 && v <= 255
                  ? v
                  : 0;
  if (cmx__cu.cuFuncGetAttribute(
          &v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, e->k.fn) !=
      CUDA_SUCCESS)
    v = (48 << 10) - e->k.static_shared;
  atomic_init(&e->k.dynamic_shared, v);
  return CMX_OK;
}

int cmx__gpu_occupancy(const cmx__gpu_device* d, int regs, int threads,
                       size_t shared) {
  if (!d || regs <= 0 || regs > 255 || threads <= 0 ||
      threads > d->sm_threads || d->sm_regs <= 0)
    return 0;
  /* registers: a warp's in steps of 256, a multiprocessor's in 4
   * partitions that each hold whole warps */
  int per_warp = (regs * 32 + 255) / 256 * 256;
  int warps = 4 * (d->sm_regs / 4 / per_warp);
  int n = warps / ((threads + 31) / 32);
  if (d->sm_threads / threads < n) n = d->sm_threads / threads;
  if (d->sm_blocks > 0 && d->sm_blocks < n) n = d->sm_blocks;
  /* shared memory: the block's, plus the 1 KB the driver reserves for
   * each block (compute capability 8.0 and later) */
  if (d->sm_shared > 0 && shared > 0) {
    size_t per = shared + (d->cc_major >= 8 ? 1024 : 0);
    if ((size_t)d->sm_shared / per < (size_t)n)
      n = (int)((size_t)d->sm_shared / per);
  }
  return n > 0 ? n : 0;
}

int cmx__gpu_blocks_per_sm(const cmx__gpu_kernel* k, int threads,
                           size_t dyn_shared) {
  const cmx__gpu_device* d = k ? cmx__gpu_device_get(k->dev) : NULL;
  return d ? cmx__gpu_occupancy(d, k->regs, threads,
                                (size_t)k->static_shared + dyn_shared)
           : 0;
}

/* Makes the entry of kernel k of variant v of f from the loaded module
 * mod and publishes it (or, when another thread published it meanwhile,
 * drops mod and returns that one). NULL with the error set. */
static const cmx__gpu_kernel* publish(unsigned b, int dev,
                                      const cmx__gpu_family* f, int v, int k,
                                      CUmodule mod) {
  entry* e = calloc(1, sizeof *e);
  if (!e) {
    cmx__cu.cuModuleUnload(mod);
    return CMX__FAIL(CMX_ERR_MEMORY, "[gpu] out of host memory");
  }
  e->k.family = f;
  e->k.variant = v;
  e->k.index = k;
  e->k.dev = dev;
  e->k.name = f->kernels[k];
  e->mod = mod;
  if (describe(e, mod) != CMX_OK) {
    cmx__cu.cuModuleUnload(mod);
    free(e);
    return NULL;
  }
  pthread_mutex_lock(&g_mods.lock);
  entry* other = find(b, dev, f, v, k); /* built meanwhile by another thread */
  if (!other) {
    atomic_store_explicit(
        &e->next,
        atomic_load_explicit(&g_mods.buckets[b], memory_order_relaxed),
        memory_order_relaxed);
    atomic_store_explicit(&g_mods.buckets[b], e, memory_order_release);
  }
  pthread_mutex_unlock(&g_mods.lock);
  if (other) {
    cmx__cu.cuModuleUnload(mod);
    free(e);
    return &other->k;
  }
  return &e->k;
}

const cmx__gpu_kernel* cmx__gpu_kernel_get(int dev, const cmx__gpu_family* f,
                                           int v, int k) {
  unsigned b = bucket_of(dev, f, v, k);
  entry* e = find(b, dev, f, v, k);
  if (e) {
    cmx__gpu_cache_count_mem_hit();
    return &e->k;
  }
  if (k < 0 || k >= cmx__gpu_family_nkernels(f))
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[gpu] kernel family '%s' has no kernel %d", f->name, k);
  CUmodule mod;
  if (load_module(dev, f, v, k, &mod) != CMX_OK) return NULL;
  return publish(b, dev, f, v, k, mod);
}

const cmx__gpu_kernel* cmx__gpu_kernel_get_image(int dev,
                                                 const cmx__gpu_family* f,
                                                 const void* image) {
  unsigned b = bucket_of(dev, f, 0, 0);
  entry* e = find(b, dev, f, 0, 0);
  if (e) return &e->k;
  if (cmx__gpu_ctx_enter(dev) != CMX_OK) return NULL;
  CUmodule mod;
  CUresult r = cmx__cu.cuModuleLoadData(&mod, image);
  if (r != CUDA_SUCCESS) {
    char what[192];
    snprintf(what, sizeof what,
             "loading the precompiled module '%s' (PTX or CUBIN)", f->name);
    cmx__cu_error(r, f->name, what);
    return NULL;
  }
  return publish(b, dev, f, 0, 0, mod);
}

void cmx__gpu_module_cache_clear(void) {
  cmx__gpu_graphs_forget_all(); /* graphs hold the kernels unloaded here */
  pthread_mutex_lock(&g_mods.lock);
  for (int b = 0; b < NBUCKETS; b++) {
    entry* e = atomic_exchange(&g_mods.buckets[b], NULL);
    while (e) {
      entry* next = atomic_load(&e->next);
      /* Unloading needs the module's work finished. */
      if (cmx__gpu_ctx_enter(e->k.dev) == CMX_OK) {
        cmx__cu.cuCtxSynchronize();
        cmx__cu.cuModuleUnload(e->mod);
      }
      free(e);
      e = next;
    }
  }
  pthread_mutex_unlock(&g_mods.lock);
}
