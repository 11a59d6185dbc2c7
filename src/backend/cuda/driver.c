/* The CUDA driver, loaded at run time.
 *
 * libcuda.so.1 is opened with dlopen on first use (the first device query),
 * so one build runs everywhere: with no driver, a failing cuInit (a stub
 * library, no kernel module) or no device, the GPU is simply unavailable and
 * the reason is kept for error messages. Devices are only described at
 * load; a device's primary context and helper streams are set up when it is
 * first used, so a process that never touches the GPU pays nothing for it.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

cmx__cuda_api cmx__cu;

static struct {
  pthread_once_t once;
  pthread_mutex_t lock; /* readying devices */
  bool available;
  char reason[512];
  int count;
  int driver_version;
  cmx__gpu_device* devs;
  _Atomic bool* ready;
} g = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void set_reason(const char* fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void set_reason(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g.reason, sizeof g.reason, fmt, ap);
  va_end(ap);
}

/* Stores dlsym(lib, name) into a function-pointer slot (POSIX guarantees
 * that object and function pointers share a representation). */
static bool resolve(void* lib, void* slot, const char* name) {
  void* p = dlsym(lib, name);
  memcpy(slot, &p, sizeof p);
  return p != NULL;
}

/* The error's name, or its number when the driver cannot name it (a stub
 * library, say). */
static const char* result_name(CUresult r) {
  static _Thread_local char buf[32];
  const char* s = NULL;
  if (cmx__cu.cuGetErrorName && cmx__cu.cuGetErrorName(r, &s) == CUDA_SUCCESS &&
      s)
    return s;
  snprintf(buf, sizeof buf, "CUDA error %d", (int)r);
  return buf;
}

static const char* result_text(CUresult r) {
  const char* s = NULL;
  if (cmx__cu.cuGetErrorString &&
      cmx__cu.cuGetErrorString(r, &s) == CUDA_SUCCESS && s)
    return s;
  return "unknown error";
}

cmx_status cmx__cu_error(CUresult r, const char* op, const char* what) {
  return cmx__error(
      r == CUDA_ERROR_OUT_OF_MEMORY ? CMX_ERR_MEMORY : CMX_ERR_RUNTIME,
      "[%s] %s failed: %s (%s)", op, what, result_name(r), result_text(r));
}

