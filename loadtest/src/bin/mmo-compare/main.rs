//! `mmo-compare`: the product's proof, one command. The same network front, the same load,
//! each engine in turn, with allocation counts, heap, CPU and latency side by side.
//!
//! Rows: `rust` (the Rust core, mimalloc build, its economy durable as the server ships),
//! `rust-memory` (the same with `--economy-store memory`: the economy kept as the baseline
//! keeps it, so the engines are compared like for like), `baseline` (the C++ baseline on glibc
//! malloc), `baseline-mimalloc` and `baseline-jemalloc` (the same baseline with Debian's
//! libmimalloc or libjemalloc preloaded: the allocator separated from the design), and
//! `null-engine` (the same front with an engine that keeps no state: the front-plus-kernel
//! floor every other row is also shown above). For each row it starts `mmo-server` on
//! loopback and drives it with `mmo-loadtest`, in fresh server processes:
//!
//! | run | server | load | gives |
//! |---|---|---|---|
//! | plain steady, `--repeats` times | the row's production build | steady, `T` | CPU ns per update (rusage), update latency, round trip, peak RSS |
//! | plain raid, `--repeats` times | same | raid bursts, `T` | raid spawn ms, round trip during raids, peak RSS |
//! | heaptrack steady `T` and `2T` | system-allocator build under heaptrack | steady | allocation calls per steady update: the *difference* of the two runs over the difference of their updates, so start-up and joins cancel out |
//! | heaptrack raid | same | raid, `T` | allocation calls per raid burst (against the steady `T` run), peak heap, temporaries, leaks |
//! | perf, `--perf-repeats` times | the row's production build | raid, `T` | the engine's, front's, kernel's and store's shares of whole stacks and CPU ns per update, the share of stacks without a known root; from the first: top symbols by self time and a flame graph |
//!
//! The plain runs are interleaved (every row's steady and raid run, then every row's again),
//! and so are the perf runs, so a drift in the machine spreads over all rows instead of landing
//! on one; the report gives each figure's median over the repeats with its min and max, and
//! ratios of medians. The engine's CPU per update is therefore the median of several perf
//! runs: one run's figure moves with the machine by more than most changes to the code do.
//! `--pin` gives the server and the load tester disjoint CPUs when the machine has at least
//! four; the report says what was pinned. A tester left on the server's CPUs runs in
//! `SCHED_IDLE` (`--tester-sched`, `mmo-loadtest --sched`): a server thread woken by a datagram
//! then preempts it at once instead of queueing behind it for the rest of its time slice. That
//! takes the tester's slices out of the server's latency, and costs the tester's send lag and
//! round trips, where the report shows it; it also changes the server's work (a worker woken
//! at once finds one datagram waiting where it found three or four, so its CPU per update
//! rises), so compare CPU figures only between runs with the tester in the same class.
//!
//! The Rust row's production build links mimalloc; its heaptrack runs use the build without
//! it (`build/cpp-sysalloc`), where the Rust core allocates through glibc malloc and heaptrack
//! sees every call (mimalloc's own allocations would be invisible to it). The baseline rows run
//! the system-allocator build throughout, the allocator rows with their library preloaded
//! (heaptrack does not see a preloaded allocator's calls, so those rows have no heaptrack
//! runs: their allocation calls are the baseline row's, the same code). Every build keeps frame
//! pointers, so perf's stacks reach their roots.
//!
//! Output: `report/compare.json` (schema `mmo-compare/2`), `report/compare.md`, flame graphs
//! and the load tester's latency plots, and a summary on the terminal. Figures are reported,
//! not asserted: a noisy shared machine makes absolute numbers soft, so the report leads with
//! ratios of rows measured in the same run.

mod heaptrack;
mod perf;
mod process;
mod report;

use anyhow::{Context, Result, bail};
use clap::Parser;
use mmo_loadtest::cli::TesterSched;
use process::{ServerProcess, ServerSpec, Wrapper};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One row of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Row {
    /// The Rust core (mimalloc build; system-allocator build under heaptrack), its economy
    /// durable (the server's default).
    Rust,
    /// The Rust core with its economy in memory only, as the baseline keeps it.
    RustMemory,
    /// The C++ baseline on glibc malloc.
    Baseline,
    /// The C++ baseline with Debian's libmimalloc preloaded.
    BaselineMimalloc,
    /// The C++ baseline with Debian's libjemalloc preloaded.
    BaselineJemalloc,
    /// The network front with the null engine (no game state): the floor.
    NullEngine,
}

