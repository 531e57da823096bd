//! The core's integration tests, one module per topic, linked as one test binary
//! (`cargo test -p mmo-core --test suite`; one topic: `... --test suite engine_stress::`).
//!
//! One binary instead of one per file: each binary links the whole core with its
//! dependencies, so ten of them cost CI most of its compile time for the crate. Two kinds stay
//! binaries of their own: `alloc_steady_state.rs`, whose counting `#[global_allocator]` must
//! see no other test's allocations, and the loom models (`tests/loom/`, one binary of
//! their own), built only with `--cfg mmo_loom` (`make loom`).
#![cfg(not(mmo_loom))] // loom builds run only the loom models, tests/loom/ (this covers every module below)

#[path = "../common/mod.rs"]
mod common;

mod combat_attack;
mod combat_linger;
mod combat_loot;
mod combat_raid;
mod combat_respawn;
mod economy_durability;
mod economy_ops;
mod economy_trade;
mod engine_props;
mod engine_stress;
mod movement_rules;
mod players_lifecycle;
