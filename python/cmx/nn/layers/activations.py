"""Activation functions and their Module forms, as ``mlx.nn``'s.

Each is written with plain cmx.core ops. Python-float constants are weak
scalars, so a float16 input gives a float16 output.
"""

import math
from typing import Any

import cmx.core as mx
from .base import Module

__all__ = [
    "sigmoid", "relu", "relu6", "leaky_relu", "log_softmax", "elu", "celu",
    "selu", "silu", "gelu", "gelu_approx", "gelu_fast_approx", "glu", "tanh",
    "softmax", "softplus", "softsign", "softshrink", "mish", "hardswish",
    "hard_tanh", "hard_shrink", "log_sigmoid", "prelu", "step", "softmin",
    "Sigmoid", "ReLU", "ReLU6", "LeakyReLU", "LogSoftmax", "ELU", "CELU",
    "SELU", "SiLU", "GELU", "GLU", "Tanh", "Softmax", "Softplus", "Softsign",
    "Softshrink", "Mish", "Hardswish", "HardTanh", "HardShrink", "LogSigmoid",
    "PReLU", "Step", "Softmin",
]


def sigmoid(x):
    r"""The logistic sigmoid :math:`1 / (1 + e^{-x})`."""
    return mx.sigmoid(x)


def tanh(x):
    """The hyperbolic tangent."""
    return mx.tanh(x)


def relu(x):
    r""":math:`\max(x, 0)`."""
    return mx.maximum(x, 0)


def relu6(x):
    r""":math:`\min(\max(x, 0), 6)`."""
    return mx.minimum(mx.maximum(x, 0), 6.0)


def leaky_relu(x, negative_slope: float = 0.01):
    r""":math:`\max(\alpha x, x)` with :math:`\alpha` = ``negative_slope``."""
    return mx.maximum(negative_slope * x, x)


def log_softmax(x, axis: int = -1):
    r""":math:`x - \log \sum_j e^{x_j}` along ``axis``."""
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def softmax(x, axis: int = -1):
    r""":math:`e^{x_i} / \sum_j e^{x_j}` along ``axis``."""
    return mx.softmax(x, axis=axis)


def softmin(x, axis: int = -1):
    """``softmax(-x)`` along ``axis``."""
    return mx.softmax(-x, axis=axis)


def elu(x, alpha: float = 1.0):
    r"""``x`` where positive, else :math:`\alpha (e^x - 1)`."""
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


def celu(x, alpha: float = 1.0):
    r""":math:`\max(0, x) + \alpha (e^{\min(0, x) / \alpha} - 1)`."""
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


def selu(x):
    r"""Scaled ELU: :math:`\lambda \, \mathrm{elu}(x, \alpha)` with
    :math:`\alpha = 1.67326` and :math:`\lambda = 1.0507`."""
    return elu(x, 1.67326) * 1.0507


def silu(x):
    r""":math:`x \sigma(x)` (swish)."""
    return x * mx.sigmoid(x)


def gelu(x):
    r"""Exact GELU :math:`x \Phi(x) = x (1 + \mathrm{erf}(x / \sqrt{2})) / 2`."""
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def gelu_approx(x):
    r"""GELU's tanh approximation
    :math:`x (1 + \tanh(\sqrt{2/\pi} (x + 0.044715 x^3))) / 2`."""
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_fast_approx(x):
    r"""GELU's sigmoid approximation :math:`x \sigma(1.702 x)`."""
    return x * mx.sigmoid(1.702 * x)


def glu(x, axis: int = -1):
    r"""Gated linear unit: splits ``x`` in halves :math:`a, b` along
    ``axis`` and returns :math:`a \sigma(b)`."""
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


def softplus(x):
    r""":math:`\log(1 + e^x)`, computed stably."""
    return mx.logaddexp(x, 0)


def softsign(x):
    r""":math:`x / (1 + |x|)`."""
    return mx.divide(x, 1 + mx.abs(x))


def softshrink(x, lambd: float = 0.5):
    r""":math:`x - \lambda \operatorname{sign}(x)` where :math:`|x| > \lambda`,
    else 0."""
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


def mish(x):
    r""":math:`x \tanh(\mathrm{softplus}(x))`."""
    return x * mx.tanh(softplus(x))


