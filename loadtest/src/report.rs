//! What a run reports: a JSON document (`--json`) for scripts and the compare harness, and a
//! summary table on stdout for people.
//!
//! JSON keys (stable; scripts read them): `players`, `duration_s`, `moves_sent`,
//! `acks_received`, `loss_ratio`, `rtt_us` {`count`, `min`, `mean`, `p50`, `p90`, `p99`,
//! `p999`, `max`}, `server` (every figure of the final `STATS_REPLY`), `server_delta` (after
//! minus before), `server_missing` (expected names the server did not report), `checks` and
//! `passed`; raid runs add `raid_spawn_ms` {`median`, `max`}, `rtt_us_during_raid`,
//! `rtt_us_between_raids` and `combat` (the bots' attacks: `attacks_sent`, `answers`,
//! `late_answers`, `landed`, `kills`, `damage`, `refused` by reason, `unexpected`,
//! `kill_notices`, and their loot: `claims_sent`, `claim_resends`, `loot_claimed`,
//! `loot_gold`, `loot_items`, `claim_repeats`, `claim_refused` by reason,
//! `claims_unanswered`, `loot_left`, `claim_late_answers`), and `loot_trades` (the raid bots' trades of their loot: the economy
//! ledger below); economy and hostile runs add an `economy` or `hostile` object with
//! their ledger and their checks.

use crate::bot::FloodTally;
use crate::checks::{Check, all_passed};
use crate::cli::TesterSched;
use crate::combat::CombatTally;
use crate::driver::DriverReport;
use crate::economy::EconomyTally;
use crate::hostile::ProbeReport;
use crate::metrics::Summary;
use crate::protocol::{AttackRefusal, MoveResult};
use crate::raid::{RaidSummary, SpawnMs};
use crate::run::RunResult;
use crate::system::{HostSteal, ProcessUsage, UdpCounters};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::Serialize;
use std::collections::BTreeMap;

/// Snapshot figures.
#[derive(Clone, Debug, Serialize)]
pub struct AoiReport {
    /// Snapshots received in the measured window.
    pub snapshots: u64,
    /// Time between a bot's consecutive snapshots, µs.
    pub interarrival_us: Summary,
}

/// Things that should not happen, counted.
#[derive(Clone, Debug, Serialize)]
pub struct Anomalies {
    /// Acks for an already acknowledged move.
    pub duplicate_acks: u64,
    /// Acks too old to match.
    pub late_acks: u64,
    /// Acks for a sequence never sent.
    pub unexpected_acks: u64,
    /// Acks not echoing their move's `client_time_ms`.
    pub echo_mismatches: u64,
    /// Datagrams that did not decode.
    pub decode_errors: u64,
    /// Unexpected message types.
    pub unexpected_messages: u64,
    /// Receive errors (e.g. ICMP port unreachable).
    pub recv_errors: u64,
    /// Send errors.
    pub send_errors: u64,
    /// The most overdue moves one bot sent at once (the tester fell behind by this many
    /// intervals; their latency counts from their intended times).
    pub max_behind: u64,
}

/// The economy scenario's own results.
#[derive(Clone, Debug, Serialize)]
pub struct EconomyReport {
    /// The bots' ledger.
    pub ledger: EconomyTally,
    /// Transaction round trips from the first send's intended time, µs.
    pub rtt_us: Summary,
    /// The economy checks.
    pub checks: Vec<Check>,
}

