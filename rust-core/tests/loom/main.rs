//! The loom models of the core's hand-written concurrent protocols, one module per protocol,
//! linked as one test binary. They exist only in a loom build: `RUSTFLAGS="--cfg mmo_loom"`
//! swaps the core's atomics, locks and cells for loom's instrumented ones (`src/sync.rs`), in
//! a target directory of its own (`make loom` uses `target/loom`). A plain `cargo test`
//! builds this binary empty.
//!
//! Run: `make loom`, or one protocol with
//! `RUSTFLAGS="--cfg mmo_loom" cargo test -p mmo-core --release --test loom -- health::`.
#![cfg(mmo_loom)]

mod capacity;
mod health;
mod ledger;
mod offer_expiry;
mod respawn_bound;
mod snapshot_board;
mod tick_board;
