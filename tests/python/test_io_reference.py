"""Cross-checks cmx's file formats against the reference implementations.

Files written by cmx (through the io_tool helper, tests/c/io_tool.c) must
load in numpy, the `safetensors` package and the `gguf` package; files those
write must load in cmx with the same values. This test does not import cmx:
it drives the C helper, whose path is $CMX_IO_TOOL (default build/io_tool).

Needs: numpy, pytest, safetensors, gguf.
"""

import json
import os
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = Path(os.environ.get("CMX_IO_TOOL", ROOT / "build" / "io_tool"))

pytestmark = pytest.mark.skipif(
    not TOOL.exists(), reason=f"io_tool not built at {TOOL} (set CMX_IO_TOOL)"
)

DTYPES = [
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
    "int64", "float16", "bfloat16", "float32", "float64", "complex64",
]
NUMPY_DTYPES = [d for d in DTYPES if d != "bfloat16"]


def value(dtype, n):
    """The known values io_tool writes (same formula as value() in C).

    bfloat16 comes back as its uint16 bit patterns."""
    i = np.arange(n, dtype=np.int64)
    if dtype == "bool":
        return i % 3 == 0
    if dtype[0] in "ui":
        u = np.array([(k * 2654435761 + 7) % 2**64 for k in range(n)],
                     dtype=np.uint64)
        bits = int(dtype.lstrip("uint"))
        return u.astype(np.dtype(f"uint{bits}")).view(np.dtype(f"{dtype}"))
    if dtype == "float64":
        return (i - 10).astype(np.float64) * 0.1
    if dtype == "complex64":
        re = ((i - 10) * 0.5).astype(np.float32)
        im = (i * 0.25).astype(np.float32)
        return (re + 1j * im).astype(np.complex64)
    f = ((i - 10) * 0.375).astype(np.float32)
    if dtype == "bfloat16":
        return (f.view(np.uint32) >> 16).astype(np.uint16)
    return f.astype(dtype)


def run_tool(*args):
    r = subprocess.run([str(TOOL), *map(str, args)], capture_output=True,
                       text=True, timeout=300)
    return r.stdout.strip() + r.stderr.strip()


def tool_ok(*args):
    out = run_tool(*args)
    if out.startswith("ERROR NotImplementedError"):  # optional dependency
        pytest.skip(out)
    assert out.endswith("OK"), out


def bits(a):
    """Arrays of 2-byte void (cmx bfloat16 in .npy) as uint16."""
    return a.view(np.uint16) if a.dtype.kind == "V" else a


def dump(path, tmp_path):
    """Loads `path` with cmx; returns ({name: array}, [(key, value)])."""
    out = tmp_path / ("dump_" + Path(path).name)
    out.mkdir()
    tool_ok("dump", path, out)
    manifest = json.loads((out / "manifest.json").read_text())
    arrays = {}
    for e in manifest["arrays"]:
        a = np.load(out / e["file"])
        assert list(a.shape) == e["shape"]
        arrays[bytes.fromhex(e["name"]).decode()] = (e["dtype"], a)
    meta = [(bytes.fromhex(m["key"]).decode(), m["value"])
            for m in manifest["metadata"]]
    return arrays, meta


