"""Upsample: nearest, linear and cubic interpolation of the spatial axes of
channels-last inputs (``N, *spatial, C``), one axis at a time."""

from typing import Literal, Tuple, Union

import cmx.core as mx
from .base import Module

__all__ = ["Upsample", "upsample_nearest", "upsample_linear", "upsample_cubic"]


def _out_size(n: int, scale: float) -> int:
    return int(scale * n)


def _coords(n_in: int, n_out: int, scale: float, align_corners: bool):
    """Where each output sample reads the input: a float32 coordinate per
    output index. Without align_corners the output grid (step 1 / scale)
    is centred on the input's."""
    i = mx.arange(n_out, dtype=mx.float32)
    if align_corners:
        return i * ((n_in - 1) / max(n_out - 1, 1))
    step = 1 / scale
    start = ((n_out - 1) * step - n_in + 1) / 2
    return i * step - start


def _cubic_weight(d, a: float = -0.75):
    """Keys' cubic convolution kernel at distances d (arrays), a = -0.75:
    the inner piece for |d| <= 1, the outer one for 1 < |d| < 2."""
    d = mx.abs(d)
    inner = ((a + 2) * d - (a + 3)) * d * d + 1
    outer = (((d - 5) * d + 8) * d - 4) * a
    return mx.where(d <= 1, inner, outer)


def _gather(x, axis, idx, n_in):
    idx = mx.clip(idx, 0, n_in - 1).astype(mx.int32)
    return mx.take(x, idx, axis=axis)


def _weights_shape(x, axis, w):
    shape = [1] * x.ndim
    shape[axis] = -1
    return w.reshape(shape).astype(x.dtype)


def _linear_axis(x, axis, scale, align_corners):
    n_in = x.shape[axis]
    c = mx.clip(_coords(n_in, _out_size(n_in, scale), scale, align_corners), 0, n_in - 1)
    lo, hi = mx.floor(c), mx.ceil(c)
    w = _weights_shape(x, axis, c - lo)
    return _gather(x, axis, lo, n_in) * (1 - w) + _gather(x, axis, hi, n_in) * w


def _cubic_axis(x, axis, scale, align_corners):
    n_in = x.shape[axis]
    c = _coords(n_in, _out_size(n_in, scale), scale, align_corners)
    base = mx.floor(c)
    out = None
    for o in (-1, 0, 1, 2):
        pos = base + o
        term = _gather(x, axis, pos, n_in) * _weights_shape(x, axis, _cubic_weight(c - pos))
        out = term if out is None else out + term
    return out


def _nearest_axis(x, axis, scale):
    n_in = x.shape[axis]
    n_out = _out_size(n_in, scale)
    i = mx.arange(n_out, dtype=mx.float32)
    if n_out > n_in:
        idx = mx.round((i + 0.5) * (n_in / n_out) - 0.5)
    else:
        idx = mx.floor(i * (n_in / n_out))
    return _gather(x, axis, idx, n_in)


def upsample_nearest(x, scale_factor: Tuple[float, ...]):
    """Nearest-neighbour resize of ``x`` (``N, *spatial, C``) to
    ``int(size * scale)`` along each spatial axis: enlarging, output ``i``
    reads the input nearest to the centre of its cell (ties to even);
    shrinking, input ``floor(i * size_in / size_out)``."""
    for d, s in enumerate(scale_factor):
        x = _nearest_axis(x, 1 + d, s)
    return x


def upsample_linear(x, scale_factor: Tuple[float, ...], align_corners: bool = False):
    """(Multi)linear resize of ``x`` (``N, *spatial, C``); coordinates past
    the edges are clamped."""
    for d, s in enumerate(scale_factor):
        x = _linear_axis(x, 1 + d, s, align_corners)
    return x


def upsample_cubic(x, scale_factor: Tuple[float, ...], align_corners: bool = False):
    """Cubic resize of ``x`` (``N, *spatial, C``) with Keys' kernel
    (``a = -0.75``); taps past the edges read the edge sample."""
    for d, s in enumerate(scale_factor):
        x = _cubic_axis(x, 1 + d, s, align_corners)
    return x


class Upsample(Module):
    """Resizes the spatial axes of ``(N, *spatial, C)`` inputs by
    ``scale_factor`` (output size ``int(size * scale)``).

    Args:
        scale_factor (float or tuple): One factor, or one per spatial axis.
        mode (str): ``"nearest"``, ``"linear"`` or ``"cubic"``.
            Default ``"nearest"``.
        align_corners (bool): For linear and cubic: map the corner samples
            onto each other instead of the pixel centres. Default ``False``.
        antialias (bool): Not supported; must be ``False``.
    """

    def __init__(self, scale_factor: Union[float, Tuple],
                 mode: Literal["nearest", "linear", "cubic"] = "nearest",
                 align_corners: bool = False, antialias: bool = False):
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias:
            raise NotImplementedError("[Upsample] antialias is not implemented in cmx")
        if isinstance(scale_factor, (list, tuple)):
            self.scale_factor = tuple(float(s) for s in scale_factor)
        else:
            self.scale_factor = float(scale_factor)
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self) -> str:
        return (f"scale_factor={self.scale_factor}, mode={self.mode!r}, "
                f"align_corners={self.align_corners}")

    def __call__(self, x):
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(
                f"[Upsample] The input should have at least 1 spatial dimension "
                f"which means it should be at least 3D but {x.ndim}D was provided"
            )
        scales = self.scale_factor
        if isinstance(scales, tuple):
            if len(scales) != dims:
                raise ValueError(
                    f"[Upsample] One scale per spatial dimension is required but "
                    f"scale_factor={scales} and the number of spatial dimensions "
                    f"were {dims}"
                )
        else:
            scales = (scales,) * dims
        if self.mode == "nearest":
            return upsample_nearest(x, scales)
        if self.mode == "linear":
            return upsample_linear(x, scales, self.align_corners)
        return upsample_cubic(x, scales, self.align_corners)
