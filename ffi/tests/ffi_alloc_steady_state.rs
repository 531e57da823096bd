//! Zero heap allocations in steady state through the C ABI, called as `mmo-server` calls it.
//!
//! `rust-core/tests/alloc_steady_state.rs` holds the core's own API to zero allocations; this
//! test holds the exported functions to the same, so the boundary (its `catch_unwind`, its
//! checks of every pointer and length, the status codes) and the latency histograms the front
//! records into add nothing. The calls follow the server's (`cpp-net/net/worker.cpp`,
//! `tick.cpp`, `admin.cpp`), made one after another on this thread:
//! - the tick thread's `mmo_tick`, its duration recorded into the tick histogram;
//! - each of two workers' area-of-interest round: its sessions in chunks of 64
//!   (`mmo_area_of_interest_batch` with `k` 64, the front's `kAoiChunk` and
//!   `kAoiEntriesMax`);
//! - each worker's moves in batches of 64 (`mmo_apply_moves` into the buffer sized once by
//!   `mmo_move_events_required`), each move's latency and each batch's service time recorded
//!   into the worker's histograms;
//! - a raid trigger's `mmo_raid_spawn` every two seconds (11,000 objects in the crowd, gone
//!   before the next), its duration recorded into the worker's raid histogram;
//! - attacks, the kill notice's `mmo_area_of_interest` of the killer (64 entries) after each
//!   kill, loot claims, grants, spends, transfers, a trade offered and accepted;
//! - the stats request: `mmo_stats` and the merged histograms (`mmo_latency_reset`, a
//!   `mmo_latency_merge` of each worker's, `mmo_latency_summary`), and the metrics page's
//!   `mmo_latency_buckets` of each. Its `mmo_economy_audit` is left out: the audit allocates
//!   by design (`docs/architecture.md`, "What can still allocate").
//!
//! Warm-up plays one period of the load (the walk's period, four bursts) and records the
//! largest latency the measured phase records, past the histograms' first range, so their
//! counts have grown; the measured phase plays the same period again (four more bursts) and
//! must make **zero** allocations on this thread, which is the only one the engine runs on
//! here (no durable store, so no committer thread). What it does not cover: the first calls
//! on each of the server's own threads (warm-up runs on this one).
#![cfg(not(mmo_loom))]

use mmo_ffi::latency::{
    mmo_latency_buckets, mmo_latency_free, mmo_latency_merge, mmo_latency_new, mmo_latency_record, mmo_latency_reset, mmo_latency_summary,
};
use mmo_ffi::*;
use std::ptr::null_mut;

#[path = "../../rust-core/tests/common/counting_allocator.rs"]
mod counting_allocator;
use counting_allocator::allocations;

/// Players, in a crowd around the raid's spot.
const PLAYERS: usize = 1_000;
/// Server I/O workers; sessions are dealt to them round robin.
const WORKERS: usize = 2;
/// Sessions per area-of-interest call and moves per move batch (the front's `kBatchMax`).
const CHUNK: usize = 64;
/// Entities asked for per area of interest (the front's `wire::kAoiEntriesMax`; the engine
/// gives at most its `aoi_k`).
const AOI_K: u32 = 64;
/// Milliseconds per step (a tick each; 1 m a step is within the default speed limit).
const STEP_MS: u64 = 100;
/// Steps in one back-and-forth walk: 40 steps of 1 m out, 40 back.
const PERIOD: u32 = 80;
/// A raid burst every this many steps (two seconds), living 1.5 s.
const BURST_EVERY: u32 = 20;
const RAID_X_M: f32 = 2_048.0;
const RAID_Y_M: f32 = 2_048.0;
/// The latency histograms' range, microseconds (the front's `kLatencyHighestUs`), and the
/// largest latency the load records: past a new histogram's first range (16,383), so the
/// warm-up grows the counts that the measured phase then only adds to.
const LATENCY_HIGHEST_US: u64 = 60_000_000;
const LATENCY_MAX_RECORDED_US: u64 = 100_000;
/// Significant digits of the update histograms, and of the tick's and the raid spawn's (the
/// front's `kUpdateLatencyDigits`, `kTickLatencyDigits`, `kRaidSpawnLatencyDigits`).
const UPDATE_DIGITS: u8 = 3;
const COARSE_DIGITS: u8 = 2;
/// The metrics page's histogram bounds, microseconds (`cpp-net/net/metrics.cpp`).
const METRICS_BOUNDS_US: [u64; 15] = [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000];

