/* CUDA backend internals shared by its files: the loaded driver and its
 * devices (driver.c), GPU streams (stream.c), device buffers (memory.c),
 * the toolkit's run-time pieces (toolkit.c: NVRTC, cuBLASLt, CCCL headers),
 * NVRTC compilation with its disk cache (nvrtc.c), the registry of kernel
 * families (family.c) and their loaded kernels (module.c), the encoder
 * through which every launch, memset and copy goes (encoder.c), the
 * cuBLASLt loader (cublaslt.c) and the helpers of eval_gpu kernels
 * (launch.c).
 *
 * Writing a GPU kernel (an eval_gpu function):
 *
 *   1. its CUDA source in kernels/<family>.cu (per-variant #defines come
 *      from the prelude; each kernel wrapped in #if !defined(CMX_ONLY) ||
 *      defined(CMX_ONLY_<kernel>) so a module holds one kernel);
 *   2. its family (a cmx__gpu_family: source, kernel names, prelude builder
 *      per variant, launch shape) defined in <family>.c and listed in
 *      families.h;
 *   3. in eval_gpu: cmx__gpu_kernel_get(dev, &family, variant, kernel)
 *      (compiled at first use, cached in memory and on disk), arguments in
 *      a cmx__gpu_args, a cmx__gpu_cfg (cmx__gpu_cfg_for, or explicit
 *      grid/block/shared memory), then cmx__gpu_launch.
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
  int max_threads;        /* threads per block */
  int shared_per_block;   /* shared memory bytes a block gets by default */
  int shared_optin;       /* ... and at most, once a kernel opts in */
  int l2;                 /* L2 cache bytes (0: unknown) */
  /* what one multiprocessor holds at once (cmx__gpu_blocks_per_sm) */
  int sm_threads, sm_regs, sm_blocks;
  int sm_shared; /* shared memory bytes (0: unknown) */
  char name[128];
  /* Set up on first use (cmx__gpu_device_get): */
  CUcontext ctx;        /* the primary context */
  CUstream copy_stream; /* host<->device copies, always synchronised */
  CUstream free_stream; /* frees issued outside any GPU task */
  CUmemoryPool pool;    /* the default pool (NULL: none known) */
} cmx__gpu_device;

/* The ready device `index` (primary context retained, streams made), or
 * NULL with the error set ("[gpu] ..."). */
cmx__gpu_device* cmx__gpu_device_get(int index);
/* Makes device index's primary context current on the calling thread
 * (readying the device first). */
cmx_status cmx__gpu_ctx_enter(int index);
/* Describes device index (the backend's device_info hook). */
cmx_status cmx__gpu_device_info(int index, cmx_device_info* out);
/* The card's memory in bytes (0 when the driver cannot say). */
size_t cmx__gpu_total_memory(int index);
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
/* Dependencies of GPU tasks met by a device-side event wait, and by a
 * host wait (on a CPU stream, another device). */
typedef struct cmx__gpu_dep_stats {
  uint64_t by_event, by_host;
} cmx__gpu_dep_stats;
cmx__gpu_dep_stats cmx__gpu_dep_stats_get(void);
/* Makes `target` wait for all recorded, unfinished work of every other
 * GPU stream of device dev: a buffer whose last reference is dropped may
 * still be read by work queued on any stream, so its stream-ordered free
 * must come after that work. */
void cmx__gpu_order_after_all(int dev, CUstream target);

/* A free ordered on the running task's stream (dev, s) while its batch
 * holds commands: a ticket (non-zero) naming that batch, which the free
 * comes after; 0 when nothing is batched (the free is ordered on s now).
 * The memory may be reused at once by later commands of s (they come after
 * the batch); anything else must first issue the batch
 * (cmx__gpu_issue_ticket). */
uint64_t cmx__gpu_free_ticket(int dev, CUstream s);
/* Issues the batch that ticket names on the GPU stream whose CUstream is
 * s, unless it was issued already (ticket 0: nothing to do): afterwards
 * work ordered on s comes after the frees that took the ticket. */
void cmx__gpu_issue_ticket(CUstream s, uint64_t ticket);
/* Issues every GPU stream's batched commands and drops their executable
 * graphs (before kernel modules are unloaded). */
void cmx__gpu_graphs_forget_all(void);

/* The name of the primitive whose GPU task runs on this thread ("gpu"
 * outside a task), for errors. */
const char* cmx__gpu_current_op(void);

/* ---------------- deferred index errors (index_errors.c) ----------------
 *
 * A kernel that meets an out-of-range index cannot stop the device: it
 * records the first such index in its stream's error record (host memory
 * the device writes; kernels/indexing.cu, cmx_report_bad_index) and goes
 * on (a gather yields zeros there, a scatter skips it). Once the stream
 * has finished its work, the eval that waited for it fails with the CPU's
 * IndexError message and the arrays it waited for keep that error. */
typedef struct cmx__gpu_index_error {
  int32_t code; /* 0: none; else cmx__gpu_index_error_code's */
  int32_t axis;
  int64_t value, dim;
} cmx__gpu_index_error;
/* The CPU's message a recorded error gets (v: the value, a: the axis,
 * d: the size). */
