/* Shared I/O plumbing: bounds-checked sources, a buffered reader, an
 * atomic writer, row-major array streaming, CRC-32 and byte swapping. */
#define _GNU_SOURCE
#include "io/io_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "primitives/io.h"
#include "primitives/registry.h"
#ifdef CMX_HAVE_ZLIB
#include <zlib.h>
#endif

/* ---------------- sources ---------------- */

cmx_status cmx__src_open(cmx__src* s, const char* op, const char* path) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->op = op;
  if (!path) return cmx__error(CMX_ERR_VALUE, "[%s] path is NULL", op);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cmx__error(CMX_ERR_IO, "[%s] Failed to open %s: %s", op, path,
                      strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return cmx__error(CMX_ERR_IO, "[%s] Failed to open %s: %s", op, path,
                      strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return cmx__error(CMX_ERR_IO, "[%s] Failed to open %s: not a regular file",
                      op, path);
  }
  s->file = cmx__file_new(fd, path);
  if (!s->file) return cmx_last_status();
  s->fd = fd;
  s->size = (uint64_t)st.st_size;
  s->stream = cmx_stream_on(cmx_device_cpu());
  return CMX_OK;
}

void cmx__src_mem(cmx__src* s, const char* op, const void* data,
                  uint64_t size) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->op = op;
  s->mem = data;
  s->size = data ? size : 0;
}

void cmx__src_close(cmx__src* s) {
  if (s->file)
    cmx__file_release(s->file); /* closes fd with the last reference */
  else if (s->fd >= 0)
    close(s->fd);
  s->file = NULL;
  s->fd = -1;
}

/* pread until n bytes arrived; 0 on success, else errno (EIO for a file
 * that shrank under us). */
static int pread_full(int fd, uint8_t* dst, uint64_t n, uint64_t off) {
  while (n) {
    size_t want = n > (1u << 30) ? (1u << 30) : (size_t)n;
    ssize_t r = pread(fd, dst, want, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return EIO;
    dst += r;
    off += (uint64_t)r;
    n -= (uint64_t)r;
  }
  return 0;
}

/* Big reads are split in chunks over the thread pool: from the page cache
 * one thread's copy is slower than the memory bandwidth. */
#define READ_CHUNK ((uint64_t)8 << 20)
typedef struct {
  int fd;
  uint8_t* dst;
  uint64_t off, n;
  _Atomic int err;
} pread_job;

static void pread_range(void* ctx, int64_t b, int64_t e) {
  pread_job* j = ctx;
  uint64_t start = (uint64_t)b * READ_CHUNK;
  uint64_t end = (uint64_t)e * READ_CHUNK;
  if (end > j->n) end = j->n;
  int err = pread_full(j->fd, j->dst + start, end - start, j->off + start);
  if (err) atomic_store(&j->err, err);
}

cmx_status cmx__src_read(const cmx__src* s, void* dst, uint64_t n, uint64_t off,
                         const char* what) {
  uint64_t end;
  if (__builtin_add_overflow(off, n, &end) || end > s->size) {
    if (off >= s->size || __builtin_add_overflow(off, n, &end))
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] file is truncated: %s starts at byte %llu but "
                        "the file has %llu bytes",
                        s->op, what, (unsigned long long)off,
                        (unsigned long long)s->size);
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] file is truncated: %s needs bytes [%llu, %llu) "
                      "but the file has %llu bytes",
                      s->op, what, (unsigned long long)off,
                      (unsigned long long)end, (unsigned long long)s->size);
  }
  if (!n) return CMX_OK;
  if (s->mem) {
    memcpy(dst, s->mem + off, (size_t)n);
    return CMX_OK;
  }
  pread_job j = {.fd = s->fd, .dst = dst, .off = off, .n = n};
  atomic_init(&j.err, 0);
  int64_t chunks = (int64_t)((n + READ_CHUNK - 1) / READ_CHUNK);
  if (chunks >= 4)
    cmx__parallel_for(chunks, 1, pread_range, &j);
  else
    pread_range(&j, 0, chunks);
  int err = atomic_load(&j.err);
  if (err)
    return cmx__error(CMX_ERR_IO, "[%s] Failed to read %s: %s", s->op, what,
                      strerror(err));
  return CMX_OK;
}

