"""CPU benchmarks of mx.fast and quantized_matmul (issue 15), with NumPy
(and PyTorch where it is installed) in the same run.

1. rms_norm and layer_norm of (4096, 4096) float32 rows, rope of
   (1, 32, 1024, 128) float32, against NumPy expressions of the same math
   (and torch's fused ops).
2. scaled_dot_product_attention, float32: a prompt (B 1, H 8, L 512, D 64,
   causal) and a decode step (L 1 against a 4096-long cache, 32 query heads
   sharing 8 kv heads), against NumPy (and torch's sdpa).
3. 4-bit quantized_matmul (1, 4096) x (4096, 4096)^T, group 64, float32
   scales and biases: against NumPy's float32 matvec of the dequantized
   matrix (which reads 4x the bytes), and against the memory-bandwidth floor
   of its own bytes (packed weights, scales, biases), the bandwidth being
   measured here by NumPy reading a 256 MB array.

Each figure is the best of several repetitions, cmx and the others
alternating (the machine may be shared).
Run: PYTHONPATH=build/python python benchmarks/bench_fast.py [--quick]

--device gpu (on a machine with a GPU and PyTorch): bfloat16, cmx beside
torch on the same card, each round `number` calls queued then waited for:
rms_norm and layer_norm of (8192, 4096) against torch's fused kernels,
rope of (4, 32, 2048, 128) against torch's eager expression (torch has no
fused rope), 4-bit quantized_matmul (1, 4096) x (4096, 4096)^T group 64
as a fraction of the bandwidth floor of its bytes (16 different weight
matrices take turns, so L2 does not hold them; the bandwidth is torch's
device-to-device copy of 1 GiB, bytes read plus written), and its
prompt shapes (8, 16, 64, 512 rows) beside torch's bfloat16 matmul of
the dequantized matrix; attention (decode: L 1 against a 4096 cache, B 1, 2, 4,
with the bandwidth of its K and V bytes; prompt: B 4, H 32, L 4096, D 128,
causal, with its TFLOP/s) against torch's scaled_dot_product_attention.
--only quant|attention runs that section alone; --only qmv the
matrix-vector kernel for 4 and 8 bits, groups 32/64/128 and every dtype
against its floor; --only decode the decode attention rows alone.
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cmx.core as mx  # noqa: E402
from _timing import best_alternating  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # torch is optional
    torch = None

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def row(name, t_cmx, others):
    s = f"   {name:34s} cmx {t_cmx * 1e3:8.3f} ms"
    for label, t in others:
        s += f"   {label} {t * 1e3:8.3f} ms ({t / t_cmx:5.2f}x)"
    print(s)


def run(name, f_cmx, others, reps, number):
    fns = [f_cmx] + [f for _, f in others]
    ts = best_alternating(fns, reps, number)
    row(name, ts[0], [(label, t) for (label, _), t in zip(others, ts[1:])])
    return ts[0]


def ev(f):
    return lambda: mx.eval(f())


def norms_rope(reps):
    print("1. rms_norm, layer_norm, rope (float32; ratio = other / cmx)")
    x = rand(4096, 4096)
    w, b = rand(4096), rand(4096)
    xa, wa, ba = mx.array(x), mx.array(w), mx.array(b)
    tx = torch.from_numpy(x) if torch else None

    def np_rms():
        return x * (1 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5)) * w

    def np_ln():
        m = x.mean(-1, keepdims=True)
        d = x - m
        return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b

    others = [("numpy", np_rms)]
    if torch:
        tw = torch.from_numpy(w)
        others.append(("torch", lambda: F.rms_norm(tx, (4096,), tw, 1e-5)))
    run("rms_norm (4096, 4096)", ev(lambda: mx.fast.rms_norm(xa, wa, 1e-5)),
        others, reps, 3)
    others = [("numpy", np_ln)]
    if torch:
        tb = torch.from_numpy(b)
        others.append(("torch", lambda: F.layer_norm(tx, (4096,), tw, tb, 1e-5)))
    run("layer_norm (4096, 4096)",
        ev(lambda: mx.fast.layer_norm(xa, wa, ba, 1e-5)), others, reps, 3)

    r = rand(1, 32, 1024, 128)
    ra = mx.array(r)
    inv = 10000.0 ** (-np.arange(64) * 2.0 / 128)
    th = (np.arange(1024)[:, None] * inv).astype(np.float32)
    c, s = np.cos(th), np.sin(th)

    def np_rope():  # with the angle table precomputed (cmx computes its own)
        a, bb = r[..., :64], r[..., 64:]
        return np.concatenate([a * c - bb * s, a * s + bb * c], -1)

    run("rope (1, 32, 1024, 128)",
        ev(lambda: mx.fast.rope(ra, 128, traditional=False, base=10000.0,
                                scale=1.0, offset=0)),
        [("numpy", np_rope)], reps, 3)


def attention(reps):
    print("2. scaled_dot_product_attention (float32)")
    for (B, H, Hk, L, S, D, mask) in [(1, 8, 8, 512, 512, 64, "causal"),
                                      (1, 32, 8, 1, 4096, 128, None)]:
        q, k, v = rand(B, H, L, D), rand(B, Hk, S, D), rand(B, Hk, S, D)
        qa, ka, va = mx.array(q), mx.array(k), mx.array(v)
        scale = 1 / math.sqrt(D)

        def np_sdpa():
            kk = np.repeat(k, H // Hk, 1)
            vv = np.repeat(v, H // Hk, 1)
            sc = (q * scale) @ np.swapaxes(kk, -1, -2)
            if mask:
                sc = np.where(np.tri(L, S, S - L, dtype=bool), sc, -np.inf)
            sc = np.exp(sc - sc.max(-1, keepdims=True))
            return (sc / sc.sum(-1, keepdims=True)) @ vv

        others = [("numpy", np_sdpa)]
        if torch:
            tq, tk, tv = (torch.from_numpy(t) for t in (q, k, v))
            tk = tk.repeat_interleave(H // Hk, 1)
            tv = tv.repeat_interleave(H // Hk, 1)
            others.append(("torch", lambda: F.scaled_dot_product_attention(
                tq, tk, tv, is_causal=bool(mask), scale=scale)))
        name = f"B{B} H{H}/{Hk} L{L} S{S} D{D}{' causal' if mask else ''}"
        run(name, ev(lambda: mx.fast.scaled_dot_product_attention(
            qa, ka, va, scale=scale, mask=mask)), others, reps,
            3 if L > 1 else 20)


def bandwidth(reps):
    big = np.ones(64 * 1024 * 1024, np.float32)  # 256 MB
    t = best_alternating([lambda: big.sum()], reps, 1)[0]
    return big.nbytes / t


def qmm(reps):
    print("3. 4-bit quantized_matmul (1, 4096) x (4096, 4096)^T, group 64")
    w = rand(4096, 4096)
    x = rand(1, 4096)
    wq, s, b = mx.quantize(mx.array(w), group_size=64, bits=4)
    xa = mx.array(x)
    mx.eval(wq, s, b, xa)
    wd = np.array(mx.dequantize(wq, s, b))
    nbytes = wq.nbytes + s.nbytes + b.nbytes + x.nbytes + 4096 * 4
    others = [("numpy f32", lambda: x @ wd.T)]
    if torch:
        twd = torch.from_numpy(wd)
        tx = torch.from_numpy(x)
        others.append(("torch f32", lambda: tx @ twd.T))
    t = run("quantized_matmul", ev(lambda: mx.quantized_matmul(xa, wq, s, b)),
            others, reps, 20)
    bw = bandwidth(reps)
    floor = nbytes / bw
    print(f"   bytes {nbytes / 1e6:.1f} MB; read bandwidth (numpy sum of 256 MB) "
          f"{bw / 1e9:.1f} GB/s; floor {floor * 1e3:.3f} ms; cmx reaches "
          f"{floor / t:.2f} of the floor")
    xm = rand(64, 4096)
    xma = mx.array(xm)
    run("quantized_matmul, 64 rows", ev(lambda: mx.quantized_matmul(xma, wq, s, b)),
        [("numpy f32", lambda: xm @ wd.T)], reps, 3)


def gpu_main(reps, only=None):
    import torch
    import torch.nn.functional as F

    mx.set_default_device(mx.gpu)
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    bf = mx.bfloat16

    def cmx_run(f):
        def run(number):
            outs = [f(i) for i in range(number)]
            mx.eval(outs)
            mx.synchronize()
        return run

    def torch_run(f):
        def run(number):
            for i in range(number):
                f(i)
            torch.cuda.synchronize()
        return run

    def timed(fns, number):
        for fn in fns:
            fn(2)
        best = best_alternating([lambda f=f: f(number) for f in fns], reps, 1)
        return [b / number for b in best]

    def report(name, fc, ft, number, nbytes=None):
        ts = timed([cmx_run(fc)] + ([torch_run(ft)] if ft else []), number)
        line = f"   {name:40s} cmx {ts[0] * 1e6:9.1f} us"
        if nbytes:
            line += f" ({nbytes / ts[0] / 1e9:6.0f} GB/s)"
        if ft:
            line += f"   torch {ts[1] * 1e6:9.1f} us   cmx speed / torch {ts[1] / ts[0]:5.2f}"
        print(line)
        return ts[0]

    def both(shape):
        x = RNG.standard_normal(shape).astype(np.float32)
        return mx.array(x).astype(bf), torch.from_numpy(x).to(dev, torch.bfloat16)

    if only is None:
        norms_rope_gpu(reps, report, both, dev, F, torch)
    if only in (None, "quant"):
        quant_gpu(reps, report, dev, torch)
    if only == "qmv":
        qmv_gpu(reps, report, dev, torch)
    if only in (None, "attention", "decode"):
        attention_gpu(reps, report, both, F, decode_only=only == "decode")


def norms_rope_gpu(reps, report, both, dev, F, torch):
    print("1. norms and rope, bfloat16")
    xa, tx = both((8192, 4096))
    wa, tw = both((4096,))
    ba, tb = both((4096,))
    mx.eval(xa, wa, ba)
    nb = 2 * xa.nbytes
    report("rms_norm (8192, 4096)", lambda i: mx.fast.rms_norm(xa, wa, 1e-5),
           lambda i: F.rms_norm(tx, (4096,), tw, 1e-5), 20, nb)
    report("layer_norm (8192, 4096)",
           lambda i: mx.fast.layer_norm(xa, wa, ba, 1e-5),
           lambda i: F.layer_norm(tx, (4096,), tw, tb, 1e-5), 20, nb)
    ra, tr = both((4, 32, 2048, 128))
    mx.eval(ra)
    inv = 10000.0 ** (-torch.arange(64, device=dev, dtype=torch.float32) * 2.0 / 128)
    th = torch.arange(2048, device=dev, dtype=torch.float32)[:, None] * inv
    cos, sin = th.cos(), th.sin()

    def t_rope(i):  # eager, the angle table precomputed
        a, b = tr[..., :64].float(), tr[..., 64:].float()
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1).to(torch.bfloat16)

    report("rope (4, 32, 2048, 128)",
           lambda i: mx.fast.rope(ra, 128, traditional=False, base=10000.0,
                                  scale=1.0, offset=0),
           t_rope, 20, 2 * ra.nbytes)



def quant_gpu(reps, report, dev, torch):
    bf = mx.bfloat16
    print("2. 4-bit quantized_matmul, bfloat16, group 64")
    bw = copy_bandwidth(dev, torch)
    NW = 16
    ws = []
    for i in range(NW):
        w = mx.array(RNG.standard_normal((4096, 4096)).astype(np.float32) * 0.02).astype(bf)
        ws.append(mx.quantize(w, group_size=64, bits=4))
    mx.eval(ws)
    xq = mx.array(RNG.standard_normal((1, 4096)).astype(np.float32)).astype(bf)
    mx.eval(xq)
    wq, s, b = ws[0]
    nbytes = wq.nbytes + s.nbytes + b.nbytes + xq.nbytes + 4096 * 2
    wd = torch.from_numpy(np.array(mx.dequantize(wq, s, b).astype(mx.float32))).to(
        dev, torch.bfloat16)
    txq = torch.from_numpy(np.array(xq.astype(mx.float32))).to(dev, torch.bfloat16)
    t = report("qmm (1, 4096) x (4096, 4096)^T",
               lambda i: mx.quantized_matmul(xq, *ws[i % NW]),
               lambda i: txq @ wd.T, 64, nbytes)
    floor = nbytes / bw
    print(f"   bytes {nbytes / 1e6:.2f} MB; copy bandwidth {bw / 1e9:.0f} GB/s; "
          f"floor {floor * 1e6:.2f} us; cmx reaches {floor / t:.2f} of the floor "
          f"(torch: bfloat16 matvec of the dequantized matrix, 4x the bytes)")
    # the kernel's own time (CUPTI), without the calls' host work, for the
    # default kernel and the warp kernels (CMX_CUDA_QMV=w, w2, w1)
    for kernel in ("", "w", "w2", "w1"):
        os.environ["CMX_CUDA_QMV"] = kernel
        k, _ = kernel_us(lambda n: mx.eval([mx.quantized_matmul(xq, *ws[i % NW])
                                            for i in range(n)]), torch)
        if k:
            print(f"   qmm (1, 4096) kernel {kernel or 'default':7s} {k:7.2f} us: "
                  f"{floor / (k * 1e-6):.2f} of the floor")
    os.environ.pop("CMX_CUDA_QMV")
    # CMX_QMM_PATH: the kernel the shape picks ("") and the others
    for rows, number in [(8, 64), (16, 64), (64, 32), (128, 16), (512, 16)]:
        xm = mx.array(RNG.standard_normal((rows, 4096)).astype(np.float32)).astype(bf)
        mx.eval(xm)
        txm = torch.from_numpy(np.array(xm.astype(mx.float32))).to(dev, torch.bfloat16)
        for path in ["", "mma", "gemm"]:
            os.environ["CMX_QMM_PATH"] = path
            report(f"qmm ({rows}, 4096) x (4096, 4096)^T {path or 'auto'}",
                   lambda i: mx.quantized_matmul(xm, *ws[i % NW]),
                   lambda i: txm @ wd.T, number)
        os.environ.pop("CMX_QMM_PATH")
    del ws


def copy_bandwidth(dev, torch):
    """torch's device-to-device copy of 1 GiB, bytes read plus written, in
    bytes/s."""
    import time
    src = torch.empty(1 << 28, dtype=torch.float32, device=dev)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    torch.cuda.synchronize()
    return 2 * src.numel() * 4 * 10 / (time.perf_counter() - t0)


def kernel_us(run, torch, prefix="cmx_q"):
    """The mean device time (us) of the kernels named prefix... that
    run(8) launches, from torch.profiler (CUPTI: every kernel of the
    process), and their count; (None, 0) when none was recorded."""
    from torch.profiler import ProfilerActivity, profile

    run(2)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run(8)
    total, count = 0.0, 0
    for e in prof.key_averages():
        if e.key.startswith(prefix):
            t = getattr(e, "device_time_total", None)
            total += t if t is not None else getattr(e, "cuda_time_total", 0)
            count += e.count
    return (total / count if count else None), count


def qmv_gpu(reps, report, dev, torch):
    """The matrix-vector kernels (the default and CMX_CUDA_QMV=fast),
    (1, 4096) x (4096, 4096)^T, for 4 and 8 bits, groups 32 / 64 / 128, bfloat16 (and float16, float32 at group
    64), as a fraction of the bandwidth floor of its bytes (16 weight
    matrices in turn, so L2 does not hold them)."""
    print("2b. quantized_matmul (1, 4096) x (4096, 4096)^T, matrix-vector kernel")
    bw = copy_bandwidth(dev, torch)
    print(f"   copy bandwidth {bw / 1e9:.0f} GB/s")
    NW = 16
    base = [mx.random.normal((4096, 4096)) * 0.02 for _ in range(NW)]
    mx.eval(base)
    cases = [(b, g, mx.bfloat16) for b in (4, 8) for g in (32, 64, 128)]
    cases += [(4, 64, mx.float16), (4, 64, mx.float32), (8, 64, mx.float16)]
    for bits, g, dt in cases:
        ws = [mx.quantize(w.astype(dt), group_size=g, bits=bits) for w in base]
        mx.eval(ws)
        x = mx.random.normal((1, 4096)).astype(dt)
        mx.eval(x)
        wq, s, b = ws[0]
        nbytes = wq.nbytes + s.nbytes + b.nbytes + x.nbytes + 4096 * x.itemsize
        for kernel in ("", "fast", "w", "w2", "w1"):  # CMX_CUDA_QMV
            os.environ["CMX_CUDA_QMV"] = kernel
            f = (lambda i: mx.quantized_matmul(x, *ws[i % NW], group_size=g,
                                               bits=bits))
            t = report(f"qmv {bits}-bit g{g} {dt} {kernel or 'default'}", f, None,
                       64, nbytes)
            k, _ = kernel_us(lambda n: mx.eval([f(i) for i in range(n)]), torch)
            kt = f"; the kernel alone {k:.2f} us: {nbytes / bw / (k * 1e-6):.2f} " \
                 "of the floor" if k else ""
            print(f"      floor {nbytes / bw * 1e6:.2f} us: {nbytes / bw / t:.2f} "
                  f"of the floor (queued calls){kt}")
        os.environ.pop("CMX_CUDA_QMV")
        del ws


def attention_gpu(reps, report, both, F, decode_only=False):
    print("3. attention, bfloat16 (cmx: the fused kernel; decode: the "
          "split-key CUDA-core kernel, prompt: the tensor-core kernel)")
    for (B, H, L, S, D, causal, number) in [(1, 32, 1, 4096, 128, False, 32),
                                            (2, 32, 1, 4096, 128, False, 32),
                                            (4, 32, 1, 4096, 128, False, 32),
                                            (4, 32, 4096, 4096, 128, True, 4)]:
        if decode_only and L > 1:
            continue
        qa, tq = both((B, H, L, D))
        ka, tk = both((B, H, S, D))
        va, tv = both((B, H, S, D))
        mx.eval(qa, ka, va)
        sc = 1 / math.sqrt(D)
        t = report(f"sdpa B{B} H{H} L{L} S{S} D{D}{' causal' if causal else ''}",
                   lambda i: mx.fast.scaled_dot_product_attention(
                       qa, ka, va, scale=sc, mask="causal" if causal else None),
                   lambda i: F.scaled_dot_product_attention(
                       tq, tk, tv, is_causal=causal, scale=sc), number,
                   None if L > 1 else ka.nbytes + va.nbytes)
        if L > 1:
            flops = 4 * B * H * L * S * D * (0.5 if causal else 1.0)
            print(f"      {flops / t / 1e12:.0f} TFLOP/s (causal: half the "
                  f"score matrix)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--only", choices=["quant", "qmv", "attention", "decode"],
                    default=None, help="--device gpu: run only this section "
                    "(qmv: the matrix-vector kernel's table of bits, groups "
                    "and dtypes; decode: decode attention alone)")
    a = ap.parse_args()
    reps = 2 if a.quick else 5
    if a.device == "gpu":
        if not mx.is_available(mx.gpu):
            print("bench_fast --device gpu: no GPU here")
            return
        gpu_main(reps, a.only)
        return
    print(f"threads: {os.cpu_count()} cpus; torch: "
          f"{torch.__version__ if torch else 'not installed'}; cmx on {mx.default_device()}")
    norms_rope(reps)
    attention(reps)
    qmm(reps)


if __name__ == "__main__":
    main()
