"""Errors: exception types and messages naming the op, and no crash on
arbitrary input (every public function called with odd arguments)."""
import inspect

import numpy as np
import pytest

import cmx.core as mx


def test_status_mapping():
    with pytest.raises(ValueError, match=r"\[add\]"):
        mx.add(mx.zeros((2,)), mx.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"\[broadcast_to\]"):
        mx.broadcast_to(mx.array([1, 2]), (3,))
    with pytest.raises(TypeError, match=r"\[astype\]"):
        mx.array([1]).astype("float32")
    with pytest.raises(TypeError):
        mx.add(mx.array([1]), "x")
    with pytest.raises(TypeError, match="stream"):
        mx.add(mx.array([1]), 1, stream=3)


def test_shape_and_axis_errors():
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(mx.array([1, 2, 3]), (2, 2))
    with pytest.raises(IndexError, match=r"\[sum\]"):  # MLX's type
        mx.sum(mx.array([1, 2]), axis=3)


def test_reshape_errors():
    with pytest.raises(ValueError, match=r"\[reshape\]"):
        mx.reshape(mx.array([1, 2, 3]), (2, 2))
    with pytest.raises(ValueError):
        mx.arange(6).reshape(-1, -1)
    with pytest.raises(TypeError):
        mx.reshape(mx.array([1]), "x")
    with pytest.raises(ValueError):
        mx.reshape(mx.array([1]), [1] * 40)


ODD_VALUES = [
    None, "x", b"x", 1.5, -1, 0, 2**70, -(2**70), float("nan"), float("inf"),
    [], [[1], [2, 3]], (), {}, object(), mx.cpu, mx.float32, mx.array(1),
    mx.array([]), mx.array([[1, 2]]), np.zeros((0, 3)), [1, 2**40], [-1, -1],
    (2**40, 2**40), slice(1), Ellipsis, 1j,
]


def call_quietly(fn, *args, **kw):
    try:
        r = fn(*args, **kw)
    except (ValueError, TypeError, IndexError, NotImplementedError, MemoryError,
            RuntimeError, OverflowError, BufferError, KeyError, AttributeError) as e:
        return e
    if isinstance(r, mx.array):
        try:
            mx.eval(r)
            r.tolist()
        except (ValueError, IndexError, RuntimeError, MemoryError,
                NotImplementedError) as e:
            return e
    return r


SKIP = {"stream", "set_memory_limit", "set_cache_limit", "set_default_device",
        "set_default_stream", "set_wired_limit", "synchronize", "eval", "async_eval",
        "new_stream", "set_printoptions", "clear_streams"}  # global state


def public_functions():
    for name in sorted(dir(mx)):
        obj = getattr(mx, name)
        if name.startswith("_") or name in SKIP or not callable(obj):
            continue
        if isinstance(obj, (type, mx.Dtype)) or name in ("cpu", "gpu"):
            continue
        yield name, obj


def test_no_crash_on_odd_arguments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # save functions may write files
    big = mx.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    for name, fn in public_functions():
        for v in ODD_VALUES:
            call_quietly(fn, v)
            call_quietly(fn, big, v)
            call_quietly(fn, v, big)
            call_quietly(fn, big, v, v)
            call_quietly(fn, v, v, v, v)
            call_quietly(fn, big, axis=v)
            call_quietly(fn, big, shape=v)
            call_quietly(fn, big, dtype=v)
            call_quietly(fn, big, stream=v)


def test_no_crash_on_odd_array_use():
    a = mx.array(np.arange(12, dtype=np.int32).reshape(3, 4))
    for v in ODD_VALUES:
        b = mx.array(a)  # shares a's data until b is assigned to
        call_quietly(lambda: a[v])
        call_quietly(lambda: b.__setitem__(v, 1))
        call_quietly(lambda: b.__setitem__(0, v))
        call_quietly(lambda: a + v)
        call_quietly(lambda: v - a)
        call_quietly(lambda: a == v)
        call_quietly(lambda: mx.array(v))
        call_quietly(lambda: mx.array(a, dtype=v))
        call_quietly(lambda: a.at[v].add(1))
        for meth in dir(a):
            if not meth.startswith("_") and callable(getattr(a, meth)):
                call_quietly(getattr(a, meth), v)
    assert a.tolist() == np.arange(12).reshape(3, 4).tolist()


def test_signatures_are_introspectable():
    for name, fn in public_functions():
        try:
            inspect.signature(fn)
        except ValueError:
            pytest.fail(f"{name} has no text signature")
