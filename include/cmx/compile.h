/* cmx/compile.h: compiling functions (MLX's compile).
 *
 * A compiled function is traced once with placeholder arrays (shape and
 * dtype, no data); the graph it builds is simplified (equal scalar
 * constants merged, no-ops dropped, equal nodes merged), its elementwise
 * regions fused into single kernels generated as C (the system compiler,
 * loaded with dlopen; without one the function still runs, unfused), and
 * cached. Later calls with inputs of the same shapes and dtypes replay the
 * cached graph on them without running the function again.
 *
 *     static cmx_status gelu(void* payload, const cmx_array* in, int n,
 *                            cmx_array** out, int* nout) { ... }
 *     cmx_compiled* cf;
 *     cmx_compile(&cf, (cmx_closure){gelu, NULL}, NULL);
 *     cmx_array* y; int ny;
 *     cmx_compiled_call(cf, &x, 1, &y, &ny);   // traces, fuses, compiles
 *     cmx_compiled_call(cf, &x2, 1, &y, &ny);  // replays (same shapes)
 *     cmx_compiled_release(cf);
 *
 * Recompilation (a new trace) happens when the number of array inputs, the
 * dtype of one, its shape (its ndim when shapeless), the caller's key of
 * non-array arguments, or the default stream changes; a trace is cached per
 * function identity in a bounded LRU (CMX_COMPILE_CACHE_SIZE traces in all,
 * cmx_compile_set_cache_size), and a function's traces die with its last
 * handle. CMX_COMPILE_EXPLAIN=1 logs every trace to stderr with its reason
 * (which input changed how, or an eviction). CMX_DISABLE_COMPILE=1 (or
 * MLX_DISABLE_COMPILE) and cmx_disable_compile() make compiled functions
 * plain calls.
 *
 * The function must be pure: arrays it reads other than its inputs are
 * constants of the trace (a later change to them is not seen) unless
 * captured; arrays it stores elsewhere are placeholders (evaluating or
 * printing one is an error). Evaluating an array that depends on an input
 * inside the function is an error while tracing.
 *
 * Generated kernels are cached in memory and on disk, in the "cpu" folder
 * of the user-private cache directory ($CMX_CACHE_DIR, else
 * $XDG_CACHE_HOME/cmx, else ~/.cache/cmx; folders 0700, files 0600), keyed
 * by a hash of the source and the compiler's identity. Files owned by
 * another user, writable by others, or failing their checksum are never
 * loaded. The compiler is $CMX_CC, else cc (found on PATH at first use).
 */
#ifndef CMX_COMPILE_H
#define CMX_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cmx/array.h"
#include "cmx/transforms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The default number of traces the LRU cache keeps (all functions). */
#define CMX_COMPILE_CACHE_SIZE 256

typedef struct cmx_compiled cmx_compiled;

/* Implicit state of a compiled function: arrays it reads besides its
 * arguments (captured inputs) or replaces (captured outputs), such as a
 * model's parameters. get writes the current arrays (borrowed) to out, at
 * most max of them, and returns how many there are (out may be NULL with
 * max 0 to count), or -1 with the error set. set replaces them by values
 * (n of them, borrowed: set retains what it keeps) and returns a status.
 * While a trace runs, compile sets the captured inputs to placeholders and
 * puts the originals back afterwards; after every call it sets the
 * captured outputs to their new values. get NULL: nothing captured. */
typedef struct cmx_compile_capture {
  int (*get)(void* ctx, cmx_array* out, int max);
  cmx_status (*set)(void* ctx, const cmx_array* values, int n);
  void* ctx;
} cmx_compile_capture;

typedef struct cmx_compile_options {
  /* Shape changes (same ndim) reuse the trace; output shapes are derived
   * again from the inputs at each call, and a graph whose shapes cannot be
   * derived (a reshape to a fixed shape that no longer fits) fails with an
   * error naming the op. */
  bool shapeless;
  /* The function's identity for the shared cache: handles with the same
   * id share traces (0: the closure's fn and payload). */
  uint64_t id;
  /* A name for CMX_COMPILE_EXPLAIN messages (copied; NULL: "function"). */
  const char* name;
  cmx_compile_capture inputs, outputs;
  /* Called once with the closure's payload when the handle is released
   * (NULL: the payload is not owned). */
  void (*release)(void* payload);
} cmx_compile_options;

/* Compiles f. opt may be NULL (defaults: shape-specialised, identity from
 * the closure, nothing captured). Nothing is traced until the first call.
 * Writes a new handle to *out (release with cmx_compiled_release). */
cmx_status cmx_compile(cmx_compiled** out, cmx_closure f,
                       const cmx_compile_options* opt);

/* Calls a compiled function on n input arrays: replays the cached trace
 * for these inputs, tracing f first when there is none. Writes *outputs
 * (malloc'ed, *nout new references; free with cmx_arrays_free). Outputs
 * are lazy like any op's. Errors: f's own, or an input that is not an
 * array, or shapes a shapeless trace cannot take. */
cmx_status cmx_compiled_call(cmx_compiled* c, const cmx_array* inputs, int n,
                             cmx_array** outputs, int* nout);
/* cmx_compiled_call with a key for the function's non-array arguments
 * (key_size bytes, compared as bytes: a different key is another trace)
 * and the trace's auxiliary pointer written to *aux when aux is non-NULL
 * (see cmx_compile_set_aux; NULL when the trace set none or compile is
 * disabled). */
cmx_status cmx_compiled_call_keyed(cmx_compiled* c, const cmx_array* inputs,
                                   int n, const void* key, size_t key_size,
                                   cmx_array** outputs, int* nout, void** aux);
/* Releases a handle; a function's cached traces go with its last handle.
 * NULL is ignored. */
void cmx_compiled_release(cmx_compiled* c);

/* Inside a function being traced by compile: attaches aux to the trace
 * (returned by later calls through cmx_compiled_call_keyed), with release
 * called once when the trace is dropped (NULL: not owned). Outside a trace
 * it fails with CMX_ERR_VALUE (and release, if any, is called at once). */
cmx_status cmx_compile_set_aux(void* aux, void (*release)(void*));
/* True while the calling thread is tracing a compiled function. */
bool cmx_compile_tracing(void);

/* Global switches (initially on, unless CMX_DISABLE_COMPILE or
 * MLX_DISABLE_COMPILE is set): disabled, a compiled function is called as
 * it is. */
void cmx_disable_compile(void);
void cmx_enable_compile(void);
bool cmx_compile_enabled(void);

/* The LRU cache's capacity in traces (>= 1; the least recently used goes
 * first); drops traces beyond it at once. */
cmx_status cmx_compile_set_cache_size(int n);
/* Drops every cached trace (and the in-memory kernels nothing uses). */
void cmx_compile_clear_cache(void);

/* Counters since the process started. */
typedef struct cmx_compile_stats {
  uint64_t traces;        /* functions traced (cache misses) */
  uint64_t hits;          /* calls that replayed a cached trace */
  uint64_t evictions;     /* traces dropped by the LRU bound */
  uint64_t entries;       /* traces cached now */
  uint64_t fused;         /* Compiled primitives made by fusion */
  uint64_t kernels_built; /* kernels compiled by the system compiler */
  uint64_t disk_hits;     /* kernels loaded from the disk cache */
  uint64_t disk_rejects;  /* disk entries refused (owner, mode, checksum) */
  uint64_t memory_hits;   /* kernels found in memory */
} cmx_compile_stats;
void cmx_compile_stats_get(cmx_compile_stats* out);

#ifdef __cplusplus
}
#endif
#endif
