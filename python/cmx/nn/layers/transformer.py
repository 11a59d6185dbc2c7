"""Attention and Transformer layers: MultiHeadAttention,
TransformerEncoder(Layer), TransformerDecoder(Layer) and Transformer."""

import math
from typing import Any, Callable, Optional

import cmx.core as mx
from .activations import relu
from .base import Module
from .dropout import Dropout
from .linear import Linear
from .normalization import LayerNorm

__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


def scaled_dot_product_attention(q, k, v, scale: float, mask=None):
    """``softmax(scale * q @ k^T + mask) @ v`` for ``(B, heads, L, D)``
    operands; the scores are normalized in float32. ``mask`` is additive,
    boolean (``False`` masks out) or ``"causal"``; keys and values may have
    fewer heads than the queries when that number divides theirs."""
    n_q, n_kv = q.shape[-3], k.shape[-3]
    if n_q != n_kv:
        rep = n_q // n_kv
        k = mx.repeat(k, rep, axis=-3)
        v = mx.repeat(v, rep, axis=-3)
    scores = (q * scale) @ k.swapaxes(-1, -2)
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"[scaled_dot_product_attention] unknown mask {mask!r}")
        lq, lk = scores.shape[-2], scores.shape[-1]
        qi = mx.arange(lk - lq, lk)[:, None]
        ki = mx.arange(lk)[None, :]
        mask = qi >= ki
    if mask is not None:
        if mask.dtype == mx.bool_:
            scores = mx.where(mask, scores, mx.finfo(scores.dtype).min)
        else:
            scores = scores + mask
    p = mx.softmax(scores.astype(mx.float32), axis=-1).astype(scores.dtype)
    return p @ v


class MultiHeadAttention(Module):
    """Multi-head attention: projects queries, keys and values, attends in
    ``num_heads`` heads of ``dims / num_heads`` features, and projects the
    concatenated heads.

    Args:
        dims (int): The query and key projection size.
        num_heads (int): The number of heads (must divide ``dims``).
        query_input_dims, key_input_dims, value_input_dims (int, optional):
            The inputs' feature sizes (default ``dims``; values default to
            the keys').
        value_dims (int, optional): The value projection size (default
            ``dims``).
        value_output_dims (int, optional): The output size (default ``dims``).
        bias (bool): Biases in the projections. Default ``False``.

    Call as ``mha(queries, keys, values, mask=None)`` with ``(N, L, D)``
    inputs; ``mask`` is added to the ``(N, heads, Lq, Lk)`` scores.
    """

    def __init__(self, dims: int, num_heads: int,
                 query_input_dims: Optional[int] = None,
                 key_input_dims: Optional[int] = None,
                 value_input_dims: Optional[int] = None,
                 value_dims: Optional[int] = None,
                 value_output_dims: Optional[int] = None, bias: bool = False):
        super().__init__()
        if dims % num_heads != 0:
            raise ValueError(
                "The input feature dimensions should be divisible by the "
                f"number of heads ({dims} % {num_heads}) != 0"
            )
        query_input_dims = query_input_dims or dims
        key_input_dims = key_input_dims or dims
        value_input_dims = value_input_dims or key_input_dims
        value_dims = value_dims or dims
        value_output_dims = value_output_dims or dims
        self.num_heads = num_heads
        self.query_proj = Linear(query_input_dims, dims, bias=bias)
        self.key_proj = Linear(key_input_dims, dims, bias=bias)
        self.value_proj = Linear(value_input_dims, value_dims, bias=bias)
        self.out_proj = Linear(value_dims, value_output_dims, bias=bias)

    def __call__(self, queries, keys, values, mask=None):
        q = self.query_proj(queries)
        k = self.key_proj(keys)
        v = self.value_proj(values)
        h = self.num_heads
        B, Lq, D = q.shape
        Lk = k.shape[1]
        q = q.reshape(B, Lq, h, -1).transpose(0, 2, 1, 3)
        k = k.reshape(B, Lk, h, -1).transpose(0, 2, 1, 3)
        v = v.reshape(B, Lk, h, -1).transpose(0, 2, 1, 3)
        o = scaled_dot_product_attention(q, k, v, math.sqrt(1 / q.shape[-1]), mask)
        o = o.transpose(0, 2, 1, 3).reshape(B, Lq, -1)
        return self.out_proj(o)

    @staticmethod
    def create_additive_causal_mask(N: int, dtype=mx.float32):
        """An ``(N, N)`` additive mask: 0 on and below the diagonal, the
        dtype's most negative finite value above it."""
        idx = mx.arange(N)
        above = idx[:, None] < idx[None]
        return above.astype(dtype) * mx.finfo(dtype).min


def _mlp_dims(dims, mlp_dims):
    return mlp_dims or dims * 4