/* ---------------- sequential reader ---------------- */

void cmx__rd_init(cmx__rd* r, const cmx__src* src, uint64_t pos) {
  r->src = src;
  r->pos = pos;
  r->buf_off = 0;
  r->buf_len = 0;
}

cmx_status cmx__rd_bytes(cmx__rd* r, void* dst, uint64_t n, const char* what) {
  const cmx__src* s = r->src;
  uint64_t end;
  if (__builtin_add_overflow(r->pos, n, &end) || end > s->size)
    return cmx__src_read(s, dst, n, r->pos, what); /* reports the error */
  if (n > sizeof r->buf / 2) {
    cmx_status st = cmx__src_read(s, dst, n, r->pos, what);
    if (st == CMX_OK) r->pos = end;
    return st;
  }
  if (r->pos < r->buf_off || end > r->buf_off + r->buf_len) {
    uint64_t len = s->size - r->pos;
    if (len > sizeof r->buf) len = sizeof r->buf;
    cmx_status st = cmx__src_read(s, r->buf, len, r->pos, what);
    if (st != CMX_OK) return st;
    r->buf_off = r->pos;
    r->buf_len = (size_t)len;
  }
  if (n) memcpy(dst, r->buf + (r->pos - r->buf_off), (size_t)n);
  r->pos = end;
  return CMX_OK;
}

cmx_status cmx__rd_u32(cmx__rd* r, uint32_t* v, const char* what) {
  uint8_t b[4] = {0};
  cmx_status st = cmx__rd_bytes(r, b, 4, what);
  if (st == CMX_OK) *v = cmx__le32(b);
  return st;
}

cmx_status cmx__rd_u64(cmx__rd* r, uint64_t* v, const char* what) {
  uint8_t b[8] = {0};
  cmx_status st = cmx__rd_bytes(r, b, 8, what);
  if (st == CMX_OK) *v = cmx__le64(b);
  return st;
}

/* ---------------- writer ---------------- */

static _Atomic unsigned g_tmp_counter;

cmx_status cmx__wr_open(cmx__wr* w, const char* op, const char* path) {
  memset(w, 0, sizeof *w);
  w->fd = -1;
  w->op = op;
  size_t n = strlen(path);
  w->path = cmx__strndup(op, path, n);
  w->tmp = malloc(n + 64);
  w->cap = (size_t)1 << 20;
  w->buf = malloc(w->cap);
  if (!w->path || !w->tmp || !w->buf) {
    cmx__wr_abort(w);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  }
  /* The temporary lives in the target's directory so rename is atomic;
   * O_EXCL with a pid+counter name avoids clobbering anything. */
  for (int tries = 0; tries < 100; tries++) {
    snprintf(w->tmp, n + 64, "%s.tmp-%d-%u", path, (int)getpid(),
             atomic_fetch_add(&g_tmp_counter, 1));
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (w->fd >= 0 || errno != EEXIST) break;
  }
  if (w->fd < 0) {
    int e = errno;
    free(w->tmp);
    w->tmp = NULL;
    cmx__wr_abort(w);
    return cmx__error(CMX_ERR_IO, "[%s] Failed to open %s: %s", op, path,
                      strerror(e));
  }
  return CMX_OK;
}

static cmx_status write_all(cmx__wr* w, const uint8_t* p, size_t n) {
  while (n) {
    size_t want = n > (1u << 30) ? (1u << 30) : n;
    ssize_t r = write(w->fd, p, want);
    if (r < 0) {
      if (errno == EINTR) continue;
      return cmx__error(CMX_ERR_IO, "[%s] Failed to write %s: %s", w->op,
                        w->path, strerror(errno));
    }
    p += r;
    n -= (size_t)r;
  }
  return CMX_OK;
}

static cmx_status wr_flush(cmx__wr* w) {
  cmx_status st = write_all(w, w->buf, w->len);
  w->len = 0;
  return st;
}

