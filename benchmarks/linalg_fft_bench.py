"""mx.fft and mx.linalg benchmarks (issue 17), one run, figures printed as
ratios against NumPy (pocketfft, LAPACK) and PyTorch when it is installed,
measured in the same run, functions taking turns (benchmarks/_timing.py).

CPU goals: fft and rfft of 2^20 points and of a (1024, 1024) batch along
the last axis at >= 0.8 of NumPy's speed. The linalg figures (batched
(256, 64, 64) inv, cholesky, svd, eigh; a 4096x4096 solve) are printed for
the CPU. complex64/float32 on every side (NumPy >= 2 computes float32
transforms in single precision).

--gpu: the GPU mode (cuFFT, cuSOLVER/cuBLAS) against cmx on the CPU and
torch on the same GPU (torch.cuda), each call synchronised: goals fft/rfft
>= 0.9 of torch's speed; batched (256, 64, 64) inv, cholesky, svd, eigh
faster than the CPU and >= 0.8 of torch; 4096x4096 solve >= 0.8 of torch.
svd and eigh run twice: cmx's batched Jacobi kernels, then cuSOLVER
(CMX_CUDA_JACOBI=0).

complex64 svd, eigh and eig (batched (256, 64, 64), (64, 64, 64) for eig,
and a single 256 x 256) follow in both modes: the CPU against NumPy and
torch, the GPU against the CPU and torch; --complex runs those alone.

    PYTHONPATH=build/python python benchmarks/linalg_fft_bench.py [--quick] [--gpu] [--complex]
"""

import os
import sys

import numpy as np

import cmx.core as mx
from _timing import best_alternating

try:
    import torch
except ImportError:  # the project venv has no torch
    torch = None

QUICK = "--quick" in sys.argv
RNG = np.random.default_rng(0)


def cplx(shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def row(name, fns, reps, number):
    names = [n for n, _ in fns]
    times = best_alternating([f for _, f in fns], reps, number)
    base = times[0]
    parts = [f"{n} {t * 1e3:8.2f} ms" for n, t in zip(names, times)]
    ratios = [f"cmx/{n} speed {t / base:5.2f}x" for n, t in zip(names[1:], times[1:])]
    print(f"{name:34s} " + "  ".join(parts) + "   " + "  ".join(ratios))
    return times


def fft_rows():
    print("== FFT (complex64 / float32), CPU, cmx threads: "
          f"{os.environ.get('CMX_NUM_THREADS', 'all')}")
    cases = [("fft 2^20", cplx((1 << 20,)), "fft"),
             ("rfft 2^20", RNG.standard_normal(1 << 20).astype(np.float32), "rfft"),
             ("fft (1024, 1024) last axis", cplx((1024, 1024)), "fft"),
             ("rfft (1024, 1024) last axis",
              RNG.standard_normal((1024, 1024)).astype(np.float32), "rfft"),
             ("ifft 2^20", cplx((1 << 20,)), "ifft"),
             ("fft 1009 x 1024 batch (prime)", cplx((1024, 1009)), "fft"),
             ("fft2 (1024, 1024)", cplx((1024, 1024)), "fft2")]
    out = {}
    for name, x, fn in cases:
        a = mx.array(x)
        mx.eval(a)
        cf, nf = getattr(mx.fft, fn), getattr(np.fft, fn)
        fns = [("cmx", lambda: mx.eval(cf(a))), ("numpy", lambda: nf(x))]
        if torch is not None:
            t = torch.from_numpy(x)
            tf = getattr(torch.fft, fn)
            fns.append(("torch", lambda: tf(t)))
        out[name] = row(name, fns, 3 if QUICK else 7, 3 if QUICK else 5)
    return out


def linalg_rows():
    print("== linalg (float32), CPU")
    b = RNG.standard_normal((256, 64, 64)).astype(np.float32)
    spd = b @ b.transpose(0, 2, 1) + 64 * np.eye(64, dtype=np.float32)
    big = RNG.standard_normal((4096, 4096)).astype(np.float32) + 64 * np.eye(4096, dtype=np.float32)
    rhs = RNG.standard_normal((4096, 1)).astype(np.float32)
    cases = [("inv (256, 64, 64)", b, lambda a: mx.linalg.inv(a), np.linalg.inv, "inv"),
             ("cholesky (256, 64, 64)", spd, lambda a: mx.linalg.cholesky(a), np.linalg.cholesky, "cholesky"),
             ("svd (256, 64, 64)", b, lambda a: mx.linalg.svd(a)[1], lambda a: np.linalg.svd(a)[1], "svd"),
             ("eigh (256, 64, 64)", spd, lambda a: mx.linalg.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], "eigh")]
    for name, x, cf, nf, tn in cases:
        a = mx.array(x)
        mx.eval(a)
        fns = [("cmx", lambda: mx.eval(cf(a))), ("numpy", lambda: nf(x))]
        if torch is not None:
            t = torch.from_numpy(x)
            tfn = {"inv": torch.linalg.inv, "cholesky": torch.linalg.cholesky,
                   "svd": torch.linalg.svd, "eigh": torch.linalg.eigh}[tn]
            fns.append(("torch", lambda: tfn(t)))
        row(name, fns, 2 if QUICK else 4, 1 if QUICK else 2)
    a, r = mx.array(big), mx.array(rhs)
    mx.eval(a, r)
    fns = [("cmx", lambda: mx.eval(mx.linalg.solve(a, r))), ("numpy", lambda: np.linalg.solve(big, rhs))]
    if torch is not None:
        ta, tr = torch.from_numpy(big), torch.from_numpy(rhs)
        fns.append(("torch", lambda: torch.linalg.solve(ta, tr)))
    row("solve 4096 x 4096", fns, 2 if QUICK else 3, 1)


