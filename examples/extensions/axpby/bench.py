"""The guide's comparison: axpby against alpha * x + beta * y composed of
ops, uncompiled, on (4096, 4096) float32 (--device gpu for the GPU: the
calls queued, then evaluated together, and the card's floor, a device
copy of the same bytes, when torch is there)."""

import argparse
import time

import cmx.core as mx
from axpby import axpby


def simple_axpby(x, y, alpha, beta):
    return alpha * x + beta * y


def bench(f, x, y, iters, queued):
    """Seconds a call: each evaluated on its own, or (queued) all the
    calls queued, then evaluated together (so the GPU's time is the
    kernels', not each call's wait for its result)."""
    for _ in range(3):
        mx.eval(f(x, y, 4.0, 2.0))
    mx.synchronize()
    t = time.perf_counter()
    if queued:
        mx.eval([f(x, y, 4.0, 2.0) for _ in range(iters)])
    else:
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
    queued = a.device == "gpu"
    simple = bench(simple_axpby, x, y, a.iters, queued)
    custom = bench(axpby, x, y, a.iters, queued)
    gb = 3 * x.nbytes / 1e9
    print(f"{a.device} ({a.size}, {a.size}) float32: simple "
          f"{simple * 1e3:.2f} ms | custom {custom * 1e3:.2f} ms "
          f"({gb / custom:.0f} GB/s) | speedup {simple / custom:.2f}x")
    floor = copy_floor(3 * x.nbytes // 2, a.iters) if a.device == "gpu" \
        else None
    if floor:
        print(f"  floor (torch's device copy of the same bytes) "
              f"{floor * 1e3:.3f} ms ({gb / floor:.0f} GB/s): custom "
              f"{custom / floor:.3f}x the floor")


def copy_floor(nbytes, iters):
    """Seconds a device copy of nbytes takes (it reads and writes what
    axpby does in all), through torch; None without it."""
    try:
        import torch
        src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
    except Exception:  # noqa: BLE001
        return None
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / iters


if __name__ == "__main__":
    main()
