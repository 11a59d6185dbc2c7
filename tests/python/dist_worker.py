"""One rank of the multi-process tests of test_distributed.py, started by
cmx.launch (ring) or mpirun (mpi). ``python dist_worker.py MODE BACKEND``;
exits 0 after printing "rank R ok", non-zero (a traceback) on any failed
check. Each rank rebuilds every other rank's input from its rank number, so
expected results are computed here with numpy."""

import os
import sys
import time

import numpy as np

import cmx.core as mx
import cmx.nn as nn
from cmx.utils import tree_flatten, tree_map

MODE, BACKEND = sys.argv[1], sys.argv[2]
world = mx.distributed.init(strict=True, backend=BACKEND)
R, N = world.rank(), world.size()
D = mx.distributed
if BACKEND == "nccl":  # the collectives below run on this rank's GPU
    assert "nccl" in repr(world), world
    assert mx.default_device() == mx.gpu, mx.default_device()

DTYPES = [mx.float32, mx.float16, mx.bfloat16, mx.float64, mx.int32,
          mx.int64, mx.int8, mx.uint8, mx.uint32, mx.complex64]
NP = {mx.float32: np.float32, mx.float16: np.float16,
      mx.bfloat16: np.float32, mx.float64: np.float64, mx.int32: np.int32,
      mx.int64: np.int64, mx.int8: np.int8, mx.uint8: np.uint8,
      mx.uint32: np.uint32, mx.complex64: np.complex64}


def data(rank, shape, dt):
    """Rank `rank`'s input: small integers (exact in every dtype)."""
    n = int(np.prod(shape))
    v = (np.arange(n) * (rank + 3) + 7 * rank) % 11 - (0 if dt in (
        mx.uint8, mx.uint32) else 5)
    if dt == mx.complex64:
        v = v + 1j * (v % 3)
    return v.reshape(shape).astype(NP[dt])


def check(got, want, what):
    g = np.array(got.astype(mx.float32) if got.dtype == mx.bfloat16 else got)
    if not np.array_equal(g, want.astype(g.dtype)):
        raise AssertionError(f"rank {R}: {what}: got {g.ravel()[:8]} want "
                             f"{want.ravel()[:8]}")


