"""The bounded run of the Python API fuzzer (tests/fuzz/pyfuzz.py): random
calls to every public function with a fixed seed, in subprocesses, against
the build this test imports. No call may crash, hang, or raise SystemError;
a failure prints the minimal reproducer. `make fuzz-python` runs long ones
(and under the sanitizer build); `make test-asan` runs a bounded one there.
"""
import os
import subprocess
import sys

import cmx.core as mx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYFUZZ = os.path.join(ROOT, "tests", "fuzz", "pyfuzz.py")
# About 30 s on one core of the 2-core CI machine.
CALLS = int(os.environ.get("CMX_FUZZ_CALLS", "20000"))


def build_dir():
    # build/python/cmx/core.*.so -> build
    return os.path.dirname(os.path.dirname(os.path.dirname(mx.__file__)))


def test_api_fuzzer_bounded_run():
    p = subprocess.run(
        [sys.executable, PYFUZZ, "--build", build_dir(), "--seed", "19",
         "--calls", str(CALLS), "--batch", "2000", "--regressions"],
        capture_output=True, text=True, timeout=1800)
    print(p.stdout[-20000:])
    assert p.returncode == 0, p.stdout[-20000:] + p.stderr[-5000:]
    assert f"{CALLS} calls" in p.stdout and "0 failure(s)" in p.stdout
