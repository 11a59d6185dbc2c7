"""cmx.optimizers against hand-computed updates (numpy, a few steps), the
state layout (MLX's), schedules and clip_grad_norm."""

import math

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn
import cmx.optimizers as optim
from cmx.utils import tree_flatten, tree_map

RNG = np.random.default_rng(7)
P0 = {"w": RNG.standard_normal((3, 4)).astype(np.float32),
      "b": [RNG.standard_normal(4).astype(np.float32)]}
GRADS = [tree_map(lambda v: RNG.standard_normal(v.shape).astype(np.float32), P0)
         for _ in range(3)]


def run(opt, steps=3):
    """Applies GRADS to P0 with opt; returns the parameters as numpy."""
    params = tree_map(mx.array, P0)
    for g in GRADS[:steps]:
        params = opt.apply_gradients(tree_map(mx.array, g), params)
        mx.eval(params, opt.state)
    return tree_map(np.array, params)


def reference(update, state_init, steps=3):
    """The same with a numpy rule update(p, g, state, t) -> p."""
    out = {}
    for path in ("w", "b"):
        p = P0[path] if path == "w" else P0["b"][0]
        st = {k: f(p) for k, f in state_init.items()}
        for t, g in enumerate(GRADS[:steps], start=1):
            gg = g[path] if path == "w" else g["b"][0]
            p = update(p.astype(np.float64), gg.astype(np.float64), st, t)
        out[path] = p
    return out


def check(opt, update, state_init=None, tol=1e-5):
    got = run(opt)
    ref = reference(update, state_init or {})
    np.testing.assert_allclose(got["w"], ref["w"], rtol=tol, atol=tol)
    np.testing.assert_allclose(got["b"][0], ref["b"], rtol=tol, atol=tol)


def zeros(p):
    return np.zeros_like(p, dtype=np.float64)


def test_sgd():
    check(optim.SGD(0.1), lambda p, g, s, t: p - 0.1 * g)

    def momentum(p, g, s, t, mu=0.9, wd=0.01, damp=0.1):
        g = g + wd * p
        s["v"] = mu * s["v"] + (1 - damp) * g
        return p - 0.1 * s["v"]

    check(optim.SGD(0.1, momentum=0.9, weight_decay=0.01, dampening=0.1), momentum, {"v": zeros})

    def nesterov(p, g, s, t):
        s["v"] = 0.9 * s["v"] + g
        return p - 0.1 * (g + 0.9 * s["v"])

    check(optim.SGD(0.1, momentum=0.9, nesterov=True), nesterov, {"v": zeros})
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD(0.1, nesterov=True)


def test_rmsprop_adagrad_adadelta():
    def rms(p, g, s, t):
        s["v"] = 0.99 * s["v"] + 0.01 * g * g
        return p - 0.01 * g / (np.sqrt(s["v"]) + 1e-8)

    check(optim.RMSprop(0.01), rms, {"v": zeros})

    def adagrad(p, g, s, t):
        s["v"] = s["v"] + g * g
        return p - 0.1 * g / (np.sqrt(s["v"]) + 1e-8)

    check(optim.Adagrad(0.1), adagrad, {"v": zeros})

    def adadelta(p, g, s, t, rho=0.9, eps=1e-6):
        s["v"] = rho * s["v"] + (1 - rho) * g * g
        delta = np.sqrt(s["u"] + eps) / np.sqrt(s["v"] + eps) * g
        s["u"] = rho * s["u"] + (1 - rho) * delta * delta
        return p - 1.0 * delta

    check(optim.AdaDelta(1.0), adadelta, {"v": zeros, "u": zeros})


def adam_rule(lr, b1, b2, eps, bias_correction=False, wd=0.0):
    def rule(p, g, s, t):
        p = p * (1 - lr * wd)
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        m, v = s["m"], s["v"]
        if bias_correction:
            m, v = m / (1 - b1**t), v / (1 - b2**t)
        return p - lr * m / (np.sqrt(v) + eps)

    return rule


def test_adam_family():
    init = {"m": zeros, "v": zeros}
    check(optim.Adam(0.01), adam_rule(0.01, 0.9, 0.999, 1e-8), init)
    check(optim.Adam(0.01, betas=[0.8, 0.9], bias_correction=True),
          adam_rule(0.01, 0.8, 0.9, 1e-8, True), init, tol=1e-4)
    check(optim.AdamW(0.01, weight_decay=0.1), adam_rule(0.01, 0.9, 0.999, 1e-8, wd=0.1), init)

    def adamax(p, g, s, t):
        s["m"] = 0.9 * s["m"] + 0.1 * g
        s["v"] = np.maximum(0.999 * s["v"], np.abs(g))
        return p - 0.01 * s["m"] / (s["v"] + 1e-8)

    check(optim.Adamax(0.01), adamax, init)

    def lion(p, g, s, t):
        c = 0.9 * s["m"] + 0.1 * g
        s["m"] = 0.99 * s["m"] + 0.01 * g
        return p * (1 - 0.01 * 0.1) - 0.01 * np.sign(c)

    check(optim.Lion(0.01, weight_decay=0.1), lion, {"m": zeros})


