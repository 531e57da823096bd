//! Pass/fail checks of a run: what the bots saw against bounds, and against the server's own
//! figures (deltas between a `STATS_REPLY` before and one after). Pure functions of their
//! inputs, so they are tested against fake server figures.
//!
//! A check the server's figures cannot decide (a name it did not report) fails and says so:
//! the load tester never passes what it could not verify.

use crate::admin::GrantSummary;
use crate::bot::FloodTally;
use crate::combat::CombatTally;
use crate::economy::EconomyTally;
use crate::hostile_joins::{TokenAttack, TokenAttackTally};
use crate::protocol::{AttackRefusal, DropReason, LootRefusal};
use crate::raid::RaidSummary;
use crate::server_stats::{ECONOMY_CONSERVED, ServerStats, drop_counter};
use serde::Serialize;
use std::collections::BTreeMap;

/// One named check and its outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// Whether it held.
    pub passed: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

impl Check {
    /// A check named `name` that `passed`, with `detail`.
    pub fn new(name: impl Into<String>, passed: bool, detail: impl Into<String>) -> Check {
        Check { name: name.into(), passed, detail: detail.into() }
    }
}

/// Whether every check passed.
pub fn all_passed(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.passed)
}

/// Share of measured moves without an ack (0 when nothing was sent).
pub fn loss_ratio(sent: u64, acked: u64) -> f64 {
    if sent == 0 { 0.0 } else { sent.saturating_sub(acked) as f64 / sent as f64 }
}

/// Every bot joined.
pub fn joins(wanted: usize, joined: usize) -> Check {
    Check::new("joins", joined == wanted, format!("{joined} of {wanted} bots joined"))
}

/// Moves without an ack are at most `max_loss` of those sent (and some were sent).
pub fn loss(sent: u64, acked: u64, max_loss: f64) -> Check {
    let ratio = loss_ratio(sent, acked);
    Check::new(
        "move_loss",
        sent > 0 && ratio <= max_loss,
        format!(
            "{} of {sent} measured moves unacknowledged (loss {:.4}%, bound {:.4}%)",
            sent.saturating_sub(acked),
            ratio * 100.0,
            max_loss * 100.0
        ),
    )
}

/// Moves the engine refused (the walk never breaks the rules, so any refusal means the server
/// and the tester disagree on them) are at most `max_loss` of those sent.
pub fn rejects(sent: u64, rejected: u64, max_loss: f64) -> Check {
    let ratio = if sent == 0 { 0.0 } else { rejected as f64 / sent as f64 };
    Check::new(
        "move_rejects",
        ratio <= max_loss,
        format!("{rejected} of {sent} measured moves refused by the engine (bound {:.4}%)", max_loss * 100.0),
    )
}

/// The server's replies to the bots were all well formed: every datagram decoded, every ack
/// was for a move that was sent, and echoed that move's `client_time_ms`.
pub fn replies(decode_errors: u64, unexpected_acks: u64, echo_mismatches: u64) -> Check {
    Check::new(
        "replies_well_formed",
        decode_errors == 0 && unexpected_acks == 0 && echo_mismatches == 0,
        format!(
            "{decode_errors} undecodable datagrams, {unexpected_acks} acks for moves never sent, {echo_mismatches} acks not echoing client_time_ms"
        ),
    )
}

fn figure(after: &ServerStats, name: &str) -> Result<u64, Check> {
    after.get(name).ok_or_else(|| Check::new(name, false, format!("the server did not report `{name}`")))
}

fn delta(before: &ServerStats, after: &ServerStats, name: &str) -> Result<i128, Check> {
    after.delta(before, name).ok_or_else(|| Check::new(name, false, format!("the server did not report `{name}` before and after the run")))
}

/// The share of the economy schedule's transactions that may go unstarted by the run's end
/// (a bot keeps one in flight, so a server that answers slowly leaves some due).
pub const ECONOMY_NOT_STARTED_MAX: f64 = 0.01;

