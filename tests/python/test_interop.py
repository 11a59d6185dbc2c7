"""Interop beyond test_numpy.py: DLPack both ways with non-contiguous
arrays, pickling of views and containers, copy/deepcopy semantics with
in-place updates, and the GIL released while data is read (item, tolist,
NumPy export, repr), including reads racing with in-place updates."""
import copy
import pickle
import threading
import time

import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype

NUMPY_DTYPES = [d for d in ALL_DTYPES if d != mx.bfloat16]


def views(a):
    return [a.T, a[:, ::2], a[::-1], a[1:, 1:3], mx.broadcast_to(a[:1], a.shape)]


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_dlpack_non_contiguous_to_numpy(dt):
    x = (np.arange(24).reshape(4, 6) % 5).astype(np_dtype(dt))
    a = mx.array(x, dtype=dt)
    refs = [x.T, x[:, ::2], x[::-1], x[1:, 1:3], np.broadcast_to(x[:1], x.shape)]
    for v, ref in zip(views(a), refs):
        y = np.from_dlpack(v)
        assert y.dtype == ref.dtype and y.shape == ref.shape
        np.testing.assert_array_equal(y, ref)


@pytest.mark.parametrize("dt", NUMPY_DTYPES)
def test_dlpack_roundtrip_numpy_cmx_numpy(dt):
    x = (np.arange(30).reshape(5, 6) % 7).astype(np_dtype(dt))[::2, 1::2]
    a = mx.from_dlpack(x)
    assert a.dtype == dt and a.shape == x.shape
    y = np.from_dlpack(a)
    np.testing.assert_array_equal(y, x)
    # computing on the imported array works as on any other
    np.testing.assert_allclose(np.array(mx.sum(a)), x.sum(), rtol=1e-3)


# NumPy takes host (kDLCPU) tensors only: the arrays it imports are made on
# the CPU, whatever the default device (a GPU when present exports kDLCUDA).
def test_dlpack_readonly_and_scalar():
    x = np.arange(4, dtype=np.float32)
    x.flags.writeable = False
    assert mx.from_dlpack(x).tolist() == [0.0, 1.0, 2.0, 3.0]
    with mx.stream(mx.cpu):
        s = mx.array(3.5)
        assert np.from_dlpack(s).shape == () and float(np.from_dlpack(s)) == 3.5
        e = mx.zeros((0, 3))
        assert np.from_dlpack(e).shape == (0, 3)


def test_dlpack_of_lazy_array_evaluates():
    with mx.stream(mx.cpu):
        a = mx.arange(6).reshape(2, 3) * 2
        np.testing.assert_array_equal(np.from_dlpack(a),
                                      np.arange(6).reshape(2, 3) * 2)


def test_pickle_views_lazy_and_containers():
    a = mx.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    for v in [a.T, a[:, ::3], a + 1, mx.broadcast_to(a[0], (2, 4))]:
        for proto in [2, pickle.HIGHEST_PROTOCOL]:
            b = pickle.loads(pickle.dumps(v, protocol=proto))
            assert b.shape == v.shape and b.dtype == v.dtype
            assert b.tolist() == v.tolist()
    tree = {"w": [a, a.astype(mx.bfloat16)], "c": (mx.array([1 + 2j]), 3)}
    back = pickle.loads(pickle.dumps(tree))
    assert back["w"][0].tolist() == a.tolist()
    assert back["w"][1].dtype == mx.bfloat16
    assert back["c"][0].tolist() == [1 + 2j] and back["c"][1] == 3


def test_copy_is_independent_of_later_in_place_updates():
    a = mx.array([1, 2, 3])
    b = copy.copy(a)
    c = copy.deepcopy(a)
    a[0] = 7
    a += 1
    assert a.tolist() == [8, 3, 4]
    assert b.tolist() == [1, 2, 3] and c.tolist() == [1, 2, 3]
    assert b is not a and c is not a


def test_deepcopy_keeps_shared_references_shared():
    a = mx.array([1.0, 2.0])
    d = copy.deepcopy({"x": a, "y": a, "z": [a]})
    assert d["x"] is d["y"] and d["z"][0] is d["x"]
    assert d["x"] is not a and d["x"].tolist() == [1.0, 2.0]


def test_buffer_protocol_zero_copy_across_exports():
    a = mx.array(np.arange(8, dtype=np.int32))
    v1, v2 = np.asarray(a), np.asarray(memoryview(a))
    assert np.shares_memory(v1, v2)
    v1[3] = -1
    assert a[3].item() == -1 and v2[3] == -1
    assert np.from_dlpack(a)[3] == -1  # DLPack shares the same buffer


def spin_during(fn):
    """Runs fn in this thread while another Python thread counts; returns
    how far the counter got during fn."""
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.01)
    before = counter[0]
    fn()
    during = counter[0] - before
    stop.set()
    t.join()
    return during


def long_chain():
    # On the CPU: its evaluation (tens of ms) outlasts the GIL's switch
    # interval, so the spinning thread must run if the read releases the GIL;
    # on a GPU the chain can finish within one interval and prove nothing.
    with mx.stream(mx.cpu):
        a = mx.array(np.ones(1_000_000, np.float32))
        for _ in range(40):
            a = a * 1.0 + 1.0
    return a


@pytest.mark.parametrize("read", ["numpy", "tolist", "item", "repr", "pickle"])
def test_gil_released_while_reading(read):
    a = long_chain()
    fns = {
        "numpy": lambda: np.array(a),
        "tolist": lambda: a.tolist(),
        "item": lambda: a[-1].item(),
        "repr": lambda: repr(a),
        "pickle": lambda: pickle.dumps(a),
    }
    assert spin_during(fns[read]) > 0
    assert np.array(a)[0] == 41.0


def test_reads_racing_with_in_place_updates():
    # One thread replaces the array's data (a[i] = v, a += 1) while others
    # read it without the GIL: every read sees a consistent array.
    a = mx.zeros((2000,), dtype=mx.int32)
    same = a
    errors = []
    stop = threading.Event()

    def writer():
        nonlocal a
        try:
            for i in range(300):
                a[i % 2000] = i
                a += 0
                assert a is same  # in place: the same object
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            stop.set()

    def reader():
        try:
            while not stop.is_set():
                v = a.tolist()
                assert len(v) == 2000
                a[0].item()
                np.array(a).sum()
                pickle.dumps(a)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert a[299 % 2000].item() == 299


def test_random_from_several_threads():
    mx.random.seed(0)
    out = [None] * 4

    def draw(i):
        vals = [mx.random.uniform(shape=(3,)) for _ in range(50)]
        mx.eval(vals)
        out[i] = np.stack([np.array(v) for v in vals])

    threads = [threading.Thread(target=draw, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = np.concatenate(out)
    # every call drew from its own key: no two rows repeat
    assert len({tuple(r) for r in rows.tolist()}) == rows.shape[0]
