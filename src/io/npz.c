/* The .npz format: a zip archive of .npy members ("name.npy"), stored or
 * deflated (numpy.savez / savez_compressed). The reader trusts only the
 * central directory (numpy writes sizes as zip64 placeholders in local
 * headers), supports zip64, inflates each member straight into its
 * array's buffer and checks every member's CRC-32. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/io_common.h"
#ifdef CMX_HAVE_ZLIB
#include <zlib.h>
#endif

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u
#define U32_MAX 0xFFFFFFFFu
/* Deflate never expands data by more than ~1032x; a larger claimed ratio is
 * a zip bomb or a lie, refused before allocating. */
#define MAX_RATIO 1032u

static const char* OP = "load_npz";

/* ---------------- member streams ---------------- */

typedef struct member {
  const cmx__src* src;
  const char* name;
  uint64_t pos, end; /* compressed bytes still to read: [pos, end) */
  uint32_t crc;
  int method;
#ifdef CMX_HAVE_ZLIB
  z_stream z;
  bool z_init, z_done;
  uint8_t* in;
#endif
} member;

static cmx_status stored_read(member* m, void* dst, uint64_t n,
                              const char* what) {
  if (n > m->end - m->pos)
    return cmx__error(CMX_ERR_VALUE, "[%s] member '%s' is truncated", OP,
                      m->name);
  cmx_status st = cmx__src_read(m->src, dst, n, m->pos, what);
  if (st != CMX_OK) return st;
  m->pos += n;
  m->crc = cmx__crc32(m->crc, dst, (size_t)n);
  return CMX_OK;
}

#ifdef CMX_HAVE_ZLIB
#define IN_CHUNK ((size_t)1 << 18)
/* Inflates until n bytes came out; *ended tells if the stream finished. */
static cmx_status inflate_some(member* m, uint8_t* dst, uint64_t n,
                               uint64_t* got) {
  *got = 0;
  while (*got < n) {
    if (m->z_done) return CMX_OK;
    if (m->z.avail_in == 0) {
      uint64_t len = m->end - m->pos;
      if (len == 0)
        return cmx__error(CMX_ERR_VALUE,
                          "[%s] member '%s': compressed data is truncated", OP,
                          m->name);
      if (len > IN_CHUNK) len = IN_CHUNK;
      cmx_status st =
          cmx__src_read(m->src, m->in, len, m->pos, "compressed member data");
      if (st != CMX_OK) return st;
      m->pos += len;
      m->z.next_in = m->in;
      m->z.avail_in = (uInt)len;
    }
    uint64_t want = n - *got;
    if (want > (1u << 30)) want = 1u << 30;
    m->z.next_out = dst + *got;
    m->z.avail_out = (uInt)want;
    int r = inflate(&m->z, Z_NO_FLUSH);
    *got += want - m->z.avail_out;
    if (r == Z_STREAM_END)
      m->z_done = true;
    else if (r != Z_OK && !(r == Z_BUF_ERROR && m->z.avail_in == 0))
      return cmx__error(CMX_ERR_VALUE,
                        "[%s] member '%s': corrupt deflate data (%s)", OP,
                        m->name, m->z.msg ? m->z.msg : "inflate failed");
  }
  return CMX_OK;
}

static cmx_status inflate_read(member* m, void* dst, uint64_t n,
                               const char* what) {
  (void)what;
  uint64_t got;
  cmx_status st = inflate_some(m, dst, n, &got);
  if (st != CMX_OK) return st;
  if (got < n)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] member '%s' decompresses to fewer bytes than its "
                      "size",
                      OP, m->name);
  m->crc = cmx__crc32(m->crc, dst, (size_t)n);
  return CMX_OK;
}
#endif

static cmx_status member_read(void* ctx, void* dst, uint64_t n,
                              const char* what) {
  member* m = ctx;
#ifdef CMX_HAVE_ZLIB
  if (m->method == 8) return inflate_read(m, dst, n, what);
#endif
  return stored_read(m, dst, n, what);
}

