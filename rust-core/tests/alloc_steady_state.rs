//! Zero heap allocations in steady state, counted by a wrapping global allocator
//! (`common/counting_allocator.rs`).
//!
//! Warm-up plays one full period of a repeating load: 2,000 players walking back and forth
//! across cell boundaries in a crowded band (so moves cross cells and proximity queries find
//! contacts), a first 11,000-object raid burst and its expiry. The measured phase then plays
//! 100,000 more moves (with crossings and contacts), ticks (each expiring objects, building
//! the world snapshot and publishing it), every player's area of interest read from the
//! snapshot in batches of 256 (as the network workers read it), economy requests, attacks
//! (landed every cooldown, refused in between), a looter killing an add of the burst and
//! claiming its loot, a player killed every fifth step, refused its moves while dead and
//! respawned by the tick, and a second
//! 11,000-object burst at the same spot and its expiry, and must make **zero** allocations. The load repeats exactly, which is what steady state means:
//! every cell vector and arena page has already grown to the size this load
//! needs, and nothing on these paths allocates per call.
//!
//! Counting is per thread (a `const` thread-local, which itself never allocates), and all
//! engine work here runs on the test thread, so the test harness's own threads cannot
//! disturb the count.
#![cfg(not(mmo_loom))] // loom builds run only the loom models (tests/loom/)

mod common;
use common::*;
use mmo_core::durability::CommitPolicy;
use mmo_core::records::{AoiEntry, EconomyKind, EconomyResult, EntityKind, EventKind, MoveEvent, MoveRecord, RaidSpawnRequest, TradeStack};
use mmo_core::snapshot::NOT_IN_SNAPSHOT;
use mmo_core::{CoreConfig, Engine};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;
use counting_allocator::allocations;

const PLAYERS: usize = 2_000;
const BATCH: usize = 64;
/// Steps in one back-and-forth walk: 40 steps of 1 m out, 40 back.
const PERIOD: u32 = 80;

/// Player `i`'s x at step `t`: a triangle wave of 40 m amplitude, so each walk crosses a
/// 32 m cell boundary (and the hysteresis margin) twice per period.
fn x_at(i: usize, t: u32) -> f32 {
    let base = 1_000.0 + (i % 40) as f32 * 2.5;
    let phase = t % PERIOD;
    let offset = if phase < PERIOD / 2 { phase } else { PERIOD - phase };
    base + offset as f32
}

fn y_of(i: usize) -> f32 {
    1_000.0 + (i / 40) as f32 * 1.5
}

/// Players per area-of-interest batch (a network worker's chunk of its sessions).
const AOI_BATCH: usize = 256;
const AOI_K: usize = 32;

struct Load {
    players: Vec<Who>,
    ids: Vec<u64>,
    batch: Vec<MoveRecord>,
    events: Vec<MoveEvent>,
    aoi: [AoiEntry; 32],
    aoi_batch: Vec<AoiEntry>,
    aoi_counts: Vec<u32>,
    /// A player of faction 1 and one of faction 2 standing 3 m apart: the first attacks the
    /// second every step.
    duel: (Who, Who),
    /// A player standing in the raid burst: attacks the nearest add its area of interest shows
    /// and claims the loot of each add it kills.
    looter: Who,
    /// A player of faction 1 and one of faction 2: the first kills the second every fifth step
    /// (the damage call), the tick respawns it three steps later, and the second tries a move
    /// every step (refused `Dead` while it is dead).
    fallen: (Who, Who),
    now_ms: u64,
    step: u32,
    txn: u64,
}

fn burst() -> RaidSpawnRequest {
    RaidSpawnRequest { half_extent_m: 60.0, ..raid(1_500.0, 1_500.0, 11_000, 200) }
}

