"""QuantizedLinear, QuantizedEmbedding and nn.quantize, over cmx.core's
quantize, dequantize and quantized_matmul (MLX's affine format: packed
uint32 integers with a scale and a bias per group).

The layers' packed weights are parameters like any other, so a model can
be built with them and then given weights that were quantized elsewhere
(``load_weights``, ``update``), for instance a GGUF file's Q4_0/Q4_1/Q8_0
tensors as ``mx.load`` returns them."""

import math
from typing import Callable, Optional, Union

import cmx.core as mx
from cmx.utils import tree_map_with_path
from .base import Module

__all__ = ["QuantizedLinear", "QuantizedEmbedding", "quantize"]

# mode -> (default group size, default bits), as MLX's.
_DEFAULTS = {"affine": (64, 4)}


def _defaults(group_size, bits, mode):
    if mode not in _DEFAULTS:
        raise ValueError(f"[quantize] Quantization mode '{mode}' is not supported "
                         f"by cmx yet (only {', '.join(map(repr, _DEFAULTS))}).")
    g, b = _DEFAULTS[mode]
    return group_size or g, bits or b


class _Quantized(Module):
    """The packed weight of a quantized layer (frozen)."""

    def _setup(self, weight, group_size, bits, mode):
        self.group_size, self.bits = _defaults(group_size, bits, mode)
        self.mode = mode
        self.weight, self.scales, *biases = mx.quantize(
            weight, self.group_size, self.bits, mode=mode)
        if biases and biases[0] is not None:
            self.biases = biases[0]
        self.freeze()

    def unfreeze(self, *args, **kwargs):
        """As :meth:`Module.unfreeze`; the quantized weights stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _qargs(self) -> str:
        return f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"

    def _qkw(self) -> dict:
        return dict(scales=self["scales"], biases=self.get("biases"),
                    group_size=self.group_size, bits=self.bits, mode=self.mode)

    def _matmul_t(self, x):
        """``x`` times the dequantized weight, transposed."""
        return mx.quantized_matmul(x, self["weight"], transpose=True, **self._qkw())


class QuantizedLinear(_Quantized):
    """A Linear layer with its weight quantized to ``bits`` bits in groups
    of ``group_size`` (frozen).

    Args:
        input_dims (int), output_dims (int), bias (bool): As :class:`Linear`.
        group_size (int, optional): Default ``64``.
        bits (int, optional): Default ``4``.
        mode (str): ``"affine"``.
    """

    def __init__(self, input_dims: int, output_dims: int, bias: bool = True,
                 group_size: int = None, bits: int = None, mode: str = "affine"):
        super().__init__()
        k = math.sqrt(1 / input_dims)
        self._setup(mx.random.uniform(-k, k, (output_dims, input_dims)),
                    group_size, bits, mode)
        if bias:
            self.bias = mx.zeros((output_dims,))
        self.freeze()

    def _extra_repr(self) -> str:
        out = self.scales.shape[0]
        inp = self.weight.shape[1] * 32 // self.bits
        return f"input_dims={inp}, output_dims={out}, bias={'bias' in self}, " + self._qargs()

    def __call__(self, x):
        y = self._matmul_t(x)
        if "bias" in self:
            y = y + self["bias"]
        return y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None,
                    bits: int = None, mode: str = "affine"):
        """A QuantizedLinear with ``linear_layer``'s weights quantized."""
        out, inp = linear_layer.weight.shape
        q = cls.__new__(cls)
        Module.__init__(q)
        q._setup(linear_layer.weight, group_size, bits, mode)
        if "bias" in linear_layer:
            q.bias = linear_layer.bias
        q.freeze()
        return q


class QuantizedEmbedding(_Quantized):
    """An Embedding with its table quantized (frozen); arguments as
    :class:`QuantizedLinear`."""

    def __init__(self, num_embeddings: int, dims: int, group_size: int = None,
                 bits: int = None, mode: str = "affine"):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.dims = dims
        self._setup(mx.random.normal((num_embeddings, dims), scale=math.sqrt(1 / dims)),
                    group_size, bits, mode)

    def _extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.dims}, " + self._qargs()

    def __call__(self, x):
        b = self.get("biases")
        return mx.dequantize(self["weight"][x], self["scales"][x],
                             None if b is None else b[x], self.group_size,
                             self.bits, mode=self.mode)

    def as_linear(self, x):
        """``x`` times the dequantized table, transposed (weight tying)."""
        return self._matmul_t(x)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = None,
                       bits: int = None, mode: str = "affine"):
        """A QuantizedEmbedding with ``embedding_layer``'s table quantized."""
        n, d = embedding_layer.weight.shape
        q = cls.__new__(cls)
        Module.__init__(q)
        q.num_embeddings, q.dims = n, d
        q._setup(embedding_layer.weight, group_size, bits, mode)
        return q


def quantize(model: Module, group_size: int = None, bits: int = None, *,
             mode: str = "affine", quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None):
    """Replaces, in place, the leaf modules of ``model`` that have a
    ``to_quantized`` method (Linear and Embedding) by quantized ones.

    Args:
        model (Module): The model.
        group_size (int, optional), bits (int, optional), mode (str): The
            quantization of every replaced layer (defaults as
            :class:`QuantizedLinear`).
        quantize_input (bool): Not supported by cmx (raises).
        class_predicate (callable, optional): ``(path, module)`` -> ``False``
            to keep the module, ``True`` to quantize it with the arguments
            above, or a dict of ``to_quantized`` arguments to use instead.
            Default: every module with ``to_quantized``.

    Raises:
        ValueError: for a selected module that cannot be quantized (no
        ``to_quantized``), or shapes that do not divide into groups.
    """
    if quantize_input:
        raise NotImplementedError("[quantize] quantize_input is not implemented in cmx")
    pred = class_predicate or (lambda _, m: hasattr(m, "to_quantized"))

    def maybe(path, m):
        choice = pred(path, m)
        if not choice:
            return m
        if not hasattr(m, "to_quantized"):
            raise ValueError(f"[quantize] Unable to quantize model of type {type(m)}")
        if isinstance(choice, dict):
            return m.to_quantized(**choice)
        return m.to_quantized(group_size=group_size, bits=bits, mode=mode)

    leaves = tree_map_with_path(maybe, model.leaf_modules(), is_leaf=Module.is_module)
    model.update_modules(leaves)
