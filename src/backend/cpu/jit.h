/* The CPU's C source JIT: the system C compiler builds a shared object from
 * generated source, which is loaded with dlopen.
 *
 * The compiler is $CMX_CC, else cc, looked up on PATH at first use; its
 * identity (its resolved path, size, modification time and inode) and the
 * flags are part of every kernel's key, so an upgraded compiler builds
 * anew. Objects are cached in memory (for the process) and on disk (kind
 * "cpu" of core/disk_cache.h), keyed by a 128-bit hash of source, flags
 * and compiler identity; disk entries are verified (owner, mode, key,
 * checksum) before they are loaded. Builds run in the cache folder (else
 * a private temporary folder), outputs are renamed into place, so
 * concurrent processes never see half a file.
 */
#ifndef CMX_BACKEND_CPU_JIT_H
#define CMX_BACKEND_CPU_JIT_H

#include "cmx/compile.h"

/* Whether a C compiler was found (*why says otherwise). */
bool cmx__cpu_jit_available(const char** why);
/* Symbol `sym` of the object built from source (name labels messages and
 * files). Writes it to *out; an error with the compiler's output when the
 * build fails. */
cmx_status cmx__cpu_jit_symbol(const char* name, const char* source,
                               const char* sym, void** out);
/* fork() phases (CMX__FORK_*, core/sched.h) of the symbol cache's lock. */
void cmx__cpu_jit_fork(int phase);
/* Adds the JIT's counters to s. */
void cmx__cpu_jit_stats(cmx_compile_stats* s);

#endif