#[test]
fn steady_state_moves_ticks_trades_and_raid_bursts_allocate_nothing() {
    // Hit points enough for every landed attack of the run.
    let e = Engine::new(CoreConfig { starting_gold: 100, player_hp: 1_000_000, respawn_ms: 300, ..CoreConfig::default() }).unwrap();
    let players: Vec<Who> = (0..PLAYERS).map(|i| join(&e, x_at(i, 0), y_of(i), 1)).collect();
    let duel = (join(&e, 3_000.0, 3_000.0, 1), join(&e, 3_003.0, 3_000.0, 2));
    let mut load = Load {
        ids: players.iter().map(|p| p.id).collect(),
        players,
        batch: Vec::with_capacity(BATCH),
        events: vec![MoveEvent::default(); BATCH * e.events_per_move_max()],
        aoi: [AoiEntry::default(); 32],
        aoi_batch: vec![AoiEntry::default(); AOI_BATCH * AOI_K],
        aoi_counts: vec![0; AOI_BATCH],
        duel,
        looter: join(&e, 1_500.0, 1_500.0, 1),
        fallen: (join(&e, 3_500.0, 3_000.0, 1), join(&e, 3_503.0, 3_000.0, 2)),
        now_ms: 10_000,
        step: 0,
        txn: 0,
    };
    // Warm-up: one full period of the walk, one raid burst and its expiry.
    e.raid_spawn(&burst()).unwrap();
    for _ in 0..PERIOD {
        load.play_step(&e);
    }
    assert_eq!(e.live_raid_objects(), 0, "the warm-up burst expired");
    let crossings_warm = e.stats().cell_crossings;
    assert!(crossings_warm > 0);

    // The counter really counts this thread's allocations.
    let probe = allocations();
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(16));
    assert_eq!(allocations(), probe + 1);
    drop(v);

    // Measured: 50 more steps (100,000 moves), a second burst and its expiry.
    let before = allocations();
    let report = e.raid_spawn(&burst()).unwrap();
    let spawned_at = allocations();
    let (mut moves, mut contacts) = (0, 0);
    let snapshots_before = e.stats().snapshots_published;
    let aoi_before = e.stats().aoi_queries;
    let (landed_before, cooldown_before) = (e.stats().attacks_landed, e.stats().attack_rejected_cooldown);
    let claimed_before = e.stats().loot_claimed;
    let (kills_before, respawns_before, dead_moves_before) = (e.stats().kills, e.stats().respawns, e.stats().move_rejected_dead);
    assert!(claimed_before > 0, "the looter claimed loot in the warm-up");
    for _ in 0..50 {
        let (m, c) = load.play_step(&e);
        moves += m;
        contacts += c;
    }
    let after = allocations();
    assert_eq!(e.stats().snapshots_published - snapshots_before, 50, "every measured tick published a snapshot");
    assert_eq!(e.stats().aoi_queries - aoi_before, 50 * (PLAYERS as u64 + 2), "every player's area of interest, every step");
    // 100 ms steps against a 500 ms cooldown: one duel attack in five lands; the looter kills
    // one add of the burst (it lives five steps) and claims its loot.
    assert_eq!(e.stats().attacks_landed - landed_before, 11, "attacks landed");
    assert_eq!(e.stats().loot_claimed - claimed_before, 1, "loot claimed");
    // 40 duel attacks in cooldown, and the looter's at the burst's other visible adds after
    // its kill, until the burst expires.
    assert_eq!(e.stats().attack_rejected_cooldown - cooldown_before, 43, "attacks refused");
    // Killed every fifth step, dead for three (respawned on the third tick after), so ten
    // kills, ten respawns and thirty refused moves.
    assert_eq!(e.stats().kills - kills_before, 10 + 1, "the fallen player's kills and the looter's");
    assert_eq!(e.stats().respawns - respawns_before, 10, "respawns");
    assert_eq!(e.stats().move_rejected_dead - dead_moves_before, 30, "moves of the dead refused");

    assert_eq!(report.spawned, 11_000);
    assert_eq!(e.live_raid_objects(), 0, "the measured burst expired too");
    assert_eq!(moves, 100_000);
    assert!(contacts > 0, "proximity queries found contacts");
    assert!(e.stats().cell_crossings > crossings_warm, "the measured moves crossed cells");
    assert_eq!(spawned_at - before, 0, "the second 11,000-object raid burst allocated");
    assert_eq!(after - before, 0, "steady state allocated {} times", after - before);
}

