"""Function transforms from Python, continued: custom_function (MLX's
documented examples and argument conventions), checkpoint (same gradients,
lower peak memory), compositions to several levels, and gradients through
indexing, in-place updates, sort, scans, reductions, matmul, convolution
and stop_gradient against numpy central finite differences in float64."""

import numpy as np
import pytest

import cmx.core as mx

# Every test here runs on every device (the GPU where there is one).
pytestmark = pytest.mark.usefixtures("on_device")

F64 = mx.float64


def close(a, b, tol=1e-5):
    return np.allclose(np.array(a, dtype=np.float64), np.array(b, dtype=np.float64), atol=tol, rtol=tol)


def rand(shape, seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


# ---------------------------------------------------------------- finite differences


def numeric_grad(f, args, i, eps=1e-6):
    """Central differences of the scalar f(*args) in args[i] (float64)."""
    base = [np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) else a for a in args]
    x = base[i]
    g = np.zeros_like(x)

    def value(xi):
        a = list(base)
        a[i] = xi
        return f(*[mx.array(v, dtype=F64) if isinstance(v, np.ndarray) else v for v in a]).item()

    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (value(xp) - value(xm)) / (2 * eps)
    return g


def check_grads(f, *args, tol=1e-6):
    """mx.grad of f with respect to every numpy (float) argument, in
    float64, against central differences; integer arrays and other values
    are passed as they are."""
    nums = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
    mxargs = [mx.array(a, dtype=F64) if isinstance(a, np.ndarray) else a for a in args]
    grads = mx.grad(f, argnums=nums)(*mxargs)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for i, g in zip(nums, grads):
        assert g.dtype == F64 and tuple(g.shape) == args[i].shape
        want = numeric_grad(f, args, i)
        err = np.abs(np.array(g) - want).max()
        assert err < tol * max(1.0, np.abs(want).max()), f"argument {i}: error {err}"


def check_jvp_vjp(f, *args):
    """The transposition identity <v, J u> == <J^T v, u> in float64."""
    xs = [mx.array(a, dtype=F64) for a in args]
    us = [mx.array(rand(a.shape, 10 + k), dtype=F64) for k, a in enumerate(args)]
    outs, jus = mx.jvp(f, xs, us)
    vs = [mx.array(rand(o.shape, 20 + k), dtype=F64) for k, o in enumerate(outs)]
    _, jtvs = mx.vjp(f, xs, vs)
    lhs = sum(float((v * ju).sum().item()) for v, ju in zip(vs, jus))
    rhs = sum(float((jv * u).sum().item()) for jv, u in zip(jtvs, us))
    assert abs(lhs - rhs) < 1e-9 * max(1.0, abs(lhs))


# ---------------------------------------------------------------- gradients through ops


def test_grad_indexing():
    x = rand((4, 5))
    w = rand((3, 5), 1)
    check_grads(lambda x: (x[1:, ::-2] ** 2).sum(), x)
    check_grads(lambda x: (x[None, ..., 2] * mx.arange(4, dtype=F64)).sum(), x)
    idx = mx.array([3, 0, 3])
    check_grads(lambda x, w: (x[idx] * w).sum(), x, w)  # repeated rows add up
    check_grads(lambda x: (x[idx, 1:4] ** 3).sum(), x)
    check_grads(lambda x: (x[mx.array([0, 2]), mx.array([4, 1])] * mx.array([2.0, -1.0], dtype=F64)).sum(), x)
    check_grads(lambda x: (mx.take(x, mx.array([7, 7, 19])) ** 2).sum(), x)
    check_grads(lambda x: mx.sin(mx.take_along_axis(x, mx.array([[0, 4], [1, 1], [2, 3], [4, 0]]), axis=1)).sum(), x)


def test_grad_in_place_and_at_updates():
    x = rand((5,))
    u = rand((2,), 1)
    idx = mx.array([1, 3])

    def assign(x, u):
        y = x * 1.0
        y[idx] = u * u
        return (y * mx.arange(1, 6, dtype=F64)).sum()

    check_grads(assign, x, u)
    check_grads(lambda x, u: (x.at[mx.array([2, 2])].add(u) ** 2).sum(), x, u)
    check_grads(lambda x, u: (x.at[idx].multiply(u) ** 2).sum(), x, u)
    check_grads(lambda x, u: (x.at[1:3].subtract(u) ** 2).sum(), x, u)
    check_grads(lambda x, u: (mx.put_along_axis(x, idx, u, axis=0) ** 2).sum(), x, u)
    # The zeros-at-idx example on a 2-d array with a slice.
    g = mx.grad(lambda x: _set_rows(x).sum())(mx.ones((3, 2)))
    assert g.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]