/// The hostile scenario's own results.
#[derive(Clone, Debug, Serialize)]
pub struct HostileReport {
    /// Datagrams sent per expected drop reason.
    pub sent: BTreeMap<String, u64>,
    /// The flood bot.
    pub flood: FloodTally,
    /// Probing for address-mismatch sockets.
    pub probe: ProbeReport,
    /// The drop checks.
    pub checks: Vec<Check>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Scenario name.
    pub scenario: &'static str,
    /// Server address.
    pub server_address: String,
    /// Bots asked for.
    pub players: u32,
    /// Bots that joined.
    pub players_joined: usize,
    /// Join failures by reason.
    pub join_failures: BTreeMap<String, u64>,
    /// Bot driver threads.
    pub threads: u32,
    /// The tester threads' scheduling class (`--sched`): `normal` or `idle`.
    pub sched: &'static str,
    /// Measured time asked for (`--duration`), seconds.
    pub duration_s: f64,
    /// Measured time actually run, seconds (less than `duration_s` if interrupted).
    pub measured_s: f64,
    /// Whether Ctrl-C stopped the run early.
    pub interrupted: bool,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Time between one bot's moves, ms.
    pub move_interval_ms: u64,
    /// Measured moves sent.
    pub moves_sent: u64,
    /// Of those, acknowledged.
    pub acks_received: u64,
    /// Of those, refused by the engine.
    pub moves_rejected: u64,
    /// Refusals by result name.
    pub rejected_by_result: BTreeMap<String, u64>,
    /// Unacknowledged share of measured moves.
    pub loss_ratio: f64,
    /// The loss bound.
    pub max_loss: f64,
    /// Move round trips from intended send time, µs.
    pub rtt_us: Summary,
    /// Move round trips from the actual send, µs: a diagnostic that leaves out how late the
    /// tester sent (see `send_lag_us`), so it is not free of coordinated omission.
    pub rtt_us_from_actual_send: Summary,
    /// How late moves went out after their intended time, µs (the driver thread's wake-up
    /// and the sends queued before it on the same grid point; included in `rtt_us` by
    /// design).
    pub send_lag_us: Summary,
    /// Join handshake times, µs.
    pub join_us: Summary,
    /// Area-of-interest snapshots.
    pub aoi: AoiReport,
    /// Anomalies.
    pub anomalies: Anomalies,
    /// `LEAVE`s acknowledged / not.
    pub leaves: BTreeMap<&'static str, u64>,
    /// The load tester's own CPU and peak RSS over the run.
    pub client: ProcessUsage,
    /// The load tester's CPU while the bots played (joins and leaves left out).
    pub client_play: ProcessUsage,
    /// The load tester's CPU per bot per second of play, µs (user plus system): what one
    /// more bot costs the tester.
    pub client_cpu_us_per_bot_s: f64,
    /// The bot driver threads: wake-ups, sleeps and their lateness, spinning, reads.
    pub driver: DriverReport,
    /// The kernel's UDP counters over the run (machine-wide; `rcvbuf_errors` are datagrams
    /// loopback lost to a full socket buffer).
    pub kernel_udp: Option<UdpCounters>,
    /// The hypervisor's steal over the run, joins and leaves included (`/proc/stat`, all
    /// CPUs), and its share of the wall time times the CPUs online. Zero on bare metal.
    pub host_steal: Option<HostSteal>,
    /// Raid bursts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid: Option<RaidSummary>,
    /// Server-measured spawn time per burst, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raid_spawn_ms: Option<SpawnMs>,
    /// Move round trips overlapping a raid window, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us_during_raid: Option<Summary>,
    /// Move round trips between raid windows, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us_between_raids: Option<Summary>,
    /// The raid bots' attacks and what they got.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub combat: Option<CombatTally>,
    /// Economy results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub economy: Option<EconomyReport>,
    /// The raid bots' trades of their loot (their economy ledger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loot_trades: Option<EconomyTally>,
    /// Hostile results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostile: Option<HostileReport>,
    /// The server's figures after the run.
    pub server: BTreeMap<String, u64>,
    /// After minus before.
    pub server_delta: BTreeMap<String, i64>,
    /// Expected figures the server did not report.
    pub server_missing: Vec<String>,
    /// Why the server's figures are missing, if they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    /// Things that make the figures harder to read, though no check failed on them (the
    /// tester falling behind its own schedule, kernel buffer drops, missing server figures).
    pub warnings: Vec<String>,
    /// Every check.
    pub checks: Vec<Check>,
    /// Whether every check passed.
    pub passed: bool,
}