impl Load {
    /// One step: a tick (expiry, snapshot), every player's area of interest from it (in
    /// batches, plus one single query), every player moves 1 m (in batches of 64), a loot
    /// grant, a spend sent twice (the second is a duplicate), a transfer, an attack, and the looter's
    /// attack and claim. Returns (moves applied,
    /// contacts reported).
    fn play_step(&mut self, e: &Engine) -> (u64, u64) {
        self.step += 1;
        self.now_ms += 100;
        e.tick(self.now_ms);
        for chunk in self.ids.chunks(AOI_BATCH) {
            let info = e.area_of_interest_batch(chunk, AOI_K, &mut self.aoi_batch, &mut self.aoi_counts).unwrap();
            assert_eq!(info.found as usize, chunk.len(), "every player is in the snapshot");
            assert!(self.aoi_counts[..chunk.len()].iter().all(|&n| n != NOT_IN_SNAPSHOT && n > 0));
        }
        let who = self.players[self.step as usize * 7 % PLAYERS];
        assert!(e.area_of_interest(who.id, &mut self.aoi).unwrap() > 0);
        let (mut moves, mut contacts) = (0u64, 0u64);
        let mut start = 0;
        while start < PLAYERS {
            let end = (start + BATCH).min(PLAYERS);
            self.batch.clear();
            for i in start..end {
                self.batch.push(mv(self.players[i], self.step, self.step * 100, x_at(i, self.step), y_of(i)));
            }
            let report = e.apply_moves(&self.batch, self.now_ms, &mut self.events).unwrap();
            assert_eq!(report.applied, self.batch.len(), "every scripted move is legal");
            contacts += self.events[..report.events].iter().filter(|ev| ev.event_kind() == Some(EventKind::Contact)).count() as u64;
            moves += report.applied as u64;
            start = end;
        }
        let (a, b) = (self.players[self.step as usize % PLAYERS], self.players[(self.step as usize * 13 + 1) % PLAYERS]);
        self.txn += 1;
        let mut results = [EconomyResult::default(); 2];
        let grant = e.grant(a.id, self.txn, &TradeStack { gold: 5, item_count: 1, item_kind: 1, _reserved: 0 });
        assert_eq!(grant.status, 0, "the grant applied");
        let ops = [op(a, self.txn, EconomyKind::Spend, 0, 2, 1, 1), op(a, self.txn, EconomyKind::Spend, 0, 2, 1, 1)];
        e.apply_economy(&ops, &mut results).unwrap();
        assert_eq!(results[1].duplicate, 1);
        self.txn += 1;
        e.apply_economy(&[op(a, self.txn, EconomyKind::Transfer, b.id, 1, 0, 0)], &mut results[..1]).unwrap();
        let (attacker, target) = self.duel;
        let _ = e.attack(attacker.id, attacker.token, target.id, self.now_ms);
        let looter = self.looter;
        let seen = e.area_of_interest(looter.id, &mut self.aoi).unwrap();
        if let Some(add) = self.aoi[..seen].iter().find(|a| a.kind == EntityKind::Add as u8 && a.distance_m < 5.0)
            && e.attack(looter.id, looter.token, add.entity_id, self.now_ms).is_ok_and(|r| r.loot_dropped)
        {
            let loot = e.claim_loot(looter.id, looter.token, add.entity_id).unwrap();
            assert!(!loot.repeat);
        }
        let (killer, victim) = self.fallen;
        if self.step.is_multiple_of(5) {
            let _ = e.damage(killer.id, killer.token, victim.id, 1_000_000);
        }
        let x = 3_503.0 + (self.step % 2) as f32 * 0.5;
        let _ =
            e.apply_moves(&[mv(victim, self.step, self.step * 100, x, 3_000.0)], self.now_ms, &mut self.events[..e.events_per_move_max()]);
        (moves, contacts)
    }
}

/// The production shape: one thread spawns raid bursts, another (the tick driver) expires
/// them. Freed arena slots then go back through sharded-slab's remote free list; after the
/// first cycles, neither thread allocates.
#[test]
fn raid_bursts_spawned_and_expired_on_different_threads_allocate_nothing() {
    use std::sync::atomic::{AtomicU32, Ordering};
    const WARM_CYCLES: u32 = 4;
    const CYCLES: u32 = 10;
    let e = Engine::new(CoreConfig::default()).unwrap();
    // Phase counter: odd = a burst is alive (tick's turn), even = spawner's turn.
    let phase = AtomicU32::new(0);
    let wait_for = |want: u32| {
        // Bounded wait: a cycle takes milliseconds; give up after ~10 s.
        for _ in 0..10_000_000u32 {
            if phase.load(Ordering::Acquire) == want {
                return;
            }
            std::thread::yield_now();
        }
        panic!("the other thread stalled");
    };
    let (spawner_allocs, tick_allocs) = std::thread::scope(|s| {
        let ticker = s.spawn(|| {
            let mut now_ms = 0;
            let mut measured_from = 0;
            for cycle in 0..CYCLES {
                if cycle == WARM_CYCLES {
                    measured_from = allocations();
                }
                wait_for(2 * cycle + 1);
                while e.live_raid_objects() > 0 {
                    now_ms += 50;
                    e.tick(now_ms);
                }
                phase.store(2 * cycle + 2, Ordering::Release);
            }
            allocations() - measured_from
        });
        let mut measured_from = 0;
        for cycle in 0..CYCLES {
            if cycle == WARM_CYCLES {
                measured_from = allocations();
            }
            wait_for(2 * cycle);
            let report = e.raid_spawn(&RaidSpawnRequest { seed: cycle, ..burst() }).unwrap();
            assert_eq!(report.spawned, 11_000);
            phase.store(2 * cycle + 1, Ordering::Release);
        }
        wait_for(2 * CYCLES);
        (allocations() - measured_from, ticker.join().unwrap())
    });
    assert_eq!(e.stats().raid_objects_despawned, u64::from(CYCLES) * 11_000);
    assert_eq!(spawner_allocs, 0, "the spawning thread allocated");
    assert_eq!(tick_allocs, 0, "the tick thread allocated");
}