def _set_rows(x):
    x[1, :] = 5.0
    return x


def test_grad_scatter_max_min():
    # MLX's conventions: where the update wins, the update gets the
    # cotangent; ties share it.
    fun = lambda src, upd: src.at[1].maximum(upd)
    _, vjps = mx.vjp(fun, [mx.array([1.0, 2.0, 3.0]), mx.array([[3.0]])], [mx.array([4.0, 5.0, 6.0])])
    assert vjps[0].tolist() == [4.0, 0.0, 6.0] and vjps[1].tolist() == [[5.0]]
    fun = lambda src, upd: src.at[1].minimum(upd)
    _, vjps = mx.vjp(fun, [mx.array([1.0, 2.0, 3.0]), mx.array([[3.0]])], [mx.array([4.0, 5.0, 6.0])])
    assert vjps[0].tolist() == [4.0, 5.0, 6.0] and vjps[1].tolist() == [[0.0]]


def test_grad_sort_and_scans():
    x = np.array([0.3, -1.2, 2.5, 0.9, -0.4, 1.7])
    ramp = mx.arange(6, dtype=F64)
    check_grads(lambda x: (mx.sort(x) * ramp).sum(), x)
    check_grads(lambda x: (mx.topk(x, 3) ** 2).sum(), x)
    check_grads(lambda x: (mx.cumsum(x) * ramp).sum(), x)
    check_grads(lambda x: (mx.cumsum(x, reverse=True, inclusive=False) * ramp).sum(), x)
    check_grads(lambda x: (mx.cumprod(x) * ramp).sum(), x)
    check_grads(lambda x: (mx.cumprod(x, reverse=True) * ramp).sum(), x)
    check_grads(lambda x: (mx.cummax(x) * ramp).sum(), x)
    check_grads(lambda x: (mx.cummin(x) * ramp).sum(), x)
    check_grads(lambda x: (mx.logcumsumexp(x) * ramp).sum(), x)
    # Exact values of MLX's tests for cumprod with zeros.
    g = mx.grad(lambda y: mx.cumprod(y).sum())(mx.array([2.0, 0.0, 2.0, 2.0, 3.0]))
    assert close(g, [1.0, 38.0, 0.0, 0.0, 0.0])


def test_grad_reductions():
    x = rand((3, 4))
    check_grads(lambda x: mx.logsumexp(x, axis=1).sum(), x)
    check_grads(lambda x: (mx.softmax(x, axis=0) * mx.arange(12, dtype=F64).reshape(3, 4)).sum(), x)
    check_grads(lambda x: mx.var(x, axis=1).sum() + mx.std(x), x)
    check_grads(lambda x: mx.prod(x, axis=0).sum(), x)
    check_grads(lambda x: (mx.max(x, axis=1) * mx.array([1.0, 2.0, 3.0], dtype=F64)).sum(), x)
    check_grads(lambda x: mx.min(x), x)
    check_grads(lambda x: mx.mean(x ** 2, axis=(0, 1)), x)
    # Ties share the cotangent (MLX); argmax is not differentiable but may
    # pick what is differentiated.
    assert close(mx.grad(lambda v: v.max())(mx.array([1.0, 3.0, 3.0])), [0.0, 0.5, 0.5])
    # Indices computed from the input need stop_gradient (MLX raises).
    with pytest.raises(ValueError, match="with respect to indices"):
        mx.grad(lambda v: v[mx.argmax(v)] * 2)(mx.array([1.0, 4.0, 3.0]))
    g = mx.grad(lambda v: v[mx.stop_gradient(mx.argmax(v))] * 2)(
        mx.array([1.0, 4.0, 3.0]))
    assert g.tolist() == [0.0, 2.0, 0.0]


