"""The example scripts of examples/ run and print what they promise."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def run(script, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_grad():
    out = run("grad.py")
    assert "grad(sin)(pi)         = array(-1, dtype=float32)" in out
    assert "dloss/dx (argnums=1)  = array([-1, 1], dtype=float32)" in out
    assert "{'weight': array(-1, dtype=float32), 'bias': array(0, dtype=float32)}" in out
    assert "through stop_gradient = {'weight': array(-1, dtype=float32), " \
           "'bias': array(1, dtype=float32)}" in out


def test_vmap():
    out = run("vmap.py")
    assert "same result: True shape (4096, 100)" in out
    assert "direct xs + ys.T agrees: True" in out


def test_custom_function():
    out = run("custom_function.py")
    lines = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    assert lines["vjp (custom)  "] == lines["vjp (autodiff)"]
    assert "nan" in lines["naive gradient  "]
    assert lines["custom gradient "].strip() == "array([0.731059, 1], dtype=float32)"


def test_compile_gelu():
    out = run("compile_gelu.py", "--shape", "4,64,256", "--iters", "3")
    assert out.count("Time per iteration") == 2
    assert "compiled is " in out
    # the fused kernel computes each element with the same float32 steps
    assert "max |compiled - plain| = 0\n" in out
    assert "max |compile(nn.gelu) - plain| = 0\n" in out


def test_transformer_lm_learns(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"abcabcabcabd " * 400)
    out = run("transformer_lm.py", "--data", str(corpus), "--steps", "30", "--report", "10",
              "--dims", "32", "--heads", "2", "--layers", "1", "--context", "16",
              "--batch", "8", "--lr", "1e-2", "--sample", "20")
    steps = [line for line in out.splitlines() if line.startswith("step")]
    assert len(steps) == 3 and all("tokens/s" in s for s in steps)
    first = float(steps[0].split("loss")[1].split()[0])
    last = float(steps[-1].split("loss")[1].split()[0])
    # A repetitive corpus: the loss falls far below log(256) = 5.5.
    assert last < first and last < 2.0, out
    assert "sample: " in out


@pytest.mark.skipif(not os.path.isdir("/usr/share/games/fortunes"),
                    reason="Debian's fortunes package is not installed "
                           "(scripts/bootstrap.sh installs it)")
def test_transformer_lm_reads_fortunes():
    sys.path.insert(0, EXAMPLES)
    import transformer_lm

    data = transformer_lm.read_corpus("/usr/share/games/fortunes")
    assert len(data) > 100_000 and b"%\n" in data