cmx_status cmx__wr_write(cmx__wr* w, const void* p, size_t n) {
  if (w->len + n > w->cap) {
    cmx_status st = wr_flush(w);
    if (st != CMX_OK) return st;
  }
  if (n >= w->cap) {
    cmx_status st = write_all(w, p, n);
    if (st != CMX_OK) return st;
  } else if (n) {
    memcpy(w->buf + w->len, p, n);
    w->len += n;
  }
  w->pos += n;
  return CMX_OK;
}

cmx_status cmx__wr_pwrite(cmx__wr* w, const void* p, size_t n, uint64_t off) {
  cmx_status st = wr_flush(w);
  if (st != CMX_OK) return st;
  const uint8_t* b = p;
  while (n) {
    ssize_t r = pwrite(w->fd, b, n, (off_t)off);
    if (r < 0) {
      if (errno == EINTR) continue;
      return cmx__error(CMX_ERR_IO, "[%s] Failed to write %s: %s", w->op,
                        w->path, strerror(errno));
    }
    b += r;
    off += (uint64_t)r;
    n -= (size_t)r;
  }
  return CMX_OK;
}

cmx_status cmx__wr_commit(cmx__wr* w) {
  cmx_status st = wr_flush(w);
  if (st == CMX_OK) {
    int fd = w->fd;
    w->fd = -1;
    if (close(fd) != 0)
      st = cmx__error(CMX_ERR_IO, "[%s] Failed to write %s: %s", w->op, w->path,
                      strerror(errno));
  }
  if (st == CMX_OK && rename(w->tmp, w->path) != 0)
    st = cmx__error(CMX_ERR_IO, "[%s] Failed to write %s: %s", w->op, w->path,
                    strerror(errno));
  if (st == CMX_OK) {
    free(w->tmp);
    w->tmp = NULL;
  }
  cmx__wr_abort(w);
  return st;
}

void cmx__wr_abort(cmx__wr* w) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  if (w->tmp) unlink(w->tmp);
  free(w->tmp);
  free(w->path);
  free(w->buf);
  w->tmp = w->path = NULL;
  w->buf = NULL;
}

/* ---------------- paths and strings ---------------- */

char* cmx__strndup(const char* op, const char* s, size_t n) {
  char* r = malloc(n + 1);
  if (!r) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  if (n) memcpy(r, s, n);
  r[n] = 0;
  return r;
}

char* cmx__path_with_ext(const char* op, const char* path, const char* ext) {
  if (!path) return CMX__FAIL(CMX_ERR_VALUE, "[%s] path is NULL", op);
  size_t n = strlen(path), e = strlen(ext);
  bool has = n >= e && memcmp(path + n - e, ext, e) == 0;
  char* r = malloc(n + e + 1);
  if (!r) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  memcpy(r, path, n);
  if (!has) memcpy(r + n, ext, e);
  r[n + (has ? 0 : e)] = 0;
  return r;
}

/* ---------------- arrays ---------------- */

cmx_status cmx__eval_for_save(const char* op, const cmx_array* arrays,
                              size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!arrays[i])
      return cmx__error(CMX_ERR_VALUE, "[%s] array %zu is NULL", op, i);
  if (!n) return CMX_OK;
  cmx_status st = cmx_eval(arrays, n);
  if (st != CMX_OK) return st;
  for (size_t i = 0; i < n; i++) {
    void* p;
    st = cmx__node_host(arrays[i], &p);
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}

bool cmx__array_col_only(cmx_array a) {
  return !(a->flags & CMX__FLAG_ROW_CONTIG) &&
         (a->flags & CMX__FLAG_COL_CONTIG);
}

/* Gathers a strided array in row-major order through a bounce buffer:
 * dims of size 1 are dropped and mergeable neighbours collapsed, then each
 * innermost row is copied (memcpy when it is contiguous). */
