"""quantize, dequantize, quantized_matmul and gather_qmm (MLX's affine
format): packed integers, scales and biases against a NumPy reference of
MLX's formula (and equal to real MLX's where it is installed), round trips
for every bits and group size, products against matmul with the
dequantized matrix (both transposes, decode and prompt shapes, batches),
gradients, and the errors."""
import numpy as np
import pytest

import cmx.core as mx

try:
    import mlx.core as mlx
except ImportError:  # pragma: no cover - MLX is optional
    mlx = None

RNG = np.random.default_rng(16)
BITS = [1, 2, 3, 4, 5, 6, 8]
GROUPS = [32, 64, 128]


@pytest.fixture(autouse=True)
def _cpu():
    with mx.stream(mx.cpu):
        yield


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def quant_ref(w, g, bits):
    """MLX's affine rule in float32: integers, scales, biases."""
    w = w.astype(np.float32)
    wg = w.reshape(w.shape[:-1] + (w.shape[-1] // g, g))
    nb = np.float32(2**bits - 1)
    hi, lo = wg.max(-1, keepdims=True), wg.min(-1, keepdims=True)
    neg = np.abs(lo) > np.abs(hi)
    s = np.maximum((hi - lo) / nb, np.float32(1e-7))
    s = np.where(neg, s, -s)
    edge = np.where(neg, lo, hi)
    q0 = np.round(edge / s)
    s = np.where(q0 != 0, edge / np.where(q0 != 0, q0, 1), s).astype(np.float32)
    b = np.where(q0 == 0, 0, edge).astype(np.float32)
    if bits == 1:  # one bit: the plain (scale, lo) pair
        s = np.maximum(hi - lo, np.float32(1e-7)).astype(np.float32)
        b = lo
    q = np.clip(np.round((wg - b) / s), 0, nb).astype(np.uint32)
    return q.reshape(w.shape), s[..., 0], b[..., 0]


def pack_ref(q, bits):
    """LSB-first bit stream of each row, as uint32 words."""
    K = q.shape[-1]
    bit = (q[..., None] >> np.arange(bits, dtype=np.uint32)) & 1
    bit = bit.reshape(q.shape[:-1] + (K * bits // 32, 32)).astype(np.uint64)
    return (bit << np.arange(32, dtype=np.uint64)).sum(-1).astype(np.uint32)


def deq_ref(q, s, b, g):
    qg = q.reshape(q.shape[:-1] + (-1, g)).astype(np.float64)
    return (qg * s[..., None] + b[..., None]).reshape(q.shape)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("g", GROUPS)
def test_quantize_matches_formula_and_round_trips(bits, g):
    w = rand(6, 256)
    wq, s, b = mx.quantize(mx.array(w), group_size=g, bits=bits)
    assert wq.dtype == mx.uint32 and wq.shape == (6, 256 * bits // 32)
    assert s.shape == b.shape == (6, 256 // g) and s.dtype == mx.float32
    q, sr, br = quant_ref(w, g, bits)
    np.testing.assert_array_equal(np.array(wq), pack_ref(q, bits))
    np.testing.assert_allclose(np.array(s), sr, rtol=1e-6)
    np.testing.assert_allclose(np.array(b), br, rtol=1e-6)
    d = mx.dequantize(wq, s, b, group_size=g, bits=bits)
    np.testing.assert_allclose(np.array(d), deq_ref(q, sr, br, g), rtol=1e-5,
                               atol=1e-5)
    # the round trip is within a step and a half of each group (MLX's
    # rule maps the larger-magnitude end exactly, the other may clip)
    step = np.repeat(np.abs(sr), g, axis=-1)
    assert np.all(np.abs(np.array(d) - w) <= 1.5 * step + 1e-5)


@pytest.mark.skipif(mlx is None, reason="MLX is not installed")
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
def test_quantize_equals_mlx(bits, dt):
    w = rand(4, 3, 128)
    a = mx.array(w).astype(getattr(mx, dt))
    m = mlx.array(w).astype(getattr(mlx, dt))
    got = mx.quantize(a, group_size=32, bits=bits)
    want = mlx.quantize(m, group_size=32, bits=bits)
    np.testing.assert_array_equal(np.array(got[0]), np.array(want[0]))
    for x, y in zip(got[1:], want[1:]):
        assert x.dtype == getattr(mx, dt)
        np.testing.assert_array_equal(np.array(x.astype(mx.float32)),
                                      np.array(y.astype(mlx.float32)))
    d1 = mx.dequantize(*got, group_size=32, bits=bits)
    d2 = mlx.dequantize(*want, group_size=32, bits=bits)
    if dt == "float32":  # MLX may fuse the multiply-add
        np.testing.assert_allclose(np.array(d1), np.array(d2), rtol=1e-6,
                                   atol=1e-6)
    else:  # the same roundings in the half type: equal bits
        np.testing.assert_array_equal(np.array(d1.astype(mx.float32)),
                                      np.array(d2.astype(mlx.float32)))


@pytest.mark.skipif(mlx is None, reason="MLX is not installed")
def test_quantized_matmul_equals_mlx():
    w, x = rand(64, 256), rand(3, 256)
    got = mx.quantized_matmul(mx.array(x), *mx.quantize(mx.array(w)))
    want = mlx.quantized_matmul(mlx.array(x), *mlx.quantize(mlx.array(w)))
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-4,
                               atol=1e-4)


def test_quantize_half_inputs_and_dtype():
    w = mx.array(rand(8, 64)).astype(mx.bfloat16)
    wq, s, b = mx.quantize(w, group_size=32, bits=4)
    assert s.dtype == b.dtype == mx.bfloat16
    assert mx.dequantize(wq, s, b, group_size=32).dtype == mx.bfloat16
    d = mx.dequantize(wq, s, b, group_size=32, dtype=mx.float16)
    assert d.dtype == mx.float16


@pytest.mark.parametrize("bits", [2, 3, 4, 6, 8])
@pytest.mark.parametrize("g", [32, 128])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("M", [1, 3, 17])
def test_quantized_matmul(bits, g, transpose, M):
    N, K = 96 if transpose else 256, 256 if transpose else 128
    w = rand(N, K) if transpose else rand(K, N)
    wq, s, b = mx.quantize(mx.array(w), group_size=g, bits=bits)
    W = np.array(mx.dequantize(wq, s, b, group_size=g, bits=bits)).astype(np.float64)
    x = rand(M, K)
    y = mx.quantized_matmul(mx.array(x), wq, s, b, transpose=transpose,
                            group_size=g, bits=bits)
    ref = x @ (W.T if transpose else W)
    assert y.shape == ref.shape and y.dtype == mx.float32
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-3)


def unpack_ref(wq, bits, K):
    """The integers of packed rows (LSB-first bit streams)."""
    words = np.array(wq).astype(np.uint64)
    stream = (words[..., None] >> np.arange(32, dtype=np.uint64)) & 1
    stream = stream.reshape(words.shape[:-1] + (K, bits))
    return (stream << np.arange(bits, dtype=np.uint64)).sum(-1).astype(np.float64)


@pytest.mark.parametrize("bits", [3, 4, 8])
@pytest.mark.parametrize("g", [32, 64, 128])
@pytest.mark.parametrize("sdt", [mx.float32, mx.float16, mx.bfloat16])
def test_quantized_matmul_decoding_within_rounding(bits, g, sdt):
    """The decoding path (transpose, few rows of x: SIMD kernels for 4 and 8
    bits) against sum_g s_g (q_g . x_g) + b_g sum(x_g) in float64, within
    the float32 bound of any summation order, (K + G) u sum |s q x| +
    G u sum |b sum(x)| (u = 2^-24); odd row counts (not a multiple of the
    kernels' 4-row blocks) and float16 / bfloat16 scales as GGUF files
    have them."""
    N, K = 37, 384
    wq, s, b = mx.quantize(mx.array(rand(N, K)), group_size=g, bits=bits)
    s, b = s.astype(sdt), b.astype(sdt)
    q = unpack_ref(wq, bits, K).reshape(N, K // g, g)
    sf = np.array(s.astype(mx.float32)).astype(np.float64)
    bf = np.array(b.astype(mx.float32)).astype(np.float64)
    G, u = K // g, 2.0**-24
    for M in (1, 2, 5):
        x = rand(M, K).astype(np.float64)
        xg = x.reshape(M, 1, G, g)
        dots = (q[None] * xg).sum(-1)  # (M, N, G)
        ref = (sf * dots).sum(-1) + (bf * xg.sum(-1)).sum(-1)
        bound = ((K + G) * u * (np.abs(sf) * (q[None] * np.abs(xg)).sum(-1)).sum(-1)
                 + G * u * np.abs(bf * xg.sum(-1)).sum(-1))
        y = mx.quantized_matmul(mx.array(x.astype(np.float32)), wq, s, b, group_size=g,
                                bits=bits)
        # float16 / bfloat16 outputs round once more
        out_u = {mx.float32: 0, mx.float16: 2.0**-11, mx.bfloat16: 2.0**-8}[y.dtype]
        err = np.abs(np.array(y.astype(mx.float32)).astype(np.float64) - ref)
        assert (err <= bound + out_u * np.abs(ref) + 1e-30).all(), (M, err.max())


def test_quantized_matmul_batches_vectors_and_half():
    w = rand(3, 64, 128)
    wq, s, b = mx.quantize(mx.array(w), group_size=64, bits=4)
    W = np.array(mx.dequantize(wq, s, b, group_size=64)).astype(np.float64)
    x = rand(2, 1, 5, 128)
    y = mx.quantized_matmul(mx.array(x), wq, s, b)
    assert y.shape == (2, 3, 5, 64)
    np.testing.assert_allclose(np.array(y), x @ np.swapaxes(W, -1, -2),
                               rtol=1e-4, atol=1e-3)
    v = rand(128)  # a vector
    y = mx.quantized_matmul(mx.array(v), wq[0], s[0], b[0])
    assert y.shape == (64,)
    np.testing.assert_allclose(np.array(y), W[0] @ v, rtol=1e-4, atol=1e-3)
    xh = mx.array(rand(2, 128)).astype(mx.float16)
    sh, bh = s[0].astype(mx.float16), b[0].astype(mx.float16)
    y = mx.quantized_matmul(xh, wq[0], sh, bh)
    assert y.dtype == mx.float16
    Wh = np.array(mx.dequantize(wq[0], sh, bh).astype(mx.float32))
    np.testing.assert_allclose(np.array(y.astype(mx.float32)),
                               np.array(xh.astype(mx.float32)) @ Wh.T,
                               rtol=1e-2, atol=5e-2)


def test_gather_qmm():
    w = rand(4, 32, 64)
    wq, s, b = mx.quantize(mx.array(w))
    W = np.array(mx.dequantize(wq, s, b)).astype(np.float64)
    x = rand(2, 1, 3, 64)
    y = mx.gather_qmm(mx.array(x), wq, s, b, rhs_indices=mx.array([1, 3]))
    assert y.shape == (2, 2, 3, 32)
    xf = x.reshape(2, 3, 64)
    ref = np.stack([np.stack([xf[i] @ W[j].T for j in (1, 3)]) for i in range(2)])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-3)
    y = mx.gather_qmm(mx.array(xf), wq, s, b, lhs_indices=mx.array([1, 0, 1]),
                      rhs_indices=mx.array([0, 2, 3]))
    ref = np.stack([xf[i] @ W[j].T for i, j in ((1, 0), (0, 2), (1, 3))])
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-4, atol=1e-3)


def test_quantized_grads():
    w, x = rand(32, 64), rand(3, 64)
    wq, s, b = mx.quantize(mx.array(w), group_size=32)
    W = mx.dequantize(wq, s, b, group_size=32)
    cot = mx.array(rand(3, 32))
    f = lambda x, s, b: mx.quantized_matmul(x, wq, s, b, group_size=32)
    g = lambda x, s, b: x @ mx.dequantize(wq, s, b, group_size=32).T
    _, g1 = mx.vjp(f, [mx.array(x), s, b], [cot])
    _, g2 = mx.vjp(g, [mx.array(x), s, b], [cot])
    np.testing.assert_allclose(np.array(g1[0]), np.array(cot) @ np.array(W),
                               rtol=1e-4, atol=1e-4)
    for a, c in zip(g1, g2):
        np.testing.assert_allclose(np.array(a), np.array(c), rtol=1e-4,
                                   atol=1e-4)
    # dequantize's vjp in scales and biases: sums of cot * q and of cot
    q, _, _ = quant_ref(w, 32, 4)
    c = rand(32, 64)
    _, (gs, gb) = mx.vjp(lambda s, b: mx.dequantize(wq, s, b, group_size=32),
                         [s, b], [mx.array(c)])
    np.testing.assert_allclose(np.array(gs), (c * q).reshape(32, 2, 32).sum(-1),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.array(gb), c.reshape(32, 2, 32).sum(-1),
                               rtol=1e-4, atol=1e-4)
    t = mx.jvp(lambda s, b: mx.dequantize(wq, s, b, group_size=32), [s, b],
               [mx.ones_like(s), mx.zeros_like(b)])[1][0]
    np.testing.assert_allclose(np.array(t), q, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[quantize\]"):
        mx.grad(lambda w: mx.quantize(w)[1].sum())(mx.array(w))


def test_quantized_vmap():
    w = rand(3, 16, 64)
    f = mx.vmap(lambda w: mx.quantize(w, group_size=32, bits=4))
    got = f(mx.array(w))
    for i in range(3):
        want = mx.quantize(mx.array(w[i]), group_size=32, bits=4)
        for a, c in zip(got, want):
            np.testing.assert_array_equal(np.array(a[i]), np.array(c))
    wq, s, b = got
    d = mx.vmap(lambda a, c, e: mx.dequantize(a, c, e, group_size=32))(wq, s, b)
    np.testing.assert_allclose(np.array(d), np.array(
        mx.dequantize(wq, s, b, group_size=32)), atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match=r"divisible by the quantization group size 64"):
        mx.quantize(mx.ones((4, 100)))
    with pytest.raises(ValueError, match=r"at least 2 dimension"):
        mx.quantize(mx.ones((128,)))
    with pytest.raises(ValueError, match=r"bits 7 is not supported"):
        mx.quantize(mx.ones((4, 128)), bits=7)
    with pytest.raises(ValueError, match=r"group size 16 is not supported"):
        mx.quantize(mx.ones((4, 128)), group_size=16)
    with pytest.raises(ValueError, match=r"Only real floating types"):
        mx.quantize(mx.ones((4, 128), dtype=mx.int32))
    with pytest.raises(ValueError, match=r"Invalid quantization mode 'int4'"):
        mx.quantize(mx.ones((4, 128)), mode="int4")
    wq, s, b = mx.quantize(mx.ones((16, 256)))
    with pytest.raises(ValueError, match=r"\[dequantize\] Shape of scales and biases"):
        mx.dequantize(wq, s, b, bits=3)
    with pytest.raises(ValueError, match=r"\[quantized_matmul\] Last dimension"):
        mx.quantized_matmul(mx.ones((3, 100)), wq, s, b)
    with pytest.raises(ValueError, match=r"Biases must be provided"):
        mx.quantized_matmul(mx.ones((3, 256)), wq, s, None)


def test_nn_quantized_layers():
    import cmx.nn as nn

    lin = nn.Linear(128, 32)
    q = nn.QuantizedLinear.from_linear(lin, group_size=32, bits=8)
    x = mx.array(rand(5, 128))
    W = mx.dequantize(q.weight, q.scales, q.biases, group_size=32, bits=8)
    np.testing.assert_allclose(np.array(q(x)), np.array(x @ W.T + lin.bias),
                               rtol=1e-4, atol=1e-4)
    # 8 bits: close to the float layer
    np.testing.assert_allclose(np.array(q(x)), np.array(lin(x)), atol=0.05)
    emb = nn.Embedding(50, 64)
    qe = nn.QuantizedEmbedding.from_embedding(emb, group_size=64, bits=4)
    idx = mx.array([[3, 7], [49, 0]])
    table = mx.dequantize(qe.weight, qe.scales, qe.biases, group_size=64, bits=4)
    np.testing.assert_allclose(np.array(qe(idx)), np.array(table)[np.array(idx)],
                               atol=1e-6)
    model = nn.Sequential(nn.Embedding(50, 64), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 10))
    nn.quantize(model, group_size=32, bits=4)
    kinds = [type(m).__name__ for m in model.layers]
    assert kinds == ["QuantizedEmbedding", "QuantizedLinear", "ReLU",
                     "QuantizedLinear"]
    assert model(mx.array([1, 2, 3])).shape == (3, 10)


def test_gguf_quantized_tensors_feed_quantized_matmul(tmp_path):
    gguf = pytest.importorskip("gguf")
    from gguf import quants

    T = gguf.GGMLQuantizationType
    path = tmp_path / "q.gguf"
    w = gguf.GGUFWriter(str(path), arch="cmxtest")
    src = {}
    for qt, name in [(T.Q4_0, "a.weight"), (T.Q4_1, "b.weight"),
                     (T.Q8_0, "c.weight")]:
        raw = quants.quantize(rand(8, 64), qt)
        w.add_tensor(name, raw, raw_dtype=qt)
        src[name] = (qt, quants.dequantize(raw, qt))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    arrays = mx.load(str(path))
    x = rand(3, 64)
    for name, (qt, ref) in src.items():
        p = name[:-len(".weight")]
        bits = 8 if qt == T.Q8_0 else 4
        d = mx.dequantize(arrays[name], arrays[p + ".scales"],
                          arrays[p + ".biases"], group_size=32, bits=bits)
        # float16 out: q * scale is rounded to float16 before the bias is
        # added (as MLX), and Q4_0/Q8_0's bias -8d / -128d is a float16:
        # half an ulp of |q * d| <= 8 and of the bias, against gguf's
        # float32 values (a wrong conversion is off by a step d >= 0.05)
        np.testing.assert_allclose(np.array(d.astype(mx.float32)), ref,
                                   rtol=1e-3, atol=5e-3)
        y = mx.quantized_matmul(mx.array(x), arrays[name], arrays[p + ".scales"],
                                arrays[p + ".biases"], group_size=32, bits=bits)
        np.testing.assert_allclose(np.array(y.astype(mx.float32)), x @ ref.T,
                                   rtol=2e-2, atol=2e-2)
