//! `report/compare.json` (schema `mmo-compare/2`), `report/compare.md`, and the terminal
//! summary, from the runs of every row: each figure's median over the repeated plain runs with
//! its min and max, ratios of medians, and every row's cost above the null engine's floor.

use crate::{PerfRun, RowResult};
use anyhow::{Context, Result};
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// How the run was made (goes into both reports).
pub struct RunInfo {
    /// The exact command line.
    pub command: String,
    /// Quick mode.
    pub quick: bool,
    /// Seconds per phase.
    pub phase_s: u64,
    /// Bots.
    pub players: u32,
    /// Server I/O threads.
    pub server_threads: u32,
    /// Plain runs per row.
    pub repeats: u32,
    /// Perf runs per row (0: none).
    pub perf_repeats: u32,
    /// What was pinned where.
    pub pinning: String,
    /// Wall time of the whole comparison.
    pub elapsed_s: f64,
    /// Capacity searches found next to the report (`make capacity`), if any.
    pub capacity: Vec<Capacity>,
}

/// One capacity search (`mmo-loadtest --find-capacity`, run by `make capacity`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Capacity {
    /// `rust` or `baseline`.
    pub engine: String,
    /// `steady` or `raid`.
    pub scenario: String,
    /// The most players that passed a step.
    pub players: Option<u64>,
    /// Whether the load tester, not the server, stopped the search.
    pub tester_limited: bool,
    /// What failed the first step that failed.
    pub limit: String,
    /// The search file and when it was written (UTC).
    pub source: String,
}

/// Reads `<engine>-<scenario>.json` for both engines and both scenarios from `dir`.
pub fn read_capacity(dir: &Path) -> Vec<Capacity> {
    let mut out = Vec::new();
    for engine in ["rust", "baseline"] {
        for scenario in ["steady", "raid"] {
            let path = dir.join(format!("{engine}-{scenario}.json"));
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
            // "2026-11-24T05:54:00Z" -> "2026-11-24 05:54 UTC", as the machine line writes dates.
            let written = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .map_or("?".to_string(), |t| format!("{} UTC", humantime::format_rfc3339_seconds(t).to_string()[..16].replace('T', " ")));
            out.push(Capacity {
                engine: engine.into(),
                scenario: scenario.into(),
                players: v.get("capacity").and_then(Value::as_u64),
                tester_limited: v.get("tester_limited").and_then(Value::as_bool).unwrap_or(false),
                limit: v.get("limit").and_then(Value::as_str).unwrap_or("").to_string(),
                source: format!("{}, {written}", path.display()),
            });
        }
    }
    out
}

/// The server process's user + system CPU per update applied over one load tester run (its
/// `server_delta`), nanoseconds; `None` if the run applied no update or lacks a counter.
pub fn cpu_ns_per_update(run: Option<&Value>) -> Option<f64> {
    let d = |k: &str| get_f64(run, &["server_delta", k]);
    match (d("cpu_user_us"), d("cpu_system_us"), d("engine_moves_applied")) {
        (Some(u), Some(s), Some(n)) if n > 0.0 => Some((u + s) * 1000.0 / n),
        _ => None,
    }
}

fn get_f64(v: Option<&Value>, path: &[&str]) -> Option<f64> {
    let mut cur = v?;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_f64()
}

/// A row's figures: per plain run, and each numeric figure's median, min and max over them.
struct RowFigures {
    median: Map<String, Value>,
    min: Map<String, Value>,
    max: Map<String, Value>,
    runs: Vec<Map<String, Value>>,
}

/// The figures of one row, over its repeats: run `i` holds plain run `i`'s figures and perf
/// run `i`'s (either may be missing: there may be more of one kind than of the other).
fn figures(r: &RowResult) -> RowFigures {
    let n = r.plain_steady.len().max(r.plain_raid.len()).max(r.perf_runs.len()).max(1);
    RowFigures::of_runs((0..n).map(|i| figures_one(r, r.plain_steady.get(i), r.plain_raid.get(i), r.perf_runs.get(i))).collect())
}

impl RowFigures {
    /// Each figure's median, least and greatest over `runs`, leaf by leaf ([`combine`]).
    fn of_runs(runs: Vec<Map<String, Value>>) -> Self {
        RowFigures {
            median: combine(&runs, median),
            min: combine(&runs, |v| v.iter().copied().fold(f64::INFINITY, f64::min)),
            max: combine(&runs, |v| v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            runs,
        }
    }
}

/// The median of `v` (not empty): the middle value, or the mean of the two middle ones.
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 { v[mid] } else { (v[mid - 1] + v[mid]) / 2.0 }
}

/// Folds the runs' maps leaf by leaf: numbers through `pick` (runs without the figure left
/// out; `null` if none has it), nested objects recursively, anything else from the first run.
fn combine(runs: &[Map<String, Value>], pick: fn(&[f64]) -> f64) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(first) = runs.first() else { return out };
    for (key, value) in first {
        let column: Vec<&Value> = runs.iter().filter_map(|m| m.get(key)).collect();
        let combined = match value {
            Value::Object(_) => {
                let objects: Vec<Map<String, Value>> = column.iter().filter_map(|v| v.as_object().cloned()).collect();
                Value::Object(combine(&objects, pick))
            }
            Value::Number(_) | Value::Null if column.iter().all(|v| v.is_number() || v.is_null()) => {
                let numbers: Vec<f64> = column.iter().filter_map(|v| v.as_f64()).collect();
                if numbers.is_empty() { Value::Null } else { json!(pick(&numbers)) }
            }
            other => other.clone(),
        };
        out.insert(key.clone(), combined);
    }
    out
}

