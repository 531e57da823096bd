//! **false sharing**: two worker threads each incrementing their own counter, with the two
//! counters packed next to each other (one cache line) against each on its own
//! `crossbeam_utils::CachePadded` block (128 bytes on x86-64, because the adjacent-line
//! prefetcher pulls lines in pairs), plus one counter both threads share, for scale.
//!
//! What it shows: why `mmo_core::stats` stripes its counters into `CachePadded` blocks. The
//! packed layout makes both cores fight over one line although no value is shared; on a VM
//! whose two vCPUs may share a physical core the gap is smaller than on real hardware, and
//! the table in `benches/README.md` says what this machine shows.

use criterion::{BenchmarkId, Criterion, criterion_group};
use crossbeam_utils::CachePadded;
use mmo_benches::timed_rounds;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const INCREMENTS_PER_ROUND: u64 = 100_000;

fn hammer(counter: &AtomicU64) {
    for _ in 0..INCREMENTS_PER_ROUND {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

fn bench_false_sharing(c: &mut Criterion) {
    let mut group = c.benchmark_group("false_sharing_2_threads_100k_increments_each");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    let packed: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
    // Rounds each layout ran: none when a filter (`cargo bench -- aoi`) leaves it out.
    let (packed_rounds, padded_rounds) = (Cell::new(0u64), Cell::new(0u64));
    group.bench_function(BenchmarkId::from_parameter("packed"), |b| {
        b.iter_custom(|iters| {
            packed_rounds.set(packed_rounds.get() + iters);
            timed_rounds(2, iters, |_| (), |t, _| hammer(&packed[t]))
        })
    });
    let padded: [CachePadded<AtomicU64>; 2] = [CachePadded::new(AtomicU64::new(0)), CachePadded::new(AtomicU64::new(0))];
    group.bench_function(BenchmarkId::from_parameter("cache_padded"), |b| {
        b.iter_custom(|iters| {
            padded_rounds.set(padded_rounds.get() + iters);
            timed_rounds(2, iters, |_| (), |t, _| hammer(&padded[t]))
        })
    });
    let shared = AtomicU64::new(0);
    group.bench_function(BenchmarkId::from_parameter("one_shared_counter"), |b| {
        b.iter_custom(|iters| timed_rounds(2, iters, |_| (), |_, _| hammer(&shared)))
    });
    group.finish();
    // Each thread's counter took every increment of every round, whichever layout.
    for t in 0..2 {
        assert_eq!(packed[t].load(Ordering::Relaxed), packed_rounds.get() * INCREMENTS_PER_ROUND);
        assert_eq!(padded[t].load(Ordering::Relaxed), padded_rounds.get() * INCREMENTS_PER_ROUND);
    }
}

criterion_group!(benches, bench_false_sharing);
