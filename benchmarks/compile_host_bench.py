"""Host cost of a compiled call (issue 13), on the CPU, one run:

  chain  a 7-op elementwise chain compiled, on a scalar float32
  mlp    compile.rst's compiled SGD step of an MLP at tiny shapes (batch 1,
         16-16-16-10), its state captured (inputs=/outputs=)

At these shapes the kernels take a few hundred nanoseconds: the time is the
host work of a call (Python wrapper, key, captured state, replay of the
trace, scheduling, kernel dispatch), the same work that bounds the GPU
step (gpu_graphs_bench.py). Each figure is microseconds per call, the call
and an eval of its results; `call only` is the compiled call without the
eval (the lazy graph it returns is dropped; chain only), `eager` the
same function uncompiled. Figures are CPU time
of the process (the machine is shared). Run:
    PYTHONPATH=build/python python benchmarks/compile_host_bench.py [reps]
    ... compile_host_bench.py --compare [reps]
--compare times each compiled case twice, alternating: traced with
CMX_COMPILE_OP_BY_OP=1 (a lazy node per op of the trace that the eval
schedules, as before the one-op run of src/compile/run.c) and =0.
CMX_BENCH_PROFILE=chain|mlp runs that case's compiled call alone,
CMX_BENCH_CALLS times (default 200000), for a profiler; instructions per
call, which the machine's load does not move, are the difference of two
counts under callgrind:
    CMX_BENCH_PROFILE=mlp CMX_BENCH_CALLS=200 (then 1200) valgrind \
      --tool=callgrind python benchmarks/compile_host_bench.py
"""

import os
import sys
import time

import numpy as np

import cmx.core as mx
from _mlp_step import mlp_step
from _timing import best_alternating


def chain_case(modes=(None,)):
    x = mx.array(0.5)
    mx.eval(x)

    def make():  # a function object per compile: traces are per function
        def chain(v):
            return mx.exp(mx.sin(v * 2.0 + 1.0) - 0.5) * v / 3.0
        return chain

    chain = make()
    fns = {"eager": lambda: mx.eval(chain(x))}
    want = np.array(chain(x))
    for mode in modes:
        cchain = mx.compile(make())
        with_env(mode, lambda: mx.eval(cchain(x)))
        got = np.array(cchain(x))
        assert np.allclose(want, got), (want, got)
        tag = MODE_TAG[mode]
        fns[f"compiled{tag}"] = lambda c=cchain: mx.eval(c(x))
        fns[f"call only{tag}"] = lambda c=cchain: c(x)
    return fns


def mlp_case(modes=(None,)):
    r = np.random.default_rng(0)
    x = mx.array(r.standard_normal((1, 16), dtype=np.float32))
    y = mx.array(r.integers(0, 10, 1).astype(np.int32))
    eager, make_compiled = mlp_step(x, y, (16, 16, 16, 10))
    fns = {"eager": eager}
    for mode in modes:
        fns[f"compiled{MODE_TAG[mode]}"] = f = make_compiled()
        with_env(mode, f)
    return fns


MODE_TAG = {None: "", "1": " op by op", "0": " one op"}


def with_env(mode, f):
    """Runs f three times (the calls that trace: the optimizer's state
    appears at the first update, so the second call traces again) with
    CMX_COMPILE_OP_BY_OP=mode (None: unchanged)."""
    old = os.environ.get("CMX_COMPILE_OP_BY_OP")
    if mode is not None:
        os.environ["CMX_COMPILE_OP_BY_OP"] = mode
    try:
        for _ in range(3):
            f()
    finally:
        if old is None:
            os.environ.pop("CMX_COMPILE_OP_BY_OP", None)
        else:
            os.environ["CMX_COMPILE_OP_BY_OP"] = old


CASES = {"chain": chain_case, "mlp": mlp_case}


def main():
    mx.set_default_device(mx.cpu)
    prof = os.environ.get("CMX_BENCH_PROFILE")
    if prof:
        f = CASES[prof]()["compiled"]
        for _ in range(int(os.environ.get("CMX_BENCH_CALLS", "200000"))):
            f()
        return
    compare = sys.argv[1:2] == ["--compare"]
    if compare:
        sys.argv.pop(1)
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    modes = ("1", "0") if compare else (None,)
    for name, make in CASES.items():
        fns = make(modes)
        for f in fns.values():  # warm up: traces, kernels
            for _ in range(20):
                f()
        # CPU time: on a shared, loaded machine the wall clock counts other
        # processes' turns. Eager apart: its garbage (Python's collector)
        # moved the figures of the compiled calls timed in turn with it.
        line = f"{name:6s}"
        for group in (["eager"], [k for k in fns if k != "eager"]):
            times = best_alternating([fns[k] for k in group], reps, 500,
                                     time.process_time)
            for k, t in zip(group, times):
                line += f"  {k}: {t * 1e6:.2f} us"
        print(line, flush=True)


if __name__ == "__main__":
    main()
