"""Function transforms from Python, against MLX's documented behaviour: the
examples of MLX's transforms, indexing and NumPy pages with their printed
outputs, grad/value_and_grad (argnums, argnames, pytrees, aux outputs,
errors), vjp/jvp, and vmap (in_axes/out_axes trees, errors).

custom_function, checkpoint, compositions and numerical gradients are in
test_transforms_grads.py."""

import numpy as np
import pytest

import cmx.core as mx


def close(a, b, tol=1e-5):
    return np.allclose(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64), atol=tol, rtol=tol)


def uniform(shape, seed=0):
    return mx.array(np.random.default_rng(seed).uniform(size=shape).astype(np.float32))


# ---------------------------------------------------------------- documented examples


def test_grad_of_sin_documented():
    dfdx = mx.grad(mx.sin)
    assert repr(dfdx(mx.array(mx.pi))) == "array(-1, dtype=float32)"
    assert repr(mx.cos(mx.array(mx.pi))) == "array(-1, dtype=float32)"
    d2fdx2 = mx.grad(mx.grad(mx.sin))
    assert repr(d2fdx2(mx.array(mx.pi / 2))) == "array(-1, dtype=float32)"
    assert repr(mx.sin(mx.array(mx.pi / 2))) == "array(1, dtype=float32)"


def loss_fn(w, x, y):
    return mx.mean(mx.square(w * x - y))


W = mx.array(1.0)
X = mx.array([0.5, -0.5])
Y = mx.array([1.5, -1.5])


def test_loss_fn_documented():
    grad_fn = mx.grad(loss_fn)
    assert str(grad_fn(W, X, Y)) == "array(-1, dtype=float32)"
    grad_fn = mx.grad(loss_fn, argnums=1)
    assert str(grad_fn(W, X, Y)) == "array([-1, 1], dtype=float32)"
    loss_and_grad_fn = mx.value_and_grad(loss_fn)
    loss, dloss_dw = loss_and_grad_fn(W, X, Y)
    assert str(loss) == "array(1, dtype=float32)"
    assert str(dloss_dw) == "array(-1, dtype=float32)"


def test_params_dict_documented():
    def loss_fn(params, x, y):
        w, b = params["weight"], params["bias"]
        h = w * x + b
        return mx.mean(mx.square(h - y))

    params = {"weight": mx.array(1.0), "bias": mx.array(0.0)}
    grads = mx.grad(loss_fn)(params, X, Y)
    assert str(grads) == "{'weight': array(-1, dtype=float32), 'bias': array(0, dtype=float32)}"


def test_vmap_add_documented():
    xs = uniform((4096, 100))
    ys = uniform((100, 4096), seed=1)

    def naive_add(xs, ys):
        return [xs[i] + ys[:, i] for i in range(xs.shape[1])]

    vmap_add = mx.vmap(lambda x, y: x + y, in_axes=(1, 0))
    out = vmap_add(xs, ys)
    assert out.shape == (100, 4096) and out.dtype == mx.float32
    want = np.array(xs).T + np.array(ys)
    assert np.array_equal(np.array(out), want)
    # The page's naive loop (as written there it adds rows of xs to columns
    # of ys, 100 arrays of shape (100,)).
    naive = naive_add(xs, ys)
    assert len(naive) == 100 and naive[7].shape == (100,)
    assert np.array_equal(np.array(naive[7]), np.array(xs)[7] + np.array(ys)[:, 7])


def test_in_place_update_gradient_documented():
    def fun(x, idx):
        x[idx] = 2.0
        return x.sum()

    dfdx = mx.grad(fun)(mx.array([1.0, 2.0, 3.0]), mx.array([1]))
    assert repr(dfdx) == "array([1, 0, 1], dtype=float32)"

    # The captured-array form of MLX's tests.
    y = mx.array([0.0, 1.0, 2.0])

    def fun2(x, idx):
        y[idx] = x
        return y.sum()

    g = mx.grad(fun2)(mx.array([2.0]), mx.array([1]))
    assert repr(g) == "array([1], dtype=float32)"


def test_numpy_view_not_tracked_documented():
    def f(x):
        x_view = np.array(x, copy=False)
        x_view[:] *= x_view  # modify memory without telling mx
        return x.sum()

    x = mx.array([3.0])
    y, df = mx.value_and_grad(f)(x)
    assert y.item() == 9.0
    assert df.item() == 1.0