/// The economy's books, from the server's figures and the bots' ledger:
/// - `economy_conserved` is 1, and `live + departed == minted - sunk` holds in the reported
///   gold totals;
/// - `engine_economy_applied` grew by exactly the number of distinct transactions the bots saw
///   applied (each transaction id once, whichever answer told them);
/// - every transaction has a known outcome, and the server never answered one transaction as
///   new twice, nor contradicted a recorded outcome;
/// - every bot was granted its working capital, and minted gold grew by exactly the grants
///   (no client request creates value), and nothing was sunk;
/// - the trades the bots saw opened, accepted and declined are exactly the server's;
/// - `engine_economy_duplicates` grew by at least the duplicate answers the bots received;
/// - at most [`ECONOMY_NOT_STARTED_MAX`] of the transactions the schedule had due went
///   unstarted by the run's end (the server kept up with the load asked of it).
pub fn economy(before: &ServerStats, after: &ServerStats, tally: &EconomyTally, grants: &GrantSummary) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.push(match figure(after, ECONOMY_CONSERVED) {
        Ok(v) => Check::new("economy_conserved", v == 1, format!("the server's audit reports economy_conserved {v}")),
        Err(c) => c,
    });
    let books = ["economy_live_gold", "economy_escrowed_gold", "economy_departed_gold", "economy_minted_gold", "economy_sunk_gold"]
        .map(|n| figure(after, n));
    checks.push(match books {
        [Ok(live), Ok(escrowed), Ok(departed), Ok(minted), Ok(sunk)] => {
            let lhs = u128::from(live) + u128::from(escrowed) + u128::from(departed);
            let rhs = i128::from(minted) - i128::from(sunk);
            Check::new(
                "economy_books",
                rhs >= 0 && lhs == rhs as u128,
                format!("live {live} + escrowed {escrowed} + departed {departed} = {lhs}; minted {minted} - sunk {sunk} = {rhs}"),
            )
        }
        [a, b, c, d, e] => [a, b, c, d, e].into_iter().find_map(Result::err).unwrap_or_else(|| Check::new("economy_books", false, "?")),
    });
    checks.push(match delta(before, after, "engine_grants") {
        Ok(d) => Check::new(
            "economy_capital_granted",
            grants.requested > 0 && grants.applied == grants.requested && d == i128::from(grants.applied),
            format!(
                "{} of {} bots granted ({} refused, {} unanswered, {} sends); the server counted {d} grants",
                grants.applied, grants.requested, grants.refused, grants.unanswered, grants.sent
            ),
        ),
        Err(c) => c,
    });
    checks.push(match delta(before, after, "engine_economy_applied") {
        Ok(d) => Check::new(
            "economy_applied_matches",
            d == i128::from(tally.applied),
            format!("server applied {d} economy operations during the run; bots saw {} distinct transactions applied", tally.applied),
        ),
        Err(c) => c,
    });
    let due = tally.started + tally.not_started;
    checks.push(Check::new(
        "economy_schedule_kept",
        tally.not_started as f64 <= ECONOMY_NOT_STARTED_MAX * due as f64,
        format!(
            "{} of {due} transactions due were started; {} were not by the run's end (at most {:.0}% may not be: past that the server answered too slowly for the schedule)",
            tally.started,
            tally.not_started,
            ECONOMY_NOT_STARTED_MAX * 100.0
        ),
    ));
    checks.push(Check::new(
        "economy_outcomes_known",
        tally.unknown == 0,
        format!("{} of {} transactions never got an answer despite resends", tally.unknown, tally.started),
    ));
    checks.push(Check::new(
        "economy_at_most_once",
        tally.repeated_first_answers == 0 && tally.inconsistent_answers == 0,
        format!(
            "{} transactions answered as new twice, {} answers contradicting a recorded outcome ({} results, {} of them duplicates)",
            tally.repeated_first_answers, tally.inconsistent_answers, tally.results_received, tally.duplicate_results
        ),
    ));
    checks.push(match (delta(before, after, "economy_minted_gold"), delta(before, after, "economy_sunk_gold")) {
        (Ok(minted), Ok(sunk)) => Check::new(
            "economy_minted_matches",
            minted == i128::from(grants.gold) && sunk == 0,
            format!("minted gold grew by {minted} (the grants: {}), sunk by {sunk} (bots spent nothing)", grants.gold),
        ),
        (Err(c), _) | (_, Err(c)) => c,
    });
    checks.extend(trades_match(before, after, tally, ""));
    checks.push(Check::new(
        "economy_trades_happened",
        tally.accepts_applied > 0,
        format!(
            "{} offers opened, {} accepted, {} declined; notices: {} offered, {} accepted, {} declined; {} offers left unanswered",
            tally.offers_applied,
            tally.accepts_applied,
            tally.declines_applied,
            tally.trade_notices[1],
            tally.trade_notices[2],
            tally.trade_notices[3],
            tally.offers_unanswered
        ),
    ));
    checks.push(match delta(before, after, "engine_economy_duplicates") {
        Ok(d) => Check::new(
            "economy_duplicates_counted",
            d >= i128::from(tally.duplicate_results),
            format!("server answered {d} resends from its record; bots received {} such answers", tally.duplicate_results),
        ),
        Err(c) => c,
    });
    checks
}

