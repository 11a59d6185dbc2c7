"""Upsample: nearest, linear and cubic interpolation of the spatial axes of
channels-last inputs (``N, *spatial, C``), one axis at a time."""

import math
from typing import Literal, Tuple, Union

import cmx.core as mx
from .base import Module

__all__ = ["Upsample", "upsample_nearest", "upsample_linear", "upsample_cubic"]


def _source_coords(n_in: int, n_out: int, scale: float, align_corners: bool):
    """Where output sample i reads the input (a float coordinate)."""
    if align_corners:
        step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        return [i * step for i in range(n_out)]
    return [(i + 0.5) / scale - 0.5 for i in range(n_out)]


def _cubic_weight(d: float, a: float = -0.75) -> float:
    """Keys' cubic convolution kernel at distance d (a = -0.75)."""
    d = abs(d)
    if d <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    if d < 2:
        return (((d - 5) * d + 8) * d - 4) * a
    return 0.0


def _interp_axis(x, axis: int, n_out: int, scale: float, align_corners: bool,
                 taps: int):
    """Interpolates x along axis with 2 (linear) or 4 (cubic) taps; source
    indices past the edges are clamped."""
    n_in = x.shape[axis]
    coords = _source_coords(n_in, n_out, scale, align_corners)
    idx, wts = [], []
    for c in coords:
        f = math.floor(c)
        t = c - f
        if taps == 2:
            offs, ws = (0, 1), (1 - t, t)
        else:
            offs = (-1, 0, 1, 2)
            ws = tuple(_cubic_weight(t - o) for o in offs)
        idx.append([min(max(f + o, 0), n_in - 1) for o in offs])
        wts.append(ws)
    out = None
    shape = [1] * x.ndim
    shape[axis] = n_out
    for j in range(taps):
        ix = mx.array([row[j] for row in idx], dtype=mx.int32)
        w = mx.array([row[j] for row in wts], dtype=mx.float32).reshape(shape)
        term = mx.take(x, ix, axis=axis) * w.astype(x.dtype)
        out = term if out is None else out + term
    return out


def _out_sizes(x, scales):
    return [int(math.floor(s * f)) for s, f in zip(x.shape[1:-1], scales)]


def upsample_nearest(x, scale_factor: Tuple[float, ...]):
    """Nearest-neighbour resize of ``x`` (``N, *spatial, C``): output index
    ``i`` reads input ``floor(i / scale)``."""
    for d, (n_out, s) in enumerate(zip(_out_sizes(x, scale_factor), scale_factor)):
        n_in = x.shape[1 + d]
        ix = [min(int(math.floor(i / s)), n_in - 1) for i in range(n_out)]
        x = mx.take(x, mx.array(ix, dtype=mx.int32), axis=1 + d)
    return x


def upsample_linear(x, scale_factor: Tuple[float, ...], align_corners: bool = False):
    """(Multi)linear resize of ``x`` (``N, *spatial, C``)."""
    for d, (n_out, s) in enumerate(zip(_out_sizes(x, scale_factor), scale_factor)):
        x = _interp_axis(x, 1 + d, n_out, s, align_corners, 2)
    return x


def upsample_cubic(x, scale_factor: Tuple[float, ...], align_corners: bool = False):
    """Cubic resize of ``x`` (``N, *spatial, C``), Keys' kernel with
    ``a = -0.75``."""
    for d, (n_out, s) in enumerate(zip(_out_sizes(x, scale_factor), scale_factor)):
        x = _interp_axis(x, 1 + d, n_out, s, align_corners, 4)
    return x


class Upsample(Module):
    """Resizes the spatial axes of ``(N, *spatial, C)`` inputs by
    ``scale_factor`` (output size ``floor(size * scale)``).

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
