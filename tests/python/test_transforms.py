"""Function transforms from Python: the documented examples of MLX's
transforms page, pytrees, argnums/argnames, aux outputs, composition,
custom_function, checkpoint, and errors."""

import math

import numpy as np
import pytest

import cmx.core as mx


def close(a, b, tol=1e-5):
    return np.allclose(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64), atol=tol, rtol=tol)


# ---------------------------------------------------------------- docs


def test_grad_of_sin_documented():
    dfdx = mx.grad(mx.sin)
    assert repr(dfdx(mx.array(mx.pi))) == "array(-1, dtype=float32)"
    d2fdx2 = mx.grad(mx.grad(mx.sin))
    assert repr(d2fdx2(mx.array(mx.pi / 2))) == "array(-1, dtype=float32)"


def loss_fn(w, x, y):
    return mx.mean(mx.square(w * x - y))


def test_loss_fn_argnums_documented():
    w = mx.array(1.0)
    x = mx.array([0.5, -0.5])
    y = mx.array([1.5, -1.5])
    dloss_dw = mx.grad(loss_fn)(w, x, y)
    # d/dw mean((w x - y)^2) = mean(2 (w x - y) x)
    want = np.mean(2 * (1.0 * np.array([0.5, -0.5]) - np.array([1.5, -1.5])) * np.array([0.5, -0.5]))
    assert close(dloss_dw, want)
    dloss_dx = mx.grad(loss_fn, argnums=1)(w, x, y)
    want_x = 2 * (np.array([0.5, -0.5]) - np.array([1.5, -1.5])) * 1.0 / 2
    assert close(dloss_dx, want_x)
    loss, dw = mx.value_and_grad(loss_fn)(w, x, y)
    assert close(loss, np.mean((np.array([0.5, -0.5]) - np.array([1.5, -1.5])) ** 2))
    assert close(dw, want)


def test_params_dict_documented():
    def loss(params, x, y):
        w, b = params["weight"], params["bias"]
        h = w * x + b
        return mx.mean(mx.square(h - y))

    params = {"weight": mx.array(1.0), "bias": mx.array(0.0)}
    x = mx.array([0.5, -0.5])
    y = mx.array([1.5, -1.5])
    grads = mx.grad(loss)(params, x, y)
    assert str(grads) == "{'weight': array(-1, dtype=float32), 'bias': array(0, dtype=float32)}"


def test_vmap_add_documented():
    xs = mx.random.uniform(shape=(4096, 100))
    ys = mx.random.uniform(shape=(100, 4096))

    def naive_add(xs, ys):
        return [xs[i] + ys[:, i] for i in range(xs.shape[1])]

    vmap_add = mx.vmap(lambda x, y: x + y, in_axes=(1, 0))
    out = vmap_add(xs, ys)
    assert out.shape == (100, 4096)
    assert close(out, np.array(xs).T + np.array(ys))


def test_in_place_update_gradient_documented():
    def fun(x, idx):
        x[idx] = 2.0
        return x.sum()

    dfdx = mx.grad(fun)(mx.array([1.0, 2.0, 3.0]), mx.array([1]))
    assert repr(dfdx) == "array([1, 0, 1], dtype=float32)"


def test_numpy_view_not_tracked_documented():
    def f(x):
        x_view = np.array(x, copy=False)
        x_view[:] *= x_view
        return x.sum()

    x = mx.array([3.0])
    y, df = mx.value_and_grad(f)(x)
    assert y.item() == 9.0
    assert df.item() == 1.0


# ---------------------------------------------------------------- grad API


def test_argnames_and_trees():
    def f(a, b, *, c):
        return (a[0] * b["k"] + c).sum()

    a = [mx.array([1.0, 2.0])]
    b = {"k": mx.array([3.0, 4.0])}
    c = mx.array([5.0, 6.0])
    (ga, gkw) = mx.grad(f, argnums=[0, 1], argnames="c")(a, b, c=c)
    assert isinstance(ga, tuple) and isinstance(ga[0], list)
    assert close(ga[0][0], [3.0, 4.0]) and close(ga[1]["k"], [1.0, 2.0])
    assert close(gkw["c"], [1.0, 1.0])
    pos, named = mx.grad(f, argnames=["c"])(a, b, c=c)
    assert pos is None and close(named["c"], [1.0, 1.0])


def test_value_and_grad_aux():
    def f(x):
        return (x * x).sum(), {"sq": x * x, "label": "hi"}

    (loss, aux), g = mx.value_and_grad(f)(mx.array([1.0, 2.0]))
    assert loss.item() == 5.0
    assert aux["label"] == "hi" and close(aux["sq"], [1.0, 4.0])
    assert close(g, [2.0, 4.0])


