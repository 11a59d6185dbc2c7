"""Pooling layers: MaxPool1d/2d/3d and AvgPool1d/2d/3d over channels-last
inputs with a batch axis (``NLC``, ``NHWC``, ``NDHWC``).

The window element at kernel offset ``k`` of every output is one strided
slice of the (padded) input, so pooling is an elementwise reduction over
``prod(kernel)`` slices: no reduction over short middle axes, which is
slow. Max pooling keeps the gradient of a max reduction over each window
(ties share it equally); when the windows tile the input (stride equal to
the kernel) it is computed directly: the gradient goes to the positions
equal to their window's maximum, divided by their count. Padding uses
``-inf`` for max and ``0`` for average pooling (the padded zeros count in
the average)."""

import itertools
import math
from typing import Optional, Tuple, Union

import cmx.core as mx
from .base import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d"]


def _out_sizes(x, kernel, stride):
    return [(s - k) // st + 1 for s, k, st in zip(x.shape[1:-1], kernel, stride)]


def _window_slices(x, kernel, stride):
    """For each kernel offset, the strided slice of x (N, *spatial, C) that
    holds that element of every window: arrays of shape (N, *out, C)."""
    out = _out_sizes(x, kernel, stride)
    for offs in itertools.product(*(range(k) for k in kernel)):
        idx = tuple(slice(o, o + st * (n - 1) + 1, st)
                    for o, st, n in zip(offs, stride, out))
        yield x[(slice(None),) + idx]


def _window_max(x, kernel, stride):
    return mx.max(mx.stack(list(_window_slices(x, kernel, stride))), axis=0)


def _split_windows(x, kernel):
    """x (N, *(out * kernel), C) viewed as (N, out_1, k_1, out_2, k_2, ..., C)."""
    split = [d for s, k in zip(x.shape[1:-1], kernel) for d in (s // k, k)]
    return x.reshape(x.shape[0], *split, x.shape[-1])


def _per_window(y):
    """y (N, *out, C) as (N, out_1, 1, out_2, 1, ..., C): one value per
    window, broadcasting over the window's elements."""
    split = [d for o in y.shape[1:-1] for d in (o, 1)]
    return y.reshape(y.shape[0], *split, y.shape[-1])


_TILED_MAX = {}


def _tiled_max(kernel):
    """Max pooling of windows that tile the input exactly (stride equal to
    the kernel): the maximum of the kernel-offset slices, and as gradient
    the cotangent divided among the elements equal to their window's
    maximum (a max reduction's gradient) in three passes over the input."""
    f = _TILED_MAX.get(kernel)
    if f is not None:
        return f

    @mx.custom_function
    def f(x):
        y = None
        for s in _window_slices(x, kernel, kernel):
            y = s if y is None else mx.maximum(y, s)
        return y

    # The tie counts are summed as bytes when a window cannot overflow
    # one: a quarter of the memory traffic of summing in float32, and one
    # conversion (of the sum) instead of one per kernel offset.
    small = math.prod(kernel) < 256

    @f.vjp
    def f_vjp(x, cotangent, y):
        hit = _split_windows(x, kernel) == _per_window(y)  # bool: 1 byte
        hits = hit.view(mx.uint8) if small else hit.astype(cotangent.dtype)
        count = None
        for offs in itertools.product(*(range(k) for k in kernel)):
            idx = [slice(None)]
            for o in offs:
                idx += [slice(None), o]
            s = hits[tuple(idx)]
            count = s if count is None else count + s
        share = _per_window(cotangent / count.astype(cotangent.dtype))
        # a 0-d zero: nothing the size of the output to fill
        zero = mx.array(0, dtype=share.dtype)
        return mx.where(hit, share, zero).reshape(x.shape)

    _TILED_MAX[kernel] = f
    return f


def _max_pool(x, kernel, stride):
    if kernel == stride:
        out = _out_sizes(x, kernel, stride)
        x = x[(slice(None),) + tuple(slice(0, o * k) for o, k in zip(out, kernel))]
        return _tiled_max(kernel)(x)
    return _window_max(x, kernel, stride)


def _avg_pool(x, kernel, stride):
    total = None
    for s in _window_slices(x, kernel, stride):
        total = s if total is None else total + s
    return total * (1.0 / math.prod(kernel))


class _Pool(Module):
    _n = 1
    _name = ""

    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        n = self._n

        def as_tuple(v, what):
            if isinstance(v, int):
                return (v,) * n
            v = tuple(v)
            if len(v) != n or not all(isinstance(i, int) for i in v):
                raise ValueError(
                    f"[{self._name}] '{what}' must be an integer or a tuple "
                    f"containing {n} integers"
                )
            return v

        self._kernel_size = as_tuple(kernel_size, "kernel_size")
        self._stride = self._kernel_size if stride is None else as_tuple(stride, "stride")
        self._padding = as_tuple(padding, "padding")
        self._axes = tuple(range(-n - 1, -1))

    def _extra_repr(self) -> str:
        return (f"kernel_size={self._kernel_size}, stride={self._stride}, "
                f"padding={self._padding}")

    def __call__(self, x):
        n = self._n
        if x.ndim != n + 2:
            raise ValueError(
                f"[{self._name}] expects inputs with {n + 2} dimensions (batch, "
                f"{n} spatial, channels) but got shape {tuple(x.shape)}"
            )
        if any(self._padding):
            pads = [(0, 0)] + [(p, p) for p in self._padding] + [(0, 0)]
            x = mx.pad(x, pads, constant_values=self._padding_value)
        for s, k in zip(x.shape[1:-1], self._kernel_size):
            if s < k:
                raise ValueError(
                    f"[{self._name}] the kernel {self._kernel_size} is larger than "
                    f"the (padded) input's spatial shape {tuple(x.shape[1:-1])}"
                )
        return self._pool(x, self._kernel_size, self._stride)


class _MaxPool(_Pool):
    _padding_value = -math.inf
    _pool = staticmethod(_max_pool)


class _AvgPool(_Pool):
    _padding_value = 0
    _pool = staticmethod(_avg_pool)


def _make(base, n, name, doc):
    def __init__(
        self,
        kernel_size: Union[int, Tuple[int, ...]],
        stride: Optional[Union[int, Tuple[int, ...]]] = None,
        padding: Union[int, Tuple[int, ...]] = 0,
    ):
        base.__init__(self, kernel_size, stride, padding)

    return type(name, (base,), {"_n": n, "_name": name, "__init__": __init__,
                                "__doc__": doc, "__module__": __name__})


_DOC = """{what} pooling over the {n} spatial axes of ``{layout}`` inputs.

    Args:
        kernel_size (int or tuple): The window size.
        stride (int or tuple, optional): The window step (default: the
            kernel size).
        padding (int or tuple): {pad} padding on both sides of each spatial
            axis. Default ``0``.
"""

MaxPool1d = _make(_MaxPool, 1, "MaxPool1d", _DOC.format(what="Max", n=1, layout="NLC", pad="-inf"))
MaxPool2d = _make(_MaxPool, 2, "MaxPool2d", _DOC.format(what="Max", n=2, layout="NHWC", pad="-inf"))
MaxPool3d = _make(_MaxPool, 3, "MaxPool3d", _DOC.format(what="Max", n=3, layout="NDHWC", pad="-inf"))
AvgPool1d = _make(_AvgPool, 1, "AvgPool1d", _DOC.format(what="Average", n=1, layout="NLC", pad="Zero"))
AvgPool2d = _make(_AvgPool, 2, "AvgPool2d", _DOC.format(what="Average", n=2, layout="NHWC", pad="Zero"))
AvgPool3d = _make(_AvgPool, 3, "AvgPool3d", _DOC.format(what="Average", n=3, layout="NDHWC", pad="Zero"))
