/* Run-time kernel compilation with NVRTC, and the disk cache of kernels.
 *
 * Every kernel is CUDA source (src/backend/cuda/kernels/NAME.cu, embedded in
 * the library as strings) compiled at first use for the device's
 * architecture: a CUBIN for sm_XY when this NVRTC can emit it, else PTX for
 * the newest compute_XY it supports that is not newer than the device (the
 * driver finishes PTX itself).
 *
 * Two caches keep compilation rare: loaded modules in memory (module.c),
 * and compiled images on disk (here) in a user-private directory
 * ($CMX_CACHE_DIR, else $XDG_CACHE_HOME/cmx, else ~/.cache/cmx; images in
 * its "cuda" folder, mode 0700, files 0600), keyed by a 128-bit hash of the
 * source, the options (include folders, header versions), the architecture
 * and the NVRTC and driver versions. The files are core's disk-cache
 * entries (core/disk_cache.h: written to a temporary file and renamed into
 * place; one that fails its checks (header, key, size, checksum) or that
 * the driver rejects is ignored and rewritten; folders or files that other
 * users could have written are never read).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"
#include "core/disk_cache.h"

/* ---------------- loading NVRTC ---------------- */

static cmx__nvrtc_api api;
static struct {
  pthread_once_t once;
  bool ok;
  char reason[768];
  int major, minor;
  int* archs; /* supported compute capabilities, ascending (or NULL) */
  int narchs;
} g_rtc = {.once = PTHREAD_ONCE_INIT};

static bool resolve(void* lib, void* slot, const char* name) {
  void* p = dlsym(lib, name);
  memcpy(slot, &p, sizeof p);
  return p != NULL;
}

static char g_path[4096]; /* the file NVRTC was loaded from */

static void nvrtc_load(void) {
  static const char* const names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                      "libnvrtc.so"};
  char err[512];
  void* lib = cmx__toolkit_dlopen(names, 3, err, sizeof err);
  if (!lib) {
    snprintf(g_rtc.reason, sizeof g_rtc.reason,
             "NVRTC (libnvrtc.so.13/.12) was not found on the loader path, "
             "in $CUDA_HOME or in /usr/local/cuda (%s)",
             err[0] ? err : "not found");
    return;
  }
  static const struct {
    size_t offset;
    const char* name;
    bool optional;
  } table[] = {
#define REQ(f) {offsetof(cmx__nvrtc_api, f), #f, false}
#define OPT(f) \
  { offsetof(cmx__nvrtc_api, f), #f, true }
      REQ(nvrtcGetErrorString),
      REQ(nvrtcVersion),
      REQ(nvrtcCreateProgram),
      REQ(nvrtcDestroyProgram),
      REQ(nvrtcCompileProgram),
      REQ(nvrtcGetProgramLogSize),
      REQ(nvrtcGetProgramLog),
      REQ(nvrtcGetPTXSize),
      REQ(nvrtcGetPTX),
      OPT(nvrtcGetCUBINSize),
      OPT(nvrtcGetCUBIN),
      OPT(nvrtcGetNumSupportedArchs),
      OPT(nvrtcGetSupportedArchs),
#undef REQ
#undef OPT
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!resolve(lib, (char*)&api + table[i].offset, table[i].name) &&
        !table[i].optional) {
      snprintf(g_rtc.reason, sizeof g_rtc.reason, "NVRTC lacks %s",
               table[i].name);
      memset(&api, 0, sizeof api);
      dlclose(lib);
      return;
    }
  if (!api.nvrtcGetCUBIN || !api.nvrtcGetCUBINSize)
    api.nvrtcGetCUBIN = NULL, api.nvrtcGetCUBINSize = NULL;
  if (api.nvrtcVersion(&g_rtc.major, &g_rtc.minor) != NVRTC_SUCCESS)
    g_rtc.major = g_rtc.minor = 0;
  Dl_info info;
  void* sym;
  memcpy(&sym, &api.nvrtcVersion, sizeof sym);
  if (dladdr(sym, &info) && info.dli_fname)
    snprintf(g_path, sizeof g_path, "%s", info.dli_fname);
  int n = 0;
  if (api.nvrtcGetNumSupportedArchs && api.nvrtcGetSupportedArchs &&
      api.nvrtcGetNumSupportedArchs(&n) == NVRTC_SUCCESS && n > 0) {
    g_rtc.archs = malloc((size_t)n * sizeof(int));
    if (g_rtc.archs && api.nvrtcGetSupportedArchs(g_rtc.archs) == NVRTC_SUCCESS)
      g_rtc.narchs = n;
  }
  g_rtc.ok = true;
}

bool cmx__nvrtc_available(const char** why) {
  pthread_once(&g_rtc.once, nvrtc_load);
  if (why) *why = g_rtc.ok ? "" : g_rtc.reason;
  return g_rtc.ok;
}

