/* A user-private disk cache of compiled artefacts (kernels).
 *
 * Entries live in a folder of the cache root ($CMX_CACHE_DIR, else
 * $XDG_CACHE_HOME/cmx, else ~/.cache/cmx), one folder per kind ("cpu"
 * ...), created mode 0700. Each entry is a file (mode 0600) holding a
 * header (magic, 128-bit key, size, checksum) then the payload. Writers
 * write a temporary file and rename it into place, so readers never see
 * half an entry. Readers refuse folders and files that are not owned by
 * the user or that others can write, symbolic links, and entries whose
 * header, key, size or checksum do not match.
 */
#ifndef CMX_CORE_DISK_CACHE_H
#define CMX_CORE_DISK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cmx__key128 {
  uint64_t lo, hi;
} cmx__key128;

/* A 128-bit hash (two independent 64-bit ones) of n bytes, continuing
 * from h (start from cmx__key128_init()). */
cmx__key128 cmx__key128_init(void);
cmx__key128 cmx__key128_add(cmx__key128 h, const void* p, size_t n);

/* The folder of kind `sub`, created and checked once; false when there is
 * no safe place (the cache is then memory-only). Writes its path to buf
 * when buf is non-NULL. */
bool cmx__disk_cache_dir(const char* sub, char* buf, size_t size);

/* Reads entry `name` of kind sub: 1 and *data (malloc'ed) / *size when a
 * valid entry with key k exists, 0 when there is none, -1 when one exists
 * but was refused (owner, mode, header, key or checksum). */
int cmx__disk_cache_read(const char* sub, const char* name, cmx__key128 k,
                         void** data, size_t* size);
/* Writes entry `name` (atomically replacing any); false on failure (the
 * cache is best effort: nothing else happens). */
bool cmx__disk_cache_write(const char* sub, const char* name, cmx__key128 k,
                           const void* data, size_t size);

/* Removes entry `name` of kind sub, if there is one (best effort). */
void cmx__disk_cache_remove(const char* sub, const char* name);

#endif
