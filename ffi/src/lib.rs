//! # mmo-ffi: the C ABI over `mmo-core`
//!
//! The C++ network front calls the Rust core through these functions, tens of thousands of
//! times a second. The header `ffi/include/mmo_core.h` is generated from this crate by
//! cbindgen 0.29.4 (`make header`) and committed; CI regenerates it and fails on any
//! difference.
//!
//! ## Rules (repeated at the top of the header)
//! - **Status codes.** Every fallible function returns an [`MmoStatus`]: [`MMO_OK`] (0) or a
//!   code in the distinct range 1001..=1099, so a status is never mistaken for a count or a
//!   boolean. [`mmo_status_name`] names each one.
//! - **Outputs only on success.** Out-parameters are written only when the call returns
//!   [`MMO_OK`]; on any error they are left untouched.
//! - **Borrowed slices.** A `(pointer, length)` pair is borrowed for the duration of the call
//!   only and never retained. Length 0 means "empty" and the pointer may then be NULL. A NULL
//!   pointer with a non-zero length is [`MMO_ERR_NULL_POINTER`]; a pointer not aligned for its
//!   type is [`MMO_ERR_MISALIGNED_POINTER`]; a batch's input and output overlapping is
//!   [`MMO_ERR_INVALID_ARGUMENT`]. Output buffers must be initialised memory (zeroed is fine):
//!   the core takes them as Rust slices.
//! - **Whole batches.** A batch call whose output buffer cannot hold the worst case is
//!   refused whole with [`MMO_ERR_BUFFER_TOO_SMALL`] before anything is applied.
//! - **Enums are integers.** Records carry enums as `uint8_t`; the core decodes them with
//!   `TryFrom`, and an unknown value is a per-record refusal or [`MMO_ERR_BAD_ENUM`], never
//!   undefined behaviour.
//! - **No unwinding across the boundary.** Every exported body runs inside one
//!   `catch_unwind`. A panic returns [`MMO_ERR_PANIC`]; if it happened in a call that
//!   changes state, the engine is marked poisoned and every later call on it returns
//!   [`MMO_ERR_POISONED`] (its state may be half-updated; the process should restart it).
//!   After [`MMO_ERR_PANIC`] a batch call's output buffer may be partly written.
//!   C++ exceptions must never be thrown through these functions.
//! - **Threads.** [`mmo_engine_new`] and [`mmo_engine_free`] must not race with any other
//!   call on the same engine, and [`mmo_economy_open`] must return before the engine's first
//!   join. Every other function on an engine may be called from any thread at the same time.
//!   [`mmo_tick`] is meant for one tick-driver thread (concurrent calls serialise). A latency
//!   histogram (`mmo_latency_*`) is one thread's at a time: its writers (`record`, `reset`,
//!   `merge` into it) must not race with any other call on the same histogram.
//! - **Ownership.** The engine is owned by the caller between `mmo_engine_new` and
//!   `mmo_engine_free` (a `_new`/`_free` pair). Every buffer is owned by the caller.
//!
//! ## Allocator
//! The library does not choose an allocator: Rust's allocations go through `malloc`, so the
//! process that links it decides for both languages. A production binary links mimalloc's
//! `malloc` override; the test builds keep glibc's, so AddressSanitizer, valgrind and
//! heaptrack see every allocation the core makes.
//!
//! The batch records (`MmoMoveRecord`, `MmoMoveEvent`, `MmoEconomyOp`, ...) are
//! `mmo_core::records` itself, re-exported: the core reads and writes the caller's buffers in
//! place, so nothing is copied at the boundary and there is one definition of each layout.

// The panic boundary first: its `check!` macro is used by the modules after it.
#[macro_use]
mod boundary;
mod calls;
mod config;
pub mod latency;
mod status;

pub use boundary::MmoEngine;
pub use calls::*;
pub use config::*;
pub use latency::{MmoLatency, MmoLatencySummary};
pub use status::*;