/* ---------------- central directory ---------------- */

typedef struct entry {
  char* name;
  uint32_t crc;
  uint64_t csize, usize, local;
  uint16_t flags, method;
} entry;

/* Reads the zip64 extra field (id 1) for the saturated fields. */
static bool zip64_extra(const uint8_t* x, size_t xlen, entry* e, bool need_u,
                        bool need_c, bool need_off) {
  for (size_t i = 0; i + 4 <= xlen;) {
    uint16_t id = cmx__le16(x + i), sz = cmx__le16(x + i + 2);
    if (i + 4 + sz > xlen) return false;
    if (id == 1) {
      const uint8_t* p = x + i + 4;
      size_t k = 0;
      if (need_u) {
        if (k + 8 > sz) return false;
        e->usize = cmx__le64(p + k), k += 8;
      }
      if (need_c) {
        if (k + 8 > sz) return false;
        e->csize = cmx__le64(p + k), k += 8;
      }
      if (need_off) {
        if (k + 8 > sz) return false;
        e->local = cmx__le64(p + k);
      }
      return true;
    }
    i += 4 + (size_t)sz;
  }
  return !need_u && !need_c && !need_off;
}

typedef struct {
  uint64_t entries, cd_size, cd_off;
} dir_info;

static cmx_status find_directory(const cmx__src* s, dir_info* d) {
  uint64_t tail = s->size < 22 + 65535 ? s->size : 22 + 65535;
  if (s->size < 22)
    return cmx__error(CMX_ERR_VALUE, "[%s] not a zip file (too short)", OP);
  uint8_t* buf = malloc((size_t)tail);
  if (!buf) return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  uint64_t base = s->size - tail;
  cmx_status st = cmx__src_read(s, buf, tail, base, "zip directory");
  int64_t at = -1;
  for (int64_t i = (int64_t)tail - 22; st == CMX_OK && i >= 0; i--)
    if (cmx__le32(buf + i) == SIG_EOCD &&
        (uint64_t)i + 22 + cmx__le16(buf + i + 20) <= tail) {
      at = i;
      break;
    }
  if (st == CMX_OK && at < 0)
    st = cmx__error(CMX_ERR_VALUE,
                    "[%s] not a zip file (no end of central directory)", OP);
  if (st != CMX_OK) {
    free(buf);
    return st;
  }
  const uint8_t* e = buf + at;
  bool multi = cmx__le16(e + 4) != 0 || cmx__le16(e + 6) != 0;
  d->entries = cmx__le16(e + 10);
  d->cd_size = cmx__le32(e + 12);
  d->cd_off = cmx__le32(e + 16);
  bool z64 = at >= 20 && cmx__le32(e - 20) == SIG_LOC64;
  uint64_t loc64 = z64 ? cmx__le64(e - 20 + 8) : 0;
  free(buf);
  if (multi)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] multi-disk zip archives are not supported", OP);
  if (z64) {
    uint8_t r[56];
    st = cmx__src_read(s, r, sizeof r, loc64, "zip64 directory record");
    if (st != CMX_OK) return st;
    if (cmx__le32(r) != SIG_EOCD64)
      return cmx__error(CMX_ERR_VALUE, "[%s] bad zip64 directory record", OP);
    d->entries = cmx__le64(r + 32);
    d->cd_size = cmx__le64(r + 40);
    d->cd_off = cmx__le64(r + 48);
  }
  uint64_t end;
  if (__builtin_add_overflow(d->cd_off, d->cd_size, &end) || end > s->size)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] zip central directory lies outside the file", OP);
  if (d->entries > d->cd_size / 46)
    return cmx__error(
        CMX_ERR_VALUE, "[%s] zip directory claims %llu entries in %llu bytes",
        OP, (unsigned long long)d->entries, (unsigned long long)d->cd_size);
  return CMX_OK;
}

static void free_entries(entry* es, size_t n) {
  for (size_t i = 0; i < n; i++) free(es[i].name);
  free(es);
}

