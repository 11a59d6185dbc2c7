"""Saving and loading (.npy, .npz, .safetensors, .gguf), against NumPy
where it reads the same files."""
import io
import os
import pathlib

import numpy as np
import pytest

import cmx.core as mx
from conftest import ALL_DTYPES, np_dtype

NPY_DTYPES = [d for d in ALL_DTYPES if d != mx.bfloat16]


def values(dt, shape=(2, 3)):
    x = (np.arange(np.prod(shape)).reshape(shape) % 5 - 2).astype(np.float64)
    return x.astype(np_dtype(dt))


@pytest.mark.parametrize("dt", NPY_DTYPES)
def test_npy_roundtrip_and_numpy(dt, tmp_path):
    x = values(dt)
    path = str(tmp_path / "a")
    mx.save(path, mx.array(x, dtype=dt))  # the extension is appended
    assert os.path.exists(path + ".npy")
    np.testing.assert_array_equal(np.load(path + ".npy"), x)
    y = mx.load(path + ".npy")
    assert y.dtype == dt
    np.testing.assert_array_equal(np.array(y), x)
    np.save(str(tmp_path / "b.npy"), x)
    np.testing.assert_array_equal(np.array(mx.load(str(tmp_path / "b.npy"))), x)


def test_npy_documented_example(tmp_path):
    a = mx.array([1.0])
    mx.save(str(tmp_path / "array"), a)
    b = mx.load(str(tmp_path / "array.npy"))
    assert b.dtype == mx.float32 and b.tolist() == [1.0]


def test_npy_strided_and_lazy(tmp_path):
    a = (mx.arange(12).reshape(3, 4) + 1).T
    mx.save(str(tmp_path / "t.npy"), a)
    np.testing.assert_array_equal(np.load(str(tmp_path / "t.npy")), (np.arange(12).reshape(3, 4) + 1).T)


@pytest.mark.parametrize("compressed", [False, True])
def test_npz(compressed, tmp_path):
    save = mx.savez_compressed if compressed else mx.savez
    a, b = mx.array([1.0]), mx.array([[2, 3]], dtype=mx.int16)
    path = str(tmp_path / "arrays")
    save(path, a, b=b)
    d = mx.load(path + ".npz")
    assert set(d) == {"arr_0", "b"}
    assert d["arr_0"].tolist() == [1.0] and d["b"].dtype == mx.int16
    ref = np.load(path + ".npz")
    np.testing.assert_array_equal(ref["b"], [[2, 3]])
    np.savez(str(tmp_path / "n.npz"), x=np.arange(4), y=np.eye(2, dtype=np.float32))
    d = mx.load(str(tmp_path / "n.npz"))
    np.testing.assert_array_equal(np.array(d["x"]), np.arange(4))
    np.testing.assert_array_equal(np.array(d["y"]), np.eye(2))


@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_safetensors_roundtrip(dt, tmp_path):
    x = mx.array(values(mx.float32), dtype=dt)
    path = str(tmp_path / "m")
    mx.save_safetensors(path, {"w": x, "s": mx.array(7)}, metadata={"k": "v"})
    d, meta = mx.load(path + ".safetensors", return_metadata=True)
    assert meta == {"k": "v"}
    assert d["w"].dtype == dt and d["w"].tolist() == x.tolist()
    assert d["s"].item() == 7
    assert set(mx.load(path + ".safetensors")) == {"w", "s"}


def test_gguf_roundtrip_and_metadata(tmp_path):
    path = str(tmp_path / "g")
    arrays = {"f": mx.array([[1.5, -2.0]]), "i": mx.array([1, 2, 3], dtype=mx.int32),
              "h": mx.array([0.5], dtype=mx.float16)}
    meta = {"name": "cmx", "tags": ["a", "b"], "n": mx.array(3, dtype=mx.uint32),
            "v": mx.array([1.5, 2.5])}
    mx.save_gguf(path, arrays, meta)
    d, m = mx.load(path + ".gguf", return_metadata=True)
    for k, v in arrays.items():
        assert d[k].dtype == v.dtype and d[k].tolist() == v.tolist()
    assert m["name"] == "cmx" and m["tags"] == ["a", "b"]
    assert m["n"].item() == 3 and m["n"].dtype == mx.uint32
    assert m["v"].tolist() == [1.5, 2.5]
    with pytest.raises(TypeError):
        mx.save_gguf(path, {"b": mx.array([True])})


