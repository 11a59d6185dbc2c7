"""cmx.nn activations, losses and initializers against their formulas."""

import math

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn
from cmx.nn import losses as L

RNG = np.random.default_rng(1)
X = (RNG.standard_normal((4, 6)) * 3).astype(np.float32)
X[0, :3] = [0.0, -0.5, 0.5]  # on the kinks of relu, shrink, elu ...


def sig(x):
    return 1 / (1 + np.exp(-x))


def softplus(x):
    return np.logaddexp(x, 0)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = {
    "sigmoid": sig,
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "log_softmax": lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True)),
    "softmax": softmax,
    "softmin": lambda x: softmax(-x),
    "elu": lambda x: np.where(x > 0, x, np.exp(x) - 1),
    "celu": lambda x: np.maximum(x, 0) + np.minimum(np.exp(x) - 1, 0),
    "selu": lambda x: 1.0507 * np.where(x > 0, x, 1.67326 * (np.exp(x) - 1)),
    "silu": lambda x: x * sig(x),
    "gelu": lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))),
    "gelu_approx": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3))),
    "gelu_fast_approx": lambda x: x * sig(1.702 * x),
    "glu": lambda x: x[:, :3] * sig(x[:, 3:]),
    "softplus": softplus,
    "softsign": lambda x: x / (1 + np.abs(x)),
    "softshrink": lambda x: np.where(np.abs(x) > 0.5, x - np.sign(x) * 0.5, 0),
    "mish": lambda x: x * np.tanh(softplus(x)),
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "hard_shrink": lambda x: np.where(np.abs(x) > 0.5, x, 0),
    "log_sigmoid": lambda x: -softplus(-x),
    "step": lambda x: (x > 0).astype(np.float32),
}