def hardswish(x):
    r""":math:`x \min(\max(x + 3, 0), 6) / 6`."""
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def hard_tanh(x, min_val: float = -1.0, max_val: float = 1.0):
    """``x`` clipped to ``[min_val, max_val]``."""
    return mx.minimum(mx.maximum(x, min_val), max_val)


def hard_shrink(x, lambd: float = 0.5):
    r"""``x`` where :math:`|x| > \lambda`, else 0."""
    return mx.where(mx.abs(x) > lambd, x, 0)


def log_sigmoid(x):
    r""":math:`\log \sigma(x) = -\mathrm{softplus}(-x)`."""
    return -softplus(-x)


def prelu(x, alpha):
    r""":math:`\max(0, x) + \alpha \min(0, x)` with a learned ``alpha``."""
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def step(x, threshold: float = 0.0):
    """1 where ``x > threshold``, else 0."""
    return mx.where(x > threshold, 1, 0)


# ------------------------------------------------------------ module forms


def _module(fn, doc_name, **defaults):
    """A Module class calling fn(x, **its arguments); the arguments default
    to ``defaults`` and are kept as attributes (not parameters)."""
    names = list(defaults)

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        if len(args) > len(names):
            raise TypeError(f"{doc_name}() takes at most {len(names)} arguments")
        values = dict(defaults)
        values.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in values:
                raise TypeError(f"{doc_name}() got an unexpected keyword argument {k!r}")
            values[k] = v
        for k, v in values.items():
            setattr(self, k, v)

    def __call__(self, x):
        return fn(x, **{k: getattr(self, k) for k in names})

    return type(
        doc_name,
        (Module,),
        {
            "__init__": __init__,
            "__call__": __call__,
            "__doc__": f"Applies :func:`{fn.__name__}` elementwise."
            + (f" Arguments: {', '.join(names)}." if names else ""),
            "__module__": __name__,
        },
    )


Sigmoid = _module(sigmoid, "Sigmoid")
Tanh = _module(tanh, "Tanh")
ReLU = _module(relu, "ReLU")
ReLU6 = _module(relu6, "ReLU6")
LeakyReLU = _module(leaky_relu, "LeakyReLU", negative_slope=0.01)
LogSoftmax = _module(log_softmax, "LogSoftmax")
Softmax = _module(softmax, "Softmax")
Softmin = _module(softmin, "Softmin")
ELU = _module(elu, "ELU", alpha=1.0)
CELU = _module(celu, "CELU", alpha=1.0)
SELU = _module(selu, "SELU")
SiLU = _module(silu, "SiLU")
GLU = _module(glu, "GLU", axis=-1)
Softplus = _module(softplus, "Softplus")
Softsign = _module(softsign, "Softsign")
Softshrink = _module(softshrink, "Softshrink", lambd=0.5)
Mish = _module(mish, "Mish")
Hardswish = _module(hardswish, "Hardswish")
HardTanh = _module(hard_tanh, "HardTanh", min_val=-1.0, max_val=1.0)
HardShrink = _module(hard_shrink, "HardShrink", lambd=0.5)
LogSigmoid = _module(log_sigmoid, "LogSigmoid")
Step = _module(step, "Step", threshold=0.0)


class GELU(Module):
    """Applies GELU elementwise.

    Args:
        approx (str): ``"none"`` (exact, :func:`gelu`), ``"precise"`` or
            ``"tanh"`` (:func:`gelu_approx`), or ``"fast"``
            (:func:`gelu_fast_approx`). Default ``"none"``.
    """

    def __init__(self, approx: str = "none"):
        super().__init__()
        fns = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx,
               "fast": gelu_fast_approx}
        if approx not in fns:
            raise ValueError(
                f"The approximation should be in ['none', 'precise', 'tanh', "
                f"'fast'] but '{approx}' was given"
            )
        self._act = fns[approx]

    def __call__(self, x):
        return self._act(x)


class PReLU(Module):
    """Applies :func:`prelu` with a learned slope ``weight`` of
    ``num_parameters`` values (broadcast over the last axis), initialised
    to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25):
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x: Any):
        return prelu(x, self.weight)
