"""Differential suite, files and interop: gguf metadata values,
safetensors 8-bit float tensors, comparisons with Python containers,
DLPack export and import, and shapes whose size overflows (see
_mlx_diff.py)."""
import json
import os
import struct
import tempfile

import numpy as np
import pytest

from _mlx_diff import DTYPES, Cases, check, cx, mlx, np_values, make_rng

pytestmark = pytest.mark.skipif(mlx is None, reason="mlx[cpu] not installed")

rng = make_rng(23)
C = Cases()
TMP = tempfile.mkdtemp(prefix="cmx_mlx_diff_io_")


def case(cid, f):
    C.add(cid, f)


def path(m, name):
    """A file of the module's own (MLX and cmx never share one)."""
    return os.path.join(TMP, f"{m.__name__.split('.')[0]}_{name}")


# ---------------------------------------------------------------- gguf
def _gguf_meta(m, name, value):
    p = path(m, name + ".gguf")
    m.save_gguf(p, {"w": m.ones((2,))}, {"k": value})
    _, md = m.load(p, return_metadata=True)
    return md["k"]


for dt in DTYPES:
    for shape in [(), (3,)]:
        v = np_values(rng, shape, dt)
        case(f"io/gguf_meta/{dt}/{shape}",
             lambda m, A, v=v, dt=dt, s=shape: _gguf_meta(
                 m, f"{dt}{len(s)}", A(v, dt)))
for v in ["text", ["a", "b"], 3, 2.5, [1, 2], [], [[1]]]:
    case(f"io/gguf_meta/py/{v!r}",
         lambda m, A, v=v: _gguf_meta(m, "py", v))
case("io/gguf_meta/2d",
     lambda m, A: _gguf_meta(m, "2d", m.zeros((2, 2))))


