//! One bot's economy agent, driven without a server: what it sends when, how it answers the
//! offers it is told of, and how its ledger records answers (first-time, duplicate, lost,
//! late, contradictory).

use mmo_loadtest::economy::{ANSWER_QUEUE, EconomyAgent, EconomyMode, EconomyPlan, Outgoing, Request};
use mmo_loadtest::protocol::{EconomyKind, EconomyResult, EconomyStatus, Flags, TradeEvent, TradeNotice, TradeSide};
use mmo_loadtest::rng::Rng;
use mmo_loadtest::schedule::Schedule;
use std::time::{Duration, Instant};

const MS: Duration = Duration::from_millis(1);
const PEERS: [u64; 3] = [10, 11, 12];

fn plan(duplicate_ratio: f64) -> EconomyPlan {
    EconomyPlan { interval: 100 * MS, timeout: 20 * MS, duplicate_ratio, max_attempts: 3, ..EconomyPlan::default() }
}

fn agent(t0: Instant, duplicate_ratio: f64) -> EconomyAgent {
    EconomyAgent::new(plan(duplicate_ratio), 10, 0xAB, Schedule::new(t0, 100 * MS), t0 + 1000 * MS, t0)
}

fn sends(a: &mut EconomyAgent, now: Instant, rng: &mut Rng) -> Vec<Outgoing> {
    a.poll(now, rng, &PEERS).into_iter().flatten().collect()
}

fn result(txn: u64, status: EconomyStatus, duplicate: bool) -> EconomyResult {
    EconomyResult { transaction_id: txn, gold_balance: 1, status, duplicate }
}

#[test]
fn gifts_and_offers_alternate_with_other_bots_and_nothing_mints() {
    let t0 = Instant::now();
    let mut rng = Rng::new(1);
    let mut a = agent(t0, 0.0);
    let (mut gifts, mut offers) = (0, 0);
    for k in 0..8u32 {
        let now = t0 + 100 * MS * k;
        let s = sends(&mut a, now, &mut rng);
        assert_eq!(s[0].flags, Flags::NONE);
        let r = s[0].request;
        assert_eq!(r.transaction_id(), u64::from(k) + 1, "ids count up");
        match r {
            Request::Economy(e) => {
                assert_eq!((e.kind, e.player_id, e.session_token), (EconomyKind::Transfer, 10, 0xAB));
                assert!(e.counterparty_id == 11 || e.counterparty_id == 12, "never itself");
                assert!(e.gold > 0 && e.item_count == 0);
                gifts += 1;
            }
            Request::Offer(o) => {
                assert!(o.counterparty_id == 11 || o.counterparty_id == 12);
                assert!(o.give.gold > 0 && o.want.item_count > 0, "gold for items");
                offers += 1;
            }
            Request::Answer(_) => panic!("no offer was told of"),
        }
        a.on_result(now, &result(r.transaction_id(), EconomyStatus::Applied, false));
    }
    assert_eq!((gifts, offers), (4, 4));
    assert_eq!((a.tally.applied, a.tally.offers_applied), (8, 4));
}

#[test]
fn offers_told_of_are_answered_before_the_schedule_goes_on() {
    let t0 = Instant::now();
    let mut rng = Rng::new(7);
    let mut a = agent(t0, 0.0);
    let notice = |offer_id| TradeNotice {
        event: TradeEvent::Offered,
        maker_id: 11,
        taker_id: 10,
        offer_id,
        give: TradeSide { gold: 5, item_count: 0, item_kind: 0 },
        want: TradeSide { gold: 0, item_count: 1, item_kind: 3 },
    };
    a.on_trade_notice(&notice(40), t0);
    a.on_trade_notice(&TradeNotice { event: TradeEvent::Accepted, ..notice(1) }, t0);
    assert_eq!(a.tally.trade_notices[1..], [1, 1, 0]);
    assert!(!a.settled(), "an offer waits for its answer");
    assert_eq!(a.next_deadline(), Some(t0), "due at once");
    let s = sends(&mut a, t0, &mut rng);
    let Request::Answer(answer) = s[0].request else { panic!("{:?}", s[0].request) };
    assert_eq!((answer.maker_id, answer.offer_id, answer.transaction_id, answer.player_id), (11, 40, 1, 10));
    a.on_result(t0 + MS, &result(1, EconomyStatus::Applied, false));
    assert_eq!(a.tally.accepts_applied + a.tally.declines_applied, 1);
    // The schedule's first transaction follows, with the next id.
    assert_eq!(sends(&mut a, t0 + 2 * MS, &mut rng)[0].request.transaction_id(), 2);
    // More offers than the queue holds: the rest are counted, not answered.
    for id in 0..(ANSWER_QUEUE as u64 + 3) {
        a.on_trade_notice(&notice(100 + id), t0);
    }
    assert_eq!(a.tally.offers_unanswered, 3);
}