def test_grad_errors():
    with pytest.raises(ValueError, match="scalar array"):
        mx.grad(lambda x: x * 2)(mx.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="Invalid argument"):
        mx.grad(lambda x: x.sum(), argnums=3)(mx.array([1.0]))
    with pytest.raises(ValueError, match="arrays"):
        mx.grad(lambda x: x)("not an array")
    with pytest.raises(ValueError, match="scalar array or a tuple"):
        mx.grad(lambda x: "nope")(mx.array(1.0))

    class Boom(Exception):
        pass

    def bad(x):
        raise Boom("inside")

    with pytest.raises(Boom, match="inside"):
        mx.grad(bad)(mx.array(1.0))


def test_stop_gradient():
    g = mx.grad(lambda x: (mx.stop_gradient(x) * x).sum())(mx.array([2.0, 3.0]))
    assert close(g, [2.0, 3.0])


def test_vjp_jvp():
    x = mx.array([0.1, 0.2])
    outs, vjps = mx.vjp(lambda a: mx.sin(a), [x], [mx.array([1.0, 2.0])])
    assert close(vjps[0], np.cos([0.1, 0.2]) * [1.0, 2.0])
    outs, jvps = mx.jvp(lambda a: mx.sin(a), [x], [mx.array([1.0, 2.0])])
    assert close(jvps[0], np.cos([0.1, 0.2]) * [1.0, 2.0])
    assert close(outs[0], np.sin([0.1, 0.2]))


def test_compositions():
    x = mx.array([0.3, 0.7, 1.1])
    # vmap of grad: per-element derivative of sin.
    g = mx.vmap(mx.grad(mx.sin))(x)
    assert close(g, np.cos(np.array(x)))
    # grad of vmap.
    g2 = mx.grad(lambda v: mx.vmap(mx.sin)(v).sum())(x)
    assert close(g2, np.cos(np.array(x)))
    # jvp of vjp: the vjp is linear in the cotangent.
    def vjp_fn(c):
        return mx.vjp(mx.sin, [x], [c])[1][0]

    _, t = mx.jvp(vjp_fn, [mx.ones((3,))], [mx.ones((3,))])
    assert close(t[0], np.cos(np.array(x)))


def test_vmap_trees_and_axes():
    x = mx.arange(6, dtype=mx.float32).reshape(2, 3)
    out = mx.vmap(lambda d: d["a"] * 2, in_axes=({"a": 1},))({"a": x})
    assert close(out, (np.arange(6).reshape(2, 3) * 2).T)
    o1, o2 = mx.vmap(lambda a: (a, a.sum()), in_axes=0, out_axes=(1, 0))(x)
    assert o1.shape == (3, 2) and o2.shape == (2,)
    with pytest.raises(ValueError):
        mx.vmap(lambda a, b: a + b, in_axes=(0, 0))(mx.ones((2,)), mx.ones((3,)))


def test_eval_inside_vmap_is_an_error():
    def f(a):
        return mx.array(a.sum().item())

    with pytest.raises(ValueError, match="eval"):
        mx.vmap(f)(mx.ones((2, 2)))


# ---------------------------------------------------------------- custom


def test_custom_function_documented():
    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        x, y = primals
        return cotangent * mx.cos(x) * y, cotangent * mx.sin(x)

    @f.jvp
    def f_jvp(primals, tangents):
        x, y = primals
        dx, dy = tangents
        return dx * mx.cos(x) * y + dy * mx.sin(x)

    @f.vmap
    def f_vmap(inputs, axes):
        x, y = inputs
        ax, ay = axes
        if ay != ax and ax is not None:
            y = y.swapaxes(ay, ax)
        return mx.sin(x) * y, (ax or ay)

    x = mx.array([0.5, 1.0])
    y = mx.array([2.0, 3.0])
    gx, gy = mx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    assert close(gx, np.cos([0.5, 1.0]) * [2.0, 3.0])
    assert close(gy, np.sin([0.5, 1.0]))
    _, t = mx.jvp(f, [x, y], [mx.ones((2,)), mx.zeros((2,))])
    assert close(t[0], np.cos([0.5, 1.0]) * [2.0, 3.0])
    out = mx.vmap(f)(mx.ones((3, 2)), mx.ones((3, 2)))
    assert out.shape == (3, 2) and close(out, np.sin(np.ones((3, 2))))


def test_custom_vjp_is_used():
    @mx.custom_function
    def f(x):
        return x * 1.0

    @f.vjp
    def f_vjp(primals, cotangent, output):
        return (cotangent * 10,)

    assert close(mx.grad(lambda x: f(x).sum())(mx.array([1.0, 2.0])), [10.0, 10.0])


def test_checkpoint_same_gradients():
    w1 = mx.random.normal((8, 8))
    w2 = mx.random.normal((8, 8))

    def block(x):
        return mx.tanh(x @ w1) @ w2

    def loss(x, ck):
        f = mx.checkpoint(block) if ck else block
        return f(x).sum()

    x = mx.random.normal((4, 8))
    g1 = mx.grad(loss)(x, False)
    g2 = mx.grad(loss)(x, True)
    assert close(g1, g2, 1e-5)
