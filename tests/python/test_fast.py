"""mx.fast: rms_norm, layer_norm, rope and scaled_dot_product_attention.

Each fused op is checked against a NumPy reference of its definition
(float64), against the same computation written with plain cmx ops (the
"composite"), with gradients (vjp), tangents (jvp) and vmap compared to
those of the composite, and against real MLX where it is installed. These
run on the CPU; test_fast_gpu.py runs the norms, rope, attention and
quantization on every device against the CPU."""
import math

import numpy as np
import pytest

import cmx.core as mx

try:
    import mlx.core as mlx
except ImportError:  # pragma: no cover - MLX is optional
    mlx = None

RNG = np.random.default_rng(15)


@pytest.fixture(autouse=True)
def _cpu():
    with mx.stream(mx.cpu):
        yield


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def close(a, b, rtol=1e-5, atol=1e-5):
    if isinstance(a, mx.array):
        a = np.array(a if a.dtype == mx.float64 else a.astype(mx.float32))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------- references


def rms_ref(x, w, eps):
    x = x.astype(np.float64)
    y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
    return y if w is None else y * w


def ln_ref(x, w, b, eps):
    x = x.astype(np.float64)
    m = x.mean(-1, keepdims=True)
    y = (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def rope_ref(x, dims, traditional, base, scale, offset, freqs=None):
    x = x.astype(np.float64)
    L, h = x.shape[-2], dims // 2
    inv = (1.0 / np.asarray(freqs, np.float64) if freqs is not None
           else base ** (-np.arange(h) * 2.0 / dims))
    off = np.asarray(offset)
    if off.ndim == 1:
        pos = off.reshape((-1,) + (1,) * (x.ndim - 2)) + np.arange(L)[:, None][..., 0]
        pos = pos[..., None]
    else:
        pos = (off + np.arange(L))[:, None]
    th = pos * scale * inv
    c, s = np.cos(th), np.sin(th)
    out = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = a * c - b * s
        out[..., 1:dims:2] = a * s + b * c
    else:
        a, b = x[..., :h], x[..., h:dims]
        out[..., :h] = a * c - b * s
        out[..., h:dims] = a * s + b * c
    return out


def sdpa_ref(q, k, v, scale, mask=None, sinks=None):
    q, k, v = (t.astype(np.float64) for t in (q, k, v))
    B, H, L, D = q.shape
    Hk, S = k.shape[1], k.shape[2]
    k = np.repeat(k, H // Hk, axis=1)
    v = np.repeat(v, H // Hk, axis=1)
    s = scale * q @ np.swapaxes(k, -1, -2)
    low = -np.finfo(np.float32).max
    if isinstance(mask, str):
        keep = np.arange(L)[:, None] + S - L >= np.arange(S)[None]
        s = np.where(keep, s, low)
    elif mask is not None and mask.dtype == np.bool_:
        s = np.where(mask, s, low)
    elif mask is not None:
        s = s + mask
    if sinks is not None:
        sk = np.broadcast_to(sinks.reshape(1, H, 1, 1), (B, H, L, 1))
        s = np.concatenate([sk, s], -1)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., 1:]
    return p @ v


# ---------------------------------------------------------- composites
# The same computations with plain cmx ops: the reference for gradients.


def rms_comp(x, w, eps):
    y = x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def ln_comp(x, w, b, eps):
    m = mx.mean(x, axis=-1, keepdims=True)
    d = x - m
    y = d * mx.rsqrt(mx.mean(d * d, axis=-1, keepdims=True) + eps)
    if w is not None:
        y = y * w
    return y if b is None else y + b


def sdpa_comp(q, k, v, scale, mask=None):
    rep = q.shape[1] // k.shape[1]
    k = mx.repeat(k, rep, axis=1)
    v = mx.repeat(v, rep, axis=1)
    s = (q * scale) @ mx.swapaxes(k, -1, -2)
    if isinstance(mask, str):
        L, S = q.shape[2], k.shape[2]
        keep = mx.arange(L)[:, None] + (S - L) >= mx.arange(S)[None]
        s = mx.where(keep, s, -3.4028234663852886e38)
    elif mask is not None and mask.dtype == mx.bool_:
        s = mx.where(mask, s, -3.4028234663852886e38)
    elif mask is not None:
        s = s + mask
    return mx.softmax(s, axis=-1, precise=True) @ v


def check_grads(fused, comp, args, rtol=1e-4, atol=1e-4):
    """vjp and jvp of fused equal the composite's for every argument."""
    arrs = [mx.array(a) for a in args]
    cot = mx.array(rand(*fused(*arrs).shape))
    _, g1 = mx.vjp(fused, arrs, [cot])
    _, g2 = mx.vjp(comp, arrs, [cot])
    for a, b in zip(g1, g2):
        close(a, np.array(b), rtol, atol)
    tans = [mx.array(rand(*a.shape)) for a in arrs]
    _, t1 = mx.jvp(fused, arrs, tans)
    _, t2 = mx.jvp(comp, arrs, tans)
    close(t1[0], np.array(t2[0]), rtol, atol)


# ---------------------------------------------------------- rms / layer norm


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 64), (4, 1000)])
@pytest.mark.parametrize("weight", [True, False])
def test_rms_norm_values(shape, weight):
    x = rand(*shape)
    w = rand(shape[-1]) if weight else None
    y = mx.fast.rms_norm(mx.array(x), mx.array(w) if weight else None, 1e-5)
    assert y.dtype == mx.float32 and y.shape == shape
    close(y, rms_ref(x, w, 1e-5))


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 64), (4, 1000)])
@pytest.mark.parametrize("wb", [(True, True), (True, False), (False, True),
                                (False, False)])
