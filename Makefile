# Top-level build driver. `make run` builds everything and runs the main job; `make test` is
# the whole test suite (what .ci/run runs). Later parts of the product (the UDP front and
# mmo-server, the baseline engine, the load tester) add their steps to these same targets.

SHELL      := bash
CARGO      ?= cargo
# C++ builds (CMake drives cargo for the mmo-ffi staticlib).
CPP_BUILD   := build/cpp
ASAN_BUILD  := build/cpp-asan
TSAN_BUILD  := build/cpp-tsan
# mmo-server without mimalloc: heaptrack sees every allocation of C++ and Rust alike there.
SYSALLOC_BUILD := build/cpp-sysalloc
# Profile-guided builds (make pgo): the instrumented server, its counts, the optimised servers;
# their own cargo target directories (target/pgo-generate, target/pgo-use), so the plain
# build in target/release stays as it is.
PGO_BUILD   := build/pgo
PGO_TARGET  := target/pgo
# make compare measures the plain builds; PGO=1 builds and measures the profile-guided ones.
PGO         ?= 0
ifeq ($(PGO),1)
COMPARE_SERVERS := --server $(PGO_BUILD)/cpp/mmo-server --sysalloc-server $(PGO_BUILD)/cpp-sysalloc/mmo-server
else
COMPARE_SERVERS := --server $(CPP_BUILD)/mmo-server --sysalloc-server $(SYSALLOC_BUILD)/mmo-server
endif
CMAKE_FLAGS := -G Ninja

# Loom models build with a cfg that swaps in loom's atomics; a separate target directory
# keeps that build from invalidating the normal one.
FUZZ_BUILD  := build/fuzz
# libFuzzer executions in `make fuzz` (CI); run longer with e.g. `make fuzz FUZZ_RUNS=100000000`
# or FUZZ_RUNS=-1 for no limit (stop with Ctrl-C).
FUZZ_RUNS   ?= 2000000

LOOM_TARGET := target/loom
LOOM_TESTS  := --test loom

.PHONY: all build rust-build cpp-build run test deps settings-docs hot-code pgo sysalloc-build soak capacity check-format lint docs unit-tests loom bench bench-smoke bench-token \
        header header-check cpp-test cpp-asan cpp-tsan cpp-valgrind fuzz compare compare-quick loadtest-smoke crash-test crash-test-short economy-latency commit-linger clean

all: build

## Build everything: every Rust library and binary in release (debug symbols kept for perf), the C++
## side (which builds the mmo-ffi staticlib through cargo). Installs what a fresh Debian 12
## lacks first (the server's libraries: highwayhash, CLI11, mimalloc; see .ci/install-deps).
build: deps
	$(MAKE) rust-build cpp-build

rust-build:
	$(CARGO) build --locked --release --workspace

cpp-build:
	cmake -S cpp-net -B $(CPP_BUILD) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(CPP_BUILD)

## Regenerate cpp-net/app/hot-code.txt, the functions mmo-server runs, which the linker lays out
## together (about 3 minutes under valgrind; cpp-net/app/hot-code.sh says why and how).
hot-code: build
	cpp-net/app/hot-code.sh $(CPP_BUILD)/mmo-server

## Regenerate the example settings file and the README's flags table from mmo-server's
## settings table (server_operations_test fails when they are stale).
settings-docs: cpp-build
	cpp-net/app/settings-docs.sh $(CPP_BUILD)/mmo-server

## Regenerate the committed C header from the Rust ABI (cbindgen 0.29.4; ffi/generate-header.sh).
header:
	ffi/generate-header.sh ffi/include/mmo_core.h

## Fail if the committed header differs from what cbindgen generates now.
header-check:
	@tmp=$$(mktemp -d) && \
	ffi/generate-header.sh $$tmp/mmo_core.h && \
	if diff -u ffi/include/mmo_core.h $$tmp/mmo_core.h; then echo "header-check: ffi/include/mmo_core.h is current"; \
	else echo "header-check: ffi/include/mmo_core.h is stale: run 'make header' and commit it" >&2; rm -rf $$tmp; exit 1; fi; \
	rm -rf $$tmp

## Build everything, then run the main job: mmo-server on a free loopback port, 500 bots
## of mmo-loadtest playing a short raid scenario against it (bursts of 11,000 objects every
## 5 s), the results table, and the server stopped with SIGTERM. Plots and .hgrm files go to
## report/run/.
run: build
	loadtest/scripts/with-server.sh -- --scenario raid --players 500 --duration 15s --out-dir report/run --json report/run/raid.json

## Each load-test scenario in a short form against the Rust engine; each must pass its own
## checks (loss bound, raid results, conservation and at-most-once, drop counters).
loadtest-smoke: build
	loadtest/scripts/with-server.sh -- --scenario steady --players 300 --duration 5s --quiet
	loadtest/scripts/with-server.sh -- --scenario raid --players 300 --duration 8s --raid-every 3s --quiet
	loadtest/scripts/with-server.sh -- --scenario economy --players 200 --duration 5s --quiet
	loadtest/scripts/with-server.sh -- --scenario hostile --players 200 --duration 5s --quiet

