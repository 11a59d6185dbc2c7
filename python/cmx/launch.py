"""Launch a distributed cmx program, as ``mlx.launch``.

    python -m cmx.launch -n 4 script.py [args...]          # 4 local processes
    python -m cmx.launch --backend mpi -n 2 script.py       # through mpirun
    python -m cmx.launch --backend nccl -n 2 script.py      # one GPU each
    python -m cmx.launch --hosts h1,h2 script.py            # over ssh (ring)
    python -m cmx.launch --hostfile hosts.json script.py

Ring (the default): the launcher picks free ports, writes MLX's hostfile
(a JSON list with one ``["ip:port"]`` entry per rank) and starts every rank
with ``MLX_HOSTFILE`` and ``MLX_RANK`` set, locally or through ssh. With
several local GPUs each local rank sees its own (``CUDA_VISIBLE_DEVICES``).
MPI: the program runs under ``mpirun`` (Debian's OpenMPI), which starts the
ranks; cmx picks MPI up from mpirun's environment.
NCCL: the ranks start as for the ring (whose sockets share NCCL's unique id
and carry CPU arrays), each local rank with its own GPU
(``CUDA_VISIBLE_DEVICES`` = local rank modulo the GPUs, even with one GPU
per rank), and ``CMX_DISTRIBUTED_BACKEND=nccl`` makes ``init()`` (backend
"any") choose NCCL.

A ``--hostfile`` is MLX's: ``{"backend": ..., "envs": [...], "hosts":
[{"ssh": "host", "ips": ["10.0.0.1"]}, ...]}`` or just the list of hosts.

The launcher returns the first non-zero exit status of the ranks; when a
rank fails, the others are given a few seconds (they fail too, as their
connections close) and are then stopped.
"""

import argparse
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def _free_ports(n, start=None):
    ports = []
    socks = []
    p = start
    while len(ports) < n:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", p or 0))
        except OSError:
            s.close()
            p = p + 1 if p else None
            continue
        ports.append(s.getsockname()[1])
        socks.append(s)
        p = p + 1 if p else None
    for s in socks:
        s.close()
    return ports


def _read_hostfile(path):
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, list):
        data = {"hosts": data}
    hosts = []
    for h in data.get("hosts", []):
        if isinstance(h, str):
            h = {"ssh": h}
        hosts.append({"ssh": h.get("ssh", "localhost"),
                      "ips": h.get("ips") or [h.get("ssh", "127.0.0.1")]})
    return hosts, data.get("backend") or None, list(data.get("envs", []))


def _gpu_count():
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES's list when set,
    else nvidia-smi's (no CUDA context in the launcher), else cmx's."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([v for v in vis.split(",") if v.strip()])
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True,
                                 timeout=20).stdout
            return sum(1 for line in out.splitlines()
                       if line.startswith("GPU "))
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        import cmx.core as mx
        return mx.device_count(mx.gpu) if hasattr(mx, "device_count") else 0
    except Exception:
        return 0


def _visible(gpus, local_rank):
    """CUDA_VISIBLE_DEVICES for a local rank: its own GPU of the visible
    ones."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in vis.split(",") if v.strip()] if vis else \
        [str(i) for i in range(gpus)]
    return ids[local_rank % len(ids)]


def _wait(procs, grace=10.0):
    """Waits for every process; after the first failure, gives the rest
    `grace` seconds and then stops them. Returns the first failure's code."""
    code = 0
    failed_at = None
    while True:
        alive = False
        for p in procs:
            rc = p.poll()
            if rc is None:
                alive = True
            elif rc != 0 and code == 0:
                code, failed_at = rc, time.monotonic()
        if not alive:
            return code
        if failed_at is not None and time.monotonic() - failed_at > grace:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            time.sleep(1.0)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            return code
        time.sleep(0.05)


def _command(args):
    return [args.python] + args.command


