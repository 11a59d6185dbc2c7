# cmx: the top-level commands. Each target sets up what it needs first
# (scripts/bootstrap.sh installs missing Debian packages).
#   make          build libcmx and the programs (build/)
#   make test     C tests (ctest) in a release build and under ASan/UBSan,
#                 and the Python tests (pytest, in the project venv .venv)
#   make demo     the demo program
#   make bench    the benchmarks
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

VENV ?= .venv
VENV_PY := $(VENV)/bin/python

.PHONY: all build bootstrap test test-c test-asan test-python demo bench clean

all: build

bootstrap:
	@bash scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test-c: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: bootstrap
	@cmake -S . -B $(ASAN_BUILD) -DCMX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)

# Python tests: the extension is built in $(BUILD) against the venv's
# Python and imported from $(BUILD)/python (pytest exit code 5, "no tests
# collected", counts as a failure).
test-python: build
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@$(VENV_PY) -c "import numpy, pytest" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q numpy pytest
	@cmake -S . -B $(BUILD) -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) -m pytest -q tests/python; \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "test-python: no tests collected"; exit 1; fi; exit $$rc

test: test-c test-asan test-python

demo: build
	./$(BUILD)/demo

bench: build
	./$(BUILD)/bench_core

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
