"""Sorts on the GPU, cmx beside PyTorch in the same process (run it on the
lent GPU machine):

  sort and argsort of 2^24 float32 (one row: the tiled radix sort)
  sort and argsort of (4096, 4096) float32 along the last axis (a block's
      radix sort a row)
  sort of (4096, 4096) along axis 0 (rows copied out and back), and of
      (2^20, 16) rows (the bitonic network, many rows to a block)

torch.sort and torch.argsort are the references (torch computes values and
indices either way). Each figure is the best mean over alternating rounds
(cmx and torch take turns), each round `number` sorts queued and then
waited for. Results are checked against NumPy's stable sort.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_alternating  # noqa: E402
from gpu_products_bench import cmx_fn, gpu_start, torch_fn  # noqa: E402

import cmx.core as mx  # noqa: E402


def main():
    started = gpu_start("gpu_sort_bench")
    if started is None:
        return
    args, torch, dev = started
    r = np.random.default_rng(0)
    reps = 3 if args.quick else 5

    def compare(name, cmx_f, torch_f, n_elems, number=10):
        fns = [cmx_fn(cmx_f)] + ([torch_fn(torch, torch_f)] if torch else [])
        for f in fns:
            f(2)
        t = best_alternating([lambda f=f: f(number) for f in fns], reps, 1)
        t = [x / number for x in t]
        line = f"{name:40s} cmx {t[0] * 1e6:9.1f} us {n_elems / t[0] / 1e9:6.2f} Gkeys/s"
        if torch:
            line += f" | torch {t[1] * 1e6:9.1f} us | cmx/torch speed {t[1] / t[0]:5.2f}"
        print(line, flush=True)

    cases = [("2^24 f32", (1 << 24,), -1), ("(4096,4096) f32 axis -1", (4096, 4096), -1)]
    extra = [("(4096,4096) f32 axis 0", (4096, 4096), 0), ("(2^20,16) f32 axis -1", (1 << 20, 16), -1)]
    for name, shape, axis in cases + ([] if args.quick else extra):
        x = r.standard_normal(shape, dtype=np.float32)
        a = mx.array(x)
        mx.eval(a)
        ta = torch.from_numpy(x).to(dev) if torch else None
        # the results first: NumPy's stable order
        want_i = np.argsort(x, axis=axis, kind="stable")
        assert np.array_equal(np.array(mx.argsort(a, axis=axis)), want_i), name
        assert np.array_equal(np.array(mx.sort(a, axis=axis)),
                              np.take_along_axis(x, want_i, axis=axis)), name
        n = x.size
        num = 10 if n <= (1 << 24) else 5
        compare(f"sort {name}", lambda: mx.sort(a, axis=axis),
                (lambda: torch.sort(ta, dim=axis)) if torch else None, n, num)
        if axis == -1:
            compare(f"argsort {name}", lambda: mx.argsort(a, axis=axis),
                    (lambda: torch.argsort(ta, dim=axis)) if torch else None, n, num)
        del a, ta


if __name__ == "__main__":
    main()
