# cmx: the top-level commands. Each target sets up what it needs first
# (scripts/bootstrap.sh installs missing Debian packages).
#   make          build libcmx and the programs (build/)
#   make test     C tests (ctest) in a release build and under ASan/UBSan,
#                 and the Python tests (pytest, in the project venv .venv)
#   make demo     the demo: trains a LeNet on Fashion-MNIST (examples/demo.py);
#                 builds only libcmx and the Python extension
#   make bench    the benchmarks
#   make install  libcmx, headers, CMake package (find_package(cmx)),
#                 pkg-config file and the Python package into PREFIX
#                 (default /usr/local; cmake --install build --prefix P)
#   make fuzz     the file-loader fuzzers (clang + libFuzzer), FUZZ_TIME s each
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

VENV ?= .venv
VENV_PY := $(VENV)/bin/python

.PHONY: all build bootstrap test test-c test-asan test-python demo bench fuzz clean install

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

test-c: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: bootstrap
	@cmake -S . -B $(ASAN_BUILD) -DCMX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# Python tests: the extension is built in $(BUILD) against the venv's
# Python and imported from $(BUILD)/python (pytest exit code 5, "no tests
# collected", counts as a failure).
# Real MLX (CPU build) is the oracle of the differential suite
# (tests/python/test_mlx_diff*.py); pinned, as its results are the
# expected ones.
MLX_VERSION ?= 0.32.4
test-python: build
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@$(VENV_PY) -c "import numpy, pytest, safetensors, gguf, scikit_build_core" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q numpy pytest safetensors gguf scikit-build-core
	@$(VENV_PY) -c "import mlx.core" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q "mlx[cpu]==$(MLX_VERSION)"
	@cmake -S . -B $(BUILD) -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) -m pytest -q tests/python; \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "test-python: no tests collected"; exit 1; fi; exit $$rc

test: test-c test-asan test-python

# The demo needs only libcmx and the extension (target cmx_core_py), not
# the tests and benchmarks, and only the standard library in the venv.
# DEMO_ARGS passes options (see python examples/demo.py --help).
demo: bootstrap
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target cmx_core_py
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) examples/demo.py $(DEMO_ARGS)

bench: build
	./$(BUILD)/bench_core

# Builds tests/fuzz/fuzz_<format> with clang (-fsanitize=fuzzer,address,
# undefined) and runs each for FUZZ_TIME seconds from the committed seed
# corpus (new inputs go to $(FUZZ_BUILD)/corpus). A crash stops the run and
# leaves the input in $(FUZZ_BUILD)/crash-*; add it to
# tests/c/regressions/<format>/ once fixed.
FUZZ_BUILD ?= build-fuzz
FUZZ_TIME ?= 60
fuzz:
	@bash scripts/bootstrap.sh fuzz
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMX_FUZZ=ON \
	  -DCMX_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)
	@for f in npy npz safetensors gguf export; do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$f; \
	  echo "fuzz_$$f: $(FUZZ_TIME) s"; \
	  ./$(FUZZ_BUILD)/fuzz_$$f -max_total_time=$(FUZZ_TIME) -max_len=8192 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$f- \
	    $(FUZZ_BUILD)/corpus/$$f tests/fuzz/corpus/$$f \
	    > $(FUZZ_BUILD)/fuzz_$$f.log 2>&1; rc=$$?; \
	  grep -E "number_of_executed_units" $(FUZZ_BUILD)/fuzz_$$f.log; \
	  if [ $$rc -ne 0 ]; then tail -40 $(FUZZ_BUILD)/fuzz_$$f.log; exit 1; fi; \
	done

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
