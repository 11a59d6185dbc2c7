"""Every cmx.nn layer's forward pass against a numpy reference written
here from the layer's definition (channels-last layouts as MLX)."""

import math

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn
from cmx.utils import tree_flatten, tree_unflatten

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def set_params(module, seed=0):
    """Gives every parameter random values; returns them as numpy arrays by
    dotted name."""
    r = np.random.default_rng(seed)
    vals = {k: (r.standard_normal(v.shape) * 0.5).astype(np.float32)
            for k, v in tree_flatten(module.parameters())}
    module.update(tree_unflatten([(k, mx.array(v)) for k, v in vals.items()]))
    return vals


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.array(a), b, rtol=tol, atol=tol)


# ------------------------------------------------------------ references


def np_linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def np_conv(x, w, stride, pad, dil, groups=1):
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0)] + [(p, p) for p in pad] + [(0, 0)])
    O, K, Cg = w.shape[0], w.shape[1:-1], w.shape[-1]
    out = [(x.shape[1 + d] - dil[d] * (K[d] - 1) - 1) // stride[d] + 1 for d in range(nd)]
    y = np.zeros((x.shape[0], *out, O), np.float64)
    Og = O // groups
    for k in np.ndindex(*K):
        sl = tuple(slice(k[d] * dil[d], k[d] * dil[d] + stride[d] * (out[d] - 1) + 1, stride[d])
                   for d in range(nd))
        patch = x[(slice(None),) + sl]
        for g in range(groups):
            wk = w[(slice(g * Og, (g + 1) * Og),) + k]  # (Og, Cg)
            y[..., g * Og:(g + 1) * Og] += patch[..., g * Cg:(g + 1) * Cg] @ wk.T
    return y


def np_conv_transpose(x, w, stride, pad, dil, outpad):
    nd = x.ndim - 2
    K = w.shape[1:-1]
    full = [(x.shape[1 + d] - 1) * stride[d] + dil[d] * (K[d] - 1) + 1 for d in range(nd)]
    y = np.zeros((x.shape[0], *[f + o for f, o in zip(full, outpad)], w.shape[0]))
    for k in np.ndindex(*K):
        sl = tuple(slice(k[d] * dil[d], k[d] * dil[d] + stride[d] * (x.shape[1 + d] - 1) + 1,
                         stride[d]) for d in range(nd))
        y[(slice(None),) + sl] += x @ w[(slice(None),) + k].T
    size = [full[d] - 2 * pad[d] + outpad[d] for d in range(nd)]
    return y[(slice(None),) + tuple(slice(pad[d], pad[d] + size[d]) for d in range(nd))]


def np_pool(x, k, s, p, op):
    nd = x.ndim - 2
    fill = -np.inf if op == "max" else 0.0
    x = np.pad(x, [(0, 0)] + [(q, q) for q in p] + [(0, 0)], constant_values=fill)
    out = [(x.shape[1 + d] - k[d]) // s[d] + 1 for d in range(nd)]
    y = np.empty((x.shape[0], *out, x.shape[-1]), np.float32)
    for o in np.ndindex(*out):
        win = x[(slice(None),) + tuple(slice(o[d] * s[d], o[d] * s[d] + k[d]) for d in range(nd))]
        red = win.reshape(x.shape[0], -1, x.shape[-1])
        y[(slice(None),) + o] = red.max(1) if op == "max" else red.mean(1)
    return y


def np_standardize(x, axes, eps=1e-5):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def np_mha(q, k, v, p, mask=None, heads=2):
    def proj(x, name):
        return np_linear(x, p[f"{name}.weight"], p.get(f"{name}.bias"))

    Q, K, V = proj(q, "query_proj"), proj(k, "key_proj"), proj(v, "value_proj")
    B, L, D = Q.shape
    S = K.shape[1]
    Q = Q.reshape(B, L, heads, -1).transpose(0, 2, 1, 3)
    K = K.reshape(B, S, heads, -1).transpose(0, 2, 1, 3)
    V = V.reshape(B, S, heads, -1).transpose(0, 2, 1, 3)
    scores = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + mask
    o = (np_softmax(scores) @ V).transpose(0, 2, 1, 3).reshape(B, L, -1)
    return proj(o, "out_proj")


def sub(params, prefix):
    return {k[len(prefix) + 1:]: v for k, v in params.items() if k.startswith(prefix + ".")}


# ----------------------------------------------------------------- tests


def test_linear_bilinear_identity_sequential():
    x = randn(2, 5, 8)
    lin = nn.Linear(8, 3)
    p = set_params(lin)
    assert lin.weight.shape == (3, 8)
    close(lin(mx.array(x)), np_linear(x, p["weight"], p["bias"]))
    nb = nn.Linear(8, 3, bias=False)
    p = set_params(nb)
    assert "bias" not in nb
    close(nb(mx.array(x)), x @ p["weight"].T)

    bl = nn.Bilinear(8, 4, 3)
    p = set_params(bl)
    x2 = randn(2, 5, 4)
    ref = np.einsum("...i,kji,...j->...k", x, p["weight"], x2) + p["bias"]
    close(bl(mx.array(x), mx.array(x2)), ref)

    assert nn.Identity(1, a=2)(mx.array(x)) is not None
    close(nn.Identity()(mx.array(x)), x)
    seq = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    p = set_params(seq)
    h = np.maximum(np_linear(x, p["layers.0.weight"], p["layers.0.bias"]), 0)
    close(seq(mx.array(x)), np_linear(h, p["layers.2.weight"], p["layers.2.bias"]))


def test_default_initialisation_ranges():
    mx.random.seed(0)
    lin = nn.Linear(100, 50)
    w = np.array(lin.weight)
    assert w.min() >= -0.1 and w.max() <= 0.1 and w.std() > 0.05
    conv = nn.Conv2d(4, 8, 3, groups=2)
    assert conv.weight.shape == (8, 3, 3, 2)
    k = math.sqrt(1 / 18)
    assert np.abs(np.array(conv.weight)).max() <= k
    assert np.array(conv.bias).tolist() == [0.0] * 8
    emb = nn.Embedding(1000, 16)
    assert abs(np.array(emb.weight).std() - 0.25) < 0.02
    with pytest.raises(ValueError, match="divisible by the number of groups"):
        nn.Conv2d(3, 4, 3, groups=2)


def test_embedding():
    e = nn.Embedding(10, 4)
    p = set_params(e)
    idx = np.array([[1, 9, 0], [3, 3, 7]], np.int32)
    close(e(mx.array(idx)), p["weight"][idx])
    x = randn(2, 4)
    close(e.as_linear(mx.array(x)), x @ p["weight"].T)


def _conv_case(cfg):
    """The input, the layer (cfg["module"]) with random parameters, its
    parameters, and a helper giving an argument as one int per axis."""
    x = randn(*cfg["x"])
    cfg["module"] = cfg["cls"](*cfg["args"], **cfg["kw"])
    p = set_params(cfg["module"])
    nd = x.ndim - 2

    def tup(name, default):
        v = cfg["kw"].get(name, default)
        return (v,) * nd if isinstance(v, int) else v

    return x, p, tup


@pytest.mark.parametrize("cfg", [
    dict(cls=nn.Conv1d, x=(2, 11, 4), args=(4, 6, 3), kw=dict(stride=2, padding=1, dilation=2)),
    dict(cls=nn.Conv1d, x=(2, 9, 4), args=(4, 6, 3), kw=dict(groups=2)),
    dict(cls=nn.Conv2d, x=(2, 9, 8, 4), args=(4, 6, (3, 2)), kw=dict(stride=(2, 1), padding=(1, 0))),
    dict(cls=nn.Conv2d, x=(1, 7, 7, 4), args=(4, 4, 3), kw=dict(dilation=2, groups=4, bias=False)),
    dict(cls=nn.Conv3d, x=(1, 5, 6, 5, 3), args=(3, 2, 2), kw=dict(stride=(1, 2, 1), padding=1)),
])
def test_convolutions(cfg):
    x, p, tup = _conv_case(cfg)
    ref = np_conv(x, p["weight"], tup("stride", 1), tup("padding", 0), tup("dilation", 1),
                  cfg["kw"].get("groups", 1))
    if "bias" in p:
        ref = ref + p["bias"]
    close(cfg["module"](mx.array(x)), ref)


@pytest.mark.parametrize("cfg", [
    dict(cls=nn.ConvTranspose1d, x=(2, 7, 4), args=(4, 3, 3),
         kw=dict(stride=2, padding=1, output_padding=1)),
    dict(cls=nn.ConvTranspose1d, x=(2, 5, 4), args=(4, 3, 2), kw=dict(dilation=2)),
    dict(cls=nn.ConvTranspose2d, x=(2, 5, 4, 4), args=(4, 3, 3), kw=dict(stride=2, padding=1)),
    dict(cls=nn.ConvTranspose3d, x=(1, 3, 4, 3, 3), args=(3, 2, 2), kw=dict(stride=2)),
])
def test_transposed_convolutions(cfg):
    x, p, tup = _conv_case(cfg)
    ref = np_conv_transpose(x, p["weight"], tup("stride", 1), tup("padding", 0),
                            tup("dilation", 1), tup("output_padding", 0)) + p["bias"]
    close(cfg["module"](mx.array(x)), ref)


@pytest.mark.parametrize("cls,x,k,s,p", [
    (nn.MaxPool1d, (2, 9, 3), (2,), (1,), (0,)),
    (nn.AvgPool1d, (2, 9, 3), (3,), (2,), (1,)),
    (nn.MaxPool2d, (2, 9, 9, 4), (3, 3), (2, 2), (1, 1)),
    (nn.MaxPool2d, (2, 8, 8, 4), (2, 2), (2, 2), (0, 0)),
    (nn.AvgPool2d, (2, 7, 8, 4), (2, 3), (2, 3), (0, 1)),
    (nn.MaxPool3d, (1, 5, 6, 5, 2), (2, 2, 2), (2, 2, 2), (0, 0, 0)),
    (nn.AvgPool3d, (1, 5, 6, 5, 2), (2, 2, 2), (1, 1, 1), (0, 1, 0)),
])
def test_pooling(cls, x, k, s, p):
    xv = randn(*x)
    op = "max" if "Max" in cls.__name__ else "avg"
    m = cls(k, s, p)
    close(m(mx.array(xv)), np_pool(xv, k, s, p, op), tol=1e-5)
    if k == s:
        close(cls(k, padding=p)(mx.array(xv)), np_pool(xv, k, s, p, op), tol=1e-5)


def test_pooling_gradient_and_errors():
    # A max window with a tie shares its gradient; windows tile here.
    x = mx.array([1.0, 1.0, 0.0, 2.0]).reshape(1, 4, 1)
    g = mx.grad(lambda x: nn.MaxPool1d(2)(x).sum())(x)
    assert g.reshape(-1).tolist() == [0.5, 0.5, 0.0, 1.0]
    g = mx.grad(lambda x: nn.AvgPool1d(2, 1)(x).sum())(x)
    assert g.reshape(-1).tolist() == [0.5, 1.0, 1.0, 0.5]
    # The tiled path's own gradient equals a max reduction's over each
    # window (ties split), here on small integers full of ties.
    from cmx.nn.layers import pooling

    xi = mx.array(RNG.integers(0, 3, (2, 6, 9, 3)).astype(np.float32))
    g = mx.array(randn(2, 3, 3, 3))

    def generic(x):
        return pooling._window_max(x, (2, 3), (2, 3))

    tiled = mx.vjp(nn.MaxPool2d((2, 3)), [xi], [g])[1][0]
    ref = mx.vjp(generic, [xi], [g])[1][0]
    close(tiled, np.array(ref), tol=1e-6)
    xn = np.array(xi).reshape(2, 3, 2, 3, 3, 3)
    win_max = xn.max(axis=(2, 4), keepdims=True)
    hits = xn == win_max
    want = hits * (np.array(g).reshape(2, 3, 1, 3, 1, 3) / hits.sum(axis=(2, 4), keepdims=True))
    close(tiled, want.reshape(2, 6, 9, 3), tol=1e-6)
    # Windows of 256 elements or more count their ties in float (a byte
    # would wrap): 16x16 windows of only two values, so most ties are
    # dozens of elements, and one window all equal (256 ties).
    xb = RNG.integers(0, 2, (1, 32, 16, 2)).astype(np.float32)
    xb[0, :16, :, 0] = 1.0
    gb = randn(1, 2, 1, 2)
    tiled = mx.vjp(nn.MaxPool2d(16), [mx.array(xb)], [mx.array(gb)])[1][0]
    xn = xb.reshape(1, 2, 16, 1, 16, 2)
    hits = xn == xn.max(axis=(2, 4), keepdims=True)
    want = hits * (gb.reshape(1, 2, 1, 1, 1, 2) / hits.sum(axis=(2, 4), keepdims=True))
    close(tiled, want.reshape(1, 32, 16, 2), tol=1e-6)
    assert float(np.array(tiled)[0, 0, 0, 0]) == pytest.approx(float(gb[0, 0, 0, 0]) / 256)
    with pytest.raises(ValueError, match="MaxPool2d"):
        nn.MaxPool2d((2, 2, 2))
    with pytest.raises(ValueError, match="4 dimensions"):
        nn.MaxPool2d(2)(mx.zeros((4, 4, 1)))
    assert repr(nn.AvgPool1d(3, 2, 1)) == "AvgPool1d(kernel_size=(3,), stride=(2,), padding=(1,))"


def test_layer_rms_norms():
    x = randn(2, 5, 8)
    ln = nn.LayerNorm(8)
    p = set_params(ln)
    close(ln(mx.array(x)), np_standardize(x, -1) * p["weight"] + p["bias"])
    ln = nn.LayerNorm(8, affine=False, eps=1e-3)
    assert ln.parameters() == {}
    close(ln(mx.array(x)), np_standardize(x, -1, 1e-3))
    ln = nn.LayerNorm(8, bias=False)
    assert list(ln.parameters()) == ["weight"]

    rms = nn.RMSNorm(8)
    p = set_params(rms)
    close(rms(mx.array(x)), x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5) * p["weight"])
    # As MLX: a float32 weight promotes; a float16 model stays float16 and
    # normalizes in float32 inside.
    assert rms(mx.array(x).astype(mx.float16)).dtype == mx.float32
    rms.set_dtype(mx.float16)
    y16 = rms(mx.array(x).astype(mx.float16))
    assert y16.dtype == mx.float16
    close(y16.astype(mx.float32), x / np.sqrt((x**2).mean(-1, keepdims=True) + 1e-5)
          * p["weight"], tol=1e-2)


def test_group_instance_norms():
    x = randn(2, 5, 6, 6)
    gn = nn.GroupNorm(3, 6)
    p = set_params(gn)
    xr = x.reshape(2, -1, 3)  # channel c in group c % 3
    ref = np_standardize(xr, 1).reshape(x.shape) * p["weight"] + p["bias"]
    close(gn(mx.array(x)), ref)
    gp = nn.GroupNorm(3, 6, pytorch_compatible=True)
    p = set_params(gp)
    xr = x.reshape(2, -1, 3, 2)  # consecutive pairs of channels
    ref = np_standardize(xr, (1, 3)).reshape(x.shape) * p["weight"] + p["bias"]
    close(gp(mx.array(x)), ref)

    inorm = nn.InstanceNorm(6)
    assert inorm.parameters() == {}
    close(inorm(mx.array(x)), np_standardize(x, (1, 2)))
    inorm = nn.InstanceNorm(6, affine=True)
    p = set_params(inorm)
    close(inorm(mx.array(x)), np_standardize(x, (1, 2)) * p["weight"] + p["bias"])


def test_batch_norm():
    x = randn(4, 3, 3, 5)
    bn = nn.BatchNorm(5, momentum=0.2)
    p = {k: v for k, v in set_params(bn).items()}
    rm, rv = p["running_mean"], np.abs(p["running_var"]) + 0.5
    bn.running_var = mx.array(rv)
    y = bn(mx.array(x))
    axes = (0, 1, 2)
    close(y, np_standardize(x, axes) * p["weight"] + p["bias"])
    close(bn.running_mean, 0.8 * rm + 0.2 * x.mean(axes))
    close(bn.running_var, 0.8 * rv + 0.2 * x.var(axes, ddof=1))
    bn.eval()
    new_rm, new_rv = np.array(bn.running_mean), np.array(bn.running_var)
    close(bn(mx.array(x)), (x - new_rm) / np.sqrt(new_rv + 1e-5) * p["weight"] + p["bias"])
    close(bn.running_mean, new_rm)  # eval mode leaves them
    bn2 = nn.BatchNorm(5, affine=False, track_running_stats=False)
    assert bn2.parameters() == {}
    bn2.eval()
    close(bn2(mx.array(x)), np_standardize(x, axes))
    with pytest.raises(ValueError, match="2, 3 or 4 dimensions"):
        bn(mx.zeros((5,)))


def test_dropout():
    mx.random.seed(0)
    x = mx.ones((200, 100))
    d = nn.Dropout(0.25)
    y = np.array(d(x))
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert np.array_equal(np.array(d(x)), np.ones((200, 100)))
    d2 = nn.Dropout2d(0.5)
    y = np.array(d2(mx.ones((8, 5, 5, 16))))
    # Whole channels: every spatial position of a (sample, channel) agrees.
    assert np.all(y.min(axis=(1, 2)) == y.max(axis=(1, 2)))
    assert 0 < (y[:, 0, 0, :] == 0).mean() < 1
    d3 = nn.Dropout3d(0.5)
    y = np.array(d3(mx.ones((4, 3, 3, 3, 8))))
    assert np.all(y.min(axis=(1, 2, 3)) == y.max(axis=(1, 2, 3)))
    with pytest.raises(ValueError, match="not in \\[0, 1\\)"):
        nn.Dropout(1.0)
    with pytest.raises(ValueError, match="Expected 3 or 4 dimensions"):
        d2(mx.ones((2, 2)))
    assert nn.Dropout(0.0)(x) is x


def test_recurrent():
    x = randn(2, 6, 4)
    rnn = nn.RNN(4, 5)
    p = set_params(rnn)
    h = None
    outs = []
    for t in range(6):
        a = x[:, t] @ p["Wxh"].T + p["bias"]
        if h is not None:
            a = a + h @ p["Whh"].T
        h = np.tanh(a)
        outs.append(h)
    close(rnn(mx.array(x)), np.stack(outs, 1))
    relu_rnn = nn.RNN(4, 5, nonlinearity=nn.relu, bias=False)
    p = set_params(relu_rnn)
    h0 = randn(2, 5)
    ref = np.maximum(x[:, 0] @ p["Wxh"].T + h0 @ p["Whh"].T, 0)
    close(relu_rnn(mx.array(x), mx.array(h0))[:, 0], ref)

    gru = nn.GRU(4, 5)
    p = set_params(gru)
    H = 5
    h = None
    outs = []
    for t in range(6):
        xp = x[:, t] @ p["Wx"].T + p["b"]
        hp = h @ p["Wh"].T if h is not None else np.zeros((2, 3 * H))
        r = np_sigmoid(xp[:, :H] + hp[:, :H])
        z = np_sigmoid(xp[:, H:2 * H] + hp[:, H:2 * H])
        n = np.tanh(xp[:, 2 * H:] + r * (hp[:, 2 * H:] + p["bhn"]))
        h = (1 - z) * n + (z * h if h is not None else 0)
        outs.append(h)
    close(gru(mx.array(x)), np.stack(outs, 1))

    lstm = nn.LSTM(4, 5)
    p = set_params(lstm)
    h = np.zeros((2, 5))
    c = np.zeros((2, 5))
    hs, cs = [], []
    for t in range(6):
        a = x[:, t] @ p["Wx"].T + p["bias"] + h @ p["Wh"].T
        i, f, g, o = np.split(a, 4, axis=-1)
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
        h = np_sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    yh, yc = lstm(mx.array(x))
    close(yh, np.stack(hs, 1))
    close(yc, np.stack(cs, 1))
    # Unbatched input (L, D).
    close(lstm(mx.array(x[0]))[0], np.stack(hs, 1)[0])


def test_multi_head_attention():
    q, kv = randn(2, 5, 8), randn(2, 7, 8)
    mha = nn.MultiHeadAttention(8, 2, bias=True)
    p = set_params(mha)
    close(mha(mx.array(q), mx.array(kv), mx.array(kv)), np_mha(q, kv, kv, p))
    mask = np.array(nn.MultiHeadAttention.create_additive_causal_mask(5))
    assert mask[0, 1] < -1e30 and mask[1, 0] == 0 and mask[2, 2] == 0
    close(mha(mx.array(q), mx.array(q), mx.array(q), mx.array(mask)),
          np_mha(q, q, q, p, mask))
    # Different input and output sizes.
    m = nn.MultiHeadAttention(8, 4, query_input_dims=3, key_input_dims=5, value_dims=12,
                              value_output_dims=6)
    p = set_params(m)
    qq, kk, vv = randn(1, 2, 3), randn(1, 4, 5), randn(1, 4, 5)
    y = m(mx.array(qq), mx.array(kk), mx.array(vv))
    assert y.shape == (1, 2, 6)
    close(y, np_mha(qq, kk, vv, p, heads=4))
    with pytest.raises(ValueError, match="divisible by the number of heads"):
        nn.MultiHeadAttention(10, 3)


def np_layer_norm(x, p):
    return np_standardize(x, -1) * p["weight"] + p["bias"]


def np_encoder_layer(x, p, mask, norm_first):
    def mlp(h):
        return np_linear(np.maximum(np_linear(h, p["linear1.weight"], p["linear1.bias"]), 0),
                         p["linear2.weight"], p["linear2.bias"])

    att = sub(p, "attention")
    if norm_first:
        y = np_layer_norm(x, sub(p, "ln1"))
        x = x + np_mha(y, y, y, att, mask)
        return x + mlp(np_layer_norm(x, sub(p, "ln2")))
    x = np_layer_norm(x + np_mha(x, x, x, att, mask), sub(p, "ln1"))
    return np_layer_norm(x + mlp(x), sub(p, "ln2"))


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_encoder(norm_first):
    x = randn(2, 5, 8)
    mask = np.array(nn.MultiHeadAttention.create_additive_causal_mask(5))
    layer = nn.TransformerEncoderLayer(8, 2, 16, norm_first=norm_first)
    p = set_params(layer)
    close(layer(mx.array(x), mx.array(mask)), np_encoder_layer(x, p, mask, norm_first))
    enc = nn.TransformerEncoder(2, 8, 2, 16, norm_first=norm_first)
    p = set_params(enc)
    h = x
    for i in range(2):
        h = np_encoder_layer(h, sub(p, f"layers.{i}"), None, norm_first)
    close(enc(mx.array(x), None), np_layer_norm(h, sub(p, "ln")))


def test_transformer_decoder_and_full_model():
    x, mem = randn(2, 4, 8), randn(2, 6, 8)
    dec = nn.TransformerDecoderLayer(8, 2, 16)
    p = set_params(dec)
    y = np_layer_norm(x, sub(p, "ln1"))
    h = x + np_mha(y, y, y, sub(p, "self_attention"))
    y = np_layer_norm(h, sub(p, "ln2"))
    h = h + np_mha(y, mem, mem, sub(p, "cross_attention"))
    y = np_layer_norm(h, sub(p, "ln3"))
    y = np_linear(np.maximum(np_linear(y, p["linear1.weight"], p["linear1.bias"]), 0),
                  p["linear2.weight"], p["linear2.bias"])
    close(dec(mx.array(x), mx.array(mem), None, None), h + y)

    t = nn.Transformer(8, 2, 1, 1, 16)
    set_params(t)
    src, tgt = mx.array(mem), mx.array(x)
    memory = t.encoder(src, None)
    close(t(src, tgt, None, None, None), np.array(t.decoder(tgt, memory, None, None)))
    assert t(src, tgt, None, None, None).shape == (2, 4, 8)


def np_rope(x, dims, traditional, base, scale, offset=0):
    L = x.shape[-2]
    pos = (np.arange(L) + offset) * scale
    freqs = base ** (-np.arange(0, dims, 2) / dims)
    th = pos[:, None] * freqs[None]
    c, s = np.cos(th), np.sin(th)
    y = x.copy()
    if traditional:
        a, b = x[..., 0:dims:2], x[..., 1:dims:2]
        y[..., 0:dims:2] = a * c - b * s
        y[..., 1:dims:2] = a * s + b * c
    else:
        h = dims // 2
        a, b = x[..., :h], x[..., h:dims]
        y[..., :h] = a * c - b * s
        y[..., h:dims] = a * s + b * c
    return y


def test_positional_encodings():
    x = randn(2, 3, 7, 8)
    close(nn.RoPE(8)(mx.array(x)), np_rope(x, 8, False, 10000, 1.0))
    close(nn.RoPE(6, traditional=True, base=100, scale=0.5)(mx.array(x), offset=3),
          np_rope(x, 6, True, 100, 0.5, 3))
    close(nn.RoPE(4)(mx.array(x), offset=2), np_rope(x, 4, False, 10000, 1.0, 2))

    pos = np.array([0.0, 1.5, 7.0, 100.0], np.float32)
    pe = nn.SinusoidalPositionalEncoding(8)
    sig = np.exp(np.linspace(0, np.log(1e-4), 4))  # max_freq 1 down to min_freq
    arg = pos[:, None] * sig
    close(pe(mx.array(pos)), np.concatenate([np.sin(arg), np.cos(arg)], -1) * math.sqrt(2 / 8))
    pe = nn.SinusoidalPositionalEncoding(8, cos_first=True, full_turns=True, scale=1.0)
    arg = pos[:, None] * sig * 2 * np.pi
    close(pe(mx.array(pos)), np.concatenate([np.cos(arg), np.sin(arg)], -1), tol=2e-4)

    scores = randn(2, 4, 3, 5)
    slopes = np.array([2 ** (-8 * (h + 1) / 4) for h in range(4)])
    q = np.arange(2, 5)[:, None]
    k = np.arange(5)[None]
    bias = -np.abs(q - k)[None, None] * slopes[None, :, None, None]
    close(nn.ALiBi()(mx.array(scores), offset=2), scores + bias)


def np_resize_axis(x, axis, scale, mode, align):
    n = x.shape[axis]
    m = int(scale * n)
    i = np.arange(m, dtype=np.float64)
    if mode == "nearest":
        if m > n:
            idx = np.round((i + 0.5) * n / m - 0.5)
        else:
            idx = np.floor(i * n / m)
        return np.take(x, idx.astype(int), axis=axis)
    if align:
        c = i * ((n - 1) / max(m - 1, 1))
    else:  # a grid of step 1 / scale centred on the input's
        c = i / scale - ((m - 1) / scale - n + 1) / 2
    shape = [1] * x.ndim
    shape[axis] = m
    if mode == "linear":
        c = np.clip(c, 0, n - 1)
        lo, hi = np.floor(c), np.ceil(c)
        w = (c - lo).reshape(shape)
        return (np.take(x, lo.astype(int), axis=axis) * (1 - w)
                + np.take(x, hi.astype(int), axis=axis) * w)
    a = -0.75

    def kern(d):
        d = np.abs(d)
        return np.where(d <= 1, ((a + 2) * d - (a + 3)) * d * d + 1,
                        np.where(d < 2, ((d - 5) * d + 8) * d * a - 4 * a, 0))

    base = np.floor(c)
    out = 0
    for o in (-1, 0, 1, 2):
        pos = base + o
        w = kern(c - pos).reshape(shape)
        out = out + np.take(x, np.clip(pos, 0, n - 1).astype(int), axis=axis) * w
    return out


@pytest.mark.parametrize("scale,mode,align", [
    (2, "nearest", False), ((2, 1.5), "nearest", False), (0.5, "nearest", False),
    (1.7, "linear", False), (2, "linear", True), ((1.5, 2), "cubic", False),
    (2, "cubic", True),
])
def test_upsample(scale, mode, align):
    x = randn(2, 5, 6, 3)
    y = nn.Upsample(scale, mode, align)(mx.array(x))
    scales = scale if isinstance(scale, tuple) else (scale, scale)
    ref = x.astype(np.float64)
    for d, s in enumerate(scales):
        ref = np_resize_axis(ref, 1 + d, s, mode, align)
    close(y, ref)


def test_upsample_errors():
    with pytest.raises(ValueError, match="unsupported upsampling"):
        nn.Upsample(2, "area")
    with pytest.raises(ValueError, match="at least 3D"):
        nn.Upsample(2)(mx.zeros((4, 4)))
    with pytest.raises(ValueError, match="One scale per spatial dimension"):
        nn.Upsample((2, 2, 2))(mx.zeros((1, 4, 4, 1)))


def test_layers_in_float16():
    x = mx.array(randn(2, 9, 9, 4)).astype(mx.float16)
    m = nn.Sequential(nn.Conv2d(4, 8, 3), nn.GroupNorm(2, 8), nn.MaxPool2d(2), nn.GELU())
    m.set_dtype(mx.float16)
    assert m(x).dtype == mx.float16
