/* cuSOLVER and cuBLAS, loaded at run time (solver.h).
 *
 * libcusolver.so and libcublas.so are opened with dlopen when a
 * factorization first runs on the GPU (cmx__toolkit_dlopen: the loader's
 * path, then the toolkit's library folders), every entry point cmx uses is
 * resolved (cusolverDnXgeev is optional: CUDA 12.6+), and each device gets
 * one cuSOLVER handle (with its 64-bit API parameters and Jacobi settings)
 * and one cuBLAS handle, created with the device's context current and
 * kept for the process. A handle binds one stream at a time: callers hold
 * the device's lock while they bind the running task's stream and enqueue.
 * Without the libraries, factorizations on the GPU fail with "[op] needs
 * cuSOLVER, which could not be loaded: <why>"; nothing else needs them.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/solver.h"

cmx__cusolver_api cmx__sv;
cmx__cublas_api cmx__bl;

typedef struct {
  size_t offset;
  const char* name;
  bool optional;
} entry;

#define SV(f) \
  { offsetof(cmx__cusolver_api, f), #f, false }
#define SV2(f, s, d)                                            \
  {offsetof(cmx__cusolver_api, f[0]), "cusolverDn" s, false}, { \
    offsetof(cmx__cusolver_api, f[1]), "cusolverDn" d, false    \
  }
#define SV3(f, s, d, c)                                      \
  SV2(f, s, d), {                                            \
    offsetof(cmx__cusolver_api, f[2]), "cusolverDn" c, false \
  }
static const entry k_solver[] = {
    SV(cusolverGetVersion),
    SV(cusolverDnCreate),
    SV(cusolverDnSetStream),
    SV(cusolverDnCreateParams),
    SV(cusolverDnXgetrf_bufferSize),
    SV(cusolverDnXgetrf),
    SV(cusolverDnXgetrs),
    SV(cusolverDnXpotrf_bufferSize),
    SV(cusolverDnXpotrf),
    SV(cusolverDnXgeqrf_bufferSize),
    SV(cusolverDnXgeqrf),
    SV(cusolverDnXsyevd_bufferSize),
    SV(cusolverDnXsyevd),
    SV(cusolverDnCreateGesvdjInfo),
    SV(cusolverDnCreateSyevjInfo),
    SV2(potrfBatched, "SpotrfBatched", "DpotrfBatched"),
    SV2(orgqr_bufferSize, "Sorgqr_bufferSize", "Dorgqr_bufferSize"),
    SV2(orgqr, "Sorgqr", "Dorgqr"),
    SV3(gesvdj_bufferSize, "Sgesvdj_bufferSize", "Dgesvdj_bufferSize",
        "Cgesvdj_bufferSize"),
    SV3(gesvdj, "Sgesvdj", "Dgesvdj", "Cgesvdj"),
    SV3(gesvdjBatched_bufferSize, "SgesvdjBatched_bufferSize",
        "DgesvdjBatched_bufferSize", "CgesvdjBatched_bufferSize"),
    SV3(gesvdjBatched, "SgesvdjBatched", "DgesvdjBatched", "CgesvdjBatched"),
    SV3(syevjBatched_bufferSize, "SsyevjBatched_bufferSize",
        "DsyevjBatched_bufferSize", "CheevjBatched_bufferSize"),
    SV3(syevjBatched, "SsyevjBatched", "DsyevjBatched", "CheevjBatched"),
    {offsetof(cmx__cusolver_api, cusolverDnXgeev_bufferSize),
     "cusolverDnXgeev_bufferSize", true},
    {offsetof(cmx__cusolver_api, cusolverDnXgeev), "cusolverDnXgeev", true},
};
#undef SV
#undef SV2
#undef SV3

#define BL(f) \
  { offsetof(cmx__cublas_api, f), #f, false }
#define BL2(f, s, d)                                      \
  {offsetof(cmx__cublas_api, f[0]), "cublas" s, false}, { \
    offsetof(cmx__cublas_api, f[1]), "cublas" d, false    \
  }
static const entry k_blas[] = {
    BL(cublasCreate_v2),
    BL(cublasSetStream_v2),
    BL(cublasGetStatusName),
    BL2(getrfBatched, "SgetrfBatched", "DgetrfBatched"),
    BL2(getriBatched, "SgetriBatched", "DgetriBatched"),
    BL2(getrsBatched, "SgetrsBatched", "DgetrsBatched"),
    BL2(trsm, "Strsm_v2", "Dtrsm_v2"),
    BL2(trsmBatched, "StrsmBatched", "DtrsmBatched"),
};
#undef BL
#undef BL2

/* Opens one of names and resolves table into api; false with why set. */
static bool load_lib(const char* const* names, int nnames, const char* what,
                     const entry* table, size_t n, void* api, char* why,
                     size_t why_size) {
  char err[512];
  void* lib = cmx__toolkit_dlopen(names, nnames, err, sizeof err);
  if (!lib) {
    snprintf(why, why_size,
             "%s was not found on the loader path, in $CUDA_HOME or in "
             "/usr/local/cuda (%s)",
             names[0], err[0] ? err : "not found");
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    void* p = dlsym(lib, table[i].name);
    if (!p && !table[i].optional) {
      snprintf(why, why_size, "%s lacks %s (older than CUDA 11.1?)", what,
               table[i].name);
      dlclose(lib);
      return false;
    }
    memcpy((char*)api + table[i].offset, &p, sizeof p);
  }
  return true;
}

