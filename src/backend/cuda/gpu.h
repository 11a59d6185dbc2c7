/* CUDA backend internals shared by its files: the loaded driver and its
 * devices (driver.c), GPU streams (stream.c), device buffers (memory.c),
 * NVRTC compilation with its memory and disk caches (nvrtc.c), and the
 * launch helpers the eval_gpu kernels use (launch.c).
 *
 * Threads: any thread may touch the GPU (the thread that submits a GPU
 * stream's tasks, CPU workers reading GPU results, user threads freeing
 * arrays); each such entry point first calls cmx__gpu_ctx_enter, which
 * makes the device's primary context current on the calling thread.
 */
#ifndef CMX_BACKEND_CUDA_GPU_H
#define CMX_BACKEND_CUDA_GPU_H

#include "backend/cuda/cuda_api.h"
#include "core/internal.h"

/* ---------------- driver (driver.c) ---------------- */

/* The CUDA driver is loaded on first use; with no driver or no device the
 * GPU is unavailable (false, 0). Core reaches these through the backend
 * interface (kernel_table.c). */
bool cmx__gpu_available(void);
int cmx__gpu_count(void);
/* Why the GPU is unavailable ("" when it is available), for messages. */
const char* cmx__gpu_unavailable_reason(void);
/* Creates and registers a new GPU stream on device_index; NULL with the
 * error set (stream.c). */
cmx__stream* cmx__gpu_stream_new(int device_index);

/* The resolved driver entry points (valid once cmx__gpu_available()). */
extern cmx__cuda_api cmx__cu;

typedef struct cmx__gpu_device {
  CUdevice dev;
  int cc_major, cc_minor; /* compute capability */
  int sm_count;           /* multiprocessors */
  bool pools;             /* stream-ordered allocation usable */
  char name[128];
  /* Set up on first use (cmx__gpu_device_get): */
  CUcontext ctx;        /* the primary context */
  CUstream copy_stream; /* host<->device copies, always synchronised */
  CUstream free_stream; /* frees issued outside any GPU task */
} cmx__gpu_device;

/* The ready device `index` (primary context retained, streams made), or
 * NULL with the error set ("[gpu] ..."). */
cmx__gpu_device* cmx__gpu_device_get(int index);
/* Makes device index's primary context current on the calling thread
 * (readying the device first). */
cmx_status cmx__gpu_ctx_enter(int index);
/* The driver's CUDA version (e.g. 13000), 0 when no driver is loaded. */
int cmx__gpu_driver_version(void);
/* Sets the error "[op] <what> failed: CUDA_ERROR_X (description)" and
 * returns its status (CMX_ERR_MEMORY for out-of-memory, else RUNTIME). */
cmx_status cmx__cu_error(CUresult r, const char* op, const char* what);

/* ---------------- streams (stream.c) ---------------- */

typedef struct cmx__gpu_stream cmx__gpu_stream;
/* The CUDA stream of the GPU task running on this thread (NULL outside a
 * GPU task) and its device index in *dev. */
CUstream cmx__gpu_current_stream(int* dev);
/* How many references to b the GPU task running on this thread holds on
 * top of its arrays' own (the submitter keeps its inputs' buffers until
 * the task's event is recorded); donation checks discount them. */
int cmx__gpu_task_holds(const cmx__buffer* b);
/* Makes `target` wait for all recorded, unfinished work of every other
 * GPU stream of device dev: a buffer whose last reference is dropped may
 * still be read by work queued on any stream, so its stream-ordered free
 * must come after that work. */
void cmx__gpu_order_after_all(int dev, CUstream target);

/* ---------------- device memory (memory.c) ---------------- */

/* The buffer hooks (installed into cmx__device_hooks when the driver
 * loads). */
extern const cmx__device_memory_hooks cmx__cuda_memory_hooks;
/* Device bytes currently allocated by cmx (all devices) and the peak. */
size_t cmx__gpu_active_bytes(void);
size_t cmx__gpu_peak_bytes(void);

/* ---------------- NVRTC and the kernel cache (nvrtc.c) ---------------- */

/* A compiled kernel image: a CUBIN, or NUL-terminated PTX text. */
typedef struct cmx__gpu_image {
  void* data; /* malloc'ed */
  size_t size;
  bool ptx;
} cmx__gpu_image;

/* True when NVRTC could be loaded; otherwise *why (if given) says why. */
bool cmx__nvrtc_available(const char** why);
/* Compiles CUDA `source` (program `name`) for compute capability `arch`
 * (e.g. 90): a CUBIN for sm_<arch>, or PTX for compute_<arch> when NVRTC
 * cannot emit that CUBIN or when want_ptx (no machine code: quicker, for
 * checking sources). No caching. On failure sets
 * "[gpu] NVRTC failed to compile '<name>' for sm_<arch> (...):\n<log>" and
 * returns its status. */
cmx_status cmx__nvrtc_compile(const char* name, const char* source, int arch,
                              bool want_ptx, cmx__gpu_image* out);
/* Where a cached image came from. */
enum { CMX__IMAGE_COMPILED = 0, CMX__IMAGE_DISK = 1 };
/* The image of `source` for `arch`: read from the disk cache when a valid
 * entry exists, else compiled and written to it (atomically, user-private).
 * The key hashes source, options, arch, NVRTC and driver versions. A bad
 * entry (wrong size, checksum, key) is ignored and rewritten. *origin (if
 * given) gets CMX__IMAGE_*. */