/// Share of the machine's CPU time (wall time times CPUs) stolen by the hypervisor above
/// which the report warns.
pub const STOLEN_SHARE_WARN: f64 = 0.02;

/// Send lag p99 above which the report warns that the tester fell behind, µs.
pub const FELL_BEHIND_LAG_US: u64 = 1000;

/// Warnings for a run's figures; see [`Report::warnings`].
fn warnings(r: &RunResult) -> Vec<String> {
    let mut w = Vec::new();
    let lag = r.totals.latencies.send_lag.summary();
    // The driver threads keep moves within tens of microseconds of schedule; a millisecond
    // late at p99 means the tester, not the server, is shaping the tail.
    if lag.count > 0 && lag.p99 > FELL_BEHIND_LAG_US {
        w.push(format!(
            "the tester itself fell behind: 1% of moves went out more than {:.1} ms after their intended time (max {:.1} ms); that delay is part of rtt_us by design (no coordinated omission), so these round trips measure the tester as much as the server. Give it more --threads (or its own cores with --pin) or fewer --players, or see rtt_us_from_actual_send",
            lag.p99 as f64 / 1e3,
            lag.max as f64 / 1e3
        ));
    }
    if r.driver.unstamped > 0 {
        w.push(format!(
            "{} of {} datagrams came without a kernel receive timestamp; their arrival is when the driver read them (up to its 5 ms read period later)",
            r.driver.unstamped, r.driver.datagrams
        ));
    }
    if !r.driver.pin_errors.is_empty() {
        w.push(format!("driver threads ran unpinned: {}", r.driver.pin_errors.join("; ")));
    }
    if let Some(u) = &r.udp
        && (u.rcvbuf_errors > 0 || u.sndbuf_errors > 0)
    {
        w.push(format!(
            "the kernel dropped {} received and {} sent UDP datagrams on full socket buffers during the run (machine-wide)",
            u.rcvbuf_errors, u.sndbuf_errors
        ));
    }
    if let Some(h) = &r.host_steal
        && h.share > STOLEN_SHARE_WARN
    {
        w.push(format!(
            "the hypervisor took {:.1}% of the machine's CPU time (steal, {} ms): a datagram whose CPU was taken waited with it, so the tail latencies measure the host as well as the server",
            h.share * 100.0,
            h.steal_ms
        ));
    }
    let economy = &r.totals.economy;
    if economy.not_started > 0 {
        let rtt = r.totals.latencies.economy_rtt.summary();
        w.push(format!(
            "{} of {} economy transactions the schedule had due were not started by the run's end: a bot keeps one in flight, and the answers came too slowly (economy round trip p50 {:.1} ms, p99 {:.1} ms); the books are checked on those started, and economy_schedule_kept fails past {:.0}%. Fewer --players or a longer --economy-interval-ms fit the server",
            economy.not_started,
            economy.started + economy.not_started,
            rtt.p50 as f64 / 1e3,
            rtt.p99 as f64 / 1e3,
            crate::checks::ECONOMY_NOT_STARTED_MAX * 100.0
        ));
    }
    if let Some(after) = &r.server_after {
        let missing = after.missing();
        if !missing.is_empty() {
            w.push(format!("the server did not report {} expected figures: {}", missing.len(), missing.join(" ")));
        }
    }
    w
}

/// The tester's play CPU per bot per second, µs.
fn cpu_per_bot_s(r: &RunResult) -> f64 {
    let bot_s = r.joined as f64 * r.play_wall_s;
    if bot_s > 0.0 { (r.play_usage.cpu_user_us + r.play_usage.cpu_system_us) as f64 / bot_s } else { 0.0 }
}

fn result_name(byte: usize) -> String {
    MoveResult::ALL.get(byte).map(|r| format!("{r:?}")).unwrap_or_else(|| format!("result_{byte}"))
}