#define MAX_DEVICES 64
static struct {
  pthread_once_t once;
  bool ok;
  char why[768];
  const char* lib; /* "cuSOLVER" or "cuBLAS": the one that failed */
  pthread_mutex_t create;
  pthread_mutex_t locks[MAX_DEVICES];
  bool made[MAX_DEVICES];
  cmx__solver_handles h[MAX_DEVICES];
} g = {.once = PTHREAD_ONCE_INIT, .create = PTHREAD_MUTEX_INITIALIZER};

static void solver_load(void) {
  for (int i = 0; i < MAX_DEVICES; i++) pthread_mutex_init(&g.locks[i], NULL);
  static const char* const sv_names[] = {"libcusolver.so.12",
                                         "libcusolver.so.11", "libcusolver.so"};
  static const char* const bl_names[] = {"libcublas.so.13", "libcublas.so.12",
                                         "libcublas.so.11", "libcublas.so"};
  g.lib = "cuSOLVER";
  if (!load_lib(sv_names, 3, "libcusolver", k_solver,
                sizeof k_solver / sizeof k_solver[0], &cmx__sv, g.why,
                sizeof g.why))
    return;
  g.lib = "cuBLAS";
  if (!load_lib(bl_names, 4, "libcublas", k_blas,
                sizeof k_blas / sizeof k_blas[0], &cmx__bl, g.why,
                sizeof g.why))
    return;
  g.ok = true;
}

cmx_status cmx__cusolver_fail(const char* op, const char* what,
                              cusolverStatus_t r) {
  return cmx__error(CMX_ERR_RUNTIME, "[%s] cuSOLVER %s failed: status %d", op,
                    what, (int)r);
}

cmx_status cmx__cublas_fail(const char* op, const char* what,
                            cublasStatus_t r) {
  return cmx__error(CMX_ERR_RUNTIME, "[%s] cuBLAS %s failed: %s", op, what,
                    cmx__bl.cublasGetStatusName ? cmx__bl.cublasGetStatusName(r)
                                                : "unknown status");
}

static cmx_status create(int dev, const char* op, cmx__solver_handles* h) {
  cmx_status st = cmx__gpu_ctx_enter(dev);
  if (st != CMX_OK) return st;
  cusolverStatus_t r = cmx__sv.cusolverDnCreate(&h->dn);
  if (r) return cmx__cusolver_fail(op, "cusolverDnCreate", r);
  if ((r = cmx__sv.cusolverDnCreateParams(&h->params)))
    return cmx__cusolver_fail(op, "cusolverDnCreateParams", r);
  if ((r = cmx__sv.cusolverDnCreateGesvdjInfo(&h->gesvdj)))
    return cmx__cusolver_fail(op, "cusolverDnCreateGesvdjInfo", r);
  if ((r = cmx__sv.cusolverDnCreateSyevjInfo(&h->syevj)))
    return cmx__cusolver_fail(op, "cusolverDnCreateSyevjInfo", r);
  cublasStatus_t b = cmx__bl.cublasCreate_v2(&h->blas);
  if (b) return cmx__cublas_fail(op, "cublasCreate", b);
  return CMX_OK;
}

cmx_status cmx__solver_get(int dev, const char* op, cmx__solver_handles* out) {
  memset(out, 0, sizeof *out);
  pthread_once(&g.once, solver_load);
  if (!g.ok)
    return cmx__error(CMX_ERR_RUNTIME,
                      "[%s] needs %s, which could not be "
                      "loaded: %s",
                      op, g.lib, g.why);
  if (dev < 0 || dev >= MAX_DEVICES)
    return cmx__error(CMX_ERR_VALUE,
                      "[%s] gpu:%d is past the %d devices "
                      "cuSOLVER handles are kept for",
                      op, dev, MAX_DEVICES);
  if (!cmx__gpu_device_get(dev)) return cmx_last_status();
  pthread_mutex_lock(&g.create);
  cmx_status st = CMX_OK;
  if (!g.made[dev]) {
    st = create(dev, op, &g.h[dev]);
    g.made[dev] = st == CMX_OK; /* a failed try leaks what it made */
  }
  if (st == CMX_OK) *out = g.h[dev];
  pthread_mutex_unlock(&g.create);
  return st;
}

void cmx__solver_lock(int dev) {
  pthread_mutex_lock(&g.locks[dev]);
}

void cmx__solver_unlock(int dev) {
  pthread_mutex_unlock(&g.locks[dev]);
}
