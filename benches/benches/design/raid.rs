//! Raid burst cost in the core: one 11,000-object spawn into a warmed arena with 5,000
//! players present, and the tick that expires it, on one thread.
//!
//! What it shows: the spawn path's cost (capacity admission, 11,000 arena inserts, one grid
//! lock per touched cell, one expiry record queued) in isolation from the network. The product
//! target is a median under 1 ms on the 2-vCPU development VM. The expiry tick is measured
//! separately because it runs on the tick thread, not in the caller's request.

use criterion::{Criterion, criterion_group};
use mmo_benches::{expire_all, raid_request, warmed_raid_world};
use std::time::{Duration, Instant};

fn raid(c: &mut Criterion) {
    let (engine, mut now_ms) = warmed_raid_world();
    let mut group = c.benchmark_group("raid_burst_11k_5k_players");
    group.sample_size(30).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_secs(2));
    let mut seed = 10;
    group.bench_function("spawn_warmed", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                seed += 1;
                let request = raid_request(seed);
                let start = Instant::now();
                engine.raid_spawn(&request).expect("a burst fits in a drained arena");
                spent += start.elapsed();
                expire_all(&engine, &mut now_ms);
            }
            spent
        })
    });
    group.bench_function("expire_tick", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                seed += 1;
                engine.raid_spawn(&raid_request(seed)).expect("a burst fits in a drained arena");
                spent += expire_all(&engine, &mut now_ms).0;
            }
            spent
        })
    });
    group.finish();
}

criterion_group!(benches, raid);