def test_value_and_grad_docstring_examples():
    w = mx.array([[1.0, -2.0], [0.5, 3.0]])

    def forward(params, inputs):
        return inputs @ params["w"]

    inputs = mx.array([[1.0, 2.0], [3.0, 4.0]])
    targets = mx.array([[0.0, 1.0], [1.0, 0.0]])

    def mse(params, inputs, targets):
        outputs = forward(params, inputs)
        return (outputs - targets).square().mean()

    lvalue, grads = mx.value_and_grad(mse)({"w": w}, inputs, targets)
    out = np.array(inputs) @ np.array(w)
    r = out - np.array(targets)
    assert close(lvalue, (r**2).mean())
    assert close(grads["w"], np.array(inputs).T @ (2 * r / r.size))

    def lasso(params, inputs, targets, a=1.0, b=1.0):
        outputs = forward(params, inputs)
        mse = (outputs - targets).square().mean()
        l1 = mx.abs(outputs - targets).mean()
        return a * mse + b * l1, mse, l1

    (loss, m, l1), grads = mx.value_and_grad(lasso)({"w": w}, inputs, targets)
    assert close(m, (r**2).mean()) and close(l1, np.abs(r).mean())
    assert close(loss, (r**2).mean() + np.abs(r).mean())
    want = np.array(inputs).T @ (2 * r / r.size + np.sign(r) / r.size)
    assert close(grads["w"], want)


# ---------------------------------------------------------------- grad API


def test_grad_basics_and_argnums():
    fun = lambda x: x * x
    value, dfdx = mx.value_and_grad(fun)(mx.array(0.5))
    assert value.item() == 0.25 and dfdx.item() == 1.0
    fun = lambda x, y: x * y
    x, y = mx.array(2.0), mx.array(3.0)
    assert mx.grad(fun, argnums=0)(x, y).item() == 3.0
    assert mx.grad(fun, argnums=1)(x, y).item() == 2.0
    g = mx.grad(fun, argnums=(0, 1))(x, y)
    assert isinstance(g, tuple) and [v.item() for v in g] == [3.0, 2.0]
    g = mx.grad(fun, argnums=[0, 1])(x, y)
    assert isinstance(g, tuple) and [v.item() for v in g] == [3.0, 2.0]
    # MLX sorts argnums: the gradients come in argument order.
    g = mx.grad(fun, argnums=(1, 0))(x, y)
    assert [v.item() for v in g] == [3.0, 2.0]
    # Non-array arguments that are not differentiated are fine.
    value, dfdx = mx.value_and_grad(lambda x, s: x)(mx.array(2.0), "hello")
    assert value.item() == 2.0 and dfdx.item() == 1.0
    assert mx.grad(lambda x, s: x)(mx.array(2.0), "hello").item() == 1.0


def test_grad_argnum_errors():
    fun = lambda x: x
    with pytest.raises(ValueError, match=r"^\[grad\] Can't compute the gradient of argument index 2 because the function is called with only 1 positional arguments\.$"):
        mx.grad(fun, argnums=2)(mx.array(2.0))
    with pytest.raises(ValueError, match=r"^\[grad\] Can't compute the gradient of negative argument index -2$"):
        mx.grad(fun, argnums=-2)
    with pytest.raises(ValueError, match=r"^\[value_and_grad\] Duplicate argument index 0 is not allowed\.$"):
        mx.value_and_grad(fun, argnums=(0, 0))
    with pytest.raises(ValueError, match=r"^\[value_and_grad\] Gradient wrt no argument requested$"):
        mx.value_and_grad(fun, tuple())
    with pytest.raises(TypeError):
        mx.value_and_grad(fun, (None, None))
    with pytest.raises(TypeError):
        mx.grad(fun, argnums=1.0)
    with pytest.raises(TypeError):
        mx.grad(fun, argnames=3)
    with pytest.raises(TypeError):
        mx.grad(3)


def test_grad_non_array_leaves():
    with pytest.raises(ValueError, match=r"^\[tree_flatten\] The argument should contain only arrays$"):
        mx.grad(lambda x: x)("hello")
    fun = lambda p: p["x"] * p["y"]
    with pytest.raises(ValueError, match="tree_flatten"):
        mx.value_and_grad(fun)({"x": 0.5, "y": mx.array(2.0)})
    with pytest.raises(ValueError):
        mx.value_and_grad(fun, (0, 1))({"x": mx.array(0.5), "y": mx.array(2.0)})