def herm(shape):
    a = cplx(shape)
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


# complex64 cases: name, input, cmx fn, numpy fn, torch fn name
def complex_cases():
    b = cplx((256, 64, 64))
    h = herm((256, 64, 64))
    e = cplx((64, 64, 64))
    one, one_h = cplx((256, 256)), herm((256, 256))
    L = mx.linalg
    return [
        ("c64 svd (256, 64, 64)", b, lambda a: L.svd(a)[1], lambda a: np.linalg.svd(a)[1], "svd"),
        ("c64 svd vals (256, 64, 64)", b, lambda a: L.svd(a, compute_uv=False),
         lambda a: np.linalg.svd(a, compute_uv=False), "svdvals"),
        ("c64 eigh (256, 64, 64)", h, lambda a: L.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], "eigh"),
        ("c64 eigvalsh (256, 64, 64)", h, L.eigvalsh, np.linalg.eigvalsh, "eigvalsh"),
        ("c64 eig (64, 64, 64)", e, lambda a: L.eig(a)[0], lambda a: np.linalg.eig(a)[0], "eig"),
        ("c64 svd 256 x 256", one, lambda a: L.svd(a)[1], lambda a: np.linalg.svd(a)[1], "svd"),
        ("c64 eigh 256 x 256", one_h, lambda a: L.eigh(a)[0], lambda a: np.linalg.eigh(a)[0], "eigh"),
        ("c64 eig 256 x 256", one, lambda a: L.eig(a)[0], lambda a: np.linalg.eig(a)[0], "eig"),
    ]


def complex_rows():
    print("== linalg (complex64), CPU")
    for name, x, cf, nf, tn in complex_cases():
        a = mx.array(x)
        mx.eval(a)
        fns = [("cmx", lambda: mx.eval(cf(a))), ("numpy", lambda: nf(x))]
        if torch is not None:
            t = torch.from_numpy(x)
            tfn = getattr(torch.linalg, tn)
            fns.append(("torch", lambda: tfn(t)))
        row(name, fns, 2 if QUICK else 3, 1)


def complex_gpu_rows(run, have_torch):
    print("== linalg (complex64), GPU (cuSOLVER) vs the CPU and torch")
    for name, x, cf, _, tn in complex_cases():
        run(name, x, cf, getattr(torch.linalg, tn) if have_torch else None, 2 if QUICK else 3, 1)


