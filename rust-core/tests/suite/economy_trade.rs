//! Trades both sides accept: an offer puts the maker's side in escrow, the taker's accept
//! moves both sides at once, a decline, a cancel or the timeout gives the escrow back; admin
//! grants are the one source of value besides starting gold and loot. Every refusal counted
//! by reason, every retransmit answered from the record, the books balanced throughout.

use crate::common::*;
use mmo_core::records::{EconomyKind, EconomyStatus, TradeAnswer, TradeOffer, TradeStack};
use mmo_core::{CoreConfig, Engine};
use proptest::prelude::*;
use std::sync::Barrier;

fn trade_engine() -> Engine {
    Engine::new(CoreConfig { starting_gold: 1_000, trade_timeout_ms: 10_000, ..small_config() }).unwrap()
}

fn stack(gold: i64, item_kind: u16, item_count: i32) -> TradeStack {
    TradeStack { gold, item_count, item_kind, _reserved: 0 }
}

fn offer(maker: Who, txn: u64, taker: u64, give: TradeStack, want: TradeStack) -> TradeOffer {
    TradeOffer { player_id: maker.id, session_token: maker.token, transaction_id: txn, counterparty_id: taker, give, want }
}

fn answer(who: Who, txn: u64, maker: u64, offer_id: u64, accept: bool) -> TradeAnswer {
    TradeAnswer {
        player_id: who.id,
        session_token: who.token,
        transaction_id: txn,
        maker_id: maker,
        offer_id,
        accept: u8::from(accept),
        _reserved: [0; 7],
    }
}

fn st(r: &mmo_core::records::EconomyResult) -> EconomyStatus {
    EconomyStatus::try_from(r.status).unwrap()
}

fn items(e: &Engine, who: Who, kind: usize) -> u64 {
    e.player(who.id).unwrap().items[kind]
}

#[test]
fn an_accepted_offer_moves_both_sides_from_escrow_at_once() {
    let e = trade_engine();
    let (a, b) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2));
    assert_eq!(st(&e.grant(b.id, 1, &stack(0, 3, 5))), EconomyStatus::Applied);
    // A offers 300 gold for 2 of B's item 3.
    let r = e.trade_offer(&offer(a, 1, b.id, stack(300, 0, 0), stack(0, 3, 2)), 1_000);
    assert_eq!((st(&r), r.gold_balance), (EconomyStatus::Applied, 700), "the give is in escrow");
    let audit = e.economy_audit();
    assert_eq!((audit.escrowed.gold, audit.open_offers), (300, 1));
    assert!(audit.is_conserved());
    // B accepts: A gets the items, B the escrowed gold.
    let r = e.trade_answer(&answer(b, 1, a.id, 1, true), 2_000);
    assert_eq!((st(&r), r.gold_balance), (EconomyStatus::Applied, 1_300));
    assert_eq!((e.player(a.id).unwrap().gold, items(&e, a, 3)), (700, 2));
    assert_eq!((e.player(b.id).unwrap().gold, items(&e, b, 3)), (1_300, 3));
    let audit = e.economy_audit();
    assert_eq!((audit.escrowed.gold, audit.open_offers), (0, 0));
    assert!(audit.is_conserved());
    // Retransmits are answered from the record; the offer is gone for a new answer.
    let again = e.trade_answer(&answer(b, 1, a.id, 1, true), 2_100);
    assert_eq!((st(&again), again.duplicate, again.gold_balance), (EconomyStatus::Applied, 1, 1_300));
    assert_eq!(st(&e.trade_answer(&answer(b, 2, a.id, 1, true), 2_100)), EconomyStatus::NoSuchOffer);
    let dup = e.trade_offer(&offer(a, 1, b.id, stack(300, 0, 0), stack(0, 3, 2)), 2_200);
    assert_eq!((st(&dup), dup.duplicate), (EconomyStatus::Applied, 1), "the offer's retransmit opens nothing");
    assert_eq!(e.economy_audit().open_offers, 0);
    let s = e.stats();
    assert_eq!((s.trade_offers, s.trades_accepted, s.grants, s.grant_items), (1, 1, 1, 5));
}