typedef enum {
  CMX__GPU_IDX_AXIS,    /* "[op] Index v is out of bounds for axis a with
                           size d." */
  CMX__GPU_IDX_BATCH,   /* "[op] <which> index v is out of bounds for a
                           batch of d matrices." */
  CMX__GPU_IDX_SEGMENT, /* "[op] Segment bound v is out of bounds for the
                           inner dimension d." */
} cmx__gpu_index_msg;
/* The code kernels record for an error of op with message kind `msg`
 * (which: the operand a batch message names; op and which are static
 * strings). Codes are interned, >= 1. */
int cmx__gpu_index_error_code(const char* op, cmx__gpu_index_msg msg,
                              const char* which);
/* The device address of the error record of the stream of the GPU task
 * running on this thread; 0 when there is none (kernels then record
 * nothing). */
CUdeviceptr cmx__gpu_index_error_record(void);
/* When rec holds an error: clears it and returns its message (malloc'd,
 * the caller frees) with its status in *st; else NULL. */
char* cmx__gpu_index_error_take(cmx__gpu_index_error* rec, cmx_status* st);

/* ---------------- device memory (memory.c) ---------------- */

/* The buffer hooks (installed into cmx__device_hooks when the driver
 * loads). */
extern const cmx__device_memory_hooks cmx__cuda_memory_hooks;
/* Device bytes currently allocated by cmx (all devices) and the peak. */
size_t cmx__gpu_active_bytes(void);
size_t cmx__gpu_peak_bytes(void);
/* Device buffer cache lookups that found a buffer, and that did not. */
typedef struct cmx__gpu_memory_stats {
  uint64_t cache_hits, cache_misses;
} cmx__gpu_memory_stats;
cmx__gpu_memory_stats cmx__gpu_memory_stats_get(void);

/* ---------------- pinned staging (staging.c) ---------------- */

/* Copies bytes of host src to device dst on stream s of device dev (its
 * context current) through the device's pinned staging ring: returns once
 * src is no longer needed, the last pieces' DMA possibly still queued on
 * s. Without pinned memory the copy is direct and waited for. */
cmx_status cmx__gpu_stage_h2d(int dev, CUdeviceptr dst, const void* src,
                              size_t bytes, CUstream s);
/* Copies bytes of device src to host dst on stream s (ordered after s's
 * queued work); returns once dst holds them. */
cmx_status cmx__gpu_stage_d2h(int dev, void* dst, CUdeviceptr src, size_t bytes,
                              CUstream s);
/* Copies that went through the ring, directly, and (device->host) into
 * their page-locked destination (CMX_GPU_D2H_REGISTER=1). */
typedef struct cmx__gpu_staging_stats {
  uint64_t staged, direct, registered;
} cmx__gpu_staging_stats;
cmx__gpu_staging_stats cmx__gpu_staging_stats_get(void);
/* Small host arrays given their device copy by a launch on the reading
 * task's stream so far (memory.c), for tests. */
uint64_t cmx__gpu_small_puts(void);

/* ---------------- the toolkit (toolkit.c) ---------------- */

/* Opens the first of names[0..n) that loads, from the loader's path or
 * from a toolkit's library folders (see cmx__toolkit_homes). NULL when
 * none does, with why (if given) saying what the loader said about
 * names[0]. */
void* cmx__toolkit_dlopen(const char* const* names, int n, char* why,
                          size_t why_size);
/* The toolkit folders searched, in order: $CUDA_HOME (or $CUDA_PATH), the
 * toolkit of the loaded NVRTC (when with_nvrtc and it loaded), and
 * /usr/local/cuda. Writes up to cap paths to homes; returns how many. */
int cmx__toolkit_homes(char (*homes)[4096], int cap, bool with_nvrtc);
/* The CCCL headers (CUB, libcu++, Thrust) of the toolkit, for kernels that
 * include them: include/cccl or targets/x86_64-linux/include/cccl (CUDA
 * 13), or include itself when it holds cub/ (CUDA 12), in the first home
 * that has them. On success writes the folder to dir and the headers'
 * version (CCCL_VERSION, else CUB_VERSION; 0 if unreadable) to *version;
 * otherwise false, with why saying where it looked. */
bool cmx__toolkit_cccl(char* dir, size_t dir_size, long* version, char* why,
                       size_t why_size);
/* For tests: NULL restores the search; any other path is the only place
 * searched from then on ("" finds nothing). */
void cmx__toolkit_cccl_override(const char* dir);

/* ---------------- NVRTC and the disk cache (nvrtc.c) ---------------- */

/* A compiled kernel image: a CUBIN, or NUL-terminated PTX text. */
typedef struct cmx__gpu_image {
  void* data; /* malloc'ed */
  size_t size;
  bool ptx;
} cmx__gpu_image;

/* True when NVRTC could be loaded; otherwise *why (if given) says why. */
bool cmx__nvrtc_available(const char** why);
/* The file NVRTC was loaded from ("" when it was not). */
const char* cmx__nvrtc_library_path(void);
/* Compiles CUDA `source` (program `name`) for compute capability `arch`
 * (e.g. 90) with the extra NVRTC options opts[0..nopts): a CUBIN for
 * sm_<arch>, or PTX for compute_<arch> when NVRTC cannot emit that CUBIN
 * or when want_ptx (no machine code: quicker, for checking sources). No
 * caching. On failure sets "[gpu] NVRTC failed to compile '<name>' for
 * sm_<arch> (...):\n<log>" and returns its status. */