## The whole test suite. Installs what a fresh Debian 12 machine lacks first (cbindgen,
## valgrind, rustfmt/clippy, ...), so this one command works there.
test: deps check-format header-check lint docs unit-tests cpp-test cpp-asan cpp-tsan cpp-valgrind fuzz loom bench-smoke loadtest-smoke crash-test-short compare-quick
	@echo "make test: all suites passed"

## The economy's crash test (mmo-crash-test): economy storms with duplicates and retransmits
## against mmo-server (Rust engine, durable economy), SIGKILLed at CRASH_KILLS random moments
## and restarted on the same data directory; after every restart no acknowledged operation
## may be lost or applied twice, every balance must equal what the answers told, and the books
## must balance. About 3 minutes for 100 kills here; make test runs 10.
CRASH_KILLS ?= 100
crash-test: build
	target/release/mmo-crash-test --kills $(CRASH_KILLS)

crash-test-short: build
	target/release/mmo-crash-test --kills 10

## What durability costs (loadtest/scripts/economy-latency.sh): 1,000 bots moving, without
## economy traffic, with about 5,000 economy operations a second kept in memory, and the same
## kept durable; three interleaved rounds, medians of the move and economy round trips.
## About 5 minutes here; report in report/economy/.
economy-latency: build
	loadtest/scripts/economy-latency.sh 3 report/economy

## What the store's commit linger buys (loadtest/scripts/commit-linger.sh): the economy
## scenario at a trickle (~500 operations/s) and at 5,000/s, linger 0, 1,000 and 3,000 us,
## three interleaved rounds: economy round trip, entries per commit, committer CPU per entry.
## About 8 minutes. Reports in report/commit-linger/.
commit-linger: build
	loadtest/scripts/commit-linger.sh 3 report/commit-linger

## Tools beyond the preinstalled toolchains (idempotent; see .ci/install-deps).
deps:
	.ci/install-deps

check-format:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

## Rustdoc on every public item (missing_docs is denied in the workspace lints).
docs:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --workspace --no-deps

unit-tests:
	$(CARGO) test --locked --workspace --release

## GoogleTest and header tests through ctest (the Rust core driven through mmo_core.h).
cpp-test: cpp-build
	ctest --test-dir $(CPP_BUILD) --output-on-failure

## The C and C++ tests built with AddressSanitizer and UndefinedBehaviorSanitizer.
cpp-asan:
	cmake -S cpp-net -B $(ASAN_BUILD) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Debug -DMMO_SANITIZE=ON
	cmake --build $(ASAN_BUILD)
	ctest --test-dir $(ASAN_BUILD) --output-on-failure

## The baseline engine's tests (its multi-threaded stress test included), the held economy
## replies (a worker and a committer sending at once), and the real multi-threaded server end
## to end (workers, tick thread, both engines) under ThreadSanitizer.
## The Rust core linked in is not instrumented (loom model-checks its atomics instead).
cpp-tsan:
	cmake -S cpp-net -B $(TSAN_BUILD) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMMO_TSAN=ON
	cmake --build $(TSAN_BUILD) --target baseline_test held_replies_test server_e2e_test mmo-server
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(TSAN_BUILD)/baseline_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(TSAN_BUILD)/held_replies_test
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/cpp-net/tests/tsan-rust-core.supp" $(TSAN_BUILD)/server_e2e_test

## The FFI tests under valgrind memcheck. The staticlib allocates through glibc malloc in
## this build, so memcheck tracks the Rust side's heap accesses and leaks too.
cpp-valgrind: cpp-build
	valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite -q $(CPP_BUILD)/ffi_engine_test

