"""mx.distributed over several local processes (ring over TCP, and MPI
when OpenMPI is installed), and the group of one in this process.

Each multi-process case runs tests/python/dist_worker.py on every rank under
a hard timeout: a hang fails the test instead of stalling the suite."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import cmx.core as mx
import cmx.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dist_worker.py")
D = mx.distributed


def _env(extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [os.path.dirname(mx.__file__).rsplit(os.sep, 1)[0],
                    env.get("PYTHONPATH", "")] if p)
    env["CMX_NUM_THREADS"] = "1"  # 2 cores, several processes
    env.pop("MLX_HOSTFILE", None)
    env.pop("MLX_RANK", None)
    env.update(extra or {})
    return env


def _run(cmd, n, timeout, extra=None, expect_ok=True):
    p = subprocess.run(cmd, env=_env(extra), capture_output=True, text=True,
                       timeout=timeout)
    out = p.stdout + p.stderr
    if expect_ok:
        assert p.returncode == 0, out
        for r in range(n):
            assert f"rank {r} ok" in p.stdout, out
    return p, out


def ring(n, mode, timeout=60, extra=None, expect_ok=True):
    cmd = [sys.executable, "-m", "cmx.launch", "-n", str(n), WORKER, mode,
           "ring"]
    return _run(cmd, n, timeout, extra, expect_ok)


def nccl(n, mode, timeout=180, extra=None, expect_ok=True):
    cmd = [sys.executable, "-m", "cmx.launch", "--backend", "nccl", "-n",
           str(n), WORKER, mode, "nccl"]
    return _run(cmd, n, timeout, extra, expect_ok)


def gpu_count():
    return mx.device_count(mx.gpu) if mx.is_available(mx.gpu) else 0


def _why_no_nccl():
    n = gpu_count()
    if n < 2:
        return (f"NCCL cases need 2 GPUs, this machine has {n} (they run on "
                "the 2-GPU machine: scripts/gpu2-check.sh)")
    if not D.is_available("nccl"):
        return ("2 GPUs but no libnccl.so.2 on the loader's path (install "
                "NCCL 2, e.g. the nvidia-nccl-cu12 wheel)")
    return None


needs_nccl = pytest.mark.skipif(_why_no_nccl() is not None,
                                reason=_why_no_nccl() or "")


def have_mpi():
    return shutil.which("mpirun") is not None and D.is_available("mpi")


def mpi(n, mode, timeout=60):
    cmd = [sys.executable, "-m", "cmx.launch", "--backend", "mpi", "-n",
           str(n), WORKER, mode, "mpi"]
    return _run(cmd, n, timeout)


# ------------------------------------------------------------ one process


def test_group_of_one():
    g = D.init()
    assert (g.rank(), g.size()) == (0, 1)
    assert D.is_available() and D.is_available("ring")
    assert not D.is_available("nonsense")
    x = mx.array([1.0, 2.0])
    for f in (D.all_sum, D.all_max, D.all_min, D.all_gather, D.sum_scatter):
        assert f(x, group=g).tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="singleton"):
        D.send(x, 0)
    with pytest.raises(ValueError, match="singleton"):
        D.recv((2,), mx.float32, 0)
    with pytest.raises(ValueError, match="split"):
        g.split(0)
    with pytest.raises(TypeError):
        D.all_sum(x, group=3)
    grads = {"w": mx.ones((2, 2))}
    assert nn.average_gradients(grads)["w"].tolist() == [[1, 1], [1, 1]]


def test_init_errors():
    with pytest.raises(ValueError, match="backend"):
        D.init(backend="carrier-pigeon")
    # strict without a launcher's environment: a clear error
    with pytest.raises(RuntimeError, match="MLX_HOSTFILE"):
        D.init(strict=True, backend="ring")
    if D.is_available("mpi"):
        with pytest.raises(RuntimeError, match="mpirun"):
            D.init(strict=True, backend="mpi")
    # not strict: the group of one
    assert D.init(backend="ring").size() == 1
    with pytest.raises(NotImplementedError):
        D.init(all_gather_factory=lambda r, n: None)


def test_nccl_without_gpus_is_a_clear_error():
    if mx.is_available(mx.gpu):
        pytest.skip("a GPU is present: the NCCL check is for CPU machines")
    assert not D.is_available("nccl")
    with pytest.raises(RuntimeError, match="nccl"):
        D.init(strict=True, backend="nccl")


def test_sharded_layers_in_one_process():
    lin = nn.Linear(4, 6)
    a = nn.layers.distributed.shard_linear(lin, "all-to-sharded")
    b = nn.ShardedToAllLinear.from_linear(nn.Linear(6, 3))
    assert isinstance(a, nn.AllToShardedLinear)
    x = mx.ones((2, 4))
    assert np.allclose(np.array(a(x)), np.array(lin(x)))
    assert b(a(x)).shape == (2, 3)
    m = nn.Sequential(nn.Linear(4, 4))
    nn.layers.distributed.shard_inplace(m, "all-to-sharded")
    assert m.layers[0].weight.shape == (4, 4)


# ------------------------------------------------------------- the ring


@pytest.mark.parametrize("n", [2, 3])
def test_ring_collectives(n):
    ring(n, "collectives", timeout=120)


@pytest.mark.parametrize("mode", ["files", "0"])
@pytest.mark.parametrize("n", [2, 3])
def test_ring_collectives_other_paths(mode, n):
    """The same through the /dev/shm files (CMX_RING_SHM=files: no single
    copy) and over the sockets (CMX_RING_SHM=0)."""
    ring(n, "collectives", timeout=120, extra={"CMX_RING_SHM": mode})


@pytest.mark.parametrize("mode,how", [
    ("1", "shared memory, single copy"),
    ("files", "shared memory, /dev/shm files"),
    ("0", "sockets")])
def test_ring_shared_memory_is_used_on_one_host(mode, how):
    """Ranks on one host pair up through shared memory unless CMX_RING_SHM=0
    (the verbose connection line says how); nothing is left in /dev/shm."""
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    p, out = ring(2, "smoke", extra={"MLX_RING_VERBOSE": "1",
                                     "CMX_RING_SHM": mode})
    assert out.count(f"connected (all_sum: {how})") == 2, out
    after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert not [f for f in after - before if _left_by_dead_rank(f)]


def _left_by_dead_rank(name):
    """A ring file (cmx-ring-<pid>-<rank>-<key>) whose creator has exited:
    one left behind. Files of live processes belong to rings still running
    (another test process of a parallel run), not to this one."""
    parts = name.split("-")
    if not name.startswith("cmx-ring-") or len(parts) < 4:
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, PermissionError):
        return False
    return False


@pytest.mark.parametrize("mode", ["1", "files"])
def test_ring_shared_memory_killed_peer(mode):
    """A rank dying between shared-memory all_sums fails the others."""
    p, out = ring(3, "killed", timeout=60, expect_ok=False,
                  extra={"CMX_RING_SHM": mode})
    assert "rank 0 ok" in p.stdout and "rank 1 ok" in p.stdout, out
    assert p.returncode == 17, out


def test_launch_hostfile(tmp_path):
    """MLX's hostfile format: one local host, -n 2 ranks on it (several
    hosts go through ssh: test_launch_ssh.py)."""
    hf = tmp_path / "hosts.json"
    hf.write_text('{"backend": "ring", "envs": ["CMX_TEST_ENV=1"], "hosts": '
                  '[{"ssh": "localhost", "ips": ["127.0.0.1"]}]}')
    _run([sys.executable, "-m", "cmx.launch", "--hostfile", str(hf), "-n",
          "2", WORKER, "smoke", "ring"], 2, timeout=60)


def test_ring_killed_peer_fails_every_rank():
    p, out = ring(3, "killed", timeout=60, expect_ok=False)
    assert "rank 0 ok" in p.stdout and "rank 1 ok" in p.stdout, out
    assert p.returncode == 17, out  # the launcher reports the dead rank


def test_ring_silent_peer_times_out():
    ring(2, "silent", timeout=60, extra={"CMX_DISTRIBUTED_TIMEOUT": "2"})


def test_ring_late_peer_times_out():
    ring(2, "late", timeout=60, extra={"CMX_DISTRIBUTED_TIMEOUT": "2"})


def test_ring_data_parallel_training_matches_one_process():
    ring(2, "train", timeout=90)


# ------------------------------------------------------------- examples
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                        "distributed")
DP_ARGS = ["--steps", "3", "--warmup", "1", "--batch-size", "32", "--check"]
TP_ARGS = ["--random", "--layers", "2", "--vocab", "4096", "--tokens", "6"]


def example(backend, n, script, args, timeout):
    cmd = [sys.executable, "-m", "cmx.launch", "--backend", backend, "-n",
           str(n), os.path.join(EXAMPLES, script)] + args
    _, out = _run(cmd, n, timeout)
    return out


def test_example_data_parallel_ring():
    """2 processes over the ring train as one process on the global batch
    (the example checks the losses and fails otherwise)."""
    out = example("ring", 2, "data_parallel.py", DP_ARGS, 240)
    assert '"checked": true' in out and "backend='ring'" in out, out


def test_example_tensor_parallel_ring():
    """Sharded attention (uneven: 3 key/value heads on 2 ranks) and MLP give
    one process's greedy tokens."""
    out = example("ring", 2, "tensor_parallel.py", TP_ARGS, 300)
    assert "greedy tokens equal one process's" in out, out


