"""The demo (examples/demo.py): its short CI mode trains for real and must
beat chance by a wide margin; its IDX reader and PNG writer."""

import gzip
import os
import struct
import subprocess
import sys
import zlib

import pytest

import cmx.core as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
DATA = "/usr/share/datasets/fashion-mnist"
sys.path.insert(0, EXAMPLES)

import demo  # noqa: E402
import pngplot  # noqa: E402


def _run_demo(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, "demo.py"), *args],
                          capture_output=True, text=True, env=env, timeout=900)


@pytest.mark.skipif(not os.path.isdir(DATA),
                    reason="Debian's dataset-fashion-mnist is not installed "
                           "(scripts/bootstrap.sh installs it)")
def test_short_mode_learns(tmp_path):
    png = tmp_path / "plot.png"
    r = _run_demo("--short", "--device", "cpu", "--plot", str(png))
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "short mode" in out
    # The progress bar reports step, loss, samples/s and ETA.
    assert "46/46 loss" in out and "samples/s" in out
    assert "ETA" in out
    accs = [float(line.split("epoch 1: ")[1].split("%")[0])
            for line in out.splitlines() if "test accuracy after epoch 1" in line]
    assert len(accs) == 1
    # Chance is 10%; 46 Adam steps of LeNet reach about 75%.
    assert accs[0] > 50.0, out
    assert "eager step:" in out
    if demo.compile_available():
        assert "compiled step:" in out and "x eager" in out
    else:
        assert "not available yet" in out
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"


def _write_idx(path, arr_bytes, shape, compress):
    header = struct.pack(">HBB", 0, 0x08, len(shape)) + struct.pack(f">{len(shape)}I", *shape)
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header + bytes(arr_bytes))


def test_read_idx_and_data_option(tmp_path):
    # A tiny MNIST-format folder: plain and gzip files, 6 training and 4
    # test images of 28x28 with known pixels.
    n_train, n_test = 6, 4
    pix = [(i * 7) % 256 for i in range(n_train * 784)]
    _write_idx(tmp_path / "train-images-idx3-ubyte.gz", pix, (n_train, 28, 28), True)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", [3, 1, 4, 1, 5, 9], (n_train,), False)
    _write_idx(tmp_path / "t10k-images-idx3-ubyte", pix[: n_test * 784], (n_test, 28, 28), False)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", [2, 7, 1, 8], (n_test,), True)

    x = demo.read_idx(str(tmp_path / "train-images-idx3-ubyte.gz"))
    assert x.shape == (n_train, 28, 28) and x.dtype == mx.uint8
    assert x.reshape(-1).tolist() == pix

    xtr, ytr, xte, yte = demo.load_dataset(str(tmp_path))
    assert xtr.shape == (n_train, 28, 28, 1) and xtr.dtype == mx.float32
    assert abs(xtr[0, 0, 1, 0].item() - 7 / 255) < 1e-7
    assert ytr.tolist() == [3, 1, 4, 1, 5, 9] and yte.tolist() == [2, 7, 1, 8]

    # The whole program on that folder (one step of batch 4).
    r = _run_demo("--data", str(tmp_path), "--device", "cpu", "--epochs", "1",
                  "--batch-size", "4", "--no-compare", "--plot", str(tmp_path / "p.png"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "6 training, 4 test images" in r.stdout
    assert "1/1 loss" in r.stdout


def test_bad_data_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="train-images"):
        demo.load_dataset(str(tmp_path))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x01x")
    with pytest.raises(ValueError, match="not an IDX file"):
        demo.read_idx(str(tmp_path / "train-images-idx3-ubyte"))
    r = _run_demo("--data", str(tmp_path / "missing"), "--device", "cpu")
    assert r.returncode != 0
    assert "cannot read the dataset" in r.stderr


def _png_pixels(data):
    """Decodes the 8-bit RGB, unfiltered PNGs that pngplot writes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h = ihdr[0], ihdr[1]
    raw = zlib.decompress(idat)
    assert len(raw) == h * (1 + 3 * w)
    rows = [raw[y * (1 + 3 * w) + 1:(y + 1) * (1 + 3 * w)] for y in range(h)]
    return w, h, rows


def test_blas_coretype_choice():
    import blas_setup

    assert blas_setup.choose_coretype({"avx512f", "avx512bw", "avx512vl", "avx512dq",
                                       "avx2", "fma"}) == "SkylakeX"
    assert blas_setup.choose_coretype({"avx2", "fma", "sse4_2"}) == "Haswell"
    assert blas_setup.choose_coretype({"sse4_2"}) is None


def test_png_writer():
    c = pngplot.Canvas(5, 4)
    c.set(1, 2, (10, 20, 30))
    c.line(0, 0, 4, 0, (255, 0, 0))
    w, h, rows = _png_pixels(c.png())
    assert (w, h) == (5, 4)
    assert rows[2][3:6] == bytes([10, 20, 30])
    assert rows[0] == bytes([255, 0, 0]) * 5
    assert rows[3] == bytes([255, 255, 255]) * 5

    fig = pngplot.Figure(300, 150, panels=2)
    fig.panel(0, "LOSS", "STEP", [1, 2, 3], [2.0, 1.0, 0.5], smooth=2)
    fig.panel(1, "ACC", "EPOCH", [1, 2], [80.0, 85.0], points=True, integer_x=True)
    w, h, rows = _png_pixels(fig.canvas.png())
    colours = {bytes(r[i:i + 3]) for r in rows for i in range(0, len(r), 3)}
    assert bytes(pngplot.BLUE) in colours and bytes(pngplot.ORANGE) in colours


def test_gpu_probe_reports_instead_of_raising():
    # Without a GPU (or without its kernels) the probe returns the error so
    # that the demo falls back to the CPU; with one it trains a step.
    err = demo.gpu_trains()
    if mx.is_available(mx.gpu):
        assert err is None or "gpu" in str(err).lower()
    else:
        assert isinstance(err, (RuntimeError, ValueError))
