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

#define CMXPY_OTHER_OPS(X)                                                    \
  X(arange)                                                                   \
  X(linspace)                                                                 \
  X(full)                                                                     \
  X(zeros)                                                                    \
  X(ones)                                                                     \
  X(zeros_like) X(ones_like) X(full_like) X(eye) X(identity) X(tri) X(tril)   \
      X(triu) X(round) X(astype) X(where) X(clip) X(var) X(std) X(argmin)     \
          X(argmax) X(softmax) X(reshape) X(flatten) X(unflatten) X(squeeze)  \
              X(expand_dims) X(transpose) X(swapaxes) X(moveaxis)             \
                  X(broadcast_to) X(broadcast_arrays) X(broadcast_shapes)     \
                      X(slice) X(slice_update) X(concatenate) X(stack)        \
                          X(split_sections) X(split_indices) X(pad) X(repeat) \
                              X(tile) X(flip) X(roll) X(as_strided)           \
                                  X(contiguous) X(view) X(matmul) X(addmm)
CMXPY_OTHER_OPS(CMXPY_WEAK_OP)

/* Saving and loading (io.h). */
#define CMXPY_IO_FUNCS(X)                                                      \
  X(named_arrays_new)                                                          \
  X(named_arrays_free)                                                         \
  X(named_arrays_set) X(named_arrays_size) X(named_arrays_name)                \
      X(named_arrays_at) X(meta_new_string) X(meta_new_array)                  \
          X(meta_array_append) X(meta_free) X(meta_get_type)                   \
              X(meta_get_string) X(meta_array_elem_type) X(meta_array_length)  \
                  X(meta_array_item) X(meta_to_array) X(meta_from_array)       \
                      X(metadata_new) X(metadata_free) X(metadata_set)         \
                          X(metadata_set_string) X(metadata_size)              \
                              X(metadata_key) X(metadata_value) X(save)        \
                                  X(savez) X(savez_compressed)                 \
                                      X(save_safetensors) X(save_gguf) X(load) \
                                          X(load_bytes) X(loaded_clear)
CMXPY_IO_FUNCS(CMXPY_WEAK_OP)

/* Printing (a separate family). */
CMXPY_WEAK(cmx_array_tostring)
CMXPY_WEAK(cmx_array_tostring_values)
CMXPY_WEAK(cmx_set_printoptions)
CMXPY_WEAK(cmx_get_printoptions_precision)

#endif
