/* The CUDA toolkit's run-time pieces: its shared libraries (NVRTC,
 * cuBLASLt) and the CCCL headers (CUB, libcu++, Thrust) that kernels may
 * include. Nothing of the toolkit is needed to build cmx; these are looked
 * for when first wanted, as the environment (core/env.c: CUDA_HOME,
 * CUDA_PATH) and the loader say:
 *
 * - libraries: the loader's path first (ldconfig, LD_LIBRARY_PATH), then
 *   lib64, lib and targets/x86_64-linux/lib of each toolkit home;
 * - homes: $CUDA_HOME (else $CUDA_PATH), the toolkit holding the NVRTC
 *   that was loaded (its headers match that compiler), /usr/local/cuda.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cuda/gpu.h"

#define HOME_MAX 4096

/* out = a "/" b; false (out empty) when it does not fit. */
static bool join(char* out, size_t size, const char* a, const char* b) {
  size_t na = strlen(a), nb = strlen(b);
  out[0] = 0;
  if (na + nb + 2 > size) return false;
  memcpy(out, a, na);
  out[na] = '/';
  memcpy(out + na + 1, b, nb + 1);
  return true;
}

/* Appends path to homes unless it is empty, missing or already there (as
 * a real path). */
static int add_home(char (*homes)[HOME_MAX], int n, int cap, const char* path) {
  if (!path || !*path || n >= cap) return n;
  char real[PATH_MAX];
  if (!realpath(path, real)) return n;
  for (int i = 0; i < n; i++)
    if (strcmp(homes[i], real) == 0) return n;
  snprintf(homes[n], HOME_MAX, "%s", real);
  return n + 1;
}

int cmx__toolkit_homes(char (*homes)[HOME_MAX], int cap, bool with_nvrtc) {
  int n = add_home(homes, 0, cap, cmx__env_get()->cuda_home);
  if (with_nvrtc && cmx__nvrtc_available(NULL)) {
    /* <home>/lib64/libnvrtc.so.13, or <home>/targets/<arch>/lib/... */
    char lib[PATH_MAX];
    snprintf(lib, sizeof lib, "%s", cmx__nvrtc_library_path());
    char* slash = strrchr(lib, '/');
    if (slash) {
      *slash = 0;
      char up[PATH_MAX];
      if (join(up, sizeof up, lib,
               strstr(lib, "/targets/") ? "../../.." : ".."))
        n = add_home(homes, n, cap, up);
    }
  }
  return add_home(homes, n, cap, "/usr/local/cuda");
}

void* cmx__toolkit_dlopen(const char* const* names, int n, char* why,
                          size_t why_size) {
  if (why && why_size) why[0] = 0;
  for (int i = 0; i < n; i++) {
    void* lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) return lib;
    const char* e = dlerror();
    if (i == 0 && e && why) snprintf(why, why_size, "%s", e);
  }
  static const char* const subdirs[] = {"lib64", "lib",
                                        "targets/x86_64-linux/lib"};
  char homes[3][HOME_MAX];
  int nh = cmx__toolkit_homes(homes, 3, false);
  for (int h = 0; h < nh; h++)
    for (size_t d = 0; d < sizeof subdirs / sizeof subdirs[0]; d++)
      for (int i = 0; i < n; i++) {
        char dir[PATH_MAX], path[PATH_MAX];
        if (!join(dir, sizeof dir, homes[h], subdirs[d]) ||
            !join(path, sizeof path, dir, names[i]))
          continue;
        void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (lib) return lib;
      }
  return NULL;
}

/* ---------------- CCCL headers ---------------- */

static struct {
  pthread_mutex_t lock;
  bool searched, found;
  char dir[PATH_MAX];
  long version;
  char why[1024];
  bool overridden;
  char override[PATH_MAX];
} g_cccl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The number after "#define <macro>" in file, or 0. */
static long read_define(const char* file, const char* macro) {
  FILE* f = fopen(file, "r");
  if (!f) return 0;
  char line[512];
  long v = 0;
  size_t n = strlen(macro);
  while (!v && fgets(line, sizeof line, f)) {
    const char* p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "#define", 7) != 0) continue;
    p += 7;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, macro, n) == 0 && (p[n] == ' ' || p[n] == '\t'))
      v = strtol(p + n, NULL, 10);
  }
  fclose(f);
  return v;
}

/* True when dir holds the CCCL headers; *version gets theirs. */
static bool cccl_at(const char* dir, long* version) {
  char p[PATH_MAX];
  if (!join(p, sizeof p, dir, "cub/cub.cuh") || access(p, R_OK) != 0)
    return false;
  join(p, sizeof p, dir, "cuda/std/__cccl/version.h");
  *version = read_define(p, "CCCL_VERSION");
  if (!*version) {
    join(p, sizeof p, dir, "cub/version.cuh");
    *version = read_define(p, "CUB_VERSION");
  }
  return true;
}

static void cccl_search_locked(void) {
  g_cccl.found = false;
  g_cccl.version = 0;
  if (g_cccl.overridden) {
    if (cccl_at(g_cccl.override, &g_cccl.version)) {
      memcpy(g_cccl.dir, g_cccl.override, sizeof g_cccl.dir);
      g_cccl.found = true;
    } else {
      snprintf(g_cccl.why, sizeof g_cccl.why, "looked in '%.900s' only",
               g_cccl.override);
    }
    return;
  }
  static const char* const subdirs[] = {
      "include/cccl", "targets/x86_64-linux/include/cccl", "include",
      "targets/x86_64-linux/include"};
  char homes[3][HOME_MAX];
  int nh = cmx__toolkit_homes(homes, 3, true);
  size_t w = (size_t)snprintf(g_cccl.why, sizeof g_cccl.why,
                              "no cub/cub.cuh in include/cccl or include of");
  for (int h = 0; h < nh; h++) {
    for (size_t d = 0; d < sizeof subdirs / sizeof subdirs[0]; d++) {
      if (join(g_cccl.dir, sizeof g_cccl.dir, homes[h], subdirs[d]) &&
          cccl_at(g_cccl.dir, &g_cccl.version)) {
        g_cccl.found = true;
        return;
      }
    }
    if (w < sizeof g_cccl.why)
      w += (size_t)snprintf(g_cccl.why + w, sizeof g_cccl.why - w, "%s %.300s",
                            h ? "," : "", homes[h]);
  }
  if (w < sizeof g_cccl.why)
    snprintf(g_cccl.why + w, sizeof g_cccl.why - w,
             "%s (set CUDA_HOME to a CUDA toolkit)", nh ? "" : " no toolkit");
}

bool cmx__toolkit_cccl(char* dir, size_t dir_size, long* version, char* why,
                       size_t why_size) {
  pthread_mutex_lock(&g_cccl.lock);
  if (!g_cccl.searched) {
    cccl_search_locked();
    g_cccl.searched = true;
  }
  bool found = g_cccl.found;
  if (found && dir) snprintf(dir, dir_size, "%s", g_cccl.dir);
  if (found && version) *version = g_cccl.version;
  if (!found && why) snprintf(why, why_size, "%s", g_cccl.why);
  pthread_mutex_unlock(&g_cccl.lock);
  return found;
}

void cmx__toolkit_cccl_override(const char* dir) {
  pthread_mutex_lock(&g_cccl.lock);
  g_cccl.overridden = dir != NULL;
  snprintf(g_cccl.override, sizeof g_cccl.override, "%s", dir ? dir : "");
  g_cccl.searched = false;
  pthread_mutex_unlock(&g_cccl.lock);
}