def launch_ring(args, hosts, envs, nccl=False):
    n = len(hosts)
    local = all(h["ssh"] in ("localhost", "127.0.0.1") for h in hosts)
    if local:
        ports = _free_ports(n, args.starting_port)
        entries = [[f"127.0.0.1:{p}"] for p in ports]
    else:
        base = args.starting_port or 32323
        entries = [[f"{h['ips'][0]}:{base + i}"] for i, h in enumerate(hosts)]
    text = json.dumps(entries)
    procs = []
    gpus = _gpu_count() if local else 0
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json",
                                      prefix="cmx_hosts_", delete=False)
    try:
        tmp.write(text)
        tmp.close()
        for rank, h in enumerate(hosts):
            env = {"MLX_RANK": str(rank), "MLX_HOSTFILE": tmp.name}
            for e in envs:
                k, _, v = e.partition("=")
                env[k] = v
            if local and (gpus > 1 or (nccl and gpus == 1)):
                env["CUDA_VISIBLE_DEVICES"] = _visible(gpus, rank)
            elif nccl and not local:  # this rank's index on its host
                env["CUDA_VISIBLE_DEVICES"] = str(
                    [x["ssh"] for x in hosts[:rank]].count(h["ssh"]))
            if nccl:
                env["CMX_DISTRIBUTED_BACKEND"] = "nccl"
                # NCCL moves GPU arrays: each rank's default device is its
                # GPU (the default anyway where one is present, as MLX).
                env.setdefault("CMX_DEFAULT_DEVICE", "gpu")
            if args.verbose:
                env["MLX_RING_VERBOSE"] = "1"
            if local:
                full = dict(os.environ, **env)
                procs.append(subprocess.Popen(_command(args), env=full,
                                              cwd=args.cwd))
            else:
                remote = (f"cat > {tmp.name} <<'CMX_EOF'\n{text}\nCMX_EOF\n"
                          f"cd {shlex.quote(args.cwd or os.getcwd())} && "
                          + " ".join(f"{k}={shlex.quote(v)}"
                                     for k, v in env.items()) + " "
                          + " ".join(shlex.quote(c) for c in _command(args)))
                procs.append(subprocess.Popen(["ssh", h["ssh"], remote]))
        return _wait(procs)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        return _wait(procs, grace=2.0) or 130
    finally:
        os.unlink(tmp.name)


def launch_mpi(args, hosts, envs):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("cmx.launch: mpirun not found (apt-get install openmpi-bin)")
    cmd = [mpirun, "--oversubscribe", "-np", str(len(hosts))]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    names = [h["ssh"] for h in hosts]
    if any(x not in ("localhost", "127.0.0.1") for x in names):
        counts = {}
        for x in names:
            counts[x] = counts.get(x, 0) + 1
        cmd += ["--host", ",".join(f"{k}:{v}" for k, v in counts.items())]
    for e in envs:
        cmd += ["-x", e]
    cmd += _command(args)
    if args.verbose:
        print(" ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, cwd=args.cwd)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m cmx.launch",
        description="Launch a distributed cmx program (as mlx.launch).")
    ap.add_argument("-n", "--nproc", type=int, default=None,
                    help="number of processes per host (local: in all)")
    ap.add_argument("--hosts", default=None,
                    help="comma separated list of hosts (ssh names)")
    ap.add_argument("--hostfile", default=None,
                    help="MLX's JSON hostfile")
    ap.add_argument("--backend", choices=["ring", "mpi", "nccl"],
                    default=None,
                    help="communication backend (default: ring; nccl: one "
                    "GPU per local rank, bootstrapped over the ring)")
    ap.add_argument("--env", action="append", default=[],
                    help="KEY=VALUE set in every process (repeatable)")
    ap.add_argument("--starting-port", type=int, default=None,
                    help="first port of the ring")
    ap.add_argument("--cwd", default=None, help="working directory")
    ap.add_argument("--python", default=sys.executable,
                    help="python interpreter to run the script with")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("command", nargs=argparse.REMAINDER,
                    help="the script and its arguments")
    args = ap.parse_args(argv)
    if not args.command:
        ap.error("the script to run is missing")
    if args.command[0] == "--":
        args.command = args.command[1:]

    envs = list(args.env)
    backend = args.backend
    if args.hostfile:
        hosts, hb, henvs = _read_hostfile(args.hostfile)
        backend = backend or hb
        envs = henvs + envs
    elif args.hosts:
        hosts = [{"ssh": h, "ips": [h]} for h in args.hosts.split(",") if h]
    else:
        hosts = [{"ssh": "localhost", "ips": ["127.0.0.1"]}]
    if args.nproc:
        hosts = [h for h in hosts for _ in range(args.nproc)]
    backend = backend or "ring"
    if backend not in ("ring", "mpi", "nccl"):
        sys.exit(f"cmx.launch: backend {backend!r} is not supported "
                 "(ring, mpi or nccl)")
    if backend == "mpi":
        return launch_mpi(args, hosts, envs)
    return launch_ring(args, hosts, envs, nccl=backend == "nccl")


if __name__ == "__main__":
    sys.exit(main())
