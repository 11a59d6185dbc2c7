/* The CPU kernel of Load: the output's bytes read from the file
 * (cmx__load_read: a short read means the file is shorter than when it was
 * loaded, MLX's RuntimeError at evaluation, so CMX_ERR_RUNTIME). */
#include "primitives/io.h"

#include "backend/cpu/kernels.h"

cmx_status cmx__cpu_load(const cmx_primitive* p, const cmx_array* in, int nin,
                         const cmx_array* out, int nout) {
  (void)in, (void)nin, (void)nout;
  cmx_status st = cmx_kernel_alloc(out[0]);
  if (st != CMX_OK) return st;
  return cmx__load_read(cmx_primitive_params(p), cmx_kernel_data(out[0]), 0,
                        cmx_array_nbytes(out[0]));
}
