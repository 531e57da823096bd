//! **arena**: an 11,000-object raid spawn followed by its despawn, in the arena the core uses
//! (sharded-slab with `RaidArenaConfig`, one slot per pack of 64 objects, cold and warmed)
//! against the core's arena before packs (one sharded-slab slot per 32-byte object) and the
//! two obvious alternatives, an object at a time: one `Mutex<slab::Slab>` shared by every
//! thread, and `Mutex<Vec<Box<T>>>` (a heap allocation per object, the `shared_ptr`-per-entity
//! habit).
//! 1 and 2 threads; with 2, each thread spawns and despawns half of the burst at the same moment.
//!
//! What it shows: warmed sharded-slab never touches the allocator and never makes one thread
//! wait on another's lock; with a slot per pack it pays its per-insert costs (the slot's
//! lifecycle compare-and-swap, the walk past full pages, the free-list pop) once per 64
//! objects; the mutex slab serialises the threads on one lock (and on this 2-vCPU machine the
//! second thread also competes for the core); `Vec<Box<T>>` pays malloc and free per object.
//! The sharded-slab rounds free on the thread that spawned (the core frees from the tick thread,
//! and counts a pack down before it frees it). "Cold" pays for sharded-slab's page allocation every burst, which is why the engine keeps
//! every page a thread's shard has grown: only a thread's first raid (or the first with more
//! objects alive than ever) pays it.

use criterion::{BenchmarkId, Criterion, criterion_group};
use mmo_benches::timed_rounds;
use mmo_core::arena::{RAID_PACK_OBJECTS, RaidArenaConfig};
use mmo_core::records::EntityKind;
use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};
use std::time::Duration;

const BURST: usize = 11_000;

/// The shape of a raid object in a pack in the core: hit points, spawn position and cell, loot
/// word.
/// (Only its size and shape matter here; nothing reads the fields.)
#[allow(dead_code)]
struct RaidObject {
    hp: AtomicI32,
    x_m: f32,
    y_m: f32,
    cell: u32,
    loot: AtomicU64,
}

fn object(i: usize) -> RaidObject {
    RaidObject { hp: AtomicI32::new(100), x_m: i as f32, y_m: 1.0, cell: 7, loot: AtomicU64::new(0) }
}

/// The shape of the core's pack: a live count, what the objects share, and 64 objects
/// (1,544 bytes; `kind`'s spare values hold the arena's `None`, as in the core).
#[allow(dead_code)]
struct RaidPack {
    live: AtomicU32,
    len: u8,
    kind: EntityKind,
    faction: u8,
    objects: [RaidObject; RAID_PACK_OBJECTS],
}

/// The shape of a raid object before packs (32 bytes): everything it has now, and its kind,
/// faction and expiry.
#[allow(dead_code)]
struct LoneRaidObject {
    hp: AtomicI32,
    kind: EntityKind,
    faction: u8,
    expires_tick: u32,
    x_m: f32,
    y_m: f32,
    cell: u32,
    loot: AtomicU64,
}

fn lone(i: usize) -> LoneRaidObject {
    LoneRaidObject {
        hp: AtomicI32::new(100),
        kind: EntityKind::Add,
        faction: 7,
        expires_tick: 9,
        x_m: i as f32,
        y_m: 1.0,
        cell: 7,
        loot: AtomicU64::new(0),
    }
}

const _: () = assert!(std::mem::size_of::<Option<RaidPack>>() == 8 + 24 * RAID_PACK_OBJECTS);
const _: () = assert!(std::mem::size_of::<Option<LoneRaidObject>>() == 32);

/// The raid arena's configuration before packs: a slot per object, first pages of 4,096 and
/// 8,192 slots.
#[derive(Clone, Copy, Debug)]
struct PerObjectConfig;

impl sharded_slab::Config for PerObjectConfig {
    const MAX_THREADS: usize = 4_096;
    const MAX_PAGES: usize = 13;
    const INITIAL_PAGE_SIZE: usize = 4_096;
    const RESERVED_BITS: usize = 2;
}

