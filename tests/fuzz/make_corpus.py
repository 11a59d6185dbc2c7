"""Regenerates the fuzz seed corpus (tests/fuzz/corpus/<format>/): small
valid files written by cmx (io_tool) and by the reference writers (numpy,
safetensors, gguf), so the fuzzers start from every writer's quirks.

Usage: python tests/fuzz/make_corpus.py [path/to/io_tool]
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
tool = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "io_tool"
out = HERE / "corpus"
for fmt in ["npy", "npz", "safetensors", "gguf"]:
    shutil.rmtree(out / fmt, ignore_errors=True)
    (out / fmt).mkdir(parents=True)

with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    subprocess.run([str(tool), "write", str(tmp)], check=True)
    for name in ["npy_float32.npy", "npy_bool_0d.npy", "npy_int8_empty.npy",
                 "npy_fortran.npy", "npy_bfloat16.npy", "npy_complex64.npy"]:
        shutil.copy(tmp / name, out / "npy" / f"cmx_{name}")
    for name in ["stored.npz", "deflated.npz"]:
        shutil.copy(tmp / name, out / "npz" / f"cmx_{name}")
    for name in ["model.safetensors", "model_bf16.safetensors"]:
        shutil.copy(tmp / name, out / "safetensors" / f"cmx_{name}")
    shutil.copy(tmp / "model.gguf", out / "gguf" / "cmx_model.gguf")

rng = np.random.default_rng(0)
np.save(out / "npy" / "np_big_endian.npy", np.arange(6, dtype=">f8"))
np.save(out / "npy" / "np_fortran.npy",
        np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32)))
np.savez(out / "npz" / "np_savez.npz", np.arange(4, dtype=np.int16),
         b=np.ones((2, 2), np.float32))
np.savez_compressed(out / "npz" / "np_compressed.npz",
                    a=np.zeros(64, np.float32), b=np.arange(3))

from safetensors.numpy import save_file  # noqa: E402

save_file({"w": rng.standard_normal((2, 3)).astype(np.float32),
           "i": np.arange(4, dtype=np.int64)},
          str(out / "safetensors" / "st_numpy.safetensors"),
          metadata={"format": "np"})

import gguf  # noqa: E402
from gguf import quants  # noqa: E402

T = gguf.GGMLQuantizationType
w = gguf.GGUFWriter(str(out / "gguf" / "gguf_py.gguf"), arch="seed")
w.add_array("tokens", ["a", "b"])
w.add_array("nested", [[1, 2], [3]])
w.add_float64("f64", 0.5)
w.add_tensor("f32", rng.standard_normal((2, 4)).astype(np.float32))
for qt, name in [(T.Q8_0, "q8_0"), (T.Q4_0, "q4_0.weight"),
                 (T.Q4_1, "q4_1.weight")]:
    w.add_tensor(name, quants.quantize(
        rng.standard_normal((1, 32)).astype(np.float32), qt), raw_dtype=qt)
for qt, nbytes in [(T.Q4_K, 144), (T.Q6_K, 210)]:
    raw = np.zeros((1, nbytes), np.uint8)
    w.add_tensor(qt.name.lower(), raw, raw_dtype=qt)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
for f in sorted(out.rglob("*")):
    if f.is_file():
        print(f.relative_to(out), f.stat().st_size)
