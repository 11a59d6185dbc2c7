"""cmx.nn's fused-path layers (LayerNorm, RMSNorm and RoPE call mx.fast)
against the composite forms they replaced, values and gradients; and the
quantized layers (QuantizedLinear, QuantizedEmbedding, nn.quantize with
class_predicate) against their float layers with the dequantized weights."""

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn
from cmx.nn.layers.positional_encoding import rope as rope_composite
from cmx.utils import tree_flatten

RNG = np.random.default_rng(21)


def randn(*shape):
    return mx.array(RNG.standard_normal(shape).astype(np.float32))


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.array(a.astype(mx.float32)),
                               np.array(b.astype(mx.float32)), rtol=tol, atol=tol)


# The composite forms the layers computed before they called mx.fast.
def layer_norm_composite(x, w, b, eps):
    mean = mx.mean(x, axis=-1, keepdims=True)
    y = (x - mean) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + eps)
    y = y if w is None else w * y
    return y if b is None else y + b


def rms_norm_composite(x, w, eps):
    xf = x.astype(mx.float32) if x.dtype in (mx.float16, mx.bfloat16) else x
    y = xf * mx.rsqrt(mx.mean(mx.square(xf), axis=-1, keepdims=True) + eps)
    return w * y.astype(x.dtype)


def randomize(m):
    m.update({k: randn(*v.shape) for k, v in m.parameters().items()})
    return m


@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)])
def test_layer_norm_fast_matches_composite(affine, bias):
    ln = randomize(nn.LayerNorm(24, eps=1e-4, affine=affine, bias=bias))
    x = randn(3, 5, 24) * 3 + 1
    w, b = ln.get("weight"), ln.get("bias")
    close(ln(x), layer_norm_composite(x, w, b, 1e-4))
    if affine:
        g = mx.grad(lambda p, x: mx.sum(ln.update(p)(x) ** 2))(ln.parameters(), x)
        gr = mx.grad(lambda w, b: mx.sum(layer_norm_composite(x, w, b, 1e-4) ** 2),
                     argnums=(0, 1) if bias else 0)(w, b)
        gw = gr[0] if bias else gr
        close(g["weight"], gw, 1e-4)
        if bias:
            close(g["bias"], gr[1], 1e-4)


@pytest.mark.parametrize("dt,tol", [(mx.float32, 1e-5), (mx.float16, 2e-3), (mx.bfloat16, 2e-2)])
def test_rms_norm_fast_matches_composite(dt, tol):
    rms = randomize(nn.RMSNorm(40, eps=1e-6))
    x = randn(2, 7, 40).astype(dt)
    y = rms(x)
    ref = rms_norm_composite(x, rms.weight, 1e-6)
    assert y.dtype == ref.dtype
    close(y, ref, tol)
    rms.set_dtype(dt)
    y = rms(x)
    assert y.dtype == dt
    close(y, rms_norm_composite(x, rms.weight, 1e-6), tol)
    x32 = x.astype(mx.float32)
    gx = mx.grad(lambda x: mx.sum(nn.RMSNorm(40)(x) * x32))(x32)
    gr = mx.grad(lambda x: mx.sum(rms_norm_composite(x, mx.ones((40,)), 1e-5) * x32))(x32)
    close(gx, gr, 1e-4)


@pytest.mark.parametrize("dims,trad,base,scale,offset", [
    (16, False, 10000, 1.0, 0), (16, True, 100000, 1.0, 5), (12, False, 500, 0.5, 3),
    (8, True, 10000, 2.0, 11)])
def test_rope_fast_matches_composite(dims, trad, base, scale, offset):
    x = randn(2, 3, 9, 16)
    r = nn.RoPE(dims, traditional=trad, base=base, scale=scale)
    ref = rope_composite(x, dims, trad, base, scale, offset)
    close(r(x, offset=offset), ref, 1e-5)
    # an array offset (the KV cache's length in a compiled decode step)
    close(r(x, offset=mx.array(offset)), ref, 1e-5)
    g = mx.grad(lambda x: mx.sum(r(x, offset) * x))(x)
    gr = mx.grad(lambda x: mx.sum(rope_composite(x, dims, trad, base, scale, offset) * x))(x)
    close(g, gr, 1e-4)


def deq(layer):
    return mx.dequantize(layer.weight, layer.scales, layer.get("biases"),
                         layer.group_size, layer.bits)


