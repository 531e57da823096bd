//! The progress bar (indicatif) while a run is under way: its phase, the time through the
//! planned run, and the moves sent and acknowledged so far (from counters the bots add to
//! about once a second, not per packet). Hidden with `--quiet` or when stderr is not a
//! terminal; then phase notes go to stderr as plain lines (unless `--quiet`).

use crate::bot::LiveCounters;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The run's progress display.
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
}

impl Progress {
    /// A progress bar on stderr, hidden when `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Progress {
        let target = if quiet || !std::io::stderr().is_terminal() { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
        let bar = ProgressBar::with_draw_target(Some(0), target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {percent:>3}% {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar, quiet }
    }

    /// Shows what the run is doing.
    pub fn phase(&self, message: &str) {
        self.bar.set_message(message.to_string());
    }

    /// Prints a line above the bar (or to stderr when the bar is hidden, unless quiet).
    pub fn note(&self, line: &str) {
        if self.bar.is_hidden() {
            if !self.quiet {
                eprintln!("mmo-loadtest: {line}");
            }
        } else {
            self.bar.println(line);
        }
    }

    /// Follows the play phase until `end + drain` (or a stop): position is time through the
    /// planned play, the message the phase and the live counters.
    pub fn start_play(
        &self,
        move_start: Instant,
        measure_start: Instant,
        end: Instant,
        drain: Duration,
        live: Arc<LiveCounters>,
        stop: Arc<AtomicBool>,
    ) {
        let total = (end + drain).saturating_duration_since(move_start);
        self.bar.set_length(total.as_millis() as u64);
        self.bar.set_position(0);
        self.note(&format!(
            "playing: warm-up {:.1} s, measuring {:.1} s",
            (measure_start - move_start).as_secs_f64(),
            (end - measure_start).as_secs_f64()
        ));
        if self.bar.is_hidden() {
            return;
        }
        let bar = self.bar.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let now = Instant::now();
                let phase = if stop.load(Ordering::Relaxed) {
                    "stopping"
                } else if now < measure_start {
                    "warm-up"
                } else if now < end {
                    "measuring"
                } else {
                    "draining"
                };
                let sent = live.moves_sent.load(Ordering::Relaxed);
                let acks = live.acks.load(Ordering::Relaxed);
                bar.set_position(now.saturating_duration_since(move_start).as_millis() as u64);
                bar.set_message(format!("{phase}: moves {sent}, acks {acks}"));
                if now >= end + drain || bar.is_finished() {
                    break;
                }
            }
        });
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