def test_grad_matmul_stop_gradient():
    a = rand((2, 3, 4))
    b = rand((4, 2), 1)
    c = rand((3, 2), 2)
    check_grads(lambda a, b: mx.sin(a @ b).sum(), a, b)
    check_grads(lambda c, a, b: (mx.addmm(c, a, b, alpha=0.5, beta=2.0) ** 2).sum(), c, a, b)
    v = rand((4,), 3)
    check_grads(lambda a, v: (a @ v).sum() + (v @ mx.swapaxes(a, 1, 2)).sum(), a, v)
    # stop_gradient cuts one path of two.
    y = rand((3,), 6)
    g = mx.grad(lambda y: (mx.stop_gradient(y) * y).sum())(mx.array(y, dtype=F64))
    assert close(g, y, 1e-12)


def test_grad_conv():
    x = rand((2, 7, 3))
    w = rand((4, 3, 3), 4)
    check_grads(lambda x, w: mx.tanh(mx.conv1d(x, w, stride=2, padding=1)).sum(), x, w)
    x2 = rand((1, 5, 5, 2))
    w2 = rand((3, 3, 3, 2), 5)
    check_grads(lambda x, w: (mx.conv2d(x, w, padding=1, dilation=(1, 2)) ** 2).sum(), x2, w2)


def test_jvp_is_the_transpose_of_vjp():
    a = rand((3, 4))
    b = rand((4, 2), 1)
    check_jvp_vjp(lambda a, b: (mx.tanh(a @ b), mx.exp(a) * a), a, b)
    check_jvp_vjp(lambda a: a[mx.array([2, 0])].at[0].add(a[1]), a)


def test_jvp_is_the_transpose_of_vjp_sort_scan_softmax():
    a = rand((3, 4))
    check_jvp_vjp(lambda a: (mx.cumsum(a, axis=1), mx.sort(a, axis=0) * mx.softmax(a, axis=1)), a)


# ---------------------------------------------------------------- compositions


def test_higher_order_and_compositions():
    fun = lambda x: x * x * x
    x = mx.array(0.5)
    assert mx.grad(fun)(x).item() == 0.75
    assert mx.grad(mx.grad(fun))(x).item() == 3.0
    assert mx.grad(mx.grad(mx.grad(fun)))(x).item() == 6.0
    assert mx.grad(mx.grad(mx.grad(mx.grad(fun))))(x).item() == 0.0

    xs = mx.array([0.3, 0.7, 1.1])
    # vmap of grad: per-example derivatives.
    assert close(mx.vmap(mx.grad(mx.sin))(xs), np.cos(np.array(xs)))
    # grad of vmap.
    assert close(mx.grad(lambda v: mx.vmap(mx.sin)(v).sum())(xs), np.cos(np.array(xs)))
    # vmap of grad of a two-argument function, one argument unmapped.
    w = mx.array([1.0, -2.0, 0.5])
    g = mx.vmap(mx.grad(lambda x, w: (mx.sin(x * w)).sum()), in_axes=(0, None))(mx.stack([xs, xs * 2]), w)
    want = np.stack([np.cos(np.array(xs) * np.array(w)) * np.array(w), np.cos(np.array(xs) * 2 * np.array(w)) * np.array(w)])
    assert close(g, want)
    # jvp of vjp (the vjp is linear in the cotangent).
    def vjp_fn(c):
        return mx.vjp(mx.sin, [xs], [c])[1][0]

    _, t = mx.jvp(vjp_fn, [mx.ones((3,))], [mx.ones((3,))])
    assert close(t[0], np.cos(np.array(xs)))
    # Hessian-vector products both ways: forward over reverse, reverse
    # over forward.
    f = lambda v: (mx.sin(v) * v).sum()
    hess_diag = -np.sin(np.array(xs)) * np.array(xs) + 2 * np.cos(np.array(xs))
    _, hv = mx.jvp(mx.grad(f), [xs], [mx.ones((3,))])
    assert close(hv[0], hess_diag)
    hv2 = mx.grad(lambda v: mx.jvp(f, [v], [mx.ones((3,))])[1][0])(xs)
    assert close(hv2, hess_diag)
    # Per-example gradients of a loss, vmapped twice.
    batch = mx.array(rand((2, 3, 4)).astype(np.float32))
    pw = mx.array(rand((4,), 1).astype(np.float32))
    per = mx.vmap(mx.vmap(mx.grad(lambda w, x: mx.tanh(x @ w)), in_axes=(None, 0)), in_axes=(None, 0))(pw, batch)
    xb = np.array(batch)
    want = (1 - np.tanh(xb @ np.array(pw)) ** 2)[..., None] * xb
    assert per.shape == (2, 3, 4) and close(per, want)
    # value_and_grad inside grad.
    assert close(mx.grad(lambda v: mx.value_and_grad(f)(v)[1].sum())(xs), hess_diag)


