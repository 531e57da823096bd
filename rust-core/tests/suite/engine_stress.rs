//! Multi-threaded stress: two worker threads, a tick thread and an auditor run more than a
//! million mixed operations (move batches, gifts and spends with retransmits and duplicates,
//! admin grants, refused trade and loot-pickup requests, raid bursts, damage, join/leave churn)
//! against one engine.
//!
//! Checked while running: the auditor's every reading of the economy is conserved.
//! Checked at the end: every player's balances equal what the applied decisions imply (so
//! nothing applied twice and nothing was lost), every retransmit repeated its first decision,
//! the counters agree with what the workers saw, and the grid holds exactly the live
//! entities, each in exactly one cell.

use crate::common::*;
use mmo_core::config::ITEM_KINDS;
use mmo_core::records::{EconomyKind, EconomyOp, EconomyResult, EconomyStatus, EventKind, MoveEvent, MoveRecord, TradeStack};
use mmo_core::{CoreConfig, Engine};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

const WORKERS: usize = 2;
const OPS_PER_WORKER: u64 = 600_000;
const PLAYERS_PER_WORKER: usize = 150;
const SHARED_PLAYERS: usize = 8;
const STARTING_GOLD: u64 = 1_000;

/// Tiny deterministic generator (xorshift64*), one per worker.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

#[derive(Default, Clone, Copy)]
struct Delta {
    gold: i128,
    items: [i128; ITEM_KINDS],
}

struct Mine {
    who: Who,
    x: f32,
    y: f32,
    seq: u32,
    client_ms: u32,
    /// Server clock of this player's last walking step: it walks again only once the clock
    /// has moved on (a 50 ms tick buys 0.6 m at 12 m/s, more than a step), so its moves
    /// always fit its distance budget; in between it sends stand-still moves.
    walked_ms: u64,
    next_txn: u64,
    next_grant: u64,
}

#[derive(Default)]
struct WorkerLog {
    ops: u64,
    applied_first_time: u64,
    grants: u64,
    duplicates_seen: u64,
    moves_acked: u64,
    /// Expected balance change per player id from this worker's applied decisions.
    deltas: HashMap<u64, Delta>,
    /// Players this worker made leave.
    departed: Vec<u64>,
    /// Players alive at the end.
    live: Vec<u64>,
}

fn record_applied(log: &mut WorkerLog, o: &EconomyOp) {
    let (g, c, k) = (o.gold as i128, o.item_count as i128, o.item_kind as usize);
    let mut me = *log.deltas.get(&o.player_id).unwrap_or(&Delta::default());
    match EconomyKind::try_from(o.kind).unwrap() {
        EconomyKind::Transfer => {
            let them = log.deltas.entry(o.counterparty_id).or_default();
            them.gold += g;
            if c > 0 {
                them.items[k] += c;
            }
            me.gold -= g;
            if c > 0 {
                me.items[k] -= c;
            }
        }
        EconomyKind::Trade | EconomyKind::LootPickup => unreachable!("retired kinds are refused, never applied"),
        EconomyKind::Spend => {
            me.gold -= g;
            if c > 0 {
                me.items[k] -= c;
            }
        }
    }
    log.deltas.insert(o.player_id, me);
}

