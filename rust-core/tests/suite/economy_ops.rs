//! Economy through the engine: every operation, every typed error, at-most-once under
//! retransmits, and conservation including departures.

use crate::common::*;
use mmo_core::records::{EconomyKind::*, EconomyResult, EconomyStatus, TradeAnswer, TradeOffer, TradeStack};
use mmo_core::{BatchError, CoreConfig, Engine};

fn rich_engine() -> Engine {
    Engine::new(CoreConfig { starting_gold: 1_000, ..small_config() }).unwrap()
}

fn grant(e: &Engine, who: Who, id: u64, gold: i64, item_kind: u16, item_count: i32) -> EconomyResult {
    e.grant(who.id, id, &TradeStack { gold, item_count, item_kind, _reserved: 0 })
}

#[test]
fn transfer_and_spend_apply_and_conserve_and_no_client_request_mints() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let b = join(&e, 20.0, 10.0, 1);
    let r = grant(&e, a, 1, 50, 3, 5);
    assert_eq!((status(&r), r.gold_balance, r.duplicate), (EconomyStatus::Applied, 1_050, 0));
    assert_eq!(status(&run_op(&e, op(a, 2, Transfer, b.id, 100, 3, 2))), EconomyStatus::Applied);
    // The retired kinds: a client naming its own loot, or taking another's items at its price.
    assert_eq!(status(&run_op(&e, op(b, 1, LootPickup, 0, 1 << 40, 3, 100))), EconomyStatus::KindRetired);
    assert_eq!(status(&run_op(&e, op(b, 2, Trade, a.id, 1, 3, 3))), EconomyStatus::KindRetired);
    assert_eq!(status(&run_op(&e, op(b, 3, Spend, 0, 70, 3, 1))), EconomyStatus::Applied);
    let (va, vb) = (e.player(a.id).unwrap(), e.player(b.id).unwrap());
    assert_eq!((va.gold, va.items[3]), (1_050 - 100, 5 - 2));
    assert_eq!((vb.gold, vb.items[3]), (1_000 + 100 - 70, 2 - 1));
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!((audit.minted.gold, audit.minted_by_grant.gold), (2_050, 50));
    assert_eq!(audit.sunk.gold, 70);
    assert_eq!(audit.live.items[3], 4);
    let s = e.stats();
    assert_eq!((s.economy_applied, s.economy_kind_retired, s.grants), (2, 2, 1));
}

#[test]
fn every_bad_request_gets_its_typed_error() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let b = join(&e, 20.0, 10.0, 1);
    let mut wrong_session = op(a, 1, Transfer, b.id, 1, 0, 0);
    wrong_session.session_token ^= 1;
    let mut unknown = op(a, 1, Transfer, b.id, 1, 0, 0);
    unknown.player_id = 999_999;
    let mut bad_kind = op(a, 3, Transfer, b.id, 1, 0, 0);
    bad_kind.kind = 77;
    use EconomyStatus::*;
    let cases = [
        (wrong_session, WrongSession),
        (unknown, UnknownPlayer),
        (op(a, 0, Transfer, b.id, 1, 0, 0), InvalidTransaction),
        (op(a, 2, Transfer, b.id, -5, 0, 0), InvalidAmount),
        (bad_kind, BadKind),
        (op(a, 4, Transfer, b.id, 0, 0, 0), InvalidAmount),
        (op(a, 5, Transfer, b.id, 0, 0, -1), InvalidAmount),
        (op(a, 6, Transfer, b.id, 1 << 50, 0, 0), Overflow),
        (op(a, 7, Transfer, a.id, 1, 0, 0), SelfTrade),
        (op(a, 8, Trade, a.id, 1, 0, 1), KindRetired),
        (op(a, 9, Transfer, b.id, 0, 16, 1), UnknownItem),
        (op(a, 10, Transfer, b.id, 5_000, 0, 0), InsufficientFunds),
        (op(a, 11, Transfer, b.id, 0, 2, 1), InsufficientItems),
        (op(a, 12, LootPickup, 0, -10, 99, -1), KindRetired),
        (op(a, 13, Transfer, b.id, 0, 2, 0), InvalidAmount),
        (op(a, 14, Transfer, 0, 10, 0, 0), UnknownPlayer),
        (op(a, 15, Transfer, 424_242, 10, 0, 0), UnknownPlayer),
        (op(a, 16, Spend, 0, 2_000, 0, 0), InsufficientFunds),
    ];
    for (i, (request, expected)) in cases.iter().enumerate() {
        let r = run_op(&e, *request);
        assert_eq!(status(&r), *expected, "case {i}");
        assert_eq!(r.duplicate, 0);
    }
    // A balance that would overflow u64.
    let big = (1i64 << 48) - 1;
    let mut txn = 100;
    let mut minted_total: u128 = 1_000;
    loop {
        let r = grant(&e, b, txn, big, 0, 0);
        txn += 1;
        if status(&r) == EconomyStatus::Overflow {
            break;
        }
        assert_eq!(status(&r), EconomyStatus::Applied);
        minted_total += big as u128;
        assert!(txn < 100 + 70_000, "u64 must overflow within 2^16 pickups of 2^48");
    }
    assert_eq!(status(&run_op(&e, op(b, txn, Transfer, a.id, 0, 0, 0))), EconomyStatus::InvalidAmount);
    assert_eq!(u128::from(e.player(b.id).unwrap().gold), minted_total);
    // Nothing refused changed a balance.
    assert_eq!(e.player(a.id).unwrap().gold, 1_000);
    assert!(e.economy_audit().is_conserved());
    let s = e.stats();
    assert_eq!((s.economy_wrong_session, s.economy_unknown_player, s.economy_invalid_transaction), (1, 3, 1));
    assert_eq!((s.economy_self_trade, s.economy_unknown_item, s.economy_bad_kind), (1, 1, 1));
    assert_eq!((s.economy_insufficient_funds, s.economy_insufficient_items), (2, 1));
    assert_eq!(s.economy_overflow, 2);
    assert_eq!(s.economy_invalid_amount, 5);
    assert_eq!(s.economy_kind_retired, 2);
}

