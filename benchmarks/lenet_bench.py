"""The demo's LeNet training step (issue 14's benchmark): cmx against
PyTorch in the same run, on the CPU or (--device gpu) the GPU.

The model (examples/demo.py; NHWC for cmx, NCHW for torch, the same
arithmetic):
  conv 5x5, 1 -> 32, relu, 2x2 max pool   (28 -> 24 -> 12)
  conv 5x5, 32 -> 64, relu, 2x2 max pool  (12 -> 8 -> 4)
  dense 1024 -> 128, relu, dense 128 -> 10, cross-entropy
on a batch of 128 28x28 grey images (random data: only the time matters).
Timed, each the best of alternating rounds (cmx and torch take turns, so a
shared machine's slow spells hit both alike):
  forward    the loss alone
  grad       the loss and the gradients of every parameter
  step       a whole training step: gradients and the Adam update
             (cmx: nn.value_and_grad + optim.Adam, evaluated; torch:
             backward + torch.optim.Adam.step)
  compiled   the step under mx.compile (once cmx has it)
PyTorch runs with as many threads as cmx, and with OMP_WAIT_POLICY=PASSIVE
unless that is set: its OpenMP threads otherwise spin after each op and
take the CPUs from whatever runs next (cmx's turn, other processes), which
on a busy 2-core machine made torch's own step 2.5x slower.

On the GPU (--device gpu): cmx's model on its GPU, torch's on CUDA, each
call followed by the framework's synchronize (mx.synchronize,
torch.cuda.synchronize) so a time covers the work, wall times only (the CPU
time of an asynchronous launch says little); "compiled" is cmx's compiled
step against torch.compile of torch's step (--no-torch-compile leaves it
out). The card's name is printed (torch's and cmx's view of it).

Debian's OpenBLAS 0.3.21 takes some newer Xeons for a Prescott and runs its
SSE3 kernels; like examples/demo.py this sets OPENBLAS_CORETYPE (SkylakeX
with AVX-512, Haswell with AVX2) when it is unset, before cmx loads
OpenBLAS, and prints the core OpenBLAS uses.

Run: PYTHONPATH=build/python python benchmarks/lenet_bench.py [--rounds N]
         [--device cpu|gpu]
"""

import argparse
import ctypes
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import blas_setup  # noqa: E402  (sets OPENBLAS_CORETYPE before cmx loads)

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads libgomp
import numpy as np  # noqa: E402

import cmx.core as mx  # noqa: E402
import cmx.nn as nn  # noqa: E402
import cmx.optimizers as optim  # noqa: E402
from cmx.utils import tree_flatten  # noqa: E402
from demo import LeNet, loss_fn, make_step  # noqa: E402

BATCH = 128


def cmx_setup(rng):
    mx.random.seed(0)
    model = LeNet()
    x = mx.array(rng.random((BATCH, 28, 28, 1), dtype=np.float32))
    y = mx.array(rng.integers(0, 10, BATCH).astype(np.int32))
    mx.eval(model.parameters(), x, y)
    return model, x, y


def cmx_fns(rng):
    model, x, y = cmx_setup(rng)
    vg = nn.value_and_grad(model, loss_fn)
    smodel, sx, sy = cmx_setup(rng)
    opt = optim.Adam(learning_rate=1e-3)
    step = make_step(smodel, opt)
    fns = {
        "forward": lambda: mx.eval(loss_fn(model, x, y)),
        "grad": lambda: mx.eval(vg(model, x, y)),
        "step": lambda: mx.eval(step(sx, sy), smodel.state, opt.state),
    }
    if hasattr(mx, "compile"):
        cmodel, cx, cy = cmx_setup(rng)
        copt = optim.Adam(learning_rate=1e-3)
        cstep = make_step(cmodel, copt, compiled=True)
        fns["compiled"] = lambda: mx.eval(cstep(cx, cy), cmodel.state, copt.state)
    if mx.default_device() == mx.gpu:  # a time covers the GPU's work
        fns = {k: _synced(f, mx.synchronize) for k, f in fns.items()}
    return fns, model, x, y


def _synced(f, sync):
    def run():
        f()
        sync()
    return run


