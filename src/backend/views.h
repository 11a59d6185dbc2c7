/* View kernels that run on any device (views.c): each sets its outputs as
 * views of its inputs (strides and an offset, no data moved). The CPU and
 * GPU kernel tables both name them. */
#ifndef CMX_BACKEND_VIEWS_H
#define CMX_BACKEND_VIEWS_H

#include "core/internal.h"

#define CMX__VIEW_KERNEL(name)                                          \
  cmx_status name(const cmx_primitive* p, const cmx_array* in, int nin, \
                  const cmx_array* out, int nout)

/* ---- shape (primitives/shape.h has the parameters) ---- */
CMX__VIEW_KERNEL(cmx__view_broadcast);
CMX__VIEW_KERNEL(cmx__view_transpose);
CMX__VIEW_KERNEL(cmx__view_squeeze);
CMX__VIEW_KERNEL(cmx__view_expand_dims);
CMX__VIEW_KERNEL(cmx__view_slice);
CMX__VIEW_KERNEL(cmx__view_as_strided);
CMX__VIEW_KERNEL(cmx__view_diagonal);

/* ---- graph bookkeeping ---- */
/* StopGradient, Identity: out[0] views in[0]. */
CMX__VIEW_KERNEL(cmx__view_identity);
/* Depends: in = {inputs..., dependencies...}; out[i] views in[i]. */
CMX__VIEW_KERNEL(cmx__view_depends);
/* CustomTransforms: in = {primals..., outputs of the function}; out[i]
 * views in[nin - nout + i]. */
CMX__VIEW_KERNEL(cmx__view_custom);

/* View (dtype reinterpretation, primitives/shape.h): out[0] becomes a
 * view of in[0] when every element of out's dtype lies whole at its
 * boundary in in[0]'s buffer (the last axis contiguous, the other strides
 * and the offset multiples of its size; always for equal sizes), and
 * *shared is true; otherwise nothing is set, *shared is false and the
 * backend copies in[0]'s bytes row-major into a fresh out[0]. */
cmx_status cmx__view_dtype_try(cmx_array out, cmx_array in, bool* shared);

/* The view entries of a kernel table (inside its initializer). */
#define CMX__VIEW_KERNEL_ENTRIES                                               \
  [CMX__P_StopGradient] = cmx__view_identity,                                  \
  [CMX__P_Identity] = cmx__view_identity,                                      \
  [CMX__P_Broadcast] = cmx__view_broadcast,                                    \
  [CMX__P_Transpose] = cmx__view_transpose,                                    \
  [CMX__P_Squeeze] = cmx__view_squeeze,                                        \
  [CMX__P_ExpandDims] = cmx__view_expand_dims,                                 \
  [CMX__P_Slice] = cmx__view_slice, [CMX__P_AsStrided] = cmx__view_as_strided, \
  [CMX__P_Diagonal] = cmx__view_diagonal,                                      \
  [CMX__P_Depends] = cmx__view_depends,                                        \
  [CMX__P_CustomTransforms] = cmx__view_custom

#endif