def gpu_rows():
    """cmx on the GPU vs cmx on the CPU and torch on the GPU (same card)."""
    have_torch = torch is not None and torch.cuda.is_available()
    try:
        card = mx.device_info(mx.gpu)
    except Exception as e:  # the name is for the log only
        card = f"? ({e})"
    print(f"== GPU: {card}; torch.cuda "
          f"{'yes: ' + torch.cuda.get_device_name(0) if have_torch else 'no'}")
    sync = (lambda: torch.cuda.synchronize()) if have_torch else (lambda: None)

    def run(name, x, cf, tf, reps, number, cpu=True):
        a = mx.array(x)
        mx.eval(a)
        with mx.stream(mx.gpu):
            ag = mx.array(x) + 0
            mx.eval(ag)

        def on_gpu():
            with mx.stream(mx.gpu):
                mx.eval(cf(ag))

        def on_cpu():
            with mx.stream(mx.cpu):
                mx.eval(cf(a))

        fns = [("cmx-gpu", on_gpu)]
        if cpu:
            fns.append(("cmx-cpu", on_cpu))
        if have_torch:
            t = torch.from_numpy(x).cuda()

            def tor():
                tf(t)
                sync()
            fns.append(("torch", tor))
        return row(name, fns, reps, number)

    complex_gpu_rows(run, have_torch)
    if "--complex" in sys.argv:
        return
    r = 2 if QUICK else 5
    for name, x, fn in [("fft 2^20", cplx((1 << 20,)), "fft"),
                        ("rfft 2^20", RNG.standard_normal(1 << 20).astype(np.float32), "rfft"),
                        ("fft (1024, 1024) last axis", cplx((1024, 1024)), "fft"),
                        ("rfft (1024, 1024) last axis",
                         RNG.standard_normal((1024, 1024)).astype(np.float32), "rfft"),
                        ("fft2 (1024, 1024)", cplx((1024, 1024)), "fft2")]:
        run(name, x, getattr(mx.fft, fn), getattr(torch.fft, fn) if have_torch else None, r, 10, cpu=False)
    b = RNG.standard_normal((256, 64, 64)).astype(np.float32)
    spd = b @ b.transpose(0, 2, 1) + 64 * np.eye(64, dtype=np.float32)
    lt = (lambda f: f) if have_torch else (lambda f: None)
    run("inv (256, 64, 64)", b, mx.linalg.inv, lt(torch.linalg.inv if have_torch else None), r, 3)
    run("cholesky (256, 64, 64)", spd, mx.linalg.cholesky, lt(torch.linalg.cholesky if have_torch else None), r, 3)
    # svd and eigh of small matrices: cmx's batched Jacobi kernels, then
    # cuSOLVER (CMX_CUDA_JACOBI=0, read at each call)
    for path, env in [("jacobi", None), ("cuSOLVER", "0")]:
        if env is None:
            os.environ.pop("CMX_CUDA_JACOBI", None)
        else:
            os.environ["CMX_CUDA_JACOBI"] = env
        run(f"svd (256, 64, 64) {path}", b, lambda a: mx.linalg.svd(a)[1],
            lt((lambda t: torch.linalg.svd(t)) if have_torch else None), 2 if QUICK else 3, 1)
        run(f"svd vals (256, 64, 64) {path}", b, lambda a: mx.linalg.svd(a, compute_uv=False),
            lt((lambda t: torch.linalg.svdvals(t)) if have_torch else None), 2 if QUICK else 3, 1)
        run(f"eigh (256, 64, 64) {path}", spd, lambda a: mx.linalg.eigh(a)[0],
            lt((lambda t: torch.linalg.eigh(t)) if have_torch else None), 2 if QUICK else 3, 1)
    os.environ.pop("CMX_CUDA_JACOBI", None)
    big = RNG.standard_normal((4096, 4096)).astype(np.float32) + 64 * np.eye(4096, dtype=np.float32)
    rhs = RNG.standard_normal((4096, 1)).astype(np.float32)
    ag, rg = mx.array(big), mx.array(rhs)
    with mx.stream(mx.gpu):
        ag, rg = ag + 0, rg + 0
        mx.eval(ag, rg)

    def solve_gpu():
        with mx.stream(mx.gpu):
            mx.eval(mx.linalg.solve(ag, rg))
    fns = [("cmx-gpu", solve_gpu)]
    if have_torch:
        ta, tr = torch.from_numpy(big).cuda(), torch.from_numpy(rhs).cuda()

        def tsolve():
            torch.linalg.solve(ta, tr)
            sync()
        fns.append(("torch", tsolve))
    row("solve 4096 x 4096", fns, 2 if QUICK else 4, 1)


if __name__ == "__main__":
    print(f"numpy {np.__version__}; torch {'not installed' if torch is None else torch.__version__}; "
          f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")
    if "--gpu" in sys.argv:
        gpu_rows()
        sys.exit(0)
    # The CPU rows run on the CPU even where a GPU is the default device
    # (they were timed on the GPU on the lent machine).
    mx.set_default_device(mx.cpu)
    if "--complex" in sys.argv:
        complex_rows()
        sys.exit(0)
    fft_rows()
    if "--fft-only" not in sys.argv:
        linalg_rows()
        complex_rows()