cmx_status cmx__nvrtc_compile(const char* name, const char* source, int arch,
                              const char* const* opts, int nopts, bool want_ptx,
                              cmx__gpu_image* out);
/* Where a cached image came from. */
enum { CMX__IMAGE_COMPILED = 0, CMX__IMAGE_DISK = 1 };
/* The image of (source, opts) for `arch`: read from the disk cache when a
 * valid entry exists, else compiled and written to it (atomically,
 * user-private). The key hashes source, options, arch, NVRTC and driver
 * versions. A bad entry (wrong size, checksum, key) is ignored and
 * rewritten. *origin (if given) gets CMX__IMAGE_*. */
cmx_status cmx__gpu_image_get(const char* name, const char* source, int arch,
                              const char* const* opts, int nopts,
                              cmx__gpu_image* out, int* origin);
/* Removes the disk entry of (source, opts, arch), counted as a rejected
 * entry: used when the driver rejects a cached image, so it is compiled
 * afresh. */
void cmx__gpu_image_forget(const char* name, const char* source, int arch,
                           const char* const* opts, int nopts);
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
  uint64_t mem_hits;     /* kernel lookups served from memory */
} cmx__gpu_cache_stats;
cmx__gpu_cache_stats cmx__gpu_cache_stats_get(void);
/* module.c counts its memory hits through this. */
void cmx__gpu_cache_count_mem_hit(void);

/* ---------------- kernel families (family.c) ---------------- */

/* The launch shape a family's kernels use by default (cmx__gpu_cfg_for). */
typedef enum {
  /* 1-D grid-stride loops: ceil(work / threads) blocks, at most
   * blocks_per_sm per multiprocessor. */
  CMX__GPU_GRID_STRIDE = 0,
  /* 1-D, one thread per work item: ceil(work / threads) blocks. */
  CMX__GPU_ONE_PER_ITEM,
  /* No default: the kernel's caller builds every cmx__gpu_cfg itself
   * (rows per block, tiles, cooperative shapes ...). */
  CMX__GPU_CUSTOM
} cmx__gpu_shape_kind;

typedef struct cmx__gpu_shape {
  cmx__gpu_shape_kind kind;
  unsigned threads;       /* threads per block; 0: 256 */
  unsigned blocks_per_sm; /* GRID_STRIDE's cap; 0: 16 */
} cmx__gpu_shape;

/* Family flags. */
enum {
  /* Its kernels include CCCL headers (CUB, libcu++): NVRTC gets the
   * toolkit's CCCL folder (-I) and -DCMX_CCCL_VERSION=<version>, which
   * also keys the disk cache. */
  CMX__GPU_NEEDS_CCCL = 1u << 0,
  /* Its kernels may include the toolkit's headers (cuda_fp16.h,
   * cooperative_groups.h, CCCL): NVRTC gets the toolkit's include folder
   * and its CCCL folder when they are found, nothing otherwise (extension
   * kernels, cmx/cuda.h). */
  CMX__GPU_TOOLKIT_HEADERS = 1u << 1,
  /* Every kernel of it starts with CMX_GRID_WAIT() (kernels/common.cu), so
   * a CUDA graph may launch it programmatically after the kernel before it
   * (graph.c). The built-in and compiled families; never an extension's
   * kernels, which may read their inputs at once. */
  CMX__GPU_GRID_WAITS = 1u << 2
};

#define CMX__GPU_PRELUDE_MAX 1024
/* One variant of a family: the #defines put before its source. */
typedef struct cmx__gpu_variant {
  char prelude[CMX__GPU_PRELUDE_MAX];
  char name[96]; /* readable: "<family>_<what>", e.g. elementwise_Add_float32 */
  unsigned flags; /* CMX__GPU_NEEDS_CCCL for this variant alone (complex
                     math through libcu++, say); the builder sets it or 0 */
} cmx__gpu_variant;

/* A kernel family: one CUDA source, the kernels (entry points) in it, and
 * its variants (one prelude each: per dtype, op, element size ...).
 * Kernels are named by their index in `kernels`; a (variant, kernel) pair
 * is compiled as its own module at first use. Families live as long as
 * the process (static storage). */
typedef struct cmx__gpu_family {
  const char* name;   /* unique; in errors, cache-entry and variant names */
  const char* file;   /* embedded source kernels/<file>.cu, or NULL ... */
  const char* source; /* ... and the source text itself */
  /* Embedded sources put between the prelude and the family's source, in
   * order (NULL-terminated; NULL: none): bindings shared by families. */
  const char* const* preamble;
  const char* const* kernels; /* entry points, NULL-terminated */
  /* Variants are 0 .. nvariants-1; variant(v, out) writes v's prelude and
   * name, or returns false when v is not one (a hole in the index space:
   * an op without this dtype, say). */
  int nvariants;
  bool (*variant)(int v, cmx__gpu_variant* out);
  unsigned flags; /* CMX__GPU_NEEDS_CCCL ... (the enum above) */
  cmx__gpu_shape shape;
} cmx__gpu_family;

