"""mx.distributed's benchmarks (issue 18): bandwidth of all_sum against
the references measured in the same run, and data-parallel scaling.

    python benchmarks/distributed_bench.py [--part auto|cpu|gpu|all] [--quick]

GPU (2 GPUs and NCCL; --part gpu/all, or auto when present): all_sum of
float32 buffers 1 MiB .. 1 GiB between 2 processes (cmx.launch --backend
nccl), with nccl-tests' bus bandwidth busbw = 2 (n - 1) / n * bytes / time,
against torch.distributed's all_reduce (NCCL, the same libnccl) in the same
run, each op timed with its wait (cmx: eval; torch: synchronize), best of
the iterations; then the data-parallel demo step
(examples/distributed/data_parallel.py) on 2 GPUs against 1, at the same
batch per GPU (throughput = global samples per second).
CPU (always): ring all_sum of 64 MiB between 2 local processes against
loopback TCP bandwidth (one way, and both ways at once: a 2-rank all_sum
moves its buffer each way) measured in the same run, through shared memory
(the ring's default for ranks of one host) and over the sockets
(CMX_RING_SHM=0); then (unless --ring-only) the data-parallel step on 2
processes against 1 on the CPU.
Every figure is printed and, with --json FILE, written as one JSON object.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DP = os.path.join(ROOT, "examples", "distributed", "data_parallel.py")
MIB = 1024 * 1024


def loopback(nbytes, iters):
    """Best one-way bandwidth (bytes/s) of nbytes through a TCP socket
    between two processes."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    pid = os.fork()
    if pid == 0:  # the sender
        srv.close()
        c = socket.create_connection(("127.0.0.1", port))
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(nbytes)
        for _ in range(iters + 1):
            c.recv(1)  # go
            c.sendall(buf)
        c.close()
        os._exit(0)
    conn, _ = srv.accept()
    buf = bytearray(nbytes)
    view = memoryview(buf)
    best = 0.0
    for i in range(iters + 1):
        t = time.perf_counter()
        conn.sendall(b"g")
        got = 0
        while got < nbytes:
            got += conn.recv_into(view[got:], nbytes - got)
        dt = time.perf_counter() - t
        if i:  # the first is a warm-up
            best = max(best, nbytes / dt)
    conn.close()
    srv.close()
    os.waitpid(pid, 0)
    return best


def duplex(nbytes, iters):
    """Best per-direction bandwidth (bytes/s) when two processes each send
    nbytes to the other at the same time over one TCP connection (what a
    2-rank ring step does)."""
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]

    def exchange(c, buf, out):
        t = threading.Thread(target=c.sendall, args=(buf,))
        t.start()
        view, got = memoryview(out), 0
        while got < nbytes:
            got += c.recv_into(view[got:], nbytes - got)
        t.join()

    pid = os.fork()
    if pid == 0:
        srv.close()
        c = socket.create_connection(("127.0.0.1", port))
        buf, out = bytearray(nbytes), bytearray(nbytes)
        for _ in range(iters + 1):
            c.recv(1)
            exchange(c, buf, out)
        c.close()
        os._exit(0)
    conn, _ = srv.accept()
    buf, out = bytearray(nbytes), bytearray(nbytes)
    best = 0.0
    for i in range(iters + 1):
        t = time.perf_counter()
        conn.sendall(b"g")
        exchange(conn, buf, out)
        dt = time.perf_counter() - t
        if i:
            best = max(best, nbytes / dt)
    conn.close()
    srv.close()
    os.waitpid(pid, 0)
    return best


