"""Matrix-vector products and row gathers / scatter-adds on the GPU, cmx
beside PyTorch in the same process (run it on the lent GPU machine):

  matvec x @ W and W @ x, 4096 x 4096, float32 and bfloat16, with cmx's
      own kernels and with CMX_CUDA_GEMV=0 (cuBLASLt), beside torch
  embedding gather (50,000 x 1,024 table, 16,384 ids) and its scatter-add
      gradient (zeros.at[ids].add(g); torch: zeros + index_add_) in
      float32 and bfloat16

Each figure is the best mean over alternating rounds (gpu_products_bench's
timing).
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from gpu_products_bench import cmx_fn, gpu_start, timed, torch_fn  # noqa: E402

import cmx.core as mx  # noqa: E402


def main():
    started = gpu_start("gpu_rows_bench")
    if started is None:
        return
    args, torch, dev = started
    r = np.random.default_rng(0)

    def compare(name, fns, labels, nbytes, number):
        for f in fns:
            f(2)
        t = timed(fns, number, 3 if args.quick else 5)
        line = f"{name:30s}"
        for label, ti in zip(labels, t):
            line += f" {label} {ti * 1e6:8.1f} us {nbytes / ti / 1e9:6.0f} GB/s |"
        if torch:
            line += f" cmx/torch speed {t[-1] / t[0]:5.2f}"
        print(line, flush=True)

    def gemv_off(f):
        def run(number):
            os.environ["CMX_CUDA_GEMV"] = "0"
            try:
                f(number)
            finally:
                del os.environ["CMX_CUDA_GEMV"]
        return run

    n = 4096
    for dt, tname, name in [(mx.float32, "float32", "f32"), (mx.bfloat16, "bfloat16", "bf16")]:
        m = mx.array(r.standard_normal((n, n), dtype=np.float32)).astype(dt)
        v = mx.array(r.standard_normal((1, n), dtype=np.float32)).astype(dt)
        vc = mx.array(r.standard_normal((n, 1), dtype=np.float32)).astype(dt)
        mx.eval(m, v, vc)
        nbytes = n * n * m.itemsize
        if torch:
            tm = torch.randn(n, n, device=dev, dtype=getattr(torch, tname))
            tv = torch.randn(1, n, device=dev, dtype=getattr(torch, tname))
            tvc = torch.randn(n, 1, device=dev, dtype=getattr(torch, tname))
        for what, f, tf in [("x @ W", lambda: v @ m, lambda: tv @ tm),
                            ("W @ x", lambda: m @ vc, lambda: tm @ tvc)]:
            fns = [cmx_fn(f), gemv_off(cmx_fn(f))]
            if torch:
                fns.append(torch_fn(torch, tf))
            compare(f"matvec {what} {n} {name}", fns,
                    ["cmx", "cmx cuBLASLt", "torch"], nbytes, 200)
        del m, v, vc

    ids = mx.array(r.integers(0, 50000, 16384).astype(np.int32))
    tids = torch.randint(0, 50000, (16384,), device=dev) if torch else None
    moved = 2.0 * 16384 * 1024
    for dt, tname, name in [(mx.float32, "float32", "f32"), (mx.bfloat16, "bfloat16", "bf16")]:
        table = mx.array(r.standard_normal((50000, 1024), dtype=np.float32)).astype(dt)
        g = mx.array(r.standard_normal((16384, 1024), dtype=np.float32)).astype(dt)
        zeros = mx.zeros((50000, 1024), dt)
        mx.eval(table, g, zeros, ids)
        fns = [cmx_fn(lambda: table[ids])]
        if torch:
            ttable = torch.randn(50000, 1024, device=dev, dtype=getattr(torch, tname))
            tg = torch.randn(16384, 1024, device=dev, dtype=getattr(torch, tname))
            fns.append(torch_fn(torch, lambda: torch.nn.functional.embedding(tids, ttable)))
        compare(f"embedding gather {name}", fns, ["cmx", "torch"],
                moved * table.itemsize, 100)
        fns = [cmx_fn(lambda: zeros.at[ids].add(g))]
        if torch:
            fns.append(torch_fn(torch, lambda: torch.zeros(
                50000, 1024, device=dev, dtype=getattr(torch, tname)).index_add_(0, tids, tg)))
        compare(f"embedding scatter-add {name}", fns, ["cmx", "torch"],
                moved * table.itemsize, 50)
        del table, g, zeros


if __name__ == "__main__":
    main()