def test_layer_norm_values(shape, wb):
    x = rand(*shape) + 3.0
    w = rand(shape[-1]) if wb[0] else None
    b = rand(shape[-1]) if wb[1] else None
    y = mx.fast.layer_norm(mx.array(x), None if w is None else mx.array(w),
                           None if b is None else mx.array(b), 1e-5)
    close(y, ln_ref(x, w, b, 1e-5), 1e-4, 1e-4)


@pytest.mark.parametrize("dt,tol", [(mx.float16, 5e-3), (mx.bfloat16, 3e-2),
                                    (mx.float64, 1e-12)])
def test_norms_half_and_double(dt, tol):
    x = rand(3, 48)
    w, b = rand(48), rand(48)
    xa = mx.array(x).astype(dt)
    xr = np.array(xa.astype(mx.float64))
    wa, ba = mx.array(w).astype(dt), mx.array(b).astype(dt)
    wr, br = np.array(wa.astype(mx.float64)), np.array(ba.astype(mx.float64))
    y = mx.fast.rms_norm(xa, wa, 1e-6)
    assert y.dtype == dt
    close(y.astype(mx.float64), rms_ref(xr, wr, 1e-6), tol, tol)
    y = mx.fast.layer_norm(xa, wa, ba, 1e-6)
    assert y.dtype == dt
    close(y.astype(mx.float64), ln_ref(xr, wr, br, 1e-6), tol, 4 * tol)


def test_norm_strided_input_and_promotion():
    x = rand(64, 6)
    y = mx.fast.rms_norm(mx.array(x).T, None, 1e-5)  # rows with stride 6
    close(y, rms_ref(x.T, None, 1e-5))
    y = mx.fast.rms_norm(mx.array(x).astype(mx.float16),
                         mx.ones((6,), dtype=mx.float32), 1e-5)
    assert y.dtype == mx.float32


def test_norm_grads():
    x, w, b = rand(3, 16), rand(16), rand(16)
    check_grads(lambda x, w: mx.fast.rms_norm(x, w, 1e-5),
                lambda x, w: rms_comp(x, w, 1e-5), [x, w])
    check_grads(lambda x: mx.fast.rms_norm(x, None, 1e-5),
                lambda x: rms_comp(x, None, 1e-5), [x])
    check_grads(lambda x, w, b: mx.fast.layer_norm(x, w, b, 1e-5),
                lambda x, w, b: ln_comp(x, w, b, 1e-5), [x, w, b])
    check_grads(lambda x: mx.fast.layer_norm(x, None, None, 1e-5),
                lambda x: ln_comp(x, None, None, 1e-5), [x])


def test_norm_vmap():
    x, w = rand(4, 3, 16), rand(4, 16)
    f = mx.vmap(lambda x, w: mx.fast.rms_norm(x, w, 1e-5), in_axes=(0, 0))
    ref = np.stack([rms_ref(x[i], w[i], 1e-5) for i in range(4)])
    close(f(mx.array(x), mx.array(w)), ref)
    g = mx.vmap(lambda x: mx.fast.layer_norm(x, None, None, 1e-5), in_axes=1)
    close(g(mx.array(x)), np.swapaxes(ln_ref(x, None, None, 1e-5), 0, 1),
          1e-4, 1e-4)


