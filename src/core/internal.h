/* Internal core structures: array nodes, ops (a primitive applied to
 * inputs), data buffers, streams and tasks, scopes and errors.
 *
 * Ownership model
 * - A node (struct cmx_array_node) is refcounted. While lazy it holds a
 *   reference to its op; the op holds references to its inputs and weak
 *   pointers to its outputs (a dying sibling clears its slot under the op's
 *   lock), so multi-output ops make no reference cycles.
 * - Scheduling turns an op into a task holding references to inputs and
 *   outputs, then detaches the outputs from the op (history is dropped as
 *   soon as work is queued). The worker runs the kernel and drops the task.
 * - Releases are iterative (a thread-local worklist), so dropping a chain of
 *   a million lazy nodes does not recurse.
 */
#ifndef CMX_CORE_INTERNAL_H
#define CMX_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "cmx/array.h"
#include "cmx/primitive.h"

/* Thread-locals touched on every op use the initial-exec TLS model (a
 * direct offset instead of a __tls_get_addr call); keep them small, since a
 * dlopen'ed library draws them from glibc's limited static TLS surplus. */
#define CMX__TLS_FAST __attribute__((tls_model("initial-exec")))

/* ---------------- errors ---------------- */
/* Sets the thread's error (message printf-style) and returns status. */
cmx_status cmx__error(cmx_status status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
cmx_status cmx__verror(cmx_status status, const char* fmt, va_list ap);
/* True when an error was set since the outermost public call began. */
bool cmx__error_pending(void);
void cmx__error_reset_pending(void);
/* The thread's error status and pending flag, to put back after running
 * kernels on this thread (their errors belong to the arrays they fail,
 * not to the caller: see cpu_run_claimed in scheduler.c). */
typedef struct cmx__error_mark {
  cmx_status status;
  bool pending;
} cmx__error_mark;
cmx__error_mark cmx__error_mark_get(void);
void cmx__error_mark_restore(cmx__error_mark m);
/* Sets an error and evaluates to NULL, for expression-style internals. */
#define CMX__FAIL(status, ...) (cmx__error((status), __VA_ARGS__), (void*)0)

/* Internal invariant check: a broken invariant is a cmx bug, not user
 * error; it reports and aborts in every build. */
#define CMX__ASSERT(cond)                                     \
  do {                                                        \
    if (!(cond)) cmx__assert_fail(#cond, __FILE__, __LINE__); \
  } while (0)
_Noreturn void cmx__assert_fail(const char* what, const char* file, int line);

/* ---------------- scalars ---------------- */
typedef union cmx__scalar_value {
  int64_t i;
  uint64_t u;
  double f;
  struct {
    double re, im;
  } c;
} cmx__scalar_value;
/* Writes scalar s (of kind: 0 int64, 1 uint64, 2 double, 3 complex) at
 * dst as one element of dtype dt (integers wrap, floats round, bool is
 * s != 0). */
void cmx__store_scalar(void* dst, cmx_dtype dt, int kind, cmx__scalar_value s);

/* ---------------- buffers ---------------- */
typedef struct cmx__buffer {
  _Atomic int64_t refcount;
  size_t size;                   /* bytes asked for */
  size_t capacity;               /* bytes of the size class */
  void* host;                    /* host copy or NULL */
  uint64_t dev;                  /* device copy (CUdeviceptr) or 0 */
  int dev_index;                 /* device of dev, -1 when none */
  bool host_valid;               /* host copy holds the current data */
  bool dev_valid;                /* device copy holds the current data */
  struct cmx__buffer* next_free; /* cache free-list link */
  /* Device memory owned elsewhere (cmx_array_from_device_memory): dev is
   * not cmx's to free or count; once no queued work reads it, the last
   * release calls ext_release(ext_ctx). NULL for cmx's own buffers. */
  void (*ext_release)(void* ctx);
  void* ext_ctx;
  /* The GPU stream whose queued (perhaps still batched) work made dev
   * current, and that work's batch ticket: readers on other streams, or
   * on the host, order after it first (the GPU backend's small uploads,
   * backend/cuda/memory.c). NULL when nothing needs ordering. */
  void* dev_writer;
  uint64_t dev_writer_ticket;
} cmx__buffer;

/* Whether b's device copy on device dev can be read as it is, without the
 * backend's to_device hook: current there and put by nobody still to be
 * waited for (the GPU backend stores dev_writer before dev_valid, so a
 * reader that sees dev_valid sees the writer too). */
static inline bool cmx__buffer_dev_ready(const cmx__buffer* b, int dev) {
  bool valid = b->dev_valid;
  atomic_thread_fence(memory_order_acquire);
  return valid && b->dev_index == dev && !b->dev_writer;
}

/* Allocates a host buffer of at least `bytes` (64-byte aligned, from the
 * cache when possible). NULL with CMX_ERR_MEMORY set on failure or when the
 * memory limit would be exceeded. */
cmx__buffer* cmx__buffer_alloc(size_t bytes);
cmx__buffer* cmx__buffer_retain(cmx__buffer* b);
void cmx__buffer_release(cmx__buffer* b);
/* Makes the host copy valid (copies from the device if needed). */
cmx_status cmx__buffer_to_host(cmx__buffer* b);

/* Device memory hooks, installed by the GPU backend when it loads. */
typedef struct cmx__device_memory_hooks {
  /* Copies the device copy to the host copy (allocating it). */
  cmx_status (*to_host)(cmx__buffer* b);
  /* Makes the device copy valid on device index dev. */
  cmx_status (*to_device)(cmx__buffer* b, int dev);
  /* Frees the device copy (stream-ordered). */
  void (*free_device)(cmx__buffer* b);
  /* Allocates a device-only buffer of `bytes` on device dev. */
  cmx__buffer* (*alloc_device)(size_t bytes, int dev);
  /* Frees cached device buffers until at most `target` bytes stay cached
   * on all devices together (cmx_clear_cache: 0; cmx_set_cache_limit). */
  void (*trim_cache)(size_t target);
} cmx__device_memory_hooks;
extern const cmx__device_memory_hooks* cmx__device_hooks;

/* The size class of a request of `bytes` (core/memory.c; -1: none) and, in
 * *cap, its capacity: device caches bucket by the same classes. */
int cmx__mem_size_class(size_t bytes, size_t* cap);
/* Device bytes in the memory figures (cmx/memory.h counts host and device
 * together). reserve: cap more bytes active; fails (CMX_ERR_MEMORY,
 * "[op] allocating <bytes> bytes of device memory would exceed the memory
 * limit ...") when a limit set by cmx_set_memory_limit would be passed
 * (without one the device's own memory is the limit). unreserve: cap
 * fewer. cache_add: cap bytes move into a device cache, when that stays
 * within the cache limit (false: free them instead); cache_sub: out of
 * it. */
cmx_status cmx__mem_device_reserve(size_t cap, const char* op, size_t bytes);
void cmx__mem_device_unreserve(size_t cap);
bool cmx__mem_device_cache_add(size_t cap);
void cmx__mem_device_cache_sub(size_t cap);
/* Device bytes active now, and cached now (all devices). */
size_t cmx__mem_device_active(void);
size_t cmx__mem_device_cached(void);
/* Host memory accounting, for device backends that keep host copies. */
void* cmx__host_alloc_raw(size_t capacity);

/* ---------------- ops and nodes ---------------- */
struct cmx_primitive {
  _Atomic int64_t refcount;
  const cmx_primitive_vtable* vt;
  cmx_stream stream; /* concrete */
  size_t params_size;
  _Alignas(16) unsigned char params[];
};

typedef struct cmx__op {
  _Atomic int64_t refcount;
  cmx_primitive* prim;
  int nin, nout;
  cmx_array* inputs;                /* strong */
  struct cmx_array_node** outputs;  /* weak */
  const int64_t* const* out_shapes; /* nout > 1: descriptors for */
  const int* out_ndims;             /*   outputs that died before */
  const cmx_dtype* out_dtypes;      /*   the op ran */
  atomic_flag lock;
  uint32_t mark;
} cmx__op;

enum {
  CMX__NODE_UNSCHEDULED = 0, /* has an op */
  CMX__NODE_SCHEDULED = 1,   /* queued; available when its stream passes seq */
  CMX__NODE_AVAILABLE = 2    /* data readable */
};

enum { CMX__FLAG_ROW_CONTIG = 1, CMX__FLAG_COL_CONTIG = 2 };

struct cmx_array_node {
  _Atomic int64_t refcount;
  cmx_dtype dtype;
  int ndim;
  int64_t size;
  uint8_t weak;   /* weakly typed scalar (value in weak_value) */
  uint8_t flags;  /* CMX__FLAG_* (valid once the data exists) */
  uint8_t tracer; /* CMX__TRACER_*: depends on a transform's input */
  _Atomic uint8_t status;
  uint32_t mark;     /* graph walks */
  uint32_t depth;    /* longest path from data (eval visits deeper
                        inputs first: lower peak memory) */
  int stream;        /* producer stream index, -1 for data */
  uint64_t seq;      /* producer task number on that stream */
  cmx__op* op;       /* while unscheduled */
  cmx__op* hist;     /* a tracer's op kept after scheduling while a
                        transform is tracing (the transform walks it) */
  int out_index;     /* position among the op's outputs */
  cmx__buffer* buf;  /* data, NULL until evaluated */
  int64_t offset;    /* elements from buf start to element 0 */
  int64_t data_size; /* elements reachable in buf from offset */
  char* error;       /* set when its computation failed (cmx__node_fail) */
  cmx_status error_status; /* the failure's kind (IndexError, MemoryError..) */
  cmx__scalar_value weak_value;
  int64_t dims[]; /* shape[ndim] then strides[ndim] */
};

enum {
  CMX__TRACER_NONE = 0,
  CMX__TRACER = 1,     /* computed from a transform's traced input */
  CMX__PLACEHOLDER = 2 /* vmap's stand-in input: shape only, no data */
};
/* The error of reading a transform's placeholder input (vmap): MLX's
 * text and why. */
extern const char cmx__placeholder_msg[];
/* Number of transforms tracing right now (all threads). While > 0, tracer
 * nodes keep their history when evaluated. */
extern _Atomic int cmx__tracing;
/* The op that computed a (pending or kept as history), or NULL. */
static inline cmx__op* cmx__node_op(const struct cmx_array_node* a) {
  return a->op ? a->op : a->hist;
}

#define CMX__SHAPE(a) ((a)->dims)
#define CMX__STRIDES(a) ((a)->dims + (a)->ndim)

/* Allocates a node with row-major strides, no data, no op. Shape is
 * validated (non-negative, size fits). NULL with the error set (naming op)
 * on failure. */
cmx_array cmx__node_new(const char* op, const int64_t* shape, int ndim,
                        cmx_dtype dtype);
/* A node holding an available copy of data. */
cmx_array cmx__node_from_data(const char* op, const void* data,
                              const int64_t* shape, int ndim, cmx_dtype dt);
/* Sets row-major strides and contiguity flags. */
void cmx__node_set_row_major(cmx_array a);
/* Recomputes contiguity flags from shape and strides. */
void cmx__node_update_flags(cmx_array a);
/* Host pointer to element 0 (assumes buf and host copy present). */
static inline void* cmx__node_ptr(cmx_array a) {
  return (char*)a->buf->host + a->offset * (int64_t)cmx_dtype_size(a->dtype);
}
/* A 0-d array of dt holding scalar s, where kind says which member of s
 * holds the value (0 i, 1 u, 2 f, 3 c); weak marks weak typing. */
cmx_array cmx__scalar_node(const char* op, cmx__scalar_value s, int kind,
                           cmx_dtype dt, bool weak);
/* A weak scalar re-created exactly as dtype dt (not weak). */
cmx_array cmx__weak_cast(cmx_array a, cmx_dtype dt);
/* A strong reference to output i of op, or NULL when it died. */
cmx_array cmx__op_output(cmx__op* op, int i);
/* Element p of dtype dt as a double. */
double cmx__load_double(const void* p, cmx_dtype dt);
/* Waits until a is available (evaluating it if lazy). Returns the failure
 * of its computation if any, with the kernel's status. */
cmx_status cmx__node_wait(cmx_array a);
/* Records a failure of a's computation (message copied; the first one
 * stays), or clears it (msg NULL) before a is computed again. */
void cmx__node_fail(cmx_array a, const char* msg, cmx_status status);
/* Puts an op back on outputs[0..nout) of a task that failed for want of
 * memory, so that a later eval computes them again (inputs retained, prim
 * retained). Does nothing when out of memory for the op itself. Call with
 * the eval lock held. */
void cmx__op_reattach(cmx_primitive* prim, const cmx_array* inputs, int nin,
                      const cmx_array* outputs, int nout);
/* Host pointer after waiting and moving data to the host. */
cmx_status cmx__node_host(cmx_array a, void** out);

void cmx__op_release(cmx__op* op);
/* True when a kernel may give in's buffer to out: only the running task
 * holds in, nothing else shares its buffer, it is row-contiguous from the
 * buffer's start, and the byte sizes match. */
bool cmx__can_donate(cmx_array out, cmx_array in);

/* ---------------- scopes ----------------
 * Internal ops return borrowed handles owned by the innermost open scope
 * (or NULL with the error set); NULL inputs propagate. Public wrappers:
 *
 *   cmx_status cmx_exp(cmx_array* out, cmx_array a, cmx_stream s) {
 *     CMX__PUBLIC(out, "exp", cmx__exp(a, s));
 *   }
 */
size_t cmx__scope_enter(void);
/* Registers a new reference with the current scope; returns a. */
cmx_array cmx__own(cmx_array a);
/* Releases everything registered since mark; if keep is non-NULL it is
 * retained into *out first. Returns CMX_OK, or the pending error's status
 * when keep is NULL. */
cmx_status cmx__scope_exit(size_t mark, cmx_array keep, cmx_array* out);
/* Releases everything registered since mark, keeping n arrays. */
cmx_status cmx__scope_exit_n(size_t mark, const cmx_array* keep, cmx_array* out,
                             size_t n);
/* The public op this thread is in (set by the outermost CMX__PUBLIC,
 * cleared when its scope closes), so that errors from the nodes and
 * streams of its intermediates name the op the user called; NULL outside. */
extern _Thread_local const char* cmx__tl_public_op CMX__TLS_FAST;
/* Its name if set, else fallback. */
static inline const char* cmx__op_name(const char* fallback) {
  return cmx__tl_public_op ? cmx__tl_public_op : fallback;
}
/* Outermost public entry resets the "pending" error flag. */
#define CMX__PUBLIC(out, opname, expr)                                \
  do {                                                                \
    if (!(out))                                                       \
      return cmx__error(CMX_ERR_VALUE, "[%s] output pointer is NULL", \
                        (opname));                                    \
    *(out) = NULL;                                                    \
    size_t cmx__mark = cmx__scope_enter();                            \
    if (cmx__mark == 0) {                                             \
      cmx__error_reset_pending();                                     \
      cmx__tl_public_op = (opname);                                   \
    }                                                                 \
    cmx_array cmx__r = (expr);                                        \
    return cmx__scope_exit(cmx__mark, cmx__r, (out));                 \
  } while (0)

/* Checks array arguments: a NULL one fails with "[op] argument is a null
 * array" unless an error is already pending (then it just propagates). */
bool cmx__check_args(const char* op, int n, ...);
#define CMX__ARGS(op, ...)                                                 \
  cmx__check_args(                                                         \
      (op), (int)(sizeof((cmx_array[]){__VA_ARGS__}) / sizeof(cmx_array)), \
      __VA_ARGS__)

/* ---------------- streams and scheduling ---------------- */
typedef struct cmx__task {
  cmx_primitive* prim;
  int nin, nout, ndeps;
  cmx_array* arrays; /* nin inputs then nout outputs, strong */
  struct {
    int stream;
    uint64_t seq;
  } * deps;
  struct cmx__task* next;
} cmx__task;

typedef struct cmx__stream cmx__stream;
typedef struct cmx__stream_ops {
  /* Takes the task; assigns it the next seq (already set by the caller). */
  void (*submit)(cmx__stream* s, cmx__task* t);
  /* Blocks until task `seq` has finished. */
  void (*wait)(cmx__stream* s, uint64_t seq);
  /* Frees backend resources at exit. */
  void (*shutdown)(cmx__stream* s);
  /* The backend's own handle of the stream (a CUstream); NULL: none. */
  void* (*native)(cmx__stream* s);
  /* Optional: an error found after the fact by a wait (a GPU kernel's
   * out-of-range index), as a malloc'd message with its status in *st;
   * NULL when none. Taken once. */
  char* (*take_error)(cmx__stream* s, cmx_status* st);
  /* Optional: advances `completed` past the work found finished, without
   * blocking (a backend that marks its tasks' completion lazily needs it
   * asked; cmx__stream_done does). */
  void (*poll)(cmx__stream* s);
} cmx__stream_ops;

struct cmx__stream {
  int index;
  cmx_device device;
  const cmx__stream_ops* ops;
  uint64_t next_seq;          /* guarded by the eval lock */
  _Atomic uint64_t completed; /* every task <= completed has finished */
  void* backend;              /* backend state (cpu worker, cuda stream) */
};

#define CMX__MAX_STREAMS 256
/* The stream with this index, or NULL. */
cmx__stream* cmx__stream_get(int index);
/* Resolves stream-or-device s to a concrete stream; NULL with error. */
cmx__stream* cmx__stream_resolve(cmx_stream s, const char* op);
/* Registers a new stream on dev with the given backend; returns it. */
cmx__stream* cmx__stream_register(cmx_device dev, const cmx__stream_ops* ops,
                                  void* backend);
/* Waits until stream `index` has passed seq. */
void cmx__stream_wait(int index, uint64_t seq);
bool cmx__stream_done(int index, uint64_t seq);

/* Runs one task: waits for cross-stream dependencies, propagates input
 * failures, moves data for the device, calls the kernel, records a failure
 * on the outputs. Used by every stream backend. Frees the task. */
void cmx__task_run(cmx__task* t);
void cmx__task_free(cmx__task* t);

/* CPU stream backend (a worker thread with a FIFO queue). */
extern const cmx__stream_ops cmx__cpu_stream_ops;
void* cmx__cpu_worker_new(cmx__stream* s);

/* Device backends (the GPU) register their device queries and stream
 * creation with core: see core/backend.h. */

/* ---------------- thread pool ---------------- */
/* Calls fn(ctx, begin, end) over [0, n) split into chunks of at least
 * grain items across the pool (and the calling thread). Runs inline when
 * n < 2 * grain or the pool has one thread. */
void cmx__parallel_for(int64_t n, int64_t grain,
                       void (*fn)(void* ctx, int64_t begin, int64_t end),
                       void* ctx);
int cmx__pool_threads(void);

/* ---------------- environment ---------------- */
/* All environment variables are read in env.c. */
typedef struct cmx__env {
  int num_threads;            /* CMX_NUM_THREADS, default nproc */
  int default_gpu;            /* CMX_DEFAULT_DEVICE: gpu 1, cpu 0, else -1 */
  int max_inflight_tasks;     /* CMX_MAX_INFLIGHT, backpressure bound */
  int fork_wait_ms;           /* CMX_FORK_WAIT_MS: fork() waits this long
                                 for the CPU kernels running (cpu_stream.c) */
  const char* cache_dir;      /* CMX_CACHE_DIR, kernel cache (GPU) */
  const char* xdg_cache_home; /* XDG_CACHE_HOME: cache root when no
                                 CMX_CACHE_DIR */
  const char* home;           /* HOME: ~/.cache/cmx as the last resort */
  const char* cuda_home;      /* CUDA_HOME or CUDA_PATH: where NVRTC is looked
                                 for after the loader's search path */
  int disable_compile;        /* CMX_DISABLE_COMPILE / MLX_DISABLE_COMPILE */
  int compile_explain;        /* CMX_COMPILE_EXPLAIN: log why compile traces */
  const char* cc;             /* CMX_CC: the C compiler compile runs ("cc") */
  const char* path;           /* PATH: where the C compiler is looked for */
  int vmap_fallback;          /* CMX_VMAP_FALLBACK */
  int conv_blas;              /* CMX_CONV_BLAS: the convolution's float32
                                 products through OpenBLAS even where
                                 cmx's AVX-512 product runs */
} cmx__env;
const cmx__env* cmx__env_get(void);
/* The ring's and the timeouts' environment, read now (core/env.c):
 * MLX_HOSTFILE, MLX_RANK, CMX_DISTRIBUTED_TIMEOUT (seconds, default 300),
 * MLX_RING_VERBOSE. */
typedef struct cmx__dist_env {
  const char* hostfile; /* NULL when unset */
  int rank;             /* -1 when unset or not a number */
  int timeout_s;
  int verbose;
  int under_mpirun; /* OMPI_COMM_WORLD_SIZE or PMI_SIZE is set */
} cmx__dist_env;
void cmx__dist_env_read(cmx__dist_env* e);

/* ---------------- misc ---------------- */
/* Formats a shape as "(2,3)" into buf. */
const char* cmx__shape_str(const int64_t* shape, int ndim, char* buf,
                           size_t size);
/* Product of dims with overflow check; -1 on overflow. */
int64_t cmx__shape_size(const int64_t* shape, int ndim);

#endif