/// The figures of one row from one steady and one raid plain run, one perf run, and the row's
/// single heaptrack set, in the schema's names. `None` where a run failed or was skipped.
fn figures_one(r: &RowResult, steady: Option<&Value>, raid: Option<&Value>, perf: Option<&PerfRun>) -> Map<String, Value> {
    let mut m = Map::new();
    let put = |m: &mut Map<String, Value>, k: &str, v: Option<f64>| {
        m.insert(k.into(), v.map_or(Value::Null, |x| json!(x)));
    };
    let updates = get_f64(steady, &["server_delta", "engine_moves_applied"]);
    put(&mut m, "updates", updates);
    // The raw difference, signed: a negative one (the longer run made fewer calls) is noise
    // and is shown as it is, not clamped to zero.
    let (alloc_calls, per_update) = match (&r.heap_steady_short, &r.heap_steady_long) {
        (Some((short, u1)), Some((long, u2))) if u2 > u1 => {
            let calls = long.alloc_calls as f64 - short.alloc_calls as f64;
            (Some(calls), Some(calls / (u2 - u1) as f64))
        }
        _ => (None, None),
    };
    put(&mut m, "alloc_calls", alloc_calls);
    put(&mut m, "alloc_calls_per_update", per_update);
    // The smallest non-zero figure the method can show: one call over the updates' difference.
    let resolution = match (&r.heap_steady_short, &r.heap_steady_long) {
        (Some((_, u1)), Some((_, u2))) if u2 > u1 => Some(1.0 / (u2 - u1) as f64),
        _ => None,
    };
    put(&mut m, "alloc_calls_per_update_resolution", resolution);
    let peak_heap = [r.heap_steady_long.map(|h| h.0.peak_heap_bytes), r.heap_raid.map(|h| h.0.peak_heap_bytes)].into_iter().flatten().max();
    put(&mut m, "peak_heap_bytes", peak_heap.map(|b| b as f64));
    let rss_kb = [get_f64(steady, &["server", "peak_rss_kb"]), get_f64(raid, &["server", "peak_rss_kb"])]
        .into_iter()
        .flatten()
        .fold(None, |a: Option<f64>, b| Some(a.map_or(b, |a| a.max(b))));
    put(&mut m, "peak_rss_bytes", rss_kb.map(|kb| kb * 1024.0));
    let players = get_f64(steady, &["players"]).or_else(|| get_f64(raid, &["players"]));
    put(
        &mut m,
        "peak_rss_bytes_per_player",
        match (rss_kb, players) {
            (Some(kb), Some(p)) if p > 0.0 => Some(kb * 1024.0 / p),
            _ => None,
        },
    );
    let leaked = [r.heap_steady_long.map(|h| h.0.leaked_bytes), r.heap_raid.map(|h| h.0.leaked_bytes)].into_iter().flatten().max();
    put(&mut m, "leaked_bytes", leaked.map(|b| b as f64));
    put(&mut m, "cpu_ns_per_update", cpu_ns_per_update(steady));
    put(&mut m, "cpu_ns_per_update_raid", cpu_ns_per_update(raid));
    put(&mut m, "host_steal_share", get_f64(steady, &["host_steal", "share"]));
    put(&mut m, "host_steal_share_raid", get_f64(raid, &["host_steal", "share"]));
    for (key, field, run) in [
        ("update_latency_us", "update_latency_us", steady),
        ("update_latency_us_raid", "update_latency_us", raid),
        ("update_service_us", "update_service_us", steady),
        ("update_service_us_raid", "update_service_us", raid),
    ] {
        let lat = |p: &str| get_f64(run, &["server", &format!("{field}_{p}")]);
        m.insert(key.into(), json!({"p50": lat("p50"), "p99": lat("p99"), "p999": lat("p999")}));
    }
    m.insert("lock_waits".into(), json!({"steady": lock_waits(steady), "raid": lock_waits(raid)}));
    m.insert("system_calls".into(), json!({"steady": system_calls(steady), "raid": system_calls(raid)}));
    m.insert("rtt_us".into(), json!({"p50": get_f64(steady, &["rtt_us", "p50"]), "p99": get_f64(steady, &["rtt_us", "p99"]), "p999": get_f64(steady, &["rtt_us", "p999"])}));
    m.insert("rtt_us_raid_phase".into(), json!({"p50": get_f64(raid, &["rtt_us", "p50"]), "p99": get_f64(raid, &["rtt_us", "p99"]), "p999": get_f64(raid, &["rtt_us", "p999"])}));
    m.insert(
        "send_lag_us".into(),
        json!({"p99": get_f64(steady, &["send_lag_us", "p99"]), "p99_raid": get_f64(raid, &["send_lag_us", "p99"])}),
    );
    m.insert(
        "raid_spawn_ms".into(),
        json!({"median": get_f64(raid, &["raid_spawn_ms", "median"]), "max": get_f64(raid, &["raid_spawn_ms", "max"])}),
    );
    m.insert(
        "rtt_us_during_raid".into(),
        json!({"p50": get_f64(raid, &["rtt_us_during_raid", "p50"]), "p99": get_f64(raid, &["rtt_us_during_raid", "p99"]), "p999": get_f64(raid, &["rtt_us_during_raid", "p999"])}),
    );
    put(&mut m, "loss_ratio", get_f64(steady, &["loss_ratio"]));
    let phase = |h: Option<heaptrack_fig::HeapLike>| h.map_or(Value::Null, |h| json!(h));
    let steady_phase = r.heap_steady_long.map(|(h, u)| heaptrack_fig::HeapLike::new(&h, u, None));
    let raid_phase = r.heap_raid.map(|(h, u, bursts)| {
        let per_burst = match (&r.heap_steady_short, bursts) {
            (Some((short, _)), b) if b > 0 => Some((h.alloc_calls as f64 - short.alloc_calls as f64) / b as f64),
            _ => None,
        };
        heaptrack_fig::HeapLike::new(&h, u, per_burst)
    });
    m.insert("phases".into(), json!({"steady": phase(steady_phase), "raid": phase(raid_phase)}));
    // The perf run's CPU per update split by whole stacks: the engine, the kernel on the
    // front's behalf, and the front's own user code (the rest).
    let shares = perf.map(|p| p.shares).unwrap_or_default();
    let front_share = match (shares.engine, shares.kernel) {
        (Some(e), Some(k)) => Some((1.0 - e - k - shares.store.unwrap_or(0.0)).max(0.0)),
        _ => None,
    };
    let perf_cpu_ns_per_update = perf.and_then(|p| p.cpu_ns_per_update);
    let times = |share: Option<f64>| match (share, perf_cpu_ns_per_update) {
        (Some(share), Some(ns)) => Some(share * ns),
        _ => None,
    };
    put(&mut m, "engine_cpu_share", shares.engine);
    put(&mut m, "front_cpu_share", front_share);
    put(&mut m, "kernel_cpu_share", shares.kernel);
    put(&mut m, "store_cpu_share", shares.store);
    put(&mut m, "store_cpu_ns_per_update", times(shares.store));
    put(&mut m, "perf_unknown_root_share", shares.unknown_root);
    put(&mut m, "perf_cpu_ns_per_update", perf_cpu_ns_per_update);
    put(&mut m, "engine_cpu_ns_per_update", times(shares.engine));
    put(&mut m, "front_cpu_ns_per_update", times(front_share));
    put(&mut m, "kernel_cpu_ns_per_update", times(shares.kernel));
    m.insert("top_symbols".into(), json!(r.top_symbols));
    m.insert("flamegraph".into(), json!(r.flamegraph));
    m.insert("notes".into(), json!(r.notes));
    m
}

