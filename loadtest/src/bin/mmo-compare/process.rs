//! Running `mmo-server` and `mmo-loadtest` as child processes: start a server (plainly,
//! under heaptrack, or with a preloaded allocator), learn its port from its first line, run
//! the load tester against it, and stop it with SIGTERM so it writes its final figures and
//! heaptrack gets a complete trace.

use anyhow::{Context, Result, anyhow, bail};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to print its listening line (heaptrack slows start-up).
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to exit after SIGTERM (heaptrack writes its trace first).
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// How to start the server process.
#[derive(Clone, Debug)]
pub enum Wrapper {
    /// Run the binary directly.
    None,
    /// `heaptrack -o <prefix> <binary> ...`.
    Heaptrack { output_prefix: PathBuf },
}

/// One server to start.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// The `mmo-server` binary.
    pub binary: PathBuf,
    /// Its flags (the harness adds `--port 0`).
    pub args: Vec<String>,
    /// `LD_PRELOAD` for the server (for example libjemalloc), if any.
    pub preload: Option<PathBuf>,
    /// How to wrap it.
    pub wrapper: Wrapper,
    /// CPUs to pin the server (and its wrapper) to; empty for no pinning.
    pub cpus: Vec<usize>,
}

/// A running server.
pub struct ServerProcess {
    child: Child,
    /// The pid of `mmo-server` itself (the child's child under heaptrack).
    pub server_pid: u32,
    /// The UDP port it serves on.
    pub port: u16,
    output: mpsc::Receiver<String>,
    output_thread: Option<thread::JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts the server and waits for its listening line.
    pub fn start(spec: &ServerSpec) -> Result<ServerProcess> {
        let mut cmd = match &spec.wrapper {
            Wrapper::None => Command::new(&spec.binary),
            Wrapper::Heaptrack { output_prefix } => {
                let mut c = Command::new("heaptrack");
                c.arg("-o").arg(output_prefix).arg(&spec.binary);
                c
            }
        };
        // heaptrack prints its own summary on stderr; the report has the figures.
        let stderr = if matches!(spec.wrapper, Wrapper::Heaptrack { .. }) { Stdio::null() } else { Stdio::inherit() };
        cmd.args(&spec.args).args(["--port", "0"]).stdout(Stdio::piped()).stderr(stderr).stdin(Stdio::null());
        if let Some(lib) = &spec.preload {
            cmd.env("LD_PRELOAD", lib);
        }
        if !spec.cpus.is_empty() {
            let cpus = spec.cpus.clone();
            // SAFETY: the closure runs in the forked child before exec and only calls
            // sched_setaffinity (async-signal-safe) on a set built on its own stack.
            unsafe {
                use std::os::unix::process::CommandExt;
                cmd.pre_exec(move || {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for &c in &cpus {
                        libc::CPU_SET(c, &mut set);
                    }
                    if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        let mut child = cmd.spawn().with_context(|| format!("starting {}", spec.binary.display()))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        let (tx, rx) = mpsc::channel();
        let output_thread = thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + START_TIMEOUT;
        let port = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(port) = parse_listening_port(&line) {
                        break port;
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    bail!("{} printed no 'listening on' line within {:?}", spec.binary.display(), START_TIMEOUT);
                }
            }
        };
        let server_pid = match spec.wrapper {
            Wrapper::None => child.id(),
            Wrapper::Heaptrack { .. } => find_descendant(child.id(), &spec.binary)
                .ok_or_else(|| anyhow!("heaptrack is running but its mmo-server child was not found"))?,
        };
        Ok(ServerProcess { child, server_pid, port, output: rx, output_thread: Some(output_thread) })
    }

    /// Sends SIGTERM to the server and waits for it (and any wrapper) to exit; returns the
    /// server's output after its first line.
    pub fn stop(mut self) -> Result<Vec<String>> {
        // SAFETY: kill(2) with a pid we started and SIGTERM has no memory-safety preconditions.
        let rc = unsafe { libc::kill(self.server_pid as libc::pid_t, libc::SIGTERM) };
        if rc != 0 {
            bail!("SIGTERM to mmo-server (pid {}): {}", self.server_pid, std::io::Error::last_os_error());
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("mmo-server did not exit within {:?} of SIGTERM", STOP_TIMEOUT);
            }
            thread::sleep(Duration::from_millis(50));
        };
        if let Some(t) = self.output_thread.take() {
            let _ = t.join();
        }
        let lines: Vec<String> = self.output.try_iter().collect();
        if !status.success() {
            bail!("mmo-server exited with {status}; last lines: {:?}", lines.iter().rev().take(5).collect::<Vec<_>>());
        }
        Ok(lines)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: as in stop().
            unsafe { libc::kill(self.server_pid as libc::pid_t, libc::SIGKILL) };
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The port in "mmo-server: listening on 127.0.0.1:PORT ...".
pub fn parse_listening_port(line: &str) -> Option<u16> {
    let rest = line.split("listening on ").nth(1)?;
    let addr = rest.split_whitespace().next()?;
    addr.rsplit(':').next()?.parse().ok()
}

/// The first process below `root` (children, grandchildren, ...) whose executable is `binary`.
fn find_descendant(root: u32, binary: &Path) -> Option<u32> {
    let target = std::fs::canonicalize(binary).ok()?;
    let mut frontier = vec![root];
    for _ in 0..8 {
        let mut next = Vec::new();
        for pid in frontier {
            for child in children_of(pid) {
                if std::fs::read_link(format!("/proc/{child}/exe")).ok().as_deref() == Some(target.as_path()) {
                    return Some(child);
                }
                next.push(child);
            }
        }
        if next.is_empty() {
            return None;
        }
        frontier = next;
    }
    None
}

fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return out };
    for task in tasks.flatten() {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(task.path().join("children")) {
            let _ = f.read_to_string(&mut text);
        }
        out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

/// Runs `mmo-loadtest` to completion with `args` plus `--server 127.0.0.1:<port> --json
/// <json> --quiet`, and returns its JSON report. The load tester's own checks may fail (its
/// exit status is then non-zero); the harness reports its figures either way and says so.
pub fn run_loadtest(binary: &Path, port: u16, args: &[String], json: &Path) -> Result<(serde_json::Value, bool)> {
    let status = Command::new(binary)
        .args(args)
        .arg("--server")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--json")
        .arg(json)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .with_context(|| format!("running {}", binary.display()))?;
    let text = std::fs::read_to_string(json).with_context(|| format!("mmo-loadtest wrote no {} (exit {status})", json.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).with_context(|| format!("parsing {}", json.display()))?;
    Ok((value, status.success()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_port_is_parsed_from_the_first_line() {
        assert_eq!(parse_listening_port("mmo-server: listening on 127.0.0.1:40123 engine=rust threads=2"), Some(40123));
        assert_eq!(parse_listening_port("heaptrack output will be written to x"), None);
        assert_eq!(parse_listening_port("mmo-server: listening on nonsense"), None);
    }
}
