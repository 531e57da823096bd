//! Fixtures shared by the benchmarks and the `raid-burst` runner, so every figure comes from
//! the same world.
//!
//! The raid fixture is the scene the product promises to handle: 5,000 players joined (1,000
//! of them gathered in the raid area, the rest spread over the world) and an 11,000-object
//! burst of adds spawned over a 120 m square around the raid point. "Warmed" means one burst
//! of the same shape has already been spawned and expired, so arena pages
//! and grid cell vectors exist (the steady state a live server reaches after its first raid).

use mmo_core::records::{EntityKind, RaidSpawnRequest};
use mmo_core::{CoreConfig, Engine};

/// Players present during the raid benchmark.
pub const RAID_PLAYERS: usize = 5_000;
/// Objects in one raid burst.
pub const RAID_BURST_OBJECTS: u32 = 11_000;

/// The raid point.
pub const RAID_CENTER_M: (f32, f32) = (2_048.0, 2_048.0);

/// The burst request: 11,000 adds over a 120 m square, living 500 ms.
pub fn raid_request(seed: u32) -> RaidSpawnRequest {
    RaidSpawnRequest {
        center_x_m: RAID_CENTER_M.0,
        center_y_m: RAID_CENTER_M.1,
        half_extent_m: 60.0,
        count: RAID_BURST_OBJECTS,
        lifetime_ms: 500,
        hp: 500,
        seed,
        kind: EntityKind::Add as u8,
        faction: 7,
        _reserved: [0; 2],
    }
}

/// An engine with the default configuration and [`RAID_PLAYERS`] players joined: 1,000 in a
/// 100 m square at the raid point, the rest on a lattice over the world.
pub fn raid_world() -> Engine {
    let engine = Engine::new(CoreConfig::default()).expect("default config is valid");
    for i in 0..RAID_PLAYERS {
        let (x, y) = if i < 1_000 {
            (RAID_CENTER_M.0 - 50.0 + (i % 32) as f32 * 3.1, RAID_CENTER_M.1 - 50.0 + (i / 32) as f32 * 3.1)
        } else {
            let j = i - 1_000;
            (16.0 + (j % 64) as f32 * 63.5, 16.0 + (j / 64) as f32 * 63.5)
        };
        engine.join(x, y, 1).expect("capacity holds 5,000 players");
    }
    engine
}

/// Ticks until every raid object has expired; returns the time spent in the tick that freed
/// the burst, and how many ticks it took. `now_ms` advances by one tick per call.
pub fn expire_all(engine: &Engine, now_ms: &mut u64) -> (std::time::Duration, u32) {
    let tick_ms = u64::from(engine.config().tick_ms);
    let mut ticks = 0;
    let mut freeing = std::time::Duration::ZERO;
    // Bounded: a 500 ms burst expires within 11 ticks at 50 ms; 1,000 is far past any lifetime here.
    while engine.live_raid_objects() > 0 && ticks < 1_000 {
        *now_ms += tick_ms;
        let start = std::time::Instant::now();
        let info = engine.tick(*now_ms);
        if info.objects_expired > 0 {
            freeing += start.elapsed();
        }
        ticks += 1;
    }
    assert_eq!(engine.live_raid_objects(), 0, "raid objects outlived 1,000 ticks");
    (freeing, ticks)
}

/// A warmed raid world: [`raid_world`] after one burst has been spawned and expired.
pub fn warmed_raid_world() -> (Engine, u64) {
    let engine = raid_world();
    let mut now_ms = 1_000;
    engine.raid_spawn(&raid_request(1)).expect("the first burst fits");
    expire_all(&engine, &mut now_ms);
    (engine, now_ms)
}

/// Percentile of sorted durations (nearest rank).
pub fn percentile(sorted: &[std::time::Duration], p: f64) -> std::time::Duration {
    assert!(!sorted.is_empty());
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `rounds` rounds of `round` on `threads` threads at once and returns the wall time
/// from the moment all threads start to the moment the last finishes its last round.
///
/// Each thread first builds its own state with `make_state(thread_index)` (not timed), then
/// all threads run round 0 together, wait for each other, run round 1, and so on: every round
/// is a burst all threads take part in, like a raid spawn landing on every worker at once.
/// Used by the multi-threaded benchmarks through criterion's `iter_custom`.
pub fn timed_rounds<S>(
    threads: usize,
    rounds: u64,
    make_state: impl Fn(usize) -> S + Sync,
    round: impl Fn(usize, &mut S) + Sync,
) -> std::time::Duration {
    assert!(threads >= 1);
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, make_state, round) = (&barrier, &make_state, &round);
                s.spawn(move || {
                    let mut state = make_state(t);
                    barrier.wait();
                    let start = std::time::Instant::now();
                    for _ in 0..rounds {
                        round(t, &mut state);
                        barrier.wait();
                    }
                    start.elapsed()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("benchmark thread panicked")).max().expect("at least one thread")
    })
}
