/* bench_io: loading a large .safetensors file versus a plain read() of it.
 *
 *   bench_io [MiB]      (default 1024; the file goes to $TMPDIR or /tmp)
 *
 * Writes a float32 safetensors file of the given size with cmx, reads it
 * once to warm the page cache, then times (best of 5):
 *   - read() of the whole file into a freshly malloc'd buffer (the floor a
 *     loader that copies once can reach: page-cache copy + page faults),
 *   - read() into an already-touched buffer (copy only),
 *   - cmx_load_safetensors, including evaluation (the arrays are
 *     available when it returns) and freeing the result.
 * Prints GB/s (1e9 bytes/s) for each and cmx's ratio to the fresh read(),
 * plus cmx's peak memory during a load (one copy of the data = the file's
 * data size). Deletes the file at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_time.h"
#include "cmx/cmx.h"

static int read_all(const char* path, char* buf, size_t n) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  return got == n ? 0 : -1;
}

static void die(const char* what) {
  fprintf(stderr, "bench_io: %s: %s\n", what, cmx_last_error());
  exit(1);
}

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
  const char* tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char path[512];
  snprintf(path, sizeof path, "%s/cmx_bench_io_%d.safetensors", tmp,
           (int)getpid());
  int64_t n = (int64_t)(mib << 20) / 4;
  /* Build and save the tensor (timed too: the save path streams the data
   * straight from the array's buffer). */
  float* data = malloc((size_t)n * 4);
  if (!data) die("malloc");
  for (int64_t i = 0; i < n; i++) data[i] = (float)(i % 1000) * 0.5f;
  cmx_array a;
  if (cmx_array_from_data(&a, data, &n, 1, CMX_FLOAT32) != CMX_OK) die("array");
  free(data);
  cmx_named_arrays* m;
  cmx_named_arrays_new(&m);
  cmx_named_arrays_set(m, "weight", a);
  cmx_array_release(a);
  double t0 = now();
  if (cmx_save_safetensors(path, m, NULL) != CMX_OK) die("save");
  double t_save = now() - t0;
  cmx_named_arrays_free(m);
  struct stat st;
  stat(path, &st);
  size_t size = (size_t)st.st_size;
  printf("file: %s, %.3f GB (%zu MiB of float32)\n", path, (double)size / 1e9,
         mib);
  printf("save_safetensors:            %6.2f GB/s\n",
         (double)size / t_save / 1e9);

  char* warm = malloc(size);
  if (!warm || read_all(path, warm, size) != 0) die("warm-up read");
  double best_fresh = 1e9, best_reuse = 1e9, best_cmx = 1e9;
  size_t peak = 0;
  for (int rep = 0; rep < 5; rep++) {
    t0 = now();
    if (read_all(path, warm, size) != 0) die("read");
    double t = now() - t0;
    if (t < best_reuse) best_reuse = t;

    t0 = now();
    char* fresh = malloc(size);
    if (!fresh || read_all(path, fresh, size) != 0) die("read");
    t = now() - t0;
    free(fresh);
    if (t < best_fresh) best_fresh = t;

    cmx_clear_cache(); /* no recycled buffers: a cold allocation each time */
    cmx_reset_peak_memory();
    t0 = now();
    cmx_named_arrays* r = NULL;
    if (cmx_load_safetensors(&r, NULL, path, CMX_STREAM_DEFAULT) != CMX_OK) {
      if (cmx_last_status() == CMX_ERR_NOT_IMPLEMENTED) {
        /* A build without cJSON: nothing to measure, not a failure. */
        printf("load: skipped (%s)\n", cmx_last_error());
        unlink(path);
        return 0;
      }
      die("load");
    }
    if (cmx_eval((cmx_array[]){cmx_named_arrays_get(r, "weight")}, 1) != CMX_OK)
      die("eval");
    t = now() - t0;
    if (cmx_get_peak_memory() > peak) peak = cmx_get_peak_memory();
    cmx_named_arrays_free(r);
    if (t < best_cmx) best_cmx = t;
  }
  free(warm);
  unlink(path);
  double gb = (double)size / 1e9;
  printf("read() into a fresh buffer:  %6.2f GB/s\n", gb / best_fresh);
  printf("read() into a reused buffer: %6.2f GB/s\n", gb / best_reuse);
  printf("cmx load_safetensors:        %6.2f GB/s  (%.2fx fresh read())\n",
         gb / best_cmx, best_fresh / best_cmx);
  printf("cmx peak memory during load: %.3f GB (file data %.3f GB)\n",
         (double)peak / 1e9, gb);
  return 0;
}