/* Parses the central directory into entries (count d->entries). */
static cmx_status read_entries(const cmx__src* s, const dir_info* d,
                               entry** out) {
  uint8_t* cd = malloc((size_t)d->cd_size + 1);
  entry* es = calloc((size_t)d->entries + 1, sizeof *es);
  if (!cd || !es) {
    free(cd);
    free(es);
    return cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  }
  cmx_status st = cmx__src_read(s, cd, d->cd_size, d->cd_off, "zip directory");
  size_t p = 0, i = 0;
  for (; st == CMX_OK && i < d->entries; i++) {
    if (d->cd_size - p < 46 || cmx__le32(cd + p) != SIG_CENTRAL) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] corrupt zip directory entry %zu", OP,
                      i);
      break;
    }
    const uint8_t* h = cd + p;
    entry* e = &es[i];
    e->flags = cmx__le16(h + 8);
    e->method = cmx__le16(h + 10);
    e->crc = cmx__le32(h + 16);
    e->csize = cmx__le32(h + 20);
    e->usize = cmx__le32(h + 24);
    size_t nlen = cmx__le16(h + 28), xlen = cmx__le16(h + 30),
           clen = cmx__le16(h + 32);
    e->local = cmx__le32(h + 42);
    if (d->cd_size - p - 46 < nlen + xlen + clen) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] corrupt zip directory entry %zu", OP,
                      i);
      break;
    }
    if (memchr(h + 46, 0, nlen)) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] zip member name contains NUL", OP);
      break;
    }
    e->name = cmx__strndup(OP, (const char*)h + 46, nlen);
    if (!e->name) {
      st = CMX_ERR_MEMORY;
      break;
    }
    if (!zip64_extra(h + 46 + nlen, xlen, e, e->usize == U32_MAX,
                     e->csize == U32_MAX, e->local == U32_MAX))
      st = cmx__error(CMX_ERR_VALUE, "[%s] bad zip64 field for member '%s'", OP,
                      e->name);
    p += 46 + nlen + xlen + clen;
  }
  free(cd);
  if (st != CMX_OK) {
    free_entries(es, i + 1);
    return st;
  }
  *out = es;
  return CMX_OK;
}

/* ---------------- loading ---------------- */

/* Re-raises the current error with the member name appended. */
static void tag_error(const char* name) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", cmx_last_error());
  cmx__error(cmx_last_status(), "%s (member '%s')", msg, name);
}

/* Loads one member as an array (owned), verifying size and CRC. */
static cmx_array load_member(const cmx__src* s, const entry* e) {
  if (e->flags & 1)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] member '%s' is encrypted", OP,
                     e->name);
  if (e->method != 0 && e->method != 8)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] member '%s' uses unsupported compression method %u",
                     OP, e->name, e->method);
#ifndef CMX_HAVE_ZLIB
  if (e->method == 8)
    return CMX__FAIL(CMX_ERR_NOT_IMPLEMENTED,
                     "[%s] built without zlib: cannot read compressed member "
                     "'%s'",
                     OP, e->name);
#endif
  uint8_t lh[30] = {0};
  if (cmx__src_read(s, lh, 30, e->local, "zip local header") != CMX_OK)
    return NULL;
  if (cmx__le32(lh) != SIG_LOCAL)
    return CMX__FAIL(CMX_ERR_VALUE, "[%s] bad local header for member '%s'", OP,
                     e->name);
  uint64_t data = e->local + 30 + cmx__le16(lh + 26) + cmx__le16(lh + 28), end;
  if (__builtin_add_overflow(data, e->csize, &end) || end > s->size)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] file is truncated: member '%s' extends past the "
                     "end of the file",
                     OP, e->name);
  if (e->method == 0 && e->csize != e->usize)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] stored member '%s' has different sizes", OP,
                     e->name);
  if (e->method == 8 && e->usize / MAX_RATIO > e->csize + 64)
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] member '%s' claims an impossible compression ratio",
                     OP, e->name);
  member m;
  memset(&m, 0, sizeof m);
  m.src = s;
  m.name = e->name;
  m.pos = data;
  m.end = end;
  m.method = e->method;
