//! The global allocator the product's Rust binaries use.
//!
//! mimalloc (built as v2, see the design brief's field notes on v3 under threads) keeps
//! per-thread heaps, so allocation never takes a lock shared by all threads. heaptrack sees
//! only calls that go through libc's malloc, which mimalloc bypasses; building with the
//! `system-alloc` feature switches to the system allocator so heaptrack can count every
//! allocation. A binary opts in with:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: mmo_core::allocator::Selected = mmo_core::allocator::SELECTED;
//! ```

/// The allocator selected by the `system-alloc` feature: mimalloc without it.
#[cfg(not(feature = "system-alloc"))]
pub type Selected = mimalloc::MiMalloc;
/// The allocator selected by the `system-alloc` feature: the system allocator with it.
#[cfg(feature = "system-alloc")]
pub type Selected = std::alloc::System;

/// The value to put in the `#[global_allocator]` static.
#[cfg(not(feature = "system-alloc"))]
pub const SELECTED: Selected = mimalloc::MiMalloc;
/// The value to put in the `#[global_allocator]` static.
#[cfg(feature = "system-alloc")]
pub const SELECTED: Selected = std::alloc::System;

/// Name of the selected allocator, for logs and reports.
pub const NAME: &str = if cfg!(feature = "system-alloc") { "system" } else { "mimalloc" };
