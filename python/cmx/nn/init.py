"""Parameter initializers, as ``mlx.nn.init``: each function returns an
initializer, a callable taking an array and returning a new array of the
same shape (the input's values are not used).

Example:
    >>> w = nn.init.glorot_uniform()(mx.zeros((64, 32)))
"""

import math
from typing import Callable, Literal

import cmx.core as mx
from cmx import _compat

__all__ = ["constant", "normal", "uniform", "identity", "glorot_normal",
           "glorot_uniform", "he_normal", "he_uniform", "sparse", "orthogonal"]

Init = Callable[[mx.array], mx.array]


def constant(value: float, dtype: mx.Dtype = mx.float32) -> Init:
    """Fills with ``value``."""
    return lambda a: mx.full(a.shape, value, dtype=dtype)


def normal(mean: float = 0.0, std: float = 1.0, dtype: mx.Dtype = mx.float32) -> Init:
    """Samples from N(mean, std^2)."""
    return lambda a: mx.random.normal(a.shape, dtype=dtype, loc=mean, scale=std)


def uniform(low: float = 0.0, high: float = 1.0, dtype: mx.Dtype = mx.float32) -> Init:
    """Samples from U(low, high)."""
    return lambda a: mx.random.uniform(low, high, a.shape, dtype=dtype)


def identity(dtype: mx.Dtype = mx.float32) -> Init:
    """The identity matrix (square 2-d arrays only)."""

    def init(a):
        if a.ndim != 2 or a.shape[0] != a.shape[1]:
            raise ValueError(
                f"The input array must be a square matrix but got shape {tuple(a.shape)}."
            )
        return mx.eye(a.shape[0], dtype=dtype)

    return init


def _fans(a):
    """(fan_in, fan_out) of a weight (out, *receptive field, in)."""
    if a.ndim < 2:
        raise ValueError(
            "Glorot / He initialization requires at least 2 dimensional input"
            f" but input with {a.ndim} dimensions."
        )
    field = math.prod(a.shape[1:-1]) if a.ndim > 2 else 1
    return a.shape[-1] * field, a.shape[0] * field


def glorot_normal(dtype: mx.Dtype = mx.float32):
    r"""Glorot (Xavier) normal: N(0, :math:`\text{gain}^2 \cdot 2 /
    (\text{fan\_in} + \text{fan\_out})`). The initializer takes
    ``(a, gain=1.0)``."""

    def init(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a)
        std = gain * math.sqrt(2.0 / (fan_in + fan_out))
        return mx.random.normal(a.shape, dtype=dtype) * std

    return init


def glorot_uniform(dtype: mx.Dtype = mx.float32):
    r"""Glorot (Xavier) uniform: U(-l, l) with :math:`l = \text{gain}
    \sqrt{6 / (\text{fan\_in} + \text{fan\_out})}`. The initializer takes
    ``(a, gain=1.0)``."""

    def init(a, gain: float = 1.0):
        fan_in, fan_out = _fans(a)
        limit = gain * math.sqrt(6.0 / (fan_in + fan_out))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def _fan(a, mode):
    fan_in, fan_out = _fans(a)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"Invalid mode: {mode}. Valid modes are: fan_in, fan_out")


def he_normal(dtype: mx.Dtype = mx.float32):
    r"""He (Kaiming) normal: N(0, :math:`\text{gain}^2 / \text{fan}`). The
    initializer takes ``(a, mode="fan_in", gain=1.0)``."""

    def init(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        std = gain / math.sqrt(_fan(a, mode))
        return mx.random.normal(a.shape, dtype=dtype) * std

    return init


def he_uniform(dtype: mx.Dtype = mx.float32):
    r"""He (Kaiming) uniform: U(-l, l), :math:`l = \text{gain}\sqrt{3 /
    \text{fan}}`. The initializer takes ``(a, mode="fan_in", gain=1.0)``."""

    def init(a, mode: Literal["fan_in", "fan_out"] = "fan_in", gain: float = 1.0):
        limit = gain * math.sqrt(3.0 / _fan(a, mode))
        return mx.random.uniform(-limit, limit, a.shape, dtype=dtype)

    return init


def sparse(sparsity: float, mean: float = 0.0, std: float = 1.0,
           dtype: mx.Dtype = mx.float32) -> Init:
    """N(mean, std^2) samples with ``ceil(sparsity * columns)`` random
    entries of each row set to zero (2-d arrays only)."""

    def init(a):
        if a.ndim != 2:
            raise ValueError("Only tensors with 2 dimensions are supported")
        rows, cols = a.shape
        zeros = int(math.ceil(sparsity * cols))
        order = mx.argsort(mx.random.uniform(shape=a.shape), axis=1)
        w = mx.random.normal(a.shape, dtype=dtype, loc=mean, scale=std)
        if zeros == 0:
            return w
        drop = order[:, :zeros]
        return mx.put_along_axis(w, drop, mx.zeros(drop.shape, dtype=dtype), axis=1)

    return init


def _orthonormal_columns(m):
    """Q of the QR factorisation of m (n x n) with R's diagonal made
    positive: mx.linalg.qr when the core has it, else Gram-Schmidt over the
    columns (the same Q: both make R's diagonal positive)."""
    linalg = getattr(mx, "linalg", None)
    if linalg is not None and _compat.implemented(linalg, "qr"):
        q, r = linalg.qr(m, stream=mx.cpu)
        d = mx.diagonal(r)
        return q * mx.where(d < 0, -1.0, 1.0)
    basis = []
    for j in range(m.shape[1]):
        v = m[:, j]
        if basis:
            qm = mx.stack(basis, axis=1)
            for _ in range(2):  # Gram-Schmidt twice: orthogonal to rounding
                v = v - qm @ (qm.T @ v)
        v = v / mx.sqrt(mx.sum(v * v))
        mx.eval(v)
        basis.append(v)
    return mx.stack(basis, axis=1)


def orthogonal(gain: float = 1.0, dtype: mx.Dtype = mx.float32) -> Init:
    """A random matrix with orthonormal rows or columns (whichever is fewer)
    times ``gain`` (2-d arrays only)."""

    def init(a):
        if a.ndim != 2:
            raise ValueError(
                f"Orthogonal initialization requires a 2D array but got a {a.ndim}D array."
            )
        rows, cols = a.shape
        n = max(rows, cols)
        q = _orthonormal_columns(mx.random.normal((n, n)))
        q = q[:rows, :cols]
        return (gain * q).astype(dtype)

    return init
