/* Quantized GGUF tensors, converted as MLX converts them. MLX keeps Q4_0,
 * Q4_1, Q4_K and Q8_0 quantized in its own affine format (value = q *
 * scale + bias, groups of 32, q packed into uint32 little nibble first) and
 * dequantizes other types to float16; cmx does the same for Q6_K and
 * refuses the rest. The raw blocks are read in bounded chunks, so memory
 * stays at the size of the outputs. */
#include <stdlib.h>
#include <string.h>

#include "io/gguf_internal.h"

static const char* OP = "load_gguf";

static const cmx__gguf_quant k_q4_0 = {32, 18}, k_q4_1 = {32, 20},
                             k_q8_0 = {32, 34}, k_q4_k = {256, 144},
                             k_q6_k = {256, 210};

const cmx__gguf_quant* cmx__gguf_quant_info(uint32_t type) {
  switch (type) {
    case GGML_Q4_0:
      return &k_q4_0;
    case GGML_Q4_1:
      return &k_q4_1;
    case GGML_Q8_0:
      return &k_q8_0;
    case GGML_Q4_K:
      return &k_q4_k;
    case GGML_Q6_K:
      return &k_q6_k;
    default:
      return NULL;
  }
}

static float half(const uint8_t* p) {
  return cmx_float16_to_float(cmx__le16(p));
}

/* Packs 32 4-bit values given as low nibbles of lo[0..15] (values 0..15)
 * and high nibbles (values 16..31) into 16 bytes, value i at nibble i. */
static void pack_q4(const uint8_t* q, uint8_t* out) {
  for (int k = 0; k < 8; k++) {
    out[k] = (uint8_t)((q[2 * k] & 0x0F) | ((q[2 * k + 1] & 0x0F) << 4));
    out[8 + k] = (uint8_t)((q[2 * k] >> 4) | (q[2 * k + 1] & 0xF0));
  }
}

