//! **arena**: an 11,000-object raid spawn followed by its despawn, in the arena the core uses
//! (sharded-slab with `RaidArenaConfig`, cold and warmed) against the two obvious
//! alternatives: one `Mutex<slab::Slab>` shared by every thread, and `Mutex<Vec<Box<T>>>`
//! (a heap allocation per object, the `shared_ptr`-per-entity habit). 1 and 2 threads; with
//! 2, each thread spawns and despawns half of the burst at the same moment.
//!
//! What it shows: warmed sharded-slab never touches the allocator and never makes two
//! threads wait for each other; the mutex slab serialises the threads on one lock (and on
//! this 2-vCPU machine the second thread also competes for the core); `Vec<Box<T>>` pays
//! malloc and free per object. "Cold" pays for sharded-slab's page allocation every burst,
//! which is why the engine keeps every page a thread's shard has grown: only a thread's first
//! raid (or the first with more objects alive than ever) pays it.

use criterion::{BenchmarkId, Criterion, criterion_group};
use mmo_benches::timed_rounds;
use mmo_core::arena::RaidArenaConfig;
use parking_lot::Mutex;
use std::hint::black_box;
use std::sync::atomic::AtomicI32;
use std::time::Duration;

const BURST: usize = 11_000;

/// The shape of a raid object in the core: hit points, kind, faction, expiry. (Only its size
/// and shape matter here; nothing reads the fields.)
#[allow(dead_code)]
struct RaidObject {
    hp: AtomicI32,
    kind: u8,
    faction: u8,
    expires_tick: u32,
}

fn object(i: usize) -> RaidObject {
    RaidObject { hp: AtomicI32::new(100), kind: 2, faction: 7, expires_tick: i as u32 }
}

type ShardedSlab = sharded_slab::Slab<RaidObject, RaidArenaConfig>;

fn sharded_round(slab: &ShardedSlab, share: usize, keys: &mut Vec<usize>) {
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

        group.bench_function(BenchmarkId::new("sharded_slab_warm", threads), |b| {
            let slab: ShardedSlab = sharded_slab::Slab::new_with_config::<RaidArenaConfig>();
            b.iter_custom(|iters| {
                timed_rounds(
                    threads,
                    iters,
                    |_| {
                        let mut keys = Vec::with_capacity(share);
                        sharded_round(&slab, share, &mut keys); // warm this thread's shard
                        keys
                    },
                    |_, keys| sharded_round(&slab, share, keys),
                )
            })
        });

        group.bench_function(BenchmarkId::new("sharded_slab_cold", threads), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let slab: ShardedSlab = sharded_slab::Slab::new_with_config::<RaidArenaConfig>();
                    total += timed_rounds(threads, 1, |_| Vec::with_capacity(share), |_, keys| sharded_round(&slab, share, keys));
                }
                total
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