fn worker(e: &Engine, index: usize, directory: &[AtomicU64], shared: &[(Who, AtomicU32)], clock: &AtomicU64) -> WorkerLog {
    let mut rng = Rng(0x9E37_79B9 + index as u64 * 7919);
    let mut log = WorkerLog::default();
    let mut mine: Vec<Mine> = (0..PLAYERS_PER_WORKER)
        .map(|slot| {
            let (x, y) = (50.0 + rng.unit() * 900.0, 50.0 + rng.unit() * 900.0);
            let who = join(e, x, y, (slot % 3) as u8);
            directory[index * PLAYERS_PER_WORKER + slot].store(who.id, Ordering::Release);
            Mine { who, x, y, seq: 0, client_ms: 0, walked_ms: 0, next_txn: 1, next_grant: 0 }
        })
        .collect();
    let mut batch: Vec<MoveRecord> = Vec::with_capacity(16);
    let mut events = vec![MoveEvent::default(); 16 * e.events_per_move_max()];
    // Recent requests, to retransmit later (within the de-duplication window).
    let mut recent: Vec<(EconomyOp, EconomyResult)> = Vec::new();
    while log.ops < OPS_PER_WORKER {
        let roll = rng.below(100);
        let now_ms = clock.load(Ordering::Acquire);
        if roll < 60 {
            // A batch of 16 moves from this worker's players, plus one shared player.
            batch.clear();
            for _ in 0..15 {
                let p = &mut mine[rng.below(PLAYERS_PER_WORKER as u64) as usize];
                p.seq += 1;
                p.client_ms += 100;
                let stride = if now_ms > p.walked_ms { 0.7 } else { 0.0 }; // at most 0.5 m a step
                let nx = (p.x + (rng.unit() - 0.5) * stride).clamp(1.0, 1020.0);
                let ny = (p.y + (rng.unit() - 0.5) * stride).clamp(1.0, 1020.0);
                p.walked_ms = now_ms;
                batch.push(mv(p.who, p.seq, p.client_ms, nx, ny));
                p.x = nx;
                p.y = ny;
            }
            let (who, seq) = &shared[rng.below(SHARED_PLAYERS as u64) as usize];
            let s = seq.fetch_add(1, Ordering::AcqRel) + 1;
            // Shared players stand still: any accepted move is legal, racing sequences may be stale.
            let here = e.player(who.id).unwrap();
            batch.push(mv(*who, s, s.wrapping_mul(100), here.x_m, here.y_m));
            let report = e.apply_moves(&batch, now_ms, &mut events).unwrap();
            assert_eq!(report.applied + report.rejected, 16);
            let acks = events[..report.events].iter().filter(|ev| ev.event_kind() == Some(EventKind::Ack)).count();
            assert_eq!(acks, report.applied);
            assert!(report.applied >= 15, "own players' moves are always legal");
            log.moves_acked += report.applied as u64;
            log.ops += 16;
        } else if roll < 88 {
            // An economy request, sent 1-3 times, maybe retransmitted later.
            let p = &mut mine[rng.below(PLAYERS_PER_WORKER as u64) as usize];
            let other = directory[rng.below(directory.len() as u64) as usize].load(Ordering::Acquire);
            let pick = rng.below(5);
            if pick == 4 {
                // An admin grant (the one source of items here), sometimes resent.
                p.next_grant += 1;
                let stack = TradeStack {
                    gold: rng.below(60) as i64,
                    item_count: rng.below(3) as i32,
                    item_kind: rng.below(4) as u16,
                    _reserved: 0,
                };
                let r = e.grant(p.who.id, p.next_grant, &stack);
                if EconomyStatus::try_from(r.status) == Ok(EconomyStatus::Applied) {
                    log.grants += 1;
                    let d = log.deltas.entry(p.who.id).or_default();
                    d.gold += i128::from(stack.gold);
                    d.items[stack.item_kind as usize] += i128::from(stack.item_count);
                    let again = e.grant(p.who.id, p.next_grant, &stack);
                    assert_eq!((again.duplicate, again.status), (1, r.status), "a resent grant is answered, not applied");
                    log.duplicates_seen += 1;
                }
                log.ops += 2;
                continue;
            }
            // Trades and loot pickups are refused kinds: sent now and then, they must change nothing.
            let kind = [EconomyKind::Transfer, EconomyKind::Spend, EconomyKind::Transfer, EconomyKind::Trade][pick as usize];
            let o = op(p.who, p.next_txn, kind, other, rng.below(60) as i64, rng.below(4) as u16, rng.below(3) as i32);
            p.next_txn += 1;
            let copies = 1 + rng.below(3);
            let first = run_op(e, o);
            if first.duplicate == 0 && EconomyStatus::try_from(first.status) == Ok(EconomyStatus::Applied) {
                log.applied_first_time += 1;
                record_applied(&mut log, &o);
            }
            assert_eq!(first.duplicate, 0, "a fresh transaction id is never a duplicate");
            for _ in 1..copies {
                let again = run_op(e, o);
                assert_eq!((again.duplicate, again.status, again.gold_balance), (1, first.status, first.gold_balance));
                log.duplicates_seen += 1;
            }
            if recent.len() == 8 {
                let (old, old_first) = recent.remove(0);
                let again = run_op(e, old);
                // Still inside the window (8 < 32 requests per player at most).
                assert_eq!((again.duplicate, again.status, again.gold_balance), (1, old_first.status, old_first.gold_balance));
                log.duplicates_seen += 1;
            }
            recent.push((o, first));
            log.ops += copies + 1;
        } else if roll < 92 {
            let mut r = raid(100.0 + rng.unit() * 800.0, 100.0 + rng.unit() * 800.0, 1 + rng.below(300) as u32, 1 + rng.below(200) as u32);
            r.seed = rng.next() as u32;
            let _ = e.raid_spawn(&r); // may be refused at capacity; whole or nothing either way
            log.ops += 1;
        } else if roll < 97 {
            let p = &mine[rng.below(PLAYERS_PER_WORKER as u64) as usize];
            let target = directory[rng.below(directory.len() as u64) as usize].load(Ordering::Acquire);
            let _ = e.damage(p.who.id, p.who.token, target, 1 + rng.below(20) as i32);
            log.ops += 1;
        } else {
            // Churn: one of mine leaves and a new player takes its place.
            let slot = rng.below(PLAYERS_PER_WORKER as u64) as usize;
            let old = mine[slot].who;
            e.leave(old.id, old.token).unwrap();
            log.departed.push(old.id);
            recent.retain(|(o, _)| o.player_id != old.id);
            let (x, y) = (50.0 + rng.unit() * 900.0, 50.0 + rng.unit() * 900.0);
            let who = join(e, x, y, 1);
            directory[index * PLAYERS_PER_WORKER + slot].store(who.id, Ordering::Release);
            mine[slot] = Mine { who, x, y, seq: 0, client_ms: 0, walked_ms: 0, next_txn: 1, next_grant: 0 };
            log.ops += 2;
        }
    }
    log.live = mine.iter().map(|p| p.who.id).collect();
    log
}