const char* cmx__nvrtc_library_path(void) {
  return cmx__nvrtc_available(NULL) ? g_path : "";
}

/* ---------------- compiling ---------------- */

static _Atomic uint64_t st_compiles, st_disk_hits, st_disk_writes,
    st_disk_rejects, st_mem_hits;

void cmx__gpu_cache_count_mem_hit(void) {
  atomic_fetch_add_explicit(&st_mem_hits, 1, memory_order_relaxed);
}

cmx__gpu_cache_stats cmx__gpu_cache_stats_get(void) {
  return (cmx__gpu_cache_stats){
      atomic_load(&st_compiles), atomic_load(&st_disk_hits),
      atomic_load(&st_disk_writes), atomic_load(&st_disk_rejects),
      atomic_load(&st_mem_hits)};
}

void cmx__gpu_image_free(cmx__gpu_image* img) {
  if (!img) return;
  free(img->data);
  img->data = NULL;
  img->size = 0;
}

/* The architecture to compile for: the device's own when NVRTC knows it
 * (CUBIN), else the newest older one it knows, as PTX. */
static int pick_arch(int arch, bool* ptx) {
  *ptx = api.nvrtcGetCUBIN == NULL;
  if (!g_rtc.narchs) return arch;
  int best = -1;
  for (int i = 0; i < g_rtc.narchs; i++) {
    if (g_rtc.archs[i] == arch) return arch;
    if (g_rtc.archs[i] < arch && g_rtc.archs[i] > best) best = g_rtc.archs[i];
  }
  if (best < 0) return arch; /* older than NVRTC supports: let it say so */
  *ptx = true;
  return best;
}

/* One NVRTC run. *res gets NVRTC's result for the caller's fallback. */
#define MAX_OPTS 16
static cmx_status compile_once(const char* name, const char* source, int arch,
                               const char* const* extra, int nextra, bool ptx,
                               cmx__gpu_image* out, nvrtcResult* res) {
  char prog_name[96], opt[64];
  snprintf(prog_name, sizeof prog_name, "%s.cu", name);
  snprintf(opt, sizeof opt, "--gpu-architecture=%s_%d", ptx ? "compute" : "sm",
           arch);
  const char* opts[MAX_OPTS + 1] = {opt};
  int nopts = 1;
  for (int i = 0; i < nextra && nopts <= MAX_OPTS; i++)
    opts[nopts++] = extra[i];
  nvrtcProgram prog = NULL;
  nvrtcResult r =
      api.nvrtcCreateProgram(&prog, source, prog_name, 0, NULL, NULL);
  *res = r;
  if (r != NVRTC_SUCCESS)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[gpu] NVRTC could not create program '%s' (%s)", name,
                      api.nvrtcGetErrorString(r));
  atomic_fetch_add(&st_compiles, 1);
  r = api.nvrtcCompileProgram(prog, nopts, opts);
  *res = r;
  cmx_status st = CMX_OK;
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    char* log = NULL;
    if (api.nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1 &&
        (log = malloc(n)) && api.nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
      log[0] = 0;
    st = cmx__error(CMX_ERR_RUNTIME,
                    "[gpu] NVRTC failed to compile '%s' for %s_%d (%s):\n%s",
                    name, ptx ? "compute" : "sm", arch,
                    api.nvrtcGetErrorString(r), log ? log : "(no log)");
    free(log);
  } else {
    size_t n = 0;
    r = ptx ? api.nvrtcGetPTXSize(prog, &n) : api.nvrtcGetCUBINSize(prog, &n);
    char* data = r == NVRTC_SUCCESS && n ? malloc(n) : NULL;
    if (data)
      r = ptx ? api.nvrtcGetPTX(prog, data) : api.nvrtcGetCUBIN(prog, data);
    *res = r;
    if (!data || r != NVRTC_SUCCESS) {
      free(data);
      st = cmx__error(
          CMX_ERR_RUNTIME, "[gpu] NVRTC compiled '%s' but gave no %s (%s)",
          name, ptx ? "PTX" : "CUBIN",
          r == NVRTC_SUCCESS ? "out of memory" : api.nvrtcGetErrorString(r));
    } else {
      out->data = data;
      out->size = n;
      out->ptx = ptx;
    }
  }
  api.nvrtcDestroyProgram(&prog);
  return st;
}

cmx_status cmx__nvrtc_compile(const char* name, const char* source, int arch,
                              const char* const* opts, int nopts, bool want_ptx,
                              cmx__gpu_image* out) {
  const char* why;
  memset(out, 0, sizeof *out);
  if (!cmx__nvrtc_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[gpu] cannot compile '%s': %s", name,
                      why);
  if (nopts > MAX_OPTS)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[gpu] cannot compile '%s': %d options, at most %d", name,
                      nopts, MAX_OPTS);
  bool ptx;
  int use = pick_arch(arch, &ptx);
  ptx = ptx || want_ptx;
  nvrtcResult res;
  cmx_status st = compile_once(name, source, use, opts, nopts, ptx, out, &res);
  /* A source error fails the same way for PTX; anything else (an unknown
   * sm_ option, no CUBIN) gets one more try as PTX. */
  if (st != CMX_OK && !ptx && res != NVRTC_ERROR_COMPILATION)
    st = compile_once(name, source, use, opts, nopts, true, out, &res);
  return st;
}

