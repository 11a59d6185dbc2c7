"""Compiling a function (shared/seeds/compile.rst): the gelu of
Transformer models, x * (1 + erf(x / sqrt(2))) / 2, is five elementwise
operations; mx.compile traces it once and fuses them into one kernel (C
on the CPU, CUDA on the GPU). Times the plain and the compiled function
on the default device and checks that they agree.

    PYTHONPATH=build/python python examples/compile_gelu.py
    ... --shape 32,1000,4096 --iters 100      # compile.rst's (the default)
"""

import argparse
import math
import time

import cmx.core as mx
import cmx.nn as nn


def gelu(x):
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def timeit(fun, x, iters):
    """Milliseconds a call of fun(x), evaluated, after a warm-up."""
    for _ in range(min(10, iters)):
        mx.eval(fun(x))
    tic = time.perf_counter()
    for _ in range(iters):
        mx.eval(fun(x))
    tpi = 1e3 * (time.perf_counter() - tic) / iters
    print(f"Time per iteration {tpi:.3f} (ms)")
    return tpi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="32,1000,4096")
    ap.add_argument("--iters", type=int, default=100)
    a = ap.parse_args()
    shape = tuple(int(s) for s in a.shape.split(","))
    x = mx.random.uniform(shape=shape)
    mx.eval(x)
    print(f"gelu of {shape} float32 on {mx.default_device()}")
    compiled = mx.compile(gelu)
    print("plain:    ", end="")
    t_plain = timeit(gelu, x, a.iters)
    print("compiled: ", end="")
    t_comp = timeit(compiled, x, a.iters)
    print(f"compiled is {t_plain / t_comp:.1f}x faster")
    diff = mx.max(mx.abs(compiled(x) - gelu(x))).item()
    print(f"max |compiled - plain| = {diff:.3g}")
    # nn.gelu is the same formula
    d_nn = mx.max(mx.abs(mx.compile(nn.gelu)(x) - gelu(x))).item()
    print(f"max |compile(nn.gelu) - plain| = {d_nn:.3g}")


if __name__ == "__main__":
    main()