/// The trades the bots saw applied against the server's counters, exactly: offers opened,
/// accepts, declines (checks named `<prefix>trade_offers_match` and so on).
fn trades_match(before: &ServerStats, after: &ServerStats, tally: &EconomyTally, prefix: &str) -> Vec<Check> {
    [
        ("trade_offers_match", "engine_trade_offers", tally.offers_applied),
        ("trades_accepted_match", "engine_trades_accepted", tally.accepts_applied),
        ("trades_declined_match", "engine_trades_declined", tally.declines_applied),
    ]
    .into_iter()
    .map(|(name, counter, bots)| match delta(before, after, counter) {
        Ok(d) => Check::new(format!("{prefix}{name}"), d == i128::from(bots), format!("server {d}; bots saw {bots} applied")),
        Err(c) => c,
    })
    .collect()
}

/// The raid's trades of looted items against the server's books: every trade transaction
/// has a known outcome, at most once; the offers, accepts and declines the bots saw are
/// exactly the server's, and some trades completed; the books balance with escrow, and the
/// only gold minted during the run is the loot the bots claimed (no grants, nothing else).
pub fn loot_trades(before: &ServerStats, after: &ServerStats, tally: &EconomyTally, combat: &CombatTally) -> Vec<Check> {
    let mut checks = vec![Check::new(
        "raid_traded",
        tally.accepts_applied > 0,
        format!(
            "{} offers of looted items opened, {} accepted, {} declined; {} refused; {} slots with nothing to offer",
            tally.offers_applied, tally.accepts_applied, tally.declines_applied, tally.refused, tally.idle_slots
        ),
    )];
    checks.push(Check::new(
        "trade_outcomes_known",
        tally.unknown == 0 && tally.repeated_first_answers == 0 && tally.inconsistent_answers == 0,
        format!(
            "{} unknown, {} answered as new twice, {} contradicting answers",
            tally.unknown, tally.repeated_first_answers, tally.inconsistent_answers
        ),
    ));
    checks.extend(trades_match(before, after, tally, "raid_"));
    checks.push(match (delta(before, after, "economy_minted_gold"), delta(before, after, "engine_grants")) {
        (Ok(minted), Ok(grants)) => Check::new(
            "raid_minted_only_loot",
            grants == 0 && (combat.claims_unanswered > 0 || minted == i128::from(combat.loot_gold)),
            format!("minted gold grew by {minted}; the bots claimed {} gold of loot; {grants} grants", combat.loot_gold),
        ),
        (Err(c), _) | (_, Err(c)) => c,
    });
    checks.push(match figure(after, ECONOMY_CONSERVED) {
        Ok(v) => Check::new("raid_economy_conserved", v == 1, format!("the server's audit reports economy_conserved {v}")),
        Err(c) => c,
    });
    checks
}

/// Drop reasons whose count the hostile scenario predicts exactly (every other reason but
/// `rate_limited_player` must not move at all). `admin_wrong_source` last, out of the table's
/// order, so the slices below keep their places: the scenario sends none, and the tester's own
/// admin messages must not be counted there.
pub const EXACT_DROPS: [DropReason; 19] = [
    DropReason::BadSource,
    DropReason::Truncated,
    DropReason::Oversized,
    DropReason::BadMagic,
    DropReason::BadVersion,
    DropReason::ObsoleteVersion,
    DropReason::UnknownType,
    DropReason::BadLength,
    DropReason::BadField,
    DropReason::RateLimitedAddress,
    DropReason::RateLimitedHost,
    DropReason::BadCookie,
    DropReason::CookieExpired,
    DropReason::BadAdminKey,
    DropReason::UnknownPlayer,
    DropReason::BadSession,
    DropReason::AddressMismatch,
    DropReason::Replayed,
    DropReason::AdminWrongSource,
];

