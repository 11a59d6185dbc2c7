"""Custom transforms (shared/seeds: function transforms): a function with
its own vjp, jvp and vmap rules, and a custom gradient that keeps a
function stable where autodiff's is not.

    PYTHONPATH=build/python python examples/custom_function.py
"""

import cmx.core as mx


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


x, y = mx.array([0.1, 0.5, 1.0]), mx.array([2.0, 3.0, 4.0])
print("f             =", f(x, y))
print("vjp (custom)  =", mx.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y))
print("vjp (autodiff)=", mx.grad(lambda x, y: (mx.sin(x) * y).sum(), argnums=(0, 1))(x, y))
print("jvp (custom)  =", mx.jvp(f, [x, y], [mx.ones_like(x), mx.zeros_like(y)])[1])
print("vmap (custom) =", mx.vmap(f, in_axes=(0, 0))(x[:, None], y[:, None]).reshape(-1))


# log(1 + e^x) written naively overflows for large x; autodiff of the
# naive form gives inf / inf = nan there. A custom vjp supplies the stable
# derivative, sigmoid(x).
@mx.custom_function
def log1pexp(x):
    return mx.log(1 + mx.exp(x))


@log1pexp.vjp
def log1pexp_vjp(x, cotangent, output):
    return cotangent * mx.sigmoid(x)


big = mx.array([1.0, 100.0])
print("naive gradient  =", mx.grad(lambda x: mx.log(1 + mx.exp(x)).sum())(big))
print("custom gradient =", mx.grad(lambda x: log1pexp(x).sum())(big))
