//! **allocator**: the system allocator (glibc malloc) against mimalloc against jemalloc on the
//! two workloads of the source case: a one-player card game that allocates and shuffles a
//! deck (and four hands) per game, and per-line string quoting across worker threads; plus a
//! third, the shape of raid expiry: objects allocated on one thread and freed on another.
//! Threads: 1 and 2 here; `MMO_BENCH_MAX_THREADS=16` extends the sweep on a larger machine.
//!
//! Each allocator is called through its `GlobalAlloc` implementation directly, so all three
//! run in the same process and the same run (the process's own global allocator is not
//! involved in the measured calls).
//!
//! What it shows: whether the allocator, not the game logic, sets the cost of small
//! short-lived allocations, and how that cost scales when threads allocate at once (glibc's
//! arenas vs mimalloc's and jemalloc's per-thread caches).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group};
use mmo_benches::timed_rounds;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Duration;

static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;
static JEMALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const GAMES_PER_ROUND: usize = 2_000;
const HANDOFFS_PER_ROUND: usize = 2_000;
const LINES_PER_ROUND: usize = 2_000;

/// A raw buffer from one allocator, freed on drop: the workloads' only way to allocate.
struct Buffer<'a> {
    alloc: &'a dyn GlobalAlloc,
    ptr: *mut u8,
    layout: Layout,
}

impl<'a> Buffer<'a> {
    fn new(alloc: &'a dyn GlobalAlloc, len: usize) -> Self {
        let layout = Layout::array::<u8>(len.max(1)).expect("small layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc.alloc(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        Self { alloc, ptr, layout }
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` owns `layout.size()` bytes, written before they are read below.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc` with `layout`.
        unsafe { self.alloc.dealloc(self.ptr, self.layout) }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One game: allocate a 52-card deck, shuffle it, deal four 13-card hands (each its own
/// allocation, as the source case's code did), score them, free everything.
fn card_game(alloc: &dyn GlobalAlloc, rng: &mut Rng) -> u64 {
    let mut deck = Buffer::new(alloc, 52);
    let cards = deck.bytes();
    for (i, c) in cards.iter_mut().enumerate() {
        *c = i as u8;
    }
    for i in (1..52).rev() {
        cards.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    let mut score = 0u64;
    for hand in 0..4 {
        let mut h = Buffer::new(alloc, 13);
        h.bytes().copy_from_slice(&cards[hand * 13..hand * 13 + 13]);
        score += h.bytes().iter().map(|&c| u64::from(c % 13)).sum::<u64>();
    }
    score
}

/// Quotes one CSV-ish line into a freshly allocated buffer (worst case twice the length plus
/// the quotes), as a per-line string formatting step would.
fn quote_line(alloc: &dyn GlobalAlloc, line: &[u8]) -> usize {
    let mut out = Buffer::new(alloc, line.len() * 2 + 2);
    let buf = out.bytes();
    let mut n = 0;
    buf[n] = b'"';
    n += 1;
    for &ch in line {
        if ch == b'"' {
            buf[n] = b'"';
            n += 1;
        }
        buf[n] = ch;
        n += 1;
    }
    buf[n] = b'"';
    n + 1
}

fn lines() -> Vec<Vec<u8>> {
    let mut rng = Rng(0x5EED);
    (0..64)
        .map(|i| (0..(20 + i * 3)).map(|_| if rng.next().is_multiple_of(11) { b'"' } else { b'a' + (rng.next() % 26) as u8 }).collect())
        .collect()
}

/// One thread's batch of live allocations, handed to the next thread to free.
type Batch = Vec<(usize, Layout)>;

/// Frees a batch allocated (possibly on another thread) by `alloc`.
fn free_batch(alloc: &dyn GlobalAlloc, batch: &mut Batch) {
    for (ptr, layout) in batch.drain(..) {
        // SAFETY: allocated by `alloc` with `layout` in `cross_thread_round`, freed once.
        unsafe { alloc.dealloc(ptr as *mut u8, layout) };
    }
}

/// One round of the hand-off workload on thread `t` of `threads`: free the batch thread
/// `t - 1` allocated last round (with one thread: its own), then allocate a new batch of
/// 16..=256-byte objects for thread `t + 1` to free.
fn cross_thread_round(alloc: &dyn GlobalAlloc, slots: &[parking_lot::Mutex<Batch>], t: usize, rng: &mut Rng) {
    let threads = slots.len();
    let from = (t + threads - 1) % threads;
    let mut previous = std::mem::take(&mut *slots[from].lock());
    free_batch(alloc, &mut previous);
    let mut batch: Batch = previous; // reuse the vector's capacity
    for _ in 0..HANDOFFS_PER_ROUND {
        let layout = Layout::from_size_align(16 + (rng.next() % 241) as usize, 8).expect("small layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc.alloc(layout) };
        assert!(!ptr.is_null(), "allocation failed");
        // SAFETY: the block is `layout.size()` bytes; touch it as a real object would be.
        unsafe { ptr.write_bytes(t as u8, layout.size()) };
        batch.push((ptr as usize, layout));
    }
    // Rounds are separated by a barrier, so thread `t + 1` takes this batch next round; the
    // slot it is put in is this thread's own.
    *slots[t].lock() = batch;
}

fn allocators() -> [(&'static str, &'static (dyn GlobalAlloc + Sync)); 3] {
    [("system", &System), ("mimalloc", &MIMALLOC), ("jemalloc", &JEMALLOC)]
}

fn thread_counts() -> Vec<usize> {
    let max = std::env::var("MMO_BENCH_MAX_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(2usize);
    [1, 2, 4, 8, 16].into_iter().filter(|&t| t <= max).collect()
}

fn bench_allocators(c: &mut Criterion) {
    let text = lines();
    for (workload, per_round) in [("card_game", GAMES_PER_ROUND), ("string_quoting", LINES_PER_ROUND)] {
        let mut group = c.benchmark_group(format!("allocator_{workload}"));
        group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
        for threads in thread_counts() {
            // Every thread does `per_round` operations: throughput counts all of them.
            group.throughput(Throughput::Elements((per_round * threads) as u64));
            for (name, alloc) in allocators() {
                let text = &text;
                group.bench_function(BenchmarkId::new(name, threads), |b| {
                    b.iter_custom(|iters| {
                        timed_rounds(
                            threads,
                            iters,
                            |t| Rng(0x9E37_79B9 ^ t as u64),
                            |_, rng| {
                                let mut sum = 0u64;
                                for i in 0..per_round {
                                    sum += match workload {
                                        "card_game" => card_game(alloc, rng),
                                        _ => quote_line(alloc, &text[i % text.len()]) as u64,
                                    };
                                }
                                black_box(sum);
                            },
                        )
                    })
                });
            }
        }
        group.finish();
    }

    let mut group = c.benchmark_group("allocator_cross_thread_free");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for threads in thread_counts() {
        group.throughput(Throughput::Elements((HANDOFFS_PER_ROUND * threads) as u64));
        for (name, alloc) in allocators() {
            group.bench_function(BenchmarkId::new(name, threads), |b| {
                let slots: Vec<parking_lot::Mutex<Batch>> = (0..threads).map(|_| parking_lot::Mutex::new(Vec::new())).collect();
                b.iter_custom(|iters| {
                    timed_rounds(threads, iters, |t| Rng(0xC0FFEE ^ t as u64), |t, rng| cross_thread_round(alloc, &slots, t, rng))
                });
                for slot in &slots {
                    free_batch(alloc, &mut slot.lock());
                }
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_allocators);
