#!/usr/bin/env bash
# The distributed check for the lent 2-GPU machine (issue 18): NCCL under
# cmx's mx.distributed, both distributed examples on 2 GPUs, and the
# distributed benchmark. In the repository root:
#
#   bash scripts/gpu2-check.sh
#
# (device call: kind nvidia-h100-x2, carry [".carry/blas.tar.gz"]: the lent
# machines have no OpenBLAS; scripts/gpu-carry-blas.sh makes the archive.)
#
# Steps, each with a time limit inside an overall budget (BUDGET, default
# 560 s):
#   env       GPUs, driver, python/torch, where libnccl.so.2 is
#   build     the library and the Python extension only (build-gpu2,
#             Release, for the machine's python3), no C tests or benches;
#             a later call on the warm machine can reuse build-gpu2:
#             STEPS="examples bench" bash scripts/gpu2-check.sh
#   pytest    tests/python/test_distributed.py: the NCCL cases (every
#             collective, dtypes, 1 element .. 64 MiB, send/recv, split, a
#             killed peer, training) and both examples over NCCL, plus the
#             ring cases (quick, a sanity check of the same build)
#   examples  examples/distributed/data_parallel.py (--check against one
#             process) and tensor_parallel.py (SmolLM2's shape, 30 blocks)
#             on 2 GPUs through `cmx.launch --backend nccl`
#   bench     benchmarks/distributed_bench.py --part all (NCCL busbw 1 MiB ..
#             1 GiB against torch.distributed, data-parallel 2 GPUs vs 1,
#             then the CPU figures)
# STEPS (default "env build pytest examples bench") picks steps;
# STEPS_DRY=1 prints them instead of running them (scripts/_steps.sh).
# Logs go to build-gpu2/logs/<step>.log and $OUT (when set), with
# distributed_bench.json; the last lines are a summary. Exit status 0 only
# if every step passed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

BUILD=${BUILD:-build-gpu2}
BUDGET=${BUDGET:-560}
PY=${PYTHON:-$(command -v python3)}
LOGS=$BUILD/logs
STEPS=${STEPS:-env build pytest examples bench}
# step NAME CAP CMD, steps_summary (STEPS_DRY=1 prints the steps).
. scripts/_steps.sh
# NVLink multicast stays off on the lent machines (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1

report() {
  steps_summary gpu2-check
  [ -d "${OUT:-}" ] && [ -f "$BUILD/distributed_bench.json" ] &&
    cp "$BUILD/distributed_bench.json" "$OUT"/
  exit "$FAILED"
}

# libnccl.so.2: the loader's, else the one in python's packages (torch's
# nvidia-nccl wheel).
NCCL_DIR=""
if ! ldconfig -p | grep -q 'libnccl\.so\.2'; then
  for d in $("$PY" -c 'import site; print(" ".join(site.getsitepackages()))'); do
    f=$(find "$d" -name 'libnccl.so.2' 2>/dev/null | head -1)
    [ -n "$f" ] && NCCL_DIR=$(dirname "$f") && break
  done
  [ -n "$NCCL_DIR" ] && export LD_LIBRARY_PATH=$NCCL_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi

# OpenBLAS (and cJSON): the carried archive when there is one (made by
# scripts/gpu-carry-blas.sh), else the system's. Warnings do not fail this
# build (the lint gate is CI's; a newer gcc may warn).
CM=(-DCMAKE_BUILD_TYPE=Release -DCMX_BUILD_TESTS=OFF -DCMX_WERROR=OFF
  -DPython3_EXECUTABLE="$PY")
if [ -f .carry/blas.tar.gz ]; then
  rm -rf /tmp/cmx-blas && mkdir -p /tmp/cmx-blas && tar -xzf .carry/blas.tar.gz -C /tmp/cmx-blas
  CM+=(-DCMX_BLAS_LIBRARY=/tmp/cmx-blas/lib/libopenblas.so.0 -DCMX_BLAS_INCLUDE_DIR=/tmp/cmx-blas/include)
  [ -f /tmp/cmx-blas/include/cjson/cJSON.h ] &&
    CM+=(-DCJSON_INCLUDE_DIR=/tmp/cmx-blas/include -DCJSON_LIB=/tmp/cmx-blas/lib/libcjson.so)
  export LD_LIBRARY_PATH=/tmp/cmx-blas/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-SkylakeX}
fi
export CMX_CACHE_DIR=$PWD/$BUILD/kernel-cache
export PYTHONPATH=$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export BUILD PY

step env 30 'date -u; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -5
  echo "python: $PY"; "$PY" -c "import torch, numpy, pytest; print(\"torch\", torch.__version__, \"nccl\", torch.cuda.nccl.version(), \"gpus\", torch.cuda.device_count())"
  echo "libnccl.so.2: $(ldconfig -p | grep -m1 libnccl.so.2 || echo "${LD_LIBRARY_PATH%%:*}")"
  echo "NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"'
CM_Q=$(printf '%q ' "${CM[@]}")
step build 240 "cmake -S . -B \"\$BUILD\" $CM_Q >/dev/null &&
  cmake --build \"\$BUILD\" --target cmx_core_py -j \$(nproc) &&
  \"\$PY\" -c 'import cmx.core as mx; print(mx.default_device(), mx.device_count(mx.gpu), \"gpus, nccl:\", mx.distributed.is_available(\"nccl\"))'" || report
step pytest 200 '"$PY" -m pytest -q -p no:cacheprovider -rs tests/python/test_distributed.py -k "nccl or ring or example"'
step examples 100 'L="$PY -m cmx.launch --backend nccl -n 2"
  $L examples/distributed/data_parallel.py --check --steps 20 --batch-size 256 &&
  $L examples/distributed/tensor_parallel.py --random --layers 30 --tokens 16'
step bench 180 '"$PY" benchmarks/distributed_bench.py --part all --json "$BUILD/distributed_bench.json"'
report
