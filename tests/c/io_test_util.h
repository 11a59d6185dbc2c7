/* Helpers for the io tests: a scratch directory, deterministic test data,
 * whole-file reads and writes, and array comparisons against the bytes an
 * array was built from. */
#ifndef CMX_IO_TEST_UTIL_H
#define CMX_IO_TEST_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw, memmem */
#endif
#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

static char g_dir[256];

static inline int rm_one(const char* p, const struct stat* sb, int flag,
                         struct FTW* f) {
  (void)sb, (void)flag, (void)f;
  return remove(p);
}

/* Creates the scratch directory (removed by tdir_cleanup). */
static inline void tdir_init(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/cmx_io_test_XXXXXX");
  if (!mkdtemp(g_dir)) {
    perror("mkdtemp");
    exit(1);
  }
}
static inline void tdir_cleanup(void) {
  nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path inside the scratch directory (static buffer rotation of 4). */
static inline const char* tpath(const char* name) {
  static char bufs[4][512];
  static int k;
  char* b = bufs[k++ & 3];
  snprintf(b, 512, "%s/%s", g_dir, name);
  return b;
}

static inline bool file_exists(const char* p) {
  return access(p, F_OK) == 0;
}

/* Reads a whole file (malloc'd, *n bytes); NULL on failure. */
static inline uint8_t* read_file(const char* p, size_t* n) {
  FILE* f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* b = malloc((size_t)len + 1);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  return b;
}

static inline void write_file(const char* p, const void* d, size_t n) {
  FILE* f = fopen(p, "wb");
  if (!f) return;
  fwrite(d, 1, n, f);
  fclose(f);
}

/* Counts scratch directory entries whose name contains `needle`. */
static inline int count_files(const char* needle) {
  DIR* d = opendir(g_dir);
  int n = 0;
  struct dirent* e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, needle)) n++;
  if (d) closedir(d);
  return n;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* n elements of random bytes valid for dtype dt (bools 0/1). */
static inline uint8_t* rand_data(cmx_dtype dt, int64_t n) {
  size_t bytes = (size_t)n * cmx_dtype_size(dt);
  uint8_t* b = malloc(bytes + 1);
  for (size_t i = 0; i < bytes; i++) b[i] = (uint8_t)rnd();
  if (dt == CMX_BOOL)
    for (size_t i = 0; i < bytes; i++) b[i] &= 1;
  return b;
}

static inline int64_t shape_size(const int64_t* s, int nd) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= s[i];
  return n;
}

/* True when a has dtype dt, the given shape, and row-major bytes `data`. */
static inline bool array_matches(cmx_array a, cmx_dtype dt,
                                 const int64_t* shape, int nd,
                                 const uint8_t* data) {
  if (!a || cmx_array_dtype(a) != dt || cmx_array_ndim(a) != nd) return false;
  for (int i = 0; i < nd; i++)
    if (cmx_array_shape(a)[i] != shape[i]) return false;
  size_t bytes = (size_t)shape_size(shape, nd) * cmx_dtype_size(dt);
  uint8_t* got = malloc(bytes + 1);
  bool ok = cmx_array_copy_to(a, got, bytes) == CMX_OK &&
            memcmp(got, data, bytes) == 0;
  free(got);
  return ok;
}

#endif