/* One block to (weights, scales, biases); returns groups written. */
static void convert_block(uint32_t type, const uint8_t* b, uint8_t* w,
                          cmx_float16_t* sc, cmx_float16_t* bi) {
  switch (type) {
    case GGML_Q4_0: { /* |d f16|16 bytes: value = (q - 8) * d| */
      float d = half(b);
      sc[0] = cmx__le16(b);
      bi[0] = cmx_float_to_float16(-8.0f * d);
      pack_q4(b + 2, w);
      break;
    }
    case GGML_Q4_1: { /* |d f16|m f16|16 bytes: value = q * d + m| */
      sc[0] = cmx__le16(b);
      bi[0] = cmx__le16(b + 2);
      pack_q4(b + 4, w);
      break;
    }
    case GGML_Q8_0: { /* |d f16|32 x int8: value = q * d| */
      float d = half(b);
      sc[0] = cmx__le16(b);
      bi[0] = cmx_float_to_float16(-128.0f * d);
      for (int j = 0; j < 32; j++) w[j] = b[2 + j] ^ 0x80; /* q + 128 */
      break;
    }
    default: { /* Q4_K: |d|dmin|12 bytes of 6-bit scales/mins|128 bytes| */
      float d = half(b), dmin = half(b + 2);
      const uint8_t* s = b + 4;
      for (int j = 0; j < 8; j++) {
        uint8_t sv, mv;
        if (j < 4) {
          sv = s[j] & 63;
          mv = s[j + 4] & 63;
        } else {
          sv = (uint8_t)((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
          mv = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
        }
        sc[j] = cmx_float_to_float16(d * sv);
        bi[j] = cmx_float_to_float16(-(dmin * mv));
      }
      /* Each 32 bytes hold two groups: low nibbles, then high nibbles. */
      const uint8_t* q = b + 16;
      for (int g = 0; g < 4; g++, q += 32, w += 32) {
        for (int k = 0; k < 16; k++) {
          w[k] = (uint8_t)((q[2 * k] & 0x0F) | ((q[2 * k + 1] & 0x0F) << 4));
          w[16 + k] = (uint8_t)((q[2 * k] >> 4) | (q[2 * k + 1] & 0xF0));
        }
      }
    }
  }
}

/* Q6_K block to 256 float16: |ql 128|qh 64|int8 scales 16|d f16|. */
static void dequant_q6_k(const uint8_t* b, cmx_float16_t* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scl = (const int8_t*)(b + 192);
  float d = half(b + 208);
  for (int n = 0; n < 2; n++, ql += 64, qh += 32, scl += 8, y += 128) {
    for (int l = 0; l < 32; l++) {
      int is = l / 16;
      int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = cmx_float_to_float16(d * scl[is] * (float)q1);
      y[l + 32] = cmx_float_to_float16(d * scl[is + 2] * (float)q2);
      y[l + 64] = cmx_float_to_float16(d * scl[is + 4] * (float)q3);
      y[l + 96] = cmx_float_to_float16(d * scl[is + 6] * (float)q4);
    }
  }
}

/* name + suffix, with a trailing ".weight" of name replaced (MLX's
 * naming: "blk.0.attn_q.weight" -> "blk.0.attn_q.scales"). */
static char* derived_name(const char* name, const char* suffix) {
  size_t n = strlen(name), w = strlen(".weight"), s = strlen(suffix);
  if (n >= w && strcmp(name + n - w, ".weight") == 0) n -= w;
  char* r = malloc(n + s + 1);
  if (!r) return CMX__FAIL(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  memcpy(r, name, n);
  memcpy(r + n, suffix, s + 1);
  return r;
}

cmx_status cmx__gguf_load_quantized(const cmx__src* s, const char* name,
                                    uint32_t type, const int64_t* shape,
                                    int ndim, uint64_t at,
                                    cmx_named_arrays* out) {
  const cmx__gguf_quant* q = cmx__gguf_quant_info(type);
  int64_t size = cmx__shape_size(shape, ndim); /* validated by the caller */
  int64_t nblocks = size / q->block;
  int64_t sh[CMX_MAX_NDIM];
  memcpy(sh, shape, (size_t)ndim * sizeof *sh);
  char *sname = NULL, *bname = NULL;
  cmx_array w = NULL, sc = NULL, bi = NULL;
  cmx_status st = CMX_OK;
  if (type == GGML_Q6_K) {
    if (cmx__named_arrays_find(out, name) >= 0)
      return cmx__error(CMX_ERR_VALUE, "[%s] Duplicate parameter name %s", OP,
                        name);
    w = cmx__io_new_array(OP, sh, ndim, CMX_FLOAT16);
  } else {
    int bits = type == GGML_Q8_0 ? 8 : 4;
    sname = derived_name(name, ".scales");
    bname = derived_name(name, ".biases");
    if (!sname || !bname) st = CMX_ERR_MEMORY;
    if (st == CMX_OK && (cmx__named_arrays_find(out, name) >= 0 ||
                         cmx__named_arrays_find(out, sname) >= 0 ||
                         cmx__named_arrays_find(out, bname) >= 0 ||
                         strcmp(name, sname) == 0 || strcmp(name, bname) == 0))
      st = cmx__error(CMX_ERR_VALUE,
                      "[%s] Duplicate parameter name %s this can happen when "
                      "loading quantized tensors",
                      OP, name);
    if (st == CMX_OK) {
      sh[ndim - 1] = shape[ndim - 1] / 32 * bits; /* exact: a multiple of 32 */
      w = cmx__io_new_array(OP, sh, ndim, CMX_UINT32);
      sh[ndim - 1] = shape[ndim - 1] / 32;
      sc = w ? cmx__io_new_array(OP, sh, ndim, CMX_FLOAT16) : NULL;
      bi = sc ? cmx__io_new_array(OP, sh, ndim, CMX_FLOAT16) : NULL;
      if (!bi) st = cmx_last_status();
    }
  }
  if (st == CMX_OK && !w) st = cmx_last_status();
  /* Convert in chunks of whole blocks read straight from the file. */
  const int64_t chunk = 4096;
  uint8_t* raw = st == CMX_OK ? malloc((size_t)chunk * q->block_bytes) : NULL;
  if (st == CMX_OK && !raw)
    st = cmx__error(CMX_ERR_MEMORY, "[%s] out of host memory", OP);
  int groups = (int)(q->block / 32);
  size_t wbytes = type == GGML_Q8_0 ? 32 : (size_t)q->block / 2;
  for (int64_t b0 = 0; st == CMX_OK && b0 < nblocks; b0 += chunk) {
    int64_t k = nblocks - b0 < chunk ? nblocks - b0 : chunk;
    st = cmx__src_read(s, raw, (uint64_t)k * q->block_bytes,
                       at + (uint64_t)b0 * q->block_bytes, "tensor data");
    for (int64_t i = 0; st == CMX_OK && i < k; i++) {
      const uint8_t* blk = raw + i * q->block_bytes;
      int64_t b = b0 + i;
      if (type == GGML_Q6_K) {
        dequant_q6_k(blk, (cmx_float16_t*)cmx__io_data(w) + b * 256);
      } else {
        convert_block(type, blk, (uint8_t*)cmx__io_data(w) + b * wbytes,
                      (cmx_float16_t*)cmx__io_data(sc) + b * groups,
                      (cmx_float16_t*)cmx__io_data(bi) + b * groups);
      }
    }
  }
  free(raw);
  if (st == CMX_OK) st = cmx__named_arrays_push(out, name, w);
  if (st == CMX_OK && sc) st = cmx__named_arrays_push(out, sname, sc);
  if (st == CMX_OK && bi) st = cmx__named_arrays_push(out, bname, bi);
  cmx_array_release(w);
  cmx_array_release(sc);
  cmx_array_release(bi);
  free(sname);
  free(bname);
  return st;
}
