//! # mmo-core: the game state of the MMO backend
//!
//! Thousands of players send position updates about every 100 ms, raids spawn thousands of
//! short-lived objects at once, and players trade gold and items that must never be
//! duplicated or lost. This crate holds that state and applies those updates from many
//! network threads at once, **without a lock that every update shares and without touching
//! the heap per update once warmed up**.
//!
//! ## Services (one module each)
//! - [`players`]: join / leave / lookup; a player id is an arena key with a generation, so a
//!   stale id misses.
//! - [`movement`]: bodies and the move rules (sequence, speed, bounds), each body behind its
//!   own lock.
//! - [`grid`]: the collision grid, a `DashMap` of cell -> members and a table of player
//!   positions by slot; the contact query of every move.
//! - [`snapshot`]: the world as of the last tick, published once per tick through
//!   crossbeam-epoch and read by every area-of-interest query, never the live grid;
//!   [`candidate_sort`] orders a query's candidates (a branch-free network on AVX2).
//! - [`combat`]: hit points (a lock-free CAS), raid bursts in an arena whose pages are reused,
//!   expiry by sweeping each burst's cells.
//! - [`loot`]: what a killed add drops (a seeded roll of the configured table) and the one
//!   claim that takes it.
//! - [`economy`]: wallets of accounts, each behind its own lock, taken in ascending arena key;
//!   64 homes of books; at-most-once by transaction id; conservation checked by
//!   [`Engine::economy_audit`].
//! - [`ledger`], [`durability`], [`commit_log`], [`store`]: every wallet change as a numbered
//!   entry, made durable in groups by the committer thread (one append to the commit log and
//!   one `fdatasync` per group) before its result is told; full log segments folded into a
//!   redb checkpoint on a thread of their own; recovery at start ([`Engine::open_store`]).
//! - [`tick`]: the tick and its sequence-locked per-tick summary.
//! - [`stats`]: striped counters per service and rejection reason.
//!
//! ## The path of one move
//! [`Engine::apply_moves`] receives a borrowed slice of [`records::MoveRecord`]s and a
//! caller-owned [`records::MoveEvent`] buffer. For each record: the body is found from the
//! record's slot hint (its mutex taken, and its owner checked), or, when the hint names no live
//! body of this player, through the player record (a sharded-slab `get`, no lock); the session
//! is checked against the body's token; the move rules run; the body is written and the
//! position stored in the grid's position table (one atomic store); if the move crossed a cell
//! boundary by more than the hysteresis margin the player is moved between two grid cells (one
//! shard lock each, one after the other); the body lock is released; the 1 to 4 cells the
//! contact radius (plus the margin) reaches are searched for contacts, which are written
//! straight into the caller's buffer after the `Ack`. Counters are summed per batch and added
//! once.
//!
//! See `docs/architecture.md` for the whole product around this crate.

pub mod allocator;
pub mod arena;
pub mod candidate_sort;
pub mod capacity;
pub mod combat;
pub mod commit_log;
pub mod config;
pub mod durability;
pub mod economy;
mod engine;
pub mod grid;
pub mod ledger;
pub mod locks;
pub mod loot;
pub mod movement;
pub mod players;
pub mod records;
pub mod reserved;
pub mod snapshot;
pub mod stats;
pub mod store;
mod sync;
pub mod tick;

pub use config::CoreConfig;
pub use engine::{
    AoiBatchInfo, AoiError, AttackReport, BatchError, DamageError, Engine, JoinError, LeaveError, LootReport, MoveBatchReport, PlayerView,
    Recovery,
};
pub use records::{AttackError, LootError};