## The libFuzzer target for the datagram decoder and admission path (clang, ASan+UBSan),
## seeded with the committed protocol vectors; FUZZ_RUNS executions (2 million by default),
## inputs up to 1,400 bytes: past the largest reply (an AoI snapshot of 64 entries, 1,304).
fuzz:
	mkdir -p $(FUZZ_BUILD)/corpus
	clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Icpp-net \
	  cpp-net/fuzz/datagram_fuzz.cpp cpp-net/net/protocol.cpp cpp-net/net/admission.cpp cpp-net/net/connect_token.cpp -lsodium \
	  -o $(FUZZ_BUILD)/datagram_fuzz
	cp cpp-net/fuzz/corpus/* $(FUZZ_BUILD)/corpus/
	$(FUZZ_BUILD)/datagram_fuzz -runs=$(FUZZ_RUNS) -max_len=1400 -print_final_stats=1 $(FUZZ_BUILD)/corpus 2>&1 | \
	  grep -E 'stat::number_of_executed_units|Done|ERROR|SUMMARY|crash'; test $${PIPESTATUS[0]} -eq 0

## Loom model checks of the hand-written atomic protocols.
loom:
	RUSTFLAGS="--cfg mmo_loom" CARGO_TARGET_DIR=$(LOOM_TARGET) $(CARGO) test --locked -p mmo-core --release $(LOOM_TESTS)

## Profile-guided servers (cpp-net/app/pgo-train.sh says why and how): an instrumented build
## of mmo-server (both engines, the front), a training load on each engine, then the
## mimalloc and system-allocator servers built with its counts, in build/pgo/cpp and
## build/pgo/cpp-sysalloc. The optimised builds start clean (neither ninja nor cargo sees new
## counts as a change). About 8 minutes on the 2-core development machine. Not the default
## for make compare: no gain beyond the runs' spread measured yet (benches/README.md).
pgo: build
	cmake -S cpp-net -B $(PGO_BUILD)/generate $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DMMO_PGO=GENERATE -DMMO_PGO_DIR=$(abspath $(PGO_BUILD)/profiles) -DMMO_CARGO_TARGET_DIR=$(abspath $(PGO_TARGET)-generate)
	cmake --build $(PGO_BUILD)/generate --target mmo-server
	cpp-net/app/pgo-train.sh $(PGO_BUILD)/generate/mmo-server $(PGO_BUILD)/profiles
	rm -rf $(PGO_BUILD)/cpp $(PGO_BUILD)/cpp-sysalloc $(PGO_TARGET)-use
	for allocator in ON OFF; do \
	  dir=$(PGO_BUILD)/cpp$$([ $$allocator = OFF ] && echo -sysalloc); \
	  cmake -S cpp-net -B $$dir $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMMO_SERVER_MIMALLOC=$$allocator \
	    -DMMO_PGO=USE -DMMO_PGO_DIR=$(abspath $(PGO_BUILD)/profiles) -DMMO_CARGO_TARGET_DIR=$(abspath $(PGO_TARGET)-use) && \
	  cmake --build $$dir --target mmo-server || exit 1; \
	done

## The comparison of the engines (docs in README "Rust core vs C++ baseline"): each row
## (rust, rust-memory, baseline, baseline-mimalloc, baseline-jemalloc, null-engine) under the
## same load, three interleaved plain runs each, then heaptrack, then three interleaved perf
## runs; writes report/compare.md and report/compare.json. Full mode about 40 minutes on the
## 2-core development machine. PGO=1 builds and measures the profile-guided servers (`make
## pgo`, about 8 minutes more) instead of the plain builds (build/cpp, build/cpp-sysalloc).
compare: deps build $(if $(filter 1,$(PGO)),pgo,sysalloc-build)
	target/release/mmo-compare $(COMPARE_SERVERS) $(COMPARE_FLAGS)

## mmo-server without mimalloc (build/cpp-sysalloc): heaptrack's server, and the baseline rows'.
sysalloc-build: build
	cmake -S cpp-net -B $(SYSALLOC_BUILD) $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMMO_SERVER_MIMALLOC=OFF
	cmake --build $(SYSALLOC_BUILD) --target mmo-server

## The most players each engine holds within a 2 ms round-trip p99 (mmo-loadtest
## --find-capacity, steady and raid, Rust and baseline); report in report/capacity/. About 10
## minutes here.
capacity: build sysalloc-build
	loadtest/scripts/capacity.sh report/capacity

## The soak: steady play, raid bursts and an economy storm at once against mmo-server (Rust
## engine, system-allocator build under heaptrack) for SOAK_S seconds (default an hour), its
## RSS sampled every 10 s; fails if RSS grows 1% or more after warm-up. Report in report/soak/.
SOAK_S ?= 3600
soak: build sysalloc-build
	loadtest/scripts/soak.sh $(SOAK_S) report/soak

## Short phases, one run each of rust, rust-memory, baseline and null-engine (about 5
## minutes); part of make test (figures reported, not asserted).
compare-quick:
	$(MAKE) compare COMPARE_FLAGS="--quick $(COMPARE_FLAGS)"

## Full criterion run (several minutes).
bench: bench-token
	$(CARGO) bench --locked -p mmo-benches

## Each benchmark once, so they never rot.
bench-smoke: cpp-build
	$(CARGO) bench --locked -p mmo-benches -- --test
	$(CPP_BUILD)/join_token_bench --rounds 1 --tokens 200
	mkdir -p build && gcc -O2 -Wall -Wextra -Werror -o build/udp-batching-probe loadtest/scripts/udp-batching-probe.c
	build/udp-batching-probe per-bot 1 && build/udp-batching-probe shared 1

## What a connect token costs the front per JOIN_CONFIRM (libsodium Ed25519), by outcome.
bench-token: cpp-build
	$(CPP_BUILD)/join_token_bench

clean:
	$(CARGO) clean
	rm -rf build
