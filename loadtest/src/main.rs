//! `mmo-loadtest`: runs one load-test scenario against `mmo-server` and reports.
//!
//! ```text
//! mmo-loadtest --scenario steady --players 500 --duration 20s
//! mmo-loadtest --scenario raid --admin-key 0xa11ce --json out/raid.json --out-dir out/raid
//! mmo-loadtest --find-capacity --scenario steady --admin-key 0xa11ce --duration 10s --out-dir out/cap
//! ```
//!
//! Exit status: 0 every check passed (with `--find-capacity`: the search ran and some step
//! passed), 1 a check failed (no step passed), 2 a usage or setup error (bad option, no
//! server, no admin reply where the scenario needs one).

use clap::Parser;
use mmo_loadtest::cli::{Cli, TesterSched};
use mmo_loadtest::plot::write_out_dir;
use mmo_loadtest::progress::Progress;
use mmo_loadtest::report::Report;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.print_spawn_points {
        println!("{}", mmo_loadtest::run::LOADTEST_SPAWN_POINTS);
        return ExitCode::SUCCESS;
    }
    // Before any other thread starts, so every tester thread inherits the class.
    if cli.sched == TesterSched::Idle
        && let Err(e) = mmo_loadtest::system::set_thread_sched_idle()
    {
        eprintln!("mmo-loadtest: --sched idle: sched_setscheduler(SCHED_IDLE) refused: {e}");
        return ExitCode::from(2);
    }
    // One tokio thread runs joins, leaves, the admin side and the progress bar; the bots play
    // on their own driver threads (`--threads`).
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mmo-loadtest: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let progress = Progress::new(cli.quiet);
    if cli.find_capacity {
        return find_capacity(&runtime, &cli, &progress);
    }
    let outcome = runtime.block_on(mmo_loadtest::run::run(cli.clone(), &progress));
    progress.finish();
    let result = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mmo-loadtest: {e:#}");
            return ExitCode::from(2);
        }
    };
    let report = Report::new(&result);
    print!("{}", report.summary());
    if let Some(path) = &cli.json
        && let Err(e) = write_file(path, report.to_json() + "\n")
    {
        eprintln!("mmo-loadtest: {e}");
        return ExitCode::from(2);
    }
    if let Some(dir) = &cli.out_dir {
        let t = &result.totals;
        let metrics = [
            ("move_rtt", &t.latencies.move_rtt, true),
            ("move_rtt_from_actual_send", &t.latencies.move_rtt_from_send, true),
            ("move_send_lag", &t.latencies.send_lag, false),
            ("move_rtt_during_raid", &t.latencies.move_rtt_raid, true),
            ("move_rtt_between_raids", &t.latencies.move_rtt_calm, true),
            ("economy_rtt", &t.latencies.economy_rtt, true),
            ("join_handshake", &result.join_us, true),
            ("aoi_interarrival", &t.latencies.aoi_gap, false),
        ];
        let title = format!("mmo-loadtest {}: {} bots, round trips from intended send time", cli.scenario.name(), result.joined);
        match write_out_dir(dir, &title, &metrics) {
            Ok(files) => {
                for f in files {
                    println!("wrote {}", f.display());
                }
            }
            Err(e) => {
                eprintln!("mmo-loadtest: {e:#}");
                return ExitCode::from(2);
            }
        }
    }
    if report.passed { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// `--find-capacity`: the search, its table, `--json` and `--out-dir/capacity.svg`.
fn find_capacity(runtime: &tokio::runtime::Runtime, cli: &Cli, progress: &Progress) -> ExitCode {
    let outcome = runtime.block_on(mmo_loadtest::capacity::find(cli, progress));
    progress.finish();
    let report = match outcome {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mmo-loadtest: {e:#}");
            return ExitCode::from(2);
        }
    };
    print!("{}", report.summary());
    if let Some(path) = &cli.json
        && let Err(e) = write_file(path, report.to_json() + "\n")
    {
        eprintln!("mmo-loadtest: {e}");
        return ExitCode::from(2);
    }
    if let Some(dir) = &cli.out_dir {
        let steps: Vec<(u32, u64, u64, bool)> =
            report.steps.iter().map(|s| (s.figures.players, s.figures.rtt_us.p50, s.figures.rtt_us.p99, s.verdict.passed)).collect();
        let title = format!("mmo-loadtest --find-capacity {}: move round trip by players", report.scenario);
        let path = dir.join("capacity.svg");
        let svg = match mmo_loadtest::plot::capacity_svg(&title, &steps, report.plan.rtt_p99_max_us) {
            Ok(svg) => svg,
            Err(e) => {
                eprintln!("mmo-loadtest: plotting: {e:#}");
                return ExitCode::from(2);
            }
        };
        if let Err(e) = write_file(&path, svg) {
            eprintln!("mmo-loadtest: {e}");
            return ExitCode::from(2);
        }
        println!("wrote {}", path.display());
    }
    if report.capacity > 0 { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Writes `text` to `path`, creating its folder; the error names the path.
fn write_file(path: &std::path::Path, text: String) -> Result<(), String> {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}