/* ---------------- the disk cache ---------------- */

/* Entries are core's disk-cache entries (core/disk_cache.c: private
 * folder, header, key, checksum, atomic rename) of kind "cuda"; the
 * payload is one byte (1: PTX text, 0: CUBIN) and then the image. */
#define KIND "cuda"

static cmx__key128 key_str(cmx__key128 h, const char* s) {
  return cmx__key128_add(h, s, strlen(s) + 1);
}

static cmx__key128 image_key(const char* source, int arch,
                             const char* const* opts, int nopts) {
  char meta[160];
  snprintf(meta, sizeof meta,
           "cmx-cuda-image-v3 arch=%d nvrtc=%d.%d driver=%d cubin=%d opts=%d",
           arch, g_rtc.major, g_rtc.minor, cmx__gpu_driver_version(),
           api.nvrtcGetCUBIN != NULL, nopts);
  cmx__key128 h = key_str(cmx__key128_init(), meta);
  for (int i = 0; i < nopts; i++) h = key_str(h, opts[i]);
  return key_str(h, source);
}

bool cmx__gpu_cache_dir(char* buf, size_t size) {
  return cmx__disk_cache_dir(KIND, buf, size);
}

static void entry_name(char* out, size_t size, const char* name,
                       cmx__key128 k) {
  char clean[48];
  size_t j = 0;
  for (size_t i = 0; name[i] && j + 1 < sizeof clean; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-';
    clean[j++] = ok ? c : '_';
  }
  clean[j] = 0;
  snprintf(out, size, "%s-%016llx%016llx.bin", clean, (unsigned long long)k.hi,
           (unsigned long long)k.lo);
}

/* 1: a valid entry was read into out; 0: none; -1: a bad entry. */
static int read_entry(const char* fname, cmx__key128 k, cmx__gpu_image* out) {
  void* data;
  size_t size;
  int rc = cmx__disk_cache_read(KIND, fname, k, &data, &size);
  if (rc != 1) return rc;
  unsigned char* p = data;
  bool ptx = p[0] == 1;
  if (size < 2 || p[0] > 1 || (ptx && p[size - 1] != 0)) {
    free(data);
    return -1;
  }
  memmove(p, p + 1, size - 1);
  out->data = data;
  out->size = size - 1;
  out->ptx = ptx;
  return 1;
}

static void write_entry(const char* fname, cmx__key128 k,
                        const cmx__gpu_image* img) {
  unsigned char* payload = malloc(img->size + 1);
  if (!payload) return;
  payload[0] = img->ptx ? 1 : 0;
  memcpy(payload + 1, img->data, img->size);
  if (cmx__disk_cache_write(KIND, fname, k, payload, img->size + 1))
    atomic_fetch_add(&st_disk_writes, 1);
  free(payload);
}

cmx_status cmx__gpu_image_get(const char* name, const char* source, int arch,
                              const char* const* opts, int nopts,
                              cmx__gpu_image* out, int* origin) {
  const char* why;
  memset(out, 0, sizeof *out);
  if (!cmx__nvrtc_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[gpu] cannot compile '%s': %s", name,
                      why);
  cmx__key128 k = image_key(source, arch, opts, nopts);
  char fname[128];
  entry_name(fname, sizeof fname, name, k);
  bool disk = cmx__gpu_cache_dir(NULL, 0);
  if (disk) {
    int rc = read_entry(fname, k, out);
    if (rc == 1) {
      atomic_fetch_add(&st_disk_hits, 1);
      if (origin) *origin = CMX__IMAGE_DISK;
      return CMX_OK;
    }
    if (rc < 0) atomic_fetch_add(&st_disk_rejects, 1);
  }
  cmx_status st =
      cmx__nvrtc_compile(name, source, arch, opts, nopts, false, out);
  if (st != CMX_OK) return st;
  if (disk) write_entry(fname, k, out);
  if (origin) *origin = CMX__IMAGE_COMPILED;
  return CMX_OK;
}

void cmx__gpu_image_forget(const char* name, const char* source, int arch,
                           const char* const* opts, int nopts) {
  if (!cmx__nvrtc_available(NULL) || !cmx__gpu_cache_dir(NULL, 0)) return;
  char fname[128];
  entry_name(fname, sizeof fname, name, image_key(source, arch, opts, nopts));
  atomic_fetch_add(&st_disk_rejects, 1);
  cmx__disk_cache_remove(KIND, fname);
}