#[test]
fn decline_cancel_and_timeout_give_the_escrow_back() {
    let e = trade_engine();
    let (a, b) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2));
    assert_eq!(st(&e.trade_offer(&offer(a, 1, b.id, stack(100, 0, 0), stack(50, 0, 0)), 0)), EconomyStatus::Applied);
    assert_eq!(st(&e.trade_answer(&answer(b, 1, a.id, 1, false), 10)), EconomyStatus::Applied);
    assert_eq!(e.player(a.id).unwrap().gold, 1_000, "declined: the escrow is back");
    assert_eq!(st(&e.trade_offer(&offer(a, 2, b.id, stack(100, 0, 0), stack(50, 0, 0)), 20)), EconomyStatus::Applied);
    assert_eq!(st(&e.trade_answer(&answer(a, 3, a.id, 2, false), 30)), EconomyStatus::Applied, "the maker cancels");
    assert_eq!(e.player(a.id).unwrap().gold, 1_000);
    // A timed-out offer: the answer finds it expired and gives the escrow back.
    assert_eq!(st(&e.trade_offer(&offer(a, 4, b.id, stack(100, 0, 0), stack(50, 0, 0)), 1_000)), EconomyStatus::Applied);
    assert_eq!(st(&e.trade_answer(&answer(b, 2, a.id, 4, true), 11_000)), EconomyStatus::OfferExpired);
    assert_eq!((e.player(a.id).unwrap().gold, e.player(b.id).unwrap().gold), (1_000, 1_000));
    // One nobody answers: the tick's sweep gives it back within 16 ticks of the timeout.
    assert_eq!(st(&e.trade_offer(&offer(a, 5, b.id, stack(100, 0, 0), stack(50, 0, 0)), 20_000)), EconomyStatus::Applied);
    for t in 0..16 {
        e.tick(30_000 + t * 50);
    }
    assert_eq!(e.player(a.id).unwrap().gold, 1_000);
    assert_eq!(e.economy_audit().open_offers, 0);
    let s = e.stats();
    assert_eq!((s.trade_offers, s.trades_declined, s.trades_cancelled, s.trades_expired), (4, 1, 1, 2));
    assert_eq!(s.economy_offer_expired, 1);
    assert!(e.economy_audit().is_conserved());
}

#[test]
fn every_refusal_in_order_and_counted_by_reason() {
    let e = trade_engine();
    let (a, b, c) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2), join(&e, 120.0, 100.0, 2));
    let gold = |g| stack(g, 0, 0);
    let cases = [
        (offer(a, 0, b.id, gold(1), gold(1)), EconomyStatus::InvalidTransaction),
        (offer(a, 1, b.id, gold(-1), gold(1)), EconomyStatus::InvalidAmount),
        (offer(a, 2, b.id, gold(1), stack(0, 0, -1)), EconomyStatus::InvalidAmount),
        (offer(a, 3, b.id, gold(1 << 49), gold(1)), EconomyStatus::Overflow),
        (offer(a, 4, b.id, stack(0, 16, 1), gold(1)), EconomyStatus::UnknownItem),
        (offer(a, 5, b.id, gold(0), gold(0)), EconomyStatus::InvalidAmount),
        (offer(a, 6, 0, gold(1), gold(1)), EconomyStatus::UnknownPlayer),
        (offer(a, 7, 999_999, gold(1), gold(1)), EconomyStatus::UnknownPlayer),
        (offer(a, 8, a.id, gold(1), gold(1)), EconomyStatus::SelfTrade),
        (offer(a, 9, b.id, gold(1_001), gold(1)), EconomyStatus::InsufficientFunds),
        (offer(a, 10, b.id, stack(0, 2, 1), gold(1)), EconomyStatus::InsufficientItems),
        (offer(a, 11, b.id, gold(10), gold(20)), EconomyStatus::Applied),
        (offer(a, 12, c.id, gold(10), gold(20)), EconomyStatus::OfferPending),
    ];
    for (i, (o, want)) in cases.iter().enumerate() {
        assert_eq!(st(&e.trade_offer(o, 1_000)), *want, "offer case {i}");
    }
    let wrong = TradeOffer { session_token: a.token ^ 1, ..offer(a, 20, b.id, gold(1), gold(1)) };
    assert_eq!(st(&e.trade_offer(&wrong, 1_000)), EconomyStatus::WrongSession);
    let answers = [
        (answer(c, 1, a.id, 11, true), EconomyStatus::NotYourOffer),
        (answer(c, 2, a.id, 11, false), EconomyStatus::NotYourOffer),
        (answer(b, 1, a.id, 10, true), EconomyStatus::NoSuchOffer),
        (answer(b, 2, 999_999, 11, true), EconomyStatus::UnknownPlayer),
        (answer(b, 3, 0, 11, true), EconomyStatus::UnknownPlayer),
        (answer(a, 13, a.id, 11, true), EconomyStatus::SelfTrade),
    ];
    for (i, (ans, want)) in answers.iter().enumerate() {
        assert_eq!(st(&e.trade_answer(ans, 1_000)), *want, "answer case {i}");
    }
    // B spends its gold; its accept cannot pay the 20 wanted.
    run_op(&e, op(b, 10, EconomyKind::Spend, 0, 990, 0, 0));
    assert_eq!(st(&e.trade_answer(&answer(b, 4, a.id, 11, true), 1_000)), EconomyStatus::InsufficientFunds);
    let s = e.stats();
    assert_eq!(
        (s.economy_not_your_offer, s.economy_no_such_offer, s.economy_offer_pending, s.economy_self_trade, s.economy_insufficient_funds),
        (2, 1, 1, 2, 2)
    );
    // Grants: the admin's word, once per id, increasing.
    assert_eq!(st(&e.grant(b.id, 0, &gold(5))), EconomyStatus::InvalidTransaction);
    assert_eq!(st(&e.grant(b.id, 2, &gold(-5))), EconomyStatus::InvalidAmount);
    assert_eq!(st(&e.grant(b.id, 2, &gold(0))), EconomyStatus::InvalidAmount);
    assert_eq!(st(&e.grant(b.id, 2, &stack(0, 99, 1))), EconomyStatus::UnknownItem);
    assert_eq!(st(&e.grant(999_999, 2, &gold(5))), EconomyStatus::UnknownPlayer);
    let g = e.grant(b.id, 2, &gold(5));
    assert_eq!((st(&g), g.duplicate, g.gold_balance), (EconomyStatus::Applied, 0, 15));
    assert_eq!(e.grant(b.id, 2, &gold(5)).duplicate, 1);
    assert_eq!(st(&e.grant(b.id, 1, &gold(5))), EconomyStatus::TransactionTooOld);
    assert_eq!(e.player(b.id).unwrap().gold, 15);
    let audit = e.economy_audit();
    assert_eq!(audit.minted_by_grant.gold, 5);
    assert!(audit.is_conserved());
}

