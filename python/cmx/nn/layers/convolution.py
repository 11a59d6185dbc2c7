"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, over
channels-last inputs (``NLC``, ``NHWC``, ``NDHWC``) as MLX."""

import math
from typing import Tuple, Union

import cmx.core as mx
from .base import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d",
           "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]


def _tuple(v, n: int) -> Tuple[int, ...]:
    return (v,) * n if isinstance(v, int) else tuple(v)


class _ConvNd(Module):
    """Shared by the convolutions: ``weight`` (out, *kernel, in / groups)
    drawn from U(-k, k), k = 1 / sqrt(in / groups * prod(kernel)), and a
    zero ``bias``."""

    _n = 1
    _transpose = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding,
                 dilation, bias, groups=1, output_padding=None):
        super().__init__()
        n = self._n
        if in_channels % groups != 0:
            raise ValueError(
                f"The number of input channels ({in_channels}) must be "
                f"divisible by the number of groups ({groups})"
            )
        kernel = _tuple(kernel_size, n)
        cin = in_channels if self._transpose else in_channels // groups
        k = math.sqrt(1.0 / (cin * math.prod(kernel)))
        self.weight = mx.random.uniform(-k, k, (out_channels, *kernel, cin))
        if bias:
            self.bias = mx.zeros((out_channels,))
        # Tuples become dict items (as MLX's layers); ints stay attributes.
        self.padding = padding if n == 1 else _tuple(padding, n)
        self.stride = stride if n == 1 else _tuple(stride, n)
        self.dilation = dilation
        if output_padding is not None:
            self.output_padding = output_padding if n == 1 else _tuple(output_padding, n)
        if not self._transpose:
            self.groups = groups

    def _extra_repr(self) -> str:
        out = self.weight.shape[0]
        kernel = tuple(self.weight.shape[1:-1])
        cin = self.weight.shape[-1] * getattr(self, "groups", 1)
        ks = kernel[0] if self._n == 1 else kernel
        s = (f"{cin}, {out}, kernel_size={ks}, stride={self.stride}, "
             f"padding={self.padding}, dilation={self.dilation}, ")
        if self._transpose:
            s += f"output_padding={self.output_padding}, "
        elif self._n != 3:
            s += f"groups={self.groups}, "
        return s + f"bias={'bias' in self}"

    def __call__(self, x):
        y = self._conv(x)
        if "bias" in self:
            y = y + self.bias
        return y


class Conv1d(_ConvNd):
    """1-d convolution over ``NLC`` inputs.

    Args:
        in_channels (int): Input channels.
        out_channels (int): Output channels.
        kernel_size (int): The kernel width.
        stride (int): Default ``1``.
        padding (int): Zero padding on both sides. Default ``0``.
        dilation (int): Default ``1``.
        groups (int): Channel groups. Default ``1``.
        bias (bool): Learn a bias. Default ``True``.
    """

    _n = 1

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 stride: int = 1, padding: int = 0, dilation: int = 1,
                 groups: int = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, bias, groups)

    def _conv(self, x):
        return mx.conv1d(x, self.weight, self.stride, self.padding, self.dilation,
                         self.groups)


class Conv2d(_ConvNd):
    """2-d convolution over ``NHWC`` inputs; arguments as :class:`Conv1d`,
    with ints or pairs for the sizes."""

    _n = 2

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
                 padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 groups: int = 1, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, bias, groups)

    def _conv(self, x):
        return mx.conv2d(x, self.weight, self.stride, self.padding, self.dilation,
                         self.groups)


class Conv3d(_ConvNd):
    """3-d convolution over ``NDHWC`` inputs; arguments as :class:`Conv2d`
    (without groups), with ints or triples for the sizes."""

    _n = 3

    def __init__(self, in_channels: int, out_channels: int,
                 kernel_size: Union[int, tuple], stride: Union[int, tuple] = 1,
                 padding: Union[int, tuple] = 0, dilation: Union[int, tuple] = 1,
                 bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, bias)

    def _conv(self, x):
        return mx.conv3d(x, self.weight, self.stride, self.padding, self.dilation)


class ConvTranspose1d(_ConvNd):
    """1-d transposed convolution over ``NLC`` inputs. ``weight`` has shape
    ``(out_channels, kernel_size, in_channels)``.

    Args:
        in_channels, out_channels, kernel_size, stride, padding, dilation:
            as :class:`Conv1d`.
        output_padding (int): Extra size added to one side of the output.
            Default ``0``.
        bias (bool): Learn a bias. Default ``True``.
    """

    _n = 1
    _transpose = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int,
                 stride: int = 1, padding: int = 0, dilation: int = 1,
                 output_padding: int = 0, bias: bool = True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         dilation, bias, output_padding=output_padding)

    def _conv(self, x):
        return mx.conv_transpose1d(x, self.weight, self.stride, self.padding,
                                   self.dilation, self.output_padding)


class ConvTranspose2d(ConvTranspose1d):
    """2-d transposed convolution over ``NHWC`` inputs; arguments as
    :class:`ConvTranspose1d`, with ints or pairs."""

    _n = 2

    def _conv(self, x):
        return mx.conv_transpose2d(x, self.weight, self.stride, self.padding,
                                   self.dilation, self.output_padding)


class ConvTranspose3d(ConvTranspose1d):
    """3-d transposed convolution over ``NDHWC`` inputs; arguments as
    :class:`ConvTranspose1d`, with ints or triples."""

    _n = 3

    def _conv(self, x):
        return mx.conv_transpose3d(x, self.weight, self.stride, self.padding,
                                   self.dilation, self.output_padding)
