"""The guide's comparison: axpby against alpha * x + beta * y composed of
ops, uncompiled, on (4096, 4096) float32 (--device gpu for the GPU)."""

import argparse
import time

import cmx.core as mx
from axpby import axpby


def simple_axpby(x, y, alpha, beta):
    return alpha * x + beta * y


def bench(f, x, y, iters):
    for _ in range(3):
        mx.eval(f(x, y, 4.0, 2.0))
    mx.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        mx.eval(f(x, y, 4.0, 2.0))
    mx.synchronize()
    return (time.perf_counter() - t) / iters


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    mx.set_default_device(mx.gpu if a.device == "gpu" else mx.cpu)
    x = mx.random.normal((a.size, a.size))
    y = mx.random.normal((a.size, a.size))
    mx.eval(x, y)
    simple = bench(simple_axpby, x, y, a.iters)
    custom = bench(axpby, x, y, a.iters)
    gb = 3 * x.nbytes / 1e9
    print(f"{a.device} ({a.size}, {a.size}) float32: simple "
          f"{simple * 1e3:.2f} ms | custom {custom * 1e3:.2f} ms "
          f"({gb / custom:.0f} GB/s) | speedup {simple / custom:.2f}x")


if __name__ == "__main__":
    main()
