//! Movement through the engine: acks, contacts, every rejection reason, cell crossings with
//! hysteresis, and the batch contract.

use crate::common::*;
use mmo_core::BatchError;
use mmo_core::records::{EntityKind, EventKind, MoveEvent, MoveRecord, RejectReason};

fn reject_reason(ev: &MoveEvent) -> RejectReason {
    assert_eq!(ev.event_kind(), Some(EventKind::Reject));
    RejectReason::try_from(ev.detail).unwrap()
}

#[test]
fn applied_move_is_acked_and_written() {
    let e = engine();
    let a = join(&e, 100.0, 100.0, 1);
    let events = apply(&e, &[mv(a, 1, 1000, 101.0, 100.0)], 10_000);
    assert_eq!(kinds(&events), vec![EventKind::Ack]);
    assert_eq!(events[0].player_id, a.id);
    assert_eq!(events[0].sequence, 1);
    let view = e.player(a.id).unwrap();
    assert_eq!((view.x_m, view.y_m, view.last_sequence), (101.0, 100.0, 1));
    assert_eq!(e.stats().moves_applied, 1);
}

#[test]
fn every_rejection_reason_is_reported_and_counted() {
    let e = engine();
    let a = join(&e, 100.0, 100.0, 1);
    apply(&e, &[mv(a, 5, 1000, 100.5, 100.0)], 10_000);
    let mut wrong_session = mv(a, 6, 1100, 100.6, 100.0);
    wrong_session.session_token ^= 1;
    let mut unknown = mv(a, 6, 1100, 100.6, 100.0);
    unknown.player_id = a.id + 1000;
    let batch = [
        unknown,
        wrong_session,
        mv(a, 5, 1100, 100.6, 100.0),    // replayed sequence
        mv(a, 4, 1100, 100.6, 100.0),    // older sequence
        mv(a, 6, 1100, 200.0, 100.0),    // 100 m in 100 ms
        mv(a, 7, 1100, -1.0, 100.0),     // outside the world
        mv(a, 8, 1100, f32::NAN, 100.0), // not a number
        mv(a, 9, 1100, 100.0, 5000.0),   // outside the world
    ];
    let events = apply(&e, &batch, 10_100);
    let reasons: Vec<RejectReason> = events.iter().map(reject_reason).collect();
    use RejectReason::*;
    assert_eq!(reasons, vec![UnknownPlayer, WrongSession, StaleSequence, StaleSequence, TooFast, OutOfBounds, OutOfBounds, OutOfBounds]);
    let s = e.stats();
    assert_eq!(s.move_rejected_unknown_player, 1);
    assert_eq!(s.move_rejected_wrong_session, 1);
    assert_eq!(s.move_rejected_stale_sequence, 2);
    assert_eq!(s.move_rejected_too_fast, 1);
    assert_eq!(s.move_rejected_out_of_bounds, 3);
    assert_eq!(s.moves_applied, 1);
    // Nothing refused was applied.
    let view = e.player(a.id).unwrap();
    assert_eq!((view.x_m, view.last_sequence), (100.5, 5));
}

#[test]
fn contacts_are_reported_to_the_mover_and_capped() {
    let e = engine();
    let a = join(&e, 300.0, 300.0, 1);
    let b = join(&e, 305.0, 300.0, 2);
    let far = join(&e, 340.0, 300.0, 2);
    let events = apply(&e, &[mv(a, 1, 0, 301.0, 300.0)], 1_000);
    assert_eq!(kinds(&events), vec![EventKind::Ack, EventKind::Contact]);
    assert_eq!(events[1].other_id, b.id);
    assert_eq!(events[1].detail, EntityKind::Player as u8);
    assert!((events[1].distance_m - 4.0).abs() < 1e-4);
    let _ = far;
    // Crowd the mover: more neighbours than the cap.
    let cap = e.config().contacts_per_move_max as usize;
    for i in 0..cap + 3 {
        join(&e, 301.0 + (i as f32) * 0.1, 302.0, 3);
    }
    let events = apply(&e, &[mv(a, 2, 100, 301.2, 300.0)], 1_100);
    assert_eq!(events.len(), 1 + cap);
    assert!(events[1..].iter().all(|ev| ev.event_kind() == Some(EventKind::Contact)));
    let s = e.stats();
    assert_eq!(s.contacts_reported, 1 + cap as u64);
    assert_eq!(s.contacts_truncated, 4, "cap + 3 crowd + b within 8 m, minus cap reported");
}

