#include "backend/cpu/cpu.h"
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

bool cmx__blas_single_begin(void) {
#ifdef CMX__HAVE_BLAS_THREADS
  if (!openblas_set_num_threads || !openblas_get_num_threads) return false;
  pthread_mutex_lock(&g_blas_mu);
  if (g_blas_depth++ == 0) {
    g_blas_saved = openblas_get_num_threads();
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