@pytest.mark.parametrize("bits,group", [(4, 64), (8, 32), (2, 128), (4, 32)])
def test_quantized_linear_is_linear_with_dequantized_weight(bits, group):
    lin = nn.Linear(128, 24)
    q = nn.QuantizedLinear.from_linear(lin, group, bits)
    assert (q.group_size, q.bits, q.mode) == (group, bits, "affine")
    assert q.weight.dtype == mx.uint32 and q.weight.shape == (24, 128 * bits // 32)
    w = deq(q)
    # the dequantized weight is within a step and a half of the original
    # (MLX's rule maps the larger-magnitude end of a group exactly)
    step = mx.repeat(q.scales, group, axis=1)
    assert np.all(np.abs(np.array(w - lin.weight)) <= np.abs(np.array(step)) * 1.5 + 1e-6)
    x = randn(5, 128)
    close(q(x), x @ w.T + lin.bias, 1e-4)
    close(q(x[0]), x[0] @ w.T + lin.bias, 1e-4)
    # the whole layer is frozen, as MLX's
    assert q.trainable_parameters() == {}
    assert set(q.parameters()) == {"weight", "scales", "biases", "bias"}
    assert "group_size=%d, bits=%d" % (group, bits) in repr(q)


def test_quantized_linear_defaults_and_loaded_weights():
    q = nn.QuantizedLinear(64, 16, bias=False)
    assert (q.group_size, q.bits) == (64, 4) and "bias" not in q
    # a model built with quantized layers takes packed weights made elsewhere
    w = randn(16, 64)
    wq, s, b = mx.quantize(w, 32, 4)
    q = nn.QuantizedLinear(64, 16, bias=False, group_size=32, bits=4)
    q.update({"weight": wq, "scales": s, "biases": b})
    x = randn(3, 64)
    close(q(x), x @ mx.dequantize(wq, s, b, 32, 4).T, 1e-4)


def test_quantized_embedding_and_tying():
    emb = nn.Embedding(50, 64)
    q = nn.QuantizedEmbedding.from_embedding(emb, 32, 8)
    table = deq(q)
    idx = mx.array([[3, 0, 49], [7, 7, 1]])
    close(q(idx), table[idx])
    close(q(idx), emb(idx), 0.02)
    x = randn(4, 64)
    close(q.as_linear(x), x @ table.T, 1e-4)
    assert q.trainable_parameters() == {}
    assert repr(q).startswith("QuantizedEmbedding(50, 64, group_size=32, bits=8")


def test_nn_quantize_with_predicates():
    m = nn.Sequential(nn.Embedding(40, 64), nn.Linear(64, 32), nn.ReLU(),
                      nn.Linear(32, 8), nn.LayerNorm(8))
    with pytest.raises(ValueError, match="divisible"):
        nn.quantize(m)  # Linear(32, 8) does not divide into groups of 64
    m.layers[3] = nn.Linear(64, 8)
    m.layers.insert(3, nn.Linear(32, 64))
    x = mx.array([[1, 2, 3]])
    nn.quantize(m, group_size=32)
    kinds = [type(l).__name__ for l in m.layers]
    assert kinds == ["QuantizedEmbedding", "QuantizedLinear", "ReLU",
                     "QuantizedLinear", "QuantizedLinear", "LayerNorm"]
    assert all(getattr(l, "bits", 4) == 4 and getattr(l, "group_size", 32) == 32
               for l in m.layers)
    assert m(x).shape == (1, 3, 8)

    m = nn.Sequential(nn.Embedding(40, 64), nn.Linear(64, 32), nn.Linear(32, 8))
    ref = nn.Sequential(*m.layers)
    y_float = m.layers[2](m.layers[1](m.layers[0](x)))

    def pred(path, mod):
        if path == "layers.0":
            return {"group_size": 32, "bits": 8}
        return isinstance(mod, nn.Linear) and mod.weight.shape[1] % 64 == 0

    nn.quantize(m, 64, 2, class_predicate=pred)
    e, l1, l2 = m.layers
    assert isinstance(e, nn.QuantizedEmbedding) and (e.group_size, e.bits) == (32, 8)
    assert isinstance(l1, nn.QuantizedLinear) and (l1.group_size, l1.bits) == (64, 2)
    assert isinstance(l2, nn.Linear)
    h = e(x)
    close(h, ref.layers[0].weight[x], 0.05)
    close(l1(h), h @ deq(l1).T + l1.bias, 1e-4)
    assert m(x).shape == y_float.shape
    with pytest.raises(ValueError, match="Unable to quantize"):
        nn.quantize(nn.Sequential(nn.ReLU()), class_predicate=lambda p, m: True)
    with pytest.raises(NotImplementedError, match="quantize_input"):
        nn.quantize(nn.Linear(64, 4), quantize_input=True)
    assert [k for k, _ in tree_flatten(m.trainable_parameters())] == [
        "layers.2.weight", "layers.2.bias"]