def test_norm_errors():
    with pytest.raises(ValueError, match=r"\[rms_norm\].*at least 1 dimension"):
        mx.fast.rms_norm(mx.array(1.0), None, 1e-5)
    with pytest.raises(ValueError, match=r"\[rms_norm\].*has 4 elements"):
        mx.fast.rms_norm(mx.ones((2, 8)), mx.ones((4,)), 1e-5)
    with pytest.raises(ValueError, match=r"\[rms_norm\] Received unsupported type int32"):
        mx.fast.rms_norm(mx.ones((2, 8), dtype=mx.int32), None, 1e-5)
    with pytest.raises(ValueError, match=r"\[layer_norm\] bias must have"):
        mx.fast.layer_norm(mx.ones((2, 8)), None, mx.ones((4,)), 1e-5)


# ---------------------------------------------------------- rope


@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("dims,D", [(8, 8), (4, 8), (64, 64), (32, 80)])
@pytest.mark.parametrize("offset", [0, 5])
def test_rope_values(traditional, dims, D, offset):
    x = rand(2, 3, 7, D)
    y = mx.fast.rope(mx.array(x), dims, traditional=traditional, base=10000.0,
                     scale=0.5, offset=offset)
    close(y, rope_ref(x, dims, traditional, 10000.0, 0.5, offset), 1e-4, 1e-4)


def test_rope_freqs_and_array_offsets():
    x = rand(3, 2, 5, 16)
    freqs = np.abs(rand(8)) + 0.5
    y = mx.fast.rope(mx.array(x), 16, traditional=False, base=None, scale=1.0,
                     offset=2, freqs=mx.array(freqs))
    close(y, rope_ref(x, 16, False, None, 1.0, 2, freqs), 1e-4, 1e-4)
    y = mx.fast.rope(mx.array(x), 16, traditional=False, base=10000.0,
                     scale=1.0, offset=mx.array(4))
    close(y, rope_ref(x, 16, False, 10000.0, 1.0, 4), 1e-4, 1e-4)
    offs = np.array([0, 3, 11], np.int32)  # one per batch entry
    y = mx.fast.rope(mx.array(x), 16, traditional=True, base=10000.0,
                     scale=1.0, offset=mx.array(offs))
    close(y, rope_ref(x, 16, True, 10000.0, 1.0, offs), 1e-4, 1e-4)


@pytest.mark.parametrize("dt,tol", [(mx.float16, 5e-3), (mx.bfloat16, 3e-2)])
def test_rope_half(dt, tol):
    xa = mx.array(rand(1, 4, 9, 32)).astype(dt)
    xr = np.array(xa.astype(mx.float32))
    y = mx.fast.rope(xa, 32, traditional=False, base=10000.0, scale=1.0,
                     offset=3)
    assert y.dtype == dt
    close(y, rope_ref(xr, 32, False, 10000.0, 1.0, 3), tol, tol)


def test_rope_grads_vmap():
    x = rand(2, 5, 16)
    f = lambda x: mx.fast.rope(x, 12, traditional=False, base=100.0,
                               scale=1.0, offset=1)
    # rope is linear in x: its vjp is the rotation's transpose
    cot = rand(2, 5, 16)
    _, (g,) = mx.vjp(f, [mx.array(x)], [mx.array(cot)])
    eps = 1e-3
    for idx in [(0, 0, 0), (1, 4, 7), (0, 2, 13)]:
        d = np.zeros_like(x)
        d[idx] = eps
        fd = (np.array(f(mx.array(x + d))) - np.array(f(mx.array(x - d)))) / (2 * eps)
        close(np.array(g)[idx], (fd * cot).sum(), 1e-2, 1e-2)
    _, (t,) = mx.jvp(f, [mx.array(x)], [mx.array(cot)])
    close(t, np.array(f(mx.array(cot))), 1e-5, 1e-5)
    xb = rand(3, 2, 5, 16)
    v = mx.vmap(f)(mx.array(xb))
    close(v, np.stack([rope_ref(xb[i], 12, False, 100.0, 1.0, 1) for i in range(3)]),
          1e-4, 1e-4)


