//! Latency histograms for the network front, engine-independent.
//!
//! `mmo-server` records every update's server-side latency (from its receive batch to the
//! end of that batch's apply) through these functions whichever engine it runs, so the Rust
//! core and the C++ baseline are measured by the same code: the `hdrhistogram` crate, at the
//! precision the caller asks for (the server: 3 significant digits for update latency, 2 for
//! tick durations and raid spawns; `cpp-net/net/udp.hpp` says why).
//!
//! A histogram has one writer at a time: each network worker owns one and records into it;
//! the reporter merges them under the worker's own lock (the C++ side holds that lock, this
//! library adds none). Values above the histogram's highest value are clamped to it (and so
//! still counted), values below 1 are recorded as 1.
//!
//! Memory follows the values recorded: a histogram's counts start covering values up to
//! `FIRST_RANGE` (16 ms in the server's microseconds; 40 KiB at 3 digits) and double their
//! range when a larger value first arrives (hdrhistogram's auto-resize), up to the highest
//! value asked for. The server's update latencies stay within a few of those doublings, where
//! 1 us..60 s at 3 digits allocated whole is 136 KiB, resident from the start (mimalloc, the
//! shipped allocator, writes a large calloc's zeroes, and a reset writes every count under any
//! allocator). So recording allocates, rarely: once each time the largest value so far passes
//! a power of two of the first range (at most 12 times up to 60 s, and none once the run's
//! worst latency has been seen).

use crate::boundary::{boundary, in_ref, input, out_ptr, output, spans_overlap};
use crate::status::{MMO_ERR_INVALID_ARGUMENT, MMO_OK, MmoStatus};
use hdrhistogram::Histogram;

/// A latency histogram as the C side holds it: opaque. Create with [`mmo_latency_new`],
/// free with [`mmo_latency_free`].
pub struct MmoLatency {
    /// The histogram. Written by its one owner; read by whoever holds the owner's lock.
    histogram: Histogram<u64>,
    /// The highest value it counts (larger ones are counted as this), as created; its
    /// counts grow towards it. Set at creation, never changed.
    highest: u64,
}

/// Percentiles of a latency histogram, in the unit it was recorded in (the server uses
/// microseconds). All zero when `count` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MmoLatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Smallest value recorded.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest value recorded (clamped to the highest trackable value).
    pub max: u64,
    /// Mean, rounded down.
    pub mean: u64,
}

const _: () = assert!(std::mem::size_of::<MmoLatencySummary>() == 64);

/// The values a new histogram's counts cover before they first grow (or `highest`, if lower).
/// A power of two less one: hdrhistogram's ranges double from its sub-bucket count. At 4 and
/// 5 digits the smallest histogram there is already covers more (32,767 and 262,143 values;
/// at 5 digits 2 MiB of counts).
const FIRST_RANGE: u64 = (1 << 14) - 1;

/// Creates a histogram tracking 1..=`highest` with `significant_digits` (1..=5) decimal
/// digits of precision and writes its handle to `*out_latency`. Allocates the counts of its
/// first range here; they grow as larger values arrive (see the module doc).
///
/// # Safety
/// `out_latency` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_new(highest: u64, significant_digits: u8, out_latency: *mut *mut MmoLatency) -> MmoStatus {
    boundary(|| {
        let out = check!(out_ptr(out_latency));
        if highest < 2 || !(1..=5).contains(&significant_digits) {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        let Ok(mut histogram) = Histogram::new_with_bounds(1, highest.min(FIRST_RANGE), significant_digits) else {
            return MMO_ERR_INVALID_ARGUMENT;
        };
        histogram.auto(true);
        // SAFETY: checked by out_ptr.
        unsafe { out.write(Box::into_raw(Box::new(MmoLatency { histogram, highest }))) };
        MMO_OK
    })
}

/// Frees a histogram. NULL is ignored.
///
/// # Safety
/// `latency` must be NULL or a pointer from [`mmo_latency_new`] not yet freed, with no call
/// on it running.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_free(latency: *mut MmoLatency) {
    let _ = boundary(|| {
        if !latency.is_null() {
            // SAFETY: the caller's promise: it came from Box::into_raw in mmo_latency_new.
            drop(unsafe { Box::from_raw(latency) });
        }
        MMO_OK
    });
}

