/* The one place environment variables are read. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

static cmx__env g_env;
static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;

static int env_int(const char* name, int dflt) {
  const char* v = getenv(name);
  if (!v || !*v) return dflt;
  char* end;
  long x = strtol(v, &end, 10);
  return (*end || x < 0 || x > 1 << 20) ? dflt : (int)x;
}

static int env_flag(const char* name) {
  const char* v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 && strcmp(v, "false") != 0;
}

/* The CPUs this process may run on (taskset, cgroup cpusets), else the
 * online ones: a pool larger than that only time-slices. */
static long usable_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return sysconf(_SC_NPROCESSORS_ONLN);
}

static void env_load(void) {
  long n = usable_cpus();
  g_env.num_threads = env_int("CMX_NUM_THREADS", n > 0 ? (int)n : 1);
  if (g_env.num_threads < 1) g_env.num_threads = 1;
  const char* dev = getenv("CMX_DEFAULT_DEVICE");
  g_env.default_gpu = !dev || !*dev             ? -1
                      : strcmp(dev, "gpu") == 0 ? 1
                      : strcmp(dev, "cpu") == 0 ? 0
                                                : -1;
  g_env.max_inflight_tasks = env_int("CMX_MAX_INFLIGHT", 1 << 16);
  if (g_env.max_inflight_tasks < 16) g_env.max_inflight_tasks = 16;
  g_env.fork_wait_ms = env_int("CMX_FORK_WAIT_MS", 5000);
  if (g_env.fork_wait_ms < 0) g_env.fork_wait_ms = 0;
  g_env.cache_dir = getenv("CMX_CACHE_DIR");
  g_env.xdg_cache_home = getenv("XDG_CACHE_HOME");
  g_env.home = getenv("HOME");
  g_env.cuda_home = getenv("CUDA_HOME");
  if (!g_env.cuda_home || !*g_env.cuda_home)
    g_env.cuda_home = getenv("CUDA_PATH");
  g_env.disable_compile =
      env_flag("CMX_DISABLE_COMPILE") || env_flag("MLX_DISABLE_COMPILE");
  g_env.vmap_fallback = env_flag("CMX_VMAP_FALLBACK");
  g_env.conv_blas = env_flag("CMX_CONV_BLAS");
  g_env.compile_explain = env_flag("CMX_COMPILE_EXPLAIN");
  g_env.cc = getenv("CMX_CC");
  if (!g_env.cc || !*g_env.cc) g_env.cc = "cc";
  g_env.path = getenv("PATH");
}

const cmx__env* cmx__env_get(void) {
  pthread_once(&g_env_once, env_load);
  return &g_env;
}

/* Read at each call (not cached): the launcher and tests set these before
 * init, possibly after cmx was loaded. */
void cmx__dist_env_read(cmx__dist_env* e) {
  const char* hf = getenv("MLX_HOSTFILE");
  e->hostfile = hf && *hf ? hf : NULL;
  const char* r = getenv("MLX_RANK");
  char* end = NULL;
  long v = r && *r ? strtol(r, &end, 10) : -1;
  e->rank = (r && *r && !*end && v >= 0 && v < 1 << 20) ? (int)v : -1;
  e->timeout_s = env_int("CMX_DISTRIBUTED_TIMEOUT", 300);
  if (e->timeout_s < 1) e->timeout_s = 1;
  e->verbose = env_flag("MLX_RING_VERBOSE");
  const char* n1 = getenv("OMPI_COMM_WORLD_SIZE");
  const char* n2 = getenv("PMI_SIZE");
  e->under_mpirun = (n1 && *n1) || (n2 && *n2);
}