def test_adafactor():
    def rule(relative_step=True, scale_parameter=True, beta_1=None, lr=None, wd=0.0,
             warmup=False):
        eps1, eps2, decay = 1e-30, 1e-3, -0.8

        def step(p, g, s, t):
            rms = lambda a: np.sqrt(np.mean(a * a))  # noqa: E731
            if relative_step:
                size = min(1e-6 * t if warmup else 1e-2, 1 / math.sqrt(t))
            else:
                size = lr
            alpha = max(eps2, rms(p)) * size if scale_parameter else size
            beta2 = 1 - t**decay
            sq = g * g + eps1
            if g.ndim >= 2:
                s["row"] = beta2 * s.get("row", np.zeros(g.shape[0])) + (1 - beta2) * sq.mean(-1)
                s["col"] = beta2 * s.get("col", np.zeros(g.shape[1])) + (1 - beta2) * sq.mean(-2)
                vhat = np.outer(s["row"] / s["row"].mean(), s["col"])
                u = g / np.sqrt(vhat)
            else:
                s["v"] = beta2 * s.get("v", np.zeros_like(g)) + (1 - beta2) * sq
                u = g / np.sqrt(s["v"])
            u = u / max(1.0, rms(u) / 1.0)
            u = alpha * u
            if beta_1 is not None:
                s["m"] = beta_1 * s.get("m", np.zeros_like(g)) + (1 - beta_1) * u
                u = s["m"]
            if wd:
                p = p - wd * alpha * p
            return p - u

        return step

    check(optim.Adafactor(), rule(), tol=1e-4)
    check(optim.Adafactor(learning_rate=0.01, beta_1=0.9, weight_decay=0.1, relative_step=False,
                          scale_parameter=False),
          rule(False, False, 0.9, 0.01, 0.1), tol=1e-4)
    check(optim.Adafactor(warmup_init=True), rule(warmup=True), tol=1e-4)
    o = optim.Adafactor(beta_1=0.9)
    o.init(tree_map(mx.array, P0))
    assert sorted(k for k, _ in tree_flatten(o.state)) == [
        "b.0.exp_avg", "b.0.exp_avg_sq", "step", "w.exp_avg", "w.exp_avg_sq_col",
        "w.exp_avg_sq_row"]


def test_state_layout_and_step():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(1e-3)
    assert list(opt.state) == ["step", "learning_rate"]
    assert opt.state["step"].dtype == mx.uint64 and opt.step.item() == 0
    opt.init(model.trainable_parameters())
    names = [(k, v.shape) for k, v in tree_flatten(opt.state)]
    assert names == [("step", ()), ("learning_rate", ()),
                     ("layers.0.weight.m", (4, 3)), ("layers.0.weight.v", (4, 3)),
                     ("layers.0.bias.m", (4,)), ("layers.0.bias.v", (4,)),
                     ("layers.2.weight.m", (2, 4)), ("layers.2.weight.v", (2, 4)),
                     ("layers.2.bias.m", (2,)), ("layers.2.bias.v", (2,))]
    assert opt.state["layers"][1] == {}
    grads = tree_map(mx.ones_like, model.trainable_parameters())
    state_ref = opt.state
    opt.update(model, grads)
    assert opt.state is state_ref and opt.step.item() == 1
    opt.learning_rate = 0.5
    assert opt.learning_rate.item() == 0.5
    # init with more parameters extends the state, keeping what exists.
    opt2 = optim.SGD(0.1, momentum=0.9)
    opt2.init({"layers": [{"weight": model.layers[0].weight}]})
    v = opt2.state["layers"][0]["weight"]["v"]
    opt2.init(model.trainable_parameters())
    assert opt2.state["layers"][0]["weight"]["v"] is v
    assert [k for k, _ in tree_flatten(opt2.state)][-1] == "layers.2.bias.v"
    opt2.update(model, grads)


