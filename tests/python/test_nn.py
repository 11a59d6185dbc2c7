"""cmx.nn.Module: the tree of parameters and submodules, freezing, modes,
updates, printing, weights files, nn.value_and_grad and the state that
mx.compile captures."""

import numpy as np
import pytest

import cmx.core as mx
from cmx import _compat
import cmx.nn as nn
import cmx.optimizers as optim
from cmx.utils import tree_flatten, tree_map, tree_unflatten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.x = nn.Linear(1, 1)
        self.y = [nn.ReLU(), {"q": nn.Linear(2, 2, bias=False), "r": nn.Tanh()}]
        self.z = nn.Sequential(nn.GELU(), nn.Sequential(nn.BatchNorm(3), nn.Conv2d(1, 2, 3)))
        self._hidden = mx.zeros(2)
        self.ws = [mx.zeros(1), mx.ones(2)]
        self.cfg = (1, 2)
        self.n = 3


def keys(tree):
    return [k for k, _ in tree_flatten(tree, is_leaf=nn.Module.is_module)]


ALL = ["x.weight", "x.bias", "y.1.q.weight", "z.layers.1.layers.0.weight",
       "z.layers.1.layers.0.bias", "z.layers.1.layers.0.running_mean",
       "z.layers.1.layers.0.running_var", "z.layers.1.layers.1.weight",
       "z.layers.1.layers.1.bias", "ws.0", "ws.1"]


def test_attributes_and_items():
    a = Net()
    # Arrays, lists, dicts and tuples are dict items; the rest attributes.
    assert set(a.keys()) == {"x", "y", "z", "_hidden", "ws", "cfg"}
    assert a.n == 3 and "n" not in a
    assert a.x is a["x"]
    a.n = mx.ones(1)  # becomes an item
    assert "n" in a and "n" not in a.__dict__
    a.n = 4  # and back
    assert "n" not in a and a.n == 4
    del a.ws
    assert "ws" not in a
    with pytest.raises(AttributeError):
        a.missing
    assert a.state is a


def test_parameter_trees():
    a = Net()
    assert keys(a.parameters()) == ALL
    # The running statistics are parameters but frozen.
    assert keys(a.trainable_parameters()) == [k for k in ALL if "running" not in k]
    assert keys(a.children()) == ["x", "y.0", "y.1.q", "y.1.r", "z"]
    assert keys(a.leaf_modules()) == ["x", "y.0", "y.1.q", "y.1.r", "z.layers.0",
                                      "z.layers.1.layers.0", "z.layers.1.layers.1"]
    names = [k for k, _ in a.named_modules()]
    # Depth first, children popped from a stack (MLX's order).
    assert names == ["", "z", "z.layers.1", "z.layers.1.layers.1", "z.layers.1.layers.0",
                     "z.layers.0", "y.1.r", "y.1.q", "y.0", "x"]
    assert [type(m).__name__ for m in a.modules()][:3] == ["Net", "Sequential", "Sequential"]
    # Empty submodules keep their place in the tree.
    s = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    assert s.parameters()["layers"][1] == {}


def test_freeze_and_unfreeze():
    a = Net()
    a.freeze()
    assert keys(a.trainable_parameters()) == []
    a.unfreeze()
    # As MLX: unfreezing from a parent unfreezes BatchNorm's statistics too;
    # BatchNorm.unfreeze itself keeps them frozen.
    assert keys(a.trainable_parameters()) == ALL
    bn = a.z.layers[1].layers[0]
    bn.unfreeze()
    assert "z.layers.1.layers.0.running_mean" not in keys(a.trainable_parameters())
    a.freeze(recurse=False)  # only the module's own arrays
    assert keys(a.trainable_parameters()) == [k for k in ALL if "running" not in k
                                              and not k.startswith("ws")]
    a.unfreeze(keys=["ws.0"], recurse=False)
    tp = keys(a.trainable_parameters())
    assert "ws.0" in tp and "ws.1" not in tp
    a.unfreeze()
    a.x.freeze(keys="weight")
    tp = keys(a.trainable_parameters())
    assert "x.weight" not in tp and "x.bias" in tp
    with pytest.raises(KeyError, match="nope"):
        a.freeze(keys=["nope"], strict=True)


