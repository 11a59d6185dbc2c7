/* The NCCL backend's entry points. Collectives over NCCL are not written
 * yet (issue 18, second part, needs the lent 2-GPU machine): choosing it
 * gives a clear error, with or without GPUs. */
#include <dlfcn.h>

#include "distributed/distributed.h"

bool cmx__nccl_available(void) {
  if (cmx_device_count(CMX_GPU) < 1) return false;
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != NULL;
}

void* cmx__nccl_init(int* rank, int* size) {
  (void)rank;
  (void)size;
  if (cmx_device_count(CMX_GPU) < 1)
    return CMX__FAIL(CMX_ERR_RUNTIME,
                     "[init] nccl backend: no GPU is available here (NCCL "
                     "runs collectives on CUDA GPUs, one per process)");
  return CMX__FAIL(CMX_ERR_NOT_IMPLEMENTED,
                   "[init] nccl backend: not implemented yet in cmx (use "
                   "'ring' or 'mpi')");
}
