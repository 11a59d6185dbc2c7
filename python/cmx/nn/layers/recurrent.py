"""Recurrent layers: RNN, GRU and LSTM over ``(N, L, D)`` or ``(L, D)``
inputs, unrolled in Python along the sequence axis (-2)."""

import math
from typing import Callable, Optional

import cmx.core as mx
from .base import Module

__all__ = ["RNN", "GRU", "LSTM"]


def _uniform(k, *shape):
    return mx.random.uniform(-k, k, shape)


def _gated_weights(module, input_size, hidden_size, gates):
    """Wx (gates * hidden, input) and Wh (gates * hidden, hidden) from
    U(-k, k), k = 1 / sqrt(hidden); returns k."""
    k = 1.0 / math.sqrt(hidden_size)
    module.hidden_size = hidden_size
    module.Wx = _uniform(k, gates * hidden_size, input_size)
    module.Wh = _uniform(k, gates * hidden_size, hidden_size)
    return k


def _project(x, w, b):
    """x @ w.T (+ b): the input projection of every step at once."""
    return mx.addmm(b, x, w.T) if b is not None else x @ w.T


class RNN(Module):
    r"""Elman recurrence :math:`h_t = f(x_t W_{xh}^\top + h_{t-1} W_{hh}^\top + b)`.

    Weights ``Wxh`` (``(hidden, input)``), ``Whh`` and ``bias`` are drawn
    from :math:`U(-k, k)`, :math:`k = 1/\sqrt{\text{hidden}}`.

    Args:
        input_size (int): The input features.
        hidden_size (int): The hidden state size.
        bias (bool): Learn a bias. Default ``True``.
        nonlinearity (callable, optional): :math:`f` (default ``mx.tanh``).

    Call with ``x`` and an optional initial ``hidden``; returns the hidden
    states of every step, ``(..., L, hidden_size)``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: Optional[Callable] = None):
        super().__init__()
        self.nonlinearity = nonlinearity or mx.tanh
        if not callable(self.nonlinearity):
            raise ValueError(
                f"Nonlinearity must be callable. Current value: {nonlinearity}."
            )
        k = 1.0 / math.sqrt(hidden_size)
        self.hidden_size = hidden_size
        self.Wxh = _uniform(k, hidden_size, input_size)
        self.Whh = _uniform(k, hidden_size, hidden_size)
        self.bias = _uniform(k, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wxh.shape[1]}, hidden_size={self.hidden_size}, "
                f"nonlinearity={self.nonlinearity}, bias={self.bias is not None}")

    def __call__(self, x, hidden=None):
        x = _project(x, self.Wxh, self.bias)
        out = []
        for t in range(x.shape[-2]):
            h = x[..., t, :]
            if hidden is not None:
                h = mx.addmm(h, hidden, self.Whh.T)
            hidden = self.nonlinearity(h)
            out.append(hidden)
        return mx.stack(out, axis=-2)


class GRU(Module):
    r"""Gated recurrent unit:

    .. math::
        r, z &= \sigma(x_t W_{x,rz}^\top + b_{rz} + h_{t-1} W_{h,rz}^\top) \\
        n &= \tanh(x_t W_{x,n}^\top + b_n + r \odot (h_{t-1} W_{h,n}^\top + b_{hn})) \\
        h_t &= (1 - z) \odot n + z \odot h_{t-1}

    ``Wx`` (``(3 hidden, input)``), ``Wh``, ``b`` (``3 hidden``) and ``bhn``
    are drawn from :math:`U(-k, k)`, :math:`k = 1/\sqrt{\text{hidden}}`.

    Args:
        input_size (int): The input features.
        hidden_size (int): The hidden state size.
        bias (bool): Learn the biases. Default ``True``.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        k = _gated_weights(self, input_size, hidden_size, 3)
        self.b = _uniform(k, 3 * hidden_size) if bias else None
        self.bhn = _uniform(k, hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.b is not None}")

    def __call__(self, x, hidden=None):
        H = self.hidden_size
        x = _project(x, self.Wx, self.b)
        out = []
        for t in range(x.shape[-2]):
            xt = x[..., t, :]
            x_rz, x_n = xt[..., : 2 * H], xt[..., 2 * H:]
            if hidden is not None:
                hp = hidden @ self.Wh.T
                h_rz, h_n = hp[..., : 2 * H], hp[..., 2 * H:]
                if self.bhn is not None:
                    h_n = h_n + self.bhn
                x_rz = x_rz + h_rz
            r, z = mx.split(mx.sigmoid(x_rz), 2, axis=-1)
            if hidden is not None:
                n = x_n + r * h_n
            elif self.bhn is not None:
                n = x_n + r * self.bhn
            else:
                n = x_n
            n = mx.tanh(n)
            hidden = (1 - z) * n + z * hidden if hidden is not None else (1 - z) * n
            out.append(hidden)
        return mx.stack(out, axis=-2)


class LSTM(Module):
    r"""Long short-term memory:

    .. math::
        i, f, g, o &= x_t W_x^\top + b + h_{t-1} W_h^\top \\
        c_t &= \sigma(f) \odot c_{t-1} + \sigma(i) \odot \tanh(g) \\
        h_t &= \sigma(o) \odot \tanh(c_t)

    ``Wx`` (``(4 hidden, input)``), ``Wh`` and ``bias`` are drawn from
    :math:`U(-k, k)`, :math:`k = 1/\sqrt{\text{hidden}}`.

    Args:
        input_size (int): The input features.
        hidden_size (int): The hidden state size.
        bias (bool): Learn a bias. Default ``True``.

    Call with ``x`` and optional ``hidden`` and ``cell``; returns the hidden
    states and the cell states of every step.
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
        super().__init__()
        k = _gated_weights(self, input_size, hidden_size, 4)
        self.bias = _uniform(k, 4 * hidden_size) if bias else None

    def _extra_repr(self) -> str:
        return (f"input_dims={self.Wx.shape[1]}, hidden_size={self.hidden_size}, "
                f"bias={self.bias is not None}")

    def __call__(self, x, hidden=None, cell=None):
        x = _project(x, self.Wx, self.bias)
        hs, cs = [], []
        for t in range(x.shape[-2]):
            ifgo = x[..., t, :]
            if hidden is not None:
                ifgo = mx.addmm(ifgo, hidden, self.Wh.T)
            i, f, g, o = mx.split(ifgo, 4, axis=-1)
            i, f, g, o = mx.sigmoid(i), mx.sigmoid(f), mx.tanh(g), mx.sigmoid(o)
            cell = f * cell + i * g if cell is not None else i * g
            hidden = o * mx.tanh(cell)
            hs.append(hidden)
            cs.append(cell)
        return mx.stack(hs, axis=-2), mx.stack(cs, axis=-2)
