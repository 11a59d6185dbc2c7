/* Ternary elementwise primitives. */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Select, .eval_cpu = cmx__cpu_select);
