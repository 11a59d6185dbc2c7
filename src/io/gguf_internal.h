/* GGUF internals shared by the reader (gguf.c) and the quantized-tensor
 * conversions (gguf_quants.c). */
#ifndef CMX_IO_GGUF_INTERNAL_H
#define CMX_IO_GGUF_INTERNAL_H

#include "io/io_common.h"

/* ggml tensor type codes (the ones cmx names in code). */
enum {
  GGML_F32 = 0,
  GGML_F16 = 1,
  GGML_Q4_0 = 2,
  GGML_Q4_1 = 3,
  GGML_Q8_0 = 8,
  GGML_Q4_K = 12,
  GGML_Q6_K = 14,
  GGML_I8 = 24,
  GGML_I16 = 25,
  GGML_I32 = 26,
  GGML_I64 = 27,
  GGML_F64 = 28,
  GGML_BF16 = 30
};

/* Block layout of a quantized type cmx can load. */
typedef struct cmx__gguf_quant {
  uint32_t block;       /* values per block */
  uint32_t block_bytes; /* bytes per block in the file */
} cmx__gguf_quant;

/* The layout of a loadable quantized type, or NULL (unsupported). */
const cmx__gguf_quant* cmx__gguf_quant_info(uint32_t type);
/* "Q4_K", "F32" ..., "unknown" for codes ggml does not define. */
const char* cmx__gguf_type_name(uint32_t type);
/* Loads quantized tensor `name` (cmx-order shape, data at file offset at,
 * size already validated against the file) into out, as MLX does: Q4_0,
 * Q4_1, Q4_K, Q8_0 as packed uint32 weights plus ".scales"/".biases"
 * (float16, groups of 32); Q6_K dequantized to float16. Fails on duplicate
 * names. */
cmx_status cmx__gguf_load_quantized(const cmx__src* s, const char* name,
                                    uint32_t type, const int64_t* shape,
                                    int ndim, uint64_t at,
                                    cmx_named_arrays* out);

#endif