impl Row {
    fn name(self) -> &'static str {
        match self {
            Row::Rust => "rust",
            Row::RustMemory => "rust-memory",
            Row::Baseline => "baseline",
            Row::BaselineMimalloc => "baseline-mimalloc",
            Row::BaselineJemalloc => "baseline-jemalloc",
            Row::NullEngine => "null-engine",
        }
    }
    fn engine(self) -> &'static str {
        match self {
            Row::Rust | Row::RustMemory => "rust",
            Row::Baseline | Row::BaselineMimalloc | Row::BaselineJemalloc => "baseline",
            Row::NullEngine => "null",
        }
    }
    /// The allocator library preloaded into this row's server, if any.
    fn preload(self, args: &Args) -> Option<PathBuf> {
        match self {
            Row::BaselineMimalloc => Some(args.mimalloc.clone()),
            Row::BaselineJemalloc => Some(args.jemalloc.clone()),
            _ => None,
        }
    }
    /// Whether the row's production build is the mimalloc-linked one (the Rust rows, and the
    /// null engine, whose front is the Rust row's).
    fn production_build(self) -> bool {
        matches!(self, Row::Rust | Row::RustMemory | Row::NullEngine)
    }
    /// Server flags of this row besides the common ones.
    fn server_args(self) -> &'static [&'static str] {
        match self {
            Row::RustMemory => &["--economy-store", "memory"],
            _ => &[],
        }
    }
}

#[derive(Parser, Debug)]
#[command(name = "mmo-compare", about = "Rust core against the C++ baseline: heaptrack, perf and latency, side by side")]
struct Args {
    /// Short phases, one repeat, the rows rust, rust-memory, baseline and null-engine (about
    /// 5 minutes on a 2-core machine); the default is the full run.
    #[arg(long)]
    quick: bool,
    /// Seconds per phase (default: 6 quick, 30 full).
    #[arg(long)]
    phase_s: Option<u64>,
    /// Bots (default: 500 quick, 1000 full).
    #[arg(long)]
    players: Option<u32>,
    /// Rows to run (default: all six; rust, rust-memory, baseline and null-engine with --quick).
    #[arg(long, value_enum, value_delimiter = ',')]
    rows: Vec<Row>,
    /// Plain runs of each row, interleaved (default: 3 full, 1 quick).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    repeats: Option<u32>,
    /// Give the server and the load tester disjoint CPUs (the first half to the server, the
    /// rest to the tester) when the machine has at least 4; otherwise run unpinned and say so.
    #[arg(long)]
    pin: bool,
    /// The load tester's scheduling class: `auto` runs it in `SCHED_IDLE` when it shares the
    /// server's CPUs (not pinned) and in the normal class when it has its own.
    #[arg(long, value_enum, default_value_t = TesterSchedChoice::Auto)]
    tester_sched: TesterSchedChoice,
    /// Where the report goes.
    #[arg(long, default_value = "report")]
    out: PathBuf,
    /// The production server build (mimalloc).
    #[arg(long, default_value = "build/cpp/mmo-server")]
    server: PathBuf,
    /// The system-allocator server build.
    #[arg(long, default_value = "build/cpp-sysalloc/mmo-server")]
    sysalloc_server: PathBuf,
    /// The load tester.
    #[arg(long, default_value = "target/release/mmo-loadtest")]
    loadtest: PathBuf,
    /// libjemalloc for the baseline-jemalloc row.
    #[arg(long, default_value = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")]
    jemalloc: PathBuf,
    /// libmimalloc for the baseline-mimalloc row.
    #[arg(long, default_value = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2")]
    mimalloc: PathBuf,
    /// Server I/O threads.
    #[arg(long, default_value_t = 2)]
    server_threads: u32,
    /// Where `make capacity` left its searches (`<engine>-<scenario>.json`): the report's
    /// capacity table reads them, stating when each was measured; missing ones are left out.
    #[arg(long, default_value = "report/capacity")]
    capacity_dir: PathBuf,
    /// Skip the heaptrack runs.
    #[arg(long)]
    no_heaptrack: bool,
    /// Perf runs of each row, interleaved (default: 3 full, 1 quick); each profile's figures
    /// are a run of their own in the report's medians.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=20))]
    perf_repeats: Option<u32>,
    /// Skip the perf runs.
    #[arg(long)]
    no_perf: bool,
    /// Keep each perf run's recording (`perf-<row>[-<run>].data` in the report's folder) for
    /// `perf report` or `perf annotate`; by default each is deleted once folded.
    #[arg(long)]
    keep_perf_data: bool,
}

