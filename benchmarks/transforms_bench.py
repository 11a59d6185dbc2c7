"""Transform benchmarks (issue 5), one run, figures printed:

1. The vmap example of MLX's transforms page: vmap(lambda x, y: x + y,
   in_axes=(1, 0)) on (4096, 100) and (100, 4096) float32 against the
   page's naive_add loop, against a loop computing the same thing as the
   vmap (column i of xs plus row i of ys), and against the floors: the
   same sum written directly (xs.T + ys) and numpy's. Goal: vmap at least
   10x faster than the loop on the CPU.
2. value_and_grad of a 3-layer MLP step vs its forward pass alone; goal:
   the gradient step under 3x the forward. The matmul FLOP ratio (forward
   plus backward over forward) is printed beside it.
3. checkpoint: peak memory of the gradient of a deep residual MLP with and
   without mx.checkpoint per block (same gradients), with the activations
   larger than the weights, which is when checkpointing pays.

Data comes from numpy's generator (fixed seed). Run:
    PYTHONPATH=build/python python benchmarks/transforms_bench.py
"""

import gc
import os
import time

import numpy as np

import cmx.core as mx
from _timing import best_alternating, best_of

_rng = np.random.default_rng(0)


def normal(shape, scale=1.0):
    return mx.array((_rng.standard_normal(shape) * scale).astype(np.float32))


def uniform(shape):
    return mx.array(_rng.uniform(size=shape).astype(np.float32))


def vmap_add():
    xs = uniform((4096, 100))
    ys = uniform((100, 4096))
    mx.eval(xs, ys)

    def naive_add(xs, ys):  # as on MLX's page (rows of xs, columns of ys)
        return [xs[i] + ys[:, i] for i in range(xs.shape[1])]

    def loop_add(xs, ys):  # what the vmap computes, one column at a time
        return [xs[:, i] + ys[i] for i in range(xs.shape[1])]

    vadd = mx.vmap(lambda x, y: x + y, in_axes=(1, 0))
    t_naive, t_loop, t_vmap, t_direct = best_alternating([
        lambda: mx.eval(naive_add(xs, ys)),
        lambda: mx.eval(loop_add(xs, ys)),
        lambda: mx.eval(vadd(xs, ys)),
        lambda: mx.eval(xs.T + ys),
    ], 9, 10)
    a, b = np.array(xs), np.array(ys)
    t_np = best_of(lambda: a.T + b, 7, 10)
    print(
        f"vmap example: vmap {t_vmap * 1e3:.3f} ms; page's naive_add "
        f"{t_naive * 1e3:.3f} ms ({t_naive / t_vmap:.1f}x), same-sum loop "
        f"{t_loop * 1e3:.3f} ms ({t_loop / t_vmap:.1f}x) (goal >= 10x); "
        f"floors: xs.T + ys {t_direct * 1e3:.3f} ms, numpy {t_np * 1e3:.3f} ms"
    )


def mlp_step():
    batch, d_in, hidden, d_out = 256, 784, 512, 10
    params = {
        "w1": normal((d_in, hidden), 0.05), "b1": mx.zeros((hidden,)),
        "w2": normal((hidden, hidden), 0.05), "b2": mx.zeros((hidden,)),
        "w3": normal((hidden, d_out), 0.05), "b3": mx.zeros((d_out,)),
    }
    x = normal((batch, d_in))
    y = mx.array(_rng.integers(0, d_out, (batch,)).astype(np.int32))
    mx.eval(params, x, y)

    def forward(p, x):
        h = mx.maximum(x @ p["w1"] + p["b1"], 0)
        h = mx.maximum(h @ p["w2"] + p["b2"], 0)
        return h @ p["w3"] + p["b3"]

    def loss(p, x, y):
        logits = forward(p, x)
        lse = mx.logsumexp(logits, axis=1)
        picked = mx.take_along_axis(logits, y[:, None], axis=1)[:, 0]
        return mx.mean(lse - picked)

    vg = mx.value_and_grad(loss)
    t_fwd, t_step = best_alternating([
        lambda: mx.eval(loss(params, x, y)),
        lambda: mx.eval(vg(params, x, y)),
    ], 9, 10)
    # Forward matmuls, then the backward's: every weight gradient, and the
    # input gradients of layers 2 and 3 (x is a constant).
    fwd = batch * (d_in * hidden + hidden * hidden + hidden * d_out)
    bwd = fwd + batch * (hidden * hidden + hidden * d_out)
    print(
        f"3-layer MLP (batch {batch}, {d_in}-{hidden}-{hidden}-{d_out}): forward "
        f"{t_fwd * 1e3:.3f} ms, value_and_grad {t_step * 1e3:.3f} ms, ratio "
        f"{t_step / t_fwd:.2f} (goal < 3; matmul FLOP ratio {(fwd + bwd) / fwd:.2f})"
    )


def checkpoint_memory(depth=8, width=256, hidden=1024, batch=2048):
    """Blocks h -> h + tanh(tanh(h @ up) @ down): the (batch, hidden)
    activations inside a block are what checkpointing saves."""
    ups = [normal((width, hidden), 1.0 / width**0.5) for _ in range(depth)]
    downs = [normal((hidden, width), 1.0 / hidden**0.5) for _ in range(depth)]
    x = normal((batch, width))
    mx.eval(ups, downs, x)

    def block(h, up, down):
        return h + mx.tanh(mx.tanh(h @ up) @ down)

    def loss(ws, x, ck):
        h = x
        f = mx.checkpoint(block) if ck else block
        for up, down in zip(*ws):
            h = f(h, up, down)
        return h.sum()

    peaks, times, grads = {}, {}, {}
    for ck in (False, True, False, True):
        # the previous round's arrays freed first (grad's closures can sit
        # in reference cycles): garbage freed during a round would lower
        # the active memory under the base and hide that round's peak
        gc.collect()
        mx.synchronize()
        mx.clear_cache()
        mx.reset_peak_memory()
        base = mx.get_active_memory()
        t0 = time.perf_counter()
        g = mx.grad(loss)((ups, downs), x, ck)
        mx.eval(g)
        times[ck] = min(times.get(ck, 1e9), time.perf_counter() - t0)
        peaks[ck] = min(peaks.get(ck, 1 << 62), mx.get_peak_memory() - base)
        grads[ck] = [np.array(a) for a in g[0] + g[1]]
        del g
    diff = max(float(np.abs(a - b).max()) for a, b in zip(grads[False], grads[True]))
    mib = 2**20
    acts = depth * batch * (2 * hidden + 2 * width) * 4 / mib
    weights = depth * 2 * width * hidden * 4 / mib
    print(
        f"checkpoint ({depth} blocks, batch {batch}, {width}->{hidden}->{width}; "
        f"weights {weights:.0f} MiB, activations {acts:.0f} MiB): peak without "
        f"{peaks[False] / mib:.1f} MiB, with {peaks[True] / mib:.1f} MiB "
        f"({peaks[True] / peaks[False]:.2f}x); time {times[False] * 1e3:.0f} ms -> "
        f"{times[True] * 1e3:.0f} ms; max grad diff {diff:.2e}"
    )


if __name__ == "__main__":
    print(
        f"threads: CMX_NUM_THREADS={os.environ.get('CMX_NUM_THREADS', 'default')}, "
        f"{os.cpu_count()} CPUs (figures are best-of runs; a shared machine "
        "makes them noisy)"
    )
    vmap_add()
    mlp_step()
    checkpoint_memory()
