"""Positional encodings: RoPE (the fused ``mx.fast.rope``, as MLX's),
SinusoidalPositionalEncoding and ALiBi. ``rope`` is the composite form
of the rotation, written with plain ops (a reference for the fused one)."""

import math
from typing import Optional

import cmx.core as mx
from .base import Module

__all__ = ["RoPE", "SinusoidalPositionalEncoding", "ALiBi", "rope"]


def rope(x, dims: int, traditional: bool, base: float, scale: float, offset=0):
    r"""Rotary positional encoding of the first ``dims`` features of ``x``
    (``(..., L, D)``); position ``p = scale * (offset + l)`` rotates feature
    pair ``i`` by ``p * base^{-2i/dims}``. Pairs are adjacent features with
    ``traditional``, else feature ``i`` and ``i + dims/2``. Features past
    ``dims`` pass unchanged."""
    if dims % 2 != 0 or dims > x.shape[-1]:
        raise ValueError(f"[rope] dims ({dims}) must be even and at most the "
                         f"last axis ({x.shape[-1]})")
    L = x.shape[-2]
    half = dims // 2
    dtype = x.dtype
    pos = (mx.arange(L, dtype=mx.float32) + offset) * scale
    inv_freq = mx.exp(mx.arange(half, dtype=mx.float32) * (-math.log(base) / half))
    theta = pos[:, None] * inv_freq[None, :]
    cos, sin = mx.cos(theta), mx.sin(theta)
    xr = x[..., :dims]
    if traditional:
        pairs = xr.reshape(*xr.shape[:-1], half, 2)
        x1, x2 = pairs[..., 0], pairs[..., 1]
    else:
        x1, x2 = xr[..., :half], xr[..., half:]
    y1 = x1 * cos - x2 * sin
    y2 = x1 * sin + x2 * cos
    if traditional:
        y = mx.stack([y1, y2], axis=-1).reshape(xr.shape)
    else:
        y = mx.concatenate([y1, y2], axis=-1)
    y = y.astype(dtype)
    if dims < x.shape[-1]:
        y = mx.concatenate([y, x[..., dims:]], axis=-1)
    return y


class RoPE(Module):
    """Rotary positional encoding (RoFormer): rotates pairs of features by
    angles proportional to the position along axis ``-2``.

    Args:
        dims (int): How many leading features to rotate (even).
        traditional (bool): Pair adjacent features instead of the halves.
            Default ``False``.
        base (float): The base of the geometric frequencies. Default ``10000``.
        scale (float): Multiplies the positions. Default ``1.0``.
    """

    def __init__(self, dims: int, traditional: bool = False, base: float = 10000,
                 scale: float = 1.0):
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self) -> str:
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset=0):
        """Rotates ``x`` (``(..., L, D)``) for positions ``offset ...
        offset + L - 1`` (``offset`` an int or a scalar array)."""
        return mx.fast.rope(x, self.dims, traditional=self.traditional,
                            base=self.base, scale=self.scale, offset=offset)


class SinusoidalPositionalEncoding(Module):
    r"""Sinusoidal encoding of (real-valued) positions: each input value
    ``x`` becomes ``dims`` features ``sin(x w_i)`` and ``cos(x w_i)``, with
    ``dims/2`` frequencies ``w_i`` spaced geometrically from ``max_freq``
    down to ``min_freq``, times ``scale``.

    Args:
        dims (int): The number of features per position.
        min_freq (float): The lowest frequency. Default ``0.0001``.
        max_freq (float): The highest frequency. Default ``1``.
        scale (float, optional): The factor on the features (default
            :math:`\sqrt{2/\text{dims}}`).
        cos_first (bool): Put the cosines first. Default ``False``.
        full_turns (bool): Multiply the frequencies by :math:`2\pi`.
            Default ``False``.
    """

    def __init__(self, dims: int, min_freq: float = 0.0001, max_freq: float = 1,
                 scale: Optional[float] = None, cos_first: bool = False,
                 full_turns: bool = False):
        super().__init__()
        half = dims // 2
        t = 1 - mx.arange(0, half, dtype=mx.float32) / (half - 1)
        lo, hi = math.log(min_freq), math.log(max_freq)
        self._sigmas = mx.exp(t * (hi - lo) + lo)
        if full_turns:
            self._sigmas = self._sigmas * (2 * math.pi)
        self.scale = scale or (2 / dims) ** 0.5
        self.cos_first = cos_first

    def __call__(self, x):
        y = x[..., None] * self._sigmas
        parts = [mx.cos(y), mx.sin(y)] if self.cos_first else [mx.sin(y), mx.cos(y)]
        y = mx.concatenate(parts, axis=-1)
        if self.scale != 1:
            y = y * self.scale
        return y


class ALiBi(Module):
    """Attention with linear biases: adds ``-slope_h * |i - j|`` to the
    attention scores ``(..., heads, queries, keys)`` of head ``h``, with
    slopes ``2^(-8 (h + 1) / heads)``."""

    @staticmethod
    def create_alibi_matrix(q_sequence_length: int, k_sequence_length: int,
                            num_heads: int, offset: int, dtype=mx.float32):
        """The ``(1, num_heads, q, k)`` bias for queries at positions
        ``offset ...`` and keys at ``0 ...``."""
        q = mx.arange(offset, q_sequence_length, dtype=mx.float32)
        k = mx.arange(0, k_sequence_length, dtype=mx.float32)
        distance = -mx.abs(q[:, None] - k[None, :])
        slopes = ALiBi.create_alibi_slope(num_heads)
        return (distance[None, None] * slopes[None]).astype(dtype)

    @staticmethod
    def create_alibi_slope(num_heads: int):
        """The ``(num_heads, 1, 1)`` slopes ``2^(-8 (h + 1) / num_heads)``."""
        x = (2**8) ** (1.0 / num_heads)
        return mx.array([x ** (-(h + 1)) for h in range(num_heads)],
                        dtype=mx.float32).reshape(num_heads, 1, 1)

    def __call__(self, attention_scores, offset: int = 0, mask=None):
        heads, q, k = attention_scores.shape[-3:]
        bias = self.create_alibi_matrix(q + offset, k, heads, offset,
                                        attention_scores.dtype)
        if mask is not None:
            bias = bias + mask
        return attention_scores + bias