#ifdef CMX_HAVE_ZLIB
  if (m.method == 8) {
    m.in = malloc(IN_CHUNK);
    if (!m.in || inflateInit2(&m.z, -15) != Z_OK) {
      free(m.in);
      return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
    }
    m.z_init = true;
  }
#endif
  cmx__npy_in in = {member_read, &m, e->usize, OP, NULL, NULL};
  cmx_array a = cmx__npy_read(&in);
  /* Bytes after the array (none from numpy) still count for the CRC. */
  uint8_t scratch[4096];
  while (a && in.avail) {
    uint64_t n = in.avail < sizeof scratch ? in.avail : sizeof scratch;
    if (member_read(&m, scratch, n, "member data") != CMX_OK) {
      cmx_array_release(a);
      a = NULL;
    }
    in.avail -= n;
  }
#ifdef CMX_HAVE_ZLIB
  if (a && m.method == 8 && !m.z_done) { /* the stream must end here */
    uint64_t got;
    if (inflate_some(&m, scratch, 1, &got) != CMX_OK || got || !m.z_done) {
      if (got || m.z_done)
        cmx__error(CMX_ERR_VALUE,
                   "[%s] member '%s' decompresses to more bytes than its size",
                   OP, e->name);
      cmx_array_release(a);
      a = NULL;
    }
  }
  if (m.z_init) inflateEnd(&m.z);
  free(m.in);
#endif
  if (a && m.crc != e->crc) {
    cmx_array_release(a);
    return CMX__FAIL(CMX_ERR_VALUE,
                     "[%s] CRC-32 mismatch in member '%s' (corrupt file)", OP,
                     e->name);
  }
  if (!a && !strstr(cmx_last_error(), "(member")) tag_error(e->name);
  return a;
}

cmx_named_arrays* cmx__load_npz_src(const cmx__src* s) {
  dir_info d = {0, 0, 0};
  entry* es = NULL;
  if (find_directory(s, &d) != CMX_OK || read_entries(s, &d, &es) != CMX_OK)
    return NULL;
  cmx_named_arrays* out = NULL;
  cmx_status st = cmx_named_arrays_new(&out);
  for (uint64_t i = 0; st == CMX_OK && i < d.entries; i++) {
    size_t n = strlen(es[i].name); /* MLX drops a trailing ".npy" */
    if (n > 4 && strcmp(es[i].name + n - 4, ".npy") == 0) n -= 4;
    char* key = cmx__strndup(OP, es[i].name, n);
    if (!key) {
      st = CMX_ERR_MEMORY;
      break;
    }
    if (cmx__named_arrays_find(out, key) >= 0) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] duplicate member '%s'", OP,
                      es[i].name);
    } else {
      cmx_array a = load_member(s, &es[i]);
      st = a ? cmx__named_arrays_push(out, key, a) : cmx_last_status();
      cmx_array_release(a);
    }
    free(key);
  }
  free_entries(es, (size_t)d.entries);
  if (st != CMX_OK) {
    cmx_named_arrays_free(out);
    return NULL;
  }
  return out;
}

/* ---------------- writing ---------------- */

typedef struct wentry {
  char* name; /* member name with ".npy" */
  uint32_t crc;
  uint64_t csize, usize, local;
  bool z64;
  uint16_t method;
} wentry;

typedef struct zsink {
  cmx__wr* w;
  uint32_t crc;
  uint64_t csize;
  bool deflate;
#ifdef CMX_HAVE_ZLIB
  z_stream z;
  uint8_t* out;
#endif
} zsink;

#define OUT_CHUNK ((size_t)1 << 18)

