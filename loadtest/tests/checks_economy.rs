//! The economy check against fake server figures: conservation, the applied count matching
//! the bots' distinct applied transactions, known outcomes, at-most-once, minted gold, and
//! missing figures failing loudly.

use mmo_loadtest::checks::{self, Check, all_passed};
use mmo_loadtest::economy::EconomyTally;
use mmo_loadtest::server_stats::ServerStats;

fn before() -> ServerStats {
    ServerStats::from_pairs([
        ("engine_economy_applied", 100),
        ("engine_economy_duplicates", 5),
        ("economy_live_gold", 1_000),
        ("economy_departed_gold", 500),
        ("economy_minted_gold", 1_500),
        ("economy_sunk_gold", 0),
        ("economy_conserved", 1),
    ])
}

/// The server after the bots applied `applied` operations minting `loot` gold.
fn after(applied: u64, duplicates: u64, loot: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("engine_economy_applied", 100 + applied),
        ("engine_economy_duplicates", 5 + duplicates),
        ("economy_live_gold", 1_000 + loot),
        ("economy_departed_gold", 500),
        ("economy_minted_gold", 1_500 + loot),
        ("economy_sunk_gold", 0),
        ("economy_conserved", 1),
    ]
}

fn tally() -> EconomyTally {
    EconomyTally {
        started: 60,
        applied: 50,
        refused: 10,
        loot_gold_applied: 9_000,
        results_received: 75,
        duplicate_results: 15,
        ..EconomyTally::default()
    }
}

fn run(after: Vec<(&'static str, u64)>, t: &EconomyTally) -> Vec<Check> {
    checks::economy(&before(), &ServerStats::from_pairs(after), t)
}

fn failed(c: &[Check]) -> Vec<String> {
    c.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect()
}

#[test]
fn a_consistent_run_passes() {
    let c = run(after(50, 15, 9_000), &tally());
    assert!(all_passed(&c), "{c:#?}");
    assert_eq!(c.len(), 7);
}

#[test]
fn the_server_applying_more_or_fewer_than_the_bots_saw_fails() {
    assert_eq!(failed(&run(after(51, 15, 9_000), &tally())), ["economy_applied_matches"]);
    assert_eq!(failed(&run(after(49, 15, 9_000), &tally())), ["economy_applied_matches"]);
}

#[test]
fn books_that_do_not_balance_fail() {
    let mut a = after(50, 15, 9_000);
    a[2].1 += 1; // one gold appeared in a wallet from nowhere
    assert_eq!(failed(&run(a.clone(), &tally())), ["economy_books"]);
    a[6].1 = 0;
    assert_eq!(failed(&run(a, &tally())), ["economy_conserved", "economy_books"]);
}

#[test]
fn minted_gold_must_be_the_loot_the_bots_saw_applied() {
    let mut a = after(50, 15, 9_000);
    a[2].1 += 10;
    a[4].1 += 10;
    assert_eq!(failed(&run(a, &tally())), ["economy_minted_matches"]);
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
    let c = checks::economy(&before(), &ServerStats::from_pairs([("engine_economy_applied", 150)]), &tally());
    let f = failed(&c);
    assert!(f.contains(&"economy_conserved".to_string()), "{f:?}");
    assert!(f.iter().any(|n| n.starts_with("economy_live_gold")), "{f:?}");
    assert!(c.iter().filter(|c| !c.passed).all(|c| c.detail.contains("did not report")), "{c:#?}");
}
