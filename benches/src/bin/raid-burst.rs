//! `raid-burst`: spawns an 11,000-object raid burst into a warmed arena with 5,000 players
//! present, many times on one thread, and prints the time distribution of the spawn, of the
//! first tick after it (which takes the burst in: it orders the burst's cells, and builds and
//! publishes the world snapshot as every tick does) and of the tick that expires it.
//!
//! ```text
//! cargo run --release -p mmo-benches --bin raid-burst -- [BURSTS]
//! ```

use mmo_benches::{RAID_BURST_OBJECTS, RAID_PLAYERS, expire_all, percentile, raid_request, warmed_raid_world};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mmo_core::allocator::Selected = mmo_core::allocator::SELECTED;

fn main() {
    let bursts: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 200,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: raid-burst [BURSTS]   (BURSTS: a positive integer, default 200)");
            std::process::exit(2);
        }
    };
    let setup = Instant::now();
    let (engine, mut now_ms) = warmed_raid_world();
    println!(
        "raid-burst: {RAID_PLAYERS} players, {RAID_BURST_OBJECTS} objects per burst, {bursts} bursts, allocator {}, world ready in {:.0} ms",
        mmo_core::allocator::NAME,
        setup.elapsed().as_secs_f64() * 1e3
    );
    let mut spawn = Vec::with_capacity(bursts);
    let mut first_tick = Vec::with_capacity(bursts);
    let mut expiry = Vec::with_capacity(bursts);
    for i in 0..bursts {
        let request = raid_request(i as u32 + 2);
        let start = Instant::now();
        let report = engine.raid_spawn(&request).expect("a burst fits in a drained arena");
        spawn.push(start.elapsed());
        assert_eq!(report.spawned, RAID_BURST_OBJECTS);
        now_ms += u64::from(engine.config().tick_ms);
        let start = Instant::now();
        engine.tick(now_ms);
        first_tick.push(start.elapsed());
        let (freeing, _) = expire_all(&engine, &mut now_ms);
        expiry.push(freeing);
    }
    spawn.sort_unstable();
    first_tick.sort_unstable();
    expiry.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (name, v) in [("spawn", &spawn), ("first tick", &first_tick), ("expiry", &expiry)] {
        println!(
            "{name:>10}: median {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
            ms(percentile(v, 50.0)),
            ms(percentile(v, 90.0)),
            ms(percentile(v, 99.0)),
            ms(*v.last().unwrap())
        );
    }
    let stats = engine.stats();
    println!(
        "engine: {} bursts, {} objects spawned, {} despawned",
        stats.raid_bursts, stats.raid_objects_spawned, stats.raid_objects_despawned
    );
}