/// Borrows the histogram behind a handle for writing.
///
/// # Safety
/// `latency` NULL or a live handle that no other thread uses during the call.
unsafe fn handle_mut<'a>(latency: *mut MmoLatency) -> Result<&'a mut MmoLatency, MmoStatus> {
    let ptr = out_ptr(latency)?;
    // SAFETY: checked non-null and aligned; exclusivity is the caller's promise.
    Ok(unsafe { &mut *ptr })
}

/// Records `value` `count` times (a batch's updates share one latency). Allocates only when
/// `value` is the largest yet and past the counts' range (see the module doc).
///
/// # Safety
/// `latency` NULL or a live handle, used by no other thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_record(latency: *mut MmoLatency, value: u64, count: u64) -> MmoStatus {
    boundary(|| {
        // SAFETY: forwarded contract.
        let h = check!(unsafe { handle_mut(latency) });
        let clamped = value.clamp(1, h.highest);
        // Grows the counts when `clamped` is past them, at most to `highest`'s (48 MiB for
        // the widest, u64::MAX at 5 digits, as much as a whole allocation took before). The
        // only failure is a count of counts that does not fit a usize, which cannot happen for
        // any u64 range; should it, the value is counted at the largest the counts hold.
        if h.histogram.record_n(clamped, count).is_err() {
            h.histogram.saturating_record_n(clamped, count);
        }
        MMO_OK
    })
}

/// Adds every value of `from` into `into`. Both must have been created with the same highest
/// value and precision ([`MMO_ERR_INVALID_ARGUMENT`] otherwise, and `into` is unchanged).
/// `into`'s counts grow to cover `from`'s largest value if that is past them.
///
/// # Safety
/// Both live handles, distinct; `into` used by no other thread during the call, `from` not
/// written during it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_merge(into: *mut MmoLatency, from: *const MmoLatency) -> MmoStatus {
    boundary(|| {
        // Merging a histogram into itself is refused; two NULLs are NULLs, not one histogram.
        if !from.is_null() && std::ptr::eq(into.cast_const(), from) {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        // SAFETY: forwarded contract.
        let dst = check!(unsafe { handle_mut(into) });
        // SAFETY: forwarded contract.
        let src = check!(unsafe { in_ref(from) });
        let same_shape = dst.highest == src.highest && dst.histogram.sigfig() == src.histogram.sigfig();
        if !same_shape || dst.histogram.add(&src.histogram).is_err() {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        MMO_OK
    })
}

/// Clears every count (keeps the counts' range and allocation).
///
/// # Safety
/// `latency` NULL or a live handle, used by no other thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_reset(latency: *mut MmoLatency) -> MmoStatus {
    boundary(|| {
        // SAFETY: forwarded contract.
        let h = check!(unsafe { handle_mut(latency) });
        h.histogram.reset();
        MMO_OK
    })
}

/// Writes the histogram's percentiles to `*out_summary`.
///
/// # Safety
/// `latency` NULL or a live handle not written during the call; `out_summary` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_summary(latency: *const MmoLatency, out_summary: *mut MmoLatencySummary) -> MmoStatus {
    boundary(|| {
        // SAFETY: forwarded contract.
        let h = &check!(unsafe { in_ref(latency) }).histogram;
        let out = check!(out_ptr(out_summary));
        let summary = if h.is_empty() {
            MmoLatencySummary::default()
        } else {
            MmoLatencySummary {
                count: h.len(),
                min: h.min(),
                p50: h.value_at_quantile(0.50),
                p90: h.value_at_quantile(0.90),
                p99: h.value_at_quantile(0.99),
                p999: h.value_at_quantile(0.999),
                max: h.max(),
                mean: h.mean() as u64,
            }
        };
        // SAFETY: checked by out_ptr.
        unsafe { out.write(summary) };
        MMO_OK
    })
}

