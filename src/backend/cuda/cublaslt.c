/* cuBLASLt, loaded at run time beside the driver and NVRTC.
 *
 * libcublasLt.so is opened with dlopen when a matrix product first wants
 * it (cmx__toolkit_dlopen: the loader's path, then the toolkit's library
 * folders), every entry point cmx uses is resolved, and each device gets
 * one handle, created on first use with that device's context current and
 * kept for the life of the process (cuBLASLt handles are thread-safe and
 * not tied to a stream). Without the library, products on the GPU fail
 * with "cuBLASLt not available: <why>"; nothing else needs it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

cmx__cublaslt_api cmx__lt;

static const char* const k_names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                      "libcublasLt.so.11", "libcublasLt.so"};

/* Resolves every entry point of lib into api; returns the first missing
 * name, or NULL. */
static const char* resolve_all(void* lib, cmx__cublaslt_api* api) {
  static const struct {
    size_t offset;
    const char* name;
  } table[] = {
#define E(f) {offsetof(cmx__cublaslt_api, f), #f}
      E(cublasLtCreate),
      E(cublasLtDestroy),
      E(cublasLtGetVersion),
      E(cublasLtGetStatusName),
      E(cublasLtGetStatusString),
      E(cublasLtMatmulDescCreate),
      E(cublasLtMatmulDescDestroy),
      E(cublasLtMatmulDescSetAttribute),
      E(cublasLtMatrixLayoutCreate),
      E(cublasLtMatrixLayoutDestroy),
      E(cublasLtMatrixLayoutSetAttribute),
      E(cublasLtMatmulPreferenceCreate),
      E(cublasLtMatmulPreferenceDestroy),
      E(cublasLtMatmulPreferenceSetAttribute),
      E(cublasLtMatmulAlgoGetHeuristic),
      E(cublasLtMatmul),
#undef E
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    void* p = dlsym(lib, table[i].name);
    if (!p) return table[i].name;
    memcpy((char*)api + table[i].offset, &p, sizeof p);
  }
  return NULL;
}

/* Loads from lib (already opened; closed on failure) into api. */
static bool load_from(void* lib, const char* what, cmx__cublaslt_api* api,
                      char* why, size_t why_size) {
  const char* missing = resolve_all(lib, api);
  if (missing) {
    snprintf(why, why_size, "%s lacks %s (cuBLASLt older than 11?)", what,
             missing);
    memset(api, 0, sizeof *api);
    dlclose(lib);
    return false;
  }
  return true;
}

static struct {
  pthread_once_t once;
  bool ok;
  char why[768];
  pthread_mutex_t lock; /* creating handles */
  cublasLtHandle_t* handles;
  int nhandles;
} g = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void lt_load(void) {
  char err[512];
  void* lib = cmx__toolkit_dlopen(k_names, 4, err, sizeof err);
  if (!lib) {
    snprintf(g.why, sizeof g.why,
             "libcublasLt.so.13/.12/.11 was not found on the loader path, "
             "in $CUDA_HOME or in /usr/local/cuda (%s)",
             err[0] ? err : "not found");
    return;
  }
  g.ok = load_from(lib, "libcublasLt", &cmx__lt, g.why, sizeof g.why);
}

bool cmx__cublaslt_available(const char** why) {
  pthread_once(&g.once, lt_load);
  if (why) *why = g.ok ? "" : g.why;
  return g.ok;
}

size_t cmx__cublaslt_version(void) {
  return cmx__cublaslt_available(NULL) ? cmx__lt.cublasLtGetVersion() : 0;
}

bool cmx__cublaslt_probe(const char* path, char* why, size_t why_size) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    snprintf(why, why_size, "%s could not be loaded: %s", path,
             e ? e : "unknown error");
    return false;
  }
  cmx__cublaslt_api api;
  if (!load_from(lib, path, &api, why, why_size)) return false;
  dlclose(lib);
  why[0] = 0;
  return true;
}

cmx_status cmx__cublaslt_handle(int dev, const char* op,
                                cublasLtHandle_t* out) {
  *out = NULL;
  const char* why;
  if (!cmx__cublaslt_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[%s] cuBLASLt not available: %s", op,
                      why);
  if (!cmx__gpu_device_get(dev)) return cmx_last_status();
  pthread_mutex_lock(&g.lock);
  cmx_status st = CMX_OK;
  if (!g.handles) {
    int n = cmx__gpu_count();
    g.handles = calloc((size_t)(n > 0 ? n : 1), sizeof *g.handles);
    g.nhandles = g.handles ? n : 0;
  }
  if (dev >= g.nhandles) {
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  } else if (!g.handles[dev]) {
    st = cmx__gpu_ctx_enter(dev);
    cublasStatus_t r = CUBLAS_STATUS_SUCCESS;
    if (st == CMX_OK) r = cmx__lt.cublasLtCreate(&g.handles[dev]);
    if (st == CMX_OK && r != CUBLAS_STATUS_SUCCESS) {
      g.handles[dev] = NULL;
      st = cmx__error(CMX_ERR_RUNTIME,
                      "[%s] cuBLASLt not available: cublasLtCreate failed on "
                      "gpu:%d: %s (%s)",
                      op, dev, cmx__lt.cublasLtGetStatusName(r),
                      cmx__lt.cublasLtGetStatusString(r));
    }
  }
  if (st == CMX_OK) *out = g.handles[dev];
  pthread_mutex_unlock(&g.lock);
  return st;
}