/* The built-in families (families.h) as cmx__gpu_family_<name>. */
#define CMX__GPU_FAMILY(name) \
  extern const cmx__gpu_family cmx__gpu_family_##name;
#include "backend/cuda/families.h"
#undef CMX__GPU_FAMILY

/* Every family: the built-in ones, then those registered at run time. */
int cmx__gpu_family_count(void);
const cmx__gpu_family* cmx__gpu_family_at(int i);
/* The family named `name`, or NULL. */
const cmx__gpu_family* cmx__gpu_family_find(const char* name);
/* Adds a family at run time (tests, extension kernels): f is borrowed for
 * the life of the process. Fails (CMX_ERR_VALUE) when the name is taken,
 * a field is missing, or no kernel is listed. */
cmx_status cmx__gpu_family_register(const cmx__gpu_family* f);
/* The number of kernels f lists. */
int cmx__gpu_family_nkernels(const cmx__gpu_family* f);
/* The source of variant `prelude` of f with only kernel `kernel` in it:
 * the shared "common" source, the prelude, "#define CMX_ONLY" and
 * "#define CMX_ONLY_<name>", f's preamble sources, then f's source
 * (kernel < 0: every kernel). malloc'ed; NULL with the error set. */
char* cmx__gpu_family_source(const cmx__gpu_family* f, const char* prelude,
                             int kernel);
/* The NVRTC options of variant var of f (var may be NULL: the family's
 * own), its include folders and defines, written to opts (at most cap,
 * pointing into buf); returns how many, or -1 with the error set when it
 * needs headers that are missing ("[gpu] kernel family 'x' needs the CUDA
 * toolkit's CCCL headers (CUB, libcu++), which were not found: ..."). */
int cmx__gpu_family_options(const cmx__gpu_family* f,
                            const cmx__gpu_variant* var, const char** opts,
                            int cap, char* buf, size_t size);
/* The embedded kernel source named `file` (kernels/<file>.cu), or NULL. */
const char* cmx__gpu_kernel_source(const char* file);

/* Names of the strided kernels shared by the elementwise families:
 * <prefix>_g<ND>_<bits> for ND = 1, 2, 3, 0 (0: any rank) and 32- then
 * 64-bit indices, in the order cmx__gpu_strided_kernel counts them. */
#define CMX__GPU_STRIDED_KERNELS(prefix)                              \
  prefix "_g1_32", prefix "_g2_32", prefix "_g3_32", prefix "_g0_32", \
      prefix "_g1_64", prefix "_g2_64", prefix "_g3_64", prefix "_g0_64"
#define CMX__GPU_NUM_STRIDED 8

/* ---------------- loaded kernels (module.c) ---------------- */

/* A kernel loaded on a device, with what launching it needs to know.
 * Valid until cmx__gpu_module_cache_clear. */
typedef struct cmx__gpu_kernel {
  CUfunction fn;
  const cmx__gpu_family* family;
  int variant, index, dev;
  const char* name;           /* its entry point */
  int max_threads;            /* threads per block it can launch with */
  int static_shared;          /* bytes of static shared memory */
  int regs;                   /* registers a thread (0: unknown) */
  _Atomic int dynamic_shared; /* dynamic shared bytes it may use now */
} cmx__gpu_kernel;

/* Kernel `kernel` (an index into f->kernels) of variant v of family f on
 * device dev: from the in-memory cache, else built (through the disk
 * cache, cmx__gpu_image_get) and loaded. NULL with the error set. */
const cmx__gpu_kernel* cmx__gpu_kernel_get(int dev, const cmx__gpu_family* f,
                                           int v, int kernel);
/* Kernel 0 (variant 0) of family f loaded from `image` (a CUBIN, fatbin
 * or NUL-terminated PTX, read by the driver as it is, never compiled):
 * precompiled extension kernels (extension.c). Cached as
 * cmx__gpu_kernel_get's, by (dev, f). NULL with the error set. */
const cmx__gpu_kernel* cmx__gpu_kernel_get_image(int dev,
                                                 const cmx__gpu_family* f,
                                                 const void* image);
/* Blocks of `threads` threads, `regs` registers a thread and `shared`
 * shared bytes (static and dynamic) that one multiprocessor of d holds at
 * once, by the registers, threads, blocks and shared memory it has
 * (module.c); 0 when regs is unknown (0) or a block cannot fit. A grid of
 * at most that many blocks a multiprocessor runs in one wave. */
int cmx__gpu_occupancy(const cmx__gpu_device* d, int regs, int threads,
                       size_t shared);
/* cmx__gpu_occupancy of kernel k on its device, with `dyn_shared` dynamic
 * shared bytes besides its static ones. */
int cmx__gpu_blocks_per_sm(const cmx__gpu_kernel* k, int threads,
                           size_t dyn_shared);
/* Drops the in-memory module cache (after synchronising every device), so
 * the next lookups read the disk cache. For tests. */
void cmx__gpu_module_cache_clear(void);

/* ---------------- launching: the encoder (encoder.c) ---------------- */