# ---------------------------------------------------------------- custom_function


def test_custom_function_documented():
    used = []

    @mx.custom_function
    def f(x, y):
        return mx.sin(x) * y

    @f.vjp
    def f_vjp(primals, cotangent, output):
        used.append("vjp")
        x, y = primals
        return cotangent * mx.cos(x) * y, cotangent * mx.sin(x)

    @f.jvp
    def f_jvp(primals, tangents):
        used.append("jvp")
        x, y = primals
        dx, dy = tangents
        return dx * mx.cos(x) * y + dy * mx.sin(x)

    @f.vmap
    def f_vmap(inputs, axes):
        used.append("vmap")
        x, y = inputs
        ax, ay = axes
        if ay != ax and ax is not None:
            y = y.swapaxes(ay, ax)
        return mx.sin(x) * y, (ax or ay)

    assert isinstance(f, mx.custom_function) and f.__name__ == "f"
    x = mx.array([0.5, 1.0])
    y = mx.array([2.0, 3.0])
    assert close(f(x, y), np.sin([0.5, 1.0]) * [2.0, 3.0]) and used == []
    gx, gy = mx.grad(lambda a, b: f(a, b).sum(), argnums=(0, 1))(x, y)
    assert close(gx, np.cos([0.5, 1.0]) * [2.0, 3.0]) and close(gy, np.sin([0.5, 1.0]))
    assert used == ["vjp"]
    _, (t,) = mx.jvp(f, [x, y], [mx.ones((2,)), mx.ones((2,))])
    assert close(t, np.cos([0.5, 1.0]) * [2.0, 3.0] + np.sin([0.5, 1.0]))
    assert used[-1] == "jvp"
    # (The example's `ax or ay` reads an axis 0 as None, so map x on 1.)
    xs = mx.array(rand((2, 3)).astype(np.float32))
    ys = mx.array(rand((3, 2), 1).astype(np.float32))
    out = mx.vmap(f, in_axes=(1, 0))(xs, ys)
    assert used[-1] == "vmap"
    assert out.shape == (3, 2) and close(out, np.sin(np.array(xs)).T * np.array(ys))


def test_custom_function_captured_arrays_are_constants():
    def g(x, y):
        @mx.custom_function
        def f(x):
            return x * y

        @f.vjp
        def f_vjp(x, dx, fx):
            raise ValueError("Abort!")

        return f(x)

    x = mx.array(2.0)
    y = mx.array(3.0)
    assert g(x, y).item() == 6.0
    with pytest.raises(ValueError, match="Abort!"):
        mx.grad(g)(x, y)
    assert mx.grad(g, argnums=1)(x, y).item() == 0.0


def test_custom_function_single_argument_and_defaults():
    my_exp = mx.custom_function(mx.exp)
    one = mx.array(1.0)
    e = np.exp(1.0)
    # No rules: the plain function, transformed as usual.
    assert close(mx.grad(my_exp)(one), e)
    (ex,), (dex,) = mx.jvp(my_exp, [one], [one])
    assert close(dex, e) and close(ex, e)
    assert close(mx.vmap(my_exp)(mx.ones(10)), np.full(10, e))

    @my_exp.vjp
    def my_exp_vjp(x, dx, ex):  # one argument: passed alone, not in a tuple
        assert isinstance(x, mx.array) and isinstance(dx, mx.array) and isinstance(ex, mx.array)
        return mx.ones_like(x) * 42

    assert mx.grad(my_exp)(one).item() == 42.0
    (ex,), (dex,) = mx.jvp(my_exp, [one], [one])
    assert close(dex, e) and close(ex, e)
    assert close(mx.vmap(my_exp)(mx.ones(10)), np.full(10, e))

    @my_exp.jvp
    def my_exp_jvp(x, dx):
        return mx.ones_like(x) * 7 * dx

    @my_exp.vmap
    def my_exp_vmap(x, axis):
        assert axis == 0
        return mx.ones_like(x) * 3, axis

    assert mx.grad(my_exp)(one).item() == 42.0
    (ex,), (dex,) = mx.jvp(my_exp, [one], [one])
    assert dex.item() == 7.0 and close(ex, e)
    assert mx.vmap(my_exp)(mx.ones(10)).tolist() == [3.0] * 10