def test_grad_return_value_errors():
    with pytest.raises(ValueError, match=r"^\[grad\] The return value of the function whose gradient we want to compute should be a scalar array; but str was returned\.$"):
        mx.grad(lambda x: "hello")(mx.array(2.0))
    # grad accepts only an array, value_and_grad also (array, aux...) tuples.
    with pytest.raises(ValueError, match=r"should be a scalar array; but tuple was returned"):
        mx.grad(lambda x: (x, x))(mx.array(2.0))
    with pytest.raises(ValueError, match=r"^\[value_and_grad\] .*Union\[array, tuple\[array, Any, \.\.\.\]\]\); but list was returned\.$"):
        mx.value_and_grad(lambda x: [x, x])(mx.array(2.0))
    with pytest.raises(ValueError, match=r"we got an empty tuple\.$"):
        mx.value_and_grad(lambda x: ())(mx.array(2.0))
    with pytest.raises(ValueError, match=r"but it was a tuple with the first value being of type float \.$"):
        mx.value_and_grad(lambda x: (1.0, x))(mx.array(2.0))


def test_grad_non_scalar_outputs():
    # MLX's ValueError, with a message that says what grad needs (issue 20:
    # MLX's own text speaks of a cotangent the user never gave).
    msg = (r"^\[grad\] The function to differentiate must return a scalar "
           r"\(a 0-d array\), but its output has shape \(2\)")
    with pytest.raises(ValueError, match=msg):
        mx.grad(lambda x: x * 2)(mx.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"output has shape \(1,1\).*mx\.sum"):
        mx.grad(lambda x: mx.sum(x, keepdims=True))(mx.ones((2, 2)))
    with pytest.raises(ValueError, match=r"^\[value_and_grad\] .*shape \(1\)"):
        mx.value_and_grad(lambda x: (mx.sum(x, keepdims=True), x))(mx.ones((2,)))


def test_grad_trees():
    fun = lambda x, y: x * y
    value, dfdx = mx.value_and_grad(fun, (0, 1))(mx.array(0.5), mx.array(2.0))
    assert value.item() == 1.0 and isinstance(dfdx, tuple)
    assert dfdx[0].item() == 2.0 and dfdx[1].item() == 0.5
    value, dfdx = mx.value_and_grad(fun, 1)(mx.array(0.5), mx.array(2.0))
    assert dfdx.item() == 0.5

    fun = lambda p, b: mx.square(p[0]["foo"][2]) * b
    value, dfdx = mx.value_and_grad(fun)([{"foo": [[], [], mx.array(2.0)]}], mx.array(0.5))
    assert value.item() == 2.0
    assert dfdx[0]["foo"][2].item() == 2.0
    assert dfdx[0]["foo"][:2] == [[], []]

    # Structures kept: tuples stay tuples, lists lists; dict subclasses
    # come back as plain dicts (as MLX's tree_map builds them).
    class Params(dict):
        pass

    p = Params(a=(mx.array(1.0), [mx.array(2.0)]), b=mx.array(3.0))
    g = mx.grad(lambda p: p["a"][0] * p["a"][1][0] * p["b"])(p)
    assert type(g) is dict and isinstance(g["a"], tuple) and isinstance(g["a"][1], list)
    assert [g["a"][0].item(), g["a"][1][0].item(), g["b"].item()] == [6.0, 3.0, 2.0]


def test_grad_kwargs():
    fun = lambda x, y: x * y
    a, b = mx.array(0.5), mx.array(2.0)
    dfdx = mx.grad(fun)
    assert dfdx(a, b).item() == 2.0
    assert dfdx(a, y=b).item() == 2.0
    with pytest.raises(ValueError, match="argument index 0"):
        dfdx(x=a, y=b)

    dfdy = mx.grad(fun, argnums=[], argnames=["y"])
    with pytest.raises(ValueError, match=r"^\[grad\] Can't compute the gradient of keyword argument 'y' because the function is called with the following keyword arguments \{\}$"):
        dfdy(a, b)
    grads = dfdy(a, y=b)
    assert isinstance(grads, tuple) and grads[0] is None
    assert isinstance(grads[1], dict) and grads[1]["y"].item() == 0.5
    grads = dfdy(x=a, y=b)
    assert grads[1]["y"].item() == 0.5 and len(grads[1]) == 1
    with pytest.raises(ValueError, match=r"keyword arguments \{x,\}$"):
        dfdy(x=a)

    dfdxy = mx.grad(fun, argnums=[0], argnames=["y"])
    with pytest.raises(ValueError):
        dfdxy(a, b)
    with pytest.raises(ValueError):
        dfdxy(x=a, y=b)
    grads = dfdxy(a, y=b)
    assert grads[0].item() == 2.0 and grads[1]["y"].item() == 0.5

    fun = lambda x, y, z: x * y * z
    grads = mx.grad(fun, argnums=[0, 1], argnames="z")(a, b, z=mx.array(4.0))
    assert isinstance(grads[0], tuple)
    assert [grads[0][0].item(), grads[0][1].item(), grads[1]["z"].item()] == [8.0, 2.0, 1.0]
    # Keyword gradients in the order of the call; a tree for a tree.
    f = lambda *, u, v: (u["k"] * v).sum()
    grads = mx.grad(f, argnames=["u", "v"])(v=mx.array([1.0, 2.0]), u={"k": mx.array([3.0, 4.0])})
    assert list(grads[1]) == ["v", "u"]
    assert close(grads[1]["u"]["k"], [1.0, 2.0]) and close(grads[1]["v"], [3.0, 4.0])


