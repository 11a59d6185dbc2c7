/* Placeholder GPU entry points until the CUDA backend lands: no GPU. */
#include "core/internal.h"

bool cmx__gpu_available(void) { return false; }
int cmx__gpu_count(void) { return 0; }
cmx__stream* cmx__gpu_stream_new(int device_index) {
  (void)device_index;
  return CMX__FAIL(CMX_ERR_VALUE, "[gpu] no GPU is available");
}
