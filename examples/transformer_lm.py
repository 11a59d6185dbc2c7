"""A small Transformer language model over bytes, trained on Debian's
fortune cookies (package ``fortunes``, installed by scripts/bootstrap.sh),
printing the loss and tokens/s, then a sample.

    PYTHONPATH=build/python python examples/transformer_lm.py
    python examples/transformer_lm.py --data some.txt --steps 500 --layers 4

The model: byte embeddings plus learned positions, pre-norm Transformer
layers with a causal mask (nn.TransformerEncoder), and the embedding
reused as the output layer; AdamW with a warm-up and cosine decay.
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blas_setup  # noqa: E402,F401  (OPENBLAS_CORETYPE, before cmx loads OpenBLAS)
import cmx.core as mx  # noqa: E402
import cmx.nn as nn  # noqa: E402
import cmx.optimizers as optim  # noqa: E402
from cmx.utils import tree_flatten  # noqa: E402

DEFAULT_DATA = "/usr/share/games/fortunes"


def read_corpus(path, limit=None):
    """The bytes of a text file, or of the fortune files of a folder
    (skipping the binary .dat indexes and the .u8 links)."""
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path)
                       if not n.endswith((".dat", ".u8")) and not n.startswith("."))
        parts = []
        for n in names:
            full = os.path.join(path, n)
            if os.path.isfile(full) and not os.path.islink(full):
                with open(full, "rb") as f:
                    parts.append(f.read())
        data = b"".join(parts)
    else:
        with open(path, "rb") as f:
            data = f.read()
    if not data:
        raise ValueError(f"no text in {path}")
    return data[:limit] if limit else data


class TransformerLM(nn.Module):
    def __init__(self, vocab, dims, heads, layers, context):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dims)
        self.positions = nn.Embedding(context, dims)
        self.transformer = nn.TransformerEncoder(layers, dims, heads, 4 * dims)
        self.mask = nn.MultiHeadAttention.create_additive_causal_mask(context)

    def __call__(self, x):
        T = x.shape[1]
        h = self.embedding(x) + self.positions(mx.arange(T))
        h = self.transformer(h, self.mask[:T, :T])
        return self.embedding.as_linear(h)


def loss_fn(model, x, y):
    return nn.losses.cross_entropy(model(x), y, reduction="mean")


def batches(data, batch, context):
    """Random windows of the corpus: inputs and the next bytes."""
    while True:
        start = mx.random.randint(0, data.size - context - 1, (batch, 1))
        idx = start + mx.arange(context + 1)
        win = data[idx]
        yield win[:, :-1], win[:, 1:]


def sample(model, prompt, n, temperature=0.8):
    x = mx.array(list(prompt), dtype=mx.int32)[None]
    context = model.positions.weight.shape[0]
    out = list(prompt)
    for _ in range(n):
        logits = model(x[:, -context:])[:, -1]
        nxt = mx.random.categorical(logits / temperature)
        out.append(int(nxt.item()))
        x = mx.concatenate([x, nxt.reshape(1, 1).astype(mx.int32)], axis=1)
    return bytes(out).decode("utf-8", errors="replace")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="a text file or the fortunes folder")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--dims", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--report", type=int, default=25, help="steps between reports")
    ap.add_argument("--sample", type=int, default=200, help="bytes to generate at the end")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    mx.random.seed(args.seed)
    try:
        text = read_corpus(args.data)
    except OSError as e:
        sys.exit(f"transformer_lm: cannot read {args.data}: {e} (install Debian's "
                 "fortunes package, e.g. with scripts/bootstrap.sh, or pass --data)")
    data = mx.array(memoryview(text)).astype(mx.int32)
    model = TransformerLM(256, args.dims, args.heads, args.layers, args.context)
    mx.eval(model.parameters())
    n_params = sum(v.size for _, v in tree_flatten(model.parameters()))
    warmup = max(1, args.steps // 10)
    schedule = optim.join_schedules(
        [optim.linear_schedule(1e-5, args.lr, warmup),
         optim.cosine_decay(args.lr, max(1, args.steps - warmup), args.lr / 10)], [warmup])
    opt = optim.AdamW(learning_rate=schedule, weight_decay=0.01)
    loss_and_grad = nn.value_and_grad(model, loss_fn)

    def step(x, y):
        loss, grads = loss_and_grad(model, x, y)
        grads, _ = optim.clip_grad_norm(grads, 1.0)
        opt.update(model, grads)
        return loss

    print(f"transformer LM: {len(text):,} bytes of {args.data}; {args.layers} layers, "
          f"{args.dims} dims, {args.heads} heads, context {args.context}, batch "
          f"{args.batch}, {n_params:,} parameters")
    tokens = args.batch * args.context
    it = batches(data, args.batch, args.context)
    t0 = time.perf_counter()
    tick, done, losses = t0, 0, []
    for s in range(1, args.steps + 1):
        x, y = next(it)
        loss = step(x, y)
        mx.eval(loss, model.state, opt.state)
        losses.append(loss.item())
        done += 1
        if s % args.report == 0 or s == args.steps:
            now = time.perf_counter()
            avg = sum(losses[-done:]) / done
            print(f"step {s:5d}  loss {avg:.3f} ({avg / math.log(2):.2f} bits/byte)  "
                  f"{tokens * done / (now - tick):8.0f} tokens/s")
            tick, done = now, 0
    total = time.perf_counter() - t0
    print(f"trained {args.steps} steps in {total:.1f} s "
          f"({tokens * args.steps / total:.0f} tokens/s overall)")
    if args.sample:
        model.eval()
        print("sample:", sample(model, b"The ", args.sample))
    return losses


if __name__ == "__main__":
    main()
