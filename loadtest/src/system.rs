//! What the load tester needs from the operating system: enough file descriptors for one
//! socket per bot (`RLIMIT_NOFILE`), its own CPU time and peak RSS (so a report shows what
//! the load generator itself cost on the shared machine), and the kernel's UDP counters
//! (`/proc/net/snmp`), whose receive-buffer errors are the one place loopback UDP loses
//! datagrams, and the machine's CPU time by kind (`/proc/stat`), whose `steal` is the time a
//! hypervisor gave this machine's CPUs to someone else: on a virtual machine it can set a
//! run's tail latencies, for every engine alike.

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

/// The machine's CPU time by kind, all CPUs together (`/proc/stat`'s `cpu` line), in the
/// kernel's clock ticks (`USER_HZ`, 100 a second on Linux).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineCpuTicks {
    /// Running tasks: user, nice, system, irq and softirq time.
    pub busy: u64,
    /// Of `busy`, softirq time (the kernel's packet delivery among it).
    pub softirq: u64,
    /// Idle and iowait.
    pub idle: u64,
    /// Time the hypervisor ran something else while this machine's CPUs wanted to run.
    pub steal: u64,
}

impl MachineCpuTicks {
    /// Reads `/proc/stat`; `None` if it is unreadable or lacks the `cpu` line.
    pub fn read() -> Option<MachineCpuTicks> {
        MachineCpuTicks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses the `cpu` line (user nice system idle iowait irq softirq steal ...); a kernel too
    /// old to have a field counts it as 0.
    pub fn parse(stat: &str) -> Option<MachineCpuTicks> {
        let line = stat.lines().find(|l| l.split_whitespace().next() == Some("cpu"))?;
        let v: Vec<u64> = line.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
        let f = |i: usize| v.get(i).copied().unwrap_or(0);
        if v.len() < 4 {
            return None;
        }
        Some(MachineCpuTicks { busy: f(0) + f(1) + f(2) + f(5) + f(6), softirq: f(6), idle: f(3) + f(4), steal: f(7) })
    }

    /// The shares of the time from `earlier` to `self`; `None` if no tick passed.
    pub fn since(&self, earlier: &MachineCpuTicks) -> Option<MachineCpu> {
        let busy = self.busy.saturating_sub(earlier.busy);
        let softirq = self.softirq.saturating_sub(earlier.softirq);
        let idle = self.idle.saturating_sub(earlier.idle);
        let steal = self.steal.saturating_sub(earlier.steal);
        let total = busy + idle + steal;
        (total > 0).then(|| MachineCpu {
            cpu_ms: total * 10,
            busy_share: busy as f64 / total as f64,
            softirq_share: softirq as f64 / total as f64,
            steal_share: steal as f64 / total as f64,
        })
    }
}

/// The machine's CPU time over a run, all CPUs together (see [`MachineCpuTicks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct MachineCpu {
    /// CPU time in all, milliseconds (wall time times CPUs).
    pub cpu_ms: u64,
    /// Share of it spent running tasks and interrupts (the server's, the tester's, anyone's).
    pub busy_share: f64,
    /// Share of it in softirqs (of `busy_share`).
    pub softirq_share: f64,
    /// Share of it the hypervisor took (`steal`): a CPU wanted to run and did not, so
    /// anything waiting on that CPU (a datagram's wake-up included) waited as well.
    pub steal_share: f64,
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
    fn parses_proc_stat_cpu_line_and_takes_shares() {
        let a = MachineCpuTicks::parse("cpu  100 10 50 800 5 0 20 15 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n").unwrap();
        assert_eq!(a, MachineCpuTicks { busy: 180, softirq: 20, idle: 805, steal: 15 });
        let b = MachineCpuTicks { busy: 180 + 60, softirq: 20 + 10, idle: 805 + 30, steal: 15 + 10 };
        let m = b.since(&a).unwrap();
        assert_eq!(m.cpu_ms, 1000);
        assert!((m.busy_share - 0.6).abs() < 1e-9 && (m.steal_share - 0.1).abs() < 1e-9 && (m.softirq_share - 0.1).abs() < 1e-9);
        assert!(a.since(&a).is_none(), "no tick passed: no shares");
        assert!(MachineCpuTicks::parse("cpu0 1 2 3 4\n").is_none(), "only the all-CPU line counts");
        assert!(MachineCpuTicks::parse("cpu 1 2\n").is_none());
        let old = MachineCpuTicks::parse("cpu 1 2 3 4\n").unwrap();
        assert_eq!((old.steal, old.softirq), (0, 0));
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
