/* The CPU's C source JIT (see jit.h). */
#define _GNU_SOURCE /* environ */
#include "backend/cpu/jit.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/disk_cache.h"
#include "core/internal.h"
#include "core/sched.h"

extern char** environ;

#define KIND "cpu"

/* ---------------- the compiler ---------------- */

/* The flags of every build (part of each kernel's key). -O2 with the
 * vectoriser: the loops vectorise as at -O3, and big regions build
 * several times faster (less unrolling and versioning). No contraction:
 * a kernel turns a * b + c into a fused multiply-add only where the
 * eager row it stands for does (backend/cpu/compiled.c). */
static const char* const k_flags[] = {"-O2",
                                      "-ftree-vectorize",
                                      "-fvect-cost-model=dynamic",
                                      "-std=gnu11",
                                      "-fPIC",
                                      "-shared",
                                      "-ffp-contract=off",
                                      "-fno-math-errno",
                                      "-fvisibility=hidden",
                                      NULL};

static struct {
  pthread_once_t once;
  bool ok;
  char why[PATH_MAX + 64];
  char path[PATH_MAX];
  char ident[2 * PATH_MAX + 256];
  char march[32];
  char tmpdir[PATH_MAX]; /* private build folder when there is no cache */
} g_cc = {.once = PTHREAD_ONCE_INIT};

static _Atomic uint64_t st_built, st_disk_hits, st_disk_rejects, st_mem_hits;

/* The code generation level of this CPU (generated code may use what the
 * CPU has; the level is part of the key, so a cache shared by machines of
 * different levels keeps one object per level). */
static void pick_march(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi2");
  bool v4 = v3 && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") &&
            __builtin_cpu_supports("avx512dq") &&
            __builtin_cpu_supports("avx512cd");
  if (v4)
    snprintf(g_cc.march, sizeof g_cc.march, "-march=x86-64-v4");
  else if (v3)
    snprintf(g_cc.march, sizeof g_cc.march, "-march=x86-64-v3");
#endif
}

/* Finds name on PATH (or as given when it has a slash). */
static bool find_program(const char* name, char* out, size_t size) {
  if (strchr(name, '/')) {
    snprintf(out, size, "%s", name);
    return access(out, X_OK) == 0;
  }
  const char* path = cmx__env_get()->path;
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    const char* end = strchr(path, ':');
    size_t n = end ? (size_t)(end - path) : strlen(path);
    if (n > 0 && n + strlen(name) + 2 < size) {
      snprintf(out, size, "%.*s/%s", (int)n, path, name);
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0)
        return true;
    }
    path += n + (end ? 1 : 0);
  }
  return false;
}

static void cc_init(void) {
  const char* name = cmx__env_get()->cc;
  if (!find_program(name, g_cc.path, sizeof g_cc.path)) {
    snprintf(g_cc.why, sizeof g_cc.why,
             "no C compiler: '%s' was not found on PATH (set CMX_CC)", name);
    return;
  }
  char real[PATH_MAX];
  struct stat st;
  if (!realpath(g_cc.path, real) || stat(real, &st) != 0) {
    snprintf(g_cc.why, sizeof g_cc.why, "no C compiler: cannot resolve '%s'",
             g_cc.path);
    return;
  }
  pick_march();
  int n = snprintf(g_cc.ident, sizeof g_cc.ident,
                   "cc=%s real=%s size=%lld mtime=%lld.%09ld ino=%llu march=%s",
                   g_cc.path, real, (long long)st.st_size,
                   (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                   (unsigned long long)st.st_ino, g_cc.march);
  for (int i = 0; k_flags[i] && n > 0 && (size_t)n < sizeof g_cc.ident; i++)
    n += snprintf(g_cc.ident + n, sizeof g_cc.ident - (size_t)n, " %s",
                  k_flags[i]);
  g_cc.ok = true;
}

bool cmx__cpu_jit_available(const char** why) {
  pthread_once(&g_cc.once, cc_init);
  if (why) *why = g_cc.ok ? "" : g_cc.why;
  return g_cc.ok;
}

/* The folder builds and loads happen in: the cache folder, else a private
 * temporary one. */
static const char* work_dir(void) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char dir[PATH_MAX];
  pthread_mutex_lock(&lock);
  if (!dir[0] && !cmx__disk_cache_dir(KIND, dir, sizeof dir)) {
    char tmpl[] = "/tmp/cmx-jit-XXXXXX";
    if (mkdtemp(tmpl)) snprintf(dir, sizeof dir, "%s", tmpl);
  }
  pthread_mutex_unlock(&lock);
  return dir[0] ? dir : NULL;
}