def test_value_and_grad_aux():
    def fun(x, y):
        l = (x * y).sum()
        extra = {"loss": l, "foo": y.square() + x.square(), "bar": [1, 2, 3, y, x]}
        return l, extra

    (loss, a), b = mx.value_and_grad(fun)(mx.ones((2, 2)), mx.ones((2, 2)))
    assert loss.item() == 4 and a["loss"].item() == 4
    assert mx.array_equal(b, mx.ones((2, 2)))
    assert mx.array_equal(a["foo"], 2 * mx.ones((2, 2)))
    assert a["bar"][:3] == [1, 2, 3]
    assert mx.array_equal(a["bar"][3], mx.ones((2, 2)))
    with pytest.raises(ValueError):
        mx.grad(fun)(mx.ones((2, 2)), mx.ones((2, 2)))

    # Aux outputs carry no gradient into the loss's.
    (l, sq), g = mx.value_and_grad(lambda x: ((x * x).sum(), x * x))(mx.array([1.0, 2.0]))
    assert close(sq, [1.0, 4.0]) and close(g, [2.0, 4.0])


def test_grad_in_place_on_argument_containers():
    # Assignments into argument lists stay (MLX fills them in place).
    def loss_fn(model):
        model[1] = mx.array(2.0)
        return model[0]

    model = [mx.array(0.0), mx.array(1.0)]
    mx.grad(loss_fn)(model)
    assert model[1].item() == 2.0

    # Untouched slots get their original arrays back, same objects.
    arrs = [mx.array(1.0)]
    init = arrs[0]
    mx.grad(lambda arrs: arrs[0])(arrs)
    assert arrs[0] is init

    # The same array three times: three leaves.
    a = mx.array(2.0)
    grads = mx.grad(lambda arrays: arrays[0] + arrays[2])([a, a, a])
    assert [g.item() for g in grads] == [1.0, 0.0, 1.0]

    # Originals are back even when the function raises.
    d = {"w": mx.array(1.0), "t": (mx.array(2.0),)}
    w0, t0 = d["w"], d["t"]

    def boom(d):
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):
        mx.grad(boom)(d)
    assert d["w"] is w0 and d["t"] is t0


def test_grad_captured_and_state():
    a = mx.array(5.0)
    assert mx.grad(lambda x: a + x)(a).item() == 1.0
    assert mx.grad(lambda x: a + a)(a).item() == 0.0
    assert mx.grad(lambda x: x + x)(a).item() == 2.0
    assert mx.grad(mx.grad(lambda x: a + x))(a).item() == 0.0

    state = mx.zeros((2,))

    def fn(y, x):
        nonlocal state
        x = y * x
        state = state + x
        return x.sum()

    mx.grad(fn)(mx.array([1.0]), mx.ones((2,)))
    mx.eval(state)
    assert close(state, [1.0, 1.0])


def test_grad_exceptions_propagate_unchanged():
    class Boom(Exception):
        pass

    def bad(x):
        raise Boom("inside")

    with pytest.raises(Boom, match="inside"):
        mx.grad(bad)(mx.array(1.0))
    with pytest.raises(Boom):
        mx.vmap(bad)(mx.ones((2,)))
    with pytest.raises(Boom):
        mx.grad(mx.grad(bad))(mx.array(1.0))
    # A later, unrelated error is reported as itself.
    with pytest.raises(ValueError, match="cotangent"):
        mx.vjp(mx.sin, [mx.ones((2,))], [mx.ones((3,))])


def test_grad_dtypes():
    for t in [mx.float16, mx.bfloat16, mx.float32, mx.float64]:
        assert mx.grad(lambda x: x)(mx.array(1.0, t)).dtype == t
        assert mx.grad(lambda x: x.sum())(mx.array(1.0, t)).dtype == t
        assert mx.grad(lambda x, y: (x + y).sum())(mx.array(1.0, t), mx.array(1.0, t)).dtype == t


