//! Whole runs of the load tester against an in-process fake server (`fake_server/`): the
//! join handshake, scheduling, ack matching, leave, the server's figures and every scenario's
//! checks, end to end over real UDP sockets; and runs against a misbehaving fake that the
//! checks must fail.

use crate::fake_server::{FakeConfig, FakeServer};
use clap::Parser;
use mmo_loadtest::cli::Cli;
use mmo_loadtest::progress::Progress;
use mmo_loadtest::report::Report;
use mmo_loadtest::run::{RunResult, run};

fn run_against(server: &FakeServer, args: &[&str]) -> RunResult {
    let mut argv = vec!["--warmup", "300ms", "--drain", "300ms"];
    argv.extend_from_slice(args);
    let cli = server.tester_cli(&argv);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(run(cli, &Progress::new(true))).expect("the run completes")
}

fn failed(r: &RunResult) -> Vec<String> {
    r.checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.detail)).collect()
}

#[test]
fn steady_play_is_measured_from_intended_times_and_passes() {
    let server = FakeServer::start(FakeConfig::default());
    let r = run_against(&server, &["--players", "20", "--duration", "1s"]);
    assert!(failed(&r).is_empty(), "{:#?}", failed(&r));
    assert_eq!(r.joined, 20);
    // 1 s measured at 10 Hz per bot: exactly 10 intended moves each, all acked.
    assert_eq!(r.totals.moves_sent, 200);
    assert_eq!(r.totals.acks, 200);
    assert_eq!(r.totals.latencies.move_rtt.len(), 200);
    assert!(r.totals.aoi_snapshots > 0);
    assert_eq!((r.leaves_acked, r.leaves_unacked), (20, 0));
    let report = Report::new(&r);
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    for key in ["players", "duration_s", "moves_sent", "acks_received", "loss_ratio", "rtt_us", "server", "checks", "passed"] {
        assert!(json.get(key).is_some(), "JSON lacks `{key}`");
    }
    for key in ["p50", "p99", "p999", "max"] {
        assert!(json["rtt_us"][key].as_u64().unwrap() > 0);
    }
    assert_eq!(json["server_delta"]["engine_moves_applied"].as_i64(), Some(20 * 13), "1.3 s of moves (warm-up included)");
    assert_eq!(json["passed"], true);
    assert!(report.summary().contains("result: PASS"));
}

#[test]
fn economy_with_lost_results_resends_until_every_outcome_is_known() {
    // Every 3rd result is lost: a transaction whose answer was lost *was* applied, and only
    // a resend's duplicate answer tells the bot.
    let server = FakeServer::start(FakeConfig { lose_every_nth_economy_result: 3, ..FakeConfig::default() });
    let r = run_against(
        &server,
        &["--scenario", "economy", "--players", "10", "--duration", "1s", "--economy-interval-ms", "100", "--economy-timeout-ms", "50"],
    );
    assert!(failed(&r).is_empty(), "{:#?}", failed(&r));
    let e = &r.totals.economy;
    assert!(e.retransmits > 0 && e.duplicate_results > 0, "{e:?}");
    assert_eq!(e.unknown, 0);
    assert!(r.checks.iter().any(|c| c.name == "economy_applied_matches" && c.passed));
}

#[test]
fn a_server_that_applies_a_resend_twice_fails_the_economy_checks() {
    let server = FakeServer::start(FakeConfig { apply_duplicates_again: true, ..FakeConfig::default() });
    let r = run_against(
        &server,
        &["--scenario", "economy", "--players", "10", "--duration", "1s", "--economy-interval-ms", "100", "--economy-duplicates", "0.5"],
    );
    let f = failed(&r);
    assert!(f.iter().any(|c| c.starts_with("economy_at_most_once")), "{f:#?}");
    let report = Report::new(&r);
    assert!(!report.passed);
    assert!(report.economy.unwrap().checks.iter().any(|c| !c.passed));
}

#[test]
fn hostile_replies_are_counted_and_change_no_measurement() {
    // After every 7th move's ack: the ack again, an ack for an odd sequence (the bots send
    // even ones), an ack with an undefined result byte, and an economy result to a bot that
    // plays no economy.
    let server = FakeServer::start(FakeConfig { hostile_replies_every_nth_move: 7, ..FakeConfig::default() });
    let r = run_against(&server, &["--players", "20", "--duration", "1s"]);
    let rounds = server.hostile_rounds();
    assert!(rounds >= 200 / 7, "the fake misbehaved {rounds} times");
    // Each kind counted once per round, where it belongs (every round follows a live bot's
    // ack, so every one reaches a bot that is still reading).
    let t = &r.totals;
    assert_eq!(
        (t.duplicate_acks, t.unexpected_acks, t.decode_errors, t.unexpected_messages),
        (rounds, rounds, rounds, rounds),
        "duplicates, unexpected acks, undecodable datagrams, unexpected messages"
    );
    // The measurement is the same as against a well-behaved server: every move acked once.
    assert_eq!(t.moves_sent, 200);
    assert_eq!(t.acks, 200);
    assert_eq!(t.latencies.move_rtt.len(), 200);
    let f = failed(&r);
    assert!(f.iter().any(|c| c.starts_with("replies_well_formed")), "{f:#?}");
    assert_eq!(f.len(), 1, "only the replies' check fails: {f:#?}");
}

