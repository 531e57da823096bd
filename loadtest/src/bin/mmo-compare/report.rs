//! `report/compare.json` (schema `mmo-compare/1`), `report/compare.md`, and the terminal
//! summary, from the runs of every row.

use crate::RowResult;
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
    /// Wall time of the whole comparison.
    pub elapsed_s: f64,
}

fn get_f64(v: Option<&Value>, path: &[&str]) -> Option<f64> {
    let mut cur = v?;
    for key in path {
        cur = cur.get(key)?;
    }
    cur.as_f64()
}

/// The figures of one row, in the schema's names. `None` where a run failed or was skipped.
fn figures(r: &RowResult) -> Map<String, Value> {
    let steady = r.plain_steady.as_ref();
    let raid = r.plain_raid.as_ref();
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
    let cpu_us = match (get_f64(steady, &["server_delta", "cpu_user_us"]), get_f64(steady, &["server_delta", "cpu_system_us"])) {
        (Some(u), Some(s)) => Some(u + s),
        _ => None,
    };
    put(
        &mut m,
        "cpu_ns_per_update",
        match (cpu_us, updates) {
            (Some(c), Some(u)) if u > 0.0 => Some(c * 1000.0 / u),
            _ => None,
        },
    );
    let raid_cpu_us = match (get_f64(raid, &["server_delta", "cpu_user_us"]), get_f64(raid, &["server_delta", "cpu_system_us"])) {
        (Some(u), Some(s)) => Some(u + s),
        _ => None,
    };
    put(
        &mut m,
        "cpu_ns_per_update_raid",
        match (raid_cpu_us, get_f64(raid, &["server_delta", "engine_moves_applied"])) {
            (Some(c), Some(u)) if u > 0.0 => Some(c * 1000.0 / u),
            _ => None,
        },
    );
    for (key, run) in [("update_latency_us", steady), ("update_latency_us_raid", raid)] {
        let lat = |name: &str| get_f64(run, &["server", name]);
        m.insert(
            key.into(),
            json!({"p50": lat("update_latency_us_p50"), "p99": lat("update_latency_us_p99"), "p999": lat("update_latency_us_p999")}),
        );
    }
    m.insert("lock_waits".into(), json!({"steady": lock_waits(steady), "raid": lock_waits(raid)}));
    m.insert("rtt_us".into(), json!({"p50": get_f64(steady, &["rtt_us", "p50"]), "p99": get_f64(steady, &["rtt_us", "p99"]), "p999": get_f64(steady, &["rtt_us", "p999"])}));
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
    put(&mut m, "engine_cpu_share", r.engine_share);
    put(
        &mut m,
        "engine_cpu_ns_per_update",
        match (r.engine_share, r.perf_cpu_ns_per_update) {
            (Some(share), Some(ns)) => Some(share * ns),
            _ => None,
        },
    );
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

/// Every numeric figure (nested ones as `name.sub`).
fn flat(m: &Map<String, Value>) -> Vec<(String, Option<f64>)> {
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
    ] {
        out.push((key.to_string(), m.get(key).and_then(Value::as_f64)));
    }
    for (key, subs) in [
        ("update_latency_us", &["p50", "p99", "p999"][..]),
        ("update_latency_us_raid", &["p50", "p99", "p999"]),
        ("rtt_us", &["p50", "p99", "p999"]),
        ("rtt_us_during_raid", &["p50", "p99", "p999"]),
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
        let value = ratio(rv, bv).map_or(Value::Null, |x| json!(x));
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

/// The product's targets for the Rust core against the baseline (the compare and
/// area-of-interest issues), each checked against this run's figures.
fn targets(rust: &Map<String, Value>, ratios: &Map<String, Value>) -> Vec<(String, String, Option<bool>)> {
    let f = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_f64);
    let sub = |m: &Map<String, Value>, k: &str, s: &str| m.get(k).and_then(|v| v.get(s)).and_then(Value::as_f64);
    let check = |v: Option<f64>, limit: f64| v.map(|v| v <= limit);
    let show = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.4}"));
    let grid_waited = rust
        .get("lock_waits")
        .and_then(|l| l.get("raid"))
        .and_then(|r| r.get("grid"))
        .and_then(|g| g.get("moves_waited_fraction"))
        .and_then(Value::as_f64);
    let mut out: Vec<(String, String, Option<bool>)> = vec![
        (
            "allocation calls per steady update <= 0.001".into(),
            show(f(rust, "alloc_calls_per_update")),
            check(f(rust, "alloc_calls_per_update"), 0.001),
        ),
        (
            "raid spawn of 11,000 objects <= 1 ms (median)".into(),
            show(sub(rust, "raid_spawn_ms", "median")),
            check(sub(rust, "raid_spawn_ms", "median"), 1.0),
        ),
        (
            "raid spawn <= 0.2x the baseline's".into(),
            show(sub(ratios, "raid_spawn_ms", "median")),
            check(sub(ratios, "raid_spawn_ms", "median"), 0.2),
        ),
    ];
    for (what, value, limit) in [
        ("raid: server-side update latency p99 <= 0.5x", sub(ratios, "update_latency_us_raid", "p99"), 0.5),
        ("raid: server-side update latency p99.9 <= 0.5x", sub(ratios, "update_latency_us_raid", "p999"), 0.5),
        ("raid: move round trip p99 during raids <= 1.0x", sub(ratios, "rtt_us_during_raid", "p99"), 1.0),
        ("steady: server-side update latency p99 <= 0.7x", sub(ratios, "update_latency_us", "p99"), 0.7),
        ("raid: engine CPU per update <= 0.25x (perf)", f(ratios, "engine_cpu_ns_per_update"), 0.25),
        ("raid: whole-process CPU per update <= 0.6x", f(ratios, "cpu_ns_per_update_raid"), 0.6),
        ("peak RSS <= 1.0x", f(ratios, "peak_rss_bytes"), 1.0),
    ] {
        out.push((what.into(), show(value), check(value, limit)));
    }
    out.push(("raid: moves that waited on a grid lock <= 0.001".into(), show(grid_waited), check(grid_waited, 0.001)));
    out
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
    json!({
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

/// Writes both reports; returns the terminal summary.
pub fn write(out: &Path, rows: &[(&'static str, RowResult)], info: &RunInfo) -> Result<String> {
    let figs: Vec<(&str, Map<String, Value>)> = rows.iter().map(|(n, r)| (*n, figures(r))).collect();
    let find = |name: &str| figs.iter().find(|(n, _)| *n == name).map(|(_, m)| m);
    let ratio_map = match (find("rust"), find("baseline")) {
        (Some(r), Some(b)) => Some(ratios(r, b)),
        _ => None,
    };
    let mut engines = Map::new();
    for (name, m) in &figs {
        engines.insert((*name).to_string(), Value::Object(m.clone()));
    }
    let machine = machine();
    let doc = json!({
        "schema": "mmo-compare/1",
        "command": info.command,
        "mode": if info.quick { "quick" } else { "full" },
        "phase_s": info.phase_s,
        "players": info.players,
        "server_threads": info.server_threads,
        "elapsed_s": info.elapsed_s,
        "machine": machine,
        "engines": engines,
        "ratios": { "rust_over_baseline": ratio_map.clone().map_or(Value::Null, Value::Object) },
    });
    std::fs::write(out.join("compare.json"), serde_json::to_string_pretty(&doc)?).context("writing compare.json")?;

    // compare.md
    let mut md = String::new();
    let _ = writeln!(md, "# Rust core vs C++ baseline\n");
    let _ = writeln!(
        md,
        "Command: `{}` ({} mode: {} s phases, {} bots, {} server I/O thread(s); took {:.0} s).\n",
        info.command,
        if info.quick { "quick" } else { "full" },
        info.phase_s,
        info.players,
        info.server_threads,
        info.elapsed_s
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
    let header: Vec<&str> = figs.iter().map(|(n, _)| *n).collect();
    let _ = write!(md, "| figure | {} |", header.join(" | "));
    if ratio_map.is_some() {
        md.push_str(" rust / baseline |");
    }
    md.push('\n');
    let _ = writeln!(md, "|---|{}{}", "---|".repeat(header.len()), if ratio_map.is_some() { "---|" } else { "" });
    let flats: Vec<Vec<(String, Option<f64>)>> = figs.iter().map(|(_, m)| flat(m)).collect();
    let ratio_flat = ratio_map.as_ref().map(flat);
    for (i, (name, _)) in flats.first().map(|f| f.as_slice()).unwrap_or(&[]).iter().enumerate() {
        let unit = if name.ends_with("bytes") { "bytes" } else { "" };
        let _ = write!(md, "| {name} |");
        for f in &flats {
            let _ = write!(md, " {} |", cell(f[i].1, unit));
        }
        if let Some(rf) = &ratio_flat {
            let _ = write!(md, " {} |", cell(rf[i].1, ""));
        }
        md.push('\n');
    }
    if let (Some(rust), Some(r)) = (find("rust"), &ratio_map) {
        let _ = writeln!(md, "\n## Targets (Rust core, measured in this run)\n\n| target | measured | met |\n|---|---|---|");
        for (what, measured, met) in targets(rust, r) {
            let _ = writeln!(
                md,
                "| {what} | {measured} | {} |",
                match met {
                    Some(true) => "yes",
                    Some(false) => "**no**",
                    None => "n/a",
                }
            );
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
    let _ = writeln!(md, "\n## Where the time goes (perf, cpu-clock, raid load)\n");
    for ((name, m), (_, r)) in figs.iter().zip(rows) {
        let _ = writeln!(md, "### {name}\n");
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
        "\n## How to read this\n\n- `alloc_calls` and `alloc_calls_per_update`: the difference between a {0} s and a {1} s steady heaptrack run, over the difference in updates applied: start-up, joins and pre-warming cancel out, so this is what one more update costs.\n- `cpu_ns_per_update`: the server process's user + system CPU time (rusage) over the steady phase, divided by the updates the engine applied in it. It includes the network front, identical for every row.\n- `engine_cpu_share` and `engine_cpu_ns_per_update`: from the perf run (raid load): the share of samples whose stack passes through the engine (`mmo_core::`, `mmo_ffi::`, `mmo::baseline::`), times that run's CPU per update. The network front and the kernel's UDP work are the same code for every row and usually dominate `cpu_ns_per_update`; this is the part the engines differ in.\n- `update_latency_us` (steady) and `update_latency_us_raid`: server-side, from each move datagram's kernel receive timestamp (`SO_TIMESTAMPNS`, so time spent waiting in the socket buffer counts) to the end of its batch's engine call (hdrhistogram in the server). `rtt_us` and `rtt_us_during_raid`: the load tester's move-to-ack round trip from each move's intended send time.
- `lock_waits` (compare.json): per lock left on the update path, the fraction of moves that waited on it, its contended acquisitions, and the wait per update, counted by each engine (a lock is tried first; only a held one is timed). The front has no lock on that path.\n- `peak_rss_bytes`: the server's `ru_maxrss` in the plain runs; `peak_rss_bytes_per_player` divides it by the bots. `peak_heap_bytes` and `leaked_bytes`: heaptrack, system-allocator build.\n- Ratios divide the Rust row by the `baseline` row of this same run.",
        info.phase_s,
        info.phase_s * 2
    );
    std::fs::write(out.join("compare.md"), &md).context("writing compare.md")?;

    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "mmo-compare: {} mode, {} bots, {} s phases, {:.0} s",
        if info.quick { "quick" } else { "full" },
        info.players,
        info.phase_s,
        info.elapsed_s
    );
    for (name, m) in &figs {
        let g = |k: &str| m.get(k).and_then(Value::as_f64);
        let s = |k: &str, sub: &str| m.get(k).and_then(|v| v.get(sub)).and_then(Value::as_f64);
        let _ = writeln!(
            summary,
            "  {name:<18} cpu/update {:>8} ns  alloc/update {:>8}  p99 update {:>6} us  raid spawn {:>6} ms  peak RSS {}",
            cell(g("cpu_ns_per_update"), ""),
            cell(g("alloc_calls_per_update"), ""),
            cell(s("update_latency_us", "p99"), ""),
            cell(s("raid_spawn_ms", "median"), ""),
            cell(g("peak_rss_bytes"), "bytes")
        );
    }
    if let (Some(rust), Some(r)) = (find("rust"), &ratio_map) {
        for (what, measured, met) in targets(rust, r) {
            let _ = writeln!(
                summary,
                "  target {what:<48} {measured:>10}  {}",
                match met {
                    Some(true) => "met",
                    Some(false) => "MISSED",
                    None => "n/a",
                }
            );
        }
    }
    let _ = writeln!(summary, "  report: {}/compare.md, {}/compare.json", out.display(), out.display());
    Ok(summary)
}
