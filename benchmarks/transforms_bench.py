"""Transform benchmarks (issue 5), one run, figures printed:

1. The vmap example of MLX's transforms page: naive_add (a Python loop over
   100 columns) vs vmap(lambda x, y: x + y, in_axes=(1, 0)) on (4096, 100)
   and (100, 4096) float32; goal: vmap at least 10x faster on the CPU.
2. value_and_grad of a 3-layer MLP step vs its forward pass alone; goal:
   the gradient step under 3x the forward.
3. checkpoint: peak memory of the gradient of a deep MLP with and without
   mx.checkpoint per layer (same gradients).

Run: PYTHONPATH=build/python python benchmarks/transforms_bench.py
"""

import os
import time

import cmx.core as mx


def best_of(fn, reps=5, number=10):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def vmap_add():
    xs = mx.random.uniform(shape=(4096, 100))
    ys = mx.random.uniform(shape=(100, 4096))
    mx.eval(xs, ys)

    def naive_add(xs, ys):
        return [xs[i] + ys[:, i] for i in range(xs.shape[1])]

    vadd = mx.vmap(lambda x, y: x + y, in_axes=(1, 0))
    t_naive = best_of(lambda: mx.eval(naive_add(xs, ys)))
    t_vmap = best_of(lambda: mx.eval(vadd(xs, ys)))
    print(f"vmap example: naive_add {t_naive * 1e3:.3f} ms, vmap {t_vmap * 1e3:.3f} ms, "
          f"speedup {t_naive / t_vmap:.1f}x (goal >= 10x)")


def mlp_step():
    batch, d_in, hidden, d_out = 256, 784, 512, 10
    params = {
        "w1": mx.random.normal((d_in, hidden)) * 0.05, "b1": mx.zeros((hidden,)),
        "w2": mx.random.normal((hidden, hidden)) * 0.05, "b2": mx.zeros((hidden,)),
        "w3": mx.random.normal((hidden, d_out)) * 0.05, "b3": mx.zeros((d_out,)),
    }
    x = mx.random.normal((batch, d_in))
    y = mx.random.randint(0, d_out, (batch,))
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
    t_fwd = best_of(lambda: mx.eval(loss(params, x, y)))
    t_step = best_of(lambda: mx.eval(vg(params, x, y)))
    print(f"3-layer MLP (batch {batch}, 784-512-512-10): forward {t_fwd * 1e3:.3f} ms, "
          f"value_and_grad {t_step * 1e3:.3f} ms, ratio {t_step / t_fwd:.2f} (goal < 3)")


def checkpoint_memory(depth=8, width=512, hidden=2048, batch=512):
    """Blocks h -> h + tanh(tanh(h @ up) @ down): the (batch, hidden)
    activations inside a block are what checkpointing saves."""
    ups = [mx.random.normal((width, hidden)) * (1.0 / width ** 0.5) for _ in range(depth)]
    downs = [mx.random.normal((hidden, width)) * (1.0 / hidden ** 0.5) for _ in range(depth)]
    x = mx.random.normal((batch, width))
    mx.eval(ups, downs, x)

    def block(h, up, down):
        return h + mx.tanh(mx.tanh(h @ up) @ down)

    def loss(ws, x, ck):
        h = x
        f = mx.checkpoint(block) if ck else block
        for up, down in zip(*ws):
            h = f(h, up, down)
        return h.sum()

    peaks, grads = [], []
    for ck in (False, True):
        mx.clear_cache()
        mx.reset_peak_memory()
        base = mx.get_active_memory()
        g = mx.grad(loss)((ups, downs), x, ck)
        mx.eval(g)
        peaks.append(mx.get_peak_memory() - base)
        grads.append(g)
    flat = lambda g: list(g[0]) + list(g[1])
    diff = max(float(mx.max(mx.abs(a - b)).item()) for a, b in zip(flat(grads[0]), flat(grads[1])))
    print(f"checkpoint ({depth} blocks, batch {batch}, {width}->{hidden}->{width}): "
          f"peak without {peaks[0] / 2**20:.1f} MiB, with {peaks[1] / 2**20:.1f} MiB "
          f"({peaks[1] / peaks[0]:.2f}x); max grad diff {diff:.2e}")


if __name__ == "__main__":
    print(f"threads: CMX_NUM_THREADS={os.environ.get('CMX_NUM_THREADS', 'default')}")
    vmap_add()
    mlp_step()
    checkpoint_memory()