/// Waits on each lock left on the update path during one run, from the engine's counters
/// (rust-core/src/locks.rs; the baseline counts its own locks the same way): the fraction of
/// moves that waited on it, its contended acquisitions and the time spent waiting per update.
/// The network front has no lock on the update path (each worker's sessions are its own).
fn lock_waits(run: Option<&Value>) -> Value {
    let d = |k: &str| get_f64(run, &["server_delta", k]);
    let moves = d("engine_moves_applied").filter(|&m| m > 0.0);
    let per_move = |k: &str| match (d(k), moves) {
        (Some(v), Some(m)) => Some(v / m),
        _ => None,
    };
    json!({
        "grid": {"moves_waited_fraction": per_move("engine_moves_waited_grid"), "contended": d("engine_lock_grid_contended"), "wait_ns_per_update": per_move("engine_lock_grid_wait_ns")},
        "body": {"moves_waited_fraction": per_move("engine_moves_waited_body"), "contended": d("engine_lock_body_contended"), "wait_ns_per_update": per_move("engine_lock_body_wait_ns")},
        "economy": {"contended": d("engine_lock_economy_contended"), "wait_ns": d("engine_lock_economy_wait_ns")},
    })
}

/// How the front batched its system calls during one run, from the server's counters: the
/// datagrams each recvmmsg and each send call carried, and the loop turns (one epoll_wait each)
/// and context switches of the server's threads per update. A faster engine finishes each turn
/// sooner and so, at the same load, reads and sends in smaller batches: the kernel's cost per
/// update depends on this as much as on the datagrams.
fn system_calls(run: Option<&Value>) -> Value {
    let d = |k: &str| get_f64(run, &["server_delta", k]);
    let moves = d("engine_moves_applied");
    let switches = d("context_switches_voluntary").zip(d("context_switches_involuntary")).map(|(v, i)| v + i);
    json!({
        "datagrams_per_receive_call": ratio(d("datagrams_received"), d("receive_calls")),
        "datagrams_per_send_call": ratio(d("datagrams_sent"), d("send_calls")),
        "loop_turns_per_update": ratio(d("worker_loop_turns"), moves),
        "context_switches_per_update": ratio(switches, moves),
        "involuntary_context_switches_per_update": ratio(d("context_switches_involuntary"), moves),
    })
}

mod heaptrack_fig {
    use crate::heaptrack::HeapFigures;
    use serde::Serialize;

    /// One heaptrack run as the report shows it.
    #[derive(Clone, Copy, Serialize)]
    pub struct HeapLike {
        pub alloc_calls_total: u64,
        pub temporary_allocs: u64,
        pub peak_heap_bytes: u64,
        pub peak_rss_bytes_with_heaptrack: u64,
        pub leaked_bytes: u64,
        pub updates: u64,
        pub alloc_calls_per_raid_burst: Option<f64>,
    }

    impl HeapLike {
        pub fn new(h: &HeapFigures, updates: u64, per_burst: Option<f64>) -> HeapLike {
            HeapLike {
                alloc_calls_total: h.alloc_calls,
                temporary_allocs: h.temporary_allocs,
                peak_heap_bytes: h.peak_heap_bytes,
                peak_rss_bytes_with_heaptrack: h.peak_rss_bytes,
                leaked_bytes: h.leaked_bytes,
                updates,
                alloc_calls_per_raid_burst: per_burst,
            }
        }
    }
}

/// Every numeric figure of a row, by name (nested ones as `name.sub`), in the tables' order.
type Flat = Vec<(String, Option<f64>)>;