/// Player `i`'s x at step `t`: a triangle wave of 40 m around its column, so each walk
/// crosses a 32 m cell boundary (and the hysteresis margin) twice per period.
fn x_at(i: usize, t: u32) -> f32 {
    let base = RAID_X_M - 60.0 + (i % 40) as f32 * 2.5;
    let phase = t % PERIOD;
    let out_m = if phase < PERIOD / 2 { phase } else { PERIOD - phase };
    base + out_m as f32
}

fn y_of(i: usize) -> f32 {
    RAID_Y_M - 60.0 + (i / 40) as f32 * 4.5
}

#[derive(Clone, Copy)]
struct Session {
    ticket: MmoJoinTicket,
}

fn engine() -> *mut MmoEngine {
    let mut config = MmoConfig::from(&mmo_core::CoreConfig::default());
    config.player_capacity = PLAYERS as u32 + 64;
    config.starting_gold = 1_000;
    // Hit points enough for every landed attack of the run.
    config.player_hp = 1_000_000;
    let mut e = null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { mmo_engine_new(&config, &mut e) }, MMO_OK);
    e
}

fn join(e: *const MmoEngine, account: u64, x: f32, y: f32, faction: u8) -> Session {
    let mut ticket = MmoJoinTicket::default();
    // SAFETY: a live engine, a writable ticket.
    assert_eq!(unsafe { mmo_join(e, account, x, y, faction, &mut ticket) }, MMO_OK);
    Session { ticket }
}

fn burst(seed: u32) -> RaidSpawnRequest {
    RaidSpawnRequest {
        center_x_m: RAID_X_M,
        center_y_m: RAID_Y_M,
        half_extent_m: 60.0,
        count: 11_000,
        lifetime_ms: 1_500,
        hp: 50,
        seed,
        kind: EntityKind::Add as u8,
        faction: 9,
        _reserved: [0; 2],
    }
}

/// The server's buffers, made once (a worker's are members of its `Worker`).
struct Front {
    sessions: Vec<Session>,
    /// Each worker's sessions' player ids.
    worker_players: Vec<Vec<u64>>,
    /// Each worker's histograms: update latency (one record per move), service time (one
    /// record per batch, of the batch's size), raid spawn.
    worker_latency: Vec<[*mut MmoLatency; 3]>,
    /// The server's: the tick's duration, and the stats request's scratch histograms that
    /// the workers' are merged into (update, service, raid spawn).
    tick_latency: *mut MmoLatency,
    merged_latency: [*mut MmoLatency; 3],
    moves: Vec<MoveRecord>,
    events: Vec<MoveEvent>,
    aoi: Vec<AoiEntry>,
    aoi_counts: Vec<u32>,
    /// The looter's look for an add to attack (a client's choice, made here from its area of
    /// interest).
    looter_aoi: [AoiEntry; AOI_K as usize],
    /// The kill notice's witnesses (the worker's `kill_witnesses_`).
    kill_witnesses: [AoiEntry; AOI_K as usize],
    /// Faction 1 attacks faction 2 three metres away, every step.
    duel: (Session, Session),
    /// Stands in the burst: attacks the nearest add its area of interest shows, claims the
    /// loot of each one it kills.
    looter: Session,
    now_ms: u64,
    step: u32,
    txn: u64,
}

/// What one step did, from the calls' own outputs.
#[derive(Default)]
struct StepTally {
    moves_applied: u64,
    contacts: u64,
    aoi_found: u64,
    trades_accepted: u64,
    loot_claimed: u64,
}

