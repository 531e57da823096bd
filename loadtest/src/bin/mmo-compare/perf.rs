//! Sampling a running server with `perf record -e cpu-clock` (the only event this kind of VM
//! offers), then its top symbols from `perf report` and a flame graph with inferno.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::io::BufReader;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `perf record` attached to a running process.
pub struct Recording {
    child: Child,
}

/// Starts `perf record -e cpu-clock -F 999 -g -p <pid> -o <data>`.
pub fn record(pid: u32, data: &Path) -> Result<Recording> {
    let child = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-F", "999", "-g", "-p"])
        .arg(pid.to_string())
        .arg("-o")
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting perf record")?;
    Ok(Recording { child })
}

impl Recording {
    /// Stops the recording (SIGINT, as Ctrl-C would) and waits for perf to write its file.
    pub fn finish(mut self) -> Result<()> {
        // SAFETY: kill(2) on our own child with SIGINT.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait()? {
                // perf exits 0 or with 130-ish after SIGINT depending on version; the file is what matters.
                let _ = status;
                return Ok(());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("perf record did not stop within 60 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// One line of the top-symbols table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopSymbol {
    /// Share of all samples, percent (self time, children not included).
    pub percent: f64,
    /// The symbol (or `[unknown]`).
    pub symbol: String,
}

/// The `limit` symbols with the most self samples.
pub fn top_symbols(data: &Path, limit: usize) -> Result<Vec<TopSymbol>> {
    let out = Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--sort", "symbol", "--percent-limit", "0.5", "-i"])
        .arg(data)
        .output()
        .context("running perf report")?;
    if !out.status.success() {
        bail!("perf report failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(parse_report(&String::from_utf8_lossy(&out.stdout), limit))
}

/// Parses `perf report --stdio --no-children --sort symbol` lines such as
/// `    12.34%  [.] mmo_core::grid::Grid::for_each_near` (call-graph lines below each entry
/// and comments are skipped).
pub fn parse_report(text: &str, limit: usize) -> Vec<TopSymbol> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        let Some((pct, rest)) = t.split_once('%') else { continue };
        let Ok(percent) = pct.trim().parse::<f64>() else { continue };
        let rest = rest.trim();
        let symbol = rest.strip_prefix("[.]").or_else(|| rest.strip_prefix("[k]")).unwrap_or(rest).trim();
        // perf pads the symbol column and may append empty columns ("-      -"): keep the name.
        let symbol = symbol.split("  ").next().unwrap_or("").trim();
        if symbol.is_empty() {
            continue;
        }
        out.push(TopSymbol { percent, symbol: symbol.to_string() });
        if out.len() == limit {
            break;
        }
    }
    out
}

/// Which frames belong to the engine under test (the part that differs between rows).
pub const ENGINE_FRAME_MARKERS: [&str; 3] = ["mmo_core::", "mmo_ffi::", "mmo::baseline::"];

/// The economy store's threads, the committer and the log's checkpoint thread (their names,
/// the folded stack's first frame; the kernel cuts thread names to 15 bytes): their whole
/// stacks are the store's, user and kernel alike.
pub const STORE_THREADS: [&str; 2] = ["mmo-economy-com", "mmo-economy-che"];

/// Whether a folded stack is the store's: sampled on one of its threads.
fn is_store(stack: &str) -> bool {
    stack.split(';').next().is_some_and(|thread| STORE_THREADS.iter().any(|t| thread.starts_with(t)))
}

/// The share of samples (0..1) whose folded stack (`frame;frame;frame count` lines) `counts`.
fn share(folded: &str, counts: impl Fn(&str) -> bool) -> Option<f64> {
    let (mut counted, mut total) = (0u64, 0u64);
    for line in folded.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else { continue };
        let Ok(count) = count.parse::<u64>() else { continue };
        total += count;
        if counts(stack) {
            counted += count;
        }
    }
    (total > 0).then(|| counted as f64 / total as f64)
}

/// Frames of the front's latency instrument. The front records its latency histograms
/// through the Rust library's C ABI (`mmo_latency_record`, hdrhistogram inside), in every row
/// alike, the null engine's included (about 0.2 µs per update in each): that is the front's
/// measuring, not the engine under test, so a stack through it is the front's even where it
/// passes through `mmo_ffi::`.
pub const INSTRUMENT_FRAME_MARKERS: [&str; 2] = ["mmo_latency_", "hdrhistogram::"];

/// Whether a folded stack passes through the engine (and not through the front's latency
/// instrument, [`INSTRUMENT_FRAME_MARKERS`]).
fn in_engine(stack: &str) -> bool {
    ENGINE_FRAME_MARKERS.iter().any(|m| stack.contains(m)) && !INSTRUMENT_FRAME_MARKERS.iter().any(|m| stack.contains(m))
}

/// The share of samples (0..1) whose stack holds an engine frame, the store's
/// ([`store_share`]) apart.
pub fn engine_share(folded: &str) -> Option<f64> {
    share(folded, |stack| in_engine(stack) && !is_store(stack))
}

/// The share of samples (0..1) on the economy's store threads: making wallet changes durable
/// (the committer's appends and fsyncs to the commit log, the checkpoint thread's redb
/// transactions, and the kernel's work for both). Only a row that persists has any.
pub fn store_share(folded: &str) -> Option<f64> {
    share(folded, is_store)
}

/// Frames a complete user stack starts from: the process's entry and a thread's start. glibc
/// and libstdc++ are built without frame pointers, and glibc clears the frame pointer where a
/// thread or the process begins, so a whole chain ends at the first function they call there:
/// `__libc_start_call_main` (the main thread), `execute_native_thread_routine` (a
/// `std::thread`), `start_thread` (any pthread); `_start` and `clone3` where the unwinder sees
/// further.
pub const ROOT_FRAMES: [&str; 8] = [
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone",
    "clone3",
    "__clone3",
    "execute_native_thread_routine",
];

/// Whether `frame` (a folded frame) is where a whole stack starts: one of [`ROOT_FRAMES`], or
/// an unsymbolized frame in libstdc++ (inferno names it by its library): Debian ships
/// libstdc++ stripped, and the one libstdc++ function at the bottom of a thread's stack is its
/// `std::thread` trampoline, `execute_native_thread_routine`.
pub fn is_root_frame(frame: &str) -> bool {
    ROOT_FRAMES.iter().any(|r| frame == *r || frame.starts_with(&format!("{r}@"))) || frame.starts_with("[libstdc++.so")
}

/// The share of samples (0..1) whose stack does not reach a known root ([`ROOT_FRAMES`]),
/// from folded stacks whose first frame is the thread's name (inferno's perf folder). A frame
/// pointer chain broken by code built without frame pointers ends early, at an `[unknown]`
/// frame or a function in the middle of the call path; those samples cannot be placed in the
/// whole stack, so a profile is only read by whole stacks when this share is small.
pub fn unknown_root_share(folded: &str) -> Option<f64> {
    share(folded, |stack| {
        let root = stack.split(';').nth(1).unwrap_or("");
        !is_root_frame(root.strip_suffix("_[k]").unwrap_or(root))
    })
}

/// The share of samples (0..1) in the kernel on the front's behalf: no engine frame in the
/// stack, and the sampled (leaf) frame a kernel one (inferno marks kernel frames `_[k]` when
/// asked to annotate them). What is left, neither engine nor kernel, is the network front's
/// own user code (codec, admission, the workers' loops, the C library they call).
pub fn kernel_share(folded: &str) -> Option<f64> {
    share(folded, |stack| stack.rsplit(';').next().unwrap_or("").ends_with("_[k]") && !in_engine(stack) && !is_store(stack))
}

/// What a profile's whole stacks say. Engine, store, kernel and front shares add up to 1.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shares {
    /// Share of samples with an engine frame anywhere in the stack ([`engine_share`]).
    pub engine: Option<f64>,
    /// Share of samples on the economy's store threads ([`store_share`]).
    pub store: Option<f64>,
    /// Share of samples in the kernel outside any engine call ([`kernel_share`]).
    pub kernel: Option<f64>,
    /// Share of samples whose stack does not reach a known root ([`unknown_root_share`]).
    pub unknown_root: Option<f64>,
}