def test_integer_and_bool_inputs():
    # Integer and boolean inputs are constants for differentiation: their
    # gradients are zeros of their own dtype, and gradients of the other
    # inputs are unaffected.
    gi, gf = mx.grad(lambda i, f: (i * f).sum(), argnums=(0, 1))(mx.array([1, 2, 3]), mx.array([1.0, 2.0, 3.0]))
    assert gi.dtype == mx.int32 and gi.tolist() == [0, 0, 0]
    assert gf.dtype == mx.float32 and gf.tolist() == [1.0, 2.0, 3.0]
    gb = mx.grad(lambda b, f: (b * f).sum())(mx.array([True, False]), mx.array([1.0, 2.0]))
    assert gb.dtype == mx.bool_ and gb.tolist() == [False, False]
    # An integer input used through a float op still gets no gradient.
    g = mx.grad(lambda i: mx.mean(i))(mx.array([1, 2, 3]))
    assert g.dtype == mx.int32 and g.tolist() == [0, 0, 0]
    # vjp and jvp of integer primals.
    _, (v,) = mx.vjp(lambda i: i * 2, [mx.array([1, 2])], [mx.array([1, 1])])
    assert v.tolist() == [0, 0]
    _, (t,) = mx.jvp(lambda i, f: i * f, [mx.array([1, 2]), mx.array([1.0, 1.0])], [mx.array([1, 1]), mx.array([1.0, 2.0])])
    assert t.tolist() == [1.0, 4.0]


# ---------------------------------------------------------------- vjp / jvp


def test_jvp():
    out, dout = mx.jvp(lambda x: 2 * x, [mx.array(1.0)], [mx.array(2.0)])
    assert out[0].item() == 2.0 and dout[0].item() == 4.0
    _, out = mx.jvp(lambda x, y: x * y, [mx.array(4.0), mx.array(2.0)], [mx.array(3.0), mx.array(2.0)])
    assert out[0].item() == 4.0 * 2.0 + 2.0 * 3.0
    fun = lambda x, y, z: (x * y, y * z)
    _, out = mx.jvp(fun, [mx.array(2.0), mx.array(4.0), mx.array(6.0)], [mx.array(1.0), mx.array(3.0), mx.array(1.0)])
    assert len(out) == 2 and out[0].item() == 10.0 and out[1].item() == 22.0
    # Tuples are accepted for the lists.
    (o,), (t,) = mx.jvp(mx.sin, (mx.array(0.0),), (mx.array(1.0),))
    assert o.item() == 0.0 and t.item() == 1.0
    with pytest.raises(ValueError, match=r"^\[jvp\] Number of inputs does not match number of tangents\.$"):
        mx.jvp(mx.sin, [mx.array(1.0)], [])
    with pytest.raises(ValueError, match=r"^\[jvp\] Input shape does not match shape of tangent\.$"):
        mx.jvp(mx.sin, [mx.array(1.0)], [mx.ones((2,))])
    with pytest.raises(TypeError):
        mx.jvp(mx.sin, [1.0], [mx.array(1.0)])


def test_vjp():
    out, dout = mx.vjp(lambda x: 2 * x, [mx.array(1.0)], [mx.array(2.0)])
    assert out[0].item() == 2.0 and dout[0].item() == 4.0
    _, dout = mx.vjp(lambda x, y: x * y, [mx.array(4.0), mx.array(2.0)], [mx.array(3.0)])
    assert dout[0].item() == 6.0 and dout[1].item() == 12.0
    fun = lambda x, y, z: (x * y, y * z)
    _, out = mx.vjp(fun, [mx.array(2.0), mx.array(4.0), mx.array(6.0)], [mx.array(1.0), mx.array(3.0)])
    assert [o.item() for o in out] == [4.0, 20.0, 12.0]
    with pytest.raises(ValueError, match=r"^\[vjp\] Output shape \(2\) does not match cotangent shape \(3\)\.$"):
        mx.vjp(mx.sin, [mx.ones((2,))], [mx.ones((3,))])
    with pytest.raises(ValueError, match=r"^\[vjp\] Number of outputs to compute gradients for \(2\) does not match number of cotangents \(1\)\.$"):
        mx.vjp(lambda x: (x, x), [mx.ones((2,))], [mx.ones((2,))])
    with pytest.raises(TypeError):
        mx.vjp(lambda x: "no", [mx.ones((2,))], [mx.ones((2,))])


