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
 * and the NVRTC and driver versions. Entries are
 *   written to a temporary file and renamed into place, so readers never see
 *   half an entry; one that fails its checks (header, key, size, checksum)
 *   or that the driver rejects is ignored and rewritten. Directories or
 *   files that other users could have written are never read.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cuda/gpu.h"

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

typedef struct {
  uint64_t lo, hi;
} key128;

/* Two independent 64-bit hashes (FNV-1a, and a multiply-rotate one) make
 * a 128-bit key; accidental collisions are out of reach. */
typedef struct {
  uint64_t a, b;
} hasher;
static void hash_init(hasher* h) {
  h->a = 14695981039346656037ull;
  h->b = 0x9e3779b97f4a7c15ull;
}
static void hash_bytes(hasher* h, const void* p, size_t n) {
  const unsigned char* s = p;
  for (size_t i = 0; i < n; i++) {
    h->a = (h->a ^ s[i]) * 1099511628211ull;
    h->b = (h->b + s[i] + 1) * 0xff51afd7ed558ccdull;
    h->b ^= h->b >> 29;
  }
}
static void hash_str(hasher* h, const char* s) {
  hash_bytes(h, s, strlen(s) + 1);
}

static key128 image_key(const char* source, int arch, const char* const* opts,
                        int nopts) {
  char meta[160];
  snprintf(meta, sizeof meta,
           "cmx-cuda-image-v2 arch=%d nvrtc=%d.%d driver=%d cubin=%d opts=%d",
           arch, g_rtc.major, g_rtc.minor, cmx__gpu_driver_version(),
           api.nvrtcGetCUBIN != NULL, nopts);
  hasher h;
  hash_init(&h);
  hash_str(&h, meta);
  for (int i = 0; i < nopts; i++) hash_str(&h, opts[i]);
  hash_str(&h, source);
  return (key128){h.a, h.b};
}

static uint64_t checksum(const void* p, size_t n) {
  hasher h;
  hash_init(&h);
  hash_bytes(&h, p, n);
  return h.a ^ h.b;
}

#define MAGIC "CMXKRN01"
typedef struct {
  char magic[8];
  uint64_t key_lo, key_hi;
  uint64_t size, sum;
  uint32_t ptx, reserved;
} disk_header;

static struct {
  pthread_once_t once;
  char dir[PATH_MAX];
  bool ok;
} g_dir = {.once = PTHREAD_ONCE_INIT};

/* Creates every missing directory of path, private to the user. */
static bool mkdir_p(const char* path) {
  char buf[PATH_MAX];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) return false;
    buf[i] = c;
  }
  return true;
}

/* Opens the cache directory if it is safe to use: a real directory owned
 * by us that nobody else can write (group/other bits are then dropped). */
static int open_cache_dir(void) {
  int fd = open(g_dir.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 022)) {
    close(fd);
    return -1;
  }
  if (st.st_mode & 077) fchmod(fd, 0700);
  return fd;
}

static void dir_init(void) {
  const cmx__env* e = cmx__env_get();
  char root[PATH_MAX - 16]; /* room for "/cuda" in g_dir.dir */
  int n;
  if (e->cache_dir && *e->cache_dir)
    n = snprintf(root, sizeof root, "%s", e->cache_dir);
  else if (e->xdg_cache_home && e->xdg_cache_home[0] == '/')
    n = snprintf(root, sizeof root, "%s/cmx", e->xdg_cache_home);
  else if (e->home && e->home[0] == '/')
    n = snprintf(root, sizeof root, "%s/.cache/cmx", e->home);
  else
    return; /* no place for a disk cache: memory only */
  if (n < 0 || (size_t)n >= sizeof root || !mkdir_p(root)) return;
  snprintf(g_dir.dir, sizeof g_dir.dir, "%s/cuda", root);
  if (mkdir(g_dir.dir, 0700) != 0 && errno != EEXIST) return;
  int fd = open_cache_dir();
  if (fd < 0) return;
  close(fd);
  g_dir.ok = true;
}

bool cmx__gpu_cache_dir(char* buf, size_t size) {
  pthread_once(&g_dir.once, dir_init);
  if (buf && size) snprintf(buf, size, "%s", g_dir.ok ? g_dir.dir : "");
  return g_dir.ok;
}

static void entry_name(char* out, size_t size, const char* name, key128 k) {
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

static bool read_all(int fd, void* p, size_t n) {
  char* c = p;
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

static bool write_all(int fd, const void* p, size_t n) {
  const char* c = p;
  while (n) {
    ssize_t r = write(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= (size_t)r;
  }
  return true;
}

/* 1: a valid entry was read into out; 0: none; -1: a bad entry. */
static int read_entry(const char* fname, key128 k, cmx__gpu_image* out) {
  int dfd = open_cache_dir();
  if (dfd < 0) return 0;
  int fd = openat(dfd, fname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  close(dfd);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  struct stat st;
  disk_header h;
  int rc = -1;
  char* data = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 022) || st.st_size < (off_t)sizeof h ||
      st.st_size > ((off_t)1 << 30) || !read_all(fd, &h, sizeof h))
    goto done;
  size_t size = (size_t)st.st_size - sizeof h;
  if (memcmp(h.magic, MAGIC, 8) != 0 || h.key_lo != k.lo || h.key_hi != k.hi ||
      h.size != size || size == 0 || !(data = malloc(size)) ||
      !read_all(fd, data, size) || checksum(data, size) != h.sum ||
      (h.ptx && data[size - 1] != 0))
    goto done;
  out->data = data;
  out->size = size;
  out->ptx = h.ptx != 0;
  data = NULL;
  rc = 1;
done:
  free(data);
  close(fd);
  return rc;
}

static void write_entry(const char* fname, key128 k,
                        const cmx__gpu_image* img) {
  static _Atomic unsigned counter;
  int dfd = open_cache_dir();
  if (dfd < 0) return;
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, ".tmp-%ld-%u-%s", (long)getpid(),
           atomic_fetch_add(&counter, 1), fname);
  int fd = openat(dfd, tmp,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    close(dfd);
    return;
  }
  disk_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  h.key_lo = k.lo;
  h.key_hi = k.hi;
  h.size = img->size;
  h.sum = checksum(img->data, img->size);
  h.ptx = img->ptx;
  bool ok = write_all(fd, &h, sizeof h) && write_all(fd, img->data, img->size);
  ok = close(fd) == 0 && ok;
  if (ok && renameat(dfd, tmp, dfd, fname) == 0)
    atomic_fetch_add(&st_disk_writes, 1);
  else
    unlinkat(dfd, tmp, 0);
  close(dfd);
}

cmx_status cmx__gpu_image_get(const char* name, const char* source, int arch,
                              const char* const* opts, int nopts,
                              cmx__gpu_image* out, int* origin) {
  const char* why;
  memset(out, 0, sizeof *out);
  if (!cmx__nvrtc_available(&why))
    return cmx__error(CMX_ERR_RUNTIME, "[gpu] cannot compile '%s': %s", name,
                      why);
  key128 k = image_key(source, arch, opts, nopts);
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
  int dfd = open_cache_dir();
  if (dfd < 0) return;
  unlinkat(dfd, fname, 0);
  close(dfd);
}