#[test]
fn unanswered_requests_are_resent_with_the_retransmit_flag_then_given_up() {
    let t0 = Instant::now();
    let mut rng = Rng::new(2);
    let mut a = agent(t0, 0.0);
    assert_eq!(sends(&mut a, t0, &mut rng).len(), 1);
    assert!(sends(&mut a, t0 + 19 * MS, &mut rng).is_empty(), "not before the timeout");
    assert_eq!(a.next_deadline(), Some(t0 + 20 * MS));
    let resend = sends(&mut a, t0 + 20 * MS, &mut rng);
    assert_eq!(resend.len(), 1);
    assert_eq!(resend[0].flags, Flags::RETRANSMIT);
    assert_eq!(resend[0].request.transaction_id(), 1);
    assert_eq!(sends(&mut a, t0 + 40 * MS, &mut rng)[0].flags, Flags::RETRANSMIT);
    // Third attempt was the last: at the next timeout the outcome is declared unknown and the
    // next transaction (intended at 100 ms) waits for its time.
    assert!(sends(&mut a, t0 + 60 * MS, &mut rng).is_empty());
    assert_eq!(a.tally.unknown, 1);
    assert_eq!(a.tally.retransmits, 2);
    assert_eq!(a.tally.requests_sent, 3);
    // A late answer still settles it: the outcome is known after all.
    assert_eq!(a.on_result(t0 + 70 * MS, &result(1, EconomyStatus::Applied, true)), None);
    assert_eq!((a.tally.unknown, a.tally.applied), (0, 1), "the abandoned transaction counts once settled");
}

#[test]
fn one_transaction_in_flight_and_the_next_is_measured_from_its_own_intended_time() {
    let t0 = Instant::now();
    let mut rng = Rng::new(3);
    let mut a =
        EconomyAgent::new(EconomyPlan { timeout: 1000 * MS, ..plan(0.0) }, 10, 0xAB, Schedule::new(t0, 100 * MS), t0 + 1000 * MS, t0);
    assert_eq!(sends(&mut a, t0, &mut rng).len(), 1);
    // Transaction 2 is due at 100 ms but 1 is still in flight.
    assert!(sends(&mut a, t0 + 150 * MS, &mut rng).is_empty());
    a.on_result(t0 + 250 * MS, &result(1, EconomyStatus::Applied, false));
    let s = sends(&mut a, t0 + 250 * MS, &mut rng);
    assert_eq!(s[0].request.transaction_id(), 2);
    // Answered at 260 ms: 160 ms after its intended 100 ms, though sent only 10 ms before.
    assert_eq!(a.on_result(t0 + 260 * MS, &result(2, EconomyStatus::InsufficientFunds, false)), Some(160_000));
    assert_eq!(a.tally.refused, 1);
    assert_eq!(a.tally.refused_by_status[EconomyStatus::InsufficientFunds as usize], 1);
}

#[test]
fn deliberate_duplicates_share_the_id_and_their_answers_are_checked() {
    let t0 = Instant::now();
    let mut rng = Rng::new(4);
    let mut a = agent(t0, 1.0);
    let s = sends(&mut a, t0, &mut rng);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].request, s[1].request);
    assert_eq!((s[0].flags, s[1].flags), (Flags::NONE, Flags::RETRANSMIT));
    assert_eq!(a.tally.deliberate_duplicates, 1);
    a.on_result(t0 + MS, &result(1, EconomyStatus::Applied, false));
    a.on_result(t0 + 2 * MS, &result(1, EconomyStatus::Applied, true));
    assert_eq!((a.tally.results_received, a.tally.duplicate_results, a.tally.applied), (2, 1, 1));
    assert_eq!((a.tally.repeated_first_answers, a.tally.inconsistent_answers), (0, 0));
}

#[test]
fn a_second_first_time_answer_or_a_contradiction_is_caught() {
    let t0 = Instant::now();
    let mut rng = Rng::new(5);
    let mut a = agent(t0, 1.0);
    sends(&mut a, t0, &mut rng);
    a.on_result(t0 + MS, &result(1, EconomyStatus::Applied, false));
    // The server applied the duplicate as new: at-most-once broken.
    a.on_result(t0 + 2 * MS, &result(1, EconomyStatus::Applied, false));
    assert_eq!(a.tally.repeated_first_answers, 1);
    // A resend's answer disagreeing with the recorded outcome.
    a.on_result(t0 + 3 * MS, &result(1, EconomyStatus::InsufficientFunds, true));
    assert_eq!(a.tally.inconsistent_answers, 1);
    assert_eq!(a.tally.applied, 1, "still counted once");
    // An answer for an id never sent.
    a.on_result(t0 + 4 * MS, &result(99, EconomyStatus::Applied, false));
    assert_eq!(a.tally.stray_results, 1);
}

