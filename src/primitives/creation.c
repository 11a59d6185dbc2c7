/* Creation primitives: ranges, fills and triangular masks. */
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__VTABLE(Arange, .eval_cpu = cmx__cpu_range);
CMX__VTABLE(Linspace, .eval_cpu = cmx__cpu_range);
CMX__VTABLE(Full, .eval_cpu = cmx__cpu_full);
CMX__VTABLE(Eye, .eval_cpu = cmx__cpu_eye_tri);
CMX__VTABLE(Tri, .eval_cpu = cmx__cpu_eye_tri);
CMX__VTABLE(Tril, .eval_cpu = cmx__cpu_tril_triu);
CMX__VTABLE(Triu, .eval_cpu = cmx__cpu_tril_triu);
