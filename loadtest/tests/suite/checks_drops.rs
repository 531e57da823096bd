//! The hostile scenario's drop check against fake server figures: exact counts per reason,
//! nothing where nothing was sent, the flood's bounds (at the player limit only), datagrams of a
//! source past the address limit counted there, and a missing counter failing.

use mmo_loadtest::bot::FloodTally;
use mmo_loadtest::checks::{self, EXACT_DROPS, all_passed};
use mmo_loadtest::protocol::DropReason;
use mmo_loadtest::server_stats::{ServerStats, drop_counter};
use std::collections::BTreeMap;

/// Server figures with every drop counter at `base` plus `added[reason]`.
fn figures(base: u64, added: &BTreeMap<DropReason, u64>) -> ServerStats {
    let names: Vec<(String, u64)> = DropReason::ALL.iter().map(|r| (drop_counter(*r), base + added.get(r).copied().unwrap_or(0))).collect();
    ServerStats::from_pairs(names.iter().map(|(n, v)| (n.as_str(), *v)))
}

fn sent() -> BTreeMap<DropReason, u64> {
    EXACT_DROPS
        .iter()
        .filter(|r| !matches!(r, DropReason::RateLimitedAddress | DropReason::CookieExpired))
        .enumerate()
        .map(|(i, r)| (*r, 10 + i as u64))
        .collect()
}

const FLOOD: FloodTally = FloodTally { sent: 1000, acked: 300, send_errors: 0 };

#[test]
fn exact_counts_pass() {
    let before = figures(7, &BTreeMap::new());
    let mut added = sent();
    added.insert(DropReason::RateLimitedPlayer, 700);
    let after = figures(7, &added);
    let c = checks::drops(&before, &after, &sent(), &FLOOD, 0.01, false);
    assert_eq!(c.len(), 20);
    assert!(all_passed(&c), "{c:#?}");
}

#[test]
fn one_off_in_any_reason_fails_that_reason_only() {
    let before = figures(0, &BTreeMap::new());
    for reason in EXACT_DROPS {
        for delta in [-1i64, 1] {
            let mut added = sent();
            added.insert(DropReason::RateLimitedPlayer, 700);
            let v = added.entry(reason).or_insert(0);
            if delta < 0 && *v == 0 {
                continue;
            }
            *v = (*v as i64 + delta) as u64;
            let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, false);
            let failed: Vec<&str> = c.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
            assert_eq!(failed, vec![drop_counter(reason).as_str()], "{reason} {delta:+}");
        }
    }
}

#[test]
fn legitimate_traffic_rate_limited_by_address_or_an_expired_cookie_fails() {
    let before = figures(0, &BTreeMap::new());
    let mut added = sent();
    added.insert(DropReason::RateLimitedPlayer, 700);
    added.insert(DropReason::RateLimitedAddress, 3);
    let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, false);
    assert!(!c.iter().find(|c| c.name == "drop_rate_limited_address").unwrap().passed);
}

#[test]
fn the_flood_bound_allows_loss_but_not_a_missing_rate_limit() {
    let before = figures(0, &BTreeMap::new());
    let verdict = |limited: u64| {
        let mut added = sent();
        added.insert(DropReason::RateLimitedPlayer, limited);
        let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, false);
        c.iter().find(|c| c.name == "drop_rate_limited_player").unwrap().passed
    };
    // 700 unacked; 1% of 1000 sent may be lost on the way: 690..=1000.
    assert!(verdict(700));
    assert!(verdict(690));
    assert!(!verdict(689));
    assert!(!verdict(701), "more than the flood's unacked moves: acked moves or legitimate bots were limited");
    assert!(!verdict(1000));
    // Nothing flooded: nothing may be limited, and the bound is 0.
    let none = FloodTally::default();
    let c = checks::drops(&before, &figures(0, &sent()), &sent(), &none, 0.01, false);
    assert!(all_passed(&c));
    // Something flooded and all acked (no limit at all): at least one drop is required.
    let all_acked = FloodTally { sent: 10, acked: 10, send_errors: 0 };
    let c = checks::drops(&before, &figures(0, &sent()), &sent(), &all_acked, 0.01, false);
    assert!(!c.iter().find(|c| c.name == "drop_rate_limited_player").unwrap().passed);
}

#[test]
fn a_counter_the_server_did_not_report_fails() {
    let before = figures(0, &BTreeMap::new());
    let after = ServerStats::from_pairs([("drop_truncated", 10)]);
    let c = checks::drops(&before, &after, &sent(), &FLOOD, 0.01, false);
    let replayed = c.iter().find(|c| c.name == "drop_replayed").unwrap();
    assert!(!replayed.passed);
    assert!(replayed.detail.contains("did not report"), "{}", replayed.detail);
}

