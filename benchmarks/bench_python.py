"""Python-level benchmarks of cmx.core (issue 4), with NumPy in the same run.

1. Overhead of `c = a + b` on 4-element float32 arrays: build + eval per
   iteration (and build alone), vs NumPy's `a + b`.
2. mx.eval of a 1,000-op graph (a chain of dependent adds on 4-element
   arrays): microseconds per op, build + eval and eval alone, next to the C
   figure of bench_core (10,000 dependent adds through the C API), run as a
   subprocess when it is built.
3. Large sizes vs NumPy: elementwise add and exp on 16M float32, a sum over
   16M float32, matmul 1024x1024x1024 float32 (goal: at least NumPy's speed).

Each figure is the best of several repetitions (the machine may be shared).
Run: PYTHONPATH=build/python python benchmarks/bench_python.py [--quick]
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np

import cmx.core as mx
from _timing import best_of


def small_add(reps):
    a = mx.array([1.0, 2.0, 3.0, 4.0])
    b = mx.array([4.0, 3.0, 2.0, 1.0])
    mx.eval(a, b)
    an = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    bn = np.array([4.0, 3.0, 2.0, 1.0], np.float32)

    def cmx_build_eval():
        c = a + b
        mx.eval(c)

    def cmx_build():
        return a + b

    def numpy_add():
        return an + bn

    t_eval = best_of(cmx_build_eval, reps, 20000)
    t_build = best_of(cmx_build, reps, 20000)
    t_np = best_of(numpy_add, reps, 20000)
    # Per-iteration spread: evaluation hands the graph to the stream's
    # worker thread and waits, so a busy machine shows in the median.
    single = []
    for _ in range(5000):
        t0 = time.perf_counter()
        cmx_build_eval()
        single.append(time.perf_counter() - t0)
    single = np.array(single) * 1e6
    print("1. c = a + b on 4-element float32 arrays")
    print(f"   cmx build + eval   {t_eval * 1e6:8.2f} us   (per call: min {single.min():.2f}, "
          f"median {np.median(single):.2f} us)")
    print(f"   cmx build only     {t_build * 1e6:8.2f} us")
    print(f"   numpy a + b        {t_np * 1e6:8.2f} us")
    print(f"   ratio cmx (build + eval) / numpy: {t_eval / t_np:.1f}x")


def c_graph_figure():
    """The C figure of bench_core ("graph add chain (4)+(4)"), or None.
    Looks in $CMX_BENCH_CORE, then build/ and build-gpu/ (gpu-check's)."""
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [os.environ.get("CMX_BENCH_CORE")] + [
        os.path.join(here, "..", d, "bench_core") for d in ("build", "build-gpu")]
    exe = next((c for c in cands if c and os.path.exists(c)), None)
    if exe is None:
        return None
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"graph add chain \(4\)\+\(4\)\s+([0-9.]+) us/op", out)
    return float(m.group(1)) if m else None


def graph_1000(reps):
    n_ops = 1000
    x0 = mx.array([1.0, 2.0, 3.0, 4.0])
    one = mx.array([1.0, 1.0, 1.0, 1.0])
    mx.eval(x0, one)

    def build():
        x = x0
        for _ in range(n_ops):
            x = x + one
        return x

    def build_eval():
        mx.eval(build())

    t_total = best_of(build_eval, reps, 20)
    # every graph built first, so eval only walks graphs that have left the
    # cache (on a small machine it can come out slower than build + eval)
    graphs = [build() for _ in range(reps * 20)]
    it = iter(graphs)

    def eval_only():
        mx.eval(next(it))

    t_eval = best_of(eval_only, reps, 20)
    assert np.array(graphs[0])[0] == 1.0 + n_ops
    c_fig = c_graph_figure()
    print("2. mx.eval of a 1,000-op graph (dependent adds on 4-element arrays)")
    print(f"   build + eval       {t_total / n_ops * 1e6:8.2f} us/op")
    print(f"   eval only          {t_eval / n_ops * 1e6:8.2f} us/op  (graphs built beforehand)")
    if c_fig is not None:
        print(f"   C API (bench_core) {c_fig:8.2f} us/op  (build + eval, 10,000 adds)")
        print(f"   ratio Python / C (build + eval): {t_total / n_ops * 1e6 / c_fig:.1f}x")
    else:
        print("   (bench_core not found in build/ or build-gpu/: no C figure)")


def large(reps, quick):
    n = 1 << 22 if quick else 1 << 24
    rng = np.random.default_rng(0)
    xn = rng.standard_normal(n).astype(np.float32)
    yn = rng.standard_normal(n).astype(np.float32)
    x, y = mx.array(xn), mx.array(yn)
    m = 512 if quick else 1024
    an = rng.standard_normal((m, m)).astype(np.float32)
    bn = rng.standard_normal((m, m)).astype(np.float32)
    a, b = mx.array(an), mx.array(bn)
    mx.eval(x, y, a, b)
    # correctness first
    np.testing.assert_allclose(np.array(x + y), xn + yn, rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.exp(x)), np.exp(xn), rtol=1e-5)
    np.testing.assert_allclose(mx.sum(x).item(), xn.sum(dtype=np.float64), rtol=1e-3)
    np.testing.assert_allclose(np.array(a @ b), an @ bn, rtol=1e-3, atol=1e-3)
    cases = [
        (f"add {n >> 20}M f32", lambda: mx.eval(x + y), lambda: np.add(xn, yn), 3 * n * 4, "GB/s"),
        (f"exp {n >> 20}M f32", lambda: mx.eval(mx.exp(x)), lambda: np.exp(xn), 2 * n * 4, "GB/s"),
        (f"sum {n >> 20}M f32", lambda: mx.eval(mx.sum(x)), lambda: np.sum(xn), n * 4, "GB/s"),
        (f"matmul {m}^3 f32", lambda: mx.eval(a @ b), lambda: an @ bn, 2 * m**3, "GFLOP/s"),
    ]
    print(f"3. large sizes vs numpy {np.__version__} (best of {reps})")
    for name, fc, fn, work, unit in cases:
        tc = best_of(fc, reps, 3)
        tn = best_of(fn, reps, 3)
        print(f"   {name:18s} cmx {tc * 1e3:8.2f} ms ({work / tc / 1e9:6.1f} {unit})   "
              f"numpy {tn * 1e3:8.2f} ms ({work / tn / 1e9:6.1f} {unit})   "
              f"speed vs numpy {tn / tc:5.2f}x")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions, smaller sizes")
    args = p.parse_args()
    reps = 3 if args.quick else 7
    print(f"cmx {mx.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, CMX_NUM_THREADS={os.environ.get('CMX_NUM_THREADS', 'default')}, "
          f"cmx on {mx.default_device()}")
    small_add(reps)
    graph_1000(reps)
    large(reps, args.quick)


if __name__ == "__main__":
    main()
