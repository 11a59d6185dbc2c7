"""Convolutions on the GPU, cmx beside PyTorch in the same process (run it
on the lent GPU machine), on both of cmx's paths (cuDNN, and its own unfold
+ cuBLASLt with CMX_CUDA_CONV=fallback):

  resnet   conv2d of a ResNet stage: (64, 56, 56, 64) * (64, 3, 3, 64),
           padding 1
  lenet1   LeNet's first layer: (128, 28, 28, 1) * (32, 5, 5, 1)
  lenet2   LeNet's second layer: (128, 12, 12, 32) * (64, 5, 5, 32)

each as forward, input gradient (dx) and weight gradient (dw), in float32
(no TF32 on either side: torch.backends.cudnn.allow_tf32 = False) and
bfloat16. cmx's gradients are mx.vjp of the convolution (only the
cotangent asked for is evaluated); torch's are torch.nn.grad.conv2d_input
/ conv2d_weight (cuDNN's backward data / filter), NCHW as torch's default.
Each figure is the best mean over alternating rounds, each round `number`
calls queued and then waited for. Prints milliseconds and cmx's speed as a
fraction of torch's (torch time / cmx time).

Run: PYTHONPATH=build/python python3 benchmarks/conv_gpu_bench.py [--quick]
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _timing import best_alternating  # noqa: E402

import cmx.core as mx  # noqa: E402

LAYERS = {
    "resnet": ((64, 56, 56, 64), (64, 3, 3, 64), 1),
    "lenet1": ((128, 28, 28, 1), (32, 5, 5, 1), 0),
    "lenet2": ((128, 12, 12, 32), (64, 5, 5, 32), 0),
}


def cmx_ops(xs, ws, pad, dtype):
    r = np.random.default_rng(0)
    x = mx.array(r.standard_normal(xs).astype(np.float32)).astype(dtype)
    w = mx.array(r.standard_normal(ws).astype(np.float32)).astype(dtype)
    y = mx.conv2d(x, w, padding=pad)
    dy = mx.array(r.standard_normal(y.shape).astype(np.float32)).astype(dtype)
    mx.eval(x, w, dy)

    def fwd():
        return mx.conv2d(x, w, padding=pad)

    def dx():
        return mx.vjp(lambda a: mx.conv2d(a, w, padding=pad), [x], [dy])[1][0]

    def dw():
        return mx.vjp(lambda b: mx.conv2d(x, b, padding=pad), [w], [dy])[1][0]

    return {"forward": fwd, "dx": dx, "dw": dw}


def torch_ops(torch, xs, ws, pad, dtype):
    dt = torch.float32 if dtype == mx.float32 else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(0)
    n, h, w_, c = xs
    x = torch.randn((n, c, h, w_), device="cuda", generator=g).to(dt)
    o, kh, kw, ci = ws
    w = torch.randn((o, ci, kh, kw), device="cuda", generator=g).to(dt)
    y = torch.nn.functional.conv2d(x, w, padding=pad)
    dy = torch.randn(y.shape, device="cuda", generator=g).to(dt)
    F = torch.nn.functional
    return {
        "forward": lambda: F.conv2d(x, w, padding=pad),
        "dx": lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=pad),
        "dw": lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=pad),
    }


def cmx_run(f):
    def run(number):
        outs = [f() for _ in range(number)]
        mx.eval(outs)
        mx.synchronize()
    return run


def torch_run(torch, f):
    def run(number):
        for _ in range(number):
            f()
        torch.cuda.synchronize()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--paths", default="cudnn,fallback")
    args = ap.parse_args()
    if not mx.is_available(mx.gpu):
        print("conv_gpu_bench: no GPU here")
        return
    mx.set_default_device(mx.gpu)
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__,
          "cudnn", torch.backends.cudnn.version())
    reps, number = (3, 3) if args.quick else (5, 10)
    print(f"{'layer':8} {'dtype':9} {'op':8} {'path':9} {'cmx ms':>9} "
          f"{'torch ms':>9} {'ratio':>6}")
    for path in args.paths.split(","):
        if path == "fallback":
            os.environ["CMX_CUDA_CONV"] = "fallback"
        else:
            os.environ.pop("CMX_CUDA_CONV", None)
        for name, (xs, ws, pad) in LAYERS.items():
            for dtype in (mx.float32, mx.bfloat16):
                c = cmx_ops(xs, ws, pad, dtype)
                t = torch_ops(torch, xs, ws, pad, dtype)
                for op in ("forward", "dx", "dw"):
                    fc, ft = cmx_run(c[op]), torch_run(torch, t[op])
                    fc(1)
                    ft(1)  # warm-up: plans, kernels, allocator
                    bc, bt = best_alternating([lambda: fc(number),
                                               lambda: ft(number)], reps, 1)
                    bc, bt = bc / number, bt / number
                    print(f"{name:8} {str(dtype).split('.')[-1]:9} {op:8} "
                          f"{path:9} {bc * 1e3:9.3f} {bt * 1e3:9.3f} "
                          f"{bt / bc:6.2f}", flush=True)
    os.environ.pop("CMX_CUDA_CONV", None)


if __name__ == "__main__":
    main()