/// `--tester-sched`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TesterSchedChoice {
    /// `idle` unpinned, `normal` pinned.
    Auto,
    /// The default class, the server's.
    Normal,
    /// `SCHED_IDLE`.
    Idle,
}

const ADMIN_KEY: &str = "0xc0a1e5ce";

/// What the runs of one row produced.
#[derive(Default)]
struct RowResult {
    /// The load tester's report of each plain steady run, in the order run.
    plain_steady: Vec<serde_json::Value>,
    /// The same for the raid runs.
    plain_raid: Vec<serde_json::Value>,
    heap_steady_short: Option<(heaptrack::HeapFigures, u64)>,
    heap_steady_long: Option<(heaptrack::HeapFigures, u64)>,
    heap_raid: Option<(heaptrack::HeapFigures, u64, u64)>,
    /// The first perf run's top symbols and flame graph.
    top_symbols: Vec<perf::TopSymbol>,
    flamegraph: Option<String>,
    /// Each perf run's figures, in the order run.
    perf_runs: Vec<PerfRun>,
    notes: Vec<String>,
}

/// What one perf run (raid load) of a row measured.
#[derive(Clone, Copy, Debug, Default)]
struct PerfRun {
    /// Shares of the samples by whole stack: engine, store, kernel outside engine calls, and
    /// stacks that do not reach a known root.
    shares: perf::Shares,
    /// The server's CPU (user + system) per update over that run.
    cpu_ns_per_update: Option<f64>,
}

struct Harness {
    args: Args,
    /// This comparison's connect-token key pair (public: the servers; private: the tester).
    token_public_key: PathBuf,
    token_secret_key: PathBuf,
    phase: Duration,
    players: u32,
    /// CPUs for the server and for the load tester (both empty when unpinned).
    pin: CpuPlan,
    /// Servers started so far: each gets its own `--data-dir` (its economy store starts
    /// empty, so every run's bots create their accounts with the starting gold).
    servers_started: std::sync::atomic::AtomicU32,
}

/// Which CPUs the server and the load tester run on.
#[derive(Clone, Debug, Default)]
struct CpuPlan {
    server: Vec<usize>,
    tester: Vec<usize>,
    /// The load tester's scheduling class (`mmo-loadtest --sched`).
    tester_sched: TesterSched,
    /// What the report says about pinning and the tester's class.
    note: String,
}

impl CpuPlan {
    /// Splits the CPUs this process may use: the first half to the server, the rest to the
    /// tester, when asked and there are at least four.
    fn new(asked: bool, sched: TesterSchedChoice) -> CpuPlan {
        let mut plan = CpuPlan::split(asked);
        let shared = plan.tester.is_empty();
        plan.tester_sched = match sched {
            // Tried on a thread of our own first: where SCHED_IDLE is refused, `auto` runs the
            // tester in the normal class and says so instead of failing every run.
            TesterSchedChoice::Auto if shared => match std::thread::spawn(mmo_loadtest::system::set_thread_sched_idle).join() {
                Ok(Ok(())) => TesterSched::Idle,
                Ok(Err(e)) => {
                    plan.note.push_str(&format!("; load tester in the normal class (SCHED_IDLE refused: {e})"));
                    TesterSched::Normal
                }
                Err(_) => TesterSched::Normal,
            },
            TesterSchedChoice::Auto | TesterSchedChoice::Normal => TesterSched::Normal,
            TesterSchedChoice::Idle => TesterSched::Idle,
        };
        if plan.tester_sched == TesterSched::Idle {
            plan.note.push_str(if shared {
                "; load tester in SCHED_IDLE (the server's threads preempt it as they wake)"
            } else {
                "; load tester in SCHED_IDLE"
            });
        }
        plan
    }

    fn split(asked: bool) -> CpuPlan {
        let cpus = mmo_loadtest::system::allowed_cpus();
        if !asked {
            return CpuPlan {
                note: "not pinned (run with --pin to give the server and the tester their own CPUs)".into(),
                ..CpuPlan::default()
            };
        }
        if cpus.len() < 4 {
            return CpuPlan {
                note: format!("not pinned: --pin asked, but {} CPUs are too few to give the server and the tester their own", cpus.len()),
                ..CpuPlan::default()
            };
        }
        let (server, tester) = cpus.split_at(cpus.len() / 2);
        CpuPlan {
            server: server.to_vec(),
            tester: tester.to_vec(),
            tester_sched: TesterSched::Normal,
            note: format!("pinned: server on CPUs {server:?}, load tester on CPUs {tester:?}"),
        }
    }
}