/* A fresh file name in the work folder. */
static bool scratch_name(char* out, size_t size, const char* dir,
                         const char* what, const char* ext) {
  static _Atomic unsigned counter;
  int n = snprintf(out, size, "%s/.%s-%ld-%u%s", dir, what, (long)getpid(),
                   atomic_fetch_add(&counter, 1), ext);
  return n > 0 && (size_t)n < size;
}

static bool write_file(const char* path, const void* data, size_t n) {
  int fd =
      open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const char* p = data;
  bool ok = true;
  while (n && ok) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) {
      p += w;
      n -= (size_t)w;
    }
  }
  return close(fd) == 0 && ok;
}

/* The whole file at path (malloc'ed), or NULL. */
static char* read_file(const char* path, size_t* n, size_t limit) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char* buf = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_t size = (size_t)st.st_size < limit ? (size_t)st.st_size : limit;
    buf = malloc(size + 1);
    size_t got = 0;
    while (buf && got < size) {
      ssize_t r = read(fd, buf + got, size - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (buf) buf[got] = 0;
    *n = got;
  }
  close(fd);
  return buf;
}

/* Runs the compiler on source; the shared object's bytes on success. */
static cmx_status build(const char* name, const char* source, char** so,
                        size_t* so_size) {
  const char* dir = work_dir();
  if (!dir)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[compile] no private folder to build '%s' in", name);
  char src[PATH_MAX], out[PATH_MAX], log[PATH_MAX];
  if (!scratch_name(src, sizeof src, dir, "build", ".c") ||
      !scratch_name(out, sizeof out, dir, "build", ".so") ||
      !scratch_name(log, sizeof log, dir, "build", ".log"))
    return cmx__error(CMX_ERR_IO, "[compile] the cache path is too long");
  if (!write_file(src, source, strlen(source)))
    return cmx__error(CMX_ERR_IO, "[compile] cannot write %s", src);
  char* argv[32];
  int argc = 0;
  argv[argc++] = g_cc.path;
  for (int i = 0; k_flags[i]; i++) argv[argc++] = (char*)k_flags[i];
  if (g_cc.march[0]) argv[argc++] = g_cc.march;
  argv[argc++] = "-o";
  argv[argc++] = out;
  argv[argc++] = src;
  argv[argc++] = "-lm";
  argv[argc] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int rc = posix_spawn(&pid, g_cc.path, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = -1;
  if (rc == 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  atomic_fetch_add(&st_built, 1);
  cmx_status st = CMX_OK;
  if (rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    size_t n = 0;
    char* text = read_file(log, &n, 4096);
    st = cmx__error(CMX_ERR_RUNTIME,
                    "[compile] the C compiler (%s) failed on '%s' (%s %d):\n%s",
                    g_cc.path, name, rc != 0 ? "spawn error" : "exit status",
                    rc != 0             ? rc
                    : WIFEXITED(status) ? WEXITSTATUS(status)
                                        : -1,
                    text ? text : "");
    free(text);
  } else {
    *so = read_file(out, so_size, (size_t)1 << 28);
    if (!*so)
      st = cmx__error(CMX_ERR_IO, "[compile] cannot read the built %s", out);
  }
  unlink(src);
  unlink(out);
  unlink(log);
  return st;
}

/* Loads an object from its bytes (through a fresh file: dlopen needs a
 * path, and a fresh name never matches an object loaded before). */
static cmx_status load(const char* name, const void* so, size_t n,
                       const char* sym, void** out) {
  const char* dir = work_dir();
  char path[PATH_MAX];
  if (!dir)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[compile] no private folder to load '%s' from", name);
  if (!scratch_name(path, sizeof path, dir, "load", ".so") ||
      !write_file(path, so, n)) {
    unlink(path);
    return cmx__error(CMX_ERR_IO, "[compile] cannot write %s", path);
  }
  /* Objects stay loaded: kernels may run until the process ends. */
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  unlink(path); /* the mapping keeps the file's contents */
  if (!lib)
    return cmx__error(CMX_ERR_RUNTIME, "[compile] cannot load '%s': %s", name,
                      dlerror());
  *out = dlsym(lib, sym);
  if (!*out)
    return cmx__error(CMX_ERR_RUNTIME, "[compile] '%s' has no symbol %s", name,
                      sym);
  return CMX_OK;
}

/* ---------------- the memory cache ---------------- */

typedef struct mem_entry {
  cmx__key128 key;
  void* sym;
  struct mem_entry* next;
} mem_entry;

static pthread_mutex_t g_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_entry* g_mem[256];

static void* mem_find(cmx__key128 k) {
  pthread_mutex_lock(&g_mem_lock);
  mem_entry* e = g_mem[k.lo & 255];
  while (e && (e->key.lo != k.lo || e->key.hi != k.hi)) e = e->next;
  void* sym = e ? e->sym : NULL;
  pthread_mutex_unlock(&g_mem_lock);
  return sym;
}

void cmx__cpu_jit_fork(int phase) {
  if (phase == CMX__FORK_PREPARE)
    pthread_mutex_lock(&g_mem_lock);
  else
    pthread_mutex_unlock(&g_mem_lock);
}

/* Keeps the first symbol stored for k (another thread may have built the
 * same kernel meanwhile); returns it. */
static void* mem_put(cmx__key128 k, void* sym) {
  pthread_mutex_lock(&g_mem_lock);
  mem_entry* e = g_mem[k.lo & 255];
  while (e && (e->key.lo != k.lo || e->key.hi != k.hi)) e = e->next;
  if (!e && (e = malloc(sizeof *e))) {
    e->key = k;
    e->sym = sym;
    e->next = g_mem[k.lo & 255];
    g_mem[k.lo & 255] = e;
  }
  void* r = e ? e->sym : sym;
  pthread_mutex_unlock(&g_mem_lock);
  return r;
}

/* ---------------- entry point ---------------- */

cmx_status cmx__cpu_jit_symbol(const char* name, const char* source,
                               const char* sym, void** out) {
  *out = NULL;
  const char* why;
  if (!cmx__cpu_jit_available(&why))
    return cmx__error(CMX_ERR_NOT_IMPLEMENTED, "[compile] %s", why);
  cmx__key128 k = cmx__key128_init();
  k = cmx__key128_add(k, g_cc.ident, strlen(g_cc.ident) + 1);
  k = cmx__key128_add(k, sym, strlen(sym) + 1);
  k = cmx__key128_add(k, source, strlen(source));
  if ((*out = mem_find(k))) {
    atomic_fetch_add(&st_mem_hits, 1);
    return CMX_OK;
  }
  char file[96];
  snprintf(file, sizeof file, "%.40s-%016llx%016llx.so", name,
           (unsigned long long)k.hi, (unsigned long long)k.lo);
  void* so = NULL;
  size_t n = 0;
  int rc = cmx__disk_cache_read(KIND, file, k, &so, &n);
  cmx_status st;
  if (rc == 1) {
    st = load(name, so, n, sym, out);
    if (st == CMX_OK) atomic_fetch_add(&st_disk_hits, 1);
    free(so);
    if (st == CMX_OK) {
      *out = mem_put(k, *out);
      return CMX_OK;
    }
    rc = -1; /* loads badly: build it again */
  }
  if (rc < 0) atomic_fetch_add(&st_disk_rejects, 1);
  char* built = NULL;
  st = build(name, source, &built, &n);
  if (st == CMX_OK) {
    cmx__disk_cache_write(KIND, file, k, built, n);
    st = load(name, built, n, sym, out);
  }
  free(built);
  if (st == CMX_OK) *out = mem_put(k, *out);
  return st;
}

void cmx__cpu_jit_stats(cmx_compile_stats* s) {
  s->kernels_built += atomic_load(&st_built);
  s->disk_hits += atomic_load(&st_disk_hits);
  s->disk_rejects += atomic_load(&st_disk_rejects);
  s->memory_hits += atomic_load(&st_mem_hits);
}
