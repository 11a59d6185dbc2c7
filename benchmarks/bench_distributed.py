"""all_sum of 64 MiB (float32) between 2 local processes over the ring and
over MPI, against loopback TCP bandwidth measured in the same run with a
plain socket pair between 2 processes.

    python benchmarks/bench_distributed.py [--mib 64] [--iters 5]

Bandwidth of an all_sum = its buffer's bytes / its time (what the caller
moves through the collective); loopback one way = bytes / time of a
one-way transfer of the same size through one TCP connection on
127.0.0.1; two ways = the same with both processes sending at once (a
2-rank all_sum must move its buffer in each direction: half in the
reduce-scatter, half in the all-gather).
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time


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


def worker(mib, iters, backend):
    import cmx.core as mx

    g = mx.distributed.init(strict=True, backend=backend)
    x = mx.ones((mib * 1024 * 1024 // 4,))
    mx.eval(x)
    mx.eval(mx.distributed.all_sum(x))  # warm-up
    best = 1e9
    for _ in range(iters):
        mx.eval(mx.distributed.all_sum(mx.zeros(1)))  # line up the ranks
        t = time.perf_counter()
        y = mx.distributed.all_sum(x)
        mx.eval(y)
        best = min(best, time.perf_counter() - t)
    assert float(y[0]) == g.size()
    if g.rank() == 0:
        print(json.dumps({"seconds": best}), flush=True)


def collective(mib, iters, backend):
    cmd = [sys.executable, "-m", "cmx.launch", "-n", "2"]
    if backend == "mpi":
        cmd += ["--backend", "mpi"]
    cmd += [os.path.abspath(__file__), "--worker", backend, "--mib", str(mib),
            "--iters", str(iters)]
    env = dict(os.environ, CMX_NUM_THREADS="1")
    out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                         timeout=600)
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return mib * 1024 * 1024 / json.loads(line)["seconds"]
    raise RuntimeError(out.stdout + out.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--worker", default=None)
    a = ap.parse_args()
    if a.worker:
        return worker(a.mib, a.iters, a.worker)
    nbytes = a.mib * 1024 * 1024
    tcp = loopback(nbytes, a.iters)
    both = duplex(nbytes, a.iters)
    print(f"loopback TCP, one way, {a.mib} MiB: {tcp / 1e9:.2f} GB/s")
    print(f"loopback TCP, both ways at once, {a.mib} MiB each way: "
          f"{both / 1e9:.2f} GB/s per direction")
    ring = collective(a.mib, a.iters, "ring")
    print(f"ring all_sum, 2 processes, {a.mib} MiB float32: "
          f"{ring / 1e9:.2f} GB/s = {ring / tcp:.2f} x one-way loopback, "
          f"{ring / both:.2f} x two-way loopback")
    import cmx.core as mx

    if shutil.which("mpirun") and mx.distributed.is_available("mpi"):
        m = collective(a.mib, a.iters, "mpi")
        print(f"mpi  all_sum, 2 processes, {a.mib} MiB float32: "
              f"{m / 1e9:.2f} GB/s = {m / tcp:.2f} x loopback, "
              f"ring/mpi = {ring / m:.2f}")
    else:
        print("mpi: not installed (make bootstrap installs OpenMPI)")


if __name__ == "__main__":
    main()
