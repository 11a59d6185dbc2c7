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

With one host (the default: this machine) the ranks are local processes;
with several (``--hosts``, ``--hostfile``; ``localhost`` twice counts as
two) every rank is started through ssh (``--ssh`` or ``$CMX_LAUNCH_SSH``
names the command): on its host, in the launcher's working directory, with
the launcher's Python and script path, the ring's variables, ``--env``'s,
and the launcher's ``PYTHONPATH``, ``CMX_*`` and ``MLX_*`` settings; it
stops when its ssh connection closes. MPI ranks on several hosts are
started by ``mpirun --host`` (its ssh agent is ``--ssh``).

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
                      "ips": h.get("ips") or [_ip_of(h.get("ssh", "localhost"))]})
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


LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def _is_loopback(ip):
    return ip in LOCAL_NAMES or ip.startswith("127.")


def _ip_of(name):
    """The address the ranks use for a host named `name` (resolved here, so
    that an ssh alias with a real address in the hostfile's "ips" wins)."""
    try:
        return socket.gethostbyname(name)
    except OSError:
        return name


def _forwarded_env():
    """What the remote ranks inherit from the launcher: PYTHONPATH and the
    CMX_* / MLX_* settings (MLX_RANK and MLX_HOSTFILE are set per rank)."""
    return {k: v for k, v in os.environ.items()
            if (k == "PYTHONPATH" or k.startswith(("CMX_", "MLX_")))
            and k not in ("MLX_RANK", "MLX_HOSTFILE")}


def _remote_script(hostfile, text, cwd, env, command):
    """The POSIX shell program one remote rank runs: writes its hostfile,
    starts the command with env in cwd, and stops it when the launcher's
    end of the ssh connection closes (stdin reaches EOF)."""
    q = shlex.quote
    assigns = " ".join(f"{k}={q(v)}" for k, v in env.items())
    return (f"umask 077; cat > {q(hostfile)} <<'CMX_EOF'\n{text}\nCMX_EOF\n"
            f"cd {q(cwd)} || exit 1\n"
            f"exec 3<&0\n"
            f"env {assigns} {' '.join(q(c) for c in command)} </dev/null &\n"
            "child=$!\n"
            "{ cat <&3; kill -TERM $child; } >/dev/null 2>&1 &\n"
            "watch=$!\n"
            "wait $child; rc=$?\n"
            f"kill $watch 2>/dev/null; rm -f {q(hostfile)}; exit $rc\n")


def launch_ring(args, hosts, envs, nccl=False, over_ssh=False):
    """Runs every rank of `hosts` (one entry per rank) with the ring's
    environment, as local processes or (over_ssh) through ssh; returns the
    first failure's exit code."""
    n = len(hosts)
    ips = [h["ips"][0] if over_ssh else "127.0.0.1" for h in hosts]
    if all(_is_loopback(ip) for ip in ips):
        ports = _free_ports(n, args.starting_port)
    else:  # the ports of other machines cannot be probed from here
        base = args.starting_port or 32323
        ports = [base + i for i in range(n)]
    text = json.dumps([[f"{ip}:{p}"] for ip, p in zip(ips, ports)])
    procs = []
    gpus = 0 if over_ssh else _gpu_count()
    tmp = tempfile.NamedTemporaryFile("w", suffix=".json",
                                      prefix="cmx_hosts_", delete=False)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    ssh = shlex.split(args.ssh)
    try:
        tmp.write(text)
        tmp.close()
        for rank, h in enumerate(hosts):
            env = _forwarded_env() if over_ssh else {}
            env.update({"MLX_RANK": str(rank), "MLX_HOSTFILE": tmp.name})
            for e in envs:
                k, _, v = e.partition("=")
                env[k] = v
            if not over_ssh and (gpus > 1 or (nccl and gpus == 1)):
                env["CUDA_VISIBLE_DEVICES"] = _visible(gpus, rank)
            elif nccl and over_ssh:  # this rank's index on its host
                env["CUDA_VISIBLE_DEVICES"] = str(
                    [x["ssh"] for x in hosts[:rank]].count(h["ssh"]))
            if nccl:
                env["CMX_DISTRIBUTED_BACKEND"] = "nccl"
                # NCCL moves GPU arrays: each rank's default device is its
                # GPU (the CPU stays the default elsewhere, see stream.c).
                env.setdefault("CMX_DEFAULT_DEVICE", "gpu")
            if args.verbose:
                env["MLX_RING_VERBOSE"] = "1"
            if not over_ssh:
                full = dict(os.environ, **env)
                procs.append(subprocess.Popen(_command(args), env=full,
                                              cwd=args.cwd))
                continue
            # each rank its own hostfile: ranks sharing a host (or this
            # machine) never see one half written
            env["MLX_HOSTFILE"] = f"{tmp.name[:-5]}_{rank}.json"
            script = _remote_script(env["MLX_HOSTFILE"], text, cwd, env,
                                    _command(args))
            if args.verbose:
                print(f"cmx.launch: rank {rank} on {h['ssh']}", file=sys.stderr)
            procs.append(subprocess.Popen(
                ssh + [h["ssh"], "sh -c " + shlex.quote(script)],
                stdin=subprocess.PIPE))
        return _wait(procs)
    except KeyboardInterrupt:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        return _wait(procs, grace=2.0) or 130
    finally:
        for p in procs:  # closes the remote ranks' stdin: stops stragglers
            if p.stdin:
                p.stdin.close()
        os.unlink(tmp.name)


def launch_mpi(args, hosts, envs, over_ssh=False):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        sys.exit("cmx.launch: mpirun not found (apt-get install openmpi-bin)")
    cmd = [mpirun, "--oversubscribe", "-np", str(len(hosts))]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    names = [h["ssh"] for h in hosts] if over_ssh else []
    if names:  # mpirun starts its daemons on them through ssh
        counts = {}
        for x in names:
            counts[x] = counts.get(x, 0) + 1
        cmd += ["--host", ",".join(f"{k}:{v}" for k, v in counts.items())]
    if names and args.ssh != "ssh":
        cmd += ["--mca", "plm_rsh_agent", args.ssh]
    for k, v in _forwarded_env().items():
        cmd += ["-x", f"{k}={v}"]
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
    ap.add_argument("--ssh", default=os.environ.get("CMX_LAUNCH_SSH", "ssh"),
                    help="the ssh command for --hosts/--hostfile, e.g. "
                    "'ssh -F my_config' (default: $CMX_LAUNCH_SSH or ssh)")
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
        hosts = [{"ssh": h, "ips": [_ip_of(h)]}
                 for h in args.hosts.split(",") if h]
    else:
        hosts = [{"ssh": "localhost", "ips": ["127.0.0.1"]}]
    # One host runs its ranks here (as mlx.launch); several are reached
    # through ssh, each in the same directory with the same Python.
    over_ssh = len(hosts) > 1 or (len(hosts) == 1 and
                                  hosts[0]["ssh"] not in LOCAL_NAMES)
    if args.nproc:
        hosts = [h for h in hosts for _ in range(args.nproc)]
    backend = backend or "ring"
    if backend not in ("ring", "mpi", "nccl"):
        sys.exit(f"cmx.launch: backend {backend!r} is not supported "
                 "(ring, mpi or nccl)")
    if backend == "mpi":
        return launch_mpi(args, hosts, envs, over_ssh)
    return launch_ring(args, hosts, envs, nccl=backend == "nccl",
                       over_ssh=over_ssh)


if __name__ == "__main__":
    sys.exit(main())
