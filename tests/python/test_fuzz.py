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
# About 15 s of CPU (a worker runs 10,000 calls: 0.2 ms a call in all;
# 20,000 calls in batches of 2,000 took as long before the harness was
# made faster).
CALLS = int(os.environ.get("CMX_FUZZ_CALLS", "60000"))


def build_dir():
    # build/python/cmx/core.*.so -> build
    return os.path.dirname(os.path.dirname(os.path.dirname(mx.__file__)))


def test_api_fuzzer_bounded_run():
    p = subprocess.run(
        [sys.executable, PYFUZZ, "--build", build_dir(), "--seed", "19",
         "--calls", str(CALLS), "--batch", "10000", "--regressions"],
        capture_output=True, text=True, timeout=1800)
    print(p.stdout[-20000:])
    assert p.returncode == 0, p.stdout[-20000:] + p.stderr[-5000:]
    assert f"{CALLS} calls" in p.stdout and "0 failure(s)" in p.stdout
