//! `--find-capacity`: how many players the server holds at a round trip an operator can live
//! with, and what stopped it at the next step.
//!
//! The search ramps the number of bots by `--capacity-step` from `--capacity-start`, holding
//! each step for a whole run (join, warm-up, `--duration`, leave), until a step fails; then it
//! bisects between the last step that passed and the first that failed, `--capacity-refine`
//! times. A step passes when every bot joined, the move round trip p99 (from intended send
//! times) is within `--rtt-p99-max`, and loss is within `--max-loss`. The capacity is the
//! largest step that passed.
//!
//! A failed step names what failed (joins, loss, latency) and why, from figures taken in the
//! same step: the tester's own send lag and CPU (when the tester is the limit the search says
//! so, and its number is a floor on the server's capacity, not the server's capacity), and
//! the server's CPU from its `STATS_REPLY` next to the machine's cores.
//!
//! [`Search`] and [`judge_step`] are pure (no clock, no sockets), so the search's logic is
//! tested on its own; [`find`] runs it.

use crate::cli::Cli;
use crate::metrics::Summary;
use crate::progress::Progress;
use crate::run::{self, RunResult};
use serde::Serialize;
use std::time::Duration;

/// What a step must meet, and how the ramp goes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CapacityPlan {
    /// Bots in the first step.
    pub start: u32,
    /// Bots added per step while ramping.
    pub step: u32,
    /// Never try more than this.
    pub max: u32,
    /// Bisection steps after the first failure.
    pub refine: u32,
    /// A passing step's move round trip p99 is at most this, µs.
    pub rtt_p99_max_us: u64,
    /// A passing step's loss is at most this share of measured moves.
    pub max_loss: f64,
}

/// What one step measured, as the search needs it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepFigures {
    /// Bots asked for.
    pub players: u32,
    /// Bots that joined.
    pub joined: u32,
    /// Move round trip from intended send time, µs.
    pub rtt_us: Summary,
    /// Unacknowledged share of measured moves.
    pub loss: f64,
    /// How late the tester sent, µs.
    pub send_lag_us: Summary,
    /// The tester's CPU while playing, in cores (CPU seconds per second).
    pub tester_cpu_cores: f64,
    /// The tester's driver threads.
    pub tester_threads: u32,
    /// The server's CPU over the step, in cores, when its figures were read.
    pub server_cpu_cores: Option<f64>,
    /// Cores on this machine.
    pub machine_cores: u32,
}

/// A step's verdict.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepVerdict {
    /// Whether the step met every bound.
    pub passed: bool,
    /// What failed (joins, loss, latency), with the figures.
    pub failed: Vec<String>,
    /// Why, as far as the step's figures tell.
    pub cause: Option<String>,
    /// Whether the tester itself was the limit (its figures then bound the server's capacity
    /// from below only).
    pub tester_limited: bool,
}

/// The tester is the limit when its own lateness takes more than this share of the round
/// trip budget...
const TESTER_LAG_SHARE: f64 = 0.25;
/// ...or its driver threads are this busy.
const TESTER_BUSY: f64 = 0.9;
/// The machine is saturated when server and tester together use this share of its cores.
const MACHINE_BUSY: f64 = 0.9;

/// Judges one step against the plan.
pub fn judge_step(f: &StepFigures, plan: &CapacityPlan) -> StepVerdict {
    let mut failed = Vec::new();
    if f.joined < f.players {
        failed.push(format!("joins: {} of {} bots joined", f.joined, f.players));
    }
    if f.loss > plan.max_loss {
        failed.push(format!("loss: {:.3}% of moves unacknowledged (bound {:.3}%)", f.loss * 100.0, plan.max_loss * 100.0));
    }
    if f.rtt_us.count == 0 {
        failed.push("latency: no move was acknowledged".into());
    } else if f.rtt_us.p99 > plan.rtt_p99_max_us {
        failed.push(format!("latency: round trip p99 {} µs (bound {} µs)", f.rtt_us.p99, plan.rtt_p99_max_us));
    }
    if failed.is_empty() {
        return StepVerdict { passed: true, ..StepVerdict::default() };
    }
    let lag_budget = (plan.rtt_p99_max_us as f64 * TESTER_LAG_SHARE) as u64;
    let tester_busy = f.tester_threads > 0 && f.tester_cpu_cores >= TESTER_BUSY * f64::from(f.tester_threads);
    let tester_late = f.send_lag_us.count > 0 && f.send_lag_us.p99 > lag_budget;
    let cores = f64::from(f.machine_cores.max(1));
    let cause = if tester_late || tester_busy {
        Some(format!(
            "tester: it sent {} µs late at p99 (budget {lag_budget} µs) using {:.2} cores on {} driver thread(s); give it more --threads, its own cores (--pin) or another machine",
            f.send_lag_us.p99, f.tester_cpu_cores, f.tester_threads
        ))
    } else {
        match f.server_cpu_cores {
            Some(server) if server + f.tester_cpu_cores >= MACHINE_BUSY * cores => {
                Some(format!("CPU: the machine is saturated (server {server:.2} cores, tester {:.2} cores of {cores})", f.tester_cpu_cores))
            }
            Some(server) => Some(format!(
                "server: it fell short with CPU to spare (server {server:.2} cores, tester {:.2} cores of {cores}); look at its locks, queues and socket buffers",
                f.tester_cpu_cores
            )),
            None => Some("unknown: the server's CPU was not read (no --admin-key)".into()),
        }
    };
    StepVerdict { passed: false, failed, cause, tester_limited: tester_late || tester_busy }
}