static cmx_status gather(cmx_array a, const char* base, cmx__sink_fn sink,
                         void* ctx) {
  size_t isz = cmx_dtype_size(a->dtype);
  int64_t sh[CMX_MAX_NDIM], st[CMX_MAX_NDIM];
  int nd = 0;
  for (int i = 0; i < a->ndim; i++) {
    if (a->dims[i] == 1) continue;
    int64_t s = CMX__STRIDES(a)[i];
    if (nd && st[nd - 1] == s * a->dims[i]) {
      sh[nd - 1] *= a->dims[i];
      st[nd - 1] = s;
    } else {
      sh[nd] = a->dims[i];
      st[nd] = s;
      nd++;
    }
  }
  if (nd == 0) return sink(ctx, base, isz);
  size_t cap = (size_t)1 << 20;
  uint8_t* buf = malloc(cap);
  if (!buf) return cmx__error(CMX_ERR_MEMORY, "[save] out of host memory");
  int64_t inner = sh[nd - 1], ist = st[nd - 1];
  int64_t rows = a->size / inner, idx[CMX_MAX_NDIM] = {0}, off = 0;
  size_t len = 0;
  cmx_status status = CMX_OK;
  for (int64_t r = 0; r < rows && status == CMX_OK; r++) {
    const char* row = base + off * (int64_t)isz;
    for (int64_t j = 0; j < inner && status == CMX_OK;) {
      if (len == cap) {
        status = sink(ctx, buf, len);
        len = 0;
        continue;
      }
      if (ist == 1) {
        int64_t take = (int64_t)((cap - len) / isz);
        if (take > inner - j) take = inner - j;
        if (take == 0) { /* cap is a multiple of every isz; never */
          status = sink(ctx, buf, len);
          len = 0;
          continue;
        }
        memcpy(buf + len, row + j * (int64_t)isz, (size_t)take * isz);
        len += (size_t)take * isz;
        j += take;
      } else {
        memcpy(buf + len, row + j * ist * (int64_t)isz, isz);
        len += isz;
        j++;
      }
    }
    for (int d = nd - 2; d >= 0; d--) { /* next row */
      if (++idx[d] < sh[d]) {
        off += st[d];
        break;
      }
      off -= (sh[d] - 1) * st[d];
      idx[d] = 0;
    }
  }
  if (status == CMX_OK && len) status = sink(ctx, buf, len);
  free(buf);
  return status;
}

cmx_status cmx__array_bytes(cmx_array a, bool as_col, cmx__sink_fn sink,
                            void* ctx) {
  void* p;
  cmx_status st = cmx__node_host(a, &p);
  if (st != CMX_OK) return st;
  if (a->size == 0) return CMX_OK;
  size_t nbytes = (size_t)a->size * cmx_dtype_size(a->dtype);
  if (as_col || (a->flags & CMX__FLAG_ROW_CONTIG)) return sink(ctx, p, nbytes);
  return gather(a, p, sink, ctx);
}

cmx_array cmx__io_read_array(const cmx__src* s, uint64_t off,
                             const int64_t* shape, int ndim, cmx_dtype dt,
                             const char* what) {
  if (!s->file) {
    cmx_array a = cmx__io_new_array(s->op, shape, ndim, dt);
    if (a && cmx__src_read(s, cmx__io_data(a), cmx_array_nbytes(a), off,
                           what) != CMX_OK) {
      cmx_array_release(a);
      a = NULL;
    }
    return a;
  }
  cmx__load_params q;
  memset(&q, 0, sizeof q);
  q.file = cmx__file_retain(s->file);
  q.offset = off;
  q.ndim = ndim;
  memcpy(q.shape, shape, (size_t)ndim * sizeof *shape);
  cmx_primitive* p = cmx_primitive_new(&cmx__vt_Load, &q, sizeof q, s->stream);
  if (!p) {
    cmx__file_release(q.file);
    return NULL;
  }
  cmx_array out = NULL;
  return cmx_primitive_apply(&out, 1, p, NULL, 0, &shape, &ndim, &dt) == CMX_OK
             ? out
             : NULL;
}