def test_stop_gradient():
    w_in = mx.ones((4, 4))
    x_in = mx.ones((4, 4))
    cotan = mx.ones((4, 4))

    def h(w, x):
        x1 = 2 * x
        y = mx.stop_gradient(x1)
        y1 = 3 * y
        return w @ y1

    _, vjps = mx.vjp(h, [w_in, x_in], [cotan])
    assert close(vjps[0], 24.0 * np.ones((4, 4))) and close(vjps[1], np.zeros((4, 4)))
    _, vjps = mx.vjp(lambda x: h(w_in, x), [x_in], [cotan])
    assert close(vjps[0], np.zeros((4, 4)))
    g = mx.grad(lambda x: (mx.stop_gradient(x) * x).sum())(mx.array([2.0, 3.0]))
    assert close(g, [2.0, 3.0])


def test_eval_inside_grad():
    arr = mx.array([1.0])
    cotan = mx.array([1.0, 1.0])
    y = mx.array([2.0, 2.0])

    def func(x):
        x = x + y
        cond = x < 1
        cond.tolist()
        return x**2

    _, vjps = mx.vjp(func, (arr,), (cotan,))
    assert vjps[0].item() == 12.0

    def func2(x):
        x = x + mx.array([1.0, 1.0])
        mx.eval(x)
        return x**2

    _, vjps = mx.vjp(func2, (arr,), (cotan,))
    assert vjps[0].item() == 8.0


# ---------------------------------------------------------------- vmap


def test_vmap_basics_and_errors():
    with pytest.raises(IndexError, match=r"^\[vmap\] Invalid vectorization axis 0 for array with shape \(\)$"):
        mx.vmap(mx.exp)(mx.array(1.0))
    with pytest.raises(ValueError, match="tree_flatten"):
        mx.vmap(mx.exp)("hello")
    with pytest.raises(ValueError, match=r"^\[vmap\] axis must be int or None\.$"):
        mx.vmap(mx.exp, in_axes="hello")(mx.array([0, 1]))
    with pytest.raises(IndexError, match=r"^\[vmap\] Invalid vectorization axis 2 for array with shape \(2\)$"):
        mx.vmap(mx.exp, in_axes=2)(mx.array([0, 1]))
    with pytest.raises(ValueError, match=r"axis must be int or None"):
        mx.vmap(mx.exp, out_axes="hello")(mx.array([0, 1]))
    with pytest.raises(IndexError, match=r"^\[vmap\] Invalid output vectorization axis 2 for array with shape \(\)$"):
        mx.vmap(mx.exp, out_axes=2)(mx.array([0, 1]))
    with pytest.raises(ValueError, match=r"^\[vmap\] Inconsistent axis sizes: 10 and 1\.$"):
        mx.vmap(lambda x, y: x + y)(mx.ones((10, 1)), mx.ones((1, 1, 1, 5)))
    with pytest.raises(ValueError, match="Inconsistent axis sizes"):
        mx.vmap(lambda x, y: x + y, in_axes=(0, 1))(mx.ones((10, 1)), mx.ones((10, 5)))
    # A list is not a prefix of the argument tuple (MLX).
    with pytest.raises(ValueError, match=r"not a valid prefix"):
        mx.vmap(lambda x, y: x + y, in_axes=[0, 0])(mx.ones((2,)), mx.ones((2,)))
    with pytest.raises(ValueError, match="non-None"):
        mx.vmap(lambda x, y: x + y, in_axes=(None, None))(mx.ones((2,)), mx.ones((2,)))
    # out_axes None: the output must not depend on a vectorized input.
    with pytest.raises(ValueError, match="out_axes is None"):
        mx.vmap(mx.exp, out_axes=None)(mx.ones((2,)))
    with pytest.raises(TypeError):
        mx.vmap(mx.exp)(x=mx.ones((2,)))
    # Negative axes count from the end.
    x = mx.arange(6).reshape(2, 3)
    assert mx.vmap(lambda v: v * 2, in_axes=-1, out_axes=-1)(x).tolist() == (np.arange(6).reshape(2, 3) * 2).tolist()


def test_vmap_unary_binary():
    for op in [mx.abs, mx.cos, mx.exp, mx.negative, mx.square, mx.sigmoid, mx.sin]:
        x = mx.arange(8, dtype=mx.float32).reshape(2, 4)
        assert mx.array_equal(mx.vmap(op)(x), op(x))
        assert mx.array_equal(mx.vmap(op, in_axes=1, out_axes=1)(x), op(x))
    for op in [mx.add, mx.divide, mx.greater, mx.maximum, mx.multiply, mx.power, mx.subtract]:
        x = uniform((2, 4))
        y = uniform((2, 4), seed=1)
        assert mx.array_equal(mx.vmap(op)(x, y), op(x, y))
        assert mx.array_equal(mx.vmap(op, in_axes=(0, 0), out_axes=0)(x, y), op(x, y))
        yt = uniform((4, 2), seed=2)
        assert mx.array_equal(mx.vmap(op, in_axes=(0, 1))(x, yt), op(x, yt.T))
        assert mx.array_equal(mx.vmap(op, in_axes=(0, 1), out_axes=1)(x, yt), op(x, yt.T).T)


