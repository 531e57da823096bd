//! Tables sized by a capacity that cost resident memory only where they are used.
//!
//! The body, position and id-by-slot tables have a slot for every player the server
//! admits (`player_capacity`, 8,192 by default) but a server holds far fewer most of the time.
//! A zeroed heap allocation does not keep them cheap: whether `calloc` hands back untouched
//! pages depends on the allocator and on what it freed before. Measured with the server's
//! two allocators (a probe allocating four 1 MiB zeroed blocks in a row): Debian's mimalloc
//! 2.0.9 wrote every byte of the first and none of the next, and glibc wrote 0.9 MiB of the
//! third once its heap had room to reuse.
//! In an idle server at the default capacity the tables were 1.1 MiB of its RSS.
//!
//! A [`ReservedTable`] therefore takes its memory straight from the kernel: an anonymous
//! private mapping, which Linux fills with zero pages on first touch. A slot costs resident
//! memory from the first write to its page (4 KiB) on, whatever allocator the process runs,
//! and nothing before. The mapping lives as long as the table; it is never resized.
//!
//! heaptrack does not see these tables (they are not `malloc` calls); the compare harness's
//! peak RSS does.

use std::alloc::{Layout, handle_alloc_error};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// A fixed-length table of `T` in its own anonymous mapping, every slot starting as all-zero
/// bytes. Dereferences to `[T]`.
pub struct ReservedTable<T> {
    /// The first slot (dangling, never dereferenced, when the table is empty or `T` is
    /// zero-sized).
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: the table owns its slots like a `Box<[T]>` does; sending or sharing it sends or
// shares the `T`s, so it is `Send`/`Sync` exactly when `T` is.
unsafe impl<T: Send> Send for ReservedTable<T> {}
// SAFETY: see above.
unsafe impl<T: Sync> Sync for ReservedTable<T> {}

/// A page-aligned mapping is aligned for any `T` whose alignment is at most a page.
const PAGE_BYTES: usize = 4096;

impl<T> ReservedTable<T> {
    /// A table of `len` slots, each all-zero bytes, none resident until written.
    ///
    /// # Safety
    ///
    /// All-zero bytes must be a valid `T` (an atomic integer, a plain-data struct, a
    /// `parking_lot` mutex around one).
    ///
    /// # Panics
    ///
    /// Aborts through [`handle_alloc_error`] when the kernel refuses the mapping, as a
    /// `Box` allocation would.
    pub unsafe fn new_zeroed(len: usize) -> Self {
        const { assert!(align_of::<T>() <= PAGE_BYTES, "a mapping is only page-aligned") };
        let Ok(layout) = Layout::array::<T>(len) else {
            panic!("a reserved table of {len} slots of {} bytes overflows", size_of::<T>());
        };
        if layout.size() == 0 {
            return Self { ptr: NonNull::dangling(), len };
        }
        // SAFETY: a fresh anonymous private mapping at an address the kernel picks; no
        // existing memory is touched. MAP_NORESERVE: the table is a reservation, its pages are
        // committed as they are touched, like any untouched heap page.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            handle_alloc_error(layout);
        }
        let ptr = NonNull::new(raw.cast::<T>()).unwrap_or_else(|| handle_alloc_error(layout));
        Self { ptr, len }
    }
}

impl ReservedTable<AtomicU64> {
    /// `n` atomics holding 0, resident only where written.
    pub fn zeroed_atomics(n: usize) -> Self {
        // SAFETY: an `AtomicU64` has the same in-memory representation as a `u64`, so all-zero
        // bytes are a valid `AtomicU64` holding 0.
        unsafe { Self::new_zeroed(n) }
    }
}

impl<T> Deref for ReservedTable<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid for `len` initialised `T`s (zero bytes, valid by `new_zeroed`'s
        // contract, or whatever the owner wrote through shared references since), for as long
        // as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> Drop for ReservedTable<T> {
    fn drop(&mut self) {
        // SAFETY: the slots are valid and owned by this table; no borrow of them outlives it.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), self.len)) };
        let bytes = size_of::<T>() * self.len;
        if bytes != 0 {
            // SAFETY: the mapping `new_zeroed` made, of exactly this length, unmapped once.
            let unmapped = unsafe { libc::munmap(self.ptr.as_ptr().cast(), bytes) };
            debug_assert_eq!(unmapped, 0, "munmap of a reserved table failed");
        }
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ReservedTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReservedTable").field("len", &self.len).finish_non_exhaustive()
    }
}

#[cfg(all(test, not(mmo_loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// How many of `table`'s pages are resident, from `mincore` over exactly its range.
    fn resident_pages<T>(table: &ReservedTable<T>) -> usize {
        let bytes = size_of_val::<[T]>(table);
        let mut resident = vec![0u8; bytes.div_ceil(PAGE_BYTES)];
        // SAFETY: the range is the table's own mapping, page-aligned; `resident` has a byte
        // per page.
        let status = unsafe { libc::mincore(table.as_ptr() as *mut libc::c_void, bytes, resident.as_mut_ptr()) };
        assert_eq!(status, 0, "mincore failed");
        resident.iter().filter(|&&page| page & 1 != 0).count()
    }

    #[test]
    fn slots_start_zero_and_only_written_pages_are_resident() {
        // 64 MiB of slots, 16,384 pages.
        let table = ReservedTable::zeroed_atomics(8 << 20);
        assert_eq!(table.len(), 8 << 20);
        assert_eq!(resident_pages(&table), 0, "nothing is resident before a write");
        table[0].store(7, Ordering::Relaxed);
        table[(8 << 20) - 1].store(9, Ordering::Relaxed);
        assert_eq!(resident_pages(&table), 2, "the two written pages, and only they");
        assert_eq!(table[0].load(Ordering::Relaxed), 7);
        assert_eq!(table[(8 << 20) - 1].load(Ordering::Relaxed), 9);
        // Every other slot reads zero (this maps the kernel's shared zero page, not new memory).
        assert!(table[1..(8 << 20) - 1].iter().step_by(509).all(|slot| slot.load(Ordering::Relaxed) == 0));
    }

    #[test]
    fn empty_and_zero_sized_tables_map_nothing() {
        // SAFETY: all-zero bytes are a `u64` 0 and a `()`.
        let empty = unsafe { ReservedTable::<u64>::new_zeroed(0) };
        assert!(empty.is_empty());
        // SAFETY: see above.
        let units = unsafe { ReservedTable::<()>::new_zeroed(1 << 40) };
        assert_eq!(units.len(), 1 << 40);
    }

    #[test]
    fn dropping_a_table_drops_its_slots() {
        use std::sync::atomic::AtomicUsize;
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Counted(#[allow(dead_code)] u64);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        // SAFETY: all-zero bytes are a `Counted(0)`.
        drop(unsafe { ReservedTable::<Counted>::new_zeroed(1_000) });
        assert_eq!(DROPS.load(Ordering::Relaxed), 1_000);
    }
}
