/* ops_quantized.c: quantize, dequantize, quantized_matmul, gather_qmm,
 * qqmm, gather_qqmm, to_fp8 and from_fp8 with mlx.core's signatures
 * (modes affine, mxfp4, mxfp8, nvfp4; see cmx/quantize.h). */
#include "args.h"

/* An optional int argument (None: 0, the C API's default). */
#define OPT0(k) (ISNONE(k) ? 0 : INT(k))

CMXPY_DEF(quantize,
          "(w: array, /, group_size: int | None = None, bits: int | None = "
          "None, mode: str = 'affine', *, global_scale: array | None = None, "
          "stream: StreamOrDevice = None) -> list[array]",
          "Quantize the array w along its last axis. mode 'affine': groups of "
          "group_size (default 64) elements get bits-bit integers (default "
          "4) packed into uint32, a scale and a bias, w ~ scale * q + bias. "
          "'mxfp4' / 'mxfp8' (groups of 32, E2M1 / E4M3 values, E8M0 "
          "scales) and 'nvfp4' (groups of 16, E2M1 values, E4M3 scales, "
          "optional float32 global_scale): packed values and uint8 "
          "scales.\n\nReturns:\n    list: The packed integers, the scales "
          "and (affine only) the biases.") {
  cmx_array r[3] = {NULL, NULL, NULL};
  cmx_status st = cmx_quantize_global(&r[0], &r[1], &r[2], ARR(0), OPT0(1),
                                      OPT0(2), STR(3), ARR(4), STREAM);
  return cmxpy_list(st, r, st == CMX_OK && !r[2] ? 2 : 3);
}

CMXPY_DEF(dequantize,
          "(w: array, /, scales: array, biases: array | None = None, "
          "group_size: int | None = None, bits: int | None = None, mode: str "
          "= 'affine', global_scale: array | None = None, dtype: Dtype | "
          "None = None, *, stream: StreamOrDevice = None) -> array",
          "Dequantize w with its scales (and biases, affine: scale * q + "
          "bias per group; the other modes: code value * scale).\n\n"
          "Returns:\n    array: The dequantized matrix (dtype: the scales' "
          "for affine, else bfloat16, unless given).") {
  return RET(cmx_dequantize_global(OUT, ARR(0), ARR(1), ARR(2), OPT0(3),
                                   OPT0(4), STR(5), ARR(6), DTYPE(7), STREAM));
}

CMXPY_DEF(quantized_matmul,
          "(x: array, w: array, /, scales: array, biases: array | None = "
          "None, transpose: bool = True, group_size: int | None = None, "
          "bits: int | None = None, mode: str = 'affine', *, stream: "
          "StreamOrDevice = None) -> array",
          "Matrix multiplication with a quantized matrix: x @ W.T "
          "(transpose) or x @ W, reading the packed integers directly.\n\n"
          "Returns:\n    array: The result.") {
  return RET(cmx_quantized_matmul(OUT, ARR(0), ARR(1), ARR(2), ARR(3), FLAG(4),
                                  OPT0(5), OPT0(6), STR(7), STREAM));
}

CMXPY_DEF(gather_qmm,
          "(x: array, w: array, /, scales: array, biases: array | None = "
          "None, lhs_indices: array | None = None, rhs_indices: array | None "
          "= None, transpose: bool = True, group_size: int | None = None, "
          "bits: int | None = None, mode: str = 'affine', global_scale: "
          "array | None = None, *, sorted_indices: bool = False, stream: "
          "StreamOrDevice = None) -> array",
          "quantized_matmul with matrix-level gather: out[i] = "
          "x[lhs_indices[i]] @ W[rhs_indices[i]] (.T when transpose), the "
          "indices flat over the batch dimensions.\n\nReturns:\n    array: "
          "The result.") {
  return RET(cmx_gather_qmm_global(OUT, ARR(0), ARR(1), ARR(2), ARR(3), ARR(4),
                                   ARR(5), FLAG(6), OPT0(7), OPT0(8), STR(9),
                                   ARR(10), FLAG(11), STREAM));
}

CMXPY_DEF(qqmm,
          "(x: array, w: array, scales: array | None = None, group_size: int "
          "| None = None, bits: int | None = None, mode: str = 'nvfp4', "
          "global_scale_x: array | None = None, global_scale_w: array | None "
          "= None, *, stream: StreamOrDevice = None) -> array",
          "x @ w.T with x quantized on the fly (mode 'nvfp4', 'mxfp8' or "
          "'mxfp4') and w either quantized (uint32 with its scales) or "
          "quantized on the fly.\n\nReturns:\n    array: The result (x's "
          "dtype).") {
  return RET(cmx_qqmm(OUT, ARR(0), ARR(1), ARR(2), OPT0(3), OPT0(4), STR(5),
                      ARR(6), ARR(7), STREAM));
}

CMXPY_DEF(gather_qqmm,
          "(x: array, w: array, /, scales: array | None = None, lhs_indices: "
          "array | None = None, rhs_indices: array | None = None, "
          "group_size: int | None = None, bits: int | None = None, mode: str "
          "= 'nvfp4', global_scale_x: array | None = None, global_scale_w: "
          "array | None = None, *, sorted_indices: bool = False, stream: "
          "StreamOrDevice = None) -> array",
          "qqmm with matrix-level gather: out[i] = qqmm(x[lhs_indices[i]], "
          "w[rhs_indices[i]]), the indices flat over the batch "
          "dimensions.\n\nReturns:\n    array: The result.") {
  return RET(cmx_gather_qqmm(OUT, ARR(0), ARR(1), ARR(2), ARR(3), ARR(4),
                             OPT0(5), OPT0(6), STR(7), ARR(8), ARR(9), FLAG(10),
                             STREAM));
}

CMXPY_DEF(to_fp8, "(x: array, *, stream: StreamOrDevice = None) -> array",
          "Encode a real floating array as 8-bit floats E4M3 (uint8 codes), "
          "rounding to nearest even and saturating at +-448.\n\n"
          "Returns:\n    array: The uint8 codes.") {
  return RET(cmx_to_fp8(OUT, ARR(0), STREAM));
}

CMXPY_DEF(from_fp8,
          "(x: array, dtype: Dtype = bfloat16, *, stream: StreamOrDevice = "
          "None) -> array",
          "Decode uint8 8-bit float E4M3 codes exactly to dtype.\n\n"
          "Returns:\n    array: The decoded values.") {
  return RET(cmx_from_fp8(OUT, ARR(0), DTYPE(1), STREAM));
}

static cmxpy_spec* const functions[] = {
    &spec_quantize, &spec_dequantize,  &spec_quantized_matmul, &spec_gather_qmm,
    &spec_qqmm,     &spec_gather_qqmm, &spec_to_fp8,           &spec_from_fp8};

int cmxpy_init_ops_quantized(PyObject* m) {
  return cmxpy_add_functions(m, functions, CMXPY_COUNT(functions));
}