#[test]
fn a_lone_bot_only_makes_gifts_that_go_nowhere_and_stops_when_told() {
    let t0 = Instant::now();
    let mut rng = Rng::new(6);
    let mut a = agent(t0, 0.0);
    for k in 0..2u32 {
        let now = t0 + 100 * MS * k;
        let s = a.poll(now, &mut rng, &[10]);
        let Request::Economy(e) = s[0].unwrap().request else { panic!("a lone bot offers nothing") };
        assert_eq!((e.kind, e.counterparty_id), (EconomyKind::Transfer, 0));
        a.on_result(now, &result(e.transaction_id, EconomyStatus::UnknownPlayer, false));
    }
    a.stop_starting();
    assert!(a.settled());
    assert!(a.poll(t0 + 500 * MS, &mut rng, &[10]).iter().all(Option::is_none));
}

#[test]
fn a_looting_bot_offers_only_what_it_looted_and_takes_back_what_comes_back() {
    let t0 = Instant::now();
    let mut rng = Rng::new(8);
    let mut a =
        EconomyAgent::new(EconomyPlan { mode: EconomyMode::Loot, ..plan(0.0) }, 10, 0xAB, Schedule::new(t0, 100 * MS), t0 + 1000 * MS, t0);
    assert!(sends(&mut a, t0, &mut rng).is_empty(), "nothing looted: nothing to offer");
    assert_eq!(a.tally.idle_slots, 1);
    a.on_loot(5, 1);
    let s = sends(&mut a, t0 + 100 * MS, &mut rng);
    let Request::Offer(o) = s[0].request else { panic!("{:?}", s[0].request) };
    assert_eq!((o.give.item_kind, o.give.item_count, o.give.gold), (5, 1, 0));
    assert!(o.want.gold > 0 && o.want.item_count == 0, "an item for gold");
    // Refused: the item is back, and offered again at the next slot.
    a.on_result(t0 + 101 * MS, &result(o.transaction_id, EconomyStatus::OfferPending, false));
    let s = sends(&mut a, t0 + 200 * MS, &mut rng);
    let Request::Offer(again) = s[0].request else { panic!() };
    assert_eq!(again.give.item_kind, 5);
    a.on_result(t0 + 201 * MS, &result(again.transaction_id, EconomyStatus::Applied, false));
    // Declined: back again.
    let declined = TradeNotice {
        event: TradeEvent::Declined,
        maker_id: 10,
        taker_id: 11,
        offer_id: again.transaction_id,
        give: TradeSide::default(),
        want: TradeSide::default(),
    };
    a.on_trade_notice(&declined, t0 + 250 * MS);
    assert!(matches!(sends(&mut a, t0 + 300 * MS, &mut rng)[0].request, Request::Offer(_)));
    assert_eq!((a.tally.offers_applied, a.tally.refused), (1, 1));
}

#[test]
fn at_the_end_of_the_run_the_transactions_still_due_are_counted_not_started() {
    // A schedule of 10 (one per 100 ms until 1 s); the server answers slowly, so at the end of
    // the run the bot has started 3, one of them still in flight.
    let t0 = Instant::now();
    let mut rng = Rng::new(9);
    let mut a = agent(t0, 0.0);
    let mut in_flight = None;
    for k in 0..3u32 {
        let now = t0 + 350 * MS * k;
        if let Some(txn) = in_flight.take() {
            a.on_result(now, &result(txn, EconomyStatus::Applied, false));
        }
        let s = sends(&mut a, now, &mut rng);
        in_flight = Some(s[0].request.transaction_id());
    }
    let end = t0 + 1100 * MS;
    a.end_of_run();
    assert_eq!((a.tally.started, a.tally.not_started), (3, 7), "the 7 still due are not started");
    assert!(!a.settled(), "the one in flight is still owed its answer");
    a.on_result(end, &result(in_flight.unwrap(), EconomyStatus::Applied, false));
    assert!(a.settled());
    assert!(sends(&mut a, end + 100 * MS, &mut rng).is_empty(), "nothing new starts");
    assert_eq!((a.tally.applied, a.tally.unknown), (3, 0));
    a.end_of_run();
    assert_eq!(a.tally.not_started, 7, "counted once");
}
