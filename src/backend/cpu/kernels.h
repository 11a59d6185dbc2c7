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

/* ---- reductions (reduce.c) ---- */

/* ---- shape and views (shape.c) ---- */
CMX__KERNEL(cmx__cpu_broadcast);

/* ---- matrix products (matmul.c) ---- */
/* Matmul: in = {a, b}; AddMM: in = {a, b, c} with c of out's shape. */
CMX__KERNEL(cmx__cpu_matmul);
CMX__KERNEL(cmx__cpu_addmm);

#endif