/// Reasons the server checks after the source address's rate limit (step 9), for datagrams
/// that met it: a datagram dropped at that limit is never looked at by them. The cookie
/// checks (steps 10 and 11), then the admin and session checks (12 to 15). The host's join
/// limit comes after the cookie checks and sees only confirms whose cookie is valid, which the
/// hostile scenario never sends; a replay (16) is a message of the sender's own live session,
/// which skips the address limit. So neither can hide behind it.
pub const LATER_REASONS: &[DropReason] = EXACT_DROPS.split_at(11).1.split_at(6).0;
const _: () = assert!(
    matches!(LATER_REASONS[0], DropReason::BadCookie)
        && matches!(LATER_REASONS[5], DropReason::AddressMismatch)
        && LATER_REASONS.len() == 6,
    "the reasons checked after the address limit, the host limit and replays apart"
);

/// The server's drop counters against what the hostile scenario sent (`sent`, per expected
/// reason): every reason but `rate_limited_player` must have grown by exactly what was sent
/// for it (0 for reasons nothing was sent for). The flood's moves carry its session's player,
/// token and address, so the server holds them to the per-player limit alone, never the
/// per-address one, however fast they come.
///
/// When the plan itself sends past half of the default per-address limit from one source
/// (`sources_past_limits`, [`crate::hostile::HostilePlan::sources_past_limits`]: hostile
/// traffic over too few sockets), the server may drop some of it at that limit instead of
/// for the reason it was built for, so one allowance, which must add up exactly:
/// `rate_limited_address` may exceed what was sent for it by what the later reasons
/// ([`LATER_REASONS`]) fall short, and each shortfall must be met there. A reason before
/// step 9 is exact whatever its source's rate, and so is `rate_limited_host`. The allowance is
/// granted only to such a plan, and the detail says so.
///
/// Flooding is checked with bounds: every flood move the server dropped went unacknowledged,
/// so `rate_limited_player` is at least `sent - acked - max_loss * sent` (at least 1 if
/// anything was sent) and at most `sent - acked` (more means the server limited moves it also
/// acknowledged, or limited legitimate bots).
pub fn drops(
    before: &ServerStats,
    after: &ServerStats,
    sent: &BTreeMap<DropReason, u64>,
    flood: &FloodTally,
    max_loss: f64,
    sources_past_limits: bool,
) -> Vec<Check> {
    let expected = |reason: DropReason| i128::from(sent.get(&reason).copied().unwrap_or(0));
    let counted = |reason: DropReason| delta(before, after, &drop_counter(reason));
    // How far below what was sent each group of later reasons fell (nothing is excused
    // without the allowance: each reason is then held exact on its own), the limits' counts
    // beyond their own datagrams, and what the address limit counted that no shortfall explains
    // (negative: a shortfall no limit explains).
    let short = |reasons: &[DropReason]| -> i128 {
        if !sources_past_limits {
            return 0;
        }
        reasons.iter().filter_map(|&r| counted(r).ok().map(|d| (expected(r) - d).max(0))).sum()
    };
    let address_surplus = counted(DropReason::RateLimitedAddress).map(|d| d - expected(DropReason::RateLimitedAddress)).unwrap_or(0);
    let explained_at_address = short(LATER_REASONS);
    let unexplained_at_address = address_surplus - explained_at_address;
    let unacked = i128::from(flood.sent.saturating_sub(flood.acked));

    let mut checks = Vec::new();
    for reason in EXACT_DROPS {
        let name = drop_counter(reason);
        let e = expected(reason);
        let later = LATER_REASONS.contains(&reason);
        checks.push(match counted(reason) {
            Err(c) => c,
            Ok(d) if reason == DropReason::RateLimitedAddress => Check::new(
                name,
                d >= e && unexplained_at_address <= 0,
                format!(
                    "sent {e}, server counted {d}; beyond what was sent, {} datagrams the later steps fall short by, and {} more no shortfall explains (legitimate traffic limited)",
                    explained_at_address.min(d - e).max(0),
                    unexplained_at_address.max(0)
                ),
            ),
            Ok(d) if later && d < e && sources_past_limits => Check::new(
                name,
                unexplained_at_address >= 0,
                format!(
                    "sent {e}, server counted {d}; the {} short must have come from a source past the address limit and been counted there (the plan sends past half the default limit from one source)",
                    e - d
                ),
            ),
            Ok(d) => Check::new(name, d == e, format!("sent {e}, server counted {d}")),
        });
    }
    let name = drop_counter(DropReason::RateLimitedPlayer);
    let tolerance = i128::from((max_loss * flood.sent as f64).ceil() as u64);
    let lower = (unacked - tolerance).max(i128::from(flood.sent > 0));
    checks.push(match counted(DropReason::RateLimitedPlayer) {
        Ok(d) => Check::new(
            name,
            d >= lower && d <= unacked,
            format!("flood sent {}, {} acked; server counted {d} (expected {lower}..={unacked})", flood.sent, flood.acked),
        ),
        Err(c) => c,
    });
    checks
}

