/* Internal plumbing shared by the file formats: byte sources with bounds
 * checks (files read with pread, or memory), a buffered sequential reader,
 * an atomic file writer (temp file + rename), row-major array byte
 * streaming, CRC-32, byte swapping and the containers' internals. */
#ifndef CMX_IO_COMMON_H
#define CMX_IO_COMMON_H

#include <stdint.h>

#include "cmx/io.h"
#include "core/internal.h"

/* ---------------- byte sources ---------------- */
/* A file or a memory block. Every read is bounds checked against size. */
typedef struct cmx__src {
  int fd;             /* -1 for memory */
  const uint8_t* mem; /* memory source */
  uint64_t size;      /* bytes in the source */
  const char* op;     /* op name for messages ("load_gguf") */
  /* A file source: the shared handle lazy arrays read from (owns fd). */
  struct cmx__file* file;
  cmx_stream stream; /* where lazy arrays are read (a cpu stream) */
} cmx__src;

/* Opens path for reading. CMX_ERR_IO "[op] Failed to open <path>: <why>"
 * (also for directories). */
cmx_status cmx__src_open(cmx__src* s, const char* op, const char* path);
/* A source over memory (not copied; must outlive s). */
void cmx__src_mem(cmx__src* s, const char* op, const void* data, uint64_t size);
void cmx__src_close(cmx__src* s);
/* Reads n bytes at off into dst. When [off, off + n) is not inside the
 * source fails with CMX_ERR_VALUE "[op] file is truncated: <what> needs
 * bytes [off, off+n) but the file has <size> bytes"; read errors are
 * CMX_ERR_IO. Large file reads run in parallel chunks. */
cmx_status cmx__src_read(const cmx__src* s, void* dst, uint64_t n, uint64_t off,
                         const char* what);

/* ---------------- sequential reader ---------------- */
/* Buffered sequential reads from a source (for headers made of many small
 * fields). */
typedef struct cmx__rd {
  const cmx__src* src;
  uint64_t pos;     /* next byte to hand out */
  uint64_t buf_off; /* source offset of buf[0] */
  size_t buf_len;   /* valid bytes in buf */
  uint8_t buf[1 << 16];
} cmx__rd;

void cmx__rd_init(cmx__rd* r, const cmx__src* src, uint64_t pos);
/* Reads n bytes (bounds checked as cmx__src_read). */
cmx_status cmx__rd_bytes(cmx__rd* r, void* dst, uint64_t n, const char* what);
cmx_status cmx__rd_u32(cmx__rd* r, uint32_t* v, const char* what);
cmx_status cmx__rd_u64(cmx__rd* r, uint64_t* v, const char* what);
/* Bytes left after the current position. */
static inline uint64_t cmx__rd_left(const cmx__rd* r) {
  return r->src->size - r->pos;
}

/* Little-endian field access. */
static inline uint16_t cmx__le16(const uint8_t* p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t cmx__le32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}
static inline uint64_t cmx__le64(const uint8_t* p) {
  return (uint64_t)cmx__le32(p) | ((uint64_t)cmx__le32(p + 4) << 32);
}
static inline void cmx__put16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void cmx__put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void cmx__put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------- writer ---------------- */
/* Writes a temporary file next to the target; commit renames it into
 * place, abort removes it. */
typedef struct cmx__wr {
  int fd;
  const char* op;
  char* path; /* final path */
  char* tmp;  /* temporary path */
  uint64_t pos;
  uint8_t* buf;
  size_t len, cap;
} cmx__wr;

cmx_status cmx__wr_open(cmx__wr* w, const char* op, const char* path);
cmx_status cmx__wr_write(cmx__wr* w, const void* p, size_t n);
/* Overwrites n already written bytes at off (flushes first). */
cmx_status cmx__wr_pwrite(cmx__wr* w, const void* p, size_t n, uint64_t off);
/* Flushes, closes and renames into place; on failure removes the temp. */
cmx_status cmx__wr_commit(cmx__wr* w);
/* Closes and removes the temporary file (safe after a failed commit). */
void cmx__wr_abort(cmx__wr* w);

/* ---------------- paths ---------------- */
/* path with ext (".npy") appended unless it already ends with it; malloc'd
 * (NULL with CMX_ERR_MEMORY set). */