/// The search's state: the steps tried and their outcomes, in order.
#[derive(Clone, Debug)]
pub struct Search {
    plan: CapacityPlan,
    tried: Vec<(u32, bool)>,
    refined: u32,
}

impl Search {
    /// A search by `plan` (start and step at least 1).
    pub fn new(plan: CapacityPlan) -> Search {
        let plan = CapacityPlan { start: plan.start.max(1), step: plan.step.max(1), max: plan.max.max(1), ..plan };
        Search { plan, tried: Vec::new(), refined: 0 }
    }

    /// Records the outcome of the step `players`.
    pub fn record(&mut self, players: u32, passed: bool) {
        if self.first_failure().is_some_and(|hi| players < hi) {
            self.refined += 1;
        }
        self.tried.push((players, passed));
    }

    /// The largest count that passed.
    pub fn capacity(&self) -> u32 {
        let hi = self.first_failure().unwrap_or(u32::MAX);
        self.tried.iter().filter(|(n, ok)| *ok && *n < hi).map(|(n, _)| *n).max().unwrap_or(0)
    }

    /// The smallest count that failed.
    pub fn first_failure(&self) -> Option<u32> {
        self.tried.iter().filter(|(_, ok)| !ok).map(|(n, _)| *n).min()
    }

    /// The next count to try, or `None` when the search is over: ramping until a failure
    /// or `max`, then bisecting `refine` times (never closer than one bot).
    pub fn next(&self) -> Option<u32> {
        let p = &self.plan;
        let Some(hi) = self.first_failure() else {
            let next = self.tried.iter().map(|(n, _)| *n).max().map_or(p.start, |n| n.saturating_add(p.step));
            return (next <= p.max).then_some(next);
        };
        if self.refined >= p.refine {
            return None;
        }
        let lo = self.capacity();
        let mid = lo + (hi - lo) / 2;
        (mid > lo && mid < hi && !self.tried.iter().any(|(n, _)| *n == mid)).then_some(mid)
    }

    /// The steps tried, in order.
    pub fn tried(&self) -> &[(u32, bool)] {
        &self.tried
    }
}

/// One step of a finished search.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// What it measured.
    pub figures: StepFigures,
    /// How it was judged.
    pub verdict: StepVerdict,
}

/// A finished search.
#[derive(Clone, Debug, Serialize)]
pub struct CapacityReport {
    /// Scenario searched.
    pub scenario: &'static str,
    /// Server address.
    pub server_address: String,
    /// The plan.
    pub plan: CapacityPlan,
    /// Measured time per step, seconds.
    pub step_duration_s: f64,
    /// The largest count that passed (0 if none did).
    pub capacity: u32,
    /// Whether the search stopped at `max` with every step passing (the capacity is then
    /// at least `max`).
    pub reached_max: bool,
    /// Whether the first failing step was the tester's limit rather than the server's.
    pub tester_limited: bool,
    /// Why the first failing step failed.
    pub limit: Option<String>,
    /// Every step, in the order tried.
    pub steps: Vec<Step>,
}