/* A launch configuration: grid and block sizes, dynamic shared memory. */
typedef struct cmx__gpu_cfg {
  unsigned grid[3], block[3];
  size_t shared;
} cmx__gpu_cfg;
/* The configuration of k's family shape for `work` items (1-D). */
cmx__gpu_cfg cmx__gpu_cfg_for(const cmx__gpu_kernel* k, int64_t work);
/* cmx__gpu_cfg_for without GRID_STRIDE's cap: ceil(work / threads) blocks,
 * one trip of the kernel's grid-stride loop a thread (any grid is correct
 * for such a loop; this is the faster shape for the contiguous streaming
 * kernels: on an H200, copy 3.61 -> 3.86-3.94 TB/s, add 3.87 -> 4.10,
 * compiled gelu 0.296 -> 0.275 ms, but strided copies and float32 ->
 * bfloat16 conversion slower, so those keep the cap). CMX_CUDA_ONE_SHOT=0
 * gives cmx__gpu_cfg_for's shape (A/B runs; read once). */
cmx__gpu_cfg cmx__gpu_cfg_one_shot(const cmx__gpu_kernel* k, int64_t work);

/* Kernel arguments, packed by value as the kernel declares them (each at
 * its alignment); any number of them up to the limits below. */
#define CMX__GPU_MAX_ARGS 32
#define CMX__GPU_ARGS_BYTES 4096
typedef struct cmx__gpu_args {
  int n;
  bool overflow; /* more than the limits: launching fails */
  size_t used;
  uint16_t offset[CMX__GPU_MAX_ARGS], size[CMX__GPU_MAX_ARGS];
  _Alignas(16) unsigned char data[CMX__GPU_ARGS_BYTES];
} cmx__gpu_args;
void cmx__gpu_args_init(cmx__gpu_args* a);
/* Appends size bytes of value at the given alignment. */
void cmx__gpu_args_add(cmx__gpu_args* a, const void* value, size_t size,
                       size_t align);
/* Appends variable v (its size and alignment). */
#define CMX__GPU_ARG(a, v) \
  cmx__gpu_args_add((a), &(v), sizeof(v), __alignof__(v))

/* A command of a GPU task: what the encoder issues on a stream, or hands
 * to a recorder. */
typedef enum {
  CMX__GPU_CMD_LAUNCH = 0, /* kernel, cfg, args */
  CMX__GPU_CMD_MEMSET,     /* count elements of elem (1, 2, 4) bytes = value */
  CMX__GPU_CMD_COPY,       /* count bytes from src to dst, device to device */
  /* call(ctx, stream): work a library enqueues itself (a cuBLASLt
   * product). ctx is borrowed for the encode only: a recorder must let
   * the command through (or replay what it holds first, then issue it),
   * never keep it for later. */
  CMX__GPU_CMD_CALL
} cmx__gpu_cmd_kind;
typedef struct cmx__gpu_cmd {
  cmx__gpu_cmd_kind kind;
  const char* op; /* the primitive it works for, in errors */
  const cmx__gpu_kernel* kernel;
  cmx__gpu_cfg cfg;
  const cmx__gpu_args* args; /* borrowed for the call */
  CUdeviceptr dst, src;
  size_t count;
  unsigned elem;
  uint32_t value;
  cmx_status (*call)(void* ctx, CUstream s); /* CALL */
  void* ctx;
  /* CALL: the library's work may be captured into a CUDA graph (it only
   * enqueues work on the stream it is given: no host synchronisation, no
   * allocation), so a batch of launches need not be cut around it. */
  bool graphable;
} cmx__gpu_cmd;

/* A recorder sees every command of the GPU tasks that run on the thread
 * it is installed on (GPU tasks run on the evaluating thread, so that is
 * every launch, memset and copy of the evals the thread makes), with the
 * stream it is for. It copies what it keeps (cmd and its args are
 * borrowed) and sets *issue to false when it takes the command over (it
 * replays it later, with cmx__gpu_cmd_issue or as a CUDA graph node), or
 * leaves it true to have it issued now. An error status fails the task.
 * Buffers are not commands: allocations and frees stay stream-ordered
 * (memory.c), so a recorder that delays commands must keep the buffers
 * they touch alive until it replays them (an intermediate's free is
 * queued when its last reference drops, which may be before the replay). */
typedef struct cmx__gpu_recorder {
  cmx_status (*record)(void* ctx, int dev, CUstream s, const cmx__gpu_cmd* cmd,
                       bool* issue);
  void* ctx;
} cmx__gpu_recorder;
/* Whether the calling thread has a recorder installed. */
bool cmx__gpu_recording(void);
/* Installs r (borrowed; NULL: none) as the calling thread's recorder;
 * returns the one it replaces. */
const cmx__gpu_recorder* cmx__gpu_recorder_set(const cmx__gpu_recorder* r);

/* Issues cmd on stream s of device dev: the one place where cmx calls
 * cuLaunchKernel, cuMemset*Async and cuMemcpyDtoDAsync. Launches are
 * checked against the kernel's and the device's limits first (threads per
 * block, shared memory: a kernel asking for more than 48 KB is opted in
 * with cuFuncSetAttribute), with errors naming cmd->op. */