impl Shares {
    /// Every share of one profile's folded stacks.
    pub fn of(folded: &str) -> Self {
        Self {
            engine: engine_share(folded),
            store: store_share(folded),
            kernel: kernel_share(folded),
            unknown_root: unknown_root_share(folded),
        }
    }
}

/// `perf script` | collapse (inferno): one line per distinct whole stack, its first frame the
/// thread's name, kernel frames marked `_[k]` (the split between the front and the kernel
/// reads them).
pub fn fold(data: &Path) -> Result<Vec<u8>> {
    let script = Command::new("perf").args(["script", "-i"]).arg(data).stderr(Stdio::null()).output().context("running perf script")?;
    if !script.status.success() {
        bail!("perf script failed");
    }
    let mut folded = Vec::new();
    use inferno::collapse::Collapse;
    let mut options = inferno::collapse::perf::Options::default();
    options.annotate_kernel = true;
    let mut folder = inferno::collapse::perf::Folder::from(options);
    folder.collapse(BufReader::new(&script.stdout[..]), &mut folded).context("collapsing perf stacks")?;
    Ok(folded)
}

/// A flame graph SVG (inferno) of `folded` stacks into `svg`, and the folded stacks beside it
/// (`.folded`: the input of any other flame graph tool).
pub fn flamegraph(folded: &[u8], title: &str, svg: &Path) -> Result<()> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    let file = std::fs::File::create(svg).with_context(|| format!("creating {}", svg.display()))?;
    inferno::flamegraph::from_reader(&mut options, folded, std::io::BufWriter::new(file)).context("drawing the flame graph")?;
    std::fs::write(svg.with_extension("folded"), folded).with_context(|| format!("writing {}", svg.with_extension("folded").display()))
}