/// The hostile scenario's refused joins ([`crate::hostile_joins`]): each kind was attempted,
/// every attempt was told its expected status, and the server counted exactly those under the
/// kind's counter; no account was refused as live elsewhere (every attack has its own).
pub fn token_attacks(before: &ServerStats, after: &ServerStats, tally: &TokenAttackTally) -> Vec<Check> {
    let mut checks = Vec::new();
    for kind in TokenAttack::ALL {
        let sent = tally.sent.get(&kind).copied().unwrap_or(0);
        let told = tally.refused_as_expected.get(&kind).copied().unwrap_or(0);
        let name = format!("token_{}_refused", kind.name());
        checks.push(match delta(before, after, kind.counter()) {
            Ok(d) => Check::new(
                name,
                sent > 0 && told == sent && d == i128::from(sent),
                format!("{sent} joins, {told} told {:?}; server counted {d} under {}", kind.expected(), kind.counter()),
            ),
            Err(c) => c,
        });
    }
    checks.push(Check::new(
        "token_attacks_clean",
        tally.surprises.is_empty(),
        if tally.surprises.is_empty() { "every attack answered as expected".to_string() } else { tally.surprises.join("; ") },
    ));
    checks
}

/// The raid's fighting against the server's books (`engine_*` deltas over the run):
/// - the bots attacked, and landed attacks and killed adds (a raid nobody fights proves
///   nothing);
/// - every attack answered was landed or refused for a reason a legitimate bot can meet
///   (never unknown player, wrong session or attacker dead), and no answer was unexpected (a
///   late answer to an attack given up is not: see `combat`);
/// - the server's landed attacks, kills and refusals are at least what the bots were told and
///   at most that plus the attacks whose answer never arrived (a lost reply is the only slack).
pub fn combat(before: &ServerStats, after: &ServerStats, tally: &CombatTally) -> Vec<Check> {
    let unanswered = tally.attacks_sent.saturating_sub(tally.answers);
    let mut checks = vec![Check::new(
        "raid_fought",
        tally.landed > 0 && tally.kills > 0,
        format!(
            "{} attacks sent, {} answered: {} landed ({} kills, {} hp), {} refused",
            tally.attacks_sent,
            tally.answers,
            tally.landed,
            tally.kills,
            tally.damage,
            tally.refused_total()
        ),
    )];
    let impossible = [AttackRefusal::UnknownPlayer, AttackRefusal::WrongSession, AttackRefusal::AttackerDead]
        .into_iter()
        .map(|r| tally.refused_for(r))
        .sum::<u64>();
    checks.push(Check::new(
        "attack_answers_legitimate",
        impossible == 0 && tally.unexpected == 0,
        format!(
            "{impossible} answers refused a bot as unknown, wrong session or dead; {} results for no attack of the bot's or already answered",
            tally.unexpected
        ),
    ));
    let refused_names = [
        "engine_attack_rejected_unknown_target",
        "engine_attack_rejected_friendly_fire",
        "engine_attack_rejected_target_dead",
        "engine_attack_rejected_out_of_range",
        "engine_attack_rejected_cooldown",
    ];
    let mut server_refused = Ok(0i128);
    for name in refused_names {
        server_refused = match (server_refused, delta(before, after, name)) {
            (Ok(sum), Ok(d)) => Ok(sum + d),
            (Err(c), _) | (_, Err(c)) => Err(c),
        };
    }
    let bounded = |name: &str, server: Result<i128, Check>, bots: u64| match server {
        Ok(d) => Check::new(
            name,
            d >= i128::from(bots) && d <= i128::from(bots + unanswered),
            format!("server {d}; bots were told {bots}, {unanswered} attacks unanswered"),
        ),
        Err(c) => c,
    };
    checks.push(bounded("attacks_landed_match", delta(before, after, "engine_attacks_landed"), tally.landed));
    checks.push(bounded("kills_match", delta(before, after, "engine_kills"), tally.kills));
    checks.push(bounded("attack_refusals_match", server_refused, tally.refused_total()));
    checks.extend(loot(before, after, tally));
    checks
}

