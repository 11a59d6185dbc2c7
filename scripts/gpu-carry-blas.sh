#!/usr/bin/env bash
# Packs this machine's OpenBLAS into .carry/blas.tar.gz for a GPU machine
# that has none (scripts/gpu-check.sh unpacks it there). Run it on the dev
# machine, then name `.carry` in the device run's carry list.
#
# What goes in: libopenblas.so.0 (BLAS, CBLAS and LAPACK), the Fortran
# runtime it links (libgfortran.so.5, libquadmath.so.0), the CBLAS
# headers (cblas.h, openblas_config.h, f77blas.h), and cJSON (library and
# header, for .safetensors loading), and the pure-Python gguf and yaml
# packages the tests' references import. About 12 MB.
#
# Why not a wheel's OpenBLAS: numpy and scipy wheels bundle OpenBLAS with
# renamed symbols (scipy_cblas_sgemm64_ ...), unusable as plain CBLAS.
set -euo pipefail
cd "$(dirname "$0")/.."

lib=$(ldconfig -p | awk '/libopenblas\.so\.0 /{print $NF; exit}')
if [ -z "$lib" ]; then
  echo "gpu-carry-blas: no libopenblas.so.0 here (install libopenblas-dev)" >&2
  exit 1
fi
lib=$(readlink -f "$lib")
hdr=""
for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas \
         /usr/include/x86_64-linux-gnu /usr/include; do
  if [ -f "$d/cblas.h" ]; then hdr=$d; break; fi
done
if [ -z "$hdr" ]; then
  echo "gpu-carry-blas: no cblas.h here (install libopenblas-dev)" >&2
  exit 1
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/include"
cp -L "$lib" "$stage/lib/libopenblas.so.0"
ln -s libopenblas.so.0 "$stage/lib/libopenblas.so"
# The Fortran runtime OpenBLAS's LAPACK needs (not on every image).
for dep in $(ldd "$lib" | awk '/libgfortran|libquadmath/{print $3}'); do
  cp -L "$dep" "$stage/lib/"
done
for h in cblas.h openblas_config.h f77blas.h; do
  if [ -f "$hdr/$h" ]; then cp -L "$hdr/$h" "$stage/include/"; fi
done
# cblas.h includes openblas_config.h, which Debian keeps one level up.
if [ ! -f "$stage/include/openblas_config.h" ] &&
   [ -f /usr/include/x86_64-linux-gnu/openblas_config.h ]; then
  cp -L /usr/include/x86_64-linux-gnu/openblas_config.h "$stage/include/"
fi

# cJSON (safetensors headers), for machines without it: header and library.
cj=$(ldconfig -p | awk '/libcjson\.so\.1 /{print $NF; exit}')
if [ -n "$cj" ] && [ -f /usr/include/cjson/cJSON.h ]; then
  mkdir -p "$stage/include/cjson"
  cp -L /usr/include/cjson/cJSON.h "$stage/include/cjson/"
  cp -L "$cj" "$stage/lib/libcjson.so.1"
  ln -s libcjson.so.1 "$stage/lib/libcjson.so"
else
  echo "gpu-carry-blas: no cJSON here (install libcjson-dev); packing without it" >&2
fi

# The pure-Python reference packages some tests read (gguf, which imports
# yaml), from the project venv when it has them: the GPU machine has no
# network to install them (gpu-check.sh puts py/ on the tests' PYTHONPATH).
venv_site=$(ls -d .venv/lib/python3*/site-packages 2>/dev/null | head -1)
if [ -n "$venv_site" ] && [ -d "$venv_site/gguf" ] && [ -d "$venv_site/yaml" ]; then
  mkdir -p "$stage/py"
  cp -r "$venv_site/gguf" "$venv_site/yaml" "$stage/py/"
  find "$stage/py" -name __pycache__ -prune -exec rm -rf {} +
  rm -f "$stage"/py/yaml/_yaml*.so  # built for this python; yaml runs without it
else
  echo "gpu-carry-blas: no gguf/yaml in .venv (make venv); packing without them" >&2
fi

mkdir -p .carry
tar -C "$stage" -czf .carry/blas.tar.gz .
echo "gpu-carry-blas: wrote .carry/blas.tar.gz ($(du -h .carry/blas.tar.gz | cut -f1)) from $lib"
echo "  carry it: name \".carry\" in the device run's carry list"
