"""Pooling layers: MaxPool1d/2d/3d and AvgPool1d/2d/3d over channels-last
inputs with a batch axis (``NLC``, ``NHWC``, ``NDHWC``).

Windows are gathered as a strided view (shape ``N, *out, *kernel, C``), or
by a plain reshape when they tile the input, and reduced with ``max`` or
``mean``; so gradients follow those reductions (ties in a max window share
the gradient). Padding uses ``-inf`` for max and ``0`` for average pooling
(the padded zeros count in the average)."""

import math
from typing import Optional, Tuple, Union

import cmx.core as mx
from .base import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d",
           "AvgPool1d", "AvgPool2d", "AvgPool3d"]


def _windows(x, kernel, stride):
    """The pooling windows of x (N, *spatial, C) as (N, *out, *kernel, C)."""
    spatial = x.shape[1:-1]
    n, c = x.shape[0], x.shape[-1]
    out = [(s - k) // st + 1 for s, k, st in zip(spatial, kernel, stride)]
    if tuple(kernel) == tuple(stride):
        # Non-overlapping: crop to whole windows and split each axis in two.
        idx = tuple(slice(0, o * k) for o, k in zip(out, kernel))
        x = x[(slice(None),) + idx]
        split = [d for o, k in zip(out, kernel) for d in (o, k)]
        x = x.reshape(n, *split, c)
        nd = len(kernel)
        perm = [0] + [1 + 2 * i for i in range(nd)] + [2 + 2 * i for i in range(nd)]
        return x.transpose(*perm, 2 * nd + 1)
    # Row-major element strides of x, then a view with a window axis per
    # spatial axis.
    strides = [1] * x.ndim
    for i in range(x.ndim - 2, -1, -1):
        strides[i] = strides[i + 1] * x.shape[i + 1]
    sp = strides[1:-1]
    shape = [n, *out, *kernel, c]
    view_strides = [strides[0], *(s * st for s, st in zip(sp, stride)), *sp, 1]
    return mx.as_strided(x, shape, view_strides)


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
        w = _windows(x, self._kernel_size, self._stride)
        return self._reduce(w, axis=self._axes)


class _MaxPool(_Pool):
    _padding_value = -math.inf

    @staticmethod
    def _reduce(w, axis):
        return mx.max(w, axis=axis)


class _AvgPool(_Pool):
    _padding_value = 0

    @staticmethod
    def _reduce(w, axis):
        return mx.mean(w, axis=axis)


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