def collectives():
    for dt in DTYPES:
        for shape in [(1,), (7,), (3, 5), (1000,)]:
            x = mx.array(data(R, shape, dt), dtype=dt)
            xs = [data(r, shape, dt) for r in range(N)]
            check(D.all_sum(x), sum(xs[1:], xs[0]), f"all_sum {dt} {shape}")
            if dt != mx.complex64:
                check(D.all_max(x), np.max(xs, axis=0), f"all_max {dt}")
                check(D.all_min(x), np.min(xs, axis=0), f"all_min {dt}")
            check(D.all_gather(x), np.concatenate(xs), f"all_gather {dt}")
            if shape[0] % N == 0 or shape == (1000,) and 1000 % N == 0:
                k = shape[0] // N
                check(D.sum_scatter(x), sum(xs)[R * k:(R + 1) * k],
                      f"sum_scatter {dt} {shape}")
    # a 0-d array gathers to (N,); a scalar and a strided view reduce
    check(D.all_gather(mx.array(float(R))), np.arange(N, dtype=np.float32),
          "all_gather 0-d")
    check(D.all_sum(3), np.array(3 * N), "all_sum scalar")
    v = mx.arange(12).reshape(3, 4).T * (R + 1)
    check(D.all_sum(v), np.arange(12).reshape(3, 4).T * sum(range(1, N + 1)),
          "all_sum transposed")
    sc = mx.ones((4 * N, 3)) * (R + 1)
    check(D.sum_scatter(sc), np.full((4, 3), N * (N + 1) / 2, np.float32),
          "sum_scatter 2d")
    # 64 MiB of float32 (N = 2 only: the large case)
    if N == 2:
        big = mx.full((16 * 1024 * 1024,), float(R + 1))
        s = D.all_sum(big)
        assert float(s[0]) == 3.0 and float(s[-1]) == 3.0 and \
            bool(mx.all(s == 3.0)), "64 MiB all_sum"
    # send/recv pairs: even -> odd, then odd -> even, recv_like
    for dt in (mx.float32, mx.int16, mx.bfloat16):
        x = mx.arange(10).astype(dt) * (R + 1)
        if R % 2 == 0 and R + 1 < N:
            mx.eval(D.send(x, R + 1))
            got = D.recv_like(x, R + 1)
            check(got, np.arange(10) * (R + 2), f"recv_like {dt}")
        elif R % 2 == 1:
            got = D.recv((10,), dt, R - 1)
            check(got, np.arange(10) * R, f"recv {dt}")
            mx.eval(D.send(x, R - 1))
    # errors name the op
    for f in (lambda: D.send(mx.ones(2), R), lambda: D.recv((2,), mx.float32,
                                                            N)):
        try:
            f()
        except ValueError as e:
            assert "send" in str(e) or "recv" in str(e), e
        else:
            raise AssertionError("send to self / recv from N did not raise")
    # split: two colors, ranks reversed by key
    sub = world.split(R % 2, key=N - R)
    members = [r for r in range(N) if r % 2 == R % 2]
    assert sub.size() == len(members), (sub.size(), members)
    order = sorted(members, key=lambda r: N - r)
    assert sub.rank() == order.index(R), (sub.rank(), order)
    check(D.all_sum(mx.array([R]), group=sub), np.array([sum(members)]),
          "all_sum over a split")
    check(D.all_gather(mx.array([R]), group=sub), np.array(order),
          "all_gather over a split")
    # transforms: vjp of all_sum passes the cotangent, of all_gather slices;
    # jvp sums the tangent; vmap reduces / gathers per batch element
    x = mx.array([1.0, 2.0]) * (R + 1)
    g = mx.grad(lambda x: (D.all_sum(x) * mx.array([1.0, 3.0])).sum())(x)
    check(g, np.array([1.0, 3.0]), "vjp all_sum")
    w = mx.arange(2 * N).astype(mx.float32)
    g = mx.grad(lambda x: (D.all_gather(x) * w).sum())(x)
    check(g, np.array([2.0 * R, 2.0 * R + 1]), "vjp all_gather")
    _, t = mx.jvp(lambda x: D.all_sum(x), [x], [mx.ones(2) * (R + 1)])
    check(t[0], np.full(2, N * (N + 1) / 2), "jvp all_sum")
    b = mx.arange(6).reshape(3, 2) * (R + 1)
    check(mx.vmap(D.all_sum)(b), np.arange(6).reshape(3, 2) * N * (N + 1) / 2,
          "vmap all_sum")
    got = mx.vmap(D.all_gather)(b)
    want = np.stack([np.concatenate([np.arange(6).reshape(3, 2)[i] * (r + 1)
                                     for r in range(N)]) for i in range(3)])
    check(got, want, "vmap all_gather")


def killed_peer():
    """Rank N-1 dies; the others must fail with a clear error, quickly."""
    mx.eval(D.all_sum(mx.ones(4)))  # everyone connected and working
    if R == N - 1:
        os._exit(17)  # a crash, no goodbye
    t = time.monotonic()
    for _ in range(3):  # the failure is reported by every later call too
        try:
            mx.eval(D.all_sum(mx.ones(1 << 16)))
        except RuntimeError as e:
            msg = str(e)
            assert "all_sum" in msg and ("closed" in msg or "rank" in msg), msg
        else:
            raise AssertionError("all_sum with a dead peer did not fail")
    assert time.monotonic() - t < 20, "the failure took too long"


def silent_peer():
    """Rank 1 stays alive but silent past the timeout (2 s): rank 0 fails
    with a timeout, then rank 1 finds the connection closed."""
    mx.eval(D.all_sum(mx.ones(4)))
    if R == 1:
        time.sleep(4)
    try:
        mx.eval(D.all_sum(mx.ones(8)))
    except RuntimeError as e:
        msg = str(e)
        want = "timeout" if R == 0 else "closed"
        assert want in msg, msg
    else:
        raise AssertionError("no error")


