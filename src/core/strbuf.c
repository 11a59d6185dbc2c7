/* A growable string (see strbuf.h). */
#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cmx__strbuf_reserve(cmx__strbuf* b, size_t extra) {
  if (b->failed) return false;
  size_t need = b->len + extra + 1;
  if (need < extra || (b->limit && need > b->limit)) {
    b->failed = true;
    return false;
  }
  if (need <= b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char* p = realloc(b->p, cap);
  if (!p) {
    b->failed = true;
    return false;
  }
  b->p = p;
  b->cap = cap;
  return true;
}

void cmx__strbuf_putn(cmx__strbuf* b, const char* s, size_t n) {
  if (!cmx__strbuf_reserve(b, n)) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void cmx__strbuf_puts(cmx__strbuf* b, const char* s) {
  cmx__strbuf_putn(b, s, strlen(s));
}

void cmx__strbuf_repeat(cmx__strbuf* b, char c, size_t n) {
  if (!cmx__strbuf_reserve(b, n)) return;
  memset(b->p + b->len, c, n);
  b->len += n;
  b->p[b->len] = '\0';
}

void cmx__strbuf_printf(cmx__strbuf* b, const char* fmt, ...) {
  if (!cmx__strbuf_reserve(b, 128)) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = true;
    return;
  }
  if ((size_t)n >= b->cap - b->len) {
    if (!cmx__strbuf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}