cmx_status cmx__gpu_cmd_issue(int dev, CUstream s, const cmx__gpu_cmd* cmd);
/* The encoder: cmd of the GPU task running on this thread goes to the
 * thread's recorder, else is issued on the task's stream. Fails outside a
 * GPU task. */
cmx_status cmx__gpu_encode(const cmx__gpu_cmd* cmd);
/* Encodes a launch of k. */
cmx_status cmx__gpu_launch(const char* op, const cmx__gpu_kernel* k,
                           const cmx__gpu_cfg* cfg, const cmx__gpu_args* args);
/* Encodes a memset of count elements of elem (1, 2 or 4) bytes to value. */
cmx_status cmx__gpu_memset(const char* op, CUdeviceptr dst, uint32_t value,
                           unsigned elem, size_t count);
/* Encodes a device-to-device copy of bytes. */
cmx_status cmx__gpu_copy_d2d(const char* op, CUdeviceptr dst, CUdeviceptr src,
                             size_t bytes);
/* Encodes call(ctx, stream) (CMX__GPU_CMD_CALL): a library's work on the
 * task's stream; call's status is the command's. */
cmx_status cmx__gpu_call(const char* op, cmx_status (*call)(void*, CUstream),
                         void* ctx);

/* cmx__gpu_call for a library call that may be captured into a CUDA
 * graph (cmx__gpu_cmd.graphable): a cuBLASLt product. */
cmx_status cmx__gpu_call_graphable(const char* op,
                                   cmx_status (*call)(void*, CUstream),
                                   void* ctx);
/* Checks a launch command against the kernel's and the device's limits
 * (opting the kernel in to more dynamic shared memory when cmd asks for
 * it): what cmx__gpu_cmd_issue checks before cuLaunchKernel, for commands
 * issued later as graph nodes. */
cmx_status cmx__gpu_launch_check(int dev, const cmx__gpu_cmd* cmd);

/* Hands cmd of the GPU task running on this thread (on stream s of
 * device dev) to the stream: its batch takes it (graph.c), or the batch is
 * issued and then cmd (cmx__gpu_cmd_issue; stream.c). *batched: the
 * batch took it. */
cmx_status cmx__gpu_stream_encode(int dev, CUstream s, const cmx__gpu_cmd* cmd,
                                  bool* batched);
/* Commands issued so far (all threads), for tests and diagnostics. */
typedef struct cmx__gpu_encoder_stats {
  uint64_t launches, memsets, copies, recorded;
  uint64_t calls; /* CMX__GPU_CMD_CALL commands issued */
} cmx__gpu_encoder_stats;
cmx__gpu_encoder_stats cmx__gpu_encoder_stats_get(void);

/* ---------------- batches of launches as CUDA graphs (graph.c) ---------
 *
 * A GPU stream batches the commands its tasks encode (stream.c) and issues
 * them when something needs them on the device (a wait, an event, a free
 * on another stream, a command that cannot be batched, the batch's size
 * limit): a run of kernel launches (and, with CMX_CUDA_GRAPH_CAPTURE=1,
 * captured library calls) becomes one CUDA graph launch. Each batch keeps
 * the executable graphs it made, keyed by the run's shape (kernels, launch
 * configurations, argument sizes), and replays a known run by updating the
 * kernel nodes whose arguments changed (cuGraphExecKernelNodeSetParams)
 * and the captured calls (cuGraphExecChildGraphNodeSetParams) instead of
 * instantiating again. A run seen fewer than CMX_CUDA_GRAPH_MIN_SEEN times
 * before, or shorter than the graph threshold, is launched kernel by
 * kernel. Any graph error falls back to those plain launches.
 * On by default; CMX_CUDA_GRAPHS=0 turns batching off (graph.c). */
typedef struct cmx__gpu_batch cmx__gpu_batch;
/* Whether batching is on: CMX_CUDA_GRAPHS unset (graph.c's default, on)
 * or =1; =0 off; and the driver has the graph entry points (read
 * once). */
bool cmx__gpu_graphs_enabled(void);
/* A new, empty batch issuing on stream s of device dev, or NULL (batching
 * off, or out of memory: commands are then issued directly). */
cmx__gpu_batch* cmx__gpu_batch_new(int dev, CUstream s);
/* Frees b and its executable graphs (its stream idle, b empty). */
void cmx__gpu_batch_free(cmx__gpu_batch* b);
/* Takes cmd (a copy) into b: kernel launches (checked now) and, when
 * capturing is on, graphable library calls (captured now into a graph of
 * their own). *taken is false when cmd cannot be batched (memsets,
 * copies, other calls, a failed capture, graphable calls while capturing
 * is off): the caller issues b's commands, then cmd itself. An error
 * status is the command's (its launch check). */
cmx_status cmx__gpu_batch_add(cmx__gpu_batch* b, const cmx__gpu_cmd* cmd,
                              bool* taken);
/* Commands in b. */
int cmx__gpu_batch_size(const cmx__gpu_batch* b);
/* Issues b's commands on its stream (as graphs where that pays, see above)
 * and empties b. Errors are asynchronous ones (the tasks that encoded the
 * commands have finished): the caller reports them. */