def plain(v):
    """A dumped metadata value as Python data (strings decoded)."""
    if v["type"] == "string":
        return bytes.fromhex(v["hex"]).decode()
    if v["type"] == "array":
        return [plain(x) for x in v["value"]]
    return v["value"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmx_written")
    tool_ok("write", d)
    return d


# ---------------- cmx writes, references read ----------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_loads_cmx_npy(written, dtype):
    a = np.load(written / f"npy_{dtype}.npy")
    assert a.shape == (2, 3, 4)
    if dtype == "bfloat16":
        assert a.dtype.kind == "V" and a.dtype.itemsize == 2
    else:
        assert a.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(bits(a), value(dtype, 24).reshape(2, 3, 4))
    z = np.load(written / f"npy_{dtype}_0d.npy")
    assert z.shape == () and bits(z)[()] == value(dtype, 1)[0]
    e = np.load(written / f"npy_{dtype}_empty.npy")
    assert e.shape == (0, 3) and e.dtype.itemsize == a.dtype.itemsize


def test_numpy_loads_cmx_strided_npy(written):
    f = np.load(written / "npy_fortran.npy")
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    np.testing.assert_array_equal(f, value("int32", 12).reshape(3, 4))
    b = np.load(written / "npy_broadcast.npy")
    np.testing.assert_array_equal(b, np.tile(value("float32", 4), (3, 1)))


@pytest.mark.parametrize("name,method", [("stored", zipfile.ZIP_STORED),
                                         ("deflated", zipfile.ZIP_DEFLATED)])
def test_numpy_loads_cmx_npz(written, name, method):
    path = written / f"{name}.npz"
    if not path.exists():
        pytest.skip("io_tool was built without zlib")
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None  # every CRC checks
        assert {i.compress_type for i in z.infolist()} == {method}
    with np.load(path) as f:
        assert set(f.files) == set(DTYPES) | {"scalar", "empty"}
        for d in DTYPES:
            np.testing.assert_array_equal(bits(f[d]),
                                          value(d, 24).reshape(2, 3, 4))
        assert f["scalar"].shape == () and f["scalar"] == value("float32", 1)[0]
        assert f["empty"].shape == (0,) and f["empty"].dtype == np.int8


def test_safetensors_loads_cmx(written):
    st = pytest.importorskip("safetensors.numpy")
    from safetensors import safe_open

    path = written / "model.safetensors"
    tensors = st.load_file(str(path))
    want = [d for d in NUMPY_DTYPES if d != "complex64"]
    assert set(tensors) == set(want)
    for d in want:
        assert tensors[d].dtype == np.dtype(d)
        np.testing.assert_array_equal(tensors[d], value(d, 24).reshape(2, 3, 4))
    with safe_open(str(path), framework="numpy") as f:
        assert f.metadata() == {"format": "mlx", "unicode": 'héllo "q" \\ \n'}
    # bfloat16 ("BF16") passes the reference header validation; numpy has no
    # bfloat16, so compare the raw bytes.
    path = written / "model_bf16.safetensors"
    with safe_open(str(path), framework="numpy") as f:
        assert list(f.keys()) == ["bfloat16"]
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    assert header["bfloat16"]["dtype"] == "BF16"
    assert header["bfloat16"]["shape"] == [2, 3, 4]
    lo, hi = header["bfloat16"]["data_offsets"]
    got = np.frombuffer(raw[8 + n + lo:8 + n + hi], dtype=np.uint16)
    np.testing.assert_array_equal(got, value("bfloat16", 24))


def test_gguf_reader_loads_cmx(written):
    gguf = pytest.importorskip("gguf")
    r = gguf.GGUFReader(str(written / "model.gguf"))
    T = gguf.GGMLQuantizationType
    types = {"float32": T.F32, "float16": T.F16, "bfloat16": T.BF16,
             "float64": T.F64, "int8": T.I8, "int16": T.I16, "int32": T.I32,
             "int64": T.I64}
    tensors = {t.name: t for t in r.tensors}
    assert set(tensors) == set(types)
    for d, qt in types.items():
        t = tensors[d]
        assert t.tensor_type == qt
        assert list(t.shape) == [4, 3, 2]  # ggml order
        data = np.asarray(t.data)
        if d == "bfloat16":
            data = data.view(np.uint16)
        np.testing.assert_array_equal(data.reshape(-1), value(d, 24))
    V = gguf.GGUFValueType
    want = {
        "t.uint8": (V.UINT8, 200), "t.int8": (V.INT8, -100),
        "t.uint16": (V.UINT16, 65000), "t.int16": (V.INT16, -32000),
        "t.uint32": (V.UINT32, 4000000000), "t.int32": (V.INT32, -2000000000),
        "t.int64": (V.INT64, -(2**63)), "t.uint64": (V.UINT64, 2**64 - 1),
        "t.bool": (V.BOOL, True), "t.float32": (V.FLOAT32, 1.25),
        "t.float64": (V.FLOAT64, 0.1), "t.string": (V.STRING, "héllo"),
        "t.array.int32": (V.ARRAY, [1, -2, 3]),
        "t.array.uint8": (V.ARRAY, [0, 255]),
        "t.array.bool": (V.ARRAY, [True, False]),
        "t.array.string": (V.ARRAY, ["a", "bc"]),
        "t.array.float64": (V.ARRAY, [0.5, -0.25]),
    }
    for key, (vt, v) in want.items():
        field = r.fields[key]
        assert field.types[0] == vt, key
        got = field.contents()
        if isinstance(v, list):
            assert list(got) == v, key
        else:
            assert got == v, key
    nested = r.fields["t.nested"]  # arrays of arrays: the reader flattens
    assert nested.types[:2] == [V.ARRAY, V.ARRAY]
    assert [int(nested.parts[i][0]) for i in nested.data] == [1, 2, 3]


# ---------------- references write, cmx reads ----------------

def random_array(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "complex64":
        return (rng.standard_normal(shape) +
                1j * rng.standard_normal(shape)).astype(np.complex64)
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def check_dumped(arrays, name, want, dtype=None):
    d, got = arrays[name]
    assert d == (dtype or want.dtype.name), name
    assert got.shape == want.shape, name
    np.testing.assert_array_equal(bits(got), want)


def test_cmx_loads_numpy_npy(tmp_path):
    rng = np.random.default_rng(0)
    cases = {}
    for d in NUMPY_DTYPES:
        for k, shape in enumerate([(), (0,), (2, 3, 4), (3, 0, 2)]):
            cases[f"{d}_{k}"] = random_array(rng, d, shape)
    cases["fortran"] = np.asfortranarray(random_array(rng, "float32", (5, 7)))
    cases["big_i4"] = random_array(rng, "int32", (4, 3)).astype(">i4")
    cases["big_f8"] = random_array(rng, "float64", (6,)).astype(">f8")
    cases["big_c8"] = random_array(rng, "complex64", (2, 2)).astype(">c8")
    cases["big_fortran_u2"] = np.asfortranarray(
        random_array(rng, "uint16", (3, 5)).astype(">u2"))
    # numpy writes 2-byte void as '|V2'; cmx (like MLX) reads it as bfloat16.
    cases["void2"] = np.frombuffer(rng.bytes(12), dtype="V2")
    for name, a in cases.items():
        np.save(tmp_path / f"{name}.npy", a)
        arrays, _ = dump(tmp_path / f"{name}.npy", tmp_path)
        if name == "void2":
            check_dumped(arrays, "", a.view(np.uint16), "bfloat16")
        else:
            check_dumped(arrays, "", a.astype(a.dtype.newbyteorder("=")),
                         a.dtype.newbyteorder("=").name)


@pytest.mark.parametrize("compressed", [False, True])
def test_cmx_loads_numpy_npz(tmp_path, compressed):
    rng = np.random.default_rng(1)
    named = {f"x_{d}": random_array(rng, d, (3, 5)) for d in NUMPY_DTYPES}
    named["scalar"] = np.float64(2.5)
    named["empty"] = np.zeros((0, 4), np.int16)
    named["big"] = random_array(rng, "float32", (300, 1000))  # > 1 MiB
    positional = [np.arange(5, dtype=np.int32), np.ones((2, 2), np.float32)]
    save = np.savez_compressed if compressed else np.savez
    save(tmp_path / "n.npz", *positional, **named)
    arrays, meta = dump(tmp_path / "n.npz", tmp_path)
    assert meta == []
    assert set(arrays) == set(named) | {"arr_0", "arr_1"}
    for name, a in named.items():
        a = np.asarray(a)
        check_dumped(arrays, name, a)
    check_dumped(arrays, "arr_0", positional[0])
    check_dumped(arrays, "arr_1", positional[1])


def test_cmx_loads_safetensors(tmp_path):
    st = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(2)
    tensors = {f"t.{d}": random_array(rng, d, (4, 3, 2))
               for d in NUMPY_DTYPES if d != "complex64"}
    tensors["scalar"] = np.array(3.5, dtype=np.float32)
    tensors["empty"] = np.zeros((0, 3), np.float16)
    meta = {"format": "np", "note": 'ünïcode "x"'}
    st.save_file(tensors, str(tmp_path / "s.safetensors"), metadata=meta)
    arrays, got_meta = dump(tmp_path / "s.safetensors", tmp_path)
    assert set(arrays) == set(tensors)
    for name, a in tensors.items():
        check_dumped(arrays, name, a)
    assert {k: plain(v) for k, v in got_meta} == meta
    assert all(v["type"] == "string" for _, v in got_meta)


def q_reconstruct(arrays, name, qtype_name):
    """Dequantizes cmx's MLX-style (weights, scales, biases) triple."""
    prefix = name[:-len(".weight")] if name.endswith(".weight") else name
    _, w = arrays[name]
    _, s = arrays[prefix + ".scales"]
    _, b = arrays[prefix + ".biases"]
    nbits = 8 if qtype_name == "Q8_0" else 4
    per = 32 // nbits
    w = w.astype(np.uint64)
    q = np.stack([(w >> (nbits * k)) & ((1 << nbits) - 1) for k in range(per)],
                 axis=-1).reshape(w.shape[:-1] + (w.shape[-1] * per,))
    s = np.repeat(s.astype(np.float64), 32, axis=-1)
    b = np.repeat(b.astype(np.float64), 32, axis=-1)
    return q * s + b


def test_cmx_loads_gguf(tmp_path):
    gguf = pytest.importorskip("gguf")
    from gguf import quants

    T = gguf.GGMLQuantizationType
    V = gguf.GGUFValueType
    rng = np.random.default_rng(3)
    path = tmp_path / "w.gguf"
    w = gguf.GGUFWriter(str(path), arch="cmxtest")
    w.add_uint8("m.u8", 250)
    w.add_int8("m.i8", -7)
    w.add_uint16("m.u16", 65535)
    w.add_int16("m.i16", -32768)
    w.add_uint32("m.u32", 2**32 - 1)
    w.add_int32("m.i32", -(2**31))
    w.add_uint64("m.u64", 2**64 - 2)
    w.add_int64("m.i64", -(2**62))
    w.add_float32("m.f32", -0.75)
    w.add_float64("m.f64", 1e-300)
    w.add_bool("m.bool", True)
    w.add_string("m.str", "tökens")
    w.add_array("m.arr.i32", [5, -6, 7])
    w.add_array("m.arr.str", ["x", "yz", ""])
    w.add_array("m.arr.f32", [0.5, 1.5])
    w.add_key_value("m.arr.u64", [2**64 - 1, 0], V.ARRAY, sub_type=V.UINT64)
    w.add_array("m.nested", [[1, 2], [3]])
    plain_tensors = {
        "f32": rng.standard_normal((3, 8)).astype(np.float32),
        "f16": rng.standard_normal((2, 4, 6)).astype(np.float16),
        "f64": rng.standard_normal((5,)).astype(np.float64),
        "i8": random_array(rng, "int8", (4, 4)),
        "i16": random_array(rng, "int16", (7,)),
        "i32": random_array(rng, "int32", (2, 2)),
        "i64": random_array(rng, "int64", (3,)),
    }
    for name, a in plain_tensors.items():
        w.add_tensor(name, a)
    bf_src = rng.standard_normal((4, 16)).astype(np.float32)
    bf = quants.quantize(bf_src, T.BF16)
    w.add_tensor("bf16", bf.view(np.uint8), raw_dtype=T.BF16)  # bytes
    quantized = {}
    for qt, name in [(T.Q8_0, "q8_0"), (T.Q4_0, "q4_0.weight"),
                     (T.Q4_1, "q4_1.weight")]:
        src = rng.standard_normal((4, 64)).astype(np.float32)
        raw = quants.quantize(src, qt)
        w.add_tensor(name, raw, raw_dtype=qt)
        quantized[name] = (qt, raw)
    for qt, name, nbytes in [(T.Q4_K, "q4_k.weight", 144),
                             (T.Q6_K, "q6_k.weight", 210)]:
        raw = np.frombuffer(rng.bytes(2 * 2 * nbytes), np.uint8).copy()
        raw = raw.reshape(2, 2 * nbytes)
        for blk in range(4):  # plausible float16 super-block scales
            base = (blk % 2) * nbytes
            at = base + (208 if qt == T.Q6_K else 0)
            raw[blk // 2, at:at + 2] = np.frombuffer(
                np.float16(rng.uniform(0.001, 0.05)).tobytes(), np.uint8)
            if qt == T.Q4_K:
                raw[blk // 2, at + 2:at + 4] = np.frombuffer(
                    np.float16(rng.uniform(0.001, 0.05)).tobytes(), np.uint8)
        w.add_tensor(name, raw, raw_dtype=qt)
        quantized[name] = (qt, raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    arrays, meta = dump(path, tmp_path)
    meta = {k: v for k, v in meta}
    expect = {
        "m.u8": ("uint8", 250), "m.i8": ("int8", -7),
        "m.u16": ("uint16", 65535), "m.i16": ("int16", -32768),
        "m.u32": ("uint32", 2**32 - 1), "m.i32": ("int32", -(2**31)),
        "m.u64": ("uint64", 2**64 - 2), "m.i64": ("int64", -(2**62)),
        "m.f32": ("float32", -0.75), "m.f64": ("float64", 1e-300),
        "m.bool": ("bool", 1), "m.str": ("string", "tökens"),
        "m.arr.i32": ("array", [5, -6, 7]),
        "m.arr.str": ("array", ["x", "yz", ""]),
        "m.arr.f32": ("array", [0.5, 1.5]),
        "m.arr.u64": ("array", [2**64 - 1, 0]),
        "m.nested": ("array", [[1, 2], [3]]),
        "general.architecture": ("string", "cmxtest"),
    }
    for key, (t, v) in expect.items():
        assert meta[key]["type"] == t, key
        assert plain(meta[key]) == v, key
    assert meta["m.arr.u64"]["elem"] == "uint64"
    assert meta["m.nested"]["value"][0]["elem"] == "int32"

    for name, a in plain_tensors.items():
        check_dumped(arrays, name, a)
    check_dumped(arrays, "bf16", bf.view(np.uint16).reshape(4, 16), "bfloat16")
    for name, (qt, raw) in quantized.items():
        ref = quants.dequantize(raw, qt).astype(np.float64)
        if qt == T.Q6_K:  # dequantized to float16, as MLX does
            d, got = arrays[name]
            assert d == "float16" and got.shape == ref.shape
            np.testing.assert_allclose(got.astype(np.float64), ref,
                                       rtol=2e-3, atol=1e-6)
            continue
        got = q_reconstruct(arrays, name, qt.name)
        assert arrays[name][0] == "uint32"
        assert got.shape == ref.shape, name
        tol = 2e-3 * np.abs(ref).max()
        np.testing.assert_allclose(got, ref, rtol=0, atol=tol, err_msg=name)


def test_numpy_loads_cmx_zip64_directory(tmp_path):
    # More than 65535 members need zip64 end-of-directory records; cmx reads
    # its own such files back in test_io.c (test_npz_many_members).
    n = 70000
    tool_ok("many", tmp_path / "many.npz")
    with np.load(tmp_path / "many.npz") as f:
        assert len(f.files) == n
        for i in range(0, n, 6997):
            assert f[f"a{i}"].dtype == np.int32 and f[f"a{i}"] == 3 * i - 7
    assert run_tool("sum", tmp_path / "many.npz") == (
        f"n={n} sum={sum(i * (3 * i - 7) for i in range(n))}\nOK")


# ---------------- errors ----------------

def test_cmx_reports_malformed_files(written, tmp_path):
    for src in ["model.gguf", "model.safetensors", "stored.npz",
                "npy_float32.npy"]:
        data = (written / src).read_bytes()
        cut = tmp_path / ("cut_" + src)
        cut.write_bytes(data[: len(data) // 2])
        out = tmp_path / ("out_" + src)
        out.mkdir()
        msg = run_tool("dump", cut, out)
        if msg.startswith("ERROR NotImplementedError"):
            continue  # built without the optional dependency
        assert msg.startswith("ERROR ValueError [load"), msg