def test_vmap_trees():
    def my_fun(tree):
        return (tree["a"] + tree["b"][0]) * tree["b"][1]

    tree = {"a": uniform((2, 4)), "b": (uniform((2, 4), 1), uniform((2, 4), 2))}
    want = my_fun(tree)
    assert mx.array_equal(mx.vmap(my_fun)(tree), want)
    with pytest.raises(ValueError, match="axis must be int or None"):
        mx.vmap(my_fun, in_axes={"a": 0, "b": ((0, 0), 0)}, out_axes=0)(tree)
    assert mx.array_equal(mx.vmap(my_fun, in_axes={"a": 0, "b": 0})(tree), want)
    assert mx.array_equal(mx.vmap(my_fun, in_axes={"a": 0, "b": (0, 0)})(tree), want)
    with pytest.raises(ValueError, match="prefix"):
        mx.vmap(my_fun, in_axes={"a": 0})(tree)

    tree = {"a": uniform((2, 4)), "b": (uniform((4, 2), 1), uniform((4, 2), 2))}
    out = mx.vmap(my_fun, in_axes={"a": 0, "b": (1, 1)})(tree)
    assert mx.array_equal(out, (tree["a"] + tree["b"][0].T) * tree["b"][1].T)

    def my_fun2(x, y):
        return {"a": x + y, "b": x * y}

    x, y = uniform((2, 4)), uniform((2, 4), 1)
    out = mx.vmap(my_fun2, in_axes=0, out_axes=0)(x, y)
    assert mx.array_equal(out["a"], x + y) and mx.array_equal(out["b"], x * y)
    with pytest.raises(ValueError):
        mx.vmap(my_fun2, in_axes=0, out_axes=(0, 1))(x, y)
    with pytest.raises(ValueError):
        mx.vmap(my_fun2, in_axes=0, out_axes={"a": 0, "c": 1})(x, y)
    out = mx.vmap(my_fun2, in_axes=0, out_axes={"a": 1, "b": 0})(x, y)
    assert mx.array_equal(out["a"].T, x + y) and mx.array_equal(out["b"], x * y)

    # Lists of outputs, tuples of outputs, one-element-tuple axes.
    o1, o2 = mx.vmap(lambda a: (a, a.sum()), in_axes=0, out_axes=(1, 0))(x)
    assert o1.shape == (4, 2) and o2.shape == (2,)
    outs = mx.vmap(lambda a: [a * 2, [a + 1]])(x)
    assert isinstance(outs, list) and isinstance(outs[1], list)
    assert mx.array_equal(outs[1][0], x + 1)
    assert mx.vmap(lambda v: v.sum(axis=0), in_axes=(1,))(mx.ones((5, 3, 2))).shape == (3, 2)
    out = mx.vmap(mx.matmul, in_axes=(1, None), out_axes=(1,))(uniform((2, 3, 4)), uniform((4, 2), 1))
    assert out.shape == (2, 3, 2)
    # A one-element tuple axis is for a single array only.
    with pytest.raises(ValueError, match="axis must be int or None"):
        mx.vmap(lambda a, b: a + b, in_axes=((0,), 0))(x, y)


def test_vmap_const_func_and_unmapped():
    a = uniform((2, 3, 4))
    b = uniform((4, 3), 1)

    def const_func(a, b):
        return mx.array(2)

    assert mx.array_equal(mx.vmap(const_func, in_axes=(0, None))(a, b), mx.full((2,), 2))
    assert mx.array_equal(mx.vmap(const_func, in_axes=(None, 0))(a, b), mx.full((4,), 2))
    assert mx.array_equal(mx.vmap(const_func, in_axes=(1, 1))(a, b), mx.full((3,), 2))
    with pytest.raises(ValueError):
        mx.vmap(const_func, in_axes=(None, None))(a, b)
    with pytest.raises(ValueError):
        mx.vmap(const_func, in_axes=(0, 0))(a, b)
    # An unmapped argument is passed whole.
    out = mx.vmap(lambda x, w: x @ w, in_axes=(0, None))(a, uniform((4, 5), 2))
    assert out.shape == (2, 3, 5)


