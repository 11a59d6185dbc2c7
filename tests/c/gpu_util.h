/* Shared pieces of the CUDA backend's tests (test_gpu.c, test_gpu_layer.c):
 * a private kernel cache folder, GPU and NVRTC presence, random data, views,
 * exact comparisons, cache-entry listing, child processes, and the test
 * kernel cmx_test_grid with a way to make one-variant test families.
 *
 * gpu_test_begin() must run before any cmx call (the environment is read
 * once): it makes a temporary folder, points CMX_CACHE_DIR into it, and
 * notes whether a GPU and NVRTC are there; gpu_test_end() removes it.
 * CMX_TEST_ONLY=name,name runs only the named cases (CASE).
 */
#ifndef CMX_TEST_GPU_UTIL_H
#define CMX_TEST_GPU_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/cuda/gpu.h"
#include "core/internal.h"
#include "ops/ops_internal.h"
#include "test.h"

extern char** environ;

static char g_tmp[256];  /* mkdtemp'd folder, removed at the end */
static char g_root[320]; /* CMX_CACHE_DIR: created by cmx */
static bool g_gpu, g_nvrtc;
static int g_arch = 90; /* the GPU's architecture, or sm_90 without one */

/* ---------------- helpers ---------------- */

/* RUN, unless CMX_TEST_ONLY names other cases. */
static const char* g_only;
#define CASE(fn)                                 \
  do {                                           \
    if (!g_only || strstr(g_only, #fn)) RUN(fn); \
  } while (0)

static uint64_t g_rng = 88172645463325252ull;
static inline uint64_t rnd(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}
/* Floats with few significant bits, so sums are exact in float32. */
static inline float rndf(void) {
  return (float)((int64_t)(rnd() >> 44) - (1 << 19)) / 64.0f;
}
static inline float* rnd_floats(int64_t n) {
  float* p = malloc((size_t)(n ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; i++) p[i] = rndf();
  return p;
}

static inline cmx_stream gpu(void) {
  return cmx_stream_on(cmx_device_gpu());
}
static inline cmx_stream cpu(void) {
  return cmx_stream_on(cmx_device_cpu());
}

static inline cmx_array arr(const void* data, const int64_t* shape, int ndim,
                            cmx_dtype dt) {
  cmx_array a = NULL;
  OK(cmx_array_from_data(&a, data, shape, ndim, dt));
  return a;
}

/* A strided view of a's data, as transpose or slicing would make. */
static inline cmx_array view(cmx_array a, const int64_t* shape,
                             const int64_t* strides, int ndim, int64_t offset) {
  OK(cmx_array_eval(a));
  cmx_array v = cmx__node_new("view", shape, ndim, a->dtype);
  v->buf = cmx__buffer_retain(a->buf);
  v->offset = a->offset + offset;
  v->data_size = a->data_size - offset;
  memcpy(CMX__STRIDES(v), strides, (size_t)ndim * sizeof(int64_t));
  cmx__node_update_flags(v);
  return v;
}

/* Copies c out and compares it with ref exactly (n floats). */
static inline bool equal_f32(cmx_array c, const float* ref, int64_t n) {
  float* got = malloc((size_t)(n ? n : 1) * sizeof(float));
  cmx_status st = cmx_array_copy_to(c, got, (size_t)n * sizeof(float));
  bool ok = st == CMX_OK && cmx_array_size(c) == n;
  for (int64_t i = 0; ok && i < n; i++)
    if (got[i] != ref[i]) {
      fprintf(stderr, "  element %lld: got %g, want %g\n", (long long)i, got[i],
              ref[i]);
      ok = false;
    }
  if (st != CMX_OK) fprintf(stderr, "  copy_to: %s\n", cmx_last_error());
  free(got);
  return ok;
}

/* The bytes of two arrays' values (row-major) are identical. */
static inline bool same_bytes(cmx_array a, cmx_array b) {
  size_t n = cmx_array_nbytes(a);
  if (n != cmx_array_nbytes(b)) return false;
  char* x = malloc(n ? n : 1);
  char* y = malloc(n ? n : 1);
  bool ok = cmx_array_copy_to(a, x, n) == CMX_OK &&
            cmx_array_copy_to(b, y, n) == CMX_OK && memcmp(x, y, n) == 0;
  free(x);
  free(y);
  return ok;
}

/* True while a's data lives only on the device (the GPU path ran). */
static inline bool device_only(cmx_array a) {
  return a->buf && a->buf->dev_valid && !a->buf->host_valid;
}

static inline void cache_dir(char* buf, size_t size) {
  CHECK(cmx__gpu_cache_dir(buf, size));
}

/* Names of the cache entries starting with prefix (at most cap). */
static inline int list_entries(const char* prefix, char names[][1024],
                               int cap) {
  char dir[512];
  if (!cmx__gpu_cache_dir(dir, sizeof dir)) return 0;
  DIR* d = opendir(dir);
  int n = 0;
  struct dirent* e;
  while (d && (e = readdir(d))) {
    if (strncmp(e->d_name, prefix, strlen(prefix)) != 0) continue;
    if (n < cap) snprintf(names[n], 1024, "%s/%s", dir, e->d_name);
    n++;
  }
  if (d) closedir(d);
  return n;
}

static inline void flip_byte(const char* path, long at) {
  int fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  if (fd < 0) return;
  unsigned char c = 0;
  CHECK(pread(fd, &c, 1, at) == 1);
  c ^= 0x5a;
  CHECK(pwrite(fd, &c, 1, at) == 1);
  close(fd);
}

/* Runs this program again with argument `mode`; returns its exit code. */
static inline int run_child(const char* mode) {
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  char* argv[] = {exe, (char*)mode, NULL};
  pid_t pid;
  if (posix_spawn(&pid, exe, NULL, NULL, argv, environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Random values of dtype dt (finite for floats, 0/1 for bool). */
static inline void fill(void* p, cmx_dtype dt, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = rnd();
    float f = rndf();
    switch (dt) {
      case CMX_BOOL:
        ((uint8_t*)p)[i] = r & 1;
        break;
      case CMX_FLOAT16:
        ((uint16_t*)p)[i] = cmx_float_to_float16(f);
        break;
      case CMX_BFLOAT16:
        ((uint16_t*)p)[i] = cmx_float_to_bfloat16(f);
        break;
      case CMX_FLOAT32:
        ((float*)p)[i] = f;
        break;
      case CMX_FLOAT64:
        ((double*)p)[i] = f * 1.000001;
        break;
      case CMX_COMPLEX64:
        ((float*)p)[2 * i] = f;
        ((float*)p)[2 * i + 1] = rndf();
        break;
      default:
        memcpy((char*)p + i * cmx_dtype_size(dt), &r, cmx_dtype_size(dt));
    }
  }
}

static inline void remove_tree(const char* path) {
  DIR* d = opendir(path);
  struct dirent* e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[1024];
    snprintf(p, sizeof p, "%.700s/%.255s", path, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      unlink(p);
  }
  if (d) closedir(d);
  rmdir(path);
}

/* ---------------- test kernels ---------------- */

/* The source of cmx_test_grid(int* out, int marker): each thread of a
 * launch writes marker + block * 1000 + thread at out[block * threads +
 * thread] (blocks and threads counted x first). Guarded for CMX_ONLY, so
 * a family may list it among other kernels; the fake driver emulates it. */
#define GPU_TEST_GRID_SRC                                                \
  "#if !defined(CMX_ONLY) || defined(CMX_ONLY_cmx_test_grid)\n"          \
  "extern \"C\" __global__ void cmx_test_grid(int* out, int marker) {\n" \
  "  long long b = ((long long)blockIdx.z * gridDim.y + blockIdx.y) *\n" \
  "      gridDim.x + blockIdx.x;\n"                                      \
  "  int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x +\n"  \
  "      threadIdx.x;\n"                                                 \
  "  int threads = blockDim.x * blockDim.y * blockDim.z;\n"              \
  "  out[b * threads + t] = (int)(marker + b * 1000 + t);\n"             \
  "}\n"                                                                  \
  "#endif\n"

/* Defines `fam`, a kernel family of one variant (named as the family, no
 * prelude) over `src` and its NULL-ended kernel list, with `flags_` and
 * the launch shape given last (kind, block, ...); register it with
 * cmx__gpu_family_register. */
#define GPU_TEST_FAMILY(fam, fname, src, kernel_list, flags_, ...) \
  static bool fam##_variant(int v, cmx__gpu_variant* out) {        \
    snprintf(out->name, sizeof out->name, "%s", fname);            \
    out->prelude[0] = 0;                                           \
    return v == 0;                                                 \
  }                                                                \
  static const cmx__gpu_family fam = {.name = fname,               \
                                      .source = src,               \
                                      .kernels = kernel_list,      \
                                      .nvariants = 1,              \
                                      .variant = fam##_variant,    \
                                      .flags = flags_,             \
                                      .shape = {__VA_ARGS__}}

/* Sets up the cache folder and notes the devices; false on failure. */
static inline bool gpu_test_begin(const char* name) {
  snprintf(g_tmp, sizeof g_tmp, "/tmp/cmx-%s-XXXXXX", name);
  if (!mkdtemp(g_tmp)) {
    perror("mkdtemp");
    return false;
  }
  snprintf(g_root, sizeof g_root, "%s/cache", g_tmp);
  setenv("CMX_CACHE_DIR", g_root, 1);
  g_only = getenv("CMX_TEST_ONLY");
  g_gpu = cmx_is_available(cmx_device_gpu());
  g_nvrtc = cmx__nvrtc_available(NULL);
  if (g_gpu) {
    cmx__gpu_device* d = cmx__gpu_device_get(0);
    CHECK(d != NULL);
    if (d) g_arch = d->cc_major * 10 + d->cc_minor;
  }
  /* Run on the fake driver, the GPU must be seen (else every GPU case
   * would quietly be left out). */
  CHECK_MSG(!getenv("CMX_TEST_FAKE_DRIVER") || (g_gpu && g_nvrtc),
            "the fake driver was not loaded: %s",
            cmx__gpu_unavailable_reason());
  return true;
}

/* CMX_TEST_REQUIRE_GPU=1 (the GPU machine's check) makes a missing GPU or
 * NVRTC a failure. */
static inline bool gpu_test_required(void) {
  const char* req = getenv("CMX_TEST_REQUIRE_GPU");
  return req && *req && strcmp(req, "0") != 0;
}

static inline void gpu_test_end(void) {
  remove_tree(g_tmp);
}

#endif
