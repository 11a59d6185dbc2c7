"""compile on the GPU, cmx beside torch.compile and jax.jit in the same
process (run it on the lent GPU machine; the card is printed):

  gelu  x * (1 + erf(x / sqrt(2))) / 2 on (32, 1000, 4096) float32,
        compiled: time, its fraction of the read+write floor (the card's
        device-to-device copy of the same bytes, timed here through torch,
        else cmx's own copy) and the ratios to torch.compile and jax.jit
  chain a 7-op elementwise chain compiled (one kernel) vs eager
  tiny  1000 dependent tiny ops (a (4,) float32 chain) compiled: time per op

Each figure is the best mean over alternating rounds, every round `number`
calls queued and then waited for.
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_alternating  # noqa: E402

import cmx.core as mx  # noqa: E402


def timed(fns, number, reps):
    best = best_alternating([lambda f=f: f(number) for f in fns], reps, 1)
    return [b / number for b in best]


def cmx_runner(f, *args):
    def run(number):
        outs = [f(*args) for _ in range(number)]
        mx.eval(outs)
        mx.synchronize()
    return run


def gelu(x):
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def chain7(x, y):
    return mx.sqrt(mx.abs(mx.tanh(x * 2 + 1) - y)) * 0.5 - y


def tiny_chain(x):
    for i in range(1000):
        x = x * 1.0001 + 0.001 if i % 2 else mx.abs(x) - 0.0001
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                    help="cpu: a smoke run of the script (small, cmx only)")
    args = ap.parse_args()
    small = args.device == "cpu"
    if not small and not mx.is_available(mx.gpu):
        print("gpu_compile_bench: no GPU here")
        return
    mx.set_default_device(mx.cpu if small else mx.gpu)
    reps = 3 if args.quick else 7
    torch = jax = None
    try:
        if small:
            raise RuntimeError("cpu smoke run")
        import torch
        tdev = torch.device("cuda")
        print(f"device: {torch.cuda.get_device_name(0)}")
    except Exception as e:  # noqa: BLE001
        torch = None
        print(f"torch not usable ({e})")
    try:
        if small:
            raise RuntimeError("cpu smoke run")
        import jax
        import jax.numpy as jnp
        jax.devices("gpu")
    except Exception as e:  # noqa: BLE001
        jax = None
        print(f"jax not usable ({e})")

    shape = (2, 100, 4096) if small else (32, 1000, 4096)
    n = math.prod(shape)
    nbytes = 2 * 4 * n
    xn = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    x = mx.array(xn)
    mx.eval(x)
    cgelu = mx.compile(gelu)
    ref = gelu(x)
    got = cgelu(x)
    err = mx.max(mx.abs(got - ref)).item()
    fns = [cmx_runner(cgelu, x), cmx_runner(gelu, x)]
    names = ["cmx compiled", "cmx eager"]
    copy_t = None
    if torch:
        tx = torch.from_numpy(xn).to(tdev)
        ty = torch.empty_like(tx)

        def tgelu(v):
            return v * (1 + torch.erf(v / math.sqrt(2))) / 2

        tcomp = torch.compile(tgelu)

        def trun(f):
            def run(number):
                for _ in range(number):
                    f()
                torch.cuda.synchronize()
            return run
        fns += [trun(lambda: tcomp(tx)), trun(lambda: ty.copy_(tx))]
        names += ["torch.compile", "torch copy (floor)"]
    if jax:
        jx = jnp.asarray(xn)
        jgelu = jax.jit(lambda v: v * (1 + jax.lax.erf(v / math.sqrt(2))) / 2)

        def jrun(number):
            outs = [jgelu(jx) for _ in range(number)]
            for o in outs:
                o.block_until_ready()
        fns.append(jrun)
        names.append("jax.jit")
    for f in fns:
        f(2)
    t = timed(fns, 10, reps)
    tt = dict(zip(names, t))
    copy_t = tt.get("torch copy (floor)")
    if copy_t is None:
        cp = mx.compile(lambda v: v + 0)
        copy_t = timed([cmx_runner(cp, x)], 10, reps)[0]
        tt["cmx copy (floor)"] = copy_t
    print(f"gelu {shape} float32 (max |compiled - eager| = {err:.2e}):")
    for k, v in tt.items():
        print(f"  {k:22s} {v * 1e3:8.3f} ms  {nbytes / v / 1e9:7.1f} GB/s")
    c = tt["cmx compiled"]
    print(f"  compiled / floor      {c / copy_t:6.3f}x (goal <= 1.05)")
    for k in ("torch.compile", "jax.jit"):
        if k in tt:
            print(f"  compiled / {k:13s} {c / tt[k]:6.3f}x")

    # a 7-op chain: one kernel compiled
    cshape = (256, 256) if small else (4096, 4096)
    a = mx.array(np.random.default_rng(1).standard_normal(cshape, dtype=np.float32))
    b = mx.array(np.random.default_rng(2).standard_normal(cshape, dtype=np.float32))
    mx.eval(a, b)
    cchain = mx.compile(chain7)
    t = timed([cmx_runner(cchain, a, b), cmx_runner(chain7, a, b)], 10, reps)
    print(f"7-op chain {cshape} float32: compiled {t[0] * 1e3:.3f} ms, "
          f"eager {t[1] * 1e3:.3f} ms ({t[1] / t[0]:.1f}x)")

    # 1000 dependent tiny ops
    s = mx.array(np.ones((4,), np.float32))
    mx.eval(s)
    ctiny = mx.compile(tiny_chain)
    cmx_runner(ctiny, s)(2)
    t = timed([cmx_runner(ctiny, s), cmx_runner(tiny_chain, s)], 5, reps)
    print(f"1000 dependent tiny ops: compiled {t[0] * 1e6 / 1000:.3f} us/op "
          f"(goal < 0.5), eager {t[1] * 1e6 / 1000:.3f} us/op")


if __name__ == "__main__":
    main()