def test_train_eval():
    a = Net()
    assert a.training
    a.eval()
    assert not a.training and not a.z.layers[1].layers[0].training
    a.train()
    assert a.z.layers[1].training


def test_update_apply_set_dtype():
    a = Net()
    with pytest.raises(ValueError, match='parameter named "foo"'):
        a.update({"x": {"foo": mx.zeros(1)}})
    with pytest.raises(ValueError, match="invalid type: int"):
        a.update({"x": {"weight": 1}})
    a.update({"x": {"foo": mx.zeros(1)}}, strict=False)
    a.update({"ws": [mx.full(1, 5.0)]})
    assert a.ws[0].tolist() == [5.0] and a.ws[1].tolist() == [1.0, 1.0]
    a.apply(lambda p: p * 0 + 2)
    assert a.x.weight.tolist() == [[2.0]] and a.ws[1].tolist() == [2.0, 2.0]
    assert a._hidden.tolist() == [0.0, 0.0]  # private: not a parameter
    a.set_dtype(mx.float16)
    assert a.x.weight.dtype == mx.float16
    a.set_dtype(mx.float32)
    assert a.x.weight.dtype == mx.float32

    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    m.update_modules({"layers": [nn.Identity()]})
    assert isinstance(m.layers[0], nn.Identity) and isinstance(m.layers[1], nn.Linear)
    with pytest.raises(ValueError, match="invalid type"):
        m.update_modules({"layers": [nn.Identity(), 5]})


def test_repr():
    a = Net()
    text = repr(a)
    assert text.splitlines()[0] == "Net("
    assert "  (y.1.q): Linear(input_dims=2, output_dims=2, bias=False)" in text
    assert "  (z): Sequential(\n    (layers.0): GELU()\n    (layers.1): Sequential(" in text
    assert "BatchNorm(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)" in text
    assert repr(nn.Conv2d(1, 2, 3)) == ("Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), "
                                        "padding=(0, 0), dilation=1, groups=1, bias=True)")
    assert repr(nn.Sequential()) == "Sequential()"


@pytest.mark.parametrize("ext", ["npz", "safetensors"])
def test_save_load_weights_round_trip(tmp_path, ext):
    a = Net()
    a.apply(lambda p: mx.random.normal(p.shape))
    path = str(tmp_path / f"w.{ext}")
    a.save_weights(path)
    b = Net()
    assert not np.array_equal(np.array(a.x.weight), np.array(b.x.weight))
    b.load_weights(path)
    for (k, x), (k2, y) in zip(tree_flatten(a.parameters()), tree_flatten(b.parameters())):
        assert k == k2 and x.dtype == y.dtype
        np.testing.assert_array_equal(np.array(x), np.array(y))
    with pytest.raises(ValueError, match="Unsupported file extension"):
        a.save_weights(str(tmp_path / "w.bin"))


def test_load_weights_checks():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    good = [("layers.0.weight", mx.ones((3, 2))), ("layers.0.bias", mx.ones(3)),
            ("layers.1.weight", mx.ones((1, 3))), ("layers.1.bias", mx.ones(1))]
    with pytest.raises(ValueError, match="Missing 1 parameters"):
        m.load_weights(good[:3])
    with pytest.raises(ValueError, match="not in model"):
        m.load_weights(good + [("extra", mx.zeros(1))])
    with pytest.raises(ValueError, match=r"Expected shape \(1, 3\)"):
        m.load_weights(good[:2] + [("layers.1.weight", mx.ones((3, 1)))] + good[3:])
    m.load_weights(good[:1], strict=False)
    assert m.layers[0].weight.tolist() == [[1.0, 1.0]] * 3
    m.load_weights(good)
    assert m.layers[1].bias.tolist() == [1.0]