/// A player walking into ground no one has touched (a new grid cell on every move) costs no
/// allocation: a cell's first players live inline in the grid map's own slot, and the map
/// has room for 7 cells in 8 configured players (7,168 at the default capacity).
#[test]
fn walking_into_untouched_cells_allocates_nothing() {
    let e = Engine::new(CoreConfig::default()).unwrap();
    let walker = join(&e, 16.0, 16.0, 1);
    let mut events = vec![MoveEvent::default(); e.events_per_move_max()];
    let mut now_ms = 1_000u64;
    let mut x = 16.0f32;
    let step = |x: f32, seq: u32, now_ms: u64, events: &mut [MoveEvent]| {
        let rec = MoveRecord {
            player_id: walker.id,
            session_token: walker.token,
            sequence: seq,
            client_time_ms: now_ms as u32,
            x_m: x,
            y_m: 16.0,
            ..MoveRecord::default()
        };
        let report = e.apply_moves(&[rec], now_ms, events).unwrap();
        assert_eq!(report.applied, 1, "every step is legal");
    };
    // Warm the calling thread's arenas and stats stripe with a move inside the first cell.
    step(x + 1.0, 1, now_ms, &mut events);
    x += 1.0;
    let crossings_before = e.stats().cell_crossings;
    let before = allocations();
    for seq in 2..=1_601u32 {
        now_ms += 250;
        x += 2.5; // 10 m a second: within the speed limit, a new 32 m cell every ~13 moves
        step(x, seq, now_ms, &mut events);
    }
    let after = allocations();
    assert!(e.stats().cell_crossings - crossings_before >= 100, "the walk entered many new cells");
    assert_eq!(after - before, 0, "entering untouched cells allocated {} times", after - before);
}

/// With the economy durable, an operation's ledger entry goes into a journal reserved when the
/// store opened: the calling thread allocates nothing per operation, whether the committer has
/// caught up or the journal is full (`StorageBusy`). The committer's own work (redb) runs on
/// its thread, off the serving path.
#[test]
fn durable_economy_operations_allocate_nothing_on_the_calling_thread() {
    let dir = temp_dir("alloc-durable");
    let e = Engine::new(CoreConfig { starting_gold: 1_000_000, ..small_config() }).unwrap();
    e.open_store(&dir, CommitPolicy::default(), Box::new(|| {})).unwrap();
    let players: Vec<Who> = (1..=64u64)
        .map(|account| {
            let t = e.join_account(account, 100.0, 100.0, 1).unwrap();
            Who::of(t)
        })
        .collect();
    let mut out = [EconomyResult::default(); BATCH];
    let mut ops = Vec::with_capacity(BATCH);
    let mut next_tx = vec![0u64; players.len()];
    let mut play = |rounds: usize| {
        for round in 0..rounds {
            ops.clear();
            for (i, who) in players.iter().enumerate() {
                next_tx[i] += 1;
                let to = players[(i + 1 + round) % players.len()];
                let kind = if (i + round) % 4 == 0 { EconomyKind::Spend } else { EconomyKind::Transfer };
                let counterparty = if kind == EconomyKind::Spend { 0 } else { to.id };
                ops.push(op(*who, next_tx[i], kind, counterparty, 3, 0, 0));
            }
            e.apply_economy(&ops, &mut out[..ops.len()]).unwrap();
            // As the network layer does, the results wait for their group commit.
            let last = out[..ops.len()].iter().map(|r| r.ledger_seq).max().unwrap_or(0);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while e.economy_durable_through() < last {
                assert!(std::time::Instant::now() < deadline, "the committer stalled");
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
            // A retransmit of each: answered from the window.
            e.apply_economy(&ops, &mut out[..ops.len()]).unwrap();
            assert!(out[..ops.len()].iter().all(|r| r.duplicate == 1), "every retransmit answered from the window");
        }
    };
    play(50);
    // parking_lot sets up a thread's parking data (and may grow its table of threads) the
    // first time the thread waits for a held lock, once per thread: a server's workers do that
    // in their first seconds. Wait once here, so a shard lock later contended with the
    // committer's drain costs nothing.
    let held = parking_lot::Mutex::new(());
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let held = &held;
        s.spawn(move || {
            let _guard = held.lock();
            tx.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        });
        rx.recv().unwrap();
        drop(held.lock());
    });
    let before = allocations();
    play(500);
    let allocated = allocations() - before;
    assert!(e.economy_audit().is_conserved());
    let s = e.stats();
    assert!(
        s.ledger_entries > 0,
        "the committer made entries durable meanwhile: groups {} failures {} busy {} durable {}",
        s.ledger_groups,
        s.ledger_commit_failures,
        s.economy_storage_busy,
        e.economy_durable_through()
    );
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(allocated, 0, "32,000 durable operations and their retransmits allocated on the calling thread");
}