#[test]
fn retransmits_apply_at_most_once_and_repeat_the_decision() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let b = join(&e, 20.0, 10.0, 1);
    let t = op(a, 1, Transfer, b.id, 100, 0, 0);
    let first = run_op(&e, t);
    for _ in 0..5 {
        let again = run_op(&e, t);
        assert_eq!((status(&again), again.duplicate, again.gold_balance), (EconomyStatus::Applied, 1, first.gold_balance));
    }
    assert_eq!(e.player(b.id).unwrap().gold, 1_100);
    // A refused decision is also final: after a gets more gold, the retransmit of the
    // refused transfer is still refused, not applied.
    let too_much = op(a, 2, Transfer, b.id, 2_000, 0, 0);
    assert_eq!(status(&run_op(&e, too_much)), EconomyStatus::InsufficientFunds);
    grant(&e, a, 1, 5_000, 0, 0);
    let again = run_op(&e, too_much);
    assert_eq!((status(&again), again.duplicate), (EconomyStatus::InsufficientFunds, 1));
    assert_eq!(e.player(b.id).unwrap().gold, 1_100);
    // Duplicates inside one batch too.
    let batch = [op(a, 4, Transfer, b.id, 1, 0, 0); 3];
    let mut out = [EconomyResult::default(); 3];
    e.apply_economy(&batch, &mut out).unwrap();
    assert_eq!(out.map(|r| r.duplicate), [0, 1, 1]);
    assert_eq!(e.player(b.id).unwrap().gold, 1_101);
    // Far beyond the window, an old id is refused rather than re-applied.
    for txn in 5..5 + mmo_core::economy::DEDUP_WINDOW as u64 + 1 {
        run_op(&e, op(a, txn, Spend, 0, 1, 0, 0));
    }
    assert_eq!(status(&run_op(&e, t)), EconomyStatus::TransactionTooOld);
    assert_eq!(e.player(b.id).unwrap().gold, 1_101);
    let s = e.stats();
    assert_eq!(s.economy_duplicates, 8);
    assert_eq!(s.economy_too_old, 1);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn the_deduplication_window_boundary_is_exact() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let window = mmo_core::economy::DEDUP_WINDOW as u64;
    let highest = 100;
    for txn in 1..=highest {
        assert_eq!(status(&run_op(&e, op(a, txn, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    }
    // The newest `window` ids are remembered: a retransmit repeats the decision.
    let inside = run_op(&e, op(a, highest - window + 1, Spend, 0, 1, 0, 0));
    assert_eq!((status(&inside), inside.duplicate), (EconomyStatus::Applied, 1));
    // One older and it is refused, never re-applied.
    let outside = run_op(&e, op(a, highest - window, Spend, 0, 1, 0, 0));
    assert_eq!((status(&outside), outside.duplicate), (EconomyStatus::TransactionTooOld, 0));
    assert_eq!(e.player(a.id).unwrap().gold, 1_000 - highest);
    // A new id far ahead moves the window: the old newest ids become too old.
    assert_eq!(status(&run_op(&e, op(a, highest + 1_000, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    assert_eq!(status(&run_op(&e, op(a, highest, Spend, 0, 1, 0, 0))), EconomyStatus::TransactionTooOld);
    // Ids skipped inside the new window are still new.
    assert_eq!(status(&run_op(&e, op(a, highest + 1_000 - 5, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    assert_eq!(e.player(a.id).unwrap().gold, 1_000 - highest - 2);
    assert!(e.economy_audit().is_conserved());
}

/// The window only moves up, and an account keeps it between sessions, so a new id may be at
/// most `TRANSACTION_STEP_MAX` above the highest decided one: one further is refused and
/// recorded nowhere, and a client asking for id `u64::MAX` cannot leave its account without
/// ids to use. Trade offers and answers share the numbering and the bound.
#[test]
fn a_jump_past_the_step_limit_is_refused_and_the_account_stays_usable() {
    let e = rich_engine();
    let step = mmo_core::economy::TRANSACTION_STEP_MAX;
    let a = Who::of(e.join_account(7, 10.0, 10.0, 1).unwrap());
    let b = join(&e, 20.0, 10.0, 1);
    let refused = |r: EconomyResult| (status(&r), r.duplicate, r.gold_balance) == (EconomyStatus::InvalidTransaction, 0, 0);
    // An account's first id: at most the step above 0.
    assert!(refused(run_op(&e, op(a, step + 1, Spend, 0, 1, 0, 0))));
    assert_eq!(status(&run_op(&e, op(a, step, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    // The top of the range and just past the step, each twice: refused every time.
    for txn in [u64::MAX, 2 * step + 1, u64::MAX, 2 * step + 1] {
        assert!(refused(run_op(&e, op(a, txn, Transfer, b.id, 1, 0, 0))), "id {txn}");
    }
    let give = TradeStack { gold: 5, item_count: 0, item_kind: 0, _reserved: 0 };
    let offer = TradeOffer {
        player_id: a.id,
        session_token: a.token,
        transaction_id: u64::MAX,
        counterparty_id: b.id,
        give,
        want: TradeStack::default(),
    };
    assert!(refused(e.trade_offer(&offer, 1_000)));
    let answer = TradeAnswer {
        player_id: a.id,
        session_token: a.token,
        transaction_id: u64::MAX,
        maker_id: b.id,
        offer_id: 1,
        accept: 1,
        _reserved: [0; 7],
    };
    assert!(refused(e.trade_answer(&answer, 1_000)));
    assert_eq!(e.economy_audit().open_offers, 0);
    // The window moved only for the id taken: the next in order is new, and so is the
    // farthest step from it.
    assert_eq!(status(&run_op(&e, op(a, step + 1, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    assert_eq!(status(&run_op(&e, op(a, 2 * step + 1, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    // A later session of the account keeps the window and the bound from it.
    e.leave(a.id, a.token).unwrap();
    let a = Who::of(e.join_account(7, 10.0, 10.0, 1).unwrap());
    assert!(refused(run_op(&e, op(a, 3 * step + 2, Spend, 0, 1, 0, 0))));
    assert_eq!(status(&run_op(&e, op(a, 3 * step + 1, Spend, 0, 1, 0, 0))), EconomyStatus::Applied);
    assert_eq!((e.player(a.id).unwrap().gold, e.player(b.id).unwrap().gold), (1_000 - 4, 1_000));
    assert_eq!(e.stats().economy_invalid_transaction, 8);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn departed_players_keep_the_books_balanced() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let b = join(&e, 20.0, 10.0, 1);
    grant(&e, a, 1, 10, 4, 7);
    e.leave(b.id, b.token).unwrap();
    let r = run_op(&e, op(a, 2, Transfer, b.id, 10, 0, 0));
    assert_eq!(status(&r), EconomyStatus::UnknownPlayer);
    let r = run_op(&e, op(b, 1, Spend, 0, 10, 0, 0));
    assert_eq!(status(&r), EconomyStatus::UnknownPlayer);
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!(audit.departed.gold, 1_000);
    assert_eq!(audit.live.gold, 1_010);
    assert_eq!(audit.live.items[4], 7);
    assert_eq!(audit.open_wallets, 1);
    e.leave(a.id, a.token).unwrap();
    let audit = e.economy_audit();
    assert!(audit.is_conserved());
    assert_eq!((audit.live.gold, audit.departed.gold, audit.departed.items[4]), (0, 2_010, 7));
}

#[test]
fn economy_batch_needs_room_for_every_result() {
    let e = rich_engine();
    let a = join(&e, 10.0, 10.0, 1);
    let ops = [op(a, 1, Spend, 0, 1, 0, 0), op(a, 2, Spend, 0, 1, 0, 0)];
    let mut out = [EconomyResult::default(); 1];
    assert_eq!(e.apply_economy(&ops, &mut out), Err(BatchError::OutputTooSmall { required: 2 }));
    assert_eq!(e.player(a.id).unwrap().gold, 1_000, "nothing applied");
    assert_eq!(e.stats().economy_batches_refused, 1);
}
