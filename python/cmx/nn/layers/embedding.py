"""Embedding: a lookup table of vectors."""

import math

import cmx.core as mx
from .base import Module

__all__ = ["Embedding"]


class Embedding(Module):
    r"""Maps integer indices to ``dims``-vectors: ``weight[x]``.

    ``weight`` (``(num_embeddings, dims)``) is drawn from
    :math:`N(0, 1/\text{dims})`.

    Args:
        num_embeddings (int): The number of vectors (the vocabulary size).
        dims (int): Their size.
    """

    def __init__(self, num_embeddings: int, dims: int):
        super().__init__()
        self.weight = mx.random.normal((num_embeddings, dims), scale=math.sqrt(1 / dims))

    def _extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, {self.weight.shape[1]}"

    def __call__(self, x):
        return self.weight[x]

    def as_linear(self, x):
        """``x @ weight.T``: the embedding used as the output projection
        (weight tying)."""
        return x @ self.weight.T

    def to_quantized(self, group_size: int = None, bits: int = None,
                     mode: str = "affine", quantize_input: bool = False):
        """A :class:`QuantizedEmbedding` with this table quantized."""
        if quantize_input:
            raise NotImplementedError("[quantize] quantize_input is not implemented in cmx")
        from .quantized import QuantizedEmbedding

        return QuantizedEmbedding.from_embedding(self, group_size, bits, mode)
