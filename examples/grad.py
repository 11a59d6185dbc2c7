"""Automatic differentiation (shared/seeds: function transforms): grad of
functions, higher derivatives, argnums, value_and_grad, trees of
parameters and stop_gradient.

    PYTHONPATH=build/python python examples/grad.py
"""

import cmx.core as mx

# The gradient of sin is cos; grad of grad is the second derivative.
dfdx = mx.grad(mx.sin)
print("grad(sin)(pi)         =", dfdx(mx.array(mx.pi)), " cos(pi) =", mx.cos(mx.array(mx.pi)))
d2fdx2 = mx.grad(mx.grad(mx.sin))
print("grad(grad(sin))(pi/2) =", d2fdx2(mx.array(mx.pi / 2)),
      " -sin(pi/2) =", -mx.sin(mx.array(mx.pi / 2)))


def loss_fn(w, x, y):
    return mx.mean(mx.square(w * x - y))


w = mx.array(1.0)
x = mx.array([0.5, -0.5])
y = mx.array([1.5, -1.5])
print("dloss/dw              =", mx.grad(loss_fn)(w, x, y))  # array(-1)
print("dloss/dx (argnums=1)  =", mx.grad(loss_fn, argnums=1)(w, x, y))  # [-1, 1]
loss, dloss_dw = mx.value_and_grad(loss_fn)(w, x, y)
print("value_and_grad        =", loss, dloss_dw)


# Gradients with respect to a tree of parameters keep the tree's shape.
def tree_loss(params, x, y):
    h = params["weight"] * x + params["bias"]
    return mx.mean(mx.square(h - y))


params = {"weight": mx.array(1.0), "bias": mx.array(0.0)}
print("tree gradients        =", mx.grad(tree_loss)(params, x, y))


# stop_gradient: the penalty on the bias adds nothing to its gradient when
# the bias is read through stop_gradient.
def penalized(params, x, y, stop):
    b = mx.stop_gradient(params["bias"]) if stop else params["bias"]
    return tree_loss(params, x, y) + b * b


params = {"weight": mx.array(1.0), "bias": mx.array(0.5)}
print("penalty on the bias   =", mx.grad(penalized)(params, x, y, False))
print("through stop_gradient =", mx.grad(penalized)(params, x, y, True))
