/* CPU kernels of shape primitives: views set strides, no data moves. */
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels.h"

/* Broadcast: stride 0 on new and size-1 dims. */
CMX__KERNEL(cmx__cpu_broadcast) {
  (void)p;
  (void)nin;
  (void)nout;
  cmx_array a = in[0], o = out[0];
  int64_t st[CMX_MAX_NDIM];
  int lead = o->ndim - a->ndim;
  for (int d = 0; d < o->ndim; d++) {
    int ad = d - lead;
    st[d] = (ad < 0 || a->dims[ad] == 1) ? 0 : CMX__STRIDES(a)[ad];
  }
  return cmx_kernel_set_view(o, a, 0, st);
}
