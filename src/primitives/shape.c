/* Shape primitives (views and layout changes). */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Broadcast, .eval_cpu = cmx__cpu_broadcast);