impl Report {
    /// Builds the report of a run.
    pub fn new(r: &RunResult) -> Report {
        let t = &r.totals;
        let cli = &r.cli;
        let (server, server_delta, server_missing) = match (&r.server_before, &r.server_after) {
            (Some(before), Some(after)) => (
                after.values().clone(),
                after.deltas(before).into_iter().map(|(k, v)| (k, v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64)).collect(),
                after.missing(),
            ),
            (Some(before), None) => (before.values().clone(), BTreeMap::new(), before.missing()),
            _ => (BTreeMap::new(), BTreeMap::new(), Vec::new()),
        };
        let raid = r.raid.is_some();
        let pick = |pred: &dyn Fn(&str) -> bool| r.checks.iter().filter(|c| pred(&c.name)).cloned().collect::<Vec<_>>();
        Report {
            scenario: cli.scenario.name(),
            server_address: cli.server.to_string(),
            players: cli.players,
            players_joined: r.joined,
            join_failures: r.join_failures.clone(),
            threads: cli.driver_threads() as u32,
            sched: cli.sched.name(),
            duration_s: cli.duration.as_secs_f64(),
            measured_s: r.measured_s,
            interrupted: r.interrupted,
            warmup_s: cli.warmup.as_secs_f64(),
            move_interval_ms: cli.move_interval_ms,
            moves_sent: t.moves_sent,
            acks_received: t.acks,
            moves_rejected: t.rejected_total(),
            rejected_by_result: t.rejected.iter().enumerate().filter(|(_, n)| **n > 0).map(|(i, n)| (result_name(i), *n)).collect(),
            loss_ratio: crate::checks::loss_ratio(t.moves_sent, t.acks),
            max_loss: cli.max_loss,
            rtt_us: t.latencies.move_rtt.summary(),
            rtt_us_from_actual_send: t.latencies.move_rtt_from_send.summary(),
            send_lag_us: t.latencies.send_lag.summary(),
            join_us: r.join_us.summary(),
            aoi: AoiReport { snapshots: t.aoi_snapshots, interarrival_us: t.latencies.aoi_gap.summary() },
            anomalies: Anomalies {
                duplicate_acks: t.duplicate_acks,
                late_acks: t.late_acks,
                unexpected_acks: t.unexpected_acks,
                echo_mismatches: t.echo_mismatches,
                decode_errors: t.decode_errors,
                unexpected_messages: t.unexpected_messages,
                recv_errors: t.recv_errors,
                send_errors: t.send_errors,
                max_behind: t.max_behind,
            },
            leaves: BTreeMap::from([("acked", r.leaves_acked), ("unacked", r.leaves_unacked)]),
            client: r.usage,
            client_play: r.play_usage,
            client_cpu_us_per_bot_s: cpu_per_bot_s(r),
            driver: r.driver.clone(),
            kernel_udp: r.udp,
            host_steal: r.host_steal,
            raid_spawn_ms: r.raid.as_ref().map(|s| s.spawn_ms),
            raid: r.raid.clone(),
            rtt_us_during_raid: raid.then(|| t.latencies.move_rtt_raid.summary()),
            rtt_us_between_raids: raid.then(|| t.latencies.move_rtt_calm.summary()),
            combat: (raid && t.combat.attacks_sent > 0).then_some(t.combat),
            loot_trades: (raid && t.economy.started > 0).then_some(t.economy),
            economy: (cli.scenario == crate::cli::Scenario::Economy).then(|| EconomyReport {
                ledger: t.economy,
                rtt_us: t.latencies.economy_rtt.summary(),
                checks: pick(&|n| n.starts_with("economy_") || n == "server_figures"),
            }),
            hostile: r.hostile.as_ref().map(|h| HostileReport {
                sent: h.sent.by_reason().into_iter().map(|(k, v)| (k.name().to_string(), v)).collect(),
                flood: h.flood,
                probe: h.probe,
                checks: pick(&|n| n.starts_with("drop_") || n == "address_mismatch_tested" || n == "server_figures"),
            }),
            server,
            server_delta,
            server_missing,
            server_error: r.server_error.clone(),
            warnings: warnings(r),
            passed: all_passed(&r.checks),
            checks: r.checks.clone(),
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The summary tables for people.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "mmo-loadtest: scenario {}, {} of {} bots joined, {:.1} s measured after {:.1} s warm-up, server {}{}\n",
            self.scenario,
            self.players_joined,
            self.players,
            self.measured_s,
            self.warmup_s,
            self.server_address,
            if self.sched == TesterSched::Idle.name() { ", tester in SCHED_IDLE" } else { "" }
        ));