def test_value_and_grad_matches_manual_gradient():
    mx.random.seed(3)
    model = nn.Linear(3, 2)
    x = mx.random.normal((5, 3))
    y = mx.random.normal((5, 2))

    def loss_fn(m, x, y):
        return nn.losses.mse_loss(m(x), y)

    loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
    W, b = np.array(model.weight), np.array(model.bias)
    xn, yn = np.array(x), np.array(y)
    r = xn @ W.T + b - yn
    assert abs(loss.item() - np.mean(r**2)) < 1e-5
    np.testing.assert_allclose(np.array(grads["weight"]), 2 * r.T @ xn / r.size, rtol=1e-5)
    np.testing.assert_allclose(np.array(grads["bias"]), 2 * r.sum(0) / r.size, rtol=1e-5)
    # Frozen parameters get no gradient.
    model.freeze(keys=["bias"])
    _, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
    assert list(grads) == ["weight"]
    # The model keeps usable parameters afterwards.
    assert model(x).shape == (5, 2)


def _emulated_compile(fn, inputs, outputs):
    """What mx.compile(inputs=state, outputs=state) does with the captured
    state, without the tracing: read the arrays of `inputs` before the
    call, and after it collect the arrays of `outputs` (which the function
    replaced in place) and evaluate them."""

    def wrapped(*args):
        before = [v for _, v in tree_flatten(inputs) if isinstance(v, mx.array)]
        out = fn(*args)
        after = [v for _, v in tree_flatten(outputs) if isinstance(v, mx.array)]
        mx.eval(out, after)
        return out, before, after

    return wrapped


def _seed_example():
    """The training setup of shared/seeds/compile.rst: a linear model, SGD
    with momentum, the step and the state list to capture."""
    mx.random.seed(0)
    x = mx.random.uniform(shape=(4, 10))
    y = mx.array([0, 1, 0, 1])
    model = nn.Linear(10, 1)
    optimizer = optim.SGD(learning_rate=0.1, momentum=0.8)

    def loss_fn(model, x, y):
        return nn.losses.binary_cross_entropy(model(x).squeeze(), y)

    def step(x, y):
        loss, grads = nn.value_and_grad(model, loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return loss

    return model, optimizer, [model.state, optimizer.state], step, x, y


def test_state_is_captured_in_place():
    """model.state and optimizer.state are live trees: the training step of
    shared/seeds/compile.rst updates them in place, so a state list built
    once before the loop sees every step's new arrays."""
    model, optimizer, state, step, x, y = _seed_example()
    run = _emulated_compile(step, state, state)
    losses = []
    for it in range(10):
        loss, before, after = run(x, y)
        losses.append(loss.item())
        assert state[0] is model and state[1] is optimizer.state
        # Every parameter and the step counter were replaced by new arrays.
        assert after[0] is not before[0]
        assert state[1]["step"].item() == it + 1
        assert state[1]["weight"]["v"].shape == (1, 10)
    assert losses[-1] < losses[0]


@pytest.mark.skipif(not _compat.implemented(mx, "compile"), reason="mx.compile has not landed in cmx")
def test_compiled_step_matches_eager():
    from functools import partial

    def run(compiled):
        model, _, state, step, x, y = _seed_example()
        if compiled:
            step = partial(mx.compile, inputs=state, outputs=state)(step)
        for _ in range(10):
            step(x, y)
            mx.eval(state)
        return model

    eager, comp = run(False), run(True)
    for (k, a), (_, b) in zip(tree_flatten(eager.parameters()), tree_flatten(comp.parameters())):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)


def test_tree_utils_with_modules():
    a = Net()
    doubled = tree_map(lambda p: p * 2, a.parameters())
    assert keys(doubled) == ALL
    flat = tree_flatten(a.parameters())
    rebuilt = tree_unflatten(flat)
    assert keys(rebuilt) == ALL
    assert isinstance(rebuilt["y"], list) and rebuilt["y"][0] == {}


def test_checkpoint_gives_same_gradients():
    mx.random.seed(1)
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    x = mx.random.normal((2, 5, 8))

    def loss(m, x):
        return m(x, None).sum()

    def loss_ckpt(m, x):
        return nn.utils.checkpoint(m)(x, None).sum()

    _, g1 = nn.value_and_grad(layer, loss)(layer, x)
    _, g2 = nn.value_and_grad(layer, loss_ckpt)(layer, x)
    for (k, a), (_, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-4, atol=1e-5)
    assert nn.average_gradients(g1) is g1
