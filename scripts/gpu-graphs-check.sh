#!/usr/bin/env bash
# CUDA graphs on against off, for the lent GPU machine (what must pass before
# graph.c's DEFAULT_ON becomes 1). In the repository root:
#
#   bash scripts/gpu-graphs-check.sh
#
# Builds only what it runs into $BUILD (default build-gpu, gpu-check.sh's:
# after that script on a warm machine nothing is rebuilt), then, each part
# under its own time limit, logs in $OUT when set (else $BUILD/graphs-logs):
#   ctests.log  test_gpu_graphs, test_transforms_order with CMX_CUDA_GRAPHS=1
#               and =0, test_gpu_layer and test_gpu with graphs on
#               (CMX_TEST_REQUIRE_GPU=1)
#   bench.log   benchmarks/gpu_graphs_bench.py with graphs off, on, and on
#               with cuBLASLt captured (CMX_CUDA_GRAPH_CAPTURE=1)
#   py_on.log, py_off.log  the pytest files $PYFILES with graphs on and off,
#               timed (--durations), each mode with its own cold kernel cache
#               (CMX_CACHE_DIR) so compiles weigh the same in both
# The summary (summary.log) ends with each part's time and result.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build-gpu}
L=${OUT:-$BUILD/graphs-logs}
mkdir -p "$L"
rm -f "$L"/*.log
T0=$(date +%s)
say() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$L/summary.log"; }
A=(-DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v python3)")
if [ -f .carry/blas.tar.gz ]; then # gpu-check.sh's carried OpenBLAS, cJSON
  mkdir -p /tmp/cmx-blas && tar -xzf .carry/blas.tar.gz -C /tmp/cmx-blas
  export LD_LIBRARY_PATH=/tmp/cmx-blas/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  A+=(-DCMX_BLAS_LIBRARY=/tmp/cmx-blas/lib/libopenblas.so.0
      -DCMX_BLAS_INCLUDE_DIR=/tmp/cmx-blas/include)
  [ -f /usr/include/cjson/cJSON.h ] ||
    A+=(-DCJSON_INCLUDE_DIR=/tmp/cmx-blas/include
        -DCJSON_LIB=/tmp/cmx-blas/lib/libcjson.so)
  grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=SkylakeX
fi
say "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1 | head -1)"
G=()
[ -f "$BUILD/CMakeCache.txt" ] || ! command -v ninja >/dev/null || G=(-G Ninja)
{ cmake -S . -B "$BUILD" "${G[@]}" "${A[@]}" &&
  cmake --build "$BUILD" -j "${JOBS:-16}" --target cmx test_gpu_graphs test_gpu \
    test_gpu_layer test_transforms_order cmx_core_py cmx_python_files; } \
  > "$L/build.log" 2>&1 || { say "build: FAIL"; tail -30 "$L/build.log"; exit 1; }
say "build: ok"

export CMX_TEST_REQUIRE_GPU=1
( cd "$BUILD" || exit 1
  for g in 1 0; do
    for t in test_gpu_graphs test_transforms_order; do
      echo "=== $t CMX_CUDA_GRAPHS=$g"
      CMX_CUDA_GRAPHS=$g timeout 90 "./$t" 2>&1 | tail -20
    done
  done
  for t in test_gpu_layer test_gpu; do
    echo "=== $t CMX_CUDA_GRAPHS=1"
    CMX_CUDA_GRAPHS=1 timeout "${TGPU:-120}" "./$t" 2>&1 | tail -8
  done ) > "$L/ctests.log" 2>&1
say "ctests: $(grep -cE ' [0-9]+ passed, 0 failed' "$L/ctests.log") of 6 clean"

export PYTHONPATH=$PWD/$BUILD/python PYTHONUNBUFFERED=1
for m in off on cap; do
  case $m in
    off) E=(CMX_CUDA_GRAPHS=0) ;;
    on) E=(CMX_CUDA_GRAPHS=1) ;;
    cap) E=(CMX_CUDA_GRAPHS=1 CMX_CUDA_GRAPH_CAPTURE=1) ;;
  esac
  echo "=== ${E[*]}" >> "$L/bench.log"
  env "${E[@]}" CMX_CACHE_DIR="/tmp/cmx-graphs-bench-$m" timeout 90 \
    python3 benchmarks/gpu_graphs_bench.py >> "$L/bench.log" 2>&1
done
say "bench: $(grep -c 'us per op' "$L/bench.log") figures"

PYFILES=${PYFILES:-tests/python/test_compile.py tests/python/test_transforms_memory.py tests/python/test_conv.py tests/python/test_fast.py}
for m in off on; do
  g=0; [ $m = on ] && g=1
  s=$(date +%s%N)
  # shellcheck disable=SC2086 # PYFILES: a list of files
  CMX_CUDA_GRAPHS=$g CMX_CACHE_DIR="/tmp/cmx-graphs-py-$m" timeout "${PYT:-240}" \
    python3 -m pytest -q -p no:cacheprovider --durations=15 $PYFILES \
    > "$L/py_$m.log" 2>&1
  rc=$?
  say "pytest graphs $m: rc $rc, $((($(date +%s%N) - s) / 1000000)) ms: $(tail -1 "$L/py_$m.log")"
done