class TransformerEncoderLayer(Module):
    """Self-attention and an MLP (``dims -> mlp_dims -> dims``), each with a
    residual connection and LayerNorm (before them with ``norm_first``,
    after otherwise), and dropout.

    Args:
        dims (int): The model size.
        num_heads (int): Attention heads.
        mlp_dims (int, optional): The MLP's hidden size (default ``4 dims``).
        dropout (float): Dropout probability. Default ``0.0``.
        activation (callable): The MLP's activation. Default ``relu``.
        norm_first (bool): Pre-norm. Default ``True``.
    """

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True):
        super().__init__()
        mlp_dims = _mlp_dims(dims, mlp_dims)
        self.attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x):
        return self.linear2(self.dropout2(self.activation(self.linear1(x))))

    def __call__(self, x, mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.attention(y, y, y, mask))
            return x + self._mlp(self.ln2(x))
        x = self.ln1(x + self.dropout1(self.attention(x, x, x, mask)))
        return self.ln2(x + self._mlp(x))


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and an MLP, each with
    a residual connection, LayerNorm and dropout; arguments as
    :class:`TransformerEncoderLayer`."""

    def __init__(self, dims: int, num_heads: int, mlp_dims: Optional[int] = None,
                 dropout: float = 0.0, activation: Callable[[Any], Any] = relu,
                 norm_first: bool = True):
        super().__init__()
        mlp_dims = _mlp_dims(dims, mlp_dims)
        self.self_attention = MultiHeadAttention(dims, num_heads)
        self.cross_attention = MultiHeadAttention(dims, num_heads)
        self.ln1 = LayerNorm(dims)
        self.ln2 = LayerNorm(dims)
        self.ln3 = LayerNorm(dims)
        self.linear1 = Linear(dims, mlp_dims)
        self.linear2 = Linear(mlp_dims, dims)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = activation
        self.norm_first = norm_first

    def _mlp(self, x):
        return self.linear2(self.dropout3(self.activation(self.linear1(x))))

    def __call__(self, x, memory, x_mask, memory_mask):
        if self.norm_first:
            y = self.ln1(x)
            x = x + self.dropout1(self.self_attention(y, y, y, x_mask))
            y = self.ln2(x)
            x = x + self.dropout2(self.cross_attention(y, memory, memory, memory_mask))
            return x + self._mlp(self.ln3(x))
        x = self.ln1(x + self.dropout1(self.self_attention(x, x, x, x_mask)))
        x = self.ln2(x + self.dropout2(self.cross_attention(x, memory, memory,
                                                            memory_mask)))
        return self.ln3(x + self._mlp(x))


class _Stack(Module):
    """num_layers layers and a final LayerNorm; with checkpoint each layer
    recomputes its activations in the backward pass."""

    def __init__(self, layer_cls, num_layers, dims, num_heads, mlp_dims, dropout,
                 activation, norm_first, checkpoint):
        super().__init__()
        self.layers = [layer_cls(dims, num_heads, mlp_dims, dropout, activation,
                                 norm_first) for _ in range(num_layers)]
        self.ln = LayerNorm(dims)
        self.checkpoint = checkpoint

    def _run(self, x, *args):
        from ..utils import checkpoint as ckpt

        for layer in self.layers:
            x = ckpt(layer)(x, *args) if self.checkpoint else layer(x, *args)
        return self.ln(x)


class TransformerEncoder(_Stack):
    """``num_layers`` :class:`TransformerEncoderLayer` and a final
    LayerNorm; ``checkpoint`` recomputes each layer in the backward pass."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation=relu, norm_first: bool = True, checkpoint: bool = False):
        super().__init__(TransformerEncoderLayer, num_layers, dims, num_heads,
                         mlp_dims, dropout, activation, norm_first, checkpoint)

    def __call__(self, x, mask):
        return self._run(x, mask)


class TransformerDecoder(_Stack):
    """``num_layers`` :class:`TransformerDecoderLayer` and a final
    LayerNorm; ``checkpoint`` recomputes each layer in the backward pass."""

    def __init__(self, num_layers: int, dims: int, num_heads: int,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation=relu, norm_first: bool = True, checkpoint: bool = False):
        super().__init__(TransformerDecoderLayer, num_layers, dims, num_heads,
                         mlp_dims, dropout, activation, norm_first, checkpoint)

    def __call__(self, x, memory, x_mask, memory_mask):
        return self._run(x, memory, x_mask, memory_mask)


class Transformer(Module):
    """An encoder-decoder Transformer (Vaswani et al.).

    Args:
        dims (int): The model size. Default ``512``.
        num_heads (int): Attention heads. Default ``8``.
        num_encoder_layers, num_decoder_layers (int): Default ``6`` each.
        mlp_dims (int, optional): The MLP size (default ``4 dims``).
        dropout (float): Default ``0.0``.
        activation (callable): Default ``relu``.
        custom_encoder, custom_decoder (Module, optional): Replace the
            encoder or decoder.
        norm_first (bool): Pre-norm layers. Default ``True``.
        checkpoint (bool): Recompute layers in the backward pass.

    Call as ``t(src, tgt, src_mask, tgt_mask, memory_mask)``.
    """

    def __init__(self, dims: int = 512, num_heads: int = 8,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 mlp_dims: Optional[int] = None, dropout: float = 0.0,
                 activation: Callable[[Any], Any] = relu,
                 custom_encoder: Optional[Any] = None,
                 custom_decoder: Optional[Any] = None, norm_first: bool = True,
                 checkpoint: bool = False):
        super().__init__()
        self.encoder = custom_encoder or TransformerEncoder(
            num_encoder_layers, dims, num_heads, mlp_dims, dropout, activation,
            norm_first, checkpoint)
        self.decoder = custom_decoder or TransformerDecoder(
            num_decoder_layers, dims, num_heads, mlp_dims, dropout, activation,
            norm_first, checkpoint)

    def __call__(self, src, tgt, src_mask, tgt_mask, memory_mask):
        memory = self.encoder(src, src_mask)
        return self.decoder(tgt, memory, tgt_mask, memory_mask)