cmx_status cmx__gpu_image_get(const char* name, const char* source, int arch,
                              cmx__gpu_image* out, int* origin);
/* Removes the disk entry of (source, arch): used when the driver rejects a
 * cached image, so it is compiled afresh. */
void cmx__gpu_image_forget(const char* name, const char* source, int arch);
void cmx__gpu_image_free(cmx__gpu_image* img);
/* The disk cache directory in use (its "cuda" subfolder) written to buf;
 * false when the disk cache is off (no usable directory). */
bool cmx__gpu_cache_dir(char* buf, size_t size);

/* Counters of the kernel cache, for tests and diagnostics. */
typedef struct cmx__gpu_cache_stats {
  uint64_t compiles;     /* NVRTC compilations */
  uint64_t disk_hits;    /* images read from the disk cache */
  uint64_t disk_writes;  /* images written to it */
  uint64_t disk_rejects; /* entries ignored as corrupt or rejected */
  uint64_t mem_hits;     /* module lookups served from memory */
} cmx__gpu_cache_stats;
cmx__gpu_cache_stats cmx__gpu_cache_stats_get(void);

/* The embedded kernel source named `file` (src/backend/cuda/kernels/
 * <file>.cu), or NULL. */
const char* cmx__gpu_kernel_source(const char* file);
/* The full source of a kernel module: the shared "common" source, then
 * `prelude` (per-variant #defines), then `file`'s source. malloc'ed; NULL
 * with the error set when file is unknown. */
char* cmx__gpu_module_source(const char* file, const char* prelude);
/* The function `kernel` of file's source with `prelude` for device dev:
 * the module holds that one kernel (the prelude gets "#define CMX_ONLY" and
 * "#define CMX_ONLY_<kernel>", which the sources honour). Loaded from the
 * in-memory module cache, or built through cmx__gpu_image_get and loaded
 * with cuModuleLoadData. NULL with the error set on failure. */
CUfunction cmx__gpu_function(int dev, const char* file, const char* prelude,
                             const char* kernel);
/* Drops the in-memory module cache (after synchronising every device), so
 * the next lookups read the disk cache. For tests. */
void cmx__gpu_module_cache_clear(void);

/* ---------------- launching (launch.c) ---------------- */

/* A layout of up to 3 arrays of one shape (output first) with size-1 dims
 * dropped and jointly contiguous dims merged. */
typedef struct cmx__gpu_layout {
  int ndim;
  int64_t shape[CMX_MAX_NDIM];
  int64_t strides[3][CMX_MAX_NDIM];
} cmx__gpu_layout;
/* Collapses the layout of arrays[0..n) (n <= 3, same shape). */
void cmx__gpu_collapse(const cmx_array* arrays, int n, cmx__gpu_layout* l);
/* True when every |offset| reachable in array k of l, and the element
 * count, fit in a signed 32-bit index. */
bool cmx__gpu_layout_fits_i32(const cmx__gpu_layout* l, int narr, int64_t size);
/* Writes the device pointer of a's first element on device dev to *out,
 * moving a's data there first if needed (0 for an empty array). */
cmx_status cmx__gpu_ptr(cmx_array a, int dev, CUdeviceptr* out);
/* Allocates a kernel's output on the device, or gives it the device buffer
 * of one of cands (same shape and item size, row-contiguous from the
 * buffer start, current on dev, held by nothing but the running task):
 * the kernel then writes in place, which elementwise kernels may. A
 * donation orders the current stream after every other stream's pending
 * work, which may still read the buffer. *donated (may be NULL) gets the
 * index of the donor or -1. */
cmx_status cmx__gpu_alloc_out(cmx_array out, const cmx_array* cands, int n,
                              int dev, int* donated);
/* Launches f on the current GPU task's stream with a grid-stride 1-D
 * configuration sized for `work` items; op names errors. */
cmx_status cmx__gpu_launch(const char* op, CUfunction f, int64_t work,
                           void** args);

/* The prelude of binary primitive prim_id (its list.h id) on dtype dt;
 * false when that pair has no GPU kernel (binary.c). */
bool cmx__gpu_binary_prelude(int prim_id, cmx_dtype dt, char* buf, size_t size);
/* The prelude of the copy kernels for elements of itemsize bytes (copy.c). */
void cmx__gpu_copy_prelude(size_t itemsize, char* buf, size_t size);
/* Copies src (any layout) into dst, a row-major device array of the same
 * size and dtype (its shape may differ: a reshape), on device dev; op names
 * errors (copy.c). */
cmx_status cmx__gpu_copy_rowmajor(cmx_array dst, cmx_array src, int dev,
                                  const char* op);

/* A kernel variant, for precompiling and tests: the module (file,
 * prelude) and a readable name. */
typedef struct cmx__gpu_variant {
  const char* file;
  char prelude[512];
  char name[64];
} cmx__gpu_variant;
/* Writes up to cap variants of the built-in kernels; returns how many
 * exist. */
int cmx__gpu_variants(cmx__gpu_variant* out, int cap);

#endif
