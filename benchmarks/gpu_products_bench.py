"""Matrix products and embedding gather/scatter on the GPU, cmx beside
PyTorch in the same process (run it on the lent GPU machine):

  matmul n x n x n, n = 4096 and 8192, float32 (no TF32 on either side)
      and bfloat16: TFLOP/s and cmx's fraction of torch's
  batched matmul (64, 128, 128) @ (64, 128, 128)
  matrix-vector (1, 4096) @ (4096, 4096)
  embedding gather: a 50,000 x 1,024 float32 table, 16,384 token ids
  its gradient: scatter-add of (16,384, 1,024) rows into a 50,000 x 1,024 zero
      table (cmx: zeros.at[ids].add(g); torch: index_add_)
  MLP 784-512-512-10 training step (batch 256, SGD, cross-entropy): cmx
      eager and compiled (compile.rst's step) beside torch eager

Each figure is the best mean over alternating rounds (cmx and torch take
turns), each round `number` products queued and then waited for.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_alternating  # noqa: E402

import cmx.core as mx  # noqa: E402


def cmx_fn(f):
    # the products are queued, then evaluated together, as torch queues
    # its kernels (an eval per product would wait for each)
    def run(number):
        outs = [f() for _ in range(number)]
        mx.eval(outs)
        mx.synchronize()
    return run


def torch_fn(torch, f):
    def run(number):
        for _ in range(number):
            f()
        torch.cuda.synchronize()
    return run


def timed(fns, number, reps):
    # each fn(number) runs `number` ops; best_alternating wants per-call fns
    best = best_alternating([lambda f=f: f(number) for f in fns], reps, 1)
    return [b / number for b in best]


def gpu_start(name):
    """The start of a GPU benchmark: parses --quick, makes the GPU cmx's
    default device and imports torch (TF32 off). Returns (args, torch, its
    cuda device), torch and device None when torch is not usable, or None
    when there is no GPU."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not mx.is_available(mx.gpu):
        print(f"{name}: no GPU here")
        return None
    mx.set_default_device(mx.gpu)
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        dev = torch.device("cuda")
        print(f"device: {torch.cuda.get_device_name(0)}")
    except Exception as e:  # noqa: BLE001
        torch = dev = None
        print(f"torch not usable ({e}): cmx alone")
    return args, torch, dev