def late_peer():
    """Rank 1 reaches its first collective past the timeout (2 s): rank 0,
    which made the group's first collective alone, fails with a timeout
    instead of waiting in the communicator's creation, and rank 1's late
    collective fails too (no hang on either side)."""
    if R == 1:
        time.sleep(5)
    t = time.monotonic()
    try:
        mx.eval(D.all_sum(mx.ones(8)))
    except RuntimeError as e:
        msg = str(e)
        assert "all_sum" in msg, msg
        if R == 0:
            assert "timeout" in msg, msg
    else:
        raise AssertionError("a collective with a late peer did not fail")
    assert time.monotonic() - t < 30, "the failure took too long"


def train():
    """Data-parallel steps on 2 processes match one process on the global
    batch: each rank computes both and compares."""
    mx.random.seed(0)
    X = mx.random.normal((8 * N, 5))
    Y = mx.random.normal((8 * N, 2))

    def make():
        mx.random.seed(1)
        return nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))

    def loss_fn(m, x, y):
        return ((m(x) - y) ** 2).mean()

    def steps(model, xs, ys, dp):
        lg = nn.value_and_grad(model, loss_fn)
        losses = []
        for _ in range(3):
            loss, grads = lg(model, xs, ys)
            if dp:
                grads = nn.average_gradients(grads)
                loss = D.all_sum(loss) / N
            model.update(tree_map(lambda p, g: p - 0.1 * g,
                                  model.parameters(), grads))
            mx.eval(model.parameters())
            losses.append(loss.item())
        return losses, model

    local = slice(8 * R, 8 * (R + 1))
    dl, dm = steps(make(), X[local], Y[local], True)
    sl, sm = steps(make(), X, Y, False)
    assert np.allclose(dl, sl, rtol=1e-5, atol=1e-6), (dl, sl)
    for (k, a), (_, b) in zip(tree_flatten(dm.parameters()),
                              tree_flatten(sm.parameters())):
        assert np.allclose(np.array(a), np.array(b), rtol=1e-5,
                           atol=1e-6), k
    # tensor parallel: a sharded pair equals the unsharded pair
    mx.random.seed(2)
    l1, l2 = nn.Linear(6, 4 * N), nn.Linear(4 * N, 3)
    s1 = nn.layers.distributed.shard_linear(l1, "all-to-sharded")
    s2 = nn.layers.distributed.shard_linear(l2, "sharded-to-all")
    x = mx.random.normal((2, 6))
    assert np.allclose(np.array(s2(s1(x))), np.array(l2(l1(x))), rtol=1e-4,
                       atol=1e-5)
    # its input gradient is summed over the group (sum_gradients)
    g_sh = mx.grad(lambda x: s2(s1(x)).sum())(x)
    g_full = mx.grad(lambda x: l2(l1(x)).sum())(x)
    assert np.allclose(np.array(g_sh), np.array(g_full), rtol=1e-4, atol=1e-5)
    # the quantized forms
    mx.random.seed(3)
    q1, q2 = nn.QuantizedLinear(64, 64 * N), nn.QuantizedLinear(64 * N, 3)
    t1 = nn.layers.distributed.shard_linear(q1, "all-to-sharded")
    t2 = nn.layers.distributed.shard_linear(q2, "sharded-to-all")
    assert isinstance(t2, nn.QuantizedShardedToAllLinear)
    x = mx.random.normal((2, 64))
    assert np.allclose(np.array(t2(t1(x))), np.array(q2(q1(x))), rtol=1e-4,
                       atol=1e-4)
    # average_gradients' buckets: 10 arrays in 1, 2 or 10 all_sums
    calls = []
    orig = D.all_sum
    D.all_sum = lambda x, **kw: calls.append(1) or orig(x, **kw)
    try:
        grads = [mx.ones(10) * (R + 1) for _ in range(10)]
        for size, n in ((32 << 20, 1), (4 * 50, 2), (0, 10)):
            calls.clear()
            out = nn.average_gradients(grads, all_reduce_size=size)
            mx.eval(out)
            assert len(calls) == n, (size, len(calls))
            assert all(np.allclose(np.array(o), (N + 1) / 2) for o in out)
    finally:
        D.all_sum = orig


