/* A growable string for code and text that cmx writes (generated kernel
 * sources, signatures, printed arrays). Zero-initialise (optionally set
 * `limit`); on allocation failure, or when the text would pass `limit`
 * bytes, `failed` is set and further writes do nothing; free b.p when
 * done. */
#ifndef CMX_CORE_STRBUF_H
#define CMX_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cmx__strbuf {
  char* p; /* NUL-terminated once anything was written */
  size_t len, cap;
  size_t limit; /* most bytes the text may take (terminator included); 0: no
                   limit */
  bool failed;
} cmx__strbuf;

/* Makes room for `extra` more bytes and the terminator; false on failure. */
bool cmx__strbuf_reserve(cmx__strbuf* b, size_t extra);
void cmx__strbuf_putn(cmx__strbuf* b, const char* s, size_t n);
void cmx__strbuf_puts(cmx__strbuf* b, const char* s);
/* Appends n copies of the character c. */
void cmx__strbuf_repeat(cmx__strbuf* b, char c, size_t n);
void cmx__strbuf_printf(cmx__strbuf* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
