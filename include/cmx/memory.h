/* cmx/memory.h: memory statistics and limits, as mlx.core's memory API.
 *
 *     cmx_set_memory_limit(1 << 30, &old);   // allocations past 1 GiB fail
 *     size_t used = cmx_get_active_memory();
 *
 * Freed buffers go to a size-bucketed cache and are reused; the cache is
 * bounded by the cache limit. Exceeding the memory limit is an error
 * (CMX_ERR_MEMORY) from the op or eval that needed the memory, never a crash.
 *
 * The figures cover host and GPU buffers together (GPU buffers in bytes of
 * their size class). Device buffers have a cache of their own, by the same
 * size classes, in the cache figure and under the same cache limit (for
 * all GPUs together). A memory limit other than the default (the host's
 * memory) bounds host bytes and GPU bytes each; with the default, a GPU's
 * own memory is its limit. Running out of
 * GPU memory frees that GPU's cache and retries once before the op fails
 * with CMX_ERR_MEMORY ("[op] out of device memory: allocating N bytes on
 * gpu:0 ..."). Memory imported from other libraries
 * (cmx_array_from_device_memory) is not counted.
 */
#ifndef CMX_MEMORY_H
#define CMX_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in buffers held by arrays now. */
size_t cmx_get_active_memory(void);
/* The largest active figure since start or the last reset. */
size_t cmx_get_peak_memory(void);
/* Sets the peak figure to the current active figure. */
void cmx_reset_peak_memory(void);
/* Bytes held in the buffer cache (freed, kept for reuse). */
size_t cmx_get_cache_memory(void);
/* Sets the memory limit in bytes, taken as given as in MLX (0 is a limit
 * of 0 bytes, which no allocation fits; the default is the machine's
 * physical memory); writes the previous limit to *previous when it is not
 * NULL. An eval that failed for the limit computes again once it is
 * raised. */
cmx_status cmx_set_memory_limit(size_t limit, size_t* previous);
size_t cmx_get_memory_limit(void);
/* Sets the cache limit in bytes (0 disables caching); trims the cache. */
cmx_status cmx_set_cache_limit(size_t limit, size_t* previous);
/* Frees every cached buffer. */
void cmx_clear_cache(void);
/* For tests of error paths: the n-th array node made from now on by the
 * calling thread fails as out of memory (CMX_ERR_MEMORY, "injected" in the
 * message), as does nothing after it; 0 turns it off. The Python fuzzer
 * uses it to fail intermediates of composite ops at every position. */
void cmx_debug_fail_after(int64_t n);

#ifdef __cplusplus
}
#endif
#endif