def _gguf_path():
    sys.path.insert(0, os.path.join(os.path.dirname(EXAMPLES), "llm"))
    try:
        from generate import default_model_path
        return default_model_path()
    except (FileNotFoundError, ImportError):
        return None
    finally:
        sys.path.pop(0)


@pytest.mark.skipif(_gguf_path() is None,
                    reason="SmolLM2's GGUF file is not installed: make llm-model")
def test_example_tensor_parallel_ring_real_model():
    """SmolLM2-135M (Q4_1 GGUF; fused qkv and gate/up; 3 key/value heads
    padded to 4) on 2 processes: the sharded layers give one process's
    greedy tokens."""
    out = example("ring", 2, "tensor_parallel.py", ["--tokens", "8"], 600)
    assert "greedy tokens equal one process's" in out, out
    assert ".gguf" in out and "random" not in out, out


# ------------------------------------------------------------------ MPI


@pytest.mark.skipif(not have_mpi(), reason="OpenMPI (mpirun, libmpi.so.40) "
                    "is not installed: make bootstrap installs it")
def test_mpi_collectives():
    mpi(2, "collectives", timeout=120)


# ----------------------------------------------------------------- NCCL
# Two processes with one GPU each (cmx.launch --backend nccl), the same
# worker as the ring's: every collective and dtype of the ring cases on
# GPU arrays, then NCCL's own sizes, dtype errors, CPU arrays, a split.


