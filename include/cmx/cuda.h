/* cmx/cuda.h: CUDA kernels of extensions.
 *
 * An extension's eval_gpu (cmx/primitive.h) runs on the thread that
 * submits a GPU stream's work. It gets its kernel as CUDA source, compiled
 * by NVRTC through cmx's kernel cache (in memory, and on disk under
 * CMX_CACHE_DIR, so a second process does not compile again), and launches
 * it on the primitive's stream with the grid and block it chooses:
 *
 *     static const char* src =
 *         "extern \"C\" __global__ void axpby_f32(const float* x,\n"
 *         "    const float* y, float* z, float a, float b, long long n) {\n"
 *         "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
 *         "  if (i < n) z[i] = a * x[i] + b * y[i];\n"
 *         "}\n";
 *     static cmx_status axpby_gpu(const cmx_primitive* p, const cmx_array* in,
 *                                 int nin, const cmx_array* out, int nout) {
 *       const cmx_cuda_kernel* k;
 *       cmx_status st = cmx_cuda_kernel_get(&k, "axpby", src, "axpby_f32");
 *       if (st == CMX_OK) st = cmx_kernel_alloc(out[0]);
 *       if (st != CMX_OK) return st;
 *       uint64_t x = cmx_kernel_device_ptr(in[0]), ...;
 *       long long n = cmx_array_size(out[0]);
 *       const void* args[] = {&x, &y, &z, &a, &b, &n};
 *       const size_t sizes[] = {8, 8, 8, 4, 4, 8};
 *       cmx_cuda_cfg cfg = {{(unsigned)((n + 255) / 256), 1, 1},
 *                           {256, 1, 1}, 0};
 *       st = cmx_cuda_launch("axpby", k, &cfg, args, sizes, 6);
 *       if (st == CMX_OK) cmx_kernel_mark_device_written(out[0]);
 *       return st;
 *     }
 *
 * Sources are compiled as CUDA C++ (entry points extern "C"), after cmx's
 * own kernel definitions (common.cu: cmx_i64 and friends); the CUDA
 * toolkit's headers (cuda_fp16.h, cuda_bf16.h, cooperative_groups.h, CUB,
 * libcu++) are on the include path when a toolkit is found (CUDA_HOME, the
 * loaded NVRTC's toolkit or /usr/local/cuda). The CUDA driver and NVRTC
 * are loaded at run time, so these link and fail cleanly without a GPU.
 */
#ifndef CMX_CUDA_H
#define CMX_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmx/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A compiled kernel loaded on one device (owned by cmx, kept for the life
 * of the process). */
typedef struct cmx_cuda_kernel cmx_cuda_kernel;

/* A launch: grid (in blocks) and block (in threads) sizes, and the bytes
 * of dynamic shared memory per block (over 48 KB: cmx opts the kernel in,
 * up to the device's limit). */
typedef struct cmx_cuda_cfg {
  unsigned grid[3], block[3];
  size_t shared_bytes;
} cmx_cuda_cfg;

/* Writes to *out the kernel `entry` (an extern "C" __global__ function) of
 * the CUDA program `source`, compiled for the device of the GPU task
 * running on this thread: call it from an eval_gpu. `name` names the
 * program in errors and in the disk cache. Compiled at first use, then
 * served from memory (by name, source, entry and device) and from the
 * disk cache. Errors: CMX_ERR_VALUE for empty arguments, CMX_ERR_RUNTIME
 * outside a GPU task, when no GPU or NVRTC is available, and for a failed
 * compilation (the message ends with NVRTC's log) or a missing entry. */
cmx_status cmx_cuda_kernel_get(const cmx_cuda_kernel** out, const char* name,
                               const char* source, const char* entry);

/* Launches k on the stream of the GPU task running on this thread (the
 * primitive's stream) with cfg. args[i] points to the value of the i-th
 * kernel parameter and sizes[i] is its size in bytes (device pointers are
 * the uint64_t of cmx_kernel_device_ptr); at most 32 parameters, 4 KB in
 * all. The launch is asynchronous: errors are those of issuing it
 * (CMX_ERR_RUNTIME naming op: a block larger than the kernel allows, more
 * shared memory than the device has, an empty grid, outside a GPU task). */
cmx_status cmx_cuda_launch(const char* op, const cmx_cuda_kernel* k,
                           const cmx_cuda_cfg* cfg, const void* const* args,
                           const size_t* sizes, int nargs);

/* As cmx_cuda_kernel_get, for a kernel compiled beforehand: `image` holds
 * `size` bytes of PTX text, a CUBIN or a fatbin (loaded by the driver as
 * they are; cmx_cuda_compile makes them), `entry` the kernel's symbol in
 * it (the mangled name unless declared extern "C"). Loaded at first use
 * per device and kept (by name, image bytes and entry). Errors:
 * CMX_ERR_VALUE for empty arguments, CMX_ERR_RUNTIME outside a GPU task,
 * for an image the driver rejects or a missing entry. */
cmx_status cmx_cuda_kernel_get_image(const cmx_cuda_kernel** out,
                                     const char* name, const void* image,
                                     size_t size, const char* entry);

/* Compiles `source` as cmx_cuda_kernel_get would (after cmx's kernel
 * definitions, with the toolkit's headers) for compute capability `arch`
 * (0: the first GPU's, else 80), with NVRTC only (no GPU needed): PTX for
 * compute_<arch> when ptx is true, else a CUBIN for sm_<arch> (PTX when
 * NVRTC cannot emit it). Writes a malloc'ed image to *image (the caller
 * frees it) and its size in bytes to *size (PTX: the text, no NUL).
 * Errors: CMX_ERR_VALUE for empty arguments, CMX_ERR_RUNTIME without
 * NVRTC or for a failed compilation (with NVRTC's log). */
cmx_status cmx_cuda_compile(const char* name, const char* source, int arch,
                            bool ptx, void** image, size_t* size);

/* Compiles `source` for compute capability `arch` (e.g. 80; 0: the first
 * GPU's, else 80) without loading it, as cmx_cuda_kernel_get would: for
 * checking sources where there is no GPU (needs NVRTC only). CMX_OK, or
 * CMX_ERR_RUNTIME with NVRTC's log in the message. */
cmx_status cmx_cuda_compile_check(const char* name, const char* source,
                                  int arch);

/* True when NVRTC can be loaded (kernels can be compiled). */
bool cmx_cuda_nvrtc_available(void);

#ifdef __cplusplus
}
#endif
#endif
