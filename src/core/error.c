/* Thread-local error state and the internal assert. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define CMX__MSG_CAP 4096

/* The message buffer is on the heap, one per thread (freed at thread exit):
 * with initial-exec thread-locals in libcmx, its whole TLS block comes from
 * glibc's small static TLS surplus when libcmx is dlopen'ed (as by the
 * Python extension), and a 4 KiB array there makes the load fail with
 * "cannot allocate memory in static TLS block". */
static _Thread_local char* tl_msg CMX__TLS_FAST;
static _Thread_local cmx_status tl_status CMX__TLS_FAST = CMX_OK;
static _Thread_local bool tl_pending CMX__TLS_FAST = false;
static pthread_key_t g_msg_key;
static pthread_once_t g_msg_once = PTHREAD_ONCE_INIT;

static void msg_key_init(void) {
  pthread_key_create(&g_msg_key, free);
}

static char* msg_buffer(void) {
  if (!tl_msg) {
    pthread_once(&g_msg_once, msg_key_init);
    tl_msg = malloc(CMX__MSG_CAP);
    if (tl_msg) {
      tl_msg[0] = 0;
      pthread_setspecific(g_msg_key, tl_msg);
    }
  }
  return tl_msg;
}

cmx_status cmx__verror(cmx_status status, const char* fmt, va_list ap) {
  char* msg = msg_buffer();
  if (msg) vsnprintf(msg, CMX__MSG_CAP, fmt, ap);
  tl_status = status;
  tl_pending = true;
  return status;
}

cmx_status cmx__error(cmx_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cmx__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

cmx_status cmx_kernel_error(cmx_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cmx__verror(status, fmt, ap);
  va_end(ap);
  return status;
}

bool cmx__error_pending(void) {
  return tl_pending;
}
void cmx__error_reset_pending(void) {
  tl_pending = false;
}

cmx__error_mark cmx__error_mark_get(void) {
  cmx__error_mark m = {tl_status, tl_pending};
  return m;
}
void cmx__error_mark_restore(cmx__error_mark m) {
  tl_status = m.status;
  tl_pending = m.pending;
}

const char* cmx_last_error(void) {
  if (tl_msg) return tl_msg;
  return tl_status == CMX_OK ? ""
                             : "(out of memory recording the error message)";
}
cmx_status cmx_last_status(void) {
  return tl_status;
}

cmx_status cmx_set_error(cmx_status status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cmx_status st = cmx__verror(status, fmt ? fmt : "", ap);
  va_end(ap);
  return st;
}

void cmx_clear_error(void) {
  if (tl_msg) tl_msg[0] = 0;
  tl_status = CMX_OK;
  tl_pending = false;
}

const char* cmx_status_name(cmx_status s) {
  switch (s) {
    case CMX_OK:
      return "OK";
    case CMX_ERR_VALUE:
      return "ValueError";
    case CMX_ERR_TYPE:
      return "TypeError";
    case CMX_ERR_INDEX:
      return "IndexError";
    case CMX_ERR_MEMORY:
      return "MemoryError";
    case CMX_ERR_RUNTIME:
      return "RuntimeError";
    case CMX_ERR_NOT_IMPLEMENTED:
      return "NotImplementedError";
    case CMX_ERR_IO:
      return "OSError";
    case CMX_ERR_INTERRUPTED:
      return "KeyboardInterrupt";
  }
  return "UnknownError";
}

void cmx__assert_fail(const char* what, const char* file, int line) {
  fprintf(stderr, "cmx internal error: %s (%s:%d)\n", what, file, line);
  abort();
}

bool cmx__check_args(const char* op, int n, ...) {
  va_list ap;
  va_start(ap, n);
  bool ok = true;
  for (int i = 0; i < n; i++) {
    cmx_array a = va_arg(ap, cmx_array);
    if (!a) {
      if (!cmx__error_pending())
        cmx__error(CMX_ERR_VALUE, "[%s] argument %d is a null array", op,
                   i + 1);
      ok = false;
      break;
    }
  }
  va_end(ap);
  return ok;
}
