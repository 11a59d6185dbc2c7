"""Graph export (mx.export_function, import_function, exporter,
export_to_dot): traces saved with their constants, run again in this and in
another process, several traces, keyword and shapeless traces, the callback
form, and errors (as MLX: RuntimeError for files that cannot be imported,
ValueError for calls that match no trace)."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

import cmx.core as mx


def f(x, y):
    return mx.exp(x) * 2 + y


def test_roundtrip_with_constants(tmp_path):
    w = mx.random.normal((3, 2), key=mx.random.key(1))
    path = str(tmp_path / "fn.cmxfn")
    x = mx.array([[1.0, 2.0, 3.0]])
    mx.export_function(path, lambda a: (a @ w, mx.sum(a)), x)
    g = mx.import_function(path)
    out = g(x)
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_allclose(np.array(out[0]), np.array(x @ w), rtol=1e-6)
    assert out[1].item() == 6.0
    # another input of the same shape runs the same graph
    x2 = mx.array([[0.5, -1.0, 2.0]])
    np.testing.assert_allclose(np.array(g(x2)[0]), np.array(x2 @ w), rtol=1e-6)


def test_runs_in_another_process(tmp_path):
    path = str(tmp_path / "fn.cmxfn")
    w = mx.array([1.0, 2.0, 3.0])
    mx.export_function(path, lambda a: mx.exp(a) * w, mx.zeros(3))
    code = ("import cmx.core as mx\n"
            f"g = mx.import_function({path!r})\n"
            "print(g(mx.array([0.0, 1.0, 0.0]))[0].tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, env=dict(os.environ), timeout=120)
    assert r.returncode == 0, r.stderr
    got = eval(r.stdout.strip())
    np.testing.assert_allclose(got, [1.0, 2 * np.e, 3.0], rtol=1e-6)


def test_keywords_exporter_and_shapeless(tmp_path):
    x, y = mx.array([1.0, 2.0]), mx.array(1.0)
    kpath = str(tmp_path / "k.cmxfn")
    mx.export_function(kpath, f, x, y=y)
    g = mx.import_function(kpath)
    assert g(x, y=y)[0].tolist() == f(x, y).tolist()
    with pytest.raises(ValueError, match="No imported function found"):
        g(x, y)  # y was exported as a keyword

    epath = str(tmp_path / "e.cmxfn")
    with mx.exporter(epath, f) as e:
        assert isinstance(e, mx.FunctionExporter)
        e(x, y)
        e(mx.ones(3), y)
    g = mx.import_function(epath)
    assert g(mx.ones(3), y)[0].shape == (3,)
    assert g(x, y)[0].shape == (2,)
    with pytest.raises(ValueError, match="No imported function found"):
        g(mx.ones(4), y)

    spath = str(tmp_path / "s.cmxfn")
    mx.export_function(spath, f, x, y, shapeless=True)
    g = mx.import_function(spath)
    x4 = mx.array([0.0, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.array(g(x4, y)[0]), np.array(f(x4, y)),
                               rtol=1e-6)


def test_callback_and_dot(tmp_path):
    x, y = mx.array([1.0, 2.0]), mx.array(1.0)
    items = []
    mx.export_function(items.append, f, x, y)
    kinds = [d["type"] for d in items]
    assert kinds[:4] == ["inputs", "keyword_inputs", "outputs", "constants"]
    assert items[0]["inputs"] == [("A", (2,), mx.float32),
                                  ("B", (), mx.float32)]
    prims = [d["name"] for d in items if d["type"] == "primitive"]
    assert "Exp" in prims and prims[-1] == "Add"
    assert items[2]["outputs"][0][1:] == ((2,), mx.float32)
    buf = io.StringIO()
    mx.export_to_dot(buf, f(x, y))
    assert buf.getvalue().startswith("digraph {") and "Exp" in buf.getvalue()
    path = str(tmp_path / "g.dot")
    mx.export_to_dot(path, f(x, y))
    text = open(path).read()
    assert text.startswith("digraph {") and "Exp" in text


def test_errors(tmp_path):
    x = mx.array([1.0, 2.0])
    with pytest.raises(ValueError, match="Outputs can be either"):
        mx.export_function(str(tmp_path / "a"), lambda a: {"a": a}, x)
    with pytest.raises(ValueError):  # reading a traced value
        mx.export_function(str(tmp_path / "b"), lambda a: a * a.sum().item(),
                           x)
    with pytest.raises(RuntimeError, match=r"\[import_function\] Failed to open"):
        mx.import_function(str(tmp_path / "none"))
    bad = tmp_path / "bad"
    bad.write_bytes(b"garbage" * 3)
    with pytest.raises(RuntimeError, match=r"\[import_function\]"):
        mx.import_function(str(bad))
    good = str(tmp_path / "good.cmxfn")
    mx.export_function(good, f, x, mx.array(1.0))
    data = open(good, "rb").read()
    for n in range(0, len(data), max(1, len(data) // 40)):
        bad.write_bytes(data[:n])
        with pytest.raises(RuntimeError, match=r"\[import_function\]"):
            mx.import_function(str(bad))
    with pytest.raises(ValueError, match="No imported function found"):
        mx.import_function(good)(x)  # one input of two
