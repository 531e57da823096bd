//! Property tests: random interleavings of joins, leaves, moves, raid spawns, ticks, trades
//! and retransmits, with every invariant checked after every step:
//! - every live player is registered in exactly one grid cell, the one its body names, and
//!   that cell is within the hysteresis margin of its position;
//! - departed players are in no cell, and their ids miss (moves, lookups, economy);
//! - the grid holds exactly the live players and live raid objects;
//! - conservation: `live + departed == minted - sunk` for gold and every item kind;
//! - at most once: a retransmitted economy request repeats its first decision and changes
//!   nothing.

use crate::common::*;
use mmo_core::records::{EconomyKind, EconomyResult, EconomyStatus, EventKind, RejectReason};
use mmo_core::{CoreConfig, Engine};
use proptest::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug)]
enum Step {
    Join { x: f32, y: f32, faction: u8 },
    Leave { who: usize },
    Move { who: usize, dx: f32, dy: f32, seq_step: i8, dt_ms: u16 },
    Spawn { x: f32, y: f32, count: u16, lifetime_ms: u16 },
    Tick,
    Trade { who: usize, other: usize, kind: u8, gold: i16, item: u8, count: i8 },
    Retransmit { pick: usize },
    ForeignId { who: usize },
}

fn step() -> impl Strategy<Value = Step> {
    let coord = 0.0f32..1023.0;
    prop_oneof![
        2 => (coord.clone(), coord.clone(), 0u8..3).prop_map(|(x, y, faction)| Step::Join { x, y, faction }),
        1 => any::<usize>().prop_map(|who| Step::Leave { who }),
        8 => (any::<usize>(), -8.0f32..8.0, -8.0f32..8.0, -1i8..4, 0u16..1200)
            .prop_map(|(who, dx, dy, seq_step, dt_ms)| Step::Move { who, dx, dy, seq_step, dt_ms }),
        1 => (coord.clone(), coord, 1u16..400, 1u16..300).prop_map(|(x, y, count, lifetime_ms)| Step::Spawn { x, y, count, lifetime_ms }),
        2 => Just(Step::Tick),
        4 => (any::<usize>(), any::<usize>(), 0u8..6, -5i16..400, 0u8..18, -2i8..6)
            .prop_map(|(who, other, kind, gold, item, count)| Step::Trade { who, other, kind, gold, item, count }),
        3 => any::<usize>().prop_map(|pick| Step::Retransmit { pick }),
        1 => any::<usize>().prop_map(|who| Step::ForeignId { who }),
    ]
}

struct Live {
    who: Who,
    seq: u32,
    /// Whether a move was applied (until then any sequence is new).
    moved: bool,
    client_ms: u32,
    next_txn: u64,
}

struct Model {
    live: Vec<Live>,
    departed: Vec<Who>,
    /// Every economy request sent, with its first result.
    sent: Vec<(mmo_core::records::EconomyOp, EconomyResult)>,
    first_result: HashMap<(u64, u64), EconomyResult>,
    now_ms: u64,
}

fn check_invariants(e: &Engine, m: &Model) -> Result<(), TestCaseError> {
    for p in &m.live {
        let view = e.player(p.who.id).ok_or_else(|| TestCaseError::fail("live player missing"))?;
        prop_assert_eq!(e.grid().cells_containing(p.who.id), vec![view.cell]);
        prop_assert_eq!(e.grid().cell_with_hysteresis(view.cell, view.x_m, view.y_m), view.cell);
    }
    for d in &m.departed {
        prop_assert!(e.player(d.id).is_none());
        prop_assert!(e.grid().cells_containing(d.id).is_empty());
    }
    let census = e.grid().census();
    prop_assert_eq!(census.players, m.live.len());
    prop_assert_eq!(census.objects, e.live_raid_objects() as usize);
    prop_assert_eq!(e.grid().misplaced(), 0);
    prop_assert_eq!(e.live_players() as usize, m.live.len());
    let audit = e.economy_audit();
    prop_assert!(audit.is_conserved(), "conservation broken: {:?}", audit);
    prop_assert_eq!(audit.open_wallets as usize, m.live.len());
    Ok(())
}

fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let e = Engine::new(CoreConfig { starting_gold: 500, raid_object_capacity: 2_000, raid_burst_capacity: 8, ..small_config() }).unwrap();
    let mut m = Model { live: Vec::new(), departed: Vec::new(), sent: Vec::new(), first_result: HashMap::new(), now_ms: 1_000 };
    for s in steps {
        match s {
            Step::Join { x, y, faction } => {
                let who = join(&e, x, y, faction);
                m.live.push(Live { who, seq: 0, moved: false, client_ms: 0, next_txn: 1 });
            }
            Step::Leave { who } if !m.live.is_empty() => {
                let p = m.live.swap_remove(who % m.live.len());
                prop_assert!(e.leave(p.who.id, p.who.token).is_ok());
                m.departed.push(p.who);
            }
            Step::Move { who, dx, dy, seq_step, dt_ms } if !m.live.is_empty() => {
                let i = who % m.live.len();
                let before = e.player(m.live[i].who.id).unwrap();
                let p = &mut m.live[i];
                let seq = p.seq.wrapping_add(seq_step as i32 as u32);
                let client_ms = p.client_ms + u32::from(dt_ms);
                m.now_ms += u64::from(dt_ms);
                let (x, y) = (before.x_m + dx, before.y_m + dy);
                let events = apply(&e, &[mv(p.who, seq, client_ms, x, y)], m.now_ms);
                let after = e.player(p.who.id).unwrap();
                match events[0].event_kind() {
                    Some(EventKind::Ack) => {
                        prop_assert!(seq_step > 0 || !p.moved, "a stale sequence was accepted");
                        prop_assert_eq!((after.x_m, after.y_m, after.last_sequence), (x, y, seq));
                        prop_assert!(events[1..].iter().all(|ev| ev.event_kind() == Some(EventKind::Contact)));
                        p.seq = seq;
                        p.moved = true;
                        p.client_ms = client_ms;
                    }
                    Some(EventKind::Reject) => {
                        let reason = RejectReason::try_from(events[0].detail).unwrap();
                        prop_assert!(matches!(reason, RejectReason::StaleSequence | RejectReason::TooFast | RejectReason::OutOfBounds));
                        prop_assert_eq!(events.len(), 1);
                        prop_assert_eq!((after.x_m, after.y_m, after.last_sequence), (before.x_m, before.y_m, before.last_sequence));
                    }
                    other => prop_assert!(false, "unexpected first event {:?}", other),
                }
            }
            Step::Spawn { x, y, count, lifetime_ms } => {
                let before = e.live_raid_objects();
                match e.raid_spawn(&raid(x, y, u32::from(count), u32::from(lifetime_ms))) {
                    Ok(r) => prop_assert_eq!(e.live_raid_objects(), before + r.spawned),
                    Err(_) => prop_assert_eq!(e.live_raid_objects(), before),
                }
            }
            Step::Tick => {
                m.now_ms += 50;
                e.tick(m.now_ms);
            }
            Step::Trade { who, other, kind, gold, item, count } if !m.live.is_empty() => {
                let i = who % m.live.len();
                let counterparty = match other % 4 {
                    0 => 0,
                    1 => m.departed.first().map_or(7777, |d| d.id),
                    _ => m.live[other % m.live.len()].who.id,
                };
                let p = &mut m.live[i];
                let mut o = op(p.who, p.next_txn, EconomyKind::Transfer, counterparty, i64::from(gold), u16::from(item), i32::from(count));
                o.kind = kind; // 0 and 5 are not kinds: typed refusal
                p.next_txn += 1;
                let r = run_op(&e, o);
                prop_assert_eq!(r.duplicate, 0);
                m.first_result.insert((o.player_id, o.transaction_id), r);
                m.sent.push((o, r));
            }
            Step::Retransmit { pick } if !m.sent.is_empty() => {
                let (o, first) = m.sent[pick % m.sent.len()];
                let still_live = m.live.iter().find(|p| p.who.id == o.player_id);
                let audit_before = e.economy_audit();
                let r = run_op(&e, o);
                match still_live {
                    Some(p) => {
                        if p.next_txn - o.transaction_id <= mmo_core::economy::DEDUP_WINDOW as u64 {
                            prop_assert_eq!(r.duplicate, 1);
                            prop_assert_eq!((r.status, r.gold_balance), (first.status, first.gold_balance));
                        } else {
                            prop_assert_eq!(EconomyStatus::try_from(r.status), Ok(EconomyStatus::TransactionTooOld));
                        }
                    }
                    None => prop_assert_eq!(EconomyStatus::try_from(r.status), Ok(EconomyStatus::UnknownPlayer)),
                }
                prop_assert_eq!(e.economy_audit(), audit_before, "a retransmit changed the books");
            }
            Step::ForeignId { who } if !m.departed.is_empty() => {
                let d = m.departed[who % m.departed.len()];
                let events = apply(&e, &[mv(d, 1_000_000, 0, 1.0, 1.0)], m.now_ms);
                prop_assert_eq!(RejectReason::try_from(events[0].detail), Ok(RejectReason::UnknownPlayer));
            }
            _ => {}
        }
        check_invariants(&e, &m)?;
    }
    // Drain every burst: the grid and arena empty out.
    for _ in 0..20 {
        m.now_ms += 50;
        e.tick(m.now_ms);
    }
    prop_assert_eq!(e.live_raid_objects(), 0);
    check_invariants(&e, &m)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]
    #[test]
    fn random_interleavings_keep_every_invariant(steps in proptest::collection::vec(step(), 1..120)) {
        run(steps)?;
    }
}
