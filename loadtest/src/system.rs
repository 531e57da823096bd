//! What the load tester needs from the operating system: enough file descriptors for one
//! socket per bot (`RLIMIT_NOFILE`), its own CPU time and peak RSS (so a report shows what
//! the load generator itself cost on the shared machine), and the kernel's UDP counters
//! (`/proc/net/snmp`), whose receive-buffer errors are the one place loopback UDP loses
//! datagrams, and the hypervisor's steal (`/proc/stat`): the time it gave this machine's CPUs
//! to someone else, which on a virtual machine lengthens a run's tail latencies whatever
//! server runs.

use anyhow::{Context, bail};
use serde::Serialize;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit if it is below `needed`, and returns the
/// soft limit now in force. Fails if even the hard limit is below `needed`.
pub fn raise_nofile(needed: u64) -> anyhow::Result<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is a valid, writable rlimit for the duration of the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error()).context("getrlimit(RLIMIT_NOFILE)");
    }
    if lim.rlim_cur >= needed {
        return Ok(lim.rlim_cur);
    }
    if lim.rlim_max < needed {
        bail!(
            "{needed} file descriptors needed (one socket per bot) but the hard RLIMIT_NOFILE is {}; lower --players or raise the limit (ulimit -Hn)",
            lim.rlim_max
        );
    }
    let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
    // SAFETY: `raised` is a valid rlimit; raising the soft limit up to the hard one needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(std::io::Error::last_os_error()).context("setrlimit(RLIMIT_NOFILE)");
    }
    Ok(raised.rlim_cur)
}

/// This process's resource use so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProcessUsage {
    /// User CPU, microseconds.
    pub cpu_user_us: u64,
    /// System CPU, microseconds.
    pub cpu_system_us: u64,
    /// Peak resident set, KiB.
    pub peak_rss_kb: u64,
}

impl ProcessUsage {
    /// Reads `getrusage(RUSAGE_SELF)` (all zero if it fails).
    pub fn now() -> ProcessUsage {
        // SAFETY: an all-zero rusage is a valid value of the plain C struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is valid and writable for the duration of the call.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
            return ProcessUsage::default();
        }
        let us = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
        ProcessUsage { cpu_user_us: us(ru.ru_utime), cpu_system_us: us(ru.ru_stime), peak_rss_kb: ru.ru_maxrss.max(0) as u64 }
    }

    /// CPU used between `earlier` and `self`, and the peak RSS of `self`.
    pub fn since(&self, earlier: &ProcessUsage) -> ProcessUsage {
        ProcessUsage {
            cpu_user_us: self.cpu_user_us.saturating_sub(earlier.cpu_user_us),
            cpu_system_us: self.cpu_system_us.saturating_sub(earlier.cpu_system_us),
            peak_rss_kb: self.peak_rss_kb,
        }
    }
}

/// The kernel's UDP counters (machine-wide: they include the server's sockets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UdpCounters {
    /// Datagrams delivered to sockets.
    pub in_datagrams: u64,
    /// Datagrams dropped because a socket's receive buffer was full.
    pub rcvbuf_errors: u64,
    /// Datagrams dropped because a socket's send buffer was full.
    pub sndbuf_errors: u64,
    /// Datagrams to a port nobody listens on.
    pub no_ports: u64,
    /// Receive errors of any kind.
    pub in_errors: u64,
}

impl UdpCounters {
    /// Reads `/proc/net/snmp`; `None` if it is unreadable or lacks the `Udp:` lines.
    pub fn read() -> Option<UdpCounters> {
        UdpCounters::parse(&std::fs::read_to_string("/proc/net/snmp").ok()?)
    }

