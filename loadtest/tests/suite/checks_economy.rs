//! The economy check against fake server figures: conservation (escrow included), the applied
//! count matching the bots' distinct applied transactions, known outcomes, at-most-once, the
//! working capital granted and minted gold being exactly the grants, the trades matching, and
//! missing figures failing loudly.

use mmo_loadtest::admin::GrantSummary;
use mmo_loadtest::checks::{self, Check, all_passed};
use mmo_loadtest::economy::EconomyTally;
use mmo_loadtest::server_stats::ServerStats;

fn before() -> ServerStats {
    ServerStats::from_pairs([
        ("engine_economy_applied", 100),
        ("engine_economy_duplicates", 5),
        ("engine_grants", 3),
        ("engine_trade_offers", 7),
        ("engine_trades_accepted", 4),
        ("engine_trades_declined", 1),
        ("economy_live_gold", 1_000),
        ("economy_escrowed_gold", 0),
        ("economy_departed_gold", 500),
        ("economy_minted_gold", 1_500),
        ("economy_sunk_gold", 0),
        ("economy_conserved", 1),
    ])
}

/// The server after the bots applied `applied` operations, 10 bots were granted `granted`
/// gold in all, and 30 gold sits in escrow.
fn after(applied: u64, duplicates: u64, granted: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("engine_economy_applied", 100 + applied),
        ("engine_economy_duplicates", 5 + duplicates),
        ("engine_grants", 3 + 10),
        ("engine_trade_offers", 7 + 20),
        ("engine_trades_accepted", 4 + 12),
        ("engine_trades_declined", 1 + 5),
        ("economy_live_gold", 1_000 + granted - 30),
        ("economy_escrowed_gold", 30),
        ("economy_departed_gold", 500),
        ("economy_minted_gold", 1_500 + granted),
        ("economy_sunk_gold", 0),
        ("economy_conserved", 1),
    ]
}

fn set(a: &mut [(&'static str, u64)], name: &str, f: impl Fn(u64) -> u64) {
    let slot = a.iter_mut().find(|(n, _)| *n == name).unwrap();
    slot.1 = f(slot.1);
}

fn tally() -> EconomyTally {
    EconomyTally {
        started: 60,
        applied: 50,
        refused: 10,
        offers_applied: 20,
        accepts_applied: 12,
        declines_applied: 5,
        results_received: 75,
        duplicate_results: 15,
        ..EconomyTally::default()
    }
}

fn grants() -> GrantSummary {
    GrantSummary { requested: 10, applied: 10, sent: 10, gold: 9_000, items: 100, ..GrantSummary::default() }
}

fn run(after: Vec<(&'static str, u64)>, t: &EconomyTally) -> Vec<Check> {
    checks::economy(&before(), &ServerStats::from_pairs(after), t, &grants())
}

fn failed(c: &[Check]) -> Vec<String> {
    c.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect()
}

#[test]
fn a_consistent_run_passes() {
    let c = run(after(50, 15, 9_000), &tally());
    assert!(all_passed(&c), "{c:#?}");
    assert_eq!(c.len(), 13);
}

#[test]
fn the_server_applying_more_or_fewer_than_the_bots_saw_fails() {
    assert_eq!(failed(&run(after(51, 15, 9_000), &tally())), ["economy_applied_matches"]);
    assert_eq!(failed(&run(after(49, 15, 9_000), &tally())), ["economy_applied_matches"]);
}

#[test]
fn books_that_do_not_balance_fail() {
    let mut a = after(50, 15, 9_000);
    set(&mut a, "economy_live_gold", |v| v + 1); // one gold appeared in a wallet from nowhere
    assert_eq!(failed(&run(a.clone(), &tally())), ["economy_books"]);
    set(&mut a, "economy_conserved", |_| 0);
    assert_eq!(failed(&run(a, &tally())), ["economy_conserved", "economy_books"]);
    // Escrow is part of the books: leaving it out unbalances them.
    let mut a = after(50, 15, 9_000);
    set(&mut a, "economy_escrowed_gold", |_| 0);
    assert_eq!(failed(&run(a, &tally())), ["economy_books"]);
}

#[test]
fn minted_gold_must_be_exactly_the_grants() {
    let mut a = after(50, 15, 9_000);
    set(&mut a, "economy_live_gold", |v| v + 10);
    set(&mut a, "economy_minted_gold", |v| v + 10);
    assert_eq!(failed(&run(a, &tally())), ["economy_minted_matches"]);
    let short = GrantSummary { applied: 9, unanswered: 1, ..grants() };
    let c = checks::economy(&before(), &ServerStats::from_pairs(after(50, 15, 9_000)), &tally(), &short);
    assert!(failed(&c).contains(&"economy_capital_granted".to_string()));
}

#[test]
fn trades_must_match_what_the_bots_saw() {
    let t = EconomyTally { accepts_applied: 11, ..tally() };
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["trades_accepted_match"]);
    let t = EconomyTally { offers_applied: 21, declines_applied: 4, ..tally() };
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["trade_offers_match", "trades_declined_match"]);
    let t = EconomyTally { accepts_applied: 0, ..tally() };
    let mut a = after(50, 15, 9_000);
    set(&mut a, "engine_trades_accepted", |_| 4);
    assert_eq!(failed(&run(a, &t)), ["economy_trades_happened"]);
}

#[test]
fn unknown_outcomes_and_broken_at_most_once_fail() {
    let t = EconomyTally { unknown: 1, ..tally() };
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["economy_outcomes_known"]);
    let t = EconomyTally { repeated_first_answers: 1, ..tally() };
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["economy_at_most_once"]);
    let t = EconomyTally { inconsistent_answers: 2, ..tally() };
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["economy_at_most_once"]);
}

#[test]
fn the_server_must_have_counted_every_duplicate_answer_we_got() {
    // Lost duplicate answers may make the server's count larger, never smaller.
    assert!(all_passed(&run(after(50, 20, 9_000), &tally())));
    assert_eq!(failed(&run(after(50, 14, 9_000), &tally())), ["economy_duplicates_counted"]);
}

#[test]
fn missing_figures_fail_rather_than_pass() {
    let c = checks::economy(&before(), &ServerStats::from_pairs([("engine_economy_applied", 150)]), &tally(), &grants());
    let f = failed(&c);
    assert!(f.contains(&"economy_conserved".to_string()), "{f:?}");
    assert!(f.iter().any(|n| n.starts_with("economy_live_gold")), "{f:?}");
    assert!(c.iter().filter(|c| !c.passed).all(|c| c.detail.contains("did not report")), "{c:#?}");
}

#[test]
fn a_server_too_slow_for_the_schedule_fails_the_schedule_check_only() {
    // 1,000 transactions due: 10 left unstarted is the 1% allowed, 11 is past it.
    let mut t = EconomyTally { started: 990, not_started: 10, ..tally() };
    assert!(all_passed(&run(after(50, 15, 9_000), &t)), "{:#?}", run(after(50, 15, 9_000), &t));
    t.not_started = 11;
    assert_eq!(failed(&run(after(50, 15, 9_000), &t)), ["economy_schedule_kept"]);
}
