#!/usr/bin/env bash
# The host's side of a GPU program, on a machine without a GPU: runs it
# against the fake CUDA driver (tests/c/fake_cuda) in its no-op mode
# (FAKE_CUDA_NOOP=1: every kernel loads and runs as nothing, so only cmx's
# host work, NVRTC's first builds and the fake's bookkeeping remain) and
# a no-op cuBLASLt (tests/c/fake_cuda/fake_cublaslt.c: products
# "succeed" computing nothing), so the time a step takes is what cmx's
# host code costs for it.
#
#   scripts/host-profile.sh                 # SmolLM2-135M-shaped decoding
#   scripts/host-profile.sh prog.py args    # any Python program
#   PERF=1 scripts/host-profile.sh ...      # also `perf record` it, and
#                                           # print the top symbols
#
# The default program decodes the synthetic model of
# benchmarks/llm_gpu_bench.py after a one-token prompt (a longer prompt
# takes the products' other kernels) and prints tokens/s:
# with no GPU work, that is the host's rate. Results of the kernels are
# garbage (outputs keep their allocation pattern); only timings mean
# anything. Needs the CUDA toolkit's NVRTC (the fake is built with it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
PY=${PY:-$ROOT/.venv/bin/python}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target cmx_core_py cmx_fake_cuda cmx_fake_cublaslt >/dev/null
if [ ! -e "$BUILD/fake_cuda/libcuda.so.1" ]; then
  echo "host-profile: no fake driver was built (is NVRTC installed?)" >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  set -- "$ROOT/benchmarks/llm_gpu_bench.py" --device gpu --prompt 1 --tokens 200 \
    --profile-steps 0
fi
export FAKE_CUDA_NOOP=1 FAKE_CUDA_DELAY=0
export LD_LIBRARY_PATH=$BUILD/fake_cuda:$BUILD/fake_cuda/noop${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
if [ "${PERF:-0}" = 1 ]; then
  data=$(mktemp /tmp/host-profile.XXXXXX)
  perf record -F 2000 -o "$data" -- "$PY" "$@" 2>&1 | grep -v "not emulated"
  perf report -i "$data" --no-children --sort dso,sym 2>/dev/null |
    grep -v "^#" | grep "%" | head -40
  rm -f "$data"
else
  "$PY" "$@" 2>&1 | grep -v "not emulated"
fi
