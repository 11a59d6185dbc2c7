/* cuFFT, loaded at run time (solver.h): libcufft.so is opened with dlopen
 * when a transform first runs on the GPU (cmx__toolkit_dlopen: the
 * loader's path, then the toolkit's library folders) and every entry point
 * cmx uses is resolved. Without it, FFT on the GPU fails with "[fft] needs
 * cuFFT, which could not be loaded: <why>"; nothing else needs it. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/solver.h"

cmx__cufft_api cmx__ff;

static struct {
  pthread_once_t once;
  bool ok;
  char why[768];
} g = {.once = PTHREAD_ONCE_INIT};

static void fft_load(void) {
  static const char* const names[] = {"libcufft.so.12", "libcufft.so.11",
                                      "libcufft.so"};
  static const struct {
    size_t offset;
    const char* name;
  } table[] = {
#define E(f) {offsetof(cmx__cufft_api, f), #f}
      E(cufftGetVersion),        E(cufftCreate),
      E(cufftDestroy),           E(cufftSetStream),
      E(cufftSetAutoAllocation), E(cufftSetWorkArea),
      E(cufftMakePlanMany64),    E(cufftExecC2C),
      E(cufftExecR2C),           E(cufftExecC2R),
#undef E
  };
  char err[512];
  void* lib = cmx__toolkit_dlopen(names, 3, err, sizeof err);
  if (!lib) {
    snprintf(g.why, sizeof g.why,
             "libcufft.so.12/.11 was not found on the loader path, in "
             "$CUDA_HOME or in /usr/local/cuda (%s)",
             err[0] ? err : "not found");
    return;
  }
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    void* p = dlsym(lib, table[i].name);
    if (!p) {
      snprintf(g.why, sizeof g.why, "libcufft lacks %s", table[i].name);
      memset(&cmx__ff, 0, sizeof cmx__ff);
      dlclose(lib);
      return;
    }
    memcpy((char*)&cmx__ff + table[i].offset, &p, sizeof p);
  }
  g.ok = true;
}

cmx_status cmx__cufft_load(const char* op) {
  pthread_once(&g.once, fft_load);
  if (g.ok) return CMX_OK;
  return cmx__error(CMX_ERR_RUNTIME,
                    "[%s] needs cuFFT, which could not be loaded: %s", op,
                    g.why);
}

cmx_status cmx__cufft_fail(const char* op, const char* what, cufftResult r) {
  return cmx__error(r == 2 ? CMX_ERR_MEMORY : CMX_ERR_RUNTIME,
                    "[%s] cuFFT %s failed: cufftResult %d", op, what, (int)r);
}
