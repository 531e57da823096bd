//! **arena**: an 11,000-object raid spawn followed by its despawn, in the arena the core uses
//! (sharded-slab with `RaidArenaConfig`, one slot per pack of 64 objects, cold and warmed)
//! against the core's arena before packs (one sharded-slab slot per object) and the two
//! obvious alternatives: one `Mutex<slab::Slab>` shared by every thread, and
//! `Mutex<Vec<Box<T>>>` (a heap allocation per object, the `shared_ptr`-per-entity habit).
//! 1 and 2 threads; with 2, each thread spawns and despawns half of the burst at the same moment.
//!
//! What it shows: warmed sharded-slab never touches the allocator and never makes two
//! threads wait for each other; with a slot per pack it pays its per-insert costs (the slot's
//! lifecycle compare-and-swap, the walk past full pages, the free-list pop) once per 64
//! objects; the mutex slab serialises the threads on one lock (and on this 2-vCPU machine the
//! second thread also competes for the core); `Vec<Box<T>>` pays malloc and free per object.
//! "Cold" pays for sharded-slab's page allocation every burst, which is why the engine keeps
//! every page a thread's shard has grown: only a thread's first raid (or the first with more
//! objects alive than ever) pays it.

use criterion::{BenchmarkId, Criterion, criterion_group};
use mmo_benches::timed_rounds;
use mmo_core::arena::{RAID_PACK_OBJECTS, RaidArenaConfig};
use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};
use std::time::Duration;

const BURST: usize = 11_000;

/// The shape of a raid object in the core: hit points, spawn position and cell, loot word.
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

/// The shape of the core's pack: a live count, what the objects share, and 64 objects.
#[allow(dead_code)]
struct RaidPack {
    live: AtomicU32,
    len: u8,
    kind: u8,
    faction: u8,
    objects: [RaidObject; RAID_PACK_OBJECTS],
}

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
type PerObjectSlab = sharded_slab::Slab<RaidObject, PerObjectConfig>;

/// Spawns `share` objects in packs of 64 (the core's way), then frees the packs.
fn pack_round(slab: &PackSlab, share: usize, keys: &mut Vec<usize>) {
    keys.clear();
    let mut left = share;
    while left > 0 {
        let n = left.min(RAID_PACK_OBJECTS);
        let pack = RaidPack { live: AtomicU32::new(n as u32), len: n as u8, kind: 2, faction: 7, objects: std::array::from_fn(object) };
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
        keys.push(slab.insert(object(i)).expect("arena has room"));
    }
    for &k in keys.iter() {
        slab.remove(k);
    }
}

fn bench_arena(c: &mut Criterion) {
    let mut group = c.benchmark_group("arena_raid_11k_spawn_despawn");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    for threads in [1usize, 2] {
        let share = BURST / threads;

        group.bench_function(BenchmarkId::new("sharded_slab_packs_warm", threads), |b| {
            let slab: PackSlab = sharded_slab::Slab::new_with_config::<RaidArenaConfig>();
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| {
                        let mut keys = Vec::with_capacity(share);
                        pack_round(&slab, share, &mut keys); // warm this thread's shard
                        keys
                    },
                    |_, keys| pack_round(&slab, share, keys),
                )
            })
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
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| {
                        let mut keys = Vec::with_capacity(share);
                        per_object_round(&slab, share, &mut keys); // warm this thread's shard
                        keys
                    },
                    |_, keys| per_object_round(&slab, share, keys),
                )
            })
        });

        group.bench_function(BenchmarkId::new("mutex_slab", threads), |b| {
            let slab = Mutex::new(slab::Slab::<RaidObject>::with_capacity(BURST));
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| Vec::with_capacity(share),
                    |_, keys: &mut Vec<usize>| {
                        keys.clear();
                        for i in 0..share {
                            keys.push(slab.lock().insert(object(i)));
                        }
                        for &k in keys.iter() {
                            black_box(slab.lock().remove(k));
                        }
                    },
                )
            })
        });

        group.bench_function(BenchmarkId::new("mutex_vec_box", threads), |b| {
            let objects: Mutex<Vec<Box<RaidObject>>> = Mutex::new(Vec::with_capacity(BURST));
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| (),
                    |t, _| {
                        for i in 0..share {
                            objects.lock().push(Box::new(object(i)));
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
