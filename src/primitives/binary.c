/* Binary elementwise primitives. */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Add, .eval_cpu = cmx__cpu_binary, .eval_gpu = cmx__gpu_binary);