impl Harness {
    /// A data directory no server has used, beside the key pair.
    fn fresh_data_dir(&self) -> PathBuf {
        let n = self.servers_started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self.token_public_key.with_file_name(format!("server-data-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn server_spec(&self, row: Row, production: bool, wrapper: Wrapper) -> ServerSpec {
        let binary = if production && row.production_build() { self.args.server.clone() } else { self.args.sysalloc_server.clone() };
        let mut args: Vec<String> = vec![
            "--engine".into(),
            row.engine().into(),
            "--admin-key".into(),
            ADMIN_KEY.into(),
            "--threads".into(),
            self.args.server_threads.to_string(),
            "--stats-interval-s".into(),
            "0".into(),
            "--max-players".into(),
            (self.players + 64).to_string(),
            "--token-public-key".into(),
            self.token_public_key.display().to_string(),
            "--data-dir".into(),
            self.fresh_data_dir().display().to_string(),
            "--spawn-points".into(),
            mmo_loadtest::run::LOADTEST_SPAWN_POINTS.into(),
        ];
        args.extend(row.server_args().iter().map(|a| (*a).to_string()));
        ServerSpec { binary, args, preload: row.preload(&self.args), wrapper, cpus: self.pin.server.clone() }
    }

    fn loadtest_args(&self, scenario: &str, duration: Duration, out_dir: Option<&Path>) -> Vec<String> {
        let mut a = vec![
            "--scenario".into(),
            scenario.into(),
            "--players".into(),
            self.players.to_string(),
            "--duration".into(),
            format!("{}s", duration.as_secs()),
            "--admin-key".into(),
            ADMIN_KEY.into(),
            "--token-secret-key".into(),
            self.token_secret_key.display().to_string(),
        ];
        if scenario == "raid" {
            a.extend(["--raid-every".into(), "4s".into(), "--raid-objects".into(), "11000".into()]);
        }
        if let Some(dir) = out_dir {
            a.extend(["--out-dir".into(), dir.display().to_string()]);
        }
        if !self.pin.tester.is_empty() {
            let list: Vec<String> = self.pin.tester.iter().map(ToString::to_string).collect();
            a.extend(["--pin".into(), list.join(","), "--threads".into(), self.pin.tester.len().to_string()]);
        }
        a.extend(["--sched".into(), self.pin.tester_sched.name().into()]);
        a
    }

    /// One server, one load, stop; returns the load tester's report.
    fn plain_run(&self, row: Row, scenario: &str, duration: Duration, tag: &str) -> Result<serde_json::Value> {
        let server = ServerProcess::start(&self.server_spec(row, true, Wrapper::None))?;
        let dir = self.args.out.join(format!("{}-{tag}", row.name()));
        std::fs::create_dir_all(&dir)?;
        let (json, passed) = process::run_loadtest(
            &self.args.loadtest,
            server.port,
            &self.loadtest_args(scenario, duration, Some(&dir)),
            &dir.join("loadtest.json"),
        )?;
        server.stop()?;
        if !passed {
            eprintln!("mmo-compare: note: {} {tag}: the load tester's own checks failed (figures kept)", row.name());
        }
        Ok(json)
    }

    /// One server under heaptrack; returns its figures and the updates it applied.
    fn heap_run(&self, row: Row, scenario: &str, duration: Duration, tag: &str) -> Result<(heaptrack::HeapFigures, serde_json::Value)> {
        let prefix = self.args.out.join("heaptrack").join(format!("{}-{tag}", row.name()));
        std::fs::create_dir_all(prefix.parent().unwrap_or(Path::new(".")))?;
        let server = ServerProcess::start(&self.server_spec(row, false, Wrapper::Heaptrack { output_prefix: prefix.clone() }))?;
        let json_path = self.args.out.join("heaptrack").join(format!("{}-{tag}.json", row.name()));
        let (json, _) = process::run_loadtest(&self.args.loadtest, server.port, &self.loadtest_args(scenario, duration, None), &json_path)?;
        server.stop()?;
        let trace = find_trace(&prefix)?;
        Ok((heaptrack::summarize(&trace)?, json))
    }

    /// Perf run `rep` of a row (raid load): its shares and CPU per update; the first also
    /// writes the row's top symbols and flame graph.
    fn perf_run(&self, row: Row, rep: u32, result: &mut RowResult) -> Result<()> {
        let server = ServerProcess::start(&self.server_spec(row, true, Wrapper::None))?;
        // Run 1's files are `perf-<row>.<ext>`, run n's `perf-<row>-<n>.<ext>`.
        let file = |ext: &str| {
            let name = if rep == 0 { format!("perf-{}.{ext}", row.name()) } else { format!("perf-{}-{}.{ext}", row.name(), rep + 1) };
            self.args.out.join(name)
        };
        let data = file("data");
        let recording = perf::record(server.server_pid, &data)?;
        let json_path = file("json");
        let outcome = process::run_loadtest(&self.args.loadtest, server.port, &self.loadtest_args("raid", self.phase, None), &json_path);
        recording.finish()?;
        server.stop()?;
        let (json, _) = outcome?;
        let folded = perf::fold(&data)?;
        if rep == 0 {
            result.top_symbols = perf::top_symbols(&data, 15)?;
            let svg = format!("flame-{}.svg", row.name());
            perf::flamegraph(&folded, &format!("mmo-server --engine {} (raid load), cpu-clock", row.engine()), &self.args.out.join(&svg))?;
            result.flamegraph = Some(svg);
        }
        let cpu_ns_per_update = report::cpu_ns_per_update(Some(&json));
        result.perf_runs.push(PerfRun { shares: perf::Shares::of(&String::from_utf8_lossy(&folded)), cpu_ns_per_update });
        if !self.args.keep_perf_data {
            let _ = std::fs::remove_file(&data);
        }
        Ok(())
    }

    /// One step of a row's runs, timed and reported on stderr; a failure becomes a note.
    fn step(&self, row: Row, what: &str, r: &mut RowResult, f: &mut dyn FnMut(&mut RowResult) -> Result<()>) {
        let t0 = Instant::now();
        eprint!("mmo-compare: {:<18} {:<28}", row.name(), what);
        match f(r) {
            Ok(()) => eprintln!(" {:>5.1} s", t0.elapsed().as_secs_f64()),
            Err(e) => {
                eprintln!(" FAILED: {e:#}");
                r.notes.push(format!("{what}: {e:#}"));
            }
        }
    }

    /// Repeat `rep` of a row's plain runs (steady, then raid).
    fn run_plain(&self, row: Row, rep: u32, r: &mut RowResult) {
        let tag = |phase: &str| if rep == 0 { phase.to_string() } else { format!("{phase}-{}", rep + 1) };
        self.step(row, &format!("plain steady #{}", rep + 1), r, &mut |r| {
            r.plain_steady.push(self.plain_run(row, "steady", self.phase, &tag("steady"))?);
            Ok(())
        });
        self.step(row, &format!("plain raid #{}", rep + 1), r, &mut |r| {
            r.plain_raid.push(self.plain_run(row, "raid", self.phase, &tag("raid"))?);
            Ok(())
        });
    }

    /// A row's heaptrack runs (once: allocation counts do not drift with the machine's load).
    fn run_heaptrack(&self, row: Row, heaptrack_ok: bool, r: &mut RowResult) {
        if heaptrack_ok && row.preload(&self.args).is_some() {
            r.notes.push("heaptrack runs skipped for this row: heaptrack does not see the allocations of a preloaded allocator; its allocation calls are the baseline row's (the same code)".into());
        } else if heaptrack_ok {
            self.step(row, "heaptrack steady T", r, &mut |r| {
                let (h, j) = self.heap_run(row, "steady", self.phase, "steady-short")?;
                r.heap_steady_short = Some((h, server_figure(&j, "engine_moves_applied")));
                Ok(())
            });
            self.step(row, "heaptrack steady 2T", r, &mut |r| {
                let (h, j) = self.heap_run(row, "steady", self.phase * 2, "steady-long")?;
                r.heap_steady_long = Some((h, server_figure(&j, "engine_moves_applied")));
                Ok(())
            });
            self.step(row, "heaptrack raid T", r, &mut |r| {
                let (h, j) = self.heap_run(row, "raid", self.phase, "raid")?;
                r.heap_raid = Some((h, server_figure(&j, "engine_moves_applied"), server_figure(&j, "engine_raid_bursts")));
                Ok(())
            });
        } else {
            r.notes.push("heaptrack runs skipped (heaptrack not installed or --no-heaptrack)".into());
        }
    }
}

/// A figure from the `server` object of a load tester report (0 if absent).
fn server_figure(report: &serde_json::Value, name: &str) -> u64 {
    report.get("server").and_then(|s| s.get(name)).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// heaptrack appends `.zst` or `.gz` (and sometimes the pid) to the prefix it was given.
fn find_trace(prefix: &Path) -> Result<PathBuf> {
    let dir = prefix.parent().unwrap_or(Path::new("."));
    let stem = prefix.file_name().and_then(|s| s.to_str()).unwrap_or("");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(stem) && (n.ends_with(".zst") || n.ends_with(".gz")))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some(p) => Ok(p),
        None => bail!("heaptrack wrote no trace for {}", prefix.display()),
    }
}

fn tool_available(name: &str) -> bool {
    std::process::Command::new(name)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

fn main() -> Result<()> {
    let args = Args::parse();
    let phase = Duration::from_secs(args.phase_s.unwrap_or(if args.quick { 6 } else { 30 }));
    let players = args.players.unwrap_or(if args.quick { 500 } else { 1000 });
    let repeats = args.repeats.unwrap_or(if args.quick { 1 } else { 3 });
    let perf_repeats = args.perf_repeats.unwrap_or(if args.quick { 1 } else { 3 });
    let rows: Vec<Row> = if !args.rows.is_empty() {
        args.rows.clone()
    } else if args.quick {
        vec![Row::Rust, Row::RustMemory, Row::Baseline, Row::NullEngine]
    } else {
        vec![Row::Rust, Row::RustMemory, Row::Baseline, Row::BaselineMimalloc, Row::BaselineJemalloc, Row::NullEngine]
    };
    for (what, path) in [("server", &args.server), ("system-allocator server", &args.sysalloc_server), ("load tester", &args.loadtest)] {
        if !path.exists() {
            bail!("the {what} binary {} does not exist: run `make compare` (it builds everything first)", path.display());
        }
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let heaptrack_ok = !args.no_heaptrack && tool_available("heaptrack_print");
    let perf_ok = !args.no_perf && perf::available();
    let started = Instant::now();
    let pin = CpuPlan::new(args.pin, args.tester_sched);
    eprintln!("mmo-compare: {}", pin.note);
    // A fresh connect-token key pair for this comparison, as an operator's backend would hold.
    let keys = args.out.join("token-keys");
    let _ = std::fs::remove_dir_all(&keys);
    let (token_public_key, token_secret_key) = mmo_loadtest::token::TokenMinter::generate()?.write_key_pair(&keys, "token")?;
    let harness = Harness { args, token_public_key, token_secret_key, phase, players, pin, servers_started: Default::default() };
    let mut results: Vec<RowResult> = rows.iter().map(|_| RowResult::default()).collect();
    // Interleaved: A B C D E, A B C D E, ... so a drift in the machine spreads over the rows.
    for rep in 0..repeats {
        for (row, r) in rows.iter().zip(results.iter_mut()) {
            harness.run_plain(*row, rep, r);
        }
    }
    for (row, r) in rows.iter().zip(results.iter_mut()) {
        harness.run_heaptrack(*row, heaptrack_ok, r);
    }
    for rep in 0..perf_repeats {
        for (row, r) in rows.iter().zip(results.iter_mut()) {
            if perf_ok {
                harness.step(*row, &format!("perf (raid load) #{}", rep + 1), r, &mut |r| harness.perf_run(*row, rep, r));
            } else if rep == 0 {
                r.notes.push("perf runs skipped (perf cannot record here or --no-perf)".into());
            }
        }
    }
    let rows: Vec<(&'static str, RowResult)> = rows.iter().map(|r| r.name()).zip(results).collect();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let summary = report::write(
        &harness.args.out,
        &rows,
        &report::RunInfo {
            command,
            quick: harness.args.quick,
            phase_s: phase.as_secs(),
            players,
            server_threads: harness.args.server_threads,
            repeats,
            perf_repeats: if perf_ok { perf_repeats } else { 0 },
            pinning: harness.pin.note.clone(),
            elapsed_s: started.elapsed().as_secs_f64(),
            capacity: report::read_capacity(&harness.args.capacity_dir),
        },
    )?;
    println!("{summary}");
    Ok(())
}
