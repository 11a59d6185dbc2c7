"""Identity, Linear and Bilinear layers."""

import math
from typing import Any

import cmx.core as mx
from .base import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input unchanged; takes (and ignores) any arguments."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()

    def __call__(self, x):
        return x


class Linear(Module):
    r"""An affine map :math:`y = x W^\top + b`.

    ``weight`` has shape ``(output_dims, input_dims)``; it and ``bias``
    (``(output_dims,)``) are drawn from :math:`U(-k, k)` with
    :math:`k = 1 / \sqrt{\text{input\_dims}}`.

    Args:
        input_dims (int): The size of the last axis of the input.
        output_dims (int): The size of the last axis of the output.
        bias (bool): Whether to add a bias. Default ``True``.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True):
        super().__init__()
        k = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(-k, k, (output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(-k, k, (output_dims,))

    def _extra_repr(self) -> str:
        out, inp = self.weight.shape
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x):
        if "bias" in self:
            return mx.addmm(self["bias"], x, self["weight"].T)
        return x @ self["weight"].T

    def to_quantized(self, group_size: int = None, bits: int = None,
                     mode: str = "affine", quantize_input: bool = False):
        """A :class:`QuantizedLinear` with this layer's weights quantized."""
        if quantize_input:
            raise NotImplementedError("[quantize] quantize_input is not implemented in cmx")
        from .quantized import QuantizedLinear

        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    r"""A bilinear map :math:`y_k = x_1^\top W_k x_2 + b_k`.

    ``weight`` has shape ``(output_dims, input2_dims, input1_dims)``; it and
    ``bias`` are drawn from :math:`U(-k, k)`, :math:`k = 1/\sqrt{\text{input1\_dims}}`.

    Args:
        input1_dims (int): The last axis of the first input.
        input2_dims (int): The last axis of the second input.
        output_dims (int): The last axis of the output.
        bias (bool): Whether to add a bias. Default ``True``.
    """

    def __init__(self, input1_dims: int, input2_dims: int, output_dims: int,
                 bias: bool = True):
        super().__init__()
        k = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(-k, k, (output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(-k, k, (output_dims,))

    def _extra_repr(self) -> str:
        out, in2, in1 = self.weight.shape
        return (f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, "
                f"bias={'bias' in self}")

    def __call__(self, x1, x2):
        out, in2, in1 = self.weight.shape
        lead = x1.shape[:-1]
        # (N, in1) @ (in1, out*in2) -> (N, out, in2), then contract with x2.
        t = x1.reshape(-1, in1) @ self.weight.reshape(out * in2, in1).T
        t = t.reshape(-1, out, in2)
        y = (t @ x2.reshape(-1, in2, 1)).reshape(-1, out)
        if "bias" in self:
            y = y + self.bias
        return y.reshape(*lead, out)
