"""A Llama-architecture decoder in cmx.nn, loaded from a GGUF file with
its quantized weights kept packed (QuantizedLinear / QuantizedEmbedding).

The blocks: RMSNorm, grouped-query attention through
mx.fast.scaled_dot_product_attention with RoPE (mx.fast.rope) at the
file's base, RMSNorm, a SwiGLU MLP; the output projection is the token
embedding (tied) unless the file has ``output.weight``.

The KV cache is preallocated (``KVCache``): keys and values of every layer
are written in place of zeros at the current position, and attention runs
over the whole buffer with the positions past the current one masked out,
so a decoding step has the same shapes at every position and compiles once.

GGUF tensor names map to the modules here (``blk.{i}.attn_q`` ->
``layers.{i}.attention.wq``, see ``_GGUF_NAMES``). Llama GGUF files store
the query and key rows permuted for rotary pairs of adjacent features
(llama.cpp's convention), so RoPE runs in its ``traditional`` form.
"""

from dataclasses import dataclass
from typing import Optional

import cmx.core as mx
import cmx.nn as nn


@dataclass
class ModelArgs:
    vocab_size: int
    dims: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    hidden_dims: int
    norm_eps: float
    rope_base: float
    rope_dims: int
    context_length: int
    head_dim: int

    @classmethod
    def from_gguf(cls, meta: dict) -> "ModelArgs":
        arch = meta.get("general.architecture", "llama")
        if arch != "llama":
            raise ValueError(f"[llm] the GGUF model is a '{arch}', not a Llama-family model")

        def get(key, default=None):
            v = meta.get(f"{arch}.{key}", default)
            if v is None:
                raise ValueError(f"[llm] the GGUF file has no '{arch}.{key}'")
            return v.item() if isinstance(v, mx.array) else v

        dims = int(get("embedding_length"))
        heads = int(get("attention.head_count"))
        head_dim = int(get("attention.key_length", dims // heads))
        vocab = meta.get(f"{arch}.vocab_size")
        vocab = int(vocab.item()) if vocab is not None else len(meta["tokenizer.ggml.tokens"])
        return cls(
            vocab_size=vocab,
            dims=dims,
            n_layers=int(get("block_count")),
            n_heads=heads,
            n_kv_heads=int(get("attention.head_count_kv", heads)),
            hidden_dims=int(get("feed_forward_length")),
            norm_eps=float(get("attention.layer_norm_rms_epsilon", 1e-5)),
            rope_base=float(get("rope.freq_base", 10000.0)),
            rope_dims=int(get("rope.dimension_count", head_dim)),
            context_length=int(get("context_length", 2048)),
            head_dim=head_dim,
        )


class KVCache:
    """Keys and values of one layer side by side, ``kv`` of shape ``(1,
    kv_heads, capacity, 2 * head_dim)`` (a position's key, then its
    value), written at ``offset`` (an int or a scalar int32 array): one
    write a layer, and ``keys`` / ``values`` are views."""

    def __init__(self, kv_heads, capacity, head_dim, dtype=mx.float32):
        self.kv = mx.zeros((1, kv_heads, capacity, 2 * head_dim), dtype)

    @property
    def capacity(self) -> int:
        return self.kv.shape[2]

    def write(self, offset, kv, start=None):
        """Writes kv ``(1, kv_heads, L, 2 * head_dim)`` at ``offset``;
        ``start`` is ``write_start(offset)`` when the caller made it once
        for every layer. The start is along the positions' axis only: the
        write's index arithmetic (wrap, clamp) is one axis's, not four's."""
        if start is None:
            start = write_start(offset)
        self.kv = mx.slice_update(self.kv, kv, start, (2,))
        return self.kv


def split_kv(kv, n):
    """The keys and the values of the first n positions of a cache's
    ``kv`` (views)."""
    d = kv.shape[-1] // 2
    return kv[:, :, :n, :d], kv[:, :, :n, d:]


def write_start(offset):
    """The int32 start ``(offset,)`` of a cache write (along positions)."""
    if isinstance(offset, mx.array):
        return offset.astype(mx.int32).reshape(1)
    return mx.array([offset], mx.int32)


def attention_mask(offset, length, capacity):
    """Boolean ``(length, capacity)``: query ``i`` (position ``offset + i``)
    sees the cached positions ``0 .. offset + i``."""
    q = mx.arange(length, dtype=mx.int32)[:, None] + offset
    return mx.arange(capacity, dtype=mx.int32)[None, :] <= q


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = args.n_heads, args.n_kv_heads, args.head_dim
        self.scale = args.head_dim ** -0.5
        self.wq = nn.Linear(args.dims, args.n_heads * args.head_dim, bias=False)
        self.wk = nn.Linear(args.dims, args.n_kv_heads * args.head_dim, bias=False)
        self.wv = nn.Linear(args.dims, args.n_kv_heads * args.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * args.head_dim, args.dims, bias=False)
        self.rope = nn.RoPE(args.rope_dims, traditional=True, base=args.rope_base)

    def qkv(self, x, offset):
        """Queries ``(B, heads, L, head_dim)`` and keys beside values ``(B,
        kv_heads, L, 2 * head_dim)`` of ``x`` (``(B, L, dims)``, or ``(L,
        dims)``: one sequence) at positions ``offset ...`` (rotated). One
        projection when the loader fused the three (``wqkv``, its key and
        value rows interleaved by head: the projection gives each kv head's
        key and value side by side, and RoPE of the first head_dim
        features of each rotates the key alone)."""
        B, L = (1, x.shape[0]) if x.ndim == 2 else x.shape[:2]
        H, Hk = self.n_heads, self.n_kv_heads
        if "wqkv" in self:
            y = self.wqkv(x)
            nq = H * self.head_dim
            q, kv = _heads(y[..., :nq], B, L, H), _heads(y[..., nq:], B, L, Hk)
            return self.rope(q, offset=offset), self.rope(kv, offset=offset)
        q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q, k, v = _heads(q, B, L, H), _heads(k, B, L, Hk), _heads(v, B, L, Hk)
        k = self.rope(k, offset=offset)
        return self.rope(q, offset=offset), mx.concatenate([k, v], axis=-1)

    def attend(self, q, keys, values, mask, shape):
        """The output projection of the queries' attention over the cache,
        as ``shape`` (x's: ``(..., dims)``)."""
        o = mx.fast.scaled_dot_product_attention(q, keys, values, scale=self.scale,
                                                 mask=mask)
        if q.shape[2] != 1:  # (B, H, L, D) -> (B, L, H, D)
            o = o.transpose(0, 2, 1, 3)
        return self.wo(o.reshape(*shape[:-1], -1))

    def __call__(self, x, cache: KVCache, offset, mask):
        """Attention of x at positions ``offset ...`` over the cache (its
        first ``mask.shape[-1]`` positions) after writing x's keys and
        values into it."""
        q, kv = self.qkv(x, offset)
        keys, values = split_kv(cache.write(offset, kv), mask.shape[-1])
        return self.attend(q, keys, values, mask, x.shape)


def _heads(t, B, L, n):
    """``(B, L, n * D)`` (or ``(L, n * D)``) as ``(B, n, L, D)``: a
    reshape alone for one position."""
    if L == 1:
        return t.reshape(B, n, 1, -1)
    return t.reshape(B, L, n, -1).transpose(0, 2, 1, 3)


class MLP(nn.Module):
    def __init__(self, dims, hidden):
        super().__init__()
        self.gate = nn.Linear(dims, hidden, bias=False)
        self.up = nn.Linear(dims, hidden, bias=False)
        self.down = nn.Linear(hidden, dims, bias=False)

    def __call__(self, x):
        if "gate_up" in self:  # the loader's fused gate and up projections
            y = self.gate_up(x)
            n = y.shape[-1] // 2
            return self.down(nn.silu(y[..., :n]) * y[..., n:])
        return self.down(nn.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention_norm = nn.RMSNorm(args.dims, eps=args.norm_eps)
        self.attention = Attention(args)
        self.mlp_norm = nn.RMSNorm(args.dims, eps=args.norm_eps)
        self.mlp = MLP(args.dims, args.hidden_dims)

    def __call__(self, x, cache, offset, mask):
        h = x + self.attention(self.attention_norm(x), cache, offset, mask)
        return h + self.mlp(self.mlp_norm(h))

    # The block in two halves around the cache write (the decoding step
    # compiles each, and writes the cache in place between them).
    def first_half(self, x, offset):
        return self.attention.qkv(self.attention_norm(x), offset)

    def second_half(self, x, q, keys, values, mask):
        """``keys``, ``values``: ``split_kv`` of the cache's ``kv``."""
        h = x + self.attention.attend(q, keys, values, mask, x.shape)
        return h + self.mlp(self.mlp_norm(h))


class Llama(nn.Module):
    def __init__(self, args: ModelArgs, tied: bool = True):
        super().__init__()
        self.args = args
        self.embedding = nn.Embedding(args.vocab_size, args.dims)
        self.layers = [Block(args) for _ in range(args.n_layers)]
        self.norm = nn.RMSNorm(args.dims, eps=args.norm_eps)
        if not tied:
            self.output = nn.Linear(args.dims, args.vocab_size, bias=False)

    def make_cache(self, capacity: int):
        a = self.args
        return [KVCache(a.n_kv_heads, capacity, a.head_dim) for _ in range(a.n_layers)]

    def __call__(self, tokens, caches, offset, mask=None):
        """Logits ``(B, L, vocab)`` of ``tokens`` (``(B, L)``) at positions
        ``offset ...``, writing their keys and values into ``caches``.
        ``mask`` defaults to :func:`attention_mask` over the cache's
        positions up to the last token's rounded up to 256 (the whole cache
        when ``offset`` is an array)."""
        if mask is None:
            cap, L = caches[0].capacity, tokens.shape[1]
            window = cap if isinstance(offset, mx.array) else min(
                cap, -(-(offset + L) // 256) * 256)
            mask = attention_mask(offset, L, window)
        h = self.embed(tokens)
        for layer, c in zip(self.layers, caches):
            h = layer(h, c, offset, mask)
        return self.head(h)

    def embed(self, tokens):
        """The embeddings of tokens, in float32 (a quantized table with
        float16 scales, as GGUF files have them, would give float16)."""
        e = self.embedding
        if isinstance(e, nn.QuantizedEmbedding):
            return mx.dequantize(e["weight"][tokens], e["scales"][tokens],
                                 e["biases"][tokens], e.group_size, e.bits,
                                 dtype=mx.float32)
        return e(tokens).astype(mx.float32)

    def head(self, h):
        """The logits of hidden states ``h`` (``(..., dims)``)."""
        h = self.norm(h)
        if "output" in self:
            return self.output(h)
        return self.embedding.as_linear(h)


# GGUF tensor (without ".weight") -> module path here.
_GGUF_NAMES = {
    "attn_norm": "attention_norm", "attn_q": "attention.wq", "attn_k": "attention.wk",
    "attn_v": "attention.wv", "attn_output": "attention.wo", "ffn_norm": "mlp_norm",
    "ffn_gate": "mlp.gate", "ffn_up": "mlp.up", "ffn_down": "mlp.down",
}
_GGUF_TOP = {"token_embd": "embedding", "output_norm": "norm", "output": "output"}


def _module_path(gguf_base: str) -> Optional[str]:
    if gguf_base.startswith("blk."):
        _, i, rest = gguf_base.split(".", 2)
        return f"layers.{i}.{_GGUF_NAMES[rest]}" if rest in _GGUF_NAMES else None
    return _GGUF_TOP.get(gguf_base)


def from_gguf(weights: dict, meta: dict, dtype=mx.float32) -> Llama:
    """The model of a GGUF file as ``mx.load(path, return_metadata=True)``
    returns it: quantized tensors (``.weight`` packed uint32 with
    ``.scales`` and ``.biases``) become QuantizedLinear /
    QuantizedEmbedding layers holding those arrays, the others plain
    parameters (cast to ``dtype``). The quantized scales and biases stay
    float16 (the file's values; half the bytes to stream per token)."""
    args = ModelArgs.from_gguf(meta)
    model = Llama(args, tied="output.weight" not in weights)
    modules = dict(model.named_modules())
    params, quantized = [], {}
    for name, arr in weights.items():
        base, _, kind = name.rpartition(".")
        path = _module_path(base)
        if path is None or path not in modules:
            raise ValueError(f"[llm] unexpected tensor '{name}' in the GGUF file")
        if f"{base}.scales" in weights:
            quantized[path] = base
        else:
            params.append((f"{path}.{kind}", arr.astype(dtype)))
    replace = []
    for path, base in quantized.items():
        w, s, b = (weights[f"{base}.{k}"] for k in ("weight", "scales", "biases"))
        m = modules[path]
        rows, in_dims = m.weight.shape
        bits = w.shape[1] * 32 // in_dims
        group = in_dims // s.shape[1]
        if isinstance(m, nn.Embedding):
            layer = nn.QuantizedEmbedding(rows, in_dims, group, bits)
        else:
            layer = nn.QuantizedLinear(in_dims, rows, False, group, bits)
        # the packed arrays replace the (never evaluated) random ones
        layer.update({"weight": w, "scales": s, "biases": b})
        replace.append((path, layer))
    from cmx.utils import tree_unflatten

    model.update_modules(tree_unflatten(replace))
    model.update(tree_unflatten(params))
    for layer in model.layers:
        _fuse(layer.attention, ("wq", "wk", "wv"), "wqkv", _kv_rows(args))
        _fuse(layer.mlp, ("gate", "up"), "gate_up")
    _pack(model)
    model.eval()
    return model


def _pack(model):
    """Moves the packed weights, the scales and the biases of the blocks'
    quantized projections into one array each (three allocations, in the
    order a forward pass reads them) and gives every layer views of its
    part. A decoding step streams them all from memory: one large buffer
    is backed by huge pages and read front to back, where ~120 separate
    ones of 0.2-1 MB each cost a TLB miss every 4 KB and a cold start per
    matrix (the 120 matrix-vector products of SmolLM2-135M took ~25% less
    CPU time on this machine's 2-core VM)."""
    layers = []
    for block in model.layers:
        for m in (block.attention, block.mlp):
            layers += [m[n] for n in ("wqkv", "wq", "wk", "wv", "wo", "gate_up", "gate",
                                      "up", "down") if n in m]
    layers = [m for m in layers if isinstance(m, nn.QuantizedLinear)]
    if len(layers) < 2:
        return
    for key in ("weight", "scales", "biases"):
        parts = [m[key] for m in layers]
        if len({p.dtype for p in parts}) != 1:
            continue
        flat = mx.concatenate([p.reshape(-1) for p in parts])
        mx.eval(flat)
        off = 0
        for m, p in zip(layers, parts):
            m[key] = flat[off:off + p.size].reshape(p.shape)
            off += p.size
        mx.eval([m[key] for m in layers])


def _kv_rows(args):
    """The row order of a fused (wq, wk, wv): the queries' rows, then each
    kv head's key rows followed by its value rows, as (part, first row,
    rows) spans."""
    D, Hk = args.head_dim, args.n_kv_heads
    spans = [(0, 0, args.n_heads * D)]
    for i in range(Hk):
        spans += [(1, i * D, D), (2, i * D, D)]
    return spans


def _fuse(module, names, fused, spans=None):
    """Replaces the quantized projections ``names`` of ``module`` (same
    input, group size, bits and dtypes) by one, ``fused``, whose output
    rows are theirs in order (or the rows ``spans`` names: (index in
    names, first row, rows)): one matrix-vector product per token instead
    of several (each a pass over x and a thread-pool job)."""
    layers = [module[n] for n in names]
    if not all(isinstance(m, nn.QuantizedLinear) and "bias" not in m for m in layers):
        return
    first = layers[0]
    for m in layers[1:]:
        if (m.group_size, m.bits) != (first.group_size, first.bits) or any(
                m[k].dtype != first[k].dtype or m[k].shape[1:] != first[k].shape[1:]
                for k in ("weight", "scales", "biases")):
            return
    rows = sum(m["weight"].shape[0] for m in layers)
    in_dims = first["weight"].shape[1] * 32 // first.bits
    out = nn.QuantizedLinear(in_dims, rows, False, first.group_size, first.bits)
    if spans is None:
        spans = [(i, 0, m["weight"].shape[0]) for i, m in enumerate(layers)]
    out.update({k: mx.concatenate([layers[i][k][r:r + n] for i, r, n in spans])
                for k in ("weight", "scales", "biases")})
    for n in names:
        delattr(module, n)
    setattr(module, fused, out)
