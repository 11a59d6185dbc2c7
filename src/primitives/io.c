/* The Load primitive (reading a file range when evaluated) and the shared
 * file handle of its parameters. */
#include "primitives/io.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"
#include "primitives/registry.h"
#include "primitives/shapes.h"
#include "transforms/rules.h"

cmx__file* cmx__file_new(int fd, const char* path) {
  cmx__file* f = malloc(sizeof *f);
  char* p = path ? strdup(path) : strdup("");
  if (!f || !p) {
    free(f);
    free(p);
    close(fd);
    return CMX__FAIL(CMX_ERR_MEMORY, "[load] out of host memory");
  }
  atomic_init(&f->refs, 1);
  f->fd = fd;
  f->path = p;
  return f;
}

cmx__file* cmx__file_retain(cmx__file* f) {
  if (f) atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
  return f;
}

void cmx__file_release(cmx__file* f) {
  if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
    return;
  close(f->fd);
  free(f->path);
  free(f);
}

cmx_status cmx__load_read(const cmx__load_params* q, void* dst, uint64_t at,
                          size_t n) {
  uint8_t* d = dst;
  uint64_t off = q->offset + at;
  while (n) {
    size_t want = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
    ssize_t r = pread(q->file->fd, d, want, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return cmx_kernel_error(CMX_ERR_RUNTIME,
                              "[load] Unable to read from %s: %s",
                              q->file->path, strerror(errno));
    if (r == 0)
      return cmx_kernel_error(
          CMX_ERR_RUNTIME,
          "[load] Unable to read from %s: the file ends at byte %llu, before "
          "the %llu bytes of this array (it is truncated, or changed since it "
          "was loaded).",
          q->file->path, (unsigned long long)off,
          (unsigned long long)(off + n));
    d += r;
    off += (uint64_t)r;
    n -= (size_t)r;
  }
  return CMX_OK;
}

static void load_destroy(void* params) {
  cmx__file_release(((cmx__load_params*)params)->file);
}

static bool load_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__load_params* p = cmx_primitive_params(a);
  const cmx__load_params* q = cmx_primitive_params(b);
  return p->file == q->file && p->offset == q->offset && p->ndim == q->ndim &&
         !memcmp(p->shape, q->shape, (size_t)p->ndim * sizeof *p->shape);
}

static uint64_t load_hash(const cmx_primitive* p) {
  const cmx__load_params* q = cmx_primitive_params(p);
  return (uint64_t)(uintptr_t)q->file * 0x9E3779B97F4A7C15ull ^ q->offset;
}

static cmx_status load_shapes(const cmx_primitive* p, const cmx_array* in,
                              int nin, cmx_shape* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__load_params* q = cmx_primitive_params(p);
  cmx__shape_set(&out[0], q->shape, q->ndim);
  return CMX_OK;
}

static void load_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__load_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Load(%s @ %llu)", q->file->path,
           (unsigned long long)q->offset);
}

/* A file's bytes are constants: zero derivatives, nothing to map. */
CMX__VTABLE(Load, .vjp = cmx__vjp_zero, .jvp = cmx__jvp_zero,
            .vmap = cmx__vmap_nullary, .output_shapes = load_shapes,
            .equal = load_equal, .hash = load_hash, .print = load_print,
            .destroy = load_destroy);