def test_schedules():
    steps = [mx.array(i) for i in range(8)]

    def values(s):
        return [s(t).item() for t in steps]

    assert values(optim.exponential_decay(0.1, 0.5)) == pytest.approx(
        [0.1 * 0.5**i for i in range(8)])
    assert values(optim.step_decay(0.1, 0.5, 3)) == pytest.approx(
        [0.1 * 0.5 ** (i // 3) for i in range(8)])
    assert values(optim.cosine_decay(0.1, 5, 0.01)) == pytest.approx(
        [0.01 + 0.5 * (1 + math.cos(math.pi * min(i, 5) / 5)) * 0.09 for i in range(8)],
        rel=1e-5)
    assert values(optim.linear_schedule(0.0, 0.1, 4)) == pytest.approx(
        [0.1 * min(i, 4) / 4 for i in range(8)], rel=1e-5, abs=1e-8)
    warm = optim.join_schedules([optim.linear_schedule(0.0, 0.1, 3),
                                 optim.cosine_decay(0.1, 4)], [3])
    want = [0.0, 0.1 / 3, 0.2 / 3] + [0.05 * (1 + math.cos(math.pi * min(i, 4) / 4))
                                      for i in range(5)]
    assert values(warm) == pytest.approx(want, rel=1e-5, abs=1e-8)
    with pytest.raises(ValueError, match="boundaries"):
        optim.join_schedules([optim.linear_schedule(0, 1, 2)], [3])
    with pytest.raises(ValueError, match="steps must be greater than 0"):
        optim.linear_schedule(0, 1, 0)

    # A scheduled optimizer reads the schedule at the step before each update.
    opt = optim.SGD(learning_rate=optim.exponential_decay(1.0, 0.5))
    assert opt.learning_rate.item() == 1.0
    p = {"x": mx.array([0.0])}
    for _ in range(3):
        p = opt.apply_gradients({"x": mx.array([1.0])}, p)
    assert p["x"].item() == pytest.approx(-(1.0 + 0.5 + 0.25))
    assert opt.learning_rate.item() == pytest.approx(0.25)


def test_clip_grad_norm():
    g = tree_map(mx.array, GRADS[0])
    norm = math.sqrt(sum(float((v.astype(np.float64) ** 2).sum())
                         for _, v in tree_flatten(GRADS[0])))
    clipped, total = optim.clip_grad_norm(g, 1.0)
    assert total.item() == pytest.approx(norm, rel=1e-5)
    new = math.sqrt(sum(float((np.array(v) ** 2).sum()) for _, v in tree_flatten(clipped)))
    assert new == pytest.approx(1.0, rel=1e-4)
    np.testing.assert_allclose(np.array(clipped["w"]), GRADS[0]["w"] / (norm + 1e-6), rtol=1e-5)
    same, _ = optim.clip_grad_norm(g, 1e6)
    np.testing.assert_allclose(np.array(same["w"]), GRADS[0]["w"], rtol=1e-6)


def test_multi_optimizer():
    opt = optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)],
                               [lambda path, g: path.startswith("w")])
    got = run(opt)
    sgd = reference(lambda p, g, s, t: p - 0.1 * g, {})
    adam = reference(adam_rule(0.01, 0.9, 0.999, 1e-8), {"m": zeros, "v": zeros})
    np.testing.assert_allclose(got["w"], sgd["w"], rtol=1e-5)
    np.testing.assert_allclose(got["b"][0], adam["b"], rtol=1e-5)
    assert [k for k, _ in tree_flatten(opt.state)] == [
        "states.0.step", "states.0.learning_rate", "states.0.w.v",
        "states.1.step", "states.1.learning_rate", "states.1.b.0.m", "states.1.b.0.v"]
    with pytest.raises(ValueError, match="filters"):
        optim.MultiOptimizer([optim.SGD(0.1), optim.Adam(0.01)], [])


@pytest.mark.parametrize("make", [
    lambda: optim.SGD(0.5, momentum=0.9), lambda: optim.Adam(0.05),
    lambda: optim.AdamW(0.05), lambda: optim.RMSprop(0.01), lambda: optim.Lion(0.1),
    lambda: optim.Adafactor(0.3, relative_step=False, scale_parameter=False),
    lambda: optim.Adagrad(0.3), lambda: optim.Adamax(0.05),
    lambda: optim.AdaDelta(10.0),
])
def test_training_reduces_loss(make):
    mx.random.seed(0)
    x = mx.random.normal((64, 4))
    y = x @ mx.array([[1.0], [-2.0], [0.5], [3.0]]) + 0.3
    model = nn.Linear(4, 1)
    opt = make()

    def loss_fn(m, x, y):
        return nn.losses.mse_loss(m(x), y)

    lg = nn.value_and_grad(model, loss_fn)
    first = None
    for _ in range(40):
        loss, grads = lg(model, x, y)
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state)
        first = first if first is not None else loss.item()
    assert loss.item() < 0.5 * first
