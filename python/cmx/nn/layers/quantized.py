"""QuantizedLinear, QuantizedEmbedding and nn.quantize.

They need cmx.core's quantize, dequantize and quantized_matmul; until the
core has them, building a quantized layer raises NotImplementedError
(never an approximation with different numerics)."""

import math
from typing import Callable, Optional, Union

import cmx.core as mx
from cmx import _compat
from .base import Module
from .embedding import Embedding
from .linear import Linear

__all__ = ["QuantizedLinear", "QuantizedEmbedding", "quantize"]

_DEFAULT_GROUP_SIZE = 64
_DEFAULT_BITS = 4


def _require(layer: str):
    missing = [n for n in ("quantize", "dequantize", "quantized_matmul")
               if not _compat.implemented(mx, n)]
    if missing:
        raise NotImplementedError(
            f"[{layer}] needs cmx.core.{', cmx.core.'.join(missing)}, which "
            "cmx does not implement yet"
        )


class _Quantized(Module):
    def _setup(self, weight, group_size, bits, mode):
        self.group_size = group_size or _DEFAULT_GROUP_SIZE
        self.bits = bits or _DEFAULT_BITS
        self.mode = mode
        self.weight, self.scales, self.biases = mx.quantize(
            weight, self.group_size, self.bits)
        self.freeze()

    def unfreeze(self, *args, **kwargs):
        """As :meth:`Module.unfreeze`; the quantized weights stay frozen."""
        super().unfreeze(*args, **kwargs)
        self.freeze(recurse=False)
        return self

    def _qargs(self) -> str:
        return f"group_size={self.group_size}, bits={self.bits}, mode={self.mode}"


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
        _require("QuantizedLinear")
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
        y = mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                biases=self["biases"], transpose=True,
                                group_size=self.group_size, bits=self.bits)
        if "bias" in self:
            y = y + self["bias"]
        return y

    @classmethod
    def from_linear(cls, linear_layer: Module, group_size: int = None,
                    bits: int = None, mode: str = "affine"):
        """A QuantizedLinear with ``linear_layer``'s weights quantized."""
        out, inp = linear_layer.weight.shape
        q = cls(inp, out, False, group_size, bits, mode)
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
        _require("QuantizedEmbedding")
        self.num_embeddings = num_embeddings
        self.dims = dims
        self._setup(mx.random.normal((num_embeddings, dims), scale=math.sqrt(1 / dims)),
                    group_size, bits, mode)

    def _extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.dims}, " + self._qargs()

    def __call__(self, x):
        return mx.dequantize(self["weight"][x], self["scales"][x], self["biases"][x],
                             self.group_size, self.bits)

    def as_linear(self, x):
        """``x`` times the dequantized table, transposed (weight tying)."""
        return mx.quantized_matmul(x, self["weight"], scales=self["scales"],
                                   biases=self["biases"], transpose=True,
                                   group_size=self.group_size, bits=self.bits)

    @classmethod
    def from_embedding(cls, embedding_layer: Module, group_size: int = None,
                       bits: int = None, mode: str = "affine"):
        """A QuantizedEmbedding with ``embedding_layer``'s table quantized."""
        n, d = embedding_layer.weight.shape
        q = cls(n, d, group_size, bits, mode)
        q._setup(embedding_layer.weight, group_size, bits, mode)
        return q


def quantize(model: Module, group_size: int = None, bits: int = None, *,
             mode: str = "affine", quantize_input: bool = False,
             class_predicate: Optional[Callable[[str, Module], Union[bool, dict]]] = None):
    """Replaces, in place, the Linear and Embedding layers of ``model`` for
    which ``class_predicate(path, module)`` holds (default: all whose
    weight's last axis divides into groups) by quantized ones."""
    _require("quantize")
    if quantize_input:
        raise NotImplementedError("[quantize] quantize_input is not implemented in cmx")

    def default_pred(path, m):
        return m.weight.shape[-1] % (group_size or _DEFAULT_GROUP_SIZE) == 0

    pred = class_predicate or default_pred
    replace = {}
    for path, m in model.named_modules():
        if not isinstance(m, (Linear, Embedding)):
            continue
        choice = pred(path, m)
        if not choice:
            continue
        kw = dict(group_size=group_size, bits=bits, mode=mode)
        if isinstance(choice, dict):
            kw.update(choice)
        if isinstance(m, Linear):
            replace[path] = QuantizedLinear.from_linear(m, **kw)
        else:
            replace[path] = QuantizedEmbedding.from_embedding(m, **kw)
    from cmx.utils import tree_unflatten

    if replace:
        model.update_modules(tree_unflatten(list(replace.items())))