/// The raid's loot against the server's books: kills were claimed, every claim's refusal is
/// one a bot claiming its own kill can meet (out of range, or the burst expired first), and
/// the loot the bots were told they got (each loot once) is exactly what the server credited:
/// claims, gold and items. A claim given up unanswered may still have been credited, so it
/// widens the claims' bound and turns the gold and items checks into lower bounds.
fn loot(before: &ServerStats, after: &ServerStats, tally: &CombatTally) -> Vec<Check> {
    let unanswered = tally.claims_unanswered;
    let mut checks = vec![Check::new(
        "raid_looted",
        tally.loot_claimed > 0 && unanswered == 0,
        format!(
            "{} kills, {} claims sent ({} resends): {} loot claimed ({} gold, {} items), {} refused, {} unanswered, {} not queued",
            tally.kills,
            tally.claims_sent,
            tally.claim_resends,
            tally.loot_claimed,
            tally.loot_gold,
            tally.loot_items,
            tally.claims_refused_total(),
            unanswered,
            tally.loot_left
        ),
    )];
    let impossible = [
        LootRefusal::UnknownPlayer,
        LootRefusal::WrongSession,
        LootRefusal::NoLoot,
        LootRefusal::NotYours,
        LootRefusal::WalletFull,
        LootRefusal::Dead,
    ]
    .into_iter()
    .map(|r| tally.claims_refused_for(r))
    .sum::<u64>();
    checks.push(Check::new(
        "loot_claims_legitimate",
        impossible == 0,
        format!(
            "{impossible} claims of a bot's own kill refused as unknown, wrong session, no loot, not yours, wallet full or dead; {} out of range, {} expired first",
            tally.claims_refused_for(LootRefusal::OutOfRange),
            tally.claims_refused_for(LootRefusal::UnknownLoot)
        ),
    ));
    // `upper`: the most the server may have credited (None: unknown, an unanswered claim's
    // contents were never told).
    let matches = |name: &str, counter: &str, bots: u64, upper: Option<u64>| match delta(before, after, counter) {
        Ok(d) => {
            let ok = d >= i128::from(bots) && upper.is_none_or(|u| d <= i128::from(u));
            Check::new(name, ok, format!("server {d}; bots were told {bots}, {unanswered} claims unanswered"))
        }
        Err(c) => c,
    };
    let exact_when_all_answered = |bots: u64| (unanswered == 0).then_some(bots);
    checks.push(matches("loot_claimed_match", "engine_loot_claimed", tally.loot_claimed, Some(tally.loot_claimed + unanswered)));
    checks.push(matches("loot_gold_match", "engine_loot_gold_claimed", tally.loot_gold, exact_when_all_answered(tally.loot_gold)));
    checks.push(matches("loot_items_match", "engine_loot_items_claimed", tally.loot_items, exact_when_all_answered(tally.loot_items)));
    checks
}

/// Every raid trigger got a result, and every result spawned the whole burst.
pub fn raid(summary: &RaidSummary) -> Vec<Check> {
    vec![
        Check::new(
            "raid_results",
            summary.triggers > 0 && summary.results == summary.triggers,
            format!("{} of {} triggers answered", summary.results, summary.triggers),
        ),
        Check::new(
            "raid_spawns_complete",
            summary.failed == 0,
            format!(
                "{} bursts failed or spawned short{}",
                summary.failed,
                if summary.refused_capacity > 0 {
                    format!(
                        ", {} of them refused as past the server's raid capacity (the objects, or the bursts, alive at once: \
                         fewer per burst, a shorter --raid-lifetime-ms or a longer --raid-every fit)",
                        summary.refused_capacity
                    )
                } else {
                    String::new()
                }
            ),
        ),
    ]
}