impl Front {
    fn step(&mut self, e: *const MmoEngine) -> StepTally {
        let mut tally = StepTally::default();
        self.step += 1;
        self.now_ms += STEP_MS;
        let mut info = MmoTickInfo::default();
        // SAFETY (every call below): a live engine and buffers of the lengths passed, which
        // do not overlap.
        unsafe {
            if (self.step - 1).is_multiple_of(BURST_EVERY) {
                let mut report = MmoRaidReport::default();
                assert_eq!(mmo_raid_spawn(e, &burst(self.step), &mut report), MMO_OK);
                assert_eq!(report.spawned, 11_000);
                assert_eq!(mmo_latency_record(self.worker_latency[0][2], 200 + u64::from(self.step), 1), MMO_OK);
            }
            assert_eq!(mmo_tick(e, self.now_ms, &mut info), MMO_OK);
            assert_eq!(mmo_latency_record(self.tick_latency, 100 + u64::from(self.step) * 7, 1), MMO_OK);
            for w in 0..WORKERS {
                for chunk in self.worker_players[w].chunks(CHUNK) {
                    let mut batch = MmoAoiBatchInfo::default();
                    let status = mmo_area_of_interest_batch(
                        e,
                        chunk.as_ptr(),
                        chunk.len(),
                        AOI_K,
                        self.aoi.as_mut_ptr(),
                        self.aoi.len(),
                        self.aoi_counts.as_mut_ptr(),
                        self.aoi_counts.len(),
                        &mut batch,
                    );
                    assert_eq!(status, MMO_OK);
                    assert_eq!(batch.tick, info.tick, "the batch read this tick's snapshot");
                    tally.aoi_found += u64::from(batch.found);
                }
            }
            for w in 0..WORKERS {
                let mut start = w;
                while start < PLAYERS {
                    self.moves.clear();
                    let mut i = start;
                    while i < PLAYERS && self.moves.len() < CHUNK {
                        let s = self.sessions[i].ticket;
                        self.moves.push(MoveRecord {
                            player_id: s.player_id,
                            session_token: s.session_token,
                            sequence: self.step,
                            client_time_ms: self.step * STEP_MS as u32,
                            x_m: x_at(i, self.step),
                            y_m: y_of(i),
                            slot_hint: s.slot_hint,
                            ..MoveRecord::default()
                        });
                        i += WORKERS;
                    }
                    start = i;
                    let mut written = 0usize;
                    let status = mmo_apply_moves(
                        e,
                        self.moves.as_ptr(),
                        self.moves.len(),
                        self.now_ms,
                        self.events.as_mut_ptr(),
                        self.events.len(),
                        &mut written,
                    );
                    assert_eq!(status, MMO_OK);
                    let acks = self.events[..written].iter().filter(|ev| ev.event_kind() == Some(EventKind::Ack)).count();
                    assert_eq!(acks, self.moves.len(), "every scripted move is legal");
                    tally.moves_applied += acks as u64;
                    tally.contacts += self.events[..written].iter().filter(|ev| ev.event_kind() == Some(EventKind::Contact)).count() as u64;
                    // Each move's latency and the batch's service time, recorded as the worker
                    // records them, within the range the warm-up already reached.
                    let [update_latency, update_service, _] = self.worker_latency[w];
                    for r in 0..self.moves.len() as u64 {
                        let latency_us = 1 + (u64::from(self.step) * 97 + r * 31) % LATENCY_MAX_RECORDED_US;
                        assert_eq!(mmo_latency_record(update_latency, latency_us, 1), MMO_OK);
                    }
                    let service_us = 1 + (u64::from(self.step) * 13 + start as u64) % LATENCY_MAX_RECORDED_US;
                    assert_eq!(mmo_latency_record(update_service, service_us, self.moves.len() as u64), MMO_OK);
                }
            }
            // Combat: the duel, and the looter's attack on an add near it, the kill notice's
            // witnesses when it kills, and its claim.
            let (attacker, target) = self.duel;
            let mut attack = MmoAttackResult::default();
            assert_eq!(
                mmo_attack(e, attacker.ticket.player_id, attacker.ticket.session_token, target.ticket.player_id, self.now_ms, &mut attack),
                MMO_OK
            );
            let looter = self.looter.ticket;
            let mut seen = 0usize;
            assert_eq!(mmo_area_of_interest(e, looter.player_id, self.looter_aoi.as_mut_ptr(), self.looter_aoi.len(), &mut seen), MMO_OK);
            if let Some(add) = self.looter_aoi[..seen].iter().find(|a| a.kind == EntityKind::Add as u8 && a.distance_m < 5.0) {
                let mut hit = MmoAttackResult::default();
                assert_eq!(mmo_attack(e, looter.player_id, looter.session_token, add.entity_id, self.now_ms, &mut hit), MMO_OK);
                if hit.killed != 0 && hit.target_kind == EntityKind::Add as u8 {
                    let mut witnesses = 0usize;
                    let status = mmo_area_of_interest(
                        e,
                        looter.player_id,
                        self.kill_witnesses.as_mut_ptr(),
                        self.kill_witnesses.len(),
                        &mut witnesses,
                    );
                    assert_eq!(status, MMO_OK);
                    assert!(witnesses > 0, "the killer's area of interest");
                    let mut loot = MmoLootResult::default();
                    assert_eq!(mmo_claim_loot(e, looter.player_id, looter.session_token, add.entity_id, &mut loot), MMO_OK);
                    assert_eq!(loot.refusal, 0, "the looter's own kill, within reach");
                    tally.loot_claimed += 1;
                }
            }
            // Economy: a grant, a spend sent twice (the second a duplicate), a transfer, and a
            // trade offered and accepted.
            let a = self.sessions[self.step as usize % PLAYERS].ticket;
            let b = self.sessions[(self.step as usize * 13 + 1) % PLAYERS].ticket;
            let stack = TradeStack { gold: 5, item_count: 1, item_kind: 1, _reserved: 0 };
            let mut result = EconomyResult::default();
            self.txn += 1;
            assert_eq!(mmo_grant(e, a.player_id, self.txn, &stack, &mut result), MMO_OK);
            assert_eq!(result.status, EconomyStatus::Applied as u8, "the grant applied");
            let op = |txn: u64, kind: EconomyKind, counterparty: u64, gold: i64| EconomyOp {
                player_id: a.player_id,
                session_token: a.session_token,
                transaction_id: txn,
                counterparty_id: counterparty,
                gold,
                item_count: 0,
                item_kind: 0,
                kind: kind as u8,
                _reserved: 0,
            };
            self.txn += 1;
            let ops = [
                op(self.txn, EconomyKind::Spend, 0, 2),
                op(self.txn, EconomyKind::Spend, 0, 2),
                op(self.txn + 1, EconomyKind::Transfer, b.player_id, 1),
            ];
            self.txn += 1;
            let mut results = [EconomyResult::default(); 3];
            let mut written = 0usize;
            assert_eq!(mmo_apply_economy(e, ops.as_ptr(), ops.len(), results.as_mut_ptr(), results.len(), &mut written), MMO_OK);
            assert_eq!((written, results[1].duplicate), (3, 1), "three results, the second a duplicate");
            self.txn += 1;
            let offer = TradeOffer {
                player_id: a.player_id,
                session_token: a.session_token,
                transaction_id: self.txn,
                counterparty_id: b.player_id,
                give: TradeStack { gold: 3, ..TradeStack::default() },
                want: TradeStack { gold: 1, ..TradeStack::default() },
            };
            assert_eq!(mmo_trade_offer(e, &offer, self.now_ms, &mut result), MMO_OK);
            assert_eq!(result.status, EconomyStatus::Applied as u8, "the offer stands");
            self.txn += 1;
            let answer = TradeAnswer {
                player_id: b.player_id,
                session_token: b.session_token,
                transaction_id: self.txn,
                maker_id: a.player_id,
                offer_id: offer.transaction_id,
                accept: 1,
                _reserved: [0; 7],
            };
            assert_eq!(mmo_trade_answer(e, &answer, self.now_ms, &mut result), MMO_OK);
            tally.trades_accepted += u64::from(result.status == EconomyStatus::Applied as u8);
            // The stats request (`Server::merged_latency`, `format_stats`) and the metrics
            // page (`Server::latency_buckets`).
            let mut stats = StatsSnapshot::default();
            assert_eq!(mmo_stats(e, &mut stats), MMO_OK);
            for (h, merged) in self.merged_latency.iter().enumerate() {
                assert_eq!(mmo_latency_reset(*merged), MMO_OK);
                for per_worker in &self.worker_latency {
                    assert_eq!(mmo_latency_merge(*merged, per_worker[h]), MMO_OK);
                }
            }
            let mut summary = MmoLatencySummary::default();
            for &h in self.merged_latency.iter().chain([&self.tick_latency]) {
                assert_eq!(mmo_latency_summary(h, &mut summary), MMO_OK);
                let mut cumulative = [0u64; METRICS_BOUNDS_US.len()];
                let (mut count, mut sum_us) = (0u64, 0u64);
                let status = mmo_latency_buckets(
                    h,
                    METRICS_BOUNDS_US.as_ptr(),
                    METRICS_BOUNDS_US.len(),
                    cumulative.as_mut_ptr(),
                    &mut count,
                    &mut sum_us,
                );
                assert_eq!(status, MMO_OK);
                assert_eq!(cumulative[METRICS_BOUNDS_US.len() - 1], count, "every value recorded is within the last bound");
            }
        }
        tally
    }
}

