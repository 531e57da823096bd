//! Loom shim for the crate's hand-written atomic protocols.
//!
//! Every type that coordinates threads through raw atomics (the health CAS loop in
//! [`crate::combat`], the [`crate::capacity::CapacityGate`] and the tick board's sequence
//! lock in [`crate::tick`]) imports its atomics from here. A normal build re-exports
//! `std::sync::atomic`; a build with `RUSTFLAGS="--cfg mmo_loom"` re-exports loom's
//! instrumented atomics so `tests/loom_*.rs` can explore every interleaving.
//!
//! The cfg is `mmo_loom`, not `loom`, so that dependencies which key their own loom support
//! off `cfg(loom)` (sharded-slab) keep compiling against std.

#[cfg(mmo_loom)]
pub(crate) use loom::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(mmo_loom))]
pub(crate) use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering, fence};
