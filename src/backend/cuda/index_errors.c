/* Deferred index errors of GPU kernels (see gpu.h): the table of codes
 * kernels record, and the message of a recorded error. The records
 * themselves belong to the streams (stream.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/gpu.h"

#define MAX_CODES 64

static struct {
  pthread_mutex_t lock;
  int n;
  const char* op[MAX_CODES];
  cmx__gpu_index_msg msg[MAX_CODES];
  const char* which[MAX_CODES];
} g_codes = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool same(const char* a, const char* b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

int cmx__gpu_index_error_code(const char* op, cmx__gpu_index_msg msg,
                              const char* which) {
  pthread_mutex_lock(&g_codes.lock);
  int code = 0;
  for (int i = 0; i < g_codes.n && !code; i++)
    if (same(g_codes.op[i], op) && g_codes.msg[i] == msg &&
        same(g_codes.which[i], which))
      code = i + 1;
  if (!code && g_codes.n < MAX_CODES) {
    g_codes.op[g_codes.n] = op;
    g_codes.msg[g_codes.n] = msg;
    g_codes.which[g_codes.n] = which;
    code = ++g_codes.n;
  }
  pthread_mutex_unlock(&g_codes.lock);
  return code ? code : MAX_CODES + 1; /* full: a generic message */
}

char* cmx__gpu_index_error_take(cmx__gpu_index_error* rec, cmx_status* st) {
  if (!rec || !rec->code) return NULL;
  cmx__gpu_index_error e = *rec;
  memset(rec, 0, sizeof *rec);
  const char *op = "index", *which = "";
  cmx__gpu_index_msg msg = CMX__GPU_IDX_AXIS;
  pthread_mutex_lock(&g_codes.lock);
  if (e.code >= 1 && e.code <= g_codes.n) {
    op = g_codes.op[e.code - 1];
    msg = g_codes.msg[e.code - 1];
    if (g_codes.which[e.code - 1]) which = g_codes.which[e.code - 1];
  }
  pthread_mutex_unlock(&g_codes.lock);
  char buf[256];
  if (msg == CMX__GPU_IDX_BATCH)
    snprintf(buf, sizeof buf,
             "[%s] %s index %lld is out of bounds for a batch of %lld "
             "matrices.",
             op, which, (long long)e.value, (long long)e.dim);
  else if (msg == CMX__GPU_IDX_SEGMENT)
    snprintf(buf, sizeof buf,
             "[%s] Segment bound %lld is out of bounds for the inner "
             "dimension %lld.",
             op, (long long)e.value, (long long)e.dim);
  else
    snprintf(buf, sizeof buf,
             "[%s] Index %lld is out of bounds for axis %d with size %lld.", op,
             (long long)e.value, (int)e.axis, (long long)e.dim);
  *st = CMX_ERR_INDEX;
  return strdup(buf);
}