def test_custom_function_pytrees():
    @mx.custom_function
    def my_double(params):
        return {"out": 2 * params["x"] * params["y"]}

    loss = lambda p: my_double(p)["out"].sum()
    dy = mx.grad(loss)({"x": mx.ones(2), "y": mx.ones(2)})
    assert close(dy["x"], [2.0, 2.0]) and close(dy["y"], [2.0, 2.0])

    @my_double.vjp
    def random_grads(primals, cotangents, outputs):
        assert set(cotangents) == {"out"} and set(outputs) == {"out"}
        return {"x": mx.zeros_like(primals["x"]), "y": mx.ones_like(primals["y"])}

    dy = mx.grad(loss)({"x": mx.ones(2), "y": mx.ones(2)})
    assert close(dy["x"], [0.0, 0.0]) and close(dy["y"], [1.0, 1.0])

    def outer_f(a, b):
        return my_double({"x": a, "y": b})["out"]

    inputs = [mx.array(rand((2,), k).astype(np.float32)) for k in range(2)]
    tans = [mx.array(rand((2,), 5 + k).astype(np.float32)) for k in range(2)]
    out1, dout1 = mx.jvp(outer_f, inputs, tans)

    @my_double.jvp
    def my_jvp(primals, tangents):
        return {"out": 2 * primals["x"] * tangents["y"] + 2 * primals["y"] * tangents["x"] + 1}

    out2, dout2 = mx.jvp(outer_f, inputs, tans)
    assert close(out1[0], out2[0]) and close(np.array(dout1[0]) + 1, dout2[0])


def test_custom_function_conventions():
    seen = {}

    @mx.custom_function
    def f(x, y, scale=1.0):
        return x * y * scale

    @f.vjp
    def f_vjp(primals, cot, out, scale=1.0):
        seen["scale"] = scale
        x, y = primals
        return cot * y * scale, cot * x * scale

    @f.jvp
    def f_jvp(primals, tangents):
        seen["tangents"] = tangents
        x, y = primals
        dx, dy = tangents
        return (dx * y if dx is not None else 0) + (x * dy if dy is not None else 0)

    x, y = mx.array(2.0), mx.array(3.0)
    # Keyword arguments reach the vjp.
    assert mx.grad(lambda x: f(x, y, scale=2.0))(x).item() == 6.0 and seen["scale"] == 2.0
    # Inputs without a tangent get None.
    _, (t,) = mx.jvp(lambda x: f(x, y), [x], [mx.array(1.0)])
    assert t.item() == 3.0
    assert isinstance(seen["tangents"][0], mx.array) and seen["tangents"][1] is None
    # A jvp or vmap rule with keyword arguments is MLX's error.
    with pytest.raises(ValueError, match=r"^\[custom jvp\] Function should only accept positional arguments$"):
        mx.jvp(lambda x: f(x, y, scale=2.0), [x], [mx.array(1.0)])

    @mx.custom_function
    def h(x):
        return x * 2

    @h.vmap
    def h_vmap(x, ax):
        return x * 2

    with pytest.raises(ValueError, match=r"^\[custom vmap\] Vmap function should return a tuple with 2 items\.$"):
        mx.vmap(h)(mx.ones((3,)))
    # Second order through a custom vjp.
    @mx.custom_function
    def cube(x):
        return x * x * x

    @cube.vjp
    def cube_vjp(x, c, out):
        return 3 * x * x * c

    assert mx.grad(mx.grad(cube))(mx.array(2.0)).item() == 12.0


# ---------------------------------------------------------------- checkpoint


