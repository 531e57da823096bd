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
//! - [`grid`]: the collision grid, a pre-sized `DashMap` of cell -> members; proximity and
//!   area-of-interest queries.
//! - [`combat`]: hit points (a lock-free CAS), raid bursts in an arena whose pages are reused,
//!   expiry by sweeping each burst's cells.
//! - [`loot`]: what a killed add drops (a seeded roll of the configured table) and the one
//!   claim that takes it.
//! - [`economy`]: wallets of accounts in 64 shards locked in index order; at-most-once by
//!   transaction id; conservation checked by [`Engine::economy_audit`].
//! - [`ledger`], [`durability`], [`store`]: every wallet change as a numbered entry, made
//!   durable in groups (one fsync each) by the committer thread in a redb file before its
//!   result is told; recovery at start ([`Engine::open_store`]).
//! - [`tick`]: the tick and its sequence-locked per-tick summary.
//! - [`stats`]: striped counters per service and rejection reason.
//!
//! ## The path of one move
//! [`Engine::apply_moves`] receives a borrowed slice of [`records::MoveRecord`]s and a
//! caller-owned [`records::MoveEvent`] buffer. For each record: the player record is found by
//! id (a sharded-slab `get`, no lock) and the session checked; the body's own mutex is taken;
//! the move rules run; the body is written; if the move crossed a cell boundary by more than
//! the hysteresis margin the entity is moved between two grid cells (one shard lock each, one
//! after the other), otherwise its position is updated in place; the body lock is released;
//! the 3x3 neighbourhood is searched for contacts, which are written straight into the
//! caller's buffer after the `Ack`. Counters are summed per batch and added once.
//!
//! See `docs/architecture.md` for the whole product around this crate.

pub mod allocator;
pub mod arena;
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
