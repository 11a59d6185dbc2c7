/* weak.h: the optional part of libcmx, referenced weakly.
 *
 * The op families of include/cmx/ops.h land in libcmx one at a time. The
 * extension redeclares each op (and printing) as a weak symbol: the module
 * links whatever libcmx has, a missing function's address is NULL, and
 * CMXPY_HAS(f) tells which is which at run time. Functions and methods that
 * need a missing op are not registered (see cmxpy_def.needs), so the Python
 * API grows with libcmx with no edits here beyond new declarations.
 */
#ifndef CMXPY_WEAK_H
#define CMXPY_WEAK_H

#include "cmx/cmx.h"

#define CMXPY_WEAK(fn) extern __typeof__(fn) fn __attribute__((weak));
#define CMXPY_WEAK_OP(name) CMXPY_WEAK(cmx_##name)
#define CMXPY_HAS(fn) ((const void*)(fn) != NULL)

/* Every op of ops.h. */
CMX__UNARY_OPS(CMXPY_WEAK_OP)
CMX__BINARY_OPS(CMXPY_WEAK_OP)
CMX__REDUCE_OPS(CMXPY_WEAK_OP)

#define CMXPY_OTHER_OPS(X)                                                     \
  X(arange)                                                                    \
  X(linspace)                                                                  \
  X(full)                                                                      \
  X(zeros) X(ones) X(zeros_like) X(ones_like) X(full_like) X(eye) X(identity)  \
      X(tri) X(tril) X(triu) X(round) X(astype) X(where) X(clip) X(var) X(std) \
          X(argmin) X(argmax) X(softmax) X(reshape) X(flatten) X(unflatten)    \
              X(squeeze) X(expand_dims) X(transpose) X(swapaxes) X(moveaxis)   \
                  X(broadcast_to) X(broadcast_arrays) X(broadcast_shapes)      \
                      X(slice) X(slice_update) X(concatenate) X(stack)         \
                          X(split_sections) X(split_indices) X(pad) X(repeat)  \
                              X(tile) X(flip) X(roll) X(as_strided)            \
                                  X(contiguous) X(view) X(matmul) X(addmm)
CMXPY_OTHER_OPS(CMXPY_WEAK_OP)

/* Printing (a separate family). */
CMXPY_WEAK(cmx_array_tostring)
CMXPY_WEAK(cmx_array_tostring_values)
CMXPY_WEAK(cmx_set_printoptions)
CMXPY_WEAK(cmx_get_printoptions_precision)

#endif