#[test]
fn loss_and_refusal_bounds() {
    assert!(checks::loss(1000, 990, 0.01).passed);
    assert!(!checks::loss(1000, 989, 0.01).passed);
    assert!(!checks::loss(0, 0, 0.01).passed, "a run that sent nothing proves nothing");
    assert!(checks::rejects(1000, 10, 0.01).passed);
    assert!(!checks::rejects(1000, 11, 0.01).passed);
    assert!(checks::joins(5, 5).passed && !checks::joins(5, 4).passed);
    assert_eq!(checks::loss_ratio(200, 150), 0.25);
    assert!(checks::replies(0, 0, 0).passed);
    assert!(!checks::replies(1, 0, 0).passed && !checks::replies(0, 1, 0).passed && !checks::replies(0, 0, 1).passed);
}

#[test]
fn flood_moves_are_held_to_the_player_limit_never_the_address_limit() {
    // The flood's moves carry its session's player, token and address: the server drops them
    // at the per-player limit only. Moves counted at the address limit instead mean legitimate
    // (authenticated) traffic was limited by address, and fail, with or without the allowance.
    let before = figures(0, &BTreeMap::new());
    let mut added = sent();
    added.insert(DropReason::RateLimitedPlayer, 200);
    added.insert(DropReason::RateLimitedAddress, 500);
    for past_limits in [false, true] {
        let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, past_limits);
        let failed: Vec<&str> = c.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
        assert_eq!(failed, vec!["drop_rate_limited_address", "drop_rate_limited_player"], "past limits: {past_limits}");
    }
}

#[test]
fn hostile_datagrams_from_a_source_past_the_address_limit_are_counted_there() {
    // 6 of the bad-session datagrams came from a source past its limit: counted at the
    // address limit instead. Exact elsewhere.
    let before = figures(0, &BTreeMap::new());
    let mut added = sent();
    added.insert(DropReason::RateLimitedPlayer, 700);
    *added.get_mut(&DropReason::BadSession).unwrap() -= 6;
    added.insert(DropReason::RateLimitedAddress, 6);
    let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, true);
    assert!(all_passed(&c), "{c:#?}");
    // A plan that keeps every source under the limits gets no such allowance.
    let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, false);
    let failed: Vec<&str> = c.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
    assert_eq!(failed, vec!["drop_rate_limited_address", "drop_bad_session"]);
    // Short with nothing at the address limit to explain it: that reason fails.
    added.insert(DropReason::RateLimitedAddress, 0);
    let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, true);
    let failed: Vec<&str> = c.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
    assert_eq!(failed, vec!["drop_bad_session"]);
    // A step before the address limit is never excused: a malformed datagram is counted under
    // its own reason whatever its source's rate (and the address limit's extra one is then
    // unexplained too).
    let mut added = sent();
    added.insert(DropReason::RateLimitedPlayer, 700);
    *added.get_mut(&DropReason::BadMagic).unwrap() -= 1;
    added.insert(DropReason::RateLimitedAddress, 1);
    let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, true);
    let failed: Vec<&str> = c.iter().filter(|c| !c.passed).map(|c| c.name.as_str()).collect();
    assert_eq!(failed, vec!["drop_bad_magic", "drop_rate_limited_address"]);
}

#[test]
fn joins_with_bad_cookies_are_counted_at_the_address_limit_never_the_host_limit() {
    let before = figures(0, &BTreeMap::new());
    let verdict = |cookie_short: u64, host_extra: u64, address_extra: u64| {
        let mut added = sent();
        added.insert(DropReason::RateLimitedPlayer, 700);
        *added.get_mut(&DropReason::BadCookie).unwrap() -= cookie_short;
        *added.get_mut(&DropReason::RateLimitedHost).unwrap() += host_extra;
        added.insert(DropReason::RateLimitedAddress, address_extra);
        let c = checks::drops(&before, &figures(0, &added), &sent(), &FLOOD, 0.01, true);
        c.iter().filter(|c| !c.passed).map(|c| c.name.clone()).collect::<Vec<String>>()
    };
    assert!(verdict(10, 0, 10).is_empty(), "ten bad-cookie joins from a source past the address limit, counted there");
    // The host limit is charged after the cookie: it cannot have stopped a bad-cookie join.
    assert_eq!(verdict(10, 10, 0), vec!["drop_rate_limited_host", "drop_bad_cookie"]);
    assert_eq!(verdict(10, 0, 9), vec!["drop_bad_cookie"], "one short that no limit counted");
}
