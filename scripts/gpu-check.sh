#!/usr/bin/env bash
# The GPU check, for the lent GPU machine (CUDA 13, cmake, gcc, 16 cores, no
# network, no apt). In the repository root:
#
#   bash scripts/gpu-check.sh
#
# Steps, each with a time limit inside an overall budget of ~9 minutes:
#   env      what the machine has: GPU, driver, CUDA, NVRTC, BLAS, tools
#   build    cmake configure + build into build-gpu (Release, -Werror, -j16);
#            should only -Werror fail it, the build is redone without it
#            (step build_no_werror) so the GPU still gets checked
#   coverage which primitive has a CPU / GPU kernel (build-gpu/cmx_coverage)
#   ctest    the whole C suite (test_gpu runs the GPU cases when it sees one)
#   test_gpu the GPU tests again (test_gpu, test_gpu_layer, test_devices)
#            with CMX_TEST_REQUIRE_GPU=1: a missing GPU, NVRTC, CCCL
#            headers or cuBLASLt is a failure there
#   bench    every build-gpu/bench_* program, if any
#   python   the extension for the machine's python3 and the pytest suite
#   pybench  benchmarks/*.py (numpy/torch/jax comparisons)
# CTEST_CAP, CTEST_COST: see the ctest step. STEPS (default: all) picks steps, e.g. STEPS="ctest test_gpu" on a warm
# machine whose build-gpu is built; STEPS_DRY=1 prints the steps instead of
# running them (scripts/_steps.sh).
# Logs go to build-gpu/gpu-logs/<step>.log and, when $OUT is set, to $OUT;
# the last lines printed are a summary. Exit status 0 only if every step
# passed.
#
# OpenBLAS: the system's is used when CMake can find it (the -dev package,
# or the runtime's libopenblas.so.0 alone, plus cblas.h). A machine with
# neither needs a copy carried from the dev machine: run
# scripts/gpu-carry-blas.sh there and carry `.carry`; this script then
# unpacks .carry/blas.tar.gz into /tmp/cmx-blas and points CMake
# (CMX_BLAS_LIBRARY, CMX_BLAS_INCLUDE_DIR) and the loader at it. The OpenBLAS
# inside numpy/scipy wheels is not usable (renamed symbols).
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-16}
BUDGET=${BUDGET:-560} # seconds for all steps
LOGS=$BUILD/gpu-logs
# step NAME CAP COMMAND, steps_summary (STEPS picks steps, STEPS_DRY=1
# prints them).
. scripts/_steps.sh

finish() {
  steps_summary gpu-check
  exit "$FAILED"
}

# ---------------- env ----------------
have_system_blas() {
  local lib=0 hdr=0 d
  for d in /usr/lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread \
           /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib64 /usr/lib \
           /usr/local/lib; do
    if ls "$d"/libopenblas.so "$d"/libopenblas.so.0 >/dev/null 2>&1; then
      lib=1
    fi
  done
  for d in /usr/include /usr/include/openblas /usr/include/x86_64-linux-gnu \
           /usr/include/x86_64-linux-gnu/openblas-pthread /usr/local/include; do
    [ -f "$d/cblas.h" ] && hdr=1
  done
  [ "$lib" -eq 1 ] && [ "$hdr" -eq 1 ]
}

env_report() {
  echo "date: $(date -u)"
  echo "host: $(uname -a)"
  echo "cores: $(nproc)"
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
      --format=csv,noheader
  command -v nvcc >/dev/null && nvcc --version | tail -2
  echo "cmake: $(cmake --version | head -1)"
  echo "gcc: $(gcc --version | head -1)"
  echo "libraries known to the loader:"
  ldconfig -p | grep -E "libcuda\.so|libnvrtc\.so|openblas|libcblas|libblas\.so" |
    sed 's/^/  /'
  echo "CUDA_HOME=${CUDA_HOME:-} CUDA_PATH=${CUDA_PATH:-}"
  ls -d /usr/local/cuda* 2>/dev/null | sed 's/^/  /'
  if have_system_blas; then
    echo "blas: system OpenBLAS with cblas.h found"
  else
    echo "blas: no system OpenBLAS (library + cblas.h); candidates:"
    timeout 20 find / -xdev \( -name 'libopenblas*.so*' -o -name 'libcblas.so*' \
      -o -name 'libblas.so*' -o -name 'libscipy_openblas*' -o -name cblas.h \) \
      2>/dev/null | head -20 | sed 's/^/  /'
  fi
}
export -f have_system_blas env_report
step env 60 env_report

CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DCMX_WERROR=ON)
# CMX_GPU_CHECK_CARRIED_BLAS=1 prefers the carried copy (to test that path).
if [ "${CMX_GPU_CHECK_CARRIED_BLAS:-0}" = 1 ] || ! have_system_blas; then
  if [ -f .carry/blas.tar.gz ]; then
    rm -rf /tmp/cmx-blas && mkdir -p /tmp/cmx-blas &&
      tar -xzf .carry/blas.tar.gz -C /tmp/cmx-blas
    CMAKE_ARGS+=(-DCMX_BLAS_LIBRARY=/tmp/cmx-blas/lib/libopenblas.so.0
                 -DCMX_BLAS_INCLUDE_DIR=/tmp/cmx-blas/include)
    # The loader (and the linker, for libgfortran) find the carried copy.
    export LD_LIBRARY_PATH=/tmp/cmx-blas/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # the carried pure-Python test references (gguf), see gpu-carry-blas.sh
    [ -d /tmp/cmx-blas/py ] &&
      export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/cmx-blas/py
    echo "blas: using the carried OpenBLAS in /tmp/cmx-blas" |
      tee -a "$LOGS/env.log"
    # OpenBLAS 0.3.21 (Debian 12's) does not know newer Xeons and falls back
    # to its SSE3 "Prescott" kernels there (sgemm 4x slower); name the core.
    if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
      if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
      elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell
      fi
      echo "blas: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-auto}" | tee -a "$LOGS/env.log"
    fi
  else
    echo "blas: NO OpenBLAS here and no .carry/blas.tar.gz: run" \
         "scripts/gpu-carry-blas.sh on the dev machine and carry .carry." \
         "Trying the build anyway." | tee -a "$LOGS/env.log"
  fi
fi

# The carried pure-Python test references (gguf, for test_llm) whether or
# not the carried OpenBLAS is used.
if [ ! -d /tmp/cmx-blas/py ] && [ -f .carry/blas.tar.gz ]; then
  mkdir -p /tmp/cmx-blas && tar -xzf .carry/blas.tar.gz -C /tmp/cmx-blas ./py
fi
case ":${PYTHONPATH:-}:" in
  *:/tmp/cmx-blas/py:*) ;;
  *) [ -d /tmp/cmx-blas/py ] &&
       export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}/tmp/cmx-blas/py ;;
esac

# cJSON (safetensors loading): the system's, else the carried copy.
if [ ! -f /usr/include/cjson/cJSON.h ] && [ -f .carry/blas.tar.gz ]; then
  # Only cJSON goes on the loader path (not the carried OpenBLAS).
  rm -rf /tmp/cmx-cjson && mkdir -p /tmp/cmx-cjson &&
    tar -xzf .carry/blas.tar.gz -C /tmp/cmx-cjson ./include/cjson \
      ./lib/libcjson.so ./lib/libcjson.so.1 2>/dev/null
  if [ -f /tmp/cmx-cjson/include/cjson/cJSON.h ]; then
    CMAKE_ARGS+=(-DCJSON_INCLUDE_DIR=/tmp/cmx-cjson/include
                 -DCJSON_LIB=/tmp/cmx-cjson/lib/libcjson.so)
    export LD_LIBRARY_PATH=/tmp/cmx-cjson/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "cjson: using the carried cJSON in /tmp/cmx-cjson" | tee -a "$LOGS/env.log"
  fi
fi

# ---------------- build ----------------
export BUILD JOBS
CMAKE_ARGS_Q=$(printf '%q ' "${CMAKE_ARGS[@]}")
step build 240 "cmake -S . -B \"\$BUILD\" $CMAKE_ARGS_Q &&
                 cmake --build \"\$BUILD\" -j \"\$JOBS\""
rc=$?
[ "$rc" -eq 124 ] && finish # out of time: nothing more can run
if [ "$rc" -ne 0 ]; then
  # A newer gcc may warn where the dev machine's does not: the build step
  # stays failed, but the GPU is still checked with warnings allowed.
  step build_no_werror 180 "cmake -S . -B \"\$BUILD\" $CMAKE_ARGS_Q \
      -DCMX_WERROR=OFF && cmake --build \"\$BUILD\" -j \"\$JOBS\"" || finish
fi

# Kernel cache of this run (test_gpu makes its own private ones).
export CMX_CACHE_DIR=$PWD/$BUILD/kernel-cache
export CMX_TEST_REQUIRE_GPU=0

