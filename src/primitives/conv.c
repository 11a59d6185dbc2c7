/* The convolution primitive. */
#include "primitives/conv.h"

#include <stdio.h>

#include "primitives/registry.h"
#include "transforms/rules.h"

/* Appends "(a,b,c)" of n values to buf at *pos. */
static void put_list(char* buf, size_t size, size_t* pos, const char* name,
                     const int64_t* v, int n) {
  for (int i = 0; i < n && *pos < size; i++) {
    int w = snprintf(buf + *pos, size - *pos, "%s%lld", i ? "," : name,
                     (long long)v[i]);
    *pos += w > 0 ? (size_t)w : 0;
  }
  if (*pos < size) {
    int w = snprintf(buf + *pos, size - *pos, ")");
    *pos += w > 0 ? (size_t)w : 0;
  }
}

static void conv_print(const cmx_primitive* p, char* buf, size_t size) {
  const cmx__conv_params* q = cmx_primitive_params(p);
  size_t pos = 0;
  put_list(buf, size, &pos, "Convolution(stride=(", q->stride, q->nsp);
  put_list(buf, size, &pos, ", padding_lo=(", q->pad_lo, q->nsp);
  put_list(buf, size, &pos, ", padding_hi=(", q->pad_hi, q->nsp);
  put_list(buf, size, &pos, ", kernel_dilation=(", q->kernel_dilation, q->nsp);
  put_list(buf, size, &pos, ", input_dilation=(", q->input_dilation, q->nsp);
  if (pos < size)
    snprintf(buf + pos, size - pos, ", groups=%d, flip=%s)", (int)q->groups,
             q->flip ? "true" : "false");
}

CMX__VTABLE(Convolution, .vjp = cmx__vjp_conv, .jvp = cmx__jvp_conv,
            .vmap = cmx__vmap_conv, .print = conv_print);