def test_rope_errors():
    kw = dict(traditional=False, base=10000.0, scale=1.0, offset=0)
    with pytest.raises(ValueError, match=r"\[rope\].*at least 3 dimensions"):
        mx.fast.rope(mx.ones((4, 8)), 8, **kw)
    with pytest.raises(ValueError, match=r"\[rope\] dims must be even"):
        mx.fast.rope(mx.ones((2, 4, 8)), 7, **kw)
    with pytest.raises(ValueError, match=r"\[rope\] dims must not exceed"):
        mx.fast.rope(mx.ones((2, 4, 8)), 10, **kw)
    with pytest.raises(ValueError, match=r"\[rope\] Neither base nor freqs"):
        mx.fast.rope(mx.ones((2, 4, 8)), 8, traditional=False, base=None,
                     scale=1.0, offset=0)
    with pytest.raises(ValueError, match=r"\[rope\] offset must be a scalar"):
        mx.fast.rope(mx.ones((2, 4, 8)), 8, traditional=False, base=1.0,
                     scale=1.0, offset=mx.array([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\[rope\] offset must be an integer"):
        mx.fast.rope(mx.ones((2, 4, 8)), 8, traditional=False, base=1.0,
                     scale=1.0, offset=mx.array(1.5))


# ---------------------------------------------------------- attention

MASKS = ["none", "causal", "bool", "additive"]


def make_mask(kind, B, H, L, S, shape=None):
    shape = shape or (B, H, L, S)
    if kind == "bool":
        m = RNG.random(shape) > 0.3
        return m, mx.array(m)
    if kind == "additive":
        m = rand(*shape)
        return m, mx.array(m)
    if kind == "causal":
        return "causal", "causal"
    return None, None


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("H,Hk", [(4, 4), (4, 2), (8, 1)])
@pytest.mark.parametrize("L,S", [(1, 1), (1, 37), (5, 5), (7, 13), (9, 4)])
def test_sdpa_values(mask, H, Hk, L, S):
    B, D = 2, 16
    q, k, v = rand(B, H, L, D), rand(B, Hk, S, D), rand(B, Hk, S, D)
    mr, ma = make_mask(mask, B, H, L, S)
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), mx.array(k), mx.array(v), scale=1 / math.sqrt(D), mask=ma)
    assert y.shape == (B, H, L, D)
    close(y, sdpa_ref(q, k, v, 1 / math.sqrt(D), mr), 1e-4, 1e-4)


def test_sdpa_broadcast_masks_value_dim_and_sinks():
    B, H, Hk, L, S, D, Dv = 2, 4, 2, 3, 6, 8, 5
    q, k, v = rand(B, H, L, D), rand(B, Hk, S, D), rand(B, Hk, S, Dv)
    m = RNG.random((L, S)) > 0.5  # broadcast over batch and heads
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), mx.array(k), mx.array(v), scale=0.3, mask=mx.array(m))
    assert y.shape == (B, H, L, Dv)
    close(y, sdpa_ref(q, k, v, 0.3, m), 1e-4, 1e-4)
    sinks = rand(H)
    for mask in [None, "causal"]:
        y = mx.fast.scaled_dot_product_attention(
            mx.array(q), mx.array(k), mx.array(v), scale=0.3, mask=mask,
            sinks=mx.array(sinks))
        close(y, sdpa_ref(q, k, v, 0.3, mask, sinks), 1e-4, 1e-4)


def test_sdpa_fully_masked_rows():
    # a row with every key masked averages v (MLX's lowest-float fill)
    q, k, v = rand(1, 1, 2, 4), rand(1, 1, 5, 4), rand(1, 1, 5, 4)
    m = np.array([[True] * 5, [False] * 5])
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), mx.array(k), mx.array(v), scale=0.5, mask=mx.array(m))
    close(y, sdpa_ref(q, k, v, 0.5, m), 1e-5, 1e-5)
    close(np.array(y)[0, 0, 1], v[0, 0].mean(0), 1e-5, 1e-5)
    # causal with more queries than keys: the first rows see no key
    q = rand(1, 2, 6, 4)
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), mx.array(k[:, :, :3]), mx.array(v[:, :, :3]), scale=0.5,
        mask="causal")
    close(y, sdpa_ref(q, k[:, :, :3], v[:, :, :3], 0.5, "causal"), 1e-5, 1e-5)


