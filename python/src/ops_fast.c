/* ops_fast.c: the cmx.core.fast submodule: rms_norm, layer_norm, rope and
 * scaled_dot_product_attention, with mlx.core.fast's signatures. */
#include "args.h"

#define STREAM_KW "*, stream: StreamOrDevice = None) -> array"

CMXPY_DEF(rms_norm, "(x: array, weight: array | None, eps: float, " STREAM_KW,
          "Root Mean Square normalization (RMS norm) over the last axis: x "
          "/ sqrt(mean(x^2) + eps) * weight, computed in float32.\n\nArgs:\n"
          "    x (array): Input array.\n    weight (array, optional): A "
          "multiplicative weight of x's last dimension, or None.\n    eps "
          "(float): A small additive constant for numerical stability.\n\n"
          "Returns:\n    array: The output array.") {
  return RET(cmx_fast_rms_norm(OUT, ARR(0), ARR(1), (float)FLT(2), STREAM));
}

CMXPY_DEF(layer_norm,
          "(x: array, weight: array | None, bias: array | None, eps: "
          "float, " STREAM_KW,
          "Layer normalization over the last axis: (x - mean) / sqrt(var + "
          "eps) * weight + bias, computed in float32.\n\nArgs:\n    x "
          "(array): Input array.\n    weight (array, optional): A "
          "multiplicative weight, or None.\n    bias (array, optional): An "
          "additive offset, or None.\n    eps (float): A small additive "
          "constant for numerical stability.\n\nReturns:\n    array: The "
          "output array.") {
  return RET(
      cmx_fast_layer_norm(OUT, ARR(0), ARR(1), ARR(2), (float)FLT(3), STREAM));
}

CMXPY_DEF(rope,
          "(a: array, dims: int, *, traditional: bool, base: float | None, "
          "scale: float, offset: int | array, freqs: array | None = None, "
          "stream: StreamOrDevice = None) -> array",
          "Apply rotary positional encoding to the input: the first dims "
          "features of position offset + l (l along the second to last "
          "axis) are rotated by angles position * scale * base^(-2i/dims), "
          "or position * scale / freqs[i].\n\nArgs:\n    a (array): Input "
          "array (at least 3 dimensions).\n    dims (int): The feature "
          "dimensions to rotate.\n    traditional (bool): Rotate "
          "consecutive pairs instead of the two halves.\n    base (float, "
          "optional): The base of the frequencies (None with freqs).\n    "
          "scale (float): The scale of the positions.\n    offset (int or "
          "array): The position of the first row (an array: a scalar or "
          "one per batch entry).\n    freqs (array, optional): Frequencies "
          "to use instead of base.\n\nReturns:\n    array: The output "
          "array.") {
  PyObject* off = OBJ(5);
  int64_t offset = 0;
  cmx_array offa = NULL;
  if (PyLong_Check(off) && !PyBool_Check(off)) {
    offset = PyLong_AsLongLong(off);
    if (offset == -1 && PyErr_Occurred()) return NULL;
  } else {
    offa = cmxpy_to_array(off, "rope");
    if (!offa) return NULL;
  }
  float base = (float)FLT(3);
  cmx_status st =
      cmx_fast_rope(OUT, ARR(0), INT(1), FLAG(2), ISNONE(3) ? NULL : &base,
                    (float)FLT(4), offset, offa, ARR(6), STREAM);
  cmx_array_release(offa);
  return RET(st);
}

CMXPY_DEF(scaled_dot_product_attention,
          "(q: array, k: array, v: array, *, scale: float, mask: None | str "
          "| array = None, sinks: array | None = None, force_fused: bool = "
          "False, stream: StreamOrDevice = None) -> array",
          "A fused implementation of softmax(scale * q @ k.T + mask) @ v, "
          "with grouped-query heads (k and v may have fewer heads than q, "
          "dividing them).\n\nArgs:\n    q (array): Queries (B, N_q, L, "
          "D).\n    k (array): Keys (B, N_kv, S, D).\n    v (array): Values "
          "(B, N_kv, S, D_v).\n    scale (float): The scale of the scores.\n"
          "    mask (str or array, optional): \"causal\", a boolean mask "
          "(True keeps a score) or an additive mask, broadcastable to (B, "
          "N_q, L, S).\n    sinks (array, optional): One attention-sink "
          "logit per query head.\n    force_fused (bool): Accepted for MLX "
          "compatibility; the fused kernel always runs.\n\nReturns:\n    "
          "array: The output array (B, N_q, L, D_v).") {
  PyObject* m = OBJ(4);
  const char* mode = NULL;
  cmx_array mask = NULL;
  if (PyUnicode_Check(m)) {
    mode = PyUnicode_AsUTF8(m);
    if (!mode) return NULL;
  } else if (m != Py_None) {
    mask = cmxpy_to_array(m, "scaled_dot_product_attention");
    if (!mask) return NULL;
  }
  cmx_status st = cmx_fast_scaled_dot_product_attention(
      OUT, ARR(0), ARR(1), ARR(2), (float)FLT(3), mode, mask, ARR(5), STREAM);
  cmx_array_release(mask);
  return RET(st);
}

CMXPY_DEF(cross_entropy, "(logits: array, targets: array, " STREAM_KW,
          "Cross entropy loss with class indices as targets: "
          "logsumexp(logits, axis=-1) - logits[..., target], in one pass "
          "over each row with float32 accumulation.\n\nArgs:\n    logits "
          "(array): The unnormalized logits; the loss is computed over the "
          "last axis.\n    targets (array): Class indices (an integer "
          "dtype), of logits' shape without its last axis; each in [0, "
          "logits.shape[-1]) (a negative index counts from the end).\n\n"
          "Returns:\n    array: The per-element loss in float32, with the "
          "shape of targets.") {
  return RET(cmx_fast_cross_entropy(OUT, ARR(0), ARR(1), STREAM));
}

static cmxpy_spec* const functions[] = {
    &spec_rms_norm, &spec_layer_norm, &spec_rope,
    &spec_scaled_dot_product_attention, &spec_cross_entropy};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "cmx.core.fast",
    .m_doc =
        "cmx.core.fast: fused operations for transformer models (as "
        "mlx.core.fast).",
    .m_size = -1,
};

int cmxpy_init_fast(PyObject* m) {
  /* Another area may have made the submodule already: add to it. */
  PyObject* sub = PyObject_GetAttrString(m, "fast");
  if (!sub) {
    PyErr_Clear();
    sub = PyModule_Create(&fast_module);
    if (!sub) return -1;
    Py_INCREF(sub);
    if (PyModule_AddObject(m, "fast", sub) < 0) {
      Py_DECREF(sub);
      Py_DECREF(sub);
      return -1;
    }
  }
  int rc = cmxpy_add_functions(sub, functions, CMXPY_COUNT(functions));
  if (rc == 0)
    rc = PyDict_SetItemString(PyImport_GetModuleDict(), "cmx.core.fast", sub);
  Py_DECREF(sub);
  return rc;
}
