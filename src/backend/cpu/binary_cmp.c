/* CPU kernels of comparison, logical, bitwise and shift primitives: their
 * rows come from the op table (primitives/ew_ops.h, instantiated by
 * ew_gen.h). */
#include "backend/cpu/ew_dispatch.h"
#include "backend/cpu/ew_gen.h"
#include "backend/cpu/kernels.h"
#include "primitives/registry.h"

CMX__EW_COMPARE_OPS(CMX__CPU_EW_ROWS)

CMX__KERNEL(cmx__cpu_compare) {
  (void)nout;
  return cmx__cpu_ew_eval(p, in, nin, out, NULL);
}