cmx_array cmx__io_new_array(const char* op, const int64_t* shape, int ndim,
                            cmx_dtype dt) {
  /* Strides are products of the dims (zeros counted as 1), so they must fit
   * even when a zero dim makes the array empty (numpy refuses such shapes
   * as "too big" as well). */
  int64_t span = 1;
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0 ||
        __builtin_mul_overflow(span, shape[i] > 0 ? shape[i] : 1, &span))
      return CMX__FAIL(CMX_ERR_VALUE, "[%s] array shape is too large", op);
  cmx_array a = cmx__node_new(op, shape, ndim, dt);
  if (!a) return NULL;
  size_t bytes = (size_t)a->size * cmx_dtype_size(dt);
  a->buf = cmx__buffer_alloc(bytes);
  if (!a->buf) {
    cmx_array_release(a);
    return NULL;
  }
  /* The loader writes every byte of a fresh buffer once: with 4 KiB pages
   * the page faults cost more than the copy from the page cache, so ask
   * for transparent huge pages on the 2 MiB-aligned interior (a hint; the
   * kernel may ignore it). */
  if (bytes >= ((size_t)8 << 20)) {
    uintptr_t lo = ((uintptr_t)a->buf->host + ((1u << 21) - 1)) &
                   ~(uintptr_t)((1u << 21) - 1);
    uintptr_t hi =
        ((uintptr_t)a->buf->host + bytes) & ~(uintptr_t)((1u << 21) - 1);
    if (hi > lo) madvise((void*)lo, hi - lo, MADV_HUGEPAGE);
  }
  return a;
}

void cmx__byteswap(void* p, int64_t count, cmx_dtype dt) {
  size_t isz = cmx_dtype_size(dt);
  if (dt == CMX_COMPLEX64) {
    isz = 4;
    count *= 2;
  }
  if (isz == 2) {
    uint16_t* q = p;
    for (int64_t i = 0; i < count; i++) q[i] = __builtin_bswap16(q[i]);
  } else if (isz == 4) {
    uint32_t* q = p;
    for (int64_t i = 0; i < count; i++) q[i] = __builtin_bswap32(q[i]);
  } else if (isz == 8) {
    uint64_t* q = p;
    for (int64_t i = 0; i < count; i++) q[i] = __builtin_bswap64(q[i]);
  }
}

/* ---------------- CRC-32 ---------------- */

#ifdef CMX_HAVE_ZLIB
#define CRC_PART ((size_t)8 << 20)
typedef struct {
  const uint8_t* p;
  size_t n;
  uint32_t* parts;
} crc_job;

static void crc_range(void* ctx, int64_t b, int64_t e) {
  crc_job* j = ctx;
  for (int64_t i = b; i < e; i++) {
    size_t start = (size_t)i * CRC_PART;
    size_t len = j->n - start < CRC_PART ? j->n - start : CRC_PART;
    j->parts[i] = (uint32_t)crc32_z(0, j->p + start, len);
  }
}

uint32_t cmx__crc32(uint32_t crc, const void* p, size_t n) {
  size_t nparts = (n + CRC_PART - 1) / CRC_PART;
  uint32_t* parts = nparts >= 4 ? malloc(nparts * sizeof *parts) : NULL;
  if (!parts) return (uint32_t)crc32_z(crc, p, n);
  crc_job j = {p, n, parts};
  cmx__parallel_for((int64_t)nparts, 1, crc_range, &j);
  for (size_t i = 0; i < nparts; i++) {
    size_t len = n - i * CRC_PART < CRC_PART ? n - i * CRC_PART : CRC_PART;
    crc = (uint32_t)crc32_combine(crc, parts[i], (z_off_t)len);
  }
  free(parts);
  return crc;
}
#else
/* Table-driven CRC-32 (the zip polynomial) for builds without zlib. */
static uint32_t g_crc_table[256];
static pthread_once_t g_crc_once = PTHREAD_ONCE_INIT;
static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    g_crc_table[i] = c;
  }
}
uint32_t cmx__crc32(uint32_t crc, const void* p, size_t n) {
  pthread_once(&g_crc_once, crc_init);
  const uint8_t* b = p;
  crc = ~crc;
  for (size_t i = 0; i < n; i++)
    crc = g_crc_table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}
#endif
