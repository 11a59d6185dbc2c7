/* The user-private disk cache (see disk_cache.h). */
#include "core/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

/* ---------------- hashing ---------------- */

cmx__key128 cmx__key128_init(void) {
  return (cmx__key128){14695981039346656037ull, 0x9e3779b97f4a7c15ull};
}

/* FNV-1a in lo, a multiply-xorshift hash in hi. */
cmx__key128 cmx__key128_add(cmx__key128 h, const void* p, size_t n) {
  const unsigned char* s = p;
  for (size_t i = 0; i < n; i++) {
    h.lo = (h.lo ^ s[i]) * 1099511628211ull;
    h.hi = (h.hi + s[i] + 1) * 0xff51afd7ed558ccdull;
    h.hi ^= h.hi >> 29;
  }
  return h;
}

/* ---------------- folders ---------------- */

#define MAX_KINDS 8

static struct {
  pthread_mutex_t lock;
  int n;
  struct {
    char sub[16];
    char dir[PATH_MAX];
    bool ok;
  } kinds[MAX_KINDS];
} g_dirs = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Creates every missing folder of path, private to the user. */
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

/* Opens a folder if it is safe: a real folder of ours that nobody else
 * can write (group/other bits are then dropped). */
static int open_dir(const char* dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

static bool make_dir(const char* sub, char* dir, size_t size) {
  const cmx__env* e = cmx__env_get();
  char root[PATH_MAX - 32];
  int n;
  if (e->cache_dir && *e->cache_dir)
    n = snprintf(root, sizeof root, "%s", e->cache_dir);
  else if (e->xdg_cache_home && e->xdg_cache_home[0] == '/')
    n = snprintf(root, sizeof root, "%s/cmx", e->xdg_cache_home);
  else if (e->home && e->home[0] == '/')
    n = snprintf(root, sizeof root, "%s/.cache/cmx", e->home);
  else
    return false;
  if (n < 0 || (size_t)n >= sizeof root || !mkdir_p(root)) return false;
  snprintf(dir, size, "%s/%s", root, sub);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) return false;
  int fd = open_dir(dir);
  if (fd < 0) return false;
  close(fd);
  return true;
}

/* The kind's slot (created on first use); NULL when the table is full. */
static const char* kind_dir(const char* sub) {
  pthread_mutex_lock(&g_dirs.lock);
  const char* dir = NULL;
  int i = 0;
  while (i < g_dirs.n && strcmp(g_dirs.kinds[i].sub, sub)) i++;
  if (i == g_dirs.n && i < MAX_KINDS && strlen(sub) < 16) {
    snprintf(g_dirs.kinds[i].sub, 16, "%s", sub);
    g_dirs.kinds[i].ok =
        make_dir(sub, g_dirs.kinds[i].dir, sizeof g_dirs.kinds[i].dir);
    g_dirs.n++;
  }
  if (i < g_dirs.n && g_dirs.kinds[i].ok) dir = g_dirs.kinds[i].dir;
  pthread_mutex_unlock(&g_dirs.lock);
  return dir;
}

bool cmx__disk_cache_dir(const char* sub, char* buf, size_t size) {
  const char* dir = kind_dir(sub);
  if (buf && size) snprintf(buf, size, "%s", dir ? dir : "");
  return dir != NULL;
}

/* ---------------- entries ---------------- */

#define MAGIC "CMXDC001"
typedef struct {
  char magic[8];
  uint64_t key_lo, key_hi;
  uint64_t size, sum;
} header;

static uint64_t checksum(const void* p, size_t n) {
  cmx__key128 h = cmx__key128_add(cmx__key128_init(), p, n);
  return h.lo ^ h.hi;
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

int cmx__disk_cache_read(const char* sub, const char* name, cmx__key128 k,
                         void** data, size_t* size) {
  *data = NULL;
  *size = 0;
  const char* dir = kind_dir(sub);
  if (!dir) return 0;
  int dfd = open_dir(dir);
  if (dfd < 0) return 0;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  close(dfd);
  if (fd < 0) return errno == ENOENT ? 0 : -1;
  struct stat st;
  header h;
  int rc = -1;
  char* buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 022) || st.st_size < (off_t)sizeof h ||
      st.st_size > ((off_t)1 << 30) || !read_all(fd, &h, sizeof h))
    goto done;
  size_t n = (size_t)st.st_size - sizeof h;
  if (memcmp(h.magic, MAGIC, 8) != 0 || h.key_lo != k.lo || h.key_hi != k.hi ||
      h.size != n || n == 0 || !(buf = malloc(n)) || !read_all(fd, buf, n) ||
      checksum(buf, n) != h.sum)
    goto done;
  *data = buf;
  *size = n;
  buf = NULL;
  rc = 1;
done:
  free(buf);
  close(fd);
  return rc;
}

bool cmx__disk_cache_write(const char* sub, const char* name, cmx__key128 k,
                           const void* data, size_t size) {
  static _Atomic unsigned counter;
  const char* dir = kind_dir(sub);
  if (!dir) return false;
  int dfd = open_dir(dir);
  if (dfd < 0) return false;
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, ".tmp-%ld-%u-%s", (long)getpid(),
           atomic_fetch_add(&counter, 1), name);
  int fd = openat(dfd, tmp,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    close(dfd);
    return false;
  }
  header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, MAGIC, 8);
  h.key_lo = k.lo;
  h.key_hi = k.hi;
  h.size = size;
  h.sum = checksum(data, size);
  bool ok = write_all(fd, &h, sizeof h) && write_all(fd, data, size);
  ok = close(fd) == 0 && ok;
  ok = ok && renameat(dfd, tmp, dfd, name) == 0;
  if (!ok) unlinkat(dfd, tmp, 0);
  close(dfd);
  return ok;
}

void cmx__disk_cache_remove(const char* sub, const char* name) {
  const char* dir = kind_dir(sub);
  if (!dir) return;
  int dfd = open_dir(dir);
  if (dfd < 0) return;
  unlinkat(dfd, name, 0);
  close(dfd);
}