def test_checkpoint_trees_and_kwargs():
    w1 = mx.array(rand((8, 8)).astype(np.float32))
    w2 = mx.array(rand((8, 8), 1).astype(np.float32))

    def block(inp, scale=1.0):
        h = mx.tanh(inp["x"] @ w1) @ w2
        return {"y": h * scale, "note": "kept", "pair": (h, inp["x"])}

    def loss(x, ck):
        f = mx.checkpoint(block) if ck else block
        out = f({"x": x}, scale=2.0)
        assert out["note"] == "kept" and isinstance(out["pair"], tuple)
        return out["y"].sum() + (out["pair"][0] * out["pair"][1]).sum()

    x = mx.array(rand((4, 8), 2).astype(np.float32))
    v1, g1 = mx.value_and_grad(loss)(x, False)
    v2, g2 = mx.value_and_grad(loss)(x, True)
    assert close(v1, v2) and close(g1, g2, 1e-5)
    # Composes with vmap and jvp.
    cb = mx.checkpoint(lambda a: mx.sin(a) * a)
    assert close(mx.vmap(cb)(x), np.sin(np.array(x)) * np.array(x))
    _, (t,) = mx.jvp(cb, [x], [mx.ones_like(x)])
    xa = np.array(x)
    assert close(t, np.cos(xa) * xa + np.sin(xa))
    assert close(mx.grad(lambda a: cb(a).sum())(x), np.cos(xa) * xa + np.sin(xa))


def test_checkpoint_same_gradients_lower_peak_memory():
    depth, width, hidden, batch = 6, 64, 512, 512
    ups = [mx.array((rand((width, hidden), k) / width**0.5).astype(np.float32)) for k in range(depth)]
    downs = [mx.array((rand((hidden, width), 10 + k) / hidden**0.5).astype(np.float32)) for k in range(depth)]
    x = mx.array(rand((batch, width), 99).astype(np.float32))
    mx.eval(ups, downs, x)

    def block(h, up, down):
        return h + mx.tanh(mx.tanh(h @ up) @ down)

    def loss(ws, x, ck):
        h = x
        f = mx.checkpoint(block) if ck else block
        for up, down in zip(*ws):
            h = f(h, up, down)
        return h.sum()

    peak, grads = {}, {}
    for ck in (False, True, False, True):
        mx.synchronize()
        mx.reset_peak_memory()
        base = mx.get_active_memory()
        g = mx.grad(loss)((ups, downs), x, ck)
        mx.eval(g)
        peak[ck] = min(peak.get(ck, 1 << 62), mx.get_peak_memory() - base)
        grads[ck] = [np.array(a) for a in g[0] + g[1]]
        del g
    for a, b in zip(grads[False], grads[True]):
        assert np.allclose(a, b, rtol=1e-5, atol=1e-5)
    # The (batch, hidden) activations (1 MiB each, two per block) are
    # recomputed block by block instead of all kept.
    assert peak[True] < 0.6 * peak[False], peak


# ---------------------------------------------------------------- leaks


def test_transforms_free_their_arrays():
    import gc

    w = mx.array(rand((16, 16)).astype(np.float32))

    @mx.custom_function
    def cf(x):
        return mx.sin(x) @ w

    @cf.vjp
    def cf_vjp(x, c, out):
        return mx.cos(x) * (c @ w.T)

    ck = mx.checkpoint(lambda x: mx.tanh(x @ w))
    runs = [
        lambda x: mx.grad(lambda x: (x @ w).sum())(x),
        lambda x: mx.value_and_grad(lambda x: ((x @ w).sum(), {"aux": x}))(x),
        lambda x: mx.vmap(lambda r: r @ w)(x),
        lambda x: mx.jvp(lambda x: x @ w, [x], [x])[1],
        lambda x: mx.grad(lambda x: cf(x).sum())(x),
        lambda x: mx.grad(lambda x: ck(x).sum())(x),
        lambda x: mx.grad(mx.grad(lambda x: mx.sin(x).sum()))(x[0, 0]),
    ]
    for run in runs:
        x = mx.array(rand((16, 16), 1).astype(np.float32))
        mx.eval(run(x))  # warm up caches of the first use
        gc.collect()
        mx.synchronize()
        before = mx.get_active_memory()
        for _ in range(3):
            mx.eval(run(x))
        gc.collect()
        mx.synchronize()
        assert mx.get_active_memory() == before
