/* Misc primitives. */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Depends, .eval_cpu = cmx__cpu_depends);
