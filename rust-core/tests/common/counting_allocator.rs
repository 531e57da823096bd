//! The allocation tests' global allocator: the system's, counting each allocation (and each
//! reallocation) made by the calling thread. Including this file installs
//! `CountingAllocator` as the binary's global allocator, so include it once per test binary
//! that holds a path to zero allocations (`rust-core/tests/alloc_steady_state.rs`,
//! `ffi/tests/ffi_alloc_steady_state.rs`, by `#[path]`), and never from `common/mod.rs`:
//! every binary of the suite would then count, and one that also includes it would have two
//! global allocators.
//!
//! Counting is per thread, in a `const` thread-local `Cell` with no destructor (the
//! platform's native thread-local storage on the targets this builds for, so counting itself
//! never allocates): a test that runs its engine work on its own thread is not disturbed by
//! the harness's threads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // try_with: the counter may already be gone while a thread is being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards every call to the system allocator unchanged; counting touches no heap
// memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: forwarded contract.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: forwarded contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Allocations (and reallocations) this thread has made so far.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}