static cmx_status zsink_fn(void* ctx, const void* p, size_t n) {
  zsink* z = ctx;
  z->crc = cmx__crc32(z->crc, p, n);
  if (!z->deflate) {
    z->csize += n;
    return cmx__wr_write(z->w, p, n);
  }
#ifdef CMX_HAVE_ZLIB
  const uint8_t* b = p;
  while (n) {
    size_t piece = n > (1u << 30) ? (1u << 30) : n;
    z->z.next_in = (Bytef*)b;
    z->z.avail_in = (uInt)piece;
    do {
      z->z.next_out = z->out;
      z->z.avail_out = (uInt)OUT_CHUNK;
      deflate(&z->z, Z_NO_FLUSH);
      size_t have = OUT_CHUNK - z->z.avail_out;
      z->csize += have;
      cmx_status st = cmx__wr_write(z->w, z->out, have);
      if (st != CMX_OK) return st;
    } while (z->z.avail_out == 0);
    b += piece;
    n -= piece;
  }
#endif
  return CMX_OK;
}

#ifdef CMX_HAVE_ZLIB
static cmx_status zsink_finish(zsink* z) {
  int r;
  do {
    z->z.next_out = z->out;
    z->z.avail_out = (uInt)OUT_CHUNK;
    r = deflate(&z->z, Z_FINISH);
    size_t have = OUT_CHUNK - z->z.avail_out;
    z->csize += have;
    cmx_status st = cmx__wr_write(z->w, z->out, have);
    if (st != CMX_OK) return st;
  } while (r == Z_OK);
  return r == Z_STREAM_END
             ? CMX_OK
             : cmx__error(CMX_ERR_RUNTIME, "[savez] deflate failed");
}
#endif

static bool non_ascii(const char* s) {
  for (; *s; s++)
    if ((uint8_t)*s >= 0x80) return true;
  return false;
}

/* Writes one member: local header, data (npy header + array), then patches
 * the CRC and compressed size into the local header. */
static cmx_status write_member(cmx__wr* w, wentry* e, cmx_array a, bool deflate,
                               const char* op) {
  bool col = cmx__array_col_only(a);
  uint8_t* hdr;
  size_t hlen;
  cmx_status st =
      cmx__npy_header(op, a->dtype, a->dims, a->ndim, col, &hdr, &hlen);
  if (st != CMX_OK) return st;
  e->usize = hlen + (uint64_t)a->size * cmx_dtype_size(a->dtype);
  e->local = w->pos;
  e->method = deflate ? 8 : 0;
  /* zip64 sizes when the member may reach 4 GiB (with room for deflate's
   * worst-case growth). */
  e->z64 = e->usize > 0xFF000000u;
  size_t nlen = strlen(e->name);
  uint8_t lh[30 + 20];
  cmx__put32(lh, SIG_LOCAL);
  cmx__put16(lh + 4, e->z64 ? 45 : 20);
  cmx__put16(lh + 6, non_ascii(e->name) ? 0x800 : 0);
  cmx__put16(lh + 8, deflate ? 8 : 0);
  cmx__put16(lh + 10, 0);    /* time 00:00 */
  cmx__put16(lh + 12, 0x21); /* date 1980-01-01 */
  cmx__put32(lh + 14, 0);    /* crc, patched */
  cmx__put32(lh + 18, e->z64 ? U32_MAX : 0);
  cmx__put32(lh + 22, e->z64 ? U32_MAX : (uint32_t)e->usize);
  cmx__put16(lh + 26, (uint16_t)nlen);
  cmx__put16(lh + 28, e->z64 ? 20 : 0);
  st = cmx__wr_write(w, lh, 30);
  if (st == CMX_OK) st = cmx__wr_write(w, e->name, nlen);
  if (st == CMX_OK && e->z64) {
    uint8_t x[20];
    cmx__put16(x, 1);
    cmx__put16(x + 2, 16);
    cmx__put64(x + 4, e->usize);
    cmx__put64(x + 12, 0);
    st = cmx__wr_write(w, x, 20);
  }
  zsink z;
  memset(&z, 0, sizeof z);
  z.w = w;
  z.deflate = deflate;
#ifdef CMX_HAVE_ZLIB
  bool zinit = false;
  if (st == CMX_OK && deflate) {
    z.out = malloc(OUT_CHUNK);
    if (!z.out || deflateInit2(&z.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8,
                               Z_DEFAULT_STRATEGY) != Z_OK)
      st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
    else
      zinit = true;
  }
#endif
  if (st == CMX_OK) st = zsink_fn(&z, hdr, hlen);
  if (st == CMX_OK) st = cmx__array_bytes(a, col, zsink_fn, &z);
#ifdef CMX_HAVE_ZLIB
  if (st == CMX_OK && deflate) st = zsink_finish(&z);
  if (zinit) deflateEnd(&z.z);
  free(z.out);
#endif
  free(hdr);
  if (st != CMX_OK) return st;
  e->crc = z.crc;
  e->csize = z.csize;
  if (!e->z64 && e->csize >= U32_MAX)
    return cmx__error(CMX_ERR_VALUE, "[%s] member '%s' grew past 4 GiB", op,
                      e->name);
  uint8_t patch[8];
  cmx__put32(patch, e->crc);
  cmx__put32(patch + 4, e->z64 ? U32_MAX : (uint32_t)e->csize);
  st = cmx__wr_pwrite(w, patch, 8, e->local + 14);
  if (st == CMX_OK && e->z64) {
    cmx__put64(patch, e->csize);
    st = cmx__wr_pwrite(w, patch, 8, e->local + 30 + nlen + 12);
  }
  return st;
}

