/* The Load primitive: an array whose data are bytes of a file, read when it
 * is evaluated (mx.load is lazy, as MLX's: a model larger than free memory
 * loads part by part, and a file truncated after loading fails when the
 * array is evaluated). */
#ifndef CMX_PRIMITIVES_IO_H
#define CMX_PRIMITIVES_IO_H

#include <stdint.h>

#include "cmx/array.h"

/* A file open for reading, shared by the loader and every Load primitive
 * of one load call; closed when the last of them lets go. */
typedef struct cmx__file {
  _Atomic int refs;
  int fd;
  char* path; /* for messages */
} cmx__file;

/* Takes fd (closed with the last reference); path is copied. NULL with
 * CMX_ERR_MEMORY set (fd is then closed). */
cmx__file* cmx__file_new(int fd, const char* path);
cmx__file* cmx__file_retain(cmx__file* f);
void cmx__file_release(cmx__file* f);

/* Load: the output's bytes (row-major, its dtype's size each) are the
 * file's bytes [offset, offset + nbytes of the output). The primitive
 * holds a reference to file. */
typedef struct {
  cmx__file* file;
  uint64_t offset;
  int ndim;
  int64_t shape[CMX_MAX_NDIM]; /* the output's (output_shapes) */
} cmx__load_params;

/* Reads bytes [at, at + n) of a Load's output (the file's bytes from
 * q->offset + at) into dst, retrying short reads; CMX_ERR_RUNTIME naming
 * the file when it cannot be read or ends first ("[load] ..."). For the
 * backends' Load kernels. */
cmx_status cmx__load_read(const cmx__load_params* q, void* dst, uint64_t at,
                          size_t n);

#endif
