"""A LeNet training step on the CPU: cmx against PyTorch in the same run.

The model (NHWC for cmx, NCHW for torch; the same arithmetic):
  conv 5x5, 1 -> 32, relu, 2x2 max pool   (28 -> 24 -> 12)
  conv 5x5, 32 -> 64, relu, 2x2 max pool  (12 -> 8 -> 4)
  dense 1024 -> 128, relu, dense 128 -> 10, cross-entropy
on a batch of 128 28x28 grey images (Fashion-MNIST's shape; random data:
only the time matters here). Timed: the forward pass alone, and the loss
and gradients of every parameter (value_and_grad / backward), best of
alternating rounds. PyTorch runs with as many threads as cmx.

Run: PYTHONPATH=build/python python benchmarks/lenet_bench.py
"""

import os

import numpy as np

import cmx.core as mx
from _timing import best_alternating

BATCH = 128


def init(rng):
    def w(*shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)

    return {
        "c1": w(32, 5, 5, 1, fan_in=25), "b1": np.zeros(32, np.float32),
        "c2": w(64, 5, 5, 32, fan_in=800), "b2": np.zeros(64, np.float32),
        "d1": w(1024, 128, fan_in=1024), "e1": np.zeros(128, np.float32),
        "d2": w(128, 10, fan_in=128), "e2": np.zeros(10, np.float32),
    }


def pool2(x):
    """2x2 max pooling of NHWC x."""
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def cmx_loss(p, x, y):
    h = pool2(mx.maximum(mx.conv2d(x, p["c1"]) + p["b1"], 0))
    h = pool2(mx.maximum(mx.conv2d(h, p["c2"]) + p["b2"], 0))
    h = h.reshape(h.shape[0], -1)
    h = mx.maximum(h @ p["d1"] + p["e1"], 0)
    logits = h @ p["d2"] + p["e2"]
    picked = mx.take_along_axis(logits, y[:, None], axis=1)[:, 0]
    return mx.mean(mx.logsumexp(logits, axis=1) - picked)


def bench_cmx(params, xb, yb):
    p = {k: mx.array(v) for k, v in params.items()}
    x, y = mx.array(xb), mx.array(yb)
    mx.eval(p, x, y)
    vg = mx.value_and_grad(cmx_loss)
    return best_alternating([
        lambda: mx.eval(cmx_loss(p, x, y)),
        lambda: mx.eval(vg(p, x, y)),
    ], 7, 5)


def bench_torch(params, xb, yb, threads):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    # NHWC weights (O, kh, kw, I) -> NCHW (O, I, kh, kw); the dense layer's
    # rows follow cmx's (h, w, c) flattening, so permute the activation too.
    t = {k: torch.tensor(v) for k, v in params.items()}
    t["c1"] = t["c1"].permute(0, 3, 1, 2).contiguous()
    t["c2"] = t["c2"].permute(0, 3, 1, 2).contiguous()
    for v in t.values():
        v.requires_grad_(True)
    x = torch.tensor(xb).permute(0, 3, 1, 2).contiguous()
    y = torch.tensor(yb).long()

    def loss():
        h = F.max_pool2d(F.relu(F.conv2d(x, t["c1"], t["b1"])), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, t["c2"], t["b2"])), 2)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
        h = F.relu(h @ t["d1"] + t["e1"])
        return F.cross_entropy(h @ t["d2"] + t["e2"], y)

    def fwd():
        with torch.no_grad():
            loss()

    def step():
        for v in t.values():
            v.grad = None
        loss().backward()

    with torch.no_grad():
        ref = float(loss())
    return best_alternating([fwd, step], 7, 5), ref


def main():
    rng = np.random.default_rng(0)
    params = init(rng)
    xb = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    yb = rng.integers(0, 10, BATCH).astype(np.int32)
    threads = os.environ.get("CMX_NUM_THREADS")
    ncpu = len(os.sched_getaffinity(0))
    threads = int(threads) if threads else ncpu
    print(f"LeNet step, batch {BATCH}, {threads} threads ({ncpu} CPUs)")
    f, s = bench_cmx(params, xb, yb)
    print(f"  cmx    forward {f * 1e3:7.2f} ms   value_and_grad {s * 1e3:7.2f} ms"
          f"   ({s / f:.2f}x forward)")
    loss_cmx = float(cmx_loss({k: mx.array(v) for k, v in params.items()},
                              mx.array(xb), mx.array(yb)).item())
    try:
        (tf, ts), loss_torch = bench_torch(params, xb, yb, threads)
    except ImportError:
        print("  torch  not installed: no comparison")
        return
    print(f"  torch  forward {tf * 1e3:7.2f} ms   backward step  {ts * 1e3:7.2f} ms"
          f"   ({ts / tf:.2f}x forward)")
    print(f"  cmx / torch: forward {tf / f:.2f}x the speed, step {ts / s:.2f}x the speed"
          f"   (same loss: {loss_cmx:.6f} vs {loss_torch:.6f})")


if __name__ == "__main__":
    main()
