/* Shape primitives (views and layout changes). */
#include "backend/cpu/kernels.h"
#include "backend/cuda/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Broadcast, .eval_cpu = cmx__cpu_broadcast,
            .eval_gpu = cmx__cpu_broadcast); /* a view: any device */