def _launch(backend, n, script_args, env_extra=None, timeout=600):
    """stdout of `cmx.launch -n n` (backend) running script_args; raises on
    failure with the output."""
    cmd = [sys.executable, "-m", "cmx.launch", "--backend", backend, "-n",
           str(n)] + script_args
    env = dict(os.environ, **(env_extra or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return p.stdout


def _json_line(out, key):
    for line in out.splitlines():
        if line.startswith("{") and key in line:
            return json.loads(line)[key]
    raise RuntimeError(f"no {key} in:\n{out}")


# ------------------------------------------------------------ workers


def cmx_worker(a):
    """One rank: all_sum timings of every size (rank 0 prints JSON)."""
    import cmx.core as mx

    g = mx.distributed.init(strict=True, backend=a.worker_backend)
    if a.device == "cpu":
        mx.set_default_device(mx.cpu)
    res = {}
    for mib in a.sizes:
        x = mx.ones((mib * MIB // 4,))
        mx.eval(x)
        for _ in range(a.warmup):
            mx.eval(mx.distributed.all_sum(x))
        best = 1e9
        for _ in range(a.iters):
            mx.eval(mx.distributed.all_sum(mx.zeros(1)))  # line up the ranks
            t = time.perf_counter()
            y = mx.distributed.all_sum(x)
            mx.eval(y)
            best = min(best, time.perf_counter() - t)
        assert float(y[0]) == g.size() and float(y[-1]) == g.size()
        res[mib] = best
        del x, y
    if g.rank() == 0:
        print(json.dumps({"allsum": {"backend": repr(g), "device":
                                     str(mx.default_device()),
                                     "seconds": res}}), flush=True)


def torch_worker(a):
    """One rank of torch.distributed (NCCL): all_reduce timings."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(0)  # CUDA_VISIBLE_DEVICES is this rank's GPU
    dist.init_process_group("nccl")
    r = dist.get_rank()
    res = {}
    for mib in a.sizes:
        x = torch.ones(mib * MIB // 4, device="cuda")
        z = torch.zeros(1, device="cuda")
        for _ in range(a.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        best = 1e9
        for _ in range(a.iters):
            dist.all_reduce(z)
            torch.cuda.synchronize()
            t = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t)
        res[mib] = best
        del x
    if r == 0:
        print(json.dumps({"allsum": {"backend": "torch.distributed nccl "
                                     + torch.__version__, "seconds": res}}),
              flush=True)
    dist.destroy_process_group()


def torch_allsum(sizes, iters, warmup):
    """Rank 0's timings of torch_worker on 2 processes, one GPU each."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   CUDA_VISIBLE_DEVICES=str(r))
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", "torch",
             "--iters", str(iters), "--warmup", str(warmup), "--sizes"]
            + [str(m) for m in sizes], env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=600) for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("torch workers failed:\n" +
                           "\n".join(o + e for o, e in outs))
    return _json_line(outs[0][0], "allsum")


def cmx_allsum(backend, sizes, iters, warmup, device, env_extra=None):
    out = _launch(backend, 2, [os.path.abspath(__file__), "--worker", "cmx",
                               "--worker-backend", backend, "--device", device,
                               "--iters", str(iters), "--warmup", str(warmup),
                               "--sizes"] + [str(m) for m in sizes],
                  env_extra)
    return _json_line(out, "allsum")


def dp_scaling(backend, device, batch, steps, env_extra=None):
    """(1 process, 2 processes) throughputs of the data-parallel step at
    `batch` per process."""
    common = ["--steps", str(steps), "--warmup", "3", "--device", device]
    one = subprocess.run([sys.executable, DP, "--batch-size", str(batch)]
                         + common, capture_output=True, text=True,
                         env=dict(os.environ, **(env_extra or {})),
                         timeout=600)
    if one.returncode:
        raise RuntimeError(one.stdout + one.stderr)
    two = _launch(backend, 2, [DP, "--batch-size", str(2 * batch)] + common,
                  env_extra)
    return (_json_line(one.stdout, "data_parallel"),
            _json_line(two, "data_parallel"))


# ------------------------------------------------------------ parts


def busbw(nbytes, seconds, n=2):
    return 2 * (n - 1) / n * nbytes / seconds


def gpu_part(a, out):
    sizes = [1 << k for k in range(0, 11)]  # 1 MiB .. 1 GiB
    if a.quick:
        sizes = [1, 16, 256]
    c = cmx_allsum("nccl", sizes, a.iters, a.warmup, "gpu")
    t = torch_allsum(sizes, a.iters, a.warmup)
    print(f"all_sum float32 on 2 GPUs ({c['backend']}) against "
          f"{t['backend']}: busbw = 2(n-1)/n * bytes / time, best of "
          f"{a.iters}")
    print(f"{'size':>8} {'cmx GB/s':>10} {'torch GB/s':>11} {'ratio':>6}")
    rows = []
    for m in sizes:
        cs, ts = c["seconds"][str(m)], t["seconds"][str(m)]
        cb, tb = busbw(m * MIB, cs), busbw(m * MIB, ts)
        rows.append({"mib": m, "cmx_busbw_gbs": cb / 1e9,
                     "torch_busbw_gbs": tb / 1e9, "ratio": cb / tb})
        print(f"{m:>6}Mi {cb / 1e9:>10.1f} {tb / 1e9:>11.1f} {cb / tb:>6.2f}")
    out["gpu_allsum"] = rows
    one, two = dp_scaling("nccl", "gpu", a.dp_batch, a.dp_steps)
    ratio = two["samples_per_s"] / one["samples_per_s"]
    print(f"data-parallel LeNet step, batch {a.dp_batch} per GPU: 1 GPU "
          f"{one['samples_per_s']:.0f} samples/s, 2 GPUs "
          f"{two['samples_per_s']:.0f} samples/s = {ratio:.2f}x")
    out["gpu_data_parallel"] = {"one": one["samples_per_s"],
                                "two": two["samples_per_s"], "ratio": ratio,
                                "batch_per_gpu": a.dp_batch}


def cpu_part(a, out):
    nbytes = a.mib * MIB
    tcp = loopback(nbytes, a.iters)
    both = duplex(nbytes, a.iters)
    env = {"CMX_NUM_THREADS": "1"}
    c = cmx_allsum("ring", [a.mib], a.iters, 1, "cpu", env)
    ring = nbytes / c["seconds"][str(a.mib)]
    c = cmx_allsum("ring", [a.mib], a.iters, 1, "cpu",
                   dict(env, CMX_RING_SHM="0"))
    sock = nbytes / c["seconds"][str(a.mib)]
    print(f"loopback TCP, {a.mib} MiB: one way {tcp / 1e9:.2f} GB/s, both "
          f"ways at once {both / 1e9:.2f} GB/s per direction")
    print(f"ring all_sum, 2 processes, {a.mib} MiB float32: "
          f"{ring / 1e9:.2f} GB/s (bytes / time) = {ring / tcp:.2f} x one-way "
          f"loopback (shared memory, the default on one host); over the "
          f"sockets (CMX_RING_SHM=0) {sock / 1e9:.2f} GB/s = "
          f"{sock / tcp:.2f} x one-way, {sock / both:.2f} x two-way")
    out["cpu_ring"] = {"mib": a.mib, "allsum_gbs": ring / 1e9,
                       "allsum_sockets_gbs": sock / 1e9,
                       "loopback_one_way_gbs": tcp / 1e9,
                       "loopback_two_way_gbs": both / 1e9,
                       "ratio_one_way": ring / tcp,
                       "sockets_ratio_one_way": sock / tcp,
                       "sockets_ratio_two_way": sock / both}
    if a.ring_only:
        return
    import cmx.core as mx

    if shutil.which("mpirun") and mx.distributed.is_available("mpi"):
        m = cmx_allsum("mpi", [a.mib], a.iters, 1, "cpu", env)
        mb = nbytes / m["seconds"][str(a.mib)]
        print(f"mpi all_sum, 2 processes, {a.mib} MiB float32: "
              f"{mb / 1e9:.2f} GB/s = {mb / tcp:.2f} x one-way loopback")
        out["cpu_mpi"] = {"allsum_gbs": mb / 1e9}
    one, two = dp_scaling("ring", "cpu", a.dp_batch, a.dp_steps, env)
    ratio = two["samples_per_s"] / one["samples_per_s"]
    print(f"data-parallel LeNet step on the CPU, batch {a.dp_batch} per "
          f"process: 1 process {one['samples_per_s']:.0f} samples/s, 2 "
          f"processes {two['samples_per_s']:.0f} samples/s = {ratio:.2f}x "
          f"({os.cpu_count()} cores)")
    out["cpu_data_parallel"] = {"one": one["samples_per_s"],
                                "two": two["samples_per_s"], "ratio": ratio,
                                "batch_per_process": a.dp_batch}


def have_two_gpus():
    import cmx.core as mx

    return (mx.is_available(mx.gpu) and mx.device_count(mx.gpu) >= 2
            and mx.distributed.is_available("nccl"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["auto", "cpu", "gpu", "all"],
                    default="auto")
    ap.add_argument("--quick", action="store_true",
                    help="fewer sizes and steps")
    ap.add_argument("--mib", type=int, default=64, help="CPU all_sum size")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dp-batch", type=int, default=256,
                    help="data-parallel batch per process")
    ap.add_argument("--dp-steps", type=int, default=15)
    ap.add_argument("--ring-only", action="store_true",
                    help="CPU part: the ring all_sum against loopback only")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-backend", default="ring", help=argparse.SUPPRESS)
    ap.add_argument("--device", default="gpu", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", type=int, nargs="*", default=[],
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "cmx":
        return cmx_worker(a)
    if a.worker == "torch":
        return torch_worker(a)
    if a.quick:
        a.iters, a.dp_steps, a.dp_batch = min(a.iters, 5), 6, min(a.dp_batch,
                                                                   64)
    out = {"load": os.getloadavg(), "cores": os.cpu_count()}
    print(f"[distributed_bench] load average {out['load']}, "
          f"{out['cores']} cores")
    rc = 0
    gpu = a.part in ("gpu", "all") or (a.part == "auto" and have_two_gpus())
    if gpu:
        try:
            gpu_part(a, out)
        except Exception as e:  # report, then the CPU part still runs
            print(f"GPU part FAILED: {e}")
            rc = 1
    elif a.part == "auto":
        print("GPU part: skipped (needs 2 GPUs and libnccl.so.2)")
    if a.part in ("cpu", "all", "auto"):
        cpu_part(a, out)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return rc


if __name__ == "__main__":
    sys.exit(main())