# ---------------------------------------------------------------- safetensors
def _st_file(m, name, dtype, data, shape):
    hdr = json.dumps({"a": {"dtype": dtype, "shape": list(shape),
                            "data_offsets": [0, len(data)]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    p = path(m, name + ".safetensors")
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + data)
    return p


F8 = bytes([0x38, 0x40, 0xC0, 0x7E, 0x01, 0x00, 0x80, 0x7F])
for dtype in ["F8_E4M3", "F8_E5M2", "F8_E4M3FN", "I4"]:
    for shape in [(8,), (2, 4)]:
        case(f"io/safetensors/{dtype}/{shape}",
             lambda m, A, d=dtype, s=shape: m.load(
                 _st_file(m, d, d, F8, s))["a"])
case("io/safetensors/F8_E4M3/from_fp8",
     lambda m, A: m.from_fp8(m.load(_st_file(m, "fp8v", "F8_E4M3", F8, (8,)))
                             ["a"], dtype=m.float32))
case("io/safetensors/F8_E4M3/roundtrip",
     lambda m, A: _st_roundtrip(m))


def _st_roundtrip(m):
    a = m.load(_st_file(m, "fp8r", "F8_E4M3", F8, (8,)))["a"]
    p = path(m, "fp8r_out.safetensors")
    m.save_safetensors(p, {"a": a})
    return m.load(p)["a"]


# ---------------------------------------------------------------- comparisons
class _Obj:
    def __repr__(self):
        return "Obj"


_x = np.array([1, 2, 3], np.int32)
for opname, op in [("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b),
                   ("lt", lambda a, b: a < b), ("le", lambda a, b: a <= b),
                   ("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b)]:
    for oname, other in [("list", [1, 2, 3]), ("tuple", (1, 2, 3)),
                         ("short_list", [1, 2]), ("nested", [[1, 2, 3]]),
                         ("obj", _Obj()), ("str", "x"), ("none", None),
                         ("float", 2.0), ("ndarray", np.array([1, 5, 3]))]:
        case(f"compare/{opname}/{oname}",
             lambda m, A, op=op, o=other: op(A(_x, "int32"), o))
        case(f"compare/{opname}/{oname}/reflected",
             lambda m, A, op=op, o=other: op(o, A(_x, "int32")))
case("compare/equal_fn/list",
     lambda m, A: m.equal(A(_x, "int32"), [1, 2, 3]))
case("compare/add/list", lambda m, A: A(_x, "int32") + [1, 2, 3])
case("compare/in_list", lambda m, A: 2 in [A(_x, "int32")])


# ---------------------------------------------------------------- dlpack
def _export(m, A):
    a = A(np.arange(6, dtype=np.float32).reshape(2, 3), "float32")
    n1, n2 = np.from_dlpack(a), np.from_dlpack(a)
    return (n1, n1.flags.writeable, n1.__array_interface__["data"][0]
            == n2.__array_interface__["data"][0])


def _export_view(m, A):
    a = A(np.arange(6, dtype=np.float32).reshape(2, 3), "float32")[:, 1]
    n = np.from_dlpack(a)
    return n, n.strides


def _import(m, A):
    x = np.arange(4, dtype=np.float32)
    a = m.array(x)  # MLX copies what it builds from a NumPy array
    x[0] = 7
    return a


class _Producer:
    def __init__(self, x):
        self.x = x

    def __dlpack__(self, **kw):
        return self.x.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()


def _import_dlpack(m, A):
    x = np.arange(4, dtype=np.float32)
    a = m.array(_Producer(x))
    x[0] = 7
    return a


def _alive(m, A):
    a = A(np.arange(3, dtype=np.float32), "float32")
    n = np.from_dlpack(a)
    del a
    import gc

    gc.collect()
    return n


case("dlpack/export", _export)
case("dlpack/export_view", _export_view)
case("dlpack/export_keeps_alive", _alive)
case("dlpack/array_from_numpy", _import)
case("dlpack/array_from_producer", _import_dlpack)
case("dlpack/device", lambda m, A: A(_x, "int32").__dlpack_device__())
case("dlpack/roundtrip",
     lambda m, A: m.array(np.from_dlpack(A(_x, "int32"))))

# ---------------------------------------------------------------- overflow
G = 1 << 30
_one = np.zeros((1, 1, 1), np.float32)
for name, f in [
        ("zeros", lambda m, A: m.zeros((G, G, G))),
        ("ones", lambda m, A: m.ones((G, G, 16))),
        ("full", lambda m, A: m.full((G, G, G), 2.0)),
        ("broadcast_to", lambda m, A: m.broadcast_to(A(_one), (G, G, G))),
        ("broadcast_op", lambda m, A: m.broadcast_to(A(_one), (G, 1, 1))
         + m.broadcast_to(A(_one), (1, G, G))),
        ("random", lambda m, A: m.random.uniform(shape=(G, G, G))),
        ("zeros_like", lambda m, A: m.zeros_like(
            m.broadcast_to(A(_one), (G, G, G)))),
        ("bytes", lambda m, A: m.zeros((G, G, 4), dtype=m.float64))]:
    case(f"overflow/{name}", f)
for name, f in [
        ("reshape", lambda m, A: m.zeros((2,)).reshape(G, G, G)),
        ("concatenate", lambda m, A: m.concatenate(
            [m.broadcast_to(A(_one), (G, G, 1))] * 2)),
        ("tile", lambda m, A: m.tile(m.zeros((2,)), (G, G, G)))]:
    case(f"overflow/{name}", f)


@pytest.mark.parametrize("case_id,fn,tol", C.params())
def test_mlx_diff_io(case_id, fn, tol):
    check(case_id, fn, tol)


# ---------------------------------------------------------------- cmx only
@pytest.mark.parametrize("shape", [(G, G, G), (1 << 62, 4), (1 << 40, 1 << 40),
                                   (G, G, 1 << 3)])
def test_overflowing_shapes_raise(shape):
    """A shape whose element count or byte size does not fit raises a clear
    error in every path that builds one (MLX 0.32 wraps the count)."""
    z = cx.zeros((1,) * len(shape))
    half = tuple(shape[:-1]) + (max(shape[-1] // 2, 1),)
    for f in [lambda: cx.zeros(shape), lambda: cx.ones(shape, cx.float64),
              lambda: cx.full(shape, 2.0), lambda: cx.broadcast_to(z, shape),
              lambda: cx.random.uniform(shape=shape),
              lambda: cx.zeros_like(cx.broadcast_to(z, half)).reshape(shape),
              lambda: cx.concatenate([cx.broadcast_to(z, half)] * 3, -1),
              lambda: cx.tile(z, shape),
              lambda: z + cx.broadcast_to(z, shape)]:
        with pytest.raises((ValueError, OverflowError),
                           match=r"\[\w+\] .*(overflow|too large|exceed)"):
            f()


def test_dlpack_capsule_keeps_array_alive():
    a = cx.arange(5, dtype=cx.float32) * 2
    n = np.from_dlpack(a)
    addr = n.__array_interface__["data"][0]
    del a
    import gc

    gc.collect()
    junk = [cx.ones((5,)) * 9 for _ in range(50)]
    cx.eval(*junk)
    assert n.__array_interface__["data"][0] == addr
    assert n.tolist() == [0, 2, 4, 6, 8]


def test_device_info_architecture_from_the_driver():
    """device_info()["architecture"]: the CPU's as MLX prints it (checked
    against MLX above, device/info_architecture), a GPU's sm_<major><minor>
    read from the driver: run on the fake CUDA driver (compute capability
    9.9) next to the build, in a fresh process."""
    import subprocess
    import sys

    fake = os.path.join(os.path.dirname(os.path.dirname(cx.__file__)), "..",
                        "fake_cuda")
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        pytest.skip("no fake CUDA driver in this build")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.abspath(fake),
               CMX_DEFAULT_DEVICE="cpu")
    code = ("import cmx.core as mx; i = mx.device_info(mx.gpu); "
            "print(i['architecture'], i['compute_capability'], "
            "mx.device_info(mx.cpu)['architecture'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    gpu, cc0, cc1, cpu = out.replace("(", "").replace(")", "").replace(
        ",", "").split()
    assert gpu == "sm_99" and (cc0, cc1) == ("9", "9")
    assert cpu == mlx.device_info()["architecture"]


def test_overflow_errors_name_the_op_called():
    b = cx.broadcast_to(cx.zeros((1,), dtype=cx.bool_), (1 << 62,))
    for name, f in [("meshgrid", lambda: cx.meshgrid(b, cx.zeros((4,), cx.bool_))),
                    ("concatenate", lambda: cx.concatenate([b, b])),
                    ("stack", lambda: cx.stack([b] * 4)),
                    ("pad", lambda: cx.pad(b, 1 << 62)),
                    ("repeat", lambda: cx.repeat(b, 4)),
                    ("outer", lambda: cx.outer(b, b)),
                    ("astype", lambda: b.astype(cx.float32))]:
        with pytest.raises(ValueError, match=rf"^\[{name}\] .*too large"):
            f()