@needs_nccl
def test_nccl_collectives():
    nccl(2, "collectives", timeout=300)


@needs_nccl
def test_nccl_sizes_dtypes_split():
    nccl(2, "nccl", timeout=300)


@needs_nccl
def test_nccl_killed_peer_fails_every_rank():
    p, out = nccl(2, "killed", timeout=120, expect_ok=False,
                  extra={"CMX_DISTRIBUTED_TIMEOUT": "5"})
    assert "rank 0 ok" in p.stdout, out
    assert p.returncode == 17, out


@needs_nccl
def test_nccl_late_peer_times_out_in_the_first_collective():
    # the communicator is made at the first GPU collective: a rank that
    # comes late must fail the others there with the timeout, not hang them
    nccl(2, "late", timeout=120, extra={"CMX_DISTRIBUTED_TIMEOUT": "2"})


@needs_nccl
def test_nccl_data_parallel_training_matches_one_process():
    nccl(2, "train", timeout=300)


@needs_nccl
def test_nccl_example_data_parallel():
    out = example("nccl", 2, "data_parallel.py", DP_ARGS, 300)
    assert "backend='nccl'" in out and "Device(gpu" in out, out


@needs_nccl
def test_nccl_example_tensor_parallel():
    out = example("nccl", 2, "tensor_parallel.py", TP_ARGS, 300)
    assert "backend='nccl'" in out and "Device(gpu" in out, out
