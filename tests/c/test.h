/* A small test harness for the C tests: CHECK macros that count and report
 * failures, and a summary line ("N passed, M failed") at the end. */
#ifndef CMX_TEST_H
#define CMX_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmx/cmx.h"

static int t_passed, t_failed;
/* GPU cases that did not run (devices.h): a primitive without a GPU
 * kernel, or a kernel that does not implement the case's dtypes yet. */
static int t_gpu_nokernel, t_gpu_notimpl;
static char t_gpu_nokernel_names[2048], t_gpu_notimpl_names[1024];

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond)                                                         \
      t_passed++;                                                     \
    else {                                                            \
      t_failed++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)

#define CHECK_MSG(cond, ...)                                          \
  do {                                                                \
    if (cond)                                                         \
      t_passed++;                                                     \
    else {                                                            \
      t_failed++;                                                     \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                   \
      fputc('\n', stderr);                                            \
    }                                                                 \
  } while (0)

/* A call that must succeed. */
#define OK(call)                                                          \
  do {                                                                    \
    cmx_status st_ = (call);                                              \
    CHECK_MSG(st_ == CMX_OK, "%s -> %s: %s", #call, cmx_status_name(st_), \
              cmx_last_error());                                          \
  } while (0)

/* A call that must fail with status `want` and a message containing
 * `needle`. */
#define FAILS(call, want, needle)                                            \
  do {                                                                       \
    cmx_status st_ = (call);                                                 \
    CHECK_MSG(st_ == (want) && strstr(cmx_last_error(), (needle)),           \
              "%s -> %s: '%s' (want %s containing '%s')", #call,             \
              cmx_status_name(st_), cmx_last_error(), cmx_status_name(want), \
              (needle));                                                     \
  } while (0)

/* CMX_TEST_ONLY=text[,text...] runs only the RUN()s whose function name
 * contains one of the texts (e.g. one case of a long suite on the GPU
 * machine, or CMakeLists.txt's case lists for the fake driver). */
static inline int t_selected(const char* fn) {
  const char* only = getenv("CMX_TEST_ONLY");
  if (!only) return 1;
  for (const char* p = only; *p;) {
    const char* end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    for (const char* q = fn; n && *q; q++)
      if (!strncmp(q, p, n)) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

#define RUN(fn)                                             \
  do {                                                      \
    if (!t_selected(#fn)) break;                            \
    int f0_ = t_failed;                                     \
    fn();                                                   \
    if (t_failed != f0_) fprintf(stderr, "  in %s\n", #fn); \
  } while (0)

static inline int test_summary(const char* name) {
  printf("%s: %d passed, %d failed\n", name, t_passed, t_failed);
  if (t_gpu_nokernel)
    printf("%s: %d gpu cases not run, no gpu kernel: %s\n", name,
           t_gpu_nokernel, t_gpu_nokernel_names);
  if (t_gpu_notimpl)
    printf("%s: %d gpu cases not run, not implemented on the gpu: %s\n", name,
           t_gpu_notimpl, t_gpu_notimpl_names);
  return t_failed ? 1 : 0;
}

#endif
