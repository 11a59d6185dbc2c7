/* The Depends kernel. */
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* Depends: in = {inputs..., dependencies...}; output i is a view of input
 * i. The dependencies are only there so that the scheduler evaluates them
 * first; their data is never read. */
CMX__KERNEL(cmx__cpu_depends) {
  (void)p;
  (void)nin;
  for (int i = 0; i < nout; i++) {
    cmx_status st = cmx_kernel_set_view(out[i], in[i], 0, CMX__STRIDES(in[i]));
    if (st != CMX_OK) return st;
  }
  return CMX_OK;
}