/// Every numeric figure (nested ones as `name.sub`).
fn flat(m: &Map<String, Value>) -> Flat {
    let mut out = Vec::new();
    for key in [
        "updates",
        "alloc_calls",
        "alloc_calls_per_update",
        "peak_heap_bytes",
        "peak_rss_bytes",
        "peak_rss_bytes_per_player",
        "leaked_bytes",
        "cpu_ns_per_update",
        "cpu_ns_per_update_raid",
        "engine_cpu_share",
        "engine_cpu_ns_per_update",
        "front_cpu_ns_per_update",
        "kernel_cpu_ns_per_update",
        "store_cpu_ns_per_update",
        "perf_unknown_root_share",
        "host_steal_share",
        "host_steal_share_raid",
    ] {
        out.push((key.to_string(), m.get(key).and_then(Value::as_f64)));
    }
    for (key, subs) in [
        ("update_latency_us", &["p50", "p99", "p999"][..]),
        ("update_latency_us_raid", &["p50", "p99", "p999"]),
        ("update_service_us", &["p50", "p99", "p999"]),
        ("update_service_us_raid", &["p50", "p99", "p999"]),
        ("rtt_us", &["p50", "p99", "p999"]),
        ("rtt_us_raid_phase", &["p50", "p99", "p999"]),
        ("rtt_us_during_raid", &["p50", "p99", "p999"]),
        ("send_lag_us", &["p99", "p99_raid"]),
        ("raid_spawn_ms", &["median", "max"]),
    ] {
        for sub in subs {
            out.push((format!("{key}.{sub}"), m.get(key).and_then(|v| v.get(sub)).and_then(Value::as_f64)));
        }
    }
    out
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn ratios(rust: &Map<String, Value>, baseline: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let (r, b) = (flat(rust), flat(baseline));
    for ((name, rv), (_, bv)) in r.into_iter().zip(b) {
        // The machine's steal is the hour's, not the engine's: no ratio.
        let value = if name.starts_with("host_steal") { Value::Null } else { ratio(rv, bv).map_or(Value::Null, |x| json!(x)) };
        match name.split_once('.') {
            Some((outer, inner)) => {
                let entry = out.entry(outer.to_string()).or_insert_with(|| json!({}));
                entry[inner] = value;
            }
            None => {
                out.insert(name, value);
            }
        }
    }
    out
}

/// One Rust row's figures and their ratios to the baseline's, as the targets read them.
struct TargetInputs {
    /// The Rust row's median, least and greatest of each figure over its runs.
    rust: [Map<String, Value>; 3],
    /// Its ratios to the baseline's: of the medians; the least pairing of the two rows' runs
    /// (the Rust row's least over the baseline's greatest); the greatest (its greatest over
    /// the baseline's least). Every target is a non-negative figure, so no pairing of runs
    /// gives a ratio outside the last two.
    ratios: [Map<String, Value>; 3],
}

impl TargetInputs {
    fn new(rust: &RowFigures, baseline: &RowFigures) -> Self {
        Self {
            rust: [rust.median.clone(), rust.min.clone(), rust.max.clone()],
            ratios: [ratios(&rust.median, &baseline.median), ratios(&rust.min, &baseline.max), ratios(&rust.max, &baseline.min)],
        }
    }
}

/// One target, checked.
struct TargetCheck {
    what: &'static str,
    limit: f64,
    /// The figure the verdict is on: the row's median, or the ratio of the medians.
    median: Option<f64>,
    /// The least and greatest the figure is over the runs (for a ratio, its extreme pairings
    /// of the two rows' runs); `None` where a run measured nothing or a divisor was 0.
    least: Option<f64>,
    greatest: Option<f64>,
}

impl TargetCheck {
    /// Whether the median meets the limit (`None`: not measured).
    fn met(&self) -> Option<bool> {
        self.median.map(|v| v <= self.limit)
    }

    /// The verdict in `words`: met, missed, not measured.
    fn verdict(&self, words: [&'static str; 3]) -> &'static str {
        match self.met() {
            Some(true) => words[0],
            Some(false) => words[1],
            None => words[2],
        }
    }

    fn measured(&self) -> String {
        show_ratio(self.median)
    }

    /// The range over the runs, as shown: empty when nothing was measured or the runs agree
    /// to the digits shown; an end no pairing could give (a divisor of 0) is `n/a`.
    fn over_runs(&self) -> String {
        if self.median.is_none() {
            return String::new();
        }
        let (least, greatest) = (show_ratio(self.least), show_ratio(self.greatest));
        if least == greatest { String::new() } else { format!("{least}–{greatest}") }
    }
}

fn show_ratio(v: Option<f64>) -> String {
    v.map_or("n/a".to_string(), |v| format!("{v:.4}"))
}

/// The product's targets for the Rust core against the baseline (the compare and
/// area-of-interest issues), each checked against this run's medians.
fn targets(inputs: &TargetInputs) -> Vec<TargetCheck> {
    type Pick = fn(&Map<String, Value>) -> Option<f64>;
    let check = |what: &'static str, maps: &[Map<String, Value>; 3], pick: Pick, limit: f64| {
        let [median, least, greatest] = [pick(&maps[0]), pick(&maps[1]), pick(&maps[2])];
        TargetCheck { what, limit, median, least, greatest }
    };
    fn top(m: &Map<String, Value>, k: &str) -> Option<f64> {
        m.get(k).and_then(Value::as_f64)
    }
    fn sub(m: &Map<String, Value>, k: &str, s: &str) -> Option<f64> {
        m.get(k).and_then(|v| v.get(s)).and_then(Value::as_f64)
    }
    let (rust, ratios) = (&inputs.rust, &inputs.ratios);
    let rows: [(&'static str, bool, Pick, f64); 11] = [
        ("allocation calls per steady update <= 0.001", false, |m| top(m, "alloc_calls_per_update"), 0.001),
        ("raid spawn of 11,000 objects <= 1 ms (median)", false, |m| sub(m, "raid_spawn_ms", "median"), 1.0),
        ("raid spawn <= 0.2x the baseline's", true, |m| sub(m, "raid_spawn_ms", "median"), 0.2),
        ("raid: server-side update latency p99 <= 0.5x", true, |m| sub(m, "update_latency_us_raid", "p99"), 0.5),
        ("raid: server-side update latency p99.9 <= 0.5x", true, |m| sub(m, "update_latency_us_raid", "p999"), 0.5),
        ("raid: move round trip p99 during raids <= 1.0x", true, |m| sub(m, "rtt_us_during_raid", "p99"), 1.0),
        ("steady: server-side update latency p99 <= 0.7x", true, |m| sub(m, "update_latency_us", "p99"), 0.7),
        ("raid: engine CPU per update <= 0.25x (perf)", true, |m| top(m, "engine_cpu_ns_per_update"), 0.25),
        ("raid: whole-process CPU per update <= 0.6x", true, |m| top(m, "cpu_ns_per_update_raid"), 0.6),
        ("peak RSS <= 1.0x", true, |m| top(m, "peak_rss_bytes"), 1.0),
        (
            "raid: moves that waited on a grid lock <= 0.001",
            false,
            |m| {
                m.get("lock_waits")
                    .and_then(|l| l.get("raid"))
                    .and_then(|r| r.get("grid"))
                    .and_then(|g| g.get("moves_waited_fraction"))
                    .and_then(Value::as_f64)
            },
            0.001,
        ),
    ];
    rows.into_iter().map(|(what, is_ratio, pick, limit)| check(what, if is_ratio { ratios } else { rust }, pick, limit)).collect()
}

fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string()))
        .unwrap_or_else(|| "unknown".into());
    let mem_kb = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
        t.lines().find(|l| l.starts_with("MemTotal")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<u64>().ok())
    });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    // The code measured: the checkout's commit, and whether tracked files differed from it.
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=7", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let modified = git(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty());
    json!({
        "commit": commit,
        "tracked_files_modified": modified,
        "cpu": cpu,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_gib": mem_kb.map(|kb| (kb as f64 / 1024.0 / 1024.0 * 10.0).round() / 10.0),
        "kernel": kernel,
        "date": date,
    })
}

fn cell(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "n/a".into(),
        Some(x) if unit == "bytes" => format!("{:.1} MiB", x / 1024.0 / 1024.0),
        Some(x) if x.abs() >= 100.0 => format!("{x:.0}"),
        Some(x) if x.abs() >= 1.0 => format!("{x:.2}"),
        Some(x) => format!("{x:.4}"),
    }
}

/// Figures shown above the null engine's floor: what the engine adds to the front and kernel.
const ABOVE_FLOOR: [&str; 7] = [
    "cpu_ns_per_update",
    "cpu_ns_per_update_raid",
    "update_latency_us.p50",
    "update_latency_us.p99",
    "update_latency_us_raid.p99",
    "update_service_us_raid.p99",
    "peak_rss_bytes",
];

/// `median (min–max)` when the runs differ, the median alone otherwise.
fn spread_cell(median: Option<f64>, min: Option<f64>, max: Option<f64>, unit: &str, repeats: u32) -> String {
    match (median, min, max) {
        (Some(_), Some(lo), Some(hi)) if repeats > 1 && lo != hi => {
            format!("{} ({}–{})", cell(median, unit), cell(Some(lo), unit), cell(Some(hi), unit))
        }
        _ => cell(median, unit),
    }
}