/// Whether `perf` can record here (it is installed and the kernel lets this user sample).
pub fn available() -> bool {
    Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-o", "/dev/null", "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_share_counts_stacks_through_either_engine() {
        let folded = "main;mmo::net::Worker::run;mmo_ffi::mmo_apply_moves;mmo_core::grid::Grid::for_each_near 30\nmain;__sendmmsg 60\nmain;mmo::baseline::Grid::nearest_k 10\n";
        assert_eq!(engine_share(folded), Some(0.4));
        assert_eq!(engine_share(""), None);
    }

    #[test]
    fn the_fronts_latency_histograms_are_not_engine_time() {
        // 30 samples in an engine call, 20 recording an update's latency through the Rust
        // library (the entry's own frame, the FFI boundary, hdrhistogram; 5 of them with the
        // entry frame lost), 50 in the front.
        let folded = "w;start_thread;mmo::net::Worker::flush_engine_batches;mmo_apply_moves;mmo_core::engine::Engine::apply_moves 30\n\
                      w;start_thread;mmo::net::Worker::flush_engine_batches;mmo_latency_record 3\n\
                      w;start_thread;mmo::net::Worker::flush_engine_batches;mmo_latency_record;mmo_ffi::boundary::boundary_or 4\n\
                      w;start_thread;mmo::net::Worker::flush_engine_batches;mmo_latency_record;mmo_ffi::boundary::boundary_or;hdrhistogram::Histogram<T>::record_n_inner 8\n\
                      w;start_thread;mmo_ffi::boundary::boundary_or;hdrhistogram::Histogram<T>::record_n_inner 5\n\
                      w;start_thread;mmo::net::Worker::run 50";
        assert_eq!(engine_share(folded), Some(0.3));
    }

    #[test]
    fn the_committer_threads_stacks_are_the_stores_not_the_engines_or_the_kernels() {
        // 20 samples on the store's threads (the committer's append and fsync in the kernel, the
        // checkpoint thread's redb commit), 30 in the engine on a worker, 10 in the kernel under
        // the front, 40 in the front.
        let folded = "mmo-economy-com;start_thread;mmo_core::durability::start;mmo_core::commit_log::LoggedStore::commit 12\n\
                      mmo-economy-com;start_thread;mmo_core::durability::start;fdatasync;do_fsync_[k] 3\n\
                      mmo-economy-che;start_thread;mmo_core::commit_log::start_checkpointer;redb::commit 5\n\
                      mmo-server;start_thread;mmo::net::Worker::run;mmo_ffi::mmo_apply_moves;mmo_core::Engine::apply_moves 30\n\
                      mmo-server;start_thread;mmo::net::Worker::run;sendmmsg;udp_sendmsg_[k] 10\n\
                      mmo-server;start_thread;mmo::net::Worker::run 40";
        assert_eq!(store_share(folded), Some(0.2));
        assert_eq!(engine_share(folded), Some(0.3));
        assert_eq!(kernel_share(folded), Some(0.1));
        assert_eq!(store_share("mmo-server;start_thread 5"), Some(0.0), "a row that persists nothing");
    }

    #[test]
    fn kernel_share_is_kernel_leaves_outside_engine_calls() {
        // 20 samples in the kernel under the front (sendmmsg), 10 in the kernel under an engine
        // call (a page fault: the engine's), 30 in the engine, 40 in the front's own code.
        let folded = "w;start_thread;mmo::net::Worker::flush;__sendmmsg;udp_sendmsg_[k] 20\nw;start_thread;mmo_ffi::mmo_apply_moves;mmo_core::grid::Grid::insert;asm_exc_page_fault_[k] 10\nw;start_thread;mmo_core::grid::Grid::for_each_near 30\nw;start_thread;mmo::net::Admission::admit 40\n";
        assert_eq!(kernel_share(folded), Some(0.2));
        assert_eq!(engine_share(folded), Some(0.4));
        assert_eq!(kernel_share(""), None);
    }

    #[test]
    fn unknown_roots_are_stacks_that_stop_short_of_the_entry_or_thread_start() {
        let folded = "mmo-server;_start;__libc_start_main;main 50\nmmo-worker;clone3;start_thread;mmo::net::Worker::run 30\nmmo-worker;[unknown];mmo_core::grid::Grid::for_each_near 15\nmmo-worker;mmo::net::Worker::run;recvmmsg 5\nmmo-worker;[libstdc++.so.6.0.30];mmo::net::Worker::run 100\n";
        let share = unknown_root_share(folded).unwrap();
        assert!((share - 0.1).abs() < 1e-9, "{share}");
        assert_eq!(unknown_root_share(""), None);
    }

    #[test]
    fn parses_top_symbols_and_skips_call_graph_lines() {
        let text = "# Samples: 1K of event 'cpu-clock'\n#\n    12.34%  [.] mmo_core::grid::Grid::for_each_near          -      -\n            |\n            ---main\n     3.50%  [k] __softirqentry_text_start\n     0.90%  [.] memcpy\n";
        let top = parse_report(text, 2);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0], TopSymbol { percent: 12.34, symbol: "mmo_core::grid::Grid::for_each_near".into() });
        assert_eq!(top[1].symbol, "__softirqentry_text_start");
    }
}
