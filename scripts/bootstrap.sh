#!/usr/bin/env bash
# Installs the Debian packages cmx needs to build and test, if missing.
# Idempotent and quiet when everything is present. Needs root (or sudo) and
# apt-get to install; otherwise it says what to install and fails.
# `bootstrap.sh fuzz` installs what `make fuzz` needs instead (clang and
# its libFuzzer runtime).
set -euo pipefail

PACKAGES=(cmake make gcc libc6-dev libopenblas-dev zlib1g-dev libcjson-dev
          python3-dev python3-venv pkg-config dataset-fashion-mnist fortunes
          openmpi-bin libopenmpi-dev)
if [ "${1:-}" = "fuzz" ]; then
  PACKAGES=(cmake make clang libclang-rt-14-dev zlib1g-dev libcjson-dev)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  echo "cmx bootstrap: this is not a Debian system; install these (or your" >&2
  echo "distribution's equivalents) and re-run: ${missing[*]}" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "cmx bootstrap: missing packages and not root. Run:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
echo "cmx bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