#[test]
fn the_servers_calls_in_steady_state_allocate_nothing() {
    let e = engine();
    let sessions: Vec<Session> = (0..PLAYERS).map(|i| join(e, i as u64 + 1, x_at(i, 0), y_of(i), 1)).collect();
    let worker_players = (0..WORKERS).map(|w| sessions.iter().skip(w).step_by(WORKERS).map(|s| s.ticket.player_id).collect()).collect();
    let histogram = |digits: u8| {
        let mut h = null_mut();
        // SAFETY: a writable out-pointer.
        assert_eq!(unsafe { mmo_latency_new(LATENCY_HIGHEST_US, digits, &mut h) }, MMO_OK);
        h
    };
    let worker_latency = (0..WORKERS).map(|_| [histogram(UPDATE_DIGITS), histogram(UPDATE_DIGITS), histogram(COARSE_DIGITS)]).collect();
    let mut required = 0usize;
    // SAFETY: a live engine, a writable out-pointer.
    assert_eq!(unsafe { mmo_move_events_required(e, CHUNK, &mut required) }, MMO_OK);
    let mut front = Front {
        sessions,
        worker_players,
        worker_latency,
        tick_latency: histogram(COARSE_DIGITS),
        merged_latency: [histogram(UPDATE_DIGITS), histogram(UPDATE_DIGITS), histogram(COARSE_DIGITS)],
        moves: Vec::with_capacity(CHUNK),
        events: vec![MoveEvent::default(); required],
        aoi: vec![AoiEntry::default(); CHUNK * AOI_K as usize],
        aoi_counts: vec![0; CHUNK],
        looter_aoi: [AoiEntry::default(); AOI_K as usize],
        kill_witnesses: [AoiEntry::default(); AOI_K as usize],
        duel: (join(e, 10_001, 3_000.0, 3_000.0, 1), join(e, 10_002, 3_003.0, 3_000.0, 2)),
        looter: join(e, 10_003, RAID_X_M, RAID_Y_M, 1),
        now_ms: 10_000,
        step: 0,
        txn: 0,
    };

    // Warm-up: one period of the walk and its bursts; each histogram reaches the largest
    // latency the measured phase records (and the next stats request merges it).
    for &h in front.worker_latency.iter().flatten().chain([&front.tick_latency]) {
        // SAFETY: a live histogram.
        assert_eq!(unsafe { mmo_latency_record(h, LATENCY_MAX_RECORDED_US, 1) }, MMO_OK);
    }
    for _ in 0..PERIOD {
        front.step(e);
    }

    // The counter really counts this thread's allocations.
    let probe = allocations();
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(16));
    assert_eq!(allocations(), probe + 1);
    drop(v);

    let stats = |e: *const MmoEngine| {
        let mut s = StatsSnapshot::default();
        // SAFETY: a live engine, a writable snapshot.
        assert_eq!(unsafe { mmo_stats(e, &mut s) }, MMO_OK);
        s
    };
    let s0 = stats(e);
    let before = allocations();
    let mut total = StepTally::default();
    for _ in 0..PERIOD {
        let t = front.step(e);
        total.moves_applied += t.moves_applied;
        total.contacts += t.contacts;
        total.aoi_found += t.aoi_found;
        total.trades_accepted += t.trades_accepted;
        total.loot_claimed += t.loot_claimed;
    }
    let after = allocations();
    let s1 = stats(e);

    // The measured phase did the work it stands for.
    assert_eq!(total.moves_applied, u64::from(PERIOD) * PLAYERS as u64);
    assert!(total.contacts > 0, "moves found contacts");
    assert_eq!(total.aoi_found, u64::from(PERIOD) * PLAYERS as u64, "every session's area of interest, every tick");
    assert_eq!(total.trades_accepted, u64::from(PERIOD), "a trade accepted every step");
    assert!(total.loot_claimed > 0, "the looter killed an add and claimed its loot");
    assert_eq!(s1.snapshots_published - s0.snapshots_published, u64::from(PERIOD), "every tick published a snapshot");
    assert_eq!(s1.raid_objects_spawned - s0.raid_objects_spawned, 4 * 11_000, "four bursts");
    assert_eq!(s1.raid_objects_despawned - s0.raid_objects_despawned, 4 * 11_000, "the four bursts expired");
    assert!(s1.cell_crossings > s0.cell_crossings, "the walk crossed cells");
    assert!(s1.attacks_landed > s0.attacks_landed, "attacks landed");
    assert_eq!(after - before, 0, "the server's calls allocated {} times in steady state", after - before);

    for h in front.worker_latency.into_iter().flatten().chain([front.tick_latency]).chain(front.merged_latency) {
        // SAFETY: a live histogram, freed once.
        unsafe { mmo_latency_free(h) };
    }
    // SAFETY: a live engine, freed once.
    unsafe { mmo_engine_free(e) };
}