static cmx_status write_directory(cmx__wr* w, const wentry* es, size_t n) {
  uint64_t cd_off = w->pos;
  cmx_status st = CMX_OK;
  for (size_t i = 0; st == CMX_OK && i < n; i++) {
    const wentry* e = &es[i];
    bool bu = e->usize >= U32_MAX || e->z64, bc = e->csize >= U32_MAX || e->z64,
         bo = e->local >= U32_MAX;
    uint8_t h[46], x[28];
    size_t nlen = strlen(e->name), xlen = 0;
    if (bu || bc || bo) {
      xlen = 4;
      if (bu) cmx__put64(x + xlen, e->usize), xlen += 8;
      if (bc) cmx__put64(x + xlen, e->csize), xlen += 8;
      if (bo) cmx__put64(x + xlen, e->local), xlen += 8;
      cmx__put16(x, 1);
      cmx__put16(x + 2, (uint16_t)(xlen - 4));
    }
    bool z64 = xlen > 0;
    cmx__put32(h, SIG_CENTRAL);
    cmx__put16(h + 4, 0x0300 | (z64 ? 45 : 20)); /* made by unix */
    cmx__put16(h + 6, z64 ? 45 : 20);
    cmx__put16(h + 8, non_ascii(e->name) ? 0x800 : 0);
    cmx__put16(h + 10, e->method);
    cmx__put16(h + 12, 0);
    cmx__put16(h + 14, 0x21);
    cmx__put32(h + 16, e->crc);
    cmx__put32(h + 20, bc ? U32_MAX : (uint32_t)e->csize);
    cmx__put32(h + 24, bu ? U32_MAX : (uint32_t)e->usize);
    cmx__put16(h + 28, (uint16_t)nlen);
    cmx__put16(h + 30, (uint16_t)xlen);
    cmx__put16(h + 32, 0);
    cmx__put16(h + 34, 0);
    cmx__put16(h + 36, 0);
    cmx__put32(h + 38, 0644u << 16); /* unix permissions rw-r--r-- */
    cmx__put32(h + 42, bo ? U32_MAX : (uint32_t)e->local);
    st = cmx__wr_write(w, h, 46);
    if (st == CMX_OK) st = cmx__wr_write(w, e->name, nlen);
    if (st == CMX_OK && xlen) st = cmx__wr_write(w, x, xlen);
  }
  if (st != CMX_OK) return st;
  uint64_t cd_size = w->pos - cd_off;
  bool z64 = n >= 0xFFFF || cd_size >= U32_MAX || cd_off >= U32_MAX;
  if (z64) {
    uint8_t r[56 + 20];
    uint64_t at = w->pos;
    cmx__put32(r, SIG_EOCD64);
    cmx__put64(r + 4, 44);
    cmx__put16(r + 12, 0x0300 | 45);
    cmx__put16(r + 14, 45);
    cmx__put32(r + 16, 0);
    cmx__put32(r + 20, 0);
    cmx__put64(r + 24, n);
    cmx__put64(r + 32, n);
    cmx__put64(r + 40, cd_size);
    cmx__put64(r + 48, cd_off);
    cmx__put32(r + 56, SIG_LOC64);
    cmx__put32(r + 60, 0);
    cmx__put64(r + 64, at);
    cmx__put32(r + 72, 1);
    st = cmx__wr_write(w, r, sizeof r);
  }
  uint8_t e[22];
  uint16_t n16 = n >= 0xFFFF ? 0xFFFF : (uint16_t)n;
  cmx__put32(e, SIG_EOCD);
  cmx__put16(e + 4, 0);
  cmx__put16(e + 6, 0);
  cmx__put16(e + 8, n16);
  cmx__put16(e + 10, n16);
  cmx__put32(e + 12, cd_size >= U32_MAX ? U32_MAX : (uint32_t)cd_size);
  cmx__put32(e + 16, cd_off >= U32_MAX ? U32_MAX : (uint32_t)cd_off);
  cmx__put16(e + 20, 0);
  if (st == CMX_OK) st = cmx__wr_write(w, e, 22);
  return st;
}