char* cmx__path_with_ext(const char* op, const char* path, const char* ext);

/* ---------------- arrays ---------------- */
/* Receives bytes of an array in order; returns CMX_OK or an error. */
typedef cmx_status (*cmx__sink_fn)(void* ctx, const void* p, size_t n);
/* Evaluates the arrays (one batch) and checks they are not NULL. */
cmx_status cmx__eval_for_save(const char* op, const cmx_array* arrays,
                              size_t n);
/* True when evaluated a is column-major contiguous but not row-major. */
bool cmx__array_col_only(cmx_array a);
/* Streams the bytes of evaluated array a to sink: in row-major order, or in
 * memory order when as_col (a must then be cmx__array_col_only). */
cmx_status cmx__array_bytes(cmx_array a, bool as_col, cmx__sink_fn sink,
                            void* ctx);
/* A new array of the given shape and dtype with an uninitialised host
 * buffer (the loader fills it). NULL with the error set. */
cmx_array cmx__io_new_array(const char* op, const int64_t* shape, int ndim,
                            cmx_dtype dt);
/* The array of the given shape and dtype whose row-major bytes are the
 * source's bytes at off: from a file, a lazy array that reads them when
 * evaluated (a read that comes short then fails the evaluation, as MLX);
 * from memory, read now (bounds checked as cmx__src_read, with what).
 * NULL with the error set. */
cmx_array cmx__io_read_array(const cmx__src* s, uint64_t off,
                             const int64_t* shape, int ndim, cmx_dtype dt,
                             const char* what);
/* Host pointer to the buffer of an array made by cmx__io_new_array. */
static inline void* cmx__io_data(cmx_array a) {
  return a->buf->host;
}
/* Reverses the bytes of each element (complex64: each float). */
void cmx__byteswap(void* p, int64_t count, cmx_dtype dt);

/* ---------------- CRC-32 (zip) ---------------- */
/* Updates crc with n bytes (zlib's crc32 when built with zlib). Large
 * buffers are split across the thread pool when zlib can combine parts. */
uint32_t cmx__crc32(uint32_t crc, const void* p, size_t n);

/* ---------------- container internals ---------------- */
/* Appends (name of len bytes, a) without a duplicate check; retains a. */
cmx_status cmx__named_arrays_push(cmx_named_arrays* m, const char* name,
                                  cmx_array a);
/* Index of name or -1. */
int64_t cmx__named_arrays_find(const cmx_named_arrays* m, const char* name);
/* Index of key or -1. */
int64_t cmx__metadata_find(const cmx_metadata* m, const char* key);

/* A malloc'd copy of bytes [s, s+n) with a NUL appended (NULL with
 * CMX_ERR_MEMORY set, naming op). */
char* cmx__strndup(const char* op, const char* s, size_t n);

/* ---------------- format entry points (sources) ---------------- */
cmx_array cmx__load_npy_src(const cmx__src* s);
cmx_named_arrays* cmx__load_npz_src(const cmx__src* s);
cmx_named_arrays* cmx__load_safetensors_src(const cmx__src* s,
                                            cmx_metadata** metadata);
cmx_named_arrays* cmx__load_gguf_src(const cmx__src* s,
                                     cmx_metadata** metadata);

/* ---------------- npy pieces (used by npz) ---------------- */
/* Sequential input for the npy reader: read exactly n bytes or fail. */
typedef struct cmx__npy_in {
  cmx_status (*read)(void* ctx, void* dst, uint64_t n, const char* what);
  void* ctx;
  uint64_t avail; /* bytes available from the current position */
  const char* op;
  /* A .npy file of its own: the data is read lazily at *pos. */
  const cmx__src* lazy;
  const uint64_t* pos;
} cmx__npy_in;
/* Reads one .npy stream (magic, header, data) into a new array. */
cmx_array cmx__npy_read(cmx__npy_in* in);
/* The .npy header (magic through the newline) for an array of dtype and
 * shape; col marks fortran_order. malloc'd into *out, length *len. */
cmx_status cmx__npy_header(const char* op, cmx_dtype dt, const int64_t* shape,
                           int ndim, bool col, uint8_t** out, size_t* len);

#endif