def test_file_objects_and_paths(tmp_path):
    f = io.BytesIO()
    mx.save(f, mx.arange(3))
    f.seek(0)
    np.testing.assert_array_equal(np.load(f), [0, 1, 2])
    f.seek(0)
    assert mx.load(f, format="npy").tolist() == [0, 1, 2]
    p = tmp_path / "w.safetensors"
    with open(p, "wb") as fh:
        mx.save_safetensors(fh, {"w": mx.ones((2, 2))})
    with open(p, "rb") as fh:
        assert mx.load(fh)["w"].tolist() == [[1.0, 1.0], [1.0, 1.0]]
    mx.save(pathlib.Path(tmp_path / "p.npy"), mx.array([4]))
    assert mx.load(pathlib.Path(tmp_path / "p.npy")).tolist() == [4]
    g = io.BytesIO()
    mx.savez(g, x=mx.arange(2))
    g.seek(0)
    assert mx.load(g, format="npz")["x"].tolist() == [0, 1]


def test_io_errors(tmp_path):
    with pytest.raises(OSError):
        mx.load(str(tmp_path / "missing.npy"))
    with pytest.raises(ValueError, match="Unknown file format"):
        mx.load(str(tmp_path / "x.abc"))
    with pytest.raises(ValueError, match="infer file format"):
        mx.load(str(tmp_path / "x"))
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"not a numpy file at all")
    with pytest.raises(ValueError):
        mx.load(str(bad))
    with pytest.raises(ValueError, match="metadata"):
        mx.save(str(tmp_path / "m.npy"), mx.array(1)) or mx.load(str(tmp_path / "m.npy"), return_metadata=True)
    with pytest.raises(TypeError):
        mx.save(42, mx.array(1))
    with pytest.raises(TypeError):
        mx.save_safetensors(str(tmp_path / "s"), {"a": mx.array(1)}, metadata={"k": 1})
    with pytest.raises(TypeError):
        mx.save_safetensors(str(tmp_path / "s"), [mx.array(1)])
    with pytest.raises(OSError):
        mx.save(str(tmp_path / "no" / "such" / "dir" / "a.npy"), mx.array(1))


@pytest.mark.parametrize("ext", ["npy", "safetensors", "gguf"])
def test_load_is_lazy(ext, tmp_path, device):
    # As MLX: mx.load reads headers; each array reads its bytes when it is
    # evaluated (so bytes changed after loading show, and a file truncated
    # after loading fails that evaluation, not the load). On the GPU the
    # Load kernel reads on the host and copies up.
    path = str(tmp_path / f"w.{ext}")
    a = mx.arange(256, dtype=mx.float32)
    if ext == "npy":
        mx.save(path, a)
    elif ext == "safetensors":
        mx.save_safetensors(path, {"w": a})
    else:
        mx.save_gguf(path, {"w": a})
    size = os.path.getsize(path)
    loaded = mx.load(path, stream=device)
    w = loaded if ext == "npy" else loaded["w"]
    with open(path, "r+b") as f:  # the last element's bytes
        f.seek(size - 4 if ext != "gguf" else _gguf_last(path, size))
        f.write(np.float32(-1.0).tobytes())
    assert w[-1].item() == -1.0 and w[0].item() == 0.0
    again = mx.load(path, stream=device)
    w2 = again if ext == "npy" else again["w"]
    os.truncate(path, size - 512)
    with pytest.raises(RuntimeError, match=r"\[load\] Unable to read from"):
        mx.eval(w2)


def test_load_large_on_device(tmp_path, device):
    # More than one 64 MiB piece of the GPU's Load (read, then copied up):
    # every byte arrives, in order; used on the device as any array.
    n = (70 << 20) // 4 + 3
    want = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    path = str(tmp_path / "big.npy")
    np.save(path, want)
    got = mx.load(path, stream=device)
    with mx.stream(device):
        total = mx.sum(got * 2)
    np.testing.assert_array_equal(np.array(got), want)
    assert abs(total.item() - 2 * float(want.astype(np.float64).sum())) < 1.0


def _gguf_last(path, size):
    # gguf pads after the data to its alignment: find the last element.
    data = open(path, "rb").read()
    return data.rindex(np.float32(255.0).tobytes())