cmx_status cmx__gpu_batch_flush(cmx__gpu_batch* b);
/* Drops every executable graph of b (a kernel module unloaded). */
void cmx__gpu_batch_forget(cmx__gpu_batch* b);
/* The most commands a batch takes before it is issued (flushed). */
int cmx__gpu_batch_limit(void);

typedef struct cmx__gpu_graph_stats {
  uint64_t graph_launches; /* cuGraphLaunch calls */
  uint64_t graph_nodes;    /* nodes those launches ran */
  uint64_t instantiated;   /* executable graphs made */
  uint64_t reused;         /* launches of an executable graph made before */
  uint64_t node_updates;   /* kernel nodes whose arguments were updated */
  uint64_t direct;         /* batched commands launched one by one */
  uint64_t captures;       /* library calls captured */
  uint64_t fallbacks;      /* graph errors that fell back to launches */
  uint64_t flushes;        /* non-empty batches issued */
  uint64_t programmatic;   /* programmatic edges in graphs instantiated */
} cmx__gpu_graph_stats;
cmx__gpu_graph_stats cmx__gpu_graph_stats_get(void);
/* For tests: 1 or 0 forces batching on or off from now on (-1: the
 * environment's choice); the graph threshold (runs of at least this many
 * nodes become graphs; 0: the default); makes the next n graph
 * instantiations fail (testing the fallback). */
void cmx__gpu_graphs_set(int on, int min_nodes);
void cmx__gpu_graphs_fail_next(int n);
/* For tests and benchmarks: the plain sightings a run needs before it
 * becomes a graph (0: CMX_CUDA_GRAPH_MIN_SEEN's or the default), and
 * whether graphable library calls are captured into the batch (1), cut it
 * (0), or follow CMX_CUDA_GRAPH_CAPTURE (-1). */
void cmx__gpu_graphs_tune(int min_seen, int capture);
/* For tests and benchmarks: 1 or 0 turns programmatic edges between
 * waiting kernels on or off in graphs instantiated from now on (batches
 * made from now on), 2 keeps them to kernels after one that fits the card
 * in one wave, -1 follows CMX_CUDA_PDL (graph.c). */
void cmx__gpu_graphs_pdl(int on);

/* ---------------- eval_gpu helpers (launch.c) ---------------- */

/* Arrays of one shape (output first) as kernels see them: size-1 dims
 * dropped and jointly contiguous dims merged. */
#define CMX__GPU_MAX_OPERANDS 12
typedef struct cmx__gpu_layout {
  int ndim, narr;
  int64_t shape[CMX_MAX_NDIM];
  int64_t strides[CMX__GPU_MAX_OPERANDS][CMX_MAX_NDIM];
} cmx__gpu_layout;
/* Collapses the layout of arrays[0..n) (n <= CMX__GPU_MAX_OPERANDS, every
 * one of arrays[0]'s shape). */
void cmx__gpu_layout_make(cmx__gpu_layout* l, const cmx_array* arrays, int n);
/* The same from a shape and n stride sets. */
void cmx__gpu_layout_from(cmx__gpu_layout* l, const int64_t* shape, int ndim,
                          const int64_t* const* strides, int n);
/* True when the element count and every |offset| reachable in l's arrays
 * fit in a signed 32-bit index. */
bool cmx__gpu_layout_fits_i32(const cmx__gpu_layout* l, int64_t size);
/* Appends l as the kernel parameter cmx_layout_n<narr> (common.cu). */
void cmx__gpu_args_layout(cmx__gpu_args* a, const cmx__gpu_layout* l);
/* The index (0 .. CMX__GPU_NUM_STRIDED-1) among CMX__GPU_STRIDED_KERNELS
 * of the strided kernel for l's rank with 32- or 64-bit indices. */
int cmx__gpu_strided_kernel(const cmx__gpu_layout* l, bool i32);
/* Appends a strided kernel's trailing arguments: the element count n
 * (int when l and n fit 32-bit indices, else long long) and l. Returns
 * the index of the strided kernel for them (cmx__gpu_strided_kernel). */
int cmx__gpu_args_strided(cmx__gpu_args* a, const cmx__gpu_layout* l,
                          int64_t n);
/* Appends an element count n: int when i32, else long long. */
void cmx__gpu_args_count(cmx__gpu_args* a, bool i32, int64_t n);

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

/* ---------------- families' helpers ---------------- */

/* The variant of the copy kernels for elements of itemsize bytes
 * (copy.c). */
int cmx__gpu_copy_variant(size_t itemsize);
/* Puts the `size` bytes at value (1, 2, 4 or 8) at dst with one launch on
 * the running GPU task's stream, the value a launch argument (batched like
 * any launch; value is read now). op names errors. */
cmx_status cmx__gpu_put_value(const char* op, int dev, CUdeviceptr dst,
                              const void* value, size_t size);
/* Copies src (any layout) into dst, a row-major device array of the same
 * size and dtype (its shape may differ: a reshape), on device dev; op names
 * errors (copy.c). */
cmx_status cmx__gpu_copy_rowmajor(cmx_array dst, cmx_array src, int dev,
                                  const char* op);