#[test]
fn crossing_a_cell_boundary_moves_the_entity_with_hysteresis() {
    let e = engine();
    let a = join(&e, 30.0, 10.0, 1);
    let home = e.grid().cell_of(30.0, 10.0);
    let next = e.grid().cell_of(40.0, 10.0);
    // 1 m past the boundary at 32 m: inside the margin, stays home.
    apply(&e, &[mv(a, 1, 0, 33.0, 10.0)], 1_000);
    assert_eq!(e.player(a.id).unwrap().cell, home);
    assert_eq!(e.grid().cells_containing(a.id), vec![home]);
    // 3 m past: moves.
    apply(&e, &[mv(a, 2, 200, 35.0, 10.0)], 1_200);
    assert_eq!(e.player(a.id).unwrap().cell, next);
    assert_eq!(e.grid().cells_containing(a.id), vec![next]);
    // Back 1 m into the old cell: stays in the new one (no thrash).
    apply(&e, &[mv(a, 3, 600, 31.0, 10.0)], 1_600);
    assert_eq!(e.grid().cells_containing(a.id), vec![next]);
    assert_eq!(e.stats().cell_crossings, 1);
}

#[test]
fn a_batch_that_cannot_fit_its_worst_case_is_refused_whole() {
    let e = engine();
    let a = join(&e, 100.0, 100.0, 1);
    let batch = [mv(a, 1, 0, 100.5, 100.0), mv(a, 2, 100, 101.0, 100.0)];
    let mut out = vec![MoveEvent::default(); 2 * e.events_per_move_max() - 1];
    assert_eq!(e.apply_moves(&batch, 1_000, &mut out), Err(BatchError::OutputTooSmall { required: 2 * e.events_per_move_max() }));
    assert_eq!(e.player(a.id).unwrap().last_sequence, 0, "nothing applied");
    assert_eq!(e.stats().move_batches_refused, 1);
    // An empty batch is fine with an empty buffer.
    assert_eq!(e.apply_moves(&[], 1_000, &mut []).unwrap().events, 0);
}

#[test]
fn moves_of_a_departed_player_miss() {
    let e = engine();
    let a = join(&e, 100.0, 100.0, 1);
    e.leave(a.id, a.token).unwrap();
    let events = apply(&e, &[mv(a, 1, 0, 100.5, 100.0)], 1_000);
    assert_eq!(reject_reason(&events[0]), RejectReason::UnknownPlayer);
    // A new player reusing the slot has a different id; the old id still misses.
    let b = join(&e, 100.0, 100.0, 1);
    assert_ne!(a.id, b.id);
    let events = apply(&e, &[mv(a, 2, 0, 100.5, 100.0), mv(b, 1, 0, 100.5, 100.0)], 1_000);
    assert_eq!(reject_reason(&events[0]), RejectReason::UnknownPlayer);
    assert_eq!(events[1].event_kind(), Some(EventKind::Ack));
}

