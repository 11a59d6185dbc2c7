"""compile's contiguous GPU kernels, the pipelined one
(CMX_CUDA_FUSED_PIPELINE=1: each thread's next loads issued before its
math) against the plain one (the default: loads, then math), as fractions of the
read+write floor: torch's device copy of the same bytes where torch is,
else cmx's compiled x + 0. Run it on the lent machine (the card is
printed):

  gelu   x * (1 + erf(x / sqrt(2))) / 2 on (32, 1000, 4096) float32
  axpby  4 * x + 2 * y on (4096, 4096) float32 (two reads, one write)
  chain  gpu_compile_bench's 7-op chain on (4096, 4096) float32

Each figure is the best mean over alternating rounds (the two kernels and
the floor take turns), every round `number` calls queued, then waited for.
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_alternating  # noqa: E402

import cmx.core as mx  # noqa: E402

ENV = "CMX_CUDA_FUSED_PIPELINE"


def gelu(x):
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def axpby(x, y):
    return 4 * x + 2 * y


def chain7(x, y):
    return mx.sqrt(mx.abs(mx.tanh(x * 2 + 1) - y)) * 0.5 - y


def runner(f, args, pipeline):
    """number calls of f with the kernel choice pipeline ("1" or "0"),
    read by each launch."""
    def run(number):
        old = os.environ.get(ENV)
        os.environ[ENV] = pipeline
        try:
            outs = [f(*args) for _ in range(number)]
            mx.eval(outs)
            mx.synchronize()
        finally:
            if old is None:
                del os.environ[ENV]
            else:
                os.environ[ENV] = old
    return run


def floor_runner(nbytes_read, torch):
    """A device copy of nbytes_read bytes (the floor of a kernel reading
    and writing that much)."""
    if torch is not None:
        src = torch.empty(nbytes_read // 4, dtype=torch.float32,
                          device="cuda")
        dst = torch.empty_like(src)

        def run(number):
            for _ in range(number):
                dst.copy_(src)
            torch.cuda.synchronize()
        return run, "torch copy"
    x = mx.zeros((nbytes_read // 4,), mx.float32)
    mx.eval(x)
    return runner(mx.compile(lambda v: v + 0), (x,), "1"), "cmx copy"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not mx.is_available(mx.gpu):
        print("gpu_fused_pipeline: no GPU here")
        return
    mx.set_default_device(mx.gpu)
    try:
        import torch
        print(f"device: {torch.cuda.get_device_name(0)}")
    except Exception as e:  # noqa: BLE001
        torch = None
        print(f"torch not usable ({e}): the floor is cmx's own copy")
    reps = 3 if args.quick else 7
    r = np.random.default_rng(0)

    def arr(shape):
        a = mx.array(r.standard_normal(shape, dtype=np.float32))
        mx.eval(a)
        return a
    big, sq = (32, 1000, 4096), (4096, 4096)
    cases = [("gelu", gelu, (arr(big),), 2),
             ("axpby", axpby, (arr(sq), arr(sq)), 3),
             ("chain", chain7, (arr(sq), arr(sq)), 3)]
    for name, f, xs, arrays in cases:
        nbytes = arrays * xs[0].nbytes  # reads and writes
        # separate compiled functions, so each keeps its own replay
        fns = [runner(mx.compile(f), xs, "1"), runner(mx.compile(f), xs, "0")]
        fl, fl_name = floor_runner(nbytes // 2, torch)
        fns.append(fl)
        for fn in fns:
            fn(2)
        t = [b / 10 for b in best_alternating([lambda g=g: g(10) for g in fns],
                                              reps, 1)]
        print(f"{name} {tuple(xs[0].shape)} float32 ({nbytes / 1e9:.3f} GB "
              f"moved; floor: {fl_name} of the same bytes):")
        for label, v in zip(["pipelined", "plain", "floor"], t):
            print(f"  {label:10s} {v * 1e3:8.3f} ms  {nbytes / v / 1e9:7.1f} "
                  f"GB/s  {v / t[2]:6.3f}x floor")


if __name__ == "__main__":
    main()
