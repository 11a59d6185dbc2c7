"""Launch overhead on the GPU from Python, for the lent GPU machine (the
card is printed): run it once with CMX_CUDA_GRAPHS=1 and once with
CMX_CUDA_GRAPHS=0 to compare the CUDA-graph batching of launches
(src/backend/cuda/graph.c; on by default) with plain launches;
CMX_CUDA_GRAPH_CAPTURE=1 adds the captured cuBLASLt products.

  adds  1000 dependent adds on a (16,) float32 array, built and evaluated
        from Python: microseconds per op (the issue's figure: <= 3)
  tiny  the same chain compiled (mx.compile): microseconds per op
  mlp   the MLP 784-512-512-10 SGD step (batch 256, compile.rst's compiled
        step) eager and compiled, beside torch eager in the same process
        (gpu_products_bench.mlp_steps)
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import cmx.core as mx  # noqa: E402


def best(f, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main():
    mx.set_default_device(mx.gpu)
    graphs = os.environ.get("CMX_CUDA_GRAPHS", "1") != "0"  # on by default
    capture = os.environ.get("CMX_CUDA_GRAPH_CAPTURE", "0") == "1"
    print(f"cuda graphs: {'on' if graphs else 'off (CMX_CUDA_GRAPHS=0)'}"
          f"{', cuBLASLt captured' if graphs and capture else ''}",
          flush=True)
    x = mx.zeros((16,))
    inc = mx.array(1.0)
    mx.eval(x, inc)

    def adds():
        y = x
        for _ in range(1000):
            y = y + inc
        mx.eval(y)
        mx.synchronize()
        return y

    for _ in range(3):
        y = adds()
    assert np.array_equal(np.array(y), np.full(16, 1000, np.float32))
    t = best(adds, 15)
    print(f"1000 dependent adds of (16,), eager from Python: "
          f"{t / 1000 * 1e6:6.2f} us per op", flush=True)

    def chain(v):
        for _ in range(1000):
            v = v + inc
        return v

    cchain = mx.compile(chain)

    def tiny():
        mx.eval(cchain(x))
        mx.synchronize()

    for _ in range(3):
        tiny()
    t = best(tiny, 15)
    print(f"1000 dependent adds of (16,), compiled: "
          f"{t / 1000 * 1e6:6.2f} us per op", flush=True)

    torch = None
    try:
        import torch as _torch
        if _torch.cuda.is_available():
            torch = _torch
            torch.backends.cuda.matmul.allow_tf32 = False
            print(f"device: {torch.cuda.get_device_name(0)}", flush=True)
    except ImportError:
        pass
    import gpu_products_bench as gp
    gp.mlp_steps(torch, np.random.default_rng(0))


if __name__ == "__main__":
    main()
