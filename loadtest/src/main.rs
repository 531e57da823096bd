//! `mmo-loadtest`: runs one load-test scenario against `mmo-server` and reports.
//!
//! ```text
//! mmo-loadtest --scenario steady --players 500 --duration 20s
//! mmo-loadtest --scenario raid --admin-key 0xa11ce --json out/raid.json --out-dir out/raid
//! ```
//!
//! Exit status: 0 every check passed, 1 a check failed, 2 a usage or setup error (bad
//! option, no server, no admin reply where the scenario needs one).

use clap::Parser;
use mmo_loadtest::cli::Cli;
use mmo_loadtest::plot::write_out_dir;
use mmo_loadtest::progress::Progress;
use mmo_loadtest::report::Report;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(cli.worker_threads()).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mmo-loadtest: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let progress = Progress::new(cli.quiet);
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
        && let Err(e) = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, report.to_json() + "\n"))
    {
        eprintln!("mmo-loadtest: writing {}: {e}", path.display());
        return ExitCode::from(2);
    }
    if let Some(dir) = &cli.out_dir {
        let t = &result.totals;
        let metrics = [
            ("move_rtt", &t.move_rtt, true),
            ("move_rtt_from_actual_send", &t.move_rtt_from_send, true),
            ("move_send_lag", &t.send_lag, false),
            ("move_rtt_during_raid", &t.move_rtt_raid, true),
            ("move_rtt_between_raids", &t.move_rtt_calm, true),
            ("economy_rtt", &t.economy_rtt, true),
            ("join_handshake", &result.join_us, true),
            ("aoi_interarrival", &t.aoi_gap, false),
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
