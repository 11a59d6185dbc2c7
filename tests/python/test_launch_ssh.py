"""cmx.launch --hosts / --hostfile over real ssh: a private sshd on a free
port of this machine (its own host key, config and authorized key in a
temporary folder; the user's ~/.ssh is not touched), and 2 ranks started
through it with ``--hosts localhost,localhost``.

openssh-server is installed with apt-get when it is missing and this runs
as root (or with password-less sudo), as scripts/bootstrap.sh installs the
build's packages; the cases skip, saying why, only where sshd cannot be
installed or cannot start."""

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

import cmx.core as mx

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dist_worker.py")
SSHD = "/usr/sbin/sshd"


def _install_sshd():
    """None when sshd is there (installed now if needed), else why not."""
    if os.path.exists(SSHD):
        return None
    if not shutil.which("apt-get"):
        return "no sshd and no apt-get to install openssh-server"
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if sudo and subprocess.run(sudo + ["true"], capture_output=True).returncode:
        return "no sshd, and installing openssh-server needs root"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "install", "-y", "-qq", "openssh-server"],
                ["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", "openssh-server"]):
        p = subprocess.run(sudo + cmd, capture_output=True, text=True,
                           env=env, timeout=600)
        if os.path.exists(SSHD):
            return None
    return f"apt-get install openssh-server failed: {p.stderr[-300:]}"


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture(scope="module")
def ssh_command(tmp_path_factory):
    """The ssh command (``ssh -F config``) reaching this machine's private
    sshd as ``localhost``."""
    why = _install_sshd()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("sshd")
    os.chmod(d, 0o700)
    for key in ("host_key", "id"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        str(d / key)], check=True)
    (d / "authorized_keys").write_text((d / "id.pub").read_text())
    os.chmod(d / "authorized_keys", 0o600)
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n"
        f"PidFile {d}/sshd.pid\nAuthorizedKeysFile {d}/authorized_keys\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
        "AcceptEnv none\nLogLevel ERROR\n")
    (d / "ssh_config").write_text(
        f"Host localhost\n  HostName 127.0.0.1\n  Port {port}\n"
        f"  User {getpass.getuser()}\n  IdentityFile {d}/id\n"
        f"  IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n"
        "  StrictHostKeyChecking no\n  BatchMode yes\n  LogLevel ERROR\n")
    if os.geteuid() == 0:  # sshd's privilege separation directory
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    log = open(d / "sshd.log", "w")
    sshd = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                            stdout=log, stderr=subprocess.STDOUT)
    ssh = f"ssh -F {d}/ssh_config"
    try:
        deadline, ok = time.monotonic() + 20, None
        while time.monotonic() < deadline and sshd.poll() is None:
            ok = subprocess.run(ssh.split() + ["localhost", "echo", "up"],
                                capture_output=True, text=True, timeout=20)
            if ok.stdout.strip() == "up":
                break
            time.sleep(0.3)
        if not ok or ok.stdout.strip() != "up":
            log.flush()
            pytest.skip("the private sshd did not start or let us in: " +
                        (d / "sshd.log").read_text()[-400:] +
                        (ok.stderr[-200:] if ok else ""))
        yield ssh
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)
        log.close()


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(os.path.dirname(mx.__file__)),
                    env.get("PYTHONPATH", "")] if p)
    env["CMX_NUM_THREADS"] = "1"
    for k in ("MLX_HOSTFILE", "MLX_RANK", "CMX_LAUNCH_SSH"):
        env.pop(k, None)
    return env


def _launch(args, timeout=120):
    p = subprocess.run([sys.executable, "-m", "cmx.launch"] + args,
                       env=_env(), capture_output=True, text=True,
                       timeout=timeout, cwd=HERE)
    return p, p.stdout + p.stderr


def test_hosts_over_ssh_ring(ssh_command):
    """2 ranks started through ssh run the collectives; each reports the
    environment it was given (rank, hostfile, --env, PYTHONPATH)."""
    p, out = _launch(["--ssh", ssh_command, "--hosts", "localhost,localhost",
                      "--env", "CMX_TEST_ENV=over-ssh", WORKER, "ssh",
                      "ring"])
    assert p.returncode == 0, out
    for r in range(2):
        assert f"rank {r} ok" in p.stdout, out
        assert f"rank {r} env over-ssh ssh-session" in p.stdout, out


def test_hostfile_over_ssh_ring(ssh_command, tmp_path):
    """MLX's hostfile with two ssh hosts (and its "envs")."""
    hf = tmp_path / "hosts.json"
    hf.write_text('{"backend": "ring", "envs": ["CMX_TEST_ENV=from-file"], '
                  '"hosts": [{"ssh": "localhost", "ips": ["127.0.0.1"]}, '
                  '{"ssh": "localhost", "ips": ["127.0.0.1"]}]}')
    p, out = _launch(["--ssh", ssh_command, "--hostfile", str(hf), WORKER,
                      "ssh", "ring"])
    assert p.returncode == 0, out
    assert "rank 1 env from-file ssh-session" in p.stdout, out


def test_ssh_rank_failure_stops_the_others(ssh_command):
    """A rank killed on its host: the launcher returns its code and the
    other rank (over ssh) does not outlive it."""
    t = time.monotonic()
    p, out = _launch(["--ssh", ssh_command, "--hosts", "localhost,localhost",
                      WORKER, "killed", "ring"], timeout=90)
    assert p.returncode == 17, out
    assert time.monotonic() - t < 60, out


@pytest.mark.skipif(not (shutil.which("mpirun") and
                         mx.distributed.is_available("mpi")),
                    reason="OpenMPI is not installed (make bootstrap)")
def test_hosts_mpi(ssh_command):
    """--backend mpi with --hosts: mpirun --host, the env passed with -x."""
    p, out = _launch(["--ssh", ssh_command, "--backend", "mpi", "--hosts",
                      "localhost,localhost", "--env", "CMX_TEST_ENV=mpi",
                      WORKER, "smoke", "mpi"])
    assert p.returncode == 0, out
    assert "rank 0 ok" in p.stdout and "rank 1 ok" in p.stdout, out