def nccl_extra():
    """What only NCCL does: sizes 1 element .. 64 MiB on the GPU, its dtype
    mapping and errors, CPU arrays over the bootstrap ring, a split with
    two members per color (N = 4) or the whole group (N = 2)."""
    assert D.is_available("nccl")
    for n in (1, 3, 1 << 10, 1 << 16, (1 << 20) + 5, 16 << 20):
        x = mx.full((n,), float(R + 1))
        s = D.all_sum(x)
        mx.eval(s)
        assert s.shape == (n,) and bool(mx.all(s == N * (N + 1) / 2)), n
        g = D.all_gather(x)
        want = np.repeat(np.arange(1, N + 1, dtype=np.float32), n)
        assert np.array_equal(np.array(g), want), f"all_gather {n}"
    # bool max/min (as bytes); int16 and bool sums, complex max: clear errors
    b = mx.array([R == 0, False, True])
    check(D.all_max(b), np.array([True, False, True]), "all_max bool")
    check(D.all_min(b), np.array([N == 1, False, True]), "all_min bool")
    for f, x in ((D.all_sum, mx.ones(3, dtype=mx.int16)),
                 (D.all_sum, b), (D.all_max, mx.ones(2, dtype=mx.complex64))):
        try:
            mx.eval(f(x))
        except (TypeError, ValueError, RuntimeError) as e:
            assert "nccl" in str(e) and "all_" in str(e), e
        else:
            raise AssertionError(f"{f.__name__} {x.dtype} did not raise")
    # the group still works after those errors (they are raised before NCCL)
    check(D.all_sum(mx.array([R])), np.array([N * (N - 1) // 2]), "after")
    # CPU arrays on the NCCL group go over the ring
    with mx.stream(mx.cpu):
        c = D.all_sum(mx.array([1.0, R]))
        check(c, np.array([N, N * (N - 1) / 2]), "cpu all_sum on nccl")
    # send/recv of 8 MiB, both directions
    big = mx.arange(2 << 20).astype(mx.float32) + R
    if R == 0:
        mx.eval(D.send(big, 1))
        got = D.recv_like(big, 1)
        check(got[-4:], np.arange((2 << 20) - 4, 2 << 20) + 1, "recv 8 MiB")
    elif R == 1:
        got = D.recv_like(big, 0)
        check(got[:4], np.arange(4), "recv 8 MiB")
        mx.eval(D.send(big, 0))
    # split: colors of two ranks (N >= 4), else one color: a new NCCL comm
    sub = world.split(R // 2 if N >= 4 else 0)
    members = [r for r in range(N) if (r // 2 if N >= 4 else 0) ==
               (R // 2 if N >= 4 else 0)]
    assert "nccl" in repr(sub) and sub.size() == len(members)
    check(D.all_sum(mx.array([R + 1]), group=sub),
          np.array([sum(m + 1 for m in members)]), "all_sum over a split")


def smoke():
    assert N == 2 and D.all_sum(mx.array([R + 1])).item() == 3


def over_ssh():
    """A rank started by cmx.launch through ssh: a collective, then what it
    was given (--env's CMX_TEST_ENV; ssh's SSH_CONNECTION)."""
    smoke()
    x = D.all_sum(mx.full((1 << 20,), float(R + 1)))
    assert bool(mx.all(x == 3.0)), "all_sum over ssh"
    how = "ssh-session" if "SSH_CONNECTION" in os.environ else "local"
    print(f"rank {R} env {os.environ.get('CMX_TEST_ENV')} {how}", flush=True)


{"smoke": smoke, "ssh": over_ssh, "nccl": nccl_extra, "collectives": collectives, "killed": killed_peer, "silent": silent_peer, "late": late_peer,
 "train": train}[MODE]()
print(f"rank {R} ok", flush=True)