def torch_fns(model, x, y, threads, device="cpu", compile_step=False):
    """PyTorch's LeNet with the weights of the cmx model, on device."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(threads)
    dev = torch.device("cuda" if device == "gpu" else "cpu")
    p = {k: torch.tensor(np.array(v), device=dev)
         for k, v in tree_flatten(model.parameters())}
    # NHWC conv weights (O, kh, kw, I) -> (O, I, kh, kw); the dense layers
    # read cmx's (h, w, c) flattening, so the activation is permuted too.
    for k in ("conv1.weight", "conv2.weight"):
        p[k] = p[k].permute(0, 3, 1, 2).contiguous()
    for v in p.values():
        v.requires_grad_(True)
    tx = torch.tensor(np.array(x), device=dev).permute(0, 3, 1, 2).contiguous()
    ty = torch.tensor(np.array(y), device=dev).long()

    def loss(q):
        h = F.max_pool2d(F.relu(F.conv2d(tx, q["conv1.weight"], q["conv1.bias"])), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, q["conv2.weight"], q["conv2.bias"])), 2)
        h = h.permute(0, 2, 3, 1).reshape(h.shape[0], -1)
        h = F.relu(F.linear(h, q["fc1.weight"], q["fc1.bias"]))
        return F.cross_entropy(F.linear(h, q["fc2.weight"], q["fc2.bias"]), ty)

    # The training step updates its own copy of the parameters.
    sp = {k: v.detach().clone().requires_grad_(True) for k, v in p.items()}
    opt = torch.optim.Adam(list(sp.values()), lr=1e-3)

    def forward():
        with torch.no_grad():
            loss(p)

    def grad():
        for v in p.values():
            v.grad = None
        loss(p).backward()

    def step():
        opt.zero_grad(set_to_none=True)
        loss(sp).backward()
        opt.step()

    with torch.no_grad():
        ref = float(loss(p))
    fns = {"forward": forward, "grad": grad, "step": step}
    if hasattr(torch, "compile") and (
            compile_step or os.environ.get("CMX_BENCH_TORCH_COMPILE")):
        # its own parameters and optimizer, like cmx's compiled step
        cp = {k: v.detach().clone().requires_grad_(True) for k, v in p.items()}
        copt = torch.optim.Adam(list(cp.values()), lr=1e-3)

        @torch.compile
        def cstep():
            copt.zero_grad(set_to_none=True)
            loss(cp).backward()
            copt.step()

        fns["compiled"] = cstep
    if device == "gpu":
        fns = {k: _synced(f, torch.cuda.synchronize) for k, f in fns.items()}
    return fns, ref


def _cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best_interleaved(groups, rounds):
    """Best wall time and best CPU time (all threads of the process) of
    every function; in each round every function of every group runs once,
    in turn. On a shared machine the CPU time is the steadier figure: it
    leaves out the time the threads waited for a CPU."""
    names = [(g, k) for g, fns in groups.items() for k in fns]
    wall = {n: float("inf") for n in names}
    cpu = {n: float("inf") for n in names}
    for g, k in names:  # warm up (first calls allocate and compile)
        for _ in range(2):
            groups[g][k]()
    for _ in range(rounds):
        for g, k in names:
            c, t = _cpu_seconds(), time.perf_counter()
            groups[g][k]()
            wall[(g, k)] = min(wall[(g, k)], time.perf_counter() - t)
            cpu[(g, k)] = min(cpu[(g, k)], _cpu_seconds() - c)
    return wall, cpu


def openblas_core():
    for name in ("libopenblas.so.0", "libopenblas.so"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--only", choices=["cmx", "torch"], default=None,
                    help="time one framework alone")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--no-torch-compile", action="store_true",
                    help="GPU: leave torch.compile out")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    threads = os.environ.get("CMX_NUM_THREADS")
    ncpu = len(os.sched_getaffinity(0))
    threads = int(threads) if threads else ncpu
    gpu = args.device == "gpu"
    if gpu:
        if not mx.is_available(mx.gpu):
            sys.exit("lenet_bench: --device gpu but cmx sees no GPU")
        mx.set_default_device(mx.gpu)
        info = mx.device_info(mx.gpu)
        card = info.get("device_name") or info.get("name") or info
        print(f"LeNet training step on the GPU, batch {BATCH}: cmx on {card}",
              flush=True)
    else:
        print(f"LeNet training step, batch {BATCH}, {threads} threads ({ncpu} CPUs), "
              f"OpenBLAS core {openblas_core()} ({blas_setup.NOTE}), "
              f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}")
    cfns, model, x, y = cmx_fns(rng)
    groups = {"cmx": cfns}
    loss_cmx = float(loss_fn(model, x, y).item())
    loss_torch = None
    if args.only != "cmx":
        try:
            groups["torch"], loss_torch = torch_fns(
                model, x, y, threads, args.device,
                compile_step=gpu and not args.no_torch_compile)
            if gpu:
                import torch
                print(f"  torch {torch.__version__} on "
                      f"{torch.cuda.get_device_name(0)}", flush=True)
        except ImportError:
            print("  torch not installed: cmx alone")
    if args.only == "torch":
        del groups["cmx"]
    wall, cpu = best_interleaved(groups, args.rounds)
    print("  (best wall time per call, synchronized)" if gpu else
          "  (best wall time / best CPU time of all threads, per call)")
    for what in ("forward", "grad", "step", "compiled"):
        c = ("cmx", what)
        t = ("torch", what)
        line = f"  {what:9s}"
        if c in wall:
            line += (f" cmx {wall[c] * 1e3:7.3f} ms" if gpu else
                     f" cmx {wall[c] * 1e3:7.2f} / {cpu[c] * 1e3:7.2f} ms")
        else:
            line += " cmx       n/a          "
        tname = "torch.compile" if what == "compiled" else "torch"
        if t in wall:
            line += (f"   {tname} {wall[t] * 1e3:7.3f} ms" if gpu else
                     f"   {tname} {wall[t] * 1e3:7.2f} / {cpu[t] * 1e3:7.2f} ms")
        if c in wall and t in wall:
            line += (f"   cmx {wall[t] / wall[c]:.2f}x {tname}'s speed" if gpu
                     else f"   cmx {wall[t] / wall[c]:.2f}x / "
                     f"{cpu[t] / cpu[c]:.2f}x {tname}'s speed")
        if what == "compiled" and c not in wall:
            line += "   (cmx has no mx.compile yet)"
        print(line)
    if loss_torch is not None:
        print(f"  same loss: cmx {loss_cmx:.6f}, torch {loss_torch:.6f}")


if __name__ == "__main__":
    main()
