/* CPU kernel entry points, referenced by the primitive vtables. One section
 * per family; each kernel is defined in src/backend/cpu/<family>.c. */
#ifndef CMX_BACKEND_CPU_KERNELS_H
#define CMX_BACKEND_CPU_KERNELS_H

#include "cmx/primitive.h"

#define CMX__KERNEL(name)                                               \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout)

/* ---- copy and conversion (copy.c) ---- */
CMX__KERNEL(cmx__cpu_astype);

/* ---- creation (creation.c) ---- */

/* ---- unary (unary.c) ---- */

/* ---- binary (binary.c) ---- */
CMX__KERNEL(cmx__cpu_binary);

/* ---- ternary (ternary.c) ---- */

/* ---- reductions (reduce.c, reduce_arg.c, softmax.c) ---- */
CMX__KERNEL(cmx__cpu_reduce);
CMX__KERNEL(cmx__cpu_arg_reduce);
CMX__KERNEL(cmx__cpu_logsumexp);
CMX__KERNEL(cmx__cpu_softmax);
CMX__KERNEL(cmx__cpu_var);

/* ---- shape and views (shape.c) ---- */
CMX__KERNEL(cmx__cpu_broadcast);

/* ---- matrix products (matmul.c) ---- */

#endif
