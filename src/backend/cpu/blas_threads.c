#include "backend/cpu/cpu.h"
#include "backend/cpu/fft_plan.h"
#include "backend/cpu/jit.h"
#include "core/sched.h"
#define CMX__BLAS_NAMES_ONLY
#include "backend/cpu/blas.h"

/* OpenBLAS held to one thread while cmx's pool runs several BLAS calls at
 * once (convolution tiles, the parts of a split matrix product): one level
 * of threading. OpenBLAS's pthreads build has one process-wide thread count and
 * no per-call setting, so the products lower it to 1 for the duration of their
 * parallel section and restore it afterwards. A depth count makes overlapping
 * convolutions on several streams restore the value saved by the first. The
 * functions are weak references: with another BLAS they are absent and its own
 * threading stays as it is. */
#if defined(__GNUC__)
extern void openblas_set_num_threads(int) __attribute__((weak));
extern int openblas_get_num_threads(void) __attribute__((weak));
#define CMX__HAVE_BLAS_THREADS 1
#endif

static pthread_mutex_t g_blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_blas_depth, g_blas_saved;
/* In a child forked inside a hold: the count to restore (the holders are
 * gone, and OpenBLAS still runs on one thread). */
static int g_blas_restore;

bool cmx__blas_single_begin(void) {
#ifdef CMX__HAVE_BLAS_THREADS
  if (!openblas_set_num_threads || !openblas_get_num_threads) return false;
  pthread_mutex_lock(&g_blas_mu);
  if (g_blas_depth++ == 0) {
    g_blas_saved =
        g_blas_restore ? g_blas_restore : openblas_get_num_threads();
    g_blas_restore = 0;
    if (g_blas_saved > 1) openblas_set_num_threads(1);
  }
  pthread_mutex_unlock(&g_blas_mu);
  return true;
#else
  return false;
#endif
}

void cmx__blas_single_end(void) {
#ifdef CMX__HAVE_BLAS_THREADS
  pthread_mutex_lock(&g_blas_mu);
  if (--g_blas_depth == 0 && g_blas_saved > 1)
    openblas_set_num_threads(g_blas_saved);
  pthread_mutex_unlock(&g_blas_mu);
#endif
}

/* fork(): g_blas_mu is taken before fork(), so the child's copy of the
 * depth is consistent; the child's holders do not exist, so its depth
 * restarts at 0 and its next hold restores the count saved by theirs (not
 * here: OpenBLAS starts threads to raise it, and its own fork handler has
 * just stopped them). Without this, a parent thread holding g_blas_mu at
 * fork() left the child's first split product waiting forever. */
static void blas_fork(int phase) {
#ifdef CMX__HAVE_BLAS_THREADS
  if (phase == CMX__FORK_PREPARE) {
    pthread_mutex_lock(&g_blas_mu);
    return;
  }
  if (phase == CMX__FORK_CHILD && g_blas_depth > 0) {
    if (g_blas_saved > 1) g_blas_restore = g_blas_saved;
    g_blas_depth = 0;
  }
  pthread_mutex_unlock(&g_blas_mu);
#else
  (void)phase;
#endif
}

void cmx__cpu_kernels_fork(int phase) {
  /* Leaf locks (nothing else is taken while one is held): any order. */
  blas_fork(phase);
  cmx__fft_plans_fork(phase);
  cmx__cpu_jit_fork(phase);
}
