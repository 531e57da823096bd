//! The capacity search: its ramp and bisection, how it judges a step and names the limit
//! (the tester's own included), and a whole search against the in-process fake server, which
//! is made to lose moves above a known number of players that the search must find.

use crate::fake_server::{FakeConfig, FakeServer};
use mmo_loadtest::capacity::{CapacityPlan, Search, StepFigures, find, judge_step};
use mmo_loadtest::metrics::Summary;
use mmo_loadtest::progress::Progress;

fn plan(start: u32, step: u32, max: u32, refine: u32) -> CapacityPlan {
    CapacityPlan { start, step, max, refine, rtt_p99_max_us: 2000, max_loss: 0.01 }
}

/// Runs a search against an oracle: counts up to `capacity` pass.
fn search_with(p: CapacityPlan, capacity: u32) -> Search {
    let mut s = Search::new(p);
    for _ in 0..1000 {
        let Some(n) = s.next() else { return s };
        s.record(n, n <= capacity);
    }
    panic!("the search did not end: {:?}", s.tried());
}

#[test]
fn ramps_then_bisects_to_the_oracles_number() {
    let s = search_with(plan(500, 500, 20_000, 2), 1800);
    let tried: Vec<u32> = s.tried().iter().map(|t| t.0).collect();
    assert_eq!(tried, vec![500, 1000, 1500, 2000, 1750, 1875]);
    assert_eq!(s.capacity(), 1750);
    assert_eq!(s.first_failure(), Some(1875));
}

#[test]
fn more_refinement_converges_and_never_retries_a_count() {
    for capacity in [1, 7, 499, 500, 501, 1234, 9999] {
        let s = search_with(plan(500, 500, 20_000, 12), capacity);
        assert_eq!(s.capacity(), capacity, "{:?}", s.tried());
        let mut seen: Vec<u32> = s.tried().iter().map(|t| t.0).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), s.tried().len(), "a count was tried twice: {:?}", s.tried());
    }
}

#[test]
fn a_server_that_holds_everything_stops_at_the_maximum() {
    let s = search_with(plan(1000, 1000, 4000, 2), u32::MAX);
    assert_eq!(s.tried().iter().map(|t| t.0).collect::<Vec<_>>(), vec![1000, 2000, 3000, 4000]);
    assert_eq!(s.capacity(), 4000);
    assert_eq!(s.first_failure(), None);
}

#[test]
fn a_failing_first_step_bisects_downwards() {
    let s = search_with(plan(1000, 1000, 4000, 3), 300);
    assert_eq!(s.tried().iter().map(|t| t.0).collect::<Vec<_>>(), vec![1000, 500, 250, 375]);
    assert_eq!(s.capacity(), 250);
}

#[test]
fn a_noisy_pass_above_a_failure_does_not_count() {
    let mut s = Search::new(plan(100, 100, 1000, 0));
    s.record(100, true);
    s.record(200, false);
    s.record(300, true);
    assert_eq!(s.capacity(), 100, "capacity is below the first failure");
    assert_eq!(s.next(), None);
}

fn summary(p50: u64, p99: u64) -> Summary {
    Summary { count: 10_000, p50, p90: p50, p99, p999: p99, max: p99, mean: p50 as f64, min: 1 }
}

fn step(rtt_p99: u64, loss: f64, lag_p99: u64, tester: f64, server: Option<f64>) -> StepFigures {
    StepFigures {
        players: 2000,
        joined: 2000,
        rtt_us: summary(rtt_p99 / 2, rtt_p99),
        loss,
        send_lag_us: summary(lag_p99 / 2, lag_p99),
        tester_cpu_cores: tester,
        tester_threads: 1,
        server_cpu_cores: server,
        machine_cores: 2,
    }
}

#[test]
fn a_step_within_bounds_passes() {
    let v = judge_step(&step(1500, 0.001, 40, 0.2, Some(0.5)), &plan(1, 1, 1, 0));
    assert!(v.passed && v.failed.is_empty() && v.cause.is_none() && !v.tester_limited, "{v:?}");
}

#[test]
fn a_late_tester_is_named_as_the_limit() {
    let v = judge_step(&step(5000, 0.0, 900, 0.3, Some(0.6)), &plan(1, 1, 1, 0));
    assert!(!v.passed && v.tester_limited, "{v:?}");
    assert!(v.failed[0].starts_with("latency"), "{v:?}");
    assert!(v.cause.as_deref().unwrap().starts_with("tester"), "{v:?}");
    let busy = judge_step(&step(5000, 0.0, 40, 0.95, Some(0.6)), &plan(1, 1, 1, 0));
    assert!(busy.tester_limited, "a tester thread at 95% of a core is the limit: {busy:?}");
}

#[test]
fn a_saturated_machine_and_a_server_with_cpu_to_spare_are_told_apart() {
    let p = plan(1, 1, 1, 0);
    let cpu = judge_step(&step(5000, 0.02, 40, 0.4, Some(1.5)), &p);
    assert!(!cpu.tester_limited && cpu.cause.as_deref().unwrap().starts_with("CPU"), "{cpu:?}");
    assert_eq!(cpu.failed.len(), 2, "loss and latency both named: {cpu:?}");
    let spare = judge_step(&step(5000, 0.0, 40, 0.2, Some(0.3)), &p);
    assert!(spare.cause.as_deref().unwrap().starts_with("server"), "{spare:?}");
    let unknown = judge_step(&step(5000, 0.0, 40, 0.2, None), &p);
    assert!(unknown.cause.as_deref().unwrap().starts_with("unknown"), "{unknown:?}");
}

#[test]
fn missing_joins_and_no_acks_fail_a_step() {
    let p = plan(1, 1, 1, 0);
    let mut f = step(1000, 0.0, 40, 0.2, Some(0.3));
    f.joined = 1990;
    assert!(judge_step(&f, &p).failed.iter().any(|s| s.starts_with("joins")));
    let mut f = step(1000, 0.0, 40, 0.2, Some(0.3));
    f.rtt_us = Summary::default();
    assert!(!judge_step(&f, &p).passed, "a step with no acknowledged move cannot pass");
}

#[test]
fn finds_the_fake_servers_capacity_end_to_end() {
    let server = FakeServer::start(FakeConfig { overloaded_above_players: 10, ..FakeConfig::default() });
    let cli = server.tester_cli(&[
        "--find-capacity",
        "--warmup",
        "200ms",
        "--drain",
        "300ms",
        "--duration",
        "1s",
        "--capacity-start",
        "4",
        "--capacity-step",
        "4",
        "--capacity-max",
        "40",
        "--capacity-refine",
        "2",
        // The fake answers in tens of microseconds; a loaded CI machine may not. Loss, not
        // latency, is what the fake's overload shows.
        "--rtt-p99-max",
        "500ms",
    ]);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let report = rt.block_on(find(&cli, &Progress::new(true))).expect("the search runs");
    let tried: Vec<u32> = report.steps.iter().map(|s| s.figures.players).collect();
    assert_eq!(tried, vec![4, 8, 12, 10, 11], "ramp 4, 8, 12 (fails above 10), then bisect");
    assert_eq!(report.capacity, 10, "{}", report.summary());
    assert!(!report.reached_max && !report.tester_limited);
    let limit = report.limit.clone().unwrap();
    assert!(limit.starts_with("loss"), "the fake's overload is lost moves: {limit}");
    assert!(report.summary().contains("capacity: 10 players"), "{}", report.summary());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["capacity"], 10);
    assert_eq!(json["steps"].as_array().unwrap().len(), 5);
}