def test_vmap_nested_and_reductions():
    a = mx.arange(16).reshape(2, 2, 4)
    assert mx.allclose(mx.vmap(mx.vmap(mx.mean))(a), mx.mean(a, axis=2))
    x = uniform((3, 4, 5))
    y = uniform((3, 4, 5), 1)
    out = mx.vmap(mx.vmap(lambda u, v: u * v + 1, in_axes=(1, 1)), in_axes=(0, 0))(x, y)
    # inner maps axis 1 of the (4, 5) slices: out[i, j, k] = x[i, k, j] ...
    want = np.transpose(np.array(x) * np.array(y) + 1, (0, 2, 1))
    assert close(out, want)
    ones = mx.ones((5, 5), mx.int32)
    assert mx.array_equal(mx.vmap(lambda v: v.sum())(ones), mx.full((5,), 5))
    assert mx.array_equal(mx.vmap(lambda v: v.sum(keepdims=True))(ones), mx.full((5, 1), 5))
    ones = mx.ones((5, 3, 2), mx.int32)
    assert mx.array_equal(mx.vmap(lambda v: v.sum(axis=(0, 1)), in_axes=(2,))(ones), mx.full((2,), 15))


def test_vmap_matmul():
    a = uniform((2, 3, 4))
    b = uniform((4, 3), 1)
    assert mx.allclose(mx.vmap(mx.matmul, in_axes=(0, None))(a, b), a @ b)
    c = uniform((3,), 2)
    assert mx.allclose(mx.vmap(mx.addmm, in_axes=(None, 0, None))(c, a, b), mx.addmm(c, a, b))
    b = uniform((4, 2, 3), 3)
    assert mx.allclose(mx.vmap(mx.matmul, in_axes=(0, 1))(a, b), a @ mx.moveaxis(b, 1, 0))


def test_eval_inside_vmap_is_an_error():
    def f(a):
        return mx.array(a.sum().item())

    with pytest.raises(ValueError, match="eval"):
        mx.vmap(f)(mx.ones((2, 2)))


def test_vmap_plain_and_tree_paths_agree():
    """Plain array arguments take a short path (no tree handling); the same
    vmap written over a tree takes the general one: results agree, output
    axes included."""
    x = mx.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    y = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5)

    def f(a, b):
        return mx.sin(a) * b

    for in_axes, out_axes in [((1, 0), 0), ((1, 0), -1), ((2, 1), 1), ((0, None), 2)]:
        plain = mx.vmap(f, in_axes=in_axes, out_axes=out_axes)(x, y)
        # One tuple argument: in_axes is matched against it.
        tree = mx.vmap(lambda t: f(*t), in_axes=in_axes, out_axes=out_axes)((x, y))
        assert plain.shape == tree.shape
        assert np.allclose(np.array(plain), np.array(tree))
    # A tuple output through the short input path.
    two = mx.vmap(lambda a, b: (a + b, a * b), in_axes=(1, 0), out_axes=1)(x, y)
    assert isinstance(two, tuple) and len(two) == 2
    # r[i, b, j] = x[i, b, j] (+ or *) y[b, j]
    assert np.allclose(np.array(two[0]), np.array(x) + np.array(y)[None])
    assert np.allclose(np.array(two[1]), np.array(x) * np.array(y)[None])


def test_vmap_out_axes_none():
    """out_axes None leaves an output unbatched (it may not depend on a
    vectorized input); an int axis repeats an unbatched output along it."""
    x = mx.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    c = mx.array([1.0, 2.0, 3.0])

    def f(v):
        return v * 2, c + 1  # the second output ignores v

    a, b = mx.vmap(f, out_axes=(1, None))(x)
    assert a.shape == (3, 2) and np.allclose(np.array(a), np.arange(6).reshape(2, 3).T * 2)
    assert b.shape == (3,) and b.tolist() == [2.0, 3.0, 4.0]
    a, b = mx.vmap(f, out_axes=0)(x)  # repeated along the batch
    assert b.shape == (2, 3) and np.array(b).tolist() == [[2.0, 3.0, 4.0]] * 2
    a, b = mx.vmap(f, out_axes=(0, -1))(x)
    assert b.shape == (3, 2) and np.array(b).tolist() == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    with pytest.raises(ValueError, match="out_axes is None"):
        mx.vmap(f, out_axes=(None, None))(x)
    # Trees: a dict output with a None leaf.
    d = mx.vmap(lambda v: {"y": v + 1, "k": c}, out_axes={"y": 0, "k": None})(x)
    assert d["y"].shape == (2, 3) and d["k"].shape == (3,)