@pytest.mark.parametrize("D", [64, 128])
def test_sdpa_decode_over_interleaved_cache(D):
    """One query position (decoding) against a cache holding each
    position's key and value side by side (float32 views of row stride
    2 * D, read in place), groups of 3 query heads a kv head, a bool mask
    per head (head 1 sees no key: a uniform average)."""
    B, H, Hk, S = 2, 6, 2, 41
    q, kv = rand(B, H, 1, D), rand(B, Hk, S, 2 * D)
    m = RNG.random((B, H, 1, S)) > 0.4
    m[:, 1] = False
    kva = mx.array(kv)
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), kva[..., :D], kva[..., D:], scale=D ** -0.5, mask=mx.array(m))
    close(y, sdpa_ref(q, kv[..., :D], kv[..., D:], D ** -0.5, m), 1e-5, 1e-5)
    close(np.array(y)[:, 1, 0], kv[:, 0, :, D:].mean(1), 1e-5, 1e-5)
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), kva[..., :D], kva[..., D:], scale=0.1)
    close(y, sdpa_ref(q, kv[..., :D], kv[..., D:], 0.1, None), 1e-5, 1e-5)


@pytest.mark.parametrize("dt,tol", [(mx.float16, 5e-3), (mx.bfloat16, 3e-2)])
def test_sdpa_half_and_strided_kv(dt, tol):
    B, H, L, S, D = 1, 4, 3, 20, 32
    q, k, v = rand(B, H, L, D), rand(B, H, S + 4, D), rand(B, H, S + 4, D)
    qa = mx.array(q).astype(dt)
    ka = mx.array(k).astype(dt)[:, :, 2:S + 2]  # a view into a larger cache
    va = mx.array(v).astype(dt)[:, :, 2:S + 2]
    f = lambda t: np.array(t.astype(mx.float32))
    y = mx.fast.scaled_dot_product_attention(qa, ka, va, scale=0.2,
                                             mask="causal")
    assert y.dtype == dt
    close(y, sdpa_ref(f(qa), f(ka), f(va), 0.2, "causal"), tol, tol)
    # float32 keys read in place through a strided view
    y = mx.fast.scaled_dot_product_attention(
        mx.array(q), mx.array(k)[:, :, 2:S + 2], mx.array(v)[:, :, 2:S + 2],
        scale=0.2)
    close(y, sdpa_ref(q, k[:, :, 2:S + 2], v[:, :, 2:S + 2], 0.2), 1e-4, 1e-4)


@pytest.mark.parametrize("mask", MASKS)
def test_sdpa_grads(mask):
    B, H, Hk, L, S, D = 1, 4, 2, 3, 5, 8
    q, k, v = rand(B, H, L, D), rand(B, Hk, S, D), rand(B, Hk, S, D)
    mr, ma = make_mask(mask, B, H, L, S)
    check_grads(
        lambda q, k, v: mx.fast.scaled_dot_product_attention(q, k, v, scale=0.4,
                                                             mask=ma),
        lambda q, k, v: sdpa_comp(q, k, v, 0.4, ma), [q, k, v])


def test_sdpa_vmap():
    B, H, L, S, D = 1, 2, 3, 4, 8
    q, k, v = rand(3, B, H, L, D), rand(B, H, S, D), rand(3, B, H, S, D)
    f = mx.vmap(lambda q, k, v: mx.fast.scaled_dot_product_attention(
        q, k, v, scale=0.5, mask="causal"), in_axes=(0, None, 0))
    ref = np.stack([sdpa_ref(q[i], k, v[i], 0.5, "causal") for i in range(3)])
    close(f(mx.array(q), mx.array(k), mx.array(v)), ref, 1e-4, 1e-4)