#[test]
fn raid_bursts_are_triggered_and_round_trips_split() {
    // The server puts the raid's bots in a zone inside the raid's 10 m radius.
    let server = FakeServer::start(FakeConfig { raid_zone_m: 9.0, ..FakeConfig::default() });
    let r = run_against(
        &server,
        &[
            "--scenario",
            "raid",
            "--players",
            "10",
            "--duration",
            "2s",
            "--raid-every",
            "500ms",
            "--raid-window-after",
            "100ms",
            "--raid-radius",
            "10",
        ],
    );
    assert!(failed(&r).is_empty(), "{:#?}", failed(&r));
    // The bots fought: the checks compared what they were told with the fake's books.
    let c = r.totals.combat;
    assert!(c.landed > 0 && c.kills > 0 && c.answers <= c.attacks_sent, "{c:?}");
    assert!(r.checks.iter().any(|k| k.name == "kills_match" && k.passed), "{:#?}", r.checks);
    // And claimed what they killed: every kill's loot, counted once, as the fake credited it.
    assert!(c.loot_claimed > 0 && c.loot_claimed <= c.kills && c.loot_gold >= 10 * c.loot_claimed, "{c:?}");
    for name in [
        "raid_looted",
        "loot_claims_legitimate",
        "loot_claimed_match",
        "loot_gold_match",
        "loot_items_match",
        "raid_traded",
        "raid_trades_accepted_match",
        "raid_minted_only_loot",
    ] {
        assert!(r.checks.iter().any(|k| k.name == name && k.passed), "{name}: {:#?}", r.checks);
    }
    let raid = r.raid.as_ref().unwrap();
    assert_eq!(raid.triggers, 4, "bursts at 250, 750, 1250 and 1750 ms into the measured 2 s");
    assert_eq!(raid.spawn_ms.median, 0.45);
    let (during, between) = (r.totals.latencies.move_rtt_raid.len(), r.totals.latencies.move_rtt_calm.len());
    assert!(during > 0 && between > 0, "{during} {between}");
    assert_eq!(during + between, r.totals.latencies.move_rtt.len());
}

#[test]
fn hostile_traffic_is_dropped_for_exactly_the_reasons_sent() {
    let server = FakeServer::start(FakeConfig::default());
    let r = run_against(
        &server,
        &["--scenario", "hostile", "--players", "10", "--duration", "1s", "--hostile-rate", "260", "--flood-rate", "300"],
    );
    assert!(failed(&r).is_empty(), "{:#?}", failed(&r));
    let h = r.hostile.as_ref().unwrap();
    let by_reason = h.sent.by_reason();
    // Every kind was sent at least once, so every exact check compared a non-zero count.
    assert_eq!(by_reason.len(), 15, "{by_reason:?}");
    assert!(h.flood.sent > h.flood.acked);
    // Joins with tokens the server must refuse: every kind tried, told and counted.
    assert_eq!(h.token_attacks.sent.len(), 5, "{:?}", h.token_attacks);
    assert!(h.token_attacks.surprises.is_empty(), "{:?}", h.token_attacks.surprises);
    for kind in ["forged", "expired", "wrong_server", "malformed", "replayed"] {
        let name = format!("token_{kind}_refused");
        assert!(r.checks.iter().any(|c| c.name == name && c.passed), "{name}: {:#?}", r.checks);
    }
}

#[test]
fn scenarios_that_judge_the_server_need_the_admin_key() {
    let cli = Cli::parse_from(["mmo-loadtest", "--scenario", "economy", "--quiet", "--server", "127.0.0.1:9"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(run(cli, &Progress::new(true))).unwrap_err();
    assert!(err.to_string().contains("--admin-key"), "{err}");
}

#[test]
fn no_server_is_a_setup_error_not_a_pass() {
    // Nothing listens on this fake's port once it is dropped.
    let fake = FakeServer::start(FakeConfig::default());
    let (addr, key) = (fake.addr.to_string(), fake.token_secret_key.clone());
    drop(fake);
    let cli = Cli::parse_from([
        "mmo-loadtest",
        "--server",
        &addr,
        "--quiet",
        "--players",
        "3",
        "--join-timeout",
        "50ms",
        "--join-attempts",
        "2",
        "--token-secret-key",
        &key,
    ]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(run(cli, &Progress::new(true))).unwrap_err();
    assert!(err.to_string().contains("no bot could join"), "{err}");
}

#[test]
fn tokens_the_servers_backend_did_not_sign_are_refused() {
    let server = FakeServer::start(FakeConfig::default());
    let other = FakeServer::start(FakeConfig::default());
    let addr = server.addr.to_string();
    let cli =
        Cli::parse_from(["mmo-loadtest", "--server", &addr, "--quiet", "--players", "3", "--token-secret-key", &other.token_secret_key]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = rt.block_on(run(cli, &Progress::new(true))).unwrap_err();
    assert!(err.to_string().contains("no bot could join") && err.to_string().contains("TokenBadSignature"), "{err}");
}

#[test]
fn a_missing_token_key_is_a_setup_error_naming_the_file() {
    let server = FakeServer::start(FakeConfig::default());
    let addr = server.addr.to_string();
    let cli = Cli::parse_from(["mmo-loadtest", "--server", &addr, "--quiet", "--token-secret-key", "/nonexistent/token.secret"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let err = format!("{:#}", rt.block_on(run(cli, &Progress::new(true))).unwrap_err());
    assert!(err.contains("--token-secret-key") && err.contains("/nonexistent/token.secret"), "{err}");
}