type PackSlab = sharded_slab::Slab<RaidPack, RaidArenaConfig>;
type PerObjectSlab = sharded_slab::Slab<LoneRaidObject, PerObjectConfig>;

/// Spawns `share` objects in packs of 64 (the core's way), then frees the packs.
fn pack_round(slab: &PackSlab, share: usize, keys: &mut Vec<usize>) {
    keys.clear();
    let mut left = share;
    while left > 0 {
        let n = left.min(RAID_PACK_OBJECTS);
        let pack = RaidPack {
            live: AtomicU32::new(n as u32),
            len: n as u8,
            kind: EntityKind::Add,
            faction: 7,
            objects: std::array::from_fn(object),
        };
        keys.push(slab.insert(pack).expect("arena has room"));
        left -= n;
    }
    for &k in keys.iter() {
        slab.remove(k);
    }
}

fn per_object_round(slab: &PerObjectSlab, share: usize, keys: &mut Vec<usize>) {
    keys.clear();
    for i in 0..share {
        keys.push(slab.insert(lone(i)).expect("arena has room"));
    }
    for &k in keys.iter() {
        slab.remove(k);
    }
}

/// `iters` timed rounds of `round` on each of `threads` threads, after one untimed round each
/// that warms the thread's shard of the arena.
fn warmed_rounds(threads: usize, iters: u64, share: usize, round: impl Fn(&mut Vec<usize>) + Sync) -> Duration {
    timed_rounds(
        threads,
        iters,
        |_| {
            let mut keys = Vec::with_capacity(share);
            round(&mut keys);
            keys
        },
        |_, keys| round(keys),
    )
}

fn bench_arena(c: &mut Criterion) {
    let mut group = c.benchmark_group("arena_raid_11k_spawn_despawn");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    for threads in [1usize, 2] {
        let share = BURST / threads;

        group.bench_function(BenchmarkId::new("sharded_slab_packs_warm", threads), |b| {
            let slab: PackSlab = sharded_slab::Slab::new_with_config::<RaidArenaConfig>();
            b.iter_custom(|iters| warmed_rounds(threads, iters, share, |keys| pack_round(&slab, share, keys)))
        });

        group.bench_function(BenchmarkId::new("sharded_slab_packs_cold", threads), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let slab: PackSlab = sharded_slab::Slab::new_with_config::<RaidArenaConfig>();
                    total += timed_rounds(threads, 1, |_| Vec::with_capacity(share), |_, keys| pack_round(&slab, share, keys));
                }
                total
            })
        });

        group.bench_function(BenchmarkId::new("sharded_slab_per_object_warm", threads), |b| {
            let slab: PerObjectSlab = sharded_slab::Slab::new_with_config::<PerObjectConfig>();
            b.iter_custom(|iters| warmed_rounds(threads, iters, share, |keys| per_object_round(&slab, share, keys)))
        });

        group.bench_function(BenchmarkId::new("mutex_slab", threads), |b| {
            let slab = Mutex::new(slab::Slab::<LoneRaidObject>::with_capacity(BURST));
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| Vec::with_capacity(share),
                    |_, keys: &mut Vec<usize>| {
                        keys.clear();
                        for i in 0..share {
                            keys.push(slab.lock().insert(lone(i)));
                        }
                        for &k in keys.iter() {
                            black_box(slab.lock().remove(k));
                        }
                    },
                )
            })
        });

        group.bench_function(BenchmarkId::new("mutex_vec_box", threads), |b| {
            let objects: Mutex<Vec<Box<LoneRaidObject>>> = Mutex::new(Vec::with_capacity(BURST));
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| (),
                    |t, _| {
                        for i in 0..share {
                            objects.lock().push(Box::new(lone(i)));
                        }
                        // Despawn: each thread drops its share (whoever's they are: the
                        // count is what matters for the allocator).
                        for _ in 0..share {
                            let gone = objects.lock().pop();
                            black_box((t, gone));
                        }
                    },
                )
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_arena);