CLASSES = {
    "sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "ReLU", "relu6": "ReLU6",
    "leaky_relu": "LeakyReLU", "log_softmax": "LogSoftmax", "softmax": "Softmax",
    "softmin": "Softmin", "elu": "ELU", "celu": "CELU", "selu": "SELU", "silu": "SiLU",
    "gelu": "GELU", "glu": "GLU", "softplus": "Softplus", "softsign": "Softsign",
    "softshrink": "Softshrink", "mish": "Mish", "hardswish": "Hardswish",
    "hard_tanh": "HardTanh", "hard_shrink": "HardShrink", "log_sigmoid": "LogSigmoid",
    "step": "Step",
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation(name):
    ref = ACTIVATIONS[name](X.astype(np.float64))
    y = getattr(nn, name)(mx.array(X))
    np.testing.assert_allclose(np.array(y), ref, rtol=1e-5, atol=1e-6)
    if name in CLASSES:
        m = getattr(nn, CLASSES[name])()
        np.testing.assert_allclose(np.array(m(mx.array(X))), ref, rtol=1e-5, atol=1e-6)


def test_activation_arguments():
    x = mx.array(X)
    np.testing.assert_allclose(np.array(nn.leaky_relu(x, 0.2)), np.where(X > 0, X, 0.2 * X),
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(nn.LeakyReLU(0.3)(x)), np.where(X > 0, X, 0.3 * X),
                               rtol=1e-6)
    np.testing.assert_allclose(np.array(nn.ELU(alpha=2.0)(x)),
                               np.where(X > 0, X, 2 * (np.exp(X) - 1)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(nn.celu(x, 2.0)),
                               np.maximum(X, 0) + np.minimum(2 * (np.exp(X / 2) - 1), 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(nn.Step(1.0)(x)), (X > 1).astype(np.float32))
    np.testing.assert_allclose(np.array(nn.HardTanh(-2, 3)(x)), np.clip(X, -2, 3))
    np.testing.assert_allclose(np.array(nn.Softshrink(1.0)(x)),
                               np.where(np.abs(X) > 1, X - np.sign(X), 0), rtol=1e-6)
    np.testing.assert_allclose(np.array(nn.GLU(axis=0)(x)), X[:2] * sig(X[2:]), rtol=1e-5)
    np.testing.assert_allclose(np.array(nn.GELU("tanh")(x)), ACTIVATIONS["gelu_approx"](X),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.array(nn.GELU("fast")(x)), X * sig(1.702 * X), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(ValueError, match="approximation"):
        nn.GELU("cubic")
    pr = nn.PReLU(6, init=0.1)
    assert pr.weight.tolist() == pytest.approx([0.1] * 6)
    np.testing.assert_allclose(np.array(pr(x)), np.where(X > 0, X, 0.1 * X), rtol=1e-6)
    np.testing.assert_allclose(np.array(nn.prelu(x, mx.array([0.5]))),
                               np.where(X > 0, X, 0.5 * X), rtol=1e-6)
    # Weak scalars keep half precision.
    assert nn.gelu(x.astype(mx.float16)).dtype == mx.float16
    assert nn.softplus(x.astype(mx.bfloat16)).dtype == mx.bfloat16


LOGITS = RNG.standard_normal((5, 4)).astype(np.float32) * 2
TARGETS = np.array([0, 3, 1, 1, 2], np.int32)


def lse(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return (m + np.log(np.exp(x - m).sum(axis, keepdims=True))).squeeze(axis)


def test_cross_entropy():
    lg = mx.array(LOGITS)
    ref = lse(LOGITS) - LOGITS[np.arange(5), TARGETS]
    np.testing.assert_allclose(np.array(L.cross_entropy(lg, mx.array(TARGETS))), ref, rtol=1e-5)
    np.testing.assert_allclose(
        L.cross_entropy(lg, mx.array(TARGETS), reduction="mean").item(), ref.mean(), rtol=1e-5)
    np.testing.assert_allclose(
        L.cross_entropy(lg, mx.array(TARGETS), reduction="sum").item(), ref.sum(), rtol=1e-5)
    # Label smoothing s: targets (1 - s) one-hot + s / classes.
    s = 0.2
    q = np.full((5, 4), s / 4)
    q[np.arange(5), TARGETS] += 1 - s
    ref_s = lse(LOGITS) - (q * LOGITS).sum(-1)
    np.testing.assert_allclose(
        np.array(L.cross_entropy(lg, mx.array(TARGETS), label_smoothing=s)), ref_s, rtol=1e-5)
    # Probability targets (rows summing to 1): the same loss.
    probs = softmax(RNG.standard_normal((5, 4)))
    np.testing.assert_allclose(
        np.array(L.cross_entropy(lg, mx.array(probs.astype(np.float32)))),
        lse(LOGITS) - (probs * LOGITS).sum(-1), rtol=1e-5)
    # Weights and another axis.
    w = np.linspace(0.5, 1.5, 5).astype(np.float32)
    np.testing.assert_allclose(
        np.array(L.cross_entropy(lg, mx.array(TARGETS), weights=mx.array(w))), ref * w, rtol=1e-5)
    np.testing.assert_allclose(
        np.array(L.cross_entropy(mx.array(LOGITS.T), mx.array(TARGETS), axis=0)), ref, rtol=1e-5)
    with pytest.raises(ValueError, match="Label smoothing"):
        L.cross_entropy(lg, mx.array(TARGETS), label_smoothing=1.0)
    with pytest.raises(ValueError, match="Targets shape"):
        L.cross_entropy(lg, mx.array(TARGETS[:3]))
    with pytest.raises(ValueError, match="Invalid reduction"):
        L.cross_entropy(lg, mx.array(TARGETS), reduction="avg")
    # Its gradient: softmax - one-hot.
    g = mx.grad(lambda z: L.cross_entropy(z, mx.array(TARGETS), reduction="sum"))(lg)
    onehot = np.eye(4)[TARGETS]
    np.testing.assert_allclose(np.array(g), softmax(LOGITS) - onehot, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cross_entropy_class_indices_wide_rows(dtype):
    # Class-index targets go through mx.fast.cross_entropy's fused rows:
    # the loss keeps the logits' dtype, matches the float64 formula over
    # 32,000 classes (a language model's head), batched leading axes, a
    # middle class axis, and its gradient is softmax - one-hot.
    z = (RNG.standard_normal((2, 3, 32000)) * 4).astype(np.float32)
    t = RNG.integers(0, 32000, (2, 3))
    lg = mx.array(z).astype(getattr(mx, dtype))
    zq = np.array(lg.astype(mx.float32)).astype(np.float64)
    ref = (np.log(np.exp(zq - zq.max(-1, keepdims=True)).sum(-1)) + zq.max(-1)
           - np.take_along_axis(zq, t[..., None], -1)[..., 0])
    out = L.cross_entropy(lg, mx.array(t))
    assert out.dtype == lg.dtype and out.shape == (2, 3)
    tol = 1e-5 if dtype == "float32" else 1e-2
    np.testing.assert_allclose(np.array(out.astype(mx.float32)), ref, rtol=tol)
    mid = L.cross_entropy(mx.moveaxis(lg, -1, 1), mx.array(t), axis=1)
    np.testing.assert_allclose(np.array(mid.astype(mx.float32)),
                               np.array(out.astype(mx.float32)), rtol=tol)
    if dtype == "float32":
        g = mx.grad(lambda a: L.cross_entropy(a, mx.array(t), reduction="sum"))(lg)
        e = np.exp(zq - zq.max(-1, keepdims=True))
        want = e / e.sum(-1, keepdims=True)
        np.put_along_axis(want, t[..., None], np.take_along_axis(want, t[..., None], -1) - 1, -1)
        np.testing.assert_allclose(np.array(g), want, atol=1e-6)
    # An index past the classes names the op the user called.
    with pytest.raises(IndexError, match="cross_entropy"):
        mx.eval(L.cross_entropy(lg, mx.array(t) + 32000))


P = RNG.uniform(0.05, 0.95, (5, 4)).astype(np.float32)
T01 = (RNG.uniform(size=(5, 4)) > 0.5).astype(np.float32)
A = RNG.standard_normal((5, 4)).astype(np.float32)
B = RNG.standard_normal((5, 4)).astype(np.float32)
PM = np.sign(RNG.standard_normal((5, 4))).astype(np.float32)


def test_binary_cross_entropy():
    ref = -(T01 * np.log(sig(A)) + (1 - T01) * np.log(1 - sig(A)))
    np.testing.assert_allclose(L.binary_cross_entropy(mx.array(A), mx.array(T01)).item(),
                               ref.mean(), rtol=1e-5)
    ref_p = -(T01 * np.log(P) + (1 - T01) * np.log(1 - P))
    np.testing.assert_allclose(
        np.array(L.binary_cross_entropy(mx.array(P), mx.array(T01), with_logits=False,
                                        reduction="none")), ref_p, rtol=1e-5)
    # log(0) is clipped at -100.
    y = L.binary_cross_entropy(mx.array([0.0, 1.0]), mx.array([1.0, 0.0]), with_logits=False,
                               reduction="none")
    assert y.tolist() == [100.0, 100.0]
    w = np.abs(B)
    np.testing.assert_allclose(
        L.binary_cross_entropy(mx.array(A), mx.array(T01), weights=mx.array(w),
                               reduction="sum").item(), (ref * w).sum(), rtol=1e-5)


def d(a, b=None):
    return mx.array(a), (mx.array(b) if b is not None else None)


@pytest.mark.parametrize("name,call,ref", [
    ("l1", lambda: L.l1_loss(mx.array(A), mx.array(B)), np.abs(A - B).mean()),
    ("mse", lambda: L.mse_loss(mx.array(A), mx.array(B), reduction="sum"), ((A - B) ** 2).sum()),
    ("nll", lambda: L.nll_loss(mx.array(A), mx.array(TARGETS)),
     -A[np.arange(5), TARGETS]),
    ("gaussian_nll", lambda: L.gaussian_nll_loss(mx.array(A), mx.array(B), mx.array(P), full=True),
     (0.5 * (np.log(P) + (B - A) ** 2 / P) + 0.5 * np.log(2 * np.pi)).mean()),
    ("kl_div", lambda: L.kl_div_loss(mx.array(A), mx.array(B)),
     (np.exp(B) * (B - A)).sum(-1)),
    ("smooth_l1", lambda: L.smooth_l1_loss(mx.array(A), mx.array(B), beta=0.5, reduction="none"),
     np.where(np.abs(A - B) < 0.5, 0.5 * (A - B) ** 2 / 0.5, np.abs(A - B) - 0.25)),
    ("triplet", lambda: L.triplet_loss(mx.array(A), mx.array(B), mx.array(P), margin=0.5),
     np.maximum(np.sqrt(((A - B) ** 2).sum(-1) + 1e-6)
                - np.sqrt(((A - P) ** 2).sum(-1) + 1e-6) + 0.5, 0)),
    ("hinge", lambda: L.hinge_loss(mx.array(A), mx.array(PM)), np.maximum(1 - A * PM, 0)),
    ("huber", lambda: L.huber_loss(mx.array(A), mx.array(B), delta=0.7),
     np.where(np.abs(A - B) <= 0.7, 0.5 * (A - B) ** 2, 0.7 * (np.abs(A - B) - 0.35))),
    ("log_cosh", lambda: L.log_cosh_loss(mx.array(A), mx.array(B)),
     np.log(np.cosh(A - B))),
    ("cosine", lambda: L.cosine_similarity_loss(mx.array(A), mx.array(B)),
     (A * B).sum(1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1))),
    ("margin_ranking", lambda: L.margin_ranking_loss(mx.array(A), mx.array(B), mx.array(PM),
                                                    margin=0.3),
     np.maximum(-PM * (A - B) + 0.3, 0)),
])
def test_loss(name, call, ref):
    np.testing.assert_allclose(np.array(call()), ref, rtol=2e-5, atol=1e-6)


def test_loss_shape_checks():
    with pytest.raises(ValueError, match="shape"):
        L.mse_loss(mx.zeros((2, 3)), mx.zeros((3, 2)))
    with pytest.raises(ValueError, match="shape"):
        L.margin_ranking_loss(mx.zeros(3), mx.zeros(3), mx.zeros(2))
    with pytest.raises(ValueError, match="vars shape"):
        L.gaussian_nll_loss(mx.zeros(3), mx.zeros(3), mx.zeros(2))


def test_initializers():
    mx.random.seed(42)
    a = mx.zeros((300, 200))
    assert np.all(np.array(nn.init.constant(0.5)(a)) == 0.5)
    n = np.array(nn.init.normal(1.0, 2.0)(a))
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05
    u = np.array(nn.init.uniform(-1, 3)(a))
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    assert np.array_equal(np.array(nn.init.identity()(mx.zeros((3, 3)))), np.eye(3))
    with pytest.raises(ValueError, match="square"):
        nn.init.identity()(mx.zeros((3, 4)))
    fan_in, fan_out = 200, 300
    g = np.array(nn.init.glorot_normal()(a))
    assert abs(g.std() - math.sqrt(2 / (fan_in + fan_out))) < 0.003
    g = np.array(nn.init.glorot_uniform()(a, gain=2.0))
    lim = 2 * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(g).max() <= lim and np.abs(g).max() > 0.95 * lim
    h = np.array(nn.init.he_normal()(a, mode="fan_out"))
    assert abs(h.std() - 1 / math.sqrt(fan_out)) < 0.003
    h = np.array(nn.init.he_uniform()(a))
    assert np.abs(h).max() <= math.sqrt(3 / fan_in)
    # Convolution weights: the receptive field multiplies both fans.
    c = np.array(nn.init.he_normal()(mx.zeros((64, 5, 5, 32))))
    assert abs(c.std() - 1 / math.sqrt(32 * 25)) < 0.003
    with pytest.raises(ValueError, match="Invalid mode"):
        nn.init.he_normal()(a, mode="x")
    with pytest.raises(ValueError, match="at least 2 dimensional"):
        nn.init.glorot_normal()(mx.zeros(3))
    s = np.array(nn.init.sparse(0.3)(mx.zeros((10, 20))))
    assert np.all((s == 0).sum(1) == 6)
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse(0.5)(mx.zeros((2, 2, 2)))
    for shape in [(5, 8), (8, 5), (6, 6)]:
        q = np.array(nn.init.orthogonal(gain=2.0)(mx.zeros(shape)))
        small = q @ q.T if shape[0] <= shape[1] else q.T @ q
        np.testing.assert_allclose(small, 4 * np.eye(min(shape)), atol=1e-4)
    with pytest.raises(ValueError, match="2D array"):
        nn.init.orthogonal()(mx.zeros((2, 2, 2)))
    assert nn.init.normal(dtype=mx.float16)(a).dtype == mx.float16