def test_sdpa_errors():
    sd = mx.fast.scaled_dot_product_attention
    q, k, v = mx.ones((1, 4, 3, 8)), mx.ones((1, 2, 5, 8)), mx.ones((1, 2, 5, 6))
    with pytest.raises(ValueError, match=r"invalid mask option 'foo'"):
        sd(q, k, v, scale=1.0, mask="foo")
    with pytest.raises(ValueError, match=r"n_heads must be a multiple of n_kv_heads"):
        sd(q, mx.ones((1, 3, 5, 8)), mx.ones((1, 3, 5, 8)), scale=1.0)
    with pytest.raises(ValueError, match=r"expected to be rank 4"):
        sd(q[0], k[0], v[0], scale=1.0)
    with pytest.raises(ValueError, match=r"Received invalid shape for sinks"):
        sd(q, k, v, scale=1.0, sinks=mx.ones((2,)))
    with pytest.raises(ValueError, match=r"Mask type must promote to output type float16"):
        h = lambda t: t.astype(mx.float16)
        sd(h(q), h(k), h(v), scale=1.0, mask=mx.ones((3, 5)))
    with pytest.raises(ValueError):
        sd(q, k, v, scale=1.0, mask=mx.ones((3, 4), dtype=mx.bool_))


def test_sdpa_runs_on_gpu():
    """The fused GPU kernel gives the CPU kernel's result."""
    if not mx.is_available(mx.gpu):
        pytest.skip("no GPU on this machine")
    q = mx.array(rand(1, 2, 3, 8))
    want = mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="causal")
    got = mx.fast.scaled_dot_product_attention(q, q, q, scale=1.0, mask="causal",
                                               stream=mx.gpu)
    close(got, np.array(want), 1e-5, 1e-5)


# ---------------------------------------------------------- against MLX


@pytest.mark.skipif(mlx is None, reason="MLX is not installed")
def test_against_mlx():
    x = rand(2, 3, 6, 32)
    w, b = rand(32), rand(32)
    close(mx.fast.rms_norm(mx.array(x), mx.array(w), 1e-5),
          np.array(mlx.fast.rms_norm(mlx.array(x), mlx.array(w), 1e-5)))
    close(mx.fast.layer_norm(mx.array(x), mx.array(w), mx.array(b), 1e-5),
          np.array(mlx.fast.layer_norm(mlx.array(x), mlx.array(w),
                                       mlx.array(b), 1e-5)), 1e-4, 1e-4)
    for trad in (False, True):
        kw = dict(traditional=trad, base=10000.0, scale=0.7, offset=3)
        close(mx.fast.rope(mx.array(x), 16, **kw),
              np.array(mlx.fast.rope(mlx.array(x), 16, **kw)), 1e-4, 1e-4)
    offs = np.array([2, 9], np.int32)
    kw = dict(traditional=False, base=10000.0, scale=1.0)
    close(mx.fast.rope(mx.array(x), 32, offset=mx.array(offs), **kw),
          np.array(mlx.fast.rope(mlx.array(x), 32, offset=mlx.array(offs), **kw)),
          1e-4, 1e-4)
    freqs = np.abs(rand(16)) + 1
    kw = dict(traditional=False, base=None, scale=1.0, offset=1)
    close(mx.fast.rope(mx.array(x), 32, freqs=mx.array(freqs), **kw),
          np.array(mlx.fast.rope(mlx.array(x), 32, freqs=mlx.array(freqs), **kw)),
          1e-4, 1e-4)
    q, k, v = rand(2, 4, 5, 16), rand(2, 2, 9, 16), rand(2, 2, 9, 16)
    sinks = rand(4)
    for mask in [None, "causal"]:
        for sk in [None, sinks]:
            got = mx.fast.scaled_dot_product_attention(
                mx.array(q), mx.array(k), mx.array(v), scale=0.25, mask=mask,
                sinks=None if sk is None else mx.array(sk))
            want = mlx.fast.scaled_dot_product_attention(
                mlx.array(q), mlx.array(k), mlx.array(v), scale=0.25,
                mask=mask, sinks=None if sk is None else mlx.array(sk))
            close(got, np.array(want), 1e-4, 1e-4)


def test_declared_in_core_pyi():
    """The implemented fast functions are declared (python/cmx/core.pyi)
    and documented; the others are still pending stubs."""
    import ast
    import os

    import cmx
    from cmx import _compat

    stub = open(os.path.join(os.path.dirname(cmx.__file__), "core.pyi")).read()
    cls = next(n for n in ast.parse(stub).body
               if isinstance(n, ast.ClassDef) and n.name == "_FastModule")
    declared = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    done = {n for n in dir(mx.fast) if not n.startswith("_")
            and _compat.implemented(mx.fast, n)}
    assert done == declared
    for name in done:
        assert getattr(mx.fast, name).__doc__