impl CapacityReport {
    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A table of the steps and the verdict, for people.
    pub fn summary(&self) -> String {
        use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
        let mut t = Table::new();
        t.load_style(UTF8_FULL_CONDENSED).set_header(vec![
            "players",
            "rtt p50 µs",
            "rtt p99 µs",
            "loss %",
            "send lag p99 µs",
            "tester cores",
            "server cores",
            "result",
        ]);
        let mut steps: Vec<&Step> = self.steps.iter().collect();
        steps.sort_by_key(|s| s.figures.players);
        for s in steps {
            let f = &s.figures;
            t.add_row(vec![
                f.players.to_string(),
                f.rtt_us.p50.to_string(),
                f.rtt_us.p99.to_string(),
                format!("{:.3}", f.loss * 100.0),
                f.send_lag_us.p99.to_string(),
                format!("{:.2}", f.tester_cpu_cores),
                f.server_cpu_cores.map_or("-".into(), |c| format!("{c:.2}")),
                if s.verdict.passed {
                    "pass".into()
                } else {
                    format!("FAIL {}; {}", s.verdict.failed.join("; "), s.verdict.cause.clone().unwrap_or_default())
                },
            ]);
        }
        let bound = format!("round trip p99 ≤ {} µs, loss ≤ {:.2}%", self.plan.rtt_p99_max_us, self.plan.max_loss * 100.0);
        let verdict = if self.reached_max {
            format!("capacity: at least {} players ({}; every step up to --capacity-max passed)", self.capacity, bound)
        } else if self.tester_limited {
            format!(
                "capacity: at least {} players ({}); the tester was the limit, not the server: {}",
                self.capacity,
                bound,
                self.limit.clone().unwrap_or_default()
            )
        } else {
            format!("capacity: {} players ({}); limit: {}", self.capacity, bound, self.limit.clone().unwrap_or_default())
        };
        format!(
            "mmo-loadtest --find-capacity: scenario {}, server {}\n{t}\n{verdict}\n",
            self.scenario,
            self.server_address,
            verdict = verdict
        )
    }
}

fn figures(r: &RunResult) -> StepFigures {
    let t = &r.totals;
    let server_cpu_cores = match (&r.server_before, &r.server_after, r.server_window_s) {
        (Some(b), Some(a), Some(window)) if window > 0.0 => {
            let d = a.deltas(b);
            let us = d.get("cpu_user_us").copied().unwrap_or(0) + d.get("cpu_system_us").copied().unwrap_or(0);
            Some(us.max(0) as f64 / 1e6 / window)
        }
        _ => None,
    };
    StepFigures {
        players: r.cli.players,
        joined: r.joined as u32,
        rtt_us: t.latencies.move_rtt.summary(),
        loss: crate::checks::loss_ratio(t.moves_sent, t.acks),
        send_lag_us: t.latencies.send_lag.summary(),
        tester_cpu_cores: if r.play_wall_s > 0.0 {
            (r.play_usage.cpu_user_us + r.play_usage.cpu_system_us) as f64 / 1e6 / r.play_wall_s
        } else {
            0.0
        },
        tester_threads: r.driver.threads,
        server_cpu_cores,
        machine_cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as u32,
    }
}

/// Runs the search `cli` describes (its scenario, duration and bounds), one full run per
/// step. `Err` is a setup failure of a step (no server, no admin reply where needed).
pub async fn find(cli: &Cli, progress: &Progress) -> anyhow::Result<CapacityReport> {
    let plan = CapacityPlan {
        start: cli.capacity_start,
        step: cli.capacity_step,
        max: cli.capacity_max,
        refine: cli.capacity_refine,
        rtt_p99_max_us: cli.rtt_p99_max.as_micros() as u64,
        max_loss: cli.max_loss,
    };
    let mut search = Search::new(plan);
    let mut steps = Vec::new();
    // Every step is a whole run; the loop is bounded by the ramp (max / step) plus `refine`.
    let bound = (plan.max / plan.step.max(1)) as usize + plan.refine as usize + 2;
    for _ in 0..bound {
        let Some(players) = search.next() else { break };
        progress.note(&format!("capacity step: {players} players"));
        let mut step_cli = cli.clone();
        step_cli.players = players;
        step_cli.json = None;
        step_cli.out_dir = None;
        let r = run::run(step_cli, progress).await?;
        let f = figures(&r);
        let verdict = judge_step(&f, &plan);
        progress.note(&format!(
            "  {players} players: round trip p50 {} µs, p99 {} µs, loss {:.3}%: {}",
            f.rtt_us.p50,
            f.rtt_us.p99,
            f.loss * 100.0,
            if verdict.passed { "pass" } else { "fail" }
        ));
        search.record(players, verdict.passed);
        steps.push(Step { figures: f, verdict });
        if r.interrupted {
            break;
        }
        // Let the server's sessions close and its queues empty before the next step.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let first_fail = search.first_failure();
    let limiting = steps.iter().find(|s| Some(s.figures.players) == first_fail);
    Ok(CapacityReport {
        scenario: cli.scenario.name(),
        server_address: cli.server.to_string(),
        plan,
        step_duration_s: cli.duration.as_secs_f64(),
        capacity: search.capacity(),
        reached_max: first_fail.is_none(),
        tester_limited: limiting.is_some_and(|s| s.verdict.tester_limited),
        limit: limiting.map(|s| format!("{} ({})", s.verdict.failed.join("; "), s.verdict.cause.clone().unwrap_or_default())),
        steps,
    })
}
