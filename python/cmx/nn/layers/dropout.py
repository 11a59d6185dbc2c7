"""Dropout, Dropout2d and Dropout3d."""

import cmx.core as mx
from .base import Module

__all__ = ["Dropout", "Dropout2d", "Dropout3d"]


class _DropoutBase(Module):
    # Axes (from the end) over which one draw is shared: () for Dropout.
    _shared_axes = ()

    def __init__(self, p: float = 0.5):
        super().__init__()
        if p < 0 or p >= 1:
            raise ValueError(f"The dropout probability {p} is not in [0, 1)")
        self._p_1 = 1 - p

    def _extra_repr(self) -> str:
        return f"p={1 - self._p_1}"

    def _check(self, x):
        pass

    def __call__(self, x):
        self._check(x)
        if self._p_1 == 1 or not self.training:
            return x
        shape = list(x.shape)
        for a in self._shared_axes:
            shape[a] = 1
        keep = mx.random.bernoulli(self._p_1, shape)
        return (keep * x) * (1 / self._p_1)


class Dropout(_DropoutBase):
    r"""Zeroes each element with probability ``p`` during training and
    scales the rest by :math:`1/(1-p)`; the identity in eval mode.

    Args:
        p (float): The probability of zeroing an element. Default ``0.5``.
    """


class Dropout2d(_DropoutBase):
    r"""Zeroes whole channels of ``NHWC`` (or ``HWC``) inputs with
    probability ``p`` during training, scaling the rest by :math:`1/(1-p)`.

    Args:
        p (float): The probability of zeroing a channel. Default ``0.5``.
    """

    _shared_axes = (-2, -3)

    def _check(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(
                f"Received input with {x.ndim} dimensions. Expected 3 or 4 dimensions."
            )


class Dropout3d(_DropoutBase):
    r"""Zeroes whole channels of ``NDHWC`` (or ``DHWC``) inputs with
    probability ``p`` during training, scaling the rest by :math:`1/(1-p)`.

    Args:
        p (float): The probability of zeroing a channel. Default ``0.5``.
    """

    _shared_axes = (-2, -3, -4)

    def _check(self, x):
        if x.ndim not in (4, 5):
            raise ValueError(
                f"Received input with {x.ndim} dimensions. Expected 4 or 5 dimensions."
            )
