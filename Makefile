# coroner's front door. Everything a user or CI runs starts here.
#   make deps     install the Debian packages coroner needs (idempotent)
#   make build    build/coroner, optimized with debug info
#   make test     deps + build + the whole test suite, the suite again under
#                 ASan+UBSan, and a bounded libFuzzer run of the core parser
#   make demo     build the crash zoo, analyze its cores, and run `coroner demo`
#                 (a seeded fleet with planted causes, scanned and reported)
#   make bench    speed and bytes-read figures against gdb
#   make compare  a refactoring's check: this tree's outputs against those of
#                 a commit (REF, default HEAD), byte for byte
#   make install PREFIX=DIR
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
# Warnings are errors in CI (CI=true) and for anyone who asks.
WERROR ?= $(if $(CI),ON,OFF)
ZOO := $(abspath $(BUILD))/zoo

.PHONY: all deps build check test test-asan fuzz zoo demo bench compare install clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCORONER_WERROR=$(WERROR)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

zoo:
	@$(MAKE) -s -C tests/crashers OUT=$(ZOO) -j$(JOBS)

check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

test: deps build
	$(MAKE) check
	$(MAKE) test-asan
	$(MAKE) fuzz

# Every output of `analyze` (text, JSON, Markdown) on each zoo core of both
# machines and of `demo` (text, JSON, Markdown, HTML) for every scenario,
# from this tree's coroner and from REF's (built once in $(BUILD)/before-REF
# from a worktree of the commit), compared byte for byte: a change meant to
# keep behaviour shows nothing. BEFORE=path/to/coroner skips the build.
REF ?= HEAD
compare: build zoo
	@before="$(BEFORE)"; \
	if [ -z "$$before" ]; then \
	  rev=$$(git rev-parse --short "$(REF)") && dir=$(abspath $(BUILD))/before-$$rev && \
	  if [ ! -x "$$dir/build/coroner" ]; then \
	    rm -rf "$$dir" && git worktree add --detach "$$dir/src" "$$rev" >/dev/null && \
	    cmake -S "$$dir/src" -B "$$dir/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null && \
	    cmake --build "$$dir/build" --target coroner -j$(JOBS) >/dev/null && \
	    git worktree remove --force "$$dir/src"; \
	  fi; before="$$dir/build/coroner"; \
	fi; \
	bench/compare_outputs.sh "$$before" $(BUILD)/coroner $(ZOO)

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer, on the
# same zoo, real-program and Python cores (each corpus is made once, and
# again only where something is missing).
test-asan: zoo
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DCORONER_SANITIZE=ON \
	  -DCORONER_WERROR=$(WERROR) -DCORONER_ZOO_DIR=$(ZOO) -DCORONER_REAL_DIR=$(abspath $(BUILD))/real \
	  -DCORONER_PYTHON_DIR=$(abspath $(BUILD))/python
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j$(JOBS)

# libFuzzer on the ELF/note parser, the decompressors, metadata (inventories
# among it), epi, the x86 decoder, compressed debug files, CPython's location
# tables, and the whole analysis of a zoo core (notes and stack fuzzed; its
# executable's sections fuzzed through --sysroot), for FUZZ_SECONDS each.
fuzz: zoo
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCORONER_FUZZ=ON -DBUILD_TESTING=OFF
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers
	tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(ZOO) $(FUZZ_SECONDS)

demo: deps build zoo
	@scripts/demo.sh $(BUILD)/coroner $(ZOO)

bench: deps build zoo
	@scripts/deps.sh --bench
	@bench/bench_core.sh $(BUILD)/coroner $(ZOO)
	@bench/bench_backtrace.sh $(BUILD)/coroner $(ZOO)
	@bench/bench_a64.sh $(BUILD)/coroner $(ZOO)
	@bench/bench_scan.sh $(BUILD)/coroner $(ZOO)
	@bench/bench_merge.sh $(BUILD)/coroner $(ZOO)
	@bench/bench_epi.sh $(BUILD)/coroner
	@bench/bench_crashlog.sh $(BUILD) $(ZOO)
	@bench/bench_identity.sh $(BUILD) $(ZOO)
	@bench/bench_python.sh $(BUILD)/coroner $(BUILD)/python
	@bench/bench_live.sh $(BUILD)
	@bench/bench_big_core.sh $(BUILD)/coroner $(BUILD)/bigcore

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