#[test]
fn a_maker_who_leaves_takes_the_escrow_with_them() {
    let e = trade_engine();
    let (a, b) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2));
    assert_eq!(st(&e.trade_offer(&offer(a, 1, b.id, stack(400, 0, 0), stack(1, 0, 0)), 0)), EconomyStatus::Applied);
    e.leave(a.id, a.token).unwrap();
    assert_eq!(st(&e.trade_answer(&answer(b, 1, a.id, 1, true), 10)), EconomyStatus::UnknownPlayer);
    let audit = e.economy_audit();
    assert_eq!((audit.departed.gold, audit.escrowed.gold, audit.open_offers), (1_000, 0, 0));
    assert!(audit.is_conserved());
}

#[test]
fn racing_accepts_of_one_offer_move_it_once() {
    for round in 0..20 {
        let e = trade_engine();
        let (a, b) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2));
        assert_eq!(st(&e.trade_offer(&offer(a, 1, b.id, stack(500, 0, 0), stack(100, 0, 0)), 0)), EconomyStatus::Applied);
        let barrier = Barrier::new(4);
        let applied: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u64)
                .map(|t| {
                    let (e, barrier) = (&e, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        let r = e.trade_answer(&answer(b, 1 + t, a.id, 1, true), 10);
                        usize::from(st(&r) == EconomyStatus::Applied)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(applied, 1, "round {round}");
        assert_eq!((e.player(a.id).unwrap().gold, e.player(b.id).unwrap().gold), (600, 1_400));
        assert!(e.economy_audit().is_conserved());
    }
}

#[test]
fn a_maker_spending_while_the_taker_accepts_never_spends_the_escrow() {
    for _ in 0..20 {
        let e = trade_engine();
        let (a, b) = (join(&e, 100.0, 100.0, 1), join(&e, 110.0, 100.0, 2));
        assert_eq!(st(&e.trade_offer(&offer(a, 1, b.id, stack(800, 0, 0), stack(10, 0, 0)), 0)), EconomyStatus::Applied);
        let barrier = Barrier::new(2);
        let (spent, accepted) = std::thread::scope(|s| {
            let spender = s.spawn(|| {
                barrier.wait();
                // 200 gold left outside the escrow: 5 spends of 50 get four through.
                (2..7).filter(|&t| status(&run_op(&e, op(a, t, EconomyKind::Spend, 0, 50, 0, 0))) == EconomyStatus::Applied).count()
            });
            let taker = s.spawn(|| {
                barrier.wait();
                st(&e.trade_answer(&answer(b, 1, a.id, 1, true), 10)) == EconomyStatus::Applied
            });
            (spender.join().unwrap(), taker.join().unwrap())
        });
        assert!(accepted);
        // The accept credits 10 to A at some point among the spends: A spends 4 or 5 of them.
        assert!((4..=5).contains(&spent), "{spent}");
        assert_eq!(e.player(b.id).unwrap().gold, 1_000 - 10 + 800);
        assert_eq!(e.player(a.id).unwrap().gold, 200 + 10 - 50 * spent as u64);
        assert!(e.economy_audit().is_conserved());
    }
}

#[derive(Clone, Debug)]
enum Step {
    Offer { maker: usize, taker: usize, give: (i64, u16, i32), want: (i64, u16, i32) },
    Answer { who: usize, maker: usize, offer_back: u64, accept: bool },
    Transfer { from: usize, to: usize, gold: i64, kind: u16, count: i32 },
    Spend { who: usize, gold: i64 },
    Grant { who: usize, gold: i64, kind: u16, count: i32 },
    Tick { ms: u64 },
    Leave { who: usize },
}

fn step() -> impl Strategy<Value = Step> {
    let side = (0i64..300, 0u16..3, 0i32..4);
    prop_oneof![
        4 => (0usize..4, 0usize..4, side.clone(), side.clone()).prop_map(|(maker, taker, give, want)| Step::Offer { maker, taker, give, want }),
        4 => (0usize..4, 0usize..4, 0u64..3, any::<bool>()).prop_map(|(who, maker, offer_back, accept)| Step::Answer { who, maker, offer_back, accept }),
        2 => (0usize..4, 0usize..4, 0i64..200, 0u16..3, 0i32..3).prop_map(|(from, to, gold, kind, count)| Step::Transfer { from, to, gold, kind, count }),
        1 => (0usize..4, 0i64..200).prop_map(|(who, gold)| Step::Spend { who, gold }),
        1 => (0usize..4, 0i64..500, 0u16..3, 0i32..5).prop_map(|(who, gold, kind, count)| Step::Grant { who, gold, kind, count }),
        1 => (0u64..4_000).prop_map(|ms| Step::Tick { ms }),
        1 => (0usize..4).prop_map(|who| Step::Leave { who }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Any sequence of offers, answers (right or wrong player, live or stale offer), gifts,
    /// spends, grants, ticks and leaves by any client: the books balance after every step, and
    /// the only value ever created is starting gold and grants (no loot here), the only value
    /// destroyed what was spent.
    #[test]
    fn no_sequence_of_requests_creates_or_destroys_value(steps in proptest::collection::vec(step(), 1..80)) {
        let e = Engine::new(CoreConfig { starting_gold: 500, trade_timeout_ms: 2_000, ..small_config() }).unwrap();
        let players: Vec<Who> = (0..4).map(|i| join(&e, 100.0 + i as f32, 100.0, 1 + (i % 2) as u8)).collect();
        let mut txn = [1u64; 4];
        let mut grant_id = [0u64; 4];
        let mut last_offer = [0u64; 4];
        let (mut now_ms, mut granted_gold, mut spent_gold) = (0u64, 0u128, 0u128);
        for s in steps {
            now_ms += 37;
            match s {
                Step::Offer { maker, taker, give, want } => {
                    let o = offer(players[maker], txn[maker], players[taker].id, stack(give.0, give.1, give.2), stack(want.0, want.1, want.2));
                    if st(&e.trade_offer(&o, now_ms)) == EconomyStatus::Applied {
                        last_offer[maker] = txn[maker];
                    }
                    txn[maker] += 1;
                }
                Step::Answer { who, maker, offer_back, accept } => {
                    let id = last_offer[maker].saturating_sub(offer_back);
                    e.trade_answer(&answer(players[who], txn[who], players[maker].id, id, accept), now_ms);
                    txn[who] += 1;
                }
                Step::Transfer { from, to, gold, kind, count } => {
                    run_op(&e, op(players[from], txn[from], EconomyKind::Transfer, players[to].id, gold, kind, count));
                    txn[from] += 1;
                }
                Step::Spend { who, gold } => {
                    if status(&run_op(&e, op(players[who], txn[who], EconomyKind::Spend, 0, gold, 0, 0))) == EconomyStatus::Applied {
                        spent_gold += gold as u128;
                    }
                    txn[who] += 1;
                }
                Step::Grant { who, gold, kind, count } => {
                    grant_id[who] += 1;
                    let r = e.grant(players[who].id, grant_id[who], &stack(gold, kind, count));
                    if st(&r) == EconomyStatus::Applied && r.duplicate == 0 {
                        granted_gold += gold as u128;
                    }
                }
                Step::Tick { ms } => {
                    now_ms += ms;
                    e.tick(now_ms);
                }
                Step::Leave { who } => {
                    let _ = e.leave(players[who].id, players[who].token);
                }
            }
            let audit = e.economy_audit();
            prop_assert!(audit.is_conserved());
            prop_assert_eq!(audit.minted.gold, 500 * 4 + granted_gold);
            prop_assert_eq!(audit.minted_by_grant.gold, granted_gold);
            prop_assert_eq!(audit.sunk.gold, spent_gold);
            prop_assert_eq!(audit.minted.items, audit.minted_by_grant.items, "items come from grants only");
        }
    }
}