/// Writes both reports; returns the terminal summary.
pub fn write(out: &Path, rows: &[(&'static str, RowResult)], info: &RunInfo) -> Result<String> {
    let all: Vec<(&str, RowFigures)> = rows.iter().map(|(n, r)| (*n, figures(r))).collect();
    let figs: Vec<(&str, &Map<String, Value>)> = all.iter().map(|(n, f)| (*n, &f.median)).collect();
    let find = |name: &str| figs.iter().find(|(n, _)| *n == name).map(|(_, m)| *m);
    let over_baseline = |row: &str| match (find(row), find("baseline")) {
        (Some(r), Some(b)) => Some(ratios(r, b)),
        _ => None,
    };
    let ratio_map = over_baseline("rust");
    // Like for like: the Rust core with its economy in memory, as the baseline keeps it.
    let memory_ratio_map = over_baseline("rust-memory");
    // Each Rust row's targets: judged on its medians, with their extremes over the runs.
    let row_figures = |name: &str| all.iter().find(|(n, _)| *n == name).map(|(_, f)| f);
    let checks: Vec<(&str, &str, Vec<TargetCheck>)> = [
        ("rust", "Targets (Rust core as it ships, economy durable; measured in this run)"),
        (
            "rust-memory",
            "Targets like for like (rust-memory: the Rust core with its economy in memory, as the baseline keeps it; measured in this run)",
        ),
    ]
    .into_iter()
    .filter_map(|(row, title)| Some((row, title, targets(&TargetInputs::new(row_figures(row)?, row_figures("baseline")?)))))
    .collect();
    let floor = find("null-engine").map(flat);
    let mut engines = Map::new();
    let mut spread = Map::new();
    let mut runs = Map::new();
    for (name, f) in &all {
        engines.insert((*name).to_string(), Value::Object(f.median.clone()));
        spread.insert((*name).to_string(), json!({"min": f.min, "max": f.max}));
        runs.insert((*name).to_string(), json!(f.runs));
    }
    let mut above_floor = Map::new();
    if let Some(floor) = &floor {
        for (name, m) in figs.iter().filter(|(n, _)| *n != "null-engine") {
            let f = flat(m);
            let mut row = Map::new();
            for key in ABOVE_FLOOR {
                let mine = f.iter().find(|(k, _)| k == key).and_then(|(_, v)| *v);
                let base = floor.iter().find(|(k, _)| k == key).and_then(|(_, v)| *v);
                row.insert(
                    key.to_string(),
                    match (mine, base) {
                        (Some(a), Some(b)) => json!(a - b),
                        _ => Value::Null,
                    },
                );
            }
            above_floor.insert((*name).to_string(), Value::Object(row));
        }
    }
    let machine = machine();
    let doc = json!({
        "schema": "mmo-compare/2",
        "command": info.command,
        "mode": if info.quick { "quick" } else { "full" },
        "phase_s": info.phase_s,
        "players": info.players,
        "server_threads": info.server_threads,
        "repeats": info.repeats,
        "perf_repeats": info.perf_repeats,
        "pinning": info.pinning,
        "elapsed_s": info.elapsed_s,
        "machine": machine,
        "engines": engines,
        "spread": spread,
        "runs": runs,
        "above_null_engine": above_floor,
        "capacity": info.capacity,
        "targets": checks
            .iter()
            .map(|(row, _, list)| {
                let list: Vec<Value> = list
                    .iter()
                    .map(|t| {
                        json!({"target": t.what, "limit": t.limit, "median": t.median, "least": t.least, "greatest": t.greatest, "met": t.met()})
                    })
                    .collect();
                ((*row).to_string(), Value::Array(list))
            })
            .collect::<Map<String, Value>>(),
        "ratios": {
            "rust_over_baseline": ratio_map.clone().map_or(Value::Null, Value::Object),
            "rust_memory_over_baseline": memory_ratio_map.clone().map_or(Value::Null, Value::Object),
        },
    });
    std::fs::write(out.join("compare.json"), serde_json::to_string_pretty(&doc)?).context("writing compare.json")?;

    // compare.md
    let mut md = String::new();
    let _ = writeln!(md, "# Rust core vs C++ baseline\n");
    let _ = writeln!(
        md,
        "Command: `{}` ({} mode: {} s phases, {} bots, {} server I/O thread(s), {} interleaved plain run(s) and {} interleaved perf run(s) per row; took {:.0} s). CPUs: {}.\n",
        info.command,
        if info.quick { "quick" } else { "full" },
        info.phase_s,
        info.players,
        info.server_threads,
        info.repeats,
        info.perf_repeats,
        info.elapsed_s,
        info.pinning
    );
    let _ = writeln!(
        md,
        "Machine: {}, {} CPUs, {} GiB, Linux {}, {}.\n",
        machine["cpu"].as_str().unwrap_or("?"),
        machine["cpus"],
        machine["memory_gib"],
        machine["kernel"].as_str().unwrap_or("?"),
        machine["date"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        md,
        "Code: commit {}{}.\n",
        machine["commit"].as_str().unwrap_or("unknown"),
        match machine["tracked_files_modified"].as_bool() {
            Some(true) => ", with tracked files modified",
            Some(false) => "",
            None => " (not a git checkout)",
        }
    );
    if info.repeats.max(info.perf_repeats) > 1 {
        let _ = writeln!(
            md,
            "Each cell: the median of the plain runs (of the perf runs for the perf figures: the CPU split and its shares), with their min–max where they differ; ratios divide medians.\n"
        );
    }
    let header: Vec<&str> = figs.iter().map(|(n, _)| *n).collect();
    let _ = write!(md, "| figure | {} |", header.join(" | "));
    if ratio_map.is_some() {
        md.push_str(" rust / baseline |");
    }
    if memory_ratio_map.is_some() {
        md.push_str(" rust-memory / baseline |");
    }
    md.push('\n');
    let ratio_columns = usize::from(ratio_map.is_some()) + usize::from(memory_ratio_map.is_some());
    let _ = writeln!(md, "|---|{}{}", "---|".repeat(header.len()), "---|".repeat(ratio_columns));
    let flats: Vec<(Flat, Flat, Flat)> = all.iter().map(|(_, f)| (flat(&f.median), flat(&f.min), flat(&f.max))).collect();
    let ratio_flat = ratio_map.as_ref().map(flat);
    let memory_ratio_flat = memory_ratio_map.as_ref().map(flat);
    for (i, (name, _)) in flats.first().map(|f| f.0.as_slice()).unwrap_or(&[]).iter().enumerate() {
        let unit = if name.ends_with("bytes") { "bytes" } else { "" };
        let _ = write!(md, "| {name} |");
        for (med, lo, hi) in &flats {
            let _ = write!(md, " {} |", spread_cell(med[i].1, lo[i].1, hi[i].1, unit, info.repeats.max(info.perf_repeats)));
        }
        for rf in [&ratio_flat, &memory_ratio_flat].into_iter().flatten() {
            let _ = write!(md, " {} |", cell(rf[i].1, ""));
        }
        md.push('\n');
    }
    if !above_floor.is_empty() {
        let _ = writeln!(
            md,
            "\n## Above the floor (each row's median minus the null engine's: what the engine adds to the front and the kernel)\n"
        );
        let _ = writeln!(md, "| row | {} |\n|---|{}", ABOVE_FLOOR.join(" | "), "---|".repeat(ABOVE_FLOOR.len()));
        for (name, row) in &above_floor {
            let _ = write!(md, "| {name} |");
            for key in ABOVE_FLOOR {
                let unit = if key.ends_with("bytes") { "bytes" } else { "" };
                let _ = write!(md, " {} |", cell(row.get(key).and_then(Value::as_f64), unit));
            }
            md.push('\n');
        }
    }
    for (_, title, list) in &checks {
        let _ = writeln!(md, "\n## {title}\n\n| target | measured | over the runs (extreme pairings) | met |\n|---|---|---|---|");
        for t in list {
            let _ = writeln!(md, "| {} | {} | {} | {} |", t.what, t.measured(), t.over_runs(), t.verdict(["yes", "**no**", "n/a"]));
        }
    }
    let _ = writeln!(
        md,
        "\n## Locks on the update path (engine counters; the front has none there)\n\n| row | phase | moves that waited on a grid lock | grid contended | grid wait ns per update | moves that waited on a body lock | economy contended |\n|---|---|---|---|---|---|---|"
    );
    for (name, m) in &figs {
        for phase in ["steady", "raid"] {
            let l = m.get("lock_waits").and_then(|l| l.get(phase));
            let g = |lock: &str, k: &str| l.and_then(|l| l.get(lock)).and_then(|v| v.get(k)).and_then(Value::as_f64);
            let _ = writeln!(
                md,
                "| {name} | {phase} | {} | {} | {} | {} | {} |",
                cell(g("grid", "moves_waited_fraction"), ""),
                cell(g("grid", "contended"), ""),
                cell(g("grid", "wait_ns_per_update"), ""),
                cell(g("body", "moves_waited_fraction"), ""),
                cell(g("economy", "contended"), "")
            );
        }
    }
    let _ = writeln!(
        md,
        "\n## Heap by phase (heaptrack, system-allocator builds)\n\n| row | phase | allocation calls | temporary | peak heap | leaked | calls per raid burst |\n|---|---|---|---|---|---|---|"
    );
    for (name, m) in &figs {
        for phase in ["steady", "raid"] {
            let p = m.get("phases").and_then(|p| p.get(phase));
            let g = |k: &str| p.and_then(|p| p.get(k)).and_then(Value::as_f64);
            let _ = writeln!(
                md,
                "| {name} | {phase} | {} | {} | {} | {} | {} |",
                cell(g("alloc_calls_total"), ""),
                cell(g("temporary_allocs"), ""),
                cell(g("peak_heap_bytes"), "bytes"),
                cell(g("leaked_bytes"), "bytes"),
                cell(g("alloc_calls_per_raid_burst"), "")
            );
        }
    }
    if !info.capacity.is_empty() {
        let _ = writeln!(
            md,
            "\n## Capacity (the most players each engine held within the round-trip bound; `make capacity`, not this run)\n\n| engine | scenario | players | stopped by the tester | what failed the next step | measured |\n|---|---|---|---|---|---|"
        );
        for c in &info.capacity {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                c.engine,
                c.scenario,
                c.players.map_or("none passed".to_string(), |p| if c.tester_limited { format!("at least {p}") } else { p.to_string() }),
                if c.tester_limited { "yes" } else { "no" },
                c.limit.replace('|', "\\|"),
                c.source
            );
        }
    }
    let _ = writeln!(md, "\n## Where the time goes (perf, cpu-clock, raid load, frame-pointer stacks)\n");
    let _ = writeln!(
        md,
        "Each sample counted once, by its whole stack: **store** (on the economy's committer and checkpoint threads: making wallet changes durable, the commit log's appends and fsyncs, redb's checkpoints, and the kernel's work for them; only a row that persists has any), **engine** (an engine frame anywhere in the rest, the front's latency histograms, recorded through the Rust library in every row, apart), **kernel** (a kernel frame sampled outside any engine call: the UDP receive and send paths, epoll, scheduling, interrupts, on the front's behalf), **front** (the rest: the network front's own code, the C library it calls). CPU per update is each perf run's, split by those shares; the table gives the median over the perf runs of each figure (so a row's parts need not add up to its whole exactly).\n"
    );
    let _ = writeln!(
        md,
        "| row | engine | front | kernel | store | engine ns/update | front ns/update | kernel ns/update | store ns/update | whole ns/update |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for (name, m) in &figs {
        let pct = |k: &str| m.get(k).and_then(Value::as_f64).map_or("n/a".to_string(), |v| format!("{:.1}%", v * 100.0));
        let ns = |k: &str| cell(m.get(k).and_then(Value::as_f64), "");
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            pct("engine_cpu_share"),
            pct("front_cpu_share"),
            pct("kernel_cpu_share"),
            pct("store_cpu_share"),
            ns("engine_cpu_ns_per_update"),
            ns("front_cpu_ns_per_update"),
            ns("kernel_cpu_ns_per_update"),
            ns("store_cpu_ns_per_update"),
            ns("perf_cpu_ns_per_update")
        );
    }
    md.push('\n');
    let _ = writeln!(
        md,
        "System calls and wake-ups in the raid runs (the server's own counters): the datagrams each `recvmmsg` and each send call carried, and per update the workers' loop turns (one `epoll_wait` each) and the context switches of all the server's threads (in brackets: involuntary, i.e. preempted). Fewer datagrams per call and more switches per update mean more of the kernel's fixed cost per update.\n"
    );
    let _ = writeln!(
        md,
        "| row | datagrams per recvmmsg | datagrams per send call | loop turns per update | context switches per update |\n|---|---|---|---|---|"
    );
    for (name, m) in &figs {
        let sc = |k: &str| m.get("system_calls").and_then(|s| s.get("raid")).and_then(|s| s.get(k)).and_then(Value::as_f64);
        let two = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} ({}) |",
            two(sc("datagrams_per_receive_call")),
            two(sc("datagrams_per_send_call")),
            two(sc("loop_turns_per_update")),
            two(sc("context_switches_per_update")),
            two(sc("involuntary_context_switches_per_update"))
        );
    }
    md.push('\n');
    for ((name, m), (_, r)) in figs.iter().zip(rows) {
        let _ = writeln!(md, "### {name}\n");
        let share = |k: &str| m.get(k).and_then(Value::as_f64).map_or("n/a".to_string(), |v| format!("{:.1}%", v * 100.0));
        let _ = writeln!(
            md,
            "Samples with an engine frame in their stack: {}; samples whose stack does not reach a known root: {} (medians of the perf runs; the flame graph and the top symbols are the first run's).\n",
            share("engine_cpu_share"),
            share("perf_unknown_root_share")
        );
        if let Some(svg) = &r.flamegraph {
            let _ = writeln!(md, "Flame graph: [{svg}]({svg})\n");
        }
        if !r.top_symbols.is_empty() {
            let _ = writeln!(md, "| self % | symbol |\n|---|---|");
            for s in &r.top_symbols {
                let _ = writeln!(md, "| {:.1} | `{}` |", s.percent, s.symbol.replace('|', "\\|"));
            }
            md.push('\n');
        }
        let _ = writeln!(md, "Latency plots: [{name}-steady/]({name}-steady/), [{name}-raid/]({name}-raid/)\n");
        if let Some(notes) = m.get("notes").and_then(Value::as_array) {
            for n in notes {
                let _ = writeln!(md, "- note: {}", n.as_str().unwrap_or(""));
            }
        }
    }
    let _ = writeln!(
        md,
        "\n## How to read this\n\n- Rows: `rust` the Rust core (mimalloc); `rust-memory` the same server with `--economy-store memory`; `baseline` the C++ baseline (glibc malloc); `baseline-mimalloc` and `baseline-jemalloc` the same baseline with that allocator preloaded, so the allocator's part and the design's part of a ratio can be told apart; `null-engine` the same front with an engine that keeps no state (every move acknowledged, every area of interest empty): the front and the kernel alone, the floor under every row.\n- What each row persists: `rust` keeps its economy durable (the server's default `economy_store = \"durable\"`: every wallet change a ledger entry, committed in groups to the commit log in a fresh data directory per server, one append and one fdatasync per group, full log segments folded into `economy.redb` by a checkpoint thread; economy replies, here the raid's loot claims and trades, wait for their group, moves never do); `rust-memory` and the `baseline` rows keep their economy in memory only (a crash loses every wallet), so `rust-memory` against `baseline` compares the engines like for like and `rust` against `rust-memory` is what durability costs; `null-engine` keeps nothing.\n- `alloc_calls` and `alloc_calls_per_update`: the raw difference between a {0} s and a {1} s steady heaptrack run (signed, never clamped), over the difference in updates applied: start-up and joins cancel out, so this is what one more update costs. `alloc_calls_per_update_resolution` is one call over that difference: a figure of that order is noise.\n- `cpu_ns_per_update`: the server process's user + system CPU time (rusage) over the steady phase, divided by the updates the engine applied in it; it includes the network front and the kernel's UDP work, which the null-engine row measures alone (see \"Above the floor\").\n- `engine_cpu_share` and `engine_cpu_ns_per_update`: from the perf runs (raid load), the share of samples whose whole stack (frame pointers, every build) passes through the engine (`mmo_core::`, `mmo_ffi::`, `mmo::baseline::`) off the economy's store threads and outside the front's latency histograms (`mmo_latency_record`: the front records them through the Rust library in every row, the null engine's too, so they count as the front's), times that run's CPU per update (`perf_cpu_ns_per_update`), each the median over the perf runs; `store_cpu_ns_per_update` the same for the store threads (durability: the commit log's appends and fsyncs, redb's checkpoints, and the kernel's work for them), `front_cpu_ns_per_update` and `kernel_cpu_ns_per_update` for the network front's own code and for the kernel outside engine calls (\"Where the time goes\"). `perf_unknown_root_share`: samples whose stack does not reach the process's or a thread's start; the shares are only as good as this is small.\n- `update_latency_us` (steady) and `update_latency_us_raid`: server-side, from each move datagram's kernel receive timestamp (`SO_TIMESTAMPNS`, so time spent waiting in the socket buffer counts) to the end of its batch's engine call (hdrhistogram in the server). `update_service_us` and `update_service_us_raid`: the part of each of those after the worker read the datagram (from its batch's read to the end of the engine call): the server's own time, without the wait in the socket buffer for a sleeping or busy worker. `rtt_us`, `rtt_us_raid_phase` and `rtt_us_during_raid`: the load tester's move-to-ack round trip from each move's intended send time (steady; the whole raid phase; moves overlapping a raid window). `send_lag_us`: how late the tester sent, part of every round trip.\n- `host_steal_share` (steady) and `host_steal_share_raid`: the CPU time the hypervisor took during each plain run (`/proc/stat` `steal`, all CPUs) over that run's wall time times the CPUs online; zero on bare metal, no ratio (it is the hour's, not the engine's). A datagram whose CPU was taken waits with it, whichever engine runs, so steal lengthens the tails of every row; read a tail figure beside it.\n- `system_calls` (compare.json; the table after \"Where the time goes\"): per phase, from the server's counters, the datagrams per `recvmmsg` and per send call, and the workers' loop turns and the process's context switches per update.\n- `lock_waits` (compare.json): per lock left on the update path, the fraction of moves that waited on it, its contended acquisitions, and the wait per update, counted by each engine (a lock is tried first; only a held one is timed). The front has no lock on that path.\n- `peak_rss_bytes`: the server's `ru_maxrss` in the plain runs; `peak_rss_bytes_per_player` divides it by the bots. `peak_heap_bytes` and `leaked_bytes`: heaptrack, system-allocator build (the Rust core's capacity-sized tables are their own mappings, not heap: RSS counts them, heaptrack does not).\n- Ratios divide a Rust row's median by the `baseline` row's of this same run.\n- Targets are judged on those medians. Beside each, `over the runs (extreme pairings)`: a ratio's least (the Rust row's least run over the baseline's greatest) and greatest (its greatest over the baseline's least), a figure's least and greatest run for the others (`n/a` at an end no run could give, as over a baseline run of 0); a verdict whose range straddles its limit is one the runs' spread could turn. compare.json's `targets` holds the same as numbers, with each limit.",
        info.phase_s,
        info.phase_s * 2
    );
    std::fs::write(out.join("compare.md"), &md).context("writing compare.md")?;

    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "mmo-compare: {} mode, {} bots, {} s phases, {} run(s) per row, {:.0} s; {}",
        if info.quick { "quick" } else { "full" },
        info.players,
        info.phase_s,
        info.repeats,
        info.elapsed_s,
        info.pinning
    );
    for (name, m) in &figs {
        let g = |k: &str| m.get(k).and_then(Value::as_f64);
        let s = |k: &str, sub: &str| m.get(k).and_then(|v| v.get(sub)).and_then(Value::as_f64);
        let _ = writeln!(
            summary,
            "  {name:<18} cpu/update {:>8} ns  alloc/update {:>8}  p99 update {:>6} us  raid spawn {:>6} ms  peak RSS {}  unknown roots {}",
            cell(g("cpu_ns_per_update"), ""),
            cell(g("alloc_calls_per_update"), ""),
            cell(s("update_latency_us", "p99"), ""),
            cell(s("raid_spawn_ms", "median"), ""),
            cell(g("peak_rss_bytes"), "bytes"),
            cell(g("perf_unknown_root_share"), "")
        );
    }
    for (row, _, list) in &checks {
        for t in list {
            let _ = writeln!(
                summary,
                "  {row:<11} target {:<48} {:>10} {:>15}  {}",
                t.what,
                t.measured(),
                t.over_runs(),
                t.verdict(["met", "MISSED", "n/a"])
            );
        }
    }
    let _ = writeln!(summary, "  report: {}/compare.md, {}/compare.json", out.display(), out.display());
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_combine_leaf_by_leaf_into_median_min_and_max() {
        let runs: Vec<Map<String, Value>> = [
            json!({"cpu": 10.0, "lat": {"p99": 5.0}, "name": "a", "gone": null}),
            json!({"cpu": 30.0, "lat": {"p99": 1.0}, "name": "b", "gone": null}),
            json!({"cpu": 20.0, "lat": {"p99": null}, "name": "c", "gone": null}),
        ]
        .into_iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect();
        let med = combine(&runs, median);
        assert_eq!(med["cpu"], json!(20.0));
        assert_eq!(med["lat"]["p99"], json!(3.0), "the runs without the figure are left out, two remain");
        assert_eq!(med["name"], json!("a"), "non-numbers come from the first run");
        assert_eq!(med["gone"], Value::Null);
        let lo = combine(&runs, |v| v.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(lo["cpu"], json!(10.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn perf_runs_are_runs_of_their_own_in_the_medians() {
        // One plain run, three perf runs: the engine's CPU per update is the median of the
        // three runs' share x CPU, each run's product taken before the median.
        let perf = |engine: f64, cpu: f64| PerfRun {
            shares: crate::perf::Shares { engine: Some(engine), store: Some(0.0), kernel: Some(0.5), unknown_root: Some(0.01) },
            cpu_ns_per_update: Some(cpu),
        };
        let r = RowResult {
            plain_steady: vec![json!({"server_delta": {"engine_moves_applied": 1000.0, "cpu_user_us": 10.0, "cpu_system_us": 10.0}})],
            perf_runs: vec![perf(0.2, 40_000.0), perf(0.25, 40_000.0), perf(0.1, 50_000.0)],
            ..RowResult::default()
        };
        let f = figures(&r);
        assert_eq!(f.runs.len(), 3);
        assert_eq!(f.median["engine_cpu_ns_per_update"], json!(8_000.0), "8,000, 10,000 and 5,000 ns");
        assert_eq!(f.min["engine_cpu_ns_per_update"], json!(5_000.0));
        assert_eq!(f.max["engine_cpu_ns_per_update"], json!(10_000.0));
        assert_eq!(f.median["perf_cpu_ns_per_update"], json!(40_000.0));
        assert_eq!(f.median["cpu_ns_per_update"], json!(20.0), "the plain figure from its one run");
        let none = figures(&RowResult::default());
        assert_eq!(none.median["engine_cpu_ns_per_update"], Value::Null, "no perf run: no figure");
    }

    #[test]
    fn capacity_searches_are_read_when_present() {
        let dir = std::env::temp_dir().join(format!("mmo-compare-capacity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("rust-steady.json"), r#"{"capacity": 1187, "tester_limited": true, "limit": "latency"}"#).unwrap();
        std::fs::write(dir.join("baseline-raid.json"), r#"{"capacity": null, "tester_limited": false, "limit": "loss"}"#).unwrap();
        let found = read_capacity(&dir);
        assert_eq!(found.len(), 2);
        assert_eq!(
            (found[0].engine.as_str(), found[0].scenario.as_str(), found[0].players, found[0].tester_limited),
            ("rust", "steady", Some(1187), true)
        );
        assert_eq!((found[1].engine.as_str(), found[1].players, found[1].limit.as_str()), ("baseline", None, "loss"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_target_is_judged_on_the_medians_and_ranges_over_the_extreme_pairings() {
        let runs = |v: &[Value]| RowFigures::of_runs(v.iter().map(|v| v.as_object().unwrap().clone()).collect());
        // Engine CPU: the Rust row's runs 5,700, 4,800 and 5,000 ns (median 5,000), the
        // baseline's 19,000, 21,000 and 20,000 (median 20,000), in no particular order. RSS:
        // every run alike. Raid spawn: one baseline run measured 0 ms.
        let rust = runs(&[
            json!({"engine_cpu_ns_per_update": 5_700.0, "peak_rss_bytes": 100.0, "raid_spawn_ms": {"median": 0.5}}),
            json!({"engine_cpu_ns_per_update": 4_800.0, "peak_rss_bytes": 100.0, "raid_spawn_ms": {"median": 0.5}}),
            json!({"engine_cpu_ns_per_update": 5_000.0, "peak_rss_bytes": 100.0, "raid_spawn_ms": {"median": 0.5}}),
        ]);
        let baseline = runs(&[
            json!({"engine_cpu_ns_per_update": 19_000.0, "peak_rss_bytes": 200.0, "raid_spawn_ms": {"median": 0.0}}),
            json!({"engine_cpu_ns_per_update": 21_000.0, "peak_rss_bytes": 200.0, "raid_spawn_ms": {"median": 4.0}}),
            json!({"engine_cpu_ns_per_update": 20_000.0, "peak_rss_bytes": 200.0, "raid_spawn_ms": {"median": 5.0}}),
        ]);
        let checks = targets(&TargetInputs::new(&rust, &baseline));
        let find = |prefix: &str| checks.iter().find(|t| t.what.starts_with(prefix)).unwrap();
        let engine = find("raid: engine CPU");
        assert_eq!((engine.measured(), engine.met()), ("0.2500".to_string(), Some(true)), "the verdict is the medians'");
        assert_eq!(engine.over_runs(), "0.2286–0.3000", "4,800 / 21,000 and 5,700 / 19,000");
        assert_eq!(engine.verdict(["met", "missed", "n/a"]), "met");
        let rss = find("peak RSS");
        assert_eq!(
            (rss.measured(), rss.over_runs(), rss.met()),
            ("0.5000".to_string(), String::new(), Some(true)),
            "runs that agree show no range"
        );
        let spawn = find("raid spawn <= 0.2x");
        assert_eq!((spawn.measured(), spawn.met()), ("0.1250".to_string(), Some(true)), "0.5 / 4.0");
        assert_eq!(spawn.over_runs(), "0.1000–n/a", "0.5 / 5.0, and nothing over a baseline run of 0");
        let alloc = find("allocation calls");
        assert_eq!(
            (alloc.measured(), alloc.over_runs(), alloc.met()),
            ("n/a".to_string(), String::new(), None),
            "not measured, not judged"
        );
        assert_eq!(alloc.verdict(["met", "missed", "n/a"]), "n/a");
    }

    #[test]
    fn a_cell_shows_the_spread_only_when_the_runs_differ() {
        assert_eq!(spread_cell(Some(20.0), Some(10.0), Some(30.0), "", 3), "20.00 (10.00–30.00)");
        assert_eq!(spread_cell(Some(20.0), Some(20.0), Some(20.0), "", 3), "20.00");
        assert_eq!(spread_cell(Some(20.0), Some(10.0), Some(30.0), "", 1), "20.00");
        assert_eq!(spread_cell(None, None, None, "", 3), "n/a");
    }
}