        let mut lat = Table::new();
        lat.load_style(UTF8_FULL_CONDENSED).set_header(vec!["latency (µs)", "count", "p50", "p90", "p99", "p99.9", "max"]);
        let mut row = |name: &str, s: &Summary| {
            if s.count > 0 {
                lat.add_row(vec![
                    name.to_string(),
                    s.count.to_string(),
                    s.p50.to_string(),
                    s.p90.to_string(),
                    s.p99.to_string(),
                    s.p999.to_string(),
                    s.max.to_string(),
                ]);
            }
        };
        row("move round trip", &self.rtt_us);
        row("  from actual send", &self.rtt_us_from_actual_send);
        row("move send lag", &self.send_lag_us);
        if let Some(s) = &self.rtt_us_during_raid {
            row("  during raids", s);
        }
        if let Some(s) = &self.rtt_us_between_raids {
            row("  between raids", s);
        }
        if let Some(e) = &self.economy {
            row("economy round trip", &e.rtt_us);
        }
        row("AoI inter-arrival", &self.aoi.interarrival_us);
        row("join handshake", &self.join_us);
        out.push_str(&format!("{lat}\n"));

        let mut figures = Table::new();
        figures.load_style(UTF8_FULL_CONDENSED).set_header(vec!["figure", "value"]);
        let mut fig = |k: &str, v: String| {
            figures.add_row(vec![k.to_string(), v]);
        };
        fig("moves sent / acked", format!("{} / {}", self.moves_sent, self.acks_received));
        fig("loss", format!("{:.4}% (bound {:.4}%)", self.loss_ratio * 100.0, self.max_loss * 100.0));
        if self.moves_rejected > 0 {
            fig("moves refused", format!("{} {:?}", self.moves_rejected, self.rejected_by_result));
        }
        fig("AoI snapshots", self.aoi.snapshots.to_string());
        if !self.join_failures.is_empty() {
            fig("join failures", format!("{:?}", self.join_failures));
        }
        fig(
            "tester CPU user / system",
            format!(
                "{:.2} s / {:.2} s, peak RSS {} MiB",
                self.client.cpu_user_us as f64 / 1e6,
                self.client.cpu_system_us as f64 / 1e6,
                self.client.peak_rss_kb / 1024
            ),
        );
        fig(
            "tester CPU while playing",
            format!(
                "{:.2} s over {} driver thread(s): {:.1} µs per bot per second",
                (self.client_play.cpu_user_us + self.client_play.cpu_system_us) as f64 / 1e6,
                self.driver.threads,
                self.client_cpu_us_per_bot_s
            ),
        );
        fig(
            "driver wake-ups / sleeps late p99 / spin",
            format!("{} / {} µs / {:.2} s", self.driver.wakes, self.driver.oversleep_us.summary().p99, self.driver.spin_us as f64 / 1e6),
        );
        if let Some(u) = &self.kernel_udp {
            fig("kernel UDP buffer drops (machine)", format!("receive {}, send {}", u.rcvbuf_errors, u.sndbuf_errors));
        }
        if let Some(h) = &self.host_steal {
            fig(
                "CPU time stolen by the hypervisor (machine)",
                format!("{} ms of {} CPUs x {:.1} s, {:.2}%", h.steal_ms, h.cpus, h.wall_ms as f64 / 1e3, h.share * 100.0),
            );
        }
        if let (Some(m), Some(x)) = (&self.raid_spawn_ms, &self.raid) {
            fig("raid bursts (results / triggers)", format!("{} / {}", x.results, x.triggers));
            fig("raid spawn (server) median / max", format!("{:.3} ms / {:.3} ms", m.median, m.max));
        }
        if let Some(c) = &self.combat {
            fig(
                "attacks sent / answered (late) / landed",
                format!(
                    "{} / {} ({}) / {} ({} kills, {} hp taken; {} kill notices)",
                    c.attacks_sent, c.answers, c.late_answers, c.landed, c.kills, c.damage, c.kill_notices
                ),
            );
            fig(
                "attacks refused: dead / range / cooldown / other",
                format!(
                    "{} / {} / {} / {}",
                    c.refused_for(AttackRefusal::TargetDead),
                    c.refused_for(AttackRefusal::OutOfRange),
                    c.refused_for(AttackRefusal::Cooldown),
                    c.refused_total()
                        - c.refused_for(AttackRefusal::TargetDead)
                        - c.refused_for(AttackRefusal::OutOfRange)
                        - c.refused_for(AttackRefusal::Cooldown)
                ),
            );
            if let Some(t) = &self.loot_trades {
                fig(
                    "loot trades offered / accepted / declined",
                    format!(
                        "{} / {} / {} ({} refused, {} resends)",
                        t.offers_applied, t.accepts_applied, t.declines_applied, t.refused, t.retransmits
                    ),
                );
            }
            fig(
                "loot claimed / gold / items",
                format!(
                    "{} / {} / {} ({} claims sent, {} resends, {} refused, {} unanswered)",
                    c.loot_claimed,
                    c.loot_gold,
                    c.loot_items,
                    c.claims_sent,
                    c.claim_resends,
                    c.claims_refused_total(),
                    c.claims_unanswered
                ),
            );
        }
        if let Some(e) = &self.economy {
            let l = &e.ledger;
            fig(
                "economy transactions",
                format!(
                    "{} started, {} applied, {} refused, {} unknown; {} resends, {} duplicates; {} due but not started by the run's end",
                    l.started, l.applied, l.refused, l.unknown, l.retransmits, l.deliberate_duplicates, l.not_started
                ),
            );
        }
        if let Some(h) = &self.hostile {
            fig("hostile datagrams sent", format!("{:?}", h.sent));
        }
        for name in ["engine_moves_applied", "drop_rate_limited_player", "datagrams_received", "datagrams_sent"] {
            if let Some(d) = self.server_delta.get(name) {
                fig(&format!("server Δ {name}"), d.to_string());
            }
        }
        for name in ["update_latency_us_p50", "update_latency_us_p99", "update_latency_us_p999", "update_service_us_p99", "peak_rss_kb"] {
            if let Some(v) = self.server.get(name) {
                fig(&format!("server {name}"), v.to_string());
            }
        }
        if let (Some(u), Some(s)) = (self.server_delta.get("cpu_user_us"), self.server_delta.get("cpu_system_us")) {
            fig("server CPU user / system (run)", format!("{:.2} s / {:.2} s", *u as f64 / 1e6, *s as f64 / 1e6));
        }
        if !self.server_missing.is_empty() {
            fig("server figures missing", self.server_missing.join(" "));
        }
        if let Some(e) = &self.server_error {
            fig("server figures", e.clone());
        }
        out.push_str(&format!("{figures}\n"));

        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        let mut checks = Table::new();
        checks.load_style(UTF8_FULL_CONDENSED).set_header(vec!["check", "result", "detail"]);
        for c in &self.checks {
            checks.add_row(vec![c.name.clone(), if c.passed { "pass".into() } else { "FAIL".into() }, c.detail.clone()]);
        }
        out.push_str(&format!("{checks}\n"));
        out.push_str(if self.passed { "result: PASS\n" } else { "result: FAIL\n" });
        out
    }
}