/* Resolves every entry point; returns the first missing required name. */
static const char* resolve_all(void* lib) {
  static const struct {
    size_t offset;
    const char* name;
    bool optional;
  } table[] = {
#define REQ(f, n) {offsetof(cmx__cuda_api, f), n, false}
#define OPT(f, n) \
  { offsetof(cmx__cuda_api, f), n, true }
      REQ(cuInit, "cuInit"),
      REQ(cuDriverGetVersion, "cuDriverGetVersion"),
      REQ(cuGetErrorName, "cuGetErrorName"),
      REQ(cuGetErrorString, "cuGetErrorString"),
      REQ(cuDeviceGet, "cuDeviceGet"),
      REQ(cuDeviceGetCount, "cuDeviceGetCount"),
      REQ(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
      REQ(cuDeviceGetName, "cuDeviceGetName"),
      REQ(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
      REQ(cuCtxSetCurrent, "cuCtxSetCurrent"),
      REQ(cuCtxGetCurrent, "cuCtxGetCurrent"),
      REQ(cuCtxSynchronize, "cuCtxSynchronize"),
      REQ(cuStreamCreate, "cuStreamCreate"),
      REQ(cuStreamDestroy, "cuStreamDestroy_v2"),
      REQ(cuStreamSynchronize, "cuStreamSynchronize"),
      REQ(cuStreamWaitEvent, "cuStreamWaitEvent"),
      REQ(cuEventCreate, "cuEventCreate"),
      REQ(cuEventRecord, "cuEventRecord"),
      REQ(cuEventSynchronize, "cuEventSynchronize"),
      REQ(cuEventQuery, "cuEventQuery"),
      REQ(cuEventDestroy, "cuEventDestroy_v2"),
      REQ(cuMemAlloc, "cuMemAlloc_v2"),
      REQ(cuMemFree, "cuMemFree_v2"),
      REQ(cuMemGetInfo, "cuMemGetInfo_v2"),
      REQ(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
      REQ(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
      REQ(cuModuleLoadData, "cuModuleLoadData"),
      REQ(cuModuleUnload, "cuModuleUnload"),
      REQ(cuModuleGetFunction, "cuModuleGetFunction"),
      REQ(cuLaunchKernel, "cuLaunchKernel"),
      REQ(cuFuncGetAttribute, "cuFuncGetAttribute"),
      REQ(cuFuncSetAttribute, "cuFuncSetAttribute"),
      REQ(cuMemsetD8Async, "cuMemsetD8Async"),
      REQ(cuMemsetD16Async, "cuMemsetD16Async"),
      REQ(cuMemsetD32Async, "cuMemsetD32Async"),
      REQ(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
      OPT(cuMemAllocAsync, "cuMemAllocAsync"),
      OPT(cuMemFreeAsync, "cuMemFreeAsync"),
      OPT(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool"),
      OPT(cuMemPoolSetAttribute, "cuMemPoolSetAttribute"),
      OPT(cuMemPoolTrimTo, "cuMemPoolTrimTo"),
      OPT(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
      OPT(cuMemHostAlloc, "cuMemHostAlloc"),
      OPT(cuMemFreeHost, "cuMemFreeHost"),
      OPT(cuMemHostRegister, "cuMemHostRegister_v2"),
      OPT(cuMemHostUnregister, "cuMemHostUnregister"),
      OPT(cuOccupancyMaxActiveBlocksPerMultiprocessor,
          "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
      OPT(cuGraphCreate, "cuGraphCreate"),
      OPT(cuGraphDestroy, "cuGraphDestroy"),
      OPT(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2"),
      OPT(cuGraphAddChildGraphNode, "cuGraphAddChildGraphNode"),
      OPT(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
      OPT(cuGraphLaunch, "cuGraphLaunch"),
      OPT(cuGraphExecDestroy, "cuGraphExecDestroy"),
      OPT(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2"),
      OPT(cuGraphExecChildGraphNodeSetParams,
          "cuGraphExecChildGraphNodeSetParams"),
      OPT(cuGraphAddDependencies, "cuGraphAddDependencies_v2"),
      OPT(cuStreamBeginCapture, "cuStreamBeginCapture_v2"),
      OPT(cuStreamEndCapture, "cuStreamEndCapture"),
#undef REQ
#undef OPT
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!resolve(lib, (char*)&cmx__cu + table[i].offset, table[i].name) &&
        !table[i].optional)
      return table[i].name;
  return NULL;
}

static bool describe_devices(void) {
  g.devs = calloc((size_t)g.count, sizeof *g.devs);
  g.ready = calloc((size_t)g.count, sizeof *g.ready);
  if (!g.devs || !g.ready) {
    set_reason("out of host memory");
    return false;
  }
  for (int i = 0; i < g.count; i++) {
    cmx__gpu_device* d = &g.devs[i];
    CUresult r = cmx__cu.cuDeviceGet(&d->dev, i);
    int pools = 0;
    if (r == CUDA_SUCCESS)
      r = cmx__cu.cuDeviceGetAttribute(
          &d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
    if (r == CUDA_SUCCESS)
      r = cmx__cu.cuDeviceGetAttribute(
          &d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
    if (r == CUDA_SUCCESS)
      r = cmx__cu.cuDeviceGetAttribute(
          &d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev);
    if (r != CUDA_SUCCESS) {
      set_reason("cannot query gpu:%d: %s", i, result_name(r));
      return false;
    }
    /* An old driver may not know attribute 115: no pools then. */
    if (cmx__cu.cuDeviceGetAttribute(&pools,
                                     CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                                     d->dev) != CUDA_SUCCESS)
      pools = 0;
    d->pools = pools && cmx__cu.cuMemAllocAsync && cmx__cu.cuMemFreeAsync;
    if (cmx__cu.cuDeviceGetName(d->name, (int)sizeof d->name, d->dev) !=
        CUDA_SUCCESS)
      snprintf(d->name, sizeof d->name, "gpu:%d", i);
    if (d->sm_count < 1) d->sm_count = 1;
    /* Launch limits; a driver that cannot say gets the values every
     * architecture since sm_30 has. */
    static const struct {
      int attr, dflt;
      size_t offset;
    } limits[] = {
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024,
         offsetof(cmx__gpu_device, max_threads)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 48 << 10,
         offsetof(cmx__gpu_device, shared_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 48 << 10,
         offsetof(cmx__gpu_device, shared_optin)},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 0, offsetof(cmx__gpu_device, l2)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048,
         offsetof(cmx__gpu_device, sm_threads)},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536,
         offsetof(cmx__gpu_device, sm_regs)},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 16,
         offsetof(cmx__gpu_device, sm_blocks)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0,
         offsetof(cmx__gpu_device, sm_shared)},
    };
    for (size_t k = 0; k < sizeof limits / sizeof limits[0]; k++) {
      int* v = (int*)((char*)d + limits[k].offset);
      if (cmx__cu.cuDeviceGetAttribute(v, limits[k].attr, d->dev) !=
              CUDA_SUCCESS ||
          *v <= 0)
        *v = limits[k].dflt;
    }
    if (d->shared_optin < d->shared_per_block)
      d->shared_optin = d->shared_per_block;
  }
  return true;
}

static void driver_load(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    set_reason("the CUDA driver libcuda.so.1 could not be loaded: %s",
               e ? e : "unknown error");
    return;
  }
  const char* missing = resolve_all(lib);
  if (missing) {
    set_reason("the CUDA driver lacks %s (driver too old?)", missing);
    goto fail;
  }
  CUresult r = cmx__cu.cuInit(0);
  if (r != CUDA_SUCCESS) {
    set_reason("cuInit failed: %s (%s)", result_name(r), result_text(r));
    goto fail;
  }
  if (cmx__cu.cuDriverGetVersion(&g.driver_version) != CUDA_SUCCESS)
    g.driver_version = 0;
  r = cmx__cu.cuDeviceGetCount(&g.count);
  if (r != CUDA_SUCCESS || g.count <= 0) {
    set_reason("no CUDA device was found%s%s", r ? ": " : "",
               r ? result_name(r) : "");
    g.count = 0;
    goto fail;
  }
  if (!describe_devices()) {
    g.count = 0;
    goto fail;
  }
  g.available = true;
  g.reason[0] = 0;
  cmx__device_hooks = &cmx__cuda_memory_hooks;
  return; /* the library stays loaded for the life of the process */
fail:
  free(g.devs);
  free((void*)g.ready);
  g.devs = NULL;
  g.ready = NULL;
  memset(&cmx__cu, 0, sizeof cmx__cu);
  dlclose(lib);
}

bool cmx__gpu_available(void) {
  pthread_once(&g.once, driver_load);
  return g.available;
}

int cmx__gpu_count(void) {
  return cmx__gpu_available() ? g.count : 0;
}

const char* cmx__gpu_unavailable_reason(void) {
  return cmx__gpu_available() ? "" : g.reason;
}

int cmx__gpu_driver_version(void) {
  return cmx__gpu_available() ? g.driver_version : 0;
}

/* Retains the primary context and makes the helper streams. The default
 * pool keeps its default release threshold (0): cmx caches freed buffers
 * itself (memory.c), and what it gives back returns to the card at the
 * next synchronisation, for other libraries in the process. */
static cmx_status ready_device(int index) {
  cmx__gpu_device* d = &g.devs[index];
  CUresult r = cmx__cu.cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
  if (r != CUDA_SUCCESS)
    return cmx__cu_error(r, "gpu", "retaining the primary context");
  r = cmx__cu.cuCtxSetCurrent(d->ctx);
  if (r == CUDA_SUCCESS)
    r = cmx__cu.cuStreamCreate(&d->copy_stream, CU_STREAM_NON_BLOCKING);
  if (r == CUDA_SUCCESS)
    r = cmx__cu.cuStreamCreate(&d->free_stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) return cmx__cu_error(r, "gpu", "creating a stream");
  if (d->pools && cmx__cu.cuDeviceGetDefaultMemPool &&
      cmx__cu.cuDeviceGetDefaultMemPool(&d->pool, d->dev) != CUDA_SUCCESS)
    d->pool = NULL;
  return CMX_OK;
}

cmx__gpu_device* cmx__gpu_device_get(int index) {
  if (!cmx__gpu_available())
    return CMX__FAIL(CMX_ERR_RUNTIME, "[gpu] no GPU is available (%s)",
                     g.reason);
  if (index < 0 || index >= g.count)
    return CMX__FAIL(CMX_ERR_VALUE, "[gpu] gpu:%d does not exist (%d GPU%s)",
                     index, g.count, g.count == 1 ? "" : "s");
  if (atomic_load_explicit(&g.ready[index], memory_order_acquire))
    return &g.devs[index];
  pthread_mutex_lock(&g.lock);
  cmx_status st = CMX_OK;
  if (!atomic_load_explicit(&g.ready[index], memory_order_relaxed)) {
    st = ready_device(index);
    if (st == CMX_OK)
      atomic_store_explicit(&g.ready[index], true, memory_order_release);
  }
  pthread_mutex_unlock(&g.lock);
  return st == CMX_OK ? &g.devs[index] : NULL;
}

cmx_status cmx__gpu_ctx_enter(int index) {
  cmx__gpu_device* d = cmx__gpu_device_get(index);
  if (!d) return cmx_last_status();
  CUcontext cur = NULL;
  if (cmx__cu.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == d->ctx)
    return CMX_OK;
  CUresult r = cmx__cu.cuCtxSetCurrent(d->ctx);
  return r == CUDA_SUCCESS ? CMX_OK
                           : cmx__cu_error(r, "gpu", "setting the context");
}

cmx_status cmx__gpu_device_info(int index, cmx_device_info* out) {
  cmx_status st = cmx__gpu_ctx_enter(index);
  if (st != CMX_OK) return st;
  const cmx__gpu_device* d = &g.devs[index];
  snprintf(out->name, sizeof out->name, "%s", d->name);
  snprintf(out->architecture, sizeof out->architecture, "sm_%d%d", d->cc_major,
           d->cc_minor);
  out->compute_major = d->cc_major;
  out->compute_minor = d->cc_minor;
  out->sm_count = d->sm_count;
  size_t free_b = 0, total = 0;
  if (cmx__cu.cuMemGetInfo(&free_b, &total) == CUDA_SUCCESS)
    out->free_memory = free_b;
  size_t dev_total = 0;
  if (cmx__cu.cuDeviceTotalMem &&
      cmx__cu.cuDeviceTotalMem(&dev_total, d->dev) == CUDA_SUCCESS)
    total = dev_total;
  out->memory_size = total;
  return CMX_OK;
}

size_t cmx__gpu_total_memory(int index) {
  if (index < 0 || index >= cmx__gpu_count()) return 0;
  size_t total = 0;
  if (cmx__cu.cuDeviceTotalMem &&
      cmx__cu.cuDeviceTotalMem(&total, g.devs[index].dev) == CUDA_SUCCESS)
    return total;
  size_t free_b = 0;
  if (cmx__gpu_ctx_enter(index) == CMX_OK &&
      cmx__cu.cuMemGetInfo(&free_b, &total) == CUDA_SUCCESS)
    return total;
  return 0;
}
