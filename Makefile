# Top-level build driver. `make run` builds everything and runs the main job; `make test` is
# the whole test suite (what .ci/run runs). Later parts of the product (the C++ front, the
# FFI, the load tester) add their steps to these same targets.

CARGO      ?= cargo
# Loom models build with a cfg that swaps in loom's atomics; a separate target directory
# keeps that build from invalidating the normal one.
LOOM_TARGET := target/loom
LOOM_TESTS  := --test loom_health --test loom_capacity --test loom_tick_board

.PHONY: all build run test check-format lint docs unit-tests loom bench bench-smoke clean

all: build

## Build every Rust target in release (debug symbols kept for perf).
build:
	$(CARGO) build --locked --release --workspace --all-targets

## Build everything, then run the main job: the raid-burst measurement of the core.
run: build
	$(CARGO) run --locked --release -p mmo-benches --bin raid-burst -- 200

## The whole test suite.
test: check-format lint docs unit-tests loom bench-smoke
	@echo "make test: all suites passed"

check-format:
	$(CARGO) fmt --all -- --check

lint:
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings

## Rustdoc on every public item (missing_docs is denied in the workspace lints).
docs:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --locked --workspace --no-deps

unit-tests:
	$(CARGO) test --locked --workspace --release

## Loom model checks of the hand-written atomic protocols.
loom:
	RUSTFLAGS="--cfg mmo_loom" CARGO_TARGET_DIR=$(LOOM_TARGET) $(CARGO) test --locked -p mmo-core --release $(LOOM_TESTS)

## Full criterion run (several minutes).
bench:
	$(CARGO) bench --locked -p mmo-benches

## Each benchmark once, so they never rot.
bench-smoke:
	$(CARGO) bench --locked -p mmo-benches -- --test

clean:
	$(CARGO) clean
