/* The CPU kernel of Load: the output's bytes read from the file with
 * pread (a short read means the file is shorter than when it was loaded:
 * MLX's RuntimeError at evaluation, so CMX_ERR_RUNTIME, not an I/O
 * error). */
#include "primitives/io.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "backend/cpu/kernels.h"

cmx_status cmx__cpu_load(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)in, (void)nin, (void)nout;
  const cmx__load_params* q = cmx_primitive_params(p);
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  uint8_t* dst = cmx_kernel_data(out[0]);
  size_t n = cmx_array_nbytes(out[0]);
  uint64_t off = q->offset;
  while (n) {
    size_t want = n > ((size_t)1 << 30) ? (size_t)1 << 30 : n;
    ssize_t r = pread(q->file->fd, dst, want, (off_t)off);
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
    dst += r;
    off += (uint64_t)r;
    n -= (size_t)r;
  }
  return CMX_OK;
}