def main():
    started = gpu_start("gpu_products_bench")
    if started is None:
        return
    args, torch, dev = started
    r = np.random.default_rng(0)
    rows = []

    def compare(name, cmx_f, torch_f, flops=None, nbytes=None, number=10, reps=5):
        fns = [cmx_fn(cmx_f)] + ([torch_fn(torch, torch_f)] if torch else [])
        fns[0](2)
        if torch:
            fns[1](2)
        t = timed(fns, number, reps)
        line = f"{name:44s} cmx {t[0] * 1e6:9.1f} us"
        if flops:
            line += f" {flops / t[0] / 1e12:7.1f} TFLOP/s"
        if nbytes:
            line += f" {nbytes / t[0] / 1e9:7.1f} GB/s"
        if torch:
            line += f" | torch {t[1] * 1e6:9.1f} us"
            if flops:
                line += f" {flops / t[1] / 1e12:7.1f} TFLOP/s"
            line += f" | cmx/torch speed {t[1] / t[0]:5.2f}"
        print(line, flush=True)
        rows.append((name, t))

    sizes = [4096] if args.quick else [4096, 8192]
    for n in sizes:
        for dt, tdt, name in [(mx.float32, "float32", "f32"), (mx.bfloat16, "bfloat16", "bf16")]:
            a = mx.array(r.standard_normal((n, n), dtype=np.float32)).astype(dt)
            b = mx.array(r.standard_normal((n, n), dtype=np.float32)).astype(dt)
            mx.eval(a, b)
            ta = tb = None
            if torch:
                ta = torch.randn(n, n, device=dev, dtype=getattr(torch, tdt))
                tb = torch.randn(n, n, device=dev, dtype=getattr(torch, tdt))
            num = 5 if n == 8192 else 10
            compare(f"matmul {n}^3 {name}", lambda: a @ b,
                    (lambda: ta @ tb) if torch else None, flops=2.0 * n ** 3,
                    number=num)
            del a, b, ta, tb

    a = mx.array(r.standard_normal((64, 128, 128), dtype=np.float32))
    b = mx.array(r.standard_normal((64, 128, 128), dtype=np.float32))
    mx.eval(a, b)
    ta = torch.randn(64, 128, 128, device=dev) if torch else None
    tb = torch.randn(64, 128, 128, device=dev) if torch else None
    compare("batched (64,128,128) @ (64,128,128) f32", lambda: a @ b,
            (lambda: ta @ tb) if torch else None, flops=2.0 * 64 * 128 ** 3,
            number=200)

    v = mx.array(r.standard_normal((1, 4096), dtype=np.float32))
    m = mx.array(r.standard_normal((4096, 4096), dtype=np.float32))
    mx.eval(v, m)
    tv = torch.randn(1, 4096, device=dev) if torch else None
    tm = torch.randn(4096, 4096, device=dev) if torch else None
    compare("matvec (1,4096) @ (4096,4096) f32", lambda: v @ m,
            (lambda: tv @ tm) if torch else None, nbytes=4.0 * 4096 * 4096,
            number=200)

    table = mx.array(r.standard_normal((50000, 1024), dtype=np.float32))
    ids = mx.array(r.integers(0, 50000, 16384).astype(np.int32))
    g = mx.array(r.standard_normal((16384, 1024), dtype=np.float32))
    zeros = mx.array(np.zeros((50000, 1024), np.float32))
    mx.eval(table, ids, g, zeros)
    if torch:
        ttable = torch.randn(50000, 1024, device=dev)
        tids = torch.randint(0, 50000, (16384,), device=dev)
        tg = torch.randn(16384, 1024, device=dev)
    moved = 2.0 * 16384 * 1024 * 4
    compare("embedding gather 50k x 1024, 16k ids", lambda: table[ids],
            (lambda: torch.nn.functional.embedding(tids, ttable)) if torch else None,
            nbytes=moved, number=100)
    compare("embedding scatter-add (grad)", lambda: zeros.at[ids].add(g),
            (lambda: torch.zeros(50000, 1024, device=dev).index_add_(0, tids, tg))
            if torch else None, nbytes=moved, number=50)
    # the result agrees with numpy
    got = np.array(table[ids])
    assert np.array_equal(got, np.array(table)[np.array(ids)])
    mlp_steps(torch, r)


def mlp_steps(torch, r):
    from _mlp_step import mlp_step

    x_np = r.standard_normal((256, 784), dtype=np.float32)
    y_np = r.integers(0, 10, 256)
    x, y = mx.array(x_np), mx.array(y_np.astype(np.int32))
    eager, make_compiled = mlp_step(x, y, (784, 512, 512, 10))
    compiled = make_compiled()

    fns = {"cmx eager": eager, "cmx compiled": compiled}
    if torch:
        tm = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(),
                                 torch.nn.Linear(512, 512), torch.nn.ReLU(),
                                 torch.nn.Linear(512, 10)).cuda()
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        tx = torch.tensor(x_np, device="cuda")
        ty = torch.tensor(y_np, device="cuda")

        def teager():
            topt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            loss.backward()
            topt.step()

        fns["torch eager"] = teager

    def per_step(f):
        def run():
            for _ in range(20):
                f()
            mx.synchronize()
            if torch:
                torch.cuda.synchronize()
        return run

    runs = [per_step(f) for f in fns.values()]
    for f in runs:
        f()  # warm up (compile, kernels)
    best = best_alternating(runs, 7, 1)
    times = dict(zip(fns, (b / 20 for b in best)))
    line = "MLP 784-512-512-10 step (batch 256, SGD):"
    for k, t in times.items():
        line += f" {k} {t * 1e6:7.1f} us;"
    if "torch eager" in times:
        line += (f" eager vs torch eager {times['torch eager'] / times['cmx eager']:.2f}x,"
                 f" compiled vs torch eager "
                 f"{times['torch eager'] / times['cmx compiled']:.2f}x")
    print(line, flush=True)


if __name__ == "__main__":
    main()
