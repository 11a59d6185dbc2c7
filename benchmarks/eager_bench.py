"""Host cost of eager ops from Python, on tiny arrays (the time is cmx's
bookkeeping, not arithmetic):

  mx.add chain     1,000 dependent mx.add on 4-element float32, one eval
  x + y chain      the same with the operator
  eager add        c = mx.add(a, b); mx.eval(c), one op per eval
  scalar add       c = a + 1.0 (a weak Python scalar operand), no eval
  LeNet step b=1   the demo's eager training step (value_and_grad + Adam)
                   on a batch of one 28x28 image: host-bound

Microseconds per op (per step for LeNet): the best of several rounds, by
wall clock and by the process's CPU time.
Run: PYTHONPATH=build/python python benchmarks/eager_bench.py [--rounds N]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import blas_setup  # noqa: E402,F401  (OPENBLAS_CORETYPE before cmx loads)
import numpy as np  # noqa: E402

import cmx.core as mx  # noqa: E402
import cmx.optimizers as optim  # noqa: E402


def best(fn, rounds, per):
    """Best (wall, cpu) microseconds per unit over rounds calls of fn, which
    does `per` units of work."""
    fn()
    bw = bc = float("inf")
    for _ in range(rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        bw = min(bw, (time.perf_counter() - t0) / per * 1e6)
        bc = min(bc, (time.process_time() - c0) / per * 1e6)
    return bw, bc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    mx.set_default_device(mx.cpu)
    a = mx.array([1.0, 2.0, 3.0, 4.0])
    b = mx.array([1.0, 1.0, 1.0, 1.0])
    mx.eval(a, b)
    N = 1000

    def add_chain():
        x = a
        for _ in range(N):
            x = mx.add(x, b)
        mx.eval(x)

    def op_chain():
        x = a
        for _ in range(N):
            x = x + b
        mx.eval(x)

    def eager_add():
        for _ in range(N):
            mx.eval(mx.add(a, b))

    def scalar_add():
        for _ in range(N):
            a + 1.0

    rows = [
        ("mx.add chain (1000)", add_chain, N),
        ("x + y chain (1000)", op_chain, N),
        ("eager mx.add + eval", eager_add, N),
        ("a + 1.0 (build only)", scalar_add, N),
    ]

    from demo import LeNet, make_step

    mx.random.seed(0)
    model = LeNet()
    opt = optim.Adam(learning_rate=1e-3)
    step = make_step(model, opt)
    rng = np.random.default_rng(0)
    x1 = mx.array(rng.random((1, 28, 28, 1), dtype=np.float32))
    y1 = mx.array(np.array([3], np.int32))
    mx.eval(model.parameters(), x1, y1)

    def lenet():
        for _ in range(10):
            loss = step(x1, y1)
            mx.eval(loss, model.parameters(), opt.state)

    rows.append(("LeNet step b=1 (per step)", lenet, 10))
    for name, fn, per in rows:
        w, c = best(fn, args.rounds, per)
        print(f"{name:28s} {w:8.2f} us wall  {c:8.2f} us cpu")


if __name__ == "__main__":
    main()