#[test]
fn area_of_interest_lists_nearest_first_as_of_the_last_tick() {
    let e = engine();
    let a = join(&e, 500.0, 500.0, 1);
    let near = join(&e, 503.0, 500.0, 1);
    let nearer = join(&e, 501.0, 500.0, 1);
    let far = join(&e, 520.0, 500.0, 1);
    let mut out = [mmo_core::records::AoiEntry::default(); 2];
    assert_eq!(e.area_of_interest(a.id, &mut out), Err(mmo_core::AoiError::NotInSnapshot), "no tick yet");
    e.tick(0);
    assert_eq!(e.area_of_interest(a.id, &mut out), Ok(2));
    assert_eq!(out.map(|x| x.entity_id), [nearer.id, near.id]);
    assert_eq!(e.area_of_interest(12345, &mut out), Err(mmo_core::AoiError::UnknownPlayer));
    let mut big = vec![mmo_core::records::AoiEntry::default(); 200];
    assert_eq!(e.area_of_interest(a.id, &mut big), Ok(3), "capped by what exists");
    // `far` walks next to `a`: the area of interest shows it there from the next tick on.
    for (seq, x) in (1..=20u32).zip((500..=519).rev()) {
        let events = apply(&e, &[mv(far, seq, seq * 1_000, x as f32, 500.0)], u64::from(seq) * 1_000);
        assert_eq!(events[0].event_kind(), Some(EventKind::Ack));
    }
    assert_eq!(e.player(far.id).unwrap().x_m, 500.0);
    e.area_of_interest(a.id, &mut out).unwrap();
    assert_eq!(out.map(|x| x.entity_id), [nearer.id, near.id], "as of the last tick");
    e.tick(50);
    e.area_of_interest(a.id, &mut out).unwrap();
    assert_eq!(out.map(|x| (x.entity_id, x.distance_m)), [(far.id, 0.0), (nearer.id, 1.0)]);
    let latecomer = join(&e, 500.0, 501.0, 1);
    assert_eq!(e.area_of_interest(latecomer.id, &mut out), Err(mmo_core::AoiError::NotInSnapshot), "joined after the tick");
}

/// The join ticket's slot hint is only a hint: whatever a move carries there (its own, none,
/// another player's, past every slot), the answer is the one the player record gives, and a
/// wrong session token is refused on either path.
#[test]
fn a_wrong_stale_or_hostile_slot_hint_changes_no_answer() {
    let e = engine();
    let a = join(&e, 100.0, 100.0, 1);
    let b = join(&e, 110.0, 100.0, 2);
    assert!(a.slot_hint != 0 && b.slot_hint != 0 && a.slot_hint != b.slot_hint);
    let hints = [a.slot_hint, 0, b.slot_hint, a.slot_hint.max(b.slot_hint) + 1, 1 << 24, u32::MAX];
    for (i, &hint) in hints.iter().enumerate() {
        let (seq, now_ms) = (i as u32 + 1, 10_000 + 100 * i as u64);
        let x = 100.0 + 0.1 * seq as f32;
        let rec = MoveRecord { slot_hint: hint, ..mv(a, seq, now_ms as u32, x, 100.0) };
        let wrong_token = MoveRecord { session_token: a.token ^ 1, sequence: seq + 100, ..rec };
        // b's id with a's token (and whatever hint): refused, and b's body is not touched.
        let forged = MoveRecord { player_id: b.id, sequence: seq + 200, ..rec };
        let events = apply(&e, &[wrong_token, forged, rec], now_ms);
        assert_eq!(reject_reason(&events[0]), RejectReason::WrongSession, "hint {hint}");
        assert_eq!(reject_reason(&events[1]), RejectReason::WrongSession, "hint {hint}");
        let ack = events.iter().position(|ev| ev.event_kind() == Some(EventKind::Ack)).expect("the move is applied");
        assert_eq!((events[ack].player_id, events[ack].sequence), (a.id, seq), "hint {hint}");
        assert_eq!(e.player(a.id).unwrap().x_m, x, "hint {hint}");
    }
    let b_view = e.player(b.id).unwrap();
    assert_eq!((b_view.x_m, b_view.y_m, b_view.last_sequence), (110.0, 100.0, 0), "b never moved");
    // After a's leave its slot goes to c: a's moves with a's old hint (now c's slot) miss, and
    // c's own are applied.
    e.leave(a.id, a.token).unwrap();
    let c = join(&e, 120.0, 100.0, 1);
    assert_eq!(c.slot_hint, a.slot_hint, "leave frees the slot at once and join reuses it first");
    let stale = MoveRecord { slot_hint: a.slot_hint, ..mv(a, 50, 20_000, 100.5, 100.0) };
    let events = apply(&e, &[stale, mv(c, 1, 20_000, 120.5, 100.0)], 20_000);
    assert_eq!(reject_reason(&events[0]), RejectReason::UnknownPlayer);
    assert_eq!((events[1].event_kind(), events[1].player_id), (Some(EventKind::Ack), c.id));
    let s = e.stats();
    assert_eq!(s.move_rejected_unknown_player, 1);
}