#[test]
fn a_million_mixed_operations_keep_conservation_and_at_most_once() {
    let e = Engine::new(CoreConfig {
        starting_gold: STARTING_GOLD,
        player_capacity: 1_024,
        raid_object_capacity: 20_000,
        raid_burst_capacity: 64,
        // A leave departs at once: the audits count departed wallets (combat_linger.rs has
        // the linger).
        logout_linger_ms: 0,
        ..small_config()
    })
    .unwrap();
    let directory: Vec<AtomicU64> = (0..WORKERS * PLAYERS_PER_WORKER).map(|_| AtomicU64::new(0)).collect();
    let shared: Vec<(Who, AtomicU32)> = (0..SHARED_PLAYERS).map(|i| (join(&e, 500.0 + i as f32, 500.0, 1), AtomicU32::new(0))).collect();
    let clock = AtomicU64::new(1_000);
    let done = AtomicBool::new(false);
    let audits = AtomicU64::new(0);

    /// Stops the tick driver and the auditor when the workers are done, or when one of them
    /// panics (the scope would otherwise wait on the driver forever instead of failing).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let logs: Vec<WorkerLog> = std::thread::scope(|s| {
        let _stop = StopOnDrop(&done);
        s.spawn(|| {
            // Tick driver.
            while !done.load(Ordering::Acquire) {
                let now = clock.fetch_add(50, Ordering::AcqRel) + 50;
                e.tick(now);
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
        });
        s.spawn(|| {
            // Auditor: every reading it can take must balance.
            while !done.load(Ordering::Acquire) {
                let audit = e.economy_audit();
                assert!(audit.is_conserved(), "conservation broken mid-run: {audit:?}");
                audits.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let handles: Vec<_> = (0..WORKERS)
            .map(|i| {
                let (e, directory, shared, clock) = (&e, &directory, &shared, &clock);
                s.spawn(move || worker(e, i, directory, shared, clock))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let total_ops: u64 = logs.iter().map(|l| l.ops).sum();
    assert!(total_ops >= 1_000_000, "ran {total_ops} operations");
    assert!(audits.load(Ordering::Relaxed) > 0);

    // Expected balances from the applied decisions.
    let mut expected: HashMap<u64, Delta> = HashMap::new();
    for log in &logs {
        for (id, d) in &log.deltas {
            let x = expected.entry(*id).or_default();
            x.gold += d.gold;
            for k in 0..ITEM_KINDS {
                x.items[k] += d.items[k];
            }
        }
    }
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    let mut departed_gold: i128 = 0;
    for log in &logs {
        for id in &log.live {
            let view = e.player(*id).unwrap();
            let d = expected.get(id).copied().unwrap_or_default();
            assert_eq!(i128::from(view.gold), STARTING_GOLD as i128 + d.gold, "player {id} gold");
            for k in 0..ITEM_KINDS {
                assert_eq!(i128::from(view.items[k]), d.items[k], "player {id} item {k}");
            }
        }
        for id in &log.departed {
            departed_gold += STARTING_GOLD as i128 + expected.get(id).map_or(0, |d| d.gold);
        }
    }
    assert_eq!(audit.departed.gold as i128, departed_gold, "departed wallets kept exactly their balances");

    let stats = e.stats();
    let applied: u64 = logs.iter().map(|l| l.applied_first_time).sum();
    assert_eq!(stats.economy_applied, applied, "no decision applied twice");
    assert_eq!(stats.grants, logs.iter().map(|l| l.grants).sum::<u64>(), "no grant applied twice");
    assert_eq!(stats.economy_duplicates, logs.iter().map(|l| l.duplicates_seen).sum::<u64>());
    assert_eq!(stats.moves_applied, logs.iter().map(|l| l.moves_acked).sum::<u64>());

    // Drain the raids; the grid holds exactly the live players, each once.
    let mut now = clock.load(Ordering::Acquire);
    for _ in 0..10 {
        now += 50;
        e.tick(now);
    }
    assert_eq!(e.live_raid_objects(), 0);
    let live: Vec<u64> = logs.iter().flat_map(|l| l.live.iter().copied()).chain(shared.iter().map(|(w, _)| w.id)).collect();
    assert_eq!(e.grid().census(), mmo_core::grid::GridCensus { players: live.len(), objects: 0 });
    for id in live {
        let view = e.player(id).unwrap();
        assert_eq!(e.grid().cells_containing(id), vec![view.cell]);
    }
    for log in &logs {
        for id in &log.departed {
            assert!(e.grid().cells_containing(*id).is_empty());
        }
    }
}
