//! **snapshot**: publishing a per-tick snapshot that readers use while the next one is being
//! built: the core's `SnapshotBoard` (three reused buffers, rebuilt in place, a reader count
//! per buffer) against crossbeam-epoch (swap the pointer, defer the old one's destruction),
//! arc-swap and an `RwLock<Arc<_>>` (each of which allocates a fresh snapshot per tick), plus
//! the sequence-locked `TickBoard` the core uses for its small per-tick summary.
//!
//! Two measurements: the tick's cost to publish one snapshot (1 thread), and a reader's cost
//! to read the latest snapshot while a second thread publishes continuously (2 threads).
//! The snapshot is a 1,024-entry area-of-interest table (8 KiB), the size of thing a tick
//! would hand to network workers.
//!
//! What it shows: where crossbeam-epoch earns its place (large snapshots, readers never
//! block and never touch a shared reference count) and why the core's tick summary, a few
//! words, uses a sequence lock instead: nothing to allocate, nothing to reclaim.

use arc_swap::ArcSwap;
use criterion::{BenchmarkId, Criterion, criterion_group};
use crossbeam_epoch::{self as epoch, Atomic, Owned};
use mmo_core::snapshot::{SnapshotBoard, SnapshotWriter};
use mmo_core::tick::{TickBoard, TickInfo};
use parking_lot::{Mutex, RwLock};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const ENTRIES: usize = 1_024;

/// One tick's area-of-interest table.
struct Snapshot {
    tick: u64,
    entries: Vec<u64>,
}

fn build(tick: u64) -> Snapshot {
    Snapshot { tick, entries: (0..ENTRIES as u64).map(|i| i ^ tick).collect() }
}

/// What a reader does with a snapshot: look at its tick and one entry.
#[inline]
fn consume(s: &Snapshot) -> u64 {
    s.tick + s.entries[(s.tick as usize) % ENTRIES]
}

/// A publication scheme under test.
trait Board: Sync {
    fn publish(&self, s: Snapshot);
    fn read(&self) -> u64;
    /// Builds tick `tick`'s snapshot and publishes it (the allocating schemes build a new one).
    fn publish_tick(&self, tick: u64) {
        self.publish(build(tick));
    }
}

/// The core's board: three buffers rebuilt in place; no allocation once they have grown.
struct ReusedBuffers {
    board: SnapshotBoard<Snapshot>,
    /// The one writer's token (a bench thread publishes; the lock is never contended).
    writer: Mutex<SnapshotWriter>,
}
impl Board for ReusedBuffers {
    fn publish(&self, s: Snapshot) {
        let mut writer = self.writer.lock();
        if let Some(mut slot) = self.board.begin_write(&mut writer) {
            slot.tick = s.tick;
            slot.entries.clear();
            slot.entries.extend_from_slice(&s.entries);
            self.board.publish(slot);
        }
    }
    fn read(&self) -> u64 {
        self.board.pin().map_or(0, |s| consume(&s))
    }
    fn publish_tick(&self, tick: u64) {
        let mut writer = self.writer.lock();
        if let Some(mut slot) = self.board.begin_write(&mut writer) {
            slot.tick = tick;
            slot.entries.clear();
            slot.entries.extend((0..ENTRIES as u64).map(|i| i ^ tick));
            self.board.publish(slot);
        }
    }
}

struct EpochBoard(Atomic<Snapshot>);
impl Board for EpochBoard {
    fn publish(&self, s: Snapshot) {
        let guard = epoch::pin();
        let old = self.0.swap(Owned::new(s), Ordering::AcqRel, &guard);
        // SAFETY: `old` is unlinked; readers that still see it are pinned, and the epoch
        // scheme frees it only after they unpin.
        unsafe { guard.defer_destroy(old) };
    }
    fn read(&self) -> u64 {
        let guard = epoch::pin();
        // SAFETY: the pointer is valid while `guard` is pinned and is never null (initialised
        // in `new` and only ever swapped for another non-null snapshot).
        consume(unsafe { self.0.load(Ordering::Acquire, &guard).deref() })
    }
}
impl Drop for EpochBoard {
    fn drop(&mut self) {
        // SAFETY: no other thread can reach the board while it is dropped.
        unsafe { drop(self.0.load(Ordering::Relaxed, epoch::unprotected()).into_owned()) };
    }
}

struct ArcSwapBoard(ArcSwap<Snapshot>);
impl Board for ArcSwapBoard {
    fn publish(&self, s: Snapshot) {
        self.0.store(Arc::new(s));
    }
    fn read(&self) -> u64 {
        consume(&self.0.load())
    }
}

struct RwLockBoard(RwLock<Arc<Snapshot>>);
impl Board for RwLockBoard {
    fn publish(&self, s: Snapshot) {
        *self.0.write() = Arc::new(s);
    }
    fn read(&self) -> u64 {
        consume(&self.0.read())
    }
}

fn boards() -> Vec<(&'static str, Box<dyn Board>)> {
    let (board, writer) = SnapshotBoard::new(|| build(0));
    let reused = ReusedBuffers { board, writer: Mutex::new(writer) };
    reused.publish_tick(0);
    vec![
        ("snapshot_board_reused_buffers", Box::new(reused)),
        ("crossbeam_epoch", Box::new(EpochBoard(Atomic::new(build(0))))),
        ("arc_swap", Box::new(ArcSwapBoard(ArcSwap::from_pointee(build(0))))),
        ("rwlock_arc", Box::new(RwLockBoard(RwLock::new(Arc::new(build(0)))))),
    ]
}

fn bench_snapshot(c: &mut Criterion) {
    let mut publish = c.benchmark_group("snapshot_publish_1k_entries");
    publish.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for (name, board) in boards() {
        let mut tick = 0;
        publish.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter(|| {
                tick += 1;
                board.publish_tick(tick);
            })
        });
    }
    let tick_board = TickBoard::new();
    let mut tick = 0u32;
    publish.bench_function(BenchmarkId::from_parameter("tick_board_seqlock_summary"), |b| {
        b.iter(|| {
            tick += 1;
            tick_board.publish(&TickInfo { tick, now_ms: u64::from(tick) * 50, ..TickInfo::default() });
        })
    });
    publish.finish();

    let mut read = c.benchmark_group("snapshot_read_while_publishing");
    read.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    for (name, board) in boards() {
        let board = &*board;
        let mut tick = 0;
        read.bench_function(BenchmarkId::from_parameter(name), |b| {
            b.iter_custom(|iters| {
                read_while_publishing(
                    iters,
                    || {
                        tick += 1;
                        board.publish_tick(tick);
                    },
                    || board.read(),
                )
            })
        });
    }
    let tick_board = TickBoard::new();
    let mut tick = 0u32;
    read.bench_function(BenchmarkId::from_parameter("tick_board_seqlock_summary"), |b| {
        b.iter_custom(|iters| {
            read_while_publishing(
                iters,
                || {
                    tick = tick.wrapping_add(1);
                    tick_board.publish(&TickInfo { tick, ..TickInfo::default() });
                },
                || tick_board.read(),
            )
        })
    });
    read.finish();
}

/// Times `iters` calls of `read` on this thread while a second thread calls `publish` in a
/// loop.
fn read_while_publishing<R>(iters: u64, mut publish: impl FnMut() + Send, read: impl Fn() -> R) -> Duration {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                publish();
            }
        });
        let start = Instant::now();
        for _ in 0..iters {
            black_box(read());
        }
        let spent = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        spent
    })
}

criterion_group!(benches, bench_snapshot);
