/* The Load primitive (reading a file range when evaluated) and the shared
 * file handle of its parameters. */
#include "primitives/io.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/kernels.h"
#include "core/internal.h"
#include "primitives/registry.h"

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

static void load_destroy(void* params) {
  cmx__file_release(((cmx__load_params*)params)->file);
}

static bool load_equal(const cmx_primitive* a, const cmx_primitive* b) {
  const cmx__load_params* p = cmx_primitive_params(a);
  const cmx__load_params* q = cmx_primitive_params(b);
  return p->file == q->file && p->offset == q->offset;
}

static uint64_t load_hash(const cmx_primitive* p) {
  const cmx__load_params* q = cmx_primitive_params(p);
  return (uint64_t)(uintptr_t)q->file * 0x9E3779B97F4A7C15ull ^ q->offset;
}

static void load_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__load_params* q = cmx_primitive_params(p);
  snprintf(buf, size, "Load(%s @ %llu)", q->file->path,
           (unsigned long long)q->offset);
}

CMX__VTABLE(Load, .eval_cpu = cmx__cpu_load, .equal = load_equal,
            .hash = load_hash, .print = load_print, .destroy = load_destroy);
