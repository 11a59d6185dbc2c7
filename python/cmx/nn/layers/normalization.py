"""Normalization layers: LayerNorm, RMSNorm, GroupNorm, InstanceNorm and
BatchNorm. LayerNorm and RMSNorm call the fused ``mx.fast`` kernels (as
MLX's do); the others are written with plain ops (mean and variance over
the normalized axes)."""

import cmx.core as mx
from .base import Module

__all__ = ["LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm", "BatchNorm"]


def _standardize(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over axes (biased variance)."""
    mean = mx.mean(x, axis=axes, keepdims=True)
    var = mx.var(x, axis=axes, keepdims=True)
    return (x - mean) * mx.rsqrt(var + eps)


def _affine(module, x):
    if "weight" in module:
        x = module["weight"] * x
    if "bias" in module:
        x = x + module["bias"]
    return x


class LayerNorm(Module):
    r"""Normalizes the last axis to zero mean and unit variance, then
    scales by ``weight`` (ones) and shifts by ``bias`` (zeros) if ``affine``.

    Args:
        dims (int): The size of the last axis.
        eps (float): Added to the variance. Default ``1e-5``.
        affine (bool): Learn ``weight`` (and ``bias``). Default ``True``.
        bias (bool): With ``affine``, learn ``bias`` too. Default ``True``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = True,
                 bias: bool = True):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.eps = eps
        self.dims = dims

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        weight = self["weight"] if "weight" in self else None
        bias = self["bias"] if "bias" in self else None
        return mx.fast.layer_norm(x, weight, bias, self.eps)


class RMSNorm(Module):
    r"""Divides by the root mean square of the last axis,
    :math:`x / \sqrt{\overline{x^2} + \epsilon}`, and scales by ``weight``
    (ones). Half-precision inputs are normalized in float32.

    Args:
        dims (int): The size of the last axis.
        eps (float): Added to the mean square. Default ``1e-5``.
    """

    def __init__(self, dims: int, eps: float = 1e-5):
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x):
        return mx.fast.rms_norm(x, self["weight"], self.eps)


class GroupNorm(Module):
    r"""Normalizes groups of channels (the last axis) over the spatial axes
    and the channels of each group, per batch element.

    With ``pytorch_compatible`` the groups are runs of consecutive channels
    (as PyTorch); otherwise channel ``c`` belongs to group
    ``c % num_groups`` (MLX's default).

    Args:
        num_groups (int): The number of groups; must divide ``dims``.
        dims (int): The number of channels.
        eps (float): Added to the variance. Default ``1e-5``.
        affine (bool): Learn a per-channel ``weight`` and ``bias``.
        pytorch_compatible (bool): Group consecutive channels. Default ``False``.
    """

    def __init__(self, num_groups: int, dims: int, eps: float = 1e-5,
                 affine: bool = True, pytorch_compatible: bool = False):
        super().__init__()
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, "
                f"affine={'weight' in self}, pytorch_compatible={self.pytorch_compatible}")

    def __call__(self, x):
        shape = x.shape
        g = self.num_groups
        if self.pytorch_compatible:
            # (batch, positions, groups, channels per group): normalize over
            # positions and the channels of a group.
            y = x.reshape(shape[0], -1, g, shape[-1] // g)
            y = _standardize(y, (1, 3), self.eps)
        else:
            y = x.reshape(shape[0], -1, g)
            y = _standardize(y, 1, self.eps)
        return _affine(self, y.reshape(shape))


class InstanceNorm(Module):
    r"""Normalizes each channel (the last axis) of each batch element over
    the spatial axes (all but the first and last).

    Args:
        dims (int): The number of channels.
        eps (float): Added to the variance. Default ``1e-5``.
        affine (bool): Learn a per-channel ``weight`` and ``bias``.
            Default ``False``.
    """

    def __init__(self, dims: int, eps: float = 1e-5, affine: bool = False):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self) -> str:
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        axes = tuple(range(1, x.ndim - 1))
        return _affine(self, _standardize(x, axes, self.eps))


class BatchNorm(Module):
    r"""Normalizes each feature (the last axis) over the batch and spatial
    axes of inputs with 2 to 4 dimensions (``NC``, ``NLC``, ``NHWC``).

    In training mode the batch statistics normalize and update the running
    ones: ``running = (1 - momentum) * running + momentum * batch`` (the
    running variance from the unbiased batch variance). In eval
    mode the running statistics normalize. ``running_mean`` and
    ``running_var`` are parameters that stay frozen.

    Args:
        num_features (int): The size of the last axis.
        eps (float): Added to the variance. Default ``1e-5``.
        momentum (float): The running statistics' update rate. Default ``0.1``.
        affine (bool): Learn ``weight`` and ``bias``. Default ``True``.
        track_running_stats (bool): Keep running statistics. Default ``True``.
    """

    _STATS = ["running_mean", "running_var"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, track_running_stats: bool = True):
        super().__init__()
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            self.freeze(keys=self._STATS, recurse=False)

    def unfreeze(self, *args, **kwargs):
        """As :meth:`Module.unfreeze`; the running statistics stay frozen."""
        super().unfreeze(*args, **kwargs)
        if self.track_running_stats:
            self.freeze(keys=self._STATS, recurse=False)
        return self

    def _extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={'weight' in self}, "
                f"track_running_stats={self.track_running_stats}")

    def __call__(self, x):
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(
                f"Expected input tensor to have 2, 3 or 4 dimensions, but got {x.ndim}"
            )
        axes = tuple(range(x.ndim - 1))
        if self.training and x.size // x.shape[-1] == 1:
            raise ValueError("BatchNorm training requires more than one value per channel.")
        if self.training or not self.track_running_stats:
            mean = mx.mean(x, axis=axes)
            var = mx.var(x, axis=axes)
            if self.training and self.track_running_stats:
                m = self.momentum
                unbiased = mx.var(x, axis=axes, ddof=1)
                self.running_mean = (1 - m) * self.running_mean + m * mean
                self.running_var = (1 - m) * self.running_var + m * unbiased
        else:
            mean, var = self.running_mean, self.running_var
        return _affine(self, (x - mean) * mx.rsqrt(var + self.eps))
