# cmx: the top-level commands. Each target sets up what it needs first
# (scripts/bootstrap.sh installs missing Debian packages).
#   make          build libcmx and the programs (build/)
#   make test     C tests (ctest) in a release build and under ASan/UBSan
#   make demo     the demo program
#   make bench    the benchmarks
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build bootstrap test test-c test-asan demo bench clean

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

test: test-c test-asan

demo: build
	./$(BUILD)/demo

bench: build
	./$(BUILD)/bench_core

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