/* A row-major copy of x (any layout) in a new device buffer *out of
 * device dev (copy.c): *out is NULL when the allocation failed; on a
 * failed copy it is set and the caller still releases it. op names
 * errors. */
cmx_status cmx__gpu_pack_rowmajor(cmx_array x, int dev, const char* op,
                                  cmx__buffer** out);
/* Copies every element of shape (ndim dims) from device address src,
 * element strides src_st, to device address dst, strides dst_st, on the
 * running GPU task's stream of device dev (copy.c): elements of isz bytes
 * (1, 2, 4 or 8; 16-byte elements are not handled), strides of any sign,
 * zero source strides broadcast one element; the destination must not
 * overlap itself or the source. Contiguous runs move as 16-byte vectors,
 * one source element fills with them. op names errors. The caller marks
 * the written array (cmx_kernel_mark_device_written). */
cmx_status cmx__gpu_copy_strided(const char* op, int dev, CUdeviceptr dst,
                                 const int64_t* dst_st, CUdeviceptr src,
                                 const int64_t* src_st, const int64_t* shape,
                                 int ndim, size_t isz);

/* Writes the prelude lines of float storage dtype dt (float16, bfloat16,
 * float32) to buf: "#define <P>_T <type>", "#define <P>_TOF(x) <to
 * float32>" and "#define <P>_FROMF(v) <from float32>", P = prefix.
 * Returns snprintf's count (fast.c). */
int cmx__gpu_float_prelude(char* buf, size_t size, const char* prefix,
                           cmx_dtype dt);
/* The variant v (a dtype) of a family with one variant per floating dtype
 * (softmax.c): false for other dtypes; the prelude defines CMX_S_T (the
 * storage type), CMX_S_F (the compute type: float, double for float64),
 * CMX_S_TOF(x) and CMX_S_FROMF(v) (storage <-> compute, through
 * ew_scalar.h's conversions: the family's preamble has "ew_bind" and
 * "ew_scalar"); the name is "<family>_<dtype>". */
bool cmx__gpu_float_variant(int v, const char* family, cmx__gpu_variant* out);
/* The suffix of dtype dt's storage type in kernel sources (ew_scalar.h's
 * cmx_<suffix>_t: "b8", "u8" ... "c64") (reduce.c). */
const char* cmx__gpu_dtype_suffix(cmx_dtype dt);
/* The identity of max (its lowest value: -inf for floats) or min (the
 * highest) over dtype dt, as a kernel-source expression (reduce.c). */
const char* cmx__gpu_minmax_identity(cmx_dtype dt, bool max);
/* Copies blocks of `block` elements (isz bytes each) from src, a row-major
 * stack of nblocks of them, to dst: block p of dst is block idx[p] of src
 * (idx: any integer dtype and layout; an index outside [0, nblocks), after
 * wrapping a negative one, gives a block of zeros and a deferred index
 * error of op naming the operand `which`) (indexing.c). */
cmx_status cmx__gpu_gather_blocks(const char* op, const char* which, int dev,
                                  CUdeviceptr dst, CUdeviceptr src, size_t isz,
                                  cmx_array idx, int64_t nblocks,
                                  int64_t block);

/* A strided batched product on device data, for kernels built on
 * products (matmul.c): for i < batch, D_i = A_i @ B_i with A_i (M x K,
 * element strides a_rs, a_cs) at a + i * a_bs elements, B_i (K x N,
 * strides b_rs, b_cs) at b + i * b_bs, D_i (M x N, row stride d_rs,
 * column stride 1) at d + i * d_bs; dt a floating dtype (float16/bfloat16
 * accumulate in float32; float32 as Matmul, TF32 only when allowed).
 * Each operand needs a unit stride along its rows or its columns; K >= 1.
 * Encoded on the running GPU task's stream; op names errors. */
typedef struct cmx__gpu_gemm_desc {
  cmx_dtype dt;
  int64_t M, N, K, batch;
  CUdeviceptr a, b, d;
  int64_t a_rs, a_cs, a_bs, b_rs, b_cs, b_bs, d_rs, d_bs;
} cmx__gpu_gemm_desc;
cmx_status cmx__gpu_gemm(const char* op, int dev, const cmx__gpu_gemm_desc* g);

/* ---------------- cuBLASLt (cublaslt.c) ---------------- */

/* The resolved cuBLASLt entry points (valid once
 * cmx__cublaslt_available()). */
extern cmx__cublaslt_api cmx__lt;
/* True when libcublasLt could be loaded with every entry point; otherwise
 * *why (if given) says why. */
bool cmx__cublaslt_available(const char** why);
/* cuBLASLt's version (e.g. 130100), 0 when not loaded. */
size_t cmx__cublaslt_version(void);
/* The cuBLASLt handle of device dev, created at first use and kept for
 * the process. Fails with "[op] cuBLASLt not available: <why>" when the
 * library is missing, or names the failing call. */
cmx_status cmx__cublaslt_handle(int dev, const char* op, cublasLtHandle_t* out);
/* Loads cuBLASLt from exactly `path` into a private table, for tests of
 * the loader's errors: false with why set as cmx__cublaslt_available
 * would say it. */
bool cmx__cublaslt_probe(const char* path, char* why, size_t why_size);

#endif
