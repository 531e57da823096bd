//! Loom shim for the crate's hand-written atomic protocols.
//!
//! Every type that coordinates threads through raw atomics (the health CAS loop and the
//! respawn bound in [`crate::combat`], the [`crate::capacity::CapacityGate`], the tick board's sequence lock in
//! [`crate::tick`] and the snapshot board in [`crate::snapshot`]) imports its atomics, and the
//! snapshot board its `UnsafeCell`, from here. A normal build re-exports `std`'s; a build with
//! `RUSTFLAGS="--cfg mmo_loom"` re-exports loom's instrumented ones so `tests/loom/` can
//! explore every interleaving (and loom reports any access to a cell that races a write).
//!
//! The cfg is `mmo_loom`, not `loom`, so that dependencies which key their own loom support
//! off `cfg(loom)` (sharded-slab) keep compiling against std.

#[cfg(mmo_loom)]
pub(crate) use loom::cell::{ConstPtr, MutPtr, UnsafeCell};
#[cfg(mmo_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

#[cfg(not(mmo_loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence};

/// `std::cell::UnsafeCell` with loom's access API (`get` / `get_mut` handing out pointers
/// that are dereferenced explicitly), so the same code runs under both.
#[cfg(not(mmo_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(mmo_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }
    pub(crate) fn get(&self) -> ConstPtr<T> {
        ConstPtr(self.0.get())
    }
    pub(crate) fn get_mut(&self) -> MutPtr<T> {
        MutPtr(self.0.get())
    }
}

/// A shared pointer into an [`UnsafeCell`].
#[cfg(not(mmo_loom))]
#[derive(Debug)]
pub(crate) struct ConstPtr<T>(*const T);

#[cfg(not(mmo_loom))]
impl<T> ConstPtr<T> {
    /// # Safety
    /// No `&mut` to the cell's value may exist while the returned reference lives.
    pub(crate) unsafe fn deref(&self) -> &T {
        // SAFETY: forwarded to the caller.
        unsafe { &*self.0 }
    }
}

/// An exclusive pointer into an [`UnsafeCell`].
#[cfg(not(mmo_loom))]
#[derive(Debug)]
pub(crate) struct MutPtr<T>(*mut T);

#[cfg(not(mmo_loom))]
impl<T> MutPtr<T> {
    /// # Safety
    /// No other reference to the cell's value may exist while the returned one lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn deref(&self) -> &mut T {
        // SAFETY: forwarded to the caller.
        unsafe { &mut *self.0 }
    }
}