    /// Parses the two `Udp:` lines (a header of names, then values) of `/proc/net/snmp`.
    pub fn parse(snmp: &str) -> Option<UdpCounters> {
        let mut lines = snmp.lines().filter(|l| l.starts_with("Udp:"));
        let names: Vec<&str> = lines.next()?.split_whitespace().skip(1).collect();
        let values: Vec<u64> = lines.next()?.split_whitespace().skip(1).map(|v| v.parse().unwrap_or(0)).collect();
        let get = |name: &str| names.iter().position(|n| *n == name).and_then(|i| values.get(i).copied()).unwrap_or(0);
        Some(UdpCounters {
            in_datagrams: get("InDatagrams"),
            rcvbuf_errors: get("RcvbufErrors"),
            sndbuf_errors: get("SndbufErrors"),
            no_ports: get("NoPorts"),
            in_errors: get("InErrors"),
        })
    }

    /// `self - earlier`, counter by counter.
    pub fn since(&self, earlier: &UdpCounters) -> UdpCounters {
        UdpCounters {
            in_datagrams: self.in_datagrams.saturating_sub(earlier.in_datagrams),
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            sndbuf_errors: self.sndbuf_errors.saturating_sub(earlier.sndbuf_errors),
            no_ports: self.no_ports.saturating_sub(earlier.no_ports),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
        }
    }
}

/// The hypervisor's steal so far, all CPUs together (`/proc/stat`'s `cpu` line, eighth
/// field), and when it was read. Only steal is taken from that line: on a tickless kernel its
/// busy fields are sampled at the tick while idle time is exact, so shares built from them do
/// not add up to the wall time; steal is divided by the wall time instead.
#[derive(Clone, Copy, Debug)]
pub struct StealReading {
    /// Steal so far, in the kernel's clock ticks (`sysconf(_SC_CLK_TCK)` a second).
    pub steal_ticks: u64,
    /// When it was read.
    pub at: std::time::Instant,
}

impl StealReading {
    /// Reads `/proc/stat`; `None` if it is unreadable or its `cpu` line lacks the field.
    pub fn read() -> Option<StealReading> {
        let steal_ticks = parse_steal_ticks(&std::fs::read_to_string("/proc/stat").ok()?)?;
        Some(StealReading { steal_ticks, at: std::time::Instant::now() })
    }

    /// The steal from `earlier` to `self`, against the wall time between them times the
    /// CPUs online; `None` if no time passed or the clock rate is unknown.
    pub fn since(&self, earlier: &StealReading) -> Option<HostSteal> {
        // SAFETY: sysconf takes a plain integer and touches no memory of ours.
        let (ticks_per_s, cpus) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_NPROCESSORS_ONLN)) };
        HostSteal::from_ticks(
            self.steal_ticks.saturating_sub(earlier.steal_ticks),
            u64::try_from(ticks_per_s).ok()?,
            self.at.saturating_duration_since(earlier.at).as_millis() as u64,
            u32::try_from(cpus).ok()?,
        )
    }
}

/// The `cpu` line's steal field (the eighth number), in clock ticks.
pub fn parse_steal_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

/// Time the hypervisor ran something else while this machine's CPUs wanted to run, over a
/// run. A datagram whose CPU was taken waited with it, whichever server ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HostSteal {
    /// Steal, milliseconds, all CPUs together.
    pub steal_ms: u64,
    /// Wall time measured over, milliseconds.
    pub wall_ms: u64,
    /// CPUs online.
    pub cpus: u32,
    /// `steal_ms` over `wall_ms` times `cpus`.
    pub share: f64,
}

impl HostSteal {
    /// From a steal delta in clock ticks; `None` without a clock rate, wall time or CPU.
    pub fn from_ticks(steal_ticks: u64, ticks_per_s: u64, wall_ms: u64, cpus: u32) -> Option<HostSteal> {
        if ticks_per_s == 0 || wall_ms == 0 || cpus == 0 {
            return None;
        }
        let steal_ms = steal_ticks.saturating_mul(1000) / ticks_per_s;
        Some(HostSteal { steal_ms, wall_ms, cpus, share: steal_ms as f64 / (wall_ms as f64 * f64::from(cpus)) })
    }
}

