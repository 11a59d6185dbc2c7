"""Data-parallel training of the demo's LeNet on Fashion-MNIST over N
processes, as MLX's distributed examples do it: every rank holds the whole
model, takes its slice of each global batch, and the gradients are averaged
over the group (``nn.average_gradients``) before the optimizer's step.

    python -m cmx.launch -n 2 examples/distributed/data_parallel.py
    python -m cmx.launch --backend nccl -n 2 examples/distributed/data_parallel.py
    python examples/distributed/data_parallel.py            # one process

``--check`` also computes, in every rank, each step's loss and gradients
on the whole global batch in one process, from the same parameters as the
data-parallel step, and compares them: the averaged gradients and the
summed loss must be one process's (up to float32 summation order). (The
parameters are the data-parallel model's at every step: two trainings that
start equal drift apart in summation order, and Adam's division by the
gradients' root mean square turns that drift of near-zero gradients into
whole steps, 3e-3 apart after 20 steps on two GPUs.) Each rank prints ``rank R ok`` at the end; rank 0 prints one JSON
line (``{"data_parallel": ...}``) with the step throughput (global samples
per second over the timed steps), which benchmarks/distributed_bench.py
reads. Without the dataset (Debian's dataset-fashion-mnist, or --data) the
images are synthetic (seeded noise with class-dependent means), said so in
the output.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # examples/: the demo's model

from common import parse_and_init  # noqa: E402
import cmx.core as mx  # noqa: E402
import cmx.nn as nn  # noqa: E402
import cmx.optimizers as optim  # noqa: E402
from cmx.utils import tree_flatten, tree_map  # noqa: E402
from demo import DEFAULT_DATA, LeNet, load_dataset, loss_fn  # noqa: E402


def synthetic(n, seed=0):
    """n images (28x28x1) with labels: noise around a per-class pattern,
    so the loss can fall."""
    mx.random.seed(seed)
    y = mx.random.randint(0, 10, (n,)).astype(mx.int32)
    proto = mx.random.uniform(shape=(10, 28, 28, 1))
    x = mx.clip(proto[y] + 0.3 * mx.random.normal((n, 28, 28, 1)), 0.0, 1.0)
    mx.eval(x, y)
    return x, y


def broadcast_from_0(tree, group):
    """Rank 0's arrays on every rank (an all_sum of rank 0's values and
    zeros elsewhere), so every replica starts from the same weights."""
    keep = group.rank() == 0
    return tree_map(lambda p: mx.distributed.all_sum(
        p if keep else mx.zeros_like(p), group=group), tree)


def make_model(seed):
    mx.random.seed(seed)
    m = LeNet()
    mx.eval(m.parameters())
    return m


def grad_diff(grads, ref):
    """The largest difference between matching gradients, relative to the
    largest magnitude of the reference gradient it belongs to."""
    worst = 0.0
    for g, r in zip(tree_flatten(grads), tree_flatten(ref)):
        g, r = np.array(g[1]), np.array(r[1])
        worst = max(worst, float(np.abs(g - r).max()) / max(float(np.abs(r).max()), 1e-30))
    return worst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--batch-size", type=int, default=128,
                    help="global batch (split over the ranks)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3,
                    help="steps not counted in the throughput")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check", action="store_true",
                    help="compare with one process on the global batch")
    ap.add_argument("--rtol", type=float, default=2e-4)
    args, world, R, N = parse_and_init(ap, argv)
    if args.batch_size % N:
        sys.exit(f"--batch-size {args.batch_size} must be divisible by the "
                 f"{N} processes")
    need = args.batch_size * args.steps
    if os.path.isdir(args.data):
        x_all, y_all, _, _ = load_dataset(args.data)
        source = f"Fashion-MNIST from {args.data}"
        if x_all.shape[0] < need:
            sys.exit(f"{need} samples needed, the dataset has {x_all.shape[0]}")
    else:
        x_all, y_all = synthetic(need, args.seed)
        source = f"synthetic images ({args.data} not found)"
    if R == 0:
        print(f"[data_parallel] {N} process(es), {world!r}, device "
              f"{mx.default_device()}, {source}, global batch "
              f"{args.batch_size}", flush=True)

    model = make_model(args.seed)
    model.update(broadcast_from_0(model.parameters(), world))
    opt = optim.Adam(learning_rate=args.lr)
    lg = nn.value_and_grad(model, loss_fn)
    ref = ref_lg = None
    if args.check:
        ref = make_model(args.seed)
        ref_lg = nn.value_and_grad(ref, loss_fn)

    local = args.batch_size // N
    losses, ref_losses, times = [], [], []
    grad_worst = 0.0
    for step in range(args.steps):
        lo = step * args.batch_size
        xg, yg = x_all[lo:lo + args.batch_size], y_all[lo:lo + args.batch_size]
        x, y = xg[R * local:(R + 1) * local], yg[R * local:(R + 1) * local]
        mx.eval(x, y)
        before = model.parameters()  # arrays: the update replaces them
        t = time.perf_counter()
        loss, grads = lg(model, x, y)
        grads = nn.average_gradients(grads, group=world)
        opt.update(model, grads)
        loss = mx.distributed.all_sum(loss, group=world) / N
        mx.eval(loss, model.parameters(), opt.state)
        times.append(time.perf_counter() - t)
        losses.append(loss.item())
        if ref is not None:
            ref.update(before)
            rl, rg = ref_lg(ref, xg, yg)
            mx.eval(rl, rg)
            ref_losses.append(rl.item())
            grad_worst = max(grad_worst, grad_diff(grads, rg))

    timed = times[args.warmup:] or times
    sps = args.batch_size * len(timed) / sum(timed)
    worst = 0.0
    if ref is not None:
        for a, b in zip(losses, ref_losses):
            worst = max(worst, abs(a - b) / max(abs(b), 1e-12))
        if worst > args.rtol or grad_worst > args.rtol:
            raise SystemExit(f"rank {R}: data-parallel losses {losses} or "
                             f"gradients differ from one process's "
                             f"{ref_losses} (worst relative difference: "
                             f"losses {worst:.2e}, gradients {grad_worst:.2e})")
        worst = max(worst, grad_worst)
    if R == 0:
        print(f"[data_parallel] loss {losses[0]:.4f} -> {losses[-1]:.4f}"
              + (f", one process on the global batch from the same parameters: "
                 f"{ref_losses[0]:.4f} -> "
                 f"{ref_losses[-1]:.4f} (worst relative difference "
                 f"{worst:.1e})" if ref is not None else "")
              + f"; {sps:.0f} samples/s", flush=True)
        print(json.dumps({"data_parallel": {
            "processes": N, "backend": repr(world),
            "device": str(mx.default_device()), "global_batch":
            args.batch_size, "steps": args.steps, "samples_per_s": sps,
            "step_ms": 1e3 * sum(timed) / len(timed), "losses": losses,
            "checked": ref is not None, "worst_rel_diff": worst}}), flush=True)
    print(f"rank {R} ok", flush=True)


if __name__ == "__main__":
    main()