/// Cumulative counts of the histogram at `bounds_len` upper bounds (ascending, in the unit
/// recorded): `out_counts[i]` is how many values are at most `bounds[i]` (as the histogram's
/// precision resolves them), the shape of a Prometheus histogram's `le` buckets. Writes the
/// total count to `*out_count` and the sum of every value to `*out_sum` (each value taken at
/// its bucket's representative value; saturating, as the counts are). Bounds that are not
/// strictly ascending, and an `out_counts` that shares memory with `bounds`, are
/// [`MMO_ERR_INVALID_ARGUMENT`] (nothing written).
///
/// # Safety
/// `latency` NULL or a live handle not written during the call; `bounds`/`bounds_len` and
/// `out_counts`/`bounds_len` borrowed slices; `out_count` and `out_sum` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mmo_latency_buckets(
    latency: *const MmoLatency,
    bounds: *const u64,
    bounds_len: usize,
    out_counts: *mut u64,
    out_count: *mut u64,
    out_sum: *mut u64,
) -> MmoStatus {
    boundary(|| {
        // SAFETY: forwarded contract.
        let h = &check!(unsafe { in_ref(latency) }).histogram;
        // SAFETY: forwarded contract.
        let bounds = check!(unsafe { input(bounds, bounds_len) });
        // Refused before the output is borrowed: a caller's one buffer passed as both would
        // be zeroed while its bounds are still being read.
        if spans_overlap(bounds.as_ptr(), bounds.len(), out_counts.cast_const(), bounds_len) {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        // SAFETY: forwarded contract; shares no byte with `bounds` (checked above).
        let counts = check!(unsafe { output(out_counts, bounds_len) });
        let count_out = check!(out_ptr(out_count));
        let sum_out = check!(out_ptr(out_sum));
        if bounds.windows(2).any(|w| w[0] >= w[1]) {
            return MMO_ERR_INVALID_ARGUMENT;
        }
        counts.fill(0);
        let mut sum = 0u64;
        // One pass over the histogram's recorded values (each a bucket of equivalent values).
        for v in h.iter_recorded() {
            let value = h.highest_equivalent(v.value_iterated_to());
            let n = v.count_at_value();
            sum = sum.saturating_add(h.median_equivalent(value).saturating_mul(n));
            let first = bounds.partition_point(|&b| b < value);
            if first < counts.len() {
                counts[first] = counts[first].saturating_add(n);
            }
        }
        // Cumulative.
        for i in 1..counts.len() {
            counts[i] = counts[i].saturating_add(counts[i - 1]);
        }
        // SAFETY: checked by out_ptr.
        unsafe {
            count_out.write(h.len());
            sum_out.write(sum);
        }
        MMO_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    fn new_latency() -> *mut MmoLatency {
        let mut h = ptr::null_mut();
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { mmo_latency_new(60_000_000, 3, &mut h) }, MMO_OK);
        h
    }

    fn summary(h: *const MmoLatency) -> MmoLatencySummary {
        let mut s = MmoLatencySummary::default();
        // SAFETY: live handle, valid out-pointer.
        assert_eq!(unsafe { mmo_latency_summary(h, &mut s) }, MMO_OK);
        s
    }

    #[test]
    fn records_merges_and_summarises() {
        let (a, b) = (new_latency(), new_latency());
        // SAFETY: live, distinct handles on this thread only.
        unsafe {
            assert_eq!(mmo_latency_record(a, 100, 99), MMO_OK);
            assert_eq!(mmo_latency_record(b, 10_000, 1), MMO_OK);
            assert_eq!(mmo_latency_merge(a, b), MMO_OK);
        }
        let s = summary(a);
        assert_eq!(s.count, 100);
        assert_eq!((s.min, s.p50, s.p99), (100, 100, 100));
        assert!((9_990..=10_010).contains(&s.max), "max {} is 10,000 within 3 significant digits", s.max);
        // SAFETY: live handle.
        unsafe { assert_eq!(mmo_latency_reset(a), MMO_OK) };
        assert_eq!(summary(a), MmoLatencySummary::default());
        // SAFETY: live handles, freed once.
        unsafe {
            mmo_latency_free(a);
            mmo_latency_free(b);
        }
    }

    /// Counts in the histogram behind a live handle (its allocation, in `u64`s).
    fn counts_len(h: *const MmoLatency) -> usize {
        // SAFETY: a live handle not written during the call.
        unsafe { (*h).histogram.distinct_values() }
    }

    #[test]
    fn counts_grow_with_the_largest_value_and_only_then() {
        let (a, b) = (new_latency(), new_latency());
        let first = counts_len(a);
        assert!(first <= 5 * 1_024, "a new histogram holds its first range, not 1 us..60 s ({first} counts)");
        // SAFETY: live, distinct handles on this thread only.
        unsafe {
            assert_eq!(mmo_latency_record(a, FIRST_RANGE, 1), MMO_OK);
            assert_eq!(counts_len(a), first, "a value in range does not grow the counts");
            assert_eq!(mmo_latency_record(a, 40_000, 2), MMO_OK);
            let grown = counts_len(a);
            assert!(grown > first && grown < 17_408, "grown to cover 40 ms, not 60 s ({grown} counts)");
            assert_eq!(mmo_latency_record(a, 20_000, 1), MMO_OK);
            assert_eq!(counts_len(a), grown, "a smaller value than the largest does not grow them");
            // The merge grows the target to its source's range and loses nothing.
            assert_eq!(mmo_latency_merge(b, a), MMO_OK);
            assert_eq!(counts_len(b), grown);
            let s = summary(b);
            assert_eq!(s.count, 4);
            assert!((39_960..=40_040).contains(&s.max), "max {} is 40,000 within 3 significant digits", s.max);
            // And a source narrower than the target merges into it.
            let c = new_latency();
            assert_eq!(mmo_latency_record(c, 7, 5), MMO_OK);
            assert_eq!(mmo_latency_merge(b, c), MMO_OK);
            assert_eq!((summary(b).count, summary(b).min), (9, 7));
            // A reset keeps the range: the next run's values land without growing again.
            assert_eq!(mmo_latency_reset(b), MMO_OK);
            assert_eq!(counts_len(b), grown);
            // Past the highest value asked for, the value is clamped, and the counts stop there.
            assert_eq!(mmo_latency_record(c, u64::MAX, 1), MMO_OK);
            let top = counts_len(c);
            assert_eq!(mmo_latency_record(c, u64::MAX / 2, 1), MMO_OK);
            assert_eq!(counts_len(c), top);
            assert!(summary(c).max >= 60_000_000 && summary(c).max < 60_100_000, "clamped to 60 s");
            mmo_latency_free(a);
            mmo_latency_free(b);
            mmo_latency_free(c);
        }
    }

    #[test]
    fn buckets_are_cumulative_counts_at_the_bounds() {
        let h = new_latency();
        // SAFETY: live handle on this thread; valid slices and out-pointers.
        unsafe {
            for (value, n) in [(50u64, 10u64), (150, 5), (1_000, 3), (2_000_000, 1)] {
                assert_eq!(mmo_latency_record(h, value, n), MMO_OK);
            }
            let bounds = [100u64, 500, 1_000, 10_000];
            let mut counts = [7u64; 4];
            let (mut count, mut sum) = (0u64, 0u64);
            assert_eq!(mmo_latency_buckets(h, bounds.as_ptr(), 4, counts.as_mut_ptr(), &mut count, &mut sum), MMO_OK);
            assert_eq!(counts, [10, 15, 18, 18]);
            assert_eq!(count, 19);
            let exact = 50 * 10 + 150 * 5 + 1_000 * 3 + 2_000_000;
            assert!(sum.abs_diff(exact) < exact / 500, "sum {sum} is {exact} within the histogram's precision");
            let unsorted = [500u64, 100];
            assert_eq!(mmo_latency_buckets(h, unsorted.as_ptr(), 2, counts.as_mut_ptr(), &mut count, &mut sum), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(mmo_latency_buckets(h, ptr::null(), 2, counts.as_mut_ptr(), &mut count, &mut sum), crate::MMO_ERR_NULL_POINTER);
            mmo_latency_free(h);
        }
    }

    #[test]
    fn hostile_bucket_arguments_get_statuses_and_write_nothing() {
        let h = new_latency();
        // SAFETY: a live handle on this thread; every pointer is NULL, valid, or deliberately
        // shared between two arguments (the case under test).
        unsafe {
            assert_eq!(mmo_latency_record(h, 50, 3), MMO_OK);
            let bounds = [100u64, 500];
            let (mut counts, mut count, mut sum) = ([7u64; 2], 7u64, 7u64);
            let untouched = |counts: [u64; 2], count: u64, sum: u64| assert_eq!((counts, count, sum), ([7, 7], 7, 7));
            let call = |bounds: *const u64, len: usize, counts: *mut u64, count: *mut u64, sum: *mut u64| {
                mmo_latency_buckets(h, bounds, len, counts, count, sum)
            };
            assert_eq!(call(bounds.as_ptr(), 2, ptr::null_mut(), &mut count, &mut sum), crate::MMO_ERR_NULL_POINTER);
            assert_eq!(call(bounds.as_ptr(), 2, counts.as_mut_ptr(), ptr::null_mut(), &mut sum), crate::MMO_ERR_NULL_POINTER);
            assert_eq!(call(bounds.as_ptr(), 2, counts.as_mut_ptr(), &mut count, ptr::null_mut()), crate::MMO_ERR_NULL_POINTER);
            let misaligned = (counts.as_mut_ptr() as usize + 1) as *mut u64;
            assert_eq!(call(bounds.as_ptr(), 2, misaligned, &mut count, &mut sum), crate::MMO_ERR_MISALIGNED_POINTER);
            assert_eq!(call(bounds.as_ptr(), usize::MAX / 4, counts.as_mut_ptr(), &mut count, &mut sum), MMO_ERR_INVALID_ARGUMENT);
            let equal = [100u64, 100];
            assert_eq!(call(equal.as_ptr(), 2, counts.as_mut_ptr(), &mut count, &mut sum), MMO_ERR_INVALID_ARGUMENT);
            untouched(counts, count, sum);
            // One buffer as both the bounds and the counts, whole or in part.
            let mut shared = [100u64, 500, 1_000];
            assert_eq!(call(shared.as_ptr(), 2, shared.as_mut_ptr(), &mut count, &mut sum), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(call(shared.as_ptr(), 2, shared.as_mut_ptr().add(1), &mut count, &mut sum), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(shared, [100, 500, 1_000], "the bounds are not written");
            untouched(counts, count, sum);
            // Adjacent is not shared.
            let (bounds_part, counts_part) = shared.split_at_mut(1);
            assert_eq!(call(bounds_part.as_ptr(), 1, counts_part.as_mut_ptr(), &mut count, &mut sum), MMO_OK);
            assert_eq!((counts_part[0], count), (3, 3));
            // No bounds: only the totals.
            assert_eq!(call(ptr::null(), 0, ptr::null_mut(), &mut count, &mut sum), MMO_OK);
            assert_eq!(count, 3);
            mmo_latency_free(h);
        }
    }

    #[test]
    fn counts_past_u64_saturate_in_the_buckets() {
        let h = new_latency();
        // SAFETY: live handle on this thread; valid slices and out-pointers.
        unsafe {
            assert_eq!(mmo_latency_record(h, 10, u64::MAX), MMO_OK);
            assert_eq!(mmo_latency_record(h, 1_000, u64::MAX), MMO_OK);
            let bounds = [100u64, 10_000];
            let (mut counts, mut count, mut sum) = ([0u64; 2], 0u64, 0u64);
            assert_eq!(mmo_latency_buckets(h, bounds.as_ptr(), 2, counts.as_mut_ptr(), &mut count, &mut sum), MMO_OK);
            assert_eq!(counts, [u64::MAX, u64::MAX]);
            assert_eq!(sum, u64::MAX);
            mmo_latency_free(h);
        }
    }

    #[test]
    fn out_of_range_values_are_clamped_not_lost() {
        let h = new_latency();
        // SAFETY: live handle.
        unsafe {
            assert_eq!(mmo_latency_record(h, 0, 1), MMO_OK);
            assert_eq!(mmo_latency_record(h, u64::MAX, 1), MMO_OK);
        }
        let s = summary(h);
        assert_eq!(s.count, 2);
        assert_eq!(s.min, 1);
        assert!(s.max >= 60_000_000);
        // SAFETY: live handle, freed once.
        unsafe { mmo_latency_free(h) };
    }

    #[test]
    fn hostile_arguments_get_statuses() {
        let mut h = ptr::null_mut();
        // SAFETY: every pointer is NULL, valid, or a live handle; the NULL and self-merge
        // cases are what is under test.
        unsafe {
            assert_eq!(mmo_latency_new(1, 3, &mut h), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(mmo_latency_new(1000, 0, &mut h), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(mmo_latency_new(1000, 6, &mut h), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(mmo_latency_new(1000, 3, ptr::null_mut()), crate::MMO_ERR_NULL_POINTER);
            assert!(h.is_null(), "no output on failure");
            assert_eq!(mmo_latency_record(ptr::null_mut(), 1, 1), crate::MMO_ERR_NULL_POINTER);
            assert_eq!(mmo_latency_summary(ptr::null(), ptr::null_mut()), crate::MMO_ERR_NULL_POINTER);
            let a = new_latency();
            assert_eq!(mmo_latency_merge(a, a), MMO_ERR_INVALID_ARGUMENT);
            assert_eq!(mmo_latency_merge(a, ptr::null()), crate::MMO_ERR_NULL_POINTER);
            let mut other = ptr::null_mut();
            assert_eq!(mmo_latency_new(1000, 2, &mut other), MMO_OK);
            assert_eq!(mmo_latency_merge(a, other), MMO_ERR_INVALID_ARGUMENT, "different shapes do not merge");
            mmo_latency_free(other);
            assert_eq!(mmo_latency_new(1_000, 3, &mut other), MMO_OK);
            assert_eq!(mmo_latency_record(other, 10, 1), MMO_OK);
            assert_eq!(mmo_latency_merge(a, other), MMO_ERR_INVALID_ARGUMENT, "another highest value does not merge");
            assert_eq!(summary(a).count, 0, "and the target is unchanged");
            assert_eq!(mmo_latency_summary(a, ptr::null_mut()), crate::MMO_ERR_NULL_POINTER);
            mmo_latency_free(other);
            assert_eq!(mmo_latency_reset(ptr::null_mut()), crate::MMO_ERR_NULL_POINTER);
            assert_eq!(mmo_latency_merge(ptr::null_mut(), a), crate::MMO_ERR_NULL_POINTER);
            assert_eq!(mmo_latency_merge(ptr::null_mut(), ptr::null()), crate::MMO_ERR_NULL_POINTER);
            // A handle pointer that is not a handle's alignment is refused before it is read.
            let misaligned = (a as usize + 1) as *mut MmoLatency;
            assert_eq!(mmo_latency_record(misaligned, 1, 1), crate::MMO_ERR_MISALIGNED_POINTER);
            assert_eq!(mmo_latency_reset(misaligned), crate::MMO_ERR_MISALIGNED_POINTER);
            assert_eq!(mmo_latency_merge(misaligned, a), crate::MMO_ERR_MISALIGNED_POINTER);
            assert_eq!(mmo_latency_merge(a, misaligned), crate::MMO_ERR_MISALIGNED_POINTER);
            let mut s = MmoLatencySummary::default();
            assert_eq!(mmo_latency_summary(misaligned, &mut s), crate::MMO_ERR_MISALIGNED_POINTER);
            assert_eq!(mmo_latency_new(u64::MAX, 5, &mut other), MMO_OK, "the widest histogram there is");
            assert_eq!(mmo_latency_record(other, u64::MAX, u64::MAX), MMO_OK);
            mmo_latency_free(other);
            mmo_latency_free(a);
            mmo_latency_free(ptr::null_mut());
        }
    }
}