/// Pins the calling thread to `cpu` (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("cpu {cpu} is beyond CPU_SETSIZE")));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes within it (bound checked
    // above); sched_setaffinity reads `size_of` bytes of it.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`): how far the kernel may defer
/// the end of its sleeps to batch wake-ups (50 µs by default). Best effort: an error leaves
/// the default, which costs precision, not correctness.
pub fn set_timer_slack(slack: std::time::Duration) {
    let ns = slack.as_nanos().clamp(1, u128::from(u64::MAX)) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes its value by argument and touches no memory of ours.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong) };
}

/// CPUs this process may run on (`sched_getaffinity`), for checking `--pin`.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: as in `pin_current_thread`; CPU_ISSET reads within the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Sets the calling thread's niceness (`setpriority` on its thread id). Lowering it below
/// the process's needs `CAP_SYS_NICE` (root has it); the error says when it was refused.
pub fn set_thread_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: gettid and setpriority take plain integers and touch no memory of ours.
    let rc = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Moves the calling thread to `SCHED_IDLE` (`sched_setscheduler`); threads it creates
/// afterwards inherit the class. Lowering a thread's class needs no privilege.
pub fn set_thread_sched_idle() -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param for the call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
    if rc == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Whether the calling thread runs in `SCHED_IDLE`.
pub fn thread_is_sched_idle() -> bool {
    // SAFETY: pid 0 is the calling thread; the call reads no memory of ours.
    unsafe { libc::sched_getscheduler(0) == libc::SCHED_IDLE }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_steal_from_the_all_cpu_line_and_divides_by_wall_time() {
        assert_eq!(parse_steal_ticks("cpu  100 10 50 800 5 0 20 15 0 0\ncpu0 1 2 3 4 5 6 7 99 0 0\n"), Some(15));
        assert_eq!(parse_steal_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None, "only the all-CPU line counts");
        assert_eq!(parse_steal_ticks("cpu 1 2 3 4\n"), None, "a kernel without the field");
        let s = HostSteal::from_ticks(70, 100, 35_000, 2).unwrap();
        assert_eq!((s.steal_ms, s.wall_ms, s.cpus), (700, 35_000, 2));
        assert!((s.share - 0.01).abs() < 1e-12);
        assert!(HostSteal::from_ticks(70, 0, 35_000, 2).is_none());
        assert!(HostSteal::from_ticks(70, 100, 0, 2).is_none());
        assert!(HostSteal::from_ticks(70, 100, 35_000, 0).is_none());
    }

    #[test]
    fn sched_idle_holds_for_the_thread_and_the_threads_it_starts() {
        // On a thread of its own: the class is per thread, and the test runner's stays as is.
        std::thread::spawn(|| {
            assert!(!thread_is_sched_idle());
            set_thread_sched_idle().expect("lowering to SCHED_IDLE needs no privilege");
            assert!(thread_is_sched_idle());
            assert!(std::thread::spawn(thread_is_sched_idle).join().unwrap(), "a thread started afterwards inherits the class");
        })
        .join()
        .unwrap();
        assert!(!thread_is_sched_idle(), "other threads keep theirs");
    }

    #[test]
    fn parses_proc_net_snmp_udp_lines() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\nUdp: 1000 3 7 900 5 2 0 0 0\nUdpLite: InDatagrams\nUdpLite: 0\n";
        let c = UdpCounters::parse(snmp).unwrap();
        assert_eq!(c, UdpCounters { in_datagrams: 1000, rcvbuf_errors: 5, sndbuf_errors: 2, no_ports: 3, in_errors: 7 });
        assert!(UdpCounters::parse("Ip: 1\n").is_none());
    }

    #[test]
    fn nofile_is_at_least_what_we_had() {
        let now = raise_nofile(16).unwrap();
        assert!(now >= 16);
        assert!(ProcessUsage::now().peak_rss_kb > 0);
    }
}
