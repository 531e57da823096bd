//! A lock-free admission gate: "may N more things exist right now?"
//!
//! Players and raid objects are admitted against a configured capacity, and the product
//! promises that a burst either fits whole or is refused whole (a raid spawn of 11,000 objects
//! never leaves 7,000 behind). [`CapacityGate`] is the one place that decides: a
//! compare-and-swap loop on a live count, so concurrent callers can never push the count past
//! the limit, not even for an instant, and a refused caller changes nothing.
//!
//! Concurrency contract: any thread may call [`CapacityGate::try_acquire`] and
//! [`CapacityGate::release`]; readers of [`CapacityGate::in_use`] see a value that was true at
//! some instant and never exceeds the limit. Model-checked in `tests/loom/capacity.rs`.

use crate::sync::{AtomicU32, Ordering};

/// A counted admission limit. Writers: every thread that creates or frees a gated thing.
/// Readers: stats and admission checks.
#[derive(Debug)]
pub struct CapacityGate {
    /// Number of units currently held. Written by `try_acquire`/`release` (CAS / fetch_sub),
    /// read by anyone.
    in_use: AtomicU32,
    /// The fixed limit, set at construction.
    limit: u32,
}

impl CapacityGate {
    /// A gate admitting at most `limit` units at once.
    pub fn new(limit: u32) -> Self {
        Self { in_use: AtomicU32::new(0), limit }
    }

    /// Takes `units` if they all fit; otherwise takes nothing and returns `false`.
    ///
    /// The loop is bounded by contention: each retry means another thread's CAS succeeded.
    pub fn try_acquire(&self, units: u32) -> bool {
        let mut current = self.in_use.load(Ordering::Relaxed);
        loop {
            let Some(next) = current.checked_add(units) else { return false };
            if next > self.limit {
                return false;
            }
            match self.in_use.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(seen) => current = seen,
            }
        }
    }

    /// Gives back `units` previously acquired.
    ///
    /// # Panics
    /// If more units are released than are held: that is a double free in the caller, and
    /// continuing would let the arena overrun its capacity.
    pub fn release(&self, units: u32) {
        let before = self.in_use.fetch_sub(units, Ordering::AcqRel);
        assert!(before >= units, "capacity gate released {units} units but only {before} were held");
    }

    /// Units held at some recent instant (never above [`CapacityGate::limit`]).
    pub fn in_use(&self) -> u32 {
        self.in_use.load(Ordering::Acquire)
    }

    /// The fixed limit.
    pub fn limit(&self) -> u32 {
        self.limit
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn refuses_whole_request_that_does_not_fit() {
        let gate = CapacityGate::new(10);
        assert!(gate.try_acquire(7));
        assert!(!gate.try_acquire(4));
        assert_eq!(gate.in_use(), 7);
        assert!(gate.try_acquire(3));
        assert!(!gate.try_acquire(1));
        gate.release(10);
        assert_eq!(gate.in_use(), 0);
        assert!(!gate.try_acquire(u32::MAX));
    }

    #[test]
    #[should_panic(expected = "released")]
    fn over_release_is_caught() {
        let gate = CapacityGate::new(4);
        assert!(gate.try_acquire(1));
        gate.release(2);
    }
}