static cmx_status savez_impl(const char* op, const char* path,
                             const cmx_named_arrays* arrays, bool deflate) {
#ifndef CMX_HAVE_ZLIB
  if (deflate)
    return cmx__error(CMX_ERR_NOT_IMPLEMENTED, "[%s] built without zlib", op);
#endif
  if (!arrays) return cmx__error(CMX_ERR_VALUE, "[%s] arrays is NULL", op);
  size_t n = cmx_named_arrays_size(arrays);
  cmx_array* list = malloc((n + 1) * sizeof *list);
  wentry* es = calloc(n + 1, sizeof *es);
  char* file = cmx__path_with_ext(op, path, ".npz");
  cmx_status st = CMX_OK;
  if (!list || !es)
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
  else if (!file)
    st = cmx_last_status();
  for (size_t i = 0; st == CMX_OK && i < n; i++) {
    list[i] = cmx_named_arrays_at(arrays, i);
    const char* name = cmx_named_arrays_name(arrays, i);
    size_t len = strlen(name);
    if (len > 0xFFFF - 4) {
      st = cmx__error(CMX_ERR_VALUE, "[%s] name '%.40s...' is too long", op,
                      name);
      break;
    }
    es[i].name = malloc(len + 5);
    if (!es[i].name) {
      st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", op);
      break;
    }
    memcpy(es[i].name, name, len);
    memcpy(es[i].name + len, ".npy", 5);
  }
  if (st == CMX_OK) st = cmx__eval_for_save(op, list, n);
  cmx__wr w;
  if (st == CMX_OK) {
    st = cmx__wr_open(&w, op, file);
    for (size_t i = 0; st == CMX_OK && i < n; i++)
      st = write_member(&w, &es[i], list[i], deflate, op);
    if (st == CMX_OK) st = write_directory(&w, es, n);
    if (st == CMX_OK) st = cmx__wr_commit(&w);
    cmx__wr_abort(&w); /* no-op after commit or a failed open */
  }
  for (size_t i = 0; es && i < n; i++) free(es[i].name);
  free(es);
  free(list);
  free(file);
  return st;
}

cmx_status cmx_savez(const char* path, const cmx_named_arrays* arrays) {
  return savez_impl("savez", path, arrays, false);
}

cmx_status cmx_savez_compressed(const char* path,
                                const cmx_named_arrays* arrays) {
  return savez_impl("savez_compressed", path, arrays, true);
}