# ---------------- tests ----------------
step coverage 30 '"$BUILD/cmx_coverage"'
# CTEST_CAP (default 300) limits the step; CTEST_COST names a CTestCostData.txt
# from an earlier run so ctest starts the longest tests first (cold kernel
# caches make the GPU tests slow on a fresh machine); CTEST_TIMEOUT (240) is
# the limit of one test; CTEST_JOBS (12) the tests at once (NVRTC compiles on
# the host's cores: 16 on the lent machines).
export CTEST_TIMEOUT=${CTEST_TIMEOUT:-240}
if [ -n "${CTEST_COST:-}" ] && [ -f "$CTEST_COST" ]; then
  mkdir -p "$BUILD/Testing/Temporary" && cp "$CTEST_COST" "$BUILD/Testing/Temporary/CTestCostData.txt"
fi
step ctest "${CTEST_CAP:-300}" 'cd "$BUILD" && ctest --output-on-failure -j "${CTEST_JOBS:-12}" --timeout "${CTEST_TIMEOUT:-240}"'
step test_gpu 150 'rc=0; for t in test_gpu test_gpu_layer test_devices; do
  CMX_TEST_REQUIRE_GPU=1 CMX_TEST_COMPILE_ALL=1 "$BUILD/$t" || rc=1; done; exit $rc'

# ---------------- benchmarks ----------------
benches() {
  local found=0 rc=0 b
  # bench_gpu first: it is what this machine is for.
  for b in "$BUILD"/bench_gpu $(ls "$BUILD"/bench_* | grep -v '/bench_gpu$'); do
    [ -x "$b" ] || continue
    found=1
    echo "--- $b"
    "$b" || rc=1
  done
  [ "$found" -eq 1 ] || echo "(no bench_* programs)"
  return $rc
}
export -f benches
step bench 150 benches

# ---------------- python ----------------
# The extension against the machine's python3 (numpy and pytest are in
# its image), the pytest suite (GPU cases run here), and the Python
# benchmarks (CMX_GPU_CHECK_PY_BENCH=0 skips them).
pysuite() {
  python3 -c "import numpy, pytest" || { echo "python3 lacks numpy/pytest"; return 1; }
  cmake -S . -B "$BUILD" -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null &&
    cmake --build "$BUILD" -j "$JOBS" || return 1
  [ -d "$BUILD/python/cmx" ] || { echo "no Python headers: extension not built"; return 1; }
  # The suite runs as PY_JOBS concurrent pytest processes, each on every
  # PY_JOBS-th collected test (CMX_PYTEST_SHARD, tests/python/conftest.py):
  # the GPU suite is mostly host work (NVRTC compiles, Python), so it fits
  # the machine's per-call limit this way; a log per shard.
  local jobs=${PY_JOBS:-8} i rc=0
  for i in $(seq 0 $((jobs - 1))); do
    CMX_PYTEST_SHARD=$i/$jobs PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} \
      python3 -m pytest -q -p no:cacheprovider tests/python \
      > "$LOGS/pytest-shard$i.log" 2>&1 &
  done
  for i in $(seq 0 $((jobs - 1))); do wait -n || rc=1; done
  for i in $(seq 0 $((jobs - 1))); do
    echo "--- shard $i: $(tail -1 "$LOGS/pytest-shard$i.log")"
    grep -E "^(FAILED|ERROR) " "$LOGS/pytest-shard$i.log" | head -40
  done
  # why they failed (the step's log is what comes back from the machine)
  for i in $(seq 0 $((jobs - 1))); do
    grep -qE "^(FAILED|ERROR) " "$LOGS/pytest-shard$i.log" || continue
    echo "--- shard $i failures:"
    sed -n '/^=* FAILURES =*$/,/^=* short test summary/p' \
      "$LOGS/pytest-shard$i.log" | grep -E '^(_{3,}|E |[^ ].*:[0-9]+: )' | head -60
  done
  return $rc
}
pybench() {
  local rc=0 b
  for b in benchmarks/*.py; do
    case $(basename "$b") in _*) continue ;; esac # helpers, not benchmarks
    echo "--- $b"
    PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} timeout 120 python3 "$b" || rc=1
  done
  return $rc
}
export -f pysuite pybench
step python "${PY_CAP:-150}" pysuite
# PYBENCH_CAP (default 200) limits the benchmarks step (all of them take ~300 s on an H100).
if [ "${CMX_GPU_CHECK_PY_BENCH:-1}" = 1 ]; then step pybench "${PYBENCH_CAP:-200}" pybench; fi
finish
